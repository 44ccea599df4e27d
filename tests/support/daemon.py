"""The real daemon for benchmarks and storm drivers: `twistd -n --pidfile= oltsim` from this checkout (its root on
PYTHONPATH, so nothing needs installing), every listener on a free 127.0.0.1 port, stopped with SIGTERM; and the
/proc readings they take of it (VmRSS and the other memory fields of /proc/<pid>/status)."""
from __future__ import annotations

import http.client
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
TWISTD = [sys.executable, "-c", "import sys; sys.argv[0] = 'twistd'; from twisted.scripts.twistd import run; run()"]


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
