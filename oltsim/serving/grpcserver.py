"""gRPC servers as Twisted services: endpoint strings in, a server on the reactor's own loop started and stopped
without blocking the reactor.

The engines (pygrpc-native's front, or grpc.aio) have their own listeners, so a Twisted endpoint string is translated
(:func:`parse_grpc_endpoint`) rather than used.  The server is built in ``startService`` (after twistd's fork); it
can also be stopped and restarted at runtime on the same port (OLT reboot, Stop/StartgRPCServer).
"""

from __future__ import annotations

import asyncio
from typing import Any, Callable, Sequence

import grpc
from twisted.application.service import Service
from twisted.internet.defer import Deferred, succeed
from twisted.internet.error import CannotListenError
from oltsim.logs import logger
from oltsim.serving.endpoints import GrpcListen, bind_error, bind_refusal, parse_grpc_endpoint
from oltsim.serving.nativeserver import NativeServer
from oltsim.serving.onloop import DecodeGuard, OpenCallLimit, check_asyncio_reactor

__all__ = ["AlreadyRunning", "ENGINES", "GrpcListen", "GrpcServerService", "parse_grpc_endpoint"]

#: How a GrpcServerService serves: grpc.aio on the
#: reactor's loop, or pygrpc-native's front on the reactor's loop (oltsim.serving.nativeserver; TLS through oltsim.serving.tlsfront).
ENGINES = ("grpcio", "native")

log = logger("oltsim.serving.grpcserver")


#: Calls grpc.aio accepts before its handlers take them (C-core's default is 1000, then 3000 as a hard limit).
#: An adapter bringing up 2048 ONUs at once has about that many unary calls outstanding (BBR does: one OMCI
#: request per ONU), and above the limit C-core refuses streams (REFUSED_STREAM, UNAVAILABLE for the client),
#: which BBR treats as fatal. The calls still wait at most grpc.server_max_unrequested_time_in_server (30 s).
#: It is also what an HTTP/2 "rapid reset" (streams opened and reset at once) can pile up: each pending call holds
#: about 23 KiB in C-core, so 65536 let 90k reset streams grow the daemon by 850 MB (tests/support/abuse.py rapid-reset);
#: 4096 bounds that at about 95 MB. The native engine, the default, keeps nothing for a reset stream.
MAX_PENDING_CALLS = 4096

_OPTIONS = [
    # so_reuseport off: otherwise a second simulator could bind the same port and silently share its clients.
    ("grpc.so_reuseport", 0),
    ("grpc.server.max_pending_requests", MAX_PENDING_CALLS),
    ("grpc.server.max_pending_requests_hard_limit", MAX_PENDING_CALLS),
]

#: HTTP/2 streams per connection on the native engine's OpenOLT port. A Go or grpcio client waits for a free stream
#: rather than failing, so an adapter's burst (one OMCI request per ONU at once) just queues: bbr at 2048 ONUs ran as
#: fast with 1024 as with 65536. The limit is what a client that sends HEADERS and never the body can hold: pygrpc-
#: native keeps about 12 KiB per such stream (one connection with 20000 of them grew the daemon by 238 MB), so 1024
#: bounds a connection at about 12 MB. Its HTTP/2 layer answers a rapid reset with GOAWAY (tests/support/abuse.py
#: rapid-reset: +1 MB, heartbeats within 12 ms).
NATIVE_STREAMS_PER_CONNECTION = 1024

# The fallback (reflection) behind the native front is a grpc.aio server and takes _OPTIONS' limits.
_NATIVE_OPTIONS = _OPTIONS + [("grpc.max_concurrent_streams", NATIVE_STREAMS_PER_CONNECTION)]

# Not grpc.aio's OpenOLT port: with 1024 streams per connection a rapid reset grew the daemon by 32 MB instead of
# 104 MB (tests/support/abuse.py --only rapid-reset --engines grpcio --scale 0.3, medians of 3), but C-core then refused a few
# of an adapter's 4000 queued calls with UNAVAILABLE (REFUSED_STREAM: it still counts streams the client has seen
# end), which BBR treats as fatal (test_thousands_of_outstanding_calls_are_queued_not_refused). grpcio is the weaker
# engine against a rapid reset (docs/limits.md).
_GRPCIO_OPTIONS = _OPTIONS

#: HTTP/2 streams a connection may open on a server that caps its open calls, beyond the cap (``max_calls``): a
#: client holding as many streams as the server lets stay open still has room for its other calls, and its next
#: stream reaches the server, which refuses it at once (RESOURCE_EXHAUSTED, logged). With a per-connection limit at
#: or below the cap, that stream would wait silently in the client until its deadline. On grpc.aio the cap
#: on every call (streams, unary calls, calls whose request has not come) is as high, so that the cap on streams
#: refuses first. 256 + 64 = 320 by default: above the 100 to 250 common servers allow (Go's HTTP/2 250, hyper 200,
#: nginx 128), and what a client that sends HEADERS and never the body can hold, at about 14.5 KiB each in
#: pygrpc-native's front, is about 4.5 MiB per connection.
STREAMS_ABOVE_CAP = 64


class AlreadyRunning(Exception):
    """start_server was called while the gRPC server is serving."""


class GrpcServerService(Service):
    """A gRPC server as a Twisted service, restartable at runtime on the port it bound first.

    ``IService.running`` keeps its Twisted meaning (the service was started); ``serving`` says whether the gRPC
    server is up (false between ``stop_server`` and ``start_server``).  Callables in ``on_stopping`` run on the
    reactor thread just before each stop, so open streams can be closed (UNAVAILABLE) through their StreamQueues.

    ``engine`` (one of :data:`ENGINES`): ``grpcio`` is a ``grpc.aio`` server and ``native`` (the default) a
    :class:`oltsim.serving.nativeserver.NativeServer`, both on the reactor's
    own asyncio loop (Twisted's asyncio reactor; see :mod:`oltsim.serving.onloop`), where handlers run on the reactor thread
    and ``interceptors`` are ``grpc.aio`` ones.  Starting either on another reactor fails with
    :class:`oltsim.serving.onloop.NotOnLoop`. ``native`` serves an ``ssl:`` endpoint through a TLS relay in front of it
    (:mod:`oltsim.serving.tlsfront`).

    On a plain (``tcp:``) endpoint either engine listens on the port itself: no hop between the client and the
    engine, and ``context.peer()`` is the client. Neither engine has a hook on accept, so the connections there are
    bounded from outside (``oltsim.serving.descriptors``: the descriptor limit, and a watch over ``own_port``); an idle
    connection costs the native front about 17 KiB, and one that never sends its HTTP/2 preface is dropped after
    120 s. ``max_connections`` and ``max_connections_per_peer`` (both or neither) bound the connections of the TLS
    relay (:mod:`oltsim.serving.connlimit`: when full, the connection idle the longest makes room).
    """

    def __init__(
        self,
        name: str,
        endpoint: str,
        add_servicers: Callable[[grpc.Server], None],
        reactor: Any = None,
        grace: float = 0.5,
        interceptors: Sequence[Any] = (),
        engine: str = "native",
        max_calls: int | None = None,
        max_calls_per_connection: int | None = None,
        max_connections: int | None = None,
        max_connections_per_peer: int | None = None,
        bulk_methods: Sequence[str] = (),
    ) -> None:
        self.setName(name)
        self.endpoint = endpoint
        self._listen = parse_grpc_endpoint(endpoint)  # a bad string fails while building, before anything listens
        if engine not in ENGINES:
            raise ValueError(f"gRPC engine must be one of {', '.join(ENGINES)}, not {engine!r}")
        self.engine = engine
        #: streams open at once (native: Task-run calls and reflection; grpc.aio: streaming calls), more are refused
        #: with RESOURCE_EXHAUSTED; and HTTP/2 streams per connection (a client beyond them waits or is refused),
        #: STREAMS_ABOVE_CAP above the cap unless given
        self.max_calls = max_calls
        if max_calls_per_connection is None and max_calls is not None:
            max_calls_per_connection = max_calls + STREAMS_ABOVE_CAP
        self.max_calls_per_connection = max_calls_per_connection
        self._call_limit: OpenCallLimit | None = None  # grpc.aio's cap on streams, while serving
        #: connections the endpoint holds (None: unbounded, the engine listens on the endpoint itself)
        self.max_connections = max_connections
        self.max_connections_per_peer = max_connections_per_peer
        self._limits: Any = None  # their counts (oltsim.serving.connlimit.ConnectionLimits), kept across restarts
        self._add_servicers = add_servicers
        #: methods the native engine answers after the others of a batch, a few per turn (NativeServer._on_events)
        self.bulk_methods = tuple(bulk_methods)
        self._reactor = reactor
        self.grace = grace
        #: grpc.ServerInterceptors, outermost first; they see every method of the server, reflection included
        self.interceptors = tuple(interceptors)
        #: the port actually bound (set by the first start; later starts re-bind it)
        self.port: int | None = None
        self.address: str | None = None
        self.on_stopping: list[Callable[[], Any]] = []
        self._loop: asyncio.AbstractEventLoop | None = None
        self._server: Any = None
        self._stopping: Deferred | None = None  # a stop in progress, until the old server has let the port go
        self._start_after_stop = False  # start_server was called during that stop
        self._starting: asyncio.Task | None = None  # a loop server's start coroutine (a stop waits for it)
        self._tls: Any = None  # the TLS relay in front of the native engine on an ssl: endpoint (oltsim.serving.tlsfront)

    def _get_reactor(self) -> Any:
        if self._reactor is None:
            from twisted.internet import reactor

            self._reactor = reactor
        return self._reactor

    @property
    def serving(self) -> bool:
        """True while the gRPC server is started and not stopped (or its start waits for the previous stop)."""
        return self._server is not None or self._start_after_stop

    def startService(self) -> None:
        """Start the service and its gRPC server."""
        super().startService()
        self.start_server()

    def stopService(self) -> Deferred:
        """Stop the gRPC server; the Deferred fires once grpcio has stopped (after at most ``grace`` seconds)."""
        super().stopService()
        return self.stop_server()

    def start_server(self) -> None:
        """Build, bind and start the gRPC server; AlreadyRunning if it is serving.

        The first start binds the endpoint's port (for ``tcp:0``, whatever the system chose) and records it in
        ``port``; later starts bind that same port. Called while a stop is still releasing the port (a restart with
        no delay), it starts as soon as that stop has finished, and ``serving`` is already true.
        """
        if self._server is not None or self._start_after_stop:
            raise AlreadyRunning(f"gRPC server {self.name} is already serving on {self.address}")
        if self._stopping is not None:
            # The previous server still holds the port (its stop is asynchronous): binding now would fail with
            # "address already in use" and leave the endpoint down. Start as soon as that stop has finished.
            self._start_after_stop = True
            return
        listen = self._listen if self.port is None else self._listen.with_port(self.port)
        server = self._loop_server()
        try:
            self._add_servicers(server)
            if self._relayed(listen):
                address, bound = self._bind_tls_front(server, listen)
            else:
                address, bound = self._bind(server, listen)
        except BaseException:
            if self.engine == "native":
                server.discard()
            raise
        if self.engine == "native":
            # Accepting calls when start_server returns (a restart followed at once by a call must not be refused);
            # only its fallback finishes starting on the loop.
            try:
                server.start_now()
            except BaseException:
                self._abandon_tls_front()
                raise
        # Bound above; serving starts on the loop's next turn (start is a coroutine). A stop waits for it: grpc.aio
        # stopped before its start has finished crashes the process (SIGSEGV in grpcio's core).
        self._starting = self._loop.create_task(server.start())
        Deferred.fromFuture(asyncio.ensure_future(self._starting)).addErrback(self._start_failed, server)
        self._server = server
        self.port, self.address = bound, address
        log.info("grpc-server-started name={name} address={address} engine={engine}", name=self.name, address=address,
                 engine=self.engine)

    def _start_failed(self, failure: Any, server: Any) -> None:
        log.failure("grpc-server-start-failed name={name} address={address}", failure, name=self.name,
                    address=self.address)
        if self._server is server:
            self._server = None  # not serving: a later start_server may try again
            self._abandon_tls_front()

    def _loop_server(self) -> grpc.aio.Server:
        # grpc.aio binds its server to the thread's current asyncio loop: it must be the reactor's.
        self._loop = check_asyncio_reactor(self._get_reactor())
        asyncio.set_event_loop(self._loop)
        if self.engine == "native":
            return NativeServer(self._loop, self._get_reactor(), interceptors=self.interceptors, name=self.name,
                                options=self._per_connection(_NATIVE_OPTIONS), max_streams=self.max_calls,
                                bulk_methods=self.bulk_methods)
        # DecodeGuard innermost: a request that does not decode is a plain INVALID_ARGUMENT, as on the native engine.
        # Streams are capped as the native engine caps them (refused with a reason and a log line); grpc.aio's own
        # cap on every call, which answers "Concurrent RPC limit exceeded!" unlogged, only backs it up.
        limit, backstop = (), None
        if self.max_calls is not None:
            self._call_limit = OpenCallLimit(self.max_calls, self._get_reactor(), self.name)
            limit, backstop = (self._call_limit,), self.max_calls + STREAMS_ABOVE_CAP
        return grpc.aio.server(interceptors=(*self.interceptors, *limit, DecodeGuard()),
                               options=self._per_connection(_GRPCIO_OPTIONS), maximum_concurrent_rpcs=backstop)

    def _per_connection(self, options: list) -> list:
        if self.max_calls_per_connection is None:
            return options
        return [*(o for o in options if o[0] != "grpc.max_concurrent_streams"),
                ("grpc.max_concurrent_streams", self.max_calls_per_connection)]

    @property
    def own_port(self) -> int | None:
        """The port whose connections are the engine's own sockets (not the TLS relay's), while serving."""
        if self._server is None or self._relayed(self._listen):
            return None
        return self.port

    def _relayed(self, listen: GrpcListen) -> bool:
        """Whether the engine sits behind the relay: TLS on the native engine, which has none. Plain ports are the
        engine's own (a relay there costs the sequential southbound about a fifth of its CPU)."""
        return self.engine == "native" and listen.secure

    def _bind_tls_front(self, server: Any, listen: GrpcListen) -> tuple[str, int]:
        """The relay (oltsim.serving.tlsfront): the engine on a private loopback port, Twisted's TLS listener on the
        endpoint's port relaying to it, behind the connection limits. The relay names each relayed connection's
        client to the engine (``peer_names``), which refuses calls from any other connection to that port. Returns
        the address bound and the port."""
        from oltsim.serving.connlimit import ConnectionLimits
        from oltsim.serving.security import certificate_options
        from oltsim.serving.tlsfront import RelayFront

        options = certificate_options(listen, protocols=[b"h2"])  # ValueError for unusable files, before binding
        if self.max_connections is not None and self._limits is None:
            self._limits = ConnectionLimits(self.name, self.max_connections,
                                            self.max_connections_per_peer or self.max_connections,
                                            self._get_reactor())
        engine_port = server.add_insecure_port("127.0.0.1:0")
        peers: dict[str, str] = {}
        server.peer_names = peers
        host = listen.host or ""  # "": every address, both families (IPv4 only on a host without IPv6)
        front = RelayFront(self._get_reactor(), self.name, listen.port, host, engine_port, options, self._limits,
                           peers)
        try:
            bound = front.listen()
        except CannotListenError as exc:
            raise CannotListenError(listen.host or "any", listen.port,
                                    getattr(exc, "socketError", None) or bind_error(listen.host, listen.port, exc))
        self._tls = front
        return listen.with_port(bound).address_for(front.host), bound

    def _abandon_tls_front(self) -> None:
        """A server that failed to start leaves nothing listening in front of it."""
        tls, self._tls = self._tls, None
        if tls is not None:
            tls.stop_listening()
            tls.drop_connections()


    def _bind(self, server: grpc.Server, listen: GrpcListen) -> tuple[str, int]:
        """Add the listening port; returns the address actually bound (real port) and the port."""
        hosts = [listen.host if listen.host is not None else "::"]
        if listen.host is None:
            # grpcio binds [::] dual-stack and itself falls back to 0.0.0.0 when IPv6 is missing; this covers
            # builds where the [::] wildcard fails outright.
            hosts.append("0.0.0.0")
        credentials = listen.credentials() if listen.secure else None
        if self.engine == "grpcio":
            # grpcio reports a failed bind on the process's stderr, in C-core's words: ask the system first.
            refused = bind_refusal(listen.host, listen.port)
            if refused is not None:
                raise CannotListenError(listen.host or "any", listen.port, refused)
        error: Exception | None = None
        for host in hosts:
            address = listen.address_for(host)
            try:
                if credentials is None:
                    bound = server.add_insecure_port(address)
                else:
                    bound = server.add_secure_port(address, credentials)
            except RuntimeError as exc:  # grpcio raises on a failed bind (older versions returned 0)
                error, bound = exc, 0
            if bound:
                return listen.with_port(bound).address_for(host), bound
        raise CannotListenError(listen.host or "any", listen.port, bind_error(listen.host, listen.port, error))

    def stop_server(self) -> Deferred:
        """Run the ``on_stopping`` hooks, then stop the gRPC server without blocking the reactor.

        The Deferred fires when grpcio reports the server stopped: new connections are refused at once, calls in
        progress get ``grace`` seconds, then are cancelled.  A no-op (already fired Deferred) if not serving.
        """
        if self._start_after_stop:
            # A start was waiting for the previous stop: it is called off; that stop is still the one to wait for.
            self._start_after_stop = False
            return self._waiting_for(self._stopping)
        if self._server is None:
            return succeed(None)
        for hook in list(self.on_stopping):
            try:
                hook()
            except Exception:
                log.failure("grpc-server-stopping-hook-failed name={name}", name=self.name)
        server, self._server = self._server, None
        # Refuse new calls at once, cancel those still running after the grace period.
        tls, self._tls = self._tls, None
        stopped = Deferred.fromFuture(self._loop.create_task(self._stop_after_start(server, self._starting, tls)))
        call_limit, self._call_limit = self._call_limit, None
        if call_limit is not None:  # its summed-up refusals logged now: no timer outlives the server
            stopped.addBoth(lambda result: (call_limit.flush(), result)[1])
        stopped.addCallbacks(lambda _: self._report_stopped(True), self._stop_failed)
        return self._track_stop(stopped)

    async def _stop_after_start(self, server: Any, starting: asyncio.Task | None, tls: Any = None) -> None:
        """Stop a loop server once its start has finished (however it finished): stopping grpc.aio mid-start
        crashes the process, and a restart with no delay stops the server its previous restart is still starting.
        A TLS front stops listening first and drops its connections last, once the server has ended their calls."""
        if starting is not None:
            await asyncio.wait([starting])
        try:
            if tls is not None:
                await tls.stop_listening().asFuture(self._loop)
            await server.stop(self.grace)
        finally:
            if tls is not None:
                tls.drop_connections()

    def _track_stop(self, stopped: Deferred) -> Deferred:
        """Remember the stop in progress until it has released the port; a caller gets its own Deferred."""
        self._stopping = stopped

        def released(result: Any) -> Any:
            if self._stopping is stopped:
                self._stopping = None
            if self._start_after_stop:
                self._start_after_stop = False
                try:
                    self.start_server()
                except Exception:
                    log.failure("grpc-server-restart-failed name={name} address={address}", name=self.name,
                                address=self.address)
            return result

        stopped.addBoth(released)
        return self._waiting_for(stopped)

    @staticmethod
    def _waiting_for(stopped: Deferred | None) -> Deferred:
        """A Deferred that fires (with None) when ``stopped`` has, without touching ``stopped``'s own result."""
        if stopped is None:
            return succeed(None)
        waiter: Deferred = Deferred()
        stopped.addBoth(lambda result: (waiter.callback(None), result)[1])
        return waiter

    def _stop_failed(self, failure: Any) -> None:
        # The server object is dropped either way; what grpcio failed to release is logged, not re-raised.
        log.failure("grpc-server-stop-failed name={name} address={address}", failure, name=self.name,
                    address=self.address)

    def _report_stopped(self, finished: bool) -> None:
        log.info(
            "grpc-server-stopped name={name} address={address} clean={clean}",
            name=self.name,
            address=self.address,
            clean=finished,
        )
