"""Model -> legacy (`legacy` package) messages: the records of service document 2.8.

Only the v0 API uses these, so they live beside it; errors, JSON rendering and the
bbsim (v1) messages stay in `oltsim.api.translate`.
"""
from __future__ import annotations

from oltsim._proto import legacy_pb2
from oltsim.api.translate import stored_flow
from oltsim.model.olt import NNI_PORT_BASE, PON_PORT_BASE

#: `alarm_state` of a port: LOS raised (`on`) or not (`off`, also when it was never raised).
LOS_RAISED = "on"
LOS_CLEARED = "off"


def port_of(intf_id: int) -> tuple[str, int] | None:
    """(port type, id) of an OpenOLT port number (`los_ind.intf_id`), or None if it is neither."""
    if intf_id >= PON_PORT_BASE:
        return "pon", intf_id - PON_PORT_BASE
    if intf_id >= NNI_PORT_BASE:
        return "nni", intf_id - NNI_PORT_BASE
    return None


def active_onus(pon) -> int:
    """ONUs of the PON that the adapter activated and that are serving (InternalState enabled or an
    image state); BBSim reports the number of PONs here."""
    return sum(1 for onu in pon.onus if onu.is_active)


def port_info_to_pb(kind: str, port, los: dict, out=None) -> legacy_pb2.PortInfo:
    """A PON (`kind` pon) or NNI port; `los` maps (kind, id) to the last LOS status sent."""
    msg = out if out is not None else legacy_pb2.PortInfo()
    msg.port_type = kind
    msg.port_id = port.id
    msg.port_state = port.oper_state
    msg.alarm_state = los.get((kind, port.id), LOS_CLEARED)
    if kind == "pon":
        msg.pon_port_max_onus = len(port.onus)
        msg.pon_port_active_onus = active_onus(port)
    return msg


def olt_status_to_pb(olt, ip: str, los: dict) -> legacy_pb2.OLTStatusResponse:
    """The legacy OLT status: the OLT record, then its NNIs and PONs (BBSim's order)."""
    msg = legacy_pb2.OLTStatusResponse()
    msg.olt.olt_id = olt.id
    msg.olt.olt_serial = olt.serial
    msg.olt.olt_ip = ip
    msg.olt.olt_state = olt.oper_state
    # BBSim's legacy handler reports its vendor in capitals ("BBSIM"; GetDeviceInfo says "BBSim").
    msg.olt.olt_vendor = olt.device_info.get("vendor", "").upper()
    for nni in olt.nnis:
        port_info_to_pb("nni", nni, los, msg.ports.add())
    for pon in olt.pons:
        port_info_to_pb("pon", pon, los, msg.ports.add())
    return msg


def onu_gemports(olt, onu) -> list[int]:
    """The GEM ports of the ONU's stored flows, ascending, each once."""
    return sorted({gem for flow in olt.flows.for_onu(onu) for gem in flow.gem_ports})


def onu_info_to_pb(olt, onu, out=None) -> legacy_pb2.ONUInfo:
    """The legacy ONU record: `onu_state` is the InternalState, `gemports` come from the ONU's
    flows, `tconts` from its last CreateTrafficSchedulers (always present, empty when none)."""
    msg = out if out is not None else legacy_pb2.ONUInfo()
    msg.onu_id = onu.onu_id
    msg.pon_port_id = onu.pon.id
    msg.onu_serial = onu.serial
    msg.oper_state = onu.oper_state
    msg.onu_state = onu.state
    msg.gemports.extend(onu_gemports(olt, onu))
    msg.tconts.SetInParent()
    scheds = onu.traffic_schedulers
    if scheds is not None:
        msg.tconts.uni_id = scheds.uni_id
        msg.tconts.port_no = scheds.port_no
        msg.tconts.tconts.extend(scheds.traffic_scheds)
    return msg


def flows_to_pb(flows) -> legacy_pb2.Flows:
    """The adapter's own flow messages, in store order."""
    msg = legacy_pb2.Flows()
    for flow in flows:
        if flow.payload is not None:
            stored_flow(flow, msg.flows.add())
    return msg
