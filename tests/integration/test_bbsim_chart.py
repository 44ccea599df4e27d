"""VOLTHA's own `bbsim` Helm chart (voltha-helm-charts, chart 2.15.2, app 1.16.8) running oltsim: the exact command
line its deployment.yaml renders from its default values, from a working directory holding configs/services.yaml
and configs/pon-config.yaml as its ConfigMaps mount them, with `/app/bbsim` replaced by the `bbsim` console entry
point from this checkout. Its liveness probe (`bbsimctl olt get`) and readiness probe (`GET /v2/cfg` on 50074) must
pass, and SIGTERM must stop it cleanly.

The rendered line uses fixed ports (50060, 50070-50075), so the daemon and both probes run in a fresh network
namespace (`unshare -n`, or `unshare -rn` without root) where those ports are free; this file is also the small
program run inside it. Without namespaces the test runs on the host's loopback, and is skipped if a port is busy.
"""
from __future__ import annotations

import fcntl
import http.client
import json
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
FIXED_PORTS = (50060, 50070, 50071, 50072, 50073, 50074, 50075)

# deployment.yaml's `command:` rendered with the chart's default values.yaml (olt_id 0, log_level DEBUG lowered,
# no ponPortsConfig so no -pon_port_config_file, the inject/events/perf/retry switches false, kafkaEventTopic "").
CHART_COMMAND = [
    "/app/bbsim",
    "-openolt_address", "0.0.0.0:50060",
    "-dmi_server_address", ":50075",
    "-olt_id", "0",
    "-nni", "1",
    "-nni_speed", "10000",
    "-pon", "1",
    "-onu", "1",
    "-uni", "4",
    "-pots", "0",
    "-omccVersion", "163",
    "-nni_dhcp_trap_vid", "0",
    "-bp_format", "mef",
    "-oltRebootDelay", "60",
    "-logLevel", "debug",
    "-delay", "200",
    "-services", "configs/services.yaml",
    "-rest_api_address", ":50071",
    "-ca", "default",
    "-omci_response_rate", "10",
    "-kafkaEventTopic", "",
]
# configmap-services.yaml: `toYaml .Values.servicesConfig` (keys sorted, as Helm writes them)
CHART_SERVICES = """services:
- c_tag: 900
  c_tag_allocation: unique
  name: hsia
  needs_dhcp: true
  needs_eapol: true
  s_tag: 900
  s_tag_allocation: shared
  tp_id: 64
workflow: att
"""
# configmap-pon.yaml: `toYaml .Values.ponPortsConfig`, which the default values leave undefined
CHART_PON_CONFIG = "null\n"

BBSIM = [sys.executable, "-c", "import sys; sys.argv[0] = 'bbsim'; from oltsim.bbsimcmd import main; sys.exit(main())"]
BBSIMCTL = [sys.executable, "-c", "import sys; sys.argv[0] = 'bbsimctl'; from oltsim.ctl.oltsimctl import run_bbsimctl; "
                                  "run_bbsimctl()"]
START_TIMEOUT = 60.0
STOP_TIMEOUT = 15.0
RUN_TIMEOUT = 150.0


# ---- the program run inside the namespace --------------------------------------------------------------------


def loopback_up() -> None:
    """Bring `lo` up (a new network namespace starts with it down), as `ip link set lo up` does."""
    siocgifflags, siocsifflags, iff_up = 0x8913, 0x8914, 0x1
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        flags = struct.unpack("16sH", fcntl.ioctl(sock, siocgifflags, struct.pack("16sH", b"lo", 0)))[1]
        fcntl.ioctl(sock, siocsifflags, struct.pack("16sH", b"lo", flags | iff_up))


def listening(port: int, host: str = "127.0.0.1") -> bool:
    try:
        socket.create_connection((host, port), timeout=1).close()
    except OSError:
        return False
    return True


def has_ipv6_loopback() -> bool:
    """Whether ``::1`` exists here (a kernel without IPv6 has none)."""
    try:
        with socket.socket(socket.AF_INET6, socket.SOCK_STREAM) as probe:
            probe.bind(("::1", 0))
    except OSError:
        return False
    return True


def get_cfg(host: str) -> dict:
    """The readiness probe, `GET /v2/cfg` on 50074, to ``host``: its status and body."""
    connection = http.client.HTTPConnection(host, 50074, timeout=10)
    try:
        connection.request("GET", "/v2/cfg")
        response = connection.getresponse()
        return {"status": response.status, "body": response.read().decode()}
    except OSError as exc:
        return {"status": None, "body": str(exc)}
    finally:
        connection.close()


def probe_run(workdir: Path, in_namespace: bool) -> dict:
    """Start the chart's command in ``workdir``, run both probes, stop it with SIGTERM; what happened, as a dict."""
    if in_namespace:
        loopback_up()
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO)] + [p for p in [env.get("PYTHONPATH")] if p])
    env.pop("BBSIMCTL_SERVER", None)
    env.pop("BBSIMCTL_CONFIG", None)
    env["HOME"] = str(workdir)  # no ~/.bbsim/config of the user's
    result: dict = {}
    with open(workdir / "daemon.log", "w") as log:
        daemon = subprocess.Popen([*BBSIM, *CHART_COMMAND[1:]], cwd=workdir, env=env, stdout=log,
                                  stderr=subprocess.STDOUT)
        try:
            deadline = time.monotonic() + START_TIMEOUT
            while time.monotonic() < deadline and daemon.poll() is None:
                if all(listening(port) for port in (50070, 50074)):
                    break
                time.sleep(0.2)
            result["listening"] = {port: listening(port) for port in FIXED_PORTS}
            ctl = subprocess.run([*BBSIMCTL, "olt", "get"], cwd=workdir, env=env, capture_output=True, text=True,
                                 timeout=30)
            result["olt_get"] = {"rc": ctl.returncode, "stdout": ctl.stdout, "stderr": ctl.stderr}
            result["cfg"] = get_cfg("127.0.0.1")
            # The chart gives ports only (":50075", "0.0.0.0:50060", ...): every one answers on IPv6 as well, as
            # Go's listeners do, so a probe to the pod's IPv6 address reaches it.
            result["ipv6"] = has_ipv6_loopback()
            if result["ipv6"]:
                result["listening6"] = {port: listening(port, "::1") for port in FIXED_PORTS}
                result["cfg6"] = get_cfg("::1")
        finally:
            if daemon.poll() is None:
                daemon.send_signal(signal.SIGTERM)
            try:
                result["daemon_rc"] = daemon.wait(timeout=STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                daemon.kill()
                daemon.wait()
                result["daemon_rc"] = "killed"
    result["log"] = (workdir / "daemon.log").read_text()[-20000:]
    return result


# ---- the test --------------------------------------------------------------------------------------------------


def namespace_prefix() -> list[str] | None:
    """The command prefix that runs a program in a fresh network namespace here, or None if none can be made."""
    unshare = shutil.which("unshare")
    if not unshare:
        return None
    prefix = [unshare, "-n"] if os.geteuid() == 0 else [unshare, "-rn"]
    try:
        made = subprocess.run([*prefix, "true"], capture_output=True, timeout=10).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        made = False
    return prefix if made else None


def chart_workdir(tmp_path: Path) -> Path:
    """A working directory as the chart's pod has it under /app: configs/services.yaml and configs/pon-config.yaml."""
    (tmp_path / "configs").mkdir()
    (tmp_path / "configs" / "services.yaml").write_text(CHART_SERVICES)
    (tmp_path / "configs" / "pon-config.yaml").write_text(CHART_PON_CONFIG)
    return tmp_path


def test_voltha_bbsim_chart_command_line_runs_and_passes_its_probes(tmp_path):
    """The chart's default command line starts oltsim (no error, no warning but the ones expected), `bbsimctl olt get`
    answers with exit 0 (liveness), `GET /v2/cfg` on 50074 answers 200 with this OLT's SADIS entry (readiness),
    every fixed port listens, every fixed port listens on 127.0.0.1 and on ::1 (where the host has IPv6; the readiness probe answering the same
on both), and SIGTERM stops the daemon with status 0."""
    import pytest

    workdir = chart_workdir(tmp_path)
    prefix = namespace_prefix()
    if prefix is None:
        busy = [port for port in FIXED_PORTS if listening(port)]
        if busy:
            pytest.skip(f"no network namespace here (unshare) and the chart's fixed ports {busy} are busy")
        result = probe_run(workdir, in_namespace=False)
    else:
        run = subprocess.run([*prefix, sys.executable, __file__, str(workdir)], capture_output=True, text=True,
                             timeout=RUN_TIMEOUT, cwd=workdir)
        assert run.returncode == 0, run.stderr[-4000:]
        result = json.loads(run.stdout.strip().splitlines()[-1])
    log = result["log"]
    assert "bbsim:" not in log.replace("sys.argv[0] = 'bbsim'", ""), log[-4000:]
    assert "Traceback" not in log, log[-4000:]
    assert all(result["listening"].values()), (result["listening"], log[-4000:])
    assert result["olt_get"]["rc"] == 0, result["olt_get"]
    assert "BBSIM_OLT_0" in result["olt_get"]["stdout"], result["olt_get"]
    assert result["cfg"]["status"] == 200, result["cfg"]
    if result["ipv6"]:
        assert all(result["listening6"].values()), (result["listening6"], log[-4000:])
        assert result["cfg6"]["status"] == 200, result["cfg6"]
        assert result["cfg6"]["body"] == result["cfg"]["body"]
    assert "BBSIM_OLT_0" in json.dumps(json.loads(result["cfg"]["body"]))
    assert result["daemon_rc"] == 0, log[-4000:]
    assert "olt-started serial=BBSIM_OLT_0" in log


if __name__ == "__main__":
    # Inside the namespace: run, and hand the result back as the last line of stdout.
    print(json.dumps(probe_run(Path(sys.argv[1]), in_namespace=True)))
