"""Readable logs and plain messages: state-change lines name their device, ONU changes
are logged at info with a bounded rate, dropped indications are summed up, the APIs say when no adapter received
an indication, v0 body errors are in the API's own words, and the legacy vendor is BBSim's."""

import json

import pytest
from treq.testing import StubTreq
from twisted.internet.task import Clock
from twisted.logger import capturedLogs, formatEvent

from conftest import Sim, grpc_call
from oltsim._proto import bbsim_pb2, legacy_pb2
from oltsim.api.eventbus import ONU_LINES_PER_INTERVAL, EventBus
from oltsim.api.v0.usecases_v0 import V0Commands
from oltsim.api.v0.rest_v0 import V0Rest
from oltsim.logs import Summary
from oltsim.model import events
from oltsim.model.errors import FailedPrecondition, InvalidArgument

SN = "BBSM00000001"
NOT_SENT = "(no adapter connected: indications not sent)"


pytestmark = pytest.mark.usefixtures("info_level")


def lines(logged, prefix: str = "") -> list[str]:
    """The formatted text of the captured oltsim events (at info or above) starting with `prefix`."""
    out = []
    for event in logged:
        if not event.get("log_namespace", "").startswith("oltsim") or event["log_level"].name == "debug":
            continue
        text = formatEvent(event)
        if text.startswith(prefix):
            out.append(text)
    return out


# ---- the summary helper --------------------------------------------------------------------------------------


def test_summary_lets_a_burst_through_then_reports_the_rest_once_per_interval():
    """Summary passes `burst` lines per interval, counts the rest by key and reports them once when the interval
    ends (fake clock); the next interval starts afresh, and no timer is left once reported."""
    clock = Clock()
    reports = []
    summary = Summary(clock, reports.append, interval=1.0, burst=2)
    assert [summary.offer("a") for _ in range(2)] == [True, True]
    assert [summary.offer(k) for k in ("a", "b", "a")] == [False, False, False]
    clock.advance(0.5)
    assert reports == [] and summary.offer("a") is False
    clock.advance(0.5)
    assert reports == [{"a": 3, "b": 1}] and clock.getDelayedCalls() == []
    assert summary.offer("a") is True
    clock.advance(5)
    assert reports == [{"a": 3, "b": 1}] and clock.getDelayedCalls() == []


def test_summary_flush_reports_at_once_and_cancels_its_timer():
    """flush (servers stopping) reports what is counted and leaves no delayed call; with nothing counted it is
    silent."""
    clock = Clock()
    reports = []
    summary = Summary(clock, reports.append, interval=1.0)
    summary.flush()
    assert summary.offer("x") is False and len(clock.getDelayedCalls()) == 1
    summary.flush()
    assert reports == [{"x": 1}] and clock.getDelayedCalls() == []


# ---- state-change lines --------------------------------------------------------------------------------------


def test_olt_and_pon_state_lines_name_their_device():
    """OLT state lines give the OLT's serial and PON lines the OLT serial and PON id (no more `serial= pon=-1`)."""
    sim = Sim(start=False)
    EventBus(sim.olt, sim.clock)
    with capturedLogs() as logged:
        sim.olt.start()
        sim.connect()
    olt = lines(logged, "olt-state-changed")
    assert "olt-state-changed attribute=InternalState serial=BBSIM_OLT_0 from=created to=initialized" in olt
    assert "olt-state-changed attribute=OperState serial=BBSIM_OLT_0 from=down to=up" in olt
    assert "pon-state-changed attribute=OperState olt=BBSIM_OLT_0 pon=1 from=down to=up" in lines(logged, "pon-")
    assert not [line for line in lines(logged) if "serial= " in line or "pon=-1" in line]


def test_onu_state_changes_are_logged_at_info_one_line_each():
    """Each ONU state change is one info line naming the ONU's serial and PON."""
    sim = Sim()
    EventBus(sim.olt, sim.clock)
    with capturedLogs() as logged:
        sim.connect()
        sim.discover_all()
    onu = lines(logged, "onu-state-changed")
    assert "onu-state-changed attribute=InternalState serial=BBSM00000102 pon=1 from=initialized to=discovered" \
        in onu
    assert "onu-state-changed attribute=OperState serial=BBSM00000001 pon=0 from=down to=up" in onu
    assert len(onu) == 12  # 4 ONUs: created -> initialized -> discovered, OperState down -> up
    assert lines(logged, "onu-state-changes") == []


def test_thousands_of_onu_changes_at_once_become_one_summary_line_per_second():
    """4096 ONU changes in the same instant: ONU_LINES_PER_INTERVAL lines, then one summary line when the second
    ends with the count and the change; a change right after is summed up too (the burst goes on), one after a quiet
    second is logged on its own again."""
    clock = Clock()
    sim = Sim()
    bus = EventBus(sim.olt, clock)
    with capturedLogs() as logged:
        for i in range(4096):
            bus._on_event(events.StateChanged("onu", "InternalState", "created", "initialized", i // 256, 0,
                                              f"BBSM{i:08X}"))
        assert len(lines(logged, "onu-state-changed")) == ONU_LINES_PER_INTERVAL
        assert lines(logged, "onu-state-changes") == []
        clock.advance(1)
    assert lines(logged, "onu-state-changes") == [
        f"onu-state-changes count={4096 - ONU_LINES_PER_INTERVAL} attribute=InternalState from=created "
        "to=initialized (summary of 1 s)"]
    assert clock.getDelayedCalls() == []
    with capturedLogs() as going_on:
        bus._on_event(events.StateChanged("onu", "OperState", "down", "up", 0, 1, SN))
        assert lines(going_on) == []
        clock.advance(1)
    assert lines(going_on) == ["onu-state-changes count=1 attribute=OperState from=down to=up (summary of 1 s)"]
    clock.advance(1)
    with capturedLogs() as later:
        bus._on_event(events.StateChanged("onu", "OperState", "up", "down", 0, 1, SN))
    assert lines(later) == [f"onu-state-changed attribute=OperState serial={SN} pon=0 from=up to=down"]


def test_a_summary_of_several_kinds_of_change_names_each_with_its_count():
    """Mixed changes beyond the burst are one line naming each kind (most frequent first); close_all logs what is
    counted at once (the process is stopping)."""
    clock = Clock()
    bus = EventBus(Sim().olt, clock)
    with capturedLogs() as logged:
        for i in range(ONU_LINES_PER_INTERVAL + 30):
            bus._on_event(events.StateChanged("onu", "InternalState", "discovered", "enabled", 0, 1, SN))
        for i in range(10):
            bus._on_event(events.StateChanged("onu", "OperState", "down", "up", 0, 1, SN))
        bus.close_all()
    assert lines(logged, "onu-state-changes") == [
        "onu-state-changes count=40 changes=InternalState discovered->enabled x30, OperState down->up x10 "
        "(summary of 1 s)"]
    assert clock.getDelayedCalls() == []


# ---- dropped indications -------------------------------------------------------------------------------------


def test_dropped_indications_are_summed_up_at_info_once_per_interval():
    """With no adapter, each dropped indication is counted, and one info line per second says how many; the
    stream-closed line names the OLT."""
    sim = Sim()
    with capturedLogs() as logged:
        for _ in range(3):
            sim.commands.SetOnuAlarmIndication(bbsim_pb2.ONUAlarmRequest(SerialNumber=SN,
                                                                         AlarmType="DYING_GASP", Status="on"))
        assert lines(logged, "indications-dropped") == []
        sim.clock.advance(1)
        sim.commands.SetOnuAlarmIndication(bbsim_pb2.ONUAlarmRequest(SerialNumber=SN, AlarmType="DYING_GASP",
                                                                     Status="off"))
        sim.clock.advance(1)
    assert lines(logged, "indications-dropped") == [
        "indications-dropped reason=no-adapter count=3 (no adapter connected: 3 indications dropped)",
        "indications-dropped reason=no-adapter count=1 (no adapter connected: 1 indication dropped)"]
    assert sim.hub.dropped == 4 and sim.clock.getDelayedCalls() == []
    sim.connect()
    with capturedLogs() as logged:
        sim.disconnect()
    assert lines(logged, "indication-stream-closed") == ["indication-stream-closed serial=BBSIM_OLT_0"]


def test_end_all_logs_the_drops_counted_so_far():
    """Stopping (hub.end_all) logs the pending drop count at once and leaves no timer behind."""
    sim = Sim()
    with capturedLogs() as logged:
        sim.commands.SetOltAlarmIndication(bbsim_pb2.OLTAlarmRequest(InterfaceType="pon", InterfaceID=0,
                                                                     Status="on"))
        sim.hub.end_all()
    assert lines(logged, "indications-dropped") == [
        "indications-dropped reason=no-adapter count=1 (no adapter connected: 1 indication dropped)"]
    assert sim.clock.getDelayedCalls() == []


# ---- API messages with and without an adapter ----------------------------------------------------------------


def test_v1_messages_say_when_no_adapter_received_the_indication():
    """Alarms, shutdowns and power-ons keep BBSim's messages while an adapter holds the stream and say that the
    indications were not sent once it has gone."""
    sim = Sim()
    sim.bring_up()
    assert sim.olt.adapter_connected
    alarm = bbsim_pb2.ONUAlarmRequest(SerialNumber=SN, AlarmType="ONU_ALARM_LOS", Status="on")
    assert grpc_call(sim.bbsim, "SetOnuAlarmIndication", alarm).message == "Onu Alarm Indication Sent."
    los = bbsim_pb2.OLTAlarmRequest(InterfaceType="nni", InterfaceID=0, Status="on")
    assert grpc_call(sim.bbsim, "SetOltAlarmIndication", los).message == "Olt Alarm Indication Sent."
    onu = bbsim_pb2.ONURequest(SerialNumber=SN)
    assert grpc_call(sim.bbsim, "ShutdownONU", onu).message == f"ONU {SN} successfully shut down."
    sim.disconnect()
    assert not sim.olt.adapter_connected
    assert grpc_call(sim.bbsim, "PoweronONU", onu).message == f"ONU {SN} successfully powered on {NOT_SENT}."
    assert grpc_call(sim.bbsim, "SetOnuAlarmIndication", alarm).message == f"Onu Alarm applied {NOT_SENT}."
    assert grpc_call(sim.bbsim, "SetOltAlarmIndication", los).message == f"Olt Alarm applied {NOT_SENT}."
    assert grpc_call(sim.bbsim, "ShutdownONUsOnPON", bbsim_pb2.PONRequest(PonPortId=1)).message == \
        f"Shut down 2 ONUs on PON port 1 {NOT_SENT}."


def test_a_reboot_ends_the_adapter_connection():
    """An OLT reboot ends the indication stream: afterwards the answers say that no adapter received them."""
    sim = Sim()
    sim.bring_up()
    sim.olt.reboot()
    sim.clock.advance(sim.olt.timings.reboot_grace)
    assert not sim.olt.adapter_connected
    los = bbsim_pb2.OLTAlarmRequest(InterfaceType="nni", InterfaceID=0, Status="on")
    assert grpc_call(sim.bbsim, "SetOltAlarmIndication", los).message == f"Olt Alarm applied {NOT_SENT}."


def test_v0_messages_say_when_no_adapter_received_the_indication():
    """v0 alarms, power calls and ONU reboots add that the indications were not sent when no adapter is
    connected."""
    sim = Sim()
    sim.bring_up()
    v0 = V0Commands(sim.olt)
    alarm = legacy_pb2.ONUAlarmRequest(onu_serial=SN, alarm_type="lossofploam", status="on")
    assert v0.GenerateONUAlarm(alarm).status_msg == f"ONU {SN}: lossofploam alarm (ONU_ALARM_LOAMI) raised."
    sim.disconnect()
    assert v0.GenerateONUAlarm(alarm).status_msg == \
        f"ONU {SN}: lossofploam alarm (ONU_ALARM_LOAMI) raised {NOT_SENT}."
    assert v0.GenerateOLTAlarm(legacy_pb2.OLTAlarmRequest(port_type="pon", port_id=0, status="on")).status_msg \
        == f"LOS raised on PON 0 {NOT_SENT}."
    request = legacy_pb2.ONURequest(onu=legacy_pb2.ONUInfo(onu_serial=SN))
    assert v0.ONUDeactivate(request).status_msg == f"Shut down 1 ONU: {SN} {NOT_SENT}"
    assert v0.ONUActivate(request).status_msg == f"Powered on 1 ONU: {SN} {NOT_SENT}"
    v0.close()


# ---- v0 messages in the API's own words ----------------------------------------------------------------------


def v0_call(sim, path: str, body: bytes | None = None, method: str = "POST") -> tuple[int, dict]:
    """A request to the real v0 resource in memory; (status, JSON body)."""
    stub = StubTreq(V0Rest(V0Commands(sim.olt)).resource())
    out = []
    d = stub.request(method, "http://oltsim" + path, data=body)
    d.addCallback(lambda resp: resp.content().addCallback(lambda content: out.append((resp.code, content))))
    stub.flush()
    code, content = out[0]
    return code, json.loads(content)


BODY_SHAPE = '{"onus": [{"onu_serial": ...} or {"pon_port_id": ..., "onu_id": ...}, ...]}'


@pytest.mark.parametrize("body, message", [
    ({"onu": {"onu_serial": SN}}, f'request body: unknown field "onu"; the body is {BODY_SHAPE}'),
    ({"onus": {}}, "request body: onus must be a list (got {})"),
    ({"onus": [3]}, "request body: onus[0] must be a JSON object (got 3)"),
    ({"onus": [{"serial": SN}]}, 'request body: unknown field "onus[0].serial"; the fields of onus[0] are onu_id, '
                                 'pon_port_id, onu_serial, oper_state, onu_state, gemports, tconts'),
    ({"onus": [{"onu_serial": 1}]}, "request body: onus[0].onu_serial must be a string (got 1)"),
    ({"onus": [{"onu_id": "x"}]}, 'request body: onus[0].onu_id must be a non-negative integer (got "x")'),
    ({"onus": [{"onu_id": -1}]}, "request body: onus[0].onu_id must be an integer from 0 to 4294967295 (got -1)"),
    ({"onus": [{"gemports": "a"}]}, 'request body: onus[0].gemports must be a list (got "a")'),
    ({"onus": [{"tconts": {"tconts": [{"direction": "UP"}]}}]},
     'request body: onus[0].tconts.tconts[0].direction must be one of UPSTREAM, DOWNSTREAM, BIDIRECTIONAL '
     '(got "UP")'),
], ids=["unknown-top", "not-a-list", "not-an-object", "unknown-nested", "string", "integer", "range", "repeated",
        "enum"])
def test_bad_v0_bodies_are_answered_in_the_apis_own_words(body, message):
    """A v0 bulk body that does not fit is 400 with a message naming the documented field and what it must be,
    without protobuf's wording (message types, `Available Fields`, `must be in []`)."""
    code, error = v0_call(Sim(), "/v0/olt/onus", json.dumps(body).encode())
    assert (code, error["message"]) == (400, message)
    for internal in ("legacy.", "Message type", "Available Fields", "must be in []", "Failed to parse"):
        assert internal not in message


def test_a_good_v0_body_still_parses():
    """Proto names and protobuf's JSON names both still work in a v0 body."""
    sim = Sim()
    sim.bring_up()
    body = json.dumps({"onus": [{"onu_serial": SN}, {"ponPortId": 1, "onuId": 1}]}).encode()
    code, reply = v0_call(sim, "/v0/olt/onus", body, method="DELETE")
    assert (code, reply["status_msg"]) == (200, f"Shut down 2 ONUs: {SN}, BBSM00000101")


def test_no_onu_given_names_documented_fields_only():
    """A v0 power call naming no ONU says how to name one: on REST with the path, the onu.* query parameters or the
    body's onus; over gRPC with the message's onu and onus_batch fields."""
    code, error = v0_call(Sim(), "/v0/olt/onus")
    assert (code, error["message"]) == (400, "no ONU given: name ONUs in the path or the onu.onu_serial, "
                                             "onu.pon_port_id, onu.onu_id query parameters, or list them in the "
                                             'body {"onus": [{"onu_serial": ...}]}')
    with pytest.raises(InvalidArgument, match=r"^no ONU given: select ONUs with onu or list them in "
                                              r"onus_batch\.onus$"):
        V0Commands(Sim().olt).ONUActivate(legacy_pb2.ONURequest())


def test_rebooting_a_powered_off_onu_says_to_power_it_on():
    """Soft-rebooting a disabled ONU is 409 saying that it is powered off and should be powered on, not
    `already disabled`."""
    sim = Sim()
    sim.bring_up()
    v0 = V0Commands(sim.olt)
    sim.olt.shutdown_onu(SN)
    action = legacy_pb2.DeviceAction(device_type="onu", serial_number=SN, action="soft-reboot")
    with pytest.raises(FailedPrecondition) as error:
        v0.PerformDeviceAction(action)
    assert error.value.message == f"ONU {SN} is powered off: power it on rather than soft-reboot it"
    created = Sim()
    with pytest.raises(FailedPrecondition) as error:
        V0Commands(created.olt).PerformDeviceAction(action)
    assert error.value.message == f"ONU {SN} is created; only an enabled ONU can soft-reboot"
    v0.close()


# ---- wire detail ---------------------------------------------------------------------------------------------


def test_legacy_olt_vendor_is_bbsims():
    """v0 OLTStatus reports olt_vendor BBSIM as BBSim's legacy API does (GetDeviceInfo keeps `BBSim`)."""
    sim = Sim()
    assert V0Commands(sim.olt).OLTStatus(legacy_pb2.Empty()).olt.olt_vendor == "BBSIM"
    assert sim.olt.device_info["vendor"] == "BBSim"
