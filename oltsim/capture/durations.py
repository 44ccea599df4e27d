"""Durations as people type them for a capture: ``90``, ``30s``, ``5m``, ``1h30m``, ``1.5h`` (pure; oltsimctl and the
REST surface share it)."""
from __future__ import annotations

import math
import re

_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ms|s|m|h|d)")


def parse_seconds(text: str, what: str = "duration") -> float:
    """Seconds of `text`: a plain number is seconds; else number-unit parts (ms, s, m, h, d) summed, as Go's
    durations. ValueError (saying what `what` takes) for anything else, a negative or an infinite value."""
    value = str(text).strip().lower()
    try:
        seconds = float(value)
    except ValueError:
        seconds = None
    if seconds is None:
        parts = _PART.findall(value)
        if not parts or "".join(n + u for n, u in parts) != value:
            raise ValueError(f"{what} must be seconds or a duration such as 30s, 5m or 1h30m (got {text!r})")
        seconds = sum(float(n) * _UNITS[u] for n, u in parts)
    if not math.isfinite(seconds) or seconds < 0:
        raise ValueError(f"{what} must be a finite number of seconds, 0 or more (got {text!r})")
    return seconds
