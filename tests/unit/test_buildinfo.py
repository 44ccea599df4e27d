"""/v1/version's commit hash and build time: recorded by setup.py at build, read from the git checkout when run from
one, "unknown" otherwise; never the empty strings BBSim answers."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from conftest import Sim, grpc_call
from oltsim._proto import bbsim_pb2
from oltsim.buildinfo import checkout_commit

REPO = Path(__file__).resolve().parents[2]
SHA = "0123456789abcdef0123456789abcdef01234567"


def test_version_fields_are_never_empty_on_rest_and_grpc():
    """GET /v1/version and the gRPC Version answer a commit hash and a build time, the same on both surfaces."""
    sim = Sim()
    reply = sim.rest.call("GET", "/v1/version")
    assert reply.code == 200
    assert reply.json["buildTime"] and reply.json["commitHash"]
    answer = grpc_call(sim.bbsim, "Version", bbsim_pb2.Empty())
    assert (answer.buildTime, answer.commitHash) == (reply.json["buildTime"], reply.json["commitHash"])


def test_the_commit_is_read_from_a_checkout(tmp_path):
    """A loose ref, a packed ref and a detached HEAD each give the commit; a directory that is no checkout gives
    ""."""
    git = tmp_path / "loose" / ".git"
    (git / "refs/heads").mkdir(parents=True)
    (git / "HEAD").write_text("ref: refs/heads/main\n")
    (git / "refs/heads/main").write_text(SHA + "\n")
    assert checkout_commit(tmp_path / "loose") == SHA
    git = tmp_path / "packed" / ".git"
    git.mkdir(parents=True)
    (git / "HEAD").write_text("ref: refs/heads/main\n")
    (git / "packed-refs").write_text(f"# pack-refs with: peeled\n{SHA} refs/heads/main\n")
    assert checkout_commit(tmp_path / "packed") == SHA
    git = tmp_path / "detached" / ".git"
    git.mkdir(parents=True)
    (git / "HEAD").write_text(SHA + "\n")
    assert checkout_commit(tmp_path / "detached") == SHA
    assert checkout_commit(tmp_path / "nothing") == ""


def test_the_build_records_the_commit_and_time(tmp_path):
    """setup.py's build_py writes oltsim/_build.py into the build (not the source tree) with the commit it is given
    and the time SOURCE_DATE_EPOCH fixes."""
    env = dict(os.environ, OLTSIM_COMMIT_HASH=SHA, SOURCE_DATE_EPOCH="86400")
    done = subprocess.run([sys.executable, "setup.py", "-q", "build_py", "--build-lib", str(tmp_path)], cwd=REPO,
                          env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    recorded: dict = {}
    exec((tmp_path / "oltsim" / "_build.py").read_text(), recorded)
    assert (recorded["COMMIT_HASH"], recorded["BUILD_TIME"]) == (SHA, "1970-01-02T00:00:00Z")
    assert not (REPO / "oltsim" / "_build.py").exists()
