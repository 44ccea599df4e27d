"""The outlets of the simulated web power switch and what switching one does to the OLT.

The rule (docs/power-switch.md): counted from 1, outlet k (1 <= k <= N, N the OLT's ONUs) feeds the k-th ONU in
PON, ONU order (PON 0's ONUs first, each PON's in creation order), and outlet N + 1 feeds the OLT. That is the
outlet number the system tests' configurations hold (``power_switch_port``) and Expert Power Control's ``p``;
Digital Loggers' REST API counts from 0, so its outlet ``=k-1`` is outlet k.

Switching goes through the control API's own use cases (oltsim.api.v1.usecases_v1.V1Commands), exactly as REST
does: an ONU's outlet off is ``ShutdownONU`` (DELETE /v1/olt/onus/<serial>: dying gasp, LOS, ONU indication down),
on is ``PoweronONU`` (POST: the ONU ranges again); the OLT's outlet off is ``RebootOlt`` (the OLT's ONUs go down at
once, the OpenOLT endpoint stops), on is ``PoweronOlt`` while the OLT is still down (it listens again at once with a
new heartbeat signature: the adapter sees an OLT reboot). A relay switches whatever the OLT's state: when the use
case refuses (an ONU not activated yet, an OLT no adapter has enabled), the outlet still changes, nothing else does,
and the log says why.
"""
from __future__ import annotations

from dataclasses import dataclass

from oltsim._proto import bbsim_pb2
from oltsim.logs import logger
from oltsim.model.errors import OltsimError

__all__ = ["Outlet", "PowerSwitch"]

log = logger("oltsim.powerswitch")


@dataclass
class Outlet:
    """One outlet: its ``number`` (from 1), what it feeds (``kind`` "onu" or "olt"; for an ONU its ``serial``,
    ``pon`` and ``onu`` index), whether its relay is ``on``, and the ``last`` answer of the use case it ran."""

    number: int
    kind: str
    serial: str
    pon: int | None = None
    onu: int | None = None
    on: bool = True
    last: str = ""

    def describe(self) -> dict:
        """The outlet as GET / on the power switch listener shows it."""
        return {"outlet": self.number, "dli": self.number - 1, "epc": self.number, "device": self.kind,
                "serial": self.serial, "pon": self.pon, "onu": self.onu, "state": self.on, "last": self.last}


class PowerSwitch:
    """The outlets of one OLT and its ONUs (all on at start), switched through ``commands`` (V1Commands)."""

    def __init__(self, commands):
        self.commands = commands
        olt = commands.olt
        self.outlets: list[Outlet] = [Outlet(number, "onu", onu.serial, onu.pon.id, onu.index)
                                      for number, onu in enumerate(olt.onus, start=1)]
        self.outlets.append(Outlet(len(self.outlets) + 1, "olt", olt.serial))

    def outlet(self, number: int) -> Outlet | None:
        """Outlet ``number`` (from 1), or None when the switch has no such outlet."""
        if isinstance(number, int) and 1 <= number <= len(self.outlets):
            return self.outlets[number - 1]
        return None

    def describe(self) -> dict:
        """The mapping as JSON: the rule, then every outlet."""
        return {"rule": "outlet k (from 1; Digital Loggers' =k-1) is the k-th ONU in PON, ONU order; outlet "
                        f"{len(self.outlets)} is the OLT",
                "outlets": [outlet.describe() for outlet in self.outlets]}

    def switch(self, outlet: Outlet, on: bool) -> str:
        """Set ``outlet``'s relay; when it changes, run the use case of its device. Returns what happened, in
        words (the use case's message, or why it did nothing); never raises for a refusal."""
        if outlet.on == on:
            return f"outlet {outlet.number} is already {'on' if on else 'off'}"
        outlet.on = on
        event = f"power-switch-outlet-{'on' if on else 'off'}"
        try:
            answer = self._apply(outlet, on)
        except OltsimError as refusal:
            outlet.last = f"nothing else changed: {refusal.message}"
            log.info(event + " outlet={outlet} device={device} serial={serial} applied=false reason={reason}",
                     outlet=outlet.number, device=outlet.kind, serial=outlet.serial, reason=refusal.message)
            return outlet.last
        outlet.last = answer
        log.info(event + " outlet={outlet} device={device} serial={serial} applied=true",
                 outlet=outlet.number, device=outlet.kind, serial=outlet.serial)
        return answer

    def _apply(self, outlet: Outlet, on: bool) -> str:
        commands = self.commands
        if outlet.kind == "onu":
            request = bbsim_pb2.ONURequest(SerialNumber=outlet.serial)
            return (commands.PoweronONU(request) if on else commands.ShutdownONU(request)).message
        if not on:
            return commands.RebootOlt(bbsim_pb2.Empty()).message
        if commands.olt.state in ("created", "deleted"):
            return commands.PoweronOlt(bbsim_pb2.Empty()).message
        return f"OLT {commands.olt.serial} is {commands.olt.state}: already back"
