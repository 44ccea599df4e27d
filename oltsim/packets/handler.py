"""The declared interface of what takes an ONU's and the NNI's frames from the adapter: `IFrameHandler`.

The protocol engine (`oltsim.packets.engine.ProtocolEngine`: the simulated EAPOL supplicant, DHCP client, IGMP host
and NNI DHCP server) provides it, and so does the data plane standing in front of it
(`oltsim.dataplane.front.DataPlaneFront`), which takes what its real interfaces carry and passes the rest on.
`oltsim.tap` composes them and hands the outermost to the OLT's devices (`oltsim.model.hub.DeviceHub.frames`); the
OpenOLT servicer, the OLT's flow table and the control API's restarts call it there.
"""
from __future__ import annotations

from zope.interface import Interface

__all__ = ["IFrameHandler"]


class IFrameHandler(Interface):
    """The subscriber-side frames of an OLT and what starts or changes their exchanges."""

    def flow_added(onu, uni, flow):
        """A flow was stored for `uni` of `onu`: a trap flow may start an exchange. Never raises."""

    def packet_out(onu, port_no, gemport_id, pkt):
        """OnuPacketOut: deliver `pkt` (octets) to the UNI of `onu` with `port_no`; InvalidArgument for a frame that
        cannot be delivered."""

    def uplink_packet_out(olt, intf_id, pkt):
        """UplinkPacketOut: send `pkt` (octets) out of NNI `intf_id` of `olt`; InvalidArgument for a malformed
        frame."""

    def restart_eapol(service):
        """RestartEapol on one service."""

    def restart_dhcp(service):
        """RestartDhcp on one service."""

    def change_igmp(service, event, group, vlan):
        """ChangeIgmpState: the service's IGMP host joins or leaves `group`."""

    def abandon_exchanges(onu, restart=False):
        """The exchanges under way on `onu`'s services fail now (and start over with `restart`); returns how
        many."""

    def pending_timers():
        """Exchange timers still pending (stop checks)."""

    def flush_logs():
        """Log what was counted so far (servers stopping)."""
