"""The SADIS server (BBSim's port 50074): OLT, subscriber and bandwidth-profile records for the
controller's SADIS app, read from the live model on every request.

Record shapes are BBSim's, key for key and in the same order, including which keys are left out:
BBSim marshals its uniTagList and its bandwidth profiles' optional rates with Go's `omitempty`, and
ONOS's SADIS codec reads a missing key differently from a zero (no `ponCTag` is "no VLAN", no
`usPonCTagPriority` is "no PCP" = -1), so a zero or false value is omitted here too. The bytes of a 200
are BBSim's as well (`go_json`): compact, UTF-8, `<`, `>`, `&` escaped as Go escapes them, and a
trailing newline after a subscriber or profile record (BBSim writes those with a `json.Encoder`, `/cfg`
and `/static` with `json.Marshal`). What differs from BBSim is the errors: every refusal is a JSON error
body with a 4xx status (BBSim answers `null` with 200, 422 `{}`, or a bare JSON string), see
docs/in-place-of-bbsim.md.
"""
from __future__ import annotations

import json
import re

from klein import Klein

from oltsim.api.index import render_index
from oltsim.api.restkit import Utf8Only, json_response, render_error
from oltsim.model.errors import InvalidArgument, NotFound

#: The SADIS API versions; v1 serves the configuration, OLT entries and bandwidth profiles only.
VERSIONS = ("v1", "v2")

#: The profiles a subscriber entry names when its services file names none (BBSim's fixed choice); a service's
#: `upstream_bandwidth_profile` / `downstream_bandwidth_profile` name others (oltsim.settings.services).
UPSTREAM_PROFILE = "User_Bandwidth1"
DOWNSTREAM_PROFILE = "User_Bandwidth2"

#: BBSim's bandwidth profiles per `--bp-format`, keys in its JSON order.
BANDWIDTH_PROFILES: dict[str, tuple[dict, ...]] = {
    "mef": (
        {"id": "User_Bandwidth1", "cbs": 10000, "cir": 30000, "air": 100000, "ebs": 1000, "eir": 100000},
        {"id": "User_Bandwidth2", "cbs": 5000, "cir": 100000, "air": 100000, "ebs": 5000, "eir": 100000},
        {"id": "User_Bandwidth3", "cbs": 5000, "cir": 1000000, "air": 100000, "ebs": 5000, "eir": 1000000},
        {"id": "Default", "cbs": 30, "cir": 600, "air": 100000, "ebs": 30, "eir": 400},
    ),
    # Default has a gir of 0, which BBSim leaves out (its optional rates are `omitempty`); so do we.
    # SADIS reads gir into a primitive long, so a missing gir and 0 mean the same to ONOS.
    "ietf": (
        {"id": "User_Bandwidth1", "cbs": 10000, "cir": 30000, "gir": 100000, "pir": 20000, "pbs": 1000},
        {"id": "User_Bandwidth2", "cbs": 5000, "cir": 100000, "gir": 100000, "pir": 30000, "pbs": 5000},
        {"id": "User_Bandwidth3", "cbs": 5000, "cir": 1000000, "gir": 100000, "pir": 40000, "pbs": 5000},
        {"id": "Default", "cbs": 30, "cir": 600, "pir": 32000, "pbs": 30},
    ),
}

_SUBSCRIBER_CACHE = {"enabled": False, "maxsize": 50, "ttl": "PT0m"}
_PROFILE_CACHE = {"enabled": True, "maxsize": 40, "ttl": "PT1m"}

#: VOLTHA's logical (OpenFlow) port number of NNI n is (1 << 24) | n (voltha-lib-go pkg/platform),
#: and ONOS's olt app recognises the NNI by `port.number() == uplinkPort`. This is what BBSim sends
#: since VOL-4411 (16777216 for NNI 0); the OpenOLT-side number of the same NNI (0x100000 + n, in
#: port statistics and alarms) is a different numbering and would hide the NNI from ONOS.
VOLTHA_NNI_PORT_BASE = 1 << 24

_DIGITS = re.compile(r"[0-9]+")

#: What Go's encoding/json escapes inside strings beyond what JSON requires (HTML-safe output).
_GO_ESCAPES = str.maketrans({"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028",
                             "\u2029": "\\u2029"})


def go_json(body, newline: bool = False) -> bytes:
    """``body`` as BBSim's Go server writes it: compact, non-ASCII as UTF-8, ``<``, ``>``, ``&``, U+2028 and U+2029
    as ``\\u`` escapes; with ``newline``, ended by a newline as a ``json.Encoder`` ends it. (These characters can
    only occur inside JSON strings, so translating the whole text escapes exactly them.)"""
    text = json.dumps(body, separators=(",", ":"), ensure_ascii=False).translate(_GO_ESCAPES)
    # a lone surrogate (only an escape in a YAML services file can make one) must not fail the response
    return (text + "\n" if newline else text).encode("utf-8", "replace")


def uplink_port(olt) -> int:
    """The controller-side port number of the OLT's first NNI (what SADIS `uplinkPort` means)."""
    return VOLTHA_NNI_PORT_BASE | (olt.nnis[0].id if olt.nnis else 0)


def olt_entry(olt, olt_ip: str) -> dict:
    """The OLT's SADIS entry; `nniDhcpTrapVid` only when one is configured (as BBSim)."""
    entry = {
        "id": olt.serial,
        "hardwareIdentifier": olt.device_info["device_id"],
        "ipAddress": olt_ip,
        "nasId": olt.serial,
        "uplinkPort": uplink_port(olt),
    }
    if olt.nni_dhcp_trap_vid:
        entry["nniDhcpTrapVid"] = olt.nni_dhcp_trap_vid
    return entry


def uni_tag(service) -> dict:
    """One uniTagList item for `service`: its tags, technology profile and needs, zero values omitted."""
    spec = service.spec
    fields = (
        ("uniTagMatch", spec.uni_tag_match),
        ("ponCTag", service.c_tag),
        ("ponSTag", service.s_tag),
        ("technologyProfileId", spec.tp_id),
        ("upstreamBandwidthProfile", service.upstream_profile),
        ("downstreamBandwidthProfile", service.downstream_profile),
        ("isDhcpRequired", spec.needs_dhcp),
        ("isIgmpRequired", spec.needs_igmp),
        ("isPppoeRequired", spec.needs_pppoe),
        ("configuredMacAddress", service.mac if spec.configure_mac_address else ""),
        ("enableMacLearning", spec.enable_mac_learning),
        ("usPonCTagPriority", spec.us_pon_c_tag_priority),
        ("usPonSTagPriority", spec.us_pon_s_tag_priority),
        ("dsPonCTagPriority", spec.ds_pon_c_tag_priority),
        ("dsPonSTagPriority", spec.ds_pon_s_tag_priority),
        ("serviceName", service.name),
    )
    return {key: value for key, value in fields if value}


def subscriber_id(uni) -> str:
    """`<ONU serial>-<UNI number from 1>`, the id the controller derives from the UNI's port name."""
    return f"{uni.onu.serial}-{uni.id + 1}"


def uni_entry(uni) -> dict:
    """The subscriber entry of an Ethernet UNI: one uniTagList item per service, in services-file order."""
    return {
        "id": subscriber_id(uni),
        "nasPortId": "",
        "circuitId": "",
        "remoteId": "",
        "uniTagList": [uni_tag(service) for service in uni.services],
    }


def _integration(url: str | None, cache: dict) -> dict:
    out: dict = {"url": url} if url else {}
    out["cache"] = dict(cache)
    return out


class SadisRest:
    """The SADIS REST API over one OLT model (instance-bound Klein app).

    `olt_ip` is reported as the OLT's `ipAddress`; `bp_format` (mef|ietf) picks the bandwidth profiles;
    `advertised_host` and `port` build the integration URLs of `/cfg`, which the controller calls back.
    """

    app = Klein()

    def __init__(self, olt, *, olt_ip: str, bp_format: str, advertised_host: str, port: int):
        if bp_format not in BANDWIDTH_PROFILES:
            raise ValueError(f"bp_format must be one of {', '.join(BANDWIDTH_PROFILES)} (got {bp_format!r})")
        self.olt = olt
        self.olt_ip = olt_ip
        self.bp_format = bp_format
        host = f"[{advertised_host}]" if ":" in advertised_host and not advertised_host.startswith("[") \
            else advertised_host
        self.base_url = f"http://{host}:{port}"

    def resource(self):
        """The twisted.web resource to serve (one per listener), refusing a non-UTF-8 URL as JSON."""
        return Utf8Only(self.app.resource())

    # ---- records ---------------------------------------------------------------------------

    @property
    def profiles(self) -> tuple[dict, ...]:
        """The bandwidth profiles of the configured format."""
        return BANDWIDTH_PROFILES[self.bp_format]

    def config(self, version: str) -> dict:
        """`/cfg`: the OLT entry, and where the controller fetches subscribers and profiles."""
        return {
            "sadis": {
                "integration": _integration(f"{self.base_url}/{version}/subscribers/%s", _SUBSCRIBER_CACHE),
                "entries": [olt_entry(self.olt, self.olt_ip)],
            },
            "bandwidthprofile": {
                "integration": _integration(f"{self.base_url}/{version}/bandwidthprofiles/%s", _PROFILE_CACHE),
            },
        }

    def static(self) -> dict:
        """`/v2/static`: every entry inline (OLT, then each Ethernet UNI, PON -> ONU -> UNI) and the profiles."""
        entries = [olt_entry(self.olt, self.olt_ip)]
        for onu in self.olt.onus:
            entries.extend(uni_entry(uni) for uni in onu.unis if uni.kind == "ETH")
        return {
            "sadis": {"integration": _integration(None, _SUBSCRIBER_CACHE), "entries": entries},
            "bandwidthprofile": {
                "integration": _integration(None, _PROFILE_CACHE),
                "entries": [dict(p) for p in self.profiles],
            },
        }

    def subscriber(self, version: str, ident: str) -> dict:
        """The entry for the OLT serial or for `<ONU serial>-<n>`; NotFound / InvalidArgument otherwise."""
        olt = self.olt
        if ident == olt.serial:
            return olt_entry(olt, self.olt_ip)
        serial, number = self._parse_subscriber_id(ident)
        onu = olt.onu_by_serial(serial)
        if version == "v1":
            raise InvalidArgument(f"SADIS v1 subscriber entries are not supported (as in BBSim); "
                                  f"ask for /v2/subscribers/{ident}")
        # More than 9 digits cannot name a UNI; not parsing them keeps huge inputs cheap.
        uni_id = int(number) - 1 if len(number) <= 9 else None
        uni = next((u for u in onu.unis if u.id == uni_id), None)
        if uni is None or uni.kind != "ETH":
            eth = sum(1 for u in onu.unis if u.kind == "ETH")
            span = f"Ethernet UNIs 1..{eth}" if eth else "no Ethernet UNI"
            what = f"UNI {number} of ONU {serial} is a POTS port" if uni is not None \
                else f"ONU {serial} has no UNI {number}"
            raise InvalidArgument(f"subscriber id {ident}: {what}; SADIS entries exist for {span}")
        return uni_entry(uni)

    def _parse_subscriber_id(self, ident: str) -> tuple[str, str]:
        """(ONU serial, UNI number as written) from `<serial>-<n>`, n a positive integer."""
        serial, dash, number = ident.partition("-")
        if not dash or not serial or "-" in number:
            example = next((f" (e.g. {subscriber_id(u)})" for onu in self.olt.onus for u in onu.unis
                            if u.kind == "ETH"), "")
            raise InvalidArgument(f"{ident!r} is neither this OLT's serial ({self.olt.serial}) nor a subscriber "
                                  f"id <ONU serial>-<UNI number from 1>{example}")
        if not _DIGITS.fullmatch(number):
            raise InvalidArgument(f"subscriber id {ident}: the UNI number must be a positive integer "
                                  f"(got {number!r})")
        if number.startswith("0"):
            raise InvalidArgument(f"subscriber id {ident}: UNI numbers start at 1 and have no leading zeros")
        return serial, number

    def profile(self, ident: str) -> dict:
        """The bandwidth profile named `ident` in the configured format; NotFound otherwise."""
        for entry in self.profiles:
            if entry["id"] == ident:
                return dict(entry)
        names = ", ".join(p["id"] for p in self.profiles)
        raise NotFound(f"bandwidth profile {ident} not found (profiles: {names})")

    # ---- routes ----------------------------------------------------------------------------

    @staticmethod
    def _check_version(version: str, supported=VERSIONS) -> None:
        if version not in supported:
            raise NotFound(f"SADIS version {version} is not served here; use {' or '.join(supported)}")

    @app.route("/", methods=["GET"], branch=False)
    def index(self, request):
        """Where to go from the bare address: each version's configuration and the docs (oltsim.api.index)."""
        return render_index(request, "sadis", {f"{version} config": f"/{version}/cfg" for version in VERSIONS})

    @app.route("/<version>/cfg", methods=["GET"])
    def get_config(self, request, version):
        """The controller's starting point: OLT entry plus integration URLs for this version."""
        self._check_version(version)
        return json_response(request, 200, go_json(self.config(version)))

    @app.route("/<version>/static", methods=["GET"])
    def get_static(self, request, version):
        """The whole configuration inline, for controllers that do not call back (v2 only; v1 is 400, as in
        BBSim)."""
        self._check_version(version)
        if version == "v1":
            raise InvalidArgument("SADIS v1 has no static configuration (as in BBSim); ask for /v2/static")
        return json_response(request, 200, go_json(self.static()))

    @app.route("/<version>/subscribers/<ident>", methods=["GET"])
    def get_subscriber(self, request, version, ident):
        """One OLT or UNI entry, what the controller fetches through the `/cfg` subscriber URL."""
        self._check_version(version)
        return json_response(request, 200, go_json(self.subscriber(version, ident), newline=True))

    @app.route("/<version>/bandwidthprofiles/<ident>", methods=["GET"])
    def get_profile(self, request, version, ident):
        """One bandwidth profile, what the controller fetches through the `/cfg` profile URL."""
        self._check_version(version)
        return json_response(request, 200, go_json(self.profile(ident), newline=True))

    @app.handle_errors(Exception)
    def errors(self, request, failure):
        return render_error(request, failure, "sadis")
