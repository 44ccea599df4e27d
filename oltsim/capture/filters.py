"""Which records a capture keeps (`CaptureFilter`, `keeps`), and the serial check whose NotFound names the nearest
serial the OLT has (`check_serial`, which the surfaces answer 404 / NOT_FOUND with)."""
from __future__ import annotations

from dataclasses import dataclass, field

from oltsim.capture.records import DATA, EVENT, NNI, OMCI, POINT, PON, SERIAL
from oltsim.model import events
from oltsim.model.errors import NotFound
from oltsim.model.onu import serial_key
from oltsim.suggest import serial_hint


@dataclass(frozen=True)
class CaptureFilter:
    """What a capture keeps. `onus`: serials (any case; empty: every ONU); `pon`: a PON id (None: every PON);
    `omci` / `packets`: only OMCI frames / only UNI and NNI frames (both or neither: all). Annotations are kept
    when they concern a kept ONU or PON, or the whole OLT (a scenario's start, the OLT's state)."""
    onus: frozenset = frozenset()
    pon: int | None = None
    omci: bool = False
    packets: bool = False
    #: the serials as the user wrote them, for messages and file names (`onus` holds their keys)
    named: tuple = field(default=(), compare=False)

    @classmethod
    def of(cls, onus=(), pon=None, omci=False, packets=False) -> "CaptureFilter":
        """A filter from a surface's arguments: serials in any case, `pon` None or an int."""
        named = tuple(dict.fromkeys(s for s in onus if s))
        return cls(frozenset(serial_key(s) for s in named), pon, bool(omci), bool(packets), named)

    @property
    def scoped(self) -> bool:
        """Whether the filter keeps only some ONUs or a PON."""
        return bool(self.onus) or self.pon is not None


def keeps(capture_filter: CaptureFilter, record: tuple, olt, owners) -> bool:
    """Whether `capture_filter` keeps `record` of the ring of `olt`; `owners` (owners.MacOwners) says whose an NNI
    frame is."""
    point = record[POINT]
    if point == OMCI:
        if capture_filter.packets and not capture_filter.omci:
            return False
    elif point != EVENT:
        if capture_filter.omci and not capture_filter.packets:
            return False
    if not capture_filter.scoped:
        return True
    if point == NNI:
        serial, pon = owners.nni_owner(record)
        if not serial:
            return False
    elif point == EVENT:
        serial, pon = record[SERIAL], record[PON]
        if record[DATA].__class__ is events.ScenarioEvent:
            return _scenario_kept(capture_filter, record[DATA].targets, olt)
        if not serial and pon < 0:
            return True          # about the whole OLT
    else:
        serial, pon = record[SERIAL], record[PON]
    if capture_filter.onus and serial_key(serial) not in capture_filter.onus:
        return False
    if capture_filter.pon is not None and pon != capture_filter.pon:
        return False
    return True


def check_serial(olt, serial: str):
    """The ONU of `serial` on `olt`; NotFound naming the nearest serial it has (`ONU BBSM0000001 not found on this
    OLT; did you mean BBSM00000001?`) when it has none of that serial."""
    try:
        return olt.onu_by_serial(serial)
    except NotFound:
        hint = serial_hint(serial, (onu.serial for onu in olt.onus))
        raise NotFound(f"ONU {serial} not found on this OLT{hint or ' (oltsimctl onu list names its ONUs)'}") \
            from None


def _scenario_kept(capture_filter: CaptureFilter, targets: tuple, olt) -> bool:
    """A scenario event is kept when it names a kept ONU or PON, or none at all (the scenario's own start/end)."""
    named = False
    for target in targets:
        if target.startswith("pon "):
            named = True
            if capture_filter.pon is not None and target == f"pon {capture_filter.pon}" and not capture_filter.onus:
                return True
        elif target in ("olt",) or target.startswith("nni "):
            continue
        else:
            named = True
            if serial_key(target) in capture_filter.onus:
                return True
            if capture_filter.pon is not None and not capture_filter.onus:
                try:
                    if olt.onu_by_serial(target).pon.id == capture_filter.pon:
                        return True
                except NotFound:
                    pass
    return not named
