"""DMI's own way of answering: a response message with ``status``, ``reason`` and ``reason_detail`` fields."""
from __future__ import annotations

from typing import Any

from dmi import commons_pb2

from oltsim.model.errors import InvalidArgument

__all__ = ["answer", "reconfigure"]


def answer(cls: type, reason: str = "", detail: str = "", **fields: Any) -> Any:
    """A response of class ``cls`` (a DMI message with a nested ``Reason`` enum): OK_STATUS without ``reason``,
    else ERROR_STATUS with the ``reason`` of that name and ``detail`` as its reason_detail."""
    if not reason:
        return cls(status=commons_pb2.OK_STATUS, **fields)
    return cls(status=commons_pb2.ERROR_STATUS, reason=cls.Reason.Value(reason), reason_detail=detail, **fields)


def reconfigure(cls: type, request: Any, config: Any, changes: Any, changed: Any, invalid: str) -> Any:
    """Answer an Update{Events,Metrics}Configuration ``request`` with a ``cls`` response: ``config.reset()`` for
    ``reset_to_default``, else ``config.update(list(changes))``, then ``changed()``. A request with neither operation
    is refused as ``invalid``; a change ``config`` refuses (InvalidArgument) with the error's ``reason`` (default
    ``invalid``) and its message, with nothing applied."""
    operation = request.WhichOneof("operation")
    if operation is None or (operation == "reset_to_default" and not request.reset_to_default):
        return answer(cls, invalid, "the request needs changes or reset_to_default: true")
    if operation == "reset_to_default":
        config.reset()
    else:
        try:
            config.update(list(changes))
        except InvalidArgument as exc:
            return answer(cls, getattr(exc, "reason", invalid), exc.message)
    changed()
    return answer(cls)
