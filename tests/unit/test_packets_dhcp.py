"""DHCP client and NNI server: Discover bytes against BBSim's, FlowAdd matching, each client state
with the next frame, timeouts and retries on a fake clock, server addressing and tags, and the
whole BBR sequence (EAPOL then DHCP through UplinkPacketOut) on real model objects."""
import random
import struct

import pytest
from twisted.internet.task import Clock

from oltsim.config import load_settings
from oltsim.model import events
from oltsim.model.builder import build_olt
from oltsim.model.errors import InvalidArgument
from oltsim.model.flows import Flow
from oltsim.packets import dhcp, eapol, frames as f
from oltsim.packets.engine import ProtocolEngine

MAC = f.mac_bytes("2e:00:00:01:00:00")


class Bench:
    """One OLT (1 PON, 2 ONUs), engine attached, ONU 1 active with UNI 0 up."""

    def __init__(self, **options):
        self.clock = Clock()
        self.settings = load_settings({"pon": 1, "onu": 2, **options}, None)
        self.engine = ProtocolEngine.from_settings(self.settings)
        self.olt = build_olt(self.settings, self.clock, random.Random(0), frames=self.engine)
        self.engine.attach(self.olt)
        self.events = []
        self.olt.subscribe(self.events.append)
        self.olt.start()
        self.olt.enable_indication()
        self.clock.advance(1)
        self.onu = self.olt.activate_onu(0, "BBSM00000001", 1)
        self.uni = self.onu.unis[0]
        self.uni.enable()
        self.service = self.uni.services[0]
        self.mac = f.mac_bytes(self.service.mac)

    def flow(self, **fields):
        base = dict(flow_id=1, flow_type="downstream", access_intf_id=0, onu_id=1, uni_id=0, port_no=1,
                    alloc_id=1, gemport_id=1)
        base.update(fields)
        self.olt.flow_add(Flow(**base))

    def dhcp_flow(self, o_vid=900, o_pbits=255, **fields):
        self.flow(eth_type=0x0800, src_port=68, dst_port=67, o_vid=o_vid, o_pbits=o_pbits, **fields)

    def pkts(self, intf_type="pon"):
        return [e for e in self.events if isinstance(e, events.PacketIndication) and e.intf_type == intf_type]

    def out(self, pkt, port_no=1):
        self.engine.packet_out(self.onu, port_no, 1, pkt)

    def uplink(self, pkt):
        """Send `pkt` to the NNI DHCP server and return the reply PktInd."""
        before = len(self.events)
        self.olt.hub.frames.uplink_packet_out(self.olt, 0, pkt)
        replies = [e for e in self.events[before:] if isinstance(e, events.PacketIndication)]
        assert len(replies) == 1
        return replies[0]


@pytest.fixture
def bench():
    return Bench()


def ones_sum_ok(data: bytes) -> bool:
    if len(data) % 2:
        data += b"\0"
    total = 0
    for i in range(0, len(data), 2):
        total += data[i] << 8 | data[i + 1]
        total = (total & 0xFFFF) + (total >> 16)
    return total == 0xFFFF


def reply(bench, mtype, yiaddr="10.1.0.0", xid=None, tags=(f.VlanTag(900),), dst=None):
    """A server reply (Offer, Ack, Nak...) to the bench service, as an adapter delivers it."""
    message = f.build_dhcp(f.BOOTREPLY, dhcp.xid_for_mac(bench.mac) if xid is None else xid, bench.mac,
                           [(53, bytes((mtype,)))], yiaddr=f.ip_bytes(yiaddr))
    udp = f.build_ipv4_udp(f.ZERO_IP, f.BROADCAST_IP, 67, 68, message)
    return f.build_ethernet(dst or bench.mac, dhcp.SERVER_MAC, f.ETH_IPV4, udp, list(tags))


# ---- frames -------------------------------------------------------------------------------------

def test_xid_is_the_mac_bytes_decimal_digits():
    """xid: 2e:00:00:01:00:00 -> '4600100' -> 0x00463124; long digit strings keep their low 32 bits."""
    assert dhcp.xid_for_mac(MAC) == 0x00463124
    assert dhcp.xid_for_mac(bytes((0x2E, 0x60, 0, 12, 15, 2))) == 4696012152 & 0xFFFFFFFF


def test_discover_bytes_match_reference():
    """Discover: broadcast, one tag (VID C-tag, PCP priority), IPv4 TOS 0x10 TTL 128 0.0.0.0 ->
    255.255.255.255, UDP 68 -> 67, BOOTP op 1 with BBSim's xid and options 53, 12, 55, 61 (reference 4.5)."""
    raw = dhcp.discover_frame(MAC, 900, 0, 1, 0, 1)
    host = b"1.0.1.bbsim.onf.org"
    options = (bytes.fromhex("350101") + bytes((12, len(host))) + host
               + bytes.fromhex("370d011c02030f06770c2c2f1a792a") + bytes.fromhex("3d0701") + MAC + b"\xff")
    bootp = (bytes.fromhex("01010600" "00463124" "0000" "0000") + bytes(16) + MAC + bytes(10) + bytes(192)
             + bytes.fromhex("63825363") + options)
    bootp += bytes(300 - len(bootp))
    udp_len, ip_len = 8 + len(bootp), 28 + len(bootp)
    expected = (b"\xff" * 6 + MAC + bytes.fromhex("8100" "0384" "0800")
                + bytes.fromhex("4510") + struct.pack("!H", ip_len) + bytes.fromhex("00000000" "8011" "0000")
                + bytes(4) + b"\xff" * 4
                + bytes.fromhex("00440043") + struct.pack("!H", udp_len) + b"\0\0" + bootp)
    assert len(raw) == len(expected) == 346
    # Everything but the two checksums is byte-for-byte; the checksums verify independently.
    assert raw[:28] + b"\0\0" + raw[30:44] + b"\0\0" + raw[46:] == expected
    ip = raw[18:18 + ip_len]
    assert ones_sum_ok(ip[:20])
    assert ones_sum_ok(ip[12:20] + struct.pack("!BBH", 0, 17, udp_len) + ip[20:])


def test_request_frame_options_in_bbsim_order():
    """Request carries 12, 55, 53=3, 54 182.21.0.128, 61 fixed prefix + PON + ONU, 50 offered, in order."""
    msg = f.decode(dhcp.request_frame(MAC, 900, 2, 7, 1, 5, f.ip_bytes("10.1.0.0"))).dhcp
    assert [code for code, _ in msg.options] == [12, 55, 53, 54, 61, 50]
    assert msg.option(12) == b"7.1.5.bbsim.onf.org" and msg.message_type == 3
    assert msg.option(54) == bytes((182, 21, 0, 128))
    assert msg.option(61) == bytes.fromhex("cd28cbcc0001000123ed11ec4efccd28") + b"\x01\x05"
    assert msg.option(50) == f.ip_bytes("10.1.0.0")


# ---- trigger --------------------------------------------------------------------------------

def test_dhcp_flow_sends_discover(bench):
    """A DHCP trap flow with the service C-tag and o_pbits 255 sends a Discover PktInd."""
    bench.dhcp_flow(gemport_id=1025, port_no=16)
    assert bench.service.dhcp_state == "dhcp_discovery_sent"
    (pkt,) = bench.pkts()
    assert (pkt.intf_id, pkt.onu_id, pkt.uni_id, pkt.gemport_id, pkt.port_no) == (0, 1, 0, 1025, 16)
    assert pkt.pkt == dhcp.discover_frame(bench.mac, 900, 0, 1025, 0, 1)


@pytest.mark.parametrize("o_vid,o_pbits,started", [(900, 255, True), (900, 0, True), (901, 255, False),
                                                   (900, 3, False)])
def test_dhcp_flow_matches_tag_and_priority(bench, o_vid, o_pbits, started):
    """Only a flow whose o_vid is the C-tag and whose o_pbits is the priority (or 255) starts DHCP."""
    bench.dhcp_flow(o_vid=o_vid, o_pbits=o_pbits)
    assert (bench.service.dhcp_state == "dhcp_discovery_sent") is started


def test_dhcp_flow_not_trap_ports_does_not_start(bench):
    """An IPv4 flow without the 68 -> 67 classifier starts nothing."""
    bench.flow(eth_type=0x0800, o_vid=900, o_pbits=255, src_port=67, dst_port=68)
    assert bench.service.dhcp_state == "created"


def test_tt_flow_selects_service_by_ctag_and_priority():
    """With TT services a flow o_vid 444 o_pbits 7 starts only voip, tagged 444 with PCP 7."""
    bench = Bench(services="tt")
    bench.dhcp_flow(o_vid=444, o_pbits=7)
    states = {s.name: s.dhcp_state for s in bench.uni.services}
    assert states == {"hsia": "created", "voip": "dhcp_discovery_sent", "vod": "created", "MC": "created"}
    tag = f.decode(bench.pkts()[0].pkt).eth.tags[0]
    assert (tag.vid, tag.pcp) == (444, 7)


def test_dpu_mgmt_compares_and_tags_with_stag():
    """DPU_MGMT_TRAFFIC matches the flow on its S-tag and S-tag priority and tags its DHCP with them."""
    bench = Bench(services="dt-fttb")
    bench.dhcp_flow(o_vid=6, o_pbits=3)
    assert all(s.dhcp_state == "created" for s in bench.uni.services)
    bench.dhcp_flow(o_vid=60, o_pbits=7)
    mgmt = next(s for s in bench.uni.services if s.name == "DPU_MGMT_TRAFFIC")
    assert mgmt.dhcp_state == "dhcp_discovery_sent"
    tag = f.decode(bench.pkts()[0].pkt).eth.tags[0]
    assert (tag.vid, tag.pcp) == (60, 7)


# ---- client states --------------------------------------------------------------------------

def test_offer_answered_with_request(bench):
    """In dhcp_discovery_sent an Offer gets a Request for the offered address."""
    bench.dhcp_flow()
    bench.out(reply(bench, f.DHCP_OFFER, "10.1.0.0"))
    assert bench.service.dhcp_state == "dhcp_request_sent"
    last = bench.pkts()[-1]
    assert last.pkt == dhcp.request_frame(bench.mac, 900, 0, 1, 0, 1, f.ip_bytes("10.1.0.0"))
    assert (last.gemport_id, last.port_no, last.uni_id) == (1, 1, 0)


def test_ack_completes_and_cancels_timer(bench):
    """In dhcp_request_sent an Ack completes DHCP and cancels the timeout."""
    bench.dhcp_flow()
    bench.out(reply(bench, f.DHCP_OFFER))
    bench.out(reply(bench, f.DHCP_ACK))
    assert bench.service.dhcp_state == "dhcp_ack_received"
    assert bench.engine.pending_timers() == 0 and not bench.onu._timer_calls
    changes = [(e.src, e.dest) for e in bench.events
               if isinstance(e, events.StateChanged) and e.attribute == "DhcpState"]
    assert changes == [("created", "dhcp_started"), ("dhcp_started", "dhcp_discovery_sent"),
                       ("dhcp_discovery_sent", "dhcp_request_sent"), ("dhcp_request_sent", "dhcp_ack_received")]


def test_offer_and_ack_out_of_turn_are_ignored(bench):
    """A late Offer or an early Ack is logged and ignored, the attempt goes on."""
    bench.dhcp_flow()
    bench.out(reply(bench, f.DHCP_ACK))
    assert bench.service.dhcp_state == "dhcp_discovery_sent"
    bench.out(reply(bench, f.DHCP_OFFER))
    bench.out(reply(bench, f.DHCP_OFFER))
    assert bench.service.dhcp_state == "dhcp_request_sent" and len(bench.pkts()) == 2


@pytest.mark.parametrize("mtype", [f.DHCP_NAK, 99])
def test_nak_or_unknown_type_fails(bench, mtype):
    """A Nak or an unsupported message type fails the attempt (as BBSim)."""
    bench.dhcp_flow()
    bench.out(reply(bench, mtype))
    assert bench.service.dhcp_state == "dhcp_failed"


def test_reply_for_another_transaction_is_ignored(bench):
    """A reply whose xid is not the service's is ignored."""
    bench.dhcp_flow()
    bench.out(reply(bench, f.DHCP_OFFER, xid=12345))
    assert bench.service.dhcp_state == "dhcp_discovery_sent"


def test_bootrequest_to_client_is_ignored(bench):
    """A BOOTREQUEST delivered to the client is only logged."""
    bench.dhcp_flow()
    bench.out(bench.pkts()[0].pkt.replace(b"\xff" * 6, bench.mac, 1))
    assert bench.service.dhcp_state == "dhcp_discovery_sent" and len(bench.pkts()) == 1


def test_broadcast_reply_routed_by_chaddr(bench):
    """A reply to the broadcast MAC reaches the service named by its client hardware address."""
    bench.dhcp_flow()
    bench.out(reply(bench, f.DHCP_OFFER, dst=f.BROADCAST_MAC))
    assert bench.service.dhcp_state == "dhcp_request_sent"


def test_timeout_without_retry():
    """Without dhcp_retry the attempt fails at dhcp_timeout and nothing follows."""
    bench = Bench(dhcp_timeout=20)
    bench.dhcp_flow()
    bench.out(reply(bench, f.DHCP_OFFER))
    bench.clock.advance(20)
    assert bench.service.dhcp_state == "dhcp_failed"
    bench.clock.advance(100)
    assert len(bench.pkts()) == 2 and bench.engine.pending_timers() == 0


def test_timeout_with_retry_discovers_again():
    """With dhcp_retry a timed-out attempt fails and a new Discover goes out, then completes."""
    bench = Bench(dhcp_retry=True, dhcp_timeout=20)
    bench.dhcp_flow()
    bench.clock.advance(20)
    assert bench.service.dhcp_state == "dhcp_discovery_sent"
    assert [p.pkt for p in bench.pkts()] == [bench.pkts()[0].pkt] * 2
    bench.out(reply(bench, f.DHCP_OFFER))
    bench.out(reply(bench, f.DHCP_ACK))
    assert bench.service.dhcp_state == "dhcp_ack_received" and bench.engine.pending_timers() == 0


def test_restart_mid_exchange(bench):
    """RestartDhcp while waiting for the Ack fails the attempt and sends a new Discover."""
    bench.dhcp_flow()
    bench.out(reply(bench, f.DHCP_OFFER))
    bench.engine.restart_dhcp(bench.service)
    assert bench.service.dhcp_state == "dhcp_discovery_sent" and bench.engine.pending_timers() == 1
    assert f.decode(bench.pkts()[-1].pkt).dhcp.message_type == f.DHCP_DISCOVER


# ---- NNI server -----------------------------------------------------------------------------

def test_server_offer_addressing(bench):
    """Discover -> Offer on PktInd(nni, 0): server MAC to client MAC, same tag with PCP 0, UDP 67 -> 68,
    yiaddr = ciaddr = 10.1.0.0, xid echoed, options 53=2, 12 echoed, 82 empty, 61 01+MAC."""
    bench.dhcp_flow()
    ind = bench.uplink(bench.pkts()[0].pkt)
    assert (ind.intf_type, ind.intf_id, ind.onu_id, ind.gemport_id, ind.port_no) == ("nni", 0, 0, 0, 0)
    frame = f.decode(ind.pkt)
    assert (frame.eth.dst, frame.eth.src) == (bench.mac, dhcp.SERVER_MAC)
    assert frame.eth.tags == (f.VlanTag(900, 0),)
    assert (frame.ip.src, frame.ip.dst, frame.ip.tos, frame.ip.ttl) == (f.ZERO_IP, f.BROADCAST_IP, 0x10, 128)
    assert (frame.udp.src_port, frame.udp.dst_port) == (67, 68)
    assert f.ipv4_header_ok(frame.ip) and f.udp_checksum_ok(frame.ip)
    msg = frame.dhcp
    assert (msg.op, msg.xid, msg.client_mac) == (2, 0x00463124, bench.mac)
    assert msg.yiaddr == msg.ciaddr == f.ip_bytes("10.1.0.0")
    assert msg.options == ((53, b"\x02"), (12, b"1.0.1.bbsim.onf.org"), (82, b""), (61, b"\x01" + bench.mac))


def test_server_ack_for_request(bench):
    """Request -> Ack with the same address."""
    bench.dhcp_flow()
    bench.out(bench.uplink(bench.pkts()[0].pkt).pkt)
    ack = f.decode(bench.uplink(bench.pkts()[-1].pkt).pkt).dhcp
    assert ack.message_type == f.DHCP_ACK and ack.yiaddr == f.ip_bytes("10.1.0.0")


def test_server_address_from_mac():
    """PON 1 ONU 1 UNI 0 gets 11.1.0.0; the first byte wraps past 255."""
    assert dhcp.address_for_mac(f.mac_bytes("2e:00:01:01:00:00")) == f.ip_bytes("11.1.0.0")
    assert dhcp.address_for_mac(f.mac_bytes("2e:00:fa:02:03:04")) == f.ip_bytes("4.2.3.4")


def test_server_keeps_double_tags_and_echoes_option82():
    """A double-tagged request gets a reply with the same two VLAN ids (PCP 0) and its option 82."""
    message = f.build_dhcp(1, 77, MAC, [(53, b"\x03"), (82, b"\x01\x03abc")])
    udp = f.build_ipv4_udp(f.ZERO_IP, f.BROADCAST_IP, 68, 67, message)
    request = f.build_ethernet(f.BROADCAST_MAC, MAC, f.ETH_IPV4, udp, [f.VlanTag(100, 5), f.VlanTag(200, 6)])
    frame = f.decode(dhcp.DhcpServer().answer(f.decode(request)))
    assert frame.eth.tags == (f.VlanTag(100, 0), f.VlanTag(200, 0))
    assert frame.dhcp.option(82) == b"\x01\x03abc" and frame.dhcp.option(12) is None
    assert frame.dhcp.message_type == f.DHCP_ACK and frame.dhcp.xid == 77


def test_server_answers_untagged_request_untagged():
    """An untagged request gets an untagged reply (BBSim refuses it)."""
    message = f.build_dhcp(1, 1, MAC, [(53, b"\x01")])
    request = f.build_ethernet(f.BROADCAST_MAC, MAC, f.ETH_IPV4, f.build_ipv4_udp(f.ZERO_IP, f.BROADCAST_IP, 68, 67,
                                                                                  message))
    assert f.decode(dhcp.DhcpServer().answer(f.decode(request))).eth.tags == ()


def test_server_refuses_other_message_types(bench):
    """UplinkPacketOut with a DHCP Offer is InvalidArgument naming the type; nothing is emitted."""
    before = len(bench.events)
    with pytest.raises(InvalidArgument, match=r"only Discover and Request \(got Offer\)"):
        bench.olt.hub.frames.uplink_packet_out(bench.olt, 0, reply(bench, f.DHCP_OFFER))
    assert len(bench.events) == before


@pytest.mark.parametrize("pkt", [
    f.build_ethernet(bytes.fromhex("0180c200000e"), MAC, f.ETH_LLDP, b"\x02\x07"),
    f.build_ethernet(f.BROADCAST_MAC, MAC, 0x0806, bytes(28)),
    f.build_ethernet(f.BROADCAST_MAC, MAC, f.ETH_IPV4, f.build_ipv4_udp(f.ZERO_IP, f.ZERO_IP, 1, 2, b"x")),
])
def test_uplink_non_dhcp_is_dropped(bench, pkt):
    """LLDP, ARP and other UDP sent to the NNI are dropped without error or indication."""
    before = len(bench.events)
    bench.olt.hub.frames.uplink_packet_out(bench.olt, 0, pkt)
    assert len(bench.events) == before


def test_uplink_garbage_and_fuzz_raise_only_invalid_argument(bench):
    """Malformed frames to the NNI raise InvalidArgument; random bytes raise nothing else (fixed seed)."""
    with pytest.raises(InvalidArgument, match="UplinkPacketOut on NNI 0"):
        bench.olt.hub.frames.uplink_packet_out(bench.olt, 0, b"\x00" * 5)
    rng = random.Random(3)
    discover = dhcp.discover_frame(MAC, 900, 0, 1, 0, 1)
    for i in range(1500):
        if i % 2:
            raw = rng.randbytes(rng.randrange(0, 400))
        else:
            raw = bytearray(discover)
            raw[rng.randrange(len(raw))] = rng.randrange(256)
            raw = bytes(raw)
        try:
            bench.olt.hub.frames.uplink_packet_out(bench.olt, 0, raw)
        except InvalidArgument:
            pass


def test_dhcp_packet_out_fuzz_keeps_client_usable(bench):
    """Random and mutated DHCP frames to the client raise only InvalidArgument; DHCP completes after."""
    rng = random.Random(5)
    bench.dhcp_flow()
    offer = reply(bench, f.DHCP_OFFER)
    for _ in range(1500):
        raw = bytearray(offer)
        for _ in range(rng.randrange(1, 4)):
            raw[rng.randrange(len(raw))] = rng.randrange(256)
        try:
            bench.out(bytes(raw))
        except InvalidArgument:
            pass
    bench.engine.restart_dhcp(bench.service)
    bench.out(reply(bench, f.DHCP_OFFER))
    bench.out(reply(bench, f.DHCP_ACK))
    assert bench.service.dhcp_state == "dhcp_ack_received"


# ---- BBR's whole sequence -------------------------------------------------------------------

def pop_tag(frame: bytes) -> bytes:
    return frame[:12] + frame[16:]


def push_tags(frame: bytes, outer: int, inner: int) -> bytes:
    return frame[:12] + f.VlanTag(outer).pack() + f.VlanTag(inner).pack() + frame[12:]


def test_bbr_sequence_reaches_success_and_ack():
    """BBR's sequence (reference 4.6) on every ONU: EAPOL flow, EAP via OnuPacketOut(port_no = ONU id, gem 1),
    DHCP flow with the same flow id, requests popped and double-tagged 900/900 to UplinkPacketOut, replies
    popped once back via OnuPacketOut; UNI 0 ends eap_response_success_received and dhcp_ack_received."""
    bench = Bench()
    onus = [bench.onu, bench.olt.activate_onu(0, "BBSM00000002", 2)]
    for onu in onus:
        onu.unis[0].enable()
    for onu in onus:
        oid = onu.onu_id
        common = dict(flow_id=oid, flow_type="downstream", access_intf_id=0, onu_id=oid, uni_id=0, port_no=oid,
                      alloc_id=oid, gemport_id=oid)
        start = len(bench.events)
        bench.olt.flow_add(Flow(eth_type=0x888E, o_vid=4091, **common))
        mac = f.mac_bytes(f"2e:00:00:{oid:02x}:00:00")

        def from_onu():
            inds = [e for e in bench.events[start:]
                    if isinstance(e, events.PacketIndication) and e.intf_type == "pon"]
            assert inds[-1].port_no == oid and inds[-1].onu_id == oid
            return inds[-1].pkt

        assert f.decode(from_onu()).eapol.type == f.EAPOL_START
        bench.engine.packet_out(onu, oid, 1, eapol.identity_request_frame(mac, 1))
        response = f.decode(from_onu()).eap
        challenge = eapol.md5_response(response.id, response.data[1:])  # BBR's own challenge derivation
        bench.engine.packet_out(onu, oid, 1, eapol.md5_request_frame(mac, response.id, challenge))
        bench.engine.packet_out(onu, oid, 1, eapol.success_frame(mac, response.id))
        ctag = onu.unis[0].services[0].c_tag  # BBR builds the same model, so it knows the C-tag
        bench.olt.flow_add(Flow(eth_type=0x0800, src_port=68, dst_port=67, o_vid=ctag, o_pbits=255, **common))
        for _ in ("discover", "request"):
            upstream = push_tags(pop_tag(from_onu()), 900, 900)
            downstream = pop_tag(bench.uplink(upstream).pkt)
            assert f.decode(downstream).eth.dst == mac
            bench.engine.packet_out(onu, oid, 1, downstream)
    for onu in onus:
        service = onu.unis[0].services[0]
        assert (service.eapol_state, service.dhcp_state) == ("eap_response_success_received", "dhcp_ack_received")
    assert bench.engine.pending_timers() == 0
