"""legacy.BBSimService servicer in memory: its handlers as the reactor's loop serves them (on_loop), run inline with a
fake context; every RPC delegates to V0Commands and refusals abort with the status of the one error table."""

import random

import grpc
import pytest
from twisted.internet.task import Clock

from oltsim._proto import bbsim_pb2, legacy_pb2, legacy_pb2_grpc
from oltsim.api.v1.usecases_v1 import V1Commands
from oltsim.api.v0.usecases_v0 import V0Commands
from oltsim.api.v0.grpc_v0 import LegacyServicer
from oltsim.serving.onloop import on_loop
from oltsim.config import load_settings
from oltsim.model.builder import build_olt
from conftest import run_now


class Aborted(Exception):
    """What the fake context raises on abort, as grpcio's does."""


class FakeContext:
    def __init__(self):
        self.code = None
        self.details = None

    def abort(self, code, details):
        self.code, self.details = code, details
        raise Aborted(code, details)


@pytest.fixture
def env():
    clock = Clock()
    olt = build_olt(load_settings({"pon": 2, "onu": 2}, None), clock, random.Random(0))
    olt.start()
    olt.enable_indication()
    clock.advance(1)
    olt.activate_onu(0, "BBSM00000001", 1)
    commands = V0Commands(olt, olt_ip="10.0.0.1")
    return olt, clock, on_loop(LegacyServicer(commands), legacy_pb2_grpc.BBSimServiceServicer), V1Commands(olt)


def call(servicer, name, request):
    return run_now(getattr(servicer, name)(request, FakeContext()))


def refused(servicer, name, request):
    context = FakeContext()
    with pytest.raises(Aborted):
        run_now(getattr(servicer, name)(request, context))
    return context.code, context.details


def state(v1, serial):
    return v1.GetONU(bbsim_pb2.ONURequest(SerialNumber=serial)).InternalState


def test_every_method_is_implemented_and_served_inline():
    """The servicer implements every RPC of the service, and each is served as a plain method run inline on the
    reactor thread (what the native engine calls without a coroutine)."""
    served = on_loop(LegacyServicer(None), legacy_pb2_grpc.BBSimServiceServicer)
    for name in (m.name for m in legacy_pb2.DESCRIPTOR.services_by_name["BBSimService"].methods):
        assert getattr(LegacyServicer, name) is not getattr(legacy_pb2_grpc.BBSimServiceServicer, name)
        assert getattr(served, name).inline[2] == name


def test_olt_and_port_status(env):
    """OLTStatus and PortStatus answer the legacy records."""
    _, _, servicer, _ = env
    status = call(servicer, "OLTStatus", legacy_pb2.Empty())
    assert status.olt.olt_ip == "10.0.0.1"
    assert [(p.port_type, p.pon_port_active_onus) for p in status.ports] == [("nni", 0), ("pon", 1), ("pon", 0)]
    [port] = call(servicer, "PortStatus", legacy_pb2.PortInfo(port_type="pon", port_id=1)).ports
    assert (port.port_id, port.pon_port_max_onus) == (1, 2)


def test_onu_status_and_flows(env):
    """ONUStatus filters (PON 0 by an onu holding only pon_port_id 0); GetFlows with no filter."""
    _, _, servicer, _ = env
    onus = call(servicer, "ONUStatus", legacy_pb2.ONURequest(onu=legacy_pb2.ONUInfo(pon_port_id=0)))
    assert [o.onu_serial for o in onus.onus] == ["BBSM00000001", "BBSM00000002"]
    onus = call(servicer, "ONUStatus", legacy_pb2.ONURequest(onu=legacy_pb2.ONUInfo(onu_state="enabled")))
    assert [o.onu_serial for o in onus.onus] == ["BBSM00000001"]
    assert len(call(servicer, "GetFlows", legacy_pb2.ONUInfo()).flows) == 0


def test_activate_deactivate_batch(env):
    """ONUDeactivate and ONUActivate with onus_batch change state, seen through v1."""
    _, _, servicer, v1 = env
    batch = legacy_pb2.ONURequest(onus_batch=legacy_pb2.ONUs(onus=[legacy_pb2.ONUInfo(onu_serial="BBSM00000001")]))
    assert call(servicer, "ONUDeactivate", batch).status_msg == "Shut down 1 ONU: BBSM00000001"
    assert state(v1, "BBSM00000001") == "disabled"
    assert call(servicer, "ONUActivate", batch).status_msg == "Powered on 1 ONU: BBSM00000001"
    assert state(v1, "BBSM00000001") == "enabled"


def test_alarms_and_device_action(env):
    """GenerateONUAlarm, GenerateOLTAlarm and PerformDeviceAction answer status_msg."""
    olt, clock, servicer, v1 = env
    reply = call(servicer, "GenerateONUAlarm", legacy_pb2.ONUAlarmRequest(
        onu_serial="BBSM00000001", alarm_type="lossofploam", status="on"))
    assert reply.status_msg == "ONU BBSM00000001: lossofploam alarm (ONU_ALARM_LOAMI) raised."
    reply = call(servicer, "GenerateOLTAlarm", legacy_pb2.OLTAlarmRequest(port_type="nni", port_id=0, status="on"))
    assert reply.status_msg == "LOS raised on NNI 0."
    assert call(servicer, "PortStatus", legacy_pb2.PortInfo(port_type="nni")).ports[0].alarm_state == "on"
    call(servicer, "PerformDeviceAction", legacy_pb2.DeviceAction(device_type="onu", serial_number="BBSM00000001",
                                                                   action="soft-reboot"))
    assert state(v1, "BBSM00000001") == "disabled"
    clock.advance(10)
    assert state(v1, "BBSM00000001") == "enabled"


@pytest.mark.parametrize("name, request_msg, code", [
    ("PortStatus", legacy_pb2.PortInfo(port_type="nni", port_id=4), grpc.StatusCode.NOT_FOUND),
    ("PortStatus", legacy_pb2.PortInfo(port_type="uni"), grpc.StatusCode.INVALID_ARGUMENT),
    ("ONUStatus", legacy_pb2.ONURequest(onu=legacy_pb2.ONUInfo(onu_serial="BBSM99999999")),
     grpc.StatusCode.NOT_FOUND),
    ("ONUStatus", legacy_pb2.ONURequest(onu=legacy_pb2.ONUInfo(pon_port_id=8)), grpc.StatusCode.NOT_FOUND),
    ("ONUStatus", legacy_pb2.ONURequest(onu=legacy_pb2.ONUInfo(pon_port_id=0, onu_id=9)),
     grpc.StatusCode.NOT_FOUND),
    ("ONUActivate", legacy_pb2.ONURequest(), grpc.StatusCode.INVALID_ARGUMENT),
    ("ONUActivate", legacy_pb2.ONURequest(onu=legacy_pb2.ONUInfo(onu_serial="BBSM00000001")),
     grpc.StatusCode.FAILED_PRECONDITION),
    ("ONUDeactivate", legacy_pb2.ONURequest(onus_batch=legacy_pb2.ONUs(onus=[
        legacy_pb2.ONUInfo(onu_serial="BBSM00000001"), legacy_pb2.ONUInfo(onu_serial="nope")])),
     grpc.StatusCode.NOT_FOUND),
    ("GenerateONUAlarm", legacy_pb2.ONUAlarmRequest(onu_serial="BBSM00000001", alarm_type="x", status="on"),
     grpc.StatusCode.INVALID_ARGUMENT),
    ("GenerateONUAlarm", legacy_pb2.ONUAlarmRequest(onu_serial="BBSM00000001", alarm_type="signaldegrade",
                                                    status="perhaps"), grpc.StatusCode.INVALID_ARGUMENT),
    ("GenerateONUAlarm", legacy_pb2.ONUAlarmRequest(onu_serial="X", alarm_type="signaldegrade", status="on"),
     grpc.StatusCode.NOT_FOUND),
    ("GenerateOLTAlarm", legacy_pb2.OLTAlarmRequest(port_type="pon", port_id=3, status="on"),
     grpc.StatusCode.NOT_FOUND),
    ("GenerateOLTAlarm", legacy_pb2.OLTAlarmRequest(port_type="pon", port_id=0, status="x"),
     grpc.StatusCode.INVALID_ARGUMENT),
    ("PerformDeviceAction", legacy_pb2.DeviceAction(device_type="olt", action="dance"),
     grpc.StatusCode.INVALID_ARGUMENT),
    ("PerformDeviceAction", legacy_pb2.DeviceAction(device_type="onu", serial_number="X", action="reboot"),
     grpc.StatusCode.NOT_FOUND),
    ("GetFlows", legacy_pb2.ONUInfo(onu_serial="BBSM99999999"), grpc.StatusCode.NOT_FOUND),
])
def test_refusals_map_to_grpc_status(env, name, request_msg, code):
    """Domain errors abort with the gRPC status of the one error table and a message for people."""
    got, details = refused(env[2], name, request_msg)
    assert got == code
    assert details and "Traceback" not in details


def test_unexpected_error_is_internal(env):
    """A bug in a command is INTERNAL with a request id, not a crash or a leaked message."""
    olt, _, _, _ = env
    commands = V0Commands(olt, olt_ip="10.0.0.1")
    servicer = on_loop(LegacyServicer(commands), legacy_pb2_grpc.BBSimServiceServicer)

    def broken(request):
        raise KeyError("secret")
    commands.OLTStatus = broken
    code, details = refused(servicer, "OLTStatus", legacy_pb2.Empty())
    assert code == grpc.StatusCode.INTERNAL and "request id" in details and "secret" not in details
