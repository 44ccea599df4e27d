"""The in-process event bus: every model event (state change, alarm, indication) as a record that
people and tools can read without an adapter (gRPC StreamEvents, REST Server-Sent Events).

Readers never slow the simulator: each subscriber has a bounded buffer, and what
does not fit is dropped and counted (the next delivered event says how many were dropped
since the one before it: one report per gap). A reader
that took none of the events of GIVE_UP_SECONDS (at least GIVE_UP_AFTER of them) has
stopped reading: its subscription ends (`event-reader-too-slow` is logged) and its
surface ends its stream, saying why.
"""
from __future__ import annotations

import re
from dataclasses import fields, is_dataclass

from oltsim.api.eventtypes import check_types
from oltsim.capture.ring import check_serial
from oltsim.logs import Summary, SummedLines, logger
from oltsim.model import events
from oltsim.model.alarms import NNI_PORT_BASE, PON_PORT_BASE, alarm_key
from oltsim.model.errors import InvalidArgument
from oltsim.model.onu import serial_key

log = logger("oltsim.events")

DEFAULT_BUFFER = 4096
#: A reader that took no event for GIVE_UP_SECONDS of the bus's clock, while at least GIVE_UP_AFTER were dropped for
#: it, has its stream ended. A reader that reads, however slowly, takes one now and then and is never ended (a burst of
#: thousands of events, an ONU's MIB upload, can fill any reader's buffers for a moment: a count alone would end
#: readers that only lag); one that stopped gets nothing more anyway, and ending its stream gives back what it holds
#: (its open-call place, its buffers) and tells it why, where dropping alone would tell it nothing until it read again.
GIVE_UP_SECONDS = 10.0
GIVE_UP_AFTER = 256
#: ONU state changes are logged one line each, at most ONU_LINES_PER_INTERVAL per ONU_LOG_INTERVAL seconds; the
#: rest of the interval (4096 ONUs powering on at once) is one `onu-state-changes ... (summary ...)` line.
ONU_LOG_INTERVAL = 1.0
ONU_LINES_PER_INTERVAL = 20
#: The kinds of change (attribute, from, to) a summary line names, most frequent first.
SUMMARY_KINDS = 6
#: Alarm lines (alarm-raised, alarm-cleared) one by one per second; beyond (a PON's ONUs losing light at once), one
#: `alarms count=... onu_los-raised=...` line for the rest of the second.
ALARM_LINES_PER_INTERVAL = 4


def alarm_line(event) -> tuple[str, str, dict]:
    """The log line of an events.Alarm or events.AlarmCleared: (alarm-raised or alarm-cleared, its type, the fields
    naming the alarm and its device). The type names the device: onu_los (onu_alarm_ind los_status), nni_los and
    pon_los (los_ind), else the indication without `_ind` (onu_signal_degrade_ind: onu_signal_degrade); an alarm
    without a status (activation failure, processing error) is raised. Raised or cleared is read as the alarm
    book reads it (the ITU PON statistics alarm has its status inside rdi_error_ind)."""
    values = dict(event.fields)
    status = next((key for key in values if key == "status" or key.endswith("_status")), None)
    key, raised = alarm_key(event.kind, values, event.serial)
    if key is None:
        raised = values.get(status, "on") != "off"
    elif raised is None:
        raised = True  # a one-shot alarm
    if event.kind == "los_ind":
        port = int(values.get("intf_id", 0))
        device = "pon" if port >= PON_PORT_BASE else "nni"
        number = port - (PON_PORT_BASE if device == "pon" else NNI_PORT_BASE)
        kind_type, where = f"{device}_los", {"port": f"{device}-{number}"}
    else:
        if event.kind == "onu_alarm_ind" and status:
            kind_type = "onu_" + status[:-len("_status")]
        else:
            kind_type = event.kind[:-len("_ind")] if event.kind.endswith("_ind") else event.kind
        where = {"serial": event.serial or "-", "pon": values.get("intf_id", -1), "onu_id": values.get("onu_id", -1)}
    return ("alarm-raised" if raised else "alarm-cleared"), kind_type, where


def _kebab(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "-", name).lower()


def to_record(olt, event, sequence: int, time: float) -> dict | None:
    """A plain record for `event`: type, time, OLT/PON/ONU/UNI identifiers, details (strings). A record of an ONU
    carries its serial even when the event names it by PON and ONU id only (OMCI frames, packets, flows)."""
    if not is_dataclass(event):
        return None
    if isinstance(event, events.ScenarioEvent):
        return scenario_record(olt, event, sequence, time)
    if isinstance(event, events.StateChanged):
        kind = f"{event.device}-state-changed"
    elif isinstance(event, events.FlowChanged):
        kind = "flow-added" if event.added else "flow-removed"
    elif isinstance(event, (events.Alarm, events.AlarmCleared)):
        kind = "alarm"  # an AlarmCleared's details add the reason: the OLT cleared it without an indication
    else:
        kind = _kebab(type(event).__name__)
    record = {"type": kind, "time": time, "olt_id": olt.id, "pon_id": -1, "onu_id": -1,
              "onu_serial": "", "uni_id": -1, "sequence": sequence, "details": {}}
    details = record["details"]
    for f in fields(event):
        value = getattr(event, f.name)
        if f.name in ("pon_id", "intf_id") and isinstance(value, int) and kind not in ("alarm", "nni-indication",
                                                                                      "port-stats"):
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
        elif f.name == "service" and not value:
            pass  # a state change of a device other than a service: no service to name
        else:
            details[f.name if f.name not in ("src", "dest") else {"src": "from", "dest": "to"}[f.name]] = str(value)
    if kind == "port-stats":
        # Its intf_id is the port number (OpenOLT's PortStatistics): named as `port` (pon-3, nni-0), and a PON's
        # statistics carry the PON's id.
        device = "pon" if event.intf_id >= PON_PORT_BASE else "nni"
        number = event.intf_id - (PON_PORT_BASE if device == "pon" else NNI_PORT_BASE)
        details["port"] = f"{device}-{number}"
        if device == "pon":
            record["pon_id"] = number
    elif kind == "packet-indication" and event.intf_type == "nni":
        # A packet from the NNI: its intf_id is the NNI's, and it is of no PON, ONU or UNI.
        record.update(pon_id=-1, onu_id=-1, uni_id=-1)
        details["intf_id"] = str(event.intf_id)
    elif not record["onu_serial"] and record["onu_id"] >= 0 and record["pon_id"] >= 0:
        record["onu_serial"] = olt.onu_serial_at(record["pon_id"], record["onu_id"])
    return record


def scenario_record(olt, event, sequence: int, time: float) -> dict:
    """The record of an events.ScenarioEvent: its `kind` is the type; details name the scenario, the step, its
    action and targets (comma-separated: ONU serials, `pon 3`, `nni 0`, `olt`) and, once ended, the outcome and the
    refusals counted. Fields that do not apply (a step's on a scenario event) are left out."""
    details = {"scenario": event.scenario}
    if event.step:
        details.update(step=event.step, action=event.action, targets=",".join(event.targets))
    if event.kind.endswith("-ended"):
        details.update(outcome=event.outcome, refusals=str(event.refusals))
    return {"type": event.kind, "time": time, "olt_id": olt.id, "pon_id": -1, "onu_id": -1, "onu_serial": "",
            "uni_id": -1, "sequence": sequence, "details": details}


class Subscription:
    """One reader: `deliver` runs on the reactor thread and must not block. `dropped` counts the events it could not
    take, `missed` those in a row since it last took one (the first of them at `missed_since`)."""

    def __init__(self, deliver, types=(), onu_serial: str = "", on_close=None, reader: str = "",
                 give_up_after: int | None = None, on_give_up=None):
        self.deliver = deliver
        self.on_close = on_close
        self.types = frozenset(types)
        self.onu_serial = onu_serial
        self._serial_key = serial_key(onu_serial)  # a serial's hex in either case names the same ONU
        self.dropped = 0
        self.missed = 0
        self.missed_since = 0.0
        self.reader = reader
        self.give_up_after = give_up_after
        self.on_give_up = on_give_up

    def wants(self, record: dict) -> bool:
        if self.types and record["type"] not in self.types:
            return False
        return not self.onu_serial or serial_key(record["onu_serial"]) == self._serial_key


class EventBus:
    """Fans model events out to subscribers; logs state changes with stable event names."""

    def __init__(self, olt, clock):
        self.olt = olt
        self.clock = clock
        self.sequence = 0
        self.subscriptions: list[Subscription] = []
        self.onu_changes = Summary(clock, self._log_onu_summary, interval=ONU_LOG_INTERVAL,
                                   burst=ONU_LINES_PER_INTERVAL, sustained=True)
        self.alarm_lines = SummedLines(log, "alarms", clock, burst=ALARM_LINES_PER_INTERVAL)
        olt.subscribe(self._on_event)

    def subscribe(self, deliver, types=(), onu_serial: str = "", on_close=None, reader: str = "",
                  on_give_up=None) -> Subscription:
        """Deliver matching records to `deliver(record) -> bool` (False = could not take it), each with `dropped`:
        how many matching records it could not take since the last it took (0 mostly), so that a gap is told once;
        InvalidArgument for a type that is none (`eventtypes.unknown_type`), NotFound, with the nearest serial, for
        an ONU the OLT does not have;
        `on_close()` is called if the bus closes (the process is stopping). With `on_give_up`, a reader that took
        none of the events of GIVE_UP_SECONDS (at least GIVE_UP_AFTER) is unsubscribed, logged (`reader` names it,
        with its peer) and `on_give_up(subscription)` ends its stream."""
        try:
            types = check_types(types)
        except ValueError as exc:
            raise InvalidArgument(str(exc)) from None
        if onu_serial:
            check_serial(self.olt, onu_serial)
        sub = Subscription(deliver, types, onu_serial, on_close, reader,
                           GIVE_UP_AFTER if on_give_up is not None else None, on_give_up)
        self.subscriptions.append(sub)
        return sub

    def close_all(self) -> None:
        """End every subscription (servers stopping) and log the ONU state changes and alarms counted so far."""
        self.onu_changes.flush()
        self.alarm_lines.flush()
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

    def _log_state_change(self, event) -> None:
        """One line naming the device: the OLT by serial, a PON by OLT serial and id, an ONU (at info, at most
        ONU_LINES_PER_INTERVAL a second, then a summary), its UNIs and services (debug) by ONU serial and PON."""
        fields = dict(device=event.device, attribute=event.attribute, src=event.src, dest=event.dest)
        if event.device == "olt":
            log.info("olt-state-changed attribute={attribute} serial={serial} from={src} to={dest}",
                     serial=self.olt.serial, **fields)
        elif event.device == "pon":
            log.info("pon-state-changed attribute={attribute} olt={olt} pon={pon} from={src} to={dest}",
                     olt=self.olt.serial, pon=event.pon_id, **fields)
        elif event.device == "onu":
            if self.onu_changes.offer((event.attribute, event.src, event.dest)):
                log.info("onu-state-changed attribute={attribute} serial={serial} pon={pon} from={src} to={dest}",
                         serial=event.serial, pon=event.pon_id, **fields)
        else:
            log.debug("{device}-state-changed attribute={attribute} serial={serial} pon={pon} uni={uni} from={src} "
                      "to={dest}", serial=event.serial, pon=event.pon_id, uni=event.uni_id, **fields)

    def _log_onu_summary(self, counts: dict) -> None:
        """The ONU state changes beyond ONU_LINES_PER_INTERVAL in one interval, as one line."""
        total = sum(counts.values())
        ranked = sorted(counts.items(), key=lambda item: -item[1])
        if len(ranked) == 1:
            (attribute, src, dest), _ = ranked[0]
            log.info("onu-state-changes count={count} attribute={attribute} from={src} to={dest} (summary of "
                     "{interval:g} s)", count=total, attribute=attribute, src=src, dest=dest,
                     interval=self.onu_changes.interval)
            return
        shown = ", ".join(f"{attribute} {src}->{dest} x{n}" for (attribute, src, dest), n in ranked[:SUMMARY_KINDS])
        if len(ranked) > SUMMARY_KINDS:
            shown += f", {len(ranked) - SUMMARY_KINDS} more kinds"
        log.info("onu-state-changes count={count} changes={changes} (summary of {interval:g} s)", count=total,
                 changes=shown, interval=self.onu_changes.interval)

    def _log_alarm(self, event) -> None:
        """One alarm-raised / alarm-cleared line, whichever API (or the model itself) raised it; a clear the OLT
        made without an indication (events.AlarmCleared) says why (`reason=onu-powered-on`)."""
        name, kind_type, where = alarm_line(event)
        if getattr(event, "reason", ""):
            where["reason"] = event.reason
        text = " ".join(f"{key}={{{key}}}" for key in where)
        self.alarm_lines.info(f"{kind_type}-{name[len('alarm-'):]}",
                              f"{name} kind={{kind}} type={{type}} {text}", kind=event.kind, type=kind_type, **where)

    def _on_event(self, event) -> None:
        if isinstance(event, events.StateChanged):
            self._log_state_change(event)
        elif isinstance(event, (events.Alarm, events.AlarmCleared)):
            self._log_alarm(event)
        if not self.subscriptions:
            return
        self.sequence += 1
        record = to_record(self.olt, event, self.sequence, self.clock.seconds())
        if record is None:
            return
        for sub in list(self.subscriptions):
            if sub.wants(record):
                if sub.deliver(dict(record, dropped=sub.missed)):
                    sub.missed = 0
                else:
                    sub.dropped += 1
                    sub.missed += 1
                    if sub.missed == 1:
                        sub.missed_since = record["time"]
                    elif (sub.give_up_after is not None and sub.missed >= sub.give_up_after
                          and record["time"] - sub.missed_since >= GIVE_UP_SECONDS):
                        self._give_up(sub)

    def _give_up(self, sub: Subscription) -> None:
        """End the subscription of a reader that stopped reading, and have its surface end its stream."""
        self.unsubscribe(sub)
        log.warn("event-reader-too-slow reader={reader} dropped={dropped} missed={missed} (it took none of the "
                 "last {missed} events, {seconds:.0f} s: its stream is ended)", reader=sub.reader or "-",
                 dropped=sub.dropped, missed=sub.missed, seconds=self.clock.seconds() - sub.missed_since)
        try:
            sub.on_give_up(sub)
        except Exception:
            log.failure("event-subscriber-give-up-failed reader={reader}", reader=sub.reader or "-")
