"""EAPOL supplicant: FlowAdd trigger, each state with the next frame, timeouts and retries on a
fake clock, restarts, and OnuPacketOut validation, on real model objects."""
import hashlib
import random

import pytest
from twisted.internet.task import Clock
from zope.interface.verify import verifyObject

from oltsim.config import load_settings
from oltsim.model import events
from oltsim.model.builder import build_olt
from oltsim.model.errors import FailedPrecondition, InvalidArgument
from oltsim.model.flows import Flow
from oltsim.packets import eapol, frames as f
from oltsim.packets.engine import ProtocolEngine
from oltsim.packets.handler import IFrameHandler


class Bench:
    """One OLT (1 PON, 2 ONUs, ATT services), engine attached, ONU 1 active with UNI 0 up."""

    def __init__(self, **options):
        self.clock = Clock()
        engine_options = {k: options.pop(k) for k in list(options)
                          if k in ("auth_retry", "eapol_timeout", "dhcp_retry", "dhcp_timeout")}
        self.settings = load_settings({"pon": 1, "onu": 2, **options, **engine_options}, None)
        self.engine = ProtocolEngine.from_settings(self.settings)
        self.olt = build_olt(self.settings, self.clock, random.Random(0), frames=self.engine)
        self.engine.attach(self.olt)
        self.events = []
        self.olt.subscribe(self.events.append)
        self.olt.start()
        self.olt.enable_indication()
        self.clock.advance(1)
        self.onu = self.olt.activate_onu(0, "BBSM00000001", 1)
        self.uni = self.onu.unis[0]
        self.uni.enable()
        self.service = self.uni.services[0]
        self.mac = f.mac_bytes(self.service.mac)

    def flow(self, **fields):
        base = dict(flow_id=1, flow_type="downstream", access_intf_id=0, onu_id=1, uni_id=0, port_no=1,
                    alloc_id=1, gemport_id=1)
        base.update(fields)
        self.olt.flow_add(Flow(**base))

    def eapol_flow(self, **fields):
        self.flow(eth_type=0x888E, o_vid=4091, **fields)

    def pkts(self):
        return [e for e in self.events if isinstance(e, events.PacketIndication)]

    def out(self, pkt, port_no=1):
        self.engine.packet_out(self.onu, port_no, 1, pkt)

    def eapol_changes(self):
        return [(e.src, e.dest) for e in self.events
                if isinstance(e, events.StateChanged) and e.attribute == "EapolState"]


@pytest.fixture
def bench():
    return Bench()


def authenticate(bench, challenge=bytes(range(16))):
    bench.eapol_flow()
    bench.out(eapol.identity_request_frame(bench.mac, 1))
    bench.out(eapol.md5_request_frame(bench.mac, 2, challenge))
    bench.out(eapol.success_frame(bench.mac, 2))


# ---- trigger and Start ------------------------------------------------------------------------

def test_every_frame_of_the_supplicant_goes_from_its_mac_to_the_pae_group_address(bench):
    """EAPOL-Start, Response/Identity and Response/MD5 leave the UNI as an RG's do: from the service MAC to
    01:80:c2:00:00:03 (not to the service MAC itself), and the exchange still ends in success."""
    authenticate(bench)
    frames = [f.decode(p.pkt) for p in bench.pkts()]
    assert [(fr.eapol.type_name, fr.eap and fr.eap.code) for fr in frames] == [
        ("Start", None), ("EAP-Packet", f.EAP_RESPONSE), ("EAP-Packet", f.EAP_RESPONSE)]
    assert {(fr.eth.dst, fr.eth.src) for fr in frames} == {(f.PAE_GROUP_MAC, bench.mac)}
    assert bench.service.eapol_state == "eap_response_success_received"


def test_eapol_flow_sends_start_as_pktind(bench):
    """An EAPOL trap flow sends EAPOL-Start from UNI 0, addressed with the service GEM and UNI port_no."""
    bench.eapol_flow(gemport_id=1024, port_no=16)
    assert bench.service.eapol_state == "eap_start_sent"
    assert bench.pkts() == [events.PacketIndication("pon", 0, eapol.eapol_start_frame(bench.mac), onu_id=1,
                                                    uni_id=0, gemport_id=1024, port_no=16)]


def test_start_passes_through_auth_started(bench):
    """The service goes created -> auth_started -> eap_start_sent, each change published."""
    bench.eapol_flow()
    assert bench.eapol_changes() == [("created", "auth_started"), ("auth_started", "eap_start_sent")]


def test_flow_with_other_vid_does_not_start(bench):
    """An EAPOL flow whose o_vid is not 4091 starts nothing."""
    bench.flow(eth_type=0x888E, o_vid=100)
    assert bench.service.eapol_state == "created" and bench.pkts() == []


def test_flow_on_down_uni_does_not_start(bench):
    """Services of a UNI that is down are not initialized and do not authenticate."""
    bench.eapol_flow(uni_id=1)
    assert bench.onu.unis[1].services[0].eapol_state == "created" and bench.pkts() == []


def test_second_eapol_flow_during_attempt_is_ignored(bench):
    """A repeated EAPOL flow while an attempt is under way sends nothing new."""
    bench.eapol_flow()
    bench.eapol_flow()
    assert len(bench.pkts()) == 1 and bench.service.eapol_state == "eap_start_sent"


# ---- each state with the next frame -------------------------------------------------------------

def test_identity_request_answered_with_user(bench):
    """In eap_start_sent an Identity Request gets Response/Identity 'user' with the same id."""
    bench.eapol_flow()
    bench.out(eapol.identity_request_frame(bench.mac, 42))
    assert bench.service.eapol_state == "eap_response_identity_sent"
    last = bench.pkts()[-1]
    assert last.pkt == eapol.identity_response_frame(bench.mac, 42)
    eap = f.decode(last.pkt).eap
    assert (eap.code, eap.id, eap.type, eap.data) == (2, 42, 1, b"user")
    assert (last.intf_type, last.onu_id, last.uni_id, last.gemport_id, last.port_no) == ("pon", 1, 0, 1, 1)


def test_md5_challenge_answered(bench):
    """In eap_response_identity_sent an MD5-Challenge gets 0x10 || MD5(id || 'password' || challenge)."""
    challenge = bytes.fromhex("00112233445566778899aabbccddeeff")
    bench.eapol_flow()
    bench.out(eapol.identity_request_frame(bench.mac, 1))
    bench.out(eapol.md5_request_frame(bench.mac, 9, challenge))
    assert bench.service.eapol_state == "eap_response_challenge_sent"
    eap = f.decode(bench.pkts()[-1].pkt).eap
    assert (eap.code, eap.id, eap.type) == (2, 9, 4)
    assert eap.data == b"\x10" + hashlib.md5(b"\x09password" + challenge).digest()


def test_success_completes_and_cancels_timer(bench):
    """EAP-Success after the challenge response completes authentication and cancels the timeout."""
    authenticate(bench)
    assert bench.service.eapol_state == "eap_response_success_received"
    assert bench.engine.pending_timers() == 0 and not bench.onu._timer_calls
    bench.clock.advance(120)
    assert bench.service.eapol_state == "eap_response_success_received"


@pytest.mark.parametrize("sequence,state", [
    (["identity", "identity"], "eap_response_identity_sent"),
    (["md5"], "eap_start_sent"),
    (["success"], "eap_start_sent"),
    (["identity", "success"], "eap_response_identity_sent"),
])
def test_frames_in_wrong_state_fail_the_attempt(bench, sequence, state):
    """A request or Success the state does not expect is dropped and the attempt fails (as BBSim)."""
    frames = {"identity": eapol.identity_request_frame(bench.mac, 1),
              "md5": eapol.md5_request_frame(bench.mac, 2, bytes(16)),
              "success": eapol.success_frame(bench.mac, 2)}
    bench.eapol_flow()
    for name in sequence[:-1]:
        bench.out(frames[name])
    assert bench.service.eapol_state == state
    sent = len(bench.pkts())
    bench.out(frames[sequence[-1]])
    assert bench.service.eapol_state == "auth_failed" and len(bench.pkts()) == sent


def test_request_before_any_attempt_is_dropped(bench):
    """An Identity Request to a service that never started stays created and is not answered."""
    bench.flow(port_no=1)
    bench.out(eapol.identity_request_frame(bench.mac, 1))
    assert bench.service.eapol_state == "created" and bench.pkts() == []


@pytest.mark.parametrize("ptype", [f.EAPOL_LOGOFF, f.EAPOL_START, 3])
def test_eapol_without_eap_is_ignored(bench, ptype):
    """EAPOL-Logoff, Start and Key frames are logged and ignored (BBSim crashes on Logoff)."""
    bench.eapol_flow()
    bench.out(f.build_ethernet(bench.mac, bench.mac, f.ETH_EAPOL, f.build_eapol(ptype)))
    assert bench.service.eapol_state == "eap_start_sent" and len(bench.pkts()) == 1


def test_eap_failure_fails_the_attempt(bench):
    """EAP-Failure moves the attempt to auth_failed."""
    bench.eapol_flow()
    bench.out(eapol.identity_request_frame(bench.mac, 1))
    bench.out(eapol.failure_frame(bench.mac, 1))
    assert bench.service.eapol_state == "auth_failed"


def test_other_eap_types_and_responses_are_ignored(bench):
    """A Request of an unsupported type, or an EAP Response, changes nothing."""
    bench.eapol_flow()
    bench.out(eapol.eap_frame(bench.mac, bench.mac, f.build_eap(f.EAP_REQUEST, 1, 13, b"tls")))
    bench.out(eapol.eap_frame(bench.mac, bench.mac, f.build_eap(f.EAP_RESPONSE, 1, 1, b"x")))
    assert bench.service.eapol_state == "eap_start_sent" and len(bench.pkts()) == 1


def test_malformed_md5_value_fails_the_attempt(bench):
    """An MD5-Challenge whose value size exceeds its data fails the attempt."""
    bench.eapol_flow()
    bench.out(eapol.identity_request_frame(bench.mac, 1))
    bench.out(eapol.eap_frame(bench.mac, bench.mac, f.build_eap(f.EAP_REQUEST, 2, 4, b"\x10abc")))
    assert bench.service.eapol_state == "auth_failed"


def test_pae_group_destination_reaches_the_eapol_service(bench):
    """A request sent to the PAE group address goes to the UNI's EAPOL service."""
    bench.eapol_flow()
    bench.out(eapol.eap_frame(f.PAE_GROUP_MAC, bytes(6), f.build_eap(f.EAP_REQUEST, 3, f.EAP_TYPE_IDENTITY)))
    assert bench.service.eapol_state == "eap_response_identity_sent"


# ---- timeouts, retries, restarts --------------------------------------------------------------

def test_timeout_without_retry_fails_once():
    """Without auth_retry the attempt fails at eapol_timeout and nothing follows."""
    bench = Bench(eapol_timeout=30)
    bench.eapol_flow()
    bench.clock.advance(29.9)
    assert bench.service.eapol_state == "eap_start_sent"
    bench.clock.advance(0.1)
    assert bench.service.eapol_state == "auth_failed"
    bench.clock.advance(300)
    assert len(bench.pkts()) == 1 and bench.engine.pending_timers() == 0


def test_timeout_with_retry_starts_again():
    """With auth_retry a timed-out attempt fails and a new EAPOL-Start goes out at once."""
    bench = Bench(auth_retry=True, eapol_timeout=5)
    bench.eapol_flow()
    bench.clock.advance(5)
    assert bench.service.eapol_state == "eap_start_sent"
    assert [p.pkt for p in bench.pkts()] == [eapol.eapol_start_frame(bench.mac)] * 2
    assert ("eap_start_sent", "auth_failed") in bench.eapol_changes()
    assert bench.engine.pending_timers() == 1
    bench.out(eapol.identity_request_frame(bench.mac, 1))
    bench.out(eapol.md5_request_frame(bench.mac, 2, bytes(16)))
    bench.out(eapol.success_frame(bench.mac, 2))
    assert bench.service.eapol_state == "eap_response_success_received"
    assert bench.engine.pending_timers() == 0


def test_failed_attempt_with_retry_restarts_at_timeout():
    """With auth_retry an attempt that failed mid-exchange starts again when its timer expires."""
    bench = Bench(auth_retry=True, eapol_timeout=10)
    bench.eapol_flow()
    bench.out(eapol.success_frame(bench.mac, 1))
    assert bench.service.eapol_state == "auth_failed"
    bench.clock.advance(10)
    assert bench.service.eapol_state == "eap_start_sent" and len(bench.pkts()) == 2


def test_failed_attempt_without_retry_leaves_no_timer(bench):
    """Without auth_retry a failed attempt cancels its timer."""
    before = bench.olt.pending_calls()
    bench.eapol_flow()
    assert bench.olt.pending_calls() == before + 1
    bench.out(eapol.success_frame(bench.mac, 1))
    assert bench.engine.pending_timers() == 0 and bench.olt.pending_calls() == before
    assert not bench.onu._timer_calls


def test_restart_mid_exchange_abandons_and_starts_over(bench):
    """RestartEapol during an exchange fails the attempt and sends a fresh Start with one timer."""
    bench.eapol_flow()
    bench.out(eapol.identity_request_frame(bench.mac, 1))
    bench.engine.restart_eapol(bench.service)
    assert bench.service.eapol_state == "eap_start_sent"
    assert bench.eapol_changes()[-3:] == [("eap_response_identity_sent", "auth_failed"),
                                          ("auth_failed", "auth_started"), ("auth_started", "eap_start_sent")]
    assert bench.engine.pending_timers() == 1


def test_restart_after_success_authenticates_again(bench):
    """RestartEapol after success starts a new exchange that completes again."""
    authenticate(bench)
    bench.engine.restart_eapol(bench.service)
    assert bench.service.eapol_state == "eap_start_sent"
    bench.out(eapol.identity_request_frame(bench.mac, 1))
    bench.out(eapol.md5_request_frame(bench.mac, 2, bytes(16)))
    bench.out(eapol.success_frame(bench.mac, 2))
    assert bench.service.eapol_state == "eap_response_success_received"


def test_restart_refused_for_service_that_is_not_running(bench):
    """RestartEapol on a service of a down UNI is a FailedPrecondition."""
    with pytest.raises(FailedPrecondition):
        bench.engine.restart_eapol(bench.onu.unis[1].services[0])


def test_restart_refused_while_onu_not_active(bench):
    """RestartEapol on a service of an ONU that is shut down is a FailedPrecondition naming its state."""
    service = bench.onu.unis[0].services[0]
    bench.olt.disable_pon(0)
    with pytest.raises(FailedPrecondition, match="is pon_disabled"):
        bench.engine.restart_eapol(service)
    assert bench.pkts() == []


def test_uni_down_during_attempt_makes_timer_harmless():
    """A UNI going down resets the service; the old attempt's timer then does nothing."""
    bench = Bench(auth_retry=True, eapol_timeout=5)
    bench.eapol_flow()
    bench.uni.disable()
    bench.uni.enable()
    bench.clock.advance(5)
    assert bench.service.eapol_state == "created" and len(bench.pkts()) == 1


def test_onu_power_off_cancels_attempt_timers():
    """Shutting the ONU down cancels its pending EAPOL timer."""
    bench = Bench(auth_retry=True)
    bench.eapol_flow()
    bench.olt.shutdown_onu(bench.onu.serial)
    assert bench.engine.pending_timers() == 0
    bench.clock.advance(120)
    assert len(bench.pkts()) == 1


# ---- OnuPacketOut validation ----------------------------------------------------------------

@pytest.mark.parametrize("pkt,match", [
    (b"", "Ethernet frame needs at least 14 bytes"),
    (b"\x01\x02\x03", "Ethernet"),
    (bytes(12) + b"\x08\x06" + bytes(28), "EtherType 0x0806"),
    (bytes(12) + b"\x88\x8e\x01\x00\x00\x50", "EAPOL length"),
])
def test_packet_out_rejects_garbage(bench, pkt, match):
    """Undecodable frames and frames of other protocols are InvalidArgument with a clear message."""
    bench.eapol_flow()
    with pytest.raises(InvalidArgument, match=match):
        bench.out(pkt)
    assert bench.service.eapol_state == "eap_start_sent"


def test_packet_out_unknown_port_no(bench):
    """A port_no that no UNI has is InvalidArgument naming the known ones."""
    bench.eapol_flow(port_no=7)
    with pytest.raises(InvalidArgument, match="no UNI has port_no 9 .*known: 7"):
        bench.out(eapol.identity_request_frame(bench.mac, 1), port_no=9)


def test_packet_out_unknown_mac(bench):
    """An EAPOL frame to a MAC no service of the UNI has is InvalidArgument."""
    bench.eapol_flow()
    with pytest.raises(InvalidArgument, match="no service on UNI 0 has MAC 2e:00:00:01:00:09"):
        bench.out(eapol.identity_request_frame(f.mac_bytes("2e:00:00:01:00:09"), 1))


def test_packet_out_to_inactive_onu_is_dropped(bench):
    """A valid frame for an ONU that is not active is dropped without error (BBSim drops it too)."""
    other = bench.olt.onu_by_serial("BBSM00000002")
    bench.engine.packet_out(other, 1, 1, eapol.identity_request_frame(bench.mac, 1))
    assert bench.pkts() == []


def test_packet_out_fuzz_never_raises_other_errors_and_service_stays_usable(bench):
    """Random and mutated frames raise only InvalidArgument; authentication still completes after."""
    rng = random.Random(7)
    bench.eapol_flow()
    valid = [eapol.identity_request_frame(bench.mac, 1), eapol.md5_request_frame(bench.mac, 2, bytes(16)),
             eapol.success_frame(bench.mac, 2)]
    for i in range(1500):
        if i % 2:
            raw = rng.randbytes(rng.randrange(0, 120))
        else:
            raw = bytearray(rng.choice(valid))
            raw[rng.randrange(len(raw))] = rng.randrange(256)
            raw = bytes(raw)
        try:
            bench.out(raw)
        except InvalidArgument:
            pass
    bench.engine.restart_eapol(bench.service)
    for raw in valid:
        bench.out(raw)
    assert bench.service.eapol_state == "eap_response_success_received"


# ---- construction -------------------------------------------------------------------------

def test_from_settings_takes_retry_and_timeouts():
    """from_settings copies auth/dhcp retry flags and timeouts from the settings."""
    settings = load_settings({"auth_retry": True, "eapol_timeout": 3, "dhcp_retry": True, "dhcp_timeout": 4}, None)
    engine = ProtocolEngine.from_settings(settings)
    assert (engine.eapol.retry, engine.eapol.timeout, engine.dhcp.retry, engine.dhcp.timeout) == (True, 3, True, 4)


def test_the_engine_is_a_frame_handler_the_olts_devices_reach_through_their_hub(bench):
    """The engine provides IFrameHandler; the OLT built with it hands it every ONU's packets and flows (through
    the devices' hub), and attach learns the services' MACs."""
    assert verifyObject(IFrameHandler, bench.engine)
    assert all(onu.hub.frames is bench.engine for onu in bench.olt.onus)
    assert bench.engine.service_macs[bench.mac] is bench.service
