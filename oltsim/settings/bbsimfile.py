"""A BBSim-style config file (``bbsim:`` and ``olt:`` sections) read into Settings values: each key the table of
settings knows (oltsim.config passes its keys, kinds and reader), the BBSim keys oltsim ignores (warned about, or
noted when they are no news to a BBSim user), and misspelt keys (refused, naming the key meant)."""
from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import Any

from oltsim.settings.errors import ConfigError, ConfigWarning
from oltsim.settings.yamlfile import kind_of, load_yaml_file
from oltsim.suggest import nearest

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
IGNORED_AS_BBSIM = frozenset({"bbsim.enable_igmp", "bbsim.enable_dhcp", "bbsim.enable_auth", "bbsim.sadis_format",
                               "olt.device_serial_number"})
_IGNORED_AT_OLTSIM_VALUE = {"bbsim.enable_perf": (False,), "bbsim.log_caller": (False,),
                            "bbsim.cpu_profile": ("",)}
#: section -> the keys of it that oltsim ignores
IGNORED = {"bbsim": _IGNORED_BBSIM_KEYS, "olt": _IGNORED_OLT_KEYS}

#: section -> YAML key -> Settings field, as oltsim.config's table of settings makes it
Keys = Mapping[str, Mapping[str, str]]


def read_config_file(path: str, known: Keys, kinds: Mapping[str, str], read: Callable[[str, Any, str, str], Any]
                     ) -> tuple[dict[str, Any], dict[str, str], list[str]]:
    """Settings values, their origins ("olt.pon_ports in /x.yaml") and warnings from one BBSim-style YAML file:
    ``known`` the fields of each section's keys, ``kinds`` each field's kind, ``read(field, raw, label, where)``
    a scalar value as its row reads it."""
    where = f"config file {path}"
    document = load_yaml_file(path, where)
    values: dict[str, Any] = {}
    origins: dict[str, str] = {}
    warnings: list[str] = []
    if document is None:
        return values, origins, warnings
    if not isinstance(document, dict):
        raise ConfigError(f"{where}: expected a mapping with bbsim: and olt: sections, got {kind_of(document)}")
    sections = tuple((name, known[name], IGNORED[name]) for name in ("bbsim", "olt"))
    for section in document:
        if section not in ("bbsim", "olt", "bbr"):
            warnings.append(ConfigWarning(where, path, "config-section-unknown", str(section),
                                          nearest(str(section), ("bbsim", "olt"))))
    for section, keys, ignored in sections:
        body = document.get(section)
        if body is None:
            continue
        if not isinstance(body, dict):
            raise ConfigError(f"{where}: section {section}: must be a mapping, got {kind_of(body)}")
        for key, raw in body.items():
            label = f"{section}.{key}"
            if key in ignored:
                warnings.append(_ignored_key(where, path, label, raw))
                continue
            if key not in keys:
                misspelt = _misspelt_key(section, key, known)
                if misspelt:
                    # as a misspelt option is: the start stops, naming the key it must have meant
                    raise ConfigError(f"{where}: {label}: unknown key; did you mean {section}.{misspelt}?")
                warnings.append(ConfigWarning(where, path, "config-key-unknown", label,
                                              _nearest_key(section, key, known)))
                continue
            if raw is None:  # "key:" with no value leaves the default, as if the line were commented out
                continue
            setting = keys[key]
            kind = kinds[setting]
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
                values[setting] = read(setting, raw, f"{label}", where)
            origins[setting] = f"{label} in {path}"
    return values, origins, warnings


def _ignored_key(where: str, path: str, label: str, raw: Any) -> ConfigWarning:
    """The warning for a key oltsim ignores, or the debug note when that is no news to a BBSim user."""
    if label in IGNORED_AS_BBSIM:
        return ConfigWarning(where, path, "config-key-ignored", label, "as BBSim ignores it")
    harmless = _IGNORED_AT_OLTSIM_VALUE.get(label, ())
    if harmless and (raw is None or any(raw == value and type(raw) is type(value) for value in harmless)):
        return ConfigWarning(where, path, "config-key-ignored", label, "oltsim does what this value asks anyway")
    return ConfigWarning(where, path, "config-key-unsupported", label)


#: how many edits (a character added, removed, replaced, or two swapped) make a key misspelt rather than unknown
MISSPELT_EDITS = 2


def _misspelt_key(section: str, key: object, keys: Keys) -> str:
    """The key of ``section`` that ``key`` misspells, "" when none is within :data:`MISSPELT_EDITS` edits, case
    aside (``pon_port`` -> ``pon_ports``): the settings oltsim reads and the BBSim keys it ignores, which are both
    known, so that no key of BBSim's own is ever taken for a misspelling. A short key takes fewer edits (fewer than
    its length: ``ip`` misspells ``id``, ``x`` does not). The nearest wins, then the first in alphabetical order."""
    tables = {name: (keys[name], IGNORED[name]) for name in IGNORED}
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


def _nearest_key(section: str, key: str, keys: Keys) -> str:
    """The known key nearest to an unknown ``section.key``: in its own section first, then in the other one
    (``bbsim.pon_ports`` -> ``olt.pon_ports``)."""
    tables = {name: (keys[name], IGNORED[name]) for name in IGNORED}
    for name in sorted(tables, key=lambda name: name != section):
        found = nearest(str(key), [*tables[name][0], *tables[name][1]])
        if found:
            return f"{name}.{found}"
    return ""
