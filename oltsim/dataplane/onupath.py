"""The ONU's part of one UNI's path, compiled from the OMCI record (oltsim.omci.vlanconfig).

The chain VOLTHA's ONU adapter builds (and G.988 describes) for a UNI:

  PPTP Ethernet UNI (ME id = `uni.me_id`) <- EVTOCD (association type 2 and pointer = the PPTP, or type 0 and
  pointer = the UNI-side bridge port) ; UNI-side MAC bridge port (TP type 1, TP pointer = the PPTP) on bridge B ;
  ANI-side bridge port on B (TP type 3 -> 802.1p mapper, whose P-bit pointers name GEM interworking TPs; or TP type
  5 -> one GEM interworking TP) ; GEM interworking TP -> GEM port network CTP -> its Port-ID (the GEM port) ;
  VLAN tagging filter data on a bridge port (same ME id).

Upstream a frame goes UNI -> EVTOCD -> filters -> mapper (by the priority of its outer tag; untagged: 0) -> GEM port;
downstream filters -> EVTOCD inverse -> UNI. What the record lacks is transparent: no EVTOCD, no tag operation; no
filter, no filtering; no bridge, no GEM port known (the OLT's flows then are not checked against one).
"""
from __future__ import annotations

from oltsim.dataplane.vlan import TPID_8021Q, Evtocd, VlanFilter
from oltsim.omci.vlanconfig import EVTOCD, GEM_CTP, GEM_IW_TP, MAPPER, MBPCD, VTFD

TP_PPTP_ETH = 1
TP_MAPPER = 3
TP_GEM_IW = 5
ASSOC_MBPCD = 0
ASSOC_PPTP_ETH = 2
NULL_POINTER = 0xFFFF


class OnuPart:
    """The compiled ONU side of one UNI: `evtocd` (or None), `filters` (the UNI-side bridge port's VlanFilter, if
    any), `ani` (one `(VlanFilter or None, {priority: GEM port})` per ANI-side bridge port, each behind its own
    802.1p mapper: a technology profile of its own, as VOLTHA's ONU adapter makes one per profile; None when no
    bridge towards a GEM port is known), `gem_by_pbit` (every ANI port's GEM ports by priority, the first port's
    first: what the PM counters look behind), `tpids` (the TPIDs the UNI takes tags with: 0x8100 and the EVTOCD's
    input TPID; a frame tagged with another is not the ONU's to forward).

    Upstream the bridge forwards a frame to the first ANI port whose VLAN filter takes it and whose mapper has a
    GEM port for the priority of its outer tag (untagged: 0); downstream a frame passes when the UNI port's filter
    and one ANI port's filter take it."""

    __slots__ = ("evtocd", "filters", "ani", "gem_by_pbit", "tpids")

    def __init__(self, evtocd=None, filters=(), gem_by_pbit=None, ani=None):
        self.evtocd = evtocd
        self.filters = tuple(filters)
        if ani is None and gem_by_pbit is not None:
            ani = ((None, gem_by_pbit),)
        self.ani = tuple(ani) if ani is not None else None
        if gem_by_pbit is None and self.ani is not None:
            gem_by_pbit = {}
            for _, gems in self.ani:
                for pbit, gem in gems.items():
                    gem_by_pbit.setdefault(pbit, gem)
        self.gem_by_pbit = gem_by_pbit
        self.tpids = frozenset((TPID_8021Q, evtocd.input_tpid if evtocd is not None else TPID_8021Q))

    def upstream(self, tags, ethertype):
        """(tags after the ONU, GEM port or None, None) or (None, None, drop reason)."""
        if self.evtocd is not None:
            tags = self.evtocd.upstream(tags, ethertype)
            if tags is None:
                return None, None, "no-vlan-rule"
        for vlan_filter in self.filters:
            if not vlan_filter.passes(tags):
                return None, None, "vlan-filter"
        if self.ani is None:
            return tags, None, None
        pbit = tags[0][1] >> 13 if tags else 0
        reason = "vlan-filter" if self.ani else "no-gem"
        for vlan_filter, gems in self.ani:
            if vlan_filter is not None and not vlan_filter.passes(tags):
                continue
            gem = gems.get(pbit)
            if gem is not None:
                return tags, gem, None
            reason = "no-gem"
        return None, None, reason

    def downstream(self, tags, ethertype):
        """(tags the UNI gets, None) or (None, drop reason)."""
        for vlan_filter in self.filters:
            if not vlan_filter.passes(tags):
                return None, "vlan-filter"
        if self.ani and not any(vlan_filter is None or vlan_filter.passes(tags) for vlan_filter, _ in self.ani):
            return None, "vlan-filter"
        if self.evtocd is not None:
            tags = self.evtocd.downstream(tags, ethertype)
            if tags is None:
                return None, "no-vlan-rule"
        return tags, None


def compile_onu_part(record, uni_me_id: int) -> OnuPart:
    """The ONU part of the UNI whose PPTP ME id is `uni_me_id`, from an `OnuRecord` (None: transparent)."""
    if record is None:
        return OnuPart()
    ports = record.of_class(MBPCD)
    uni_ports = [me_id for me_id, attrs in sorted(ports.items())
                 if _int(attrs, 3) == TP_PPTP_ETH and _int(attrs, 4) == uni_me_id]
    evtocd = None
    for me_id, attrs in sorted(record.of_class(EVTOCD).items()):
        assoc, pointer = _int(attrs, 1), _int(attrs, 7)
        if (assoc == ASSOC_PPTP_ETH and pointer == uni_me_id) or (assoc == ASSOC_MBPCD and pointer in uni_ports):
            evtocd = Evtocd(record.rules.get(me_id, {}).values(), _int(attrs, 3), _int(attrs, 4), _int(attrs, 5))
            break
    if not uni_ports:
        return OnuPart(evtocd)
    bridge = _int(ports[uni_ports[0]], 1)
    ani_ports = [me_id for me_id, attrs in sorted(ports.items())
                 if _int(attrs, 1) == bridge and _int(attrs, 3) in (TP_MAPPER, TP_GEM_IW)]
    filters = []
    attrs = record.mes.get((VTFD, uni_ports[0]))
    if attrs is not None:
        filters.append(_vlan_filter(attrs))
    ani = []
    for me_id in ani_ports:
        attrs = ports[me_id]
        kind, pointer = _int(attrs, 3), _int(attrs, 4)
        if kind == TP_MAPPER:
            mapper = record.mes.get((MAPPER, pointer), {})
            gems = {pbit: _gem_of(record, _int(mapper, 2 + pbit, NULL_POINTER)) for pbit in range(8)}
        else:
            gem = _gem_of(record, pointer)
            gems = {pbit: gem for pbit in range(8)}
        gems = {pbit: gem for pbit, gem in gems.items() if gem is not None}
        vtfd = record.mes.get((VTFD, me_id))
        if gems or vtfd is not None:
            ani.append((_vlan_filter(vtfd) if vtfd is not None else None, gems))
    if not ani_ports:
        return OnuPart(evtocd, filters)
    # a bridge with no GEM port behind it: nothing goes upstream ("no-gem")
    return OnuPart(evtocd, filters, ani=[port for port in ani if port[1]] or [(None, {})])


def _vlan_filter(attrs: dict) -> VlanFilter:
    return VlanFilter(attrs.get(1, b""), _int(attrs, 2), _int(attrs, 3))


def _gem_of(record, iw_tp: int):
    """The GEM port (CTP Port-ID) behind a GEM interworking TP, None when the chain is incomplete."""
    if iw_tp == NULL_POINTER or (GEM_IW_TP, iw_tp) not in record.mes:
        return None
    ctp = record.value(GEM_IW_TP, iw_tp, 1)
    if ctp is None or (GEM_CTP, ctp) not in record.mes:
        return None
    return record.value(GEM_CTP, ctp, 1)


def _int(attrs: dict, index: int, default: int = 0) -> int:
    value = attrs.get(index)
    return int.from_bytes(value, "big") if value else default
