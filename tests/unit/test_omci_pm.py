"""The ONU's OMCI PM MEs count the data plane's real frames (oltsim.dataplane.pm, oltsim.omci.pmhistory): a bound UNI's
Ethernet frame PM (history and extended), its PPTP's Ethernet PM, its GEM port's CTP PM and the ANI's FEC PM, created
and read with OMCI as voltha-openonu-adapter-go does, on G.988's 15-minute intervals, at the lab's numbering (OLT id
10, 2x16, UNI 2 of ONU 11 on PON 1, tests/unit/dataplane_lab.py); what the data plane does not carry, and a PM ME
never created, is answered as BBSim does (random values 0..99, the extended PM's 100..113)."""
from __future__ import annotations

import random

import pytest
from twisted.internet.task import Clock

from dataplane_lab import RG_MAC, SERVER_MAC, Lab, ip_frame
from oltsim.daemon import OltService
from oltsim.dataplane.pipeline import Dropped, ToNni, ToUni
from oltsim.dataplane.pm import OPENONU_BRIDGE_PORT_BASE, PmCounters
from oltsim.omci import codec
from oltsim.omci.codec import ME_CLASSES
from oltsim.omci.pmhistory import INTERVAL, PmMe
from oltsim.omci.responder import ANI_G_ID, OmciResponder
from oltsim.tap import Options, makeService

PON, INDEX, UNI, GEM = 1, 11, 2, 1100
UP, DOWN = codec.ETHERNET_FRAME_PM_HISTORY_UP, codec.ETHERNET_FRAME_PM_HISTORY_DOWN
CTP_PM, ETH_PM, FEC_PM = codec.GEM_PORT_NETWORK_CTP_PM_HISTORY, codec.ETHERNET_PM_HISTORY, codec.FEC_PM_HISTORY
#: drop events, octets, packets, broadcast, multicast (12 + 8 octets: within a baseline Get's 25)
FRAME_ATTRIBUTES = (3, 4, 5, 6, 7)


@pytest.fixture
def lab():
    return Lab()


@pytest.fixture
def sub(lab):
    """The subscriber on UNI 2 of ONU BBSM000a010b, configured over OMCI, given the ATT flows and bound."""
    onu, _ = lab.subscriber(PON, INDEX, UNI, GEM)
    return onu


def pm_read(lab, onu, me_class: int, me_id: int, indexes, action: int = codec.GET) -> dict:
    """A baseline OMCI Get (or Get current data) of the attributes `indexes` of a PM ME: {index: value}."""
    contents = lab.omci(onu, action, me_class, me_id, codec.mask_of(indexes).to_bytes(2, "big"))
    assert contents[0] == codec.SUCCESS
    values = codec.decode_attributes(ME_CLASSES[me_class], int.from_bytes(contents[1:3], "big"), contents[3:])
    return {index: int.from_bytes(value, "big") for index, value in values.items()}


def pm_get(lab, onu, me_class, me_id, indexes) -> dict:
    return pm_read(lab, onu, me_class, me_id, indexes)


def pm_now(lab, onu, me_class, me_id, indexes) -> dict:
    return pm_read(lab, onu, me_class, me_id, indexes, codec.GET_CURRENT_DATA)


def create_pm(lab, onu, me_class: int, me_id: int, threshold: int = 0) -> int:
    """Create a PM history ME as the adapter does (its threshold data 1/2 id, the only set-by-create attribute)."""
    return lab.create(onu, me_class, me_id, threshold.to_bytes(2, "big"))


def pm_set(lab, onu, me_class: int, me_id: int, attributes: dict) -> int:
    """A baseline OMCI Set of a PM ME's attributes: the result."""
    data = b"".join(codec.octets(attributes[i], ME_CLASSES[me_class].size(i)) for i in sorted(attributes))
    return lab.omci(onu, codec.SET, me_class, me_id, codec.mask_of(attributes).to_bytes(2, "big") + data)[0]


def grew(before: dict, after: dict) -> dict:
    return {index: after[index] - before[index] for index in before}


def upstream(lab, onu, count: int, payload: bytes = b"hello") -> list[bytes]:
    """`count` frames from the RG, each forwarded to the NNI: the frames sent."""
    frames = [ip_frame(SERVER_MAC, RG_MAC, payload=payload + bytes([i])) for i in range(count)]
    for frame in frames:
        assert isinstance(lab.dp.from_uni(onu.serial, UNI, frame)[0], ToNni)
    return frames


def downstream(lab, count: int, size: int = 100) -> tuple[list[bytes], list[bytes]]:
    """`count` frames from the NNI (S-tag 900, C-tag 1006), each delivered to the UNI: (the frames sent into the NNI,
    the frames the RG got)."""
    sent, got = [], []
    for i in range(count):
        sent.append(ip_frame(RG_MAC, SERVER_MAC, payload=bytes(size + i), tags=[(900, 0), (1006, 0)]))
        out = lab.dp.from_nni(sent[-1])
        assert isinstance(out[0], ToUni)
        got.append(out[0].frame)
    return sent, got


@pytest.mark.parametrize("bridge_port", ["uni_port", "openonu"])
def test_ethernet_frame_pm_counts_the_interval_in_progress_then_keeps_the_completed_one(lab, sub, bridge_port):
    """The UNI's Ethernet frame PM, upstream and downstream, created as the adapter does (on the UNI-side bridge
    port's id, or as voltha-openonu-adapter-go numbers it, 0x1001 + the PPTP's id): Get current data twice with
    traffic between grew by exactly what the RG sent and received; when the 15-minute interval ends, Get answers
    those counts with interval end time 1, and the new interval starts at 0."""
    onu = sub
    me_id = (lab.ids(UNI)["uni_port"] if bridge_port == "uni_port"
             else OPENONU_BRIDGE_PORT_BASE + onu.unis[UNI].me_id)
    assert create_pm(lab, onu, UP, me_id) == create_pm(lab, onu, DOWN, me_id) == codec.SUCCESS
    up0, down0 = pm_now(lab, onu, UP, me_id, FRAME_ATTRIBUTES), pm_now(lab, onu, DOWN, me_id, FRAME_ATTRIBUTES)
    assert up0 == down0 == dict.fromkeys(FRAME_ATTRIBUTES, 0)
    sent = upstream(lab, onu, 5)
    _, got = downstream(lab, 3)
    up1, down1 = pm_now(lab, onu, UP, me_id, FRAME_ATTRIBUTES), pm_now(lab, onu, DOWN, me_id, FRAME_ATTRIBUTES)
    assert grew(up0, up1) == {3: 0, 4: sum(map(len, sent)), 5: 5, 6: 0, 7: 0}
    assert grew(down0, down1) == {3: 0, 4: sum(map(len, got)), 5: 3, 6: 0, 7: 0}
    # within the interval Get answers the last completed one: none yet
    assert pm_get(lab, onu, UP, me_id, (1, 4, 5)) == {1: 0, 4: 0, 5: 0}
    more = upstream(lab, onu, 2)
    lab.clock.advance(INTERVAL + 1)
    assert pm_get(lab, onu, UP, me_id, (1, 4, 5)) == {1: 1, 4: sum(map(len, sent + more)), 5: 7}
    assert pm_get(lab, onu, DOWN, me_id, (1, 4, 5)) == {1: 1, 4: sum(map(len, got)), 5: 3}
    assert pm_now(lab, onu, UP, me_id, (1, 4, 5)) == {1: 1, 4: 0, 5: 0}


def test_an_interval_holds_what_was_counted_within_it(lab, sub):
    """Frames a second before the interval's end count in it, frames a second after in the next one, even when
    nothing reads the ME until later (the ONU's timer ends the interval on time); the next end moves the interval
    end time on."""
    onu = sub
    me_id = lab.ids(UNI)["uni_port"]
    create_pm(lab, onu, UP, me_id)
    lab.clock.advance(INTERVAL - 1)
    before = upstream(lab, onu, 3)
    lab.clock.advance(2)
    after = upstream(lab, onu, 4)
    lab.clock.advance(100)
    assert pm_get(lab, onu, UP, me_id, (1, 5)) == {1: 1, 5: len(before)}
    lab.clock.advance(INTERVAL + 1)
    assert pm_get(lab, onu, UP, me_id, (1, 5)) == {1: 2, 5: len(after)}
    lab.clock.advance(INTERVAL + 1)
    assert pm_get(lab, onu, UP, me_id, (1, 5)) == {1: 3, 5: 0}


def test_size_buckets_broadcast_and_multicast_count_each_frame_once(lab, sub):
    """Upstream frames of every G.988 size bucket (lengths with the FCS: a 42-octet frame is the 64 it is padded
    to), a broadcast and a multicast one land in their bucket, and the group ones in broadcast / multicast too;
    downstream frames, padded to 60 octets at least, likewise."""
    onu = sub
    me_id = lab.ids(UNI)["uni_port"]
    create_pm(lab, onu, UP, me_id)
    create_pm(lab, onu, DOWN, me_id)
    lengths = (42, 60, 61, 123, 124, 251, 252, 507, 508, 1019, 1020, 1514)
    for length in lengths:
        frame = ip_frame(SERVER_MAC, RG_MAC, payload=bytes(max(0, length - 42)))[:length]
        assert len(frame) == length
        lab.dp.from_uni(onu.serial, UNI, frame)
    lab.dp.from_uni(onu.serial, UNI, ip_frame(b"\xff" * 6, RG_MAC))
    lab.dp.from_uni(onu.serial, UNI, ip_frame(bytes.fromhex("01005e000001"), RG_MAC, payload=bytes(80)))
    buckets = range(11, 17)
    up = pm_now(lab, onu, UP, me_id, buckets)
    # two of each bucket, the broadcast (64) and the multicast (122 + FCS) frames besides
    assert up == {11: 3, 12: 3, 13: 2, 14: 2, 15: 2, 16: 2}
    assert pm_now(lab, onu, UP, me_id, (5, 6, 7)) == {5: len(lengths) + 2, 6: 1, 7: 1}
    _, got = downstream(lab, 2, size=10)          # 60 octets each at the UNI after padding
    _, big = downstream(lab, 1, size=600)
    assert [len(f) for f in got] == [60, 60] and 600 < len(big[0]) < 1000
    assert pm_now(lab, onu, DOWN, me_id, buckets) == {11: 2, 12: 0, 13: 0, 14: 0, 15: 1, 16: 0}


def test_dropped_and_oversize_frames_count_upstream(lab, sub):
    """A frame the ONU's VLAN filter discards and one longer than the NNI's MTU are each a drop event upstream, the
    second also an oversize packet; both are packets received from the UNI. The PPTP's Ethernet PM counts the
    second as a frame too long, and nothing else."""
    onu = sub
    me_id = lab.ids(UNI)["uni_port"]
    pptp = onu.unis[UNI].me_id
    create_pm(lab, onu, UP, me_id)
    create_pm(lab, onu, ETH_PM, pptp)
    indexes = (3, 5, 10)
    before = pm_now(lab, onu, UP, me_id, indexes)
    assert pm_now(lab, onu, ETH_PM, pptp, range(3, 9)) == dict.fromkeys(range(3, 9), 0)
    tagged = ip_frame(SERVER_MAC, RG_MAC, tags=[(77, 0)])
    big = ip_frame(SERVER_MAC, RG_MAC, payload=bytes(1480))
    reasons = [o.reason for frame in (tagged, big) for o in lab.dp.from_uni(onu.serial, UNI, frame)
               if isinstance(o, Dropped)]
    assert reasons == ["vlan-filter", "oversize"]
    assert grew(before, pm_now(lab, onu, UP, me_id, indexes)) == {3: 2, 5: 2, 10: 1}
    assert pm_now(lab, onu, ETH_PM, pptp, range(3, 9)) == {3: 0, 4: 0, 5: 0, 6: 1, 7: 0, 8: 0}
    lab.clock.advance(INTERVAL + 1)
    assert pm_get(lab, onu, ETH_PM, pptp, (1, 6)) == {1: 1, 6: 1}


def test_gem_port_ctp_pm_counts_the_gem_ports_flows(lab, sub):
    """The GEM port network CTP PM of the UNI's GEM port (ME id = the CTP's, Port-ID 1100) counts, as the ONU sees
    them, the frames its flows carried: transmitted upstream (with the C-tag the ONU pushed), received downstream,
    as the OpenOLT GetGemPortStatistics reports them; encryption key errors 0; the completed interval as Get."""
    onu = sub
    indexes = (3, 4, 5, 6)           # 24 octets; the encryption key errors (4) do not fit beside them
    assert create_pm(lab, onu, CTP_PM, GEM) == codec.SUCCESS
    before = pm_now(lab, onu, CTP_PM, GEM, indexes)
    sent = upstream(lab, onu, 4)
    into_nni, _ = downstream(lab, 2)
    after = pm_now(lab, onu, CTP_PM, GEM, indexes)
    # upstream as the OLT got them (the ONU's C-tag pushed), downstream as the flow took them from the NNI
    assert grew(before, after) == {3: 4, 4: 2, 5: sum(map(len, into_nni)), 6: sum(len(f) + 4 for f in sent)}
    assert pm_now(lab, onu, CTP_PM, GEM, (7,)) == {7: 0}
    lab.clock.advance(INTERVAL + 1)
    assert pm_get(lab, onu, CTP_PM, GEM, indexes) == grew(before, after)


def test_fec_pm_of_a_carried_onu_is_a_clean_wire(lab, sub):
    """With a UNI of the ONU carried, the created FEC PM of the ANI-G counts no corrected or uncorrectable code
    words (a simulated wire has no errors), in every interval."""
    assert create_pm(lab, sub, FEC_PM, ANI_G_ID) == codec.SUCCESS
    assert pm_get(lab, sub, FEC_PM, ANI_G_ID, range(1, 8)) == dict.fromkeys(range(1, 8), 0)
    lab.clock.advance(INTERVAL + 1)
    assert pm_get(lab, sub, FEC_PM, ANI_G_ID, range(1, 8)) == {1: 1, **dict.fromkeys(range(2, 8), 0)}


def test_creation_threshold_delete_and_mib_reset(lab, sub):
    """A PM ME keeps the threshold data id it was created with and the one a Set gives it; creating it again
    answers Instance exists (which the adapter takes as created); after a Delete, or an MIB reset, it is not
    counted any more (answered as BBSim, Get current data: Unknown instance)."""
    onu = sub
    me_id = lab.ids(UNI)["uni_port"]
    assert create_pm(lab, onu, UP, me_id, threshold=5) == codec.SUCCESS
    assert create_pm(lab, onu, UP, me_id) == codec.INSTANCE_EXISTS
    assert pm_get(lab, onu, UP, me_id, (2,)) == {2: 5}
    assert pm_set(lab, onu, UP, me_id, {2: 7}) == codec.SUCCESS
    assert pm_get(lab, onu, UP, me_id, (2,)) == {2: 7}
    assert lab.omci(onu, codec.DELETE, UP, me_id)[0] == codec.SUCCESS
    request = codec.mask_of((4,)).to_bytes(2, "big")
    assert lab.omci(onu, codec.GET_CURRENT_DATA, UP, me_id, request)[0] == codec.UNKNOWN_INSTANCE
    expected = expected_random(onu, UP)
    assert pm_get(lab, onu, UP, me_id, (3, 4)) == {3: expected[3], 4: expected[4]}
    assert create_pm(lab, onu, DOWN, me_id) == codec.SUCCESS
    lab.omci(onu, codec.MIB_RESET, codec.ONU_DATA, 0)
    assert lab.omci(onu, codec.GET_CURRENT_DATA, DOWN, me_id, request)[0] == codec.UNKNOWN_INSTANCE


def test_synchronize_time_starts_interval_zero(lab, sub):
    """The adapter's synchronize time starts a new interval: the interval end time is 0 again, the counters of the
    interval in progress start at 0, and the next interval ends 15 minutes after it."""
    onu = sub
    me_id = lab.ids(UNI)["uni_port"]
    create_pm(lab, onu, UP, me_id)
    lab.clock.advance(INTERVAL + 1)
    upstream(lab, onu, 2)
    lab.clock.advance(INTERVAL / 2)
    assert pm_now(lab, onu, UP, me_id, (1, 5)) == {1: 1, 5: 2}
    assert lab.omci(onu, codec.SYNC_TIME, codec.ONU_G, 0, bytes(7))[0] == codec.SUCCESS
    assert pm_now(lab, onu, UP, me_id, (1, 5)) == {1: 0, 5: 0}
    upstream(lab, onu, 3)
    lab.clock.advance(INTERVAL - 10)
    assert pm_get(lab, onu, UP, me_id, (1,)) == {1: 0}
    lab.clock.advance(11)
    assert pm_get(lab, onu, UP, me_id, (1, 5)) == {1: 1, 5: 3}


def control_block(parent_class: int, parent: int, downstream: bool, reset: bool = False) -> bytes:
    """An Ethernet frame extended PM control block as voltha-openonu-adapter-go builds it."""
    words = [0, parent_class, parent, 0x8000 if reset else 0, 0x4000, 3 if downstream else 1, 0, 0]
    return b"".join(w.to_bytes(2, "big") for w in words)


@pytest.mark.parametrize("me_class", [codec.ETHERNET_FRAME_EXTENDED_PM_64BIT, codec.ETHERNET_FRAME_EXTENDED_PM])
def test_extended_pm_counts_continuously_until_reset(lab, sub, me_class):
    """An Ethernet frame extended PM created on the UNI's PPTP (upstream: the PPTP's id + 0x100, downstream: its
    id), in continuous accumulation: Get answers the frames since its creation, past an interval's end too; the
    adapter's reset (a Set of the global clear bit) starts it at 0 again."""
    onu = sub
    pptp = onu.unis[UNI].me_id
    up_id, down_id = pptp + 0x100, pptp
    assert lab.create(onu, me_class, up_id, control_block(11, pptp, False)) == codec.SUCCESS
    assert lab.create(onu, me_class, down_id, control_block(11, pptp, True)) == codec.SUCCESS
    sent = upstream(lab, onu, 3)
    _, got = downstream(lab, 2)
    lab.clock.advance(INTERVAL + 1)
    assert pm_get(lab, onu, me_class, up_id, (3, 4, 5)) == {3: 0, 4: sum(map(len, sent)), 5: 3}
    assert pm_get(lab, onu, me_class, down_id, (3, 4, 5)) == {3: 0, 4: sum(map(len, got)), 5: 2}
    assert pm_set(lab, onu, me_class, up_id, {2: control_block(11, pptp, False, reset=True)}) == codec.SUCCESS
    assert pm_set(lab, onu, me_class, up_id, {2: control_block(11, pptp, False)}) == codec.SUCCESS
    assert pm_get(lab, onu, me_class, up_id, (5,)) == {5: 0}
    upstream(lab, onu, 1)
    assert pm_get(lab, onu, me_class, up_id, (5,)) == {5: 1}
    assert pm_get(lab, onu, me_class, down_id, (5,)) == {5: 2}


def expected_random(onu, me_class: int) -> dict:
    """What BBSim answers for a PM ME next, from the ONU's random state: attributes 3.. random 0..99."""
    rand = random.Random()
    rand.setstate(onu.hub.random.getstate())
    return {i: rand.randrange(100) for i in range(3, len(ME_CLASSES[me_class].sizes) + 1)}


@pytest.mark.parametrize("me_class, me_id", [
    (UP, "ani_port"), (DOWN, "ani_port"), (UP, 0x0777), (CTP_PM, 1234), (ETH_PM, 0x0101)])
def test_what_the_data_plane_does_not_carry_is_answered_as_bbsim(lab, sub, me_class, me_id):
    """A created PM ME naming no carried UNI or GEM port (an ANI-side bridge port, an unknown id, a GEM port behind
    no bound UNI, UNI 0 which is not bound) gets BBSim's random values, drawn as without a data plane."""
    onu = sub
    if me_id == "ani_port":
        me_id = lab.ids(UNI)["ani_port"]
    assert create_pm(lab, onu, me_class, me_id) == codec.SUCCESS
    indexes = (3, 4, 5, 6)
    expected = expected_random(onu, me_class)
    assert pm_get(lab, onu, me_class, me_id, indexes) == {i: expected[i] for i in indexes}


def test_a_pm_me_never_created_is_answered_as_bbsim(lab, sub):
    """Without the adapter's Create, a bound UNI's Ethernet frame PM is BBSim's random values and the extended PM
    BBSim's fixed 100..113, whatever the UNI carried."""
    onu = sub
    upstream(lab, onu, 3)
    expected = expected_random(onu, UP)
    assert pm_get(lab, onu, UP, lab.ids(UNI)["uni_port"], (3, 4, 5)) == {i: expected[i] for i in (3, 4, 5)}
    assert pm_get(lab, onu, codec.ETHERNET_FRAME_EXTENDED_PM, onu.unis[UNI].me_id, (3, 4, 5)) == {
        3: 100, 4: 101, 5: 102}


def test_an_onu_without_a_bound_uni_is_answered_as_bbsim(lab, sub):
    """Another ONU, configured the same but with no UNI bound: its created Ethernet frame, GEM port and FEC PM are
    BBSim's random values."""
    onu = lab.activate(PON, 3)
    lab.configure_uni(onu, UNI, 1300, 1010)
    for me_class, me_id in ((UP, lab.ids(UNI)["uni_port"]), (CTP_PM, 1300), (FEC_PM, ANI_G_ID)):
        assert create_pm(lab, onu, me_class, me_id) == codec.SUCCESS
        expected = expected_random(onu, me_class)
        assert pm_get(lab, onu, me_class, me_id, (3, 4, 5)) == {i: expected[i] for i in (3, 4, 5)}


def test_counts_saturate_at_the_attribute_size():
    """A count beyond an attribute's size is its largest value (G.988's counters stop there), so that a counter
    never goes back; a total below the interval's start (the UNI bound again) counts from 0."""
    me = PmMe(UP, 1, ME_CLASSES[UP].sizes, bytes(2))
    me.baseline = {4: 10, 5: 100}
    counts = me.since({3: 3, 4: (1 << 40), 5: 7})
    assert (counts[3], counts[4], counts[5]) == (3, (1 << 32) - 1, 7)
    assert set(counts) == set(range(3, 17)) and counts[16] == 0


def test_without_a_pm_source_get_current_data_is_not_supported():
    """Without a data plane (no PM source), Get current data is answered Not supported, as before."""
    lab = Lab()
    plain = OmciResponder()
    onu = lab.activate(PON, 1)
    frame = codec.parse(codec.encode(1, codec.GET_CURRENT_DATA | codec.AR, UP, 0x202, bytes(2)))
    plain.handle(onu, frame)
    answer = [e for e in lab.events if type(e).__name__ == "OmciIndication"][-1]
    assert codec.parse(answer.pkt).contents[0] == codec.NOT_SUPPORTED


def test_without_a_pipeline_the_pm_source_carries_nothing(lab):
    """A PM source whose pipeline was never added answers None for everything (the responder then answers as
    BBSim)."""
    pm = PmCounters(lab.vlan)
    onu = lab.olt.pon(PON).onus[0]
    assert pm.ethernet_frames(onu, 0x202, True) is None and pm.gem_port(onu, GEM) is None
    assert pm.ethernet_uni(onu, 0x101) is None and not pm.carries(onu)


def test_make_service_gives_the_responder_the_pipelines_pm_counters():
    """makeService builds the responder with PM counters only with a data plane, and adds the pipeline to them."""
    def responder_of(*arguments):
        options = Options()
        options.parseOptions(["--openolt", "tcp:0:interface=127.0.0.1", "--olt-id", "10", "--pon", "2", "--onu",
                              "16", *arguments])
        olt = next(child for child in makeService(options, Clock()) if isinstance(child, OltService)).olt
        handler = olt.hub.omci
        while not isinstance(handler, OmciResponder):
            handler = handler.wrapped
        return handler, olt
    plain, _ = responder_of()
    assert plain.pm is None
    responder, olt = responder_of("--nni-untagged-interface", "tnu0")
    assert isinstance(responder.pm, PmCounters) and responder.pm.pipeline is olt.hub.frames.pipeline


def test_an_onu_power_off_removes_its_pm_mes_and_their_timer(lab, sub):
    """An ONU that goes down loses the PM MEs the adapter created (the adapter creates them again after its MIB
    reset) and their interval timer: once it is up again, Get current data answers Unknown instance."""
    onu = sub
    me_id = lab.ids(UNI)["uni_port"]
    create_pm(lab, onu, UP, me_id)
    assert pm_now(lab, onu, UP, me_id, (5,)) == {5: 0}
    timer = lab.responder.state(onu).pm.timer
    onu.power_off()
    assert not timer.active() and lab.responder.state(onu).pm is None
    onu.power_on()
    lab.clock.advance(60)
    request = codec.mask_of((5,)).to_bytes(2, "big")
    assert lab.omci(onu, codec.GET_CURRENT_DATA, UP, me_id, request)[0] == codec.UNKNOWN_INSTANCE


def test_ethernet_pm_history_data_3_counts_what_the_uni_received(lab, sub):
    """The PPTP's Ethernet PM history data 3, once created: the frames the UNI received from the RG (drop events,
    octets, packets, broadcast, multicast, the size buckets), the completed interval as Get; never created, it is
    an Unknown ME, as BBSim answers it and as without the data plane."""
    onu = sub
    pptp = onu.unis[UNI].me_id
    request = codec.mask_of((5,)).to_bytes(2, "big")
    assert lab.omci(onu, codec.GET, codec.ETHERNET_PM_HISTORY_3, pptp, request)[0] == codec.UNKNOWN_ME
    assert create_pm(lab, onu, codec.ETHERNET_PM_HISTORY_3, pptp) == codec.SUCCESS
    sent = upstream(lab, onu, 3) + [ip_frame(b"\xff" * 6, RG_MAC)]
    lab.dp.from_uni(onu.serial, UNI, sent[-1])
    lab.clock.advance(INTERVAL + 1)
    assert pm_get(lab, onu, codec.ETHERNET_PM_HISTORY_3, pptp, (1, 3, 4, 5, 6, 7)) == {
        1: 1, 3: 0, 4: sum(map(len, sent)), 5: 4, 6: 1, 7: 0}
    assert pm_get(lab, onu, codec.ETHERNET_PM_HISTORY_3, pptp, range(11, 17)) == {11: 4, 12: 0, 13: 0, 14: 0,
                                                                                  15: 0, 16: 0}


def test_without_a_pm_source_ethernet_pm_history_data_3_is_unknown():
    """Without a data plane, Create of the Ethernet PM history data 3 succeeds (a G.988 class) and a Get answers
    Unknown ME, as before."""
    lab = Lab()
    plain = OmciResponder()
    onu = lab.activate(PON, 1)
    for message_type, contents in ((codec.CREATE, bytes(2)), (codec.GET, codec.mask_of((5,)).to_bytes(2, "big"))):
        plain.handle(onu, codec.parse(codec.encode(1, message_type | codec.AR, codec.ETHERNET_PM_HISTORY_3, 0x101,
                                                   contents)))
    answers = [codec.parse(e.pkt).contents[0] for e in lab.events if type(e).__name__ == "OmciIndication"][-2:]
    assert answers == [codec.SUCCESS, codec.UNKNOWN_ME]


def test_an_onu_keeps_a_bounded_number_of_pm_mes(lab, sub):
    """Past MAX_PM_MES PM MEs on one ONU, a Create answers Processing error (an adapter creating ever new ones
    cannot grow memory); one deleted makes room again."""
    from oltsim.omci.responder import MAX_PM_MES
    onu = sub
    results = [create_pm(lab, onu, CTP_PM, gem) for gem in range(1, MAX_PM_MES + 2)]
    assert results == [codec.SUCCESS] * MAX_PM_MES + [codec.PROCESSING_ERROR]
    assert lab.omci(onu, codec.DELETE, CTP_PM, 1)[0] == codec.SUCCESS
    assert create_pm(lab, onu, CTP_PM, MAX_PM_MES + 1) == codec.SUCCESS


def test_a_super_frame_counts_as_its_segments_in_their_buckets(lab, sub):
    """A GSO super-frame (the kernel's TSO) counts as the segments it is on the wire: upstream a 64000-octet TCP
    payload in 1448-octet segments is 44 full 1514-octet frames (1024-1518) and a last one of 354 (256-511);
    downstream, a 20000-octet one is 14 frames of the 1024-1518 bucket at the UNI, its tags popped."""
    from test_dataplane_offload import TSO_HEADER, tcp_frame
    from oltsim.dataplane import vnet
    onu = sub
    me_id = lab.ids(UNI)["uni_port"]
    create_pm(lab, onu, UP, me_id)
    create_pm(lab, onu, DOWN, me_id)
    lab.dp.from_uni(onu.serial, UNI, tcp_frame(64000), TSO_HEADER)
    service = onu.unis[UNI].services[0]
    down = tcp_frame(20000, tags=(service.s_tag, service.c_tag), dst=RG_MAC, src=SERVER_MAC)
    (out,) = lab.dp.from_nni(down, vnet.shifted(TSO_HEADER, 8))
    assert isinstance(out, ToUni)
    buckets = range(11, 17)
    assert pm_now(lab, onu, UP, me_id, (5,)) == {5: 45}
    assert pm_now(lab, onu, UP, me_id, buckets) == {11: 0, 12: 0, 13: 0, 14: 1, 15: 0, 16: 44}
    assert pm_now(lab, onu, DOWN, me_id, (5,)) == {5: 14}
    assert pm_now(lab, onu, DOWN, me_id, buckets) == {11: 0, 12: 0, 13: 0, 14: 0, 15: 0, 16: 14}
