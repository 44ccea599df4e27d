"""Model <-> protobuf, protobuf -> JSON, and the ONE error table.

REST and gRPC build the same protobuf messages here, so the two surfaces cannot
drift apart; REST renders them with `to_json_dict`.
"""
from __future__ import annotations

import grpc
from google.protobuf import json_format
from voltha_protos import openolt_pb2

from oltsim._proto import bbsim_pb2, oltsim_pb2
from oltsim.model.errors import (FailedPrecondition, InvalidArgument, NotFound, ResourceExhausted,
                                 Unavailable)
from oltsim.model.flows import Flow

# ---- errors ---------------------------------------------------------------------------------

#: domain error -> (gRPC status, HTTP status)
ERROR_TABLE: dict[type, tuple[grpc.StatusCode, int]] = {
    NotFound: (grpc.StatusCode.NOT_FOUND, 404),
    InvalidArgument: (grpc.StatusCode.INVALID_ARGUMENT, 400),
    FailedPrecondition: (grpc.StatusCode.FAILED_PRECONDITION, 409),
    ResourceExhausted: (grpc.StatusCode.RESOURCE_EXHAUSTED, 429),  # grpc-gateway's HTTP status for it
    Unavailable: (grpc.StatusCode.UNAVAILABLE, 503),
}
INTERNAL = (grpc.StatusCode.INTERNAL, 500)


def status_for(exc: BaseException) -> tuple[grpc.StatusCode, int]:
    """The (gRPC, HTTP) status of an exception; anything unexpected is INTERNAL/500."""
    for cls in type(exc).__mro__:
        if cls in ERROR_TABLE:
            return ERROR_TABLE[cls]
    return INTERNAL


def error_body(code: grpc.StatusCode, message: str) -> dict:
    """grpc-gateway's error shape, so existing clients parse it."""
    return {"error": message, "code": code.value[0], "message": message}


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


# ---- openolt messages -> model --------------------------------------------------------------

def check_enums(message, where: str = "") -> None:
    """Refuse (InvalidArgument) a message holding an enum number that its enum does not define.

    proto3 parses unknown enum numbers, but the JSON of the control APIs gives every enum by name (decisions 2,
    the OpenAPI documents), so a stored message holding one could not be shown as documented: refuse it before
    it is stored (validate first)."""
    for fd, value in message.ListFields():
        name = where + fd.name
        if fd.type == fd.TYPE_ENUM:
            _check_numbers(fd.enum_type, name, value if fd.is_repeated else [value])
        elif fd.type == fd.TYPE_MESSAGE:
            if fd.message_type.GetOptions().map_entry:
                value_fd = fd.message_type.fields_by_name["value"]
                for key, item in value.items():
                    if value_fd.type == fd.TYPE_MESSAGE:
                        check_enums(item, f"{name}[{key}].")
                    elif value_fd.type == fd.TYPE_ENUM:
                        _check_numbers(value_fd.enum_type, f"{name}[{key}]", [item])
            elif fd.is_repeated:
                for index, item in enumerate(value):
                    check_enums(item, f"{name}[{index}].")
            else:
                check_enums(value, name + ".")


def _check_numbers(enum, name: str, numbers) -> None:
    for number in numbers:
        if number not in enum.values_by_number:
            known = ", ".join(v.name for v in enum.values)
            raise InvalidArgument(f"{name} must be one of {known} (got {number})")


def serial_from_pb(sn: openolt_pb2.SerialNumber) -> str:
    """vendor id (4 ASCII bytes) + vendor specific as lower-case hex, `BBSM000a010b`, as BBSim's OnuSnToString and
    VOLTHA's openolt adapter write it."""
    try:
        vendor = bytes(sn.vendor_id).decode("ascii")
    except UnicodeDecodeError:
        raise InvalidArgument("serial_number.vendor_id must be 4 ASCII characters") from None
    return vendor + bytes(sn.vendor_specific).hex()


def serial_to_pb(serial: str) -> openolt_pb2.SerialNumber:
    return openolt_pb2.SerialNumber(vendor_id=serial[:4].encode("ascii"),
                                    vendor_specific=bytes.fromhex(serial[4:]))


def stored_flow(flow: Flow, out=None) -> openolt_pb2.Flow:
    """The adapter's flow message as it sent it (into `out`, an empty message, when given)."""
    msg = out if out is not None else openolt_pb2.Flow()
    msg.MergeFromString(flow.payload)
    return msg


def flow_from_pb(msg: openolt_pb2.Flow) -> Flow:
    """The model's flow for a FlowAdd. The message rides along encoded (`stored_flow` gives it back): a flow table
    at --max-flows (16384 VOLTHA-sized flows) then weighs 12 MiB instead of 29 with message objects."""
    c = msg.classifier
    return Flow(
        flow_id=msg.flow_id, flow_type=msg.flow_type, access_intf_id=msg.access_intf_id,
        onu_id=msg.onu_id, uni_id=msg.uni_id, port_no=msg.port_no, alloc_id=msg.alloc_id,
        gemport_id=msg.gemport_id, network_intf_id=msg.network_intf_id, eth_type=c.eth_type,
        o_vid=c.o_vid, i_vid=c.i_vid, o_pbits=c.o_pbits, src_port=c.src_port, dst_port=c.dst_port,
        replicate_flow=msg.replicate_flow, pbit_to_gemport=dict(msg.pbit_to_gemport),
        aes_gemports=tuple(msg.gemport_to_aes), payload=msg.SerializeToString(),
    )

