"""What the per-service protocol machines share: moving a service's protocol state along its
table, sending a frame to the adapter as a PktInd, and one timer per service on the ONU clock."""
from __future__ import annotations

from oltsim.logs import logger

from oltsim.model import events
from oltsim.model.errors import FailedPrecondition

log = logger("oltsim.packets")

#: BBSim's FTTB management service compares and tags with its S-tag instead of its C-tag.
DPU_MGMT_SERVICE = "DPU_MGMT_TRAFFIC"


def advance(service, attribute: str, machine, event: str, label: str) -> str:
    """Fire `event` on the service's `attribute` (eapol_state, dhcp_state) through `machine`,
    publish the change, and return the new state. Raises IllegalTransition before any effect."""
    src = getattr(service, attribute)
    dest = machine.next(src, event)
    setattr(service, attribute, dest)
    uni = service.uni
    onu = uni.onu
    onu.hub.touch()
    onu.hub.emit(events.StateChanged("service", label, src, dest, onu.pon.id, onu.onu_id, onu.serial, uni.id,
                                     service.name))
    return dest


def send_up(service, pkt: bytes, gemport_id: int | None = None) -> None:
    """Emit `pkt` as a PktInd from the service's UNI (BBR uses port_no as the ONU id)."""
    uni = service.uni
    onu = uni.onu
    gem = service.gem_port if gemport_id is None else gemport_id
    onu.hub.emit(events.PacketIndication("pon", onu.pon.id, pkt, onu.onu_id, uni.id, gem, uni.port_no))


def completed(lines, kind: str, fmt: str, /, **fields) -> None:
    """Log a service's `kind` completion (eapol-completed, dhcp-completed) through `lines` (the engine's
    SummedLines: a bring-up of thousands of UNIs is summed up), or at info when there is none."""
    if lines is None:
        log.info(fmt, **fields)
    else:
        lines.info(kind, fmt, **fields)


def describe(service) -> dict:
    """Log fields naming a service."""
    uni = service.uni
    return {"serial": uni.onu.serial, "uni": uni.id, "service": service.name}


def check_running(service) -> None:
    """Raise FailedPrecondition unless the service's ONU is active and its UNI up (control API restarts)."""
    onu = service.uni.onu
    if not onu.is_active:
        raise FailedPrecondition(f"ONU {onu.serial} is {onu.state}; only an active ONU runs subscriber protocols")
    if service.state != "initialized":
        raise FailedPrecondition(f"service {service.name} on UNI {service.uni.id} of ONU {onu.serial} "
                                 f"is not running (its UNI is down)")


def uplink_tag(service) -> tuple[int, int]:
    """(VLAN id, priority) a service tags its upstream DHCP with, and compares DHCP flows against."""
    spec = service.spec
    if service.name == DPU_MGMT_SERVICE:
        return service.s_tag, spec.us_pon_s_tag_priority
    return service.c_tag, spec.us_pon_c_tag_priority


class ServiceTimers:
    """At most one pending timer per service, on its ONU's clock (so ONU power-off cancels it)."""

    __slots__ = ("_calls",)

    def __init__(self):
        self._calls: dict = {}

    def arm(self, service, delay: float, fn) -> None:
        """Replace the service's timer by one calling `fn(service)` after `delay` seconds."""
        self.cancel(service)
        onu = service.uni.onu
        self._calls[service] = onu.call_later(delay, self._fire, service, fn)

    def _fire(self, service, fn) -> None:
        self._calls.pop(service, None)
        fn(service)

    def cancel(self, service) -> None:
        call = self._calls.pop(service, None)
        if call is not None:
            service.uni.onu.cancel_call(call)

    def pending(self, service) -> bool:
        call = self._calls.get(service)
        return call is not None and call.active()

    def __len__(self) -> int:
        return sum(1 for c in self._calls.values() if c.active())
