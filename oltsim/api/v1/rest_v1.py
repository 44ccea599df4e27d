"""REST `/v1` (service document 4.1) on Klein, built from the same commands and messages as gRPC."""
from __future__ import annotations

import json

from klein import Klein
from twisted.internet.defer import Deferred
from twisted.web.resource import Resource
from werkzeug.exceptions import NotFound as RouteNotFound

from oltsim._proto import bbsim_pb2, oltsim_pb2
from oltsim.api import translate, ui
from oltsim.api.v1.usecases_v1 import MAX_SCENARIO_BYTES
from oltsim.api.index import render_index
from oltsim.api.openapi import ExtraPath, build_document
from oltsim.api.v1 import capture_v1 as capture_rest
from oltsim.api.restkit import (ListWriter, Route, bad_url, build_request, json_bytes, json_response, page, page_of,
                             query_params, register_routes, render_error)
from oltsim.dataplane.service import counters_of
from oltsim.model.errors import InvalidArgument

#: The data plane's counters
DATAPLANE_PATH = "/v1/dataplane"

ROUTES: tuple[Route, ...] = (
    Route("GET", "/v1/version", "Version", "Version of oltsim"),
    Route("GET", "/v1/olt", "GetOlt", "OLT state"),
    Route("GET", "/v1/olt/status", "GetOlt", "OLT state"),
    Route("POST", "/v1/olt/reboot", "RebootOlt", "Reboot the OLT"),
    Route("GET", "/v1/olt/flows", "GetFlows", "All flows (SerialNumber filters to one ONU)", paged=True),
    Route("GET", "/v1/olt/onus", "GetONUs", "All ONUs"),
    Route("DELETE", "/v1/olt/onus", "ShutdownAllONUs", "Shut down all ONUs"),
    Route("POST", "/v1/olt/onus", "PoweronAllONUs", "Power on all ONUs"),
    Route("GET", "/v1/olt/onus/{SerialNumber}", "GetONU", "One ONU"),
    Route("DELETE", "/v1/olt/onus/{SerialNumber}", "ShutdownONU", "Shut down an ONU"),
    Route("POST", "/v1/olt/onus/{SerialNumber}", "PoweronONU", "Power on an ONU"),
    Route("POST", "/v1/olt/onus/{SerialNumber}/alarms/{AlarmType}/{Status}", "SetOnuAlarmIndication",
          "Raise (on) or clear (off) an ONU alarm"),
    Route("GET", "/v1/olt/onus/{SerialNumber}/flows", "GetFlows", "Flows of an ONU", paged=True),
    Route("GET", "/v1/olt/onus/{SerialNumber}/trafficschedulers", "GetOnuTrafficSchedulers",
          "Traffic schedulers of an ONU"),
    Route("DELETE", "/v1/olt/port/{PonPortId}/onus", "ShutdownONUsOnPON", "Shut down the ONUs of a PON"),
    Route("POST", "/v1/olt/port/{PonPortId}/onus", "PoweronONUsOnPON", "Power on the ONUs of a PON"),
    Route("POST", "/v1/olt/ports/{InterfaceType}/{InterfaceID}/alarms/los/{Status}", "SetOltAlarmIndication",
          "Raise (on) or clear (off) loss of signal on a PON or NNI"),
)

EXTENDED_ROUTES: tuple[Route, ...] = (
    Route("POST", "/v1/olt/onus/{OnuSerialNumber}/dhcp", "RestartDhcp", "Restart DHCP on an ONU"),
    Route("POST", "/v1/olt/onus/{OnuSerialNumber}/eapol", "RestartEapol", "Restart EAPOL on an ONU"),
    Route("POST", "/v1/olt/onus/{OnuSerialNumber}/{UniID}/igmp/{SubActionVal}/{GroupAddress}/{VLAN}",
          "ChangeIgmpState", "Join or leave a multicast group on a UNI"),
)

_SERVICE = bbsim_pb2.DESCRIPTOR.services_by_name["BBSim"]
_METHODS = _SERVICE.methods_by_name

# What the base revision drops, per response type.
_BASE = {
    "Olt": translate.base_olt,
    "ONU": translate.base_onu,
    "ONUs": lambda d: {**d, "items": [translate.base_onu(i) for i in d.get("items", [])]},
    "Flows": lambda d: {**d, "flows": [translate.base_flow(f) for f in d.get("flows", [])]},
}
# Reads whose JSON is reused until the model's next visible change (keyed by RPC and path).
_CACHEABLE = {"GetOlt", "GetONUs", "GetONU"}
_CACHE_LIMIT = 8192


def routes_for(revision: str) -> tuple[Route, ...]:
    """The routes served in `revision` (extended adds the DHCP/EAPOL/IGMP actions)."""
    return ROUTES + (EXTENDED_ROUTES if revision == "extended" else ())


OPENAPI_PATH = "/v1/openapi.json"
ALARMS_PATH = "/v1/olt/alarms"
EVENTS_PATH = "/v1/events"
SCENARIO_PATH = "/v1/scenario"
METRICS_PATH = "/metrics"


def openapi_document(revision: str = "extended", secured: bool = False, events: bool = True,
                     metrics: bool = False) -> dict:
    """The OpenAPI document of `/v1` in `revision`: the routes of `routes_for(revision)`, the event stream (when
    served), `/metrics` (when `metrics`: the daemon serves it beside the routes) and the document itself; with
    `secured`, every call needs the access token."""
    extra = [ExtraPath("GET", OPENAPI_PATH, "This document (OpenAPI 3.0)", errors=(404,)),
             ExtraPath("GET", ALARMS_PATH, "Active alarms and the alarm history",
                       message=oltsim_pb2.Alarms.DESCRIPTOR, request=oltsim_pb2.AlarmFilter.DESCRIPTOR,
                       errors=(400, 404), rpc="oltsim.v1.Oltsim/GetAlarms",
                       description="`active`: the alarms raised and not cleared, oldest first, each with `since` "
                                   "(Unix seconds); `history`: the last 1000 raises (`status` on) and clears (off) "
                                   "since start, newest last, each with `at`. `onu_serial` keeps one ONU's "
                                   "(404 if no such ONU). docs/alarms.md says what clears what.")]
    extra += scenario_paths()
    extra.append(capture_rest.openapi_path())
    if events:
        extra.append(ExtraPath(
            "GET", EVENTS_PATH, "Server-Sent Events: every event of the simulator", media_type="text/event-stream",
            schema={"type": "string", "description": "one `event: <type>` / `data: <JSON record>` pair per event; "
                    "the record has the fields of oltsim.v1.Event (sequence and dropped as integers); a reader "
                    "that took none of 256 or more events for 10 s gets a last `event: stream-ended` (its `data` "
                    "has `dropped` and `reason`) and the connection closes"},
            request=oltsim_pb2.EventFilter.DESCRIPTOR, errors=(400, 404),
            description="`types` filters by event type (repeated, or comma-separated), `onu_serial` by ONU. A "
                        "reader that does not keep up loses events (`dropped`: how many since the event before, once per "
                        "gap), never the simulator. Unknown types are 400, an unknown ONU 404, each naming the "
                        "nearest. "
                        "A `<device>-state-changed` record's `details` hold `device`, `attribute`, `from` and "
                        "`to`; a `service-state-changed` record's (attribute `EapolState` or `DhcpState`) also "
                        "`service`, the service's name on the UNI of `uni_id`."))
    extra.append(ExtraPath(
        "GET", DATAPLANE_PATH, "The data plane's counters", errors=(400, 404, 409, 503),
        rpc="oltsim.v1.Oltsim/GetDataPlane",
        description="With interfaces (--uni-interfaces, --nni-interface, --nni-untagged-interface; "
                    "docs/dataplane.md): `unis` (by SERIAL/UNI), `flows` (by PON/flow id/type) and `nni`: frames "
                    "and bytes in (rx) and out (tx) and `dropped` by reason; `interfaces` (by name): what each TAP "
                    "read and wrote and its own drops (queue-full, the kernel's refusals); `packet_ins`: frames "
                    "trapped to the adapter. 409 (FAILED_PRECONDITION) when the data plane is off."))
    if metrics:
        extra.append(ExtraPath(
            "GET", METRICS_PATH, "Prometheus metrics", media_type="text/plain",
            schema={"type": "string", "description": "Prometheus' text format (OpenMetrics when asked for)"},
            description="Series: oltsim_onus{state}, oltsim_requests_total{surface,status}, "
                        "oltsim_indications_sent_total, oltsim_indications_dropped_total, "
                        "oltsim_omci_messages_total{direction}, oltsim_timers_pending, "
                        "oltsim_olt_info{serial,olt_id,version}, and with a Kafka sink (--kafka; DMI's message bus) "
                        "oltsim_kafka_messages_sent_total{sink}, oltsim_kafka_messages_dropped_total{sink}, "
                        "oltsim_kafka_connected{sink}."))
    return build_document(
        title="oltsim control API v1",
        description=f"BBSim-compatible REST control API, response revision `{revision}` (`extended`: BBSim 1.x "
                    "shapes; `base`: without the extended fields, see --api-revision). "
                    "Generated from the route table the server routes with and the bbsim protobuf messages. "
                    "Beside this API the same oltsim serves the Device Management Interface over gRPC (--dmi, "
                    "default port 50075: dmi.NativeHWManagementService, NativeSoftwareManagementService, "
                    "NativeEventsManagementService, NativeMetricsManagementService and bbsim.BBsim_dmi) and, with "
                    "--kafka, publishes BBSim's events to Kafka (topic BBSim-OLT-<id>-Events); GET /ui is a live "
                    "view of this API for a browser.",
        routes=routes_for(revision), service=_SERVICE, revision=revision, secured=secured, extra=extra)


def scenario_paths() -> list[ExtraPath]:
    """POST, GET and DELETE /v1/scenario in the OpenAPI document (docs/scenarios.md)."""
    status = oltsim_pb2.ScenarioStatus.DESCRIPTOR
    shape = ("`state` idle (none run yet), running, done, stopped or failed; `current` the steps running now, each "
             "with its targets and Unix times (`ends_at` 0 without a duration); `seed` as text (the file's seed "
             "is a number or a string).")
    return [
        ExtraPath("POST", SCENARIO_PATH, "Run a scenario", message=status, errors=(400, 409),
                  rpc="oltsim.v1.Oltsim/RunScenario",
                  body={"required": True, "description": "the scenario file's YAML text (docs/scenarios.md), UTF-8, "
                        f"at most {MAX_SCENARIO_BYTES // 1024} KiB; any textual Content-Type (send a file with "
                        "curl --data-binary @FILE)",
                        "content": {"application/yaml": {"schema": {"type": "string"}},
                                    "text/plain": {"schema": {"type": "string"}}}},
                  description="Starts the scenario and answers its status. 400: the file does not load (the "
                              "message names the step and the problem), an empty or oversized body; 409: a "
                              "scenario is running already (one at a time). " + shape),
        ExtraPath("GET", SCENARIO_PATH, "The running or last scenario", message=status, errors=(400, 409),
                  rpc="oltsim.v1.Oltsim/GetScenario", description=shape),
        ExtraPath("DELETE", SCENARIO_PATH, "Stop the running scenario", message=status, errors=(400, 409),
                  rpc="oltsim.v1.Oltsim/StopScenario",
                  description="Stops it and undoes what its steps hold (power back on, alarms cleared, ...); "
                              "nothing running is no error. " + shape),
    ]


def scenario_text(request) -> str:
    """The body of POST /v1/scenario as text: not empty, not multipart (a form upload), UTF-8, at most
    MAX_SCENARIO_BYTES (the listener's --max-request-body refused larger bodies before they were read)."""
    content_type = (request.getHeader(b"content-type") or b"").split(b";")[0].strip().lower()
    if content_type.startswith(b"multipart/"):
        raise InvalidArgument("send the scenario file itself as the request body, not a form "
                              "(curl --data-binary @FILE)")
    raw = request.content.read(MAX_SCENARIO_BYTES + 1) if request.content is not None else b""
    if len(raw) > MAX_SCENARIO_BYTES:
        raise InvalidArgument(f"the scenario is larger than {MAX_SCENARIO_BYTES // 1024} KiB")
    if not raw.strip():
        raise InvalidArgument("the request body is empty: send the YAML text of a scenario file "
                              "(docs/scenarios.md)")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise InvalidArgument("the scenario is not UTF-8 text") from None


class EventStream:
    """One Server-Sent-Events reader of the event bus; a push producer, so while the client
    does not keep up (the transport paused us) events are dropped and counted, not buffered.
    A client that stopped reading (the event bus gives up on it) gets a last `stream-ended`
    event saying why and how many were dropped, queued behind what it has not read, and the
    response ends: the connection closes once it has read that much."""

    def __init__(self, request, bus):
        self.request = request
        self.bus = bus
        self.paused = False
        self.sub = None
        self.done = Deferred()

    def start(self, types, onu_serial) -> Deferred:
        """Subscribe and return a Deferred that fires (ending the response) when the bus closes."""
        # subscribed first: a filter the bus refuses (an unknown type or ONU) is the request's error answer
        self.sub = self.bus.subscribe(self.deliver, types, onu_serial, self.finish,
                                      reader=f"sse peer={_peer(self.request)}", on_give_up=self.give_up)
        self.request.registerProducer(self, True)
        self.request.notifyFinish().addBoth(lambda _: self.stop())
        self.request.write(b": oltsim events\n\n")
        return self.done

    def deliver(self, record) -> bool:
        if self.paused:
            return False
        data = json.dumps(record, separators=(",", ":"))
        self.request.write(f"event: {record['type']}\ndata: {data}\n\n".encode("utf-8"))
        return True

    def finish(self):
        self.stop()

    def give_up(self, sub) -> None:
        """The client stopped reading: a last event (a few hundred bytes past the bound on what waits unsent), then
        the end of the response and of the connection."""
        data = json.dumps({"type": "stream-ended", "dropped": sub.dropped,
                           "reason": "this stream stopped reading events and was ended; open a new one"},
                          separators=(",", ":"))
        self.request.write(f"event: stream-ended\ndata: {data}\n\n".encode("utf-8"))
        self.request.channel.persistent = False  # closed once what it holds is read
        self.stop()

    def stop(self):
        if self.sub is not None:
            self.bus.unsubscribe(self.sub)
            self.sub = None
        if not self.done.called:
            self.request.unregisterProducer()
            self.done.callback(b"")

    def pauseProducing(self):
        self.paused = True

    def resumeProducing(self):
        self.paused = False

    def stopProducing(self):
        self.stop()


def _peer(request) -> str:
    address = request.getClientAddress()
    host = getattr(address, "host", None)
    return f"{host}:{address.port}" if host is not None else str(address)


class CachedReads(Resource):
    """Answers GETs of unchanged cached reads (OLT, ONU list, one ONU) without routing them
    through Klein; everything else goes to the Klein resource."""

    isLeaf = True

    def __init__(self, api: "V1Rest", inner):
        super().__init__()
        self.api = api
        self.inner = inner

    def render(self, request):
        refusal = bad_url(request)
        if refusal is not None:
            return refusal
        if request.method == b"GET" and not request.args:
            data = self.api.cached(request.path)
            if data is not None:
                return json_response(request, 200, data)
        return self.inner.render(request)


class V1Rest:
    """The `/v1` REST API over `V1Commands`; one instance per server. `secured` (an access token guards the
    server) is only documented here: the guard wraps the resource outside."""

    app = Klein()

    def __init__(self, commands, bus=None, secured: bool = False, metrics: bool = False):
        self.bus = bus
        #: /metrics is served beside these routes (oltsim.prometheus.with_metrics): documented too
        self.metrics = metrics
        self.commands = commands
        self.revision = commands.revision
        self.secured = secured
        self._cache: dict[bytes, tuple[int, bytes]] = {}
        self._routes = {(r.method, r.path): r for r in routes_for(self.revision)}
        self._openapi: bytes | None = None

    def openapi(self) -> dict:
        """This server's OpenAPI document."""
        return openapi_document(self.revision, self.secured, events=self.bus is not None, metrics=self.metrics)

    def resource(self):
        """The Klein resource behind a fast path that answers unchanged cached reads directly."""
        return CachedReads(self, self.app.resource())

    def cached(self, path: bytes) -> bytes | None:
        """The JSON cached for `path` if the model has not changed since it was rendered."""
        hit = self._cache.get(path)
        if hit is not None and hit[0] == self.commands.olt.generation:
            return hit[1]
        return None

    def dispatch(self, request, route: Route, path_args: dict) -> bytes:
        if route.paged:
            return self.flows(request, route, path_args)
        method = _METHODS[route.rpc]
        query = query_params(request)
        cache_key = request.path if route.rpc in _CACHEABLE and not query else None
        if cache_key is not None:
            data = self.cached(cache_key)
            if data is not None:
                return json_response(request, 200, data)
        from oltsim._proto import bbsim_pb2 as pb
        request_type = getattr(pb, method.input_type.name)
        message = build_request(request_type, path_args, query, set(route.placeholders))
        generation = self.commands.olt.generation
        response = getattr(self.commands, route.rpc)(message)
        body = translate.to_json_dict(response)
        if self.revision == "base":
            shaper = _BASE.get(method.output_type.name)
            if shaper is not None:
                body = shaper(body)
        data = json.dumps(body, separators=(",", ":")).encode("utf-8")
        if cache_key is not None:
            if len(self._cache) >= _CACHE_LIMIT:
                self._cache.clear()  # entries of an older generation are useless anyway
            self._cache[cache_key] = (generation, data)
        return json_response(request, 200, data)

    def flows(self, request, route: Route, path_args: dict):
        """GetFlows as JSON: `flow_count` is the number of flows selected, `flows` those of the page `offset` and
        `limit` select (all by default), written a slice per reactor turn (`ListWriter`)."""
        query = query_params(request)
        offset, limit = page_of(query)
        message = build_request(bbsim_pb2.ONURequest, path_args, query, set(route.placeholders))
        flows = [flow for flow in self.commands.select_flows(message) if flow.payload is not None]
        shape = translate.base_flow if self.revision == "base" else None

        def render(flow) -> bytes:
            body = translate.to_json_dict(translate.flow_to_pb(flow))
            return json_bytes(shape(body) if shape is not None else body)
        json_response(request, 200, b"")
        head = b'{"flow_count":%d,"flows":[' % len(flows)
        return ListWriter(request, head, page(flows, offset, limit), render, b"]}").run()

    @app.route(OPENAPI_PATH, methods=["GET"], branch=False)
    def openapi_json(self, request):
        """The OpenAPI document, built on first request (it never changes while the server runs)."""
        if self._openapi is None:
            self._openapi = json.dumps(self.openapi(), separators=(",", ":")).encode("utf-8")
        return json_response(request, 200, self._openapi)

    @app.route(EVENTS_PATH, methods=["GET"], branch=False)
    def events(self, request):
        """Server-Sent Events: every event of the simulator (`types`, `onu_serial` filter)."""
        if self.bus is None:
            raise RouteNotFound()
        query = query_params(request)
        unknown = set(query) - {"types", "onu_serial"}
        if unknown:
            raise InvalidArgument(f"unknown parameter(s) {', '.join(sorted(unknown))}; use types and onu_serial")
        types = [t for v in query.get("types", []) for t in v.split(",") if t]
        onu_serial = (query.get("onu_serial") or [""])[-1]
        request.setHeader(b"Content-Type", b"text/event-stream")
        request.setHeader(b"Cache-Control", b"no-cache")
        return EventStream(request, self.bus).start(types, onu_serial)

    @app.route(capture_rest.CAPTURE_PATH, methods=["GET"], branch=False)
    def capture(self, request):
        """The capture ring as pcapng, live (oltsim.api.v1.capture_v1, docs/capture.md)."""
        return capture_rest.serve(request, getattr(self.commands, "capture", None))

    @app.route(DATAPLANE_PATH, methods=["GET"], branch=False)
    def dataplane(self, request):
        """The data plane's counters (docs/dataplane.md); FAILED_PRECONDITION when it is off."""
        unknown = set(query_params(request))
        if unknown:
            raise InvalidArgument(f"unknown parameter(s) {', '.join(sorted(unknown))}; {DATAPLANE_PATH} takes none")
        return json_response(request, 200, json_bytes(counters_of(self.commands.dataplane)))

    @app.route("/", methods=["GET"], branch=False)
    def index(self, request):
        """Where to go from the bare address: /ui, the OpenAPI document, the docs (oltsim.api.index)."""
        links = {"ui": ui.UI_PATH, "openapi": OPENAPI_PATH, "olt": "/v1/olt", "version": "/v1/version"}
        return render_index(request, "rest-v1", links)

    @app.route(ALARMS_PATH, methods=["GET"], branch=False)
    def alarms(self, request):
        """The active alarms and the alarm history (GetAlarms; `onu_serial` filters)."""
        query = query_params(request)
        unknown = set(query) - {"onu_serial"}
        if unknown:
            raise InvalidArgument(f"unknown parameter(s) {', '.join(sorted(unknown))}; use onu_serial")
        message = oltsim_pb2.AlarmFilter(onu_serial=(query.get("onu_serial") or [""])[-1])
        return json_response(request, 200, json_bytes(translate.to_json_dict(self.commands.GetAlarms(message))))

    @app.route(SCENARIO_PATH, methods=["GET", "POST", "DELETE"], branch=False)
    def scenario(self, request):
        """Run (POST, the YAML as the body), show (GET) or stop (DELETE) a scenario (docs/scenarios.md)."""
        query = query_params(request) if request.method != b"POST" else {}
        if query:  # a POST body sent as a form fills request.args: only other methods' queries are checked
            raise InvalidArgument(f"unknown parameter(s) {', '.join(sorted(query))}")
        if request.method == b"POST":
            answer = self.commands.RunScenario(oltsim_pb2.ScenarioRequest(text=scenario_text(request),
                                                                          source="api"))
        elif request.method == b"DELETE":
            answer = self.commands.StopScenario(oltsim_pb2.Empty())
        else:
            answer = self.commands.GetScenario(oltsim_pb2.Empty())
        return json_response(request, 200, json_bytes(translate.to_json_dict(answer)))

    @app.route(ui.UI_PATH, methods=["GET"], branch=False)
    def ui_page(self, request):
        """The live view (oltsim.api.ui, docs/ui.md): a static page; the guard serves it without the token."""
        return ui.render(request)

    @app.handle_errors(Exception)
    def errors(self, request, failure):
        return render_error(request, failure, "rest-v1")


def _handle(self, request, route: Route, path_args: dict) -> bytes:
    if (route.method, route.path) not in self._routes:  # an extended-only route in the base revision
        raise RouteNotFound()
    return self.dispatch(request, route, path_args)


register_routes(V1Rest.app, ROUTES + EXTENDED_ROUTES, _handle)
