"""REST /v0 in memory (treq StubTreq on the real Klein resource): every route of service document 4.2,
its filters, headers and bad input; state changes are checked through v1."""

import json
import os
import random

import pytest
from treq.testing import StubTreq
from twisted.internet.task import Clock
from voltha_protos import openolt_pb2, tech_profile_pb2

from oltsim._proto import bbsim_pb2
from oltsim.api import translate
from oltsim.api.v1.usecases_v1 import V1Commands
from oltsim.api.v0.usecases_v0 import ONU_SOFT_REBOOT_DELAY, V0Commands
from oltsim.api.v0.mapping import MAPPING, markdown_table
from oltsim.api.v0.rest_v0 import ROUTES, V0Rest
from oltsim.config import load_settings
from oltsim.model import events
from oltsim.model.builder import build_olt

GOLDEN = os.path.join(os.path.dirname(__file__), os.pardir, "golden", "v0")

# The 20 bindings of BBSim's legacy proto (service document 4.2), as (method, path).
SPEC_ROUTES = {
    ("GET", "/v0/olt"), ("GET", "/v0/olt/status"), ("GET", "/v0/olt/flows"),
    ("GET", "/v0/olt/onu/{onu_serial}/flows"), ("GET", "/v0/olt/onus"), ("DELETE", "/v0/olt/onus"),
    ("POST", "/v0/olt/onus"), ("GET", "/v0/olt/onus/{onu.onu_serial}"), ("DELETE", "/v0/olt/onus/{onu.onu_serial}"),
    ("POST", "/v0/olt/onus/{onu_serial}/alarms/{alarm_type}/{status}"),
    ("GET", "/v0/olt/ports/{onu.pon_port_id}/onus"), ("DELETE", "/v0/olt/ports/{onu.pon_port_id}/onus"),
    ("POST", "/v0/olt/ports/{onu.pon_port_id}/onus"), ("GET", "/v0/olt/ports/{onu.pon_port_id}/onus/{onu.onu_id}"),
    ("DELETE", "/v0/olt/ports/{onu.pon_port_id}/onus/{onu.onu_id}"),
    ("POST", "/v0/olt/ports/{onu.pon_port_id}/onus/{onu.onu_serial}"),
    ("POST", "/v0/olt/ports/{port_type}/{port_id}/alarms/los/{status}"),
    ("GET", "/v0/olt/ports/{port_type}/{port_id}/status"),
    ("PATCH", "/v0/olt/{device_type}/{serial_number}/action/{action}"), ("PATCH", "/v0/{device_type}/action/{action}"),
}


class Api:
    """A v0 REST client over StubTreq; `call` returns (status, headers, JSON body)."""

    def __init__(self):
        self.clock = Clock()
        self.olt = build_olt(load_settings({"pon": 2, "onu": 2}, None), self.clock, random.Random(0))
        self.olt.start()
        self.olt.enable_indication()
        self.clock.advance(1)
        self.commands = V0Commands(self.olt, olt_ip="127.0.0.1")
        self.v1 = V1Commands(self.olt, olt_ip="127.0.0.1")
        self.stub = StubTreq(V0Rest(self.commands).resource())

    def call(self, method, path, body=None):
        out = []
        d = self.stub.request(method, "http://oltsim" + path, data=body)
        d.addCallback(lambda resp: resp.content().addCallback(lambda content: (resp, content)))
        d.addBoth(out.append)
        self.stub.flush()
        result = out[0]
        if not isinstance(result, tuple):
            result.raiseException()
        resp, content = result
        headers = {k.decode().lower(): v[-1].decode() for k, v in resp.headers.getAllRawHeaders()}
        return resp.code, headers, json.loads(content) if content else None

    def ok(self, method, path, body=None):
        code, _, data = self.call(method, path, body)
        assert code == 200, data
        return data

    def state(self, serial):
        return self.v1.GetONU(bbsim_pb2.ONURequest(SerialNumber=serial)).InternalState

    def activate(self, *which):
        for pon, serial, onu_id in which:
            self.olt.activate_onu(pon, serial, onu_id)

    def activate_all(self):
        self.activate((0, "BBSM00000001", 1), (0, "BBSM00000002", 2), (1, "BBSM00000101", 1),
                      (1, "BBSM00000102", 2))

    def add_flow(self, pon, onu_id, flow_id, gem, flow_type="upstream"):
        msg = openolt_pb2.Flow(access_intf_id=pon, onu_id=onu_id, uni_id=0, flow_id=flow_id, flow_type=flow_type,
                               alloc_id=1023 + onu_id, gemport_id=gem, port_no=256 * onu_id, priority=1000,
                               cookie=flow_id, classifier=openolt_pb2.Classifier(o_vid=900, eth_type=0x888E),
                               action=openolt_pb2.Action())
        self.olt.flow_add(translate.flow_from_pb(msg))

    def add_scheds(self, pon, onu_id, uni_id, port_no):
        self.olt.set_traffic_schedulers(pon, onu_id, tech_profile_pb2.TrafficSchedulers(
            intf_id=pon, onu_id=onu_id, uni_id=uni_id, port_no=port_no,
            traffic_scheds=[tech_profile_pb2.TrafficScheduler(
                direction=tech_profile_pb2.UPSTREAM, alloc_id=1023 + onu_id, tech_profile_id=64,
                scheduler=tech_profile_pb2.SchedulerConfig(additional_bw=tech_profile_pb2.AdditionalBW_BestEffort,
                                                           sched_policy=tech_profile_pb2.Hybrid),
                traffic_shaping_info=tech_profile_pb2.TrafficShapingInfo(cir=600, cbs=30, pir=32000, pbs=30))]))


@pytest.fixture
def api():
    return Api()


def serials(data):
    return [o["onu_serial"] for o in data["onus"]]


def golden(name):
    with open(os.path.join(GOLDEN, name)) as f:
        return json.load(f)


# ---- the route table -----------------------------------------------------------------------------

def test_every_spec_route_is_served_and_mapped():
    """The routes are exactly the 20 bindings of 4.2, and every one appears in the v0 -> v1 mapping."""
    assert {(r.method, r.path) for r in ROUTES} == SPEC_ROUTES
    assert {(m, p) for m, p, *_ in MAPPING} == SPEC_ROUTES
    assert len(MAPPING) == len(SPEC_ROUTES)
    for method, path, rpc, *_ in MAPPING:
        assert f"| {method} {path} | {rpc} |" in markdown_table()


# ---- reads ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("path", ["/v0/olt", "/v0/olt/status"])
def test_olt_status_golden(api, path):
    """GET /v0/olt and /v0/olt/status: the legacy OLT record with every field, as pinned."""
    api.activate((0, "BBSM00000001", 1))
    code, headers, data = api.call("GET", path)
    assert code == 200
    assert headers["content-type"] == "application/json"
    assert headers["deprecation"] == "true"
    assert headers["link"] == f'<{path.replace("/v0", "/v1")}>; rel="successor-version"'
    assert data == golden("olt_status.json")


def test_onus_golden(api):
    """GET /v0/olt/onus: every ONU with every field (gemports, tconts) as pinned."""
    api.activate((0, "BBSM00000001", 1))
    api.add_flow(0, 1, 1, 1024)
    api.add_scheds(0, 1, 0, 256)
    assert api.ok("GET", "/v0/olt/onus") == golden("onus.json")


def test_onu_by_serial_golden(api):
    """GET /v0/olt/onus/{serial}: a list with the one ONU, as pinned."""
    assert api.ok("GET", "/v0/olt/onus/BBSM00000102") == golden("onu_BBSM00000102.json")


@pytest.mark.parametrize("query, expected", [
    ("", ["BBSM00000001", "BBSM00000002", "BBSM00000101", "BBSM00000102"]),
    ("?onu.pon_port_id=0", ["BBSM00000001", "BBSM00000002"]),
    ("?onu.onu_id=1", ["BBSM00000001", "BBSM00000101"]),
    ("?onu.pon_port_id=1&onu.onu_id=2", ["BBSM00000102"]),
    ("?onu.onu_serial=BBSM00000101", ["BBSM00000101"]),
    ("?onu.oper_state=up", ["BBSM00000001", "BBSM00000002", "BBSM00000101", "BBSM00000102"]),
    ("?onu.oper_state=down", []),
    ("?onu.onu_state=enabled", ["BBSM00000001"]),
    ("?onu.onu_state=discovered&onu.pon_port_id=1", ["BBSM00000101", "BBSM00000102"]),
    ("?onu.gemports=1024", ["BBSM00000001"]),
    ("?onu.gemports=1024&onu.gemports=1025", ["BBSM00000001"]),
    ("?onu.gemports=1026", []),
    ("?onu.tconts.uni_id=0", ["BBSM00000001"]),
    ("?onu.tconts.port_no=256", ["BBSM00000001"]),
    ("?onu.tconts.port_no=256&onu.tconts.uni_id=1", []),
])
def test_get_onus_filters(api, query, expected):
    """GET /v0/olt/onus applies every filter of set G (AND)."""
    api.activate((0, "BBSM00000001", 1))
    api.add_flow(0, 1, 1, 1024)
    api.add_flow(0, 1, 2, 1025, "downstream")
    api.add_scheds(0, 1, 0, 256)
    assert serials(api.ok("GET", "/v0/olt/onus" + query)) == expected


@pytest.mark.parametrize("path, expected", [
    ("/v0/olt/onus/BBSM00000002", ["BBSM00000002"]),
    ("/v0/olt/onus/BBSM00000002?onu.oper_state=up", ["BBSM00000002"]),
    ("/v0/olt/onus/BBSM00000002?onu.onu_state=enabled", []),
    ("/v0/olt/onus/BBSM00000002?onu.pon_port_id=0&onu.onu_id=2", ["BBSM00000002"]),
    ("/v0/olt/ports/0/onus", ["BBSM00000001", "BBSM00000002"]),
    ("/v0/olt/ports/1/onus", ["BBSM00000101", "BBSM00000102"]),
    ("/v0/olt/ports/1/onus?onu.onu_id=2", ["BBSM00000102"]),
    ("/v0/olt/ports/1/onus?onu.onu_state=enabled", ["BBSM00000101"]),
    ("/v0/olt/ports/1/onus?onu.gemports=1030", ["BBSM00000101"]),
    ("/v0/olt/ports/1/onus?onu.tconts.uni_id=2&onu.tconts.port_no=258", ["BBSM00000101"]),
    ("/v0/olt/ports/0/onus/2", ["BBSM00000002"]),
    ("/v0/olt/ports/1/onus/1", ["BBSM00000101"]),
    ("/v0/olt/ports/1/onus/1?onu.onu_serial=BBSM00000101", ["BBSM00000101"]),
    ("/v0/olt/ports/1/onus/1?onu.oper_state=down", []),
])
def test_onu_status_paths(api, path, expected):
    """The ONUStatus paths select by serial, PON, or (PON, ONU id), and set G narrows further."""
    api.activate((1, "BBSM00000101", 1))
    api.add_flow(1, 1, 1, 1030)
    api.add_scheds(1, 1, 2, 258)
    assert serials(api.ok("GET", path)) == expected


@pytest.mark.parametrize("path, code", [
    ("/v0/olt/onus/BBSM99999999", 404),
    ("/v0/olt/ports/9/onus", 404),
    ("/v0/olt/ports/0/onus/9", 404),
    ("/v0/olt/ports/9/onus/1", 404),
    ("/v0/olt/onus?onu.onu_serial=BBSM99999999", 404),
    ("/v0/olt/onus?onu.onu_id=7", 404),
    ("/v0/olt/onus/BBSM00000001?onu.pon_port_id=1", 404),
    ("/v0/olt/ports/x/onus", 400),
    ("/v0/olt/ports/0/onus/x", 400),
    ("/v0/olt/ports/-1/onus", 400),
    ("/v0/olt/onus?onu.oper_state=sideways", 400),
    ("/v0/olt/onus?onu.onu_state=nap", 400),
    ("/v0/olt/onus?onu.gemports=abc", 400),
    ("/v0/olt/onus?colour=blue", 400),
    ("/v0/olt/onus/BBSM00000001?onu.onu_serial=BBSM00000002", 400),
])
def test_onu_status_bad_input(api, path, code):
    """Unknown serial/PON/ONU id is 404 with the JSON error body; malformed parameters are 400."""
    status, headers, data = api.call("GET", path)
    assert status == code
    assert headers["deprecation"] == "true"
    assert set(data) == {"error", "code", "message"} and data["error"] == data["message"]
    assert data["code"] == (5 if code == 404 else 3)


@pytest.fixture
def flows_api(api):
    api.activate_all()
    api.add_flow(0, 1, 1, 1024)
    api.add_flow(0, 2, 2, 1025)
    api.add_flow(1, 1, 1, 1024)
    api.add_scheds(0, 2, 3, 259)
    return api


def flow_keys(data):
    return [(f["access_intf_id"], f["onu_id"], f["flow_id"]) for f in data["flows"]]


@pytest.mark.parametrize("path, expected", [
    ("/v0/olt/flows", [(0, 1, "1"), (0, 2, "2"), (1, 1, "1")]),
    ("/v0/olt/flows?onu_serial=BBSM00000002", [(0, 2, "2")]),
    ("/v0/olt/flows?pon_port_id=0", [(0, 1, "1"), (0, 2, "2")]),
    ("/v0/olt/flows?pon_port_id=1", [(1, 1, "1")]),
    ("/v0/olt/flows?onu_id=1", [(0, 1, "1"), (1, 1, "1")]),
    ("/v0/olt/flows?pon_port_id=0&onu_id=1", [(0, 1, "1")]),
    ("/v0/olt/flows?oper_state=up", [(0, 1, "1"), (0, 2, "2"), (1, 1, "1")]),
    ("/v0/olt/flows?onu_state=disabled", []),
    ("/v0/olt/flows?gemports=1024", [(0, 1, "1"), (1, 1, "1")]),
    ("/v0/olt/flows?tconts.uni_id=3", [(0, 2, "2")]),
    ("/v0/olt/flows?tconts.port_no=259", [(0, 2, "2")]),
    ("/v0/olt/onu/BBSM00000001/flows", [(0, 1, "1")]),
    ("/v0/olt/onu/BBSM00000101/flows", [(1, 1, "1")]),
    ("/v0/olt/onu/BBSM00000101/flows?gemports=1025", []),
    ("/v0/olt/onu/BBSM00000002/flows?pon_port_id=0&onu_id=2&onu_state=enabled", [(0, 2, "2")]),
])
def test_flows_filters(flows_api, path, expected):
    """GET /v0/olt/flows and /v0/olt/onu/{serial}/flows apply set F; flow ids are strings (uint64)."""
    assert flow_keys(flows_api.ok("GET", path)) == expected


def test_flow_record_has_every_field(flows_api):
    """A flow is openolt.Flow with defaults included (snake_case names)."""
    [flow] = flows_api.ok("GET", "/v0/olt/onu/BBSM00000001/flows")["flows"]
    assert flow["gemport_id"] == 1024 and flow["classifier"]["o_vid"] == 900
    assert flow["cookie"] == "1" and flow["replicate_flow"] is False and flow["network_intf_id"] == 0


@pytest.mark.parametrize("path, code", [
    ("/v0/olt/onu/BBSM99999999/flows", 404),
    ("/v0/olt/flows?pon_port_id=5", 404),
    ("/v0/olt/flows?onu_serial=BBSM99999999", 404),
    ("/v0/olt/flows?onu_id=x", 400),
    ("/v0/olt/onu/BBSM00000001/flows?onu_serial=BBSM00000002", 400),
])
def test_flows_bad_input(flows_api, path, code):
    """Unknown ONU/PON 404, malformed filter 400."""
    assert flows_api.call("GET", path)[0] == code


@pytest.mark.parametrize("path, expected", [
    ("/v0/olt/ports/pon/0/status", [{"port_type": "pon", "port_id": 0, "pon_port_max_onus": 2,
                                     "pon_port_active_onus": 1, "port_state": "up", "alarm_state": "off"}]),
    ("/v0/olt/ports/PON/1/status", [{"port_type": "pon", "port_id": 1, "pon_port_max_onus": 2,
                                     "pon_port_active_onus": 0, "port_state": "up", "alarm_state": "on"}]),
    ("/v0/olt/ports/nni/0/status", [{"port_type": "nni", "port_id": 0, "pon_port_max_onus": 0,
                                     "pon_port_active_onus": 0, "port_state": "up", "alarm_state": "off"}]),
    ("/v0/olt/ports/pon/1/status?alarm_state=on", "same"),
    ("/v0/olt/ports/pon/1/status?alarm_state=off", []),
    ("/v0/olt/ports/pon/0/status?port_state=up&pon_port_active_onus=1&pon_port_max_onus=2", "same"),
    ("/v0/olt/ports/pon/0/status?pon_port_active_onus=0", []),
])
def test_port_status(api, path, expected):
    """GET .../ports/{type}/{id}/status: one port with correct counts and LOS state; its query filters."""
    api.activate((0, "BBSM00000001", 1))
    api.ok("POST", "/v0/olt/ports/pon/1/alarms/los/on")
    data = api.ok("GET", path)
    if expected == "same":
        assert len(data["ports"]) == 1
    else:
        assert data["ports"] == expected


@pytest.mark.parametrize("path, code", [
    ("/v0/olt/ports/pon/9/status", 404),
    ("/v0/olt/ports/nni/1/status", 404),
    ("/v0/olt/ports/uni/0/status", 400),
    ("/v0/olt/ports/pon/x/status", 400),
    ("/v0/olt/ports/pon/0/status?port_state=sideways", 400),
    ("/v0/olt/ports/pon/0/status?alarm_state=loud", 400),
])
def test_port_status_bad_input(api, path, code):
    """Unknown PON or NNI 404 (not BBSim's empty 200 for NNIs); bad type, id or filter 400."""
    assert api.call("GET", path)[0] == code


# ---- power ---------------------------------------------------------------------------------------

def test_single_deactivate_and_activate_paths(api):
    """DELETE /v0/olt/onus/{serial} shuts down, POST .../ports/{pon}/onus/{serial} powers on; seen via v1."""
    api.activate((0, "BBSM00000001", 1))
    code, headers, data = api.call("DELETE", "/v0/olt/onus/BBSM00000001")
    assert (code, data) == (200, {"status_msg": "Shut down 1 ONU: BBSM00000001"})
    assert headers["link"] == '</v1/olt/onus/BBSM00000001>; rel="successor-version"'
    assert api.state("BBSM00000001") == "disabled"
    assert api.ok("POST", "/v0/olt/ports/0/onus/BBSM00000001") == {"status_msg": "Powered on 1 ONU: BBSM00000001"}
    assert api.state("BBSM00000001") == "enabled"


def test_delete_by_pon_and_onu_id(api):
    """DELETE /v0/olt/ports/{pon}/onus/{onu_id} shuts down that ONU only."""
    api.activate_all()
    assert api.ok("DELETE", "/v0/olt/ports/1/onus/2") == {"status_msg": "Shut down 1 ONU: BBSM00000102"}
    assert [api.state(s) for s in ("BBSM00000002", "BBSM00000102")] == ["enabled", "disabled"]


def test_per_pon_deactivate_and_activate(api):
    """DELETE and POST /v0/olt/ports/{pon}/onus act on that PON's ONUs only."""
    api.activate_all()
    assert api.ok("DELETE", "/v0/olt/ports/1/onus") == {
        "status_msg": "Shut down 2 ONUs: BBSM00000101, BBSM00000102"}
    assert [api.state(s) for s in ("BBSM00000001", "BBSM00000101", "BBSM00000102")] == [
        "enabled", "disabled", "disabled"]
    assert api.ok("POST", "/v0/olt/ports/1/onus") == {"status_msg": "Powered on 2 ONUs: BBSM00000101, BBSM00000102"}
    assert api.state("BBSM00000102") == "enabled"


def test_per_pon_deactivate_with_filter(api):
    """DELETE /v0/olt/ports/{pon}/onus?onu.onu_id=... narrows the PON's ONUs."""
    api.activate_all()
    assert api.ok("DELETE", "/v0/olt/ports/0/onus?onu.onu_id=2") == {"status_msg": "Shut down 1 ONU: BBSM00000002"}
    assert api.state("BBSM00000001") == "enabled"


def test_per_pon_activate_reports_skipped(api):
    """Powering on a PON where one ONU is already on acts on the other and names the skipped one."""
    api.activate_all()
    api.ok("DELETE", "/v0/olt/onus/BBSM00000002")
    assert api.ok("POST", "/v0/olt/ports/0/onus") == {
        "status_msg": "Powered on 1 ONU: BBSM00000002; skipped 1: ONU BBSM00000001 is already enabled"}


def test_bulk_bodies(api):
    """DELETE and POST /v0/olt/onus with {"onus": [...]} act on the listed ONUs (serial or PON + ONU id)."""
    api.activate_all()
    body = json.dumps({"onus": [{"onu_serial": "BBSM00000001"}, {"pon_port_id": 1, "onu_id": 2}]})
    assert api.ok("DELETE", "/v0/olt/onus", body) == {"status_msg": "Shut down 2 ONUs: BBSM00000001, BBSM00000102"}
    assert [api.state(s) for s in ("BBSM00000001", "BBSM00000002", "BBSM00000101", "BBSM00000102")] == [
        "disabled", "enabled", "enabled", "disabled"]
    body = json.dumps({"onus": [{"onu_serial": "BBSM00000001"}, {"onu_serial": "BBSM00000002"},
                                {"pon_port_id": 1, "onu_id": 2, "onu_serial": "BBSM00000102"}]})
    code, headers, data = api.call("POST", "/v0/olt/onus", body)
    assert code == 200 and "link" not in headers
    assert data == {"status_msg": "Powered on 2 ONUs: BBSM00000001, BBSM00000102; "
                                  "skipped 1: ONU BBSM00000002 is already enabled"}
    assert api.state("BBSM00000102") == "enabled"


def test_bulk_all_already_in_state_is_409(api):
    """A batch whose every ONU is already on is refused with 409 and the reasons."""
    api.activate_all()
    code, _, data = api.call("POST", "/v0/olt/onus", json.dumps({"onus": [{"onu_serial": "BBSM00000001"}]}))
    assert (code, data["code"], data["message"]) == (409, 9, "ONU BBSM00000001 is already enabled")


@pytest.mark.parametrize("method, path, code", [
    ("DELETE", "/v0/olt/onus/BBSM99999999", 404),
    ("DELETE", "/v0/olt/ports/9/onus", 404),
    ("POST", "/v0/olt/ports/9/onus", 404),
    ("DELETE", "/v0/olt/ports/0/onus/9", 404),
    ("POST", "/v0/olt/ports/0/onus/BBSM99999999", 404),
    ("POST", "/v0/olt/ports/1/onus/BBSM00000001", 404),
    ("DELETE", "/v0/olt/ports/x/onus", 400),
    ("DELETE", "/v0/olt/ports/0/onus/BBSM00000001", 400),
    ("DELETE", "/v0/olt/onus/BBSM00000001?onu.oper_state=sideways", 400),
])
def test_power_bad_paths(api, method, path, code):
    """Unknown serial/PON/ONU id 404 (BBSim crashes on unknown PONs), malformed ids 400; nothing changes."""
    api.activate_all()
    seen = []
    api.olt.subscribe(seen.append)
    assert api.call(method, path)[0] == code
    assert seen == []


@pytest.mark.parametrize("method", ["POST", "DELETE"])
@pytest.mark.parametrize("body, code", [
    (b'{"onus": [', 400),
    (b"\xff\xfe", 400),
    (b"[1, 2]", 400),
    (b'{"onus": {"onu_serial": "BBSM00000001"}}', 400),
    (b'{"onus": [{"onu_id": "one"}]}', 400),
    (b'{"onus": [{"colour": "blue"}]}', 400),
    (b'{"onus_batch": {"onus": []}}', 400),
    (b'{"onus": [{"oper_state": "up"}]}', 400),
    (b"", 400),
    (b'{"onus": []}', 400),
    (b'{"onus": [{"onu_serial": "BBSM00000001"}, {"onu_serial": "BBSM99999999"}]}', 404),
    (b'{"onus": [{"onu_serial": "BBSM00000001"}, {"pon_port_id": 9, "onu_id": 1}]}', 404),
])
def test_bulk_bad_bodies(api, method, body, code):
    """Malformed bodies are 400, unknown ONUs 404, and nothing is changed for any listed ONU."""
    api.activate((0, "BBSM00000001", 1))
    api.ok("DELETE", "/v0/olt/onus/BBSM00000001")
    api.activate((0, "BBSM00000002", 2))
    seen = []
    api.olt.subscribe(seen.append)
    status, headers, data = api.call(method, "/v0/olt/onus", body)
    assert status == code, data
    assert headers["content-type"] == "application/json" and data["code"] in (3, 5)
    assert seen == []


# ---- alarms --------------------------------------------------------------------------------------

@pytest.mark.parametrize("name, kind, field", [
    ("signaldegrade", "onu_signal_degrade_ind", "status"),
    ("lossofomcichannel", "onu_loss_omci_ind", "status"),
    ("lossofploam", "onu_alarm_ind", "loami_status"),
])
@pytest.mark.parametrize("status", ["on", "off", "ON"])
def test_onu_alarm(api, name, kind, field, status):
    """POST .../alarms/{type}/{status} emits the indication of the matching v1 alarm."""
    seen = []
    api.olt.subscribe(seen.append)
    code, headers, data = api.call("POST", f"/v0/olt/onus/BBSM00000001/alarms/{name}/{status}")
    assert code == 200
    assert data["status_msg"].endswith(("raised.", "cleared."))
    assert headers["link"].startswith("</v1/olt/onus/BBSM00000001/alarms/ONU_")
    [alarm] = [e for e in seen if isinstance(e, events.Alarm)]
    assert (alarm.kind, alarm.fields[field]) == (kind, status.lower())


@pytest.mark.parametrize("path, code", [
    ("/v0/olt/onus/BBSM99999999/alarms/signaldegrade/on", 404),
    ("/v0/olt/onus/BBSM00000001/alarms/DYING_GASP/on", 400),
    ("/v0/olt/onus/BBSM00000001/alarms/lossofsignal/on", 400),
    ("/v0/olt/onus/BBSM00000001/alarms/signaldegrade/yes", 400),
])
def test_onu_alarm_bad_input(api, path, code):
    """Unknown ONU 404 (BBSim: 500 marshalling error), bad type or status 400; no indication."""
    seen = []
    api.olt.subscribe(seen.append)
    assert api.call("POST", path)[0] == code and seen == []


@pytest.mark.parametrize("port_type, port_id, intf_id", [("pon", 0, 0x20000000), ("nni", 0, 0x100000),
                                                         ("PON", 1, 0x20000001)])
@pytest.mark.parametrize("status", ["on", "off"])
def test_olt_los(api, port_type, port_id, intf_id, status):
    """POST .../ports/{type}/{id}/alarms/los/{status} emits los_ind and sets the port's alarm_state."""
    seen = []
    api.olt.subscribe(seen.append)
    data = api.ok("POST", f"/v0/olt/ports/{port_type}/{port_id}/alarms/los/{status}")
    word = "raised" if status == "on" else "cleared"
    assert data == {"status_msg": f"LOS {word} on {port_type.upper()} {port_id}."}
    assert seen == [events.Alarm("los_ind", {"intf_id": intf_id, "status": status})]
    [port] = api.ok("GET", f"/v0/olt/ports/{port_type.lower()}/{port_id}/status")["ports"]
    assert port["alarm_state"] == status


@pytest.mark.parametrize("path, code", [
    ("/v0/olt/ports/pon/9/alarms/los/on", 404),
    ("/v0/olt/ports/nni/1/alarms/los/on", 404),
    ("/v0/olt/ports/uni/0/alarms/los/on", 400),
    ("/v0/olt/ports/pon/x/alarms/los/on", 400),
    ("/v0/olt/ports/pon/0/alarms/los/bright", 400),
])
def test_olt_los_bad_input(api, path, code):
    """Unknown port 404, bad type, id or status 400; no indication."""
    seen = []
    api.olt.subscribe(seen.append)
    assert api.call("POST", path)[0] == code and seen == []


# ---- device actions ------------------------------------------------------------------------------

@pytest.mark.parametrize("path", ["/v0/olt/action/reboot", "/v0/olt/olt/BBSIM_OLT_0/action/hard-reboot",
                                  "/v0/OLT/action/soft-reboot"])
def test_olt_reboot_paths(api, path):
    """Both PATCH paths reboot the OLT; the Link points at POST /v1/olt/reboot; a second one is 409."""
    api.activate((0, "BBSM00000001", 1))
    code, headers, data = api.call("PATCH", path)
    assert code == 200 and data["status_msg"].startswith("OLT BBSIM_OLT_0 ")
    assert headers["link"] == '</v1/olt/reboot>; rel="successor-version"'
    assert api.olt.state == "deleted" and api.state("BBSM00000001") == "disabled"
    assert api.call("PATCH", path)[0] == 409


@pytest.mark.parametrize("action, delay", [("reboot", ONU_SOFT_REBOOT_DELAY), ("soft-reboot", 10),
                                           ("hard-reboot", 30)])
def test_onu_reboot(api, action, delay):
    """PATCH /v0/olt/onu/{serial}/action/{action} power-cycles the ONU: off now, on after the delay."""
    api.activate((1, "BBSM00000102", 2))
    data = api.ok("PATCH", f"/v0/olt/onu/BBSM00000102/action/{action}")
    assert f"in {delay:g} s" in data["status_msg"]
    assert api.state("BBSM00000102") == "disabled"
    api.clock.advance(delay)
    assert api.state("BBSM00000102") == "enabled"


@pytest.mark.parametrize("path, code", [
    ("/v0/olt/action/explode", 400),
    ("/v0/olt/olt/BBSIM_OLT_0/action/shutdown", 400),
    ("/v0/router/action/reboot", 400),
    ("/v0/onu/action/reboot", 400),
    ("/v0/olt/onu/BBSM99999999/action/reboot", 404),
    ("/v0/olt/olt/BBSIM_OLT_9/action/reboot", 404),
    ("/v0/olt/onu/BBSM00000001/action/reboot", 409),
])
def test_device_action_bad_input(api, path, code):
    """Unknown action or device type 400, unknown device 404, ONU not enabled 409; nothing changes."""
    assert api.call("PATCH", path)[0] == code
    assert api.olt.state == "enabled"


# ---- HTTP details --------------------------------------------------------------------------------

def test_unknown_path_and_wrong_method(api):
    """Unknown path 404 and wrong method 405 answer JSON with Allow, and carry the Deprecation header."""
    code, headers, data = api.call("GET", "/v0/nothing")
    assert (code, data["code"], headers["deprecation"]) == (404, 5, "true")
    code, headers, data = api.call("PUT", "/v0/olt/onus")
    assert code == 405 and headers["deprecation"] == "true"
    assert set(headers["allow"].split(", ")) >= {"GET", "POST", "DELETE"}
    code, _, _ = api.call("POST", "/v0/olt")
    assert code == 405


def test_post_and_get_share_a_path_with_different_placeholders(api):
    """GET .../onus/{onu_id} and POST .../onus/{onu_serial} are told apart by method."""
    api.activate_all()
    assert serials(api.ok("GET", "/v0/olt/ports/0/onus/1")) == ["BBSM00000001"]
    assert api.call("POST", "/v0/olt/ports/0/onus/BBSM00000001")[0] == 409


def test_head_is_get_without_body(api):
    """HEAD on a GET route answers 200 like GET."""
    code, headers, _ = api.call("HEAD", "/v0/olt")
    assert code == 200 and headers["deprecation"] == "true"


def test_body_ignored_on_routes_without_one(api):
    """As in BBSim's gateway, only POST/DELETE /v0/olt/onus read a body."""
    api.activate((0, "BBSM00000001", 1))
    assert api.ok("DELETE", "/v0/olt/onus/BBSM00000001", b"not json") == {
        "status_msg": "Shut down 1 ONU: BBSM00000001"}
