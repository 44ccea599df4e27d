"""IGMP: join/leave v2 and v3 frames (reference 4.5), PktInd addressing, and answers to membership
queries for joined groups on the query's VLAN, on real model objects (TT services: vod needs IGMP)."""
import random
import struct

import pytest
from twisted.internet.task import Clock

from oltsim.config import load_settings
from oltsim.model import events
from oltsim.model.builder import build_olt
from oltsim.model.errors import InvalidArgument
from oltsim.model.flows import Flow
from oltsim.packets import frames as f, igmp
from oltsim.packets.engine import ProtocolEngine

MAC = f.mac_bytes("2e:00:00:01:00:02")
GROUP = f.ip_bytes("224.0.0.9")


class Bench:
    """One OLT (1 PON, 2 ONUs, TT services), engine attached, ONU 1 active, UNI 0 up with port_no 1."""

    def __init__(self, onu_id=1):
        self.clock = Clock()
        settings = load_settings({"pon": 1, "onu": 2, "services": "tt"}, None)
        self.engine = ProtocolEngine.from_settings(settings)
        self.olt = build_olt(settings, self.clock, random.Random(0), frames=self.engine)
        self.engine.attach(self.olt)
        self.events = []
        self.olt.subscribe(self.events.append)
        self.olt.start()
        self.olt.enable_indication()
        self.clock.advance(1)
        self.onu = self.olt.activate_onu(0, "BBSM00000001", onu_id)
        self.uni = self.onu.unis[0]
        self.uni.enable()
        self.vod = next(s for s in self.uni.services if s.name == "vod")
        self.mac = f.mac_bytes(self.vod.mac)

    def data_flow(self, gem=1030):
        """A vod data-plane flow: gives vod its GEM port and the UNI its port_no."""
        self.olt.flow_add(Flow(flow_id=9, flow_type="upstream", access_intf_id=0, onu_id=self.onu.onu_id, uni_id=0,
                               port_no=1, alloc_id=1, gemport_id=gem, o_vid=555, i_vid=55))

    def pkts(self):
        return [e for e in self.events if isinstance(e, events.PacketIndication)]


def ones_sum_ok(data: bytes) -> bool:
    if len(data) % 2:
        data += b"\0"
    total = 0
    for i in range(0, len(data), 2):
        total += data[i] << 8 | data[i + 1]
        total = (total & 0xFFFF) + (total >> 16)
    return total == 0xFFFF


# ---- frames -------------------------------------------------------------------------------------

def test_join_v2_frame_bytes():
    """v2 Report: broadcast dst, service MAC, one tag (VLAN, PCP), IPv4 IHL 6 TOS 0x10 TTL 128 proto 2
    0.0.0.0 -> group with Router Alert, then 16 00 <csum> <group>."""
    raw = igmp.join_v2_frame(MAC, GROUP, 55, 5)
    assert raw[:18] == b"\xff" * 6 + MAC + bytes.fromhex("8100" "a037" "0800")
    ip = raw[18:]
    assert ip[:2] == bytes.fromhex("4610") and struct.unpack("!H", ip[2:4])[0] == 32
    assert ip[8:10] == bytes.fromhex("8002") and ip[12:20] == bytes(4) + GROUP
    assert ip[20:24] == bytes.fromhex("94040000") and ones_sum_ok(ip[:24])
    assert ip[24:26] == bytes.fromhex("1600") and ip[28:32] == GROUP and ones_sum_ok(ip[24:32])
    assert len(raw) == 60 and raw[50:] == bytes(10)  # padded to the minimum frame


def test_leave_v2_frame():
    """v2 Leave (0x17) goes to the group address, as BBSim sends it."""
    frame = f.decode(igmp.leave_v2_frame(MAC, GROUP, 55, 5))
    assert (frame.igmp.type, frame.igmp.group, frame.ip.dst) == (0x17, GROUP, GROUP)


def test_join_v3_frame():
    """v3 Report (0x22) to 224.0.0.22 with one MODE_IS_EXCLUDE record for the group and no sources."""
    frame = f.decode(igmp.join_v3_frame(MAC, GROUP, 55, 5))
    assert frame.ip.dst == bytes((224, 0, 0, 22)) and frame.ip.options == f.ROUTER_ALERT
    assert frame.igmp.type == 0x22 and frame.igmp.records == (f.IgmpRecord(2, GROUP),)
    assert ones_sum_ok(frame.ip.payload)


# ---- ChangeIgmpState ------------------------------------------------------------------------

@pytest.mark.parametrize("event,mtype", [("igmp_join_start", 0x16), ("igmp_join_startv3", 0x22),
                                         ("igmp_leave", 0x17)])
def test_change_igmp_sends_frame_with_service_addressing(event, mtype):
    """Each action sends its frame from the service: PktInd pon, ONU id, UNI, service GEM, port_no."""
    bench = Bench()
    bench.data_flow(gem=1030)
    bench.engine.change_igmp(bench.vod, event, "224.0.0.9", 0)
    (ind,) = bench.pkts()
    assert (ind.intf_type, ind.intf_id, ind.onu_id, ind.uni_id, ind.gemport_id, ind.port_no) == \
        ("pon", 0, 1, 0, 1030, 1)
    frame = f.decode(ind.pkt)
    assert frame.igmp.type == mtype and frame.eth.src == bench.mac
    assert frame.eth.tags == (f.VlanTag(55, 5),)  # VLAN 0 means the service C-tag


def test_change_igmp_request_vlan_and_gem_fallback():
    """A non-zero request VLAN tags the frame; without a GEM port the PktInd uses int('<pon><onu>')."""
    bench = Bench(onu_id=2)
    bench.engine.change_igmp(bench.vod, "igmp_join_start", "224.0.0.9", 66)
    (ind,) = bench.pkts()
    assert ind.gemport_id == 2 and f.decode(ind.pkt).eth.tags[0].vid == 66


def test_change_igmp_rejects_unknown_event_and_bad_group():
    """An unknown action or a group that is not an IPv4 address is InvalidArgument; nothing is sent."""
    bench = Bench()
    with pytest.raises(InvalidArgument, match="unknown IGMP action"):
        bench.engine.change_igmp(bench.vod, "igmp_join_error", "224.0.0.9", 0)
    with pytest.raises(InvalidArgument, match="not an IPv4 address"):
        bench.engine.change_igmp(bench.vod, "igmp_join_start", "224.0.0", 0)
    assert bench.pkts() == []


# ---- membership queries ---------------------------------------------------------------------

def joined(bench, groups):
    bench.data_flow()
    bench.vod.igmp_groups = dict(groups)
    bench.vod.igmp_state = "igmp_join_started"


def reports(bench):
    return [(f.ip_str(f.decode(p.pkt).igmp.group), f.decode(p.pkt).eth.vid, f.decode(p.pkt).igmp.type)
            for p in bench.pkts()]


@pytest.mark.parametrize("v3", [False, True])
def test_query_answered_for_groups_on_its_vlan(v3):
    """A general query (v2 or v3) on VLAN 55 gets a v2 report for each group joined on VLAN 55 only."""
    bench = Bench()
    joined(bench, {"224.0.0.9": 55, "224.0.0.10": 55, "224.0.0.11": 66})
    bench.engine.packet_out(bench.onu, 1, 4069, igmp.query_frame(55, v3=v3))
    assert sorted(reports(bench)) == [("224.0.0.10", 55, 0x16), ("224.0.0.9", 55, 0x16)]
    assert all(p.gemport_id == 1030 and p.uni_id == 0 for p in bench.pkts())


def test_group_specific_query_answered_for_that_group_only():
    """A group-specific query gets a report for that group alone."""
    bench = Bench()
    joined(bench, {"224.0.0.9": 55, "224.0.0.10": 55})
    bench.engine.packet_out(bench.onu, 1, 1, igmp.query_frame(55, f.ip_bytes("224.0.0.10")))
    assert reports(bench) == [("224.0.0.10", 55, 0x16)]


def test_query_without_membership_or_tag_or_other_igmp_is_silent():
    """No joined group, an untagged query, or a non-query IGMP message produce no answer."""
    bench = Bench()
    bench.data_flow()
    bench.engine.packet_out(bench.onu, 1, 1, igmp.query_frame(55))
    joined(bench, {"224.0.0.9": 55})
    untagged = igmp.query_frame(55)
    untagged = untagged[:12] + untagged[16:]
    bench.engine.packet_out(bench.onu, 1, 1, untagged)
    bench.engine.packet_out(bench.onu, 1, 1, igmp.join_v2_frame(MAC, GROUP, 55, 0))
    assert bench.pkts() == []


def test_query_reaches_only_igmp_services_of_the_addressed_uni():
    """Only IGMP services of the UNI with the query's port_no answer; other UNIs and services stay silent."""
    bench = Bench()
    joined(bench, {"224.0.0.9": 55})
    uni1 = bench.onu.unis[1]
    uni1.enable()
    other = next(s for s in uni1.services if s.name == "vod")
    other.igmp_groups = {"224.0.0.9": 55}
    bench.olt.flow_add(Flow(flow_id=10, flow_type="upstream", access_intf_id=0, onu_id=1, uni_id=1, port_no=2,
                            alloc_id=1, gemport_id=1031, o_vid=555, i_vid=55))
    bench.engine.packet_out(bench.onu, 1, 1, igmp.query_frame(55))
    assert [(p.uni_id, f.decode(p.pkt).eth.src) for p in bench.pkts()] == [(0, bench.mac)]


def test_igmp_to_unknown_port_no_is_invalid_argument():
    """A query for a port_no no UNI has is InvalidArgument."""
    bench = Bench()
    bench.data_flow()
    with pytest.raises(InvalidArgument, match="no UNI has port_no 5"):
        bench.engine.packet_out(bench.onu, 5, 1, igmp.query_frame(55))
