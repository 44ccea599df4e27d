#!/usr/bin/env python3
"""VOLTHA's recorded session replayed against oltsim and BBSim: simulator CPU, round trips, answers.

The recording (`../shared/workloads/voltha-att-16x32.jsonl.gz` beside the repository, or --recording FILE) holds
every call VOLTHA 2.13's openolt adapter made to BBSim 1.16.8 at 16 PONs x 32 ONUs (ATT workflow) and every
indication BBSim streamed back, as serialized protobuf. This program sends the same request bytes, never
re-encoded, to a fresh simulator with the same numbering (oltsim `--pon 16 --onu 32 --uni 4 --delay 0`, BBSim
`-pon 16 -onu 32 -uni 4 -delay 0`) the way the adapter sent them:

- GetDeviceInfo, then EnableIndication (read for the whole run), then every other call in recorded order (lines
  ordered by their arrival time `t`), on one HTTP/2 connection.
- Calls are grouped per ONU ((intf_id, onu_id); an UplinkPacketOut by the client MAC of the frame it relays) in
  chains: OMCI (`OmciMsgOut`), flows (`FlowAdd`, `FlowRemove`, traffic schedulers and queues), packets
  (`OnuPacketOut`, `UplinkPacketOut`), activation (`ActivateOnu`); calls of no ONU (heartbeats, LLDP, the NNI
  trap flows) form one chain of their own. A call goes out when the previous call of its chain has returned and
  when what its ONU had before it in the recording has come in the replay, counted per kind: discovery
  (`onu_disc_ind`), `onu_ind` up, OMCI answers (`omci_ind` with a non-zero transaction id), packet-ins (`pkt_ind`
  from the PON, and from the NNI for the ONU's client MAC) and the ONU's calls answered (of any chain). So an OMCI
  request waits for the answers to the ones before it, a packet-out for the packet-in it answers, a flow for the
  previous flow call and for the OMCI and EAPOL steps VOLTHA waited for. Every ONU goes on independently of the
  others, all 512 in flight, with one exception the recording imposes: VOLTHA hands an alloc id or GEM port one
  ONU freed to another, so a flow, scheduler or queue call taking an id waits for the flow calls of the ONU that
  held it before, up to that ONU's release, as in the recording. A wait longer than --stall seconds (an
  indication that never comes) lets the call go and is counted as a stall.

Per simulator and run it measures: the simulator's CPU (utime + stime, /proc/<pid>/stat) from just before the
first ActivateOnu to the last call's answer, and per thread (/proc/<pid>/task/*/stat, grouped by thread name); the
round trip of every unary call per method (from the call to its answer) and of every OMCI exchange (OmciMsgOut to
the omci_ind of its transaction id); the calls answered with another status than recorded, and the stalls. It
prints medians of --runs runs (default 3), the machine's load average before and after, and the ratios against
the targets: simulator CPU <= 1.0x BBSim's (stretch 0.8x), FlowAdd median round trip <= BBSim's. Without
--bbsim it runs oltsim alone. Exits 0 whatever it measures (a report, not a test); 1 if no run succeeded.

    python bench/replay.py [--bbsim PATH [--services FILE]] [--runs 3] [--recording FILE] [--stall 10]
                           [--engine auto|native|grpcio] [--checkout DIR] [--daemon-args "..."]
"""
from __future__ import annotations

import argparse
import asyncio
import base64
import gzip
import heapq
import json
import os
import shlex
import statistics
import sys
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from voltha_protos import openolt_pb2, tech_profile_pb2  # noqa: E402

RECORDING = REPO.parent / "shared" / "workloads" / "voltha-att-16x32.jsonl.gz"
PON, ONU, UNI = 16, 32, 4
CPU_TARGET, CPU_STRETCH, FLOWADD_TARGET = 1.0, 0.8, 1.0
SERVICE = "/openolt.Openolt/"

#: The request message of each replayed method, to find the ONU a call belongs to (the bytes go out as recorded).
REQUESTS = {
    "OmciMsgOut": openolt_pb2.OmciMsg, "FlowAdd": openolt_pb2.Flow, "FlowRemove": openolt_pb2.Flow,
    "OnuPacketOut": openolt_pb2.OnuPacket, "UplinkPacketOut": openolt_pb2.UplinkPacket,
    "ActivateOnu": openolt_pb2.Onu,
    "CreateTrafficSchedulers": tech_profile_pb2.TrafficSchedulers,
    "RemoveTrafficSchedulers": tech_profile_pb2.TrafficSchedulers,
    "CreateTrafficQueues": tech_profile_pb2.TrafficQueues,
    "RemoveTrafficQueues": tech_profile_pb2.TrafficQueues,
}
CHAINS = {"OmciMsgOut": "omci", "OnuPacketOut": "pkt", "UplinkPacketOut": "pkt", "ActivateOnu": "act"}
#: Indication kinds counted per ONU, in the order of a call's `needs` tuple.
KINDS = ("disc", "up", "omci", "pkt", "done", "flows")
NO_NEEDS = (0,) * len(KINDS)
DONE = KINDS.index("done")  # the ONU's calls answered before this one arrived (another chain's, too)
FLOWS = KINDS.index("flows")  # the ONU's flow-chain calls answered (another ONU may wait for its ids)
GLOBAL = ("olt",)           # the chain key of calls that belong to no ONU
BROADCAST = b"\xff" * 6


@dataclass
class Call:
    """One recorded call: its method, request bytes, recorded status, and what it waits for in the replay."""

    method: str
    request: bytes
    code: str
    onu: tuple
    chain: str
    needs: tuple = NO_NEEDS     # the ONU's indication counts (KINDS) that preceded it in the recording
    after: tuple = ()           # (other onu key, needs): the ONUs that held an alloc id or GEM port it takes


@dataclass
class Recording:
    """A recorded session split for the replay: the calls before the stream, the chains, and the maps that
    tell which ONU an indication belongs to."""

    setup: list = field(default_factory=list)       # calls before EnableIndication (GetDeviceInfo), in order
    chains: dict = field(default_factory=dict)      # (onu key, chain name) -> [Call] in recorded order
    serials: dict = field(default_factory=dict)     # serial bytes -> onu key (from ActivateOnu)
    macs: dict = field(default_factory=dict)        # client MAC -> onu key (from the PON's packet-ins)
    calls: int = 0
    indications: int = 0


def client_mac(pkt: bytes, macs: dict) -> bytes | None:
    """The MAC of the ONU client a frame is to or from: its destination or source when `macs` knows it, else
    the chaddr of a DHCP message (the relay's frames and the server's broadcast answers), else None."""
    for mac in (pkt[0:6], pkt[6:12]):
        if mac in macs:
            return mac
    offset = 12
    while pkt[offset:offset + 2] in (b"\x81\x00", b"\x88\xa8"):
        offset += 4
    if pkt[offset:offset + 2] != b"\x08\x00" or len(pkt) < offset + 2 + 20:
        return None
    ip = offset + 2
    if pkt[ip + 9] != 17:                       # not UDP
        return None
    bootp = ip + (pkt[ip] & 0x0F) * 4 + 8
    mac = pkt[bootp + 28:bootp + 34]
    return mac if mac in macs else None


def onu_of_indication(ind, serials: dict, macs: dict) -> tuple[tuple | None, str | None]:
    """(onu key, kind) of an indication the replay counts, or (None, None)."""
    name = ind.WhichOneof("data")
    if name == "omci_ind":
        data = ind.omci_ind
        if data.pkt[0:2] == b"\x00\x00":
            return None, None               # an autonomous message (alarm, AVC), answering nothing
        return (data.intf_id, data.onu_id), "omci"
    if name == "pkt_ind":
        data = ind.pkt_ind
        if data.intf_type == "pon":
            return (data.intf_id, data.onu_id), "pkt"
        mac = client_mac(data.pkt, macs)
        return (macs[mac], "pkt") if mac is not None else (None, None)
    if name == "onu_ind":
        data = ind.onu_ind
        return ((data.intf_id, data.onu_id), "up") if data.oper_state == "up" else (None, None)
    if name == "onu_disc_ind":
        serial = ind.onu_disc_ind.serial_number
        key = serials.get(bytes(serial.vendor_id) + bytes(serial.vendor_specific))
        return (key, "disc") if key is not None else (None, None)
    return None, None


def call_onu(method: str, request: bytes, macs: dict) -> tuple:
    """The onu key a call belongs to (GLOBAL when none)."""
    message = REQUESTS.get(method)
    if message is None:
        return GLOBAL
    decoded = message.FromString(request)
    if method in ("FlowAdd", "FlowRemove"):
        key = (decoded.access_intf_id, decoded.onu_id)
    elif method == "UplinkPacketOut":
        mac = client_mac(decoded.pkt, macs)
        return macs[mac] if mac is not None else GLOBAL
    else:
        key = (decoded.intf_id, decoded.onu_id)
    return key if key[1] > 0 and key[0] >= 0 else GLOBAL


def resources(method: str, request: bytes) -> list[tuple]:
    """The (PON, "alloc" or "gem", id) a flow-chain call takes or frees: VOLTHA hands an id an ONU freed to
    another ONU, so the second ONU's call must wait for the first's release, as it did in the recording."""
    decoded = REQUESTS[method].FromString(request)
    taken = []
    if method in ("FlowAdd", "FlowRemove"):
        pon = decoded.access_intf_id
        if decoded.alloc_id > 0:
            taken.append((pon, "alloc", decoded.alloc_id))
        gems = [decoded.gemport_id] + list(decoded.pbit_to_gemport.values())
        taken += [(pon, "gem", gem) for gem in gems if gem > 0]
    elif method.endswith("TrafficSchedulers"):
        taken += [(decoded.intf_id, "alloc", s.alloc_id) for s in decoded.traffic_scheds if s.alloc_id > 0]
    elif method.endswith("TrafficQueues"):
        taken += [(decoded.intf_id, "gem", q.gemport_id) for q in decoded.traffic_queues if q.gemport_id > 0]
    return taken


def parse_recording(lines) -> Recording:
    """A Recording from the recording's JSON objects (any iterable of dicts, in file order)."""
    entries = sorted(lines, key=lambda line: line["t"])      # stable: equal times keep their file order
    recording = Recording()
    indications = []
    for entry in entries:                   # first pass: serials and MACs, wherever they appear
        if entry["m"] == "ActivateOnu" and "req" in entry:
            onu = openolt_pb2.Onu.FromString(base64.b64decode(entry["req"]))
            serial = bytes(onu.serial_number.vendor_id) + bytes(onu.serial_number.vendor_specific)
            recording.serials[serial] = (onu.intf_id, onu.onu_id)
        elif "ind" in entry:
            ind = openolt_pb2.Indication.FromString(base64.b64decode(entry["ind"]))
            indications.append(ind)
            if ind.WhichOneof("data") == "pkt_ind" and ind.pkt_ind.intf_type == "pon":
                data = ind.pkt_ind
                if data.pkt[6:12] != BROADCAST:
                    recording.macs.setdefault(data.pkt[6:12], (data.intf_id, data.onu_id))
    counts: dict[tuple, list[int]] = defaultdict(lambda: [0] * len(KINDS))
    answered: dict[tuple, list[float]] = defaultdict(list)     # (onu key, kind) -> answer times, a heap
    holder: dict[tuple, tuple] = {}         # (PON, "alloc" or "gem", id) -> the ONU that used it last

    def advance(key: tuple, now: float) -> None:
        for kind in (DONE, FLOWS):
            times = answered[(key, kind)]
            while times and times[0] <= now:
                heapq.heappop(times)
                counts[key][kind] += 1

    streaming = False
    indication = iter(indications)
    for entry in entries:
        method = entry["m"]
        if "ind" in entry:
            key, kind = onu_of_indication(next(indication), recording.serials, recording.macs)
            if key is not None:
                counts[key][KINDS.index(kind)] += 1
            recording.indications += 1
            continue
        if method == "EnableIndication":
            streaming = True                # the stream's start (and its end, which has no request)
            continue
        request = base64.b64decode(entry["req"])
        call = Call(method, request, entry.get("code", "OK"), GLOBAL, "olt")
        recording.calls += 1
        if not streaming:
            recording.setup.append(call)
            continue
        call.onu = call_onu(method, request, recording.macs)
        if call.onu != GLOBAL:
            call.chain = CHAINS.get(method, "flow")
            now, end = entry["t"], entry["t"] + entry.get("ms", 0.0)
            advance(call.onu, now)
            call.needs = tuple(counts[call.onu])
            heapq.heappush(answered[(call.onu, DONE)], end)
            if call.chain == "flow":
                after = {}
                for resource in resources(method, request):
                    other = holder.get(resource)
                    if other is not None and other != call.onu and other not in after:
                        advance(other, now)
                        after[other] = (0,) * FLOWS + (counts[other][FLOWS],) + (0,) * (len(KINDS) - FLOWS - 1)
                    holder[resource] = call.onu
                call.after = tuple(after.items())
                heapq.heappush(answered[(call.onu, FLOWS)], end)
        recording.chains.setdefault((call.onu, call.chain), []).append(call)
    return recording


def read_recording(path: Path) -> Recording:
    """The Recording of a gzip JSON-lines recording file."""
    with gzip.open(path, "rt") as lines:
        return parse_recording(json.loads(line) for line in lines if line.strip())


# ---- the replay ----------------------------------------------------------------------------------------


def thread_cpu(pid: int) -> dict[int, tuple[str, float]]:
    """tid -> (thread name, utime + stime seconds) of every thread of a process."""
    ticks = os.sysconf("SC_CLK_TCK")
    threads = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/stat") as stat:
                text = stat.read()
        except OSError:
            continue                        # a thread that ended meanwhile
        name = text[text.index("(") + 1:text.rindex(")")]
        fields = text.rsplit(")", 1)[1].split()
        threads[int(tid)] = (name, (int(fields[11]) + int(fields[12])) / ticks)
    return threads


def process_cpu(pid: int) -> float:
    """User + system CPU seconds of a process so far (threads that ended included)."""
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def thread_delta(before: dict, after: dict) -> dict[str, float]:
    """CPU seconds per thread name between two thread_cpu() readings (threads born meanwhile counted whole)."""
    spent: Counter = Counter()
    for tid, (name, seconds) in after.items():
        spent[name] += seconds - before.get(tid, (name, 0.0))[1]
    return dict(spent)


class Replay:
    """One replay of a Recording on one channel to an OpenOLT address; `run()` returns its measurements."""

    def __init__(self, recording: Recording, address: str, pid: int, stall: float, timeout: float):
        self.recording = recording
        self.address = address
        self.pid = pid
        self.stall = stall
        self.timeout = timeout
        self.counts: dict[tuple, list[int]] = defaultdict(lambda: [0] * len(KINDS))
        self.waiters: dict[tuple, list] = defaultdict(list)
        self.rtts: dict[str, list[float]] = defaultdict(list)
        self.omci_sent: dict[tuple, list[float]] = defaultdict(list)   # (onu, tid) -> send times, oldest first
        self.different: Counter = Counter()
        self.stalls = 0
        self.cpu_start: tuple | None = None
        self.client_start = 0.0
        self.indications = 0

    def _satisfied(self, key: tuple, needs: tuple) -> bool:
        have = self.counts[key]
        return all(h >= n for h, n in zip(have, needs))

    async def _wait(self, key: tuple, needs: tuple) -> None:
        if needs == NO_NEEDS or self._satisfied(key, needs):
            return
        future = asyncio.get_running_loop().create_future()
        self.waiters[key].append((needs, future))
        try:
            await asyncio.wait_for(future, self.stall)
        except asyncio.TimeoutError:
            self.stalls += 1

    def _on_indication(self, ind) -> None:
        self.indications += 1
        key, kind = onu_of_indication(ind, self.recording.serials, self.recording.macs)
        if key is None:
            return
        if kind == "omci":
            sent = self.omci_sent.get((key, ind.omci_ind.pkt[0:2]))
            if sent:                        # VOLTHA reuses a transaction id: the oldest request is answered
                self.rtts["OMCI answer"].append(time.perf_counter() - sent.pop(0))
        self._count(key, KINDS.index(kind))

    def _count(self, key: tuple, kind: int) -> None:
        """One more of `kind` for the ONU `key`: wake the calls that waited for it."""
        self.counts[key][kind] += 1
        waiting = self.waiters.get(key)
        if waiting:
            still = []
            for needs, future in waiting:
                if future.done():
                    continue
                if self._satisfied(key, needs):
                    future.set_result(None)
                else:
                    still.append((needs, future))
            self.waiters[key] = still

    async def _read(self, stream) -> None:
        try:
            async for ind in stream:
                self._on_indication(ind)
        except Exception:                   # cancelled at the end, or the simulator went away: the run says
            pass

    async def _call(self, methods: dict, call: Call) -> None:
        import grpc
        if call.method == "ActivateOnu" and self.cpu_start is None:
            self.cpu_start = (process_cpu(self.pid), thread_cpu(self.pid), time.perf_counter())
            self.client_start = time.process_time()
        if call.method == "OmciMsgOut":
            tid = bytes.fromhex(openolt_pb2.OmciMsg.FromString(call.request).pkt[0:4].decode("ascii"))
            self.omci_sent[(call.onu, tid)].append(time.perf_counter())
        begin = time.perf_counter()
        try:
            await methods[call.method](call.request, timeout=self.timeout)
            code = "OK"
        except grpc.aio.AioRpcError as error:
            code = error.code().name
        self.rtts[call.method].append(time.perf_counter() - begin)
        if code != call.code:
            self.different[(call.method, call.code, code)] += 1
        if call.onu != GLOBAL:
            self._count(call.onu, DONE)
            if call.chain == "flow":
                self._count(call.onu, FLOWS)

    async def _chain(self, methods: dict, calls: list) -> None:
        for call in calls:
            for other, needs in call.after:
                await self._wait(other, needs)
            await self._wait(call.onu, call.needs)
            await self._call(methods, call)

    async def run(self) -> dict:
        import grpc
        async with grpc.aio.insecure_channel(self.address) as channel:
            await asyncio.wait_for(channel.channel_ready(), 30)
            methods = {name: channel.unary_unary(SERVICE + name)
                       for name in {c.method for calls in self.recording.chains.values() for c in calls}
                       | {c.method for c in self.recording.setup}}
            for call in self.recording.setup:
                await self._call(methods, call)
            stream = channel.unary_stream(SERVICE + "EnableIndication",
                                          response_deserializer=openolt_pb2.Indication.FromString)(b"")
            reader = asyncio.ensure_future(self._read(stream))
            begin = time.perf_counter()
            chains = [asyncio.ensure_future(self._chain(methods, calls))
                      for calls in self.recording.chains.values()]
            try:
                await asyncio.wait_for(asyncio.gather(*chains), self.timeout * 10)
            finally:
                cpu_end = (process_cpu(self.pid), thread_cpu(self.pid), time.perf_counter())
                client = time.process_time() - self.client_start
                for chain in chains:
                    chain.cancel()
                await asyncio.gather(*chains, return_exceptions=True)
                stream.cancel()
                reader.cancel()
                await asyncio.gather(reader, return_exceptions=True)
        if self.cpu_start is None:
            raise RuntimeError("no ActivateOnu was sent")
        return {"cpu": cpu_end[0] - self.cpu_start[0], "threads": thread_delta(self.cpu_start[1], cpu_end[1]),
                "wall": cpu_end[2] - self.cpu_start[2], "replay": cpu_end[2] - begin, "client": client,
                "rtts": {m: sorted(v) for m, v in self.rtts.items()}, "different": self.different,
                "stalls": self.stalls, "indications": self.indications,
                "calls": sum(len(v) for m, v in self.rtts.items() if m != "OMCI answer")}


def replay(recording: Recording, address: str, pid: int, stall: float = 60.0, timeout: float = 30.0) -> dict:
    """One replay of `recording` against the OpenOLT port at `address` of process `pid`."""
    return asyncio.run(Replay(recording, address, pid, stall, timeout).run())


# ---- runs and the table --------------------------------------------------------------------------------


def percentile(ordered: list[float], pct: float) -> float:
    """Nearest-rank percentile of an ascending list."""
    if not ordered:
        return float("nan")
    index = max(0, min(len(ordered) - 1, -(-len(ordered) * pct // 100) - 1))
    return ordered[int(index)]


def measure(simulator: str, args, recording: Recording) -> dict:
    """One run on a fresh simulator."""
    try:
        from .bbr import BBSimProcess
    except ImportError:
        from bbr import BBSimProcess
    from tests.support.daemon import Daemon
    if simulator == "bbsim":
        with BBSimProcess(args.bbsim, args.services, PON, ONU, UNI) as bbsim:
            time.sleep(args.settle)
            return replay(recording, f"127.0.0.1:{bbsim.ports['openolt']}", bbsim.process.pid, args.stall)
    with Daemon("--pon", str(PON), "--onu", str(ONU), "--uni", str(UNI), "--delay", "0",
                "--grpc-engine", args.engine, *shlex.split(args.daemon_args), repo=args.checkout) as daemon:
        daemon.start()
        time.sleep(args.settle)
        return replay(recording, f"127.0.0.1:{daemon.ports['openolt']}", daemon.process.pid, args.stall)


def summary(runs: list[dict]) -> dict:
    """Medians over runs of the CPU, the per-thread CPU, and each method's median and p90 round trip."""
    threads: dict[str, list[float]] = defaultdict(list)
    for run in runs:
        for name, seconds in run["threads"].items():
            threads[name].append(seconds)
    methods = sorted({m for run in runs for m in run["rtts"]})
    return {
        "runs": len(runs),
        "cpu": statistics.median(r["cpu"] for r in runs),
        "wall": statistics.median(r["wall"] for r in runs),
        "client": statistics.median(r["client"] for r in runs),
        "calls": statistics.median(r["calls"] for r in runs),
        "stalls": statistics.median(r["stalls"] for r in runs),
        "different": statistics.median(sum(r["different"].values()) for r in runs),
        "different_kinds": sum((r["different"] for r in runs), Counter()),
        "threads": {n: statistics.median(v + [0.0] * (len(runs) - len(v))) for n, v in threads.items()},
        "rtts": {m: (statistics.median(len(r["rtts"].get(m, [])) for r in runs),
                     statistics.median(percentile(r["rtts"].get(m, []), 50) for r in runs) * 1e3,
                     statistics.median(percentile(r["rtts"].get(m, []), 90) for r in runs) * 1e3)
                 for m in methods},
    }


def load() -> str:
    return " ".join(f"{v:.2f}" for v in os.getloadavg())


def print_table(table: dict[str, dict], args) -> None:
    names = list(table)
    print(f"\nrecorded VOLTHA session {args.recording.name}: {PON}x{ONU}x{UNI}, medians of runs "
          f"({', '.join(n + ' ' + str(table[n]['runs']) for n in names)}); python {sys.version.split()[0]}, "
          f"{os.cpu_count()} CPUs")
    row = f"{'':<28}" + "".join(f"{n:>26}" for n in names)
    print(row)
    print("-" * len(row))
    for label, key, fmt in (("simulator CPU s", "cpu", "{:.2f}"), ("wall s (first Activate..)", "wall", "{:.1f}"),
                            ("replay client CPU s", "client", "{:.2f}"),
                            ("calls answered", "calls", "{:.0f}"),
                            ("answered other than recorded", "different", "{:.0f}"),
                            ("stalled waits", "stalls", "{:.0f}")):
        print(f"{label:<28}" + "".join(f"{fmt.format(table[n][key]):>26}" for n in names))
    print("per-thread CPU s (top 6 thread names):")
    for name in names:
        top = sorted(table[name]["threads"].items(), key=lambda item: -item[1])[:6]
        print(f"  {name:<10}" + ", ".join(f"{thread} {seconds:.2f}" for thread, seconds in top))
    print("round trip ms, median / p90 (calls per run):")
    methods = sorted({m for n in names for m in table[n]["rtts"]}, key=lambda m: (m == "OMCI answer", m))
    for method in methods:
        cells = []
        for name in names:
            count, median, p90 = table[name]["rtts"].get(method, (0, float("nan"), float("nan")))
            cells.append(f"{median:7.2f} / {p90:7.2f} ({count:.0f})")
        print(f"  {method:<26}" + "".join(f"{cell:>26}" for cell in cells))
    for name in names:
        for (method, recorded, got), count in sorted(table[name]["different_kinds"].items()):
            print(f"  {name}: {method} recorded {recorded}, answered {got}: {count} (all runs)")
    if "oltsim" in table and "bbsim" in table:
        ours, theirs = table["oltsim"], table["bbsim"]
        cpu = ours["cpu"] / theirs["cpu"]
        flow = ours["rtts"].get("FlowAdd", (0, float("nan"), 0))[1] / theirs["rtts"].get("FlowAdd", (0, 1, 0))[1]
        print(f"\noltsim/BBSim: CPU {cpu:.2f}x (target <= {CPU_TARGET:g}: {'PASS' if cpu <= CPU_TARGET else 'FAIL'}; "
              f"stretch <= {CPU_STRETCH:g}: {'PASS' if cpu <= CPU_STRETCH else 'FAIL'}), FlowAdd median "
              f"{flow:.2f}x (target <= {FLOWADD_TARGET:g}: {'PASS' if flow <= FLOWADD_TARGET else 'FAIL'})")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bbsim", help="a bbsim 1.16.8 binary: replay against BBSim too, alternating runs")
    parser.add_argument("--services", help="BBSim's att-services.yaml for --bbsim (default: configs/ beside the "
                                           "directory holding --bbsim)")
    parser.add_argument("--runs", type=int, default=3, help="runs per simulator; medians (default 3)")
    parser.add_argument("--recording", type=Path, default=RECORDING, help="the recording (default %(default)s)")
    parser.add_argument("--stall", type=float, default=60.0,
                        help="seconds a call waits for its indications before it goes anyway (default 60)")
    parser.add_argument("--settle", type=float, default=1.0, help="seconds between start and the replay")
    parser.add_argument("--engine", default="auto", choices=("auto", "native", "grpcio"),
                        help="oltsim's --grpc-engine (default auto)")
    parser.add_argument("--checkout", type=Path, default=REPO,
                        help="start oltsim from this checkout (default: the one holding this program)")
    parser.add_argument("--daemon-args", default="", help="more oltsim options, one string")
    parser.add_argument("--only", choices=("oltsim", "bbsim"), help="with --bbsim: run one simulator only")
    args = parser.parse_args(argv)
    if args.bbsim:
        if not os.access(args.bbsim, os.X_OK):
            parser.error(f"{args.bbsim} is not an executable file")
        if args.services is None:
            args.services = str(Path(args.bbsim).resolve().parents[1] / "configs" / "att-services.yaml")
        if not os.path.isfile(args.services):
            parser.error(f"no services file {args.services}: give --services")
    if not args.recording.is_file():
        parser.error(f"no recording {args.recording}: give --recording")
    recording = read_recording(args.recording)
    print(f"recording: {recording.calls} calls, {recording.indications} indications, {len(recording.chains)} "
          f"chains; load average {load()}", flush=True)

    simulators = ["oltsim"] + (["bbsim"] if args.bbsim else [])
    if args.only:
        simulators = [args.only]
    results: dict[str, list[dict]] = defaultdict(list)
    for number in range(args.runs):
        for simulator in simulators:           # alternating, so that both see the same machine
            try:
                result = measure(simulator, args, recording)
            except Exception as exc:  # noqa: BLE001 - a failed run is reported and skipped
                print(f"{simulator} run {number + 1}: failed: {exc!r}", file=sys.stderr, flush=True)
                continue
            results[simulator].append(result)
            print(f"{simulator} run {number + 1}: CPU {result['cpu']:.2f} s, wall {result['wall']:.1f} s, "
                  f"{result['calls']} calls, {sum(result['different'].values())} answered other than recorded, "
                  f"{result['stalls']} stalls; load {load()}", flush=True)
    table = {name: summary(runs) for name, runs in results.items() if runs}
    if not table:
        return 1
    print_table(table, args)
    print(f"load average at the end {load()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
