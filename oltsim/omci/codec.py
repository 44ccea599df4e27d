"""A small OMCI codec (ITU-T G.988 baseline and extended message sets) for a simulated ONU.

Frames (all integers big-endian):

- baseline: transaction id (2), message type (1), device id 0x0A (1), ME class (2), ME id (2),
  32 octets of contents, then the 4-octet trailer ``00 00 00 28`` (CPCS-UU, CPI, length 40). The
  4-octet MIC that may follow is ignored on input and never written (BBSim's frames are 44 bytes).
- extended: transaction id (2), message type (1), device id 0x0B (1), ME class (2), ME id (2),
  contents length (2), contents; at most 1980 octets.

The message type octet carries the action in its low five bits, AR (0x40, acknowledge requested)
and AK (0x20, this is an acknowledgement). `parse` raises `OmciError` for frames that cannot be
an OMCI message (too short, bad device id, bad length, a request too short for its fixed fields)
and never raises anything else; everything else about a frame is the responder's business.

The attribute tables list, per ME class, the size in octets of attributes 1..n (G.988), which
is what Get/Set masks and MIB upload encoding need.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import NamedTuple

from oltsim.model.errors import InvalidArgument

# ---- framing ---------------------------------------------------------------------------------

BASELINE = 0x0A
EXTENDED = 0x0B

BASELINE_HEADER = 8
BASELINE_CONTENTS = 32
BASELINE_LENGTH = BASELINE_HEADER + BASELINE_CONTENTS + 4    # 44, what BBSim sends
BASELINE_TRAILER = b"\x00\x00\x00\x28"
EXTENDED_HEADER = 10
MAX_EXTENDED_LENGTH = 1980
MAX_EXTENDED_CONTENTS = MAX_EXTENDED_LENGTH - EXTENDED_HEADER

# ---- message type octet ----------------------------------------------------------------------

DB = 0x80
AR = 0x40
AK = 0x20
ACTION_MASK = 0x1F

CREATE = 4
DELETE = 6
SET = 8
GET = 9
GET_ALL_ALARMS = 11
GET_ALL_ALARMS_NEXT = 12
MIB_UPLOAD = 13
MIB_UPLOAD_NEXT = 14
MIB_RESET = 15
ALARM_NOTIFICATION = 16
ATTRIBUTE_VALUE_CHANGE = 17
TEST = 18
START_SW_DOWNLOAD = 19
DOWNLOAD_SECTION = 20
END_SW_DOWNLOAD = 21
ACTIVATE_SW = 22
COMMIT_SW = 23
SYNC_TIME = 24
REBOOT = 25
GET_NEXT = 26
TEST_RESULT = 27
GET_CURRENT_DATA = 28
SET_TABLE = 29

ACTION_NAMES = {
    CREATE: "create", DELETE: "delete", SET: "set", GET: "get", GET_ALL_ALARMS: "get-all-alarms",
    GET_ALL_ALARMS_NEXT: "get-all-alarms-next", MIB_UPLOAD: "mib-upload", MIB_UPLOAD_NEXT: "mib-upload-next",
    MIB_RESET: "mib-reset", ALARM_NOTIFICATION: "alarm-notification",
    ATTRIBUTE_VALUE_CHANGE: "attribute-value-change", TEST: "test", START_SW_DOWNLOAD: "start-software-download",
    DOWNLOAD_SECTION: "download-section", END_SW_DOWNLOAD: "end-software-download",
    ACTIVATE_SW: "activate-software", COMMIT_SW: "commit-software", SYNC_TIME: "synchronize-time",
    REBOOT: "reboot", GET_NEXT: "get-next", TEST_RESULT: "test-result", GET_CURRENT_DATA: "get-current-data",
    SET_TABLE: "set-table",
}

# Fixed fields a request must carry in an extended frame (baseline contents are always 32 octets).
_MIN_EXTENDED_CONTENTS = {
    SET: 2, GET: 2, GET_ALL_ALARMS: 1, GET_ALL_ALARMS_NEXT: 2, MIB_UPLOAD_NEXT: 2,
    START_SW_DOWNLOAD: 6, DOWNLOAD_SECTION: 1, END_SW_DOWNLOAD: 9,
}

# ---- result codes (G.988 11.2.x) -------------------------------------------------------------

SUCCESS = 0
PROCESSING_ERROR = 1
NOT_SUPPORTED = 2
PARAMETER_ERROR = 3
UNKNOWN_ME = 4
UNKNOWN_INSTANCE = 5
DEVICE_BUSY = 6
INSTANCE_EXISTS = 7
ATTRIBUTE_FAILURE = 9

# ---- ME classes ------------------------------------------------------------------------------

ONU_DATA = 2
CIRCUIT_PACK = 6
SOFTWARE_IMAGE = 7
PPTP_ETHERNET_UNI = 11
ETHERNET_PM_HISTORY = 24
PPTP_POTS_UNI = 53
IP_HOST_CONFIG_DATA = 134
VOIP_CONFIG_DATA = 138
ONU_G = 256
ONU2_G = 257
T_CONT = 262
ANI_G = 263
UNI_G = 264
GEM_PORT_NETWORK_CTP = 268
PRIORITY_QUEUE = 277
TRAFFIC_SCHEDULER = 278
ETHERNET_PM_HISTORY_3 = 296
FEC_PM_HISTORY = 312
ETHERNET_FRAME_PM_HISTORY_DOWN = 321
ETHERNET_FRAME_PM_HISTORY_UP = 322
ETHERNET_FRAME_EXTENDED_PM = 334
GEM_PORT_NETWORK_CTP_PM_HISTORY = 341
ETHERNET_FRAME_EXTENDED_PM_64BIT = 425


@dataclass(frozen=True, slots=True)
class MeClass:
    """A managed entity class: `sizes[i - 1]` is the size in octets of attribute i."""
    class_id: int
    name: str
    sizes: tuple[int, ...]

    @property
    def defined_mask(self) -> int:
        """The attribute mask bits this class defines."""
        return mask_of(range(1, len(self.sizes) + 1))

    def size(self, index: int) -> int:
        """The size in octets of attribute `index` (1-based)."""
        return self.sizes[index - 1]


_PM_16X32 = (1, 2) + (4,) * 14
ME_CLASSES: dict[int, MeClass] = {m.class_id: m for m in (
    MeClass(ONU_DATA, "ONU data", (1,)),
    MeClass(CIRCUIT_PACK, "Circuit pack", (1, 1, 8, 14, 4, 1, 1, 1, 20, 1, 1, 1, 1, 4)),
    MeClass(SOFTWARE_IMAGE, "Software image", (14, 1, 1, 1, 25, 16)),
    MeClass(PPTP_ETHERNET_UNI, "Physical path termination point Ethernet UNI",
            (1, 1, 1, 1, 1, 1, 1, 2, 1, 2, 1, 1, 1, 1, 1)),
    MeClass(ETHERNET_PM_HISTORY, "Ethernet performance monitoring history data", _PM_16X32),
    MeClass(PPTP_POTS_UNI, "Physical path termination point POTS UNI",
            (1, 2, 1, 1, 1, 1, 1, 1, 1, 1, 2, 1, 1)),
    MeClass(IP_HOST_CONFIG_DATA, "IP host config data",
            (1, 6, 25, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 25, 25, 2)),
    MeClass(VOIP_CONFIG_DATA, "VoIP config data", (1, 1, 4, 1, 2, 1, 1, 25)),
    MeClass(ONU_G, "ONU-G", (4, 14, 8, 1, 1, 1, 1, 1, 1, 24, 12, 1, 2)),
    MeClass(ONU2_G, "ONU2-G", (20, 1, 2, 1, 1, 2, 1, 1, 2, 4, 2, 1, 2, 2)),
    MeClass(T_CONT, "T-CONT", (2, 1, 1)),
    MeClass(ANI_G, "ANI-G", (1, 2, 2, 1, 1, 1, 1, 1, 1, 2, 1, 1, 2, 2, 1, 1)),
    MeClass(UNI_G, "UNI-G", (2, 1, 1, 2, 2)),
    MeClass(GEM_PORT_NETWORK_CTP, "GEM port network CTP", (2, 2, 1, 2, 2, 1, 2, 1, 2, 1)),
    MeClass(PRIORITY_QUEUE, "Priority queue", (1, 2, 2, 2, 2, 4, 2, 1, 2, 4, 2, 2, 8, 2, 1, 1)),
    MeClass(TRAFFIC_SCHEDULER, "Traffic scheduler", (2, 2, 1, 1)),
    MeClass(ETHERNET_PM_HISTORY_3, "Ethernet performance monitoring history data 3", _PM_16X32),
    MeClass(FEC_PM_HISTORY, "FEC performance monitoring history data", (1, 2, 4, 4, 4, 4, 2)),
    MeClass(ETHERNET_FRAME_PM_HISTORY_DOWN,
            "Ethernet frame performance monitoring history data downstream", _PM_16X32),
    MeClass(ETHERNET_FRAME_PM_HISTORY_UP,
            "Ethernet frame performance monitoring history data upstream", _PM_16X32),
    MeClass(ETHERNET_FRAME_EXTENDED_PM, "Ethernet frame extended PM", (1, 16) + (4,) * 14),
    MeClass(GEM_PORT_NETWORK_CTP_PM_HISTORY, "GEM port network CTP performance monitoring history data",
            (1, 2, 4, 4, 8, 8, 4)),
    MeClass(ETHERNET_FRAME_EXTENDED_PM_64BIT, "Ethernet frame extended PM 64-bit", (1, 16) + (8,) * 14),
)}

#: ME classes defined by G.988 (as known to omci-lib-go): Create, Set and Delete on these are
#: accepted; on any other class they answer Unknown ME.
G988_CLASSES = frozenset((
    2, 5, 6, 7, 11, 12, 14, 16, 18, 21, 24, 45, 46, 47, 48, 49, 50, 51, 52, 53, 58, 62, 78, 79, 82, 83, 84,
    89, 90, 98, 99, 100, 101, 102, 103, 105, 106, 107, 108, 109, 110, 111, 112, 113, 114, 115, 116, 130,
    131, 133, 134, 135, 136, 137, 138, 139, 140, 141, 142, 143, 144, 145, 146, 147, 148, 149, 150, 151,
    152, 153, 154, 155, 156, 157, 158, 160, 162, 163, 164, 165, 168, 169, 170, 171, 256, 257, 262, 263,
    264, 266, 268, 269, 272, 273, 274, 276, 277, 278, 280, 281, 282, 283, 284, 285, 286, 287, 288, 289,
    290, 291, 292, 293, 296, 298, 299, 300, 301, 302, 305, 306, 307, 308, 309, 310, 311, 312, 313, 314,
    315, 316, 321, 322, 323, 324, 325, 328, 329, 332, 333, 334, 335, 336, 337, 338, 339, 340, 341, 342,
    343, 344, 345, 346, 348, 400, 406, 407, 408, 410, 412, 413, 414, 415, 418, 419, 420, 421, 422, 423,
    424, 425, 427, 432, 433, 434, 436, 437, 438, 440, 441, 443, 444, 445, 446, 447, 448, 449, 450, 451,
    452, 453, 454, 456, 457,
))


def attribute_bit(index: int) -> int:
    """The attribute-mask bit of attribute `index` (1..16): attribute 1 is the MSB."""
    return 0x8000 >> (index - 1)


def mask_of(indexes) -> int:
    """The attribute mask selecting `indexes`."""
    mask = 0
    for index in indexes:
        mask |= attribute_bit(index)
    return mask


def mask_indexes(mask: int) -> list[int]:
    """The attribute indexes (1..16) selected by `mask`, in order."""
    return [i for i in range(1, 17) if mask & attribute_bit(i)]


def octets(value, size: int) -> bytes:
    """`value` (int, bytes or str) as exactly `size` octets: integers big-endian (wrapped to the
    size), strings and bytes truncated or zero-padded on the right."""
    if isinstance(value, int):
        return (value & ((1 << (8 * size)) - 1)).to_bytes(size, "big")
    if isinstance(value, str):
        value = value.encode("latin-1", "replace")
    value = bytes(value)[:size]
    return value + bytes(size - len(value))


def encode_attributes(me_class: MeClass, values: dict, mask: int, available: int) -> tuple[bytes, int, int, int]:
    """Attribute values for `mask` in index order, packed greedily into `available` octets.

    Returns (octets, encoded mask, failed mask, unsupported mask): an attribute that does not fit
    is left out and reported failed while later, smaller ones may still fit (what omci-lib-go
    does for a Get response); mask bits the class does not define are reported unsupported.
    Attributes without a value in `values` are encoded as zeros.
    """
    unsupported = mask & ~me_class.defined_mask & 0xFFFF
    out = bytearray()
    encoded = failed = 0
    for index in mask_indexes(mask & me_class.defined_mask):
        size = me_class.size(index)
        bit = attribute_bit(index)
        if size > available:
            failed |= bit
            continue
        out += octets(values.get(index, 0), size)
        available -= size
        encoded |= bit
    return bytes(out), encoded, failed, unsupported


def decode_attributes(me_class: MeClass, mask: int, data: bytes) -> dict[int, bytes] | None:
    """Split `data` into the attribute values selected by `mask` (index -> octets); None when the
    mask names attributes the class does not define or `data` is too short for them."""
    if mask & ~me_class.defined_mask & 0xFFFF:
        return None
    values = {}
    offset = 0
    for index in mask_indexes(mask):
        size = me_class.size(index)
        if offset + size > len(data):
            return None
        values[index] = data[offset:offset + size]
        offset += size
    return values


# ---- frames ----------------------------------------------------------------------------------

class OmciError(InvalidArgument, ValueError):
    """A frame that cannot be an OMCI message. It is an `InvalidArgument`, so the southbound's
    error table answers gRPC INVALID_ARGUMENT with its message."""


_HEADER = struct.Struct(">HBBHH")
_EXT_LENGTH = struct.Struct(">H")


class Frame(NamedTuple):
    """A parsed OMCI frame. `contents` is the message contents: 32 octets for baseline, the
    declared length for extended."""
    tid: int
    message_type: int
    device_id: int
    me_class: int
    me_id: int
    contents: bytes

    @property
    def action(self) -> int:
        """The message type without DB, AR and AK (CREATE, GET, ...)."""
        return self.message_type & ACTION_MASK

    @property
    def ar(self) -> bool:
        """The sender asks for an acknowledgement (a response)."""
        return bool(self.message_type & AR)

    @property
    def ak(self) -> bool:
        """This frame is itself an acknowledgement (a response)."""
        return bool(self.message_type & AK)

    @property
    def extended(self) -> bool:
        """The frame uses the extended message set."""
        return self.device_id == EXTENDED

    def field(self, offset: int, size: int) -> bytes:
        """`size` octets of the contents at `offset`, zero-padded past the end."""
        chunk = self.contents[offset:offset + size]
        return chunk + bytes(size - len(chunk))

    def u8(self, offset: int) -> int:
        """The unsigned octet at `offset` of the contents (0 past the end)."""
        return self.field(offset, 1)[0]

    def u16(self, offset: int) -> int:
        """The big-endian 16-bit integer at `offset` of the contents (zero-padded)."""
        return int.from_bytes(self.field(offset, 2), "big")

    def u32(self, offset: int) -> int:
        """The big-endian 32-bit integer at `offset` of the contents (zero-padded)."""
        return int.from_bytes(self.field(offset, 4), "big")


def parse(data) -> Frame:
    """Parse one OMCI frame; raises OmciError (and nothing else) when it cannot be one."""
    if type(data) is not bytes:
        try:
            data = bytes(data)
        except (TypeError, ValueError):
            raise OmciError("an OMCI frame must be bytes") from None
    if len(data) < BASELINE_HEADER:
        raise OmciError(f"OMCI frame too short ({len(data)} bytes; a header is {BASELINE_HEADER})")
    tid, message_type, device_id, me_class, me_id = _HEADER.unpack_from(data)
    if device_id == BASELINE:
        # 40 octets without trailer, 44 with it, 48 with a MIC; the trailer's length field is
        # not checked (VOLTHA sends 40, BBSim corrects anything else).
        if len(data) < BASELINE_HEADER + BASELINE_CONTENTS:
            raise OmciError(f"baseline OMCI frame too short ({len(data)} bytes; at least 40 needed)")
        if len(data) > BASELINE_LENGTH + 4:
            raise OmciError(f"baseline OMCI frame too long ({len(data)} bytes; at most 48)")
        contents = data[BASELINE_HEADER:BASELINE_HEADER + BASELINE_CONTENTS]
    elif device_id == EXTENDED:
        if len(data) < EXTENDED_HEADER:
            raise OmciError(f"extended OMCI frame too short ({len(data)} bytes; at least 10 needed)")
        if len(data) > MAX_EXTENDED_LENGTH:
            raise OmciError(f"extended OMCI frame too long ({len(data)} bytes; at most {MAX_EXTENDED_LENGTH})")
        (length,) = _EXT_LENGTH.unpack_from(data, 8)
        if EXTENDED_HEADER + length > len(data):
            raise OmciError(f"extended OMCI frame declares {length} content bytes but carries "
                            f"{len(data) - EXTENDED_HEADER}")
        contents = data[EXTENDED_HEADER:EXTENDED_HEADER + length]
        needed = _MIN_EXTENDED_CONTENTS.get(message_type & ACTION_MASK, 0)
        if len(contents) < needed and not message_type & AK:
            raise OmciError(f"extended {ACTION_NAMES.get(message_type & ACTION_MASK, 'OMCI')} request too "
                            f"short ({len(contents)} content bytes; at least {needed} needed)")
    else:
        raise OmciError(f"unknown OMCI device identifier 0x{device_id:02x} (0x0a baseline, 0x0b extended)")
    return Frame(tid, message_type, device_id, me_class, me_id, contents)


def encode(tid: int, message_type: int, me_class: int, me_id: int, contents: bytes = b"",
           extended: bool = False) -> bytes:
    """One frame: baseline contents are zero-padded to 32 octets (longer contents are an error)
    and followed by the 00000028 trailer; extended contents are prefixed with their length."""
    header = _HEADER.pack(tid & 0xFFFF, message_type & 0xFF, EXTENDED if extended else BASELINE,
                          me_class & 0xFFFF, me_id & 0xFFFF)
    if extended:
        if len(contents) > MAX_EXTENDED_CONTENTS:
            raise ValueError(f"extended contents too long ({len(contents)} bytes)")
        return header + _EXT_LENGTH.pack(len(contents)) + contents
    if len(contents) > BASELINE_CONTENTS:
        raise ValueError(f"baseline contents too long ({len(contents)} bytes)")
    return header + contents + bytes(BASELINE_CONTENTS - len(contents)) + BASELINE_TRAILER


def response(frame: Frame, contents: bytes = b"", me_class: int | None = None,
             me_id: int | None = None) -> bytes:
    """The response to `frame`: same tid, action with AK, same message set and ME unless given."""
    return encode(frame.tid, frame.action | AK, frame.me_class if me_class is None else me_class,
                  frame.me_id if me_id is None else me_id, contents, frame.extended)


def result_response(frame: Frame, result: int) -> bytes:
    """A response whose contents are only a result code (the first octet of most responses)."""
    return response(frame, bytes([result & 0xFF]))
