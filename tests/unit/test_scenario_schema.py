"""The scenario file's schema (docs/scenarios.md): what a valid file becomes, and every refusal as one line that
names the step, so that a user can fix a file from the message alone."""

from pathlib import Path

import pytest

from oltsim.model.errors import InvalidArgument
from oltsim.scenario.schema import ACTIONS, load, parse, parse_duration

LIBRARY = Path(__file__).resolve().parents[2] / "docs" / "scenarios"


def one_step(**step) -> str:
    """A file of one step given as YAML flow keys."""
    body = ", ".join(f"{key}: {value}" for key, value in step.items())
    return f"steps:\n  - {{{body}}}\n"


def refusal(text: str) -> str:
    with pytest.raises(InvalidArgument) as info:
        parse(text)
    message = info.value.message
    assert "\n" not in message
    return message


def test_the_documented_example_parses():
    """The walk-through's file: names, starts, durations, parameters, targets and repeats as written."""
    doc = (Path(__file__).resolve().parents[2] / "docs" / "scenarios.md").read_text()
    text = doc.split("```yaml", 1)[1].split("```", 1)[0]
    scenario = parse(text, "labs/pon-3-brownout.yaml")
    assert (scenario.name, scenario.seed, scenario.repeat) == ("pon-3-brownout", 7, 1)
    cut, pull, flaky = scenario.steps
    assert (cut.name, cut.at, cut.duration, cut.targets.pons, cut.targets.fraction) == \
        ("quarter-power-cut", 5.0, 20.0, (3,), 0.25)
    assert (pull.after, pull.wait, pull.duration) == ("quarter-power-cut", 2.0, 30.0)
    assert flaky.params == {"delay": 0.2, "jitter": 0.1}
    assert (flaky.every, flaky.times) == (30.0, 3)
    assert scenario.steps_total == 5


@pytest.mark.parametrize("path", sorted(LIBRARY.glob("*.yaml")), ids=lambda p: p.name)
def test_library_files_parse(path):
    """Every file of the library is valid and named."""
    assert load(path).name


def test_defaults():
    """Name from the file name, seed 0, one round, steps named step-N, start at 0 s, no duration, one start."""
    scenario = parse("steps:\n  - action: olt-reboot\n", "some/where/reboot-now.yml")
    assert (scenario.name, scenario.seed, scenario.repeat) == ("reboot-now", 0, 1)
    step = scenario.steps[0]
    assert (step.name, step.at, step.duration, step.times, step.index) == ("step-1", 0.0, 0.0, 1, 1)


@pytest.mark.parametrize("text,seconds", [("1.5s", 1.5), ("250ms", 0.25), ("2m", 120.0), ("1h", 3600.0),
                                          (3, 3.0), ("4", 4.0), (0.5, 0.5), ("0s", 0.0)])
def test_durations(text, seconds):
    """A number with ms, s, m or h; a bare number is seconds."""
    assert parse_duration(text) == seconds


def test_default_parameters_are_filled_in():
    """jitter 0, group 224.0.0.22, protocols eapol and dhcp, when the file leaves them out."""
    assert parse(one_step(action="omci-delay", delay="1s")).steps[0].params == {"delay": 1.0, "jitter": 0.0}
    assert parse(one_step(action="onu-igmp", igmp="join")).steps[0].params == {"igmp": "join",
                                                                               "group": "224.0.0.22"}
    assert parse(one_step(action="packet-drop", fraction=0.5)).steps[0].params["protocols"] == ("eapol", "dhcp")


def test_omci_delay_waits_after_a_step_with_wait():
    """omci-delay's `delay` is its OMCI delay, so its wait after another step is `wait:`."""
    scenario = parse("steps:\n  - {name: a, action: olt-reboot}\n"
                     "  - {after: a, wait: 3s, action: omci-delay, delay: 100ms}\n")
    assert (scenario.steps[1].wait, scenario.steps[1].params["delay"]) == (3.0, 0.1)


@pytest.mark.parametrize("text,message", [
    (one_step(name="pull", action="pon-lost"),
     "step 1 'pull': unknown action 'pon-lost'; did you mean 'pon-los'? (known: " + ", ".join(ACTIONS) + ")"),
    (one_step(action="olt-reboot", colour="red"), "step 1 'step-1': unknown key 'colour'"),
    (one_step(action="onu-alarm"), "step 1 'step-1': onu-alarm needs 'alarm'"),
    (one_step(action="omci-rate"), "step 1 'step-1': omci-rate needs 'rate'"),
    (one_step(action="omci-delay"), "step 1 'step-1': omci-delay needs 'delay'"),
    (one_step(action="onu-power-off", duration="soon"), "step 1 'step-1': duration must be a time"),
    (one_step(action="onu-power-off", duration="5 parsecs"), "step 1 'step-1': duration must be a time"),
    (one_step(action="onu-power-off", at="-2s"), "step 1 'step-1': at must be a time"),
    (one_step(action="onu-power-off", duration="2000h"), "step 1 'step-1': duration must be at most a week"),
    (one_step(action="packet-drop", fraction=1.5), "step 1 'step-1': fraction must be more than 0 and at most 1"),
    (one_step(action="packet-drop", fraction=0.5, protocols="[igmp]"),
     "step 1 'step-1': protocols must be taken from eapol, dhcp"),
    (one_step(action="onu-power-off", targets="{fraction: 0}"),
     "step 1 'step-1': targets.fraction must be more than 0"),
    (one_step(action="onu-power-off", targets="{count: 0}"), "step 1 'step-1': targets.count must be between"),
    (one_step(action="onu-power-off", targets="{fraction: 0.5, count: 2}"),
     "step 1 'step-1': targets take a fraction or a count, not both"),
    (one_step(action="onu-power-off", targets="{onu: BBSM000a0101, pon: 1}"),
     "step 1 'step-1': targets take ONUs by serial or by PON, not both"),
    (one_step(action="onu-power-off", targets="{state: sleepy}"), "step 1 'step-1': unknown ONU state 'sleepy'"),
    (one_step(action="pon-los", targets="{onu: BBSM000a0101}"),
     "step 1 'step-1': unknown target key 'onu': this action acts on PONs"),
    (one_step(action="olt-reboot", targets="{pon: 1}"),
     "step 1 'step-1': unknown target key 'pon': this action acts on the OLT and takes none"),
    (one_step(action="onu-alarm", alarm="ONU_ALARM_FIRE"), "step 1 'step-1': unknown ONU alarm 'ONU_ALARM_FIRE'"),
    (one_step(action="omci-rate", rate=11), "step 1 'step-1': rate must be between 0 and 10"),
    (one_step(action="onu-igmp", igmp="join", group="10.0.0.1"),
     "step 1 'step-1': group must be an IPv4 multicast address"),
    (one_step(action="pon-los", duration="10s", every="5s", times=3),
     "step 1 'step-1': every (5s) must be at least the duration (10s)"),
    (one_step(action="pon-los", times=3), "step 1 'step-1': times: 3 needs every:"),
    (one_step(action="pon-los", every="5s"), "step 1 'step-1': every needs times: 2 or more"),
    (one_step(action="pon-los", at="1s", after="x"), "step 1 'step-1': a step starts at a time or after a step"),
    (one_step(action="pon-los", delay="1s"), "step 1 'step-1': delay needs after:"),
    ("steps:\n  - {name: a, action: olt-reboot}\n  - {name: a, action: olt-reboot}\n",
     "step 2 'a': name 'a' is already step 1's"),
    ("steps:\n  - {name: a, action: olt-reboot}\n  - {name: b, after: nowhere, action: olt-reboot}\n",
     "step 2 'b': after: unknown step 'nowhere' (steps: a, b)"),
    ("steps:\n  - {name: a, after: b, action: olt-reboot}\n  - {name: b, action: olt-reboot}\n",
     "step 1 'a': after: 'b' is a later step; after must name an earlier one"),
    ("steps:\n  - {name: a, after: b, action: olt-reboot}\n  - {name: b, after: a, action: olt-reboot}\n",
     "step 1 'a': after: makes a cycle (a -> b -> a)"),
    ("steps:\n  - {name: a, after: a, action: olt-reboot}\n", "step 1 'a': after: makes a cycle (a -> a)"),
    ("steps:\n  - {action: olt-reboot}\n  - {name: two}\n", "step 2 'two': no action (known: "),
    ("steps:\n  - olt-reboot\n", "step 1: a step must be a mapping"),
])
def test_step_refusals_name_the_step(text, message):
    """Each mistake in a step is one line starting with the step's number and name."""
    assert refusal(text).startswith(message)


@pytest.mark.parametrize("text,message", [
    ("steps: []\n", "<text>: steps must be a list of one step or more"),
    ("name: x\n", "<text>: steps must be a list of one step or more"),
    ("colour: red\nsteps:\n  - {action: olt-reboot}\n", "<text>: unknown key 'colour'"),
    ("repeat: 0\nsteps:\n  - {action: olt-reboot}\n", "<text>: repeat must be between 1 and"),
    ("seed: [1]\nsteps:\n  - {action: olt-reboot}\n", "<text>: seed must be a whole number or a string"),
    ("steps: [\n", "<text>: not a valid YAML file at line"),
    ("- just\n- a list\n", "<text>: a scenario is a mapping"),
])
def test_file_refusals(text, message):
    """Mistakes outside the steps name the file (here the text's name)."""
    assert refusal(text).startswith(message)


def test_load_names_the_path(tmp_path):
    """A file that cannot be read, or that is not valid, is refused with its path."""
    missing = tmp_path / "nope.yaml"
    with pytest.raises(InvalidArgument, match=f"^{missing}: cannot read the scenario"):
        load(missing)
    bad = tmp_path / "bad.yaml"
    bad.write_text("steps:\n  - {action: nothing}\n")
    with pytest.raises(InvalidArgument, match=f"^{bad}: step 1 'step-1': unknown action 'nothing'"):
        load(bad)
