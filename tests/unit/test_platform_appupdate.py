"""oltsim-platform app-update logic in memory: a scripted applications client and a task.Clock, no sockets."""
import io
from pathlib import Path

from twisted.internet.defer import fail, succeed
from twisted.internet.task import Clock

from oltsim.platform.appupdate import (EXIT_MANUAL, EXIT_ROLLED_BACK, EXIT_UNCHANGED, EXIT_UPDATED, AppUpdate, Timing,
                                       UpdateRequest, dry_run_json, dry_run_text)
from oltsim.platform.archive import AppArchive
from oltsim.platform.controller import AuthError, Conflict, Unreachable, parse_target
from oltsim.platform.progress import Progress

OLT = "org.opencord.olt"
TIMING = Timing(poll_interval=1.0, remove_timeout=10.0, ready_timeout=20.0)


class MemoryClient:
    """The client's methods over a dict of apps; `script` lets a test break a given call."""

    def __init__(self):
        self.apps = {OLT: {"name": OLT, "version": "5.2.7", "state": "ACTIVE", "bits": b"old"},
                     "org.opencord.sadis": {"name": "org.opencord.sadis", "version": "5.12.3", "state": "ACTIVE"}}
        self.script = {}   # method -> list of exceptions (or None for normal) consumed per call
        self.calls = []
        self.sticky_delete = False  # DELETE answers 204 but the app never goes

    def _scripted(self, method):
        self.calls.append(method)
        queue = self.script.get(method)
        if queue:
            exc = queue.pop(0)
            if exc is not None:
                return fail(exc)
        return None

    def get_app(self, name):
        return self._scripted("get_app") or succeed(dict(self.apps[name]) if name in self.apps else None)

    def list_apps(self):
        return self._scripted("list_apps") or succeed([dict(a) for a in self.apps.values()])

    def health(self, name):
        return self._scripted("health") or succeed("ready" if name in self.apps else None)

    def bits(self, name):
        return self._scripted("bits") or succeed(self.apps[name].get("bits", b""))

    def delete(self, name):
        if not self.sticky_delete:
            self.apps.pop(name, None)
        return self._scripted("delete") or succeed(None)

    def install(self, archive):
        broken = self._scripted("install")
        if broken:
            return broken
        version = "5.2.7" if archive == b"old" else "5.2.8"
        self.apps[OLT] = {"name": OLT, "version": version, "state": "ACTIVE", "bits": archive}
        return succeed(dict(self.apps[OLT]))

    def activate(self, name):
        self.apps[name]["state"] = "ACTIVE"
        return self._scripted("activate") or succeed(dict(self.apps[name]))


def start(client, tmp_path, **kwargs):
    """Start an update on a Clock; (deferred, clock, progress stream)."""
    clock = Clock()
    stream = io.StringIO()
    request = UpdateRequest(OLT, b"new", AppArchive(OLT, "5.2.8", ()), "5.2.8", Path(tmp_path),
                            timing=kwargs.pop("timing", TIMING), **kwargs)
    d = AppUpdate(client, clock, Progress(clock, stream), request).run()
    return d, clock, stream


def finish(d, clock, limit=200):
    """Advance the clock a second at a time until the run ends; the report."""
    for _ in range(limit):
        if d.called:
            break
        clock.advance(1.0)
    assert d.called, "the update did not finish"
    results = []
    d.addBoth(results.append)
    assert not clock.getDelayedCalls(), "a timer was left behind"
    return results[0]


def test_conflict_is_retried_after_deleting_again(tmp_path):
    """A 409 on install (the app is back) deletes it again and retries once before giving up."""
    client = MemoryClient()
    client.script["install"] = [Conflict("still installed (409): Application org.opencord.olt already installed")]
    report = finish(*start(client, tmp_path)[:2])
    assert report.exit_code == EXIT_UPDATED, report.text()
    assert client.calls.count("delete") == 2 and client.apps[OLT]["version"] == "5.2.8"
    assert [s.status for s in report.steps if s.step == "install"] == ["retry", "ok"]


def test_persistent_conflict_rolls_back(tmp_path):
    """Two 409s with one retry allowed fail the install; the rollback restores the old version."""
    client = MemoryClient()
    client.script["install"] = [Conflict("409 a"), Conflict("409 b")]
    report = finish(*start(client, tmp_path)[:2])
    assert report.exit_code == EXIT_ROLLED_BACK and report.failure == "install: 409 b"
    assert client.apps[OLT]["version"] == "5.2.7"


def test_app_that_never_goes_times_out_on_the_clock_and_needs_manual_action(tmp_path):
    """If DELETE answers 204 but the app stays, the wait ends at the timeout, and so does the rollback's."""
    client = MemoryClient()
    client.sticky_delete = True
    d, clock, stream = start(client, tmp_path)
    report = finish(d, clock)
    assert report.exit_code == EXIT_MANUAL and report.outcome == "rollback-failed"
    assert report.failure.startswith("removed: timed out after 10s: org.opencord.olt still installed")
    removed = [s for s in report.steps if s.step == "removed"][0]
    assert removed.elapsed == 10.0  # reactor-clock time, not wall time
    assert report.backup in report.problems[0] and "by hand" in report.problems[0]


def test_transient_errors_while_polling_are_retried(tmp_path):
    """A poll that gets no answer is tried again at the next interval instead of failing the update."""
    client = MemoryClient()
    client.script["health"] = [Unreachable("GET .../health: Connection refused"), None]
    report = finish(*start(client, tmp_path)[:2])
    assert report.exit_code == EXIT_UPDATED, report.text()
    healthy = [s for s in report.steps if s.step == "healthy"][0]
    assert healthy.elapsed == 1.0


def test_authentication_failure_while_polling_stops_at_once(tmp_path):
    """A 401 during a wait is not transient: the wait fails immediately and the rollback runs."""
    client = MemoryClient()
    client.script["health"] = [AuthError("refused (401)", 401)]
    report = finish(*start(client, tmp_path)[:2])
    assert report.failure == "healthy: refused (401)"
    assert [s for s in report.steps if s.step == "healthy"][0].elapsed == 0.0
    assert report.exit_code == EXIT_ROLLED_BACK


def test_nothing_changes_without_a_rollback_copy(tmp_path):
    """An empty archive from /bits stops the update before the DELETE."""
    client = MemoryClient()
    client.apps[OLT]["bits"] = b""
    report = finish(*start(client, tmp_path)[:2])
    assert report.exit_code == EXIT_UNCHANGED and "empty archive" in report.failure
    assert "delete" not in client.calls


def test_absent_app_is_not_installed_by_an_update(tmp_path):
    """Updating an app that is not installed is refused: there is nothing to roll back to."""
    client = MemoryClient()
    del client.apps[OLT]
    report = finish(*start(client, tmp_path)[:2])
    assert report.exit_code == EXIT_UNCHANGED and "is not installed" in report.failure


def test_watched_apps_must_be_active_before_the_update(tmp_path):
    """An explicit watch list naming an app that is not ACTIVE is refused before anything changes."""
    client = MemoryClient()
    client.apps["org.opencord.sadis"]["state"] = "INSTALLED"
    report = finish(*start(client, tmp_path, watch=("org.opencord.sadis",))[:2])
    assert report.exit_code == EXIT_UNCHANGED and "not ACTIVE before" in report.failure
    report = finish(*start(MemoryClient(), tmp_path, watch=())[:2])
    assert report.exit_code == EXIT_UPDATED and "watching 0 apps" in report.steps[0].detail


def test_progress_lines_carry_the_clock_time(tmp_path):
    """Each step prints one line with the seconds elapsed on the given clock."""
    client = MemoryClient()
    client.script["get_app"] = [None, None, Unreachable("GET ...: no answer within 10s")]
    d, clock, stream = start(client, tmp_path)
    finish(d, clock)
    lines = stream.getvalue().splitlines()
    assert lines[0].startswith("[    0.00s] read") and len(lines) == 8
    assert any(line.startswith("[    1.00s] active") for line in lines)


def test_dry_run_lists_the_calls_without_secrets():
    """The dry run shows method, URL and purpose of each call in order, and hides the password."""
    target = parse_target("http://karaf:secret@10.0.0.1:8181")
    request = UpdateRequest(OLT, b"x" * 10, AppArchive(OLT, "5.2.8", ()), "5.2.8", Path("bk"))
    text = dry_run_text(target, request, "olt.oar")
    assert "secret" not in text and "karaf:***@10.0.0.1" in text
    assert " 4. DELETE http://10.0.0.1:8181/onos/v1/applications/org.opencord.olt" in text
    assert " 6. POST   http://10.0.0.1:8181/onos/v1/applications?activate=true" in text
    assert "10 bytes of olt.oar" in text
    import json
    doc = json.loads(dry_run_json(target, request, "olt.oar"))
    assert [c["method"] for c in doc["calls"]] == ["GET", "GET", "GET", "DELETE", "GET", "POST", "GET", "GET", "GET"]


def test_cli_refuses_bad_input_before_contacting_the_controller(tmp_path, capsys):
    """A missing or foreign archive, a bad URL or a bad timeout end with exit 1 and 'nothing changed'."""
    import zipfile

    from oltsim.platform.cli import main
    oar = tmp_path / "aaa.oar"
    with zipfile.ZipFile(oar, "w") as z:
        z.writestr("app.xml", '<app name="org.opencord.aaa" version="2.11.3"/>')
    base = ["app-update", "--controller", "http://karaf:karaf@127.0.0.1:9", "--app", "olt"]
    assert main(base + ["--oar", str(tmp_path / "missing.oar")]) == 1
    assert main(base + ["--oar", str(oar)]) == 1
    assert "not org.opencord.olt" in capsys.readouterr().err
    assert main(["app-update", "--controller", "ftp://h", "--app", "aaa", "--oar", str(oar)]) == 1
    assert main(["app-update", "--controller", "http://h:8181", "--app", "aaa", "--oar", str(oar),
                 "--poll-interval", "0"]) == 1
    err = capsys.readouterr().err
    assert err.count("nothing changed") == 2 and "--poll-interval must be positive" in err
    assert main(["app-update", "--controller", "h:8181", "--app", "aaa", "--oar", str(oar), "--dry-run",
                 "--json"]) == 0
    assert '"expected_version": "2.11.3"' in capsys.readouterr().out
