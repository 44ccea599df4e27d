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
