"""Fault knobs on the model: OMCI delay with and without jitter, the per-ONU OMCI rate, mute, EAPOL/DHCP
frames dropped, clearing each knob, cancel_all, power-off and validation, on the real model, responder and protocol
engine with a fake clock. OMCI reaches the responder through the fault wrapper in front of it, as in the daemon."""
import random

import pytest
from twisted.internet.task import Clock
from twisted.logger import globalLogPublisher

from oltsim.config import load_settings
from oltsim.model import events
from oltsim.model.builder import build_olt
from oltsim.model.errors import InvalidArgument, NotFound
from oltsim.model.faults import KNOBS
from oltsim.model.flows import Flow
from oltsim.omci import codec
from oltsim.omci.responder import OmciResponder
from oltsim.omci.wrappers import OmciFaultWrapper, OmciWrapper, receive
from oltsim.packets import dhcp, eapol, frames as f
from oltsim.packets.engine import ProtocolEngine

SERIAL = "BBSM00000001"
OTHER = "BBSM00000002"
GET, SET = 0x49, 0x48
ONU_G = 256


class Env:
    """An OLT (1 PON, 2 ONUs) with the OMCI responder and the protocol engine; ONU 1 active with UNI 0 up."""

    def __init__(self, response_rate=10, **options):
        self.clock = Clock()
        self.settings = load_settings({"pon": 1, "onu": 2, **options}, None)
        self.omci = OmciResponder(response_rate=response_rate)
        #: what the adapter's OMCI reaches: the fault knobs in front of the responder (oltsim.omci.wrappers)
        self.responder = OmciFaultWrapper(self.omci)
        self.engine = ProtocolEngine.from_settings(self.settings)
        self.olt = build_olt(self.settings, self.clock, random.Random(0), omci=self.responder, frames=self.engine)
        self.answers = []              # (time, serial, tid) of every OMCI answer
        self.events = []
        self.olt.subscribe(self.events.append)
        self.olt.subscribe(self._note)
        self.omci.attach(self.olt)
        self.engine.attach(self.olt)
        self.olt.start()
        self.olt.enable_indication()
        self.clock.advance(1)
        self.onu = self.olt.activate_onu(0, SERIAL, 1)
        self.other = self.olt.activate_onu(0, OTHER, 2)
        self.uni = self.onu.unis[0]
        self.uni.enable()
        self.service = self.uni.services[0]
        self.mac = f.mac_bytes(self.service.mac)
        self.flow(flow_id=99)                          # gives UNI 0 its port_no (1): OnuPacketOut reaches it
        self.faults = self.olt.faults
        self.start = self.clock.seconds()
        self.events.clear()

    def _note(self, event):
        if isinstance(event, events.OmciIndication):
            frame = codec.parse(event.pkt)
            if frame.message_type == codec.GET | 0x20:         # a Get response
                serial = self.olt.pon(event.intf_id).onu_by_id(event.onu_id).serial
                self.answers.append((round(self.clock.seconds() - self.start, 9), serial, frame.tid))

    def get(self, tid, onu=None):
        """Send a Get ONU-G (vendor id) with `tid` to the ONU (default ONU 1)."""
        receive(self.responder, onu or self.onu, codec.encode(tid, GET, ONU_G, 0, b"\x40\x00"))

    def tids(self, serial=SERIAL):
        return [tid for _, s, tid in self.answers if s == serial]

    def flow(self, **fields):
        base = dict(flow_id=1, flow_type="downstream", access_intf_id=0, onu_id=1, uni_id=0, port_no=1,
                    alloc_id=1, gemport_id=1)
        base.update(fields)
        self.olt.flow_add(Flow(**base))

    def out(self, pkt):
        self.engine.packet_out(self.onu, 1, 1, pkt)


@pytest.fixture
def env():
    return Env()


def advance_to(env, t):
    """Advance the clock to `t` (from the start) stopping at every timer on the way, so that each call runs at its
    own time (Clock.advance runs every call due in a step at the step's end)."""
    end = env.start + t
    while True:
        due = [c.getTime() for c in env.clock.getDelayedCalls() if c.getTime() <= end]
        step = min(due) if due else end
        env.clock.advance(max(0.0, step - env.clock.seconds()))
        if not due:
            return


def jittered(seed, arrivals, delay, jitter):
    """The answer times the contract gives: each at arrival + delay + uniform(0, jitter), never before the last."""
    rng = random.Random(seed)
    times, last = [], 0.0
    for t in arrivals:
        last = max(t + delay + rng.uniform(0, jitter), last)
        times.append(round(last, 9))
    return times


# ---- omci-delay ---------------------------------------------------------------------------------

def test_delay_without_jitter_answers_after_the_delay_in_order(env):
    """With a 0.5 s delay every answer comes 0.5 s after its request, in request order; other ONUs answer at once."""
    env.faults.set_omci_delay(env.onu, 0.5)
    env.get(1)
    env.clock.advance(0.2)
    env.get(2)
    env.get(3, onu=env.other)
    assert env.answers == [(0.2, OTHER, 3)]
    assert env.faults.pending() == 2
    env.clock.advance(0.3)
    assert env.answers[1:] == [(0.5, SERIAL, 1)]
    env.clock.advance(0.2)
    assert env.answers[1:] == [(0.5, SERIAL, 1), (0.7, SERIAL, 2)]
    assert env.faults.pending() == 0


def test_delay_defers_the_requests_effect_too(env):
    """A delayed Set unlocking a UNI unlocks it when its answer goes out, not before."""
    uni = env.onu.unis[1]
    env.faults.set_omci_delay(env.onu, 1.0)
    receive(env.responder, env.onu, codec.encode(9, SET, 11, uni.me_id, b"\x08\x00" + b"\x00"))
    assert uni.state == "down"
    env.clock.advance(1.0)
    assert uni.state == "up"


def test_jitter_keeps_order_and_follows_the_seed(env):
    """With jitter larger than the gap between requests answers still come in request order, at the times the
    seed gives (each delay + uniform(0, jitter), pushed back to the previous answer's time when earlier)."""
    env.faults.reseed(42)
    env.faults.set_omci_delay(env.onu, 0.1, jitter=1.0)
    arrivals = [i * 0.05 for i in range(20)]
    for tid, t in enumerate(arrivals, 1):
        advance_to(env, t)
        env.get(tid)
    advance_to(env, 5)
    assert env.tids() == list(range(1, 21))
    times = [t for t, _, _ in env.answers]
    assert times == jittered(42, arrivals, 0.1, 1.0)
    assert times != sorted(t + 0.1 for t in arrivals)      # the jitter moved them (and some ties were pushed back)


def test_same_seed_same_times():
    """Two runs with the same seed answer at the same times; another seed gives other times."""
    def run(seed):
        env = Env()
        env.faults.reseed(seed)
        env.faults.set_omci_delay(env.onu, 0.2, jitter=0.3)
        for tid in range(1, 11):
            env.get(tid)
            advance_to(env, tid * 0.1)
        advance_to(env, 3)
        return env.answers
    assert run(7) == run(7)
    assert run(7) != run(8)


def test_adapter_answering_at_once_stays_in_order(env):
    """An adapter that sends its next request from inside the previous answer (as the built-in one may) gets each
    answer once, in order, each a delay after its request, while earlier requests are still queued."""
    env.faults.set_omci_delay(env.onu, 1.0)

    def next_request(event):
        if isinstance(event, events.OmciIndication) and event.onu_id == 1:
            tid = codec.parse(event.pkt).tid
            if tid < 4:
                env.get(tid + 10)
    env.olt.subscribe(next_request)
    env.get(1)
    env.get(2)
    advance_to(env, 5)
    assert env.answers == [(1.0, SERIAL, 1), (1.0, SERIAL, 2), (2.0, SERIAL, 11), (2.0, SERIAL, 12)]
    assert env.faults.pending() == 0


def test_a_request_after_the_delay_is_cleared_waits_for_the_delayed_ones(env):
    """Clearing the delay lets the pending answers go out at their times, and a request arriving meanwhile is
    answered after them, never before."""
    env.faults.set_omci_delay(env.onu, 1.0)
    env.get(1)
    env.get(2)
    env.faults.clear(env.onu, "omci-delay")
    assert env.faults.of(env.onu) == {} and env.faults.pending() == 2
    env.get(3)
    assert env.answers == []
    env.clock.advance(1.0)
    assert env.answers == [(1.0, SERIAL, 1), (1.0, SERIAL, 2), (1.0, SERIAL, 3)]
    assert env.onu.faults is None                       # back to the one-check fast path
    env.get(4)
    assert env.answers[-1] == (1.0, SERIAL, 4)


def test_powered_off_onu_drops_its_delayed_answers_and_keeps_its_knobs(env):
    """A delayed answer of an ONU powered off meanwhile is never sent, even once the ONU is back; the knob
    survives the power cycle and delays the next request."""
    env.faults.set_omci_delay(env.onu, 1.0)
    env.get(1)
    env.olt.shutdown_onu(SERIAL)
    env.clock.advance(0.5)
    env.olt.power_on_onu(SERIAL)
    env.clock.advance(2)
    assert env.answers == [] and env.faults.pending() == 0
    assert env.faults.of(env.onu) == {"omci-delay": {"delay": 1.0, "jitter": 0.0}}
    env.get(2)
    env.clock.advance(1.0)
    assert env.answers == [(3.5, SERIAL, 2)]


def test_delayed_answer_of_an_onu_inactive_at_its_time_is_dropped(env):
    """A delayed request whose ONU is no longer active when its time comes (its PON went down) is not answered."""
    env.faults.set_omci_delay(env.onu, 1.0)
    env.get(1)
    env.olt.disable_pon(0)
    env.clock.advance(1.0)
    assert env.answers == [] and env.faults.pending() == 0


# ---- omci-rate ----------------------------------------------------------------------------------

def test_rate_answers_the_first_n_of_every_ten_requests(env):
    """Rate 3: of each 10 requests counted from the setting, the first 3 are answered; other ONUs are untouched."""
    env.get(100)
    env.faults.set_omci_rate(env.onu, 3)
    for tid in range(1, 26):
        env.get(tid)
        env.get(tid, onu=env.other)
    assert env.tids() == [100, 1, 2, 3, 11, 12, 13, 21, 22, 23]
    assert env.tids(OTHER) == list(range(1, 26))


def test_rate_zero_answers_nothing_and_clear_answers_all(env):
    """Rate 0 ignores every request; clearing the knob (or setting 10) answers every one again."""
    env.faults.set_omci_rate(env.onu, 0)
    for tid in range(1, 11):
        env.get(tid)
    assert env.answers == []
    env.faults.clear(env.onu, "omci-rate")
    env.get(11)
    env.faults.set_omci_rate(env.onu, 0)
    env.faults.set_omci_rate(env.onu, 10)
    env.get(12)
    assert env.tids() == [11, 12] and env.onu.faults is None


def test_rate_composes_with_the_olt_wide_rate():
    """The ONU's rate filters first; the OLT-wide counter counts what it lets through: 5 and 5 answer 5 of 20."""
    env = Env(response_rate=5)
    env.faults.set_omci_rate(env.onu, 5)
    for tid in range(1, 41):
        env.get(tid)
    assert env.tids() == [1, 2, 3, 4, 5, 21, 22, 23, 24, 25]


def test_rate_with_delay_decides_at_arrival(env):
    """With rate and delay, the requests the rate lets through are answered after the delay, in order."""
    env.faults.set_omci_rate(env.onu, 2)
    env.faults.set_omci_delay(env.onu, 0.5)
    for tid in range(1, 6):
        env.get(tid)
    assert env.faults.pending() == 2
    env.clock.advance(0.5)
    assert env.answers == [(0.5, SERIAL, 1), (0.5, SERIAL, 2)]


# ---- omci-mute ----------------------------------------------------------------------------------

def test_mute_ignores_requests_and_their_effect_until_cleared(env):
    """A muted ONU neither answers nor acts (a Set unlocking a UNI leaves it down); cleared, it answers again."""
    uni = env.onu.unis[1]
    env.faults.set_omci_mute(env.onu)
    env.get(1)
    receive(env.responder, env.onu, codec.encode(2, SET, 11, uni.me_id, b"\x08\x00" + b"\x00"))
    env.clock.advance(10)
    assert env.answers == [] and uni.state == "down"
    env.get(3, onu=env.other)
    assert env.tids(OTHER) == [3]
    env.faults.set_omci_mute(env.onu, False)
    assert env.faults.of(env.onu) == {} and env.onu.faults is None
    env.get(4)
    assert env.tids() == [4]


def test_mute_lets_already_delayed_answers_out(env):
    """Muting after requests were delayed drops only what comes next."""
    env.faults.set_omci_delay(env.onu, 1.0)
    env.get(1)
    env.faults.set_omci_mute(env.onu)
    env.get(2)
    env.clock.advance(1.0)
    assert env.tids() == [1]


# ---- packet-drop --------------------------------------------------------------------------------

def delivered(env, monkeypatch):
    """Record the frames the engine hands to the EAPOL supplicant and the DHCP client."""
    seen = []
    monkeypatch.setattr(env.engine.eapol, "receive", lambda service, frame: seen.append(frame.kind))
    monkeypatch.setattr(env.engine.dhcp, "receive", lambda service, frame: seen.append(frame.kind))
    return seen


def dhcp_offer(env):
    return dhcp.DhcpServer().answer(f.decode(dhcp.discover_frame(env.mac, 900, 0, 1, 0, 1)))


def test_packet_drop_fraction_is_deterministic_with_a_seed(env, monkeypatch):
    """With fraction 0.3 and seed 5, exactly the frames the seed picks are lost: the count is the seed's."""
    seen = delivered(env, monkeypatch)
    env.faults.reseed(5)
    env.faults.set_packet_drop(env.onu, 0.3)
    for _ in range(100):
        env.out(eapol.identity_request_frame(env.mac, 1))
    rng = random.Random(5)
    expected_drops = sum(rng.random() < 0.3 for _ in range(100))
    assert len(seen) == 100 - expected_drops
    assert env.onu.faults.dropped == expected_drops and 0 < expected_drops < 100


def test_packet_drop_only_the_protocols_named(env, monkeypatch):
    """Dropping DHCP at fraction 1 loses every DHCP frame and no EAPOL frame; clearing it delivers DHCP again."""
    seen = delivered(env, monkeypatch)
    env.faults.set_packet_drop(env.onu, 1.0, protocols=["dhcp"])
    assert env.faults.of(env.onu) == {"packet-drop": {"fraction": 1.0, "protocols": ["dhcp"]}}
    env.out(dhcp_offer(env))
    env.out(eapol.identity_request_frame(env.mac, 1))
    assert seen == ["eapol"]
    env.faults.clear(env.onu, "packet-drop")
    env.out(dhcp_offer(env))
    assert seen == ["eapol", "dhcp"]


def test_packet_drop_still_refuses_malformed_frames(env):
    """A dropped-frames knob does not hide an adapter's error: a frame for no UNI is still InvalidArgument."""
    env.faults.set_packet_drop(env.onu, 1.0)
    with pytest.raises(InvalidArgument):
        env.engine.packet_out(env.onu, 99, 1, eapol.identity_request_frame(env.mac, 1))


@pytest.mark.parametrize("retry", [True, False])
def test_dropped_eapol_frame_never_wedges_the_supplicant(retry):
    """Every frame to the ONU lost: the attempt times out and fails (and with auth_retry starts again); with
    the knob cleared a new attempt (the retry, or RestartEapol) authenticates."""
    env = Env(auth_retry=retry, eapol_timeout=10)
    service = env.service
    env.faults.set_packet_drop(env.onu, 1.0, protocols=("eapol",))
    env.flow(eth_type=0x888E, o_vid=4091)
    env.out(eapol.identity_request_frame(env.mac, 1))
    assert service.eapol_state == "eap_start_sent"
    env.clock.advance(10)
    assert service.eapol_state == ("eap_start_sent" if retry else "auth_failed")
    env.faults.clear(env.onu, "packet-drop")
    if not retry:
        env.engine.restart_eapol(service)
    env.out(eapol.identity_request_frame(env.mac, 1))
    env.out(eapol.md5_request_frame(env.mac, 2, bytes(16)))
    env.out(eapol.success_frame(env.mac, 2))
    assert service.eapol_state == "eap_response_success_received"


def test_dropped_dhcp_offer_recovers_by_retry():
    """A lost Offer leaves the client waiting for its timeout; dhcp_retry then sends a new Discover."""
    env = Env(dhcp_retry=True, dhcp_timeout=5)
    env.faults.set_packet_drop(env.onu, 1.0, protocols=("dhcp",))
    env.flow(eth_type=0x0800, src_port=68, dst_port=67, o_vid=900, o_pbits=255)
    env.out(dhcp_offer(env))
    assert env.service.dhcp_state == "dhcp_discovery_sent"
    discovers = [e for e in env.events if isinstance(e, events.PacketIndication)]
    env.clock.advance(5)
    assert len([e for e in env.events if isinstance(e, events.PacketIndication)]) == len(discovers) + 1
    assert env.service.dhcp_state == "dhcp_discovery_sent"


def test_drops_are_summed_in_one_info_line(env, info_level):
    """Fifty dropped frames write one info line summing them, not fifty."""
    lines = []

    def observer(event):
        if event.get("log_namespace") == "oltsim.faults" and event["log_level"].name == "info":
            lines.append(event)
    globalLogPublisher.addObserver(observer)
    try:
        env.faults.set_packet_drop(env.onu, 1.0)
        for _ in range(50):
            env.out(eapol.identity_request_frame(env.mac, 1))
        env.clock.advance(1)
    finally:
        globalLogPublisher.removeObserver(observer)
    assert len(lines) == 1
    assert lines[0]["count"] == 50 and "eapol=50" in lines[0]["kinds"]


# ---- clear, of, active, cancel_all --------------------------------------------------------------

def set_every_knob(faults, onu):
    faults.set_omci_delay(onu, 0.2, 0.1)
    faults.set_omci_rate(onu, 5)
    faults.set_omci_mute(onu)
    faults.set_packet_drop(onu, 0.5, ["eapol"])


def test_of_and_active_report_every_knob(env):
    """`of` names each active knob with its settings, `active` counts ONUs with any; a serial names the ONU too."""
    assert env.faults.of(env.onu) == {} and env.faults.active() == 0
    set_every_knob(env.faults, env.onu)
    env.faults.set_omci_rate(OTHER, 7)
    assert env.faults.of(SERIAL) == {
        "omci-delay": {"delay": 0.2, "jitter": 0.1}, "omci-rate": {"rate": 5}, "omci-mute": {"muted": True},
        "packet-drop": {"fraction": 0.5, "protocols": ["eapol"]}}
    assert env.faults.of(env.other) == {"omci-rate": {"rate": 7}}
    assert env.faults.active() == 2


@pytest.mark.parametrize("knob", KNOBS)
def test_clear_undoes_only_that_knob(env, knob):
    """Clearing one knob removes it and leaves the others; clearing the last puts the ONU back on the fast path."""
    set_every_knob(env.faults, env.onu)
    env.faults.clear(env.onu, knob)
    left = env.faults.of(env.onu)
    assert knob not in left and len(left) == len(KNOBS) - 1
    for other in left:
        env.faults.clear(env.onu, other)
    env.faults.clear(env.onu, knob)                     # clearing what is not set is no error
    assert env.onu.faults is None and env.faults.active() == 0


def test_clear_all_keeps_pending_answers(env):
    """clear_all undoes every knob of every ONU; answers already delayed still go out."""
    set_every_knob(env.faults, env.other)
    env.faults.set_omci_delay(env.onu, 1.0)
    env.get(1)
    env.faults.clear_all()
    assert env.faults.active() == 0 and env.faults.of(env.other) == {} and env.faults.pending() == 1
    env.clock.advance(1)
    assert env.tids() == [1] and env.onu.faults is None


def test_cancel_all_leaves_no_call_of_ours(env):
    """cancel_all clears every knob, drops delayed answers and cancels the book's timers (answers and the drop
    summary): the clock holds exactly the calls it held before the knobs were set."""
    before = {c for c in env.clock.getDelayedCalls() if c.active()}
    env.faults.set_omci_delay(env.onu, 1.0, jitter=0.5)
    env.faults.set_packet_drop(env.onu, 1.0)
    env.get(1)
    env.get(2)
    env.out(eapol.identity_request_frame(env.mac, 1))
    assert len(env.clock.getDelayedCalls()) > len(before)
    env.faults.cancel_all()
    assert set(env.clock.getDelayedCalls()) == before
    assert env.faults.pending() == 0 and env.faults.active() == 0 and env.onu.faults is None
    env.clock.advance(5)
    assert env.answers == []


def test_olt_stop_cancels_the_knobs(env):
    """Stopping the OLT (daemon stop) cancels the knobs with every other timer: no delayed call remains."""
    env.faults.set_omci_delay(env.onu, 1.0)
    env.faults.set_packet_drop(env.onu, 1.0)
    env.get(1)
    env.out(eapol.identity_request_frame(env.mac, 1))
    env.olt.stop()
    assert env.clock.getDelayedCalls() == []
    assert env.faults.active() == 0 and env.faults.pending() == 0


def test_olt_reboot_drops_delayed_answers_and_keeps_knobs(env):
    """An OLT reboot cuts the ONUs' power: their delayed answers die, their knobs stay."""
    env.faults.set_omci_delay(env.onu, 1.0)
    env.get(1)
    env.olt.reboot()
    assert env.faults.pending() == 0
    env.clock.advance(2)
    assert env.answers == [] and "omci-delay" in env.faults.of(env.onu)


# ---- validation ---------------------------------------------------------------------------------

@pytest.mark.parametrize("call, message", [
    (lambda b, o: b.set_omci_delay(o, -0.1), "delay must be a number of seconds, 0 or more"),
    (lambda b, o: b.set_omci_delay(o, 0.1, jitter=-1), "jitter must be"),
    (lambda b, o: b.set_omci_delay(o, float("inf")), "delay must be"),
    (lambda b, o: b.set_omci_delay(o, "1s"), "delay must be"),
    (lambda b, o: b.set_omci_rate(o, 11), "0 to 10"),
    (lambda b, o: b.set_omci_rate(o, -1), "0 to 10"),
    (lambda b, o: b.set_omci_rate(o, 2.5), "0 to 10"),
    (lambda b, o: b.set_omci_mute(o, "yes"), "true or false"),
    (lambda b, o: b.set_packet_drop(o, 1.5), "fraction must be a number from 0 to 1"),
    (lambda b, o: b.set_packet_drop(o, -0.1), "fraction must be"),
    (lambda b, o: b.set_packet_drop(o, 0.5, ["eapol", "igmp"]), "unknown protocol igmp"),
    (lambda b, o: b.set_packet_drop(o, 0.5, []), "at least one protocol"),
    (lambda b, o: b.clear(o, "omci-slow"), "unknown fault knob 'omci-slow'"),
    (lambda b, o: b.set_omci_rate(o.pon, 3), "is not an ONU of OLT"),
])
def test_validation_errors(env, call, message):
    """Out-of-range settings, unknown protocols and knobs are InvalidArgument with a message saying what is wrong,
    and change nothing."""
    with pytest.raises(InvalidArgument, match=message):
        call(env.faults, env.onu)
    assert env.onu.faults is None


def test_unknown_serial_is_not_found(env):
    """A serial no ONU has is NotFound."""
    with pytest.raises(NotFound):
        env.faults.set_omci_mute("BBSM0000ffff")


# ---- the wrapper in front of the responder --------------------------------------------------------------------

def test_the_responder_alone_knows_no_knobs(env):
    """The knobs act in the wrapper: the bare responder answers a muted ONU, the wrapper in front of it does not."""
    env.faults.set_omci_mute(env.onu)
    env.get(1)
    receive(env.omci, env.onu, codec.encode(2, GET, ONU_G, 0, b"\x40\x00"))
    assert env.tids() == [2]


def test_a_malformed_frame_is_refused_whatever_the_knobs(env):
    """A frame that cannot be OMCI is an OmciError at once where it enters, also for a muted or delayed ONU (nothing
    is queued)."""
    env.faults.set_omci_delay(env.onu, 1.0)
    with pytest.raises(codec.OmciError):
        receive(env.responder, env.onu, b"\x00\x01")
    env.faults.set_omci_mute(env.onu)
    with pytest.raises(codec.OmciError):
        receive(env.responder, env.onu, b"\x00\x01")
    assert env.faults.pending() == 0


class Recorder(OmciWrapper):
    """A wrapper that notes the tid of every frame it passes on."""

    def __init__(self, wrapped):
        super().__init__(wrapped)
        self.tids = []

    def handle(self, onu, frame):
        self.tids.append(frame.tid)
        super().handle(onu, frame)


def test_wrappers_stack(env):
    """A wrapper in front of the fault wrapper sees every frame the adapter sends; one behind it sees a delayed frame
    at its time and never a muted one; the answers are the same as with the fault wrapper alone."""
    behind = Recorder(env.omci)
    front = Recorder(OmciFaultWrapper(behind))
    env.faults.set_omci_delay(env.onu, 0.5)
    receive(front, env.onu, codec.encode(1, GET, ONU_G, 0, b"\x40\x00"))
    assert (front.tids, behind.tids, env.tids()) == ([1], [], [])
    env.clock.advance(0.5)
    assert (behind.tids, env.tids()) == ([1], [1])
    env.faults.clear(env.onu, "omci-delay")
    env.faults.set_omci_mute(env.onu)
    receive(front, env.onu, codec.encode(2, GET, ONU_G, 0, b"\x40\x00"))
    env.clock.advance(1)
    assert (front.tids, behind.tids, env.tids()) == ([1, 2], [1], [1])
