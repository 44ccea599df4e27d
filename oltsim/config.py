"""Settings of one simulated OLT: built-in defaults < YAML file < options given on the command line.

The YAML file uses BBSim's keys (``bbsim:`` and ``olt:`` sections), its services file schema and its PON ranges
file, so existing BBSim configurations load unchanged. Unlike BBSim, every key in the file is honoured, only the
options the user actually typed override the file, zero is a value like any other, and a configuration that
cannot be built is refused with one :class:`ConfigError` whose message a person can act on.

Every setting is one row of :data:`SETTINGS` (the table of settings, below): its Settings field, kind, default,
help, `twistd oltsim` option, YAML key, `bbsim` flag and check. Adding a setting is adding a row there (the comment
above the table says how) and using it where the daemon is wired (oltsim.tap).

This module is pure: it reads files and builds frozen values, nothing else (no reactor, no sockets).
"""
from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass, field, fields, make_dataclass
from importlib import resources
from collections.abc import Iterable, Mapping
from typing import Any

import yaml

# records the capture ring keeps: its default and bound are the capture_size row's (one source)
from oltsim.capture.sizes import DEFAULT_SIZE as DEFAULT_CAPTURE_SIZE, FLOOR_MAX as CAPTURE_FLOOR_MAX, \
    MAX_SIZE as MAX_CAPTURE_SIZE
from oltsim.kafkaaddress import parse_address
from oltsim.model.olt import FLOWS_PER_UNI, MAX_FLOWS, MAX_FLOWS_PER_ONU, default_max_flows
from oltsim.suggest import nearest

TAG_ALLOCATIONS = ("shared", "unique")
PON_TECHNOLOGIES = ("GPON", "XGS-PON")
CONTROLLED_ACTIVATIONS = ("default", "only-onu", "only-pon", "both")
API_REVISIONS = ("extended", "base")
BP_FORMATS = ("mef", "ietf")
#: The gRPC servers' engine: auto is native (ssl: through its TLS relay), grpcio only where pygrpc-native does
#: not import.
GRPC_ENGINES = ("auto", "native", "grpcio")
#: who drives the OpenOLT side: an external adapter (VOLTHA, bbr) or oltsim's own built-in adapter
ADAPTERS = ("none", "builtin")
LOG_LEVELS = ("trace", "debug", "info", "warn", "warning", "error", "critical")
BUILTIN_SERVICES = ("att", "dt", "dt-fttb", "tt")

# Tags are 12-bit VLAN ids; 4096 is the "any" wildcard used by DT's uni_tag_match and c_tag.
MAX_TAG = 4096
MAX_PRIORITY = 7
MAX_PONS = 256
# The ONU serial has one byte for the ONU index and oltsim puts its high bits in the byte before it.
MAX_ONUS_PER_PON = 65535
MAX_UNI_AND_POTS = 15
MAX_NNIS = 16
MAX_OLT_ID = 2**31 - 1
# Hardening limits (README "Limits"): flows an OLT and an ONU may hold (the model's defaults; the OLT's follow its
# size, this many at least), and the largest REST request body.
DEFAULT_MAX_FLOWS = MAX_FLOWS
DEFAULT_MAX_FLOWS_PER_ONU = MAX_FLOWS_PER_ONU
DEFAULT_MAX_REQUEST_BODY = 1024 * 1024
#: control gRPC calls (v1, v0) open at once per server (streams, reflection, calls waiting for their request)
DEFAULT_MAX_API_CALLS = 256
#: connections one listener (REST, SADIS, gRPC) holds open at once, in total and from one peer address (issue 22)
DEFAULT_MAX_CONNECTIONS = 128
DEFAULT_MAX_CONNECTIONS_PER_PEER = 32
#: bytes of response a REST connection may have queued unsent before oltsim stops reading its next requests
DEFAULT_MAX_UNSENT_OUTPUT = 256 * 1024
MAX_REQUEST_BODY = 1024 * 1024 * 1024
MIN_REQUEST_BODY = 1024

# Resource ranges BBSim derives when there is no PON ranges file (options.go getDefaultPonsConfig).
DEFAULT_ONU_ID_START = 1
DEFAULT_ALLOC_ID_START = 1024
DEFAULT_GEMPORT_ID_START = 1024
GEMPORTS_PER_ALLOC_ID = 8

# Server endpoint types that Twisted (and the usual plugins) understand; a value starting with one of these and a
# colon is already an endpoint string, anything else is read as a BBSim "host:port" address.
_ENDPOINT_TYPES = frozenset({"tcp", "tcp6", "ssl", "unix", "systemd", "onion", "le", "lets"})


class ConfigWarning(str):
    """A key or section of a configuration file that oltsim ignores: reads as the message a person acts on
    (``config file /x.yaml: olt.pon_port: unknown key; did you mean olt.pon_ports?``), and carries what the log
    records: ``event`` (``config-key-unknown``, ``config-key-unsupported``, ``config-section-unknown``, or
    ``config-key-ignored`` for a key that is no news to a BBSim user, see :data:`_IGNORED_AS_BBSIM`), ``key``
    (``olt.pon_port``), ``hint`` (the nearest known key, or ""), ``file``, ``text`` (the message without the file)
    and ``level``: ``warn``, or ``debug`` for ``config-key-ignored`` (a note, not a warning: Settings keeps it in
    ``notes``, and --strict-config does not refuse it)."""

    event: str
    key: str
    hint: str
    file: str
    text: str
    level: str

    def __new__(cls, where: str, file: str, event: str, key: str, hint: str = "") -> ConfigWarning:
        level = "warn"
        if event == "config-key-unsupported":
            text = f"{key}: not supported by oltsim, ignored"
        elif event == "config-key-ignored":
            # ``hint`` says why the key is no news: BBSim ignores it too, or its value is what oltsim does anyway
            text, level = f"{key}: ignored, {hint}", "debug"
        else:
            what = "section" if event == "config-section-unknown" else "key"
            text = f"{key}: unknown {what}; did you mean {hint}?" if hint else f"{key}: unknown {what}, ignored"
        warning = super().__new__(cls, f"{where}: {text}")
        warning.event, warning.key, warning.hint, warning.file, warning.text = event, key, hint, file, text
        warning.level = level
        return warning


def strict_error(warnings: Iterable[str]) -> ConfigError:
    """The error ``--strict-config`` makes of a configuration's warnings: the first one, and how many more."""
    warnings = list(warnings)
    more = len(warnings) - 1
    keys = ", ".join(getattr(w, "key", "?") for w in warnings[1:])
    tail = f" (and {more} more: {keys}; errors with --strict-config)" if more else " (an error with --strict-config)"
    return ConfigError(f"{warnings[0]}{tail}")


class ConfigError(Exception):
    """A configuration that cannot be used, with one message for the person who wrote it.

    ``setting`` names the Settings field at fault when there is one, so that the loader can say which file key or
    option set it.
    """

    def __init__(self, message: str, setting: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.setting = setting

    def __str__(self) -> str:
        return self.message


@dataclass(frozen=True, kw_only=True)
class ServiceSpec:
    """One entry of a services file: a service instantiated on every UNI (BBSim's ``ServiceYaml``).

    Keyword-only; ``name`` and both tag allocations (``shared`` or ``unique``) are required, as in BBSim.
    """

    name: str
    c_tag: int = 0
    c_tag_allocation: str
    s_tag: int = 0
    s_tag_allocation: str
    needs_eapol: bool = False
    needs_dhcp: bool = False
    needs_igmp: bool = False
    needs_pppoe: bool = False
    tp_id: int = 0
    uni_tag_match: int = 0
    configure_mac_address: bool = False
    enable_mac_learning: bool = False
    us_pon_c_tag_priority: int = 0
    us_pon_s_tag_priority: int = 0
    ds_pon_c_tag_priority: int = 0
    ds_pon_s_tag_priority: int = 0


@dataclass(frozen=True)
class PonRange:
    """Technology and resource id ranges shared by the PON ports ``pon_start..pon_end`` (both inclusive)."""

    pon_start: int
    pon_end: int
    technology: str
    onu_id_start: int
    onu_id_end: int
    alloc_id_start: int
    alloc_id_end: int
    gemport_id_start: int
    gemport_id_end: int

    def covers(self, pon_id: int) -> bool:
        """Whether PON port ``pon_id`` belongs to this range."""
        return self.pon_start <= pon_id <= self.pon_end

    def describe_pons(self) -> str:
        """The PON ports of this range as a person reads them: ``PON 0`` or ``PONs 0-3``."""
        if self.pon_start == self.pon_end:
            return f"PON {self.pon_start}"
        return f"PONs {self.pon_start}-{self.pon_end}"


@dataclass(frozen=True)
class ServicesFile:
    """What a services file (or built-in services name) holds, and where it was read from."""

    workflow: str
    services: tuple[ServiceSpec, ...]
    path: str
    warnings: tuple[str, ...] = ()


@dataclass(frozen=True)
class PonRangesFile:
    """What a PON ranges file holds, already checked to define every PON ``0..num_pon_ports-1`` exactly once."""

    num_pon_ports: int
    ranges: tuple[PonRange, ...]
    path: str
    warnings: tuple[str, ...] = ()


ATT_SERVICES = (
    ServiceSpec(
        name="hsia",
        c_tag=900,
        c_tag_allocation="unique",
        s_tag=900,
        s_tag_allocation="shared",
        needs_eapol=True,
        needs_dhcp=True,
        tp_id=64,
    ),
)


class _DerivedRanges(tuple):
    """Marks default PON ranges so that a Settings copied with other sizes derives them again."""


class _DerivedCount(int):
    """Marks a default derived from the OLT's size (max_flows; the row's default is the smallest it takes) so that
    Settings derive it from their sizes, again when copied with others; a value given is a plain int and stays."""


def default_pon_ranges(pon: int, onu: int, uni: int, service_count: int) -> tuple[PonRange, ...]:
    """BBSim's ranges when no PON ranges file is given: one XGS-PON range for all PONs.

    ONU ids ``1..onu``; one alloc id per ONU, UNI and service from 1024; eight GEM ports per alloc id from 1024.
    Zero PONs, ONUs or UNIs count as one so that the ranges stay well formed.
    """
    pons, onus, unis = max(pon, 1), max(onu, 1), max(uni, 1)
    alloc_ids = onus * unis * max(service_count, 1)
    return _DerivedRanges((
        PonRange(
            pon_start=0,
            pon_end=pons - 1,
            technology="XGS-PON",
            onu_id_start=DEFAULT_ONU_ID_START,
            onu_id_end=DEFAULT_ONU_ID_START + onus - 1,
            alloc_id_start=DEFAULT_ALLOC_ID_START,
            alloc_id_end=DEFAULT_ALLOC_ID_START + alloc_ids,
            gemport_id_start=DEFAULT_GEMPORT_ID_START,
            gemport_id_end=DEFAULT_GEMPORT_ID_START + alloc_ids * GEMPORTS_PER_ALLOC_ID,
        ),
    ))


# ---------------------------------------------------------------------------------------------------------------
# The table of settings
#
# One row per setting (SETTINGS, below). Everything else about a setting is derived from its row: the Settings field
# (name, type, default), `twistd oltsim`'s option (Options.optParameters / optFlags in oltsim.tap, with the help text
# and its default), the YAML key of the bbsim: or olt: section, `bbsim`'s flag (oltsim.bbsimcmd.FLAGS takes its
# setting and default from here), the per-field check validate() applies, and the table of docs/options.md
# (tools/gen_options_doc.py prints it; tests/unit/test_settings_table.py fails when the two differ).
#
# To add a setting:
#   1. add one row, e.g.
#        Setting("frame_budget", "int", 512, "bytes kept of each captured frame (default {default})",
#                option="frame-budget", yaml="bbsim.frame_budget", check=Between(64, 65535)),
#      (``kind`` says how a value is read: int, float, bool, str, endpoint, secret or path; ``{default}`` in the help
#      is replaced by the default, which is written nowhere else; a bool row with an option is a twistd flag);
#   2. use ``settings.frame_budget`` where the daemon is wired (oltsim.tap);
#   3. run ``python tools/gen_options_doc.py > docs/options.md``.
# A check that involves two settings (uni + pots, a broker only with events on) goes in validate() by hand.


@dataclass(frozen=True)
class Between:
    """The value must be between ``low`` and ``high``, both included."""

    low: int | float
    high: int | float

    def __call__(self, name: str, value: Any) -> None:
        _between(name, value, self.low, self.high)

    def describe(self) -> str:
        return f"{self.low}..{self.high}"


@dataclass(frozen=True)
class AtLeast:
    """The value must be at least ``low`` (``wording`` replaces "at least LOW" in the message when given)."""

    low: int | float
    wording: str | None = None

    def __call__(self, name: str, value: Any) -> None:
        _at_least(name, value, self.low, self.wording)

    def describe(self) -> str:
        return f">= {self.low}"


@dataclass(frozen=True)
class Positive:
    """The value must be greater than 0."""

    def __call__(self, name: str, value: Any) -> None:
        _positive(name, value)

    def describe(self) -> str:
        return "> 0"


@dataclass(frozen=True)
class OneOf:
    """The value (read lower-cased) must be one of ``choices``."""

    choices: tuple[str, ...]

    def __call__(self, name: str, value: Any) -> None:
        _one_of(name, value, self.choices)

    def describe(self) -> str:
        return ", ".join(self.choices)


@dataclass(frozen=True)
class NotEmpty:
    """The value must not be the empty string."""

    def __call__(self, name: str, value: Any) -> None:
        if not value:
            raise ConfigError(f"{name} must not be empty", name)

    def describe(self) -> str:
        return "not empty"


#: how a value of each kind is read (from the YAML file, an option, a `bbsim` flag) and its Python type:
#: ``endpoint`` a listener (BBSim's "host:port" or a Twisted endpoint string), ``secret`` a string never echoed in
#: an error or repr, ``path`` a file name that the YAML file gives relative to its own folder. The file rows
#: (``config``, ``services``, ``pon-ranges``) are read by load_settings itself and make no scalar field.
_KIND_TYPES: dict[str, type] = {"int": int, "float": float, "bool": bool, "str": str, "endpoint": str,
                                "secret": str, "path": str}
_FILE_KINDS = ("config", "services", "pon-ranges")


@dataclass(frozen=True)
class Setting:
    """One row of the table of settings: the Settings ``field`` and how a value is read (``kind``), its
    ``default``, the ``help`` shown by ``twistd oltsim --help`` and docs/options.md (``{default}`` in it is replaced
    by the default), and where a user sets it: ``option`` (``twistd oltsim --OPTION``, "" for none; a bool setting
    is a flag), ``yaml`` (``bbsim.KEY`` or ``olt.KEY``, "" for none), ``bbsim`` (the ``bbsim -FLAG`` of BBSim's
    command line, "" for none; ``bbsim_default`` is the default `bbsim -h` shows where BBSim's differs from the
    value oltsim's row holds), and ``check``, the per-field check validate() applies."""

    field: str
    kind: str
    default: Any
    help: str
    option: str = ""
    yaml: str = ""
    bbsim: str = ""
    check: Between | AtLeast | Positive | OneOf | NotEmpty | None = None
    short: str | None = None
    bbsim_default: str | None = None

    @property
    def help_text(self) -> str:
        """The help with its default written in."""
        return self.help.format(default=self.default)

    @property
    def is_flag(self) -> bool:
        """Whether the option is a twistd flag (takes no value)."""
        return self.kind == "bool"

    @property
    def shown_default(self) -> str:
        """The default as docs/options.md shows it."""
        if self.kind == "bool":
            return "on" if self.default else "off"
        if self.default in ("", None):
            return ""
        return f"`{self.default}`" if isinstance(self.default, str) else str(self.default)

    @property
    def flag_default(self) -> str:
        """The default `bbsim -h` shows: BBSim's own when it differs, else this row's in Go's words (``false``,
        ``:50060`` for ``tcp:50060``)."""
        if self.bbsim_default is not None:
            return self.bbsim_default
        if self.kind == "bool":
            return "true" if self.default else "false"
        if self.kind == "endpoint":
            return ":" + self.default.split(":", 1)[1]
        return "" if self.default is None else str(self.default)


# The rows, grouped as `twistd oltsim --help` and docs/options.md show them. Checks that name two settings are in
# validate().
SETTINGS: tuple[Setting, ...] = (
    # files
    Setting("config_path", "config", None, "BBSim-compatible YAML config file (bbsim: and olt: sections)",
            option="config", short="c", bbsim="config", bbsim_default="configs/bbsim.yaml"),
    Setting("services", "services", "att", "services file, or a built-in set: att, dt, dt-fttb, tt (default "
            "{default})", option="services", yaml="bbsim.services", bbsim="services",
            bbsim_default="configs/att-services.yaml"),
    Setting("pon_ranges_path", "pon-ranges", None, "PON resource ranges file (BBSim's pon_port_config_file)",
            option="pon-config", yaml="bbsim.pon_port_config_file", bbsim="pon_port_config_file"),
    Setting("strict_config", "bool", False, "refuse to start on a warning about the config files (an unknown or "
            "unsupported key or section) instead of logging it", option="strict-config"),
    # the OLT
    Setting("olt_id", "int", 0, "OLT id: serial BBSIM_OLT_<id>, ONU serials and MACs derive from it (default "
            "{default})", option="olt-id", yaml="olt.id", bbsim="olt_id", check=Between(0, MAX_OLT_ID)),
    Setting("pon", "int", 1, "number of PON ports (default {default})", option="pon", yaml="olt.pon_ports",
            bbsim="pon", check=Between(0, MAX_PONS)),
    Setting("onu", "int", 1, "ONUs per PON port (default {default})", option="onu", yaml="olt.onus_per_port",
            bbsim="onu", check=Between(0, MAX_ONUS_PER_PON)),
    Setting("uni", "int", 4, "Ethernet UNIs per ONU (default {default})", option="uni", yaml="olt.uni_ports",
            bbsim="uni", check=Between(0, MAX_UNI_AND_POTS)),
    Setting("pots", "int", 0, "POTS ports per ONU (default {default})", option="pots", yaml="olt.pots_ports",
            bbsim="pots", check=Between(0, MAX_UNI_AND_POTS)),
    Setting("nni", "int", 1, "number of NNI ports (default {default})", option="nni", yaml="olt.nni_ports",
            bbsim="nni", check=Between(1, MAX_NNIS)),
    Setting("nni_speed", "int", 10000, "NNI speed reported in Mbps (default {default})", option="nni-speed",
            yaml="olt.nni_speed", bbsim="nni_speed", check=AtLeast(1, "greater than 0")),
    Setting("delay_ms", "int", 200, "ONU discovery delay per ONU index on its PON, ms (default {default}; 0 means "
            "none)", option="delay", yaml="bbsim.delay", bbsim="delay", check=AtLeast(0)),
    Setting("reboot_delay", "int", 60, "seconds the OLT stays down on reboot (default {default})",
            option="reboot-delay", yaml="olt.reboot_delay", bbsim="oltRebootDelay", check=AtLeast(0)),
    Setting("reboot_grace", "float", 5.0, "seconds after a reboot's start before the OpenOLT endpoint stops "
            "(default {default})", yaml="olt.reboot_grace", check=AtLeast(0)),
    Setting("rediscovery_delay", "float", 5.0, "seconds after DeleteOnu before the ONU is discovered again "
            "(default {default})", yaml="olt.rediscovery_delay", check=AtLeast(0)),
    Setting("discovery_retry", "float", 60.0, "seconds between OnuDiscInd re-sent while an ONU stays discovered "
            "(default {default})", yaml="olt.discovery_retry", check=Positive()),
    Setting("controlled_activation", "str", "default", "controlled activation: default, only-onu, only-pon, both",
            option="ca", yaml="bbsim.controlled_activation", bbsim="ca", check=OneOf(CONTROLLED_ACTIVATIONS)),
    Setting("api_revision", "str", "extended", "REST response shapes: extended or base (default {default})",
            option="api-revision", yaml="bbsim.api_revision", check=OneOf(API_REVISIONS)),
    Setting("model", "str", "asfvolt16", "OLT model reported to the adapter (default {default})",
            yaml="olt.model"),
    Setting("vendor", "str", "BBSim", "OLT vendor reported to the adapter (default {default})", yaml="olt.vendor"),
    Setting("hardware_version", "str", "emulated", "OLT hardware version reported to the adapter (default "
            "{default})", yaml="olt.hardware_version"),
    Setting("firmware_version", "str", "", "OLT firmware version reported to the adapter (default: oltsim's "
            "version)", yaml="olt.firmware_version"),
    Setting("device_id", "str", "", "OLT device id (default 0a:0a:0a:0a:0a:<olt id's low byte in hex>)",
            yaml="olt.device_id"),
    Setting("port_stats_interval", "int", 20, "port statistics interval in seconds (default {default})",
            option="port-stats-interval", yaml="olt.port_stats_interval", check=AtLeast(1, "greater than 0")),
    Setting("omci_response_rate", "int", 10, "OMCI requests answered per 10 (default {default})",
            option="omci-response-rate", yaml="olt.omci_response_rate", bbsim="omci_response_rate",
            check=Between(0, 10)),
    Setting("nni_dhcp_trap_vid", "int", 0, "NNI DHCP trap VLAN reported by GET /v1/olt (default {default})",
            option="nni-dhcp-trap-vid", yaml="olt.nni_dhcp_trap_vid", bbsim="nni_dhcp_trap_vid",
            check=Between(0, 4095)),
    # subscribers
    Setting("dhcp_retry", "bool", False, "restart DHCP after a failed attempt", option="dhcp-retry",
            yaml="bbsim.dhcp_retry", bbsim="dhcpRetry"),
    Setting("auth_retry", "bool", False, "restart EAPOL after a failed attempt", option="auth-retry",
            yaml="bbsim.auth_retry", bbsim="authRetry"),
    Setting("eapol_timeout", "float", 60.0, "seconds an EAPOL attempt may take (default {default})",
            yaml="bbsim.eapol_timeout", check=Positive()),
    Setting("dhcp_timeout", "float", 60.0, "seconds a DHCP attempt may take (default {default})",
            yaml="bbsim.dhcp_timeout", check=Positive()),
    # OMCI
    Setting("omcc_version", "int", 163, "OMCC version the ONUs report in ONU2-G (default {default})",
            option="omcc-version", yaml="bbsim.omcc_version", bbsim="omccVersion", check=Between(0, 255)),
    Setting("inject_omci_unknown_me", "bool", False, "add a reported ME of an unknown class to the MIB upload (as "
            "BBSim's -injectOmciUnknownMe)", option="inject-omci-unknown-me", yaml="bbsim.inject_omci_unknown_me",
            bbsim="injectOmciUnknownMe"),
    Setting("inject_omci_unknown_attributes", "bool", False, "add unknown attributes to a reported ME of the MIB "
            "upload (as BBSim's -injectOmciUnknownAttributes)", option="inject-omci-unknown-attributes",
            yaml="bbsim.inject_omci_unknown_attributes", bbsim="injectOmciUnknownAttributes"),
    # SADIS and images
    Setting("images_dir", "str", "", "folder of ONU software images served on the SADIS port as GET /images/<file> "
            "(default: the packaged configs folder)", option="images-dir", yaml="bbsim.images_dir"),
    Setting("bp_format", "str", "mef", "bandwidth profile format: mef or ietf (default {default})",
            option="bp-format", yaml="bbsim.bp_format", bbsim="bp_format", check=OneOf(BP_FORMATS)),
    Setting("sadis_server", "bool", True, "serve SADIS and the ONU images (false: no SADIS listener)",
            yaml="bbsim.sadis_server"),
    Setting("sadis_host", "str", "bbsim", "host name in the SADIS integration URLs (default {default})",
            option="sadis-host", yaml="bbsim.sadis_host", check=NotEmpty()),
    # logs and engines
    Setting("log_level", "str", "info", "trace, debug, info, warn, error (default {default})", option="log-level",
            yaml="bbsim.log_level", bbsim="logLevel", bbsim_default="debug", check=OneOf(LOG_LEVELS)),
    Setting("grpc_engine", "str", "auto", "gRPC engine (OpenOLT, v1, v0): auto (native, grpcio where pygrpc-native "
            "does not import), native (pygrpc-native; ssl: through a TLS relay) or grpcio (grpc.aio); default "
            "{default}", option="grpc-engine", yaml="bbsim.grpc_engine", check=OneOf(GRPC_ENGINES)),
    # listeners
    Setting("openolt", "endpoint", "tcp:50060", "OpenOLT gRPC endpoint (default {default})", option="openolt",
            yaml="bbsim.openolt_address", bbsim="openolt_address"),
    Setting("grpc_v1", "endpoint", "tcp:50070", "control API v1 gRPC endpoint (default {default})",
            option="grpc-v1", yaml="bbsim.api_address", bbsim="api_address"),
    Setting("rest_v1", "endpoint", "tcp:50071", "control API v1 REST endpoint (default {default})",
            option="rest-v1", yaml="bbsim.rest_api_address", bbsim="rest_api_address"),
    Setting("grpc_v0", "endpoint", "tcp:50072", "legacy API v0 gRPC endpoint (default {default})",
            option="grpc-v0", yaml="bbsim.legacy_api_address", bbsim="legacy_api_address"),
    Setting("rest_v0", "endpoint", "tcp:50073", "legacy API v0 REST endpoint (default {default})",
            option="rest-v0", yaml="bbsim.legacy_rest_api_address", bbsim="legacy_rest_api_address"),
    Setting("sadis", "endpoint", "tcp:50074", "SADIS REST endpoint (default {default}; off with "
            "bbsim.sadis_server: false)", option="sadis", yaml="bbsim.sadis_rest_address", bbsim="sadis_rest_address"),
    Setting("dmi", "endpoint", "tcp:50075", "Device Management Interface gRPC endpoint (default {default})",
            option="dmi", yaml="bbsim.dmi_server_address", bbsim="dmi_server_address"),
    # Kafka events (issue 15), as BBSim's -enableEvents -kafkaAddress -kafkaEventTopic
    Setting("enable_events", "bool", False, "publish events to Kafka (at --kafka, or bbsim.kafka_address)",
            option="enable-events", yaml="bbsim.enable_events", bbsim="enableEvents"),
    Setting("kafka_address", "str", "127.0.0.1:9092", "publish events to the Kafka broker at HOST:PORT (turns "
            "events on; YAML bbsim.enable_events with bbsim.kafka_address, default {default})", option="kafka",
            yaml="bbsim.kafka_address", bbsim="kafkaAddress", bbsim_default=":9092"),
    Setting("kafka_event_topic", "str", "", "Kafka topic of the events (default BBSim-OLT-<olt-id>-Events)",
            option="kafka-event-topic", yaml="bbsim.kafka_event_topic", bbsim="kafkaEventTopic"),
    # built-in adapter (issue 16) and fault scenarios (issue 25)
    Setting("adapter", "str", "none", "who drives the OpenOLT side: none (wait for VOLTHA or bbr) or builtin "
            "(oltsim brings its ONUs up itself); default {default}", option="adapter", yaml="bbsim.adapter",
            check=OneOf(ADAPTERS)),
    Setting("scenario", "path", "", "fault scenario file (docs/scenarios.md) to play once the OLT is up; checked at "
            "start (YAML bbsim.scenario)", option="scenario", yaml="bbsim.scenario"),
    # security (issue 5): off by default, as BBSim; the token is kept out of repr so that it is never logged
    Setting("api_token", "secret", "", "access token the v1/v0 REST and gRPC APIs and /metrics require as "
            "'Authorization: Bearer TOKEN' (default none: open, as BBSim); prefer --api-token-file",
            option="api-token", yaml="bbsim.api_token"),
    Setting("api_token_file", "path", "", "file holding the access token (kept out of the process list)",
            option="api-token-file", yaml="bbsim.api_token_file"),
    # limits (issues 13 and 22)
    Setting("max_flows", "int", _DerivedCount(DEFAULT_MAX_FLOWS), "flows the OLT holds at most; FlowAdd beyond is "
            f"RESOURCE_EXHAUSTED (default {{default}} or {FLOWS_PER_UNI} a UNI, PONs x ONUs x UNIs x {FLOWS_PER_UNI}, "
            f"whichever is more: {default_max_flows(16, 32, 4)} at 16x32 with 4 UNIs, room for DT's 16 flows a UNI)",
            option="max-flows", yaml="olt.max_flows", check=AtLeast(1)),
    Setting("max_flows_per_onu", "int", DEFAULT_MAX_FLOWS_PER_ONU, "flows one ONU holds at most (default "
            "{default})", option="max-flows-per-onu", yaml="olt.max_flows_per_onu", check=AtLeast(1)),
    Setting("max_request_body", "int", DEFAULT_MAX_REQUEST_BODY, "largest REST request body in bytes; larger ones "
            "are answered 413 before they are read (default {default})", option="max-request-body",
            yaml="bbsim.max_request_body", check=Between(MIN_REQUEST_BODY, MAX_REQUEST_BODY)),
    Setting("max_api_calls", "int", DEFAULT_MAX_API_CALLS, "control gRPC calls (v1, v0) open at once per server, "
            "streams included; more are refused with RESOURCE_EXHAUSTED (default {default})",
            option="max-api-calls", yaml="bbsim.max_api_calls", check=Between(1, 65536)),
    Setting("max_connections", "int", DEFAULT_MAX_CONNECTIONS, "connections one REST, SADIS or ssl: gRPC listener "
            "holds open at once; one more closes the idlest (default {default})", option="max-connections",
            yaml="bbsim.max_connections", check=Between(1, 1_000_000)),
    Setting("max_connections_per_peer", "int", DEFAULT_MAX_CONNECTIONS_PER_PEER, "connections such a listener "
            "holds open from one peer address; one more closes that address's idlest (default {default})",
            option="max-connections-per-peer", yaml="bbsim.max_connections_per_peer", check=Between(1, 1_000_000)),
    Setting("max_unsent_output", "int", DEFAULT_MAX_UNSENT_OUTPUT, "bytes of response a REST connection may have "
            "unsent before its next requests are left unread (default {default})", option="max-unsent-output",
            yaml="bbsim.max_unsent_output", check=Between(1024, MAX_REQUEST_BODY)),
    # capture (issue 32)
    Setting("capture_size", "int", DEFAULT_CAPTURE_SIZE, "frames and annotations the capture ring keeps for "
            "oltsimctl capture and GET /v1/capture: this many (default {default}), or each ONU's bring-up if more "
            f"(420 + 80 a UNI per ONU: 378,880 at 16x32, about 60 MiB once full of a bring-up; {CAPTURE_FLOOR_MAX:,} "
            "at most); 0 turns capture off",
            option="capture-size", yaml="bbsim.capture_size", check=Between(0, MAX_CAPTURE_SIZE)),
    # data plane (issue 37): real interfaces for UNIs and the NNI (none by default: today's behaviour)
    Setting("uni_interfaces", "str", "", "which UNIs get a Linux TAP interface of their own: all, a count (the "
            "first N in PON, ONU, UNI order) or a comma list of SERIAL/UNI (default none); named "
            "uPON-ONU-UNI after --interface-prefix, e.g. u0-1-0", option="uni-interfaces", yaml="bbsim.uni_interfaces"),
    Setting("uni_netns", "bool", False, "move each UNI interface into a network namespace of its name (made if "
            "absent, removed at stop if oltsim made it)", option="uni-netns", yaml="bbsim.uni_netns"),
    Setting("interface_prefix", "str", "", "prefix of the UNI interfaces' names, keeping two oltsim processes on one "
            "host apart (default none)", option="interface-prefix", yaml="bbsim.interface_prefix"),
    Setting("nni_interface", "str", "", "the NNI as a TAP interface of this name, carrying frames as a real NNI "
            "(S-tag and C-tag as the flows say; default none)", option="nni-interface", yaml="bbsim.nni_interface"),
    Setting("nni_untagged_interface", "str", "", "a TAP interface of this name carrying the NNI's subscriber "
            "traffic with the flows' tags removed, for a DHCP server or ping target on a host without 802.1Q "
            "(default none)", option="nni-untagged-interface", yaml="bbsim.nni_untagged_interface"),
    Setting("capture_data_frames", "bool", False, "put the data plane's frames in the capture ring too (off: "
            "traffic would push the control frames out)", option="capture-data-frames",
            yaml="bbsim.capture_data_frames"),
    Setting("eap_secret", "secret", "password", "EAP-MD5 secret the built-in adapter's authenticator checks a real "
            "supplicant on a UNI interface against (default: password, the simulated supplicants')",
            option="eap-secret", yaml="bbsim.eap_secret", check=NotEmpty()),
    # web power switch (docs/power-switch.md): off by default
    Setting("power_switch", "str", "", "serve a web power switch (Digital Loggers' and Expert Power Control's HTTP "
            "APIs, HTTP Digest) at this endpoint, e.g. tcp:50076: outlet k is the k-th ONU in PON, ONU order, the "
            "one after the last ONU the OLT (default none: off)", option="power-switch",
            yaml="bbsim.power_switch_address"),
    Setting("power_switch_user", "str", "admin", "user name the power switch asks for (default {default})",
            option="power-switch-user", yaml="bbsim.power_switch_user", check=NotEmpty()),
    Setting("power_switch_password", "secret", "1234", "password the power switch asks for (default: 1234, as a "
            "Digital Loggers switch from the factory)", option="power-switch-password",
            yaml="bbsim.power_switch_password", check=NotEmpty()),
)

#: Settings field -> its row
SETTING_OF: dict[str, Setting] = {row.field: row for row in SETTINGS}
#: the listeners' Settings fields, in the order the daemon starts them
LISTENER_FIELDS = tuple(row.field for row in SETTINGS if row.kind == "endpoint")
#: Settings field -> `twistd oltsim` option
OPTION_OF: dict[str, str] = {row.field: row.option for row in SETTINGS if row.option}


def _yaml_keys(section: str) -> dict[str, str]:
    """YAML key of one section -> Settings field."""
    prefix = f"{section}."
    return {row.yaml[len(prefix):]: row.field for row in SETTINGS if row.yaml.startswith(prefix)}


# YAML key -> Settings field.
_BBSIM_KEYS = _yaml_keys("bbsim")
_OLT_KEYS = _yaml_keys("olt")


class _SettingsBehaviour:
    """What Settings does besides holding values (its fields come from the table of settings)."""

    def __post_init__(self) -> None:
        # Frozen: the derived default is written once, here, so every reader sees the same tuple.
        if not self.pon_ranges or isinstance(self.pon_ranges, _DerivedRanges):
            ranges = default_pon_ranges(self.pon, self.onu, self.uni, len(self.services))
            object.__setattr__(self, "pon_ranges", ranges)
        if isinstance(self.max_flows, _DerivedCount):
            derived = _DerivedCount(default_max_flows(self.pon, self.onu, self.uni))
            object.__setattr__(self, "max_flows", derived)

    @property
    def device_id_effective(self) -> str:
        """The configured device id, or ``0a:0a:0a:0a:0a:<olt_id % 256 in hex>`` when none was configured."""
        return self.device_id or "0a:0a:0a:0a:0a:%02x" % (self.olt_id % 256)

    def pon_range_for(self, pon_id: int) -> PonRange:
        """The range holding PON port ``pon_id``; KeyError if none does (validated settings cover every PON)."""
        for pon_range in self.pon_ranges:
            if pon_range.covers(pon_id):
                return pon_range
        raise KeyError(pon_id)


#: Settings: one field per scalar row of the table (in its order, with its default; a ``secret`` kept out of repr),
#: then what the files give: the services and their workflow, the PON ranges, the files read and their warnings.
Settings = make_dataclass(
    "Settings",
    [*((row.field, _KIND_TYPES[row.kind], field(default=row.default, repr=row.kind != "secret"))
       for row in SETTINGS if row.kind in _KIND_TYPES),
     ("services", tuple, field(default=ATT_SERVICES)),
     ("workflow", str, field(default="att")),
     ("pon_ranges", tuple, field(default=())),
     ("config_path", str | None, field(default=None)),
     ("services_path", str | None, field(default=None)),
     ("pon_ranges_path", str | None, field(default=None)),
     ("warnings", tuple, field(default=())),
     #: what the config files hold that oltsim ignores and that is no news to a BBSim user (logged at debug)
     ("notes", tuple, field(default=()))],
    bases=(_SettingsBehaviour,),
    frozen=True,
    namespace={"__module__": __name__, "__doc__": """Everything one oltsim process needs to build its OLT and
    listeners; build it with :func:`load_settings`. Its scalar fields are the rows of :data:`SETTINGS`.

    ``device_id`` is kept as configured (empty means "derive it"); read :attr:`device_id_effective` for the id to
    report, which derives from the effective ``olt_id`` and so stays right under ``dataclasses.replace``.
    ``pon_ranges`` left empty is filled at construction with :func:`default_pon_ranges`, and derived again when
    such a value is copied with ``dataclasses.replace`` (so new ``pon``/``onu``/``uni``/``services`` apply);
    ``max_flows`` not given likewise with :func:`oltsim.model.olt.default_max_flows`.
    Listener fields are Twisted server endpoint strings. Time values are seconds unless named ``_ms``.
    """},
)

# Settings fields a caller may set through ``given`` or the YAML file -> how their values are read.
_SCALAR_KINDS: dict[str, str] = {row.field: row.kind for row in SETTINGS if row.kind in _KIND_TYPES}

# BBSim keys for features oltsim does not have (profiling, ...): accepted so that BBSim files
# load, and reported so that nobody expects them to work.
_IGNORED_BBSIM_KEYS = frozenset({
    "enable_perf", "cpu_profile", "log_caller", "enable_igmp", "enable_dhcp", "enable_auth", "sadis_format",
})
# olt.technology: BBSim's PON technology when no PON ranges file is given; oltsim's PONs take theirs from the
# ranges (XGS-PON by default, GPON through --pon-config), so the key is reported rather than silently dropped.
_IGNORED_OLT_KEYS = frozenset({"device_serial_number", "technology"})
# Of those, the keys that are no news to a BBSim user, logged at debug rather than warned about (BBSim's own
# configs/bbsim.yaml would otherwise give five warnings on every start):
# - keys BBSim's own configs/bbsim.yaml carries and BBSim 1.16.8 reads nothing from: enable_igmp, enable_dhcp,
#   enable_auth and sadis_format have no field in its internal/common/options.go, and olt.device_serial_number is
#   read into OltConfig but never used (the OLT's serial is BBSIM_OLT_<id>);
# - keys BBSim reads, set to the value whose behaviour oltsim has anyway (enable_perf: false keeps flows and
#   schedulers, as oltsim always does; no caller names, no CPU profile). Set otherwise, they stay warnings.
_IGNORED_AS_BBSIM = frozenset({"bbsim.enable_igmp", "bbsim.enable_dhcp", "bbsim.enable_auth", "bbsim.sadis_format",
                               "olt.device_serial_number"})
_IGNORED_AT_OLTSIM_VALUE = {"bbsim.enable_perf": (False,), "bbsim.log_caller": (False,),
                            "bbsim.cpu_profile": ("",)}

_SERVICE_FIELD_KINDS: dict[str, str] = {f.name: f.type for f in fields(ServiceSpec)}
_SERVICE_TAG_FIELDS = ("c_tag", "s_tag", "uni_tag_match")
_SERVICE_PRIORITY_FIELDS = (
    "us_pon_c_tag_priority", "us_pon_s_tag_priority", "ds_pon_c_tag_priority", "ds_pon_s_tag_priority",
)
_RANGE_KEYS = {
    "pon_id_range": ("pon_start", "pon_end"),
    "onu_id_range": ("onu_id_start", "onu_id_end"),
    "alloc_id_range": ("alloc_id_start", "alloc_id_end"),
    "gemport_id_range": ("gemport_id_start", "gemport_id_end"),
}


# ---------------------------------------------------------------------------------------------------------------
# Loading


def load_settings(given: Mapping[str, object], config_path: str | os.PathLike[str] | None) -> Settings:
    """Build validated Settings from built-in defaults, then the YAML file at ``config_path``, then ``given``.

    ``given`` holds only the options the user actually typed, keyed by Settings field names; values may be typed
    or strings to coerce, and ``None`` counts as not given. ``services`` may be a built-in name (``att``, ``dt``,
    ``dt-fttb``, ``tt``), a services file path or a sequence of ServiceSpec; ``services_path`` is accepted as a
    synonym for a name or path. ``pon_ranges`` may be a sequence of PonRange, ``pon_ranges_path`` a PON ranges
    file. Relative paths given here are relative to the working directory; in the YAML file, relative to the
    file's directory. Raises ConfigError, with a message naming the key or option at fault.
    """
    values: dict[str, Any] = {}
    origins: dict[str, str] = {}
    warnings: list[str] = []
    notes: list[str] = []
    services_ref: tuple[str, str] | None = None  # (name or path, directory that relative paths start from)
    services_given: tuple[ServiceSpec, ...] | None = None
    pon_ranges_given: tuple[PonRange, ...] | None = None
    pon_ranges_ref: tuple[str, str] | None = None

    if config_path is not None:
        config_path = os.path.expanduser(os.fspath(config_path))
        file_values, file_origins, file_warnings = _read_config_file(config_path)
        base_dir = os.path.dirname(config_path)
        services_value = file_values.pop("services", None)
        if services_value:
            services_ref = (services_value, base_dir)
        ranges_value = file_values.pop("pon_ranges_path", None)
        if ranges_value:
            pon_ranges_ref = (ranges_value, base_dir)
        values.update(file_values)
        origins.update(file_origins)
        warnings.extend(w for w in file_warnings if getattr(w, "level", "warn") == "warn")
        notes.extend(w for w in file_warnings if getattr(w, "level", "warn") != "warn")

    for key, raw in given.items():
        if raw is None:
            continue
        if key in ("services", "services_path"):
            if isinstance(raw, (str, os.PathLike)):
                services_ref, services_given = (_path_option(raw, key), ""), None
            else:
                services_given, services_ref = _service_sequence(raw), None
        elif key == "pon_ranges_path":
            pon_ranges_ref, pon_ranges_given = (_path_option(raw, key), ""), None
        elif key == "pon_ranges":
            if isinstance(raw, (str, os.PathLike)):
                pon_ranges_ref, pon_ranges_given = (_path_option(raw, key), ""), None
            else:
                pon_ranges_given, pon_ranges_ref = _pon_range_sequence(raw), None
        elif key == "workflow":
            values["workflow"] = _coerce("str", raw, "workflow")
            origins.pop("workflow", None)
        elif key in _SCALAR_KINDS:
            values[key] = _coerce_setting(key, raw, key)
            origins.pop(key, None)
        else:
            raise ConfigError(f"unknown option {key!r}")

    _resolve_api_token(values, origins)

    services: tuple[ServiceSpec, ...] = ATT_SERVICES
    services_path: str | None = None
    workflow = "att"
    if services_given is not None:
        services, workflow = services_given, ""
    elif services_ref is not None:
        loaded = load_services(*services_ref)
        services, services_path, workflow = loaded.services, loaded.path, loaded.workflow
        warnings.extend(loaded.warnings)
    values.setdefault("workflow", workflow)

    ranges_file: PonRangesFile | None = None
    pon_ranges: tuple[PonRange, ...] = ()
    if pon_ranges_given is not None:
        pon_ranges = pon_ranges_given
    elif pon_ranges_ref is not None:
        ranges_file = load_pon_ranges(*pon_ranges_ref)
        pon_ranges = ranges_file.ranges
        warnings.extend(ranges_file.warnings)

    settings = Settings(
        **values,
        services=services,
        pon_ranges=pon_ranges,
        config_path=config_path,
        services_path=services_path,
        pon_ranges_path=ranges_file.path if ranges_file else None,
        warnings=tuple(warnings),
        notes=tuple(notes),
    )
    try:
        _between("pon", settings.pon, 0, MAX_PONS)
        if ranges_file is not None and settings.pon > ranges_file.num_pon_ports:
            raise ConfigError(
                f"PON ranges file {ranges_file.path}: pon ({settings.pon}) exceeds num_pon_ports "
                f"({ranges_file.num_pon_ports})",
                setting="pon",
            )
        validate(settings)
    except ConfigError as error:
        origin = origins.get(error.setting or "")
        if origin:
            raise ConfigError(f"{error.message} (set by {origin})", error.setting) from None
        raise
    return settings


def _read_config_file(path: str) -> tuple[dict[str, Any], dict[str, str], list[str]]:
    """Settings values, their origins ("olt.pon_ports in /x.yaml") and warnings from one BBSim-style YAML file."""
    where = f"config file {path}"
    document = _load_yaml_file(path, where)
    values: dict[str, Any] = {}
    origins: dict[str, str] = {}
    warnings: list[str] = []
    if document is None:
        return values, origins, warnings
    if not isinstance(document, dict):
        raise ConfigError(f"{where}: expected a mapping with bbsim: and olt: sections, got {_kind(document)}")
    sections = (("bbsim", _BBSIM_KEYS, _IGNORED_BBSIM_KEYS), ("olt", _OLT_KEYS, _IGNORED_OLT_KEYS))
    for section in document:
        if section not in ("bbsim", "olt", "bbr"):
            warnings.append(ConfigWarning(where, path, "config-section-unknown", str(section),
                                          nearest(str(section), ("bbsim", "olt"))))
    for section, keys, ignored in sections:
        body = document.get(section)
        if body is None:
            continue
        if not isinstance(body, dict):
            raise ConfigError(f"{where}: section {section}: must be a mapping, got {_kind(body)}")
        for key, raw in body.items():
            label = f"{section}.{key}"
            if key in ignored:
                warnings.append(_ignored_key(where, path, label, raw))
                continue
            if key not in keys:
                misspelt = _misspelt_key(section, key)
                if misspelt:
                    # as a misspelt option is: the start stops, naming the key it must have meant
                    raise ConfigError(f"{where}: {label}: unknown key; did you mean {section}.{misspelt}?")
                warnings.append(ConfigWarning(where, path, "config-key-unknown", label, _nearest_key(section, key)))
                continue
            if raw is None:  # "key:" with no value leaves the default, as if the line were commented out
                continue
            setting = keys[key]
            kind = SETTING_OF[setting].kind
            if kind in ("services", "pon-ranges"):
                if not isinstance(raw, str):
                    raise ConfigError(f"{where}: {label} must be a file name (got {raw!r})", setting)
                values[setting] = os.path.expanduser(raw)
            elif kind == "path":
                if not isinstance(raw, str):
                    raise ConfigError(f"{where}: {label} must be a file name (got {raw!r})", setting)
                # Relative to the config file, as the services file is.
                values[setting] = os.path.join(os.path.dirname(path), os.path.expanduser(raw)) if raw else ""
            else:
                values[setting] = _coerce_setting(setting, raw, f"{label}", where)
            origins[setting] = f"{label} in {path}"
    return values, origins, warnings


def _ignored_key(where: str, path: str, label: str, raw: Any) -> ConfigWarning:
    """The warning for a key oltsim ignores, or the debug note when that is no news to a BBSim user."""
    if label in _IGNORED_AS_BBSIM:
        return ConfigWarning(where, path, "config-key-ignored", label, "as BBSim ignores it")
    harmless = _IGNORED_AT_OLTSIM_VALUE.get(label, ())
    if harmless and (raw is None or any(raw == value and type(raw) is type(value) for value in harmless)):
        return ConfigWarning(where, path, "config-key-ignored", label, "oltsim does what this value asks anyway")
    return ConfigWarning(where, path, "config-key-unsupported", label)


#: how many edits (a character added, removed, replaced, or two swapped) make a key misspelt rather than unknown
MISSPELT_EDITS = 2


def _misspelt_key(section: str, key: object) -> str:
    """The key of ``section`` that ``key`` misspells, "" when none is within :data:`MISSPELT_EDITS` edits, case
    aside (``pon_port`` -> ``pon_ports``): the settings oltsim reads and the BBSim keys it ignores, which are both
    known, so that no key of BBSim's own is ever taken for a misspelling. A short key takes fewer edits (fewer than
    its length: ``ip`` misspells ``id``, ``x`` does not). The nearest wins, then the first in alphabetical order."""
    tables = {"bbsim": (_BBSIM_KEYS, _IGNORED_BBSIM_KEYS), "olt": (_OLT_KEYS, _IGNORED_OLT_KEYS)}
    word = str(key).lower()
    found = sorted((edits, known) for known in (*tables[section][0], *tables[section][1])
                   if (edits := _edits(word, known.lower())) <= min(MISSPELT_EDITS, len(known) - 1))
    return found[0][1] if found else ""


def _edits(a: str, b: str) -> int:
    """The edit distance of ``a`` and ``b``: characters added, removed or replaced, and adjacent ones swapped
    (``pon_prots`` is one edit from ``pon_ports``)."""
    if abs(len(a) - len(b)) > MISSPELT_EDITS:
        return abs(len(a) - len(b))
    before, row = None, list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        current = [i]
        for j, cb in enumerate(b, 1):
            cost = min(row[j] + 1, current[j - 1] + 1, row[j - 1] + (ca != cb))
            if before is not None and i > 1 and j > 1 and ca == b[j - 2] and a[i - 2] == cb:
                cost = min(cost, before[j - 2] + 1)
            current.append(cost)
        before, row = row, current
    return row[-1]


def _nearest_key(section: str, key: str) -> str:
    """The known key nearest to an unknown ``section.key``: in its own section first, then in the other one
    (``bbsim.pon_ports`` -> ``olt.pon_ports``)."""
    tables = {"bbsim": (_BBSIM_KEYS, _IGNORED_BBSIM_KEYS), "olt": (_OLT_KEYS, _IGNORED_OLT_KEYS)}
    for name in sorted(tables, key=lambda name: name != section):
        found = nearest(str(key), [*tables[name][0], *tables[name][1]])
        if found:
            return f"{name}.{found}"
    return ""


def load_services(ref: str, base_dir: str = "") -> ServicesFile:
    """Read the services named ``ref``: a built-in name (``att``, ``dt``, ``dt-fttb``, ``tt``) or a file path.

    A value exactly equal to a built-in name is the built-in (write ``./att`` for a file called ``att``). A relative
    path starts from ``base_dir``. Every service is checked (see :func:`validate_service`); raises ConfigError.
    """
    if ref in BUILTIN_SERVICES:
        resource = resources.files("oltsim").joinpath("data", f"{ref}-services.yaml")
        path, where = str(resource), f"built-in services {ref!r}"
        document = _parse_yaml(resource.read_text(encoding="utf-8"), where)
    else:
        path = os.path.join(base_dir, os.path.expanduser(ref)) if base_dir else os.path.expanduser(ref)
        where = f"services file {path}"
        document = _load_yaml_file(path, where)
    if not isinstance(document, dict):
        raise ConfigError(f"{where}: expected a mapping with workflow: and services:, got {_kind(document)}")
    warnings = [ConfigWarning(where, path, "config-key-unknown", str(key), nearest(str(key), ("workflow", "services")))
                for key in document if key not in ("workflow", "services")]
    workflow = document.get("workflow")
    if workflow is None:
        workflow = ""
    elif not isinstance(workflow, str):
        raise ConfigError(f"{where}: workflow must be a string (got {workflow!r})")
    entries = document.get("services")
    if not entries:
        raise ConfigError(f"{where}: at least one service is required")
    if not isinstance(entries, list):
        raise ConfigError(f"{where}: services must be a list (got {_kind(entries)})")
    services = []
    for index, entry in enumerate(entries, start=1):
        spec, entry_warnings = _parse_service(entry, index, where, path)
        services.append(spec)
        warnings.extend(entry_warnings)
    try:
        _validate_services(services)
    except ConfigError as error:
        raise ConfigError(f"{where}: {error.message}", "services") from None
    return ServicesFile(workflow=workflow, services=tuple(services), path=path, warnings=tuple(warnings))


def _parse_service(entry: object, index: int, where: str, path: str = "") -> tuple[ServiceSpec, list[str]]:
    if not isinstance(entry, dict):
        raise ConfigError(f"{where}: service #{index} must be a mapping (got {_kind(entry)})")
    name = entry.get("name")
    if not isinstance(name, str) or not name:
        raise ConfigError(f"{where}: service #{index} has no name")
    missing = [key for key in ("c_tag_allocation", "s_tag_allocation") if entry.get(key) in (None, "")]
    if missing:
        raise ConfigError(f"{where}: service {name!r} is missing {' and '.join(missing)}")
    warnings = []
    kwargs: dict[str, Any] = {}
    for key, raw in entry.items():
        if key not in _SERVICE_FIELD_KINDS:
            warnings.append(ConfigWarning(where, path, "config-key-unknown", f"service {name!r}: {key}",
                                          nearest(str(key), _SERVICE_FIELD_KINDS)))
        elif raw is not None:
            kwargs[key] = _coerce(_SERVICE_FIELD_KINDS[key], raw, f"service {name!r}: {key}", where)
    spec = ServiceSpec(**kwargs)
    try:
        validate_service(spec)
    except ConfigError as error:
        raise ConfigError(f"{where}: {error.message}", "services") from None
    return spec, warnings


def load_pon_ranges(path: str, base_dir: str = "") -> PonRangesFile:
    """Read a PON ranges file (BBSim's ``pon_port_config_file``) and check that it defines every PON once.

    The file has ``num_pon_ports`` and ``ranges[]`` of ``pon_id_range``, ``tech``, ``onu_id_range``,
    ``alloc_id_range`` and ``gemport_id_range`` (each ``{start, end}``, inclusive). A relative path starts from
    ``base_dir``. Raises ConfigError.
    """
    path = os.path.join(base_dir, os.path.expanduser(path)) if base_dir else os.path.expanduser(path)
    where = f"PON ranges file {path}"
    document = _load_yaml_file(path, where)
    if not isinstance(document, dict):
        raise ConfigError(f"{where}: expected a mapping with num_pon_ports: and ranges:, got {_kind(document)}")
    top = ("num_pon_ports", "ranges")
    warnings = [ConfigWarning(where, path, "config-key-unknown", str(key), nearest(str(key), top))
                for key in document if key not in top]
    if document.get("num_pon_ports") is None:
        raise ConfigError(f"{where}: num_pon_ports is missing")
    number = _coerce("int", document["num_pon_ports"], "num_pon_ports", where)
    if not 1 <= number <= MAX_PONS:
        raise ConfigError(f"{where}: num_pon_ports must be between 1 and {MAX_PONS} (got {number})")
    entries = document.get("ranges")
    if not entries:
        raise ConfigError(f"{where}: at least one range is required")
    if not isinstance(entries, list):
        raise ConfigError(f"{where}: ranges must be a list (got {_kind(entries)})")
    ranges = []
    for index, entry in enumerate(entries, start=1):
        pon_range, entry_warnings = _parse_pon_range(entry, index, where, path)
        ranges.append(pon_range)
        warnings.extend(entry_warnings)
    try:
        _check_pon_ranges(ranges, number)
    except ConfigError as error:
        raise ConfigError(f"{where}: {error.message}", "pon_ranges") from None
    return PonRangesFile(num_pon_ports=number, ranges=tuple(ranges), path=path, warnings=tuple(warnings))


def _parse_pon_range(entry: object, index: int, where: str, path: str = "") -> tuple[PonRange, list[str]]:
    label = f"range #{index}"
    if not isinstance(entry, dict):
        raise ConfigError(f"{where}: {label} must be a mapping (got {_kind(entry)})")
    known = [*_RANGE_KEYS, "tech"]
    warnings = [ConfigWarning(where, path, "config-key-unknown", f"{label}: {key}", nearest(str(key), known))
                for key in entry if key not in known]
    tech = entry.get("tech")
    if tech is None:
        raise ConfigError(f"{where}: {label} is missing tech")
    kwargs: dict[str, Any] = {"technology": tech}
    for key, (start_field, end_field) in _RANGE_KEYS.items():
        bounds = entry.get(key)
        if not isinstance(bounds, dict):
            raise ConfigError(f"{where}: {label} is missing {key} (a mapping with start: and end:)")
        for bound, field_name in (("start", start_field), ("end", end_field)):
            if bounds.get(bound) is None:
                raise ConfigError(f"{where}: {label}: {key} is missing {bound}")
            kwargs[field_name] = _coerce("int", bounds[bound], f"{label}: {key}.{bound}", where)
    return PonRange(**kwargs), warnings


def _load_yaml_file(path: str, where: str) -> Any:
    try:
        with open(path, encoding="utf-8") as stream:
            text = stream.read()
    except FileNotFoundError:
        raise ConfigError(f"{where} does not exist") from None
    except IsADirectoryError:
        raise ConfigError(f"{where} is a directory, not a file") from None
    except UnicodeDecodeError as error:
        raise ConfigError(f"{where} is not UTF-8 text ({error.reason} at byte {error.start})") from None
    except OSError as error:
        raise ConfigError(f"{where} cannot be read: {error.strerror or error}") from None
    return _parse_yaml(text, where)


class _StrictLoader(yaml.SafeLoader):
    """SafeLoader that refuses duplicate mapping keys, which plain PyYAML resolves silently to the last one."""


def _construct_unique_mapping(loader: _StrictLoader, node: yaml.MappingNode, deep: bool = False) -> dict:
    loader.flatten_mapping(node)
    seen: set = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        try:
            duplicate = key in seen
            seen.add(key)
        except TypeError:  # unhashable key: let construct_mapping report it
            continue
        if duplicate:
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {key!r}", key_node.start_mark)
    return loader.construct_mapping(node, deep=deep)


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_unique_mapping)


def _parse_yaml(text: str, where: str) -> Any:
    try:
        return yaml.load(text, Loader=_StrictLoader)  # noqa: S506 - _StrictLoader is a SafeLoader
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        position = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = error.problem or error.context or "syntax error"
        raise ConfigError(f"{where}: invalid YAML{position}: {problem}") from None
    except yaml.YAMLError as error:
        raise ConfigError(f"{where}: invalid YAML: {error}") from None


# ---------------------------------------------------------------------------------------------------------------
# Values


def endpoint_from_address(value: object) -> str:
    """A Twisted server endpoint string for a listener, from an endpoint string or a BBSim-style address.

    ``tcp:...``, ``ssl:...``, ``unix:...`` (and the other endpoint types) pass unchanged. Addresses become TCP
    endpoints: ``":50060"``, ``"0.0.0.0:50060"``, ``"50060"`` and the integer 50060 give ``tcp:50060`` (all
    interfaces); ``"host:50060"`` gives ``tcp:50060:interface=host``; ``"[::]:50060"`` gives ``tcp6:50060`` and
    ``"[::1]:50060"`` gives ``tcp6:50060:interface=\\:\\:1``. Raises ConfigError for anything else.
    """
    if isinstance(value, int) and not isinstance(value, bool):
        return f"tcp:{_port(value, value)}"
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(f"{value!r} is not a listening address (e.g. :50060) or endpoint (e.g. tcp:50060)")
    text = value.strip()
    prefix = text.split(":", 1)[0]
    if ":" in text and prefix.lower() in _ENDPOINT_TYPES:
        return text
    if text.isdigit():
        return f"tcp:{_port(text, value)}"
    match = re.fullmatch(r"\[([0-9A-Fa-f:.%\w]*)\]:(\d+)", text)
    if match:
        host, port = match.group(1), _port(match.group(2), value)
        if host in ("", "::"):
            return f"tcp6:{port}"
        return f"tcp6:{port}:interface={_escape(host)}"
    match = re.fullmatch(r"([^:\s\[\]]*):(\d+)", text)
    if match:
        host, port = match.group(1), _port(match.group(2), value)
        if host in ("", "0.0.0.0"):
            return f"tcp:{port}"
        return f"tcp:{port}:interface={_escape(host)}"
    raise ConfigError(f"{value!r} is not a listening address (e.g. :50060) or endpoint (e.g. tcp:50060)")


def _port(text: object, value: object) -> int:
    port = int(text)  # callers pass digits or an int
    if not 0 <= port <= 65535:
        raise ConfigError(f"{value!r}: port must be between 0 and 65535 (got {port})")
    return port


def _escape(text: str) -> str:
    # Endpoint strings separate arguments with ":" and keys from values with "=".
    return text.replace("\\", "\\\\").replace(":", "\\:").replace("=", "\\=")


def _coerce_setting(setting: str, raw: object, label: str, where: str = "") -> Any:
    """``raw`` read as its row's kind says (``label`` names it in an error): a one-of value lower-cased, a listener
    as an endpoint string, a secret never echoed."""
    kind = _SCALAR_KINDS[setting]
    if kind == "secret" and not isinstance(raw, str):
        # Never echo a secret into an error message (and so into logs).
        raise ConfigError(f"{where + ': ' if where else ''}{label} must be a string (quote it in YAML)", setting)
    if kind == "endpoint":
        try:
            return endpoint_from_address(raw)
        except ConfigError as error:
            raise ConfigError(f"{where + ': ' if where else ''}{label}: {error.message}", setting) from None
    value = _coerce(kind, raw, label, where)
    if isinstance(SETTING_OF[setting].check, OneOf):
        value = value.lower()
    return value


_TRUE = frozenset({"true", "yes", "on", "1"})
_FALSE = frozenset({"false", "no", "off", "0"})


def _coerce(kind: str, raw: object, label: str, where: str = "") -> Any:
    """``raw`` as an int, float, bool or str, or a ConfigError naming ``label`` (and ``where`` when known)."""
    prefix = f"{where}: " if where else ""
    if kind == "int":
        if isinstance(raw, int) and not isinstance(raw, bool):
            return raw
        if isinstance(raw, str):
            try:
                return int(raw.strip())
            except ValueError:
                pass
        raise ConfigError(f"{prefix}{label} must be an integer (got {raw!r})", label)
    if kind == "float":
        value: float | None = None
        if isinstance(raw, (int, float)) and not isinstance(raw, bool):
            value = float(raw)
        elif isinstance(raw, str):
            try:
                value = float(raw.strip())
            except ValueError:
                pass
        if value is None or not math.isfinite(value):
            raise ConfigError(f"{prefix}{label} must be a number (got {raw!r})", label)
        return value
    if kind == "bool":
        if isinstance(raw, bool):
            return raw
        if isinstance(raw, str) and raw.strip().lower() in _TRUE | _FALSE:
            return raw.strip().lower() in _TRUE
        raise ConfigError(f"{prefix}{label} must be true or false (got {raw!r})", label)
    if isinstance(raw, str):
        return raw
    # YAML reads unquoted 1.0 as a float and 10:10:10 as a base-60 integer: refuse rather than guess.
    raise ConfigError(f"{prefix}{label} must be a string (got {raw!r}; quote it in YAML)", label)


def _path_option(raw: object, key: str) -> str:
    path = os.path.expanduser(os.fspath(raw))  # type: ignore[arg-type]
    if not path:
        raise ConfigError(f"{key} must name a file")
    return path


def _service_sequence(raw: object) -> tuple[ServiceSpec, ...]:
    items = tuple(raw) if isinstance(raw, Iterable) else ()
    if not items or not all(isinstance(item, ServiceSpec) for item in items):
        raise ConfigError("services must be a built-in name, a file path or a sequence of ServiceSpec", "services")
    return items


def _pon_range_sequence(raw: object) -> tuple[PonRange, ...]:
    items = tuple(raw) if isinstance(raw, Iterable) else ()
    if not items or not all(isinstance(item, PonRange) for item in items):
        raise ConfigError("pon_ranges must be a file path or a sequence of PonRange", "pon_ranges")
    return items


def _kind(value: object) -> str:
    return {dict: "a mapping", list: "a list", str: "a string", type(None): "nothing"}.get(
        type(value), type(value).__name__)


# ---------------------------------------------------------------------------------------------------------------
# Validation


def validate(settings: Settings) -> None:
    """Raise ConfigError (with ``setting`` naming the field) if ``settings`` cannot build a working OLT."""
    s = settings
    for row in _CHECKED:
        row.check(row.field, getattr(s, row.field))
    # Checks that involve more than one setting:
    if s.uni + s.pots > MAX_UNI_AND_POTS:
        raise ConfigError(
            f"uni + pots must be at most {MAX_UNI_AND_POTS} (got {s.uni} + {s.pots})", "uni")
    if s.enable_events and not s.kafka_address.strip():
        raise ConfigError("kafka_address must name a broker (host:port) when events are enabled", "kafka_address")
    if s.enable_events:
        try:
            parse_address(s.kafka_address)
        except ValueError as exc:
            raise ConfigError(f"kafka_address: {exc}", "kafka_address") from None
    _validate_api_token(s)
    _validate_interfaces(s)
    _validate_listeners(s)
    _validate_services(s.services)
    _validate_pon_ranges(s)


#: the rows validate() checks one by one, in the table's order
_CHECKED = tuple(row for row in SETTINGS if row.check is not None and row.kind in _KIND_TYPES)


def validate_service(spec: ServiceSpec) -> None:
    """Raise ConfigError if one service has an invalid allocation, tag, priority or technology profile id."""
    where = f"service {spec.name!r}"
    if not spec.name:
        raise ConfigError("every service needs a name", "services")
    for key in ("c_tag_allocation", "s_tag_allocation"):
        value = getattr(spec, key)
        if value not in TAG_ALLOCATIONS:
            raise ConfigError(f"{where}: {key} must be shared or unique (got {value!r})", "services")
    for key in _SERVICE_TAG_FIELDS:
        _between(f"{where}: {key}", getattr(spec, key), 0, MAX_TAG, "services")
    for key in _SERVICE_PRIORITY_FIELDS:
        _between(f"{where}: {key}", getattr(spec, key), 0, MAX_PRIORITY, "services")
    _between(f"{where}: tp_id", spec.tp_id, 0, 65535, "services")


def _validate_services(services: tuple[ServiceSpec, ...] | list[ServiceSpec]) -> None:
    if not services:
        raise ConfigError("at least one service is required", "services")
    seen: set[str] = set()
    for spec in services:
        validate_service(spec)
        if spec.name in seen:
            raise ConfigError(f"service name {spec.name!r} is used twice; names must be unique", "services")
        seen.add(spec.name)


def _check_pon_ranges(ranges: list[PonRange] | tuple[PonRange, ...], number: int | None) -> None:
    """Each range well formed and no PON in two ranges; with ``number``, PONs ``0..number-1`` exactly."""
    owner: dict[int, int] = {}
    for index, r in enumerate(ranges, start=1):
        label = f"range #{index} ({r.describe_pons()})" if r.pon_start <= r.pon_end else f"range #{index}"
        if r.technology not in PON_TECHNOLOGIES:
            raise ConfigError(
                f"{label}: tech must be GPON or XGS-PON (got {r.technology!r})", "pon_ranges")
        for key in ("pon", "onu_id", "alloc_id", "gemport_id"):
            start, end = getattr(r, f"{key}_start"), getattr(r, f"{key}_end")
            if start < 0:
                raise ConfigError(f"{label}: {key} range start must not be negative (got {start})", "pon_ranges")
            if start > end:
                raise ConfigError(f"{label}: {key} range start {start} is after its end {end}", "pon_ranges")
        if r.pon_end >= MAX_PONS:
            raise ConfigError(f"{label}: PON ids go up to {MAX_PONS - 1} (got {r.pon_end})", "pon_ranges")
        for pon_id in range(r.pon_start, r.pon_end + 1):
            if number is not None and pon_id >= number:
                raise ConfigError(
                    f"{label}: PON {pon_id} is outside num_pon_ports ({number}: PONs 0-{number - 1})",
                    "pon_ranges")
            if pon_id in owner:
                raise ConfigError(f"PON {pon_id} is defined twice (ranges #{owner[pon_id]} and #{index})",
                                  "pon_ranges")
            owner[pon_id] = index
    if number is not None:
        for pon_id in range(number):
            if pon_id not in owner:
                raise ConfigError(f"PON {pon_id} is not defined in any range", "pon_ranges")


def _validate_pon_ranges(s: Settings) -> None:
    prefix = f"PON ranges file {s.pon_ranges_path}: " if s.pon_ranges_path else ""
    try:
        _check_pon_ranges(s.pon_ranges, None)
        for pon_id in range(s.pon):
            if not any(r.covers(pon_id) for r in s.pon_ranges):
                raise ConfigError(f"PON {pon_id} is not defined in any PON range", "pon")
        for r in s.pon_ranges:
            if r.pon_start >= s.pon:
                continue
            size = r.onu_id_end - r.onu_id_start + 1
            if s.onu > size:
                raise ConfigError(
                    f"onus per PON ({s.onu}) exceeds the ONU id range {r.onu_id_start}..{r.onu_id_end} "
                    f"of {r.describe_pons()}", "onu")
    except ConfigError as error:
        raise ConfigError(prefix + error.message, error.setting) from None


def _validate_listeners(s: Settings) -> None:
    used: dict[str, str] = {}
    for name in LISTENER_FIELDS:
        value = getattr(s, name)
        if not isinstance(value, str) or not value:
            raise ConfigError(f"{name} must be a Twisted endpoint string such as tcp:50060", name)
        if name == "sadis" and not s.sadis_server:
            continue
        # Port 0 asks the OS for a free port, so equal strings only clash when they name a real port.
        if re.fullmatch(r"(?:tcp6?|ssl):0(:.*)?", value):
            continue
        if value in used:
            raise ConfigError(f"{used[value]} and {name} both listen on {value}", name)
        used[value] = name


def _between(name: str, value: int | float, low: int, high: int, setting: str | None = None) -> None:
    if not low <= value <= high:
        raise ConfigError(f"{name} must be between {low} and {high} (got {value})", setting or name)


def _at_least(name: str, value: int | float, low: int, wording: str | None = None) -> None:
    if value < low:
        raise ConfigError(f"{name} must be {wording or f'at least {low}'} (got {value})", name)


def _positive(name: str, value: float) -> None:
    if not value > 0:
        raise ConfigError(f"{name} must be greater than 0 (got {value})", name)


def _one_of(name: str, value: str, allowed: tuple[str, ...]) -> None:
    if value not in allowed:
        raise ConfigError(f"{name} must be one of {', '.join(allowed)} (got {value!r})", name)


# ---------------------------------------------------------------------------------------------------------------
# Access token (issue 5: security options)

#: What an access token may hold: visible ASCII, since it travels in an HTTP header and in gRPC metadata.
_TOKEN = re.compile(r"[\x21-\x7e]+")


def _resolve_api_token(values: dict[str, Any], origins: dict[str, str]) -> None:
    """Make ``api_token`` and ``api_token_file`` one setting, then read the file into ``api_token``.

    The one from the higher-precedence source wins (an option given beats the YAML file); both non-empty from the
    same source is an error. The file holds the token on one line; surrounding whitespace (a Kubernetes secret's
    trailing newline) is dropped.
    """
    if "api_token" in values and "api_token_file" in values:
        token_in_file, path_in_file = "api_token" in origins, "api_token_file" in origins
        if token_in_file == path_in_file:
            if values["api_token"] and values["api_token_file"]:
                raise ConfigError("give api_token or api_token_file, not both", "api_token")
        elif token_in_file:
            values["api_token"] = ""
            origins.pop("api_token", None)
        else:
            values["api_token_file"] = ""
            origins.pop("api_token_file", None)
    path = values.get("api_token_file")
    if path:
        values["api_token"] = read_token_file(path)


def read_token_file(path: str) -> str:
    """The access token held by the file at ``path`` (one line, surrounding whitespace dropped); ConfigError if
    the file cannot be read or holds no token."""
    path = os.path.expanduser(path)
    where = f"api_token_file {path}"
    try:
        with open(path, encoding="utf-8") as stream:
            text = stream.read()
    except FileNotFoundError:
        raise ConfigError(f"{where} does not exist", "api_token_file") from None
    except IsADirectoryError:
        raise ConfigError(f"{where} is a directory, not a file", "api_token_file") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{where} is not UTF-8 text", "api_token_file") from None
    except OSError as error:
        raise ConfigError(f"{where} cannot be read: {error.strerror or error}", "api_token_file") from None
    token = text.strip()
    if not token:
        raise ConfigError(f"{where} is empty", "api_token_file")
    if not _TOKEN.fullmatch(token):
        raise ConfigError(f"{where} must hold the token on one line, printable ASCII without spaces",
                          "api_token_file")
    return token


#: Linux's longest interface name, and what one may hold
MAX_INTERFACE_NAME = 15
_INTERFACE_NAME = re.compile(r"[A-Za-z0-9_.-]*")
_UNI_PICK = re.compile(r"\s*[A-Za-z0-9]+/[0-9]+\s*")


def _validate_interfaces(s: Settings) -> None:
    """The data plane's names (issue 37): --uni-interfaces all, a count or SERIAL/UNI pairs; interface names of at
    most 15 letters, digits, '_', '.', '-' (the longest UNI name the OLT's shape makes included)."""
    spec = s.uni_interfaces.strip()
    if spec and spec.lower() != "all" and not (spec.isascii() and spec.isdigit()):
        seen = set()
        for item in spec.split(","):
            if not _UNI_PICK.fullmatch(item):
                raise ConfigError(f"{item.strip()!r} is not SERIAL/UNI (for example BBSM00000001/0); the UNI "
                                  f"interfaces are all, a count or a comma list of SERIAL/UNI", "uni_interfaces")
            serial, _, uni = item.strip().partition("/")
            if (serial.lower(), int(uni)) in seen:
                raise ConfigError(f"{item.strip()!r} is named twice in the UNI interfaces", "uni_interfaces")
            seen.add((serial.lower(), int(uni)))
    names = [("interface_prefix", s.interface_prefix, f"the prefix {s.interface_prefix!r}"),
             ("nni_interface", s.nni_interface, f"the NNI interface {s.nni_interface!r}"),
             ("nni_untagged_interface", s.nni_untagged_interface,
              f"the untagged NNI interface {s.nni_untagged_interface!r}")]
    if spec:
        longest = f"{s.interface_prefix}u{max(s.pon - 1, 0)}-{s.onu}-{max(s.uni - 1, 0)}"
        names.append(("interface_prefix", longest, f"the UNI interface {longest}"))
    for field_name, name, what in names:
        if not _INTERFACE_NAME.fullmatch(name):
            raise ConfigError(f"{what} may hold only letters, digits, '_', '.' and '-'", field_name)
        if len(name) > MAX_INTERFACE_NAME:
            raise ConfigError(f"{what} would be {len(name)} characters long; Linux allows at most "
                              f"{MAX_INTERFACE_NAME} in an interface name", field_name)
    if s.nni_interface and s.nni_interface == s.nni_untagged_interface:
        raise ConfigError("nni_untagged_interface must differ from nni_interface", "nni_untagged_interface")


def _validate_api_token(s: Settings) -> None:
    if s.api_token and not _TOKEN.fullmatch(s.api_token):
        # The message never repeats the token.
        raise ConfigError("api_token must be printable ASCII without spaces (it is sent in an HTTP header)",
                          "api_token")
