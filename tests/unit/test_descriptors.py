"""oltsim.serving.descriptors: the descriptor limit raised at start, and the watch that keeps the plain gRPC ports
within their budget by ending the connections idle the longest, on real loopback sockets of this process."""
from __future__ import annotations

import socket
import sys
import time

import pytest
from twisted.internet.task import Clock
from twisted.logger import capturedLogs

from oltsim.serving.descriptors import GrpcConnectionWatch, grpc_connections, raise_open_files_limit

linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/fd and TCP_INFO")


def test_the_soft_limit_is_raised_to_the_hard_one_and_logged():
    """A soft limit below the hard one is raised to it; the result is logged and returned."""
    calls = []
    with capturedLogs() as logged:
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
def test_a_port_above_its_budget_loses_the_connections_idle_the_longest():
    """30 connections to a watched port with a budget of 10: the watch finds exactly those 30 (not the listener,
    not the clients' own ends), ends 21 of them, the idlest, so that 9 stay; the connections that carried data
    most recently are among those kept, and a grpc-connections-shed line names the server."""
    engine = Engine()
    try:
        old = engine.connect(24)
        time.sleep(0.05)  # TCP_INFO counts in milliseconds
        recent = engine.connect(6)
        for client in recent:
            client.sendall(b"PRI")
        time.sleep(0.05)
        assert sorted(len(found) for found in grpc_connections({engine.port}).values()) == [30]
        watch = GrpcConnectionWatch(Clock(), lambda: {"openolt": engine.port}, lambda: 65536, reserve=512, budget=10)
        watch.quiet_below = 0
        with capturedLogs() as logged:
            assert watch.look() == 21
        assert sum(ended(client) for client in old) == 21
        assert not any(ended(client) for client in recent)
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
                                    budget=4096)
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
