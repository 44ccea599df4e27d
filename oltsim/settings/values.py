"""Values read from text, as the YAML file, an option and a `bbsim` flag give them: integers, numbers, booleans and
strings (coerce), and listeners (endpoint_from_address: a Twisted endpoint string or a BBSim "host:port")."""
from __future__ import annotations

import math
import re
from typing import Any

from oltsim.settings.errors import ConfigError

# Server endpoint types that Twisted (and the usual plugins) understand; a value starting with one of these and a
# colon is already an endpoint string, anything else is read as a BBSim "host:port" address.
_ENDPOINT_TYPES = frozenset({"tcp", "tcp6", "ssl", "unix", "systemd", "onion", "le", "lets"})


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


#: a bit rate's suffixes (decimal, as line rates are given): 300M is 300,000,000 bit/s
_RATE_UNITS = {"": 1, "k": 10**3, "m": 10**6, "g": 10**9}


def bit_rate(raw: object, label: str, prefix: str = "") -> int:
    """``raw`` as bit/s: an integer, or a number with a k, M or G suffix (``300M``, ``2.5G``; "bit/s" or "bps" may
    follow); a ConfigError naming ``label`` otherwise."""
    if isinstance(raw, int) and not isinstance(raw, bool):
        return raw
    if isinstance(raw, str):
        match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([kKmMgG]?)\s*(?:bit/s|bps|b/s)?\s*", raw)
        if match:
            return round(float(match.group(1)) * _RATE_UNITS[match.group(2).lower()])
    raise ConfigError(f"{prefix}{label} must be a rate in bit/s, e.g. 300000000, 300M or 2.5G (got {raw!r})", label)


_TRUE = frozenset({"true", "yes", "on", "1"})
_FALSE = frozenset({"false", "no", "off", "0"})


def coerce(kind: str, raw: object, label: str, where: str = "") -> Any:
    """``raw`` as an int, float, bool, rate (bit/s, `bit_rate`) or str, or a ConfigError naming ``label`` (and
    ``where`` when known)."""
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
    if kind == "rate":
        return bit_rate(raw, label, prefix)
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


class DerivedCount(int):
    """Marks a default derived from the OLT's size (max_flows; the row's default is the smallest it takes) so that
    Settings derive it from their sizes, again when copied with others; a value given is a plain int and stays."""
