"""A start the daemon refuses ends in StartFailed, which twistd's start-up catches as an Exception (its cue to remove
the pid file it wrote) and Python then exits with as a SystemExit of the refusal's status; a child's own refusal (the
data plane's SystemExit) also has the children started before it stopped."""
from __future__ import annotations

import io

import pytest
from twisted.internet.error import CannotListenError

from oltsim.daemon import DaemonService, StartFailed

from test_daemon_service import Recorder


def test_a_busy_port_ends_in_an_exit_twistd_treats_as_a_failed_start():
    """The busy port's exit is a SystemExit of status 1 that an ``except Exception`` (twistd's) also catches, and
    it carries the line written."""
    top = DaemonService({"rest-v1": "tcp:50071"})
    top.stderr = io.StringIO()
    Recorder("rest-v1", [], CannotListenError("", 50071, OSError(98, "Address already in use")))\
        .setServiceParent(top)
    with pytest.raises(Exception) as caught:
        top.startService()
    assert isinstance(caught.value, SystemExit) and isinstance(caught.value, StartFailed)
    assert caught.value.code == 1
    assert top.stderr.getvalue() == f"oltsim: {caught.value}\n"


def test_a_child_that_exits_stops_what_started_and_keeps_its_status():
    """A child refusing with its own SystemExit(2): the children before it are stopped, last first, the later ones
    never start, and the exit keeps status 2 as a StartFailed."""
    journal: list = []
    top = DaemonService({"openolt": "tcp:50060"})
    Recorder("openolt", journal).setServiceParent(top)
    Recorder("olt", journal).setServiceParent(top)
    Recorder("dataplane", journal, SystemExit(2)).setServiceParent(top)
    Recorder("after", journal).setServiceParent(top)
    with pytest.raises(StartFailed) as exited:
        top.startService()
    assert exited.value.code == 2
    assert journal == [("start", "openolt"), ("start", "olt"), ("stop", "dataplane"), ("stop", "olt"),
                       ("stop", "openolt")]
    assert not top.running
