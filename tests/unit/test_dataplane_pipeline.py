"""The data plane's pure pipeline at a lab's numbering (OLT id 10, 16 ONUs on a PON, UNI 2 of ONU 11 on PON 1),
with the OMCI VOLTHA's ONU adapter writes and the ATT flows its OLT adapter installs (tests/unit/dataplane_lab.py)."""
import pytest

from dataplane_lab import ANY_PBITS, RG_MAC, SERVER_MAC, Lab, ip_frame, push_rule, tags_of
from oltsim.dataplane.pipeline import Dropped, PacketIn, ToNni, ToNniUntagged, ToUni
from oltsim.model import events
from oltsim.model.errors import NotFound
from oltsim.omci import codec
from oltsim.omci.responder import reboot_onu
from oltsim.omci.vlanconfig import EVTOCD, VTFD
from oltsim.packets import dhcp as dhcp_frames, eapol, frames as f

PON, INDEX, UNI, GEM = 1, 11, 2, 1100


@pytest.fixture
def lab():
    return Lab()


@pytest.fixture
def sub(lab):
    """The subscriber on UNI 2 of ONU BBSM000a010b (PON 1, ONU id 11), configured and bound."""
    onu, service = lab.subscriber(PON, INDEX, UNI, GEM)
    return onu, service


def dropped(outputs):
    return [(o.where, o.reason) for o in outputs if isinstance(o, Dropped)]


def test_lab_numbering_and_att_tags(lab, sub):
    """The lab's subscriber is ONU BBSM000a010b, UNI 2, with the C-tag the ATT services file gives it (900 unique:
    1006 for the 107th UNI of OLT 10) under the shared S-tag 900."""
    onu, service = sub
    assert onu.serial == "BBSM000a010b" and onu.pon.id == 1 and onu.onu_id == 11
    assert (service.c_tag, service.s_tag) == (1006, 900)


def test_upstream_untagged_gets_ctag_from_evtocd_and_stag_from_flow(lab, sub):
    """An untagged frame from the RG leaves the NNI double-tagged: S-tag 900 from the OLT's flow outside, C-tag 1006
    from the ONU's EVTOCD rule inside; the untagged NNI gets the same frame without tags."""
    onu, service = sub
    frame = ip_frame(SERVER_MAC, RG_MAC)
    out = lab.dp.from_uni(onu.serial, UNI, frame)
    assert [type(o) for o in out] == [ToNni, ToNniUntagged]
    assert tags_of(out[0].frame) == [(900, 0), (1006, 0)]
    assert f.parse_ethernet(out[0].frame).payload == f.parse_ethernet(frame).payload
    assert out[1].frame == frame
    counters = lab.dp.counters()
    assert counters["unis"]["BBSM000a010b/2"]["rx_frames"] == 1
    assert counters["nni"]["tx_frames"] == 1 and counters["nni"]["tx_bytes"] == len(frame) + 8


def test_downstream_double_tagged_pops_stag_then_ctag(lab, sub):
    """A frame from the NNI with S-tag 900 and C-tag 1006 reaches UNI 2 untagged: the downstream flow pops the
    S-tag, the EVTOCD's inverse the C-tag."""
    onu, _ = sub
    frame = ip_frame(RG_MAC, SERVER_MAC, tags=[(900, 0), (1006, 0)])
    out = lab.dp.from_nni(frame)
    assert out == [ToUni("BBSM000a010b", UNI, ip_frame(RG_MAC, SERVER_MAC))]
    assert lab.dp.counters()["unis"]["BBSM000a010b/2"]["tx_frames"] == 1


def test_downstream_for_another_subscriber_tag_is_dropped(lab, sub):
    """A frame whose C-tag no downstream flow names is dropped at the NNI and counted as no-flow."""
    out = lab.dp.from_nni(ip_frame(RG_MAC, SERVER_MAC, tags=[(900, 0), (1007, 0)]))
    assert dropped(out) == [("nni", "no-flow")]
    assert lab.dp.counters()["nni"]["dropped"] == {"no-flow": 1}


def test_eapol_and_dhcp_trap_flows_become_packet_indications(lab, sub):
    """EAPOL and DHCP from the RG match the trap flows: the adapter gets them as PktInd from the UNI (PON 1, ONU 11,
    UNI 2, the GEM port the ONU's mapper chose, the flow's port_no), carrying the C-tag the ONU pushed, as today's
    simulated DHCP client sends them; nothing goes out of the NNI."""
    onu, service = sub
    start = eapol.eapol_start_frame(RG_MAC)
    discover = dhcp_frames.discover_frame(RG_MAC, 0, 0, GEM, PON, INDEX)
    discover = discover[:12] + discover[16:]             # the real client's frame is untagged
    for frame, kind in ((start, "eapol"), (discover, "dhcp")):
        out = lab.dp.from_uni(onu.serial, UNI, frame)
        assert [type(o) for o in out] == [PacketIn]
        ind = out[0].indication
        assert (ind.intf_type, ind.intf_id, ind.onu_id, ind.uni_id, ind.gemport_id, ind.port_no) == (
            "pon", 1, 11, UNI, GEM, (1 << 14) | (11 << 4) | UNI)
        assert f.decode(ind.pkt).kind == kind and tags_of(ind.pkt) == [(1006, 0)]
        assert lab.packet_indications()[-1] == ind      # emitted on the OLT as the trap path does
    assert lab.dp.counters()["nni"]["tx_frames"] == 0


def test_nni_trap_flow_becomes_an_nni_packet_indication(lab, sub):
    """A DHCP reply on the NNI matching an NNI trap flow (no ONU) goes to the adapter as PktInd(nni)."""
    msg = dict(eth_type=0x0800, ip_proto=17, src_port=67, dst_port=68, o_pbits=ANY_PBITS)
    from voltha_protos import openolt_pb2
    from oltsim.openoltpb import flow_from_pb
    lab.olt.flow_add(flow_from_pb(openolt_pb2.Flow(
        access_intf_id=-1, onu_id=-1, uni_id=-1, flow_id=9, flow_type="downstream", network_intf_id=0,
        gemport_id=-1, alloc_id=-1, priority=10000, classifier=openolt_pb2.Classifier(**msg),
        action=openolt_pb2.Action(cmd=openolt_pb2.ActionCmd(trap_to_host=True)))))
    offer = ip_frame(RG_MAC, SERVER_MAC, tags=[(900, 0), (1006, 0)], sport=67, dport=68)
    out = lab.dp.from_nni(offer)
    assert [type(o) for o in out] == [PacketIn]
    assert (out[0].indication.intf_type, out[0].indication.pkt) == ("nni", offer)


def test_changed_evtocd_rule_drops_and_counts(lab, sub):
    """The test rewrites the UNI's EVTOCD rule over OMCI (untagged -> 1007): the frame now carries a C-tag the
    bridge port's VLAN filter does not list, so the ONU drops it; nothing is forwarded and the drop is counted."""
    onu, _ = sub
    evtocd_id = lab.ids(UNI)["evtocd"]
    assert lab.set(onu, EVTOCD, evtocd_id, {6: push_rule(1007)}) == codec.SUCCESS
    out = lab.dp.from_uni(onu.serial, UNI, ip_frame(SERVER_MAC, RG_MAC))
    assert dropped(out) == [("uni BBSM000a010b/2", "vlan-filter")]
    counters = lab.dp.counters()
    assert counters["unis"]["BBSM000a010b/2"]["dropped"] == {"vlan-filter": 1}
    assert counters["nni"]["tx_frames"] == 0


def test_changed_vlan_filter_and_rule_drop_at_the_olt(lab, sub):
    """With the filter rewritten too (1007), the ONU forwards C-tag 1007, which no flow of the OLT classifies:
    dropped as no-flow. Downstream, the subscriber's own tags are now refused by the ONU's filter."""
    onu, _ = sub
    ids = lab.ids(UNI)
    assert lab.set(onu, EVTOCD, ids["evtocd"], {6: push_rule(1007)}) == codec.SUCCESS
    assert lab.set(onu, VTFD, ids["ani_port"], {1: (1007).to_bytes(2, "big") + bytes(22), 3: 1}) == codec.SUCCESS
    assert dropped(lab.dp.from_uni(onu.serial, UNI, ip_frame(SERVER_MAC, RG_MAC))) == [
        ("uni BBSM000a010b/2", "no-flow")]
    assert dropped(lab.dp.from_nni(ip_frame(RG_MAC, SERVER_MAC, tags=[(900, 0), (1006, 0)]))) == [
        ("uni BBSM000a010b/2", "vlan-filter")]


def test_changed_flow_drops_and_counts(lab, sub):
    """The HSIA upstream flow replaced by one classifying C-tag 1007: the subscriber's frames match no flow and
    are dropped and counted; the replaced flow's counter stays where it was."""
    onu, _ = sub
    frame = ip_frame(SERVER_MAC, RG_MAC)
    assert isinstance(lab.dp.from_uni(onu.serial, UNI, frame)[0], ToNni)
    hsia = next(cf for cf in lab.olt.flows.all() if cf.flow_type == "upstream" and cf.o_vid == 1006
                and not cf.eth_type)
    lab.flow(onu, UNI, "upstream", dict(o_vid=1007, pkt_tag_type="single_tag", o_pbits=ANY_PBITS),
             dict(add_outer_tag=True, o_vid=900), gem=GEM, priority=1000, flow_id=hsia.flow_id)
    assert dropped(lab.dp.from_uni(onu.serial, UNI, frame)) == [("uni BBSM000a010b/2", "no-flow")]
    counters = lab.dp.counters()
    assert counters["unis"]["BBSM000a010b/2"]["dropped"] == {"no-flow": 1}
    assert counters["flows"][f"1/{hsia.flow_id}/upstream"]["frames"] == 0     # the new flow forwarded nothing


def test_untagged_nni_broadcast_reaches_every_bound_uni(lab, sub):
    """A broadcast on the untagged NNI (an ARP request from the server) reaches every bound UNI, each through its
    own tags: UNI 2 of ONU 11 and UNI 0 of ONU 3, even before either sent anything."""
    lab.subscriber(PON, 3, 0, 1030)
    arp = f.build_ethernet(f.BROADCAST_MAC, SERVER_MAC, 0x0806, bytes(28))
    out = lab.dp.from_nni_untagged(arp)
    assert sorted((o.serial, o.uni_id) for o in out) == [("BBSM000a0103", 0), ("BBSM000a010b", UNI)]
    assert all(isinstance(o, ToUni) and o.frame == arp for o in out)


def test_untagged_nni_unicast_follows_the_learned_mac(lab, sub):
    """A unicast frame on the untagged NNI goes to the UNI whose RG sent from that MAC, with that UNI's tags; a MAC
    never seen is dropped as no-subscriber."""
    onu, _ = sub
    other, _ = lab.subscriber(PON, 3, 0, 1030)
    other_mac = bytes.fromhex("020000aa0002")
    lab.dp.from_uni(onu.serial, UNI, ip_frame(SERVER_MAC, RG_MAC))
    lab.dp.from_uni(other.serial, 0, ip_frame(SERVER_MAC, other_mac))
    assert lab.dp.macs()["02:00:00:aa:00:01"]["serial"] == "BBSM000a010b"
    reply = ip_frame(other_mac, SERVER_MAC)
    assert lab.dp.from_nni_untagged(reply) == [ToUni("BBSM000a0103", 0, reply)]
    unknown = ip_frame(bytes.fromhex("020000cc0009"), SERVER_MAC)
    assert dropped(lab.dp.from_nni_untagged(unknown)) == [("nni-untagged", "no-subscriber")]


def test_service_states_follow_eap_success(lab, sub):
    """wpa_supplicant's frames move the service through the simulated path's EAPOL states: Start, then the
    Response/Identity and the MD5 response up, EAP-Success down (OnuPacketOut from the adapter) ends in
    eap_response_success_received, each change published as EapolState."""
    onu, service = sub
    lab.dp.from_uni(onu.serial, UNI, eapol.eapol_start_frame(RG_MAC))
    assert service.eapol_state == "eap_start_sent"
    lab.dp.from_uni(onu.serial, UNI, eapol.identity_response_frame(RG_MAC, 1))
    lab.dp.from_uni(onu.serial, UNI, eapol.md5_response_frame(RG_MAC, 2, bytes(16)))
    assert service.eapol_state == "eap_response_challenge_sent"
    lab.path.frames.packet_out(onu, onu.unis[UNI].port_no, GEM, eapol.success_frame(RG_MAC, 2))
    assert service.eapol_state == "eap_response_success_received"
    assert lab.delivered == [ToUni(onu.serial, UNI, eapol.success_frame(RG_MAC, 2))]
    changes = [(e.src, e.dest) for e in lab.events if isinstance(e, events.StateChanged)
               and e.attribute == "EapolState" and e.serial == onu.serial]
    assert changes == [("created", "auth_started"), ("auth_started", "eap_start_sent"),
                       ("eap_start_sent", "eap_response_identity_sent"),
                       ("eap_response_identity_sent", "eap_response_challenge_sent"),
                       ("eap_response_challenge_sent", "eap_response_success_received")]


def test_service_states_follow_dhcp_ack(lab, sub):
    """dhclient's Discover and Request move the service to dhcp_request_sent; the server's ACK arriving through the
    NNI ends in dhcp_ack_received."""
    onu, service = sub
    discover = dhcp_frames.discover_frame(RG_MAC, 0, 0, GEM, PON, INDEX)
    lab.dp.from_uni(onu.serial, UNI, discover[:12] + discover[16:])
    request = dhcp_frames.request_frame(RG_MAC, 0, 0, GEM, PON, INDEX, bytes([10, 0, 0, 2]))
    lab.dp.from_uni(onu.serial, UNI, request[:12] + request[16:])
    assert service.dhcp_state == "dhcp_request_sent"
    ack = f.build_dhcp(f.BOOTREPLY, dhcp_frames.xid_for_mac(RG_MAC), RG_MAC, [(f.OPT_MESSAGE_TYPE, b"\x05")],
                       yiaddr=bytes([10, 0, 0, 2]))
    frame = f.build_ethernet(RG_MAC, SERVER_MAC, f.ETH_IPV4,
                             f.build_ipv4_udp(bytes([10, 0, 0, 1]), bytes([10, 0, 0, 2]), 67, 68, ack),
                             [f.VlanTag(900), f.VlanTag(1006)])
    assert isinstance(lab.dp.from_nni(frame)[0], ToUni)
    assert service.dhcp_state == "dhcp_ack_received"


def test_a_dropped_frame_moves_no_state(lab, sub):
    """An EAPOL-Start the ONU drops (its rule changed) leaves the service's EAPOL state alone."""
    onu, service = sub
    lab.set(onu, EVTOCD, lab.ids(UNI)["evtocd"], {6: push_rule(1007)})
    lab.dp.from_uni(onu.serial, UNI, eapol.eapol_start_frame(RG_MAC))
    assert service.eapol_state == "created"


def test_omci_record_is_cleared_by_mib_reset(lab, sub):
    """After a MIB Reset the ONU has no VLAN configuration: its frames pass the ONU untagged, and no flow takes
    them."""
    onu, _ = sub
    assert lab.vlan.record(onu.serial) is not None
    lab.omci(onu, codec.MIB_RESET, codec.ONU_DATA, 0)
    assert lab.vlan.record(onu.serial) is None
    assert dropped(lab.dp.from_uni(onu.serial, UNI, ip_frame(SERVER_MAC, RG_MAC))) == [
        ("uni BBSM000a010b/2", "no-flow")]


def test_omci_record_is_cleared_by_onu_reboot(lab, sub):
    """An ONU that reboots forgets its VLAN configuration; while it is down its UNI's frames are dropped as
    onu-not-active."""
    onu, _ = sub
    reboot_onu(onu)
    assert lab.vlan.record(onu.serial) is None
    assert dropped(lab.dp.from_uni(onu.serial, UNI, ip_frame(SERVER_MAC, RG_MAC))) == [
        ("uni BBSM000a010b/2", "onu-not-active")]


def test_a_refused_omci_request_is_not_recorded(lab):
    """A Create the responder refuses (a GEM port another ONU holds) leaves no trace in the record."""
    first, second = lab.activate(PON, 1), lab.activate(PON, 2)
    ctp = (1200).to_bytes(2, "big") + (0x8001).to_bytes(2, "big") + b"\x03" + bytes(9)
    assert lab.create(first, codec.GEM_PORT_NETWORK_CTP, 1200, ctp) == codec.SUCCESS
    assert lab.create(second, codec.GEM_PORT_NETWORK_CTP, 1200, ctp) == codec.PROCESSING_ERROR
    assert lab.vlan.record(second.serial) is None
    assert lab.vlan.record(first.serial).value(codec.GEM_PORT_NETWORK_CTP, 1200, 1) == 1200


def test_unbound_unis_keep_the_simulated_protocols(lab, sub):
    """On the bound UNI, the EAPOL trap flow starts no simulated supplicant; on UNI 1 of the same ONU (unbound) it
    does, exactly as before (EAPOL-Start sent as a PktInd from UNI 1)."""
    onu, service = sub
    assert service.eapol_state == "created"
    other = onu.unis[1].services[0]
    lab.flow(onu, 1, "upstream", dict(eth_type=0x888E, o_vid=4091), dict(trap_to_host=True), gem=1101,
             priority=10000)
    assert other.eapol_state == "eap_start_sent"
    assert lab.packet_indications()[-1].uni_id == 1


def test_unbind_gives_the_uni_back_to_the_simulated_protocols(lab, sub):
    """After unbind_uni, the data plane drops the UNI's frames as not-bound and a new EAPOL flow starts the
    simulated supplicant again."""
    onu, service = sub
    lab.dp.unbind_uni(onu.serial, UNI)
    assert dropped(lab.dp.from_uni(onu.serial, UNI, ip_frame(SERVER_MAC, RG_MAC))) == [
        ("uni BBSM000a010b/2", "not-bound")]
    lab.flow(onu, UNI, "upstream", dict(eth_type=0x888E, o_vid=4091), dict(trap_to_host=True), gem=GEM,
             priority=10000, flow_id=500)
    assert service.eapol_state == "eap_start_sent"


def test_uplink_packet_out_goes_out_of_the_nni_interfaces(lab, sub):
    """UplinkPacketOut with a data plane attached leaves through the NNI interfaces (tagged as sent, and without
    its tags on the untagged NNI) instead of reaching the built-in DHCP server."""
    offer = f.build_dhcp(f.BOOTREPLY, 7, RG_MAC, [(f.OPT_MESSAGE_TYPE, b"\x02")], yiaddr=bytes([10, 0, 0, 2]))
    udp = f.build_ipv4_udp(bytes([10, 0, 0, 1]), bytes([10, 0, 0, 2]), 67, 68, offer)
    frame = f.build_ethernet(RG_MAC, SERVER_MAC, f.ETH_IPV4, udp, [f.VlanTag(900), f.VlanTag(1006)])
    lab.path.frames.uplink_packet_out(lab.olt, 0, frame)
    assert lab.delivered == [ToNni(frame), ToNniUntagged(frame[:12] + frame[20:])]
    assert not lab.packet_indications()


def test_bad_input_is_a_drop_not_an_exception(lab, sub):
    """Short frames, tags cut short and non-bytes are dropped as malformed; unknown UNIs as not-bound; binding an
    unknown ONU or UNI raises NotFound with a clear message."""
    onu, _ = sub
    for frame in (b"", b"\x00" * 13, bytes(12) + b"\x81\x00\x00", "text"):
        assert dropped(lab.dp.from_uni(onu.serial, UNI, frame)) == [("uni BBSM000a010b/2", "malformed")]
        assert dropped(lab.dp.from_nni(frame))[0][1] == "malformed"
        assert dropped(lab.dp.from_nni_untagged(frame))[0][1] == "malformed"
    assert dropped(lab.dp.from_uni(onu.serial, 3, ip_frame(SERVER_MAC, RG_MAC))) == [
        ("uni BBSM000a010b/3", "not-bound")]
    with pytest.raises(NotFound, match="ONU BBSM99999999 not found"):
        lab.dp.bind_uni("BBSM99999999", 0)
    with pytest.raises(NotFound, match="UNI 7 not found on ONU BBSM000a010b"):
        lab.dp.bind_uni(onu.serial, 7)


def test_a_locked_uni_drops(lab, sub):
    """A UNI the adapter locked (PPTP administrative state) drops its frames as uni-down."""
    onu, _ = sub
    onu.unis[UNI].disable()
    assert dropped(lab.dp.from_uni(onu.serial, UNI, ip_frame(SERVER_MAC, RG_MAC))) == [
        ("uni BBSM000a010b/2", "uni-down")]


def test_capture_sees_frames_in_and_out(lab, sub):
    """With a capture callable, every frame entering and leaving is given with where it was and its direction."""
    onu, _ = sub
    seen = []
    lab.dp.capture = lambda where, direction, frame: seen.append((where, direction))
    lab.dp.from_uni(onu.serial, UNI, ip_frame(SERVER_MAC, RG_MAC))
    assert seen == [("uni BBSM000a010b/2", "in"), ("nni", "out"), ("nni-untagged", "out")]


def test_binding_abandons_the_simulated_attempt_under_way(lab):
    """A UNI bound while its simulated DHCP client waits for an answer: the attempt fails at once, its timer is
    cancelled, and the control API's restart is refused with the reason."""
    onu = lab.activate(PON, INDEX)
    service = onu.unis[UNI].services[0]
    lab.att_flows(onu, UNI, GEM, service.c_tag, service.s_tag)
    assert service.dhcp_state == "dhcp_discovery_sent" and lab.engine.pending_timers() == 1
    lab.dp.bind_uni(onu.serial, UNI)
    assert service.dhcp_state == "dhcp_failed" and lab.engine.pending_timers() == 0
    from oltsim.model.errors import FailedPrecondition
    with pytest.raises(FailedPrecondition, match="UNI 2 of ONU BBSM000a010b has an interface"):
        lab.engine.restart_dhcp(service)


def test_a_muted_onu_records_nothing_and_a_delayed_one_records_when_it_answers(lab):
    """Behind the fault knobs: a request a muted ONU ignores is never recorded; one the ONU answers 2 s later is
    recorded then, not before."""
    onu = lab.activate(PON, INDEX)
    ctp = (1100).to_bytes(2, "big") + (0x8001).to_bytes(2, "big") + b"\x03" + bytes(9)
    lab.olt.faults.set_omci_mute(onu)
    assert lab.omci(onu, codec.CREATE, codec.GEM_PORT_NETWORK_CTP, 1100, ctp) == b""      # no answer
    assert lab.vlan.record(onu.serial) is None
    lab.olt.faults.set_omci_mute(onu, False)
    lab.olt.faults.set_omci_delay(onu, 2.0)
    assert lab.omci(onu, codec.CREATE, codec.GEM_PORT_NETWORK_CTP, 1100, ctp) == b""      # not yet
    assert lab.vlan.record(onu.serial) is None
    lab.clock.advance(2.0)
    assert lab.vlan.record(onu.serial).value(codec.GEM_PORT_NETWORK_CTP, 1100, 1) == 1100


def test_an_onu_powered_off_loses_its_flows_for_the_data_plane_too(lab, sub):
    """Powering an ONU off forgets its flows (no FlowChanged each): a frame for its subscriber that was forwarded
    a moment before now matches no flow at the NNI."""
    onu, _ = sub
    frame = ip_frame(RG_MAC, SERVER_MAC, tags=[(900, 0), (1006, 0)])
    assert isinstance(lab.dp.from_nni(frame)[0], ToUni)
    onu.power_off()
    assert dropped(lab.dp.from_nni(frame)) == [("nni", "no-flow")]


def test_priority_tagged_frames_keep_their_priority_up_to_the_nni(lab, sub):
    """With the adapter's prio-tagged rule beside the untagged one (VOLTHA writes both when it stacks), a frame the
    RG prio-tags with priority 5 leaves the ONU with C-tag 1006 priority 5, and the OLT's push copies it into the
    S-tag (the flow does not remark); downstream it comes back untagged (the untagged rule's inverse comes first)."""
    onu, _ = sub
    from dataplane_lab import rule
    assert lab.set(onu, EVTOCD, lab.ids(UNI)["evtocd"], {6: rule(f_in=(8, 0, 0), remove=1, t_in=(8, 1006, 4))}) == 0
    out = lab.dp.from_uni(onu.serial, UNI, ip_frame(SERVER_MAC, RG_MAC, tags=[(0, 5)]))
    assert tags_of(out[0].frame) == [(900, 5), (1006, 5)]
    back = lab.dp.from_nni(ip_frame(RG_MAC, SERVER_MAC, tags=[(900, 5), (1006, 5)]))
    assert back == [ToUni(onu.serial, UNI, ip_frame(RG_MAC, SERVER_MAC))]


def test_a_server_reply_on_the_untagged_nni_caught_by_an_nni_trap_reaches_the_adapter_tagged(lab, sub):
    """dnsmasq's reply on the untagged NNI, for a learned subscriber, matching an NNI DHCP trap flow: the adapter
    gets it as PktInd(nni) with the subscriber's S-tag and C-tag, as from a real NNI (dhcpl2relay's view)."""
    onu, _ = sub
    from voltha_protos import openolt_pb2
    from oltsim.openoltpb import flow_from_pb
    lab.olt.flow_add(flow_from_pb(openolt_pb2.Flow(
        access_intf_id=-1, onu_id=-1, uni_id=-1, flow_id=9, flow_type="downstream", network_intf_id=0,
        gemport_id=-1, alloc_id=-1, priority=10000,
        classifier=openolt_pb2.Classifier(eth_type=0x0800, ip_proto=17, src_port=67, dst_port=68, o_pbits=0xFF),
        action=openolt_pb2.Action(cmd=openolt_pb2.ActionCmd(trap_to_host=True)))))
    lab.dp.from_uni(onu.serial, UNI, ip_frame(SERVER_MAC, RG_MAC))                  # learns RG_MAC
    reply = ip_frame(RG_MAC, SERVER_MAC, sport=67, dport=68)
    out = lab.dp.from_nni_untagged(reply)
    assert [type(o) for o in out] == [PacketIn]
    assert out[0].indication.intf_type == "nni" and tags_of(out[0].indication.pkt) == [(900, 0), (1006, 0)]


def test_random_frames_and_random_rules_never_raise(lab, sub):
    """2,000 random frames (tag-like prefixes, EAPOL and DHCP EtherTypes and ports, any length) on every entry point,
    after random EVTOCD entries and VLAN filters were written over OMCI: every call returns outputs, none raises."""
    import random as rnd
    onu, _ = sub
    r = rnd.Random(37)
    ids = lab.ids(UNI)
    for _ in range(8):
        lab.set(onu, EVTOCD, ids["evtocd"], {6: bytes(r.randrange(256) for _ in range(16))})
    lab.set(onu, VTFD, ids["ani_port"], {1: bytes(r.randrange(256) for _ in range(24)), 2: r.choice((0, 0x10, 0x12,
                                                                                                     0x7F)), 3: 13})
    pieces = [b"\x81\x00", b"\x88\xa8", b"\x91\x00", b"\x88\x8e", b"\x08\x00", b"\x00\x43\x00\x44", b"\x45", b"\x11"]
    for _ in range(2000):
        frame = bytes(r.randrange(256) for _ in range(r.randrange(12))) + b"".join(
            r.choice(pieces) + bytes(r.randrange(256) for _ in range(r.randrange(4))) for _ in range(r.randrange(8)))
        for outputs in (lab.dp.from_uni(onu.serial, UNI, frame), lab.dp.from_nni(frame),
                        lab.dp.from_nni_untagged(frame), lab.dp.onu_packet_out(onu.serial, UNI, GEM, frame),
                        lab.dp.uplink_packet_out(0, frame)):
            assert isinstance(outputs, list)


def untagged(frame: bytes) -> bytes:
    """`frame` without its VLAN tags (what a real RG sends)."""
    eth = f.parse_ethernet(frame)
    return f.build_ethernet(eth.dst, eth.src, eth.ethertype, eth.payload, pad=False)


def test_multicast_group_traffic_reaches_only_the_unis_that_joined(lab, sub):
    """A multicast flow (VLAN 55, group 239.1.1.1): group traffic from either NNI reaches the bound UNI whose RG sent
    an IGMP report (trapped to the adapter and snooped), untagged, and not the other bound UNI; after the RG leaves,
    the group's frames are dropped as no-member."""
    from voltha_protos import openolt_pb2
    from oltsim.openoltpb import flow_from_pb
    from oltsim.packets import igmp
    onu, _ = sub
    lab.subscriber(PON, 3, 0, 1030)
    group = bytes([239, 1, 1, 1])
    lab.flow(onu, UNI, "upstream", dict(eth_type=0x0800, ip_proto=2, o_vid=1006, pkt_tag_type="single_tag",
                                        o_pbits=ANY_PBITS), dict(trap_to_host=True), gem=GEM, priority=10000,
             alloc=GEM)
    lab.olt.flow_add(flow_from_pb(openolt_pb2.Flow(
        access_intf_id=-1, onu_id=-1, uni_id=-1, flow_id=77, flow_type="multicast", network_intf_id=0,
        gemport_id=-1, alloc_id=-1, priority=1000, group_id=1,
        classifier=openolt_pb2.Classifier(o_vid=55, dst_ip=int.from_bytes(group, "big"), pkt_tag_type="single_tag",
                                          o_pbits=ANY_PBITS))))
    join = lab.dp.from_uni(onu.serial, UNI, untagged(igmp.join_v2_frame(RG_MAC, group, 0, 0)))
    assert [type(o) for o in join] == [PacketIn]
    stream = f.build_ethernet(bytes.fromhex("01005e010101"), SERVER_MAC, f.ETH_IPV4,
                              f.build_ipv4_udp(bytes([10, 9, 9, 9]), group, 1234, 5004, b"video"))
    tagged = f.build_ethernet(bytes.fromhex("01005e010101"), SERVER_MAC, f.ETH_IPV4,
                              f.build_ipv4_udp(bytes([10, 9, 9, 9]), group, 1234, 5004, b"video"), [f.VlanTag(55)])
    assert lab.dp.from_nni(tagged) == [ToUni(onu.serial, UNI, stream)]
    assert lab.dp.from_nni_untagged(stream) == [ToUni(onu.serial, UNI, stream)]
    lab.dp.from_uni(onu.serial, UNI, untagged(igmp.leave_v2_frame(RG_MAC, group, 0, 0)))
    assert dropped(lab.dp.from_nni(tagged)) == [("nni", "no-member")]
    assert lab.dp.counters()["flows"]["-1/77/multicast"]["frames"] == 3


def test_binding_twice_keeps_the_counters(lab, sub):
    """bind_uni on a UNI already bound changes nothing: its counters and learned MACs stay."""
    onu, _ = sub
    lab.dp.from_uni(onu.serial, UNI, ip_frame(SERVER_MAC, RG_MAC))
    lab.dp.bind_uni(onu.serial.upper(), UNI)
    assert lab.dp.counters()["unis"]["BBSM000a010b/2"]["rx_frames"] == 1
    assert lab.dp.bound() == [("BBSM000a010b", UNI)] and "02:00:00:aa:00:01" in lab.dp.macs()


def test_gem_port_and_alloc_statistics_report_the_flows_counters(lab, sub):
    """With the data plane, the OpenOLT GetGemPortStatistics of the subscriber's GEM port reports its flows' frames
    and bytes (upstream as received on it, with the C-tag the ONU pushed; downstream as sent on it) and
    GetAllocIdStatistics its upstream bytes; for a GEM port or alloc id no flow is on, and without the data plane,
    both answer byte for byte as before."""
    from voltha_protos import openolt_pb2
    from oltsim.southbound.openolt import IndicationHub, OpenoltServicer

    onu, _ = sub
    up, down = ip_frame(SERVER_MAC, RG_MAC), ip_frame(RG_MAC, SERVER_MAC, tags=[(900, 0), (1006, 0)])
    for _ in range(2):
        assert [type(o) for o in lab.dp.from_uni(onu.serial, UNI, up)] == [ToNni, ToNniUntagged]
    assert [type(o) for o in lab.dp.from_nni(down)] == [ToUni]
    hub = IndicationHub(lab.olt)
    on, off = OpenoltServicer(lab.olt, hub, traffic=lab.dp), OpenoltServicer(lab.olt, hub)
    gem = openolt_pb2.OnuPacket(intf_id=PON, onu_id=onu.onu_id, gemport_id=GEM)
    stats = on.GetGemPortStatistics(gem, None)
    assert (stats.rx_packets, stats.rx_bytes, stats.tx_packets, stats.tx_bytes) == (2, 2 * (len(up) + 4), 1,
                                                                                     len(down))
    assert (stats.intf_id, stats.gemport_id, stats.timestamp) == (PON, GEM, int(lab.clock.seconds()))
    alloc = on.GetAllocIdStatistics(openolt_pb2.OnuPacket(intf_id=PON, onu_id=onu.onu_id, alloc_id=GEM), None)
    assert (alloc.intfId, alloc.allocId, alloc.rxBytes) == (PON, GEM, 2 * (len(up) + 4))
    before_gem = openolt_pb2.GemPortStatistics(intf_id=PON, gemport_id=GEM).SerializeToString()
    before_alloc = openolt_pb2.OnuAllocIdStatistics(intfId=PON, allocId=GEM).SerializeToString()  # the id asked
    assert off.GetGemPortStatistics(gem, None).SerializeToString() == before_gem
    assert off.GetAllocIdStatistics(openolt_pb2.OnuPacket(intf_id=PON, onu_id=onu.onu_id, alloc_id=GEM),
                                    None).SerializeToString() == before_alloc
    other = openolt_pb2.OnuPacket(intf_id=PON, onu_id=onu.onu_id, gemport_id=GEM + 1, alloc_id=GEM + 1)
    assert on.GetGemPortStatistics(other, None).SerializeToString() == off.GetGemPortStatistics(other, None) \
        .SerializeToString()
    assert on.GetAllocIdStatistics(other, None).SerializeToString() == off.GetAllocIdStatistics(other, None) \
        .SerializeToString()


def test_an_onu_power_cycle_forgets_the_groups_its_unis_joined(lab, sub):
    """The multicast groups a bound UNI's client joined are forgotten when its ONU stops (powered off), as a real
    OLT's membership goes with the port: after the power cycle, group traffic reaches it only once its client
    reports again."""
    from voltha_protos import openolt_pb2
    from oltsim.openoltpb import flow_from_pb
    from oltsim.packets import igmp
    onu, _ = sub
    group = bytes([239, 1, 1, 1])
    lab.flow(onu, UNI, "upstream", dict(eth_type=0x0800, ip_proto=2, o_vid=1006, pkt_tag_type="single_tag",
                                        o_pbits=ANY_PBITS), dict(trap_to_host=True), gem=GEM, priority=10000,
             alloc=GEM)
    multicast = openolt_pb2.Flow(
        access_intf_id=-1, onu_id=-1, uni_id=-1, flow_id=77, flow_type="multicast", network_intf_id=0,
        gemport_id=-1, alloc_id=-1, priority=1000, group_id=1,
        classifier=openolt_pb2.Classifier(o_vid=55, dst_ip=int.from_bytes(group, "big"), pkt_tag_type="single_tag",
                                          o_pbits=ANY_PBITS))
    lab.olt.flow_add(flow_from_pb(multicast))
    lab.dp.from_uni(onu.serial, UNI, untagged(igmp.join_v2_frame(RG_MAC, group, 0, 0)))
    tagged = f.build_ethernet(bytes.fromhex("01005e010101"), SERVER_MAC, f.ETH_IPV4,
                              f.build_ipv4_udp(bytes([10, 9, 9, 9]), group, 1234, 5004, b"video"), [f.VlanTag(55)])
    assert [type(o) for o in lab.dp.from_nni(tagged)] == [ToUni]
    onu.power_off()
    onu.power_on()
    lab.clock.advance(60)
    assert onu.state == "enabled"
    for uni in onu.eth_unis:
        uni.enable()
    lab.olt.flow_add(flow_from_pb(multicast))
    assert dropped(lab.dp.from_nni(tagged)) == [("nni", "no-member")]


def test_a_dhcp_offer_on_the_untagged_nni_reaches_a_client_that_only_sent_trapped_frames(lab, sub):
    """dnsmasq unicasts its Offer to the client's MAC; the client has sent nothing but its (trapped) Discover, so no
    forwarded frame taught the data plane its MAC: the trapped frame teaches it (with the tags its forwarded frames
    would have on the NNI), and the Offer reaches the NNI DHCP trap tagged, as from a real NNI, not dropped as
    no-subscriber."""
    onu, _ = sub
    from voltha_protos import openolt_pb2
    from oltsim.openoltpb import flow_from_pb
    lab.olt.flow_add(flow_from_pb(openolt_pb2.Flow(
        access_intf_id=-1, onu_id=-1, uni_id=-1, flow_id=9, flow_type="downstream", network_intf_id=0,
        gemport_id=-1, alloc_id=-1, priority=10000,
        classifier=openolt_pb2.Classifier(eth_type=0x0800, ip_proto=17, src_port=67, dst_port=68, o_pbits=0xFF),
        action=openolt_pb2.Action(cmd=openolt_pb2.ActionCmd(trap_to_host=True)))))
    discover = dhcp_frames.discover_frame(RG_MAC, 0, 0, GEM, PON, INDEX)
    assert [type(o) for o in lab.dp.from_uni(onu.serial, UNI, discover[:12] + discover[16:])] == [PacketIn]
    offer = ip_frame(RG_MAC, SERVER_MAC, sport=67, dport=68)
    out = lab.dp.from_nni_untagged(offer)
    assert [type(o) for o in out] == [PacketIn]
    assert tags_of(out[0].indication.pkt) == [(900, 0), (1006, 0)]


def test_a_mac_flood_on_one_uni_does_not_cut_another_unis_subscriber_off_the_untagged_nni(lab, sub):
    """One UNI's client sending from more source MACs than the table holds (macof) forgets only its own oldest
    addresses: another UNI's subscriber, learned before and sending from the same MAC after, still gets its unicast
    frames from the untagged NNI (it was evicted and, its MAC being the one it last sent from, never learned again:
    no-subscriber for good)."""
    import oltsim.dataplane.pipeline as pipeline
    onu, _ = sub
    other, _ = lab.subscriber(PON, 3, 0, 1030)
    lab.dp.from_uni(onu.serial, UNI, ip_frame(SERVER_MAC, RG_MAC))
    for n in range(pipeline.MAC_LIMIT + 10):
        lab.dp.from_uni(other.serial, 0, ip_frame(SERVER_MAC, bytes([2]) + n.to_bytes(5, "big")))
    lab.dp.from_uni(onu.serial, UNI, ip_frame(SERVER_MAC, RG_MAC))
    reply = ip_frame(RG_MAC, SERVER_MAC)
    assert lab.dp.from_nni_untagged(reply) == [ToUni(onu.serial, UNI, reply)]
    assert sum(1 for e in lab.dp.macs().values() if e["serial"] == other.serial) == pipeline.MACS_PER_UNI


def test_onu_packet_out_to_a_bound_uni_carries_any_frame_to_its_client(lab, sub):
    """OnuPacketOut to a bound UNI goes to its real client whatever it carries (a PPPoE agent's PADO, an ARP reply),
    as a real ONU forwards it: only frames for UNIs of simulated clients must be EAPOL, DHCP, IGMP or ICMPv6 (they
    were refused as InvalidArgument)."""
    onu, _ = sub
    pado = f.build_ethernet(RG_MAC, SERVER_MAC, 0x8863, bytes([0x11, 0x07, 0, 0, 0, 0]))
    arp = f.build_ethernet(RG_MAC, SERVER_MAC, 0x0806, bytes(28))
    for frame in (pado, arp):
        lab.path.frames.packet_out(onu, onu.unis[UNI].port_no, GEM, frame)
    assert lab.delivered == [ToUni(onu.serial, UNI, pado), ToUni(onu.serial, UNI, arp)]
