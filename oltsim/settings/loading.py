"""How Settings are built from a table of settings (oltsim.config's SETTINGS and Settings): built-in defaults < the
YAML file < the options given, the services and PON ranges files read, then checked."""
from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from oltsim.settings.bbsimfile import read_config_file
from oltsim.settings.checks import OneOf, between
from oltsim.settings.errors import ConfigError
from oltsim.settings.ponranges import MAX_PONS, PonRange, PonRangesFile, load_pon_ranges
from oltsim.settings.row import KIND_TYPES, Setting
from oltsim.settings.services import ATT_SERVICES, ServiceSpec, load_services
from oltsim.settings.token import resolve_api_token
from oltsim.settings.values import coerce, endpoint_from_address


@dataclass(frozen=True)
class Table:
    """A table of settings: its ``rows``, the frozen class of their values (``settings``) and the check of a whole
    one (``validate``); what derives from the rows (each field's row and kind, the YAML keys of each section)."""

    rows: tuple[Setting, ...]
    settings: type
    validate: Callable[[Any], None]
    #: Settings field -> its row
    of: dict[str, Setting] = field(init=False, repr=False)
    #: Settings field -> its kind; the fields a caller may set through ``given`` or the YAML file -> their kind
    kinds: dict[str, str] = field(init=False, repr=False)
    scalar_kinds: dict[str, str] = field(init=False, repr=False)
    #: section (bbsim, olt) -> YAML key -> Settings field
    keys: dict[str, dict[str, str]] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        derived = {"of": {row.field: row for row in self.rows},
                   "kinds": {row.field: row.kind for row in self.rows},
                   "scalar_kinds": {row.field: row.kind for row in self.rows if row.kind in KIND_TYPES},
                   "keys": {section: {row.yaml[len(section) + 1:]: row.field for row in self.rows
                                      if row.yaml.startswith(f"{section}.")} for section in ("bbsim", "olt")}}
        for name, value in derived.items():
            object.__setattr__(self, name, value)

    def read_value(self, setting: str, raw: object, label: str, where: str = "") -> Any:
        """``raw`` read as its row's kind says (``label`` names it in an error): a one-of value lower-cased, a
        listener as an endpoint string, a secret never echoed."""
        kind = self.scalar_kinds[setting]
        if kind == "secret" and not isinstance(raw, str):
            # Never echo a secret into an error message (and so into logs).
            raise ConfigError(f"{where + ': ' if where else ''}{label} must be a string (quote it in YAML)", setting)
        if kind == "endpoint":
            try:
                return endpoint_from_address(raw)
            except ConfigError as error:
                raise ConfigError(f"{where + ': ' if where else ''}{label}: {error.message}", setting) from None
        value = coerce(kind, raw, label, where)
        if isinstance(self.of[setting].check, OneOf):
            value = value.lower()
        return value


def load(table: Table, given: Mapping[str, object], config_path: str | os.PathLike[str] | None) -> Any:
    """Settings of ``table`` from its defaults, then the YAML file at ``config_path``, then ``given``, validated
    (oltsim.config.load_settings says what ``given`` may hold); raises ConfigError."""
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
        file_values, file_origins, file_warnings = read_config_file(config_path, table.keys, table.kinds,
                                                                    table.read_value)
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
            values["workflow"] = coerce("str", raw, "workflow")
            origins.pop("workflow", None)
        elif key in table.scalar_kinds:
            values[key] = table.read_value(key, raw, key)
            origins.pop(key, None)
        else:
            raise ConfigError(f"unknown option {key!r}")

    resolve_api_token(values, origins)

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

    settings = table.settings(
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
        between("pon", settings.pon, 0, MAX_PONS)
        if ranges_file is not None and settings.pon > ranges_file.num_pon_ports:
            raise ConfigError(
                f"PON ranges file {ranges_file.path}: pon ({settings.pon}) exceeds num_pon_ports "
                f"({ranges_file.num_pon_ports})",
                setting="pon",
            )
        table.validate(settings)
    except ConfigError as error:
        origin = origins.get(error.setting or "")
        if origin:
            raise ConfigError(f"{error.message} (set by {origin})", error.setting) from None
        raise
    return settings


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
