"""Kafka in memory: the sink's bounded buffer and address forms (no broker, no loop), and its series at /metrics."""
from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families
from twisted.internet.task import Clock

from oltsim import kafka
from oltsim.kafka import KafkaSink
from oltsim.prometheus import Metrics

from conftest import Sim

TOPIC = "t"


def kafka_samples(metrics: Metrics) -> dict[tuple[str, str], float]:
    """The oltsim_kafka_* samples of a scrape, keyed by (sample name, sink)."""
    text, _ = metrics.exposition()
    return {(s.name, s.labels["sink"]): s.value
            for family in text_string_to_metric_families(text.decode("utf-8"))
            for s in family.samples if s.name.startswith("oltsim_kafka_")}


def test_buffer_bound():
    """publish only appends to a bounded buffer: beyond `buffer` it answers False and counts the drop, and a stopped
    sink counts what it still held and drops everything it is given afterwards."""
    sink = KafkaSink("127.0.0.1:9", reactor=Clock(), name="events", buffer=3)
    assert [sink.publish(TOPIC, b"m") for _ in range(5)] == [True, True, True, False, False]
    assert (sink.pending, sink.dropped, sink.sent) == (3, 2, 0)
    done = []
    sink.stop().addCallback(done.append)
    assert done == [None]
    assert (sink.pending, sink.dropped) == (0, 5)
    assert sink.publish(TOPIC, b"m") is False and sink.dropped == 6


def test_a_buffer_must_hold_something():
    """A sink with no room at all is refused when built, not discovered when every message is dropped."""
    try:
        KafkaSink("127.0.0.1:9092", reactor=Clock(), name="events", buffer=0)
    except ValueError as exc:
        assert "at least one" in str(exc)
    else:
        raise AssertionError("buffer=0 accepted")


def test_addresses():
    """Address forms: host:port, BBSim's :9092 (this host), [IPv6]:port, a comma list; clear errors otherwise."""
    assert kafka.parse_address("kafka:9092") == ["kafka:9092"]
    assert kafka.parse_address(":9092") == ["localhost:9092"]
    assert kafka.parse_address("[::1]:9093, 10.0.0.1:9092") == ["[::1]:9093", "10.0.0.1:9092"]
    for bad in ("", "kafka", "kafka:0", "kafka:port", "::1:9092", "[::1]", "kafka:70000"):
        try:
            kafka.parse_address(bad)
        except ValueError as exc:
            assert "Kafka address" in str(exc)
        else:
            raise AssertionError(f"{bad!r} accepted")


def test_metrics_show_each_sink_by_name():
    """/metrics has no Kafka series until a sink exists; then sent, dropped and connected per sink name, read at
    scrape time."""
    sim = Sim()
    metrics = Metrics(sim.olt, sim.hub)
    assert kafka_samples(metrics) == {}
    events = KafkaSink("127.0.0.1:9", reactor=Clock(), name="events", metrics=metrics, buffer=2)
    dmi = KafkaSink("127.0.0.1:9", reactor=Clock(), name="dmi", metrics=metrics, buffer=2)
    for _ in range(5):
        events.publish(TOPIC, b"m")
    dmi.sent, dmi.connected = 7, True  # what the drain task records once the broker acknowledges
    assert kafka_samples(metrics) == {
        ("oltsim_kafka_messages_sent_total", "events"): 0, ("oltsim_kafka_messages_dropped_total", "events"): 3,
        ("oltsim_kafka_connected", "events"): 0,
        ("oltsim_kafka_messages_sent_total", "dmi"): 7,
        ("oltsim_kafka_messages_dropped_total", "dmi"): 0, ("oltsim_kafka_connected", "dmi"): 1}


def test_a_bad_address_is_a_configuration_error():
    """With events on, a Kafka address that is not host:port stops the start with a message naming the key; with
    events off it is not looked at; BBSim's :9092 is accepted."""
    from oltsim.config import ConfigError, load_settings

    try:
        load_settings({"enable_events": True, "kafka_address": "kafka"}, None)
    except ConfigError as exc:
        assert exc.setting == "kafka_address" and "host:port" in str(exc)
    else:
        raise AssertionError("kafka_address 'kafka' accepted")
    assert load_settings({"enable_events": False, "kafka_address": "kafka"}, None).kafka_address == "kafka"
    assert load_settings({"enable_events": True, "kafka_address": ":9092"}, None).kafka_address == ":9092"


def test_a_sink_made_again_under_its_name_replaces_the_previous_one():
    """DMI makes a new sink on each SetMsgBusEndpoint: /metrics shows the current one, once, not a duplicate series."""
    metrics = Metrics(Sim().olt)
    first = KafkaSink("127.0.0.1:9", reactor=Clock(), name="dmi", metrics=metrics, buffer=1)
    first.publish(TOPIC, b"m")
    first.publish(TOPIC, b"m")
    assert kafka_samples(metrics)[("oltsim_kafka_messages_dropped_total", "dmi")] == 1
    KafkaSink("127.0.0.2:9", reactor=Clock(), name="dmi", metrics=metrics)
    assert kafka_samples(metrics)[("oltsim_kafka_messages_dropped_total", "dmi")] == 0
    text, _ = metrics.exposition()
    assert text.decode().count('oltsim_kafka_connected{sink="dmi"}') == 1


def test_the_v1_document_lists_the_kafka_series_under_metrics():
    """The daemon's v1 OpenAPI document has GET /metrics (served beside the routes) naming the Kafka series; a v1
    server without /metrics does not document it."""
    from oltsim.api.v1.rest_v1 import openapi_document

    document = openapi_document(metrics=True)
    operation = document["paths"]["/metrics"]["get"]
    assert list(operation["responses"]["200"]["content"]) == ["text/plain"]
    for series in ("oltsim_kafka_messages_sent_total{sink}", "oltsim_kafka_messages_dropped_total{sink}",
                   "oltsim_kafka_connected{sink}"):
        assert series in operation["description"]
    assert "/metrics" not in openapi_document()["paths"]


def test_outage_reasons_are_short():
    """An outage's reason names the error once, whether or not its text already starts with its class name."""
    from aiokafka.errors import KafkaConnectionError

    assert kafka._reason(KafkaConnectionError("Unable to bootstrap from [...]")) == \
        "KafkaConnectionError: Unable to bootstrap from [...]"
    assert kafka._reason(ConnectionRefusedError(111, "Connection refused")) == \
        "ConnectionRefusedError: [Errno 111] Connection refused"
    assert kafka._reason(TimeoutError()) == "timed out"


def test_what_publish_refuses():
    """A value that is not bytes is the caller's bug (TypeError, nothing counted); a value above MAX_MESSAGE_BYTES
    is dropped and counted at once instead of failing a whole batch later."""
    sink = KafkaSink("127.0.0.1:9", reactor=Clock(), name="events")
    for value, key in (("text", None), (b"ok", "key")):
        try:
            sink.publish(TOPIC, value, key)
        except TypeError as exc:
            assert "bytes" in str(exc)
        else:
            raise AssertionError(f"{value!r}, {key!r} accepted")
    assert sink.dropped == 0 and sink.pending == 0
    assert sink.publish(TOPIC, bytes(kafka.MAX_MESSAGE_BYTES + 1)) is False
    assert sink.publish(TOPIC, bytes(kafka.MAX_MESSAGE_BYTES), b"k") is True
    assert (sink.dropped, sink.pending) == (1, 1)
