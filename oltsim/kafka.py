"""Publishing to a Kafka broker without ever blocking the simulator (BBSim's events, DMI's message bus).

The client is aiokafka, run on the reactor's own asyncio loop: the daemon runs on Twisted's asyncio reactor
(:mod:`oltsim.serving.onloop`), so one asyncio task of that loop drains the buffer and talks to the broker. There is no
thread and no poll timer. confluent-kafka would have needed a reactor timer polling librdkafka, which runs threads of
its own and logs on its own.

:class:`KafkaSink` is the whole contract: ``publish`` appends to a bounded buffer and returns at once (False when
the message was dropped, counted in ``dropped``); the task sends what the buffer holds in batches. A broker that is
down or slow costs the simulator nothing: the producer is created when the task first runs and re-created after a
failure with exponential back-off (capped), the buffer keeps the oldest ``buffer`` messages meanwhile and drops the
rest, and the log gets one ``kafka-unreachable`` line when an outage starts and one ``kafka-reachable`` line (with
the number dropped) when it ends, never a line per message. ``stop`` flushes for a short while, then gives up.

BBSim (sarama) instead queues its events in a channel of 100 that is drained only once its producer has connected,
so with the broker unreachable it wedges after 100 events.
"""
from __future__ import annotations

import asyncio
import logging
from collections import deque

from twisted.application.service import Service
from twisted.internet.defer import Deferred, succeed

from oltsim.kafkaaddress import DEFAULT_PORT, parse_address  # noqa: F401 - both part of this module's API
from oltsim.logs import logger
from oltsim.serving.onloop import check_asyncio_reactor

__all__ = ["DEFAULT_BUFFER", "KafkaSink", "SinkService", "parse_address"]

log = logger("oltsim.kafka")

#: Messages a sink holds while the broker is away or slow; beyond, new ones are dropped (and counted).
DEFAULT_BUFFER = 1000
#: The largest message published (aiokafka's max_request_size, less room for the record's framing); larger ones
#: are dropped and counted rather than failing a batch, which would look like an outage.
MAX_MESSAGE_BYTES = 1_000_000
#: Messages handed to the producer at once (one wait for their acknowledgements).
BATCH = 200
#: Seconds a connection attempt (bootstrap: metadata from the broker) may take.
CONNECT_TIMEOUT = 5.0
#: Seconds a batch may take to be acknowledged before the broker counts as unreachable.
SEND_TIMEOUT = 10.0
#: aiokafka's own request timeout (ms): below SEND_TIMEOUT so that its errors, not ours, usually say why.
REQUEST_TIMEOUT_MS = 5000
#: Back-off between connection attempts: doubled after each failure up to BACKOFF_MAX seconds.
BACKOFF_INITIAL = 0.5
BACKOFF_MAX = 30.0
#: Seconds of silence after which an idle sink asks the broker for its metadata, so that an outage shows (in
#: ``connected`` and the log) even while nothing is published.
PROBE_INTERVAL = 10.0
#: Seconds ``stop`` waits for the buffer to be flushed and the producer closed, then gives up (and waits at most
#: CLOSE_TIMEOUT more for the task to end): oltsim stops within 2 s of SIGTERM, broker or not.
STOP_TIMEOUT = 1.0
#: Seconds each step of ending a producer that did not close by itself may take.
CLOSE_TIMEOUT = 0.5
#: Seconds a producer's own stop gets beyond its request timeout (by then a dead broker's batches have expired).
CLOSE_GRACE = 2.0


def _reason(exc: BaseException) -> str:
    """A short text for why the broker could not be used."""
    if isinstance(exc, (asyncio.TimeoutError, TimeoutError)):
        return "timed out"
    text, name = str(exc).strip(), type(exc).__name__
    if not text:
        return name
    return text if text.startswith(name) else f"{name}: {text}"  # aiokafka's errors start with their name


def _quiet_aiokafka() -> None:
    """aiokafka logs an error per failed connection attempt and request through the standard library (which would
    print them on stderr, a line per retry): its loggers are turned down, the sink reports outages itself."""
    logging.getLogger("aiokafka").setLevel(logging.CRITICAL)


class KafkaSink:
    """A bounded, never-blocking Kafka publisher on the reactor's asyncio loop (see the module docstring).

    ``name`` labels its metrics and log lines (``events``, ``dmi``); ``metrics`` (an
    :class:`oltsim.prometheus.Metrics`) shows ``sent``, ``dropped`` and ``connected`` at ``/metrics``.
    """

    def __init__(self, address: str, *, reactor, name: str, metrics=None, buffer: int = DEFAULT_BUFFER,
                 client_id: str | None = None):
        if buffer < 1:
            raise ValueError(f"a Kafka sink's buffer must hold at least one message (got {buffer})")
        self.address = address
        self.servers = parse_address(address)
        self.reactor = reactor
        self.name = name
        self.client_id = client_id or f"oltsim-{name}"
        self.buffer = buffer
        #: Messages acknowledged by the broker, and messages dropped (buffer full, failed batch, left at stop).
        self.sent = 0
        self.dropped = 0
        #: True while the producer is connected (set when it connects, cleared when a send or connect fails).
        self.connected = False
        self._queue: deque = deque()
        self._producer = None
        self._task: asyncio.Task | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._wake: asyncio.Event | None = None
        self._stop_event: asyncio.Event | None = None
        self._stopping = False
        self._ever_connected = False
        self._outage_dropped: int | None = None
        self._full = False
        if metrics is not None:
            metrics.add_kafka_sink(self)

    # ---- reactor side ----------------------------------------------------------------------

    def publish(self, topic: str, value: bytes, key: bytes | None = None) -> bool:
        """Queue ``value`` for ``topic``; never blocks nor waits for the broker. False: dropped (buffer full, or the
        sink stopped, or larger than MAX_MESSAGE_BYTES), and counted in ``dropped``. TypeError for a value or key
        that is not bytes (a caller's bug, not an outage)."""
        if not isinstance(value, (bytes, bytearray)) or not isinstance(key, (bytes, bytearray, type(None))):
            raise TypeError(f"Kafka messages are bytes (got value {type(value).__name__}, key {type(key).__name__})")
        if len(value) > MAX_MESSAGE_BYTES:
            self.dropped += 1
            log.debug("kafka-message-too-large sink={sink} size={size}", sink=self.name, size=len(value))
            return False
        if self._stopping or len(self._queue) >= self.buffer:
            self.dropped += 1
            if not self._full and not self._stopping:
                self._full = True
                if self._outage_dropped is None:  # during an outage its own lines say it all
                    log.warn("kafka-buffer-full sink={sink} address={address} buffer={buffer} (the broker is slower "
                             "than the simulator: new messages are dropped and counted until the buffer drains)",
                             sink=self.name, address=self.address, buffer=self.buffer)
            return False
        self._queue.append((topic, value, key))
        if self._wake is not None:
            self._wake.set()
        return True

    @property
    def pending(self) -> int:
        """Messages in the buffer, not yet handed to the broker."""
        return len(self._queue)

    def start(self) -> None:
        """Start the task that drains the buffer (on the reactor's asyncio loop); no-op when running."""
        if self._task is not None and not self._task.done():
            return
        _quiet_aiokafka()
        self._loop = check_asyncio_reactor(self.reactor)
        self._stopping = False
        self._wake = asyncio.Event()
        self._stop_event = asyncio.Event()
        if self._queue:
            self._wake.set()
        self._task = self._loop.create_task(self._run())

    def stop(self) -> Deferred:
        """Stop: flush the buffer for at most STOP_TIMEOUT seconds, close the producer, count what is left as
        dropped. The Deferred fires (never fails) once done; it never waits longer than that."""
        self._stopping = True
        task = self._task
        if task is None or task.done():
            self._drop_left()
            return succeed(None)
        self._wake.set()
        self._stop_event.set()
        return Deferred.fromFuture(self._loop.create_task(self._stop(task)))

    async def _stop(self, task: asyncio.Task) -> None:
        before, abandoned = self.dropped, False
        try:
            await asyncio.wait_for(asyncio.shield(task), STOP_TIMEOUT)
        except (asyncio.TimeoutError, TimeoutError):
            abandoned = True
            task.cancel()
            try:
                await asyncio.wait_for(asyncio.shield(task), CLOSE_TIMEOUT)
            except BaseException:
                pass
        except Exception:
            log.failure("kafka-stop-failed sink={sink}", sink=self.name)
        finally:
            self._drop_left()
            self.connected = False
        if abandoned:
            log.warn("kafka-flush-abandoned sink={sink} address={address} dropped={dropped} (not delivered within "
                     "{timeout:g} s of stopping)", sink=self.name, address=self.address,
                     dropped=self.dropped - before, timeout=STOP_TIMEOUT)

    def _drop_left(self) -> None:
        self.dropped += len(self._queue)
        self._queue.clear()

    # ---- the task --------------------------------------------------------------------------

    async def _run(self) -> None:
        """Connect (again, with back-off, after a failure) and send the buffer in batches until stopped."""
        backoff = BACKOFF_INITIAL
        try:
            while True:
                try:
                    if self._producer is None:
                        if self._stopping:
                            return
                        await self._connect()
                        backoff = BACKOFF_INITIAL
                    if not self._queue:
                        self._full = False
                        if self._stopping:
                            return
                        self._wake.clear()
                        try:
                            await asyncio.wait_for(self._wake.wait(), PROBE_INTERVAL)
                        except (asyncio.TimeoutError, TimeoutError):
                            await self._probe()
                        continue
                    await self._send_batch()
                except asyncio.CancelledError:
                    raise
                except Exception as exc:
                    self._unreachable(_reason(exc))
                    await self._close_producer()
                    if self._stopping:
                        return
                    await self._pause(backoff)
                    backoff = min(backoff * 2, BACKOFF_MAX)
        finally:
            await self._close_producer(quick=self._stopping)

    async def _connect(self) -> None:
        from aiokafka import AIOKafkaProducer

        producer = AIOKafkaProducer(bootstrap_servers=self.servers, client_id=self.client_id,
                                    request_timeout_ms=REQUEST_TIMEOUT_MS, acks=1)
        try:
            await asyncio.wait_for(producer.start(), CONNECT_TIMEOUT)
        except BaseException:
            await self._close(producer, quick=self._stopping)
            raise
        self._producer = producer
        self._reachable()

    async def _probe(self) -> None:
        """Ask the broker for its metadata (an idle sink's health check); raises when it does not answer."""
        try:
            answered = await asyncio.wait_for(self._producer.client.force_metadata_update(), CONNECT_TIMEOUT)
        except (asyncio.TimeoutError, TimeoutError):
            answered = False
        if not answered:
            raise ConnectionError("the broker does not answer metadata requests")

    async def _send_batch(self) -> None:
        """Hand up to BATCH messages to the producer and wait for their acknowledgements (SEND_TIMEOUT at most);
        those not acknowledged are counted as dropped and the error raised (an outage)."""
        count = min(BATCH, len(self._queue))
        batch = [self._queue.popleft() for _ in range(count)]
        futures: list[asyncio.Future] = []

        async def deliver():
            for topic, value, key in batch:
                futures.append(await self._producer.send(topic, value, key=key))
            await asyncio.gather(*futures)

        try:
            await asyncio.wait_for(deliver(), SEND_TIMEOUT)
        except BaseException:
            delivered = 0
            for future in futures:
                if future.done() and not future.cancelled():
                    if future.exception() is None:  # also marks a failure as retrieved
                        delivered += 1
                else:
                    future.cancel()
            self.sent += delivered
            self.dropped += count - delivered
            raise
        self.sent += count

    async def _pause(self, delay: float) -> None:
        """Wait ``delay`` seconds, or less if the sink is stopped meanwhile."""
        try:
            await asyncio.wait_for(self._stop_event.wait(), delay)
        except (asyncio.TimeoutError, TimeoutError):
            pass

    async def _close_producer(self, quick: bool = False) -> None:
        producer, self._producer = self._producer, None
        if producer is not None:
            await self._close(producer, quick)

    @staticmethod
    async def _close(producer, quick: bool = False) -> None:
        """Close ``producer``: aiokafka's stop waits for the batches it holds, which a dead broker lets expire only
        after REQUEST_TIMEOUT_MS, so it gets that long (only this task waits; ``publish`` keeps buffering), or
        CLOSE_TIMEOUT when ``quick`` (the sink is stopping). If it has not closed by then, its sender task and
        connections are ended at once, so that no outage leaves a task or a socket behind."""
        closing = asyncio.ensure_future(producer.stop())
        try:
            await asyncio.wait_for(asyncio.shield(closing),
                                   CLOSE_TIMEOUT if quick else REQUEST_TIMEOUT_MS / 1000 + CLOSE_GRACE)
            return
        except BaseException:
            pass
        closing.cancel()
        sender = getattr(producer, "_sender", None)  # aiokafka has no public way to drop what it holds
        for end in (getattr(sender, "close", None), producer.client.close):
            if end is None:
                continue
            try:
                await asyncio.wait_for(end(), CLOSE_TIMEOUT)
            except BaseException:
                pass

    # ---- outage lines ----------------------------------------------------------------------

    def _unreachable(self, reason: str) -> None:
        self.connected = False
        if self._outage_dropped is None:
            self._outage_dropped = self.dropped
            log.warn("kafka-unreachable sink={sink} address={address} reason={reason} (up to {buffer} messages are "
                     "kept, newer ones dropped and counted; retrying with back-off, one line when it is back)",
                     sink=self.name, address=self.address, reason=reason, buffer=self.buffer)

    def _reachable(self) -> None:
        self.connected = True
        if self._outage_dropped is not None:
            log.info("kafka-reachable sink={sink} address={address} dropped={dropped} (messages dropped during the "
                     "outage)", sink=self.name, address=self.address, dropped=self.dropped - self._outage_dropped)
            self._outage_dropped = None
        elif not self._ever_connected:
            log.info("kafka-connected sink={sink} address={address}", sink=self.name, address=self.address)
        self._ever_connected = True


class SinkService(Service):
    """A KafkaSink as a Twisted service: started with the daemon, stopped with it (a bounded flush: the daemon's stop
    never waits more than STOP_TIMEOUT seconds for the broker)."""

    def __init__(self, sink: KafkaSink, name: str):
        self.sink = sink
        self.setName(name)

    def startService(self):
        super().startService()
        self.sink.start()

    def stopService(self):
        super().stopService()
        return self.sink.stop()
