"""BBSim's Kafka event records from the model, in memory with a fake clock: a whole bring-up through the OpenOLT
servicer, the OMCI responder and the EAPOL/DHCP machines gives the records pinned in tests/golden/kafka/ (exact
bytes: BBSim's key order matters), and their shape is the reference's example record."""
from __future__ import annotations

import json
import os
import random
import re
from datetime import datetime, timedelta, timezone
from pathlib import Path

from twisted.internet.task import Clock
from voltha_protos import openolt_pb2, openolt_pb2_grpc

from oltsim.api import translate
from oltsim.bbsimevents import EVENT_TYPES, BbsimEventPublisher, encode, map_event, record, timestamp
from oltsim.config import load_settings
from oltsim.model import events
from oltsim.model.builder import build_olt
from oltsim.model.flows import Flow
from oltsim.omci import codec
from oltsim.omci.responder import OmciResponder
from oltsim.omci.wrappers import receive
from oltsim.serving.onloop import on_loop
from oltsim.packets import dhcp, eapol, frames as f
from oltsim.packets.engine import ProtocolEngine
from oltsim.tap import FramePath
from oltsim.southbound.openolt import IndicationHub, OpenoltServicer

from conftest import FakeContext, grpc_call, stream_now

GOLDEN = Path(__file__).resolve().parent.parent / "golden" / "kafka"
UPDATE = os.environ.get("OLTSIM_UPDATE_GOLDEN") == "1"
#: The reference's example record (bbsim-reference.md section 6), as BBSim wrote it.
REFERENCE = GOLDEN / "reference.json"
#: The instant of that example: 2020-03-02 12:30:43.144449453 UTC.
EPOCH = 1583152243.144449453
TIMESTAMP = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{9}$")
MIB_UPLOAD, MIB_UPLOAD_NEXT = 0x4D, 0x4E
SERIAL = "BBSM00000001"


class Scenario:
    """A 1x2 OLT as the daemon wires it (OMCI responder, protocol engine, OpenOLT servicer) on a fake clock that
    starts at the reference's instant; the publisher's records collected, times in UTC."""

    def __init__(self):
        self.clock = Clock()
        self.clock.advance(EPOCH)
        settings = load_settings({"pon": 1, "onu": 2}, None)
        self.omci = OmciResponder.from_settings(settings)
        self.engine = ProtocolEngine.from_settings(settings)
        path = FramePath(self.omci, self.engine)
        self.olt = build_olt(settings, self.clock, random.Random(0), omci=path.omci, frames=path.frames)
        path.attach(self.olt)
        self.hub = IndicationHub(self.olt)
        self.openolt = on_loop(OpenoltServicer(self.olt, self.hub), openolt_pb2_grpc.OpenoltServicer)
        self.records: list[bytes] = []
        self.publisher = BbsimEventPublisher(self.olt, self.clock, self.records.append, tz=timezone.utc)
        self.olt.start()

    def step(self, seconds: float = 0.001) -> None:
        self.clock.advance(seconds)

    def send_omci(self, onu, message_type: int, me_class: int, me_id: int, contents: bytes = b"") -> None:
        receive(self.omci, onu, codec.encode(1, message_type, me_class, me_id, contents))

    def types(self) -> list[str]:
        return [json.loads(r)["EventType"] for r in self.records]

    def bring_up(self) -> None:
        """EnableIndication, discovery of both ONUs, ActivateOnu of the first, its MIB upload, the EAPOL flow and an
        authentication, the DHCP flow under the same flow id and an address, the flow removed; then DisableOlt,
        ReenableOlt and Reboot."""
        olt = self.olt

        def adapter():
            # What the adapter does while its indication stream is open.
            for _ in range(len(olt.pons[0].onus)):
                self.step(olt.timings.discovery_delay)
            grpc_call(self.openolt, "ActivateOnu", openolt_pb2.Onu(
                intf_id=0, onu_id=1, serial_number=translate.serial_to_pb(SERIAL)))
        stream_now(self.openolt.EnableIndication(openolt_pb2.Empty(), FakeContext()), wait=adapter)
        onu = olt.onu_by_serial(SERIAL)
        self.step()
        self.send_omci(onu, MIB_UPLOAD, 2, 0)
        for seq in range(self.omci.mib(onu).count):
            self.send_omci(onu, MIB_UPLOAD_NEXT, 2, 0, seq.to_bytes(2, "big"))
        self.step()
        uni = onu.unis[0]
        uni.enable()
        mac = f.mac_bytes(uni.services[0].mac)
        trap = dict(flow_id=7, flow_type="upstream", access_intf_id=0, onu_id=1, uni_id=0, port_no=uni.port_no or 1,
                    alloc_id=1024, gemport_id=1024)
        olt.flow_add(Flow(eth_type=0x888E, o_vid=4091, **trap))
        for frame in (eapol.identity_request_frame(mac, 1), eapol.md5_request_frame(mac, 2, bytes(range(16))),
                      eapol.success_frame(mac, 2)):
            self.step()
            self.engine.packet_out(onu, trap["port_no"], 1024, frame)
        self.step()
        olt.flow_add(Flow(eth_type=0x0800, src_port=68, dst_port=67, o_vid=900, o_pbits=255, **trap))
        for kind in (f.DHCP_OFFER, f.DHCP_ACK):
            self.step()
            self.engine.packet_out(onu, trap["port_no"], 1024, dhcp_reply(mac, kind))
        self.step()
        grpc_call(self.openolt, "FlowRemove", openolt_pb2.Flow(flow_id=7, flow_type="upstream", access_intf_id=0))
        for rpc in ("DisableOlt", "ReenableOlt", "Reboot"):
            self.step()
            grpc_call(self.openolt, rpc, openolt_pb2.Empty())


def dhcp_reply(mac: bytes, message_type: int) -> bytes:
    """A DHCP server's Offer or Ack to `mac`, tagged 900, as the adapter delivers it to the ONU."""
    message = f.build_dhcp(f.BOOTREPLY, dhcp.xid_for_mac(mac), mac, [(53, bytes((message_type,)))],
                           yiaddr=f.ip_bytes("10.1.0.2"))
    udp = f.build_ipv4_udp(f.ZERO_IP, f.BROADCAST_IP, 67, 68, message)
    return f.build_ethernet(mac, dhcp.SERVER_MAC, f.ETH_IPV4, udp, [f.VlanTag(900)])


def check_golden(name: str, lines: list[bytes]) -> None:
    path = GOLDEN / name
    text = b"".join(line + b"\n" for line in lines)
    if UPDATE:
        path.write_bytes(text)
    assert path.exists(), f"missing golden file {path}; run with OLTSIM_UPDATE_GOLDEN=1 to create it"
    assert path.read_bytes() == text


def reference_record() -> dict:
    return json.loads(REFERENCE.read_text())


def brought_up() -> Scenario:
    """A Scenario after its bring-up (called in the test: the EnableIndication stream needs the running loop)."""
    scenario = Scenario()
    scenario.bring_up()
    return scenario


def test_bring_up_records_match_golden():
    """A bring-up gives exactly the records of tests/golden/kafka/bringup.jsonl, byte for byte."""
    bring_up = brought_up()
    check_golden("bringup.jsonl", bring_up.records)


def test_bring_up_publishes_every_event_type_once_in_order():
    """Each of the twelve types appears once, in the order things happened: a replaced flow (the DHCP flow under
    the EAPOL flow's id) is not a first flow, and the second ONU, never activated, is only discovered."""
    bring_up = brought_up()
    assert bring_up.types() == [
        "OLT-enable-received", "ONU-discovery-indication-sent", "ONU-discovery-indication-sent",
        "ONU-activate-indication-received", "MIB-upload-received", "MIB-upload-done", "Flow-add-received",
        "ONU-authentication-done", "ONU-DHCP-ACK-received", "Flow-remove-received", "OLT-disable-received",
        "OLT-reenable-received", "OLT-reboot-received"]
    assert sorted(set(bring_up.types())) == sorted(EVENT_TYPES)


def test_records_have_the_reference_shape():
    """Every record has the reference record's keys in its order and its JSON types, -1 ids and no serial at OLT
    level, the ONU's PON, id and serial otherwise, and a Timestamp that is its EpochTime in Go's layout."""
    bring_up = brought_up()
    reference = reference_record()
    for line in bring_up.records:
        rec = json.loads(line)
        assert list(rec) == list(reference)
        assert [type(v) for v in rec.values()] == [type(v) for v in reference.values()]
        assert TIMESTAMP.match(rec["Timestamp"])
        shown = datetime.strptime(rec["Timestamp"][:26], "%Y-%m-%d %H:%M:%S.%f").replace(tzinfo=timezone.utc)
        assert int(shown.timestamp() * 1000) == rec["EpochTime"]
        assert rec["OltID"] == 0
        if rec["EventType"].startswith("OLT-"):
            assert (rec["IntfID"], rec["OnuID"], rec["OnuSerial"]) == (-1, -1, "")
        elif rec["EventType"] == "ONU-discovery-indication-sent":
            assert rec["IntfID"] == 0 and rec["OnuSerial"] in ("BBSM00000001", "BBSM00000002")
            assert rec["OnuID"] == int(rec["OnuSerial"][-2:])  # the creation index before ActivateOnu
        else:
            assert (rec["IntfID"], rec["OnuID"], rec["OnuSerial"]) == (0, 1, SERIAL)


def test_encoding_reproduces_the_reference_record():
    """BBSim's example record is rebuilt byte for byte from its fields and instant, but for the last three digits
    of the nanoseconds (the clock is a float: microseconds)."""
    reference = reference_record()
    ours = encode(record(reference["EventType"], reference["OltID"], reference["IntfID"], reference["OnuID"],
                         reference["OnuSerial"], EPOCH, timezone.utc))
    expected = REFERENCE.read_bytes().strip()
    assert ours == expected.replace(b'.144449453"', b'.144449000"')


def test_timestamp_in_another_zone_and_epoch_truncation():
    """Timestamp is the same instant in the given zone (local time by default); EpochTime truncates to the ms."""
    epoch, stamp = timestamp(0.0019, timezone(timedelta(hours=2)))
    assert (epoch, stamp) == (1, "1970-01-01 02:00:00.001900000")
    local_epoch, local = timestamp(EPOCH)
    assert local_epoch == 1583152243144
    assert local == datetime.fromtimestamp(1583152243).strftime("%Y-%m-%d %H:%M:%S") + ".144449000"


def test_flows_of_no_onu_and_unknown_onus_publish_nothing():
    """NNI trap flows (access interface -1), multicast flows and flows of an ONU that does not exist are not ONU
    flows: no record; neither are events BBSim has no type for."""
    scenario = Scenario()
    olt = scenario.olt
    for event in (events.FlowChanged(-1, -1, 1, "downstream", True), events.FlowChanged(0, 1, 2, "multicast", True),
                  events.FlowChanged(0, 99, 3, "upstream", True), events.FlowChanged(0, 99, 3, "upstream", False),
                  events.OpenoltRequest("HeartbeatCheck"), events.OltIndication("up"),
                  events.StateChanged("service", "EapolState", "auth_started", "eap_start_sent", 0, 1, SERIAL, 0)):
        assert map_event(olt, event) is None, event


def test_first_flow_again_after_the_onu_was_disabled():
    """An ONU that is disabled loses its flows (as BBSim's), so its next flow is a first flow again; a second flow
    with another id is not."""
    scenario = Scenario()
    olt = scenario.olt
    olt.enable_indication()
    for _ in range(len(olt.pons[0].onus)):
        scenario.step(olt.timings.discovery_delay)
    olt.activate_onu(0, SERIAL, 1)
    scenario.records.clear()
    base = dict(flow_type="upstream", access_intf_id=0, onu_id=1, uni_id=0, port_no=1, alloc_id=1024,
                gemport_id=1024, eth_type=0x888E, o_vid=4091)
    olt.flow_add(Flow(flow_id=1, **base))
    olt.flow_add(Flow(flow_id=2, **dict(base, gemport_id=1025)))
    assert scenario.types() == ["Flow-add-received"]
    olt.delete_onu(0, 1)  # disabled: its flows are forgotten
    scenario.step(olt.timings.rediscovery_delay + olt.timings.discovery_delay + 1)
    olt.activate_onu(0, SERIAL, 1)
    olt.flow_add(Flow(flow_id=1, **base))
    assert scenario.types() == ["Flow-add-received", "ONU-discovery-indication-sent", "Flow-add-received"]


def test_the_new_model_events_reach_no_adapter_and_show_on_the_event_bus():
    """OpenoltRequest and MibUpload become no OpenOLT indication; the event bus shows them as openolt-request and
    mib-upload records with their ONU (docs/kafka.md)."""
    from oltsim.api.eventbus import to_record
    from oltsim.southbound.indications import to_indications

    olt = Scenario().olt
    request = events.OpenoltRequest("ActivateOnu", 0, 1, SERIAL)
    upload = events.MibUpload(0, 1, SERIAL, True)
    assert to_indications(request) == [] and to_indications(upload) == []
    rec = to_record(olt, request, 1, 0.0)
    assert (rec["type"], rec["pon_id"], rec["onu_id"], rec["onu_serial"], rec["details"]) == (
        "openolt-request", 0, 1, SERIAL, {"rpc": "ActivateOnu"})
    rec = to_record(olt, upload, 2, 0.0)
    assert (rec["type"], rec["onu_serial"], rec["details"]) == ("mib-upload", SERIAL, {"done": "True"})
