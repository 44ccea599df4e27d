"""The one thread seam between grpcio's worker threads and the Twisted reactor.

grpcio calls servicer methods on the threads of its ``ThreadPoolExecutor``; the model lives on the reactor thread and
is not thread-safe.  Every unary gRPC method therefore hops to the reactor through :class:`Bridge`, applied to a whole
servicer class by :func:`on_reactor`; :func:`unwrapped_methods` lets a test prove that no method escaped.
Server-streaming methods stay on the worker thread (marked :func:`streaming`) and read a :class:`StreamQueue` that the
reactor feeds, through :func:`iterate`.
"""

from __future__ import annotations

import functools
import inspect
import threading
import time
import uuid
from collections import deque
from typing import Any, Callable, Iterator, TypeVar

import grpc
from twisted.internet.defer import Deferred, maybeDeferred
from oltsim.logs import logger
from twisted.python import threadable
from twisted.python.failure import Failure

__all__ = [
    "Bridge",
    "BridgeError",
    "BridgeTimeout",
    "BridgeUnavailable",
    "StreamQueue",
    "failure_status",
    "is_streaming",
    "iterate",
    "on_reactor",
    "rpc_functions",
    "streaming",
    "unwrapped_methods",
]

log = logger("oltsim.bridge")

T = TypeVar("T")

DEFAULT_TIMEOUT = 10.0

# How often a waiting worker thread re-checks that the reactor is still running, so that a call queued just before
# the reactor stopped ends with BridgeUnavailable instead of waiting out the whole timeout.
_LIVENESS_POLL = 0.1

_STREAMING_MARK = "__oltsim_streaming__"
_WRAPPED_MARK = "__oltsim_on_reactor__"


class BridgeError(Exception):
    """Base class of the errors raised by :meth:`Bridge.call` itself (never by the called function)."""


class BridgeTimeout(BridgeError):
    """The reactor did not produce the result within the bridge's timeout."""

    def __init__(self, timeout: float) -> None:
        super().__init__(f"the simulator did not answer within {timeout:g} s")
        self.timeout = timeout


class BridgeUnavailable(BridgeError):
    """The reactor is not running or is stopping, so the call was not (or could not be) run."""

    def __init__(self) -> None:
        super().__init__("the simulator is stopping")


class Bridge:
    """Runs callables on the reactor thread on behalf of other threads, with a bounded wait.

    ``Bridge(reactor)`` is what the composition root builds; ``Bridge.inline()`` runs every call directly in the
    calling thread (for in-memory servicer tests).
    """

    def __init__(self, reactor: Any, timeout: float = DEFAULT_TIMEOUT) -> None:
        self._reactor = reactor
        self.timeout = timeout

    @classmethod
    def inline(cls, timeout: float = DEFAULT_TIMEOUT) -> Bridge:
        """A bridge without a reactor: ``call`` runs the function at once in the calling thread."""
        return cls(None, timeout)

    def _reactor_running(self) -> bool:
        return bool(getattr(self._reactor, "running", False))

    def _reactor_stopping(self) -> bool:
        # IReactorCore has no public "stop requested" state: `running` stays true while the "before shutdown"
        # triggers run.  ReactorBase's `_stopped` flag is set by reactor.stop(); fake reactors simply lack it.
        return bool(getattr(self._reactor, "_stopped", False))

    def call(self, fn: Callable[..., Any], *args: Any, **kw: Any) -> Any:
        """Run ``fn(*args, **kw)`` on the reactor thread and return its result to the calling thread.

        A Deferred result is waited for.  An exception raised by ``fn`` (or a failed Deferred) is re-raised here with
        its original type.  Raises :class:`BridgeTimeout` after ``timeout`` seconds without a result, and
        :class:`BridgeUnavailable` at once if the reactor is not running or is stopping.  Called on the reactor
        thread (or on an inline bridge), ``fn`` runs directly; it may then only return an already-fired Deferred.
        """
        if self._reactor is None or threadable.isInIOThread():
            return _result_now(fn, args, kw)
        if not self._reactor_running() or self._reactor_stopping():
            raise BridgeUnavailable()
        return self._call_from_thread(fn, args, kw)

    def _call_from_thread(self, fn: Callable[..., Any], args: tuple, kw: dict) -> Any:
        done = threading.Event()
        lock = threading.Lock()
        abandoned = False
        outcome: list[Any] = []

        def deliver(result: Any) -> None:
            outcome.append(result)
            done.set()
            # Returning None consumes a Failure: it is re-raised in the worker, not also reported as unhandled.
            return None

        def run_on_reactor() -> None:
            with lock:
                if abandoned:
                    # The caller already gave up; do not act on a request nobody waits for.
                    return
            maybeDeferred(fn, *args, **kw).addBoth(deliver)

        self._reactor.callFromThread(run_on_reactor)
        deadline = time.monotonic() + self.timeout
        while not done.wait(max(0.0, min(deadline - time.monotonic(), _LIVENESS_POLL))):
            gone = not self._reactor_running()
            if gone or time.monotonic() >= deadline:
                with lock:
                    abandoned = True
                if done.is_set():
                    break
                raise BridgeUnavailable() if gone else BridgeTimeout(self.timeout)
        return _unwrap(outcome[0])


def _unwrap(result: Any) -> Any:
    if isinstance(result, Failure):
        result.raiseException()
    return result


def _result_now(fn: Callable[..., Any], args: tuple, kw: dict) -> Any:
    result = fn(*args, **kw)
    if not isinstance(result, Deferred):
        return result
    outcome: list[Any] = []

    def grab(value: Any) -> None:
        outcome.append(value)
        return None

    result.addBoth(grab)
    if not outcome:
        raise RuntimeError(
            f"{getattr(fn, '__qualname__', fn)!r} returned a Deferred that has not fired; "
            "a call on the reactor thread cannot wait for it"
        )
    return _unwrap(outcome[0])


# --- servicer decoration ---------------------------------------------------------------------------------------


def streaming(method: T) -> T:
    """Mark a server-streaming gRPC method: it stays on the worker thread (reading a :class:`StreamQueue`)."""
    setattr(method, _STREAMING_MARK, True)
    return method


def _is_rpc_name(name: str) -> bool:
    return name[:1].isupper()


def is_streaming(method: Any) -> bool:
    """True for a method marked :func:`streaming`."""
    return bool(getattr(method, _STREAMING_MARK, False))


def rpc_functions(cls: type) -> Iterator[tuple[str, Any]]:
    """(name, function) of every gRPC-named method of ``cls``, own or inherited, as defined (not bound)."""
    for name in dir(cls):
        if not _is_rpc_name(name):
            continue
        value = inspect.getattr_static(cls, name)
        if inspect.isfunction(value):
            yield name, value


class _TrackedContext:
    """Delegates to the real ServicerContext, remembering whether the handler called abort.

    grpcio's ``abort`` sets the status and then raises a bare ``Exception``; seeing that exception come back through
    the bridge is the only sign, so the wrapper needs this record to let it through instead of turning it into
    INTERNAL (a second ``abort`` would overwrite the handler's status).
    """

    def __init__(self, context: Any) -> None:
        self._context = context
        self.aborted = False

    def abort(self, code: grpc.StatusCode, details: str) -> None:
        self.aborted = True
        self._context.abort(code, details)

    def abort_with_status(self, status: Any) -> None:
        self.aborted = True
        self._context.abort_with_status(status)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._context, name)


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
    INTERNAL, logged with the traceback and a request id that the answer names.  Shared by the thread seam here
    and the grpc.aio handlers of :mod:`oltsim.onloop`, so both surfaces answer a failure alike.
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


def _wrap(name: str, original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def on_reactor_method(self: Any, request: Any, context: Any) -> Any:
        tracked = _TrackedContext(context)
        try:
            return self._bridge.call(original, self, request, tracked)
        except BridgeTimeout as exc:
            context.abort(grpc.StatusCode.DEADLINE_EXCEEDED, str(exc))
        except BridgeUnavailable as exc:
            context.abort(grpc.StatusCode.UNAVAILABLE, str(exc))
        except Exception as exc:
            if tracked.aborted:
                raise
            code, details = failure_status(self, name, exc)
            context.abort(code, details)

    setattr(on_reactor_method, _WRAPPED_MARK, True)
    return on_reactor_method


def on_reactor(cls: type[T]) -> type[T]:
    """Class decorator: every gRPC method (public, name starting uppercase, own or inherited) runs on the reactor.

    ``method(self, request, context)`` becomes ``self._bridge.call(original, self, request, context)``; the instance
    must have a ``_bridge``.  Errors become gRPC statuses: an ``abort`` by the handler is kept; otherwise
    ``self._abort(context, exc)``, if defined, aborts for the domain errors it knows (and returns for others);
    ``NotImplementedError`` (generated base-class stubs) gives UNIMPLEMENTED, BridgeTimeout DEADLINE_EXCEEDED,
    BridgeUnavailable UNAVAILABLE, anything else INTERNAL with a logged request id.  Methods marked
    :func:`streaming` are left alone; an unmarked generator function is refused with TypeError, since wrapping it
    would run only its creation on the reactor and its body on the worker thread.
    """
    for name, function in rpc_functions(cls):
        if is_streaming(function) or getattr(function, _WRAPPED_MARK, False):
            continue
        if inspect.isgeneratorfunction(function):
            raise TypeError(f"{cls.__qualname__}.{name} is a generator: mark it @streaming")
        setattr(cls, name, _wrap(name, function))
    return cls


def unwrapped_methods(cls: type) -> list[str]:
    """The gRPC-named methods of ``cls`` that neither run on the reactor nor are marked streaming."""
    return sorted(
        name
        for name, function in rpc_functions(cls)
        if not is_streaming(function) and not getattr(function, _WRAPPED_MARK, False)
    )


# --- server streaming -----------------------------------------------------------------------------------------


class _Closed:
    def __init__(self, status: grpc.StatusCode | None, details: str | None) -> None:
        self.status = status
        self.details = details


class StreamQueue:
    """A bounded queue per open stream: fed on the reactor thread, read on a gRPC worker thread.

    ``put`` never blocks: when full it drops the item, counts it in ``dropped`` and returns False (a slow client loses
    indications rather than stalling the reactor).  Full is ``maxsize`` items or, with ``max_bytes``, that many
    bytes of queued items (``len`` of bytes, ``ByteSize()`` of protobuf messages; one item is always taken).
    ``close`` ends the stream after the items already queued; it is never dropped, and later puts are refused.
    """

    #: returned by :meth:`get` when nothing arrived within the timeout
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
        self._cond = threading.Condition()

    @property
    def closed(self) -> bool:
        """True once :meth:`close` was called."""
        return self._closed is not None

    def put(self, item: Any) -> bool:
        """Queue ``item`` without blocking; False (and ``dropped`` incremented) if full or closed."""
        with self._cond:
            size = 0 if self.max_bytes is None else len(item) if isinstance(item, bytes) else item.ByteSize()
            if (self._closed is not None or len(self._items) >= self.maxsize
                    or (size and self._items and self.queued_bytes + size > self.max_bytes)):
                self.dropped += 1
                return False
            self._items.append((item, size))
            self.queued_bytes += size
            self._cond.notify()
            self._changed()
            return True

    def close(self, status: grpc.StatusCode | None = None, details: str | None = None) -> None:
        """End the stream once the queued items are read: with ``status`` (an abort) or normally if None.

        Only the first close counts.
        """
        with self._cond:
            if self._closed is None:
                self._closed = _Closed(status, details)
                self._cond.notify_all()
                self._changed()

    def _pop(self) -> Any:
        item, size = self._items.popleft()
        self.queued_bytes -= size
        return item

    def _changed(self) -> None:
        """Called (under the queue's lock) after an item is queued or the queue is closed; for subclasses whose
        reader waits some other way than on this thread condition."""

    def get(self, timeout: float) -> Any:
        """Wait at most ``timeout`` s for the next item; returns it, or ``StreamQueue.EMPTY``, or the close marker."""
        with self._cond:
            if not self._items and self._closed is None:
                self._cond.wait(timeout)
            if self._items:
                return self._pop()
            if self._closed is not None:
                return self._closed
            return self.EMPTY


def iterate(
    stream_queue: StreamQueue,
    context: Any,
    poll: float = 0.5,
    on_done: Callable[[], Any] | None = None,
) -> Iterator[Any]:
    """Yield the items of ``stream_queue`` on the worker thread until it is closed or the RPC is no longer active.

    A close with a status aborts the RPC with it (``context.abort`` raises).  Waits in ``poll``-second slices so a
    cancelled RPC is noticed.  ``on_done`` is called exactly once when the generator finishes, however it finishes
    (end, abort, client gone, generator closed); its errors are logged, not raised, since the stream is over anyway
    (BridgeUnavailable, the reactor stopping, quietly).
    """
    try:
        while context.is_active():
            item = stream_queue.get(poll)
            if item is StreamQueue.EMPTY:
                continue
            if isinstance(item, _Closed):
                if item.status is not None:
                    context.abort(item.status, item.details or "")
                return
            yield item
    finally:
        if on_done is not None:
            try:
                on_done()
            except BridgeUnavailable:
                # The reactor is stopping: the owner's stream table goes away with it, nothing to unregister.
                log.debug("grpc-stream-on-done-skipped reason=stopping")
            except Exception:
                log.failure("grpc-stream-on-done-failed")
