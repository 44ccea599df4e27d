"""The composition root: `twistd oltsim` options and `makeService`, the ONLY place things are wired.

Building has no side effects: sockets, threads and timers start in startService. The one thing done at import is
choosing the reactor: the OpenOLT server runs on Twisted's asyncio reactor (oltsim.serving.onloop), and it has to be
installed before Klein, imported below, imports the global reactor. twistd imports this module only for the
`oltsim` subcommand, after its own --reactor option (which then wins, and is checked in makeService).
"""
from __future__ import annotations

from oltsim.serving.onloop import NotOnLoop, check_asyncio_reactor, install_asyncio_reactor

install_asyncio_reactor()

import errno
import random
import re
import signal
import socket
import sys

from grpc_reflection.v1alpha import reflection
from twisted.application import service
from twisted.internet.error import CannotListenError
from voltha_protos import openolt_pb2, openolt_pb2_grpc
from dmi import (hw_events_mgmt_service_pb2, hw_events_mgmt_service_pb2_grpc, hw_management_service_pb2,
                 hw_management_service_pb2_grpc, hw_metrics_mgmt_service_pb2, hw_metrics_mgmt_service_pb2_grpc,
                 sw_management_service_pb2, sw_management_service_pb2_grpc)
from twisted.python import usage

from oltsim import __version__
from oltsim._proto import bbsim_pb2, bbsim_pb2_grpc, legacy_pb2, legacy_pb2_grpc, oltsim_pb2, oltsim_pb2_grpc
from oltsim._proto import bbsim_dmi_pb2
from oltsim.api.v1.usecases_v1 import MAX_SCENARIO_BYTES, V1Commands
from oltsim.api.eventbus import EventBus
from oltsim.api.images import ImageServer, with_images
from oltsim.api.sadis import SadisRest
from oltsim.api.site import ApiSite
from oltsim.api.ui import UI_PATH
from oltsim.api.v0.usecases_v0 import V0Commands
from oltsim.api.v0.grpc_v0 import LegacyServicer
from oltsim.api.v0.rest_v0 import V0Rest
from oltsim.api.v1.grpc_v1 import BBSimServicer, OltsimServicer, add_to_server as add_oltsim_to_server
from oltsim.api.v1.rest_v1 import V1Rest
from oltsim.capture import Capture
from oltsim.capture.service import CaptureService
from oltsim.dmi.device import DeviceService, ManagedDevice
from oltsim.dmi.hw_events import EventsServicer
from oltsim.dmi.hw import HWManagementServicer
from oltsim.dmi.hw_metrics import MetricsServicer
from oltsim.dmi.sw import SoftwareManagementServicer
from oltsim.dmi import transceivers as dmi_transceivers
from oltsim.config import (LISTENER_FIELDS, SETTINGS, ConfigError, ConfigWarning, load_settings,
                           strict_error)
from oltsim.serving import nativeserver
from oltsim.serving.connlimit import ConnectionLimits, LimitedFactory
from oltsim.serving.descriptors import GrpcConnectionWatch, open_files_limit, raise_open_files_limit
from oltsim.bbsimevents import BbsimEventPublisher
from oltsim.kafka import KafkaSink, SinkService
from oltsim.serving.endpoints import parse_grpc_endpoint
from oltsim.serving.grpcserver import GrpcServerService
from oltsim.logs import CONTROL, logger
from oltsim.prometheus import AioMetricsInterceptor, Metrics, counted, with_metrics
from oltsim.serving.security import AccessToken, check_listener, guard, interceptors, server_service
from oltsim.model import events
from oltsim.model.builder import build_olt, check_buildable
from oltsim.model.errors import InvalidArgument, OltsimError
from oltsim.omci.responder import OmciResponder
from oltsim.omci.wrappers import OmciFaultWrapper
from oltsim.serving.onloop import on_loop
from oltsim.packets.engine import ProtocolEngine
from oltsim.scenario import schema as scenario_schema
from oltsim.scenario.runner import ScenarioRunner
from oltsim.southbound.builtin import BuiltinAdapter
from oltsim.southbound.openolt import IndicationHub, OpenoltServicer
from oltsim.suggest import did_you_mean

log = logger("oltsim.tap")
config_log = logger("oltsim.config")

# Derived from the table of settings (oltsim.config.SETTINGS). Every default is None so that only the options a user
# actually typed override the config file (BBSim gets this wrong): (option, short, None, help, Settings field).
PARAMETERS = [(row.option, row.short, None, row.help_text, None if row.kind == "config" else row.field)
              for row in SETTINGS if row.option and not row.is_flag]
# (option, short, help, Settings field)
FLAGS = [(row.option, row.short, row.help_text, row.field) for row in SETTINGS if row.option and row.is_flag]


_OPTION_OF = {field: name for name, _, _, _, field in PARAMETERS if field}


class QuietSite(ApiSite):
    """A Site that logs only failed requests: one access-log line per request costs more than
    answering a cached read, and the handlers already log what went wrong."""

    def log(self, request):
        if request.code >= 400:
            super().log(request)


class Options(usage.Options):
    """twistd options mirroring BBSim's flags; the whole configuration is checked here,
    so an impossible one fails with one message before anything listens."""

    optParameters = [[name, short, default, help] for name, short, default, help, _ in PARAMETERS]
    optFlags = [[name, short, help] for name, short, help, _ in FLAGS]

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
        given = {}
        for name, _, _, _, field in PARAMETERS:
            if field is not None and self[name] is not None:
                given[field] = self[name]
        for name, _, _, field in FLAGS:
            if self[name]:
                given[field] = True
        if self["kafka"] is not None:
            given["enable_events"] = True  # --kafka HOST:PORT is BBSim's -enableEvents -kafkaAddress in one
        try:
            settings = load_settings(given, self["config"])
            check_buildable(settings)
            check_listeners(settings)
            self.scenario_text = check_scenario(settings.scenario)
            if settings.strict_config and settings.warnings:
                raise strict_error(settings.warnings)
        except (ConfigError, OltsimError, ValueError) as exc:
            # One clear message, naming the option when the user typed it; not twistd's usage page.
            option = _OPTION_OF.get(getattr(exc, "setting", None) or "")
            prefix = f"--{option}: " if option and self[option] is not None else ""
            sys.stderr.write(f"oltsim: {prefix}{exc}\n")
            raise SystemExit(2) from None
        self.settings = settings


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


def read_scenario(path: str) -> str:
    """The text of the scenario file at `path`; ConfigError (naming the setting) if it cannot be read."""
    try:
        with open(path, "rb") as handle:
            raw = handle.read(MAX_SCENARIO_BYTES + 1)
    except FileNotFoundError:
        raise ConfigError(f"scenario file {path} does not exist", "scenario") from None
    except IsADirectoryError:
        raise ConfigError(f"scenario file {path} is a directory, not a file", "scenario") from None
    except OSError as error:
        raise ConfigError(f"scenario file {path} cannot be read: {error.strerror or error}", "scenario") from None
    if len(raw) > MAX_SCENARIO_BYTES:
        raise ConfigError(f"scenario file {path} is larger than {MAX_SCENARIO_BYTES // 1024} KiB", "scenario")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ConfigError(f"scenario file {path} is not UTF-8 text", "scenario") from None


def check_scenario(path: str) -> str | None:
    """The text of the scenario file at `path` (None without one) once it loads (oltsim.scenario.schema): a file
    that does not is refused now, with one line naming the file, the step and the problem."""
    if not path:
        return None
    text = read_scenario(path)
    try:
        scenario_schema.parse(text, path)
    except InvalidArgument as error:
        message = str(error)
        raise ConfigError(message if path in message else f"scenario file {path}: {message}", "scenario") from None
    return text


def check_scenario_targets(olt, scenario, path: str) -> None:
    """The ONUs, PONs and NNI the scenario names exist on `olt` (built, not started): ConfigError naming the file
    and the step otherwise, as the runner would refuse the file once the OLT is up."""
    for step in scenario.steps:
        try:
            for serial in step.targets.onus:
                olt.onu_by_serial(serial)
            for pon_id in step.targets.pons:
                olt.pon(pon_id)
            if step.kind == "nni":
                olt.nni(step.targets.nni)
        except OltsimError as exc:
            raise ConfigError(f"scenario file {path}: step {step.index} {step.name!r}: {exc}", "scenario") from None


class ScenarioAtStart(service.Service):
    """Plays the --scenario file once, when the OLT first comes up (enabled: an adapter, VOLTHA or the built-in
    one, has enabled it), through `runner` (oltsim.scenario.runner.ScenarioRunner), which its stop closes."""

    name = "scenario"

    def __init__(self, olt, runner, text: str | None, source: str, clock):
        self.olt = olt
        self.runner = runner
        self.text = text
        self.source = source
        self.clock = clock
        self._unsubscribe = None
        self._call = None

    def startService(self):
        super().startService()
        if self.text is None:
            return
        if self.olt.state == "enabled":
            self._call = self.clock.callLater(0, self._start)
        else:
            self._unsubscribe = self.olt.subscribe(self._on_event)

    def _on_event(self, event) -> None:
        if (isinstance(event, events.StateChanged) and event.device == "olt" and event.attribute == "InternalState"
                and event.dest == "enabled" and self._call is None):
            self._forget()
            # Not inside the model's emit: the scenario's first steps act on the model.
            self._call = self.clock.callLater(0, self._start)

    def _start(self) -> None:
        self._call = None
        text, self.text = self.text, None
        try:
            self.runner.run(text, source=self.source)
        except OltsimError as error:  # loaded at start; only a refusal of the moment (one running already)
            log.error("scenario-not-started source={source} reason={reason}", source=self.source, reason=str(error))
        except Exception:
            log.failure("scenario-start-failed source={source}", source=self.source)
        else:
            log.info("scenario-started-at-start source={source}", source=self.source)

    def _forget(self) -> None:
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None

    def stopService(self):
        super().stopService()
        self._forget()
        if self._call is not None and self._call.active():
            self._call.cancel()
        self._call = None
        try:
            self.runner.close()
        except Exception:
            log.failure("scenario-close-failed")


def local_ip(openolt_endpoint: str) -> str:
    """The address reported as the OLT's IP: the OpenOLT interface if one is given, else the
    address of the default route (as BBSim), else loopback."""
    listen = parse_grpc_endpoint(openolt_endpoint)
    if listen.host and listen.host not in ("0.0.0.0", "::"):
        return listen.host
    probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        probe.connect(("192.0.2.1", 9))  # no packet is sent by a UDP connect
        return probe.getsockname()[0]
    except OSError:
        return "127.0.0.1"
    finally:
        probe.close()


class OltService(service.Service):
    """Powers the simulated OLT on at start and stops its timers and streams at stop."""

    def __init__(self, olt, hub: IndicationHub, reactor=None):
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


class DaemonService(service.MultiService):
    """The daemon's top service: starts its children in order, and when a listener cannot bind (a port in use, an
    interface that does not resolve or is not on this host) stops the children already started, writes one line
    naming the option, the endpoint and the reason (``oltsim: --rest-v1 tcp:50071: address already in use``) and
    exits with status 1, so that either every listener binds or none stays. ``endpoints`` maps each listener
    child's name (its option) to its endpoint string."""

    def __init__(self, endpoints: dict[str, str], warnings: tuple[str, ...] = ()):
        super().__init__()
        self.endpoints = endpoints
        #: the configuration's warnings and notes (oltsim.config.ConfigWarning), logged once at start
        self.warnings = warnings
        #: where the one line of a failed start goes (None: the process's real stderr)
        self.stderr = None
        self._descriptors_raised = False

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
            except Exception as exc:
                self._undo()
                if child.name not in self.endpoints or not isinstance(exc, CannotListenError):
                    raise
                # twistd has redirected sys.stderr into the log by now; the line goes to the real stderr.
                stderr = self.stderr or sys.__stderr__ or sys.stderr
                stderr.write(f"oltsim: {listen_failure(child.name, self.endpoints[child.name], exc)}\n")
                stderr.flush()
                raise SystemExit(1) from None

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


def listen_failure(option: str, endpoint: str, error: CannotListenError) -> str:
    """One line for a listener that could not bind: ``--OPTION ENDPOINT: reason`` in the operating system's words,
    lower-cased (``address already in use``), and for an interface that does not resolve, which one."""
    reason = error.socketError
    text = getattr(reason, "strerror", None) or str(reason) or "cannot listen"
    text = text[0].lower() + text[1:]
    if isinstance(reason, socket.gaierror):
        text = f"interface {error.interface} does not resolve ({text})"
    elif getattr(reason, "errno", None) == errno.EADDRNOTAVAIL:
        text = f"interface {error.interface} is not an address of this host ({text})"
    return f"--{option} {endpoint}: {text}"


def asyncio_reactor():
    """The global reactor, which must be Twisted's asyncio one (installed on import of this module unless twistd's
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


def makeService(options, reactor=None):
    """Build the OLT model, its APIs and servers; returns a MultiService (nothing runs yet).

    Without a ``reactor`` (twistd) the global one is used, and it must be the asyncio reactor (:func:`asyncio_reactor`);
    a given reactor is only checked when the OpenOLT server starts."""
    if reactor is None:
        reactor = asyncio_reactor()
        # twistd begins logging after makeService: every line it writes, its own and Twisted's, follows --log-level.
        CONTROL.filter_everything()
    settings = options.settings if hasattr(options, "settings") else load_settings({}, None)
    CONTROL.set_level(settings.log_level if settings.log_level in ("trace", "debug", "info", "warn",
                                                                     "error") else "info")
    olt = build_olt(settings, reactor, random.Random())
    omci = OmciResponder.from_settings(settings)
    omci.attach(olt)
    # the fault knobs (scenarios) stand in front of the responder, which knows nothing of them
    engine = ProtocolEngine.from_settings(settings, omci_responder=OmciFaultWrapper(omci).handle)
    engine.attach(olt)
    # Capture (issue 32): the ring of every frame the OLT exchanges, unless switched off (then nothing listens and
    # the southbound's hooks see None); the southbound tells it what the adapter sends, the OLT's events the rest.
    capture = Capture.for_olt(olt, settings.capture_size) if settings.capture_size else None
    hub = IndicationHub(olt)
    top = DaemonService({name.replace("_", "-"): getattr(settings, name) for name in LISTENER_FIELDS},
                        settings.warnings + settings.notes)
    # security and metrics (issue 5): one registry per service; the token guards the control surfaces only
    metrics = Metrics(olt, hub)
    token = AccessToken(settings.api_token) if settings.api_token else None

    # Connections are bounded per Twisted listener (REST, SADIS, the TLS relay of an ssl: gRPC port), the idlest
    # making room when one is full (oltsim.serving.connlimit); a plain gRPC port is the engine's own, bounded by the
    # process's descriptors (oltsim.serving.descriptors), with no hop between the adapter and the engine.
    connections = dict(max_connections=settings.max_connections,
                       max_connections_per_peer=settings.max_connections_per_peer)
    # The southbound carries ~240 calls per ONU at bring-up: served on the reactor's loop, no thread hops, by
    # pygrpc-native's Rust front unless TLS (or the user) asks for grpc.aio.
    openolt = GrpcServerService(
        "openolt", settings.openolt,
        lambda server: _add_openolt(server, on_loop(OpenoltServicer(olt, hub, capture), openolt_pb2_grpc.OpenoltServicer)),
        reactor=reactor, interceptors=[AioMetricsInterceptor(metrics, "openolt")],
        engine=loop_engine(settings.grpc_engine, settings.openolt), bulk_methods=("/openolt.Openolt/OmciMsgOut",),
        **connections)
    openolt.on_stopping.append(hub.end_all)
    openolt.on_stopping.append(engine.flush_logs)
    openolt.setServiceParent(top)

    def follow_openolt(event):
        # The model decides when the OpenOLT endpoint is up (reboot); the service obeys.
        if isinstance(event, events.OpenoltServer) and openolt.running:
            if event.running and not openolt.serving:
                openolt.start_server()
            elif not event.running and openolt.serving:
                openolt.stop_server()
    olt.subscribe(follow_openolt)

    OltService(olt, hub, reactor).setServiceParent(top)
    if settings.enable_events:
        # BBSim's Kafka events (issue 15): its records, topic and client id, through a sink that never blocks the OLT
        # (bounded buffer, drops counted); its stop flushes for a second at most.
        top.event_topic = settings.kafka_event_topic or f"BBSim-OLT-{settings.olt_id}-Events"
        top.kafka_events = KafkaSink(settings.kafka_address, reactor=reactor, name="events", metrics=metrics,
                                     client_id=f"BBSim-OLT-{settings.olt_id}")
        BbsimEventPublisher(olt, reactor, lambda value: top.kafka_events.publish(top.event_topic, value))
        SinkService(top.kafka_events, "kafka-events").setServiceParent(top)
    if settings.adapter == "builtin":
        # oltsim drives its own OpenOLT side (issue 16): started after the OLT powers on, stopped before it stops.
        BuiltinAdapter(olt, hub, OpenoltServicer(olt, hub, capture), reactor,
                       reachable=lambda: openolt.serving).setServiceParent(top)

    bus = EventBus(olt, reactor)
    commands = V1Commands(olt, openolt=openolt, logs=CONTROL, olt_ip=local_ip(settings.openolt),
                          revision=settings.api_revision)
    # Fault scenarios (issue 25): one runner over the same use cases, for the v1 API and --scenario; its stop (before
    # the OLT's, children stop last first) undoes what a running scenario holds.
    commands.scenarios = ScenarioRunner(olt, commands, clock=reactor)
    commands.capture = capture
    if capture is not None:
        # its stop (before the listeners', children stop last first) ends the live captures, told in the stream
        CaptureService(capture).setServiceParent(top)
    scenario_text = getattr(options, "scenario_text", None)
    if settings.scenario:
        try:
            if scenario_text is None:  # options built without postOptions: checked now
                scenario_text = check_scenario(settings.scenario)
            check_scenario_targets(olt, scenario_schema.parse(scenario_text, settings.scenario), settings.scenario)
        except ConfigError as exc:
            typed = options.get("scenario") if isinstance(options, dict) else None
            sys.stderr.write(f"oltsim: {'--scenario: ' if typed else ''}{exc}\n")
            raise SystemExit(2) from None
    ScenarioAtStart(olt, commands.scenarios, scenario_text, settings.scenario, reactor).setServiceParent(top)
    # The control APIs are served on the reactor's loop too, by the same engines: no call holds a thread, a request
    # that never arrives costs no Python at all on the native engine, and open streams are capped per server
    # (RESOURCE_EXHAUSTED beyond; HTTP/2 streams per connection are set above that cap, so that a client is refused
    # rather than left waiting: grpcserver.STREAMS_ABOVE_CAP), so that no client, token or not, can wedge them.
    limits = dict(max_calls=settings.max_api_calls, **connections)
    grpc_v1 = GrpcServerService(
        "grpc-v1", settings.grpc_v1,
        lambda server: _add_v1(server, on_loop(BBSimServicer(commands), bbsim_pb2_grpc.BBSimServicer),
                               on_loop(OltsimServicer(bus, commands=commands), oltsim_pb2_grpc.OltsimServicer)),
        reactor=reactor, engine=loop_engine(settings.grpc_engine, settings.grpc_v1),
        interceptors=[AioMetricsInterceptor(metrics, "grpc-v1"), *interceptors(token, "grpc-v1")],
        **limits)
    grpc_v1.on_stopping.append(bus.close_all)
    grpc_v1.setServiceParent(top)
    secured = token is not None  # documented in the OpenAPI documents; the guard itself wraps the resources
    v1_rest = V1Rest(commands, bus, secured=secured, metrics=True)  # /metrics beside its routes, in its document
    rest_v1 = server_service(settings.rest_v1, _site(with_metrics(v1_rest.resource(),
                                                                  metrics), "rest-v1", metrics, settings, reactor,
                                                     token, public=(UI_PATH,)),
                             reactor=reactor)
    rest_v1.setName("rest-v1")
    rest_v1.setServiceParent(top)
    v0_commands = V0Commands(olt, olt_ip=commands.olt_ip)
    grpc_v0 = GrpcServerService(
        "grpc-v0", settings.grpc_v0,
        lambda server: _add_v0(server, on_loop(LegacyServicer(v0_commands), legacy_pb2_grpc.BBSimServiceServicer)),
        reactor=reactor, engine=loop_engine(settings.grpc_engine, settings.grpc_v0),
        interceptors=[AioMetricsInterceptor(metrics, "grpc-v0"), *interceptors(token, "grpc-v0")],
        **limits)
    grpc_v0.setServiceParent(top)
    rest_v0 = server_service(settings.rest_v0, _site(V0Rest(v0_commands, secured=secured).resource(), "rest-v0",
                                                     metrics, settings, reactor, token,
                                                     headers=[(b"Deprecation", b"true")]),
                             reactor=reactor)
    rest_v0.setName("rest-v0")
    rest_v0.setServiceParent(top)
    if settings.sadis_server:
        sadis = SadisRest(olt, olt_ip=commands.olt_ip, bp_format=settings.bp_format,
                          advertised_host=settings.sadis_host, port=_port_of(settings.sadis))
        # ONU software images beside SADIS on the same port, as BBSim's web server (GET /images/<file>, /images-count).
        images = ImageServer(settings.images_dir)
        # Never token-protected: the controller's SADIS app sends no token, and the data is read-only.
        sadis_site = _site(with_images(sadis.resource(), images), "sadis", metrics, settings, reactor)
        sadis_service = server_service(settings.sadis, sadis_site, reactor=reactor)
        sadis_service.setName("sadis")
        sadis_service.setServiceParent(top)
    # Device Management Interface (issue 15): VOLTHA's device manager connects with no token, so, as SADIS, the DMI
    # server is never token-protected; its calls are capped per connection and per server as the control APIs'.
    dmi_device = ManagedDevice(olt, reactor, random.Random(), sink_factory=lambda address: KafkaSink(
        address, reactor=reactor, name="dmi", metrics=metrics, client_id=f"BBSim-OLT-DMIServer-{settings.olt_id}"))
    DeviceService(dmi_device).setServiceParent(top)
    dmi_software = SoftwareManagementServicer(dmi_device)
    dmi = GrpcServerService(
        "dmi", settings.dmi,
        lambda server: _add_dmi(server, dmi_device, dmi_software),
        reactor=reactor, engine=loop_engine(settings.grpc_engine, settings.dmi),
        interceptors=[AioMetricsInterceptor(metrics, "dmi")], **limits)
    dmi.on_stopping.append(dmi_software.close_all)
    dmi.on_stopping.append(dmi_device.close_streams)
    dmi.setServiceParent(top)
    # The plain gRPC ports hold whatever connects (no hook on accept): a watch keeps each within its budget and the
    # process off its descriptor limit, closing the connections idle the longest (oltsim.serving.descriptors).
    grpc_servers = (openolt, grpc_v1, grpc_v0, dmi)
    top.connection_watch = GrpcConnectionWatch(
        reactor, lambda: {server.name: server.own_port for server in grpc_servers}, open_files_limit,
        reserve=3 * settings.max_connections + 256)
    top.connection_watch.setServiceParent(top)
    if settings.adapter != "builtin":
        # last: once every listener is up, the first start's one hint that nothing happens until an adapter comes
        WaitingForAdapter(openolt).setServiceParent(top)
    top.olt = olt
    top.dmi = dmi_device
    top.commands = commands
    top.hub = hub
    top.bus = bus
    top.metrics = metrics
    return top


def _site(resource, surface: str, metrics, settings, reactor, token=None, headers=(), public=()):
    """A REST listener's Site behind its connection limits (`surface` names both): requests counted in `metrics`,
    then refused without `token` (when one is set) unless they GET a `public` path; bodies above the settings'
    max_request_body are refused before they are read (413, with `headers` too); a connection is not read while
    more than max_unsent_output bytes of its answers wait unsent; at most max_connections connections are open,
    max_connections_per_peer from one address, and one beyond closes the idlest (oltsim.serving.connlimit)."""
    site = QuietSite(counted(guard(resource, token, surface, headers, public), metrics, surface),
                     max_body=settings.max_request_body, max_unsent_output=settings.max_unsent_output,
                     surface=surface, refusal_headers=headers)
    return LimitedFactory(site, ConnectionLimits(surface, settings.max_connections,
                                                 settings.max_connections_per_peer, reactor))


def check_listeners(settings) -> None:
    """Every listener's endpoint string is usable, TLS files included (read now, before anything listens)."""
    for name in LISTENER_FIELDS:
        if name != "sadis" or settings.sadis_server:
            check_listener(name, getattr(settings, name), grpc_server=name in ("openolt", "grpc_v1", "grpc_v0", "dmi"))


def _add_v0(server, servicer):
    legacy_pb2_grpc.add_BBSimServiceServicer_to_server(servicer, server)
    _reflect(server, legacy_pb2.DESCRIPTOR.services_by_name["BBSimService"].full_name)


def _port_of(endpoint: str) -> int:
    """The port of a tcp/ssl endpoint string (advertised in SADIS URLs)."""
    for part in endpoint.split(":")[1:]:
        value = part.split("=", 1)[-1] if part.startswith("port=") else part
        if value.isdigit():
            return int(value)
    return 50074


def _reflect(server, *services) -> None:
    """Server reflection (as BBSim has), so grpcurl-style clients need no proto files."""
    reflection.enable_server_reflection(services + (reflection.SERVICE_NAME,), server)


def _add_openolt(server, servicer):
    openolt_pb2_grpc.add_OpenoltServicer_to_server(servicer, server)
    _reflect(server, openolt_pb2.DESCRIPTOR.services_by_name["Openolt"].full_name)


def _add_dmi(server, device, software) -> None:
    """The four DMI services over ``device`` (``software``: its software servicer, closed when the server stops)
    and BBSim's own ``bbsim.BBsim_dmi`` (transceivers, CreateEvent), with reflection."""
    hw_management_service_pb2_grpc.add_NativeHWManagementServiceServicer_to_server(
        on_loop(HWManagementServicer(device), hw_management_service_pb2_grpc.NativeHWManagementServiceServicer),
        server)
    sw_management_service_pb2_grpc.add_NativeSoftwareManagementServiceServicer_to_server(
        on_loop(software, sw_management_service_pb2_grpc.NativeSoftwareManagementServiceServicer), server)
    hw_events_mgmt_service_pb2_grpc.add_NativeEventsManagementServiceServicer_to_server(
        on_loop(EventsServicer(device), hw_events_mgmt_service_pb2_grpc.NativeEventsManagementServiceServicer),
        server)
    hw_metrics_mgmt_service_pb2_grpc.add_NativeMetricsManagementServiceServicer_to_server(
        on_loop(MetricsServicer(device), hw_metrics_mgmt_service_pb2_grpc.NativeMetricsManagementServiceServicer),
        server)
    dmi_transceivers.add_to_server(dmi_transceivers.TransceiverServicer(device.olt, device), server)
    _reflect(server, *(module.DESCRIPTOR.services_by_name[name].full_name for module, name in (
        (hw_management_service_pb2, "NativeHWManagementService"),
        (sw_management_service_pb2, "NativeSoftwareManagementService"),
        (hw_events_mgmt_service_pb2, "NativeEventsManagementService"),
        (hw_metrics_mgmt_service_pb2, "NativeMetricsManagementService"),
        (bbsim_dmi_pb2, "BBsim_dmi"))))


def _add_v1(server, bbsim, oltsim):
    bbsim_pb2_grpc.add_BBSimServicer_to_server(bbsim, server)
    add_oltsim_to_server(oltsim, server)
    _reflect(server, bbsim_pb2.DESCRIPTOR.services_by_name["BBSim"].full_name,
             oltsim_pb2.DESCRIPTOR.services_by_name["Oltsim"].full_name)
