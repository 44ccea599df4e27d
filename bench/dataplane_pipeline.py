"""What the data plane's pure pipeline (oltsim.dataplane.pipeline.DataPlane) costs per frame, in memory.

OLT id 10, 16 ONUs with 4 UNIs (ATT services), UNI 2 of ONUs 1..8 bound, each configured as VOLTHA's ONU adapter
does it over OMCI (through the VLAN recorder, the fault knobs and the responder) and given the ATT flows (EAPOL and
DHCP traps, HSIA up: push the S-tag, down: pop it) through the OLT model's FlowAdd path. Frames of 1514 octets
(a full TCP segment) go round the 8 UNIs: upstream untagged from the RG (out of both NNIs), downstream
double-tagged from the NNI, downstream untagged from the untagged NNI (matched by learned MAC).

Target: at most 5 us per frame each way, an eighth of the 40 us a frame may take end to end for the 300 Mbit/s of
one iperf3 stream (bench/dataplane.py measures that, through real TAP interfaces). Exits 0 whatever it measures.

    python bench/dataplane_pipeline.py [--frames 200000] [--runs 5]
"""
from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from twisted.internet.task import Clock  # noqa: E402
from voltha_protos import openolt_pb2  # noqa: E402

from oltsim.config import load_settings  # noqa: E402
from oltsim.dataplane.front import DataPlaneFront  # noqa: E402
from oltsim.dataplane.pipeline import DataPlane, ToNni, ToUni  # noqa: E402
from oltsim.model.builder import build_olt  # noqa: E402
from oltsim.omci import codec  # noqa: E402
from oltsim.omci.responder import OmciResponder  # noqa: E402
from oltsim.omci.vlanconfig import CLASSES, EVTOCD, GEM_CTP, GEM_IW_TP, MAPPER, MBPCD, VTFD, VlanConfig  # noqa
from oltsim.omci.wrappers import receive  # noqa: E402
from oltsim.openoltpb import flow_from_pb  # noqa: E402
from oltsim.packets import frames as f  # noqa: E402
from oltsim.packets.engine import ProtocolEngine  # noqa: E402
from oltsim.tap import FramePath  # noqa: E402

TARGET_US = 5.0
UNI = 2
SUBSCRIBERS = 8
SERVER_MAC = bytes.fromhex("020000bb0001")


def u16(value: int) -> bytes:
    return value.to_bytes(2, "big")


class Rig:
    def __init__(self):
        self.clock = Clock()
        settings = load_settings({"olt_id": 10, "pon": 1, "onu": 16, "uni": 4}, None)
        # composed as makeService composes it (oltsim.tap.FramePath)
        self.vlan = VlanConfig()
        self.engine = ProtocolEngine()
        path = FramePath(OmciResponder(), self.engine, self.vlan, DataPlaneFront(self.engine))
        self.olt = build_olt(settings, self.clock, random.Random(0), omci=path.omci, frames=path.frames)
        path.attach(self.olt)
        self.dp = DataPlane(self.olt, self.clock, engine=self.engine, vlan_config=self.vlan)
        path.front.add(self.dp, lambda outputs: None)
        self.olt.start()
        self.olt.enable_indication()
        self.clock.advance(60)
        self.tid = 0
        self.subscribers = []
        for index in range(1, SUBSCRIBERS + 1):
            self.subscriber(index)

    def omci(self, onu, action, me_class, me_id, contents=b""):
        self.tid += 1
        receive(onu.hub.omci, onu, codec.encode(self.tid, action | codec.AR, me_class, me_id, contents))

    def set(self, onu, me_class, me_id, values: dict):
        me = CLASSES[me_class]
        data = b"".join(codec.octets(values[i], me.size(i)) for i in sorted(values))
        self.omci(onu, codec.SET, me_class, me_id, u16(codec.mask_of(values)) + data)

    def subscriber(self, index: int):
        onu = self.olt.pon(0).onus[index - 1]
        self.olt.activate_onu(0, onu.serial, index)
        for uni in onu.eth_unis:
            uni.enable()
        service = onu.unis[UNI].services[0]
        self.dp.bind_uni(onu.serial, UNI)
        gem, mac_bp = 1024 + index * 8, UNI + 1
        bridge, ani, mapper = 0x201 + mac_bp, 0x1001 + mac_bp * 192, 0x1001 + mac_bp * 192
        pptp = onu.unis[UNI].me_id
        self.omci(onu, codec.MIB_RESET, codec.ONU_DATA, 0)
        self.omci(onu, codec.CREATE, 45, bridge, bytes(8))
        self.omci(onu, codec.CREATE, MBPCD, bridge, u16(bridge) + bytes([mac_bp, 1]) + u16(pptp) + bytes(7))
        self.omci(onu, codec.CREATE, MAPPER, mapper, u16(0xFFFF) * 9 + bytes(3))
        self.omci(onu, codec.CREATE, MBPCD, ani, u16(bridge) + bytes([0xFF, 3]) + u16(mapper) + bytes(7))
        self.omci(onu, codec.CREATE, GEM_CTP, gem, u16(gem) + u16(0x8001) + b"\x03" + bytes(9))
        self.omci(onu, codec.CREATE, GEM_IW_TP, gem, u16(gem) + b"\x05" + u16(mapper) + u16(0) + u16(1))
        self.set(onu, MAPPER, mapper, {p: gem for p in range(2, 10)})
        self.omci(onu, codec.CREATE, VTFD, ani, u16(service.c_tag) + bytes(22) + bytes([0x10, 1]))
        self.omci(onu, codec.CREATE, EVTOCD, bridge, b"\x02" + u16(pptp))
        self.set(onu, EVTOCD, bridge, {3: 0x8100, 4: 0x8100, 5: 0})
        rule = ((15 << 28 | 4096 << 15).to_bytes(4, "big") + (15 << 28 | 4096 << 15).to_bytes(4, "big")
                + (15 << 16).to_bytes(4, "big") + (service.c_tag << 3 | 4).to_bytes(4, "big"))
        self.set(onu, EVTOCD, bridge, {6: rule})
        single = dict(pkt_tag_type="single_tag", o_pbits=0xFF)
        for flow_id, flow_type, classifier, action, priority in (
                (index * 10, "upstream", dict(eth_type=0x888E, o_vid=service.c_tag, **single),
                 dict(cmd=openolt_pb2.ActionCmd(trap_to_host=True)), 10000),
                (index * 10 + 1, "upstream", dict(eth_type=0x0800, ip_proto=17, src_port=68, dst_port=67,
                                                  o_vid=service.c_tag, **single),
                 dict(cmd=openolt_pb2.ActionCmd(trap_to_host=True)), 10000),
                (index * 10 + 2, "upstream", dict(o_vid=service.c_tag, **single),
                 dict(cmd=openolt_pb2.ActionCmd(add_outer_tag=True), o_vid=service.s_tag), 1000),
                (index * 10 + 3, "downstream", dict(o_vid=service.s_tag, i_vid=service.c_tag,
                                                    pkt_tag_type="double_tag", o_pbits=0xFF),
                 dict(cmd=openolt_pb2.ActionCmd(remove_outer_tag=True)), 1000)):
            self.olt.flow_add(flow_from_pb(openolt_pb2.Flow(
                access_intf_id=0, onu_id=index, uni_id=UNI, flow_id=flow_id, flow_type=flow_type, network_intf_id=0,
                gemport_id=gem, alloc_id=gem, priority=priority, port_no=(index << 4) | UNI,
                classifier=openolt_pb2.Classifier(**classifier), action=openolt_pb2.Action(**action))))
        rg = bytes.fromhex("0200000a%04x" % index)
        segment = f.build_ipv4(bytes([10, 0, 0, 10 + index]), bytes([10, 0, 0, 1]), 6, bytes(1480))
        up = f.build_ethernet(SERVER_MAC, rg, f.ETH_IPV4, segment)
        down = f.build_ethernet(rg, SERVER_MAC, f.ETH_IPV4, segment,
                                [f.VlanTag(service.s_tag), f.VlanTag(service.c_tag)])
        plain = f.build_ethernet(rg, SERVER_MAC, f.ETH_IPV4, segment)
        self.subscribers.append((onu.serial, up, down, plain))


def measure(label: str, count: int, runs: int, step) -> float:
    results = []
    for _ in range(runs):
        start = time.perf_counter()
        step(count)
        results.append((time.perf_counter() - start) / count * 1e6)
    us = statistics.median(results)
    verdict = "PASS" if us <= TARGET_US else "FAIL"
    print(f"{label:<34} {us:6.2f} us/frame  {1e6 / us:>10,.0f} frames/s  "
          f"{1514 * 8 / us:>7,.0f} Mbit/s of 1514-octet frames  (target <= {TARGET_US} us: {verdict})")
    return us


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=200_000)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    rig = Rig()
    dp, subs = rig.dp, rig.subscribers
    # A first frame each way compiles the decisions (and teaches the MACs); the timed frames find them cached.
    for serial, up, down, plain in subs:
        assert type(dp.from_uni(serial, UNI, up)[0]) is ToNni
        assert type(dp.from_nni(down)[0]) is ToUni
        assert type(dp.from_nni_untagged(plain)[0]) is ToUni
    n = len(subs)

    def upstream(count):
        from_uni = dp.from_uni
        for i in range(count):
            serial, frame, _, _ = subs[i % n]
            from_uni(serial, UNI, frame)

    def downstream(count):
        from_nni = dp.from_nni
        for i in range(count):
            from_nni(subs[i % n][2])

    def untagged(count):
        from_nni_untagged = dp.from_nni_untagged
        for i in range(count):
            from_nni_untagged(subs[i % n][3])

    print(f"oltsim data plane pipeline, in memory: OLT 10, 16 ONUs, {n} bound UNIs, {args.frames:,} frames x "
          f"{args.runs} runs (median)")
    measure("upstream UNI -> NNI (both NNIs)", args.frames, args.runs, upstream)
    measure("downstream tagged NNI -> UNI", args.frames, args.runs, downstream)
    measure("downstream untagged NNI -> UNI", args.frames, args.runs, untagged)
    counters = dp.counters()
    drops = sum(sum(c["dropped"].values()) for c in (*counters["unis"].values(), counters["nni"]))
    print(f"counted: NNI rx {counters['nni']['rx_frames']:,}, tx {counters['nni']['tx_frames']:,}; drops {drops}")


if __name__ == "__main__":
    main()
