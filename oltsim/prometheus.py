"""Prometheus metrics of one simulated OLT, served at ``GET /metrics`` on the v1 REST listener.

Each :class:`Metrics` has its own ``CollectorRegistry`` (never prometheus_client's global one), so two simulators
in one process, or one per test, never mix their numbers. Counters are bumped where requests are answered (REST:
:class:`CountingResource`; gRPC: :class:`AioMetricsInterceptor`) and from model events; everything read from the model
(ONUs by state, indications sent and dropped, timers pending) is read at scrape time, on the reactor thread that
renders the response.

Series (all prefixed ``oltsim_``):

- ``onus{state}``: ONUs in each ONU state (every state is listed, 0 included)
- ``requests_total{surface,status}``: requests answered; ``surface`` is rest-v1, rest-v0, grpc-v1, grpc-v0,
  openolt, sadis or dmi; ``status`` the HTTP code for REST and the gRPC status name (OK, NOT_FOUND, ...) for gRPC
- ``indications_sent_total`` / ``indications_dropped_total``: OpenOLT indications queued to the adapter's stream,
  and dropped (no adapter, or its stream full)
- ``omci_messages_total{direction}``: ``request`` (OmciMsgOut accepted from the adapter) and ``indication``
  (OMCI frames from the ONUs to the adapter: responses and autonomous notifications)
- ``timers_pending``: delayed calls the OLT and its ONUs hold
- ``olt_info{serial,olt_id,version}``: 1, to join the series of many OLTs by serial
- ``kafka_messages_sent_total{sink}`` / ``kafka_messages_dropped_total{sink}`` / ``kafka_connected{sink}``: per Kafka
  sink (``events``: BBSim's events; ``dmi``: DMI's message bus), messages the broker acknowledged, messages dropped
  (buffer full while the broker is away or slow, a batch that failed, left unsent at stop), and 1 while the
  producer is connected; present only when a sink exists (:mod:`oltsim.kafka`)
"""
from __future__ import annotations

import asyncio
from typing import Any

import grpc
from prometheus_client import CollectorRegistry, Counter
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.exposition import choose_encoder
from twisted.web.resource import Resource, getChildForRequest

from oltsim import __version__
from oltsim.model import events
from oltsim.model.onu import ONU_MACHINE
from oltsim.serving.onloop import handler_with
from oltsim.status import error_response

__all__ = ["AioMetricsInterceptor", "CountingResource", "Metrics", "MetricsResource", "counted", "with_metrics"]

#: The OpenOLT method that carries OMCI requests from the adapter to an ONU.
OMCI_REQUEST_METHOD = "/openolt.Openolt/OmciMsgOut"
#: The path of the exposition on the v1 REST listener.
METRICS_PATH = [b"metrics"]


class _ModelCollector:
    """Reads the model when Prometheus scrapes: ONUs by state, indications, timers, identity."""

    def __init__(self, olt, hub) -> None:
        self.olt = olt
        self.hub = hub

    def describe(self):
        # Without describe(), registering would call collect() once to learn the names.
        return [GaugeMetricFamily("oltsim_onus", "ONUs by state", labels=["state"]),
                CounterMetricFamily("oltsim_indications_sent", "OpenOLT indications queued to the adapter"),
                CounterMetricFamily("oltsim_indications_dropped",
                                    "OpenOLT indications dropped (no adapter, or its stream full)"),
                GaugeMetricFamily("oltsim_timers_pending", "Delayed calls held by the OLT and its ONUs"),
                GaugeMetricFamily("oltsim_olt_info", "The simulated OLT", labels=["serial", "olt_id", "version"])]

    def collect(self):
        by_state = dict.fromkeys(sorted(ONU_MACHINE.states), 0)
        for onu in self.olt.onus:
            by_state[onu.state] = by_state.get(onu.state, 0) + 1
        onus = GaugeMetricFamily("oltsim_onus", "ONUs by state", labels=["state"])
        for state, count in by_state.items():
            onus.add_metric([state], count)
        yield onus
        if self.hub is not None:
            yield CounterMetricFamily("oltsim_indications_sent", "OpenOLT indications queued to the adapter",
                                      value=self.hub.sent)
            yield CounterMetricFamily("oltsim_indications_dropped",
                                      "OpenOLT indications dropped (no adapter, or its stream full)",
                                      value=self.hub.dropped)
        yield GaugeMetricFamily("oltsim_timers_pending", "Delayed calls held by the OLT and its ONUs",
                                value=self.olt.pending_calls())
        info = GaugeMetricFamily("oltsim_olt_info", "The simulated OLT", labels=["serial", "olt_id", "version"])
        info.add_metric([self.olt.serial, str(self.olt.id), __version__], 1)
        yield info


class _KafkaCollector:
    """Reads the Kafka sinks when Prometheus scrapes: messages sent and dropped, connected, by sink name."""

    def __init__(self) -> None:
        #: name -> sink: a sink made again under the same name (DMI's message bus on each SetMsgBusEndpoint)
        #: replaces the previous one, so each name is one series
        self.sinks: dict = {}

    def _families(self):
        return (CounterMetricFamily("oltsim_kafka_messages_sent", "Messages the Kafka broker acknowledged, by sink",
                                    labels=["sink"]),
                CounterMetricFamily("oltsim_kafka_messages_dropped", "Messages not delivered to Kafka (buffer full "
                                    "while the broker is away or slow, failed batch, left at stop), by sink",
                                    labels=["sink"]),
                GaugeMetricFamily("oltsim_kafka_connected", "1 while the sink's Kafka producer is connected",
                                  labels=["sink"]))

    def describe(self):
        return list(self._families())

    def collect(self):
        sent, dropped, connected = self._families()
        for sink in self.sinks.values():
            sent.add_metric([sink.name], sink.sent)
            dropped.add_metric([sink.name], sink.dropped)
            connected.add_metric([sink.name], 1 if sink.connected else 0)
        return [sent, dropped, connected]


class Metrics:
    """The metrics of one simulated OLT in their own registry; build one per service (makeService).

    Subscribes to the OLT's events to count OMCI indications; safe to bump from gRPC worker threads
    (prometheus_client counters are thread-safe).
    """

    def __init__(self, olt, hub=None) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self.requests = Counter("oltsim_requests", "Requests answered, by surface and status (HTTP code for REST, "
                                "gRPC status name for gRPC)", ["surface", "status"], registry=self.registry)
        self.omci = Counter("oltsim_omci_messages", "OMCI messages: request (adapter to ONU, OmciMsgOut) and "
                            "indication (ONU to adapter)", ["direction"], registry=self.registry)
        # Children resolved once: a labels() lookup costs more than the increment, on a path taken per OMCI call.
        self.omci_requests = self.omci.labels("request")  # both present (at 0) before the first message
        self._omci_indications = self.omci.labels("indication")
        self._request_counters: dict[tuple[str, str], Any] = {}
        self.registry.register(_ModelCollector(olt, hub))
        self._kafka: _KafkaCollector | None = None
        olt.subscribe(self._on_event)

    def add_kafka_sink(self, sink) -> None:
        """Show ``sink`` (an :class:`oltsim.kafka.KafkaSink`: ``name``, ``sent``, ``dropped``, ``connected``) in the
        ``oltsim_kafka_*`` series, replacing a sink of the same name; their first sink registers them."""
        if self._kafka is None:
            self._kafka = _KafkaCollector()
            self.registry.register(self._kafka)
        self._kafka.sinks[sink.name] = sink

    def _on_event(self, event) -> None:
        if isinstance(event, events.OmciIndication):
            self._omci_indications.inc()

    def count_request(self, surface: str, status: str, count: int = 1) -> None:
        """``count`` (one) answered requests on ``surface`` with ``status``."""
        counter = self._request_counters.get((surface, status))
        if counter is None:  # a race between threads only resolves the same child twice
            counter = self._request_counters[(surface, status)] = self.requests.labels(surface, status)
        counter.inc(count)

    def exposition(self, accept: str | None = None) -> tuple[bytes, str]:
        """(body, content type) of a scrape: the text format, or OpenMetrics when ``accept`` asks for it."""
        encoder, content_type = choose_encoder(accept or "")
        return encoder(self.registry), content_type


# ---- REST ---------------------------------------------------------------------------------------------------


class MetricsResource(Resource):
    """``GET /metrics`` (and HEAD): the Prometheus exposition of one :class:`Metrics`."""

    isLeaf = True

    def __init__(self, metrics: Metrics) -> None:
        super().__init__()
        self.metrics = metrics

    def render(self, request) -> bytes:
        if request.method not in (b"GET", b"HEAD"):
            request.setHeader(b"Allow", b"GET, HEAD")
            return error_response(
                request, 405, grpc.StatusCode.UNIMPLEMENTED,
                f"method {request.method.decode('latin-1')} not allowed on /metrics; allowed: GET, HEAD")
        accept = request.getHeader(b"accept")
        body, content_type = self.metrics.exposition(accept.decode("latin-1") if accept else None)
        request.setHeader(b"Content-Type", content_type.encode("ascii"))
        return body


class _WithMetrics(Resource):
    """``/metrics`` to the metrics resource, every other path to the API resource (a leaf, as Klein's is)."""

    isLeaf = True

    def __init__(self, api: Resource, metrics: Resource) -> None:
        super().__init__()
        self.api = api
        self.metrics = metrics

    def render(self, request) -> Any:
        if request.postpath == METRICS_PATH:
            return self.metrics.render(request)
        return getChildForRequest(self.api, request).render(request)


def with_metrics(api: Resource, metrics: Metrics) -> Resource:
    """The v1 REST resource with ``/metrics`` added (Klein's routes are untouched)."""
    return _WithMetrics(api, MetricsResource(metrics))


class CountingResource(Resource):
    """Serves ``wrapped`` and counts every answered request in ``metrics`` under ``surface`` and the HTTP status
    sent (a wrapper rather than a Site, so it composes with any Site). A leaf, as Klein's resource is."""

    isLeaf = True

    def __init__(self, wrapped: Resource, metrics: Metrics, surface: str) -> None:
        super().__init__()
        self.wrapped = wrapped
        self.metrics = metrics
        self.surface = surface

    def render(self, request) -> Any:
        # Fires on finish, or errbacks if the client went away first; either way the status was decided.
        request.notifyFinish().addBoth(lambda _: self.metrics.count_request(self.surface, str(request.code)))
        return getChildForRequest(self.wrapped, request).render(request)


def counted(resource: Resource, metrics: Metrics | None, surface: str) -> Resource:
    """``resource`` with its requests counted, or unchanged without metrics."""
    return resource if metrics is None else CountingResource(resource, metrics, surface)


# ---- gRPC ---------------------------------------------------------------------------------------------------


class AioMetricsInterceptor(grpc.aio.ServerInterceptor):
    """Counts every gRPC call answered on a server by the status it ended with (a stream when it ends), and OMCI
    requests accepted on the OpenOLT server, around the coroutine handlers of a server on the reactor's loop (see
    :mod:`oltsim.serving.onloop`). Put it first, so calls refused by the token interceptor count too."""

    def __init__(self, metrics: Metrics, surface: str) -> None:
        self.metrics = metrics
        self.surface = surface

    def record(self, method: str, code: grpc.StatusCode, count: int = 1) -> None:
        """``count`` (one) calls of ``method`` answered with ``code``: what the native engine calls for the calls it
        answers inline (oltsim.serving.nativeserver, one call per method and batch), where no interceptor chain runs."""
        self.metrics.count_request(self.surface, code.name, count)
        if method == OMCI_REQUEST_METHOD and code is grpc.StatusCode.OK:
            self.metrics.omci_requests.inc(count)

    async def intercept_service(self, continuation, handler_call_details):
        handler = await continuation(handler_call_details)
        if handler is None:
            return None
        method = handler_call_details.method
        record = self.record

        def settle(context, error: BaseException | None) -> None:
            if isinstance(error, (asyncio.CancelledError, GeneratorExit)):
                record(method, grpc.StatusCode.CANCELLED)
            else:
                record(method, _aio_code(context, grpc.StatusCode.OK if error is None else grpc.StatusCode.UNKNOWN))

        def wrap(behaviour, response_streaming: bool):
            if not response_streaming:
                async def counted(request, context):
                    try:
                        response = await behaviour(request, context)
                    except BaseException as error:
                        settle(context, error)
                        raise
                    settle(context, None)
                    return response
                return counted

            async def counted_stream(request, context):
                try:
                    async for item in behaviour(request, context):
                        yield item
                except BaseException as error:
                    settle(context, error)
                    raise
                settle(context, None)
            return counted_stream

        return handler_with(handler, wrap)


def _aio_code(context, default: grpc.StatusCode) -> grpc.StatusCode:
    # grpc.aio's context.code() is the status set by abort/set_code, or None before one is.
    code = context.code()
    return code if isinstance(code, grpc.StatusCode) else default
