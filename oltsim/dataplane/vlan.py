"""The ONU's VLAN operations from its OMCI (G.988 9.3.13 Extended VLAN tagging operation configuration data, 9.3.11
VLAN tagging filter data), as pure functions of a frame's tags.

A frame's tags are a tuple of `(tpid, tci)` pairs, outermost first. `Evtocd.upstream(tags, ethertype)` gives the
tags a frame leaves the UNI's EVTOCD with, or None when it is discarded; `Evtocd.downstream` the inverse, as its
downstream mode says (VOLTHA's ONU adapter writes 0). `VlanFilter.passes(tags)` says whether the bridge port's filter
forwards the frame. Nothing here is per frame: the pipeline caches the answers per tag signature.

EVTOCD entry fields (16 octets, four 32-bit words):
  word 1: filter outer priority (4 bits), outer VID (13), outer TPID/DE (3), padding
  word 2: filter inner priority (4), inner VID (13), inner TPID/DE (3), padding (8), EtherType (4)
  word 3: tags to remove (2), padding (10), treatment outer priority (4), outer VID (13), outer TPID/DE (3)
  word 4: padding (12), treatment inner priority (4), inner VID (13), inner TPID/DE (3)
Filter priority 15 = no tag in this position, 14 = default rule, 8 = any priority; VID 4096 = any VID. Treatment
priority 15 = add no tag, 8 / 9 = copy from the received inner / outer tag; VID 4096 / 4097 = copy from the received
inner / outer tag; tags to remove 3 = discard the frame. A single-tagged frame's tag is its "inner" tag. Three
default rules (untagged, single-tagged and double-tagged frames pass unchanged) exist until the adapter overwrites
them, as G.988 says an ONU creates them with the ME; downstream they do not apply. The EtherType filter knows the
values 1..5 (IPv4, PPPoE, ARP, IPv6, EAPOL); a rule filtering on extended criteria (DHCP ports) takes no frame.
"""
from __future__ import annotations

from dataclasses import dataclass

TPID_8021Q = 0x8100
NO_TAG = 15
DEFAULT_PRIO = 14
ANY_PRIO = 8
ANY_VID = 4096
COPY_INNER_VID = 4096
COPY_OUTER_VID = 4097
COPY_INNER_PRIO = 8
COPY_OUTER_PRIO = 9
DSCP_PRIO = 10
DISCARD = 3

#: EVTOCD filter EtherType values (G.988 9.3.13, word 2 bits 4..1)
ETHERTYPES = {1: (0x0800,), 2: (0x8863, 0x8864), 3: (0x0806,), 4: (0x86DD,), 5: (0x888E,)}

Tags = tuple  # of (tpid, tci)


def tags_bytes(tags: Tags) -> bytes:
    """The octets of `tags` as they sit in a frame after the source MAC."""
    return b"".join(((tpid << 16) | tci).to_bytes(4, "big") for tpid, tci in tags)


def tag(vid: int, pcp: int = 0, tpid: int = TPID_8021Q, dei: int = 0) -> tuple[int, int]:
    """One tag as the pipeline keeps it."""
    return (tpid, (pcp & 7) << 13 | (dei & 1) << 12 | (vid & 0xFFF))


@dataclass(frozen=True, slots=True)
class Rule:
    """One EVTOCD table entry, decoded."""
    entry: bytes
    f_out_prio: int
    f_out_vid: int
    f_out_tpid: int
    f_in_prio: int
    f_in_vid: int
    f_in_tpid: int
    f_eth: int
    f_extended: int
    remove: int
    t_out_prio: int
    t_out_vid: int
    t_out_tpid: int
    t_in_prio: int
    t_in_vid: int
    t_in_tpid: int

    @classmethod
    def decode(cls, entry: bytes) -> "Rule":
        w1, w2, w3, w4 = (int.from_bytes(entry[i:i + 4], "big") for i in (0, 4, 8, 12))
        return cls(bytes(entry), w1 >> 28, (w1 >> 15) & 0x1FFF, (w1 >> 12) & 7,
                   w2 >> 28, (w2 >> 15) & 0x1FFF, (w2 >> 12) & 7, w2 & 0xF, (w2 >> 4) & 0xFF,
                   w3 >> 30, (w3 >> 16) & 0xF, (w3 >> 3) & 0x1FFF, w3 & 7,
                   (w4 >> 16) & 0xF, (w4 >> 3) & 0x1FFF, w4 & 7)

    @property
    def kind(self) -> int:
        """How many tags the frames this rule filters carry: 0, 1 or 2."""
        if self.f_out_prio == NO_TAG:
            return 0 if self.f_in_prio == NO_TAG else 1
        return 2

    @property
    def is_default(self) -> bool:
        """A default rule: applies only when no other rule of its kind matches."""
        if self.kind == 1:
            return self.f_in_prio == DEFAULT_PRIO
        if self.kind == 2:
            return self.f_out_prio == DEFAULT_PRIO and self.f_in_prio == DEFAULT_PRIO
        return False

    @property
    def specificity(self) -> int:
        """How many fields the filter checks: the more, the earlier the rule is tried."""
        n = int(self.f_eth != 0)
        for prio, vid, tpid in ((self.f_out_prio, self.f_out_vid, self.f_out_tpid),
                                (self.f_in_prio, self.f_in_vid, self.f_in_tpid)):
            if prio < ANY_PRIO:
                n += 1
            if prio != NO_TAG and vid != ANY_VID:
                n += 1
            if prio != NO_TAG and tpid:
                n += 1
        return n

    @property
    def is_default_treatment(self) -> bool:
        """A default rule that leaves frames as they are: G.988 says it does not apply downstream."""
        return self.is_default and self.remove == 0 and self.adds == 0

    @property
    def adds(self) -> int:
        """How many tags the treatment adds."""
        return int(self.t_out_prio != NO_TAG) + int(self.t_in_prio != NO_TAG)

    def matches(self, tags: Tags, ethertype: int, input_tpid: int) -> bool:
        """Whether the rule's filter takes a frame with `tags` (of this rule's kind) and `ethertype`."""
        if self.f_eth and ethertype not in ETHERTYPES.get(self.f_eth, ()):
            return False
        if self.f_extended:
            return False            # extended criteria (DHCP ports) are not modelled: such a rule takes nothing
        kind = self.kind
        if kind == 1:
            return _filter(self.f_in_prio, self.f_in_vid, self.f_in_tpid, tags[0], input_tpid)
        if kind == 2:
            return (_filter(self.f_out_prio, self.f_out_vid, self.f_out_tpid, tags[0], input_tpid)
                    and _filter(self.f_in_prio, self.f_in_vid, self.f_in_tpid, tags[1], input_tpid))
        return True

    def treat(self, tags: Tags, output_tpid: int) -> Tags | None:
        """The tags after the treatment, None when the rule discards."""
        if self.remove == DISCARD:
            return None
        inner = tags[1] if len(tags) >= 2 else (tags[0] if tags else None)
        outer = tags[0] if len(tags) >= 2 else None
        added = []
        if self.t_out_prio != NO_TAG:
            added.append(_make(self.t_out_prio, self.t_out_vid, self.t_out_tpid, inner, outer, output_tpid))
        if self.t_in_prio != NO_TAG:
            added.append(_make(self.t_in_prio, self.t_in_vid, self.t_in_tpid, inner, outer, output_tpid))
        return tuple(added) + tuple(tags[self.remove:])

    def undo(self, tags: Tags, ethertype: int, input_tpid: int) -> Tags | None:
        """The inverse (downstream mode 0): the tags a downstream frame with `tags` leaves with, None when the rule
        could not have produced them (or what it removed cannot be told from what it added)."""
        if self.remove == DISCARD or self.f_extended:
            return None
        if self.f_eth and ethertype not in ETHERTYPES.get(self.f_eth, ()):
            return None
        adds = self.adds
        if len(tags) < adds:
            return None
        pushed = []
        if self.t_out_prio != NO_TAG:
            pushed.append(self.t_out_vid)
        if self.t_in_prio != NO_TAG:
            pushed.append(self.t_in_vid)
        for vid, (_, tci) in zip(pushed, tags):
            if vid < ANY_VID and (tci & 0xFFF) != vid:
                return None
        rest = tuple(tags[adds:])
        kind = self.kind
        restored = []
        # What the upstream treatment removed: the filtered tags (from the outside), rebuilt from the filter.
        removed_filters = [(self.f_out_prio, self.f_out_vid), (self.f_in_prio, self.f_in_vid)][2 - kind:][:self.remove]
        for prio, vid in removed_filters:
            if vid >= ANY_VID:
                # Copied into a pushed tag? Then that tag says what it was.
                source = _copied_from(self, len(restored), kind)
                if source is None:
                    return None
                vid = tags[source][1] & 0xFFF
            pcp = prio if prio < ANY_PRIO else (tags[0][1] >> 13 if tags else 0)
            restored.append(tag(vid, pcp, input_tpid))
        result = tuple(restored) + rest
        if len(result) != kind and not (kind == 2 and len(result) > 2):
            return None
        if kind and not self.matches(result, ethertype, input_tpid) and not self.is_default:
            return None
        return result


def _copied_from(rule: Rule, position: int, kind: int) -> int | None:
    """Which pushed tag (index in the frame) copied the VID of the removed tag at `position` (0 = outermost removed),
    None when none did."""
    # Received-tag naming: for a double-tagged frame position 0 is the outer tag, 1 the inner; for a single-tagged
    # frame its only tag is the inner one.
    wanted = COPY_INNER_VID if (kind == 1 or position == 1) else COPY_OUTER_VID
    index = 0
    for prio, vid in ((rule.t_out_prio, rule.t_out_vid), (rule.t_in_prio, rule.t_in_vid)):
        if prio == NO_TAG:
            continue
        if vid == wanted:
            return index
        index += 1
    return None


def _filter(prio: int, vid: int, tpid_de: int, tag_: tuple[int, int], input_tpid: int) -> bool:
    tpid, tci = tag_
    if prio < ANY_PRIO and (tci >> 13) != prio:
        return False
    if vid < ANY_VID and (tci & 0xFFF) != vid:
        return False
    if tpid_de == 0:
        return True
    if tpid_de == 4:
        return tpid == TPID_8021Q
    if tpid_de == 5:
        return tpid == input_tpid
    if tpid_de in (6, 7):
        return tpid == input_tpid and ((tci >> 12) & 1) == tpid_de - 6
    return False


def _make(prio: int, vid: int, tpid_de: int, inner, outer, output_tpid: int) -> tuple[int, int]:
    """One tag a treatment adds, copying from the received `inner` / `outer` tags (None when absent)."""
    if prio == COPY_INNER_PRIO:
        pcp = inner[1] >> 13 if inner else 0
    elif prio == COPY_OUTER_PRIO:
        pcp = outer[1] >> 13 if outer else 0
    elif prio < ANY_PRIO:
        pcp = prio
    else:
        pcp = 0                                   # DSCP to P-bit: the simulated ONU maps every DSCP to 0
    if vid == COPY_INNER_VID:
        vid = inner[1] & 0xFFF if inner else 0
    elif vid == COPY_OUTER_VID:
        vid = outer[1] & 0xFFF if outer else 0
    if tpid_de in (0, 1):
        source = inner if tpid_de == 0 else outer
        tpid, dei = (source[0], (source[1] >> 12) & 1) if source else (TPID_8021Q, 0)
    elif tpid_de in (2, 3):
        source = inner if tpid_de == 2 else outer
        tpid, dei = output_tpid, ((source[1] >> 12) & 1) if source else 0
    elif tpid_de == 7:
        tpid, dei = output_tpid, 1
    elif tpid_de == 6:
        tpid, dei = output_tpid, 0
    else:
        tpid, dei = TPID_8021Q, 0
    return tag(vid, pcp, tpid, dei)


def _entry(words) -> bytes:
    return b"".join(w.to_bytes(4, "big") for w in words)


#: The three rules an ONU creates with the EVTOCD: untagged, single- and double-tagged frames pass unchanged.
_NO_TREATMENT = (NO_TAG << 16, NO_TAG << 16)
DEFAULT_ENTRIES = (
    _entry((NO_TAG << 28 | ANY_VID << 15, NO_TAG << 28 | ANY_VID << 15) + _NO_TREATMENT),
    _entry((NO_TAG << 28 | ANY_VID << 15, DEFAULT_PRIO << 28 | ANY_VID << 15) + _NO_TREATMENT),
    _entry((DEFAULT_PRIO << 28 | ANY_VID << 15, DEFAULT_PRIO << 28 | ANY_VID << 15) + _NO_TREATMENT),
)


class Evtocd:
    """One EVTOCD ME compiled: its rules by kind, most specific first, defaults last."""

    __slots__ = ("input_tpid", "output_tpid", "downstream_mode", "_by_kind", "_inverse")

    def __init__(self, entries, input_tpid: int = TPID_8021Q, output_tpid: int = TPID_8021Q,
                 downstream_mode: int = 0):
        self.input_tpid = input_tpid or TPID_8021Q
        self.output_tpid = output_tpid or TPID_8021Q
        self.downstream_mode = downstream_mode
        table = {e[:8]: e for e in DEFAULT_ENTRIES}
        for entry in entries:
            table[entry[:8]] = entry
        rules = [Rule.decode(e) for e in table.values()]
        order = {id(r): i for i, r in enumerate(rules)}
        self._by_kind = {k: sorted((r for r in rules if r.kind == k),
                                   key=lambda r: (r.is_default, -r.specificity, order[id(r)]))
                         for k in (0, 1, 2)}
        # Downstream: the rules that give the fewest tags back first (an RG that sent untagged frames gets untagged
        # frames), then the most specific; default rules with the default treatment do not apply (G.988).
        self._inverse = sorted((r for r in rules if not r.is_default_treatment),
                               key=lambda r: (r.is_default, r.kind, -r.specificity, order[id(r)]))

    def upstream(self, tags: Tags, ethertype: int) -> Tags | None:
        """The tags a frame from the UNI leaves with; None when a rule discards it or none matches."""
        kind = min(len(tags), 2)
        for rule in self._by_kind[kind]:
            if rule.matches(tags, ethertype, self.input_tpid):
                return rule.treat(tags, self.output_tpid)
        return None

    def downstream(self, tags: Tags, ethertype: int) -> Tags | None:
        """The tags a frame towards the UNI leaves with; None when it is discarded. Downstream mode (G.988 9.3.13):
        0 (VOLTHA's), 2, 3 and 4: the inverse of the first upstream rule that could have produced the frame's
        tags, a frame none could have produced passing unmodified (mode 0 leaves that to the ONU: this one
        forwards, and the bridge port's VLAN filter is what refuses foreign tags); 5, 6 and 7: likewise, but such a
        frame is discarded (an untagged one still passes: it has no tag to undo); 1: every frame unmodified; 8:
        every frame discarded. Other values act as 0."""
        mode = self.downstream_mode
        if mode == 1:
            return tags
        if mode == 8:
            return None
        for rule in self._inverse:
            result = rule.undo(tags, ethertype, self.input_tpid)
            if result is not None:
                return result
        if mode in (5, 6, 7) and tags:
            return None
        return tags


class VlanFilter:
    """One VLAN tagging filter data ME: the TCIs of its list and its forward operation (G.988 Table 9.3.11-1)."""

    __slots__ = ("tcis", "operation")

    #: forward operation -> (what untagged frames get, what tagged frames are investigated on): "forward" /
    #: "discard" for untagged; None (forward), "vid", "pbit", "tci" for tagged (forwarded when the list holds it).
    #: 0x10 is what VOLTHA's ONU adapter writes; an operation not listed forwards everything.
    OPERATIONS = {
        0x00: ("forward", None),
        0x10: ("forward", "vid"), 0x11: ("discard", "vid"), 0x12: ("forward", "pbit"),
        0x13: ("discard", "pbit"), 0x14: ("forward", "tci"), 0x15: ("discard", "tci"),
    }

    def __init__(self, filter_list: bytes, operation: int, entries: int):
        count = max(0, min(entries, len(filter_list) // 2, 12))
        self.tcis = tuple(int.from_bytes(filter_list[2 * i:2 * i + 2], "big") for i in range(count))
        self.operation = operation

    def passes(self, tags: Tags) -> bool:
        """Whether a frame with `tags` (outermost first; the outer tag is investigated) is forwarded."""
        untagged, tagged = self.OPERATIONS.get(self.operation, ("forward", None))
        if not tags:
            return untagged == "forward"
        if tagged is None:
            return True
        if tagged == "discard":
            return False
        tci = tags[0][1]
        if tagged == "vid":
            return any((t & 0xFFF) == (tci & 0xFFF) for t in self.tcis)
        if tagged == "pbit":
            return any((t >> 13) == (tci >> 13) for t in self.tcis)
        return any((t & 0xEFFF) == (tci & 0xEFFF) for t in self.tcis)
