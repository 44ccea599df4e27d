"""The ONU protocol engine: the simulated subscriber protocols of every ONU of an OLT, and its NNI's DHCP server.

It provides `oltsim.packets.handler.IFrameHandler`: flows, OnuPacketOut and UplinkPacketOut reach the per-service
EAPOL supplicant, DHCP client, IGMP host and the NNI DHCP server. A UNI handed over to a real client
(`hand_over`, by the data plane) is left to it: flows start no simulated exchange there and restarts are refused.

Runs on the reactor thread like the rest of the model. Packets from the adapter are
validated first: a frame that cannot be decoded, is of no protocol a subscriber speaks,
or names no UNI or service raises `InvalidArgument` before anything changes. Frames that
are well formed but unexpected by a protocol machine are logged, never fatal.
"""
from __future__ import annotations

from zope.interface import implementer

from oltsim.logs import SummedLines
from oltsim.model import events
from oltsim.model.errors import FailedPrecondition, InvalidArgument
from oltsim.packets import frames as f
from oltsim.packets.common import describe, log, uplink_tag
from oltsim.packets.dhcp import DhcpClient, DhcpServer
from oltsim.packets.eapol import Supplicant
from oltsim.packets.handler import IFrameHandler
from oltsim.packets.igmp import EVENTS as IGMP_EVENTS, IgmpHost

#: EAPOL/DHCP completion lines written one by one per second at info; the rest of the second is one
#: `services-completed count=... eapol-completed=... dhcp-completed=...` line (all of them at debug).
COMPLETION_LINES_PER_INTERVAL = 4

EAPOL_FLOW_VID = 4091
ANY_PBITS = 255


@implementer(IFrameHandler)
class ProtocolEngine:
    """Subscriber protocols for every ONU of an OLT (one instance, shared by all ONUs)."""

    def __init__(self, *, auth_retry: bool = False, dhcp_retry: bool = False, eapol_timeout: float = 60.0,
                 dhcp_timeout: float = 60.0):
        self.eapol = Supplicant(timeout=eapol_timeout, retry=auth_retry)
        self.dhcp = DhcpClient(timeout=dhcp_timeout, retry=dhcp_retry)
        self.igmp = IgmpHost()
        self.dhcp_server = DhcpServer()
        #: UNIs driven by a real client (`hand_over`): flows start no simulated EAPOL or DHCP on them
        self._handed_over: set = set()
        #: service MAC -> service of the OLT attached (which DHCP client a relayed frame is)
        self.service_macs: dict = {}

    @classmethod
    def from_settings(cls, settings) -> "ProtocolEngine":
        """An engine with the retry and timeout options of `oltsim.config.Settings`."""
        return cls(auth_retry=settings.auth_retry, dhcp_retry=settings.dhcp_retry,
                   eapol_timeout=settings.eapol_timeout, dhcp_timeout=settings.dhcp_timeout)

    def attach(self, olt) -> None:
        """Serve `olt` (built with this engine as its frame handler, or behind one): learn its services' MACs and
        sum up its completion lines on its clock."""
        self.service_macs = {f.mac_bytes(s.mac): s for onu in olt.onus for uni in onu.unis for s in uni.services}
        # 16x32 ONUs bring up 4096 services at once: a few completion lines a second, then one summary line.
        self.eapol.lines = self.dhcp.lines = SummedLines(log, "services-completed", olt.clock,
                                                         burst=COMPLETION_LINES_PER_INTERVAL)

    # ---- UNIs with a real client ---------------------------------------------------------------

    def hand_over(self, uni) -> None:
        """A real client drives `uni` now (oltsim.dataplane): attempts under way on its services are abandoned, and
        flows no longer start them."""
        self._handed_over.add(uni)
        for service in uni.services:
            self.eapol.abandon(service)
            self.dhcp.abandon(service)

    def take_back(self, uni) -> None:
        """`uni`'s real client is gone: the simulated protocols drive it again (from the next flow added)."""
        self._handed_over.discard(uni)

    def simulates(self, uni) -> bool:
        """Whether the simulated protocols drive `uni` (no real client was handed it)."""
        return uni not in self._handed_over

    def flush_logs(self) -> None:
        """Log the completions counted so far (servers stopping) and cancel the summary's timer."""
        if self.eapol.lines is not None:
            self.eapol.lines.flush()

    # ---- flows --------------------------------------------------------------------------

    def flow_added(self, onu, uni, flow) -> None:
        """FlowAdd triggers, as BBSim: an EAPOL trap flow (0x888e, o_vid 4091) starts
        authentication on the UNI's EAPOL services; a DHCP trap flow (0x0800, 68 -> 67) starts
        DHCP on the UNI's DHCP services whose tag and priority match. Never raises."""
        if uni in self._handed_over:
            return                  # its real client authenticates and asks for an address (oltsim.dataplane)
        try:
            if flow.eth_type == f.ETH_EAPOL and flow.o_vid == EAPOL_FLOW_VID:
                for service in uni.services:
                    if service.spec.needs_eapol and service.state == "initialized":
                        self.eapol.start(service)
            elif flow.eth_type == f.ETH_IPV4 and flow.src_port == 68 and flow.dst_port == 67:
                for service in uni.services:
                    if service.spec.needs_dhcp and service.state == "initialized" and _dhcp_match(service, flow):
                        self.dhcp.start(service)
        except Exception:
            # The flow is stored already; a bug here must not turn FlowAdd into an error.
            log.failure("flow-trigger-failed serial={serial} flow={flow_id}", serial=onu.serial,
                        flow_id=flow.flow_id)

    # ---- downstream packets (OnuPacketOut) -------------------------------------------------

    def packet_out(self, onu, port_no: int, gemport_id: int, pkt: bytes) -> None:
        """OnuPacketOut: deliver a frame to the UNI with `port_no`: EAPOL and DHCP to the service
        whose MAC is the destination, IGMP to the UNI's IGMP services. Raises InvalidArgument
        for a frame that is malformed or of another protocol, or that names no UNI or service.
        Frames for an ONU that is not active are dropped, as BBSim does. `gemport_id` does not
        route: BBSim's multicast-GEM branch never sees it, queries reach the UNI by port_no."""
        where = f"OnuPacketOut to ONU {onu.serial}"
        try:
            frame = f.decode(pkt)
        except f.PacketError as exc:
            raise InvalidArgument(f"{where}: {exc}") from None
        if frame.kind not in ("eapol", "dhcp", "igmp", "icmpv6"):
            raise InvalidArgument(f"{where}: the packet must be EAPOL, DHCP, IGMP or ICMPv6 "
                                  f"(got EtherType {frame.eth.ethertype:#06x}{_ip_detail(frame)})")
        if not onu.is_active:
            log.info("packet-out-dropped serial={serial} state={state} kind={kind}", serial=onu.serial,
                     state=onu.state, kind=frame.kind)
            return
        uni = onu.eth_uni_with_port_no(port_no)
        if uni is None:
            raise InvalidArgument(f"{where}: no UNI has port_no {port_no} "
                                  f"(a flow for the UNI sets it; known: {_port_nos(onu)})")
        if frame.kind == "icmpv6":
            log.debug("icmpv6-ignored serial={serial} uni={uni}", serial=onu.serial, uni=uni.id)
            return
        if frame.kind == "igmp":
            for service in uni.services:
                if service.spec.needs_igmp and service.state == "initialized":
                    self.igmp.receive(service, frame)
            return
        service = _service_for(uni, frame)
        if service is None:
            raise InvalidArgument(f"{where}: no service on UNI {uni.id} has MAC {f.mac_str(frame.eth.dst)}")
        if service.state != "initialized":
            log.info("packet-out-dropped serial={serial} uni={uni} service={service} why=service-not-running",
                     **describe(service))
            return
        faults = onu.faults
        if faults is not None and faults.drops(onu, frame.kind):
            return                  # lost on the way (packet-drop knob, oltsim.model.faults)
        if frame.kind == "eapol":
            self.eapol.receive(service, frame)
        else:
            self.dhcp.receive(service, frame)

    # ---- upstream to the NNI (UplinkPacketOut) ---------------------------------------------

    def uplink_packet_out(self, olt, intf_id: int, pkt: bytes) -> None:
        """UplinkPacketOut: DHCP Discover/Request go to the built-in server, whose reply comes
        back as PktInd(nni, intf_id); LLDP, ICMPv6 and other traffic is dropped. Raises
        InvalidArgument for a malformed frame or a DHCP message the server does not answer."""
        self.uplink_frame(olt, intf_id, decode_uplink(intf_id, pkt))

    def uplink_frame(self, olt, intf_id: int, frame) -> None:
        """`uplink_packet_out` for a frame already decoded (`decode_uplink`)."""
        if frame.kind != "dhcp":
            log.debug("uplink-packet-dropped nni={nni} kind={kind}", nni=intf_id, kind=frame.kind)
            return
        try:
            reply = self.dhcp_server.answer(frame)
        except f.PacketError as exc:
            raise InvalidArgument(f"UplinkPacketOut on NNI {intf_id}: {exc}") from None
        olt.emit(events.PacketIndication("nni", intf_id, reply))

    def simulated_dhcp(self, frame) -> bool:
        """Whether `frame` is DHCP of a simulated client: its client MAC is the service MAC of a UNI no real client
        drives (the real DHCP server behind an NNI interface could not answer it: its answer finds no subscriber)."""
        if frame.kind != "dhcp" or frame.dhcp is None:
            return False
        service = self.service_macs.get(frame.dhcp.client_mac) or self.service_macs.get(frame.eth.src)
        return service is not None and service.uni not in self._handed_over

    # ---- control API ---------------------------------------------------------------------

    def restart_eapol(self, service) -> None:
        """RestartEapol on one service: any attempt under way fails, a new one starts."""
        if not service.spec.needs_eapol:
            raise FailedPrecondition(f"service {service.name} does not use EAPOL")
        _check_simulated(self, service)
        self.eapol.restart(service)

    def restart_dhcp(self, service) -> None:
        """RestartDhcp on one service: any attempt under way fails, a new one starts."""
        if not service.spec.needs_dhcp:
            raise FailedPrecondition(f"service {service.name} does not use DHCP")
        _check_simulated(self, service)
        self.dhcp.restart(service)

    def abandon_exchanges(self, onu, restart: bool = False) -> int:
        """EAPOL and DHCP attempts under way on `onu`'s services fail now: for an adapter whose indication stream
        ended mid-exchange (the frames were lost with it). Without `restart` none starts again (the flows the
        adapter adds again start new attempts); with it, each starts over at once (the flows are still there).
        Returns how many were abandoned."""
        count = 0
        for uni in onu.eth_unis:
            for service in uni.services:
                for client in (self.eapol, self.dhcp):
                    if client.abandon(service):
                        count += 1
                        if restart and uni not in self._handed_over:
                            client.start(service)
        return count

    def change_igmp(self, service, event: str, group: str, vlan: int) -> None:
        """ChangeIgmpState: send the join (v2 or v3) or leave frame; the caller moves
        `igmp_state` and `igmp_groups`."""
        if event not in IGMP_EVENTS:
            raise InvalidArgument(f"unknown IGMP action {event!r}")
        try:
            self.igmp.send(service, event, group, vlan)
        except f.PacketError as exc:
            raise InvalidArgument(str(exc)) from None

    # ---- introspection (tests, shutdown checks) -------------------------------------------

    def pending_timers(self) -> int:
        """EAPOL and DHCP attempt timers still pending."""
        return len(self.eapol.timers) + len(self.dhcp.timers)


def _check_simulated(engine, service) -> None:
    """FailedPrecondition for a service on a UNI its real client drives (oltsim.dataplane)."""
    uni = service.uni
    if not engine.simulates(uni):
        raise FailedPrecondition(f"UNI {uni.id} of ONU {uni.onu.serial} has an interface: its own client "
                                 "authenticates and asks for an address (restart it there)")


def decode_uplink(intf_id: int, pkt: bytes):
    """The frame of an UplinkPacketOut on NNI `intf_id`, decoded; InvalidArgument when it cannot be."""
    try:
        return f.decode(pkt)
    except f.PacketError as exc:
        raise InvalidArgument(f"UplinkPacketOut on NNI {intf_id}: {exc}") from None


def _dhcp_match(service, flow) -> bool:
    vid, pcp = uplink_tag(service)
    return vid == flow.o_vid and (flow.o_pbits == pcp or flow.o_pbits == ANY_PBITS)


def _service_for(uni, frame: f.Frame):
    """The service a downstream EAPOL or DHCP frame is for: by destination MAC; an EAPOL frame
    to the PAE group address goes to the UNI's EAPOL service, a broadcast DHCP reply to the
    service named by its client hardware address."""
    dst = frame.eth.dst
    if frame.kind == "eapol" and dst == f.PAE_GROUP_MAC:
        candidates = [s for s in uni.services if s.spec.needs_eapol]
        return candidates[0] if len(candidates) == 1 else None
    if frame.kind == "dhcp" and dst[0] & 1:  # group address: look at chaddr instead
        dst = frame.dhcp.client_mac
    wanted = f.mac_str(dst)
    return next((s for s in uni.services if s.mac == wanted), None)


def _port_nos(onu) -> str:
    known = sorted({u.port_no for u in onu.eth_unis if u.port_no})
    return ", ".join(map(str, known)) if known else "none yet"


def _ip_detail(frame: f.Frame) -> str:
    if frame.ip is None:
        return ""
    if frame.udp is not None:
        return f", UDP {frame.udp.src_port} -> {frame.udp.dst_port}"
    return f", IP protocol {frame.ip.proto}"
