"""gRPC servicers answered on the reactor thread itself: every gRPC server (OpenOLT, v1, v0) runs on the asyncio loop
that Twisted's reactor runs, so no request thread ever touches the model.

The OpenOLT southbound carries an adapter's whole bring-up, about 240 unary calls per ONU (MIB upload), so its cost
per call is what a user feels.  Served by grpcio's thread pool and hopped to the reactor through a thread bridge, a
call woke half a dozen threads; on the reactor's own loop the handler runs where the model lives and nothing crosses
a thread (bench/bringup.py, docs/performance.md).  The control APIs run there too: a pool thread per call would let
32 open streams, or 32 requests whose body never comes, wedge them.

:func:`on_loop` turns the one servicer (plain unary methods over the model that raise domain errors, mapped by its
``_abort``; async generators for streams) into grpc.aio handlers that call the same methods inline; the native engine
(:mod:`oltsim.serving.nativeserver`) calls the plain methods without even a coroutine.  A stream reads an
:class:`AsyncStreamQueue`, which the model feeds on the same thread.  The in-memory tests drive these same handlers.
"""
from __future__ import annotations

import asyncio
import inspect
import uuid
from collections import deque
from typing import Any, AsyncIterator, Callable, Iterator

import grpc

from twisted.python.failure import Failure

from oltsim.logs import Summary, logger

__all__ = ["AsyncStreamQueue", "DecodeGuard", "NotOnLoop", "OpenCallLimit", "StreamQueue", "check_asyncio_reactor", "failure_status",
           "handler_with", "install_asyncio_reactor", "on_loop", "rpc_functions", "undecodable_message"]

log = logger("oltsim.serving.onloop")


def _is_rpc_name(name: str) -> bool:
    return name[:1].isupper()


def rpc_functions(cls: type) -> Iterator[tuple[str, Any]]:
    """(name, function) of every gRPC-named method of ``cls``, own or inherited, as defined (not bound)."""
    for name in dir(cls):
        if not _is_rpc_name(name):
            continue
        value = inspect.getattr_static(cls, name)
        if inspect.isfunction(value):
            yield name, value


class _Recorded(Exception):
    """Raised by :class:`_AbortRecorder` to end a servicer's ``_abort`` the way grpcio's abort would."""


class _AbortRecorder:
    """A stand-in context for a servicer's ``_abort``: records the status it aborts with instead of answering."""

    def __init__(self) -> None:
        self.status: tuple[grpc.StatusCode, str] | None = None

    def abort(self, code: grpc.StatusCode, details: str) -> None:
        self.status = (code, details)
        raise _Recorded()


def failure_status(servicer: Any, name: str, exc: BaseException) -> tuple[grpc.StatusCode, str]:
    """The status an exception raised by ``servicer``'s RPC ``name`` is answered with.

    ``servicer._abort(context, exc)``, if defined, decides for the domain errors it knows (it aborts) and returns
    for others; then ``NotImplementedError`` (generated base-class stubs) gives UNIMPLEMENTED and anything else
    INTERNAL, logged with the traceback and a request id that the answer names.  Shared by every gRPC server
    (:func:`on_loop` handlers, the native engine's inline calls), so all answer a failure alike.
    """
    mapper = getattr(servicer, "_abort", None)
    if mapper is not None:
        recorder = _AbortRecorder()
        try:
            mapper(recorder, exc)  # aborts (raises) for the domain errors it knows, returns for others
        except _Recorded:
            return recorder.status  # type: ignore[return-value]
        except Exception:
            log.failure("grpc-abort-mapper-failed method={method}", method=name)
    if isinstance(exc, NotImplementedError):
        return grpc.StatusCode.UNIMPLEMENTED, "method not implemented"
    request_id = uuid.uuid4().hex[:12]
    log.failure(
        "grpc-handler-failed method={method} request_id={request_id}",
        failure=Failure(exc),
        method=name,
        request_id=request_id,
    )
    return grpc.StatusCode.INTERNAL, f"internal error (request id {request_id})"


class _Closed:
    def __init__(self, status: grpc.StatusCode | None, details: str | None) -> None:
        self.status = status
        self.details = details


class StreamQueue:
    """A bounded queue per open stream, fed and read on the reactor thread: :class:`AsyncStreamQueue` by a stream's
    coroutine, :meth:`get` by in-memory tests.

    ``put`` never blocks: when full it drops the item, counts it in ``dropped`` and returns False (a slow client loses
    indications rather than stalling the reactor).  Full is ``maxsize`` items or, with ``max_bytes``, that many
    bytes of queued items (``len`` of bytes, ``ByteSize()`` of protobuf messages; one item is always taken).
    ``close`` ends the stream after the items already queued; it is never dropped, and later puts are refused.
    """

    #: returned by :meth:`get` when nothing is queued
    EMPTY: Any = object()

    def __init__(self, maxsize: int = 1000, max_bytes: int | None = None) -> None:
        if maxsize < 1:
            raise ValueError("maxsize must be at least 1")
        self.maxsize = maxsize
        self.max_bytes = max_bytes
        self.dropped = 0
        self.queued_bytes = 0
        self._items: deque[Any] = deque()
        self._closed: _Closed | None = None

    @property
    def closed(self) -> bool:
        """True once :meth:`close` was called."""
        return self._closed is not None

    def put(self, item: Any) -> bool:
        """Queue ``item`` without blocking; False (and ``dropped`` incremented) if full or closed."""
        size = 0 if self.max_bytes is None else len(item) if isinstance(item, bytes) else item.ByteSize()
        if (self._closed is not None or len(self._items) >= self.maxsize
                or (size and self._items and self.queued_bytes + size > self.max_bytes)):
            self.dropped += 1
            return False
        self._items.append((item, size))
        self.queued_bytes += size
        self._changed()
        return True

    def close(self, status: grpc.StatusCode | None = None, details: str | None = None) -> None:
        """End the stream once the queued items are read: with ``status`` (an abort) or normally if None.

        Only the first close counts.
        """
        if self._closed is None:
            self._closed = _Closed(status, details)
            self._changed()

    def discard(self, status: grpc.StatusCode, details: str) -> None:
        """End the stream now, with ``status``: what is queued is dropped (counted in ``dropped``), for a reader that
        stopped reading and would never get to it; later puts are refused."""
        self.dropped += len(self._items)
        self._items.clear()
        self.queued_bytes = 0
        self.close(status, details)

    def _pop(self) -> Any:
        item, size = self._items.popleft()
        self.queued_bytes -= size
        return item

    def _changed(self) -> None:
        """Called after an item is queued or the queue is closed, for a reader that waits (AsyncStreamQueue)."""

    def get(self) -> Any:
        """The next item without waiting, or ``StreamQueue.EMPTY`` if none is queued, or the close marker."""
        if self._items:
            return self._pop()
        if self._closed is not None:
            return self._closed
        return self.EMPTY


class NotOnLoop(RuntimeError):
    """The reactor does not run an asyncio loop, so grpc.aio handlers cannot run on the reactor thread."""


def install_asyncio_reactor() -> None:
    """Install Twisted's asyncio reactor as the global one, unless a reactor is installed already.

    Must run before anything imports ``twisted.internet.reactor`` (Klein does so at import), which is why
    :mod:`oltsim.tap` calls it first thing; a reactor chosen with twistd's ``--reactor`` wins and is checked by
    :func:`check_asyncio_reactor` when the service is built.
    """
    import sys

    if "twisted.internet.reactor" not in sys.modules:
        from twisted.internet import asyncioreactor

        asyncioreactor.install()


def check_asyncio_reactor(reactor: Any) -> asyncio.AbstractEventLoop:
    """The asyncio loop ``reactor`` runs; NotOnLoop (naming the fix) if it is another kind of reactor."""
    loop = getattr(reactor, "_asyncioEventloop", None)
    if not isinstance(loop, asyncio.AbstractEventLoop):
        raise NotOnLoop(
            f"the OpenOLT server runs on Twisted's asyncio reactor, not {type(reactor).__name__}: "
            "start twistd without --reactor or with --reactor=asyncio"
        )
    return loop


class AsyncStreamQueue(StreamQueue):
    """A :class:`StreamQueue` whose reader is a coroutine on the reactor's loop, fed on that thread.

    The same contract (``put`` never blocks and drops, counted in ``dropped``, when full or closed; ``close`` ends
    the stream after the items already queued, with a status or normally); only the way the reader waits differs.
    """

    def __init__(self, maxsize: int = 1000, max_bytes: int | None = None) -> None:
        super().__init__(maxsize, max_bytes)
        self._waiter: asyncio.Future | None = None
        #: while the reader waits on an empty queue: the server's way to send an item at once (the native engine's
        #: ``context.direct_send``), True if it took the item; None on servers without one (grpc.aio)
        self._direct: Any = None
        #: the server's way to drop what the stream has taken but not sent yet (the native engine's
        #: ``context.abandon_output``), called by :meth:`discard`; None on servers without one
        self._abandon: Any = None

    def put(self, item: Any) -> bool:
        """Queue ``item`` (see :class:`StreamQueue`), or, while nothing is queued and the stream's server can send
        it at once, send it without waking the reader (no future, no Task step, no extra turn of the loop per
        indication). Order is kept: anything queued, or a stream backed up, takes the queue."""
        direct = self._direct
        if direct is not None and not self._items and self._closed is None and direct(item):
            return True
        return super().put(item)

    def discard(self, status: grpc.StatusCode, details: str) -> None:
        """End the stream now with ``status`` (see :class:`StreamQueue`), and have the server drop what it holds
        for the client unsent: a reader that stopped reading keeps nothing queued, and gets the status (after the
        few messages already in the transport) if it reads again."""
        super().discard(status, details)
        abandon, self._abandon = self._abandon, None
        if abandon is not None:
            abandon()

    def _changed(self) -> None:
        waiter, self._waiter = self._waiter, None
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    async def items(self, context: grpc.aio.ServicerContext) -> AsyncIterator[Any]:
        """Yield the queued items until the queue is closed; a close with a status aborts the RPC with it.

        A cancelled RPC ends the wait (grpc.aio cancels the task), so nothing outlives its stream.
        """
        direct = getattr(context, "direct_send", None)
        self._abandon = getattr(context, "abandon_output", None)
        while True:
            while self._items:
                yield self._pop()
            if self._closed is not None:
                if self._closed.status is not None and not _gone(context):
                    await context.abort(self._closed.status, self._closed.details or "")
                return
            self._waiter = asyncio.get_running_loop().create_future()
            self._direct = direct  # only while waiting: a woken reader takes what comes next from the queue
            try:
                await self._waiter
            finally:
                self._direct = None


def _gone(context: Any) -> bool:
    """True once the call is over for the client (cancelled, or its status already sent)."""
    try:
        return bool(context.cancelled() or context.done())
    except Exception:  # a context without these (a test double) is taken as still there
        return False


def on_loop(servicer: Any, base: type) -> Any:
    """grpc.aio handlers for every RPC of ``base`` (a generated ``...Servicer`` class) that ``servicer`` defines.

    A unary RPC is a plain method ``(request, context) -> response`` that runs inline on the reactor thread and
    reports a refusal by raising, never through ``context.abort``; its failure becomes a status through
    :func:`failure_status`.  Each handler carries ``inline = (method, servicer, name)``, which
    :class:`oltsim.serving.nativeserver.NativeServer` calls directly, without a coroutine.  A server-streaming RPC is an
    async generator method of the servicer, served as it is with its errors mapped the same way.  Anything else (a
    plain generator, a coroutine) is refused with TypeError while building, before anything listens.
    """
    namespace: dict[str, Any] = {"__doc__": f"grpc.aio handlers over {type(servicer).__qualname__}"}
    for name, _ in rpc_functions(base):
        function = inspect.getattr_static(type(servicer), name, None)
        if function is None:
            continue
        if inspect.isasyncgenfunction(function):
            namespace[name] = _streaming(servicer, name, getattr(servicer, name))
        elif inspect.isgeneratorfunction(function) or inspect.iscoroutinefunction(function):
            raise TypeError(f"{type(servicer).__qualname__}.{name}: on_loop serves plain methods (unary) and async "
                            "generators (streams) only")
        else:
            namespace[name] = _unary(servicer, name, getattr(servicer, name))
    return type(f"OnLoop{type(servicer).__name__}", (), namespace)()


def _unary(servicer: Any, name: str, method: Any) -> Any:
    async def handler(self: Any, request: Any, context: grpc.aio.ServicerContext) -> Any:
        try:
            return method(request, context)
        except Exception as exc:
            code, details = failure_status(servicer, name, exc)
        await context.abort(code, details)

    handler.__name__ = handler.__qualname__ = name
    handler.inline = (method, servicer, name)
    return handler


def _streaming(servicer: Any, name: str, stream: Any) -> Any:
    async def handler(self: Any, request: Any, context: grpc.aio.ServicerContext) -> AsyncIterator[Any]:
        items = stream(request, context)
        try:
            while True:
                try:
                    item = await items.__anext__()
                except StopAsyncIteration:
                    return
                except (asyncio.CancelledError, grpc.aio.AbortError):
                    raise
                except Exception as exc:
                    if _gone(context):
                        # The client left (or the server is stopping) while the stream ended: grpc.aio refuses to
                        # send a status on a finished call (ExecuteBatchError). Nobody is left to answer.
                        log.debug("grpc-stream-ended-after-client-left method={method} error={error}",
                                  method=name, error=type(exc).__name__)
                        return
                    code, details = failure_status(servicer, name, exc)
                    break
                yield item
        finally:
            await items.aclose()  # its finally blocks (unregistering its queue) run now, not at garbage collection
        await context.abort(code, details)

    handler.__name__ = handler.__qualname__ = name
    return handler


class DecodeGuard(grpc.aio.ServerInterceptor):
    """Refuses a request that does not decode with INVALID_ARGUMENT and a plain reason, as the native engine does.

    grpc.aio answers such a request UNKNOWN with ``Unexpected <class '...DecodeError'>``: Python internals, for a
    client's mistake. The guard takes the request as bytes and decodes it itself, before the handler runs; for a
    method that reads a request stream (server reflection), each message as the handler reads it.
    """

    async def intercept_service(self, continuation, handler_call_details):
        handler = await continuation(handler_call_details)
        if handler is None or handler.request_deserializer is None:
            return handler
        parse = handler.request_deserializer
        refusal = undecodable_message(handler_call_details.method, parse)

        async def decoded(requests, context):
            async for request in requests:
                try:
                    request = parse(request)
                except Exception:
                    await context.abort(grpc.StatusCode.INVALID_ARGUMENT, refusal)
                yield request

        def wrap_streamed(behaviour, response_streaming: bool):
            if not response_streaming:
                async def decoded_requests(requests, context):
                    return await behaviour(decoded(requests, context), context)
                return decoded_requests

            async def decoded_requests_stream(requests, context):
                async for item in behaviour(decoded(requests, context), context):
                    yield item
            return decoded_requests_stream

        def wrap(behaviour, response_streaming: bool):
            if not response_streaming:
                async def decoded(request, context):
                    try:
                        request = parse(request)
                    except Exception:
                        await context.abort(grpc.StatusCode.INVALID_ARGUMENT, refusal)
                    return await behaviour(request, context)
                return decoded

            async def decoded_stream(request, context):
                try:
                    request = parse(request)
                except Exception:
                    await context.abort(grpc.StatusCode.INVALID_ARGUMENT, refusal)
                async for item in behaviour(request, context):
                    yield item
            return decoded_stream

        return handler_with(handler, wrap_streamed if handler.request_streaming else wrap, request_deserializer=None)


#: seconds between two log lines about calls refused for a limit (each refusal is counted in between)
REFUSAL_LOG_INTERVAL = 10.0


class OpenCallLimit(grpc.aio.ServerInterceptor):
    """Caps the streams (calls that stream requests or answers) open at once on a grpc.aio server: beyond ``limit``
    one is refused at once with RESOURCE_EXHAUSTED and a plain reason, as the native engine refuses its Task-run
    calls, and a ``grpc-call-refused`` line is logged (the first at once, the rest of each REFUSAL_LOG_INTERVAL
    seconds of ``clock`` summed up in one). Unary calls are answered at once and hold no place.

    A stream holds its place from the moment its handler runs (for a server stream, once its request has come) to
    its end, whatever ends it. ``also_open`` counts places held elsewhere under the same cap (the native engine's
    streams, for the grpc.aio server behind its front)."""

    def __init__(self, limit: int, clock: Any, name: str, also_open: Callable[[], int] = lambda: 0) -> None:
        self.limit = limit
        self.name = name
        self.open = 0
        self._also_open = also_open
        self._refusals = Summary(clock, self._log_refusals, REFUSAL_LOG_INTERVAL, burst=1)

    @property
    def reason(self) -> str:
        """What a refused call is told."""
        return f"too many open calls on this server (limit {self.limit})"

    def full(self) -> bool:
        """True when every place is taken."""
        return self.open + self._also_open() >= self.limit

    def refused(self, path: str) -> None:
        """Log (or count for the interval's summary) one call of ``path`` refused for the limit."""
        if self._refusals.offer((path, self.reason)):
            self._log_refusals({(path, self.reason): 1})

    def flush(self) -> None:
        """Log the refusals counted so far now (a server stopping leaves no timer behind)."""
        self._refusals.flush()

    def _log_refusals(self, counts: dict) -> None:
        for (path, reason), refused in counts.items():
            log.warn("grpc-call-refused server={server} method={method} reason={reason} refused={refused}",
                     server=self.name, method=path, reason=reason, refused=refused)

    async def intercept_service(self, continuation, handler_call_details):
        handler = await continuation(handler_call_details)
        if handler is None or not (handler.request_streaming or handler.response_streaming):
            return handler
        path = handler_call_details.method

        async def take(context) -> None:
            if self.full():
                self.refused(path)
                await context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, self.reason)
            self.open += 1

        def wrap(behaviour, response_streaming: bool):
            if not response_streaming:
                async def counted(request, context):
                    await take(context)
                    try:
                        return await behaviour(request, context)
                    finally:
                        self.open -= 1
                return counted

            async def counted_stream(request, context):
                await take(context)
                try:
                    async for item in behaviour(request, context):
                        yield item
                finally:
                    self.open -= 1
            return counted_stream

        return handler_with(handler, wrap)


_HANDLER_KINDS = {
    (False, False): (grpc.unary_unary_rpc_method_handler, "unary_unary"),
    (False, True): (grpc.unary_stream_rpc_method_handler, "unary_stream"),
    (True, False): (grpc.stream_unary_rpc_method_handler, "stream_unary"),
    (True, True): (grpc.stream_stream_rpc_method_handler, "stream_stream"),
}


_KEEP = object()


def handler_with(handler: grpc.RpcMethodHandler,
                 wrap: Callable[[Callable[..., Any], bool], Callable[..., Any]],
                 request_deserializer: Any = _KEEP) -> grpc.RpcMethodHandler:
    """A method handler of the same kind and (de)serializers as ``handler`` whose behaviour is
    ``wrap(behaviour, response_streaming)`` (what a server interceptor returns to run code around a call);
    ``request_deserializer`` replaces the handler's (None: the behaviour gets the request's bytes)."""
    factory, attribute = _HANDLER_KINDS[(handler.request_streaming, handler.response_streaming)]
    return factory(wrap(getattr(handler, attribute), handler.response_streaming),
                   request_deserializer=(handler.request_deserializer if request_deserializer is _KEEP
                                         else request_deserializer),
                   response_serializer=handler.response_serializer)


def undecodable_message(path: str, deserializer: Any) -> str:
    """The plain reason a request of method ``path`` that does not parse is refused with (INVALID_ARGUMENT)."""
    message = getattr(getattr(deserializer, "__self__", None), "DESCRIPTOR", None)
    what = message.full_name if message is not None else "the message this method takes"
    return f"{path}: the request does not decode as {what}"
