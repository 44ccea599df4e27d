"""An ordinary start says nothing of the descriptor limit above debug (`descriptor-limit open_files=20000`
at info on every start would push a busy port's one-line error off the last line); a low limit is still a warning."""
from __future__ import annotations

from twisted.logger import LogLevel, capturedLogs

from oltsim.logs import CONTROL
from oltsim.serving.descriptors import raise_open_files_limit


def test_a_sufficient_limit_is_logged_at_debug_only():
    """At the default level (info) nothing is written; at debug, the limit."""
    before = CONTROL.level
    try:
        CONTROL.set_level("info")
        with capturedLogs() as logged:
            raise_open_files_limit(getrlimit=lambda _: (20000, 20000), setrlimit=lambda kind, value: None)
        assert logged == []
        CONTROL.set_level("debug")
        with capturedLogs() as logged:
            raise_open_files_limit(getrlimit=lambda _: (20000, 20000), setrlimit=lambda kind, value: None)
        assert [(event["log_level"], event["log_format"].split()[0]) for event in logged] == [
            (LogLevel.debug, "descriptor-limit")]
    finally:
        CONTROL.set_level(before)


def test_a_low_limit_is_still_a_warning():
    """Below 8192 descriptors the start still warns, whatever the level."""
    with capturedLogs() as logged:
        raise_open_files_limit(getrlimit=lambda _: (1024, 1024), setrlimit=lambda kind, value: None)
    assert [event["log_level"] for event in logged] == [LogLevel.warn]
