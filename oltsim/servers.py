"""What each of the daemon's servers carries: the gRPC services registered on the OpenOLT, v1, v0 and DMI servers
(each with server reflection, as BBSim has, so that grpcurl-style clients need no proto files), and a REST
listener's site behind its limits; the gRPC servers themselves. :mod:`oltsim.tap` builds the daemon's with these.
"""
from __future__ import annotations

from grpc_reflection.v1alpha import reflection
from dmi import (hw_events_mgmt_service_pb2, hw_events_mgmt_service_pb2_grpc, hw_management_service_pb2,
                 hw_management_service_pb2_grpc, hw_metrics_mgmt_service_pb2, hw_metrics_mgmt_service_pb2_grpc,
                 sw_management_service_pb2, sw_management_service_pb2_grpc)
from voltha_protos import openolt_pb2, openolt_pb2_grpc

from oltsim._proto import bbsim_dmi_pb2, bbsim_pb2, bbsim_pb2_grpc, legacy_pb2, legacy_pb2_grpc, oltsim_pb2
from oltsim.api.v1.grpc_v1 import add_to_server as add_oltsim_to_server
from oltsim.api.site import ApiSite
from oltsim.daemon import loop_engine
from oltsim.dmi import transceivers as dmi_transceivers
from oltsim.dmi.hw import HWManagementServicer
from oltsim.dmi.hw_events import EventsServicer
from oltsim.dmi.hw_metrics import MetricsServicer
from oltsim.prometheus import AioMetricsInterceptor, counted
from oltsim.serving.connlimit import ConnectionLimits, LimitedFactory
from oltsim.serving.grpcserver import GrpcServerService
from oltsim.serving.onloop import on_loop
from oltsim.serving.security import guard, interceptors

__all__ = ["QuietSite", "add_dmi", "add_openolt", "add_v0", "add_v1", "connection_limits", "grpc_server", "rest_site"]


class QuietSite(ApiSite):
    """A Site that logs only failed requests: one access-log line per request costs more than
    answering a cached read, and the handlers already log what went wrong."""

    def log(self, request):
        if request.code >= 400:
            super().log(request)


def connection_limits(settings) -> dict:
    """Connections per Twisted listener (REST, SADIS, an ssl: gRPC port's TLS relay; oltsim.serving.connlimit): at
    most max_connections open, max_connections_per_peer from one address, one beyond closes the idlest."""
    return dict(max_connections=settings.max_connections, max_connections_per_peer=settings.max_connections_per_peer)


def grpc_server(name: str, settings, reactor, metrics, add, token=None, **limits) -> GrpcServerService:
    """The gRPC server of listener `name` (its setting, ``grpc-v1`` for ``grpc_v1``) on the reactor's loop (no thread
    hops; pygrpc-native's front unless TLS or the user asks for grpc.aio) carrying what `add(server)` registers,
    its calls counted in `metrics` and, with a `token`, refused without it; `limits` go to GrpcServerService."""
    endpoint = getattr(settings, name.replace("-", "_"))
    return GrpcServerService(name, endpoint, add, reactor=reactor, engine=loop_engine(settings.grpc_engine, endpoint),
                             interceptors=[AioMetricsInterceptor(metrics, name), *interceptors(token, name)],
                             **connection_limits(settings), **limits)


def rest_site(resource, surface: str, metrics, settings, reactor, token=None, headers=(), public=()):
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


def _reflect(server, *services) -> None:
    """Server reflection (as BBSim has), so grpcurl-style clients need no proto files."""
    reflection.enable_server_reflection(services + (reflection.SERVICE_NAME,), server)


def add_openolt(server, servicer) -> None:
    """The OpenOLT service (an on-loop servicer) with reflection."""
    openolt_pb2_grpc.add_OpenoltServicer_to_server(servicer, server)
    _reflect(server, openolt_pb2.DESCRIPTOR.services_by_name["Openolt"].full_name)


def add_v1(server, bbsim, oltsim) -> None:
    """BBSim's v1 control service and oltsim's own (on-loop servicers) with reflection."""
    bbsim_pb2_grpc.add_BBSimServicer_to_server(bbsim, server)
    add_oltsim_to_server(oltsim, server)
    _reflect(server, bbsim_pb2.DESCRIPTOR.services_by_name["BBSim"].full_name,
             oltsim_pb2.DESCRIPTOR.services_by_name["Oltsim"].full_name)


def add_v0(server, servicer) -> None:
    """BBSim's legacy v0 service (an on-loop servicer) with reflection."""
    legacy_pb2_grpc.add_BBSimServiceServicer_to_server(servicer, server)
    _reflect(server, legacy_pb2.DESCRIPTOR.services_by_name["BBSimService"].full_name)


def add_dmi(server, device, software) -> None:
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
