"""The alarm read of the control API in memory: REST GET /v1/olt/alarms and gRPC oltsim.v1.Oltsim/GetAlarms give
the same shape from one translation (docs/alarms.md)."""

import grpc
import pytest

from conftest import Sim, grpc_call, grpc_error
from oltsim._proto import bbsim_pb2, oltsim_pb2, oltsim_pb2_grpc
from oltsim.api import translate
from oltsim.api.v1.grpc_v1 import OltsimServicer
from oltsim.serving.onloop import on_loop

SN = "BBSM00000001"


def raised_sim():
    """A 2x2 OLT brought up, then at t=10.2 an NNI LOS and an ONU signal degrade, at t=12.2 a PON 1 LOS raised
    and cleared."""
    sim = Sim()
    sim.bring_up()
    sim.clock.advance(10)
    sim.rest.call("POST", "/v1/olt/ports/nni/0/alarms/los/on")
    sim.rest.call("POST", f"/v1/olt/onus/{SN}/alarms/ONU_SIGNAL_DEGRADE/on")
    sim.clock.advance(2)
    sim.rest.call("POST", "/v1/olt/ports/pon/1/alarms/los/on")
    sim.rest.call("POST", "/v1/olt/ports/pon/1/alarms/los/off")
    return sim


def test_rest_alarms_shape():
    """GET /v1/olt/alarms: `active` with kind, type, onu_serial, pon_id, port_id, since; `history` the same with
    status and at in place of since, newest last."""
    reply = raised_sim().rest.call("GET", "/v1/olt/alarms")
    assert reply.code == 200
    assert reply.json == {
        "active": [
            {"kind": "nni", "type": "OLT_NNI_LOS", "onu_serial": "", "pon_id": -1, "port_id": 0, "since": 10.2},
            {"kind": "onu", "type": "ONU_SIGNAL_DEGRADE", "onu_serial": SN, "pon_id": 0, "port_id": -1,
             "since": 10.2}],
        "history": [
            {"kind": "nni", "type": "OLT_NNI_LOS", "onu_serial": "", "pon_id": -1, "port_id": 0, "status": "on",
             "at": 10.2},
            {"kind": "onu", "type": "ONU_SIGNAL_DEGRADE", "onu_serial": SN, "pon_id": 0, "port_id": -1,
             "status": "on", "at": 10.2},
            {"kind": "pon", "type": "OLT_PON_LOS", "onu_serial": "", "pon_id": 1, "port_id": 1, "status": "on",
             "at": 12.2},
            {"kind": "pon", "type": "OLT_PON_LOS", "onu_serial": "", "pon_id": 1, "port_id": 1, "status": "off",
             "at": 12.2}]}


def test_rest_alarms_filter_by_onu_in_either_case():
    """`onu_serial` keeps one ONU's alarms, its hex digits in either case."""
    body = raised_sim().rest.call("GET", "/v1/olt/alarms?onu_serial=bbsm00000001").json
    assert [a["type"] for a in body["active"]] == ["ONU_SIGNAL_DEGRADE"]
    assert [h["type"] for h in body["history"]] == ["ONU_SIGNAL_DEGRADE"]


@pytest.mark.parametrize("query,code", [("?onu_serial=BBSM00009999", 404), ("?serial=BBSM00000001", 400)])
def test_rest_alarms_refusals(query, code):
    """An unknown ONU is 404, an unknown parameter 400, both with the JSON error body."""
    reply = Sim().rest.call("GET", "/v1/olt/alarms" + query)
    assert reply.code == code
    assert set(reply.json) == {"error", "code", "message"}


def test_rest_alarms_follow_the_model_between_reads():
    """A read after a change shows it (nothing stale is cached)."""
    sim = Sim()
    assert sim.rest.call("GET", "/v1/olt/alarms").json == {"active": [], "history": []}
    sim.rest.call("POST", "/v1/olt/ports/nni/0/alarms/los/on")
    assert [a["type"] for a in sim.rest.call("GET", "/v1/olt/alarms").json["active"]] == ["OLT_NNI_LOS"]


def test_olt_oper_state_stays_bbsims():
    """GET /v1/olt keeps BBSim's OperState under LOS (docs/alarms.md): the alarm is in the alarm read instead."""
    sim = raised_sim()
    assert sim.rest.call("GET", "/v1/olt").json["NNIPorts"] == [{"ID": 0, "OperState": "up"}]


def oltsim_servicer(sim):
    return on_loop(OltsimServicer(commands=sim.commands), oltsim_pb2_grpc.OltsimServicer)


def test_grpc_get_alarms_matches_rest():
    """GetAlarms answers the message REST renders: the same JSON through the one translation."""
    sim = raised_sim()
    answer = grpc_call(oltsim_servicer(sim), "GetAlarms", oltsim_pb2.AlarmFilter())
    assert translate.to_json_dict(answer) == sim.rest.call("GET", "/v1/olt/alarms").json
    one = grpc_call(oltsim_servicer(sim), "GetAlarms", oltsim_pb2.AlarmFilter(onu_serial="bbsm00000001"))
    assert [a.type for a in one.active] == ["ONU_SIGNAL_DEGRADE"]


def test_grpc_get_alarms_unknown_onu_is_not_found():
    """GetAlarms for a serial that is no ONU of the OLT is NOT_FOUND."""
    error = grpc_error(oltsim_servicer(Sim()), "GetAlarms", oltsim_pb2.AlarmFilter(onu_serial="BBSM00009999"))
    assert error.code is grpc.StatusCode.NOT_FOUND


def test_power_cycle_through_the_api():
    """ShutdownONU leaves DYING_GASP and ONU_ALARM_LOS active; PoweronONU clears both."""
    sim = Sim()
    sim.bring_up()
    grpc_call(sim.bbsim, "ShutdownONU", bbsim_pb2.ONURequest(SerialNumber=SN))
    body = sim.rest.call("GET", f"/v1/olt/alarms?onu_serial={SN}").json
    assert sorted(a["type"] for a in body["active"]) == ["DYING_GASP", "ONU_ALARM_LOS"]
    grpc_call(sim.bbsim, "PoweronONU", bbsim_pb2.ONURequest(SerialNumber=SN))
    assert sim.rest.call("GET", "/v1/olt/alarms").json["active"] == []
