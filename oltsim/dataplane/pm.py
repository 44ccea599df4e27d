"""The data plane's counters as the ONU's OMCI performance monitoring sees them (docs/dataplane.md, "PM counters").

`PmCounters(vlan_config)` is the PM source the OMCI responder (oltsim.omci.responder) takes in its constructor; the
pipeline (oltsim.dataplane.pipeline.DataPlane) exists only once the OLT is built, so it is added later with
`add(pipeline)`, as `oltsim.dataplane.front.DataPlaneFront.add` registers it. Until then, and for every UNI the
pipeline has not bound (or GEM port not behind a bound UNI), each method answers None: the responder then answers as
BBSim does.

Which UNI or GEM port a PM ME counts follows its ME id, as G.988 and VOLTHA's ONU adapter name it:

- Ethernet frame PM history data upstream / downstream: the MAC bridge port configuration data of the same id, a
  UNI-side one (TP type 1) whose TP pointer is the UNI's PPTP; an id the adapter recorded no bridge port for is read
  as voltha-openonu-adapter-go numbers it (its MacBridgePortAniBaseEID 0x1001 + the PPTP's ME id);
- Ethernet PM history data: the PPTP Ethernet UNI of the same id;
- GEM port network CTP PM history data: the GEM port network CTP of the same id (its Port-ID attribute; without a
  recorded CTP, the ME id), when the ONU's OMCI puts it behind a bound UNI (oltsim.dataplane.onupath);
- FEC PM history data (on the ANI-G): `carries(onu)`, whether any UNI of the ONU is bound;
- Ethernet frame extended PM: `ethernet_uni(onu, pptp, upstream)` or `ethernet_frames` for the parent its control
  block names.

Counts are totals since the UNI was bound, so every counter only grows; the responder turns them into G.988's
15-minute intervals (oltsim.omci.pmhistory). Pure: it reads the pipeline's public counters (`uni_counters`,
`frame_kinds`, `gem_statistics`, `bound()`) and the OMCI record, and keeps nothing of its own.
"""
from __future__ import annotations

from dataclasses import dataclass

from oltsim.dataplane.onupath import TP_PPTP_ETH, compile_onu_part
from oltsim.dataplane.pipeline import KIND_BROADCAST, KIND_LONGER, KIND_MULTICAST, KIND_SIZES
from oltsim.omci.vlanconfig import GEM_CTP, MBPCD

__all__ = ["FrameCounts", "GemCounts", "PmCounters", "OPENONU_BRIDGE_PORT_BASE"]

#: voltha-openonu-adapter-go's MacBridgePortAniBaseEID: it creates a UNI's Ethernet frame PM MEs with this + the
#: UNI's PPTP ME id
OPENONU_BRIDGE_PORT_BASE = 0x1001


@dataclass(frozen=True, slots=True)
class FrameCounts:
    """One direction of a UNI: frames (`packets`) and their `octets`, as the RG sent them (upstream) or received
    them (downstream); `drops`, frames the data plane dropped on that UNI; `oversize`, those dropped as longer than
    the NNI carries; `broadcast` and `multicast`, the frames to those addresses; `sizes`, the frames in G.988's
    buckets 64, 65-127, 128-255, 256-511, 512-1023 and 1024-1518 octets (lengths with the FCS, a shorter frame
    counted as the 64 it is padded to on the wire)."""
    packets: int
    octets: int
    drops: int = 0
    oversize: int = 0
    broadcast: int = 0
    multicast: int = 0
    sizes: tuple[int, ...] = (0,) * 6


@dataclass(frozen=True, slots=True)
class GemCounts:
    """One GEM port as the ONU sees it: `tx_*` upstream (sent to the OLT), `rx_*` downstream, in frames and
    payload bytes (the Ethernet frames its flows carried)."""
    tx_frames: int
    tx_bytes: int
    rx_frames: int
    rx_bytes: int


class PmCounters:
    """The PM source of the OMCI responder over a data plane: counts of the UNIs and GEM ports it carries, read from
    the pipeline `add`ed to it and the OMCI `vlan_config` (oltsim.omci.vlanconfig.VlanConfig) recorded in front of
    the responder."""

    def __init__(self, vlan_config) -> None:
        self.vlan_config = vlan_config
        self.pipeline = None

    def add(self, pipeline) -> None:
        """Register the data plane's pipeline (oltsim.dataplane.pipeline.DataPlane) whose counters are read."""
        self.pipeline = pipeline

    # ---- what the responder asks ---------------------------------------------------------------------------------

    def ethernet_frames(self, onu, me_id: int, upstream: bool) -> FrameCounts | None:
        """The Ethernet frame PM (history data upstream or downstream) of the bridge port `me_id` of `onu`: the
        counts of its bound UNI, None when the ME names no UNI the data plane carries. The data plane counts a UNI's
        drops without their direction: they are all reported upstream, where the RG's frames are dropped."""
        return self._frames(onu, self._uni_of_bridge_port(onu, me_id), upstream)

    def ethernet_uni(self, onu, me_id: int, upstream: bool = True) -> FrameCounts | None:
        """The frames `onu`'s PPTP Ethernet UNI `me_id` received from the RG (`upstream`) or sent to it, None when
        the data plane does not carry it."""
        return self._frames(onu, _eth_uni(onu, me_id), upstream)

    def gem_port(self, onu, me_id: int) -> GemCounts | None:
        """The frames and bytes of the GEM port behind `onu`'s GEM port network CTP `me_id`, as the OpenOLT
        GetGemPortStatistics reports them (`DataPlane.gem_statistics`: 0 before any flow is on it), seen from the
        ONU; None when the port is behind no bound UNI."""
        pipeline = self.pipeline
        if pipeline is None:
            return None
        record = self.vlan_config.record(onu.serial)
        if record is None:
            return None
        gem = record.value(GEM_CTP, me_id, 1, me_id)
        behind = set()
        for uni in self._bound_unis(onu):
            behind.update((compile_onu_part(record, uni.me_id).gem_by_pbit or {}).values())
        if gem not in behind:
            return None
        counted = pipeline.gem_statistics(onu.pon.id, onu.onu_id, gem) or (0, 0, 0, 0)
        rx_frames, rx_bytes, tx_frames, tx_bytes = counted      # the OLT's: rx upstream, tx downstream
        return GemCounts(tx_frames=rx_frames, tx_bytes=rx_bytes, rx_frames=tx_frames, rx_bytes=tx_bytes)

    def carries(self, onu) -> bool:
        """Whether the data plane carries any UNI of `onu` (its ANI's FEC counters are then a simulated wire's: 0)."""
        return bool(self._bound_unis(onu))

    # ---- helpers ------------------------------------------------------------------------------------------------

    def _bound_unis(self, onu) -> list:
        pipeline = self.pipeline
        if pipeline is None:
            return []
        ids = {uni_id for serial, uni_id in pipeline.bound() if serial == onu.serial}
        return [uni for uni in onu.eth_unis if uni.id in ids]

    def _frames(self, onu, uni, upstream: bool) -> FrameCounts | None:
        counter = self._uni_counter(onu, uni)
        if counter is None:
            return None
        kinds = self.pipeline.frame_kinds(onu.serial, uni.id)
        kinds = kinds[0 if upstream else 1] if kinds is not None else (0,) * (KIND_LONGER + 1)
        sizes = tuple(kinds[KIND_SIZES:KIND_LONGER])
        if not upstream:
            return FrameCounts(counter["tx_frames"], counter["tx_bytes"], broadcast=kinds[KIND_BROADCAST],
                               multicast=kinds[KIND_MULTICAST], sizes=sizes)
        dropped = counter["dropped"]
        return FrameCounts(counter["rx_frames"], counter["rx_bytes"], sum(dropped.values()),
                           dropped.get("oversize", 0), kinds[KIND_BROADCAST], kinds[KIND_MULTICAST], sizes)

    def _uni_counter(self, onu, uni) -> dict | None:
        if uni is None or self.pipeline is None:
            return None
        return self.pipeline.uni_counters(onu.serial, uni.id)

    def _uni_of_bridge_port(self, onu, me_id: int):
        record = self.vlan_config.record(onu.serial)
        if record is not None and (MBPCD, me_id) in record.mes:
            if record.value(MBPCD, me_id, 3) != TP_PPTP_ETH:
                return None                 # an ANI-side port (mapper, GEM interworking TP): no UNI of its own
            return _eth_uni(onu, record.value(MBPCD, me_id, 4))
        return _eth_uni(onu, me_id - OPENONU_BRIDGE_PORT_BASE)


def _eth_uni(onu, me_id):
    """The Ethernet UNI of `onu` whose PPTP ME id is `me_id`, or None."""
    return next((uni for uni in onu.eth_unis if uni.me_id == me_id), None)
