"""The ONU alarm catalogue of BBSim (17 names), how each becomes an AlarmIndication, and the book of the
alarms an OLT reported (active ones and a bounded history)."""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from oltsim.model.errors import InvalidArgument

#: name -> (AlarmIndication oneof, fields taken from parameters {param: field}, has status)
ONU_ALARMS: dict[str, tuple[str, dict[str, str], bool]] = {
    "DYING_GASP": ("dying_gasp_ind", {}, True),
    "ONU_STARTUP_FAILURE": ("onu_startup_fail_ind", {}, True),
    "ONU_SIGNAL_DEGRADE": ("onu_signal_degrade_ind", {"InverseBitErrorRate": "inverse_bit_error_rate"}, True),
    "ONU_DRIFT_OF_WINDOW": ("onu_drift_of_window_ind", {"Drift": "drift", "NewEqd": "new_eqd"}, True),
    "ONU_LOSS_OF_OMCI_CHANNEL": ("onu_loss_omci_ind", {}, True),
    "ONU_SIGNALS_FAILURE": ("onu_signals_fail_ind", {"InverseBitErrorRate": "inverse_bit_error_rate"}, True),
    "ONU_TRANSMISSION_INTERFERENCE_WARNING": ("onu_tiwi_ind", {"Drift": "drift"}, True),
    "ONU_ACTIVATION_FAILURE": ("onu_activation_fail_ind", {"FailReason": "fail_reason"}, False),
    "ONU_PROCESSING_ERROR": ("onu_processing_error_ind", {}, False),
    "ONU_LOSS_OF_KEY_SYNC_FAILURE": ("onu_loss_of_sync_fail_ind", {}, True),
    "ONU_ITU_PON_STATS": ("onu_itu_pon_stats_ind", {"RdiErrors": "rdi_error_count"}, True),
    "ONU_ALARM_LOS": ("onu_alarm_ind", {}, "los_status"),
    "ONU_ALARM_LOB": ("onu_alarm_ind", {}, "lob_status"),
    "ONU_ALARM_LOPC_MISS": ("onu_alarm_ind", {}, "lopc_miss_status"),
    "ONU_ALARM_LOPC_MIC_ERROR": ("onu_alarm_ind", {}, "lopc_mic_error_status"),
    "ONU_ALARM_LOFI": ("onu_alarm_ind", {}, "lofi_status"),
    "ONU_ALARM_LOAMI": ("onu_alarm_ind", {}, "loami_status"),
}

_UINT32 = 0xFFFFFFFF


def parse_status(status: str) -> bool:
    """`on` raises, `off` clears (case-insensitive); anything else is an InvalidArgument."""
    value = (status or "").strip().lower()
    if value == "on":
        return True
    if value == "off":
        return False
    raise InvalidArgument(f"alarm status must be on or off (got {status!r})")


def build_onu_alarm(alarm_type: str, status: str, parameters: dict) -> tuple[str, dict, bool]:
    """Validate an ONU alarm request; returns (indication kind, fields without ids, raised)."""
    name = (alarm_type or "").strip().upper()
    entry = ONU_ALARMS.get(name)
    if entry is None:
        raise InvalidArgument(f"unknown ONU alarm type {alarm_type!r}; known types: {', '.join(ONU_ALARMS)}")
    kind, param_fields, status_field = entry
    raised = parse_status(status)
    word = "on" if raised else "off"
    fields: dict = {}
    for key, value in parameters.items():
        if key not in param_fields:
            raise InvalidArgument(f"alarm {name} takes no parameter {key!r}"
                                  + (f" (it takes {', '.join(param_fields)})" if param_fields else ""))
        try:
            number = int(str(value), 10)
        except ValueError:
            raise InvalidArgument(f"alarm parameter {key} must be an integer (got {value!r})") from None
        upper = 0xFFFFFFFFFFFFFFFF if key == "RdiErrors" else _UINT32
        if not 0 <= number <= upper:
            raise InvalidArgument(f"alarm parameter {key} is out of range (got {value!r})")
        fields[param_fields[key]] = number
    if kind == "onu_itu_pon_stats_ind":
        return kind, {"rdi_error_ind": {"rdi_error_count": fields.get("rdi_error_count", 0), "status": word}}, raised
    if isinstance(status_field, str):
        return kind, {status_field: word}, raised
    if status_field:
        fields["status"] = word
    return kind, fields, raised


# ---- the active alarms and their history --------------------------------------------------------------------

#: the ports' LOS alarms as the control API names them (OLTAlarmRequest's InterfaceType)
OLT_LOS_TYPES = {"pon": "OLT_PON_LOS", "nni": "OLT_NNI_LOS"}
NNI_PORT_BASE = 0x100000
PON_PORT_BASE = 0x20000000
HISTORY_LIMIT = 1000

# (AlarmIndication oneof, field carrying the status) -> alarm name; the status field of onu_alarm_ind says which
# of its six alarms it is, every other oneof names one alarm. Alarms without a status are one-shot events.
_NAMES: dict[tuple[str, str], str] = {}
for _name, (_kind, _params, _status) in ONU_ALARMS.items():
    _NAMES[(_kind, _status if isinstance(_status, str) else "status" if _status else "")] = _name
_NAMES[("onu_itu_pon_stats_ind", "rdi_error_ind")] = _NAMES.pop(("onu_itu_pon_stats_ind", "status"))


def _status_of(kind: str, fields: dict) -> tuple[str, str | None]:
    """(name, "on"/"off" or None for a one-shot alarm) of an AlarmIndication, or ("", None) if it is no alarm
    this book knows."""
    if kind == "onu_itu_pon_stats_ind":
        return _NAMES[(kind, "rdi_error_ind")], str(fields.get("rdi_error_ind", {}).get("status", "on"))
    for key in fields:
        name = _NAMES.get((kind, key))
        if name is not None:
            return name, str(fields[key])
    name = _NAMES.get((kind, ""))
    return (name, None) if name is not None else ("", None)


@dataclass(frozen=True, slots=True)
class AlarmKey:
    """What an alarm is about. `kind` is onu, pon, nni or olt; `type` the name the control API takes
    (ONU_ALARM_LOS, OLT_NNI_LOS, ...); `pon_id` the PON of the ONU or the PON alarmed (-1 for an NNI); `port_id` the
    alarmed port's interface id (PON or NNI id; -1 for an ONU alarm)."""
    kind: str
    type: str
    onu_serial: str = ""
    pon_id: int = -1
    port_id: int = -1


@dataclass(frozen=True, slots=True)
class AlarmRecord:
    """One raise (`raised` True) or clear the OLT reported, at clock time `at`."""
    key: AlarmKey
    raised: bool
    at: float


def alarm_key(kind: str, fields: dict, serial: str) -> tuple[AlarmKey | None, bool | None]:
    """The key of an AlarmIndication (events.Alarm's kind, fields, serial) and whether it raises (True), clears
    (False) or is a one-shot event (None); (None, None) for an indication this book does not track."""
    if kind == "los_ind":
        port = int(fields.get("intf_id", 0))
        raised = str(fields.get("status", "")).lower() == "on"
        if port >= PON_PORT_BASE:
            pon = port - PON_PORT_BASE
            return AlarmKey("pon", OLT_LOS_TYPES["pon"], "", pon, pon), raised
        if port >= NNI_PORT_BASE:
            return AlarmKey("nni", OLT_LOS_TYPES["nni"], "", -1, port - NNI_PORT_BASE), raised
        return AlarmKey("olt", "OLT_LOS", "", -1, port), raised
    name, status = _status_of(kind, fields)
    if not name:
        return None, None
    key = AlarmKey("onu", name, serial, int(fields.get("intf_id", -1)), -1)
    return key, None if status is None else status.lower() == "on"


def clear_indication(key: AlarmKey, onu_id: int = -1) -> tuple[str, dict]:
    """(AlarmIndication oneof, fields) that would clear the alarm `key` (alarm_key's inverse, status off): what
    the logs and event readers are told of a clear the OLT makes without sending an indication. `onu_id` is the
    alarmed ONU's id (-1 when it is not known)."""
    if key.kind == "pon":
        return "los_ind", {"intf_id": PON_PORT_BASE + key.port_id, "status": "off"}
    if key.kind == "nni":
        return "los_ind", {"intf_id": NNI_PORT_BASE + key.port_id, "status": "off"}
    if key.kind == "olt":
        return "los_ind", {"intf_id": key.port_id, "status": "off"}
    kind, _, status_field = ONU_ALARMS[key.type]
    fields: dict = {"intf_id": key.pon_id, "onu_id": onu_id}
    if kind == "onu_itu_pon_stats_ind":
        fields["rdi_error_ind"] = {"status": "off"}
    else:
        fields[status_field if isinstance(status_field, str) else "status"] = "off"
    return kind, fields


class AlarmBook:
    """The alarms an OLT reported: those raised and not cleared (`active`, with the time each was raised) and the
    last `limit` raises and clears since start (`history`, oldest first). Pure: time comes from `clock`;
    `changed` is called on every change (the OLT's `touch`), `cleared(key, reason)` on every clear the book makes
    itself (`clear`, `clear_all`: no indication says it, so the OLT tells its listeners)."""

    def __init__(self, clock, limit: int = HISTORY_LIMIT, changed=lambda: None, cleared=lambda key, reason: None):
        self.clock = clock
        self.changed = changed
        self.cleared = cleared
        self._active: dict[AlarmKey, float] = {}
        self._history: deque[AlarmRecord] = deque(maxlen=limit)

    def note(self, kind: str, fields: dict, serial: str = "") -> None:
        """Record one AlarmIndication the OLT emitted: a raise adds the alarm to the active ones (keeping the
        first raise's time when it is raised again), a clear removes it; both go to the history, as does a
        one-shot alarm (ONU_ACTIVATION_FAILURE, ONU_PROCESSING_ERROR), which is never active."""
        key, raised = alarm_key(kind, fields, serial)
        if key is None:
            return
        self._record(key, raised is not False)
        if raised is None:
            return
        if raised:
            self._active.setdefault(key, self._history[-1].at)
        else:
            self._active.pop(key, None)

    def clear(self, key: AlarmKey, reason: str = "") -> bool:
        """Clear one active alarm without an indication (the model's own bookkeeping; `reason` says why, e.g.
        onu-powered-on) and tell `cleared`; False if not active."""
        if key not in self._active:
            return False
        del self._active[key]
        self._record(key, False)
        self.cleared(key, reason)
        return True

    def clear_all(self, reason: str = "") -> int:
        """Clear every active alarm (the OLT rebooted: it forgets what it reported); returns how many."""
        keys = list(self._active)
        for key in keys:
            self.clear(key, reason)
        return len(keys)

    def _record(self, key: AlarmKey, raised: bool) -> None:
        self._history.append(AlarmRecord(key, raised, self.clock.seconds()))
        self.changed()

    def active(self, onu_serial: str = "") -> list[tuple[AlarmKey, float]]:
        """The active alarms, oldest raise first; `onu_serial` keeps that ONU's (either case)."""
        items = sorted(self._active.items(), key=lambda item: item[1])
        return [(k, t) for k, t in items if _matches(k, onu_serial)]

    def history(self, onu_serial: str = "") -> list[AlarmRecord]:
        """The last raises and clears, oldest first; `onu_serial` keeps that ONU's (either case)."""
        return [r for r in self._history if _matches(r.key, onu_serial)]

    def is_active(self, key: AlarmKey) -> bool:
        return key in self._active


def _matches(key: AlarmKey, onu_serial: str) -> bool:
    return not onu_serial or key.onu_serial.upper() == onu_serial.upper()
