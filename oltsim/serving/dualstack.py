"""Listening on every address, IPv4 and IPv6 on one socket, for a Twisted listener given only a port.

Go's ``net.Listen("tcp", ":50074")`` (and ``"0.0.0.0:50074"``) opens one IPv6 socket with ``IPV6_V6ONLY`` off, so
BBSim's every port answers on both families, and a kubelet probing a pod's IPv6 address reaches it. Twisted's
``tcp:PORT`` binds ``0.0.0.0`` only. :func:`listen_tcp` binds ``[::]`` with ``IPV6_V6ONLY`` off whatever the host's
``net.ipv6.bindv6only`` says, and falls back to ``0.0.0.0`` on a host without IPv6. An IPv4 client of such a
socket arrives as ``::ffff:a.b.c.d``; its connection reports the plain IPv4 address, as Go's and gRPC's listeners
name it, so logs, per-address limits and the API show ``127.0.0.1``, not ``::ffff:127.0.0.1``.

An explicit address (``tcp:PORT:interface=0.0.0.0``, ``...interface=::1``) binds only that address: not this
module's business.
"""
from __future__ import annotations

import errno
import socket
from typing import Any

from twisted.internet import address, defer, tcp
from twisted.internet.error import CannotListenError
from twisted.internet.interfaces import IStreamServerEndpoint
from zope.interface import implementer

__all__ = ["DualStackServerEndpoint", "listen_tcp", "unmapped"]

_MAPPED = "::ffff:"
#: why binding [::] fails on a host without IPv6 (the kernel's ipv6.disable=1, a container without it)
_NO_IPV6 = {errno.EAFNOSUPPORT, errno.EADDRNOTAVAIL, errno.EPROTONOSUPPORT}


def unmapped(peer: tuple) -> tuple:
    """A socket address as accept() gives it, an IPv4-mapped IPv6 one (``('::ffff:10.0.0.1', port, 0, 0)``) as
    the IPv4 ``(host, port)`` it stands for; any other unchanged."""
    host = peer[0]
    if len(peer) == 4 and isinstance(host, str) and host.startswith(_MAPPED) and "." in host:
        return (host[len(_MAPPED):], peer[1])
    return peer


class _Server(tcp.Server):
    """A connection of a dual-stack port: an IPv4 client's address as IPv4 (getPeer, the log prefix)."""

    def __init__(self, sock: socket.socket, protocol: Any, client: tuple, server: Any, sessionno: int,
                 reactor: Any) -> None:
        super().__init__(sock, protocol, unmapped(client), server, sessionno, reactor)

    def getHost(self) -> address.IPv4Address | address.IPv6Address:
        local = unmapped(self.socket.getsockname())  # an IPv4 client reached the IPv4 side of the socket
        return address.IPv4Address("TCP", *local) if len(local) == 2 else super().getHost()


class DualStackPort(tcp.Port):
    """A Twisted TCP port on ``[::]`` with IPV6_V6ONLY off: IPv6 and IPv4 clients on one socket."""

    transport = _Server

    def __init__(self, port: int, factory: Any, backlog: int = 50, reactor: Any = None) -> None:
        super().__init__(port, factory, backlog, "::", reactor)

    def createInternetSocket(self) -> socket.socket:
        skt = super().createInternetSocket()
        skt.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
        return skt

    def _buildAddr(self, peer: tuple) -> address.IPv4Address | address.IPv6Address:
        peer = unmapped(peer)
        return address.IPv4Address("TCP", *peer) if len(peer) == 2 else address.IPv6Address("TCP", *peer)


def listen_tcp(reactor: Any, port: int, factory: Any, backlog: int, tls: Any = None) -> Any:
    """Listen on ``port`` of every address, both families on one socket (IPv4 only where the host has no IPv6),
    TLS when ``tls`` (a Twisted context factory) is given; returns the listening port. CannotListenError as
    ``reactor.listenTCP`` raises it (an address in use, ...)."""
    if tls is not None:
        from twisted.protocols.tls import TLSMemoryBIOFactory
        factory = TLSMemoryBIOFactory(tls, False, factory)
    listening = DualStackPort(port, factory, backlog, reactor)
    if tls is not None:
        listening._type = "TLS"  # as reactor.listenSSL names it (log prefixes only)
    try:
        listening.startListening()
    except CannotListenError as exc:
        if getattr(exc.socketError, "errno", None) not in _NO_IPV6:
            raise
        listening = reactor.listenTCP(port, factory, backlog, "")
        if tls is not None:
            listening._type = "TLS"
    return listening


@implementer(IStreamServerEndpoint)
class DualStackServerEndpoint:
    """The endpoint of a listener given only a port: :func:`listen_tcp` when it listens."""

    def __init__(self, reactor: Any, port: int, backlog: int = 50, tls: Any = None) -> None:
        self._reactor = reactor
        self._port = port
        self._backlog = backlog
        self._tls = tls

    def listen(self, factory: Any) -> defer.Deferred:
        return defer.execute(listen_tcp, self._reactor, self._port, factory, self._backlog, self._tls)
