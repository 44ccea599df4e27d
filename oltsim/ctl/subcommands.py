"""bbsimctl's commands: each calls `bbsim.BBSim` and prints the answer as bbsimctl does (`--output table`, the
default) or as the JSON the v1 REST API gives for the same message (`--output json`).

Every handler takes (connection, parsed arguments, output stream) and returns the exit code; failures raise
`oltsim.ctl.connection.CtlError`. Where bbsimctl has a bug its output is not copied: the traffic scheduler table
has one row per scheduler, cookies print unsigned and `onu igmp` prints the server's answer and fails when the call
does. Its `olt nnis` table is copied as it is, short rows included (see `olt_nnis`), since scripts read it.

The `dmi` commands call BBSim's `bbsim.BBsim_dmi` on the DMI endpoint, as bbsimctl's do.
"""
from __future__ import annotations

import json

from google.protobuf.descriptor import FieldDescriptor

from oltsim import __version__
from oltsim._proto import bbsim_dmi_pb2, bbsim_pb2
from oltsim.api.translate import to_json_dict
from oltsim.ctl.connection import EXIT_OK, EXIT_REFUSED, EXIT_USAGE, CtlError
from oltsim.ctl.tables import box, columns, go_list, go_text, tabwriter
from oltsim.model.alarms import ONU_ALARMS

# bbsimctl's column lists (its format strings), by message.
OLT_COLUMNS = ("ID", "SerialNumber", "OperState", "InternalState", "IP", "NniDhcpTrapVid")
RESOURCE_COLUMNS = ("Type", "PonPortId", "OnuId", "PortNo", "ResourceId", "FlowId")
NNI_COLUMNS = ("ID", "OperState", "InternalState", "PacketCount")  # NNIPort has the first two only
PON_COLUMNS = ("ID", "Technology", "OperState", "InternalState", "PacketCount", "AllocatedOnuIds",
               "AllocatedGemPorts", "AllocatedAllocIds")
ONU_COLUMNS = ("PonPortID", "ID", "SerialNumber", "OperState", "InternalState", "ImageSoftwareExpectedSections",
               "ImageSoftwareReceivedSections", "ActiveImageEntityId", "CommittedImageEntityId")
UNI_COLUMNS = ("OnuSn", "OnuID", "ID", "MeID", "PortNo", "OperState", "Type")
SERVICE_COLUMNS = ("OnuSn", "UniId", "InternalState", "Name", "HwAddress", "STag", "UsSTagPriority",
                   "DsSTagPriority", "CTag", "UsCTagPriority", "DsCTagPriority", "UniTagMatch", "NeedsEapol",
                   "NeedsDhcp", "NeedsIgmp", "NeedsPPPoE", "ConfigureMacAddress", "EnableMacLearning", "GemPort",
                   "EapolState", "DhcpState", "IGMPState")
FLOW_HEADER = ("access_intf_id", "onu_id", "uni_id", "flow_id", "flow_type", "eth_type", "alloc_id",
               "network_intf_id", "gemport_id", "classifier", "action", "priority", "cookie", "port_no")
SCHEDULER_HEADER = ("Direction", "AllocId", "Scheduler.Direction", "Scheduler.AdditionalBw", "Scheduler.Priority",
                    "Scheduler.Weight", "Scheduler.SchedPolicy")
SHAPING_HEADER = ("InferredAdditionBwIndication", "Cbs", "Cir", "Gir", "Pbs", "Pir")
TRANSCEIVER_COLUMNS = ("ID", "UUID", "Name", "Technology", "PluggedIn", "PonIds")

OLT_ALARMS = {"OLT_PON_LOS": "pon", "OLT_NNI_LOS": "nni"}
IGMP_ACTIONS = {"join": bbsim_pb2.JOIN, "leave": bbsim_pb2.LEAVE, "joinv3": bbsim_pb2.JOINV3}
RESOURCE_TYPES = ("ALLOC_ID", "GEM_PORT")


# ---- output helpers -----------------------------------------------------------------------------------------

def print_json(out, value) -> None:
    """`value` (a message or plain data) as indented JSON with the REST API's field names."""
    data = to_json_dict(value) if hasattr(value, "DESCRIPTOR") else value
    out.write(json.dumps(data, indent=2, sort_keys=False) + "\n")


def field_text(message, name: str) -> str:
    """One field as bbsimctl's template prints it: enums by name, repeated messages as a Go slice."""
    field = message.DESCRIPTOR.fields_by_name[name]
    value = getattr(message, name)
    if field.is_repeated:
        if field.type == FieldDescriptor.TYPE_MESSAGE:
            return go_list(value)
        return "[" + " ".join(str(v) for v in value) + "]"
    if field.type == FieldDescriptor.TYPE_ENUM:
        number = field.enum_type.values_by_number.get(value)
        return number.name if number is not None else str(value)
    if field.type == FieldDescriptor.TYPE_BOOL:
        return "true" if value else "false"
    if field.type == FieldDescriptor.TYPE_MESSAGE:
        return go_text(value).strip()
    return str(value)


def message_table(names, messages) -> str:
    """A bbsimctl tabwriter table of `messages`, one column per field name, headers upper case."""
    return columns([name.upper() for name in names], [[field_text(m, name) for name in names] for m in messages])


def response(conn, args, out, method: str, request) -> int:
    """A call answered by `bbsim.Response`: `[Status: <code>] <message>` as bbsimctl prints it."""
    answer = conn.call(method, request)
    if args.output == "json":
        print_json(out, answer)
    else:
        out.write(f"[Status: {answer.status_code}] {answer.message}\n")
    return EXIT_OK


def _enum_name(message, name: str) -> str:
    return field_text(message, name)


# ---- olt ----------------------------------------------------------------------------------------------------

def olt_get(conn, args, out) -> int:
    """`olt get`: the OLT's table row."""
    olt = conn.call("GetOlt", bbsim_pb2.Empty())
    if args.output == "json":
        print_json(out, olt)
    else:
        out.write(message_table(OLT_COLUMNS, [olt]))
    return EXIT_OK


def olt_resources(conn, args, out) -> int:
    """`olt resources TYPE`: the alloc ids or GEM ports the adapter allocated."""
    kind = args.type.upper()
    if kind not in RESOURCE_TYPES:
        raise CtlError(f"resource type must be one of {', '.join(RESOURCE_TYPES)} (got {args.type!r})", EXIT_USAGE)
    answer = conn.call("GetOltAllocatedResources",
                       bbsim_pb2.OltAllocatedResourceType(type=bbsim_pb2.OltAllocatedResourceType.Type.Value(kind)))
    if args.output == "json":
        print_json(out, answer)
    else:
        out.write(message_table(RESOURCE_COLUMNS, answer.resources))
    return EXIT_OK


def _olt_ports(conn, args, out, title: str, field: str, names) -> int:
    olt = conn.call("GetOlt", bbsim_pb2.Empty())
    ports = getattr(olt, field)
    if args.output == "json":
        print_json(out, {field: [to_json_dict(port) for port in ports]})
    else:
        out.write(f"{title} Ports for : {olt.SerialNumber}\n\n")
        out.write(message_table(names, ports))
    return EXIT_OK


def olt_nnis(conn, args, out) -> int:
    """`olt nnis`: the NNI ports as bbsimctl prints them: four headers, ID, OPERSTATE, INTERNALSTATE and
    PACKETCOUNT, but rows of two cells, each ended by a tab (the API's NNIPort has ID and OperState only: Go's
    template writes those two and stops at the third), so a row ends in the padding of its OPERSTATE cell."""
    olt = conn.call("GetOlt", bbsim_pb2.Empty())
    if args.output == "json":
        print_json(out, {"NNIPorts": [to_json_dict(port) for port in olt.NNIPorts]})
        return EXIT_OK
    out.write(f"NNI Ports for : {olt.SerialNumber}\n\n")
    header = "\t".join(name.upper() for name in NNI_COLUMNS)
    rows = "".join(f"{field_text(port, 'ID')}\t{field_text(port, 'OperState')}\t\n" for port in olt.NNIPorts)
    out.write(tabwriter(f"{header}\n{rows}"))
    return EXIT_OK


def olt_pons(conn, args, out) -> int:
    """`olt pons`: the PON ports with their allocated ONU ids, GEM ports and alloc ids."""
    return _olt_ports(conn, args, out, "PON", "PONPorts", PON_COLUMNS)


def olt_shutdown(conn, args, out) -> int:
    """`olt shutdown`."""
    return response(conn, args, out, "ShutdownOlt", bbsim_pb2.Empty())


def olt_poweron(conn, args, out) -> int:
    """`olt poweron`."""
    return response(conn, args, out, "PoweronOlt", bbsim_pb2.Empty())


def olt_reboot(conn, args, out) -> int:
    """`olt reboot`."""
    return response(conn, args, out, "RebootOlt", bbsim_pb2.Empty())


def olt_poweron_all(conn, args, out) -> int:
    """`olt poweronAllONUs`."""
    return response(conn, args, out, "PoweronAllONUs", bbsim_pb2.Empty())


def olt_shutdown_all(conn, args, out) -> int:
    """`olt shutdownAllONUs`."""
    return response(conn, args, out, "ShutdownAllONUs", bbsim_pb2.Empty())


def olt_stop_server(conn, args, out) -> int:
    """`olt stopServer`: stop the OpenOLT gRPC server."""
    return response(conn, args, out, "StopgRPCServer", bbsim_pb2.Empty())


def olt_start_server(conn, args, out) -> int:
    """`olt startServer`: start the OpenOLT gRPC server."""
    return response(conn, args, out, "StartgRPCServer", bbsim_pb2.Empty())


def olt_restart_server(conn, args, out) -> int:
    """`olt restartServer DELAY`."""
    return response(conn, args, out, "RestartgRPCServer", bbsim_pb2.Timeout(delay=args.delay))


def _olt_alarm(conn, args, out, status: str) -> int:
    interface = OLT_ALARMS.get(args.name.upper())
    if interface is None:
        raise CtlError(f"unknown OLT alarm {args.name!r}; known: {', '.join(sorted(OLT_ALARMS))}", EXIT_USAGE)
    return response(conn, args, out, "SetOltAlarmIndication",
                    bbsim_pb2.OLTAlarmRequest(InterfaceID=args.intf_id, InterfaceType=interface, Status=status))


def olt_alarm_raise(conn, args, out) -> int:
    """`olt alarms raise NAME INTF_ID`."""
    return _olt_alarm(conn, args, out, "on")


def olt_alarm_clear(conn, args, out) -> int:
    """`olt alarms clear NAME INTF_ID`."""
    return _olt_alarm(conn, args, out, "off")


def _alarm_list(args, out, title: str, header: str, names) -> int:
    names = sorted(names)
    if args.output == "json":
        print_json(out, {"alarms": names})
    else:
        out.write(f"{title} Alarms List:\n")
        out.write(box([header], [[name] for name in names], row_lines=False))
    return EXIT_OK


def olt_alarm_list(conn, args, out) -> int:
    """`olt alarms list`: the OLT alarm names (no call)."""
    return _alarm_list(args, out, "OLT", "OLT Alarms", OLT_ALARMS)


def _flows(conn, args, out, serial: str) -> int:
    answer = conn.call("GetFlows", bbsim_pb2.ONURequest(SerialNumber=serial))
    if args.output == "json":
        print_json(out, answer)
        return EXIT_OK
    if not answer.flows:
        out.write(f"ONU {serial} has no flows\n" if serial else "OLT has no flows\n")
        return EXIT_OK
    rows = [[flow.access_intf_id, flow.onu_id, flow.uni_id, flow.flow_id, flow.flow_type,
             f"{flow.classifier.eth_type:x}", flow.alloc_id, flow.network_intf_id, flow.gemport_id,
             go_text(flow.classifier), go_text(flow.action), flow.priority, flow.cookie, flow.port_no]
            for flow in answer.flows]
    out.write("ONU Flows:\n" if serial else "OLT Flows:\n")
    out.write(box(list(FLOW_HEADER), rows))
    return EXIT_OK


def olt_flows(conn, args, out) -> int:
    """`olt flows`: every flow of the OLT."""
    return _flows(conn, args, out, "")


# ---- onu ----------------------------------------------------------------------------------------------------

def _onu_table(onus, verbose: bool) -> str:
    return message_table(ONU_COLUMNS + (("unis",) if verbose else ()), onus)


def onu_list(conn, args, out) -> int:
    """`onu list [-v]`."""
    onus = conn.call("GetONUs", bbsim_pb2.Empty())
    if args.output == "json":
        print_json(out, onus)
    else:
        out.write(_onu_table(onus.items, args.verbose))
    return EXIT_OK


def onu_get(conn, args, out) -> int:
    """`onu get ONU_SN [-v]`."""
    onu = conn.call("GetONU", bbsim_pb2.ONURequest(SerialNumber=args.onu_sn))
    if args.output == "json":
        print_json(out, onu)
    else:
        out.write(_onu_table([onu], args.verbose))
    return EXIT_OK


def onu_shutdown(conn, args, out) -> int:
    """`onu shutdown ONU_SN`."""
    return response(conn, args, out, "ShutdownONU", bbsim_pb2.ONURequest(SerialNumber=args.onu_sn))


def onu_poweron(conn, args, out) -> int:
    """`onu poweron ONU_SN`."""
    return response(conn, args, out, "PoweronONU", bbsim_pb2.ONURequest(SerialNumber=args.onu_sn))


def onu_auth_restart(conn, args, out) -> int:
    """`onu auth_restart ONU_SN` and `uni auth_restart ONU_SN UNI_ID`."""
    return response(conn, args, out, "RestartEapol",
                    bbsim_pb2.UNIRequest(OnuSerialNumber=args.onu_sn, UniID=getattr(args, "uni_id", "") or ""))


def onu_dhcp_restart(conn, args, out) -> int:
    """`onu dhcp_restart ONU_SN` and `uni dhcp_restart ONU_SN UNI_ID`."""
    return response(conn, args, out, "RestartDhcp",
                    bbsim_pb2.UNIRequest(OnuSerialNumber=args.onu_sn, UniID=getattr(args, "uni_id", "") or ""))


def onu_invalidate_mds(conn, args, out) -> int:
    """`onu invalidate_mds ONU_SN`."""
    return response(conn, args, out, "InvalidateMds", bbsim_pb2.ONURequest(SerialNumber=args.onu_sn))


def onu_igmp(conn, args, out) -> int:
    """`onu igmp ONU_SN UNI_ID join|leave|joinv3 GROUP [-v VLAN]`."""
    action = IGMP_ACTIONS.get(args.sub_action.lower())
    if action is None:
        raise CtlError(f"IGMP action must be one of {', '.join(IGMP_ACTIONS)} (got {args.sub_action!r})",
                       EXIT_USAGE)
    return response(conn, args, out, "ChangeIgmpState",
                    bbsim_pb2.IgmpRequest(OnuSerialNumber=args.onu_sn, UniID=args.uni_id, SubActionVal=action,
                                          GroupAddress=args.group_address, VLAN=args.vlan))


def onu_traffic_schedulers(conn, args, out) -> int:
    """`onu traffic_schedulers ONU_SN`: the ids, then a scheduler and a shaping box."""
    answer = conn.call("GetOnuTrafficSchedulers", bbsim_pb2.ONURequest(SerialNumber=args.onu_sn))
    if args.output == "json":
        print_json(out, answer)
        return EXIT_OK
    if not answer.HasField("traffSchedulers"):
        raise CtlError(f"ONU {args.onu_sn} has no traffic schedulers", EXIT_REFUSED)
    schedulers = answer.traffSchedulers
    schedule_rows, shaping_rows = [], []
    for sched in schedulers.traffic_scheds:
        schedule_rows.append([_enum_name(sched, "direction"), sched.alloc_id,
                              _enum_name(sched.scheduler, "direction"),
                              _enum_name(sched.scheduler, "additional_bw"), sched.scheduler.priority,
                              sched.scheduler.weight, _enum_name(sched.scheduler, "sched_policy")])
        shaping = sched.traffic_shaping_info
        shaping_rows.append([_enum_name(shaping, "add_bw_ind"), shaping.cbs, shaping.cir, shaping.gir, shaping.pbs,
                             shaping.pir])
    # bbsimctl ends these four lines with a space
    out.write(f"OnuId: {schedulers.onu_id} \nIntfId: {schedulers.intf_id} \nUniId: {schedulers.uni_id} \n"
              f"OnuPortNo: {schedulers.port_no} \n")
    out.write("Traffic Schedulers Info:\n")
    out.write(box(list(SCHEDULER_HEADER), schedule_rows))
    out.write("Traffic Shaping Info:\n")
    out.write(box(list(SHAPING_HEADER), shaping_rows))
    return EXIT_OK


def _parameters(items) -> list:
    parameters = []
    for item in items or ():
        key, sep, value = item.partition("=")
        if not sep or not key or "=" in value:
            raise CtlError(f"invalid alarm parameter {item!r}: use name=value", EXIT_USAGE)
        parameters.append(bbsim_pb2.AlarmParameter(Key=key, Value=value))
    return parameters


def _onu_alarm(conn, args, out, status: str) -> int:
    return response(conn, args, out, "SetOnuAlarmIndication",
                    bbsim_pb2.ONUAlarmRequest(AlarmType=args.name, SerialNumber=args.onu_sn, Status=status,
                                              Parameters=_parameters(args.parameters)))


def onu_alarm_raise(conn, args, out) -> int:
    """`onu alarms raise NAME ONU_SN [-p K=V ...]`."""
    return _onu_alarm(conn, args, out, "on")


def onu_alarm_clear(conn, args, out) -> int:
    """`onu alarms clear NAME ONU_SN [-p K=V ...]`."""
    return _onu_alarm(conn, args, out, "off")


def onu_alarm_list(conn, args, out) -> int:
    """`onu alarms list`: the ONU alarm names oltsim knows (no call)."""
    return _alarm_list(args, out, "ONU", "ONU Alarms", ONU_ALARMS)


def onu_flows(conn, args, out) -> int:
    """`onu flows ONU_SN`."""
    return _flows(conn, args, out, args.onu_sn)


def _services(conn, args, out, serial: str, uni: str) -> int:
    services = conn.call("GetServices", bbsim_pb2.UNIRequest(OnuSerialNumber=serial, UniID=uni))
    if args.output == "json":
        print_json(out, services)
    else:
        out.write(message_table(SERVICE_COLUMNS, services.items))
    return EXIT_OK


def onu_services(conn, args, out) -> int:
    """`onu services [ONU_SN]`."""
    return _services(conn, args, out, args.onu_sn or "", "")


# ---- pon, service, uni --------------------------------------------------------------------------------------

def pon_poweron_all(conn, args, out) -> int:
    """`pon poweronAllONUs INTF_ID`."""
    return response(conn, args, out, "PoweronONUsOnPON", bbsim_pb2.PONRequest(PonPortId=args.intf_id))


def pon_shutdown_all(conn, args, out) -> int:
    """`pon shutdownAllONUs INTF_ID`."""
    return response(conn, args, out, "ShutdownONUsOnPON", bbsim_pb2.PONRequest(PonPortId=args.intf_id))


def service_list(conn, args, out) -> int:
    """`service list`: every service."""
    return _services(conn, args, out, "", "")


def _uni_table(unis, verbose: bool) -> str:
    return message_table(UNI_COLUMNS + (("services",) if verbose else ()), unis)


def uni_list(conn, args, out) -> int:
    """`uni list [-v]`: every UNI."""
    unis = conn.call("GetUnis", bbsim_pb2.Empty())
    if args.output == "json":
        print_json(out, unis)
    else:
        out.write(_uni_table(unis.items, args.verbose))
    return EXIT_OK


def uni_get(conn, args, out) -> int:
    """`uni get ONU_SN [-v]`: the UNIs of an ONU."""
    unis = conn.call("GetOnuUnis", bbsim_pb2.ONURequest(SerialNumber=args.onu_sn))
    if args.output == "json":
        print_json(out, unis)
    else:
        out.write(_uni_table(unis.items, args.verbose))
    return EXIT_OK


def uni_services(conn, args, out) -> int:
    """`uni services [ONU_SN [UNI_ID]]`."""
    return _services(conn, args, out, args.onu_sn or "", args.uni_id or "")


# ---- dmi (bbsim.BBsim_dmi on the DMI endpoint) ---------------------------------------------------------------

def _dmi_response(conn, args, out, method: str, request) -> int:
    """A `bbsim.BBsim_dmi` call answered by `DmiResponse`: `[Status: <code>] <message>`. As `bbsimctl`, exit 0
    whatever the code, as Go bbsimctl does (the answer carries the refusal); oltsimctl says a refusal (code not 0)
    on one stderr line with the gRPC code's name and exits 1."""
    answer = conn.call(method, request, service="dmi")
    if answer.status_code and getattr(args, "prog", "") != "bbsimctl":
        raise CtlError(dmi_refusal(answer.status_code, answer.message), EXIT_REFUSED)
    if args.output == "json":
        print_json(out, answer)
    else:
        out.write(f"[Status: {answer.status_code}] {answer.message}\n")
    return EXIT_OK


def dmi_refusal(code: int, message: str) -> str:
    """oltsimctl's line for a `DmiResponse` that refused: `UNAVAILABLE: <message>`, with how to start managing
    the device when that is what is missing."""
    import grpc  # the stubs have imported it already; here only for the names of the codes
    name = next((status.name for status in grpc.StatusCode if status.value[0] == code), f"status {code}")
    hint = " (oltsimctl dmi start starts it)" if "StartManagingDevice" in message else ""
    return f"{name}: {message}{hint}"


def dmi_event_create(conn, args, out) -> int:
    """`dmi events create EVENT_NAME`: raise a DMI event (a dmi.EventIds name, e.g. EVENT_FAN_FAILURE)."""
    return _dmi_response(conn, args, out, "CreateEvent", bbsim_dmi_pb2.DmiEvent(event_name=args.event_name))


def dmi_transceiver_list(conn, args, out) -> int:
    """`dmi transceiver list`: the PON transceivers, plugged in or not."""
    answer = conn.call("GetTransceivers", bbsim_dmi_pb2.DmiEmpty(), service="dmi")
    if args.output == "json":
        print_json(out, answer)
    else:
        out.write(message_table(TRANSCEIVER_COLUMNS, answer.Items))
    return EXIT_OK


def dmi_transceiver_plug_in(conn, args, out) -> int:
    """`dmi transceiver plug_in TRANSCEIVER_ID`."""
    return _dmi_response(conn, args, out, "PlugInTransceiver",
                         bbsim_dmi_pb2.TransceiverRequest(TransceiverId=args.transceiver_id))


def dmi_transceiver_plug_out(conn, args, out) -> int:
    """`dmi transceiver plug_out TRANSCEIVER_ID`."""
    return _dmi_response(conn, args, out, "PlugOutTransceiver",
                         bbsim_dmi_pb2.TransceiverRequest(TransceiverId=args.transceiver_id))


# ---- log, config --------------------------------------------------------------------------------------------

def parse_bool(text: str) -> bool:
    """A boolean argument as Go's strconv.ParseBool reads it (true/false, 1/0, t/f), plus yes/no."""
    value = text.strip().lower()
    if value in ("1", "t", "true", "yes", "y", "on"):
        return True
    if value in ("0", "f", "false", "no", "n", "off"):
        return False
    raise ValueError(f"not a boolean: {text!r}")


def log_level(conn, args, out) -> int:
    """`log LEVEL CALLER`: set the daemon's log level."""
    answer = conn.call("SetLogLevel", bbsim_pb2.LogLevel(level=args.level, caller=args.caller))
    if args.output == "json":
        print_json(out, answer)
    else:
        caller = "true" if answer.caller else "false"
        out.write(f"New log settings:\n\tLevel: {answer.level}\n\tReportCaller: {caller}\n")
    return EXIT_OK


def show_config(settings, args, out) -> int:
    """The effective settings (never the token itself) and oltsimctl's version, as `bbsimctl config` does. As
    bbsimctl (`args.prog`), bbsimctl's layout: its two settings as YAML, the server's host resolved to an address,
    then `BBSimCtl details:` (oltsim's version; no build time, commit or git status)."""
    data = settings.describe()
    if args.output == "json":
        print_json(out, {**data, "version": __version__})
        return EXIT_OK
    import yaml
    if getattr(args, "prog", None) == "bbsimctl":
        out.write("\n" + yaml.safe_dump({"server": resolved_server(settings.server),
                                         "grpc": {"timeout": go_duration(settings.timeout)}}, sort_keys=False))
        out.write(f"\nBBSimCtl details:\n\tVersion: oltsim {__version__} \n\tBuildTime:  \n\tCommitHash:  \n"
                  f"\tGitStatus:  \n")
        return EXIT_OK
    out.write(yaml.safe_dump(data, sort_keys=False, default_flow_style=False))
    out.write(f"\nOltsimCtl details:\n\tVersion: {__version__}\n")
    return EXIT_OK


def resolved_server(server: str) -> str:
    """`host:port` with the host's first address, as bbsimctl's config shows it; unchanged if it does not
    resolve."""
    import socket
    host, sep, port = server.rpartition(":")
    if not sep:
        return server
    try:
        address = socket.getaddrinfo(host.strip("[]"), None, type=socket.SOCK_STREAM)[0][4][0]
    except (OSError, UnicodeError):
        return server
    return f"[{address}]:{port}" if ":" in address else f"{address}:{port}"


def go_duration(seconds: float) -> str:
    """Seconds as Go's time.Duration prints them: `10s`, `1m30s`, `1.5s`, `500ms`, `1h0m0s`."""
    nanoseconds = round(seconds * 1e9)
    if nanoseconds < 1_000_000_000:
        for unit, size in (("ms", 1_000_000), ("µs", 1_000), ("ns", 1)):
            if nanoseconds >= size or unit == "ns":
                return f"{nanoseconds / size:.9f}".rstrip("0").rstrip(".") + unit
    hours, rest = divmod(nanoseconds, 3600 * 10**9)
    minutes, rest = divmod(rest, 60 * 10**9)
    text = f"{rest / 1e9:.9f}".rstrip("0").rstrip(".") + "s"
    if hours:
        return f"{hours}h{minutes}m{text}"
    return f"{minutes}m{text}" if minutes else text


# ---- alarms (oltsim.v1.Oltsim/GetAlarms) --------------------------------------------------------------------

def _when(seconds: float) -> str:
    """Unix seconds as UTC ISO 8601 to the millisecond."""
    import datetime
    moment = datetime.datetime.fromtimestamp(seconds, datetime.timezone.utc)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def _id(value: int) -> str:
    return "" if value < 0 else str(value)


def alarms(conn, args, out) -> int:
    """`alarms [--onu SN] [--history]`: the active alarms (oldest first), or the raises and clears since start
    (newest last), as a table or `-o json` (GET /v1/olt/alarms' shape)."""
    from oltsim._proto import oltsim_pb2
    answer = conn.call("GetAlarms", oltsim_pb2.AlarmFilter(onu_serial=args.onu or ""), service="oltsim")
    if args.output == "json":
        print_json(out, answer)
    elif args.history:
        out.write(columns(["AT", "STATUS", "KIND", "TYPE", "ONU_SN", "PON", "PORT"],
                          [[_when(h.at), h.status, h.kind, h.type, h.onu_serial, _id(h.pon_id), _id(h.port_id)]
                           for h in answer.history], rstrip=True))
    else:
        out.write(columns(["SINCE", "KIND", "TYPE", "ONU_SN", "PON", "PORT"],
                          [[_when(a.since), a.kind, a.type, a.onu_serial, _id(a.pon_id), _id(a.port_id)]
                           for a in answer.active], rstrip=True))
    return EXIT_OK


# ---- the data plane (oltsim.v1.Oltsim/GetDataPlane; docs/dataplane.md) ---------------------------------------

def _drops(dropped: dict) -> str:
    return ",".join(f"{reason}={count}" for reason, count in sorted(dropped.items())) or "-"


def _vni(interface: dict) -> str:
    vni = interface.get("vni")
    return "-" if vni is None else str(vni)


def _remote(interface: dict) -> str:
    """A VXLAN attachment's remote address, `(learned)` after a learned one; `-` for none (yet) or a TAP."""
    remote = interface.get("remote")
    if not remote:
        return "-"
    return f"{remote}(learned)" if interface.get("remote_learned") else str(remote)


def dataplane(conn, args, out) -> int:
    """`dataplane`: the data plane's counters, one row per bound UNI (SERIAL/UNI) and for the NNI and the untagged NNI:
    frames and bytes into the simulator (RX) and out of it (TX), and the drops by reason; then one row per
    interface with its kind (tap or vxlan), what it read and wrote and its own drops, and for a VXLAN attachment its
    VNI and remote (a learned one marked `(learned)`, none yet `-`); then a table for each list of entries the
    document holds (`entry_tables`: the shaper's schedulers and what is nested in them); or `-o json` (GET
    /v1/dataplane's document)."""
    from oltsim._proto import oltsim_pb2
    counters = json.loads(conn.call("GetDataPlane", oltsim_pb2.Empty(), service="oltsim").json)
    if args.output == "json":
        print_json(out, counters)
        return EXIT_OK
    rows = [[where, str(c.get("rx_frames", 0)), str(c.get("rx_bytes", 0)), str(c.get("tx_frames", 0)),
             str(c.get("tx_bytes", 0)), _drops(c.get("dropped", {}))]
            for where, c in [*sorted(counters.get("unis", {}).items()),
                             *[(name, counters[name]) for name in ("nni", "nni_untagged") if counters.get(name)]]]
    out.write(columns(["WHERE", "RX_FRAMES", "RX_BYTES", "TX_FRAMES", "TX_BYTES", "DROPPED"], rows, rstrip=True))
    interfaces = [[name, c.get("kind", "tap"), _vni(c), _remote(c), str(c["rx_frames"]), str(c["tx_frames"]),
                   str(c.get("queued", 0)), _drops(c["dropped"])]
                  for name, c in sorted(counters.get("interfaces", {}).items())]
    if interfaces:
        out.write("\n" + columns(["INTERFACE", "KIND", "VNI", "REMOTE", "READ", "WRITTEN", "QUEUED", "DROPPED"],
                                 interfaces, rstrip=True))
    out.write(entry_tables(counters))
    return EXIT_OK


#: GET /v1/dataplane's keys the tables of `dataplane` show by name (the flows are too many to list); every other list
#: of entries it holds (the shaper's schedulers, their GEM queues, a PON's load, ...) gets a table of its own
_NAMED_KEYS = frozenset(("unis", "nni", "nni_untagged", "interfaces", "flows"))
#: An entry's keys that say which one it is: its first columns, in this order, repeated on the rows of the entries
#: nested in it (a scheduler's GEM queues)
_IDENTITY_KEYS = ("direction", "serial", "pon", "onu_id", "uni_id", "alloc_id")


def _entry_cell(value) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, dict):
        return _drops(value)
    if isinstance(value, list):
        return str(len(value))
    return str(value)


def _is_entries(value) -> bool:
    return isinstance(value, list) and all(isinstance(v, dict) for v in value)


def _entry_rows(entries: list[dict]) -> tuple[list[str], list[list[str]], list[str], dict]:
    """The headers and rows of a list of entries, whatever their keys: a scalar is a column, a dict of counts by
    reason (`dropped`) one column of `reason=count`, another dict one column per key (`limit` -> LIMIT_PIR, ...), a
    list of entries a table of its own (returned by key). The identity keys come first, the others in the order
    the entries first give them; an entry without one shows `-`. Returns (headers, rows, identity keys, nested)."""
    order: list[str] = []
    subkeys: dict[str, list[str]] = {}
    nested: dict[str, list[dict]] = {}
    for entry in entries:
        for key, value in entry.items():
            if _is_entries(value) and value:
                nested.setdefault(key, [])
                continue
            if key in nested:
                continue
            if key not in order:
                order.append(key)
            if isinstance(value, dict) and key != "dropped" and not any(isinstance(v, dict) for v in value.values()):
                known = subkeys.setdefault(key, [])
                known.extend(sub for sub in value if sub not in known)
    order = [k for k in _IDENTITY_KEYS if k in order] + [k for k in order if k not in _IDENTITY_KEYS]
    names = [name for key in order
             for name in ([f"{key}.{sub}" for sub in subkeys[key]] if subkeys.get(key) else [key])]
    identity = [k for k in order if k in _IDENTITY_KEYS]
    rows = []
    for entry in entries:
        row = []
        for name in names:
            key, _, sub = name.partition(".")
            value = entry.get(key)
            if sub:
                value = value.get(sub) if isinstance(value, dict) else None
            row.append(_entry_cell(value))
        rows.append(row)
        prefix = [_entry_cell(entry.get(k)) for k in identity]
        for key in nested:
            nested[key].extend((prefix, child) for child in entry.get(key) or ())
    return [name.replace(".", "_").upper() for name in names], rows, identity, nested


def entry_tables(counters: dict) -> str:
    """The tables of GET /v1/dataplane's lists of entries that `dataplane` does not show by name (today the
    shaper's, under `shapers`; keys added later too, without a change here): for each, a line with its name then
    its table, then one for the entries nested in its entries (`shapers.gems`), each row led by its parent's
    identity (direction, serial, PON, ONU, UNI, alloc id)."""
    text = ""
    pending = [(key, [([], entry) for entry in value], [])
               for key, value in counters.items() if key not in _NAMED_KEYS and _is_entries(value) and value]
    while pending:
        name, entries, inherited = pending.pop(0)
        headers, rows, identity, nested = _entry_rows([entry for _, entry in entries])
        text += f"\n{name}\n" + columns([h.upper() for h in inherited] + headers,
                                         [prefix + row for (prefix, _), row in zip(entries, rows)], rstrip=True)
        for key, children in nested.items():
            if children:
                pending.append((f"{name}.{key}", children, identity))
    return text


# ---- scenarios (oltsim.v1.Oltsim/RunScenario, GetScenario, StopScenario; docs/scenarios.md) ------------------

#: The states a scenario ends in, and the exit code each gives `scenario run` (done 0, the others 1).
SCENARIO_ENDS = {"done": EXIT_OK, "stopped": EXIT_REFUSED, "failed": EXIT_REFUSED}
#: `scenario run`'s exit code when Ctrl-C ends the watching (the scenario goes on).
EXIT_INTERRUPTED = 130


def _duration(seconds: float) -> str:
    return f"{seconds:.1f}s"


def scenario_table(status) -> str:
    """A ScenarioStatus as two tabwriter tables: the scenario, then its current steps (if any), and the error of a
    failed one."""
    started = _when(status.started_at) if status.started_at else ""
    text = columns(["NAME", "STATE", "SOURCE", "SEED", "STARTED", "ELAPSED", "STEPS", "REFUSALS"],
                   [[status.name, status.state, status.source, status.seed if status.name else "", started,
                     _duration(status.elapsed) if status.started_at else "",
                     f"{status.steps_ended}/{status.steps_total}" if status.name else "", str(status.refusals)]],
                   rstrip=True)
    if status.current:
        text += "\n" + columns(["STEP", "ACTION", "TARGETS", "STARTED", "ENDS"],
                               [[step.step, step.action, ",".join(step.targets) or "-", _when(step.started_at),
                                 _when(step.ends_at) if step.ends_at else "-"] for step in status.current],
                               rstrip=True)
    if status.error:
        text += f"\nerror: {status.error}\n"
    return text


def _show_scenario(args, out, status) -> None:
    if args.output == "json":
        print_json(out, status)
    else:
        out.write(scenario_table(status))


def read_scenario_file(path: str) -> str:
    """The text of a scenario file given on the command line; a usage error (exit 2) if it cannot be read."""
    try:
        with open(path, "rb") as handle:
            raw = handle.read()
    except OSError as exc:
        raise CtlError(f"cannot read {path}: {exc.strerror or exc}", EXIT_USAGE) from None
    if not raw.strip():
        raise CtlError(f"{path} is empty", EXIT_USAGE)
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise CtlError(f"{path} is not UTF-8 text", EXIT_USAGE) from None


def scenario_status(conn, args, out) -> int:
    """`scenario status`: the running (or last) scenario and its current steps."""
    from oltsim._proto import oltsim_pb2
    _show_scenario(args, out, conn.call("GetScenario", oltsim_pb2.Empty(), service="oltsim"))
    return EXIT_OK


def scenario_stop(conn, args, out) -> int:
    """`scenario stop`: stop the running scenario (its steps undone); nothing running is no error."""
    from oltsim._proto import oltsim_pb2
    _show_scenario(args, out, conn.call("StopScenario", oltsim_pb2.Empty(), service="oltsim"))
    return EXIT_OK


def scenario_progress(status) -> float:
    """How far a scenario is, in steps: those ended, plus for each running step with a known end the part of its
    duration gone (on the daemon's clock: its start plus the elapsed time it reported), at most steps_total."""
    now = status.started_at + status.elapsed
    done = float(status.steps_ended)
    for step in status.current:
        if step.ends_at > step.started_at:
            done += min(1.0, max(0.0, (now - step.started_at) / (step.ends_at - step.started_at)))
    return min(done, float(status.steps_total))


def _scenario_bar(args, err, status):
    """The bar of `scenario run` (watch.progress_bar: -q, not a terminal, a 0x0 terminal as `wait`'s)."""
    from oltsim.ctl.watch import progress_bar
    return progress_bar(args, err, total=status.steps_total, desc=_scenario_desc(status), unit="step",
                        bar_format="{desc} |{bar}| {elapsed}{postfix}")


def _scenario_desc(status) -> str:
    return f"scenario {status.name}: {status.steps_ended}/{status.steps_total} steps"


def _show_progress(bar, status, postfix: str) -> None:
    """Draw `status` on the bar: steps ended in the text, the bar filled by scenario_progress (time within the
    running steps as well as steps)."""
    bar.total, bar.n = status.steps_total, scenario_progress(status)
    bar.set_description_str(_scenario_desc(status), refresh=False)
    bar.set_postfix_str(postfix, refresh=False)
    bar.refresh()


def scenario_run(conn, args, out, err) -> int:
    """`scenario run FILE [--detach]`: send the file's text; with --detach print the status at once. Otherwise
    watch it (GetScenario every --interval, a bar on stderr: steps ended of all, filled by time within the running
    steps as well, and the current steps' names) until it ends, then print its status: exit 0 when done, 1 when
    stopped or failed. Ctrl-C ends the watching only, saying how to stop the scenario (exit 130)."""
    import time

    from oltsim._proto import oltsim_pb2
    text = read_scenario_file(args.file)
    status = conn.call("RunScenario", oltsim_pb2.ScenarioRequest(text=text, source=args.file), service="oltsim")
    if args.detach:
        _show_scenario(args, out, status)
        return EXIT_OK
    started_at, name = status.started_at, status.name
    try:
        with _scenario_bar(args, err, status) as bar:
            while status.state == "running":
                _show_progress(bar, status, ", ".join(step.step for step in status.current))
                time.sleep(args.interval)
                status = conn.call("GetScenario", oltsim_pb2.Empty(), service="oltsim")
                if status.started_at != started_at or status.name != name:
                    # Ours ended between two looks and another one started: its end is not known here.
                    raise CtlError(f"scenario {name} ended and another one ({status.name}) started; see the "
                                   f"events for how {name} ended", EXIT_REFUSED)
            _show_progress(bar, status, "")
    except KeyboardInterrupt:
        err.write(f"oltsimctl: scenario {name} is still running; `oltsimctl scenario status` shows it, "
                  "`oltsimctl scenario stop` stops it\n")
        return EXIT_INTERRUPTED
    _show_scenario(args, out, status)
    code = SCENARIO_ENDS.get(status.state, EXIT_REFUSED)
    if code != EXIT_OK:
        err.write(f"oltsimctl: scenario {name} {status.state}" + (f": {status.error}" if status.error else "")
                  + "\n")
    return code
