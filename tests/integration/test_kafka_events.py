"""`--kafka`: the daemon publishes BBSim's events to a real Kafka-protocol broker (Tansu on loopback), read back by a
consumer that assigns itself the topic's partitions. A bring-up driven as BBR drives it arrives in BBSim's shape; a
broker that is unreachable from the start costs nothing (far more than BBSim's 100 events, no wedge, drops counted
at /metrics, one log line); a broker stopped mid-run leaves the APIs answering, and publishing resumes when it is
back on the same port."""
from __future__ import annotations

import json
from datetime import datetime

import pytest_twisted
import treq
from prometheus_client.parser import text_string_to_metric_families
from twisted.internet import reactor
from twisted.internet.threads import deferToThread

from bbr_adapter import BbrAdapter
from kafka_broker import KafkaLines, free_port, json_values, read_topic, start_broker, wait_for
from scripted_adapter import ScriptedAdapter
from test_adapter import start_oltsim, stop_oltsim

REFERENCE_KEYS = ["EventType", "OnuSerial", "OltID", "IntfID", "OnuID", "EpochTime", "Timestamp"]
PER_ONU = ["ONU-discovery-indication-sent", "ONU-activate-indication-received", "MIB-upload-received",
           "MIB-upload-done", "Flow-add-received", "ONU-authentication-done", "ONU-DHCP-ACK-received"]







@pytest_twisted.inlineCallbacks
def kafka_metrics(sim) -> dict:
    """(sample name, sink) -> value of the oltsim_kafka_* series at GET /metrics."""
    response = yield treq.get(sim.rest + "/metrics", pool=sim.pool, timeout=10)
    text = yield response.text()
    return {(s.name, s.labels["sink"]): s.value for family in text_string_to_metric_families(text)
            for s in family.samples if s.name.startswith("oltsim_kafka_")}


@pytest_twisted.inlineCallbacks
def test_bring_up_events_arrive_in_bbsims_shape(tmp_path):
    """A 1x2 OLT brought up by BBR (activation, OMCI MIB upload, EAPOL, DHCP) publishes on BBSim-OLT-0-Events, as
    client BBSim-OLT-0, OLT-enable-received then the seven events of each ONU, every record with the reference's
    keys in its order, the adapter's ONU ids, and a Timestamp that is its EpochTime in local time; /metrics counts
    them and the served v1 document names the Kafka series."""
    broker = start_broker()
    sim = start_oltsim(tmp_path, "--pon", "1", "--onu", "2", "--delay", "0", "--kafka", broker.address)
    adapter = BbrAdapter(sim.openolt, sim.grpc_v1)
    try:
        assert sim.top.event_topic == "BBSim-OLT-0-Events"
        assert sim.top.kafka_events.client_id == "BBSim-OLT-0"
        result = yield deferToThread(adapter.run, 60)
        assert result == "2 ONUs matching expected state"
        expected = 1 + 2 * len(PER_ONU)
        records = yield read_topic(broker.address, "BBSim-OLT-0-Events", until=lambda got: len(got) >= expected)
        values = json_values(records)
        assert len(values) == expected, [v["EventType"] for v in values]
        for value, (_, _, key, raw) in zip(values, records):
            assert list(value) == REFERENCE_KEYS and key is None
            assert raw == json.dumps(value, separators=(",", ":")).encode()  # compact, as Go's json.Marshal
            shown = datetime.strptime(value["Timestamp"][:26], "%Y-%m-%d %H:%M:%S.%f")  # local time
            assert int(shown.timestamp() * 1000) == value["EpochTime"]
            assert value["OltID"] == 0
        olt_level = [v for v in values if v["OnuSerial"] == ""]
        assert [(v["EventType"], v["IntfID"], v["OnuID"]) for v in olt_level] == [("OLT-enable-received", -1, -1)]
        for onu in adapter.by_serial.values():
            mine = sorted((v for v in values if v["OnuSerial"] == onu.serial), key=lambda v: v["EpochTime"])
            assert sorted(v["EventType"] for v in mine) == sorted(PER_ONU)
            assert {v["IntfID"] for v in mine} == {onu.pon}
            assert {v["OnuID"] for v in mine if v["EventType"] != "ONU-discovery-indication-sent"} == {onu.onu_id}
        metrics = yield kafka_metrics(sim)
        assert metrics[("oltsim_kafka_messages_sent_total", "events")] == expected
        assert metrics[("oltsim_kafka_messages_dropped_total", "events")] == 0
        assert metrics[("oltsim_kafka_connected", "events")] == 1
        document = yield sim.get("/v1/openapi.json")
        assert "oltsim_kafka_connected{sink}" in document["paths"]["/metrics"]["get"]["description"]
    finally:
        yield stop_oltsim(sim, adapter)
        broker.stop()


@pytest_twisted.inlineCallbacks
def test_unreachable_broker_never_wedges_the_bring_up(tmp_path):
    """With no broker at --kafka, 64 ONUs come up (well over BBSim's 100 events, after which BBSim wedges): every
    ActivateOnu answers, the sink's buffer (50 here) overflows and /metrics counts the drops, the log has one
    kafka-unreachable line and no kafka-reachable one, and the daemon still stops."""
    with KafkaLines() as lines:
        sim = start_oltsim(tmp_path, "--pon", "2", "--onu", "32", "--delay", "0",
                           "--kafka", f"127.0.0.1:{free_port()}")
        sim.top.kafka_events.buffer = 50
        adapter = ScriptedAdapter(sim.openolt)
        try:
            _, onus = yield deferToThread(adapter.bring_up, 64, 30)
            assert len(onus) == 64
            listed = yield sim.get("/v1/olt/onus")
            assert [o["InternalState"] for o in listed["items"]].count("enabled") == 64
            yield wait_for(lambda: "kafka-unreachable" in lines.names, "the outage line")
            metrics = yield kafka_metrics(sim)
            # OLT-enable, then a discovery and an activation per ONU: 129 events, 50 of them kept.
            assert metrics[("oltsim_kafka_messages_dropped_total", "events")] >= 129 - 50
            assert metrics[("oltsim_kafka_messages_sent_total", "events")] == 0
            assert metrics[("oltsim_kafka_connected", "events")] == 0
        finally:
            yield stop_oltsim(sim, adapter)
    assert lines.names.count("kafka-unreachable") == 1 and "kafka-reachable" not in lines.names


@pytest_twisted.inlineCallbacks
def test_broker_stopped_mid_run_then_back(tmp_path):
    """The broker goes away after a bring-up: REST keeps answering and an ONU powered off and on is served; once the
    broker is back on the same port (empty: memory storage), the next events are published again."""
    broker = start_broker()
    sim = start_oltsim(tmp_path, "--pon", "1", "--onu", "2", "--delay", "0", "--kafka", broker.address)
    adapter = ScriptedAdapter(sim.openolt)
    sink = sim.top.kafka_events
    topic = sim.top.event_topic
    try:
        yield deferToThread(adapter.bring_up, 2)
        yield wait_for(lambda: sink.sent >= 5, "the bring-up's 5 events acknowledged")
        broker.stop()
        for serial in ("BBSM00000001", "BBSM00000002"):
            code, _ = yield sim.request("DELETE", f"/v1/olt/onus/{serial}")
            assert code == 200
            code, _ = yield sim.request("POST", f"/v1/olt/onus/{serial}")
            assert code == 200
        listed = yield sim.get("/v1/olt/onus")
        assert len(listed["items"]) == 2
        yield wait_for(lambda: not sink.connected, "the outage noticed")
        broker.start()
        yield wait_for(lambda: sink.connected, "the broker back")
        # New events after the return: an ONU powered off and on is discovered again.
        mark = int(reactor.seconds() * 1000)
        code, _ = yield sim.request("DELETE", "/v1/olt/onus/BBSM00000001")
        assert code == 200
        code, _ = yield sim.request("POST", "/v1/olt/onus/BBSM00000001")
        assert code == 200

        def after_return(value: dict) -> bool:
            return value["OnuSerial"] == "BBSM00000001" and value["EpochTime"] >= mark
        records = yield read_topic(broker.address, topic, until=lambda got: any(map(after_return, json_values(got))))
        found = [v["EventType"] for v in json_values(records) if after_return(v)]
        assert found == ["ONU-discovery-indication-sent"]
        metrics = yield kafka_metrics(sim)
        assert metrics[("oltsim_kafka_connected", "events")] == 1
    finally:
        yield stop_oltsim(sim, adapter)
        broker.stop()
