"""The built-in adapter's part of the data plane, in memory: for a UNI with an interface it writes the
ONU's bridge and VLAN operations over OMCI in VOLTHA's order (EAPOL's 4091 first, the C-tag after EAP success),
installs the ATT workflow's HSIA flows and the NNI's DHCP trap flow, and checks EAP-MD5 against the configured
secret; a UNI without an interface is brought up exactly as before."""
from __future__ import annotations

import random

from twisted.internet.task import Clock

from oltsim.config import load_settings
from oltsim.model.builder import build_olt
from oltsim.omci import codec
from oltsim.omci.responder import OmciResponder
from oltsim.packets import frames as f
from oltsim.packets.engine import ProtocolEngine
from oltsim.tap import FramePath
from oltsim.southbound import builtin
from oltsim.southbound.builtin import BuiltinAdapter
from oltsim.southbound.openolt import IndicationHub, OpenoltServicer
from oltsim.dataplane.front import DataPlaneFront
from oltsim.dataplane.pipeline import DataPlane, ToUni
from oltsim.omci.vlanconfig import VlanConfig
from oltsim.packets import eapol

EAP_OK = "eap_response_success_received"
DHCP_OK = "dhcp_ack_received"


class Recording(OpenoltServicer):
    """The OpenOLT servicer the adapter calls, keeping the OMCI requests and flows it was sent."""

    def __init__(self, olt, hub):
        super().__init__(olt, hub)
        self.omci = []
        self.flows = []

    def OmciMsgOut(self, request, context):
        frame = codec.parse(bytes.fromhex(bytes(request.pkt).decode("ascii")))
        self.omci.append((request.onu_id, frame.message_type & codec.ACTION_MASK, frame.me_class, frame.me_id,
                          bytes(frame.contents)))
        return super().OmciMsgOut(request, context)

    def FlowAdd(self, request, context):
        self.flows.append(request)
        return super().FlowAdd(request, context)


class FakeRG:
    """The real supplicant on a bound UNI, in memory: answers the EAP requests the data plane delivers to its UNI
    (Identity, then MD5-Challenge with `password`) by sending its responses into the data plane from that UNI."""

    def __init__(self, dataplane, password: bytes = b"password"):
        self.dataplane = dataplane
        self.password = password
        self.requests = []

    def deliver(self, outputs) -> None:
        for out in outputs:
            if not isinstance(out, ToUni):
                continue
            frame = f.decode(out.frame)
            if frame.kind != "eapol" or frame.eap is None or frame.eap.code != f.EAP_REQUEST:
                continue
            self.requests.append((out.serial, out.uni_id, frame.eth.src, frame.eap.type))
            mac = frame.eth.dst
            if frame.eap.type == f.EAP_TYPE_IDENTITY:
                reply = eapol.identity_response_frame(mac, frame.eap.id)
            else:
                challenge = eapol.parse_md5_challenge(frame.eap.data)
                value = bytes((eapol.MD5_VALUE_SIZE,)) + eapol.md5_response(frame.eap.id, challenge, self.password)
                reply = eapol.eap_frame(mac, mac, f.build_eap(f.EAP_RESPONSE, frame.eap.id, f.EAP_TYPE_MD5, value))
            self.deliver(self.dataplane.from_uni(out.serial, out.uni_id, reply))


def rig(bound, nni_untagged=False, **given):
    """The southbound in memory with the built-in adapter; the `bound` (serial, UNI) pairs bound to the real pipeline
    (its OMCI record in front of the responder) with a FakeRG as their supplicant; `nni_untagged`: the pipeline has
    an untagged NNI interface (UplinkPacketOut goes out of it)."""
    settings = load_settings({"pon": 1, "onu": 2, "uni": 2, **given}, None)
    clock = Clock()
    engine = ProtocolEngine.from_settings(settings)
    path = FramePath(OmciResponder.from_settings(settings), engine, VlanConfig(), DataPlaneFront(engine))
    olt = build_olt(settings, clock, random.Random(0), omci=path.omci, frames=path.frames)
    path.attach(olt)
    dataplane = DataPlane(olt, clock, engine=engine, vlan_config=path.vlan_config, nni_tagged=False,
                          nni_untagged=nni_untagged)
    rg = FakeRG(dataplane)
    path.front.add(dataplane, rg.deliver)
    for serial, uni_id in bound:
        dataplane.bind_uni(serial, uni_id)
    hub = IndicationHub(olt)
    servicer = Recording(olt, hub)
    adapter = BuiltinAdapter(olt, hub, servicer, clock, random.Random(1),
                             forwards=lambda serial, uni_id: (serial, uni_id) in bound)
    adapter.rg = rg
    olt.start()
    adapter.startService()
    for _ in range(600):
        clock.advance(0.1)
        if all(s.eapol_state == EAP_OK and (s.dhcp_state == DHCP_OK or (onu.serial, u.id) in bound)
               for onu in olt.onus for u in onu.unis for s in u.services):
            break
    return olt, servicer, adapter, clock


def test_bound_uni_gets_bridge_vlan_omci_and_hsia_flows():
    """A bound UNI's ONU is sent MAC bridge, 802.1p mapper, GEM interworking, VLAN filter (4091) and EVTOCD (create,
    TPIDs, untagged -> push 4091); the adapter asks the UNI's supplicant for its identity (from its own MAC), and after
    the real supplicant's EAP success (through the pipeline) the filter [4091, C-tag] and the untagged -> push C-tag
    rule follow, with the HSIA flows (upstream: C-tag single tagged, push the S-tag; downstream: S-tag over C-tag,
    pop) and one NNI DHCP trap flow; the other ONU gets none of it, and every simulated subscriber still comes up."""
    settings_olt = build_olt(load_settings({"pon": 1, "onu": 2, "uni": 2}, None), Clock(), random.Random(0))
    serial = settings_olt.onus[0].serial
    olt, servicer, adapter, clock = rig({(serial, 1)})
    assert all(s.eapol_state == EAP_OK and s.dhcp_state == DHCP_OK for onu in olt.onus for u in onu.unis
               for s in u.services if (onu.serial, u.id) != (serial, 1))
    uni = olt.onu_by_serial(serial).unis[1]
    assert uni.services[0].eapol_state == EAP_OK          # the FakeRG's EAP, seen by the pipeline
    first = adapter.rg.requests[0]
    assert first == (serial, 1, adapter.authenticator_mac, f.EAP_TYPE_IDENTITY)   # asked, not waiting for a Start
    svc = uni.services[0]
    onu_id = adapter.onus[serial].onu_id
    sent = [(cls, action) for oid, action, cls, _, _ in servicer.omci if oid == onu_id and cls in (45, 47, 84, 130,
                                                                                               171, 266)]
    assert sent == [(45, codec.CREATE), (47, codec.CREATE), (130, codec.CREATE), (47, codec.CREATE),
                    (266, codec.CREATE), (130, codec.SET), (84, codec.CREATE), (171, codec.CREATE),
                    (171, codec.SET), (171, codec.SET), (84, codec.SET), (171, codec.SET)]
    rules = [contents for oid, action, cls, _, contents in servicer.omci
             if oid == onu_id and cls == 171 and action == codec.SET and contents[:2] == b"\x04\x00"]
    assert [int.from_bytes(rule[2 + 12:2 + 16], "big") >> 3 & 0x1FFF for rule in rules] == [4091, svc.c_tag]
    vtfd = [c for oid, a, cls, _, c in servicer.omci if oid == onu_id and cls == 84]
    assert vtfd[0][:2] == (4091).to_bytes(2, "big") and vtfd[1][2:6] == (4091).to_bytes(2, "big") + \
        svc.c_tag.to_bytes(2, "big")
    hsia = [fl for fl in servicer.flows if fl.priority == builtin.HSIA_PRIORITY]
    assert {(fl.flow_type, fl.onu_id, fl.uni_id) for fl in hsia} == {("upstream", onu_id, 1),
                                                                      ("downstream", onu_id, 1)}
    up = next(fl for fl in hsia if fl.flow_type == "upstream")
    down = next(fl for fl in hsia if fl.flow_type == "downstream")
    assert (up.classifier.o_vid, up.classifier.pkt_tag_type, up.action.o_vid, up.action.cmd.add_outer_tag) == (
        svc.c_tag, "single_tag", svc.s_tag, True)
    assert (down.classifier.o_vid, down.classifier.i_vid, down.action.cmd.remove_outer_tag) == (
        svc.s_tag, svc.c_tag, True)
    nni = [fl for fl in servicer.flows if fl.onu_id == -1]
    assert len(nni) == 1 and nni[0].classifier.src_port == f.DHCP_SERVER_PORT
    others = [cls for oid, _, cls, _, _ in servicer.omci if oid != onu_id and cls in (45, 47, 84, 130, 171, 266)]
    assert others == []
    adapter.stopService()
    olt.stop()
    assert adapter.pending_calls() == 0


def test_no_bound_uni_changes_nothing():
    """Without a bound UNI the adapter sends no bridge or VLAN OMCI and no forwarding flow (today's bring-up)."""
    olt, servicer, adapter, clock = rig(set())
    assert all(s.eapol_state == EAP_OK and s.dhcp_state == DHCP_OK for onu in olt.onus for s in onu.services)
    assert not [1 for _, _, cls, _, _ in servicer.omci if cls in (45, 47, 84, 130, 171, 266)]
    assert not [fl for fl in servicer.flows if fl.priority == builtin.HSIA_PRIORITY or fl.onu_id == -1]
    adapter.stopService()
    olt.stop()


def test_evtocd_rule_layout():
    """The untagged rule is G.988's: no outer or inner tag filtered (priority 15, VID 4096), nothing removed, one tag
    pushed with priority 0, the VID and TPID 0x8100."""
    rule = builtin.evtocd_untagged_rule(900)
    words = [int.from_bytes(rule[i:i + 4], "big") for i in range(0, 16, 4)]
    assert words[0] >> 28 == 15 and words[1] >> 28 == 15 and (words[1] >> 15) & 0x1FFF == 4096
    assert words[2] >> 30 == 0 and (words[2] >> 16) & 0xF == 15
    assert (words[3] >> 16) & 0xF == 0 and (words[3] >> 3) & 0x1FFF == 900 and words[3] & 7 == 4


def test_eapol_starts_from_ever_new_macs_keep_a_bounded_number_of_sessions():
    """A client on a bound UNI sends what it likes: EAPOL-Starts from ever new source MACs each open an EAP session
    in the adapter's authenticator; it keeps at most MAX_SESSIONS of them (the oldest forgotten), and the newest
    one is still answered."""
    from voltha_protos import openolt_pb2
    settings_olt = build_olt(load_settings({"pon": 1, "onu": 2, "uni": 2}, None), Clock(), random.Random(0))
    serial = settings_olt.onus[0].serial
    olt, servicer, adapter, clock = rig({(serial, 1)})
    onu = adapter.onus[serial]
    count = builtin.MAX_SESSIONS + 100
    for n in range(count):
        mac = bytes([2]) + n.to_bytes(5, "big")
        adapter._on_packet(openolt_pb2.PacketIndication(intf_type="pon", intf_id=onu.pon, onu_id=onu.onu_id,
                                                        uni_id=1, gemport_id=1024, pkt=eapol.eapol_start_frame(mac)))
    assert len(adapter.sessions) == builtin.MAX_SESSIONS
    assert bytes([2]) + (count - 1).to_bytes(5, "big") in adapter.sessions
    adapter.stopService()
    olt.stop()


def test_with_an_nni_interface_the_simulated_subscribers_still_get_the_built_in_dhcp_server():
    """With an NNI interface, UplinkPacketOut of a bound UNI's client goes out of it (to the real DHCP server), but a
    simulated client's DHCP (an unbound UNI's service MAC) is still answered by the built-in server, as before:
    every unbound subscriber reaches dhcp_ack_received (they stayed in dhcp_discovery_sent, their Discover sent to
    the real server, whose unicast answer found no subscriber)."""
    settings_olt = build_olt(load_settings({"pon": 1, "onu": 2, "uni": 2}, None), Clock(), random.Random(0))
    serial = settings_olt.onus[0].serial
    olt, servicer, adapter, clock = rig({(serial, 1)}, nni_untagged=True)
    assert all(s.eapol_state == EAP_OK and s.dhcp_state == DHCP_OK for onu in olt.onus for u in onu.unis
               for s in u.services if (onu.serial, u.id) != (serial, 1))
    adapter.stopService()
    olt.stop()


def test_a_clients_flood_of_refused_frames_costs_counters_and_a_few_summary_lines():
    """10,000 DHCP Discovers from random MACs and 2,000 undecodable packets from a bound UNI: the adapter counts
    each by reason, logs the first of each as a warning and then one summary line per reason per 10 s (a handful of
    warnings, not thousands); afterwards another subscriber still authenticates and gets its lease."""
    from twisted.logger import LogLevel, globalLogPublisher
    from voltha_protos import openolt_pb2
    from oltsim.packets import dhcp as dhcp_frames
    settings_olt = build_olt(load_settings({"pon": 1, "onu": 2, "uni": 2}, None), Clock(), random.Random(0))
    serial = settings_olt.onus[0].serial
    olt, servicer, adapter, clock = rig({(serial, 1)})
    onu = adapter.onus[serial]
    logged: list = []
    globalLogPublisher.addObserver(logged.append)
    try:
        r = random.Random(44)
        for n in range(10000):
            mac = bytes([2]) + r.randbytes(5)
            adapter._on_packet(openolt_pb2.PacketIndication(
                intf_type="pon", intf_id=onu.pon, onu_id=onu.onu_id, uni_id=1, gemport_id=1024,
                pkt=dhcp_frames.discover_frame(mac, 0, 0, 1024, onu.pon, onu.onu_id)))
            if n % 1000 == 0:
                clock.advance(1)
        for _ in range(2000):
            adapter._on_packet(openolt_pb2.PacketIndication(intf_type="nni", pkt=b"\x01\x02"))
        clock.advance(builtin.FRAME_WARNING_INTERVAL)
    finally:
        globalLogPublisher.removeObserver(logged.append)
    warnings = [e["log_format"].split(" ", 1)[0] for e in logged
                if e.get("log_namespace") == "oltsim.adapter" and e.get("log_level") == LogLevel.warn]
    assert adapter.frame_warnings.counts == {"builtin-adapter-dhcp-unknown-client": 10000,
                                             "builtin-adapter-packet-undecodable": 2000}
    assert 2 <= warnings.count("builtin-adapter-dhcp-unknown-client") <= 3
    assert warnings.count("builtin-adapter-packet-undecodable") == 2
    summaries = [e for e in logged if e.get("log_namespace") == "oltsim.adapter" and e.get("log_level") == LogLevel.warn
                 and "count={count}" in e.get("log_format", "")]
    assert sum(e["count"] for e in summaries) + len(warnings) - len(summaries) == 12000
    other = olt.onus[1]
    other.power_off()
    other.power_on()
    services = [s for u in other.unis for s in u.services]
    for _ in range(600):
        clock.advance(0.1)
        if all(s.eapol_state == EAP_OK and s.dhcp_state == DHCP_OK for s in services):
            break
    assert all(s.eapol_state == EAP_OK and s.dhcp_state == DHCP_OK for s in services)
    adapter.stopService()
    olt.stop()
    assert adapter.pending_calls() == 0 and not clock.getDelayedCalls()
