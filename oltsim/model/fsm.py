"""A small table-driven state machine, shared by every device of the model.

Transitions are data: each device module declares a `Machine` at its top, whose
state names are the strings the APIs report. A device keeps only its current
state string; the machine answers what an event does from a given state, and
the device runs the entry effect itself. Illegal events raise `IllegalTransition`
with the event, the state and the events that are allowed, so callers can build
a message for people instead of leaking FSM internals.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping


class IllegalTransition(Exception):
    """An event was fired in a state that does not accept it."""

    def __init__(self, machine: str, event: str, state: str, allowed: list[str]):
        super().__init__(f"{machine}: event {event} not allowed in state {state}")
        self.machine = machine
        self.event = event
        self.state = state
        self.allowed = allowed


class Machine:
    """An immutable transition table: event -> (source states, destination)."""

    def __init__(self, name: str, initial: str, transitions: Mapping[str, tuple[Iterable[str], str]]):
        self.name = name
        self.initial = initial
        self._table: dict[str, tuple[frozenset[str], str]] = {
            event: (frozenset(sources), dest) for event, (sources, dest) in transitions.items()
        }
        states = {initial}
        for sources, dest in self._table.values():
            states |= sources
            states.add(dest)
        self.states: frozenset[str] = frozenset(states)
        self.events: tuple[str, ...] = tuple(self._table)

    def can(self, state: str, event: str) -> bool:
        """True when `event` is legal in `state`."""
        entry = self._table.get(event)
        return entry is not None and state in entry[0]

    def next(self, state: str, event: str) -> str:
        """The state `event` leads to from `state`; raises IllegalTransition if illegal."""
        entry = self._table.get(event)
        if entry is None or state not in entry[0]:
            raise IllegalTransition(self.name, event, state, self.allowed(state))
        return entry[1]

    def allowed(self, state: str) -> list[str]:
        """The events legal in `state`, in table order."""
        return [event for event, (sources, _) in self._table.items() if state in sources]


class StateHolder:
    """Mixin for devices: `_fire(event)` moves along `MACHINE` and runs `_enter_<state>`.

    The new state is set before the entry effect runs, so an effect sees the
    device in its new state; effects may act on other devices but never fire a
    second event on their own device.
    """

    MACHINE: Machine
    __slots__ = ()

    def _fire(self, event: str, **context) -> str:
        """Apply `event`; returns the new state. Raises IllegalTransition before any effect."""
        src = self.state
        dest = self.MACHINE.next(src, event)
        self.state = dest
        self._state_changed(src, dest, event)
        effect = getattr(self, f"_enter_{dest}", None)
        if effect is not None:
            effect(src, **context)
        return dest

    def _state_changed(self, src: str, dest: str, event: str) -> None:
        """Hook for devices to publish a state change; default does nothing."""
