#!/usr/bin/env python3
"""Scenario runner CPU benchmark: what playing the library's heaviest scenario adds to a bring-up.

The heaviest file for the runner is docs/scenarios/flaky-omci.yaml: it power-cycles every ONU that is up, and its
two knobs (OMCI answers delayed with jitter, OMCI answered 8 in 10) sit on the OMCI path of 10 % of the ONUs each
for 20 s, so that the runner's own work runs per OMCI message of those ONUs while they are brought up again; the
other files make a handful of model calls. Each run starts `twistd -n oltsim --adapter builtin` with 16x32 ONUs of
4 UNIs (discovery delay 0; as bench/startup.py does, on loopback ports), waits until the built-in adapter has every
ONU up (`builtin-adapter-all-ready`), lets it settle, then reads the daemon's CPU time (utime + stime from
/proc/<pid>/stat) over a fixed `--window` in one of two ways, on a fresh daemon each:

- **by hand**: the same power cycle over REST (`DELETE /v1/olt/onus` at the file's power-cut time,
  `POST /v1/olt/onus` at its end), so the same 512 ONUs are brought up again, without the runner;
- **runner**: `POST /v1/scenario` with the file at the window's start, its knobs set to no effect (delay 0, rate
  10, no mute, fraction 0: the knob is set and cleared on its targets but changes no answer), so the difference
  with `by hand` is the runner's own work: parsing, its agenda on the reactor clock, the seeded choice of targets,
  the actions and their undo, the step events;
- **faults**: the file as written, so the difference also holds what the faults cost the simulator (OMCI
  requests sent again by the adapter, answers released one at a time instead of in batches).

The runner's added CPU is median(runner) - median(by hand) over `--runs` of each, as a percentage of
median(by hand) (the bring-up's own CPU). Target: under 5 %. The faults' cost is printed beside it
(no target: it is the simulated trouble). Every run must end with every ONU up again within the window (else the
run is reported and skipped). It is a report, not a test: exits 0 whatever it measures.

    python bench/scenario_cpu.py [--runs 3] [--window 40] [--pon 16] [--onu 32] [--uni 4] [--scenario FILE]
"""
from __future__ import annotations

import argparse
import http.client
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import yaml

from bringup import cpu_seconds

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))
from oltsim.scenario import schema  # noqa: E402
from tests.support.daemon import Daemon  # noqa: E402

SCENARIO = REPO / "docs" / "scenarios" / "flaky-omci.yaml"
TARGET_PERCENT = 5.0
ALL_READY = b"builtin-adapter-all-ready"
DONE = ("eap_response_success_received", "dhcp_ack_received")


class LabDaemon(Daemon):
    """bench/startup.py's daemon with its log in a file opened for appending, so that it can be read while the
    daemon writes (the shared temporary file's offset would move under the daemon's writes)."""

    def __init__(self, *arguments: str):
        super().__init__(*arguments)
        self.log.close()
        handle, name = tempfile.mkstemp(prefix="oltsim-scenario-cpu-", suffix=".log")
        os.close(handle)
        self.log_path = Path(name)
        self.log = open(self.log_path, "ab")

    def text(self) -> bytes:
        return self.log_path.read_bytes()

    def request(self, method: str, path: str, body: bytes | None = None) -> tuple[int, dict]:
        connection = http.client.HTTPConnection("127.0.0.1", self.ports["rest-v1"], timeout=30)
        try:
            connection.request(method, path, body=body)
            response = connection.getresponse()
            return response.status, json.loads(response.read() or b"null")
        finally:
            connection.close()

    def stop(self) -> None:
        super().stop()
        self.log_path.unlink(missing_ok=True)


def wait_ready(daemon: LabDaemon, timeout: float) -> None:
    """Until the built-in adapter logs that every ONU is up (bounded; its per-ONU lines are summarised in bursts)."""
    deadline = time.monotonic() + timeout
    while ALL_READY not in daemon.text():
        if daemon.process.poll() is not None:
            raise RuntimeError(f"oltsim exited with {daemon.process.returncode}")
        if time.monotonic() > deadline:
            raise RuntimeError(f"the ONUs were not all up within {timeout:g} s")
        time.sleep(0.2)


def not_up(daemon: LabDaemon) -> int:
    """ONUs with a service not through EAPOL and DHCP, from GET /v1/olt/onus (read after the window)."""
    status, body = daemon.request("GET", "/v1/olt/onus")
    if status != 200:
        raise RuntimeError(f"GET /v1/olt/onus answered {status}")
    return sum(1 for onu in body["items"]
               if not all((s["EapolState"], s["DhcpState"]) == DONE
                          for uni in onu.get("unis", ()) for s in uni.get("services", ())))


def power_cycle(scenario: schema.Scenario) -> tuple[float, float]:
    """(start, end) in seconds of the file's power cut of every ONU that is up: what the `by hand` run does."""
    for step in scenario.steps:
        if step.action == "onu-power-off" and not step.after and step.times == 1:
            return step.at, step.at + step.duration
    raise SystemExit(f"{scenario.source} has no single power cut to reproduce by hand")


NEUTRAL = {"omci-delay": {"delay": "0ms", "jitter": "0ms"}, "omci-rate": {"rate": 10}, "omci-mute": None,
           "packet-drop": {"fraction": 0}}


def neutral(text: str) -> str:
    """The scenario with every knob set to no effect (omci-mute, which has no neutral setting, becomes a rate of
    10); its other steps as written."""
    raw = yaml.safe_load(text)
    for step in raw["steps"]:
        action = step.get("action")
        if action == "omci-mute":
            step["action"] = "omci-rate"
            step["rate"] = 10
        elif action in NEUTRAL:
            step.update(NEUTRAL[action])
    return yaml.safe_dump(raw, sort_keys=False)


def measure(text: str | None, cut: tuple[float, float], args) -> dict:
    """One fresh daemon, brought up, then one window with the scenario `text` or, without one, with the same power
    cycle by hand."""
    with_scenario = text is not None
    onus = args.pon * args.onu
    with LabDaemon("--adapter", "builtin", "--pon", str(args.pon), "--onu", str(args.onu), "--uni", str(args.uni),
                   "--delay", "0") as daemon:
        daemon.start()
        wait_ready(daemon, args.timeout)
        time.sleep(args.settle)
        pid = daemon.process.pid
        begin, cpu = time.monotonic(), cpu_seconds(pid)
        if with_scenario:
            status, body = daemon.request("POST", "/v1/scenario", text.encode())
            if status != 200:
                raise RuntimeError(f"POST /v1/scenario answered {status}: {body}")
        else:
            for at, method in ((cut[0], "DELETE"), (cut[1], "POST")):
                time.sleep(max(0.0, begin + at - time.monotonic()))
                status, body = daemon.request(method, "/v1/olt/onus")
                if status != 200:
                    raise RuntimeError(f"{method} /v1/olt/onus answered {status}: {body}")
        time.sleep(max(0.0, begin + args.window - time.monotonic()))
        used = cpu_seconds(pid) - cpu
        elapsed = time.monotonic() - begin
        late = not_up(daemon)
        if late:
            raise RuntimeError(f"{late} of {onus} ONUs not up again at the end of the {args.window:g} s window; "
                               "give a longer --window")
        state = daemon.request("GET", "/v1/scenario")[1].get("state") if with_scenario else "-"
        if with_scenario and state != "done":
            raise RuntimeError(f"the scenario is {state} at the end of the window; give a longer --window")
        return {"cpu": used, "elapsed": elapsed}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="runs of each variant; medians (default 3)")
    parser.add_argument("--window", type=float, default=40.0,
                        help="seconds of the CPU window from the power cut's scenario start (default 40)")
    parser.add_argument("--pon", type=int, default=16)
    parser.add_argument("--onu", type=int, default=32)
    parser.add_argument("--uni", type=int, default=4)
    parser.add_argument("--settle", type=float, default=2.0, help="seconds after the bring-up (default 2)")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds the first bring-up may take")
    parser.add_argument("--scenario", type=Path, default=SCENARIO,
                        help="the scenario file (default docs/scenarios/flaky-omci.yaml; it needs one power cut "
                             "of every ONU up, which the `by hand` run makes over REST)")
    args = parser.parse_args(argv)
    text = args.scenario.read_text()
    cut = power_cycle(schema.parse(text, str(args.scenario)))

    variants = {"by hand": None, "runner": neutral(text), "faults": text}
    results: dict[str, list[dict]] = {name: [] for name in variants}
    for _ in range(max(1, args.runs)):
        for name, scenario in variants.items():
            try:
                results[name].append(measure(scenario, cut, args))
            except (RuntimeError, OSError) as exc:
                print(f"{name}: run failed: {exc}", file=sys.stderr)

    onus = args.pon * args.onu
    print(f"oltsim CPU over a {args.window:g} s window: {args.scenario.name} against the same power cycle by hand, "
          f"{args.pon}x{args.onu} = {onus} ONUs ({args.uni} UNIs), built-in adapter, delay 0 "
          f"(python {sys.version.split()[0]}, {os.cpu_count()} CPUs)")
    header = f"{'run':<10}{'runs':>5}{'CPU s (median)':>16}{'min':>8}{'max':>8}"
    print(header)
    print("-" * len(header))
    medians = {}
    for name in variants:
        cpus = [r["cpu"] for r in results[name]]
        if cpus:
            medians[name] = statistics.median(cpus)
            print(f"{name:<10}{len(cpus):>5}{medians[name]:>16.2f}{min(cpus):>8.2f}{max(cpus):>8.2f}")
    base = medians.get("by hand")
    if base and "runner" in medians:
        added = (medians["runner"] - base) / base * 100
        verdict = "PASS" if added < TARGET_PERCENT else "FAIL"
        print(f"runner's added CPU: {medians['runner'] - base:+.2f} s = {added:+.1f} % of the bring-up's own "
              f"(target < {TARGET_PERCENT:g} %): {verdict}")
    else:
        print("runner's added CPU: not measured (a run failed)")
    if base and "faults" in medians:
        print(f"with its faults in effect: {medians['faults'] - base:+.2f} s = "
              f"{(medians['faults'] - base) / base * 100:+.1f} % (the simulated trouble; no target)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
