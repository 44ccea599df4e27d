"""An interrupted test run stops promptly: SIGTERM or SIGINT (Ctrl-C) to pytest ends the run at once, as a
KeyboardInterrupt, instead of stopping the Twisted reactor under the remaining tests (each then failing with "twisted
reactor has stopped"), and the processes the tests started are gone when it exits (tests/conftest.py).

The outer test runs pytest on the inner one in a subprocess; the inner one runs only there (OLTSIM_INTERRUPT_PROBE
names a directory for its marks): it starts a child process, as the daemon tests do, and a blocking call on a worker
thread, as the browser tests do, says it is ready, and waits on the reactor, bounded, to be interrupted.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import pytest_twisted
from twisted.internet import reactor
from twisted.internet.task import deferLater
from twisted.internet.threads import deferToThread

REPO = Path(__file__).resolve().parents[2]
PROBE = os.environ.get("OLTSIM_INTERRUPT_PROBE")
READY_TIMEOUT = 60.0   # seconds the inner pytest may take to start and reach the waiting test
EXIT_TIMEOUT = 15.0    # seconds it may take to stop once signalled
INNER_WAIT = 120.0     # seconds the inner test waits when nobody interrupts it (then it fails)


@pytest.mark.skipif(PROBE is None, reason="runs only inside test_an_interrupted_run_stops_promptly")
@pytest_twisted.inlineCallbacks
def test_waits_to_be_interrupted():
    """(Inner) a child process started and a worker thread blocked in a call (as the browser tests' are), then a
    bounded wait on the reactor that only an interrupt ends early."""
    marks = Path(PROBE)
    child = subprocess.Popen(["sleep", str(int(INNER_WAIT))])
    deferToThread(time.sleep, INNER_WAIT)
    (marks / "child").write_text(str(child.pid))
    (marks / "ready").write_text("")
    yield deferLater(reactor, INNER_WAIT, lambda: None)
    child.kill()
    child.wait()
    pytest.fail("nobody interrupted the run")


def _alive(pid: int) -> bool:
    """Whether `pid` is a live process (a zombie, dead but not yet reaped by its parent, counts as gone)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rpartition(")")[2].split()[0] != "Z"
    except FileNotFoundError:
        return False


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_an_interrupted_run_stops_promptly(tmp_path, signum):
    """SIGTERM or SIGINT to a running pytest ends it within EXIT_TIMEOUT s with pytest's "interrupted" status (2),
    without a flood of "reactor has stopped" failures, and the child process its test started is gone."""
    env = dict(os.environ, OLTSIM_INTERRUPT_PROBE=str(tmp_path))
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q",
               f"{Path(__file__).relative_to(REPO)}::test_waits_to_be_interrupted"]
    log = tmp_path / "pytest.log"
    with log.open("w") as out:
        inner = subprocess.Popen(command, cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT,
                                 stdin=subprocess.DEVNULL)
    try:
        for _ in range(int(READY_TIMEOUT / 0.1)):
            if (tmp_path / "ready").exists() or inner.poll() is not None:
                break
            time.sleep(0.1)
        assert (tmp_path / "ready").exists(), f"the inner test did not start:\n{log.read_text()}"
        child = int((tmp_path / "child").read_text())
        inner.send_signal(signum)
        try:
            code = inner.wait(EXIT_TIMEOUT)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"pytest still ran {EXIT_TIMEOUT:g} s after {signum.name}:\n{log.read_text()}")
    finally:
        if inner.poll() is None:
            inner.kill()
            inner.wait()
    output = log.read_text()
    assert code == pytest.ExitCode.INTERRUPTED, f"exit status {code}:\n{output}"
    assert "reactor has stopped" not in output, output
    for _ in range(int(EXIT_TIMEOUT / 0.1)):
        if not _alive(child):
            break
        time.sleep(0.1)
    assert not _alive(child), f"the test's child process {child} outlived the interrupted run:\n{output}"
