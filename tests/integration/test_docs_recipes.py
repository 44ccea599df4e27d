"""The recipes of the docs, run as written: docs/first-hour.md step by step against one daemon (each shell block
must print the text block that follows it), the REST examples of docs/examples.md (v1, events), docs/api.md (v0)
and docs/security.md (metrics, access token), the `oltsim-platform classify` / `plan` lines of docs/platform.md and
the jq line of docs/operations.md on the daemon's JSON log. Default ports in the recipes are replaced by the
daemon's loopback ports. The grpcurl and bbsimctl recipes of docs/examples.md run when those clients are installed
(on PATH, or named by OLTSIM_GRPCURL / OLTSIM_BBSIMCTL) and are skipped, saying so, otherwise; recipes that need
systemd, a controller or a package are not run here.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from test_daemon import REPO, Daemon, environment, listening

DEFAULT_PORTS = {"openolt": 50060, "grpc-v1": 50070, "rest-v1": 50071, "grpc-v0": 50072, "rest-v0": 50073,
                 "sadis": 50074}
BLOCK = re.compile(r"^```(\w*)\n(.*?)^```\n", re.S | re.M)
RUN_TIMEOUT = 60.0


def blocks(doc: str) -> list[tuple[str, str, int, int]]:
    """The fenced blocks of a doc: (language, text, start, end)."""
    text = (REPO / doc).read_text()
    return [(m.group(1), m.group(2), m.start(), m.end()) for m in BLOCK.finditer(text)]


def recipes_with_output(doc: str) -> list[tuple[str, str | None]]:
    """Each `sh` block of a doc with the `text` block right after it (only blank lines between), or None."""
    found = blocks(doc)
    out = []
    for i, (lang, text, _, end) in enumerate(found):
        if lang != "sh":
            continue
        expected = None
        if i + 1 < len(found):
            nlang, ntext, nstart, _ = found[i + 1]
            if nlang == "text" and not (REPO / doc).read_text()[end:nstart].strip():
                expected = ntext
        out.append((text, expected))
    return out


def localise(recipe: str, ports: dict) -> str:
    """The recipe on the daemon's ports, with this interpreter's environment for `.venv/bin/`."""
    for name, default in DEFAULT_PORTS.items():
        if name in ports:
            recipe = re.sub(rf"(localhost|127\.0\.0\.1):{default}\b", f"127.0.0.1:{ports[name]}", recipe)
    recipe = recipe.replace(".venv/bin/", str(Path(sys.executable).parent) + "/")
    return recipe.replace("PYTHONPATH=tests/integration", f"PYTHONPATH={REPO / 'tests' / 'integration'}")


def run(recipe: str, cwd: Path) -> subprocess.CompletedProcess:
    # This checkout's oltsim first (as the daemon tests run it), and this interpreter's scripts on PATH.
    env = environment()
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    return subprocess.run(["bash", "-e", "-c", recipe], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=RUN_TIMEOUT)


needs_jq = pytest.mark.skipif(shutil.which("jq") is None, reason="the recipes pipe through jq")


@pytest.fixture
def daemon(tmp_path):
    process = Daemon(tmp_path)
    try:
        process.wait_serving()
        yield process
    finally:
        process.close()


@needs_jq
def test_first_hour_walk_through_prints_what_the_page_shows(tmp_path, daemon):
    """Every shell block of docs/first-hour.md but the start (the fixture starts the same daemon) runs in order
    against one daemon and prints exactly the text block that follows it."""
    recipes = recipes_with_output("docs/first-hour.md")
    start, *steps = recipes
    assert "twistd -n --pidfile= oltsim" in start[0] and start[1] is None
    assert len(steps) == 3 and all(expected is not None for _, expected in steps)
    for recipe, expected in steps:
        result = run(localise(recipe, daemon.ports), tmp_path)
        assert result.returncode == 0, (recipe, result.stdout, result.stderr, daemon.log[-3000:])
        assert result.stdout == expected, (recipe, result.stdout, result.stderr)


def doc_block(doc: str, first_line: str) -> str:
    """The sh block of `doc` whose first line starts with `first_line`."""
    for lang, text, _, _ in blocks(doc):
        if lang == "sh" and text.startswith(first_line):
            return text
    raise AssertionError(f"no {doc} block starting with {first_line!r}")


def rest_lines(block: str) -> list[str]:
    return [line for line in block.splitlines() if line.startswith("curl ") and " -N " not in line]


@pytest.mark.parametrize("doc, first_line", [("docs/examples.md", "curl -s localhost:50071/v1/olt "),
                                             ("docs/api.md", "curl -s 'localhost:50073/v0/")])
def test_rest_examples_answer_json(tmp_path, daemon, doc, first_line):
    """Each curl line of the v1 (docs/examples.md) and v0 (docs/api.md) example blocks runs and gets a JSON answer
    (a 409 for an action the fresh OLT refuses is a JSON answer too), with no 5xx."""
    lines = rest_lines(doc_block(doc, first_line))
    assert len(lines) >= 3
    for line in lines:
        command = localise(line.split("  #")[0], daemon.ports) + " -w '\\n%{http_code}'"
        result = run(command, tmp_path)
        assert result.returncode == 0, (line, result.stderr)
        body, _, status = result.stdout.rpartition("\n")
        assert not status.startswith("5"), (line, result.stdout)
        json.loads(body)  # every answer is JSON


def test_events_example_streams(tmp_path, daemon):
    """The Server-Sent Events line of docs/examples.md connects and gets the stream's opening comment."""
    block = doc_block("docs/examples.md", "curl -N ")
    line = localise(block.strip(), daemon.ports)
    try:
        result = run(line.replace("curl -N", "curl -N --max-time 2", 1), tmp_path)
        output = result.stdout
    except subprocess.TimeoutExpired as exc:  # pragma: no cover - curl ends it first
        output = exc.stdout or ""
    assert output.startswith(": oltsim events"), output


def test_platform_classify_and_plan_recipes_run(tmp_path):
    """The classify and plan lines of docs/platform.md run (with a small site.yaml) and exit 0; the comment of
    each classify line names the class it prints."""
    (tmp_path / "site.yaml").write_text("stack: voltha\nnamespace: voltha\nkafka: kafka\netcd: etcd\n")
    ran = 0
    for lang, text, _, _ in blocks("docs/platform.md"):
        if lang != "sh":
            continue
        for line in text.replace("\\\n", " ").splitlines():
            if not line.startswith(("oltsim-platform classify", "oltsim-platform plan")):
                continue
            command, _, comment = line.partition("#")
            result = run(command, tmp_path)
            assert result.returncode == 0, (line, result.stdout, result.stderr)
            words = comment.split()
            if command.startswith("oltsim-platform classify") and words:
                assert f"runbook: {words[-1]} " in result.stdout or f": {words[-1]}" in result.stdout \
                    or f": {words[0].rstrip(',')}" in result.stdout, (line, result.stdout)
            ran += 1
    assert ran >= 6


class JsonLogDaemon(Daemon):
    """The daemon logging as under its systemd unit (`--logger oltsim_journal.json_observer`: one JSON object per
    line), so that the journal recipes can be run on its log file in place of `journalctl -u oltsim -o cat`."""

    def __init__(self, tmp_path: Path):
        import test_daemon
        from scripted_adapter import free_ports
        self.ports = dict(zip(test_daemon.LISTENERS, free_ports(len(test_daemon.LISTENERS))))
        listen = [arg for name, port in self.ports.items()
                  for arg in (f"--{name}", f"tcp:{port}:interface=127.0.0.1")]
        self.log_path = tmp_path / "oltsim.log"
        self._log = open(self.log_path, "w")
        env = environment()
        env["PYTHONPATH"] = os.pathsep.join([str(REPO / "packaging"), env["PYTHONPATH"]])
        self.process = subprocess.Popen(
            [*test_daemon.TWISTD, "-n", "--pidfile=", "--logger", "oltsim_journal.json_observer", "oltsim", *listen],
            cwd=tmp_path, env=env, stdout=self._log, stderr=subprocess.STDOUT)


@needs_jq
def test_operations_jq_recipe_reads_the_state_change_fields(tmp_path):
    """docs/operations.md's jq line, fed the daemon's JSON log instead of the journal, prints state changes with
    their device, serial, src and dest (the fields the log events really carry)."""
    recipe = next(line for lang, text, _, _ in blocks("docs/operations.md") if lang == "sh"
                  for line in text.splitlines() if "| jq " in line)
    process = JsonLogDaemon(tmp_path)
    try:
        process.wait_serving()
        result = run(recipe.replace("journalctl -u oltsim -o cat", f"cat {process.log_path}"), tmp_path)
    finally:
        process.close()
    assert result.returncode == 0, (recipe, result.stderr)
    changes = [json.loads(line) for line in result.stdout.splitlines()]
    olt = [c for c in changes if c.get("device") == "olt" and c.get("dest") == "initialized"]
    assert olt and olt[0]["src"] == "created" and "serial" in olt[0] and "log_time" in olt[0], result.stdout


def test_metrics_recipe_lists_the_onu_states(tmp_path, daemon):
    """The /metrics line of docs/security.md prints `oltsim_onus` series, one per state, the fresh ONU counted as
    created."""
    recipe = doc_block("docs/security.md", "curl -s localhost:50071/metrics").strip()
    result = run(localise(recipe, daemon.ports), tmp_path)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert len(lines) > 3 and all(line.startswith("oltsim_onus") for line in lines)
    assert 'oltsim_onus{state="created"} 1.0' in lines, lines


def test_token_recipe_reads_the_olt_with_the_token(tmp_path):
    """The curl line of docs/security.md with `Authorization: Bearer $(cat token)` gets the OLT from a daemon started
    with `--api-token-file token`; without the header the same URL answers 401."""
    (tmp_path / "token").write_text("s3cret-token\n")
    process = Daemon(tmp_path, "--api-token-file", str(tmp_path / "token"))
    try:
        deadline = time.monotonic() + 30
        while not listening(process.ports["rest-v1"]):  # wait_serving reads without the token
            assert process.process.poll() is None and time.monotonic() < deadline, process.log
            time.sleep(0.05)
        block = doc_block("docs/security.md", 'curl -H "Authorization')
        line = next(l for l in block.splitlines() if l.startswith("curl "))
        result = run(localise(line, process.ports) + " -s", tmp_path)
        refused = run(f"curl -s -o /dev/null -w '%{{http_code}}' 127.0.0.1:{process.ports['rest-v1']}/v1/olt",
                      tmp_path)
    finally:
        process.close()
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["SerialNumber"] == "BBSIM_OLT_0"
    assert refused.stdout == "401"


def _tool(name: str, variable: str) -> str | None:
    """A client the gRPC recipes of docs/examples.md use: `variable` names its path, else PATH has it."""
    given = os.environ.get(variable)
    return given if given and os.access(given, os.X_OK) else shutil.which(name)


GRPCURL = _tool("grpcurl", "OLTSIM_GRPCURL")
BBSIMCTL = _tool("bbsimctl", "OLTSIM_BBSIMCTL")


@pytest.mark.skipif(GRPCURL is None, reason="grpcurl is not installed; put it on PATH or set OLTSIM_GRPCURL to run "
                                            "these recipes")
def test_grpcurl_examples_run(tmp_path, daemon):
    """Each grpcurl line of docs/examples.md runs through server reflection and is answered: a result, or (for an action
    the fresh OLT refuses) a clear status; never INTERNAL, UNKNOWN or UNAVAILABLE. The event stream is read for 2 s."""
    block = doc_block("docs/examples.md", "grpcurl -plaintext localhost:50070 list")
    commands = block.replace("\\\n", " ").splitlines()
    assert len(commands) >= 5
    for line in commands:
        command = localise(line.strip(), daemon.ports).replace("grpcurl ", f"{GRPCURL} -max-time 2 ", 1)
        result = run(command + " || true", tmp_path)
        for bad in ("Code: Internal", "Code: Unknown", "Code: Unavailable", "Failed to dial"):
            assert bad not in result.stderr, (line, result.stderr)
        if "StreamEvents" not in line:
            assert result.stdout.strip() or "Code: FailedPrecondition" in result.stderr, (line, result.stderr)


@pytest.mark.skipif(BBSIMCTL is None, reason="bbsimctl is not installed (BBSim's Go CLI, built from its repository);"
                                             " set OLTSIM_BBSIMCTL to run this recipe")
def test_bbsimctl_example_lists_the_onus(tmp_path):
    """The bbsimctl line of docs/examples.md, as written, lists the ONUs in bbsimctl's table; bbsimctl 1.16.8 only
    talks to localhost:50070, so the daemon's v1 gRPC port is that one (the test skips when it is taken)."""
    if listening(DEFAULT_PORTS["grpc-v1"]):
        pytest.skip("port 50070 is in use, and bbsimctl 1.16.8 talks to no other")
    process = Daemon(tmp_path, "--grpc-v1", f"tcp:{DEFAULT_PORTS['grpc-v1']}:interface=127.0.0.1")
    try:
        process.wait_serving()
        block = doc_block("docs/examples.md", ".venv/bin/bbsimctl ")
        result = run(block.replace(".venv/bin/bbsimctl ", f"{BBSIMCTL} ", 1), tmp_path)
    finally:
        process.close()
    assert result.returncode == 0, result.stderr
    assert "SERIALNUMBER" in result.stdout and "BBSM00000001" in result.stdout, result.stdout
