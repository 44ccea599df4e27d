"""What the gRPC control servicers share: the one way refusals become statuses, and servicers
whose every RPC delegates to the commands method of the same name (as REST does)."""
from __future__ import annotations

from oltsim.api import translate
from oltsim.model.errors import OltsimError


def abort_for(context, exc) -> None:
    """Answer a refused request with the status of the one error table; anything that is not a
    domain error is left to `oltsim.serving.onloop.failure_status`, which logs it with a request id and answers INTERNAL."""
    if isinstance(exc, OltsimError):
        code, _ = translate.status_for(exc)
        context.abort(code, exc.message)


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
