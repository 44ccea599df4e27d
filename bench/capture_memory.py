#!/usr/bin/env python3
"""Capture: the memory the default capture ring costs per ONU, and whether it holds every ONU's whole
bring-up.

In memory on a fake clock (no daemon: the ring's records are the same as the daemon's, and the run takes seconds):
the OLT model at `--size` (default 16x32, 4 UNIs, ATT services), the OMCI responder, the protocol engine and the
built-in adapter wired as oltsim.tap wires them, with the ring the daemon builds by default
(`Capture.for_olt(olt, DEFAULT_SIZE)`: 20,000 records, or ONU_RECORDS + UNI_RECORDS a UNI for each ONU if that is
more). The bring-up runs until every service has its DHCP ack, then `--settle` seconds more of the clock. Then:

- **records**: what the bring-up recorded, what the ring keeps, its size, whether it wrapped;
- **whole bring-ups**: the ONUs whose records in the ring hold their ActivateOnu, MIB reset, a flow added, an
  EAPOL frame and a DHCP ack at their UNIs; and the same for the last 20,000 records (a ring of fixed size);
- **memory**: the bytes the ring holds (tracemalloc's traced memory before and after the ring is emptied: its
  records, their timestamps, the frames' bytes and the annotations' event objects), in total and per ONU.

Targets: every ONU's bring-up whole in the default ring; at most 160 KiB per ONU (80 MiB at 16x32). Exits 0 whatever
it measures (a report, not a test).

    python bench/capture_memory.py [--size 16x32] [--uni 4] [--settle 10]
"""
from __future__ import annotations

import argparse
import gc
import random
import sys
import time
import tracemalloc
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from twisted.internet.task import Clock  # noqa: E402

from oltsim.capture import ring as capture_ring  # noqa: E402
from oltsim.capture.ring import DATA, EVENT, OMCI, POINT, SERIAL, UNI, UP, Capture  # noqa: E402
from oltsim.config import load_settings  # noqa: E402
from oltsim.model import events  # noqa: E402
from oltsim.model.builder import build_olt  # noqa: E402
from oltsim.omci.responder import OmciResponder  # noqa: E402
from oltsim.packets.engine import ProtocolEngine  # noqa: E402
from oltsim.tap import FramePath  # noqa: E402
from oltsim.southbound.builtin import BuiltinAdapter  # noqa: E402
from oltsim.southbound.openolt import IndicationHub, OpenoltServicer  # noqa: E402

KIB, MIB = 1024, 1024 * 1024
TARGET_KIB_PER_ONU = 160
OLD_DEFAULT = 20_000
STEP = 0.1
DHCP_OK = "dhcp_ack_received"
PARTS = ("activate", "mib-reset", "flow", "eapol", "dhcp-ack")


def bring_up(pon: int, onu: int, uni: int, settle: float):
    """The OLT brought up by the built-in adapter with the daemon's default ring; (olt, capture, seconds of wall
    time, seconds of clock)."""
    settings = load_settings({"pon": pon, "onu": onu, "uni": uni}, None)
    clock = Clock()
    clock.advance(1_700_000_000)
    path = FramePath(OmciResponder.from_settings(settings), ProtocolEngine.from_settings(settings))
    olt = build_olt(settings, clock, random.Random(0), omci=path.omci, frames=path.frames)
    path.attach(olt)
    capture = Capture.for_olt(olt, capture_ring.DEFAULT_SIZE)
    hub = IndicationHub(olt)
    adapter = BuiltinAdapter(olt, hub, OpenoltServicer(olt, hub, capture), clock, random.Random(1),
                             reachable=lambda: True)
    olt.start()
    adapter.startService()
    started, begun = time.monotonic(), clock.seconds()
    for _ in range(round(1800 / STEP)):
        if all(s.dhcp_state == DHCP_OK for o in olt.onus for s in o.services):
            break
        clock.advance(STEP)
    else:
        raise SystemExit("the ONUs did not come up in 1800 s of the clock")
    for _ in range(round(settle / STEP)):
        clock.advance(STEP)
    took = time.monotonic() - started, clock.seconds() - begun
    adapter.stopService()
    hub.end_all()
    return olt, capture, took


def whole_bring_ups(records) -> tuple[int, dict]:
    """(ONUs whose records hold every part of a bring-up, {part: ONUs missing it})."""
    seen: dict = defaultdict(set)
    for record in records:
        serial, point, data = record[SERIAL], record[POINT], record[DATA]
        if not serial:
            continue
        if point == EVENT:
            if data.__class__ is events.OpenoltRequest and data.rpc == "ActivateOnu":
                seen[serial].add("activate")
            elif data.__class__ is events.FlowChanged and data.added:
                seen[serial].add("flow")
        elif point == OMCI:
            frame = data[0] if data.__class__ is tuple else data
            if not record[UP] and len(frame) > 2 and frame[2] & 0x1F == 15:
                seen[serial].add("mib-reset")
        elif point == UNI:
            frame = data[0] if data.__class__ is tuple else data
            if frame[12:14] == b"\x88\x8e":
                seen[serial].add("eapol")
            elif not record[UP] and b"\x63\x82\x53\x63\x35\x01\x05" in frame:
                seen[serial].add("dhcp-ack")
    whole = sum(1 for parts in seen.values() if len(parts) == len(PARTS))
    missing = {part: sum(1 for parts in seen.values() if part not in parts) for part in PARTS}
    return whole, missing


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", default="16x32", help="PONs x ONUs (default 16x32)")
    parser.add_argument("--uni", type=int, default=4, help="UNIs per ONU (default 4)")
    parser.add_argument("--settle", type=float, default=10.0, help="clock seconds after the last DHCP ack")
    args = parser.parse_args(argv)
    pon, onu = (int(n) for n in args.size.lower().split("x"))
    tracemalloc.start()
    olt, capture, (wall, clock_s) = bring_up(pon, onu, args.uni, args.settle)
    onus = len(olt.onus)
    print(f"{pon}x{onu}, {args.uni} UNIs: {onus} ONUs up in {clock_s:.1f} s of clock ({wall:.1f} s wall, "
          f"tracemalloc on)")
    print(f"records: {capture.recorded} recorded, {len(capture.records)} kept, ring size {capture.size} "
          f"(DEFAULT_SIZE {capture_ring.DEFAULT_SIZE}, {capture_ring.ONU_RECORDS} + {capture_ring.UNI_RECORDS} "
          f"a UNI per ONU), wrapped: {'yes' if capture.wrapped else 'no'}; "
          f"{capture.recorded / onus:.0f} records per ONU")
    whole, missing = whole_bring_ups(capture.records)
    print(f"whole bring-ups in the default ring: {whole} of {onus} ONUs"
          f"{'' if whole == onus else ' (missing: ' + str(missing) + ')'} -> {'PASS' if whole == onus else 'FAIL'}")
    old_whole, _ = whole_bring_ups(list(capture.records)[-OLD_DEFAULT:])
    print(f"whole bring-ups in the last {OLD_DEFAULT} records (a ring of fixed size): {old_whole} of {onus}")
    gc.collect()
    before = tracemalloc.get_traced_memory()[0]
    kept = len(capture.records)
    capture.records.clear()
    gc.collect()
    held = before - tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    per_onu = held / onus
    print(f"memory of the ring: {held / MIB:.1f} MiB for {kept} records ({held / max(kept, 1):.0f} bytes a "
          f"record), {per_onu / KIB:.1f} KiB per ONU (target <= {TARGET_KIB_PER_ONU} KiB) -> "
          f"{'PASS' if per_onu <= TARGET_KIB_PER_ONU * KIB else 'FAIL'}")
    worst = capture.size * capture_ring.RECORD_OVERHEAD + capture.budget
    print(f"the ring's bound whatever the adapter sends: {capture.size} records x {capture_ring.RECORD_OVERHEAD} "
          f"bytes + {capture.budget / MIB:.1f} MiB of frames = {worst / MIB:.1f} MiB")
    capture.close()
    olt.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
