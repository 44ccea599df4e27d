"""`oltsimctl` as a subprocess (`python -m oltsim.ctl.oltsimctl`) against the real daemon (`twistd -n oltsim` on loopback
ports), with the scripted adapter bringing the ONUs up where a command needs them: every command of the tree,
some outputs pinned in tests/golden/oltsimctl (table and json), errors and exit codes, the access token, TLS with
client certificates, `wait` (success, timeout, progress bar on a terminal) and `events` (filters, --count, Ctrl-C).

The pinned OLT has 2 PONs with 1 ONU of 1 UNI each (ONU id 1 on each PON whatever the activation order), EAPOL and
DHCP trap flows and traffic schedulers from the scripted adapter; nothing in the pinned outputs depends on time.
Regenerate the golden files with OLTSIM_UPDATE_GOLDEN=1 (tests/golden/README.md).
"""
from __future__ import annotations

import json
import os
import pty
import re
import select
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from scripted_adapter import ScriptedAdapter, free_ports
from test_daemon import LISTENERS, START_TIMEOUT, TWISTD, Daemon, environment, listening
from test_tls import pki  # noqa: F401 - the fixture

REPO = Path(__file__).resolve().parents[2]
GOLDEN = REPO / "tests" / "golden" / "oltsimctl"
UPDATE = os.environ.get("OLTSIM_UPDATE_GOLDEN") == "1"
CTL = [sys.executable, "-m", "oltsim.ctl.oltsimctl"]
CTL_TIMEOUT = 30.0
SHAPE = ("--pon", "2", "--onu", "1", "--uni", "1", "--delay", "0")
SERIALS = ("BBSM00000001", "BBSM00000101")
TOKEN = "oltsimctl-test-token"
#: BBSim's own client, to compare tables with: OLTSIM_BBSIMCTL names it, else PATH has it (else those tests skip).
BBSIMCTL = (os.environ.get("OLTSIM_BBSIMCTL") if os.access(os.environ.get("OLTSIM_BBSIMCTL") or "", os.X_OK)
            else shutil.which("bbsimctl"))
BBSIMCTL_PORT = 50070  # bbsimctl 1.16.8 talks to localhost:50070 whatever its options say


class CtlDaemon(Daemon):
    """`twistd -n oltsim` on loopback ports like test_daemon.Daemon, except that a listener's endpoint can be
    given (`endpoints`: name -> endpoint with `{port}`), e.g. the v1 gRPC API on an ssl: endpoint."""

    def __init__(self, tmp_path: Path, *arguments: str, endpoints: dict | None = None):
        self.ports = dict(zip(LISTENERS, free_ports(len(LISTENERS))))
        listen = []
        for name, port in self.ports.items():
            endpoint = (endpoints or {}).get(name, "tcp:{port}:interface=127.0.0.1").format(port=port)
            self.ports[name] = int(re.match(r"\w+:(\d+)", endpoint).group(1))  # a fixed port given instead
            listen += [f"--{name}", endpoint]
        self.log_path = tmp_path / "oltsim.log"
        self._log = open(self.log_path, "w")
        self.process = subprocess.Popen([*TWISTD, "-n", "--pidfile=", "oltsim", *listen, *arguments],
                                        cwd=tmp_path, env=environment(), stdout=self._log,
                                        stderr=subprocess.STDOUT)

    def wait_answering(self, status: int, timeout: float = START_TIMEOUT) -> None:
        """Poll GET /v1/olt until it answers `status` (401 when a token is required; bounded)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise AssertionError(f"oltsim exited with {self.process.returncode}:\n{self.log}")
            try:
                if self.rest_get("/v1/olt", timeout=2.0)[0] == status:
                    return
            except OSError:
                pass
            time.sleep(self.poll_interval)
        raise AssertionError(f"GET /v1/olt did not answer {status} within {timeout:g} s:\n{self.log}")

    @property
    def server(self) -> str:
        return f"127.0.0.1:{self.ports['grpc-v1']}"


def ctl_environment(home: Path, **extra: str) -> dict:
    """The test environment without the caller's oltsimctl settings: HOME is the test's (no ~/.oltsim/config)."""
    env = {key: value for key, value in environment().items()
           if not key.startswith("OLTSIMCTL_") and key not in ("OLTSIM_TOKEN", "GRPC_VERBOSITY")}
    env["HOME"] = str(home)
    env.update(extra)
    return env


def ctl(daemon: CtlDaemon | None, *arguments: str, home: Path, env: dict | None = None,
        timeout: float = CTL_TIMEOUT) -> subprocess.CompletedProcess:
    """Run oltsimctl to completion against `daemon` (its --server first; None: no --server)."""
    server = ["--server", daemon.server] if daemon is not None else []
    return subprocess.run([*CTL, *server, *arguments], cwd=REPO, env=env or ctl_environment(home), check=False,
                          capture_output=True, text=True, timeout=timeout)


def ok(result: subprocess.CompletedProcess) -> str:
    """The stdout of a run that must have succeeded quietly."""
    assert result.returncode == 0 and result.stderr == "", (result.args, result.returncode, result.stderr)
    return result.stdout


def refused(result: subprocess.CompletedProcess, code: int) -> str:
    """The one stderr line of a run that must have failed with `code`, without a traceback."""
    assert result.returncode == code, (result.args, result.returncode, result.stdout, result.stderr)
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("oltsimctl: "), result.stderr
    return lines[0]


def provisioned(daemon: CtlDaemon, count: int) -> ScriptedAdapter:
    """A scripted adapter that brought `count` ONUs up with their EAPOL/DHCP flows and traffic schedulers."""
    adapter = ScriptedAdapter(f"127.0.0.1:{daemon.ports['openolt']}")
    try:
        _, onus = adapter.bring_up(count)
        status, body = daemon.rest_get("/v1/olt/onus")
        assert status == 200, body
        adapter.provision(onus, {onu["SerialNumber"]: onu["unis"][0]["services"][0]["CTag"]
                                 for onu in body["items"]})
    except BaseException:
        adapter.close()
        raise
    return adapter


@pytest.fixture(scope="module")
def home(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("home")


@pytest.fixture(scope="module")
def olt(tmp_path_factory):
    """A daemon whose 2 ONUs are up and provisioned by an adapter that stays connected; read-only tests."""
    daemon = CtlDaemon(tmp_path_factory.mktemp("olt"), *SHAPE)
    adapter = None
    try:
        daemon.wait_answering(200)
        adapter = provisioned(daemon, 2)
        yield daemon
    finally:
        if adapter is not None:
            adapter.close()
        daemon.close()


@pytest.fixture
def daemons(tmp_path):
    """Start daemons for one test (any number); all are stopped at its end."""
    started = []

    def start(*arguments: str, endpoints: dict | None = None, status: int = 200) -> CtlDaemon:
        directory = tmp_path / f"daemon{len(started)}"
        directory.mkdir()
        daemon = CtlDaemon(directory, *arguments, endpoints=endpoints)
        started.append(daemon)
        daemon.wait_answering(status)
        return daemon

    yield start
    for daemon in started:
        daemon.close()


# ---- golden outputs -----------------------------------------------------------------------------------------

GOLDEN_CASES = {
    "olt_get.txt": ("olt", "get"),
    "olt_nnis.txt": ("olt", "nnis"),
    "onu_list.txt": ("onu", "list"),
    "onu_list.json": ("onu", "list", "-o", "json"),
    "onu_get_verbose.txt": ("onu", "get", "BBSM00000001", "-v"),
    "onu_get.json": ("-o", "json", "onu", "get", "BBSM00000001"),
    "uni_list.txt": ("uni", "list"),
    "service_list.txt": ("service", "list"),
    "service_list.json": ("service", "list", "--output", "json"),
    "onu_flows.txt": ("onu", "flows", "BBSM00000001"),
    "onu_flows.json": ("onu", "flows", "BBSM00000001", "-o", "json"),
    "onu_traffic_schedulers.txt": ("onu", "traffic_schedulers", "BBSM00000101"),
    "olt_alarms_list.txt": ("olt", "alarms", "list"),
}


@pytest.mark.parametrize("name", sorted(GOLDEN_CASES))
def test_output_matches_golden_file(olt, home, name):
    """Tables are byte for byte the pinned bbsimctl layout; JSON is the pinned document (compared parsed)."""
    output = ok(ctl(olt, *GOLDEN_CASES[name], home=home))
    path = GOLDEN / name
    if UPDATE:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(output)
    assert path.exists(), f"missing golden file {path}; run with OLTSIM_UPDATE_GOLDEN=1"
    if name.endswith(".json"):
        assert json.loads(output) == json.loads(path.read_text())
    else:
        assert output == path.read_text()


# ---- every read command -------------------------------------------------------------------------------------

READ_COMMANDS = [
    ("config",),
    ("olt", "get"), ("olt", "nnis"), ("olt", "pons"), ("olt", "flows"), ("olt", "resources", "ALLOC_ID"),
    ("olt", "resources", "gem_port"), ("olt", "alarms", "list"),
    ("onu", "list"), ("onu", "list", "-v"), ("onu", "get", "BBSM00000101"), ("onu", "flows", "BBSM00000101"),
    ("onu", "services"), ("onu", "services", "BBSM00000001"), ("onu", "traffic_schedulers", "BBSM00000001"),
    ("onu", "alarms", "list"),
    ("service", "list"),
    ("uni", "list"), ("uni", "list", "-v"), ("uni", "get", "BBSM00000001"), ("uni", "get", "BBSM00000001", "-v"),
    ("uni", "services"), ("uni", "services", "BBSM00000101"), ("uni", "services", "BBSM00000101", "0"),
]


@pytest.mark.parametrize("command", READ_COMMANDS, ids=" ".join)
@pytest.mark.parametrize("output", ["table", "json"])
def test_read_command_answers_in_both_outputs(olt, home, command, output):
    """Every read command exits 0 without a word on stderr; its JSON parses, its table names the ONUs it lists."""
    text = ok(ctl(olt, *command, "-o", output, home=home))
    assert text.strip()
    if output == "json":
        json.loads(text)
    elif command[0] in ("onu", "uni", "service") and not {"alarms", "flows", "traffic_schedulers"} & set(command):
        assert any(serial in text for serial in SERIALS), text


def test_tables_list_what_the_json_holds(olt, home):
    """`onu list` has a row per ONU with the JSON's states; `olt flows` a box per flow of the JSON;
    `service list` a row per service with its C-tag."""
    onus = json.loads(ok(ctl(olt, "onu", "list", "-o", "json", home=home)))["items"]
    rows = ok(ctl(olt, "onu", "list", home=home)).splitlines()
    assert rows[0].split()[:5] == ["PONPORTID", "ID", "SERIALNUMBER", "OPERSTATE", "INTERNALSTATE"]
    assert sorted(row.split()[:5] for row in rows[1:]) == sorted(
        [str(onu["PonPortID"]), str(onu["ID"]), onu["SerialNumber"], onu["OperState"], onu["InternalState"]]
        for onu in onus)
    flows = json.loads(ok(ctl(olt, "olt", "flows", "-o", "json", home=home)))["flows"]
    table = ok(ctl(olt, "olt", "flows", home=home))
    assert table.startswith("OLT Flows:\n")
    assert len([line for line in table.splitlines() if re.match(r"\| +\d+ \|", line)]) == len(flows) == 2
    services = json.loads(ok(ctl(olt, "service", "list", "-o", "json", home=home)))["items"]
    service_rows = ok(ctl(olt, "service", "list", home=home)).splitlines()[1:]
    assert sorted((row.split()[0], row.split()[8]) for row in service_rows) == sorted(
        (service["OnuSn"], str(service["CTag"])) for service in services)


def test_unknown_onu_is_one_line_with_the_servers_status(olt, home):
    """A refused call prints `oltsimctl: <STATUS>: <the server's message>` and exits 1; for a serial the OLT does
    not have, the message names the nearest one it has (`onu get`, `shutdown` and `poweron` alike)."""
    line = refused(ctl(olt, "onu", "get", "BBSM00000009", home=home), 1)
    assert line == "oltsimctl: NOT_FOUND: ONU BBSM00000009 not found on this OLT; did you mean BBSM00000001?"
    for command in ("shutdown", "poweron"):
        line = refused(ctl(olt, "onu", command, "BBSM0000001", home=home), 1)
        assert line == "oltsimctl: NOT_FOUND: ONU BBSM0000001 not found on this OLT; did you mean BBSM00000001?"
    line = refused(ctl(olt, "onu", "flows", "BBSM00000009", "-o", "json", home=home), 1)
    assert line.startswith("oltsimctl: NOT_FOUND: ")


def test_no_server_is_a_connection_failure(home):
    """Nothing listening: exit 4 and one line naming the server, for a unary call and for the event stream; `wait`
    retries until its timeout (exit 3, saying why)."""
    server = f"127.0.0.1:{free_ports(1)[0]}"
    for command in (("olt", "get"), ("events", "--count", "1")):
        line = refused(ctl(None, "--server", server, "--timeout", "5", *command, home=home), 4)
        assert line.startswith(f"oltsimctl: cannot connect to {server}: UNAVAILABLE"), line
    # `wait` keeps trying (the daemon may be starting) and reports the connection failure when its time is up.
    line = refused(ctl(None, "--server", server, "wait", "--state", "enabled", "--timeout", "1", home=home), 3)
    assert line.startswith(f"oltsimctl: timed out after 1s: cannot connect to {server}: "), line


def test_usage_errors_exit_2(olt, home):
    """Bad arguments are refused before any call: an unknown resource type, OLT alarm, IGMP action or state,
    a bad alarm parameter, an unreadable token file, a missing argument."""
    for command in (("olt", "resources", "FLOW"), ("olt", "alarms", "raise", "OLT_FOO_LOS", "0"),
                    ("onu", "igmp", "BBSM00000001", "0", "jump", "224.0.0.22"), ("wait", "--state", "sleepy"),
                    ("onu", "alarms", "raise", "-p", "broken", "ONU_ALARM_LOS", "BBSM00000001"),
                    ("--token-file", str(home / "missing"), "olt", "get")):
        refused(ctl(olt, *command, home=home), 2)
    missing = ctl(olt, "onu", "get", home=home)
    assert missing.returncode == 2 and "ONU_SN" in missing.stderr, missing.stderr


def test_server_from_config_file_and_environment(olt, home, tmp_path):
    """Without --server: OLTSIMCTL_SERVER, else the config file (bbsimctl's keys) decides; --server wins over both
    (a dead address given the lower precedence is never used)."""
    dead = f"127.0.0.1:{free_ports(1)[0]}"
    config = tmp_path / "config"
    config.write_text(f"server: {olt.server}\ngrpc:\n  timeout: 5s\n")
    assert "BBSIM_OLT_0" in ok(ctl(None, "--config", str(config), "olt", "get", home=home))
    env = ctl_environment(home, OLTSIMCTL_SERVER=olt.server)
    assert "BBSIM_OLT_0" in ok(ctl(None, "olt", "get", home=home, env=env))
    (home / ".oltsim").mkdir(exist_ok=True)
    (home / ".oltsim" / "config").write_text(f"server: {dead}\n")
    try:
        assert "BBSIM_OLT_0" in ok(ctl(olt, "olt", "get", home=home))  # --server beats the default config file
        refused(ctl(None, "olt", "get", home=home), 4)  # the default config file is read
        described = json.loads(ok(ctl(None, "config", "-o", "json", home=home, env=env)))
        assert described["server"] == olt.server and described["token"] == "none"
    finally:
        (home / ".oltsim" / "config").unlink()


# ---- commands that change things ----------------------------------------------------------------------------

def onu_state(daemon, home, serial: str) -> str:
    return json.loads(ok(ctl(daemon, "onu", "get", serial, "-o", "json", home=home)))["InternalState"]


def status_line(result: subprocess.CompletedProcess) -> str:
    text = ok(result)
    assert re.fullmatch(r"\[Status: 0\] .+\n", text), text
    return text


def test_every_command_that_changes_the_olt(daemons, home):
    """ONU, PON and OLT power commands change what `onu get` and `olt get` show; alarms, MDS, log level and the
    OpenOLT server commands answer `[Status: 0] ...` (or their JSON); EAPOL/DHCP restarts and IGMP on UNIs that are
    down, and powering on a running OLT, are refused with the server's reason; `wait` sees each power change."""
    daemon = daemons(*SHAPE)
    adapter = provisioned(daemon, 2)
    try:
        assert "shut down" in status_line(ctl(daemon, "onu", "shutdown", "BBSM00000001", home=home))
        assert onu_state(daemon, home, "BBSM00000001") == "disabled"
        ok(ctl(daemon, "wait", "--state", "disabled", "--onus", "BBSM00000001", "--timeout", "10", home=home))
        answer = json.loads(ok(ctl(daemon, "onu", "poweron", "BBSM00000001", "-o", "json", home=home)))
        assert answer["status_code"] == 0 and "powered on" in answer["message"]
        ok(ctl(daemon, "wait", "--state", "enabled", "--timeout", "10", home=home))

        for command in (("onu", "auth_restart", "BBSM00000001"), ("onu", "restartEapol", "BBSM00000001"),
                        ("onu", "dhcp_restart", "BBSM00000001"), ("onu", "restartDhcp", "BBSM00000001"),
                        ("uni", "auth_restart", "BBSM00000001", "0"), ("uni", "dhcp_restart", "BBSM00000001", "0"),
                        ("onu", "igmp", "BBSM00000001", "0", "join", "224.0.0.22", "-v", "55")):
            line = refused(ctl(daemon, *command, home=home), 1)
            assert line.startswith("oltsimctl: FAILED_PRECONDITION: "), line
        assert "MDS" in status_line(ctl(daemon, "onu", "invalidate_mds", "BBSM00000101", home=home))
        for verb in ("raise", "clear"):
            status_line(ctl(daemon, "onu", "alarms", verb, "ONU_ALARM_LOS", "BBSM00000101", home=home))
            status_line(ctl(daemon, "onu", "alarms", verb, "-p", "InverseBitErrorRate=5", "ONU_SIGNAL_DEGRADE",
                            "BBSM00000101", home=home))
            status_line(ctl(daemon, "olt", "alarms", verb, "OLT_PON_LOS", "1", home=home))
        refused(ctl(daemon, "onu", "alarms", "raise", "NO_SUCH_ALARM", "BBSM00000101", home=home), 1)
        level = ok(ctl(daemon, "log", "debug", "true", home=home))
        assert level == "New log settings:\n\tLevel: debug\n\tReportCaller: true\n"
        assert json.loads(ok(ctl(daemon, "log", "info", "false", "-o", "json", home=home))) == {
            "level": "info", "caller": False}

        status_line(ctl(daemon, "pon", "shutdownAllONUs", "1", home=home))
        assert onu_state(daemon, home, "BBSM00000101") == "pon_disabled" or \
            onu_state(daemon, home, "BBSM00000101") == "disabled"
        status_line(ctl(daemon, "pon", "poweronAllONUs", "1", home=home))
        ok(ctl(daemon, "wait", "--state", "enabled", "--onus", "BBSM00000101", "--timeout", "10", home=home))
        status_line(ctl(daemon, "olt", "shutdownAllONUs", home=home))
        ok(ctl(daemon, "wait", "--state", "disabled", "--timeout", "10", home=home))
        status_line(ctl(daemon, "olt", "poweronAllONUs", home=home))
        ok(ctl(daemon, "wait", "--state", "enabled", "--timeout", "10", home=home))

        status_line(ctl(daemon, "olt", "stopServer", home=home))
        status_line(ctl(daemon, "olt", "startServer", home=home))
        status_line(ctl(daemon, "olt", "restartServer", "0", home=home))
        line = refused(ctl(daemon, "olt", "poweron", home=home), 1)  # legal only once created or deleted
        assert line == "oltsimctl: FAILED_PRECONDITION: OLT BBSIM_OLT_0 is already powered on (enabled)"
        status_line(ctl(daemon, "olt", "shutdown", home=home))
        assert json.loads(ok(ctl(daemon, "olt", "get", "-o", "json", home=home)))["InternalState"] == "disabled"
        status_line(ctl(daemon, "olt", "reboot", home=home))
        assert daemon.process.poll() is None
    finally:
        adapter.close()
    assert "Traceback" not in daemon.log


# ---- token and TLS ------------------------------------------------------------------------------------------

def test_access_token(daemons, home, tmp_path):
    """With --api-token-file on the daemon: no token or a wrong one is UNAUTHENTICATED (exit 1); --token-file,
    OLTSIM_TOKEN and --token are accepted, for unary calls and the event stream; `config` never shows it."""
    secret = tmp_path / "token"
    secret.write_text(TOKEN + "\n")
    daemon = daemons(*SHAPE, "--api-token-file", str(secret), status=401)
    line = refused(ctl(daemon, "olt", "get", home=home), 1)
    assert line.startswith("oltsimctl: UNAUTHENTICATED: "), line
    wrong = tmp_path / "wrong"
    wrong.write_text("not-the-token")
    refused(ctl(daemon, "--token-file", str(wrong), "olt", "get", home=home), 1)
    refused(ctl(daemon, "events", "--duration", "5", home=home), 1)
    assert "BBSIM_OLT_0" in ok(ctl(daemon, "--token-file", str(secret), "olt", "get", home=home))
    assert "BBSIM_OLT_0" in ok(ctl(daemon, "olt", "get", "--token-file", str(secret), home=home))
    assert "BBSIM_OLT_0" in ok(ctl(daemon, "olt", "get", home=home,
                                   env=ctl_environment(home, OLTSIM_TOKEN=TOKEN)))
    assert "BBSIM_OLT_0" in ok(ctl(daemon, "--token", TOKEN, "olt", "get", home=home))
    assert ok(ctl(daemon, "--token-file", str(secret), "events", "--duration", "0.5", home=home)) == ""
    described = ok(ctl(daemon, "--token-file", str(secret), "config", home=home))
    assert TOKEN not in described and f"token: file {secret}" in described


def test_tls_with_client_certificates(daemons, home, pki):  # noqa: F811 - the fixture
    """v1 gRPC on an ssl: endpoint that requires a client certificate: --ca-cert with --client-cert/--client-key
    is answered; without the client certificate, without trusting the CA, with a wrong --server-name or in
    plain text the connection fails (exit 4)."""
    endpoint = ("ssl:{port}:interface=127.0.0.1:privateKey=" + str(pki.server_key) + ":certKey="
                + str(pki.server_cert) + ":caCertsDir=" + str(pki.ca_dir) + ":requireClientCert=yes")
    daemon = daemons(*SHAPE, endpoints={"grpc-v1": endpoint})
    client = ("--client-cert", str(pki.client_cert), "--client-key", str(pki.client_key))
    assert "BBSIM_OLT_0" in ok(ctl(daemon, "--ca-cert", str(pki.ca), *client, "olt", "get", home=home))
    for options in (("--ca-cert", str(pki.ca)), ("--ca-cert", str(pki.stranger_ca), *client),
                    ("--ca-cert", str(pki.ca), "--server-name", "other.example", *client), ()):
        line = refused(ctl(daemon, "--timeout", "5", *options, "olt", "get", home=home), 4)
        assert line.startswith(f"oltsimctl: cannot connect to {daemon.server}: "), line
    refused(ctl(daemon, "--client-cert", str(pki.client_cert), "olt", "get", home=home), 2)


# ---- wait ---------------------------------------------------------------------------------------------------

def test_wait_until_onus_come_up_then_json_summary(daemons, home):
    """`wait --state enabled` started before any adapter exits 0 once the adapter brought both ONUs up; a later
    `wait -o json` reports each ONU's state."""
    daemon = daemons(*SHAPE)
    waiting = subprocess.Popen([*CTL, "--server", daemon.server, "wait", "--state", "enabled", "--timeout", "60"],
                               cwd=REPO, env=ctl_environment(home), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True)
    try:
        adapter = ScriptedAdapter(f"127.0.0.1:{daemon.ports['openolt']}")
        try:
            adapter.bring_up(2)
            out, err = waiting.communicate(timeout=CTL_TIMEOUT)
        finally:
            adapter.close()
    finally:
        if waiting.poll() is None:
            waiting.kill()
            waiting.wait(CTL_TIMEOUT)
    assert (waiting.returncode, out, err) == (0, "2 of 2 ONUs in enabled\n", "")
    summary = json.loads(ok(ctl(daemon, "wait", "--state", "enabled", "-o", "json", home=home)))
    assert summary == {"state": "enabled", "reached": True, "total": 2, "in_state": 2,
                       "onus": {serial: "enabled" for serial in SERIALS}}


def test_wait_timeout_exits_3_naming_where_the_onus_are(olt, home):
    """No EAPOL or DHCP runs (the scripted adapter does none): `wait --state dhcp_ack_received` exits 3 with one
    line saying how many made it and, for each other ONU, its own state and its service's EAPOL and DHCP states
    (never the DHCP machine's `created` as if it were the ONU's); with -o json, also the
    summary on stdout; an unknown ONU is refused."""
    result = ctl(olt, "wait", "--state", "dhcp_ack_received", "--timeout", "1", "--interval", "0.2", home=home)
    line = refused(result, 3)
    where = "enabled, hsia: eapol created, dhcp created"
    assert line == ("oltsimctl: timed out after 1s: 0 of 2 ONUs in dhcp_ack_received; not yet: "
                    f"BBSM00000001 {where}; BBSM00000101 {where}")
    assert result.stdout == ""
    result = ctl(olt, "wait", "--state", "dhcp_ack_received", "--timeout", "0.5", "-o", "json", home=home)
    refused(result, 3)
    assert json.loads(result.stdout) == {"state": "dhcp_ack_received", "reached": False, "total": 2, "in_state": 0,
                                         "onus": {serial: where for serial in SERIALS}}
    line = refused(ctl(olt, "wait", "--state", "enabled", "--onus", "BBSM00000009", home=home), 2)
    assert "BBSM00000009" in line


def read_terminal(fd: int, process: subprocess.Popen, timeout: float) -> str:
    """Everything written to the terminal `fd` until `process` exits (bounded)."""
    chunks = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.1)
        if ready:
            try:
                data = os.read(fd, 4096)
            except OSError:  # the other side closed
                break
            if not data:
                break
            chunks.append(data)
        elif process.poll() is not None:
            break
    return b"".join(chunks).decode(errors="replace")


def test_wait_shows_a_progress_bar_on_a_terminal_only(olt, home):
    """With stderr on a terminal `wait` draws `ONUs in enabled: 2/2`; --quiet, like a pipe, draws nothing."""
    for quiet, expected in (((), True), (("--quiet",), False)):
        controller, terminal = pty.openpty()
        try:
            process = subprocess.Popen([*CTL, "--server", olt.server, "wait", "--state", "enabled", *quiet],
                                       cwd=REPO, env=ctl_environment(home), stdout=subprocess.PIPE,
                                       stderr=terminal, text=True)
            os.close(terminal)
            drawn = read_terminal(controller, process, CTL_TIMEOUT)
            assert process.wait(CTL_TIMEOUT) == 0
            assert process.stdout.read() == "2 of 2 ONUs in enabled\n"
            process.stdout.close()
        finally:
            os.close(controller)
        assert ("ONUs in enabled: 2/2" in drawn) is expected, drawn


# ---- events -------------------------------------------------------------------------------------------------

def start_events(daemon, home, *arguments: str) -> subprocess.Popen:
    return subprocess.Popen([*CTL, "--server", daemon.server, "events", *arguments], cwd=REPO,
                            env=ctl_environment(home), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def cycle_until_exit(daemon, home, process: subprocess.Popen, rounds: int = 10) -> tuple[str, str]:
    """Shut both ONUs down and power them on again until `process` exits (the stream may open after the first
    round); its (stdout, stderr)."""
    try:
        for _ in range(rounds):
            if process.poll() is not None:
                break
            for serial in SERIALS:
                ok(ctl(daemon, "onu", "shutdown", serial, home=home))
                ok(ctl(daemon, "onu", "poweron", serial, home=home))
        return process.communicate(timeout=CTL_TIMEOUT)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate(timeout=CTL_TIMEOUT)


def test_events_filtered_by_type_and_onu_with_count(daemons, home):
    """`events --type onu-state-changed --onu SN --count 3 -o json` prints exactly 3 JSON lines, all of that type
    and ONU, and exits 0; the table form puts time, type, ids and details on one line."""
    daemon = daemons(*SHAPE)
    adapter = provisioned(daemon, 2)
    try:
        process = start_events(daemon, home, "--type", "onu-state-changed", "--onu", "BBSM00000101", "--count", "3",
                               "-o", "json")
        out, err = cycle_until_exit(daemon, home, process)
        assert (process.returncode, err) == (0, ""), err
        events = [json.loads(line) for line in out.splitlines()]
        assert len(events) == 3
        assert {(event["type"], event["onu_serial"], event["pon_id"]) for event in events} == {
            ("onu-state-changed", "BBSM00000101", 1)}
        assert all(set(event["details"]) >= {"attribute", "from", "to"} for event in events)

        process = start_events(daemon, home, "--type", "onu-state-changed", "--type", "alarm", "--onu",
                               "BBSM00000001", "--count", "2")
        out, err = cycle_until_exit(daemon, home, process)
        assert (process.returncode, err) == (0, ""), err
        lines = out.splitlines()
        assert len(lines) == 2
        for line in lines:
            assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z (onu-state-changed|alarm) pon=0 onu=1 "
                                r"(uni=\d+ )?serial=BBSM00000001( \S+=\S*)+", line), line
    finally:
        adapter.close()


def test_events_show_state_alarm_and_scenario_events_unless_all(daemons, home):
    """Over ONU power cycles, `events` alone prints no OMCI frame, packet or port statistics (the
    state changes and alarms are there); `--all` prints the OMCI frames too, and every line of an ONU, those of
    OMCI frames included, names its serial."""
    daemon = daemons(*SHAPE)
    adapter = provisioned(daemon, 2)
    try:
        process = start_events(daemon, home, "--count", "40", "-o", "json")
        out, err = cycle_until_exit(daemon, home, process)
        assert (process.returncode, err) == (0, ""), err
        records = [json.loads(line) for line in out.splitlines()]
        types = {record["type"] for record in records}
        assert not types & {"omci-indication", "packet-indication", "port-stats"}, types
        assert {"alarm", "onu-state-changed"} <= types, types
        assert all(record["onu_serial"] in SERIALS for record in records if record["onu_id"] >= 0), records

        process = start_events(daemon, home, "--all", "--count", "80")
        out, err = cycle_until_exit(daemon, home, process)
        assert (process.returncode, err) == (0, ""), err
        lines = out.splitlines()
        assert any(" omci-indication " in line for line in lines), lines
        of_onus = [line for line in lines if " onu=" in line]
        unnamed = [line for line in of_onus if not re.search(r" serial=(BBSM00000001|BBSM00000101) ", line)]
        assert of_onus and not unnamed, unnamed
    finally:
        adapter.close()


def test_events_ctrl_c_exits_0(daemons, home):
    """Ctrl-C (SIGINT) while tailing ends `events` with exit 0 and no traceback."""
    daemon = daemons(*SHAPE)
    adapter = provisioned(daemon, 2)
    try:
        process = start_events(daemon, home)
        try:
            first = None
            for _ in range(10):  # until the stream is open and has delivered a line
                ok(ctl(daemon, "onu", "shutdown", "BBSM00000001", home=home))
                ok(ctl(daemon, "onu", "poweron", "BBSM00000001", home=home))
                ready, _, _ = select.select([process.stdout], [], [], 1.0)
                if ready:
                    first = process.stdout.readline()
                    break
            assert first, "no event line"
            process.send_signal(signal.SIGINT)
            _, err = process.communicate(timeout=CTL_TIMEOUT)
        finally:
            if process.poll() is None:
                process.kill()
                process.communicate(timeout=CTL_TIMEOUT)
        assert process.returncode == 0 and "Traceback" not in err, err
    finally:
        adapter.close()


def test_with_the_builtin_adapter_services_reach_their_states(daemons, home):
    """With `--adapter builtin` and the TT services (DHCP on voip and vod, IGMP on vod, no EAPOL): `wait` sees
    every ONU reach dhcp_ack_received, DHCP restarts and comes back, an IGMP join shows as igmp_join_started; a
    state no service can reach is refused (exit 2) and EAPOL restarts are refused by the server."""
    services = REPO / "oltsim" / "data" / "tt-services.yaml"
    daemon = daemons(*SHAPE, "--adapter", "builtin", "--services", str(services))
    assert ok(ctl(daemon, "wait", "--state", "dhcp_ack_received", "--timeout", "60", home=home)) == \
        "2 of 2 ONUs in dhcp_ack_received\n"
    assert "DHCP restarted" in status_line(ctl(daemon, "onu", "restartDhcp", "BBSM00000001", home=home))
    ok(ctl(daemon, "wait", "--state", "dhcp_ack_received", "--onus", "BBSM00000001", "--timeout", "60", home=home))
    assert "DHCP restarted" in status_line(ctl(daemon, "uni", "dhcp_restart", "BBSM00000101", "0", home=home))
    ok(ctl(daemon, "wait", "--state", "dhcp_ack_received", "--timeout", "60", home=home))
    assert "JOIN" in status_line(ctl(daemon, "onu", "igmp", "BBSM00000101", "0", "join", "224.0.0.22", "-v", "55",
                                     home=home))
    ok(ctl(daemon, "wait", "--state", "igmp_join_started", "--onus", "BBSM00000101", "--timeout", "30", home=home))
    assert "LEAVE" in status_line(ctl(daemon, "onu", "igmp", "BBSM00000101", "0", "leave", "224.0.0.22", home=home))
    ok(ctl(daemon, "wait", "--state", "igmp_left", "--onus", "BBSM00000101", "--timeout", "30", home=home))
    line = refused(ctl(daemon, "wait", "--state", "eap_response_success_received", home=home), 2)
    assert "NeedsEapol" in line, line
    refused(ctl(daemon, "onu", "auth_restart", "BBSM00000001", home=home), 1)


# Commands whose output is bbsimctl's, byte for byte (not the alarm lists: bbsimctl prints a Go map in random
# order; nor `olt pons`, whose packet counts move between the two calls). `olt nnis` with bbsimctl's short rows;
# `dmi transceiver list` from the DMI port. STRAY_WORDS: with words bbsimctl ignores, compared with our bbsimctl.
SAME_AS_BBSIMCTL = [("olt", "get"), ("olt", "resources", "GEM_PORT"), ("olt", "resources", "ALLOC_ID"),
                    ("onu", "list"), ("onu", "list", "-v"), ("onu", "get", "BBSM00000101", "-v"), ("uni", "list", "-v"),
                    ("onu", "get", "BBSM00000101"), ("onu", "services", "BBSM00000001"),
                    ("onu", "traffic_schedulers", "BBSM00000001"), ("onu", "flows", "BBSM00000101"),
                    ("olt", "flows"), ("service", "list"), ("uni", "list"),
                    ("uni", "get", "BBSM00000101"), ("uni", "services", "BBSM00000101", "0"), ("log", "info", "false"),
                    ("olt", "nnis"), ("dmi", "transceiver", "list")]
STRAY_WORDS = [("uni", "list", "BBSM00000001"), ("onu", "get", "BBSM00000101", "extra", "-v"),
               ("uni", "services", "BBSM00000101", "0", "x", "y")]
BBSIMCTL_DMI_PORT = 50075  # and localhost:50075 for its dmi commands


@pytest.mark.skipif(BBSIMCTL is None, reason="bbsimctl is not installed (BBSim's Go CLI); set OLTSIM_BBSIMCTL to "
                                             "compare with it")
def test_tables_are_what_bbsimctl_prints(daemons, home):
    """Against the same daemon (v1 gRPC on localhost:50070 and DMI on localhost:50075, which bbsimctl 1.16.8
    insists on; skipped when taken), oltsimctl prints exactly what bbsimctl prints for the read commands and `log`,
    and the OLT alarm box with the same rows."""
    for port in (BBSIMCTL_PORT, BBSIMCTL_DMI_PORT):
        if listening(port):
            pytest.skip(f"port {port} is in use, and bbsimctl 1.16.8 talks to no other")
    daemon = daemons(*SHAPE, endpoints={"grpc-v1": f"tcp:{BBSIMCTL_PORT}:interface=127.0.0.1",
                                        "dmi": f"tcp:{BBSIMCTL_DMI_PORT}:interface=127.0.0.1"})
    adapter = provisioned(daemon, 2)
    try:
        for command in SAME_AS_BBSIMCTL:
            theirs = subprocess.run([BBSIMCTL, *command], capture_output=True, text=True, timeout=CTL_TIMEOUT,
                                    env=ctl_environment(home), check=False)
            assert theirs.returncode == 0, (command, theirs.stderr)
            assert ok(ctl(daemon, *command, home=home)) == theirs.stdout, command
        for command in STRAY_WORDS:
            theirs = subprocess.run([BBSIMCTL, *command], capture_output=True, text=True, timeout=CTL_TIMEOUT,
                                    env=ctl_environment(home), check=False)
            assert theirs.returncode == 0, (command, theirs.stderr)
            ours = subprocess.run([sys.executable, "-c", "from oltsim.ctl.oltsimctl import run_bbsimctl; run_bbsimctl()",
                                   *command], cwd=REPO, capture_output=True, text=True, timeout=CTL_TIMEOUT,
                                  env=ctl_environment(home), check=False)
            assert (ours.returncode, ours.stderr, ours.stdout) == (0, "", theirs.stdout), command
        theirs = subprocess.run([BBSIMCTL, "olt", "alarms", "list"], capture_output=True, text=True,
                                timeout=CTL_TIMEOUT, env=ctl_environment(home), check=False)
        ours = ok(ctl(daemon, "olt", "alarms", "list", home=home))
        assert sorted(ours.splitlines()) == sorted(theirs.stdout.splitlines())  # the same box, rows sorted
    finally:
        adapter.close()


class Lines:
    """The lines a subprocess writes to one pipe, read from its file descriptor (select on a buffered reader would
    miss lines already in the reader's buffer); every wait is bounded."""

    def __init__(self, pipe):
        self.fd = pipe.fileno()
        self.lines: list[str] = []
        self._partial = b""

    def _read(self, timeout: float) -> None:
        if select.select([self.fd], [], [], timeout)[0]:
            data = os.read(self.fd, 65536)
            assert data, f"the pipe closed; lines so far: {self.lines}"
            *complete, self._partial = (self._partial + data).split(b"\n")
            self.lines += [line.decode() for line in complete]

    def drain(self, rounds: int = 50) -> list[str]:
        """Read what the pipe already holds (until it has nothing for 0.2 s; bounded)."""
        for _ in range(rounds):
            before = (len(self.lines), self._partial)
            self._read(0.2)
            if (len(self.lines), self._partial) == before:
                break
        return self.lines

    def wait_for(self, predicate, timeout: float = CTL_TIMEOUT, poke=None) -> list[str]:
        """Read until `predicate(lines)`; `poke()` (if given) runs before each second of waiting."""
        deadline = time.monotonic() + timeout
        while not predicate(self.lines):
            remaining = deadline - time.monotonic()
            assert remaining > 0, f"gave up waiting; lines so far: {self.lines}"
            if poke is not None:
                poke()
            self._read(min(remaining, 1.0))
        return self.lines


def test_events_follow_reconnects_to_a_restarted_daemon(daemons, home):
    """`events --follow` outlives its daemon: when the daemon stops it says once that it is reconnecting, and the
    events of a new daemon on the same port follow on stdout; Ctrl-C then ends it with 0."""
    first = daemons(*SHAPE)
    adapter = provisioned(first, 2)
    process = start_events(first, home, "--follow", "--type", "onu-state-changed", "-o", "json")
    out, err = Lines(process.stdout), Lines(process.stderr)

    def power_cycle(daemon):
        return lambda: (ok(ctl(daemon, "onu", "shutdown", "BBSM00000001", home=home)),
                        ok(ctl(daemon, "onu", "poweron", "BBSM00000001", home=home)))

    try:
        try:
            out.wait_for(lambda lines: len(lines) >= 1, poke=power_cycle(first))  # the stream is open
        finally:
            adapter.close()
        first.close()
        err.wait_for(lambda lines: any("reconnecting every 1s" in line for line in lines))
        seen = len(out.drain())  # the first daemon's lines were all written before its stream ended
        second = daemons(*SHAPE, endpoints={name: f"tcp:{port}:interface=127.0.0.1"
                                            for name, port in first.ports.items()})
        adapter = provisioned(second, 2)
        try:
            new = out.wait_for(lambda lines: len(lines) > seen, poke=power_cycle(second))[seen:]
        finally:
            adapter.close()
        assert json.loads(new[0])["type"] == "onu-state-changed"
        process.send_signal(signal.SIGINT)
        _, rest = process.communicate(timeout=CTL_TIMEOUT)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate(timeout=CTL_TIMEOUT)
    assert process.returncode == 0, rest
    stderr = "\n".join(err.lines) + rest
    assert stderr.count("reconnecting") == 1 and "Traceback" not in stderr, stderr


def test_the_wheel_installs_an_oltsimctl_command(tmp_path, olt):
    """The wheel built from setup.py carries oltsim.ctl and an `oltsimctl` console script; installed on its own
    (not the source tree) it answers --help and reads the daemon. Its `bbsimctl` script is the same program as
    bbsimctl: usage named so, exit 1 on a bad command, the server from BBSIMCTL_CONFIG's file."""
    source = tmp_path / "src"
    source.mkdir()
    for name in ("setup.py", "README.md"):
        shutil.copy(REPO / name, source / name)
    for name in ("oltsim", "twisted"):
        shutil.copytree(REPO / name, source / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc",
                                                                                   "dropin.cache"))
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check"]
    subprocess.run([*pip, "wheel", "--quiet", "--no-deps", "--no-build-isolation", "--no-index", str(source), "-w",
                    str(tmp_path / "dist")], cwd=tmp_path, check=True, timeout=300, capture_output=True)
    wheel = next((tmp_path / "dist").glob("oltsim-*.whl"))
    site = tmp_path / "site"
    subprocess.run([*pip, "install", "--quiet", "--no-deps", "--no-index", "--target", str(site), str(wheel)],
                   cwd=tmp_path, check=True, timeout=300, capture_output=True)
    env = {**ctl_environment(tmp_path), "PYTHONPATH": str(site)}
    command = site / "bin" / "oltsimctl"
    shown = subprocess.run([str(command), "--help"], cwd=tmp_path, env=env, capture_output=True, text=True,
                           timeout=CTL_TIMEOUT, check=False)
    assert shown.returncode == 0 and shown.stdout.startswith("usage: oltsimctl"), shown.stderr
    listed = subprocess.run([str(command), "--server", olt.server, "-o", "json", "onu", "list"], cwd=tmp_path,
                            env=env, capture_output=True, text=True, timeout=CTL_TIMEOUT, check=False)
    assert listed.returncode == 0, listed.stderr
    assert sorted(onu["SerialNumber"] for onu in json.loads(listed.stdout)["items"]) == list(SERIALS)
    as_bbsim = subprocess.run([str(site / "bin" / "bbsimctl"), "onu", "nosuchcommand"], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=CTL_TIMEOUT, check=False)
    assert as_bbsim.returncode == 1 and as_bbsim.stderr.startswith("usage: bbsimctl onu"), as_bbsim.stderr
    config = tmp_path / "bbsim-config"
    config.write_text(f"server: {olt.server}\n")
    listed = subprocess.run([str(site / "bin" / "bbsimctl"), "onu", "list"], cwd=tmp_path,
                            env={**env, "BBSIMCTL_CONFIG": str(config)}, capture_output=True, text=True,
                            timeout=CTL_TIMEOUT, check=False)
    assert listed.returncode == 0, listed.stderr
    assert [row.split()[2] for row in listed.stdout.splitlines()[1:]] == list(SERIALS)
