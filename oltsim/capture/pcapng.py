"""pcapng for the capture: the few blocks Wireshark needs, as pure functions over bytes (no I/O), and
`PcapngWriter`, which writes the ring's records with them.

pcapng (draft-ietf-opsawg-pcapng) is a sequence of blocks, each ``type, total length, body, total length`` with
its body padded to 32 bits; options are ``code, length, value`` padded likewise and end with code 0. Everything is
written little-endian (the Section Header's byte-order magic says so to the reader).

- `section_header()` opens the file (one section, its length unknown: streams end when they end);
- `interface_description()` declares a capture point (link type, name); packets name it by its index, counted
  from 0 in the order the descriptions appear, which may be anywhere in the section before its first packet
  (Wireshark and tshark read descriptions that appear mid-stream, so a live capture declares an ONU's interfaces
  when its first frame arrives);
- `enhanced_packet()` is one frame with its time, an optional comment and the direction flags;
- `exported_pdu()` wraps text for LINKTYPE_WIRESHARK_UPPER_PDU, whose packets name the dissector that reads them;
  `annotation()` is one of oltsim's annotations: a ``syslog`` packet, because Wireshark's syslog dissector puts
  the text in the Info column (``data-text-lines`` leaves the packet list's row blank), never malformed, with the
  column protocol string ``oltsim`` by which oltsim.lua (`oltsim.capture.wireshark`) knows it;
- `PcapngWriter` turns records (`oltsim.capture.records`) into those blocks, one interface per capture point;
  `onu_mac` and `olt_mac` are the Ethernet addresses its OMCI frames carry.
"""
from __future__ import annotations

import struct

from oltsim import __version__
from oltsim.capture.annotations import annotation_text, omci_summary
from oltsim.capture.records import DATA, EVENT, GEM, NNI, OMCI, ONU_ID, POINT, PON, PORT, SERIAL, TIME, UNI, UP

LINKTYPE_ETHERNET = 1
#: Wireshark's "exported PDU": a few tags (the dissector's name) then the payload that dissector reads.
LINKTYPE_WIRESHARK_UPPER_PDU = 252

SHB = 0x0A0D0D0A
IDB = 0x00000001
EPB = 0x00000006
BYTE_ORDER_MAGIC = 0x1A2B3C4D

OPT_END = 0
OPT_COMMENT = 1
SHB_USERAPPL = 4
IF_NAME = 2
IF_DESCRIPTION = 3
IF_TSRESOL = 9
EPB_FLAGS = 2

#: epb_flags direction bits (bits 0-1): the frame came in on the interface, or went out of it.
INBOUND = 1
OUTBOUND = 2

#: Exported PDU tags (Wireshark's wsutil/exported_pdu_tlvs.h): big-endian type and length, value padded to 32 bits.
EXP_PDU_TAG_END_OF_OPT = 0
EXP_PDU_TAG_DISSECTOR_NAME = 12
EXP_PDU_TAG_COL_PROT_TEXT = 33
TEXT_DISSECTOR = "data-text-lines"
#: The dissector of annotations: one that shows the text in the Info column (see the module's docstring).
ANNOTATION_DISSECTOR = "syslog"
ANNOTATION_PROTOCOL = "oltsim"

#: Timestamps in microseconds, the resolution a description without if_tsresol means.
TICKS_PER_SECOND = 1_000_000


def _pad(data: bytes) -> bytes:
    return data + b"\x00" * (-len(data) % 4)


def _option(code: int, value: bytes) -> bytes:
    return struct.pack("<HH", code, len(value)) + _pad(value)


def _options(options: list[bytes]) -> bytes:
    """The options area: the options given, then opt_endofopt; nothing at all when there are none."""
    if not options:
        return b""
    return b"".join(options) + struct.pack("<HH", OPT_END, 0)


def _block(block_type: int, body: bytes) -> bytes:
    body = _pad(body)
    length = len(body) + 12
    return struct.pack("<II", block_type, length) + body + struct.pack("<I", length)


def _text(value: str) -> bytes:
    return value.encode("utf-8", "replace")


def section_header(application: str | None = None) -> bytes:
    """The Section Header Block (version 1.0, section length unknown), naming the writing `application`."""
    options = [_option(SHB_USERAPPL, _text(application))] if application else []
    body = struct.pack("<IHHq", BYTE_ORDER_MAGIC, 1, 0, -1) + _options(options)
    return _block(SHB, body)


def interface_description(linktype: int, name: str, description: str | None = None, snaplen: int = 0) -> bytes:
    """An Interface Description Block: `linktype` (LINKTYPE_*), the name Wireshark shows (if_name), an optional
    longer `description`, and `snaplen` (0: no limit)."""
    options = [_option(IF_NAME, _text(name))]
    if description:
        options.append(_option(IF_DESCRIPTION, _text(description)))
    body = struct.pack("<HHI", linktype, 0, snaplen) + _options(options)
    return _block(IDB, body)


def enhanced_packet(interface_id: int, timestamp: float, data: bytes, original_length: int | None = None,
                    comment: str | None = None, flags: int = 0) -> bytes:
    """An Enhanced Packet Block: `data` captured on interface `interface_id` at `timestamp` (seconds since the
    epoch, kept to the microsecond); `original_length` when `data` was cut short; `comment` (opt_comment) and
    `flags` (epb_flags: INBOUND or OUTBOUND) when given.

    Written in one piece (a live capture writes one per frame the OLT exchanges: the generic block helpers cost
    twice as much)."""
    ticks = int(round(timestamp * TICKS_PER_SECOND))
    if ticks < 0:
        ticks = 0
    length = len(data)
    options = b""
    if comment:
        text = _text(comment)
        options = _OPTION_HEAD.pack(OPT_COMMENT, len(text)) + text + _ZEROS[-len(text) % 4]
    if flags:
        options += _OPTION_HEAD.pack(EPB_FLAGS, 4) + _U32.pack(flags)
    if options:
        options += _END_OF_OPTIONS
    padding = _ZEROS[-length % 4]
    total = 32 + length + len(padding) + len(options)
    return b"".join((_EPB_HEAD.pack(EPB, total, interface_id, (ticks >> 32) & 0xFFFFFFFF, ticks & 0xFFFFFFFF, length,
                                    length if original_length is None else original_length),
                     data, padding, options, _U32.pack(total)))


_EPB_HEAD = struct.Struct("<IIIIIII")  # block type, total length, interface, time high and low, captured, original
_OPTION_HEAD = struct.Struct("<HH")
_U32 = struct.Struct("<I")
_ZEROS = (b"", b"\x00", b"\x00\x00", b"\x00\x00\x00")
_END_OF_OPTIONS = _OPTION_HEAD.pack(OPT_END, 0)


def exported_pdu(payload: bytes, dissector: str = TEXT_DISSECTOR, protocol: str | None = None) -> bytes:
    """A LINKTYPE_WIRESHARK_UPPER_PDU packet: `payload` handed to the Wireshark dissector named `dissector`, with
    `protocol` as the column protocol string tag when given (Wireshark shows it unless the dissector sets its own;
    a Lua plugin can read it as exported_pdu.col_proto_str)."""
    name = _pad(dissector.encode("ascii"))
    tags = struct.pack(">HH", EXP_PDU_TAG_DISSECTOR_NAME, len(name)) + name
    if protocol:
        column = _pad(protocol.encode("ascii"))
        tags += struct.pack(">HH", EXP_PDU_TAG_COL_PROT_TEXT, len(column)) + column
    return tags + struct.pack(">HH", EXP_PDU_TAG_END_OF_OPT, 0) + payload


def annotation(text: str) -> bytes:
    """The LINKTYPE_WIRESHARK_UPPER_PDU packet of one oltsim annotation (one line of text)."""
    return exported_pdu(_text(text), ANNOTATION_DISSECTOR, ANNOTATION_PROTOCOL)


def read_blocks(data: bytes):
    """(block type, body) of each whole block in `data`, in order (for tests and tools; not a validating reader):
    stops at the first incomplete block."""
    offset = 0
    while offset + 12 <= len(data):
        block_type, length = struct.unpack_from("<II", data, offset)
        if length < 12 or offset + length > len(data):
            return
        yield block_type, data[offset + 8:offset + length - 4]
        offset += length


# ---- the capture's records ----------------------------------------------------------------------

def onu_mac(olt_id: int, pon: int, onu_id: int) -> bytes:
    """The address an ONU's OMCI frames carry: 02:00:<olt>:<pon>:<onu id, 2 octets>."""
    return bytes((0x02, 0x00, olt_id & 0xFF, pon & 0xFF, (onu_id >> 8) & 0xFF, onu_id & 0xFF))


def olt_mac(olt_id: int, pon: int) -> bytes:
    """The address the OLT's side of a PON's OMCI carries: 02:ff:<olt>:<pon>:00:00."""
    return bytes((0x02, 0xFF, olt_id & 0xFF, pon & 0xFF, 0, 0))


ETH_OMCI = 0x88B5


class PcapngWriter:
    """Records -> pcapng blocks for one output: the interfaces are declared as their first packet needs them."""

    def __init__(self, capture):
        """Written for the records of `capture` (an oltsim.capture.Capture: its OLT, whose a frame is)."""
        self.capture = capture
        self.olt_id = capture.olt.id
        self.interfaces: dict = {}
        self._omci: dict = {}  # OMCI interfaces' (index, Ethernet headers), by their key in `interfaces`

    def header(self) -> bytes:
        """The Section Header Block that starts the output."""
        return section_header(f"oltsim {__version__}")

    def _interface(self, key, linktype: int, name: str, description: str) -> tuple[int, bytes]:
        index = self.interfaces.get(key)
        if index is not None:
            return index, b""
        index = self.interfaces[key] = len(self.interfaces)
        return index, interface_description(linktype, name, description)

    def _omci_interface(self, serial: str, pon: int, onu_id: int) -> tuple[int, bytes, tuple[bytes, bytes]]:
        """The interface of an ONU's OMCI channel (declared the first time: its IDB, else b"") and its Ethernet
        headers (to the ONU, from it): worked out once per ONU, since a capture writes them for every message."""
        key = (OMCI, serial, pon, onu_id)
        known = self._omci.get(key)
        if known is not None:
            return known[0], b"", known[1]
        onu, olt = onu_mac(self.olt_id, pon, onu_id), olt_mac(self.olt_id, pon)
        index, idb = self._interface(key, LINKTYPE_ETHERNET, f"{serial or f'pon-{pon}-onu-{onu_id}'} omci",
                                     f"OMCI channel of ONU {serial} (PON {pon}, ONU id {onu_id}); "
                                     f"ONU {_mac(onu)}, OLT {_mac(olt)}")
        ethertype = ETH_OMCI.to_bytes(2, "big")
        headers = (onu + olt + ethertype, olt + onu + ethertype)
        self._omci[key] = (index, headers)
        return index, idb, headers

    def note(self, timestamp: float, text: str) -> bytes:
        """An annotation of oltsim's own (dropped frames, the end of a stream) on the events interface."""
        index, idb = self._interface(EVENT, LINKTYPE_WIRESHARK_UPPER_PDU, "events", _EVENTS_DESCRIPTION)
        return idb + enhanced_packet(index, timestamp, annotation(text), comment=text)

    def block(self, record: tuple) -> bytes:
        """The blocks of one record: its interface's description the first time, then the packet."""
        point = record[POINT]
        data = record[DATA]
        if point == EVENT:
            return self.note(record[TIME], annotation_text(data))
        original = None
        if data.__class__ is tuple:
            data, original = data
        serial, pon, onu_id, up = record[SERIAL], record[PON], record[ONU_ID], record[UP]
        if point == OMCI:
            index, idb, headers = self._omci_interface(serial, pon, onu_id)
            header = headers[up]
            packet = header + data
            if original is not None:
                original += len(header)
            comment = (f"serial={serial} pon={pon} onu={onu_id} omci {'from' if up else 'to'} ONU "
                       f"{omci_summary(data)}").rstrip()
            flags = INBOUND if up else OUTBOUND
        elif point == UNI:
            port = record[PORT]
            index = self.interfaces.get((UNI, serial, port))
            if index is not None:
                idb = b""
            else:
                uni = f"uni-{port}" if port >= 0 else "uni-unknown"
                index, idb = self._interface((UNI, serial, port), LINKTYPE_ETHERNET, f"{serial} {uni}",
                                             f"UNI {port} of ONU {serial} (PON {pon}, ONU id {onu_id}): frames as "
                                             f"the subscriber sends and receives them")
            packet = data
            service = self.capture.service_of(record)
            comment = (f"serial={serial} pon={pon} onu={onu_id} uni={port} gem={record[GEM]}"
                       f"{' service=' + service if service else ''} {'from' if up else 'to'} subscriber")
            flags = INBOUND if up else OUTBOUND
        else:
            port = record[PORT]
            index, idb = self._interface((NNI, port), LINKTYPE_ETHERNET, f"nni-{port}",
                                         f"NNI {port}: frames as the flows tag them")
            packet = data
            owner, owner_pon = self.capture.nni_owner(record)
            service = self.capture.service_of(record) if owner else ""
            comment = (f"{'serial=' + owner + ' pon=' + str(owner_pon) + ' ' if owner else ''}"
                       f"{'service=' + service + ' ' if service else ''}nni={port} "
                       f"{'to' if up else 'from'} network")
            flags = OUTBOUND if up else INBOUND
        return idb + enhanced_packet(index, record[TIME], packet, original, comment, flags)


_EVENTS_DESCRIPTION = "oltsim annotations: scenario steps, alarms, state changes (text in each packet's comment)"


def _mac(address: bytes) -> str:
    return ":".join(f"{b:02x}" for b in address)
