"""Scenarios in the real daemon (`twistd -n oltsim --adapter builtin` on loopback ports, docs/scenarios.md): a
`--scenario` file plays once the OLT is up and ends, read over GET /v1/scenario; one POSTed over REST reports each
step's start and end on the SSE stream and leaves the ONU it powered off up again; `oltsimctl scenario run` watches
one to its end over gRPC; a bad file keeps the daemon from starting, with one line naming the file and the step."""
from __future__ import annotations

import http.client
import json
import subprocess
import sys
import time

from test_daemon import REPO, assert_refused, daemon, environment  # noqa: F401 - the fixture

WAIT = 60.0
POLL = 0.2
SN = "BBSM00000001"
SCENARIO_EVENTS = "scenario-started,scenario-step-started,scenario-step-ended,scenario-ended"

#: An ONU off for a second, then the NNI's LOS for half a second: a few seconds in all.
SCENARIO = f"""
name: {{name}}
steps:
  - name: blink
    at: 0.5s
    action: onu-power-off
    targets: {{{{onu: {SN}}}}}
    duration: 1s
  - name: nni-dark
    after: blink
    action: nni-los
    targets: {{{{nni: 0}}}}
    duration: 0.5s
"""


def wait_for(read, check, what: str, process):
    """Poll `read()` until `check(value)` (bounded by WAIT); returns the value."""
    deadline = time.monotonic() + WAIT
    value = None
    while time.monotonic() < deadline:
        if process.process.poll() is not None:
            raise AssertionError(f"oltsim exited with {process.process.returncode}:\n{process.log}")
        value = read()
        if check(value):
            return value
        time.sleep(POLL)
    raise AssertionError(f"{what} not seen within {WAIT:g} s (last: {value})\n{process.log[-4000:]}")


def scenario(process) -> dict:
    status, body = process.rest_get("/v1/scenario")
    assert status == 200, body
    return body


def post(process, text: str) -> tuple[int, dict]:
    connection = http.client.HTTPConnection("127.0.0.1", process.ports["rest-v1"], timeout=5)
    try:
        connection.request("POST", "/v1/scenario", body=text.encode(), headers={"Content-Type": "application/yaml"})
        response = connection.getresponse()
        return response.status, json.loads(response.read())
    finally:
        connection.close()


class Events:
    """The SSE stream of the scenario events (GET /v1/events?types=...), read line by line."""

    def __init__(self, process):
        self.connection = http.client.HTTPConnection("127.0.0.1", process.ports["rest-v1"], timeout=WAIT)
        self.connection.request("GET", f"/v1/events?types={SCENARIO_EVENTS}")
        self.response = self.connection.getresponse()
        assert self.response.status == 200
        assert self.response.readline().startswith(b": oltsim events")  # subscribed: nothing later is missed

    def until_ended(self) -> list[dict]:
        """The records up to and including scenario-ended."""
        records = []
        while not records or records[-1]["type"] != "scenario-ended":
            line = self.response.readline()
            assert line, f"the stream ended after {records}"
            if line.startswith(b"data: "):
                records.append(json.loads(line[6:]))
        return records

    def close(self) -> None:
        self.connection.close()


def test_scenario_file_plays_at_start_and_a_posted_one_reports_its_steps(daemon, tmp_path):
    """--scenario plays once the built-in adapter has the OLT up and ends done; one POSTed over REST afterwards runs
    (a second POST meanwhile is 409), its steps start and end on the SSE stream in order with their targets, and
    the ONU it powered off is enabled again afterwards."""
    path = tmp_path / "at-start.yaml"
    path.write_text(SCENARIO.format(name="at-start"))
    process = daemon("--adapter", "builtin", "--pon", "1", "--onu", "2", "--scenario", str(path))
    process.wait_serving()
    done = wait_for(lambda: scenario(process), lambda s: s["state"] == "done", "the --scenario file done", process)
    assert (done["name"], done["source"], done["steps_total"], done["steps_ended"]) == ("at-start", str(path), 2, 2)
    assert done["current"] == [] and done["error"] == ""

    events = Events(process)
    try:
        code, started = post(process, SCENARIO.format(name="posted"))
        assert (code, started["state"], started["source"]) == (200, "running", "api")
        # One at a time: a second POST while it runs is refused.
        code, refused = post(process, SCENARIO.format(name="again"))
        assert code == 409 and "posted" in refused["message"]
        records = events.until_ended()
    finally:
        events.close()
    seen = [(r["type"], r["details"].get("step", ""), r["details"].get("targets", "")) for r in records]
    assert seen == [("scenario-started", "", ""),
                    ("scenario-step-started", "blink", SN), ("scenario-step-ended", "blink", SN),
                    ("scenario-step-started", "nni-dark", "nni 0"), ("scenario-step-ended", "nni-dark", "nni 0"),
                    ("scenario-ended", "", "")]
    assert all(r["details"]["scenario"] == "posted" for r in records)
    assert records[-1]["details"]["outcome"] == "done"
    assert scenario(process)["state"] == "done"

    def onu_state():
        return process.rest_get(f"/v1/olt/onus/{SN}")[1]["InternalState"]
    wait_for(onu_state, lambda state: state == "enabled", f"{SN} enabled again", process)


def test_oltsimctl_scenario_run_watches_it_to_the_end(daemon, tmp_path):
    """`oltsimctl scenario run FILE` over the v1 gRPC port: exit 0 once the scenario is done, its status printed;
    `scenario status --json` then shows it done."""
    path = tmp_path / "ctl.yaml"
    path.write_text(SCENARIO.format(name="from-ctl"))
    process = daemon("--adapter", "builtin", "--pon", "1", "--onu", "2")
    process.wait_serving()
    server = ["--server", f"127.0.0.1:{process.ports['grpc-v1']}"]
    ctl = [sys.executable, "-m", "oltsim.ctl.oltsimctl", *server]
    result = subprocess.run([*ctl, "scenario", "run", str(path), "--interval", "0.2"], cwd=REPO,
                            env=environment(), capture_output=True, text=True, timeout=WAIT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.splitlines()[1].split()[:2] == ["from-ctl", "done"]
    result = subprocess.run([*ctl, "scenario", "status", "--json"], cwd=REPO, env=environment(),
                            capture_output=True, text=True, timeout=WAIT)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["state"] == "done"


def test_a_bad_scenario_file_keeps_the_daemon_from_starting(tmp_path):
    """--scenario with a file that does not load exits 2 with one line naming the file, the step and the problem,
    before any port is bound."""
    path = tmp_path / "bad.yaml"
    path.write_text(SCENARIO.format(name="bad").replace("action: nni-los", "action: nni-lost"))
    result = assert_refused(tmp_path, ("--scenario", str(path)), ("--scenario", str(path), "step 2 'nni-dark'",
                                                                  "nni-lost"))
    assert result.returncode == 2
