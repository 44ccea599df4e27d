#!/usr/bin/env python3
"""The floor under a sequential call: what one empty unary call costs the server, from the transport alone up to
oltsim (issue 24, item 2: "if the floor is inside pygrpc-native's front, measure it and say so with numbers").

One client sends HeartbeatCheck (an empty request, a 4-byte answer) --calls times, one at a time, after --warmup
calls, and reads the server's CPU (utime + stime from /proc/<pid>/stat) before and after. Servers, each started
fresh per run on a free 127.0.0.1 port:

- ``front-thread``: pygrpc-native's front alone, answered by one Python thread straight from ``recv_batch``: the
  front's own cost per call (HTTP/2 and gRPC framing in Rust, its I/O threads, one hand-off to Python);
- ``front-loop``: the same, with each batch handed to an asyncio loop on another thread by
  ``call_soon_threadsafe``, as oltsim must (the model lives on the reactor thread only): the front plus that hop;
- ``oltsim``: the daemon from this checkout (1 PON, 1 ONU), OpenOLT served by the engine on the port itself (the
  relay that bounded connections there until issue 29 is gone);
- ``bbsim``: BBSim 1.16.8 with --bbsim PATH (its legacy ports bind where it decides: run in a private network
  namespace, ``unshare -n``, with ``ip link set lo up``).

Prints the median over --runs of CPU per call and of each run's median round trip. A report, not a test: exits 0
whatever it measures.

    python bench/grpc_floor.py [--calls 3000] [--runs 3] [--bbsim PATH [--services FILE]]
    python bench/grpc_floor.py --serve thread|loop      # one bare front, prints its port (used by the above)
"""
from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

from bringup import cpu_seconds
from startup import REPO, Daemon

sys.path.insert(0, str(REPO))
import grpc  # noqa: E402
from voltha_protos import openolt_pb2, openolt_pb2_grpc  # noqa: E402

HEARTBEAT = "/openolt.Openolt/HeartbeatCheck"


def serve(mode: str) -> None:
    """A bare pygrpc-native front answering HeartbeatCheck; prints its port, runs until killed."""
    from pygrpc_native import NativeGrpcFront

    front = NativeGrpcFront("127.0.0.1:0", [(HEARTBEAT, False)], io_threads=2)
    front.start()
    answer = openolt_pb2.Heartbeat(heartbeat_signature=1).SerializeToString()
    print(front.bound_port, flush=True)
    if mode == "thread":
        while (batch := front.recv_batch(256)) is not None:
            for _kind, call_id, *_ in batch:
                front.respond(call_id, answer)
        return
    loop = asyncio.new_event_loop()

    def answer_all(batch: list) -> None:
        for _kind, call_id, *_ in batch:
            front.respond(call_id, answer)

    def dispatch() -> None:
        while (batch := front.recv_batch(256)) is not None:
            loop.call_soon_threadsafe(answer_all, batch)

    threading.Thread(target=dispatch, daemon=True).start()
    loop.run_forever()


def calls(address: str, pid: int, count: int, warmup: int) -> dict:
    """`count` sequential HeartbeatChecks: the server's CPU per call and the median round trip, in us."""
    channel = grpc.insecure_channel(address)
    try:
        grpc.channel_ready_future(channel).result(timeout=30)
        stub = openolt_pb2_grpc.OpenoltStub(channel)
        request = openolt_pb2.Empty()
        for _ in range(warmup):
            stub.HeartbeatCheck(request, timeout=10)
        times = []
        before = cpu_seconds(pid)
        for _ in range(count):
            started = time.perf_counter()
            stub.HeartbeatCheck(request, timeout=10)
            times.append(time.perf_counter() - started)
        spent = cpu_seconds(pid) - before
    finally:
        channel.close()
    return {"cpu_us": spent / count * 1e6, "median_us": statistics.median(times) * 1e6}


def run_once(server: str, args) -> dict:
    if server.startswith("front-"):
        process = subprocess.Popen([sys.executable, __file__, "--serve", server[len("front-"):]],
                                   stdout=subprocess.PIPE, text=True)
        try:
            port = int(process.stdout.readline())
            return calls(f"127.0.0.1:{port}", process.pid, args.calls, args.warmup)
        finally:
            process.kill()
            process.wait()
    if server == "bbsim":
        from bbr import BBSimProcess
        with BBSimProcess(args.bbsim, args.services, 1, 1, 4) as bbsim:
            return calls(f"127.0.0.1:{bbsim.ports['openolt']}", bbsim.process.pid, args.calls, args.warmup)
    with Daemon("--pon", "1", "--onu", "1", "--uni", "4", "--delay", "0") as daemon:
        daemon.start()
        return calls(f"127.0.0.1:{daemon.ports['openolt']}", daemon.process.pid, args.calls, args.warmup)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--serve", choices=("thread", "loop"), help=argparse.SUPPRESS)
    parser.add_argument("--calls", type=int, default=3000, help="measured calls per run (default 3000)")
    parser.add_argument("--warmup", type=int, default=200, help="calls before measuring (default 200)")
    parser.add_argument("--runs", type=int, default=3, help="runs per server; medians (default 3)")
    parser.add_argument("--bbsim", help="a bbsim binary: measure BBSim 1.16.8 too")
    parser.add_argument("--services", help="BBSim's att-services.yaml for --bbsim (default: configs/ beside the "
                                           "directory holding --bbsim)")
    args = parser.parse_args(argv)
    if args.serve:
        serve(args.serve)
        return 0
    if args.bbsim:
        if not os.access(args.bbsim, os.X_OK):
            parser.error(f"{args.bbsim} is not an executable file")
        if args.services is None:
            args.services = str(Path(args.bbsim).resolve().parents[1] / "configs" / "att-services.yaml")
    servers = ["front-thread", "front-loop", "oltsim"] + (["bbsim"] if args.bbsim else [])
    print(f"sequential empty unary calls (HeartbeatCheck), {args.calls} per run, median of {args.runs} runs "
          f"(python {sys.version.split()[0]}, {os.cpu_count()} CPUs)")
    print(f"{'server':<14}{'server CPU us/call':>20}{'median round trip us':>24}")
    for server in servers:
        results = []
        for _ in range(args.runs):
            try:
                results.append(run_once(server, args))
            except (RuntimeError, OSError, grpc.RpcError, grpc.FutureTimeoutError) as exc:
                print(f"{server}: run failed: {exc!r}", file=sys.stderr)
        if not results:
            print(f"{server:<14}{'failed':>20}")
            continue
        cpu = statistics.median(r["cpu_us"] for r in results)
        rtt = statistics.median(r["median_us"] for r in results)
        print(f"{server:<14}{cpu:>20.0f}{rtt:>24.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
