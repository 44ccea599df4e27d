"""The JSON of the v1 REST API pinned by golden files, for both response revisions (decisions section 2), and
checked field by field against the tables of the service document, section 2.

Golden files live in tests/golden/v1/; `OLTSIM_UPDATE_GOLDEN=1` rewrites them (see tests/golden/README.md).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from voltha_protos import openolt_pb2, tech_profile_pb2

from conftest import Sim, grpc_call

GOLDEN = Path(__file__).resolve().parent.parent / "golden" / "v1"
UPDATE = os.environ.get("OLTSIM_UPDATE_GOLDEN") == "1"
REVISIONS = ("base", "extended")
SN = "BBSM00000001"


def dhcp_flow():
    """BBR's DHCP trap flow for ONU 1 of PON 0 (reference 2.5)."""
    return openolt_pb2.Flow(
        access_intf_id=0, onu_id=1, uni_id=0, flow_id=1, flow_type="downstream", alloc_id=1024, gemport_id=1024,
        network_intf_id=0, classifier=openolt_pb2.Classifier(o_vid=900, o_pbits=255, eth_type=0x0800, src_port=68,
                                                             dst_port=67),
        action=openolt_pb2.Action(cmd=openolt_pb2.ActionCmd(trap_to_host=True)), priority=100,
        cookie=4294967296123, port_no=256, tech_profile_id=64)


def eapol_flow():
    """An EAPOL trap flow for ONU 1 of PON 0 (upstream, o_vid 4091)."""
    return openolt_pb2.Flow(
        access_intf_id=0, onu_id=1, uni_id=0, flow_id=2, flow_type="upstream", alloc_id=1024, gemport_id=1024,
        classifier=openolt_pb2.Classifier(o_vid=4091, eth_type=0x888E),
        action=openolt_pb2.Action(cmd=openolt_pb2.ActionCmd(trap_to_host=True)), priority=10000, cookie=2,
        port_no=256, tech_profile_id=64)


def pon1_flow():
    """The same flow id on PON 1 (kept apart from PON 0's, decisions 4)."""
    return openolt_pb2.Flow(
        access_intf_id=1, onu_id=1, uni_id=0, flow_id=1, flow_type="downstream", alloc_id=1024, gemport_id=1024,
        classifier=openolt_pb2.Classifier(o_vid=908, o_pbits=255, eth_type=0x0800, src_port=68, dst_port=67),
        action=openolt_pb2.Action(cmd=openolt_pb2.ActionCmd(trap_to_host=True)), priority=100, cookie=1,
        port_no=256, tech_profile_id=64)


def schedulers():
    """The CreateTrafficSchedulers of reference 2.5 (ONU 1 of PON 0)."""
    return tech_profile_pb2.TrafficSchedulers(
        intf_id=0, onu_id=1, uni_id=0, port_no=256,
        traffic_scheds=[tech_profile_pb2.TrafficScheduler(
            direction=tech_profile_pb2.UPSTREAM, alloc_id=1024, tech_profile_id=64,
            scheduler=tech_profile_pb2.SchedulerConfig(
                direction=tech_profile_pb2.UPSTREAM, additional_bw=tech_profile_pb2.AdditionalBW_BestEffort,
                priority=0, weight=0, sched_policy=tech_profile_pb2.Hybrid),
            traffic_shaping_info=tech_profile_pb2.TrafficShapingInfo(cir=600, cbs=30, pir=32000, pbs=30))])


def scenario(revision: str) -> Sim:
    """A 2x2 OLT an adapter brought up: every ONU activated (ONU id = index), three flows, one scheduler set."""
    sim = Sim(revision=revision)
    sim.bring_up()
    for flow in (dhcp_flow(), eapol_flow(), pon1_flow()):
        grpc_call(sim.openolt, "FlowAdd", flow)
    grpc_call(sim.openolt, "CreateTrafficSchedulers", schedulers())
    return sim


ENDPOINTS = {
    "olt": "/v1/olt",
    "onus": "/v1/olt/onus",
    "onu": f"/v1/olt/onus/{SN}",
    "flows": "/v1/olt/flows",
    "onu_flows": f"/v1/olt/onus/{SN}/flows",
    "trafficschedulers": f"/v1/olt/onus/{SN}/trafficschedulers",
}


def get_json(sim: Sim, path: str):
    reply = sim.rest.call("GET", path)
    assert reply.code == 200, reply.body
    assert reply.header("Content-Type") == "application/json"
    return reply.json


@pytest.mark.parametrize("name", sorted(ENDPOINTS))
@pytest.mark.parametrize("revision", REVISIONS)
def test_json_matches_golden(revision, name):
    """GET responses keep their exact JSON (compared parsed): clients and BBSim tooling rely on the shapes."""
    actual = get_json(scenario(revision), ENDPOINTS[name])
    path = GOLDEN / f"{revision}_{name}.json"
    if UPDATE:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(actual, indent=2, sort_keys=True) + "\n")
    assert path.exists(), f"missing golden file {path}; run with OLTSIM_UPDATE_GOLDEN=1 to create it"
    assert actual == json.loads(path.read_text())


def test_gets_are_repeatable():
    """Reading twice gives the same JSON (the cached rendering equals a fresh one)."""
    sim = scenario("extended")
    for path in ENDPOINTS.values():
        assert get_json(sim, path) == get_json(sim, path)


def test_cached_olt_view_follows_changes():
    """GET /v1/olt and /v1/olt/onus show a change made after a previous read (no stale cache)."""
    sim = scenario("extended")
    get_json(sim, "/v1/olt")
    get_json(sim, "/v1/olt/onus")
    sim.olt.shutdown_onu(SN)
    assert get_json(sim, "/v1/olt")["PONPorts"][0]["AllocatedOnuIds"] == [{"SerialNumber": "BBSM00000002", "Id": 2}]
    assert get_json(sim, "/v1/olt/onus")["items"][0]["InternalState"] == "disabled"


# ---- the field tables of service document section 2 ----------------------------------------------

INT, STR, BOOL, OBJ = int, str, bool, dict


def f(kind, ext=False, of=None):
    """A table row: JSON type, whether it is [ext], and the table of the elements/members when nested."""
    return (kind, ext, of)


SERVICE = {
    "CTag": f(INT), "DhcpState": f(STR), "EapolState": f(STR), "GemPort": f(INT), "HwAddress": f(STR),
    "IGMPState": f(STR), "InternalState": f(STR), "Name": f(STR), "NeedsDhcp": f(BOOL), "NeedsEapol": f(BOOL),
    "NeedsIgmp": f(BOOL), "OnuSn": f(STR), "STag": f(INT),
    "ConfigureMacAddress": f(BOOL, True), "DsCTagPriority": f(INT, True), "DsSTagPriority": f(INT, True),
    "EnableMacLearning": f(BOOL, True), "NeedsPPPoE": f(BOOL, True), "UniId": f(INT, True),
    "UniTagMatch": f(INT, True), "UsCTagPriority": f(INT, True), "UsSTagPriority": f(INT, True),
}
UNI = {
    "ID": f(INT), "MeID": f(INT), "OnuID": f(INT), "OnuSn": f(STR), "OperState": f(STR), "PortNo": f(INT),
    "Type": f(STR), "services": f(list, of=SERVICE),
}
ONU = {
    "HwAddress": f(STR), "ID": f(INT), "InternalState": f(STR), "OperState": f(STR), "PonPortID": f(INT),
    "PortNo": f(INT), "SerialNumber": f(STR), "services": f(list, of=SERVICE),
    "ActiveImageEntityId": f(INT, True), "CommittedImageEntityId": f(INT, True),
    "ImageSoftwareExpectedSections": f(INT, True), "ImageSoftwareReceivedSections": f(INT, True),
    "unis": f(list, True, of=UNI),
}
ALLOCATED = {"Id": f(INT, True), "SerialNumber": f(STR, True)}
OLT = {
    "ID": f(INT), "IP": f(STR), "InternalState": f(STR), "OperState": f(STR), "SerialNumber": f(STR),
    "NNIPorts": f(list, of={"ID": f(INT), "OperState": f(STR)}),
    "PONPorts": f(list, of={
        "ID": f(INT), "OperState": f(STR), "InternalState": f(STR, True), "PacketCount": f(STR, True),
        "Technology": f(STR, True), "AllocatedAllocIds": f(list, True, ALLOCATED),
        "AllocatedGemPorts": f(list, True, ALLOCATED), "AllocatedOnuIds": f(list, True, ALLOCATED)}),
    "NniDhcpTrapVid": f(INT, True),
}
ACTION_CMD = {name: f(BOOL) for name in (
    "add_inner_tag", "add_outer_tag", "remark_inner_pbits", "remark_outer_pbits", "remove_inner_tag",
    "remove_outer_tag", "translate_inner_tag", "translate_outer_tag", "trap_to_host")}
ACTION = {"cmd": f(OBJ, of=ACTION_CMD),
          **{name: f(INT) for name in ("i_pbits", "i_tpid", "i_vid", "o_pbits", "o_tpid", "o_vid")}}
CLASSIFIER = {
    **{name: f(INT) for name in ("dst_ip", "dst_port", "eth_type", "i_pbits", "i_tpid", "i_vid", "ip_proto",
                                 "o_pbits", "o_tpid", "o_vid", "src_ip", "src_port")},
    **{name: f(STR) for name in ("dst_mac", "src_mac", "pkt_tag_type")},
}


def flow_table(revision):
    return {
        **{name: f(INT) for name in ("access_intf_id", "alloc_id", "gemport_id", "group_id", "network_intf_id",
                                     "onu_id", "port_no", "priority", "tech_profile_id", "uni_id")},
        "cookie": f(STR), "flow_type": f(STR), "flow_id": f(INT if revision == "base" else STR),
        "action": f(OBJ, of=ACTION), "classifier": f(OBJ, of=CLASSIFIER),
        "gemport_to_aes": f(OBJ, True), "pbit_to_gemport": f(OBJ, True), "replicate_flow": f(BOOL, True),
        "symmetric_flow_id": f(STR, True),
    }


def flows_table(revision):
    return {"flow_count": f(INT), "flows": f(list, of=flow_table(revision))}


SCHEDULERS = {"traffSchedulers": f(OBJ, of={
    "intf_id": f(INT), "onu_id": f(INT), "port_no": f(INT), "uni_id": f(INT),
    "traffic_scheds": f(list, of={
        "alloc_id": f(INT), "tech_profile_id": f(INT), "direction": f(STR),
        "scheduler": f(OBJ, of={"additional_bw": f(STR), "direction": f(STR), "sched_policy": f(STR),
                                "priority": f(INT), "weight": f(INT)}),
        "traffic_shaping_info": f(OBJ, of={"add_bw_ind": f(STR), "cbs": f(INT), "cir": f(INT), "gir": f(INT),
                                           "pbs": f(INT), "pir": f(INT)}),
    }),
})}


def check_fields(doc, table, revision, where="$"):
    """`doc` has exactly the table's fields of `revision` (base: no [ext] field), each of its JSON type."""
    expected = {name for name, (_, ext, _) in table.items() if revision == "extended" or not ext}
    assert set(doc) == expected, f"{where}: missing {sorted(expected - set(doc))}, extra {sorted(set(doc) - expected)}"
    for name in expected:
        kind, _, of = table[name]
        value = doc[name]
        if kind is INT:
            assert isinstance(value, int) and not isinstance(value, bool), f"{where}.{name} = {value!r}"
        else:
            assert isinstance(value, kind), f"{where}.{name} = {value!r}"
        if of is not None and kind is list:
            for i, item in enumerate(value):
                check_fields(item, of, revision, f"{where}.{name}[{i}]")
        elif of is not None:
            check_fields(value, of, revision, f"{where}.{name}")


@pytest.mark.parametrize("revision", REVISIONS)
def test_olt_fields(revision):
    """GET /v1/olt has every field of table 2.1 (base: without [ext]), with its type; 64-bit PacketCount is a string."""
    doc = get_json(scenario(revision), "/v1/olt")
    check_fields(doc, OLT, revision)


@pytest.mark.parametrize("revision", REVISIONS)
def test_onu_fields(revision):
    """GET /v1/olt/onus/{sn} and every item of GET /v1/olt/onus have the fields of tables 2.2-2.4: base has
    HwAddress, PortNo and services[] in place of unis[]."""
    sim = scenario(revision)
    check_fields(get_json(sim, f"/v1/olt/onus/{SN}"), ONU, revision)
    items = get_json(sim, "/v1/olt/onus")["items"]
    assert [item["SerialNumber"] for item in items] == ["BBSM00000001", "BBSM00000002", "BBSM00000101",
                                                        "BBSM00000102"]
    for i, item in enumerate(items):
        check_fields(item, ONU, revision, f"$.items[{i}]")


def test_base_onu_lists_every_service_of_every_uni():
    """In the base revision an ONU's services[] holds the services of all its UNIs, HwAddress is the first one's MAC
    and PortNo the first UNI's port."""
    onu = get_json(scenario("base"), f"/v1/olt/onus/{SN}")
    assert [s["HwAddress"] for s in onu["services"]] == [f"2e:00:00:01:0{u}:00" for u in range(4)]
    assert [s["CTag"] for s in onu["services"]] == [900, 901, 902, 903]
    assert (onu["HwAddress"], onu["PortNo"]) == ("2e:00:00:01:00:00", 256)


@pytest.mark.parametrize("path", ["/v1/olt/flows", f"/v1/olt/onus/{SN}/flows"])
@pytest.mark.parametrize("revision", REVISIONS)
def test_flow_fields(revision, path):
    """Flow lists have every field of table 2.5; flow_id is an integer in base and a string in extended."""
    doc = get_json(scenario(revision), path)
    check_fields(doc, flows_table(revision), revision)
    assert doc["flow_count"] == len(doc["flows"]) > 0


@pytest.mark.parametrize("revision", REVISIONS)
def test_minimal_flow_still_has_every_field(revision):
    """A flow the adapter sent without classifier or action is still rendered with every table 2.5 field."""
    sim = Sim(revision=revision)
    sim.bring_up()
    grpc_call(sim.openolt, "FlowAdd", openolt_pb2.Flow(access_intf_id=0, onu_id=2, uni_id=0, flow_id=77,
                                                       flow_type="upstream", alloc_id=1030, gemport_id=1030))
    check_fields(get_json(sim, "/v1/olt/flows"), flows_table(revision), revision)


@pytest.mark.parametrize("revision", REVISIONS)
def test_traffic_scheduler_fields(revision):
    """GET .../trafficschedulers has every field of table 2.6 after CreateTrafficSchedulers, and is {} before."""
    sim = scenario(revision)
    check_fields(get_json(sim, f"/v1/olt/onus/{SN}/trafficschedulers"), SCHEDULERS, revision)
    assert get_json(sim, "/v1/olt/onus/BBSM00000002/trafficschedulers") == {}


@pytest.mark.parametrize("revision", REVISIONS)
def test_minimal_traffic_scheduler_still_has_every_field(revision):
    """Schedulers sent without scheduler config or shaping info are still rendered with every table 2.6 field."""
    sim = Sim(revision=revision)
    sim.bring_up()
    grpc_call(sim.openolt, "CreateTrafficSchedulers", tech_profile_pb2.TrafficSchedulers(
        intf_id=0, onu_id=1, traffic_scheds=[tech_profile_pb2.TrafficScheduler(alloc_id=1024)]))
    check_fields(get_json(sim, f"/v1/olt/onus/{SN}/trafficschedulers"), SCHEDULERS, revision)


def test_schedulers_removed_render_empty():
    """RemoveTrafficSchedulers clears what GET .../trafficschedulers shows (BBSim: {})."""
    sim = scenario("extended")
    grpc_call(sim.openolt, "RemoveTrafficSchedulers", schedulers())
    assert get_json(sim, f"/v1/olt/onus/{SN}/trafficschedulers") == {}
