"""What the data plane's shaper (oltsim.dataplane.shaper) costs per frame, in memory, on a fake clock.

1514-octet frames offered at 1 Gbit/s of simulated time: a T-CONT with no scheduler (counted, passed), a T-CONT
shaped at 2 Gbit/s (the bucket never empties: every frame passes at once), and one shaped at 500 Mbit/s (half the
frames queue and leave through `due`, a quarter of them tail-dropped when the queue is full); then the GEM port
queues' scheduler: the 500 Mbit/s T-CONT's frames spread over four GEM ports, strict priority and WRR; and the PON's
rate: four T-CONTs of PIR 500 Mbit/s sharing a PON of 1 Gbit/s (each offered 250 Mbit/s) or of 400 Mbit/s (each
over its share), the PON's DBA cycle giving their rates anew every 10 ms, against four T-CONTs at PIR 100 Mbit/s
with no PON rate to share (the same four queues over their rates). Also `DataPlaneService.deliver` with and without
a shaper for the tagged and untagged NNI copies of one upstream frame, to ports that only count. Times are the
process's CPU time (other processes' load on a shared machine counts less), every case once per run.

Targets: at most 1 us per frame for no scheduler (the cost every frame pays once the shaper is built), 3 us shaped;
the GEM queues and the PON's sharing no slower than 1.3 times the case they extend (one GEM port's FIFO; four
T-CONTs alone; the shaper before GEM queues and PON rates measured 0.32, 0.45 and 0.75 us for no scheduler, under
and over the rate on the development VM). bench/dataplane_pipeline.py gives the pipeline's own cost beside it.
Exits 0 whatever it measures.

    python bench/dataplane_shaper.py [--frames 200000] [--runs 5]
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from twisted.internet.task import Clock  # noqa: E402
from voltha_protos import tech_profile_pb2  # noqa: E402

from oltsim.dataplane.interfaces import InterfacePlan  # noqa: E402
from oltsim.dataplane.pipeline import ToNni, ToNniUntagged  # noqa: E402
from oltsim.dataplane.service import DataPlaneService  # noqa: E402
from oltsim.dataplane.shaper import SEND, UP, Shaper  # noqa: E402

FRAME = 1514
OFFERED = 1e9


class Pon:
    id, technology = 0, "XGS-PON"


class Onu:
    """What the shaper reads of a model ONU: its scheduler (`policy` over GEM ports 1024 up: {gem: (priority,
    weight)}) and queues."""

    def __init__(self, pir_kbps: int | None, policy=tech_profile_pb2.Hybrid, queues=None, pon=None, onu_id=1):
        self.serial, self.onu_id, self.pon = f"BBSM{onu_id:08d}", onu_id, pon or Pon()
        self.schedulers, self.queues = {}, {}
        up = tech_profile_pb2.UPSTREAM
        if pir_kbps:
            info = tech_profile_pb2.TrafficShapingInfo(pir=pir_kbps, pbs=10_000, cir=pir_kbps // 4, cbs=10_000)
            sched = tech_profile_pb2.TrafficScheduler(direction=up, alloc_id=1024, traffic_shaping_info=info,
                                                      scheduler=tech_profile_pb2.SchedulerConfig(sched_policy=policy))
            self.schedulers = {(up, 1024): (0, sched)}
        self.queues = {(up, gem): (0, tech_profile_pb2.TrafficQueue(direction=up, gemport_id=gem, priority=p,
                                                                    weight=w))
                       for gem, (p, w) in (queues or {}).items()}


def shaper_case(pir_kbps, frames: int, policy=tech_profile_pb2.Hybrid, queues=None, tconts: int = 1,
                rate_up: int | None = None) -> tuple[float, float]:
    """Microseconds per frame for offer (and due every 16 frames), and the share of frames that left: `tconts`
    T-CONTs on one PON (the frames taking turns), each with `queues`' GEM ports (the frames taking turns)."""
    pon = Pon()
    gems = sorted(queues or {1024: (0, 0)})
    keys = []
    for n in range(tconts):
        onu = Onu(pir_kbps, policy, queues, pon, onu_id=n + 1)
        keys.extend((UP, onu, 1024, gem) for gem in gems)
    # the frames of one T-CONT after another, its GEM ports in turn, at OFFERED in all
    keys = [keys[(i % tconts) * len(gems) + (i // tconts) % len(gems)] for i in range(len(keys))]
    shaper, interval = Shaper(rate_up=rate_up), FRAME * 8 / OFFERED
    now, sent = 0.0, 0
    offer, due = shaper.offer, shaper.due
    count = len(keys)
    start = time.process_time()
    for i in range(frames):
        if offer(keys[i % count], i, FRAME, now) == SEND:
            sent += 1
        if i & 15 == 15:
            sent += len(due(now)[0])
        now += interval
    took = time.process_time() - start
    return took / frames * 1e6, sent / frames


class Port:
    def __init__(self):
        self.model_port = type("ModelPort", (), {"packet_count": 0})()

    def send(self, frame):
        return True


def deliver_case(shaped: bool, frames: int) -> float:
    """Microseconds per upstream frame (its two NNI copies) through DataPlaneService.deliver."""
    clock = Clock()
    service = DataPlaneService(None, None, InterfacePlan(), clock, shaper=Shaper() if shaped else None)
    service.ports.update({"nni": Port(), "nni-untagged": Port()})
    key = (UP, Onu(None), 1024, 1024)
    outputs = [ToNni(bytes(FRAME + 8), key), ToNniUntagged(bytes(FRAME), key)]
    deliver = service.deliver
    start = time.process_time()
    for _ in range(frames):
        deliver(outputs)
    return (time.process_time() - start) / frames * 1e6


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=200_000)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args(argv)
    hybrid, wrr, strict = tech_profile_pb2.Hybrid, tech_profile_pb2.WRR, tech_profile_pb2.StrictPriority
    four_sp = {1024 + i: (i, 0) for i in range(4)}
    four_wrr = {1024 + i: (0, 10 * (i + 1)) for i in range(4)}
    cases = (
        ("no scheduler", None, {}, 1.0),
        ("PIR 2 Gbit/s (under it)", 2_000_000, {}, 3.0),
        ("PIR 500 Mbit/s (over it)", 500_000, {}, 3.0),
        ("  4 GEM ports, strict priority", 500_000, {"policy": strict, "queues": four_sp}, "1.3x"),
        ("  4 GEM ports, WRR 10:20:30:40", 500_000, {"policy": wrr, "queues": four_wrr}, "1.3x"),
        ("4 T-CONTs at PIR 100 Mbit/s", 100_000, {"tconts": 4}, 3.0),
        ("  4 T-CONTs on a 1 Gbit/s PON", 500_000, {"policy": hybrid, "tconts": 4, "rate_up": 10 ** 9}, "1.3x"),
        ("  4 T-CONTs on a 400 Mbit/s PON", 500_000, {"policy": hybrid, "tconts": 4, "rate_up": 4 * 10 ** 8},
         "1.3x"))
    # every case once per run, the runs one after another: a machine whose load changes weighs on all alike
    runs = {label: [] for label, *_ in cases}
    for _ in range(args.runs):
        for label, pir, kwargs, _target in cases:
            runs[label].append(shaper_case(pir, args.frames, **kwargs))
    # what each extends: the GEM ports one T-CONT's FIFO; the PON's sharing four T-CONTs each over its rate
    one_fifo = statistics.median(r[0] for r in runs["PIR 500 Mbit/s (over it)"])
    four = statistics.median(r[0] for r in runs["4 T-CONTs at PIR 100 Mbit/s"])
    for label, _pir, kwargs, target in cases:
        cost = statistics.median(r[0] for r in runs[label])
        base, name = (four, "4 T-CONTs alone") if kwargs.get("tconts") and label.startswith(" ") else \
            (one_fifo, "the one FIFO")
        against = f"target <= {target} us" if not isinstance(target, str) else \
            f"{cost / base:.2f}x {name}, target <= {target}"
        print(f"shaper {label:32s} {cost:6.2f} us/frame  left {runs[label][0][1] * 100:5.1f} %  ({against})")
    plain = statistics.median(deliver_case(False, args.frames) for _ in range(args.runs))
    shaped = statistics.median(deliver_case(True, args.frames) for _ in range(args.runs))
    print(f"deliver without shaper            {plain:6.2f} us/frame (2 NNI copies)")
    print(f"deliver with shaper, no scheduler {shaped:6.2f} us/frame (+{shaped - plain:.2f} us)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
