"""Property tests (hypothesis) of an activated ONU under random input: OMCI frames through the responder and
through OmciMsgOut's hex text, packets through OnuPacketOut and UplinkPacketOut.

Whatever arrives, only the errors that answer the adapter (OmciError / InvalidArgument, gRPC INVALID_ARGUMENT)
may escape, nothing is logged as a failure, every protocol state stays a state of its machine, and the ONU is
still usable afterwards: it answers a MIB reset, and a new EAPOL and DHCP exchange completes. Each example
starts from a fresh OLT on a fake clock (1 PON, 2 ONUs, both activated) and feeds it a short sequence, so
hypothesis can shrink a failure to the frames that matter.
"""
from __future__ import annotations

import dataclasses

import grpc
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from twisted.logger import LogLevel, globalLogPublisher
from voltha_protos import openolt_pb2

from conftest import Aborted, Sim, grpc_call
from oltsim.config import ATT_SERVICES
from oltsim.model import events
from oltsim.model.errors import InvalidArgument
from oltsim.model.flows import Flow
from oltsim.model.onu import DHCP_MACHINE, EAPOL_MACHINE, IGMP_MACHINE, SERVICE_MACHINE
from oltsim.omci import codec
from oltsim.omci.codec import OmciError
from oltsim.omci.wrappers import receive
from oltsim.packets import dhcp, eapol, frames as f, igmp

FUZZ = settings(max_examples=200, deadline=None, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                       HealthCheck.function_scoped_fixture])

# ATT's hsia, also speaking IGMP so that queries reach a service.
SERVICES = (dataclasses.replace(ATT_SERVICES[0], needs_igmp=True),)
GROUP = "224.0.0.9"
PORT_NO = 1
GEM = 1


class Onu:
    """An OLT (1 PON, 2 ONUs) with the OMCI responder and the protocol engine wired as the daemon wires them,
    both ONUs activated; the first has UNI 0 up, its EAPOL and DHCP trap flows pushed (so an exchange is under
    way) and a joined multicast group."""

    def __init__(self):
        self.sim = Sim(pon=1, onu=2, services=SERVICES, frame_path=True)
        self.olt = self.sim.olt
        self.responder = self.sim.path.responder
        self.engine = self.sim.path.engine
        self.sim.bring_up()
        self.onu = self.olt.onu_by_serial("BBSM00000001")
        self.uni = self.onu.unis[0]
        self.uni.enable()
        self.service = self.uni.services[0]
        self.mac = f.mac_bytes(self.service.mac)
        self.service.igmp_groups = {GROUP: self.service.c_tag}
        for flow_id, fields in ((1, dict(eth_type=f.ETH_EAPOL, o_vid=4091)),
                                (2, dict(eth_type=f.ETH_IPV4, src_port=68, dst_port=67, o_vid=self.service.c_tag,
                                         o_pbits=255))):
            self.olt.flow_add(Flow(flow_id=flow_id, flow_type="downstream", access_intf_id=0, onu_id=1, uni_id=0,
                                   port_no=PORT_NO, alloc_id=1, gemport_id=GEM, **fields))
        self.sim.events.clear()

    # ---- OMCI --------------------------------------------------------------------------------------------

    def omci_out(self, pkt: bytes, onu_id: int = 1) -> None:
        """OmciMsgOut through the OpenOLT servicer; only INVALID_ARGUMENT may come back."""
        try:
            grpc_call(self.sim.openolt, "OmciMsgOut", openolt_pb2.OmciMsg(intf_id=0, onu_id=onu_id, pkt=pkt))
        except Aborted as exc:
            assert exc.code == grpc.StatusCode.INVALID_ARGUMENT, exc

    def omci_frames(self) -> list[codec.Frame]:
        return [codec.parse(e.pkt) for e in self.sim.events if isinstance(e, events.OmciIndication)]

    def settle(self) -> None:
        """Let every timer a frame may have set run out: test results, reboots and their power-on."""
        self.sim.clock.advance(0)
        for _ in range(4):
            self.sim.clock.advance(self.olt.timings.onu_reboot + 1)

    def answers_mib_reset(self, onu) -> None:
        """After the dust settled the ONU is active and answers a MIB reset (sent as hex text) with success."""
        self.settle()
        assert onu.is_active, onu.state
        self.sim.events.clear()
        self.omci_out(codec.encode(0x7FFF, codec.AR | codec.MIB_RESET, codec.ONU_DATA, 0).hex().encode(),
                      onu.onu_id)
        replies = [fr for fr in self.omci_frames() if fr.tid == 0x7FFF]
        assert [(fr.message_type, fr.u8(0)) for fr in replies] == [(codec.AK | codec.MIB_RESET, codec.SUCCESS)]

    # ---- packets -----------------------------------------------------------------------------------------

    def packet_indications(self, intf_type: str) -> list[events.PacketIndication]:
        return [e for e in self.sim.events if isinstance(e, events.PacketIndication) and e.intf_type == intf_type]

    def states_are_legal(self) -> None:
        for onu in self.olt.onus:
            for uni in onu.unis:
                for service in uni.services:
                    assert service.state in SERVICE_MACHINE.states, service.state
                    assert service.eapol_state in EAPOL_MACHINE.states, service.eapol_state
                    assert service.dhcp_state in DHCP_MACHINE.states, service.dhcp_state
                    assert service.igmp_state in IGMP_MACHINE.states, service.igmp_state

    def completes_eapol_and_dhcp(self) -> None:
        """A new EAPOL exchange and a new DHCP exchange (relayed through the NNI server) both complete."""
        engine, service, mac = self.engine, self.service, self.mac
        engine.restart_eapol(service)
        engine.packet_out(self.onu, PORT_NO, GEM, eapol.identity_request_frame(mac, 1))
        engine.packet_out(self.onu, PORT_NO, GEM, eapol.md5_request_frame(mac, 2, bytes(range(16))))
        engine.packet_out(self.onu, PORT_NO, GEM, eapol.success_frame(mac, 2))
        assert service.eapol_state == "eap_response_success_received"

        for expected in ("dhcp_request_sent", "dhcp_ack_received"):
            if expected == "dhcp_request_sent":
                self.sim.events.clear()
                engine.restart_dhcp(service)
            request = self.packet_indications("pon")[-1].pkt
            self.sim.events.clear()
            engine.uplink_packet_out(self.olt, 0, request)
            reply = self.packet_indications("nni")[-1].pkt
            engine.packet_out(self.onu, PORT_NO, GEM, reply)
            assert service.dhcp_state == expected
        assert engine.pending_timers() == 0


@pytest.fixture
def logged_failures():
    """Errors and failures logged while the test runs (a handler, timer or callback that raised)."""
    seen = []

    def observer(event):
        if "log_failure" in event or event.get("log_level") in (LogLevel.error, LogLevel.critical):
            seen.append(event)

    globalLogPublisher.addObserver(observer)
    yield seen
    globalLogPublisher.removeObserver(observer)


# ---- strategies: OMCI ---------------------------------------------------------------------------------------

def _valid_omci() -> list[bytes]:
    """One well-formed request of every kind the responder handles, baseline and extended."""
    e, AR = codec.encode, codec.AR
    pptp, tcont, ani = codec.PPTP_ETHERNET_UNI, codec.T_CONT, codec.ANI_G
    out = [
        e(1, AR | codec.MIB_RESET, codec.ONU_DATA, 0),
        e(2, AR | codec.MIB_UPLOAD, codec.ONU_DATA, 0),
        e(3, AR | codec.MIB_UPLOAD_NEXT, codec.ONU_DATA, 0, (5).to_bytes(2, "big")),
        e(4, AR | codec.GET, codec.ONU_G, 0, b"\xa0\x00"),
        e(5, AR | codec.GET, codec.SOFTWARE_IMAGE, 1, b"\xff\xff"),
        e(6, AR | codec.GET, ani, 0x8001, b"\xff\xfe"),
        e(7, AR | codec.SET, pptp, 0x0101, b"\x08\x00\x01"),
        e(8, AR | codec.SET, codec.ONU_G, 0, b"\x02\x00\x01"),
        e(9, AR | codec.SET, tcont, 0x8001, b"\x80\x00\x04\x00"),
        e(10, AR | codec.CREATE, codec.GEM_PORT_NETWORK_CTP, 1024, bytes(20)),
        e(11, AR | codec.DELETE, codec.GEM_PORT_NETWORK_CTP, 1024),
        e(12, AR | codec.SYNC_TIME, codec.ONU_G, 0, bytes(7)),
        e(13, AR | codec.TEST, ani, 0x8001, b"\x07"),
        e(14, AR | codec.GET_ALL_ALARMS, codec.ONU_DATA, 0, b"\x00"),
        e(15, AR | codec.GET_ALL_ALARMS_NEXT, codec.ONU_DATA, 0, b"\x00\x00"),
        e(16, AR | codec.START_SW_DOWNLOAD, codec.SOFTWARE_IMAGE, 1, b"\x1f" + (62).to_bytes(4, "big") + b"\x01"),
        e(17, codec.DOWNLOAD_SECTION, codec.SOFTWARE_IMAGE, 1, b"\x00" + b"BBSM_IMG_00002" + bytes(17)),
        e(18, AR | codec.DOWNLOAD_SECTION, codec.SOFTWARE_IMAGE, 1, b"\x01" + bytes(31)),
        e(19, AR | codec.END_SW_DOWNLOAD, codec.SOFTWARE_IMAGE, 1, bytes(4) + (62).to_bytes(4, "big") + b"\x01"),
        e(20, AR | codec.ACTIVATE_SW, codec.SOFTWARE_IMAGE, 1, b"\x00"),
        e(21, AR | codec.COMMIT_SW, codec.SOFTWARE_IMAGE, 1),
        e(22, AR | codec.REBOOT, codec.ONU_G, 0, b"\x00"),
    ]
    out += [
        e(30, AR | codec.MIB_UPLOAD, codec.ONU_DATA, 0, extended=True),
        e(31, AR | codec.MIB_UPLOAD_NEXT, codec.ONU_DATA, 0, b"\x00\x01", extended=True),
        e(32, AR | codec.GET, codec.ONU2_G, 0, b"\xff\xff", extended=True),
        e(33, AR | codec.SET, pptp, 0x0102, b"\x08\x00\x00", extended=True),
        e(34, AR | codec.START_SW_DOWNLOAD, codec.SOFTWARE_IMAGE, 0, b"\x1f" + (4000).to_bytes(4, "big") + b"\x01",
          extended=True),
        e(35, AR | codec.DOWNLOAD_SECTION, codec.SOFTWARE_IMAGE, 0, b"\x00" + bytes(1965), extended=True),
    ]
    return out


VALID_OMCI = _valid_omci()
ME_CLASSES = [2, 6, 7, 11, 24, 53, 134, 138, 256, 257, 262, 263, 264, 268, 277, 278, 312, 321, 322, 334, 341, 425,
              37, 0, 0xFFFF]
ME_IDS = [0, 1, 0x0101, 0x0102, 0x0104, 0x0105, 0x8001, 0x8008, 4069, 1024]


@st.composite
def mutated(draw, valid: list[bytes]) -> bytes:
    """A valid frame as it is or with a few octets replaced, inserted or removed, cut short or extended."""
    data = bytearray(draw(st.sampled_from(valid)))
    for _ in range(draw(st.integers(0, 3))):
        op = draw(st.sampled_from(("set", "set", "xor", "insert", "delete", "truncate", "extend")))
        at = draw(st.integers(0, max(0, len(data) - 1)))
        if op == "set" and data:
            data[at] = draw(st.integers(0, 255))
        elif op == "xor" and data:
            data[at] ^= 1 << draw(st.integers(0, 7))
        elif op == "insert":
            data[at:at] = draw(st.binary(min_size=1, max_size=4))
        elif op == "delete":
            del data[at:at + draw(st.integers(1, 4))]
        elif op == "truncate":
            del data[at:]
        elif op == "extend":
            data += draw(st.binary(min_size=1, max_size=8))
    return bytes(data)


@st.composite
def structured_omci(draw) -> bytes:
    """A frame built with the codec from random fields: any message type, class, instance and contents."""
    extended = draw(st.booleans())
    message_type = draw(st.one_of(st.integers(0, 255), st.integers(4, 29).map(lambda a: a | codec.AR)))
    me_class = draw(st.one_of(st.sampled_from(ME_CLASSES), st.integers(0, 0xFFFF)))
    me_id = draw(st.one_of(st.sampled_from(ME_IDS), st.integers(0, 0xFFFF)))
    contents = draw(st.binary(max_size=64 if extended else 32))
    return codec.encode(draw(st.integers(0, 0xFFFF)), message_type, me_class, me_id, contents, extended)


# Half of the frames are (mutated) valid requests, which reach the handlers; the rest mostly stop at the codec.
omci_frames = st.one_of(st.binary(max_size=64), structured_omci(), mutated(VALID_OMCI), mutated(VALID_OMCI))


@st.composite
def omci_hex(draw) -> bytes:
    """What an adapter might put in OmciMsg.pkt: the hex text of a frame, upper case, cut to an odd length,
    with a non-hex character, or not text at all."""
    text = draw(omci_frames).hex()
    variant = draw(st.sampled_from(("hex", "upper", "odd", "nonhex", "text", "binary")))
    if variant == "upper":
        text = text.upper()
    elif variant == "odd":
        text = text[:-1] if text else "0"
    elif variant == "nonhex":
        at = draw(st.integers(0, len(text)))
        text = text[:at] + draw(st.sampled_from("gZ \t\n:-xé\x00")) + text[at:]
    elif variant == "text":
        return draw(st.text(max_size=100)).encode("utf-8")
    elif variant == "binary":
        return draw(st.binary(max_size=100))
    return text.encode("utf-8")


# ---- strategies: packets ------------------------------------------------------------------------------------

def _valid_packets() -> list[bytes]:
    """Frames of each protocol a subscriber speaks, to the fuzzed service (or from it, for the uplink)."""
    mac = f.mac_bytes("2e:00:00:01:00:00")
    group = f.ip_bytes(GROUP)
    discover = dhcp.discover_frame(mac, 900, 0, GEM, 0, 1)
    request = dhcp.request_frame(mac, 900, 0, GEM, 0, 1, f.ip_bytes("10.0.1.0"))
    server = dhcp.DhcpServer()
    return [
        eapol.eapol_start_frame(mac),
        f.build_ethernet(mac, mac, f.ETH_EAPOL, f.build_eapol(f.EAPOL_LOGOFF)),
        eapol.identity_request_frame(mac, 1),
        eapol.md5_request_frame(mac, 2, bytes(range(16))),
        eapol.success_frame(mac, 2),
        eapol.failure_frame(mac, 2),
        eapol.eap_frame(f.PAE_GROUP_MAC, mac, f.build_eap(f.EAP_REQUEST, 3, f.EAP_TYPE_IDENTITY)),
        discover,
        request,
        server.answer(f.decode(discover)),
        server.answer(f.decode(request)),
        igmp.query_frame(900, v3=False),
        igmp.query_frame(900, group, v3=True),
        igmp.join_v2_frame(mac, group, 900, 0),
        igmp.join_v3_frame(mac, group, 900, 0),
        igmp.leave_v2_frame(mac, group, 900, 0),
    ]


VALID_PACKETS = _valid_packets()
packets = st.one_of(st.binary(max_size=128), mutated(VALID_PACKETS), st.sampled_from(VALID_PACKETS))
deliveries = st.tuples(st.sampled_from(("onu", "onu", "uplink")),
                       st.one_of(st.just(PORT_NO), st.integers(0, 300)), packets)


# ---- properties ---------------------------------------------------------------------------------------------

@FUZZ
@given(sequence=st.lists(omci_frames, min_size=1, max_size=8))
def test_random_omci_frames_to_the_responder(sequence, logged_failures):
    """Frames parsed and handed to OmciResponder.handle (oltsim.omci.wrappers.receive, as OmciMsgOut does) raise at
    most OmciError, log no failure, and the ONU then still answers a MIB reset."""
    env = Onu()
    for data in sequence:
        try:
            receive(env.responder, env.onu, data)
        except OmciError:
            pass
        env.sim.clock.advance(0)
    env.answers_mib_reset(env.onu)
    assert logged_failures == []


@FUZZ
@given(sequence=st.lists(st.tuples(st.sampled_from((1, 1, 2)), omci_hex()), min_size=1, max_size=8))
def test_random_omci_msg_out(sequence, logged_failures):
    """OmciMsgOut with any pkt (hex text of random frames, odd length, non-hex, not text) answers OK or
    INVALID_ARGUMENT only, logs no failure, and both ONUs still answer a MIB reset."""
    env = Onu()
    for onu_id, pkt in sequence:
        env.omci_out(pkt, onu_id)
        env.sim.clock.advance(0)
    for onu in env.olt.onus:
        env.answers_mib_reset(onu)
    assert logged_failures == []


@FUZZ
@given(sequence=st.lists(deliveries, min_size=1, max_size=10))
def test_random_packets(sequence, logged_failures):
    """Packets through ProtocolEngine.packet_out and uplink_packet_out raise at most InvalidArgument, log no
    failure and leave every service in a state of its machines; EAPOL and DHCP still complete afterwards."""
    env = Onu()
    for target, port_no, pkt in sequence:
        try:
            if target == "onu":
                env.engine.packet_out(env.onu, port_no, GEM, pkt)
            else:
                env.engine.uplink_packet_out(env.olt, 0, pkt)
        except InvalidArgument:
            pass
        env.states_are_legal()
    env.sim.clock.advance(61)        # attempt timeouts run out on states left mid-exchange
    env.states_are_legal()
    env.completes_eapol_and_dhcp()
    assert logged_failures == []
