"""The controller-app minor update of section 9.4, verified, with automatic rollback (9.5).

Sequence (onos-applications-api.md, "What this implies for the update client"):

1. read     GET /applications/{app}: the installed name, version and state (absent: nothing to update), and
            GET /applications: the apps to watch (default: every other ACTIVE app) and the apps that require
            this one (the controller would uninstall them with it: refused, nothing changed).
2. backup   GET /applications/{app}/bits, written to the backup directory: the rollback copy.
3. delete   DELETE /applications/{app}, expecting 204.
4. removed  poll GET /applications/{app} until 404, while every watched app stays ACTIVE.
5. install  POST /applications?activate=true, application/octet-stream, the new archive: 200. 409 (still
            installed) deletes and waits again, up to `conflict_retries` times; 400 (bad archive or missing
            dependency) fails the update.
6. active   poll until state ACTIVE and the expected version (the store applies activation up to 2 s or more
            after the POST returns, so the POST's own answer is not trusted).
7. healthy  poll /health until `ready` (ACTIVE alone does not prove the app's components started).
8. verify   every watched app still ACTIVE.

Any failure or timeout after the backup rolls back: steps 3 to 7 again with the saved archive and the old
version, then watched apps that dropped to INSTALLED are re-activated, and the result is verified. Waiting uses
the reactor clock (`deferLater`); nothing sleeps.

Exit codes: 0 updated; 1 nothing changed (refused, unreachable, 401, ...); 3 update failed and the old version
was restored and verified; 4 rollback failed or incomplete: manual action needed (the report says what).
"""
from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path

from twisted.internet.defer import inlineCallbacks
from twisted.internet.task import deferLater

from oltsim.platform.archive import AppArchive
from oltsim.platform.catalog import onos_version
from oltsim.platform.controller import AuthError, Conflict, ControllerError, Target
from oltsim.platform.progress import Progress

EXIT_UPDATED = 0
EXIT_UNCHANGED = 1
EXIT_USAGE = 2
EXIT_ROLLED_BACK = 3
EXIT_MANUAL = 4


@dataclass(frozen=True)
class Timing:
    """How often to poll and how long each wait may take, in seconds of the reactor clock."""

    poll_interval: float = 1.0
    remove_timeout: float = 30.0
    ready_timeout: float = 120.0


@dataclass(frozen=True)
class UpdateRequest:
    """What to update: the app, the new archive and what it must become, where to keep the rollback copy."""

    app: str
    archive: bytes
    archive_info: AppArchive
    expected_version: str
    backup_dir: Path
    watch: tuple[str, ...] | None = None   # None: every other app ACTIVE at the start
    timing: Timing = Timing()
    conflict_retries: int = 1


@dataclass
class Report:
    """The outcome for people (text) and programs (JSON), with every step's record."""

    app: str
    outcome: str = "unchanged"
    exit_code: int = EXIT_UNCHANGED
    old_version: str | None = None
    new_version: str | None = None
    failure: str | None = None
    rollback: str | None = None
    backup: str | None = None
    problems: list[str] = field(default_factory=list)
    steps: list = field(default_factory=list)

    def as_dict(self) -> dict:
        """The report as a JSON-ready dict."""
        return {
            "app": self.app, "outcome": self.outcome, "exit_code": self.exit_code,
            "old_version": self.old_version, "new_version": self.new_version, "failure": self.failure,
            "rollback": self.rollback, "backup": self.backup, "problems": list(self.problems),
            "steps": [s.as_dict() for s in self.steps],
        }

    def text(self) -> str:
        """A short report: outcome, versions, the failure and what the rollback did."""
        lines = [f"app-update {self.app}: {self.outcome} (exit {self.exit_code})"]
        if self.old_version:
            lines.append(f"  installed before: {self.old_version}")
        if self.new_version:
            lines.append(f"  target version:   {self.new_version}")
        if self.backup:
            lines.append(f"  rollback archive: {self.backup}")
        if self.failure:
            lines.append(f"  failure:          {self.failure}")
        if self.rollback:
            lines.append(f"  rollback:         {self.rollback}")
        for problem in self.problems:
            lines.append(f"  ACTION NEEDED:    {problem}")
        return "\n".join(lines) + "\n"


class StepFailed(Exception):
    """A step did not reach its goal; `step` names it for the report."""

    def __init__(self, step: str, reason: str):
        super().__init__(f"{step}: {reason}")
        self.step = step
        self.reason = reason


def _state(app: dict | None) -> str:
    if app is None:
        return "absent"
    return f"{app.get('version', '?')} {app.get('state', '?')}"


class AppUpdate:
    """Runs one update against one controller; `run()` returns a Deferred firing with the Report.

    `client` is an ApplicationsClient (or anything with its methods), `clock` provides seconds() and callLater()
    (the reactor), `progress` the display.
    """

    def __init__(self, client, clock, progress: Progress, request: UpdateRequest):
        self._client = client
        self._clock = clock
        self._progress = progress
        self._request = request
        self._report = Report(request.app, new_version=request.expected_version)

    # ---- the procedure --------------------------------------------------------------------------

    @inlineCallbacks
    def run(self):
        """Update, verify, roll back on failure; fires with the Report (never fails for controller errors)."""
        report = self._report
        try:
            old, watched = yield self._read()
            saved = yield self._backup(old)
        except StepFailed as exc:
            report.failure = str(exc)
            return self._finish("unchanged", EXIT_UNCHANGED)
        try:
            yield self._swap(self._request.archive, self._request.expected_version, watched, "")
            yield self._verify_watched(watched, "verify")
        except StepFailed as exc:
            report.failure = str(exc)
        else:
            return self._finish("updated", EXIT_UPDATED)
        try:
            yield self._swap(saved, old["version"], None, "rollback-")
        except StepFailed as exc:
            report.rollback = f"failed: {exc}"
            report.problems.append(
                f"{self._request.app} is not running its old version {old['version']}: install {report.backup} "
                f"by hand (oltsim-platform app-update --oar {report.backup} ...)")
            return self._finish("rollback-failed", EXIT_MANUAL)
        problems = yield self._restore_watched(watched)
        report.problems.extend(problems)
        if problems:
            report.rollback = f"{self._request.app} {old['version']} ACTIVE and ready again; other apps not restored"
            return self._finish("rollback-incomplete", EXIT_MANUAL)
        report.rollback = f"verified: {self._request.app} {old['version']} ACTIVE and ready"
        return self._finish("rolled-back", EXIT_ROLLED_BACK)

    def _finish(self, outcome: str, code: int) -> Report:
        self._report.outcome = outcome
        self._report.exit_code = code
        self._report.steps = list(self._progress.records)
        return self._report

    @inlineCallbacks
    def _call(self, step: str, d):
        """Wait for a client call, turning controller errors into a failure of `step`."""
        try:
            result = yield d
        except ControllerError as exc:
            self._progress.step(step, "failed", exc.message)
            raise StepFailed(step, exc.message) from None
        return result

    @inlineCallbacks
    def _read(self):
        app = self._request.app
        old = yield self._call("read", self._client.get_app(app))
        if old is None:
            self._progress.step("read", "failed", f"{app} is not installed")
            raise StepFailed("read", f"{app} is not installed: nothing to update (install it with the controller's "
                                     f"own tools)")
        self._report.old_version = old.get("version")
        apps = yield self._call("read", self._client.list_apps())
        dependents = sorted(a["name"] for a in apps if app in (a.get("requiredApps") or []))
        if dependents:
            reason = (f"{', '.join(dependents)} require {app}: deleting it would uninstall them too, and this tool "
                      f"cannot reinstall them; update them together by hand (plan app-minor)")
            self._progress.step("read", "failed", reason)
            raise StepFailed("read", reason)
        if self._request.watch is None:
            watched = tuple(sorted(a["name"] for a in apps if a.get("state") == "ACTIVE" and a["name"] != app))
        else:
            watched = tuple(w for w in self._request.watch if w != app)
            states = {a["name"]: a.get("state") for a in apps}
            not_active = [w for w in watched if states.get(w) != "ACTIVE"]
            if not_active:
                reason = f"watched apps not ACTIVE before the update: {', '.join(not_active)}"
                self._progress.step("read", "failed", reason)
                raise StepFailed("read", reason)
        note = " (same version: reinstall)" if old.get("version") == self._request.expected_version else ""
        self._progress.step("read", "ok", f"{app} {_state(old)}; watching {len(watched)} apps{note}")
        return (old, watched)

    @inlineCallbacks
    def _backup(self, old: dict):
        app = self._request.app
        data = yield self._call("backup", self._client.bits(app))
        if not data:
            self._progress.step("backup", "failed", "the controller returned an empty archive")
            raise StepFailed("backup", "the controller returned an empty archive: no rollback copy, not updating")
        try:
            path = write_backup(self._request.backup_dir, app, old.get("version", "unknown"), data)
        except OSError as exc:
            self._progress.step("backup", "failed", str(exc))
            raise StepFailed("backup", f"cannot write the rollback copy: {exc}") from None
        self._report.backup = str(path)
        self._progress.step("backup", "ok", f"{len(data)} bytes -> {path}")
        return data

    @inlineCallbacks
    def _swap(self, archive: bytes, version: str, watched, prefix: str):
        """Delete, wait gone, install and activate, wait ACTIVE at `version` and ready."""
        app = self._request.app
        attempts = self._request.conflict_retries + 1
        for attempt in range(1, attempts + 1):
            yield self._call(prefix + "delete", self._client.delete(app))
            self._progress.step(prefix + "delete", "ok", "204")
            yield self._wait_removed(prefix + "removed", watched)
            try:
                installed = yield self._client.install(archive)
            except Conflict as exc:
                if attempt < attempts:
                    self._progress.step(prefix + "install", "retry", exc.message)
                    continue
                self._progress.step(prefix + "install", "failed", exc.message)
                raise StepFailed(prefix + "install", exc.message) from None
            except ControllerError as exc:
                self._progress.step(prefix + "install", "failed", exc.message)
                raise StepFailed(prefix + "install", exc.message) from None
            self._progress.step(prefix + "install", "ok", f"200: {_state(installed)}")
            break
        yield self._wait_active(prefix + "active", version)
        yield self._wait_healthy(prefix + "healthy")

    # ---- waits ----------------------------------------------------------------------------------

    @inlineCallbacks
    def _poll(self, step: str, timeout: float, probe):
        """Call probe() until it fires (True, detail) or the timeout passes; controller errors other than 401
        are retried (the controller may be busy), StepFailed from the probe ends the wait at once."""
        deadline = self._clock.seconds() + timeout
        interval = self._request.timing.poll_interval
        while True:
            try:
                done, detail = yield probe()
            except AuthError as exc:
                self._progress.step(step, "failed", exc.message)
                raise StepFailed(step, exc.message) from None
            except ControllerError as exc:
                done, detail = False, exc.message
            if done:
                self._progress.step(step, "ok", detail)
                return detail
            remaining = deadline - self._clock.seconds()
            if remaining <= 0:
                reason = f"timed out after {timeout:g}s: {detail}"
                self._progress.step(step, "failed", reason)
                raise StepFailed(step, reason)
            yield deferLater(self._clock, min(interval, remaining), lambda: None)

    def _wait_removed(self, step: str, watched):
        app = self._request.app

        @inlineCallbacks
        def probe():
            current = yield self._client.get_app(app)
            if watched:
                lost = yield self._lost(watched)
                if lost:
                    reason = f"watched apps no longer ACTIVE: {', '.join(lost)}"
                    self._progress.step(step, "failed", reason)
                    raise StepFailed(step, reason)
            if current is None:
                return (True, f"{app} gone" + (f"; {len(watched)} watched apps ACTIVE" if watched else ""))
            return (False, f"{app} still installed: {_state(current)}")
        return self._poll(step, self._request.timing.remove_timeout, probe)

    def _wait_active(self, step: str, version: str):
        app = self._request.app

        @inlineCallbacks
        def probe():
            current = yield self._client.get_app(app)
            if current and current.get("state") == "ACTIVE" and current.get("version") == version:
                return (True, f"{app} {version} ACTIVE")
            return (False, f"{app} is {_state(current)}, waiting for {version} ACTIVE")
        return self._poll(step, self._request.timing.ready_timeout, probe)

    def _wait_healthy(self, step: str):
        app = self._request.app

        @inlineCallbacks
        def probe():
            health = yield self._client.health(app)
            return (health == "ready", f"health {health or 'absent'}")
        return self._poll(step, self._request.timing.ready_timeout, probe)

    @inlineCallbacks
    def _lost(self, watched):
        """The watched apps that are not ACTIVE now."""
        apps = yield self._client.list_apps()
        states = {a["name"]: a.get("state") for a in apps}
        return [w for w in watched if states.get(w) != "ACTIVE"]

    @inlineCallbacks
    def _verify_watched(self, watched, step: str):
        if not watched:
            self._progress.step(step, "ok", "no apps to watch")
            return
        lost = yield self._call(step, self._lost(watched))
        if lost:
            reason = f"watched apps no longer ACTIVE: {', '.join(lost)}"
            self._progress.step(step, "failed", reason)
            raise StepFailed(step, reason)
        self._progress.step(step, "ok", f"{len(watched)} watched apps ACTIVE")

    @inlineCallbacks
    def _restore_watched(self, watched):
        """Re-activate watched apps that dropped to INSTALLED; the problems left (apps gone or not ACTIVE)."""
        step = "rollback-restore"
        try:
            apps = yield self._client.list_apps()
        except ControllerError as exc:
            self._progress.step(step, "failed", exc.message)
            return [f"could not check the watched apps: {exc.message}"]
        states = {a["name"]: a.get("state") for a in apps}
        gone = [w for w in watched if w not in states]
        inactive = [w for w in watched if states.get(w) == "INSTALLED"]
        problems = [f"{w} was uninstalled and cannot be restored by this tool: reinstall it by hand" for w in gone]
        for name in inactive:
            try:
                yield self._client.activate(name)
            except ControllerError as exc:
                problems.append(f"{name} could not be re-activated: {exc.message}")
        if inactive:
            try:
                yield self._poll("rollback-reactivate", self._request.timing.ready_timeout, self._all_active(inactive))
            except StepFailed as exc:
                problems.append(f"re-activated apps did not become ACTIVE: {exc.reason}")
        if problems:
            self._progress.step(step, "failed", "; ".join(problems))
        else:
            self._progress.step(step, "ok", f"{len(watched)} watched apps ACTIVE")
        return problems

    def _all_active(self, names):
        @inlineCallbacks
        def probe():
            lost = yield self._lost(names)
            return (not lost, f"re-activated {', '.join(names)}" if not lost else f"not ACTIVE: {', '.join(lost)}")
        return probe


def write_backup(directory: Path, app: str, version: str, data: bytes) -> Path:
    """Write the rollback archive as `<app>-<version>.oar` in `directory`, atomically, never overwriting a
    different file (a second copy gets `.1`, `.2`, ...); an identical existing file is reused."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    safe = "".join(c if c.isalnum() or c in "._-" else "_" for c in f"{app}-{version}")
    digest = hashlib.sha256(data).digest()
    for n in range(1000):
        path = directory / (f"{safe}.oar" if n == 0 else f"{safe}.{n}.oar")
        if path.exists():
            if hashlib.sha256(path.read_bytes()).digest() == digest:
                return path
            continue
        tmp = path.with_name(path.name + ".tmp")
        with open(tmp, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
        return path
    raise OSError(f"too many rollback copies of {app} {version} in {directory}")


def expected_version(info: AppArchive, app: str, given: str | None) -> str:
    """The version to wait for: the archive's, checked against `--expect-version` and the app name."""
    if info.name != app:
        raise ValueError(f"the archive is {info.name} {info.version}, not {app}")
    if given is not None and onos_version(given) != info.version:
        raise ValueError(f"the archive is version {info.version}, not {onos_version(given)} as expected")
    return info.version


def planned_calls(target: Target, request: UpdateRequest, archive_name: str) -> list[tuple[str, str, str]]:
    """The calls a run makes, in order, as (method, URL, what for): what `--dry-run` prints."""
    app, t = request.app, request.timing
    every = f"every {t.poll_interval:g}s"
    watch = ("every other ACTIVE app" if request.watch is None
             else (", ".join(request.watch) if request.watch else "none"))
    auth = f"HTTP Basic as {target.user}" if target.user is not None else "no credentials"
    calls = [
        ("GET", target.url("applications", app), f"read the installed version and state ({auth})"),
        ("GET", target.url("applications"), f"apps to watch ({watch}); refuse if another app requires {app}"),
        ("GET", target.url("applications", app, "bits"),
         f"save the installed archive in {request.backup_dir}/ as the rollback copy"),
        ("DELETE", target.url("applications", app), "expect 204"),
        ("GET", target.url("applications", app),
         f"{every} up to {t.remove_timeout:g}s until 404; GET {target.url('applications')}: watched apps ACTIVE"),
        ("POST", target.url("applications", query="activate=true"),
         f"Content-Type: application/octet-stream, {len(request.archive)} bytes of {archive_name}; expect 200 "
         f"(409: delete again, up to {request.conflict_retries} times; 400: roll back)"),
        ("GET", target.url("applications", app),
         f"{every} up to {t.ready_timeout:g}s until ACTIVE with version {request.expected_version}"),
        ("GET", target.url("applications", app, "health"), f"{every} up to {t.ready_timeout:g}s until ready"),
        ("GET", target.url("applications"), "verify the watched apps are still ACTIVE"),
    ]
    return calls


def dry_run_text(target: Target, request: UpdateRequest, archive_name: str) -> str:
    """The dry-run listing: the calls, then what happens on failure."""
    lines = [f"app-update {request.app} -> {request.expected_version} on {target.display()} (dry run: nothing sent)"]
    for n, (method, url, why) in enumerate(planned_calls(target, request, archive_name), 1):
        lines.append(f"{n:2}. {method:<6} {url}")
        lines.append(f"        {why}")
    lines.append("On any failure or timeout after step 3: DELETE, wait for 404, POST the saved archive with "
                 "activate=true, wait for the old version ACTIVE and ready, re-activate watched apps that dropped "
                 "to INSTALLED (POST /applications/{name}/active), exit 3 (or 4 if that fails).")
    return "\n".join(lines) + "\n"


def dry_run_json(target: Target, request: UpdateRequest, archive_name: str) -> str:
    """The dry-run listing as JSON."""
    calls = [{"method": m, "url": u, "purpose": w} for m, u, w in planned_calls(target, request, archive_name)]
    return json.dumps({"app": request.app, "expected_version": request.expected_version,
                       "controller": target.display(), "calls": calls}, indent=2) + "\n"
