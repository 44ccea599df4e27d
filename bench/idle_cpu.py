#!/usr/bin/env python3
"""Idle CPU benchmark: the daemon's CPU use once 2048 ONUs (16x128) are up, authenticated and addressed.

Starts `twistd -n oltsim` on loopback ports (as bench/startup.py does), brings every ONU up with the in-repo BBR
adapter (tests/integration/bbr_adapter.py, discovery delay 0), lets it settle, then reads the daemon's CPU time
(utime + stime from /proc/<pid>/stat) over `--window` seconds twice: with the adapter still connected (its
indication stream open, so periodic port statistics flow as with VOLTHA) and after the adapter left. Target:
below 0.5 % of a core. Exits 0 whatever the numbers are (it is a report, not a test).

    python bench/idle_cpu.py [--pon 16] [--onu 128] [--window 30] [--settle 5] [--timeout 1800]
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from bringup import bring_up, cpu_seconds

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))
from tests.support.daemon import Daemon, rss_bytes  # noqa: E402

TARGET_PERCENT = 0.5
MIB = 1024 * 1024


def idle_percent(pid: int, window: float) -> float:
    """CPU time used by `pid` over the next `window` seconds, in percent of one core."""
    cpu, start = cpu_seconds(pid), time.monotonic()
    time.sleep(window)
    return (cpu_seconds(pid) - cpu) / (time.monotonic() - start) * 100


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pon", type=int, default=16)
    parser.add_argument("--onu", type=int, default=128)
    parser.add_argument("--uni", type=int, default=4)
    parser.add_argument("--window", type=float, default=30.0, help="seconds of each measurement (default 30)")
    parser.add_argument("--settle", type=float, default=5.0,
                        help="seconds after the bring-up before measuring (default 5)")
    parser.add_argument("--timeout", type=float, default=1800.0, help="seconds the bring-up may take")
    args = parser.parse_args(argv)
    onus = args.pon * args.onu

    with Daemon("--pon", str(args.pon), "--onu", str(args.onu), "--uni", str(args.uni), "--delay", "0") as daemon:
        daemon.start()
        pid = daemon.process.pid
        adapter, seconds, cpu = bring_up(daemon, args.timeout, keep_stream=True)
        try:
            time.sleep(args.settle)
            connected = idle_percent(pid, args.window)
        finally:
            adapter.close()
        time.sleep(args.settle)
        alone = idle_percent(pid, args.window)
        rss = rss_bytes(pid)

    print(f"oltsim idle CPU after BBR's bring-up of {args.pon}x{args.onu} = {onus} ONUs ({args.uni} UNIs each; "
          f"bring-up {seconds:.1f} s, {cpu:.1f} CPU s; RSS {rss / MIB:.1f} MiB; python {sys.version.split()[0]}, "
          f"{os.cpu_count()} CPUs)")
    header = f"{'phase':<34}{'window s':>9}{'CPU % of a core':>17}   {'target':<10}"
    print(header)
    print("-" * len(header))
    for phase, percent in (("adapter connected (stream open)", connected), ("adapter gone", alone)):
        verdict = "PASS" if percent < TARGET_PERCENT else "FAIL"
        print(f"{phase:<34}{args.window:>9g}{percent:>17.3f}   < {TARGET_PERCENT:g} {verdict}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
