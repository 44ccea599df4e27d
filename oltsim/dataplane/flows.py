"""The OLT's part of the data plane: the flows the adapter installed, compiled for matching frames.

Each stored flow (oltsim.model.flows.Flow) keeps the adapter's openolt Flow message as its payload; `CompiledFlow`
reads the classifier and action from it once. Matching follows what an OpenOLT device does with them:

- classifier: `pkt_tag_type` (untagged / single_tag / double_tag; empty = any), `o_vid` / `i_vid` (0 = any) against
  the outer / inner tag, `o_tpid` / `i_tpid` (0 = any; the pipeline takes frames from the NNI only with 0x8100 or a
  TPID a downstream or multicast flow names), `o_pbits` / `i_pbits` (0..7 match, anything above = any; `i_pbits`
  0 = any, as adapters leave it unset), `eth_type`, `ip_proto`, `src_port` / `dst_port` (0 = any); an upstream flow also matches only
  the GEM ports it names (when the ONU's GEM port is known);
- multicast flows (flow_type multicast) also match `dst_ip` (0 = any group); the MAC and other IP address fields
  of a classifier are not matched (VOLTHA's unicast flows leave them empty);
- action: `remove_outer_tag` pops, `add_outer_tag` pushes `o_vid` (priority `o_pbits` when `remark_outer_pbits`,
  else the priority of the tag below; TPID `o_tpid` or 0x8100), `translate_outer_tag` / `translate_inner_tag` set the
  VID of the outer / inner tag, `remark_inner_pbits` its priority, `add_inner_tag` / `remove_inner_tag` likewise;
  `trap_to_host` sends the frame to the adapter; no command forwards the frame as it is.

Among the flows that match, the highest `priority` wins (then the lowest flow id). A flow stored without payload (a
test's hand-made Flow) matches on its own fields and forwards unchanged.
"""
from __future__ import annotations

from voltha_protos import openolt_pb2

from oltsim.dataplane.vlan import TPID_8021Q, tag

ANY_PBITS = 0xFF
UNTAGGED, SINGLE, DOUBLE = "untagged", "single_tag", "double_tag"
_TAG_COUNT = {UNTAGGED: 0, SINGLE: 1, DOUBLE: 2}


class CompiledFlow:
    """One flow, ready to match frames."""

    __slots__ = ("key", "flow_id", "flow_type", "pon", "onu_id", "uni_id", "gems", "gemport_id", "network_intf_id",
                 "priority", "tag_count", "o_vid", "i_vid", "o_pbits", "i_pbits", "eth_type", "ip_proto",
                 "src_port", "dst_port", "trap", "pop", "push", "push_pbits", "push_tpid", "translate_outer",
                 "translate_inner", "inner_pbits", "add_inner", "remove_inner", "label", "counter", "dst_ip",
                 "o_tpid", "i_tpid", "alloc_id")

    def __init__(self, flow):
        self.key = flow.key
        self.flow_id = flow.flow_id
        self.flow_type = flow.flow_type
        self.pon = flow.access_intf_id
        self.onu_id = flow.onu_id
        self.uni_id = flow.uni_id
        self.gems = frozenset(flow.gem_ports)
        self.gemport_id = flow.gemport_id
        self.network_intf_id = flow.network_intf_id
        self.alloc_id = flow.alloc_id          # the T-CONT (upstream) / downstream scheduler it shapes by
        self.label = f"{flow.access_intf_id}/{flow.flow_id}/{flow.flow_type}"
        #: [frames, bytes] forwarded or trapped by this flow (the counters' "flows" part)
        self.counter = [0, 0]
        msg = None
        if flow.payload:
            msg = openolt_pb2.Flow()
            msg.MergeFromString(flow.payload)
        self.dst_ip = b""
        self.o_tpid = self.i_tpid = 0
        if msg is None:
            self.priority = 0
            self.tag_count = None
            self.o_vid, self.i_vid, self.o_pbits, self.i_pbits = flow.o_vid, flow.i_vid, flow.o_pbits, ANY_PBITS
            self.eth_type, self.ip_proto = flow.eth_type, 0
            self.src_port, self.dst_port = flow.src_port, flow.dst_port
            self.trap = self.pop = self.translate_outer = self.translate_inner = False
            self.add_inner = self.remove_inner = False
            self.push = self.inner_pbits = None
            self.push_pbits, self.push_tpid = None, TPID_8021Q
            return
        c, a = msg.classifier, msg.action
        cmd = a.cmd
        self.priority = msg.priority
        self.tag_count = _TAG_COUNT.get(c.pkt_tag_type)
        self.o_vid, self.i_vid = c.o_vid, c.i_vid
        self.o_tpid, self.i_tpid = c.o_tpid, c.i_tpid
        self.o_pbits = c.o_pbits
        self.i_pbits = c.i_pbits if c.i_pbits else ANY_PBITS
        self.eth_type, self.ip_proto = c.eth_type, c.ip_proto
        self.src_port, self.dst_port = c.src_port, c.dst_port
        self.dst_ip = c.dst_ip.to_bytes(4, "big") if c.dst_ip else b""
        self.trap = cmd.trap_to_host
        self.pop = cmd.remove_outer_tag
        self.push = a.o_vid if cmd.add_outer_tag else None
        self.push_pbits = a.o_pbits if cmd.remark_outer_pbits else None
        self.push_tpid = a.o_tpid or TPID_8021Q
        self.translate_outer = a.o_vid if cmd.translate_outer_tag else False
        self.translate_inner = a.i_vid if cmd.translate_inner_tag else False
        self.inner_pbits = a.i_pbits if cmd.remark_inner_pbits else None
        self.add_inner = (a.i_vid, a.i_pbits, a.i_tpid or TPID_8021Q) if cmd.add_inner_tag else False
        self.remove_inner = cmd.remove_inner_tag

    @property
    def uses_ports(self) -> bool:
        return bool(self.src_port or self.dst_port)

    def matches(self, tags, ethertype: int, proto: int, sport: int, dport: int, gem) -> bool:
        """Whether the classifier takes a frame with `tags` (outermost first) ..., arriving on GEM port `gem`
        (None: not known, not checked)."""
        if self.tag_count is not None and len(tags) != self.tag_count:
            return False
        if self.o_vid:
            if not tags or (tags[0][1] & 0xFFF) != self.o_vid:
                return False
        if self.o_pbits <= 7 and (not tags or (tags[0][1] >> 13) != self.o_pbits):
            return False
        if self.o_tpid and (not tags or tags[0][0] != self.o_tpid):
            return False
        if self.i_tpid and (len(tags) < 2 or tags[1][0] != self.i_tpid):
            return False
        if self.i_vid:
            if len(tags) < 2 or (tags[1][1] & 0xFFF) != self.i_vid:
                return False
        if self.i_pbits <= 7 and (len(tags) < 2 or (tags[1][1] >> 13) != self.i_pbits):
            return False
        if self.eth_type and ethertype != self.eth_type:
            return False
        if self.ip_proto and proto != self.ip_proto:
            return False
        if self.src_port and sport != self.src_port:
            return False
        if self.dst_port and dport != self.dst_port:
            return False
        if gem is not None and self.gems and gem not in self.gems:
            return False
        return True

    def apply(self, tags):
        """The tags after the action (trap flows leave them as they are)."""
        out = list(tags)
        inner = 1 if len(out) >= 2 else None
        if self.pop and out:
            out.pop(0)
            inner = 0 if out else None
        if self.push is not None:
            pcp = self.push_pbits if self.push_pbits is not None else (out[0][1] >> 13 if out else 0)
            out.insert(0, tag(self.push, pcp, self.push_tpid))
            inner = 1 if len(out) >= 2 else None
        if self.translate_outer is not False and out:
            tpid, tci = out[0]
            out[0] = (tpid, (tci & 0xF000) | (self.translate_outer & 0xFFF))
        if self.remove_inner and inner is not None:
            out.pop(inner)
            inner = None
        if self.add_inner is not False:
            vid, pcp, tpid = self.add_inner
            position = 1 if out else 0
            out.insert(position, tag(vid, pcp, tpid))
            inner = position
        if inner is not None and inner < len(out):
            if self.translate_inner is not False:
                tpid, tci = out[inner]
                out[inner] = (tpid, (tci & 0xF000) | (self.translate_inner & 0xFFF))
            if self.inner_pbits is not None:
                tpid, tci = out[inner]
                out[inner] = (tpid, (tci & 0x1FFF) | ((self.inner_pbits & 7) << 13))
        return tuple(out)


def _order(flow: CompiledFlow):
    return (-flow.priority, flow.flow_id)


class FlowTable:
    """The OLT's flows compiled: upstream ones per (PON, ONU id, UNI id), downstream and NNI ones in one list.

    Rebuilt from `olt.flows` by `refresh` when they changed; a flow object already compiled is reused (its
    counters go on)."""

    def __init__(self):
        self.upstream: dict[tuple[int, int, int], list[CompiledFlow]] = {}
        self.downstream: list[CompiledFlow] = []
        #: multicast flows (flow_type multicast): group traffic from the NNI, replicated to the UNIs that joined
        self.multicast: list[CompiledFlow] = []
        self.uses_ports = False
        #: the TPIDs frames from the NNI may carry: 0x8100 and those the downstream and multicast flows classify
        self.nni_tpids = frozenset((TPID_8021Q,))
        self._compiled: dict[tuple, tuple[object, CompiledFlow]] = {}

    def refresh(self, stored) -> None:
        """Compile `stored` (the OLT's Flow objects)."""
        compiled, up, down, multicast = {}, {}, [], []
        uses_ports = False
        for flow in stored:
            old = self._compiled.get(flow.key)
            cf = old[1] if old is not None and old[0] is flow else CompiledFlow(flow)
            compiled[flow.key] = (flow, cf)
            if flow.flow_type == "multicast":
                multicast.append(cf)
                continue
            uses_ports = uses_ports or cf.uses_ports
            if flow.flow_type in ("upstream", "bidirectional") and flow.access_intf_id >= 0:
                up.setdefault((cf.pon, cf.onu_id, cf.uni_id), []).append(cf)
            if flow.flow_type in ("downstream", "bidirectional") or flow.access_intf_id < 0:
                down.append(cf)
        tpids = {TPID_8021Q}
        for cf in (*down, *multicast):
            tpids.update(t for t in (cf.o_tpid, cf.i_tpid) if t)
        self.nni_tpids = frozenset(tpids)
        for flows in up.values():
            flows.sort(key=_order)
        down.sort(key=_order)
        multicast.sort(key=_order)
        self._compiled, self.upstream, self.downstream, self.uses_ports = compiled, up, down, uses_ports
        self.multicast = multicast

    def all(self) -> list[CompiledFlow]:
        return [cf for _, cf in self._compiled.values()]

    def pairs(self) -> list[tuple[object, CompiledFlow]]:
        """(the OLT's Flow object, its compiled flow) for every flow."""
        return list(self._compiled.values())

    def first_upstream(self, pon: int, onu_id: int, uni_id: int, tags, ethertype, proto, sport, dport, gem):
        """The upstream flow of the UNI a frame matches, or None."""
        for cf in self.upstream.get((pon, onu_id, uni_id), ()):
            if cf.matches(tags, ethertype, proto, sport, dport, gem):
                return cf
        return None

    def first_multicast(self, tags, ethertype, proto, group: bytes):
        """The multicast flow a group frame (IPv4 destination `group`) from the NNI matches, or None."""
        for cf in self.multicast:
            if (not cf.dst_ip or cf.dst_ip == group) and cf.matches(tags, ethertype, proto, 0, 0, None):
                return cf
        return None

    def first_downstream(self, tags, ethertype, proto, sport, dport):
        """The downstream or NNI flow a frame from the NNI matches, or None."""
        for cf in self.downstream:
            if cf.matches(tags, ethertype, proto, sport, dport, None):
                return cf
        return None
