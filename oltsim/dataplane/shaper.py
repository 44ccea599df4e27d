"""Bandwidth profiles on the wire: the OLT's upstream DBA per T-CONT and its downstream scheduler per ONU/UNI, the
GEM-port queues inside each, and the PON's own capacity shared among them.

The adapter's CreateTrafficSchedulers carries, per scheduler, a `TrafficShapingInfo` in kbit/s (the openolt
adapter's meter mapping, voltha-lib-go `meters.GetTrafficShapingInfo`): one band with no burst is a fixed rate
(GIR = PIR, T-CONT type 1), one band with a burst a peak (PIR, PBS, type 4), two bands a peak and an assured rate
(PIR/PBS and CIR/CBS, types 2 and 3), three bands those with a fixed rate (GIR, type 5). The model keeps them per
ONU (`Onu.schedulers`, replaced as a whole on each change), and the queues of CreateTrafficQueues (`Onu.queues`: a
GEM port's priority, weight, sched_policy). A frame's queue key names its ONU, alloc id and GEM port.

A shaper is what a real OLT does, not a policer: frames above the rate wait in their GEM port's queue, bounded in
bytes, and leave at the T-CONT's rate (a token bucket: the rate is the peak, PIR, or the fixed rate when there is no
peak; the bucket holds the larger of CBS and PBS, in bytes, but at least `MIN_BURST_SECONDS` of the rate and two full
frames, since the reactor wakes the shaper with a millisecond's lateness and a smaller bucket would lose those
tokens); a frame that finds its GEM port's queue full is dropped at the tail, counted per GEM port. TCP then sees a
queue and its losses, as at a real OLT, and settles at the rate.

GEM queues: the T-CONT's tokens serve its GEM ports by the tech profile's `q_sched_policy` (the TrafficScheduler's
`scheduler.sched_policy`): StrictPriority and Hybrid serve the queue of the highest `priority` first (0..7, 7 the
highest, as voltha-openonu-adapter-go reads the tech profile's priority_q), queues of one priority sharing by weight;
WRR shares by weight alone (deficit round robin, a weight of 0 counting as 1). A GEM port with no TrafficQueue has
priority 0 and weight 0. A T-CONT with one GEM port is one FIFO, as before.

The PON's capacity (`rate_up`, `rate_down` in bit/s; None: the PON's technology's line rate, `LINE_RATES`): while the
peaks of a PON's shaped T-CONTs (downstream: its schedulers) add up to no more than its rate, each T-CONT's bucket
fills at its peak, as before. Past that, at once and then every `CYCLE_SECONDS` (a DBA cycle, on the caller's `now`,
run at a wake-up of a T-CONT whose frames wait: while none waits, each is within the rate it was given) each is
given a rate: its GIR whatever it asks (fixed bandwidth is reserved), then its CIR up to what it asks, then what the
PON has left by the scheduler's priority (higher first) and, within one priority, by weight (water-filling: none gets
more than it asks or its PIR), then whatever is still left up to its PIR. A T-CONT asks for its PIR while frames wait
in its queues or it used nearly all its rate, else for what it offered in the last cycle (and a tenth more). The
GIRs and CIRs together above the PON's rate are cut in proportion (an over-booked PON; a real OLT refuses it). A
T-CONT with no scheduler is not shaped and takes none of the PON's rate; its bytes are counted.

No scheduler for a frame's key: no limit (frames pass, counted). A scheduler created, changed or removed takes effect
at the next frame or wake of its T-CONT, a queue's priority or weight at the next wake (the model's dicts are
replaced, the shaper sees them by identity); a removed scheduler releases the queued frames at the next wake.

Pure: no I/O, no clock of its own; `now` comes from the caller (the service's reactor).
"""
from __future__ import annotations

from collections import deque

__all__ = ["CYCLE_SECONDS", "DOWN", "DROPPED", "LINE_RATES", "Limit", "QUEUED", "SEND", "Shaper", "UP", "limit_of"]

#: what `Shaper.offer` answers
SEND, QUEUED, DROPPED = 0, 1, 2
#: a queue key's first element: ("up", onu, alloc_id, gemport_id) for a T-CONT's GEM port, ("down", onu, uni_id,
#: alloc_id, gemport_id) for a downstream scheduler's
UP, DOWN = "up", "down"
#: tech_profile.Direction
_UPSTREAM, _DOWNSTREAM, _BIDIRECTIONAL = 0, 1, 2
#: tech_profile.SchedulingPolicy
_WRR, _STRICT_PRIORITY, _HYBRID = 0, 1, 2
_POLICY_NAMES = {_WRR: "WRR", _STRICT_PRIORITY: "StrictPriority", _HYBRID: "Hybrid"}
#: the bucket holds at least this much of its rate (the reactor's lateness must not cost tokens)
MIN_BURST_SECONDS = 0.02
#: ... and at least two full frames
MIN_BURST_BYTES = 2 * 1522
#: a GEM port queue's bound in bytes: the larger of this, the bucket, and QUEUE_SECONDS of the rate, at most
#: MAX_QUEUE_BYTES
MIN_QUEUE_BYTES = 64 * 1024
QUEUE_SECONDS = 0.02
MAX_QUEUE_BYTES = 4 * 1024 * 1024
#: T-CONTs (and downstream schedulers) kept at most; past it the idle ones are forgotten
MAX_QUEUES = 16384
#: the shortest time `due` names for the next wake-up (less than MIN_BURST_SECONDS: no token is lost)
WAKE_SECONDS = 0.001
#: bytes of tokens that count as none missing (float rounding of the wake-up's time)
_EPSILON = 0.5
#: deficit round robin: the bytes a queue of the lowest weight of its priority may send per round (eight full frames:
#: fewer turns per frame, and a GSO super-frame of 64 KiB waits a few rounds, not forty)
QUANTUM_BYTES = 8 * 1522
#: a PON's DBA cycle: how often the rates of its T-CONTs are given anew while their peaks exceed its rate
CYCLE_SECONDS = 0.01
#: bit/s of each PON technology's line, (upstream, downstream): XGS-PON 9.95328 Gbit/s both ways (ITU-T G.9807.1),
#: GPON 1.24416 up and 2.48832 down (G.984.2)
LINE_RATES = {"XGS-PON": (9_953_280_000, 9_953_280_000), "GPON": (1_244_160_000, 2_488_320_000)}
_NEVER = float("inf")


class Limit:
    """One scheduler's shaping: `rate` in bytes per second, `burst` (the bucket) and `queue` (a GEM port queue's bound)
    in bytes; `pir`, `cir`, `gir` (kbit/s), `pbs`, `cbs` (bytes) as the adapter sent them."""

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
    """The TrafficScheduler of `schedulers` (an `Onu.schedulers`) that shapes T-CONT key `key`'s frames, or None:
    upstream the one of the T-CONT's alloc id; downstream the one of the alloc id, else the UNI's (one per UNI, as the
    openolt agent's downstream scheduler is)."""
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


def _queue_for(direction: str, gem, queues) -> tuple[int, int]:
    """(priority, weight) of GEM port `gem`'s TrafficQueue in `queues` (an `Onu.queues`) for `direction`; (0, 0)
    when there is none."""
    if not queues:
        return 0, 0
    entry = queues.get((_UPSTREAM if direction == UP else _DOWNSTREAM, gem)) or queues.get((_BIDIRECTIONAL, gem))
    if entry is None:
        return 0, 0
    queue = entry[1]
    return int(getattr(queue, "priority", 0)), int(getattr(queue, "weight", 0))


class _Gem:
    """One GEM port's queue in its T-CONT: FIFO, bound (the T-CONT's limit), scheduling (priority, weight, the
    deficit of its round) and counters."""

    __slots__ = ("key", "tcont", "gem", "fifo", "depth", "priority", "weight", "quantum", "deficit", "turn",
                 "sent_frames", "sent_bytes", "dropped_frames", "dropped_bytes")

    def __init__(self, key, tcont):
        self.key = key
        self.tcont = tcont
        self.gem = key[-1]
        self.fifo: deque = deque()
        self.depth = 0
        self.priority = self.weight = 0
        self.quantum = QUANTUM_BYTES
        self.deficit = 0.0
        self.turn = False           # its round's quantum is given (deficit round robin)
        self.sent_frames = self.sent_bytes = self.dropped_frames = self.dropped_bytes = 0

    def as_dict(self) -> dict:
        return {"gemport_id": self.gem, "priority": self.priority, "weight": self.weight,
                "sent_frames": self.sent_frames, "sent_bytes": self.sent_bytes,
                "dropped": {"shaper": self.dropped_frames} if self.dropped_frames else {},
                "dropped_bytes": self.dropped_bytes, "queue_frames": len(self.fifo), "queue_bytes": self.depth}


class _Pon:
    """One PON's capacity in one direction: its rate, its shaped T-CONTs (their peaks' sum), when the next DBA
    cycle is due, and the bytes offered to and carried by its T-CONTs."""

    __slots__ = ("key", "pon", "direction", "rate", "tconts", "peaks", "due_at", "stamp", "offered", "carried",
                 "congested")
    # `offered` and `carried`: those of its T-CONTs forgotten (`Shaper.pon_counters` adds the others')

    def __init__(self, key, pon, direction: str, rate_bps: float, now: float):
        self.key = key
        self.pon = pon
        self.direction = direction
        self.rate = rate_bps / 8.0           # bytes/s
        self.tconts: dict = {}               # shaped _Tcont -> None
        self.peaks = 0.0                     # their PIRs, bytes/s
        self.due_at = _NEVER
        self.stamp = now
        self.offered = self.carried = 0
        self.congested = False


class _Tcont:
    """One T-CONT's (or downstream scheduler's) bucket, its rate now (its PIR, or what the PON gives it), its GEM
    port queues by priority, what it had offered at the last DBA cycle."""

    __slots__ = ("key", "onu", "pon", "source", "qsource", "limit", "rate", "tokens", "stamp", "gems", "levels",
                 "depth", "counted", "policy", "priority", "weight")

    def __init__(self, key, onu, pon: _Pon, now: float):
        self.key = key
        self.onu = onu
        self.pon = pon
        self.source = self.qsource = None
        self.limit = None
        self.rate = 0.0
        self.tokens = 0.0
        self.stamp = now
        self.gems: dict = {}                # gemport id -> _Gem
        self.levels: list = []              # [[_Gem, ...] of one priority, ...], the highest first
        self.depth = 0                      # bytes queued in all its GEM ports
        self.counted = 0                    # bytes offered until the last DBA cycle
        self.policy = _HYBRID
        self.priority = self.weight = 0

    def offered(self) -> int:
        """Bytes offered to its GEM ports until now: sent, dropped, queued."""
        return sum(g.sent_bytes + g.dropped_bytes + g.depth for g in self.gems.values())

    def sent(self) -> int:
        return sum(g.sent_bytes for g in self.gems.values())

    def arrange(self) -> None:
        """The GEM ports' levels (by priority, the highest first; one level for WRR) and quanta (by weight, the
        lowest of a level's sending QUANTUM_BYTES a round)."""
        gems = list(self.gems.values())
        by_level: dict = {}
        for gem in gems:
            level = 0 if self.policy == _WRR else gem.priority
            by_level.setdefault(level, []).append(gem)
        self.levels = [by_level[level] for level in sorted(by_level, reverse=True)]
        for level in self.levels:
            low = min(max(gem.weight, 1) for gem in level)
            for gem in level:
                gem.quantum = QUANTUM_BYTES * max(gem.weight, 1) / low


class Shaper:
    """Every T-CONT's and downstream scheduler's GEM port queues, made on a key's first frame, and the PONs they share.

    `offer(key, item, size, now)`: SEND (pass it on now), QUEUED (held: `due` gives it back) or DROPPED (its GEM
    port's queue was full: counted). `due(now)`: the items whose time has come, in order per GEM port, and the time
    of the next one (None when nothing waits). `rate_up`, `rate_down`: each PON's capacity in bit/s (None: its
    technology's line rate)."""

    def __init__(self, max_queues: int = MAX_QUEUES, *, rate_up: int | None = None, rate_down: int | None = None):
        for name, value in (("rate_up", rate_up), ("rate_down", rate_down)):
            if value is not None and value <= 0:
                raise ValueError(f"{name} must be above 0 bit/s (got {value})")
        self.max_queues = max_queues
        self.rate_up, self.rate_down = rate_up, rate_down
        self._gems: dict = {}           # frame key -> _Gem
        self._tconts: dict = {}         # T-CONT key -> _Tcont
        self._pons: dict = {}           # (direction, PON) -> _Pon
        self._backlog: dict = {}        # T-CONT key -> _Tcont with frames waiting

    @property
    def backlogged(self) -> bool:
        """Whether frames wait."""
        return bool(self._backlog)

    # ---- frames ---------------------------------------------------------------------------------------------------

    def offer(self, key, item, size: int, now: float) -> int:
        g = self._gems.get(key)
        if g is None:
            g = self._gem(key, now)
        t = g.tcont
        if t.source is not t.onu.schedulers:
            self._refresh(t, now)
        limit = t.limit
        if limit is None:
            g.sent_frames += 1
            g.sent_bytes += size
            return SEND
        tokens = t.tokens + (now - t.stamp) * t.rate
        if tokens > limit.burst:
            tokens = limit.burst
        t.stamp = now
        if not t.depth and (tokens >= size or tokens >= limit.burst):
            t.tokens = tokens - size
            g.sent_frames += 1
            g.sent_bytes += size
            return SEND
        t.tokens = tokens
        if g.depth and g.depth + size > limit.queue:   # an empty queue takes one frame of any size (a super-frame)
            g.dropped_frames += 1
            g.dropped_bytes += size
            return DROPPED
        g.fifo.append((item, size))
        g.depth += size
        t.depth += size
        self._backlog[t.key] = t
        return QUEUED

    def due(self, now: float) -> tuple[list, float | None]:
        out = []
        wake = None
        done = []
        for key, t in self._backlog.items():
            onu = t.onu
            if t.source is not onu.schedulers or t.qsource is not getattr(onu, "queues", None):
                self._refresh(t, now)
            p = t.pon
            if now >= p.due_at:
                self._allocate(p, now)
            limit = t.limit
            if limit is None:       # its scheduler was removed: no limit any more
                for level in t.levels:
                    for g in level:
                        fifo = g.fifo
                        while fifo:
                            item, size = fifo.popleft()
                            g.sent_frames += 1
                            g.sent_bytes += size
                            out.append(item)
                        g.depth = 0
                t.depth = 0
                done.append(key)
                continue
            rate, burst = t.rate, limit.burst
            tokens = t.tokens + (now - t.stamp) * rate
            if tokens > burst:
                tokens = burst
            t.stamp = now
            if len(t.gems) == 1:
                g = t.levels[0][0]
                fifo = g.fifo
                full = burst - _EPSILON
                sent = frames = 0
                while fifo:
                    item, size = fifo[0]
                    if tokens < size - _EPSILON and tokens < full:
                        break
                    fifo.popleft()
                    tokens -= size
                    sent += size
                    frames += 1
                    out.append(item)
                g.depth -= sent
                g.sent_frames += frames
                g.sent_bytes += sent
                head = fifo[0][1] if fifo else 0
                t.depth = g.depth
            else:
                tokens, head = self._serve(t, tokens, burst, out)
            t.tokens = tokens
            if head:
                # at least WAKE_SECONDS on: each wake-up sends what a millisecond's tokens pay for (the bucket holds
                # more than that), rather than one frame per reactor turn and timer
                if rate > 0:
                    at = now + max((min(head, burst) - tokens) / rate, WAKE_SECONDS)
                else:               # the PON gives it nothing this cycle: the next one may
                    at = p.due_at if p.due_at != _NEVER else now + CYCLE_SECONDS
                if wake is None or at < wake:
                    wake = at
            else:
                done.append(key)
        for key in done:
            del self._backlog[key]
        return out, wake

    def _serve(self, t: _Tcont, tokens: float, burst: float, out: list) -> tuple[float, int]:
        """Send from `t`'s GEM ports while `tokens` last: the highest priority first, each level's queues by deficit
        round robin; (tokens left, the size of the frame that waits next, 0 when none waits)."""
        full = burst - _EPSILON          # a full bucket sends a frame larger than itself
        append = out.append
        for level in t.levels:
            count = len(level)
            idle = 0
            while idle < count:
                g = level[0]
                fifo = g.fifo
                if not fifo:
                    g.deficit = 0.0
                    g.turn = False
                    if count > 1:
                        level.append(level.pop(0))
                    idle += 1
                    continue
                idle = 0
                if count == 1:
                    deficit = _NEVER            # alone in its priority: no round to keep
                else:
                    deficit = g.deficit if g.turn else g.deficit + g.quantum
                    g.turn = True
                sent = frames = 0
                waiting = 0
                while fifo:
                    item, size = fifo[0]
                    if size > deficit:
                        break
                    if tokens < size - _EPSILON and tokens < full:
                        waiting = size
                        break
                    fifo.popleft()
                    tokens -= size
                    deficit -= size
                    sent += size
                    frames += 1
                    append(item)
                g.depth -= sent
                t.depth -= sent
                g.sent_frames += frames
                g.sent_bytes += sent
                if waiting:
                    if count > 1:
                        g.deficit = deficit      # its turn goes on at the next wake-up
                    return tokens, waiting
                if count == 1:
                    break                       # empty: the next priority
                g.turn = False
                g.deficit = deficit if fifo else 0.0
                level.append(level.pop(0))
        return tokens, 0

    # ---- queues, T-CONTs, PONs ------------------------------------------------------------------------------------

    def _gem(self, key, now: float) -> _Gem:
        """The GEM port queue of frame key `key`, made (with its T-CONT and PON when new)."""
        tkey = key[:-1]
        t = self._tconts.get(tkey)
        if t is None:
            if len(self._tconts) >= self.max_queues:
                self._forget_idle()
            onu = key[1]
            pon = getattr(onu, "pon", None)
            pkey = (key[0], pon)
            p = self._pons.get(pkey)
            if p is None:
                p = self._pons[pkey] = _Pon(pkey, pon, key[0], self._pon_rate(key[0], pon), now)
            t = self._tconts[tkey] = _Tcont(tkey, onu, p, now)
        g = self._gems[key] = t.gems[key[-1]] = _Gem(key, t)
        t.source = t.qsource = None       # read again, with the new GEM port
        self._refresh(t, now)
        return g

    def _pon_rate(self, direction: str, pon) -> float:
        given = self.rate_up if direction == UP else self.rate_down
        if given is not None:
            return float(given)
        up, down = LINE_RATES.get(getattr(pon, "technology", "XGS-PON"), LINE_RATES["XGS-PON"])
        return float(up if direction == UP else down)

    def _forget_idle(self) -> None:
        """Ever new alloc ids (an adapter provisioning again and again) must not grow memory: the idle T-CONTs (and
        their counts) are forgotten, and made again at their next frame; the PONs keep their counts."""
        kept = {}
        for tkey, t in self._tconts.items():
            if t.depth:
                kept[tkey] = t
            else:
                self._leave(t)
                t.pon.offered += t.offered()
                t.pon.carried += t.sent()
        self._tconts = kept
        self._gems = {g.key: g for t in kept.values() for g in t.gems.values()}

    def _leave(self, t: _Tcont) -> None:
        """`t` no longer shares its PON's rate (its scheduler was removed or changed, or it is forgotten)."""
        p = t.pon
        if t in p.tconts:
            del p.tconts[t]
            p.peaks -= t.limit.rate
            self._plan(p, t.stamp)

    def _refresh(self, t: _Tcont, now: float) -> None:
        """Read the ONU's schedulers and queues again (a new dict: one was created, changed or removed)."""
        onu = t.onu
        source = onu.schedulers
        qsource = getattr(onu, "queues", None)
        t.source, t.qsource = source, qsource
        sched = _scheduler_for(t.key, source)
        limit = limit_of(sched.traffic_shaping_info) if sched is not None else None
        config = getattr(sched, "scheduler", None)
        t.policy = int(getattr(config, "sched_policy", _HYBRID)) if config is not None else _HYBRID
        t.priority = int(getattr(config, "priority", 0)) if config is not None else 0
        t.weight = int(getattr(config, "weight", 0)) if config is not None else 0
        direction = t.key[0]
        for g in t.gems.values():
            g.priority, g.weight = _queue_for(direction, g.gem, qsource)
        t.arrange()
        if limit != t.limit:
            p = t.pon
            if t.limit is not None:
                self._leave(t)
            if limit is not None:
                # a new bucket starts full (a real OLT's new allocation has its burst); a changed one keeps what it
                # had, within its new size
                t.tokens = limit.burst if t.limit is None else min(t.tokens, limit.burst)
                t.stamp = now
                t.rate = limit.rate
                p.tconts[t] = None
                p.peaks += limit.rate
            t.limit = limit
            self._plan(p, now)

    def _plan(self, p: _Pon, now: float) -> None:
        """A PON's T-CONTs changed: under its rate, each at its peak (no cycles); over it, a cycle now."""
        if p.peaks <= p.rate * (1 + 1e-9):
            for t in p.tconts:
                self._set_rate(t, t.limit.rate, now)
            p.due_at = _NEVER
            p.congested = False
        else:
            p.congested = True
            self._allocate(p, now)

    @staticmethod
    def _set_rate(t: _Tcont, rate: float, now: float) -> None:
        """`t`'s bucket fills at `rate` from `now` on (what it earned until now at its old rate kept)."""
        if rate == t.rate:
            return
        tokens = t.tokens + (now - t.stamp) * t.rate
        t.tokens = min(tokens, t.limit.burst)
        t.stamp = now
        t.rate = rate

    def _allocate(self, p: _Pon, now: float) -> None:
        """A DBA cycle of PON `p` (its T-CONTs' peaks exceed its rate): each T-CONT's rate until the next, by the rule
        of the module's docstring."""
        elapsed = now - p.stamp
        p.stamp = now
        p.due_at = now + CYCLE_SECONDS
        tconts = list(p.tconts)
        if not tconts:
            return
        # what each asks for (bytes/s), and its GIR and CIR
        asks, girs, cirs = [], [], []
        for t in tconts:
            limit = t.limit
            peak = limit.rate
            offered = t.offered()
            if t.depth or elapsed <= 0:
                ask = peak
            else:
                rate = (offered - t.counted) / elapsed
                ask = peak if rate >= 0.9 * t.rate else min(peak, rate * 1.1)
            t.counted = offered
            asks.append(ask)
            girs.append(min(limit.gir * 125.0, peak))
            cirs.append(limit.cir * 125.0)
        rate = p.rate
        n = len(tconts)
        given = list(girs)
        total = sum(given)
        if total > rate:
            scale = rate / total
            given = [g * scale for g in given]
            left = 0.0
        else:
            wants = [max(0.0, min(cirs[i], asks[i] - given[i])) for i in range(n)]
            want = sum(wants)
            room = rate - total
            if want > room:
                wants = [w * room / want for w in wants]
            given = [given[i] + wants[i] for i in range(n)]
            left = rate - sum(given)
        if left > 0:
            by_priority: dict = {}
            for i, t in enumerate(tconts):
                by_priority.setdefault(t.priority, []).append(i)
            for priority in sorted(by_priority, reverse=True):
                left = _fill(by_priority[priority], given, asks, tconts, left)
                if left <= 0:
                    break
        if left > 0:
            # every ask met: the rest up to the peaks, so that a T-CONT can grow before the next cycle
            left = _fill(range(n), given, [t.limit.rate for t in tconts], tconts, left)
        for i, t in enumerate(tconts):
            self._set_rate(t, given[i], now)

    def clear(self) -> None:
        """Forget every queued frame (the service stops)."""
        for t in self._backlog.values():
            for g in t.gems.values():
                g.fifo.clear()
                g.depth = 0
            t.depth = 0
        self._backlog.clear()

    # ---- counters -------------------------------------------------------------------------------------------------

    def counters(self) -> list[dict]:
        """Per T-CONT (and downstream scheduler): its direction, ONU (serial, PON, ONU id), alloc id (and UNI
        downstream), its limit (None: no scheduler), its rate now (`rate_bps`: its PIR, or what the PON gives it),
        `sched_policy`, frames and bytes sent, dropped by the shaper (`dropped: {"shaper": frames}`), queue depth,
        the sums of its GEM ports', each of which (`gems`) shows its own with its priority and weight."""
        rows = []
        for key, t in self._tconts.items():
            onu = t.onu
            row = {"direction": key[0], "serial": getattr(onu, "serial", None),
                   "pon": getattr(getattr(onu, "pon", None), "id", None), "onu_id": getattr(onu, "onu_id", None),
                   "alloc_id": key[-1]}
            if key[0] == DOWN:
                row["uni_id"] = key[2]
            gems = [g.as_dict() for g in t.gems.values()]
            dropped = sum(g["dropped"].get("shaper", 0) for g in gems)
            row.update(limit=t.limit.as_dict() if t.limit is not None else None,
                       rate_bps=int(t.rate * 8) if t.limit is not None else None,
                       sched_policy=_POLICY_NAMES.get(t.policy, str(t.policy)),
                       sent_frames=sum(g["sent_frames"] for g in gems), sent_bytes=sum(g["sent_bytes"] for g in gems),
                       dropped={"shaper": dropped} if dropped else {},
                       dropped_bytes=sum(g["dropped_bytes"] for g in gems),
                       queue_frames=sum(g["queue_frames"] for g in gems), queue_bytes=t.depth, gems=gems)
            rows.append(row)
        return rows

    def pon_counters(self) -> list[dict]:
        """Per PON and direction that carried a frame: its rate (bit/s), bytes offered to and carried by its
        T-CONTs (or downstream schedulers), how many are shaped, and whether their peaks exceed its rate (then it
        shares its rate among them every DBA cycle)."""
        sums = {p: [p.offered, p.carried] for p in self._pons.values()}
        for t in self._tconts.values():
            counted = sums[t.pon]
            counted[0] += t.offered()
            counted[1] += t.sent()
        return [{"pon": getattr(p.pon, "id", None), "direction": p.direction, "rate_bps": int(p.rate * 8),
                 "offered_bytes": offered, "carried_bytes": carried, "shaped": len(p.tconts),
                 "congested": p.congested}
                for p, (offered, carried) in sums.items()]


def _fill(members, given: list, caps: list, tconts: list, left: float) -> float:
    """Water-filling: share `left` among `members` (indexes) by their schedulers' weights (0 counts as 1), none past
    its cap (`caps[i]`); `given` raised in place; what is left over."""
    open_ = [i for i in members if caps[i] - given[i] > 1e-9]
    while open_ and left > 1e-9:
        weights = {i: max(tconts[i].weight, 1) for i in open_}
        total = sum(weights.values())
        share = left / total
        capped = [i for i in open_ if caps[i] - given[i] <= share * weights[i]]
        if not capped:
            for i in open_:
                given[i] += share * weights[i]
            return 0.0
        for i in capped:
            left -= caps[i] - given[i]
            given[i] = caps[i]
        open_ = [i for i in open_ if i not in capped]
    return max(left, 0.0)
