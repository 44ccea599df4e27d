"""Objects that stand in front of an OMCI responder, as `twisted.protocols.policies` wraps protocols.

An OMCI handler is an object with ``handle(onu, data: bytes) -> None`` (`oltsim.omci.responder.OmciResponder`, or a
wrapper of one) or such a callable itself. A wrapper has the same method (and is callable) and decides what reaches
the handler it wraps, and when; wrappers stack, so a recorder of what the adapter writes and the fault knobs can each
sit in front without the responder knowing of either. `oltsim.packets.engine.ProtocolEngine` takes the outermost
one's ``handle``.
"""
from __future__ import annotations

from oltsim.omci import codec

__all__ = ["OmciFaultWrapper", "OmciWrapper"]


class OmciWrapper:
    """Passes every frame to `wrapped` (an OMCI handler: an object with ``handle`` or a callable) unchanged: the base
    of wrappers that change some (override `handle`, pass on with `self.pass_on(onu, data)`)."""

    def __init__(self, wrapped) -> None:
        self.wrapped = wrapped
        #: the wrapped handler's entry point, `(onu, data) -> None`
        self.pass_on = getattr(wrapped, "handle", wrapped)

    def handle(self, onu, data: bytes) -> None:
        """Hand `data`, a frame the adapter sent to `onu`, to the wrapped handler."""
        self.pass_on(onu, data)

    def __call__(self, onu, data: bytes) -> None:
        self.handle(onu, data)


class OmciFaultWrapper(OmciWrapper):
    """Applies the ONU's fault knobs (`onu.faults`, `oltsim.model.faults.OnuFaults`) to each frame before the
    wrapped handler sees it: a muted ONU, or one over its own answer rate, ignores the frame; a delayed one gets it
    later, in arrival order, on the ONU's timers. An ONU without knobs costs one attribute check.

    A frame that cannot be OMCI is refused at once (`codec.OmciError`) whatever the knobs, and one for an ONU that
    is not active goes straight on (the wrapped responder drops it): knobs count only requests an active ONU gets."""

    def handle(self, onu, data: bytes) -> None:
        """Hold, drop or pass on one frame the adapter sent to `onu` as its fault knobs say."""
        faults = onu.faults
        if faults is not None:
            codec.parse(data)
            if onu.is_active and faults.hold_omci(self.pass_on, onu, data):
                return                  # muted, over the ONU's own rate, or delayed (oltsim.model.faults)
        self.pass_on(onu, data)
