"""Settings of one simulated OLT: built-in defaults < YAML file < options given on the command line.

The YAML file uses BBSim's keys (``bbsim:`` and ``olt:`` sections), its services file schema and its PON ranges
file, so existing BBSim configurations load unchanged. Unlike BBSim, every key in the file is honoured, only the
options the user actually typed override the file, zero is a value like any other, and a configuration that
cannot be built is refused with one :class:`ConfigError` whose message a person can act on.

Every setting is one row of :data:`SETTINGS` (the table of settings, below) and one field of :class:`Settings`:
its field, kind, default, help, `twistd oltsim` option, YAML key, `bbsim` flag and check. Adding a setting is adding
a row there and its field (the comment above the table says how) and using it where the daemon is wired
(oltsim.tap). What the settings are read and checked with lives in oltsim.settings: the YAML and BBSim config
file, the services and PON ranges files, the checks, the access token.

This module is pure: it reads files and builds frozen values, nothing else (no reactor, no sockets).
"""
from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field

# records the capture ring keeps: its default and bound are the capture_size row's (one source)
from oltsim.capture.sizes import DEFAULT_SIZE as DEFAULT_CAPTURE_SIZE, FLOOR_MAX as CAPTURE_FLOOR_MAX, \
    MAX_SIZE as MAX_CAPTURE_SIZE
from oltsim.dataplane.vxlan import MAX_VNI
from oltsim.model.olt import FLOWS_PER_UNI, MAX_FLOWS, MAX_FLOWS_PER_ONU, default_max_flows
from oltsim.settings.checks import AtLeast, Between, NotEmpty, OneOf, Positive, check_events, check_interfaces, \
    check_listeners, check_vxlan
from oltsim.settings.errors import ConfigError, ConfigWarning, strict_error
from oltsim.settings.loading import Table, load
from oltsim.settings.ponranges import MAX_PONS, DerivedRanges, PonRange, PonRangesFile, check_ranges_cover, \
    default_pon_ranges, load_pon_ranges
# the kinds a row may have, read here by validate() and the table's tests
from oltsim.settings.row import FILE_KINDS as _FILE_KINDS, KIND_TYPES as _KIND_TYPES, Setting  # noqa: F401
from oltsim.settings.services import ATT_SERVICES, BUILTIN_SERVICES, ServiceSpec, ServicesFile, load_services, \
    validate_service, validate_services
from oltsim.settings.token import check_api_token
from oltsim.settings.values import DerivedCount as _DerivedCount, endpoint_from_address

__all__ = ["ATT_SERVICES", "BUILTIN_SERVICES", "SETTINGS", "SETTING_OF", "LISTENER_FIELDS", "OPTION_OF", "AtLeast",
           "Between", "ConfigError", "ConfigWarning", "NotEmpty", "OneOf", "PonRange", "PonRangesFile", "Positive",
           "ServiceSpec", "ServicesFile", "Setting", "Settings", "default_pon_ranges", "endpoint_from_address",
           "load_pon_ranges", "load_services", "load_settings", "strict_error", "validate", "validate_service"]

CONTROLLED_ACTIVATIONS = ("default", "only-onu", "only-pon", "both")
API_REVISIONS = ("extended", "base")
BP_FORMATS = ("mef", "ietf")
#: The gRPC servers' engine: auto is native (ssl: through its TLS relay), grpcio only where pygrpc-native does
#: not import.
GRPC_ENGINES = ("auto", "native", "grpcio")
#: who drives the OpenOLT side: an external adapter (VOLTHA, bbr) or oltsim's own built-in adapter
ADAPTERS = ("none", "builtin")
LOG_LEVELS = ("trace", "debug", "info", "warn", "warning", "error", "critical")
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
#: connections one listener (REST, SADIS, gRPC) holds open at once, in total and from one peer address
DEFAULT_MAX_CONNECTIONS = 128
DEFAULT_MAX_CONNECTIONS_PER_PEER = 32
#: bytes of response a REST connection may have queued unsent before oltsim stops reading its next requests
DEFAULT_MAX_UNSENT_OUTPUT = 256 * 1024
MAX_REQUEST_BODY = 1024 * 1024 * 1024
MIN_REQUEST_BODY = 1024
#: the largest PON rate a setting may give (bit/s): 100 Gbit/s, past any PON technology's line rate
MAX_PON_RATE = 100 * 10**9


# ---------------------------------------------------------------------------------------------------------------
# The table of settings
#
# One row per setting (SETTINGS, below), declared as a field of Settings (name, type, default) too. Everything else
# about a setting is derived from its row: `twistd oltsim`'s option (Options.optParameters / optFlags in oltsim.tap,
# with the help text and its default), the YAML key of the bbsim: or olt: section, `bbsim`'s flag
# (oltsim.bbsimcmd.FLAGS takes its setting and default from here), the per-field check validate() applies, and the
# table of docs/options.md (tools/gen_options_doc.py prints it; tests/unit/test_settings_table.py fails when the two
# differ).
#
# To add a setting: one row here (``kind``: int, float, bool, rate, str, endpoint, secret or path; ``{default}`` in
# the help is replaced by the default; a bool row with an option is a twistd flag), its field in Settings at the same
# place with the row's default (tests/unit/test_settings_table.py compares them), its use in oltsim.tap, then
# docs/options.md again (docs/development.md shows one). A check of two settings goes in validate() by hand.


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
    # Kafka events, as BBSim's -enableEvents -kafkaAddress -kafkaEventTopic
    Setting("enable_events", "bool", False, "publish events to Kafka (at --kafka, or bbsim.kafka_address)",
            option="enable-events", yaml="bbsim.enable_events", bbsim="enableEvents"),
    Setting("kafka_address", "str", "127.0.0.1:9092", "publish events to the Kafka broker at HOST:PORT (turns "
            "events on; YAML bbsim.enable_events with bbsim.kafka_address, default {default})", option="kafka",
            yaml="bbsim.kafka_address", bbsim="kafkaAddress", bbsim_default=":9092"),
    Setting("kafka_event_topic", "str", "", "Kafka topic of the events (default BBSim-OLT-<olt-id>-Events)",
            option="kafka-event-topic", yaml="bbsim.kafka_event_topic", bbsim="kafkaEventTopic"),
    # built-in adapter and fault scenarios
    Setting("adapter", "str", "none", "who drives the OpenOLT side: none (wait for VOLTHA or bbr) or builtin "
            "(oltsim brings its ONUs up itself); default {default}", option="adapter", yaml="bbsim.adapter",
            check=OneOf(ADAPTERS)),
    Setting("scenario", "path", "", "fault scenario file (docs/scenarios.md) to play once the OLT is up; checked at "
            "start (YAML bbsim.scenario)", option="scenario", yaml="bbsim.scenario"),
    # security: off by default, as BBSim; the token is kept out of repr so that it is never logged
    Setting("api_token", "secret", "", "access token the v1/v0 REST and gRPC APIs and /metrics require as "
            "'Authorization: Bearer TOKEN' (default none: open, as BBSim); prefer --api-token-file",
            option="api-token", yaml="bbsim.api_token"),
    Setting("api_token_file", "path", "", "file holding the access token (kept out of the process list)",
            option="api-token-file", yaml="bbsim.api_token_file"),
    # limits
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
    # capture
    Setting("capture_size", "int", DEFAULT_CAPTURE_SIZE, "frames and annotations the capture ring keeps for "
            "oltsimctl capture and GET /v1/capture: this many (default {default}), or each ONU's bring-up if more "
            f"(420 + 80 a UNI per ONU: 378,880 at 16x32, about 60 MiB once full of a bring-up; {CAPTURE_FLOOR_MAX:,} "
            "at most); 0 turns capture off",
            option="capture-size", yaml="bbsim.capture_size", check=Between(0, MAX_CAPTURE_SIZE)),
    # data plane: real interfaces for UNIs and the NNI (none by default: today's behaviour)
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
    Setting("nni_mtu", "int", 1500, "the largest payload (after the tags) of a frame on the NNI interfaces; a "
            "larger frame is dropped and counted as oversize, never cut (default {default}; jumbo frames up to "
            "16000)", option="nni-mtu", yaml="bbsim.nni_mtu", check=Between(68, 16000)),
    Setting("dataplane_offload", "str", "auto", "auto: the TAP interfaces take the kernel's offloads (a virtio-net "
            "header, partial checksums, TCP GSO super-frames of up to 64 KiB: a TCP stream crosses in 64 KiB "
            "segments), plain frames where the kernel refuses; off: plain frames of at most the MTU (default "
            "{default})", option="dataplane-offload", yaml="bbsim.dataplane_offload", check=OneOf(("auto", "off"))),
    Setting("dataplane_queue_bytes", "int", 1 << 20, "bytes a UNI interface's queue holds before the interface "
            "stops reading (the kernel's TAP queue holds the rest); an NNI's holds 4 times as much (default "
            "{default})", option="dataplane-queue-bytes", yaml="bbsim.dataplane_queue_bytes",
            check=Between(1 << 16, 1 << 28)),
    Setting("pon_rate_up", "rate", 0, "each PON's upstream capacity its T-CONTs share in the data plane's "
            "shaper, bit/s or with a k, M or G suffix (300M); past it each gets its GIR, then its CIR, then a share "
            "(docs/dataplane.md, Bandwidth profiles) (default {default}: the PON's line rate, XGS-PON 9.95328G, GPON "
            "1.24416G)", option="pon-rate-up", yaml="bbsim.pon_rate_up", check=Between(0, MAX_PON_RATE)),
    Setting("pon_rate_down", "rate", 0, "each PON's downstream capacity its downstream schedulers share, as "
            "--pon-rate-up (default {default}: the PON's line rate, XGS-PON 9.95328G, GPON 2.48832G)",
            option="pon-rate-down", yaml="bbsim.pon_rate_down", check=Between(0, MAX_PON_RATE)),
    Setting("attachment", "str", "tap", "what the data plane's UNIs and NNIs are: tap (Linux TAP interfaces, "
            "CAP_NET_ADMIN) or vxlan (VXLAN segments on one UDP port, no privilege; the interface names label them; "
            "docs/dataplane.md, VXLAN attachments) (default {default})", option="attachment",
            yaml="bbsim.attachment", check=OneOf(("tap", "vxlan"))),
    Setting("vxlan_port", "int", 4789, "the UDP port of the VXLAN attachments, where oltsim listens and where it "
            "sends to the remotes (default {default})", option="vxlan-port", yaml="bbsim.vxlan_port",
            check=Between(1, 65535)),
    Setting("vxlan_listen", "str", "", "the address the VXLAN port listens at, IPv4 or IPv6 (default: all, IPv6 and "
            "IPv4)", option="vxlan-listen", yaml="bbsim.vxlan_listen"),
    Setting("vxlan_remote", "str", "", "the one remote address every VNI's frames go to and come from (default: "
            "each VNI's learned from its first datagram)", option="vxlan-remote", yaml="bbsim.vxlan_remote"),
    Setting("vxlan_hold", "float", 300.0, "seconds a learned VXLAN remote is held after its last datagram; datagrams "
            "of its VNI from any other address are dropped until then (default {default})", option="vxlan-hold",
            yaml="bbsim.vxlan_hold", check=Positive()),
    Setting("vxlan_vni_base", "int", 0, "added to every VXLAN attachment's VNI (NNI 1, untagged NNI 2, UNIs 1000 + "
            "their index in PON, ONU, UNI order), keeping several OLTs apart (default {default})",
            option="vxlan-vni-base", yaml="bbsim.vxlan_vni_base", check=Between(0, MAX_VNI)),
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


@dataclass(frozen=True)
class Settings:
    """Everything one oltsim process needs to build its OLT and listeners; build it with :func:`load_settings`.

    Its first fields are the scalar rows of :data:`SETTINGS`, in the table's order, each with its row's default (a
    ``secret`` kept out of repr); then what the files give: the services and their workflow, the PON ranges, the
    files read and their warnings. ``device_id`` is kept as configured (empty means "derive it"); read
    :attr:`device_id_effective` for the id to report, which derives from the effective ``olt_id`` and so stays
    right under ``dataclasses.replace``. ``pon_ranges`` left empty is filled at construction with
    :func:`default_pon_ranges`, and derived again when such a value is copied with ``dataclasses.replace`` (so new
    ``pon``/``onu``/``uni``/``services`` apply); ``max_flows`` not given likewise with
    :func:`oltsim.model.olt.default_max_flows`. Listener fields are Twisted server endpoint strings. Time values
    are seconds unless named ``_ms``.
    """

    # files
    strict_config: bool = False
    # the OLT
    olt_id: int = 0
    pon: int = 1
    onu: int = 1
    uni: int = 4
    pots: int = 0
    nni: int = 1
    nni_speed: int = 10000
    delay_ms: int = 200
    reboot_delay: int = 60
    reboot_grace: float = 5.0
    rediscovery_delay: float = 5.0
    discovery_retry: float = 60.0
    controlled_activation: str = "default"
    api_revision: str = "extended"
    model: str = "asfvolt16"
    vendor: str = "BBSim"
    hardware_version: str = "emulated"
    firmware_version: str = ""
    device_id: str = ""
    port_stats_interval: int = 20
    omci_response_rate: int = 10
    nni_dhcp_trap_vid: int = 0
    # subscribers
    dhcp_retry: bool = False
    auth_retry: bool = False
    eapol_timeout: float = 60.0
    dhcp_timeout: float = 60.0
    # OMCI
    omcc_version: int = 163
    inject_omci_unknown_me: bool = False
    inject_omci_unknown_attributes: bool = False
    # SADIS and images
    images_dir: str = ""
    bp_format: str = "mef"
    sadis_server: bool = True
    sadis_host: str = "bbsim"
    # logs and engines
    log_level: str = "info"
    grpc_engine: str = "auto"
    # listeners
    openolt: str = "tcp:50060"
    grpc_v1: str = "tcp:50070"
    rest_v1: str = "tcp:50071"
    grpc_v0: str = "tcp:50072"
    rest_v0: str = "tcp:50073"
    sadis: str = "tcp:50074"
    dmi: str = "tcp:50075"
    # Kafka events, as BBSim's -enableEvents -kafkaAddress -kafkaEventTopic
    enable_events: bool = False
    kafka_address: str = "127.0.0.1:9092"
    kafka_event_topic: str = ""
    # built-in adapter and fault scenarios
    adapter: str = "none"
    scenario: str = ""
    # security: off by default, as BBSim; the token is kept out of repr so that it is never logged
    api_token: str = field(default="", repr=False)
    api_token_file: str = ""
    # limits
    max_flows: int = _DerivedCount(DEFAULT_MAX_FLOWS)
    max_flows_per_onu: int = DEFAULT_MAX_FLOWS_PER_ONU
    max_request_body: int = DEFAULT_MAX_REQUEST_BODY
    max_api_calls: int = DEFAULT_MAX_API_CALLS
    max_connections: int = DEFAULT_MAX_CONNECTIONS
    max_connections_per_peer: int = DEFAULT_MAX_CONNECTIONS_PER_PEER
    max_unsent_output: int = DEFAULT_MAX_UNSENT_OUTPUT
    # capture
    capture_size: int = DEFAULT_CAPTURE_SIZE
    # data plane: real interfaces for UNIs and the NNI (none by default: today's behaviour)
    uni_interfaces: str = ""
    uni_netns: bool = False
    interface_prefix: str = ""
    nni_interface: str = ""
    nni_untagged_interface: str = ""
    capture_data_frames: bool = False
    nni_mtu: int = 1500
    dataplane_offload: str = "auto"
    dataplane_queue_bytes: int = 1 << 20
    pon_rate_up: int = 0
    pon_rate_down: int = 0
    attachment: str = "tap"
    vxlan_port: int = 4789
    vxlan_listen: str = ""
    vxlan_remote: str = ""
    vxlan_hold: float = 300.0
    vxlan_vni_base: int = 0
    eap_secret: str = field(default="password", repr=False)
    # web power switch (docs/power-switch.md): off by default
    power_switch: str = ""
    power_switch_user: str = "admin"
    power_switch_password: str = field(default="1234", repr=False)
    # what the files give
    services: tuple[ServiceSpec, ...] = ATT_SERVICES
    workflow: str = "att"
    pon_ranges: tuple[PonRange, ...] = ()
    config_path: str | None = None
    services_path: str | None = None
    pon_ranges_path: str | None = None
    warnings: tuple[str, ...] = ()
    #: what the config files hold that oltsim ignores and that is no news to a BBSim user (logged at debug)
    notes: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        # Frozen: the derived default is written once, here, so every reader sees the same tuple.
        if not self.pon_ranges or isinstance(self.pon_ranges, DerivedRanges):
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


def validate(settings: Settings) -> None:
    """Raise ConfigError (with ``setting`` naming the field) if ``settings`` cannot build a working OLT."""
    s = settings
    for row in _CHECKED:
        row.check(row.field, getattr(s, row.field))
    # Checks that involve more than one setting:
    if s.uni + s.pots > MAX_UNI_AND_POTS:
        raise ConfigError(
            f"uni + pots must be at most {MAX_UNI_AND_POTS} (got {s.uni} + {s.pots})", "uni")
    check_events(s)
    check_api_token(s)
    check_interfaces(s)
    check_vxlan(s)
    check_listeners(s, LISTENER_FIELDS)
    validate_services(s.services)
    check_ranges_cover(s)


#: the rows validate() checks one by one, in the table's order
_CHECKED = tuple(row for row in SETTINGS if row.check is not None and row.kind in _KIND_TYPES)
_TABLE = Table(SETTINGS, Settings, validate)
# YAML key -> Settings field.
_BBSIM_KEYS = _TABLE.keys["bbsim"]
_OLT_KEYS = _TABLE.keys["olt"]


def load_settings(given: Mapping[str, object], config_path: str | os.PathLike[str] | None) -> Settings:
    """Build validated Settings from built-in defaults, then the YAML file at ``config_path``, then ``given``.

    ``given`` holds only the options the user actually typed, keyed by Settings field names; values may be typed
    or strings to coerce, and ``None`` counts as not given. ``services`` may be a built-in name (``att``, ``dt``,
    ``dt-fttb``, ``tt``), a services file path or a sequence of ServiceSpec; ``services_path`` is accepted as a
    synonym for a name or path. ``pon_ranges`` may be a sequence of PonRange, ``pon_ranges_path`` a PON ranges
    file. Relative paths given here are relative to the working directory; in the YAML file, relative to the
    file's directory. Raises ConfigError, with a message naming the key or option at fault.
    """
    return load(_TABLE, given, config_path)
