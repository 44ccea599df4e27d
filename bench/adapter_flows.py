#!/usr/bin/env python3
"""FlowAdd round trips while ONUs come up, as VOLTHA's openolt adapter sends them (issue 29, target (c)).

One adapter connection (grpc.aio) to the OpenOLT port: GetDeviceInfo, EnableIndication, the NNI's LLDP trap flow,
then one sequential worker (an asyncio task) per discovered ONU, all running at once. Each worker does what the
openolt and openonu adapters do for its ONU while it comes up: ActivateOnu, waits for its OnuInd up, MIB reset, MIB
upload and every upload-next the upload response announces, one OMCI request outstanding (the answer is the
omci_ind on the indication stream with the same transaction id and message type), then the TT workflow's 9 flows
for UNI 0, one FlowAdd at a time, each sent when the previous one was answered:

    hsia  upstream, downstream                      (TP 64)
    voip  DHCP trap (upstream), upstream, downstream (TP 65, p-bit 7)
    vod   DHCP trap (upstream), upstream, downstream (TP 66, p-bit 5)
    vod   IGMP trap (upstream)                       (TP 66)

shaped as the adapter builds them (flow ids unique on the OLT, UNI port number pon<<12 | onu<<4 | uni, an alloc id
and a GEM port per technology profile that no other ONU of the PON uses: BBSim rejects a flow whose alloc id or
GEM port another ONU's flow holds). So one ONU's FlowAdds are interleaved with the other ONUs' OMCI and flows.

Every FlowAdd round trip is recorded (call to answer, on the client). Per run: the median and p90 FlowAdd round
trip, the median OMCI round trip, the simulator's CPU seconds (utime + stime from /proc/<pid>/stat, from the
connection to the last worker's end), the wall time and the failed calls (any call that did not answer OK; 0
expected). Sizes (default 2x16 and 4x16, PONs x ONUs, 4 UNIs, delay 0, TT services on both simulators) are run
--runs times (default 3), each run on a fresh simulator, oltsim and BBSim alternating; the table shows medians of
the runs, then issue 29's target: oltsim's median and p90 FlowAdd round trip <= BBSim's (PASS/FAIL).

    python bench/adapter_flows.py [--sizes 2x16,4x16] [--runs 3] [--checkout DIR]
                                  [--bbsim PATH [--services tt-services.yaml]]

BBSim binds legacy ports on every interface: run it in a private network namespace
(`unshare -n sh -c 'ip link set lo up; python bench/adapter_flows.py --bbsim ...'`). Exits 0 whatever the numbers
are (a report); 1 if no run succeeded.
"""
from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
from pathlib import Path

from bringup import cpu_seconds
from startup import REPO, Daemon

sys.path.insert(0, str(REPO))
import grpc  # noqa: E402
from voltha_protos import openolt_pb2, openolt_pb2_grpc  # noqa: E402

from oltsim.omci import codec  # noqa: E402

CALL_TIMEOUT = 10.0
RESET = codec.AR | codec.MIB_RESET
UPLOAD = codec.AR | codec.MIB_UPLOAD
UPLOAD_NEXT = codec.AR | codec.MIB_UPLOAD_NEXT

# TT services (BBSim's configs/tt-services.yaml, oltsim's built-in "tt"): (name, c_tag, s_tag, p-bit, TP id)
HSIA_S_TAG, VOIP, VOD = 900, (444, 333, 7, 65), (55, 555, 5, 66)
TPS = (64, 65, 66)
GEMS_PER_TP = 8
ALLOC_BASE, GEM_BASE = 1024, 1024


def load() -> str:
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def percentile(ordered: list[float], pct: float) -> float:
    """Nearest-rank percentile of an ascending list."""
    index = max(0, min(len(ordered) - 1, -(-len(ordered) * pct // 100) - 1))
    return ordered[int(index)]


def uni_port_no(pon: int, onu_id: int, uni: int = 0) -> int:
    return (pon << 12) | (onu_id << 4) | uni


def tt_flows(pon: int, onu_id: int, c_tag: int) -> list[openolt_pb2.Flow]:
    """The 9 flows VOLTHA's openolt adapter sends for a TT subscriber on UNI 0 of ONU `onu_id`."""
    slot = onu_id - 1                               # ids unique per ONU on its PON

    def ids(tp: int, pbit: int = 0) -> dict:
        index = slot * len(TPS) + TPS.index(tp)
        return {"alloc_id": ALLOC_BASE + index, "gemport_id": GEM_BASE + index * GEMS_PER_TP + pbit,
                "tech_profile_id": tp}

    base_id = ((pon << 8) | onu_id) << 4
    common = {"access_intf_id": pon, "onu_id": onu_id, "uni_id": 0, "network_intf_id": 0,
              "port_no": uni_port_no(pon, onu_id)}
    flows: list[openolt_pb2.Flow] = []

    def add(flow_type: str, classifier: dict, action: dict, tp: int, pbit: int = 0, priority: int = 1000,
            symmetric: int = 0) -> int:
        flow_id = base_id + len(flows) + 1
        flows.append(openolt_pb2.Flow(
            flow_id=flow_id, flow_type=flow_type, symmetric_flow_id=symmetric,
            classifier=openolt_pb2.Classifier(**classifier), action=openolt_pb2.Action(**action),
            priority=priority, cookie=(0x1F0000000000 | flow_id), **common, **ids(tp, pbit)))
        return flow_id

    trap = {"cmd": openolt_pb2.ActionCmd(trap_to_host=True)}
    # hsia: the ONU tags with the C-tag; the OLT pushes the S-tag upstream and pops it downstream
    up = add("upstream", {"o_vid": c_tag, "pkt_tag_type": "single_tag"},
             {"cmd": openolt_pb2.ActionCmd(add_outer_tag=True), "o_vid": HSIA_S_TAG}, 64)
    add("downstream", {"o_vid": HSIA_S_TAG, "i_vid": c_tag, "pkt_tag_type": "double_tag"},
        {"cmd": openolt_pb2.ActionCmd(remove_outer_tag=True)}, 64, symmetric=up)
    for c, s, pbit, tp in (VOIP, VOD):
        add("upstream", {"eth_type": 0x0800, "ip_proto": 17, "src_port": 68, "dst_port": 67, "o_vid": c,
                         "o_pbits": pbit, "pkt_tag_type": "single_tag"}, trap, tp, pbit, priority=10000)
        up = add("upstream", {"o_vid": c, "o_pbits": pbit, "pkt_tag_type": "single_tag"},
                 {"cmd": openolt_pb2.ActionCmd(add_outer_tag=True), "o_vid": s, "o_pbits": pbit}, tp, pbit)
        add("downstream", {"o_vid": s, "i_vid": c, "o_pbits": pbit, "pkt_tag_type": "double_tag"},
            {"cmd": openolt_pb2.ActionCmd(remove_outer_tag=True)}, tp, pbit, symmetric=up)
    add("upstream", {"eth_type": 0x0800, "ip_proto": 2, "o_vid": VOD[0], "o_pbits": VOD[2],
                     "pkt_tag_type": "single_tag"}, trap, 66, VOD[2], priority=10000)
    return flows


def lldp_trap() -> openolt_pb2.Flow:
    """The NNI's LLDP trap flow, sent once per OLT when the adapter connects (no ONU: ids -1)."""
    return openolt_pb2.Flow(access_intf_id=-1, onu_id=-1, uni_id=-1, flow_id=1, flow_type="downstream",
                            network_intf_id=0, alloc_id=-1, gemport_id=-1, port_no=1048576, priority=1000,
                            cookie=0x10000, classifier=openolt_pb2.Classifier(eth_type=0x88CC),
                            action=openolt_pb2.Action(cmd=openolt_pb2.ActionCmd(trap_to_host=True)))


class Onu:
    __slots__ = ("pon", "onu_id", "sn", "up", "tid", "awaited", "answer")

    def __init__(self, pon: int, onu_id: int, sn):
        self.pon, self.onu_id, self.sn = pon, onu_id, sn
        self.up = asyncio.Event()
        self.tid = 0
        self.awaited = 0
        self.answer: asyncio.Future | None = None


class Adapter:
    """One adapter connection and one worker per ONU; FlowAdd and OMCI round trips, failed calls."""

    def __init__(self, address: str, wanted: int, timeout: float, together: bool = True):
        self.address = address
        #: every ONU's OMCI starts once all are up (the same concurrency on any simulator), or as each comes up
        self.together = together
        self.all_up: asyncio.Event | None = None
        self.ups: list[float] = []
        self.channel = self.stub = None             # made in run(), on the loop that uses them
        self.wanted, self.timeout = wanted, timeout
        self.onus: dict[tuple[int, int], Onu] = {}
        self.serials: set[bytes] = set()
        self.next_id: dict[int, int] = {}
        self.workers: list[asyncio.Task] = []
        self.flow_rtts: list[float] = []
        self.omci_rtts: list[float] = []
        self.failed = 0
        self.errors: list[str] = []
        self.c_tag = 900                            # hsia's C-tag, unique per subscriber (from 900)

    def fail(self, what: str, exc: BaseException) -> None:
        self.failed += 1
        if len(self.errors) < 5:
            detail = f"{exc.code()}: {exc.details()}" if isinstance(exc, grpc.aio.AioRpcError) else repr(exc)
            self.errors.append(f"{what}: {detail}")

    async def read(self, stream) -> None:
        async for indication in stream:
            name = indication.WhichOneof("data")
            if name == "omci_ind":
                ind = indication.omci_ind
                onu = self.onus.get((ind.intf_id, ind.onu_id))
                pkt = bytes(ind.pkt)
                if (onu is not None and onu.answer is not None and not onu.answer.done() and len(pkt) >= 10
                        and int.from_bytes(pkt[0:2], "big") == onu.tid and pkt[2] == onu.awaited):
                    onu.answer.set_result(pkt)
            elif name == "onu_disc_ind":
                self.discovered(indication.onu_disc_ind)
            elif name == "onu_ind":
                ind = indication.onu_ind
                onu = self.onus.get((ind.intf_id, ind.onu_id))
                if onu is not None and ind.oper_state == "up":
                    onu.up.set()

    def discovered(self, disc) -> None:
        serial = bytes(disc.serial_number.vendor_id) + bytes(disc.serial_number.vendor_specific)
        if len(self.serials) >= self.wanted or serial in self.serials:
            return
        self.serials.add(serial)
        onu_id = self.next_id.get(disc.intf_id, 0) + 1
        self.next_id[disc.intf_id] = onu_id
        onu = self.onus[(disc.intf_id, onu_id)] = Onu(disc.intf_id, onu_id, disc.serial_number)
        self.c_tag += 1
        self.workers.append(asyncio.get_running_loop().create_task(self.worker(onu, self.c_tag)))

    async def omci(self, onu: Onu, message_type: int, contents: bytes = b"") -> bytes:
        onu.tid = onu.tid % 0x7FFF + 1
        onu.awaited = (message_type & ~codec.AR) | codec.AK
        onu.answer = asyncio.get_running_loop().create_future()
        pkt = codec.encode(onu.tid, message_type, codec.ONU_DATA, 0, contents).hex().encode("ascii")
        sent = time.perf_counter()
        await self.stub.OmciMsgOut(openolt_pb2.OmciMsg(intf_id=onu.pon, onu_id=onu.onu_id, pkt=pkt),
                                   timeout=CALL_TIMEOUT)
        answer = await asyncio.wait_for(onu.answer, CALL_TIMEOUT)
        self.omci_rtts.append(time.perf_counter() - sent)
        return answer

    async def worker(self, onu: Onu, c_tag: int) -> None:
        step = "ActivateOnu"
        try:
            await self.stub.ActivateOnu(openolt_pb2.Onu(intf_id=onu.pon, onu_id=onu.onu_id, serial_number=onu.sn,
                                                        pir=1000000), timeout=CALL_TIMEOUT)
            step = "OnuInd up"
            await asyncio.wait_for(onu.up.wait(), self.timeout)
            self.ups.append(time.perf_counter())
            if len(self.ups) == self.wanted:
                self.all_up.set()
            if self.together:
                step = "every ONU up"
                await asyncio.wait_for(self.all_up.wait(), self.timeout)
            step = "MIB reset"
            await self.omci(onu, RESET)
            step = "MIB upload"
            commands = int.from_bytes((await self.omci(onu, UPLOAD))[8:10], "big")
            step = "MIB upload-next"
            for seq in range(commands):
                await self.omci(onu, UPLOAD_NEXT, seq.to_bytes(2, "big"))
            for flow in tt_flows(onu.pon, onu.onu_id, c_tag):
                step = f"FlowAdd {flow.flow_id}"
                sent = time.perf_counter()
                try:
                    await self.stub.FlowAdd(flow, timeout=CALL_TIMEOUT)
                except grpc.aio.AioRpcError as exc:
                    self.fail(f"ONU {onu.pon}/{onu.onu_id} {step}", exc)
                    continue
                self.flow_rtts.append(time.perf_counter() - sent)
        except (grpc.aio.AioRpcError, asyncio.TimeoutError) as exc:
            self.fail(f"ONU {onu.pon}/{onu.onu_id} {step}", exc)

    async def run(self) -> float:
        self.channel = grpc.aio.insecure_channel(self.address)
        self.stub = openolt_pb2_grpc.OpenoltStub(self.channel)
        await asyncio.wait_for(self.channel.channel_ready(), 30)
        self.all_up = asyncio.Event()
        begin = self.begin = time.perf_counter()
        await self.stub.GetDeviceInfo(openolt_pb2.Empty(), timeout=CALL_TIMEOUT)
        stream = self.stub.EnableIndication(openolt_pb2.Empty())
        reader = asyncio.get_running_loop().create_task(self.read(stream))
        try:
            await self.stub.FlowAdd(lldp_trap(), timeout=CALL_TIMEOUT)
        except grpc.aio.AioRpcError as exc:
            self.fail("FlowAdd LLDP trap", exc)
        deadline = time.monotonic() + self.timeout
        while len(self.workers) < self.wanted and time.monotonic() < deadline and not reader.done():
            await asyncio.sleep(0.01)
        if len(self.workers) < self.wanted:
            raise RuntimeError(f"{len(self.workers)} of {self.wanted} ONUs discovered within {self.timeout:g} s")
        await asyncio.wait_for(asyncio.gather(*self.workers), self.timeout)
        wall = time.perf_counter() - begin
        stream.cancel()
        reader.cancel()
        await self.channel.close()
        return wall


def session(address: str, pid: int, onus: int, timeout: float, together: bool = True) -> dict:
    adapter = Adapter(address, onus, timeout, together)
    cpu_before = cpu_seconds(pid)

    async def main():
        return await adapter.run()

    wall = asyncio.run(main())
    cpu = cpu_seconds(pid) - cpu_before
    flows = sorted(adapter.flow_rtts)
    omci = sorted(adapter.omci_rtts)
    if not flows:
        raise RuntimeError(f"no FlowAdd answered; {adapter.failed} failed calls: {adapter.errors}")
    return {"flows": len(flows), "failed": adapter.failed, "errors": adapter.errors, "cpu": cpu, "wall": wall,
            "median_ms": percentile(flows, 50) * 1e3, "p90_ms": percentile(flows, 90) * 1e3,
            "omci_ms": percentile(omci, 50) * 1e3 if omci else float("nan"), "exchanges": len(omci),
            "up_ms": (max(adapter.ups) - min(adapter.ups)) * 1e3 if adapter.ups else float("nan")}


def measure(simulator: str, args, pon: int, onu: int) -> dict:
    if simulator == "bbsim":
        from bbr import BBSimProcess
        with BBSimProcess(args.bbsim, args.services, pon, onu, args.uni) as bbsim:
            return session(f"127.0.0.1:{bbsim.ports['openolt']}", bbsim.process.pid, pon * onu, args.timeout,
                           args.start == "together")
    with Daemon("--pon", str(pon), "--onu", str(onu), "--uni", str(args.uni), "--delay", "0", "--services", "tt",
                repo=args.checkout) as daemon:
        daemon.start()
        return session(f"127.0.0.1:{daemon.ports['openolt']}", daemon.process.pid, pon * onu, args.timeout,
                       args.start == "together")


KEYS = ("flows", "failed", "exchanges", "cpu", "wall", "median_ms", "p90_ms", "omci_ms")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="2x16,4x16", help="PONxONU sizes (default %(default)s)")
    parser.add_argument("--runs", type=int, default=3, help="runs per size and simulator; medians (default 3)")
    parser.add_argument("--start", choices=("together", "as-up"), default="together",
                        help="together (default): every ONU's OMCI and flows start once all ONUs are up, so both "
                             "simulators see the same concurrency; as-up: each ONU starts when it is up (BBSim brings "
                             "one up about every 100 ms, oltsim all at once: far fewer overlap on BBSim)")
    parser.add_argument("--uni", type=int, default=4, help="UNIs per ONU (default 4)")
    parser.add_argument("--checkout", type=Path, default=REPO, help="start oltsim from this checkout")
    parser.add_argument("--bbsim", help="a bbsim binary: measure BBSim too, started fresh per run")
    parser.add_argument("--services", help="BBSim's tt-services.yaml (default: configs/ beside the directory "
                                           "holding --bbsim)")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds a run may take")
    args = parser.parse_args(argv)
    if args.bbsim:
        if not os.access(args.bbsim, os.X_OK):
            parser.error(f"{args.bbsim} is not an executable file")
        if args.services is None:
            args.services = str(Path(args.bbsim).resolve().parents[1] / "configs" / "tt-services.yaml")
        if not os.path.isfile(args.services):
            parser.error(f"no services file {args.services}: give --services")
    simulators = ["oltsim"] + (["bbsim"] if args.bbsim else [])
    sizes = [tuple(int(n) for n in s.split("x")) for s in args.sizes.split(",") if s.strip()]
    print(f"adapter flows: activate, MIB reset + upload (one OMCI outstanding), then TT's 9 FlowAdds one at a "
          f"time, one worker per ONU, all at once; {args.uni} UNIs, TT services (python {sys.version.split()[0]}, "
          f"{os.cpu_count()} CPUs, load {load()})", flush=True)
    results: dict[tuple[str, str], list[dict]] = {}
    for pon, onu in sizes:
        size = f"{pon}x{onu}"
        for run in range(args.runs):
            for simulator in simulators:
                try:
                    r = measure(simulator, args, pon, onu)
                except Exception as exc:  # noqa: BLE001  a failed run is reported and skipped
                    print(f"{simulator} {size} run {run + 1}: failed: {exc!r}", file=sys.stderr, flush=True)
                    continue
                results.setdefault((simulator, size), []).append(r)
                print(f"  {simulator:<7}{size:<6}run {run + 1}: FlowAdd median {r['median_ms']:.2f} ms, p90 "
                      f"{r['p90_ms']:.2f} ms, {r['flows']} flows, {r['failed']} failed, OMCI median "
                      f"{r['omci_ms']:.2f} ms, sim CPU {r['cpu']:.2f} s, wall {r['wall']:.2f} s, ONUs up over "
                      f"{r['up_ms']:.0f} ms  [load {load()}]",
                      flush=True)
                for error in r["errors"]:
                    print(f"    failed: {error}", flush=True)
    header = (f"{'simulator':<10}{'size':<6}{'runs':>5}{'FlowAdds':>9}{'failed':>7}{'median ms':>10}{'p90 ms':>8}"
              f"{'OMCI ms':>9}{'sim CPU s':>10}{'wall s':>8}")
    print(header)
    print("-" * len(header))
    table: dict[tuple[str, str], dict] = {}
    for (simulator, size), runs in results.items():
        m = table[(simulator, size)] = {k: statistics.median(r[k] for r in runs) for k in KEYS}
        print(f"{simulator:<10}{size:<6}{len(runs):>5}{m['flows']:>9.0f}{m['failed']:>7.0f}{m['median_ms']:>10.2f}"
              f"{m['p90_ms']:>8.2f}{m['omci_ms']:>9.2f}{m['cpu']:>10.2f}{m['wall']:>8.2f}")
    if args.bbsim:
        print()
        print("issue 29 (c): oltsim's median and p90 FlowAdd round trip <= BBSim's")
        for pon, onu in sizes:
            size = f"{pon}x{onu}"
            ours, theirs = table.get(("oltsim", size)), table.get(("bbsim", size))
            if not ours or not theirs:
                print(f"  {size}: incomplete")
                continue
            verdicts = []
            for key in ("median_ms", "p90_ms"):
                ratio = ours[key] / theirs[key]
                verdicts.append(f"{key[:-3]} {ratio:.2f}x {'PASS' if ratio <= 1.0 else 'FAIL'}")
            print(f"  {size}: {', '.join(verdicts)}; sim CPU {ours['cpu'] / theirs['cpu']:.2f}x")
    return 0 if results else 1


if __name__ == "__main__":
    sys.exit(main())
