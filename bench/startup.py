#!/usr/bin/env python3
"""Start-up benchmark: time to the first 200 on GET /v1/olt and resident memory after start.

Starts the real daemon (`twistd -n oltsim`, this checkout on PYTHONPATH) on loopback ports for each PON x ONU
size with 4 UNIs, repeats each size, prints medians in one table with PASS/FAIL per target (16x32 within 1.5 s and
120 MiB, 16x256 within 4 s and 350 MiB, under 0.5 ms and 50 KiB per ONU), and exits 0 whatever the numbers are (it
is a report, not a test).

    python bench/startup.py [--repeat 3] [--sizes 1x1,4x16,16x32,16x64,16x256] [--uni 4] [--settle 1.0]
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from tests.support.daemon import Daemon, rss_bytes  # noqa: E402

SIZES = ("1x1", "4x16", "16x32", "16x64", "16x256")
MIB = 1024 * 1024

# (size, seconds, MiB) targets; per-ONU targets are checked on the 16x32 -> 16x256 slope.
TARGETS = {"16x32": (1.5, 120.0), "16x256": (4.0, 350.0)}
PER_ONU_MS, PER_ONU_KIB = 0.5, 50.0


def measure(size: str, uni: int, settle: float) -> tuple[float, int]:
    """(seconds to first 200, RSS bytes `settle` s after it) for one start of a PONxONU size."""
    pon, onu = (int(n) for n in size.split("x"))
    with Daemon("--pon", str(pon), "--onu", str(onu), "--uni", str(uni)) as daemon:
        seconds = daemon.start()
        time.sleep(settle)
        return seconds, rss_bytes(daemon.process.pid)


def verdict(ok: bool) -> str:
    return "PASS" if ok else "FAIL"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="starts per size; the median is shown (default 3)")
    parser.add_argument("--sizes", default=",".join(SIZES), help="PONxONU sizes (default %(default)s)")
    parser.add_argument("--uni", type=int, default=4, help="UNIs per ONU (default 4)")
    parser.add_argument("--settle", type=float, default=1.0,
                        help="seconds after the first 200 before RSS is read (default 1.0)")
    args = parser.parse_args(argv)
    sizes = [s.strip() for s in args.sizes.split(",") if s.strip()]

    results: dict[str, tuple[float, float]] = {}
    for size in sizes:
        runs = []
        for _ in range(max(1, args.repeat)):
            try:
                runs.append(measure(size, args.uni, args.settle))
            except RuntimeError as exc:
                print(f"{size}: {exc}", file=sys.stderr)
                break
        if runs:
            results[size] = (statistics.median(r[0] for r in runs), statistics.median(r[1] for r in runs))

    print(f"oltsim start-up, {args.uni} UNIs per ONU, median of {args.repeat} starts "
          f"(python {sys.version.split()[0]}, {os.cpu_count()} CPUs)")
    header = f"{'PONxONU':<22}{'ONUs':>6}{'start s':>10}{'RSS MiB':>10}   {'target':<24}{'time':<6}{'RSS':<6}"
    print(header)
    print("-" * len(header))
    for size, (seconds, rss) in results.items():
        pon, onu = (int(n) for n in size.split("x"))
        target, time_ok, rss_ok = "", "", ""
        if size in TARGETS:
            t_max, m_max = TARGETS[size]
            target = f"<= {t_max:g} s, <= {m_max:g} MiB"
            time_ok, rss_ok = verdict(seconds <= t_max), verdict(rss / MIB <= m_max)
        print(f"{size:<22}{pon * onu:>6}{seconds:>10.2f}{rss / MIB:>10.1f}   {target:<24}{time_ok:<6}{rss_ok:<6}")
    if "16x32" in results and "16x256" in results:
        (t1, m1), (t2, m2) = results["16x32"], results["16x256"]
        onus = 16 * 256 - 16 * 32
        per_ms, per_kib = (t2 - t1) / onus * 1000, (m2 - m1) / onus / 1024
        label = "per ONU (16x32->16x256)"
        target = f"< {PER_ONU_MS:g} ms, < {PER_ONU_KIB:g} KiB"
        print(f"{label:<28}{per_ms:>7.3f} ms{per_kib:>6.1f} KiB   {target:<24}"
              f"{verdict(per_ms < PER_ONU_MS):<6}{verdict(per_kib < PER_ONU_KIB):<6}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
