"""Bandwidth profiles on the wire: the OLT's upstream DBA per T-CONT and its downstream scheduler per ONU/UNI.

The adapter's CreateTrafficSchedulers carries, per scheduler, a `TrafficShapingInfo` in kbit/s (the openolt
adapter's meter mapping, voltha-lib-go `meters.GetTrafficShapingInfo`): one band with no burst is a fixed rate
(GIR = PIR, T-CONT type 1), one band with a burst a peak (PIR, PBS, type 4), two bands a peak and an assured rate
(PIR/PBS and CIR/CBS, types 2 and 3), three bands those with a fixed rate (GIR, type 5). The model keeps them per
ONU (`Onu.schedulers`, replaced as a whole on each change); a frame's queue key names its ONU and alloc id.

A shaper is what a real OLT does, not a policer: frames above the rate wait in a FIFO bounded in bytes and leave at
the peak rate (a token bucket: the rate is the peak, PIR, or the fixed rate when there is no peak; the bucket holds
the larger of CBS and PBS, in bytes, but at least `MIN_BURST_SECONDS` of the rate and two full frames, since the
reactor wakes the shaper with a millisecond's lateness and a smaller bucket would lose those tokens); a frame that
finds the queue full is dropped at the tail, counted. TCP then sees a queue and its losses, as at a real OLT, and
settles at the rate. The assured and fixed rates (CIR, GIR) are shown and kept for sharing the PON's capacity.

No scheduler for a frame's key: no limit (frames pass, counted). A scheduler created, changed or removed takes
effect at the next frame or wake of its queue (the model's dict is replaced, the queue sees it by identity); a
removed one releases its queued frames at the next wake.

Pure: no I/O, no clock of its own; `now` comes from the caller (the service's reactor).
"""
from __future__ import annotations

from collections import deque

__all__ = ["DOWN", "DROPPED", "Limit", "QUEUED", "SEND", "Shaper", "UP", "limit_of"]

#: what `Shaper.offer` answers
SEND, QUEUED, DROPPED = 0, 1, 2
#: a queue key's first element: ("up", onu, alloc_id) for a T-CONT, ("down", onu, uni_id, alloc_id) for a
#: downstream scheduler
UP, DOWN = "up", "down"
#: tech_profile.Direction
_UPSTREAM, _DOWNSTREAM, _BIDIRECTIONAL = 0, 1, 2
#: the bucket holds at least this much of its rate (the reactor's lateness must not cost tokens)
MIN_BURST_SECONDS = 0.02
#: ... and at least two full frames
MIN_BURST_BYTES = 2 * 1522
#: the queue's bound in bytes: the larger of this, the bucket, and QUEUE_SECONDS of the rate, at most MAX_QUEUE_BYTES
MIN_QUEUE_BYTES = 64 * 1024
QUEUE_SECONDS = 0.02
MAX_QUEUE_BYTES = 4 * 1024 * 1024
#: queues kept at most; past it the idle ones are forgotten
MAX_QUEUES = 16384
#: the shortest time `due` names for the next wake-up (less than MIN_BURST_SECONDS: no token is lost)
WAKE_SECONDS = 0.001
#: bytes of tokens that count as none missing (float rounding of the wake-up's time)
_EPSILON = 0.5


class Limit:
    """One scheduler's shaping: `rate` in bytes per second, `burst` (the bucket) and `queue` (the FIFO's bound) in
    bytes; `pir`, `cir`, `gir` (kbit/s), `pbs`, `cbs` (bytes) as the adapter sent them."""

    __slots__ = ("rate", "burst", "queue", "pir", "cir", "gir", "pbs", "cbs")

    def __init__(self, *, pir: int = 0, cir: int = 0, gir: int = 0, pbs: int = 0, cbs: int = 0):
        peak = pir or max(cir, gir)
        if peak <= 0:
            raise ValueError("a limit needs a rate (pir, cir or gir above 0)")
        self.pir, self.cir, self.gir, self.pbs, self.cbs = pir, cir, gir, pbs, cbs
        self.rate = peak * 125.0          # kbit/s -> bytes/s
        self.burst = max(pbs, cbs, MIN_BURST_SECONDS * self.rate, MIN_BURST_BYTES)
        self.queue = min(max(MIN_QUEUE_BYTES, self.burst, QUEUE_SECONDS * self.rate), MAX_QUEUE_BYTES)

    def __eq__(self, other):
        return isinstance(other, Limit) and self.as_tuple() == other.as_tuple()

    def __hash__(self):
        return hash(self.as_tuple())

    def as_tuple(self) -> tuple:
        return (self.pir, self.cir, self.gir, self.pbs, self.cbs)

    def as_dict(self) -> dict:
        return {"pir": self.pir, "cir": self.cir, "gir": self.gir, "pbs": self.pbs, "cbs": self.cbs,
                "queue_limit_bytes": int(self.queue)}


def limit_of(info) -> Limit | None:
    """The `Limit` of a `TrafficShapingInfo` (or anything with its fields), None when it names no rate."""
    pir, cir, gir = info.pir, info.cir, info.gir
    if pir <= 0 and cir <= 0 and gir <= 0:
        return None
    return Limit(pir=pir, cir=cir, gir=gir, pbs=info.pbs, cbs=info.cbs)


def _scheduler_for(key, schedulers: dict):
    """The TrafficScheduler of `schedulers` (an `Onu.schedulers`) that shapes `key`'s frames, or None: upstream the
    one of the T-CONT's alloc id; downstream the one of the alloc id, else the UNI's (one per UNI, as the openolt
    agent's downstream scheduler is)."""
    if not schedulers:
        return None
    if key[0] == UP:
        alloc = key[2]
        entry = schedulers.get((_UPSTREAM, alloc)) or schedulers.get((_BIDIRECTIONAL, alloc))
        return entry[1] if entry else None
    _, _, uni_id, alloc = key
    entry = schedulers.get((_DOWNSTREAM, alloc)) or schedulers.get((_BIDIRECTIONAL, alloc))
    if entry:
        return entry[1]
    for (direction, _), (uni, sched) in schedulers.items():
        if direction in (_DOWNSTREAM, _BIDIRECTIONAL) and uni == uni_id:
            return sched
    return None


class _Queue:
    """One T-CONT's or downstream scheduler's bucket, FIFO and counters."""

    __slots__ = ("key", "onu", "source", "limit", "tokens", "stamp", "fifo", "depth", "sent_frames", "sent_bytes",
                 "dropped_frames", "dropped_bytes")

    def __init__(self, key, now: float):
        self.key = key
        self.onu = key[1]
        self.source = None
        self.limit = None
        self.tokens = 0.0
        self.stamp = now
        self.fifo: deque = deque()
        self.depth = 0
        self.sent_frames = self.sent_bytes = self.dropped_frames = self.dropped_bytes = 0

    def refresh(self, now: float) -> None:
        """Read the ONU's schedulers again (a new dict: one was created, changed or removed)."""
        source = getattr(self.onu, "schedulers", None)
        self.source = source
        sched = _scheduler_for(self.key, source)
        limit = limit_of(sched.traffic_shaping_info) if sched is not None else None
        if limit == self.limit:
            return
        if limit is not None:
            # a new bucket starts full (a real OLT's new allocation has its burst); a changed one keeps what it
            # had, within its new size
            self.tokens = limit.burst if self.limit is None else min(self.tokens, limit.burst)
            self.stamp = now
        self.limit = limit


class Shaper:
    """Every T-CONT's and downstream scheduler's queue, made on a key's first frame.

    `offer(key, item, size, now)`: SEND (pass it on now), QUEUED (held: `due` gives it back) or DROPPED (the queue
    was full: counted). `due(now)`: the items whose time has come, in order per queue, and the time of the next one
    (None when nothing waits)."""

    def __init__(self, max_queues: int = MAX_QUEUES):
        self.max_queues = max_queues
        self._queues: dict = {}
        self._backlog: dict = {}        # key -> _Queue with frames waiting

    @property
    def backlogged(self) -> bool:
        """Whether frames wait."""
        return bool(self._backlog)

    def offer(self, key, item, size: int, now: float) -> int:
        q = self._queues.get(key)
        if q is None:
            if len(self._queues) >= self.max_queues:
                # ever new alloc ids (an adapter provisioning again and again) must not grow memory: the idle
                # queues (and their counts) are forgotten, and made again at their next frame
                self._queues = {k: old for k, old in self._queues.items() if old.fifo}
            q = self._queues[key] = _Queue(key, now)
            q.refresh(now)
        elif q.source is not q.onu.schedulers:
            q.refresh(now)
        limit = q.limit
        if limit is None:
            q.sent_frames += 1
            q.sent_bytes += size
            return SEND
        tokens = q.tokens + (now - q.stamp) * limit.rate
        if tokens > limit.burst:
            tokens = limit.burst
        q.stamp = now
        if not q.fifo and (tokens >= size or tokens >= limit.burst):
            q.tokens = tokens - size
            q.sent_frames += 1
            q.sent_bytes += size
            return SEND
        q.tokens = tokens
        if q.depth + size > limit.queue:
            q.dropped_frames += 1
            q.dropped_bytes += size
            return DROPPED
        q.fifo.append((item, size))
        q.depth += size
        self._backlog[key] = q
        return QUEUED

    def due(self, now: float) -> tuple[list, float | None]:
        out = []
        wake = None
        done = []
        for key, q in self._backlog.items():
            if q.source is not q.onu.schedulers:
                q.refresh(now)
            fifo = q.fifo
            limit = q.limit
            if limit is None:       # its scheduler was removed: no limit any more
                while fifo:
                    item, size = fifo.popleft()
                    q.sent_frames += 1
                    q.sent_bytes += size
                    out.append(item)
                q.depth = 0
                done.append(key)
                continue
            rate, burst = limit.rate, limit.burst
            tokens = q.tokens + (now - q.stamp) * rate
            if tokens > burst:
                tokens = burst
            q.stamp = now
            while fifo:
                item, size = fifo[0]
                if tokens < size - _EPSILON and tokens < burst - _EPSILON:
                    break
                fifo.popleft()
                tokens -= size
                q.depth -= size
                q.sent_frames += 1
                q.sent_bytes += size
                out.append(item)
            q.tokens = tokens
            if fifo:
                # at least WAKE_SECONDS on: each wake-up sends what a millisecond's tokens pay for (the bucket holds
                # more than that), rather than one frame per reactor turn and timer
                at = now + max((min(fifo[0][1], burst) - tokens) / rate, WAKE_SECONDS)
                if wake is None or at < wake:
                    wake = at
            else:
                done.append(key)
        for key in done:
            del self._backlog[key]
        return out, wake

    def clear(self) -> None:
        """Forget every queued frame (the service stops)."""
        for q in self._backlog.values():
            q.fifo.clear()
            q.depth = 0
        self._backlog.clear()

    def counters(self) -> list[dict]:
        """Per queue: its direction, ONU (serial, PON, ONU id), alloc id (and UNI downstream), its limit (None: no
        scheduler), frames and bytes sent, dropped by the shaper (`dropped: {"shaper": frames}`), queue depth."""
        rows = []
        for key, q in self._queues.items():
            onu = q.onu
            row = {"direction": key[0], "serial": getattr(onu, "serial", None),
                   "pon": getattr(getattr(onu, "pon", None), "id", None), "onu_id": getattr(onu, "onu_id", None),
                   "alloc_id": key[-1]}
            if key[0] == DOWN:
                row["uni_id"] = key[2]
            row.update(limit=q.limit.as_dict() if q.limit is not None else None, sent_frames=q.sent_frames,
                       sent_bytes=q.sent_bytes, dropped={"shaper": q.dropped_frames} if q.dropped_frames else {},
                       dropped_bytes=q.dropped_bytes, queue_frames=len(q.fifo), queue_bytes=q.depth)
            rows.append(row)
        return rows
