"""Scenarios run from outside, in memory on a fake clock (docs/scenarios.md): REST POST/GET/DELETE /v1/scenario and
gRPC oltsim.v1.Oltsim Run/Get/StopScenario over one runner, and `oltsimctl scenario run|status|stop`."""

import io
import json

import grpc
import pytest
from treq.testing import StubTreq

from conftest import BASE_URL, Sim, grpc_call, grpc_error
from oltsim._proto import oltsim_pb2, oltsim_pb2_grpc
from oltsim.api import translate
from oltsim.api.v1.usecases_v1 import MAX_SCENARIO_BYTES
from oltsim.api.v1.grpc_v1 import OltsimServicer
from oltsim.api.v1.rest_v1 import V1Rest
from oltsim.ctl import subcommands as commands
from oltsim.ctl.oltsimctl import build_parser
from oltsim.ctl.connection import CtlError
from oltsim.serving.onloop import on_loop
from oltsim.scenario.runner import ScenarioRunner

SN = "BBSM00000001"

#: One ONU off from t=1 s for 5 s, then PON 1's LOS for 2 s: the scenario ends at t=8 s.
SCENARIO = f"""
name: cut
seed: 3
steps:
  - name: power-cut
    at: 1s
    action: onu-power-off
    targets: {{onu: {SN}}}
    duration: 5s
  - name: pon-dark
    after: power-cut
    action: pon-los
    targets: {{pon: 1}}
    duration: 2s
"""


def scenario_sim():
    """A 2x2 OLT brought up, with a scenario runner on its fake clock, as the daemon wires one."""
    sim = Sim()
    sim.bring_up()
    sim.commands.scenarios = ScenarioRunner(sim.olt, sim.commands, clock=sim.clock)
    sim.stub = StubTreq(V1Rest(sim.commands).resource())
    return sim


def rest(sim, method: str, body: bytes | None = None, content_type: bytes = b"application/yaml"):
    """(status, JSON body) of one request to /v1/scenario."""
    out = []
    headers = {b"Content-Type": [content_type]} if body is not None else None
    d = sim.stub.request(method, BASE_URL + "/v1/scenario", data=body, headers=headers)
    d.addCallback(lambda r: sim.stub.content(r).addCallback(lambda b: out.append((r.code, json.loads(b)))))
    d.addErrback(out.append)
    sim.stub.flush()
    assert out and isinstance(out[0], tuple), out
    return out[0]


def servicer(sim):
    return on_loop(OltsimServicer(commands=sim.commands), oltsim_pb2_grpc.OltsimServicer)


# ---- REST ---------------------------------------------------------------------------------------------------


def test_rest_idle_before_any_scenario():
    """GET /v1/scenario before any run: state idle, nothing current."""
    code, body = rest(scenario_sim(), "GET")
    assert code == 200
    assert (body["state"], body["name"], body["current"], body["steps_total"]) == ("idle", "", [], 0)


def test_rest_run_shows_steps_and_ends_done():
    """POST starts the file's scenario; GET shows each step while it runs, with its targets, and the end."""
    sim = scenario_sim()
    code, body = rest(sim, "POST", SCENARIO.encode())
    assert code == 200
    assert (body["state"], body["name"], body["seed"], body["source"]) == ("running", "cut", "3", "api")
    assert (body["steps_total"], body["steps_started"], body["current"]) == (2, 0, [])
    sim.clock.advance(1)
    body = rest(sim, "GET")[1]
    assert [(s["step"], s["action"], s["targets"]) for s in body["current"]] == [
        ("power-cut", "onu-power-off", [SN])]
    assert body["current"][0]["ends_at"] == body["current"][0]["started_at"] + 5
    assert sim.olt.onu_by_serial(SN).state == "disabled"
    sim.clock.advance(5)
    body = rest(sim, "GET")[1]
    assert [s["step"] for s in body["current"]] == ["pon-dark"]
    assert (body["steps_started"], body["steps_ended"]) == (2, 1)
    sim.clock.advance(2)
    body = rest(sim, "GET")[1]
    assert (body["state"], body["steps_ended"], body["current"], body["error"]) == ("done", 2, [], "")


def test_rest_second_run_refused_while_one_runs():
    """One scenario at a time: a POST while one runs is 409 FAILED_PRECONDITION, and the first one goes on."""
    sim = scenario_sim()
    rest(sim, "POST", SCENARIO.encode())
    code, body = rest(sim, "POST", SCENARIO.encode())
    assert code == 409
    assert body["code"] == grpc.StatusCode.FAILED_PRECONDITION.value[0]
    assert "running" in body["message"]
    assert rest(sim, "GET")[1]["state"] == "running"


def test_rest_delete_stops_and_undoes():
    """DELETE stops the running scenario: state stopped, the ONU it powered off is powered on again; a second
    DELETE changes nothing."""
    sim = scenario_sim()
    rest(sim, "POST", SCENARIO.encode())
    sim.clock.advance(1)
    assert sim.olt.onu_by_serial(SN).state == "disabled"
    code, body = rest(sim, "DELETE")
    assert (code, body["state"], body["current"]) == (200, "stopped", [])
    assert sim.olt.onu_by_serial(SN).state != "disabled"
    assert rest(sim, "DELETE")[1]["state"] == "stopped"
    sim.clock.advance(10)
    assert rest(sim, "GET")[1]["steps_started"] == 1  # nothing started after the stop


def test_rest_schema_error_names_the_step():
    """A file that does not load is 400 with one line naming the step and the problem; nothing starts."""
    sim = scenario_sim()
    bad = SCENARIO.replace("action: pon-los", "action: pon-lost")
    code, body = rest(sim, "POST", bad.encode())
    assert code == 400
    assert "step 2 'pon-dark'" in body["message"] and "pon-lost" in body["message"]
    assert "\n" not in body["message"]
    assert rest(sim, "GET")[1]["state"] == "idle"


def test_rest_unknown_device_is_refused():
    """A file naming a PON the OLT does not have is 400, naming the step."""
    code, body = rest(scenario_sim(), "POST", SCENARIO.replace("{pon: 1}", "{pon: 7}").encode())
    assert code == 400
    assert "step 2 'pon-dark'" in body["message"] and "PON 7" in body["message"]


@pytest.mark.parametrize("body,content_type,words", [
    (b"", b"application/yaml", "empty"),
    (b"  \n", b"text/plain", "empty"),
    (b"#" * (MAX_SCENARIO_BYTES + 1), b"text/plain", "larger than"),
    (b"\xff\xfe", b"text/plain", "UTF-8"),
    (b"--b\r\n\r\n--b--\r\n", b"multipart/form-data; boundary=b", "not a form"),
])
def test_rest_bad_bodies_are_400(body, content_type, words):
    """An empty, oversized, non-UTF-8 or form body is 400 with a message saying which."""
    code, answer = rest(scenario_sim(), "POST", body, content_type)
    assert code == 400
    assert words in answer["message"]


def test_rest_curl_default_content_type_is_taken():
    """`curl --data-binary @FILE` sends application/x-www-form-urlencoded: the body is still the scenario."""
    code, body = rest(scenario_sim(), "POST", SCENARIO.encode(), b"application/x-www-form-urlencoded")
    assert (code, body["state"]) == (200, "running")


def test_rest_unknown_parameter_is_400():
    """GET and DELETE take no parameters."""
    sim = scenario_sim()
    out = []
    sim.stub.request("GET", BASE_URL + "/v1/scenario?verbose=1").addCallback(out.append)
    sim.stub.flush()
    assert out[0].code == 400


def test_without_runner_the_calls_are_refused():
    """An OLT without a scenario runner answers 409 (REST) and FAILED_PRECONDITION (gRPC), nothing crashes."""
    sim = Sim()
    sim.stub = StubTreq(V1Rest(sim.commands).resource())
    assert rest(sim, "GET")[0] == 409
    error = grpc_error(servicer(sim), "RunScenario", oltsim_pb2.ScenarioRequest(text=SCENARIO))
    assert error.code is grpc.StatusCode.FAILED_PRECONDITION


# ---- gRPC ---------------------------------------------------------------------------------------------------


def test_grpc_run_get_stop_match_rest():
    """RunScenario, GetScenario and StopScenario answer the message REST renders; the source is the caller's."""
    sim = scenario_sim()
    started = grpc_call(servicer(sim), "RunScenario", oltsim_pb2.ScenarioRequest(text=SCENARIO,
                                                                                 source="lab/cut.yaml"))
    assert (started.state, started.source, started.steps_total) == ("running", "lab/cut.yaml", 2)
    sim.clock.advance(1)
    got = grpc_call(servicer(sim), "GetScenario", oltsim_pb2.Empty())
    assert translate.to_json_dict(got) == rest(sim, "GET")[1]
    assert [(s.step, list(s.targets)) for s in got.current] == [("power-cut", [SN])]
    stopped = grpc_call(servicer(sim), "StopScenario", oltsim_pb2.Empty())
    assert stopped.state == "stopped"


def test_grpc_refusals():
    """A schema error is INVALID_ARGUMENT naming the step, a second run FAILED_PRECONDITION, an empty text
    INVALID_ARGUMENT."""
    sim = scenario_sim()
    error = grpc_error(servicer(sim), "RunScenario", oltsim_pb2.ScenarioRequest(
        text=SCENARIO.replace("duration: 2s", "duration: soon")))
    assert error.code is grpc.StatusCode.INVALID_ARGUMENT and "step 2 'pon-dark'" in error.details
    assert grpc_error(servicer(sim), "RunScenario", oltsim_pb2.ScenarioRequest()).code \
        is grpc.StatusCode.INVALID_ARGUMENT
    grpc_call(servicer(sim), "RunScenario", oltsim_pb2.ScenarioRequest(text=SCENARIO))
    error = grpc_error(servicer(sim), "RunScenario", oltsim_pb2.ScenarioRequest(text=SCENARIO))
    assert error.code is grpc.StatusCode.FAILED_PRECONDITION


# ---- oltsimctl ----------------------------------------------------------------------------------------------


class FakeConnection:
    """Answers the scenario calls from a Sim's V1Commands, as the daemon's OltsimServicer does."""

    def __init__(self, sim):
        self.sim = sim
        self.calls = []

    def call(self, method, request, service="bbsim", timeout=None):
        assert service == "oltsim"
        self.calls.append(method)
        try:
            return getattr(self.sim.commands, method)(request)
        except Exception as exc:  # the one-line error the real connection makes of a refusal
            raise CtlError(f"{translate.status_for(exc)[0].name}: {exc}") from None


def ctl(sim, *argv, monkeypatch=None, on_sleep=None):
    """(exit code, stdout, stderr) of one `oltsimctl scenario ...`; each pause of `run` advances the fake clock
    by its interval (or calls `on_sleep`)."""
    if monkeypatch is not None:
        monkeypatch.setattr("time.sleep", on_sleep or sim.clock.advance)
    args = build_parser().parse_args(["scenario", *argv])
    out, err = io.StringIO(), io.StringIO()
    conn = FakeConnection(sim)
    if args.handler is commands.scenario_run:
        code = args.handler(conn, args, out, err)
    else:
        code = args.handler(conn, args, out)
    return code, out.getvalue(), err.getvalue()


@pytest.fixture
def scenario_file(tmp_path):
    path = tmp_path / "cut.yaml"
    path.write_text(SCENARIO)
    return path


def test_ctl_run_watches_until_done(scenario_file, monkeypatch):
    """`scenario run FILE` sends the file, looks until the scenario ends, prints its status and exits 0."""
    sim = scenario_sim()
    code, out, err = ctl(sim, "run", str(scenario_file), "--interval", "1", monkeypatch=monkeypatch)
    assert code == 0, err
    header, row = out.splitlines()[:2]
    assert header.split() == ["NAME", "STATE", "SOURCE", "SEED", "STARTED", "ELAPSED", "STEPS", "REFUSALS"]
    assert row.split()[:4] == ["cut", "done", str(scenario_file), "3"]
    assert row.split()[-2:] == ["2/2", "0"]
    assert sim.commands.scenarios.status()["state"] == "done"


def test_ctl_run_stopped_exits_1(scenario_file, monkeypatch):
    """A scenario stopped while `run` watches it ends the command with exit 1 and a line saying so."""
    sim = scenario_sim()
    code, out, err = ctl(sim, "run", str(scenario_file), monkeypatch=monkeypatch,
                         on_sleep=lambda _: sim.commands.scenarios.stop())
    assert code == 1
    assert "scenario cut stopped" in err


def test_ctl_run_ctrl_c_leaves_it_running(scenario_file, monkeypatch):
    """Ctrl-C while watching asks nothing: the scenario goes on, the command says how to stop it (exit 130)."""
    sim = scenario_sim()

    def interrupt(_):
        raise KeyboardInterrupt
    code, out, err = ctl(sim, "run", str(scenario_file), monkeypatch=monkeypatch, on_sleep=interrupt)
    assert code == 130
    assert "oltsimctl scenario stop" in err
    assert sim.commands.scenarios.status()["state"] == "running"


def test_ctl_run_detach_returns_at_once(scenario_file):
    """`--detach` prints the status of the scenario just started (JSON with --json) and looks no further."""
    sim = scenario_sim()
    code, out, err = ctl(sim, "run", str(scenario_file), "--detach", "--json")
    assert code == 0
    assert json.loads(out)["state"] == "running"
    assert sim.commands.scenarios.status()["state"] == "running"


def test_ctl_run_refusals(scenario_file, tmp_path):
    """A file that cannot be read is a usage error (2) before any call; a refused one exits 1 with the server's
    message."""
    sim = scenario_sim()
    with pytest.raises(CtlError) as info:
        ctl(sim, "run", str(tmp_path / "missing.yaml"))
    assert info.value.code == 2
    bad = tmp_path / "bad.yaml"
    bad.write_text(SCENARIO.replace("pon-los", "pon-lost"))
    with pytest.raises(CtlError) as info:
        ctl(sim, "run", str(bad))
    assert info.value.code == 1 and "INVALID_ARGUMENT" in str(info.value) and "step 2" in str(info.value)


def test_ctl_status_table_and_json(scenario_file):
    """`scenario status` shows the scenario and its current steps; `--json` prints GET /v1/scenario's shape."""
    sim = scenario_sim()
    ctl(sim, "run", str(scenario_file), "--detach")
    sim.clock.advance(1)
    code, out, _ = ctl(sim, "status")
    lines = out.splitlines()
    assert code == 0
    assert lines[1].split()[:2] == ["cut", "running"]
    assert lines[3].split() == ["STEP", "ACTION", "TARGETS", "STARTED", "ENDS"]
    assert lines[4].split()[:3] == ["power-cut", "onu-power-off", SN]
    code, out, _ = ctl(sim, "status", "--json")
    assert json.loads(out) == rest(sim, "GET")[1]


def test_ctl_stop(scenario_file):
    """`scenario stop` stops the running scenario and shows it stopped."""
    sim = scenario_sim()
    ctl(sim, "run", str(scenario_file), "--detach")
    code, out, _ = ctl(sim, "stop")
    assert code == 0
    assert out.splitlines()[1].split()[:2] == ["cut", "stopped"]


def test_ctl_run_bar_moves_with_time_on_a_0x0_terminal(monkeypatch, tmp_path):
    """`scenario run` of pon-los-30s (one 30 s step) on a terminal that reports its size as 0x0
    (a fresh pseudo-terminal) draws its bar, and the bar fills as the step's time passes (0/1 steps all along),
    full once the step has ended; scenario_progress counts the running step's elapsed part of its duration."""
    import os
    import pty
    import re
    import select
    from pathlib import Path

    text = (Path(__file__).resolve().parents[2] / "docs" / "scenarios" / "pon-los-30s.yaml").read_text()
    sim = scenario_sim()
    monkeypatch.setattr("time.sleep", sim.clock.advance)
    path = tmp_path / "pon-los-30s.yaml"
    path.write_text(text)
    controller, terminal = pty.openpty()
    try:
        assert os.get_terminal_size(terminal) == (0, 0)
        err = os.fdopen(terminal, "w", encoding="utf-8", closefd=False)
        monkeypatch.setattr("sys.stderr", err)  # tqdm sizes itself from the screen for sys.stderr only
        args = build_parser().parse_args(["scenario", "run", str(path), "--interval", "5"])
        code = commands.scenario_run(FakeConnection(sim), args, io.StringIO(), err)
        err.flush()
        drawn = b""
        while select.select([controller], [], [], 0.2)[0]:
            drawn += os.read(controller, 65536)
    finally:
        os.close(terminal)
        os.close(controller)
    assert code == 0
    frames = re.findall(r"scenario pon-los-30s: (\d)/1 steps \|([^|]*)\|", drawn.decode())
    assert frames, drawn

    def fill(bar):
        return len(bar.rstrip(" ")) / len(bar)
    running = [fill(bar) for ended, bar in frames if ended == "0"]
    # The fake clock starts the step at the first look after 1 s (5 s): then a sixth of 30 s at each look.
    assert running == sorted(running) and len({f for f in running if 0 < f < 1}) >= 4, frames
    assert frames[-1][0] == "1" and fill(frames[-1][1]) == 1


def test_scenario_progress_counts_time_within_running_steps():
    """Steps ended, plus each running step's part of its known duration (a step without a known end adds
    nothing), on the daemon's clock, at most steps_total."""
    status = oltsim_pb2.ScenarioStatus(steps_total=3, steps_ended=1, started_at=100.0, elapsed=25.0, current=[
        oltsim_pb2.ScenarioStep(step="a", started_at=115.0, ends_at=135.0),
        oltsim_pb2.ScenarioStep(step="b", started_at=110.0, ends_at=0.0)])
    assert commands.scenario_progress(status) == 1.5
    status.elapsed = 90.0
    assert commands.scenario_progress(status) == 2.0
    status.steps_ended = 3
    assert commands.scenario_progress(status) == 3.0
