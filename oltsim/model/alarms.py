"""The ONU alarm catalogue of BBSim (17 names) and how each becomes an AlarmIndication."""
from __future__ import annotations

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
