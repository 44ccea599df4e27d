"""With the data plane, the OpenOLT port statistics (GetPonPortStatistics, GetNniPortStatistics, the periodic
port_stats indications) and GetOnuStatistics count the real frames of the bound UNIs and the NNI, as the openolt
adapter reads them into its PON / NNI KPIs; without it, and for a PON with no bound UNI, BBSim's counts stand, byte
for byte (the lab of tests/unit/dataplane_lab.py: OLT id 10, UNI 2 of ONU 11 on PON 1, ATT services)."""
from __future__ import annotations

import pytest
from voltha_protos import openolt_pb2

from dataplane_lab import RG_MAC, SERVER_MAC, Lab, ip_frame
from oltsim.dataplane.pipeline import ToNni, ToNniUntagged, ToUni
from oltsim.model import events
from oltsim.southbound.indications import port_statistics
from oltsim.southbound.openolt import IndicationHub, OpenoltServicer

PON, INDEX, UNI, GEM = 1, 11, 2, 1100


@pytest.fixture
def lab():
    return Lab()


@pytest.fixture
def onu(lab):
    onu, _ = lab.subscriber(PON, INDEX, UNI, GEM)
    return onu


def traffic(lab, onu) -> tuple[list[bytes], list[bytes], list[bytes]]:
    """Three frames from the RG (one broadcast, one 600 octets) and two from the server: (upstream frames,
    downstream frames into the NNI, what the RG got)."""
    up = [ip_frame(SERVER_MAC, RG_MAC), ip_frame(b"\xff" * 6, RG_MAC), ip_frame(SERVER_MAC, RG_MAC, payload=bytes(558))]
    for frame in up:
        assert [type(o) for o in lab.dp.from_uni(onu.serial, UNI, frame)] == [ToNni, ToNniUntagged]
    down, got = [ip_frame(RG_MAC, SERVER_MAC, payload=bytes(i), tags=[(900, 0), (1006, 0)]) for i in (10, 100)], []
    for frame in down:
        out = lab.dp.from_nni(frame)
        assert [type(o) for o in out] == [ToUni]
        got.append(out[0].frame)
    return up, down, got


def test_pon_port_statistics_count_its_unis_frames(lab, onu):
    """GetPonPortStatistics of the subscriber's PON: rx what the RG sent (packets, bytes, the broadcast apart, the
    size buckets), tx what it got; nothing dropped."""
    up, _, got = traffic(lab, onu)
    servicer = OpenoltServicer(lab.olt, IndicationHub(lab.olt), traffic=lab.dp)
    stats = servicer.GetPonPortStatistics(openolt_pb2.Interface(intf_id=PON), None)
    assert stats.intf_id == lab.olt.pon(PON).port_no
    assert (stats.rx_packets, stats.rx_bytes, stats.rx_bcast_packets, stats.rx_mcast_packets,
            stats.rx_ucast_packets) == (3, sum(map(len, up)), 1, 0, 2)
    assert (stats.rx_frames_64, stats.rx_frames_65_127, stats.rx_frames_512_1023) == (2, 0, 1)
    assert (stats.tx_packets, stats.tx_bytes, stats.tx_ucast_packets) == (2, sum(map(len, got)), 2)
    assert stats.rxPacketsDropped == 0 and stats.timestamp == int(lab.clock.seconds())


def test_nni_port_statistics_count_both_nni_interfaces(lab, onu):
    """GetNniPortStatistics: rx the frames into the NNI, tx the frames out of the tagged and the untagged NNI (each
    upstream frame leaves by both in the lab), the RG's broadcast apart (out of both), a group frame into the
    untagged NNI as multicast."""
    up, down, _ = traffic(lab, onu)
    group = ip_frame(bytes.fromhex("01005e7f0001"), SERVER_MAC)
    lab.dp.from_nni_untagged(group)
    servicer = OpenoltServicer(lab.olt, IndicationHub(lab.olt), traffic=lab.dp)
    stats = servicer.GetNniPortStatistics(openolt_pb2.Interface(intf_id=0), None)
    counters = lab.dp.counters()
    assert (stats.rx_packets, stats.rx_bytes) == (3, sum(map(len, down)) + len(group))
    assert (stats.rx_ucast_packets, stats.rx_mcast_packets, stats.rx_bcast_packets) == (2, 1, 0)
    assert stats.tx_packets == 6 == counters["nni"]["tx_frames"] + counters["nni_untagged"]["tx_frames"]
    assert stats.tx_bytes == counters["nni"]["tx_bytes"] + counters["nni_untagged"]["tx_bytes"]
    assert (stats.tx_ucast_packets, stats.tx_bcast_packets, stats.tx_mcast_packets) == (4, 2, 0)


def test_port_stats_indications_count_real_frames(lab, onu):
    """The periodic port_stats indication of a counted port carries the real counts in place of BBSim's 40/30/30
    split; a PON without a bound UNI keeps BBSim's."""
    up, _, _ = traffic(lab, onu)
    hub = IndicationHub(lab.olt)
    hub.count_ports(lab.dp)
    sent = []

    class Queue:
        def put(self, indication):
            sent.append(indication)
            return True
    hub.current = Queue()
    pon, other = lab.olt.pon(PON), lab.olt.pon(0)
    hub._on_event(events.PortStats(pon.port_no, 12345, 77))
    hub._on_event(events.PortStats(other.port_no, 12345, 77))
    counted, plain = (i.port_stats for i in sent)
    assert (counted.intf_id, counted.rx_packets, counted.rx_bytes, counted.timestamp) == (
        pon.port_no, 3, sum(map(len, up)), 77)
    assert plain == port_statistics(other.port_no, 12345, 77)


def test_onu_statistics_count_its_unis_frames(lab, onu):
    """GetOnuStatistics of the subscriber's ONU: rx what its UNI's RG sent, tx what the RG got; another ONU, and
    every ONU without the data plane, answers as before (ids only)."""
    up, _, got = traffic(lab, onu)
    on, off = OpenoltServicer(lab.olt, IndicationHub(lab.olt), traffic=lab.dp), OpenoltServicer(
        lab.olt, IndicationHub(lab.olt))
    request = openolt_pb2.Onu(intf_id=PON, onu_id=onu.onu_id)
    stats = on.GetOnuStatistics(request, None)
    assert (stats.rx_packets, stats.rx_bytes, stats.tx_packets, stats.tx_bytes) == (
        3, sum(map(len, up)), 2, sum(map(len, got)))
    assert off.GetOnuStatistics(request, None) == openolt_pb2.OnuStatistics(intf_id=PON, onu_id=onu.onu_id)
    other = lab.activate(PON, 3)
    request = openolt_pb2.Onu(intf_id=PON, onu_id=other.onu_id)
    assert on.GetOnuStatistics(request, None) == off.GetOnuStatistics(request, None)


def test_without_the_data_plane_port_statistics_are_bbsims(lab, onu):
    """Without the data plane the PON and NNI statistics are BBSim's split of the model's packet count."""
    traffic(lab, onu)
    servicer = OpenoltServicer(lab.olt, IndicationHub(lab.olt))
    pon = lab.olt.pon(PON)
    assert servicer.GetPonPortStatistics(openolt_pb2.Interface(intf_id=PON), None) == port_statistics(
        pon.port_no, pon.packet_count, int(lab.clock.seconds()))


def test_collect_statistics_sends_the_counted_ports_stats_now(lab, onu):
    """CollectStatistics (the OpenOLT agent's stats_collection): with the data plane, a port_stats indication for
    the NNI and each PON it counts at once, the subscriber's PON with its real frames; without it, nothing is sent
    (as BBSim)."""
    up, _, _ = traffic(lab, onu)
    sent = []

    class Queue:
        def put(self, indication):
            sent.append(indication)
            return True
    plain, counted = IndicationHub(lab.olt), IndicationHub(lab.olt)
    counted.count_ports(lab.dp)
    plain.current = counted.current = Queue()
    assert OpenoltServicer(lab.olt, plain).CollectStatistics(openolt_pb2.Empty(), None) == openolt_pb2.Empty()
    assert sent == []
    OpenoltServicer(lab.olt, counted, traffic=lab.dp).CollectStatistics(openolt_pb2.Empty(), None)
    ports = {i.port_stats.intf_id: i.port_stats for i in sent}
    # PON 0 has no bound UNI: the data plane does not count it (its periodic indications stay BBSim's)
    assert set(ports) == {lab.olt.nnis[0].port_no, lab.olt.pon(PON).port_no}
    pon = ports[lab.olt.pon(PON).port_no]
    assert (pon.rx_packets, pon.rx_bytes, pon.timestamp) == (3, sum(map(len, up)), int(lab.clock.seconds()))
