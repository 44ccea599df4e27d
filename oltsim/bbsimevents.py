"""BBSim's Kafka events: model events turned into the records BBSim 1.16.8 publishes (``-enableEvents``).

Pure: the time comes from the injected clock and the record goes to a ``publish(bytes) -> bool`` callback
(:class:`oltsim.kafka.KafkaSink` in the daemon, wired by :mod:`oltsim.tap`). A record is BBSim's ``common.Event``
marshalled by Go's ``encoding/json``: compact, keys in the struct's order::

    {"EventType":"OLT-enable-received","OnuSerial":"","OltID":0,"IntfID":-1,"OnuID":-1,
     "EpochTime":1583152243144,"Timestamp":"2020-03-02 12:30:43.144449453"}

``EpochTime`` is milliseconds since the epoch (truncated, as Go's ``UnixNano()/1e6``), ``Timestamp`` the same instant
in local time as Go's layout ``2006-01-02 15:04:05.000000000``, and OLT-level events carry -1 ids and an empty serial.

Event types (BBSim's where it publishes them), and the model events they come from:

- ``OLT-enable-received`` / ``OLT-disable-received`` / ``OLT-reenable-received`` / ``OLT-reboot-received``: the
  OpenOLT EnableIndication, DisableOlt, ReenableOlt and Reboot RPCs, when received (``events.OpenoltRequest``)
- ``ONU-activate-indication-received``: ActivateOnu, once accepted (BBSim's publishes after finding the PON)
- ``ONU-discovery-indication-sent``: each OnuDiscInd (first and repeated), with the ONU's current id
- ``Flow-add-received``: a flow stored for an ONU that had none (BBSim: "first flow of the ONU")
- ``Flow-remove-received``: each removed flow of an ONU
- ``MIB-upload-received``: an OMCI MIB Upload; ``MIB-upload-done``: its last MIB Upload Next answered
- ``ONU-authentication-done`` (a service's EAPOL reached EAP-Success) and ``ONU-DHCP-ACK-received`` (its DHCP got
  the ACK): BBSim documents these two and never publishes them.

oltsim's own, beyond BBSim's: ``scenario-started``, ``scenario-step-started``, ``scenario-step-ended`` and
``scenario-ended`` (``events.ScenarioEvent``, a fault scenario of :mod:`oltsim.scenario`): OLT-level ids, then the
keys ``Scenario``, ``Step``, ``Action``, ``Targets`` (a list of ONU serials, ``pon 3``, ``nni 0`` or ``olt``),
``Outcome`` and ``Refusals`` after BBSim's (a reader of BBSim's records ignores keys it does not know)::

    {"EventType":"scenario-step-started","OnuSerial":"","OltID":0,"IntfID":-1,"OnuID":-1,"EpochTime":...,
     "Timestamp":"...","Scenario":"pon-3-brownout","Step":"cut","Action":"onu-power-off",
     "Targets":["BBSM00000301"],"Outcome":"","Refusals":0}

Deliberate difference: BBSim publishes ``MIB-upload-done`` for each MIB Upload Next after the 290th since the MIB
Upload, so never with up to 7 UNIs (its MIB has 227 MEs with 4) and several times with more; here it marks the end
of each upload, once.
"""
from __future__ import annotations

import json
import math
from datetime import datetime, timezone
from typing import Callable

from oltsim.model import events
from oltsim.model.errors import OltsimError

__all__ = ["EVENT_TYPES", "SCENARIO_EVENT_TYPES", "BbsimEventPublisher", "FirstFlows", "encode", "map_event",
           "record", "scenario_record", "timestamp"]

#: Every EventType published, BBSim's ten then the two it only documents.
EVENT_TYPES = ("OLT-enable-received", "OLT-disable-received", "OLT-reboot-received", "OLT-reenable-received",
               "ONU-discovery-indication-sent", "ONU-activate-indication-received", "Flow-add-received",
               "Flow-remove-received", "MIB-upload-received", "MIB-upload-done", "ONU-authentication-done",
               "ONU-DHCP-ACK-received")

#: oltsim's own EventTypes: a fault scenario's and its steps' starts and ends (scenario_record).
SCENARIO_EVENT_TYPES = ("scenario-started", "scenario-step-started", "scenario-step-ended", "scenario-ended")

_OLT_RPCS = {"EnableIndication": "OLT-enable-received", "DisableOlt": "OLT-disable-received",
             "ReenableOlt": "OLT-reenable-received", "Reboot": "OLT-reboot-received"}
#: (service state attribute, state reached) -> EventType
_SERVICE_STATES = {("EapolState", "eap_response_success_received"): "ONU-authentication-done",
                   ("DhcpState", "dhcp_ack_received"): "ONU-DHCP-ACK-received"}


def timestamp(seconds: float, tz=None) -> tuple[int, str]:
    """(EpochTime, Timestamp) of an instant: milliseconds since the epoch, and the time in `tz` (None: local) as
    ``2006-01-02 15:04:05.000000000`` (nanosecond digits, from the float's microseconds)."""
    # A float holds about microseconds at today's epoch: the fraction is rounded to them, apart from the whole
    # seconds (rounding seconds * 1e6 as a whole would round the float's error too).
    whole = math.floor(seconds)
    micros = round((seconds - whole) * 1_000_000)
    if micros == 1_000_000:
        whole, micros = whole + 1, 0
    moment = datetime.fromtimestamp(whole, tz if tz is not None else timezone.utc)
    if tz is None:
        moment = moment.astimezone()
    return whole * 1000 + micros // 1000, f"{moment:%Y-%m-%d %H:%M:%S}.{micros * 1000:09d}"


def record(event_type: str, olt_id: int, intf_id: int, onu_id: int, serial: str, seconds: float, tz=None) -> dict:
    """BBSim's ``common.Event`` as a dict, keys in its JSON order."""
    epoch, stamp = timestamp(seconds, tz)
    return {"EventType": event_type, "OnuSerial": serial, "OltID": olt_id, "IntfID": intf_id, "OnuID": onu_id,
            "EpochTime": epoch, "Timestamp": stamp}


def scenario_record(olt_id: int, event, seconds: float, tz=None) -> dict:
    """The record of an events.ScenarioEvent: BBSim's keys (OLT-level ids), then the scenario's."""
    rec = record(event.kind, olt_id, -1, -1, "", seconds, tz)
    rec.update(Scenario=event.scenario, Step=event.step, Action=event.action, Targets=list(event.targets),
               Outcome=event.outcome, Refusals=event.refusals)
    return rec


def encode(rec: dict) -> bytes:
    """The record as Go's ``json.Marshal`` writes it: compact, UTF-8."""
    return json.dumps(rec, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def _onu(olt, pon_id: int, onu_id: int):
    if pon_id < 0 or onu_id < 0:
        return None
    try:
        return olt.onu_by_id(pon_id, onu_id)
    except OltsimError:
        return None


def map_event(olt, event) -> tuple[str, int, int, str] | None:
    """(EventType, IntfID, OnuID, OnuSerial) BBSim publishes for a model event, or None."""
    kind = type(event)
    if kind is events.OpenoltRequest:
        if event.rpc == "ActivateOnu":
            return "ONU-activate-indication-received", event.intf_id, event.onu_id, event.serial
        name = _OLT_RPCS.get(event.rpc)
        return (name, -1, -1, "") if name is not None else None
    if kind is events.OnuDiscovery:
        try:
            onu = olt.onu_by_serial(event.serial)
        except OltsimError:
            return None
        return "ONU-discovery-indication-sent", event.intf_id, onu.onu_id, event.serial
    if kind is events.FlowChanged:
        onu = _onu(olt, event.pon_id, event.onu_id) if event.flow_type != "multicast" else None
        if onu is None:
            return None  # a flow of no ONU (NNI trap, multicast), or of an ONU gone
        if event.added:
            # Every flow stored for an ONU: BbsimEventPublisher keeps only an ONU's first (FirstFlows).
            return "Flow-add-received", event.pon_id, event.onu_id, onu.serial
        return "Flow-remove-received", event.pon_id, event.onu_id, onu.serial
    if kind is events.MibUpload:
        return ("MIB-upload-done" if event.done else "MIB-upload-received"), event.intf_id, event.onu_id, event.serial
    if kind is events.StateChanged and event.device == "service":
        name = _SERVICE_STATES.get((event.attribute, event.dest))
        if name is not None:
            return name, event.pon_id, event.onu_id, event.serial
    return None


class FirstFlows:
    """Which stored flow is an ONU's first, as BBSim counts: its list of flows was empty before. A flow stored again
    under the same key (VOLTHA's DHCP flow replacing the EAPOL flow with the same id) is not a first; an ONU that is
    disabled loses its flows, so its next flow is."""

    def __init__(self, olt):
        self.olt = olt
        self.keys: dict[str, set] = {}

    def added(self, event) -> bool:
        """Record the flow of FlowChanged `event` (added); True when its ONU had no flow before it."""
        onu = _onu(self.olt, event.pon_id, event.onu_id)
        if onu is None:
            return False
        key = (event.pon_id, event.flow_id, event.flow_type)
        # What the ONU still holds of what it was seen to get (flows moved to another ONU have left its keys).
        before = self.keys.get(onu.serial, set()) & onu.flow_keys
        self.keys[onu.serial] = before | {key}
        return not before

    def removed(self, event) -> None:
        onu = _onu(self.olt, event.pon_id, event.onu_id)
        if onu is not None and onu.serial in self.keys:
            self.keys[onu.serial].discard((event.pon_id, event.flow_id, event.flow_type))

    def onu_disabled(self, serial: str) -> None:
        self.keys.pop(serial, None)


class BbsimEventPublisher:
    """Publishes BBSim's record of each model event of `olt` through `publish(bytes) -> bool` (False: dropped by the
    sink, which counts it); the time is `clock.seconds()`, shown in `tz` (None: local time, as BBSim)."""

    def __init__(self, olt, clock, publish: Callable[[bytes], bool], tz=None):
        self.olt = olt
        self.clock = clock
        self.publish = publish
        self.tz = tz
        self.published = 0
        self.first_flows = FirstFlows(olt)
        self._unsubscribe = olt.subscribe(self._on_event)

    def close(self) -> None:
        """Stop listening to the OLT."""
        self._unsubscribe()

    def _on_event(self, event) -> None:
        kind = type(event)
        if kind is events.ScenarioEvent:
            self.publish(encode(scenario_record(self.olt.id, event, self.clock.seconds(), self.tz)))
            self.published += 1
            return
        if kind is events.StateChanged and event.device == "onu" and event.attribute == "InternalState" \
                and event.dest == "disabled":
            self.first_flows.onu_disabled(event.serial)
        mapped = map_event(self.olt, event)
        if mapped is None:
            return
        event_type, intf_id, onu_id, serial = mapped
        if kind is events.FlowChanged:
            if not event.added:
                self.first_flows.removed(event)
            elif not self.first_flows.added(event):
                return
        self.publish(encode(record(event_type, self.olt.id, intf_id, onu_id, serial, self.clock.seconds(), self.tz)))
        self.published += 1
