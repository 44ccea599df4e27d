"""`twistd --nodaemon oltsim` without --pidfile= (twistd then writes twistd.pid in the current directory) whose start
fails: a port in use, a bad option value, a bad config file. Each is one line on stderr and its exit status, and
leaves no twistd.pid behind, so that the next start in that directory is not refused or misled by it."""
from __future__ import annotations

import socket
from pathlib import Path

import pytest

from scripted_adapter import free_ports
from test_daemon import LISTENERS, twistd

PID_FILE = "twistd.pid"


def loopback_listeners(ports: list[int]) -> list[str]:
    return [arg for name, port in zip(LISTENERS, ports) for arg in (f"--{name}", f"tcp:{port}:interface=127.0.0.1")]


def failed_start(cwd: Path, arguments, status: int) -> str:
    """Run `twistd -n oltsim ARGUMENTS` in `cwd` (no --pidfile=); it must exit with `status`, without a traceback;
    returns its one stderr line."""
    result = twistd("-n", "oltsim", *arguments, cwd=cwd)
    output = result.stdout + result.stderr
    assert result.returncode == status, output
    assert "Traceback" not in output, output
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, output
    return lines[0]


@pytest.mark.parametrize("busy", ["openolt", "rest-v1"])
def test_a_busy_port_leaves_no_pid_file(tmp_path, busy):
    """A listener's port held by another socket: exit 1 with the line naming the option and docs/many-olts.md, and
    no twistd.pid in the directory it was started in."""
    ports = free_ports(len(LISTENERS))
    port = ports[LISTENERS.index(busy)]
    holder = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        holder.bind(("127.0.0.1", port))
        holder.listen()
        line = failed_start(tmp_path, [*loopback_listeners(ports), "--pon", "1", "--onu", "1"], 1)
    finally:
        holder.close()
    assert line.startswith(f"oltsim: --{busy} tcp:{port}:interface=127.0.0.1: address already in use (give "
                           f"--{busy} a free port"), line
    assert line.endswith("see docs/many-olts.md)"), line
    assert not (tmp_path / PID_FILE).exists()


def test_the_next_start_in_that_directory_is_not_refused(tmp_path):
    """After a start that failed on a busy port, a second start in the same directory gets as far as that port
    again (twistd does not find a pid file to refuse or remove)."""
    ports = free_ports(len(LISTENERS))
    holder = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        holder.bind(("127.0.0.1", ports[0]))
        holder.listen()
        for _ in range(2):
            line = failed_start(tmp_path, [*loopback_listeners(ports), "--pon", "1", "--onu", "1"], 1)
            assert "address already in use" in line, line
            assert not (tmp_path / PID_FILE).exists()
    finally:
        holder.close()


def test_a_bad_option_value_leaves_no_pid_file(tmp_path):
    """A value the option cannot take: exit 2, one line naming the option, no twistd.pid."""
    line = failed_start(tmp_path, ["--pon", "abc"], 2)
    assert line.startswith("oltsim: --pon: "), line
    assert not (tmp_path / PID_FILE).exists()


def test_a_bad_config_file_leaves_no_pid_file(tmp_path):
    """A config file that is not YAML: exit 2, one line naming the file, no twistd.pid."""
    config = tmp_path / "bad.yaml"
    config.write_text("olt: [unclosed\n")
    line = failed_start(tmp_path, ["--config", str(config)], 2)
    assert line.startswith("oltsim: ") and "bad.yaml" in line, line
    assert not (tmp_path / PID_FILE).exists()
