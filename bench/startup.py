#!/usr/bin/env python3
"""Start-up benchmark: time to the first 200 on GET /v1/olt and resident memory after start.

Starts the real daemon (`twistd -n oltsim`, this checkout on PYTHONPATH) on loopback ports for each PON x ONU
size with 4 UNIs, repeats each size, prints medians in one table with PASS/FAIL per target of the core issue,
and exits 0 whatever the numbers are (it is a report, not a test).

    python bench/startup.py [--repeat 3] [--sizes 1x1,4x16,16x32,16x64,16x256] [--uni 4] [--settle 1.0]
"""
from __future__ import annotations

import argparse
import http.client
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TWISTD = [sys.executable, "-c", "import sys; sys.argv[0] = 'twistd'; from twisted.scripts.twistd import run; run()"]
SIZES = ("1x1", "4x16", "16x32", "16x64", "16x256")
MIB = 1024 * 1024

# (size, seconds, MiB) targets of the core issue; per-ONU targets are checked on the 16x32 -> 16x256 slope.
TARGETS = {"16x32": (1.5, 120.0), "16x256": (4.0, 350.0)}
PER_ONU_MS, PER_ONU_KIB = 0.5, 50.0


def listener_options() -> list[str]:
    """The oltsim options that take a listening endpoint (openolt, grpc-v1, ..., sadis): those whose setting
    defaults to an endpoint string. Every one is put on a free loopback port."""
    if str(REPO) not in sys.path:
        sys.path.insert(0, str(REPO))
    from dataclasses import fields

    from oltsim.config import Settings
    from oltsim.tap import PARAMETERS

    endpoints = {f.name for f in fields(Settings) if isinstance(f.default, str) and f.default.startswith("tcp:")}
    return [name for name, _, _, _, field in PARAMETERS if field in endpoints]


def free_ports(count: int) -> list[int]:
    """Ports the system hands out on 127.0.0.1, released for the daemon to bind."""
    sockets = []
    try:
        for _ in range(count):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind(("127.0.0.1", 0))
            sockets.append(s)
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def status_bytes(pid: int, field: str = "VmRSS") -> int:
    """A memory field of /proc/<pid>/status (VmRSS, VmHWM, ...), in bytes."""
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith(f"{field}:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError(f"no {field} for pid {pid}")


def rss_bytes(pid: int) -> int:
    """VmRSS of a process, from /proc/<pid>/status."""
    return status_bytes(pid, "VmRSS")


def terminate(process: subprocess.Popen | None) -> None:
    """SIGTERM a child still running, then SIGKILL if it does not exit within 10 s."""
    if process is not None and process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(10)


class Daemon:
    """One oltsim daemon on free loopback ports; `start()` returns seconds to the first 200 on GET /v1/olt.
    `repo` is the checkout it runs from (default this one; another, e.g. a `git worktree` of an older commit,
    must take the same listener options)."""

    def __init__(self, *arguments: str, start_timeout: float = 60.0, repo: Path = REPO):
        self.repo = repo        # the checkout the daemon runs from (its root goes on PYTHONPATH)
        listeners = listener_options()
        self.ports = dict(zip(listeners, free_ports(len(listeners))))
        self.arguments = [a for name, port in self.ports.items()
                          for a in (f"--{name}", f"tcp:{port}:interface=127.0.0.1")] + list(arguments)
        self.start_timeout = start_timeout
        self.log = tempfile.TemporaryFile()
        self.process: subprocess.Popen | None = None

    def _get(self, path: str, timeout: float) -> int:
        connection = http.client.HTTPConnection("127.0.0.1", self.ports["rest-v1"], timeout=timeout)
        try:
            connection.request("GET", path)
            response = connection.getresponse()
            response.read()
            return response.status
        finally:
            connection.close()

    def start(self) -> float:
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join([str(self.repo)] + [p for p in [env.get("PYTHONPATH")] if p])
        begin = time.perf_counter()
        self.process = subprocess.Popen([*TWISTD, "-n", "--pidfile=", "oltsim", *self.arguments],
                                        cwd=tempfile.gettempdir(), env=env, stdout=self.log,
                                        stderr=subprocess.STDOUT)
        deadline = begin + self.start_timeout
        while time.perf_counter() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"oltsim exited with {self.process.returncode}:\n{self.output()}")
            try:
                if self._get("/v1/olt", timeout=5.0) == 200:
                    return time.perf_counter() - begin
            except OSError:
                pass
            time.sleep(0.005)
        raise RuntimeError(f"no 200 on GET /v1/olt within {self.start_timeout:g} s:\n{self.output()}")

    def output(self) -> str:
        self.log.seek(0)
        return self.log.read().decode("utf-8", "replace")[-4000:]

    def stop(self) -> None:
        """SIGTERM, then SIGKILL if it does not exit within 10 s (only this process, by its pid)."""
        terminate(self.process)
        self.log.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


def measure(size: str, uni: int, settle: float) -> tuple[float, int]:
    """(seconds to first 200, RSS bytes `settle` s after it) for one start of a PONxONU size."""
    pon, onu = (int(n) for n in size.split("x"))
    with Daemon("--pon", str(pon), "--onu", str(onu), "--uni", str(uni)) as daemon:
        seconds = daemon.start()
        time.sleep(settle)
        return seconds, rss_bytes(daemon.process.pid)


def verdict(ok: bool) -> str:
    return "PASS" if ok else "FAIL"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="starts per size; the median is shown (default 3)")
    parser.add_argument("--sizes", default=",".join(SIZES), help="PONxONU sizes (default %(default)s)")
    parser.add_argument("--uni", type=int, default=4, help="UNIs per ONU (default 4)")
    parser.add_argument("--settle", type=float, default=1.0,
                        help="seconds after the first 200 before RSS is read (default 1.0)")
    args = parser.parse_args(argv)
    sizes = [s.strip() for s in args.sizes.split(",") if s.strip()]

    results: dict[str, tuple[float, float]] = {}
    for size in sizes:
        runs = []
        for _ in range(max(1, args.repeat)):
            try:
                runs.append(measure(size, args.uni, args.settle))
            except RuntimeError as exc:
                print(f"{size}: {exc}", file=sys.stderr)
                break
        if runs:
            results[size] = (statistics.median(r[0] for r in runs), statistics.median(r[1] for r in runs))

    print(f"oltsim start-up, {args.uni} UNIs per ONU, median of {args.repeat} starts "
          f"(python {sys.version.split()[0]}, {os.cpu_count()} CPUs)")
    header = f"{'PONxONU':<22}{'ONUs':>6}{'start s':>10}{'RSS MiB':>10}   {'target':<24}{'time':<6}{'RSS':<6}"
    print(header)
    print("-" * len(header))
    for size, (seconds, rss) in results.items():
        pon, onu = (int(n) for n in size.split("x"))
        target, time_ok, rss_ok = "", "", ""
        if size in TARGETS:
            t_max, m_max = TARGETS[size]
            target = f"<= {t_max:g} s, <= {m_max:g} MiB"
            time_ok, rss_ok = verdict(seconds <= t_max), verdict(rss / MIB <= m_max)
        print(f"{size:<22}{pon * onu:>6}{seconds:>10.2f}{rss / MIB:>10.1f}   {target:<24}{time_ok:<6}{rss_ok:<6}")
    if "16x32" in results and "16x256" in results:
        (t1, m1), (t2, m2) = results["16x32"], results["16x256"]
        onus = 16 * 256 - 16 * 32
        per_ms, per_kib = (t2 - t1) / onus * 1000, (m2 - m1) / onus / 1024
        label = "per ONU (16x32->16x256)"
        target = f"< {PER_ONU_MS:g} ms, < {PER_ONU_KIB:g} KiB"
        print(f"{label:<28}{per_ms:>7.3f} ms{per_kib:>6.1f} KiB   {target:<24}"
              f"{verdict(per_ms < PER_ONU_MS):<6}{verdict(per_kib < PER_ONU_KIB):<6}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
