"""The composition root: `twistd oltsim` options (from the table of settings, oltsim.config.SETTINGS) and
`makeService`, the ONLY place things are wired: each `_build_*` builds one part from the settings and the parts it
needs, and the top service (oltsim.daemon.DaemonService) is declared with its children, in the order they start,
and its named parts. The services themselves live beside what they serve (oltsim.daemon, oltsim.scenario.atstart).

Building has no side effects: sockets, threads and timers start in startService. The one thing done at import is
choosing the reactor: the OpenOLT server runs on Twisted's asyncio reactor (oltsim.serving.onloop), and it has to be
installed before Klein, imported below, imports the global reactor. twistd imports this module only for the
`oltsim` subcommand, after its own --reactor option (which then wins, and is checked in makeService).
"""
from __future__ import annotations

from oltsim.serving.onloop import install_asyncio_reactor

install_asyncio_reactor()

import random
import sys

from voltha_protos import openolt_pb2_grpc

from oltsim._proto import bbsim_pb2_grpc, legacy_pb2_grpc, oltsim_pb2_grpc
from oltsim.api.eventbus import EventBus
from oltsim.api.images import ImageServer, with_images
from oltsim.api.powerswitch import REALM, DigestAuth, PowerSwitch, PowerSwitchRest
from oltsim.api.sadis import SadisRest
from oltsim.api.ui import UI_PATH
from oltsim.api.v0.grpc_v0 import LegacyServicer
from oltsim.api.v0.rest_v0 import V0Rest
from oltsim.api.v0.usecases_v0 import V0Commands
from oltsim.api.v1.grpc_v1 import BBSimServicer, OltsimServicer
from oltsim.api.v1.rest_v1 import V1Rest
from oltsim.api.v1.usecases_v1 import V1Commands
from oltsim.bbsimevents import BbsimEventPublisher
from oltsim.capture import Capture
from oltsim.capture.service import CaptureService
from oltsim.config import LISTENER_FIELDS, ConfigError, endpoint_from_address, load_settings
from oltsim.daemon import (FLAGS, PARAMETERS, CommandLineOptions, DaemonService, OltService,  # noqa: F401
                           WaitingForAdapter, asyncio_reactor, follow_openolt)
from oltsim.dataplane.front import DataPlaneFront
from oltsim.dataplane.interfaces import plan_interfaces
from oltsim.dataplane.netns import HostError
from oltsim.dataplane.pipeline import DataPlane
from oltsim.dataplane.pm import PmCounters
from oltsim.dataplane.service import CaptureWriter, DataPlaneService
from oltsim.dataplane.shaper import Shaper
from oltsim.dataplane.vxlan import VxlanSegments
from oltsim.dmi.device import DeviceService, ManagedDevice
from oltsim.dmi.sw import SoftwareManagementServicer
from oltsim.kafka import KafkaSink, SinkService
from oltsim.logs import CONTROL
from oltsim.model.builder import build_olt
from oltsim.omci.responder import OmciResponder
from oltsim.omci.vlanconfig import VlanConfig, VlanRecorder
from oltsim.omci.wrappers import OmciFaultWrapper
from oltsim.packets.engine import ProtocolEngine
from oltsim.prometheus import Metrics, with_metrics
from oltsim.scenario.atstart import ScenarioAtStart, scenario_for_start
from oltsim.scenario.runner import ScenarioRunner
from oltsim.servers import add_dmi, add_openolt, add_v0, add_v1, grpc_server, rest_site
from oltsim.serving.descriptors import GrpcConnectionWatch, open_files_limit
from oltsim.serving.endpoints import local_ip, port_of
from oltsim.serving.onloop import on_loop
from oltsim.serving.security import AccessToken, check_listener, server_service
from oltsim.southbound.builtin import BuiltinAdapter
from oltsim.southbound.openolt import IndicationHub, OpenoltServicer

class Options(CommandLineOptions):
    """twistd options mirroring BBSim's flags, derived from the table of settings (oltsim.daemon.PARAMETERS, FLAGS);
    the whole configuration is checked once they are read, so an impossible one fails with one message before
    anything listens."""

    optParameters = [[name, short, default, help] for name, short, default, help, _ in PARAMETERS]
    optFlags = [[name, short, help] for name, short, help, _ in FLAGS]


def makeService(options, reactor=None):
    """Build the OLT model, its APIs and servers; returns the top service (nothing runs yet).

    Without a ``reactor`` (twistd) the global one is used, and it must be the asyncio reactor (:func:`asyncio_reactor`);
    a given reactor is only checked when the OpenOLT server starts."""
    if reactor is None:
        reactor = asyncio_reactor()
        # twistd begins logging after makeService: every line it writes, its own and Twisted's, follows --log-level.
        CONTROL.filter_everything()
    settings = options.settings if hasattr(options, "settings") else load_settings({}, None)
    CONTROL.set_level(settings.log_level if settings.log_level in ("trace", "debug", "info", "warn",
                                                                     "error") else "info")
    olt, hub, capture, path = _build_model(settings, reactor)
    dataplane = _build_dataplane(settings, reactor, olt, path, capture)
    # security and metrics: one registry per service; the token guards the control surfaces only
    metrics = Metrics(olt, hub)
    token = AccessToken(settings.api_token) if settings.api_token else None
    openolt = _build_openolt(settings, reactor, olt, hub, path.frames, capture, metrics,
                             dataplane[0].dataplane if dataplane else None)
    power = OltService(olt, hub, reactor)
    sink, topic, kafka = _build_kafka_events(settings, reactor, olt, metrics)
    adapter = _build_builtin_adapter(settings, reactor, olt, hub, capture, openolt, dataplane)
    bus = EventBus(olt, reactor)
    # Fault scenarios: one runner over the same use cases, for the v1 API and --scenario; its stop (before
    # the OLT's, children stop last first) undoes what a running scenario holds.
    commands = V1Commands(olt, openolt=openolt, logs=CONTROL, olt_ip=local_ip(settings.openolt),
                          revision=settings.api_revision, capture=capture,
                          scenarios=lambda commands: ScenarioRunner(olt, commands, clock=reactor),
                          dataplane=dataplane[0] if dataplane else None)
    # its stop (before the listeners', children stop last first) ends the live captures, told in the stream
    capturing = [CaptureService(capture)] if capture is not None else []
    scenario = _build_scenario_at_start(options, settings, reactor, olt, commands)
    control = _build_control_apis(settings, reactor, commands, bus, metrics, token)
    sadis = _build_sadis(settings, reactor, olt, commands, metrics)
    dmi_device, dmi = _build_dmi(settings, reactor, olt, metrics)
    power_switch_endpoint, power_switch = _build_power_switch(settings, reactor, commands, metrics)
    watch = _build_connection_watch(settings, reactor, (openolt, control[0], control[2], dmi[-1]))
    # last: once every listener is up, the first start's one hint that nothing happens until an adapter comes
    waiting = [WaitingForAdapter(openolt)] if settings.adapter != "builtin" else []
    return DaemonService(
        {name.replace("_", "-"): getattr(settings, name) for name in LISTENER_FIELDS}
        | power_switch_endpoint,
        settings.warnings + settings.notes,
        children=[openolt, power, *kafka, *adapter, *capturing, scenario, *control, *sadis, *dmi, *power_switch,
                  watch, *waiting, *dataplane],
        olt=olt, hub=hub, commands=commands, bus=bus, metrics=metrics, dmi=dmi_device, connection_watch=watch,
        kafka_events=sink, event_topic=topic,
        # `bbsim` (oltsim.bbsimcmd.run) names itself and its flags in a failed start's line
        program=getattr(options, "program", "oltsim"), listener_names=getattr(options, "listener_names", None))


def _build_model(settings, reactor):
    """The OLT with its frame path (`_build_frame_path`), the capture ring (None when switched off: then nothing
    listens and the southbound's hooks see None) and the indication hub: (olt, hub, capture, path)."""
    path = _build_frame_path(settings)
    olt = build_olt(settings, reactor, random.Random(), omci=path.omci, frames=path.frames)
    path.attach(olt)
    # the southbound tells the capture what the adapter sends, the OLT's events the rest
    capture = Capture.for_olt(olt, settings.capture_size) if settings.capture_size else None
    return olt, IndicationHub(olt), capture, path


class FramePath:
    """What answers the frames the adapter sends an ONU, composed once (`_build_frame_path`) and handed to the OLT's
    devices (oltsim.model.hub.DeviceHub):

    - OMCI: OpenoltServicer.OmciMsgOut parses the octets once (oltsim.omci.wrappers.receive) and hands the frame to
      `omci`: the VLAN recorder (with a data plane: the OMCI that decides where frames go), then the ONU's fault knobs,
      then the responder, which answers with the OLT's OmciIndication events.
    - Packets and flows: OnuPacketOut, UplinkPacketOut, FlowAdd and the control API's restarts go to `frames`: the
      data plane's front (with a data plane: a bound UNI's frames and the NNI interfaces' to its pipeline), then the
      protocol engine (the simulated EAPOL, DHCP and IGMP clients and the NNI's DHCP server).
    - PM: with a data plane, `pm` (oltsim.dataplane.pm.PmCounters), which the responder was built with, counts its
      PM history MEs from the pipeline's counters once the pipeline is added to it (`_build_dataplane`)."""

    def __init__(self, responder, engine, vlan_config=None, front=None, pm=None):
        self.responder = responder
        self.engine = engine
        self.vlan_config = vlan_config
        self.front = front
        self.pm = pm
        omci = OmciFaultWrapper(responder)      # the fault knobs (scenarios) in front of the responder
        self.omci = VlanRecorder(omci, vlan_config) if vlan_config is not None else omci
        self.frames = front if front is not None else engine

    def attach(self, olt) -> None:
        """Let each part follow the OLT it serves (its events, its services' MACs)."""
        self.responder.attach(olt)
        self.engine.attach(olt)
        if self.vlan_config is not None:
            self.vlan_config.attach(olt)


def _build_frame_path(settings) -> FramePath:
    """The OMCI chain and the packet handlers, with the data plane's parts in front when the settings ask for
    interfaces (--uni-interfaces, --nni-interface, --nni-untagged-interface; its pipeline is added to the front and
    to the responder's PM counters by `_build_dataplane`)."""
    engine = ProtocolEngine.from_settings(settings)
    if _wants_dataplane(settings):
        vlan_config = VlanConfig()
        pm = PmCounters(vlan_config)
        return FramePath(OmciResponder.from_settings(settings, pm=pm), engine, vlan_config, DataPlaneFront(engine),
                         pm=pm)
    return FramePath(OmciResponder.from_settings(settings), engine)


def _wants_dataplane(settings) -> bool:
    return bool(settings.uni_interfaces.strip() or settings.nni_interface or settings.nni_untagged_interface)


def _build_openolt(settings, reactor, olt, hub, frames, capture, metrics, traffic=None):
    """The OpenOLT server (~240 calls per ONU at bring-up), which the model starts and stops (reboot); with the data
    plane (`traffic`, its pipeline), the GEM port and alloc id statistics report its flows' counters, and the port
    statistics its frames."""
    if traffic is not None:
        hub.count_ports(traffic)
    openolt = grpc_server("openolt", settings, reactor, metrics, lambda server: add_openolt(
        server, on_loop(OpenoltServicer(olt, hub, capture, traffic), openolt_pb2_grpc.OpenoltServicer)),
        bulk_methods=("/openolt.Openolt/OmciMsgOut",))
    openolt.on_stopping.append(hub.end_all)
    openolt.on_stopping.append(frames.flush_logs)
    olt.subscribe(follow_openolt(openolt))  # the model decides when the OpenOLT endpoint is up (reboot)
    return openolt


def _build_kafka_events(settings, reactor, olt, metrics):
    """BBSim's Kafka events, when on, through a sink that never blocks the OLT (bounded buffer, drops
    counted; its stop flushes for a second at most): (the sink, its topic, [its service]), else (None, None, [])."""
    if not settings.enable_events:
        return None, None, []
    topic = settings.kafka_event_topic or f"BBSim-OLT-{settings.olt_id}-Events"
    sink = KafkaSink(settings.kafka_address, reactor=reactor, name="events", metrics=metrics,
                     client_id=f"BBSim-OLT-{settings.olt_id}")
    BbsimEventPublisher(olt, reactor, lambda value: sink.publish(topic, value))
    return sink, topic, [SinkService(sink, "kafka-events")]


def _build_builtin_adapter(settings, reactor, olt, hub, capture, openolt, dataplane=()) -> list:
    """With --adapter builtin, oltsim drives its own OpenOLT side: started after the OLT powers on,
    stopped before it stops; for the UNIs with an interface (`dataplane`) it also writes their VLAN operations and
    forwarding flows, and checks their supplicants against --eap-secret."""
    if settings.adapter != "builtin":
        return []
    bound = {(uni.serial, uni.uni_id) for service in dataplane for uni in service.plan.unis}
    return [BuiltinAdapter(olt, hub, OpenoltServicer(olt, hub, capture), reactor, reachable=lambda: openolt.serving,
                           forwards=lambda serial, uni_id: (serial, uni_id) in bound,
                           eap_secret=settings.eap_secret.encode(), workflow=settings.workflow)]


def _build_dataplane(settings, reactor, olt, path: FramePath, capture=None) -> list:
    """The data plane when the settings ask for interfaces (--uni-interfaces, --nni-interface,
    --nni-untagged-interface), else []: the pure pipeline over the OMCI recorded in front of the responder and the
    OLT's flows, added to the front of the protocol engine (`path`); the service making the interfaces. Last among
    the children: it makes them (as root, in privilegedStartService) once everything else is built and bound, and
    stops first. A UNI that does not exist is one line and exit 2 now; the host's refusals (no CAP_NET_ADMIN, a name
    taken) are, when the service starts."""
    if path.front is None:
        return []
    try:
        plan = plan_interfaces(olt, settings.uni_interfaces.strip() or None, prefix=settings.interface_prefix,
                               netns=settings.uni_netns, nni=settings.nni_interface or None,
                               nni_untagged=settings.nni_untagged_interface or None)
    except HostError as exc:
        sys.stderr.write(f"oltsim: {exc}\n")
        raise SystemExit(2) from None
    if plan.empty:
        return []       # --uni-interfaces 0 and no NNI: nothing to make (and no privileges to ask for)
    # --capture-data-frames: the data frames in the capture ring too (off: traffic would push the control frames out)
    writer = CaptureWriter(capture, olt) if settings.capture_data_frames and capture is not None else None
    pipeline = DataPlane(olt, reactor, engine=path.engine, vlan_config=path.vlan_config,
                         nni_tagged=plan.nni is not None, nni_untagged=plan.nni_untagged is not None, capture=writer,
                         mtu=settings.nni_mtu)
    # --attachment vxlan: the same interfaces as VXLAN segments on one UDP port (no TAP, no privilege)
    vxlan = VxlanSegments(reactor, port=settings.vxlan_port, listen=settings.vxlan_listen.strip(),
                          remote=settings.vxlan_remote.strip() or None, hold=settings.vxlan_hold,
                          vni_base=settings.vxlan_vni_base) if settings.attachment.lower() == "vxlan" else None
    # the bandwidth profiles (the adapter's traffic schedulers) shape the frames of each T-CONT and downstream
    # scheduler; a frame of none passes as it is
    # (the front has the pipeline from now on: the service adds it again at its start and removes it at its stop)
    # --dataplane-offload auto: TAPs with the kernel's offloads (GSO super-frames); --dataplane-queue-bytes: each
    # interface's queue
    service = DataPlaneService(olt, pipeline, plan, reactor, exit_on_failure=True, vxlan=vxlan,
                               shaper=Shaper(rate_up=settings.pon_rate_up or None,     # 0: the PON's line rate
                                             rate_down=settings.pon_rate_down or None),
                               offload=settings.dataplane_offload.lower() != "off",
                               queue_bytes=settings.dataplane_queue_bytes,
                               front=path.front)
    path.front.add(pipeline, service.deliver)
    if path.pm is not None:
        path.pm.add(pipeline)          # the ONU's PM history MEs count the pipeline's frames
    return [service]


def _build_scenario_at_start(options, settings, reactor, olt, commands):
    """The --scenario file, checked against the built OLT (one line and exit 2 otherwise), played once it is up."""
    try:
        text = scenario_for_start(olt, settings.scenario, getattr(options, "scenario_text", None))
    except ConfigError as exc:
        typed = options.get("scenario") if isinstance(options, dict) else None
        sys.stderr.write(f"oltsim: {'--scenario: ' if typed else ''}{exc}\n")
        raise SystemExit(2) from None
    return ScenarioAtStart(olt, commands.scenarios, text, settings.scenario, reactor)


def _build_control_apis(settings, reactor, commands, bus, metrics, token) -> list:
    """v1 gRPC, v1 REST, v0 gRPC and v0 REST, in that order. Open calls are capped per server (RESOURCE_EXHAUSTED
    beyond; HTTP/2 streams per connection are set above that cap, grpcserver.STREAMS_ABOVE_CAP), so that no client,
    token or not, can wedge them."""
    grpc_v1 = grpc_server("grpc-v1", settings, reactor, metrics, lambda server: add_v1(
        server, on_loop(BBSimServicer(commands), bbsim_pb2_grpc.BBSimServicer),
        on_loop(OltsimServicer(bus, commands=commands), oltsim_pb2_grpc.OltsimServicer)),
        token=token, max_calls=settings.max_api_calls)
    grpc_v1.on_stopping.append(bus.close_all)
    secured = token is not None  # documented in the OpenAPI documents; the guard itself wraps the resources
    v1_rest = V1Rest(commands, bus, secured=secured, metrics=True)  # /metrics beside its routes, in its document
    rest_v1 = server_service(settings.rest_v1, rest_site(with_metrics(v1_rest.resource(), metrics), "rest-v1",
                                                         metrics, settings, reactor, token, public=(UI_PATH,)),
                             reactor=reactor)
    rest_v1.setName("rest-v1")
    v0_commands = V0Commands(commands.olt, olt_ip=commands.olt_ip)
    grpc_v0 = grpc_server("grpc-v0", settings, reactor, metrics, lambda server: add_v0(
        server, on_loop(LegacyServicer(v0_commands), legacy_pb2_grpc.BBSimServiceServicer)),
        token=token, max_calls=settings.max_api_calls)
    rest_v0 = server_service(settings.rest_v0, rest_site(V0Rest(v0_commands, secured=secured).resource(), "rest-v0",
                                                         metrics, settings, reactor, token,
                                                         headers=[(b"Deprecation", b"true")]),
                             reactor=reactor)
    rest_v0.setName("rest-v0")
    return [grpc_v1, rest_v1, grpc_v0, rest_v0]


def _build_sadis(settings, reactor, olt, commands, metrics) -> list:
    """SADIS, with the ONU software images beside it on the same port as BBSim's web server (GET /images/<file>,
    /images-count); never token-protected: the controller's SADIS app sends no token, and the data is read-only.
    None with bbsim.sadis_server: false."""
    if not settings.sadis_server:
        return []
    sadis = SadisRest(olt, olt_ip=commands.olt_ip, bp_format=settings.bp_format,
                      advertised_host=settings.sadis_host, port=port_of(settings.sadis, 50074))
    site = rest_site(with_images(sadis.resource(), ImageServer(settings.images_dir)), "sadis", metrics, settings,
                     reactor)
    listener = server_service(settings.sadis, site, reactor=reactor)
    listener.setName("sadis")
    return [listener]


def _build_dmi(settings, reactor, olt, metrics):
    """The Device Management Interface: (the managed device, [its service, its gRPC server]). VOLTHA's
    device manager connects with no token, so, as SADIS, it is never token-protected; its calls are capped per
    connection and per server as the control APIs'."""
    device = ManagedDevice(olt, reactor, random.Random(), sink_factory=lambda address: KafkaSink(
        address, reactor=reactor, name="dmi", metrics=metrics, client_id=f"BBSim-OLT-DMIServer-{settings.olt_id}"))
    software = SoftwareManagementServicer(device)
    server = grpc_server("dmi", settings, reactor, metrics, lambda server: add_dmi(server, device, software),
                          max_calls=settings.max_api_calls)
    server.on_stopping.append(software.close_all)
    server.on_stopping.append(device.close_streams)
    return device, [DeviceService(device), server]


def _build_power_switch(settings, reactor, commands, metrics) -> tuple[dict, list]:
    """With --power-switch (docs/power-switch.md), the web power switch the system tests' PowerSwitch tests drive:
    Digital Loggers' and Expert Power Control's APIs on one listener, behind HTTP Digest with --power-switch-user
    and --power-switch-password, its outlets feeding the ONUs then the OLT, switched through the v1 use cases.
    Never behind the access token (the robot library sends none); an endpoint that cannot listen is one line and
    exit 2 now. Returns ({its name: its endpoint}, [its listener]), or ({}, []) when off."""
    if not settings.power_switch.strip():
        return {}, []
    try:
        endpoint = endpoint_from_address(settings.power_switch)
        check_listener("power_switch", endpoint, grpc_server=False)
    except ConfigError as exc:
        sys.stderr.write(f"oltsim: --power-switch: {exc.message}\n")
        raise SystemExit(2) from None
    auth = DigestAuth(REALM, settings.power_switch_user, settings.power_switch_password, clock=reactor)
    api = PowerSwitchRest(PowerSwitch(commands), auth)
    listener = server_service(endpoint, rest_site(api.resource(), "power-switch", metrics, settings, reactor),
                              reactor=reactor)
    listener.setName("power-switch")
    return {"power-switch": endpoint}, [listener]


def _build_connection_watch(settings, reactor, grpc_servers):
    """The plain gRPC ports hold whatever connects (no hook on accept): a watch keeps each within its budget and
    the process off its descriptor limit, closing the connections idle the longest (oltsim.serving.descriptors)."""
    return GrpcConnectionWatch(reactor, lambda: {server.name: server.own_port for server in grpc_servers},
                               open_files_limit, reserve=3 * settings.max_connections + 256)
