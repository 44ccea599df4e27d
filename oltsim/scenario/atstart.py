"""The --scenario file (bbsim.scenario): read and checked before anything listens, then played once when the OLT
first comes up.

:func:`check_scenario` refuses, at start-up, a file that cannot be read or does not load (one line naming the
file, the step and the problem); :func:`check_scenario_targets` refuses one naming ONUs, PONs or an NNI the built
OLT does not have; :class:`ScenarioAtStart` is the daemon's service that plays it through the scenario runner.
"""
from __future__ import annotations

from twisted.application import service

from oltsim.config import ConfigError
from oltsim.logs import logger
from oltsim.model import events
from oltsim.model.errors import InvalidArgument, OltsimError
from oltsim.scenario import schema
from oltsim.scenario.schema import MAX_SCENARIO_BYTES

__all__ = ["ScenarioAtStart", "check_scenario", "check_scenario_targets", "read_scenario", "scenario_for_start"]

log = logger("oltsim.tap")


def read_scenario(path: str) -> str:
    """The text of the scenario file at `path`; ConfigError (naming the setting) if it cannot be read."""
    try:
        with open(path, "rb") as handle:
            raw = handle.read(MAX_SCENARIO_BYTES + 1)
    except FileNotFoundError:
        raise ConfigError(f"scenario file {path} does not exist", "scenario") from None
    except IsADirectoryError:
        raise ConfigError(f"scenario file {path} is a directory, not a file", "scenario") from None
    except OSError as error:
        raise ConfigError(f"scenario file {path} cannot be read: {error.strerror or error}", "scenario") from None
    if len(raw) > MAX_SCENARIO_BYTES:
        raise ConfigError(f"scenario file {path} is larger than {MAX_SCENARIO_BYTES // 1024} KiB", "scenario")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ConfigError(f"scenario file {path} is not UTF-8 text", "scenario") from None


def check_scenario(path: str) -> str | None:
    """The text of the scenario file at `path` (None without one) once it loads (oltsim.scenario.schema): a file
    that does not is refused now, with one line naming the file, the step and the problem."""
    if not path:
        return None
    text = read_scenario(path)
    try:
        schema.parse(text, path)
    except InvalidArgument as error:
        message = str(error)
        raise ConfigError(message if path in message else f"scenario file {path}: {message}", "scenario") from None
    return text


def check_scenario_targets(olt, scenario, path: str) -> None:
    """The ONUs, PONs and NNI the scenario names exist on `olt` (built, not started): ConfigError naming the file
    and the step otherwise, as the runner would refuse the file once the OLT is up."""
    for step in scenario.steps:
        try:
            for serial in step.targets.onus:
                olt.onu_by_serial(serial)
            for pon_id in step.targets.pons:
                olt.pon(pon_id)
            if step.kind == "nni":
                olt.nni(step.targets.nni)
        except OltsimError as exc:
            raise ConfigError(f"scenario file {path}: step {step.index} {step.name!r}: {exc}", "scenario") from None


def scenario_for_start(olt, path: str, text: str | None) -> str | None:
    """The text of the --scenario file at `path` (None without one) to play on `olt` (built, not started): `text`
    when the options have read and checked it already, else read and checked now; its targets are checked
    against `olt` (ConfigError naming the file and the step otherwise)."""
    if not path:
        return text
    if text is None:
        text = check_scenario(path)
    check_scenario_targets(olt, schema.parse(text, path), path)
    return text


class ScenarioAtStart(service.Service):
    """Plays the --scenario file once, when the OLT first comes up (enabled: an adapter, VOLTHA or the built-in
    one, has enabled it), through `runner` (oltsim.scenario.runner.ScenarioRunner), which its stop closes."""

    name = "scenario"

    def __init__(self, olt, runner, text: str | None, source: str, clock):
        self.olt = olt
        self.runner = runner
        self.text = text
        self.source = source
        self.clock = clock
        self._unsubscribe = None
        self._call = None

    def startService(self):
        super().startService()
        if self.text is None:
            return
        if self.olt.state == "enabled":
            self._call = self.clock.callLater(0, self._start)
        else:
            self._unsubscribe = self.olt.subscribe(self._on_event)

    def _on_event(self, event) -> None:
        if (isinstance(event, events.StateChanged) and event.device == "olt" and event.attribute == "InternalState"
                and event.dest == "enabled" and self._call is None):
            self._forget()
            # Not inside the model's emit: the scenario's first steps act on the model.
            self._call = self.clock.callLater(0, self._start)

    def _start(self) -> None:
        self._call = None
        text, self.text = self.text, None
        try:
            self.runner.run(text, source=self.source)
        except OltsimError as error:  # loaded at start; only a refusal of the moment (one running already)
            log.error("scenario-not-started source={source} reason={reason}", source=self.source, reason=str(error))
        except Exception:
            log.failure("scenario-start-failed source={source}", source=self.source)
        else:
            log.info("scenario-started-at-start source={source}", source=self.source)

    def _forget(self) -> None:
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None

    def stopService(self):
        super().stopService()
        self._forget()
        if self._call is not None and self._call.active():
            self._call.cancel()
        self._call = None
        try:
            self.runner.close()
        except Exception:
            log.failure("scenario-close-failed")
