"""PON transceiver plug-out and plug-in end to end: the whole simulator in this process on the real
reactor, a scripted openolt adapter bringing ONUs up over real sockets, and a real gRPC channel to the DMI port
calling BBSim's bbsim.BBsim_dmi service (and DMI's StartManagingDevice and GetPhysicalInventory).

A plug-out/plug-in cycle of PON 0's transceiver is observed on the OpenOLT indication stream, in the sequence of
reference 1.8, and in the v1 REST state; the refusals (before StartManagingDevice, a repeated plug-out, a plug-in of
a plugged transceiver, unknown ids) are checked over the channel. Every listener is on 127.0.0.1:0; the test runs on
both gRPC engines (`engines.grpc_engine`), which serve the OpenOLT and DMI endpoints alike.
"""
from __future__ import annotations

import uuid

import grpc
import pytest_twisted
from dmi import commons_pb2, hw_management_service_pb2 as hm, hw_management_service_pb2_grpc, hw_pb2
from twisted.internet.threads import deferToThread

from engines import grpc_engine  # noqa: F401 - the fixture
from oltsim._proto import bbsim_dmi_pb2 as pb, bbsim_dmi_pb2_grpc
from scripted_adapter import ScriptedAdapter, describe, is_alarm, kind, serial_of
from test_adapter import PON_PORT_BASE, start_oltsim, stop_oltsim, without_statistics

CALL_TIMEOUT = 10
OK, NOT_FOUND, ABORTED, UNAVAILABLE = 0, 5, 10, 14
PON0 = ("BBSM00000001", "BBSM00000002")
PON1 = ("BBSM00000101", "BBSM00000102")
OMCI_ALARM_NOTIFICATION = 16
PPTP_ETH_UNI = 11
UNI0_ME = 0x0101


class Dmi:
    """A real channel to the DMI port: BBsim_dmi and NativeHWManagementService stubs (blocking; run on a thread)."""

    def __init__(self, address: str):
        self.channel = grpc.insecure_channel(address)
        self.transceivers = bbsim_dmi_pb2_grpc.BBsim_dmiStub(self.channel)
        self.hw = hw_management_service_pb2_grpc.NativeHWManagementServiceStub(self.channel)

    def plug(self, rpc: str, transceiver_id: int) -> tuple[int, str]:
        answer = getattr(self.transceivers, rpc)(pb.TransceiverRequest(TransceiverId=transceiver_id),
                                                 timeout=CALL_TIMEOUT)
        return answer.status_code, answer.message

    def listing(self) -> list[pb.Transceiver]:
        return list(self.transceivers.GetTransceivers(pb.DmiEmpty(), timeout=CALL_TIMEOUT).Items)

    def start_managing(self) -> str:
        [answer] = list(self.hw.StartManagingDevice(
            hw_pb2.ModifiableComponent(name="olt-under-test", uri=hw_pb2.Uri(uri="127.0.0.1")), timeout=CALL_TIMEOUT))
        assert answer.status == commons_pb2.OK_STATUS, answer
        return answer.device_uuid.uuid

    def inventory_transceivers(self, device_uuid: str) -> dict[str, str]:
        """name -> UUID of every transceiver component in the physical inventory."""
        [answer] = list(self.hw.GetPhysicalInventory(
            hm.PhysicalInventoryRequest(device_uuid=hw_pb2.Uuid(uuid=device_uuid)), timeout=CALL_TIMEOUT))
        assert answer.status == commons_pb2.OK_STATUS, answer
        found = {}
        pending = [answer.inventory.root]
        while pending:
            component = pending.pop()
            if getattr(component, "class") == hw_pb2.COMPONENT_TYPE_TRANSCEIVER:
                found[component.name] = component.uuid.uuid
            pending.extend(component.children)
        return found

    def close(self) -> None:
        self.channel.close()


def compact(indication) -> tuple:
    """An indication as a comparable tuple: what reference 1.8 lists for the transceiver sequences."""
    name = kind(indication)
    if name == "onu_ind":
        o = indication.onu_ind
        return ("onu_ind", o.intf_id, o.onu_id, serial_of(o.serial_number), o.oper_state, o.admin_state)
    if name == "omci_ind":
        o = indication.omci_ind
        pkt = bytes(o.pkt)
        if pkt[2] == OMCI_ALARM_NOTIFICATION:
            me_class, me_id = int.from_bytes(pkt[4:6], "big"), int.from_bytes(pkt[6:8], "big")
            return ("omci_alarm", o.intf_id, o.onu_id, me_class, me_id, "raised" if pkt[8] & 0x80 else "cleared")
        return ("omci_ind", o.intf_id, o.onu_id, pkt[2])
    if name == "alarm_ind":
        which = indication.alarm_ind.WhichOneof("data")
        body = getattr(indication.alarm_ind, which)
        if which == "los_ind":
            return ("los_ind", body.intf_id, body.status)
        if which == "onu_alarm_ind":
            return ("onu_los", body.intf_id, body.onu_id, body.los_status)
        return (which,)
    return (describe(indication),)


def pon_state(olt: dict, pon_id: int) -> tuple[str, str]:
    [pon] = [p for p in olt["PONPorts"] if p.get("ID", 0) == pon_id]
    return pon["InternalState"], pon["OperState"]


def onu_states(onus: dict) -> dict[str, str]:
    return {onu["SerialNumber"]: onu["InternalState"] for onu in onus["items"]}


@pytest_twisted.inlineCallbacks
def test_plug_out_and_in_over_dmi(tmp_path, grpc_engine):
    """Over the DMI port: before StartManagingDevice plugs and CreateEvent answer 14; once managed, CreateEvent works
    and GetTransceivers lists one transceiver per PON with the inventory's UUIDs; PlugOutTransceiver(0) gives, on the
    adapter's stream, los_ind on for port 536870912 then per ONU of PON 0 onu_alarm_ind LOS on and the OMCI LOS
    alarm on UNI 0x0101 (no IntfInd), v1 REST shows PON 0 disabled/up with its ONUs pon_disabled, the inventory
    loses the transceiver; a repeated plug-out answers 10, unknown ids 5; PlugInTransceiver(0) gives los_ind off,
    OnuInd up per ONU, then the LOS and OMCI clears, and everything is back."""
    sim = start_oltsim(tmp_path, "--pon", "2", "--onu", "2", "--delay", "20", engine=grpc_engine)
    assert sim.top.getServiceNamed("dmi").engine == grpc_engine
    adapter = ScriptedAdapter(sim.openolt)
    dmi = Dmi(f"127.0.0.1:{sim.top.getServiceNamed('dmi').port}")
    try:
        def before_management():
            adapter.bring_up(4)
            adapter.stream.settle()
            mark = len(adapter.stream.received)
            answers = [dmi.plug("PlugOutTransceiver", 0), dmi.plug("PlugInTransceiver", 0)]
            event = dmi.transceivers.CreateEvent(pb.DmiEvent(event_name="EVENT_FAN_FAILURE"), timeout=CALL_TIMEOUT)
            return answers + [(event.status_code, event.message)], mark

        answers, mark = yield deferToThread(before_management)
        for code, message in answers:
            assert code == UNAVAILABLE and "StartManagingDevice" in message, (code, message)
        ids = {serial: onu.onu_id for serial, onu in adapter.onus.items()}

        def manage():
            device_uuid = dmi.start_managing()
            event = dmi.transceivers.CreateEvent(pb.DmiEvent(event_name="EVENT_FAN_FAILURE"), timeout=CALL_TIMEOUT)
            return dmi.listing(), dmi.inventory_transceivers(device_uuid), device_uuid, event

        listing, inventory, device_uuid, event = yield deferToThread(manage)
        assert (event.status_code, event.message) == (OK, "DMI Event Indication Sent.")
        assert [(t.ID, t.Name, t.PluggedIn, list(t.PonIds)) for t in listing] == [
            (0, "sfp-plus-0", True, [0]), (1, "sfp-plus-1", True, [1])]
        assert {t.Name: t.UUID for t in listing} == inventory
        assert without_statistics(adapter.stream.since(mark)) == []    # the refused calls changed nothing

        def plug_out():
            answer = dmi.plug("PlugOutTransceiver", 0)
            adapter.stream.wait_for(is_alarm("onu_alarm_ind", lambda b: b.onu_id == ids[PON0[1]]),
                                    "the last ONU LOS of the plug-out")
            adapter.stream.settle()
            return answer, without_statistics(adapter.stream.since(mark))

        answer, received = yield deferToThread(plug_out)
        assert answer == (OK, "Plugged out transceiver 0")
        on = [("los_ind", PON_PORT_BASE, "on")]
        for serial in PON0:
            on += [("onu_los", 0, ids[serial], "on"), ("omci_alarm", 0, ids[serial], PPTP_ETH_UNI, UNI0_ME, "raised")]
        assert [compact(i) for i in received] == on
        olt = yield sim.get("/v1/olt")
        onus = yield sim.get("/v1/olt/onus")
        assert pon_state(olt, 0) == ("disabled", "up") and pon_state(olt, 1) == ("enabled", "up")
        assert onu_states(onus) == {PON0[0]: "pon_disabled", PON0[1]: "pon_disabled",
                                    PON1[0]: "enabled", PON1[1]: "enabled"}

        def refusals():
            mark = len(adapter.stream.received)
            answers = {
                "again": dmi.plug("PlugOutTransceiver", 0),
                "out 2": dmi.plug("PlugOutTransceiver", 2),
                "in 7": dmi.plug("PlugInTransceiver", 7),
                "in 1": dmi.plug("PlugInTransceiver", 1),
            }
            adapter.stream.settle()
            return answers, [t.PluggedIn for t in dmi.listing()], dmi.inventory_transceivers(device_uuid), \
                without_statistics(adapter.stream.since(mark))

        answers, plugged, inventory_out, after = yield deferToThread(refusals)
        assert answers["again"] == (ABORTED, "cannot plug out transceiver with ID 0 since it's not plugged in")
        assert answers["in 1"] == (ABORTED, "cannot plug in transceiver with ID 1 since it's already plugged in")
        for name in ("out 2", "in 7"):
            code, message = answers[name]
            assert code == NOT_FOUND and "0..1, one per PON" in message, (name, code, message)
        assert plugged == [False, True]
        assert sorted(inventory_out) == ["sfp-plus-1"]
        assert after == []

        def plug_in():
            mark = len(adapter.stream.received)
            answer = dmi.plug("PlugInTransceiver", 0)
            adapter.stream.wait_for(is_alarm("onu_alarm_ind", lambda b: b.onu_id == ids[PON0[1]]),
                                    "the last ONU LOS clear of the plug-in")
            adapter.stream.settle()
            return answer, without_statistics(adapter.stream.since(mark)), [t.PluggedIn for t in dmi.listing()]

        answer, received, plugged = yield deferToThread(plug_in)
        assert answer == (OK, "Plugged in transceiver 0")
        back = [("los_ind", PON_PORT_BASE, "off")]
        back += [("onu_ind", 0, ids[serial], serial, "up", "up") for serial in PON0]
        for serial in PON0:
            back += [("onu_los", 0, ids[serial], "off"),
                     ("omci_alarm", 0, ids[serial], PPTP_ETH_UNI, UNI0_ME, "cleared")]
        assert [compact(i) for i in received] == back
        assert plugged == [True, True]
        olt = yield sim.get("/v1/olt")
        onus = yield sim.get("/v1/olt/onus")
        assert pon_state(olt, 0) == ("enabled", "up")
        assert set(onu_states(onus).values()) == {"enabled"}
        assert not adapter.stream.ended
    finally:
        yield deferToThread(dmi.close)
        yield stop_oltsim(sim, adapter)


#: What BBSim 1.16.8 answered at ``-olt_id 10 -pon 2 -onu 16`` (a bbsim binary built from its 1.16.8 source, run
#: on 2026-11-27): GetTransceivers' (UUID, Technology) before and after StartManagingDevice, and the device UUID.
BBSIM_OLT_10_TRANSCEIVERS = ("2d0ab069-f461-34e5-a16a-5ebb1f26b1a7", "4aa48df7-0098-3065-9206-0d48f4404677")
BBSIM_OLT_10_DEVICE = "895f65ab-64a3-3957-a2db-568a168faa3a"


@pytest_twisted.inlineCallbacks
def test_dmi_identifiers_are_bbsims_at_a_labs_numbering(tmp_path):
    """oltsim at OLT id 10 with 2 PONs of 16 ONUs, over a real DMI channel: GetTransceivers lists uuid3(Nil,
    "BBSIM_OLT_10-sfp-plus-<n>") with TYPE_UNDEFINED before StartManagingDevice and XGSPON after it, the device UUID
    is uuid3(Nil, "BBSIM_OLT_10"), and the inventory's transceivers carry the listed UUIDs: all what BBSim 1.16.8
    answered for the same numbering."""
    nil = uuid.UUID(int=0)
    sim = start_oltsim(tmp_path, "--olt-id", "10", "--pon", "2", "--onu", "16")
    dmi = Dmi(f"127.0.0.1:{sim.top.getServiceNamed('dmi').port}")
    try:
        def calls():
            before = [(t.ID, t.UUID, t.Technology) for t in dmi.listing()]
            device_uuid = dmi.start_managing()
            after = [(t.ID, t.UUID, t.Technology) for t in dmi.listing()]
            return before, device_uuid, after, dmi.inventory_transceivers(device_uuid)

        before, device_uuid, after, inventory = yield deferToThread(calls)
    finally:
        yield deferToThread(dmi.close)
        yield stop_oltsim(sim)
    derived = tuple(str(uuid.uuid3(nil, f"BBSIM_OLT_10-sfp-plus-{n}")) for n in range(2))
    assert derived == BBSIM_OLT_10_TRANSCEIVERS
    assert device_uuid == str(uuid.uuid3(nil, "BBSIM_OLT_10")) == BBSIM_OLT_10_DEVICE
    assert before == [(n, derived[n], "TYPE_UNDEFINED") for n in range(2)]
    assert after == [(n, derived[n], "XGSPON") for n in range(2)]
    assert inventory == {f"sfp-plus-{n}": derived[n] for n in range(2)}
