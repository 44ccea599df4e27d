"""The scenario library of docs/scenarios/: every file loads with the schema the runner uses, names itself after
its file, says in its opening comment what it reproduces, which VOLTHA suite it mirrors and what it leaves, covers
the fault it is named for, and plays in tens of seconds (so the end-to-end tests can run it as written)."""
from __future__ import annotations

from pathlib import Path

import pytest

from oltsim.scenario import schema

LIBRARY = Path(__file__).resolve().parents[2] / "docs" / "scenarios"
FILES = sorted(LIBRARY.glob("*.yaml"))

# The library: file -> the actions it must play.
EXPECTED = {
    "onu-power-waves": {"onu-power-off"},
    "pon-los-30s": {"pon-los"},
    "olt-reboot-during-bringup": {"onu-power-off", "olt-reboot"},
    "flaky-omci": {"omci-delay", "omci-rate"},
    "openolt-restart-under-load": {"onu-power-off", "openolt-restart"},
}
LONGEST_SECONDS = 60.0


def planned_end(scenario: schema.Scenario) -> float:
    """Seconds from the start to the last step's end of one round, as the file plans it (after-chains followed)."""
    ends: dict[str, float] = {}
    for step in scenario.steps:
        start = ends[step.after] + step.wait if step.after else step.at
        ends[step.name] = start + (step.times - 1) * step.every + step.duration
    return max(ends.values()) * scenario.repeat


def test_the_library_holds_exactly_the_five_scenarios():
    """docs/scenarios/ holds exactly the five files of EXPECTED (a renamed file would break the docs' links)."""
    assert sorted(path.stem for path in FILES) == sorted(EXPECTED)


@pytest.mark.parametrize("path", FILES, ids=lambda path: path.stem)
def test_each_file_loads_and_plays_what_its_name_says(path):
    """The file loads without error, its scenario is named after the file, and it plays the actions of its fault."""
    scenario = schema.load(path)
    assert scenario.name == path.stem
    assert EXPECTED[path.stem] <= {step.action for step in scenario.steps}, scenario.steps


@pytest.mark.parametrize("path", FILES, ids=lambda path: path.stem)
def test_each_file_opens_with_what_it_reproduces_mirrors_and_leaves(path):
    """The opening comment (before the first key) says what it reproduces, names the VOLTHA suite it mirrors
    (a .robot file of voltha-system-tests) and states what it leaves at the end."""
    lines = path.read_text().splitlines()
    header = []
    for line in lines:
        if not line.startswith("#"):
            break
        header.append(line.lstrip("# "))
    text = " ".join(header)
    assert len(header) >= 3, f"{path.name} has no opening comment"
    assert "Mirrors VOLTHA" in text and ".robot" in text, text
    assert "Leaves:" in text, text


@pytest.mark.parametrize("path", FILES, ids=lambda path: path.stem)
def test_each_file_is_short_enough_to_run_end_to_end(path):
    """Every file ends within a minute of its start, so a test (and a user trying it) runs it as written."""
    end = planned_end(schema.load(path))
    assert 0 < end <= LONGEST_SECONDS, f"{path.name} plans {end:g} s"


def test_flaky_omci_takes_a_tenth_of_the_onus():
    """flaky-omci's knobs act on 10 % of the ONUs and are lifted after a while."""
    scenario = schema.load(LIBRARY / "flaky-omci.yaml")
    knobs = [step for step in scenario.steps if step.action.startswith("omci-")]
    assert knobs and all(step.targets.fraction == 0.1 and step.duration > 0 for step in knobs), knobs


def test_pon_los_holds_the_los_for_30_seconds():
    """pon-los-30s raises LOS on one PON and clears it 30 s later."""
    (step,) = schema.load(LIBRARY / "pon-los-30s.yaml").steps
    assert (step.action, step.targets.pons, step.duration) == ("pon-los", (0,), 30.0)
