"""The OLT's flow cap follows its size: PONs x ONUs x UNIs x 20 flows, 16384 at least, unless --max-flows or
olt.max_flows says otherwise; a 16x32 DT lab with 4 UNIs installs its 32,768 flows, and bbsimctl (4 MiB a message)
still reads them all with one GetFlows."""
from __future__ import annotations

import dataclasses

import grpc
import pytest
from voltha_protos import openolt_pb2

from conftest import Sim, grpc_call, grpc_error
from oltsim._proto import bbsim_pb2
from oltsim.config import ConfigError, load_settings

#: what a Go gRPC client such as bbsimctl accepts in one message unless told otherwise
GO_CLIENT_RECEIVE_LIMIT = 4 * 1024 * 1024


@pytest.mark.parametrize("given, cap", [
    ({}, 16384),
    ({"pon": 16, "onu": 32}, 40960),
    ({"pon": 16, "onu": 64, "uni": 8}, 163840),
    ({"pon": 4, "onu": 16, "uni": 1}, 16384),
    ({"pon": 16, "onu": 32, "max_flows": "1000"}, 1000),
    ({"pon": 1, "onu": 1, "max_flows": 50000}, 50000),
])
def test_the_default_flow_cap_follows_the_olts_size_and_an_option_wins(given, cap):
    """20 flows a UNI, 16384 at least; a --max-flows given, smaller or larger, is kept as given."""
    assert load_settings(given, None).max_flows == cap


def test_a_yaml_max_flows_wins_and_zero_is_refused(tmp_path):
    """olt.max_flows in the file wins over the derived default, the option over the file; 0 is a value, refused as
    below 1 (not taken for "derive it")."""
    config = tmp_path / "c.yaml"
    config.write_text("olt:\n  pon_ports: 16\n  onus_per_port: 32\n  max_flows: 20000\n")
    assert load_settings({}, str(config)).max_flows == 20000
    assert load_settings({"max_flows": 30000}, str(config)).max_flows == 30000
    with pytest.raises(ConfigError, match=r"max_flows must be at least 1 \(got 0\)"):
        load_settings({"max_flows": 0}, None)
    config.write_text("olt:\n  max_flows: 0\n")
    with pytest.raises(ConfigError, match=r"max_flows must be at least 1 \(got 0\) \(set by olt.max_flows in "):
        load_settings({}, str(config))


def test_a_copy_with_another_size_derives_its_cap_again_unless_one_was_given():
    """dataclasses.replace with more PONs derives the default again; a given cap stays."""
    derived = load_settings({"pon": 16, "onu": 32}, None)
    assert dataclasses.replace(derived, pon=32).max_flows == 81920
    given = load_settings({"pon": 16, "onu": 32, "max_flows": 1000}, None)
    assert dataclasses.replace(given, pon=32).max_flows == 1000


def dt_flows(onu, uni_id: int) -> list[openolt_pb2.Flow]:
    """The 16 HSIA flows VOLTHA's openolt adapter installs on one UNI in the DT workflow with one GEM port per p-bit:
    for each p-bit an upstream flow pushing the S-tag and a downstream one popping it: 64-bit flow id and cookie, port
    number, technology profile and gemport_to_aes, 98 to 120 bytes encoded, 116 on average (a recorded VOLTHA
    bring-up's flows: 88 to 123, 111 on average)."""
    pon, onu_id = onu.pon.id, onu.onu_id
    alloc = 1024 + (onu_id - 1) * 4 + uni_id
    flows = []
    for pbit in range(8):
        gem = 1024 + ((onu_id - 1) * 4 + uni_id) * 8 + pbit
        for direction in ("upstream", "downstream"):
            flow_id = 11288976325843531284 - (((pon * 64 + onu_id) * 16 + uni_id) * 16 + pbit * 2
                                              + (direction == "downstream"))
            upstream = direction == "upstream"
            flows.append(openolt_pb2.Flow(
                access_intf_id=pon, onu_id=onu_id, uni_id=uni_id, flow_id=flow_id, flow_type=direction,
                network_intf_id=0, gemport_id=gem, alloc_id=alloc, priority=10000, cookie=flow_id ^ 0xF0 << 56,
                port_no=(pon << 12) | (onu_id << 4) | uni_id | 0x40000, tech_profile_id=64,
                classifier=openolt_pb2.Classifier(o_vid=4096 if upstream else 900, o_pbits=pbit,
                                                  pkt_tag_type="single_tag" if upstream else "double_tag"),
                action=openolt_pb2.Action(o_vid=900, o_pbits=pbit, cmd=openolt_pb2.ActionCmd(
                    add_outer_tag=upstream, remove_outer_tag=not upstream)),
                gemport_to_aes={gem: True}))
    return flows


def nni_flow(flow_id: int) -> openolt_pb2.Flow:
    """A trap-from-NNI flow as VOLTHA sends it (-1 for the ONU, UNI, GEM port and alloc id)."""
    return openolt_pb2.Flow(access_intf_id=-1, onu_id=-1, uni_id=-1, gemport_id=-1, alloc_id=-1, flow_id=flow_id,
                            flow_type="downstream", network_intf_id=0, priority=10000, cookie=flow_id)


def test_a_16x32_dt_lab_installs_all_its_flows_and_bbsimctl_reads_them_in_one_message():
    """16 PONs x 32 ONUs x 4 UNIs with DT's 16 flows a UNI: all 32,768 FlowAdds succeed (the fixed cap refused
    every one past 16,384), GetFlows answers them all in one message under the 4 MiB a Go client such as bbsimctl
    accepts; NNI flows fill the rest of the cap (40,960), the next FlowAdd is RESOURCE_EXHAUSTED, and GetFlows
    still answers every flow (as BBSim does: a list is never cut short; past 4 MiB bbsimctl refuses to read it)."""
    sim = Sim(pon=16, onu=32, services="dt")
    sim.bring_up()
    for onu in sim.olt.onus:
        for uni_id in range(4):
            for flow in dt_flows(onu, uni_id):
                grpc_call(sim.openolt, "FlowAdd", flow)
    assert len(sim.olt.flows) == 32768
    answer = grpc_call(sim.bbsim, "GetFlows", bbsim_pb2.ONURequest())
    assert (answer.flow_count, len(answer.flows)) == (32768, 32768)
    assert answer.ByteSize() <= GO_CLIENT_RECEIVE_LIMIT, answer.ByteSize()
    for flow_id in range(1, 40960 - 32768 + 1):
        grpc_call(sim.openolt, "FlowAdd", nni_flow(flow_id))
    error = grpc_error(sim.openolt, "FlowAdd", nni_flow(50000))
    assert error.code is grpc.StatusCode.RESOURCE_EXHAUSTED
    assert "limit (40960)" in error.details
    answer = grpc_call(sim.bbsim, "GetFlows", bbsim_pb2.ONURequest())
    assert (answer.flow_count, len(answer.flows)) == (40960, 40960)
