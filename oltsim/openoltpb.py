"""OpenOLT protobuf messages <-> model values: serial numbers, flows, and the check that a message names only
defined enum values.

The OpenOLT southbound reads the adapter's messages with these, and the control APIs show the flows it stored
(`stored_flow`), so the module sits below both (`oltsim.api.translate` re-exports it with the rest of its
translation).
"""
from __future__ import annotations

from voltha_protos import openolt_pb2

from oltsim.model.errors import InvalidArgument
from oltsim.model.flows import Flow

__all__ = ["check_enums", "flow_from_pb", "serial_from_pb", "serial_to_pb", "stored_flow"]


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
    """The model's flow for a FlowAdd. The message rides along encoded (`stored_flow` gives it back): 16384
    VOLTHA-sized flows (the smallest default --max-flows) then weigh 12 MiB instead of 29 with message objects, and
    the 40960 of the default at 16x32 with 4 UNIs 2.5 times that."""
    c = msg.classifier
    return Flow(
        flow_id=msg.flow_id, flow_type=msg.flow_type, access_intf_id=msg.access_intf_id,
        onu_id=msg.onu_id, uni_id=msg.uni_id, port_no=msg.port_no, alloc_id=msg.alloc_id,
        gemport_id=msg.gemport_id, network_intf_id=msg.network_intf_id, eth_type=c.eth_type,
        o_vid=c.o_vid, i_vid=c.i_vid, o_pbits=c.o_pbits, src_port=c.src_port, dst_port=c.dst_port,
        replicate_flow=msg.replicate_flow, pbit_to_gemport=dict(msg.pbit_to_gemport),
        aes_gemports=tuple(msg.gemport_to_aes), payload=msg.SerializeToString(),
    )

