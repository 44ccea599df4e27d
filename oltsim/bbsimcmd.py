"""`bbsim`: BBSim 1.16.8's command line in front of the oltsim daemon, so that scripts, images and Helm charts that
start `/app/bbsim -olt_id 10 -pon 2 ...` start oltsim instead.

Every flag of `bbsim -h` (BBSim's internal/common/options.go) is taken, in Go's flag syntax: ``-flag value``,
``-flag=value``, ``--flag`` and ``--flag=value``; a bool flag is ``-flag`` or ``-flag=true|false`` (Go reads
``-flag false`` as the end of the flags; here that is an error, never a silently dropped flag). A flag given twice
keeps its last value, ``--`` ends the flags, ``-h`` and ``-help`` print the flags and exit 0. The flags become the
settings of ``twistd --nodaemon --pidfile= oltsim`` (oltsim's own options for the same settings), which then runs
in the foreground in this process.

Unlike BBSim, only the flags given override ``-config``'s file and a zero stays a value (``-delay 0``). Flags with no
meaning in oltsim (profiling, caller names in logs) are accepted with one warning line each on stderr. A wrong flag
or value is one line on stderr and exit status 2, as every oltsim start-up error; a misspelt flag names the nearest
one (``flag provided but not defined: -onuu; did you mean -onu?``).
"""
from __future__ import annotations

import functools
import os
import sys
from dataclasses import dataclass, field
from typing import TextIO

from oltsim.config import LISTENER_FIELDS, SETTINGS, ConfigError, endpoint_from_address, load_settings
from oltsim.daemon import check_listeners
from oltsim.model.builder import check_buildable
from oltsim.model.errors import OltsimError
from oltsim.suggest import did_you_mean

PROGRAM = "bbsim"

#: BBSim's default -config (relative to the working directory): read when it exists, as BBSim does
#: ("Cannot load BBSim configuration file. Using defaults." otherwise).
DEFAULT_CONFIG = os.path.join("configs", "bbsim.yaml")
#: BBSim's web server serves ONU images from its configs folder (/app/configs in its image, whose working directory
#: is /app): the `configs` folder of the working directory is the image folder when none is configured.
CONFIGS_DIR = "configs"


@dataclass(frozen=True)
class Flag:
    """One flag: its Go name and kind (``string``, ``int``, ``uint``, ``bool``), the Settings field it sets (None for
    ``config``, which names the YAML file, and for flags ignored here), BBSim's default as `bbsim -h` shows it, and
    its meaning (BBSim's, with what oltsim does where that differs)."""

    name: str
    kind: str
    setting: str | None
    default: str
    meaning: str
    ignored: str = ""  # why the flag has no effect here; "" for a flag that does


_ROW_OF_FLAG = {row.bbsim: row for row in SETTINGS if row.bbsim}


def _flag(name: str, kind: str, meaning: str) -> Flag:
    """The flag ``-name`` of the setting whose row (oltsim.config.SETTINGS) names it: its setting and the default
    `bbsim -h` shows come from that row, its kind (Go's) and meaning (BBSim's words) from here."""
    row = _ROW_OF_FLAG[name]
    return Flag(name, kind, None if row.kind == "config" else row.field, row.flag_default, meaning)


#: Every flag of BBSim 1.16.8, in the order options.go declares them, then the YAML-only addresses BBSim has no flag
#: for (accepted here so that every listener can be moved from the command line).
FLAGS: tuple[Flag, ...] = (
    _flag("config", "string", "Configuration file path (BBSim's YAML: bbsim: and olt:)"),
    _flag("services", "string",
          "Service Configuration file path (when not given and the default file is missing: the built-in att set)"),
    _flag("pon_port_config_file", "string",
          "Pon Interfaces Configuration file path (empty: ranges derived from the services)"),
    _flag("bp_format", "string", "Bandwidth profile format, 'mef' or 'ietf'"),
    _flag("olt_id", "int", "OLT device ID"),
    _flag("nni", "int", "Number of NNI ports per OLT device to be emulated"),
    _flag("nni_speed", "uint", "Reported speed of the NNI ports in Mbps"),
    _flag("pon", "int", "Number of PON ports per OLT device to be emulated"),
    _flag("onu", "int", "Number of ONU devices per PON port to be emulated"),
    _flag("uni", "int", "Number of Ethernet UNI Ports per ONU device to be emulated"),
    _flag("pots", "int", "Number of POTS UNI Ports per ONU device to be emulated"),
    _flag("nni_dhcp_trap_vid", "int", "Vlan to trap the DHCP packets on"),
    _flag("oltRebootDelay", "int", "Time that BBSim should wait before restarting after a reboot"),
    _flag("omci_response_rate", "int", "Amount of OMCI messages to respond to"),
    _flag("openolt_address", "string", "IP address:port (OpenOLT gRPC)"),
    _flag("api_address", "string", "IP address:port (control API v1, gRPC)"),
    _flag("rest_api_address", "string", "IP address:port (control API v1, REST)"),
    _flag("dmi_server_address", "string", "IP address:port (Device Management Interface)"),
    Flag("cpuprofile", "string", None, "", "write cpu profile to file",
         ignored="oltsim has no Go CPU profiler"),
    _flag("logLevel", "string", "Set the log level (trace, debug, info, warn, error)"),
    Flag("logCaller", "bool", None, "false", "Whether to print the caller filename or not",
         ignored="oltsim's log lines name their logger, not a source file"),
    _flag("delay", "int",
          "The delay between ONU DISCOVERY batches in milliseconds (1 ONU per each PON PORT at a time)"),
    _flag("ca", "string",
          "Set the mode for controlled activation of PON ports and ONUs (default, only-onu, only-pon, both)"),
    Flag("enableperf", "bool", None, "false",
         "Setting this flag will cause BBSim to not store data like traffic schedulers, flows of ONUs etc..",
         ignored="oltsim always keeps flows and schedulers (bounded by --max-flows)"),
    _flag("enableEvents", "bool", "Enable sending BBSim events on configured kafka server"),
    _flag("kafkaAddress", "string", "IP:Port for kafka"),
    _flag("kafkaEventTopic", "string",
          "Ability to configure the topic on which BBSim publishes events on Kafka (empty: BBSim-OLT-<id>-Events)"),
    _flag("dhcpRetry", "bool",
          "Set this flag if BBSim should retry DHCP upon failure until success"),
    _flag("authRetry", "bool",
          "Set this flag if BBSim should retry EAPOL (Authentication) upon failure until success"),
    _flag("injectOmciUnknownMe", "bool",
          "Generate an extra MibDB packet with ClassID 37 (Intentionally left blank)"),
    _flag("injectOmciUnknownAttributes", "bool",
          "Modifies the ONU2-G MibDB packet to add Unknown Attributes"),
    _flag("omccVersion", "int",
          "Set OMCC version to be returned in OMCI response of ME Onu2G"),
    # BBSim's YAML keys without a BBSim flag (oltsim's additions to the command line)
    _flag("legacy_api_address", "string",
          "IP address:port (legacy API v0, gRPC; a YAML key in BBSim, a flag in oltsim only)"),
    _flag("legacy_rest_api_address", "string",
          "IP address:port (legacy API v0, REST; a YAML key in BBSim, a flag in oltsim only)"),
    _flag("sadis_rest_address", "string",
          "IP address:port (SADIS and ONU images; a YAML key in BBSim, a flag in oltsim only)"),
)

BY_NAME = {flag.name: flag for flag in FLAGS}
#: Settings field -> the flag that sets it, to name the flag in an error message
FLAG_OF = {flag.setting: flag.name for flag in FLAGS if flag.setting}

_GO_TRUE = frozenset({"1", "t", "T", "true", "TRUE", "True"})
_GO_FALSE = frozenset({"0", "f", "F", "false", "FALSE", "False"})


class FlagError(Exception):
    """A command line Go's flag package would refuse (or that would silently drop flags): one line for stderr."""


class HelpRequested(Exception):
    """``-h`` or ``-help``: print the flags and exit 0, as Go's flag package does."""


@dataclass
class Parsed:
    """What a command line asks for: ``given`` maps Settings fields to typed values (only the flags given, the last
    of each), ``typed`` the same fields' values as typed, ``config`` is the YAML file or None, ``ignored`` the flags
    given that have no effect here, once each in the order first given."""

    given: dict[str, object] = field(default_factory=dict)
    typed: dict[str, str] = field(default_factory=dict)
    config: str | None = None
    ignored: list[str] = field(default_factory=list)


def parse_go_int(text: str, unsigned: bool = False) -> int:
    """An integer as Go's strconv.ParseInt(text, 0, 64) reads it (flag.Int): an optional sign, then decimal, ``0x``
    hex, ``0o`` or a leading ``0`` octal, ``0b`` binary, underscores only after a base prefix; ValueError otherwise.
    ``unsigned`` (flag.Uint) refuses a sign."""
    body = text
    sign = 1
    if body and body[0] in "+-":
        if unsigned:
            raise ValueError(text)
        sign, body = (-1 if body[0] == "-" else 1), body[1:]
    if not body or body[0] == "_" or body.strip() != body:
        raise ValueError(text)
    lower = body.lower()
    if lower.startswith(("0x", "0o", "0b")):
        value = int(body, 0)
    elif body.startswith("0") and len(body) > 1:
        if "_" in body:
            value = int("0o" + body[1:], 0)
        elif body.isdigit():
            value = int(body[1:], 8)
        else:
            raise ValueError(text)
    elif body.isdigit():
        value = int(body, 10)
    else:
        raise ValueError(text)
    value *= sign
    if not (0 if unsigned else -(2 ** 63)) <= value < 2 ** (64 if unsigned else 63):
        raise ValueError(text)
    return value


def _value(flag: Flag, text: str) -> object:
    if flag.kind == "bool":
        if text in _GO_TRUE:
            return True
        if text in _GO_FALSE:
            return False
        raise FlagError(f'invalid boolean value "{text}" for -{flag.name}: parse error')
    if flag.kind in ("int", "uint"):
        try:
            return parse_go_int(text, unsigned=flag.kind == "uint")
        except ValueError:
            kind = "a non-negative integer" if flag.kind == "uint" else "an integer"
            raise FlagError(f'invalid value "{text}" for flag -{flag.name}: not {kind}') from None
    if flag.setting in LISTENER_FIELDS:
        try:  # Go's "0.0.0.0:50060" and ":50075" become tcp:50060 and tcp:50075
            return endpoint_from_address(text)
        except ConfigError as exc:
            raise FlagError(f'invalid value "{text}" for flag -{flag.name}: {exc.message}') from None
    return text


def parse(argv: list[str]) -> Parsed:
    """Read BBSim's flags from ``argv`` (without the program name); FlagError or HelpRequested."""
    parsed = Parsed()
    index = 0
    while index < len(argv):
        argument = argv[index]
        index += 1
        if argument == "--":
            if index < len(argv):
                raise FlagError(f"unexpected argument {argv[index]!r}: bbsim takes flags only")
            break
        if len(argument) < 2 or argument[0] != "-":
            raise FlagError(f"unexpected argument {argument!r}: bbsim takes flags only "
                            f"(a bool flag takes its value as -flag=false)")
        name = argument[2:] if argument.startswith("--") else argument[1:]
        if not name or name[0] in "-=":
            raise FlagError(f"bad flag syntax: {argument}")
        name, has_value, text = name.partition("=")
        if name in ("h", "help") and name not in BY_NAME:
            raise HelpRequested()
        flag = BY_NAME.get(name)
        if flag is None:
            raise FlagError(f"flag provided but not defined: -{name}"
                            + did_you_mean(name, [*BY_NAME, "help"], lambda found: f"-{found}"))
        if not has_value:
            if flag.kind == "bool":
                text = "true"
            elif index < len(argv):
                text = argv[index]
                index += 1
            else:
                raise FlagError(f"flag needs an argument: -{name}")
        value = _value(flag, text)
        if flag.ignored:
            if flag.name not in parsed.ignored:
                parsed.ignored.append(flag.name)
        elif flag.name == "config":
            parsed.config = text
        elif flag.name == "pon_port_config_file" and text == "":
            parsed.given.pop(flag.setting, None)  # BBSim: a blank file name means the derived ranges
        else:
            parsed.given[flag.setting] = value
            parsed.typed[flag.setting] = text
    return parsed


def listener_names(parsed: Parsed, settings) -> dict[str, str]:
    """How a failed start names each listener that has a bbsim flag (the daemon's listener name -> text): the flag
    and the value typed (``-rest_api_address :50071``), or the flag and the endpoint it was left at."""
    names = {}
    for setting in LISTENER_FIELDS:
        flag = FLAG_OF.get(setting)
        if flag is None:
            continue
        typed = parsed.typed.get(setting)
        names[setting.replace("_", "-")] = (f"-{flag} {typed}" if typed is not None
                                           else f"-{flag} (not given: {getattr(settings, setting)})")
    return names


def config_file(parsed: Parsed, cwd: str = "") -> str | None:
    """The YAML file to read: -config's, else BBSim's default ``configs/bbsim.yaml`` when it exists (BBSim uses its
    defaults when that file is missing), else none. An empty -config reads none."""
    if parsed.config is not None:
        return parsed.config or None
    default = os.path.join(cwd or os.getcwd(), DEFAULT_CONFIG)
    return DEFAULT_CONFIG if os.path.isfile(default) else None


def twistd_argv(parsed: Parsed, config: str | None) -> list[str]:
    """The `twistd --nodaemon --pidfile= oltsim ...` arguments naming the same settings as oltsim's options, for the
    ones an option can say: a bool set to false is left out (the daemon gets the exact settings, see :func:`run`),
    and so is BBSim's -kafkaAddress without -enableEvents (oltsim's --kafka also turns events on)."""
    options = {row.field: row.option for row in SETTINGS if row.option and not row.is_flag}
    switches = {row.field: row.option for row in SETTINGS if row.option and row.is_flag}
    argv = ["--nodaemon", "--pidfile=", "oltsim"]
    if config:
        argv += ["--config", config]
    for setting, value in parsed.given.items():
        if setting == "kafka_address":
            if parsed.given.get("enable_events"):
                argv += ["--kafka", str(value)]
        elif setting == "enable_events":
            if value and "kafka_address" not in parsed.given:
                argv.append("--enable-events")
        elif setting in switches:
            if value:
                argv.append(f"--{switches[setting]}")
        else:
            argv += [f"--{options[setting]}", str(value)]
    return argv


def usage() -> str:
    """The flags as Go's flag package lists them for `bbsim -h` (sorted, kind, meaning, default)."""
    lines = [f"Usage of {PROGRAM} (oltsim):"]
    for flag in sorted(FLAGS, key=lambda f: f.name):
        kind = {"string": " string", "int": " int", "uint": " uint", "bool": ""}[flag.kind]
        lines.append(f"  -{flag.name}{kind}")
        default = ""
        if flag.kind != "bool" and flag.default not in ("", "0"):
            default = f' (default "{flag.default}")' if flag.kind == "string" else f" (default {flag.default})"
        note = f" [ignored: {flag.ignored}]" if flag.ignored else ""
        lines.append(f"    \t{flag.meaning}{default}{note}")
    return "\n".join(lines) + "\n"


def check(parsed: Parsed, config: str | None):
    """The Settings the daemon will run with, validated as `twistd oltsim` validates them; ConfigError (or
    OltsimError, ValueError) naming the problem."""
    settings = load_settings(parsed.given, config)
    check_buildable(settings)
    check_listeners(settings)
    return settings


def run(argv: list[str], settings, names: dict[str, str] | None = None) -> None:
    """Run `twistd` with ``argv`` in this process, in the foreground, with exactly ``settings`` (which the options
    in ``argv`` describe, bools set to false included); returns when the daemon has stopped. A listener that cannot
    bind is named as ``names`` says (`listener_names`: bbsim's flags), by `bbsim`."""
    from twisted.python import usage as twisted_usage
    from twisted.scripts import twistd

    config = twistd.ServerOptions()
    try:
        config.parseOptions(argv)
    except twisted_usage.UsageError as exc:  # not expected: check() has read the same settings
        sys.stderr.write(f"{PROGRAM}: {exc}\n")
        raise SystemExit(2) from None
    config.subOptions.settings = settings
    config.subOptions.program = PROGRAM
    config.subOptions.listener_names = names or {}
    twistd.runApp(config)


def main(argv: list[str] | None = None, stderr: TextIO | None = None, start=None) -> int:
    """The `bbsim` console command: parse, warn once per ignored flag, check, then run the daemon (``start``) until
    it stops. Returns the exit status: 0, or 2 with one line on stderr for a wrong flag or value."""
    argv = sys.argv[1:] if argv is None else list(argv)
    stderr = stderr or sys.stderr
    try:
        parsed = parse(argv)
    except HelpRequested:
        stderr.write(usage())
        return 0
    except FlagError as exc:
        stderr.write(f"{PROGRAM}: {exc}\n")
        return 2
    for name in parsed.ignored:
        stderr.write(f"{PROGRAM}: warning: -{name} is ignored: {BY_NAME[name].ignored}\n")
    config = config_file(parsed)
    try:
        settings = check(parsed, config)
        if not settings.images_dir and os.path.isdir(CONFIGS_DIR):
            parsed.given["images_dir"] = os.path.abspath(CONFIGS_DIR)
            settings = check(parsed, config)
    except (ConfigError, OltsimError, ValueError) as exc:
        name = FLAG_OF.get(getattr(exc, "setting", None) or "")
        prefix = f"-{name}: " if name and getattr(exc, "setting", None) in parsed.given else ""
        stderr.write(f"{PROGRAM}: {prefix}{exc}\n")
        return 2
    stderr.flush()
    if start is None:  # the daemon itself, told how bbsim's flags name its listeners
        start = functools.partial(run, names=listener_names(parsed, settings))
    start(twistd_argv(parsed, config), settings)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
