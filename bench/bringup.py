#!/usr/bin/env python3
"""Bring-up benchmark: BBR's whole sequence (activation, OMCI MIB upload, EAPOL, DHCP) against the real daemon.

For each PONxONU size and discovery delay, starts `twistd -n oltsim` on loopback ports (as bench/startup.py does),
reads its RSS once it serves, runs the in-repo BBR adapter (tests/integration/bbr_adapter.py) against it and
prints the medians of `--runs` runs: the time from the adapter's first call (GetDeviceInfo) to every service on
UNI 0 in dhcp_ack_received, the simulator's CPU seconds over that time (utime + stime from /proc/<pid>/stat), and
its RSS after, with the growth per ONU above the same daemon's RSS right after start. Targets: with delay 0, 512
ONUs within 3 s; at most 40 KiB per ONU above the empty process (BBSim: 546). Exits 0 whatever the numbers are (it
is a report, not a test); a failed run is reported and skipped.

    python bench/bringup.py [--runs 3] [--sizes 16x32,16x128] [--delays 0,200] [--uni 4] [--timeout 600]
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
# The adapter lives with the integration tests (it is one); it imports oltsim from this checkout.
sys.path[:0] = [str(REPO), str(REPO / "tests" / "integration")]
from bbr_adapter import BbrAdapter  # noqa: E402

from tests.support.daemon import Daemon, rss_bytes  # noqa: E402

SIZES = ("16x32", "16x128")
DELAYS = (0, 200)
TARGET_ONUS, TARGET_SECONDS = 512, 3.0     # with delay 0
TARGET_KIB_PER_ONU = 40.0
KIB = 1024
MIB = 1024 * 1024
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far, from /proc/<pid>/stat (utime and stime, in clock ticks)."""
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()   # the command name may hold spaces; skip past it
    # After ")": state is field 3 of stat(5), so utime (14) and stime (15) are at 11 and 12 here.
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def settle_rss(pid: int, settle: float) -> int:
    """RSS after `settle` seconds of quiet."""
    time.sleep(settle)
    return rss_bytes(pid)


def bring_up(daemon: Daemon, timeout: float, keep_stream: bool = False) -> tuple[BbrAdapter, float, float]:
    """Run BBR against a serving daemon; returns (adapter, seconds to all done, daemon CPU seconds meanwhile).
    The adapter reads the model (GetServices) first, as BBR builds its own before it connects."""
    pid = daemon.process.pid
    adapter = BbrAdapter(f"127.0.0.1:{daemon.ports['openolt']}", f"127.0.0.1:{daemon.ports['grpc-v1']}")
    adapter.load_model()
    cpu_before = cpu_seconds(pid)
    adapter.run(timeout, keep_stream=keep_stream)
    cpu = cpu_seconds(pid) - cpu_before
    return adapter, adapter.completed_at - adapter.connected_at, cpu


def measure(size: str, delay: int, uni: int, timeout: float, settle: float) -> dict:
    """One daemon start and one bring-up of a size at a delay."""
    pon, onu = (int(n) for n in size.split("x"))
    with Daemon("--pon", str(pon), "--onu", str(onu), "--uni", str(uni), "--delay", str(delay)) as daemon:
        daemon.start()
        pid = daemon.process.pid
        empty = settle_rss(pid, settle)
        adapter, seconds, cpu = bring_up(daemon, timeout)
        try:
            after = settle_rss(pid, settle)
        finally:
            adapter.close()
        return {"seconds": seconds, "cpu": cpu, "empty": empty, "after": after,
                "per_onu": (after - empty) / (pon * onu), "alarms": adapter.alarms}


def verdict(ok: bool) -> str:
    return "PASS" if ok else "FAIL"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="bring-ups per size and delay; medians (default 3)")
    parser.add_argument("--sizes", default=",".join(SIZES), help="PONxONU sizes (default %(default)s)")
    parser.add_argument("--delays", default=",".join(map(str, DELAYS)),
                        help="discovery delays in ms (default %(default)s)")
    parser.add_argument("--uni", type=int, default=4, help="UNIs per ONU (default 4; BBR counts 227 MIB entries "
                                                             "for 4)")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds a bring-up may take (default 600)")
    parser.add_argument("--settle", type=float, default=1.0,
                        help="seconds of quiet before each RSS reading (default 1.0)")
    args = parser.parse_args(argv)
    sizes = [s.strip() for s in args.sizes.split(",") if s.strip()]
    delays = [int(d) for d in args.delays.split(",") if d.strip()]

    rows = []
    for size in sizes:
        for delay in delays:
            runs = []
            for _ in range(max(1, args.runs)):
                try:
                    runs.append(measure(size, delay, args.uni, args.timeout, args.settle))
                except (AssertionError, RuntimeError) as exc:
                    print(f"{size} delay {delay}: run failed: {exc}", file=sys.stderr)
            if runs:
                rows.append((size, delay, len(runs),
                             {key: statistics.median(r[key] for r in runs) for key in runs[0]}))

    print(f"oltsim bring-up by BBR's sequence, {args.uni} UNIs per ONU, median of {args.runs} runs "
          f"(python {sys.version.split()[0]}, {os.cpu_count()} CPUs)")
    header = (f"{'PONxONU':<9}{'ONUs':>6}{'delay':>7}{'runs':>5}{'bring-up s':>12}{'CPU s':>8}{'RSS start':>11}"
              f"{'RSS after':>11}{'KiB/ONU':>9}   {'time target':<16}{'RSS target':<14}")
    print(header)
    print("-" * len(header))
    for size, delay, count, m in rows:
        pon, onu = (int(n) for n in size.split("x"))
        onus = pon * onu
        time_target = ""
        if delay == 0 and onus == TARGET_ONUS:
            time_target = f"<= {TARGET_SECONDS:g} s {verdict(m['seconds'] <= TARGET_SECONDS)}"
        rss_target = f"<= {TARGET_KIB_PER_ONU:g} {verdict(m['per_onu'] / KIB <= TARGET_KIB_PER_ONU)}"
        print(f"{size:<9}{onus:>6}{delay:>7}{count:>5}{m['seconds']:>12.2f}{m['cpu']:>8.2f}"
              f"{m['empty'] / MIB:>9.1f}Mi{m['after'] / MIB:>9.1f}Mi{m['per_onu'] / KIB:>9.1f}   "
              f"{time_target:<16}{rss_target:<14}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
