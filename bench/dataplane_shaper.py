"""What the data plane's shaper (oltsim.dataplane.shaper) costs per frame, in memory, on a fake clock.

Three cases, 1514-octet frames offered at 1 Gbit/s of simulated time: a T-CONT with no scheduler (today's
behaviour: counted, passed), a T-CONT shaped at 2 Gbit/s (the bucket never empties: every frame passes at once),
and one shaped at 500 Mbit/s (half the frames queue and leave through `due`, a quarter of them tail-dropped when
the queue is full). Also `DataPlaneService.deliver` with and without a shaper for the tagged and untagged NNI copies
of one upstream frame, to ports that only count.

Target: at most 1 us per frame for no scheduler (the cost every frame pays once the shaper is built), 3 us shaped;
bench/dataplane_pipeline.py gives the pipeline's own cost beside it. Exits 0 whatever it measures.

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


class Onu:
    """What the shaper reads of a model ONU."""

    def __init__(self, pir_kbps: int | None):
        self.serial, self.onu_id, self.pon = "BBSM00000001", 1, None
        self.schedulers = {}
        if pir_kbps:
            info = tech_profile_pb2.TrafficShapingInfo(pir=pir_kbps, pbs=10_000, cir=pir_kbps // 4, cbs=10_000)
            sched = tech_profile_pb2.TrafficScheduler(direction=tech_profile_pb2.UPSTREAM, alloc_id=1024,
                                                      traffic_shaping_info=info)
            self.schedulers = {(tech_profile_pb2.UPSTREAM, 1024): (0, sched)}


def shaper_case(pir_kbps, frames: int) -> tuple[float, float]:
    """Microseconds per frame for offer (and due every 16 frames), and the share of frames that left."""
    shaper, key, interval = Shaper(), (UP, Onu(pir_kbps), 1024), FRAME * 8 / OFFERED
    now, sent = 0.0, 0
    offer, due = shaper.offer, shaper.due
    start = time.perf_counter()
    for i in range(frames):
        if offer(key, i, FRAME, now) == SEND:
            sent += 1
        if i & 15 == 15:
            sent += len(due(now)[0])
        now += interval
    took = time.perf_counter() - start
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
    key = (UP, Onu(None), 1024)
    outputs = [ToNni(bytes(FRAME + 8), key), ToNniUntagged(bytes(FRAME), key)]
    deliver = service.deliver
    start = time.perf_counter()
    for _ in range(frames):
        deliver(outputs)
    return (time.perf_counter() - start) / frames * 1e6


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=200_000)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args(argv)
    for label, pir, target in (("no scheduler", None, 1.0), ("PIR 2 Gbit/s (under it)", 2_000_000, 3.0),
                               ("PIR 500 Mbit/s (over it)", 500_000, 3.0)):
        runs = [shaper_case(pir, args.frames) for _ in range(args.runs)]
        cost = statistics.median(r[0] for r in runs)
        print(f"shaper {label:26s} {cost:6.2f} us/frame  left {runs[0][1] * 100:5.1f} %  "
              f"(target <= {target} us)")
    plain = statistics.median(deliver_case(False, args.frames) for _ in range(args.runs))
    shaped = statistics.median(deliver_case(True, args.frames) for _ in range(args.runs))
    print(f"deliver without shaper            {plain:6.2f} us/frame (2 NNI copies)")
    print(f"deliver with shaper, no scheduler {shaped:6.2f} us/frame (+{shaped - plain:.2f} us)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
