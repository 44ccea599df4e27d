"""The committed gRPC stubs are up to date and carry BBSim's wire contract."""

import subprocess
import sys
from pathlib import Path

from voltha_protos import openolt_pb2

from oltsim._proto import bbsim_pb2, bbsim_pb2_grpc, legacy_pb2, legacy_pb2_grpc, oltsim_pb2

ROOT = Path(__file__).resolve().parents[2]
COMMITTED = ROOT / "oltsim" / "_proto"
GENERATED_SUFFIXES = ("_pb2.py", "_pb2.pyi", "_pb2_grpc.py")

# bbsim.BBSim as of BBSim 1.16.8, in declaration order.
BBSIM_METHODS = [
    "Version",
    "SetLogLevel",
    "GetOlt",
    "GetOltAllocatedResources",
    "PoweronOlt",
    "ShutdownOlt",
    "RebootOlt",
    "StopgRPCServer",
    "StartgRPCServer",
    "RestartgRPCServer",
    "GetONU",
    "GetONUs",
    "GetServices",
    "GetOnuUnis",
    "ShutdownONU",
    "ShutdownAllONUs",
    "ShutdownONUsOnPON",
    "PoweronONU",
    "PoweronAllONUs",
    "PoweronONUsOnPON",
    "RestartEapol",
    "RestartDhcp",
    "SetOnuAlarmIndication",
    "SetOltAlarmIndication",
    "GetFlows",
    "ChangeIgmpState",
    "GetOnuTrafficSchedulers",
    "GetUnis",
    "InvalidateMds",
]

# legacy.BBSimService as of BBSim 1.16.8, in declaration order.
LEGACY_METHODS = [
    "OLTStatus",
    "PortStatus",
    "ONUStatus",
    "ONUActivate",
    "ONUDeactivate",
    "GenerateONUAlarm",
    "GenerateOLTAlarm",
    "PerformDeviceAction",
    "GetFlows",
]


def _generated_files(directory):
    return sorted(p.name for p in directory.iterdir() if p.name.endswith(GENERATED_SUFFIXES))


def test_committed_stubs_match_regeneration(tmp_path):
    """Running tools/genproto.py reproduces every committed stub byte for byte."""
    subprocess.run(
        [sys.executable, str(ROOT / "tools" / "genproto.py"), "--out", str(tmp_path)],
        check=True,
        capture_output=True,
    )
    assert _generated_files(tmp_path) == _generated_files(COMMITTED)
    for name in _generated_files(tmp_path):
        assert (tmp_path / name).read_bytes() == (COMMITTED / name).read_bytes(), name


def test_bbsim_service_has_bbsim_methods():
    """bbsim.BBSim declares exactly BBSim 1.16.8's 29 methods, in its order."""
    service = bbsim_pb2.DESCRIPTOR.services_by_name["BBSim"]
    assert service.full_name == "bbsim.BBSim"
    assert [m.name for m in service.methods] == BBSIM_METHODS
    assert len(BBSIM_METHODS) == 29
    assert hasattr(bbsim_pb2_grpc, "add_BBSimServicer_to_server")


def test_bbsim_olt_field_numbers():
    """bbsim.Olt keeps BBSim's field numbers, including IP=7 declared before NNIPorts=5."""
    fields = bbsim_pb2.Olt.DESCRIPTOR.fields
    assert [(f.name, f.number) for f in fields] == [
        ("ID", 1),
        ("SerialNumber", 2),
        ("OperState", 3),
        ("InternalState", 4),
        ("IP", 7),
        ("NNIPorts", 5),
        ("PONPorts", 6),
        ("NniDhcpTrapVid", 8),
    ]


def test_bbsim_flows_carry_openolt_flows():
    """bbsim.Flows.flows is a repeated openolt.Flow from the installed voltha-protos."""
    field = bbsim_pb2.Flows.DESCRIPTOR.fields_by_name["flows"]
    assert field.number == 2
    assert field.message_type.full_name == "openolt.Flow"
    assert field.message_type is openolt_pb2.Flow.DESCRIPTOR
    assert bbsim_pb2.Flows(flows=[openolt_pb2.Flow(flow_id=7)]).flows[0].flow_id == 7


def test_legacy_service_has_bbsim_methods():
    """legacy.BBSimService declares BBSim 1.16.8's methods, each marked deprecated."""
    service = legacy_pb2.DESCRIPTOR.services_by_name["BBSimService"]
    assert service.full_name == "legacy.BBSimService"
    assert [m.name for m in service.methods] == LEGACY_METHODS
    assert all(m.GetOptions().deprecated for m in service.methods)
    assert hasattr(legacy_pb2_grpc, "add_BBSimServiceServicer_to_server")


def test_oltsim_service_is_a_separate_package():
    """Our extra RPCs live in oltsim.v1.Oltsim, with StreamEvents and Capture server-streaming."""
    service = oltsim_pb2.DESCRIPTOR.services_by_name["Oltsim"]
    assert service.full_name == "oltsim.v1.Oltsim"
    methods = service.methods_by_name
    assert sorted(methods) == ["Capture", "GetAlarms", "GetDataPlane", "GetScenario", "RunScenario",
                               "StopScenario", "StreamEvents", "VersionDetails"]
    assert methods["VersionDetails"].output_type.full_name == "oltsim.v1.VersionDetails"
    assert methods["StreamEvents"].server_streaming
    assert not methods["StreamEvents"].client_streaming
    assert methods["Capture"].server_streaming and not methods["Capture"].client_streaming
    assert methods["Capture"].output_type.full_name == "oltsim.v1.CaptureChunk"


def test_bbsim_dmi_service_keeps_bbsim_names_and_numbers():
    """bbsim.BBsim_dmi declares BBSim 1.16.8's four methods in its order, with its messages' field names and
    numbers, so BBSim's clients of the transceiver service work unchanged."""
    from oltsim._proto import bbsim_dmi_pb2, bbsim_dmi_pb2_grpc

    service = bbsim_dmi_pb2.DESCRIPTOR.services_by_name["BBsim_dmi"]
    assert service.full_name == "bbsim.BBsim_dmi"
    assert [(m.name, m.input_type.full_name, m.output_type.full_name) for m in service.methods] == [
        ("CreateEvent", "bbsim.DmiEvent", "bbsim.DmiResponse"),
        ("GetTransceivers", "bbsim.DmiEmpty", "bbsim.Transceivers"),
        ("PlugOutTransceiver", "bbsim.TransceiverRequest", "bbsim.DmiResponse"),
        ("PlugInTransceiver", "bbsim.TransceiverRequest", "bbsim.DmiResponse"),
    ]
    assert hasattr(bbsim_dmi_pb2_grpc, "add_BBsim_dmiServicer_to_server")

    def shape(message):
        return [(f.name, f.number, f.type, f.is_repeated) for f in message.DESCRIPTOR.fields]

    fd = bbsim_dmi_pb2.DESCRIPTOR.message_types_by_name["Transceiver"].fields[0]
    u32, string, boolean, msg = fd.TYPE_UINT32, fd.TYPE_STRING, fd.TYPE_BOOL, fd.TYPE_MESSAGE
    one, many = False, True
    assert shape(bbsim_dmi_pb2.DmiEvent) == [("event_name", 1, string, one)]
    assert shape(bbsim_dmi_pb2.DmiResponse) == [("status_code", 1, fd.TYPE_INT32, one), ("message", 2, string, one)]
    assert shape(bbsim_dmi_pb2.DmiEmpty) == []
    assert shape(bbsim_dmi_pb2.TransceiverRequest) == [("TransceiverId", 1, u32, one)]
    assert shape(bbsim_dmi_pb2.Transceiver) == [
        ("ID", 1, u32, one), ("UUID", 2, string, one), ("Name", 3, string, one), ("Technology", 4, string, one),
        ("PluggedIn", 5, boolean, one), ("PonIds", 6, u32, many)]
    assert shape(bbsim_dmi_pb2.Transceivers) == [("Items", 1, msg, many)]


def test_generated_classes_belong_to_the_package():
    """Generated message classes report oltsim._proto modules, not top-level ones."""
    assert bbsim_pb2.Olt.__module__ == "oltsim._proto.bbsim_pb2"
    assert legacy_pb2.ONUInfo.__module__ == "oltsim._proto.legacy_pb2"
