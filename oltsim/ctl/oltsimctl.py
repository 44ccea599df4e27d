"""`oltsimctl`: the command line. bbsimctl's command tree, names, aliases and positional arguments, plus `events`
and `wait`; global options (connection, token, output) go before the command or after it.

Exit codes: 0 done, 1 the server refused the call (its status and message on stderr; also an unexpected error of
oltsimctl itself, one line too, with the traceback when OLTSIMCTL_DEBUG is set), 2 a bad command line or setting,
3 `wait` timed out, 4 no connection to the server, 130 interrupted (except `events`, where Ctrl-C is the normal
end: 0). See docs/oltsimctl.md.

Invoked as `bbsimctl` (the `bbsimctl` console script, or any link of that name) it stands in for BBSim 1.16.8's
client: messages and usage name `bbsimctl`, the environment and config file are bbsimctl's (`BBSIMCTL_SERVER`,
`BBSIMCTL_CONFIG`, `~/.bbsim/config`), `-d/--debug` is accepted, every failure exits 1 as bbsimctl's do (a refused
call, no connection, a bad command line), a refused `onu igmp` is reported but exits 0, as bbsimctl's does, and
the command line is read as go-flags reads bbsimctl's (`oltsim.ctl.goflags`): words after a command's arguments
are ignored and the global options are taken between command names too.

Both names answer go-flags' completion protocol (`GO_FLAGS_COMPLETION`, the `completion bash` function).
"""
from __future__ import annotations

import argparse
import os
import re
import sys

from oltsim.ctl import subcommands as c
from oltsim.ctl import USER_GRPC_VERBOSITY, goflags, watch
from oltsim.ctl import capture_cli as capture_command
from oltsim.ctl import dmi_cli as dmi_command
from oltsim.ctl.connection import EXIT_CONNECT, EXIT_OK, EXIT_REFUSED, EXIT_USAGE, Connection, CtlError
from oltsim.ctl.settings import BBSIMCTL, DEFAULT_DMI_SERVER, DEFAULT_SERVER, ENV_TOKEN, OLTSIMCTL, Profile
from oltsim.ctl.settings import SettingsError
from oltsim.ctl.settings import parse_duration
from oltsim.ctl.settings import resolve as resolve_settings
from oltsim import __version__
from oltsim.suggest import did_you_mean

PROG = OLTSIMCTL.prog
EXIT_INTERRUPTED = 130
ENV_DEBUG = "OLTSIMCTL_DEBUG"


def _die(message: str, code: int, profile: Profile = OLTSIMCTL) -> int:
    print(f"{profile.prog}: {message}", file=sys.stderr)
    return code


def _uint32(text: str) -> int:
    try:
        value = int(text, 10)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a non-negative integer: {text!r}") from None
    if not 0 <= value <= 0xFFFFFFFF:
        raise argparse.ArgumentTypeError(f"out of range: {text!r}")
    return value


def _int32(text: str) -> int:
    try:
        value = int(text, 10)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if not -2**31 <= value < 2**31:
        raise argparse.ArgumentTypeError(f"out of range: {text!r}")
    return value


def _positive_int(text: str) -> int:
    value = _uint32(text)
    if value == 0:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value


def _seconds(text: str) -> float:
    try:
        return parse_duration(text)
    except SettingsError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _bool(text: str) -> bool:
    try:
        return c.parse_bool(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def global_options_line(profile: Profile = OLTSIMCTL) -> str:
    """The line a command's --help has in place of the global options, which `oltsimctl --help` lists once."""
    return (f"global options (--server, --tls, --token-file, -o json, ...) go before or after the command: "
            f"{profile.prog} --help lists them")


def add_global_options(parser: argparse.ArgumentParser, leaf: bool, call_timeout: bool = True,
                       profile: Profile = OLTSIMCTL) -> None:
    """The connection and output options. On commands (`leaf`) they default to SUPPRESS, so that a value given
    before the command is kept unless repeated after it; there oltsimctl accepts them without listing them (its
    top --help does; bbsimctl lists them on every command, as go-flags does)."""
    def default(value):
        return argparse.SUPPRESS if leaf else value

    hidden = leaf and not profile.go_flags_arguments
    if hidden:
        group = _Unlisted(parser)
    elif profile.go_flags_arguments:
        group = parser.add_argument_group("global options")
    else:
        group = parser.add_argument_group("global options", "before the command, after it or between its names\n"
                                                            "(a command's --help leaves them to this list)")
    group.add_argument("-c", "--config", metavar="FILE", default=default(None),
                       help=f"client config file (default: ${profile.env_config}, else ~/{profile.config_dir}/config "
                            f"if it exists)")
    group.add_argument("-s", "--server", metavar="HOST:PORT", default=default(None),
                       help=f"oltsim's v1 gRPC endpoint (default: ${profile.env_server}, else {DEFAULT_SERVER})")
    group.add_argument("--dmi-server", metavar="HOST:PORT", default=default(None),
                       help=f"the DMI endpoint the dmi commands call, plain TCP without a token (default: "
                            f"${profile.env_dmi_server}, else dmi_server of the config file, else "
                            f"{DEFAULT_DMI_SERVER})")
    if profile is BBSIMCTL:
        group.add_argument("-d", "--debug", action="store_true", default=default(False),
                           help="accepted for bbsimctl's scripts; set OLTSIMCTL_DEBUG=1 for tracebacks")
    group.add_argument("--tls", action="store_true", default=default(False),
                       help="connect with TLS (implied by --ca-cert, --client-cert and --server-name)")
    group.add_argument("--ca-cert", metavar="FILE", default=default(None),
                       help="CA certificates (PEM) to trust instead of the system's")
    group.add_argument("--client-cert", metavar="FILE", default=default(None),
                       help="client certificate (PEM) for servers that require one; with --client-key")
    group.add_argument("--client-key", metavar="FILE", default=default(None), help="its private key (PEM)")
    group.add_argument("--server-name", metavar="NAME", default=default(None),
                       help="the name to expect in the server's certificate (default: the host of --server)")
    group.add_argument("--token-file", metavar="FILE", default=default(None),
                       help=f"file holding the access token, sent as 'authorization: Bearer <token>' "
                            f"(without it: --token, else ${ENV_TOKEN}, else token_file of the config file)")
    group.add_argument("--token", metavar="TOKEN", default=default(None),
                       help="the access token itself (visible in the process list: prefer --token-file)")
    if call_timeout:
        group.add_argument("--timeout", dest="call_timeout", metavar="SECONDS", type=_seconds,
                           default=default(None), help="deadline of each call (default: 10s, or grpc.timeout of "
                                                       "the config file)")
    group.add_argument("-o", "--output", choices=("table", "json"), default=default("table"),
                       help="table (bbsimctl's layout; lines for events) or json (the REST API's JSON)")


class _Unlisted:
    """An argument group's add_argument that adds to `parser` with the help suppressed: accepted, not listed."""

    def __init__(self, parser: argparse.ArgumentParser):
        self.parser = parser

    def add_argument(self, *names, **options) -> argparse.Action:
        options["help"] = argparse.SUPPRESS
        return self.parser.add_argument(*names, **options)


_REQUIRED = re.compile(r"the following arguments are required: (?P<names>.*)")
_INVALID_CHOICE = re.compile(r"argument (?P<argument>\S+): invalid choice: '(?P<word>[^']*)' \(choose from "
                             r"(?P<choices>.*)\)")
_UNRECOGNIZED = re.compile(r"unrecognized arguments: (?P<words>.*)")


def usage_line(prog: str, message: str, choices_of=None) -> str:
    """oltsimctl's one line for a bad command line that argparse reports with `message`, at the (sub)command whose
    prog is `prog` ("oltsimctl onu get"): ``oltsimctl: onu get: missing ONU_SN (see oltsimctl onu get --help)``; an
    unknown command word gets the nearest one. `choices_of` maps a metavar (COMMAND) to its choices, for a
    missing one."""
    words = prog.split()
    where = f"{' '.join(words[1:])}: " if len(words) > 1 else ""
    required = _REQUIRED.fullmatch(message)
    invalid = _INVALID_CHOICE.fullmatch(message)
    unrecognized = _UNRECOGNIZED.fullmatch(message)
    if required:
        names = required.group("names")
        text = f"missing {names}"
        choices = (choices_of or {}).get(names)
        if choices:
            text += f" (one of {', '.join(choices)})"
    elif invalid:
        word, argument = invalid.group("word"), invalid.group("argument")
        choices = re.findall(r"'([^']*)'", invalid.group("choices"))
        what = "command" if argument == "COMMAND" else f"value for {argument}"
        hint = did_you_mean(word, choices) or f" (one of {', '.join(choices)})"
        text = f"unknown {what} {word!r}{hint}"
    elif unrecognized:
        text = f"unexpected argument(s): {unrecognized.group('words')}"
    else:
        text = message.removeprefix("argument ")
    return f"{words[0]}: {where}{text} (see {prog} --help)"


class OneLineParser(argparse.ArgumentParser):
    """oltsimctl's parser (and its subcommands'): a bad command line is one stderr line naming the command, what is
    wrong (with a "did you mean" for a misspelt command) and where the help is, exit 2; not argparse's usage block
    with the error last."""

    def error(self, message: str):
        choices = {}
        if self._subparsers is not None:
            for action in self._subparsers._group_actions:
                if isinstance(action, argparse._SubParsersAction) and action.metavar:
                    choices[action.metavar] = [name for name in action.choices
                                               if name not in {alias for alias in _aliases(action)}]
        self.exit(EXIT_USAGE, usage_line(self.prog, message, choices) + "\n")


def _aliases(action: argparse._SubParsersAction) -> set[str]:
    """The aliases among a subparsers action's choices (the names argparse lists after the first of a parser)."""
    seen, aliases = set(), set()
    for name, parser in action.choices.items():
        if id(parser) in seen:
            aliases.add(name)
        seen.add(id(parser))
    return aliases


class _Tree:
    """Builds the command tree: groups of commands, each command with the global options and its handler."""

    def __init__(self, subparsers, profile: Profile):
        self.subparsers = subparsers
        self.profile = profile

    def _epilog(self) -> str | None:
        return None if self.profile.go_flags_arguments else global_options_line(self.profile)

    def command(self, name: str, handler, help: str, aliases=(), call_timeout: bool = True):
        parser = self.subparsers.add_parser(name, help=help, description=help, aliases=list(aliases),
                                            epilog=self._epilog())
        add_global_options(parser, leaf=True, call_timeout=call_timeout, profile=self.profile)
        parser.set_defaults(handler=handler)
        return parser

    def group(self, name: str, help: str) -> _Tree:
        parser = self.subparsers.add_parser(name, help=help, description=help, epilog=self._epilog())
        if not self.profile.go_flags_arguments:
            # `oltsimctl olt --server x get`: the global options are taken between command names too (bbsimctl's
            # go-flags reading does the same its own way, see oltsim.ctl.goflags)
            add_global_options(parser, leaf=True, profile=self.profile)
        return _Tree(parser.add_subparsers(dest=f"{name}_command", metavar="COMMAND", required=True), self.profile)


# ---- completion of positional arguments (goflags.complete; `connect()` opens the connection on first use) ----

_COMPLETION_TIMEOUT = 2.0


def _complete_serials(connect):
    return [onu.SerialNumber for onu in connect().call("GetONUs", c.bbsim_pb2.Empty(),
                                                       timeout=_COMPLETION_TIMEOUT).items]


def _complete_uni_ids(connect):
    # bbsimctl offers the UNIs of the first ONU: every ONU has the same UNIs
    onus = connect().call("GetONUs", c.bbsim_pb2.Empty(), timeout=_COMPLETION_TIMEOUT).items
    return [str(uni.ID) for uni in onus[0].unis] if onus else []


def _complete_transceivers(connect):
    answer = connect().call("GetTransceivers", c.bbsim_dmi_pb2.DmiEmpty(), service="dmi",
                            timeout=_COMPLETION_TIMEOUT)
    return [str(item.ID) for item in answer.Items]


def _complete_events(connect):
    from dmi import hw_events_mgmt_service_pb2 as events
    return [name for name in events.EventIds.keys() if name != "EVENT_NAME_UNDEFINED"]


def _fixed(values):
    return lambda connect: list(values)


def _completes(action: argparse.Action, completer) -> argparse.Action:
    action.completer = completer
    return action


def _onu_sn(parser, optional: bool = False) -> None:
    if optional:
        action = parser.add_argument("onu_sn", metavar="ONU_SN", nargs="?", default="",
                                     help="ONU serial number (all if none)")
    else:
        action = parser.add_argument("onu_sn", metavar="ONU_SN", help="ONU serial number, e.g. BBSM00000001")
    _completes(action, _complete_serials)


def _verbose(parser, what: str) -> None:
    parser.add_argument("-v", "--verbose", action="store_true", help=f"add a column with {what}")


def _json(parser) -> None:
    parser.add_argument("--json", dest="output", action="store_const", const="json", default=argparse.SUPPRESS,
                        help="the same as -o json")


def build_parser(profile: Profile = OLTSIMCTL) -> argparse.ArgumentParser:
    """The whole command line, named after `profile`."""
    parser_class = argparse.ArgumentParser if profile.go_flags_arguments else OneLineParser
    parser = parser_class(
        prog=profile.prog, formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Query and drive an oltsim OLT over its v1 gRPC API: bbsimctl's commands and output, plus\n"
                    "TLS, the access token, JSON output, `events` and `wait`.",
        epilog="exit codes: 0 done, 1 refused by the server, 2 bad usage or setting, 3 wait timed out, "
               "4 no connection" if not profile.every_failure_exits_1 else
               "exit codes (as bbsimctl's): 0 done, 1 any failure, 3 wait timed out")
    add_global_options(parser, leaf=False, profile=profile)
    if not profile.go_flags_arguments:
        parser.add_argument("--version", action="version", version=f"{profile.prog} {__version__}",
                            help="print the version and exit")
    root = _Tree(parser.add_subparsers(dest="command", metavar="COMMAND", required=True), profile)

    root.command("config", c.show_config, "print the effective client configuration and the version")

    olt = root.group("olt", "OLT commands")
    olt.command("get", c.olt_get, "show the OLT")
    p = olt.command("resources", c.olt_resources, "list the resources the adapter allocated")
    _completes(p.add_argument("type", metavar="TYPE", help="ALLOC_ID or GEM_PORT"), _fixed(c.RESOURCE_TYPES))
    olt.command("nnis", c.olt_nnis, "list the NNI ports")
    olt.command("pons", c.olt_pons, "list the PON ports")
    olt.command("shutdown", c.olt_shutdown, "shut the OLT down")
    olt.command("poweron", c.olt_poweron, "power the OLT on")
    olt.command("reboot", c.olt_reboot, "reboot the OLT")
    alarms = olt.group("alarms", "raise, clear and list OLT alarms")
    for name, handler, verb in (("raise", c.olt_alarm_raise, "raise"), ("clear", c.olt_alarm_clear, "clear")):
        p = alarms.command(name, handler, f"{verb} an OLT alarm on an interface")
        _completes(p.add_argument("name", metavar="NAME", help="OLT_PON_LOS or OLT_NNI_LOS"), _fixed(c.OLT_ALARMS))
        p.add_argument("intf_id", metavar="INTF_ID", type=_uint32, help="the PON or NNI id")
    alarms.command("list", c.olt_alarm_list, "list the OLT alarm names")
    olt.command("flows", c.olt_flows, "list every flow of the OLT")
    olt.command("poweronAllONUs", c.olt_poweron_all, "power on every ONU")
    olt.command("shutdownAllONUs", c.olt_shutdown_all, "shut every ONU down")
    olt.command("stopServer", c.olt_stop_server, "stop the OpenOLT gRPC server")
    olt.command("startServer", c.olt_start_server, "start the OpenOLT gRPC server")
    p = olt.command("restartServer", c.olt_restart_server, "stop the OpenOLT gRPC server, start it DELAY s later")
    p.add_argument("delay", metavar="DELAY", type=_uint32, help="seconds")

    onu = root.group("onu", "ONU commands")
    _verbose(onu.command("list", c.onu_list, "list the ONUs"), "their UNIs")
    p = onu.command("get", c.onu_get, "show one ONU")
    _verbose(p, "its UNIs")
    _onu_sn(p)
    _onu_sn(onu.command("shutdown", c.onu_shutdown, "shut an ONU down"))
    _onu_sn(onu.command("poweron", c.onu_poweron, "power an ONU on"))
    _onu_sn(onu.command("auth_restart", c.onu_auth_restart, "restart EAPOL on every UNI of an ONU",
                        aliases=("restartEapol",)))
    _onu_sn(onu.command("dhcp_restart", c.onu_dhcp_restart, "restart DHCP on every UNI of an ONU",
                        aliases=("restartDhcp",)))
    p = onu.command("igmp", c.onu_igmp, "join or leave a multicast group on a UNI")
    _onu_sn(p)
    p.add_argument("uni_id", metavar="UNI_ID", type=_int32, help="the UNI id")
    _completes(p.add_argument("sub_action", metavar="ACTION", help="join, leave or joinv3"), _fixed(c.IGMP_ACTIONS))
    p.add_argument("group_address", metavar="GROUP_ADDRESS", help="the multicast group, e.g. 224.0.0.22")
    p.add_argument("-v", "--vlan", type=_int32, default=0, help="VLAN to set")
    _onu_sn(onu.command("traffic_schedulers", c.onu_traffic_schedulers, "show an ONU's traffic schedulers"))
    alarms = onu.group("alarms", "raise, clear and list ONU alarms")
    for name, handler, verb in (("raise", c.onu_alarm_raise, "raise"), ("clear", c.onu_alarm_clear, "clear")):
        p = alarms.command(name, handler, f"{verb} an ONU alarm")
        p.add_argument("-p", dest="parameters", action="append", metavar="NAME=VALUE",
                       help="an alarm parameter (repeatable)")
        _completes(p.add_argument("name", metavar="NAME", help="the alarm, see `onu alarms list`"),
                   _fixed(sorted(c.ONU_ALARMS)))
        _onu_sn(p)
    alarms.command("list", c.onu_alarm_list, "list the ONU alarm names")
    _onu_sn(onu.command("flows", c.onu_flows, "list an ONU's flows"))
    _onu_sn(onu.command("services", c.onu_services, "list an ONU's services"), optional=True)
    _onu_sn(onu.command("invalidate_mds", c.onu_invalidate_mds, "invalidate an ONU's MIB data sync counter"))

    pon = root.group("pon", "PON commands")
    for name, handler, verb in (("poweronAllONUs", c.pon_poweron_all, "power on"),
                                ("shutdownAllONUs", c.pon_shutdown_all, "shut down")):
        p = pon.command(name, handler, f"{verb} every ONU of a PON")
        p.add_argument("intf_id", metavar="INTF_ID", type=_uint32, help="the PON id")

    service = root.group("service", "service commands")
    service.command("list", c.service_list, "list every service")

    uni = root.group("uni", "UNI commands")
    _verbose(uni.command("list", c.uni_list, "list every UNI"), "their services")
    p = uni.command("get", c.uni_get, "list the UNIs of an ONU")
    _verbose(p, "their services")
    _onu_sn(p)
    p = uni.command("services", c.uni_services, "list the services of an ONU or of one of its UNIs")
    p.add_argument("-v", "--verbose", action="store_true",
                   help="accepted as bbsimctl accepts it; the table is the same")
    _onu_sn(p, optional=True)
    _completes(p.add_argument("uni_id", metavar="UNI_ID", nargs="?", default="", help="the UNI id (all if none)"),
               _complete_uni_ids)
    for name, handler, what in (("auth_restart", c.onu_auth_restart, "EAPOL"),
                                ("dhcp_restart", c.onu_dhcp_restart, "DHCP")):
        p = uni.command(name, handler, f"restart {what} on one UNI")
        _onu_sn(p)
        _completes(p.add_argument("uni_id", metavar="UNI_ID", help="the UNI id"), _complete_uni_ids)

    p = root.command("log", c.log_level, "set oltsim's log level")
    _completes(p.add_argument("level", metavar="LEVEL", help="trace, debug, info, warn or error"),
               _fixed(("trace", "debug", "info", "warn", "error")))
    p.add_argument("caller", metavar="CALLER", type=_bool, help="true or false (kept for bbsimctl; oltsim's "
                                                                  "log lines always name their system)")

    dmi = root.group("dmi", "DMI commands: BBSim's bbsim.BBsim_dmi on the DMI endpoint (--dmi-server)")
    events = dmi.group("events", "DMI events")
    p = events.command("create", c.dmi_event_create, "raise a DMI event, e.g. EVENT_FAN_FAILURE (the device must "
                                                     "be managed: StartManagingDevice)")
    _completes(p.add_argument("event_name", metavar="EVENT_NAME", help="a DMI EventIds name"), _complete_events)
    transceiver = dmi.group("transceiver", "PON transceivers")
    for name, handler, verb in (("plug_in", c.dmi_transceiver_plug_in, "plug a PON transceiver in"),
                                ("plug_out", c.dmi_transceiver_plug_out, "plug a PON transceiver out")):
        p = transceiver.command(name, handler, verb)
        _completes(p.add_argument("transceiver_id", metavar="TRANSCEIVER_ID", type=_uint32,
                                  help="its id (the PON's, see `dmi transceiver list`)"), _complete_transceivers)
    transceiver.command("list", c.dmi_transceiver_list, "list the PON transceivers")
    if not profile.go_flags_arguments:  # bbsimctl's tree stays Go bbsimctl's (its completion is compared)
        dmi_command.add_commands(dmi)

    completion = root.group("completion", "shell completion")
    completion.command("bash", _completion_bash, "print the bash completion function (source it)")

    p = root.command("alarms", c.alarms, "list the active alarms (docs/alarms.md)")
    p.add_argument("--history", action="store_true", help="the raises and clears since start instead (newest last)")
    p.add_argument("--onu", metavar="ONU_SN", help="only this ONU's alarms")

    _json(root.command("dataplane", c.dataplane, "the data plane's counters: per UNI, the NNI, each interface, "
                                                 "the shaper's schedulers (docs/dataplane.md)"))

    scenario = root.group("scenario", "run, show and stop fault scenarios (docs/scenarios.md)")
    p = scenario.command("run", c.scenario_run, "run a scenario file; a progress bar until it ends (exit 1 if it "
                                                "fails or is stopped)")
    p.add_argument("file", metavar="FILE", help="the scenario file (YAML), read here and sent to oltsim")
    p.add_argument("--detach", action="store_true", help="return once it has started")
    p.add_argument("--interval", type=_seconds, default=0.5, metavar="SECONDS",
                   help="time between two looks (default 0.5)")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    _json(p)
    _json(scenario.command("status", c.scenario_status, "show the running (or last) scenario and its current "
                                                        "steps"))
    _json(scenario.command("stop", c.scenario_stop, "stop the running scenario, undoing what its steps hold"))

    p = root.command("events", watch.events, "print events as they happen (Ctrl-C ends); state, alarm and "
                                             "scenario events unless --all or --type")
    chosen = p.add_mutually_exclusive_group()
    chosen.add_argument("--type", dest="types", action="append", metavar="TYPE",
                        help="only this event type, e.g. onu-state-changed, alarm, omci-indication (repeatable)")
    chosen.add_argument("--all", action="store_true",
                        help="every event, OMCI frames, packets and port statistics included")
    p.add_argument("--onu", metavar="ONU_SN", help="only events of this ONU")
    p.add_argument("--count", type=_positive_int, metavar="N", help="exit after N events")
    p.add_argument("--duration", type=_seconds, metavar="SECONDS", help="exit after this long")
    p.add_argument("--follow", action="store_true",
                   help="when the stream ends or the server is unreachable, reconnect (every second) instead of "
                        "exiting")

    capture_command.add_arguments(root.command(
        "capture", capture_command.capture, "write the OLT's OMCI, EAPOL, DHCP and IGMP frames as pcapng for "
        "Wireshark (Ctrl-C ends; docs/capture.md)", call_timeout=False))

    p = root.command("wait", watch.wait, "wait until the ONUs are in a state; exit 3 on timeout",
                     call_timeout=False)
    p.add_argument("--state", required=True, metavar="STATE",
                   help="an ONU state (enabled, disabled, ...) or a service state (eap_response_success_received, "
                        "dhcp_ack_received, ...)")
    p.add_argument("--timeout", type=_seconds, default=60.0, metavar="SECONDS",
                   help="give up after this long (default 60)")
    p.add_argument("--onus", action="append", metavar="SN,...", help="only these ONUs (default: all)")
    p.add_argument("--interval", type=_seconds, default=0.5, metavar="SECONDS",
                   help="time between two looks (default 0.5)")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    return parser


def _completion_bash(settings, args, out) -> int:
    """`completion bash`: the bash function that completes this program's command lines."""
    out.write(goflags.bash_script(args.prog))
    return EXIT_OK


def unknown_option(parser: argparse.ArgumentParser, argv: list[str]) -> tuple[str, list[str], list[str]] | None:
    """The first option in `argv` that the command it is given to does not have, as argparse reads the line: the
    word (``--sever``, without a ``=value``), the command names before it and the long options that command has
    (bare: ``server``); None when every option is known (argparse then reports whatever else is wrong). An option
    known at the top but given between two command names, or an ambiguous abbreviation, is left to argparse."""
    current, path, values = parser, [], 0
    for index, word in enumerate(argv):
        if values:
            values -= 1
            continue
        if word == "--":
            return None
        if word.startswith("-") and word != "-" and not parser._negative_number_matcher.match(word):
            long = word.startswith("--")
            name = word.split("=", 1)[0] if long else word[:2]
            actions = current._option_string_actions
            action = actions.get(name)
            if action is None and long:
                matches = [option for option in actions if option.startswith(name) and option.startswith("--")]
                if len(matches) > 1:
                    return None
                action = actions[matches[0]] if matches else None
            if action is None:
                if " " in word or name in parser._option_string_actions:
                    return None
                known = [option[2:] for option in actions if option.startswith("--")]
                return name, path, known
            if action.nargs != 0 and not ("=" in word if long else len(word) > 2):
                values = 1
            continue
        commands = goflags.subcommands(current)
        if commands:
            if word not in commands:
                return None
            current = commands[word]
            path.append(word)
    return None


def _unknown_option_line(found: tuple[str, list[str], list[str]], profile: Profile) -> str:
    """One line for a misspelt option, with the nearest one the command has: oltsimctl's ``unrecognized option
    --sever; did you mean --server?``, bbsimctl's in go-flags' words, ``unknown flag `sever'; ...``."""
    word, path, known = found
    name = word.lstrip("-")
    hint = did_you_mean(name, known, lambda option: f"--{option}")
    if not hint:
        hint = f" ({' '.join([profile.prog, *path, '--help'])} lists the options)"
    if profile.go_flags_arguments:
        return f"{profile.prog}: unknown flag `{name}'{hint}"
    return f"{profile.prog}: unrecognized option {word}{hint}"


def parse(argv: list[str], profile: Profile = OLTSIMCTL) -> argparse.Namespace:
    """The parsed command line as `profile` reads it (bbsimctl's: as go-flags does, see `oltsim.ctl.goflags`);
    argparse's SystemExit on --help or a bad command line (a misspelt option: one line naming it and the nearest
    one, exit 2)."""
    parser = build_parser(profile)
    if profile.go_flags_arguments:
        argv = goflags.go_flags_argv(parser, argv)
    found = unknown_option(parser, argv)
    if found is not None:
        print(_unknown_option_line(found, profile), file=sys.stderr)
        raise SystemExit(EXIT_USAGE)
    if profile.go_flags_arguments:
        args = parser.parse_args(argv)
    else:
        args, extra = parser.parse_known_args(argv)
        if extra:
            # argparse reports them at the top; the command they were given to says it, with its own help
            _command_parser(parser, argv).error(f"unrecognized arguments: {' '.join(extra)}")
    args.prog = profile.prog
    return args


def _command_parser(parser: argparse.ArgumentParser, argv: list[str]) -> argparse.ArgumentParser:
    """The parser of the (sub)command `argv` names (`onu list`), following its command words from the top."""
    for word in argv:
        subparsers = parser._subparsers._group_actions if parser._subparsers is not None else ()
        found = next((action.choices[word] for action in subparsers
                      if isinstance(action, argparse._SubParsersAction) and word in action.choices), None)
        if found is not None:
            parser = found
    return parser


def complete(argv: list[str], profile: Profile = OLTSIMCTL, out=None) -> int:
    """go-flags' completion protocol: the candidates for the last word of `argv`, one a line; always exit 0."""
    out = out or sys.stdout
    connection = []

    def connect() -> Connection:
        if not connection:
            connection.append(Connection(resolve_settings(argparse.Namespace(), profile=profile)))
        return connection[0]

    try:
        for candidate in goflags.complete(build_parser(profile), argv, connect):
            out.write(candidate + "\n")
    finally:
        for conn in connection:
            conn.close()
    return EXIT_OK


def main(argv: list[str] | None = None, profile: Profile = OLTSIMCTL) -> int:
    """Run one command as `profile` (oltsimctl, or bbsimctl); returns the exit code (see the module docstring)."""
    argv = sys.argv[1:] if argv is None else list(argv)
    if os.environ.get(goflags.ENV_COMPLETION):
        return complete(argv, profile)
    try:
        args = parse(argv, profile)
    except SystemExit as exc:  # --help (0) or a bad command line (argparse's 2; bbsimctl's go-flags exit 1)
        if exc.code and profile.every_failure_exits_1:
            return EXIT_REFUSED
        raise
    code = _run(args, profile)
    if profile.every_failure_exits_1 and code in (EXIT_USAGE, EXIT_CONNECT):
        return EXIT_REFUSED
    return code


def _run(args, profile: Profile) -> int:
    """Run the parsed command; returns oltsimctl's exit code."""
    interrupted = EXIT_INTERRUPTED
    if args.handler is _completion_bash:  # needs no settings: a broken config file must not stop it
        return _completion_bash(None, args, sys.stdout)
    try:
        settings = resolve_settings(args, profile=profile)
        if args.handler is c.show_config:
            return c.show_config(settings, args, sys.stdout)
        with Connection(settings) as conn:
            if args.handler in (watch.events, watch.wait, c.scenario_run, capture_command.capture):
                if args.handler in (watch.events, capture_command.capture):
                    interrupted = 0
                return args.handler(conn, args, sys.stdout, sys.stderr)
            if args.handler is c.onu_igmp and profile.igmp_failure_exits_0:
                try:
                    return c.onu_igmp(conn, args, sys.stdout)
                except CtlError as exc:
                    if exc.code == EXIT_USAGE:
                        raise
                    return _die(str(exc), EXIT_OK, profile)  # bbsimctl logs the refusal and exits 0
            return args.handler(conn, args, sys.stdout)
    except SettingsError as exc:
        return _die(str(exc), EXIT_USAGE, profile)
    except CtlError as exc:
        return _die(str(exc), exc.code, profile)
    except KeyboardInterrupt:
        return interrupted
    except BrokenPipeError:
        # The reader went away (`| head`): say nothing more, and keep Python from complaining at exit.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except Exception as exc:  # a bug of oltsimctl: still one line; the traceback on request
        if os.environ.get(ENV_DEBUG):
            raise
        return _die(f"unexpected error: {type(exc).__name__}: {exc} (set {ENV_DEBUG}=1 for the traceback)",
                    EXIT_REFUSED, profile)


def run(profile: Profile | None = None) -> None:
    """The console script: :func:`main` with gRPC's core kept off the terminal, then exit with its code. Without a
    `profile`, the name it was invoked by chooses: `bbsimctl` (a link of that name) is BBSim's client, anything
    else oltsimctl.

    gRPC's core writes some TLS failures to file descriptor 2 itself (absl ``E...`` lines, whatever
    GRPC_VERBOSITY says, depending on how far the handshake got), which would break the one-line error. Unless the
    user set GRPC_VERBOSITY, descriptor 2 goes to /dev/null and oltsimctl's own stderr to a copy of the original."""
    if not USER_GRPC_VERBOSITY:
        try:
            own = os.dup(2)
            null = os.open(os.devnull, os.O_WRONLY)
            os.dup2(null, 2)
            os.close(null)
            sys.stderr = os.fdopen(own, "w", buffering=1, encoding=sys.stderr.encoding, errors="backslashreplace")
        except (OSError, ValueError):
            pass  # no usable stderr to begin with: nothing to protect
    sys.exit(main(profile=profile or profile_named(sys.argv[0])))


def profile_named(program: str) -> Profile:
    """The profile of the name a program was invoked by: `bbsimctl` (any directory) is BBSim's, the rest ours."""
    return BBSIMCTL if os.path.basename(program) == BBSIMCTL.prog else OLTSIMCTL


def run_bbsimctl() -> None:
    """The `bbsimctl` console script: :func:`run` as BBSim's client, whatever the name it was invoked by."""
    run(BBSIMCTL)


if __name__ == "__main__":
    run()
