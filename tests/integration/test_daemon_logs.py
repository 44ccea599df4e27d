"""The real daemon's log: at --log-level warn a built-in bring-up writes no info line
of any namespace; at info a 16x32 bring-up writes a bounded number of lines (bursts summed up), REST listeners are
named in one line each instead of Twisted's `Starting factory <...>`, and an alarm raised and cleared over REST is
one line each."""
from __future__ import annotations

import re
import time

from test_builtin_adapter_daemon import BRING_UP_TIMEOUT, rest, wait_all_up
from test_daemon import daemon  # noqa: F401 - the fixture

#: A 16x32 bring-up at info, up to builtin-adapter-all-ready (84 lines measured; 5,208 before the summing-up).
MAX_BRING_UP_LINES = 100


def wait_for_line(process, pattern: str, timeout: float = BRING_UP_TIMEOUT) -> str:
    """The log up to the first line matching `pattern` (bounded wait)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        log = process.log
        found = re.search(pattern, log)
        if found:
            return log[:log.index("\n", found.end()) + 1 if "\n" in log[found.end():] else len(log)]
        if process.process.poll() is not None:
            break
        time.sleep(0.2)
    raise AssertionError(f"no line matching {pattern!r} within {timeout:g} s:\n{process.log[-4000:]}")


def test_at_warn_a_bring_up_writes_no_info_line_of_any_namespace(daemon):
    """--log-level warn: a builtin 2x4 bring-up (EAPOL and DHCP of every UNI, Twisted's start-up) writes no info
    line, Twisted's own included."""
    process = daemon("--adapter", "builtin", "--pon", "2", "--onu", "4", "--delay", "0", "--log-level", "warn")
    process.wait_serving()
    wait_all_up(process, 8)
    info = [line for line in process.log.splitlines() if "#info]" in line or "#debug]" in line]
    assert info == []


def test_at_info_a_16x32_bring_up_is_summed_up_and_listeners_are_named(daemon):
    """At info, 16x32 ONUs (4096 UNIs) up to builtin-adapter-all-ready write at most MAX_BRING_UP_LINES lines: the
    completions and adapter steps are summed up; each REST listener is one rest-listener-started line and no
    `Starting factory` line is written."""
    process = daemon("--adapter", "builtin", "--pon", "16", "--onu", "32", "--delay", "0")
    log = wait_for_line(process, r"builtin-adapter-all-ready serial=\S+ onus=512")
    lines = log.splitlines()
    assert len(lines) <= MAX_BRING_UP_LINES, "\n".join(lines)
    assert "builtin-adapter-onus count=" in log
    for name in ("rest-v1", "rest-v0"):
        assert len(re.findall(rf"rest-listener-started name={name} address=127\.0\.0\.1:\d+", log)) == 1
    assert "Starting factory" not in log and "starting on" not in log


def test_an_alarm_raised_and_cleared_over_rest_is_one_line_each(daemon):
    """NNI LOS raised then cleared over REST: one alarm-raised and one alarm-cleared line naming the port."""
    process = daemon()
    process.wait_serving()
    assert rest(process, "POST", "/v1/olt/ports/nni/0/alarms/los/on") < 300
    assert rest(process, "POST", "/v1/olt/ports/nni/0/alarms/los/off") < 300
    wait_for_line(process, r"alarm-cleared kind=los_ind type=nni_los port=nni-0", timeout=10)
    log = process.log
    assert log.count("alarm-raised kind=los_ind type=nni_los port=nni-0") == 1
    assert log.count("alarm-cleared kind=los_ind type=nni_los port=nni-0") == 1
