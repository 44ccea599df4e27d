"""BBSim's ``bbsim.BBsim_dmi`` service on the DMI port: list the PON transceivers, plug one out or in, raise a DMI
event on request.

Wire-compatible with BBSim 1.16.8 (``proto/bbsim_dmi.proto``), answers included: every RPC returns gRPC OK and
reports a refusal inside ``DmiResponse`` as a gRPC status code number with a reason, as BBSim's clients expect:

* 14 UNAVAILABLE before StartManagingDevice (the transceivers belong to the managed device);
* 5 NOT_FOUND for a transceiver id that is not a PON of this OLT, or an unknown event name;
* 10 ABORTED for a plug-out of a transceiver that is out, or a plug-in of one that is in.

There is one transceiver per PON, its id the PON's id, its UUID and name those of the transceiver component of the
DMI inventory (``ManagedDevice.transceiver_components``). What a plug-out and a plug-in do to the OLT (LOS alarms,
PON and ONU states, the indication sequence of reference 1.8) is the model's: ``Olt.plug_out_transceiver`` and
``Olt.plug_in_transceiver``. Each also raises the DMI event EVENT_TRANSCEIVER_PLUG_OUT / _PLUG_IN on the
transceiver component (StreamEvents readers and the message bus), as BBSim does.

``UUID`` is BBSim's (``oltsim.dmi.tree.olt_part_uuid``: ``3f2cdf03-376d-367a-97ba-4764c53b1c66`` for BBSIM_OLT_0's
first) and ``Technology`` reads as in BBSim: ``TYPE_UNDEFINED`` until the transceiver was first in the inventory of
the managed device, then the PON's technology (GPON, XGSPON; ``ManagedDevice.transceiver_type``). Unlike BBSim,
CreateEvent before StartManagingDevice answers 14 UNAVAILABLE like the other RPCs (BBSim: 13 INTERNAL "Inventory
does not exist").
"""
from __future__ import annotations

from typing import Any

import grpc
from dmi import hw_events_mgmt_service_pb2 as ev, hw_pb2

from oltsim._proto import bbsim_dmi_pb2, bbsim_dmi_pb2_grpc
from oltsim.logs import logger
from oltsim.model.errors import FailedPrecondition, InvalidArgument, NotFound, OltsimError
from oltsim.serving.onloop import on_loop

__all__ = ["TransceiverServicer", "add_to_server"]

log = logger("oltsim.dmi")

OK = grpc.StatusCode.OK.value[0]
NOT_FOUND = grpc.StatusCode.NOT_FOUND.value[0]
ABORTED = grpc.StatusCode.ABORTED.value[0]
UNAVAILABLE = grpc.StatusCode.UNAVAILABLE.value[0]

NOT_MANAGED = "device management not started: call StartManagingDevice on this DMI endpoint first"


def _answer(code: int, message: str) -> bbsim_dmi_pb2.DmiResponse:
    return bbsim_dmi_pb2.DmiResponse(status_code=code, message=message)


class TransceiverServicer:
    """``bbsim.BBsim_dmi`` over the OLT model ``olt`` and its DMI state ``device`` (an
    ``oltsim.dmi.device.ManagedDevice``). Plain unary methods, run on the reactor thread by
    ``oltsim.serving.onloop.on_loop`` (``add_to_server`` does the wrapping)."""

    def __init__(self, olt, device) -> None:
        self.olt = olt
        self.device = device

    # ---- helpers ---------------------------------------------------------------------------

    def _transceiver_ids(self) -> str:
        n = len(self.olt.pons)
        return f"0..{n - 1}, one per PON" if n else "none: it has no PON"

    def _refusal(self, verb: str, transceiver_id: int) -> bbsim_dmi_pb2.DmiResponse | None:
        """The answer refusing to plug `transceiver_id` out or in before anything changes, or None."""
        if not self.device.started:
            return _answer(UNAVAILABLE, f"cannot plug {verb} transceiver {transceiver_id}: {NOT_MANAGED}")
        if not 0 <= transceiver_id < len(self.olt.pons):
            return _answer(NOT_FOUND, f"cannot find transceiver with ID {transceiver_id}: this OLT has transceivers "
                                      f"{self._transceiver_ids()}")
        return None

    def _raise_event(self, event_id: int, transceiver_id: int) -> None:
        """The DMI event of a plug-out or plug-in; a failure is logged, never returned (the plug happened)."""
        try:
            component = self.device.transceiver_components()[transceiver_id]
            self.device.create_event(event_id, component_uuid=component.uuid.uuid)
        except Exception:
            log.failure("dmi-transceiver-event-failed transceiver={transceiver} event={event}",
                        transceiver=transceiver_id, event=ev.EventIds.Name(event_id))

    @staticmethod
    def _code_of(exc: OltsimError) -> int:
        if isinstance(exc, NotFound):
            return NOT_FOUND
        if isinstance(exc, FailedPrecondition):
            return ABORTED
        return grpc.StatusCode.INVALID_ARGUMENT.value[0] if isinstance(exc, InvalidArgument) else UNAVAILABLE

    # ---- RPCs ------------------------------------------------------------------------------

    def GetTransceivers(self, request, context) -> bbsim_dmi_pb2.Transceivers:
        """Every PON transceiver (plugged in or not) with its DMI component's UUID and name and the technology BBSim
        would report; served whether or not the device is managed, as BBSim does."""
        items = []
        for pon, component in zip(self.olt.pons, self.device.transceiver_components()):
            items.append(bbsim_dmi_pb2.Transceiver(
                ID=pon.id, UUID=component.uuid.uuid, Name=component.name,
                Technology=hw_pb2.TransceiverType.Name(self.device.transceiver_type(pon.id)),
                PluggedIn=self.olt.transceiver_plugged(pon.id), PonIds=[pon.id]))
        return bbsim_dmi_pb2.Transceivers(Items=items)

    def PlugOutTransceiver(self, request, context) -> bbsim_dmi_pb2.DmiResponse:
        """Plug out transceiver ``TransceiverId`` (see the module docstring for the answers)."""
        return self._plug(request.TransceiverId, "out")

    def PlugInTransceiver(self, request, context) -> bbsim_dmi_pb2.DmiResponse:
        """Plug transceiver ``TransceiverId`` back in (see the module docstring for the answers)."""
        return self._plug(request.TransceiverId, "in")

    def _plug(self, tid: int, way: str) -> bbsim_dmi_pb2.DmiResponse:
        """Plug transceiver ``tid`` ``way`` ("out" or "in"): refused as a repeat (ABORTED) when it already is, else
        the model's plug, its log line and DMI event."""
        refused = self._refusal(way, tid)
        if refused is not None:
            return refused
        out = way == "out"
        if self.olt.transceiver_plugged(tid) != out:
            state = "not plugged in" if out else "already plugged in"
            return _answer(ABORTED, f"cannot plug {way} transceiver with ID {tid} since it's {state}")
        try:
            (self.olt.plug_out_transceiver if out else self.olt.plug_in_transceiver)(tid)
        except OltsimError as exc:
            return _answer(self._code_of(exc), f"cannot plug {way} transceiver with ID {tid}: {exc.message}")
        if not out:
            self.device.transceiver_plugged_in(tid)
        log.info(f"dmi-transceiver-plugged-{way} transceiver={{transceiver}} olt_state={{state}}", transceiver=tid,
                 state=self.olt.state)
        self._raise_event(ev.EVENT_TRANSCEIVER_PLUG_OUT if out else ev.EVENT_TRANSCEIVER_PLUG_IN, tid)
        return _answer(OK, f"Plugged {way} transceiver {tid}")

    def CreateEvent(self, request, context) -> bbsim_dmi_pb2.DmiResponse:
        """Raise the DMI event named ``event_name`` (a dmi.EventIds name) on the first component of its class,
        through ``ManagedDevice.create_event``: 14 before StartManagingDevice, 5 for an unknown name (the message
        lists the permissible ones)."""
        if not self.device.started:
            return _answer(UNAVAILABLE, f"cannot create event {request.event_name!r}: {NOT_MANAGED}")
        try:
            event = self.device.create_event(request.event_name)
        except InvalidArgument as exc:
            return _answer(NOT_FOUND, exc.message)
        except OltsimError as exc:
            return _answer(self._code_of(exc), f"cannot create event {request.event_name!r}: {exc.message}")
        log.info("dmi-event-created event={event} component={component}", event=request.event_name,
                 component=event.event_metadata.component_name)
        return _answer(OK, "DMI Event Indication Sent.")


def add_to_server(servicer: Any, server) -> None:
    """Register ``servicer`` on the gRPC ``server`` as ``bbsim.BBsim_dmi``: a :class:`TransceiverServicer` (wrapped
    by ``on_loop`` here) or one already wrapped."""
    if isinstance(servicer, TransceiverServicer):
        servicer = on_loop(servicer, bbsim_dmi_pb2_grpc.BBsim_dmiServicer)
    bbsim_dmi_pb2_grpc.add_BBsim_dmiServicer_to_server(servicer, server)
