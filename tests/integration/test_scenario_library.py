"""The scenario library (docs/scenarios/*.yaml) end to end: each file is sent to the real daemon, started with the
built-in adapter on a lab numbering (OLT id 10, 2 PONs x 16 ONUs) on loopback ports, through POST /v1/scenario;
GET /v1/scenario is polled until it is done, and the OLT is then checked to be in the state the file's comment
says it leaves (every ONU enabled with its services through EAPOL and DHCP, PONs and OLT up, no alarm active), with
what the scenario did on the way (the ONUs it cycled, the alarm it raised, the reboot, the reconnection)."""
from __future__ import annotations

import http.client
import json
import time

import grpc
from voltha_protos import openolt_pb2, openolt_pb2_grpc

from test_builtin_adapter_daemon import DHCP_OK, EAP_OK, services, wait_all_up
from test_daemon import REPO, daemon  # noqa: F401 - the fixture

LIBRARY = REPO / "docs" / "scenarios"
LAB = ("--adapter", "builtin", "--olt-id", "10", "--pon", "2", "--onu", "16", "--delay", "20",
       "--reboot-delay", "2")
ONUS = 32
POLL = 0.1
RUN_TIMEOUT = 90.0  # the longest file plans about 30 s; a loaded machine runs slower


def request(process, method: str, path: str, body: bytes | None = None) -> tuple[int, dict]:
    """One v1 REST request: status and JSON body."""
    connection = http.client.HTTPConnection("127.0.0.1", process.ports["rest-v1"], timeout=10)
    try:
        headers = {"Content-Type": "application/yaml"} if body is not None else {}
        connection.request(method, path, body=body, headers=headers)
        response = connection.getresponse()
        return response.status, json.loads(response.read() or b"null")
    finally:
        connection.close()


def start_lab(daemon) -> object:
    """The lab daemon, serving, every ONU up; checks the lab numbering took."""
    process = daemon(*LAB)
    olt = process.wait_serving()
    assert olt["ID"] == 10, olt
    wait_all_up(process, ONUS)
    return process


def run_file(process, stem: str, text: str | None = None, watch=None) -> dict:
    """POST docs/scenarios/<stem>.yaml (or `text`, a rewrite of it), then poll GET /v1/scenario until it is no
    longer running (bounded), calling `watch(status)` on each reading while it runs; returns the last status,
    checked to be `done` with every planned step started and ended."""
    text = text if text is not None else (LIBRARY / f"{stem}.yaml").read_text()
    status, body = request(process, "POST", "/v1/scenario", text.encode())
    assert status == 200, body
    assert body["name"] == stem and body["state"] in ("running", "done"), body
    deadline = time.monotonic() + RUN_TIMEOUT
    while body["state"] == "running":
        if time.monotonic() > deadline:
            raise AssertionError(f"{stem} still running after {RUN_TIMEOUT:g} s: {body}\n{process.log[-4000:]}")
        if process.process.poll() is not None:
            raise AssertionError(f"oltsim exited with {process.process.returncode}:\n{process.log[-4000:]}")
        if watch is not None:
            watch(body)
        time.sleep(POLL)
        status, body = request(process, "GET", "/v1/scenario")
        assert status == 200, body
    assert body["state"] == "done" and not body.get("error"), body
    total = body.get("steps_total", 0)
    assert total > 0 and body.get("steps_started", 0) == total and body.get("steps_ended", 0) == total, body
    return body


def assert_left_up(process) -> dict:
    """What every library file leaves: the OLT, its NNI and PONs up and enabled, every ONU enabled with every
    service through EAPOL and DHCP (waited for, bounded: the last ONUs powered on come up after the end), and no
    alarm active. Returns GET /v1/olt/alarms."""
    wait_all_up(process, ONUS)
    status, onus = request(process, "GET", "/v1/olt/onus")
    assert status == 200 and all(onu["InternalState"] == "enabled" for onu in onus["items"]), onus
    status, olt = request(process, "GET", "/v1/olt")
    assert status == 200 and (olt["OperState"], olt["InternalState"]) == ("up", "enabled"), olt
    assert all(port["OperState"] == "up" for port in olt["PONPorts"] + olt["NNIPorts"]), olt
    assert all(port["InternalState"] == "enabled" for port in olt["PONPorts"]), olt
    status, alarms = request(process, "GET", "/v1/olt/alarms")
    assert status == 200 and alarms.get("active", []) == [], alarms
    assert "Traceback" not in process.log, process.log
    return alarms


class Completions:
    """Reads GET /v1/olt/onus on each `poll()` and records the order in which ONUs seen with a service not done
    (EAPOL success and DHCP ack) get every service done again. The adapter's per-ONU log lines are summarised in
    bursts, so the order is read from the API."""

    def __init__(self, process):
        self.process = process
        self.pending: set[str] = set()
        self.order: list[str] = []

    def poll(self) -> None:
        for serial, states in services(self.process).items():
            done = bool(states) and all(state == (EAP_OK, DHCP_OK) for state in states)
            if not done:
                self.pending.add(serial)
            elif serial in self.pending:
                self.pending.discard(serial)
                self.order.append(serial)


def wait_logged(process, line: str, what: str, timeout: float = 30.0) -> None:
    """Wait (bounded) until the daemon's log has `line`."""
    deadline = time.monotonic() + timeout
    while line not in process.log:
        assert time.monotonic() < deadline, f"{what} within {timeout:g} s (no {line!r}):\n{process.log[-4000:]}"
        time.sleep(POLL)


def test_onu_power_waves_cycle_a_quarter_of_pon_0_four_times_and_bring_them_all_back(daemon):
    """onu-power-waves: four waves of 4 ONUs (a quarter of PON 0's 16) each lose power (a dying gasp each, on the
    ONUs the running step names) and come back; no ONU of PON 1 is touched, nothing is refused, and every ONU is up
    again at the end with no alarm active."""
    process = start_lab(daemon)
    waves: dict[float, list[str]] = {}

    def watch(status):
        for step in status.get("current", []):
            waves[step["started_at"]] = step.get("targets", [])

    done = run_file(process, "onu-power-waves", watch=watch)
    assert done["steps_total"] == 4 and done.get("refusals", 0) == 0, done
    assert len(waves) == 4 and all(len(targets) == 4 for targets in waves.values()), waves
    alarms = assert_left_up(process)
    gasps = [record for record in alarms["history"] if record["type"] == "DYING_GASP" and record["status"] == "on"]
    assert {record["pon_id"] for record in gasps} == {0}, gasps
    assert sorted(record["onu_serial"] for record in gasps) == sorted(s for t in waves.values() for s in t), gasps


def test_pon_los_raises_los_on_pon_0_for_its_duration_then_clears_it(daemon):
    """pon-los-30s (its 30 s shortened to 3 s here): OLT_PON_LOS is active on PON 0 while the step runs, then cleared;
    the alarm takes no ONU down (as in BBSim), so no ONU is brought up again."""
    process = start_lab(daemon)
    text = (LIBRARY / "pon-los-30s.yaml").read_text()
    assert "duration: 30s" in text
    seen = []

    def watch(status):
        if status.get("current"):
            _, alarms = request(process, "GET", "/v1/olt/alarms")
            seen.extend((a["kind"], a["type"], a["port_id"]) for a in alarms.get("active", []))

    run_file(process, "pon-los-30s", text.replace("duration: 30s", "duration: 3s"), watch)
    assert ("pon", "OLT_PON_LOS", 0) in seen and {kind for kind, _, _ in seen} == {"pon"}, seen
    alarms = assert_left_up(process)
    los = [(r["status"], r["port_id"]) for r in alarms["history"] if r["type"] == "OLT_PON_LOS"]
    assert los == [("on", 0), ("off", 0)], alarms["history"]
    assert {record["kind"] for record in alarms["history"]} == {"pon"}, alarms["history"]


def test_olt_reboot_during_bringup_leaves_the_olt_up_and_every_onu_brought_up_again(daemon):
    """olt-reboot-during-bringup: the ONUs are cut and powered on, the OLT reboots while they come up; once back
    (--reboot-delay 2) the adapter connects a second time and every ONU is up again, no alarm active."""
    process = start_lab(daemon)
    run_file(process, "olt-reboot-during-bringup")
    serial = process.rest_get("/v1/olt")[1]["SerialNumber"]
    wait_logged(process, f"builtin-adapter-connected serial={serial} pons=2 connection=2",
                "the adapter did not connect again after the reboot")
    assert_left_up(process)
    assert f"builtin-adapter-disconnected serial={serial} status=UNAVAILABLE" in process.log, process.log
    assert process.log.count(f"builtin-adapter-all-ready serial={serial} onus={ONUS}") >= 2, process.log


def test_flaky_omci_slows_a_tenth_of_the_onus_then_lets_every_onu_come_up(daemon):
    """flaky-omci: while its knobs hold, the step status names 4 ONUs (10 % of 32, rounded up) for the delay and 4
    for the rate; every ONU is power-cycled, the others are up again before any of those, which finish once the
    knobs are lifted; at the end every ONU is up, no alarm active."""
    process = start_lab(daemon)
    targets: dict[str, set] = {}
    completions = Completions(process)

    def watch(status):
        for step in status.get("current", []):
            targets.setdefault(step["step"], set()).update(step.get("targets", []))
        completions.poll()

    run_file(process, "flaky-omci", watch=watch)
    assert len(targets.get("slow-omci", ())) == 4 and len(targets.get("lossy-omci", ())) == 4, targets
    flaky = targets["slow-omci"] | targets["lossy-omci"]
    deadline = time.monotonic() + 30
    while len(completions.order) < ONUS or completions.pending:
        assert time.monotonic() < deadline, f"ONUs not up again: {sorted(completions.pending)}"
        time.sleep(POLL)
        completions.poll()
    assert_left_up(process)
    assert sorted(completions.order) == sorted(services(process)), completions.order  # each ONU cycled once
    last = completions.order[-len(flaky):]
    assert set(last) == flaky, f"the flaky ONUs {sorted(flaky)} were not the last up: {completions.order}"


def test_openolt_restart_under_load_leaves_the_server_serving_and_every_onu_up(daemon):
    """openolt-restart-under-load: the OpenOLT server restarts while the ONUs come back from a power cut; the
    adapter connects again and reconciles, every ONU ends up, no alarm active, and GetDeviceInfo is served."""
    process = start_lab(daemon)
    run_file(process, "openolt-restart-under-load")
    serial = process.rest_get("/v1/olt")[1]["SerialNumber"]
    wait_logged(process, f"builtin-adapter-connected serial={serial} pons=2 connection=2",
                "the adapter did not connect again after the restart")
    assert_left_up(process)
    with grpc.insecure_channel(f"127.0.0.1:{process.ports['openolt']}") as channel:
        info = openolt_pb2_grpc.OpenoltStub(channel).GetDeviceInfo(openolt_pb2.Empty(), timeout=10)
    assert info.device_serial_number == serial
    assert all(states == [(EAP_OK, DHCP_OK)] * 4 for states in services(process).values())
