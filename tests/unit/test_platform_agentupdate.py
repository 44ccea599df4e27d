"""oltsim-platform agent-update: the refusals and the verification logic, with fake host, probe and commands."""
import io

import pytest
from twisted.internet.defer import fail, succeed
from twisted.internet.task import Clock

from oltsim.platform.agentupdate import (EXIT_MANUAL, EXIT_OK, EXIT_REFUSED, AgentOptions, AgentUpdate, Host, Identity,
                                         refusals, verify)
from oltsim.platform.progress import Progress

ROOT_HOST = Host(euid=0, has_dpkg=True, has_systemctl=True, systemd_running=True)
BEFORE = Identity("BBSIM_OLT_0", "0a:0a:0a:0a:0a:00", 1700000000)


@pytest.mark.parametrize("host, deb, exists, expected", [
    (ROOT_HOST, "/tmp/oltsim_1.1_amd64.deb", True, []),
    (Host(1000, True, True, True), "/tmp/o.deb", True, ["must run as root"]),
    (Host(0, False, True, True), "/tmp/o.deb", True, ["dpkg not found"]),
    (Host(0, True, False, True), "/tmp/o.deb", True, ["systemd is not running"]),
    (Host(0, True, True, False), "/tmp/o.deb", True, ["systemd is not running"]),
    (ROOT_HOST, "/tmp/missing.deb", False, ["package not found"]),
    (ROOT_HOST, "/tmp/oltsim.tar.gz", True, ["not a .deb"]),
    (Host(1000, False, False, False), "/tmp/o.deb", False, ["root", "dpkg", "systemd", "not found"]),
], ids=["ok", "not-root", "no-dpkg", "no-systemctl", "no-systemd", "no-file", "not-deb", "everything"])
def test_refusals_say_why(host, deb, exists, expected):
    """Each missing precondition gives one clear reason; a fit host gives none."""
    reasons = refusals(host, deb, exists)
    assert len(reasons) == len(expected)
    for reason, word in zip(reasons, expected):
        assert word in reason


@pytest.mark.parametrize("after, problems", [
    (Identity("BBSIM_OLT_0", "0a:0a:0a:0a:0a:00", 1700000100), []),
    (Identity("BBSIM_OLT_0", "0a:0a:0a:0a:0a:00", 1700000000), ["signature unchanged"]),
    (Identity("BBSIM_OLT_1", "0a:0a:0a:0a:0a:00", 1700000100), ["serial number changed"]),
    (Identity("BBSIM_OLT_0", "0a:0a:0a:0a:0a:01", 1700000100), ["device id changed"]),
    (Identity("X", "Y", 1700000000), ["signature unchanged", "serial number changed", "device id changed"]),
])
def test_verification_wants_a_new_signature_and_the_same_olt(after, problems):
    """A minor agent update is a reboot of the same OLT: new heartbeat signature, same serial and device id."""
    found = verify(BEFORE, after)
    assert len(found) == len(problems) and all(p in f for p, f in zip(problems, found))


class FakeProbe:
    """Identities and signatures in order; an exception in the list fails that call."""

    def __init__(self, identities, signatures=()):
        self.identities = list(identities)
        self.signatures = list(signatures)

    @staticmethod
    def _next(items):
        item = items.pop(0)
        return fail(item) if isinstance(item, Exception) else succeed(item)

    def identity(self):
        return self._next(self.identities)

    def signature(self):
        return self._next(self.signatures)


class FakeCommands:
    """Records argv; answers from a table of command name -> list of exit codes (last one repeats)."""

    def __init__(self, codes):
        self.codes = codes
        self.argv = []

    def __call__(self, argv):
        self.argv.append(argv)
        codes = self.codes[argv[0]]
        code = codes.pop(0) if len(codes) > 1 else codes[0]
        return succeed((b"", b"dpkg: error processing archive\n" if code else b"", code))


def run(host, probe, commands, timeout=10.0, exists=True):
    """Run an agent update on a Clock; (report, progress text, commands)."""
    clock = Clock()
    stream = io.StringIO()
    options = AgentOptions("/tmp/oltsim_1.1_amd64.deb", timeout=timeout, poll_interval=1.0)
    d = AgentUpdate(options, host, exists, probe, commands, clock, Progress(clock, stream)).run()
    for _ in range(100):
        if d.called:
            break
        clock.advance(1.0)
    results = []
    d.addBoth(results.append)
    assert not clock.getDelayedCalls()
    return results[0], stream.getvalue(), commands


def test_refused_host_runs_nothing():
    """Not root: refused with exit 1, no probe call and no command run."""
    commands = FakeCommands({})
    report, progress, _ = run(Host(1000, True, True, True), FakeProbe([]), commands)
    assert report.exit_code == EXIT_REFUSED and report.outcome == "refused"
    assert commands.argv == [] and "must run as root" in report.text()
    assert progress.split("]", 1)[1].split()[:2] == ["check", "refused"]


def test_unreachable_agent_is_refused_before_installing():
    """Without the current identity nothing could be verified, so nothing is installed."""
    commands = FakeCommands({})
    report, _, _ = run(ROOT_HOST, FakeProbe([ConnectionError("failed to connect to all addresses")]), commands)
    assert report.exit_code == EXIT_REFUSED and "cannot read the agent's identity" in report.problems[0]
    assert commands.argv == []


def test_successful_update_waits_for_the_service_and_a_new_signature():
    """dpkg -i, then poll until systemd says active and the heartbeat signature changed; then verify."""
    after = Identity(BEFORE.serial, BEFORE.device_id, BEFORE.signature + 77)
    probe = FakeProbe([BEFORE, after], [BEFORE.signature, ConnectionError("restarting"), after.signature])
    commands = FakeCommands({"dpkg": [0], "systemctl": [3, 0]})
    report, progress, _ = run(ROOT_HOST, probe, commands)
    assert report.exit_code == EXIT_OK and report.outcome == "updated", report.text()
    assert commands.argv[0] == ["dpkg", "-i", "/tmp/oltsim_1.1_amd64.deb"]
    assert commands.argv[1] == ["systemctl", "is-active", "--quiet", "oltsim"]
    steps = [line.split("]", 1)[1].split()[:2] for line in progress.splitlines()]
    assert steps == [["check", "ok"], ["before", "ok"], ["install", "ok"], ["restarted", "ok"], ["verify", "ok"]]
    assert "[    3.00s] restarted" in progress


def test_changed_serial_fails_verification():
    """A package that brings the agent back as another OLT is reported for manual action."""
    after = Identity("BBSIM_OLT_7", BEFORE.device_id, BEFORE.signature + 1)
    report, _, _ = run(ROOT_HOST, FakeProbe([BEFORE, after], [after.signature]),
                       FakeCommands({"dpkg": [0], "systemctl": [0]}))
    assert report.exit_code == EXIT_MANUAL and "serial number changed" in report.problems[0]


def test_agent_that_does_not_restart_times_out():
    """If the signature never changes, the wait ends at the timeout with exit 4."""
    report, progress, _ = run(ROOT_HOST, FakeProbe([BEFORE], [BEFORE.signature] * 20),
                              FakeCommands({"dpkg": [0], "systemctl": [0]}), timeout=5.0)
    assert report.exit_code == EXIT_MANUAL and report.outcome == "not-restarted"
    assert "timed out after 5s" in report.problems[0] and "signature still" in report.problems[0]


def test_failed_install_reports_dpkg_output():
    """A failing dpkg ends the run with its output, for manual action."""
    report, _, commands = run(ROOT_HOST, FakeProbe([BEFORE]), FakeCommands({"dpkg": [1]}))
    assert report.exit_code == EXIT_MANUAL and "exited 1" in report.problems[0]
    assert "dpkg: error processing archive" in report.problems[0] and len(commands.argv) == 1
