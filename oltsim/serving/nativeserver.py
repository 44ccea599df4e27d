"""The OpenOLT endpoint's default engine: pygrpc-native's low-level front, answered on the reactor's own loop.

An adapter's bring-up is about 240 unary calls per ONU, so what a call costs in Python is what a user feels. grpc.aio
spends about 300 µs of server CPU on an empty call here, the drop-in ``pygrpc_native.aio.server()`` about 40 µs, most
of it an asyncio Task, a context and the interceptor chain per call. This server uses the front underneath it
(``pygrpc_native.NativeGrpcFront``, its stable 0.x API): HTTP/2 and gRPC framing run in Rust outside the GIL, calls
arrive in batches through one dispatch thread, and one wake-up per batch (:class:`oltsim.serving.waker.LoopWaker`,
which keeps the GIL) hands them to the reactor thread, where each unary call of a servicer adapted by
:func:`oltsim.serving.onloop.on_loop` runs inline: parse, the servicer's plain method, serialize, respond. No Task,
no context object, no interceptor.

Everything else keeps grpc.aio's behaviour: coroutine unary handlers and async-generator streams (EnableIndication)
run as Tasks with a small context (``peer``, ``abort``, ``cancelled``); a client's cancel cancels the Task; methods
the front does not serve natively (client or bidirectional streaming: server reflection) go to a grpc.aio server on a
private Unix socket behind it, which the front forwards to. A counting interceptor (one with ``record(method,
code, count)``, as :class:`oltsim.prometheus.AioMetricsInterceptor`) is told about every native call, and runs as an ordinary
interceptor on the fallback; other interceptors are refused, since they could not run on the inline path.

No TLS of its own: on ``ssl:`` endpoints :mod:`oltsim.serving.tlsfront` terminates TLS and relays to the front.
"""
from __future__ import annotations

import asyncio
import concurrent.futures
import inspect
import os
import shutil
import tempfile
import threading
import uuid
from collections import deque
from typing import Any, Callable, Iterable, Sequence

import grpc
from grpc import aio
from twisted.python.failure import Failure

from oltsim.serving.onloop import DecodeGuard, OpenCallLimit, failure_status, undecodable_message
from oltsim.serving.waker import LoopWaker
from oltsim.logs import logger

try:
    from pygrpc_native import NativeGrpcFront, STREAM_CLOSED as _STREAM_CLOSED, STREAM_FULL as _STREAM_FULL
except ImportError:  # available() says so; the daemon then serves with grpcio
    NativeGrpcFront = None
    _STREAM_CLOSED = _STREAM_FULL = -1

__all__ = ["NativeServer", "available"]

log = logger("oltsim.serving.nativeserver")

#: events taken from the front per trip into Python; a burst of calls costs one wake-up of the loop per batch
BATCH = 256
#: the front's tokio I/O threads. Two once measured better on 2 cores with bbr at 16x32 (bigger batches reached the
#: reactor); on VOLTHA's recorded session (bench/replay.py) one costs less: daemon CPU lower in each of 7
#: interleaved pairs, medians 8.4 and 10.3 s against 10.4 and 12.5 s (a loaded 2-core machine), the reactor thread's
#: too: each respond() and stream_try_send() with the GIL held is cheaper without a second I/O thread to contend.
IO_THREADS = 1
#: seconds a stopping server leaves the front to write the statuses of the calls it just ended (the front tells no
#: flush): 50 ms let a loaded 2-CPU machine's client see GOAWAY instead of the status now and then
_FLUSH_PAUSE = 0.25
#: grpcio's default limit on a received message
RECEIVE_LIMIT = 4 * 1024 * 1024
#: bytes a stream may have queued for a client that does not read before its handler waits (and the queue the
#: handler reads, bounded, drops instead): what a stalled reader can cost the process
STREAM_BACKLOG_LIMIT = 256 * 1024
#: calls of a bulk method (OMCI) answered between two looks for other calls, which wait behind at most this many
BULK_CHUNK = 8
#: bulk calls answered before the loop takes a turn (its timers, its other I/O), as a batch from the front is
BULK_PER_TURN = 256
#: threads that send for backed-up streams, per server, when its open calls are not capped
SENDERS = 64

_OK = grpc.StatusCode.OK
_UNAVAILABLE = grpc.StatusCode.UNAVAILABLE.value[0]


def available() -> bool:
    """True when pygrpc-native's compiled front imports on this machine (its wheels cover Linux and macOS)."""
    return NativeGrpcFront is not None


def _same(data: Any) -> Any:
    return data


def _code(code: grpc.StatusCode) -> int:
    return code.value[0]


class _Context(aio.ServicerContext):
    """What a Task-run handler (a stream, a coroutine unary handler) gets: grpc.aio's context, the parts that mean
    something here. ``abort`` raises :class:`grpc.aio.AbortError` after recording the status, as grpc.aio does."""

    def __init__(self, peer: str, metadata: Sequence[tuple[str, Any]]) -> None:
        self._peer = peer
        self._metadata = tuple(metadata)
        self._code: grpc.StatusCode | None = None
        self._details = ""
        self._cancelled = False
        self._done = False
        self._trailing: Sequence[tuple[str, Any]] = ()
        #: set by a server-streaming call: send one item at once, True if taken (see AsyncStreamQueue.put)
        self.direct_send: Callable[[Any], bool] | None = None
        #: set by a server-streaming call: drop what waits unsent and send nothing more (AsyncStreamQueue.discard)
        self.abandon_output: Callable[[], None] | None = None

    async def abort(self, code: grpc.StatusCode, details: str = "", trailing_metadata=()) -> None:
        if code is _OK:
            code, details = grpc.StatusCode.UNKNOWN, ""
        self._code, self._details = code, details
        raise aio.AbortError(details)

    async def abort_with_status(self, status: grpc.Status) -> None:
        await self.abort(status.code, status.details)

    def peer(self) -> str:
        return self._peer

    def invocation_metadata(self) -> tuple:
        return self._metadata

    def cancelled(self) -> bool:
        return self._cancelled

    def done(self) -> bool:
        return self._done

    def set_code(self, code: grpc.StatusCode) -> None:
        self._code = code

    def code(self) -> grpc.StatusCode | None:
        return self._code

    def set_details(self, details: str) -> None:
        self._details = details

    def details(self) -> str:
        return self._details

    def set_trailing_metadata(self, trailing_metadata) -> None:
        self._trailing = trailing_metadata

    def trailing_metadata(self):
        return self._trailing

    # Parts of the interface with no meaning on this server.
    async def read(self) -> None:
        raise RuntimeError("read() is only for client-streaming methods")

    async def write(self, message: Any) -> None:
        raise RuntimeError("write() is not supported; yield from the handler")

    async def send_initial_metadata(self, initial_metadata) -> None:
        pass

    def set_compression(self, compression) -> None:
        pass

    def disable_next_message_compression(self) -> None:
        pass

    def peer_identities(self) -> None:
        return None

    def peer_identity_key(self) -> None:
        return None

    def auth_context(self) -> dict:
        return {"transport_security_type": [b"insecure"]}

    def time_remaining(self) -> float | None:
        return None

    def add_done_callback(self, callback) -> None:
        pass


class _Method:
    """One natively served method: its path, how to parse the request and serialize the answer, and how it runs."""

    __slots__ = ("path", "parse", "serialize", "inline", "servicer", "name", "handler", "streaming", "undecodable")

    def __init__(self, path: str, handler: grpc.RpcMethodHandler) -> None:
        self.path = path
        # No (de)serializer means bytes in and out, as in grpcio.
        self.parse = handler.request_deserializer or _same
        self.undecodable = undecodable_message(path, handler.request_deserializer)
        self.serialize = handler.response_serializer or _same
        self.streaming = handler.response_streaming
        behaviour = handler.unary_stream if self.streaming else handler.unary_unary
        self.handler = behaviour
        # on_loop marks the handlers whose servicer method can run inline (plain function, errors raised).
        inline = None if self.streaming else getattr(behaviour, "inline", None)
        self.inline, self.servicer, self.name = inline or (None, None, None)
        if self.streaming and not inspect.isasyncgenfunction(behaviour):
            raise TypeError(f"{path}: the native engine streams from async generators only")
        if not self.streaming and inline is None and not inspect.iscoroutinefunction(behaviour):
            raise TypeError(f"{path}: the native engine runs coroutine or on_loop handlers only")


class NativeServer(aio.Server):
    """A ``grpc.aio.Server`` on pygrpc-native's front whose handlers run on ``loop`` (the reactor's).

    The calls :class:`oltsim.serving.grpcserver.GrpcServerService` and generated code make: ``add_registered_method_handlers``
    and ``add_generic_rpc_handlers``, one ``add_insecure_port``, ``start`` and ``stop`` (coroutines).
    """

    def __init__(self, loop: asyncio.AbstractEventLoop, clock: Any, interceptors: Sequence[Any] = (),
                 options: Iterable[tuple[str, Any]] = (), io_threads: int = IO_THREADS, name: str = "grpc",
                 max_streams: int | None = None, bulk_methods: Iterable[str] = ()) -> None:
        self._records: list[Callable[[str, grpc.StatusCode], None]] = []
        self._admits: list[Callable[[str, Sequence[tuple[str, Any]]], tuple[grpc.StatusCode, str] | None]] = []
        for interceptor in interceptors:
            record = getattr(interceptor, "record", None)
            admit = getattr(interceptor, "admit", None)
            if record is None and admit is None:
                raise ValueError(f"the native engine cannot run {type(interceptor).__name__} on its inline calls; "
                                 "only counting interceptors (with record(method, code, count)) and admission "
                                 "interceptors (with admit(method, metadata))")
            if record is not None:
                self._records.append(record)
            if admit is not None:
                self._admits.append(admit)
        self.name = name
        #: Task-run calls (streams, coroutine handlers) and the fallback's streams (reflection) open at once; more
        #: are refused with RESOURCE_EXHAUSTED
        self.max_streams = max_streams
        # One cap for both: the first refusal is logged at once, the others of the interval summed up (``clock``: the
        # reactor).
        self._limit = None if max_streams is None else OpenCallLimit(max_streams, clock, name,
                                                                     also_open=lambda: len(self._tasks))
        self._loop = loop
        self._interceptors = tuple(interceptors)
        self._options = list(options)
        self._io_threads = io_threads
        self._registered: dict[str, grpc.RpcMethodHandler] = {}
        self._generic: list[grpc.GenericRpcHandler] = []
        self._front: Any = None
        self._table: list[_Method] = []
        self._tasks: dict[int, tuple[asyncio.Task, _Context]] = {}
        self._answered: dict[str, int] = {}  # calls answered OK in the batch being handled, by method
        #: stream messages sent at once while an inline call runs: they go out after its answer, as a Task-run
        #: stream's would (the adapter sees OmciMsgOut answered before the omci_ind it caused)
        self._held: list[tuple[_StreamOut, bytes]] | None = None
        self._pending: list = []  # events the dispatch thread received that the loop has not taken yet
        self._waker: LoopWaker | None = None  # how the dispatch thread wakes the loop, once started
        self._dispatching = False
        self._pending_lock = threading.Lock()
        self._fallback: aio.Server | None = None
        self._fallback_dir: str | None = None
        self._started = self._stopping = False
        self._fallback_started: asyncio.Task | None = None
        self._terminated = asyncio.Event()
        #: methods answered after the others of a batch, BULK_CHUNK at a time (see _on_events, _drain_bulk)
        self._bulk_paths = frozenset(bulk_methods)
        self._bulk_ids: frozenset[int] = frozenset()
        self._bulk: deque = deque()
        self._bulk_scheduled = False
        # The threads that wait for a backed-up stream's client (see _StreamOut), this server's own: a client that
        # stopped reading holds one until it reads or leaves, and must not hold the threads of another server's
        # streams (the adapter's indications) nor of the loop's default executor. Its Task, under the open-call
        # cap, waits for that thread, so the cap bounds them.
        self._senders = concurrent.futures.ThreadPoolExecutor(max_workers=max_streams or SENDERS,
                                                              thread_name_prefix=f"{name}-stream-send")
        #: set by the TLS relay in front (oltsim.serving.tlsfront): the front's name for each relayed connection ->
        #: its client's; calls from other connections are refused
        self.peer_names: dict[str, str] | None = None

    # ---- building -------------------------------------------------------------------------------------------

    def add_generic_rpc_handlers(self, generic_rpc_handlers: Sequence[grpc.GenericRpcHandler]) -> None:
        self._generic.extend(generic_rpc_handlers)

    def add_registered_method_handlers(self, service_name: str, method_handlers: dict) -> None:
        for name, handler in method_handlers.items():
            self._registered[f"/{service_name}/{name}"] = handler

    def add_insecure_port(self, address: str) -> int:
        if NativeGrpcFront is None:
            raise RuntimeError("pygrpc-native does not import here: serve with the grpcio engine")
        if self._front is not None:
            raise RuntimeError("the native engine serves one port")
        front_options = {"max_concurrent_streams": 1024, "reuse_port": False}
        for key, value in self._options:
            if key == "grpc.max_concurrent_streams" and isinstance(value, int):
                front_options["max_concurrent_streams"] = value
            elif key == "grpc.so_reuseport" and isinstance(value, int):
                front_options["reuse_port"] = bool(value)
        try:
            self._front = NativeGrpcFront(address, [], io_threads=self._io_threads, call_details=True,
                                          delay_stream_headers=True, **front_options)
        except OSError as exc:
            raise RuntimeError(f"Failed to bind to address {address}: {exc}") from exc
        return self._front.bound_port

    def add_secure_port(self, address: str, server_credentials: grpc.ServerCredentials) -> int:
        raise NotImplementedError("the native engine's TLS is a relay in front of it (oltsim.serving.tlsfront)")

    def discard(self) -> None:
        """Release what a server that will never start holds (its port), e.g. after a later step failed to bind."""
        if not self._started and self._front is not None:
            self._front.close()
            self._front = None

    # ---- running --------------------------------------------------------------------------------------------

    async def start(self) -> None:
        """grpc.aio's start: :meth:`start_now`, then wait for the fallback server to be serving."""
        if not self._started:
            self.start_now()
        try:
            await self._fallback_started
        except BaseException:
            # Not serving after all: release the port, so that a later start can bind it again.
            self._stopping = True
            await asyncio.get_running_loop().run_in_executor(None, self._front.close)
            self._remove_fallback_dir()
            self._terminated.set()
            raise

    def start_now(self) -> None:
        """Start serving at once, from the reactor thread: the port accepts calls when this returns (a caller that
        restarts the server and calls at once must not find it refusing connections). Only the fallback's own
        start finishes later, on the loop (:meth:`start` waits for it)."""
        if self._started:
            raise ValueError("the server is already started")
        if self._front is None:
            raise RuntimeError("add a port before start()")
        self._started = True
        try:
            self._start_serving()
        except BaseException:
            # Nothing may stay bound by a server that failed to start (a later start binds the same port).
            self._front.close()
            if self._waker is not None and not self._dispatching:
                self._waker.close()
            self._remove_fallback_dir()
            raise

    def _start_serving(self) -> None:
        native: list[tuple[str, grpc.RpcMethodHandler]] = []
        streamed: dict[str, dict[str, grpc.RpcMethodHandler]] = {}
        for path, handler in self._registered.items():
            if handler.request_streaming:
                service, name = path[1:].split("/")
                streamed.setdefault(service, {})[name] = handler
            else:
                native.append((path, handler))
        services = {path[1:].split("/")[0] for path in self._registered}
        generic = [h for h in self._generic
                   if not (isinstance(h, grpc.ServiceRpcHandler) and h.service_name() in services)]
        # Reflection (bidirectional) and unknown methods: a grpc.aio server behind the front, on a private socket,
        # bound here (connections wait in its backlog) and serving once its start coroutine has run.
        self._fallback_dir = tempfile.mkdtemp(prefix="oltsim-grpc-")
        path = os.path.join(self._fallback_dir, "fallback.sock")
        limit = () if self._limit is None else (self._limit,)
        fallback = aio.server(interceptors=(*self._interceptors, *limit, DecodeGuard()), options=self._options)
        fallback.add_generic_rpc_handlers(generic)
        for service, handlers in streamed.items():
            fallback.add_registered_method_handlers(service, handlers)
        fallback.add_insecure_port(f"unix:{path}")
        self._fallback = fallback
        self._fallback_started = self._loop.create_task(fallback.start())
        self._front.set_fallback(path)
        self._table = [_Method(path, handler) for path, handler in native]
        self._bulk_ids = frozenset(i for i, method in enumerate(self._table) if method.path in self._bulk_paths)
        self._front.add_methods([(method.path, method.streaming) for method in self._table])
        self._waker = LoopWaker(self._loop, self._take_pending)
        self._front.start()
        threading.Thread(target=self._dispatch, name="openolt-native-dispatch", daemon=True).start()
        self._dispatching = True  # the thread closes the waker when it ends

    async def stop(self, grace: float | None) -> None:
        """Refuse new calls (UNAVAILABLE), give running Tasks ``grace`` seconds, cancel the rest, close the port."""
        if self._stopping:
            await self._terminated.wait()
            return
        self._stopping = True
        try:
            if self._fallback_started is not None:
                # grpc.aio stopped before its start has finished crashes the process (SIGSEGV in grpcio's core).
                await asyncio.wait([self._fallback_started])
            fallback = None if self._fallback is None else asyncio.ensure_future(self._fallback.stop(grace))
            tasks = [task for task, _ in self._tasks.values()]
            if grace and tasks:
                await asyncio.wait(tasks, timeout=grace)
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            if tasks:
                # The statuses those calls ended with are written by the front's I/O threads; closing the port at
                # once can overtake them (the client then sees GOAWAY instead of the status). A moment for them.
                await asyncio.sleep(_FLUSH_PAUSE)
            if fallback is not None:
                await fallback
            if self._front is not None:
                # close() joins the front's threads: off the reactor thread.
                await asyncio.get_running_loop().run_in_executor(None, self._front.close)
        finally:
            # The port is closed: a send still waiting for its client has returned.
            self._senders.shutdown(wait=False)
            if self._limit is not None:
                self._limit.flush()  # what is still counted, now: no timer outlives the server
            self._remove_fallback_dir()
            self._terminated.set()

    def _remove_fallback_dir(self) -> None:
        if self._fallback_dir is not None:
            shutil.rmtree(self._fallback_dir, ignore_errors=True)

    async def wait_for_termination(self, timeout: float | None = None) -> bool:
        try:
            await asyncio.wait_for(self._terminated.wait(), timeout)
        except asyncio.TimeoutError:
            return True
        return False

    def _dispatch(self) -> None:
        """The one thread that waits on the front: a batch of events per trip, handed to the reactor's loop.

        Batches that arrive while the loop has not yet taken the previous ones join them, so a busy reactor is
        woken once for all of them (a wake-up, an eventfd write and read, costs about as much as a call).
        """
        front, loop, lock, waker = self._front, self._loop, self._pending_lock, self._waker
        try:
            while (batch := front.recv_batch_details(BATCH)) is not None:
                with lock:
                    pending = self._pending
                    pending.extend(batch)
                    if len(pending) > len(batch):
                        continue  # a wake-up is already on its way
                if loop.is_closed():  # nobody will answer
                    front.close()
                    return
                waker.wake()
        finally:
            # This thread wakes the loop no more: its descriptor can go (on the loop, which watches it).
            try:
                loop.call_soon_threadsafe(waker.close)
            except RuntimeError:  # the loop is closed
                waker.close()

    def _take_pending(self) -> None:
        with self._pending_lock:
            batch, self._pending = self._pending, []
        self._on_events(batch)

    # ---- answering (reactor thread) -------------------------------------------------------------------------

    def _on_events(self, batch: list) -> None:
        """A batch from the front. Calls of the bulk methods (the OpenOLT port's OmciMsgOut) wait behind the others
        and are then answered BULK_CHUNK at a time (_drain_bulk; at once, after the others, when none waits and the
        batch holds at most a chunk of them, as one request at a time brings): with every ONU uploading its MIB, a
        batch holds one OMCI request per ONU, and an adapter's FlowAdd, heartbeat or scheduler call, which it sends
        one at a time, would otherwise wait for all of them (a FlowAdd's round trip then 2.4 - 2.9x BBSim's). Calls
        on different HTTP/2 streams carry no order between them; each method's own calls keep theirs."""
        bulk_ids = self._bulk_ids
        if bulk_ids:
            urgent = [event for event in batch if event[3] is None or event[2] not in bulk_ids]
            if len(urgent) != len(batch):
                bulk = [event for event in batch if event[3] is not None and event[2] in bulk_ids]
                if urgent:
                    self._handle(urgent)
                if not self._bulk_scheduled and len(bulk) <= BULK_CHUNK:
                    # Nothing waits before them and they are one chunk (one request at a time, as adapters send
                    # OMCI): answered now, without a turn of the loop in between.
                    self._handle(bulk)
                    return
                self._bulk.extend(bulk)
                if not self._bulk_scheduled:
                    self._bulk_scheduled = True
                    self._loop.call_soon(self._drain_bulk)
                return
        self._handle(batch)

    def _drain_bulk(self) -> None:
        """Answer waiting bulk calls, BULK_CHUNK at a time, up to BULK_PER_TURN before the loop's next turn. Before
        each chunk, what the front handed over meanwhile is taken (the dispatch thread gets the GIL at least every
        switch interval), so another call waits behind one chunk at most, without a turn of the loop per chunk
        (a turn per 8 calls cost bbr at 2048 ONUs about a tenth more CPU)."""
        bulk, lock = self._bulk, self._pending_lock
        done = 0
        try:
            while bulk and done < BULK_PER_TURN:
                with lock:
                    arrived, self._pending = self._pending, []
                if arrived:
                    self._on_events(arrived)  # its bulk calls join the queue (no second drain is scheduled)
                chunk = [bulk.popleft() for _ in range(min(BULK_CHUNK, len(bulk)))]
                done += len(chunk)
                self._handle(chunk)
        finally:
            # The rest on the loop's next turn, whatever happened here: nothing is stranded.
            self._bulk_scheduled = bool(bulk)
            if bulk:
                self._loop.call_soon(self._drain_bulk)

    def _handle(self, batch: list) -> None:
        front, table = self._front, self._table
        answered = self._answered
        for kind, call_id, method_id, payload, _key, details in batch:
            if payload is None:  # EVENT_CANCEL: the client left or the deadline passed
                running = self._tasks.get(call_id)
                if running is not None:
                    running[1]._cancelled = True
                    running[0].cancel()
                continue
            method = table[method_id]  # the front only dispatches the methods it was given
            if self._stopping:
                self._fail(call_id, method.path, grpc.StatusCode.UNAVAILABLE, "the server is stopping")
                continue
            try:
                peer = details[1]
                if self.peer_names is not None:  # behind the TLS relay: the client it names, or a stranger
                    peer = self.peer_names.get(peer)
                    if peer is None:
                        self._fail(call_id, method.path, grpc.StatusCode.PERMISSION_DENIED,
                                   "connect to this server's TLS port")
                        continue
                if self._admits and self._refused_entry(call_id, method.path, details[0]):
                    continue
                if len(payload) > RECEIVE_LIMIT:
                    self._fail(call_id, method.path, grpc.StatusCode.RESOURCE_EXHAUSTED,
                               f"received message larger than max ({len(payload)} vs. {RECEIVE_LIMIT})")
                    continue
                try:
                    request = method.parse(payload)
                except Exception:
                    self._fail(call_id, method.path, grpc.StatusCode.INVALID_ARGUMENT, method.undecodable)
                    continue
                if method.inline is not None:
                    self._answer_inline(front, call_id, method, request, peer)
                else:
                    self._start_task(call_id, method, request, details[0], peer)
            except Exception:  # a bug here must not lose the rest of the batch nor leave the call unanswered
                log.failure("openolt-native-call-failed method={method}", method=method.path)
                self._fail(call_id, method.path, grpc.StatusCode.INTERNAL, "internal error")
        if answered:
            # Counted once per method and batch: a counter's lock per call cost more than the count.
            for path, count in answered.items():
                for record in self._records:
                    record(path, _OK, count)
            answered.clear()

    def _answer_inline(self, front: Any, call_id: int, method: _Method, request: Any, peer: str) -> None:
        held = self._held = []
        try:
            try:
                response = method.inline(request, _InlineContext(peer))
            except Exception as exc:
                code, details = failure_status(method.servicer, method.name, exc)
                self._fail(call_id, method.path, code, details)
            else:
                front.respond(call_id, method.serialize(response))
                self._answered[method.path] = self._answered.get(method.path, 0) + 1
        finally:
            self._held = None
            for out, data in held:
                out.send(data)

    def _direct_sender(self, out: _StreamOut, serialize: Callable[[Any], bytes],
                       context: _Context) -> Callable[[Any], bool]:
        """A stream's ``direct_send``: the item serialized and sent now (after the answer of the inline call
        running, if any), unless the stream is backed up (a worker drains it) or over: then False, and the item
        takes the stream's queue and its Task."""
        def direct_send(item: Any) -> bool:
            if out.closed or out._busy or context._cancelled or self._stopping:
                return False
            data = serialize(item)
            if self._held is not None:
                self._held.append((out, data))
            else:
                out.send(data)
            return True
        return direct_send

    def _refused_entry(self, call_id: int, path: str, metadata: Sequence[tuple[str, Any]]) -> bool:
        """Ask the admission interceptors (the access token) about a call; True if one refused it (answered)."""
        for admit in self._admits:
            refusal = admit(path, metadata)
            if refusal is not None:
                self._fail(call_id, path, *refusal)
                return True
        return False

    def _fail(self, call_id: int, path: str, code: grpc.StatusCode, details: str) -> None:
        self._front.fail(call_id, _code(code), details)
        self._count(path, code)

    def _count(self, path: str, code: grpc.StatusCode) -> None:
        for record in self._records:
            record(path, code)

    def _start_task(self, call_id: int, method: _Method, request: Any, metadata: Sequence[tuple[str, Any]],
                    peer: str) -> None:
        if self._limit is not None and self._limit.full():
            # RESOURCE_EXHAUSTED and a grpc-call-refused line (the first of an interval; the rest summed up)
            self._fail(call_id, method.path, grpc.StatusCode.RESOURCE_EXHAUSTED, self._limit.reason)
            self._limit.refused(method.path)
            return
        context = _Context(peer, metadata)
        run = self._run_stream if method.streaming else self._run_unary
        task = self._loop.create_task(run(call_id, method, request, context))
        self._tasks[call_id] = (task, context)
        task.add_done_callback(lambda _: self._tasks.pop(call_id, None))

    def _settle(self, call_id: int, method: _Method, context: _Context, error: BaseException | None) -> None:
        """End a Task-run call: its status from the abort, the cancel or the error."""
        context._done = True
        if isinstance(error, asyncio.CancelledError):
            if self._stopping:
                # Ended now, not when the port closes: a blocked send returns, and an adapter reconnects at once.
                self._front.fail(call_id, _UNAVAILABLE, "the server is stopping")
            elif not context._cancelled:
                self._front.fail(call_id, _code(grpc.StatusCode.CANCELLED), "Cancelled")
            self._count(method.path, grpc.StatusCode.CANCELLED)
        elif isinstance(error, aio.AbortError) or (error is None and context._code not in (None, _OK)):
            self._fail(call_id, method.path, context._code or grpc.StatusCode.UNKNOWN, context._details)
        elif error is not None:
            # An error the handler did not map: logged with a request id the answer names, never its class name.
            request_id = uuid.uuid4().hex[:12]
            log.failure("grpc-native-handler-failed server={server} method={method} request_id={request_id}",
                        failure=Failure(error), server=self.name, method=method.path, request_id=request_id)
            self._fail(call_id, method.path, grpc.StatusCode.INTERNAL, f"internal error (request id {request_id})")
        else:
            if method.streaming:
                self._front.stream_end(call_id)
            self._count(method.path, _OK)

    async def _run_unary(self, call_id: int, method: _Method, request: Any, context: _Context) -> None:
        try:
            response = await method.handler(request, context)
        except BaseException as error:
            self._settle(call_id, method, context, error)
            if not isinstance(error, Exception):
                raise
            return
        if context._code in (None, _OK):
            self._front.respond(call_id, method.serialize(response))
        self._settle(call_id, method, context, None)

    async def _run_stream(self, call_id: int, method: _Method, request: Any, context: _Context) -> None:
        serialize = method.serialize
        out = _StreamOut(self._front, call_id, self._loop, self._senders)
        context.direct_send = self._direct_sender(out, serialize, context)
        context.abandon_output = out.abandon
        items = method.handler(request, context)
        try:
            async for item in items:
                if not out.send(serialize(item)):
                    break  # the client is gone
                if out.backlog_bytes > STREAM_BACKLOG_LIMIT:
                    # The client does not keep up: wait for it, so that what it has not read piles up in the
                    # handler's own bounded queue (which drops and counts) rather than here without bound.
                    await out.drained()
            await out.drained()
        except BaseException as error:
            if isinstance(error, Exception):
                await items.aclose()
                await out.drained()  # what was yielded before the abort goes out before its status
            else:
                out.abandon()  # cancelled (client gone, server stopping): nothing more goes out
                await items.aclose()
            self._settle(call_id, method, context, error)
            if not isinstance(error, Exception):
                raise
            return
        await items.aclose()
        self._settle(call_id, method, context, None)


class _StreamOut:
    """The sending end of one native stream, never blocking the reactor thread.

    While the client keeps up, each message goes out at once (``stream_try_send``). When the front says the stream
    is full, a worker thread takes over with blocking sends and the reactor appends what comes next to a backlog
    that thread drains: one thread hop per backlog instead of one per message (per-message hops cost a quarter of
    the daemon's CPU in a bbr run), and no polling, which would delay the OMCI answers an adapter waits on. Order is
    kept: while the worker owns the backlog (``_busy``), everything goes through it; the worker lets go of it under
    the lock the reactor appends under, so nothing is left behind. A worker that ends tells the loop only when a
    handler waits for it (:meth:`drained`): VOLTHA's recorded session backs its indication stream up about 4,650
    times, and a wake-up of the loop per hand-back (a future's result set from the thread) cost GIL hand-offs and
    turns of the loop.
    """

    def __init__(self, front: Any, call_id: int, loop: asyncio.AbstractEventLoop,
                 senders: concurrent.futures.Executor) -> None:
        self._front = front
        self._call_id = call_id
        self._loop = loop
        self._senders = senders
        self._backlog: deque[bytes] = deque()
        self._lock = threading.Lock()  # the backlog's hand-back: _busy, _waiter and what is appended meanwhile
        self._busy = False  # a worker owns the backlog (set on the loop, cleared by the worker under the lock)
        self._waiter: asyncio.Future | None = None  # what drained() waits on while a worker runs
        self.closed = False
        #: bytes queued for the worker
        self.backlog_bytes = 0

    def send(self, data: bytes) -> bool:
        """Send or queue one message; False once the client is gone."""
        if self.closed:
            return False
        if self._busy:
            with self._lock:
                if self._busy:
                    self._backlog.append(data)
                    self.backlog_bytes += len(data)
                    return True
            # The worker let go meanwhile, its backlog sent (or the client gone).
            if self.closed:
                return False
        sent = self._front.stream_try_send(self._call_id, data)
        if sent == _STREAM_FULL:
            self._backlog.append(data)
            self.backlog_bytes += len(data)
            self._busy = True
            try:
                self._senders.submit(self._drain)
            except BaseException:  # the server is stopping (its senders shut down): nobody will send it
                self._busy = False
                raise
        elif sent == _STREAM_CLOSED:
            self.closed = True
        return not self.closed

    def abandon(self) -> None:
        """Drop what is still queued: the worker stops after the send in progress (which the front ends when it
        closes the stream or the port), as a cancelled grpc.aio stream sends nothing more."""
        self.closed = True
        with self._lock:
            self._backlog.clear()
            self.backlog_bytes = 0

    def _drain(self) -> None:
        # Worker thread: sends the backlog until it is empty, then lets go of it under the lock.
        backlog, front, call_id, lock = self._backlog, self._front, self._call_id, self._lock
        while True:
            with lock:
                if not backlog or self.closed:
                    self._busy = False
                    waiter, self._waiter = self._waiter, None
                    break
                data = backlog.popleft()
                self.backlog_bytes -= len(data)
            try:
                sent = front.stream_send(call_id, data)
            except Exception:
                sent = False
            if not sent:  # the client is gone
                self.closed = True
                with lock:
                    backlog.clear()
                    self.backlog_bytes = 0
        if waiter is not None:
            try:
                self._loop.call_soon_threadsafe(_set_done, waiter)
            except RuntimeError:  # the loop is closed: nobody waits any more
                pass

    async def drained(self) -> None:
        """Wait until everything queued has gone out (or the client left)."""
        while self._busy:
            with self._lock:
                if not self._busy:
                    break
                if self._waiter is None:
                    self._waiter = self._loop.create_future()
                waiter = self._waiter
            # wait() does not cancel the waiter if we are cancelled (another handler call may share it).
            await asyncio.wait([waiter])


def _set_done(future: asyncio.Future) -> None:
    if not future.done():
        future.set_result(None)


class _InlineContext:
    """The context an inline unary method gets: its peer only. A servicer method run inline reports a refusal by
    raising (see :func:`oltsim.serving.onloop.on_loop`), never through the context."""

    __slots__ = ("_peer",)

    def __init__(self, peer: str) -> None:
        self._peer = peer

    def peer(self) -> str:
        return self._peer

    # The generated base class's "not implemented" stub sets these before raising NotImplementedError.
    def set_code(self, code: grpc.StatusCode) -> None:
        pass

    def set_details(self, details: str) -> None:
        pass
