"""Wire codecs for the frames the simulated subscribers exchange: Ethernet with up to two
802.1Q tags, EAPOL and EAP, IPv4 and UDP (with checksums), DHCP/BOOTP, IGMP v2 and v3.

Pure functions over `bytes`: no I/O, no global state. Parsing is defensive: malformed
input raises `PacketError` (a `ValueError`) and nothing else, whatever the bytes; a
well-formed frame of a protocol the simulator does not speak is not an error (`decode`
reports it with kind "other"). Builders assume sane arguments from our own code.
"""
from __future__ import annotations

import ipaddress
import struct
from dataclasses import dataclass

# ---- constants ----------------------------------------------------------------------------

ETH_IPV4 = 0x0800
ETH_IPV6 = 0x86DD
ETH_EAPOL = 0x888E
ETH_LLDP = 0x88CC
TPID_8021Q = 0x8100
#: Tag protocol identifiers accepted when parsing (802.1Q, 802.1ad and the old QinQ value).
TPIDS = frozenset({0x8100, 0x88A8, 0x9100})
MAX_TAGS = 2
MIN_FRAME = 60  # without FCS

BROADCAST_MAC = b"\xff" * 6
PAE_GROUP_MAC = bytes.fromhex("0180c2000003")

IP_PROTO_IGMP = 2
IP_PROTO_UDP = 17
IP_PROTO_ICMPV6 = 58
ZERO_IP = b"\x00" * 4
BROADCAST_IP = b"\xff" * 4
#: IPv4 Router Alert option (RFC 2113), carried by IGMP messages.
ROUTER_ALERT = b"\x94\x04\x00\x00"

EAPOL_EAP = 0
EAPOL_START = 1
EAPOL_LOGOFF = 2
EAPOL_TYPE_NAMES = {0: "EAP-Packet", 1: "Start", 2: "Logoff", 3: "Key", 4: "Encapsulated-ASF-Alert"}

EAP_REQUEST = 1
EAP_RESPONSE = 2
EAP_SUCCESS = 3
EAP_FAILURE = 4
EAP_TYPE_IDENTITY = 1
EAP_TYPE_MD5 = 4  # MD5-Challenge (gopacket calls it OTP)

DHCP_SERVER_PORT = 67
DHCP_CLIENT_PORT = 68
DHCP_MAGIC = 0x63825363
BOOTREQUEST = 1
BOOTREPLY = 2
DHCP_DISCOVER, DHCP_OFFER, DHCP_REQUEST, DHCP_DECLINE, DHCP_ACK, DHCP_NAK, DHCP_RELEASE, DHCP_INFORM = range(1, 9)
DHCP_TYPE_NAMES = {1: "Discover", 2: "Offer", 3: "Request", 4: "Decline", 5: "Ack", 6: "Nak",
                   7: "Release", 8: "Inform"}
OPT_PAD = 0
OPT_END = 255
OPT_HOSTNAME = 12
OPT_REQUESTED_IP = 50
OPT_MESSAGE_TYPE = 53
OPT_SERVER_ID = 54
OPT_PARAMS = 55
OPT_CLIENT_ID = 61
OPT_RELAY_AGENT = 82
DHCP_MIN_LEN = 300  # BOOTP minimum message size

IGMP_QUERY = 0x11
IGMP_V1_REPORT = 0x12
IGMP_V2_REPORT = 0x16
IGMP_V2_LEAVE = 0x17
IGMP_V3_REPORT = 0x22
IGMP_MODE_IS_EXCLUDE = 2
IGMPV3_ROUTERS = bytes((224, 0, 0, 22))


class PacketError(ValueError):
    """The bytes are not a well-formed frame; the message says what is wrong, for people."""


# ---- addresses ----------------------------------------------------------------------------

def mac_bytes(mac: str) -> bytes:
    """'2e:00:00:01:00:00' -> 6 bytes; raises PacketError when it is not a MAC address."""
    parts = mac.split(":") if isinstance(mac, str) else []
    if len(parts) != 6 or not all(len(p) == 2 for p in parts):
        raise PacketError(f"not a MAC address: {mac!r}")
    try:
        return bytes(int(p, 16) for p in parts)
    except ValueError:
        raise PacketError(f"not a MAC address: {mac!r}") from None


def mac_str(mac: bytes) -> str:
    """6 bytes -> '2e:00:00:01:00:00'."""
    return ":".join("%02x" % b for b in mac)


def ip_bytes(address: str) -> bytes:
    """'10.1.0.0' -> 4 bytes; raises PacketError when it is not a dotted IPv4 address."""
    try:
        return ipaddress.IPv4Address(address).packed
    except (ipaddress.AddressValueError, ValueError, TypeError):
        raise PacketError(f"not an IPv4 address: {address!r}") from None


def ip_str(address: bytes) -> str:
    """4 bytes -> '10.1.0.0'."""
    return ".".join(str(b) for b in address)


def inet_checksum(data: bytes) -> int:
    """The Internet checksum (RFC 1071) of `data`: ones' complement of the ones' complement sum."""
    if len(data) % 2:
        data += b"\x00"
    total = sum(struct.unpack("!%dH" % (len(data) // 2), data))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


# ---- Ethernet -----------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class VlanTag:
    """One 802.1Q tag: VLAN id, priority (PCP), drop eligibility and its TPID."""
    vid: int
    pcp: int = 0
    dei: int = 0
    tpid: int = TPID_8021Q

    def pack(self) -> bytes:
        return struct.pack("!HH", self.tpid, (self.pcp & 7) << 13 | (self.dei & 1) << 12 | (self.vid & 0xFFF))


@dataclass(frozen=True, slots=True)
class Ethernet:
    """An Ethernet frame: `tags` outermost first; `payload` includes any padding."""
    dst: bytes
    src: bytes
    ethertype: int
    tags: tuple[VlanTag, ...]
    payload: bytes

    @property
    def vid(self) -> int | None:
        """The outer VLAN id, None when untagged."""
        return self.tags[0].vid if self.tags else None


def parse_ethernet(data: bytes) -> Ethernet:
    """Split a frame into addresses, tags, EtherType and payload (at most two tags)."""
    data = _as_bytes(data)
    if len(data) < 14:
        raise PacketError(f"an Ethernet frame needs at least 14 bytes (got {len(data)})")
    (ethertype,) = struct.unpack_from("!H", data, 12)
    offset, tags = 14, []
    while ethertype in TPIDS:
        if len(tags) == MAX_TAGS:
            raise PacketError(f"more than {MAX_TAGS} VLAN tags")
        if len(data) < offset + 4:
            raise PacketError("truncated 802.1Q tag")
        tci, next_type = struct.unpack_from("!HH", data, offset)
        tags.append(VlanTag(tci & 0xFFF, tci >> 13, (tci >> 12) & 1, ethertype))
        ethertype, offset = next_type, offset + 4
    return Ethernet(data[0:6], data[6:12], ethertype, tuple(tags), data[offset:])


def build_ethernet(dst: bytes, src: bytes, ethertype: int, payload: bytes,
                   tags: tuple[VlanTag, ...] | list = (), pad: bool = True) -> bytes:
    """A frame with `tags` (outermost first), zero-padded to the 60-byte minimum."""
    frame = dst + src + b"".join(t.pack() for t in tags) + struct.pack("!H", ethertype) + payload
    if pad and len(frame) < MIN_FRAME:
        frame += bytes(MIN_FRAME - len(frame))
    return frame


# ---- EAPOL / EAP --------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Eapol:
    """An EAPOL header and its body (`body` has exactly `length` bytes, padding dropped)."""
    version: int
    type: int
    body: bytes

    @property
    def type_name(self) -> str:
        return EAPOL_TYPE_NAMES.get(self.type, f"type {self.type}")


@dataclass(frozen=True, slots=True)
class Eap:
    """An EAP packet; `type` and `data` are None/empty for Success and Failure."""
    code: int
    id: int
    type: int | None
    data: bytes


def parse_eapol(payload: bytes) -> Eapol:
    if len(payload) < 4:
        raise PacketError(f"an EAPOL header needs 4 bytes (got {len(payload)})")
    version, ptype, length = struct.unpack_from("!BBH", payload, 0)
    if len(payload) < 4 + length:
        raise PacketError(f"EAPOL length {length} exceeds the {len(payload) - 4} bytes present")
    return Eapol(version, ptype, payload[4:4 + length])


def build_eapol(ptype: int, body: bytes = b"", version: int = 1) -> bytes:
    return struct.pack("!BBH", version, ptype, len(body)) + body


def parse_eap(body: bytes) -> Eap:
    if len(body) < 4:
        raise PacketError(f"an EAP header needs 4 bytes (got {len(body)})")
    code, eap_id, length = struct.unpack_from("!BBH", body, 0)
    if length < 4 or length > len(body):
        raise PacketError(f"EAP length {length} is inconsistent with the {len(body)} bytes present")
    if code in (EAP_REQUEST, EAP_RESPONSE):
        if length < 5:
            raise PacketError("an EAP Request or Response needs a type")
        return Eap(code, eap_id, body[4], body[5:length])
    if code in (EAP_SUCCESS, EAP_FAILURE):
        return Eap(code, eap_id, None, b"")
    raise PacketError(f"unknown EAP code {code}")


def build_eap(code: int, eap_id: int, eap_type: int | None = None, data: bytes = b"") -> bytes:
    if eap_type is None:
        return struct.pack("!BBH", code, eap_id & 0xFF, 4)
    return struct.pack("!BBHB", code, eap_id & 0xFF, 5 + len(data), eap_type) + data


# ---- IPv4 / UDP ---------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class IPv4:
    """An IPv4 header (options raw) and its payload (trimmed to the total length)."""
    src: bytes
    dst: bytes
    proto: int
    tos: int
    ttl: int
    ident: int
    options: bytes
    checksum: int
    payload: bytes
    header: bytes


def parse_ipv4(data: bytes) -> IPv4:
    if len(data) < 20:
        raise PacketError(f"an IPv4 header needs 20 bytes (got {len(data)})")
    vihl, tos, total, ident, _frag, ttl, proto, csum = struct.unpack_from("!BBHHHBBH", data, 0)
    if vihl >> 4 != 4:
        raise PacketError(f"IP version {vihl >> 4} is not 4")
    hlen = (vihl & 0xF) * 4
    if hlen < 20 or hlen > len(data):
        raise PacketError(f"IPv4 header length {hlen} is invalid for {len(data)} bytes")
    if total < hlen or total > len(data):
        raise PacketError(f"IPv4 total length {total} is invalid for {len(data)} bytes")
    return IPv4(data[12:16], data[16:20], proto, tos, ttl, ident, data[20:hlen], csum,
                data[hlen:total], data[:hlen])


def build_ipv4(src: bytes, dst: bytes, proto: int, payload: bytes, *, tos: int = 0, ttl: int = 64,
               ident: int = 0, options: bytes = b"") -> bytes:
    """An IPv4 packet with a correct header checksum (options zero-padded to 32 bits)."""
    if len(options) % 4:
        options += bytes(4 - len(options) % 4)
    hlen = 20 + len(options)
    header = struct.pack("!BBHHHBBH4s4s", 0x40 | hlen // 4, tos, hlen + len(payload), ident, 0, ttl,
                         proto, 0, src, dst) + options
    csum = inet_checksum(header)
    return header[:10] + struct.pack("!H", csum) + header[12:] + payload


def ipv4_header_ok(ip: IPv4) -> bool:
    """True when the header checksum verifies."""
    return inet_checksum(ip.header) == 0


@dataclass(frozen=True, slots=True)
class Udp:
    src_port: int
    dst_port: int
    checksum: int
    payload: bytes


def parse_udp(data: bytes) -> Udp:
    if len(data) < 8:
        raise PacketError(f"a UDP header needs 8 bytes (got {len(data)})")
    sport, dport, length, csum = struct.unpack_from("!HHHH", data, 0)
    if length < 8 or length > len(data):
        raise PacketError(f"UDP length {length} is invalid for {len(data)} bytes")
    return Udp(sport, dport, csum, data[8:length])


def _udp_pseudo(src_ip: bytes, dst_ip: bytes, length: int) -> bytes:
    return src_ip + dst_ip + struct.pack("!BBH", 0, IP_PROTO_UDP, length)


def build_udp(src_ip: bytes, dst_ip: bytes, sport: int, dport: int, payload: bytes) -> bytes:
    """A UDP datagram with its checksum over the IPv4 pseudo-header."""
    length = 8 + len(payload)
    segment = struct.pack("!HHHH", sport, dport, length, 0) + payload
    csum = inet_checksum(_udp_pseudo(src_ip, dst_ip, length) + segment) or 0xFFFF
    return segment[:6] + struct.pack("!H", csum) + segment[8:]


def udp_checksum_ok(ip: IPv4) -> bool:
    """True when the UDP checksum of `ip`'s payload verifies (or is absent, 0)."""
    segment = ip.payload
    if len(segment) < 8 or struct.unpack_from("!H", segment, 6)[0] == 0:
        return len(segment) >= 8
    return inet_checksum(_udp_pseudo(ip.src, ip.dst, len(segment)) + segment) == 0


def build_ipv4_udp(src_ip: bytes, dst_ip: bytes, sport: int, dport: int, payload: bytes, *,
                   tos: int = 0, ttl: int = 64) -> bytes:
    return build_ipv4(src_ip, dst_ip, IP_PROTO_UDP, build_udp(src_ip, dst_ip, sport, dport, payload),
                      tos=tos, ttl=ttl)


# ---- DHCP ---------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Dhcp:
    """A BOOTP message with DHCP options, in order (`(code, data)` pairs, pads and end dropped)."""
    op: int
    htype: int
    hlen: int
    hops: int
    xid: int
    secs: int
    flags: int
    ciaddr: bytes
    yiaddr: bytes
    siaddr: bytes
    giaddr: bytes
    chaddr: bytes
    options: tuple[tuple[int, bytes], ...]

    def option(self, code: int) -> bytes | None:
        """The data of the first option `code`, None when absent."""
        for c, data in self.options:
            if c == code:
                return data
        return None

    @property
    def message_type(self) -> int | None:
        data = self.option(OPT_MESSAGE_TYPE)
        return data[0] if data is not None and len(data) == 1 else None

    @property
    def type_name(self) -> str:
        mtype = self.message_type
        return DHCP_TYPE_NAMES.get(mtype, "no message type" if mtype is None else f"type {mtype}")

    @property
    def client_mac(self) -> bytes:
        return self.chaddr[:6]


def parse_dhcp(data: bytes) -> Dhcp:
    if len(data) < 240:
        raise PacketError(f"a DHCP message needs at least 240 bytes (got {len(data)})")
    op, htype, hlen, hops, xid, secs, flags = struct.unpack_from("!BBBBIHH", data, 0)
    (magic,) = struct.unpack_from("!I", data, 236)
    if magic != DHCP_MAGIC:
        raise PacketError("BOOTP message without the DHCP magic cookie")
    options, i, n = [], 240, len(data)
    while i < n:
        code = data[i]
        if code == OPT_END:
            break
        if code == OPT_PAD:
            i += 1
            continue
        if i + 1 >= n or i + 2 + data[i + 1] > n:
            raise PacketError(f"DHCP option {code} is truncated")
        length = data[i + 1]
        options.append((code, data[i + 2:i + 2 + length]))
        i += 2 + length
    return Dhcp(op, htype, hlen, hops, xid, secs, flags, data[12:16], data[16:20], data[20:24],
                data[24:28], data[28:44], tuple(options))


def build_dhcp(op: int, xid: int, chaddr: bytes, options: list[tuple[int, bytes]], *,
               ciaddr: bytes = ZERO_IP, yiaddr: bytes = ZERO_IP, siaddr: bytes = ZERO_IP,
               giaddr: bytes = ZERO_IP, secs: int = 0, flags: int = 0) -> bytes:
    """A BOOTP/DHCP message: Ethernet hardware type, options in the given order, End,
    zero-padded to the 300-byte BOOTP minimum."""
    head = struct.pack("!BBBBIHH4s4s4s4s16s64s128sI", op, 1, 6, 0, xid & 0xFFFFFFFF, secs, flags,
                       ciaddr, yiaddr, siaddr, giaddr, chaddr, b"", b"", DHCP_MAGIC)
    body = b"".join(bytes((code, len(value))) + value for code, value in options) + bytes((OPT_END,))
    message = head + body
    if len(message) < DHCP_MIN_LEN:
        message += bytes(DHCP_MIN_LEN - len(message))
    return message


# ---- IGMP ---------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class IgmpRecord:
    """One group record of an IGMPv3 report."""
    type: int
    group: bytes
    sources: tuple[bytes, ...] = ()


@dataclass(frozen=True, slots=True)
class Igmp:
    """An IGMP message; `version` 3 for v3 reports and v3 (12+ byte) queries, else 1 or 2."""
    type: int
    max_resp: int
    checksum: int
    group: bytes
    version: int
    records: tuple[IgmpRecord, ...] = ()


def parse_igmp(data: bytes) -> Igmp:
    if len(data) < 8:
        raise PacketError(f"an IGMP message needs 8 bytes (got {len(data)})")
    mtype, max_resp, csum = struct.unpack_from("!BBH", data, 0)
    if mtype == IGMP_V3_REPORT:
        (count,) = struct.unpack_from("!H", data, 6)
        records, i = [], 8
        for _ in range(count):
            if i + 8 > len(data):
                raise PacketError("truncated IGMPv3 group record")
            rtype, aux, nsrc = struct.unpack_from("!BBH", data, i)
            group = data[i + 4:i + 8]
            end = i + 8 + 4 * nsrc + 4 * aux
            if end > len(data):
                raise PacketError("truncated IGMPv3 group record")
            sources = tuple(data[i + 8 + 4 * k:i + 12 + 4 * k] for k in range(nsrc))
            records.append(IgmpRecord(rtype, group, sources))
            i = end
        return Igmp(mtype, max_resp, csum, ZERO_IP, 3, tuple(records))
    if mtype == IGMP_QUERY:
        version = 3 if len(data) >= 12 else (2 if max_resp else 1)
    else:
        version = 1 if mtype == IGMP_V1_REPORT else 2
    return Igmp(mtype, max_resp, csum, data[4:8], version)


def build_igmp_v2(mtype: int, group: bytes, max_resp: int = 0) -> bytes:
    """An 8-byte IGMPv1/v2 message (report, leave or query) with its checksum."""
    msg = struct.pack("!BBH4s", mtype, max_resp, 0, group)
    return msg[:2] + struct.pack("!H", inet_checksum(msg)) + msg[4:]


def build_igmp_v3_report(records: list[IgmpRecord]) -> bytes:
    body = b"".join(struct.pack("!BBH4s", r.type, 0, len(r.sources), r.group) + b"".join(r.sources)
                    for r in records)
    msg = struct.pack("!BBHHH", IGMP_V3_REPORT, 0, 0, 0, len(records)) + body
    return msg[:2] + struct.pack("!H", inet_checksum(msg)) + msg[4:]


def build_igmp_v3_query(group: bytes = ZERO_IP, max_resp: int = 100) -> bytes:
    msg = struct.pack("!BBH4sBBH", IGMP_QUERY, max_resp, 0, group, 0, 125, 0)
    return msg[:2] + struct.pack("!H", inet_checksum(msg)) + msg[4:]


# ---- whole frames -------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Frame:
    """A decoded frame: `kind` is eapol, dhcp, igmp, icmpv6, lldp or other; the layers
    that apply are set, the others are None."""
    eth: Ethernet
    kind: str
    eapol: Eapol | None = None
    eap: Eap | None = None
    ip: IPv4 | None = None
    udp: Udp | None = None
    dhcp: Dhcp | None = None
    igmp: Igmp | None = None


def decode(data: bytes) -> Frame:
    """Decode an Ethernet frame as far as the simulator cares; raises only PacketError."""
    try:
        return _decode(_as_bytes(data))
    except PacketError:
        raise
    except (struct.error, IndexError, ValueError, TypeError) as exc:  # defensive: never leak these
        raise PacketError(f"malformed frame ({exc})") from None


def _decode(data: bytes) -> Frame:
    eth = parse_ethernet(data)
    etype = eth.ethertype
    if etype == ETH_EAPOL:
        eapol = parse_eapol(eth.payload)
        eap = parse_eap(eapol.body) if eapol.type == EAPOL_EAP else None
        return Frame(eth, "eapol", eapol=eapol, eap=eap)
    if etype == ETH_IPV4:
        ip = parse_ipv4(eth.payload)
        if ip.proto == IP_PROTO_UDP:
            udp = parse_udp(ip.payload)
            if {udp.src_port, udp.dst_port} & {DHCP_SERVER_PORT, DHCP_CLIENT_PORT}:
                return Frame(eth, "dhcp", ip=ip, udp=udp, dhcp=parse_dhcp(udp.payload))
            return Frame(eth, "other", ip=ip, udp=udp)
        if ip.proto == IP_PROTO_IGMP:
            return Frame(eth, "igmp", ip=ip, igmp=parse_igmp(ip.payload))
        return Frame(eth, "other", ip=ip)
    if etype == ETH_IPV6:
        if len(eth.payload) < 40 or eth.payload[0] >> 4 != 6:
            raise PacketError("truncated or invalid IPv6 header")
        return Frame(eth, "icmpv6" if eth.payload[6] == IP_PROTO_ICMPV6 else "other")
    if etype == ETH_LLDP:
        return Frame(eth, "lldp")
    return Frame(eth, "other")


def _as_bytes(data) -> bytes:
    if isinstance(data, bytes):
        return data
    if isinstance(data, (bytearray, memoryview)):
        return bytes(data)
    raise PacketError(f"a frame must be bytes (got {type(data).__name__})")
