"""The data plane's names, pure (no host, no I/O): which UNIs ``--uni-interfaces`` picks and what interfaces are
called.

Which UNIs: ``all``, a count (the first N in PON, ONU, UNI order) or a comma list of ``SERIAL/UNI``. A UNI's
interface is ``<prefix>u<pon>-<onu>-<uni>`` (``u0-1-0``: PON 0, the ONU of index 1 on it, UNI 0); an interface
name is at most :data:`MAX_NAME` characters of :data:`NAME` (Linux's rules). The settings check both when they are
loaded (oltsim.config), the data plane again when it plans its interfaces (oltsim.dataplane.interfaces).
"""
from __future__ import annotations

import re
from collections.abc import Iterator

#: Linux's IFNAMSIZ less the terminating NUL: the longest interface name.
MAX_NAME = 15
#: What an interface (and namespace) name may hold: letters, digits, '_', '.', '-'.
NAME = re.compile(r"[A-Za-z0-9_.-]+")
#: One item of a comma list of SERIAL/UNI.
_UNI_PICK = re.compile(r"\s*([A-Za-z0-9]+)/([0-9]+)\s*")


class UniSpecError(ValueError):
    """A ``--uni-interfaces`` item that is not SERIAL/UNI; ``item`` is that item, stripped."""

    def __init__(self, item: str) -> None:
        super().__init__(f"--uni-interfaces: {item!r} is not SERIAL/UNI (for example BBSM00000001/0); the value is "
                         f"all, a count or a comma list of SERIAL/UNI")
        self.item = item


def uni_picks(value: str) -> Iterator[tuple[str, str, int]]:
    """The items of a comma list of SERIAL/UNI, in order, each as (the item stripped, SERIAL, UNI id); raises
    UniSpecError on reaching an item that is not SERIAL/UNI."""
    for item in value.split(","):
        match = _UNI_PICK.fullmatch(item)
        if not match:
            raise UniSpecError(item.strip())
        yield item.strip(), match.group(1), int(match.group(2))


def parse_uni_spec(text) -> object:
    """``--uni-interfaces``: ``"all"``, a count (int >= 0) or a tuple of (SERIAL, UNI id); ValueError (one line)
    otherwise. None or an empty text is None (no UNI interfaces)."""
    if text is None:
        return None
    if isinstance(text, bool):
        raise ValueError("--uni-interfaces must be all, a count or a comma list of SERIAL/UNI")
    if isinstance(text, int):
        if text < 0:
            raise ValueError(f"--uni-interfaces: a count must be 0 or more (got {text})")
        return text
    value = str(text).strip()
    if not value:
        return None
    if value.lower() == "all":
        return "all"
    if value.isascii() and value.isdigit():
        return int(value)
    return tuple((serial.upper(), uni) for _, serial, uni in uni_picks(value))


def uni_interface_name(prefix: str, pon: int, onu_index: int, uni_id: int) -> str:
    """The interface name of a UNI: ``<prefix>u<pon>-<onu index>-<uni>``."""
    return f"{prefix}u{pon}-{onu_index}-{uni_id}"


def check_name(name: str, what: str, error: type[Exception] = ValueError) -> None:
    """A usable interface (and namespace) name: 1..15 characters of letters, digits, '_', '.', '-', not '.' or
    '..'; otherwise ``error`` (the data plane's HostError) naming `what` (``--nni-interface``,
    ``UNI BBSM00000001/0``)."""
    if not name:
        raise error(f"{what}: the interface name is empty")
    if len(name) > MAX_NAME:
        raise error(f"{what}: interface name {name!r} is {len(name)} characters long; Linux allows at most "
                    f"{MAX_NAME} (a shorter --interface-prefix, or fewer digits in the names)")
    if not NAME.fullmatch(name) or name in (".", ".."):
        raise error(f"{what}: interface name {name!r} may hold only letters, digits, '_', '.' and '-'")
