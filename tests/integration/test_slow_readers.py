"""Slow readers cost a bounded amount and are told: the real daemon on loopback, raw HTTP/2 and socket
readers that stop reading beside ordinary readers. Behaviour only: every wait is bounded, nothing asserts time or
memory (tests/support/slow_readers.py measures those)."""
from __future__ import annotations

import http.client
import re
import time

import grpc
from voltha_protos import openolt_pb2, openolt_pb2_grpc

from tests.support.slow_readers import GrpcReader, SseReader, resume, sse_outcome, stalled_grpc, stalled_sse
from test_daemon import daemon  # noqa: F401 - the fixture

#: bounded storms: at most this many rounds of power cycles (or alarms) to get the stalled readers given up on
ROUNDS = 200


def rest(port: int, method: str, path: str, connection: http.client.HTTPConnection) -> int:
    connection.request(method, path)
    response = connection.getresponse()
    response.read()
    return response.status


def wait_ready(process, marker: str, tries: int = 600) -> None:
    for _ in range(tries):
        if marker in process.log:
            return
        assert process.process.poll() is None, process.log
        time.sleep(0.1)
    raise AssertionError(f"no {marker} in the log:\n{process.log[-3000:]}")


def test_stalled_event_readers_are_ended_and_told_while_reading_ones_get_every_event(daemon):
    """A StreamEvents reader and an SSE reader that stop reading end up ended: the gRPC one gets RESOURCE_EXHAUSTED
    (behind what it had not read) when it reads again, the SSE one a last `stream-ended` event and the end of its
    connection, and each is logged with its peer; a reading StreamEvents client and a reading SSE client on the same
    server get every event (no sequence missed, no drop reported) and stay open."""
    process = daemon("--pon", "1", "--onu", "16", "--delay", "0", "--adapter", "builtin")
    process.wait_serving()
    wait_ready(process, "builtin-adapter-all-ready")
    ports = process.ports
    stalled_stream = stalled_grpc(ports["grpc-v1"], "/oltsim.v1.Oltsim/StreamEvents", 1024)
    stalled_socket = stalled_sse(ports["rest-v1"], 4096)
    grpc_reader, sse_reader = GrpcReader(ports["grpc-v1"]), SseReader(ports["rest-v1"])
    grpc_reader.start()
    sse_reader.start()
    connection = http.client.HTTPConnection("127.0.0.1", ports["rest-v1"], timeout=30)
    serials = [f"BBSM0000{onu:04x}" for onu in range(1, 17)]
    try:
        # One ONU power-cycled at a time (each brought up again by the built-in adapter: a few hundred events), a
        # pace the reading clients keep up with.
        for round_ in range(ROUNDS * 2):
            if len(re.findall(r"event-reader-too-slow reader=(?:grpc-StreamEvents|sse)", process.log)) >= 2:
                break
            serial = serials[round_ % len(serials)]
            assert rest(ports["rest-v1"], "DELETE", f"/v1/olt/onus/{serial}", connection) == 200
            assert rest(ports["rest-v1"], "POST", f"/v1/olt/onus/{serial}", connection) == 200
            stalled_stream.pump(0.0)  # SETTINGS and PING answered, never a WINDOW_UPDATE
            time.sleep(0.2)
        log = process.log
        assert re.search(r"event-reader-too-slow reader=grpc-StreamEvents peer=ipv4:127\.0\.0\.1:\d+ dropped=\d+",
                         log), log[-3000:]
        assert re.search(r"event-reader-too-slow reader=sse peer=127\.0\.0\.1:\d+ dropped=\d+", log), log[-3000:]

        resume(stalled_stream, seconds=5.0)
        assert stalled_stream.counts["RESOURCE_EXHAUSTED"] == 1, stalled_stream.counts
        assert not stalled_stream.open_streams
        outcome, _, ended = sse_outcome(stalled_socket)
        assert (outcome, ended) == ("EOF", 1)

        for reader in (grpc_reader, sse_reader):
            assert reader.events > 0 and reader.dropped == 0 and reader.gaps == 0, vars(reader)
            assert reader.ended == "" and reader.is_alive()
    finally:
        connection.close()
        stalled_stream.close()
        stalled_socket.close()
        grpc_reader.stop()
        sse_reader.stop()


def test_an_adapter_that_stops_reading_indications_leaves_the_olt_serving(daemon):
    """An EnableIndication reader that stops reading (a raw HTTP/2 stream never credited) while ONU alarms and power
    cycles pile indications up: the indications beyond its bounded queue are dropped and counted
    (`indications-dropped reason=stream-full`), and the OLT keeps answering HeartbeatCheck and GetDeviceInfo on the
    OpenOLT port and REST on its own."""
    process = daemon("--pon", "2", "--onu", "32", "--delay", "0")
    process.wait_serving()
    ports = process.ports
    stalled = stalled_grpc(ports["openolt"], "/openolt.Openolt/EnableIndication", 1024)
    connection = http.client.HTTPConnection("127.0.0.1", ports["rest-v1"], timeout=30)
    channel = grpc.insecure_channel(f"127.0.0.1:{ports['openolt']}")
    try:
        stub = openolt_pb2_grpc.OpenoltStub(channel)
        serials = [onu["SerialNumber"] for onu in process.rest_get("/v1/olt/onus")[1]["items"]]
        for round_ in range(ROUNDS):
            if "indications-dropped reason=stream-full" in process.log:
                break
            for serial in serials:
                for state in ("on", "off"):
                    status = rest(ports["rest-v1"], "POST", f"/v1/olt/onus/{serial}/alarms/ONU_ALARM_LOS/{state}",
                                  connection)
                    assert status == 200, (serial, status)
            stalled.pump(0.0)
            assert stub.HeartbeatCheck(openolt_pb2.Empty(), timeout=5).heartbeat_signature
        assert "indications-dropped reason=stream-full" in process.log, process.log[-3000:]
        assert stub.HeartbeatCheck(openolt_pb2.Empty(), timeout=5).heartbeat_signature
        assert stub.GetDeviceInfo(openolt_pb2.Empty(), timeout=5).pon_ports == 2
        assert process.rest_get("/v1/olt")[0] == 200
        assert stalled.open_streams  # the adapter's stream stays: it may read again
    finally:
        channel.close()
        connection.close()
        stalled.close()
