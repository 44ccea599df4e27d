"""How each legacy `/v0` call maps to the current API (service document 4.1 and 4.2).

`MAPPING` is data: the REST routes of `oltsim.api.v0.rest_v0` are built from it, docs/api.md
quotes it (`markdown_table()`, checked by tests/unit/test_docs_links.py), and `successor_link` derives the `Link: <...>;
rel="successor-version"` header of a v0 response from it.

Each row is `(method, v0 path, legacy RPC, v1 method, v1 path, note)`. The v1 path uses the
v0 placeholder names, so a reader sees which v0 value goes where; it is empty where no single
v1 call does the same (the note says what to do instead).
"""
from __future__ import annotations

import re
from urllib.parse import quote

# The three legacy ONU alarm names and the v1 AlarmType each one raises.
LEGACY_ONU_ALARMS: dict[str, str] = {
    "signaldegrade": "ONU_SIGNAL_DEGRADE",
    "lossofomcichannel": "ONU_LOSS_OF_OMCI_CHANNEL",
    "lossofploam": "ONU_ALARM_LOAMI",
}

MAPPING: tuple[tuple[str, str, str, str, str, str], ...] = (
    ("GET", "/v0/olt", "OLTStatus", "GET", "/v1/olt",
     "OLT and ports; active ONUs of a PON: its ONUs whose InternalState is enabled or an image state"),
    ("GET", "/v0/olt/status", "OLTStatus", "GET", "/v1/olt/status", "as GET /v0/olt"),
    ("GET", "/v0/olt/flows", "GetFlows", "GET", "/v1/olt/flows",
     "v1 filters only by ?SerialNumber=; filter other F parameters on the client"),
    ("GET", "/v0/olt/onu/{onu_serial}/flows", "GetFlows", "GET", "/v1/olt/onus/{onu_serial}/flows", ""),
    ("GET", "/v0/olt/onus", "ONUStatus", "GET", "/v1/olt/onus", "filter on the client (PonPortID, ID, ...)"),
    ("DELETE", "/v0/olt/onus", "ONUDeactivate", "DELETE", "",
     "DELETE /v1/olt/onus/{SerialNumber} for each listed ONU (DELETE /v1/olt/onus shuts down all)"),
    ("POST", "/v0/olt/onus", "ONUActivate", "POST", "",
     "POST /v1/olt/onus/{SerialNumber} for each listed ONU (POST /v1/olt/onus powers on all)"),
    ("GET", "/v0/olt/onus/{onu.onu_serial}", "ONUStatus", "GET", "/v1/olt/onus/{onu.onu_serial}", ""),
    ("DELETE", "/v0/olt/onus/{onu.onu_serial}", "ONUDeactivate", "DELETE", "/v1/olt/onus/{onu.onu_serial}", ""),
    ("POST", "/v0/olt/onus/{onu_serial}/alarms/{alarm_type}/{status}", "GenerateONUAlarm", "POST",
     "/v1/olt/onus/{onu_serial}/alarms/{alarm_type}/{status}",
     "alarm_type signaldegrade = ONU_SIGNAL_DEGRADE, lossofomcichannel = ONU_LOSS_OF_OMCI_CHANNEL,"
     " lossofploam = ONU_ALARM_LOAMI"),
    ("GET", "/v0/olt/ports/{onu.pon_port_id}/onus", "ONUStatus", "GET", "/v1/olt/onus",
     "keep the items whose PonPortID matches"),
    ("DELETE", "/v0/olt/ports/{onu.pon_port_id}/onus", "ONUDeactivate", "DELETE",
     "/v1/olt/port/{onu.pon_port_id}/onus", ""),
    ("POST", "/v0/olt/ports/{onu.pon_port_id}/onus", "ONUActivate", "POST",
     "/v1/olt/port/{onu.pon_port_id}/onus", ""),
    ("GET", "/v0/olt/ports/{onu.pon_port_id}/onus/{onu.onu_id}", "ONUStatus", "GET", "/v1/olt/onus",
     "keep the item whose PonPortID and ID match"),
    ("DELETE", "/v0/olt/ports/{onu.pon_port_id}/onus/{onu.onu_id}", "ONUDeactivate", "DELETE", "",
     "find the ONU's SerialNumber in GET /v1/olt/onus, then DELETE /v1/olt/onus/{SerialNumber}"),
    ("POST", "/v0/olt/ports/{onu.pon_port_id}/onus/{onu.onu_serial}", "ONUActivate", "POST",
     "/v1/olt/onus/{onu.onu_serial}", ""),
    ("POST", "/v0/olt/ports/{port_type}/{port_id}/alarms/los/{status}", "GenerateOLTAlarm", "POST",
     "/v1/olt/ports/{port_type}/{port_id}/alarms/los/{status}", ""),
    ("GET", "/v0/olt/ports/{port_type}/{port_id}/status", "PortStatus", "GET", "/v1/olt",
     "the port is in NNIPorts[] or PONPorts[]"),
    ("PATCH", "/v0/olt/{device_type}/{serial_number}/action/{action}", "PerformDeviceAction", "POST", "",
     "olt: POST /v1/olt/reboot; onu: DELETE then POST /v1/olt/onus/{SerialNumber}"),
    ("PATCH", "/v0/{device_type}/action/{action}", "PerformDeviceAction", "POST", "",
     "olt: POST /v1/olt/reboot (ONU actions need the serial path above)"),
)

_PLACEHOLDER = re.compile(r"{([^}]+)}")


def successor_link(method: str, v0_path: str, path_args: dict[str, str]) -> str | None:
    """The v1 path that does what this v0 call does, with the call's own values filled in, or
    None when there is no single equivalent. `path_args` are the v0 placeholders' raw values."""
    for m, path, rpc, _, v1_path, _ in MAPPING:
        if m != method or path != v0_path:
            continue
        if rpc == "PerformDeviceAction":
            return "/v1/olt/reboot" if path_args.get("device_type", "").strip().lower() == "olt" else None
        if not v1_path:
            return None
        values = dict(path_args)
        if "alarm_type" in values:
            name = LEGACY_ONU_ALARMS.get(values["alarm_type"].strip().lower())
            if name is None:
                return None
            values["alarm_type"] = name
        try:
            return _PLACEHOLDER.sub(lambda match: quote(values[match.group(1)], safe=""), v1_path)
        except KeyError:
            return None
    return None


def markdown_table() -> str:
    """MAPPING as a Markdown table (docs/api.md quotes it)."""
    lines = ["| v0 call | legacy RPC | v1 equivalent | note |", "|---|---|---|---|"]
    for method, path, rpc, v1_method, v1_path, note in MAPPING:
        v1 = f"{v1_method} {v1_path}" if v1_path else "—"
        lines.append(f"| {method} {path} | {rpc} | {v1} | {note} |")
    return "\n".join(lines)
