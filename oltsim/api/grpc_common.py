"""What the gRPC control servicers share: refusals become statuses through `oltsim.status.abort_for` (the one
error table, re-exported here), and servicers whose every RPC delegates to the commands method of the same name
(as REST does)."""
from __future__ import annotations

from oltsim.status import abort_for


def delegating_servicer(base: type, service, commands_name: str) -> type:
    """A servicer class built as `cls(commands)`, whose every RPC of `service` (a ServiceDescriptor) calls
    `commands.<RPC name>(request)` on the reactor thread (served through `oltsim.serving.onloop.on_loop`)."""

    def __init__(self, commands):
        self._commands = commands

    def _abort(self, context, exc):
        abort_for(context, exc)

    namespace = {"__init__": __init__, "_abort": _abort,
                 "__doc__": f"{service.full_name}: every RPC delegates to {commands_name}."}
    for method in service.methods:
        namespace[method.name] = _delegate(method.name, f"{service.full_name}/{method.name} via "
                                                        f"{commands_name}.{method.name}.")
    return type(f"{service.name}Servicer", (base,), namespace)


def _delegate(name: str, doc: str):
    def method(self, request, context):
        return getattr(self._commands, name)(request)
    method.__name__ = name
    method.__doc__ = doc
    return method
