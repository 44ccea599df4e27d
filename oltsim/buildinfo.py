"""Which commit this oltsim was built from and when: what `/v1/version` (and the gRPC Version) answer.

A wheel built by setup.py carries them in `oltsim/_build.py` (written at build, never in the source tree). Run from
a git checkout without a build, the commit is read from the checkout's `.git` (files only: no git process) and the
build time is unknown. Neither is ever an empty string: "unknown" says so plainly.
"""
from __future__ import annotations

import functools
from pathlib import Path

UNKNOWN = "unknown"


@functools.cache
def build_info() -> tuple[str, str]:
    """(commit hash, build time as ISO 8601 UTC), each "unknown" when nothing recorded it."""
    try:
        from oltsim import _build  # type: ignore[attr-defined]  # generated at build
    except ImportError:
        return checkout_commit(Path(__file__).resolve().parent.parent) or UNKNOWN, UNKNOWN
    return getattr(_build, "COMMIT_HASH", "") or UNKNOWN, getattr(_build, "BUILD_TIME", "") or UNKNOWN


def checkout_commit(root: Path) -> str:
    """The commit HEAD names in the git checkout at `root` ("" when `root` is not one, or it cannot be read)."""
    try:
        git = root / ".git"
        if git.is_file():  # a worktree: `gitdir: <path>`
            git = (root / git.read_text().partition("gitdir:")[2].strip()).resolve()
        head = (git / "HEAD").read_text().strip()
        if not head.startswith("ref:"):
            return head  # detached HEAD
        ref = head[4:].strip()
        common = git / "commondir"
        base = (git / common.read_text().strip()).resolve() if common.is_file() else git
        for directory in (git, base):
            loose = directory / ref
            if loose.is_file():
                return loose.read_text().strip()
        for line in (base / "packed-refs").read_text().splitlines():
            sha, _, name = line.partition(" ")
            if name.strip() == ref:
                return sha
    except OSError:
        pass
    return ""
