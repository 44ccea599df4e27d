"""The OpenAPI documents of /v1 and /v0: generated from the servers' own route tables (every route, nothing else),
valid OpenAPI 3.0, typed from the protobuf messages (base revision included), served by the apps, and describing
what the apps really answer (live responses validated against the documents' schemas)."""

from __future__ import annotations

import json

import pytest
from treq.testing import StubTreq
from voltha_protos import openolt_pb2, tech_profile_pb2

from conftest import BASE_URL, Rest, Sim, grpc_call, stub_request
from oltsim.api import translate
from oltsim.api.eventbus import EventBus
from oltsim.api.v0 import rest_v0 as v0_rest
from oltsim.api.v0.usecases_v0 import V0Commands
from oltsim.api.v1 import rest_v1 as v1_rest
from oltsim.api.v1.rest_v1 import V1Rest, routes_for
from oltsim.serving.security import AccessToken, guard

REVISIONS = ("base", "extended")
SN = "BBSM00000001"
OAS = pytest.importorskip("openapi_schema_validator")
ValidationError = pytest.importorskip("jsonschema").ValidationError


def operations(document) -> dict[tuple[str, str], dict]:
    """(METHOD, path) -> operation object of every operation in `document`."""
    return {(method.upper(), path): op for path, item in document["paths"].items() for method, op in item.items()}


def validate(document, schema, instance) -> None:
    """Validate `instance` against `schema` (which may $ref the document's components), as OpenAPI 3.0 reads it."""
    OAS.OAS30Validator({**schema, "components": document["components"]}).validate(instance)


def response_schema(document, method: str, path: str, status: str = "200") -> dict:
    """The JSON schema of one documented response (component responses resolved)."""
    response = operations(document)[(method, path)]["responses"][status]
    if "$ref" in response:
        response = document["components"]["responses"][response["$ref"].rsplit("/", 1)[-1]]
    return response["content"]["application/json"]["schema"]


def schema_of(document, name: str) -> dict:
    return document["components"]["schemas"][name]


# ---- coverage of the route tables -----------------------------------------------------------------


@pytest.mark.parametrize("revision", REVISIONS)
def test_v1_document_has_every_route_and_nothing_else(revision):
    """Every route the v1 server routes with in a revision is documented with its method and RPC; the only other
    operations are the document itself, the event stream, the alarms and the scenario runner."""
    document = v1_rest.openapi_document(revision)
    expected = {(r.method, r.path): r for r in routes_for(revision)}
    found = operations(document)
    assert set(found) - set(expected) == {("GET", "/v1/openapi.json"), ("GET", "/v1/events"),
                                          ("GET", "/v1/olt/alarms"), ("GET", "/v1/scenario"),
                                          ("POST", "/v1/scenario"), ("DELETE", "/v1/scenario"),
                                          ("GET", "/v1/capture"), ("GET", "/v1/dataplane")}
    for key, route in expected.items():
        assert key in found, key
        assert found[key]["x-rpc"] == f"bbsim.BBSim/{route.rpc}"
    events = found[("GET", "/v1/events")]
    assert list(events["responses"]["200"]["content"]) == ["text/event-stream"]
    assert [p["name"] for p in events["parameters"]] == ["types", "onu_serial"]


def test_base_revision_documents_no_extended_route():
    """The DHCP/EAPOL/IGMP actions (404 in the base revision) are documented in the extended revision only."""
    base = operations(v1_rest.openapi_document("base"))
    extended = operations(v1_rest.openapi_document("extended"))
    for route in v1_rest.EXTENDED_ROUTES:
        assert (route.method, route.path) not in base
        assert (route.method, route.path) in extended


def test_v0_document_has_every_route_and_nothing_else():
    """Every v0 route (MAPPING) is documented, deprecated, with its legacy RPC and v1 successor; plus the document."""
    document = v0_rest.openapi_document()
    found = operations(document)
    expected = {(r.method, r.path): r for r in v0_rest.ROUTES}
    assert set(found) - set(expected) == {("GET", "/v0/openapi.json")}
    for key, route in expected.items():
        assert found[key]["x-rpc"] == f"legacy.BBSimService/{route.rpc}"
        assert found[key]["deprecated"] is True
    assert "Successor: `GET /v1/olt/onus`" in found[("GET", "/v0/olt/onus")]["description"]


def test_documents_are_valid_openapi():
    """Both documents, in every revision, secured or not, pass the OpenAPI 3.0 schema validator."""
    validator = pytest.importorskip("openapi_spec_validator")
    for secured in (False, True):
        for revision in REVISIONS:
            validator.validate(v1_rest.openapi_document(revision, secured))
        validator.validate(v0_rest.openapi_document(secured))


def test_operation_ids_are_unique():
    """operationIds are unique (RPC names repeat across routes, so they come from method and path)."""
    for document in (v1_rest.openapi_document(), v0_rest.openapi_document()):
        ids = [op["operationId"] for op in operations(document).values()]
        assert len(ids) == len(set(ids))


# ---- parameters -----------------------------------------------------------------------------------


def params(document, method, path) -> dict[str, dict]:
    return {p["name"]: p for p in operations(document)[(method, path)].get("parameters", [])}


def test_path_parameters_are_typed_by_the_request_fields():
    """Path parameters come from the placeholders, typed by the request message's fields."""
    document = v1_rest.openapi_document()
    pon = params(document, "POST", "/v1/olt/port/{PonPortId}/onus")["PonPortId"]
    assert pon["in"] == "path" and pon["required"] is True
    assert pon["schema"] == {"type": "integer", "minimum": 0, "maximum": 2 ** 32 - 1}  # uint32
    igmp = params(document, "POST", "/v1/olt/onus/{OnuSerialNumber}/{UniID}/igmp/{SubActionVal}/{GroupAddress}/{VLAN}")
    assert igmp["SubActionVal"]["schema"] == {"type": "string", "enum": ["JOIN", "LEAVE", "JOINV3"]}
    assert igmp["VLAN"]["schema"]["format"] == "int32"
    assert igmp["GroupAddress"]["schema"] == {"type": "string"}
    v0 = params(v0_rest.openapi_document(), "GET", "/v0/olt/ports/{onu.pon_port_id}/onus/{onu.onu_id}")
    assert v0["onu.pon_port_id"]["in"] == v0["onu.onu_id"]["in"] == "path"


def test_query_parameters_are_the_other_scalar_fields():
    """Query parameters are the request's remaining scalar fields, dotted through sub-messages (the service
    document's parameter sets F and G), and offset/limit on the flow lists; repeated ones are arrays."""
    v1 = v1_rest.openapi_document()
    assert set(params(v1, "GET", "/v1/olt/flows")) == {"SerialNumber", "offset", "limit"}
    assert params(v1, "GET", "/v1/olt/onus") == {}
    assert params(v1, "POST", "/v1/olt/onus/{OnuSerialNumber}/dhcp")["UniID"]["in"] == "query"
    v0 = v0_rest.openapi_document()
    f_set = {"onu_id", "pon_port_id", "onu_serial", "oper_state", "onu_state", "gemports", "tconts.uni_id",
             "tconts.port_no"}
    g_set = {"onu." + name for name in f_set}
    assert set(params(v0, "GET", "/v0/olt/flows")) == f_set | {"offset", "limit"}
    assert set(params(v0, "GET", "/v0/olt/onu/{onu_serial}/flows")) == f_set | {"offset", "limit"}
    assert set(params(v0, "GET", "/v0/olt/onus")) == g_set
    assert set(params(v0, "GET", "/v0/olt/onus/{onu.onu_serial}")) == g_set
    assert {n for n, p in params(v0, "GET", "/v0/olt/ports/{onu.pon_port_id}/onus/{onu.onu_id}").items()
            if p["in"] == "query"} == g_set - {"onu.pon_port_id", "onu.onu_id"}
    assert {n for n, p in params(v0, "GET", "/v0/olt/ports/{port_type}/{port_id}/status").items()
            if p["in"] == "query"} == {"pon_port_max_onus", "pon_port_active_onus", "port_state", "alarm_state"}
    gemports = params(v0, "GET", "/v0/olt/onus")["onu.gemports"]
    assert gemports["schema"]["type"] == "array" and gemports["explode"] is True


def test_v0_batch_routes_document_their_body():
    """POST and DELETE /v0/olt/onus take an optional `{"onus": [...]}` body; unknown fields are refused."""
    document = v0_rest.openapi_document()
    for method in ("POST", "DELETE"):
        body = operations(document)[(method, "/v0/olt/onus")]["requestBody"]
        assert body["required"] is False
        assert body["content"]["application/json"]["schema"] == {"$ref": "#/components/schemas/legacy.ONUs_input"}
    batch = schema_of(document, "legacy.ONUs_input")
    assert batch["additionalProperties"] is False and "required" not in batch


# ---- response schemas -----------------------------------------------------------------------------


def test_response_schemas_follow_the_json_mapping():
    """Proto field names, 64-bit integers as strings, enums by name, arrays, maps as objects, sub-messages as $ref;
    fields without presence are required (always rendered), sub-messages are not."""
    document = v1_rest.openapi_document("extended")
    pon = schema_of(document, "bbsim.PONPort")
    assert pon["properties"]["PacketCount"] == {"type": "string", "format": "uint64", "pattern": "^[0-9]+$"}
    assert pon["properties"]["AllocatedOnuIds"] == {
        "type": "array", "items": {"$ref": "#/components/schemas/bbsim.PonAllocatedResources"}}
    flow = schema_of(document, "openolt.Flow")
    assert flow["properties"]["flow_id"]["type"] == "string"
    assert flow["properties"]["pbit_to_gemport"]["type"] == "object"
    assert flow["properties"]["classifier"] == {"$ref": "#/components/schemas/openolt.Classifier"}
    assert "classifier" not in flow["required"] and "flow_id" in flow["required"]
    uni = schema_of(document, "bbsim.UNI")
    assert uni["properties"]["Type"] == {"type": "string", "enum": ["ETH", "POTS"]}
    scheduler = schema_of(document, "tech_profile.SchedulerConfig")
    assert scheduler["properties"]["direction"]["enum"][:2] == ["UPSTREAM", "DOWNSTREAM"]


def test_base_revision_schemas_drop_extended_fields():
    """The base document drops every [ext] field (translate.BASE_DROPPED) and types flow_id as an integer."""
    base = v1_rest.openapi_document("base")
    extended = v1_rest.openapi_document("extended")
    for message, dropped in translate.BASE_DROPPED.items():
        for name in dropped:
            assert name not in schema_of(base, message)["properties"], (message, name)
            assert name not in schema_of(base, message).get("required", ())
            assert name in schema_of(extended, message)["properties"], (message, name)
    assert schema_of(base, "openolt.Flow")["properties"]["flow_id"]["type"] == "integer"
    # Only reachable messages are components: the allocated-resource records exist in extended only.
    assert "bbsim.PonAllocatedResources" not in base["components"]["schemas"]
    assert "bbsim.UNI" not in base["components"]["schemas"]


@pytest.mark.parametrize("secured", [False, True])
def test_every_operation_documents_the_error_statuses(secured):
    """Each operation documents the error body for 400/404/405/409/500 (and 503 of the error table), and 401 plus
    the bearer scheme only when a token is configured."""
    for document in (v1_rest.openapi_document(secured=secured), v0_rest.openapi_document(secured)):
        assert schema_of(document, "Error")["required"] == ["error", "code", "message"]
        for (method, path), op in operations(document).items():
            statuses = set(op["responses"])
            assert {"200", "405", "500"} <= statuses, (method, path)
            if (method, path) not in (("GET", "/v1/openapi.json"), ("GET", "/v0/openapi.json")):
                assert "400" in statuses, (method, path)
                if path != "/v1/scenario":  # no path parameter, no NOT_FOUND: the runner answers 400 and 409
                    assert "404" in statuses, (method, path)
            if path == "/v1/scenario":
                assert "409" in statuses, (method, path)
            elif path == "/v1/capture":  # a stream like /v1/events, and 429 when 16 captures are open
                assert "429" in statuses, (method, path)
            elif "/openapi.json" not in path and "/events" not in path and path != "/v1/olt/alarms":  # a read: 400, 404
                assert {"409", "503"} <= statuses, (method, path)
            assert ("401" in statuses) is secured
        assert ("securitySchemes" in document["components"]) is secured
        assert ("security" in document) is secured


# ---- served by the apps ---------------------------------------------------------------------------


def get(resource, path: str, headers=None):
    """(status, headers, body) of one GET through StubTreq."""
    return stub_request(StubTreq(resource), BASE_URL + path, "GET", headers)


@pytest.mark.parametrize("revision", REVISIONS)
def test_v1_app_serves_its_document(revision):
    """GET /v1/openapi.json returns the document of the server's revision (with the event stream when it has a
    bus), as JSON."""
    sim = Sim(revision=revision)
    app = V1Rest(sim.commands, EventBus(sim.olt, sim.clock))
    code, headers, body = get(app.resource(), "/v1/openapi.json")
    assert code == 200
    assert headers.getRawHeaders(b"Content-Type") == [b"application/json"]
    assert json.loads(body) == v1_rest.openapi_document(revision)
    _, _, without_bus = get(V1Rest(sim.commands).resource(), "/v1/openapi.json")
    assert ("GET", "/v1/events") not in operations(json.loads(without_bus))


def test_v0_app_serves_its_document():
    """GET /v0/openapi.json returns the v0 document, with the Deprecation header every v0 answer has."""
    sim = Sim()
    code, headers, body = get(v0_rest.V0Rest(V0Commands(sim.olt)).resource(), "/v0/openapi.json")
    assert code == 200
    assert headers.getRawHeaders(b"Deprecation") == [b"true"]
    assert json.loads(body) == v0_rest.openapi_document()


def test_document_is_protected_by_the_token():
    """With a token the document needs it like every other call (and documents the 401 it then gives)."""
    sim = Sim()
    resource = guard(V1Rest(sim.commands, secured=True).resource(), AccessToken("s3cret"), "rest-v1")
    code, _, body = get(resource, "/v1/openapi.json")
    assert code == 401
    validate(v1_rest.openapi_document(secured=True), response_schema(
        v1_rest.openapi_document(secured=True), "GET", "/v1/openapi.json", "401"), json.loads(body))
    code, _, body = get(resource, "/v1/openapi.json", headers={b"Authorization": [b"Bearer s3cret"]})
    assert code == 200 and "security" in json.loads(body)


# ---- the documents describe the real answers ------------------------------------------------------


def provisioned(revision: str) -> Sim:
    """A 2x2 OLT brought up by an adapter, with a replicated flow (maps, a 64-bit cookie), a plain flow, an NNI
    flow and a scheduler, so that every field kind of the responses appears."""
    sim = Sim(revision=revision)
    sim.bring_up()
    grpc_call(sim.openolt, "FlowAdd", openolt_pb2.Flow(
        access_intf_id=0, onu_id=1, uni_id=0, flow_id=7, flow_type="upstream", alloc_id=1024, gemport_id=1024,
        classifier=openolt_pb2.Classifier(o_vid=900, eth_type=0x0800, src_mac=bytes.fromhex("aabbccddeeff")),
        action=openolt_pb2.Action(cmd=openolt_pb2.ActionCmd(add_outer_tag=True), o_vid=900),
        replicate_flow=True, pbit_to_gemport={0: 1024, 1: 1025}, gemport_to_aes={1024: True},
        cookie=2 ** 63 + 5, port_no=256, tech_profile_id=64, symmetric_flow_id=8))
    grpc_call(sim.openolt, "FlowAdd", openolt_pb2.Flow(
        access_intf_id=1, onu_id=1, uni_id=1, flow_id=2 ** 40, flow_type="downstream", alloc_id=1100,
        gemport_id=1100, classifier=openolt_pb2.Classifier(eth_type=0x888E)))
    grpc_call(sim.openolt, "FlowAdd", openolt_pb2.Flow(access_intf_id=-1, onu_id=-1, uni_id=-1, flow_id=3,
                                                       flow_type="downstream", network_intf_id=0))
    grpc_call(sim.openolt, "CreateTrafficSchedulers", tech_profile_pb2.TrafficSchedulers(
        intf_id=0, onu_id=1, uni_id=0, port_no=256, traffic_scheds=[tech_profile_pb2.TrafficScheduler(
            direction=tech_profile_pb2.UPSTREAM, alloc_id=1024, tech_profile_id=64,
            scheduler=tech_profile_pb2.SchedulerConfig(direction=tech_profile_pb2.UPSTREAM, weight=4),
            traffic_shaping_info=tech_profile_pb2.TrafficShapingInfo(cir=600, pir=32000))]))
    return sim


#: A value for every path placeholder (a new placeholder must be added here).
SAMPLES = {"SerialNumber": SN, "OnuSerialNumber": SN, "onu_serial": SN, "onu.onu_serial": SN, "serial_number": SN,
           "onu.pon_port_id": "0", "onu.onu_id": "1", "PonPortId": "0", "port_type": "pon", "port_id": "0",
           "InterfaceType": "pon", "InterfaceID": "0", "AlarmType": "ONU_SIGNAL_DEGRADE", "alarm_type": "signaldegrade",
           "Status": "on", "status": "on", "UniID": "0", "SubActionVal": "JOIN", "GroupAddress": "224.0.0.22",
           "VLAN": "0", "device_type": "onu", "action": "reboot"}


def filled(path: str) -> str:
    for name, value in SAMPLES.items():
        path = path.replace("{%s}" % name, value)
    assert "{" not in path, f"no sample value for a placeholder of {path}"
    return path


@pytest.mark.parametrize("revision", REVISIONS)
def test_v1_get_responses_match_the_document(revision):
    """The JSON of every v1 GET route (and of a 404 and a 400) validates against the document's schemas."""
    sim = provisioned(revision)
    document = v1_rest.openapi_document(revision)
    for route in routes_for(revision):
        if route.method != "GET":
            continue
        reply = sim.rest.call("GET", filled(route.path))
        assert reply.code == 200, (route.path, reply.body)
        validate(document, response_schema(document, "GET", route.path), reply.json)
    reply = sim.rest.call("GET", "/v1/olt/onus/BBSM99999999")
    assert reply.code == 404
    validate(document, response_schema(document, "GET", "/v1/olt/onus/{SerialNumber}", "404"), reply.json)
    reply = sim.rest.call("GET", "/v1/olt/flows?nonsense=1")
    assert reply.code == 400
    validate(document, response_schema(document, "GET", "/v1/olt/flows", "400"), reply.json)


def test_v1_action_responses_match_the_document():
    """Action answers (command result) and a refusal (409) validate against the document."""
    sim = provisioned("extended")
    document = v1_rest.openapi_document("extended")
    for method, path, template, status in (
            ("DELETE", f"/v1/olt/onus/{SN}", "/v1/olt/onus/{SerialNumber}", "200"),
            ("DELETE", f"/v1/olt/onus/{SN}", "/v1/olt/onus/{SerialNumber}", "409"),
            ("POST", "/v1/olt/ports/pon/0/alarms/los/on",
             "/v1/olt/ports/{InterfaceType}/{InterfaceID}/alarms/los/{Status}", "200")):
        reply = sim.rest.call(method, path)
        assert str(reply.code) == status, reply.body
        validate(document, response_schema(document, method, template, status), reply.json)


def test_v0_get_responses_match_the_document():
    """The JSON of every v0 GET route validates against the v0 document's schemas."""
    sim = provisioned("extended")
    document = v0_rest.openapi_document()
    rest = Rest(v0_rest.V0Rest(V0Commands(sim.olt)).resource())
    for route in v0_rest.ROUTES:
        if route.method != "GET":
            continue
        reply = rest.call("GET", filled(route.path))
        assert reply.code == 200, (route.path, reply.body)
        validate(document, response_schema(document, "GET", route.path), reply.json)
    reply = rest.call("GET", "/v0/olt/onus/BBSM99999999")
    validate(document, response_schema(document, "GET", "/v0/olt/onus/{onu.onu_serial}", str(reply.code)),
             reply.json)


def test_schemas_reject_what_is_not_served():
    """The schemas are strict enough to catch a drift: an extended ONU fails the base schema, and a base flow (integer
    flow_id) fails the extended one."""
    extended, base = provisioned("extended"), provisioned("base")
    onu = extended.rest.call("GET", f"/v1/olt/onus/{SN}").json
    flows = base.rest.call("GET", "/v1/olt/flows").json
    base_doc, ext_doc = v1_rest.openapi_document("base"), v1_rest.openapi_document("extended")
    validate(ext_doc, {"$ref": "#/components/schemas/bbsim.ONU"}, onu)
    validate(base_doc, {"$ref": "#/components/schemas/bbsim.Flows"}, flows)
    strict_onu = {**schema_of(base_doc, "bbsim.ONU"), "additionalProperties": False}
    with pytest.raises(ValidationError):
        validate(base_doc, strict_onu, onu)
    with pytest.raises(ValidationError):
        validate(ext_doc, {"$ref": "#/components/schemas/bbsim.Flows"}, flows)


# ---- the documents list every parameter the servers take ------------------------------------------


def field_paths(message, prefix: str = "", depth: int = 0) -> list[str]:
    """Every dotted field name of `message`, through any field kind (singular, repeated, map, scalar), with a
    made-up child under each: names a client could try, documented or not."""
    out = []
    for fd in message.fields:
        name = prefix + fd.name
        out += [name, name + ".x"]
        if fd.message_type is not None and depth < 3:
            out += field_paths(fd.message_type, name + ".", depth + 1)
    return out


def _query_cases(api: str):
    """(route, query name, value) draws for one API, names mostly from the request message's field tree."""
    from hypothesis import strategies as st

    routes = routes_for("extended") if api == "v1" else v0_rest.ROUTES
    service = v1_rest._SERVICE if api == "v1" else v0_rest._SERVICE

    def names(route):
        request = service.methods_by_name[route.rpc].input_type
        return st.one_of(st.sampled_from(field_paths(request) + route.placeholders or ["x"]), st.text(max_size=6))
    values = st.one_of(st.sampled_from(["0", "1", "-1", "on", "BBSM00000001", "", "x", "99999999999999999999"]),
                       st.text(max_size=6))
    return st.sampled_from(routes).flatmap(
        lambda route: st.tuples(st.just(route), names(route), values))


def _check_query(api, document, rest, route, name, value):
    from urllib.parse import quote

    path = filled(route.path)
    reply = rest.call(route.method, f"{path}?{quote(name, safe='')}={quote(value, safe='')}")
    documented = {p["name"] for p in operations(document)[(route.method, route.path)].get("parameters", [])
                  if p["in"] == "query"}
    assert reply.code != 500, (route.method, path, name, value, reply.body)
    assert str(reply.code) in operations(document)[(route.method, route.path)]["responses"]
    if name not in documented:
        assert reply.code == 400, (route.method, path, name, value, reply.code, reply.body)
    if reply.code != 200:
        validate(document, {"$ref": "#/components/schemas/Error"}, reply.json)


def _query_test(api):
    from hypothesis import given

    from conftest import fuzz_settings

    @fuzz_settings(300)
    @given(case=_query_cases(api))
    def test(case):
        route, name, value = case
        sim = provisioned("extended")
        document = v1_rest.openapi_document() if api == "v1" else v0_rest.openapi_document()
        rest = sim.rest if api == "v1" else Rest(v0_rest.V0Rest(V0Commands(sim.olt)).resource())
        _check_query(api, document, rest, route, name, value)

    test.__doc__ = (f"Any query parameter on any {api} route: a name the document does not list is refused with 400 "
                    "(never 500: found by this test, a dotted name through a scalar or repeated field crashed); "
                    "every answer is one the document lists.")
    return test


# One function object each (pytest-twisted rewires hypothesis tests on the function object).
test_v1_query_parameters_are_those_documented = _query_test("v1")
test_v0_query_parameters_are_those_documented = _query_test("v0")


@pytest.mark.parametrize("api,path", [("v1", "/v1/olt/flows?SerialNumber.x=1"),
                                      ("v0", "/v0/olt/onus?onus_batch.onus.onu_id=1"),
                                      ("v0", "/v0/olt/onus?onu.tconts.tconts.alloc_id=1"),
                                      ("v0", "/v0/olt/flows?gemports.x=1")])
def test_dotted_names_through_scalars_or_lists_are_refused(api, path):
    """A query name that goes through a scalar, repeated or map field is an unknown parameter (400), not a crash
    (500; found by the query-parameter fuzz above)."""
    sim = provisioned("extended")
    rest = sim.rest if api == "v1" else Rest(v0_rest.V0Rest(V0Commands(sim.olt)).resource())
    reply = rest.call("GET", path)
    assert reply.code == 400, reply.body
    assert "unknown parameter" in reply.json["message"]


def test_documents_state_the_connection_limits():
    """Both documents say what a REST connection is bounded by: connections per port and per client address, and
    the answers left unsent before the server stops reading, with the options that set them."""
    for document in (v1_rest.openapi_document(), v0_rest.openapi_document()):
        text = document["info"]["description"]
        assert all(option in text for option in ("--max-connections (default 128)",
                                                 "--max-connections-per-peer (default 32)",
                                                 "--max-unsent-output (default 256 KiB)")), text
