"""Servers on the reactor's own loop (oltsim.serving.onloop), on both engines the OpenOLT endpoint can use (grpc.aio and
pygrpc-native's front, oltsim.serving.nativeserver): real sockets on 127.0.0.1, a real grpcio channel."""

import asyncio

import grpc
import pytest
import pytest_twisted
from twisted.internet import reactor
from twisted.internet.task import Clock, deferLater
from twisted.internet.threads import deferToThread
from twisted.python import threadable

from oltsim.serving.grpcserver import GrpcServerService
from oltsim.prometheus import AioMetricsInterceptor, Metrics
from oltsim.serving.onloop import AsyncStreamQueue, NotOnLoop, check_asyncio_reactor, on_loop

SERVICE = "oltsim.test.Loop"
METHODS = ("Echo", "Refuse", "Crash", "Missing")


class Refused(Exception):
    """A domain error the servicer's _abort maps to NOT_FOUND."""


class LoopBase:
    """Stands for a generated ...Servicer base: every RPC a stub answering UNIMPLEMENTED."""

    def Echo(self, request, context):
        raise NotImplementedError

    def Refuse(self, request, context):
        raise NotImplementedError

    def Crash(self, request, context):
        raise NotImplementedError

    def Missing(self, request, context):
        raise NotImplementedError

    def Watch(self, request, context):
        raise NotImplementedError


class LoopServicer(LoopBase):
    """Written as OpenoltServicer is (plain unary methods that raise, an async generator stream); served through
    on_loop."""

    def __init__(self):
        self.on_reactor_thread = []
        self.streams = []

    def _abort(self, context, exc):
        if isinstance(exc, Refused):
            context.abort(grpc.StatusCode.NOT_FOUND, str(exc))

    def Echo(self, request, context):
        self.on_reactor_thread.append(threadable.isInIOThread())
        return request

    def Refuse(self, request, context):
        raise Refused(f"no such thing: {request.decode()}")

    def Crash(self, request, context):
        raise ZeroDivisionError("a bug")

    async def Watch(self, request, context):
        queue = AsyncStreamQueue(maxsize=8)
        self.streams.append(queue)
        try:
            async for item in queue.items(context):
                yield item
        finally:
            self.streams.remove(queue)

    def close_streams(self):
        for queue in self.streams:
            queue.close(grpc.StatusCode.UNAVAILABLE, "going down")


def add_to(adapter):
    def add(server):
        # As generated code (grpcio-tools 1.64+) registers a service: the native engine serves registered methods.
        handlers = {name: grpc.unary_unary_rpc_method_handler(getattr(adapter, name)) for name in METHODS}
        handlers["Watch"] = grpc.unary_stream_rpc_method_handler(adapter.Watch)
        server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(SERVICE, handlers),))
        server.add_registered_method_handlers(SERVICE, handlers)
    return add


@pytest.fixture(params=["grpcio", "native"])
def engine(request):
    """Each test runs on both engines of the OpenOLT endpoint."""
    return request.param


def loop_service(engine, interceptors=()):
    """A LoopServicer served on `engine` on a loopback port (not started), its streams closed on stop."""
    servicer = LoopServicer()
    service = GrpcServerService("loop", "tcp:0:interface=127.0.0.1", add_to(on_loop(servicer, LoopBase)),
                                grace=0.5, interceptors=interceptors, engine=engine)
    service.on_stopping.append(servicer.close_streams)
    return service, servicer


def counting_interceptor():
    """A metrics interceptor for surface "loop" over a Metrics whose request counts land in the returned list."""
    metrics = Metrics.__new__(Metrics)
    counted = []
    metrics.count_request = lambda surface, status, count=1: counted.extend([(surface, status)] * count)
    return AioMetricsInterceptor(metrics, "loop"), counted


@pytest.fixture
def make_service(engine):
    return lambda interceptors=(): loop_service(engine, interceptors)


def call(port, method, payload=b"x"):
    """A unary call from a client thread: the response, or the RpcError's (code, details)."""
    def blocking():
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            try:
                return channel.unary_unary(f"/{SERVICE}/{method}")(payload, timeout=5)
            except grpc.RpcError as exc:
                return exc.code(), exc.details()
    return deferToThread(blocking)


def watch(port, received):
    """Read the Watch stream from a client thread into `received`; fires with how it ended (code, details)."""
    def blocking():
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            try:
                for item in channel.unary_stream(f"/{SERVICE}/Watch")(b"", timeout=10):
                    received.append(item)
            except grpc.RpcError as exc:
                return exc.code(), exc.details()
            return grpc.StatusCode.OK, ""
    return deferToThread(blocking)


@pytest_twisted.inlineCallbacks
def wait_until(predicate, what, tries=100):
    for _ in range(tries):
        if predicate():
            return
        yield deferLater(reactor, 0.05, lambda: None)
    raise AssertionError(f"timed out waiting for {what}")


@pytest_twisted.inlineCallbacks
def test_unary_methods_run_on_the_reactor_thread(make_service):
    """A unary RPC is answered by the servicer's own method, run inline on the reactor thread."""
    service, servicer = make_service()
    service.startService()
    try:
        assert (yield call(service.port, "Echo", b"ping")) == b"ping"
        assert servicer.on_reactor_thread == [True]
    finally:
        yield service.stopService()


@pytest_twisted.inlineCallbacks
def test_failures_are_answered_with_the_status_table_and_the_server_keeps_serving(make_service):
    """A domain error gets the servicer's status, a base-class stub UNIMPLEMENTED, a bug INTERNAL naming a request
    id; none of them stops the server answering the next call."""
    service, _ = make_service()
    service.startService()
    try:
        assert (yield call(service.port, "Refuse", b"onu 9")) == (grpc.StatusCode.NOT_FOUND, "no such thing: onu 9")
        assert (yield call(service.port, "Missing")) == (grpc.StatusCode.UNIMPLEMENTED, "method not implemented")
        code, details = yield call(service.port, "Crash")
        assert code is grpc.StatusCode.INTERNAL and details.startswith("internal error (request id ")
        assert (yield call(service.port, "Echo", b"still here")) == b"still here"
    finally:
        yield service.stopService()


@pytest_twisted.inlineCallbacks
def test_stream_delivers_in_order_and_ends_with_the_close_status(make_service):
    """Items put on the reactor thread reach the client in order; a close with a status ends the RPC with it."""
    service, servicer = make_service()
    service.startService()
    received = []
    try:
        ended = watch(service.port, received)
        yield wait_until(lambda: servicer.streams, "the stream to open")
        for item in (b"one", b"two", b"three"):
            servicer.streams[0].put(item)
        servicer.streams[0].close(grpc.StatusCode.ABORTED, "done here")
        assert (yield ended) == (grpc.StatusCode.ABORTED, "done here")
        assert received == [b"one", b"two", b"three"]
    finally:
        yield service.stopService()


@pytest_twisted.inlineCallbacks
def test_stop_ends_streams_refuses_calls_and_restart_serves_on_the_same_port(make_service):
    """Stopping closes open streams (UNAVAILABLE) through on_stopping, refuses new calls; a restart binds the
    port bound first and serves again."""
    service, servicer = make_service()
    service.startService()
    received = []
    try:
        port = service.port
        ended = watch(port, received)
        yield wait_until(lambda: servicer.streams, "the stream to open")
        yield service.stop_server()
        assert not service.serving
        assert (yield ended) == (grpc.StatusCode.UNAVAILABLE, "going down")
        code, _ = yield call(port, "Echo")
        assert code is grpc.StatusCode.UNAVAILABLE
        service.start_server()
        assert service.port == port
        assert (yield call(port, "Echo", b"back")) == b"back"
    finally:
        yield service.stopService()


@pytest_twisted.inlineCallbacks
def test_restart_without_waiting_for_the_stop_serves_again():
    """A start called while the stop is still releasing the port (RestartgRPCServer with delay 0) waits for that
    stop instead of failing to bind and leaving the endpoint down; a stop meanwhile calls the start off.

    On the native engine only: twenty grpc.aio servers started and stopped in turn on one loop end in a
    segmentation fault inside grpcio, with or without this wait, which would kill the run."""
    service, _ = loop_service("native")
    service.startService()
    try:
        port = service.port
        for _ in range(20):
            stopped = service.stop_server()
            service.start_server()
            assert service.serving
            yield stopped
            assert (yield call(port, "Echo", b"again")) == b"again"
        stopped = service.stop_server()
        service.start_server()
        yield service.stop_server()
        yield stopped
        assert not service.serving
        code, _ = yield call(port, "Echo")
        assert code is grpc.StatusCode.UNAVAILABLE
    finally:
        yield service.stopService()


@pytest_twisted.inlineCallbacks
def test_metrics_count_calls_on_the_loop_server_by_status(make_service):
    """The aio metrics interceptor counts each answered call under the status it ended with."""
    interceptor, counted = counting_interceptor()
    service, _ = make_service(interceptors=[interceptor])
    service.startService()
    try:
        yield call(service.port, "Echo")
        yield call(service.port, "Refuse")
        yield call(service.port, "Crash")
        # grpc.aio's abort() sends the status before it raises into the interceptor: the client can see INTERNAL a
        # moment before the count is made
        for _ in range(100):
            if len(counted) == 3:
                break
            yield deferLater(reactor, 0.01, lambda: None)
        assert counted == [("loop", "OK"), ("loop", "NOT_FOUND"), ("loop", "INTERNAL")]
    finally:
        yield service.stopService()


def test_a_generator_stream_is_refused_while_building():
    """on_loop serves streams from async generators only: a plain generator (which would run its body on the
    reactor thread and block it) is refused while building, before anything listens."""

    class PlainGenerator(LoopBase):
        def Watch(self, request, context):
            yield b"never"

    with pytest.raises(TypeError, match="async"):
        on_loop(PlainGenerator(), LoopBase)


@pytest.mark.parametrize("engine", ["grpcio", "native"])
def test_the_loop_server_needs_the_asyncio_reactor(engine):
    """On any other reactor the loop server refuses to start, saying how to run oltsim, and binds nothing."""
    service = GrpcServerService("loop", "tcp:0:interface=127.0.0.1", lambda server: None, reactor=Clock(),
                                engine=engine)
    with pytest.raises(NotOnLoop, match="--reactor=asyncio"):
        service.start_server()
    assert not service.serving and service.port is None
    assert isinstance(check_asyncio_reactor(reactor), asyncio.AbstractEventLoop)


@pytest_twisted.ensureDeferred
async def test_async_stream_queue_is_bounded_and_ends_after_what_was_queued():
    """put never blocks: beyond maxsize, or once closed, items are dropped and counted; a close ends the stream
    only after the items queued before it."""
    queue = AsyncStreamQueue(maxsize=2)
    assert queue.put(1) and queue.put(2)
    assert not queue.put(3)
    queue.close()
    assert not queue.put(4)
    assert queue.dropped == 2 and queue.closed

    assert [item async for item in queue.items(context=None)] == [1, 2]
    with pytest.raises(ValueError):
        AsyncStreamQueue(maxsize=0)


# ---- the native engine's own contract -------------------------------------------------------------------------


@pytest_twisted.inlineCallbacks
def test_native_client_cancel_ends_the_stream_on_the_server():
    """A client that cancels its stream cancels the server's task: the stream's finally block runs (the OpenOLT
    hub unregisters its queue there), and the server goes on serving."""
    service, servicer = loop_service("native")
    service.startService()
    try:
        def cancel_after_first():
            with grpc.insecure_channel(f"127.0.0.1:{service.port}") as channel:
                call = channel.unary_stream(f"/{SERVICE}/Watch")(b"", timeout=10)
                first = next(call)
                call.cancel()
                return first
        reading = deferToThread(cancel_after_first)
        yield wait_until(lambda: servicer.streams, "the stream to open")
        servicer.streams[0].put(b"first")
        assert (yield reading) == b"first"
        yield wait_until(lambda: not servicer.streams, "the server to end the cancelled stream")
        assert (yield call(service.port, "Echo", b"after")) == b"after"
    finally:
        yield service.stopService()


@pytest.mark.parametrize("engine", ["native", "grpcio"])
@pytest_twisted.inlineCallbacks
def test_oversized_and_undecodable_requests_are_refused_not_crashed(engine):
    """A request above grpcio's 4 MiB limit gets RESOURCE_EXHAUSTED, one the method cannot parse INVALID_ARGUMENT
    with a plain reason naming the method (no Python class name, as grpc.aio's own UNKNOWN "Unexpected <class
    ...DecodeError>" had), on both engines; the server answers the next call."""
    def refuse_parse(payload):
        raise ValueError("not a message")

    class Strict(LoopServicer):
        pass

    servicer = Strict()
    adapter = on_loop(servicer, LoopBase)

    def add(server):
        handlers = {"Echo": grpc.unary_unary_rpc_method_handler(adapter.Echo),
                    "Refuse": grpc.unary_unary_rpc_method_handler(adapter.Refuse, request_deserializer=refuse_parse)}
        server.add_registered_method_handlers(SERVICE, handlers)

    service = GrpcServerService("loop", "tcp:0:interface=127.0.0.1", add, grace=0.5, engine=engine)
    service.startService()
    try:
        code, details = yield call(service.port, "Echo", b"x" * (4 * 1024 * 1024 + 1))
        assert code is grpc.StatusCode.RESOURCE_EXHAUSTED, details
        code, details = yield call(service.port, "Refuse", b"\xff")
        assert code is grpc.StatusCode.INVALID_ARGUMENT, details
        assert details == f"/{SERVICE}/Refuse: the request does not decode as the message this method takes"
        assert (yield call(service.port, "Echo", b"fine")) == b"fine"
    finally:
        yield service.stopService()


@pytest_twisted.inlineCallbacks
def test_native_unknown_method_is_unimplemented_through_the_fallback():
    """A method the front does not serve goes to the grpc.aio fallback behind it, which answers UNIMPLEMENTED; the
    counting interceptor sees that call too."""
    interceptor, counted = counting_interceptor()
    service, _ = loop_service("native", interceptors=[interceptor])
    service.startService()
    try:
        def unknown():
            with grpc.insecure_channel(f"127.0.0.1:{service.port}") as channel:
                try:
                    channel.unary_unary("/oltsim.test.Loop/NoSuchMethod")(b"", timeout=5)
                except grpc.RpcError as exc:
                    return exc.code()
        assert (yield deferToThread(unknown)) is grpc.StatusCode.UNIMPLEMENTED
        assert (yield call(service.port, "Echo", b"ok")) == b"ok"
        assert counted[-1] == ("loop", "OK")
    finally:
        yield service.stopService()


def test_native_engine_refuses_interceptors_it_cannot_run():
    """Interceptors other than counting and admission ones are refused while building, with the reason."""
    class Gate(grpc.aio.ServerInterceptor):
        async def intercept_service(self, continuation, details):
            return await continuation(details)

    service = GrpcServerService("loop", "tcp:0:interface=127.0.0.1", lambda server: None, interceptors=[Gate()],
                                engine="native")
    with pytest.raises(ValueError, match="Gate"):
        service.start_server()
    assert not service.serving
