"""The virtio-net header a TAP opened with IFF_VNET_HDR puts in front of every frame: parsing, building, adjusting.

With offloads on (``TUNSETOFFLOAD``), the kernel hands the reader a TCP stream's data as GSO super-frames (up to
64 KiB, one IP/TCP header for many segments of ``gso_size`` octets) and leaves checksums for the reader to finish
(``VIRTIO_NET_HDR_F_NEEDS_CSUM``: the sum from ``csum_start`` to the end goes at ``csum_start + csum_offset``); a
frame written with such a header is segmented (or delivered whole to a local stack) and checksummed by the kernel.

The header (``struct virtio_net_hdr``, 10 octets, `SIZE`; the data plane sets TUNSETVNETHDRSZ to it and
TUNSETVNETLE, so its fields are little-endian whatever the host; without it a TAP uses the host's order, the
legacy virtio header's, which is the same on x86 and arm64): flags (1), gso_type (1), hdr_len (2), gso_size
(2), csum_start (2), csum_offset (2). ``csum_start`` and ``hdr_len`` count from the frame's first octet, its
Ethernet header and VLAN tags included: a tag pushed moves them 4 octets on, a tag popped 4 back (`shifted`).

The data plane carries a header as the 10 octets read (bytes), and only for frames that need one (`needs_header`:
a checksum to finish or GSO); a frame without is written with `PLAIN`. Pure: no I/O.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass

__all__ = ["F_DATA_VALID", "F_NEEDS_CSUM", "GSO_ECN", "GSO_NONE", "GSO_TCPV4", "GSO_TCPV6", "GSO_UDP",
           "GSO_UDP_L4", "PLAIN", "SIZE", "VnetError", "VnetHeader", "build", "completed", "is_gso",
           "needs_header", "on_wire", "parse", "segment_size", "shifted"]

SIZE = 10
#: the header of a frame with nothing to offload
PLAIN = bytes(SIZE)
F_NEEDS_CSUM = 1
F_DATA_VALID = 2
GSO_NONE = 0
GSO_TCPV4 = 1
GSO_UDP = 3           # UFO: one UDP datagram in IP fragments
GSO_TCPV6 = 4
GSO_UDP_L4 = 5        # USO: UDP datagrams of gso_size each
GSO_ECN = 0x80
_GSO_KINDS = (GSO_TCPV4, GSO_UDP, GSO_TCPV6, GSO_UDP_L4)
_FORMAT = struct.Struct("<BBHHHH")
#: hdr_len (octets 2-3) and csum_start (6-7) as one little-endian integer's fields: `shifted` adds to both at once
_HDR_LEN_ONE = 1 << 16
_CSUM_START_ONE = 1 << 48
#: the headers taken per segment where the header gives no checksum start to measure them from (UFO's fragments):
#: an Ethernet and an IPv4 header
_UNMEASURED = 14 + 20


class VnetError(ValueError):
    """Octets that are not a virtio-net header, or a frame that does not agree with its header."""


@dataclass(frozen=True, slots=True)
class VnetHeader:
    """The fields of a virtio-net header (``struct virtio_net_hdr``)."""
    flags: int = 0
    gso_type: int = GSO_NONE
    hdr_len: int = 0
    gso_size: int = 0
    csum_start: int = 0
    csum_offset: int = 0

    @property
    def gso(self) -> int:
        """The GSO kind without its ECN bit (GSO_NONE: a frame of its own)."""
        return self.gso_type & ~GSO_ECN


def parse(octets: bytes) -> VnetHeader:
    """The header at the start of `octets` (at least `SIZE` of them; VnetError otherwise, or for a GSO kind the
    kernel does not define)."""
    if len(octets) < SIZE:
        raise VnetError(f"a virtio-net header is {SIZE} octets, not {len(octets)}")
    header = VnetHeader(*_FORMAT.unpack_from(octets))
    if header.gso != GSO_NONE and header.gso not in _GSO_KINDS:
        raise VnetError(f"unknown GSO type {header.gso_type:#x}")
    return header


def build(header: VnetHeader) -> bytes:
    """The `SIZE` octets of `header`."""
    return _FORMAT.pack(header.flags, header.gso_type, header.hdr_len, header.gso_size, header.csum_start,
                        header.csum_offset)


def needs_header(octets: bytes) -> bool:
    """Whether a frame read with these header octets needs its header carried: a checksum to finish or GSO (a
    frame with neither, or only DATA_VALID, is an ordinary frame and is written with `PLAIN`)."""
    return bool(octets[0] & F_NEEDS_CSUM or octets[1])


def is_gso(octets: bytes) -> bool:
    """Whether these header octets describe a GSO super-frame."""
    return octets[1] & ~GSO_ECN != GSO_NONE


def shifted(octets: bytes, delta: int) -> bytes:
    """The header of the same frame once `delta` octets of VLAN tags were put in (positive) or taken out (negative)
    after its Ethernet addresses: csum_start moves with it (when there is a checksum to finish), hdr_len too (when
    given: it counts the Ethernet header). The same octets when `delta` is 0. Never raises: a csum_start the tags
    taken out would move before the frame (a header no stack makes) stops at 0, and the kernel refuses the frame
    written with it (counted as its interface's ``write-einval``)."""
    if not delta:
        return octets
    flags, _, hdr_len, _, csum_start, _ = _FORMAT.unpack_from(octets)
    step = 0
    if flags & F_NEEDS_CSUM:
        step += (delta if csum_start + delta > 0 else -csum_start) * _CSUM_START_ONE
    if hdr_len:
        step += (delta if hdr_len + delta > 0 else -hdr_len) * _HDR_LEN_ONE
    return (int.from_bytes(octets[:SIZE], "little") + step).to_bytes(SIZE, "little")


def _headers(frame: bytes, csum_start: int, gso: int) -> int:
    """The octets before a segment's payload: the Ethernet header, tags, IP header and TCP or UDP header."""
    if gso in (GSO_TCPV4, GSO_TCPV6):
        if len(frame) < csum_start + 20:
            raise VnetError("a TCP super-frame shorter than its headers")
        return csum_start + (frame[csum_start + 12] >> 4) * 4
    return csum_start + 8


def segment_size(octets: bytes, frame: bytes, cut: int) -> int:
    """The octets after the Ethernet header and tags (the EtherType at `cut`) of the largest segment a GSO
    super-frame makes: what an MTU judges it by."""
    flags, gso_type, _, gso_size, csum_start, _ = _FORMAT.unpack_from(octets)
    gso = gso_type & ~GSO_ECN
    if gso == GSO_UDP or not flags & F_NEEDS_CSUM:
        # UFO makes IP fragments of gso_size; a super-frame without a checksum start has no headers to measure
        return gso_size + 20
    return _headers(frame, csum_start, gso) - cut - 2 + gso_size


def on_wire(octets: bytes, frame: bytes) -> tuple[int, int]:
    """(segments, octets) `frame` is on the wire: one and its length for a frame of its own; for a GSO super-frame
    the segments it makes and their octets (its payload and, per segment, the headers before it)."""
    flags, gso_type, _, gso_size, csum_start, _ = _FORMAT.unpack_from(octets)
    gso = gso_type & ~GSO_ECN
    if gso == GSO_NONE or not gso_size:
        return 1, len(frame)
    if gso == GSO_UDP or not flags & F_NEEDS_CSUM:
        headers = _UNMEASURED
    else:
        headers = _headers(frame, csum_start, gso)
    payload = max(len(frame) - headers, 0)
    segments = max(1, -(-payload // gso_size))
    return segments, payload + segments * headers


def completed(octets: bytes, frame: bytes) -> bytes:
    """`frame` with the checksum its header leaves to finish (NEEDS_CSUM) finished, as the kernel's
    skb_checksum_help does: for a destination that takes no header (the adapter, a VXLAN segment, a TAP without
    offloads). The same frame when there is none to finish; VnetError for a GSO super-frame (it has one per segment)
    or offsets outside the frame."""
    flags, gso_type, _, _, start, offset = _FORMAT.unpack_from(octets)
    if gso_type & ~GSO_ECN != GSO_NONE:
        raise VnetError("a GSO super-frame has a checksum per segment")
    if not flags & F_NEEDS_CSUM:
        return frame
    at = start + offset
    if at + 2 > len(frame) or start < 14:
        raise VnetError(f"checksum at {start}+{offset} outside a frame of {len(frame)} octets")
    covered = frame[start:]
    if len(covered) & 1:
        covered += b"\0"
    # the ones' complement sum of 16-bit words is the number modulo 0xffff (2**16 is 1 modulo 0xffff); the field
    # holds the pseudo-header's sum already
    rest = int.from_bytes(covered, "big") % 0xFFFF
    checksum = 0xFFFF - rest if rest else 0xFFFF
    return frame[:at] + checksum.to_bytes(2, "big") + frame[at + 2:]
