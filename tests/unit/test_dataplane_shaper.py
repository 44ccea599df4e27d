"""The data plane's shaper (oltsim.dataplane.shaper): bandwidth profiles as a real OLT's DBA and downstream scheduler
enforce them, on a fake clock; and the service carrying its frames with one delayed call."""
from __future__ import annotations

import random

import pytest
from twisted.internet import task
from voltha_protos import tech_profile_pb2

from oltsim.config import load_settings
from oltsim.dataplane.shaper import (DOWN, DROPPED, MIN_QUEUE_BYTES, QUEUED, SEND, UP, Limit, Shaper, limit_of)

from oltsim.model.builder import build_olt

UPSTREAM, DOWNSTREAM = tech_profile_pb2.UPSTREAM, tech_profile_pb2.DOWNSTREAM
FRAME = 1500
#: the GEM port of the frames' keys
GEM = 1024


class FakePon:
    id = 0


class FakeOnu:
    """What the shaper reads of a model ONU: its schedulers (replaced as a whole on a change, as the model does)."""

    def __init__(self):
        self.serial = "BBSM00000001"
        self.pon = FakePon()
        self.onu_id = 1
        self.schedulers = {}
        self.queues = {}

    def create(self, direction, alloc_id, uni_id=0, **shaping):
        sched = tech_profile_pb2.TrafficScheduler(direction=direction, alloc_id=alloc_id,
                                                  traffic_shaping_info=tech_profile_pb2.TrafficShapingInfo(**shaping))
        self.schedulers = {**self.schedulers, (direction, alloc_id): (uni_id, sched)}

    def remove(self, direction, alloc_id):
        schedulers = dict(self.schedulers)
        del schedulers[(direction, alloc_id)]
        self.schedulers = schedulers


def run(shaper, key, clock, *, rate_bps, seconds, size=FRAME):
    """Offer `size`-byte frames at `rate_bps` for `seconds` on `clock`, waking the shaper as the service would;
    the bytes that left, frames dropped."""
    sent = dropped = 0
    interval = size * 8 / rate_bps
    wake = None
    steps = int(seconds / interval)
    for _ in range(steps):
        now = clock.seconds()
        verdict = shaper.offer(key, "frame", size, now)
        if verdict == SEND:
            sent += size
        elif verdict == DROPPED:
            dropped += 1
        # wake-ups due before the next frame
        end = now + interval
        while True:
            out, wake = shaper.due(clock.seconds())
            sent += size * len(out)
            if wake is None or wake > end:
                break
            clock.advance(max(0.0, wake - clock.seconds()))
        clock.advance(max(0.0, end - clock.seconds()))
    return sent, dropped


class SentPort:
    """An interface the data plane service sends through: keeps what it was given."""

    def __init__(self):
        self.sent = []
        self.model_port = type("P", (), {"packet_count": 0})()

    def send(self, frame):
        self.sent.append(frame)
        return True

    def close(self):
        pass


def test_a_stream_at_twice_pir_leaves_at_pir():
    """Offered at 2x PIR for 10 simulated seconds, the stream leaves at PIR within 5 %, the rest tail-dropped."""
    clock, onu, shaper = task.Clock(), FakeOnu(), Shaper()
    onu.create(UPSTREAM, 1024, pir=50_000, pbs=10_000, cir=10_000, cbs=10_000)   # 50 Mbit/s
    key = (UP, onu, 1024, GEM)
    sent, dropped = run(shaper, key, clock, rate_bps=100e6, seconds=10)
    rate = sent * 8 / 10
    assert 0.95 * 50e6 <= rate <= 1.05 * 50e6
    assert dropped > 0
    row = shaper.counters()[0]
    assert row["dropped"] == {"shaper": dropped} and row["direction"] == "up" and row["alloc_id"] == 1024
    assert row["limit"]["pir"] == 50_000


def test_a_burst_up_to_cbs_passes_at_once():
    """A new scheduler's bucket is full: a burst of its CBS passes without waiting; the next frame waits."""
    clock, onu, shaper = task.Clock(), FakeOnu(), Shaper()
    onu.create(UPSTREAM, 1024, pir=10_000, pbs=0, cir=5_000, cbs=300_000)
    key = (UP, onu, 1024, GEM)
    verdicts = [shaper.offer(key, i, FRAME, 0.0) for i in range(300_000 // FRAME)]
    assert verdicts == [SEND] * len(verdicts)
    assert shaper.offer(key, "next", FRAME, 0.0) == QUEUED


def test_the_queue_is_bounded_in_bytes_and_counts_tail_drops():
    """Past the bucket, frames queue up to the queue's bound in bytes; more are dropped at the tail and counted."""
    onu, shaper = FakeOnu(), Shaper()
    onu.create(UPSTREAM, 1024, pir=1_000, pbs=0)     # 1 Mbit/s: bucket and queue at their minimum
    limit = limit_of(onu.schedulers[(UPSTREAM, 1024)][1].traffic_shaping_info)
    assert limit.queue == MIN_QUEUE_BYTES
    key = (UP, onu, 1024, GEM)
    verdicts = [shaper.offer(key, i, FRAME, 0.0) for i in range(200)]
    passed = verdicts.count(SEND)
    queued = verdicts.count(QUEUED)
    assert passed * FRAME <= limit.burst
    assert queued == MIN_QUEUE_BYTES // FRAME
    assert verdicts.count(DROPPED) == 200 - passed - queued
    row = shaper.counters()[0]
    assert row["queue_bytes"] == queued * FRAME <= MIN_QUEUE_BYTES
    assert row["dropped"] == {"shaper": 200 - passed - queued}
    assert row["dropped_bytes"] == row["dropped"]["shaper"] * FRAME


def test_an_empty_queue_takes_a_super_frame_larger_than_its_bound():
    """A 64 KiB TCP super-frame from an offloading TAP is larger than a slow profile's queue: with the bucket spent,
    an empty queue still takes it (and leaves it at the rate), so that TCP through a slow profile is never starved;
    a second one behind it is dropped."""
    onu, shaper = FakeOnu(), Shaper()
    onu.create(UPSTREAM, 1024, pir=1_000, pbs=0)     # 1 Mbit/s: queue at its minimum
    key = (UP, onu, 1024, GEM)
    while shaper.offer(key, "burst", FRAME, 0.0) == SEND:
        pass
    while shaper.due(10.0)[0]:
        pass
    super_frame = MIN_QUEUE_BYTES + 1500
    shaper.offer(key, "spend", FRAME, 10.0)
    assert shaper.offer(key, "big", super_frame, 10.0) == QUEUED
    assert shaper.offer(key, "next", super_frame, 10.0) == DROPPED


def test_queued_frames_leave_in_order_at_the_rate():
    """Queued frames come back from `due` in their order, each when the bucket has its bytes; `due` names the next
    wake-up."""
    onu, shaper = FakeOnu(), Shaper()
    onu.create(UPSTREAM, 1024, pir=8_000, pbs=0)     # 1 Mbyte/s
    key = (UP, onu, 1024, GEM)
    while shaper.offer(key, "burst", FRAME, 0.0) == SEND:
        pass
    for i in range(20):
        assert shaper.offer(key, i, FRAME, 0.0) == QUEUED
    out, wake = shaper.due(0.0)
    assert out == [] and wake is not None and 0 < wake <= 2 * FRAME / 1e6
    # a late wake-up releases at most a bucket's worth (the rate holds even when the reactor was busy)
    out, wake = shaper.due(10.0)
    burst = shaper._tconts[key[:-1]].limit.burst
    assert out == ["burst", *range(len(out) - 1)] and len(out) == burst // FRAME and wake is not None
    while wake is not None:
        more, wake = shaper.due(wake)
        out += more
    assert out == ["burst", *range(20)]


def test_a_removed_scheduler_stops_shaping_at_once():
    """Removing the scheduler releases the queued frames at the next wake-up and lets new frames pass."""
    onu, shaper = FakeOnu(), Shaper()
    onu.create(UPSTREAM, 1024, pir=1_000, pbs=0)
    key = (UP, onu, 1024, GEM)
    verdicts = [shaper.offer(key, i, FRAME, 0.0) for i in range(20)]
    assert QUEUED in verdicts
    onu.remove(UPSTREAM, 1024)
    out, wake = shaper.due(0.0)
    assert len(out) == verdicts.count(QUEUED) and wake is None
    assert [shaper.offer(key, i, FRAME, 0.0) for i in range(100)] == [SEND] * 100
    assert shaper.counters()[0]["limit"] is None


def test_a_changed_scheduler_takes_its_new_rate():
    """A scheduler changed (a new CreateTrafficSchedulers) shapes at its new rate from the next frame on."""
    clock, onu, shaper = task.Clock(), FakeOnu(), Shaper()
    onu.create(UPSTREAM, 1024, pir=20_000, pbs=0)
    key = (UP, onu, 1024, GEM)
    run(shaper, key, clock, rate_bps=40e6, seconds=1)
    onu.create(UPSTREAM, 1024, pir=10_000, pbs=0)
    sent, _ = run(shaper, key, clock, rate_bps=40e6, seconds=10)
    assert 0.95 * 10e6 <= sent * 8 / 10 <= 1.05 * 10e6


def test_no_scheduler_means_no_limit():
    """A key with no scheduler (upstream: none for its alloc id) passes everything, counted."""
    onu, shaper = FakeOnu(), Shaper()
    onu.create(UPSTREAM, 1025, pir=1_000)
    key = (UP, onu, 1024, GEM)
    assert [shaper.offer(key, i, FRAME, 0.0) for i in range(1000)] == [SEND] * 1000
    row = shaper.counters()[0]
    assert row["limit"] is None and row["sent_bytes"] == 1000 * FRAME and row["queue_bytes"] == 0


def test_downstream_by_alloc_id_else_by_uni():
    """Downstream: the scheduler of the flow's alloc id, else the one of the UNI; upstream schedulers do not
    shape downstream frames."""
    onu, shaper = FakeOnu(), Shaper()
    onu.create(UPSTREAM, 1024, pir=1_000)
    assert Shaper().offer((DOWN, onu, 0, 1024, GEM), 0, FRAME, 0.0) == SEND
    onu.create(DOWNSTREAM, 2000, uni_id=1, pir=1_000)
    verdicts = [shaper.offer((DOWN, onu, 1, 1024, GEM), i, FRAME, 0.0) for i in range(20)]
    assert QUEUED in verdicts
    assert [shaper.offer((DOWN, onu, 0, 1024, GEM), i, FRAME, 0.0) for i in range(20)] == [SEND] * 20
    onu.create(DOWNSTREAM, 1030, uni_id=0, pir=1_000)
    assert QUEUED in [shaper.offer((DOWN, onu, 0, 1030, GEM), i, FRAME, 0.0) for i in range(20)]


@pytest.mark.parametrize("shaping, rate, guaranteed", [
    # one band, no burst: GIR = PIR (T-CONT type 1, fixed)
    ({"pir": 10_000, "gir": 10_000}, 10_000, 10_000),
    # one band with a burst: PIR (type 4, best effort)
    ({"pir": 32_000, "pbs": 30}, 32_000, 0),
    # two bands: PIR and CIR (types 2 and 3)
    ({"pir": 230_000, "pbs": 11_000, "cir": 30_000, "cbs": 10_000}, 230_000, 30_000),
    # three bands: PIR, CIR and GIR (type 5)
    ({"pir": 200_000, "pbs": 6_000, "cir": 100_000, "cbs": 5_000, "gir": 50_000}, 200_000, 150_000),
    # GIR alone (no peak): the fixed rate is the peak
    ({"gir": 5_000}, 5_000, 5_000),
])
def test_gir_cir_pir_as_the_openolt_adapter_maps_them(shaping, rate, guaranteed):
    """The openolt adapter's meter mapping (voltha-lib-go GetTrafficShapingInfo): the shaper's rate is PIR (the
    fixed rate GIR when there is no peak), kbit/s to bytes/s; GIR and CIR are kept (guaranteed = GIR + CIR)."""
    limit = limit_of(tech_profile_pb2.TrafficShapingInfo(**shaping))
    assert limit.rate == rate * 125
    assert limit.gir + limit.cir == guaranteed
    assert limit.burst >= max(shaping.get("pbs", 0), shaping.get("cbs", 0))


def test_no_rate_is_no_limit():
    """A TrafficShapingInfo with no rate at all is no limit."""
    assert limit_of(tech_profile_pb2.TrafficShapingInfo()) is None
    with pytest.raises(ValueError):
        Limit()


def test_the_model_keeps_each_scheduler_and_removes_those_named():
    """The model keeps the upstream and the downstream scheduler the adapter creates one message each, and a
    RemoveTrafficSchedulers removes only those it names (a new dict each time, which the shaper sees)."""
    clock = task.Clock()
    olt = build_olt(load_settings({"pon": 1, "onu": 1}, None), clock, random.Random(0))
    olt.start()
    olt.enable_indication()
    clock.advance(1)
    olt.activate_onu(0, "BBSM00000001", 1)
    onu = olt.onu_by_id(0, 1)

    def message(direction, pir):
        return tech_profile_pb2.TrafficSchedulers(intf_id=0, onu_id=1, uni_id=0, port_no=256, traffic_scheds=[
            tech_profile_pb2.TrafficScheduler(direction=direction, alloc_id=1024, tech_profile_id=64,
                                              traffic_shaping_info=tech_profile_pb2.TrafficShapingInfo(pir=pir))])

    olt.set_traffic_schedulers(0, 1, message(UPSTREAM, 1_000), uni_id=0, alloc_ids=[1024])
    olt.set_traffic_schedulers(0, 1, message(DOWNSTREAM, 2_000), uni_id=0, alloc_ids=[1024])
    before = onu.schedulers
    assert sorted(before) == [(UPSTREAM, 1024), (DOWNSTREAM, 1024)]
    olt.clear_traffic_schedulers(0, 1, message(DOWNSTREAM, 0))
    assert sorted(onu.schedulers) == [(UPSTREAM, 1024)] and onu.schedulers is not before
    olt.clear_traffic_schedulers(0, 1)
    assert onu.schedulers == {}


def test_the_service_shapes_with_one_delayed_call_and_leaves_none_after_stop():
    """DataPlaneService.deliver passes outputs with a queue through the shaper: the tagged and untagged copies of a
    frame as one, held frames sent at their time by one delayed call, none left after stopService."""
    from oltsim.dataplane.interfaces import InterfacePlan
    from oltsim.dataplane.pipeline import ToNni, ToNniUntagged
    from oltsim.dataplane.service import DataPlaneService

    clock, onu, shaper = task.Clock(), FakeOnu(), Shaper()
    onu.create(UPSTREAM, 1024, pir=8_000, pbs=0)          # 1 Mbyte/s
    service = DataPlaneService(None, None, InterfacePlan(), clock, shaper=shaper)
    nni, untagged = SentPort(), SentPort()
    service.ports.update({"nni": nni, "nni-untagged": untagged})
    key = (UP, onu, 1024, GEM)
    for i in range(30):
        service.deliver([ToNni(bytes(FRAME), key), ToNniUntagged(bytes(FRAME - 8), key)])
    service.deliver([ToNni(b"packet-out")])                 # no queue: out at once
    burst = len(nni.sent) - 1
    assert 0 < burst < 30 and len(untagged.sent) == burst and nni.sent[-1] == b"packet-out"
    assert len(clock.getDelayedCalls()) == 1
    clock.advance(0)
    clock.advance(0.0016)
    assert len(nni.sent) == burst + 2 and len(clock.getDelayedCalls()) == 1
    for _ in range(20):
        clock.advance(0.002)
    assert len(nni.sent) == 31 and len(untagged.sent) == 30 and clock.getDelayedCalls() == []
    for i in range(30):
        service.deliver([ToNni(bytes(FRAME), key)])
    assert len(clock.getDelayedCalls()) == 1
    counted = service.shaper.counters()
    assert counted[0]["queue_frames"] > 0
    service.running = True
    service.stopService()
    assert clock.getDelayedCalls() == [] and shaper.counters()[0]["queue_frames"] == 0


def test_ever_new_keys_do_not_grow_memory():
    """Past `max_queues`, the idle queues are forgotten (a busy one keeps its frames)."""
    onu, shaper = FakeOnu(), Shaper(max_queues=8)
    onu.create(UPSTREAM, 1, pir=1_000)
    busy = (UP, onu, 1, GEM)
    while shaper.offer(busy, "x", FRAME, 0.0) != QUEUED:
        pass
    for alloc in range(2, 100):
        assert shaper.offer((UP, onu, alloc, GEM), alloc, FRAME, 0.0) == SEND
    assert len(shaper.counters()) <= 8
    assert any(row["alloc_id"] == 1 and row["queue_frames"] == 1 for row in shaper.counters())


# ---- GEM port queues and the PON's rate ------------------------------------------------------------------------

WRR, STRICT, HYBRID = tech_profile_pb2.WRR, tech_profile_pb2.StrictPriority, tech_profile_pb2.Hybrid


def make_tcont(onu, alloc_id, policy, queues, direction=UPSTREAM, priority=0, weight=0, **shaping):
    """A scheduler of `policy` on `alloc_id` and its GEM ports' queues, `queues` {gem: (priority, weight)}, as the
    adapter's CreateTrafficSchedulers and CreateTrafficQueues give them."""
    sched = tech_profile_pb2.TrafficScheduler(
        direction=direction, alloc_id=alloc_id,
        scheduler=tech_profile_pb2.SchedulerConfig(direction=direction, sched_policy=policy, priority=priority,
                                                   weight=weight),
        traffic_shaping_info=tech_profile_pb2.TrafficShapingInfo(**shaping))
    onu.schedulers = {**onu.schedulers, (direction, alloc_id): (0, sched)}
    made = {(direction, gem): (0, tech_profile_pb2.TrafficQueue(direction=direction, gemport_id=gem, priority=p,
                                                                 weight=w, sched_policy=policy))
            for gem, (p, w) in queues.items()}
    onu.queues = {**onu.queues, **made}


def two_onus():
    """Two ONUs on one PON."""
    onu_a, onu_b = FakeOnu(), FakeOnu()
    onu_b.serial, onu_b.onu_id, onu_b.pon = "BBSM00000002", 2, onu_a.pon
    return onu_a, onu_b


def run_streams(shaper, streams, seconds, size=FRAME, start=0.0):
    """Offer each stream's frames (`streams`: [(key, bit/s)], evenly spaced) for `seconds` of simulated time from
    `start`, waking the shaper when `due` says, as the service does; bytes that left per key."""
    sent = {key: 0 for key, _ in streams}
    intervals = [size * 8 / rate for _, rate in streams]
    arrivals = [start + i * 1e-6 for i in range(len(streams))]       # not all at the same instant
    seconds += start
    wake = start if shaper.backlogged else None      # the service's wake-up of frames queued before
    while True:
        now = min(arrivals)
        if wake is not None and wake <= now:
            now = wake
            out, wake = shaper.due(now)
            for key in out:
                sent[key] += size
            continue
        if now >= seconds:
            break
        i = arrivals.index(now)
        key = streams[i][0]
        arrivals[i] = now + intervals[i]
        verdict = shaper.offer(key, key, size, now)
        if verdict == SEND:
            sent[key] += size
        elif verdict == QUEUED and wake is None:
            wake = now
    return sent


def test_strict_priority_a_high_queue_loses_nothing_while_a_low_one_saturates_the_tcont():
    """StrictPriority (the tech profile's q_sched_policy): the GEM port of priority 7 (the highest) gets all it
    offers, nothing dropped, while the one of priority 0 offers twice the T-CONT's rate and gets the rest."""
    onu, shaper = FakeOnu(), Shaper()
    make_tcont(onu, 1024, STRICT, {1100: (7, 0), 1101: (0, 0)}, pir=10_000, pbs=0)     # 10 Mbit/s
    high, low = (UP, onu, 1024, 1100), (UP, onu, 1024, 1101)
    sent = run_streams(shaper, [(high, 3e6), (low, 20e6)], seconds=10)
    gems = {g["gemport_id"]: g for g in shaper.counters()[0]["gems"]}
    assert gems[1100]["dropped"] == {} and gems[1100]["dropped_bytes"] == 0
    assert sent[high] * 8 / 10 >= 0.99 * 3e6
    assert 0.95 * 7e6 <= sent[low] * 8 / 10 <= 1.05 * 7e6 and gems[1101]["dropped"]["shaper"] > 0
    assert gems[1100]["priority"] == 7 and shaper.counters()[0]["sched_policy"] == "StrictPriority"


def test_strict_priority_serves_the_higher_value_first_whatever_the_order_of_the_gem_ports():
    """Priority 7 is served before 0 when the low queue's GEM port came first too (the value decides, not the order);
    with both saturating, the low one gets only what the high one leaves."""
    onu, shaper = FakeOnu(), Shaper()
    make_tcont(onu, 1024, STRICT, {1100: (0, 0), 1101: (7, 0)}, pir=10_000, pbs=0)
    low, high = (UP, onu, 1024, 1100), (UP, onu, 1024, 1101)
    sent = run_streams(shaper, [(low, 20e6), (high, 9e6)], seconds=5)
    assert sent[high] * 8 / 5 >= 0.99 * 9e6
    assert sent[low] * 8 / 5 <= 1.5e6


@pytest.mark.parametrize("policy", [WRR, HYBRID])
def test_wrr_shares_the_tcont_by_weight(policy):
    """WRR (and Hybrid with queues of one priority): two saturating GEM ports of weights 25 and 75 share the
    T-CONT's rate 1:3, within 10 %."""
    onu, shaper = FakeOnu(), Shaper()
    make_tcont(onu, 1024, policy, {1100: (3, 25), 1101: (3, 75)}, pir=20_000, pbs=0)     # 20 Mbit/s
    a, b = (UP, onu, 1024, 1100), (UP, onu, 1024, 1101)
    sent = run_streams(shaper, [(a, 30e6), (b, 30e6)], seconds=10)
    rate_a, rate_b = sent[a] * 8 / 10, sent[b] * 8 / 10
    assert 0.9 * 5e6 <= rate_a <= 1.1 * 5e6 and 0.9 * 15e6 <= rate_b <= 1.1 * 15e6
    assert 0.95 * 20e6 <= rate_a + rate_b <= 1.05 * 20e6


def test_wrr_ignores_priority_and_a_lone_queue_takes_the_whole_tcont():
    """WRR puts every GEM port in one round whatever its priority; a GEM port whose peer is idle gets the T-CONT's
    whole rate (the scheduler is work-conserving)."""
    onu, shaper = FakeOnu(), Shaper()
    make_tcont(onu, 1024, WRR, {1100: (7, 50), 1101: (0, 50)}, pir=10_000, pbs=0)
    a, b = (UP, onu, 1024, 1100), (UP, onu, 1024, 1101)
    sent = run_streams(shaper, [(a, 20e6), (b, 20e6)], seconds=5)
    assert abs(sent[a] - sent[b]) <= 0.1 * sent[a]
    alone = Shaper()
    sent = run_streams(alone, [(a, 20e6)], seconds=5)
    assert 0.95 * 10e6 <= sent[a] * 8 / 5 <= 1.05 * 10e6


def test_each_gem_port_has_its_own_bounded_queue_and_counts():
    """A full low-priority queue drops at its own tail: the other GEM port's frames still queue; each GEM port's
    counters (and the T-CONT's sums of them) show it."""
    onu, shaper = FakeOnu(), Shaper()
    make_tcont(onu, 1024, STRICT, {1100: (7, 0), 1101: (0, 0)}, pir=1_000, pbs=0)
    low, high = (UP, onu, 1024, 1101), (UP, onu, 1024, 1100)
    verdicts = [shaper.offer(low, i, FRAME, 0.0) for i in range(200)]
    assert DROPPED in verdicts
    assert shaper.offer(high, "h", FRAME, 0.0) == QUEUED
    row = shaper.counters()[0]
    gems = {g["gemport_id"]: g for g in row["gems"]}
    assert gems[1101]["dropped"]["shaper"] == verdicts.count(DROPPED) and gems[1100]["dropped"] == {}
    assert gems[1100]["queue_frames"] == 1 and gems[1101]["queue_bytes"] <= MIN_QUEUE_BYTES
    assert row["queue_bytes"] == gems[1100]["queue_bytes"] + gems[1101]["queue_bytes"]
    assert row["dropped"] == gems[1101]["dropped"] and row["sent_frames"] == verdicts.count(SEND)
    # the high-priority frame is the first to leave when tokens come
    out, _ = shaper.due(0.0 + 2 * FRAME / 125_000)
    assert out[0] == "h"


def test_the_pon_rate_gives_each_tcont_its_gir_and_cir_first_and_holds_the_total():
    """Two T-CONTs on one PON whose peaks (80 Mbit/s each) exceed its 100 Mbit/s, both offering 100 Mbit/s: each
    gets at least GIR + CIR (60 and 10 Mbit/s), the rest shared equally, the total within the PON's rate."""
    onu_a, onu_b = two_onus()
    shaper = Shaper(rate_up=100_000_000)
    make_tcont(onu_a, 1024, HYBRID, {1100: (0, 0)}, pir=80_000, cir=50_000, gir=10_000, pbs=0)
    make_tcont(onu_b, 1025, HYBRID, {1110: (0, 0)}, pir=80_000, cir=10_000, pbs=0)
    a, b = (UP, onu_a, 1024, 1100), (UP, onu_b, 1025, 1110)
    sent = run_streams(shaper, [(a, 100e6), (b, 100e6)], seconds=10)
    rate_a, rate_b = sent[a] * 8 / 10, sent[b] * 8 / 10
    assert rate_a >= 60e6 and rate_b >= 10e6
    assert rate_a + rate_b <= 1.02 * 100e6 and rate_a + rate_b >= 0.95 * 100e6
    assert 0.9 * 75e6 <= rate_a <= 1.1 * 75e6 and 0.9 * 25e6 <= rate_b <= 1.1 * 25e6
    pon = shaper.pon_counters()
    assert pon == [{"pon": 0, "direction": "up", "rate_bps": 100_000_000, "offered_bytes": pon[0]["offered_bytes"],
                    "carried_bytes": sent[a] + sent[b], "shaped": 2, "congested": True}]
    assert pon[0]["offered_bytes"] >= 2 * 100e6 / 8 * 9.99


def test_a_pon_rate_above_the_peaks_changes_nothing():
    """While the T-CONTs' peaks fit in the PON's rate, each leaves at its own PIR, as without a PON rate."""
    onu_a, onu_b = two_onus()
    shaper = Shaper(rate_up=100_000_000)
    make_tcont(onu_a, 1024, HYBRID, {1100: (0, 0)}, pir=40_000, pbs=0)
    make_tcont(onu_b, 1025, HYBRID, {1110: (0, 0)}, pir=40_000, pbs=0)
    a, b = (UP, onu_a, 1024, 1100), (UP, onu_b, 1025, 1110)
    sent = run_streams(shaper, [(a, 60e6), (b, 60e6)], seconds=5)
    assert all(0.95 * 40e6 <= sent[k] * 8 / 5 <= 1.05 * 40e6 for k in (a, b))
    assert shaper.pon_counters()[0]["congested"] is False


def test_an_idle_tcont_leaves_the_pon_to_a_busy_one():
    """The PON's rate below two peaks: when one T-CONT offers little, the other gets the rest up to its PIR."""
    onu_a, onu_b = two_onus()
    shaper = Shaper(rate_up=100_000_000)
    make_tcont(onu_a, 1024, HYBRID, {1100: (0, 0)}, pir=90_000, cir=20_000, pbs=0)
    make_tcont(onu_b, 1025, HYBRID, {1110: (0, 0)}, pir=90_000, cir=20_000, pbs=0)
    a, b = (UP, onu_a, 1024, 1100), (UP, onu_b, 1025, 1110)
    sent = run_streams(shaper, [(a, 150e6), (b, 5e6)], seconds=5)
    assert sent[b] * 8 / 5 >= 0.98 * 5e6
    assert 0.9 * 90e6 <= sent[a] * 8 / 5 <= 1.02 * 95e6


def test_downstream_schedulers_share_the_pon_down_rate():
    """Downstream: the ONUs' schedulers share the PON's downstream rate by the same rule; upstream is not limited by
    it."""
    onu_a, onu_b = two_onus()
    shaper = Shaper(rate_up=10_000_000_000, rate_down=50_000_000)
    make_tcont(onu_a, 1024, HYBRID, {1100: (0, 0)}, direction=DOWNSTREAM, pir=50_000, cir=10_000, pbs=0)
    make_tcont(onu_b, 1025, HYBRID, {1110: (0, 0)}, direction=DOWNSTREAM, pir=50_000, cir=10_000, pbs=0)
    a, b = (DOWN, onu_a, 0, 1024, 1100), (DOWN, onu_b, 0, 1025, 1110)
    sent = run_streams(shaper, [(a, 60e6), (b, 60e6)], seconds=5)
    assert all(0.9 * 25e6 <= sent[k] * 8 / 5 <= 1.1 * 25e6 for k in (a, b))
    assert sum(sent.values()) * 8 / 5 <= 1.02 * 50e6


def test_the_pon_rate_defaults_to_the_technologys_line_rate_and_must_be_positive():
    """No rate given: XGS-PON's 9.95328 Gbit/s both ways, GPON's 1.24416 up and 2.48832 down; a rate of 0 is refused."""
    onu = FakeOnu()
    onu.create(UPSTREAM, 1024, pir=1_000)
    onu.create(DOWNSTREAM, 1024, pir=1_000)
    shaper = Shaper()
    shaper.offer((UP, onu, 1024, GEM), 0, FRAME, 0.0)
    assert shaper.pon_counters()[0]["rate_bps"] == 9_953_280_000
    onu.pon = type("GponPon", (), {"id": 1, "technology": "GPON"})()
    gpon = Shaper()
    gpon.offer((UP, onu, 1024, GEM), 0, FRAME, 0.0)
    gpon.offer((DOWN, onu, 0, 1024, GEM), 0, FRAME, 0.0)
    assert {r["direction"]: r["rate_bps"] for r in gpon.pon_counters()} == {"up": 1_244_160_000,
                                                                             "down": 2_488_320_000}
    with pytest.raises(ValueError, match="rate_up must be above 0"):
        Shaper(rate_up=0)


def test_the_model_keeps_each_traffic_queue_and_removes_those_named():
    """CreateTrafficQueues through the OpenOLT servicer keeps each queue by direction and GEM port (a new dict each
    time, which the shaper sees); RemoveTrafficQueues forgets those it names; a GEM port outside the PON's range is
    refused."""
    from oltsim.model.errors import InvalidArgument
    from oltsim.southbound.openolt import OpenoltServicer

    clock = task.Clock()
    olt = build_olt(load_settings({"pon": 1, "onu": 1}, None), clock, random.Random(0))
    olt.start()
    olt.enable_indication()
    clock.advance(1)
    olt.activate_onu(0, "BBSM00000001", 1)
    onu = olt.onu_by_id(0, 1)
    servicer = OpenoltServicer(olt, olt.hub, None)

    def message(*gems):
        return tech_profile_pb2.TrafficQueues(intf_id=0, onu_id=1, uni_id=0, traffic_queues=[
            tech_profile_pb2.TrafficQueue(direction=UPSTREAM, gemport_id=gem, priority=gem % 8, weight=25,
                                          sched_policy=STRICT) for gem in gems])

    servicer.CreateTrafficQueues(message(1024, 1025), None)
    before = onu.queues
    assert sorted(before) == [(UPSTREAM, 1024), (UPSTREAM, 1025)] and before[(UPSTREAM, 1025)][1].priority == 1
    servicer.RemoveTrafficQueues(message(1024), None)
    assert sorted(onu.queues) == [(UPSTREAM, 1025)] and onu.queues is not before
    with pytest.raises(InvalidArgument):
        servicer.CreateTrafficQueues(message(70000), None)
    servicer.RemoveTrafficQueues(tech_profile_pb2.TrafficQueues(intf_id=0, onu_id=1), None)
    assert onu.queues == {}


def test_queues_created_later_take_effect_at_the_next_frame():
    """A T-CONT's GEM ports shaped as one round (no queues yet) follow the priorities a later CreateTrafficQueues
    gives, from the next frame on."""
    onu, shaper = FakeOnu(), Shaper()
    onu.create(UPSTREAM, 1024, pir=10_000, pbs=0)
    a, b = (UP, onu, 1024, 1100), (UP, onu, 1024, 1101)
    sent = run_streams(shaper, [(a, 20e6), (b, 20e6)], seconds=2)
    assert abs(sent[a] - sent[b]) <= 0.1 * sent[a]
    make_tcont(onu, 1024, STRICT, {1100: (0, 0), 1101: (5, 0)}, pir=10_000, pbs=0)
    sent = run_streams(shaper, [(a, 20e6), (b, 20e6)], seconds=2, start=2.1)
    assert sent[b] > 10 * sent[a]


@pytest.mark.parametrize("given, rate", [("300M", 300_000_000), ("2.5G", 2_500_000_000), ("250k", 250_000),
                                         ("1244160000", 1_244_160_000), (9_953_280_000, 9_953_280_000),
                                         ("300 Mbit/s", 300_000_000), ("0", 0)])
def test_pon_rate_settings_take_bit_per_second_with_a_suffix(given, rate):
    """--pon-rate-up / bbsim.pon_rate_up (and down) read bit/s as an integer or with a k, M or G suffix; 0 is the
    PON's line rate."""
    assert load_settings({"pon_rate_up": given, "pon_rate_down": given}, None).pon_rate_up == rate


@pytest.mark.parametrize("given", ["fast", "-5M", "3T", "1e9", True])
def test_a_pon_rate_that_is_no_rate_is_one_line_naming_the_setting(given):
    """A rate that is not one (no number, a negative one, an unknown suffix) is one ConfigError naming the setting
    and an example."""
    from oltsim.config import ConfigError

    with pytest.raises(ConfigError, match=r"pon_rate_down must be a rate in bit/s, e\.g\. 300000000, 300M or 2\.5G"):
        load_settings({"pon_rate_down": given}, None)
    with pytest.raises(ConfigError, match="pon_rate_up"):
        load_settings({"pon_rate_up": "200G"}, None)


def test_the_pon_rate_options_reach_the_daemons_shaper(tmp_path):
    """`twistd oltsim --pon-rate-up 300M --pon-rate-down 1G` gives the data plane's shaper those rates; without
    them the shaper takes each PON's line rate."""
    from twisted.internet.task import Clock

    from oltsim.dataplane.service import DataPlaneService
    from oltsim.tap import Options, makeService

    def shaper_of(*more):
        options = Options()
        options.parseOptions(["--openolt", "tcp:0:interface=127.0.0.1", "--pon", "1", "--onu", "1",
                              "--nni-untagged-interface", "tnu0", *more])
        top = makeService(options, Clock())
        return next(child for child in top if isinstance(child, DataPlaneService)).shaper

    shaper = shaper_of("--pon-rate-up", "300M", "--pon-rate-down", "1G")
    assert (shaper.rate_up, shaper.rate_down) == (300_000_000, 1_000_000_000)
    assert (shaper_of().rate_up, shaper_of().rate_down) == (None, None)


def test_the_services_counters_show_each_gem_port_and_each_pons_load():
    """GET /v1/dataplane's document (DataPlaneService.counters): `shapers` keeps its keys per T-CONT and lists its
    GEM ports (`gems`); `pon_shaping` gives each PON's rate and the bytes offered to and carried by its T-CONTs."""
    from oltsim.dataplane.interfaces import InterfacePlan
    from oltsim.dataplane.service import DataPlaneService

    class Pipeline:
        def counters(self):
            return {"unis": {}}

    onu, shaper = FakeOnu(), Shaper(rate_up=50_000_000)
    make_tcont(onu, 1024, STRICT, {1100: (7, 0), 1101: (0, 0)}, pir=1_000, pbs=0)
    for i in range(100):
        shaper.offer((UP, onu, 1024, 1100 + i % 2), i, FRAME, 0.0)
    counted = DataPlaneService(None, Pipeline(), InterfacePlan(), task.Clock(), shaper=shaper).counters()
    row = counted["shapers"][0]
    assert {"direction", "serial", "pon", "onu_id", "alloc_id", "limit", "sent_frames", "sent_bytes", "dropped",
            "dropped_bytes", "queue_frames", "queue_bytes"} <= set(row)
    assert row["rate_bps"] == 1_000_000 and [g["gemport_id"] for g in row["gems"]] == [1100, 1101]
    assert counted["pon_shaping"] == [{"pon": 0, "direction": "up", "rate_bps": 50_000_000,
                                       "offered_bytes": 100 * FRAME, "carried_bytes": row["sent_bytes"], "shaped": 1,
                                       "congested": False}]


def test_a_failing_shaper_wake_is_logged_drops_its_queue_and_leaves_no_frame_stuck():
    """A wake-up whose `due` raises is logged (dataplane-shaper-failed) instead of escaping into the reactor; the
    queued frames are dropped, no delayed call is left, and the next frames are shaped again."""
    from twisted.logger import globalLogPublisher

    from oltsim.dataplane.interfaces import InterfacePlan
    from oltsim.dataplane.pipeline import ToNni
    from oltsim.dataplane.service import DataPlaneService

    class Failing(Shaper):
        fail = True

        def due(self, now):
            if self.fail:
                self.fail = False
                raise RuntimeError("broken")
            return super().due(now)

    seen = []
    globalLogPublisher.addObserver(seen.append)
    try:
        clock, onu, shaper = task.Clock(), FakeOnu(), Failing()
        onu.create(UPSTREAM, 1024, pir=1_000, pbs=0)
        service = DataPlaneService(None, None, InterfacePlan(), clock, shaper=shaper)
        nni = SentPort()
        service.ports["nni"] = nni
        key = (UP, onu, 1024, GEM)
        for _ in range(10):
            service.deliver([ToNni(bytes(FRAME), key)])
        assert shaper.backlogged
        clock.advance(0)
    finally:
        globalLogPublisher.removeObserver(seen.append)
    assert any("dataplane-shaper-failed" in event.get("log_format", "") for event in seen)
    assert not shaper.backlogged and clock.getDelayedCalls() == []
    sent = len(nni.sent)
    for _ in range(10):
        service.deliver([ToNni(bytes(FRAME), key)])
    assert shaper.backlogged and len(clock.getDelayedCalls()) == 1
    clock.advance(0)
    clock.advance(1)
    assert len(nni.sent) > sent


def test_the_pipelines_outputs_name_the_gem_port_their_frames_are_queued_on():
    """The pipeline's queue keys carry the GEM port: upstream the one the ONU's mapper put the frame on (under the
    flow's alloc id), downstream the flow's; so a T-CONT's GEM ports queue apart."""
    from dataplane_lab import RG_MAC, SERVER_MAC, Lab, ip_frame

    lab = Lab()
    onu = lab.activate(1, 11)
    service = onu.unis[2].services[0]
    lab.dp.bind_uni(onu.serial, 2)
    lab.configure_uni(onu, 2, 1100, service.c_tag)
    lab.att_flows(onu, 2, 1100, service.c_tag, service.s_tag, alloc=1030)      # GEM port 1100 of T-CONT 1030
    up = lab.dp.from_uni(onu.serial, 2, ip_frame(SERVER_MAC, RG_MAC))
    assert up[0].queue == (UP, onu, 1030, 1100) and up[1].queue is up[0].queue
    down = lab.dp.from_nni(ip_frame(RG_MAC, SERVER_MAC, tags=[(service.s_tag, 0), (service.c_tag, 0)]))
    assert down[0].queue == (DOWN, onu, 2, 1030, 1100)


@pytest.mark.parametrize("first, second, expect", [
    ((1, 0), (0, 0), (80e6, 20e6)),       # the higher scheduler priority is served first, up to its PIR
    ((0, 25), (0, 75), (25e6, 75e6)),     # one priority: the rest shared by the schedulers' weights
])
def test_what_the_pon_has_left_goes_by_the_schedulers_priority_then_weight(first, second, expect):
    """Past GIR and CIR (none here), a PON's rate goes to its T-CONTs by their schedulers' priority (the tech
    profile's us_scheduler priority, higher first), then within one priority by weight, none past its PIR."""
    onu_a, onu_b = two_onus()
    shaper = Shaper(rate_up=100_000_000)
    make_tcont(onu_a, 1024, HYBRID, {1100: (0, 0)}, priority=first[0], weight=first[1], pir=80_000, pbs=0)
    make_tcont(onu_b, 1025, HYBRID, {1110: (0, 0)}, priority=second[0], weight=second[1], pir=80_000, pbs=0)
    a, b = (UP, onu_a, 1024, 1100), (UP, onu_b, 1025, 1110)
    sent = run_streams(shaper, [(a, 100e6), (b, 100e6)], seconds=5)
    for key, want in zip((a, b), expect):
        assert 0.9 * want <= sent[key] * 8 / 5 <= 1.1 * want, (sent[key] * 8 / 5, want)


def test_an_over_booked_pon_cuts_the_fixed_rates_in_proportion():
    """GIRs adding up to more than the PON's rate (a real OLT refuses such a provisioning) are cut in proportion:
    60 and 20 Mbit/s of fixed rate on a 40 Mbit/s PON leave at 30 and 10, within the rate."""
    onu_a, onu_b = two_onus()
    shaper = Shaper(rate_up=40_000_000)
    make_tcont(onu_a, 1024, HYBRID, {1100: (0, 0)}, gir=60_000, pir=60_000)
    make_tcont(onu_b, 1025, HYBRID, {1110: (0, 0)}, gir=20_000, pir=20_000)
    a, b = (UP, onu_a, 1024, 1100), (UP, onu_b, 1025, 1110)
    sent = run_streams(shaper, [(a, 80e6), (b, 80e6)], seconds=5)
    assert 0.9 * 30e6 <= sent[a] * 8 / 5 <= 1.1 * 30e6 and 0.9 * 10e6 <= sent[b] * 8 / 5 <= 1.1 * 10e6
    assert sum(sent.values()) * 8 / 5 <= 1.02 * 40e6


def test_super_frames_larger_than_a_round_still_leave_by_weight():
    """GSO super-frames of 64 KiB (more than a round's quantum) on two WRR GEM ports of weights 1:3 leave, shared by
    weight within 10 %, none stuck."""
    onu, shaper = FakeOnu(), Shaper()
    make_tcont(onu, 1024, WRR, {1100: (0, 1), 1101: (0, 3)}, pir=80_000, pbs=0)
    a, b = (UP, onu, 1024, 1100), (UP, onu, 1024, 1101)
    sent = run_streams(shaper, [(a, 100e6), (b, 100e6)], seconds=10, size=65536)
    assert 0.9 * 20e6 <= sent[a] * 8 / 10 <= 1.1 * 20e6 and 0.9 * 60e6 <= sent[b] * 8 / 10 <= 1.1 * 60e6


def test_forgotten_tconts_keep_their_bytes_in_the_pons_counts():
    """Past `max_queues` the idle T-CONTs are forgotten, but their PON still counts what they were offered and
    carried, and no longer shares its rate with them."""
    onu, shaper = FakeOnu(), Shaper(max_queues=4, rate_up=1_000_000_000)
    for alloc in range(1024, 1034):
        onu.create(UPSTREAM, alloc, pir=900_000)
        assert shaper.offer((UP, onu, alloc, GEM), alloc, FRAME, 0.0) == SEND
    pon = shaper.pon_counters()[0]
    assert pon["offered_bytes"] == pon["carried_bytes"] == 10 * FRAME
    assert pon["shaped"] == len(shaper.counters()) <= 4
