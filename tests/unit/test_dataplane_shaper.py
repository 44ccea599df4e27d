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


class FakePon:
    id = 0


class FakeOnu:
    """What the shaper reads of a model ONU: its schedulers (replaced as a whole on a change, as the model does)."""

    def __init__(self):
        self.serial = "BBSM00000001"
        self.pon = FakePon()
        self.onu_id = 1
        self.schedulers = {}

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


def test_a_stream_at_twice_pir_leaves_at_pir():
    """Offered at 2x PIR for 10 simulated seconds, the stream leaves at PIR within 5 %, the rest tail-dropped."""
    clock, onu, shaper = task.Clock(), FakeOnu(), Shaper()
    onu.create(UPSTREAM, 1024, pir=50_000, pbs=10_000, cir=10_000, cbs=10_000)   # 50 Mbit/s
    key = (UP, onu, 1024)
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
    key = (UP, onu, 1024)
    verdicts = [shaper.offer(key, i, FRAME, 0.0) for i in range(300_000 // FRAME)]
    assert verdicts == [SEND] * len(verdicts)
    assert shaper.offer(key, "next", FRAME, 0.0) == QUEUED


def test_the_queue_is_bounded_in_bytes_and_counts_tail_drops():
    """Past the bucket, frames queue up to the queue's bound in bytes; more are dropped at the tail and counted."""
    onu, shaper = FakeOnu(), Shaper()
    onu.create(UPSTREAM, 1024, pir=1_000, pbs=0)     # 1 Mbit/s: bucket and queue at their minimum
    limit = limit_of(onu.schedulers[(UPSTREAM, 1024)][1].traffic_shaping_info)
    assert limit.queue == MIN_QUEUE_BYTES
    key = (UP, onu, 1024)
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


def test_queued_frames_leave_in_order_at_the_rate():
    """Queued frames come back from `due` in their order, each when the bucket has its bytes; `due` names the next
    wake-up."""
    onu, shaper = FakeOnu(), Shaper()
    onu.create(UPSTREAM, 1024, pir=8_000, pbs=0)     # 1 Mbyte/s
    key = (UP, onu, 1024)
    while shaper.offer(key, "burst", FRAME, 0.0) == SEND:
        pass
    for i in range(20):
        assert shaper.offer(key, i, FRAME, 0.0) == QUEUED
    out, wake = shaper.due(0.0)
    assert out == [] and wake is not None and 0 < wake <= 2 * FRAME / 1e6
    # a late wake-up releases at most a bucket's worth (the rate holds even when the reactor was busy)
    out, wake = shaper.due(10.0)
    burst = shaper._queues[key].limit.burst
    assert out == ["burst", *range(len(out) - 1)] and len(out) == burst // FRAME and wake is not None
    while wake is not None:
        more, wake = shaper.due(wake)
        out += more
    assert out == ["burst", *range(20)]


def test_a_removed_scheduler_stops_shaping_at_once():
    """Removing the scheduler releases the queued frames at the next wake-up and lets new frames pass."""
    onu, shaper = FakeOnu(), Shaper()
    onu.create(UPSTREAM, 1024, pir=1_000, pbs=0)
    key = (UP, onu, 1024)
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
    key = (UP, onu, 1024)
    run(shaper, key, clock, rate_bps=40e6, seconds=1)
    onu.create(UPSTREAM, 1024, pir=10_000, pbs=0)
    sent, _ = run(shaper, key, clock, rate_bps=40e6, seconds=10)
    assert 0.95 * 10e6 <= sent * 8 / 10 <= 1.05 * 10e6


def test_no_scheduler_means_no_limit():
    """A key with no scheduler (upstream: none for its alloc id) passes everything, counted."""
    onu, shaper = FakeOnu(), Shaper()
    onu.create(UPSTREAM, 1025, pir=1_000)
    key = (UP, onu, 1024)
    assert [shaper.offer(key, i, FRAME, 0.0) for i in range(1000)] == [SEND] * 1000
    row = shaper.counters()[0]
    assert row["limit"] is None and row["sent_bytes"] == 1000 * FRAME and row["queue_bytes"] == 0


def test_downstream_by_alloc_id_else_by_uni():
    """Downstream: the scheduler of the flow's alloc id, else the one of the UNI; upstream schedulers do not
    shape downstream frames."""
    onu, shaper = FakeOnu(), Shaper()
    onu.create(UPSTREAM, 1024, pir=1_000)
    assert Shaper().offer((DOWN, onu, 0, 1024), 0, FRAME, 0.0) == SEND
    onu.create(DOWNSTREAM, 2000, uni_id=1, pir=1_000)
    verdicts = [shaper.offer((DOWN, onu, 1, 1024), i, FRAME, 0.0) for i in range(20)]
    assert QUEUED in verdicts
    assert [shaper.offer((DOWN, onu, 0, 1024), i, FRAME, 0.0) for i in range(20)] == [SEND] * 20
    onu.create(DOWNSTREAM, 1030, uni_id=0, pir=1_000)
    assert QUEUED in [shaper.offer((DOWN, onu, 0, 1030), i, FRAME, 0.0) for i in range(20)]


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

    class Port:
        def __init__(self):
            self.sent = []
            self.model_port = type("P", (), {"packet_count": 0})()

        def send(self, frame):
            self.sent.append(frame)
            return True

        def close(self):
            pass

    clock, onu, shaper = task.Clock(), FakeOnu(), Shaper()
    onu.create(UPSTREAM, 1024, pir=8_000, pbs=0)          # 1 Mbyte/s
    service = DataPlaneService(None, None, InterfacePlan(), clock, shaper=shaper)
    nni, untagged = Port(), Port()
    service.ports.update({"nni": nni, "nni-untagged": untagged})
    key = (UP, onu, 1024)
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
    busy = (UP, onu, 1)
    while shaper.offer(busy, "x", FRAME, 0.0) != QUEUED:
        pass
    for alloc in range(2, 100):
        assert shaper.offer((UP, onu, alloc), alloc, FRAME, 0.0) == SEND
    assert len(shaper.counters()) <= 8
    assert any(row["alloc_id"] == 1 and row["queue_frames"] == 1 for row in shaper.counters())
