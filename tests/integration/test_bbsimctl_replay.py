"""VOLTHA's system tests drive BBSim with `bbsimctl` (opencord/voltha-system-tests: libraries/bbsim.robot and
tests/functional/Voltha_AlarmTests.robot, through `kubectl exec <pod> -- bbsimctl ...`; the chart's liveness probe
is `bbsimctl olt get`). Their calls are replayed here against the daemon at olt_id 10 with 2 PONs x 16 ONUs and
the built-in adapter, serials written in lower case as the tests' data files write them (`BBSM000a010b`). Each
call must exit 0 and print the words those keywords check (`successfully`, `Alarm Indication Sent`,
`MDS counter of ONU` and `, set to`, the serials in column 3 of `onu list` read with `awk 'NR>1 {print $3}'`, the
state in column 5 with `grep SN | awk '{print $5}'`), and what it asked for must then have happened.

The client is BBSim's own bbsimctl when one is installed (OLTSIM_BBSIMCTL, else PATH) and port 50070 is free (it
talks to localhost:50070 and nothing else, so the daemon listens there); otherwise oltsim's `bbsimctl` console
script from the checkout, run with no option as the tests run it and pointed at the daemon by a ~/.bbsim/config in
the test's HOME, as bbsimctl's users configure it.
"""
from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from test_daemon import listening
from test_oltsimctl import BBSIMCTL, BBSIMCTL_PORT, CTL, CTL_TIMEOUT, REPO, CtlDaemon, ctl, ctl_environment, ok

SHAPE = ("--olt-id", "10", "--pon", "2", "--onu", "16", "--delay", "0", "--adapter", "builtin")
ONUS = 32
SERIAL = "BBSM000a010b"  # OLT 10, PON 1, ONU 11: hex letters in the OLT and ONU bytes
PON_0_PORT = 0x20000000  # PON 0 as an OpenOLT interface id in alarm indications
READY_TIMEOUT = 120.0
OURS = [sys.executable, "-c", "from oltsim.ctl.oltsimctl import run_bbsimctl; run_bbsimctl()"]
USE_REAL = BBSIMCTL is not None and not listening(BBSIMCTL_PORT)


class Replay:
    """The daemon and the client the system tests would run (`bbsimctl ARGS`), with that client's environment."""

    def __init__(self, daemon: CtlDaemon, home: Path):
        self.daemon = daemon
        self.home = home
        self.client = [BBSIMCTL] if USE_REAL else OURS
        self.env = {key: value for key, value in ctl_environment(home).items() if not key.startswith("BBSIMCTL_")}

    def run(self, *arguments: str) -> subprocess.CompletedProcess:
        """`bbsimctl ARGUMENTS` to completion (stdout and stderr apart)."""
        return subprocess.run([*self.client, *arguments], cwd=REPO, env=self.env, capture_output=True, text=True,
                              timeout=CTL_TIMEOUT, check=False)

    def output(self, *arguments: str) -> str:
        """What `bbsimctl ARGUMENTS` printed, which must have exited 0 (the keywords' `rc` check)."""
        result = self.run(*arguments)
        assert result.returncode == 0, (arguments, result.returncode, result.stdout, result.stderr)
        return result.stdout

    def column(self, number: int, serial: str | None = None) -> list[str]:
        """`bbsimctl onu list | awk 'NR>1 {print $N}'`, or with `grep SERIAL` first: column N (1-based)."""
        rows = self.output("onu", "list").splitlines()[1:]
        return [row.split()[number - 1] for row in rows if serial is None or serial in row]

    def wait_onu_state(self, serial: str, state: str, timeout: float = 60.0) -> None:
        """Read `onu list | grep SN | awk '{print $5}'` until it says `state` (bounded)."""
        deadline = time.monotonic() + timeout
        seen = None
        while time.monotonic() < deadline:
            seen = self.column(5, serial)
            if seen == [state]:
                return
            time.sleep(0.2)
        raise AssertionError(f"{serial} is {seen}, not {state}, after {timeout:g} s")


@pytest.fixture(scope="module")
def replay(tmp_path_factory):
    """The daemon with every ONU up (all services DHCP-acked by the built-in adapter) and the client."""
    home = tmp_path_factory.mktemp("home")
    endpoints = {"grpc-v1": f"tcp:{BBSIMCTL_PORT}:interface=127.0.0.1"} if USE_REAL else None
    daemon = CtlDaemon(tmp_path_factory.mktemp("olt"), *SHAPE, endpoints=endpoints)
    try:
        daemon.wait_answering(200)
        (home / ".bbsim").mkdir()
        (home / ".bbsim" / "config").write_text(f"server: {daemon.server}\ngrpc:\n  timeout: 10s\n")
        ready = ok(ctl(daemon, "wait", "--state", "dhcp_ack_received", "--timeout", f"{READY_TIMEOUT:g}", "-q",
                       home=home, timeout=READY_TIMEOUT + CTL_TIMEOUT))
        assert ready == f"{ONUS} of {ONUS} ONUs in dhcp_ack_received\n"
        yield Replay(daemon, home)
    finally:
        daemon.close()


def alarm_events(replay: Replay, count: int, calls, onu: str | None = None, rounds: int = 10) -> list[dict]:
    """The first `count` alarm events (of ONU `onu`) seen by `oltsimctl events` while `calls` (bbsimctl argument
    lists, each checked for its exit status and `Alarm Indication Sent`) are replayed in rounds until it has them:
    the stream may open after the first round."""
    filters = ["--onu", onu] if onu else []
    process = subprocess.Popen([*CTL, "--server", replay.daemon.server, "events", "--type", "alarm", *filters,
                                "--count", str(count), "-o", "json"], cwd=REPO, env=ctl_environment(replay.home),
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        for _ in range(rounds):
            if process.poll() is not None:
                break
            for arguments in calls:
                assert "Alarm Indication Sent" in replay.output(*arguments), arguments
        out, err = process.communicate(timeout=CTL_TIMEOUT)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate(timeout=CTL_TIMEOUT)
    assert (process.returncode, err) == (0, ""), err
    return [json.loads(line) for line in out.splitlines()]


def test_olt_get_answers_as_the_liveness_probe_needs(replay):
    """`bbsimctl olt get` (the chart's liveness probe) exits 0 and shows OLT 10 up and enabled."""
    lines = replay.output("olt", "get").splitlines()
    assert lines[0].split() == ["ID", "SERIALNUMBER", "OPERSTATE", "INTERNALSTATE", "IP", "NNIDHCPTRAPVID"]
    assert lines[1].split()[:4] == ["10", "BBSIM_OLT_10", "up", "enabled"]


def test_onu_list_column_3_is_every_serial_in_lower_case(replay):
    """List ONUs and Get ONUs List: `onu list` exits 0, its column 3 after the header is every serial as the
    tests' data files write them, and column 5 of the ONU's row says enabled."""
    serials = replay.column(3)
    expected = [f"BBSM000a{pon:02x}{onu:02x}" for pon in range(2) for onu in range(1, 17)]
    assert sorted(serials) == sorted(expected)
    assert SERIAL in serials
    assert replay.column(5, SERIAL) == ["enabled"]


def test_service_list_names_the_onus_in_lower_case(replay):
    """List Service: `service list` exits 0 and lists the services of every ONU, the ONU serial in column 1."""
    rows = replay.output("service", "list").splitlines()
    assert rows[0].split()[:4] == ["ONUSN", "UNIID", "INTERNALSTATE", "NAME"]
    assert {row.split()[0] for row in rows[1:]} == set(replay.column(3))


def test_olt_pon_los_raise_and_clear(replay):
    """Raise Olt Alarm / Clear Olt Alarm: `olt alarms raise|clear OLT_PON_LOS 0` print `Alarm Indication Sent`
    and the OLT sends a LOS indication for PON 0, on then off."""
    events = alarm_events(replay, 2, [("olt", "alarms", "raise", "OLT_PON_LOS", "0"),
                                      ("olt", "alarms", "clear", "OLT_PON_LOS", "0")])
    assert [event["details"]["kind"] for event in events] == ["los_ind", "los_ind"]
    assert {event["details"]["intf_id"] for event in events} == {str(PON_0_PORT)}
    assert sorted(event["details"]["status"] for event in events) == ["off", "on"]


def test_onu_los_raise_and_clear(replay):
    """Raise Onu Alarm / Clear Onu Alarm: `onu alarms raise|clear ONU_ALARM_LOS SN` (lower-case serial) print
    `Alarm Indication Sent` and the OLT sends that ONU's LOS alarm, on then off."""
    events = alarm_events(replay, 2, [("onu", "alarms", "raise", "ONU_ALARM_LOS", SERIAL),
                                      ("onu", "alarms", "clear", "ONU_ALARM_LOS", SERIAL)], onu=SERIAL)
    assert {(event["onu_serial"], event["pon_id"], event["onu_id"]) for event in events} == {(SERIAL, 1, 11)}
    assert sorted(event["details"]["los_status"] for event in events) == ["off", "on"]


def test_set_wrong_mds_counter(replay):
    """Set Wrong MDS Counter ONU: `onu invalidate_mds SN` exits 0 and says `MDS counter of ONU` and `, set to`;
    the counter really changed (the next call finds the value the first one set)."""
    first = replay.output("onu", "invalidate_mds", SERIAL)
    assert "MDS counter of ONU" in first and ", set to" in first
    was, now = map(int, re.search(r"was (\d+), set to (\d+)", first).groups())
    assert was != now
    second = replay.output("onu", "invalidate_mds", SERIAL)
    assert int(re.search(r"was (\d+), set to", second).group(1)) == now


def test_power_off_and_on_onu(replay):
    """Power Off ONU / Power On ONU: `onu shutdown SN` and `onu poweron SN` exit 0 and say `successfully`; column
    5 of `onu list` follows (disabled, then enabled again once the built-in adapter brought the ONU back)."""
    assert "successfully" in replay.output("onu", "shutdown", SERIAL)
    replay.wait_onu_state(SERIAL, "disabled")
    assert "successfully" in replay.output("onu", "poweron", SERIAL)
    replay.wait_onu_state(SERIAL, "enabled")


def test_an_unknown_onu_exits_1_without_the_words(replay):
    """A serial the OLT does not have: exit 1, nothing on stdout (so no `successfully`), `not found` on stderr."""
    result = replay.run("onu", "shutdown", "BBSM000a0f0f")
    assert result.returncode == 1 and result.stdout == "", (result.stdout, result.stderr)
    assert "not found" in result.stderr
