"""The capture ring and its records: what is recorded, how long it is kept, how far back it reaches, and the
filtered snapshots and live streams read from it (the API is described in `oltsim.capture`)."""
from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass

from oltsim.capture.filters import CaptureFilter, check_serial, keeps
from oltsim.capture.owners import MacOwners
from oltsim.capture.pcapng import PcapngWriter
# the records' layout, importable from the ring as it always was
from oltsim.capture.records import (DATA, EVENT, GEM, NNI, OMCI, ONU_ID, POINT, POINT_NAMES, PON,  # noqa: F401
                                    PORT, SERIAL, TIME, UNI, UP)
from oltsim.capture.sizes import DEFAULT_SIZE, FLOOR_MAX, MAX_SIZE
from oltsim.capture.stream import CaptureStream
from oltsim.logs import logger
from oltsim.model import events
from oltsim.model.errors import InvalidArgument, NotFound, ResourceExhausted

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


class Capture:
    """The OLT's capture ring (see `oltsim.capture`): built by the composition root when the size is not 0; `size`
    None is `auto_size(olt)`.

    Subscribes to the OLT's events for what the ONUs and the NNI send to the adapter and for the annotations; the
    southbound calls `omci_out`, `packet_out` and `uplink_out` for what the adapter sends, the data plane
    `uni_frame` and `nni_frame` for the frames it forwards. Runs on the reactor thread, as the model."""

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
        #: whose a UNI or NNI frame is, by its subscriber's MAC
        self.owners = MacOwners(olt)
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
        found = onu.eth_uni_with_port_no(port_no)
        uni = found.id if found is not None else -1
        if len(pkt) > SNAPLEN:
            pkt = (pkt[:SNAPLEN], len(pkt))
        self._add((self.clock.seconds(), UNI, False, onu.serial, onu.pon.id, onu.onu_id, uni, gemport_id, pkt))

    def uplink_out(self, nni_id: int, pkt: bytes) -> None:
        """The adapter sent `pkt` out of NNI `nni_id` (UplinkPacketOut)."""
        if len(pkt) > SNAPLEN:
            pkt = (pkt[:SNAPLEN], len(pkt))
        self._add((self.clock.seconds(), NNI, True, "", -1, -1, nni_id, 0, pkt))

    def uni_frame(self, serial: str, pon: int, onu_id: int, uni_id: int, up: bool, frame: bytes, gem: int = 0) -> None:
        """A frame at UNI `uni_id` of the ONU (`serial`, `pon`, `onu_id`) that is not a packet indication or an
        OnuPacketOut (the data plane's, --capture-data-frames): `up` True when it comes from the subscriber."""
        if len(frame) > SNAPLEN:
            frame = (frame[:SNAPLEN], len(frame))
        self._add((self.clock.seconds(), UNI, up, serial, pon, onu_id, uni_id, gem, frame))

    def nni_frame(self, nni_id: int, up: bool, frame: bytes) -> None:
        """A frame at NNI `nni_id` that is not an UplinkPacketOut or a packet indication (the data plane's,
        --capture-data-frames): `up` True when it goes out of the NNI towards the network."""
        if len(frame) > SNAPLEN:
            frame = (frame[:SNAPLEN], len(frame))
        self._add((self.clock.seconds(), NNI, up, "", -1, -1, nni_id, 0, frame))

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

    # ---- filters ------------------------------------------------------------------------------

    def keeps(self, capture_filter: CaptureFilter, record: tuple) -> bool:
        """Whether `capture_filter` keeps `record` (filters.keeps)."""
        return keeps(capture_filter, record, self.olt, self.owners)

    def nni_owner(self, record: tuple) -> tuple[str, int]:
        """(serial, PON) of the subscriber an NNI frame is from or for, ("", -1) when none (owners.MacOwners)."""
        return self.owners.nni_owner(record)

    def service_of(self, record: tuple) -> str:
        """The service name of a UNI or NNI frame, "" if none (owners.MacOwners)."""
        return self.owners.service_of(record)
