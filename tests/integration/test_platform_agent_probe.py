"""oltsim-platform agent-update: the OpenOLT probe reads identity over a real gRPC channel on 127.0.0.1."""
from concurrent import futures

import grpc
import pytest_twisted
from voltha_protos import openolt_pb2, openolt_pb2_grpc

from test_platform_app_update_live import make_ca

from oltsim.platform.agentupdate import Identity, OpenoltProbe


class AgentStub(openolt_pb2_grpc.OpenoltServicer):
    """HeartbeatCheck and GetDeviceInfo as an agent answers them."""

    def HeartbeatCheck(self, request, context):
        return openolt_pb2.Heartbeat(heartbeat_signature=1700000042)

    def GetDeviceInfo(self, request, context):
        return openolt_pb2.DeviceInfo(device_serial_number="BBSIM_OLT_3", device_id="0a:0a:0a:0a:0a:03")


@pytest_twisted.inlineCallbacks
def test_probe_reads_serial_device_id_and_signature():
    """The probe calls HeartbeatCheck and GetDeviceInfo off the reactor thread and returns the identity."""
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    openolt_pb2_grpc.add_OpenoltServicer_to_server(AgentStub(), server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        probe = OpenoltProbe(f"127.0.0.1:{port}", timeout=5.0)
        identity = yield probe.identity()
        signature = yield probe.signature()
    finally:
        server.stop(0).wait(5)
    assert identity == Identity("BBSIM_OLT_3", "0a:0a:0a:0a:0a:03", 1700000042)
    assert signature == 1700000042


@pytest_twisted.inlineCallbacks
def test_probe_fails_fast_when_nothing_listens():
    """With no agent at the address the probe fails within its timeout instead of hanging."""
    probe = OpenoltProbe("127.0.0.1:1", timeout=1.0)
    try:
        yield probe.signature()
    except grpc.RpcError as exc:
        assert exc.code() in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED)
    else:
        raise AssertionError("the probe answered with nothing listening")


@pytest_twisted.inlineCallbacks
def test_probe_speaks_tls_with_a_ca(tmp_path):
    """With --ca the probe verifies a TLS OpenOLT listener's certificate and reads the identity through it."""
    ca, key, cert = make_ca(tmp_path, "agent")
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    openolt_pb2_grpc.add_OpenoltServicer_to_server(AgentStub(), server)
    credentials = grpc.ssl_server_credentials([(key.read_bytes(), cert.read_bytes())])
    port = server.add_secure_port("127.0.0.1:0", credentials)
    server.start()
    try:
        identity = yield OpenoltProbe(f"127.0.0.1:{port}", timeout=5.0, ca_file=str(ca)).identity()
    finally:
        server.stop(0).wait(5)
    assert identity.serial == "BBSIM_OLT_3"
