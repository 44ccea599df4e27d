"""Model <-> protobuf and protobuf -> JSON.

REST and gRPC build the same protobuf messages here, so the two surfaces cannot
drift apart; REST renders them with `to_json_dict`. The error table lives below
every surface, in `oltsim.status`, and the OpenOLT messages' translation in
`oltsim.openoltpb`; both are re-exported here for the control APIs.
"""
from __future__ import annotations

from google.protobuf import json_format
from voltha_protos import openolt_pb2

from oltsim._proto import bbsim_pb2, oltsim_pb2
from oltsim.model.flows import Flow
from oltsim.openoltpb import check_enums, flow_from_pb, serial_from_pb, serial_to_pb, stored_flow  # noqa: F401
from oltsim.status import ERROR_TABLE, INTERNAL, error_body, status_for  # noqa: F401


# ---- JSON -----------------------------------------------------------------------------------

def to_json_dict(message) -> dict:
    """Proto field names, defaults included, 64-bit integers as strings, enums by name."""
    return json_format.MessageToDict(message, preserving_proto_field_name=True,
                                     always_print_fields_with_no_presence=True)


# Fields of the extended revision only (service document section 2), per message.
_EXT_OLT = ("NniDhcpTrapVid",)
_EXT_PON = ("InternalState", "PacketCount", "Technology", "AllocatedAllocIds", "AllocatedGemPorts",
            "AllocatedOnuIds")
_EXT_ONU = ("ActiveImageEntityId", "CommittedImageEntityId", "ImageSoftwareExpectedSections",
            "ImageSoftwareReceivedSections", "unis")
_EXT_SERVICE = ("ConfigureMacAddress", "DsCTagPriority", "DsSTagPriority", "EnableMacLearning",
                "NeedsPPPoE", "UniId", "UniTagMatch", "UsCTagPriority", "UsSTagPriority")
_EXT_FLOW = ("gemport_to_aes", "pbit_to_gemport", "replicate_flow", "symmetric_flow_id")

#: The base revision per message (full proto name): the fields it drops, and the 64-bit fields it renders as
#: JSON integers instead of strings. The shapers below apply it to rendered JSON, `oltsim.api.openapi` to the
#: schemas of the v1 OpenAPI document, so that the document describes exactly what is served.
BASE_DROPPED: dict[str, tuple[str, ...]] = {
    "bbsim.Olt": _EXT_OLT,
    "bbsim.PONPort": _EXT_PON,
    "bbsim.ONU": _EXT_ONU,
    "bbsim.Service": _EXT_SERVICE,
    "openolt.Flow": _EXT_FLOW,
}
BASE_INTEGERS: dict[str, tuple[str, ...]] = {"openolt.Flow": ("flow_id",)}


def _drop(d: dict, keys) -> dict:
    for key in keys:
        d.pop(key, None)
    return d


def base_olt(d: dict) -> dict:
    _drop(d, _EXT_OLT)
    for pon in d.get("PONPorts", ()):
        _drop(pon, _EXT_PON)
    return d


def base_service(d: dict) -> dict:
    return _drop(d, _EXT_SERVICE)


def base_onu(d: dict) -> dict:
    _drop(d, _EXT_ONU)
    for service in d.get("services", ()):
        base_service(service)
    return d


def base_flow(d: dict) -> dict:
    _drop(d, _EXT_FLOW)
    for key in BASE_INTEGERS["openolt.Flow"]:
        if key in d:
            d[key] = int(d[key])
    return d


# ---- model -> bbsim messages ----------------------------------------------------------------

def olt_to_pb(olt, ip: str) -> bbsim_pb2.Olt:
    msg = bbsim_pb2.Olt(ID=olt.id, SerialNumber=olt.serial, OperState=olt.oper_state,
                        InternalState=olt.state, IP=ip, NniDhcpTrapVid=olt.nni_dhcp_trap_vid)
    for nni in olt.nnis:
        msg.NNIPorts.add(ID=nni.id, OperState=nni.oper_state)
    for pon in olt.pons:
        p = msg.PONPorts.add(ID=pon.id, OperState=pon.oper_state, InternalState=pon.state,
                             PacketCount=pon.packet_count, Technology=pon.technology)
        for onu_id, serial in sorted(pon.onu_ids.items()):
            p.AllocatedOnuIds.add(SerialNumber=serial, Id=onu_id)
        for gem, serial in sorted(pon.gem_ports.items()):
            p.AllocatedGemPorts.add(SerialNumber=serial, Id=gem)
        for _, (alloc, serial) in sorted(pon.alloc_ids.items()):
            p.AllocatedAllocIds.add(SerialNumber=serial, Id=alloc)
    return msg


def alarms_to_pb(book, onu_serial: str = "") -> oltsim_pb2.Alarms:
    """The OLT's alarm book (`oltsim.model.alarms.AlarmBook`) as oltsim.v1.Alarms: active alarms oldest raise
    first, history newest last; `onu_serial` keeps one ONU's (either case). GetAlarms and GET /v1/olt/alarms."""
    msg = oltsim_pb2.Alarms()
    for key, since in book.active(onu_serial):
        msg.active.add(kind=key.kind, type=key.type, onu_serial=key.onu_serial, pon_id=key.pon_id,
                       port_id=key.port_id, since=since)
    for record in book.history(onu_serial):
        key = record.key
        msg.history.add(kind=key.kind, type=key.type, onu_serial=key.onu_serial, pon_id=key.pon_id,
                        port_id=key.port_id, status="on" if record.raised else "off", at=record.at)
    return msg


def service_to_pb(service, out=None) -> bbsim_pb2.Service:
    spec = service.spec
    msg = out if out is not None else bbsim_pb2.Service()
    msg.Name = service.name
    msg.HwAddress = service.mac
    msg.OnuSn = service.uni.onu.serial
    msg.STag = service.s_tag
    msg.CTag = service.c_tag
    msg.NeedsEapol = spec.needs_eapol
    msg.NeedsDhcp = spec.needs_dhcp
    msg.NeedsIgmp = spec.needs_igmp
    msg.GemPort = service.gem_port
    msg.EapolState = service.eapol_state
    msg.DhcpState = service.dhcp_state
    msg.InternalState = service.state
    msg.IGMPState = service.igmp_state
    msg.UniId = service.uni.id
    msg.UniTagMatch = spec.uni_tag_match
    msg.UsCTagPriority = spec.us_pon_c_tag_priority
    msg.UsSTagPriority = spec.us_pon_s_tag_priority
    msg.DsCTagPriority = spec.ds_pon_c_tag_priority
    msg.DsSTagPriority = spec.ds_pon_s_tag_priority
    msg.NeedsPPPoE = spec.needs_pppoe
    msg.ConfigureMacAddress = spec.configure_mac_address
    msg.EnableMacLearning = spec.enable_mac_learning
    return msg


def uni_to_pb(uni, out=None) -> bbsim_pb2.UNI:
    msg = out if out is not None else bbsim_pb2.UNI()
    msg.ID = uni.id
    msg.OnuID = uni.onu.onu_id
    msg.OnuSn = uni.onu.serial
    msg.MeID = uni.me_id
    msg.OperState = uni.state
    msg.PortNo = uni.port_no
    msg.Type = bbsim_pb2.POTS if uni.kind == "POTS" else bbsim_pb2.ETH
    for service in uni.services:
        service_to_pb(service, msg.services.add())
    return msg


def onu_to_pb(onu, revision: str = "extended", out=None) -> bbsim_pb2.ONU:
    """The ONU record: extended gives `unis[]` and the image fields; base gives HwAddress, PortNo and
    `services[]` (all services of all UNIs) in their place."""
    msg = out if out is not None else bbsim_pb2.ONU()
    msg.ID = onu.onu_id
    msg.SerialNumber = onu.serial
    msg.OperState = onu.oper_state
    msg.InternalState = onu.state
    msg.PonPortID = onu.pon.id
    # decisions section 2: the base revision gives HwAddress, PortNo and services[] in place of unis[]
    # (in the extended revision they stay empty, as BBSim's deprecated fields, and unis[] carries them).
    if revision == "base":
        services = onu.services
        msg.HwAddress = services[0].mac if services else ""
        eth = onu.eth_unis
        msg.PortNo = eth[0].port_no if eth else 0
        for service in services:
            service_to_pb(service, msg.services.add())
    else:
        msg.ImageSoftwareExpectedSections = onu.image_expected_sections
        msg.ImageSoftwareReceivedSections = onu.image_received_sections
        msg.ActiveImageEntityId = onu.active_image
        msg.CommittedImageEntityId = onu.committed_image
        for uni in onu.unis:
            uni_to_pb(uni, msg.unis.add())
    return msg


def flows_to_pb(flows) -> bbsim_pb2.Flows:
    msg = bbsim_pb2.Flows(flow_count=len(flows))
    for flow in flows:
        if flow.payload is not None:
            flow_to_pb(flow, msg.flows.add())
    return msg


def flow_to_pb(flow: Flow, out=None) -> openolt_pb2.Flow:
    """The adapter's flow message as the v1 API shows it (`flow.payload` must be set)."""
    msg = stored_flow(flow, out)
    # Every field of the flow table is always shown (decisions 2), also inside the sub-messages an adapter left
    # out, which JSON rendering would otherwise omit.
    msg.classifier.SetInParent()
    msg.action.cmd.SetInParent()
    return msg
