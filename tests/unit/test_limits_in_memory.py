"""The daemon's limits in memory: id ranges and flow limits on the OpenOLT servicer (refused before anything is
stored), flow lists paged and written a slice per reactor turn, JSON nesting found without parsing, request bodies
refused by the Site's Request from their headers, the access log's redaction, and the settings behind them."""
from __future__ import annotations

import json

import grpc
import pytest
from twisted.internet.task import Clock
from twisted.logger import capturedLogs
from twisted.internet.testing import StringTransport
from twisted.web.resource import Resource
from twisted.web.test.requesthelper import DummyRequest
from voltha_protos import openolt_pb2, tech_profile_pb2

from conftest import Sim, grpc_call, grpc_error
from test_v0_rest import Api
from oltsim._proto import legacy_pb2
from oltsim.api import translate
from oltsim.api.restkit import ListWriter, json_nests_deeper, page, page_of
from oltsim.api.site import ApiSite, redact_uri, redacted_log_formatter
from oltsim.api.v0.usecases_v0 import V0Commands
from oltsim.config import ConfigError, PonRange, load_settings
from oltsim.model.errors import InvalidArgument

SN = "BBSM00000001"
IA, RE = grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.RESOURCE_EXHAUSTED


def eapol_flow(flow_id=1, onu_id=1, **fields) -> openolt_pb2.Flow:
    """BBR's EAPOL trap flow for ONU `onu_id` of PON 0 (GEM port and alloc id below the pools, as BBR sends)."""
    flow = openolt_pb2.Flow(access_intf_id=0, onu_id=onu_id, uni_id=0, flow_id=flow_id, flow_type="downstream",
                            network_intf_id=0, classifier=openolt_pb2.Classifier(eth_type=0x888E, o_vid=4091),
                            priority=100, cookie=flow_id, port_no=onu_id, alloc_id=onu_id, gemport_id=onu_id)
    for name, value in fields.items():
        if name in ("pbit_to_gemport", "gemport_to_aes"):
            getattr(flow, name).update(value)
        else:
            setattr(flow, name, value)
    return flow


def nni_flow(flow_id: int, **fields) -> openolt_pb2.Flow:
    """A trap-from-NNI flow as VOLTHA sends it: -1 for the ONU, UNI, GEM port and alloc id."""
    flow = openolt_pb2.Flow(access_intf_id=-1, onu_id=-1, uni_id=-1, gemport_id=-1, alloc_id=-1, flow_id=flow_id,
                            flow_type="downstream", network_intf_id=0, priority=10000, cookie=flow_id)
    for name, value in fields.items():
        setattr(flow, name, value)
    return flow


def refused(sim: Sim, rpc: str, request, code=IA) -> str:
    """The details of `rpc`'s refusal with `code`, after checking that it changed nothing."""
    generation, flows = sim.olt.generation, len(sim.olt.flows)
    sim.events.clear()
    error = grpc_error(sim.openolt, rpc, request)
    assert error.code is code, error.details
    assert (sim.olt.generation, len(sim.olt.flows), sim.events) == (generation, flows, [])
    return error.details


# ---- id ranges -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("fields, message", [
    ({"gemport_id": -7}, "gemport_id must be 0..65535 (got -7)"),
    ({"gemport_id": 65536}, "gemport_id must be 0..65535 (got 65536)"),
    ({"alloc_id": -1}, "alloc_id must be 0..16383 (got -1)"),
    ({"alloc_id": 16384}, "alloc_id must be 0..16383 (got 16384)"),
    ({"port_no": 2**31}, "port_no must be 0..2147483647 (got 2147483648)"),
    ({"uni_id": -1}, "uni_id must be 0..15 (got -1)"),
    ({"onu_id": 1024}, "onu_id must be 0..1023 (got 1024)"),
    ({"network_intf_id": 1}, "network_intf_id must be an NNI of this OLT, 0..0 (got 1)"),
    ({"access_intf_id": -7}, "access_intf_id must be a PON id or -1 (none) (got -7)"),
    ({"replicate_flow": True, "pbit_to_gemport": {8: 1024}}, "pbit_to_gemport key (a p-bit) must be 0..7 (got 8)"),
    ({"replicate_flow": True, "pbit_to_gemport": {0: 70000}}, "pbit_to_gemport[0] must be 0..65535 (got 70000)"),
    ({"gemport_to_aes": {70000: True}}, "gemport_to_aes key (a GEM port) must be 0..65535 (got 70000)"),
], ids=lambda value: "-".join(value) if isinstance(value, dict) else None)
def test_flow_ids_out_of_range_are_refused_before_anything_is_stored(fields, message):
    """FlowAdd with an id outside the PON's XGS-PON id space (or not naming an NNI, PON or p-bit) is
    INVALID_ARGUMENT with a plain reason; nothing is stored, emitted or shown (GEM port -7 used to be stored, and the
    v0 views of its ONU then answered 500)."""
    sim = Sim()
    sim.bring_up()
    assert refused(sim, "FlowAdd", eapol_flow(**fields)) == message
    assert grpc_call(sim.openolt, "FlowAdd", eapol_flow()) == openolt_pb2.Empty()


def test_flows_no_onu_owns_may_say_none_but_nothing_else_out_of_range():
    """NNI trap flows carry -1 (none) for the ONU, UNI, GEM port and alloc id, as VOLTHA sends them, and are stored;
    other negative ids and ids beyond the widest PON's space are refused there too."""
    sim = Sim()
    grpc_call(sim.openolt, "FlowAdd", nni_flow(1))
    assert len(sim.olt.flows) == 1
    assert refused(sim, "FlowAdd", nni_flow(2, gemport_id=-2)) == "gemport_id must be 0..65535 or -1 (none) (got -2)"
    assert refused(sim, "FlowAdd", nni_flow(2, onu_id=5000)) == "onu_id must be 0..1023 or -1 (none) (got 5000)"
    assert refused(sim, "FlowAdd", nni_flow(2, access_intf_id=2), grpc.StatusCode.NOT_FOUND) == (
        "PON 2 not found (this OLT has PONs 0..1)")


def test_a_gpon_pon_has_the_smaller_id_space_and_configured_pools_widen_it():
    """A GPON PON takes 12-bit GEM ports and alloc ids (G.984.3), an XGS-PON one 16- and 14-bit ones; a PON ranges
    file whose pools go beyond the technology's space widens it to the pools' ends."""
    ranges = (PonRange(0, 0, "GPON", 1, 2, 256, 1000, 256, 2000), PonRange(1, 1, "XGS-PON", 1, 2, 1024, 2048, 1024,
                                                                            100000))
    sim = Sim(pon_ranges=ranges)
    sim.bring_up()
    assert refused(sim, "FlowAdd", eapol_flow(gemport_id=5000)) == "gemport_id must be 0..4095 (got 5000)"
    assert refused(sim, "FlowAdd", eapol_flow(alloc_id=5000)) == "alloc_id must be 0..4095 (got 5000)"
    on_pon_1 = eapol_flow(gemport_id=100000, alloc_id=16383)
    on_pon_1.access_intf_id = 1
    grpc_call(sim.openolt, "FlowAdd", on_pon_1)
    assert [flow.gemport_id for flow in sim.olt.flows.all()] == [100000]
    # However far the pools go, an id stays an int32, as the control APIs show it.
    huge = Sim(pon=1, pon_ranges=(PonRange(0, 0, "XGS-PON", 1, 2, 1024, 2**40, 1024, 2**40),))
    huge.bring_up()
    flow = eapol_flow(replicate_flow=True, pbit_to_gemport={0: 2**31})
    assert refused(huge, "FlowAdd", flow) == "pbit_to_gemport[0] must be 0..2147483647 (got 2147483648)"
    huge = Sim(pon=1, pon_ranges=(PonRange(0, 0, "XGS-PON", 1, 2**40, 1024, 2048, 1024, 2048),))
    huge.connect()
    huge.discover_all()
    assert refused(huge, "ActivateOnu", openolt_pb2.Onu(intf_id=0, onu_id=2**31, serial_number=translate.serial_to_pb(
        SN))) == "ONU id 2147483648 is outside the range 1..2147483647 of PON 0"


def test_schedulers_and_queues_are_checked_like_flows():
    """CreateTrafficSchedulers with an alloc id out of range or a UNI the ONU lacks, and CreateTrafficQueues with a
    GEM port out of range, are INVALID_ARGUMENT and store nothing; FlowRemove with an unknown flow type or a negative
    PON id other than -1 is INVALID_ARGUMENT."""
    sim = Sim()
    sim.bring_up()
    scheds = tech_profile_pb2.TrafficSchedulers(intf_id=0, onu_id=1, uni_id=0, traffic_scheds=[
        tech_profile_pb2.TrafficScheduler(alloc_id=20000)])
    assert refused(sim, "CreateTrafficSchedulers", scheds) == "alloc_id must be 0..16383 (got 20000)"
    scheds.traffic_scheds[0].alloc_id, scheds.uni_id = 1024, 4
    assert refused(sim, "CreateTrafficSchedulers", scheds) == (
        "UNI 4 does not exist on ONU BBSM00000001 (it has UNIs 0..3)")
    assert sim.olt.onu_by_serial(SN).traffic_schedulers is None
    queues = tech_profile_pb2.TrafficQueues(intf_id=0, onu_id=1, uni_id=0, traffic_queues=[
        tech_profile_pb2.TrafficQueue(gemport_id=70000)])
    assert refused(sim, "CreateTrafficQueues", queues) == "gemport_id must be 0..65535 (got 70000)"
    assert refused(sim, "FlowRemove", openolt_pb2.Flow(access_intf_id=0, flow_id=1, flow_type="sideways")) == (
        "flow_type must be empty (any) or one of upstream, downstream, multicast, both (got 'sideways')")
    assert refused(sim, "FlowRemove", openolt_pb2.Flow(access_intf_id=-3, flow_id=1)) == (
        "access_intf_id must be a PON id or -1 (none) (got -3)")


def test_oversized_messages_are_not_stored():
    """A FlowAdd above 1 KiB (a flow with every field set is about 420 bytes) or a CreateTrafficSchedulers above
    4 KiB is INVALID_ARGUMENT: max_flows x the largest flow bounds the memory flows take."""
    sim = Sim()
    sim.bring_up()
    fat = eapol_flow()
    fat.classifier.pkt_tag_type = "x" * 2000
    assert refused(sim, "FlowAdd", fat).startswith("a flow may encode to at most 1024 bytes (got ")
    scheds = tech_profile_pb2.TrafficSchedulers(intf_id=0, onu_id=1, traffic_scheds=[
        tech_profile_pb2.TrafficScheduler(alloc_id=1024, tech_profile_id=64)] * 500)
    assert refused(sim, "CreateTrafficSchedulers", scheds).startswith(
        "a TrafficSchedulers message may encode to at most 4096 bytes (got ")


# ---- flow limits -----------------------------------------------------------------------------------------


def test_flows_per_onu_and_per_olt_are_bounded():
    """With max_flows_per_onu 2 and max_flows 3: a third flow of an ONU and a fourth of the OLT are
    RESOURCE_EXHAUSTED and not stored; a flow replacing a stored one (same PON, id and type) is always accepted,
    and removing a flow makes room."""
    sim = Sim(max_flows=3, max_flows_per_onu=2)
    sim.bring_up()
    grpc_call(sim.openolt, "FlowAdd", eapol_flow(1))
    grpc_call(sim.openolt, "FlowAdd", eapol_flow(2))
    assert refused(sim, "FlowAdd", eapol_flow(3), RE) == (
        "ONU BBSM00000001 holds 2 flows, the limit per ONU (2); remove flows before adding more")
    grpc_call(sim.openolt, "FlowAdd", eapol_flow(2, priority=200))  # replaces flow 2
    grpc_call(sim.openolt, "FlowAdd", eapol_flow(10, onu_id=2))
    assert refused(sim, "FlowAdd", nni_flow(20), RE) == (
        "the OLT holds 3 flows, its limit (3); remove flows before adding more")
    grpc_call(sim.openolt, "FlowRemove", openolt_pb2.Flow(access_intf_id=0, flow_id=1, flow_type="downstream"))
    grpc_call(sim.openolt, "FlowAdd", nni_flow(20))
    assert len(sim.olt.flows) == 3


def test_v0_batches_list_at_most_the_olts_onus():
    """A v0 power batch (REST body or gRPC onus_batch) listing more ONUs than the OLT has is INVALID_ARGUMENT before
    its entries are looked at."""
    sim = Sim()
    request = legacy_pb2.ONURequest()
    for _ in range(5):
        request.onus_batch.onus.add(onu_serial=SN)
    with pytest.raises(InvalidArgument, match=r"^onus lists more ONUs \(5\) than this OLT has \(4\)$"):
        V0Commands(sim.olt).ONUActivate(request)


@pytest.mark.parametrize("body, message", [
    (b'{"onus":' + b"[" * 1000 + b"]" * 1000 + b"}", "request body nests deeper than 32 levels"),
    (b'{"onus": [{"onu_id": ' + b"1" * 5000 + b"}]}", "request body holds a number with too many digits"),
    (b'{"onus": [' + b",".join([b'{"onu_serial": "BBSM00000001"}'] * 5) + b"]}",
     "onus lists more ONUs (5) than this OLT has (4)"),
    (b"\xff", "request body is not valid JSON: it is not UTF-8"),
], ids=["deep", "long-number", "too-many", "not-utf8"])
def test_v0_bodies_that_would_cost_or_crash_are_400_with_a_plain_message(body, message):
    """A v0 bulk body nested 1,000 deep (500 and a RecursionError before), one with a 5000-digit number (Python's
    own words before), one listing more ONUs than the OLT has, or one that is not UTF-8 is 400 with a plain message,
    and changes nothing."""
    api = Api()
    generation = api.olt.generation
    code, headers, error = api.call("POST", "/v0/olt/onus", body)
    assert (code, error["message"], headers["deprecation"]) == (400, message, "true")
    assert api.olt.generation == generation


# ---- flow lists: pages, slices ---------------------------------------------------------------------------


def test_flow_lists_take_offset_and_limit():
    """GET /v1/olt/flows?offset=&limit= answers that page of the list and flow_count the number selected; the
    default is the whole list, as bbsimctl expects; a value that is not an integer 0..999999999 is 400."""
    sim = Sim()
    for flow_id in range(1, 8):
        grpc_call(sim.openolt, "FlowAdd", nni_flow(flow_id))
    whole = sim.rest.call("GET", "/v1/olt/flows").json
    assert whole["flow_count"] == 7 and [f["flow_id"] for f in whole["flows"]] == [str(i) for i in range(1, 8)]
    assert whole == translate.to_json_dict(sim.commands.GetFlows(translate.bbsim_pb2.ONURequest()))
    paged = sim.rest.call("GET", "/v1/olt/flows?offset=2&limit=3").json
    assert paged == {"flow_count": 7, "flows": whole["flows"][2:5]}
    assert sim.rest.call("GET", "/v1/olt/flows?offset=6").json["flows"] == whole["flows"][6:]
    assert sim.rest.call("GET", "/v1/olt/flows?limit=0").json == {"flow_count": 7, "flows": []}
    for bad in ("-1", "x", "1e3", "9" * 10, "\u00b2"):
        reply = sim.rest.call("GET", f"/v1/olt/flows?offset={bad}")
        assert reply.code == 400 and reply.json["message"].startswith("offset must be an integer 0..999999999")
    assert sim.rest.call("GET", "/v1/olt/onus?offset=1").code == 400  # only the flow lists are paged


def test_page_helpers():
    """page_of takes offset and limit out of the query (the rest goes to the request message); page cuts."""
    query = {"offset": ["3"], "limit": ["2"], "SerialNumber": [SN]}
    assert page_of(query) == (3, 2) and query == {"SerialNumber": [SN]}
    assert page_of({}) == (0, None)
    assert page(list(range(10)), 3, 2) == [3, 4] and page(list(range(10)), 8, None) == [8, 9]


class FakeRequest:
    """What ListWriter uses of a twisted.web request: method, write, (un)registerProducer and the channel's
    callLater, whose "next reactor turn" is one second later on `clock` (task.Clock would run a call scheduled for
    now by a call it runs within the same advance; a reactor runs it on its next turn)."""

    def __init__(self, clock):
        self.method = b"GET"
        self.written: list[bytes] = []
        self.producer = None
        self.channel = type("Channel", (), {"callLater": lambda _, delay, f: clock.callLater(delay + 1, f)})()

    def write(self, data):
        self.written.append(data)

    def registerProducer(self, producer, streaming):
        assert streaming and self.producer is None
        self.producer = producer

    def unregisterProducer(self):
        self.producer = None


def test_a_long_list_is_written_a_slice_per_reactor_turn():
    """A list longer than one slice is written a slice per reactor turn (nothing rendered while the transport is
    paused), ends with the tail and fires its Deferred; the bytes are the one JSON document; cancelling stops it."""
    clock = Clock()
    request = FakeRequest(clock)
    rendered = []

    def render(item):
        rendered.append(item)
        return json.dumps({"n": item}).encode()
    done = ListWriter(request, b'{"items":[', list(range(10)), render, b"]}", slice_items=4).run()
    assert request.written == [b'{"items":['] and rendered == [] and request.producer is not None
    clock.advance(1)
    assert rendered == [0, 1, 2, 3]
    request.producer.pauseProducing()
    clock.advance(1)
    assert rendered == [0, 1, 2, 3]
    request.producer.resumeProducing()
    clock.advance(1)
    assert rendered == list(range(8))
    clock.advance(1)
    assert rendered == list(range(10)) and request.producer is None and done.called
    assert json.loads(b"".join(request.written)) == {"items": [{"n": i} for i in range(10)]}
    assert clock.getDelayedCalls() == []

    request = FakeRequest(clock)
    done = ListWriter(request, b"[", list(range(10)), lambda i: b"%d" % i, b"]", slice_items=4).run()
    clock.advance(1)
    done.cancel()
    done.addErrback(lambda _: None)
    assert clock.getDelayedCalls() == [] and len(request.written) == 2


def test_a_list_that_fails_mid_way_ends_the_connection_and_is_logged():
    """A slice that fails to render (a bug) cannot change the 200 already sent: the failure is logged and the
    connection ends, so the client sees a broken answer rather than a truncated list that parses."""
    clock = Clock()
    request = FakeRequest(clock)
    request.path, request.lost = b"/v1/olt/flows", False
    request.loseConnection = lambda: setattr(request, "lost", True)

    def render(item):
        if item == 5:
            raise ValueError("a bug")
        return b"%d" % item
    with capturedLogs() as logged:
        ListWriter(request, b"[", list(range(10)), render, b"]", slice_items=4).run()
        clock.advance(1)
        clock.advance(1)
    assert request.lost and clock.getDelayedCalls() == []
    assert [e["log_format"] for e in logged if e.get("log_failure")] == ["rest-list-failed path={path}"]


def test_a_short_list_is_rendered_at_once():
    """Up to one slice, the body is returned whole (no producer, no reactor turn)."""
    request = FakeRequest(Clock())
    body = ListWriter(request, b"[", [1, 2], lambda i: b"%d" % i, b"]").run()
    assert body == b"[1,2]" and request.written == [] and request.producer is None


# ---- JSON nesting ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("text, deeper", [
    ('{"onus": [{"tconts": {"tconts": [{"scheduler": {}}]}}]}', False),
    ("[" * 32 + "]" * 32, False),
    ("[" * 33 + "]" * 33, True),
    ("[{" * 17 + "}]" * 17, True),
    ('{"a": "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["}', False),   # brackets in a string do not nest
    ('["\\"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["]', False),  # nor after an escaped quote
    ("[[]" * 40, True),                                         # not closed: as deep as it opens
    ("", False),
])
def test_json_nesting_is_found_without_parsing(text, deeper):
    """json_nests_deeper counts the nesting of arrays and objects outside strings."""
    assert json_nests_deeper(text, 32) is deeper


# ---- request bodies and the access log -------------------------------------------------------------------


class Echo(Resource):
    """Answers the length of the body it was given."""

    isLeaf = True

    def render(self, request):
        return b"%d" % len(request.content.read())


def exchange(data: bytes, max_body: int = 1024) -> bytes:
    """What an ApiSite (Echo behind it, `max_body`) writes back to a connection that sends `data`."""
    site = ApiSite(Echo(), max_body=max_body, surface="test", refusal_headers=[(b"Deprecation", b"true")],
                   reactor=Clock())
    channel = site.buildProtocol(None)
    transport = StringTransport()
    channel.makeConnection(transport)
    channel.dataReceived(data)
    return transport.value()


def test_a_body_above_the_limit_is_refused_from_its_content_length():
    """A Content-Length above max_body is answered 413 (JSON, code RESOURCE_EXHAUSTED, the site's refusal headers,
    the connection closed) right after the headers, with no 100 Continue; a body at the limit reaches the
    resource."""
    out = exchange(b"POST /x?access_token=t HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 1025"
                   b"\r\n\r\n")
    head, _, body = out.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 413 ") and b"100 Continue" not in out
    assert b"\r\nConnection: close" in head and b"\r\nDeprecation: true" in head
    assert json.loads(body) == translate.error_body(RE, "the request body (1025 bytes) is larger than this server "
                                                        "accepts (1024 bytes)")
    out = exchange(b"POST /x HTTP/1.1\r\nHost: x\r\nContent-Length: 1024\r\n\r\n" + b"a" * 1024)
    assert out.startswith(b"HTTP/1.1 200 ") and out.endswith(b"1024")


def test_a_chunked_body_is_refused_once_it_passes_the_limit():
    """A chunked body is refused as soon as it holds more than max_body bytes, without its end; what follows is
    dropped (never buffered)."""
    chunk = b"200\r\n" + b"a" * 512 + b"\r\n"
    out = exchange(b"POST /x HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n" + chunk * 3)
    assert out.startswith(b"HTTP/1.1 413 ") and out.count(b"HTTP/1.1") == 1
    assert json.loads(out.partition(b"\r\n\r\n")[2])["message"] == (
        "the request body is larger than this server accepts (1024 bytes)")


def test_the_access_log_redacts_query_strings():
    """The access-log line keeps the path and drops the query (where a client may put its token), also a
    Referer's."""
    assert redact_uri(b"/v1/olt?access_token=s3cret") == b"/v1/olt?<redacted>"
    assert redact_uri(b"/v1/olt") == b"/v1/olt"
    request = DummyRequest([b"v1", b"olt"])
    request.uri = b"/v1/olt?access_token=s3cret"
    request.requestHeaders.addRawHeader(b"referer", b"http://lab/?token=s3cret")
    request.requestHeaders.addRawHeader(b"authorization", b"Bearer s3cret")
    request.code, request.sentLength = 401, 167
    line = redacted_log_formatter("[ts]", request)
    assert "s3cret" not in line
    assert '"GET /v1/olt?<redacted> HTTP/1.0" 401' in line and '"http://lab/?<redacted>"' in line


def test_the_openapi_documents_state_the_limits():
    """Every operation documents 413 (any request may carry a body); the flow lists document offset and limit as integers 0..999999999; v0's batch bodies say what they may hold."""
    from oltsim.api.v0.rest_v0 import openapi_document as v0_document
    from oltsim.api.v1.rest_v1 import openapi_document as v1_document

    for document in (v1_document(), v0_document()):
        for path, methods in document["paths"].items():
            for method, operation in methods.items():
                assert operation["responses"]["413"] == {"$ref": "#/components/responses/RequestTooLarge"}, path
                paged = {p["name"]: p for p in operation.get("parameters", ()) if p["name"] in ("offset", "limit")}
                assert bool(paged) == path.endswith("/flows"), (method, path)
                for parameter in paged.values():
                    assert parameter["schema"] == {"type": "integer", "minimum": 0, "maximum": 999_999_999}
    body = v0_document()["paths"]["/v0/olt/onus"]["post"]["requestBody"]["description"]
    assert "--max-request-body" in body and "32 levels" in body and "as many ONUs as the OLT" in body


# ---- settings --------------------------------------------------------------------------------------------


def test_limits_are_settings_with_defaults_yaml_keys_and_bounds(tmp_path):
    """max_flows (16384), max_flows_per_onu (256) in the olt: section and max_request_body (1 MiB) in the bbsim:
    section, each overridden by its option; nonsense is refused with the key named."""
    defaults = load_settings({}, None)
    assert (defaults.max_flows, defaults.max_flows_per_onu, defaults.max_request_body) == (16384, 256, 1048576)
    config = tmp_path / "oltsim.yaml"
    config.write_text("bbsim:\n  max_request_body: 4096\nolt:\n  max_flows: 100\n  max_flows_per_onu: 8\n")
    settings = load_settings({"max_flows_per_onu": "16"}, str(config))
    assert (settings.max_flows, settings.max_flows_per_onu, settings.max_request_body) == (100, 16, 4096)
    for given, words in (({"max_flows": "0"}, "max_flows must be at least 1"),
                         ({"max_request_body": "10"}, "max_request_body must be between 1024 and 1073741824")):
        with pytest.raises(ConfigError, match=words):
            load_settings(given, None)
