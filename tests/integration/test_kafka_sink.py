"""KafkaSink against a real Kafka-protocol broker (Tansu on loopback): messages arrive, a broker that is down from the
start or goes away mid-run never blocks `publish`, drops are counted, an outage is one log line, and publishing
resumes when the broker comes back on the same port."""
from __future__ import annotations

import asyncio

import pytest_twisted
from twisted.internet import reactor

from kafka_broker import KafkaLines, free_port, json_values, read_topic, sleep, start_broker, wait_for
from oltsim import kafka
from oltsim.kafka import KafkaSink

TOPIC = "oltsim-sink-test"





def sender_tasks() -> int:
    """aiokafka producer sender tasks running on the loop (one per producer not closed)."""
    return sum(1 for task in asyncio.all_tasks() if task.get_coro().__name__ == "_sender_routine")




@pytest_twisted.inlineCallbacks
def test_published_messages_reach_the_topic():
    """Messages published before and after the producer connects are all acknowledged and readable from the topic."""
    broker = start_broker()
    sink = KafkaSink(broker.address, reactor=reactor, name="events", client_id="BBSim-OLT-0")
    try:
        assert sink.publish(TOPIC, b'{"n":0}')  # before start: buffered
        sink.start()
        for n in range(1, 5):
            assert sink.publish(TOPIC, b'{"n":%d}' % n)
        yield wait_for(lambda: sink.sent == 5, "5 messages acknowledged")
        assert sink.connected and sink.dropped == 0
        records = yield read_topic(broker.address, TOPIC, until=lambda got: len(got) >= 5)
        assert sorted(v["n"] for v in json_values(records)) == [0, 1, 2, 3, 4]
    finally:
        yield sink.stop()
        broker.stop()


@pytest_twisted.inlineCallbacks
def test_unreachable_broker_drops_beyond_the_buffer_with_one_outage_line():
    """With nothing listening, publish never blocks: the buffer keeps `buffer` messages, the rest are dropped and
    counted, the outage is one `kafka-unreachable` line however many retries, and stop neither hangs nor fails."""
    sink = KafkaSink(f"127.0.0.1:{free_port()}", reactor=reactor, name="events", buffer=50)
    with KafkaLines() as lines:
        sink.start()
        answers = [sink.publish(TOPIC, b"x") for _ in range(500)]
        assert answers.count(True) == 50 and sink.dropped == 450
        yield wait_for(lambda: "kafka-unreachable" in lines.names, "the outage line")
        yield sleep(2.0)  # several connection attempts (back-off from 0.5 s)
        assert not sink.connected
        yield sink.stop()
    assert lines.names.count("kafka-unreachable") == 1
    assert "kafka-reachable" not in lines.names
    assert sink.sent == 0 and sink.dropped == 500  # what the buffer held is counted at stop


@pytest_twisted.inlineCallbacks
def test_broker_stopped_mid_run_then_back_on_the_same_port():
    """A broker that goes away mid-run is one outage (one line each way, with the drops); messages published after
    it is back on the same port are delivered; the producers closed on the way leave no task behind."""
    broker = start_broker()
    sink = KafkaSink(broker.address, reactor=reactor, name="events", buffer=20)
    with KafkaLines() as lines:
        try:
            sink.start()
            sink.publish(TOPIC, b'{"phase":"before"}')
            yield wait_for(lambda: sink.sent == 1, "the first message acknowledged")
            broker.stop()
            for _ in range(100):
                sink.publish(TOPIC, b'{"phase":"outage"}')
            yield wait_for(lambda: "kafka-unreachable" in lines.names, "the outage line")
            assert sink.dropped >= 80
            broker.start()
            yield wait_for(lambda: "kafka-reachable" in lines.names, "the broker back")
            sink.publish(TOPIC, b'{"phase":"after"}')
            yield wait_for(lambda: sink.pending == 0 and sink.connected, "the buffer drained")
            records = yield read_topic(broker.address, TOPIC,
                                       until=lambda got: any(b"after" in r[3] for r in got))
            assert "after" in {v["phase"] for v in json_values(records)}
            # The producers closed during the outage left no sender task behind: only the current one runs.
            yield wait_for(lambda: sender_tasks() == 1, "one aiokafka sender task", timeout=15)
        finally:
            yield sink.stop()
            broker.stop()
    assert lines.names.count("kafka-unreachable") == 1 and lines.names.count("kafka-reachable") == 1
    yield wait_for(lambda: sender_tasks() == 0, "no aiokafka sender task after stop", timeout=15)


@pytest_twisted.inlineCallbacks
def test_an_idle_sink_notices_the_outage(monkeypatch):
    """With nothing to publish the sink still checks the broker (every PROBE_INTERVAL, shortened here): probes of a
    live broker log nothing, a stopped broker shows as disconnected (one line) and its return as reconnected."""
    monkeypatch.setattr(kafka, "PROBE_INTERVAL", 0.2)
    broker = start_broker()
    sink = KafkaSink(broker.address, reactor=reactor, name="events")
    with KafkaLines() as lines:
        try:
            sink.start()
            yield wait_for(lambda: sink.connected, "the first connection")
            yield sleep(1.0)  # several probes answered
            assert lines.names == ["kafka-connected"] and sink.connected
            broker.stop()
            yield wait_for(lambda: not sink.connected, "the outage noticed without publishing")
            broker.start()
            yield wait_for(lambda: sink.connected, "the broker back")
        finally:
            yield sink.stop()
            broker.stop()
    assert lines.names == ["kafka-connected", "kafka-unreachable", "kafka-reachable"]
    assert (sink.sent, sink.dropped) == (0, 0)


@pytest_twisted.inlineCallbacks
def test_stop_gives_up_flushing_to_a_dead_broker():
    """Messages in flight to a broker that has just died do not hold up stop: it abandons them after STOP_TIMEOUT
    (one kafka-flush-abandoned line), counts them as dropped, and its Deferred fires."""
    broker = start_broker()
    sink = KafkaSink(broker.address, reactor=reactor, name="events")
    with KafkaLines() as lines:
        try:
            sink.start()
            sink.publish(TOPIC, b"first")
            yield wait_for(lambda: sink.sent == 1, "the first message acknowledged")
            broker.stop()
            for _ in range(100):
                sink.publish(TOPIC, b"late")
            yield sleep(0.1)  # the batch is handed to the producer, which waits for the dead broker
            stopped = []
            sink.stop().addBoth(stopped.append)
            yield wait_for(lambda: stopped, "stop to give up",
                           timeout=kafka.STOP_TIMEOUT + kafka.CLOSE_TIMEOUT + 5)
        finally:
            broker.stop()
    assert stopped == [None]
    assert (sink.sent, sink.dropped, sink.pending) == (1, 100, 0)
    assert "kafka-flush-abandoned" in lines.names
