"""A serial that is no ONU of the OLT, on the v1 control API: every call that takes a serial answers NOT_FOUND (REST
404, grpc-gateway's body) naming the nearest serial the OLT has, as the capture and event filters do, the same text
on REST and gRPC; with no serial near, it says where the ONUs are listed. Nothing changes on the OLT."""

from __future__ import annotations

import grpc
import pytest

from conftest import Sim, grpc_error
from oltsim._proto import bbsim_pb2

KNOWN = "BBSM00000001"
#: one digit too few (the same number, zeros aside) and one digit changed (the nearest serial)
MISSPELT = ("BBSM0000001", "BBSM00000091")
HINT = {"BBSM0000001": KNOWN, "BBSM00000091": KNOWN}

# (REST method and path, gRPC method and request) for each call that takes an ONU serial
CALLS = {
    "get": (("GET", "/v1/olt/onus/{sn}"), ("GetONU", lambda sn: bbsim_pb2.ONURequest(SerialNumber=sn))),
    "shutdown": (("DELETE", "/v1/olt/onus/{sn}"), ("ShutdownONU", lambda sn: bbsim_pb2.ONURequest(SerialNumber=sn))),
    "poweron": (("POST", "/v1/olt/onus/{sn}"), ("PoweronONU", lambda sn: bbsim_pb2.ONURequest(SerialNumber=sn))),
    "flows": (("GET", "/v1/olt/onus/{sn}/flows"), ("GetFlows", lambda sn: bbsim_pb2.ONURequest(SerialNumber=sn))),
    "schedulers": (("GET", "/v1/olt/onus/{sn}/trafficschedulers"),
                   ("GetOnuTrafficSchedulers", lambda sn: bbsim_pb2.ONURequest(SerialNumber=sn))),
    "eapol": (("POST", "/v1/olt/onus/{sn}/eapol"),
              ("RestartEapol", lambda sn: bbsim_pb2.UNIRequest(OnuSerialNumber=sn))),
    "alarm": (("POST", "/v1/olt/onus/{sn}/alarms/DYING_GASP/on"),
              ("SetOnuAlarmIndication", lambda sn: bbsim_pb2.ONUAlarmRequest(SerialNumber=sn, AlarmType="DYING_GASP",
                                                                             Status="on"))),
    "mds": (None, ("InvalidateMds", lambda sn: bbsim_pb2.ONURequest(SerialNumber=sn))),
    "unis": (None, ("GetOnuUnis", lambda sn: bbsim_pb2.ONURequest(SerialNumber=sn))),
}


def up() -> Sim:
    sim = Sim()
    sim.bring_up()
    return sim


@pytest.mark.parametrize("serial", MISSPELT)
@pytest.mark.parametrize("call", [name for name, (rest, _) in CALLS.items() if rest])
def test_rest_404_names_the_nearest_serial(call, serial):
    """REST answers 404 with grpc-gateway's body whose message names the nearest known serial, and does nothing."""
    sim = up()
    generation = sim.olt.generation
    method, path = CALLS[call][0]
    reply = sim.rest.call(method, path.format(sn=serial))
    assert reply.code == 404, reply.body
    assert set(reply.json) == {"error", "code", "message"}
    assert reply.json["code"] == grpc.StatusCode.NOT_FOUND.value[0]
    assert reply.json["message"] == f"ONU {serial} not found on this OLT; did you mean {HINT[serial]}?"
    assert sim.events == [] and sim.olt.generation == generation


@pytest.mark.parametrize("serial", MISSPELT)
@pytest.mark.parametrize("call", list(CALLS))
def test_grpc_not_found_names_the_nearest_serial(call, serial):
    """bbsim.BBSim answers NOT_FOUND with the same message, which oltsimctl prints after the status."""
    sim = up()
    method, request = CALLS[call][1]
    error = grpc_error(sim.bbsim, method, request(serial))
    assert error.code is grpc.StatusCode.NOT_FOUND
    assert error.details == f"ONU {serial} not found on this OLT; did you mean {HINT[serial]}?"


def test_a_serial_near_none_says_where_the_onus_are_listed():
    """A serial like none of the OLT's gets no guess, but the command that lists the ONUs."""
    sim = up()
    reply = sim.rest.call("GET", "/v1/olt/onus/XYZW12345678")
    assert reply.code == 404
    assert reply.json["message"] == "ONU XYZW12345678 not found on this OLT (oltsimctl onu list names its ONUs)"


def test_a_known_serial_in_another_case_is_still_that_onu():
    """The check does not refuse a serial the OLT has, whatever its case."""
    sim = up()
    reply = sim.rest.call("GET", f"/v1/olt/onus/{KNOWN.lower()}")
    assert reply.code == 200 and reply.json["SerialNumber"] == KNOWN
