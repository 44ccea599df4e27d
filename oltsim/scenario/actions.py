"""What each scenario action does to one target, and how it is undone (docs/scenarios.md, the actions table).

Every action goes through the control API's use cases (`oltsim.api.v1.usecases_v1.V1Commands`) or the model command the
other surfaces call (transceivers: as DMI does; fault knobs: `olt.faults`), so a refusal and an effect are the same
as a user's request would get. An action raises the domain error of a refusal (NotFound, FailedPrecondition,
InvalidArgument) and returns the undo to run when the step's duration ends or the scenario stops (None: nothing to
undo). Undos raise refusals the same way; the runner counts them.
"""
from __future__ import annotations

import math
from typing import Callable

from oltsim._proto import bbsim_pb2
from oltsim.model.errors import FailedPrecondition
from oltsim.scenario.schema import ONE_SHOT_ALARMS

__all__ = ["ACTS", "Undo", "act"]

Undo = Callable[[], None]

_IGMP = {"join": bbsim_pb2.JOIN, "leave": bbsim_pb2.LEAVE, "joinv3": bbsim_pb2.JOINV3}


def _faults(olt):
    faults = getattr(olt, "faults", None)
    if faults is None:
        raise FailedPrecondition("this OLT has no fault knobs (OMCI delay, rate, mute, packet drop)")
    return faults


def onu_power_off(olt, commands, step, onu) -> Undo:
    commands.ShutdownONU(bbsim_pb2.ONURequest(SerialNumber=onu.serial))
    return lambda: commands.PoweronONU(bbsim_pb2.ONURequest(SerialNumber=onu.serial))


def onu_power_on(olt, commands, step, onu) -> None:
    commands.PoweronONU(bbsim_pb2.ONURequest(SerialNumber=onu.serial))


def _onu_alarm_request(onu, alarm: str, status: str):
    return bbsim_pb2.ONUAlarmRequest(AlarmType=alarm, SerialNumber=onu.serial, Status=status)


def onu_alarm(olt, commands, step, onu) -> Undo | None:
    alarm = step.params["alarm"]
    commands.SetOnuAlarmIndication(_onu_alarm_request(onu, alarm, "on"))
    if alarm in ONE_SHOT_ALARMS:
        return None  # an activation failure or processing error has no status: nothing stays raised
    return lambda: commands.SetOnuAlarmIndication(_onu_alarm_request(onu, alarm, "off"))


def onu_restart_eapol(olt, commands, step, onu) -> None:
    commands.RestartEapol(bbsim_pb2.UNIRequest(OnuSerialNumber=onu.serial))


def onu_restart_dhcp(olt, commands, step, onu) -> None:
    commands.RestartDhcp(bbsim_pb2.UNIRequest(OnuSerialNumber=onu.serial))


def onu_igmp(olt, commands, step, onu) -> None:
    commands.ChangeIgmpState(bbsim_pb2.IgmpRequest(OnuSerialNumber=onu.serial, UniID=0,
                                                   SubActionVal=_IGMP[step.params["igmp"]],
                                                   GroupAddress=step.params["group"]))


def pon_power_off(olt, commands, step, pon_id: int) -> Undo:
    """ShutdownONUsOnPON; the undo powers on the ONUs this step shut down, not those that were off already."""
    before = {onu.serial for onu in olt.pon(pon_id).onus if onu.state != "disabled"}
    commands.ShutdownONUsOnPON(bbsim_pb2.PONRequest(PonPortId=pon_id))
    cut = [onu.serial for onu in olt.pon(pon_id).onus if onu.serial in before and onu.state == "disabled"]

    def undo() -> None:
        refused = []
        for serial in cut:
            try:
                commands.PoweronONU(bbsim_pb2.ONURequest(SerialNumber=serial))
            except FailedPrecondition as exc:
                refused.append(exc.message)
        if refused:
            raise FailedPrecondition(f"{len(refused)} of {len(cut)} ONUs not powered on again: {refused[0]}")
    return undo


def _los(commands, kind: str, port: int, status: str) -> None:
    commands.SetOltAlarmIndication(bbsim_pb2.OLTAlarmRequest(InterfaceType=kind, InterfaceID=port, Status=status))


def pon_los(olt, commands, step, pon_id: int) -> Undo:
    _los(commands, "pon", pon_id, "on")
    return lambda: _los(commands, "pon", pon_id, "off")


def nni_los(olt, commands, step, nni_id: int) -> Undo:
    _los(commands, "nni", nni_id, "on")
    return lambda: _los(commands, "nni", nni_id, "off")


def transceiver_out(olt, commands, step, pon_id: int) -> Undo:
    olt.plug_out_transceiver(pon_id)
    return lambda: olt.plug_in_transceiver(pon_id)


def olt_reboot(olt, commands, step, _target) -> None:
    commands.RebootOlt(bbsim_pb2.Empty())


def openolt_restart(olt, commands, step, _target) -> None:
    """RestartgRPCServer: the OpenOLT server stops and comes back after the step's duration (whole seconds, as
    the RPC takes them; 0: at once). Nothing to undo: the server comes back by itself."""
    commands.RestartgRPCServer(bbsim_pb2.Timeout(delay=math.ceil(step.duration)))


def omci_delay(olt, commands, step, onu) -> Undo:
    faults = _faults(olt)
    faults.set_omci_delay(onu, step.params["delay"], jitter=step.params["jitter"])
    return lambda: faults.clear(onu, "omci-delay")


def omci_rate(olt, commands, step, onu) -> Undo:
    faults = _faults(olt)
    faults.set_omci_rate(onu, step.params["rate"])
    return lambda: faults.clear(onu, "omci-rate")


def omci_mute(olt, commands, step, onu) -> Undo:
    faults = _faults(olt)
    faults.set_omci_mute(onu, True)
    return lambda: faults.clear(onu, "omci-mute")


def packet_drop(olt, commands, step, onu) -> Undo:
    faults = _faults(olt)
    faults.set_packet_drop(onu, step.params["fraction"], protocols=step.params["protocols"])
    return lambda: faults.clear(onu, "packet-drop")


#: action name -> fn(olt, commands, step, target) -> undo or None; target is an Onu, a PON id, an NNI id or None.
ACTS: dict[str, Callable] = {
    "onu-power-off": onu_power_off,
    "onu-power-on": onu_power_on,
    "onu-alarm": onu_alarm,
    "onu-restart-eapol": onu_restart_eapol,
    "onu-restart-dhcp": onu_restart_dhcp,
    "onu-igmp": onu_igmp,
    "pon-power-off": pon_power_off,
    "pon-los": pon_los,
    "nni-los": nni_los,
    "transceiver-out": transceiver_out,
    "olt-reboot": olt_reboot,
    "openolt-restart": openolt_restart,
    "omci-delay": omci_delay,
    "omci-rate": omci_rate,
    "omci-mute": omci_mute,
    "packet-drop": packet_drop,
}


def act(olt, commands, step, target) -> Undo | None:
    """Apply `step`'s action to one target; returns its undo (None: nothing to undo). Raises the model's refusal."""
    return ACTS[step.action](olt, commands, step, target)
