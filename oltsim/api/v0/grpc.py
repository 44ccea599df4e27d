"""gRPC `legacy.BBSimService` (BBSim's legacy v0 API): every RPC delegates to `V0Commands`."""
from __future__ import annotations

from oltsim._proto import legacy_pb2, legacy_pb2_grpc
from oltsim.api import translate
from oltsim.bridge import on_reactor
from oltsim.model.errors import OltsimError

RPC_NAMES = tuple(m.name for m in legacy_pb2.DESCRIPTOR.services_by_name["BBSimService"].methods)


class _LegacyServicer(legacy_pb2_grpc.BBSimServiceServicer):
    """Every RPC delegates to the `V0Commands` method of the same name (as REST does)."""

    def __init__(self, commands, bridge):
        self._commands = commands
        self._bridge = bridge

    def _abort(self, context, exc):
        # Domain errors get the status of the one table; anything else returns, so the bridge
        # wrapper logs it with a request id and answers INTERNAL.
        if isinstance(exc, OltsimError):
            code, _ = translate.status_for(exc)
            context.abort(code, exc.message)


def _delegate(name: str):
    def method(self, request, context):
        return getattr(self._commands, name)(request)
    method.__name__ = name
    method.__doc__ = f"legacy.BBSimService/{name} via V0Commands.{name}."
    return method


for _name in RPC_NAMES:
    setattr(_LegacyServicer, _name, _delegate(_name))

LegacyServicer = on_reactor(_LegacyServicer)
