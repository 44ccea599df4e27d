"""Issue 13's attack run, replayed against the real daemon over loopback sockets: each test is one finding, bounded
in time and count, and checks what a user of a shared lab relies on (the daemon stays up and keeps answering)."""
from __future__ import annotations

import threading
import time

import grpc
import pytest
from voltha_protos import openolt_pb2, openolt_pb2_grpc

from engines import engine_options, grpc_engine  # noqa: F401 - the fixture
from oltsim._proto import bbsim_pb2, bbsim_pb2_grpc
from test_daemon import daemon  # noqa: F401 - the fixture

RESTARTS = 300
HAMMERS = 4


def _hammer(port: int, stop: threading.Event, calls: list) -> None:
    """OpenOLT calls in a loop until `stop`, whatever they answer (the server comes and goes)."""
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        stub = openolt_pb2_grpc.OpenoltStub(channel)
        while not stop.is_set():
            try:
                stub.HeartbeatCheck(openolt_pb2.Empty(), timeout=1)
            except grpc.RpcError:
                pass
            calls.append(1)


def test_back_to_back_grpc_restarts_under_load_keep_the_daemon_up(daemon, grpc_engine):
    """RestartgRPCServer with no delay, 300 times back to back while other clients call the OpenOLT port (the window
    that crashed the daemon with SIGSEGV: a restart stopping the server its previous restart was still starting):
    every restart is answered, the daemon stays up, and OpenOLT serves at the end."""
    process = daemon(*engine_options(grpc_engine))
    process.wait_serving()
    openolt = process.ports["openolt"]
    stop, calls = threading.Event(), []
    hammers = [threading.Thread(target=_hammer, args=(openolt, stop, calls), daemon=True) for _ in range(HAMMERS)]
    for thread in hammers:
        thread.start()
    answered = 0
    try:
        with grpc.insecure_channel(f"127.0.0.1:{process.ports['grpc-v1']}") as channel:
            stub = bbsim_pb2_grpc.BBSimStub(channel)
            for _ in range(RESTARTS):
                stub.RestartgRPCServer(bbsim_pb2.Timeout(delay=0), timeout=10)
                answered += 1
    except grpc.RpcError as error:
        pytest.fail(f"restart {answered + 1} failed with {error.code()} (daemon exit status "
                    f"{process.process.poll()}):\n{process.log[-3000:]}")
    finally:
        stop.set()
        for thread in hammers:
            thread.join(10)
    assert process.process.poll() is None, process.log[-3000:]
    assert len(calls) > RESTARTS  # the OpenOLT port was under load during the restarts
    with grpc.insecure_channel(f"127.0.0.1:{openolt}") as channel:
        grpc.channel_ready_future(channel).result(timeout=10)
        openolt_pb2_grpc.OpenoltStub(channel).HeartbeatCheck(openolt_pb2.Empty(), timeout=5)
    assert "critical" not in process.log.lower()
