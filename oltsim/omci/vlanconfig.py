"""A record of the OMCI the adapter wrote that decides where an ONU's frames go and how they are tagged.

The responder (`oltsim.omci.responder`) answers Create, Set and Delete on any G.988 class without keeping what they
said; the data plane needs it. A `VlanRecorder` (an `oltsim.omci.wrappers.OmciWrapper` built around the responder or
the wrappers already in front of it) stands in front of them: each Create, Set or Delete of a class
below (and each MIB Reset) is noted before the responder sees it, and applied to the ONU's record only when the
responder's answer (an `OmciIndication` on the OLT's events, see `attach`) says success, so that a refused, muted or
delayed request is recorded as the ONU took it. An ONU that is disabled (powered off, rebooted,
deleted) and a MIB Reset forget the record, as a real ONU's volatile MIB does.

Recorded classes (G.988): MAC bridge port configuration data (47), VLAN tagging filter data (84), IEEE 802.1p mapper
service profile (130), Extended VLAN tagging operation configuration data (171), GEM interworking termination point
(266) and GEM port network CTP (268). Attribute values are kept as the octets the adapter sent; the EVTOCD's
received-frame VLAN tagging operation table (attribute 6) is kept as its entries, keyed by their first 8 octets (the
filter), an entry whose last 8 octets are all ones deleting the entry with that filter (G.988 9.3.13).

Pure: no I/O, no clock. Listeners (`subscribe`) hear the serial of each ONU whose record changed.
"""
from __future__ import annotations

from typing import Callable

from oltsim.model import events
from oltsim.model.onu import serial_key
from oltsim.omci import codec
from oltsim.omci.codec import MeClass
from oltsim.omci.wrappers import OmciWrapper

__all__ = ["EVTOCD", "GEM_CTP", "GEM_IW_TP", "MAPPER", "MBPCD", "OnuRecord", "VTFD", "VlanConfig", "VlanRecorder"]

MBPCD = 47
VTFD = 84
MAPPER = 130
EVTOCD = 171
GEM_IW_TP = 266
GEM_CTP = codec.GEM_PORT_NETWORK_CTP

EVTOCD_TABLE = 6
EVTOCD_ENTRY = 16
DELETE_TREATMENT = b"\xff" * 8

#: Attribute sizes (octets of attributes 1..n, G.988) of the classes recorded.
CLASSES: dict[int, MeClass] = {m.class_id: m for m in (
    MeClass(MBPCD, "MAC bridge port configuration data", (2, 1, 1, 2, 2, 2, 1, 1, 1, 6, 2, 2, 1, 2)),
    MeClass(VTFD, "VLAN tagging filter data", (24, 1, 1)),
    MeClass(MAPPER, "IEEE 802.1p mapper service profile", (2,) + (2,) * 8 + (1, 24, 1, 1)),
    MeClass(EVTOCD, "Extended VLAN tagging operation configuration data", (1, 2, 2, 2, 1, EVTOCD_ENTRY, 2, 24)),
    MeClass(GEM_IW_TP, "GEM interworking termination point", (2, 1, 2, 2, 1, 1, 2, 1)),
    codec.ME_CLASSES[GEM_CTP],
)}

#: The set-by-create attributes a Create carries, in order (the prefix this record reads).
CREATE_ATTRIBUTES = {
    MBPCD: (1, 2, 3, 4, 5, 6, 7, 8, 9),
    VTFD: (1, 2, 3),
    MAPPER: (1, 2, 3, 4, 5, 6, 7, 8, 9, 10),
    EVTOCD: (1, 7),
    GEM_IW_TP: (1, 2, 3, 4, 7),
    GEM_CTP: (1, 2, 3),
}

_ACTIONS = frozenset((codec.CREATE, codec.SET, codec.DELETE))
#: Requests noted and not yet answered, at most (a muted ONU never answers: the oldest are forgotten).
MAX_PENDING = 4096


class OnuRecord:
    """What one ONU was told: `mes[(class, me_id)]` is {attribute index: octets}; `rules[evtocd_me_id]` the
    EVTOCD table entries {filter (8 octets): entry (16 octets)} in the order written."""

    __slots__ = ("mes", "rules")

    def __init__(self):
        self.mes: dict[tuple[int, int], dict[int, bytes]] = {}
        self.rules: dict[int, dict[bytes, bytes]] = {}

    def of_class(self, me_class: int) -> dict[int, dict[int, bytes]]:
        """{ME id: attributes} of every recorded ME of `me_class`."""
        return {me_id: attrs for (cls, me_id), attrs in self.mes.items() if cls == me_class}

    def value(self, me_class: int, me_id: int, index: int, default: int | None = None) -> int | None:
        """Attribute `index` of an ME as an unsigned integer; `default` when the ME or attribute is unknown."""
        attrs = self.mes.get((me_class, me_id))
        if attrs is None or index not in attrs:
            return default
        return int.from_bytes(attrs[index], "big")


class VlanConfig:
    """The OMCI VLAN and bridge configuration of every ONU of an OLT, as its adapter wrote it."""

    def __init__(self):
        self._onus: dict[str, OnuRecord] = {}
        self._pending: dict[tuple[int, int, int], tuple[str, codec.Frame]] = {}
        self._listeners: tuple[Callable[[str], None], ...] = ()

    # ---- wiring ------------------------------------------------------------------------------------------------

    def attach(self, olt) -> Callable[[], None]:
        """Hear `olt`'s events: OMCI answers apply the requests noted; an ONU that is disabled forgets its record.
        Returns the unsubscriber."""
        def listener(event):
            kind = type(event)
            if kind is events.OmciIndication:
                self._answered(olt, event)
            elif (kind is events.StateChanged and event.device == "onu" and event.attribute == "InternalState"
                  and event.dest == "disabled"):
                self.forget(event.serial)
        return olt.subscribe(listener)

    def subscribe(self, listener: Callable[[str], None]) -> Callable[[], None]:
        """`listener(serial)` after each change of an ONU's record; returns the unsubscriber."""
        self._listeners += (listener,)

        def unsubscribe():
            self._listeners = tuple(x for x in self._listeners if x is not listener)
        return unsubscribe

    # ---- reading -----------------------------------------------------------------------------------------------

    def record(self, serial: str) -> OnuRecord | None:
        """The record of ONU `serial`, None when the adapter configured nothing recorded here (or it was reset)."""
        return self._onus.get(serial_key(serial))

    def pending(self) -> int:
        """Requests noted whose answer has not been seen."""
        return len(self._pending)

    # ---- requests and answers ----------------------------------------------------------------------------------

    def note(self, onu, frame: codec.Frame) -> None:
        """Note one request the adapter sent to `onu` (parsed) if it is a Create, Set or Delete of a recorded class
        or a MIB Reset; anything else is ignored here. Never raises."""
        action = frame.action
        if action != codec.MIB_RESET and (action not in _ACTIONS or frame.me_class not in CLASSES):
            return
        if frame.ak:
            return
        pending = self._pending
        if len(pending) >= MAX_PENDING:
            del pending[next(iter(pending))]
        pending[(onu.pon.id, onu.onu_id, frame.tid)] = (onu.serial, frame)

    def _answered(self, olt, event) -> None:
        pkt = event.pkt
        if not self._pending or len(pkt) < codec.BASELINE_HEADER + 1 or not pkt[2] & codec.AK:
            return
        key = (event.intf_id, event.onu_id, int.from_bytes(pkt[0:2], "big"))
        noted = self._pending.get(key)
        if noted is None:
            return
        serial, request = noted
        if (pkt[2] & codec.ACTION_MASK) != request.action:
            return
        del self._pending[key]
        result = pkt[codec.EXTENDED_HEADER if pkt[3] == codec.EXTENDED else codec.BASELINE_HEADER]
        if result != codec.SUCCESS:
            return
        self.apply(serial, request)

    def apply(self, serial: str, request: codec.Frame) -> None:
        """Record what an accepted request did to ONU `serial` (tests may call it directly)."""
        action = request.action
        if action == codec.MIB_RESET:
            self.forget(serial)
            return
        me_class = CLASSES.get(request.me_class)
        if me_class is None:
            return
        key = serial_key(serial)
        record = self._onus.get(key)
        me = (request.me_class, request.me_id)
        if action == codec.DELETE:
            if record is None:
                return
            record.mes.pop(me, None)
            if request.me_class == EVTOCD:
                record.rules.pop(request.me_id, None)
        else:
            if record is None:
                record = self._onus[key] = OnuRecord()
            if action == codec.CREATE:
                values = _create_values(me_class, request.contents)
                record.mes[me] = values
                if request.me_class == EVTOCD:
                    record.rules[request.me_id] = {}
            else:
                # Set: attribute mask, then the values in index order (both message sets).
                values = codec.decode_attributes(me_class, request.u16(0), request.contents[2:])
                if values is None:
                    return
                attrs = record.mes.setdefault(me, {})
                entry = values.pop(EVTOCD_TABLE, None) if request.me_class == EVTOCD else None
                attrs.update(values)
                if entry is not None:
                    _set_rule(record.rules.setdefault(request.me_id, {}), entry)
        self._changed(serial)

    def forget(self, serial: str) -> None:
        """Forget ONU `serial`'s record (MIB Reset, ONU disabled) and the requests it has not had answered."""
        removed = self._onus.pop(serial_key(serial), None)
        stale = [k for k, (s, _) in self._pending.items() if s == serial]
        for k in stale:
            del self._pending[k]
        if removed is not None:
            self._changed(serial)

    def _changed(self, serial: str) -> None:
        for listener in self._listeners:
            listener(serial)


class VlanRecorder(OmciWrapper):
    """Notes each request in a `VlanConfig` (which applies it when the ONU's answer says success), then passes it on
    to `wrapped` (whatever that raises is raised). Put it outermost, so that it sees what the adapter sent."""

    def __init__(self, wrapped, config: VlanConfig) -> None:
        super().__init__(wrapped)
        self.config = config

    def handle(self, onu, frame: codec.Frame) -> None:
        """Note `frame`, a request the adapter sent to `onu`, then hand it to the wrapped handler."""
        self.config.note(onu, frame)
        self.wrapped.handle(onu, frame)


def _create_values(me_class: MeClass, contents: bytes) -> dict[int, bytes]:
    """The set-by-create attributes a Create carries, as far as its contents go."""
    values, offset = {}, 0
    for index in CREATE_ATTRIBUTES.get(me_class.class_id, ()):
        size = me_class.size(index)
        if offset + size > len(contents):
            break
        values[index] = bytes(contents[offset:offset + size])
        offset += size
    return values


def _set_rule(rules: dict[bytes, bytes], entry: bytes) -> None:
    """Add, replace (same filter) or delete (treatment all ones) one EVTOCD table entry."""
    entry = bytes(entry)
    if len(entry) != EVTOCD_ENTRY:
        return
    key = entry[:8]
    if entry[8:] == DELETE_TREATMENT:
        rules.pop(key, None)
    else:
        rules.pop(key, None)            # a replaced entry moves to the end, as it was written last
        rules[key] = entry
