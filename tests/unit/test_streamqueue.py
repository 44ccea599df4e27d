"""What every gRPC servicer served on the reactor's loop shares, in memory: the bounded stream queue and the one way
a failure becomes a status (oltsim.serving.onloop)."""

import grpc
import pytest
import pytest_twisted
from twisted.logger import capturedLogs

from oltsim.serving.onloop import StreamQueue, failure_status, rpc_functions


class DomainError(Exception):
    pass


class OtherError(Exception):
    pass


class Servicer:
    def GetThing(self, request, context):
        return request

    def helper(self, request, context):
        return "not an RPC"

    def _Private(self, request, context):
        return "not an RPC"


class MappingServicer(Servicer):
    def _abort(self, context, exc):
        if isinstance(exc, DomainError):
            context.abort(grpc.StatusCode.FAILED_PRECONDITION, str(exc))


class Message:
    """Stands for a protobuf message: what the queue asks of one."""

    def __init__(self, size):
        self.size = size

    def ByteSize(self):
        return self.size


def test_rpc_functions_are_the_uppercase_methods():
    """RPC methods are the public ones named as gRPC names them (uppercase first letter), inherited ones included."""
    assert [name for name, _ in rpc_functions(MappingServicer)] == ["GetThing"]


def test_unexpected_error_becomes_internal_and_is_logged():
    """An exception the servicer does not map is INTERNAL with a request id, logged as grpc-handler-failed, and
    never shows its message."""
    with capturedLogs() as events:
        code, details = failure_status(Servicer(), "Fail", OtherError("secret detail"))
    assert code is grpc.StatusCode.INTERNAL
    assert details.startswith("internal error (request id ") and "secret" not in details
    [event] = [e for e in events if e.get("log_format", "").startswith("grpc-handler-failed")]
    assert event["method"] == "Fail" and event["request_id"] in details
    assert event["log_failure"].check(OtherError)


def test_domain_errors_mapped_by_servicer_abort():
    """A servicer's _abort maps its domain errors; errors it does not know still become INTERNAL."""
    servicer = MappingServicer()
    assert failure_status(servicer, "Fail", DomainError("ONU BBSM00000001 is already enabled")) == (
        grpc.StatusCode.FAILED_PRECONDITION, "ONU BBSM00000001 is already enabled")
    with capturedLogs():
        assert failure_status(servicer, "Fail", OtherError("x"))[0] is grpc.StatusCode.INTERNAL


def test_unimplemented_stub_gives_unimplemented():
    """A generated base-class stub raising NotImplementedError answers UNIMPLEMENTED, not INTERNAL."""
    assert failure_status(Servicer(), "GetOld", NotImplementedError("Method not implemented!")) == (
        grpc.StatusCode.UNIMPLEMENTED, "method not implemented")


def test_stream_queue_drops_when_full_and_counts():
    """put never blocks: beyond maxsize it returns False and counts the drop."""
    q = StreamQueue(maxsize=2)
    assert [q.put(1), q.put(2), q.put(3)] == [True, True, False]
    assert q.dropped == 1
    assert q.get() == 1 and q.get() == 2
    assert q.get() is StreamQueue.EMPTY


@pytest.mark.parametrize("item, size", [(b"x" * 400, 400), (Message(400), 400)])
def test_stream_queue_is_bounded_in_bytes(item, size):
    """With max_bytes, what is queued is bounded by the items' size (bytes or protobuf messages): beyond it the item
    is dropped and counted; taking items frees room; a first item is always taken, whatever its size."""
    q = StreamQueue(maxsize=100, max_bytes=1000)
    assert [q.put(item), q.put(item), q.put(item)] == [True, True, False]
    assert q.dropped == 1 and q.queued_bytes == 2 * size
    q.get()
    assert q.put(item) and q.queued_bytes == 2 * size
    big = StreamQueue(maxsize=100, max_bytes=10)
    assert big.put(item) and not big.put(item)


def test_close_ends_after_queued_items_and_only_the_first_counts():
    """close() ends the stream after what was queued; a second close changes nothing; later puts are refused."""
    q = StreamQueue()
    q.put("a")
    q.close(grpc.StatusCode.UNAVAILABLE, "the simulator is stopping")
    q.close(grpc.StatusCode.INTERNAL, "ignored: only the first close counts")
    assert q.get() == "a"
    closed = q.get()
    assert (closed.status, closed.details) == (grpc.StatusCode.UNAVAILABLE, "the simulator is stopping")
    assert q.put("late") is False and q.dropped == 1


class _Reader:
    """A stream context whose server sends items at once while ``accept`` is True (as the native engine's
    ``direct_send`` does while the stream is not backed up), recording what it took."""

    def __init__(self):
        self.accept = True
        self.sent = []

    def direct_send(self, item):
        if self.accept:
            self.sent.append(item)
        return self.accept

    def cancelled(self):
        return False

    def done(self):
        return False


def _on_loop(coroutine):
    """Run ``coroutine`` as an asyncio Task on the reactor's loop (pytest runs Twisted's asyncio reactor)."""
    import asyncio

    from twisted.internet.defer import Deferred
    return Deferred.fromFuture(asyncio.ensure_future(coroutine))


@pytest_twisted.ensureDeferred
async def test_async_queue_sends_directly_while_its_reader_waits_and_keeps_order_otherwise():
    """An indication put while the stream's reader waits on an empty queue goes straight to the server's sender
    (no Task wake-up per indication); once the server refuses (stream backed up), items queue and come out after
    what was sent, in order; and nothing is sent directly while items are still queued."""
    import asyncio

    from oltsim.serving.onloop import AsyncStreamQueue

    async def scenario():
        queue, reader = AsyncStreamQueue(10), _Reader()
        got = []

        async def read():
            async for item in queue.items(reader):
                got.append(item)

        task = asyncio.ensure_future(read())
        await asyncio.sleep(0)            # the reader now waits on the empty queue
        assert queue.put("a") and queue.put("b")
        assert reader.sent == ["a", "b"] and got == []
        reader.accept = False             # backed up: the queue and its reader take over
        assert queue.put("c")
        reader.accept = True
        assert queue.put("d")             # "c" is still queued: "d" must not overtake it
        assert reader.sent == ["a", "b"]
        await asyncio.sleep(0)
        assert got == ["c", "d"]
        await asyncio.sleep(0)
        assert queue.put("e") and reader.sent == ["a", "b", "e"]  # waiting again: direct again
        queue.close()
        assert not queue.put("f")         # closed: refused, never sent
        await task
        assert reader.sent == ["a", "b", "e"] and got == ["c", "d"]

    await _on_loop(scenario())


@pytest_twisted.ensureDeferred
async def test_async_queue_without_a_direct_sender_queues_everything():
    """On servers without ``direct_send`` (grpc.aio) the queue behaves as before: every item is read by its Task."""
    import asyncio

    from oltsim.serving.onloop import AsyncStreamQueue

    class Plain:
        def cancelled(self):
            return False

        def done(self):
            return False

    async def scenario():
        queue, got = AsyncStreamQueue(10), []

        async def read():
            async for item in queue.items(Plain()):
                got.append(item)

        task = asyncio.ensure_future(read())
        await asyncio.sleep(0)
        queue.put(1)
        queue.put(2)
        queue.close()
        await task
        assert got == [1, 2]

    await _on_loop(scenario())
