"""V0Commands on an in-memory model with a fake clock: filters, power, alarms, device actions, status."""

import random

import pytest
from twisted.internet.task import Clock
from voltha_protos import openolt_pb2, tech_profile_pb2

from oltsim._proto import bbsim_pb2, legacy_pb2
from oltsim.api import translate
from oltsim.api.v1.usecases_v1 import V1Commands
from oltsim.api.v0.usecases_v0 import ONU_HARD_REBOOT_DELAY, ONU_SOFT_REBOOT_DELAY, V0Commands
from oltsim.config import load_settings
from oltsim.model import events
from oltsim.model.builder import build_olt
from oltsim.model.errors import FailedPrecondition, InvalidArgument, NotFound


def make_olt(pon=2, onu=2):
    """An enabled OLT (adapter connected) with every ONU discovered, none activated."""
    clock = Clock()
    olt = build_olt(load_settings({"pon": pon, "onu": onu}, None), clock, random.Random(0))
    olt.start()
    olt.enable_indication()
    clock.advance(1)
    return olt, clock


def add_flow(olt, pon, onu_id, flow_id, gem, alloc=None, flow_type="upstream"):
    alloc = 1023 + onu_id if alloc is None else alloc
    msg = openolt_pb2.Flow(access_intf_id=pon, onu_id=onu_id, uni_id=0, flow_id=flow_id, flow_type=flow_type,
                           alloc_id=alloc, gemport_id=gem, port_no=256 * onu_id, priority=1000, cookie=flow_id,
                           classifier=openolt_pb2.Classifier(o_vid=900), action=openolt_pb2.Action())
    olt.flow_add(translate.flow_from_pb(msg))


def add_scheds(olt, pon, onu_id, uni_id, port_no, alloc=1024):
    olt.set_traffic_schedulers(pon, onu_id, tech_profile_pb2.TrafficSchedulers(
        intf_id=pon, onu_id=onu_id, uni_id=uni_id, port_no=port_no,
        traffic_scheds=[tech_profile_pb2.TrafficScheduler(direction=tech_profile_pb2.UPSTREAM, alloc_id=alloc,
                                                          tech_profile_id=64)]))


@pytest.fixture
def env():
    olt, clock = make_olt()
    commands = V0Commands(olt, olt_ip="192.0.2.7")
    v1 = V1Commands(olt, olt_ip="192.0.2.7")
    yield olt, clock, commands, v1
    commands.close()


def state(v1, serial):
    return v1.GetONU(bbsim_pb2.ONURequest(SerialNumber=serial)).InternalState


def onu_request(**fields):
    return legacy_pb2.ONURequest(onu=legacy_pb2.ONUInfo(**fields))


def serials(onus_msg):
    return [o.onu_serial for o in onus_msg.onus]


# ---- OLTStatus / PortStatus --------------------------------------------------------------------

def test_olt_status_counts_active_onus_per_pon(env):
    """pon_port_active_onus counts the PON's enabled ONUs (not the number of PONs), max is ONUs on it."""
    olt, _, commands, _ = env
    olt.activate_onu(1, "BBSM00000101", 1)
    olt.activate_onu(1, "BBSM00000102", 2)
    olt.activate_onu(0, "BBSM00000001", 1)
    status = commands.OLTStatus(legacy_pb2.Empty())
    assert (status.olt.olt_serial, status.olt.olt_ip, status.olt.olt_state) == ("BBSIM_OLT_0", "192.0.2.7", "up")
    assert [(p.port_type, p.port_id, p.pon_port_max_onus, p.pon_port_active_onus, p.port_state)
            for p in status.ports] == [("nni", 0, 0, 0, "up"), ("pon", 0, 2, 1, "up"), ("pon", 1, 2, 2, "up")]


def test_olt_state_is_oper_state_down_before_adapter():
    """olt_state is the OLT OperState: down until an adapter enabled it."""
    olt = build_olt(load_settings({"pon": 1, "onu": 1}, None), Clock(), random.Random(0))
    olt.start()
    status = V0Commands(olt).OLTStatus(legacy_pb2.Empty())
    assert status.olt.olt_state == "down"
    assert [p.port_state for p in status.ports] == ["down", "down"]


def test_alarm_state_follows_los_from_any_api(env):
    """alarm_state is on after LOS is raised (v0 or v1) and off after it is cleared."""
    olt, _, commands, v1 = env
    commands.GenerateOLTAlarm(legacy_pb2.OLTAlarmRequest(port_type="pon", port_id=1, status="on"))
    v1.SetOltAlarmIndication(bbsim_pb2.OLTAlarmRequest(InterfaceType="nni", InterfaceID=0, Status="on"))
    ports = {(p.port_type, p.port_id): p.alarm_state for p in commands.OLTStatus(legacy_pb2.Empty()).ports}
    assert ports == {("nni", 0): "on", ("pon", 0): "off", ("pon", 1): "on"}
    commands.GenerateOLTAlarm(legacy_pb2.OLTAlarmRequest(port_type="PON", port_id=1, status="OFF"))
    port = commands.PortStatus(legacy_pb2.PortInfo(port_type="pon", port_id=1)).ports[0]
    assert port.alarm_state == "off"


def test_port_status_pon_and_nni(env):
    """PortStatus returns the one port asked for."""
    olt, _, commands, _ = env
    olt.activate_onu(0, "BBSM00000002", 2)
    [pon] = commands.PortStatus(legacy_pb2.PortInfo(port_type="pon", port_id=0)).ports
    assert (pon.port_type, pon.port_id, pon.pon_port_max_onus, pon.pon_port_active_onus) == ("pon", 0, 2, 1)
    [nni] = commands.PortStatus(legacy_pb2.PortInfo(port_type="nni", port_id=0)).ports
    assert (nni.port_type, nni.port_state, nni.alarm_state) == ("nni", "up", "off")


@pytest.mark.parametrize("port_type, port_id, error", [
    ("pon", 9, NotFound), ("nni", 1, NotFound), ("uni", 0, InvalidArgument), ("", 0, InvalidArgument)])
def test_port_status_refusals(env, port_type, port_id, error):
    """Unknown PON or NNI is 404 (BBSim answers an empty 200 for an NNI); other port types 400."""
    with pytest.raises(error):
        env[2].PortStatus(legacy_pb2.PortInfo(port_type=port_type, port_id=port_id))


def test_port_status_filters(env):
    """The other PortInfo fields filter the port (AND); no match gives an empty list."""
    commands = env[2]
    ask = dict(port_type="pon", port_id=0)
    given = {"port_type", "port_id"}
    assert len(commands.PortStatus(legacy_pb2.PortInfo(**ask, port_state="up"), given | {"port_state"}).ports) == 1
    assert len(commands.PortStatus(legacy_pb2.PortInfo(**ask, port_state="down"), given | {"port_state"}).ports) == 0
    assert len(commands.PortStatus(legacy_pb2.PortInfo(**ask, alarm_state="off"), given | {"alarm_state"}).ports) == 1
    assert len(commands.PortStatus(legacy_pb2.PortInfo(**ask, pon_port_max_onus=2),
                                   given | {"pon_port_max_onus"}).ports) == 1
    assert len(commands.PortStatus(legacy_pb2.PortInfo(**ask, pon_port_active_onus=0),
                                   given | {"pon_port_active_onus"}).ports) == 1
    assert len(commands.PortStatus(legacy_pb2.PortInfo(**ask, pon_port_active_onus=1, port_state="up"),
                                   given | {"pon_port_active_onus", "port_state"}).ports) == 0
    # gRPC: non-default fields filter
    assert len(commands.PortStatus(legacy_pb2.PortInfo(**ask, pon_port_max_onus=3)).ports) == 0
    with pytest.raises(InvalidArgument):
        commands.PortStatus(legacy_pb2.PortInfo(**ask, port_state="sideways"))
    with pytest.raises(InvalidArgument):
        commands.PortStatus(legacy_pb2.PortInfo(**ask, alarm_state="maybe"))


# ---- ONUStatus filters ---------------------------------------------------------------------------

def test_onu_status_all_and_record(env):
    """Without a filter every ONU is listed, PON-major, with onu_state = InternalState."""
    olt, _, commands, _ = env
    olt.activate_onu(0, "BBSM00000001", 1)
    onus = commands.ONUStatus(legacy_pb2.ONURequest())
    assert serials(onus) == ["BBSM00000001", "BBSM00000002", "BBSM00000101", "BBSM00000102"]
    first = onus.onus[0]
    assert (first.onu_id, first.pon_port_id, first.oper_state, first.onu_state) == (1, 0, "up", "enabled")
    assert first.HasField("tconts") and list(first.gemports) == []


@pytest.mark.parametrize("given, fields, expected", [
    ({"onu.pon_port_id"}, dict(pon_port_id=0), ["BBSM00000001", "BBSM00000002"]),
    ({"onu.pon_port_id"}, dict(pon_port_id=1), ["BBSM00000101", "BBSM00000102"]),
    ({"onu.onu_serial"}, dict(onu_serial="BBSM00000102"), ["BBSM00000102"]),
    ({"onu.onu_id"}, dict(onu_id=2), ["BBSM00000002", "BBSM00000102"]),
    ({"onu.pon_port_id", "onu.onu_id"}, dict(pon_port_id=0, onu_id=2), ["BBSM00000002"]),
    ({"onu.onu_state"}, dict(onu_state="enabled"), ["BBSM00000001", "BBSM00000101"]),
    ({"onu.onu_state"}, dict(onu_state="DISCOVERED"), ["BBSM00000002", "BBSM00000102"]),
    ({"onu.oper_state"}, dict(oper_state="up"), ["BBSM00000001", "BBSM00000002", "BBSM00000101",
                                                 "BBSM00000102"]),
    ({"onu.oper_state"}, dict(oper_state="down"), []),
    ({"onu.pon_port_id", "onu.onu_state"}, dict(pon_port_id=1, onu_state="enabled"), ["BBSM00000101"]),
    ({"onu.onu_serial", "onu.onu_state"}, dict(onu_serial="BBSM00000002", onu_state="enabled"), []),
    ({"onu.gemports"}, dict(gemports=[1024]), ["BBSM00000001"]),
    ({"onu.gemports"}, dict(gemports=[1024, 1025]), ["BBSM00000001"]),
    ({"onu.gemports"}, dict(gemports=[1024, 1030]), []),
    ({"onu.gemports"}, dict(gemports=[1030]), ["BBSM00000101"]),
    ({"onu.tconts.uni_id"}, dict(tconts=legacy_pb2.Tconts(uni_id=1)), ["BBSM00000101"]),
    ({"onu.tconts.uni_id"}, dict(tconts=legacy_pb2.Tconts(uni_id=0)), ["BBSM00000001"]),
    ({"onu.tconts.port_no"}, dict(tconts=legacy_pb2.Tconts(port_no=257)), ["BBSM00000101"]),
    ({"onu.tconts.uni_id", "onu.tconts.port_no"}, dict(tconts=legacy_pb2.Tconts(uni_id=1, port_no=256)), []),
])
def test_onu_status_filters(env, given, fields, expected):
    """Each filter of set G, alone and combined, keeps exactly the matching ONUs."""
    olt, _, commands, _ = env
    olt.activate_onu(0, "BBSM00000001", 1)
    olt.activate_onu(1, "BBSM00000101", 1)
    add_flow(olt, 0, 1, 1, 1024)
    add_flow(olt, 0, 1, 2, 1025, flow_type="downstream")
    add_flow(olt, 1, 1, 1, 1030)
    add_scheds(olt, 0, 1, 0, 256)
    add_scheds(olt, 1, 1, 1, 257)
    onus = commands.ONUStatus(legacy_pb2.ONURequest(onu=legacy_pb2.ONUInfo(**fields)), given)
    assert serials(onus) == expected


def test_onu_record_gemports_and_tconts(env):
    """gemports come from the ONU's flows, tconts from its traffic schedulers."""
    olt, _, commands, _ = env
    olt.activate_onu(0, "BBSM00000001", 1)
    add_flow(olt, 0, 1, 7, 1025)
    add_flow(olt, 0, 1, 8, 1024, flow_type="downstream")
    add_scheds(olt, 0, 1, 0, 256, alloc=1030)
    [onu] = commands.ONUStatus(onu_request(onu_serial="BBSM00000001")).onus
    assert list(onu.gemports) == [1024, 1025]
    assert (onu.tconts.uni_id, onu.tconts.port_no) == (0, 256)
    assert [(t.alloc_id, t.tech_profile_id) for t in onu.tconts.tconts] == [(1030, 64)]


@pytest.mark.parametrize("given, fields, error", [
    ({"onu.onu_serial"}, dict(onu_serial="BBSM99999999"), NotFound),
    ({"onu.pon_port_id"}, dict(pon_port_id=9), NotFound),
    ({"onu.pon_port_id", "onu.onu_id"}, dict(pon_port_id=0, onu_id=9), NotFound),
    ({"onu.onu_id"}, dict(onu_id=9), NotFound),
    ({"onu.pon_port_id", "onu.onu_serial"}, dict(pon_port_id=1, onu_serial="BBSM00000001"), NotFound),
    ({"onu.onu_id", "onu.onu_serial"}, dict(onu_id=2, onu_serial="BBSM00000001"), NotFound),
    ({"onu.oper_state"}, dict(oper_state="sideways"), InvalidArgument),
    ({"onu.onu_state"}, dict(onu_state="asleep"), InvalidArgument),
    ({"onu.onu_serial"}, dict(onu_serial=""), InvalidArgument),
])
def test_onu_status_refusals(env, given, fields, error):
    """Identifying filters that name nothing are 404; unknown state values are 400."""
    with pytest.raises(error):
        env[2].ONUStatus(legacy_pb2.ONURequest(onu=legacy_pb2.ONUInfo(**fields)), given)


def test_onu_status_grpc_presence_rules(env):
    """Over gRPC (given=None): pon_port_id 0 counts when onu holds nothing else or an onu_id without serial."""
    commands = env[2]
    assert len(commands.ONUStatus(legacy_pb2.ONURequest()).onus) == 4
    assert serials(commands.ONUStatus(onu_request(pon_port_id=0))) == ["BBSM00000001", "BBSM00000002"]
    assert serials(commands.ONUStatus(onu_request(onu_id=2))) == ["BBSM00000002"]
    assert serials(commands.ONUStatus(onu_request(pon_port_id=1, onu_id=2))) == ["BBSM00000102"]
    assert len(commands.ONUStatus(onu_request(oper_state="up")).onus) == 4


def test_onu_status_refuses_a_batch(env):
    """ONUStatus filters with onu; a list in onus_batch is refused rather than ignored."""
    with pytest.raises(InvalidArgument):
        env[2].ONUStatus(legacy_pb2.ONURequest(onus_batch=legacy_pb2.ONUs(onus=[legacy_pb2.ONUInfo(onu_id=1)])))


# ---- GetFlows filters ----------------------------------------------------------------------------

@pytest.fixture
def flows_env(env):
    olt = env[0]
    olt.activate_onu(0, "BBSM00000001", 1)
    olt.activate_onu(0, "BBSM00000002", 2)
    olt.activate_onu(1, "BBSM00000101", 1)
    add_flow(olt, 0, 1, 1, 1024)
    add_flow(olt, 0, 2, 2, 1025)
    add_flow(olt, 1, 1, 1, 1024)
    add_scheds(olt, 0, 2, 3, 259)
    nni = openolt_pb2.Flow(access_intf_id=-1, onu_id=-1, flow_id=99, flow_type="downstream",
                           network_intf_id=0, classifier=openolt_pb2.Classifier(eth_type=0x888E))
    olt.flow_add(translate.flow_from_pb(nni))
    return env


def flow_ids(msg):
    return [(f.access_intf_id, f.onu_id, f.flow_id) for f in msg.flows]


@pytest.mark.parametrize("given, fields, expected", [
    (set(), {}, [(0, 1, 1), (0, 2, 2), (1, 1, 1), (-1, -1, 99)]),
    ({"onu_serial"}, dict(onu_serial="BBSM00000002"), [(0, 2, 2)]),
    ({"pon_port_id"}, dict(pon_port_id=0), [(0, 1, 1), (0, 2, 2)]),
    ({"pon_port_id"}, dict(pon_port_id=1), [(1, 1, 1)]),
    ({"onu_id"}, dict(onu_id=1), [(0, 1, 1), (1, 1, 1)]),
    ({"pon_port_id", "onu_id"}, dict(pon_port_id=0, onu_id=1), [(0, 1, 1)]),
    ({"oper_state"}, dict(oper_state="up"), [(0, 1, 1), (0, 2, 2), (1, 1, 1)]),
    ({"onu_state"}, dict(onu_state="enabled"), [(0, 1, 1), (0, 2, 2), (1, 1, 1)]),
    ({"onu_state"}, dict(onu_state="discovered"), []),
    ({"gemports"}, dict(gemports=[1024]), [(0, 1, 1), (1, 1, 1)]),
    ({"gemports", "pon_port_id"}, dict(gemports=[1024], pon_port_id=1), [(1, 1, 1)]),
    ({"tconts.uni_id"}, dict(tconts=legacy_pb2.Tconts(uni_id=3)), [(0, 2, 2)]),
    ({"tconts.port_no"}, dict(tconts=legacy_pb2.Tconts(port_no=259)), [(0, 2, 2)]),
    ({"tconts.port_no"}, dict(tconts=legacy_pb2.Tconts(port_no=1)), []),
])
def test_get_flows_filters(flows_env, given, fields, expected):
    """GetFlows lists the flows of the ONUs set F selects; no filter lists every flow once."""
    msg = flows_env[2].GetFlows(legacy_pb2.ONUInfo(**fields), given)
    assert flow_ids(msg) == expected


def test_get_flows_grpc_and_unknown(flows_env):
    """Over gRPC an empty ONUInfo lists all flows; an unknown serial or PON is 404."""
    commands = flows_env[2]
    assert len(commands.GetFlows(legacy_pb2.ONUInfo()).flows) == 4
    assert flow_ids(commands.GetFlows(legacy_pb2.ONUInfo(onu_id=1))) == [(0, 1, 1)]
    with pytest.raises(NotFound):
        commands.GetFlows(legacy_pb2.ONUInfo(onu_serial="BBSM99999999"))
    with pytest.raises(NotFound):
        commands.GetFlows(legacy_pb2.ONUInfo(pon_port_id=7))


# ---- ONUActivate / ONUDeactivate -----------------------------------------------------------------

def test_deactivate_and_activate_single(env):
    """A single ONU is shut down and powered on as v1 does; the state is visible through v1."""
    olt, _, commands, v1 = env
    olt.activate_onu(0, "BBSM00000001", 1)
    reply = commands.ONUDeactivate(onu_request(onu_serial="BBSM00000001"))
    assert reply.status_msg == "Shut down 1 ONU: BBSM00000001"
    assert state(v1, "BBSM00000001") == "disabled"
    reply = commands.ONUActivate(onu_request(pon_port_id=0, onu_serial="BBSM00000001"))
    assert reply.status_msg == "Powered on 1 ONU: BBSM00000001"
    assert state(v1, "BBSM00000001") == "enabled"


def test_single_already_in_target_state_is_409_without_effect(env):
    """Powering on an enabled ONU is refused (409) and emits nothing."""
    olt, _, commands, _ = env
    olt.activate_onu(0, "BBSM00000001", 1)
    seen = []
    olt.subscribe(seen.append)
    with pytest.raises(FailedPrecondition, match="already enabled"):
        commands.ONUActivate(onu_request(onu_serial="BBSM00000001"))
    assert seen == []


def test_per_pon_and_per_pon_onu_id(env):
    """Per PON acts on the PON's ONUs only; per (PON, ONU id) on that one ONU."""
    olt, _, commands, v1 = env
    for pon, serial, onu_id in ((0, "BBSM00000001", 1), (0, "BBSM00000002", 2), (1, "BBSM00000101", 1),
                                (1, "BBSM00000102", 2)):
        olt.activate_onu(pon, serial, onu_id)
    reply = commands.ONUDeactivate(onu_request(pon_port_id=1, onu_id=2), {"onu.pon_port_id", "onu.onu_id"})
    assert reply.status_msg == "Shut down 1 ONU: BBSM00000102"
    reply = commands.ONUDeactivate(onu_request(pon_port_id=0), {"onu.pon_port_id"})
    assert reply.status_msg == "Shut down 2 ONUs: BBSM00000001, BBSM00000002"
    assert [state(v1, s) for s in ("BBSM00000001", "BBSM00000002", "BBSM00000101", "BBSM00000102")] == [
        "disabled", "disabled", "enabled", "disabled"]
    reply = commands.ONUActivate(onu_request(pon_port_id=0))  # gRPC: onu with only PON 0
    assert reply.status_msg == "Powered on 2 ONUs: BBSM00000001, BBSM00000002"
    assert state(v1, "BBSM00000002") == "enabled"


def test_per_pon_with_state_filter(env):
    """Filters narrow a per-PON deactivation (here: only the enabled ONUs)."""
    olt, _, commands, v1 = env
    olt.activate_onu(0, "BBSM00000002", 2)
    reply = commands.ONUDeactivate(onu_request(pon_port_id=0, onu_state="enabled"),
                                   {"onu.pon_port_id", "onu.onu_state"})
    assert reply.status_msg == "Shut down 1 ONU: BBSM00000002"
    reply = commands.ONUDeactivate(onu_request(pon_port_id=0, onu_state="enabled"),
                                   {"onu.pon_port_id", "onu.onu_state"})
    assert "No ONU matches" in reply.status_msg
    assert state(v1, "BBSM00000001") == "discovered"


def test_bulk_acts_on_others_and_reports_skipped(env):
    """A batch powers on every listed ONU that is off and names the one already on."""
    olt, _, commands, v1 = env
    for pon, serial, onu_id in ((0, "BBSM00000001", 1), (0, "BBSM00000002", 2), (1, "BBSM00000101", 1)):
        olt.activate_onu(pon, serial, onu_id)
    commands.ONUDeactivate(legacy_pb2.ONURequest(onus_batch=legacy_pb2.ONUs(onus=[
        legacy_pb2.ONUInfo(onu_serial="BBSM00000001"), legacy_pb2.ONUInfo(pon_port_id=1, onu_id=1)])))
    assert state(v1, "BBSM00000001") == state(v1, "BBSM00000101") == "disabled"
    reply = commands.ONUActivate(legacy_pb2.ONURequest(onus_batch=legacy_pb2.ONUs(onus=[
        legacy_pb2.ONUInfo(onu_serial="BBSM00000001"), legacy_pb2.ONUInfo(onu_serial="BBSM00000002"),
        legacy_pb2.ONUInfo(pon_port_id=1, onu_id=1), legacy_pb2.ONUInfo(onu_serial="BBSM00000001")])))
    assert reply.status_msg == ("Powered on 2 ONUs: BBSM00000001, BBSM00000101; "
                                "skipped 1: ONU BBSM00000002 is already enabled")
    assert state(v1, "BBSM00000001") == state(v1, "BBSM00000101") == "enabled"


def test_bulk_all_in_target_state_is_409(env):
    """A batch whose every ONU is already off is refused."""
    commands = env[2]
    with pytest.raises(FailedPrecondition, match="BBSM00000001.*BBSM00000002"):
        commands.ONUDeactivate(legacy_pb2.ONURequest(onus_batch=legacy_pb2.ONUs(onus=[
            legacy_pb2.ONUInfo(onu_serial="BBSM00000001"), legacy_pb2.ONUInfo(onu_serial="BBSM00000002")])))


@pytest.mark.parametrize("entry", [
    dict(onu_serial="BBSM99999999"), dict(pon_port_id=0, onu_id=9), dict(pon_port_id=9, onu_id=1),
    dict(onu_serial="BBSM00000001", pon_port_id=1), dict(onu_serial="BBSM00000001", onu_id=2)])
def test_bulk_with_unknown_onu_changes_nothing(env, entry):
    """One unknown ONU in a batch is 404 naming the entry, and no listed ONU is touched."""
    olt, _, commands, v1 = env
    olt.activate_onu(0, "BBSM00000001", 1)
    seen = []
    olt.subscribe(seen.append)
    with pytest.raises(NotFound, match=r"^onus\[1\]"):
        commands.ONUDeactivate(legacy_pb2.ONURequest(onus_batch=legacy_pb2.ONUs(onus=[
            legacy_pb2.ONUInfo(onu_serial="BBSM00000001"), legacy_pb2.ONUInfo(**entry)])))
    assert seen == [] and state(v1, "BBSM00000001") == "enabled"


@pytest.mark.parametrize("request_msg", [
    legacy_pb2.ONURequest(),
    legacy_pb2.ONURequest(onus_batch=legacy_pb2.ONUs(onus=[legacy_pb2.ONUInfo(oper_state="up")])),
    legacy_pb2.ONURequest(onu=legacy_pb2.ONUInfo(onu_serial="BBSM00000001"),
                          onus_batch=legacy_pb2.ONUs(onus=[legacy_pb2.ONUInfo(onu_serial="BBSM00000002")])),
])
def test_power_requests_that_name_nothing_are_400(env, request_msg):
    """No ONU, a batch entry without an identity, or both onu and a batch: 400."""
    with pytest.raises(InvalidArgument):
        env[2].ONUActivate(request_msg)


def test_power_on_refused_while_rebooting(env):
    """Powering on during an OLT reboot is 409 (BBSim answers success and does nothing)."""
    olt, _, commands, _ = env
    olt.activate_onu(0, "BBSM00000001", 1)
    olt.reboot()
    with pytest.raises(FailedPrecondition, match="rebooting"):
        commands.ONUActivate(onu_request(onu_serial="BBSM00000001"))


# ---- alarms --------------------------------------------------------------------------------------

@pytest.mark.parametrize("legacy_name, kind, field", [
    ("signaldegrade", "onu_signal_degrade_ind", "status"),
    ("lossofomcichannel", "onu_loss_omci_ind", "status"),
    ("lossofploam", "onu_alarm_ind", "loami_status"),
])
@pytest.mark.parametrize("status", ["on", "off"])
def test_onu_alarms(env, legacy_name, kind, field, status):
    """Each legacy alarm name emits the v1 alarm's indication; on raises, off clears."""
    olt, _, commands, _ = env
    olt.activate_onu(0, "BBSM00000002", 2)
    seen = []
    olt.subscribe(seen.append)
    reply = commands.GenerateONUAlarm(legacy_pb2.ONUAlarmRequest(onu_serial="BBSM00000002",
                                                                 alarm_type=legacy_name, status=status))
    assert reply.status_msg.startswith(f"ONU BBSM00000002: {legacy_name} alarm")
    [alarm] = [e for e in seen if isinstance(e, events.Alarm)]
    assert alarm.kind == kind and alarm.fields[field] == status
    assert (alarm.fields["intf_id"], alarm.fields["onu_id"]) == (0, 2)


@pytest.mark.parametrize("serial, alarm_type, status, error", [
    ("BBSM99999999", "signaldegrade", "on", NotFound),
    ("BBSM00000001", "DYING_GASP", "on", InvalidArgument),
    ("BBSM00000001", "los", "on", InvalidArgument),
    ("BBSM00000001", "signaldegrade", "maybe", InvalidArgument),
    ("BBSM00000001", "signaldegrade", "", InvalidArgument),
])
def test_onu_alarm_refusals(env, serial, alarm_type, status, error):
    """Unknown ONU is 404; other alarm names and statuses are 400; nothing is emitted."""
    olt, _, commands, _ = env
    seen = []
    olt.subscribe(seen.append)
    with pytest.raises(error):
        commands.GenerateONUAlarm(legacy_pb2.ONUAlarmRequest(onu_serial=serial, alarm_type=alarm_type,
                                                             status=status))
    assert seen == []


@pytest.mark.parametrize("port_type, port_id, intf_id", [("pon", 1, 0x20000001), ("nni", 0, 0x100000)])
def test_olt_los(env, port_type, port_id, intf_id):
    """GenerateOLTAlarm emits los_ind on the port number of the PON or NNI."""
    olt, _, commands, _ = env
    seen = []
    olt.subscribe(seen.append)
    reply = commands.GenerateOLTAlarm(legacy_pb2.OLTAlarmRequest(port_type=port_type, port_id=port_id, status="on"))
    assert reply.status_msg == f"LOS raised on {port_type.upper()} {port_id}."
    assert seen == [events.Alarm("los_ind", {"intf_id": intf_id, "status": "on"})]


@pytest.mark.parametrize("port_type, port_id, status, error", [
    ("pon", 9, "on", NotFound), ("nni", 2, "off", NotFound), ("uni", 0, "on", InvalidArgument),
    ("pon", 0, "loud", InvalidArgument)])
def test_olt_los_refusals(env, port_type, port_id, status, error):
    """Unknown port 404, bad type or status 400."""
    with pytest.raises(error):
        env[2].GenerateOLTAlarm(legacy_pb2.OLTAlarmRequest(port_type=port_type, port_id=port_id, status=status))


# ---- device actions ------------------------------------------------------------------------------

@pytest.mark.parametrize("action, delay", [("reboot", ONU_SOFT_REBOOT_DELAY), ("soft-reboot", ONU_SOFT_REBOOT_DELAY),
                                           ("hard-reboot", ONU_HARD_REBOOT_DELAY)])
def test_onu_reboot_power_cycles_after_delay(env, action, delay):
    """An ONU reboot shuts it down now and powers it on after the soft or hard delay."""
    olt, clock, commands, v1 = env
    olt.activate_onu(0, "BBSM00000001", 1)
    reply = commands.PerformDeviceAction(legacy_pb2.DeviceAction(device_type="onu", serial_number="BBSM00000001",
                                                                 action=action))
    assert f"powering on again in {delay:g} s" in reply.status_msg
    assert state(v1, "BBSM00000001") == "disabled"
    clock.advance(delay - 0.1)
    assert state(v1, "BBSM00000001") == "disabled"
    clock.advance(0.1)
    assert state(v1, "BBSM00000001") == "enabled"


def test_onu_reboot_delays_configurable():
    """The soft and hard delays come from the constructor."""
    olt, clock = make_olt(1, 1)
    olt.activate_onu(0, "BBSM00000001", 1)
    commands = V0Commands(olt, onu_soft_reboot_delay=1, onu_hard_reboot_delay=2)
    commands.PerformDeviceAction(legacy_pb2.DeviceAction(device_type="ONU", serial_number="BBSM00000001",
                                                         action="Hard-Reboot"))
    clock.advance(1.5)
    assert olt.onus[0].state == "disabled"
    clock.advance(0.5)
    assert olt.onus[0].state == "enabled"


def test_onu_reboot_power_on_meanwhile_is_harmless(env):
    """If the ONU was powered on during the pause, the delayed power-on does nothing."""
    olt, clock, commands, v1 = env
    olt.activate_onu(0, "BBSM00000001", 1)
    commands.PerformDeviceAction(legacy_pb2.DeviceAction(device_type="onu", serial_number="BBSM00000001",
                                                         action="reboot"))
    commands.ONUActivate(onu_request(onu_serial="BBSM00000001"))
    clock.advance(ONU_SOFT_REBOOT_DELAY)
    assert state(v1, "BBSM00000001") == "enabled"


def test_onu_reboot_then_olt_reboot_leaves_onu_down(env):
    """An OLT reboot during an ONU's reboot pause wins: the ONU is not powered on behind the adapter's back."""
    olt, clock, commands, v1 = env
    olt.activate_onu(0, "BBSM00000001", 1)
    commands.PerformDeviceAction(legacy_pb2.DeviceAction(device_type="onu", serial_number="BBSM00000001",
                                                         action="hard-reboot"))
    commands.PerformDeviceAction(legacy_pb2.DeviceAction(device_type="olt", action="reboot"))
    clock.advance(olt.timings.reboot_grace)
    clock.advance(olt.timings.reboot_delay)
    assert olt.state == "initialized"
    clock.advance(ONU_HARD_REBOOT_DELAY)
    assert state(v1, "BBSM00000001") == "disabled"


def test_olt_reboot(env):
    """An OLT reboot (either path) runs the model's reboot: ONUs down, OLT deleted, back later."""
    olt, clock, commands, v1 = env
    olt.activate_onu(0, "BBSM00000001", 1)
    reply = commands.PerformDeviceAction(legacy_pb2.DeviceAction(device_type="olt", action="soft-reboot"))
    assert reply.status_msg == "OLT BBSIM_OLT_0 soft-reboot triggered."
    assert olt.state == "deleted" and state(v1, "BBSM00000001") == "disabled"
    with pytest.raises(FailedPrecondition, match="already rebooting"):
        commands.PerformDeviceAction(legacy_pb2.DeviceAction(device_type="olt", serial_number="BBSIM_OLT_0",
                                                             action="hard-reboot"))
    clock.advance(olt.timings.reboot_grace)
    clock.advance(olt.timings.reboot_delay)
    assert olt.state == "initialized"


@pytest.mark.parametrize("device_type, serial, action, error", [
    ("olt", "", "explode", InvalidArgument),
    ("olt", "", "", InvalidArgument),
    ("switch", "", "reboot", InvalidArgument),
    ("onu", "", "reboot", InvalidArgument),
    ("onu", "BBSM99999999", "reboot", NotFound),
    ("olt", "BBSIM_OLT_7", "reboot", NotFound),
    ("onu", "BBSM00000002", "reboot", FailedPrecondition),  # discovered, never activated
])
def test_device_action_refusals(env, device_type, serial, action, error):
    """Unknown actions or device types 400, unknown devices 404, illegal state 409; nothing changes."""
    olt, _, commands, _ = env
    seen = []
    olt.subscribe(seen.append)
    with pytest.raises(error):
        commands.PerformDeviceAction(legacy_pb2.DeviceAction(device_type=device_type, serial_number=serial,
                                                             action=action))
    assert seen == [] and olt.state == "enabled"


def test_close_stops_following_los(env):
    """After close() the commands no longer track LOS."""
    olt, _, commands, v1 = env
    commands.close()
    v1.SetOltAlarmIndication(bbsim_pb2.OLTAlarmRequest(InterfaceType="pon", InterfaceID=0, Status="on"))
    assert commands.los == {}
