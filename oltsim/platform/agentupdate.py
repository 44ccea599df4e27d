"""The minor OLT-agent update of section 9.9, applied to oltsim on its own host.

Installing a newer oltsim .deb over a running one is the agent's minor update (oltsim-decisions.md section 6):
the package's scripts restart the service, which comes back with a new heartbeat signature and the same serial
and device id, so the adapter sees an OLT reboot and re-provisions. This runner:

1. refuses where it cannot work (not root, no dpkg, no systemd, no package file), changing nothing;
2. reads the agent's identity over the OpenOLT gRPC API (HeartbeatCheck, GetDeviceInfo) at `--address`;
3. installs the package (`dpkg -i`);
4. waits until systemd reports the service active and HeartbeatCheck answers with a new signature;
5. verifies: signature changed, serial number and device id unchanged.

GetDeviceInfo is called once before and once after the restart (after the new signature is seen). On oltsim it
sets the `previously_connected` flag the adapter also reads; the adapter detects the reboot by the signature.
"""
from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field

from twisted.internet.defer import inlineCallbacks
from twisted.internet.task import deferLater

from oltsim.platform.progress import Progress

EXIT_OK = 0
EXIT_REFUSED = 1
EXIT_MANUAL = 4


@dataclass(frozen=True)
class Identity:
    """What the agent says about itself: serial number, device id (the MAC the stack derives the datapath from),
    and the heartbeat signature (the time its gRPC server started)."""

    serial: str
    device_id: str
    signature: int


def verify(before: Identity, after: Identity) -> list[str]:
    """What is wrong with `after` as the same OLT restarted with a new agent; empty when all is well."""
    problems = []
    if after.signature == before.signature:
        problems.append(f"heartbeat signature unchanged ({before.signature}): the agent did not restart, the "
                        f"adapter will not see a reboot")
    if after.serial != before.serial:
        problems.append(f"serial number changed from {before.serial} to {after.serial}: the stack would see a "
                        f"different OLT")
    if after.device_id != before.device_id:
        problems.append(f"device id changed from {before.device_id} to {after.device_id}: the controller would see "
                        f"a new switch")
    return problems


@dataclass(frozen=True)
class Host:
    """The facts about the host the refusal checks need; injectable so tests need no root, dpkg or systemd."""

    euid: int
    has_dpkg: bool
    has_systemctl: bool
    systemd_running: bool

    @classmethod
    def probe(cls) -> "Host":
        """The facts of this host."""
        return cls(euid=os.geteuid(), has_dpkg=shutil.which("dpkg") is not None,
                   has_systemctl=shutil.which("systemctl") is not None,
                   systemd_running=os.path.isdir("/run/systemd/system"))


def refusals(host: Host, deb: str, deb_exists: bool) -> list[str]:
    """Why agent-update cannot run here; empty when it can."""
    reasons = []
    if host.euid != 0:
        reasons.append(f"agent-update must run as root (dpkg -i and the service restart need it); running as "
                       f"uid {host.euid}: try sudo")
    if not host.has_dpkg:
        reasons.append("dpkg not found: agent-update installs a Debian package and runs only on the Debian-based "
                       "oltsim host itself")
    if not host.has_systemctl or not host.systemd_running:
        reasons.append("systemd is not running here (no systemctl or no /run/systemd/system): the oltsim service "
                       "cannot be watched; install the package by hand and restart oltsim")
    if not deb_exists:
        reasons.append(f"package not found: {deb}")
    elif not deb.endswith(".deb"):
        reasons.append(f"{deb} is not a .deb package")
    return reasons


@dataclass(frozen=True)
class AgentOptions:
    """What to install, which service and agent address to watch, and how long to wait."""

    deb: str
    address: str = "127.0.0.1:50060"
    service: str = "oltsim"
    timeout: float = 120.0
    poll_interval: float = 1.0


@dataclass
class AgentReport:
    """The outcome of an agent update."""

    outcome: str = "unchanged"
    exit_code: int = EXIT_REFUSED
    before: Identity | None = None
    after: Identity | None = None
    problems: list[str] = field(default_factory=list)
    steps: list = field(default_factory=list)

    def as_dict(self) -> dict:
        """The report as a JSON-ready dict."""
        def ident(i):
            return None if i is None else {"serial": i.serial, "device_id": i.device_id, "signature": i.signature}
        return {"outcome": self.outcome, "exit_code": self.exit_code, "before": ident(self.before),
                "after": ident(self.after), "problems": list(self.problems),
                "steps": [s.as_dict() for s in self.steps]}

    def text(self) -> str:
        """A short report."""
        lines = [f"agent-update: {self.outcome} (exit {self.exit_code})"]
        if self.before:
            lines.append(f"  before: serial {self.before.serial}, device id {self.before.device_id}, "
                         f"signature {self.before.signature}")
        if self.after:
            lines.append(f"  after:  serial {self.after.serial}, device id {self.after.device_id}, "
                         f"signature {self.after.signature}")
        lines += [f"  {'refused' if self.exit_code == EXIT_REFUSED else 'ACTION NEEDED'}: {p}" for p in self.problems]
        return "\n".join(lines) + "\n"


class OpenoltProbe:
    """Reads an Identity over the OpenOLT gRPC API; each call runs in a thread (grpc is blocking).

    Plain TCP by default, as the adapter connects; with `ca_file` (PEM) the OpenOLT endpoint is expected to serve
    TLS (an `ssl:` listener) with a certificate for the host of `address`.
    """

    def __init__(self, address: str, timeout: float = 2.0, ca_file: str | None = None):
        self._address = address
        self._timeout = timeout
        self._root_certificates = None
        if ca_file is not None:
            with open(ca_file, "rb") as f:
                self._root_certificates = f.read()

    def _channel(self):
        import grpc
        if self._root_certificates is None:
            return grpc.insecure_channel(self._address)
        return grpc.secure_channel(self._address, grpc.ssl_channel_credentials(self._root_certificates))

    def _call(self, method: str):
        from voltha_protos import openolt_pb2, openolt_pb2_grpc
        with self._channel() as channel:
            stub = openolt_pb2_grpc.OpenoltStub(channel)
            return getattr(stub, method)(openolt_pb2.Empty(), timeout=self._timeout)

    def signature(self):
        """Deferred: the heartbeat signature."""
        from twisted.internet.threads import deferToThread
        return deferToThread(lambda: int(self._call("HeartbeatCheck").heartbeat_signature))

    def identity(self):
        """Deferred: serial, device id and signature."""
        from twisted.internet.threads import deferToThread

        def read():
            signature = int(self._call("HeartbeatCheck").heartbeat_signature)
            info = self._call("GetDeviceInfo")
            return Identity(info.device_serial_number, info.device_id, signature)
        return deferToThread(read)


class AgentUpdate:
    """Runs one agent update; `run()` fires with the AgentReport.

    `probe` has identity() and signature() returning Deferreds; `run_command(argv)` returns a Deferred firing
    (stdout, stderr, exit code); `clock` is the reactor. All three are injected so the logic is testable.
    """

    def __init__(self, options: AgentOptions, host: Host, deb_exists: bool, probe, run_command, clock,
                 progress: Progress):
        self._o = options
        self._host = host
        self._deb_exists = deb_exists
        self._probe = probe
        self._run = run_command
        self._clock = clock
        self._progress = progress
        self._report = AgentReport()

    def _finish(self, outcome: str, code: int) -> AgentReport:
        self._report.outcome = outcome
        self._report.exit_code = code
        self._report.steps = list(self._progress.records)
        return self._report

    @inlineCallbacks
    def run(self):
        """Check, read, install, wait, verify."""
        report, o = self._report, self._o
        reasons = refusals(self._host, o.deb, self._deb_exists)
        if reasons:
            report.problems = reasons
            self._progress.step("check", "refused", reasons[0])
            return self._finish("refused", EXIT_REFUSED)
        self._progress.step("check", "ok", f"root, dpkg and systemd present; {o.deb}")
        try:
            report.before = yield self._probe.identity()
        except Exception as exc:  # any gRPC failure: we cannot compare afterwards, so we do not start
            reason = f"cannot read the agent's identity at {o.address}: {_short(exc)}"
            report.problems = [reason]
            self._progress.step("before", "refused", reason)
            return self._finish("refused", EXIT_REFUSED)
        b = report.before
        self._progress.step("before", "ok", f"serial {b.serial}, device id {b.device_id}, signature {b.signature}")
        out, err, code = yield self._run(["dpkg", "-i", o.deb])
        if code != 0:
            tail = (err or out).decode("utf-8", "replace").strip().splitlines()[-3:]
            reason = f"dpkg -i {o.deb} exited {code}: {' / '.join(tail)}; check `systemctl status {o.service}`"
            report.problems = [reason]
            self._progress.step("install", "failed", reason)
            return self._finish("install-failed", EXIT_MANUAL)
        self._progress.step("install", "ok", f"dpkg -i {o.deb}")
        try:
            yield self._wait_restarted(b.signature)
        except _Timeout as exc:
            report.problems = [str(exc)]
            return self._finish("not-restarted", EXIT_MANUAL)
        try:
            report.after = yield self._probe.identity()
        except Exception as exc:
            reason = f"the agent stopped answering after the restart: {_short(exc)}"
            report.problems = [reason]
            self._progress.step("verify", "failed", reason)
            return self._finish("not-verified", EXIT_MANUAL)
        problems = verify(b, report.after)
        if problems:
            report.problems = problems
            self._progress.step("verify", "failed", "; ".join(problems))
            return self._finish("not-verified", EXIT_MANUAL)
        a = report.after
        self._progress.step("verify", "ok", f"signature {b.signature} -> {a.signature}, serial {a.serial} kept")
        return self._finish("updated", EXIT_OK)

    @inlineCallbacks
    def _wait_restarted(self, old_signature: int):
        o = self._o
        deadline = self._clock.seconds() + o.timeout
        while True:
            _, _, code = yield self._run(["systemctl", "is-active", "--quiet", o.service])
            active = code == 0
            detail = f"{o.service} {'active' if active else 'not active'}"
            if active:
                try:
                    signature = yield self._probe.signature()
                except Exception as exc:
                    detail += f", agent not answering ({_short(exc)})"
                else:
                    if signature != old_signature:
                        self._progress.step("restarted", "ok", f"{o.service} active, new signature {signature}")
                        return signature
                    detail += f", signature still {signature}"
            remaining = deadline - self._clock.seconds()
            if remaining <= 0:
                reason = f"timed out after {o.timeout:g}s: {detail}"
                self._progress.step("restarted", "failed", reason)
                raise _Timeout(reason)
            yield deferLater(self._clock, min(o.poll_interval, remaining), lambda: None)


class _Timeout(Exception):
    pass


def _short(exc: Exception) -> str:
    """One line about an exception (gRPC errors carry their status and details)."""
    code = getattr(exc, "code", None)
    details = getattr(exc, "details", None)
    if callable(code) and callable(details):
        try:
            return f"{code().name}: {details()}"
        except Exception:
            pass
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__


def run_command(argv):
    """Run a command without a shell; Deferred (stdout, stderr, exit code)."""
    from twisted.internet import utils
    executable = shutil.which(argv[0]) or argv[0]  # spawnProcess does not search PATH
    return utils.getProcessOutputAndValue(executable, argv[1:], env=os.environ)
