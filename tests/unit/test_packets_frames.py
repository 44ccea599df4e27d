"""Frame codecs: byte-level frames against BBSim's, round trips, checksums, and malformed input."""
import hashlib
import random
import struct

import pytest

from oltsim.packets import dhcp, eapol, frames as f, igmp

MAC = bytes.fromhex("2e0000010000")


def ones_sum_ok(data: bytes) -> bool:
    """Independent RFC 1071 check: the ones' complement sum over data incl. its checksum is 0xffff."""
    if len(data) % 2:
        data += b"\0"
    total = 0
    for i in range(0, len(data), 2):
        total += data[i] << 8 | data[i + 1]
        total = (total & 0xFFFF) + (total >> 16)
    return total == 0xFFFF


# ---- Ethernet ---------------------------------------------------------------------------------

@pytest.mark.parametrize("tags", [(), (f.VlanTag(900, 7),), (f.VlanTag(900, 0, 0, 0x88A8), f.VlanTag(901, 3))])
def test_ethernet_round_trip_with_zero_one_two_tags(tags):
    """A frame with 0, 1 or 2 tags parses back to the same addresses, tags, type and payload."""
    raw = f.build_ethernet(f.BROADCAST_MAC, MAC, 0x0800, b"x" * 80, tags)
    eth = f.parse_ethernet(raw)
    assert (eth.dst, eth.src, eth.ethertype, eth.tags, eth.payload) == (f.BROADCAST_MAC, MAC, 0x0800, tags, b"x" * 80)
    assert eth.vid == (tags[0].vid if tags else None)


def test_ethernet_tag_bytes():
    """A tag is TPID then PCP(3) DEI(1) VID(12)."""
    raw = f.build_ethernet(f.BROADCAST_MAC, MAC, 0x0800, b"", [f.VlanTag(0x384, 5)])
    assert raw[12:18] == bytes.fromhex("8100a3840800")


def test_ethernet_pads_to_60_bytes():
    """Short frames are zero-padded to the 60-byte minimum; long ones are not."""
    assert len(f.build_ethernet(MAC, MAC, 0x888E, b"ab")) == 60
    assert len(f.build_ethernet(MAC, MAC, 0x888E, b"a" * 100)) == 114


def test_ethernet_rejects_short_frames_and_three_tags():
    """Fewer than 14 bytes, a truncated tag or a third tag are PacketErrors."""
    with pytest.raises(f.PacketError):
        f.parse_ethernet(b"\x00" * 13)
    with pytest.raises(f.PacketError):
        f.parse_ethernet(MAC + MAC + b"\x81\x00\x00")
    three = MAC + MAC + bytes.fromhex("81000001" "81000002" "81000003" "0800") + b"\0" * 40
    with pytest.raises(f.PacketError, match="more than 2 VLAN tags"):
        f.parse_ethernet(three)


def test_mac_and_ip_helpers():
    """MAC and IPv4 text convert to bytes and back; bad text is a PacketError."""
    assert f.mac_str(f.mac_bytes("2e:00:0a:01:00:ff")) == "2e:00:0a:01:00:ff"
    assert f.ip_str(f.ip_bytes("224.1.2.3")) == "224.1.2.3"
    for bad in ("2e:00", "zz:00:00:00:00:00", 5):
        with pytest.raises(f.PacketError):
            f.mac_bytes(bad)
    for bad in ("1", "300.1.1.1", None):
        with pytest.raises(f.PacketError):
            f.ip_bytes(bad)


# ---- EAPOL / EAP --------------------------------------------------------------------------------

def test_eapol_start_bytes_match_bbsim():
    """EAPOL-Start is 0180c2000003 <mac> 888e 01 01 0000 padded with zeros to 60 bytes (reference 4.5)."""
    expected = bytes.fromhex("0180c2000003" "2e0000010000" "888e" "01" "01" "0000") + bytes(42)
    assert eapol.eapol_start_frame(MAC) == expected


def test_identity_response_bytes():
    """EAP-Response/Identity: from the service MAC to the PAE group address (BBSim's went to its own source), then
    BBSim's bytes: EAPOL type 0 length 9, EAP 02 id 0009 01 'user'."""
    raw = eapol.identity_response_frame(MAC, 7)
    assert raw[:23] == bytes.fromhex("0180c2000003") + MAC + bytes.fromhex("888e" "01" "00" "0009" "02" "07" "0009"
                                                                           "01")
    assert raw[23:27] == b"user"
    assert len(raw) == 60 and raw[27:] == bytes(33)


def test_md5_response_bytes():
    """EAP-Response/MD5: length 22, value size 0x10, value MD5(id || 'password' || challenge)."""
    challenge = bytes(range(16))
    raw = eapol.md5_response_frame(MAC, 3, challenge)
    assert raw[:12] == f.PAE_GROUP_MAC + MAC
    assert raw[14:18] == bytes.fromhex("01000016")
    assert raw[18:24] == bytes.fromhex("02030016" "04" "10")
    assert raw[24:40] == hashlib.md5(b"\x03password" + challenge).digest()


def test_the_authenticators_frames_come_from_the_olt_side_to_the_service_mac():
    """EAP-Request/Identity, Request/MD5, Success and Failure go to the service MAC from the authenticator's MAC
    (02:00:00:00:00:01 unless another is given), never from the service MAC itself."""
    other = bytes.fromhex("0a0a0a0a0a00")
    for raw in (eapol.identity_request_frame(MAC, 1), eapol.md5_request_frame(MAC, 2, bytes(16)),
                eapol.success_frame(MAC, 2), eapol.failure_frame(MAC, 2)):
        assert raw[:14] == MAC + bytes.fromhex("020000000001") + bytes.fromhex("888e"), raw.hex()
    assert eapol.success_frame(MAC, 2, other)[:12] == MAC + other


def test_eap_parse_each_code():
    """Request/Response carry type and data; Success/Failure have none; unknown codes are errors."""
    req = f.parse_eap(f.build_eap(f.EAP_REQUEST, 1, f.EAP_TYPE_IDENTITY, b"hi"))
    assert (req.code, req.id, req.type, req.data) == (1, 1, 1, b"hi")
    assert f.parse_eap(f.build_eap(f.EAP_SUCCESS, 9)) == f.Eap(3, 9, None, b"")
    assert f.parse_eap(f.build_eap(f.EAP_FAILURE, 9)).code == 4
    with pytest.raises(f.PacketError, match="unknown EAP code"):
        f.parse_eap(bytes.fromhex("09010004"))
    with pytest.raises(f.PacketError):
        f.parse_eap(bytes.fromhex("01010004"))  # a request without a type
    with pytest.raises(f.PacketError):
        f.parse_eap(bytes.fromhex("0101ffff01"))


def test_bbr_style_success_with_trailing_type_data_parses():
    """BBR's EAP-Success claims length 9 with a type byte and 'user'; it still decodes as Success."""
    body = bytes.fromhex("03050009") + b"\x00user"
    frame = f.decode(f.build_ethernet(MAC, MAC, f.ETH_EAPOL, f.build_eapol(0, body)))
    assert frame.kind == "eapol" and frame.eap.code == f.EAP_SUCCESS and frame.eap.id == 5


def test_eapol_length_beyond_frame_is_error():
    """An EAPOL length larger than the bytes present is a PacketError."""
    with pytest.raises(f.PacketError, match="EAPOL length"):
        f.decode(MAC + MAC + bytes.fromhex("888e" "0100" "00ff") + b"\x01\x01\x00\x05\x01")


def test_eapol_logoff_decodes_without_eap():
    """EAPOL-Logoff decodes with no EAP layer."""
    frame = f.decode(f.build_ethernet(f.PAE_GROUP_MAC, MAC, f.ETH_EAPOL, f.build_eapol(f.EAPOL_LOGOFF)))
    assert frame.kind == "eapol" and frame.eap is None and frame.eapol.type_name == "Logoff"


# ---- IPv4 / UDP ---------------------------------------------------------------------------------

def test_ipv4_udp_checksums_verify():
    """Built IPv4 headers and UDP datagrams carry checksums that verify independently."""
    src, dst = f.ip_bytes("10.1.2.3"), f.ip_bytes("10.9.8.7")
    packet = f.build_ipv4_udp(src, dst, 1234, 67, b"hello world!!", tos=0x10, ttl=128)
    ip = f.parse_ipv4(packet)
    assert ones_sum_ok(ip.header) and f.ipv4_header_ok(ip)
    pseudo = src + dst + struct.pack("!BBH", 0, 17, len(ip.payload))
    assert ones_sum_ok(pseudo + ip.payload) and f.udp_checksum_ok(ip)
    assert (ip.tos, ip.ttl, ip.proto) == (0x10, 128, 17)
    udp = f.parse_udp(ip.payload)
    assert (udp.src_port, udp.dst_port, udp.payload) == (1234, 67, b"hello world!!")


def test_ipv4_trims_ethernet_padding():
    """The IPv4 total length, not the frame, bounds the payload (padding is dropped)."""
    packet = f.build_ipv4(f.ZERO_IP, f.BROADCAST_IP, 2, b"12345678") + bytes(20)
    assert f.parse_ipv4(packet).payload == b"12345678"


def test_ipv4_options_padded_and_counted():
    """Options are padded to 32 bits and counted in the header length."""
    ip = f.parse_ipv4(f.build_ipv4(f.ZERO_IP, f.ZERO_IP, 2, b"", options=f.ROUTER_ALERT))
    assert ip.options == f.ROUTER_ALERT and len(ip.header) == 24 and f.ipv4_header_ok(ip)


@pytest.mark.parametrize("raw", [
    b"\x45" + bytes(18),                               # short
    b"\x65" + bytes(19),                               # version 6
    b"\x44" + bytes(19),                               # header length 16
    bytes.fromhex("4500ffff") + bytes(16),             # total length beyond data
])
def test_ipv4_malformed_headers(raw):
    """Short, wrong-version, bad header-length and overlong IPv4 packets are PacketErrors."""
    with pytest.raises(f.PacketError):
        f.parse_ipv4(raw)


# ---- DHCP ---------------------------------------------------------------------------------------

def test_dhcp_build_parse_round_trip():
    """Options survive in order; the message is padded to 300 bytes after End."""
    opts = [(53, b"\x01"), (12, b"host"), (82, b"")]
    raw = f.build_dhcp(1, 0x1234, MAC, opts, yiaddr=f.ip_bytes("10.1.0.0"))
    assert len(raw) == 300 and raw[236:240] == bytes.fromhex("63825363")
    msg = f.parse_dhcp(raw)
    assert msg.options == tuple(opts) and msg.message_type == 1 and msg.type_name == "Discover"
    assert (msg.op, msg.htype, msg.hlen, msg.xid, msg.client_mac) == (1, 1, 6, 0x1234, MAC)
    assert msg.yiaddr == f.ip_bytes("10.1.0.0") and msg.option(99) is None


def test_dhcp_pad_options_and_missing_end_tolerated():
    """Pad options are skipped and a missing End option is accepted."""
    raw = f.build_dhcp(2, 1, MAC, [])[:240] + bytes((0, 0, 53, 1, 5))
    assert f.parse_dhcp(raw).message_type == f.DHCP_ACK


@pytest.mark.parametrize("tail", [bytes((53,)), bytes((53, 4, 1))])
def test_dhcp_truncated_option_is_error(tail):
    """An option whose length runs past the message is a PacketError."""
    with pytest.raises(f.PacketError, match="truncated"):
        f.parse_dhcp(f.build_dhcp(1, 1, MAC, [])[:240] + tail)


def test_dhcp_without_magic_cookie_is_error():
    """A BOOTP message without the DHCP magic cookie is a PacketError."""
    raw = bytearray(f.build_dhcp(1, 1, MAC, []))
    raw[236] = 0
    with pytest.raises(f.PacketError, match="magic"):
        f.parse_dhcp(bytes(raw))


def test_dhcp_type_name_without_type():
    """A message without option 53 reports 'no message type'."""
    assert f.parse_dhcp(f.build_dhcp(2, 1, MAC, [])).type_name == "no message type"


# ---- IGMP ---------------------------------------------------------------------------------------

def test_igmp_v2_messages_and_checksum():
    """v2 report/leave are 8 bytes with a valid checksum and the group address."""
    group = f.ip_bytes("224.0.0.5")
    for mtype in (f.IGMP_V2_REPORT, f.IGMP_V2_LEAVE):
        raw = f.build_igmp_v2(mtype, group)
        assert len(raw) == 8 and raw[0] == mtype and ones_sum_ok(raw)
        msg = f.parse_igmp(raw)
        assert (msg.type, msg.group, msg.version) == (mtype, group, 2)


def test_igmp_v3_report_round_trip():
    """A v3 report carries its records (type, group, sources) and a valid checksum."""
    recs = [f.IgmpRecord(2, f.ip_bytes("224.1.1.1")), f.IgmpRecord(1, f.ip_bytes("224.1.1.2"), (b"\x0a\0\0\1",))]
    raw = f.build_igmp_v3_report(recs)
    assert ones_sum_ok(raw)
    msg = f.parse_igmp(raw)
    assert msg.version == 3 and msg.records == tuple(recs)


def test_igmp_queries_v2_and_v3():
    """Membership queries decode as type 0x11, version 2 or 3 by length."""
    assert f.parse_igmp(f.build_igmp_v2(f.IGMP_QUERY, f.ZERO_IP, 100)).version == 2
    v3 = f.parse_igmp(f.build_igmp_v3_query(f.ip_bytes("224.1.1.1")))
    assert (v3.type, v3.version, v3.group) == (0x11, 3, f.ip_bytes("224.1.1.1"))


def test_igmp_truncated_v3_record_is_error():
    """A v3 report announcing more records than present is a PacketError."""
    with pytest.raises(f.PacketError, match="truncated"):
        f.parse_igmp(bytes.fromhex("2200000000000002") + bytes(8))


# ---- decode -------------------------------------------------------------------------------------

def test_decode_classifies_frames():
    """decode names the protocol: eapol, dhcp, igmp, icmpv6, lldp, other."""
    mac = MAC
    assert f.decode(eapol.eapol_start_frame(mac)).kind == "eapol"
    assert f.decode(dhcp.discover_frame(mac, 900, 0, 1, 0, 1)).kind == "dhcp"
    assert f.decode(igmp.join_v2_frame(mac, f.ip_bytes("224.0.0.9"), 55, 5)).kind == "igmp"
    ipv6 = bytes((0x60,)) + bytes(5) + bytes((58, 255)) + bytes(32) + b"\x87\0\0\0"
    assert f.decode(f.build_ethernet(mac, mac, f.ETH_IPV6, ipv6)).kind == "icmpv6"
    assert f.decode(f.build_ethernet(mac, mac, f.ETH_LLDP, b"")).kind == "lldp"
    assert f.decode(f.build_ethernet(mac, mac, 0x0806, b"")).kind == "other"
    udp = f.build_ipv4_udp(f.ZERO_IP, f.ZERO_IP, 5000, 53, b"q")
    assert f.decode(f.build_ethernet(mac, mac, f.ETH_IPV4, udp)).kind == "other"


def test_decode_rejects_non_bytes():
    """A value that is not bytes is a PacketError, not a TypeError."""
    with pytest.raises(f.PacketError):
        f.decode("not bytes")
    assert f.decode(bytearray(eapol.eapol_start_frame(MAC))).kind == "eapol"


def _valid_frames():
    g = f.ip_bytes("224.0.0.9")
    offer = dhcp.DhcpServer().answer(f.decode(dhcp.discover_frame(MAC, 900, 0, 1, 0, 1)))
    return [
        eapol.eapol_start_frame(MAC), eapol.identity_request_frame(MAC, 1),
        eapol.md5_request_frame(MAC, 2, bytes(16)), eapol.success_frame(MAC, 2),
        dhcp.discover_frame(MAC, 900, 0, 1, 0, 1), offer,
        igmp.join_v2_frame(MAC, g, 55, 5), igmp.join_v3_frame(MAC, g, 55, 5), igmp.query_frame(55, v3=True),
    ]


def test_every_truncation_of_valid_frames_raises_only_packet_error():
    """Every prefix of a valid frame either decodes or raises PacketError."""
    for raw in _valid_frames():
        for n in range(len(raw)):
            try:
                f.decode(raw[:n])
            except f.PacketError:
                pass


def test_random_bytes_raise_only_packet_error():
    """Random byte strings (fixed seed) never raise anything but PacketError."""
    rng = random.Random(1234)
    for _ in range(3000):
        raw = rng.randbytes(rng.randrange(0, 400))
        try:
            f.decode(raw)
        except f.PacketError:
            pass


def test_mutated_valid_frames_raise_only_packet_error():
    """Valid frames with random bytes overwritten (fixed seed) never raise anything but PacketError."""
    rng = random.Random(99)
    frames = _valid_frames()
    for _ in range(4000):
        raw = bytearray(rng.choice(frames))
        for _ in range(rng.randrange(1, 6)):
            raw[rng.randrange(len(raw))] = rng.randrange(256)
        try:
            f.decode(bytes(raw))
        except f.PacketError:
            pass
