"""The DHCP client of a subscriber service and the built-in DHCP server behind the NNI
(BBSim's `responders/dhcp`, reference 4.5).

Client: Discover -> Offer -> Request -> Ack, driving `service.dhcp_state` through the
model's DHCP_MACHINE, single-tagged with the service's C-tag (S-tag for DPU_MGMT_TRAFFIC)
and its upstream priority. Every attempt has a timeout on the ONU clock; with
`dhcp_retry` a failed attempt is followed by a new one.

Server: answers Discover with Offer and Request with Ack, giving the client
(10+mac[2]).mac[3].mac[4].mac[5] and re-tagging the reply with the request's tags.
"""
from __future__ import annotations

from oltsim.model.onu import DHCP_MACHINE
from oltsim.packets import frames as f
from oltsim.packets.common import ServiceTimers, advance, check_running, completed, describe, log, send_up, uplink_tag

#: Parameter request list (option 55) BBSim's client sends.
PARAMS_REQUEST = bytes([1, 28, 2, 3, 15, 6, 119, 12, 44, 47, 26, 121, 42])
#: Server identifier (option 54) BBSim's client puts in its Request.
REQUEST_SERVER_ID = bytes((182, 21, 0, 128))
#: Fixed prefix of the client identifier (option 61) of BBSim's Request; PON and ONU id follow.
REQUEST_CLIENT_ID_PREFIX = bytes.fromhex("cd28cbcc0001000123ed11ec4efccd28")
SERVER_MAC = bytes.fromhex("aabbccddeeff")
DONE = "dhcp_ack_received"


# ---- client frames ------------------------------------------------------------------------

def xid_for_mac(mac: bytes) -> int:
    """BBSim's transaction id: the decimal values of the MAC bytes written one after the other,
    read as a number (2e:00:00:01:00:00 -> "4600100" -> 0x00463124), kept to 32 bits."""
    return int("".join(str(b) for b in mac)) & 0xFFFFFFFF


def hostname(gem: int, pon: int, onu: int) -> bytes:
    return f"{gem}.{pon}.{onu}.bbsim.onf.org".encode()


def _client_frame(mac: bytes, vid: int, pcp: int, message: bytes) -> bytes:
    udp_ip = f.build_ipv4_udp(f.ZERO_IP, f.BROADCAST_IP, f.DHCP_CLIENT_PORT, f.DHCP_SERVER_PORT, message,
                              tos=0x10, ttl=128)
    return f.build_ethernet(f.BROADCAST_MAC, mac, f.ETH_IPV4, udp_ip, [f.VlanTag(vid, pcp)])


def discover_frame(mac: bytes, vid: int, pcp: int, gem: int, pon: int, onu: int) -> bytes:
    """DHCP Discover as BBSim sends it: options 53, 12, 55, 61 in that order."""
    options = [(f.OPT_MESSAGE_TYPE, bytes((f.DHCP_DISCOVER,))),
               (f.OPT_HOSTNAME, hostname(gem, pon, onu)),
               (f.OPT_PARAMS, PARAMS_REQUEST),
               (f.OPT_CLIENT_ID, b"\x01" + mac)]
    return _client_frame(mac, vid, pcp, f.build_dhcp(f.BOOTREQUEST, xid_for_mac(mac), mac, options))


def request_frame(mac: bytes, vid: int, pcp: int, gem: int, pon: int, onu: int, offered: bytes) -> bytes:
    """DHCP Request as BBSim sends it: options 12, 55, 53, 54, 61, 50 in that order."""
    options = [(f.OPT_HOSTNAME, hostname(gem, pon, onu)),
               (f.OPT_PARAMS, PARAMS_REQUEST),
               (f.OPT_MESSAGE_TYPE, bytes((f.DHCP_REQUEST,))),
               (f.OPT_SERVER_ID, REQUEST_SERVER_ID),
               (f.OPT_CLIENT_ID, REQUEST_CLIENT_ID_PREFIX + bytes((pon & 0xFF, onu & 0xFF))),
               (f.OPT_REQUESTED_IP, offered)]
    return _client_frame(mac, vid, pcp, f.build_dhcp(f.BOOTREQUEST, xid_for_mac(mac), mac, options))


# ---- the client ---------------------------------------------------------------------------

class DhcpClient:
    """DHCP clients of every service, keyed by service; one instance serves the OLT."""

    def __init__(self, *, timeout: float = 60.0, retry: bool = False):
        self.timeout = timeout
        self.retry = retry
        self.timers = ServiceTimers()
        #: the engine's SummedLines for completions (None: one info line each)
        self.lines = None

    def _fire(self, service, event: str) -> str:
        return advance(service, "dhcp_state", DHCP_MACHINE, event, "DhcpState")

    def _frame_args(self, service) -> tuple:
        onu = service.uni.onu
        vid, pcp = uplink_tag(service)
        return f.mac_bytes(service.mac), vid, pcp, service.gem_port, onu.pon.id, onu.onu_id

    def start(self, service) -> bool:
        """Begin an attempt (FlowAdd trigger): Discover out, timer armed. Returns False,
        logging why, when the state does not allow a new attempt (one is under way)."""
        if not DHCP_MACHINE.can(service.dhcp_state, "start_dhcp"):
            log.info("dhcp-start-refused serial={serial} uni={uni} service={service} state={state}",
                     state=service.dhcp_state, **describe(service))
            return False
        self._fire(service, "start_dhcp")
        self.timers.arm(service, self.timeout, self._timed_out)
        # State first, frame second: an adapter answering synchronously sees the new state.
        self._fire(service, "dhcp_discovery_sent")
        send_up(service, discover_frame(*self._frame_args(service)))
        return True

    def restart(self, service) -> None:
        """RestartDhcp: abandon any attempt under way (dhcp_failed) and start a new one."""
        check_running(service)
        self.timers.cancel(service)
        if DHCP_MACHINE.can(service.dhcp_state, "dhcp_failed"):
            self._fire(service, "dhcp_failed")
        self.start(service)

    def abandon(self, service) -> bool:
        """The attempt under way, if any, fails now without a new one (its timer cancelled): the adapter lost the
        frames it exchanged (its stream ended), and its next trigger (FlowAdd) would otherwise be refused until the
        timeout. True if one was under way."""
        if not self.timers.pending(service) or service.dhcp_state == DONE:
            return False
        self.timers.cancel(service)
        if DHCP_MACHINE.can(service.dhcp_state, "dhcp_failed"):
            self._fire(service, "dhcp_failed")
        log.info("dhcp-attempt-abandoned serial={serial} uni={uni} service={service}", **describe(service))
        return True

    def _fail(self, service, why: str) -> None:
        log.warn("dhcp-attempt-failed serial={serial} uni={uni} service={service} state={state} why={why}",
                 state=service.dhcp_state, why=why, **describe(service))
        if DHCP_MACHINE.can(service.dhcp_state, "dhcp_failed"):
            self._fire(service, "dhcp_failed")
        if not self.retry:
            self.timers.cancel(service)

    def _timed_out(self, service) -> None:
        onu = service.uni.onu
        state = service.dhcp_state
        # "created" means the service was reset (UNI down) since this attempt began.
        if service.state != "initialized" or not onu.is_active or state in ("created", DONE):
            return
        log.warn("dhcp-timeout serial={serial} uni={uni} service={service} state={state} retry={retry}",
                 state=state, retry=self.retry, **describe(service))
        if DHCP_MACHINE.can(state, "dhcp_failed"):
            self._fire(service, "dhcp_failed")
        if self.retry:
            self.start(service)

    def receive(self, service, frame: f.Frame) -> None:
        """Handle a DHCP frame the adapter sent to this service."""
        dhcp = frame.dhcp
        if dhcp.op != f.BOOTREPLY:
            log.info("dhcp-request-ignored serial={serial} uni={uni} service={service} type={type}",
                     type=dhcp.type_name, **describe(service))
            return
        mac = f.mac_bytes(service.mac)
        if dhcp.xid != xid_for_mac(mac):
            log.info("dhcp-reply-ignored serial={serial} uni={uni} service={service} why={why}",
                     why=f"transaction id {dhcp.xid:#x} is not ours", **describe(service))
            return
        state = service.dhcp_state
        mtype = dhcp.message_type
        if mtype == f.DHCP_OFFER:
            if state != "dhcp_discovery_sent":
                # Several servers may answer one Discover: a late Offer is not an error.
                log.info("dhcp-offer-ignored serial={serial} uni={uni} service={service} state={state}",
                         state=state, **describe(service))
                return
            self._fire(service, "dhcp_request_sent")
            send_up(service, request_frame(*self._frame_args(service), dhcp.yiaddr))
        elif mtype == f.DHCP_ACK:
            if state != "dhcp_request_sent":
                log.info("dhcp-ack-ignored serial={serial} uni={uni} service={service} state={state}",
                         state=state, **describe(service))
                return
            self.timers.cancel(service)
            self._fire(service, "dhcp_ack_received")
            completed(self.lines, "dhcp-completed",
                      "dhcp-completed serial={serial} uni={uni} service={service} address={address}",
                      address=f.ip_str(dhcp.yiaddr), **describe(service))
        else:
            self._fail(service, f"unexpected DHCP {dhcp.type_name}")


# ---- the server ---------------------------------------------------------------------------

def address_for_mac(mac: bytes) -> bytes:
    """The address the server gives a client: (10+mac[2]).mac[3].mac[4].mac[5]."""
    return bytes(((10 + mac[2]) % 256, mac[3], mac[4], mac[5]))


class DhcpServer:
    """BBSim's DHCP server on the NNI: stateless, one address per client MAC."""

    mac = SERVER_MAC

    def answer(self, frame: f.Frame) -> bytes:
        """The reply frame to a Discover (Offer) or Request (Ack); raises PacketError for
        any other DHCP message."""
        dhcp = frame.dhcp
        mtype = dhcp.message_type
        if mtype == f.DHCP_DISCOVER:
            reply_type = f.DHCP_OFFER
        elif mtype == f.DHCP_REQUEST:
            reply_type = f.DHCP_ACK
        else:
            raise f.PacketError(f"the DHCP server answers only Discover and Request (got {dhcp.type_name})")
        client = dhcp.client_mac
        address = address_for_mac(client)
        options = [(f.OPT_MESSAGE_TYPE, bytes((reply_type,)))]
        name = dhcp.option(f.OPT_HOSTNAME)
        if name is not None:
            options.append((f.OPT_HOSTNAME, name))
        options.append((f.OPT_RELAY_AGENT, dhcp.option(f.OPT_RELAY_AGENT) or b""))
        options.append((f.OPT_CLIENT_ID, b"\x01" + client))
        message = f.build_dhcp(f.BOOTREPLY, dhcp.xid, client, options, ciaddr=address, yiaddr=address)
        udp_ip = f.build_ipv4_udp(f.ZERO_IP, f.BROADCAST_IP, f.DHCP_SERVER_PORT, f.DHCP_CLIENT_PORT, message,
                                  tos=0x10, ttl=128)
        # Same VLAN ids as the request (outer first), priority 0, as BBSim re-tags.
        tags = [f.VlanTag(t.vid, 0) for t in frame.eth.tags]
        return f.build_ethernet(client, self.mac, f.ETH_IPV4, udp_ip, tags)
