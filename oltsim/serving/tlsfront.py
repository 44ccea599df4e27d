"""The TLS relay in front of the native gRPC engine on ``ssl:`` endpoints: Twisted accepts the endpoint's connections,
terminates TLS, bounds them (:mod:`oltsim.serving.connlimit`) and relays the plain HTTP/2 bytes to the engine on a
private loopback port.

pygrpc-native has no TLS, and grpc.aio, which has, is what an attacker can take down (an HTTP/2 rapid reset holds
its pending calls: +105 MB and heartbeats waiting seconds, where the native front answers GOAWAY and keeps nothing;
grpc.aio stopped mid-start crashed the process). So an ``ssl:`` gRPC endpoint is a Twisted TLS listener (the same
key, certificate and client-certificate options as every other ``ssl:`` listener, ALPN ``h2`` as gRPC clients
require) whose connections are byte pipes to the front, with flow control both ways: a client that stops reading
stops the front's writes to it, not the reactor. Every call then meets the native engine's limits.

Plain (``tcp:``) endpoints have no relay: the engine listens on the port itself.

The engine would see every relayed client as the relay's own loopback address. The relay therefore records, for
each connection it opens to the engine, whose it is (``peers``: the engine-side peer name, ``ipv4:127.0.0.1:<port>``,
to the client's, ``ipv4:<host>:<port>``) before it sends a byte; the engine names the client in ``context.peer()``
and refuses calls from a connection the relay did not open (a local user who found the private port).
"""
from __future__ import annotations

from typing import Any, Callable

from twisted.internet import endpoints
from twisted.internet.defer import Deferred, maybeDeferred, succeed
from twisted.internet.protocol import Factory, Protocol

from oltsim.serving.connlimit import LimitedFactory
from oltsim.serving.dualstack import listen_tcp
from oltsim.logs import logger

__all__ = ["RelayFront"]

#: connections a listening socket queues before the relay accepts them (see security.LISTEN_BACKLOG)
BACKLOG = 1024

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
        self.inbound.forget()


class _Inbound(Protocol):
    """One client: held (not read) until the front accepted our connection, then relayed both ways."""

    def __init__(self, front: RelayFront) -> None:
        self.front = front
        self.outbound: _Outbound | None = None
        self.pending: list[bytes] = []
        self.engine_side: str | None = None  # the engine's name for our connection to it, while registered

    def connectionMade(self) -> None:
        self.front.connections.add(self)
        # As every gRPC server sets it: without, a small answer written while the client's last segment is unacked
        # waits for its delayed ACK (about 40 ms), which stalled one sequential OMCI exchange in 15.
        set_no_delay = getattr(self.transport, "setTcpNoDelay", None)  # through the limiter and TLS wrappers
        if set_no_delay is not None:
            set_no_delay(True)
        self.transport.pauseProducing()
        connecting = endpoints.TCP4ClientEndpoint(self.front.reactor, "127.0.0.1", self.front.engine_port).connect(
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
        # Named before a byte reaches the engine, so that its first call already sees the client.
        self.engine_side = f"ipv4:127.0.0.1:{outbound.transport.getHost().port}"
        self.front.peers[self.engine_side] = grpc_peer(self.transport.getPeer())
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

    def abort(self) -> None:
        self.transport.abortConnection()

    def connectionLost(self, reason: Any = None) -> None:
        self.front.connections.discard(self)
        if self.outbound is not None:
            self.outbound.transport.loseConnection()
        self.forget()

    def forget(self) -> None:
        engine_side, self.engine_side = self.engine_side, None
        if engine_side is not None:
            self.front.peers.pop(engine_side, None)


def grpc_peer(address: Any) -> str:
    """A Twisted address as gRPC names a peer: ``ipv4:10.0.0.1:40000``, ``ipv6:[::1]:40000`` (an IPv4 client of a
    dual-stack listener as IPv4, as gRPC's own listeners name it)."""
    host, port = getattr(address, "host", None), getattr(address, "port", None)
    if host is None:
        return str(address)
    if host.startswith("::ffff:") and "." in host:
        host = host[len("::ffff:"):]
    return f"ipv6:[{host}]:{port}" if ":" in host else f"ipv4:{host}:{port}"


class _Building(Factory):
    """A factory whose protocols take arguments (Factory.forProtocol passes its arguments to the factory)."""

    noisy = False  # the gRPC server logs grpc-server-started itself

    def __init__(self, build: Callable[[], Protocol]) -> None:
        self._build = build

    def buildProtocol(self, addr: Any) -> Protocol:
        return self._build()


class RelayFront:
    """A listener on ``port`` (``interface``, all when empty) relaying every connection to the engine on
    ``127.0.0.1:engine_port``, each named in ``peers`` while it lasts (see the module docstring): TLS when ``options`` (a Twisted ``CertificateOptions`` with ALPN ``h2``) is given, else plain TCP; behind
    ``limits`` (a :class:`oltsim.serving.connlimit.ConnectionLimits`) when given, so that a connection beyond them is closed
    before a byte of it is read or relayed.

    :meth:`listen` binds at once (the port accepts connections when it returns; 0 picks one, see ``port``);
    :meth:`stop_listening` then :meth:`drop_connections` undo it.
    """

    def __init__(self, reactor: Any, name: str, port: int, interface: str, engine_port: int, options: Any = None,
                 limits: Any = None, peers: dict[str, str] | None = None) -> None:
        self.reactor = reactor
        self.name = name
        self.engine_port = engine_port
        #: the engine's name for each relayed connection -> its client's, in gRPC's form
        self.peers: dict[str, str] = {} if peers is None else peers
        self.connections: set[_Inbound] = set()
        self._port: Any = None
        self._options = options
        self._limits = limits
        self._interface = interface
        self.port = port

    def listen(self) -> int:
        """Bind and listen; returns the port bound. CannotListenError as Twisted raises it."""
        factory: Factory = _Building(lambda: _Inbound(self))
        if self._limits is not None:
            factory = LimitedFactory(factory, self._limits, by_requests=False)
        if not self._interface:  # every address: both families on one socket, as Go listens
            self._port = listen_tcp(self.reactor, self.port, factory, BACKLOG, tls=self._options)
        elif self._options is not None:
            self._port = self.reactor.listenSSL(self.port, factory, self._options, backlog=BACKLOG,
                                                interface=self._interface)
        else:
            self._port = self.reactor.listenTCP(self.port, factory, backlog=BACKLOG, interface=self._interface)
        self.port = self._port.getHost().port
        return self.port

    @property
    def host(self) -> str:
        """The address listened on (``::`` for every address of both families, ``0.0.0.0`` on an IPv4-only host)."""
        return self._port.getHost().host if self._port is not None else self._interface

    def stop_listening(self) -> Deferred:
        """Refuse new connections; the relayed ones stay (the calls on them are being ended). Fires when the port
        is released."""
        port, self._port = self._port, None
        return maybeDeferred(port.stopListening) if port is not None else succeed(None)

    def drop_connections(self) -> None:
        """Close every relayed connection that is still open (its client sees the connection end)."""
        for inbound in list(self.connections):
            inbound.abort()
