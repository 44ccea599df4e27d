"""gRPC `bbsim.BBSim` (wire-compatible with BBSim, so bbsimctl works) and our own `oltsim.v1.Oltsim`."""
from __future__ import annotations

import json
import platform

import google.protobuf
import grpc
import twisted

from oltsim import __version__
from oltsim._proto import bbsim_pb2, bbsim_pb2_grpc, oltsim_pb2, oltsim_pb2_grpc
from oltsim.api.grpc_common import abort_for, delegating_servicer
from oltsim.api.v1 import capture_v1 as capture_rest
from oltsim.capture.reader import chunks
from oltsim.dataplane.service import counters_of
from oltsim.model.errors import NotFound, Unavailable
from oltsim.serving.onloop import AsyncStreamQueue

RPC_NAMES = tuple(m.name for m in bbsim_pb2.DESCRIPTOR.services_by_name["BBSim"].methods)
__all__ = ["BBSimServicer", "OltsimServicer", "abort_for", "add_to_server", "capture_query", "event_to_pb"]
#: The most pcapng bytes one CaptureChunk carries: what the capture stream holds for a slow reader (up to 2 MiB)
#: goes out in pieces, so the engine's bound on a stream's unsent bytes is checked between them and no message
#: nears a client's 4 MiB receive limit.
CAPTURE_CHUNK = 64 * 1024


BBSimServicer = delegating_servicer(bbsim_pb2_grpc.BBSimServicer, bbsim_pb2.DESCRIPTOR.services_by_name["BBSim"],
                                    "V1Commands")


class OltsimServicer(oltsim_pb2_grpc.OltsimServicer):
    """oltsim's own additions on the v1 gRPC port: version details, the event stream, the alarms and the scenarios
    (through `commands`, the V1Commands REST shares)."""

    def __init__(self, bus=None, buffer: int = 1024, buffer_bytes: int = 256 * 1024, commands=None):
        self._bus = bus
        self._commands = commands
        self._buffer = buffer
        self._buffer_bytes = buffer_bytes

    async def StreamEvents(self, request, context):
        """Every event as it happens, serialized (served with a pass-through serializer, see `add_to_server`); a
        slow reader loses events (counted in `dropped`), never the simulator: what waits for a reader is bounded in
        events and in bytes. Events wait serialized because a message object costs about 1.6 KiB of memory for
        the ~100 bytes it encodes to, which made a stalled reader cost 6.5 MB.

        A reader that stopped reading (it took none of the event bus's GIVE_UP_AFTER events in a row) has its stream
        ended with RESOURCE_EXHAUSTED and the number dropped, and what waited for it dropped: it gets nothing more
        either way, and the status tells it why (when it reads again) and to open a new stream; meanwhile it would
        hold an open-call place and its buffers for nothing. A slow reader that reads is never ended."""
        if self._bus is None:
            raise NotImplementedError("this server has no event bus")
        queue = AsyncStreamQueue(self._buffer, max_bytes=self._buffer_bytes)

        def give_up(sub) -> None:
            queue.discard(grpc.StatusCode.RESOURCE_EXHAUSTED,
                          f"this stream stopped reading events and was ended: {sub.dropped} events dropped; "
                          "open a new stream")

        sub = self._bus.subscribe(lambda record: queue.put(event_to_pb(record).SerializeToString()),
                                  list(request.types), request.onu_serial,
                                  lambda: queue.close(grpc.StatusCode.UNAVAILABLE, "oltsim is stopping"),
                                  reader=f"grpc-StreamEvents peer={context.peer()}", on_give_up=give_up)
        try:
            async for item in queue.items(context):
                yield item
        finally:
            self._bus.unsubscribe(sub)

    async def Capture(self, request, context):
        """The capture ring and then the frames as they come, as pcapng (oltsim.capture; docs/capture.md): the same
        bytes as REST GET /v1/capture for the same filters, whose query parser reads the request
        (`capture_query`). Ends after `count` frames or `duration`, when the client leaves, or, after the last
        bytes (an annotation saying so), with UNAVAILABLE when oltsim stops.

        A slow reader: the engine waits for it once a quarter MiB is unsent, and the capture stream then holds at
        most its STREAM_LIMIT (2 MiB) of pcapng; frames beyond are dropped, counted in `dropped` and told in the
        file by an annotation where they went. The OLT never waits for a reader."""
        capture = getattr(self._commands, "capture", None)
        arguments = capture_rest.parse_query(capture_query(request))
        if capture is None:
            raise NotFound("capture is off: oltsim was started with --capture-size 0 (or bbsim.capture_size: 0)")
        capture.check(arguments["capture_filter"])
        stream = capture.open_stream(**arguments)
        coverage = coverage_to_pb(stream.coverage)  # on the first message only
        try:
            async for data in chunks(stream, capture_rest.WRITE_DELAY):
                if len(data) <= CAPTURE_CHUNK:
                    yield oltsim_pb2.CaptureChunk(data=data, dropped=stream.dropped, coverage=coverage)
                    coverage = None
                    continue
                view = memoryview(data)
                for start in range(0, len(data), CAPTURE_CHUNK):
                    yield oltsim_pb2.CaptureChunk(data=bytes(view[start:start + CAPTURE_CHUNK]),
                                                  dropped=stream.dropped, coverage=coverage)
                    coverage = None
        finally:
            stream.close()
        if stream.ended == "stopped":
            raise Unavailable("capture ended: oltsim is stopping")

    def _abort(self, context, exc):
        abort_for(context, exc)

    def GetAlarms(self, request, context):
        """The active alarms and the alarm history (V1Commands.GetAlarms)."""
        if self._commands is None:
            raise NotImplementedError("this server has no alarms to show")
        return self._commands.GetAlarms(request)

    def GetDataPlane(self, request, context):
        """The data plane's counters as the JSON of GET /v1/dataplane (FAILED_PRECONDITION when it is off)."""
        counters = counters_of(self._commands.dataplane if self._commands is not None else None)
        return oltsim_pb2.DataPlaneCounters(json=json.dumps(counters, separators=(",", ":")))

    def _need_commands(self):
        if self._commands is None:
            raise NotImplementedError("this server has no scenarios to run")
        return self._commands

    def RunScenario(self, request, context):
        """Start a scenario from its YAML text (V1Commands.RunScenario)."""
        return self._need_commands().RunScenario(request)

    def GetScenario(self, request, context):
        """The running or last scenario (V1Commands.GetScenario)."""
        return self._need_commands().GetScenario(request)

    def StopScenario(self, request, context):
        """Stop the running scenario (V1Commands.StopScenario)."""
        return self._need_commands().StopScenario(request)

    def VersionDetails(self, request, context):
        return oltsim_pb2.VersionDetails(version=__version__, python_version=platform.python_version(),
                                         grpc_version=grpc.__version__,
                                         protobuf_version=google.protobuf.__version__,
                                         twisted_version=twisted.__version__)


def _serialized(message) -> bytes:
    return message if isinstance(message, bytes) else message.SerializeToString()


def add_to_server(servicer, server) -> None:
    """Register `servicer` (OltsimServicer adapted by `oltsim.serving.onloop.on_loop`) as the generated
    `add_OltsimServicer_to_server` does, except that StreamEvents sends the bytes its handler yields as they are."""
    handlers = {
        "VersionDetails": grpc.unary_unary_rpc_method_handler(
            servicer.VersionDetails, request_deserializer=oltsim_pb2.Empty.FromString,
            response_serializer=oltsim_pb2.VersionDetails.SerializeToString),
        "StreamEvents": grpc.unary_stream_rpc_method_handler(
            servicer.StreamEvents, request_deserializer=oltsim_pb2.EventFilter.FromString,
            response_serializer=_serialized),
        "GetAlarms": grpc.unary_unary_rpc_method_handler(
            servicer.GetAlarms, request_deserializer=oltsim_pb2.AlarmFilter.FromString,
            response_serializer=oltsim_pb2.Alarms.SerializeToString),
        "RunScenario": grpc.unary_unary_rpc_method_handler(
            servicer.RunScenario, request_deserializer=oltsim_pb2.ScenarioRequest.FromString,
            response_serializer=oltsim_pb2.ScenarioStatus.SerializeToString),
        "GetScenario": grpc.unary_unary_rpc_method_handler(
            servicer.GetScenario, request_deserializer=oltsim_pb2.Empty.FromString,
            response_serializer=oltsim_pb2.ScenarioStatus.SerializeToString),
        "StopScenario": grpc.unary_unary_rpc_method_handler(
            servicer.StopScenario, request_deserializer=oltsim_pb2.Empty.FromString,
            response_serializer=oltsim_pb2.ScenarioStatus.SerializeToString),
        "Capture": grpc.unary_stream_rpc_method_handler(
            servicer.Capture, request_deserializer=oltsim_pb2.CaptureRequest.FromString,
            response_serializer=oltsim_pb2.CaptureChunk.SerializeToString),
        "GetDataPlane": grpc.unary_unary_rpc_method_handler(
            servicer.GetDataPlane, request_deserializer=oltsim_pb2.Empty.FromString,
            response_serializer=oltsim_pb2.DataPlaneCounters.SerializeToString),
    }
    server.add_registered_method_handlers(oltsim_pb2.DESCRIPTOR.services_by_name["Oltsim"].full_name, handlers)


def capture_query(request: oltsim_pb2.CaptureRequest) -> dict[str, list[str]]:
    """A Capture request as the query of GET /v1/capture (its parameters' names, each a list of strings), so that
    one parser (`oltsim.api.v1.capture_v1.parse_query`) reads both: unset fields are absent parameters."""
    query: dict[str, list[str]] = {}
    if request.onu_serials:
        query["onu"] = list(request.onu_serials)
    if request.HasField("pon_id"):
        query["pon"] = [str(request.pon_id)]
    for flag in ("omci", "packets"):
        if getattr(request, flag):
            query[flag] = ["true"]
    for text in ("since", "duration"):
        if getattr(request, text):
            query[text] = [getattr(request, text)]
    if request.count:
        query["count"] = [str(request.count)]
    return query


def coverage_to_pb(coverage) -> oltsim_pb2.CaptureCoverage:
    """A capture ring's `Coverage` as the CaptureCoverage message (0 for a time it has none of)."""
    return oltsim_pb2.CaptureCoverage(wrapped=coverage.wrapped, size=coverage.size, oldest=coverage.oldest or 0.0,
                                      onu_oldest={serial: oldest or 0.0 for serial, oldest in coverage.onus},
                                      now=coverage.now)


def event_to_pb(record: dict) -> oltsim_pb2.Event:
    """An event-bus record as the oltsim.v1.Event message."""
    return oltsim_pb2.Event(type=record["type"], time=record["time"], olt_id=record["olt_id"],
                            pon_id=record["pon_id"], onu_id=record["onu_id"], onu_serial=record["onu_serial"],
                            uni_id=record["uni_id"], details=record["details"], sequence=record["sequence"],
                            dropped=record["dropped"])
