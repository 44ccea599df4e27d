"""The MIB an ONU reports on MIB upload: BBSim's entities, order and count (reference 4.4).

Built once per (Ethernet UNIs, POTS ports, PON technology, injection flags) and shared by every
ONU with that shape (`build_mib` is cached). Entries are kept encoded, as MIB-upload-next response
frames without their transaction id, so answering an upload-next is a concatenation:

- baseline: one ME per message, 155 + 18·(N+P) + (4 if P) + (1 with the unknown-ME injection)
  messages (227 for 4 UNIs, 195 for 1 UNI + 1 POTS);
- extended: the same MEs packed into messages of at most 1980 octets (3 for 4 UNIs).

The ONU-data entry (the first) carries the MIB data sync value; `baseline_frame` and
`extended_frame` patch in the value the ONU had when the upload started (BBSim always says 0).
"""
from __future__ import annotations

import functools
from dataclasses import dataclass

from oltsim.omci import codec
from oltsim.omci.codec import (ANI_G, CIRCUIT_PACK, ME_CLASSES, ONU2_G, ONU_DATA, PPTP_ETHERNET_UNI,
                               PPTP_POTS_UNI, PRIORITY_QUEUE, T_CONT, TRAFFIC_SCHEDULER, UNI_G)

_RESPONSE_TYPE = codec.MIB_UPLOAD_NEXT | codec.AK

ETHERNET_UNIT = 0x2F      # Ethernet BASE-T
XGS_PON_UNIT = 0xEE       # XG-PON10G10
GPON_UNIT = 0xF5          # GPON12441244
POTS_UNIT = 0x20
SLOT = 0x01
TCONT_SLOT = 0x80
TCONTS = 8
QUEUES_PER_PORT = 8

# Raw reported-ME records BBSim injects with -injectOmciUnknownMe / -injectOmciUnknownAttributes:
# (class, instance, mask) header then 26 attribute octets. Baseline frames carry them verbatim
# inside a 48-octet frame with BBSim's trailer and MIC.
_UNKNOWN_ME_HEADER = bytes.fromhex("002500018000")
_UNKNOWN_ME_ATTRIBUTES = bytes.fromhex("0102030405060708090A0B0C0D0E0F101112131415161718191A")
_UNKNOWN_ATTR_HEADER = bytes.fromhex("0101000007FD")
_UNKNOWN_ATTR_ATTRIBUTES = bytes.fromhex("00400801000800000006007F07003F0001000100010001000000")
_RAW_TRAILER = bytes.fromhex("0000002828ce00e2")
_UNKNOWN_ME_CLASS = 37    # "intentionally left blank" in G.988

# Offsets (in a frame) of the ONU-data MibDataSync octet in the first upload-next response.
_MDS_OFFSET_BASELINE = codec.BASELINE_HEADER + 6
_MDS_OFFSET_EXTENDED = codec.EXTENDED_HEADER + 2 + 6


@dataclass(frozen=True, slots=True)
class MibEntry:
    """One reported ME: class, instance, attribute mask and the encoded attribute values;
    `raw` entries are BBSim's injected records, sent as a prebuilt frame."""
    me_class: int
    me_id: int
    mask: int
    attributes: bytes
    raw: bool = False

    @property
    def record(self) -> bytes:
        """class, instance, mask and attribute octets (the MIB-upload-next contents)."""
        return (self.me_class.to_bytes(2, "big") + self.me_id.to_bytes(2, "big") + self.mask.to_bytes(2, "big")
                + self.attributes)


@dataclass(frozen=True, slots=True)
class Mib:
    """An encoded MIB: frames without their 2-octet transaction id."""
    entries: tuple[MibEntry, ...]
    baseline_tails: tuple[bytes, ...]
    extended_tails: tuple[bytes, ...]

    @property
    def count(self) -> int:
        """MIB-upload-next commands for baseline requests (the MIB upload response's count)."""
        return len(self.baseline_tails)

    @property
    def extended_count(self) -> int:
        """MIB-upload-next commands for extended requests."""
        return len(self.extended_tails)

    def baseline_frame(self, seq: int, tid: int, mds: int = 0) -> bytes:
        """The baseline response for command `seq` (0 <= seq < count)."""
        frame = tid.to_bytes(2, "big") + self.baseline_tails[seq]
        return _patch_mds(frame, _MDS_OFFSET_BASELINE, mds) if seq == 0 and mds else frame

    def extended_frame(self, seq: int, tid: int, mds: int = 0) -> bytes:
        """The extended response for command `seq` (0 <= seq < extended_count)."""
        frame = tid.to_bytes(2, "big") + self.extended_tails[seq]
        return _patch_mds(frame, _MDS_OFFSET_EXTENDED, mds) if seq == 0 and mds else frame


def _patch_mds(frame: bytes, offset: int, mds: int) -> bytes:
    return frame[:offset] + bytes([mds & 0xFF]) + frame[offset + 1:]


def _entry(me_class: int, me_id: int, values: dict) -> MibEntry:
    definition = ME_CLASSES[me_class]
    data, mask, failed, unsupported = codec.encode_attributes(
        definition, values, codec.mask_of(values), codec.MAX_EXTENDED_CONTENTS)
    assert not failed and not unsupported, (me_class, values)
    return MibEntry(me_class, me_id, mask, data)


def _circuit_pack(unit_type: int, ports: int, serial: str, schedulers: int) -> list[MibEntry]:
    # BBSim reports each circuit pack as four records, as it does not fit one baseline message.
    me_id = (SLOT << 8) | SLOT
    return [
        _entry(CIRCUIT_PACK, me_id, {1: unit_type, 2: ports, 3: serial, 4: "v0.0.1"}),
        _entry(CIRCUIT_PACK, me_id, {5: "ONF", 6: 0, 7: 0, 8: 0}),
        _entry(CIRCUIT_PACK, me_id, {9: "BBSM-Circuit-Pack", 10: 0, 11: 8, 12: 8, 13: schedulers}),
        _entry(CIRCUIT_PACK, me_id, {14: 0}),
    ]


def _queues(slot: int, port: int, related_base: int, scheduler: int) -> list[MibEntry]:
    out = []
    for j in range(QUEUES_PER_PORT):
        me_id = (slot << 8) | (((port << 4) + j) & 0xFF)
        # Each queue twice: first with no attributes, then with them (BBSim's order).
        out.append(_entry(PRIORITY_QUEUE, me_id, {}))
        out.append(_entry(PRIORITY_QUEUE, me_id, {
            1: 0, 2: 100, 3: 100, 4: 0, 5: 0, 6: (related_base << 16) | j, 7: scheduler, 8: 1, 9: 1,
            10: 0, 11: 0, 12: 0}))
    return out


def mib_entries(uni: int, pots: int, technology: str, unknown_me: bool = False,
                unknown_attributes: bool = False) -> list[MibEntry]:
    """The reported MEs, in BBSim's order, for `uni` Ethernet UNIs and `pots` POTS ports."""
    entries = [_entry(ONU_DATA, 0, {1: 0})]
    ani_type = GPON_UNIT if technology.upper() == "GPON" else XGS_PON_UNIT
    entries += _circuit_pack(ani_type, 1, "BBSM-Circuit-Pack-ani", 0)
    entries.append(_entry(ANI_G, (TCONT_SLOT << 8) | 1, {
        1: 1, 2: 8, 3: 48, 4: 0, 5: 0, 6: 5, 7: 9, 8: 0, 9: 0, 10: 57428, 11: 255, 12: 255, 13: 0,
        14: 3171, 15: 129, 16: 129}))
    entries += _circuit_pack(ETHERNET_UNIT, uni, "BBSM-Circuit-Pack", 16)
    if pots > 0:
        entries += _circuit_pack(POTS_UNIT, pots, "BBSM-Circuit-Pack", 16)
    for i in range(1, uni + pots + 1):
        port_id = (SLOT << 8) | (i & 0xFF)
        if i <= uni:
            entries.append(_entry(PPTP_ETHERNET_UNI, port_id, {
                1: 0, 2: ETHERNET_UNIT, 3: 0, 4: 0, 5: 0, 6: 0, 7: 3, 8: 1518, 9: 0, 10: 0, 11: 2, 12: 0,
                13: 0, 14: 0, 15: 0}))
        else:
            entries.append(_entry(PPTP_POTS_UNI, port_id, {i: 0 for i in range(1, 14)}))
        entries.append(_entry(UNI_G, port_id, {1: 0, 2: 0, 3: 0, 4: 0, 5: 0}))
        entries += _queues(SLOT, i, port_id, 0)
    for t in range(1, TCONTS + 1):
        tcont_id = (TCONT_SLOT << 8) | t
        scheduler_id = (SLOT << 8) | t
        entries.append(_entry(T_CONT, tcont_id, {1: 0xFFFF}))
        entries.append(_entry(TRAFFIC_SCHEDULER, scheduler_id, {1: tcont_id, 2: 0, 3: 2, 4: 0}))
        entries += _queues(TCONT_SLOT, t, tcont_id, scheduler_id)
    if unknown_attributes:
        entries.append(MibEntry(ONU2_G, 0, 0x07FD, _UNKNOWN_ATTR_ATTRIBUTES, raw=True))
    else:
        entries.append(_entry(ONU2_G, 0, {6: 64, 7: 8, 8: 1, 9: 8, 10: 6, 11: 127, 12: 7, 13: 63, 14: 1}))
    if unknown_me:
        entries.append(MibEntry(_UNKNOWN_ME_CLASS, 1, 0x8000, _UNKNOWN_ME_ATTRIBUTES, raw=True))
    return entries


def _baseline_tail(entry: MibEntry) -> bytes:
    if entry.raw:
        return (bytes([_RESPONSE_TYPE, codec.BASELINE]) + bytes.fromhex("00020000") + entry.record
                + _RAW_TRAILER)
    return codec.encode(0, _RESPONSE_TYPE, ONU_DATA, 0, entry.record)[2:]


def _extended_tails(entries: list[MibEntry]) -> list[bytes]:
    """BBSim's packing: a message is closed once it has grown past 1980 - 48 octets; raw
    (injected) records are left out and appended to the last message."""
    plain = [e for e in entries if not e.raw]
    # BBSim appends the unknown-ME record first, then the ONU2-G with unknown attributes.
    raw = sorted((e for e in entries if e.raw), key=lambda e: e.me_class != _UNKNOWN_ME_CLASS)
    limit = codec.MAX_EXTENDED_LENGTH - (codec.BASELINE_LENGTH + 4)
    messages: list[list[MibEntry]] = []
    i = 0
    while i < len(plain):
        group = [plain[i]]
        i += 1
        length = codec.EXTENDED_HEADER + 2 + len(group[0].record)
        while i < len(plain) and (len(group) == 1 or length <= limit):
            group.append(plain[i])
            length += 2 + len(plain[i].record)
            i += 1
        messages.append(group)
    if raw:
        if not messages:
            messages.append([])
        messages[-1] = messages[-1] + raw
    tails = []
    for group in messages:
        contents = b"".join(len(e.attributes).to_bytes(2, "big") + e.record for e in group)
        tails.append(codec.encode(0, _RESPONSE_TYPE, ONU_DATA, 0, contents, extended=True)[2:])
    return tails


@functools.lru_cache(maxsize=64)
def build_mib(uni: int, pots: int, technology: str = "XGS-PON", unknown_me: bool = False,
              unknown_attributes: bool = False) -> Mib:
    """The encoded MIB for this ONU shape; the same object for the same arguments."""
    entries = mib_entries(uni, pots, technology, unknown_me, unknown_attributes)
    return Mib(tuple(entries), tuple(_baseline_tail(e) for e in entries), tuple(_extended_tails(entries)))
