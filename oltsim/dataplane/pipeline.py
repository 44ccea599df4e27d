"""The data plane's pure part: one Ethernet frame in, what to do with it out.

Upstream, a frame from a bound UNI (as the RG sent it) goes through the ONU's part, from the OMCI the adapter wrote
(`oltsim.omci.vlanconfig`: the Extended VLAN Tagging Operation rules of the UNI, the VLAN tagging filter of its
bridge port, the 802.1p mapper choosing the GEM port), then the OLT's part, from its flows: a trap flow makes a
packet indication to the adapter (as today's simulated protocols raise them), a forwarding flow pushes or
translates the outer tag and sends it out of the NNI. Downstream the other way: the NNI frame's tags select a
downstream flow, which pops or translates, then the ONU's EVTOCD reverse operation and its filter, then the UNI.
Group traffic matching a multicast flow goes to every bound UNI whose client joined the group (IGMP reports seen
upstream, `oltsim.dataplane.multicast`), without the group's VLAN.

Nothing here does I/O or reads the time by itself: methods return `Output` values that the caller (the service
owning the interfaces) carries out, on the reactor thread. What to do per UNI and per GEM is computed when OMCI or
flows change, not per frame.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from oltsim.dataplane import multicast, states, vnet
from oltsim.dataplane.flows import FlowTable
from oltsim.dataplane.onupath import compile_onu_part
from oltsim.dataplane.vlan import tag, tags_bytes
from oltsim.dataplane.wire import ETH_EAPOL, IP_UDP, MAX_TAGS, TPIDS, is_dhcp, peel, ports_of
from oltsim.logs import logger
from oltsim.model import events
from oltsim.model.errors import NotFound
from oltsim.model.onu import ACTIVE_STATES, serial_key
from oltsim.omci.vlanconfig import VlanConfig
from oltsim.packets import frames as f

log = logger("oltsim.dataplane")

#: Decisions cached per frame signature, per UNI and for the NNI, at most; past it the cache starts over (a flood
#: of frames with ever new ports must not grow memory).
CACHE_LIMIT = 4096
#: MAC addresses learned from upstream frames, at most (the oldest are forgotten first).
MAC_LIMIT = 65536
#: MAC addresses learned from one UNI, at most (its own oldest are forgotten first): a client sending from ever new
#: source MACs must not push the other UNIs' subscribers out of the table.
MACS_PER_UNI = 1024
#: Ethernet's smallest frame without its FCS: shorter frames leave padded with zeros
MIN_FRAME = 60
_PAD = bytes(MIN_FRAME)
#: The NNI's MTU unless DataPlane is given another (jumbo frames): the octets a frame may carry after its tags
DEFAULT_MTU = 1500
#: MAC addresses one UNI holds by its subscriber's DHCP lease or EAP success, at most (its oldest let go first).
OWNED_PER_UNI = 16
#: A UNI's frame kinds (`DataPlane.frame_kinds`), by index: broadcast, multicast, then G.988's size buckets by the
#: frame's length with its 4-octet FCS (64 (shorter frames are padded to it on the wire), 65-127, 128-255, 256-511,
#: 512-1023, 1024-1518 octets), then longer frames
KIND_BROADCAST, KIND_MULTICAST, KIND_SIZES, KIND_LONGER = 0, 1, 2, 8
_SIZE_EDGES = (60, 123, 251, 507, 1019, 1514)       # the buckets' largest frames without FCS
_SIZE_SLOT = bytes(KIND_SIZES + sum(n > edge for edge in _SIZE_EDGES) for n in range(_SIZE_EDGES[-1] + 1))
_SLOTS = len(_SIZE_SLOT)
_BROADCAST = b"\xff" * 6

__all__ = ["DataPlane", "Dropped", "Output", "PacketIn", "ToNni", "ToNniUntagged", "ToNniUntaggedWithHeader",
           "ToNniWithHeader", "ToUni", "ToUniWithHeader"]


# ---- outputs --------------------------------------------------------------------------------------------------

#: the outputs' own __init__ (a frozen dataclass's generated one looks object.__setattr__ up for every field: a
#: third of a microsecond per output more with the queue key)
_set = object.__setattr__


@dataclass(frozen=True, slots=True, init=False)
class ToUni:
    """Send `frame` out of the interface of UNI `uni_id` of ONU `serial`, as the RG receives it. `queue`: the
    downstream scheduler's key the frame is shaped by (`shaper.DOWN`, the ONU, its UNI id, the flow's alloc id and
    GEM port);
    None for none (a packet-out); not compared."""
    serial: str
    uni_id: int
    frame: bytes
    queue: tuple | None = field(default=None, compare=False)
    #: the frame's virtio-net header: none (`ToUniWithHeader` has one)
    vnet = None

    def __init__(self, serial: str, uni_id: int, frame: bytes, queue: tuple | None = None):
        _set(self, "serial", serial)
        _set(self, "uni_id", uni_id)
        _set(self, "frame", frame)
        _set(self, "queue", queue)


@dataclass(frozen=True, slots=True, init=False)
class ToNni:
    """Send `frame` out of the tagged NNI interface (S-tag and C-tag as the flows and the ONU left them). `queue`:
    the T-CONT's key the frame is shaped by (`shaper.UP`, the ONU, the flow's alloc id, the GEM port); None for none
    (an UplinkPacketOut); not compared."""
    frame: bytes
    queue: tuple | None = field(default=None, compare=False)
    #: the frame's virtio-net header: none (the `...WithHeader` output has one)
    vnet = None

    def __init__(self, frame: bytes, queue: tuple | None = None):
        _set(self, "frame", frame)
        _set(self, "queue", queue)


@dataclass(frozen=True, slots=True, init=False)
class ToNniUntagged:
    """Send `frame` out of the untagged NNI interface (the frame of the tagged NNI with its VLAN tags removed);
    `queue` as `ToNni`'s."""
    frame: bytes
    queue: tuple | None = field(default=None, compare=False)
    #: the frame's virtio-net header: none (the `...WithHeader` output has one)
    vnet = None

    def __init__(self, frame: bytes, queue: tuple | None = None):
        _set(self, "frame", frame)
        _set(self, "queue", queue)


class ToUniWithHeader(ToUni):
    """A `ToUni` whose frame goes with its virtio-net header `vnet` (`oltsim.dataplane.vnet`: a checksum to finish,
    a GSO super-frame), moved to the tags it leaves with. A subclass, so that a plain frame's output sets no third
    slot."""
    __slots__ = ("vnet",)

    def __init__(self, serial: str, uni_id: int, frame: bytes, queue: tuple | None, vnet: bytes):
        _set(self, "serial", serial)
        _set(self, "uni_id", uni_id)
        _set(self, "frame", frame)
        _set(self, "queue", queue)
        _set(self, "vnet", vnet)


def _nni_with_header(self, frame: bytes, queue: tuple | None, vnet: bytes) -> None:
    """The `__init__` of the NNI outputs with a virtio-net header."""
    _set(self, "frame", frame)
    _set(self, "queue", queue)
    _set(self, "vnet", vnet)


class ToNniWithHeader(ToNni):
    """A `ToNni` whose frame goes with its virtio-net header `vnet` (as `ToUniWithHeader`)."""
    __slots__ = ("vnet",)
    __init__ = _nni_with_header


class ToNniUntaggedWithHeader(ToNniUntagged):
    """A `ToNniUntagged` whose frame goes with its virtio-net header `vnet` (as `ToUniWithHeader`)."""
    __slots__ = ("vnet",)
    __init__ = _nni_with_header


@dataclass(frozen=True, slots=True)
class PacketIn:
    """A trap flow sent the frame to the adapter. `indication` is the `events.PacketIndication` the DataPlane has
    ALREADY emitted on the OLT (the southbound turns it into a PktInd exactly as for today's simulated protocols);
    callers only count or log it. `flow_id` is the trap flow that matched (-1 for none, e.g. UplinkPacketOut)."""
    indication: events.PacketIndication
    flow_id: int = -1


@dataclass(frozen=True, slots=True)
class Dropped:
    """The frame was dropped and counted. `where` is `uni <serial>/<uni_id>`, `nni` or `nni-untagged`; `reason` is
    a kebab-case word, one of `REASONS`."""
    where: str
    reason: str


Output = ToUni | ToNni | ToNniUntagged | PacketIn | Dropped

#: Why a frame is dropped (the counters' keys):
REASONS = (
    "malformed",          # not an Ethernet frame (shorter than 14 octets, a tag cut short)
    "not-bound",          # the UNI has no interface (bind_uni was not called, or unbind_uni was)
    "onu-not-active",     # the ONU is not activated (powered off, disabled, rebooting)
    "uni-down",           # the UNI is administratively locked (OMCI PPTP admin state)
    "no-vlan-rule",       # no EVTOCD rule of the UNI matches the frame's tags (or a rule says discard)
    "vlan-filter",        # the bridge port's VLAN tagging filter data discards the tag
    "no-gem",             # the 802.1p mapper / bridge gives the frame no GEM port
    "no-flow",            # no flow of the OLT matches the frame's ONU, UNI, GEM port and tags
    "no-subscriber",      # untagged NNI: the destination MAC was never learned, or a broadcast no bound UNI takes
    "no-nni",             # forwarded upstream, but there is no NNI interface to leave by (only UNIs have one)
    "no-member",          # multicast: no bound UNI joined the group (IGMP) a multicast flow carries
    "mac-spoof",          # from a UNI, with a source MAC another UNI's subscriber holds (its lease, its EAP success)
    "link-local",         # to a link-local group address (01:80:c2:00:00:00-0f: 802.1X, pause, LLDP...), which no
                          # bridge forwards; only a trap flow takes such a frame (to the adapter)
    "eapol",              # EAPOL to any other address (unicast included): an OLT traps 802.1X, it never forwards it
    "oversize",           # more than the NNI's MTU after the Ethernet header and its tags (never cut to fit)
    "dhcp-client",        # a DHCP message for a client MAC another UNI's subscriber holds (sent from, or answered
                          # towards, the wrong UNI)
    "foreign-tag",        # from the NNI, a DHCP answer under VLANs other than those of the UNI its client MAC is with
    "tpid",               # a tag whose TPID the port does not take (the UNI: 0x8100 or its EVTOCD's input TPID; the
                          # NNI: 0x8100 or one a flow names), or a third tag
    "gso-unsupported",    # a GSO super-frame (oltsim.dataplane.vnet) where only whole frames go: trapped to the
                          # adapter, or to a multicast group
    "queue-full",         # reserved for the caller: the interface's bounded queue was full
    "shaper",             # reserved for the caller: the T-CONT's or downstream scheduler's queue was full
)




# ---- internals ------------------------------------------------------------------------------------------------

_FORWARD, _TRAP, _DROP = 0, 1, 2
#: the first element of an output's queue key (oltsim.dataplane.shaper.UP, DOWN)
_UP, _DOWN = "up", "down"
#: what an upstream frame's decision says to look at: service states (EAPOL, DHCP) or group membership (IGMP)
_STATES, _IGMP = 1, 2
IP_IGMP = 2
#: first octets of the TPIDs a tag may start with (0x8100, 0x88a8, 0x9100)
_TPID_FIRST = frozenset((0x81, 0x88, 0x91))


def _chaddr(frame: bytes, cut: int) -> bytes:
    """The client MAC (BOOTP chaddr) of a DHCP frame whose EtherType is at `cut`; b"" when it is cut short."""
    ip = cut + 2
    if len(frame) < ip + 20:
        return b""
    l4 = ip + (frame[ip] & 15) * 4
    mac = frame[l4 + 36:l4 + 42]
    return mac if len(mac) == 6 else b""


def _vids(octets: bytes) -> tuple:
    """The VLAN ids of tag octets, outermost first."""
    return tuple(((octets[i + 2] & 0xF) << 8) | octets[i + 3] for i in range(0, len(octets) - 3, 4))


def _gso(header: bytes, frame: bytes, cut: int, mtu: int, counter: _Counter) -> tuple | str:
    """A GSO super-frame read with virtio-net header `header` (its EtherType at `cut`): judged by its segments'
    size against `mtu` and counted in `counter` as its segments on the wire; (segments - 1, octets on the wire -
    len(frame)) for the outputs' counters, or the reason to drop it."""
    try:
        if vnet.segment_size(header, frame, cut) > mtu:
            return "oversize"
        segments, octets = vnet.on_wire(header, frame)
    except vnet.VnetError:
        return "malformed"
    counter.rx_frames += segments - 1
    counter.rx_bytes += octets - len(frame)
    return (segments - 1, octets - len(frame))


def _count_gso(counter, extra: tuple, delta: int) -> None:
    """The segments and header octets past the first of a GSO super-frame sent (`extra` from `_gso`) whose tags
    grew by `delta` octets (negative: shrank), added to `counter` (a _Counter, or a flow's [frames, bytes])."""
    if type(counter) is list:
        counter[0] += extra[0]
        counter[1] += extra[1] + extra[0] * delta
    else:
        counter.tx_frames += extra[0]
        counter.tx_bytes += extra[1] + extra[0] * delta


def _gso_kinds(kinds: list, counted: int, extra: tuple, header: bytes, delta: int = 0) -> None:
    """A GSO super-frame counted by kind as one frame of `counted` octets (its tags `delta` octets more than when its
    `header` was read; `extra` from `_gso`), counted as its segments on the wire instead: the full ones (their
    headers and `gso_size` octets of payload) and the last, each in its size bucket."""
    segments = extra[0] + 1
    headers = extra[1] // extra[0] + delta if extra[0] else 0
    full = headers + vnet.parse(header).gso_size
    last = counted + extra[1] + extra[0] * delta - extra[0] * full
    kinds[_SIZE_SLOT[counted] if counted < _SLOTS else KIND_LONGER] -= 1
    kinds[_SIZE_SLOT[full] if full < _SLOTS else KIND_LONGER] += segments - 1
    kinds[_SIZE_SLOT[last] if 0 <= last < _SLOTS else KIND_LONGER] += 1


def _whole(header: bytes, frame: bytes, delta: int) -> bytes | None:
    """`frame` (its tags `delta` octets more than when its header was read) with the checksum its header left to
    finish finished, for a destination that takes no header (the adapter); None for a GSO super-frame."""
    try:
        return vnet.completed(vnet.shifted(header, delta), frame)
    except vnet.VnetError:
        return None


def _link_local(frame: bytes) -> bool:
    """Whether `frame` (its first octet is 1) goes to a link-local group address, 01:80:c2:00:00:00-0f."""
    return frame[1] == 0x80 and frame[2] == 0xC2 and frame[3] == 0 and frame[4] == 0 and frame[5] < 16


def _foreign_tpid(tags, allowed) -> bool:
    """Whether a tag of `tags` ((tpid, tci) pairs) has a TPID not in `allowed`."""
    for tpid, _ in tags:
        if tpid not in allowed:
            return True
    return False


class _Counter:
    """Frames and bytes into (rx) and out of (tx) one interface, and drops by reason."""

    __slots__ = ("rx_frames", "rx_bytes", "tx_frames", "tx_bytes", "dropped", "rx_kinds", "tx_kinds")

    def __init__(self):
        self.rx_frames = self.rx_bytes = self.tx_frames = self.tx_bytes = 0
        self.dropped: dict[str, int] = {}
        self.rx_kinds = [0] * (KIND_LONGER + 1)       # a UNI's frames by kind (KIND_*), received and sent
        self.tx_kinds = [0] * (KIND_LONGER + 1)

    def drop(self, reason: str) -> None:
        self.dropped[reason] = self.dropped.get(reason, 0) + 1

    def as_dict(self) -> dict:
        return {"rx_frames": self.rx_frames, "rx_bytes": self.rx_bytes, "tx_frames": self.tx_frames,
                "tx_bytes": self.tx_bytes, "dropped": dict(self.dropped)}


def _sent_kind(counter: _Counter, frame: bytes) -> None:
    """Count a frame sent to a UNI (at least MIN_FRAME octets) by its kind."""
    n = len(frame)
    kinds = counter.tx_kinds
    kinds[_SIZE_SLOT[n] if n < _SLOTS else KIND_LONGER] += 1
    if frame[0] & 1:
        kinds[KIND_BROADCAST if frame[:6] == _BROADCAST else KIND_MULTICAST] += 1


class _Bound:
    """One bound UNI: its model objects, counters, and decisions compiled for the current configuration."""

    __slots__ = ("serial", "uni", "onu", "where", "counter", "generation", "part", "up_cache", "nni_tags",
                 "probe_tags", "last_src", "groups", "learned", "owned", "leases")

    def __init__(self, uni):
        self.uni = uni
        self.onu = uni.onu
        self.serial = uni.onu.serial
        self.where = f"uni {self.serial}/{uni.id}"
        self.counter = _Counter()
        self.generation = -1
        self.part = None
        self.up_cache: dict = {}
        #: the tags its frames last had on the tagged NNI (learned), for the untagged NNI's broadcasts
        self.nni_tags: bytes | None = None
        self.probe_tags: bytes | None = None
        #: the source MAC learned last, while the MAC table has it with this UNI and these tags (a move to another
        #: UNI, a forgotten entry, a configuration change clear it): the same again needs no learning
        self.last_src: bytes | None = None
        #: multicast groups (IPv4 addresses, 4 octets) its client joined (oltsim.dataplane.multicast)
        self.groups: set = set()
        #: the MACs learned from it, oldest first (at most MACS_PER_UNI)
        self.learned: dict[bytes, None] = {}
        #: the MACs its subscriber holds (a DHCP ACK or EAP Success delivered to it), oldest first
        self.owned: dict[bytes, None] = {}
        #: the IPv4 addresses DHCP ACKs delivered to it gave its clients, oldest first
        self.leases: dict[bytes, None] = {}


class DataPlane:
    """Carries Ethernet frames between bound UNIs and the NNI through the ONU's OMCI VLAN config and the OLT's
    flows.

    `olt` is the model's Olt; `clock` an IReactorTime (MAC entries learned are stamped with `clock.seconds()`);
    `engine` the ProtocolEngine (oltsim.packets.engine) whose simulated protocols step aside on a UNI bound here;
    `vlan_config` the `oltsim.omci.vlanconfig.VlanConfig` recording the OMCI the adapter wrote (None: one is made,
    but then nothing feeds it: pass the one wired in front of the OMCI responder); `capture`, when given, a callable
    `(where: str, direction: str, frame: bytes)` given every frame that enters ("uni <serial>/<uni>" / "nni" /
    "nni-untagged", direction "in") and leaves ("out"). `nni_tagged` / `nni_untagged` say which NNI interfaces
    exist: upstream frames produce `ToNni` and/or `ToNniUntagged` only for those. `mtu` is the NNI's (1500 by
    default; more for jumbo frames): a frame carrying more after its header and tags is dropped (`oversize`), never
    cut; frames shorter than 60 octets leave padded with zeros, as Ethernet carries them.

    All methods run on the reactor thread and never raise for a frame: a bad frame is a `Dropped` output.
    Call `close` to stop listening to the OLT and the OMCI record.
    """

    def __init__(self, olt, clock, *, engine=None, capture=None, vlan_config=None, nni_tagged: bool = True,
                 nni_untagged: bool = True, mtu: int = DEFAULT_MTU):
        self.olt = olt
        self.clock = clock
        self.capture = capture
        self.vlan_config = vlan_config if vlan_config is not None else VlanConfig()
        self.nni_tagged = nni_tagged
        self.nni_untagged = nni_untagged
        self.engine = engine
        self.mtu = mtu
        #: the longest frame without tags the NNI carries: its header, its EtherType and the MTU
        self._max_plain = 14 + mtu
        self._bound: dict[tuple[str, int], _Bound] = {}
        #: bumped by any change a cached decision may depend on (flows, OMCI, bindings, ONU ids)
        self._generation = 0
        self._flows = FlowTable()
        #: the flow table is rebuilt only when flows changed (not for every OMCI change)
        self._flows_dirty = True
        self._down_cache: dict = {}
        self._down_generation = -1
        self._macs: dict[bytes, tuple[_Bound, bytes, float]] = {}
        #: MAC -> the bound UNI whose subscriber holds it: frames from it on any other UNI are dropped (mac-spoof)
        self._owners: dict[bytes, _Bound] = {}
        #: IPv4 address (4 octets) -> the bound UNI whose client was ACKed it: ARP requests for it go there only
        self._leases: dict[bytes, _Bound] = {}
        self._tuples: dict[bytes, tuple] = {}
        self._nni = _Counter()
        self._nni_untagged = _Counter()
        self._unsubscribe = [olt.subscribe(self._on_event), self.vlan_config.subscribe(self._on_config)]

    def close(self) -> None:
        """Stop following the OLT's events and the OMCI record (the service stopping)."""
        for unsubscribe in self._unsubscribe:
            unsubscribe()
        self._unsubscribe = []

    # ---- configuration changes ----------------------------------------------------------------------------------

    def _on_event(self, event) -> None:
        kind = type(event)
        if kind is events.FlowChanged:
            self._flows_dirty = True
            self._generation += 1
        elif kind is events.OnuIndication:
            self._generation += 1
        elif kind is events.StateChanged and event.attribute == "InternalState" and event.device in ("onu", "olt"):
            # a disabled ONU's flows, or a rebooted OLT's, are forgotten without a FlowChanged each
            self._flows_dirty = True
            self._generation += 1
            if event.device == "onu" and event.dest not in ACTIVE_STATES:
                # the group membership went with the ONU (as a real OLT's goes with the port): its client joins
                # again when it reports after the ONU is back
                key = serial_key(event.serial)
                for bound in self._bound.values():
                    if serial_key(bound.serial) == key:
                        bound.groups.clear()

    def _on_config(self, serial: str) -> None:
        key = serial_key(serial)
        for bound in self._bound.values():
            if serial_key(bound.serial) == key:
                bound.part = None           # only this ONU's part is compiled again
        self._generation += 1

    def _flow_table(self) -> FlowTable:
        if self._flows_dirty:
            self._flows.refresh(self.olt.flows.all())
            self._flows_dirty = False
        return self._flows

    def _compiled(self, bound: _Bound) -> _Bound:
        if bound.generation != self._generation:
            if bound.part is None:
                bound.part = compile_onu_part(self.vlan_config.record(bound.serial), bound.uni.me_id)
            bound.up_cache = {}
            bound.probe_tags = None
            bound.last_src = None
            bound.generation = self._generation
        return bound

    # ---- binding ------------------------------------------------------------------------------------------------

    def bind_uni(self, serial: str, uni_id: int) -> None:
        """The UNI now has a real interface: its simulated supplicant and DHCP client step aside (attempts under way
        are abandoned, flows no longer start them) and its service states follow the frames seen (EAP Success,
        DHCP ACK). Binding a bound UNI again changes nothing. NotFound for an unknown serial or UNI."""
        onu = self.olt.onu_by_serial(serial)
        if not isinstance(uni_id, int) or not 0 <= uni_id < len(onu.unis) or onu.unis[uni_id].kind != "ETH":
            raise NotFound(f"UNI {uni_id} not found on ONU {onu.serial} (it has Ethernet UNIs "
                           f"{', '.join(str(u.id) for u in onu.eth_unis) or 'none'})")
        uni = onu.unis[uni_id]
        if (onu.serial, uni_id) in self._bound:
            return                         # bound already: its counters and learned addresses stay
        bound = _Bound(uni)
        self._bound[(onu.serial, uni_id)] = bound
        self._bound[(serial_key(onu.serial), uni_id)] = bound
        self._generation += 1              # downstream decisions name the bound UNI
        if self.engine is not None:
            self.engine.hand_over(uni)
        log.info("dataplane-uni-bound serial={serial} uni={uni}", serial=onu.serial, uni=uni_id)

    def unbind_uni(self, serial: str, uni_id: int) -> None:
        """The UNI's interface is gone: today's simulated protocols drive it again (from the next flow added)."""
        bound = self._lookup(serial, uni_id)
        if bound is None:
            return
        for key in [k for k, b in self._bound.items() if b is bound]:
            del self._bound[key]
        self._generation += 1
        for mac in [m for m, entry in self._macs.items() if entry[0] is bound]:
            del self._macs[mac]
        for mac in bound.owned:
            self._owners.pop(mac, None)
        for address in bound.leases:
            self._leases.pop(address, None)
        if self.engine is not None:
            self.engine.take_back(bound.uni)
        log.info("dataplane-uni-unbound serial={serial} uni={uni}", serial=bound.serial, uni=uni_id)

    def bound(self) -> list[tuple[str, int]]:
        """(serial, UNI id) of every bound UNI."""
        return sorted({(b.serial, b.uni.id) for b in self._bound.values()})

    def _lookup(self, serial: str, uni_id: int):
        bound = self._bound.get((serial, uni_id))
        if bound is None and type(serial) is str:
            bound = self._bound.get((serial_key(serial), uni_id))
        return bound

    # ---- upstream -----------------------------------------------------------------------------------------------

    def from_uni(self, serial: str, uni_id: int, frame: bytes, header: bytes | None = None) -> list:
        """A frame the RG sent on the UNI's interface: upstream through EVTOCD, filter, GEM, then the OLT's flows:
        `ToNni`/`ToNniUntagged`, `PacketIn`, or `Dropped`. `header`: the frame's virtio-net header (a checksum to
        finish, a GSO super-frame; `oltsim.dataplane.vnet`), which its outputs carry adjusted to their tags (a
        trapped frame's checksum is finished; a trapped super-frame is dropped)."""
        bound = self._bound.get((serial, uni_id)) or self._lookup(serial, uni_id)
        if bound is None:
            return [Dropped(f"uni {serial}/{uni_id}", "not-bound")]
        counter = bound.counter
        counter.rx_frames += 1
        if type(frame) is not bytes:
            counter.drop("malformed")
            return [Dropped(bound.where, "malformed")]
        n = len(frame)
        counter.rx_bytes += n
        kinds = counter.rx_kinds
        kinds[_SIZE_SLOT[n] if n < _SLOTS else KIND_LONGER] += 1
        if n > 5 and frame[0] & 1:
            kinds[KIND_BROADCAST if frame[:6] == _BROADCAST else KIND_MULTICAST] += 1
        if self.capture is not None:
            self.capture(bound.where, "in", frame)
        onu = bound.onu
        if onu.state not in ACTIVE_STATES:
            counter.drop("onu-not-active")
            return [Dropped(bound.where, "onu-not-active")]
        if bound.uni.state != "up":
            counter.drop("uni-down")
            return [Dropped(bound.where, "uni-down")]
        peeled = peel(frame)
        if peeled is None:
            counter.drop("malformed")
            return [Dropped(bound.where, "malformed")]
        old_tags, tags, ethertype, proto, ports = peeled
        size = len(frame) - len(old_tags)          # the frame as on the untagged NNI
        gso = None
        if header is not None and header[1]:
            gso = _gso(header, frame, 12 + len(old_tags), self.mtu, counter)
            if type(gso) is str:
                counter.drop(gso)
                return [Dropped(bound.where, gso)]
            if gso[0]:
                _gso_kinds(kinds, n, gso, header)
        elif size > self._max_plain:
            counter.drop("oversize")
            return [Dropped(bound.where, "oversize")]
        src = frame[6:12]
        if src != bound.last_src:
            # (the UNI's last source is in the MAC table with it, so no other UNI holds it)
            owner = self._owners.get(src)
            if owner is not None and owner is not bound:
                counter.drop("mac-spoof")
                return [Dropped(bound.where, "mac-spoof")]
        if bound.generation != self._generation:
            self._compiled(bound)
        if self._flows_dirty:
            self._flow_table()
        key = (old_tags, ethertype, proto, ports if proto == IP_UDP or self._flows.uses_ports else b"")
        decision = bound.up_cache.get(key)
        if decision is None:
            decision = self._decide_up(bound, tags, ethertype, proto, ports)
            cache = bound.up_cache
            if len(cache) >= CACHE_LIMIT:
                cache.clear()
            cache[key] = decision
        verdict = decision[0]
        if verdict == _DROP:
            counter.drop(decision[1])
            return [Dropped(bound.where, decision[1])]
        if verdict == _FORWARD:
            if frame[0] == 1 and _link_local(frame):
                counter.drop("link-local")
                return [Dropped(bound.where, "link-local")]
            if ethertype == ETH_EAPOL:
                counter.drop("eapol")
                return [Dropped(bound.where, "eapol")]
        _, onu_tags, out_tags, flow, gem, watch, vid = decision
        cut = 12 + len(old_tags)
        if watch == _STATES:
            # the client MAC an EAPOL or DHCP frame speaks for: another subscriber's is not relayed (a DHCPRELEASE
            # of its lease); one that is not this subscriber's moves no service state of it
            client = _chaddr(frame, cut) if proto == IP_UDP else src
            owner = self._owners.get(client)
            if owner is not None and owner is not bound:
                counter.drop("dhcp-client")
                return [Dropped(bound.where, "dhcp-client")]
            if bound.owned and client not in bound.owned:
                watch = 0
        flow_counter = flow.counter
        flow_counter[0] += 1
        flow_counter[1] += len(frame) - len(old_tags) + len(onu_tags)
        if gso is not None:
            _count_gso(flow_counter, gso, len(onu_tags) - len(old_tags))
        if watch or verdict == _TRAP:
            at_olt = frame[:12] + onu_tags + frame[cut:]
            if header is not None and verdict == _TRAP:
                at_olt = _whole(header, at_olt, len(onu_tags) - len(old_tags))
                if at_olt is None:
                    counter.drop("gso-unsupported")
                    return [Dropped(bound.where, "gso-unsupported")]
            if watch == _STATES:
                states.follow_upstream(bound.uni, at_olt, vid)
            elif watch == _IGMP:
                multicast.apply(bound.groups, at_olt)
            if verdict == _TRAP:
                uni = bound.uni
                indication = events.PacketIndication("pon", onu.pon.id, at_olt, onu.onu_id, uni.id, gem,
                                                     uni.port_no)
                self.olt.emit(indication)
                if src != bound.last_src and src not in bound.learned:
                    # a client that has sent only trapped frames (a DHCP Discover) is answered by unicast on the
                    # untagged NNI (dnsmasq's Offer): it is found by the tags its forwarded frames would have (an
                    # RG moved here from another UNI is found here from its first Discover); a tagged RG's (TT, DT)
                    # by those its frames of this VLAN would have
                    learned = self._probe(bound)
                    if not learned and old_tags:
                        probe = self._decide_up(bound, tags, 0x0800, -1, b"")
                        learned = probe[2] if probe[0] == _FORWARD else b""
                    if learned:
                        self._learn(src, bound, learned)
                return [PacketIn(indication, flow.flow_id)]
        out = []
        queue = (_UP, onu, flow.alloc_id, flow.gemport_id if gem is None else gem)   # the GEM port's queue
        if self.nni_tagged:
            tagged = frame[:12] + out_tags + frame[cut:]
            if size < MIN_FRAME:
                tagged += _PAD[len(tagged):]
            nni = self._nni
            nni.tx_frames += 1
            nni.tx_bytes += len(tagged)
            if tagged[0] & 1:
                nni.tx_kinds[KIND_BROADCAST if tagged[:6] == _BROADCAST else KIND_MULTICAST] += 1
            if self.capture is not None:
                self.capture("nni", "out", tagged)
            if header is None:
                out.append(ToNni(tagged, queue))
            else:
                delta = len(out_tags) - len(old_tags)
                out.append(ToNniWithHeader(tagged, queue, vnet.shifted(header, delta)))
                if gso is not None:
                    _count_gso(nni, gso, delta)
        if self.nni_untagged:
            plain = frame[:12] + frame[cut:] if old_tags else frame
            if size < MIN_FRAME:
                plain += _PAD[len(plain):]
            nni = self._nni_untagged
            nni.tx_frames += 1
            nni.tx_bytes += len(plain)
            if plain[0] & 1:
                nni.tx_kinds[KIND_BROADCAST if plain[:6] == _BROADCAST else KIND_MULTICAST] += 1
            if self.capture is not None:
                self.capture("nni-untagged", "out", plain)
            if header is None:
                out.append(ToNniUntagged(plain, queue))
            else:
                out.append(ToNniUntaggedWithHeader(plain, queue, vnet.shifted(header, -len(old_tags))))
                if gso is not None:
                    _count_gso(nni, gso, -len(old_tags))
        if src != bound.last_src:
            self._learn(src, bound, out_tags)
        if not out:
            counter.drop("no-nni")
            return [Dropped(bound.where, "no-nni")]
        return out

    def _decide_up(self, bound: _Bound, tags, ethertype: int, proto: int, ports: bytes) -> tuple:
        """The decision for frames of one signature from one UNI: (_DROP, reason) or (verdict, tag octets at the
        OLT, tag octets on the NNI, flow, GEM port, watch states?, outer VID at the OLT)."""
        if ethertype in TPIDS or _foreign_tpid(tags, bound.part.tpids):
            return (_DROP, "tpid")
        onu_tags, gem, reason = bound.part.upstream(tags, ethertype)
        if reason is not None:
            return (_DROP, reason)
        onu, uni = bound.onu, bound.uni
        sport, dport = ports_of(ports)
        flow = self._flows.first_upstream(onu.pon.id, onu.onu_id, uni.id, onu_tags, ethertype, proto, sport, dport,
                                          gem)
        if flow is None:
            return (_DROP, "no-flow")
        watch = _STATES if ethertype == ETH_EAPOL or is_dhcp(proto, ports) else (_IGMP if proto == IP_IGMP else 0)
        vid = onu_tags[0][1] & 0xFFF if onu_tags else None
        if flow.trap:
            return (_TRAP, tags_bytes(onu_tags), b"", flow, gem if gem is not None else flow.gemport_id, watch, vid)
        return (_FORWARD, tags_bytes(onu_tags), tags_bytes(flow.apply(onu_tags)), flow, gem, watch, vid)

    def _learn(self, mac: bytes, bound: _Bound, out_tags: bytes) -> None:
        if mac[0] & 1:
            return
        bound.nni_tags = out_tags
        bound.last_src = mac
        macs = self._macs
        entry = macs.get(mac)
        if entry is not None and entry[0] is bound and entry[1] == out_tags:
            return
        if entry is not None and entry[0] is not bound:
            entry[0].learned.pop(mac, None)          # moved to this UNI: the other learns it again from its next frame
            if entry[0].last_src == mac:
                entry[0].last_src = None
        learned = bound.learned
        if mac not in learned and len(learned) >= MACS_PER_UNI:
            self._forget_mac(next(iter(learned)))
        if entry is None and len(macs) >= MAC_LIMIT:
            self._forget_mac(next(iter(macs)))
        macs[mac] = (bound, out_tags, self.clock.seconds())
        learned[mac] = None

    def _forget_mac(self, mac: bytes) -> None:
        """Forget a learned MAC (the table is full): its UNI learns it again from its next frame from it."""
        entry = self._macs.pop(mac, None)
        if entry is not None:
            entry[0].learned.pop(mac, None)
            if entry[0].last_src == mac:
                entry[0].last_src = None

    def _claim(self, bound: _Bound, frame: bytes) -> None:
        """An EAP-Success or a DHCP ACK delivered to the UNI: the client's MAC (the frame's destination, the ACK's
        client MAC) is its subscriber's from now on, as an OLT's anti-spoofing binds a lease to its port; the MAC
        table follows at once. Never raises."""
        try:
            decoded = f.decode(frame)
        except f.PacketError:
            return
        if decoded.kind == "eapol" and decoded.eap is not None and decoded.eap.code == f.EAP_SUCCESS:
            mac = decoded.eth.dst
        elif decoded.kind == "dhcp" and decoded.dhcp is not None and decoded.dhcp.message_type == f.DHCP_ACK:
            mac = decoded.dhcp.client_mac
            self._lease(bound, decoded.dhcp.yiaddr)
        else:
            return
        if len(mac) != 6 or mac[0] & 1:
            return
        owner = self._owners.get(mac)
        if owner is not bound:
            if owner is not None:
                owner.owned.pop(mac, None)
                log.info("dataplane-mac-moved mac={mac} from={old} to={new}", mac=f.mac_str(mac), old=owner.where,
                         new=bound.where)
            owned = bound.owned
            if len(owned) >= OWNED_PER_UNI:
                oldest = next(iter(owned))
                del owned[oldest]
                self._owners.pop(oldest, None)
            owned[mac] = None
            self._owners[mac] = bound
        entry = self._macs.get(mac)
        if entry is not None and entry[0] is not bound:
            tags = bound.nni_tags if bound.nni_tags is not None else self._probe(bound)
            if tags:
                self._learn(mac, bound, tags)
            else:
                self._forget_mac(mac)

    def _lease(self, bound: _Bound, address: bytes) -> None:
        """The address a DHCP ACK delivered to the UNI gave its client (0.0.0.0, an INFORM's ACK: none)."""
        if len(address) != 4 or address == bytes(4):
            return
        old = self._leases.get(address)
        if old is bound:
            return
        if old is not None:
            old.leases.pop(address, None)
        leases = bound.leases
        if len(leases) >= OWNED_PER_UNI:
            oldest = next(iter(leases))
            del leases[oldest]
            self._leases.pop(oldest, None)
        leases[address] = None
        self._leases[address] = bound

    def _holder(self, mac):
        """The bound UNI a client MAC is with: the one holding it (lease, EAP success), else the one it was learned
        from; None when unknown."""
        owner = self._owners.get(mac)
        if owner is not None:
            return owner
        entry = self._macs.get(mac)
        return entry[0] if entry is not None else None

    def _answered_elsewhere(self, bound: _Bound, frame: bytes, cut: int) -> bool:
        """Whether a DHCP message towards `bound` is for a client MAC that is with another UNI."""
        holder = self._holder(_chaddr(frame, cut))
        return holder is not None and holder is not bound

    def _foreign_tags(self, frame: bytes, cut: int, tags: bytes) -> bool:
        """Whether a DHCP answer from the NNI (its tags as on the tagged NNI: `tags`) is for a client MAC that is
        with a UNI whose frames leave the NNI under other VLANs (a foreign S-tag over its C-tag)."""
        holder = self._holder(_chaddr(frame, cut))
        if holder is None:
            return False
        expected = holder.nni_tags if holder.nni_tags is not None else self._probe(holder)
        return bool(expected) and _vids(expected) != _vids(tags)

    def owners(self) -> dict[str, str]:
        """The MACs bound subscribers hold (by a DHCP ACK or EAP Success delivered to them): {mac: "<serial>/<uni>"}."""
        return {f.mac_str(mac): f"{bound.serial}/{bound.uni.id}" for mac, bound in self._owners.items()}

    def macs(self) -> dict[str, dict]:
        """The MAC addresses learned from upstream frames: {mac: {"serial", "uni_id", "tags" (hex), "since"}}."""
        return {":".join(f"{b:02x}" for b in mac): {"serial": bound.serial, "uni_id": bound.uni.id,
                                                     "tags": tags.hex(), "since": since}
                for mac, (bound, tags, since) in self._macs.items()}

    # ---- downstream ---------------------------------------------------------------------------------------------

    def from_nni(self, frame: bytes, header: bytes | None = None) -> list:
        """A frame as on a real NNI (S-tag, C-tag): a downstream flow pops or translates, the ONU's EVTOCD reverses
        its rule: `ToUni`, `PacketIn` (NNI trap flows), or `Dropped`. Group traffic a multicast flow takes: `ToUni`
        for each bound UNI that joined the group. `header` as `from_uni`'s."""
        nni = self._nni
        nni.rx_frames += 1
        if type(frame) is not bytes:
            nni.drop("malformed")
            return [Dropped("nni", "malformed")]
        nni.rx_bytes += len(frame)
        if len(frame) > 5 and frame[0] & 1:
            nni.rx_kinds[KIND_BROADCAST if frame[:6] == _BROADCAST else KIND_MULTICAST] += 1
        if self.capture is not None:
            self.capture("nni", "in", frame)
        return self._down(frame, "nni", nni, b"", header)

    def _down(self, frame: bytes, where: str, counter: _Counter, insert: bytes = b"",
              header: bytes | None = None) -> list:
        """The downstream path of `frame`; `insert` (from the untagged NNI) are tags as on the tagged NNI that go in
        front of the frame's own: the frame is decided as if it had them, without copying it to add them. `header`:
        its virtio-net header (`from_uni`)."""
        peeled = peel(frame)
        if peeled is None:
            counter.drop("malformed")
            return [Dropped(where, "malformed")]
        old_tags, tags, ethertype, proto, ports = peeled
        cut = 12 + len(old_tags)
        gso = None
        if header is not None and header[1]:
            gso = _gso(header, frame, cut, self.mtu, counter)
            if type(gso) is str:
                counter.drop(gso)
                return [Dropped(where, gso)]
        elif len(frame) - cut - 2 > self.mtu:
            counter.drop("oversize")
            return [Dropped(where, "oversize")]
        if insert:
            old_tags = insert + old_tags
            tags = (self._tag_tuple(insert) + tags)[:MAX_TAGS]
        if frame[0] == 1 and frame[1] == 0 and frame[2] == 0x5E and ethertype == 0x0800:
            flows = self._flow_table()
            if flows.multicast and not _foreign_tpid(tags, flows.nni_tpids):
                group = frame[cut + 18:cut + 22]          # the IPv4 header starts 2 octets after the tags
                flow = flows.first_multicast(tags, ethertype, proto, group)
                if flow is not None:
                    if header is not None:
                        frame = _whole(header, frame, 0)
                        if frame is None:
                            counter.drop("gso-unsupported")
                            return [Dropped(where, "gso-unsupported")]
                    return self._replicate(frame, cut, len(insert), flow, group, where, counter)
        if self._down_generation != self._generation:
            self._flow_table()
            self._down_cache = {}
            self._down_generation = self._generation
        key = (old_tags, ethertype, proto, ports if proto == IP_UDP or self._flows.uses_ports else b"")
        decision = self._down_cache.get(key)
        if decision is None:
            decision = self._decide_down(tags, ethertype, proto, ports)
            if len(self._down_cache) >= CACHE_LIMIT:
                self._down_cache.clear()
            self._down_cache[key] = decision
        verdict = decision[0]
        if frame[0] == 1 and verdict != _TRAP and _link_local(frame):
            counter.drop("link-local")
            return [Dropped(where, "link-local")]
        if verdict == _FORWARD and ethertype == ETH_EAPOL:
            counter.drop("eapol")
            return [Dropped(where, "eapol")]
        if verdict == _FORWARD:
            _, flow, bound, reason, uni_tags, watch, vid = decision
            flow.counter[0] += 1
            flow.counter[1] += len(frame) + len(insert)
            if gso is not None:
                _count_gso(flow.counter, gso, len(insert))
            bcounter = bound.counter
            if bound.onu.state not in ACTIVE_STATES:
                reason = "onu-not-active"
            elif bound.uni.state != "up":
                reason = "uni-down"
            if reason is not None:
                bcounter.drop(reason)
                return [Dropped(bound.where, reason)]
            # untagged both at the NNI and at the UNI (from the untagged NNI): the frame as it came, not a copy of
            # its 64 KiB when it is a super-frame
            out = frame if cut == 12 and not uni_tags else frame[:12] + uni_tags + frame[cut:]
            if len(out) < MIN_FRAME:
                out += _PAD[len(out):]
            if watch and proto == IP_UDP and self._answered_elsewhere(bound, frame, cut):
                bcounter.drop("dhcp-client")
                return [Dropped(bound.where, "dhcp-client")]
            octets = len(out)
            bcounter.tx_frames += 1
            bcounter.tx_bytes += octets
            kinds = bcounter.tx_kinds            # _sent_kind inline (a call costs a third more here)
            kinds[_SIZE_SLOT[octets] if octets < _SLOTS else KIND_LONGER] += 1
            if out[0] & 1:
                kinds[KIND_BROADCAST if out[:6] == _BROADCAST else KIND_MULTICAST] += 1
            if self.capture is not None:
                self.capture(bound.where, "out", out)
            if watch:
                states.follow_downstream(bound.uni, out, vid)
                self._claim(bound, out)
            if header is not None:
                delta = len(uni_tags) - (cut - 12)
                header = vnet.shifted(header, delta)
                if gso is not None:
                    _count_gso(bcounter, gso, delta)
                    if gso[0]:
                        _gso_kinds(kinds, octets, gso, header, delta)
            made = ToUni(bound.serial, bound.uni.id, out, (_DOWN, bound.onu, bound.uni.id, flow.alloc_id,
                                                           flow.gemport_id))
            return [made] if header is None else [ToUniWithHeader(made.serial, made.uni_id, out, made.queue, header)]
        if verdict == _DROP:
            _, reason, bound = decision
            if bound is not None:
                bound.counter.drop(reason)
                return [Dropped(bound.where, reason)]
            counter.drop(reason)
            return [Dropped(where, reason)]
        flow = decision[1]
        if proto == IP_UDP and is_dhcp(proto, ports) and self._foreign_tags(frame, cut, old_tags):
            counter.drop("foreign-tag")
            return [Dropped(where, "foreign-tag")]
        if insert:
            frame = frame[:12] + insert + frame[12:]
        if header is not None:
            frame = _whole(header, frame, len(insert))
            if frame is None:
                counter.drop("gso-unsupported")
                return [Dropped(where, "gso-unsupported")]
        flow.counter[0] += 1
        flow.counter[1] += len(frame)
        indication = events.PacketIndication("nni", flow.network_intf_id if flow.network_intf_id >= 0 else 0, frame)
        self.olt.emit(indication)
        return [PacketIn(indication, flow.flow_id)]

    def _replicate(self, frame: bytes, cut: int, inserted: int, flow, group: bytes, where: str,
                   counter: _Counter) -> list:
        """A multicast flow's group frame to every bound UNI whose client joined the group, without the group's
        VLAN tags (the ONU's multicast operations take them off)."""
        flow.counter[0] += 1
        flow.counter[1] += len(frame) + inserted
        plain = frame[:12] + frame[cut:]
        if len(plain) < MIN_FRAME:
            plain += _PAD[len(plain):]
        out = []
        for bound in self._members():
            if group in bound.groups and bound.onu.state in ACTIVE_STATES and bound.uni.state == "up":
                bound.counter.tx_frames += 1
                bound.counter.tx_bytes += len(plain)
                _sent_kind(bound.counter, plain)
                if self.capture is not None:
                    self.capture(bound.where, "out", plain)
                out.append(ToUni(bound.serial, bound.uni.id, plain))
        if not out:
            counter.drop("no-member")
            return [Dropped(where, "no-member")]
        return out

    def _members(self) -> list:
        """Every bound UNI once."""
        return list({id(b): b for b in self._bound.values()}.values())

    def _decide_down(self, tags, ethertype: int, proto: int, ports: bytes) -> tuple:
        """The decision for frames of one signature from the NNI: (_DROP, reason, bound UNI or None),
        (_TRAP, flow) or (_FORWARD, flow, bound UNI, drop reason at the ONU or None, tag octets at the UNI, watch
        states?, outer VID before the ONU)."""
        if ethertype in TPIDS or _foreign_tpid(tags, self._flows.nni_tpids):
            return (_DROP, "tpid", None)
        sport, dport = ports_of(ports)
        flow = self._flows.first_downstream(tags, ethertype, proto, sport, dport)
        if flow is None:
            return (_DROP, "no-flow", None)
        if flow.trap:
            return (_TRAP, flow)
        serial = self.olt.onu_serial_at(flow.pon, flow.onu_id)
        bound = self._lookup(serial, flow.uni_id) if serial else None
        if bound is None:
            return (_DROP, "not-bound" if serial else "no-flow", None)
        if bound.generation != self._generation:
            self._compiled(bound)
        olt_tags = flow.apply(tags)
        uni_tags, reason = bound.part.downstream(olt_tags, ethertype)
        watch = ethertype == ETH_EAPOL or is_dhcp(proto, ports)
        return (_FORWARD, flow, bound, reason, tags_bytes(uni_tags) if reason is None else b"", watch,
                olt_tags[0][1] & 0xFFF if olt_tags else None)

    def _to_uni(self, bound: _Bound, frame: bytes, old_tags: bytes, olt_tags, ethertype: int, proto: int,
                ports: bytes) -> list:
        """The ONU's downstream part for a frame that left the OLT with `olt_tags`, then the UNI."""
        counter = bound.counter
        if bound.onu.state not in ACTIVE_STATES:
            counter.drop("onu-not-active")
            return [Dropped(bound.where, "onu-not-active")]
        if bound.uni.state != "up":
            counter.drop("uni-down")
            return [Dropped(bound.where, "uni-down")]
        if bound.generation != self._generation:
            self._compiled(bound)
        cache_key = ("down", olt_tags, ethertype)
        decision = bound.up_cache.get(cache_key)
        if decision is None:
            uni_tags, reason = bound.part.downstream(olt_tags, ethertype)
            decision = (reason, tags_bytes(uni_tags) if reason is None else b"")
            if len(bound.up_cache) >= CACHE_LIMIT:
                bound.up_cache.clear()
            bound.up_cache[cache_key] = decision
        reason, uni_tags = decision
        if reason is not None:
            counter.drop(reason)
            return [Dropped(bound.where, reason)]
        dhcp = is_dhcp(proto, ports)
        if dhcp and self._answered_elsewhere(bound, frame, 12 + len(old_tags)):
            counter.drop("dhcp-client")
            return [Dropped(bound.where, "dhcp-client")]
        out = frame[:12] + uni_tags + frame[12 + len(old_tags):]
        if len(out) < MIN_FRAME:
            out += _PAD[len(out):]
        octets = len(out)
        counter.tx_frames += 1
        counter.tx_bytes += octets
        kinds = counter.tx_kinds                 # _sent_kind inline (a call costs a third more here)
        kinds[_SIZE_SLOT[octets] if octets < _SLOTS else KIND_LONGER] += 1
        if out[0] & 1:
            kinds[KIND_BROADCAST if out[:6] == _BROADCAST else KIND_MULTICAST] += 1
        if self.capture is not None:
            self.capture(bound.where, "out", out)
        if ethertype == ETH_EAPOL or dhcp:
            states.follow_downstream(bound.uni, out, olt_tags[0][1] & 0xFFF if olt_tags else None)
            self._claim(bound, out)
        return [ToUni(bound.serial, bound.uni.id, out)]

    def from_nni_untagged(self, frame: bytes, header: bytes | None = None) -> list:
        """A frame from the untagged NNI: matched back to its subscriber by the learned destination MAC (broadcast
        and multicast: to every bound UNI, with the tags its frames carry on the tagged NNI, learned or worked out
        from its configuration; an ARP request for an address a DHCP ACK gave a bound UNI's client: to that UNI
        only), then handled as `from_nni` (`header` too). IPv4 group traffic a multicast flow names goes in that
        flow's VLAN (to the UNIs that joined)."""
        counter = self._nni_untagged
        counter.rx_frames += 1
        if type(frame) is not bytes or len(frame) < 14 or (frame[12] in _TPID_FIRST and peel(frame) is None):
            counter.drop("malformed")
            return [Dropped("nni-untagged", "malformed")]
        counter.rx_bytes += len(frame)
        if frame[0] & 1:
            counter.rx_kinds[KIND_BROADCAST if frame[:6] == _BROADCAST else KIND_MULTICAST] += 1
        if self.capture is not None:
            self.capture("nni-untagged", "in", frame)
        if frame[12] in _TPID_FIRST:
            peeled = peel(frame)
            if peeled[2] in TPIDS or _foreign_tpid(peeled[1], self._flow_table().nni_tpids):
                counter.drop("tpid")
                return [Dropped("nni-untagged", "tpid")]
        if frame[0] == 1 and frame[1] == 0 and frame[2] == 0x5E:
            # group traffic: as it would come on the tagged NNI, in the VLAN of the multicast flow for its group
            group = frame[30:34]
            for flow in self._flow_table().multicast:
                if not flow.dst_ip or flow.dst_ip == group:
                    return self._down(frame, "nni-untagged", counter, tags_bytes((tag(flow.o_vid),)) if flow.o_vid
                                      else b"", header)
        if frame[0] == 1 and _link_local(frame):
            # not for any subscriber: only an NNI trap flow (LLDP) takes it, as it came
            return self._down(frame, "nni-untagged", counter, b"", header)
        if frame[0] & 1:
            if frame[12] == 8 and frame[13] == 6 and len(frame) >= 42 and self._leases:
                # an ARP request for a leased address: to its subscriber only, as within its VLAN
                holder = self._leases.get(frame[38:42])
                if holder is not None:
                    tags = holder.nni_tags if holder.nni_tags is not None else self._probe(holder)
                    if tags:
                        return self._down(frame, "nni-untagged", counter, tags, header)
            out, seen = [], set()
            for bound in {id(b): b for b in self._bound.values()}.values():
                tags = bound.nni_tags if bound.nni_tags is not None else self._probe(bound)
                if not tags or tags in seen:
                    continue
                seen.add(tags)
                out.extend(o for o in self._down(frame, "nni-untagged", counter, tags, header)
                           if type(o) is not Dropped)
            if not seen:
                # no bound UNI forwards (none yet, or none with a flow): nobody to take it
                counter.drop("no-subscriber")
                return [Dropped("nni-untagged", "no-subscriber")]
            return out
        entry = self._macs.get(frame[0:6])
        if entry is None:
            counter.drop("no-subscriber")
            return [Dropped("nni-untagged", "no-subscriber")]
        return self._down(frame, "nni-untagged", counter, entry[1], header)

    def _tag_tuple(self, octets: bytes) -> tuple:
        """`(tpid, tci)` pairs of tag octets (cached: a handful of distinct tag stacks)."""
        tags = self._tuples.get(octets)
        if tags is None:
            tags = tuple((int.from_bytes(octets[i:i + 2], "big"), int.from_bytes(octets[i + 2:i + 4], "big"))
                         for i in range(0, len(octets) - 3, 4))
            if len(self._tuples) >= CACHE_LIMIT:
                self._tuples.clear()
            self._tuples[octets] = tags
        return tags

    def _probe(self, bound: _Bound) -> bytes:
        """The tags an untagged IPv4 frame from the UNI would have on the tagged NNI (b"" when it is not
        forwarded)."""
        if bound.generation != self._generation:
            self._compiled(bound)
        if bound.probe_tags is None:
            self._flow_table()
            decision = self._decide_up(bound, (), 0x0800, -1, b"")
            bound.probe_tags = decision[2] if decision[0] == _FORWARD else b""
        return bound.probe_tags

    # ---- the adapter's packets ----------------------------------------------------------------------------------

    def uplink_packet_out(self, intf_id: int, frame: bytes) -> list:
        """UplinkPacketOut from the adapter: out of the NNI interfaces as it is (`ToNni`, `ToNniUntagged` with its
        tags removed)."""
        peeled = peel(frame) if type(frame) is bytes else None
        if peeled is None:
            self._nni.drop("malformed")
            return [Dropped("nni", "malformed")]
        out = []
        plain = frame[:12] + frame[12 + len(peeled[0]):]
        if len(frame) < MIN_FRAME:
            frame += _PAD[len(frame):]
        if len(plain) < MIN_FRAME:
            plain += _PAD[len(plain):]
        if self.nni_tagged:
            self._nni.tx_frames += 1
            self._nni.tx_bytes += len(frame)
            if frame[0] & 1:
                self._nni.tx_kinds[KIND_BROADCAST if frame[:6] == _BROADCAST else KIND_MULTICAST] += 1
            if self.capture is not None:
                self.capture("nni", "out", frame)
            out.append(ToNni(frame))
        if self.nni_untagged:
            self._nni_untagged.tx_frames += 1
            self._nni_untagged.tx_bytes += len(plain)
            if plain[0] & 1:
                self._nni_untagged.tx_kinds[KIND_BROADCAST if plain[:6] == _BROADCAST else KIND_MULTICAST] += 1
            if self.capture is not None:
                self.capture("nni-untagged", "out", plain)
            out.append(ToNniUntagged(plain))
        return out

    def onu_packet_out(self, serial: str, uni_id: int, gemport_id: int, frame: bytes) -> list:
        """OnuPacketOut to a bound UNI: the frame as the OLT hands it to the ONU, through the EVTOCD reverse
        operation to the UNI (`ToUni`), or `Dropped`."""
        bound = self._lookup(serial, uni_id)
        if bound is None:
            return [Dropped(f"uni {serial}/{uni_id}", "not-bound")]
        peeled = peel(frame) if type(frame) is bytes else None
        if peeled is None:
            bound.counter.drop("malformed")
            return [Dropped(bound.where, "malformed")]
        return self._to_uni(bound, frame, *peeled)

    # ---- counters -----------------------------------------------------------------------------------------------

    def counters(self) -> dict:
        """Frames and bytes forwarded and dropped, by reason:
        `{"unis": {"<serial>/<uni_id>": {"rx_frames", "rx_bytes", "tx_frames", "tx_bytes", "dropped": {reason: n}}},
          "flows": {"<pon>/<flow_id>/<flow_type>": {"frames", "bytes"}},
          "nni": {...as a UNI...}, "nni_untagged": {...as a UNI...}}`
        (rx = into the simulator from that interface, tx = out of it; a flow counts what it forwarded or trapped)."""
        unis = {}
        for bound in self._bound.values():
            unis[f"{bound.serial}/{bound.uni.id}"] = bound.counter.as_dict()
        flows = {cf.label: {"frames": cf.counter[0], "bytes": cf.counter[1]} for cf in self._flow_table().all()}
        return {"unis": unis, "flows": flows, "nni": self._nni.as_dict(),
                "nni_untagged": self._nni_untagged.as_dict()}

    def uni_counters(self, serial: str, uni_id: int) -> dict | None:
        """One bound UNI's entry of `counters()["unis"]` (without building the others'), None when it is not
        bound."""
        bound = self._lookup(serial, uni_id)
        return None if bound is None else bound.counter.as_dict()

    def nni_kinds(self) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """The broadcast and multicast frames (indexes KIND_BROADCAST, KIND_MULTICAST; the NNIs do not count sizes)
        into (rx) and out of (tx) the tagged and untagged NNI, summed."""
        sides = (self._nni, self._nni_untagged)
        return (tuple(map(sum, zip(*(c.rx_kinds for c in sides)))), tuple(map(sum, zip(*(c.tx_kinds for c in sides)))))

    def frame_kinds(self, serial: str, uni_id: int) -> tuple[tuple[int, ...], tuple[int, ...]] | None:
        """A bound UNI's frames by kind (indexes KIND_*: broadcast, multicast, the six G.988 size buckets, longer),
        as received from the RG (every frame, dropped ones too) and as sent to it; None when it is not bound."""
        bound = self._lookup(serial, uni_id)
        if bound is None:
            return None
        return tuple(bound.counter.rx_kinds), tuple(bound.counter.tx_kinds)

    def gem_statistics(self, pon: int, onu_id: int, gemport_id: int) -> tuple[int, int, int, int] | None:
        """What the OpenOLT GetGemPortStatistics reports for the ONU's GEM port: (rx frames, rx bytes, tx frames,
        tx bytes) as its flows counted them, upstream flows' frames as received on it (traps included, as a real
        OLT's GEM counters count what the adapter is sent), downstream flows' as sent on it. Only flows on that GEM
        port alone count (a flow spread over several by p-bits is not split among them); None when no upstream or
        downstream flow of the ONU is on it."""
        rx, tx = [0, 0], [0, 0]
        found = False
        for _, cf in self._flow_table().pairs():
            if cf.pon != pon or cf.onu_id != onu_id or cf.gems != {gemport_id}:
                continue
            if cf.flow_type == "upstream":
                rx[0] += cf.counter[0]
                rx[1] += cf.counter[1]
            elif cf.flow_type == "downstream":
                tx[0] += cf.counter[0]
                tx[1] += cf.counter[1]
            else:
                continue
            found = True
        return (rx[0], rx[1], tx[0], tx[1]) if found else None

    def alloc_statistics(self, pon: int, onu_id: int, alloc_id: int) -> int | None:
        """What the OpenOLT GetAllocIdStatistics reports for the ONU's alloc id (T-CONT): the bytes its upstream
        flows counted; None when no upstream flow of the ONU names it."""
        total = None
        for flow, cf in self._flow_table().pairs():
            if cf.pon == pon and cf.onu_id == onu_id and cf.flow_type == "upstream" and flow.alloc_id == alloc_id:
                total = (total or 0) + cf.counter[1]
        return total
