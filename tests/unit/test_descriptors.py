"""oltsim.serving.descriptors: the descriptor limit raised at start, and the watch that keeps the plain gRPC ports
within their budget by ending the connections idle the longest, on real loopback sockets of this process."""
from __future__ import annotations

import socket
import sys
import time
from contextlib import contextmanager

import pytest
from twisted.internet.task import Clock
from twisted.logger import capturedLogs

from oltsim.logs import CONTROL
from oltsim.serving.descriptors import GrpcConnectionWatch, grpc_connections, raise_open_files_limit

linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/fd and TCP_INFO")


@contextmanager
def debug_level():
    """oltsim's log level at debug for the block, then back to what it was."""
    before = CONTROL.level
    CONTROL.set_level("debug")
    try:
        yield
    finally:
        CONTROL.set_level(before)


def test_the_soft_limit_is_raised_to_the_hard_one_and_logged():
    """A soft limit below the hard one is raised to it; the result is logged and returned."""
    calls = []
    with debug_level(), capturedLogs() as logged:  # logged at debug
        limit = raise_open_files_limit(getrlimit=lambda _: (1024, 65536),
                                       setrlimit=lambda kind, value: calls.append(value))
    assert (limit, calls) == (65536, [(65536, 65536)])
    assert [event["log_format"].split()[0] for event in logged] == ["descriptor-limit"]


def test_a_refused_raise_keeps_the_limit_and_a_low_one_is_a_warning():
    """A system that refuses the raise keeps its limit, which is then reported as low (a warning naming what to
    raise), and nothing raises."""
    def refuse(kind, value):
        raise OSError(1, "Operation not permitted")
    with capturedLogs() as logged:
        limit = raise_open_files_limit(getrlimit=lambda _: (1024, 4096), setrlimit=refuse)
    assert limit == 1024
    lines = [(event["log_level"].name, event["log_format"].split()[0]) for event in logged]
    assert lines == [("warn", "descriptor-limit-unchanged"), ("warn", "descriptor-limit")]


class Engine:
    """A listening socket standing for an engine's port: the connections it accepts are descriptors of this process,
    as the Rust front's are."""

    def __init__(self):
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.accepted = []
        self.clients = []

    def connect(self, count: int) -> list[socket.socket]:
        made = []
        for _ in range(count):
            client = socket.create_connection(("127.0.0.1", self.port), timeout=5)
            self.accepted.append(self.listener.accept()[0])
            made.append(client)
        self.clients += made
        return made

    def close(self):
        for sock in self.accepted + self.clients + [self.listener]:
            sock.close()


def ended(client: socket.socket) -> bool:
    """Whether the server's side of `client` has ended (seen within half a second: the shutdown is immediate)."""
    client.settimeout(0.5)
    try:
        return client.recv(1) == b""
    except ConnectionResetError:
        return True
    except socket.timeout:
        return False


@linux_only
def test_a_port_above_its_budget_loses_the_connections_that_did_the_least():
    """30 connections to a watched port with a budget of 10: the watch finds exactly those 30 (not the listener,
    not the clients' own ends) and ends 21 of them so that 9 stay. Kept first are those that sent the most: an
    adapter-like client that sent a few hundred bytes a while ago outranks one that trickled a byte just now
    (slowloris), and both outrank the silent ones; a grpc-connections-shed line names the server."""
    engine = Engine()
    try:
        adapters = engine.connect(3)
        for client in adapters:
            client.sendall(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + b"h" * 300)
        silent = engine.connect(21)
        time.sleep(0.05)  # TCP_INFO counts in milliseconds
        trickling = engine.connect(6)
        for client in trickling:
            client.sendall(b"P")
        time.sleep(0.05)
        assert sorted(len(found) for found in grpc_connections({engine.port}).values()) == [30]
        watch = GrpcConnectionWatch(Clock(), lambda: {"openolt": engine.port}, lambda: 65536, reserve=512, budget=10,
                                    trim=lambda: True)
        watch.quiet_below = 0
        with capturedLogs() as logged:
            assert watch.look() == 21
        assert sum(ended(client) for client in silent) == 21
        assert not any(ended(client) for client in adapters + trickling)
        assert [(event["server"], event["closed"]) for event in logged
                if event.get("log_format", "").startswith("grpc-connections-shed")] == [("openolt", 21)]
    finally:
        engine.close()


@linux_only
def test_near_the_descriptor_limit_the_biggest_port_gives_up_the_excess():
    """With the process within `reserve` of its limit, the watch ends connections on the watched port, the idlest
    first, even below its budget: at least the excess over the mark."""
    engine = Engine()
    try:
        engine.connect(20)
        watch = GrpcConnectionWatch(Clock(), lambda: {"grpc-v1": engine.port}, lambda: 100, reserve=10,
                                    budget=4096, trim=lambda: True)
        watch.quiet_below = 0
        with capturedLogs():
            closed = watch.look(open_count=lambda: 95)  # 5 over the mark of 100 - 10
        assert 5 <= closed < 20
        assert sum(ended(client) for client in engine.clients) == closed
    finally:
        engine.close()


def test_a_quiet_process_is_not_looked_at_and_the_watch_leaves_no_timer():
    """Below QUIET_BELOW descriptors the watch does not scan sockets; started, it looks every interval of its clock,
    and stopped, nothing of it stays scheduled."""
    clock = Clock()
    scanned = []
    watch = GrpcConnectionWatch(clock, lambda: {"openolt": 1}, lambda: 65536, reserve=512)
    assert watch.look(open_count=lambda: 10, connections=lambda ports: scanned.append(ports) or {}) == 0
    assert scanned == []
    watch.startService()
    assert len(clock.getDelayedCalls()) == 1
    clock.advance(watch.interval)
    assert len(clock.getDelayedCalls()) == 1
    watch.stopService()
    assert clock.getDelayedCalls() == []


def test_memory_is_handed_back_once_the_descriptors_fall_to_half_their_peak():
    """After a peak above QUIET_BELOW (a flood), the watch trims the heap once the process holds half as many
    descriptors or fewer, logs it, and not again until a new peak has come and gone; a quiet process never trims."""
    trims = []
    watch = GrpcConnectionWatch(Clock(), lambda: {}, lambda: 65536, reserve=512, trim=lambda: trims.append(1) or True)
    counts = iter([40, 50, 5000, 3000, 2600, 2400, 2300, 60, 60])
    with capturedLogs() as logged:
        for _ in range(9):
            watch.look(open_count=lambda: next(counts), connections=lambda ports: {})
    assert len(trims) == 2 == watch.trims  # at 2400 (<= 5000 / 2) and at 60 (<= 2400 / 2)
    assert [event["log_format"].split()[0] for event in logged].count("memory-trimmed") == 2


def test_the_debian_unit_gives_the_service_the_descriptors_the_daemon_asks_for():
    """The .deb's systemd unit sets LimitNOFILE to at least what the daemon wants (WANTED): under systemd the hard
    limit would otherwise be the default, and the plain gRPC ports' connections share it with every listener."""
    from pathlib import Path

    from oltsim.serving.descriptors import WANTED

    unit = (Path(__file__).resolve().parents[2] / "debian" / "oltsim.service").read_text()
    values = [line.split("=", 1)[1].strip() for line in unit.splitlines() if line.startswith("LimitNOFILE=")]
    assert len(values) == 1 and int(values[0]) >= WANTED, values
