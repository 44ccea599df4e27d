#!/usr/bin/env python3
"""The long version of tests/integration/test_load.py: power-on/off storms over every ONU (REST and gRPC from
several threads), reads, FlowAdd/FlowRemove and OLT reboots every `--reboot-every` seconds, for `--duration`
seconds, against oltsim running in this process on loopback ports (reboot timings 1 s / 0.2 s).

Prints the requests by surface and status, the errors (5xx, unexpected gRPC codes) and the final invariant
checks (each ONU in one legal state, none stuck, flows consistent with the registries, no delayed call left
after stopService). Exit status 1 when an error or a broken invariant was seen.

    python tests/support/load.py [--duration 300] [--pon 4] [--onu 16] [--threads 2] [--reboot-every 60]
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(REPO), str(REPO / "tests" / "integration")]

from twisted.internet import reactor, threads  # noqa: E402
from twisted.internet.defer import inlineCallbacks  # noqa: E402
from twisted.internet.task import deferLater  # noqa: E402

from test_adapter import start_oltsim  # noqa: E402
from test_load import Storm, check_invariants, due_soon  # noqa: E402


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=float, default=300.0, help="seconds of storm (default 300)")
    parser.add_argument("--pon", type=int, default=4)
    parser.add_argument("--onu", type=int, default=16)
    parser.add_argument("--threads", type=int, default=2, help="threads per kind of client (default 2)")
    parser.add_argument("--reboot-every", type=float, default=60.0, help="seconds between reboots (0: none)")
    args = parser.parse_args(argv)
    outcome = {"code": 1}

    @inlineCallbacks
    def run():
        tmp = Path(tempfile.mkdtemp(prefix="oltsim-load-"))
        sim = start_oltsim(tmp, "--pon", str(args.pon), "--onu", str(args.onu), "--delay", "0")
        port = int(sim.rest.rsplit(":", 1)[1])
        serials = [onu.serial for onu in sim.olt.onus]
        storms, begin = [], time.monotonic()
        try:
            # One storm per reboot period, each rebooting in its middle, all sharing nothing but the OLT.
            period = args.reboot_every if args.reboot_every > 0 else args.duration
            left = args.duration
            while left > 0:
                span = min(period, left)
                storm = Storm(port, sim.openolt, sim.grpc_v1, serials, seed=len(storms), threads=args.threads,
                              reboot_at=span / 2 if args.reboot_every > 0 and span >= 4 else None)
                storms.append(storm)
                yield threads.deferToThread(storm.run, span)
                yield threads.deferToThread(storm.reconnect_and_settle)
                yield threads.deferToThread(storm.close)
                left -= span
            for _ in range(100):
                if due_soon(sim.olt) == 0:
                    break
                yield deferLater(reactor, 0.1, lambda: None)
            problems = check_invariants(sim.olt)
        finally:
            yield sim.top.stopService()
        leaked = sim.olt.pending_calls()
        totals = {}
        for storm in storms:
            for key, n in storm.counts.items():
                totals[key] = totals.get(key, 0) + n
        errors = {k: n for s in storms for k, n in s.errors().items()}
        failures = [f for s in storms for f in s.failures]
        elapsed = time.monotonic() - begin
        print(f"oltsim load storm: {args.pon}x{args.onu} ONUs, {args.threads} threads per client kind, "
              f"{elapsed:.0f} s, {sum(bool(s.rebooted.is_set()) for s in storms)} reboots")
        print(f"{'surface':<10}{'status':<22}{'requests':>10}")
        for (surface, status), n in sorted(totals.items()):
            print(f"{surface:<10}{status:<22}{n:>10}")
        print(f"total {sum(totals.values())} requests, {sum(totals.values()) / elapsed:.0f}/s")
        print(f"errors (5xx, unexpected gRPC codes): {errors or 'none'}")
        for line in failures[:10]:
            print(f"  {line}")
        print(f"invariants: {'all hold' if not problems else ''}")
        for line in problems[:20]:
            print(f"  {line}")
        print(f"delayed calls left after stopService: {leaked}")
        outcome["code"] = 0 if not (errors or failures or problems or leaked) else 1

    def go():
        d = run()
        d.addErrback(lambda failure: print(failure.getTraceback(), file=sys.stderr))
        d.addBoth(lambda _: reactor.stop())

    reactor.callWhenRunning(go)
    reactor.run()
    return outcome["code"]


if __name__ == "__main__":
    sys.exit(main())
