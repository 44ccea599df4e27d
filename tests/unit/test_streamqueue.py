"""What every gRPC servicer served on the reactor's loop shares, in memory: the bounded stream queue and the one way
a failure becomes a status (oltsim.onloop)."""

import grpc
import pytest
from twisted.logger import capturedLogs

from oltsim.onloop import StreamQueue, failure_status, rpc_functions


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
