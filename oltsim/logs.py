"""Log level control and observers: readable text on a terminal, JSON lines under systemd.

twistd owns the global log observers; under twistd, :meth:`LogControl.filter_everything` puts each of them behind
the level predicate, so that ``--log-level`` (and the SetLogLevel / SetDmLogLevel RPCs at runtime) governs every
line, Twisted's own included. oltsim's messages also pass the predicate on their way in (tests, no twistd).
"""
from __future__ import annotations

import re

from twisted.logger import (FilteringLogObserver, LogLevel, LogLevelFilterPredicate, Logger, PredicateResult,
                            globalLogBeginner, globalLogPublisher)

_LEVELS = {"trace": LogLevel.debug, "debug": LogLevel.debug, "info": LogLevel.info, "warn": LogLevel.warn,
           "warning": LogLevel.warn, "error": LogLevel.error, "critical": LogLevel.critical}


class LogControl:
    """The level of oltsim's own log events (`set_level('debug')`)."""

    def __init__(self, level: str = "info"):
        self.predicate = LogLevelFilterPredicate(defaultLogLevel=_LEVELS.get(level, LogLevel.info))
        self.observer = FilteringLogObserver(globalLogPublisher, [self.predicate])
        self.level = level

    def set_level(self, level: str) -> None:
        self.predicate.setLogLevelForNamespace(None, _LEVELS[level])
        self.level = level

    @property
    def debug(self) -> bool:
        """Whether debug lines are written now."""
        return _LEVELS.get(self.level, LogLevel.info) <= LogLevel.debug

    def filter_everything(self, beginner=globalLogBeginner) -> None:
        """Put every observer that logging later begins to (twistd's: the terminal text or the journal's JSON)
        behind this level, and write Twisted's listening-port chatter (``Site starting on 50071``, ``(TCP Port 50071
        Closed)``) at debug only and its TAP ports' never: oltsim names its listeners and interfaces itself. Call
        before logging begins (twistd begins it after makeService); the events logged before are replayed through
        the filter too. Idempotent."""
        if getattr(beginner, "_oltsim_level_filter", False):
            return
        begin = beginner.beginLoggingTo

        def begin_filtered(observers, *args, **kwargs):
            return begin([FilteringLogObserver(observer, [self._port_chatter, self.predicate])
                          for observer in observers], *args, **kwargs)
        beginner.beginLoggingTo = begin_filtered
        beginner._oltsim_level_filter = True

    def _port_chatter(self, event) -> PredicateResult:
        if event.get("log_namespace") == "log_legacy":
            text = str(event.get("log_text", ""))
            if _TUNTAP_CHATTER.match(text) or not self.debug and _PORT_CHATTER.match(text):
                return PredicateResult.no
        return PredicateResult.maybe


#: twisted.internet.tcp's and udp's unconditional legacy lines for a listening port (not for connections).
_PORT_CHATTER = re.compile(r"(\S+ (\(\S+\) )?starting on \d+|\((TCP|UDP|UNIX) Port \S+ Closed\))$")
#: twisted.pair.tuntap's lines for a TAP interface opened and closed (``<class '...'> starting on b'u0-1-0'``,
#: ``(Tuntap b'u0-1-0' Closed)``): never written, the data plane logs dataplane-interface-opened/-closed instead.
_TUNTAP_CHATTER = re.compile(r"(<class '[^']+'> starting on b'[^']*'|\(Tuntap b'[^']*' Closed\))$")


#: The process-wide control used by `logger()`; its level is set by makeService and SetLogLevel.
CONTROL = LogControl()


def logger(namespace: str) -> Logger:
    """A Logger whose events pass the runtime level filter."""
    return Logger(namespace=namespace, observer=CONTROL.observer)


class Summary:
    """Bounds a stream of log lines of one kind: at most `burst` lines per `interval` seconds of `clock` are let
    through (`offer` answers True: the caller logs its line), the rest are counted by key and `report(counts)`
    is called once with them when the interval ends (`counts`: key -> number, in first-seen order).

    A window starts with the first offer after the previous one ended; a timer runs only while something is
    counted, and `flush` reports at once and cancels it (servers stopping). With `sustained`, a burst that outlasts
    its window gets summary lines only: the `burst` single lines come back once an interval has passed without a
    report (so a bring-up of minutes writes one line a second, not `burst` + 1)."""

    def __init__(self, clock, report, interval: float = 1.0, burst: int = 0, sustained: bool = False):
        self.clock = clock
        self.report = report
        self.interval = interval
        self.burst = burst
        self.sustained = sustained
        self.counts: dict = {}
        self._window_end = float("-inf")
        self._reported_at = float("-inf")
        self._passed = 0
        self._call = None

    def offer(self, key) -> bool:
        """True when the caller may log this line itself; otherwise it is counted under `key`."""
        now = self.clock.seconds()
        if now >= self._window_end and not self.counts:
            refill = not self.sustained or now - self._reported_at >= self.interval
            self._window_end, self._passed = now + self.interval, 0 if refill else self.burst
        if self._passed < self.burst and not self.counts:
            self._passed += 1
            return True
        self.counts[key] = self.counts.get(key, 0) + 1
        if self._call is None:
            self._call = self.clock.callLater(max(0.0, self._window_end - now), self._end_window)
        return False

    def _end_window(self) -> None:
        self._call = None
        self.flush()

    def flush(self) -> None:
        """Report what is counted now (if anything) and end the window."""
        if self._call is not None:
            if self._call.active():
                self._call.cancel()
            self._call = None
        counts, self.counts = self.counts, {}
        self._window_end = float("-inf")
        if counts:
            self._reported_at = self.clock.seconds()
            self.report(counts)


class SummedLines:
    """Info lines of a few kinds that come in bursts (a UNI's EAPOL or DHCP completed, an ONU up or ready, an alarm),
    bounded as :class:`Summary` does with `sustained` bursts: at most `burst` lines an `interval`, then one line
    ``<name> count=<n> <kind>=<n> ... (summary of 1 s)``; the lines counted instead are written at debug, so that at
    debug every one is still there. `flush` when the servers stop."""

    def __init__(self, log: Logger, name: str, clock, interval: float = 1.0, burst: int = 4):
        self.log = log
        self.name = name
        self.summary = Summary(clock, self._report, interval=interval, burst=burst, sustained=True)

    def info(self, kind: str, fmt: str, /, **fields) -> None:
        """Log `fmt` at info unless the burst of this interval is spent: then at debug, counted under `kind`."""
        if self.summary.offer(kind):
            self.log.info(fmt, **fields)
        else:
            self.log.debug(fmt, **fields)

    def flush(self) -> None:
        self.summary.flush()

    def _report(self, counts: dict) -> None:
        kinds = " ".join(f"{kind}={n}" for kind, n in counts.items())
        self.log.info("{name} count={count} {kinds} (summary of {interval:g} s)", name=self.name,
                      count=sum(counts.values()), kinds=kinds, interval=self.summary.interval)
