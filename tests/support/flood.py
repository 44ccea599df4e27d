#!/usr/bin/env python3
"""Connection flood: thousands of idle or slowloris connections on one port, and a legitimate client of
every port probed each second throughout.

For each target port (--ports) and each flood mode (--modes) it starts a fresh daemon (`twistd -n --pidfile=
oltsim` from this checkout, every listener on a free 127.0.0.1 port, tests.support.daemon's Daemon; SADIS is on
by default), then:

1. starts the probes, in a process of their own: every second, on every port, a fresh legitimate client from
   127.0.0.1 (the adapter: a new gRPC channel, `HeartbeatCheck`, then `EnableIndication` read up to its first
   indication; `GET /v1/olt`; `bbsim.BBSim/GetOlt`; the v0 `OLTStatus` and `GET /v0/olt/status`; SADIS
   `GET /v2/cfg`; DMI `GetManagedDevices`), each with a new connection, recording its latency and status;
2. reads the daemon's RSS (VmRSS, /proc/<pid>/status) after --baseline seconds of probes: **before**;
3. opens the flood from another process: --connections sockets (default 5000) from --addresses source addresses
   (default 1000: 127.0.1.1, 127.0.1.2, ..., as many per address), non-blocking connects on a few epoll threads.
   `idle` sends nothing; `slowloris` sends one byte every --interval seconds (default 2) on each socket, a request
   head that never ends on HTTP ports (`GET /v1/olt HTTP/1.1`, then header lines), the HTTP/2 preface, SETTINGS,
   SETTINGS ACK and PINGs on gRPC ports; `preface` sends the whole HTTP/2 preface and SETTINGS at once and then
   nothing (gRPC ports; on HTTP ports it is `idle`). Whatever the server sends is read and dropped. With
   --reconnect a connection the server closed is opened again a second later (the attacker pushes back);
4. holds it --hold seconds (default 60) from the moment every connect has been answered, sampling RSS every
   250 ms (**peak**), then closes every socket, probes --tail seconds more, and reads RSS again --after seconds
   (default 60) after the flood ended (**after**).

It prints the machine's load average at start, then per (port, mode) the flood (connected, failed, closed by the
server and when, open at the end), the probes during the flood per surface (ok, failed, over target, median and
max latency), RSS before/peak/after and what the daemon logged about connections; then one summary table with
PASS/FAIL against the targets: every probe during the flood ok within 1 s (EnableIndication within 1 s plus
the model's reconnect pause, `Timings.reconnect_delay`, 1 s: the OLT answers a second EnableIndication after that
pause on purpose, as BBSim does); RSS peak - before <= 150 MB; after <= before + 20 MB. Exits 0 whatever it
measures. The daemon logs are kept, one file per run, in --log-dir (default a new folder under /tmp).

    python tests/support/flood.py [--ports openolt,rest-v1] [--modes idle,slowloris] [--connections 5000]
                                  [--addresses 1000] [--hold 60] [--after 60] [--reconnect] [--log-dir DIR]
    python tests/support/flood.py --connections 500 --hold 10 --after 10     # a quick run, about 40 s per (port, mode)
"""
from __future__ import annotations

import argparse
import errno
import http.client
import multiprocessing
import os
import re
import resource
import select
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter, deque
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from tests.support.daemon import Daemon, rss_bytes  # noqa: E402

os.environ.setdefault("GRPC_VERBOSITY", "ERROR")

MB = 1_000_000
MIB = 1024 * 1024
PORT_NAMES = ("openolt", "grpc-v1", "grpc-v0", "rest-v1", "rest-v0", "sadis", "dmi")
HTTP_PORTS = frozenset({"rest-v1", "rest-v0", "sadis"})
MODES = ("idle", "slowloris", "preface")
#: the targets: every probe within this many seconds, RSS growth at the peak and left a minute after, in MB
TARGET_LATENCY = 1.0
TARGET_GROWTH_MB = 150.0
TARGET_BACK_MB = 20.0
#: what each probed surface answers on (port name), in the order the tables show them
SURFACES = {
    "HeartbeatCheck": "openolt",
    "EnableIndication": "openolt",
    "GetOlt": "grpc-v1",
    "OLTStatus": "grpc-v0",
    "GET /v1/olt": "rest-v1",
    "GET /v0/olt/status": "rest-v0",
    "SADIS /v2/cfg": "sadis",
    "DMI GetManagedDevices": "dmi",
}
PROBE_TIMEOUT = 5.0
CONNECT_TIMEOUT = 5.0
MAX_PENDING_CONNECTS = 128   # per flood thread

H2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
H2_SETTINGS = b"\x00\x00\x00\x04\x00\x00\x00\x00\x00"
H2_SETTINGS_ACK = b"\x00\x00\x00\x04\x01\x00\x00\x00\x00"
H2_PING = b"\x00\x00\x08\x06\x00\x00\x00\x00\x00" + b"flood!!!"


def reconnect_delay() -> float:
    try:
        from oltsim.model.olt import Timings
        return Timings().reconnect_delay
    except Exception:  # noqa: BLE001 - an older checkout: BBSim's pause
        return 1.0


def surface_target(surface: str) -> float:
    return TARGET_LATENCY + (reconnect_delay() if surface == "EnableIndication" else 0.0)


def raise_nofile() -> int:
    """Soft RLIMIT_NOFILE up to the hard limit (the flood needs more than 5000 descriptors); returns the soft limit."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = 65536 if hard == resource.RLIM_INFINITY else hard
    if soft != resource.RLIM_INFINITY and soft < want:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
            soft = want
        except (OSError, ValueError):
            pass
    return soft


def source_addresses(count: int) -> list[str]:
    """`count` loopback addresses 127.0.x.y, x from 1, y in 1..254 (never 127.0.0.1, the legitimate client's)."""
    return [f"127.0.{1 + i // 254}.{1 + i % 254}" for i in range(count)]


# ---- the flood: non-blocking sockets on a few epoll threads, in a process of its own ----------------------------

def _byte_stream(http_port: bool):
    """The slowloris bytes of one connection, endless: a request head that never ends, or HTTP/2 frames."""
    if http_port:
        yield from b"GET /v1/olt HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        n = 0
        while True:
            yield from f"X-Flood-{n}: x\r\n".encode()
            n += 1
    else:
        yield from H2_PREFACE + H2_SETTINGS + H2_SETTINGS_ACK
        while True:
            yield from H2_PING


class _Conn:
    __slots__ = ("sock", "source", "state", "started", "opened", "stream")

    def __init__(self, sock, source, started):
        self.sock, self.source, self.state, self.started = sock, source, "connecting", started
        self.opened = 0.0
        self.stream = None


class FloodThread(threading.Thread):
    """Opens its share of the sockets and keeps them: reads and drops what the server sends, sends the slowloris
    bytes, counts what happens (`counts`) and the age of each connection the server closed (`closed_ages`)."""

    def __init__(self, host: str, port: int, sources: list[str], mode: str, interval: float, http_port: bool,
                 reconnect: bool, stop: threading.Event):
        super().__init__(daemon=True)
        self.host, self.port, self.mode, self.interval = host, port, mode, interval
        self.http_port, self.reconnect, self.stop = http_port, reconnect, stop
        self.pending = deque(sources)
        self.retry: deque = deque()          # (when, source)
        self.conns: dict[int, _Conn] = {}
        self.counts: Counter = Counter()
        self.closed_ages: list[float] = []
        self.open = 0
        self.connecting = 0
        self.initial_left = len(sources)     # first connects not answered yet
        self.sent = 0

    def _close(self, fd: int, conn: _Conn, reason: str | None, now: float, epoll) -> None:
        try:
            epoll.unregister(fd)
        except (OSError, ValueError):
            pass
        conn.sock.close()
        del self.conns[fd]
        if conn.state == "open":
            self.open -= 1
            if reason:
                self.counts[f"closed by server ({reason})"] += 1
                self.closed_ages.append(now - conn.opened)
        conn.state = "closed"
        if self.reconnect and reason and not self.stop.is_set():
            self.retry.append((now + 1.0, conn.source))

    def _connect(self, source: str, now: float, epoll) -> None:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setblocking(False)
        try:
            sock.bind((source, 0))
            err = sock.connect_ex((self.host, self.port))
        except OSError as exc:
            err = exc.errno or -1
        if err not in (0, errno.EINPROGRESS):
            sock.close()
            self.counts[f"connect failed {errno.errorcode.get(err, err)}"] += 1
            self._initial_done(source)
            return
        conn = _Conn(sock, source, now)
        self.conns[sock.fileno()] = conn
        self.connecting += 1
        epoll.register(sock.fileno(), select.EPOLLOUT | select.EPOLLIN | select.EPOLLRDHUP)

    def _initial_done(self, source) -> None:
        if self.initial_left > 0:
            self.initial_left -= 1

    def run(self) -> None:
        epoll = select.epoll()
        sendq: deque = deque()   # (when, fd, conn), in time order: every socket sends at the same interval
        last_sweep = time.monotonic()
        try:
            while not self.stop.is_set():
                now = time.monotonic()
                while self.retry and self.retry[0][0] <= now:
                    self.pending.append(self.retry.popleft()[1])
                    self.counts["reconnects"] += 1
                while self.pending and self.connecting < MAX_PENDING_CONNECTS:
                    self._connect(self.pending.popleft(), now, epoll)
                for fd, event in epoll.poll(0.1):
                    conn = self.conns.get(fd)
                    if conn is None:
                        continue
                    now = time.monotonic()
                    if conn.state == "connecting":
                        self.connecting -= 1
                        self._initial_done(conn.source)
                        err = conn.sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
                        if err:
                            self.counts[f"connect failed {errno.errorcode.get(err, err)}"] += 1
                            conn.state = "failed"
                            self._close(fd, conn, None, now, epoll)
                            continue
                        conn.state, conn.opened = "open", now
                        self.open += 1
                        self.counts["connected"] += 1
                        epoll.modify(fd, select.EPOLLIN | select.EPOLLRDHUP)
                        if self.mode == "slowloris":
                            conn.stream = _byte_stream(self.http_port)
                            sendq.append((now, fd, conn))
                        elif self.mode == "preface" and not self.http_port:
                            try:
                                self.sent += conn.sock.send(H2_PREFACE + H2_SETTINGS + H2_SETTINGS_ACK)
                            except OSError:
                                pass
                        continue
                    reason = None
                    if event & select.EPOLLIN:
                        try:
                            while True:
                                data = conn.sock.recv(65536)
                                if not data:
                                    reason = "FIN"
                                    break
                                self.counts["bytes received"] += len(data)
                        except BlockingIOError:
                            pass
                        except OSError as exc:
                            reason = errno.errorcode.get(exc.errno, str(exc.errno))
                    if reason is None and event & (select.EPOLLHUP | select.EPOLLERR | select.EPOLLRDHUP):
                        reason = "HUP"
                    if reason:
                        self._close(fd, conn, reason, now, epoll)
                now = time.monotonic()
                while sendq and sendq[0][0] <= now:
                    _, fd, conn = sendq.popleft()
                    if conn.state != "open":
                        continue
                    try:
                        conn.sock.send(bytes((next(conn.stream),)))
                        self.sent += 1
                    except BlockingIOError:
                        pass
                    except OSError as exc:
                        self._close(fd, conn, errno.errorcode.get(exc.errno, "send error"), now, epoll)
                        continue
                    sendq.append((now + self.interval, fd, conn))
                if now - last_sweep >= 0.5:   # connects the server never answered
                    last_sweep = now
                    for fd, conn in list(self.conns.items()):
                        if conn.state == "connecting" and now - conn.started > CONNECT_TIMEOUT:
                            self.connecting -= 1
                            self._initial_done(conn.source)
                            self.counts["connect failed timeout"] += 1
                            conn.state = "failed"
                            self._close(fd, conn, None, now, epoll)
        finally:
            for fd, conn in list(self.conns.items()):
                if conn.state == "open":
                    self.counts["open at the end"] += 1
                conn.sock.close()
            self.conns.clear()
            epoll.close()


def flood_main(pipe, host: str, port: int, connections: int, addresses: int, mode: str, interval: float,
               http_port: bool, reconnect: bool, threads: int) -> None:
    """Child process. Waits for 'go', opens the flood, sends ('opened', seconds, open count) once every first connect
    was answered (or 120 s passed), samples the open count every second, and on 'stop' closes everything and sends
    back the counts."""
    raise_nofile()
    sources = source_addresses(max(1, addresses))
    per_socket = [sources[i % len(sources)] for i in range(connections)]
    stop = threading.Event()
    workers = [FloodThread(host, port, per_socket[i::threads], mode, interval, http_port, reconnect, stop)
               for i in range(threads)]
    pipe.recv()  # "go"
    began = time.monotonic()
    for worker in workers:
        worker.start()
    timeline = []
    reported = False
    while True:
        if pipe.poll(0.0 if not reported else 1.0):
            pipe.recv()  # "stop"
            break
        open_now = sum(w.open for w in workers)
        if not reported:
            if all(w.initial_left == 0 for w in workers) or time.monotonic() - began > 120:
                pipe.send(("opened", time.monotonic() - began, open_now))
                reported = True
                timeline.append(open_now)
            else:
                time.sleep(0.05)
        else:
            timeline.append(open_now)
    open_before_close = sum(w.open for w in workers)
    stop.set()
    for worker in workers:
        worker.join(30)
    counts: Counter = Counter()
    ages: list[float] = []
    for worker in workers:
        counts.update(worker.counts)
        ages.extend(worker.closed_ages)
        counts["bytes sent"] += worker.sent
    pipe.send({"counts": counts, "ages": ages, "timeline": timeline, "open_before_close": open_before_close})


# ---- probes: a fresh legitimate client of every port, every second, in a process of their own ------------------

def _grpc_channel(address: str):
    import grpc
    return grpc.insecure_channel(address, options=[("grpc.use_local_subchannel_pool", 1),
                                                   ("grpc.enable_retries", 0)])


def _status(exc: BaseException) -> str:
    import grpc
    if isinstance(exc, grpc.RpcError):
        try:
            return exc.code().name
        except Exception:  # noqa: BLE001
            return "RpcError"
    return exc.__class__.__name__


def _unary(address: str, path: str, request, response_type) -> None:
    channel = _grpc_channel(address)
    try:
        channel.unary_unary(path, request_serializer=type(request).SerializeToString,
                            response_deserializer=response_type.FromString)(request, timeout=PROBE_TIMEOUT)
    finally:
        channel.close()


def _http_get(port: int, path: str) -> str:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=PROBE_TIMEOUT)
    try:
        connection.request("GET", path)
        response = connection.getresponse()
        response.read()
        return "OK" if response.status == 200 else f"HTTP {response.status}"
    finally:
        connection.close()


def _adapter_probe(port: int, record) -> None:
    """The adapter: a new channel, HeartbeatCheck, then EnableIndication up to its first indication."""
    from voltha_protos import openolt_pb2
    channel = _grpc_channel(f"127.0.0.1:{port}")
    wall, started = time.time(), time.perf_counter()
    try:
        try:
            channel.unary_unary("/openolt.Openolt/HeartbeatCheck",
                                request_serializer=openolt_pb2.Empty.SerializeToString,
                                response_deserializer=openolt_pb2.Heartbeat.FromString)(
                openolt_pb2.Empty(), timeout=PROBE_TIMEOUT)
        except Exception as exc:  # noqa: BLE001 - recorded
            record("HeartbeatCheck", wall, time.perf_counter() - started, _status(exc))
            return
        record("HeartbeatCheck", wall, time.perf_counter() - started, "OK")
        wall, started = time.time(), time.perf_counter()
        stream = channel.unary_stream("/openolt.Openolt/EnableIndication",
                                      request_serializer=openolt_pb2.Empty.SerializeToString,
                                      response_deserializer=openolt_pb2.Indication.FromString)(
            openolt_pb2.Empty(), timeout=PROBE_TIMEOUT + reconnect_delay())
        try:
            next(stream)
            status = "OK"
        except StopIteration:
            status = "ended without an indication"
        except Exception as exc:  # noqa: BLE001 - recorded
            status = _status(exc)
        record("EnableIndication", wall, time.perf_counter() - started, status)
        stream.cancel()
    finally:
        channel.close()


def _probe_calls(ports: dict) -> dict:
    """surface -> function() raising on failure or returning a status ("OK" or what went wrong)."""
    from dmi import hw_management_service_pb2
    from google.protobuf import empty_pb2

    from oltsim._proto import bbsim_pb2, legacy_pb2

    def grpc_call(port_name, path, request, response_type):
        def call():
            _unary(f"127.0.0.1:{ports[port_name]}", path, request, response_type)
            return "OK"
        return call

    return {
        "GetOlt": grpc_call("grpc-v1", "/bbsim.BBSim/GetOlt", bbsim_pb2.Empty(), bbsim_pb2.Olt),
        "OLTStatus": grpc_call("grpc-v0", "/legacy.BBSimService/OLTStatus", legacy_pb2.Empty(),
                               legacy_pb2.OLTStatusResponse),
        "GET /v1/olt": lambda: _http_get(ports["rest-v1"], "/v1/olt"),
        "GET /v0/olt/status": lambda: _http_get(ports["rest-v0"], "/v0/olt/status"),
        "SADIS /v2/cfg": lambda: _http_get(ports["sadis"], "/v2/cfg"),
        "DMI GetManagedDevices": grpc_call("dmi", "/dmi.NativeHWManagementService/GetManagedDevices",
                                           empty_pb2.Empty(), hw_management_service_pb2.ManagedDevicesResponse),
    }


def probe_main(pipe, ports: dict, period: float) -> None:
    """Child process: one thread per surface (the adapter's two in one), each probing every `period` seconds
    (start to start; back to back when a probe takes longer) until 'stop'; sends back [(surface, wall, latency,
    status)]."""
    samples: list = []
    lock = threading.Lock()
    stop = threading.Event()

    def record(surface, wall, latency, status):
        with lock:
            samples.append((surface, wall, latency, status))

    def loop(name, probe):
        while not stop.is_set():
            started = time.perf_counter()
            probe()
            stop.wait(max(0.0, period - (time.perf_counter() - started)))

    def simple(surface, call):
        def probe():
            wall, started = time.time(), time.perf_counter()
            try:
                status = call()
            except Exception as exc:  # noqa: BLE001 - recorded
                status = _status(exc)
            record(surface, wall, time.perf_counter() - started, status)
        return probe

    threads = [threading.Thread(target=loop, args=("adapter", lambda: _adapter_probe(ports["openolt"], record)),
                                daemon=True)]
    for surface, call in _probe_calls(ports).items():
        threads.append(threading.Thread(target=loop, args=(surface, simple(surface, call)), daemon=True))
    for thread in threads:
        thread.start()
    pipe.send("ready")
    pipe.recv()  # "stop"
    stop.set()
    for thread in threads:
        thread.join(PROBE_TIMEOUT * 3)
    with lock:
        pipe.send(list(samples))


# ---- one run: a fresh daemon, one port, one mode ----------------------------------------------------------------

class LoggedDaemon(Daemon):
    """tests.support.daemon's Daemon with its output kept in a named file."""

    def __init__(self, log_path: Path, *arguments: str):
        super().__init__(*arguments)
        self.log.close()
        self.log_path = log_path
        self.log = open(log_path, "w+b")  # noqa: SIM115 - closed by Daemon.stop


def established(port: int) -> int:
    """TCP connections the kernel holds established on the server side of `port` (what the daemon accepted or has
    in its accept queue; a client whose handshake the full accept queue dropped believes it is connected, but is
    not counted here)."""
    try:
        out = subprocess.run(["ss", "-Htn", "state", "established", f"sport = :{port}"], capture_output=True,
                             text=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return -1
    return sum(1 for line in out.splitlines() if line.strip())


def listen_overflows() -> int:
    """The kernel's TcpExt ListenOverflows (machine-wide): handshakes dropped because an accept queue was full. A
    probe whose SYN is dropped so waits for its retransmission, 1 s later."""
    try:
        lines = Path("/proc/net/netstat").read_text().splitlines()
    except OSError:
        return -1
    for keys, values in zip(lines[::2], lines[1::2]):
        if keys.startswith("TcpExt:"):
            table = dict(zip(keys.split()[1:], values.split()[1:]))
            return int(table.get("ListenOverflows", -1))
    return -1


def descriptors(pid: int) -> int:
    try:
        return len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return -1


class RssSampler(threading.Thread):
    """The daemon's VmRSS every `period` seconds (peak), and every second its descriptors and the connections
    established on the flooded port (server side): peak and timeline."""

    def __init__(self, pid: int, port: int, period: float = 0.25):
        super().__init__(daemon=True)
        self.pid, self.port, self.period = pid, port, period
        self.peak = 0
        self.fds_peak = 0
        self.established: list[tuple[float, int]] = []   # (time.time(), count)
        self.stop = threading.Event()

    def run(self) -> None:
        last = 0.0
        while not self.stop.is_set():
            try:
                self.peak = max(self.peak, rss_bytes(self.pid))
            except (OSError, RuntimeError):
                return
            now = time.monotonic()
            if now - last >= 1.0:
                last = now
                self.fds_peak = max(self.fds_peak, descriptors(self.pid))
                self.established.append((time.time(), established(self.port)))
            self.stop.wait(self.period)


LOG_PATTERNS = {
    "evicted": re.compile(r"connections?-evicted"),
    "refused": re.compile(r"connections?-refused"),
    "head timeout": re.compile(r"connection-head-timeout"),
    "descriptors": re.compile(r"descriptor|Too many open files|EMFILE", re.I),
    "errors": re.compile(r"Traceback|\berror\b|Unhandled", re.I),
}


def log_summary(path: Path) -> tuple[Counter, list[str]]:
    counts: Counter = Counter()
    samples: list[str] = []
    try:
        lines = path.read_text(errors="replace").splitlines()
    except OSError:
        return counts, samples
    for line in lines:
        for key, pattern in LOG_PATTERNS.items():
            if pattern.search(line):
                counts[key] += 1
                if key in ("descriptors", "errors", "head timeout") and len(samples) < 6:
                    samples.append(line[:200])
    evicted = sum(int(m) for m in re.findall(r"connections-evicted.*?count=(\d+)", "\n".join(lines)))
    if evicted:
        counts["evicted (summed count=)"] = evicted
    return counts, samples


def run_one(port_name: str, mode: str, args, log_dir: Path) -> dict:
    log_path = log_dir / f"{port_name}-{mode}.log"
    ctx = multiprocessing.get_context("spawn")
    result = {"port": port_name, "mode": mode, "log": str(log_path)}
    with LoggedDaemon(log_path, *args.daemon_args) as daemon:
        daemon.start()
        pid = daemon.process.pid
        probe_pipe, probe_child = ctx.Pipe()
        probes = ctx.Process(target=probe_main, args=(probe_child, daemon.ports, args.period), daemon=True)
        probes.start()
        flood_pipe, flood_child = ctx.Pipe()
        flood = ctx.Process(target=flood_main, args=(flood_child, "127.0.0.1", daemon.ports[port_name],
                                                     args.connections, args.addresses, mode, args.interval,
                                                     port_name in HTTP_PORTS, args.reconnect, args.threads),
                            daemon=True)
        flood.start()
        try:
            if not probe_pipe.poll(60):
                raise RuntimeError("the probes did not start")
            probe_pipe.recv()
            time.sleep(args.baseline)
            result["rss_before"] = rss_bytes(pid)
            result["fds_before"] = descriptors(pid)
            overflows = listen_overflows()
            sampler = RssSampler(pid, daemon.ports[port_name])
            sampler.start()
            flood_start = time.time()
            flood_pipe.send("go")
            if not flood_pipe.poll(180):
                raise RuntimeError("the flood did not open within 180 s")
            _, open_seconds, open_count = flood_pipe.recv()
            result["open_seconds"], result["open_at_hold_start"] = open_seconds, open_count
            time.sleep(args.hold)
            flood_stop = time.time()
            result["listen_overflows"] = listen_overflows() - overflows
            flood_pipe.send("stop")
            if not flood_pipe.poll(120):
                raise RuntimeError("the flood did not report")
            result["flood"] = flood_pipe.recv()
            flood_closed = time.time()
            time.sleep(args.tail)
            probe_pipe.send("stop")
            if not probe_pipe.poll(60):
                raise RuntimeError("the probes did not report")
            samples = probe_pipe.recv()
            sampler.stop.set()
            sampler.join()
            result["rss_peak"] = max(sampler.peak, result["rss_before"])
            result["fds_peak"] = sampler.fds_peak
            result["established"] = sampler.established
            rest = args.after - (time.time() - flood_closed)
            if rest > 0:
                time.sleep(rest)
            result["rss_after"] = rss_bytes(pid)
            result["fds_after"] = descriptors(pid)
            result["alive"] = daemon.process.poll() is None
        finally:
            for pipe in (flood_pipe, probe_pipe):
                try:
                    pipe.send("stop")
                except (OSError, BrokenPipeError):
                    pass
            for process in (flood, probes):
                process.join(30)
                if process.is_alive():
                    process.terminate()
                    process.join(10)
        result["samples"] = samples
        result["window"] = (flood_start, flood_stop)
    result["log_counts"], result["log_samples"] = log_summary(log_path)
    return result


# ---- reporting ------------------------------------------------------------------------------------------------

def probe_table(result: dict) -> tuple[list[str], bool, int, float]:
    """Lines of the per-surface table for the probes during the flood; (lines, all ok within target, failures,
    max latency of the surfaces judged at 1 s)."""
    start, stop = result["window"]
    during: dict[str, list] = {s: [] for s in SURFACES}
    baseline: dict[str, list] = {s: [] for s in SURFACES}
    for surface, wall, latency, status in result["samples"]:
        if wall < stop and wall + latency >= start:
            during[surface].append((latency, status, wall))
        elif wall + latency < start:
            baseline[surface].append((latency, status))
    lines = [f"  {'probe (port)':<38}{'ok':>5}{'failed':>8}{'slow':>6}{'median ms':>11}{'max ms':>9}"
             f"{'base ms':>9}  {'target':<9}verdict"]
    all_ok, failures, worst = True, 0, 0.0
    for surface, port in SURFACES.items():
        entries = during[surface]
        target = surface_target(surface)
        ok = [lat for lat, st, _ in entries if st == "OK"]
        failed = Counter(st for _, st, _ in entries if st != "OK")
        slow = sum(1 for lat, st, _ in entries if st == "OK" and lat > target)
        base = [lat for lat, st in baseline[surface] if st == "OK"]
        good = bool(entries) and not failed and slow == 0
        all_ok &= good
        failures += sum(failed.values())
        if surface != "EnableIndication" and entries:
            worst = max(worst, max(lat for lat, _, _ in entries))
        med = f"{statistics.median(ok) * 1000:.1f}" if ok else "-"
        mx = f"{max(lat for lat, _, _ in entries) * 1000:.1f}" if entries else "-"
        bm = f"{statistics.median(base) * 1000:.1f}" if base else "-"
        lines.append(f"  {surface + ' (' + port + ')':<38}{len(ok):>5}{sum(failed.values()):>8}{slow:>6}{med:>11}"
                     f"{mx:>9}{bm:>9}  {'<= ' + format(target, 'g') + ' s':<9}{'PASS' if good else 'FAIL'}")
        bad = [(wall, lat, st) for lat, st, wall in entries if st != "OK" or lat > target]
        if bad:
            lines.append(f"      failed or slow: {dict(failed)}; at (start, s after the flood began, latency): " + ", ".join(
                f"{time.strftime('%H:%M:%S', time.gmtime(wall))}.{int(wall % 1 * 1000):03d} +{wall - start:.1f} s "
                f"{lat * 1000:.0f} ms {st}" for wall, lat, st in bad[:5]))
    return lines, all_ok, failures, worst


def report(result: dict, args) -> dict:
    flood = result.get("flood", {})
    counts = flood.get("counts", Counter())
    ages = flood.get("ages", [])
    timeline = flood.get("timeline", [])
    print(f"\n== {result['port']} / {result['mode']}: {args.connections} connections from {args.addresses} "
          f"addresses, held {args.hold:g} s{' (reconnecting)' if args.reconnect else ''} ==")
    print(f"  daemon log: {result['log']}")
    failed = {k[len('connect failed '):]: v for k, v in counts.items() if k.startswith("connect failed")}
    print(f"  flood: connected {counts['connected']} (of {args.connections}{', reconnects included' if args.reconnect else ''}),"
          f" connect failures {sum(failed.values())} {failed or ''}; all connects answered in "
          f"{result.get('open_seconds', 0):.1f} s, open then {result.get('open_at_hold_start', 0)}")
    closed = {k: v for k, v in counts.items() if k.startswith("closed by server")}
    if ages:
        within1 = sum(1 for a in ages if a < 1.0)
        print(f"  closed by the server: {sum(closed.values())} {closed}, {within1} within 1 s of connect, median age "
              f"{statistics.median(ages):.1f} s, max {max(ages):.1f} s")
    else:
        print("  closed by the server: 0")
    if timeline:
        print(f"  open during the hold: min {min(timeline)}, max {max(timeline)}, at the end "
              f"{flood.get('open_before_close', 0)}; sent {counts['bytes sent']} B, received {counts['bytes received']} B")
    start, stop = result["window"]
    hold_counts = [n for wall, n in result.get("established", []) if start <= wall <= stop and n >= 0]
    server_held = hold_counts[-1] if hold_counts else -1
    if hold_counts:
        print(f"  server side (ss, established on the port): max {max(hold_counts)}, at the end of the hold "
              f"{server_held}; daemon descriptors: before {result.get('fds_before')}, peak {result.get('fds_peak')}, "
              f"after {result.get('fds_after')}; accept-queue overflows (kernel ListenOverflows, machine-wide) "
              f"{result.get('listen_overflows', '-')}")
    lines, probes_ok, failures, worst = probe_table(result)
    print("  probes from the flood's start to its end (slow: ok but over target; base: median before the flood)")
    for line in lines:
        print(line)
    before, peak, after = (result.get(k, 0) / MB for k in ("rss_before", "rss_peak", "rss_after"))
    growth_ok = peak - before <= TARGET_GROWTH_MB
    back_ok = after - before <= TARGET_BACK_MB
    print(f"  RSS MB: before {before:.1f}, peak {peak:.1f} (+{peak - before:.1f}, <= {TARGET_GROWTH_MB:g}: "
          f"{'PASS' if growth_ok else 'FAIL'}), {args.after:g} s after {after:.1f} (+{after - before:.1f}, "
          f"<= {TARGET_BACK_MB:g}: {'PASS' if back_ok else 'FAIL'}); daemon alive: {result.get('alive')}")
    log_counts = result.get("log_counts", {})
    print(f"  daemon log lines: {dict(log_counts) or 'nothing about connections'}")
    for line in result.get("log_samples", []):
        print(f"    | {line}")
    return {"port": result["port"], "mode": result["mode"], "connected": counts["connected"],
            "held": flood.get("open_before_close", 0), "server_held": server_held, "failures": failures, "worst": worst,
            "probes_ok": probes_ok, "before": before, "peak": peak, "after": after,
            "growth_ok": growth_ok, "back_ok": back_ok}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ports", default=",".join(PORT_NAMES), help="ports to flood, one at a time "
                        "(default %(default)s)")
    parser.add_argument("--modes", default="idle,slowloris", help=f"flood modes, of {','.join(MODES)} "
                        "(default %(default)s)")
    parser.add_argument("--connections", type=int, default=5000, help="flood sockets (default 5000)")
    parser.add_argument("--addresses", type=int, default=1000, help="source addresses 127.0.x.y (default 1000)")
    parser.add_argument("--hold", type=float, default=60.0, help="seconds the flood is held once open (default 60)")
    parser.add_argument("--after", type=float, default=60.0,
                        help="seconds after the flood ends at which RSS is read again (default 60)")
    parser.add_argument("--interval", type=float, default=2.0, help="slowloris: seconds between bytes (default 2)")
    parser.add_argument("--reconnect", action="store_true",
                        help="open again, a second later, every flood connection the server closes")
    parser.add_argument("--threads", type=int, default=4, help="flood threads (default 4)")
    parser.add_argument("--period", type=float, default=1.0, help="seconds between probes of a port (default 1)")
    parser.add_argument("--baseline", type=float, default=3.0, help="seconds of probes before the flood (default 3)")
    parser.add_argument("--tail", type=float, default=3.0, help="seconds of probes after the flood (default 3)")
    parser.add_argument("--log-dir", help="folder for the daemon logs (default a new one under /tmp)")
    parser.add_argument("--daemon-args", default="", help="more oltsim options, space separated")
    args = parser.parse_args(argv)
    ports = [p.strip() for p in args.ports.split(",") if p.strip()]
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    for name in ports:
        if name not in PORT_NAMES:
            parser.error(f"unknown port {name!r} (of {', '.join(PORT_NAMES)})")
    for mode in modes:
        if mode not in MODES:
            parser.error(f"unknown mode {mode!r} (of {', '.join(MODES)})")
    args.daemon_args = args.daemon_args.split()
    log_dir = Path(args.log_dir) if args.log_dir else Path(tempfile.mkdtemp(prefix="oltsim-flood-"))
    log_dir.mkdir(parents=True, exist_ok=True)
    nofile = raise_nofile()
    load = os.getloadavg()
    print(f"oltsim flood: {os.cpu_count()} CPUs, load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}, "
          f"python {sys.version.split()[0]}, open files {nofile}; daemon logs in {log_dir}")
    if nofile < args.connections + 256:
        print(f"warning: this process may open {nofile} files, fewer than the flood needs", file=sys.stderr)

    rows = []
    for port_name in ports:
        for mode in modes:
            try:
                rows.append(report(run_one(port_name, mode, args, log_dir), args))
            except (RuntimeError, OSError) as exc:
                print(f"\n== {port_name} / {mode}: not measured: {exc}")
            sys.stdout.flush()

    print(f"\nsummary: {args.connections} connections from {args.addresses} addresses, hold {args.hold:g} s, "
          f"RSS after {args.after:g} s; targets: probes ok within {TARGET_LATENCY:g} s (EnableIndication "
          f"{surface_target('EnableIndication'):g} s), growth <= {TARGET_GROWTH_MB:g} MB, after <= before + "
          f"{TARGET_BACK_MB:g} MB")
    header = (f"{'port':<9}{'mode':<11}{'connected':>10}{'held':>6}{'srv held':>9}{'probe fail':>11}{'max ms':>8}"
              f"{'RSS before':>11}{'peak':>7}{'after':>7}  {'probes':<7}{'growth':<7}{'after':<6}")
    print(header)
    print("-" * len(header))
    for r in rows:
        print(f"{r['port']:<9}{r['mode']:<11}{r['connected']:>10}{r['held']:>6}{r['server_held']:>9}{r['failures']:>11}"
              f"{r['worst'] * 1000:>8.0f}{r['before']:>11.1f}{r['peak']:>7.1f}{r['after']:>7.1f}  "
              f"{'PASS' if r['probes_ok'] else 'FAIL':<7}{'PASS' if r['growth_ok'] else 'FAIL':<7}"
              f"{'PASS' if r['back_ok'] else 'FAIL':<6}")
    print("(connected: client-side connects that completed; held: open at the end of the hold as the flood client sees"
          " them; srv held: established on the server side then (ss); max ms: the slowest probe of any surface but "
          "EnableIndication during the flood; RSS in MB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
