"""Bad input on the v1 control API and the OpenOLT southbound: every row of the error table of decisions section 3
on REST (the real Klein resource through StubTreq) and on gRPC (the servicers' on_loop handlers run inline), with the same status
and the same message; and the inputs that kill or hang BBSim (bbsim-reference.md section 7) on these surfaces, each
answered clearly while the simulator keeps serving. A refused request has no side effect."""

from __future__ import annotations

import inspect
import re
from dataclasses import dataclass
from typing import Callable

import grpc
import pytest
from twisted.logger import capturedLogs
from voltha_protos import openolt_pb2, openolt_pb2_grpc, tech_profile_pb2

from conftest import Sim, grpc_call, grpc_error
from oltsim._proto import bbsim_pb2, bbsim_pb2_grpc, oltsim_pb2_grpc
from oltsim.api import translate
from oltsim.api.v1.grpc_v1 import BBSimServicer, OltsimServicer
from oltsim.serving.onloop import on_loop, rpc_functions
from oltsim.southbound.openolt import OpenoltServicer

SN = "BBSM00000001"
UNKNOWN = "BBSM99999999"
HTTP = {grpc.StatusCode.NOT_FOUND: 404, grpc.StatusCode.INVALID_ARGUMENT: 400,
        grpc.StatusCode.FAILED_PRECONDITION: 409, grpc.StatusCode.INTERNAL: 500}
# What a message for people never contains: FSM internals, Python internals, BBSim's kebab-case ids.
JARGON = re.compile(r"Traceback|inappropriate|IllegalTransition|Exception|oltsim\.|cannot-find|-in-use-on-")


# ---- states a request can meet -------------------------------------------------------------------


def fresh(sim):
    """Started, no adapter has ever connected."""


def up(sim):
    """An adapter connected and activated every ONU."""
    sim.bring_up()


def onu_disabled(sim):
    up(sim)
    sim.olt.shutdown_onu(SN)


def rebooting(sim):
    up(sim)
    sim.olt.reboot()


@dataclass
class Case:
    """One refused request: its REST form, its gRPC form (either may be None when that surface cannot express
    it), the expected status and, when given, the exact message."""

    id: str
    setup: Callable
    rest: tuple[str, str] | None
    grpc: tuple[str, object] | None
    code: grpc.StatusCode
    message: str | None = None
    same_input: bool = True      # both forms carry the same input, so the messages must be equal

    def param(self):
        return pytest.param(self, id=self.id)


def onu_req(serial=UNKNOWN):
    return bbsim_pb2.ONURequest(SerialNumber=serial)


def uni_req(serial=UNKNOWN, uni=""):
    return bbsim_pb2.UNIRequest(OnuSerialNumber=serial, UniID=uni)


def alarm_req(serial=SN, alarm="DYING_GASP", status="on"):
    return bbsim_pb2.ONUAlarmRequest(SerialNumber=serial, AlarmType=alarm, Status=status)


def los_req(kind="pon", intf=0, status="on"):
    return bbsim_pb2.OLTAlarmRequest(InterfaceType=kind, InterfaceID=intf, Status=status)


def igmp_req(serial=SN, uni=0, action=bbsim_pb2.JOIN, group="224.0.0.22", vlan=55):
    return bbsim_pb2.IgmpRequest(OnuSerialNumber=serial, UniID=uni, SubActionVal=action, GroupAddress=group,
                                 VLAN=vlan)


def igmp_path(serial=SN, uni="0", action="JOIN", group="224.0.0.22", vlan="55"):
    return ("POST", f"/v1/olt/onus/{serial}/{uni}/igmp/{action}/{group}/{vlan}")


NF, IA, FP = grpc.StatusCode.NOT_FOUND, grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.FAILED_PRECONDITION

CASES = [
    # -- unknown ONU serial ---------------------------------------------------------------------------------------
    Case("serial-get", up, ("GET", f"/v1/olt/onus/{UNKNOWN}"), ("GetONU", onu_req()), NF,
         f"ONU {UNKNOWN} not found on this OLT (oltsimctl onu list names its ONUs)"),
    Case("serial-shutdown", up, ("DELETE", f"/v1/olt/onus/{UNKNOWN}"), ("ShutdownONU", onu_req()), NF),
    Case("serial-poweron", up, ("POST", f"/v1/olt/onus/{UNKNOWN}"), ("PoweronONU", onu_req()), NF),
    Case("serial-alarm", up, ("POST", f"/v1/olt/onus/{UNKNOWN}/alarms/DYING_GASP/on"),
         ("SetOnuAlarmIndication", alarm_req(UNKNOWN)), NF),
    Case("serial-flows", up, ("GET", f"/v1/olt/onus/{UNKNOWN}/flows"), ("GetFlows", onu_req()), NF),
    Case("serial-flows-query", up, ("GET", f"/v1/olt/flows?SerialNumber={UNKNOWN}"), ("GetFlows", onu_req()), NF),
    Case("serial-schedulers", up, ("GET", f"/v1/olt/onus/{UNKNOWN}/trafficschedulers"),
         ("GetOnuTrafficSchedulers", onu_req()), NF),
    Case("serial-eapol", up, ("POST", f"/v1/olt/onus/{UNKNOWN}/eapol"), ("RestartEapol", uni_req()), NF),
    Case("serial-dhcp", up, ("POST", f"/v1/olt/onus/{UNKNOWN}/dhcp"), ("RestartDhcp", uni_req()), NF),
    Case("serial-igmp", up, igmp_path(UNKNOWN), ("ChangeIgmpState", igmp_req(UNKNOWN)), NF),
    Case("serial-unis", up, None, ("GetOnuUnis", onu_req()), NF),
    Case("serial-services", up, None, ("GetServices", uni_req()), NF),
    Case("serial-mds", up, None, ("InvalidateMds", onu_req()), NF),
    # -- unknown PON, NNI and UNI ids -----------------------------------------------------------------------------
    Case("pon-shutdown", up, ("DELETE", "/v1/olt/port/9/onus"), ("ShutdownONUsOnPON", bbsim_pb2.PONRequest(
        PonPortId=9)), NF, "PON 9 not found (this OLT has PONs 0..1)"),
    Case("pon-poweron", up, ("POST", "/v1/olt/port/9/onus"), ("PoweronONUsOnPON", bbsim_pb2.PONRequest(
        PonPortId=9)), NF),
    Case("pon-los", up, ("POST", "/v1/olt/ports/pon/9/alarms/los/on"), ("SetOltAlarmIndication", los_req("pon", 9)),
         NF),
    Case("nni-los", up, ("POST", "/v1/olt/ports/nni/5/alarms/los/on"), ("SetOltAlarmIndication", los_req("nni", 5)),
         NF, "NNI 5 not found (this OLT has NNIs 0..0)"),
    Case("uni-eapol", up, ("POST", f"/v1/olt/onus/{SN}/eapol?UniID=9"), ("RestartEapol", uni_req(SN, "9")), NF,
         f"UNI 9 not found on ONU {SN}"),
    Case("uni-dhcp", up, ("POST", f"/v1/olt/onus/{SN}/dhcp?UniID=9"), ("RestartDhcp", uni_req(SN, "9")), NF),
    Case("uni-igmp", up, igmp_path(uni="9"), ("ChangeIgmpState", igmp_req(uni=9)), NF),
    Case("uni-services", up, None, ("GetServices", uni_req(SN, "9")), NF),
    # -- malformed or out-of-range arguments ----------------------------------------------------------------------
    Case("alarm-type", up, ("POST", f"/v1/olt/onus/{SN}/alarms/FOO/on"), ("SetOnuAlarmIndication",
                                                                          alarm_req(alarm="FOO")), IA),
    Case("alarm-type-los", up, ("POST", f"/v1/olt/onus/{SN}/alarms/LOS/on"), ("SetOnuAlarmIndication",
                                                                              alarm_req(alarm="LOS")), IA),
    Case("alarm-type-onu-alarm", up, ("POST", f"/v1/olt/onus/{SN}/alarms/ONU_ALARM/on"),
         ("SetOnuAlarmIndication", alarm_req(alarm="ONU_ALARM")), IA),
    Case("alarm-status", up, ("POST", f"/v1/olt/onus/{SN}/alarms/DYING_GASP/bar"),
         ("SetOnuAlarmIndication", alarm_req(status="bar")), IA, "alarm status must be on or off (got 'bar')"),
    Case("los-status", up, ("POST", "/v1/olt/ports/pon/0/alarms/los/bar"),
         ("SetOltAlarmIndication", los_req(status="bar")), IA),
    Case("interface-type", up, ("POST", "/v1/olt/ports/foo/0/alarms/los/on"),
         ("SetOltAlarmIndication", los_req(kind="foo")), IA),
    Case("igmp-sub-action", up, igmp_path(action="FOO"), ("ChangeIgmpState", igmp_req(action=7)), IA,
         same_input=False),
    Case("igmp-sub-action-number", up, igmp_path(action="7"), ("ChangeIgmpState", igmp_req(action=7)), IA,
         same_input=False),
    Case("vlan-too-high", up, igmp_path(vlan="4096"), ("ChangeIgmpState", igmp_req(vlan=4096)), IA,
         "VLAN must be between 0 and 4095 (got 4096)"),
    Case("vlan-negative", up, igmp_path(vlan="-1"), ("ChangeIgmpState", igmp_req(vlan=-1)), IA),
    Case("group-unicast", up, igmp_path(group="10.0.0.1"), ("ChangeIgmpState", igmp_req(group="10.0.0.1")), IA),
    Case("group-garbage", up, igmp_path(group="not-an-address"), ("ChangeIgmpState",
                                                                  igmp_req(group="not-an-address")), IA),
    Case("non-numeric-pon", up, ("POST", "/v1/olt/port/abc/onus"), None, IA),
    Case("non-numeric-pon-delete", up, ("DELETE", "/v1/olt/port/abc/onus"), None, IA),
    Case("negative-pon", up, ("POST", "/v1/olt/port/-1/onus"), None, IA),
    Case("huge-pon", up, ("DELETE", "/v1/olt/port/4294967296/onus"), None, IA),
    Case("non-numeric-interface-id", up, ("POST", "/v1/olt/ports/pon/abc/alarms/los/on"), None, IA),
    Case("non-numeric-uni-igmp", up, igmp_path(uni="x"), None, IA),
    Case("non-numeric-uni-eapol", up, ("POST", f"/v1/olt/onus/{SN}/eapol?UniID=x"), ("RestartEapol",
                                                                                   uni_req(SN, "x")), IA),
    Case("non-numeric-uni-services", up, None, ("GetServices", uni_req(SN, "x")), IA),
    Case("unknown-query-parameter", up, ("GET", "/v1/olt/flows?Foo=1"), None, IA),
    Case("resource-type", up, None, ("GetOltAllocatedResources", bbsim_pb2.OltAllocatedResourceType(
        type=bbsim_pb2.OltAllocatedResourceType.UNKNOWN)), IA),
    Case("log-level", up, None, ("SetLogLevel", bbsim_pb2.LogLevel(level="loud")), IA),
    # -- not legal in the current state ---------------------------------------------------------------------------
    Case("poweron-enabled-onu", up, ("POST", f"/v1/olt/onus/{SN}"), ("PoweronONU", onu_req(SN)), FP,
         f"ONU {SN} is already enabled"),
    Case("shutdown-disabled-onu", onu_disabled, ("DELETE", f"/v1/olt/onus/{SN}"), ("ShutdownONU", onu_req(SN)), FP,
         f"ONU {SN} is already disabled"),
    Case("reboot-while-rebooting", rebooting, ("POST", "/v1/olt/reboot"), ("RebootOlt", bbsim_pb2.Empty()), FP,
         "OLT BBSIM_OLT_0 is already rebooting"),
    Case("reboot-before-adapter", fresh, ("POST", "/v1/olt/reboot"), ("RebootOlt", bbsim_pb2.Empty()), FP),
    Case("poweron-onu-while-rebooting", rebooting, ("POST", f"/v1/olt/onus/{SN}"), ("PoweronONU", onu_req(SN)), FP,
         "OLT BBSIM_OLT_0 is rebooting"),
    Case("poweron-pon-while-rebooting", rebooting, ("POST", "/v1/olt/port/0/onus"),
         ("PoweronONUsOnPON", bbsim_pb2.PONRequest(PonPortId=0)), FP),
    Case("poweron-all-while-rebooting", rebooting, ("POST", "/v1/olt/onus"), ("PoweronAllONUs", bbsim_pb2.Empty()),
         FP),
    Case("poweron-pon-all-on", up, ("POST", "/v1/olt/port/0/onus"), ("PoweronONUsOnPON", bbsim_pb2.PONRequest(
        PonPortId=0)), FP),
    Case("shutdown-pon-none-enabled", fresh, ("DELETE", "/v1/olt/port/1/onus"),
         ("ShutdownONUsOnPON", bbsim_pb2.PONRequest(PonPortId=1)), FP),
    Case("shutdown-all-none-enabled", fresh, ("DELETE", "/v1/olt/onus"), ("ShutdownAllONUs", bbsim_pb2.Empty()), FP),
    Case("poweron-onu-pon-down", fresh, ("POST", f"/v1/olt/onus/{SN}"), ("PoweronONU", onu_req(SN)), FP),
    Case("eapol-no-service-up", up, ("POST", f"/v1/olt/onus/{SN}/eapol"), ("RestartEapol", uni_req(SN)), FP),
    Case("dhcp-no-service-up", up, ("POST", f"/v1/olt/onus/{SN}/dhcp"), ("RestartDhcp", uni_req(SN)), FP),
    Case("igmp-uni-down", up, igmp_path(), ("ChangeIgmpState", igmp_req()), FP),
    Case("poweron-olt-twice", fresh, None, ("PoweronOlt", bbsim_pb2.Empty()), FP),
    Case("shutdown-olt-not-enabled", fresh, None, ("ShutdownOlt", bbsim_pb2.Empty()), FP),
]


def check_message(case, message):
    assert message and not JARGON.search(message), message
    if case.message is not None:
        assert message == case.message


def run_rest(case):
    sim = Sim()
    case.setup(sim)
    sim.events.clear()
    generation = sim.olt.generation
    reply = sim.rest.call(*case.rest)
    return sim, reply, generation


def run_grpc(case):
    sim = Sim()
    case.setup(sim)
    sim.events.clear()
    generation = sim.olt.generation
    error = grpc_error(sim.bbsim, *case.grpc)
    return sim, error, generation


def assert_error_body(reply, code):
    assert reply.header("Content-Type") == "application/json"
    body = reply.json
    assert set(body) == {"error", "code", "message"}
    assert body["error"] == body["message"]
    assert body["code"] == code.value[0]
    return body["message"]


@pytest.mark.parametrize("case", [c.param() for c in CASES if c.rest])
def test_rest_error(case):
    """On REST the condition gives its HTTP status and grpc-gateway's JSON body with a message for people, has no
    side effect, and the API keeps serving."""
    sim, reply, generation = run_rest(case)
    assert reply.code == HTTP[case.code], reply.body
    check_message(case, assert_error_body(reply, case.code))
    assert sim.events == []
    assert sim.olt.generation == generation
    assert sim.rest.call("GET", "/v1/olt").code == 200


@pytest.mark.parametrize("case", [c.param() for c in CASES if c.grpc])
def test_grpc_error(case):
    """On gRPC the condition gives its status code with a message for people, and has no side effect."""
    sim, error, generation = run_grpc(case)
    assert error.code is case.code
    check_message(case, error.details)
    assert sim.events == []
    assert sim.olt.generation == generation
    assert grpc_call(sim.bbsim, "GetOlt", bbsim_pb2.Empty()).SerialNumber == "BBSIM_OLT_0"


@pytest.mark.parametrize("case", [c.param() for c in CASES if c.rest and c.grpc and c.same_input])
def test_same_message_on_both_surfaces(case):
    """REST and gRPC answer the same input with the same message text."""
    _, reply, _ = run_rest(case)
    _, error, _ = run_grpc(case)
    assert reply.json["message"] == error.details


def test_error_table_is_the_one_of_decisions_section_3():
    """The one error table maps each domain error to the gRPC status and HTTP status of decisions section 3."""
    from oltsim.model.errors import FailedPrecondition, InvalidArgument, NotFound
    assert translate.status_for(NotFound("x")) == (grpc.StatusCode.NOT_FOUND, 404)
    assert translate.status_for(InvalidArgument("x")) == (grpc.StatusCode.INVALID_ARGUMENT, 400)
    assert translate.status_for(FailedPrecondition("x")) == (grpc.StatusCode.FAILED_PRECONDITION, 409)
    assert translate.status_for(KeyError("x")) == (grpc.StatusCode.INTERNAL, 500)


# ---- unknown paths, wrong methods, unexpected exceptions -----------------------------------------


@pytest.mark.parametrize("path", ["/v1/nope", "/v1/olt/onus/BBSM00000001/bogus", "/v2/olt",
                                  "/v1/olt/port/0", "/v1//olt", "/v1/olt//onus", "/v1/olt/"])
def test_unknown_path_is_404_json(path):
    """An unknown path is 404 with the JSON error body (BBSim answers text/plain)."""
    reply = Sim().rest.call("GET", path)
    assert reply.code == 404
    message = assert_error_body(reply, grpc.StatusCode.NOT_FOUND)
    assert path in message


@pytest.mark.parametrize("path", ["/v1/olt/onus/%FF", "/v1/olt/onus/BBSM00000001/%C3%28/igmp/JOIN/224.0.0.1/1",
                                  "/v1/%80"])
def test_non_utf8_path_is_400_json(path):
    """A path that is not UTF-8 once decoded is refused with the JSON error body (Klein answers text/html and logs
    the client's mistake as a failure; found by probing the REST port)."""
    reply = Sim().rest.call("GET", path)
    assert reply.code == 400
    assert "UTF-8" in assert_error_body(reply, grpc.StatusCode.INVALID_ARGUMENT)


@pytest.mark.parametrize("method,path,allowed", [
    ("PUT", "/v1/olt", {"GET"}),
    ("DELETE", "/v1/olt/reboot", {"POST"}),
    ("PATCH", f"/v1/olt/onus/{SN}", {"GET", "DELETE", "POST"}),
    ("GET", "/v1/olt/port/0/onus", {"DELETE", "POST"}),
    ("POST", "/v1/olt/flows", {"GET"}),
    ("GET", f"/v1/olt/onus/{SN}/alarms/DYING_GASP/on", {"POST"}),
])
def test_wrong_method_is_405_json_with_allow(method, path, allowed):
    """A known path with the wrong method is 405 with the JSON error body and an Allow header listing the methods
    the path takes; nothing happens."""
    sim = Sim()
    up(sim)
    sim.events.clear()
    reply = sim.rest.call(method, path)
    assert reply.code == 405
    assert reply.header("Content-Type") == "application/json"
    body = reply.json
    assert set(body) == {"error", "code", "message"} and body["error"] == body["message"]
    assert allowed <= {m.strip() for m in reply.header("Allow").split(",")}
    assert sim.events == []


@pytest.mark.parametrize("path", [f"/v1/olt/onus/{SN}/eapol", f"/v1/olt/onus/{SN}/dhcp",
                                  f"/v1/olt/onus/{SN}/0/igmp/JOIN/224.0.0.22/55"])
def test_extended_only_paths_are_404_in_base_revision(path):
    """The base revision does not serve the extended-only actions: 404 JSON and no effect."""
    sim = Sim(revision="base")
    up(sim)
    sim.events.clear()
    reply = sim.rest.call("POST", path)
    assert reply.code == 404
    assert_error_body(reply, grpc.StatusCode.NOT_FOUND)
    assert sim.events == []


def broken(request):
    raise KeyError("secret internal detail")


def test_unexpected_exception_on_rest_is_500_with_request_id():
    """An unexpected exception is 500 INTERNAL with a request id that is also logged, no internals in the body,
    and the API keeps serving."""
    sim = Sim()
    sim.commands.GetONU = broken
    with capturedLogs() as logged:
        reply = sim.rest.call("GET", f"/v1/olt/onus/{SN}")
    assert reply.code == 500
    message = assert_error_body(reply, grpc.StatusCode.INTERNAL)
    assert "secret" not in message
    request_id = re.fullmatch(r"internal error \(request id (\w+)\)", message).group(1)
    [event] = [e for e in logged if e.get("request_id") == request_id]
    assert event["log_failure"].check(KeyError)
    assert sim.rest.call("GET", "/v1/olt").code == 200
    assert sim.rest.call("GET", "/v1/olt/onus").code == 200


def test_unexpected_exception_on_grpc_is_internal_with_request_id():
    """On gRPC an unexpected exception is INTERNAL with a logged request id, and the servicer keeps answering."""
    sim = Sim()
    sim.commands.GetONU = broken
    with capturedLogs() as logged:
        error = grpc_error(sim.bbsim, "GetONU", onu_req(SN))
    assert error.code is grpc.StatusCode.INTERNAL and "secret" not in error.details
    request_id = re.fullmatch(r"internal error \(request id (\w+)\)", error.details).group(1)
    assert [e for e in logged if e.get("request_id") == request_id]
    assert grpc_call(sim.bbsim, "GetOlt", bbsim_pb2.Empty()).SerialNumber == "BBSIM_OLT_0"


def test_every_control_grpc_method_is_served_inline_or_as_an_async_stream():
    """Every gRPC method of the control servicers is a plain method the loop runs inline or an async-generator
    stream: none holds a thread (32 open streams would exhaust a 32-thread pool and wedge the API)."""
    for servicer, base in ((BBSimServicer(None), bbsim_pb2_grpc.BBSimServicer),
                           (OltsimServicer(None), oltsim_pb2_grpc.OltsimServicer)):
        served = on_loop(servicer, base)
        for name, _ in rpc_functions(base):
            handler = getattr(served, name)
            assert getattr(handler, "inline", None) is not None or inspect.isasyncgenfunction(handler), name


def test_openolt_has_one_servicer_served_on_the_loop():
    """The OpenOLT servicer's every RPC is a plain method the loop runs inline or its one async-generator stream
    (EnableIndication, with no second copy)."""
    served = on_loop(OpenoltServicer(None, None), openolt_pb2_grpc.OpenoltServicer)
    for name, _ in rpc_functions(OpenoltServicer):
        handler = getattr(served, name, None)
        if handler is not None:
            assert getattr(handler, "inline", None) is not None or inspect.isasyncgenfunction(handler), name
    assert inspect.isasyncgenfunction(OpenoltServicer.EnableIndication)
    assert [name for name in vars(OpenoltServicer) if "EnableIndication" in name] == ["EnableIndication"]


def test_every_openolt_rpc_is_served_on_the_reactor_loop():
    """The daemon serves OpenOLT through on_loop: every RPC of openolt.Openolt gets a coroutine handler (the
    indication stream an async generator), none falls back to the generated UNIMPLEMENTED stub, and each unary
    one offers the native engine its plain servicer method to call inline."""
    sim = Sim()
    served = on_loop(sim.openolt_servicer, openolt_pb2_grpc.OpenoltServicer)
    for method in openolt_pb2.DESCRIPTOR.services_by_name["Openolt"].methods:
        handler = getattr(served, method.name)
        if method.server_streaming:
            assert inspect.isasyncgenfunction(handler), method.name
        else:
            assert inspect.iscoroutinefunction(handler), method.name
            function, servicer, name = handler.inline
            assert (servicer, name) == (sim.openolt_servicer, method.name)
            assert function.__func__ is vars(OpenoltServicer)[method.name], method.name


# ---- BBSim's process-killing and hanging inputs (reference section 7) ----------------------------


def serial_pb(serial):
    return translate.serial_to_pb(serial)


OPENOLT_CASES = [
    ("enable-pon-unknown", "EnablePonIf", openolt_pb2.Interface(intf_id=9), NF),
    ("disable-pon-unknown", "DisablePonIf", openolt_pb2.Interface(intf_id=9), NF),
    ("pon-info-unknown", "GetPonInterfaceInfo", openolt_pb2.Interface(intf_id=9), NF),
    ("flow-add-unknown-pon", "FlowAdd", openolt_pb2.Flow(access_intf_id=9, onu_id=1, flow_id=1,
                                                         flow_type="upstream", alloc_id=1024, gemport_id=1024), NF),
    ("packet-out-unknown-pon", "OnuPacketOut", openolt_pb2.OnuPacket(intf_id=9, onu_id=1, port_no=256,
                                                                     gemport_id=1024, pkt=b"\x00" * 64), NF),
    ("activate-unknown-serial", "ActivateOnu", openolt_pb2.Onu(intf_id=0, onu_id=1,
                                                               serial_number=serial_pb("BBSM0000FFFF")), NF),
    ("activate-serial-on-other-pon", "ActivateOnu", openolt_pb2.Onu(intf_id=0, onu_id=1,
                                                                    serial_number=serial_pb("BBSM00000101")), NF),
    ("activate-unknown-pon", "ActivateOnu", openolt_pb2.Onu(intf_id=9, onu_id=1, serial_number=serial_pb(SN)), NF),
    ("onu-info-unknown-onu", "GetOnuInfo", openolt_pb2.Onu(intf_id=0, onu_id=9), NF),
    ("onu-info-unknown-pon", "GetOnuInfo", openolt_pb2.Onu(intf_id=9, onu_id=1), NF),
    ("delete-unknown-onu", "DeleteOnu", openolt_pb2.Onu(intf_id=0, onu_id=9), NF),
    ("flow-remove-unknown", "FlowRemove", openolt_pb2.Flow(access_intf_id=0, onu_id=1, flow_id=4242,
                                                           flow_type="upstream"), NF),
    ("omci-odd-hex", "OmciMsgOut", openolt_pb2.OmciMsg(intf_id=0, onu_id=1, pkt=b"000"), IA),
    ("omci-unknown-onu", "OmciMsgOut", openolt_pb2.OmciMsg(intf_id=0, onu_id=9, pkt=b"00"), NF),
    ("schedulers-unknown-onu", "CreateTrafficSchedulers", tech_profile_pb2.TrafficSchedulers(
        intf_id=0, onu_id=9), NF),
    # Found by tests/unit/test_fuzz_grpc.py: proto3 parses unknown enum numbers, which REST would then show as
    # numbers instead of names (GET .../trafficschedulers, v0 tconts), against the OpenAPI documents.
    ("schedulers-unknown-enum", "CreateTrafficSchedulers", tech_profile_pb2.TrafficSchedulers(
        intf_id=0, onu_id=1, traffic_scheds=[tech_profile_pb2.TrafficScheduler(direction=7)]), IA),
    ("schedulers-unknown-nested-enum", "CreateTrafficSchedulers", tech_profile_pb2.TrafficSchedulers(
        intf_id=0, onu_id=1, traffic_scheds=[tech_profile_pb2.TrafficScheduler(
            scheduler=tech_profile_pb2.SchedulerConfig(sched_policy=-1))]), IA),
]


@pytest.mark.parametrize("connected", [False, True], ids=["before-adapter", "adapter-up"])
@pytest.mark.parametrize("rpc,request_msg,code", [pytest.param(r, m, c, id=i) for i, r, m, c in OPENOLT_CASES])
def test_openolt_bad_input_is_answered_clearly(rpc, request_msg, code, connected):
    """OpenOLT requests that crash BBSim (unknown PON, unknown serial or ONU, odd OMCI hex) get a clear status,
    change nothing, and the OLT keeps answering."""
    sim = Sim()
    if connected:
        up(sim)
    sim.events.clear()
    generation = sim.olt.generation
    error = grpc_error(sim.openolt, rpc, request_msg)
    assert error.code is code
    check_message(Case(rpc, fresh, None, None, code), error.details)
    assert sim.events == [] and sim.olt.generation == generation
    assert grpc_call(sim.openolt, "HeartbeatCheck", openolt_pb2.Empty()).heartbeat_signature


def test_activate_onu_id_used_by_another_onu_is_refused():
    """ActivateOnu with an ONU id another ONU of the PON holds is refused (BBSim only logs it and stays silent)."""
    sim = Sim()
    sim.connect()
    sim.discover_all()
    sim.activate(SN, 1)
    sim.events.clear()
    error = grpc_error(sim.openolt, "ActivateOnu", openolt_pb2.Onu(intf_id=0, onu_id=1,
                                                                   serial_number=serial_pb("BBSM00000002")))
    assert error.code is FP and SN in error.details
    assert sim.events == []
    assert sim.olt.onu_by_serial("BBSM00000002").state == "discovered"


def test_activate_onu_id_out_of_range_is_refused():
    """ActivateOnu with an ONU id outside the PON's range is INVALID_ARGUMENT."""
    sim = Sim()
    sim.connect()
    sim.discover_all()
    sim.events.clear()
    error = grpc_error(sim.openolt, "ActivateOnu", openolt_pb2.Onu(intf_id=0, onu_id=999, serial_number=serial_pb(SN)))
    assert error.code is IA and sim.events == []


@pytest.mark.parametrize("rpc", ["DisableOlt", "ReenableOlt", "Reboot"])
def test_olt_actions_before_any_adapter_are_refused_clearly(rpc):
    """DisableOlt, ReenableOlt and Reboot before any adapter connected answer FAILED_PRECONDITION at once (BBSim
    blocks forever on its unbuffered channel)."""
    sim = Sim()
    error = grpc_error(sim.openolt, rpc, openolt_pb2.Empty())
    assert error.code is FP and "BBSIM_OLT_0" in error.details
    assert sim.events == []


NOT_SENT_ONU_ALARM = "Onu Alarm applied (no adapter connected: indications not sent)."
NOT_SENT_OLT_ALARM = "Olt Alarm applied (no adapter connected: indications not sent)."


def test_onu_alarm_before_any_adapter_is_applied_at_once():
    """An ONU alarm requested before any adapter connected is answered at once (BBSim hangs) with a message saying
    that the indication it would emit is dropped, on REST and on gRPC."""
    sim = Sim()
    reply = sim.rest.call("POST", f"/v1/olt/onus/{SN}/alarms/ONU_ALARM_LOS/on")
    assert (reply.code, reply.json) == (200, {"status_code": 0, "message": NOT_SENT_ONU_ALARM})
    assert grpc_call(sim.bbsim, "SetOnuAlarmIndication", alarm_req(alarm="DYING_GASP", status="off")).message \
        == NOT_SENT_ONU_ALARM
    assert [e.kind for e in sim.events if e.__class__.__name__ == "Alarm"] == ["onu_alarm_ind", "dying_gasp_ind"]
    assert (sim.hub.sent, sim.hub.dropped) == (0, 2)


def test_olt_los_before_any_adapter_is_applied_at_once():
    """An OLT LOS alarm before any adapter connected is answered at once on REST and gRPC (BBSim hangs), saying
    that the indication was not sent."""
    sim = Sim()
    reply = sim.rest.call("POST", "/v1/olt/ports/PON/1/alarms/los/ON")
    assert (reply.code, reply.json["message"]) == (200, NOT_SENT_OLT_ALARM)
    assert grpc_call(sim.bbsim, "SetOltAlarmIndication", los_req("nni", 0, "Off")).message == NOT_SENT_OLT_ALARM
    assert [e.fields for e in sim.events] == [{"intf_id": 0x20000001, "status": "on"},
                                              {"intf_id": 0x100000, "status": "off"}]
    assert sim.hub.dropped == 2


def test_shutdowns_before_any_adapter_are_answered_at_once():
    """ShutdownONU, ShutdownONUsOnPON and ShutdownAllONUs before any adapter connected answer at once with a 409
    that names the ONUs and why (BBSim hangs on all three); nothing changes."""
    sim = Sim()
    one = sim.rest.call("DELETE", f"/v1/olt/onus/{SN}")
    assert (one.code, one.json["message"]) == (409, f"ONU {SN} is created; only an enabled ONU can be shut down")
    pon = sim.rest.call("DELETE", "/v1/olt/port/1/onus")
    assert pon.code == 409 and pon.json["message"].startswith("no ONU to shut down: ONU BBSM00000101 is created")
    every = sim.rest.call("DELETE", "/v1/olt/onus")
    assert every.code == 409 and every.json["message"].endswith("(and 1 more)")
    assert grpc_error(sim.bbsim, "ShutdownAllONUs", bbsim_pb2.Empty()).details == every.json["message"]
    assert sim.events == []


WAY_OUT = "connect an adapter such as VOLTHA or bbr to the OpenOLT port, or start oltsim with --adapter builtin"


def test_power_ons_and_reboot_before_any_adapter_name_the_way_out():
    """On a fresh daemon no control-API call enables a PON or the OLT: powering on an ONU, a PON's ONUs or every ONU,
    and rebooting, answer 409 saying an adapter enables them and how to get one (REST and gRPC alike)."""
    sim = Sim()
    one = sim.rest.call("POST", f"/v1/olt/onus/{SN}")
    assert (one.code, one.json["message"]) == (
        409, f"PON 0 is created; ONUs can be powered on once an adapter enables it ({WAY_OUT})")
    assert grpc_error(sim.bbsim, "PoweronONU", bbsim_pb2.ONURequest(SerialNumber=SN)).details == one.json["message"]
    pon = sim.rest.call("POST", "/v1/olt/port/1/onus")
    assert (pon.code, pon.json["message"]) == (
        409, f"PON 1 is created; ONUs can be powered on once an adapter enables it ({WAY_OUT})")
    every = sim.rest.call("POST", "/v1/olt/onus")
    assert (every.code, every.json["message"]) == (
        409, f"no PON is enabled; ONUs can be powered on once an adapter enables their PON ({WAY_OUT})")
    reboot = sim.rest.call("POST", "/v1/olt/reboot")
    assert reboot.code == 409 and reboot.json["message"].endswith(f"once an adapter has enabled it ({WAY_OUT})")
    assert sim.events == []


def test_shutdown_and_poweron_after_the_adapter_left_are_applied():
    """With no adapter holding the stream, ShutdownONU and PoweronONU are applied at once and their indications
    dropped, which the answers say; nothing waits for an adapter."""
    sim = Sim()
    up(sim)
    sim.disconnect()
    dropped = sim.hub.dropped
    reply = sim.rest.call("DELETE", f"/v1/olt/onus/{SN}")
    assert (reply.code, reply.json["message"]) == (
        200, f"ONU {SN} successfully shut down (no adapter connected: indications not sent).")
    assert sim.olt.onu_by_serial(SN).state == "disabled"
    assert sim.hub.dropped == dropped + 3           # dying gasp, LOS, OnuInd down
    assert grpc_call(sim.bbsim, "PoweronONU", onu_req(SN)).message == \
        f"ONU {SN} successfully powered on (no adapter connected: indications not sent)."
    assert sim.olt.onu_by_serial(SN).state == "enabled"
    assert sim.hub.dropped == dropped + 6           # LOS off, OnuDiscInd, OnuInd up


def test_repeated_poweron_of_one_onu():
    """Powering one ONU on repeatedly: the first request acts, the repeats are 409 with no side effect (BBSim
    re-sends LOS-off and the OMCI clear before failing)."""
    sim = Sim(controlled_activation="only-onu")
    sim.connect()
    sim.events.clear()
    first = sim.rest.call("POST", f"/v1/olt/onus/{SN}")
    assert (first.code, first.json["message"]) == (200, f"ONU {SN} successfully powered on.")
    sim.clock.advance(0)
    assert sim.olt.onu_by_serial(SN).state == "discovered"
    sim.events.clear()
    again = sim.rest.call("POST", f"/v1/olt/onus/{SN}")
    assert again.code == 409 and SN in again.json["message"]
    assert grpc_error(sim.bbsim, "PoweronONU", onu_req(SN)).code is FP
    sim.activate(SN)
    sim.events.clear()
    for _ in range(3):
        reply = sim.rest.call("POST", f"/v1/olt/onus/{SN}")
        assert (reply.code, reply.json["message"]) == (409, f"ONU {SN} is already enabled")
    assert sim.events == []
    assert sim.rest.call("GET", f"/v1/olt/onus/{SN}").json["InternalState"] == "enabled"


def test_repeated_poweron_of_a_pon():
    """Powering a PON's ONUs on twice: the first request acts, the repeat is a 409 naming the ONUs already on and
    has no side effect."""
    sim = Sim(controlled_activation="only-onu")
    sim.connect()
    first = sim.rest.call("POST", "/v1/olt/port/0/onus")
    assert (first.code, first.json["message"]) == (200, "Powered on 2 ONUs on PON port 0.")
    sim.events.clear()
    again = sim.rest.call("POST", "/v1/olt/port/0/onus")
    assert again.code == 409
    assert again.json["message"] == ("no ONU to power on: ONU BBSM00000001 is already powered on (discovered); "
                                     "ONU BBSM00000002 is already powered on (discovered)")
    assert sim.events == []


def raw_http(resource, data: bytes) -> bytes:
    """What a Site serving `resource` writes back for the raw request bytes `data` (no client normalises them)."""
    from twisted.internet.testing import StringTransport
    from twisted.web.server import Site

    protocol = Site(resource).buildProtocol(None)
    transport = StringTransport()
    protocol.makeConnection(transport)
    protocol.dataReceived(data)
    return transport.value()


@pytest.mark.parametrize("path", [b"/v1/olt", b"/v0/olt"])
@pytest.mark.parametrize("method", [b"get", b"Get"])
def test_method_case_does_not_crash(method, path):
    """werkzeug routes a lower-case method like its upper-case form: the handlers take it too (it was a KeyError, so
    a 500; found by the raw-request fuzz of tests/integration/test_fuzz_rest.py)."""
    from oltsim.api.v0.usecases_v0 import V0Commands
    from oltsim.api.v0.rest_v0 import V0Rest
    from oltsim.api.v1.rest_v1 import V1Rest

    sim = Sim()
    resource = V1Rest(sim.commands).resource() if path.startswith(b"/v1") else V0Rest(V0Commands(sim.olt)).resource()
    answer = raw_http(resource, method + b" " + path + b" HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    assert answer.startswith(b"HTTP/1.1 200 "), answer[:200]


def test_non_utf8_path_on_v0_and_sadis_is_400_json():
    """The v0 and SADIS apps refuse a non-UTF-8 path with the JSON error body too (v0 with its Deprecation
    header)."""
    from oltsim.api.sadis import SadisRest
    from oltsim.api.v0.usecases_v0 import V0Commands
    from oltsim.api.v0.rest_v0 import V0Rest

    sim = Sim()
    sadis = SadisRest(sim.olt, olt_ip="127.0.0.1", bp_format="mef", advertised_host="bbsim", port=50074)
    for resource, path in ((V0Rest(V0Commands(sim.olt)).resource(), b"/v0/olt/onus/%FF"),
                           (sadis.resource(), b"/v2/subscribers/%C3%28")):
        answer = raw_http(resource, b"GET " + path + b" HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        head, _, _ = answer.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 400 "), answer[:300]
        assert b"Content-Type: application/json" in head
        if path.startswith(b"/v0"):
            assert b"Deprecation: true" in head
