#!/usr/bin/env python3
"""BBSim's own `bbr` load client against oltsim, and optionally against BBSim itself, on this machine.

`bbr` (and `bbsim`) are Go programs of the public opencord/bbsim repository; this script never builds or fetches
them: pass the binaries you built with --bbr (and --bbsim). For each PONxONU size it starts the simulator on
loopback, runs `bbr -pon P -onu O -uni U -delay 0` against it, checks that bbr ended with its "N ONUs matching
expected state" for every ONU (BBR computes N as services / 4), and prints the medians of --runs runs: the duration bbr reports (its first call to the
last DHCP Ack), the simulator's CPU seconds meanwhile and bbr's own CPU seconds (both share the machine's cores).
With --bbsim, for each size both simulators are printed side by side with oltsim/BBSim ratios and the targets on
this machine: simulator CPU no more than BBSim's (ratio <= 1.0), bbr's wall time no more than against
BBSim (<= 1.0), and bbr's own CPU within 20 % of its CPU against BBSim (<= 1.2: more would mean oltsim sends it
more, or costlier, messages). Exits 0 whatever the numbers are (a report); a run that fails is reported and
skipped; 1 if no run of any size succeeded.

    python bench/bbr.py --bbr PATH [--bbsim PATH] [--services FILE] [--sizes 2x32,16x32] [--uni 4] [--runs 3]
                        [--engine auto|native|grpcio] [--checkout DIR]

Both programs read configs/att-services.yaml from their working directory; --services names that file (default:
configs/att-services.yaml beside the directory holding --bbr, as in a checkout where bin/bbr was built). Each run
gets a fresh temporary working directory holding only that file, so nothing is written into the checkout.

BBSim binds its legacy API ports (50072, 50073) and DMI/SADIS ones on all interfaces whatever it is told; run
the comparison on a machine where those ports are free.
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bringup import cpu_seconds

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))
from tests.support.daemon import Daemon, free_ports, terminate  # noqa: E402

_DURATION = re.compile(r'BBR done!" Duration=([0-9.]+)(ms|s|m[0-9.]+s)')


def parse_duration(line_text: str) -> float | None:
    """Seconds from bbr's closing 'BBR done!' log line (Go durations: 812ms, 7.9s, 1m16.08s)."""
    found = _DURATION.search(line_text)
    if not found:
        return None
    value, unit = found.groups()
    if unit == "ms":
        return float(value) / 1000.0
    if unit == "s":
        return float(value)
    return float(value) * 60.0 + float(unit[1:-1])


def workdir(services: str) -> tempfile.TemporaryDirectory:
    """A temporary working directory with configs/att-services.yaml (and no configs/bbsim.yaml: defaults)."""
    work = tempfile.TemporaryDirectory()
    os.mkdir(os.path.join(work.name, "configs"))
    shutil.copyfile(services, os.path.join(work.name, "configs", "att-services.yaml"))
    return work


def run_bbr(bbr: str, services: str, pon: int, onu: int, uni: int, openolt: int, api: int, timeout: float) -> dict:
    """One bbr run against simulator ports; its duration and CPU seconds, or RuntimeError saying what went wrong."""
    with workdir(services) as work:
        started = time.perf_counter()
        process = subprocess.Popen(
            [bbr, "-pon", str(pon), "-onu", str(onu), "-uni", str(uni), "-delay", "0", "-bbsimIp", "127.0.0.1",
             "-bbsimPort", str(openolt), "-bbsimApiPort", str(api), "-logLevel", "info"],
            cwd=work, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        try:
            output, _ = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.communicate()
            raise RuntimeError(f"bbr did not finish within {timeout:g} s") from None
    text = output.decode("utf-8", "replace")
    children = os.times()   # bbr is reaped: its CPU is in the children's times (the caller subtracts the earlier)
    # BBR counts its matching services and divides by 4 (it assumes 4 UNIs, one service each): with --uni 1 a
    # complete 2048-ONU run says "512 ONUs matching".
    expected = f"{pon * onu * uni // 4} ONUs matching expected state"
    if process.returncode != 0 or expected not in text:
        tail = "\n".join(text.splitlines()[-5:])
        raise RuntimeError(f"bbr exited {process.returncode} without '{expected}':\n{tail}")
    return {"seconds": parse_duration(text) or time.perf_counter() - started,
            "bbr_cpu": children.children_user + children.children_system}


class BBSimProcess:
    """BBSim itself on loopback ports (its legacy and DMI listeners bind where it decides)."""

    def __init__(self, binary: str, services: str, pon: int, onu: int, uni: int):
        self.ports = dict(zip(("openolt", "api", "rest", "dmi"), free_ports(4)))
        self.command = [binary, "-pon", str(pon), "-onu", str(onu), "-uni", str(uni), "-delay", "0",
                        "-logLevel", "warn",
                        "-openolt_address", f"127.0.0.1:{self.ports['openolt']}",
                        "-api_address", f"127.0.0.1:{self.ports['api']}",
                        "-rest_api_address", f"127.0.0.1:{self.ports['rest']}",
                        "-dmi_server_address", f"127.0.0.1:{self.ports['dmi']}"]
        self.work = workdir(services)
        self.process: subprocess.Popen | None = None

    def __enter__(self):
        self.process = subprocess.Popen(self.command, cwd=self.work.name, stdout=subprocess.DEVNULL,
                                        stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 300   # BBSim builds its whole model first: ~40 s for 2048 ONUs here
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"bbsim exited with {self.process.returncode}")
            try:
                # its OpenOLT server starts after the API one, a moment later or (on a loaded machine) seconds later
                for port in (self.ports["api"], self.ports["openolt"]):
                    socket.create_connection(("127.0.0.1", port), timeout=1).close()
                time.sleep(0.5)
                return self
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("bbsim did not listen within 300 s")

    def __exit__(self, *exc):
        terminate(self.process)
        self.work.cleanup()


def measure(simulator: str, args, pon: int, onu: int) -> dict:
    before = os.times()
    if simulator == "oltsim":
        with Daemon("--pon", str(pon), "--onu", str(onu), "--uni", str(args.uni), "--delay", "0",
                    "--grpc-engine", args.engine, repo=getattr(args, "checkout", REPO)) as daemon:
            daemon.start()
            cpu_before = cpu_seconds(daemon.process.pid)
            result = run_bbr(args.bbr, args.services, pon, onu, args.uni, daemon.ports["openolt"], daemon.ports["grpc-v1"], args.timeout)
            result["sim_cpu"] = cpu_seconds(daemon.process.pid) - cpu_before
    else:
        with BBSimProcess(args.bbsim, args.services, pon, onu, args.uni) as bbsim:
            cpu_before = cpu_seconds(bbsim.process.pid)
            result = run_bbr(args.bbr, args.services, pon, onu, args.uni, bbsim.ports["openolt"], bbsim.ports["api"], args.timeout)
            result["sim_cpu"] = cpu_seconds(bbsim.process.pid) - cpu_before
    result["bbr_cpu"] -= before.children_user + before.children_system
    return result


def check_programs(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Refuse (parser.error) a --bbr or --bbsim that is not executable; default --services to
    configs/att-services.yaml beside the directory holding --bbr, and refuse it if it is missing."""
    for path in filter(None, (args.bbr, args.bbsim)):
        if not os.access(path, os.X_OK):
            parser.error(f"{path} is not an executable file")
    if args.services is None:
        args.services = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(args.bbr))), "configs",
                                     "att-services.yaml")
    if not os.path.isfile(args.services):
        parser.error(f"no services file {args.services}: give --services")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bbr", required=True, help="path of a bbr binary built from opencord/bbsim")
    parser.add_argument("--bbsim", help="path of a bbsim binary, to run the same sizes against BBSim too")
    parser.add_argument("--services", help="BBSim's att-services.yaml (default: configs/ beside bbr's bin/)")
    parser.add_argument("--sizes", default="2x32,16x32", help="PONxONU sizes (default %(default)s)")
    parser.add_argument("--uni", type=int, default=4,
                        help="UNIs per ONU, on both sides (default 4; BBSim's C-tags, from 900, run out past "
                             "about 790 ONUs with 4: use 1 for 2048 ONUs)")
    parser.add_argument("--runs", type=int, default=3, help="runs per size and simulator; medians (default 3)")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds one bbr run may take")
    parser.add_argument("--engine", default="auto", choices=("auto", "native", "grpcio"),
                        help="oltsim's --grpc-engine (default auto: native on these tcp: endpoints)")
    parser.add_argument("--checkout", type=Path, default=REPO,
                        help="start oltsim from this checkout (default: the one holding this program), e.g. a "
                             "`git worktree` of an older commit")
    args = parser.parse_args(argv)
    check_programs(parser, args)
    simulators = ["oltsim"] + (["bbsim"] if args.bbsim else [])
    rows = []
    for size in [s.strip() for s in args.sizes.split(",") if s.strip()]:
        pon, onu = (int(n) for n in size.split("x"))
        for simulator in simulators:
            runs = []
            for _ in range(max(1, args.runs)):
                try:
                    runs.append(measure(simulator, args, pon, onu))
                except RuntimeError as exc:
                    print(f"{simulator} {size}: run failed: {exc}", file=sys.stderr)
            if runs:
                rows.append((simulator, size, pon * onu, len(runs),
                             {k: statistics.median(r[k] for r in runs) for k in runs[0]}))
    print(f"bbr -delay 0 against each simulator, {args.uni} UNIs per ONU, median of {args.runs} runs "
          f"(python {sys.version.split()[0]}, {os.cpu_count()} CPUs, oltsim engine {args.engine})")
    header = (f"{'simulator':<14}{'PONxONU':<9}{'ONUs':>6}{'runs':>5}{'bbr s':>9}{'ms/ONU':>8}{'sim CPU s':>11}"
              f"{'bbr CPU s':>11}")
    print(header)
    print("-" * len(header))
    by_size: dict[str, dict[str, dict]] = {}
    for simulator, size, onus, count, m in rows:
        by_size.setdefault(size, {})[simulator] = m
        print(f"{simulator:<14}{size:<9}{onus:>6}{count:>5}{m['seconds']:>9.2f}{m['seconds'] / onus * 1000:>8.1f}"
              f"{m['sim_cpu']:>11.2f}{m['bbr_cpu']:>11.2f}")
    compared = [(size, sims["oltsim"], sims["bbsim"]) for size, sims in by_size.items() if len(sims) == 2]
    if compared:
        # The targets: oltsim costs no more simulator CPU than BBSim, bbr finishes no later, and bbr itself
        # works no more than 20 % harder against oltsim (it would if oltsim sent it more, or costlier, messages).
        print()
        print(f"{'oltsim/bbsim':<14}{'PONxONU':<9}{'sim CPU':>10}{'bbr wall':>10}{'bbr CPU':>10}   targets")
        for size, ours, theirs in compared:
            ratios = [ours[key] / theirs[key] if theirs[key] else float("inf")
                      for key in ("sim_cpu", "seconds", "bbr_cpu")]
            verdicts = [f"{name} {'PASS' if ratio <= limit else 'FAIL'}" for name, ratio, limit in
                        zip(("sim CPU <= 1.0", "bbr wall <= 1.0", "bbr CPU <= 1.2"), ratios, (1.0, 1.0, 1.2))]
            print(f"{'':<14}{size:<9}{ratios[0]:>10.2f}{ratios[1]:>10.2f}{ratios[2]:>10.2f}   {', '.join(verdicts)}")
    return 0 if rows else 1


if __name__ == "__main__":
    sys.exit(main())
