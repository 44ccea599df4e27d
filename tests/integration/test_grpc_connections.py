"""Connections on the gRPC ports: the real daemon on loopback, raw TCP and HTTP/2 clients from many loopback
addresses, and real grpcio channels checking that every port still answers; and the TLS relay's byte pipe. Every
wait is bounded; nothing asserts time or memory."""
from __future__ import annotations

import re
import socket
import time

import grpc
import h2.config
import h2.connection
import pytest
import pytest_twisted
from twisted.internet.defer import inlineCallbacks

from engines import engine_options, grpc_engine  # noqa: F401 - the fixture
from voltha_protos import openolt_pb2, openolt_pb2_grpc

from oltsim._proto import bbsim_pb2, bbsim_pb2_grpc
from test_daemon import daemon  # noqa: F401 - the fixture

GRPC_PORTS = ("openolt", "grpc-v1", "grpc-v0", "dmi")


def held_connection(port: int, streams: int = 0, source: str = "127.0.0.1") -> socket.socket | None:
    """A connection from `source` to the daemon's `port` that sent the HTTP/2 preface, its SETTINGS and `streams`
    HEADERS of a GetOlt call without any DATA (a call whose body never comes), and reads nothing; None if it was
    reset while connecting (a storm's refused connections can be)."""
    try:
        sock = socket.create_connection(("127.0.0.1", port), timeout=5.0, source_address=(source, 0))
    except ConnectionError:
        return None
    conn = h2.connection.H2Connection(config=h2.config.H2Configuration(client_side=True, header_encoding=None))
    conn.initiate_connection()
    for _ in range(streams):
        conn.send_headers(conn.get_next_available_stream_id(), [
            (b":method", b"POST"), (b":scheme", b"http"), (b":path", b"/bbsim.BBSim/GetOlt"),
            (b":authority", f"127.0.0.1:{port}".encode()), (b"content-type", b"application/grpc"),
            (b"te", b"trailers")])
    try:
        sock.sendall(conn.data_to_send())
    except OSError:
        pass  # refused already: the caller sees the connection closed
    return sock


def closed_by_server(sock: socket.socket, within: float = 5.0) -> bool:
    """Whether the server closed `sock` (EOF or reset) within `within` seconds; what it sent first is skipped."""
    sock.settimeout(0.2)
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            if sock.recv(65536) == b"":
                return True
        except socket.timeout:
            continue
        except OSError:
            return True
    return False


def still_open(sock: socket.socket) -> bool:
    """Whether `sock` is still open on the server's side now (no EOF or reset waiting to be read)."""
    sock.setblocking(False)
    try:
        while True:
            if sock.recv(65536) == b"":
                return False
    except BlockingIOError:
        return True
    except OSError:
        return False
    finally:
        sock.setblocking(True)


def get_olt(port: int, timeout: float = 10.0):
    """A real bbsimctl-style GetOlt on its own channel."""
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        return bbsim_pb2_grpc.BBSimStub(channel).GetOlt(bbsim_pb2.Empty(), timeout=timeout)


def openolt_stub(port: int, channel_options=()):
    channel = grpc.insecure_channel(f"127.0.0.1:{port}", options=list(channel_options))
    return channel, openolt_pb2_grpc.OpenoltStub(channel)


#: the flood: connections to one gRPC port, from FLOOD / PER_ADDRESS loopback addresses
FLOOD = 600
PER_ADDRESS = 4


def flood(port: int, count: int = FLOOD, first_octet: int = 2) -> list[socket.socket]:
    """`count` connections to `port` from 127.0.<first_octet>.x (PER_ADDRESS each): every other one sent the HTTP/2
    preface and its SETTINGS, the others nothing at all. Skips when the host has no such loopback addresses."""
    held = []
    for index in range(count):
        source = f"127.0.{first_octet}.{2 + index // PER_ADDRESS}"
        try:
            if index % 2:
                sock = held_connection(port, source=source)
            else:
                sock = socket.create_connection(("127.0.0.1", port), timeout=5.0, source_address=(source, 0))
        except OSError as exc:
            for other in held:
                other.close()
            pytest.skip(f"no loopback address {source} here: {exc}")
        if sock is not None:
            held.append(sock)
    return held


def test_a_flood_of_idle_connections_to_the_southbound_locks_no_client_out(daemon, grpc_engine):
    """600 idle connections from 150 loopback addresses to the OpenOLT port, half of them silent and half after the
    HTTP/2 preface (refused at a cap of 128 rather than evicted, they would lock every client out): an adapter from
    127.0.0.1 gets its HeartbeatCheck answered, opens its indication stream and receives the OLT's indications,
    bbsimctl's GetOlt answers on the v1 port throughout, and the flood's connections are held, not closed."""
    process = daemon(*engine_options(grpc_engine))
    process.wait_serving()
    southbound = process.ports["openolt"]
    held = flood(southbound)
    channel, stub = openolt_stub(southbound)
    try:
        assert stub.HeartbeatCheck(openolt_pb2.Empty(), timeout=5).heartbeat_signature
        stream = stub.EnableIndication(openolt_pb2.Empty(), timeout=10)
        first = next(stream)
        assert first.WhichOneof("data") in ("olt_ind", "intf_oper_ind", "intf_ind")
        assert get_olt(process.ports["grpc-v1"]).SerialNumber == "BBSIM_OLT_0"
        assert stub.HeartbeatCheck(openolt_pb2.Empty(), timeout=5).heartbeat_signature
        stream.cancel()
        assert sum(still_open(sock) for sock in held) == len(held)
    finally:
        channel.close()
        for sock in held:
            sock.close()
    assert process.process.poll() is None


def test_an_adapter_that_reconnects_during_a_flood_is_served_and_named_by_its_own_address(daemon):
    """With 400 idle connections held on the OpenOLT port and on the v1 gRPC port, an adapter that drops its
    connection and comes back (its own restart) is answered again at once, and the log names it by its own
    address (ipv4:127.0.0.1:<port>), not by a relay's."""
    process = daemon()
    process.wait_serving()
    held = flood(process.ports["openolt"], 400, 3) + flood(process.ports["grpc-v1"], 400, 4)
    try:
        for _ in range(3):
            channel, stub = openolt_stub(process.ports["openolt"])
            try:
                assert stub.HeartbeatCheck(openolt_pb2.Empty(), timeout=5).heartbeat_signature
                stream = stub.EnableIndication(openolt_pb2.Empty(), timeout=10)
                next(stream)
                stream.cancel()
            finally:
                channel.close()
        assert get_olt(process.ports["grpc-v1"]).SerialNumber == "BBSIM_OLT_0"
    finally:
        for sock in held:
            sock.close()
    assert re.search(r"indication-stream-opened serial=\S+ peer=ipv4:127\.0\.0\.1:\d+", process.log), process.log
    assert "peer=unix:" not in process.log


STORM_CONNECTIONS = 300
STORM_STREAMS = 8


def test_held_streams_over_many_connections_leave_the_port_answering(daemon):
    """300 connections from one peer to the v1 gRPC port, each with the preface and 8 HEADERS and never a DATA frame,
    held for 5 s: the engine holds them all (nothing is refused on a plain gRPC port), GetOlt from another
    connection answers throughout, and again once they are closed."""
    process = daemon()
    process.wait_serving()
    port = process.ports["grpc-v1"]
    get_olt(port)
    storm = []
    try:
        for _ in range(STORM_CONNECTIONS):
            storm.append(held_connection(port, streams=STORM_STREAMS, source="127.0.0.1"))
        end = time.monotonic() + 5.0
        while time.monotonic() < end:
            assert get_olt(port, timeout=5.0).SerialNumber == "BBSIM_OLT_0"
            time.sleep(0.5)
        kept = sum(sock is not None and still_open(sock) for sock in storm)
    finally:
        for sock in storm:
            if sock is not None:
                sock.close()
    assert kept == STORM_CONNECTIONS
    assert get_olt(port).SerialNumber == "BBSIM_OLT_0"
    assert process.process.poll() is None


def _relay(tmp_path, engine_factory, name: str = "engine", port: int = 0):
    """A relay (limits of 4) on a free 127.0.0.1 port in front of a loopback port served by `engine_factory`:
    (relay, engine listener, port)."""
    from twisted.internet import reactor

    from oltsim.serving.connlimit import ConnectionLimits
    from oltsim.serving.tlsfront import RelayFront

    engine = reactor.listenTCP(0, engine_factory, interface="127.0.0.1")
    front = RelayFront(reactor, "grpc-test", port, "127.0.0.1", engine.getHost().port,
                       limits=ConnectionLimits("grpc-test", 4, 4, reactor))
    return front, engine, front.listen()


@inlineCallbacks
def _stop_relay(front, engine):
    from twisted.internet import defer
    yield defer.maybeDeferred(front.stop_listening)
    front.drop_connections()
    yield defer.maybeDeferred(engine.stopListening)


@inlineCallbacks
def _turns_until(condition, turns: int = 300):
    """Let the reactor run (10 ms at a time, at most `turns` times) until `condition()` holds; returns it."""
    from twisted.internet import reactor, task
    for _ in range(turns):
        if condition():
            break
        yield task.deferLater(reactor, 0.01, lambda: None)
    return condition()


def _reader(client: socket.socket):
    """A non-blocking read of what `client` received so far: (bytes, ended)."""
    got = bytearray()
    state = {"ended": False}

    def read():
        while not state["ended"]:
            try:
                chunk = client.recv(4096)
            except BlockingIOError:
                break
            state["ended"] = chunk == b""
            got.extend(chunk)
        return bytes(got), state["ended"]
    client.setblocking(False)
    return read


@pytest_twisted.inlineCallbacks
def test_relay_sets_no_delay_on_client_connections(tmp_path):
    """The relay in front of a gRPC engine sets TCP_NODELAY on every client connection, as gRPC servers do: without
    it, an answer written while the client's last segment is unacked waits for the delayed ACK (about 40 ms), which
    stalled one sequential OMCI exchange in 15 (docs/performance.md)."""
    from twisted.internet import protocol

    front, engine, port = _relay(tmp_path, protocol.Factory.forProtocol(protocol.Protocol))
    client = socket.create_connection(("127.0.0.1", port), timeout=5)
    try:
        # bounded: the relay's side of the connection appears within a few reactor turns
        yield _turns_until(lambda: front.connections and all(i.transport is not None for i in front.connections))
        (inbound,) = front.connections
        handle = inbound.transport.getHandle()  # through the connection limits' wrapper
        assert handle.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) != 0
    finally:
        client.close()
        yield _stop_relay(front, engine)


@pytest_twisted.inlineCallbacks
def test_a_relay_stopped_as_it_started_leaves_nothing_behind(tmp_path):
    """A gRPC server stopped right after it started (a restart with no delay, the OLT's reboot) stops its relay in
    the turn it started or the next: the port is released and nothing of the old listener stays on the loop, so the
    next relay on the same port accepts, and relays to its own engine, every time."""
    from twisted.internet import protocol, reactor, task

    class Greeter(protocol.Protocol):
        def connectionMade(self):
            self.transport.write(self.factory.greeting)

    port = 0
    for round_ in range(20):
        factory = protocol.Factory.forProtocol(Greeter)
        factory.greeting = f"engine {round_}\n".encode()
        front, engine, port = _relay(tmp_path, factory, f"engine-{round_}", port)
        if round_ % 2 == 0:  # every other one is stopped at once or a turn later, never having served
            if round_ % 4 == 2:
                yield task.deferLater(reactor, 0, lambda: None)
            yield _stop_relay(front, engine)
            continue
        client = socket.create_connection(("127.0.0.1", port), timeout=5)
        read = _reader(client)
        try:
            yield _turns_until(lambda: read()[0].endswith(b"\n"))
            assert read()[0] == factory.greeting
        finally:
            client.close()
            yield _stop_relay(front, engine)


@pytest_twisted.inlineCallbacks
def test_the_last_bytes_before_a_close_are_relayed_before_it(tmp_path):
    """The relay gathers what one turn of the loop read and writes it at the next; a side that closes right after
    writing (the engine's GOAWAY and last statuses, a client's last frame) still has every byte delivered before
    the close reaches the other side."""
    from twisted.internet import protocol

    class SaysGoodbye(protocol.Protocol):
        def connectionMade(self):
            self.transport.write(b"the engine's last words")
            self.transport.loseConnection()

    front, engine, port = _relay(tmp_path, protocol.Factory.forProtocol(SaysGoodbye))
    client = socket.create_connection(("127.0.0.1", port), timeout=5)
    read = _reader(client)
    try:
        assert (yield _turns_until(lambda: read()[1])), "the close never reached the client"
        assert read()[0] == b"the engine's last words"
    finally:
        client.close()
        yield _stop_relay(front, engine)
