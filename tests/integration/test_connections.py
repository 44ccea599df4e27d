"""Bounds on REST connections, checked against the real daemon over loopback sockets: connections per listener and
per peer, where a full listener closes its idlest connection for a new one and refuses only when every one is busy,
request heads with a deadline, and pipelined requests whose answers the client never reads (the connection stops
being read once its unsent answers pass --max-unsent-output)."""
from __future__ import annotations

import http.client
import json
import os
import re
import socket
import ssl
import time

import pytest

from tests.support.daemon import rss_bytes
from scripted_adapter import free_ports
from test_daemon import daemon  # noqa: F401 - the fixture
from test_grpc_connections import closed_by_server
from test_grpcserver import write_self_signed
from test_limits import read_until_closed

MIB = 1024 * 1024
TIMEOUT = 10.0
SURFACES = ("rest-v1", "rest-v0", "sadis")
READS = {"rest-v1": "/v1/olt", "rest-v0": "/v0/olt/status", "sadis": "/v1/cfg"}


def held(port: int, source: str = "127.0.0.1") -> socket.socket:
    """An idle connection to `port` from `source` (sending nothing), kept open by the caller."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.settimeout(TIMEOUT)
    sock.bind((source, 0))
    sock.connect(("127.0.0.1", port))
    return sock


def answer_of(sock: socket.socket, path: str) -> bytes:
    """Send GET `path` on `sock` and read until the server closes it (Connection: close), bounded by TIMEOUT;
    b"" when the server closed the connection without answering (or reset it)."""
    try:
        sock.sendall(b"GET " + path.encode() + b" HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        return read_until_closed(sock)
    except (ConnectionResetError, BrokenPipeError):
        return b""


def get_status(port: int, path: str, source: str = "127.0.0.1") -> int | None:
    """The status of GET `path` on a new connection from `source`; None when it is closed unanswered (a refusal can
    reset the connection before connect() returns: Python's connect with a timeout reads the socket's error after the
    handshake, and a loaded machine lets the server's reset arrive first)."""
    try:
        sock = held(port, source)
    except ConnectionResetError:
        return None
    with sock:
        answer = answer_of(sock, path)
    return int(answer.split(b" ", 2)[1]) if answer else None


def wait_for_status(port: int, path: str, status: int) -> None:
    """Poll until GET `path` answers `status` (the server notices a closed connection asynchronously)."""
    deadline = time.monotonic() + TIMEOUT
    while get_status(port, path) != status:
        assert time.monotonic() < deadline, f"GET {path} did not answer {status}"
        time.sleep(0.05)


def streaming(port: int, source: str = "127.0.0.1") -> socket.socket:
    """A connection from `source` reading the v1 event stream (a request in flight for as long as it is open)."""
    sock = held(port, source)
    sock.sendall(b"GET /v1/events HTTP/1.1\r\nHost: x\r\n\r\n")
    assert sock.recv(4096).startswith(b"HTTP/1.1 200")
    return sock


def loopback_or_skip(port: int, source: str) -> socket.socket:
    try:
        return held(port, source)
    except OSError as exc:
        pytest.skip(f"no loopback address {source} here: {exc}")


def test_a_full_peer_is_served_by_closing_its_oldest_idle_connection_on_every_rest_listener(daemon):
    """With --max-connections-per-peer 3, on each REST listener (v1, v0, SADIS): three idle connections from
    127.0.0.1 are held, a fourth from the same address (a client back after a restart, its old connections still
    open) is answered 200, the oldest idle one is closed by the daemon, and the log has a connection-evicted line
    naming the listener."""
    process = daemon("--max-connections-per-peer", "3", "--max-connections", "50")
    process.wait_serving()
    for surface in SURFACES:
        port = process.ports[surface]
        holding = [held(port) for _ in range(3)]
        try:
            assert get_status(port, READS[surface]) == 200, surface
            assert closed_by_server(holding[0], within=TIMEOUT), surface
        finally:
            for sock in holding:
                sock.close()
        assert re.search(rf"connection-evicted listener={surface} peer=127\.0\.0\.1 ", process.log), process.log
    assert process.process.poll() is None


def test_a_connection_is_refused_only_when_every_connection_of_its_peer_is_busy(daemon):
    """With --max-connections-per-peer 3 on the v1 REST listener: three event-stream readers from 127.0.0.1 keep a
    request in flight each, so a fourth connection from that address is closed unanswered (connection-refused in
    the log) and none of the readers is closed; another address is still answered; when a reader leaves, its place
    is taken again."""
    process = daemon("--max-connections-per-peer", "3", "--max-connections", "50")
    process.wait_serving()
    port = process.ports["rest-v1"]
    readers = [streaming(port) for _ in range(3)]
    try:
        assert get_status(port, "/v1/olt") is None
        loopback_or_skip(port, "127.0.0.2").close()
        assert get_status(port, "/v1/olt", "127.0.0.2") == 200
        for reader in readers:
            reader.settimeout(0.2)
            try:
                assert reader.recv(4096) != b""  # not closed (an event, a keep-alive comment or nothing at all)
            except socket.timeout:
                pass
        readers.pop().close()
        wait_for_status(port, "/v1/olt", 200)
    finally:
        for sock in readers:
            sock.close()
    assert re.search(r"connection-refused listener=rest-v1 peer=127\.0\.0\.1 ", process.log), process.log


#: connections of the flood test, from as many loopback addresses as ATTACKERS / PER_ADDRESS
ATTACKERS = 400
PER_ADDRESS = 4


def test_a_flood_of_idle_connections_from_many_addresses_locks_no_client_out(daemon):
    """400 idle connections from 100 loopback addresses (127.0.1.x, 4 each) against a v1 REST listener that holds
    40 (10 per peer): every GET /v1/olt from 127.0.0.1 during the flood is answered 200, the daemon closed the
    flood's connections to make room (connections-evicted or connection-evicted lines), and it keeps serving."""
    process = daemon("--max-connections", "40", "--max-connections-per-peer", "10")
    process.wait_serving()
    port = process.ports["rest-v1"]
    loopback_or_skip(port, "127.0.1.2").close()
    flood = []
    try:
        for index in range(ATTACKERS):
            flood.append(held(port, f"127.0.1.{2 + index // PER_ADDRESS}"))
            if index % 100 == 99:
                assert get_status(port, "/v1/olt") == 200
        for _ in range(5):
            assert get_status(port, "/v1/olt") == 200
    finally:
        for sock in flood:
            sock.close()
    assert re.search(r"connections?-evicted listener=rest-v1 peer=127\.0\.1\.", process.log), process.log
    assert process.process.poll() is None


def test_a_request_head_trickled_byte_by_byte_is_closed_at_its_deadline(daemon):
    """A client that sends a request line, then one byte every half second and never ends its head (slowloris), is
    closed by the daemon (a connection-head-timeout line), while another client is answered meanwhile."""
    process = daemon()
    process.wait_serving()
    port = process.ports["rest-v1"]
    with held(port) as sock:
        sock.sendall(b"GET /v1/olt HTTP/1.1\r\n")
        sock.settimeout(0.5)
        closed = False
        for index in range(60):  # 30 s at most; the deadline is HEAD_TIMEOUT (10 s)
            try:
                sock.sendall(b"X-%d: y\r\n" % index)
                closed = sock.recv(1) == b""
            except socket.timeout:
                continue
            except (ConnectionResetError, BrokenPipeError):
                closed = True
            if closed:
                break
            if index == 2:
                assert get_status(port, "/v1/olt") == 200
        assert closed
    assert re.search(r"connection-head-timeout listener=rest-v1 peer=127\.0\.0\.1 ", process.log), process.log


#: ONUs of the pipelining test (one PON): GET /v1/olt/onus answers about 77 KB, each from a 40-byte request.
PIPELINE_ONUS = 64
PIPELINED = 2000
#: What the pipelining client may cost: --max-unsent-output (256 KiB) and one answer in progress, with slack for the
#: allocator. Unbounded, 2000 unread answers held 150 MB.
PIPELINE_GROWTH_MIB = 50


def _read_responses(sock: socket.socket, count: int, deadline: float) -> list[tuple[int, bytes]]:
    """`count` HTTP/1.1 responses (status, body) read from `sock`, framed by their Content-Length."""
    buffer = bytearray()
    responses = []
    while len(responses) < count:
        head_end = buffer.find(b"\r\n\r\n")
        if head_end >= 0:
            head = bytes(buffer[:head_end]).decode("latin-1").split("\r\n")
            headers = {name.lower(): value.strip() for name, value in (line.split(":", 1) for line in head[1:])}
            length = int(headers["content-length"])
            if len(buffer) >= head_end + 4 + length:
                responses.append((int(head[0].split()[1]), bytes(buffer[head_end + 4:head_end + 4 + length])))
                del buffer[:head_end + 4 + length]
                continue
        assert time.monotonic() < deadline, f"{len(responses)} of {count} responses read"
        data = sock.recv(1 << 20)
        assert data, f"the connection closed after {len(responses)} of {count} responses"
        buffer += data
    return responses


def _get(port: int, path: str, context: ssl.SSLContext | None) -> tuple[int, dict] | None:
    """Status and JSON body of GET `path` on a new connection (over TLS with `context`); None if it fails."""
    if context is None:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=TIMEOUT)
    else:
        connection = http.client.HTTPSConnection("127.0.0.1", port, timeout=TIMEOUT, context=context)
    try:
        connection.request("GET", path)
        response = connection.getresponse()
        return response.status, json.loads(response.read())
    except OSError:
        return None
    finally:
        connection.close()


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="reads the daemon's RSS from /proc")
@pytest.mark.parametrize("tls", [False, True], ids=["tcp", "tls"])
def test_pipelined_requests_never_read_cost_bounded_memory(daemon, tmp_path, tls):
    """A client pipelines 2000 GET /v1/olt/onus (77 KB each at 64 ONUs) and does not read, over TCP or TLS: the
    daemon stops reading that connection once its unsent answers pass the limit, so its memory grows by at most a
    bounded amount, another client is still answered, and when the first client reads it gets every answer,
    complete and in order."""
    arguments = ["--pon", "1", "--onu", str(PIPELINE_ONUS), "--delay", "0"]
    context = port = None
    if tls:
        write_self_signed(tmp_path)
        port = free_ports(1)[0]
        arguments += ["--rest-v1", f"ssl:{port}:interface=127.0.0.1:privateKey=key.pem:certKey=cert.pem"]
        context = ssl.create_default_context(cafile=str(tmp_path / "cert.pem"))
    process = daemon(*arguments)
    port = port or process.ports["rest-v1"]
    deadline = time.monotonic() + 30
    while (answer := _get(port, "/v1/olt/onus", context)) is None or answer[0] != 200:
        assert process.process.poll() is None and time.monotonic() < deadline, process.log
        time.sleep(0.1)
    assert len(answer[1]["items"]) == PIPELINE_ONUS
    pid = process.process.pid
    before = rss_bytes(pid) / MIB
    request = b"GET /v1/olt/onus HTTP/1.1\r\nHost: x\r\n\r\n"
    plain = socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT)
    plain.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 * 1024)
    with (context.wrap_socket(plain, server_hostname="127.0.0.1") if tls else plain) as sock:
        sock.sendall(request * PIPELINED)  # about 80 KB: the kernel's buffers take it whether or not it is read
        grown = 0.0
        for _ in range(20):  # two seconds for the daemon to take in what it will
            time.sleep(0.1)
            grown = max(grown, rss_bytes(pid) / MIB - before)
        assert grown < PIPELINE_GROWTH_MIB, grown
        assert _get(port, "/v1/olt", context)[0] == 200
        responses = _read_responses(sock, PIPELINED, time.monotonic() + 60)
    assert {status for status, _ in responses} == {200}
    assert len({body for _, body in responses}) == 1
    for _, body in responses[:5]:
        assert len(json.loads(body)["items"]) == PIPELINE_ONUS
    assert process.process.poll() is None
