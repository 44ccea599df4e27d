"""The scenario file (docs/scenarios.md): YAML parsed into frozen dataclasses and validated at load.

Pure: no OLT, no clock, no I/O apart from `load` reading the file. Every refusal is one InvalidArgument line that
names the step (`step 2 'pull': unknown action 'pon-lost'; did you mean 'pon-los'? (known: ...)`), so a user fixes a
file from the message alone. What only the OLT can tell (does that ONU or PON exist) is checked by the runner when
the scenario starts.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from oltsim.model.alarms import ONU_ALARMS
from oltsim.model.errors import InvalidArgument
from oltsim.model.onu import ONU_MACHINE
from oltsim.suggest import did_you_mean

__all__ = ["ACTIONS", "ActionSpec", "Scenario", "Step", "Targets", "load", "parse", "parse_duration"]

#: The largest scenario text read (UTF-8 bytes; a --scenario file, a REST body, a gRPC field): thousands of steps;
#: more is refused, not parsed.
MAX_SCENARIO_BYTES = 256 * 1024

#: A target kind per action: what `targets` selects and what the action acts on.
ONU, PON, NNI, OLT = "onu", "pon", "nni", "olt"

TOP_KEYS = ("name", "description", "seed", "repeat", "steps")
STEP_KEYS = ("name", "at", "after", "delay", "wait", "action", "targets", "duration", "every", "times")
TARGET_KEYS = {ONU: ("onu", "onus", "pon", "pons", "state", "fraction", "count"),
               PON: ("pon", "pons", "fraction", "count"),
               NNI: ("nni",),
               OLT: ()}
IGMP_ACTIONS = ("join", "leave", "joinv3")
PROTOCOLS = ("eapol", "dhcp")
#: Alarms without a status (BBSim's activation failure, processing error) are one-shot: nothing to clear.
ONE_SHOT_ALARMS = frozenset(name for name, (_kind, _params, status) in ONU_ALARMS.items() if status is False)

_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}
_DURATION = re.compile(r"^\s*([0-9]+(?:\.[0-9]*)?|\.[0-9]+)\s*(ms|s|m|h)?\s*$")
#: Scenarios are for minutes and hours; a week bounds a typo (`5000h`) and keeps the clock's float exact.
MAX_SECONDS = 7 * 24 * 3600.0
MAX_TIMES = 100_000
MAX_REPEAT = 100_000


def parse_duration(value, what: str = "duration") -> float:
    """Seconds from `1.5s`, `250ms`, `2m`, `1h` or a bare number (seconds); InvalidArgument otherwise."""
    if isinstance(value, bool):
        raise InvalidArgument(f"{what} must be a time such as 1.5s, 250ms or 2m (got {value!r})")
    if isinstance(value, (int, float)):
        seconds = float(value)
    else:
        match = _DURATION.match(str(value)) if isinstance(value, str) else None
        if match is None:
            raise InvalidArgument(f"{what} must be a time such as 1.5s, 250ms or 2m (got {value!r})")
        seconds = float(match.group(1)) * _UNITS[match.group(2) or "s"]
    if not math.isfinite(seconds) or seconds < 0:
        raise InvalidArgument(f"{what} must be a time of 0 or more (got {value!r})")
    if seconds > MAX_SECONDS:
        raise InvalidArgument(f"{what} must be at most a week (got {value!r})")
    return seconds


def _int(value, what: str, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidArgument(f"{what} must be a whole number (got {value!r})")
    if not low <= value <= high:
        raise InvalidArgument(f"{what} must be between {low} and {high} (got {value})")
    return value


def _fraction(value, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise InvalidArgument(f"{what} must be a number between 0 and 1 (got {value!r})")
    if not 0 < value <= 1:
        raise InvalidArgument(f"{what} must be more than 0 and at most 1 (got {value!r})")
    return float(value)


def _text(value, what: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise InvalidArgument(f"{what} must be a non-empty string (got {value!r})")
    return value.strip()


# ---- actions -------------------------------------------------------------------------------------


def _alarm(value) -> str:
    name = _text(value, "alarm").upper()
    if name not in ONU_ALARMS:
        raise InvalidArgument(f"unknown ONU alarm {value!r} (known: {', '.join(ONU_ALARMS)})")
    return name


def _igmp(value) -> str:
    word = _text(value, "igmp").lower()
    if word not in IGMP_ACTIONS:
        raise InvalidArgument(f"igmp must be one of {', '.join(IGMP_ACTIONS)} (got {value!r})")
    return word


def _group(value) -> str:
    import ipaddress
    try:
        group = ipaddress.IPv4Address(str(value))
    except ValueError:
        raise InvalidArgument(f"group must be an IPv4 multicast address (got {value!r})") from None
    if not group.is_multicast:
        raise InvalidArgument(f"group must be an IPv4 multicast address (got {value!r})")
    return str(group)


def _protocols(value) -> tuple[str, ...]:
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list) or not items:
        raise InvalidArgument(f"protocols must be a list of {', '.join(PROTOCOLS)} (got {value!r})")
    chosen = []
    for item in items:
        word = str(item).strip().lower()
        if word not in PROTOCOLS:
            raise InvalidArgument(f"protocols must be taken from {', '.join(PROTOCOLS)} (got {item!r})")
        if word not in chosen:
            chosen.append(word)
    return tuple(p for p in PROTOCOLS if p in chosen)


@dataclass(frozen=True)
class ActionSpec:
    """What an action acts on (`kind`: onu, pon, nni, olt) and its parameters: name -> (parse, default); a
    default of None marks a required parameter."""
    kind: str
    params: dict = field(default_factory=dict)


ACTIONS: dict[str, ActionSpec] = {
    "onu-power-off": ActionSpec(ONU),
    "onu-power-on": ActionSpec(ONU),
    "onu-alarm": ActionSpec(ONU, {"alarm": (_alarm, None)}),
    "onu-restart-eapol": ActionSpec(ONU),
    "onu-restart-dhcp": ActionSpec(ONU),
    "onu-igmp": ActionSpec(ONU, {"igmp": (_igmp, None), "group": (_group, "224.0.0.22")}),
    "pon-power-off": ActionSpec(PON),
    "pon-los": ActionSpec(PON),
    "nni-los": ActionSpec(NNI),
    "transceiver-out": ActionSpec(PON),
    "olt-reboot": ActionSpec(OLT),
    "openolt-restart": ActionSpec(OLT),
    "omci-delay": ActionSpec(ONU, {"delay": (lambda v: parse_duration(v, "delay"), None),
                                   "jitter": (lambda v: parse_duration(v, "jitter"), 0.0)}),
    "omci-rate": ActionSpec(ONU, {"rate": (lambda v: _int(v, "rate", 0, 10), None)}),
    "omci-mute": ActionSpec(ONU),
    "packet-drop": ActionSpec(ONU, {"fraction": (lambda v: _fraction(v, "fraction"), None),
                                    "protocols": (_protocols, PROTOCOLS)}),
}


# ---- the parsed file -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Targets:
    """What a step selects. `onus`/`pons` name devices (for an ONU action, `pons` means the ONUs on them; both
    empty means every candidate); `state` keeps ONUs in that state; `fraction` or `count` picks that share or
    number of the candidates with the scenario's seed (None: all)."""
    onus: tuple[str, ...] = ()
    pons: tuple[int, ...] = ()
    nni: int = 0
    state: str = ""
    fraction: float | None = None
    count: int | None = None


@dataclass(frozen=True)
class Step:
    """One step: starts at `at` s from the round's start, or `wait` s after step `after` has ended (its last
    start's duration over); acts for `duration` s (0: no undo, the step ends at once); starts `times` times,
    `every` s apart. `params` holds the action's parameters, defaults filled in. `index` is its 1-based place."""
    index: int
    name: str
    action: str
    targets: Targets
    params: dict
    at: float = 0.0
    after: str = ""
    wait: float = 0.0
    duration: float = 0.0
    every: float = 0.0
    times: int = 1

    @property
    def kind(self) -> str:
        """onu, pon, nni or olt: what the action acts on."""
        return ACTIONS[self.action].kind


@dataclass(frozen=True)
class Scenario:
    """A validated scenario: its steps in file order, played `repeat` times; `seed` picks the targets."""
    name: str
    steps: tuple[Step, ...]
    seed: int | str = 0
    repeat: int = 1
    description: str = ""
    source: str = "<text>"

    @property
    def steps_total(self) -> int:
        """Step starts planned: every step's `times`, for every round."""
        return self.repeat * sum(step.times for step in self.steps)


def _step_error(index: int, name: str, message: str) -> InvalidArgument:
    label = f"step {index}" + (f" {name!r}" if name else "")
    return InvalidArgument(f"{label}: {message}")


def _one_or_many(raw: dict, key: str, one: str, many: str, parse) -> list:
    """The values of `key` (one value) and of its plural (a non-empty list) in a targets mapping, each parsed by
    `parse(item, where)`; InvalidArgument naming the key for anything else."""
    values: list = []
    for name, plural in ((key, False), (key + "s", True)):
        if name in raw:
            value = raw[name]
            items = value if plural else [value]
            if not isinstance(items, list) or not items:
                raise InvalidArgument(f"targets.{name} must be {many if plural else one} (got {value!r})")
            values.extend(parse(item, f"targets.{name}") for item in items)
    return values


def _targets(raw, kind: str) -> Targets:
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise InvalidArgument(f"targets must be a mapping such as {{pon: 3, fraction: 0.25}} (got {raw!r})")
    allowed = TARGET_KEYS[kind]
    for key in raw:
        if key not in allowed:
            what = {ONU: "ONUs", PON: "PONs", NNI: "the NNI", OLT: "the OLT"}[kind]
            hint = f"takes {', '.join(allowed)}" if allowed else "takes none"
            raise InvalidArgument(f"unknown target key {key!r}: this action acts on {what} and {hint}"
                                  f"{did_you_mean(str(key), allowed, repr)}")
    onus = _one_or_many(raw, "onu", "a serial", "a list of serials", _text)
    pons = _one_or_many(raw, "pon", "a PON id", "a list of PON ids",
                        lambda item, where: _int(item, where, 0, 0xFFFF))
    if onus and pons:
        raise InvalidArgument("targets take ONUs by serial or by PON, not both")
    if "fraction" in raw and "count" in raw:
        raise InvalidArgument("targets take a fraction or a count, not both")
    state = ""
    if "state" in raw:
        state = _text(raw["state"], "targets.state")
        if state not in ONU_MACHINE.states:
            raise InvalidArgument(f"unknown ONU state {state!r} (known: {', '.join(sorted(ONU_MACHINE.states))})")
    fraction = _fraction(raw["fraction"], "targets.fraction") if "fraction" in raw else None
    count = _int(raw["count"], "targets.count", 1, 1 << 20) if "count" in raw else None
    nni = _int(raw["nni"], "targets.nni", 0, 0xFFFF) if "nni" in raw else 0
    return Targets(tuple(dict.fromkeys(onus)), tuple(dict.fromkeys(pons)), nni, state, fraction, count)


def _step(index: int, raw, names: dict[str, int]) -> Step:
    if not isinstance(raw, dict):
        raise _step_error(index, "", f"a step must be a mapping of keys (got {raw!r})")
    name = raw.get("name", f"step-{index}")
    if not isinstance(name, (str, int)) or isinstance(name, bool) or not str(name).strip():
        raise _step_error(index, "", f"name must be a non-empty string (got {name!r})")
    name = str(name).strip()
    try:
        if name in names:
            raise InvalidArgument(f"name {name!r} is already step {names[name]}'s; names must be unique")
        if "action" not in raw:
            raise InvalidArgument(f"no action (known: {', '.join(ACTIONS)})")
        action = raw["action"]
        if action not in ACTIONS:
            raise InvalidArgument(f"unknown action {action!r}{did_you_mean(str(action), ACTIONS, repr)} "
                                  f"(known: {', '.join(ACTIONS)})")
        spec = ACTIONS[action]
        # omci-delay's own `delay` is the OMCI answer delay: its wait after `after:` is written `wait:`.
        delay_is_param = "delay" in spec.params
        for key in raw:
            if key not in STEP_KEYS and key not in spec.params:
                raise InvalidArgument(f"unknown key {key!r}{did_you_mean(str(key), [*STEP_KEYS, *spec.params], repr)}"
                                      f" (a step takes {', '.join(STEP_KEYS)}"
                                      + (f"; {action} takes {', '.join(spec.params)}" if spec.params else "")
                                      + ")")
        params = {}
        for key, (parse_param, default) in spec.params.items():
            if key in raw:
                params[key] = parse_param(raw[key])
            elif default is None:
                raise InvalidArgument(f"{action} needs {key!r}")
            else:
                params[key] = default
        if "at" in raw and "after" in raw:
            raise InvalidArgument("a step starts at a time or after a step, not both")
        at = parse_duration(raw["at"], "at") if "at" in raw else 0.0
        after = ""
        if "after" in raw:
            after = raw["after"]
            if not isinstance(after, (str, int)) or isinstance(after, bool):
                raise InvalidArgument(f"after must name a step (got {after!r})")
            after = str(after).strip()
        wait_keys = ["wait"] + ([] if delay_is_param else ["delay"])
        given = [key for key in wait_keys if key in raw]
        if len(given) > 1:
            raise InvalidArgument("delay and wait are the same; give one")
        wait = 0.0
        if given:
            if not after:
                raise InvalidArgument(f"{given[0]} needs after: (with at:, add it to at)")
            wait = parse_duration(raw[given[0]], given[0])
        duration = parse_duration(raw["duration"], "duration") if "duration" in raw else 0.0
        times = _int(raw.get("times", 1), "times", 1, MAX_TIMES)
        every = parse_duration(raw["every"], "every") if "every" in raw else 0.0
        if times > 1 and "every" not in raw:
            raise InvalidArgument(f"times: {times} needs every: (how far apart the starts are)")
        if "every" in raw and times == 1:
            raise InvalidArgument("every needs times: 2 or more")
        if times > 1 and every <= 0:
            raise InvalidArgument("every must be more than 0")
        if times > 1 and every < duration:
            raise InvalidArgument(f"every ({raw['every']}) must be at least the duration ({raw['duration']}): "
                                  "a start must not overlap the previous one")
        targets = _targets(raw.get("targets"), spec.kind)
    except InvalidArgument as exc:
        raise _step_error(index, name, exc.message) from None
    return Step(index=index, name=name, action=action, targets=targets, params=params, at=at, after=after,
                wait=wait, duration=duration, every=every, times=times)


def _check_after(steps: list[Step]) -> None:
    """`after:` names an earlier step; a later one is refused, and named as a cycle when it leads back."""
    position = {step.name: i for i, step in enumerate(steps)}
    for i, step in enumerate(steps):
        if not step.after:
            continue
        if step.after not in position:
            raise _step_error(step.index, step.name, f"after: unknown step {step.after!r} "
                              f"(steps: {', '.join(s.name for s in steps)})")
        target = position[step.after]
        if target < i:
            continue
        chain, seen = [step.name], {step.name}
        current = steps[target]
        while True:
            chain.append(current.name)
            if current.name in seen:
                raise _step_error(step.index, step.name, f"after: makes a cycle ({' -> '.join(chain)})")
            seen.add(current.name)
            if not current.after or current.after not in position:
                break
            current = steps[position[current.after]]
        raise _step_error(step.index, step.name, f"after: {step.after!r} is a later step; after must name an "
                          "earlier one")


def parse(text: str, source: str = "<text>") -> Scenario:
    """A Scenario from YAML `text`; InvalidArgument (one line, naming the step) when it is not valid. `source`
    names the text in messages and gives the default name (a file's name without .yaml)."""
    try:
        raw = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or "not YAML"
        raise InvalidArgument(f"{source}: not a valid YAML file{where}: {problem}") from None
    if not isinstance(raw, dict):
        raise InvalidArgument(f"{source}: a scenario is a mapping with a list of steps (got {type(raw).__name__})")
    for key in raw:
        if key not in TOP_KEYS:
            raise InvalidArgument(f"{source}: unknown key {key!r}{did_you_mean(str(key), TOP_KEYS, repr)} "
                                  f"(a scenario takes {', '.join(TOP_KEYS)})")
    default_name = Path(source).name if source and not source.startswith("<") else "scenario"
    for suffix in (".yaml", ".yml"):
        if default_name.endswith(suffix):
            default_name = default_name[:-len(suffix)]
    name = raw.get("name", default_name)
    if not isinstance(name, (str, int)) or isinstance(name, bool) or not str(name).strip():
        raise InvalidArgument(f"{source}: name must be a non-empty string (got {name!r})")
    seed = raw.get("seed", 0)
    if isinstance(seed, bool) or not isinstance(seed, (int, str)):
        raise InvalidArgument(f"{source}: seed must be a whole number or a string (got {seed!r})")
    try:
        repeat = _int(raw.get("repeat", 1), "repeat", 1, MAX_REPEAT)
    except InvalidArgument as exc:
        raise InvalidArgument(f"{source}: {exc.message}") from None
    description = raw.get("description", "")
    if not isinstance(description, str):
        raise InvalidArgument(f"{source}: description must be a string")
    raw_steps = raw.get("steps")
    if not isinstance(raw_steps, list) or not raw_steps:
        raise InvalidArgument(f"{source}: steps must be a list of one step or more")
    steps: list[Step] = []
    names: dict[str, int] = {}
    for index, raw_step in enumerate(raw_steps, start=1):
        step = _step(index, raw_step, names)
        names[step.name] = index
        steps.append(step)
    _check_after(steps)
    return Scenario(name=str(name).strip(), steps=tuple(steps), seed=seed, repeat=repeat, description=description,
                    source=source)


def load(path) -> Scenario:
    """The Scenario in file `path`; InvalidArgument starting with the path when it cannot be read or is not valid
    (`labs/x.yaml: step 2 'pull': unknown action ...`)."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidArgument(f"{path}: cannot read the scenario: {getattr(exc, 'strerror', None) or exc}") from None
    try:
        return parse(text, str(path))
    except InvalidArgument as exc:
        if exc.message.startswith(f"{path}: "):
            raise
        raise InvalidArgument(f"{path}: {exc.message}") from None
