"""The capture ring, its filters and its live streams (the API is described in `oltsim.capture`)."""
from __future__ import annotations

import asyncio
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Callable

from oltsim import __version__
from oltsim.capture import pcapng
from oltsim.capture.sizes import DEFAULT_SIZE, FLOOR_MAX, MAX_SIZE
from oltsim.logs import logger
from oltsim.model import events
from oltsim.model.errors import InvalidArgument, NotFound, ResourceExhausted
from oltsim.model.onu import serial_key
from oltsim.omci import codec
from oltsim.packets import frames as f
from oltsim.suggest import did_you_mean

log = logger("oltsim.capture")

#: Records one ONU's bring-up leaves in the ring (activation, MIB upload, flows, EAPOL, DHCP, its annotations and
#: its NNI frames), measured with the built-in adapter: 384 with one UNI, 569 with four, 813 with eight (one ATT
#: service a UNI), about 325 + 61 a UNI. `onu_floor` keeps ONU_RECORDS + UNI_RECORDS a UNI for each ONU, a third
#: more, so that a one-ONU capture right after an OLT's bring-up holds that ONU's whole bring-up, retries included.
ONU_RECORDS = 420
UNI_RECORDS = 80
#: Bytes of frames each record of that floor beyond the size given may hold (a bring-up's records average 66, its
#: largest DHCP frames about 350): with FRAME_BUDGET for those, the floor's worst case at 16x32 would be 240 MiB.
FLOOR_FRAME_BUDGET = 160
#: A frame longer than this is kept cut to it (pcapng's captured length, with its original length): extended OMCI
#: is at most 1980 octets of contents, an Ethernet frame at most 1522.
SNAPLEN = 2048
#: The ring also keeps at most size x FRAME_BUDGET bytes of frames (an adapter sending maximal frames evicts
#: older ones sooner): memory stays near size x (RECORD_OVERHEAD + FRAME_BUDGET) whatever comes.
FRAME_BUDGET = 512
#: What an annotation counts against that budget (the event object it keeps).
EVENT_COST = 128
#: Bytes one record costs besides its frame's octets, measured with tracemalloc on CPython 3.11
#: (tests/unit/test_capture_ring.py::test_a_record_costs_about_its_documented_overhead): the record tuple (9 slots),
#: its timestamp, its deque slot, and the header of the frame's bytes object, which the ring keeps alive.
RECORD_OVERHEAD = 150
#: Bytes of pcapng a live stream holds for a reader that is not reading; beyond, frames are dropped (counted) until
#: the reader has taken half of it, then an annotation says how many were dropped.
STREAM_LIMIT = 2 * 1024 * 1024
#: Live streams open at once (each holds at most STREAM_LIMIT bytes).
MAX_STREAMS = 16

# Capture points: the kinds of record.
OMCI, UNI, NNI, EVENT = range(4)
POINT_NAMES = ("omci", "uni", "nni", "event")

# A record is a plain tuple (cheap to build on the hot path):
# (time, point, up, serial, pon, onu_id, port, gem, data)
#   time    the reactor clock's seconds
#   up      True: from the ONU towards the adapter / out of the NNI towards the network (upstream)
#   serial  ONU serial ("" for the NNI and OLT-wide annotations); pon, onu_id -1 when none
#   port    UNI id (UNI), NNI id (NNI), -1 otherwise; gem the GEM port of a UNI frame (0 when unknown)
#   data    the frame's bytes; (bytes, original length) when cut to SNAPLEN; the model event for an annotation
TIME, POINT, UP, SERIAL, PON, ONU_ID, PORT, GEM, DATA = range(9)

#: The model events kept as annotations, and the devices whose state changes are.
_ANNOTATED = frozenset({events.StateChanged, events.Alarm, events.OmciAlarm, events.ScenarioEvent,
                        events.OnuDiscovery, events.OnuIndication, events.OltIndication, events.FlowChanged,
                        events.OpenoltRequest, events.MibUpload, events.AlarmCleared})
_STATE_DEVICES = frozenset({"olt", "nni", "pon", "onu", "uni"})


def onu_floor(olt) -> int:
    """The records every ONU's bring-up needs together: ONU_RECORDS + UNI_RECORDS a UNI for each ONU of `olt` (16
    PONs of 32 ONUs with 4 UNIs: 378,880; docs/capture.md gives what they cost), FLOOR_MAX at most."""
    return min(FLOOR_MAX, sum(ONU_RECORDS + UNI_RECORDS * len(onu.unis) for onu in olt.onus))


def auto_size(olt) -> int:
    """The ring's default size for `olt`: DEFAULT_SIZE, or `onu_floor(olt)` if that is more."""
    return max(DEFAULT_SIZE, onu_floor(olt))


@dataclass(frozen=True)
class Coverage:
    """How far back the ring reaches, for a capture's report (`Capture.coverage`): `wrapped` when it has let older
    records go; `oldest` the time of the oldest record it keeps (None: empty); `now` the clock when asked; `size`
    the records it keeps at most; `onus` (serial as asked, time of that ONU's oldest record kept or None), for the
    ONUs a filter names; `since` the seconds asked for (math.inf: the whole ring; None: none asked)."""
    wrapped: bool
    oldest: float | None
    now: float
    size: int
    onus: tuple = ()
    since: float | None = None

    @property
    def short(self) -> bool:
        """Whether the ring's part asked for misses records the ring let go (it wrapped within `since`)."""
        if not self.wrapped or self.since is None:
            return False
        return self.oldest is None or self.now - self.since < self.oldest

    def text(self) -> str:
        """One sentence for people (`the ring wrapped: it keeps 20000 records, from 04:12:33.120Z (the last
        11.7 s); BBSM00000001's oldest kept record is at 04:12:40.002Z`), "" when it did not wrap."""
        if not self.wrapped:
            return ""
        if self.oldest is None:
            return "the capture ring wrapped and is empty"
        text = (f"the capture ring wrapped: it keeps {self.size} records, from {clock_time(self.oldest)} "
                f"(the last {self.now - self.oldest:.1f} s)")
        for serial, oldest in self.onus:
            text += (f"; {serial}'s oldest kept record is at {clock_time(oldest)}" if oldest is not None
                     else f"; it keeps no record of {serial}")
        return text


def clock_time(seconds: float) -> str:
    """A clock time as UTC ISO 8601 with milliseconds (what the surfaces report a ring's oldest record as)."""
    whole, milliseconds = divmod(int(round(seconds * 1000)), 1000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(whole)) + f".{milliseconds:03d}Z"


def _cost(data) -> int:
    kind = data.__class__
    if kind is bytes:
        return len(data)
    if kind is tuple:
        return len(data[0])
    return EVENT_COST


@dataclass(frozen=True)
class CaptureFilter:
    """What a capture keeps. `onus`: serials (any case; empty: every ONU); `pon`: a PON id (None: every PON);
    `omci` / `packets`: only OMCI frames / only UNI and NNI frames (both or neither: all). Annotations are kept
    when they concern a kept ONU or PON, or the whole OLT (a scenario's start, the OLT's state)."""
    onus: frozenset = frozenset()
    pon: int | None = None
    omci: bool = False
    packets: bool = False
    #: the serials as the user wrote them, for messages and file names (`onus` holds their keys)
    named: tuple = field(default=(), compare=False)

    @classmethod
    def of(cls, onus=(), pon=None, omci=False, packets=False) -> "CaptureFilter":
        """A filter from a surface's arguments: serials in any case, `pon` None or an int."""
        named = tuple(dict.fromkeys(s for s in onus if s))
        return cls(frozenset(serial_key(s) for s in named), pon, bool(omci), bool(packets), named)

    @property
    def scoped(self) -> bool:
        """Whether the filter keeps only some ONUs or a PON."""
        return bool(self.onus) or self.pon is not None


class Capture:
    """The OLT's capture ring (see `oltsim.capture`): built by the composition root when the size is not 0; `size`
    None is `auto_size(olt)`.

    Subscribes to the OLT's events for what the ONUs and the NNI send to the adapter and for the annotations; the
    southbound calls `omci_out`, `packet_out` and `uplink_out` for what the adapter sends. Runs on the reactor
    thread, as the model."""

    def __init__(self, olt, size: int | None = None, stream_limit: int = STREAM_LIMIT, budget: int | None = None):
        if size is None:
            size = auto_size(olt)
        if size < 1:
            raise ValueError("a capture ring keeps at least one record")
        self.olt = olt
        self.clock = olt.clock
        self.size = size
        #: bytes of frames kept at most (size x FRAME_BUDGET unless given)
        self.budget = size * FRAME_BUDGET if budget is None else budget
        self.stream_limit = stream_limit
        self.records: deque = deque()
        self.frame_bytes = 0
        self.recorded = 0
        self.streams: list[CaptureStream] = []
        self._macs: dict | None = None
        self._macs_generation = -1
        self._unsubscribe = olt.subscribe(self._on_event)

    @classmethod
    def for_olt(cls, olt, size: int = DEFAULT_SIZE, **options) -> "Capture":
        """The daemon's ring (oltsim.tap): `size` records (--capture-size), or the ONUs' floor (`onu_floor`) when
        that is more, so that every ONU's bring-up fits whatever the OLT's size; the floor's records beyond `size`
        hold FLOOR_FRAME_BUDGET bytes of frames each (a bring-up's need, with room), the others FRAME_BUDGET."""
        floor = onu_floor(olt)
        if floor <= size:
            return cls(olt, size, **options)
        return cls(olt, floor, budget=size * FRAME_BUDGET + (floor - size) * FLOOR_FRAME_BUDGET, **options)

    # ---- recording (hot path) ------------------------------------------------------------------

    def _add(self, record: tuple) -> None:
        records = self.records
        records.append(record)
        self.recorded += 1
        self.frame_bytes += _cost(record[DATA])
        while len(records) > self.size or self.frame_bytes > self.budget:
            self.frame_bytes -= _cost(records.popleft()[DATA])
        if self.streams:
            for stream in tuple(self.streams):
                stream._offer(record)

    def omci_out(self, onu, frame: bytes) -> None:
        """The adapter sent `frame` (OmciMsgOut, decoded from hex) to `onu`."""
        if len(frame) > SNAPLEN:
            frame = (frame[:SNAPLEN], len(frame))
        self._add((self.clock.seconds(), OMCI, False, onu.serial, onu.pon.id, onu.onu_id, -1, 0, frame))

    def packet_out(self, onu, port_no: int, gemport_id: int, pkt: bytes) -> None:
        """The adapter sent `pkt` to the UNI of `onu` with `port_no` (OnuPacketOut)."""
        uni = -1
        for candidate in onu.eth_unis:
            if candidate.port_no == port_no:
                uni = candidate.id
                break
        if len(pkt) > SNAPLEN:
            pkt = (pkt[:SNAPLEN], len(pkt))
        self._add((self.clock.seconds(), UNI, False, onu.serial, onu.pon.id, onu.onu_id, uni, gemport_id, pkt))

    def uplink_out(self, nni_id: int, pkt: bytes) -> None:
        """The adapter sent `pkt` out of NNI `nni_id` (UplinkPacketOut)."""
        if len(pkt) > SNAPLEN:
            pkt = (pkt[:SNAPLEN], len(pkt))
        self._add((self.clock.seconds(), NNI, True, "", -1, -1, nni_id, 0, pkt))

    def _on_event(self, event) -> None:
        kind = event.__class__
        if kind is events.OmciIndication:
            pkt = event.pkt
            if len(pkt) > SNAPLEN:
                pkt = (pkt[:SNAPLEN], len(pkt))
            self._add((self.clock.seconds(), OMCI, True, self.olt.onu_serial_at(event.intf_id, event.onu_id),
                       event.intf_id, event.onu_id, -1, 0, pkt))
        elif kind is events.PacketIndication:
            pkt = event.pkt
            if len(pkt) > SNAPLEN:
                pkt = (pkt[:SNAPLEN], len(pkt))
            if event.intf_type == "nni":
                self._add((self.clock.seconds(), NNI, False, "", -1, -1, event.intf_id, 0, pkt))
            else:
                self._add((self.clock.seconds(), UNI, True, self.olt.onu_serial_at(event.intf_id, event.onu_id),
                           event.intf_id, event.onu_id, event.uni_id, event.gemport_id, pkt))
        elif kind in _ANNOTATED:
            self._annotate(event)

    def _annotate(self, event) -> None:
        serial, pon, onu_id = "", -1, -1
        kind = event.__class__
        if kind is events.StateChanged:
            if event.device not in _STATE_DEVICES:
                return
            serial, pon, onu_id = event.serial, event.pon_id, event.onu_id
        elif kind is events.Alarm or kind is events.AlarmCleared:
            serial = event.serial
            fields = event.fields
            if "onu_id" in fields:
                pon, onu_id = fields.get("intf_id", fields.get("pon_id", -1)), fields["onu_id"]
        elif kind in (events.OmciAlarm, events.OnuIndication, events.MibUpload):
            serial, pon, onu_id = event.serial, event.intf_id, event.onu_id
        elif kind is events.OnuDiscovery:
            serial, pon = event.serial, event.intf_id
        elif kind is events.FlowChanged:
            pon, onu_id = event.pon_id, event.onu_id
            serial = self.olt.onu_serial_at(pon, onu_id) if onu_id >= 0 else ""
        elif kind is events.OpenoltRequest:
            serial, pon, onu_id = event.serial, event.intf_id, event.onu_id
        if serial and pon < 0:
            try:
                onu = self.olt.onu_by_serial(serial)
                pon, onu_id = onu.pon.id, onu.onu_id
            except NotFound:
                pass
        self._add((self.clock.seconds(), EVENT, False, serial, pon, onu_id, -1, 0, event))

    # ---- reading -------------------------------------------------------------------------------

    def check(self, capture_filter: CaptureFilter) -> None:
        """NotFound, with the nearest serial the OLT has, for a serial or PON it does not have (the surfaces answer
        404 / NOT_FOUND)."""
        for serial in capture_filter.named or sorted(capture_filter.onus):
            check_serial(self.olt, serial)
        if capture_filter.pon is not None:
            self.olt.pon(capture_filter.pon)

    @property
    def wrapped(self) -> bool:
        """Whether the ring has let records go (it recorded more than it keeps)."""
        return self.recorded > len(self.records)

    def coverage(self, capture_filter: CaptureFilter | None = None, since: float | None = None) -> Coverage:
        """How far back the ring reaches now, overall and for each ONU `capture_filter` names (see Coverage): a
        scan from the oldest record that stops at each named ONU's first."""
        records = self.records
        oldest = records[0][TIME] if records else None
        onus: list = []
        if capture_filter is not None and capture_filter.onus:
            wanted: dict = {}
            for named in capture_filter.named or sorted(capture_filter.onus):
                try:
                    wanted[self.olt.onu_by_serial(named).serial] = named
                except NotFound:
                    continue
            found: dict = {}
            if wanted:
                for record in records:
                    serial = record[SERIAL]
                    if serial in wanted and serial not in found:
                        found[serial] = record[TIME]
                        if len(found) == len(wanted):
                            break
            onus = [(named, found.get(serial)) for serial, named in wanted.items()]
        return Coverage(self.wrapped, oldest, self.clock.seconds(), self.size, tuple(onus), since)

    def select(self, capture_filter: CaptureFilter | None = None, since: float | None = None) -> list:
        """The records of the ring the filter keeps, oldest first; with `since`, only those of the last `since`
        seconds."""
        records = self.records
        if since is not None:
            start = self.clock.seconds() - since
            records = [r for r in records if r[TIME] >= start]
        if capture_filter is None:
            return list(records)
        keeps = self.keeps
        return [r for r in records if keeps(capture_filter, r)]

    def snapshot(self, capture_filter: CaptureFilter | None = None, since: float | None = None) -> bytes:
        """The ring (or its last `since` seconds) as one pcapng file, filtered."""
        writer = PcapngWriter(self)
        return writer.header() + b"".join(writer.block(r) for r in self.select(capture_filter, since))

    def open_stream(self, capture_filter: CaptureFilter | None = None, since: float | None = None,
                    count: int | None = None, duration: float | None = None,
                    limit: int | None = None) -> "CaptureStream":
        """A live stream of pcapng (see CaptureStream): the ring's last `since` seconds first (none without
        `since`; math.inf: the whole ring), then every frame as it is recorded; it ends after `count` frames or
        `duration` seconds if given (duration 0: right after the ring's part, a snapshot). ResourceExhausted when
        MAX_STREAMS are open, InvalidArgument for a count below 1 or a negative duration."""
        if count is not None and count < 1:
            raise InvalidArgument(f"count must be at least 1 (got {count})")
        if duration is not None and not duration >= 0:
            raise InvalidArgument(f"duration must be 0 seconds or more (got {duration:g})")
        if len(self.streams) >= MAX_STREAMS and duration != 0:
            raise ResourceExhausted(f"{MAX_STREAMS} live captures are open already; end one first")
        stream = CaptureStream(self, capture_filter or CaptureFilter(), count,
                               self.stream_limit if limit is None else limit)
        stream.coverage = coverage = self.coverage(capture_filter, since)
        if coverage.short:
            # Said first in the file, too, where a reader of the pcapng alone will see it.
            stream._push(stream._writer.note(coverage.oldest if coverage.oldest is not None else coverage.now,
                                             f"{coverage.text()}; older records are gone (start oltsim with a "
                                             f"larger --capture-size to keep more)"))
        if since is not None:
            # Written as the reader reads (CaptureStream.read): a reader of the whole ring that never reads holds
            # references to the ring's records, not a pcapng copy of it.
            records = self.select(capture_filter, since)
            stream._backlog.extend(records)
            if count is not None and sum(1 for r in records if r[POINT] != EVENT) >= count:
                return stream  # the ring's part is all it asked for: it ends there, never live
        if duration == 0:
            stream._end("duration")
            return stream
        self.streams.append(stream)
        if duration is not None:
            stream._timer = self.clock.callLater(duration, stream._end, "duration")
        return stream

    def close(self, reason: str = "stopped") -> None:
        """End every live stream (the OLT is stopping) and stop recording."""
        for stream in tuple(self.streams):
            stream._end(reason)
        self._unsubscribe()

    # ---- filters -------------------------------------------------------------------------------

    def keeps(self, capture_filter: CaptureFilter, record: tuple) -> bool:
        """Whether `capture_filter` keeps `record`."""
        point = record[POINT]
        if point == OMCI:
            if capture_filter.packets and not capture_filter.omci:
                return False
        elif point != EVENT:
            if capture_filter.omci and not capture_filter.packets:
                return False
        if not capture_filter.scoped:
            return True
        if point == NNI:
            serial, pon = self.nni_owner(record)
            if not serial:
                return False
        elif point == EVENT:
            serial, pon = record[SERIAL], record[PON]
            if record[DATA].__class__ is events.ScenarioEvent:
                return _scenario_kept(capture_filter, record[DATA].targets, self.olt)
            if not serial and pon < 0:
                return True          # about the whole OLT
        else:
            serial, pon = record[SERIAL], record[PON]
        if capture_filter.onus and serial_key(serial) not in capture_filter.onus:
            return False
        if capture_filter.pon is not None and pon != capture_filter.pon:
            return False
        return True

    def nni_owner(self, record: tuple) -> tuple[str, int]:
        """(serial, PON) of the subscriber an NNI frame is from or for (DHCP: its client's hardware address,
        else the Ethernet address on the subscriber's side); ("", -1) when no service has that MAC."""
        frame = _decode(record[DATA])
        if frame is None:
            return "", -1
        if frame.kind == "dhcp":
            mac = frame.dhcp.client_mac
        else:
            mac = frame.eth.src if record[UP] else frame.eth.dst
        return self._owner_of_mac(mac)

    def _owner_of_mac(self, mac: bytes) -> tuple[str, int]:
        macs = self._macs
        generation = self.olt.generation
        if macs is None or (mac not in macs and generation != self._macs_generation):
            macs = self._macs = {}
            self._macs_generation = generation
            for onu in self.olt.onus:
                for uni in onu.unis:
                    for index, service in enumerate(getattr(uni, "services", ())):
                        macs[f.mac_bytes(service.mac)] = (onu.serial, onu.pon.id, uni.id, service.name)
        owner = macs.get(mac)
        return (owner[0], owner[1]) if owner else ("", -1)

    def service_of(self, record: tuple) -> str:
        """The service name of a UNI or NNI frame (by its subscriber's MAC, else its GEM port), "" if none."""
        frame = _decode(record[DATA])
        if frame is None:
            return ""
        if frame.kind == "dhcp":
            mac = frame.dhcp.client_mac
        else:
            mac = frame.eth.src if record[UP] else frame.eth.dst
        self._owner_of_mac(mac)
        owner = self._macs.get(mac) if self._macs else None
        if owner is not None:
            return owner[3]
        if record[POINT] == UNI and record[GEM]:
            try:
                onu = self.olt.onu_by_serial(record[SERIAL])
                uni = onu.unis[record[PORT]]
            except (NotFound, IndexError):
                return ""
            for service in getattr(uni, "services", ()):
                if service.gem_port == record[GEM]:
                    return service.name
        return ""


def check_serial(olt, serial: str):
    """The ONU of `serial` on `olt`; NotFound naming the nearest serial it has (`ONU BBSM0000001 not found on this
    OLT; did you mean BBSM00000001?`) when it has none of that serial."""
    try:
        return olt.onu_by_serial(serial)
    except NotFound:
        hint = did_you_mean(serial, (onu.serial for onu in olt.onus))
        same = _same_number(olt, serial)  # a zero too many or too few: the serial of that number, not a neighbour
        if same:
            hint = f"; did you mean {same}?"
        raise NotFound(f"ONU {serial} not found on this OLT{hint or ' (oltsimctl onu list names its ONUs)'}") \
            from None


def _same_number(olt, serial: str) -> str:
    """The serial of `olt` with the vendor and the number `serial` has, zeros aside (BBSM0000001: BBSM00000001)."""
    vendor, digits = serial[:4].upper(), serial[4:]
    try:
        number = int(digits, 16)
    except ValueError:
        return ""
    for onu in olt.onus:
        if onu.serial[:4].upper() == vendor:
            try:
                if int(onu.serial[4:], 16) == number:
                    return onu.serial
            except ValueError:
                continue
    return ""


def _scenario_kept(capture_filter: CaptureFilter, targets: tuple, olt) -> bool:
    """A scenario event is kept when it names a kept ONU or PON, or none at all (the scenario's own start/end)."""
    named = False
    for target in targets:
        if target.startswith("pon "):
            named = True
            if capture_filter.pon is not None and target == f"pon {capture_filter.pon}" and not capture_filter.onus:
                return True
        elif target in ("olt",) or target.startswith("nni "):
            continue
        else:
            named = True
            if serial_key(target) in capture_filter.onus:
                return True
            if capture_filter.pon is not None and not capture_filter.onus:
                try:
                    if olt.onu_by_serial(target).pon.id == capture_filter.pon:
                        return True
                except NotFound:
                    pass
    return not named


def _decode(data):
    if data.__class__ is tuple:
        data = data[0]
    try:
        return f.decode(data)
    except f.PacketError:
        return None


# ---- pcapng ------------------------------------------------------------------------------------

def onu_mac(olt_id: int, pon: int, onu_id: int) -> bytes:
    """The address an ONU's OMCI frames carry: 02:00:<olt>:<pon>:<onu id, 2 octets>."""
    return bytes((0x02, 0x00, olt_id & 0xFF, pon & 0xFF, (onu_id >> 8) & 0xFF, onu_id & 0xFF))


def olt_mac(olt_id: int, pon: int) -> bytes:
    """The address the OLT's side of a PON's OMCI carries: 02:ff:<olt>:<pon>:00:00."""
    return bytes((0x02, 0xFF, olt_id & 0xFF, pon & 0xFF, 0, 0))


ETH_OMCI = 0x88B5


def omci_summary(message: bytes) -> str:
    """`omci=<message type> me=<class>/<instance> tid=<transaction id>` of an OMCI message (what omci.lua shows),
    or "" when it is too short."""
    if len(message) < 8:
        return ""
    tid = int.from_bytes(message[0:2], "big")
    mtype = message[2]
    action = codec.ACTION_NAMES.get(mtype & 0x1F, f"type-{mtype & 0x1F}")
    if mtype & 0x20:
        action += "-response"
    me_class = int.from_bytes(message[4:6], "big")
    me_id = int.from_bytes(message[6:8], "big")
    me = codec.ME_CLASSES.get(me_class)
    name = f"{me.name}({me_class})" if me is not None else str(me_class)
    ext = " extended" if message[3] == 0x0B else ""
    return f"omci={action}{ext} me={name}/{me_id} tid={tid:#06x}"


def annotation_text(event) -> str:
    """One line saying what an annotation's model event was, for people."""
    kind = event.__class__
    if kind is events.StateChanged:
        where = {"olt": "OLT", "nni": f"NNI {event.pon_id}" if event.pon_id >= 0 else "NNI",
                 "pon": f"PON {event.pon_id}", "onu": f"ONU {event.serial}",
                 "uni": f"ONU {event.serial} UNI {event.uni_id}"}.get(event.device, event.device)
        return f"{where} {event.attribute}: {event.src} -> {event.dest}"
    if kind is events.Alarm:
        fields = " ".join(f"{k}={v}" for k, v in event.fields.items())
        return f"alarm {event.kind}{' ' + event.serial if event.serial else ''} {fields}".rstrip()
    if kind is events.AlarmCleared:
        return f"alarm {event.kind} cleared{' ' + event.serial if event.serial else ''} ({event.reason})"
    if kind is events.OmciAlarm:
        state = "raised" if event.raised else "cleared"
        return f"ONU {event.serial} OMCI alarm LOS {state} on ME {event.me_class}/{event.me_id}"
    if kind is events.ScenarioEvent:
        text = f"{event.kind} {event.scenario}"
        if event.step:
            text += f" step {event.step!r}"
        if event.action:
            text += f" ({event.action})"
        if event.targets:
            shown = ", ".join(event.targets[:8]) + (f" and {len(event.targets) - 8} more"
                                                   if len(event.targets) > 8 else "")
            text += f" targets {shown}"
        if event.outcome:
            text += f": {event.outcome}"
        return text
    if kind is events.OnuDiscovery:
        return f"OnuDiscInd: ONU {event.serial} discovered on PON {event.intf_id}"
    if kind is events.OnuIndication:
        return (f"OnuInd: ONU {event.serial} (PON {event.intf_id}, ONU id {event.onu_id}) "
                f"oper {event.oper_state} admin {event.admin_state}")
    if kind is events.OltIndication:
        return f"OltInd: OLT {event.oper_state}"
    if kind is events.FlowChanged:
        return (f"flow {event.flow_id} {event.flow_type} {'added' if event.added else 'removed'} "
                f"(PON {event.pon_id}, ONU id {event.onu_id})")
    if kind is events.OpenoltRequest:
        target = f" for ONU {event.serial}" if event.serial else ""
        return f"the adapter called {event.rpc}{target}"
    if kind is events.MibUpload:
        return f"ONU {event.serial} MIB upload {'ended' if event.done else 'started'}"
    return repr(event)


class PcapngWriter:
    """Records -> pcapng blocks for one output: the interfaces are declared as their first packet needs them."""

    def __init__(self, capture: Capture):
        self.capture = capture
        self.olt_id = capture.olt.id
        self.interfaces: dict = {}
        self._omci: dict = {}  # OMCI interfaces' (index, Ethernet headers), by their key in `interfaces`

    def header(self) -> bytes:
        """The Section Header Block that starts the output."""
        return pcapng.section_header(f"oltsim {__version__}")

    def _interface(self, key, linktype: int, name: str, description: str) -> tuple[int, bytes]:
        index = self.interfaces.get(key)
        if index is not None:
            return index, b""
        index = self.interfaces[key] = len(self.interfaces)
        return index, pcapng.interface_description(linktype, name, description)

    def _omci_interface(self, serial: str, pon: int, onu_id: int) -> tuple[int, bytes, tuple[bytes, bytes]]:
        """The interface of an ONU's OMCI channel (declared the first time: its IDB, else b"") and its Ethernet
        headers (to the ONU, from it): worked out once per ONU, since a capture writes them for every message."""
        key = (OMCI, serial, pon, onu_id)
        known = self._omci.get(key)
        if known is not None:
            return known[0], b"", known[1]
        onu, olt = onu_mac(self.olt_id, pon, onu_id), olt_mac(self.olt_id, pon)
        index, idb = self._interface(key, pcapng.LINKTYPE_ETHERNET, f"{serial or f'pon-{pon}-onu-{onu_id}'} omci",
                                     f"OMCI channel of ONU {serial} (PON {pon}, ONU id {onu_id}); "
                                     f"ONU {_mac(onu)}, OLT {_mac(olt)}")
        ethertype = ETH_OMCI.to_bytes(2, "big")
        headers = (onu + olt + ethertype, olt + onu + ethertype)
        self._omci[key] = (index, headers)
        return index, idb, headers

    def note(self, timestamp: float, text: str) -> bytes:
        """An annotation of oltsim's own (dropped frames, the end of a stream) on the events interface."""
        index, idb = self._interface(EVENT, pcapng.LINKTYPE_WIRESHARK_UPPER_PDU, "events", _EVENTS_DESCRIPTION)
        return idb + pcapng.enhanced_packet(index, timestamp, pcapng.annotation(text), comment=text)

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
            flags = pcapng.INBOUND if up else pcapng.OUTBOUND
        elif point == UNI:
            port = record[PORT]
            index = self.interfaces.get((UNI, serial, port))
            if index is not None:
                idb = b""
            else:
                uni = f"uni-{port}" if port >= 0 else "uni-unknown"
                index, idb = self._interface((UNI, serial, port), pcapng.LINKTYPE_ETHERNET, f"{serial} {uni}",
                                             f"UNI {port} of ONU {serial} (PON {pon}, ONU id {onu_id}): frames as "
                                             f"the subscriber sends and receives them")
            packet = data
            service = self.capture.service_of(record)
            comment = (f"serial={serial} pon={pon} onu={onu_id} uni={port} gem={record[GEM]}"
                       f"{' service=' + service if service else ''} {'from' if up else 'to'} subscriber")
            flags = pcapng.INBOUND if up else pcapng.OUTBOUND
        else:
            port = record[PORT]
            index, idb = self._interface((NNI, port), pcapng.LINKTYPE_ETHERNET, f"nni-{port}",
                                         f"NNI {port}: frames as the flows tag them")
            packet = data
            owner, owner_pon = self.capture.nni_owner(record)
            service = self.capture.service_of(record) if owner else ""
            comment = (f"{'serial=' + owner + ' pon=' + str(owner_pon) + ' ' if owner else ''}"
                       f"{'service=' + service + ' ' if service else ''}nni={port} "
                       f"{'to' if up else 'from'} network")
            flags = pcapng.OUTBOUND if up else pcapng.INBOUND
        return idb + pcapng.enhanced_packet(index, record[TIME], packet, original, comment, flags)


_EVENTS_DESCRIPTION = "oltsim annotations: scenario steps, alarms, state changes (text in each packet's comment)"


def _mac(address: bytes) -> str:
    return ":".join(f"{b:02x}" for b in address)


# ---- live streams ------------------------------------------------------------------------------

#: bytes of waiting records a stream writes at a read (its ring's part, written as the reader takes it)
READ_CHUNK = 256 * 1024
#: live records that may wait behind a stream's unread ring part before they are dropped (about 2 MiB of frames)
QUEUE_LIMIT = 8192


class CaptureStream:
    """Live pcapng for one reader (`Capture.open_stream`); lives on the reactor thread.

    `read()` takes the bytes written so far (the Section Header first): the ring's part it was opened with is
    written as it is read, READ_CHUNK at a time, so a reader of the whole ring that does not read holds the ring's
    records, not a copy of them; live frames that come meanwhile wait behind it, QUEUE_LIMIT of them at most.
    `wakeup`, when set, is called with no argument whenever bytes become readable or the stream ends. `ended` is None while the stream is live, else why
    it ended: ``count``, ``duration``, ``closed`` (the reader closed it), ``stopped`` (the OLT is stopping, said
    in a last annotation). A reader that does not read costs at most `limit` bytes: beyond, frames are dropped
    and counted (`dropped`) until it has read half, then an annotation in the stream says how many were lost; the
    OLT never waits. `chunks()` is the same as an async iterator for a reader on the reactor's asyncio loop."""

    def __init__(self, capture: Capture, capture_filter: CaptureFilter, count: int | None, limit: int):
        self.capture = capture
        self.filter = capture_filter
        self.count = count
        self.limit = limit
        self.frames = 0
        self.dropped = 0
        self.dropping = False
        self.ended: str | None = None
        self.wakeup: Callable[[], None] | None = None
        self._writer = PcapngWriter(capture)
        self._chunks: list[bytes] = [self._writer.header()]
        self._size = len(self._chunks[0])
        self._timer = None
        #: records still to write, in order: the ring's part, then live ones that came while it was not read
        self._backlog: deque = deque()
        self._queued = 0  # how many of the backlog's last records came live
        self._last_note: bytes | None = None  # the end's annotation, written after the backlog
        #: how far back the ring reached when the stream opened (Capture.coverage), for the surfaces' report
        self.coverage: Coverage | None = None

    @property
    def pending(self) -> int:
        """Bytes written and not yet read (more than 0, too, while records wait to be written)."""
        return self._size + (1 if self._backlog else 0)

    def read(self) -> bytes:
        """What was written since the last read, and up to READ_CHUNK of the records waiting (b"" when nothing
        is)."""
        if self._backlog:
            self._fill()
        if not self._chunks:
            return b""
        data = b"".join(self._chunks)
        self._chunks.clear()
        self._size = 0
        return data

    def close(self) -> None:
        """The reader is done: stop following the ring (what is unread stays readable)."""
        self._end("closed")

    async def chunks(self, gather: float = 0.0):
        """Async iterator of pcapng chunks until the stream ends; closes the stream when left early. With `gather`,
        what comes is taken that many seconds after the first of it, in one chunk (a live capture at a bring-up's
        rate is otherwise a chunk per frame)."""
        loop = asyncio.get_running_loop()
        try:
            while True:
                data = self.read()
                if data:
                    yield data
                    continue
                if self.ended is not None:
                    return
                waiter = loop.create_future()
                self.wakeup = lambda: waiter.done() or waiter.set_result(None)
                await waiter
                if gather and self.ended is None:
                    await asyncio.sleep(gather)
        finally:
            self.wakeup = None
            self.close()

    # ---- fed by the ring -----------------------------------------------------------------------

    def _offer(self, record: tuple) -> None:
        if not self.capture.keeps(self.filter, record):
            return
        if self._backlog:
            if self._queued >= QUEUE_LIMIT:  # told by an annotation after the ones that waited (see below)
                self.dropping = True
                self.dropped += record[POINT] != EVENT
                return
            self._backlog.append(record)
            self._queued += 1
            return
        if self.dropping:
            if self._size > self.limit // 2:
                self.dropped += record[POINT] != EVENT
                return
            self.dropping = False
            self._push(self._writer.note(record[TIME], f"oltsim dropped {self.dropped} frames here: the "
                                                       f"capture's reader fell {self.limit} bytes behind"))
        elif self._size > self.limit:
            self.dropping = True
            self.dropped += record[POINT] != EVENT
            return
        self._write(record)

    def _fill(self) -> None:
        """Write waiting records until READ_CHUNK bytes are unread, or none waits."""
        backlog = self._backlog
        while backlog and self._size < READ_CHUNK:
            if self.count is not None and self.frames >= self.count:
                backlog.clear()
                break
            self._write(backlog.popleft())
        self._queued = min(self._queued, len(backlog))
        if not backlog and self._last_note is not None:
            note, self._last_note = self._last_note, None
            self._chunks.append(note)
            self._size += len(note)

    def _write(self, record: tuple) -> None:
        self._push(self._writer.block(record))
        if record[POINT] != EVENT:
            self.frames += 1
            if self.count is not None and self.frames >= self.count:
                self._end("count")

    def _push(self, data: bytes) -> None:
        was_empty = not self._chunks
        self._chunks.append(data)
        self._size += len(data)
        if was_empty and self.wakeup is not None:
            self.wakeup()

    def _end(self, reason: str) -> None:
        if self.ended is not None:
            return
        self.ended = reason
        if self in self.capture.streams:
            self.capture.streams.remove(self)
        timer, self._timer = self._timer, None
        if timer is not None and timer.active():
            timer.cancel()
        if reason == "closed":
            self._backlog.clear()  # nobody will read them
        if reason == "stopped":
            note = self._writer.note(self.capture.clock.seconds(), "capture ended: oltsim is stopping")
            if self._backlog:
                self._last_note = note
            else:
                self._chunks.append(note)
                self._size += len(note)
        if self.wakeup is not None:
            self.wakeup()
