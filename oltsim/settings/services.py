"""The services instantiated on every UNI: a services file (BBSim's schema) or a built-in set (att, dt, dt-fttb,
tt), read into ServiceSpec values and checked."""
from __future__ import annotations

import os
from dataclasses import dataclass, fields
from importlib import resources
from typing import Any

from oltsim.settings.checks import between
from oltsim.settings.errors import ConfigError, ConfigWarning
from oltsim.settings.values import coerce
from oltsim.settings.yamlfile import kind_of, load_yaml_file, parse_yaml
from oltsim.suggest import nearest

TAG_ALLOCATIONS = ("shared", "unique")
BUILTIN_SERVICES = ("att", "dt", "dt-fttb", "tt")

# Tags are 12-bit VLAN ids; 4096 is the "any" wildcard used by DT's uni_tag_match and c_tag.
MAX_TAG = 4096
MAX_PRIORITY = 7
#: The bandwidth profiles oltsim's SADIS serves (BBSim's, in either --bp-format), which a service may name, and
#: the ones a service names when it names none (BBSim's fixed choice for every uniTagList entry).
BANDWIDTH_PROFILES = ("User_Bandwidth1", "User_Bandwidth2", "User_Bandwidth3", "Default")
DEFAULT_UPSTREAM_PROFILE = "User_Bandwidth1"
DEFAULT_DOWNSTREAM_PROFILE = "User_Bandwidth2"
_PROFILE_FIELDS = ("upstream_bandwidth_profile", "downstream_bandwidth_profile")


@dataclass(frozen=True, kw_only=True)
class ServiceSpec:
    """One entry of a services file: a service instantiated on every UNI (BBSim's ``ServiceYaml``).

    Keyword-only; ``name`` and both tag allocations (``shared`` or ``unique``) are required, as in BBSim.
    Beyond BBSim's schema, ``upstream_bandwidth_profile`` and ``downstream_bandwidth_profile`` name the SADIS
    profiles of the service's uniTagList entry (SADIS's ``upstreamBandwidthProfile`` and
    ``downstreamBandwidthProfile``): one name for every UNI, or a list that the UNIs take in turn (see
    :meth:`bandwidth_profiles`); none gives BBSim's ``User_Bandwidth1`` up and ``User_Bandwidth2`` down.
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
    upstream_bandwidth_profile: tuple[str, ...] = ()
    downstream_bandwidth_profile: tuple[str, ...] = ()

    def bandwidth_profiles(self, uni_index: int) -> tuple[str, str]:
        """(upstream, downstream) profile names of the service on the OLT's `uni_index`-th Ethernet UNI (from 0, in
        PON, ONU, UNI order, as unique tags are given): entry `uni_index` modulo the list's length of each list."""
        up = self.upstream_bandwidth_profile or (DEFAULT_UPSTREAM_PROFILE,)
        down = self.downstream_bandwidth_profile or (DEFAULT_DOWNSTREAM_PROFILE,)
        return up[uni_index % len(up)], down[uni_index % len(down)]


@dataclass(frozen=True)
class ServicesFile:
    """What a services file (or built-in services name) holds, and where it was read from."""

    workflow: str
    services: tuple[ServiceSpec, ...]
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


_SERVICE_FIELD_KINDS: dict[str, str] = {f.name: f.type for f in fields(ServiceSpec)}
_SERVICE_TAG_FIELDS = ("c_tag", "s_tag", "uni_tag_match")
_SERVICE_PRIORITY_FIELDS = (
    "us_pon_c_tag_priority", "us_pon_s_tag_priority", "ds_pon_c_tag_priority", "ds_pon_s_tag_priority",
)


def load_services(ref: str, base_dir: str = "") -> ServicesFile:
    """Read the services named ``ref``: a built-in name (``att``, ``dt``, ``dt-fttb``, ``tt``) or a file path.

    A value exactly equal to a built-in name is the built-in (write ``./att`` for a file called ``att``). A relative
    path starts from ``base_dir``. Every service is checked (see :func:`validate_service`); raises ConfigError.
    """
    if ref in BUILTIN_SERVICES:
        resource = resources.files("oltsim").joinpath("data", f"{ref}-services.yaml")
        path, where = str(resource), f"built-in services {ref!r}"
        document = parse_yaml(resource.read_text(encoding="utf-8"), where)
    else:
        path = os.path.join(base_dir, os.path.expanduser(ref)) if base_dir else os.path.expanduser(ref)
        where = f"services file {path}"
        document = load_yaml_file(path, where)
    if not isinstance(document, dict):
        raise ConfigError(f"{where}: expected a mapping with workflow: and services:, got {kind_of(document)}")
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
        raise ConfigError(f"{where}: services must be a list (got {kind_of(entries)})")
    services = []
    for index, entry in enumerate(entries, start=1):
        spec, entry_warnings = _parse_service(entry, index, where, path)
        services.append(spec)
        warnings.extend(entry_warnings)
    try:
        validate_services(services)
    except ConfigError as error:
        raise ConfigError(f"{where}: {error.message}", "services") from None
    return ServicesFile(workflow=workflow, services=tuple(services), path=path, warnings=tuple(warnings))


def _parse_service(entry: object, index: int, where: str, path: str = "") -> tuple[ServiceSpec, list[str]]:
    if not isinstance(entry, dict):
        raise ConfigError(f"{where}: service #{index} must be a mapping (got {kind_of(entry)})")
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
        elif key in _PROFILE_FIELDS and raw is not None:
            kwargs[key] = _profile_names(raw, f"service {name!r}: {key}", where)
        elif raw is not None:
            kwargs[key] = coerce(_SERVICE_FIELD_KINDS[key], raw, f"service {name!r}: {key}", where)
    spec = ServiceSpec(**kwargs)
    try:
        validate_service(spec)
    except ConfigError as error:
        raise ConfigError(f"{where}: {error.message}", "services") from None
    return spec, warnings


def _profile_names(raw: object, label: str, where: str) -> tuple[str, ...]:
    """A profile name or a non-empty list of them, as a tuple of strings; ConfigError otherwise."""
    names = raw if isinstance(raw, list) else [raw]
    if not names or not all(isinstance(n, str) and n for n in names):
        raise ConfigError(f"{where}: {label} must be a bandwidth profile name or a list of them (got {raw!r})",
                          "services")
    return tuple(names)


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
        between(f"{where}: {key}", getattr(spec, key), 0, MAX_TAG, "services")
    for key in _SERVICE_PRIORITY_FIELDS:
        between(f"{where}: {key}", getattr(spec, key), 0, MAX_PRIORITY, "services")
    between(f"{where}: tp_id", spec.tp_id, 0, 65535, "services")
    for key in _PROFILE_FIELDS:
        for name in getattr(spec, key):
            if name not in BANDWIDTH_PROFILES:
                hint = nearest(name, BANDWIDTH_PROFILES)
                raise ConfigError(f"{where}: {key}: unknown bandwidth profile {name!r} (SADIS serves "
                                  f"{', '.join(BANDWIDTH_PROFILES)}){f'; did you mean {hint}?' if hint else ''}",
                                  "services")


def validate_services(services: tuple[ServiceSpec, ...] | list[ServiceSpec]) -> None:
    """Raise ConfigError unless there is at least one service, each valid, no two of one name."""
    if not services:
        raise ConfigError("at least one service is required", "services")
    seen: set[str] = set()
    for spec in services:
        validate_service(spec)
        if spec.name in seen:
            raise ConfigError(f"service name {spec.name!r} is used twice; names must be unique", "services")
        seen.add(spec.name)
