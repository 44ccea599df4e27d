"""gRPC `legacy.BBSimService` (BBSim's legacy v0 API): every RPC delegates to `V0Commands`."""
from __future__ import annotations

from oltsim._proto import legacy_pb2, legacy_pb2_grpc
from oltsim.api.grpc_common import delegating_servicer

LegacyServicer = delegating_servicer(legacy_pb2_grpc.BBSimServiceServicer,
                                     legacy_pb2.DESCRIPTOR.services_by_name["BBSimService"], "V0Commands")
