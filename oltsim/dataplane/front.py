"""The data plane in front of the protocol engine: what the adapter sends to a UNI with a real interface, and out of
an NNI with one, goes to the data plane's pipeline; the rest to the engine it wraps.

`DataPlaneFront(engine)` provides `oltsim.packets.handler.IFrameHandler` as the engine does; `add(pipeline,
deliver)` registers the pipeline (as `twisted.pair.ethernet.EthernetProtocol.addProto` registers a sub-protocol),
whose outputs `deliver` carries out (`oltsim.dataplane.service.DataPlaneService.deliver`, which adds it at its start
and `remove`s it at its stop). Until one is added, after its removal, and for every UNI the pipeline has not bound,
the front only passes on.
"""
from __future__ import annotations

from zope.interface import implementer

from oltsim.model.errors import InvalidArgument
from oltsim.packets.engine import decode_uplink
from oltsim.packets.handler import IFrameHandler

__all__ = ["DataPlaneFront"]


@implementer(IFrameHandler)
class DataPlaneFront:
    """An `IFrameHandler` that hands a bound UNI's OnuPacketOut, and with an NNI interface the UplinkPacketOut of
    all but the simulated clients' DHCP, to the data plane; everything else to `engine` (a ProtocolEngine)."""

    def __init__(self, engine) -> None:
        self.engine = engine
        self.pipeline = None
        self._deliver = None

    def add(self, pipeline, deliver) -> None:
        """Register the data plane: `pipeline` (oltsim.dataplane.pipeline.DataPlane), its outputs carried out by
        `deliver(outputs)`."""
        self.pipeline = pipeline
        self._deliver = deliver

    def remove(self) -> None:
        """The data plane stopped: everything goes to the engine again (as before `add`)."""
        self.pipeline = None
        self._deliver = None

    # ---- frames from the adapter ---------------------------------------------------------------------------------

    def packet_out(self, onu, port_no: int, gemport_id: int, pkt: bytes) -> None:
        """A bound UNI's real client gets whatever the adapter sends (PPPoE, ARP...), as through a real ONU; the data
        plane drops and counts what the ONU would not deliver (ONU not active, no VLAN rule...)."""
        engine = self.engine
        if self.pipeline is not None:
            uni = onu.eth_uni_with_port_no(port_no)
            if uni is not None and not engine.simulates(uni):
                self._deliver(self.pipeline.onu_packet_out(onu.serial, uni.id, gemport_id, pkt))
                return
        engine.packet_out(onu, port_no, gemport_id, pkt)

    def uplink_packet_out(self, olt, intf_id: int, pkt: bytes) -> None:
        """With an NNI interface, the frame leaves through it, except a simulated client's DHCP, which the built-in
        server answers (the real server behind the interface could not reach that client). A frame the protocol
        decoder cannot read is no such DHCP: it leaves as it is, or is counted as malformed on the NNI, never
        refused to the adapter."""
        pipeline = self.pipeline
        if pipeline is None or not (pipeline.nni_tagged or pipeline.nni_untagged):
            self.engine.uplink_packet_out(olt, intf_id, pkt)
            return
        try:
            frame = decode_uplink(intf_id, pkt)
        except InvalidArgument:
            frame = None        # not a simulated client's DHCP: out as it is, as a real OLT does (or counted)
        if frame is not None and self.engine.simulated_dhcp(frame):
            self.engine.uplink_frame(olt, intf_id, frame)
        else:
            self._deliver(pipeline.uplink_packet_out(intf_id, pkt))

    # ---- the rest is the engine's (it knows which UNIs it was asked to leave to their real clients) ---------------

    def flow_added(self, onu, uni, flow) -> None:
        self.engine.flow_added(onu, uni, flow)

    def restart_eapol(self, service) -> None:
        self.engine.restart_eapol(service)

    def restart_dhcp(self, service) -> None:
        self.engine.restart_dhcp(service)

    def change_igmp(self, service, event: str, group: str, vlan: int) -> None:
        self.engine.change_igmp(service, event, group, vlan)

    def abandon_exchanges(self, onu, restart: bool = False) -> int:
        return self.engine.abandon_exchanges(onu, restart)

    def pending_timers(self) -> int:
        return self.engine.pending_timers()

    def flush_logs(self) -> None:
        self.engine.flush_logs()
