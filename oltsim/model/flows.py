"""Flows and their store. A flow is validated by the OLT before it is stored here.

Flows are keyed by (access interface, flow id, flow type), so that re-adding an id on
the same PON replaces it (BBR does this) while equal ids on different PONs do not
collide. The adapter's original message rides along as an opaque `payload` which the
model never inspects (the API renders it).
"""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(slots=True)
class Flow:
    """The parts of an OpenOLT flow that the simulator acts on, plus the opaque original."""
    flow_id: int
    flow_type: str
    access_intf_id: int
    onu_id: int
    uni_id: int
    port_no: int
    alloc_id: int
    gemport_id: int
    network_intf_id: int = 0
    eth_type: int = 0
    o_vid: int = 0
    i_vid: int = 0
    o_pbits: int = 0
    src_port: int = 0
    dst_port: int = 0
    replicate_flow: bool = False
    pbit_to_gemport: dict = field(default_factory=dict)
    aes_gemports: tuple = ()  # the GEM ports named by gemport_to_aes (only validated)
    payload: object = None
    serial: str = ""

    @property
    def key(self) -> tuple[int, int, str]:
        return (self.access_intf_id, self.flow_id, self.flow_type)

    @property
    def gem_ports(self) -> list[int]:
        """The GEM ports the flow uses: the pbit map's when replicated, else its own."""
        if self.replicate_flow:
            return sorted(set(self.pbit_to_gemport.values()))
        return [self.gemport_id]

    @property
    def is_onu_flow(self) -> bool:
        """False for NNI/OLT flows (access interface -1) and multicast flows, which are only stored."""
        return self.access_intf_id >= 0 and self.flow_type != "multicast"


class FlowStore:
    """All stored flows of the OLT, in insertion order, each listed once."""

    __slots__ = ("_flows", "_on_change", "_gems", "_allocs")

    def __init__(self, on_change):
        self._flows: dict[tuple[int, int, str], Flow] = {}
        self._on_change = on_change
        # (pon, gem) / (pon, alloc) -> {flow key: flow} for ONU flows, so that the
        # cross-ONU duplicate check on FlowAdd does not scan every flow.
        self._gems: dict[tuple[int, int], dict] = {}
        self._allocs: dict[tuple[int, int], dict] = {}

    def __len__(self) -> int:
        return len(self._flows)

    def __contains__(self, key) -> bool:
        """Whether a flow with `key` (PON, flow id, flow type) is stored."""
        return key in self._flows

    def all(self) -> list[Flow]:
        return list(self._flows.values())

    def for_onu(self, onu) -> list[Flow]:
        return [self._flows[k] for k in sorted(onu.flow_keys, key=_order) if k in self._flows]

    def store(self, flow: Flow, onu=None) -> None:
        old = self._flows.pop(flow.key, None)  # a replaced flow moves to the end, like a new one
        if old is not None:
            self._unindex(old)
        self._flows[flow.key] = flow
        self._index(flow)
        if onu is not None:
            onu.flow_keys.add(flow.key)
        self._on_change()

    def _index(self, flow: Flow) -> None:
        if flow.is_onu_flow:
            for gem in flow.gem_ports:
                self._gems.setdefault((flow.access_intf_id, gem), {})[flow.key] = flow
            self._allocs.setdefault((flow.access_intf_id, flow.alloc_id), {})[flow.key] = flow

    def _unindex(self, flow: Flow) -> None:
        if flow.is_onu_flow:
            for index, ids in ((self._gems, flow.gem_ports), (self._allocs, [flow.alloc_id])):
                for rid in ids:
                    users = index.get((flow.access_intf_id, rid))
                    if users is not None:
                        users.pop(flow.key, None)
                        if not users:
                            del index[(flow.access_intf_id, rid)]

    def find(self, access_intf_id: int, flow_id: int, flow_type: str) -> list[Flow]:
        """Flows matching the removal request; an empty flow_type matches every type."""
        if flow_type:
            flow = self._flows.get((access_intf_id, flow_id, flow_type))
            return [flow] if flow is not None else []
        return [f for k, f in self._flows.items() if k[0] == access_intf_id and k[1] == flow_id]

    def remove(self, flow: Flow, onu=None) -> None:
        if self._flows.pop(flow.key, None) is not None:
            self._unindex(flow)
        if onu is not None:
            onu.flow_keys.discard(flow.key)
        self._on_change()

    def remove_onu(self, onu) -> None:
        """Forget every flow of `onu` (it was disabled)."""
        if onu.flow_keys:
            for key in onu.flow_keys:
                flow = self._flows.pop(key, None)
                if flow is not None:
                    self._unindex(flow)
            onu.flow_keys.clear()
            self._on_change()

    def clear(self) -> None:
        self._flows.clear()
        self._gems.clear()
        self._allocs.clear()
        self._on_change()

    def conflict(self, flow: Flow) -> tuple[str, int, Flow] | None:
        """The first GEM port or alloc id of `flow` already used by a flow of another ONU on
        its PON, as (kind, id, that flow); None when there is none."""
        for kind, index, ids in (("GEM port", self._gems, flow.gem_ports),
                                 ("alloc id", self._allocs, [flow.alloc_id])):
            for rid in ids:
                for other in index.get((flow.access_intf_id, rid), {}).values():
                    if other.onu_id != flow.onu_id:
                        return kind, rid, other
        return None


def _order(key):
    return (key[1], key[2])
