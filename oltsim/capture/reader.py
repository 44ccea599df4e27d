"""A live capture stream as an async iterator of pcapng chunks, for a reader on the reactor's asyncio loop (the
gRPC Capture stream): it waits for the stream's wakeup, and gathers on the capture's clock (an IReactorTime), so
that the time it waits is the time the rest of the simulator keeps."""
from __future__ import annotations

import asyncio

from twisted.internet.task import deferLater


async def chunks(stream, gather: float = 0.0, clock=None):
    """The pcapng chunks of `stream` (a CaptureStream) until it ends; closes the stream when left early. With
    `gather`, what comes is taken that many seconds of `clock` (default: the stream's capture's clock) after the
    first of it, in one chunk (a live capture at a bring-up's rate is otherwise a chunk per frame)."""
    loop = asyncio.get_running_loop()
    if clock is None:
        clock = stream.capture.clock
    try:
        while True:
            data = stream.read()
            if data:
                yield data
                continue
            if stream.ended is not None:
                return
            waiter = loop.create_future()
            stream.wakeup = lambda: waiter.done() or waiter.set_result(None)
            await waiter
            if gather and stream.ended is None:
                # cancelled with the call: the Future's cancel cancels the Deferred, and so the delayed call
                await deferLater(clock, gather).asFuture(loop)
    finally:
        stream.wakeup = None
        stream.close()
