#!/usr/bin/env python3
"""Attack storms: replays attacks that once worked against the simulator and prints RSS growth, reactor stalls,
refusals.

For each storm it starts a fresh daemon (`twistd -n oltsim` from this checkout, every listener on a free
127.0.0.1 port, tests.support.daemon's Daemon; stopped with SIGTERM at the end) or uses the one named with
--target, then runs two probes throughout the storm, in a process of their own so that the attacker's Python
work does not delay them: `bbsim.BBSim/GetOlt` on the v1 gRPC port (the control API, answered on the
reactor) and `openolt.Openolt/HeartbeatCheck` on the OpenOLT port (what a VOLTHA adapter watches), one call
every --probe-interval ms with a --probe-timeout deadline. It prints per storm:

- RSS of the daemon (VmRSS from /proc/<pid>/status, sampled every 50 ms, and VmHWM): before, peak, after;
- each probe's calls, median and worst latency, the longest time without an OK answer, failures and timeouts;
  the worst stall is the worst latency of any probe call (a call that timed out counts as the timeout), and
  how late the probe process itself woke from its sleeps (the machine's share of a stall);
- what the attacker was answered: refusals (RESOURCE_EXHAUSTED, 503, 413, REFUSED_STREAM, GOAWAY) and the rest;
- whether the daemon is still alive and serving both probes again within --recover seconds after the storm;

and compares each storm with its targets: no crash or wedge (alive, no probe call timed out, and serving
again after the storm);
RSS growth (peak - before) under 50 MiB; worst stall under 100 ms; and a storm's own checks where it has some
(event-streams: the unary call beside the streams is served or refused, never left waiting; reflection-garbage:
no Python class name in an answer). Exits 1 if any target fails (0 with --no-fail). Storms (--only NAME,...;
--list shows them): baseline, restart, streams, streams-v0, rapid-reset, slow-readers, big-body, flows,
event-streams, pipelining, held-streams, reflection-garbage, connections; the storms whose
outcome depends on the gRPC engine run once per engine of --engines. Counts and durations scale with --scale
(0.1 for a quick run); the concurrency that makes an attack (40 streams, 20 readers, 300 connections) does not.

    python tests/support/abuse.py [--scale 1] [--only rapid-reset,flows] [--no-fail] [--engines native,grpcio]
    python tests/support/abuse.py --target 127.0.0.1 [--openolt-port 50060 ...] [--pid PID]    # a running daemon

The storm functions (restart_storm, hold_streams, rapid_reset, slow_readers, post_body, flow_flood, list_flows,
event_streams, pipeline_requests, held_streams, reflection_garbage, hold_connections) take plain addresses and
counts and return a Counter of what the attacker saw, so tests can reuse them: `from tests.support.abuse import
rapid_reset` (pytest puts the repository root on sys.path); the raw HTTP/2 client is `tests.support.h2raw`.
"""
from __future__ import annotations

import argparse
import http.client
import multiprocessing
import os
import select
import socket
import statistics
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from tests.support import h2raw  # noqa: E402
from tests.support.daemon import Daemon, rss_bytes, status_bytes  # noqa: E402

os.environ.setdefault("GRPC_VERBOSITY", "ERROR")   # no C-core info lines ("Got goaway") among the numbers
import grpc  # noqa: E402
import h2.exceptions  # noqa: E402
from grpc_reflection.v1alpha import reflection_pb2_grpc  # noqa: E402
from voltha_protos import openolt_pb2, openolt_pb2_grpc  # noqa: E402

from oltsim._proto import bbsim_pb2, bbsim_pb2_grpc, legacy_pb2, oltsim_pb2, oltsim_pb2_grpc  # noqa: E402

MIB = 1024 * 1024
TARGET_RSS_MIB = 50.0
TARGET_STALL_MS = 100.0

#: probe name -> (port name, method path, request type, response type)
PROBES = {
    "GetOlt": ("grpc-v1", "/bbsim.BBSim/GetOlt", bbsim_pb2.Empty, bbsim_pb2.Olt),
    "HeartbeatCheck": ("openolt", "/openolt.Openolt/HeartbeatCheck", openolt_pb2.Empty, openolt_pb2.Heartbeat),
    "OLTStatus": ("grpc-v0", "/legacy.BBSimService/OLTStatus", legacy_pb2.Empty, legacy_pb2.OLTStatusResponse),
}
DEFAULT_PROBES = ("GetOlt", "HeartbeatCheck")
#: The probe process's own lateness waking from its sleeps, returned by Probe.stop() beside the probes.
LATENESS = "lateness"
PORT_NAMES = ("openolt", "grpc-v1", "grpc-v0", "rest-v1", "rest-v0", "sadis", "dmi")
#: BBSim's default ports, for --target.
DEFAULT_PORTS = {"openolt": 50060, "grpc-v1": 50070, "rest-v1": 50071, "grpc-v0": 50072, "rest-v0": 50073,
                 "sadis": 50074, "dmi": 50075}
#: ONU states in which an ONU takes flows (oltsim.model.onu.ACTIVE_STATES).
ACTIVE_STATES = frozenset({"enabled", "image_download_started", "image_download_in_progress",
                           "image_download_completed", "image_download_error", "software_image_activated",
                           "software_image_committed"})
#: Answers that mean the server refused (h2raw.REFUSED_KEYS: gRPC code names, HTTP statuses, HTTP/2 frames).
REFUSED_KEYS = h2raw.REFUSED_KEYS


# ---- where the daemon is ----------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Target:
    """A daemon to attack: host, its ports by name (PORT_NAMES), its pid if known (RSS, liveness), its token."""
    host: str
    ports: dict
    pid: int | None = None
    token: str | None = None

    def address(self, name: str) -> str:
        return f"{self.host}:{self.ports[name]}"

    @property
    def metadata(self) -> tuple:
        """gRPC call metadata carrying the access token, if any."""
        return (("authorization", f"Bearer {self.token}"),) if self.token else ()

    @property
    def http_headers(self) -> dict:
        return {"Authorization": f"Bearer {self.token}"} if self.token else {}


def channel(address: str, own_connection: bool = False, options: list | None = None) -> grpc.Channel:
    """A grpcio channel that reconnects within 100-500 ms after the server went away (grpcio's default backoff
    grows to minutes); `own_connection` gives it a TCP connection no other channel shares."""
    opts = [("grpc.initial_reconnect_backoff_ms", 100), ("grpc.min_reconnect_backoff_ms", 100),
            ("grpc.max_reconnect_backoff_ms", 500), ("grpc.max_receive_message_length", -1)]
    if own_connection:
        opts.append(("grpc.use_local_subchannel_pool", 1))
    return grpc.insecure_channel(address, options=opts + list(options or ()))


def code_name(exc: grpc.RpcError) -> str:
    try:
        return exc.code().name
    except Exception:  # noqa: BLE001 - a broken call object: say so rather than fail the storm
        return "UNKNOWN-CLIENT-ERROR"


# ---- probes: latency of a cheap call, every 20 ms, in a process of their own ---------------------------------

def _probe_loop(target: Target, name: str, interval: float, timeout: float, stop: threading.Event,
                ready: threading.Event, out: dict) -> None:
    port, path, request_type, response_type = PROBES[name]
    chan = channel(target.address(port), own_connection=True)
    call = chan.unary_unary(path, request_serializer=request_type.SerializeToString,
                            response_deserializer=response_type.FromString)
    samples: list[tuple[float, float, str]] = []   # (wall time at start, latency s, status name)
    try:
        while not stop.is_set():
            wall, started = time.time(), time.perf_counter()
            try:
                call(request_type(), timeout=timeout, metadata=target.metadata)
                status = "OK"
            except grpc.RpcError as exc:
                status = code_name(exc)
            latency = time.perf_counter() - started
            samples.append((wall, latency, status))
            ready.set()
            stop.wait(max(0.0, interval - latency))
    finally:
        chan.close()
        out["samples"] = samples


def _lateness_loop(interval: float, stop: threading.Event, out: dict) -> None:
    """How late this process wakes from `interval` sleeps: when the machine starves the probes themselves, their
    latencies say nothing about the daemon."""
    samples = []
    while not stop.is_set():
        wall, started = time.time(), time.perf_counter()
        time.sleep(interval)
        samples.append((wall, max(0.0, time.perf_counter() - started - interval), "OK"))
    out["samples"] = samples


def _probe_main(pipe, target: Target, names: tuple, interval: float, timeout: float) -> None:
    """Child process: one thread per probe; 'ready' once each made a call, 'go' starts the record, 'stop' ends it
    and sends back {name: [(wall, latency, status), ...]}: the calls that ended after 'go' (one begun before it
    may have waited on the storm) and began before 'stop', except each probe's first (it connected)."""
    stop = threading.Event()
    outs = {name: {} for name in names}
    readies = {name: threading.Event() for name in names}
    threads = [threading.Thread(target=_probe_loop, args=(target, name, interval, timeout, stop,
                                                          readies[name], outs[name]), daemon=True)
               for name in names]
    outs[LATENESS] = {}
    threads.append(threading.Thread(target=_lateness_loop, args=(interval, stop, outs[LATENESS]), daemon=True))
    for thread in threads:
        thread.start()
    for name in names:
        readies[name].wait(timeout + 10)
    pipe.send("ready")
    go_time = stop_time = time.time()
    if pipe.recv() == "go":
        go_time = time.time()
        pipe.recv()  # "stop"
        stop_time = time.time()
    stop.set()
    for thread in threads:
        thread.join(timeout + 10)
    pipe.send({name: [(wall, latency, status) for wall, latency, status in outs[name].get("samples", [])[1:]
                      if wall + latency >= go_time and wall < stop_time] for name in names + (LATENESS,)})


class Probe:
    """Probes (PROBES names) running in a child process from start() to stop(), which returns per probe the list
    of (wall time, latency s, status) of the calls made in between, and under LATENESS how late the process
    woke from each of its sleeps (same shape)."""

    def __init__(self, target: Target, names=DEFAULT_PROBES, interval: float = 0.02, timeout: float = 2.0):
        self.target, self.names, self.interval, self.timeout = target, tuple(names), interval, timeout
        self.process = None
        self.pipe = None

    def start(self) -> None:
        context = multiprocessing.get_context("spawn")   # no fork of a process that holds grpcio threads
        self.pipe, child = context.Pipe()
        self.process = context.Process(target=_probe_main, daemon=True,
                                       args=(child, self.target, self.names, self.interval, self.timeout))
        self.process.start()
        if not self.pipe.poll(60 + self.timeout) or self.pipe.recv() != "ready":
            self.process.kill()
            raise RuntimeError("the probe process did not start")
        self.pipe.send("go")

    def stop(self) -> dict:
        try:
            self.pipe.send("stop")
            if not self.pipe.poll(self.timeout + 30):
                raise RuntimeError("the probe process did not answer")
            return self.pipe.recv()
        finally:
            self.process.join(10)
            if self.process.is_alive():
                self.process.kill()


def probe_stats(samples: list, timeout: float, window: tuple[float, float] | None = None) -> dict:
    """calls, median and worst latency (ms; a timed-out call counts as `timeout`), failures by status, timeouts,
    and the longest time (ms) within `window` (wall times) without an OK answer: the length of a wedge, which
    the worst latency, capped by the deadline, does not show."""
    latencies = [latency for _, latency, _ in samples]
    failures = Counter(status for _, _, status in samples if status != "OK")
    timeouts = failures.get("DEADLINE_EXCEEDED", 0)
    worst = max(latencies, default=0.0)
    if timeouts:
        worst = max(worst, timeout)
    gap = None
    if window is not None:
        answers = sorted(wall + latency for wall, latency, status in samples if status == "OK")
        edges = [window[0]] + [t for t in answers if window[0] < t < window[1]] + [window[1]]
        gap = max(b - a for a, b in zip(edges, edges[1:])) * 1000
    return {"calls": len(samples), "median_ms": statistics.median(latencies) * 1000 if latencies else None,
            "max_ms": worst * 1000 if samples else None, "failures": failures, "timeouts": timeouts,
            "gap_ms": gap}


def wait_serving(target: Target, names, within: float) -> float | None:
    """Seconds until every probe method answers OK once (each call 1 s at most), or None after `within` s."""
    started = time.monotonic()
    pending = list(names)
    channels = {}
    try:
        while pending and time.monotonic() - started < within:
            for name in list(pending):
                port, path, request_type, response_type = PROBES[name]
                chan = channels.get(port) or channels.setdefault(port, channel(target.address(port)))
                try:
                    chan.unary_unary(path, request_serializer=request_type.SerializeToString,
                                     response_deserializer=response_type.FromString)(
                        request_type(), timeout=1.0, metadata=target.metadata)
                    pending.remove(name)
                except grpc.RpcError:
                    pass
            if pending:
                time.sleep(0.1)
    finally:
        for chan in channels.values():
            chan.close()
    return None if pending else time.monotonic() - started


# ---- memory ------------------------------------------------------------------------------------------------------

def vm_hwm(pid: int) -> int:
    """VmHWM (peak RSS) of a process, bytes."""
    return status_bytes(pid, "VmHWM")


class RssMonitor:
    """VmRSS of a pid sampled every `period` s on a thread, from start() to stop(); peak also from VmHWM."""

    def __init__(self, pid: int | None, period: float = 0.05, limit: int | None = None,
                 budget: "Budget | None" = None):
        self.pid, self.period, self.limit, self.budget = pid, period, limit, budget
        self.before = self.peak = self.after = None
        self._stop = threading.Event()
        self._thread = None

    def _sample(self) -> int | None:
        try:
            return rss_bytes(self.pid)
        except (OSError, RuntimeError):
            return None

    def start(self) -> None:
        if self.pid is None:
            return
        self.before = self.peak = self._sample()
        try:
            self._hwm_before = vm_hwm(self.pid)
        except (OSError, RuntimeError):
            self._hwm_before = None
        self._thread = threading.Thread(target=self._run, daemon=True, name="rss-monitor")
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self.period):
            value = self._sample()
            if value is None:
                return
            self.peak = max(self.peak or 0, value)
            if self.limit is not None and self.budget is not None and value > self.limit:
                self.budget.abort(f"daemon RSS above {self.limit // MIB} MiB")

    def stop(self) -> None:
        if self._thread is None:
            return
        self._stop.set()
        self._thread.join(5)
        self.after = self._sample()
        try:
            hwm = vm_hwm(self.pid)
            if self._hwm_before is not None and hwm > self._hwm_before:
                self.peak = max(self.peak or 0, hwm)   # a peak between two samples
        except (OSError, RuntimeError):
            pass
        if self.after is not None:
            self.peak = max(self.peak or 0, self.after)


# ---- HTTP ------------------------------------------------------------------------------------------------------

def http_call(host: str, port: int, method: str, path: str, body: bytes | None = None, headers: dict | None = None,
              timeout: float = 60.0, connection: http.client.HTTPConnection | None = None) -> tuple[int, int]:
    """(status, body length) of one request, on `connection` if given (kept alive) else a new one."""
    conn = connection or http.client.HTTPConnection(host, port, timeout=timeout)
    try:
        conn.request(method, path, body=body, headers=headers or {})
        response = conn.getresponse()
        return response.status, len(response.read())
    finally:
        if connection is None:
            conn.close()


def raw_http(host: str, port: int, method: str, path: str, body: bytes, headers: dict | None = None,
             timeout: float = 120.0) -> tuple[int | None, str]:
    """Send one request with a body on a fresh socket and read the status line, even when the server answers
    (413) and closes before the whole body is sent. Returns (status or None, what went wrong or '')."""
    head = [f"{method} {path} HTTP/1.1", f"Host: {host}:{port}", f"Content-Length: {len(body)}",
            "Content-Type: application/json", "Connection: close"]
    head += [f"{name}: {value}" for name, value in (headers or {}).items()]
    problem = ""
    with socket.create_connection((host, port), timeout=timeout) as sock:
        try:
            sock.sendall(("\r\n".join(head) + "\r\n\r\n").encode("ascii"))
            view = memoryview(body)
            for offset in range(0, len(body), 1 << 20):
                sock.sendall(view[offset:offset + (1 << 20)])
        except OSError as exc:
            problem = f"send stopped: {exc.__class__.__name__}"
        data = b""
        try:
            while b"\r\n" not in data:
                chunk = sock.recv(4096)
                if not chunk:
                    break
                data += chunk
        except OSError as exc:
            problem = problem or f"no answer: {exc.__class__.__name__}"
    try:
        return int(data.split(b"\r\n", 1)[0].split()[1]), problem
    except (IndexError, ValueError):
        return None, problem or "no status line"


# ---- storms (reusable: plain addresses and counts in, a Counter of answers out) --------------------------------

class Budget:
    """When a storm's sending loop must stop: after `seconds` (None: never), or once `abort(reason)` was called
    (by the RSS monitor when the daemon passes --rss-limit). `exhausted()` says why, or ''."""

    def __init__(self, seconds: float | None = None):
        self.end = None if seconds is None else time.monotonic() + seconds
        self.reason = ""

    def abort(self, reason: str) -> None:
        self.reason = self.reason or reason

    def exhausted(self) -> str:
        if self.reason:
            return self.reason
        if self.end is not None and time.monotonic() > self.end:
            return "storm timeout"
        return ""


def restart_storm(v1_address: str, openolt_address: str, calls: int = 300, openolt_threads: int = 2,
                  metadata: tuple = (), budget: Budget | None = None) -> Counter:
    """`bbsim.BBSim/RestartgRPCServer {"delay": 0}` back to back on one channel, `calls` times, while
    `openolt_threads` threads call GetDeviceInfo and HeartbeatCheck on the OpenOLT port in a loop (the race that
    crashed the daemon). Counts 'restart <status>' and 'openolt <status>'."""
    counts: Counter = Counter()
    lock = threading.Lock()
    stop = threading.Event()

    def southbound():
        chan = channel(openolt_address, own_connection=True)
        stub = openolt_pb2_grpc.OpenoltStub(chan)
        local: Counter = Counter()
        try:
            while not stop.is_set():
                for method in (stub.GetDeviceInfo, stub.HeartbeatCheck):
                    try:
                        method(openolt_pb2.Empty(), timeout=1.0)
                        local["openolt OK"] += 1
                    except grpc.RpcError as exc:
                        local[f"openolt {code_name(exc)}"] += 1
        finally:
            chan.close()
            with lock:
                counts.update(local)

    workers = [threading.Thread(target=southbound, daemon=True) for _ in range(openolt_threads)]
    for worker in workers:
        worker.start()
    chan = channel(v1_address)
    stub = bbsim_pb2_grpc.BBSimStub(chan)
    try:
        for _ in range(calls):
            if budget is not None and budget.exhausted():
                counts[f"restart stopped ({budget.exhausted()})"] += 1
                break
            try:
                stub.RestartgRPCServer(bbsim_pb2.Timeout(delay=0), timeout=5.0, metadata=metadata)
                status = "OK"
            except grpc.RpcError as exc:
                status = code_name(exc)
            counts[f"restart {status}"] += 1
            if status in REFUSED_KEYS:
                counts[status] += 1
    finally:
        stop.set()
        for worker in workers:
            worker.join(10)
        chan.close()
    return counts


def _never(stop: threading.Event):
    """A request iterator that sends nothing until `stop` is set, then ends."""
    stop.wait()
    return
    yield  # noqa: unreachable - makes this a generator


def hold_streams(host: str, port: int, seconds: float, events: int = 40, reflection: int = 40, raw: int = 40,
                 raw_path: str = "/bbsim.BBSim/GetOlt", token: str | None = None,
                 budget: Budget | None = None) -> Counter:
    """Hold open, for `seconds`: `events` oltsim.v1.Oltsim/StreamEvents calls never read, `reflection`
    ServerReflectionInfo calls that never send, and one raw HTTP/2 connection with `raw` HEADERS for `raw_path`
    and no DATA. Counts how the server ended any of them early (status names, GOAWAY, REFUSED_STREAM) and
    'held <kind>' for those still open at the end."""
    counts: Counter = Counter()
    metadata = (("authorization", f"Bearer {token}"),) if token else ()
    address = f"{host}:{port}"
    stop = threading.Event()
    calls: list[tuple[str, object]] = []
    channels = []
    connection = None
    try:
        if events:
            chan = channel(address, own_connection=True)
            channels.append(chan)
            stub = oltsim_pb2_grpc.OltsimStub(chan)
            calls += [("StreamEvents", stub.StreamEvents(oltsim_pb2.EventFilter(), metadata=metadata))
                      for _ in range(events)]
        if reflection:
            chan = channel(address, own_connection=True)
            channels.append(chan)
            stub = reflection_pb2_grpc.ServerReflectionStub(chan)
            calls += [("ServerReflectionInfo", stub.ServerReflectionInfo(_never(stop), metadata=metadata))
                      for _ in range(reflection)]
        if raw:
            connection = h2raw.RawConnection(host, port, token=token)
            for _ in range(raw):
                connection.open_stream(raw_path)
            connection.flush()
        end = time.monotonic() + seconds
        while time.monotonic() < end and not (budget and budget.exhausted()):
            if connection is not None:
                connection.pump(0.1)
            else:
                time.sleep(0.1)
        for kind, call in calls:
            if call.done():
                try:
                    counts[call.code().name] += 1
                except Exception:  # noqa: BLE001
                    counts["ended"] += 1
            else:
                counts[f"held {kind}"] += 1
        if connection is not None:
            connection.pump(0.0)
            counts.update(connection.counts)
            counts["held raw HEADERS"] += len(connection.open_streams)
    finally:
        stop.set()
        for _, call in calls:
            call.cancel()
        if connection is not None:
            connection.close()
        for chan in channels:
            chan.close()
    return counts


def rapid_reset(host: str, port: int, streams: int = 300_000, connections: int = 1,
                path: str = "/openolt.Openolt/HeartbeatCheck", data: str = "both", batch: int = 100,
                budget: Budget | None = None, token: str | None = None, tls=None) -> Counter:
    """HTTP/2 rapid reset: on `connections` raw connections (TLS with `tls`, an ssl.SSLContext), open streams
    for `path` and reset each at once with
    RST_STREAM(CANCEL), `streams` in all. `data`: "none" (HEADERS only), "empty" (HEADERS then a DATA frame with an
    empty gRPC message) or "both" (alternating). A connection the server closes or sends GOAWAY on is replaced
    (counted as 'reconnect'). Counts 'streams sent', 'with DATA' and what the server answered."""
    counts: Counter = Counter()
    pool: list[h2raw.RawConnection | None] = [None] * max(1, connections)
    sent = 0
    failures = 0

    def connect():
        nonlocal failures
        try:
            return h2raw.RawConnection(host, port, token=token, tls=tls)
        except OSError as exc:
            failures += 1
            counts[f"connect failed {exc.__class__.__name__}"] += 1
            time.sleep(0.1)
            return None

    try:
        while sent < streams and failures < 50:
            if budget is not None and budget.exhausted():
                counts[f"stopped ({budget.exhausted()})"] += 1
                break
            for index in range(len(pool)):
                conn = pool[index]
                if conn is not None and (conn.closed or conn.terminated):
                    counts.update(conn.counts)
                    conn.close()
                    conn = pool[index] = None
                    counts["reconnect"] += 1
                if conn is None:
                    conn = pool[index] = connect()
                    if conn is None:
                        continue
                for number in range(min(batch, streams - sent)):
                    if number and number % 20 == 0:
                        conn.flush()       # see a GOAWAY soon: streams sent after it would not count
                        if not conn.pump(0.0) or conn.terminated:
                            break
                    with_data = data == "empty" or (data == "both" and sent % 2 == 1)
                    try:
                        stream_id = conn.open_stream(path)
                        if with_data:
                            if conn.can_send(stream_id, len(h2raw.EMPTY_GRPC_MESSAGE)):
                                conn.send(stream_id, h2raw.EMPTY_GRPC_MESSAGE)
                                counts["with DATA"] += 1
                            else:
                                counts["DATA skipped (no window)"] += 1
                        conn.reset(stream_id, h2raw.ErrorCodes.CANCEL)
                    except h2.exceptions.TooManyStreamsError:
                        counts["waited for MAX_CONCURRENT_STREAMS"] += 1
                        conn.pump(0.01)
                        break
                    except h2.exceptions.ProtocolError as exc:
                        counts[f"client {exc.__class__.__name__}"] += 1
                        conn.closed = True
                        break
                    sent += 1
                    counts["streams sent"] += 1
                conn.flush()
                conn.pump(0.0)
    finally:
        for conn in pool:
            if conn is not None:
                conn.pump(0.2)
                counts.update(conn.counts)
                conn.close()
    return counts


def slow_readers(host: str, v1_port: int, rest_port: int, readers: int = 20, calls: int = 10_000,
                 seconds: float = 60.0, window: int = 4096, generators: int = 2, token: str | None = None,
                 serials: list[str] | None = None, budget: Budget | None = None) -> Counter:
    """`readers` oltsim.v1.Oltsim/StreamEvents streams, each on its own raw HTTP/2 connection announcing a
    `window`-byte stream window and never giving credit back (a reader that stopped reading), while `generators`
    threads raise and clear ONU alarms over REST v1 (`calls` requests in all, at most `seconds`) so that events
    pile up for them. Counts the REST statuses ('rest <status>'), 'events bytes received' and server answers."""
    counts: Counter = Counter()
    lock = threading.Lock()
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    serials = serials or ["BBSM00000001"]
    connections = []
    try:
        for _ in range(readers):
            conn = h2raw.RawConnection(host, v1_port, window=window, auto_credit=False, token=token)
            conn.open_stream("/oltsim.v1.Oltsim/StreamEvents", h2raw.grpc_frame(b""), end_stream=True)
            conn.flush()
            connections.append(conn)
        end = time.monotonic() + seconds
        quota = iter(range(calls))
        quota_lock = threading.Lock()

        def generate(mine: list[str]):
            local: Counter = Counter()
            conn = http.client.HTTPConnection(host, rest_port, timeout=30)
            step = 0
            try:
                while time.monotonic() < end and not (budget and budget.exhausted()):
                    with quota_lock:
                        if next(quota, None) is None:
                            break
                    serial = mine[(step // 2) % len(mine)]
                    state = "on" if step % 2 == 0 else "off"
                    step += 1
                    try:
                        status, _ = http_call(host, rest_port, "POST",
                                              f"/v1/olt/onus/{serial}/alarms/ONU_ALARM_LOS/{state}",
                                              headers=headers, connection=conn)
                    except (OSError, http.client.HTTPException) as exc:
                        local[f"rest {exc.__class__.__name__}"] += 1
                        conn.close()
                        conn = http.client.HTTPConnection(host, rest_port, timeout=30)
                        continue
                    local[f"rest {status}"] += 1
                    if str(status) in REFUSED_KEYS:
                        local[str(status)] += 1
            finally:
                conn.close()
                with lock:
                    counts.update(local)

        shares = [serials[i::generators] or serials for i in range(generators)]
        threads = [threading.Thread(target=generate, args=(share,), daemon=True) for share in shares]
        for thread in threads:
            thread.start()
        while any(thread.is_alive() for thread in threads):
            for conn in connections:
                conn.pump(0.0)
            time.sleep(0.05)
        for thread in threads:
            thread.join()
        for conn in connections:
            conn.pump(0.1)
            counts.update(conn.counts)
            counts["events bytes received"] += conn.received_bytes
    finally:
        for conn in connections:
            conn.close()
    return counts


def big_bulk_body(entries: int) -> bytes:
    """A v0 bulk body {"onus": [{"onu_serial": ...}, ...]} with `entries` ONUs (about 32 bytes each)."""
    return b'{"onus": [' + b", ".join(b'{"onu_serial": "BBSM%08X"}' % i for i in range(entries)) + b"]}"


def nested_body(depth: int) -> bytes:
    """A v0 bulk body whose `onus` value is nested `depth` arrays deep."""
    return b'{"onus": ' + b"[" * depth + b"]" * depth + b"}"


def post_body(host: str, port: int, body: bytes, times: int = 1, path: str = "/v0/olt/onus",
              token: str | None = None, timeout: float = 120.0) -> tuple[Counter, list[float]]:
    """POST `body` to a v0 bulk route `times` times; (Counter of statuses, seconds of each request)."""
    counts: Counter = Counter()
    seconds = []
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    for _ in range(times):
        started = time.perf_counter()
        try:
            status, problem = raw_http(host, port, "POST", path, body, headers, timeout)
        except OSError as exc:
            status, problem = None, exc.__class__.__name__
        seconds.append(time.perf_counter() - started)
        counts[str(status) if status is not None else f"no answer ({problem})"] += 1
        if problem and status is not None:
            counts[problem] += 1
    return counts, seconds


class IndicationReader:
    """An EnableIndication stream read on a thread, activating every ONU it hears about (OnuDiscInd) with the next
    free ONU id of its PON, as an adapter does; close() cancels it."""

    def __init__(self, stub, used_ids: dict, first_id: int = 1):
        self.stub = stub
        self.next_id = {pon: max(ids, default=first_id - 1) + 1 for pon, ids in used_ids.items()}
        self.first_id = first_id
        self.activated: Counter = Counter()
        self.call = stub.EnableIndication(openolt_pb2.Empty())
        self.thread = threading.Thread(target=self._read, daemon=True, name="abuse-indications")
        self.thread.start()

    def _read(self) -> None:
        try:
            for indication in self.call:
                if indication.WhichOneof("data") != "onu_disc_ind":
                    continue
                disc = indication.onu_disc_ind
                onu_id = self.next_id.get(disc.intf_id, self.first_id)
                self.next_id[disc.intf_id] = onu_id + 1
                try:
                    self.stub.ActivateOnu(openolt_pb2.Onu(intf_id=disc.intf_id, onu_id=onu_id, pir=1000000,
                                                          serial_number=disc.serial_number), timeout=10)
                    self.activated["OK"] += 1
                except grpc.RpcError as exc:
                    self.activated[code_name(exc)] += 1
        except grpc.RpcError:
            pass

    def close(self) -> None:
        self.call.cancel()
        self.thread.join(10)


def activate_all(openolt_address: str, v1_address: str, timeout: float = 30.0, metadata: tuple = ()):
    """Enable the OLT (EnableIndication, kept open and read) and activate every ONU it discovers; returns
    (reader, channel, [(pon, onu_id)] of the active ONUs, {pon: (onu_start, onu_end, alloc_start, alloc_end,
    gem_start, gem_end)}). Close both when done."""
    chan = channel(openolt_address)
    stub = openolt_pb2_grpc.OpenoltStub(chan)
    info = stub.GetDeviceInfo(openolt_pb2.Empty(), timeout=10)
    ranges = {}
    for entry in info.ranges:
        pools = {pool.type: (pool.start, pool.end) for pool in entry.pools}
        Pool = openolt_pb2.DeviceInfo.DeviceResourceRanges.Pool
        for pon in entry.intf_ids:
            ranges[pon] = pools[Pool.ONU_ID] + pools[Pool.ALLOC_ID] + pools[Pool.GEMPORT_ID]
    v1 = channel(v1_address)
    api = bbsim_pb2_grpc.BBSimStub(v1)
    try:
        onus = api.GetONUs(bbsim_pb2.Empty(), timeout=30, metadata=metadata).items
        used = {}
        for onu in onus:
            if onu.InternalState in ACTIVE_STATES:
                used.setdefault(onu.PonPortID, set()).add(onu.ID)
        first = min((r[0] for r in ranges.values()), default=1)
        reader = IndicationReader(stub, used, first)
        end = time.monotonic() + timeout
        active = []
        while time.monotonic() < end:
            onus = api.GetONUs(bbsim_pb2.Empty(), timeout=30, metadata=metadata).items
            active = [(onu.PonPortID, onu.ID) for onu in onus if onu.InternalState in ACTIVE_STATES]
            if len(active) == len(onus):
                break
            time.sleep(0.2)
    finally:
        v1.close()
    return reader, chan, active, ranges


def flow_message(pon: int, onu_id: int, index: int, flow_id: int, ranges: tuple) -> openolt_pb2.Flow:
    """The `index`-th data flow of an ONU: alloc id and GEM ports inside the ONU's share of its PON's ranges
    (DeviceInfo), a distinct flow id and VLAN, alternating upstream and downstream."""
    onu_start, onu_end, alloc_start, alloc_end, gem_start, gem_end = ranges
    onus = max(1, onu_end - onu_start + 1)
    allocs, gems = max(1, (alloc_end - alloc_start + 1) // onus), max(1, (gem_end - gem_start + 1) // onus)
    slot = onu_id - onu_start
    return openolt_pb2.Flow(
        access_intf_id=pon, onu_id=onu_id, uni_id=0, flow_id=flow_id,
        flow_type="upstream" if index % 2 == 0 else "downstream", network_intf_id=0,
        classifier=openolt_pb2.Classifier(o_vid=10 + index % 4000, o_pbits=index % 8),
        action=openolt_pb2.Action(), priority=1000, cookie=flow_id, port_no=(pon << 12) | (onu_id << 4),
        alloc_id=alloc_start + slot * allocs, gemport_id=gem_start + slot * gems + index % gems)


def flow_flood(stub, onus: list, ranges: dict, flows: int = 50_000, in_flight: int = 64,
               budget: Budget | None = None) -> Counter:
    """FlowAdd `flows` distinct flows spread over `onus` [(pon, onu_id)], at most `in_flight` outstanding. Counts
    'FlowAdd <status>' and the refusals (RESOURCE_EXHAUSTED)."""
    counts: Counter = Counter()
    lock = threading.Lock()
    slots = threading.Semaphore(in_flight)

    def done(future):
        try:
            future.result()
            status = "OK"
        except grpc.RpcError as exc:
            status = code_name(exc)
        with lock:
            counts[f"FlowAdd {status}"] += 1
            if status in REFUSED_KEYS:
                counts[status] += 1
        slots.release()

    for number in range(flows):
        if budget is not None and budget.exhausted():
            counts[f"FlowAdd stopped ({budget.exhausted()})"] += 1
            break
        pon, onu_id = onus[number % len(onus)]
        flow = flow_message(pon, onu_id, number // len(onus), number + 1, ranges[pon])
        slots.acquire()
        stub.FlowAdd.future(flow, timeout=30).add_done_callback(done)
    for _ in range(in_flight):
        slots.acquire(timeout=60)
    return counts


def list_flows(host: str, rest_port: int, v1_address: str, rounds: int = 5, token: str | None = None) -> dict:
    """`rounds` times GET /v1/olt/flows (REST v1) and bbsim.BBSim/GetFlows (v1 gRPC, all flows); per surface the
    seconds of each call, the bytes of the last answer and the statuses."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    metadata = (("authorization", f"Bearer {token}"),) if token else ()
    result = {"rest": {"seconds": [], "bytes": 0, "statuses": Counter()},
              "grpc": {"seconds": [], "bytes": 0, "statuses": Counter()}}
    chan = channel(v1_address)
    get_flows = chan.unary_unary("/bbsim.BBSim/GetFlows", request_serializer=bbsim_pb2.ONURequest.SerializeToString,
                                 response_deserializer=None)   # raw bytes: the client does not parse 40 MB
    try:
        for _ in range(rounds):
            started = time.perf_counter()
            try:
                status, size = http_call(host, rest_port, "GET", "/v1/olt/flows", headers=headers, timeout=120)
                result["rest"]["bytes"] = size
            except (OSError, http.client.HTTPException) as exc:
                status = exc.__class__.__name__
            result["rest"]["seconds"].append(time.perf_counter() - started)
            result["rest"]["statuses"][str(status)] += 1
            started = time.perf_counter()
            try:
                answer = get_flows(bbsim_pb2.ONURequest(), timeout=120, metadata=metadata)
                result["grpc"]["bytes"] = len(answer)
                status = "OK"
            except grpc.RpcError as exc:
                status = code_name(exc)
            result["grpc"]["seconds"].append(time.perf_counter() - started)
            result["grpc"]["statuses"][status] += 1
    finally:
        chan.close()
    return result


def event_streams(address: str, streams: int = 8, deadline: float = 3.0, metadata: tuple = (),
                  settle: float = 0.5) -> Counter:
    """An ordinary client that watches events and also issues commands: one grpcio channel (grpcio's default
    options) opens `streams` oltsim.v1.Oltsim/StreamEvents calls, then calls bbsim.BBSim/GetOlt with a `deadline`
    on the same channel; then on a second `grpc.insecure_channel` to the same address (grpcio shares the
    connection of equal channels in one process), then on a channel with a connection of its own. Counts
    'same channel <status>', 'second channel <status>', 'own connection <status>', their latency in
    '... ms', the streams still open ('streams open') or ended by the server ('stream <status>')."""
    counts: Counter = Counter()
    main = grpc.insecure_channel(address)
    second = grpc.insecure_channel(address)
    own = channel(address, own_connection=True)
    calls = []
    try:
        stub = oltsim_pb2_grpc.OltsimStub(main)
        calls = [stub.StreamEvents(oltsim_pb2.EventFilter(), metadata=metadata) for _ in range(streams)]
        time.sleep(settle)   # let the streams reach the server before the unary call queues behind them
        for label, chan in (("same channel", main), ("second channel", second), ("own connection", own)):
            started = time.perf_counter()
            try:
                bbsim_pb2_grpc.BBSimStub(chan).GetOlt(bbsim_pb2.Empty(), timeout=deadline, metadata=metadata)
                status = "OK"
            except grpc.RpcError as exc:
                status = code_name(exc)
            counts[f"{label} {status}"] += 1
            counts[f"{label} ms"] += round((time.perf_counter() - started) * 1000)
            if status in REFUSED_KEYS:
                counts[status] += 1
        for call in calls:
            if call.done():
                status = code_name(call)
                counts[f"stream {status}"] += 1
                if status in REFUSED_KEYS:
                    counts[status] += 1
            else:
                counts["streams open"] += 1
    finally:
        for call in calls:
            call.cancel()
        for chan in (main, second, own):
            chan.close()
    return counts


def _rdhup(sock: socket.socket) -> str:
    """'closed' if the peer closed or reset the connection (POLLRDHUP, POLLHUP or POLLERR, whatever is still
    unread), else 'open'; reads nothing."""
    poller = select.poll()
    poller.register(sock, select.POLLRDHUP | select.POLLHUP | select.POLLERR)
    return "closed" if poller.poll(0) else "open"


def pipeline_requests(host: str, port: int, connections: int = 4, requests: int = 150_000, seconds: float = 12.0,
                      path: str = "/v1/olt/onus", token: str | None = None, stall: float = 1.0,
                      budget: Budget | None = None) -> Counter:
    """HTTP/1.1 pipelining without reading: `connections` connections each send `requests` pipelined
    `GET path` requests (about 40 bytes each) as fast as the server takes them, never read an answer, and stay
    open `seconds` (the server keeps answering what it has read), then close. Counts 'bytes sent', 'requests
    sent', and per connection how it ended: 'all sent' (into the server's socket buffer at least), 'stalled' (the
    server took nothing for `stall` s: it stopped reading), 'still sending', 'closed by server'."""
    counts: Counter = Counter()
    auth = f"Authorization: Bearer {token}\r\n" if token else ""
    request = f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\n{auth}\r\n".encode("ascii")
    payload = memoryview(request * requests)
    socks, offsets, progress, closed = [], [], [], []
    try:
        for _ in range(connections):
            try:
                sock = socket.create_connection((host, port), timeout=5)
            except OSError as exc:
                counts[f"connect failed {exc.__class__.__name__}"] += 1
                continue
            sock.setblocking(False)
            socks.append(sock)
            offsets.append(0)
            progress.append(time.monotonic())
            closed.append(False)
        end = time.monotonic() + seconds
        while time.monotonic() < end and not (budget and budget.exhausted()):
            pending = [i for i, sock in enumerate(socks) if not closed[i] and offsets[i] < len(payload)]
            if not pending:   # everything sent: hold the connections, unread, till the end
                if all(closed[i] or _rdhup(sock) == "closed" for i, sock in enumerate(socks)):
                    break
                time.sleep(0.1)
                continue
            _, writable, _ = select.select([], [socks[i] for i in pending], [], 0.1)
            for i in pending:
                if socks[i] not in writable:
                    continue
                try:
                    sent = socks[i].send(payload[offsets[i]:offsets[i] + (1 << 16)])
                except BlockingIOError:
                    continue
                except OSError:
                    closed[i] = True
                    continue
                offsets[i] += sent
                progress[i] = time.monotonic()
        if budget and budget.exhausted():
            counts[f"stopped ({budget.exhausted()})"] += 1
        now = time.monotonic()
        for i, sock in enumerate(socks):
            if closed[i] or _rdhup(sock) == "closed":
                state = "closed by server"
            elif offsets[i] >= len(payload):
                state = "all sent"
            elif now - progress[i] >= stall:
                state = "stalled"
            else:
                state = "still sending"
            counts[f"connection {state}"] += 1
            counts["bytes sent"] += offsets[i]
            counts["requests sent"] += offsets[i] // len(request)
    finally:
        for sock in socks:
            sock.close()
    return counts


def held_streams(host: str, port: int, connections: int = 300, streams: int = 8, seconds: float = 20.0,
                 path: str = "/bbsim.BBSim/GetOlt", token: str | None = None, budget: Budget | None = None) -> Counter:
    """`connections` raw HTTP/2 connections, each sending the preface, SETTINGS and `streams` HEADERS for `path`
    without DATA, held for `seconds`. Counts 'connections opened', 'connect failed ...', the connections the
    server closed within a second ('closed at once') or later ('closed during the hold'), 'held to the end', the
    streams still open then ('streams held') and what the server answered (GOAWAY, REFUSED_STREAM, statuses)."""
    counts: Counter = Counter()
    conns: list[h2raw.RawConnection] = []
    try:
        for _ in range(connections):
            if budget is not None and budget.exhausted():
                counts[f"stopped ({budget.exhausted()})"] += 1
                break
            try:
                conn = h2raw.RawConnection(host, port, token=token, timeout=5.0)
            except OSError as exc:
                counts[f"connect failed {exc.__class__.__name__}"] += 1
                continue
            for _ in range(streams):
                try:
                    conn.open_stream(path)
                except h2.exceptions.TooManyStreamsError:
                    counts["waited for MAX_CONCURRENT_STREAMS"] += 1
                    break
            conn.flush()
            conn.pump(0.0)
            conns.append(conn)
        counts["connections opened"] = len(conns)
        end = time.monotonic() + seconds
        at_once = time.monotonic() + 1.0
        early: set[int] = set()
        checked = False
        while time.monotonic() < end and not (budget and budget.exhausted()):
            for conn in conns:
                conn.pump(0.0)
            if not checked and time.monotonic() >= at_once:
                early = {id(c) for c in conns if c.closed or c.terminated}
                checked = True
            time.sleep(0.2)
        for conn in conns:
            conn.pump(0.0)
            if id(conn) in early:
                counts["closed at once"] += 1
            elif conn.closed or conn.terminated:
                counts["closed during the hold"] += 1
            else:
                counts["held to the end"] += 1
                counts["streams held"] += len(conn.open_streams)
            counts.update(conn.counts)
    finally:
        for conn in conns:
            conn.close()
    return counts


#: ServerReflectionInfo request messages protobuf cannot decode: a tag whose varint never ends, a truncated
#: length-delimited field, invalid UTF-8 in a string field (`host`).
GARBAGE_MESSAGES = (b"\xff\xff\xff\xff\xff", b"\x0a\x05ab", b"\x0a\x02\xff\xfe")
REFLECTION_METHOD = "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo"
#: The daemon's default --max-connections-per-peer: the connections storm reports the ports that held
#: more of its connections than this.
PEER_CONNECTIONS = 32


def reflection_garbage(addresses: dict, calls: int = 30, metadata: tuple = (), timeout: float = 5.0,
                       budget: Budget | None = None) -> Counter:
    """ServerReflectionInfo calls whose request message is undecodable (GARBAGE_MESSAGES in turn), sent raw
    (identity serializers), `calls` per port of `addresses` {name: host:port}. Counts '<name> <status>' and
    '<name> class name' for answers whose details contain '<class' (a Python class name), with the first such
    details kept as a key '<name> example: ...'."""
    counts: Counter = Counter()
    for name, address in addresses.items():
        chan = channel(address, own_connection=True)
        method = chan.stream_stream(REFLECTION_METHOD, request_serializer=None, response_deserializer=None)
        try:
            for number in range(calls):
                if budget is not None and budget.exhausted():
                    counts[f"stopped ({budget.exhausted()})"] += 1
                    break
                details = ""
                try:
                    for _ in method(iter([GARBAGE_MESSAGES[number % len(GARBAGE_MESSAGES)]]), timeout=timeout,
                                    metadata=metadata):
                        pass
                    status = "OK"
                except grpc.RpcError as exc:
                    status = code_name(exc)
                    details = exc.details() or ""
                counts[f"{name} {status}"] += 1
                if status in REFUSED_KEYS:
                    counts[status] += 1
                if "<class" in details:
                    if not counts[f"{name} class name"]:
                        counts[f"{name} example: {details[:100]}"] += 1
                    counts[f"{name} class name"] += 1
        finally:
            chan.close()
    return counts


def hold_connections(host: str, ports: dict, per_port: int = 200, seconds: float = 10.0,
                     budget: Budget | None = None) -> Counter:
    """`per_port` plain TCP connections to each port of `ports` {name: port}, sending nothing, held for
    `seconds`. Counts per port '<name> opened', '<name> connect failed ...', '<name> closed at once' (the server
    closed or reset it within a second), '<name> closed during the hold', '<name> held to the end'."""
    counts: Counter = Counter()
    socks: dict[str, list[socket.socket]] = {name: [] for name in ports}
    try:
        for name, port in ports.items():
            for _ in range(per_port):
                if budget is not None and budget.exhausted():
                    break
                try:
                    socks[name].append(socket.create_connection((host, port), timeout=3.0))
                except OSError as exc:
                    counts[f"{name} connect failed {exc.__class__.__name__}"] += 1
            counts[f"{name} opened"] = len(socks[name])
        time.sleep(1.0)
        early = {id(s) for held in socks.values() for s in held if _rdhup(s) == "closed"}
        end = time.monotonic() + max(0.0, seconds - 1.0)
        while time.monotonic() < end and not (budget and budget.exhausted()):
            time.sleep(0.2)
        if budget is not None and budget.exhausted():
            counts[f"stopped ({budget.exhausted()})"] += 1
        for name, held in socks.items():
            for sock in held:
                if id(sock) in early:
                    counts[f"{name} closed at once"] += 1
                elif _rdhup(sock) == "closed":
                    counts[f"{name} closed during the hold"] += 1
                else:
                    counts[f"{name} held to the end"] += 1
    finally:
        for held in socks.values():
            for sock in held:
                sock.close()
    return counts


# ---- the storms as the program runs them --------------------------------------------------------------------------

@dataclass
class Plan:
    """What the command line asked for, scaled."""
    scale: float = 1.0
    hold: float = 10.0
    streams: int = 40
    readers: int = 20
    restarts: int = 300
    rapid_streams: int = 300_000
    connections: int = 1
    events: int = 10_000
    body_entries: int = 1_000_000
    depth: int = 1000
    flows: int = 50_000
    list_rounds: int = 5
    storm_timeout: float = 300.0
    rss_limit_mib: float = 2048.0
    anonymous_streams: bool = False  # the stream floods send no token (shows whether they work without it)
    event_streams: tuple = (8, 20)   # StreamEvents calls on one channel before a GetOlt, one round each
    pipeline_connections: int = 4
    pipeline_requests: int = 150_000
    pipeline_seconds: float = 12.0
    held_connections: int = 300
    held_seconds: float = 20.0
    reflection_calls: int = 30
    tcp_connections: int = 200
    tcp_hold: float = 10.0
    budget: Budget | None = None     # set for each storm by measure()

    def n(self, count: int, least: int = 1) -> int:
        return max(least, int(round(count * self.scale)))

    def seconds(self, value: float, least: float = 2.0) -> float:
        return max(least, value * self.scale)


@dataclass
class Outcome:
    """What a storm function reports: a one-line description, the attacker's Counter, extra lines, and the wall
    times (time.time()) at which its phases began, for the per-phase worst stall."""
    what: str
    counts: Counter = field(default_factory=Counter)
    lines: list = field(default_factory=list)
    phases: list = field(default_factory=list)
    #: storm-specific targets: (name, True/False/None for PASS/FAIL/n/a, shown value)
    checks: list = field(default_factory=list)


def run_baseline(target: Target, plan: Plan) -> Outcome:
    seconds = plan.seconds(5.0)
    time.sleep(seconds)
    return Outcome(f"no attack: the probes alone for {seconds:g} s (what this machine allows)")


def run_restart(target: Target, plan: Plan) -> Outcome:
    calls = plan.n(plan.restarts)
    counts = restart_storm(target.address("grpc-v1"), target.address("openolt"), calls, metadata=target.metadata,
                           budget=plan.budget)
    return Outcome(f"{calls} x RestartgRPCServer(delay 0) back to back on one v1 channel, 2 threads calling "
                   "GetDeviceInfo/HeartbeatCheck on the OpenOLT port meanwhile", counts,
                   [format_counts("RestartgRPCServer", counts, "restart "),
                    format_counts("attacker OpenOLT calls", counts, "openolt ")])


def _run_streams(target: Target, plan: Plan, port: str, events: int, raw_path: str) -> Outcome:
    seconds = plan.seconds(plan.hold, 5.0)   # longer than a probe's deadline, or a wedge may pass unseen
    host = target.host
    counts = hold_streams(host, target.ports[port], seconds, events=events, reflection=plan.streams,
                          raw=plan.streams, raw_path=raw_path, budget=plan.budget,
                          token=None if plan.anonymous_streams else target.token)
    parts = ([f"{events} StreamEvents never read"] if events else []) + [
        f"{plan.streams} ServerReflectionInfo never sending",
        f"1 raw connection with {plan.streams} HEADERS {raw_path} and no DATA"]
    anonymous = " (no token)" if plan.anonymous_streams and target.token else ""
    return Outcome(f"{port} port{anonymous}: " + ", ".join(parts) + f", held {seconds:g} s", counts,
                   [format_counts("attacker streams", counts)])


def run_streams(target: Target, plan: Plan) -> Outcome:
    return _run_streams(target, plan, "grpc-v1", plan.streams, "/bbsim.BBSim/GetOlt")


def run_streams_v0(target: Target, plan: Plan) -> Outcome:
    # legacy.BBSimService has no server-streaming method: reflection and raw HEADERS only.
    return _run_streams(target, plan, "grpc-v0", 0, "/legacy.BBSimService/OLTStatus")


def run_rapid_reset(target: Target, plan: Plan) -> Outcome:
    streams = plan.n(plan.rapid_streams, 100)
    started = time.perf_counter()
    counts = rapid_reset(target.host, target.ports["openolt"], streams, plan.connections,
                         budget=plan.budget, token=target.token)
    seconds = time.perf_counter() - started
    return Outcome(f"{streams} streams HEADERS /openolt.Openolt/HeartbeatCheck (every other one with an empty "
                   f"DATA) + RST_STREAM(CANCEL) on {plan.connections} raw connection(s)", counts,
                   [f"sent {counts['streams sent']} streams ({counts['with DATA']} with DATA) in {seconds:.1f} s "
                    f"({counts['streams sent'] / max(seconds, 1e-9):.0f}/s); reconnects {counts['reconnect']}",
                    format_counts("server answers", counts, exclude=("streams sent", "with DATA", "reconnect"))])


def run_slow_readers(target: Target, plan: Plan) -> Outcome:
    calls = plan.n(plan.events)
    chan = channel(target.address("grpc-v1"))
    try:
        onus = bbsim_pb2_grpc.BBSimStub(chan).GetONUs(bbsim_pb2.Empty(), timeout=30, metadata=target.metadata)
        serials = [onu.SerialNumber for onu in onus.items]
    finally:
        chan.close()
    counts = slow_readers(target.host, target.ports["grpc-v1"], target.ports["rest-v1"], plan.readers, calls,
                          seconds=plan.seconds(60.0, 10.0), token=target.token, serials=serials,
                          budget=plan.budget)
    return Outcome(f"{plan.readers} StreamEvents readers (raw HTTP/2, 4 KiB window, never credited) while "
                   f"{calls} ONU alarm raise/clear calls go to REST v1", counts,
                   [format_counts("REST alarm calls", counts, "rest "),
                    f"event bytes the readers received before stalling: {counts['events bytes received']}",
                    format_counts("server answers on the streams", counts,
                                  exclude=("events bytes received", "data-frames"), skip_prefix="rest ")])


def run_big_body(target: Target, plan: Plan) -> Outcome:
    entries = plan.n(plan.body_entries)
    port = target.ports["rest-v0"]
    outcome = Outcome("")
    outcome.phases.append(("big body", time.time()))
    body = big_bulk_body(entries)
    big, big_seconds = post_body(target.host, port, body, token=target.token)
    size = len(body)
    del body
    outcome.phases.append(("nested body", time.time()))
    deep, deep_seconds = post_body(target.host, port, nested_body(plan.depth), times=10, token=target.token)
    outcome.what = (f"POST /v0/olt/onus with a {size / 1e6:.1f} MB bulk body ({entries} ONUs), then 10 x a body "
                    f"nested {plan.depth} deep")
    outcome.counts = big + deep
    outcome.lines = [f"big body: status {dict(big)} after {big_seconds[0]:.2f} s",
                     f"nested body: statuses {dict(deep)}, slowest {max(deep_seconds) * 1000:.0f} ms"]
    return outcome


def run_flows(target: Target, plan: Plan) -> Outcome:
    flows = plan.n(plan.flows)
    outcome = Outcome("")
    outcome.phases.append(("activate", time.time()))
    reader, chan, onus, ranges = activate_all(target.address("openolt"), target.address("grpc-v1"),
                                              metadata=target.metadata)
    try:
        if not onus:
            raise RuntimeError("no ONU became active (is another adapter holding the OLT?)")
        outcome.phases.append(("FlowAdd", time.time()))
        started = time.perf_counter()
        counts = flow_flood(openolt_pb2_grpc.OpenoltStub(chan), onus, ranges, flows,
                            budget=plan.budget)
        add_seconds = time.perf_counter() - started
        outcome.phases.append(("list flows", time.time()))
        listing = list_flows(target.host, target.ports["rest-v1"], target.address("grpc-v1"), plan.list_rounds,
                             target.token)
    finally:
        reader.close()
        chan.close()
    for surface in ("rest", "grpc"):
        for status, number in listing[surface]["statuses"].items():
            if status in REFUSED_KEYS:
                counts[status] += number
    outcome.what = (f"FlowAdd of {flows} flows over {len(onus)} active ONUs (64 in flight), then "
                    f"{plan.list_rounds} x GET /v1/olt/flows and GetFlows")
    outcome.counts = counts
    accepted = counts["FlowAdd OK"]
    outcome.lines = [format_counts(f"FlowAdd ({accepted} accepted, {flows / max(add_seconds, 1e-9):.0f}/s)",
                                   counts, "FlowAdd ")]
    for label, surface in (("GET /v1/olt/flows", "rest"), ("GetFlows", "grpc")):
        seconds = listing[surface]["seconds"]
        outcome.lines.append(
            f"{label}: {len(seconds)} calls, median {statistics.median(seconds) * 1000:.0f} ms, "
            f"max {max(seconds) * 1000:.0f} ms, {listing[surface]['bytes'] / 1e6:.1f} MB, "
            f"statuses {dict(listing[surface]['statuses'])}")
    return outcome


def run_event_streams(target: Target, plan: Plan) -> Outcome:
    outcome = Outcome(f"one grpcio channel opens {' then '.join(map(str, plan.event_streams))} StreamEvents "
                      "streams, then GetOlt (3 s deadline) on it, on a second insecure_channel to the same "
                      "address (same connection) and on a channel of its own")
    hung = []
    for streams in plan.event_streams:
        outcome.phases.append((f"{streams} streams", time.time()))
        counts = event_streams(target.address("grpc-v1"), streams, metadata=target.metadata)
        outcome.counts.update({f"{streams}: {key}" if key not in REFUSED_KEYS else key: value
                               for key, value in counts.items()})
        parts = []
        for label in ("same channel", "second channel", "own connection"):
            status = next((key[len(label) + 1:] for key in counts
                           if key.startswith(label + " ") and key != label + " ms"), "?")
            parts.append(f"{label} {status} in {counts[label + ' ms']} ms")
        ended = ", ".join(f"{key[7:]} {n}" for key, n in sorted(counts.items()) if key.startswith("stream "))
        outcome.lines.append(f"{streams} streams: GetOlt " + ", ".join(parts)
                             + f"; streams open {counts['streams open']}" + (f", ended {ended}" if ended else ""))
        if any(not part.split(" in ")[0].endswith((" OK", " RESOURCE_EXHAUSTED")) for part in parts[:2]):
            hung.append(str(streams))
    outcome.checks.append(("GetOlt beside streams: served or refused", not hung,
                           f"hung at {', '.join(hung)} streams" if hung else "yes"))
    return outcome


def run_pipelining(target: Target, plan: Plan) -> Outcome:
    requests, seconds = plan.n(plan.pipeline_requests), plan.seconds(plan.pipeline_seconds, 5.0)
    counts = pipeline_requests(target.host, target.ports["rest-v1"], plan.pipeline_connections, requests,
                               seconds, token=target.token, budget=plan.budget)
    return Outcome(f"{plan.pipeline_connections} connections each pipelining up to {requests} GET /v1/olt/onus "
                   f"without reading, held {seconds:g} s, then closed", counts,
                   [f"sent {counts['requests sent']} requests ({counts['bytes sent'] / 1e6:.1f} MB) in all",
                    format_counts("connections at the end", counts, "connection ")])


def run_held_streams(target: Target, plan: Plan) -> Outcome:
    seconds = plan.seconds(plan.held_seconds, 5.0)
    counts = held_streams(target.host, target.ports["grpc-v1"], plan.held_connections, 8, seconds,
                          token=None if plan.anonymous_streams else target.token, budget=plan.budget)
    return Outcome(f"{plan.held_connections} raw connections to the v1 gRPC port, each with 8 HEADERS "
                   f"/bbsim.BBSim/GetOlt and no DATA, held {seconds:g} s", counts,
                   [format_counts("connections", counts, exclude=("streams held",), skip_prefix="RST_STREAM")
                    + f"; {counts['streams held']} streams held at the end"])


def run_reflection_garbage(target: Target, plan: Plan) -> Outcome:
    calls = plan.n(plan.reflection_calls, len(GARBAGE_MESSAGES))
    ports = ("grpc-v1", "grpc-v0", "dmi", "openolt")
    counts = reflection_garbage({name: target.address(name) for name in ports}, calls, target.metadata,
                                budget=plan.budget)
    classes = [name for name in ports if counts[f"{name} class name"]]
    lines = [format_counts(name, {k: n for k, n in counts.items() if " example: " not in k}, name + " ")
             for name in ports]
    lines += [f"{key.split(' example: ')[0]} answered: {key.split(' example: ', 1)[1]}..."
              for key in counts if " example: " in key]
    return Outcome(f"{calls} ServerReflectionInfo calls per port with an undecodable request message "
                   f"(v1, v0, DMI, OpenOLT)", counts, lines,
                   checks=[("no class name in an answer", not classes,
                            "in " + ", ".join(classes) if classes else "none")])


def run_connections(target: Target, plan: Plan) -> Outcome:
    seconds = plan.seconds(plan.tcp_hold, 3.0)
    ports = {name: target.ports[name] for name in ("rest-v1", "rest-v0", "sadis", "grpc-v1", "grpc-v0", "dmi",
                                                   "openolt")}
    counts = hold_connections(target.host, ports, plan.tcp_connections, seconds, budget=plan.budget)
    lines = [format_counts(name, counts, name + " ") for name in ports]
    # A report, not a target: the REST listeners keep --max-connections-per-peer (32) of one peer's idle connections,
    # closing the idlest for each new one; the plain gRPC ports hold them all (bounded by descriptors and the
    # connection watch's budget). A daemon with other limits still meets the RSS and stall targets or not.
    unbounded = [name for name in ports if counts[f"{name} held to the end"] > PEER_CONNECTIONS]
    lines.append(f"held more than {PEER_CONNECTIONS} connections of this one peer (the REST per-peer limit): "
                 + (", ".join(f"{name} {counts[name + ' held to the end']}" for name in unbounded) or "no port"))
    return Outcome(f"{plan.tcp_connections} plain TCP connections to each REST and gRPC port (one peer), sending "
                   f"nothing, held {seconds:g} s", counts, lines,
                   checks=[("per-peer limit seen", None, f"on {len(ports) - len(unbounded)} of {len(ports)} ports")])


#: name -> (function, extra probes, once per OpenOLT engine of --engines, what it replays). The storms that
#: depend on the gRPC engine (its HTTP/2 handling, its stream limits, its stop and start) run on each engine in
#: use: native (pygrpc-native) and grpcio (grpc.aio); --grpc-engine picks it for OpenOLT, v1, v0 and DMI.
STORMS = {
    "baseline": (run_baseline, (), False, "no attack: the probes' own latency on this machine"),
    "restart": (run_restart, (), True, "finding 1: RestartgRPCServer back to back with OpenOLT calls (SIGSEGV)"),
    "streams": (run_streams, (), False, "finding 2: stream floods that wedged v1 gRPC"),
    "streams-v0": (run_streams_v0, ("OLTStatus",), False, "finding 2 on the v0 gRPC port"),
    "rapid-reset": (run_rapid_reset, (), True, "finding 3: HTTP/2 rapid reset on the OpenOLT port"),
    "slow-readers": (run_slow_readers, (), False, "finding 4: stalled StreamEvents readers"),
    "big-body": (run_big_body, (), False, "findings 5 and 6: a 30 MB v0 bulk body, a body nested 1000 deep"),
    "flows": (run_flows, (), False, "finding 5: 50k flows, then listing them"),
    "event-streams": (run_event_streams, (), True, "a unary call beside 8 and 20 event streams"),
    "pipelining": (run_pipelining, (), False, "pipelined GET /v1/olt/onus never read"),
    "held-streams": (run_held_streams, (), True, "300 connections x 8 HEADERS without DATA"),
    "reflection-garbage": (run_reflection_garbage, (), True, "undecodable reflection requests"),
    "connections": (run_connections, (), True, "more connections than the limits, every port"),
}


def format_counts(label: str, counts: Counter, prefix: str = "", exclude=(), skip_prefix: str | None = None) -> str:
    """`label: KEY n, KEY n` for the keys starting with `prefix` (shown without it)."""
    items = [(key[len(prefix):], value) for key, value in sorted(counts.items())
             if key.startswith(prefix) and key not in exclude and key not in REFUSED_KEYS
             and not (skip_prefix and key.startswith(skip_prefix))]
    return f"{label}: " + (", ".join(f"{key} {value}" for key, value in items) or "nothing")


# ---- one storm, measured ------------------------------------------------------------------------------------------

@dataclass
class Result:
    storm: str
    engine: str | None = None
    outcome: Outcome | None = None
    error: str | None = None
    seconds: float = 0.0
    rss: tuple = (None, None, None)          # before, peak, after (bytes)
    probes: dict = field(default_factory=dict)
    phase_worst: list = field(default_factory=list)
    lateness_ms: float | None = None         # the probe process's own worst wake-up lateness
    alive: bool | None = None
    exit_status: int | None = None
    serving_after: float | None = None
    log_lines: Counter = field(default_factory=Counter)
    log_tail: str = ""

    @property
    def name(self) -> str:
        """The storm, with the OpenOLT engine for the storms run on each."""
        return f"{self.storm} [{self.engine}]" if self.engine and STORMS[self.storm][2] else self.storm

    @property
    def growth_mib(self) -> float | None:
        before, peak, _ = self.rss
        return None if before is None or peak is None else (peak - before) / MIB

    @property
    def worst_ms(self) -> float | None:
        values = [p["max_ms"] for p in self.probes.values() if p["max_ms"] is not None]
        return max(values) if values else None

    def checks(self) -> dict:
        """The storm's own targets (Outcome.checks): name -> (PASS/FAIL/n/a, shown value)."""
        return {name: ("n/a" if ok is None else "PASS" if ok else "FAIL", value)
                for name, ok, value in (self.outcome.checks if self.outcome else [])}

    def verdicts(self) -> dict:
        """target name -> (PASS/FAIL/n/a, shown value) for the three targets every storm has."""
        timed_out = sum(p["timeouts"] for p in self.probes.values())
        if self.alive is False:
            state = "dead"
        elif self.serving_after is None:
            state = "not serving"
        elif timed_out:
            state = f"{timed_out} timeouts"
        else:
            state = "alive" if self.alive else "serving"
        growth, worst = self.growth_mib, self.worst_ms
        return {
            "no crash or wedge": ("PASS" if state in ("alive", "serving") else "FAIL", state),
            f"RSS growth < {TARGET_RSS_MIB:g} MiB": ("n/a" if growth is None else
                                                     "PASS" if growth < TARGET_RSS_MIB else "FAIL",
                                                     "n/a" if growth is None else f"{growth:+.1f} MiB"),
            f"worst stall < {TARGET_STALL_MS:g} ms": ("n/a" if worst is None else
                                                      "PASS" if worst < TARGET_STALL_MS else "FAIL",
                                                      "n/a" if worst is None else f"{worst:.0f} ms"),
        }


def _log_levels(text: str) -> Counter:
    return Counter(level for line in text.splitlines() for level in ("critical", "error")
                   if f"#{level}]" in line)


def measure(name: str, engine: str | None, plan: Plan, args) -> Result:
    """Run storm `name` against a fresh daemon whose OpenOLT server runs on `engine` (or against args.target,
    engine None) with the probes and the RSS monitor around it."""
    function, extra_probes, _, _ = STORMS[name]
    result = Result(name, engine)
    daemon = None
    token = read_token(args.api_token_file)
    try:
        if args.target:
            target = Target(args.target, {p: getattr(args, p.replace("-", "_") + "_port") for p in PORT_NAMES},
                            args.pid, token)
        else:
            extra = ["--api-token-file", args.api_token_file] if args.api_token_file else []
            daemon = Daemon("--pon", str(args.pon), "--onu", str(args.onu), "--delay", "0",
                            "--grpc-engine", engine, *extra)
            if token:   # Daemon polls GET /v1/olt without a token: a 401 is an answer too, wait for it instead
                daemon._get = _token_getter(daemon, token)
            daemon.start()
            target = Target("127.0.0.1", {p: daemon.ports[p] for p in PORT_NAMES}, daemon.process.pid, token)
            time.sleep(args.settle)
        names = DEFAULT_PROBES + tuple(extra_probes)
        probe = Probe(target, names, args.probe_interval / 1000.0, args.probe_timeout)
        plan.budget = Budget(plan.storm_timeout)
        monitor = RssMonitor(target.pid, limit=int(plan.rss_limit_mib * MIB), budget=plan.budget)
        probe.start()
        monitor.start()
        started_wall, started = time.time(), time.perf_counter()
        try:
            result.outcome = function(target, plan)
        except Exception as exc:  # noqa: BLE001 - one storm failing must not stop the others
            result.error = f"{exc.__class__.__name__}: {exc}"
        finally:
            result.seconds = time.perf_counter() - started
            samples = probe.stop()
        time.sleep(args.settle)
        monitor.stop()
        result.rss = (monitor.before, monitor.peak, monitor.after)
        window = (started_wall, started_wall + result.seconds)
        lateness = samples.pop(LATENESS, [])
        result.lateness_ms = max((late for _, late, _ in lateness), default=0.0) * 1000
        result.probes = {probe_name: probe_stats(s, args.probe_timeout, window) for probe_name, s in samples.items()}
        phases = (result.outcome.phases if result.outcome else []) or [(name, started_wall)]
        for index, (phase, begin) in enumerate(phases):
            end = phases[index + 1][1] if index + 1 < len(phases) else float("inf")
            in_phase = [latency for s in samples.values() for wall, latency, status in s if begin <= wall < end]
            timed_out = any(status == "DEADLINE_EXCEEDED" for s in samples.values() for wall, _, status in s
                            if begin <= wall < end)
            worst = max(max(in_phase), args.probe_timeout if timed_out else 0.0) * 1000 if in_phase else None
            result.phase_worst.append((phase, worst))
        if daemon is not None:
            result.exit_status = daemon.process.poll()
            result.alive = result.exit_status is None
        elif target.pid is not None:
            try:
                os.kill(target.pid, 0)
                result.alive = True
            except OSError:
                result.alive = False
        if result.alive is not False:
            result.serving_after = wait_serving(target, names, args.recover)
    except Exception as exc:  # noqa: BLE001 - the daemon did not start, the probes did not start...
        result.error = result.error or f"{exc.__class__.__name__}: {exc}"
    finally:
        if daemon is not None:
            if daemon.process is not None:
                if result.alive is None:
                    result.exit_status = daemon.process.poll()
                    result.alive = result.exit_status is None
                daemon.log.flush()
                daemon.log.seek(0)
                text = daemon.log.read().decode("utf-8", "replace")
                result.log_lines = _log_levels(text)
                if not result.alive:
                    result.log_tail = "\n".join(text.splitlines()[-15:])
            daemon.stop()
    return result


def _token_getter(daemon: Daemon, token: str):
    def get(path: str, timeout: float) -> int:
        return http_call("127.0.0.1", daemon.ports["rest-v1"], "GET", path,
                         headers={"Authorization": f"Bearer {token}"}, timeout=timeout)[0]
    return get


def read_token(path: str | None) -> str | None:
    if not path:
        return None
    with open(path) as handle:
        return handle.read().strip() or None


# ---- output -----------------------------------------------------------------------------------------------------

def mib(value: int | None) -> str:
    return "n/a" if value is None else f"{value / MIB:.1f}"


def report(result: Result) -> None:
    print(f"\n== {result.name}: {STORMS[result.storm][3]}")
    if result.outcome is not None:
        print(f"   storm: {result.outcome.what} ({result.seconds:.1f} s)")
        for line in result.outcome.lines:
            print(f"   {line}")
    if result.error:
        print(f"   storm error: {result.error}")
    before, peak, after = result.rss
    print(f"   RSS MiB: before {mib(before)}, peak {mib(peak)}, after {mib(after)}")
    for name, stats in result.probes.items():
        median = "n/a" if stats["median_ms"] is None else f"{stats['median_ms']:.1f}"
        worst = "n/a" if stats["max_ms"] is None else f"{stats['max_ms']:.1f}"
        failures = ", ".join(f"{code} {n}" for code, n in sorted(stats["failures"].items())) or "none"
        gap = "" if stats["gap_ms"] is None else f", longest without an OK answer {stats['gap_ms']:.0f} ms"
        print(f"   probe {name:<15} {stats['calls']:>5} calls, median {median} ms, max {worst} ms{gap}; "
              f"failures: {failures} ({stats['timeouts']} timed out)")
    if result.lateness_ms is not None:
        print(f"   the probe process itself woke up to {result.lateness_ms:.0f} ms late (the machine's share of "
              "a stall of that size)")
    if len(result.phase_worst) > 1:
        print("   worst stall by phase: " + ", ".join(
            f"{phase} " + ("no probe call" if ms is None else f"{ms:.0f} ms") for phase, ms in result.phase_worst))
    counts = result.outcome.counts if result.outcome else Counter()
    print("   refused (attacker saw): " + ", ".join(f"{key} {counts.get(key, 0)}" for key in REFUSED_KEYS))
    alive = {True: "yes", False: f"NO (exit status {result.exit_status})", None: "unknown (no --pid)"}[result.alive]
    serving = ("no" if result.serving_after is None else f"yes, after {result.serving_after:.1f} s")
    print(f"   daemon alive at end: {alive}; every probe answered again: {serving}")
    if result.log_lines:
        print("   daemon log: " + ", ".join(f"{n} {level}" for level, n in sorted(result.log_lines.items())))
    if result.log_tail:
        print("   last log lines:\n" + "\n".join(f"     {line}" for line in result.log_tail.splitlines()))
    for target_name, (verdict, value) in {**result.verdicts(), **result.checks()}.items():
        print(f"   {target_name:<24} {value:>12}  {verdict}")


def summary(results: list[Result]) -> bool:
    """The table of every storm against the three targets; True if none failed."""
    names = list(results[0].verdicts()) if results else []
    print(f"\n{'storm':<30}{'RSS +MiB':>10}{'stall ms':>10}{'refused':>9}  " + "  ".join(names) + "  own checks")
    failed = False
    for result in results:
        verdicts = result.verdicts()
        counts = result.outcome.counts if result.outcome else Counter()
        growth, worst = result.growth_mib, result.worst_ms
        cells = "  ".join(f"{verdicts[n][0]:<{len(n)}}" for n in names)
        checks = result.checks()
        states = {v[0] for v in checks.values()}
        cells += "  " + ("FAIL" if "FAIL" in states else "PASS" if "PASS" in states else "n/a" if states else "-")
        failed |= any(v[0] == "FAIL" for v in (*verdicts.values(), *checks.values())) or result.error is not None
        print(f"{result.name:<30}{'n/a' if growth is None else f'{growth:+.1f}':>10}"
              f"{'n/a' if worst is None else f'{worst:.0f}':>10}{h2raw.refused(counts):>9}  {cells}"
              + ("  (storm error)" if result.error else ""))
    return not failed


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", help="comma-separated storms to run (default: all, in order); see --list")
    parser.add_argument("--list", action="store_true", help="list the storms and exit")
    parser.add_argument("--scale", type=float, default=1.0,
                        help="multiply counts and durations (not concurrency) by this; 0.1 for a quick run")
    parser.add_argument("--no-fail", action="store_true", help="exit 0 even when a target fails")
    parser.add_argument("--hold", type=float, default=10.0, help="seconds the stream floods are held (scaled)")
    parser.add_argument("--streams", type=int, default=40, help="streams of each kind in the stream floods")
    parser.add_argument("--readers", type=int, default=20, help="stalled StreamEvents readers")
    parser.add_argument("--restarts", type=int, default=300, help="RestartgRPCServer calls (scaled)")
    parser.add_argument("--rapid-streams", type=int, default=300_000, help="rapid-reset streams (scaled)")
    parser.add_argument("--connections", type=int, default=1, help="rapid-reset connections")
    parser.add_argument("--events", type=int, default=10_000, help="alarm calls feeding slow readers (scaled)")
    parser.add_argument("--body-entries", type=int, default=1_000_000, help="ONUs in the big v0 body (scaled)")
    parser.add_argument("--depth", type=int, default=1000, help="nesting of the deep v0 body")
    parser.add_argument("--flows", type=int, default=50_000, help="FlowAdd calls (scaled)")
    parser.add_argument("--list-rounds", type=int, default=5, help="GET /v1/olt/flows and GetFlows rounds")
    parser.add_argument("--event-streams", default="8,20",
                        help="event-streams: StreamEvents calls held on one channel before GetOlt, one round each")
    parser.add_argument("--pipeline-connections", type=int, default=4, help="pipelining: connections")
    parser.add_argument("--pipeline-requests", type=int, default=150_000,
                        help="pipelining: requests per connection (scaled)")
    parser.add_argument("--pipeline-seconds", type=float, default=12.0, help="pipelining: sending time, s (scaled)")
    parser.add_argument("--held-connections", type=int, default=300, help="held-streams: connections")
    parser.add_argument("--held-seconds", type=float, default=20.0, help="held-streams: hold, s (scaled)")
    parser.add_argument("--reflection-calls", type=int, default=30,
                        help="reflection-garbage: calls per port (scaled)")
    parser.add_argument("--tcp-connections", type=int, default=200, help="connections: connections per port")
    parser.add_argument("--tcp-hold", type=float, default=10.0, help="connections: hold, s (scaled)")
    parser.add_argument("--storm-timeout", type=float, default=300.0, help="bound on a storm's sending loops, s")
    parser.add_argument("--rss-limit", type=float, default=2048.0,
                        help="stop a storm's sending once the daemon's RSS passes this many MiB (default 2048)")
    parser.add_argument("--probe-interval", type=float, default=20.0, help="ms between probe calls (default 20)")
    parser.add_argument("--probe-timeout", type=float, default=2.0, help="probe call deadline, s (default 2)")
    parser.add_argument("--settle", type=float, default=1.0, help="seconds before RSS is read (before and after)")
    parser.add_argument("--recover", type=float, default=10.0,
                        help="seconds the daemon has after a storm to answer every probe again (default 10)")
    parser.add_argument("--pon", type=int, default=4, help="PONs of the started daemon (default 4)")
    parser.add_argument("--onu", type=int, default=16, help="ONUs per PON of the started daemon (default 16)")
    parser.add_argument("--engines", default="native,grpcio",
                        help="gRPC engines (--grpc-engine: OpenOLT, v1, v0, DMI) the started daemons use: the "
                             "engine-dependent storms (--list says which) run once on each, the others on the first "
                             "(default %(default)s)")
    parser.add_argument("--api-token-file", help="start the daemon with this token file; every client of this "
                                                 "program sends the token (with --target: the target's token)")
    parser.add_argument("--anonymous-streams", action="store_true",
                        help="with a token: the stream floods send none (the wedge worked without the token)")
    parser.add_argument("--target", metavar="HOST", help="attack the daemon running at HOST instead of starting "
                                                         "one per storm (its ports: --openolt-port ...)")
    for name in PORT_NAMES:
        parser.add_argument(f"--{name}-port", type=int, default=DEFAULT_PORTS[name],
                            help=f"with --target (default {DEFAULT_PORTS[name]})")
    parser.add_argument("--pid", type=int, help="with --target: the daemon's pid (for RSS and liveness)")
    args = parser.parse_args(argv)

    if args.list:
        for name, (_, _, per_engine, what) in STORMS.items():
            print(f"{name:<20}{what}{' (on each engine)' if per_engine else ''}")
        return 0
    names = [n.strip() for n in args.only.split(",") if n.strip()] if args.only else list(STORMS)
    unknown = [n for n in names if n not in STORMS]
    if unknown:
        parser.error(f"unknown storm(s) {', '.join(unknown)}; known: {', '.join(STORMS)}")
    engines = [e.strip() for e in args.engines.split(",") if e.strip()]
    if not engines or any(e not in ("auto", "native", "grpcio") for e in engines):
        parser.error("--engines takes a comma-separated list of auto, native, grpcio")
    if args.target and args.target not in ("127.0.0.1", "localhost", "::1"):
        print(f"warning: attacking {args.target}, which is not loopback", file=sys.stderr)
    plan = Plan(scale=args.scale, hold=args.hold, streams=args.streams, readers=args.readers,
                restarts=args.restarts, rapid_streams=args.rapid_streams, connections=args.connections,
                events=args.events, body_entries=args.body_entries, depth=args.depth, flows=args.flows,
                list_rounds=args.list_rounds, storm_timeout=args.storm_timeout, rss_limit_mib=args.rss_limit,
                anonymous_streams=args.anonymous_streams,
                event_streams=tuple(int(n) for n in args.event_streams.split(",") if n.strip()),
                pipeline_connections=args.pipeline_connections, pipeline_requests=args.pipeline_requests,
                pipeline_seconds=args.pipeline_seconds, held_connections=args.held_connections,
                held_seconds=args.held_seconds, reflection_calls=args.reflection_calls,
                tcp_connections=args.tcp_connections, tcp_hold=args.tcp_hold)
    where = (f"target {args.target}" if args.target
             else f"a fresh daemon per storm ({args.pon}x{args.onu} ONUs, delay 0, OpenOLT engines "
                  f"{', '.join(engines)})")
    print(f"oltsim abuse storms, scale {args.scale:g}, {where}; python {sys.version.split()[0]}, "
          f"{os.cpu_count()} CPUs shared by the attacker, the probes and the daemon")
    print(f"probes: {', '.join(DEFAULT_PROBES)} every {args.probe_interval:g} ms, deadline {args.probe_timeout:g} s; "
          f"targets: no crash or wedge, RSS growth (peak - before) < {TARGET_RSS_MIB:g} MiB, "
          f"worst stall < {TARGET_STALL_MS:g} ms")
    results = []
    runs = [(name, None) for name in names] if args.target else [
        (name, engine) for name in names for engine in (engines if STORMS[name][2] else engines[:1])]
    for name, engine in runs:
        result = measure(name, engine, plan, args)
        report(result)
        results.append(result)
        sys.stdout.flush()
    ok = summary(results)
    return 0 if ok or args.no_fail else 1


if __name__ == "__main__":
    sys.exit(main())
