#!/usr/bin/env python3
"""REST throughput benchmark: requests/s of GET /v1/olt, GET /v1/olt/onus and GET /v1/olt/onus/{sn} at 16x32.

Starts the real daemon (as bench/startup.py does) with 16 PONs x 32 ONUs and 4 UNIs, then loads each path with
keep-alive clients for a fixed time: `wrk` when it is installed, otherwise several client processes, each
sending requests back to back on one keep-alive connection with a minimal HTTP/1.1 client (so that the client
costs little CPU next to the server). Each path is measured `--rounds` times; the median is printed against the
targets (3000, 500 and 5000 requests/s). Exits 0 whatever the numbers are (it is a report, not a test).

    python bench/rest.py [--duration 5] [--rounds 3] [--connections 4] [--pon 16] [--onu 32]
"""
from __future__ import annotations

import argparse
import multiprocessing
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))
from tests.support.daemon import Daemon  # noqa: E402

TARGETS = {"GET /v1/olt": 3000, "GET /v1/olt/onus": 500, "GET /v1/olt/onus/{sn}": 5000}


class Client:
    """HTTP/1.1 GETs on one keep-alive connection; reads Content-Length and chunked bodies, which it counts
    and discards without accumulating (a 1 MB body costs the client little)."""

    def __init__(self, port: int, path: str):
        self.request = f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode("ascii")
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buffer = bytearray()
        self.scratch = bytearray(1 << 20)

    def _fill(self) -> None:
        data = self.sock.recv(1 << 18)
        if not data:
            raise ConnectionError("server closed the connection")
        self.buffer += data

    def _line(self) -> bytes:
        while True:
            end = self.buffer.find(b"\r\n")
            if end >= 0:
                line = bytes(self.buffer[:end])
                del self.buffer[:end + 2]
                return line
            self._fill()

    def _skip(self, size: int) -> None:
        """Consume `size` bytes: what is buffered first, the rest straight from the socket into scratch."""
        held = min(size, len(self.buffer))
        del self.buffer[:held]
        size -= held
        view = memoryview(self.scratch)
        while size > 0:
            got = self.sock.recv_into(view, min(size, len(self.scratch)))
            if not got:
                raise ConnectionError("server closed the connection")
            size -= got

    def get(self) -> tuple[int, int]:
        """One request; returns (status, body length)."""
        self.sock.sendall(self.request)
        while True:
            end = self.buffer.find(b"\r\n\r\n")
            if end >= 0:
                break
            self._fill()
        lines = bytes(self.buffer[:end]).split(b"\r\n")
        del self.buffer[:end + 4]
        status = int(lines[0].split()[1])
        headers = {}
        for line in lines[1:]:
            name, _, value = line.partition(b":")
            headers[name.strip().lower()] = value.strip()
        if b"content-length" in headers:
            length = int(headers[b"content-length"])
            self._skip(length)
            return status, length
        if headers.get(b"transfer-encoding", b"").lower() == b"chunked":
            total = 0
            while True:
                size = int(self._line().split(b";")[0], 16)
                if size == 0:
                    self._line()  # the empty line after the last chunk (no trailers are sent)
                    return status, total
                self._skip(size + 2)  # the chunk and its CRLF
                total += size
        raise RuntimeError("response without Content-Length or chunked body")

    def close(self) -> None:
        self.sock.close()


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far, from /proc/<pid>/stat."""
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _worker(port: int, path: str, duration: float, start_at: float, results) -> None:
    client = Client(port, path)
    while time.time() < start_at:
        time.sleep(0.001)
    count = errors = 0
    end = time.perf_counter() + duration
    try:
        while time.perf_counter() < end:
            status, _ = client.get()
            if status == 200:
                count += 1
            else:
                errors += 1
    finally:
        client.close()
    results.put((count, errors))


def python_load(port: int, path: str, duration: float, connections: int) -> tuple[float, int]:
    """(requests/s, non-200 answers) with `connections` client processes for `duration` seconds."""
    results = multiprocessing.Queue()
    start_at = time.time() + 0.3  # every client connected before the clock starts
    workers = [multiprocessing.Process(target=_worker, args=(port, path, duration, start_at, results))
               for _ in range(connections)]
    for worker in workers:
        worker.start()
    totals = [results.get(timeout=duration + 30) for _ in workers]
    for worker in workers:
        worker.join(10)
        if worker.is_alive():
            worker.terminate()
    return sum(c for c, _ in totals) / duration, sum(e for _, e in totals)


def wrk_load(port: int, path: str, duration: float, connections: int) -> tuple[float, int]:
    """(requests/s, non-2xx answers) from wrk."""
    out = subprocess.run(["wrk", "-t", str(min(connections, os.cpu_count() or 1)), "-c", str(connections),
                          "-d", f"{duration:g}s", f"http://127.0.0.1:{port}{path}"],
                         capture_output=True, text=True, timeout=duration + 60).stdout
    rate = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    bad = re.search(r"Non-2xx or 3xx responses:\s+(\d+)", out)
    return rate, int(bad.group(1)) if bad else 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=float, default=5.0, help="seconds per round (default 5)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds per path; the median is shown (default 3)")
    parser.add_argument("--connections", type=int, default=4, help="concurrent keep-alive connections (default 4)")
    parser.add_argument("--pon", type=int, default=16)
    parser.add_argument("--onu", type=int, default=32)
    parser.add_argument("--uni", type=int, default=4)
    parser.add_argument("--no-wrk", action="store_true", help="use the Python client even if wrk is installed")
    args = parser.parse_args(argv)
    use_wrk = bool(shutil.which("wrk")) and not args.no_wrk
    load = wrk_load if use_wrk else python_load

    with Daemon("--pon", str(args.pon), "--onu", str(args.onu), "--uni", str(args.uni)) as daemon:
        daemon.start()
        port = daemon.ports["rest-v1"]
        serial = "BBSM%02X%02X%02X%02X" % (0, 0, args.pon // 2, args.onu // 2)  # an ONU in the middle
        paths = {"GET /v1/olt": "/v1/olt", "GET /v1/olt/onus": "/v1/olt/onus",
                 "GET /v1/olt/onus/{sn}": f"/v1/olt/onus/{serial}"}
        sizes = {}
        for label, path in paths.items():
            client = Client(port, path)
            code, length = client.get()
            client.close()
            if code != 200:
                raise SystemExit(f"{path} answered {code}")
            sizes[label] = length
        rows = []
        for label, path in paths.items():
            rates, busy, errors = [], [], 0
            for _ in range(max(1, args.rounds)):
                cpu, wall = cpu_seconds(daemon.process.pid), time.perf_counter()
                rate, bad = load(port, path, args.duration, args.connections)
                busy.append((cpu_seconds(daemon.process.pid) - cpu) / (time.perf_counter() - wall))
                rates.append(rate)
                errors += bad
            rows.append((label, statistics.median(rates), min(rates), max(rates), statistics.median(busy), errors))

    client_name = "wrk" if use_wrk else f"python keep-alive client, {args.connections} processes"
    print(f"oltsim REST at {args.pon}x{args.onu} ({args.pon * args.onu} ONUs, {args.uni} UNIs), "
          f"{client_name}, {args.rounds} x {args.duration:g} s per path, {os.cpu_count()} CPUs shared by client "
          f"and server")
    header = (f"{'request':<24}{'body bytes':>11}{'median req/s':>14}{'min':>9}{'max':>9}{'server CPU':>12}"
              f"{'target':>9}{'errors':>8}  result")
    print(header)
    print("-" * len(header))
    for label, median, low, high, busy, errors in rows:
        target = TARGETS[label]
        result = "PASS" if median >= target and not errors else "FAIL"
        print(f"{label:<24}{sizes[label]:>11}{median:>14.0f}{low:>9.0f}{high:>9.0f}{busy:>11.0%} {target:>9}"
              f"{errors:>8}  {result}")
    print("server CPU: the daemon's CPU time over wall time while loaded (100% = its one thread saturated)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
