"""Connections bounded per listener without locking anyone out: at most `total` open at once and `per_peer` from one
peer address, and when a listener (or a peer) is full, the connection idle the longest makes room for the new one.

Every Twisted listener of oltsim (REST v1 and v0, SADIS, and the TLS relay of an ``ssl:`` gRPC port) accepts its
connections through a `LimitedFactory`. What the daemon holds stays bounded whatever the clients do, and a flood of
connections that never send a request cannot keep a real client out:

- **Eviction, not refusal.** A connection that arrives while its listener holds `total` connections (or its peer
  `per_peer`) closes the one with nothing in flight that made progress longest ago: for HTTP, the one whose last
  request ended (or which connected) first, so a client that trickles a request head byte by byte is as old as its
  connect; for the TLS relay, the one whose client sent nothing for the longest. A connection with a request in
  flight (an HTTP request being answered, an event stream) is never closed for another; only when every one is
  busy is the new connection refused, closed unread.
- **A deadline for a request head.** A connection has `HEAD_TIMEOUT` seconds from its accept to complete its first
  request head (HTTP), or to send its first byte past the TLS handshake (the relay); an HTTP connection also has
  as long from the first byte of each later request to its head's end. A connection that does not is closed.

Evictions and refusals are logged, the first of an interval at once and the rest summed up per peer at the
interval's end (`connection-evicted ...`/`connection-refused ...` then `connections-evicted`/`connections-refused
count=...`), so a storm cannot flood the log either.
"""
from __future__ import annotations

from collections import OrderedDict
from typing import Any

from twisted.internet.protocol import Protocol
from twisted.protocols.policies import ProtocolWrapper, WrappingFactory

from oltsim.logs import Summary, logger

__all__ = ["ConnectionLimits", "HEAD_TIMEOUT", "LimitedFactory", "REFUSAL_LOG_INTERVAL"]

log = logger("oltsim.connections")

#: Seconds over which refusals and evictions past the first are summed up into one line per peer.
REFUSAL_LOG_INTERVAL = 10.0

#: Seconds a connection has to complete a request head (HTTP) or send its first byte past the TLS handshake.
HEAD_TIMEOUT = 10.0


class ConnectionLimits:
    """The open connections of one listener (`name`, for log lines), counted in total and per peer host.

    `admit(host, connection)` counts the connection and answers None, making room first by evicting the oldest idle
    connection of the listener (or of the peer) when one is full; or it answers the reason the new connection is
    refused (every candidate busy) and counts nothing. `connection` (None: never evicted) has ``busy()`` (something
    in flight: not evictable) and ``evict()`` (close it now). `progressed(connection)` makes it the youngest;
    `release(host, connection)` forgets it. `clock` times the summed-up log lines (the reactor)."""

    def __init__(self, name: str, total: int, per_peer: int, clock) -> None:
        self.name = name
        self.total = total
        self.per_peer = per_peer
        self.clock = clock
        self.open = 0
        self.by_peer: dict[str, int] = {}
        self.refused = 0
        self.evicted = 0
        # Oldest progress first, over the listener and per peer: eviction looks for the first one not busy.
        self._order: OrderedDict[Any, str] = OrderedDict()
        self._peer_order: dict[str, OrderedDict[Any, None]] = {}
        self.refusals = Summary(clock, self._report, interval=REFUSAL_LOG_INTERVAL, burst=1)
        self.evictions = Summary(clock, self._report_evictions, interval=REFUSAL_LOG_INTERVAL, burst=1)

    def admit(self, host: str, connection: Any = None) -> str | None:
        if self.by_peer.get(host, 0) >= self.per_peer and not self._evict(self._peer_order.get(host, ()), host):
            reason = f"{_connections(self.by_peer[host])} open from this peer, the limit per peer, all busy"
        elif self.open >= self.total and not self._evict(self._order, host):
            reason = f"{_connections(self.open)} open, the listener's limit, all busy"
        else:
            self.open += 1
            self.by_peer[host] = self.by_peer.get(host, 0) + 1
            if connection is not None:
                self._order[connection] = host
                self._peer_order.setdefault(host, OrderedDict())[connection] = None
            return None
        self.refused += 1
        if self.refusals.offer(host):
            log.warn("connection-refused listener={listener} peer={peer} reason={reason}", listener=self.name,
                     peer=host, reason=reason)
        return reason

    def _evict(self, candidates, newcomer: str) -> bool:
        """Close the first candidate (oldest progress) with nothing in flight; False if every one is busy."""
        for connection in candidates:
            if not connection.busy():
                host = self._order.get(connection, newcomer)
                self.release(host, connection)
                self.evicted += 1
                if self.evictions.offer(host):
                    log.info("connection-evicted listener={listener} peer={peer} for_peer={newcomer} "
                             "idle={idle:.1f}", listener=self.name, peer=host, newcomer=newcomer,
                             idle=max(0.0, self.clock.seconds() - connection.progressed_at))
                connection.evict()
                return True
        return False

    def progressed(self, connection: Any) -> None:
        """`connection` made progress (a request ended, bytes came): the last one to be evicted now."""
        host = self._order.get(connection)
        if host is not None:
            self._order.move_to_end(connection)
            self._peer_order[host].move_to_end(connection)

    def release(self, host: str, connection: Any = None) -> None:
        if connection is not None:
            if self._order.pop(connection, None) is None:
                return  # already released (evicted, then lost)
            peer = self._peer_order.get(host)
            if peer is not None:
                peer.pop(connection, None)
                if not peer:
                    del self._peer_order[host]
        self.open -= 1
        left = self.by_peer.get(host, 0) - 1
        if left > 0:
            self.by_peer[host] = left
        else:
            self.by_peer.pop(host, None)

    def flush(self) -> None:
        """Write what is summed up now and cancel the timers (the listener is stopping)."""
        self.refusals.flush()
        self.evictions.flush()

    def _report(self, counts: dict) -> None:
        for host, count in counts.items():
            log.warn("connections-refused listener={listener} peer={peer} count={count} interval={interval} "
                     "total_limit={total} per_peer_limit={per_peer}", listener=self.name, peer=host, count=count,
                     interval=REFUSAL_LOG_INTERVAL, total=self.total, per_peer=self.per_peer)

    def _report_evictions(self, counts: dict) -> None:
        for host, count in counts.items():
            log.info("connections-evicted listener={listener} peer={peer} count={count} interval={interval} "
                     "total_limit={total} per_peer_limit={per_peer}", listener=self.name, peer=host, count=count,
                     interval=REFUSAL_LOG_INTERVAL, total=self.total, per_peer=self.per_peer)


def _connections(count: int) -> str:
    return f"{count} connection" if count == 1 else f"{count} connections"


def _host(addr) -> str:
    """The peer's host (an IP address), or the address's text for other kinds (a Unix socket)."""
    return getattr(addr, "host", None) or str(addr)


class _Refused(Protocol):
    """A connection beyond the limits: closed at once, nothing read. (Not `buildProtocol` answering None, which a
    TLS listener's own wrapping factory cannot take.)"""

    def connectionMade(self):
        self.transport.abortConnection()


class _Counted(ProtocolWrapper):
    """One admitted connection: evictable while nothing is in flight, closed if its request head is late, released
    from its listener's count when it is lost.

    HTTP channels tell it about their requests through their transport (this wrapper): ``request_started()`` when a
    request head is complete, ``request_finished()`` when its answer is done. Other protocols (the relay) make
    progress with every byte they receive."""

    def __init__(self, factory: LimitedFactory, wrapped, host: str) -> None:
        super().__init__(factory, wrapped)
        self.host = host
        self.requests = 0  # in flight
        self.progressed_at = factory.clock.seconds()
        self._by_requests = factory.by_requests
        self._deadline = None

    def makeConnection(self, transport):
        self._deadline = self.factory.clock.callLater(HEAD_TIMEOUT, self._late)
        super().makeConnection(transport)

    def busy(self) -> bool:
        return self.requests > 0

    def evict(self) -> None:
        self._cancel_deadline()
        if self.transport is not None:
            self.transport.abortConnection()

    def _late(self) -> None:
        self._deadline = None
        log.info("connection-head-timeout listener={listener} peer={peer} timeout={timeout}",
                 listener=self.factory.limits.name, peer=self.host, timeout=HEAD_TIMEOUT)
        self.transport.abortConnection()

    def _cancel_deadline(self) -> None:
        deadline, self._deadline = self._deadline, None
        if deadline is not None and deadline.active():
            deadline.cancel()

    def _progress(self) -> None:
        self.progressed_at = self.factory.clock.seconds()
        self.factory.limits.progressed(self)

    def dataReceived(self, data):
        if self._by_requests:
            if self.requests == 0 and self._deadline is None:
                # The first byte of a later request: its head has HEAD_TIMEOUT to come in whole.
                self._deadline = self.factory.clock.callLater(HEAD_TIMEOUT, self._late)
        else:
            self._cancel_deadline()
            self._progress()
        super().dataReceived(data)

    def request_started(self) -> None:
        self._cancel_deadline()
        self.requests += 1

    def request_finished(self) -> None:
        self.requests = max(0, self.requests - 1)
        self._progress()

    def connectionLost(self, reason):
        self._cancel_deadline()
        try:
            self.factory.limits.release(self.host, self)
        finally:
            super().connectionLost(reason)


class LimitedFactory(WrappingFactory):
    """`wrapped` (any server factory: a Site, a relay) behind `limits`: a connection beyond them makes room by
    evicting the oldest idle one, or is refused (closed unread) when every one is busy; the others are served by
    `wrapped` unchanged. `by_requests`: the wrapped protocol reports its requests (``request_started`` and
    ``request_finished`` on its transport), as HTTP channels do; otherwise every byte received is progress."""

    noisy = False  # the listener logs its own start line (rest-listener-started, grpc-server-started)

    def __init__(self, wrapped, limits: ConnectionLimits, by_requests: bool = True) -> None:
        super().__init__(wrapped)
        self.limits = limits
        self.clock = limits.clock
        self.by_requests = by_requests

    def buildProtocol(self, addr):
        host = _host(addr)
        counted = _Counted(self, None, host)
        if self.limits.admit(host, counted) is not None:
            return _Refused()  # every candidate busy: the wrapped factory never sees it
        try:
            inner = self.wrappedFactory.buildProtocol(addr)
        except BaseException:
            self.limits.release(host, counted)
            raise
        if inner is None:
            self.limits.release(host, counted)
            return _Refused()
        counted.wrappedProtocol = inner
        return counted

    def doStop(self):
        self.limits.flush()
        super().doStop()
