"""oltsim.serving.connlimit in memory: connections counted per listener and per peer, refusals beyond the limits (closed
unread, logged once and then summed up per peer on a fake clock), and LimitedFactory around a server factory."""
from __future__ import annotations

import pytest
from twisted.internet.address import IPv4Address, UNIXAddress
from twisted.internet.error import ConnectionDone
from twisted.internet.protocol import Factory, Protocol
from twisted.internet.task import Clock
from twisted.internet.testing import StringTransport
from twisted.logger import capturedLogs
from twisted.python.failure import Failure

from oltsim.serving.connlimit import HEAD_TIMEOUT, REFUSAL_LOG_INTERVAL, ConnectionLimits, LimitedFactory


def address(host: str, port: int = 40000) -> IPv4Address:
    return IPv4Address("TCP", host, port)


def refusal_lines(logged) -> list[dict]:
    return [event for event in logged if event.get("log_namespace") == "oltsim.connections"]


def test_admit_counts_each_connection_in_total_and_per_peer_and_release_forgets_it():
    """admit answers None and counts the connection in total and under its peer; release forgets it, dropping a
    peer with no connection left."""
    limits = ConnectionLimits("rest-v1", total=4, per_peer=2, clock=Clock())
    assert limits.admit("10.0.0.1") is None
    assert limits.admit("10.0.0.1") is None
    assert limits.admit("10.0.0.2") is None
    assert (limits.open, limits.by_peer) == (3, {"10.0.0.1": 2, "10.0.0.2": 1})
    limits.release("10.0.0.1")
    limits.release("10.0.0.2")
    assert (limits.open, limits.by_peer) == (1, {"10.0.0.1": 1})
    assert limits.refused == 0


def test_a_peer_at_its_limit_is_refused_while_another_peer_is_admitted():
    """Beyond per_peer connections from one host admit answers the reason and counts nothing; other hosts are still
    admitted, and a released place is taken again."""
    limits = ConnectionLimits("rest-v1", total=10, per_peer=2, clock=Clock())
    for _ in range(2):
        assert limits.admit("10.0.0.1") is None
    reason = limits.admit("10.0.0.1")
    assert reason == "2 connections open from this peer, the limit per peer, all busy"
    one = ConnectionLimits("rest-v1", total=8, per_peer=1, clock=Clock())
    one.admit("10.0.0.9")
    assert one.admit("10.0.0.9") == "1 connection open from this peer, the limit per peer, all busy"
    assert (limits.open, limits.by_peer["10.0.0.1"], limits.refused) == (2, 2, 1)
    assert limits.admit("10.0.0.2") is None
    limits.release("10.0.0.1")
    assert limits.admit("10.0.0.1") is None


def test_the_listener_limit_refuses_every_peer():
    """Once `total` connections are open, a connection from any host, a new one included, is refused."""
    limits = ConnectionLimits("sadis", total=2, per_peer=2, clock=Clock())
    assert limits.admit("10.0.0.1") is None
    assert limits.admit("10.0.0.2") is None
    assert limits.admit("10.0.0.3") == "2 connections open, the listener's limit, all busy"
    assert limits.by_peer == {"10.0.0.1": 1, "10.0.0.2": 1}
    limits.release("10.0.0.2")
    assert limits.admit("10.0.0.3") is None


def test_the_first_refusal_is_logged_at_once_and_the_rest_summed_up_per_peer_at_the_intervals_end():
    """One connection-refused line for the first refusal; the following ones of the interval give one
    connections-refused line per peer with its count when the interval ends on the clock, and nothing stays
    scheduled; the next refusal is logged at once again."""
    clock = Clock()
    limits = ConnectionLimits("rest-v0", total=10, per_peer=1, clock=clock)
    assert limits.admit("10.0.0.1") is None
    assert limits.admit("10.0.0.2") is None
    with capturedLogs() as logged:
        limits.admit("10.0.0.1")
        lines = refusal_lines(logged)
        assert [line["log_format"].split()[0] for line in lines] == ["connection-refused"]
        assert (lines[0]["listener"], lines[0]["peer"]) == ("rest-v0", "10.0.0.1")
        assert "limit per peer" in lines[0]["reason"]
        for host in ("10.0.0.1", "10.0.0.2", "10.0.0.1"):
            limits.admit(host)
        assert len(refusal_lines(logged)) == 1
        clock.advance(REFUSAL_LOG_INTERVAL)
        summed = refusal_lines(logged)[1:]
        assert [(line["log_format"].split()[0], line["peer"], line["count"]) for line in summed] == [
            ("connections-refused", "10.0.0.1", 2), ("connections-refused", "10.0.0.2", 1)]
        assert all(line["listener"] == "rest-v0" and line["per_peer"] == 1 for line in summed)
        assert clock.getDelayedCalls() == []
        limits.admit("10.0.0.2")
        assert refusal_lines(logged)[-1]["log_format"].startswith("connection-refused")
    assert limits.refused == 5


def test_flush_writes_the_summed_up_refusals_at_once_and_cancels_the_timer():
    """flush (a stopping listener) logs what is summed up so far and leaves no delayed call."""
    clock = Clock()
    limits = ConnectionLimits("rest-v1", total=1, per_peer=1, clock=clock)
    limits.admit("10.0.0.1")
    with capturedLogs() as logged:
        limits.admit("10.0.0.1")
        limits.admit("10.0.0.1")
        assert len(clock.getDelayedCalls()) == 1
        limits.flush()
        assert [line["count"] for line in refusal_lines(logged)[1:]] == [1]
    assert clock.getDelayedCalls() == []


class Echo(Protocol):
    """Writes back what it receives; remembers that it was lost."""

    lost = False

    def dataReceived(self, data):
        self.transport.write(data)

    def connectionLost(self, reason=None):
        self.lost = True


class EchoFactory(Factory):
    protocol = Echo

    def __init__(self):
        self.built = []

    def buildProtocol(self, addr):
        protocol = super().buildProtocol(addr)
        self.built.append(protocol)
        return protocol


def connect(factory, host: str, port: int = 40000):
    """A connection from `host` accepted by `factory`: (its protocol, its StringTransport)."""
    protocol = factory.buildProtocol(address(host, port))
    transport = StringTransport(peerAddress=address(host, port))
    protocol.makeConnection(transport)
    return protocol, transport


def test_an_admitted_connection_is_served_by_the_wrapped_factory_and_released_when_lost():
    """Below the limits a connection reaches the wrapped factory's protocol unchanged (it is read and answered);
    when it is lost its place is released and the wrapped protocol is told."""
    limits = ConnectionLimits("rest-v1", total=2, per_peer=2, clock=Clock())
    wrapped = EchoFactory()
    factory = LimitedFactory(wrapped, limits)
    protocol, transport = connect(factory, "10.0.0.1")
    protocol.dataReceived(b"GET / HTTP/1.1\r\n")
    assert transport.value() == b"GET / HTTP/1.1\r\n"
    assert (limits.open, len(wrapped.built)) == (1, 1)
    protocol.connectionLost(Failure(ConnectionDone()))
    assert limits.open == 0 and limits.by_peer == {}
    assert wrapped.built[0].lost


def test_a_connection_beyond_the_limits_while_every_one_is_busy_is_aborted_unread():
    """Beyond the per-peer limit, with the peer's one connection answering a request, the new connection is
    aborted as soon as it is made, before it is read: the wrapped factory builds nothing, nothing is written, and
    losing it releases nothing."""
    limits = ConnectionLimits("rest-v1", total=5, per_peer=1, clock=Clock())
    wrapped = EchoFactory()
    factory = LimitedFactory(wrapped, limits)
    first, _ = connect(factory, "10.0.0.1")
    first.request_started()
    with capturedLogs():
        protocol, transport = connect(factory, "10.0.0.1", 40001)
    assert transport.disconnected and transport.disconnecting
    assert len(wrapped.built) == 1
    protocol.dataReceived(b"GET / HTTP/1.1\r\n\r\n")  # whatever was already in flight is dropped
    protocol.connectionLost(Failure(ConnectionDone()))
    assert transport.value() == b""
    assert (limits.open, limits.by_peer, limits.refused) == (1, {"10.0.0.1": 1}, 1)


def test_a_full_peer_makes_room_by_closing_its_own_oldest_idle_connection():
    """A peer at its limit that connects again (an adapter back after a restart, its old connections still held)
    is served: its connection idle the longest is aborted and released at once, a busy one is kept, other peers'
    connections are untouched, and a connection-evicted line names both."""
    clock = Clock()
    limits = ConnectionLimits("rest-v1", total=10, per_peer=3, clock=clock)
    factory = LimitedFactory(EchoFactory(), limits)
    other, other_transport = connect(factory, "10.0.0.9")
    busy, busy_transport = connect(factory, "10.0.0.1", 40001)
    busy.request_started()
    clock.advance(1)
    idle, idle_transport = connect(factory, "10.0.0.1", 40002)
    clock.advance(1)
    young, young_transport = connect(factory, "10.0.0.1", 40003)
    clock.advance(1)
    with capturedLogs() as logged:
        newcomer, newcomer_transport = connect(factory, "10.0.0.1", 40004)
    assert idle_transport.disconnected
    assert not any(t.disconnected for t in (busy_transport, young_transport, newcomer_transport, other_transport))
    assert (limits.open, limits.by_peer, limits.evicted, limits.refused) == (4, {"10.0.0.9": 1, "10.0.0.1": 3}, 1, 0)
    lines = refusal_lines(logged)
    assert [(line["log_format"].split()[0], line["peer"], line["newcomer"], line["idle"]) for line in lines] == [
        ("connection-evicted", "10.0.0.1", "10.0.0.1", 2.0)]
    idle.connectionLost(Failure(ConnectionDone()))  # its loss, later, releases nothing twice
    assert (limits.open, limits.by_peer["10.0.0.1"]) == (4, 3)


def test_a_full_listener_closes_the_connection_whose_last_request_ended_first():
    """At the listener's limit the oldest progress goes first, whatever its peer: a connection that finished a
    request recently is younger than one that connected later but never completed a request head (a client that
    trickles its head byte by byte gains nothing), and busy ones are skipped."""
    clock = Clock()
    limits = ConnectionLimits("sadis", total=3, per_peer=3, clock=clock)
    factory = LimitedFactory(EchoFactory(), limits)
    served, served_transport = connect(factory, "10.0.0.1")
    clock.advance(1)
    trickle, trickle_transport = connect(factory, "10.0.0.2")
    clock.advance(1)
    busy, busy_transport = connect(factory, "10.0.0.3")
    busy.request_started()
    served.request_started()
    served.request_finished()
    trickle.dataReceived(b"G")
    with capturedLogs():
        connect(factory, "10.0.0.4")
    assert trickle_transport.disconnected
    assert not served_transport.disconnected and not busy_transport.disconnected
    with capturedLogs():
        connect(factory, "10.0.0.5")
    assert served_transport.disconnected and not busy_transport.disconnected


def test_a_request_head_must_come_in_time_from_the_accept_and_from_a_later_requests_first_byte():
    """A connection with no complete request head HEAD_TIMEOUT seconds after its accept is aborted; a head in time
    cancels the deadline, an idle connection between requests has none, and the first byte of a later request
    starts a new one. Nothing stays scheduled once the connection is lost."""
    clock = Clock()
    limits = ConnectionLimits("rest-v1", total=10, per_peer=10, clock=clock)
    factory = LimitedFactory(EchoFactory(), limits)
    with capturedLogs() as logged:
        _, silent = connect(factory, "10.0.0.1")
        clock.advance(HEAD_TIMEOUT)
    assert silent.disconnected
    assert [line["log_format"].split()[0] for line in refusal_lines(logged)] == ["connection-head-timeout"]
    served, transport = connect(factory, "10.0.0.2")
    clock.advance(HEAD_TIMEOUT - 1)
    served.request_started()
    clock.advance(HEAD_TIMEOUT * 3)
    served.request_finished()
    clock.advance(HEAD_TIMEOUT * 3)  # idle between requests
    assert not transport.disconnected
    served.dataReceived(b"GET / HT")
    with capturedLogs():
        clock.advance(HEAD_TIMEOUT)
    assert transport.disconnected
    served.connectionLost(Failure(ConnectionDone()))
    assert clock.getDelayedCalls() == []


def test_for_a_relay_every_byte_is_progress_and_the_first_one_meets_the_deadline():
    """With by_requests off (the TLS relay), the first byte received cancels the head deadline and every byte
    makes the connection the youngest, so the connection that has sent nothing for the longest is evicted."""
    clock = Clock()
    limits = ConnectionLimits("openolt", total=2, per_peer=2, clock=clock)
    factory = LimitedFactory(EchoFactory(), limits, by_requests=False)
    first, first_transport = connect(factory, "10.0.0.1")
    clock.advance(1)
    second, second_transport = connect(factory, "10.0.0.2")
    clock.advance(1)
    first.dataReceived(b"PRI * HTTP/2.0")
    clock.advance(HEAD_TIMEOUT)
    assert not first_transport.disconnected and second_transport.disconnected  # second never sent a byte
    _, third_transport = connect(factory, "10.0.0.3")
    with capturedLogs():
        connect(factory, "10.0.0.4")
    assert first_transport.disconnected and not third_transport.disconnected


def test_a_wrapped_factory_that_declines_releases_the_place_and_the_connection_is_closed():
    """A wrapped factory answering None (it declines the connection): the place is released and the connection
    is aborted (a TLS listener's wrapping cannot take None)."""

    class Declining(Factory):
        def buildProtocol(self, addr):
            return None

    limits = ConnectionLimits("sadis", total=1, per_peer=1, clock=Clock())
    _, transport = connect(LimitedFactory(Declining(), limits), "10.0.0.1")
    assert transport.disconnected
    assert (limits.open, limits.by_peer, limits.refused) == (0, {}, 0)


def test_a_wrapped_factory_that_raises_releases_the_place():
    """An exception from the wrapped factory's buildProtocol propagates (the port logs it) with the place
    released."""

    class Failing(Factory):
        def buildProtocol(self, addr):
            raise RuntimeError("no")

    limits = ConnectionLimits("sadis", total=1, per_peer=1, clock=Clock())
    with pytest.raises(RuntimeError):
        LimitedFactory(Failing(), limits).buildProtocol(address("10.0.0.1"))
    assert (limits.open, limits.by_peer) == (0, {})


def test_peers_without_a_host_are_counted_under_their_address_text():
    """A Unix socket's peer has no host: its connections are counted under the address's text."""
    limits = ConnectionLimits("rest-v1", total=5, per_peer=1, clock=Clock())
    factory = LimitedFactory(EchoFactory(), limits)
    factory.buildProtocol(UNIXAddress(None))
    assert limits.open == 1 and list(limits.by_peer) == [str(UNIXAddress(None))]


def test_stopping_the_factory_flushes_the_summed_up_refusals():
    """doStop (the listener stops) logs the refusals summed up so far and leaves no delayed call, and stops the
    wrapped factory too."""
    clock = Clock()
    limits = ConnectionLimits("rest-v1", total=1, per_peer=1, clock=clock)
    wrapped = EchoFactory()
    factory = LimitedFactory(wrapped, limits)
    factory.doStart()
    first, _ = connect(factory, "10.0.0.1")
    first.request_started()
    with capturedLogs() as logged:
        connect(factory, "10.0.0.1", 40001)
        connect(factory, "10.0.0.1", 40002)
        factory.doStop()
        assert [line["count"] for line in refusal_lines(logged)[1:]] == [1]
    first.connectionLost(Failure(ConnectionDone()))
    assert clock.getDelayedCalls() == []
    assert wrapped.numPorts == 0
