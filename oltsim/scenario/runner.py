"""Plays one fault scenario at a time on the OLT's clock (docs/scenarios.md).

The runner keeps its own agenda of (due time, order) entries and at most one delayed call on the clock, for the
earliest: steps due at the same instant run in file order on every reactor, so the same file gives the same
targets and the same events every run. Targets are chosen by `random.Random` seeded from the scenario's seed, the
step's name, the round and the start's number, over candidates in a stable order (PON id, then the ONU's place on
its PON).

Every action goes through the control API's use cases (`oltsim.scenario.actions`); a target the model refuses is
counted and logged once per step, and the scenario goes on. What a step holds (ONUs off, alarms and LOS raised,
transceivers out, fault knobs set) is undone in reverse order when its duration ends or the scenario is stopped.
"""
from __future__ import annotations

import heapq
import itertools
import math
import random
from dataclasses import dataclass, field

from oltsim.logs import logger
from oltsim.model import events
from oltsim.model.errors import FailedPrecondition, InvalidArgument, NotFound, OltsimError
from oltsim.scenario import actions
from oltsim.scenario.schema import NNI, OLT, ONU, PON, Scenario, Step, parse

__all__ = ["ScenarioRunner", "STATES"]

log = logger("oltsim.scenario")

STATES = ("idle", "running", "done", "stopped", "failed")


@dataclass
class _Live:
    """One start of a step: its targets, what it holds (label, undo) in the order done, its refusals."""
    step: Step
    round: int
    number: int
    targets: tuple[str, ...]
    started_at: float
    ends_at: float = 0.0
    undos: list = field(default_factory=list)
    refusals: int = 0


def _parse_source(source: str) -> str:
    """The name `parse` gives the text: a path as it is (its name is the default scenario name), else `<source>`."""
    if "/" in source or source.endswith((".yaml", ".yml")):
        return source
    return f"<{source}>"


class ScenarioRunner:
    """Plays one scenario at a time on `olt` through the control API's use cases (`commands`, a V1Commands), on
    `clock` (default: the OLT's). `run` starts one, `status` reports it, `stop` ends it and undoes what it holds,
    `close` (daemon stop) does the same and never raises. Runs on the reactor thread only."""

    def __init__(self, olt, commands, clock=None):
        self.olt = olt
        self.commands = commands
        self.clock = clock if clock is not None else olt.clock
        self._scenario: Scenario | None = None
        self._state = "idle"
        self._source = ""
        self._started_at = 0.0
        self._ended_at = 0.0
        self._error = ""
        self._started = 0
        self._ended = 0
        self._refusals = 0
        self._live: list[_Live] = []
        self._agenda: list = []
        self._order = itertools.count()
        self._call = None
        self._round = 0
        self._round_start = 0.0
        self._ended_in_round: dict[str, int] = {}
        self._tick = olt.guarded(self._fire, "scenario-agenda")

    # ---- the API ---------------------------------------------------------------------------------------------

    def run(self, text: str, source: str = "api") -> dict:
        """Parse and validate `text` (InvalidArgument: one line naming the step), refuse while a scenario is running
        (FailedPrecondition), then start it; returns status(). `source` says where it came from (api, file, a
        path): a path also names the scenario when the file has no name."""
        self._refuse_if_running()
        return self.start(parse(text, _parse_source(source)), source)

    def start(self, scenario: Scenario, source: str = "file") -> dict:
        """Start an already parsed scenario (oltsim.scenario.schema.load); as `run` otherwise."""
        self._refuse_if_running()
        self._check_targets(scenario)
        self._reset()
        self._scenario = scenario
        self._source = source
        self._state = "running"
        self._started_at = self.clock.seconds()
        faults = getattr(self.olt, "faults", None)
        if faults is not None:
            faults.reseed(scenario.seed)  # jitter and dropped frames follow the scenario's seed too
        log.info("scenario-started scenario={scenario} source={source} seed={seed} steps={steps} repeat={repeat}",
                 scenario=scenario.name, source=source, seed=scenario.seed, steps=scenario.steps_total,
                 repeat=scenario.repeat)
        self.olt.emit(events.ScenarioEvent("scenario-started", scenario.name))
        self._start_round()
        self._run_due()
        return self.status()

    def status(self) -> dict:
        """The running or last scenario: state (idle, running, done, stopped, failed), name, source, seed,
        started_at (clock seconds, 0 if never), elapsed, steps_total, steps_started, steps_ended, refusals,
        current (the steps holding something: step, action, targets, started_at, ends_at) and error."""
        scenario = self._scenario
        if scenario is None:
            return {"state": "idle", "name": "", "source": "", "seed": 0, "started_at": 0.0, "elapsed": 0.0,
                    "steps_total": 0, "steps_started": 0, "steps_ended": 0, "refusals": 0, "current": [],
                    "error": ""}
        until = self.clock.seconds() if self._state == "running" else self._ended_at
        return {"state": self._state, "name": scenario.name, "source": self._source, "seed": scenario.seed,
                "started_at": self._started_at, "elapsed": max(0.0, until - self._started_at),
                "steps_total": scenario.steps_total, "steps_started": self._started, "steps_ended": self._ended,
                "refusals": self._refusals,
                "current": [{"step": live.step.name, "action": live.step.action, "targets": list(live.targets),
                             "started_at": live.started_at, "ends_at": live.ends_at} for live in self._live],
                "error": self._error}

    def stop(self) -> dict:
        """Stop the running scenario: its timer cancelled, what its steps hold undone (latest first), state
        stopped. Stopping when none is running changes nothing (returns the status)."""
        if self._state == "running":
            self._finish("stopped")
        return self.status()

    def close(self) -> None:
        """Daemon stop: as `stop`, never raises, and leaves no delayed call of the runner's."""
        try:
            self.stop()
        except Exception:
            log.failure("scenario-close-failed")
        finally:
            self._cancel_call()
            self._agenda.clear()

    def pending_calls(self) -> int:
        """Delayed calls of the runner still on the clock: 1 while a scenario waits for its next entry, else 0."""
        return 1 if self._call is not None and self._call.active() else 0

    # ---- checks ----------------------------------------------------------------------------------------------

    def _refuse_if_running(self) -> None:
        if self._state == "running":
            raise FailedPrecondition(f"scenario {self._scenario.name!r} is running (step {self._started} of "
                                     f"{self._scenario.steps_total}); stop it first")

    def _check_targets(self, scenario: Scenario) -> None:
        """The devices a file names exist on this OLT (InvalidArgument naming the step otherwise)."""
        for step in scenario.steps:
            try:
                for serial in step.targets.onus:
                    self.olt.onu_by_serial(serial)
                for pon_id in step.targets.pons:
                    self.olt.pon(pon_id)
                if step.kind == NNI:
                    self.olt.nni(step.targets.nni)
            except NotFound as exc:
                raise InvalidArgument(f"step {step.index} {step.name!r}: {exc.message}") from None

    # ---- the agenda ------------------------------------------------------------------------------------------

    def _reset(self) -> None:
        self._cancel_call()
        self._agenda.clear()
        self._live.clear()
        self._error = ""
        self._started = self._ended = self._refusals = 0
        self._round = 0
        self._ended_at = 0.0

    def _schedule(self, due: float, fn, *args) -> None:
        heapq.heappush(self._agenda, (due, next(self._order), fn, args))

    def _cancel_call(self) -> None:
        if self._call is not None and self._call.active():
            self._call.cancel()
        self._call = None

    def _arm(self) -> None:
        """One delayed call, for the earliest entry of the agenda."""
        self._cancel_call()
        if self._agenda and self._state == "running":
            delay = max(0.0, self._agenda[0][0] - self.clock.seconds())
            self._call = self.clock.callLater(delay, self._tick)

    def _fire(self) -> None:
        self._call = None
        self._run_due()

    def _run_due(self) -> None:
        """Run every entry due now, earliest (then first scheduled) first, including those they schedule for now;
        an unexpected error fails the scenario (undoing what it holds) rather than leaving it half-run."""
        try:
            now = self.clock.seconds()
            while self._state == "running" and self._agenda and self._agenda[0][0] <= now:
                _, _, fn, args = heapq.heappop(self._agenda)
                fn(*args)
        except Exception as exc:
            log.failure("scenario-failed scenario={scenario}", scenario=self._scenario.name)
            self._error = f"{type(exc).__name__}: {exc}"
            self._finish("failed")
            return
        self._arm()

    # ---- rounds and steps ------------------------------------------------------------------------------------

    def _start_round(self) -> None:
        self._round_start = self.clock.seconds()
        self._ended_in_round = {}
        for step in self._scenario.steps:
            if not step.after:
                self._schedule_starts(step, self._round_start + step.at)

    def _schedule_starts(self, step: Step, first: float) -> None:
        for number in range(step.times):
            self._schedule(first + number * step.every, self._start_step, step, self._round, number)

    def _targets(self, step: Step, round_: int, number: int) -> list[tuple[str, object]]:
        """(label, target) in stable order: ONUs by (PON id, place on the PON), PONs by id; a fraction or count
        drawn with a Random seeded from the scenario's seed, the step, the round and the start's number."""
        kind, chosen = step.kind, step.targets
        if kind == OLT:
            return [("olt", None)]
        if kind == NNI:
            return [(f"nni {chosen.nni}", chosen.nni)]
        if kind == PON:
            ids = sorted(chosen.pons) if chosen.pons else sorted(pon.id for pon in self.olt.pons)
            candidates = [(f"pon {pon_id}", pon_id) for pon_id in ids]
        else:
            if chosen.onus:
                onus = [self.olt.onu_by_serial(serial) for serial in chosen.onus]
            elif chosen.pons:
                onus = [onu for pon_id in chosen.pons for onu in self.olt.pon(pon_id).onus]
            else:
                onus = self.olt.onus
            onus = sorted(onus, key=lambda onu: (onu.pon.id, onu.index))
            if chosen.state:
                onus = [onu for onu in onus if onu.state == chosen.state]
            candidates = [(onu.serial, onu) for onu in onus]
        if chosen.fraction is None and chosen.count is None:
            return candidates
        if chosen.fraction is not None:
            # the small epsilon keeps 0.7 of 10 at 7 (0.7 * 10 is 7.000000000000001 in floats)
            size = max(1, math.ceil(chosen.fraction * len(candidates) - 1e-9)) if candidates else 0
        else:
            size = min(chosen.count, len(candidates))
        rng = random.Random(f"{self._scenario.seed}:{step.name}:{round_}:{number}")
        picked = set(rng.sample(range(len(candidates)), size))
        return [candidate for i, candidate in enumerate(candidates) if i in picked]

    def _start_step(self, step: Step, round_: int, number: int) -> None:
        scenario = self._scenario
        chosen = self._targets(step, round_, number)
        now = self.clock.seconds()
        live = _Live(step, round_, number, tuple(label for label, _ in chosen), now,
                     now + step.duration if step.duration else 0.0)
        self._started += 1
        log.info("scenario-step-started scenario={scenario} step={step} action={action} start={start} "
                 "targets={count} first={first}", scenario=scenario.name, step=step.name, action=step.action,
                 start=self._started, count=len(chosen), first=",".join(live.targets[:4]) or "-")
        self.olt.emit(events.ScenarioEvent("scenario-step-started", scenario.name, step.name, step.action,
                                           live.targets))
        self._live.append(live)  # held from now: a failure half-way still undoes what was done
        reasons = []
        for label, target in chosen:
            try:
                undo = actions.act(self.olt, self.commands, step, target)
            except OltsimError as exc:
                reasons.append(f"{label}: {exc.message}")
                continue
            if undo is not None:
                live.undos.append((label, undo))
        self._refused(live, reasons, "refused")
        if step.duration:
            self._schedule(live.ends_at, self._end_step, live, "done")
        else:
            self._end_step(live, "done")

    def _refused(self, live: _Live, reasons: list[str], what: str) -> None:
        """Count refusals and log them as one line for the step: scenario-step-refused (the action) or
        scenario-step-undo-refused (its undo), with the count and the first reason."""
        if not reasons:
            return
        live.refusals += len(reasons)
        self._refusals += len(reasons)
        log.warn(f"scenario-step-{what} " "scenario={scenario} step={step} action={action} count={count} "
                 "first={first}", scenario=self._scenario.name, step=live.step.name, action=live.step.action,
                 count=len(reasons), first=reasons[0])

    def _undo(self, live: _Live) -> None:
        """Undo what `live` holds, latest first; refusals counted, never raised."""
        reasons = []
        for label, undo in reversed(live.undos):
            try:
                undo()
            except OltsimError as exc:
                reasons.append(f"{label}: {exc.message}")
            except Exception as exc:
                log.failure("scenario-undo-failed scenario={scenario} step={step} target={target}",
                            scenario=self._scenario.name, step=live.step.name, target=label)
                reasons.append(f"{label}: {type(exc).__name__}")
        live.undos.clear()
        self._refused(live, reasons, "undo-refused")

    def _end_step(self, live: _Live, outcome: str) -> None:
        scenario, step = self._scenario, live.step
        if live in self._live:
            self._live.remove(live)
        self._undo(live)
        self._ended += 1
        log.info("scenario-step-ended scenario={scenario} step={step} action={action} outcome={outcome} "
                 "refusals={refusals}", scenario=scenario.name, step=step.name, action=step.action,
                 outcome=outcome, refusals=live.refusals)
        self.olt.emit(events.ScenarioEvent("scenario-step-ended", scenario.name, step.name, step.action,
                                           live.targets, outcome, live.refusals))
        if outcome != "done":
            return
        ended = self._ended_in_round[step.name] = self._ended_in_round.get(step.name, 0) + 1
        if ended == step.times:
            now = self.clock.seconds()
            for later in scenario.steps:
                if later.after == step.name:
                    self._schedule_starts(later, now + later.wait)
        if sum(self._ended_in_round.values()) == sum(s.times for s in scenario.steps):
            self._round += 1
            if self._round < scenario.repeat:
                self._start_round()
            else:
                self._finish("done")

    def _finish(self, outcome: str) -> None:
        """End the scenario: the agenda dropped, held steps undone (latest first), scenario-ended emitted."""
        scenario = self._scenario
        self._cancel_call()
        self._agenda.clear()
        self._state = outcome  # set first: nothing below may start a step or arm the timer again
        for live in reversed(list(self._live)):
            try:
                self._end_step(live, outcome)
            except Exception:
                log.failure("scenario-step-end-failed scenario={scenario} step={step}", scenario=scenario.name,
                            step=live.step.name)
        self._live.clear()
        self._ended_at = self.clock.seconds()
        log.info("scenario-ended scenario={scenario} outcome={outcome} steps_started={started} "
                 "steps_ended={ended} refusals={refusals} elapsed={elapsed:.3f}", scenario=scenario.name,
                 outcome=outcome, started=self._started, ended=self._ended, refusals=self._refusals,
                 elapsed=self._ended_at - self._started_at)
        self.olt.emit(events.ScenarioEvent("scenario-ended", scenario.name, outcome=outcome,
                                           refusals=self._refusals))
