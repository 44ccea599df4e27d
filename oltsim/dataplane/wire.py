"""Reading and rewriting the parts of an Ethernet frame the data plane decides on, cheaply (once per frame).

`peel(frame)` gives a frame's signature: its VLAN tags (up to two, outermost first, as the octets after the source
MAC and as `(tpid, tci)` pairs), the EtherType after them, and for IPv4 the protocol and the 4 octets of TCP/UDP
ports. Frames with the same signature get the same decision, which the pipeline caches.
"""
from __future__ import annotations

TPIDS = frozenset((0x8100, 0x88A8, 0x9100))
ETH_IPV4 = 0x0800
ETH_EAPOL = 0x888E
IP_TCP = 6
IP_UDP = 17
MAX_TAGS = 2
DHCP_PORTS = frozenset((67, 68))


def peel(frame: bytes):
    """(tag octets, tags, ethertype, ip protocol, port octets) of `frame`; None when it is shorter than an
    Ethernet header or a tag is cut short. IP protocol is -1 and ports b"" for anything but IPv4."""
    n = len(frame)
    if n < 14:
        return None
    off = 12
    et = (frame[12] << 8) | frame[13]
    tags = ()
    while et in TPIDS and len(tags) < MAX_TAGS:
        if n < off + 6:             # the tag's TPID and TCI, then the EtherType after it
            return None
        tags += ((et, (frame[off + 2] << 8) | frame[off + 3]),)
        off += 4
        et = (frame[off] << 8) | frame[off + 1]
    proto, ports = -1, b""
    if et == ETH_IPV4:
        ip = off + 2
        if n >= ip + 20:
            proto = frame[ip + 9]
            if proto == IP_TCP or proto == IP_UDP:
                l4 = ip + (frame[ip] & 15) * 4
                ports = frame[l4:l4 + 4]
    return frame[12:off], tags, et, proto, ports


def ports_of(ports: bytes) -> tuple[int, int]:
    """(source port, destination port) from the 4 port octets (0, 0 when absent)."""
    if len(ports) < 4:
        return 0, 0
    return (ports[0] << 8) | ports[1], (ports[2] << 8) | ports[3]


def is_dhcp(proto: int, ports: bytes) -> bool:
    """A UDP datagram to or from the DHCP ports."""
    if proto != IP_UDP:
        return False
    sport, dport = ports_of(ports)
    return sport in DHCP_PORTS or dport in DHCP_PORTS


def retag(frame: bytes, old_len: int, new_tags: bytes) -> bytes:
    """`frame` with its `old_len` octets of tags replaced by `new_tags`."""
    return frame[:12] + new_tags + frame[12 + old_len:]
