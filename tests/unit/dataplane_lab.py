"""A lab for the data plane's unit tests: OLT id 10, 2 PONs of 16 ONUs, ATT services, the OMCI responder behind the
VLAN record, and a DataPlane in front of the protocol engine. OMCI is built as VOLTHA's ONU adapter sends it
(omci_vlan_config.go / omci_ani_config.go: entity ids, attribute values) and flows as its OLT adapter does
(openolt_flowmgr.go: classifier, action, priority), both through the model's own entry points."""
from __future__ import annotations

import random

from twisted.internet.task import Clock
from voltha_protos import openolt_pb2

from oltsim.config import load_settings
from oltsim.dataplane.front import DataPlaneFront
from oltsim.dataplane.pipeline import DataPlane
from oltsim.dataplane.pm import PmCounters
from oltsim.model import events
from oltsim.model.builder import build_olt
from oltsim.omci import codec
from oltsim.omci.responder import OmciResponder
from oltsim.omci.vlanconfig import CLASSES, EVTOCD, GEM_CTP, GEM_IW_TP, MAPPER, MBPCD, VTFD, VlanConfig
from oltsim.omci.wrappers import receive
from oltsim.openoltpb import flow_from_pb
from oltsim.packets import frames as f
from oltsim.packets.engine import ProtocolEngine
from oltsim.tap import FramePath

MBSP = 45
TP_ID = 64
MAC_BP_UNI_BASE = 0x201
MAC_BP_ANI_BASE = 0x1001
MAPPER_BASE = 0x1001
TP_RANGE = 192
TCONT_ME = 0x8001

ANY_PBITS = 0xFF
RG_MAC = bytes.fromhex("020000aa0001")
SERVER_MAC = bytes.fromhex("020000bb0001")


def rule(f_out=(15, 4096, 0), f_in=(15, 4096, 0), eth=0, remove=0, t_out=(15, 0, 0), t_in=(15, 0, 0)) -> bytes:
    """One EVTOCD table entry from its fields (priority, VID, TPID/DE) as G.988 lays them out."""
    w1 = f_out[0] << 28 | f_out[1] << 15 | f_out[2] << 12
    w2 = f_in[0] << 28 | f_in[1] << 15 | f_in[2] << 12 | eth
    w3 = remove << 30 | t_out[0] << 16 | t_out[1] << 3 | t_out[2]
    w4 = t_in[0] << 16 | t_in[1] << 3 | t_in[2]
    return b"".join(w.to_bytes(4, "big") for w in (w1, w2, w3, w4))


def push_rule(vid: int) -> bytes:
    """The ONU adapter's untagged -> single-tagged rule: push `vid` with priority 0, TPID 0x8100."""
    return rule(t_in=(0, vid, 4))


def ip_frame(dst: bytes, src: bytes, payload: bytes = b"hello", tags=(), proto: int = 17, sport: int = 5000,
             dport: int = 5001, pad: bool = True) -> bytes:
    """An IPv4/UDP frame (tags: (vid, pcp) pairs, outermost first), zero-padded to 60 octets as Ethernet carries it
    unless `pad` is False."""
    ip = f.build_ipv4_udp(bytes([10, 0, 0, 2]), bytes([10, 0, 0, 1]), sport, dport, payload)
    if proto != 17:
        ip = f.build_ipv4(bytes([10, 0, 0, 2]), bytes([10, 0, 0, 1]), proto, payload)
    return f.build_ethernet(dst, src, f.ETH_IPV4, ip, [f.VlanTag(vid, pcp) for vid, pcp in tags], pad=pad)


def tags_of(frame: bytes) -> list[tuple[int, int]]:
    """(vid, pcp) of each tag of `frame`, outermost first."""
    return [(t.vid, t.pcp) for t in f.parse_ethernet(frame).tags]


class Lab:
    """The OLT with every ONU discovered; `activate(pon, index)` brings one up as an adapter would."""

    def __init__(self, onus: int = 16, pons: int = 2):
        self.clock = Clock()
        self.settings = load_settings({"olt_id": 10, "pon": pons, "onu": onus, "uni": 4}, None)
        self.vlan = VlanConfig()
        self.pm = PmCounters(self.vlan)       # the responder's PM history MEs count the pipeline's frames
        self.responder = OmciResponder(pm=self.pm)
        self.engine = ProtocolEngine()
        # as makeService composes it: the recorder outermost, then the fault knobs, then the responder; the data
        # plane's front before the protocol engine
        self.path = FramePath(self.responder, self.engine, self.vlan, DataPlaneFront(self.engine), pm=self.pm)
        self.olt = build_olt(self.settings, self.clock, random.Random(0), omci=self.path.omci,
                             frames=self.path.frames)
        self.events = []
        self.olt.subscribe(self.events.append)
        self.path.attach(self.olt)
        self.dp = DataPlane(self.olt, self.clock, engine=self.engine, vlan_config=self.vlan)
        self.delivered = []
        self.path.front.add(self.dp, self.delivered.extend)
        self.pm.add(self.dp)
        self.olt.start()
        self.olt.enable_indication()
        self.clock.advance(60)
        self.tid = 0
        self.flow_id = 100

    # ---- devices ----------------------------------------------------------------------------------------------

    def activate(self, pon: int, index: int):
        """ONU `index` (1-based) of PON `pon`, activated with ONU id = index, every UNI unlocked."""
        onu = self.olt.pon(pon).onus[index - 1]
        self.olt.activate_onu(pon, onu.serial, index)
        self.omci(onu, codec.MIB_RESET | codec.AR, codec.ONU_DATA, 0)
        for uni in onu.eth_unis:
            uni.enable()
        return onu

    # ---- OMCI as VOLTHA's ONU adapter sends it ---------------------------------------------------------------

    def omci(self, onu, message_type: int, me_class: int, me_id: int, contents: bytes = b"") -> bytes:
        """Send one baseline request to the ONU's OMCI handler (as OmciMsgOut does) and return the answer's
        contents."""
        self.tid += 1
        before = len(self.events)
        receive(onu.hub.omci, onu, codec.encode(self.tid, message_type | codec.AR, me_class, me_id, contents))
        answers = [e for e in self.events[before:] if isinstance(e, events.OmciIndication)]
        return codec.parse(answers[-1].pkt).contents if answers else b""

    def create(self, onu, me_class: int, me_id: int, contents: bytes) -> int:
        return self.omci(onu, codec.CREATE, me_class, me_id, contents)[0]

    def set(self, onu, me_class: int, me_id: int, attributes: dict) -> int:
        me = CLASSES[me_class]
        mask = codec.mask_of(attributes)
        data = b"".join(codec.octets(attributes[i], me.size(i)) for i in sorted(attributes))
        return self.omci(onu, codec.SET, me_class, me_id, mask.to_bytes(2, "big") + data)[0]

    def ids(self, uni_id: int) -> dict:
        mac_bp = uni_id + 1
        return {"bridge": MAC_BP_UNI_BASE + mac_bp, "uni_port": MAC_BP_UNI_BASE + mac_bp,
                "ani_port": MAC_BP_ANI_BASE + mac_bp * TP_RANGE + TP_ID - 64,
                "mapper": MAPPER_BASE + mac_bp * TP_RANGE + TP_ID - 64, "evtocd": MAC_BP_UNI_BASE + mac_bp,
                "mac_bp": mac_bp}

    def configure_uni(self, onu, uni_id: int, gem: int, set_vid: int):
        """MIB download and VLAN config of one UNI as the ONU adapter does it for a tech profile with one GEM port
        and a flow setting `set_vid` on untagged frames."""
        uni = onu.unis[uni_id]
        i = self.ids(uni_id)
        u16 = lambda v: v.to_bytes(2, "big")  # noqa: E731
        assert self.create(onu, MBSP, i["bridge"], bytes(8)) == 0
        assert self.create(onu, MBPCD, i["uni_port"], u16(i["bridge"]) + bytes([i["mac_bp"], 1])
                           + u16(uni.me_id) + bytes(7)) == 0
        assert self.create(onu, MAPPER, i["mapper"], u16(0xFFFF) + u16(0xFFFF) * 8 + bytes(3)) == 0
        assert self.create(onu, MBPCD, i["ani_port"], u16(i["bridge"]) + bytes([0xFF, 3]) + u16(i["mapper"])
                           + bytes(7)) == 0
        assert self.create(onu, GEM_CTP, gem, u16(gem) + u16(TCONT_ME) + bytes([3]) + bytes(9)) == 0
        assert self.create(onu, GEM_IW_TP, gem, u16(gem) + bytes([5]) + u16(i["mapper"]) + u16(0) + u16(1)) == 0
        assert self.set(onu, MAPPER, i["mapper"], {p: gem for p in range(2, 10)}) == 0
        assert self.create(onu, VTFD, i["ani_port"], u16(set_vid) + bytes(22) + bytes([0x10, 1])) == 0
        assert self.create(onu, EVTOCD, i["evtocd"], bytes([2]) + u16(uni.me_id)) == 0
        assert self.set(onu, EVTOCD, i["evtocd"], {3: 0x8100, 4: 0x8100, 5: 0}) == 0
        assert self.set(onu, EVTOCD, i["evtocd"], {6: push_rule(set_vid)}) == 0

    # ---- flows as VOLTHA's OLT adapter sends them -------------------------------------------------------------

    def flow(self, onu, uni_id: int, flow_type: str, classifier: dict, action: dict, *, gem: int, priority: int,
             flow_id: int | None = None, alloc: int = 1024) -> int:
        if flow_id is None:
            self.flow_id += 1
            flow_id = self.flow_id
        cmd = {k: v for k, v in action.items() if isinstance(v, bool)}
        values = {k: v for k, v in action.items() if not isinstance(v, bool)}
        msg = openolt_pb2.Flow(
            access_intf_id=onu.pon.id, onu_id=onu.onu_id, uni_id=uni_id, flow_id=flow_id, flow_type=flow_type,
            network_intf_id=0, gemport_id=gem, alloc_id=alloc, priority=priority, cookie=flow_id,
            port_no=(onu.pon.id << 14) | (onu.onu_id << 4) | uni_id,
            classifier=openolt_pb2.Classifier(**classifier),
            action=openolt_pb2.Action(cmd=openolt_pb2.ActionCmd(**cmd), **values))
        self.olt.flow_add(flow_from_pb(msg))
        return flow_id

    def att_flows(self, onu, uni_id: int, gem: int, c_tag: int, s_tag: int, alloc: int = 1024) -> dict:
        """The ATT workflow's flows of one UNI: EAPOL and DHCP traps, HSIA upstream (push S) and downstream
        (pop S)."""
        single = dict(pkt_tag_type="single_tag", o_pbits=ANY_PBITS)
        return {
            "eapol": self.flow(onu, uni_id, "upstream", dict(eth_type=0x888E, o_vid=c_tag, **single),
                               dict(trap_to_host=True), gem=gem, priority=10000, alloc=alloc),
            "dhcp": self.flow(onu, uni_id, "upstream", dict(eth_type=0x0800, ip_proto=17, src_port=68, dst_port=67,
                                                            o_vid=c_tag, **single),
                              dict(trap_to_host=True), gem=gem, priority=10000, alloc=alloc),
            "hsia_up": self.flow(onu, uni_id, "upstream", dict(o_vid=c_tag, **single),
                                 dict(add_outer_tag=True, o_vid=s_tag), gem=gem, priority=1000, alloc=alloc),
            "hsia_down": self.flow(onu, uni_id, "downstream",
                                   dict(o_vid=s_tag, i_vid=c_tag, pkt_tag_type="double_tag", o_pbits=ANY_PBITS),
                                   dict(remove_outer_tag=True), gem=gem, priority=1000, alloc=alloc),
        }

    def subscriber(self, pon: int, index: int, uni_id: int, gem: int):
        """An ONU activated, one UNI bound, then configured over OMCI and given the ATT flows: (onu, service)."""
        onu = self.activate(pon, index)
        service = onu.unis[uni_id].services[0]
        self.dp.bind_uni(onu.serial, uni_id)        # at start-up, before the adapter configures anything
        self.configure_uni(onu, uni_id, gem, service.c_tag)
        self.att_flows(onu, uni_id, gem, service.c_tag, service.s_tag, alloc=gem)
        return onu, service

    def packet_indications(self) -> list:
        return [e for e in self.events if isinstance(e, events.PacketIndication)]
