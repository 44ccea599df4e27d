#!/usr/bin/env python3
"""Sequential OMCI, as VOLTHA's openonu adapter sends it: CPU per exchange and round trips.

A client connects to the OpenOLT port as an adapter does (GetDeviceInfo, EnableIndication, ActivateOnu for each
OnuDiscInd, then waits for the OnuInd up of every ONU it activated) and then, for each ONU count of --onus
(default 1 and 64), runs MIB reset, MIB upload and every MIB upload-next the upload response announces (227 at
4 UNIs), --rounds times (default 3), on every ONU at once but with exactly one request outstanding per ONU: the
next OmciMsgOut of an ONU goes out only when the answer to its previous one came back on the indication stream
(omci_ind, matched by transaction id and message type). OmciMsgOut carries hex text, as VOLTHA sends it.

It prints, as medians of --runs runs: the exchanges (request out, answer in), the simulator's CPU per exchange
(utime + stime of its process from /proc/<pid>/stat, before and after the rounds, in 10 ms clock ticks), the round
trip from just before OmciMsgOut to the omci_ind read off the stream (median, p90, p99, all exchanges of a run),
and this client's own CPU per exchange (it shares the machine's CPUs with the simulator). Then the targets:
simulator CPU per exchange at most 0.5x BBSim's and median round trip at most BBSim's. BBSim's figures come from
the same run when one is given (--bbsim PATH starts BBSim 1.16.8 per run, as bench/bbr.py does; --target with
--pid measures one already running), else BBSim's recorded figures for one ONU (262 us CPU per exchange, 420 us
median; docs/performance-history.md).

Without --target, every run starts a fresh simulator with 1 PON and that many ONUs (4 UNIs, delay 0): oltsim from
this checkout (or from --checkout DIR, e.g. a `git worktree` of an older commit) on free 127.0.0.1 ports, stopped
with SIGTERM afterwards. With --target, one connection serves every count and run: the simulator must not have
had an adapter yet and must have at least max(--onus) ONUs on its PONs (the first ones discovered are used).
oltsim from the checkout is measured beside --target, as beside --bbsim, unless --name oltsim says the target is
one. Exits 0 whatever the numbers are (a report, not a test); 1 if no run succeeded.

    python bench/omci_seq.py [--onus 1,64] [--rounds 3] [--runs 3] [--engine native|grpcio] [--checkout DIR]
                             [--bbsim PATH [--services FILE]] [--target HOST:PORT --pid PID [--name bbsim]]
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import threading
import time
from pathlib import Path

from bringup import cpu_seconds

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))
import grpc  # noqa: E402
from voltha_protos import openolt_pb2, openolt_pb2_grpc  # noqa: E402

from oltsim.omci import codec  # noqa: E402
from tests.support.daemon import Daemon  # noqa: E402

#: BBSim 1.16.8's figures for one ONU on a 2-core machine (docs/performance-history.md), the reference when no BBSim
#: is measured.
RECORDED_BBSIM = {1: {"cpu_us": 262.0, "median_us": 420.0}}
CPU_RATIO_TARGET = 0.5          # simulator CPU per exchange, oltsim / BBSim
RTT_RATIO_TARGET = 1.0          # median round trip, oltsim / BBSim
CALL_TIMEOUT = 10.0

RESET = codec.AR | codec.MIB_RESET
UPLOAD = codec.AR | codec.MIB_UPLOAD
UPLOAD_NEXT = codec.AR | codec.MIB_UPLOAD_NEXT


class Onu:
    """One activated ONU and where its sequence stands: the request outstanding, its tid and send time."""

    __slots__ = ("pon", "onu_id", "serial", "up", "tid", "awaited", "sent", "commands", "seq", "round")

    def __init__(self, pon: int, onu_id: int, serial: bytes):
        self.pon, self.onu_id, self.serial = pon, onu_id, serial
        self.up = False
        self.tid = 0
        self.awaited = 0            # the message type (with AK) of the answer awaited; 0 when idle
        self.sent = 0.0
        self.commands = 0           # upload-next requests the upload response announced
        self.seq = 0
        self.round = 0


class Session:
    """One adapter connection to an OpenOLT endpoint: activation, then measured phases of sequential OMCI."""

    def __init__(self, address: str, onus: int, timeout: float):
        self.channel = grpc.insecure_channel(address)
        self.stub = openolt_pb2_grpc.OpenoltStub(self.channel)
        self.wanted = onus
        self.timeout = timeout
        self.onus: dict[tuple[int, int], Onu] = {}
        self.next_id: dict[int, int] = {}
        self.failure: str | None = None
        self.all_up = threading.Event()
        self.phase_done = threading.Event()
        self.active: list[Onu] = []
        self.rounds = 0
        self.remaining = 0
        self.rtts: list[float] = []
        self.lock = threading.Lock()
        self.call = None
        self.reader: threading.Thread | None = None

    # ---- connection and activation -------------------------------------------------------------------

    def connect(self) -> None:
        """GetDeviceInfo, EnableIndication, and activate the first `wanted` ONUs discovered; wait until up."""
        grpc.channel_ready_future(self.channel).result(timeout=30)
        self.stub.GetDeviceInfo(openolt_pb2.Empty(), timeout=CALL_TIMEOUT)
        self.call = self.stub.EnableIndication(openolt_pb2.Empty())
        self.reader = threading.Thread(target=self._read, name="omci-seq-indications", daemon=True)
        self.reader.start()
        if not self.all_up.wait(self.timeout) or self.failure:
            raise RuntimeError(self.failure or f"{sum(o.up for o in self.onus.values())} of {self.wanted} ONUs "
                                                f"up within {self.timeout:g} s")

    def close(self) -> None:
        self.phase_done.set()
        if self.call is not None:
            self.call.cancel()
        if self.reader is not None:
            self.reader.join(CALL_TIMEOUT)
        self.channel.close()

    def _fail(self, message: str) -> None:
        with self.lock:
            if self.failure is None:
                self.failure = message
        self.all_up.set()
        self.phase_done.set()

    def _read(self) -> None:
        try:
            for indication in self.call:
                name = indication.WhichOneof("data")
                if name == "omci_ind":
                    self._on_omci(indication.omci_ind)
                elif name == "onu_disc_ind":
                    self._on_discovery(indication.onu_disc_ind)
                elif name == "onu_ind":
                    self._on_onu_ind(indication.onu_ind)
        except grpc.RpcError as exc:
            if not self.phase_done.is_set() or self.active:
                self._fail(f"the indication stream ended: {exc.code()}: {exc.details()}")
        except Exception as exc:  # a bug here must end the run, not leave it waiting for its timeout
            self._fail(f"reading indications: {exc!r}")

    def _on_discovery(self, disc) -> None:
        if len(self.onus) >= self.wanted:
            return                          # more ONUs than measured: leave them be
        pon = disc.intf_id
        serial = bytes(disc.serial_number.vendor_id) + bytes(disc.serial_number.vendor_specific)
        if any(o.serial == serial for o in self.onus.values()):
            return
        onu_id = self.next_id.get(pon, 0) + 1
        self.next_id[pon] = onu_id
        self.onus[(pon, onu_id)] = Onu(pon, onu_id, serial)
        self._unary("ActivateOnu", self.stub.ActivateOnu,
                    openolt_pb2.Onu(intf_id=pon, onu_id=onu_id, serial_number=disc.serial_number, pir=1000000))

    def _on_onu_ind(self, ind) -> None:
        onu = self.onus.get((ind.intf_id, ind.onu_id))
        if onu is not None and ind.oper_state == "up":
            onu.up = True
            if len(self.onus) == self.wanted and all(o.up for o in self.onus.values()):
                self.all_up.set()

    def _unary(self, what: str, method, request) -> None:
        def done(future):
            error = future.exception()
            if error is not None:
                code = error.code() if isinstance(error, grpc.Call) else None
                self._fail(f"{what} failed: {code}: {error.details() if code else error!r}")
        method.future(request, timeout=CALL_TIMEOUT).add_done_callback(done)

    # ---- the measured phase --------------------------------------------------------------------------

    def _send(self, onu: Onu, message_type: int, contents: bytes = b"") -> None:
        onu.tid = onu.tid % 0x7FFF + 1
        onu.awaited = (message_type & ~codec.AR) | codec.AK
        pkt = codec.encode(onu.tid, message_type, codec.ONU_DATA, 0, contents).hex().encode("ascii")
        onu.sent = time.perf_counter()
        self._unary("OmciMsgOut", self.stub.OmciMsgOut,
                    openolt_pb2.OmciMsg(intf_id=onu.pon, onu_id=onu.onu_id, pkt=pkt))

    def _on_omci(self, ind) -> None:
        now = time.perf_counter()
        onu = self.onus.get((ind.intf_id, ind.onu_id))
        pkt = bytes(ind.pkt)
        if onu is None or not onu.awaited or len(pkt) < 10:
            return                          # not ours, or unsolicited (an alarm notification)
        if int.from_bytes(pkt[0:2], "big") != onu.tid or pkt[2] != onu.awaited:
            if pkt[2] & codec.ACTION_MASK in (codec.ALARM_NOTIFICATION, codec.ATTRIBUTE_VALUE_CHANGE):
                return
            self._fail(f"ONU {onu.pon}/{onu.onu_id}: answer tid {int.from_bytes(pkt[0:2], 'big')} type "
                       f"0x{pkt[2]:02x}, awaiting tid {onu.tid} type 0x{onu.awaited:02x}")
            return
        self.rtts.append(now - onu.sent)
        action = pkt[2] & codec.ACTION_MASK
        if action == codec.MIB_RESET:
            if pkt[8] != codec.SUCCESS:
                self._fail(f"MIB reset of ONU {onu.pon}/{onu.onu_id} answered result {pkt[8]}")
                return
            self._send(onu, UPLOAD)
        elif action == codec.MIB_UPLOAD:
            onu.commands = int.from_bytes(pkt[8:10], "big")
            onu.seq = 0
            self._next(onu)
        else:
            onu.seq += 1
            self._next(onu)

    def _next(self, onu: Onu) -> None:
        """The next upload-next, or the next round's MIB reset, or this ONU is done."""
        if onu.seq < onu.commands:
            self._send(onu, UPLOAD_NEXT, onu.seq.to_bytes(2, "big"))
            return
        onu.round += 1
        if onu.round < self.rounds:
            self._send(onu, RESET)
            return
        onu.awaited = 0
        with self.lock:
            self.remaining -= 1
            if self.remaining == 0:
                self.phase_done.set()

    def phase(self, count: int, rounds: int, pid: int) -> dict:
        """`rounds` rounds of reset, upload, upload-next on the first `count` ONUs, one request outstanding
        each; the simulator's CPU (process `pid`) and this client's over them, and every round trip."""
        active = list(self.onus.values())[:count]
        for onu in active:
            onu.round, onu.awaited = 0, 0
        self.rtts = []
        self.rounds = rounds
        self.remaining = len(active)
        self.phase_done.clear()
        self.active = active
        cpu_before, client_before, begin = cpu_seconds(pid), time.process_time(), time.perf_counter()
        for onu in active:
            self._send(onu, RESET)
        finished = self.phase_done.wait(self.timeout)
        wall = time.perf_counter() - begin
        cpu, client = cpu_seconds(pid) - cpu_before, time.process_time() - client_before
        self.active = []
        if self.failure:
            raise RuntimeError(self.failure)
        if not finished:
            raise RuntimeError(f"{self.remaining} of {count} ONUs unfinished after {self.timeout:g} s")
        exchanges = len(self.rtts)
        rtts = sorted(self.rtts)
        return {"exchanges": exchanges, "commands": active[0].commands, "cpu_us": cpu / exchanges * 1e6,
                "client_us": client / exchanges * 1e6, "wall": wall,
                "median_us": percentile(rtts, 50) * 1e6, "p90_us": percentile(rtts, 90) * 1e6,
                "p99_us": percentile(rtts, 99) * 1e6}


def percentile(ordered: list[float], pct: float) -> float:
    """Nearest-rank percentile of an ascending list."""
    index = max(0, min(len(ordered) - 1, -(-len(ordered) * pct // 100) - 1))
    return ordered[int(index)]


def run_session(address: str, pid: int, counts: list[int], rounds: int, repeat: int, timeout: float,
                settle: float) -> dict[int, list[dict]]:
    """One connection: activate max(counts) ONUs, then each count `repeat` times; count -> results."""
    session = Session(address, max(counts), timeout)
    try:
        session.connect()
        time.sleep(settle)              # let activation's own traffic pass before the CPU is read
        results: dict[int, list[dict]] = {}
        for _ in range(repeat):
            for count in counts:
                results.setdefault(count, []).append(session.phase(count, rounds, pid))
        return results
    finally:
        session.close()


def measure_started(args, count: int) -> dict:
    """A fresh simulator (oltsim, or BBSim with --bbsim) with 1 PON and `count` ONUs; one phase."""
    if args.simulator == "bbsim":
        from bbr import BBSimProcess
        with BBSimProcess(args.bbsim, args.services, 1, count, args.uni) as bbsim:
            address = f"127.0.0.1:{bbsim.ports['openolt']}"
            return run_session(address, bbsim.process.pid, [count], args.rounds, 1, args.timeout, args.settle)[count][0]
    with Daemon("--pon", "1", "--onu", str(count), "--uni", str(args.uni), "--delay", "0",
                "--grpc-engine", args.engine, repo=args.checkout) as daemon:
        daemon.start()
        address = f"127.0.0.1:{daemon.ports['openolt']}"
        return run_session(address, daemon.process.pid, [count], args.rounds, 1, args.timeout, args.settle)[count][0]


def sequential(count: int, rounds: int = 3, engine: str = "native", timeout: float = 300.0) -> dict:
    """One run on a fresh oltsim from this checkout with 1 PON and `count` ONUs (4 UNIs): medians' inputs
    (cpu_us, median_us, p90_us, p99_us, exchanges, ...), as bench/run_all reports them."""
    args = argparse.Namespace(simulator="oltsim", uni=4, engine=engine, checkout=REPO, rounds=rounds,
                              timeout=timeout, settle=0.5)
    return measure_started(args, count)


def collect(args, counts: list[int]) -> dict[int, list[dict]]:
    """Every run of every count on the running --target, over one connection; {} when it failed."""
    try:
        return run_session(args.target, args.pid, counts, args.rounds, args.runs, args.timeout, args.settle)
    except (RuntimeError, grpc.RpcError, grpc.FutureTimeoutError) as exc:
        print(f"{args.name}: failed: {exc!r}", file=sys.stderr)
        return {}


def collect_started(args, counts: list[int]) -> dict[int, list[dict]]:
    """Every run of every count on a fresh simulator each (args.simulator); failed runs reported and skipped."""
    results: dict[int, list[dict]] = {}
    for count in counts:
        for _ in range(args.runs):
            try:
                results.setdefault(count, []).append(measure_started(args, count))
            except (RuntimeError, grpc.RpcError, grpc.FutureTimeoutError) as exc:
                print(f"{args.simulator} {count} ONUs: run failed: {exc!r}", file=sys.stderr)
    return results


KEYS = ("exchanges", "commands", "cpu_us", "client_us", "median_us", "p90_us", "p99_us", "wall")


def medians(runs: list[dict]) -> dict:
    return {key: statistics.median(r[key] for r in runs) for key in KEYS}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--onus", default="1,64", help="ONU counts, each a phase (default %(default)s)")
    parser.add_argument("--rounds", type=int, default=3, help="MIB reset+upload rounds per ONU (default 3)")
    parser.add_argument("--runs", type=int, default=3, help="runs per count; medians (default 3)")
    parser.add_argument("--uni", type=int, default=4, help="UNIs per ONU of a started simulator (default 4)")
    parser.add_argument("--engine", default="native", choices=("native", "grpcio"),
                        help="oltsim's --grpc-engine (default native)")
    parser.add_argument("--checkout", type=Path, default=REPO,
                        help="start oltsim from this checkout (default: the one holding this program)")
    parser.add_argument("--bbsim", help="a bbsim binary: measure BBSim too, started fresh per run")
    parser.add_argument("--services", help="BBSim's att-services.yaml for --bbsim (default: configs/ beside "
                                           "the directory holding --bbsim)")
    parser.add_argument("--target", help="HOST:PORT of a running simulator's OpenOLT port (fresh, no adapter "
                                         "yet); measured instead of starting oltsim")
    parser.add_argument("--pid", type=int, help="process id of the --target simulator, for its CPU")
    parser.add_argument("--name", default="bbsim", help="what --target is, in the table (default bbsim)")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds activation or one phase may take")
    parser.add_argument("--settle", type=float, default=0.5, help="seconds between activation and the rounds")
    args = parser.parse_args(argv)
    if args.target and not args.pid:
        parser.error("--target needs --pid (the simulator's CPU is read from /proc/<pid>/stat)")
    if args.bbsim and args.target:
        parser.error("give --bbsim or --target, not both")
    if args.bbsim:
        if not os.access(args.bbsim, os.X_OK):
            parser.error(f"{args.bbsim} is not an executable file")
        if args.services is None:
            args.services = str(Path(args.bbsim).resolve().parents[1] / "configs" / "att-services.yaml")
        if not os.path.isfile(args.services):
            parser.error(f"no services file {args.services}: give --services")
    counts = [int(n) for n in args.onus.split(",") if n.strip()]

    table: dict[str, dict[int, tuple[int, dict]]] = {}
    simulators = ["oltsim"] if args.name != "oltsim" or not args.target else []
    simulators += ["bbsim"] if args.bbsim else []
    simulators += [args.name] if args.target else []
    for simulator in simulators:
        args.simulator = simulator
        measured = collect(args, counts) if simulator == args.name and args.target else collect_started(args, counts)
        table[simulator] = {c: (len(r), medians(r)) for c, r in measured.items() if r}

    where = "" if args.checkout == REPO else f", oltsim from {args.checkout.name}"
    print(f"sequential OMCI: MIB reset, upload, every upload-next, x{args.rounds} rounds, one request outstanding "
          f"per ONU; median of {args.runs} runs (python {sys.version.split()[0]}, {os.cpu_count()} CPUs, oltsim "
          f"engine {args.engine}{where})")
    header = (f"{'simulator':<10}{'ONUs':>5}{'runs':>5}{'upl-next':>9}{'exchanges':>10}{'sim CPU us/x':>13}"
              f"{'median us':>10}{'p90 us':>8}{'p99 us':>8}{'client us/x':>12}{'wall s':>8}")
    print(header)
    print("-" * len(header))
    for simulator, rows in table.items():
        for count in sorted(rows):
            runs, m = rows[count]
            print(f"{simulator:<10}{count:>5}{runs:>5}{m['commands']:>9.0f}{m['exchanges']:>10.0f}{m['cpu_us']:>13.0f}"
                  f"{m['median_us']:>10.0f}{m['p90_us']:>8.0f}{m['p99_us']:>8.0f}{m['client_us']:>12.0f}"
                  f"{m['wall']:>8.2f}")

    ours = table.get("oltsim", {})
    if args.target and args.name == "oltsim":
        ours = table.get(args.name, {})
    reference = table.get("bbsim") or (table.get(args.name) if args.target and args.name != "oltsim" else None)
    if ours:
        print()
        print(f"{'oltsim/BBSim':<13}{'ONUs':>5}{'CPU/x':>8}{'median':>8}   targets (CPU <= "
              f"{CPU_RATIO_TARGET:g}, median <= {RTT_RATIO_TARGET:g})")
        for count in sorted(ours):
            m = ours[count][1]
            if reference and count in reference:
                theirs, source = reference[count][1], "BBSim measured in this run"
            elif count in RECORDED_BBSIM:
                recorded = RECORDED_BBSIM[count]
                theirs, source = recorded, f"BBSim as recorded: {recorded['cpu_us']:g} us, {recorded['median_us']:g} us"
            else:
                print(f"{'':<13}{count:>5}   no BBSim reference for {count} ONUs (give --bbsim)")
                continue
            cpu = m["cpu_us"] / theirs["cpu_us"]
            rtt = m["median_us"] / theirs["median_us"]
            print(f"{'':<13}{count:>5}{cpu:>8.2f}{rtt:>8.2f}   CPU {'PASS' if cpu <= CPU_RATIO_TARGET else 'FAIL'}, "
                  f"median {'PASS' if rtt <= RTT_RATIO_TARGET else 'FAIL'} ({source})")
    return 0 if any(table.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
