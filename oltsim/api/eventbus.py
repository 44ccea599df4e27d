"""The in-process event bus: every model event (state change, alarm, indication) as a record that
people and tools can read without an adapter (gRPC StreamEvents, REST Server-Sent Events).

Readers never slow the simulator: each subscriber has a bounded buffer, and what
does not fit is dropped and counted (reported with the next delivered event).
"""
from __future__ import annotations

import re
from dataclasses import fields, is_dataclass

from oltsim.logs import logger
from oltsim.model import events

log = logger("oltsim.events")

DEFAULT_BUFFER = 4096


def _kebab(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "-", name).lower()


def to_record(olt, event, sequence: int, time: float) -> dict | None:
    """A plain record for `event`: type, time, OLT/PON/ONU/UNI identifiers, details (strings)."""
    if not is_dataclass(event):
        return None
    if isinstance(event, events.StateChanged):
        kind = f"{event.device}-state-changed"
    elif isinstance(event, events.FlowChanged):
        kind = "flow-added" if event.added else "flow-removed"
    elif isinstance(event, events.Alarm):
        kind = "alarm"
    else:
        kind = _kebab(type(event).__name__)
    record = {"type": kind, "time": time, "olt_id": olt.id, "pon_id": -1, "onu_id": -1,
              "onu_serial": "", "uni_id": -1, "sequence": sequence, "details": {}}
    details = record["details"]
    for f in fields(event):
        value = getattr(event, f.name)
        if f.name in ("pon_id", "intf_id") and isinstance(value, int) and kind not in ("alarm", "nni-indication"):
            record["pon_id"] = value
        elif f.name == "onu_id":
            record["onu_id"] = value
        elif f.name == "serial":
            record["onu_serial"] = value
        elif f.name == "uni_id":
            record["uni_id"] = value
        elif f.name == "fields":
            for k, v in value.items():
                details[k] = str(v)
            if "onu_id" in value:
                record["onu_id"] = value["onu_id"]
                record["pon_id"] = value.get("intf_id", -1)
        elif f.name == "pkt":
            details["pkt"] = bytes(value).hex()
        else:
            details[f.name if f.name not in ("src", "dest") else {"src": "from", "dest": "to"}[f.name]] = str(value)
    return record


class Subscription:
    """One reader: `deliver` runs on the reactor thread and must not block."""

    def __init__(self, deliver, types=(), onu_serial: str = "", on_close=None):
        self.deliver = deliver
        self.on_close = on_close
        self.types = frozenset(types)
        self.onu_serial = onu_serial
        self.dropped = 0

    def wants(self, record: dict) -> bool:
        if self.types and record["type"] not in self.types:
            return False
        return not self.onu_serial or record["onu_serial"] == self.onu_serial


class EventBus:
    """Fans model events out to subscribers; logs state changes with stable event names."""

    def __init__(self, olt, clock):
        self.olt = olt
        self.clock = clock
        self.sequence = 0
        self.subscriptions: list[Subscription] = []
        olt.subscribe(self._on_event)

    def subscribe(self, deliver, types=(), onu_serial: str = "", on_close=None) -> Subscription:
        """Deliver matching records to `deliver(record) -> bool` (False = could not take it);
        `on_close()` is called if the bus closes (the process is stopping)."""
        sub = Subscription(deliver, types, onu_serial, on_close)
        self.subscriptions.append(sub)
        return sub

    def close_all(self) -> None:
        """End every subscription (servers stopping)."""
        subs, self.subscriptions = self.subscriptions, []
        for sub in subs:
            if sub.on_close is not None:
                try:
                    sub.on_close()
                except Exception:
                    log.failure("event-subscriber-close-failed")

    def unsubscribe(self, sub: Subscription) -> None:
        if sub in self.subscriptions:
            self.subscriptions.remove(sub)

    def _on_event(self, event) -> None:
        if isinstance(event, events.StateChanged):
            level = log.debug if event.device in ("onu", "uni", "service") else log.info
            level("{device}-state-changed attribute={attribute} serial={serial} pon={pon} from={src} to={dest}",
                  device=event.device, attribute=event.attribute, serial=event.serial, pon=event.pon_id,
                  src=event.src, dest=event.dest)
        if not self.subscriptions:
            return
        self.sequence += 1
        record = to_record(self.olt, event, self.sequence, self.clock.seconds())
        if record is None:
            return
        for sub in list(self.subscriptions):
            if sub.wants(record):
                if not sub.deliver(dict(record, dropped=sub.dropped)):
                    sub.dropped += 1
