"""The data plane's pure part: one Ethernet frame in, what to do with it out.

Upstream, a frame from a bound UNI (as the RG sent it) goes through the ONU's part, from the OMCI the adapter wrote
(`oltsim.omci.vlanconfig`: the Extended VLAN Tagging Operation rules of the UNI, the VLAN tagging filter of its
bridge port, the 802.1p mapper choosing the GEM port), then the OLT's part, from its flows: a trap flow makes a
packet indication to the adapter (as today's simulated protocols raise them), a forwarding flow pushes or
translates the outer tag and sends it out of the NNI. Downstream the other way: the NNI frame's tags select a
downstream flow, which pops or translates, then the ONU's EVTOCD reverse operation and its filter, then the UNI.

Nothing here does I/O or reads the time by itself: methods return `Output` values that the caller (the service
owning the interfaces) carries out, on the reactor thread. What to do per UNI and per GEM is computed when OMCI or
flows change, not per frame.
"""
from __future__ import annotations

from dataclasses import dataclass

from oltsim.model import events

__all__ = ["DataPlane", "Dropped", "Output", "PacketIn", "ToNni", "ToNniUntagged", "ToUni"]


# ---- outputs --------------------------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class ToUni:
    """Send `frame` out of the interface of UNI `uni_id` of ONU `serial`, as the RG receives it."""
    serial: str
    uni_id: int
    frame: bytes


@dataclass(frozen=True, slots=True)
class ToNni:
    """Send `frame` out of the tagged NNI interface (S-tag and C-tag as the flows and the ONU left them)."""
    frame: bytes


@dataclass(frozen=True, slots=True)
class ToNniUntagged:
    """Send `frame` out of the untagged NNI interface (the frame of the tagged NNI with its VLAN tags removed)."""
    frame: bytes


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
    "no-subscriber",      # untagged NNI: the destination MAC was never learned and is not broadcast
    "queue-full",         # reserved for the caller: the interface's bounded queue was full
)


class DataPlane:
    """Carries Ethernet frames between bound UNIs and the NNI through the ONU's OMCI VLAN config and the OLT's
    flows.

    `olt` is the model's Olt; `clock` an IReactorTime (MAC entries learned are stamped with `clock.seconds()`);
    `vlan_config` the `oltsim.omci.vlanconfig.VlanConfig` recording the OMCI the adapter wrote (None: one is made,
    but then nothing feeds it: pass the one wired in front of the OMCI responder); `capture`, when given, a callable
    `(where: str, direction: str, frame: bytes)` given every frame that enters ("uni <serial>/<uni>" / "nni" /
    "nni-untagged", direction "in") and leaves ("out"). `nni_tagged` / `nni_untagged` say which NNI interfaces
    exist: upstream frames produce `ToNni` and/or `ToNniUntagged` only for those.

    All methods run on the reactor thread and never raise for a frame: a bad frame is a `Dropped` output.
    """

    def __init__(self, olt, clock, *, capture=None, vlan_config=None, nni_tagged: bool = True,
                 nni_untagged: bool = True):
        self.olt = olt
        self.clock = clock
        self.capture = capture
        self.vlan_config = vlan_config
        self.nni_tagged = nni_tagged
        self.nni_untagged = nni_untagged

    # ---- binding ------------------------------------------------------------------------------------------------

    def attach(self, engine, deliver) -> None:
        """Put this data plane in front of the ProtocolEngine `engine` (oltsim.packets.engine): OnuPacketOut to a
        bound UNI, and UplinkPacketOut (when an NNI interface exists), are handed to `deliver(outputs)` instead of
        the simulated protocols and the built-in DHCP server. Call once, before `bind_uni`."""

    def bind_uni(self, serial: str, uni_id: int) -> None:
        """The UNI now has a real interface: its simulated supplicant and DHCP client step aside (attempts under way
        are abandoned, flows no longer start them) and its service states follow the frames seen (EAP Success,
        DHCP ACK). NotFound for an unknown serial or UNI."""

    def unbind_uni(self, serial: str, uni_id: int) -> None:
        """The UNI's interface is gone: today's simulated protocols drive it again (from the next flow added)."""

    # ---- frames -------------------------------------------------------------------------------------------------

    def from_uni(self, serial: str, uni_id: int, frame: bytes) -> list:
        """A frame the RG sent on the UNI's interface: upstream through EVTOCD, filter, GEM, then the OLT's flows:
        `ToNni`/`ToNniUntagged`, `PacketIn`, or `Dropped`."""
        return []

    def from_nni(self, frame: bytes) -> list:
        """A frame as on a real NNI (S-tag, C-tag): a downstream flow pops or translates, the ONU's EVTOCD reverses
        its rule: `ToUni`, `PacketIn` (NNI trap flows), or `Dropped`."""
        return []

    def from_nni_untagged(self, frame: bytes) -> list:
        """A frame from the untagged NNI: matched back to its subscriber by the learned destination MAC (broadcast
        and multicast: to every bound UNI whose service forwarded a frame out of the untagged NNI), given the tags
        that subscriber's frames carry on the tagged NNI, then handled as `from_nni`."""
        return []

    def uplink_packet_out(self, intf_id: int, frame: bytes) -> list:
        """UplinkPacketOut from the adapter: out of the NNI interfaces as it is (`ToNni`, `ToNniUntagged` with its
        tags removed)."""
        return []

    def onu_packet_out(self, serial: str, uni_id: int, gemport_id: int, frame: bytes) -> list:
        """OnuPacketOut to a bound UNI: the frame as the OLT hands it to the ONU, through the EVTOCD reverse
        operation to the UNI (`ToUni`), or `Dropped`."""
        return []

    # ---- counters -----------------------------------------------------------------------------------------------

    def counters(self) -> dict:
        """Frames and bytes forwarded and dropped, by reason:
        `{"unis": {"<serial>/<uni_id>": {"rx_frames", "rx_bytes", "tx_frames", "tx_bytes", "dropped": {reason: n}}},
          "flows": {"<pon>/<flow_id>/<flow_type>": {"frames", "bytes"}},
          "nni": {"rx_frames", "rx_bytes", "tx_frames", "tx_bytes", "dropped": {reason: n}}}`
        (rx = into the simulator from that interface, tx = out of it)."""
        return {"unis": {}, "flows": {}, "nni": {}}
