#!/usr/bin/env python3
"""Slow readers: what readers that stop reading cost the daemon during an ONU power storm.

Three cases, each on a fresh daemon (`twistd -n --pidfile= oltsim` from this checkout, every listener on a free
127.0.0.1 port, tests.support.daemon's Daemon; stopped with SIGTERM at the end):

- **grpc**: `--readers` `oltsim.v1.Oltsim/StreamEvents` streams, each on a raw HTTP/2 connection (tests.support.h2raw)
  announcing a `--window`-byte stream window and never giving credit back, with `--adapter builtin` so that every
  ONU power-cycled comes back up (OMCI, EAPOL, DHCP: many events);
- **sse**: as many readers of the REST event stream `GET /v1/events`, each a socket with a small SO_RCVBUF that
  sends the request and never reads, again with `--adapter builtin`;
- **indication**: no built-in adapter; this program is the adapter: `EnableIndication` on a raw HTTP/2 connection
  that never credits its window, `ActivateOnu` (grpcio) for every ONU and after every power-on, and `--alarms`
  ONU alarm raise/clear pairs per cycle over REST so that indications pile up for the stalled stream.

Then `--cycles` ONU power cycles over REST v1 (`DELETE` then `POST /v1/olt/onus/{sn}`, ONUs taken in turn, at
most `--rate` cycles a second). Throughout, the daemon's VmRSS is read from /proc/<pid>/status every `--interval`
seconds, one ordinary reader (grpcio StreamEvents for grpc and indication, a reading SSE client for sse) counts
the events it gets and the `dropped` they report, and `HeartbeatCheck` is called on the OpenOLT port. Printed per
case: the RSS series, the growth over the storm (peak - RSS before the readers connected) and after its first 30 s
(peak after 30 s - RSS at 30 s), what the stalled readers were told (after the storm each reads again: the gRPC
statuses that reach it, the SSE `stream-ended` events and connections closed, bytes received) and the daemon's log
lines about them, the ordinary reader's events and drops, the heartbeats; then
PASS/FAIL against the targets: growth <= 20 MiB, flat after the first 30 s (<= 5 MiB), the ordinary reader
got events and dropped none, every heartbeat answered. Exits 0 whatever it measures (a report, not a test).

    python tests/support/slow_readers.py [--cases grpc,sse,indication] [--cycles 300] [--readers 20] [--rate 5]
"""
from __future__ import annotations

import argparse
import http.client
import json
import os
import re
import socket
import sys
import threading
import time
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from tests.support import h2raw  # noqa: E402
from tests.support.daemon import Daemon, rss_bytes  # noqa: E402

os.environ.setdefault("GRPC_VERBOSITY", "ERROR")
import grpc  # noqa: E402
from voltha_protos import openolt_pb2, openolt_pb2_grpc  # noqa: E402

from oltsim._proto import oltsim_pb2, oltsim_pb2_grpc  # noqa: E402

MIB = 1024 * 1024
CASES = ("grpc", "sse", "indication")
TARGET_GROWTH_MIB = 20.0
TARGET_FLAT_MIB = 5.0
FLAT_AFTER = 30.0
ALL_READY = "builtin-adapter-all-ready"
#: daemon log lines that tell about a stalled reader (dropped events, a stream ended for it)
TOLD = re.compile(r"(events-dropped|indications-dropped|event-reader-\S+|stream-reader-\S+)[^\n]*")


class LoggedDaemon(Daemon):
    """tests.support.daemon's Daemon with its log in a file that can be read while it runs."""

    def __init__(self, *arguments: str):
        super().__init__(*arguments)
        self.log.close()
        self.log_path = Path(os.path.join(os.environ.get("TMPDIR", "/tmp"), f"oltsim-slow-readers-{os.getpid()}.log"))
        self.log = open(self.log_path, "wb")

    def text(self) -> str:
        self.log.flush()
        return self.log_path.read_text("utf-8", "replace")

    def stop(self) -> None:
        super().stop()
        self.log_path.unlink(missing_ok=True)


def rest(port: int, method: str, path: str, connection: http.client.HTTPConnection | None = None,
         timeout: float = 30.0) -> tuple[int, bytes]:
    """(status, body) of one REST v1 request, on `connection` (kept alive) if given."""
    conn = connection or http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request(method, path)
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        if connection is None:
            conn.close()


def wait_until(predicate, timeout: float, what: str, daemon: LoggedDaemon) -> None:
    """Poll `predicate` every 0.2 s, at most `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if daemon.process.poll() is not None:
            raise RuntimeError(f"oltsim exited with {daemon.process.returncode}:\n{daemon.text()[-3000:]}")
        if time.monotonic() > deadline:
            raise RuntimeError(f"{what} within {timeout:g} s")
        time.sleep(0.2)


def onus(port: int) -> list[dict]:
    status, body = rest(port, "GET", "/v1/olt/onus")
    if status != 200:
        raise RuntimeError(f"GET /v1/olt/onus answered {status}")
    return json.loads(body)["items"]


# ---- readers -------------------------------------------------------------------------------------------------


class GrpcReader(threading.Thread):
    """An ordinary StreamEvents reader (grpcio), counting events and the largest `dropped` they report."""

    def __init__(self, port: int):
        super().__init__(daemon=True)
        self.channel = grpc.insecure_channel(f"127.0.0.1:{port}")
        self.events = 0
        self.dropped = 0
        self.gaps = 0        # events whose sequence did not follow the previous one's (an event missed)
        self._last = None
        self.ended = ""
        self.call = oltsim_pb2_grpc.OltsimStub(self.channel).StreamEvents(oltsim_pb2.EventFilter())

    def run(self) -> None:
        try:
            for event in self.call:
                self.events += 1
                self.dropped = max(self.dropped, event.dropped)
                self.gaps += self._last is not None and event.sequence != self._last + 1
                self._last = event.sequence
        except grpc.RpcError as exc:
            self.ended = exc.code().name

    def stop(self) -> None:
        self.call.cancel()
        self.join(5)
        self.channel.close()


class SseReader(threading.Thread):
    """An ordinary SSE reader of GET /v1/events, counting events and the largest `dropped` they report."""

    def __init__(self, port: int):
        super().__init__(daemon=True)
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=5)
        self.sock.sendall(b"GET /v1/events HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        self.sock.settimeout(0.5)
        self.events = 0
        self.dropped = 0
        self.gaps = 0        # events whose sequence did not follow the previous one's (an event missed)
        self._last = None
        self.ended = ""
        self._halt = threading.Event()

    def run(self) -> None:
        pending = b""
        while not self._halt.is_set():
            try:
                data = self.sock.recv(1 << 16)
            except socket.timeout:
                continue
            except OSError as exc:
                self.ended = type(exc).__name__
                return
            if not data:
                self.ended = "EOF"
                return
            pending += data
            *lines, pending = pending.split(b"\n")
            for line in lines:
                if line.startswith(b"data: "):
                    record = json.loads(line[6:])
                    self.events += 1
                    self.dropped = max(self.dropped, record.get("dropped", 0))
                    sequence = record.get("sequence")
                    self.gaps += self._last is not None and sequence != self._last + 1
                    self._last = sequence

    def stop(self) -> None:
        self._halt.set()
        self.join(5)
        self.sock.close()


def stalled_grpc(port: int, path: str, window: int) -> h2raw.RawConnection:
    """A raw HTTP/2 call of `path` (empty request) announcing a `window`-byte stream window, never credited."""
    conn = h2raw.RawConnection("127.0.0.1", port, window=window, auto_credit=False)
    conn.open_stream(path, h2raw.grpc_frame(b""), end_stream=True)
    conn.flush()
    return conn


def stalled_sse(port: int, rcvbuf: int) -> socket.socket:
    """A socket with a `rcvbuf`-byte receive buffer that asks for GET /v1/events and never reads."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    sock.settimeout(5)
    sock.connect(("127.0.0.1", port))
    sock.sendall(b"GET /v1/events HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
    return sock


def resume(conn: h2raw.RawConnection, seconds: float = 2.0) -> None:
    """A stalled raw reader reads again: credit its windows and read what comes (at most `seconds`), so that a
    status queued behind what it had not read reaches it."""
    conn.auto_credit = True
    try:
        conn.conn.increment_flow_control_window(1 << 24)
        for stream_id in list(conn.open_streams):
            conn.conn.increment_flow_control_window(1 << 24, stream_id=stream_id)
    except Exception:  # a stream or connection the server ended meanwhile
        pass
    conn.flush()
    deadline = time.monotonic() + seconds
    while conn.open_streams and time.monotonic() < deadline and conn.pump(0.1):
        pass


def sse_outcome(sock: socket.socket, limit: int = 64 * MIB) -> tuple[str, int, int]:
    """Read what a stalled SSE socket holds now: (how it ended: EOF / open / error, bytes, stream-ended events)."""
    sock.settimeout(0.5)
    received = events = 0
    outcome = "open"
    tail = b""
    while received < limit:
        try:
            data = sock.recv(1 << 16)
        except socket.timeout:
            break
        except OSError as exc:
            outcome = type(exc).__name__
            break
        if not data:
            outcome = "EOF"
            break
        received += len(data)
        chunk = tail + data
        events += chunk.count(b"event: stream-ended\n")
        tail = chunk[-24:]
    return outcome, received, events


# ---- one case ----------------------------------------------------------------------------------------------


class Sampler(threading.Thread):
    """VmRSS every `interval` seconds, and a HeartbeatCheck on the OpenOLT port at each sample."""

    def __init__(self, pid: int, openolt_port: int, interval: float):
        super().__init__(daemon=True)
        self.pid, self.interval = pid, interval
        self.series: list[tuple[float, int]] = []
        self.heartbeats = Counter()
        self.channel = grpc.insecure_channel(f"127.0.0.1:{openolt_port}")
        self.stub = openolt_pb2_grpc.OpenoltStub(self.channel)
        self._halt = threading.Event()
        self.start_time = time.monotonic()

    def run(self) -> None:
        while True:
            try:
                self.series.append((time.monotonic() - self.start_time, rss_bytes(self.pid)))
            except (OSError, RuntimeError):
                return
            try:
                self.stub.HeartbeatCheck(openolt_pb2.Empty(), timeout=2.0)
                self.heartbeats["OK"] += 1
            except grpc.RpcError as exc:
                self.heartbeats[exc.code().name] += 1
            if self._halt.wait(self.interval):
                return

    def stop(self) -> None:
        self._halt.set()
        self.join(10)
        self.channel.close()


def activate(stub, onu: dict, onu_id: int) -> str:
    """ActivateOnu for a REST ONU record, as an adapter answers an OnuDiscInd; the status name."""
    serial = onu["SerialNumber"]
    request = openolt_pb2.Onu(intf_id=onu["PonPortID"], onu_id=onu_id, pir=1000000,
                              serial_number=openolt_pb2.SerialNumber(vendor_id=serial[:4].encode(),
                                                                     vendor_specific=bytes.fromhex(serial[4:])))
    try:
        stub.ActivateOnu(request, timeout=10)
        return "OK"
    except grpc.RpcError as exc:
        return exc.code().name


def run_case(case: str, args) -> dict:
    """One case on a fresh daemon; the figures `report` prints."""
    base = ["--pon", str(args.pon), "--onu", str(args.onu), "--uni", str(args.uni), "--delay", "0"]
    if case != "indication":
        base += ["--adapter", "builtin"]
    result: dict = {"case": case, "storm": Counter()}
    with LoggedDaemon(*base) as daemon:
        daemon.start()
        ports = daemon.ports
        if case == "indication":
            wait_until(lambda: True, 1, "", daemon)
        else:
            wait_until(lambda: ALL_READY in daemon.text(), args.timeout, "the ONUs were not all up", daemon)
        time.sleep(args.settle)
        pid = daemon.process.pid
        sampler = Sampler(pid, ports["openolt"], args.interval)
        before = rss_bytes(pid)
        sampler.start()
        stalled: list = []
        normal = None
        openolt_channel = None
        try:
            if case == "grpc":
                stalled = [stalled_grpc(ports["grpc-v1"], "/oltsim.v1.Oltsim/StreamEvents", args.window)
                           for _ in range(args.readers)]
            elif case == "sse":
                stalled = [stalled_sse(ports["rest-v1"], args.window) for _ in range(args.readers)]
            else:
                stalled = [stalled_grpc(ports["openolt"], "/openolt.Openolt/EnableIndication", args.window)]
                openolt_channel = grpc.insecure_channel(f"127.0.0.1:{ports['openolt']}")
                stub = openolt_pb2_grpc.OpenoltStub(openolt_channel)
                wait_until(lambda: len(onus(ports["rest-v1"])) == args.pon * args.onu, args.timeout,
                           "the ONUs were not all discovered", daemon)
            normal = SseReader(ports["rest-v1"]) if case == "sse" else GrpcReader(ports["grpc-v1"])
            normal.start()
            items = onus(ports["rest-v1"])
            ids = {onu["SerialNumber"]: index % args.onu + 1 for index, onu in enumerate(items)}
            if case == "indication":
                for onu in items:
                    result["storm"][f"ActivateOnu {activate(stub, onu, ids[onu['SerialNumber']])}"] += 1
            connection = http.client.HTTPConnection("127.0.0.1", ports["rest-v1"], timeout=30)
            begin = time.monotonic()
            result["storm_start"] = begin - sampler.start_time
            for cycle in range(args.cycles):
                onu = items[cycle % len(items)]
                serial = onu["SerialNumber"]
                for method in ("DELETE", "POST"):
                    try:
                        status, _ = rest(ports["rest-v1"], method, f"/v1/olt/onus/{serial}", connection)
                    except (OSError, http.client.HTTPException) as exc:
                        status = type(exc).__name__
                        connection.close()
                        connection = http.client.HTTPConnection("127.0.0.1", ports["rest-v1"], timeout=30)
                    result["storm"][f"{method} {status}"] += 1
                if case == "indication":
                    result["storm"][f"ActivateOnu {activate(stub, onu, ids[serial])}"] += 1
                    for alarm in range(args.alarms):
                        for state in ("on", "off"):
                            status, _ = rest(ports["rest-v1"], "POST",
                                             f"/v1/olt/onus/{serial}/alarms/ONU_ALARM_LOS/{state}", connection)
                            result["storm"][f"alarm {status}"] += 1
                if case != "sse":
                    for conn in stalled:
                        conn.pump(0.0)  # SETTINGS and PING answered, never a WINDOW_UPDATE
                pause = begin + (cycle + 1) / args.rate - time.monotonic()
                if pause > 0:
                    time.sleep(pause)
            connection.close()
            result["storm_seconds"] = time.monotonic() - begin
            time.sleep(args.settle_after)
            result["after"] = rss_bytes(pid)
        finally:
            sampler.stop()
            told = Counter()
            received = 0
            for conn in stalled:
                if case == "sse":
                    outcome, size, ended = sse_outcome(conn)
                    told[f"connection {outcome}"] += 1
                    told["stream-ended event"] += ended
                    received += size
                    conn.close()
                else:
                    conn.pump(0.2)
                    if conn.open_streams:
                        told["stream open while stalled"] += 1
                    resume(conn)
                    told.update({k: v for k, v in conn.counts.items() if k != "data-frames"})
                    if conn.open_streams:
                        told["stream open after reading again"] += 1
                    received += conn.received_bytes
                    conn.close()
            result["told"], result["stalled_bytes"] = told, received
            if normal is not None:
                normal.stop()
                result["normal"] = (normal.events, normal.dropped + normal.gaps, normal.ended)
            if openolt_channel is not None:
                openolt_channel.close()
            result["log"] = Counter(match.group(1) for match in TOLD.finditer(daemon.text()))
            result["log_sample"] = [m.group(0) for m in TOLD.finditer(daemon.text())][:3]
    result["before"], result["series"], result["heartbeats"] = before, sampler.series, sampler.heartbeats
    return result


def judge(result: dict) -> dict:
    """The figures judged against the targets."""
    series, start = result["series"], result.get("storm_start", 0.0)
    during = [(t - start, rss) for t, rss in series if t >= start]
    peak = max([rss for _, rss in during] + [result.get("after", 0)], default=result["before"])
    later = [rss for t, rss in during if t >= FLAT_AFTER]
    at30 = next((rss for t, rss in during if t >= FLAT_AFTER), None)
    growth = (peak - result["before"]) / MIB
    flat = (max(later) - at30) / MIB if later else None
    events, dropped, _ = result.get("normal", (0, 0, ""))
    heartbeats = result["heartbeats"]
    checks = {
        f"growth <= {TARGET_GROWTH_MIB:g} MiB": growth <= TARGET_GROWTH_MIB,
        f"flat after {FLAT_AFTER:g} s (<= {TARGET_FLAT_MIB:g} MiB)": flat is not None and flat <= TARGET_FLAT_MIB,
        "ordinary reader got every event": events > 0 and dropped == 0,
        "heartbeats answered": sum(heartbeats.values()) > 0 and set(heartbeats) == {"OK"},
    }
    return {"growth": growth, "flat": flat, "checks": checks}


def report(result: dict) -> bool:
    verdict = judge(result)
    mib = lambda value: f"{value / MIB:.1f}"  # noqa: E731
    print(f"\n== {result['case']}: {result.get('storm_seconds', 0):.0f} s of storm, "
          f"{', '.join(f'{k} x{v}' for k, v in sorted(result['storm'].items()))}")
    print(f"RSS MiB before the readers {mib(result['before'])}; series (s since the storm began: MiB): "
          + " ".join(f"{t - result.get('storm_start', 0):.0f}:{mib(rss)}" for t, rss in result["series"]))
    print(f"RSS MiB after the storm {mib(result.get('after', 0))}; growth over the storm {verdict['growth']:.1f} MiB; "
          f"after the first {FLAT_AFTER:g} s "
          + ("n/a (storm too short)" if verdict["flat"] is None else f"{verdict['flat']:.1f} MiB"))
    print(f"stalled readers were told: {dict(result.get('told', {}))}; bytes they received "
          f"{result.get('stalled_bytes', 0)}")
    print(f"daemon log lines about them: {dict(result.get('log', {}))}")
    for line in result.get("log_sample", ()):
        print(f"    {line[:200]}")
    events, dropped, ended = result.get("normal", (0, 0, ""))
    print(f"ordinary reader: {events} events, largest dropped {dropped}{', ended ' + ended if ended else ''}; "
          f"heartbeats {dict(result['heartbeats'])}")
    for name, ok in verdict["checks"].items():
        print(f"  {'PASS' if ok else 'FAIL'}  {name}")
    return all(verdict["checks"].values())


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", default=",".join(CASES), help="(default %(default)s)")
    parser.add_argument("--cycles", type=int, default=300, help="ONU power cycles (default 300)")
    parser.add_argument("--readers", type=int, default=20, help="stalled gRPC / SSE readers (default 20)")
    parser.add_argument("--rate", type=float, default=5.0, help="power cycles a second at most (default 5)")
    parser.add_argument("--alarms", type=int, default=20,
                        help="indication case: ONU alarm raise/clear pairs per cycle (default 20)")
    parser.add_argument("--window", type=int, default=4096,
                        help="stalled readers' HTTP/2 stream window / SO_RCVBUF in bytes (default 4096)")
    parser.add_argument("--pon", type=int, default=2)
    parser.add_argument("--onu", type=int, default=16)
    parser.add_argument("--uni", type=int, default=4)
    parser.add_argument("--interval", type=float, default=3.0, help="seconds between RSS samples (default 3)")
    parser.add_argument("--settle", type=float, default=3.0, help="seconds before the readers connect")
    parser.add_argument("--settle-after", type=float, default=5.0, help="seconds after the storm before RSS")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds to wait for the ONUs")
    args = parser.parse_args(argv)
    cases = [c.strip() for c in args.cases.split(",") if c.strip()]
    unknown = set(cases) - set(CASES)
    if unknown:
        parser.error(f"unknown case(s) {', '.join(sorted(unknown))}; choose from {', '.join(CASES)}")
    load = os.getloadavg()
    print(f"slow readers: {args.readers} readers, {args.cycles} power cycles at <= {args.rate:g}/s, "
          f"{args.pon}x{args.onu} ONUs; load {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}, {os.cpu_count()} CPUs")
    verdicts = {}
    for case in cases:
        try:
            verdicts[case] = report(run_case(case, args))
        except RuntimeError as exc:
            print(f"\n== {case}: {exc}")
            verdicts[case] = False
    print("\n" + "  ".join(f"{case} {'PASS' if ok else 'FAIL'}" for case, ok in verdicts.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
