"""Legacy API v0 over real sockets on 127.0.0.1: gRPC legacy.BBSimService through a grpcio channel and REST
/v0 through treq, both over one V0Commands, as oltsim/tap.py wires them."""

import json
import random

import grpc
import pytest_twisted
from twisted.internet import reactor
from twisted.internet.task import Clock
from twisted.internet.threads import deferToThread
from twisted.web.client import Agent, HTTPConnectionPool
from twisted.web.server import Site
from treq.client import HTTPClient

from oltsim._proto import legacy_pb2, legacy_pb2_grpc
from oltsim.api.v0.usecases_v0 import V0Commands
from oltsim.api.v0.grpc_v0 import LegacyServicer
from oltsim.api.v0.rest_v0 import V0Rest
from oltsim.serving.onloop import on_loop
from oltsim.config import load_settings
from oltsim.serving.grpcserver import GrpcServerService
from oltsim.model.builder import build_olt


def make_commands():
    clock = Clock()
    olt = build_olt(load_settings({"pon": 2, "onu": 2}, None), clock, random.Random(0))
    olt.start()
    olt.enable_indication()
    clock.advance(1)
    olt.activate_onu(0, "BBSM00000001", 1)
    olt.activate_onu(1, "BBSM00000101", 1)
    return olt, V0Commands(olt, olt_ip="127.0.0.1")


def grpc_calls(port):
    """On a worker thread: a few legacy RPCs through a real channel; returns what they answered."""
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        stub = legacy_pb2_grpc.BBSimServiceStub(channel)
        status = stub.OLTStatus(legacy_pb2.Empty(), timeout=5)
        off = stub.ONUDeactivate(legacy_pb2.ONURequest(onu=legacy_pb2.ONUInfo(pon_port_id=1, onu_id=1)), timeout=5)
        onus = stub.ONUStatus(legacy_pb2.ONURequest(onu=legacy_pb2.ONUInfo(onu_state="disabled")), timeout=5)
        try:
            stub.ONUStatus(legacy_pb2.ONURequest(onu=legacy_pb2.ONUInfo(onu_serial="BBSM99999999")), timeout=5)
            missing = None
        except grpc.RpcError as exc:
            missing = (exc.code(), exc.details())
        try:
            stub.GenerateONUAlarm(legacy_pb2.ONUAlarmRequest(onu_serial="BBSM00000001", alarm_type="dying",
                                                             status="on"), timeout=5)
            bad = None
        except grpc.RpcError as exc:
            bad = exc.code()
    return status, off, onus, missing, bad


@pytest_twisted.inlineCallbacks
def test_grpc_legacy_service_on_a_real_channel():
    """Legacy RPCs run through a real server: status, a per-(PON, ONU id) deactivation, NOT_FOUND, INVALID_ARGUMENT."""
    olt, commands = make_commands()
    servicer = on_loop(LegacyServicer(commands), legacy_pb2_grpc.BBSimServiceServicer)
    service = GrpcServerService("grpc-v0", "tcp:0:interface=127.0.0.1",
                                lambda server: legacy_pb2_grpc.add_BBSimServiceServicer_to_server(servicer, server),
                                grace=0.5, engine="native")
    service.startService()
    try:
        status, off, onus, missing, bad = yield deferToThread(grpc_calls, service.port)
    finally:
        yield service.stopService()
    assert [p.pon_port_active_onus for p in status.ports if p.port_type == "pon"] == [1, 1]
    assert off.status_msg == "Shut down 1 ONU: BBSM00000101"
    assert [o.onu_serial for o in onus.onus] == ["BBSM00000101"]
    assert missing == (grpc.StatusCode.NOT_FOUND, "ONU BBSM99999999 not found")
    assert bad == grpc.StatusCode.INVALID_ARGUMENT
    assert olt.onu_by_serial("BBSM00000101").state == "disabled"


@pytest_twisted.inlineCallbacks
def test_rest_v0_on_a_real_port():
    """REST /v0 on a real listening port: deprecation headers, a bulk body, a malformed body, an unknown ONU."""
    olt, commands = make_commands()
    port = reactor.listenTCP(0, Site(V0Rest(commands).resource()), interface="127.0.0.1")
    base = f"http://127.0.0.1:{port.getHost().port}"
    # Not persistent: no connection outlives the test.
    treq = HTTPClient(Agent(reactor, pool=HTTPConnectionPool(reactor, persistent=False)))
    try:
        resp = yield treq.get(base + "/v0/olt/onus/BBSM00000001")
        body = yield resp.json()
        assert resp.code == 200 and body["onus"][0]["onu_state"] == "enabled"
        assert resp.headers.getRawHeaders("Deprecation") == ["true"]
        assert resp.headers.getRawHeaders("Link") == ['</v1/olt/onus/BBSM00000001>; rel="successor-version"']

        resp = yield treq.delete(base + "/v0/olt/onus",
                                 data=json.dumps({"onus": [{"onu_serial": "BBSM00000001"},
                                                           {"pon_port_id": 1, "onu_id": 1}]}).encode())
        body = yield resp.json()
        assert (resp.code, body) == (200, {"status_msg": "Shut down 2 ONUs: BBSM00000001, BBSM00000101"})

        resp = yield treq.post(base + "/v0/olt/onus", data=b'{"onus": [{"onu_serial": ')
        body = yield resp.json()
        assert (resp.code, body["code"]) == (400, 3)

        resp = yield treq.post(base + "/v0/olt/ports/0/onus/BBSM00000009")
        body = yield resp.json()
        assert (resp.code, body["code"]) == (404, 5)
    finally:
        yield port.stopListening()
    assert olt.onu_by_serial("BBSM00000001").state == "disabled"
