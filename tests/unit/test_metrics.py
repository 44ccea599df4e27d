"""Prometheus metrics in memory: values read from the model at scrape time move with it (ONU states, indications,
timers), OMCI and request counters, `/metrics` beside the v1 routes, and the gRPC metrics interceptor on fake
calls. Every Metrics has its own registry."""

from __future__ import annotations

import grpc
import pytest
from prometheus_client import REGISTRY
from prometheus_client.parser import text_string_to_metric_families

from oltsim._proto import bbsim_pb2
from oltsim.api.v1.rest_v1 import V1Rest
from oltsim.prometheus import OMCI_REQUEST_METHOD, AioMetricsInterceptor, Metrics, counted, with_metrics
from oltsim.model import events
from oltsim.model.onu import ONU_MACHINE

from conftest import Aborted, FakeContext, Rest, Sim, run_now, stream_now

SERIALS = ("BBSM00000001", "BBSM00000002", "BBSM00000101", "BBSM00000102")


def samples(metrics: Metrics) -> dict[tuple, float]:
    """Every sample of a scrape, keyed by (sample name, sorted label items)."""
    text, _ = metrics.exposition()
    out = {}
    for family in text_string_to_metric_families(text.decode("utf-8")):
        for sample in family.samples:
            out[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return out


def onus_by_state(metrics: Metrics) -> dict[str, float]:
    return {dict(labels)["state"]: value for (name, labels), value in samples(metrics).items()
            if name == "oltsim_onus"}


@pytest.fixture
def sim():
    return Sim()


def test_onu_states_move_when_an_onu_is_powered_off_and_on(sim):
    """ONUs by state are read at scrape time: bring-up, a shutdown through V1Commands and a power-on all show."""
    metrics = Metrics(sim.olt, sim.hub)
    before = onus_by_state(metrics)
    assert set(before) == set(ONU_MACHINE.states)  # every state is a series, 0 included
    assert sum(before.values()) == 4
    sim.bring_up()
    assert onus_by_state(metrics)["enabled"] == 4

    sim.commands.ShutdownONU(bbsim_pb2.ONURequest(SerialNumber="BBSM00000001"))
    after = onus_by_state(metrics)
    assert (after["enabled"], after["disabled"]) == (3, 1)

    sim.commands.PoweronONU(bbsim_pb2.ONURequest(SerialNumber="BBSM00000001"))
    assert onus_by_state(metrics)["disabled"] == 0


def test_indications_sent_and_dropped_follow_the_hub(sim):
    """Indications with no adapter are dropped, with one they are sent; both counters are the hub's."""
    metrics = Metrics(sim.olt, sim.hub)
    sim.olt.enable_indication()  # the OLT comes up and discovers ONUs with nobody listening
    sim.discover_all()
    dropped = samples(metrics)[("oltsim_indications_dropped_total", ())]
    assert dropped == sim.hub.dropped > 0
    sim.connect()
    sim.commands.SetOltAlarmIndication(bbsim_pb2.OLTAlarmRequest(InterfaceType="pon", InterfaceID=0,
                                                                  Status="on"))
    values = samples(metrics)
    assert values[("oltsim_indications_sent_total", ())] == sim.hub.sent > 0
    assert values[("oltsim_indications_dropped_total", ())] == dropped


def test_timers_pending_is_the_model_count(sim):
    """timers_pending is olt.pending_calls() at scrape time, and falls to 0 once the OLT stops."""
    metrics = Metrics(sim.olt, sim.hub)
    sim.connect()
    assert samples(metrics)[("oltsim_timers_pending", ())] == sim.olt.pending_calls() > 0
    sim.olt.stop()
    assert samples(metrics)[("oltsim_timers_pending", ())] == 0


def test_omci_indications_are_counted_from_events(sim):
    """Each OmciIndication the model emits counts once; requests start at 0 (counted by the interceptor)."""
    metrics = Metrics(sim.olt, sim.hub)
    for _ in range(3):
        sim.olt.emit(events.OmciIndication(intf_id=0, onu_id=1, pkt=b"\x00" * 48))
    values = samples(metrics)
    assert values[("oltsim_omci_messages_total", (("direction", "indication"),))] == 3
    assert values[("oltsim_omci_messages_total", (("direction", "request"),))] == 0


def test_olt_info_names_the_olt():
    """olt_info carries the serial and OLT id, to tell many simulated OLTs apart."""
    sim = Sim(olt_id=7)
    info = [labels for (name, labels) in samples(Metrics(sim.olt, sim.hub)) if name == "oltsim_olt_info"]
    assert dict(info[0])["serial"] == "BBSIM_OLT_7" and dict(info[0])["olt_id"] == "7"


def test_each_metrics_has_its_own_registry(sim):
    """Two Metrics never share numbers, and nothing lands in prometheus_client's global registry."""
    first, second = Metrics(sim.olt, sim.hub), Metrics(sim.olt, sim.hub)
    first.count_request("rest-v1", "200")
    assert ("oltsim_requests_total", (("status", "200"), ("surface", "rest-v1"))) in samples(first)
    assert not any(name == "oltsim_requests_total" for name, _ in samples(second))
    assert REGISTRY.get_sample_value("oltsim_requests_total", {"surface": "rest-v1", "status": "200"}) is None


# ---- REST ---------------------------------------------------------------------------------------------------


def v1_with_metrics(sim):
    """The v1 resource as makeService builds it (requests counted, /metrics added), served by StubTreq."""
    metrics = Metrics(sim.olt, sim.hub)
    return metrics, Rest(counted(with_metrics(V1Rest(sim.commands).resource(), metrics), metrics, "rest-v1"))


def test_metrics_path_serves_the_text_format(sim):
    """GET /metrics: 200 in Prometheus' text format; the v1 routes are still there beside it."""
    _, rest = v1_with_metrics(sim)
    reply = rest.call("GET", "/metrics")
    assert reply.code == 200
    assert reply.header("Content-Type") == "text/plain; version=0.0.4; charset=utf-8"
    assert b'oltsim_onus{state="created"} 4.0' in reply.body  # no adapter has enabled the OLT yet
    assert rest.call("GET", "/v1/olt").json["SerialNumber"] == "BBSIM_OLT_0"
    assert rest.call("HEAD", "/metrics").code == 200


def test_metrics_path_other_methods_are_405(sim):
    """POST /metrics: 405 with the JSON error body and `Allow: GET, HEAD`."""
    _, rest = v1_with_metrics(sim)
    reply = rest.call("POST", "/metrics")
    assert (reply.code, reply.json["code"], reply.header("Allow")) == (405, 12, "GET, HEAD")


def test_openmetrics_when_asked(sim):
    """A scraper that accepts OpenMetrics gets it."""
    metrics = Metrics(sim.olt, sim.hub)
    body, content_type = metrics.exposition("application/openmetrics-text; version=1.0.0,text/plain;q=0.5")
    assert content_type.startswith("application/openmetrics-text") and body.endswith(b"# EOF\n")


def test_rest_requests_are_counted_by_status(sim):
    """Every answered REST request counts under its surface and HTTP status."""
    metrics, rest = v1_with_metrics(sim)
    rest.call("GET", "/v1/olt")
    rest.call("GET", "/v1/olt")
    rest.call("GET", "/v1/olt/onus/BBSM99999999")
    rest.call("DELETE", "/v1/olt/onus/BBSM00000001")  # not enabled yet: 409
    values = samples(metrics)
    count = {dict(labels)["status"]: value for (name, labels), value in values.items()
             if name == "oltsim_requests_total" and dict(labels)["surface"] == "rest-v1"}
    assert count["200"] == 2 and count["404"] == 1 and sum(count.values()) == 4


# ---- gRPC interceptor ---------------------------------------------------------------------------------------


class Details:
    def __init__(self, method):
        self.method = method
        self.invocation_metadata = ()


class StatusContext(FakeContext):
    """A fake context that, like grpcio's, remembers the status an abort set."""

    def __init__(self):
        super().__init__()
        self._code = None

    def abort(self, code, details):
        self._code = code
        super().abort(code, details)

    def code(self):
        return self._code


def run(metrics, behaviour, method="/bbsim.BBSim/GetOlt", streaming=False, surface="grpc-v1"):
    """One call through the metrics interceptor, as a server on the reactor's loop runs it (coroutine handlers, async
    generator streams); returns the response (a list for streams) or the Aborted."""
    factory = grpc.unary_stream_rpc_method_handler if streaming else grpc.unary_unary_rpc_method_handler

    async def continuation(details):
        return factory(behaviour)

    handler = run_now(AioMetricsInterceptor(metrics, surface).intercept_service(continuation, Details(method)))
    call = handler.unary_stream if streaming else handler.unary_unary
    try:
        result = call("request", StatusContext())
        return stream_now(result) if streaming else run_now(result)
    except Aborted as exc:
        return exc


async def answer_ok(request, context):
    return "ok"


async def refuse_not_found(request, context):
    await context.abort(grpc.StatusCode.NOT_FOUND, "nope")


def grpc_counts(metrics, surface="grpc-v1"):
    return {dict(labels)["status"]: value for (name, labels), value in samples(metrics).items()
            if name == "oltsim_requests_total" and dict(labels)["surface"] == surface}


def test_interceptor_counts_unary_statuses(sim):
    """A unary call counts OK when it returns and its abort status when it aborts."""
    metrics = Metrics(sim.olt, sim.hub)
    assert run(metrics, answer_ok) == "ok"
    assert isinstance(run(metrics, refuse_not_found), Aborted)
    assert grpc_counts(metrics) == {"OK": 1, "NOT_FOUND": 1}


def test_interceptor_counts_a_stream_when_it_ends(sim):
    """A server stream counts once, when it ends: OK after its last item, its status when it aborts."""
    metrics = Metrics(sim.olt, sim.hub)

    async def stream(request, context):
        yield 1
        yield 2
    assert run(metrics, stream, streaming=True) == [1, 2]

    async def failing(request, context):
        yield 1
        await context.abort(grpc.StatusCode.UNAVAILABLE, "going down")
    assert isinstance(run(metrics, failing, streaming=True), Aborted)
    assert grpc_counts(metrics) == {"OK": 1, "UNAVAILABLE": 1}


def test_interceptor_counts_omci_requests_accepted(sim):
    """OmciMsgOut answered OK counts as an OMCI request; a refused one does not."""
    metrics = Metrics(sim.olt, sim.hub)
    run(metrics, answer_ok, method=OMCI_REQUEST_METHOD, surface="openolt")
    run(metrics, refuse_not_found, method=OMCI_REQUEST_METHOD, surface="openolt")
    assert samples(metrics)[("oltsim_omci_messages_total", (("direction", "request"),))] == 1
    assert grpc_counts(metrics, "openolt") == {"OK": 1, "NOT_FOUND": 1}


def test_interceptor_leaves_unknown_methods_alone(sim):
    """No handler (unknown method) stays no handler."""
    interceptor = AioMetricsInterceptor(Metrics(sim.olt, sim.hub), "grpc-v1")

    async def unknown(details):
        return None
    assert run_now(interceptor.intercept_service(unknown, Details("/x/Y"))) is None
