"""The progress display: one line per finished step with the time elapsed since the start, on stderr.

Elapsed time comes from the clock the runner is given (the reactor, or a task.Clock in tests), so the display
shows what the procedure waited for, not wall time of the test host.
"""
from __future__ import annotations

import sys
from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class StepRecord:
    """One finished step: its name, ok/failed/skipped, seconds since the start, and what happened."""

    step: str
    status: str
    elapsed: float
    detail: str

    def as_dict(self) -> dict:
        """The record as a JSON-ready dict."""
        return asdict(self)


class Progress:
    """Writes `[  12.34s] step          ok      detail` lines and keeps them for the final report."""

    def __init__(self, clock, stream=None):
        self._clock = clock
        self._start = clock.seconds()
        self._stream = stream if stream is not None else sys.stderr
        self.records: list[StepRecord] = []

    def elapsed(self) -> float:
        """Seconds since the display was created."""
        return self._clock.seconds() - self._start

    def step(self, step: str, status: str, detail: str = "") -> StepRecord:
        """Record a finished step and print its line."""
        record = StepRecord(step, status, round(self.elapsed(), 3), detail)
        self.records.append(record)
        self._stream.write(f"[{record.elapsed:8.2f}s] {step:<18} {status:<7} {detail}".rstrip() + "\n")
        self._stream.flush()
        return record
