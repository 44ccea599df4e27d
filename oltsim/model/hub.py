"""What the devices of one OLT share: the clock, the random source, the timings, the change counter, the event
stream, the alarm book, the flow table, and the handlers of the frames the adapter sends them (OMCI, and the
subscribers' EAPOL, DHCP, IGMP and data frames).

The OLT builds one `DeviceHub` and hands it to each ONU it holds; an ONU (and its UNIs and services, and the OMCI
and packet engines working on it) reaches the rest of the simulation only through it, never through the OLT. So
`oltsim.model.onu` does not import `oltsim.model.olt`, and a device can be read (and built in a test) without one.
"""
from __future__ import annotations

from typing import Callable

from oltsim.logs import logger
from oltsim.model import events
from oltsim.model.alarms import AlarmBook
from oltsim.model.flows import FlowStore

__all__ = ["DeviceHub"]

log = logger("oltsim.model")


class DeviceHub:
    """One OLT's shared parts, as its devices see them.

    `clock` is an IReactorTime, `random` a `random.Random`, `timings` the OLT's `Timings` (replaceable: a test may
    shorten them). `generation` counts visible changes (`touch`); the control APIs' caches key on it. `emit`
    delivers an event to every `subscribe`d listener, noting an alarm in `alarms` first. `alarm_cleared(key,
    reason)` is called when the alarm book clears an alarm on its own (the OLT tells the listeners).

    `omci` is what takes the OMCI requests the adapter sends to an ONU (an `oltsim.omci.wrappers.IOmciHandler`: the
    responder, with the wrappers standing in front of it), `frames` what takes the packets and flows
    (an `oltsim.packets.handler.IFrameHandler`: the protocol engine, or the data plane in front of it); None where a
    test builds devices without them (then OMCI requests and packets go nowhere)."""

    __slots__ = ("clock", "random", "timings", "generation", "alarms", "flows", "omci", "frames", "_listeners")

    def __init__(self, clock, random, timings, alarm_cleared: Callable[[object, str], None] = lambda key, why: None,
                 *, omci=None, frames=None):
        self.clock = clock
        self.random = random
        self.timings = timings
        self.omci = omci
        self.frames = frames
        self.generation = 0
        # A tuple, replaced on (un)subscribe: emit runs per OMCI answer and needs no copy to survive a listener
        # that unsubscribes while it runs.
        self._listeners: tuple[Callable[[object], None], ...] = ()
        #: every alarm the OLT reported (`emit` notes each events.Alarm): the active ones and the history
        self.alarms = AlarmBook(clock, changed=self.touch, cleared=alarm_cleared)
        self.flows = FlowStore(self.touch)

    def touch(self) -> None:
        """Record that something visible changed (API caches key on `generation`)."""
        self.generation += 1

    def subscribe(self, listener: Callable[[object], None]) -> Callable[[], None]:
        """Receive every event; returns a function that unsubscribes."""
        self._listeners += (listener,)

        def unsubscribe() -> None:
            if listener in self._listeners:
                listeners = list(self._listeners)
                listeners.remove(listener)
                self._listeners = tuple(listeners)
        return unsubscribe

    def emit(self, event) -> None:
        """Deliver `event` to every listener; a failing listener is logged, never fatal. An alarm is noted in
        `alarms` first, whether or not an adapter is there to receive it."""
        if event.__class__ is events.Alarm:
            self.alarms.note(event.kind, event.fields, event.serial)
        for listener in self._listeners:
            try:
                listener(event)
            except Exception:
                log.failure("event-listener-failed event={event!r}", event=event)

    def guarded(self, fn, what: str, **fields):
        """Wrap a timer callback so an exception is logged with context instead of lost."""
        def run(*args):
            try:
                return fn(*args)
            except Exception:
                log.failure("timer-failed what={what} fields={fields}", what=what, fields=fields)
        return run
