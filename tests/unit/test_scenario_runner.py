"""The scenario runner on an in-memory OLT (id 10, 2 PONs x 16 ONUs, a lab's numbering) on a fake clock: targets
and events the same every run, each action and its undo, after: chains, repeats, stop, close, one scenario at a
time, and the scenario events on the event bus and Kafka."""

import json

import pytest
from twisted.logger import capturedLogs

from conftest import Sim
from oltsim.api.v1.usecases_v1 import V1Commands
from oltsim.api.eventbus import to_record
from oltsim.bbsimevents import BbsimEventPublisher
from oltsim.model.errors import FailedPrecondition, InvalidArgument
from oltsim.model.events import ScenarioEvent
from oltsim.scenario import actions
from oltsim.scenario.runner import ScenarioRunner

ONU = "BBSM000a0103"  # OLT 10, PON 1, ONU 3
STATUS_KEYS = {"state", "name", "source", "seed", "started_at", "elapsed", "steps_total", "steps_started",
               "steps_ended", "refusals", "current", "error"}


class FakeOpenolt:
    """The OpenOLT endpoint's control (stop_server / start_server / serving) as tap.py gives V1Commands."""

    def __init__(self):
        self.serving = True

    def stop_server(self):
        self.serving = False

    def start_server(self):
        self.serving = True


def world(openolt=None):
    """OLT 10 with 2 PONs of 16 ONUs, every ONU activated, and a runner over its v1 commands."""
    sim = Sim(olt_id=10, pon=2, onu=16)
    sim.bring_up()
    if openolt is not None:
        sim.commands = V1Commands(sim.olt, openolt=openolt)
    return sim, ScenarioRunner(sim.olt, sim.commands)


def seen(sim):
    """The scenario events so far: (kind, step, action, targets, outcome, refusals)."""
    return [(e.kind, e.step, e.action, e.targets, e.outcome, e.refusals) for e in sim.events
            if isinstance(e, ScenarioEvent)]


def timeline(sim):
    """(time, kind, step) of every scenario event, recorded as they are emitted."""
    marks = []
    sim.olt.subscribe(lambda e: marks.append((sim.clock.seconds(), e.kind, e.step))
                      if isinstance(e, ScenarioEvent) else None)
    return marks


def advance(sim, seconds, step=0.5):
    for _ in range(int(seconds / step)):
        sim.clock.advance(step)


def active(sim):
    return {(key.type, key.onu_serial or key.port_id) for key, _ in sim.olt.alarms.active()}


def ours_on_clock(sim, runner):
    return [call for call in sim.clock.getDelayedCalls() if call.func is runner._tick]


def picked(seed, text_steps="targets: {fraction: 0.25}"):
    sim, runner = world()
    runner.run(f"seed: {seed}\nsteps:\n  - action: onu-alarm\n    alarm: ONU_ALARM_LOS\n    {text_steps}\n")
    return seen(sim)[1][3]


# ---- determinism ---------------------------------------------------------------------------------------------

MIXED = """
name: mixed
seed: 42
steps:
  - {name: cut, at: 1s, action: onu-power-off, targets: {pon: 1, fraction: 0.25}, duration: 5s}
  - {name: slow, at: 0s, action: omci-delay, delay: 200ms, jitter: 100ms, targets: {count: 3}, duration: 4s,
     every: 5s, times: 2}
  - {name: los, after: cut, wait: 1s, action: pon-los, targets: {pons: [0, 1], fraction: 0.5}, duration: 2s}
"""


def test_same_file_same_targets_and_same_events():
    """Two runs of one file on fresh OLTs emit the identical list of events (scenario's and model's alike)."""
    runs = []
    for _ in range(2):
        sim, runner = world()
        runner.run(MIXED)
        advance(sim, 20)
        assert runner.status()["state"] == "done"
        runs.append(list(sim.events))
    assert runs[0] == runs[1]
    assert any(isinstance(e, ScenarioEvent) for e in runs[0])


def test_another_seed_picks_other_onus():
    """With 32 ONUs, a quarter drawn from seed 1 and from seed 2 differ; from seed 1 twice they do not."""
    assert picked(1) == picked(1)
    assert picked(1) != picked(2)
    assert len(picked(1)) == 8


def test_selection_rules():
    """A fraction rounds up (10 % of 16 is 2), a count beyond the candidates takes them all, state keeps only
    ONUs in that state, and targets come in PON then ONU order."""
    assert len(picked(0, "targets: {pon: 0, fraction: 0.1}")) == 2
    assert len(picked(0, "targets: {pon: 0, count: 40}")) == 16
    chosen = picked(0, "targets: {pons: [1, 0], count: 5}")
    assert list(chosen) == sorted(chosen, key=lambda s: (s[8:10], s[10:]))
    sim, runner = world()
    sim.olt.shutdown_onu(ONU)
    runner.run("steps:\n  - {action: onu-power-on, targets: {state: disabled}}\n")
    assert seen(sim)[1][3] == (ONU,)


# ---- each action and its undo --------------------------------------------------------------------------------

def onu(sim, serial=ONU):
    return sim.olt.onu_by_serial(serial)


ACTIONS = {
    "onu-power-off": ("{action: onu-power-off, targets: {onu: %s}}" % ONU,
                      lambda sim: onu(sim).state == "disabled", lambda sim: onu(sim).state == "enabled"),
    "onu-alarm": ("{action: onu-alarm, alarm: ONU_ALARM_LOS, targets: {onu: %s}}" % ONU,
                  lambda sim: ("ONU_ALARM_LOS", ONU) in active(sim), lambda sim: not active(sim)),
    "pon-power-off": ("{action: pon-power-off, targets: {pon: 0}}",
                      lambda sim: {o.state for o in sim.olt.pon(0).onus} == {"disabled"},
                      lambda sim: {o.state for o in sim.olt.onus} == {"enabled"}),
    "pon-los": ("{action: pon-los, targets: {pon: 1}}",
                lambda sim: active(sim) == {("OLT_PON_LOS", 1)}, lambda sim: not active(sim)),
    "nni-los": ("{action: nni-los}", lambda sim: active(sim) == {("OLT_NNI_LOS", 0)}, lambda sim: not active(sim)),
    "transceiver-out": ("{action: transceiver-out, targets: {pon: 1}}",
                        lambda sim: not sim.olt.transceiver_plugged(1),
                        lambda sim: sim.olt.transceiver_plugged(1) and onu(sim).state == "enabled"),
    "omci-delay": ("{action: omci-delay, delay: 1s, jitter: 200ms, targets: {onu: %s}}" % ONU,
                   lambda sim: sim.olt.faults.of(onu(sim)) == {"omci-delay": {"delay": 1.0, "jitter": 0.2}},
                   lambda sim: sim.olt.faults.of(onu(sim)) == {}),
    "omci-rate": ("{action: omci-rate, rate: 3, targets: {onu: %s}}" % ONU,
                  lambda sim: sim.olt.faults.of(onu(sim)) == {"omci-rate": {"rate": 3}},
                  lambda sim: sim.olt.faults.of(onu(sim)) == {}),
    "omci-mute": ("{action: omci-mute, targets: {onu: %s}}" % ONU,
                  lambda sim: "omci-mute" in sim.olt.faults.of(onu(sim)),
                  lambda sim: sim.olt.faults.of(onu(sim)) == {}),
    "packet-drop": ("{action: packet-drop, fraction: 0.5, protocols: [dhcp], targets: {onu: %s}}" % ONU,
                    lambda sim: sim.olt.faults.of(onu(sim)) == {"packet-drop": {"fraction": 0.5,
                                                                                 "protocols": ["dhcp"]}},
                    lambda sim: sim.olt.faults.of(onu(sim)) == {}),
}


@pytest.mark.parametrize("name", ACTIONS)
def test_action_then_undone_at_the_end_of_its_duration(name):
    """The action takes effect when its step starts and is undone when its duration ends, with no refusal."""
    step, during, after = ACTIONS[name]
    sim, runner = world()
    assert after(sim)
    runner.run("steps:\n  - " + step[:-1] + ", at: 1s, duration: 10s}\n")
    sim.clock.advance(1)
    assert during(sim)
    advance(sim, 9.5)
    assert during(sim)
    sim.clock.advance(0.5)
    advance(sim, 5)  # ONUs powered on again range and are activated
    assert after(sim)
    assert runner.status()["state"] == "done"
    assert runner.status()["refusals"] == 0


@pytest.mark.parametrize("name", ACTIONS)
def test_action_undone_by_stop(name):
    """Stopping while the step holds its effect undoes it at once (latest first)."""
    step, during, after = ACTIONS[name]
    sim, runner = world()
    runner.run("steps:\n  - " + step[:-1] + ", duration: 1h}\n")
    assert during(sim)
    assert runner.stop()["state"] == "stopped"
    advance(sim, 5)
    assert after(sim)


def test_olt_reboot_and_nothing_to_undo():
    """olt-reboot reboots through RebootOlt; the step ends (after its duration) without undoing anything."""
    sim, runner = world()
    runner.run("steps:\n  - {action: olt-reboot, duration: 2s}\n")
    assert sim.olt.state == "deleted"
    advance(sim, 2)
    assert runner.status()["state"] == "done"
    assert seen(sim)[-2] == ("scenario-step-ended", "step-1", "olt-reboot", ("olt",), "done", 0)


def test_openolt_restart_down_for_the_duration():
    """openolt-restart stops the OpenOLT server, which is back after the step's duration (whole seconds)."""
    server = FakeOpenolt()
    sim, runner = world(server)
    runner.run("steps:\n  - {action: openolt-restart, duration: 3s}\n")
    assert not server.serving
    advance(sim, 2.5)
    assert not server.serving
    sim.clock.advance(0.5)
    assert server.serving
    assert runner.status()["state"] == "done"


def test_refusals_are_counted_logged_once_and_do_not_stop_the_scenario(info_level):
    """Power-off of ONUs already off is refused per ONU: counted, one warning line for the step, and the next
    step still runs."""
    sim, runner = world()
    for serial in ("BBSM000a0101", "BBSM000a0102"):
        sim.olt.shutdown_onu(serial)
    with capturedLogs() as logs:
        runner.run("steps:\n  - {name: cut, action: onu-power-off, targets: {pon: 1, count: 16}}\n"
                   "  - {name: after-cut, after: cut, action: pon-los, targets: {pon: 0}}\n")
    lines = [e for e in logs if e.get("log_format", "").startswith("scenario-step-refused")]
    assert len(lines) == 1 and lines[0]["count"] == 2
    status = runner.status()
    assert (status["state"], status["refusals"], status["steps_ended"]) == ("done", 2, 2)
    assert seen(sim)[2][4:] == ("done", 2)


def test_an_action_without_what_it_needs_is_a_refusal():
    """openolt-restart on an OLT without an OpenOLT endpoint to control is refused and counted."""
    sim, runner = world()
    assert runner.run("steps:\n  - {action: openolt-restart}\n")["refusals"] == 1


def test_undo_after_a_reboot_is_attempted_and_refusals_counted():
    """ONUs held off when the OLT reboots: the undo is still attempted when the duration ends; what the rebooted
    OLT refuses is counted, and the scenario ends normally."""
    sim, runner = world()
    runner.run("steps:\n  - {name: cut, action: onu-power-off, targets: {pon: 0, count: 4}, duration: 10s}\n"
               "  - {name: reboot, at: 2s, action: olt-reboot}\n")
    advance(sim, 12)
    status = runner.status()
    assert status["state"] == "done"
    cut_end = [e for e in seen(sim) if e[:2] == ("scenario-step-ended", "cut")][0]
    assert cut_end[5] == status["refusals"] > 0
    assert sim.olt.state != "enabled"


# ---- timing: after, repeats, rounds ----------------------------------------------------------------------------

def test_after_chains():
    """A step after another starts when it has ended, plus its wait; without a duration a step ends at once."""
    sim, runner = world()
    marks = timeline(sim)
    runner.run("steps:\n  - {name: a, at: 5s, action: pon-los, targets: {pon: 0}, duration: 10s}\n"
               "  - {name: b, after: a, delay: 2s, action: nni-los, duration: 1s}\n"
               "  - {name: c, after: b, action: onu-alarm, alarm: DYING_GASP, targets: {onu: %s}}\n" % ONU)
    advance(sim, 30)
    assert [(t - marks[0][0], k, s) for t, k, s in marks] == [
        (0, "scenario-started", ""),
        (5, "scenario-step-started", "a"), (15, "scenario-step-ended", "a"),
        (17, "scenario-step-started", "b"), (18, "scenario-step-ended", "b"),
        (18, "scenario-step-started", "c"), (18, "scenario-step-ended", "c"),
        (18, "scenario-ended", "")]


def test_repeats_and_rounds():
    """times/every start a step again; after: waits for its last start; repeat plays the list again once the
    previous round has ended; steps_total counts every start."""
    sim, runner = world()
    marks = timeline(sim)
    status = runner.run("repeat: 2\nsteps:\n"
                        "  - {name: a, action: pon-los, targets: {pon: 0}, duration: 4s, every: 10s, times: 3}\n"
                        "  - {name: b, after: a, action: nni-los, duration: 1s}\n")
    assert status["steps_total"] == 8
    advance(sim, 60)
    starts = [t - marks[0][0] for t, k, s in marks if k == "scenario-step-started"]
    assert starts == [0, 10, 20, 24, 25, 35, 45, 49]
    status = runner.status()
    assert (status["state"], status["steps_started"], status["steps_ended"], status["elapsed"]) == \
        ("done", 8, 8, 50)


def test_same_instant_steps_start_in_file_order():
    """Steps due at one instant start in the file's order."""
    sim, runner = world()
    runner.run("steps:\n" + "".join(f"  - {{name: s{i}, at: 3s, action: nni-los, duration: 1s}}\n"
                                    for i in (3, 1, 2)))
    advance(sim, 3)
    assert [e[1] for e in seen(sim) if e[0] == "scenario-step-started"] == ["s3", "s1", "s2"]


# ---- status, stop, close, one at a time ------------------------------------------------------------------------

def test_status_while_running():
    """status(): its keys, the running steps with targets and end time, and the counters."""
    sim, runner = world()
    assert runner.status()["state"] == "idle"
    sim.clock.advance(100)
    runner.run("name: s\nseed: 3\nsteps:\n  - {name: cut, action: onu-power-off, targets: {onu: %s}, "
               "duration: 20s}\n" % ONU, source="test")
    sim.clock.advance(5)
    status = runner.status()
    assert set(status) == STATUS_KEYS
    start = status["started_at"]
    assert status == {"state": "running", "name": "s", "source": "test", "seed": 3, "started_at": start,
                      "elapsed": 5.0, "steps_total": 1, "steps_started": 1, "steps_ended": 0, "refusals": 0,
                      "current": [{"step": "cut", "action": "onu-power-off", "targets": [ONU], "started_at": start,
                                   "ends_at": start + 20}],
                      "error": ""}


def test_stop_mid_run_undoes_everything_and_leaves_no_call():
    """Stop with several steps holding effects: all undone, step ends and the scenario's end emitted as stopped,
    nothing of the runner left on the clock, later steps never start."""
    sim, runner = world()
    runner.run("steps:\n"
               "  - {name: cut, action: onu-power-off, targets: {pon: 0, count: 3}, duration: 1m}\n"
               "  - {name: pull, at: 1s, action: transceiver-out, targets: {pon: 1}, duration: 1m}\n"
               "  - {name: mute, at: 2s, action: omci-mute, targets: {pon: 0}, duration: 1m}\n"
               "  - {name: never, at: 50s, action: nni-los}\n")
    advance(sim, 3)
    assert runner.pending_calls() == 1
    status = runner.stop()
    assert (status["state"], status["current"], status["steps_started"], status["steps_ended"]) == \
        ("stopped", [], 3, 3)
    assert [e[:2] + e[4:5] for e in seen(sim)[-4:]] == [
        ("scenario-step-ended", "mute", "stopped"), ("scenario-step-ended", "pull", "stopped"),
        ("scenario-step-ended", "cut", "stopped"), ("scenario-ended", "", "stopped")]
    assert runner.pending_calls() == 0 and not ours_on_clock(sim, runner)
    assert sim.olt.faults.active() == 0 and sim.olt.transceiver_plugged(1)
    advance(sim, 60)
    assert {o.state for o in sim.olt.onus} == {"enabled"}
    assert "never" not in [e[1] for e in seen(sim)]
    assert runner.stop() == runner.status()  # stopping again changes nothing


def test_stop_when_idle_returns_the_status():
    """stop() with nothing running is not an error and changes nothing."""
    sim, runner = world()
    assert runner.stop() == runner.status() == ScenarioRunner(sim.olt, sim.commands).status()
    assert seen(sim) == []


def test_one_scenario_at_a_time():
    """A second run while one is running is refused (nothing changes); once it has ended another may run."""
    sim, runner = world()
    runner.run("name: first\nsteps:\n  - {action: nni-los, duration: 10s}\n  - {at: 2s, action: pon-los}\n")
    with pytest.raises(FailedPrecondition, match=r"^scenario 'first' is running \(step 1 of 2\); stop it first$"):
        runner.run("name: second\nsteps:\n  - {action: olt-reboot}\n")
    assert sim.olt.state == "enabled" and runner.status()["name"] == "first"
    advance(sim, 10)
    assert runner.run("name: second\nsteps:\n  - {action: pon-los}\n")["name"] == "second"


def test_bad_file_refused_before_anything_changes():
    """A file naming an ONU or PON this OLT lacks is refused at run, naming the step; nothing starts."""
    sim, runner = world()
    with pytest.raises(InvalidArgument, match=r"^step 2 'x': .*BBSM000a0999"):
        runner.run("steps:\n  - {action: nni-los}\n  - {name: x, action: onu-power-off, targets: {onu: BBSM000a0999}}\n")
    with pytest.raises(InvalidArgument, match=r"^step 1 'step-1': .*PON 7"):
        runner.run("steps:\n  - {action: pon-los, targets: {pon: 7}}\n")
    assert runner.status()["state"] == "idle" and seen(sim) == []


def test_close_undoes_and_never_raises(monkeypatch):
    """close() (daemon stop) undoes what is held even when an undo fails unexpectedly (logged, counted), never
    raises and leaves no delayed call of the runner's; it is harmless when idle."""
    sim, runner = world()
    ScenarioRunner(sim.olt, sim.commands).close()

    def broken(olt, commands, step, pon_id):
        olt.plug_out_transceiver(pon_id)

        def undo():
            raise RuntimeError("boom")
        return undo

    monkeypatch.setitem(actions.ACTS, "transceiver-out", broken)
    runner.run("steps:\n  - {action: transceiver-out, targets: {pon: 1}, duration: 1m}\n"
               "  - {action: pon-los, targets: {pon: 0}, duration: 1m}\n")
    runner.close()
    assert runner.status()["state"] == "stopped" and runner.status()["refusals"] == 1
    assert ("OLT_PON_LOS", 0) not in active(sim)  # undone although an undo after it failed
    assert not ours_on_clock(sim, runner)
    runner.close()


def test_an_unexpected_error_fails_the_scenario_and_undoes(monkeypatch):
    """A bug in an action fails the scenario (state failed, error said) after undoing what is held."""
    sim, runner = world()

    def broken(olt, commands, step, target):
        raise KeyError("oops")

    monkeypatch.setitem(actions.ACTS, "nni-los", broken)
    runner.run("steps:\n  - {action: pon-los, targets: {pon: 0}, duration: 1m}\n  - {at: 1s, action: nni-los}\n")
    advance(sim, 1)
    status = runner.status()
    assert status["state"] == "failed" and "oops" in status["error"]
    assert not active(sim) and not ours_on_clock(sim, runner)
    assert seen(sim)[-1][0::4] == ("scenario-ended", "failed")


# ---- the events outside the model --------------------------------------------------------------------------------

def test_event_bus_record():
    """On SSE and gRPC StreamEvents a step event has its name as type and the step's fields as details."""
    sim, _ = world()
    started = ScenarioEvent("scenario-step-started", "s", "cut", "onu-power-off", (ONU, "BBSM000a0104"))
    record = to_record(sim.olt, started, 7, 12.5)
    assert (record["type"], record["olt_id"], record["sequence"], record["time"]) == \
        ("scenario-step-started", 10, 7, 12.5)
    assert record["details"] == {"scenario": "s", "step": "cut", "action": "onu-power-off",
                                 "targets": f"{ONU},BBSM000a0104"}
    ended = to_record(sim.olt, ScenarioEvent("scenario-ended", "s", outcome="stopped", refusals=2), 8, 13.0)
    assert ended["details"] == {"scenario": "s", "outcome": "stopped", "refusals": "2"}


def test_kafka_records():
    """On Kafka each scenario event is BBSim's record with the scenario's keys after it, in run order."""
    sim, runner = world()
    sent = []
    BbsimEventPublisher(sim.olt, sim.clock, lambda value: sent.append(json.loads(value)) or True)
    runner.run("name: k\nsteps:\n  - {name: los, action: pon-los, targets: {pon: 1}, duration: 1s}\n")
    sim.clock.advance(1)
    assert [r["EventType"] for r in sent] == ["scenario-started", "scenario-step-started", "scenario-step-ended",
                                              "scenario-ended"]
    assert list(sent[2]) == ["EventType", "OnuSerial", "OltID", "IntfID", "OnuID", "EpochTime", "Timestamp",
                             "Scenario", "Step", "Action", "Targets", "Outcome", "Refusals"]
    assert {k: sent[2][k] for k in ("OltID", "Scenario", "Step", "Action", "Targets", "Outcome", "Refusals")} == \
        {"OltID": 10, "Scenario": "k", "Step": "los", "Action": "pon-los", "Targets": ["pon 1"], "Outcome": "done",
         "Refusals": 0}
