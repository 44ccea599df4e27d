"""The OMCI path of an ONU: the declared interface of an OMCI handler, the one place a frame's octets are parsed, and
the wrappers that stand in front of a responder, as `twisted.protocols.policies` wraps protocols.

An OMCI handler provides `IOmciHandler`: ``handle(onu, frame)`` with `frame` an `oltsim.omci.codec.Frame`, parsed
once where the adapter's octets enter (`receive`, called by the OpenOLT servicer's OmciMsgOut). A wrapper is built
around the handler it stands in front of (``VlanRecorder(OmciFaultWrapper(OmciResponder(...)), vlan_config)``) and
decides what reaches it, and when; so a recorder of what the adapter writes and the fault knobs each sit in front
without the responder knowing of either. `oltsim.tap` composes the chain and hands its outermost handler to the
OLT's devices (`oltsim.model.hub.DeviceHub.omci`).
"""
from __future__ import annotations

from zope.interface import Interface, implementer

from oltsim.omci import codec

__all__ = ["IOmciHandler", "OmciFaultWrapper", "OmciHandler", "OmciWrapper", "receive"]


class IOmciHandler(Interface):
    """Something that takes the OMCI requests an adapter sends to an ONU."""

    def handle(onu, frame):
        """Take `frame` (a parsed `oltsim.omci.codec.Frame`) that the adapter sent to `onu`; answers go out as the
        OLT's OmciIndication events."""


def receive(handler, onu, data) -> None:
    """Parse `data`, the octets of one OMCI frame the adapter sent to `onu`, and hand it to `handler` (an
    `IOmciHandler`); `codec.OmciError` (only) when it cannot be an OMCI frame, before any handler sees it."""
    handler.handle(onu, codec.parse(data))


@implementer(IOmciHandler)
class OmciHandler:
    """The base of every OMCI handler of the chain (the responder and the wrappers in front of it): what a reader, or
    a tool following a frame, finds behind ``wrapped.handle``."""

    def handle(self, onu, frame: codec.Frame) -> None:
        """Take `frame`, a request the adapter sent to `onu`."""
        raise NotImplementedError


class OmciWrapper(OmciHandler):
    """Passes every frame to `wrapped` (an `IOmciHandler`) unchanged: the base of wrappers that change some (override
    `handle`, pass on with ``self.wrapped.handle(onu, frame)``)."""

    def __init__(self, wrapped) -> None:
        self.wrapped = wrapped

    def handle(self, onu, frame: codec.Frame) -> None:
        """Hand `frame`, a request the adapter sent to `onu`, to the wrapped handler."""
        self.wrapped.handle(onu, frame)


class OmciFaultWrapper(OmciWrapper):
    """Applies the ONU's fault knobs (`onu.faults`, `oltsim.model.faults.OnuFaults`) to each frame before the
    wrapped handler sees it: a muted ONU, or one over its own answer rate, ignores the frame; a delayed one gets it
    later, in arrival order, on the ONU's timers. An ONU without knobs costs one attribute check.

    A frame for an ONU that is not active goes straight on (the wrapped responder drops it): knobs count only
    requests an active ONU gets."""

    def handle(self, onu, frame: codec.Frame) -> None:
        """Hold, drop or pass on one frame the adapter sent to `onu` as its fault knobs say."""
        faults = onu.faults
        if faults is not None and onu.is_active and faults.hold_omci(self.wrapped.handle, onu, frame):
            return                  # muted, over the ONU's own rate, or delayed (oltsim.model.faults)
        self.wrapped.handle(onu, frame)
