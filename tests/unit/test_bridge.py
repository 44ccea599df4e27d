"""The thread seam, in memory: inline and fake reactors, fake gRPC contexts."""

import threading

import grpc
import pytest
from twisted.internet.defer import Deferred, fail, succeed
from twisted.logger import capturedLogs

from oltsim.bridge import (
    Bridge,
    BridgeTimeout,
    BridgeUnavailable,
    StreamQueue,
    iterate,
    on_reactor,
    streaming,
    unwrapped_methods,
)


class FakeContext:
    """Behaves like grpcio's ServicerContext where it matters: abort records the status, then raises Exception."""

    def __init__(self, active=True):
        self.aborts = []
        self.active = active

    def abort(self, code, details):
        self.aborts.append((code, details))
        raise Exception()

    def is_active(self):
        return self.active

    def peer(self):
        return "ipv4:127.0.0.1:1"


class ThreadReactor:
    """A fake running reactor whose callFromThread runs the callable on a new thread (the 'reactor thread')."""

    running = True

    def __init__(self):
        self.threads = []

    def callFromThread(self, f, *args, **kw):
        self.threads.append(threading.Thread(target=f, args=args, kwargs=kw))
        self.threads[-1].start()


class DeafReactor:
    """A fake running reactor that never runs what it is given."""

    running = True

    def __init__(self):
        self.calls = []

    def callFromThread(self, f, *args, **kw):
        self.calls.append(f)


class StoppedReactor(DeafReactor):
    """A fake reactor that is not running."""

    running = False


class StoppingReactor(DeafReactor):
    """A fake reactor on which reactor.stop() was called but shutdown triggers still run."""

    _stopped = True


def in_thread(fn, *args):
    """Run fn in a worker thread (as grpcio does) and return ('ok', result) or ('error', exception)."""
    out = []

    def run():
        try:
            out.append(("ok", fn(*args)))
        except BaseException as exc:  # noqa: BLE001 - the test inspects it
            out.append(("error", exc))

    t = threading.Thread(target=run)
    t.start()
    t.join(10)
    assert not t.is_alive()
    return out[0]


class DomainError(Exception):
    pass


class OtherError(Exception):
    pass


@on_reactor
class Servicer:
    def __init__(self, bridge):
        self._bridge = bridge
        self.threads = []

    def GetThing(self, request, context):
        self.threads.append(threading.get_ident())
        return request * 2

    def GetDeferred(self, request, context):
        return succeed(request + 1)

    def Fail(self, request, context):
        raise request

    def Abort(self, request, context):
        context.abort(grpc.StatusCode.NOT_FOUND, "ONU BBSM00000001 not found")

    @streaming
    def Watch(self, request, context):
        yield request

    def helper(self, request, context):
        return "not wrapped"

    def _Private(self, request, context):
        return "not wrapped"


@on_reactor
class MappingServicer(Servicer):
    def _abort(self, context, exc):
        if isinstance(exc, DomainError):
            context.abort(grpc.StatusCode.FAILED_PRECONDITION, str(exc))


class UnimplementedBase:
    def GetOld(self, request, context):
        context.set_code(grpc.StatusCode.UNIMPLEMENTED)
        raise NotImplementedError("Method not implemented!")


@on_reactor
class InheritingServicer(UnimplementedBase):
    def __init__(self, bridge):
        self._bridge = bridge


class StubBridge:
    """A bridge that fails every call with the given exception."""

    def __init__(self, exc):
        self.exc = exc

    def call(self, fn, *args, **kw):
        raise self.exc


def test_inline_bridge_runs_directly():
    """An inline bridge runs the call in the calling thread and returns its result."""
    servicer = Servicer(Bridge.inline())
    assert servicer.GetThing(21, FakeContext()) == 42
    assert servicer.threads == [threading.get_ident()]


def test_inline_bridge_unwraps_fired_deferred():
    """An inline call returning an already-fired Deferred gives the Deferred's result."""
    assert Bridge.inline().call(lambda: succeed(7)) == 7


def test_inline_bridge_refuses_unfired_deferred():
    """An inline call cannot wait for a Deferred that has not fired, and says so."""
    with pytest.raises(RuntimeError, match="has not fired"):
        Bridge.inline().call(Deferred)


def test_inline_exception_keeps_type():
    """An exception raised by the called function reaches the caller with its own type."""
    with pytest.raises(KeyError):
        Bridge.inline().call({}.__getitem__, "missing")
    with pytest.raises(OtherError):
        Bridge.inline().call(lambda: fail(OtherError("x")))


def test_threaded_call_returns_result_from_other_thread():
    """Through a reactor, the function runs on the reactor's thread and its result comes back to the worker."""
    reactor = ThreadReactor()
    ran_on = []
    result = in_thread(Bridge(reactor).call, lambda x: ran_on.append(threading.get_ident()) or x + 1, 1)
    assert result == ("ok", 2)
    assert ran_on == [reactor.threads[0].ident]


def test_threaded_call_waits_for_deferred():
    """A Deferred fired later on the reactor side is waited for."""
    reactor = ThreadReactor()
    d = Deferred()

    def fire_soon():
        threading.Timer(0.05, d.callback, ("late",)).start()
        return d

    assert in_thread(Bridge(reactor).call, fire_soon) == ("ok", "late")


def test_threaded_exception_keeps_type():
    """An exception on the reactor side is re-raised in the worker with its original type and value."""
    kind, exc = in_thread(Bridge(ThreadReactor()).call, lambda: fail(OtherError("boom")))
    assert kind == "error"
    assert type(exc) is OtherError and str(exc) == "boom"


def test_timeout_raises_bridge_timeout():
    """A reactor that never runs the call makes the worker give up with BridgeTimeout after the timeout."""
    reactor = DeafReactor()
    kind, exc = in_thread(Bridge(reactor, timeout=0.05).call, lambda: 1)
    assert kind == "error" and isinstance(exc, BridgeTimeout)
    assert str(exc) == "the simulator did not answer within 0.05 s"
    assert len(reactor.calls) == 1


def test_call_abandoned_after_timeout_does_not_run():
    """A call the worker gave up on is skipped if the reactor gets to it later."""
    reactor = DeafReactor()
    ran = []
    in_thread(Bridge(reactor, timeout=0.01).call, lambda: ran.append(1))
    reactor.calls[0]()
    assert ran == []


@pytest.mark.parametrize("reactor_class", [StoppedReactor, StoppingReactor])
def test_unavailable_when_reactor_not_running_or_stopping(reactor_class):
    """A stopped or stopping reactor gives BridgeUnavailable at once, without queueing the call."""
    reactor = reactor_class()
    kind, exc = in_thread(Bridge(reactor, timeout=30).call, lambda: 1)
    assert kind == "error" and isinstance(exc, BridgeUnavailable)
    assert reactor.calls == []


def test_unavailable_when_reactor_stops_while_waiting():
    """A worker waiting on a reactor that stops gets BridgeUnavailable instead of waiting out the timeout."""
    reactor = DeafReactor()
    threading.Timer(0.05, setattr, (reactor, "running", False)).start()
    kind, exc = in_thread(Bridge(reactor, timeout=30).call, lambda: 1)
    assert kind == "error" and isinstance(exc, BridgeUnavailable)


def test_on_reactor_wraps_uppercase_methods_only():
    """Only public uppercase-named methods are wrapped; lowercase, private and streaming ones are left alone."""
    assert getattr(Servicer.GetThing, "__oltsim_on_reactor__", False)
    assert not hasattr(Servicer.helper, "__oltsim_on_reactor__")
    assert not hasattr(Servicer._Private, "__oltsim_on_reactor__")
    assert not hasattr(Servicer.Watch, "__oltsim_on_reactor__")
    assert list(Servicer(Bridge.inline()).Watch("x", FakeContext())) == ["x"]


def test_unwrapped_methods_empty_for_decorated_class():
    """A decorated servicer, with inherited methods, has no method outside the bridge."""
    assert unwrapped_methods(Servicer) == []
    assert unwrapped_methods(MappingServicer) == []
    assert unwrapped_methods(InheritingServicer) == []


def test_unwrapped_methods_finds_escaped_method():
    """A gRPC method added after decoration (or a class never decorated) is reported."""

    @on_reactor
    class Leaky:
        def GetA(self, request, context):
            return 1

    def GetB(self, request, context):
        return 2

    Leaky.GetB = GetB
    assert unwrapped_methods(Leaky) == ["GetB"]


def test_on_reactor_refuses_unmarked_generator():
    """A generator method not marked @streaming is refused at decoration time."""
    with pytest.raises(TypeError, match="mark it @streaming"):

        @on_reactor
        class Bad:
            def Watch(self, request, context):
                yield request


def test_handler_abort_is_kept():
    """A handler's own abort passes through unchanged, not replaced by INTERNAL."""
    context = FakeContext()
    with pytest.raises(Exception):
        Servicer(Bridge.inline()).Abort(None, context)
    assert context.aborts == [(grpc.StatusCode.NOT_FOUND, "ONU BBSM00000001 not found")]


def test_unexpected_error_becomes_internal_and_is_logged():
    """Any other exception aborts with INTERNAL and a request id, logged as grpc-handler-failed."""
    context = FakeContext()
    with capturedLogs() as events, pytest.raises(Exception):
        Servicer(Bridge.inline()).Fail(OtherError("secret detail"), context)
    [(code, details)] = context.aborts
    assert code is grpc.StatusCode.INTERNAL
    assert details.startswith("internal error (request id ") and "secret" not in details
    [event] = [e for e in events if e.get("log_format", "").startswith("grpc-handler-failed")]
    assert event["method"] == "Fail" and event["request_id"] in details
    assert event["log_failure"].check(OtherError)


def test_domain_errors_mapped_by_servicer_abort():
    """A servicer's _abort maps its domain errors; errors it does not know still become INTERNAL."""
    servicer = MappingServicer(Bridge.inline())
    context = FakeContext()
    with pytest.raises(Exception):
        servicer.Fail(DomainError("ONU BBSM00000001 is already enabled"), context)
    assert context.aborts == [(grpc.StatusCode.FAILED_PRECONDITION, "ONU BBSM00000001 is already enabled")]
    context = FakeContext()
    with capturedLogs(), pytest.raises(Exception):
        servicer.Fail(OtherError("x"), context)
    assert [code for code, _ in context.aborts] == [grpc.StatusCode.INTERNAL]


def test_inherited_unimplemented_stub_gives_unimplemented():
    """A generated base-class stub raising NotImplementedError answers UNIMPLEMENTED, not INTERNAL."""
    context = FakeContext()
    context.set_code = lambda code: None
    with pytest.raises(Exception):
        InheritingServicer(Bridge.inline()).GetOld(None, context)
    assert [code for code, _ in context.aborts] == [grpc.StatusCode.UNIMPLEMENTED]


@pytest.mark.parametrize(
    "exc, code, details",
    [
        (BridgeTimeout(10), grpc.StatusCode.DEADLINE_EXCEEDED, "the simulator did not answer within 10 s"),
        (BridgeUnavailable(), grpc.StatusCode.UNAVAILABLE, "the simulator is stopping"),
    ],
)
def test_bridge_errors_become_statuses(exc, code, details):
    """Bridge timeouts and unavailability become DEADLINE_EXCEEDED and UNAVAILABLE with readable details."""
    context = FakeContext()
    with pytest.raises(Exception):
        Servicer(StubBridge(exc)).GetThing(1, context)
    assert context.aborts == [(code, details)]


def test_stream_queue_drops_when_full_and_counts():
    """put never blocks: beyond maxsize it returns False and counts the drop."""
    q = StreamQueue(maxsize=2)
    assert [q.put(1), q.put(2), q.put(3)] == [True, True, False]
    assert q.dropped == 1
    assert q.get(0) == 1 and q.get(0) == 2
    assert q.get(0) is StreamQueue.EMPTY


def test_iterate_yields_until_sentinel_and_calls_on_done_once():
    """iterate yields queued items, ends at close() even when the queue was full, and calls on_done once."""
    q = StreamQueue(maxsize=2)
    done = []
    q.put("a")
    q.put("b")
    q.close()
    assert list(iterate(q, FakeContext(), poll=0.01, on_done=lambda: done.append(1))) == ["a", "b"]
    assert done == [1]


def test_iterate_close_with_status_aborts():
    """A close with a status aborts the RPC with it, and on_done is still called once."""
    q = StreamQueue()
    q.put("a")
    q.close(grpc.StatusCode.UNAVAILABLE, "the simulator is stopping")
    q.close(grpc.StatusCode.INTERNAL, "ignored: only the first close counts")
    context = FakeContext()
    done = []
    items = iterate(q, context, poll=0.01, on_done=lambda: done.append(1))
    assert next(items) == "a"
    with pytest.raises(Exception):
        next(items)
    assert context.aborts == [(grpc.StatusCode.UNAVAILABLE, "the simulator is stopping")]
    assert done == [1]


def test_iterate_ends_when_rpc_inactive():
    """A cancelled RPC (context inactive) ends the iteration at the next poll, calling on_done once."""
    q = StreamQueue()
    context = FakeContext()
    done = []
    threading.Timer(0.05, setattr, (context, "active", False)).start()
    assert list(iterate(q, context, poll=0.01, on_done=lambda: done.append(1))) == []
    assert done == [1]


def test_iterate_on_done_once_when_closed_early():
    """A generator dropped mid-stream (grpcio stops reading) still calls on_done exactly once."""
    q = StreamQueue()
    q.put("a")
    done = []
    items = iterate(q, FakeContext(), poll=0.01, on_done=lambda: done.append(1))
    assert next(items) == "a"
    items.close()
    items.close()
    assert done == [1]


def test_iterate_logs_on_done_failure():
    """A failing on_done is logged, not raised into grpcio."""
    q = StreamQueue()
    q.close()

    def on_done():
        raise OtherError("bug")

    with capturedLogs() as events:
        assert list(iterate(q, FakeContext(), poll=0.01, on_done=on_done)) == []
    assert [e["log_failure"].type for e in events if e.get("log_format") == "grpc-stream-on-done-failed"] == [
        OtherError
    ]


def test_iterate_on_done_unavailable_is_quiet():
    """An on_done that cannot reach a stopping reactor is not reported as a failure."""
    q = StreamQueue()
    q.close()

    def on_done():
        raise BridgeUnavailable()

    with capturedLogs() as events:
        assert list(iterate(q, FakeContext(), poll=0.01, on_done=on_done)) == []
    assert not [e for e in events if "log_failure" in e]


def test_put_after_close_is_refused():
    """Items put after close are refused and counted as dropped."""
    q = StreamQueue()
    q.close()
    assert q.put("late") is False and q.dropped == 1
