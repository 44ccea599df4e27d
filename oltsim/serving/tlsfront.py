"""The relay in front of a gRPC engine: Twisted accepts the endpoint's connections (terminating TLS on an ``ssl:``
endpoint), bounds them (:mod:`oltsim.serving.connlimit`) and relays the plain HTTP/2 bytes to the engine on a private Unix
socket.

Neither engine has a hook on accept, nor a limit on connections: pygrpc-native's Rust front and grpc.aio bind and
accept by themselves. A Twisted listener in front of them is the one place where a connection beyond
``--max-connections`` or ``--max-connections-per-peer`` can be closed unread, as on every REST listener.

pygrpc-native has no TLS, and grpc.aio, which has, is what an attacker can take down (an HTTP/2 rapid reset holds
its pending calls: +105 MB and heartbeats waiting seconds, where the native front answers GOAWAY and keeps nothing;
grpc.aio stopped mid-start crashed the process). So an ``ssl:`` gRPC endpoint is a Twisted TLS listener (the same
key, certificate and client-certificate options as every other ``ssl:`` listener, ALPN ``h2`` as gRPC clients
require) whose connections are byte pipes to the front, with flow control both ways: a client that stops reading
stops the front's writes to it, not the reactor. Every call then meets the native engine's limits.

A plain (not TLS) endpoint is relayed by asyncio's own transports on the reactor's loop instead (:class:`_Plain`):
what a turn of the loop read goes out at the start of the next (:class:`_Gathered`), where a Twisted transport
waits for the socket to be reported writable, a second wait of the reactor per direction. Sequential OMCI at one
ONU went from about 300 to about 220 us of CPU per exchange, and bbr's bursts at 16x32 about 5 % lower than with the
Twisted relay (docs/performance.md).

The front sees every client as the Unix socket's peer, so ``context.peer()`` names the relay, not the client.
"""
from __future__ import annotations

import asyncio
import socket
from typing import Any, Callable

from twisted.internet import endpoints
from twisted.internet.defer import Deferred, maybeDeferred, succeed
from twisted.internet.error import CannotListenError
from twisted.internet.protocol import Factory, Protocol

from oltsim.serving.connlimit import LimitedFactory
from oltsim.logs import logger

__all__ = ["RelayFront"]

#: connections a listening socket queues before the relay accepts them (Twisted's listenTCP default)
BACKLOG = 50

log = logger("oltsim.relay")


class _Outbound(Protocol):
    """The relay's connection to the front: what the front sends goes to the TLS client."""

    def __init__(self, inbound: _Inbound) -> None:
        self.inbound = inbound

    def connectionMade(self) -> None:
        self.inbound.linked(self)

    def dataReceived(self, data: bytes) -> None:
        self.inbound.transport.write(data)

    def connectionLost(self, reason: Any = None) -> None:
        self.inbound.transport.loseConnection()


class _Inbound(Protocol):
    """One client: held (not read) until the front accepted our connection, then relayed both ways."""

    def __init__(self, front: RelayFront) -> None:
        self.front = front
        self.outbound: _Outbound | None = None
        self.pending: list[bytes] = []

    def connectionMade(self) -> None:
        self.front.connections.add(self)
        # As every gRPC server sets it: without, a small answer written while the client's last segment is unacked
        # waits for its delayed ACK (about 40 ms), which stalled one sequential OMCI exchange in 15.
        set_no_delay = getattr(self.transport, "setTcpNoDelay", None)  # through the limiter and TLS wrappers
        if set_no_delay is not None:
            set_no_delay(True)
        self.transport.pauseProducing()
        connecting = endpoints.UNIXClientEndpoint(self.front.reactor, self.front.path).connect(
            _Building(lambda: _Outbound(self)))
        connecting.addErrback(self._unreachable)

    def _unreachable(self, failure: Any) -> None:
        log.warn("relay-front-unreachable server={server} error={error}", server=self.front.name,
                 error=failure.getErrorMessage())
        self.transport.abortConnection()

    def linked(self, outbound: _Outbound) -> None:
        if self.transport.disconnected:
            outbound.transport.loseConnection()
            return
        self.outbound = outbound
        # Flow control both ways: each side stops reading while the other cannot take more.
        self.transport.registerProducer(outbound.transport, True)
        outbound.transport.registerProducer(self.transport, True)
        for data in self.pending:
            outbound.transport.write(data)
        self.pending.clear()
        self.transport.resumeProducing()

    def dataReceived(self, data: bytes) -> None:
        if self.outbound is None:
            self.pending.append(data)  # what the TLS layer had already decrypted before the pause
        else:
            self.outbound.transport.write(data)

    def connectionLost(self, reason: Any = None) -> None:
        self.front.connections.discard(self)
        if self.outbound is not None:
            self.outbound.transport.loseConnection()


class _Building(Factory):
    """A factory whose protocols take arguments (Factory.forProtocol passes its arguments to the factory)."""

    noisy = False  # the gRPC server logs grpc-server-started itself

    def __init__(self, build: Callable[[], Protocol]) -> None:
        self._build = build

    def buildProtocol(self, addr: Any) -> Protocol:
        return self._build()


class RelayFront:
    """A listener on ``port`` (``interface``, all when empty) relaying every connection to the Unix socket ``path``:
    TLS when ``options`` (a Twisted ``CertificateOptions`` with ALPN ``h2``) is given, else plain TCP; behind
    ``limits`` (a :class:`oltsim.serving.connlimit.ConnectionLimits`) when given, so that a connection beyond them is closed
    before a byte of it is read or relayed.

    :meth:`listen` binds at once (the port accepts connections when it returns; 0 picks one, see ``port``);
    :meth:`stop_listening` then :meth:`drop_connections` undo it.
    """

    def __init__(self, reactor: Any, name: str, port: int, interface: str, path: str, options: Any = None,
                 limits: Any = None) -> None:
        self.reactor = reactor
        self.name = name
        self.path = path
        self.connections: set[_Inbound] = set()
        self._port: Any = None
        self._options = options
        self._limits = limits
        self._interface = interface
        self.port = port

    def listen(self) -> int:
        """Bind and listen; returns the port bound. CannotListenError as Twisted raises it."""
        if self._options is None:
            loop = getattr(self.reactor, "_asyncioEventloop", None)
            if isinstance(loop, asyncio.AbstractEventLoop):
                self._port = _Plain(self, loop)
                self.port = self._port.listen(self._interface, self.port)
                return self.port
        factory: Factory = _Building(lambda: _Inbound(self))
        if self._limits is not None:
            factory = LimitedFactory(factory, self._limits)
        if self._options is not None:
            self._port = self.reactor.listenSSL(self.port, factory, self._options, interface=self._interface)
        else:
            self._port = self.reactor.listenTCP(self.port, factory, interface=self._interface)
        self.port = self._port.getHost().port
        return self.port

    def stop_listening(self) -> Deferred:
        """Refuse new connections; the relayed ones stay (the calls on them are being ended). Fires when the port
        is released."""
        port, self._port = self._port, None
        return maybeDeferred(port.stopListening) if port is not None else succeed(None)

    def drop_connections(self) -> None:
        """Close every relayed connection that is still open (its client sees the connection end)."""
        for inbound in list(self.connections):
            inbound.abort()


class _Gathered:
    """Writes to one transport gathered until the loop's next turn, then written as one: while the relay is busy,
    several reads of a turn leave in one send (fewer wake-ups of the front's I/O threads and of the client); on a
    single exchange it costs one more pass of the loop, no wait. Bounded: at most what one turn read."""

    __slots__ = ("loop", "transport", "chunks")

    def __init__(self, loop: asyncio.AbstractEventLoop, transport: asyncio.Transport) -> None:
        self.loop = loop
        self.transport = transport
        self.chunks: list[bytes] = []

    def write(self, data: bytes) -> None:
        if not self.chunks:
            self.loop.call_soon(self.flush)
        self.chunks.append(data)

    def flush(self) -> None:
        chunks, self.chunks = self.chunks, []
        if chunks and not self.transport.is_closing():
            self.transport.write(chunks[0] if len(chunks) == 1 else b"".join(chunks))


class _Plain:
    """A plain TCP listener relayed with asyncio's transports on the reactor's loop (see the module docstring).

    The same contract as the Twisted one: bound and accepting when :meth:`listen` returns, a connection beyond the
    limits closed unread, flow control both ways, nothing of it left on the loop once :meth:`stopListening`
    returns (its reader removed before its socket is closed, so no later socket can inherit it)."""

    #: connections accepted per readiness, so that a flood of connects cannot hold the reactor
    ACCEPTS_PER_TURN = 64

    def __init__(self, front: RelayFront, loop: asyncio.AbstractEventLoop) -> None:
        self.front = front
        self.loop = loop
        self._sock: socket.socket | None = None

    def listen(self, interface: str, port: int) -> int:
        family = socket.AF_INET6 if ":" in interface else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as Twisted's listeners
            if family == socket.AF_INET6 and interface == "::":
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)  # dual-stack, as Twisted's "::"
            sock.bind((interface, port))
            sock.listen(BACKLOG)
            sock.setblocking(False)
        except OSError as exc:
            sock.close()
            raise CannotListenError(interface, port, exc) from None
        self._sock = sock
        self.loop.add_reader(sock.fileno(), self._accept)
        return sock.getsockname()[1]

    def _accept(self) -> None:
        sock = self._sock
        if sock is None:
            return
        for _ in range(self.ACCEPTS_PER_TURN):
            try:
                conn, address = sock.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as exc:  # EMFILE and the like: logged, the listener goes on
                log.warn("relay-front-accept-failed server={server} error={error}", server=self.front.name,
                         error=exc)
                return
            try:
                self._admit(conn, address)
            except Exception:
                log.failure("relay-front-accept-failed server={server}", server=self.front.name)
                conn.close()

    def _admit(self, conn: socket.socket, address: Any) -> None:
        host = str(address[0]) if isinstance(address, tuple) and address else str(address)
        limits = self.front._limits
        if limits is not None and limits.admit(host) is not None:
            conn.close()  # beyond the limits: closed unread
            return
        conn.setblocking(False)
        # As gRPC servers do (see _Inbound.connectionMade); asyncio sets it only on sockets it creates itself.
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        inbound = _PlainInbound(self.front, self.loop, host)
        self.front.connections.add(inbound)
        wrapping = self.loop.create_task(self.loop.connect_accepted_socket(lambda: inbound, sock=conn))
        wrapping.add_done_callback(lambda task: inbound.wrapped(task, conn))

    def stopListening(self) -> None:
        sock, self._sock = self._sock, None
        if sock is not None:
            self.loop.remove_reader(sock.fileno())
            sock.close()


class _PlainInbound(asyncio.Protocol):
    """One admitted client of a plain relay: held (not read) until the front accepted our connection, then relayed
    both ways; each side stops reading while the other side's writes are backed up. Counted in its listener's
    limits from its accept until its connection is lost (or its transport could not be made)."""

    def __init__(self, front: RelayFront, loop: asyncio.AbstractEventLoop, host: str) -> None:
        self.front = front
        self.loop = loop
        self.host: str | None = host  # None once released from the limits
        self.transport: asyncio.Transport | None = None
        self.outbound: _PlainOutbound | None = None
        self.to_front: _Gathered | None = None
        self.pending: list[bytes] = []  # read before the front accepted our connection
        self.closed = False

    def wrapped(self, task: asyncio.Task, conn: socket.socket) -> None:
        """The accepted socket's transport is made (or not: then nothing else will release it)."""
        if task.cancelled() or task.exception() is not None:
            if self.transport is None:
                conn.close()
                self._release()

    def _release(self) -> None:
        self.closed = True
        self.front.connections.discard(self)
        host, self.host = self.host, None
        if host is not None and self.front._limits is not None:
            self.front._limits.release(host)

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport
        if self.closed:  # dropped (the listener stopping) before its transport was made
            transport.abort()
            return
        transport.pause_reading()
        connecting = self.loop.create_task(
            self.loop.create_unix_connection(lambda: _PlainOutbound(self), self.front.path))
        connecting.add_done_callback(self._connected)

    def _connected(self, connecting: asyncio.Task) -> None:
        error = None if connecting.cancelled() else connecting.exception()
        if connecting.cancelled() or error is not None:
            log.warn("relay-front-unreachable server={server} error={error}", server=self.front.name,
                     error=error or "cancelled")
            self.abort()
            return
        transport, outbound = connecting.result()
        if self.closed:
            transport.close()
            return
        self.outbound = outbound
        self.to_front = _Gathered(self.loop, transport)
        for data in self.pending:
            transport.write(data)
        self.pending.clear()
        self.transport.resume_reading()

    def data_received(self, data: bytes) -> None:
        if self.outbound is None:
            # Read before the front accepted our connection: some Pythons (3.11.2, Debian 12's) start reading
            # after a connection_made that paused it. Kept for the front, and reading paused again.
            self.pending.append(data)
            self.transport.pause_reading()
            return
        self.to_front.write(data)

    def pause_writing(self) -> None:  # the client does not read: stop reading the front
        if self.outbound is not None:
            self.outbound.transport.pause_reading()

    def resume_writing(self) -> None:
        if self.outbound is not None and not self.outbound.transport.is_closing():
            self.outbound.transport.resume_reading()

    def abort(self) -> None:
        if self.transport is not None:
            self.transport.abort()
        else:
            self.closed = True  # its transport, when made, is aborted at once

    def connection_lost(self, exc: Exception | None) -> None:
        self._release()
        if self.outbound is not None:
            self.to_front.flush()  # what the client sent last, then the end
            self.outbound.transport.close()


class _PlainOutbound(asyncio.Protocol):
    """The plain relay's connection to the front: what the front sends goes to the client."""

    def __init__(self, inbound: _PlainInbound) -> None:
        self.inbound = inbound
        self.transport: asyncio.Transport | None = None
        self.to_client: _Gathered | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # The front speaks first (its SETTINGS), possibly before the relay has linked this connection.
        self.transport = transport
        self.to_client = _Gathered(self.inbound.loop, self.inbound.transport)

    def data_received(self, data: bytes) -> None:
        self.to_client.write(data)

    def pause_writing(self) -> None:  # the front does not read: stop reading the client
        self.inbound.transport.pause_reading()

    def resume_writing(self) -> None:
        if not self.inbound.transport.is_closing():
            self.inbound.transport.resume_reading()

    def connection_lost(self, exc: Exception | None) -> None:
        if self.to_client is not None:
            self.to_client.flush()  # the front's last words (a GOAWAY, the calls' statuses), then the end
        self.inbound.transport.close()
