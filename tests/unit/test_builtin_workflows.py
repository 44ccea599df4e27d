"""The built-in adapter's TT and DT workflows, in memory, through the real pipeline: what it writes over OMCI and
installs as flows for a bound UNI (one T-CONT, GEM port and 802.1p mapper per technology profile, each service's
EVTOCD rule, forwarding, IGMP and multicast flows), compared with the shapes real VOLTHA sends (the recorded ATT
workload), and what frames then do: each service's tags and p-bits on the NNI, its GEM port chosen by p-bit,
multicast to the UNIs that joined only."""
from __future__ import annotations

import base64
import gzip
import json
import os
import random

import pytest
from twisted.internet.task import Clock
from voltha_protos import openolt_pb2

from oltsim.config import load_settings
from oltsim.dataplane.front import DataPlaneFront
from oltsim.dataplane.pipeline import DataPlane, Dropped, PacketIn, ToNni, ToUni
from oltsim.dataplane.wire import peel
from oltsim.model.builder import build_olt
from oltsim.omci import codec
from oltsim.omci.responder import OmciResponder
from oltsim.omci.vlanconfig import VlanConfig
from oltsim.packets import frames as f
from oltsim.packets import igmp
from oltsim.packets.engine import ProtocolEngine
from oltsim.southbound import builtin
from oltsim.southbound import workflows as wf
from oltsim.southbound.builtin import BuiltinAdapter
from oltsim.southbound.openolt import IndicationHub
from oltsim.tap import FramePath
from test_builtin_dataplane import Recording as FlowsAndOmci


class Recording(FlowsAndOmci):
    """Also keeps what the adapter sends out of the NNI (its DHCP relay's UplinkPacketOut)."""

    def __init__(self, olt, hub):
        super().__init__(olt, hub)
        self.uplink = []
        self.onu_packets = []

    def OnuPacketOut(self, request, context):
        self.onu_packets.append(bytes(request.pkt))
        return super().OnuPacketOut(request, context)

    def UplinkPacketOut(self, request, context):
        self.uplink.append(bytes(request.pkt))
        return super().UplinkPacketOut(request, context)

WORKLOAD = "/work/shared/workloads/voltha-att-16x32.jsonl.gz"
GROUP = bytes((232, 1, 1, 1))


def rig(services: str, bound_unis=((0, 0),), onus: int = 2, unis: int = 1, nni_untagged: bool = False):
    """The built-in adapter at OLT id 10 over the `services` (a built-in name) with the UNIs `bound_unis` (ONU
    index, UNI id) bound to a pipeline with a tagged NNI; brought up on a Clock."""
    settings = load_settings({"olt_id": 10, "pon": 1, "onu": onus, "uni": unis, "services": services}, None)
    clock = Clock()
    engine = ProtocolEngine.from_settings(settings)
    path = FramePath(OmciResponder.from_settings(settings), engine, VlanConfig(), DataPlaneFront(engine))
    olt = build_olt(settings, clock, random.Random(0), omci=path.omci, frames=path.frames)
    path.attach(olt)
    dataplane = DataPlane(olt, clock, engine=engine, vlan_config=path.vlan_config, nni_tagged=True,
                          nni_untagged=nni_untagged)
    path.front.add(dataplane, lambda outputs: None)
    bound = {(olt.onus[onu].serial, uni) for onu, uni in bound_unis}
    for serial, uni_id in bound:
        dataplane.bind_uni(serial, uni_id)
    hub = IndicationHub(olt)
    servicer = Recording(olt, hub)
    adapter = BuiltinAdapter(olt, hub, servicer, clock, random.Random(1), workflow=settings.workflow,
                             forwards=lambda serial, uni_id: (serial, uni_id) in bound)
    olt.start()
    adapter.startService()
    for _ in range(300):
        clock.advance(0.1)
        if all(o.provisioned and not o.pending and not o.config for o in adapter.onus.values()) and \
                len(adapter.onus) == onus:
            break
    return olt, dataplane, servicer, adapter


def stop(olt, adapter):
    adapter.stopService()
    olt.stop()
    assert adapter.pending_calls() == 0


def tags_of(frame: bytes) -> list[tuple[int, int]]:
    """(VID, PCP) of each tag, outermost first."""
    return [(tci & 0xFFF, tci >> 13) for _, tci in peel(frame)[1]]


def udp_frame(src: bytes, tags, dst: bytes = b"\x02\x00\x00\x00\x00\x01") -> bytes:
    ip = f.build_ipv4_udp(bytes((10, 0, 0, 2)), bytes((10, 0, 0, 1)), 5001, 5001, b"x" * 32)
    return f.build_ethernet(dst, src, f.ETH_IPV4, ip, [f.VlanTag(vid, pcp) for vid, pcp in tags])


def group_frame(tags) -> bytes:
    ip = f.build_ipv4_udp(bytes((10, 9, 0, 1)), GROUP, 5001, 5001, b"m" * 64, ttl=32)
    return f.build_ethernet(bytes.fromhex("01005e010101"), b"\x02\x09\x00\x00\x00\x01", f.ETH_IPV4, ip,
                            [f.VlanTag(vid, pcp) for vid, pcp in tags])


def omci_of(servicer, onu_id: int, me_class: int, action: int) -> list[tuple[int, bytes]]:
    return [(me_id, contents) for oid, act, cls, me_id, contents in servicer.omci
            if oid == onu_id and cls == me_class and act == action]


def test_tt_bound_uni_gets_a_tcont_gem_and_mapper_per_profile_and_each_services_rule_and_flows():
    """TT (hsia tp 64, voip tp 65 p-bit 7, vod tp 66 p-bit 5 with IGMP, MC tp 66): three T-CONTs with their own
    alloc ids, three GEM ports, three mappers (HSIA's every p-bit, VoIP's p-bit 7 only, VoD's p-bit 5 only), each
    ANI port's filter its C-tag, the EVTOCD rules 35 -> 900 (priority copied), 65 -> 444 p7, 55 -> 55 p5; per
    profile a scheduler pair and its GEM queue with the mapper's p-bits; no EAPOL flow; the forwarding flows with
    SADIS's tags and priorities, the VoD IGMP trap flow and one multicast flow on MC's VLAN 550."""
    olt, dataplane, servicer, adapter = rig("tt")
    onu = olt.onus[0]
    onu_id = adapter.onus[onu.serial].onu_id
    ids = adapter.onus[onu.serial].unis[0]
    assert list(ids.allocs) == [64, 65, 66] and len(set(ids.allocs.values())) == 3
    hsia_gem, voip_gem, vod_gem = (ids.tp_gems[tp] for tp in (64, 65, 66))
    tconts = omci_of(servicer, onu_id, codec.T_CONT, codec.SET)
    assert [me for me, _ in tconts] == [0x8001, 0x8002, 0x8003]
    assert [int.from_bytes(c[2:4], "big") for _, c in tconts] == [ids.allocs[tp] for tp in (64, 65, 66)]
    mappers = {me: c[2:] for me, c in omci_of(servicer, onu_id, builtin.DOT1P_MAPPER, codec.SET)}
    pointers = {me: [int.from_bytes(c[2 * p:2 * p + 2], "big") for p in range(8)] for me, c in mappers.items()}
    null = builtin.NULL_POINTER
    assert pointers == {0x8001 + 64: [hsia_gem] * 8, 0x8001 + 65: [null] * 7 + [voip_gem],
                        0x8001 + 66: [null] * 5 + [vod_gem, null, null]}
    filters = {me: int.from_bytes(c[:2], "big") for me, c in omci_of(servicer, onu_id, builtin.VLAN_TAGGING_FILTER,
                                                                     codec.CREATE)}
    hsia_c = onu.unis[0].services[0].c_tag
    assert filters == {0x2102 + 0x101 + 64: hsia_c, 0x2102 + 0x101 + 65: 444, 0x2102 + 0x101 + 66: 55}
    rules = [c[2:] for _, c in omci_of(servicer, onu_id, builtin.EVTOCD, codec.SET) if c[:2] == b"\x04\x00"]
    words = [[int.from_bytes(r[i:i + 4], "big") for i in (0, 4, 8, 12)] for r in rules]
    # (filter inner VID, tags removed, treatment inner priority, treatment inner VID)
    assert [((w[1] >> 15) & 0x1FFF, w[2] >> 30, (w[3] >> 16) & 0xF, (w[3] >> 3) & 0x1FFF) for w in words] == [
        (35, 1, 8, hsia_c), (65, 1, 7, 444), (55, 1, 5, 55)]
    assert not [fl for fl in servicer.flows if fl.classifier.eth_type == f.ETH_EAPOL]
    by_key = {(fl.flow_type, fl.classifier.o_vid, fl.classifier.eth_type, fl.classifier.ip_proto): fl
              for fl in servicer.flows if fl.onu_id == onu_id}
    up_voip = by_key[("upstream", 444, 0, 0)]
    assert (up_voip.classifier.o_pbits, up_voip.action.o_vid, up_voip.action.o_pbits,
            up_voip.action.cmd.remark_outer_pbits, up_voip.gemport_id, up_voip.alloc_id, up_voip.tech_profile_id) == (
        7, 333, 7, True, voip_gem, ids.allocs[65], 65)
    up_hsia = by_key[("upstream", hsia_c, 0, 0)]
    assert (up_hsia.classifier.o_pbits, up_hsia.action.o_vid, up_hsia.action.cmd.remark_outer_pbits) == (255, 900,
                                                                                                        False)
    down_vod = by_key[("downstream", 555, 0, 0)]
    assert (down_vod.classifier.i_vid, down_vod.classifier.o_pbits, down_vod.action.cmd.remove_outer_tag,
            down_vod.action.cmd.remark_inner_pbits, down_vod.action.i_pbits) == (55, 5, True, True, 5)
    igmp_trap = by_key[("upstream", 55, f.ETH_IPV4, 2)]
    assert (igmp_trap.classifier.ip_proto, igmp_trap.action.cmd.trap_to_host, igmp_trap.gemport_id) == (2, True,
                                                                                                       vod_gem)
    mcast = [fl for fl in servicer.flows if fl.flow_type == "multicast"]
    assert len(mcast) == 1 and mcast[0].classifier.o_vid == 550
    assert not [fl for fl in servicer.flows if fl.flow_type != "multicast" and fl.classifier.o_vid == 550]
    queues = {q.gemport_id: q.pbit_map for call in olt.onus[0].queues.values() for q in [call[1]]}
    assert queues == {hsia_gem: "0b11111111", voip_gem: "0b10000000", vod_gem: "0b00100000"}
    ups = {alloc for (direction, alloc) in onu.schedulers if direction == 0}
    assert ups == set(ids.allocs.values())
    stop(olt, adapter)


def test_tt_frames_leave_the_nni_with_their_services_tags_and_p_bits_on_their_gem_ports():
    """From the RG: VLAN 65 (any p-bit) leaves the NNI as 333 p7 over 444 p7 on the VoIP GEM port; VLAN 35 keeps its
    p-bit (3 here) on both HSIA tags 900 / 900+ on the HSIA GEM port; VLAN 55 as 555 p5 over 55 p5; an untagged
    frame matches no flow. Back from the NNI 333 p7 / 444 p7 reaches the RG as VLAN 65 p7. The OpenOLT GEM
    statistics count each frame on its own GEM port."""
    olt, dataplane, servicer, adapter = rig("tt")
    onu = olt.onus[0]
    serial, mac = onu.serial, f.mac_bytes(onu.unis[0].services[0].mac)
    ids = adapter.onus[serial].unis[0]
    hsia_c = onu.unis[0].services[0].c_tag
    sent = {}
    for rg_tags, key in (([(65, 0)], "voip"), ([(65, 3)], "voip"), ([(35, 3)], "hsia"), ([(55, 0)], "vod")):
        outs = dataplane.from_uni(serial, 0, udp_frame(mac, rg_tags))
        assert [type(o) for o in outs] == [ToNni], outs
        sent.setdefault(key, []).append(tags_of(outs[0].frame))
    assert sent == {"voip": [[(333, 7), (444, 7)]] * 2, "hsia": [[(900, 3), (hsia_c, 3)]], "vod": [[(555, 5), (55, 5)]]}
    assert dataplane.from_uni(serial, 0, udp_frame(mac, [])) == [Dropped(f"uni {serial}/0", "no-flow")]
    pon, onu_id = 0, adapter.onus[serial].onu_id
    stats = {tp: dataplane.gem_statistics(pon, onu_id, ids.tp_gems[tp]) for tp in (64, 65, 66)}
    assert (stats[64][0], stats[65][0], stats[66][0]) == (1, 2, 1), stats
    down = dataplane.from_nni(udp_frame(b"\x02\x09\x00\x00\x00\x01", [(333, 7), (444, 7)], dst=mac))
    assert [type(o) for o in down] == [ToUni] and tags_of(down[0].frame) == [(65, 7)]
    stop(olt, adapter)


def test_tt_multicast_reaches_the_unis_that_joined_until_they_leave():
    """Two bound UNIs on two ONUs: the first joins the group (IGMPv2 report under the VoD VLAN 55: trapped to the
    adapter, snooped); group traffic on the MC VLAN 550 from the NNI reaches it (without the VLAN), not the
    other; after its leave nothing reaches any UNI (no-member)."""
    olt, dataplane, servicer, adapter = rig("tt", bound_unis=((0, 0), (1, 0)))
    first, second = olt.onus[0], olt.onus[1]
    mac = f.mac_bytes(first.unis[0].services[2].mac)
    assert dataplane.from_nni(group_frame([(550, 5)])) == [Dropped("nni", "no-member")]
    joined = dataplane.from_uni(first.serial, 0, igmp.join_v2_frame(mac, GROUP, 55, 0))
    assert [type(o) for o in joined] == [PacketIn]
    outs = dataplane.from_nni(group_frame([(550, 5)]))
    assert [(type(o), o.serial, o.uni_id) for o in outs] == [(ToUni, first.serial, 0)]
    assert tags_of(outs[0].frame) == [] and outs[0].frame[30:34] == GROUP
    assert dataplane.from_nni(group_frame([(551, 5)])) != outs     # another VLAN: no multicast flow takes it
    dataplane.from_uni(first.serial, 0, igmp.leave_v2_frame(mac, GROUP, 55, 0))
    assert dataplane.from_nni(group_frame([(550, 5)])) == [Dropped("nni", "no-member")]
    assert second.serial not in [o.serial for o in outs]
    stop(olt, adapter)


def test_dt_bound_uni_passes_the_rgs_tag_under_its_own_s_tag_without_eapol_or_dhcp_traps():
    """DT (uni_tag_match and C-tag 4096, S-tag unique per UNI): no EAPOL or DHCP trap flow, one T-CONT, an EVTOCD
    rule leaving single-tagged frames as they are and no VLAN filter; the RG's VLAN 7 frame leaves the NNI under
    the UNI's S-tag over 7 (its p-bit kept), an untagged one matches no flow, and the S-tag over 7 comes back as
    7."""
    olt, dataplane, servicer, adapter = rig("dt", bound_unis=((0, 0), (1, 0)))
    onu = olt.onus[1]
    serial, mac = onu.serial, f.mac_bytes(onu.unis[0].services[0].mac)
    s_tag = onu.unis[0].services[0].s_tag
    assert s_tag != olt.onus[0].unis[0].services[0].s_tag
    assert not [fl for fl in servicer.flows if fl.classifier.eth_type in (f.ETH_EAPOL, f.ETH_IPV4)]
    onu_id = adapter.onus[serial].onu_id
    assert not omci_of(servicer, onu_id, builtin.VLAN_TAGGING_FILTER, codec.CREATE)
    up = [fl for fl in servicer.flows if fl.flow_type == "upstream" and fl.onu_id == onu_id]
    assert [(fl.classifier.o_vid, fl.classifier.pkt_tag_type, fl.action.o_vid) for fl in up] == [
        (0, "single_tag", s_tag)]
    outs = dataplane.from_uni(serial, 0, udp_frame(mac, [(7, 4)]))
    assert [type(o) for o in outs] == [ToNni] and tags_of(outs[0].frame) == [(s_tag, 4), (7, 4)]
    assert dataplane.from_uni(serial, 0, udp_frame(mac, [])) == [Dropped(f"uni {serial}/0", "no-flow")]
    down = dataplane.from_nni(udp_frame(b"\x02\x09\x00\x00\x00\x01", [(s_tag, 0), (7, 0)], dst=mac))
    assert [(type(o), o.serial) for o in down] == [(ToUni, serial)] and tags_of(down[0].frame) == [(7, 0)]
    stop(olt, adapter)


def test_tt_dhcp_relay_pushes_the_s_tag_with_its_upstream_priority():
    """The simulated VoIP and VoD clients of an unbound TT UNI (their DHCP trap flows classify their upstream
    p-bit): the relayed Discover leaves with the S-tag of the service's upstream S-tag priority over the C-tag the
    client sent (333 p7 over 444 p7, 555 p5 over 55 p5), and both get their lease."""
    olt, dataplane, servicer, adapter = rig("tt", bound_unis=(), onus=1)
    relayed = {tuple(tags_of(frame)) for frame in servicer.uplink}
    assert {((333, 7), (444, 7)), ((555, 5), (55, 5))} <= relayed, relayed
    dhcp = [s for s in olt.onus[0].unis[0].services if s.spec.needs_dhcp]
    assert [s.dhcp_state for s in dhcp] == ["dhcp_ack_received"] * 2
    stop(olt, adapter)


def test_tt_dhcp_answer_on_the_untagged_nni_finds_a_client_that_only_sent_trapped_frames():
    """TT with an untagged NNI: the VoIP client's Discover (VLAN 65) is trapped, never forwarded, yet the server's
    broadcast Offer on the untagged NNI goes in under the VoIP tags its frames would carry (333 over 444), is
    trapped on the NNI (its trap flow takes any p-bit) and reaches the client through the adapter (OnuPacketOut,
    the S-tag popped)."""
    from oltsim.packets import dhcp as dhcp_frames
    olt, dataplane, servicer, adapter = rig("tt", onus=1, nni_untagged=True)
    onu = olt.onus[0]
    mac = f.mac_bytes(onu.unis[0].services[1].mac)                 # VoIP's
    discover = dhcp_frames.discover_frame(mac, 65, 0, 1025, 0, 1)
    assert [type(o) for o in dataplane.from_uni(onu.serial, 0, discover)] == [PacketIn]
    offer = f.build_ethernet(f.BROADCAST_MAC, b"\x02\x09\x00\x00\x00\x01", f.ETH_IPV4, f.build_ipv4_udp(
        bytes((10, 210, 0, 1)), f.BROADCAST_IP, f.DHCP_SERVER_PORT, f.DHCP_CLIENT_PORT,
        f.build_dhcp(f.BOOTREPLY, 1, mac, [(f.OPT_MESSAGE_TYPE, bytes((f.DHCP_OFFER,)))])))
    before = len(servicer.onu_packets)
    assert [type(o) for o in dataplane.from_nni_untagged(offer)] == [PacketIn]
    olt_clock_turns = 0
    while len(servicer.onu_packets) == before and olt_clock_turns < 20:
        adapter.clock.advance(0.1)
        olt_clock_turns += 1
    assert [tags_of(frame) for frame in servicer.onu_packets[before:]] == [[(444, 7)]]
    stop(olt, adapter)


def test_att_hsia_flows_take_any_p_bit_and_keep_it_on_the_s_tag():
    """ATT: the HSIA flows classify any p-bit (255, as VOLTHA sends them: the recorded workload's), so an RG frame
    the ONU tagged with p-bit 0 and a downstream frame of p-bit 6 both pass, the S-tag copying the C-tag's."""
    olt, dataplane, servicer, adapter = rig("att", bound_unis=())
    hsia = [fl for fl in servicer.flows if fl.priority == builtin.HSIA_PRIORITY]
    assert hsia == []                                  # nothing bound: no forwarding flows
    assert all(fl.classifier.o_pbits == 255 for fl in servicer.flows if fl.onu_id >= 0)
    stop(olt, adapter)


def _shape(message) -> set:
    """The names of the fields a message sets, nested ones as `outer.inner`."""
    names = set()
    for descriptor, value in message.ListFields():
        if hasattr(value, "ListFields"):
            names |= {f"{descriptor.name}.{inner}" for inner in _shape(value)} or {descriptor.name}
        else:
            names.add(descriptor.name)
    return names


@pytest.mark.skipif(not os.path.exists(WORKLOAD), reason="the recorded ATT workload is not on this machine")
def test_att_flows_have_the_shape_of_voltha_s():
    """The built-in adapter's ATT flows set the same classifier and action fields as real VOLTHA's in the recorded
    workload (EAPOL trap, DHCP trap, HSIA up and down, the NNI's DHCP trap), ids, ports and GEM-to-AES keys
    aside."""
    recorded = {}
    with gzip.open(WORKLOAD, "rt") as lines:
        for line in lines:
            entry = json.loads(line)
            if entry["m"] != "FlowAdd" or "req" not in entry:
                continue
            flow = openolt_pb2.Flow()
            flow.ParseFromString(base64.b64decode(entry["req"]))
            if flow.onu_id < 0 and flow.classifier.eth_type != f.ETH_IPV4:
                continue                                   # the LLDP trap: the built-in adapter has none
            kind = (flow.flow_type, flow.classifier.eth_type, flow.action.cmd.trap_to_host, flow.onu_id < 0)
            recorded.setdefault(kind, flow)
            if len(recorded) == 5:
                break
    olt, dataplane, servicer, adapter = rig("att", bound_unis=((0, 0),))
    # the bound UNI has no supplicant here: say EAP succeeded, as the pipeline would on seeing it
    onu = adapter.onus[olt.onus[0].serial]
    adapter._dhcp_flows(onu, olt.onus[0].unis[0])
    ours = {(fl.flow_type, fl.classifier.eth_type, fl.action.cmd.trap_to_host, fl.onu_id < 0): fl
            for fl in servicer.flows}
    ignore = {"gemport_to_aes", "flow_id", "cookie", "uni_id", "access_intf_id", "alloc_id", "onu_id", "gemport_id",
              "network_intf_id", "port_no"}
    for kind, theirs in recorded.items():
        assert kind in ours, kind
        assert _shape(ours[kind]) - ignore == _shape(theirs) - ignore, kind
    stop(olt, adapter)


def test_tt_on_four_unis_uses_the_mibs_eight_tconts_and_says_so_for_the_rest():
    """TT on 4 UNIs needs 12 T-CONTs, the MIB has 8 (BBSim's): the first 8 profiles get theirs (alloc ids set over
    OMCI), one warning names the first UNI and profile left without, and every service still gets its lease."""
    from twisted.logger import globalLogPublisher
    warned = []

    def observe(event):
        if "builtin-adapter-no-tcont" in event.get("log_format", ""):
            warned.append((event["uni"], event["tp"]))
    globalLogPublisher.addObserver(observe)
    try:
        olt, dataplane, servicer, adapter = rig("tt", bound_unis=(), onus=1, unis=4)
    finally:
        globalLogPublisher.removeObserver(observe)
    onu_id = adapter.onus[olt.onus[0].serial].onu_id
    assert [me for me, _ in omci_of(servicer, onu_id, codec.T_CONT, codec.SET)] == list(range(0x8001, 0x8009))
    assert warned == [(2, 66)]
    assert all(s.dhcp_state == "dhcp_ack_received" for u in olt.onus[0].unis for s in u.services if s.spec.needs_dhcp)
    stop(olt, adapter)


def test_the_workflows_rules_and_pbit_maps():
    """ATT's untagged rule is the one the built-in adapter always wrote (push the C-tag, priority 0); DT's leaves a
    single-tagged frame of any VID and priority as it is; TT VoIP's replaces VID 65 by 444 with priority 7; the
    profiles' p-bit maps are the tech profiles' strings."""
    att = wf.Service(0, "hsia", 64, 0, 900, 900, None, None, None, True, True, False, False)
    assert wf.evtocd_rule(att) == builtin.evtocd_untagged_rule(900)
    dt = wf.Service(0, "hsia", 64, 4096, 4096, 900, None, None, None, False, False, False, False)
    words = [int.from_bytes(wf.evtocd_rule(dt)[i:i + 4], "big") for i in (0, 4, 8, 12)]
    assert (words[1] >> 28, (words[1] >> 15) & 0x1FFF, words[2] >> 30, (words[2] >> 16) & 0xF,
            (words[3] >> 16) & 0xF) == (8, 4096, 0, 15, 15)
    voip = wf.Service(1, "voip", 65, 65, 444, 333, 7, 7, 7, False, True, False, False)
    words = [int.from_bytes(wf.evtocd_rule(voip)[i:i + 4], "big") for i in (0, 4, 8, 12)]
    assert ((words[1] >> 15) & 0x1FFF, words[2] >> 30, (words[3] >> 16) & 0xF, (words[3] >> 3) & 0x1FFF) == (
        65, 1, 7, 444)
    mc = wf.Service(3, "MC", 66, 0, 55, 550, None, None, 5, False, False, False, True)
    assert wf.evtocd_rule(mc) is None and wf.forwarding_flows(mc, 0, 1, 0, 16, 5, 1024, 1024) == []
    assert [wf.pbit_map(wf.pbits(group)) for group in ([att], [voip], [voip, mc], [mc])] == [
        "0b11111111", "0b10000000", "0b10000000", "0b11111111"]
    assert wf.filter_vids([att], authenticated=False) == [4091] and wf.filter_vids([att]) == [4091, 900]
    assert wf.filter_vids([dt]) is None and wf.filter_vids([voip, mc]) == [444]
