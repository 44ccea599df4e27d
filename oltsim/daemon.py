"""The daemon's services: the top service that starts its named parts in order (and undoes a start a listener
cannot finish), the OLT's power and the one hint that the ONUs wait for an adapter, with the checks and the lines
the start-up writes. :mod:`oltsim.tap` builds them; nothing here chooses the reactor or imports Klein.
"""
from __future__ import annotations

import errno
import re
import signal
import socket
import sys

from twisted.application import service
from twisted.internet.error import CannotListenError
from twisted.python import usage

from oltsim import __version__
from oltsim.config import LISTENER_FIELDS, SETTINGS, ConfigError, ConfigWarning, load_settings, strict_error
from oltsim.logs import logger
from oltsim.model import events
from oltsim.model.builder import check_buildable
from oltsim.model.errors import OltsimError
from oltsim.scenario.atstart import check_scenario
from oltsim.serving import nativeserver
from oltsim.serving.descriptors import raise_open_files_limit
from oltsim.serving.onloop import NotOnLoop, check_asyncio_reactor
from oltsim.serving.security import check_listener
from oltsim.suggest import did_you_mean

__all__ = ["FLAGS", "PARAMETERS", "CommandLineOptions", "DaemonService", "OltService", "StartFailed",
           "WaitingForAdapter", "asyncio_reactor", "check_listeners", "follow_openolt", "listen_failure",
           "log_config_warnings", "loop_engine", "usage_error_line"]

# The daemon's lines keep the namespace they had when these services lived in oltsim.tap.
log = logger("oltsim.tap")
config_log = logger("oltsim.config")

#: the gRPC servers among the listeners (the others are Twisted's REST sites)
GRPC_LISTENERS = ("openolt", "grpc_v1", "grpc_v0", "dmi")


#: where a busy port's line sends the user: how several OLTs share a host (a port each per listener)
MANY_OLTS_DOC = "docs/many-olts.md"


class StartFailed(SystemExit, Exception):
    """The exit of a start that cannot finish, with its status (``code``) and the line already written (``line``).
    An Exception as well as a SystemExit: twistd's start-up (UnixApplicationRunner.postApplication) removes the pid
    file it wrote (``twistd.pid`` when no --pidfile= is given) for an Exception only, then re-raises it, and Python
    exits with the status, no traceback."""

    def __init__(self, code: int, line: str = ""):
        super().__init__(code)
        self.line = line

    def __str__(self) -> str:
        return self.line or f"start failed (exit status {self.code})"


class DaemonService(service.MultiService):
    """The daemon's top service: starts its ``children`` in the order given, and when a listener cannot bind (a port
    in use, an interface that does not resolve or is not on this host) stops the children already started, writes
    one line naming the option, the endpoint and the reason (``oltsim: --rest-v1 tcp:50071: address already in
    use``, for a busy port with where to read how several OLTs share a host) and exits with status 1, so that
    either every listener binds or none stays. A child that refuses to start with its own line and exit status (the
    data plane's SystemExit) has the children started before it stopped too. Either exit is a StartFailed, which
    leaves no pid file of twistd's behind. ``endpoints`` maps each listener child's name (its option) to its
    endpoint string; ``warnings`` are the configuration's warnings and notes, logged once at start.

    Its parts, named as buildbot's BuildMaster names its own, are what tools and tests reach the daemon through:
    ``olt`` (the model), ``hub`` (the OpenOLT indication streams), ``commands`` (the v1 use cases), ``bus`` (the
    event bus), ``metrics``, ``dmi`` (the managed device), ``connection_watch``, and with Kafka events on,
    ``kafka_events`` (the sink) and ``event_topic``.
    """

    def __init__(self, endpoints: dict[str, str], warnings: tuple[str, ...] = (), *, children=(), olt=None,
                 hub=None, commands=None, bus=None, metrics=None, dmi=None, connection_watch=None, kafka_events=None,
                 event_topic: str | None = None, program: str = "oltsim", listener_names: dict | None = None):
        super().__init__()
        self.endpoints = endpoints
        #: how a failed start's line names the program and each listener: `bbsim` names its own flags
        #: (``bbsim: -rest_api_address :50071: address already in use``), oltsim its options and endpoints
        self.program = program
        self.listener_names = dict(listener_names or {})
        #: the configuration's warnings and notes (oltsim.config.ConfigWarning), logged once at start
        self.warnings = warnings
        #: where the one line of a failed start goes (None: the process's real stderr)
        self.stderr = None
        self.olt = olt
        self.hub = hub
        self.commands = commands
        self.bus = bus
        self.metrics = metrics
        self.dmi = dmi
        self.connection_watch = connection_watch
        self.kafka_events = kafka_events
        self.event_topic = event_topic
        self._descriptors_raised = False
        for child in children:
            child.setServiceParent(self)

    def privilegedStartService(self):
        # Twisted's REST listeners bind here, before startService: the same rule applies to them.
        service.Service.privilegedStartService(self)
        self._raise_descriptors_once()  # before any listener binds (oltsim.serving.descriptors)
        self._warn_once()
        self._each("privilegedStartService")

    def startService(self):
        service.Service.startService(self)
        self._raise_descriptors_once()
        self._warn_once()
        self._each("startService")

    def _raise_descriptors_once(self) -> None:
        if not self._descriptors_raised:
            self._descriptors_raised = True
            raise_open_files_limit()

    def _warn_once(self) -> None:
        # twistd calls privilegedStartService first, where the REST listeners bind; other callers only startService.
        warnings, self.warnings = self.warnings, ()
        log_config_warnings(warnings)

    def _each(self, step: str) -> None:
        for child in self:
            try:
                getattr(child, step)()
            except SystemExit as exc:  # the child has written its line: exit with its status, nothing left running
                self._undo()
                raise StartFailed(exc.code) from None
            except Exception as exc:
                self._undo()
                if child.name not in self.endpoints or not isinstance(exc, CannotListenError):
                    raise
                # twistd has redirected sys.stderr into the log by now; the line goes to the real stderr.
                stderr = self.stderr or sys.__stderr__ or sys.stderr
                line = listen_failure(child.name, self.endpoints[child.name], exc,
                                      self.listener_names.get(child.name))
                stderr.write(f"{self.program}: {line}\n")
                stderr.flush()
                raise StartFailed(1, line) from None

    def _undo(self) -> None:
        """Stop every child started or listening, last first (each listener releases its port), before the
        process exits."""
        self.running = 0
        for child in reversed(list(self)):
            if child.running or getattr(child, "_waitingForPort", None) is not None:
                try:
                    child.stopService()
                except Exception:
                    log.failure("start-undo-failed service={service}", service=child.name)


class OltService(service.Service):
    """Powers the simulated OLT on at start and stops its timers and streams at stop."""

    def __init__(self, olt, hub, reactor=None):
        self.olt = olt
        self.hub = hub
        self.reactor = reactor

    def startService(self):
        super().startService()
        # A process started in the background of a non-interactive shell inherits SIGINT as ignored, and
        # Twisted then leaves it ignored; oltsim promises that SIGINT stops it (decisions section 6).
        sig_int = getattr(self.reactor, "sigInt", None)
        if sig_int is not None and signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
            signal.signal(signal.SIGINT, sig_int)
        self.olt.start()
        log.info("olt-started serial={serial} pons={pons} onus={onus}", serial=self.olt.serial,
                 pons=len(self.olt.pons), onus=len(self.olt.onus))

    def stopService(self):
        super().stopService()
        self.hub.end_all(details="oltsim is stopping")
        self.olt.stop()
        # twistd re-raises the signal that stopped the reactor once it has returned, so a clean stop on
        # SIGTERM/SIGINT would end with status -15/-2; oltsim promises exit code 0 (decisions section 6).
        if getattr(self.reactor, "_exitSignal", None) in (signal.SIGTERM, signal.SIGINT):
            self.reactor._exitSignal = None


class WaitingForAdapter(service.Service):
    """Says once, when the daemon is up and listening, that the ONUs wait for an adapter on the OpenOLT address
    (the README's first command starts oltsim with none, and nothing else would say why the ONUs stay
    ``created``), and how to see them come up without one. Not used with ``--adapter builtin``."""

    name = "waiting-for-adapter"

    def __init__(self, openolt):
        self.openolt = openolt
        self.said = False

    def startService(self):
        super().startService()
        if not self.said:
            self.said = True
            log.info("waiting-for-adapter openolt={address}: the ONUs stay created until an OpenOLT adapter "
                     "(VOLTHA, bbr) connects to this address; start oltsim with --adapter builtin to see them come "
                     "up without one", address=self.openolt.address)


def follow_openolt(openolt):
    """A listener of the OLT's events that starts and stops the `openolt` server (GrpcServerService) as the model
    says (events.OpenoltServer: a reboot stops the endpoint and brings it back), while the service runs."""

    def follow(event) -> None:
        if isinstance(event, events.OpenoltServer) and openolt.running:
            if event.running and not openolt.serving:
                openolt.start_server()
            elif not event.running and openolt.serving:
                openolt.stop_server()
    return follow


# The twistd options, from the table of settings. Every default is None so that only the options a user actually
# typed override the config file (BBSim gets this wrong): (option, short, None, help, Settings field; None for
# --config).
PARAMETERS = [(row.option, row.short, None, row.help_text, None if row.kind == "config" else row.field)
              for row in SETTINGS if row.option and not row.is_flag]
# (option, short, help, Settings field)
FLAGS = [(row.option, row.short, row.help_text, row.field) for row in SETTINGS if row.option and row.is_flag]
_OPTION_OF = {field: name for name, _, _, _, field in PARAMETERS if field}


class CommandLineOptions(usage.Options):
    """twistd's option parsing as oltsim's start-up wants it (oltsim.tap.Options names the options, PARAMETERS and
    FLAGS): --version, no arguments, a wrong command line as one line and exit status 2, and the whole
    configuration checked once read (``self.settings``; ``self.scenario_text``, the --scenario file's text)."""

    def opt_version(self):
        """Print the oltsim version and exit."""
        print(f"oltsim {__version__}")
        raise SystemExit(0)

    def parseOptions(self, options=None):
        """As usage.Options, but a wrong command line is one line on stderr and exit status 2, as every start-up
        error of oltsim (and `bbsim`'s wrong flags), not twistd's page of usage and status 1: a misspelt option
        names the nearest one (``oltsim: option --onuu not recognized; did you mean --onu?``)."""
        try:
            super().parseOptions(options)
        except usage.UsageError as exc:
            argv = sys.argv[1:] if options is None else options
            sys.stderr.write(f"oltsim: {usage_error_line(self, argv, exc)}\n")
            raise SystemExit(2) from None

    def parseArgs(self, *args):
        if args:
            raise usage.UsageError(f"unexpected argument {args[0]!r}: oltsim takes options only")

    def postOptions(self):
        given = {field: self[name] for name, _, _, _, field in PARAMETERS if field and self.get(name) is not None}
        given.update({field: True for name, _, _, field in FLAGS if self.get(name)})
        if self.get("kafka") is not None:
            given["enable_events"] = True  # --kafka HOST:PORT is BBSim's -enableEvents -kafkaAddress in one
        try:
            settings = load_settings(given, self.get("config"))
            check_buildable(settings)
            check_listeners(settings)
            self.scenario_text = check_scenario(settings.scenario)
            if settings.strict_config and settings.warnings:
                raise strict_error(settings.warnings)
        except (ConfigError, OltsimError, ValueError) as exc:
            # One clear message, naming the option when the user typed it; not twistd's usage page.
            option = _OPTION_OF.get(getattr(exc, "setting", None) or "")
            prefix = f"--{option}: " if option and self.get(option) is not None else ""
            sys.stderr.write(f"oltsim: {prefix}{exc}\n")
            raise SystemExit(2) from None
        self.settings = settings


def check_listeners(settings) -> None:
    """Every listener's endpoint string is usable, TLS files included (read now, before anything listens)."""
    for name in LISTENER_FIELDS:
        if name != "sadis" or settings.sadis_server:
            check_listener(name, getattr(settings, name), grpc_server=name in GRPC_LISTENERS)


def log_config_warnings(warnings) -> None:
    """One warning event per key or section of the config files that oltsim ignores, named by its kind
    (``config-key-unknown key=olt.pon_port hint=olt.pon_ports file=...: olt.pon_port: unknown key; did you mean
    olt.pon_ports?``); a note (``config-key-ignored``, no news to a BBSim user) is one debug event."""
    for warning in warnings:
        if isinstance(warning, ConfigWarning):
            if warning.event == "config-key-ignored":
                config_log.debug("config-key-ignored key={key} file={file}: {text}", key=warning.key,
                                 file=warning.file, text=warning.text)
                continue
            hint = " hint={hint}" if warning.hint else ""
            config_log.warn(f"{warning.event} key={{key}}{hint} file={{file}}: {{text}}", key=warning.key,
                            hint=warning.hint, file=warning.file, text=warning.text)
        else:
            config_log.warn("config-warning: {text}", text=str(warning))


def listen_failure(option: str, endpoint: str, error: CannotListenError, named: str | None = None) -> str:
    """One line for a listener that could not bind: ``--OPTION ENDPOINT: reason`` in the operating system's words,
    lower-cased (``address already in use``), and for an interface that does not resolve, which one; ``named``
    replaces ``--OPTION ENDPOINT`` (how `bbsim` names the listener: its flag and the value typed). A port in use
    says to give the option another port and where to read how several OLTs share a host (``--openolt tcp:50060:
    address already in use (give --openolt a free port; several OLTs on one host need their own ports: see
    docs/many-olts.md)``); `bbsim`'s line keeps to its flag and the system's words."""
    reason = error.socketError
    text = getattr(reason, "strerror", None) or str(reason) or "cannot listen"
    text = text[0].lower() + text[1:]
    if isinstance(reason, socket.gaierror):
        text = f"interface {error.interface} does not resolve ({text})"
    elif getattr(reason, "errno", None) == errno.EADDRNOTAVAIL:
        text = f"interface {error.interface} is not an address of this host ({text})"
    elif getattr(reason, "errno", None) == errno.EADDRINUSE and not named:
        text += f" (give --{option} a free port; several OLTs on one host need their own ports: see {MANY_OLTS_DOC})"
    return f"{named or f'--{option} {endpoint}'}: {text}"


def usage_error_line(options: usage.Options, argv: list[str], error: usage.UsageError) -> str:
    """The one line for a command line twistd's option parser refused: its message, with the nearest option when
    one was misspelt (``option --onuu not recognized; did you mean --onu?``; Go's single dash, ``-onu``, gets
    ``--onu``), else a pointer to the options' list."""
    text = str(error)
    match = re.fullmatch(r"option (-{1,2})(\S+) not recognized", text)
    if match is None:
        return f"{text} (twistd oltsim --help lists the options)" if "requires argument" not in text else text
    dashes, name = match.groups()
    known = [option.rstrip("=") for option in options.longOpt]
    if dashes == "-":
        # getopt names the first letter of `-onu`: the word the user typed is what to match
        word = next((arg for arg in argv if arg.startswith(f"-{name}") and not arg.startswith("--")), f"-{name}")
        name = word[1:].split("=", 1)[0]
        if name in known:
            return f"option {word.split('=', 1)[0]} not recognized; did you mean --{name}?"
        text = f"option -{name} not recognized"
    return text + (did_you_mean(name, known, lambda found: f"--{found}")
                   or " (twistd oltsim --help lists the options)")


def asyncio_reactor():
    """The global reactor, which must be Twisted's asyncio one (installed on import of oltsim.tap unless twistd's
    --reactor chose another); any other kind is refused with SystemExit and one line saying how to start oltsim."""
    from twisted.internet import reactor

    try:
        check_asyncio_reactor(reactor)
    except NotOnLoop as exc:
        sys.stderr.write(f"oltsim: {exc}\n")
        raise SystemExit(2) from None
    return reactor


def loop_engine(choice: str, endpoint: str) -> str:
    """The GrpcServerService engine for a gRPC endpoint: ``auto`` is native (``ssl:`` through its TLS relay), or
    grpcio when pygrpc-native cannot be imported on this machine (with a warning); an explicit choice is kept."""
    if choice == "grpcio":
        return "grpcio"
    if choice == "auto" and not nativeserver.available():
        log.warn("grpc-engine-fallback reason={reason}", reason="pygrpc-native does not import here; using grpcio")
        return "grpcio"
    return "native"
