"""Faults: an adapter that drops its stream in the middle of bring-up and comes back, event readers that stop
reading while events pour out, SIGTERM during bring-up, and kill -9 followed by a restart on the same ports.

After each the simulator answers, no ONU is stuck in a transitional state (`test_load.check_invariants`) and, for
the in-process ones, no delayed call is left once the service stopped. The tests of the OpenOLT endpoint run on both
its engines (`engines.grpc_engine`); the event readers' test, which uses it only to bring the ONUs up, on the default.
"""
from __future__ import annotations

import http.client
import signal
import socket

import grpc
import pytest_twisted
from twisted.internet import reactor
from twisted.internet.task import deferLater
from twisted.internet.threads import deferToThread

import test_daemon
from engines import engine_options, grpc_engine  # noqa: F401 - the fixture
from oltsim._proto import oltsim_pb2, oltsim_pb2_grpc
from scripted_adapter import ScriptedAdapter, is_onu_disc, serial_of
from test_adapter import start_oltsim, stop_oltsim
from test_daemon import STOP_TIMEOUT, daemon  # noqa: F401 - the fixture
from test_load import check_invariants, due_soon


@pytest_twisted.inlineCallbacks
def test_adapter_drops_stream_mid_bring_up_and_reconnects(tmp_path, grpc_engine):
    """Half the ONUs are activated, the adapter cancels EnableIndication and opens it again: the rest are
    announced again, activated and come up; the first half stays enabled and nothing is stuck."""
    sim = start_oltsim(tmp_path, "--pon", "2", "--onu", "4", "--delay", "0", engine=grpc_engine)
    adapter = ScriptedAdapter(sim.openolt)
    try:
        def script():
            _, first = adapter.bring_up(4)
            adapter.stream.cancel()
            adapter.reconnect()
            return first, adapter.activate_discovered(4)

        first, rest = yield deferToThread(script)
        assert len({o.serial for o in first + rest}) == 8
        for _ in range(50):
            if due_soon(sim.olt) == 0:
                break
            yield deferLater(reactor, 0.1, lambda: None)
        assert {onu.state for onu in sim.olt.onus} == {"enabled"}
        assert check_invariants(sim.olt) == []
    finally:
        yield stop_oltsim(sim, adapter)


def _http_get(port: int, path: str, timeout: float = 5.0) -> int:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        connection.request("GET", path)
        response = connection.getresponse()
        response.read()
        return response.status
    finally:
        connection.close()


def _cycle(port: int) -> None:
    """Power every ONU off, then on (each answer bounded by the client timeout)."""
    for method in ("DELETE", "POST"):
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=5.0)
        try:
            connection.request(method, "/v1/olt/onus")
            response = connection.getresponse()
            response.read()
            assert response.status < 500, (method, response.status)
        finally:
            connection.close()


@pytest_twisted.inlineCallbacks
def test_event_readers_that_stop_reading_lose_events_not_the_simulator(tmp_path):
    """An SSE reader on a raw socket that never reads and a StreamEvents call never iterated, while power
    cycles of every ONU flood the bus: REST keeps answering within its timeout and both readers' dropped
    counters grow."""
    sim = start_oltsim(tmp_path, "--pon", "2", "--onu", "16", "--delay", "0")
    port = int(sim.rest.rsplit(":", 1)[1])
    adapter = ScriptedAdapter(sim.openolt)
    sse = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sse.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # fill up soon
    channel = grpc.insecure_channel(sim.grpc_v1)
    call = None
    try:
        yield deferToThread(adapter.bring_up, 32)
        sse.connect(("127.0.0.1", port))
        sse.sendall(b"GET /v1/events HTTP/1.1\r\nHost: oltsim\r\n\r\n")
        call = oltsim_pb2_grpc.OltsimStub(channel).StreamEvents(oltsim_pb2.EventFilter())
        for _ in range(50):
            if len(sim.top.bus.subscriptions) == 2:
                break
            yield deferLater(reactor, 0.05, lambda: None)
        assert len(sim.top.bus.subscriptions) == 2

        def storm():
            # Until both readers lost events (bounded), every request answered within the client timeout.
            seen = []
            for _ in range(200):
                _cycle(port)
                assert _http_get(port, "/v1/olt") == 200
                dropped = [sub.dropped for sub in list(sim.top.bus.subscriptions)]
                seen.append(dropped)
                if len(seen) > 3 and all(d > 0 for d in dropped) and seen[-1] != seen[-3]:
                    return seen
            raise AssertionError(f"dropped counters never grew on both readers: {seen[-3:]}")

        seen = yield deferToThread(storm)
        assert all(d > 0 for d in seen[-1]) and sum(seen[-1]) > sum(seen[-3])
        status = yield deferToThread(_http_get, port, "/v1/olt/onus")
        assert status == 200
    finally:
        if call is not None:
            call.cancel()
        channel.close()
        sse.close()
        yield stop_oltsim(sim, adapter)


def test_sigterm_during_bring_up_exits_cleanly(daemon, grpc_engine):  # noqa: F811
    """SIGTERM while ONUs are still being discovered and activated: exit code 0 within a few seconds, no
    traceback."""
    process = daemon("--pon", "2", "--onu", "32", "--delay", "50", *engine_options(grpc_engine))
    process.wait_serving()
    assert process.engine("openolt") == grpc_engine, process.log
    with ScriptedAdapter(f"127.0.0.1:{process.ports['openolt']}") as adapter:
        adapter.get_device_info()
        stream = adapter.enable_indication()
        for _ in range(3):
            disc = stream.wait_for(is_onu_disc(), "OnuDiscInd")
            adapter.activate(disc.onu_disc_ind.intf_id, serial_of(disc.onu_disc_ind.serial_number))
        process.process.send_signal(signal.SIGTERM)
        stream.wait_end(STOP_TIMEOUT)
    assert process.wait_exit() == 0, process.log
    assert "Traceback" not in process.log, process.log


def test_kill_9_then_restart_on_the_same_ports(daemon, tmp_path, monkeypatch, grpc_engine):  # noqa: F811
    """After SIGKILL a new process binds the same ports, serves REST and OpenOLT, with a new heartbeat
    signature."""
    first = daemon("--pon", "1", "--onu", "2", "--delay", "0", *engine_options(grpc_engine))
    first.wait_serving()
    with ScriptedAdapter(f"127.0.0.1:{first.ports['openolt']}") as adapter:
        adapter.bring_up(2)
        old = adapter.heartbeat()
    first.process.send_signal(signal.SIGKILL)
    assert first.wait_exit() == -signal.SIGKILL

    ports = list(first.ports.values())
    monkeypatch.setattr(test_daemon, "free_ports", lambda count: ports[:count])
    again = tmp_path / "again"
    again.mkdir()
    second = test_daemon.Daemon(again, "--pon", "1", "--onu", "2", "--delay", "0", *engine_options(grpc_engine))
    try:
        assert second.ports == first.ports
        olt = second.wait_serving()
        assert olt["InternalState"] == "initialized" and second.engine("openolt") == grpc_engine
        with ScriptedAdapter(f"127.0.0.1:{second.ports['openolt']}") as adapter:
            _, onus = adapter.bring_up(2)
            assert len(onus) == 2
            assert adapter.heartbeat() not in (0, old)
    finally:
        second.close()
