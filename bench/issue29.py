#!/usr/bin/env python3
"""Issue 29's southbound targets (a), (b) and (d), each side's runs interleaved, the load printed with every run.

(a) sequential OMCI (bench/omci_seq.py's phase: MIB reset, upload, every upload-next, x3, one request outstanding
    per ONU) at 1 and 64 ONUs, oltsim and BBSim one after the other within each run: CPU per exchange <= 0.8x
    BBSim's, median round trip <= 0.9x.
(b) bbr 16x32, 4 UNIs, delay 0 (bench/bbr.py's run), oltsim and BBSim alternating: simulator CPU <= 0.9x, bbr
    wall <= 1.0x.
(d) bbr 16x128, 1 UNI, oltsim from this checkout and from --before (a `git worktree` of e87db31) alternating:
    completes, and simulator CPU <= 0.85x --before's.

Medians of --runs (default 3; --runs-d for (d), which is slow). Exits 0 whatever the numbers are (a report).

    python bench/issue29.py --bbr PATH --bbsim PATH --services FILE [--before DIR] [--only a,b,d] [--runs 3]

BBSim binds legacy ports on every interface: run it in a private network namespace
(`unshare -n sh -c 'ip link set lo up; python bench/issue29.py ...'`).
"""
from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

import bbr
import omci_seq
from startup import REPO


def load() -> str:
    with open("/proc/loadavg") as f:
        return "load " + " ".join(f.read().split()[:3])


def med(runs: list[dict], key: str) -> float:
    return statistics.median(r[key] for r in runs)


def verdict(ratio: float, limit: float) -> str:
    return f"{ratio:.2f} (<= {limit:g}: {'PASS' if ratio <= limit else 'FAIL'})"


def target_a(args) -> None:
    results: dict[tuple[str, int], list[dict]] = {}
    for run in range(args.runs):
        for count in (1, 64):
            for simulator in ("oltsim", "bbsim"):
                ns = argparse.Namespace(simulator=simulator, uni=4, engine="native", checkout=REPO, rounds=3,
                                        timeout=300.0, settle=0.5, bbsim=args.bbsim, services=args.services)
                try:
                    r = omci_seq.measure_started(ns, count)
                except Exception as exc:  # noqa: BLE001  a failed run is reported and skipped
                    print(f"(a) run {run + 1} {simulator} {count} ONUs failed: {exc!r}", flush=True)
                    continue
                results.setdefault((simulator, count), []).append(r)
                print(f"(a) run {run + 1} {simulator:<7}{count:>3} ONUs: {r['exchanges']} exchanges, CPU "
                      f"{r['cpu_us']:.0f} us/x, median {r['median_us']:.0f} us, p90 {r['p90_us']:.0f} us  "
                      f"[{load()}]", flush=True)
    for count in (1, 64):
        ours, theirs = results.get(("oltsim", count)), results.get(("bbsim", count))
        if not ours or not theirs:
            print(f"(a) {count} ONUs: incomplete")
            continue
        print(f"(a) {count:>2} ONUs medians: oltsim {med(ours, 'cpu_us'):.0f} us/x, {med(ours, 'median_us'):.0f} us "
              f"| BBSim {med(theirs, 'cpu_us'):.0f} us/x, {med(theirs, 'median_us'):.0f} us | CPU ratio "
              f"{verdict(med(ours, 'cpu_us') / med(theirs, 'cpu_us'), 0.8)}, RTT ratio "
              f"{verdict(med(ours, 'median_us') / med(theirs, 'median_us'), 0.9)}  ({len(ours)}/{len(theirs)} runs)")


def bbr_args(args, uni: int, checkout: Path) -> argparse.Namespace:
    return argparse.Namespace(bbr=args.bbr, bbsim=args.bbsim, services=args.services, uni=uni, engine="auto",
                              timeout=args.timeout, checkout=checkout)


def target_b(args) -> None:
    results: dict[str, list[dict]] = {}
    for run in range(args.runs):
        for simulator in ("oltsim", "bbsim"):
            try:
                r = bbr.measure(simulator, bbr_args(args, 4, REPO), 16, 32)
            except Exception as exc:  # noqa: BLE001
                print(f"(b) run {run + 1} {simulator} failed: {exc}", flush=True)
                continue
            results.setdefault(simulator, []).append(r)
            print(f"(b) run {run + 1} {simulator:<7} bbr {r['seconds']:.2f} s, sim CPU {r['sim_cpu']:.2f} s, bbr CPU "
                  f"{r['bbr_cpu']:.2f} s  [{load()}]", flush=True)
    ours, theirs = results.get("oltsim"), results.get("bbsim")
    if ours and theirs:
        print(f"(b) 16x32 medians: oltsim bbr {med(ours, 'seconds'):.2f} s, CPU {med(ours, 'sim_cpu'):.2f} s | BBSim "
              f"bbr {med(theirs, 'seconds'):.2f} s, CPU {med(theirs, 'sim_cpu'):.2f} s | sim CPU ratio "
              f"{verdict(med(ours, 'sim_cpu') / med(theirs, 'sim_cpu'), 0.9)}, bbr wall ratio "
              f"{verdict(med(ours, 'seconds') / med(theirs, 'seconds'), 1.0)}  ({len(ours)}/{len(theirs)} runs)")


def target_d(args) -> None:
    results: dict[str, list[dict]] = {}
    for run in range(args.runs_d):
        for name, checkout in (("HEAD", REPO), ("before", args.before)):
            try:
                r = bbr.measure("oltsim", bbr_args(args, 1, checkout), 16, 128)
            except Exception as exc:  # noqa: BLE001
                print(f"(d) run {run + 1} {name} failed: {exc}", flush=True)
                continue
            results.setdefault(name, []).append(r)
            print(f"(d) run {run + 1} oltsim {name:<7} bbr {r['seconds']:.2f} s, sim CPU {r['sim_cpu']:.2f} s, bbr "
                  f"CPU {r['bbr_cpu']:.2f} s  [{load()}]", flush=True)
    ours, theirs = results.get("HEAD"), results.get("before")
    if ours and theirs:
        print(f"(d) 16x128 uni 1 medians: HEAD bbr {med(ours, 'seconds'):.2f} s, CPU {med(ours, 'sim_cpu'):.2f} s | "
              f"{args.before.name} bbr {med(theirs, 'seconds'):.2f} s, CPU {med(theirs, 'sim_cpu'):.2f} s | CPU ratio "
              f"{verdict(med(ours, 'sim_cpu') / med(theirs, 'sim_cpu'), 0.85)}  ({len(ours)}/{len(theirs)} runs)")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bbr", required=True)
    parser.add_argument("--bbsim", required=True)
    parser.add_argument("--services", required=True, help="BBSim's configs/att-services.yaml")
    parser.add_argument("--before", type=Path, help="a checkout of the commit before (for (d))")
    parser.add_argument("--only", default="a,b,d")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--runs-d", type=int, default=3)
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds one bbr run may take")
    args = parser.parse_args(argv)
    parts = set(args.only.split(","))
    if "d" in parts and not args.before:
        parser.error("(d) needs --before DIR")
    print(f"issue 29 targets, python {sys.version.split()[0]}; start: {load()}", flush=True)
    for part, run in (("a", target_a), ("b", target_b), ("d", target_d)):
        if part in parts:
            run(args)
            print(f"end of ({part}): {load()}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
