"""Fault knobs of the OLT, per ONU: slow, rationed or silent OMCI and lost EAPOL/DHCP frames.

The OLT holds one `FaultBook` (`olt.faults`); the knobs of an ONU live on `onu.faults`, an `OnuFaults`, or None when
the ONU has no knob and no delayed answer pending, so that the OMCI and packet hot paths stay one attribute check.
Everything runs on the OLT's clock (`olt.clock`) and the book's own `random.Random` (`reseed`), so the same seed
and the same requests give the same answers at the same times. The OMCI responder knows nothing of the knobs: the
wrapper in front of it (`oltsim.omci.wrappers.OmciFaultWrapper`) asks `OnuFaults.hold_omci` about each request, and
a delayed one is handed to the wrapped responder at its time.

Knobs (a neutral setting, delay 0 without jitter, rate 10, mute False, fraction 0, clears the knob):

- ``omci-delay``: the ONU handles each OMCI request `delay + uniform(0, jitter)` seconds after it arrives: the
  answer, and whatever the request does to the ONU (a UNI unlocked, MibUpload events, a reboot), come then. Requests
  are handled in arrival order: each is scheduled at max(its own time, the previous one's), so jitter never lets a
  later answer overtake an earlier one. A request waiting while the ONU's timers are cancelled (power-off, OLT
  reboot or stop) is dropped, as is one whose ONU is not active when its time comes.
- ``omci-rate``: answers per 10 requests, as BBSim's OLT-wide ``omci_response_rate`` but for this ONU: a counter
  of the ONU's requests cycles 1..10 (from 0 when the knob is set) and a request whose count is above the rate is
  ignored. The two compose as two filters in a row: the ONU's rate sees every request the active ONU gets, the
  OLT-wide counter (the responder's) counts those the ONU's rate let through. With the default OLT-wide rate of 10
  that is exactly the ONU's rate.
- ``omci-mute``: the ONU ignores every OMCI request (no answer, no effect), as if its OMCI stack hung.
- ``packet-drop``: that fraction of the EAPOL and/or DHCP frames is lost. A frame is dropped where it reaches the
  ONU: an OnuPacketOut the adapter sends to one of the ONU's services (after validation: a malformed frame is still
  refused). The ONU's own upstream frames are not dropped: every exchange step after the first is a downstream
  frame, and losing it stalls the exchange exactly as losing the ONU's answer would. A stalled EAPOL or DHCP
  attempt is never wedged: every attempt arms its timeout when it starts (`eapol_timeout`, `dhcp_timeout`); at the
  timeout it fails and, with `auth_retry` / `dhcp_retry`, starts again; without, the service rests in
  auth_failed / dhcp_failed, from which RestartEapol / RestartDhcp or a new trap flow start a new attempt.

An ONU's knobs survive its power cycle (a scenario clears them); `cancel_all` (OLT stop, daemon stop) clears every
knob and cancels every timer of the book. Knobs set and cleared are logged at debug; dropped frames and OMCI
requests are logged at debug one by one and summed at info (one ``fault-drops`` line a second at most).
"""
from __future__ import annotations

import math
import random
from collections import deque

from oltsim.logs import SummedLines, logger
from oltsim.model.errors import InvalidArgument

__all__ = ["KNOBS", "PROTOCOLS", "FaultBook", "OnuFaults"]

log = logger("oltsim.faults")

KNOBS = ("omci-delay", "omci-rate", "omci-mute", "packet-drop")
PROTOCOLS = ("eapol", "dhcp")
#: The period of the per-ONU answer counter (BBSim's response rate counts answers per 10 requests).
RATE_PERIOD = 10
#: A delayed request is due when the clock is this close to its time (float sums of delays).
_DUE_SLACK = 1e-9


class OnuFaults:
    """One ONU's knobs and its delayed OMCI requests (`onu.faults`). Made and dropped by the `FaultBook`."""

    __slots__ = ("book", "onu", "delay", "jitter", "rate", "counter", "muted", "drop_fraction",
                 "drop_protocols", "dropped", "queue", "timer")

    def __init__(self, book: "FaultBook", onu):
        self.book = book
        self.onu = onu
        self.delay: float | None = None           # None: knob off
        self.jitter = 0.0
        self.rate: int | None = None
        self.counter = 0
        self.muted = False
        self.drop_fraction = 0.0                  # 0: knob off
        self.drop_protocols: frozenset = frozenset()
        self.dropped = 0                          # frames dropped since the knob was set
        self.queue: deque = deque()               # (due time, handler, request bytes), due times never decrease
        self.timer = None                         # the one pending drain call, on the ONU's timers

    def has_knobs(self) -> bool:
        return self.delay is not None or self.rate is not None or self.muted or self.drop_fraction > 0

    # ---- OMCI (called by oltsim.omci.wrappers.OmciFaultWrapper) --------------------------------

    def hold_omci(self, handler, onu, frame) -> bool:
        """Take the request `frame` (parsed) for `onu` (active) if a knob says so: True when it is ignored
        (mute, rate) or queued for later (delay, or earlier requests still queued), in which case
        `handler(onu, frame)` is called at its due time; False: handle it now."""
        self._forget_cancelled()
        if self.muted:
            self.book._count_drop(onu, "omci-muted")
            return True
        if self.rate is not None:
            self.counter = self.counter + 1 if self.counter < RATE_PERIOD else 1
            if self.counter > self.rate:
                self.book._count_drop(onu, "omci-rate")
                return True
        queue = self.queue
        if self.delay is None and not queue:
            if not self.has_knobs():
                self.book._forget(self)
            return False
        clock = self.book.olt.clock
        now = clock.seconds()
        due = now
        if self.delay is not None:
            due += self.delay
            if self.jitter:
                due += self.book.random.uniform(0.0, self.jitter)
        if queue and due < queue[-1][0]:
            due = queue[-1][0]
        queue.append((due, handler, frame))
        self._arm(now)
        return True

    def _arm(self, now: float) -> None:
        if self.timer is None and self.queue:
            self.timer = self.onu.call_later(max(0.0, self.queue[0][0] - now), self._drain)

    def _drain(self) -> None:
        """Handle every queued request now due, in order, then wait for the next one."""
        self.timer = None
        onu = self.onu
        queue = self.queue
        now = self.book.olt.clock.seconds()
        while queue and queue[0][0] <= now + _DUE_SLACK:
            _, handler, frame = queue.popleft()
            try:
                handler(onu, frame)             # the responder drops it itself if the ONU is no longer active
            except Exception:
                log.failure("fault-delayed-omci-failed serial={serial}", serial=onu.serial)
        self._arm(now)
        if not queue and not self.has_knobs():
            self.book._forget(self)

    def _forget_cancelled(self) -> None:
        """Drop the queued requests if their timer was cancelled (ONU powered off, OLT rebooted or stopped)."""
        timer = self.timer
        if timer is not None and not timer.active():
            self.timer = None
            if self.queue:
                log.debug("fault-delayed-omci-dropped serial={serial} count={count} why=onu-timers-cancelled",
                          serial=self.onu.serial, count=len(self.queue))
                self.queue.clear()

    def cancel(self) -> None:
        """Cancel the drain timer and drop every queued request."""
        timer, self.timer = self.timer, None
        if timer is not None:
            self.onu.cancel_call(timer)
        self.queue.clear()

    def pending(self) -> int:
        self._forget_cancelled()
        return len(self.queue)

    # ---- packets (called by ProtocolEngine.packet_out) -----------------------------------------

    def drops(self, onu, kind: str) -> bool:
        """Whether this EAPOL/DHCP frame (`kind`) for the ONU is lost (packet-drop)."""
        if self.drop_fraction <= 0 or kind not in self.drop_protocols:
            return False
        if self.book.random.random() >= self.drop_fraction:
            return False
        self.dropped += 1
        self.book._count_drop(onu, kind)
        return True


class FaultBook:
    """The OLT's fault knobs, per ONU, on the reactor clock (olt.clock).

    Setters validate first (InvalidArgument) and act second; `onu` is an ONU of this OLT (or its serial)."""

    def __init__(self, olt, seed: int = 0):
        self.olt = olt
        self.random = random.Random(seed)
        self._states: dict = {}                     # onu -> OnuFaults, exactly the ONUs whose `faults` is set
        self._lines = SummedLines(log, "fault-drops", olt.clock, burst=0)

    def reseed(self, seed: int) -> None:
        """Restart the random source of jitter and drops from `seed`."""
        self.random.seed(seed)

    # ---- setters -----------------------------------------------------------------------------

    def set_omci_delay(self, onu, delay: float, jitter: float = 0.0) -> None:
        """Handle each OMCI request of the ONU `delay + uniform(0, jitter)` seconds after it arrives (order kept).
        Delay 0 without jitter clears the knob."""
        onu = self._onu(onu)
        delay = _seconds("delay", delay)
        jitter = _seconds("jitter", jitter)
        if delay == 0 and jitter == 0:
            self.clear(onu, "omci-delay")
            return
        st = self._state(onu)
        st.delay, st.jitter = delay, jitter
        self._set_line(onu, "omci-delay")

    def set_omci_rate(self, onu, rate: int) -> None:
        """Answer `rate` of every 10 OMCI requests of the ONU (0-10; the count starts now). 10 clears the knob."""
        onu = self._onu(onu)
        if isinstance(rate, bool) or not isinstance(rate, int) or not 0 <= rate <= RATE_PERIOD:
            raise InvalidArgument(f"omci-rate: rate must be a whole number of answers per 10 requests, "
                                  f"0 to 10 (got {rate!r})")
        if rate == RATE_PERIOD:
            self.clear(onu, "omci-rate")
            return
        st = self._state(onu)
        st.rate, st.counter = rate, 0
        self._set_line(onu, "omci-rate")

    def set_omci_mute(self, onu, muted: bool = True) -> None:
        """Make the ONU ignore every OMCI request (True) or answer again (False)."""
        onu = self._onu(onu)
        if not isinstance(muted, bool):
            raise InvalidArgument(f"omci-mute: muted must be true or false (got {muted!r})")
        if not muted:
            self.clear(onu, "omci-mute")
            return
        self._state(onu).muted = True
        self._set_line(onu, "omci-mute")

    def set_packet_drop(self, onu, fraction: float, protocols=PROTOCOLS) -> None:
        """Drop that fraction (0-1) of the EAPOL and/or DHCP frames sent to the ONU. Fraction 0 clears the knob."""
        onu = self._onu(onu)
        if isinstance(fraction, bool) or not isinstance(fraction, (int, float)) or not 0 <= fraction <= 1:
            raise InvalidArgument(f"packet-drop: fraction must be a number from 0 to 1 (got {fraction!r})")
        if isinstance(protocols, str):
            protocols = (protocols,)
        try:
            chosen = frozenset(protocols)
        except TypeError:
            raise InvalidArgument(f"packet-drop: protocols must be a list of {', '.join(PROTOCOLS)} "
                                  f"(got {protocols!r})") from None
        unknown = sorted(str(p) for p in chosen if p not in PROTOCOLS)
        if unknown:
            raise InvalidArgument(f"packet-drop: unknown protocol {', '.join(unknown)} "
                                  f"(known: {', '.join(PROTOCOLS)})")
        if not chosen:
            raise InvalidArgument(f"packet-drop: name at least one protocol ({', '.join(PROTOCOLS)})")
        if fraction == 0:
            self.clear(onu, "packet-drop")
            return
        st = self._state(onu)
        st.drop_fraction, st.drop_protocols, st.dropped = float(fraction), chosen, 0
        self._set_line(onu, "packet-drop")

    # ---- undo --------------------------------------------------------------------------------

    def clear(self, onu, knob: str) -> None:
        """Undo `knob` (one of KNOBS) for the ONU; OMCI requests already delayed are still handled in turn."""
        onu = self._onu(onu)
        if knob not in KNOBS:
            raise InvalidArgument(f"unknown fault knob {knob!r} (known: {', '.join(KNOBS)})")
        st = onu.faults
        if st is None or knob not in self._knobs(st):
            return
        if knob == "omci-delay":
            st.delay, st.jitter = None, 0.0
        elif knob == "omci-rate":
            st.rate, st.counter = None, 0
        elif knob == "omci-mute":
            st.muted = False
        else:
            log.debug("fault-knob-cleared serial={serial} knob={knob} dropped={dropped}", serial=onu.serial,
                      knob=knob, dropped=st.dropped)
            st.drop_fraction, st.drop_protocols, st.dropped = 0.0, frozenset(), 0
        if knob != "packet-drop":
            log.debug("fault-knob-cleared serial={serial} knob={knob}", serial=onu.serial, knob=knob)
        if not st.has_knobs() and not st.pending():
            self._forget(st)

    def clear_all(self) -> None:
        """Undo every knob of every ONU (delayed requests are still handled in turn)."""
        for st in list(self._states.values()):
            for knob in self._knobs(st):
                self.clear(st.onu, knob)

    def cancel_all(self) -> None:
        """Undo every knob and drop every delayed request, cancelling every timer of the book (OLT or daemon
        stop): no call of the book is left on the clock."""
        states = list(self._states.values())
        active = sum(1 for st in states if st.has_knobs())
        pending = sum(len(st.queue) for st in states)
        for st in states:
            st.cancel()
            self._forget(st)
        self._lines.flush()
        if states:
            log.debug("fault-knobs-cancelled onus={onus} pending={pending}", onus=active, pending=pending)

    # ---- views -------------------------------------------------------------------------------

    def of(self, onu) -> dict:
        """The ONU's active knobs and their settings, e.g. {"omci-delay": {"delay": 0.2, "jitter": 0.1}};
        {} when none."""
        st = self._onu(onu).faults
        return {} if st is None else self._knobs(st)

    def active(self) -> int:
        """ONUs with at least one knob."""
        return sum(1 for st in self._states.values() if st.has_knobs())

    def pending(self) -> int:
        """Delayed OMCI requests not yet handled."""
        return sum(st.pending() for st in list(self._states.values()))

    # ---- inside ------------------------------------------------------------------------------

    @staticmethod
    def _knobs(st: OnuFaults) -> dict:
        knobs = {}
        if st.delay is not None:
            knobs["omci-delay"] = {"delay": st.delay, "jitter": st.jitter}
        if st.rate is not None:
            knobs["omci-rate"] = {"rate": st.rate}
        if st.muted:
            knobs["omci-mute"] = {"muted": True}
        if st.drop_fraction > 0:
            knobs["packet-drop"] = {"fraction": st.drop_fraction,
                                    "protocols": [p for p in PROTOCOLS if p in st.drop_protocols]}
        return knobs

    def _onu(self, onu):
        if isinstance(onu, str):
            return self.olt.onu_by_serial(onu)
        if getattr(onu, "hub", None) is not self.olt.hub or not hasattr(onu, "faults"):
            raise InvalidArgument(f"{onu!r} is not an ONU of OLT {self.olt.serial}")
        return onu

    def _state(self, onu) -> OnuFaults:
        st = onu.faults
        if st is None:
            st = onu.faults = self._states[onu] = OnuFaults(self, onu)
        return st

    def _forget(self, st: OnuFaults) -> None:
        """Back to the fast path: the ONU has no knob and nothing queued."""
        self._states.pop(st.onu, None)
        if st.onu.faults is st:
            st.onu.faults = None

    def _set_line(self, onu, knob: str) -> None:
        log.debug("fault-knob-set serial={serial} knob={knob} settings={settings}", serial=onu.serial, knob=knob,
                  settings=self._knobs(onu.faults)[knob])

    def _count_drop(self, onu, kind: str) -> None:
        self._lines.info(kind, "fault-drop serial={serial} kind={kind}", serial=onu.serial, kind=kind)


def _seconds(name: str, value) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        raise InvalidArgument(f"omci-delay: {name} must be a number of seconds, 0 or more (got {value!r})")
    return float(value)
