"""Skeleton: the ScenarioRunner interface (docs/scenarios.md); the implementation follows."""
from __future__ import annotations


class ScenarioRunner:
    """Plays one scenario at a time on `olt` through the control API's use cases (`commands`)."""

    def __init__(self, olt, commands, clock=None):
        self.olt = olt
        self.commands = commands
        self.clock = clock if clock is not None else olt.clock

    def run(self, text: str, source: str = "api") -> dict:
        """Parse, validate and start a scenario; returns status()."""
        raise NotImplementedError

    def status(self) -> dict:
        """The running (or last) scenario's state."""
        return {"state": "idle", "name": "", "source": "", "seed": 0, "started_at": 0.0, "elapsed": 0.0,
                "steps_total": 0, "steps_started": 0, "steps_ended": 0, "refusals": 0, "current": [], "error": ""}

    def stop(self) -> dict:
        """Stop the running scenario and undo what it holds; idempotent."""
        return self.status()

    def close(self) -> None:
        """Daemon stop: like stop, never raises."""
