"""The PON ports' technology and resource id ranges: BBSim's PON ranges file (``pon_port_config_file``), or the
ranges BBSim derives when there is none, read into PonRange values and checked."""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from oltsim.settings.errors import ConfigError, ConfigWarning
from oltsim.settings.values import coerce
from oltsim.settings.yamlfile import kind_of, load_yaml_file
from oltsim.suggest import nearest

PON_TECHNOLOGIES = ("GPON", "XGS-PON")
MAX_PONS = 256

# Resource ranges BBSim derives when there is no PON ranges file (options.go getDefaultPonsConfig).
DEFAULT_ONU_ID_START = 1
DEFAULT_ALLOC_ID_START = 1024
DEFAULT_GEMPORT_ID_START = 1024
GEMPORTS_PER_ALLOC_ID = 8


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
class PonRangesFile:
    """What a PON ranges file holds, already checked to define every PON ``0..num_pon_ports-1`` exactly once."""

    num_pon_ports: int
    ranges: tuple[PonRange, ...]
    path: str
    warnings: tuple[str, ...] = ()


class DerivedRanges(tuple):
    """Marks default PON ranges so that a Settings copied with other sizes derives them again."""


def default_pon_ranges(pon: int, onu: int, uni: int, service_count: int) -> tuple[PonRange, ...]:
    """BBSim's ranges when no PON ranges file is given: one XGS-PON range for all PONs.

    ONU ids ``1..onu``; one alloc id per ONU, UNI and service from 1024; eight GEM ports per alloc id from 1024.
    Zero PONs, ONUs or UNIs count as one so that the ranges stay well formed.
    """
    pons, onus, unis = max(pon, 1), max(onu, 1), max(uni, 1)
    alloc_ids = onus * unis * max(service_count, 1)
    return DerivedRanges((
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


_RANGE_KEYS = {
    "pon_id_range": ("pon_start", "pon_end"),
    "onu_id_range": ("onu_id_start", "onu_id_end"),
    "alloc_id_range": ("alloc_id_start", "alloc_id_end"),
    "gemport_id_range": ("gemport_id_start", "gemport_id_end"),
}


def load_pon_ranges(path: str, base_dir: str = "") -> PonRangesFile:
    """Read a PON ranges file (BBSim's ``pon_port_config_file``) and check that it defines every PON once.

    The file has ``num_pon_ports`` and ``ranges[]`` of ``pon_id_range``, ``tech``, ``onu_id_range``,
    ``alloc_id_range`` and ``gemport_id_range`` (each ``{start, end}``, inclusive). A relative path starts from
    ``base_dir``. Raises ConfigError.
    """
    path = os.path.join(base_dir, os.path.expanduser(path)) if base_dir else os.path.expanduser(path)
    where = f"PON ranges file {path}"
    document = load_yaml_file(path, where)
    if not isinstance(document, dict):
        raise ConfigError(f"{where}: expected a mapping with num_pon_ports: and ranges:, got {kind_of(document)}")
    top = ("num_pon_ports", "ranges")
    warnings = [ConfigWarning(where, path, "config-key-unknown", str(key), nearest(str(key), top))
                for key in document if key not in top]
    if document.get("num_pon_ports") is None:
        raise ConfigError(f"{where}: num_pon_ports is missing")
    number = coerce("int", document["num_pon_ports"], "num_pon_ports", where)
    if not 1 <= number <= MAX_PONS:
        raise ConfigError(f"{where}: num_pon_ports must be between 1 and {MAX_PONS} (got {number})")
    entries = document.get("ranges")
    if not entries:
        raise ConfigError(f"{where}: at least one range is required")
    if not isinstance(entries, list):
        raise ConfigError(f"{where}: ranges must be a list (got {kind_of(entries)})")
    ranges = []
    for index, entry in enumerate(entries, start=1):
        pon_range, entry_warnings = _parse_pon_range(entry, index, where, path)
        ranges.append(pon_range)
        warnings.extend(entry_warnings)
    try:
        check_pon_ranges(ranges, number)
    except ConfigError as error:
        raise ConfigError(f"{where}: {error.message}", "pon_ranges") from None
    return PonRangesFile(num_pon_ports=number, ranges=tuple(ranges), path=path, warnings=tuple(warnings))


def _parse_pon_range(entry: object, index: int, where: str, path: str = "") -> tuple[PonRange, list[str]]:
    label = f"range #{index}"
    if not isinstance(entry, dict):
        raise ConfigError(f"{where}: {label} must be a mapping (got {kind_of(entry)})")
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
            kwargs[field_name] = coerce("int", bounds[bound], f"{label}: {key}.{bound}", where)
    return PonRange(**kwargs), warnings


def check_pon_ranges(ranges: list[PonRange] | tuple[PonRange, ...], number: int | None) -> None:
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


def check_ranges_cover(s: Any) -> None:
    """The PON ranges of settings ``s`` well formed, covering each of its PONs, with room for its ONUs."""
    prefix = f"PON ranges file {s.pon_ranges_path}: " if s.pon_ranges_path else ""
    try:
        check_pon_ranges(s.pon_ranges, None)
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
