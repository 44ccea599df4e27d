"""DMI's own way of answering: a response message with ``status``, ``reason`` and ``reason_detail`` fields."""
from __future__ import annotations

from typing import Any

from dmi import commons_pb2

__all__ = ["answer"]


def answer(cls: type, reason: str = "", detail: str = "", **fields: Any) -> Any:
    """A response of class ``cls`` (a DMI message with a nested ``Reason`` enum): OK_STATUS without ``reason``,
    else ERROR_STATUS with the ``reason`` of that name and ``detail`` as its reason_detail."""
    if not reason:
        return cls(status=commons_pb2.OK_STATUS, **fields)
    return cls(status=commons_pb2.ERROR_STATUS, reason=cls.Reason.Value(reason), reason_detail=detail, **fields)
