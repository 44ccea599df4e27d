"""The "did you mean" of every misspelt name a user can type: daemon options, `bbsim` flags, `oltsimctl` and
`bbsimctl` options, config file keys, scenario keys and actions. One helper, so that every surface suggests the same
way (``olt.pon_port: unknown key; did you mean olt.pon_ports?``, ``option --onuu not recognized; did you mean
--onu?``).

Pure (difflib only): oltsimctl imports it without the daemon.
"""
from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable

#: how close a known name must be to be suggested (difflib's ratio): `pon_port` -> `pon_ports`, `onuu` -> `onu`,
#: `sever` -> `server`, `duraton` -> `duration`; not `ca` -> `cb`
CUTOFF = 0.75


def nearest(name: str, known: Iterable[str]) -> str:
    """The known name nearest to a misspelt ``name`` ("" when none is near), case aside: ``pon_port`` ->
    ``pon_ports``."""
    by_case = {candidate.lower(): candidate for candidate in known}
    found = difflib.get_close_matches(name.lower(), list(by_case), n=1, cutoff=CUTOFF)
    return by_case[found[0]] if found else ""


def serial_hint(serial: str, serials: Iterable[str]) -> str:
    """``"; did you mean X?"`` for an ONU serial that is none of `serials`: the one of the same vendor and number,
    zeros aside (a zero too many or too few: ``BBSM0000001`` -> ``BBSM00000001``), else the nearest; "" when none
    is near."""
    serials = list(serials)
    vendor, digits = serial[:4].upper(), serial[4:]
    try:
        number = int(digits, 16)
    except ValueError:
        number = None
    if number is not None:
        for known in serials:
            if known[:4].upper() == vendor:
                try:
                    if int(known[4:], 16) == number:
                        return f"; did you mean {known}?"
                except ValueError:
                    continue
    return did_you_mean(serial, serials)


def did_you_mean(name: str, known: Iterable[str], shown: Callable[[str], str] = str) -> str:
    """``"; did you mean X?"`` for the known name nearest to ``name``, ``X`` written by ``shown`` (``--onu`` for
    an option, ``'duration'`` for a scenario key); "" when none is near. Names are compared bare (no dashes or
    quotes), so that a prefix shared by every candidate does not make short names look alike."""
    found = nearest(name, known)
    return f"; did you mean {shown(found)}?" if found else ""
