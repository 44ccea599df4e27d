"""The types of the event bus's records (oltsim.api.eventbus.to_record's `type`), in a module of their own so that
oltsimctl can name them without loading the daemon's logging."""
from __future__ import annotations

#: A device's state changed (events.StateChanged, by device).
STATE_TYPES = ("olt-state-changed", "pon-state-changed", "onu-state-changed", "uni-state-changed",
               "service-state-changed")
#: A scenario or one of its steps started or ended (events.ScenarioEvent).
SCENARIO_TYPES = ("scenario-started", "scenario-step-started", "scenario-step-ended", "scenario-ended")
#: What comes at packet rate or on a timer: OMCI frames and packets to the adapter, port statistics (one ONU's
#: power cycle is some 250 OMCI lines). `oltsimctl events` leaves them out unless asked for (--all, --type), as /ui
#: leaves out packets and statistics.
CHATTY_TYPES = ("omci-indication", "packet-indication", "port-stats")
#: Every record type the bus delivers.
RECORD_TYPES = STATE_TYPES + ("alarm", "omci-alarm", "olt-indication", "nni-indication", "pon-indication",
                              "onu-discovery", "onu-indication", "flow-added", "flow-removed", "openolt-request",
                              "mib-upload", "openolt-server") + SCENARIO_TYPES + CHATTY_TYPES
#: What `oltsimctl events` shows without a filter: state changes, alarms, scenarios and the other events of a
#: moment (indications of ports and ONUs, flows, the adapter's requests, MIB uploads).
DEFAULT_TYPES = tuple(t for t in RECORD_TYPES if t not in CHATTY_TYPES)
