"""The real daemon, `twistd -n oltsim`, as a subprocess on loopback ports: options, refusal of an impossible
configuration before anything listens, one line and no listener left when a port is busy or an interface does not
resolve, config-file typos logged as warnings (errors with --strict-config), and a clean exit on SIGTERM/SIGINT while
an adapter holds the stream; the OpenOLT tests on both engines of its endpoint, each checked to be the one in use."""
from __future__ import annotations

import http.client
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import grpc
from voltha_protos import openolt_pb2, openolt_pb2_grpc
import pytest

from engines import engine_options, grpc_engine  # noqa: F401 - the fixture
from scripted_adapter import ScriptedAdapter, free_ports, listener_options
from test_grpcserver import write_self_signed

REPO = Path(__file__).resolve().parents[2]
# twistd's own entry point, independent of where the venv put its scripts; argv[0] names it in messages.
TWISTD = [sys.executable, "-c", "import sys; sys.argv[0] = 'twistd'; from twisted.scripts.twistd import run; run()"]
LISTENERS = tuple(listener_options())
START_TIMEOUT = 30.0
STOP_TIMEOUT = 10.0

HELP_OPTIONS = ("--config", "--services", "--pon", "--onu", "--uni", "--pots", "--nni", "--olt-id", "--delay",
                "--reboot-delay", "--ca", "--api-revision", "--openolt", "--grpc-v1", "--rest-v1", "--grpc-v0",
                "--rest-v0")


def environment() -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO)] + [p for p in [env.get("PYTHONPATH")] if p])
    return env


def twistd(*arguments: str, cwd: Path, timeout: float = START_TIMEOUT) -> subprocess.CompletedProcess:
    """Run twistd to completion (help, refused configuration)."""
    return subprocess.run([*TWISTD, *arguments], cwd=cwd, env=environment(), capture_output=True, text=True,
                          timeout=timeout)


def listening(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
    except OSError:
        return False
    return True


def rest_get_json(port: int, path: str, timeout: float = 5.0) -> tuple[int, dict]:
    """GET ``path`` on 127.0.0.1:``port``: status and JSON body."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        connection.request("GET", path)
        response = connection.getresponse()
        return response.status, json.loads(response.read() or b"null")
    finally:
        connection.close()


class DaemonProcess:
    """A started oltsim process on loopback ports: its log, REST reads and the wait until it serves. Subclasses
    start the process (`self.process`, `self.ports`, `self.log_path`, `self._log`)."""

    name = "oltsim"
    poll_interval = 0.05

    @property
    def log(self) -> str:
        self._log.flush()
        return self.log_path.read_text()

    def rest_get(self, path: str, timeout: float = 5.0, surface: str = "rest-v1") -> tuple[int, dict]:
        """GET ``path`` on the REST listener ``surface`` (rest-v1, rest-v0, sadis): status and JSON body."""
        return rest_get_json(self.ports[surface], path, timeout)

    def engine(self, server: str) -> str | None:
        """The engine the gRPC server `server` said it started on (its grpc-server-started line), or None."""
        found = re.findall(rf"grpc-server-started name={re.escape(server)} address=\S+ engine=(\w+)", self.log)
        return found[-1] if found else None

    def wait_serving(self, timeout: float = START_TIMEOUT) -> dict:
        """Poll GET /v1/olt until it answers 200 (bounded); returns the OLT JSON."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise AssertionError(f"{self.name} exited with {self.process.returncode}:\n{self.log}")
            try:
                status, body = self.rest_get("/v1/olt", timeout=2.0)
            except OSError:
                time.sleep(self.poll_interval)
                continue
            if status == 200:
                return body
            time.sleep(self.poll_interval)
        raise AssertionError(f"GET /v1/olt did not answer 200 within {timeout:g} s:\n{self.log}")


class Daemon(DaemonProcess):
    """One `twistd -n oltsim` process on loopback ports; its output goes to a log file in the test's tmp dir."""

    def __init__(self, tmp_path: Path, *arguments: str):
        self.ports = dict(zip(LISTENERS, free_ports(len(LISTENERS))))
        listen = [arg for name, port in self.ports.items()
                  for arg in (f"--{name}", f"tcp:{port}:interface=127.0.0.1")]
        self.log_path = tmp_path / "oltsim.log"
        self._log = open(self.log_path, "w")
        self.process = subprocess.Popen([*TWISTD, "-n", "--pidfile=", "oltsim", *listen, *arguments],
                                        cwd=tmp_path, env=environment(), stdout=self._log,
                                        stderr=subprocess.STDOUT)

    def wait_exit(self, timeout: float = STOP_TIMEOUT) -> int:
        try:
            return self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"oltsim did not exit within {timeout:g} s:\n{self.log}") from None

    def close(self) -> None:
        """Make sure the process is gone (only ours, by its pid)."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(STOP_TIMEOUT)
        self._log.close()


@pytest.fixture
def daemon(tmp_path):
    started = []

    def start(*arguments: str) -> Daemon:
        process = Daemon(tmp_path, *arguments)
        started.append(process)
        return process

    yield start
    for process in started:
        process.close()


def test_help_lists_the_configuration_shape_timing_and_listener_options(tmp_path):
    """`twistd -n oltsim --help` lists the configuration, shape, timing, TLS and listener options."""
    result = twistd("-n", "oltsim", "--help", cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    missing = [option for option in HELP_OPTIONS if f"{option}=" not in result.stdout]
    assert missing == [], result.stdout


def assert_refused(tmp_path: Path, arguments, words, ports: list[int] | None = None) -> subprocess.CompletedProcess:
    """twistd oltsim with every listener on a free loopback port (or `ports`), then `arguments` (a later listener
    option wins), exits non-zero with one message that has every one of `words`, before any port is bound."""
    ports = ports or free_ports(len(LISTENERS))
    listen = [arg for name, port in zip(LISTENERS, ports) for arg in (f"--{name}", f"tcp:{port}:interface=127.0.0.1")]
    result = twistd("-n", "--pidfile=", "oltsim", *listen, *arguments, cwd=tmp_path)
    output = result.stdout + result.stderr
    assert result.returncode != 0, output
    assert "Traceback" not in output
    errors = [line for line in output.splitlines() if line.strip()]
    assert len(errors) == 1 and errors[0].startswith("oltsim: "), output
    assert all(word in errors[0] for word in words), errors
    # Nothing was started: no server log line, and no port left bound.
    assert "grpc-server-started" not in output and "Site starting" not in output
    assert not any(listening(port) for port in ports)
    return result


@pytest.mark.parametrize("option", LISTENERS)
def test_a_port_out_of_range_is_refused_with_one_line_and_exit_2(tmp_path, option):
    """Every listener option (REST, SADIS and gRPC alike) with a port above 65535 exits 2 with one line naming the
    option and the range, before any port is bound (not the socket's OverflowError traceback at bind)."""
    result = assert_refused(tmp_path, (f"--{option}", "tcp:99999"), (f"--{option}", "99999", "0..65535"))
    assert result.returncode == 2


@pytest.mark.parametrize("arguments, words", [
    (("--uni", "99"), ("--uni", "99")),
    (("--ca", "bogus"), ("--ca", "bogus")),
])
def test_impossible_configuration_fails_before_listening(tmp_path, arguments, words):
    """An impossible configuration exits non-zero with one message naming the option, before any port is bound."""
    assert_refused(tmp_path, arguments, words)


def test_native_engine_serves_an_ssl_openolt_endpoint_through_its_tls_relay(tmp_path, daemon):
    """--grpc-engine native with an ssl: OpenOLT endpoint: the daemon says it serves OpenOLT on the native engine,
    and a channel trusting the certificate gets GetDeviceInfo over TLS (pygrpc-native has no TLS of its own)."""
    write_self_signed(tmp_path)
    openolt = free_ports(1)[0]
    process = daemon("--grpc-engine", "native",
                     "--openolt", f"ssl:{openolt}:interface=127.0.0.1:privateKey=key.pem:certKey=cert.pem")
    process.wait_serving()
    assert process.engine("openolt") == "native"
    credentials = grpc.ssl_channel_credentials(root_certificates=(tmp_path / "cert.pem").read_bytes())
    with grpc.secure_channel(f"127.0.0.1:{openolt}", credentials) as channel:
        info = openolt_pb2_grpc.OpenoltStub(channel).GetDeviceInfo(openolt_pb2.Empty(), timeout=10)
    assert info.device_serial_number == "BBSIM_OLT_0"


def test_another_reactor_is_refused_with_one_line(tmp_path):
    """oltsim runs on the asyncio reactor: twistd --reactor=epoll exits 2 with one line saying how to start it,
    before any port is bound."""
    ports = free_ports(len(LISTENERS))
    listen = [arg for name, port in zip(LISTENERS, ports) for arg in (f"--{name}", f"tcp:{port}:interface=127.0.0.1")]
    result = twistd("--reactor=epoll", "-n", "--pidfile=", "oltsim", *listen, cwd=tmp_path)
    output = result.stdout + result.stderr
    assert result.returncode == 2, output
    errors = [line for line in output.splitlines() if line.strip()]
    assert len(errors) == 1 and errors[0].startswith("oltsim: ") and "--reactor=asyncio" in errors[0], output
    assert not any(listening(port) for port in ports)


def test_daemon_serves_rest_and_openolt(daemon, grpc_engine):
    """The daemon answers GET /v1/olt and an adapter can open the indication stream, on the OpenOLT engine asked
    for (the one its log says it started)."""
    process = daemon("--pon", "2", "--onu", "2", "--delay", "0", *engine_options(grpc_engine))
    olt = process.wait_serving()
    assert process.engine("openolt") == grpc_engine, process.log
    assert (olt["SerialNumber"], olt["InternalState"], len(olt["PONPorts"])) == ("BBSIM_OLT_0", "initialized", 2)
    with ScriptedAdapter(f"127.0.0.1:{process.ports['openolt']}") as adapter:
        _, onus = adapter.bring_up(4)
    assert len(onus) == 4
    status, onu = process.rest_get(f"/v1/olt/onus/{onus[0].serial}")
    assert (status, onu["InternalState"]) == (200, "enabled")


def test_an_explicit_interface_binds_only_that_address(daemon, grpc_engine):
    """Every listener given `interface=127.0.0.1` answers there and not on ::1 (a port alone binds both families,
    test_bbsim_chart; an address given binds only itself)."""
    try:
        with socket.socket(socket.AF_INET6, socket.SOCK_STREAM) as probe:
            probe.bind(("::1", 0))
    except OSError:
        pytest.skip("no IPv6 loopback (::1) on this host")
    process = daemon(*engine_options(grpc_engine))
    process.wait_serving()
    for name, port in process.ports.items():
        assert listening(port), name
        with pytest.raises(ConnectionRefusedError):
            socket.create_connection(("::1", port), timeout=2).close()


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_signal_stops_daemon_cleanly_while_adapter_holds_stream(daemon, signum, grpc_engine):
    """SIGTERM or SIGINT stops the daemon with exit code 0 within a few seconds; the adapter's stream ends with
    UNAVAILABLE and every port is closed."""
    process = daemon("--pon", "1", "--onu", "1", "--delay", "0", *engine_options(grpc_engine))
    process.wait_serving()
    assert process.engine("openolt") == grpc_engine, process.log
    with ScriptedAdapter(f"127.0.0.1:{process.ports['openolt']}") as adapter:
        adapter.bring_up(1)
        assert not adapter.stream.ended
        process.process.send_signal(signum)
        code, details = adapter.stream.wait_end(STOP_TIMEOUT)
        assert code == grpc.StatusCode.UNAVAILABLE, (code, details)
    assert process.wait_exit() == 0, process.log
    assert not any(listening(port) for port in process.ports.values())
    assert "Traceback" not in process.log, process.log



def assert_start_failure(tmp_path: Path, arguments, line: str, ports: list[int]) -> None:
    """twistd oltsim with every listener on `ports` (loopback), then `arguments`, exits 1 with `line` as the only
    line on stderr and no traceback anywhere."""
    listen = [arg for name, port in zip(LISTENERS, ports) for arg in (f"--{name}", f"tcp:{port}:interface=127.0.0.1")]
    result = twistd("-n", "--pidfile=", "oltsim", *listen, *arguments, cwd=tmp_path)
    output = result.stdout + result.stderr
    assert result.returncode == 1, output
    assert "Traceback" not in output, output
    assert [text for text in result.stderr.splitlines() if text.strip()] == [line], output


@pytest.mark.parametrize("busy, engine", [("rest-v1", None), ("sadis", None), ("openolt", "native"),
                                          ("grpc-v0", "native"), ("grpc-v1", "grpcio")])
def test_a_busy_port_stops_the_start_with_one_line_and_nothing_listening(tmp_path, busy, engine):
    """A listener's port held by another socket: one line naming the option, the endpoint and the reason, with
    where to read how several OLTs share a host, exit 1, and every other port the daemon had bound released (either
    every listener binds or none stays)."""
    ports = free_ports(len(LISTENERS))
    port = ports[LISTENERS.index(busy)]
    holder = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        holder.bind(("127.0.0.1", port))
        holder.listen()
        assert_start_failure(tmp_path, engine_options(engine),
                             f"oltsim: --{busy} tcp:{port}:interface=127.0.0.1: address already in use (give "
                             f"--{busy} a free port; several OLTs on one host need their own ports: see "
                             f"docs/many-olts.md)", ports)
        assert [name for name, other in zip(LISTENERS, ports) if other != port and listening(other)] == []
    finally:
        holder.close()


@pytest.mark.parametrize("option, engine", [("rest-v0", None), ("grpc-v0", "native"), ("openolt", "grpcio")])
def test_an_unresolvable_interface_stops_the_start_with_one_line_and_nothing_listening(tmp_path, option, engine):
    """A listener on an interface name that does not resolve (.invalid never does): one line saying so, exit 1,
    no port of the daemon left listening."""
    ports = free_ports(len(LISTENERS))
    endpoint = f"tcp:{ports[LISTENERS.index(option)]}:interface=nosuch.invalid"
    listen = [arg for name, port in zip(LISTENERS, ports) for arg in (f"--{name}", f"tcp:{port}:interface=127.0.0.1")]
    result = twistd("-n", "--pidfile=", "oltsim", *listen, f"--{option}", endpoint, *engine_options(engine),
                    cwd=tmp_path)
    output = result.stdout + result.stderr
    assert result.returncode == 1, output
    assert "Traceback" not in output, output
    errors = [text for text in result.stderr.splitlines() if text.strip()]
    assert len(errors) == 1 and errors[0].startswith(f"oltsim: --{option} {endpoint}: interface nosuch.invalid "
                                                     f"does not resolve ("), output
    assert not any(listening(port) for port in ports)


TYPOS = "olt:\n  num_pon_ports: 2\nbbsm:\n  delay: 0\nbbsim:\n  enable_perf: true\n"


def test_config_typos_are_logged_one_warning_each_and_the_defaults_stay(tmp_path, daemon):
    """A config file with an unknown key (more than two edits from any), a misspelt section and an unsupported key
    starts with the defaults and logs one warning for each, with its event name, its key, the nearest known key and
    a readable text."""
    (tmp_path / "typos.yaml").write_text(TYPOS)
    process = daemon("--config", str(tmp_path / "typos.yaml"))
    olt = process.wait_serving()
    assert len(olt["PONPorts"]) == 1
    lines = [line for line in process.log.splitlines() if "#warn] config-" in line]
    assert len(lines) == 3, process.log
    assert "config-key-unknown key=olt.num_pon_ports hint=olt.pon_ports " in lines[2]
    assert lines[2].endswith(": olt.num_pon_ports: unknown key; did you mean olt.pon_ports?")
    assert "config-section-unknown key=bbsm hint=bbsim " in lines[0]
    assert lines[0].endswith("bbsm: unknown section; did you mean bbsim?")
    assert "config-key-unsupported key=bbsim.enable_perf " in lines[1]
    assert lines[1].endswith("bbsim.enable_perf: not supported by oltsim, ignored")


def test_strict_config_refuses_the_typos_with_one_line_before_listening(tmp_path):
    """--strict-config makes the same warnings an error: one line naming the first and counting the others, exit
    non-zero, before any port is bound."""
    (tmp_path / "typos.yaml").write_text(TYPOS)
    assert_refused(tmp_path, ("--config", str(tmp_path / "typos.yaml"), "--strict-config"),
                   ("bbsm: unknown section; did you mean bbsim?", "and 2 more: bbsim.enable_perf, olt.num_pon_ports",
                    "--strict-config"))


def test_a_misspelt_config_key_stops_the_start_with_one_line_and_exit_2(tmp_path):
    """`olt.pon_port` (an edit from `olt.pon_ports`) in the config file: one line on stderr naming it and the key it
    must have meant, exit 2 as a misspelt option, nothing listening (was: a warning among the start-up lines and a
    1-PON OLT)."""
    config = tmp_path / "c.yaml"
    config.write_text("olt:\n  pon_port: 2\nbbsim:\n  enable_perf: false\n")
    result = assert_refused(tmp_path, ("--config", str(config)), ())
    assert (result.returncode, result.stdout) == (2, ""), result.stderr
    assert result.stderr == f"oltsim: config file {config}: olt.pon_port: unknown key; did you mean olt.pon_ports?\n"


def test_a_misspelt_option_is_one_line_naming_the_nearest_and_exit_2(tmp_path):
    """The README's command with a misspelt option: one line on stderr naming it and the nearest option, nothing on
    stdout (was: twistd's 120 lines of usage, then the error, exit 1), exit 2 as every refused start."""
    result = twistd("--nodaemon", "--pidfile=", "oltsim", "--onuu", "4", cwd=tmp_path)
    assert (result.returncode, result.stdout) == (2, ""), result.stdout + result.stderr
    assert result.stderr == "oltsim: option --onuu not recognized; did you mean --onu?\n"


# BBSim 1.16.8's configs/bbsim.yaml as it ships (its licence header left out), the file most BBSim users start from.
BBSIM_STOCK_CONFIG = (REPO / "tests" / "golden" / "bbsim" / "bbsim.yaml").read_text()


def test_bbsims_stock_config_starts_without_a_warning(tmp_path, daemon):
    """BBSim's own configs/bbsim.yaml at --log-level warn: the daemon serves with its settings and logs no warning
    (it logged five: the keys BBSim itself ignores, enable_auth and the others, and enable_perf: false); the
    listeners given as options win over its addresses."""
    (tmp_path / "bbsim.yaml").write_text(BBSIM_STOCK_CONFIG)
    process = daemon("--config", str(tmp_path / "bbsim.yaml"), "--log-level", "warn")
    olt = process.wait_serving()
    assert (olt["SerialNumber"], len(olt["PONPorts"])) == ("BBSIM_OLT_0", 1)
    assert [line for line in process.log.splitlines() if "#warn]" in line] == []
    assert "Traceback" not in process.log


def test_without_an_adapter_the_log_says_the_onus_wait_for_one(daemon):
    """The README's first command (no --adapter): once every listener is up, one info line says the ONUs wait for an
    adapter on the OpenOLT address and how to see them come up without one; it is not repeated."""
    process = daemon()
    process.wait_serving()
    openolt = f"127.0.0.1:{process.ports['openolt']}"
    deadline = time.monotonic() + START_TIMEOUT
    while "waiting-for-adapter" not in process.log and time.monotonic() < deadline:
        time.sleep(0.05)
    lines = process.log.splitlines()
    said = [index for index, line in enumerate(lines) if "waiting-for-adapter" in line]
    assert len(said) == 1, process.log
    line = lines[said[0]]
    assert f"#info] waiting-for-adapter openolt={openolt}: the ONUs stay created until an OpenOLT adapter" in line
    assert "--adapter builtin" in line
    started = [index for index, text in enumerate(lines) if "-started name=" in text]
    assert len(started) == len(LISTENERS) and max(started) < said[0], process.log
    time.sleep(0.5)
    assert process.log.count("waiting-for-adapter") == 1
