"""The native server's stream sender: messages leave in order whatever the stream's room, and the worker that drains
a backlog only blocks when the stream is full."""
from __future__ import annotations

import asyncio
import concurrent.futures
import threading

import pytest

from oltsim.serving import nativeserver
from oltsim.serving.nativeserver import _StreamOut

pytestmark = pytest.mark.skipif(nativeserver.NativeGrpcFront is None, reason="pygrpc-native is not installed")

SENT, FULL, CLOSED = 0, nativeserver._STREAM_FULL, nativeserver._STREAM_CLOSED


class Front:
    """A stream with `room` free places: try_send takes one or says full; a blocking send waits until the reader
    (`read`) made room, as the native front's bounded channel does."""

    def __init__(self, room: int):
        self.room, self.wire, self.blocking = room, [], 0
        self.closed = False
        self.changed = threading.Condition()

    def stream_try_send(self, call_id, data):
        with self.changed:
            if self.closed:
                return CLOSED
            if self.room == 0:
                return FULL
            self.room -= 1
            self.wire.append(data)
            return SENT

    def stream_send(self, call_id, data):
        with self.changed:
            self.blocking += 1
            while self.room == 0 and not self.closed:
                self.changed.wait(5)
            if self.closed:
                return False
            self.room -= 1
            self.wire.append(data)
            return True

    def read(self, count: int):
        with self.changed:
            self.room += count
            self.changed.notify_all()


@pytest.fixture
def stream():
    """A _StreamOut factory on a loop that is never run (the worker only tells a loop when someone waits)."""
    pool = concurrent.futures.ThreadPoolExecutor(1)
    loop = asyncio.new_event_loop()
    yield lambda front: _StreamOut(front, 1, loop, pool)
    pool.shutdown(wait=True)
    loop.close()


def settled(out, until, seconds: float = 10.0) -> bool:
    """Wait (bounded) until `until()` holds and the worker let go of the backlog."""
    for _ in range(int(seconds / 0.01)):
        if until() and not out._busy:
            return True
        threading.Event().wait(0.01)
    return False


def test_a_backlog_leaves_in_order_and_blocks_only_when_the_reader_made_no_room(stream):
    """Past a full stream the messages queue in order; when the reader takes 50 at a time, the worker sends them
    without waiting for each (about one blocking send per read, not one per message)."""
    front = Front(room=10)
    out = stream(front)
    messages = [b"%d" % n for n in range(300)]
    for data in messages:
        assert out.send(data)
    assert len(front.wire) == 10 and out.backlog_bytes > 0
    for _ in range(200):
        if len(front.wire) == len(messages):
            break
        front.read(50)
        threading.Event().wait(0.01)
    assert settled(out, lambda: len(front.wire) == len(messages))
    assert front.wire == messages
    assert out.backlog_bytes == 0
    assert front.blocking <= 10     # 290 queued messages, read 50 at a time


def test_a_stream_closed_while_queued_drops_the_rest_and_says_so(stream):
    front = Front(room=1)
    out = stream(front)
    assert out.send(b"a") and out.send(b"b")
    with front.changed:
        front.closed = True
        front.changed.notify_all()
    assert settled(out, lambda: out.closed)
    assert front.wire == [b"a"]
    assert not out.send(b"c")
    assert out.backlog_bytes == 0
