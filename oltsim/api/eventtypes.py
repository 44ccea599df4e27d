"""The types of the event bus's records (oltsim.api.eventbus.to_record's `type`), in a module of their own so that
oltsimctl can name them without loading the daemon's logging; and the one check of a type filter every surface
applies (`check_types`: REST `GET /v1/events?types=`, gRPC StreamEvents, `oltsimctl events --type`)."""
from __future__ import annotations

from oltsim.suggest import nearest

#: A device's state changed (events.StateChanged, by device).
STATE_TYPES = ("olt-state-changed", "pon-state-changed", "onu-state-changed", "uni-state-changed",
               "service-state-changed")
#: A scenario or one of its steps started or ended (events.ScenarioEvent).
SCENARIO_TYPES = ("scenario-started", "scenario-step-started", "scenario-step-ended", "scenario-ended")
#: An alarm raised or cleared (events.Alarm, events.AlarmCleared; an ONU's OMCI alarm).
ALARM_TYPES = ("alarm", "omci-alarm")
#: What the OLT and the adapter exchange at a bring-up, a few a second per ONU: indications of ports and ONUs,
#: flows, the adapter's requests, MIB uploads: `oltsimctl events` leaves them out unless asked for (--all, --type).
EXCHANGE_TYPES = ("olt-indication", "nni-indication", "pon-indication", "onu-discovery", "onu-indication",
                  "flow-added", "flow-removed", "openolt-request", "mib-upload", "openolt-server")
#: What comes at packet rate or on a timer: OMCI frames and packets to the adapter, port statistics (one ONU's
#: power cycle is some 250 OMCI lines). `oltsimctl events` and /ui leave them out unless asked for (--all, --type).
CHATTY_TYPES = ("omci-indication", "packet-indication", "port-stats")
#: Every record type the bus delivers.
RECORD_TYPES = STATE_TYPES + ALARM_TYPES + EXCHANGE_TYPES + SCENARIO_TYPES + CHATTY_TYPES
#: What `oltsimctl events` shows without a filter, as its help says: state changes, alarms and scenarios.
DEFAULT_TYPES = STATE_TYPES + ALARM_TYPES + SCENARIO_TYPES


def unknown_type(name: str) -> str:
    """The one line saying `name` is no event type: with the nearest type when one is near, else every type."""
    found = nearest(name, RECORD_TYPES)
    if found:
        return f"unknown event type {name!r}; did you mean {found}?"
    return f"unknown event type {name!r}; the types are {', '.join(RECORD_TYPES)}"


def check_types(types) -> list[str]:
    """The types of a filter, checked: ValueError (`unknown_type`'s line) for the first one that is no type."""
    types = [t.strip() for t in types if t.strip()]
    for name in types:
        if name not in RECORD_TYPES:
            raise ValueError(unknown_type(name))
    return types
