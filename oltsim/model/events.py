"""Events the model emits. The southbound turns them into OpenOLT indications, the
event bus and the logs into records; the model itself never does I/O.

Field names follow the OpenOLT indications they become, so the translation stays
a table rather than logic.
"""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class OltIndication:
    """The OLT went up or down (OltInd)."""
    oper_state: str


@dataclass(frozen=True, slots=True)
class NniIndication:
    """An NNI changed operational state (IntfOperInd type nni; there is no IntfInd for NNIs)."""
    intf_id: int
    oper_state: str
    speed: int


@dataclass(frozen=True, slots=True)
class PonIndication:
    """A PON changed operational state (IntfInd followed by IntfOperInd type pon)."""
    intf_id: int
    oper_state: str


@dataclass(frozen=True, slots=True)
class OnuDiscovery:
    """An ONU announced itself on a PON (OnuDiscInd)."""
    intf_id: int
    serial: str


@dataclass(frozen=True, slots=True)
class OnuIndication:
    """An ONU went up or down (OnuInd)."""
    intf_id: int
    onu_id: int
    serial: str
    oper_state: str
    admin_state: str


@dataclass(frozen=True, slots=True)
class Alarm:
    """An alarm indication: `kind` is the AlarmIndication oneof name, `fields` its message fields."""
    kind: str
    fields: dict = field(default_factory=dict)
    serial: str = ""


@dataclass(frozen=True, slots=True)
class AlarmCleared:
    """The OLT cleared an alarm without an indication (BBSim sends none): an ONU's dying gasp when it is powered on
    again, every active alarm when the OLT reboots. `kind` and `fields` are those of the alarm indication that
    would clear it (status off), `reason` says why (onu-powered-on, olt-rebooted). Logged and seen by event
    readers as an alarm; the adapter is told nothing."""
    kind: str
    fields: dict = field(default_factory=dict)
    serial: str = ""
    reason: str = ""


@dataclass(frozen=True, slots=True)
class OmciAlarm:
    """An ONU raised or cleared an OMCI alarm on a UNI (AlarmNotification; bit 0 = LOS)."""
    intf_id: int
    onu_id: int
    serial: str
    me_class: int
    me_id: int
    raised: bool


@dataclass(frozen=True, slots=True)
class StateChanged:
    """A device changed state: `device` is olt, nni, pon, onu, uni or service; `service` names the service (its
    services-file name) when `device` is service, else it is empty."""
    device: str
    attribute: str
    src: str
    dest: str
    pon_id: int = -1
    onu_id: int = -1
    serial: str = ""
    uni_id: int = -1
    service: str = ""


@dataclass(frozen=True, slots=True)
class OpenoltServer:
    """The OLT's OpenOLT endpoint must stop (`running` False, on reboot) or start (True)."""
    running: bool


@dataclass(frozen=True, slots=True)
class FlowChanged:
    """A flow was stored (`added` True) or removed."""
    pon_id: int
    onu_id: int
    flow_id: int
    flow_type: str
    added: bool


@dataclass(frozen=True, slots=True)
class OmciIndication:
    """An OMCI frame from an ONU to the adapter (OmciInd, raw bytes)."""
    intf_id: int
    onu_id: int
    pkt: bytes


@dataclass(frozen=True, slots=True)
class PacketIndication:
    """A packet to the adapter (PktInd): from a UNI (`intf_type` pon) or the NNI (`nni`)."""
    intf_type: str
    intf_id: int
    pkt: bytes
    onu_id: int = 0
    uni_id: int = 0
    gemport_id: int = 0
    port_no: int = 0


@dataclass(frozen=True, slots=True)
class PortStats:
    """Periodic port statistics of an NNI or PON (`intf_id` is the port number)."""
    intf_id: int
    packets: int
    timestamp: int


@dataclass(frozen=True, slots=True)
class OpenoltRequest:
    """The adapter called an OpenOLT RPC that BBSim reports as an event: `rpc` is EnableIndication, DisableOlt,
    ReenableOlt or Reboot (emitted when received, accepted or not), or ActivateOnu (once accepted, with its ONU)."""
    rpc: str
    intf_id: int = -1
    onu_id: int = -1
    serial: str = ""


@dataclass(frozen=True, slots=True)
class MibUpload:
    """An ONU's OMCI MIB upload started (MIB Upload received, `done` False) or ended (the last MIB Upload Next
    answered, `done` True)."""
    intf_id: int
    onu_id: int
    serial: str
    done: bool


@dataclass(frozen=True, slots=True)
class ScenarioEvent:
    """A fault scenario (oltsim.scenario) started or ended, or one of its steps did. `kind` is the event's type:
    scenario-started, scenario-step-started, scenario-step-ended or scenario-ended; `targets` names what the step
    acts on (ONU serials, `pon 3`, `nni 0`, `olt`); an ended event has its `outcome` (done, stopped, failed) and the
    `refusals` counted (targets the model refused)."""
    kind: str
    scenario: str
    step: str = ""
    action: str = ""
    targets: tuple = ()
    outcome: str = ""
    refusals: int = 0
