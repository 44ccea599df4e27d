"""tshark for the capture tests (Wireshark's command line, Debian's package `tshark`): found on PATH, else installed
with apt-get only when the person running the tests asked for it with OLTSIM_TEST_INSTALL=1 and this process is
root (as headless.py does for Chromium); otherwise the tests skip with the reason."""
from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from headless import INSTALL_VARIABLE, apt_install, install_allowed

PACKAGE = "tshark"
#: Seconds one tshark run may take (a capture of a 2x16 bring-up is about 40,000 packets).
RUN_TIMEOUT = 120


def ensure_tshark() -> str:
    """The tshark executable, installed first if missing and allowed; pytest.skip with the reason otherwise."""
    found = shutil.which("tshark")
    if found:
        return found
    if not install_allowed():
        pytest.skip(f"tshark is not installed (apt-get install tshark, or set {INSTALL_VARIABLE}=1 to let the "
                    f"tests install it as root)")
    if not hasattr(os, "geteuid") or os.geteuid() != 0 or shutil.which("apt-get") is None:
        pytest.skip("tshark is not installed and this process cannot install it (not root, or no apt-get)")
    failure = apt_install([PACKAGE])
    if failure:
        pytest.fail(f"cannot install tshark: {failure}")
    found = shutil.which("tshark")
    if not found:
        pytest.fail("apt-get installed tshark, yet it is not on PATH")
    return found


def fields(path, display_filter: str, *names: str) -> list[list[str]]:
    """tshark -r path -Y filter -T fields -e name...: one list of field values per packet (tabs split them)."""
    command = [ensure_tshark(), "-r", str(path), "-T", "fields", "-E", "occurrence=a", "-E", "aggregator=,"]
    if display_filter:
        command += ["-Y", display_filter]
    for name in names:
        command += ["-e", name]
    done = subprocess.run(command, capture_output=True, text=True, timeout=RUN_TIMEOUT,
                          env=dict(os.environ, HOME=os.environ.get("HOME", "/tmp")))
    assert done.returncode == 0, done.stderr
    return [line.split("\t") for line in done.stdout.splitlines()]
