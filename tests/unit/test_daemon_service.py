"""The daemon's top service: a listener that cannot bind stops the start with one line and undoes what started;
the configuration's warnings are logged once at start, its notes at debug; without the built-in adapter, a line
says once that the ONUs wait for one."""
from __future__ import annotations

import io
import socket

import pytest
from twisted.application import service
from twisted.internet.error import CannotListenError
from twisted.internet.task import Clock
from twisted.logger import globalLogPublisher

from oltsim.config import ConfigWarning
from oltsim.logs import CONTROL
from oltsim.daemon import DaemonService, WaitingForAdapter, listen_failure
from oltsim.tap import Options, makeService


class Recorder(service.Service):
    """A child that records its starts and stops, and can fail to start with `error` (to bind, or exit)."""

    def __init__(self, name: str, journal: list, error: BaseException | None = None):
        self.setName(name)
        self.journal = journal
        self.error = error

    def startService(self):
        super().startService()
        if self.error is not None:
            raise self.error
        self.journal.append(("start", self.name))

    def stopService(self):
        super().stopService()
        self.journal.append(("stop", self.name))


def test_a_listener_that_cannot_bind_stops_what_started_and_exits_with_one_line():
    """The first listener that cannot bind: the children started before it are stopped, last first, the later
    ones never start, one line names the option, endpoint and reason, and the exit status is 1."""
    journal: list = []
    top = DaemonService({"openolt": "tcp:50060", "rest-v1": "tcp:50071"})
    top.stderr = io.StringIO()
    Recorder("openolt", journal).setServiceParent(top)
    Recorder("olt", journal).setServiceParent(top)
    Recorder("rest-v1", journal, CannotListenError("", 50071, OSError(98, "Address already in use")))\
        .setServiceParent(top)
    Recorder("rest-v0", journal).setServiceParent(top)
    with pytest.raises(SystemExit) as exited:
        top.startService()
    assert exited.value.code == 1
    assert top.stderr.getvalue() == ("oltsim: --rest-v1 tcp:50071: address already in use (give --rest-v1 a free "
                                     "port; several OLTs on one host need their own ports: see docs/many-olts.md)\n")
    assert journal == [("start", "openolt"), ("start", "olt"), ("stop", "rest-v1"), ("stop", "olt"),
                       ("stop", "openolt")]
    assert not top.running


def test_another_failure_is_raised_after_the_undo():
    """A failure that is not a bind (a bug) is raised as it is, after the started children are stopped."""
    journal: list = []
    top = DaemonService({"openolt": "tcp:50060"})
    Recorder("openolt", journal).setServiceParent(top)
    Recorder("olt", journal, ZeroDivisionError()).setServiceParent(top)
    with pytest.raises(ZeroDivisionError):
        top.startService()
    assert journal == [("start", "openolt"), ("stop", "olt"), ("stop", "openolt")]


@pytest.mark.parametrize("error, reason", [
    (OSError(98, "Address already in use"), "address already in use (give --rest-v1 a free port; several OLTs on "
                                             "one host need their own ports: see docs/many-olts.md)"),
    (socket.gaierror(-2, "Name or service not known"),
     "interface nosuch.invalid does not resolve (name or service not known)"),
    (OSError(99, "Cannot assign requested address"),
     "interface nosuch.invalid is not an address of this host (cannot assign requested address)"),
])
def test_listen_failure_says_why_in_the_systems_words(error, reason):
    """The reason is the system's, lower-cased; an interface that does not resolve or is not on this host is named."""
    failure = CannotListenError("nosuch.invalid", 50071, error)
    assert listen_failure("rest-v1", "tcp:50071", failure) == f"--rest-v1 tcp:50071: {reason}"


def test_config_warnings_are_logged_once_at_start():
    """Each configuration warning is one warn event named by its kind, with its key and hint, logged once."""
    events: list = []
    globalLogPublisher.addObserver(events.append)
    try:
        top = DaemonService({}, (ConfigWarning("config file c.yaml", "c.yaml", "config-key-unknown", "olt.pon_port",
                                               "olt.pon_ports"),))
        top.privilegedStartService()
        top.startService()
    finally:
        globalLogPublisher.removeObserver(events.append)
    ours = [e for e in events if e.get("log_namespace") == "oltsim.config"]
    assert len(ours) == 1
    assert ours[0]["log_format"].startswith("config-key-unknown key={key} hint={hint} ")
    assert (ours[0]["key"], ours[0]["hint"], ours[0]["text"]) == (
        "olt.pon_port", "olt.pon_ports", "olt.pon_port: unknown key; did you mean olt.pon_ports?")


def test_a_note_is_logged_at_debug_not_as_a_warning():
    """A config key that is no news to a BBSim user (config-key-ignored) is one debug event, not a warning."""
    events: list = []
    before = CONTROL.level
    CONTROL.set_level("debug")
    globalLogPublisher.addObserver(events.append)
    try:
        top = DaemonService({}, (ConfigWarning("config file c.yaml", "c.yaml", "config-key-ignored",
                                               "bbsim.enable_auth", "as BBSim ignores it"),))
        top.startService()
    finally:
        globalLogPublisher.removeObserver(events.append)
        CONTROL.set_level(before)
    ours = [e for e in events if e.get("log_namespace") == "oltsim.config"]
    assert [(e["log_level"].name, e["key"], e["text"]) for e in ours] == [
        ("debug", "bbsim.enable_auth", "bbsim.enable_auth: ignored, as BBSim ignores it")]


class FakeOpenolt:
    address = "127.0.0.1:50060"


def test_waiting_for_adapter_is_said_once():
    """The waiting-for-adapter line is one info event naming the OpenOLT address and --adapter builtin, and a
    second start of the service does not repeat it."""
    events: list = []
    globalLogPublisher.addObserver(events.append)
    try:
        hint = WaitingForAdapter(FakeOpenolt())
        hint.startService()
        hint.stopService()
        hint.startService()
    finally:
        globalLogPublisher.removeObserver(events.append)
    ours = [e for e in events if e.get("log_format", "").startswith("waiting-for-adapter ")]
    assert len(ours) == 1
    assert (ours[0]["log_level"].name, ours[0]["address"]) == ("info", "127.0.0.1:50060")
    assert "--adapter builtin" in ours[0]["log_format"]


@pytest.mark.parametrize("arguments, said", [((), True), (("--adapter", "builtin"), False)])
def test_the_daemon_waits_for_an_adapter_unless_it_is_its_own(arguments, said):
    """makeService adds the waiting-for-adapter line last (once everything listens), and not with --adapter
    builtin, whose ONUs come up without anyone."""
    options = Options()
    options.parseOptions(["--openolt", "tcp:0:interface=127.0.0.1", *arguments])
    top = makeService(options, Clock())
    children = list(top)
    assert isinstance(children[-1], WaitingForAdapter) is said
    assert sum(isinstance(child, WaitingForAdapter) for child in children) == int(said)


def test_the_top_service_declares_its_parts_and_starts_its_children_in_order():
    """makeService's top service is given its named parts (the model, the hub, the use cases with their capture
    ring and scenario runner, the event bus, metrics, DMI, the connection watch; Kafka's sink and topic with events
    on) and its children in start order: the OpenOLT server first, the OLT, the events, then the listeners."""
    options = Options()
    options.parseOptions(["--openolt", "tcp:0:interface=127.0.0.1", "--kafka", "127.0.0.1:9092"])
    top = makeService(options, Clock())
    assert top.commands.olt is top.olt and top.hub.olt is top.olt and top.dmi.olt is top.olt
    assert top.commands.scenarios is not None and top.commands.capture is not None
    assert top.commands.scenarios is top.getServiceNamed("scenario").runner
    assert top.bus is not None and top.metrics is not None and top.connection_watch in list(top)
    assert (top.event_topic, top.kafka_events.client_id) == ("BBSim-OLT-0-Events", "BBSim-OLT-0")
    names = [child.name for child in top if child.name]
    assert names == ["openolt", "kafka-events", "capture", "scenario", "grpc-v1", "rest-v1", "grpc-v0", "rest-v0",
                     "sadis", "dmi", "waiting-for-adapter"]
    assert type(list(top)[1]).__name__ == "OltService"


def test_without_events_or_capture_the_top_service_has_neither():
    """Events off and --capture-size 0: no Kafka sink or topic, no capture ring or its service."""
    options = Options()
    options.parseOptions(["--openolt", "tcp:0:interface=127.0.0.1", "--capture-size", "0"])
    top = makeService(options, Clock())
    assert top.kafka_events is None and top.event_topic is None and top.commands.capture is None
    assert not any(child.name in ("kafka-events", "capture") for child in top)
