"""`bbsim` (the BBSim-compatible command) with one of its ports taken names the bbsim flag the user typed, in one
line, exit 1 (not oltsim's `--rest-v1 tcp:...`)."""
from __future__ import annotations

import socket
import subprocess
import sys

from scripted_adapter import free_ports
from test_daemon import REPO, environment

FLAGS = ("openolt_address", "api_address", "rest_api_address", "dmi_server_address", "legacy_api_address",
         "legacy_rest_api_address", "sadis_rest_address")
BBSIM = [sys.executable, "-c", "import sys; from oltsim.bbsimcmd import main; sys.exit(main())"]


def test_a_busy_port_names_the_bbsim_flag(tmp_path):
    ports = dict(zip(FLAGS, free_ports(len(FLAGS))))
    holder = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        holder.bind(("127.0.0.1", ports["rest_api_address"]))
        holder.listen()
        flags = [arg for flag, port in ports.items() for arg in (f"-{flag}", f"127.0.0.1:{port}")]
        result = subprocess.run([*BBSIM, *flags, "-pon", "1", "-onu", "1"], cwd=tmp_path, env=environment(),
                                capture_output=True, text=True, timeout=120)
    finally:
        holder.close()
    assert result.returncode == 1, result.stdout + result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert lines[-1] == f"bbsim: -rest_api_address 127.0.0.1:{ports['rest_api_address']}: address already in use"
    assert "--rest-v1" not in result.stderr and "Traceback" not in result.stderr
