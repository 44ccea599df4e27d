"""`oltsimctl dmi start|stop|managed`: DMI's own device management (dmi.NativeHWManagementService's
StartManagingDevice, StopManagingDevice and GetManagedDevices) on the DMI endpoint (--dmi-server), so that the
`dmi events` and `dmi transceiver` commands can be tried without a device manager or grpcurl. oltsimctl's only:
`bbsimctl` keeps Go bbsimctl's command tree (docs/dmi.md tells bbsimctl users to run these with oltsimctl).

A refusal (DEVICE_ALREADY_MANAGED, UNKNOWN_DEVICE, ...) is one stderr line with DMI's reason and detail, exit 1;
what the answer says otherwise goes to stdout (its JSON with `-o json`).
"""
from __future__ import annotations

from urllib.parse import urlsplit

import grpc
from dmi import commons_pb2, hw_management_service_pb2 as hm, hw_management_service_pb2_grpc as hm_grpc, hw_pb2
from google.protobuf import empty_pb2

from oltsim.ctl.connection import EXIT_OK, EXIT_REFUSED, CtlError
from oltsim.ctl.subcommands import print_json

#: The name `dmi start` gives the device unless told (DMI requires one; `dmi stop` finds it by itself).
DEFAULT_NAME = "olt"


def add_commands(tree) -> None:
    """The three commands, under the `dmi` group `tree` (oltsim.ctl.oltsimctl's _Tree)."""
    p = tree.command("start", start, "start managing the device (DMI StartManagingDevice), as a device manager "
                                     "does; the dmi events and transceiver commands need it")
    p.add_argument("name", metavar="NAME", nargs="?", default=DEFAULT_NAME,
                   help=f"the name to manage it by (default {DEFAULT_NAME})")
    p.add_argument("--uri", metavar="URI", default=None,
                   help="the device's address as the manager knows it (default: the host of --dmi-server)")
    p = tree.command("stop", stop, "stop managing the device (DMI StopManagingDevice)")
    p.add_argument("name", metavar="NAME", nargs="?", default="",
                   help="the name it is managed by (default: the one GetManagedDevices lists)")
    tree.command("managed", managed, "list the managed device, its name, URI and UUID (DMI GetManagedDevices)")


def _stub(conn) -> hm_grpc.NativeHWManagementServiceStub:
    conn.dmi  # opens the DMI channel (plain TCP, no token: the port is served so)
    return hm_grpc.NativeHWManagementServiceStub(conn.dmi_channel)


def _call(conn, method: str, request, stream: bool = False):
    """One call on the DMI endpoint with the configured deadline; a gRPC failure raises the connection's
    CtlError (unreachable: exit 4; refused: 1)."""
    try:
        answer = getattr(_stub(conn), method)(request, timeout=conn.settings.timeout)
        if stream:  # StartManagingDevice streams its answers: the first one says it
            for first in answer:
                return first
            raise CtlError(f"{method} answered nothing", EXIT_REFUSED)
        return answer
    except grpc.RpcError as exc:
        raise conn.error(exc, conn.dmi_channel, conn.settings.dmi_server) from None


def _refusal(answer) -> CtlError | None:
    """A CtlError naming DMI's reason and detail when `answer` is not OK_STATUS."""
    if answer.status == commons_pb2.OK_STATUS:
        return None
    reason = answer.DESCRIPTOR.fields_by_name["reason"].enum_type.values_by_number.get(answer.reason)
    name = reason.name if reason is not None else str(answer.reason)
    return CtlError(f"{name}: {answer.reason_detail or 'refused'}", EXIT_REFUSED)


def _default_uri(server: str) -> str:
    host = urlsplit(f"//{server}").hostname
    return host or server


def start(conn, args, out) -> int:
    """`dmi start [NAME] [--uri URI]`: StartManagingDevice; prints the device's UUID."""
    uri = args.uri if args.uri is not None else _default_uri(conn.settings.dmi_server)
    answer = _call(conn, "StartManagingDevice",
                   hw_pb2.ModifiableComponent(name=args.name, uri=hw_pb2.Uri(uri=uri)), stream=True)
    refused = _refusal(answer)
    if refused is not None:
        if answer.device_uuid.uuid:
            refused = CtlError(f"{refused} (device {answer.device_uuid.uuid}; `dmi stop` first to start again)",
                               refused.code)
        raise refused
    if args.output == "json":
        print_json(out, answer)
    else:
        out.write(f"managing the device as {args.name} (uri {uri}): uuid {answer.device_uuid.uuid}\n")
    return EXIT_OK


def stop(conn, args, out) -> int:
    """`dmi stop [NAME]`: StopManagingDevice, by the name given or the one the managed device has."""
    name = args.name
    if not name:
        devices = _call(conn, "GetManagedDevices", empty_pb2.Empty())
        if not devices.devices:
            out.write("no device is managed\n")
            return EXIT_OK
        name = devices.devices[0].info.name
    answer = _call(conn, "StopManagingDevice", hm.StopManagingDeviceRequest(name=name))
    refused = _refusal(answer)
    if refused is not None:
        raise refused
    if args.output == "json":
        print_json(out, answer)
    else:
        out.write(f"stopped managing {name}\n")
    return EXIT_OK


def managed(conn, args, out) -> int:
    """`dmi managed`: the managed device (a line: name, URI, UUID), or "no device is managed"."""
    answer = _call(conn, "GetManagedDevices", empty_pb2.Empty())
    refused = _refusal(answer)
    if refused is not None:
        raise refused
    if args.output == "json":
        print_json(out, answer)
    elif not answer.devices:
        out.write("no device is managed\n")
    else:
        for device in answer.devices:
            out.write(f"{device.info.name}\turi {device.info.uri.uri}\tuuid {device.device_uuid.uuid}\n")
    return EXIT_OK
