"""The simulated web power switch (docs/power-switch.md): Digital Loggers' and Expert Power Control's HTTP APIs on
one listener, its outlets feeding the ONUs and the OLT, switched through the control API's use cases."""
from __future__ import annotations

from oltsim.api.powerswitch.digest import DigestAuth
from oltsim.api.powerswitch.outlets import Outlet, PowerSwitch
from oltsim.api.powerswitch.rest import REALM, PowerSwitchRest

__all__ = ["DigestAuth", "Outlet", "PowerSwitch", "PowerSwitchRest", "REALM"]
