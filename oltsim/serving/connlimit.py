"""Connections bounded per listener: at most `total` open at once, and at most `per_peer` from one peer address.

Every TCP listener of oltsim (REST, SADIS, and the gRPC ports through their relay) accepts its connections through
a `LimitedFactory`. A connection beyond a limit is closed as soon as it is accepted, before a byte is read (under TLS, before the
handshake), so what
the daemon holds stays bounded whatever the clients do; the file-descriptor limit is no longer the only bound.
Refusals are logged, the first of an interval at once and the rest summed up per peer at the interval's end
(`connection-refused ...` then `connections-refused count=...`), so a storm cannot flood the log either.
"""
from __future__ import annotations

from twisted.internet.protocol import Protocol
from twisted.protocols.policies import ProtocolWrapper, WrappingFactory

from oltsim.logs import Summary, logger

__all__ = ["ConnectionLimits", "LimitedFactory", "REFUSAL_LOG_INTERVAL"]

log = logger("oltsim.connections")

#: Seconds over which refusals past the first are summed up into one line per peer.
REFUSAL_LOG_INTERVAL = 10.0


class ConnectionLimits:
    """The open connections of one listener (`name`, for log lines), counted in total and per peer host.

    `admit(host)` answers None and counts the connection, or the reason it is refused (and counts nothing);
    `release(host)` forgets an admitted one. `clock` times the summed-up refusal lines (the reactor)."""

    def __init__(self, name: str, total: int, per_peer: int, clock) -> None:
        self.name = name
        self.total = total
        self.per_peer = per_peer
        self.open = 0
        self.by_peer: dict[str, int] = {}
        self.refused = 0
        self.refusals = Summary(clock, self._report, interval=REFUSAL_LOG_INTERVAL, burst=1)

    def admit(self, host: str) -> str | None:
        if self.open >= self.total:
            reason = f"{_connections(self.open)} open, the listener's limit"
        elif self.by_peer.get(host, 0) >= self.per_peer:
            reason = f"{_connections(self.by_peer[host])} open from this peer, the limit per peer"
        else:
            self.open += 1
            self.by_peer[host] = self.by_peer.get(host, 0) + 1
            return None
        self.refused += 1
        if self.refusals.offer(host):
            log.warn("connection-refused listener={listener} peer={peer} reason={reason}", listener=self.name,
                     peer=host, reason=reason)
        return reason

    def release(self, host: str) -> None:
        self.open -= 1
        left = self.by_peer.get(host, 0) - 1
        if left > 0:
            self.by_peer[host] = left
        else:
            self.by_peer.pop(host, None)

    def flush(self) -> None:
        """Write what is summed up now and cancel the timer (the listener is stopping)."""
        self.refusals.flush()

    def _report(self, counts: dict) -> None:
        for host, count in counts.items():
            log.warn("connections-refused listener={listener} peer={peer} count={count} interval={interval} "
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
    """One admitted connection: released from its listener's count when it is lost."""

    def __init__(self, factory: LimitedFactory, wrapped, host: str) -> None:
        super().__init__(factory, wrapped)
        self.host = host

    def connectionLost(self, reason):
        try:
            self.factory.limits.release(self.host)
        finally:
            super().connectionLost(reason)


class LimitedFactory(WrappingFactory):
    """`wrapped` (any server factory: a Site, a relay) behind `limits`: a connection beyond them is refused (closed
    unread), the others are served by `wrapped` unchanged."""

    noisy = False  # the listener logs its own start line (rest-listener-started, grpc-server-started)

    def __init__(self, wrapped, limits: ConnectionLimits) -> None:
        super().__init__(wrapped)
        self.limits = limits

    def buildProtocol(self, addr):
        host = _host(addr)
        if self.limits.admit(host) is not None:
            return _Refused()
        try:
            inner = self.wrappedFactory.buildProtocol(addr)
        except BaseException:
            self.limits.release(host)
            raise
        if inner is None:
            self.limits.release(host)
            return _Refused()
        return _Counted(self, inner, host)

    def doStop(self):
        self.limits.flush()
        super().doStop()
