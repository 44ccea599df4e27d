"""BBSim's bbsim.BBsim_dmi service (oltsim.dmi.transceivers) in memory, through the same on_loop handlers the DMI
server serves: GetTransceivers, PlugOutTransceiver, PlugInTransceiver and CreateEvent, their answers in
DmiResponse (BBSim's status codes and clear reasons) and the DMI events a plug raises.
"""

import random
import uuid

from dmi import hw_events_mgmt_service_pb2 as ev

from conftest import Sim, grpc_call
from oltsim._proto import bbsim_dmi_pb2 as pb, bbsim_dmi_pb2_grpc
from oltsim.dmi.device import ManagedDevice
from oltsim.dmi.transceivers import TransceiverServicer
from oltsim.model.olt import PON_PORT_BASE
from oltsim.serving.onloop import on_loop

OK, NOT_FOUND, ABORTED, UNAVAILABLE = 0, 5, 10, 14


class Dmi:
    """A Sim with its ManagedDevice and the BBsim_dmi handlers; `events` collects the DMI events raised."""

    def __init__(self, **given):
        self.sim = Sim(**given)
        self.device = ManagedDevice(self.sim.olt, self.sim.clock, random.Random(0))
        self.events = []
        self.device.subscribe_events(lambda e: self.events.append(e) or True, lambda: None)
        self.service = on_loop(TransceiverServicer(self.sim.olt, self.device), bbsim_dmi_pb2_grpc.BBsim_dmiServicer)

    def call(self, rpc, request):
        return grpc_call(self.service, rpc, request)

    def plug(self, rpc, transceiver_id):
        answer = self.call(rpc, pb.TransceiverRequest(TransceiverId=transceiver_id))
        return answer.status_code, answer.message


def listing(dmi) -> list[tuple]:
    return [(t.ID, t.Name, t.UUID, t.Technology, t.PluggedIn, list(t.PonIds))
            for t in dmi.call("GetTransceivers", pb.DmiEmpty()).Items]


def test_get_transceivers_lists_bbsims_uuids_and_no_technology_before_management():
    """At a lab's numbering (OLT 10, 2 PONs of 16 ONUs) GetTransceivers lists one transceiver per PON with BBSim's
    UUID, uuid3(Nil, "BBSIM_OLT_10-sfp-plus-<n>"), the inventory's, and Technology TYPE_UNDEFINED, as BBSim
    1.16.8 lists them before StartManagingDevice (2d0ab069-... and 4aa48df7-... recorded from it)."""
    dmi = Dmi(olt_id=10, pon=2, onu=16)
    expected = [str(uuid.uuid3(uuid.UUID(int=0), f"BBSIM_OLT_10-sfp-plus-{n}")) for n in range(2)]
    assert expected == ["2d0ab069-f461-34e5-a16a-5ebb1f26b1a7", "4aa48df7-0098-3065-9206-0d48f4404677"]
    assert [c.uuid.uuid for c in dmi.device.transceiver_components()] == expected
    assert listing(dmi) == [(0, "sfp-plus-0", expected[0], "TYPE_UNDEFINED", True, [0]),
                            (1, "sfp-plus-1", expected[1], "TYPE_UNDEFINED", True, [1])]


def test_technology_is_known_from_the_first_management_on():
    """StartManagingDevice gives every plugged transceiver its PON's technology (XGSPON, or GPON for a GPON PON),
    which then stays through a plug-out, StopManagingDevice and a new start, as in BBSim."""
    dmi = Dmi(olt_id=10, pon=2, onu=16)
    dmi.sim.olt.pons[1].technology = "GPON"
    dmi.sim.bring_up()
    dmi.device.start("olt", "")
    assert [t[3] for t in listing(dmi)] == ["XGSPON", "GPON"]
    assert dmi.plug("PlugOutTransceiver", 0)[0] == OK
    dmi.device.stop_managing("olt")
    assert [(t[3], t[4]) for t in listing(dmi)] == [("XGSPON", False), ("GPON", True)]
    dmi.device.start("olt", "")
    assert [t[3] for t in listing(dmi)] == ["XGSPON", "GPON"]


def test_a_transceiver_out_at_the_first_management_gets_its_technology_when_plugged_in():
    """A transceiver that is out when the device is first managed stays TYPE_UNDEFINED (BBSim builds no component
    for it) until it is plugged in."""
    dmi = Dmi(olt_id=10, pon=2, onu=16)
    dmi.sim.olt.plug_out_transceiver(1)
    dmi.device.start("olt", "")
    assert [t[3] for t in listing(dmi)] == ["XGSPON", "TYPE_UNDEFINED"]
    assert dmi.plug("PlugInTransceiver", 1) == (OK, "Plugged in transceiver 1")
    assert [t[3] for t in listing(dmi)] == ["XGSPON", "XGSPON"]


def test_plugging_needs_device_management():
    """Before StartManagingDevice a plug-out, a plug-in and CreateEvent answer 14 (UNAVAILABLE) with the reason, and
    nothing changes."""
    dmi = Dmi()
    dmi.sim.bring_up()
    for rpc in ("PlugOutTransceiver", "PlugInTransceiver"):
        code, message = dmi.plug(rpc, 0)
        assert code == UNAVAILABLE and "device management not started" in message and "StartManagingDevice" in message
    answer = dmi.call("CreateEvent", pb.DmiEvent(event_name="EVENT_FAN_FAILURE"))
    assert answer.status_code == UNAVAILABLE and "StartManagingDevice" in answer.message
    assert dmi.sim.olt.transceiver_plugged(0) and dmi.sim.southbound() == [] and dmi.events == []


def test_plug_out_and_in_drive_the_model_and_raise_dmi_events():
    """Once managed, PlugOutTransceiver(0) runs the model's plug-out (los_ind on first), GetTransceivers shows it
    out, and the DMI event TRANSCEIVER_PLUG_OUT names the transceiver component; PlugInTransceiver(0) reverses
    all of it."""
    dmi = Dmi()
    dmi.sim.bring_up()
    dmi.device.start("olt", "127.0.0.1")
    uuid = dmi.device.transceiver_components()[0].uuid.uuid
    assert dmi.plug("PlugOutTransceiver", 0) == (OK, "Plugged out transceiver 0")
    seen = dmi.sim.southbound()
    assert seen[0] == ("AlarmInd", "los_ind", PON_PORT_BASE, None, "on") and len(seen) == 5
    assert dmi.sim.olt.pons[0].state == "disabled" and not dmi.sim.olt.transceiver_plugged(0)
    assert [t.PluggedIn for t in dmi.call("GetTransceivers", pb.DmiEmpty()).Items] == [False, True]
    [event] = dmi.events
    assert (event.event_id, event.event_metadata.component_uuid.uuid, event.event_metadata.component_name) == (
        ev.EVENT_TRANSCEIVER_PLUG_OUT, uuid, "sfp-plus-0")
    assert event.event_metadata.device_uuid.uuid == dmi.device.uuid
    assert dmi.plug("PlugInTransceiver", 0) == (OK, "Plugged in transceiver 0")
    assert dmi.sim.southbound()[0] == ("AlarmInd", "los_ind", PON_PORT_BASE, None, "off")
    assert dmi.sim.olt.pons[0].state == "enabled"
    assert [e.event_id for e in dmi.events] == [ev.EVENT_TRANSCEIVER_PLUG_OUT, ev.EVENT_TRANSCEIVER_PLUG_IN]
    assert [t.PluggedIn for t in dmi.call("GetTransceivers", pb.DmiEmpty()).Items] == [True, True]


def test_repeated_plugs_and_unknown_ids_are_refused():
    """A second plug-out answers 10 (ABORTED) "... since it's not plugged in", a plug-in of a transceiver that is in
    10 "... already plugged in", an id that is no PON 5 (NOT_FOUND) naming the valid ids; none changes anything."""
    dmi = Dmi()
    dmi.sim.bring_up()
    dmi.device.start("olt", "")
    assert dmi.plug("PlugInTransceiver", 1) == (
        ABORTED, "cannot plug in transceiver with ID 1 since it's already plugged in")
    assert dmi.plug("PlugOutTransceiver", 0)[0] == OK
    dmi.sim.southbound()
    dmi.events.clear()
    assert dmi.plug("PlugOutTransceiver", 0) == (
        ABORTED, "cannot plug out transceiver with ID 0 since it's not plugged in")
    for rpc in ("PlugOutTransceiver", "PlugInTransceiver"):
        for tid in (2, 4294967295):
            code, message = dmi.plug(rpc, tid)
            assert code == NOT_FOUND and f"ID {tid}" in message and "0..1, one per PON" in message
    assert dmi.sim.southbound() == [] and dmi.events == []


def test_create_event():
    """CreateEvent raises the named DMI event on a component of its class (answer 0); an unknown name answers 5
    listing the permissible names."""
    dmi = Dmi()
    dmi.device.start("olt", "")
    answer = dmi.call("CreateEvent", pb.DmiEvent(event_name="EVENT_FAN_FAILURE"))
    assert (answer.status_code, answer.message) == (OK, "DMI Event Indication Sent.")
    [event] = dmi.events
    assert event.event_id == ev.EVENT_FAN_FAILURE and event.event_metadata.component_name
    answer = dmi.call("CreateEvent", pb.DmiEvent(event_name="EVENT_NOPE"))
    assert answer.status_code == NOT_FOUND and "EVENT_NOPE" in answer.message and "EVENT_PSU_FAILURE" in answer.message
    assert len(dmi.events) == 1
