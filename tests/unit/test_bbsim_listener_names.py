"""`bbsim` names its own flags when a listener cannot bind: the daemon's one line says
``bbsim: -rest_api_address 127.0.0.1:50171: address already in use``, not oltsim's ``--rest-v1 tcp:...``."""
from __future__ import annotations

import io

import pytest
from twisted.application import service
from twisted.internet.error import CannotListenError

from oltsim import bbsimcmd
from oltsim.config import load_settings
from oltsim.daemon import DaemonService


class Busy(service.Service):
    """A listener child whose port is taken."""

    def __init__(self, name: str):
        self.setName(name)

    def startService(self):
        super().startService()
        raise CannotListenError("", 50171, OSError(98, "Address already in use"))


def test_listener_names_are_the_flags_as_typed_or_left():
    """Each listener with a bbsim flag: the flag and its value as typed, else the endpoint it was left at."""
    parsed = bbsimcmd.parse(["-rest_api_address", "127.0.0.1:50171", "-pon", "1"])
    settings = load_settings(parsed.given, None)
    names = bbsimcmd.listener_names(parsed, settings)
    assert names["rest-v1"] == "-rest_api_address 127.0.0.1:50171"
    assert names["openolt"] == f"-openolt_address (not given: {settings.openolt})"
    assert set(names) >= {"openolt", "grpc-v1", "rest-v1", "dmi", "grpc-v0", "rest-v0", "sadis"}


def test_a_busy_port_is_named_by_the_bbsim_flag():
    """DaemonService told bbsim's names writes `bbsim: -flag value: reason`, exit 1."""
    top = DaemonService({"rest-v1": "tcp:50171:interface=127.0.0.1"}, program="bbsim",
                        listener_names={"rest-v1": "-rest_api_address 127.0.0.1:50171"})
    top.stderr = io.StringIO()
    Busy("rest-v1").setServiceParent(top)
    with pytest.raises(SystemExit) as exited:
        top.startService()
    assert exited.value.code == 1
    assert top.stderr.getvalue() == "bbsim: -rest_api_address 127.0.0.1:50171: address already in use\n"


def test_bbsim_run_tells_the_daemon_its_names(monkeypatch):
    """bbsimcmd.run hands twistd's oltsim options the program name and the listener names makeService passes on."""
    from twisted.scripts import twistd
    seen = {}
    monkeypatch.setattr(twistd, "runApp", lambda config: seen.update(
        program=config.subOptions.program, names=config.subOptions.listener_names))
    settings = load_settings({}, None)
    bbsimcmd.run(["--nodaemon", "--pidfile=", "oltsim"], settings, names={"rest-v1": "-rest_api_address :1"})
    assert seen == {"program": "bbsim", "names": {"rest-v1": "-rest_api_address :1"}}
