"""Legacy API v0 use cases, one method per `legacy.BBSimService` RPC, shared by gRPC and REST.

Each method takes the RPC's request message and returns its response message, on the reactor
thread. Refusals raise the model's domain errors (`oltsim.model.errors`), mapped to statuses by
`oltsim.status.ERROR_TABLE`; a whole request is validated before anything is changed.

Which filter fields were given
------------------------------
ONUStatus, ONUActivate, ONUDeactivate, GetFlows and PortStatus filter (AND of the fields given).
REST knows exactly which path and query fields a client gave and passes them as `given`
(dotted names relative to the request message, e.g. `onu.pon_port_id`). Over gRPC proto3 cannot
tell 0 or "" from "not given", so when `given` is None a field counts as given when it is not at
its default, and an ONU's `pon_port_id` (where 0 is a real PON) also counts as given when
`onu_id` is given without `onu_serial`, or when the request's `onu` is present and holds nothing
else (so `ONURequest(onu=ONUInfo(pon_port_id=0))` means PON 0).

Filter semantics (sets F and G of service document 4.2)
-------------------------------------------------------
- `onu_serial`, `pon_port_id`, `onu_id` name ONUs: one that does not exist is 404, and so is a
  combination that does not fit (serial on another PON, serial with another ONU id).
- `oper_state` (up/down) and `onu_state` (an ONU InternalState) must be known values (else 400);
  `gemports` keeps ONUs whose flows use every listed GEM port; `tconts.uni_id` and `tconts.port_no`
  compare with the ONU's last traffic schedulers (an ONU without any never matches).
- GetFlows returns the flows of the selected ONUs; with no filter, every flow (NNI and multicast
  flows included).

Activation and deactivation
---------------------------
A batch (`onus_batch.onus`) lists ONUs by `onu_serial`, or by `pon_port_id` + `onu_id`; otherwise
`onu` selects them with the filters above (one ONU, a PON, a PON's ONUs in some state, ...).
Each ONU is powered on/off exactly as v1 PoweronONU/ShutdownONU do. ONUs that cannot be switched
(already in the target state, PON down, OLT rebooting) are skipped and named in `status_msg`;
only when every selected ONU is refused is the call refused (409), so a bulk call does not fail
because one ONU was already on. A selection that matches no ONU changes nothing and says so.
"""
from __future__ import annotations

from dataclasses import dataclass

from oltsim._proto import legacy_pb2
from oltsim.api.v1.usecases_v1 import NOT_SENT, not_sent
from oltsim.api.v0 import translate_v0 as legacy
from oltsim.api.v0.mapping import LEGACY_ONU_ALARMS
from oltsim.logs import logger
from oltsim.model import events
from oltsim.model.errors import FailedPrecondition, InvalidArgument, NotFound, OltsimError
from oltsim.model.onu import ONU_MACHINE
from oltsim.suggest import did_you_mean

log = logger("oltsim.api.v0")

#: Power-cycle pause of an ONU soft reboot (`reboot`, `soft-reboot`) and hard reboot, seconds
#: (BBSim's unused OnuSoftReboot/OnuHardReboot constants).
ONU_SOFT_REBOOT_DELAY = 10.0
ONU_HARD_REBOOT_DELAY = 30.0

DEVICE_TYPES = ("olt", "onu")
#: action -> reboot kind
ACTIONS = {"reboot": "soft", "soft-reboot": "soft", "hard-reboot": "hard"}
OPER_STATES = ("up", "down")
ALARM_STATES = (legacy.LOS_RAISED, legacy.LOS_CLEARED)

#: The ONU filter fields (set F; set G is the same under `onu.`).
FILTER_FIELDS = ("onu_id", "pon_port_id", "onu_serial", "oper_state", "onu_state", "gemports",
                 "tconts.uni_id", "tconts.port_no")
PORT_FILTER_FIELDS = ("pon_port_max_onus", "pon_port_active_onus", "port_state", "alarm_state")


@dataclass(frozen=True)
class OnuFilter:
    """The ONU filter fields that were given (None / empty: not given)."""
    onu_serial: str | None = None
    pon_port_id: int | None = None
    onu_id: int | None = None
    oper_state: str | None = None
    onu_state: str | None = None
    gemports: tuple[int, ...] = ()
    uni_id: int | None = None
    port_no: int | None = None

    @property
    def empty(self) -> bool:
        return self == OnuFilter()

    def describe(self) -> str:
        """The filter for people: `PON 0, oper_state up`."""
        parts = []
        if self.onu_serial is not None:
            parts.append(f"ONU {self.onu_serial}")
        if self.pon_port_id is not None:
            parts.append(f"PON {self.pon_port_id}")
        if self.onu_id is not None:
            parts.append(f"ONU id {self.onu_id}")
        for name in ("oper_state", "onu_state", "uni_id", "port_no"):
            value = getattr(self, name)
            if value is not None:
                parts.append(f"{'tconts.' if name in ('uni_id', 'port_no') else ''}{name} {value}")
        if self.gemports:
            parts.append("gemports " + ",".join(str(g) for g in self.gemports))
        return ", ".join(parts) if parts else "all ONUs"


def _inferred(info, present: bool) -> set[str]:
    """The fields of `info` a gRPC client gave (see the module docstring)."""
    out = {name for name in ("onu_id", "pon_port_id", "onu_serial", "oper_state", "onu_state")
           if getattr(info, name)}
    if len(info.gemports):
        out.add("gemports")
    if info.HasField("tconts"):
        out |= {f"tconts.{name}" for name in ("uni_id", "port_no") if getattr(info.tconts, name)}
    if "pon_port_id" not in out and (("onu_id" in out and "onu_serial" not in out) or (present and not out)):
        out.add("pon_port_id")
    return out


def onu_filter(info, given: set[str] | None, present: bool = False) -> OnuFilter:
    """The filter of an ONUInfo message; `given` as in the module docstring (None: infer)."""
    names = _inferred(info, present) if given is None else set(given)
    unknown = names - set(FILTER_FIELDS)
    if unknown:
        raise InvalidArgument(f"unknown ONU filter(s) {', '.join(sorted(unknown))}; "
                              f"filters are {', '.join(FILTER_FIELDS)}")
    values: dict = {}
    if "onu_serial" in names:
        if not info.onu_serial.strip():
            raise InvalidArgument("onu_serial must not be empty")
        values["onu_serial"] = info.onu_serial.strip()
    for name in ("pon_port_id", "onu_id"):
        if name in names:
            values[name] = getattr(info, name)
    if "oper_state" in names:
        values["oper_state"] = _one_of(info.oper_state, OPER_STATES, "oper_state")
    if "onu_state" in names:
        values["onu_state"] = _one_of(info.onu_state, sorted(ONU_MACHINE.states), "onu_state")
    if "gemports" in names:
        values["gemports"] = tuple(info.gemports)
    if "tconts.uni_id" in names:
        values["uni_id"] = info.tconts.uni_id
    if "tconts.port_no" in names:
        values["port_no"] = info.tconts.port_no
    return OnuFilter(**values)


def _one_of(value: str, allowed, name: str) -> str:
    text = (value or "").strip().lower()
    if text not in allowed:
        raise InvalidArgument(f"{name} must be one of {', '.join(allowed)} (got {value!r})"
                              f"{did_you_mean(text, allowed)}")
    return text


def _sub(given: set[str] | None, prefix: str) -> set[str] | None:
    if given is None:
        return None
    return {name[len(prefix):] for name in given if name.startswith(prefix)}


def _response(message: str) -> legacy_pb2.BBSimResponse:
    return legacy_pb2.BBSimResponse(status_msg=message)


def _count(n: int, what: str = "ONU") -> str:
    return f"{n} {what}" + ("" if n == 1 else "s")


class V0Commands:
    """The legacy use cases over one OLT model.

    `olt_ip` is reported as `olt.olt_ip`; the ONU reboot delays (soft, hard) are seconds on the
    model's clock. The instance follows LOS indications (whoever raised them: v0, v1) and the clears an
    OLT reboot makes to report each port's `alarm_state`; `close()` stops following.
    """

    def __init__(self, olt, *, olt_ip: str = "127.0.0.1", onu_soft_reboot_delay: float = ONU_SOFT_REBOOT_DELAY,
                 onu_hard_reboot_delay: float = ONU_HARD_REBOOT_DELAY):
        self.olt = olt
        self.olt_ip = olt_ip
        self.reboot_delays = {"soft": float(onu_soft_reboot_delay), "hard": float(onu_hard_reboot_delay)}
        self.los: dict[tuple[str, int], str] = {}
        self._unsubscribe = olt.subscribe(self._on_event)

    def close(self) -> None:
        """Stop following the model's events."""
        self._unsubscribe()

    def _on_event(self, event) -> None:
        # an indication (raised or cleared by an API, a scenario), or a clear without one (an OLT reboot clears
        # every alarm: AlarmCleared, whose fields are those of the clearing indication, status off)
        if isinstance(event, (events.Alarm, events.AlarmCleared)) and event.kind == "los_ind":
            port = legacy.port_of(int(event.fields.get("intf_id", -1)))
            if port is not None:
                raised = event.fields.get("status") == "on"
                self.los[port] = legacy.LOS_RAISED if raised else legacy.LOS_CLEARED

    # ---- reads -----------------------------------------------------------------------------

    def OLTStatus(self, request) -> legacy_pb2.OLTStatusResponse:
        return legacy.olt_status_to_pb(self.olt, self.olt_ip, self.los)

    def PortStatus(self, request, given: set[str] | None = None) -> legacy_pb2.Ports:
        """One port; the other PortInfo fields given filter it (no match: empty `ports`)."""
        kind = (request.port_type or "").strip().lower()
        if kind not in ("pon", "nni"):
            raise InvalidArgument(f"port_type must be pon or nni (got {request.port_type!r})")
        port = self.olt.pon(request.port_id) if kind == "pon" else self.olt.nni(request.port_id)
        if given is None:
            names = {n for n in PORT_FILTER_FIELDS if getattr(request, n)}
        else:
            names = set(given) - {"port_type", "port_id"}
        unknown = names - set(PORT_FILTER_FIELDS)
        if unknown:
            raise InvalidArgument(f"unknown port filter(s) {', '.join(sorted(unknown))}")
        wanted = {}
        for name in names:
            value = getattr(request, name)
            if name == "port_state":
                value = _one_of(value, OPER_STATES, name)
            elif name == "alarm_state":
                value = _one_of(value, ALARM_STATES, name)
            wanted[name] = value
        info = legacy.port_info_to_pb(kind, port, self.los)
        msg = legacy_pb2.Ports()
        if all(getattr(info, name) == value for name, value in wanted.items()):
            msg.ports.append(info)
        return msg

    def ONUStatus(self, request, given: set[str] | None = None) -> legacy_pb2.ONUs:
        """The ONUs `onu` selects (all without a filter), PON-major order."""
        if len(request.onus_batch.onus):
            raise InvalidArgument("ONUStatus takes filters in onu, not a list in onus_batch")
        f = onu_filter(request.onu, _sub(given, "onu."), request.HasField("onu"))
        msg = legacy_pb2.ONUs()
        for onu in self._select(f):
            legacy.onu_info_to_pb(self.olt, onu, msg.onus.add())
        return msg

    def GetFlows(self, request, given: set[str] | None = None) -> legacy_pb2.Flows:
        """The flows of the ONUs the filter selects; every flow without a filter."""
        return legacy.flows_to_pb(self.select_flows(request, given))

    def select_flows(self, request, given: set[str] | None = None) -> list:
        """The stored flows GetFlows answers with, in store order (REST renders them a slice at a time)."""
        f = onu_filter(request, given)
        flows = self.olt.flows.all()
        if not f.empty:
            keys = set()
            for onu in self._select(f):
                keys |= onu.flow_keys
            flows = [flow for flow in flows if flow.key in keys]
        return flows

    def _select(self, f: OnuFilter) -> list:
        """The ONUs matching `f`; NotFound when an identifying field names nothing."""
        olt = self.olt
        pon = olt.pon(f.pon_port_id) if f.pon_port_id is not None else None
        if f.onu_serial is not None:
            onu = olt.onu_by_serial(f.onu_serial)
            if pon is not None and onu.pon is not pon:
                raise NotFound(f"ONU {onu.serial} not found on PON {pon.id} (it is on PON {onu.pon.id})")
            if f.onu_id is not None and onu.onu_id != f.onu_id:
                raise NotFound(f"ONU {onu.serial} does not have ONU id {f.onu_id} (it has {onu.onu_id})")
            candidates = [onu]
        elif pon is not None:
            candidates = list(pon.onus)
            if f.onu_id is not None:
                candidates = [o for o in candidates if o.onu_id == f.onu_id]
                if not candidates:
                    raise NotFound(f"ONU with ID {f.onu_id} not found on PON {pon.id}")
        else:
            candidates = olt.onus
            if f.onu_id is not None:
                candidates = [o for o in candidates if o.onu_id == f.onu_id]
                if not candidates:
                    raise NotFound(f"ONU with ID {f.onu_id} not found on any PON")
        return [onu for onu in candidates if self._matches(onu, f)]

    def _matches(self, onu, f: OnuFilter) -> bool:
        if f.oper_state is not None and onu.oper_state != f.oper_state:
            return False
        if f.onu_state is not None and onu.state != f.onu_state:
            return False
        if f.gemports and not set(f.gemports) <= set(legacy.onu_gemports(self.olt, onu)):
            return False
        if f.uni_id is not None or f.port_no is not None:
            scheds = onu.traffic_schedulers
            if scheds is None:
                return False
            if f.uni_id is not None and scheds.uni_id != f.uni_id:
                return False
            if f.port_no is not None and scheds.port_no != f.port_no:
                return False
        return True

    # ---- power -----------------------------------------------------------------------------

    def ONUActivate(self, request, given: set[str] | None = None) -> legacy_pb2.BBSimResponse:
        onus, scope = self._targets(request, given)
        return self._power(onus, scope, True)

    def ONUDeactivate(self, request, given: set[str] | None = None) -> legacy_pb2.BBSimResponse:
        onus, scope = self._targets(request, given)
        return self._power(onus, scope, False)

    def _targets(self, request, given) -> tuple[list, str]:
        """The ONUs a power request names, all resolved (404/400) before anything is done; a batch lists at most
        as many ONUs as the OLT has."""
        if len(request.onus_batch.onus) > self.olt.onu_count:
            raise InvalidArgument(f"onus lists more ONUs ({len(request.onus_batch.onus)}) than this OLT has "
                                  f"({self.olt.onu_count})")
        batch = list(request.onus_batch.onus)
        sub = _sub(given, "onu.")
        has_onu = request.HasField("onu") if sub is None else bool(sub)
        rest = given is not None  # REST names the query parameters and the body's list, gRPC the message fields
        if batch:
            if has_onu:
                raise InvalidArgument("give either onu.* query parameters or a body listing onus, not both" if rest
                                      else "give either onu or onus_batch, not both")
            return self._batch(batch), "listed"
        if not has_onu:
            raise InvalidArgument(
                "no ONU given: name ONUs in the path or the onu.onu_serial, onu.pon_port_id, onu.onu_id query "
                'parameters, or list them in the body {"onus": [{"onu_serial": ...}]}' if rest
                else "no ONU given: select ONUs with onu or list them in onus_batch.onus")
        f = onu_filter(request.onu, sub, True)
        return self._select(f), f.describe()

    def _batch(self, entries) -> list:
        onus, seen = [], set()
        for i, entry in enumerate(entries):
            try:
                if entry.onu_serial:
                    onu = self.olt.onu_by_serial(entry.onu_serial)
                    if entry.pon_port_id and self.olt.pon(entry.pon_port_id) is not onu.pon:
                        raise NotFound(f"ONU {onu.serial} is not on PON {entry.pon_port_id}")
                    if entry.onu_id and entry.onu_id != onu.onu_id:
                        raise NotFound(f"ONU {onu.serial} does not have ONU id {entry.onu_id}")
                elif entry.onu_id:
                    onu = self.olt.onu_by_id(entry.pon_port_id, entry.onu_id)
                else:
                    raise InvalidArgument(f"onus[{i}] names no ONU: give onu_serial, or pon_port_id and onu_id")
            except NotFound as exc:
                raise NotFound(f"onus[{i}]: {exc.message}") from None
            if onu.serial not in seen:
                seen.add(onu.serial)
                onus.append(onu)
        return onus

    def _power(self, onus, scope: str, on: bool) -> legacy_pb2.BBSimResponse:
        act = self.olt.power_on_onu if on else self.olt.shutdown_onu
        verb = "Powered on" if on else "Shut down"
        if not onus:
            return _response(f"No ONU matches ({scope}); nothing {'powered on' if on else 'shut down'}.")
        done, refused = [], []
        for onu in onus:
            try:
                act(onu.serial)  # the model refuses before any effect
            except FailedPrecondition as exc:
                refused.append(exc.message)
            else:
                done.append(onu.serial)
        if not done:
            raise FailedPrecondition("; ".join(refused))
        message = f"{verb} {_count(len(done))}: {', '.join(done)}"
        if refused:
            message += f"; skipped {len(refused)}: {'; '.join(refused)}"
        return _response(self._unsent(message))

    # ---- alarms ----------------------------------------------------------------------------

    def GenerateONUAlarm(self, request) -> legacy_pb2.BBSimResponse:
        """signaldegrade, lossofomcichannel, lossofploam; `on` raises, `off` clears."""
        onu = self.olt.onu_by_serial(request.onu_serial)
        legacy_name = (request.alarm_type or "").strip().lower()
        alarm = LEGACY_ONU_ALARMS.get(legacy_name)
        if alarm is None:
            raise InvalidArgument(f"alarm_type must be one of {', '.join(LEGACY_ONU_ALARMS)} "
                                  f"(got {request.alarm_type!r})")
        self.olt.onu_alarm(onu.serial, alarm, request.status)
        word = "raised" if request.status.strip().lower() == "on" else "cleared"
        return _response(not_sent(self.olt, f"ONU {onu.serial}: {legacy_name} alarm ({alarm}) {word}."))

    def GenerateOLTAlarm(self, request) -> legacy_pb2.BBSimResponse:
        """LOS on a PON or NNI; `on` raises, `off` clears."""
        self.olt.olt_los(request.port_type, request.port_id, request.status)
        word = "raised" if request.status.strip().lower() == "on" else "cleared"
        return _response(not_sent(self.olt, f"LOS {word} on {request.port_type.strip().upper()} {request.port_id}."))

    # ---- device actions --------------------------------------------------------------------

    def PerformDeviceAction(self, request) -> legacy_pb2.BBSimResponse:
        """reboot / soft-reboot / hard-reboot of the OLT (its reboot sequence) or of an ONU
        (shut down now, powered on again after the soft or hard delay)."""
        device = (request.device_type or "").strip().lower()
        if device not in DEVICE_TYPES:
            raise InvalidArgument(f"device_type must be olt or onu (got {request.device_type!r})")
        action = (request.action or "").strip().lower()
        kind = ACTIONS.get(action)
        if kind is None:
            raise InvalidArgument(f"action must be one of {', '.join(ACTIONS)} (got {request.action!r})")
        serial = (request.serial_number or "").strip()
        if device == "olt":
            if serial and serial != self.olt.serial:
                raise NotFound(f"OLT {serial} not found (this is OLT {self.olt.serial})")
            self.olt.reboot()
            return _response(f"OLT {self.olt.serial} {action} triggered.")
        if not serial:
            raise InvalidArgument("an ONU action needs the ONU's serial_number "
                                  "(PATCH /v0/olt/onu/{serial_number}/action/{action})")
        onu = self.olt.onu_by_serial(serial)
        delay = self.reboot_delays[kind]
        if onu.state == "disabled":
            raise FailedPrecondition(f"ONU {onu.serial} is powered off: power it on rather than {action} it")
        try:
            self.olt.shutdown_onu(onu.serial)  # 409 unless the ONU can be shut down; cancels its timers
        except FailedPrecondition:
            raise FailedPrecondition(f"ONU {onu.serial} is {onu.state}; only an enabled ONU can {action}") from None
        onu.call_later(delay, self._power_back_on, onu, self.olt.heartbeat_signature)
        log.info("v0-onu-reboot serial={serial} action={action} delay={delay}", serial=onu.serial,
                 action=action, delay=delay)
        return _response(not_sent(self.olt, f"ONU {onu.serial} {action}: shut down, powering on again in "
                                             f"{delay:g} s."))

    def _unsent(self, message: str) -> str:
        """`message` (no final period) saying, with no adapter connected, that the indications were not sent."""
        return message if self.olt.adapter_connected else f"{message} ({NOT_SENT})"

    def _power_back_on(self, onu, signature: int) -> None:
        if onu.state != "disabled":
            return  # powered on by someone else meanwhile
        if self.olt.state != "enabled" or self.olt.heartbeat_signature != signature:
            # The OLT rebooted or went down during the pause: the ONU waits for the adapter again.
            log.info("v0-onu-reboot-power-on-skipped serial={serial} reason={reason}", serial=onu.serial,
                     reason=f"OLT is {self.olt.state} or was rebooted")
            return
        try:
            self.olt.power_on_onu(onu.serial)
        except OltsimError as exc:
            log.info("v0-onu-reboot-power-on-skipped serial={serial} reason={reason}", serial=onu.serial,
                     reason=exc.message)
