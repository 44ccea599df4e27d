"""One subscriber cannot reach, cut off or impersonate another: two bound UNIs on different ONUs of the lab (OLT id
10; RG A on UNI 2 of ONU 11, RG B on UNI 0 of ONU 3, both on PON 1, ATT flows), tagged and untagged NNI, as a
hostile RG A would try it against RG B."""
import pytest

from dataplane_lab import SERVER_MAC, Lab, ip_frame
from oltsim.dataplane.pipeline import Dropped, ToUni
from oltsim.packets import eapol, frames as f

PON = 1
A_MAC = bytes.fromhex("020000aa0001")
B_MAC = bytes.fromhex("020000aa0002")


@pytest.fixture
def lab():
    return Lab()


@pytest.fixture
def rgs(lab):
    """(A's ONU, A's service), (B's ONU, B's service), both bound and configured."""
    return lab.subscriber(PON, 11, 2, 1100), lab.subscriber(PON, 3, 0, 1030)


def dropped(outputs):
    return [(o.where, o.reason) for o in outputs if isinstance(o, Dropped)]


def delivered(outputs):
    return [(o.serial, o.uni_id) for o in outputs if isinstance(o, ToUni)]


def dhcp_ack(client: bytes, tags=()) -> bytes:
    """The server's DHCP ACK for `client`, with `tags` ((vid, pcp), outermost first) as on the NNI."""
    ack = f.build_dhcp(f.BOOTREPLY, 1, client, [(f.OPT_MESSAGE_TYPE, b"\x05")], yiaddr=bytes([10, 0, 0, 3]))
    return f.build_ethernet(client, SERVER_MAC, f.ETH_IPV4,
                            f.build_ipv4_udp(bytes([10, 0, 0, 1]), bytes([10, 0, 0, 3]), 67, 68, ack),
                            [f.VlanTag(vid, pcp) for vid, pcp in tags])


def test_a_spoofed_frame_does_not_take_a_leased_mac(lab, rgs):
    """B holds its MAC by the DHCP ACK its VLAN delivered; A sending 20 frames from B's MAC gets them dropped and
    counted as mac-spoof, and the untagged NNI's traffic for B reaches B (never A) during and after."""
    (a, _), (b, b_service) = rgs
    assert delivered(lab.dp.from_nni(dhcp_ack(B_MAC, [(b_service.s_tag, 0), (b_service.c_tag, 0)]))) == [
        (b.serial, 0)]
    lab.dp.from_uni(b.serial, 0, ip_frame(SERVER_MAC, B_MAC))
    to_b = ip_frame(B_MAC, SERVER_MAC)
    for _ in range(20):
        assert dropped(lab.dp.from_uni(a.serial, 2, ip_frame(SERVER_MAC, B_MAC))) == [
            (f"uni {a.serial}/2", "mac-spoof")]
        assert delivered(lab.dp.from_nni_untagged(to_b)) == [(b.serial, 0)]
    lab.dp.from_uni(a.serial, 2, ip_frame(SERVER_MAC, A_MAC))
    assert delivered(lab.dp.from_nni_untagged(to_b)) == [(b.serial, 0)]
    assert lab.dp.counters()["unis"][f"{a.serial}/2"]["dropped"] == {"mac-spoof": 20}
    assert lab.dp.owners() == {"02:00:00:aa:00:02": f"{b.serial}/0"}


def test_eap_success_binds_the_mac_and_moves_the_table_back_at_once(lab, rgs):
    """A's frame from B's MAC moved the untagged NNI's entry to A before B authenticated; the EAP-Success the
    adapter sends B's supplicant binds the MAC to B and the entry returns to B with it, before B sends again."""
    (a, _), (b, _) = rgs
    lab.dp.from_uni(b.serial, 0, ip_frame(SERVER_MAC, B_MAC))
    lab.dp.from_uni(a.serial, 2, ip_frame(SERVER_MAC, B_MAC))
    to_b = ip_frame(B_MAC, SERVER_MAC)
    assert delivered(lab.dp.from_nni_untagged(to_b)) == [(a.serial, 2)]
    lab.path.frames.packet_out(b, b.unis[0].port_no, 1030, eapol.success_frame(B_MAC, 2))
    assert delivered(lab.dp.from_nni_untagged(to_b)) == [(b.serial, 0)]
    assert dropped(lab.dp.from_uni(a.serial, 2, ip_frame(SERVER_MAC, B_MAC))) == [(f"uni {a.serial}/2", "mac-spoof")]


def test_one_spoofed_frame_does_not_cut_an_unleased_subscriber_off(lab, rgs):
    """Without a lease, a spoofed frame may move B's address to A for a moment, but B's next frame from its own
    MAC (the same as its last) takes it back: learning does not depend on the order frames come in."""
    (a, _), (b, _) = rgs
    to_b = ip_frame(B_MAC, SERVER_MAC)
    for _ in range(3):
        lab.dp.from_uni(b.serial, 0, ip_frame(SERVER_MAC, B_MAC))
        assert delivered(lab.dp.from_nni_untagged(to_b)) == [(b.serial, 0)]
        lab.dp.from_uni(a.serial, 2, ip_frame(SERVER_MAC, B_MAC))
    lab.dp.from_uni(b.serial, 0, ip_frame(SERVER_MAC, B_MAC))
    assert delivered(lab.dp.from_nni_untagged(to_b)) == [(b.serial, 0)]


def test_unbinding_lets_the_mac_go(lab, rgs):
    """A UNI unbound lets go of the MACs its subscriber held: another UNI may send from them again."""
    (a, _), (b, b_service) = rgs
    lab.dp.from_nni(dhcp_ack(B_MAC, [(b_service.s_tag, 0), (b_service.c_tag, 0)]))
    lab.dp.unbind_uni(b.serial, 0)
    assert lab.dp.owners() == {}
    assert dropped(lab.dp.from_uni(a.serial, 2, ip_frame(SERVER_MAC, B_MAC))) == []


def test_frames_tagged_with_other_tpids_are_dropped_and_counted(lab, rgs):
    """0x88a8- and 0x9100-tagged frames carrying the VIDs the ONU and the flows would take, from RG A and from the
    trunk with B's S-tag and C-tag (and on the untagged NNI): none reaches a UNI or an NNI, each is counted as
    tpid; the same frames with 0x8100 tags pass."""
    (a, a_service), (b, b_service) = rgs
    for tpid in (0x88A8, 0x9100):
        for tags in ([f.VlanTag(a_service.c_tag, tpid=tpid)], [f.VlanTag(0, tpid=tpid)],
                     [f.VlanTag(a_service.c_tag), f.VlanTag(7, tpid=tpid)]):
            up = f.build_ethernet(SERVER_MAC, A_MAC, f.ETH_IPV4, bytes(46), tags)
            assert dropped(lab.dp.from_uni(a.serial, 2, up)) == [(f"uni {a.serial}/2", "tpid")]
        for tags in ([f.VlanTag(b_service.s_tag, tpid=tpid), f.VlanTag(b_service.c_tag)],
                     [f.VlanTag(b_service.s_tag), f.VlanTag(b_service.c_tag, tpid=tpid)]):
            down = f.build_ethernet(B_MAC, SERVER_MAC, f.ETH_IPV4, bytes(46), tags)
            assert dropped(lab.dp.from_nni(down)) == [("nni", "tpid")]
        lab.dp.from_uni(b.serial, 0, ip_frame(SERVER_MAC, B_MAC))
        plain = f.build_ethernet(B_MAC, SERVER_MAC, f.ETH_IPV4, bytes(46), [f.VlanTag(b_service.c_tag, tpid=tpid)])
        assert dropped(lab.dp.from_nni_untagged(plain)) == [("nni-untagged", "tpid")]
    counters = lab.dp.counters()
    assert counters["unis"][f"{a.serial}/2"]["dropped"] == {"tpid": 6}
    assert counters["nni"]["dropped"] == {"tpid": 4} and counters["nni_untagged"]["dropped"] == {"tpid": 2}
    assert counters["nni"]["tx_frames"] == 2 and counters["unis"][f"{b.serial}/0"]["tx_frames"] == 0
    assert delivered(lab.dp.from_nni(ip_frame(B_MAC, SERVER_MAC, tags=[(b_service.s_tag, 0),
                                                                         (b_service.c_tag, 0)]))) == [(b.serial, 0)]


def test_a_flow_naming_a_tpid_takes_that_tpid_from_the_nni(lab, rgs):
    """A downstream flow classifying outer TPID 0x88a8 makes the NNI take 0x88a8 S-tags, for that flow only: the
    subscriber's 0x8100 flow no longer matches a 0x88a8 frame, which the new flow forwards."""
    (a, _), (b, b_service) = rgs
    lab.flow(b, 0, "downstream", dict(o_vid=b_service.s_tag, i_vid=b_service.c_tag, pkt_tag_type="double_tag",
                                      o_pbits=0xFF, o_tpid=0x88A8), dict(remove_outer_tag=True), gem=1030,
             priority=2000)
    down = f.build_ethernet(B_MAC, SERVER_MAC, f.ETH_IPV4, bytes(46),
                            [f.VlanTag(b_service.s_tag, tpid=0x88A8), f.VlanTag(b_service.c_tag)])
    assert delivered(lab.dp.from_nni(down)) == [(b.serial, 0)]
    plain = f.build_ethernet(B_MAC, SERVER_MAC, f.ETH_IPV4, bytes(46),
                             [f.VlanTag(b_service.s_tag, tpid=0x9100), f.VlanTag(b_service.c_tag)])
    assert dropped(lab.dp.from_nni(plain)) == [("nni", "tpid")]


def test_link_local_frames_are_trapped_or_dropped_never_forwarded(lab, rgs):
    """An authenticated RG's EAPOL (to the 802.1X group address; the EAPOL trap flow gone, only the HSIA flow would
    take it), LLDP and pause frames leave on neither NNI: dropped and counted as link-local, upstream and
    downstream (tagged NNI with B's tags, untagged NNI); while the EAPOL trap flow is there, EAPOL still goes to the
    adapter."""
    (a, a_service), (b, b_service) = rgs
    start = eapol.eapol_start_frame(A_MAC)
    assert [type(o).__name__ for o in lab.dp.from_uni(a.serial, 2, start)] == ["PacketIn"]
    trap = next(flow for flow in lab.olt.flows.all() if flow.onu_id == a.onu_id and flow.eth_type == 0x888E)
    lab.olt.flow_remove(trap.access_intf_id, trap.flow_id, trap.flow_type)
    lldp = f.build_ethernet(bytes.fromhex("0180c200000e"), A_MAC, 0x88CC, bytes(46))
    pause = f.build_ethernet(bytes.fromhex("0180c2000001"), A_MAC, 0x8808, bytes(46))
    for frame in [start] * 3 + [lldp, pause]:
        assert dropped(lab.dp.from_uni(a.serial, 2, frame)) == [(f"uni {a.serial}/2", "link-local")]
    assert lab.dp.counters()["nni"]["tx_frames"] == 0 == lab.dp.counters()["nni_untagged"]["tx_frames"]
    to_b = eapol.success_frame(B_MAC, 1)
    to_b = f.PAE_GROUP_MAC + to_b[6:]
    tagged = to_b[:12] + f.VlanTag(b_service.s_tag).pack() + f.VlanTag(b_service.c_tag).pack() + to_b[12:]
    assert dropped(lab.dp.from_nni(tagged)) == [("nni", "link-local")]
    assert dropped(lab.dp.from_nni_untagged(to_b)) == [("nni-untagged", "link-local")]
    assert lab.dp.counters()["unis"][f"{b.serial}/0"]["tx_frames"] == 0
    assert lab.dp.counters()["unis"][f"{a.serial}/2"]["dropped"] == {"link-local": 5}


def test_eapol_to_a_unicast_address_is_never_forwarded_either_way(lab, rgs):
    """An authenticated RG's EAPOL sent to a unicast address (the authenticator's MAC) leaves on neither NNI, and a
    server's EAPOL frame to an RG's MAC from either NNI reaches no UNI: dropped and counted as eapol; the RG's other
    frames still pass."""
    (a, a_service), (b, b_service) = rgs
    trap = next(flow for flow in lab.olt.flows.all() if flow.onu_id == a.onu_id and flow.eth_type == 0x888E)
    lab.olt.flow_remove(trap.access_intf_id, trap.flow_id, trap.flow_type)
    start = eapol.eapol_start_frame(A_MAC)
    unicast = eapol.AUTHENTICATOR_MAC + start[6:]
    for _ in range(3):
        assert dropped(lab.dp.from_uni(a.serial, 2, unicast)) == [(f"uni {a.serial}/2", "eapol")]
    assert lab.dp.counters()["nni"]["tx_frames"] == 0 == lab.dp.counters()["nni_untagged"]["tx_frames"]
    lab.dp.from_uni(b.serial, 0, ip_frame(SERVER_MAC, B_MAC))          # B's address learned on the untagged NNI
    to_b = eapol.success_frame(B_MAC, 1)
    tagged = to_b[:12] + f.VlanTag(b_service.s_tag).pack() + f.VlanTag(b_service.c_tag).pack() + to_b[12:]
    assert dropped(lab.dp.from_nni(tagged)) == [("nni", "eapol")]
    assert dropped(lab.dp.from_nni_untagged(to_b)) == [("nni-untagged", "eapol")]
    assert lab.dp.counters()["unis"][f"{b.serial}/0"]["tx_frames"] == 0
    assert lab.dp.counters()["unis"][f"{a.serial}/2"]["dropped"] == {"eapol": 3}
    assert lab.dp.counters()["nni"]["tx_frames"] == 1                  # B's IP frame went out


def test_an_nni_trap_flow_takes_link_local_frames_from_the_untagged_nni(lab, rgs):
    """An NNI trap flow for LLDP (as VOLTHA installs it) takes the switch's LLDP frame from the untagged NNI to the
    adapter as it came, not to any subscriber."""
    from voltha_protos import openolt_pb2
    from oltsim.openoltpb import flow_from_pb
    lab.olt.flow_add(flow_from_pb(openolt_pb2.Flow(
        access_intf_id=-1, onu_id=-1, uni_id=-1, flow_id=8, flow_type="downstream", network_intf_id=0,
        gemport_id=-1, alloc_id=-1, priority=10000, classifier=openolt_pb2.Classifier(eth_type=0x88CC, o_pbits=0xFF),
        action=openolt_pb2.Action(cmd=openolt_pb2.ActionCmd(trap_to_host=True)))))
    lldp = f.build_ethernet(bytes.fromhex("0180c200000e"), SERVER_MAC, 0x88CC, bytes(46))
    out = lab.dp.from_nni_untagged(lldp)
    assert [type(o).__name__ for o in out] == ["PacketIn"] and out[0].indication.pkt == lldp


def test_short_frames_leave_padded_and_oversize_ones_are_dropped(lab, rgs):
    """A bare 14-octet header from RG A leaves both NNIs padded to 60 octets (the tagged one 60, not 22); a
    42-octet ARP reply from the trunk reaches B padded to 60; frames carrying more than the NNI's 1,500 octets
    after their tags (9,000, 65,535, and 1,501) are dropped and counted as oversize from either side, never cut,
    while exactly 1,500 passes with its two tags on the NNI."""
    (a, _), (b, b_service) = rgs
    header = SERVER_MAC + A_MAC + b"\x08\x06"
    out = lab.dp.from_uni(a.serial, 2, header)
    assert [len(o.frame) for o in out] == [60, 60]
    assert out[0].frame[20:22] == b"\x08\x06" and out[0].frame[22:] == bytes(38)
    assert out[1].frame == header + bytes(46)
    arp = f.build_ethernet(B_MAC, SERVER_MAC, 0x0806, bytes(28), [f.VlanTag(b_service.s_tag),
                                                                  f.VlanTag(b_service.c_tag)], pad=False)
    assert [len(o.frame) for o in lab.dp.from_nni(arp)] == [60]
    for size in (1501, 9000, 65535):
        big = ip_frame(SERVER_MAC, A_MAC, bytes(size - 28))
        assert dropped(lab.dp.from_uni(a.serial, 2, big)) == [(f"uni {a.serial}/2", "oversize")]
        down = ip_frame(B_MAC, SERVER_MAC, bytes(size - 28), tags=[(b_service.s_tag, 0), (b_service.c_tag, 0)])
        assert dropped(lab.dp.from_nni(down)) == [("nni", "oversize")]
    full = ip_frame(SERVER_MAC, A_MAC, bytes(1500 - 28))
    assert [len(o.frame) for o in lab.dp.from_uni(a.serial, 2, full)] == [1522, 1514]
    assert lab.dp.counters()["unis"][f"{a.serial}/2"]["dropped"] == {"oversize": 3}
    assert lab.dp.counters()["nni"]["dropped"] == {"oversize": 3}


def test_jumbo_frames_pass_when_the_nni_mtu_says_so(lab, rgs):
    """A DataPlane made with an MTU of 9,000 carries a 9,000-octet datagram both ways, and drops 9,001."""
    from oltsim.dataplane.pipeline import DataPlane
    (a, _), (b, b_service) = rgs
    jumbo = DataPlane(lab.olt, lab.clock, vlan_config=lab.vlan, mtu=9000)
    for uni in ((a.serial, 2), (b.serial, 0)):
        jumbo.bind_uni(*uni)
    assert [len(o.frame) for o in jumbo.from_uni(a.serial, 2, ip_frame(SERVER_MAC, A_MAC, bytes(9000 - 28)))] == [
        9022, 9014]
    down = ip_frame(B_MAC, SERVER_MAC, bytes(9000 - 28), tags=[(b_service.s_tag, 0), (b_service.c_tag, 0)])
    assert delivered(jumbo.from_nni(down)) == [(b.serial, 0)]
    assert dropped(jumbo.from_uni(a.serial, 2, ip_frame(SERVER_MAC, A_MAC, bytes(9001 - 28)))) == [
        (f"uni {a.serial}/2", "oversize")]
    jumbo.close()


def dhcp_request(src: bytes, client: bytes, message_type: int) -> bytes:
    """A DHCP message from a client (untagged, as an RG sends it) whose chaddr is `client`."""
    msg = f.build_dhcp(f.BOOTREQUEST, 7, client, [(f.OPT_MESSAGE_TYPE, bytes([message_type]))])
    return f.build_ethernet(f.BROADCAST_MAC, src, f.ETH_IPV4,
                            f.build_ipv4_udp(bytes(4), bytes([255] * 4), 68, 67, msg))


def leased(lab, b, b_service) -> None:
    """B's client: Discover, Request, and the server's ACK in B's VLAN (B holds B_MAC)."""
    lab.dp.from_uni(b.serial, 0, dhcp_request(B_MAC, B_MAC, f.DHCP_DISCOVER))
    lab.dp.from_uni(b.serial, 0, dhcp_request(B_MAC, B_MAC, f.DHCP_REQUEST))
    assert delivered(lab.dp.from_nni(dhcp_ack(B_MAC, [(b_service.s_tag, 0), (b_service.c_tag, 0)]))) == [
        (b.serial, 0)]
    assert b_service.dhcp_state == "dhcp_ack_received"


def test_a_dhcp_release_for_another_subscribers_mac_is_not_relayed(lab, rgs):
    """With B's lease bound, A's DHCPRELEASE (and Discover, Request) naming B's MAC as client, sent from A's own
    MAC, never reaches the adapter's relay: dropped and counted as dhcp-client; sent from B's MAC it is a
    mac-spoof. A's own DHCP still goes to the adapter."""
    (a, _), (b, b_service) = rgs
    leased(lab, b, b_service)
    before = len(lab.packet_indications())
    for kind in (f.DHCP_RELEASE, f.DHCP_DISCOVER, f.DHCP_REQUEST):
        assert dropped(lab.dp.from_uni(a.serial, 2, dhcp_request(A_MAC, B_MAC, kind))) == [
            (f"uni {a.serial}/2", "dhcp-client")]
    assert dropped(lab.dp.from_uni(a.serial, 2, dhcp_request(B_MAC, B_MAC, f.DHCP_RELEASE))) == [
        (f"uni {a.serial}/2", "mac-spoof")]
    assert len(lab.packet_indications()) == before
    assert [type(o).__name__ for o in lab.dp.from_uni(a.serial, 2, dhcp_request(A_MAC, A_MAC, 1))] == ["PacketIn"]
    assert lab.dp.counters()["unis"][f"{a.serial}/2"]["dropped"] == {"dhcp-client": 3, "mac-spoof": 1}


def test_dhcp_answers_reach_only_the_subscriber_whose_tags_and_client_mac_match(lab, rgs):
    """An ACK for B's client MAC arriving in A's VLAN is dropped at A (dhcp-client) and moves none of A's states;
    in B's VLAN it reaches B."""
    (a, a_service), (b, b_service) = rgs
    leased(lab, b, b_service)
    state = a_service.dhcp_state
    wrong = dhcp_ack(B_MAC, [(a_service.s_tag, 0), (a_service.c_tag, 0)])
    assert dropped(lab.dp.from_nni(wrong)) == [(f"uni {a.serial}/2", "dhcp-client")]
    assert a_service.dhcp_state == state
    assert delivered(lab.dp.from_nni(dhcp_ack(B_MAC, [(b_service.s_tag, 0), (b_service.c_tag, 0)]))) == [
        (b.serial, 0)]
    # from the adapter (OnuPacketOut) likewise
    lab.path.frames.packet_out(a, a.unis[2].port_no, 1100, dhcp_ack(B_MAC, [(a_service.c_tag, 0)]))
    assert not [o for o in lab.delivered if isinstance(o, ToUni)]


def test_a_dhcp_answer_under_a_foreign_s_tag_is_not_trapped_for_relay(lab, rgs):
    """The NNI's DHCP trap flow takes answers whatever their tags; one for B's client MAC under S-tag 901 over B's
    C-tag is dropped and counted as foreign-tag, not handed to the adapter's relay (which would send it to B);
    under B's own S-tag it reaches the adapter."""
    from voltha_protos import openolt_pb2
    from oltsim.openoltpb import flow_from_pb
    (a, _), (b, b_service) = rgs
    lab.olt.flow_add(flow_from_pb(openolt_pb2.Flow(
        access_intf_id=-1, onu_id=-1, uni_id=-1, flow_id=9, flow_type="downstream", network_intf_id=0,
        gemport_id=-1, alloc_id=-1, priority=10000,
        classifier=openolt_pb2.Classifier(eth_type=0x0800, ip_proto=17, src_port=67, dst_port=68, o_pbits=0xFF),
        action=openolt_pb2.Action(cmd=openolt_pb2.ActionCmd(trap_to_host=True)))))
    lab.dp.from_uni(b.serial, 0, ip_frame(SERVER_MAC, B_MAC))
    foreign = dhcp_ack(B_MAC, [(b_service.s_tag + 1, 0), (b_service.c_tag, 0)])
    assert dropped(lab.dp.from_nni(foreign)) == [("nni", "foreign-tag")]
    assert lab.dp.counters()["nni"]["dropped"] == {"foreign-tag": 1}
    own = lab.dp.from_nni(dhcp_ack(B_MAC, [(b_service.s_tag, 0), (b_service.c_tag, 0)]))
    assert [type(o).__name__ for o in own] == ["PacketIn"]


def test_a_subscribers_dhcp_state_moves_only_on_its_own_client(lab, rgs):
    """With B's lease bound, Discovers from other source MACs on B's UNI (a flood of random clients) are still
    handed to the adapter but leave B's DhcpState at dhcp_ack_received; B's own client's Discover moves it."""
    (a, _), (b, b_service) = rgs
    leased(lab, b, b_service)
    for n in range(20):
        other = bytes([2, 9, 0, 0, 0, n])
        assert [type(o).__name__ for o in lab.dp.from_uni(b.serial, 0, dhcp_request(other, other, 1))] == [
            "PacketIn"]
    assert b_service.dhcp_state == "dhcp_ack_received"
    lab.dp.from_uni(b.serial, 0, dhcp_request(B_MAC, B_MAC, f.DHCP_DISCOVER))
    assert b_service.dhcp_state == "dhcp_discovery_sent"


def test_an_arp_request_for_a_leased_address_reaches_only_its_subscriber(lab, rgs):
    """On the untagged NNI, the server's ARP request for the address B's DHCP ACK gave it reaches B only (as within
    B's VLAN), not A; a request for an address nobody was given still reaches every bound UNI."""
    (a, _), (b, b_service) = rgs
    lab.dp.from_nni(dhcp_ack(B_MAC, [(b_service.s_tag, 0), (b_service.c_tag, 0)]))

    def who_has(address: bytes) -> bytes:
        arp = (b"\x00\x01\x08\x00\x06\x04\x00\x01" + SERVER_MAC + bytes([10, 0, 0, 1]) + bytes(6) + address)
        return f.build_ethernet(f.BROADCAST_MAC, SERVER_MAC, 0x0806, arp)

    assert delivered(lab.dp.from_nni_untagged(who_has(bytes([10, 0, 0, 3])))) == [(b.serial, 0)]
    assert sorted(delivered(lab.dp.from_nni_untagged(who_has(bytes([10, 0, 0, 9]))))) == sorted(
        [(a.serial, 2), (b.serial, 0)])
    lab.dp.unbind_uni(b.serial, 0)
    assert delivered(lab.dp.from_nni_untagged(who_has(bytes([10, 0, 0, 3])))) == [(a.serial, 2)]


def test_an_rg_moved_to_another_uni_gets_its_lease_there(lab, rgs):
    """An RG whose address was learned on A (no lease held) is moved to B: its first Discover on B (trapped, never
    forwarded) moves the address to B, and the server's ACK for it in B's VLAN reaches B and binds it there."""
    (a, _), (b, b_service) = rgs
    lab.dp.from_uni(a.serial, 2, ip_frame(SERVER_MAC, B_MAC))
    assert lab.dp.macs()["02:00:00:aa:00:02"]["serial"] == a.serial
    assert [type(o).__name__ for o in lab.dp.from_uni(b.serial, 0, dhcp_request(B_MAC, B_MAC, 1))] == ["PacketIn"]
    assert lab.dp.macs()["02:00:00:aa:00:02"]["serial"] == b.serial
    assert delivered(lab.dp.from_nni(dhcp_ack(B_MAC, [(b_service.s_tag, 0), (b_service.c_tag, 0)]))) == [
        (b.serial, 0)]
    assert lab.dp.owners() == {"02:00:00:aa:00:02": f"{b.serial}/0"}
