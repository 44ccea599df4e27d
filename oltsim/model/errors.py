"""Domain errors raised by model commands; `oltsim.status` maps each to one gRPC and HTTP status."""


class OltsimError(Exception):
    """Base class: `message` is written for people (no FSM internals, no tracebacks)."""

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


class NotFound(OltsimError):
    """An ONU serial, PON, NNI, UNI, ONU id or flow that does not exist."""


class InvalidArgument(OltsimError):
    """A malformed or out-of-range argument."""


class FailedPrecondition(OltsimError):
    """An action that is not legal in the current state."""


class Unavailable(OltsimError):
    """The device cannot serve the request right now (e.g. the OLT is rebooting)."""


class ResourceExhausted(OltsimError):
    """A limit of the simulated OLT is reached (flows per ONU or per OLT); nothing was stored."""
