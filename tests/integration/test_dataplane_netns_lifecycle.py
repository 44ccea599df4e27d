"""The UNI namespaces of `--uni-netns` on a real host, around the runs that make them: a run killed with SIGKILL
leaves its namespace behind, marked as its own, and the next run takes it over (one line naming it and the old pid)
and deletes it at its stop; a run under `ip netns exec` (a mount namespace of its own, where the namespaces it makes
cannot be seen from outside) says so in one line, and `nsenter -t PID -m -n` reaches them.

Needs root, /dev/net/tun and `ip netns` (tests/integration/netlab.py), and nsenter (util-linux), else the tests skip
with the reason. Every name starts with the lab's random prefix; the lab removes what is left, on failure too."""
from __future__ import annotations

import signal
import subprocess

import pytest

from netlab import Lab, lab_for, run
from scripted_adapter import free_ports
from test_daemon import LISTENERS, STOP_TIMEOUT, TWISTD, Daemon, environment
from test_dataplane_vxlan_kernel import NetnsDaemon

pytestmark = pytest.mark.dataplane


@pytest.fixture
def lab(tmp_path):
    yield from lab_for(tmp_path, "nsenter")


def options(lab: Lab) -> list[str]:
    return ["--pon", "1", "--onu", "1", "--uni", "1", "--uni-interfaces", "1", "--uni-netns",
            "--interface-prefix", lab.prefix]


def namespaces(*prefix: str) -> list[str]:
    """`ip netns list`'s names (run through `prefix`: nsenter into another mount namespace)."""
    return [line.split()[0] for line in run(*prefix, "ip", "netns", "list").stdout.splitlines() if line.strip()]


def mark_of(netns: str, *prefix: str) -> str:
    return run(*prefix, "ip", "-n", netns, "-o", "link", "show", "dev", "lo").stdout


class RootNetnsDaemon(NetnsDaemon):
    """`ip netns exec NETNS twistd -n oltsim` as root: the daemon in a private mount namespace."""

    def __init__(self, tmp_path, netns: str, *arguments: str):
        self.netns = netns
        self.ports = dict(zip(LISTENERS, free_ports(len(LISTENERS))))
        listen = [arg for name, port in self.ports.items() for arg in (f"--{name}", f"tcp:{port}:interface=127.0.0.1")]
        self.log_path = tmp_path / "oltsim.log"
        self._log = open(self.log_path, "w")
        self.process = subprocess.Popen(["ip", "netns", "exec", netns, *TWISTD, "-n", "--pidfile=", "oltsim", *listen,
                                         *arguments], cwd="/", env=environment(), stdout=self._log,
                                        stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)


def test_a_namespace_a_killed_run_left_is_taken_over_and_deleted_at_stop(lab, tmp_path):
    """SIGKILL leaves the UNI's namespace, marked with the killed run's pid; the next run takes it over (its log
    names the namespace and that pid), marks it as its own, and its clean stop deletes it."""
    uni_netns = f"{lab.prefix}u0-1-0"
    (tmp_path / "first").mkdir()
    (tmp_path / "second").mkdir()
    first = Daemon(tmp_path / "first", *options(lab))
    try:
        first.wait_serving()
        assert uni_netns in namespaces()
        assert f"alias oltsim pid={first.process.pid} " in mark_of(uni_netns)
        first.process.send_signal(signal.SIGKILL)
        first.process.wait(STOP_TIMEOUT)
    finally:
        first.close()
    assert uni_netns in namespaces()                  # nothing deleted it
    second = Daemon(tmp_path / "second", *options(lab))
    try:
        second.wait_serving()
        assert (f"dataplane-netns-taken-over netns={uni_netns} left_by_pid={first.process.pid}" in second.log), \
            second.log
        assert f"alias oltsim pid={second.process.pid} " in mark_of(uni_netns)
        second.process.terminate()
        assert second.wait_exit() == 0, second.log
    finally:
        second.close()
    assert uni_netns not in namespaces()


def test_under_ip_netns_exec_one_line_says_where_the_namespaces_are(lab, tmp_path):
    """Started under `ip netns exec`, the daemon says in one line that its UNI namespaces are seen only from inside
    its mount namespace: outside, `ip -n NAME` finds no namespace under the name, while `nsenter -t PID -m -n ip
    netns exec NAME` reaches the UNI's interface. Its stop deletes them, names included."""
    outer = lab.netns(f"{lab.prefix}out")
    uni_netns = f"{lab.prefix}u0-1-0"
    daemon = RootNetnsDaemon(tmp_path, outer, *options(lab))
    try:
        daemon.wait_serving()
        pid = daemon.process.pid
        lines = [line for line in daemon.log.splitlines() if "dataplane-private-mount-namespace" in line]
        assert len(lines) == 1 and f"pid={pid}" in lines[0] and f"nsenter -t {pid} -m -n" in lines[0], daemon.log
        inside = ("nsenter", "-t", str(pid), "-m", "-n")
        # outside, the name is listed (the directory is the host's) but holds no namespace
        outside = run("ip", "-n", uni_netns, "link", check=False)
        assert outside.returncode != 0 and "failed: Invalid argument" in outside.stderr, outside
        assert uni_netns in namespaces(*inside)
        links = run(*inside, "ip", "netns", "exec", uni_netns, "ip", "-br", "link").stdout
        assert uni_netns in links, links
        daemon.process.terminate()
        assert daemon.process.wait(STOP_TIMEOUT) == 0, daemon.log
    finally:
        daemon.close()
    assert uni_netns not in namespaces()
