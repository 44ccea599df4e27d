"""Call limits against the real daemon over loopback sockets on both gRPC engines: a client holding
many event streams on one connection is never left waiting silently (each stream is served or refused at once, and
its other calls are answered), and server reflection answers bytes that do not decode plainly on every gRPC port."""
from __future__ import annotations

import threading
import time

import grpc
import pytest

from engines import engine_options, grpc_engine  # noqa: F401 - the fixture
from oltsim._proto import bbsim_pb2, bbsim_pb2_grpc, oltsim_pb2, oltsim_pb2_grpc
from test_daemon import daemon  # noqa: F401 - the fixture

#: --max-api-calls for the stream test: small, so that the test opens few streams
CAP = 16
#: the streams a client opens on one channel, in order; the cap's and a per-connection limit's neighbours included
WAVES = (8, 20, 50, 200)
#: seconds a refused stream may take to be told so (a queued one waits for its whole deadline)
REFUSED_WITHIN = 3.0
#: seconds the held streams may take to be open on the server (each has an event)
OPEN_WITHIN = 10.0


def _all_open(bbsim, streams: list, alarms: list) -> bool:
    """True once each of `streams` has yielded an event, within OPEN_WITHIN: NNI alarms are raised and cleared
    (`alarms` holds how many were sent) until each stream has seen one, since a stream misses the events of before
    it opened. Read on threads: grpcio's own wait is bounded only by the stream's deadline, and a stream waiting
    client-side for a free HTTP/2 stream yields nothing."""
    got: list = []

    def read(stream) -> None:
        try:
            got.append(next(stream))
        except (grpc.RpcError, StopIteration):
            pass

    readers = [threading.Thread(target=read, args=(stream,), daemon=True) for stream in streams]
    for reader in readers:
        reader.start()
    deadline = time.monotonic() + OPEN_WITHIN
    while len(got) < len(streams) and time.monotonic() < deadline:
        bbsim.SetOltAlarmIndication(bbsim_pb2.OLTAlarmRequest(
            InterfaceType="nni", InterfaceID=0, Status="off" if len(alarms) % 2 else "on"), timeout=3)
        alarms.append(1)
        for reader in readers:
            reader.join(max(0.0, min(0.5, deadline - time.monotonic())) / len(readers))
    for reader in readers:
        reader.join(max(0.0, deadline - time.monotonic()))
    return len(got) == len(streams)


def test_many_event_streams_on_one_channel_are_served_or_refused_at_once(daemon, grpc_engine):
    """One grpcio channel opens 8, 20, 50 and then 200 StreamEvents streams with --max-api-calls 16: the first 16 are
    open (each gets the events of an alarm), every later one is refused at once with RESOURCE_EXHAUSTED naming the
    limit and a grpc-call-refused log line (none waits client-side for a free HTTP/2 stream, which ended in
    DEADLINE_EXCEEDED with nothing logged), and GetOlt and an alarm on the same channel are answered within their
    3 s deadline after each wave."""
    process = daemon("--max-api-calls", str(CAP), *engine_options(grpc_engine))
    process.wait_serving()
    address = f"127.0.0.1:{process.ports['grpc-v1']}"
    held: list = []
    alarms: list = []
    with grpc.insecure_channel(address) as channel:
        events, bbsim = oltsim_pb2_grpc.OltsimStub(channel), bbsim_pb2_grpc.BBSimStub(channel)
        try:
            for wave in WAVES:
                while len(held) < min(wave, CAP):
                    held.append(events.StreamEvents(oltsim_pb2.EventFilter(), timeout=60))
                assert _all_open(bbsim, held, alarms), wave
                for index in range(CAP, wave):
                    extra = events.StreamEvents(oltsim_pb2.EventFilter(), timeout=REFUSED_WITHIN)
                    with pytest.raises(grpc.RpcError) as refused:
                        next(extra)
                    assert refused.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED, (
                        wave, index + 1, refused.value.code(), refused.value.details())
                    assert f"limit {CAP}" in refused.value.details() and "<class" not in refused.value.details()
                olt = bbsim.GetOlt(bbsim_pb2.Empty(), timeout=3)
                assert olt.SerialNumber == "BBSIM_OLT_0", wave
        finally:
            for stream in held:
                stream.cancel()
    assert process.process.poll() is None
    assert "grpc-call-refused server=grpc-v1 method=/oltsim.v1.Oltsim/StreamEvents" in process.log, process.log[-3000:]


REFLECTION = "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo"
GRPC_PORTS = ("grpc-v1", "grpc-v0", "dmi", "openolt")


def test_undecodable_reflection_requests_are_invalid_argument_on_every_port(daemon, grpc_engine):
    """Bytes that do not decode as a ServerReflectionRequest, sent on the v1, v0, DMI and OpenOLT ports: each answers
    INVALID_ARGUMENT with a plain reason (it was UNKNOWN naming Python's DecodeError class), and each port still
    answers a well-formed reflection request afterwards."""
    process = daemon(*engine_options(grpc_engine))
    process.wait_serving()
    for name in GRPC_PORTS:
        with grpc.insecure_channel(f"127.0.0.1:{process.ports[name]}") as channel:
            reflect = channel.stream_stream(REFLECTION, request_serializer=None, response_deserializer=None)
            with pytest.raises(grpc.RpcError) as refused:
                list(reflect(iter([b"\xff\xff\xff"]), timeout=5))
            assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT, (
                name, refused.value.code(), refused.value.details())
            details = refused.value.details()
            assert "<class" not in details and "DecodeError" not in details, (name, details)
            assert "grpc.reflection.v1alpha.ServerReflectionRequest" in details, (name, details)
            # list_services (field 7, an empty string): the port still serves reflection
            answers = list(reflect(iter([b"\x3a\x00"]), timeout=5))
            assert len(answers) == 1 and answers[0], name
    assert process.process.poll() is None


def test_reflection_and_event_streams_share_one_cap(daemon, grpc_engine):
    """With --max-api-calls 4, two event streams and two open reflection streams take every place (the native engine
    serves reflection on the grpc.aio server behind its front, under the same cap): a fifth stream of either kind is
    refused at once with RESOURCE_EXHAUSTED naming the limit, while unary calls are still answered."""
    process = daemon("--max-api-calls", "4", *engine_options(grpc_engine))
    process.wait_serving()
    release = threading.Event()

    def requests():
        yield b"\x3a\x00"  # list_services
        release.wait(30)

    with grpc.insecure_channel(f"127.0.0.1:{process.ports['grpc-v1']}") as channel:
        events, bbsim = oltsim_pb2_grpc.OltsimStub(channel), bbsim_pb2_grpc.BBSimStub(channel)
        reflect = channel.stream_stream(REFLECTION, request_serializer=None, response_deserializer=None)
        held = [events.StreamEvents(oltsim_pb2.EventFilter(), timeout=60) for _ in range(2)]
        reflections = [reflect(requests(), timeout=60) for _ in range(2)]
        try:
            assert _all_open(bbsim, held, [])
            assert all(next(stream) for stream in reflections)  # answered: open on the server
            for extra in (events.StreamEvents(oltsim_pb2.EventFilter(), timeout=REFUSED_WITHIN),
                          reflect(iter([b"\x3a\x00"]), timeout=REFUSED_WITHIN)):
                with pytest.raises(grpc.RpcError) as refused:
                    next(extra)
                assert refused.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED, refused.value.details()
                assert "limit 4" in refused.value.details()
            assert bbsim.GetOlt(bbsim_pb2.Empty(), timeout=3).SerialNumber == "BBSIM_OLT_0"
        finally:
            release.set()
            for stream in held + reflections:
                stream.cancel()
    assert process.process.poll() is None
