"""G.988's performance monitoring history on 15-minute intervals, for the PM MEs the adapter created on one ONU.

The OMCI responder (oltsim.omci.responder), given a PM source (with the data plane: oltsim.dataplane.pm), keeps one
`OnuPm` per ONU. A PM ME exists once the adapter creates it (its attribute 2, the threshold data 1/2 id or the
extended PM's control block, as the Create gave it or a Set changed it); a Delete, an MIB reset or the ONU going down
removes it. Its counters are the source's totals (each of which only grows) less what they were when the current
interval began:

- `history(me)` (a Get) is the last completed interval: 0 until one has completed;
- `current(me, totals)` (a Get current data) is the current interval so far: every counter only grows until it ends;
- `end_time` (attribute 1, interval end time) numbers the last completed interval modulo 256: 0 until one has
  completed since the last synchronize time (`synchronize`) or the first PM ME created;
- `roll(now, read)` ends the intervals that are over: the responder calls it from a timer on the ONU's clock at each
  boundary, so that a completed interval holds exactly what was counted within it, and before every answer.

An extended PM ME in continuous accumulation (`continuous`) has no intervals: its counters run from its creation or
its last reset (`reset`). Pure: time is what the caller passes; counters saturate at their attribute's largest value.
"""
from __future__ import annotations

from typing import Callable

__all__ = ["INTERVAL", "OnuPm", "PmMe"]

#: G.988's PM interval, in seconds
INTERVAL = 15 * 60.0


class PmMe:
    """One created PM ME: `attribute2` as created or set, the attribute sizes of its class (`sizes[i - 1]` octets
    for attribute i), the totals at the start of its interval (`baseline`, {attribute: count}) and the last completed
    interval's counts (`last`)."""

    __slots__ = ("me_class", "me_id", "sizes", "attribute2", "continuous", "baseline", "last")

    def __init__(self, me_class: int, me_id: int, sizes: tuple[int, ...], attribute2: bytes,
                 continuous: bool = False) -> None:
        self.me_class = me_class
        self.me_id = me_id
        self.sizes = sizes
        self.attribute2 = attribute2
        self.continuous = continuous
        self.baseline: dict[int, int] | None = None       # None: not counted yet (the next totals are its start)
        self.last: dict[int, int] = {}

    def since(self, totals: dict[int, int]) -> dict[int, int]:
        """The counts of `totals` since `baseline`, each saturated at its attribute's size. A total below its
        baseline restarted (the UNI was bound again): all of it counts."""
        base = self.baseline or {}
        out = {}
        for index in range(3, len(self.sizes) + 1):
            total = totals.get(index, 0)
            start = base.get(index, 0)
            count = total - start if total >= start else total
            out[index] = min(count, (1 << (8 * self.sizes[index - 1])) - 1)
        return out


class OnuPm:
    """The PM MEs created on one ONU (`mes`, by (class, ME id)) and its interval clock: interval `index` began at
    `start + index * INTERVAL`."""

    __slots__ = ("start", "index", "mes", "timer")

    def __init__(self, now: float) -> None:
        self.start = now
        self.index = 0
        self.mes: dict[tuple[int, int], PmMe] = {}
        self.timer = None

    @property
    def end_time(self) -> int:
        """G.988's interval end time: the last completed interval's number, modulo 256."""
        return self.index & 0xFF

    def next_boundary(self, now: float) -> float:
        """Seconds from `now` to the end of the current interval."""
        return max(0.0, self.start + (self.index + 1) * INTERVAL - now)

    def synchronize(self, now: float, read: Callable[[PmMe], dict | None]) -> None:
        """The synchronize time: a new interval starts now, numbered 0; the created MEs count from here."""
        self.start = now
        self.index = 0
        for me in self.mes.values():
            if not me.continuous:
                me.baseline = read(me)
                me.last = {}

    def add(self, me: PmMe, totals: dict | None) -> None:
        """A PM ME created now: it counts from `totals` (the source's, None when it carries nothing yet)."""
        me.baseline = totals
        self.mes[(me.me_class, me.me_id)] = me

    def roll(self, now: float, read: Callable[[PmMe], dict | None]) -> bool:
        """End the intervals over at `now`: the first one's counts become each ME's `last` (read with `read`, the
        source's totals of an ME or None); later ones the ONU missed counting (its clock stopped) are empty. Whether
        an interval ended."""
        index = int((now - self.start) // INTERVAL)
        if index <= self.index:
            return False
        for me in self.mes.values():
            if me.continuous:
                continue
            totals = read(me)
            if totals is None:
                me.last, me.baseline = {}, None
                continue
            me.last = me.since(totals) if index == self.index + 1 else {}
            me.baseline = totals
        self.index = index
        return True

    def history(self, me: PmMe) -> dict[int, int]:
        """The counts a Get answers: the last completed interval's (0 before the first), a continuous ME's since it
        began (`current`)."""
        return {index: me.last.get(index, 0) for index in range(3, len(me.sizes) + 1)}

    def current(self, me: PmMe, totals: dict[int, int]) -> dict[int, int]:
        """The counts of the interval in progress (a continuous ME: since its creation or reset), from the source's
        `totals`; a ME not counted yet starts now."""
        if me.baseline is None:
            me.baseline = totals
        return me.since(totals)

    def reset(self, me: PmMe, totals: dict | None) -> None:
        """Restart a ME's counters at 0 (the extended PM's global clear)."""
        me.baseline = totals
        me.last = {}

    def remove(self, me_class: int, me_id: int) -> bool:
        """Delete a PM ME; whether it existed."""
        return self.mes.pop((me_class, me_id), None) is not None
