"""Log level control and observers: readable text on a terminal, JSON lines under systemd.

twistd owns the global log observers; oltsim's messages reach them through one
filtering observer whose level the SetLogLevel RPC changes at runtime.
"""
from __future__ import annotations

from twisted.logger import (FilteringLogObserver, LogLevel, LogLevelFilterPredicate, Logger,
                            globalLogPublisher)

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
    counted, and `flush` reports at once and cancels it (servers stopping)."""

    def __init__(self, clock, report, interval: float = 1.0, burst: int = 0):
        self.clock = clock
        self.report = report
        self.interval = interval
        self.burst = burst
        self.counts: dict = {}
        self._window_end = float("-inf")
        self._passed = 0
        self._call = None

    def offer(self, key) -> bool:
        """True when the caller may log this line itself; otherwise it is counted under `key`."""
        now = self.clock.seconds()
        if now >= self._window_end and not self.counts:
            self._window_end, self._passed = now + self.interval, 0
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
            self.report(counts)
