#!/usr/bin/env python3
"""Capture: what the capture ring and its readers cost the simulator, against the same run without the
ring (`--capture-size 0`).

Three parts, each on fresh daemons (`twistd -n --pidfile= oltsim` from this checkout, every listener on a free
127.0.0.1 port, as the other bench/ programs start it; stopped with SIGTERM):

- **bbr**: BBSim's own `bbr` load client at `--size` (16x32, 4 UNIs, `-delay 0`, as bench/bbr.py runs it) against
  a daemon with the ring off and with the default ring (every ONU's bring-up: 378,880 records at 16x32 with 4
  UNIs); the simulator's CPU seconds during bbr's
  run. Target: ring on at most +10 % (ratio <= 1.10).
- **live**: the in-repo BBR adapter's bring-up at `--size` (bench/bringup.py's `bring_up`), the ring off, the ring
  on, and the ring on with a live capture of the whole OLT open from before the adapter's first call (REST
  `GET /v1/capture`, no filter, read as fast as it comes by a socket in this process; `--reader grpc`: the same
  through `oltsim.v1.Oltsim/Capture`); the daemon's CPU seconds over the bring-up and the pcapng bytes the reader
  got. Target: live capture at most +25 % over the ring off (ratio <= 1.25).
- **stalled**: `--adapter builtin` at `--size` with the ring on; once every subscriber is up, `--readers` REST
  captures (sockets with a small receive buffer that never read) and as many gRPC ones (raw HTTP/2 streams with a
  `--window`-byte window never credited) open with `since=all` (the whole ring, more than a reader may hold), then
  `--cycles` ONU power cycles over REST (the built-in adapter brings each back: OMCI, EAPOL, DHCP into the ring),
  VmRSS sampled every `--interval` s and a HeartbeatCheck on the OpenOLT port at each sample; the same without the
  readers as the baseline. Then the readers read again, and what they were told is shown (REST: the annotation
  `oltsim dropped N frames`; gRPC: the largest `dropped` of its CaptureChunk messages). Targets: RSS growth over the
  baseline's at most, per stalled reader, the ring's part it asked for (written when its stream opens), STREAM_LIMIT
  (2 MiB) more and 1 MiB of transport buffers; flat after the first 30 s (<= 5 MiB); every heartbeat answered, every
  ONU up again, each reader told.

Each part's runs alternate between its modes (off, on, ...) so that load from elsewhere falls on each alike;
medians of `--runs` (default 3) are printed, with the machine's load average before and after each part (other
work on the machine inflates CPU seconds). Exits 0 whatever it measures (a report, not a test); 1 if a part could
not run at all.

    python bench/capture.py --bbr PATH [--services FILE] [--parts bbr,live,stalled] [--size 16x32] [--runs 3]
"""
from __future__ import annotations

import argparse
import http.client
import json
import os
import socket
import statistics
import sys
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "bench")]

os.environ.setdefault("GRPC_VERBOSITY", "ERROR")
import grpc  # noqa: E402
import h2.events  # noqa: E402
from voltha_protos import openolt_pb2, openolt_pb2_grpc  # noqa: E402

from bbr import check_programs, run_bbr  # noqa: E402
from bringup import bring_up, cpu_seconds  # noqa: E402

from oltsim._proto import oltsim_pb2, oltsim_pb2_grpc  # noqa: E402
from oltsim.capture import STREAM_LIMIT  # noqa: E402
from tests.support import h2raw  # noqa: E402
from tests.support.daemon import Daemon, rss_bytes  # noqa: E402

MIB = 1024 * 1024
BBR_TARGET, LIVE_TARGET = 1.10, 1.25
FLAT_MIB = 5.0


def load() -> str:
    return "load average {:.2f} {:.2f} {:.2f}".format(*os.getloadavg())


def rest(port: int, method: str, path: str, connection: http.client.HTTPConnection | None = None):
    own = connection is None
    connection = connection or http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        connection.request(method, path)
        response = connection.getresponse()
        return response.status, response.read()
    finally:
        if own:
            connection.close()


def capture_request(path: str = "/v1/capture") -> bytes:
    return f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n".encode()


# ---- part 1: bbr ------------------------------------------------------------------------------------------------


def bbr_run(args, ring: bool) -> dict:
    pon, onu = args.pon, args.onu
    before = os.times()
    size = () if ring else ("--capture-size", "0")
    with Daemon("--pon", str(pon), "--onu", str(onu), "--uni", str(args.uni), "--delay", "0", *size) as daemon:
        daemon.start()
        cpu_before = cpu_seconds(daemon.process.pid)
        result = run_bbr(args.bbr, args.services, pon, onu, args.uni, daemon.ports["openolt"],
                         daemon.ports["grpc-v1"], args.timeout)
        result["sim_cpu"] = cpu_seconds(daemon.process.pid) - cpu_before
        result["rss"] = rss_bytes(daemon.process.pid)
    result["bbr_cpu"] -= before.children_user + before.children_system
    return result


def part_bbr(args) -> bool:
    print(f"== bbr {args.size}, {args.uni} UNIs, -delay 0: ring off (--capture-size 0) vs the default ring "
          f"({load()})", flush=True)
    runs: dict[str, list[dict]] = {"off": [], "ring": []}
    for _ in range(args.runs):
        for mode in runs:
            try:
                runs[mode].append(bbr_run(args, mode == "ring"))
            except RuntimeError as exc:
                print(f"  {mode}: run failed: {exc}", file=sys.stderr)
    if not all(runs.values()):
        return False
    print(f"{'mode':<8}{'runs':>5}{'sim CPU s':>11}{'  each':<22}{'bbr s':>8}{'bbr CPU s':>11}{'RSS MiB':>9}")
    medians = {}
    for mode, results in runs.items():
        medians[mode] = m = {k: statistics.median(r[k] for r in results) for k in results[0]}
        each = " ".join(f"{r['sim_cpu']:.2f}" for r in results)
        print(f"{mode:<8}{len(results):>5}{m['sim_cpu']:>11.2f}  {each:<20}{m['seconds']:>8.2f}{m['bbr_cpu']:>11.2f}"
              f"{m['rss'] / MIB:>9.1f}")
    ratio = medians["ring"]["sim_cpu"] / medians["off"]["sim_cpu"]
    print(f"ring/off simulator CPU {ratio:.3f} ({(ratio - 1) * 100:+.1f} %)   target <= {BBR_TARGET:.2f}: "
          f"{'PASS' if ratio <= BBR_TARGET else 'FAIL'}   ({load()})\n", flush=True)
    return True


# ---- part 2: live capture during a bring-up -----------------------------------------------------------------------


class RestCaptureReader(threading.Thread):
    """GET /v1/capture read as fast as it comes; counts bytes until stopped."""

    def __init__(self, port: int, path: str = "/v1/capture"):
        super().__init__(daemon=True)
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        self.sock.sendall(capture_request(path))
        self.sock.settimeout(0.2)
        self.received = 0
        self._halt = threading.Event()

    def run(self) -> None:
        while not self._halt.is_set():
            try:
                data = self.sock.recv(1 << 20)
            except socket.timeout:
                continue
            except OSError:
                return
            if not data:
                return
            self.received += len(data)

    def stop(self) -> int:
        self._halt.set()
        self.join(5)
        self.sock.close()
        return self.received


class GrpcCaptureReader(threading.Thread):
    """oltsim.v1.Oltsim/Capture read as fast as it comes; counts pcapng bytes and the largest `dropped`."""

    def __init__(self, port: int):
        super().__init__(daemon=True)
        self.channel = grpc.insecure_channel(f"127.0.0.1:{port}")
        self.call = oltsim_pb2_grpc.OltsimStub(self.channel).Capture(oltsim_pb2.CaptureRequest())
        self.received = 0
        self.dropped = 0

    def run(self) -> None:
        try:
            for chunk in self.call:
                self.received += len(chunk.data)
                self.dropped = max(self.dropped, chunk.dropped)
        except grpc.RpcError:
            pass

    def stop(self) -> int:
        self.call.cancel()
        self.join(5)
        self.channel.close()
        return self.received


def live_run(args, mode: str) -> dict:
    size = ("--capture-size", "0") if mode == "off" else ()
    with Daemon("--pon", str(args.pon), "--onu", str(args.onu), "--uni", str(args.uni), "--delay", "0",
                *size) as daemon:
        daemon.start()
        reader = None
        if mode == "live":
            reader = (GrpcCaptureReader(daemon.ports["grpc-v1"]) if args.reader == "grpc"
                      else RestCaptureReader(daemon.ports["rest-v1"]))
            reader.start()
            time.sleep(0.2)   # the stream is open before the adapter's first call
        try:
            adapter, seconds, cpu = bring_up(daemon, args.timeout)
            adapter.close()
            time.sleep(0.5)   # the reader takes the last frames
        finally:
            received = reader.stop() if reader is not None else 0
        return {"seconds": seconds, "cpu": cpu, "captured": received, "rss": rss_bytes(daemon.process.pid)}


def part_live(args) -> bool:
    print(f"== bring-up {args.size}, {args.uni} UNIs, delay 0 (the in-repo BBR adapter): ring off, ring on, ring on "
          f"and a live capture of the whole OLT ({args.reader}) ({load()})", flush=True)
    runs: dict[str, list[dict]] = {"off": [], "ring": [], "live": []}
    for _ in range(args.runs):
        for mode in runs:
            try:
                runs[mode].append(live_run(args, mode))
            except (AssertionError, RuntimeError) as exc:
                print(f"  {mode}: run failed: {exc}", file=sys.stderr)
    if not all(runs.values()):
        return False
    print(f"{'mode':<8}{'runs':>5}{'CPU s':>8}{'  each':<22}{'bring-up s':>12}{'captured MiB':>14}{'RSS MiB':>9}")
    medians = {}
    for mode, results in runs.items():
        medians[mode] = m = {k: statistics.median(r[k] for r in results) for k in results[0]}
        each = " ".join(f"{r['cpu']:.2f}" for r in results)
        print(f"{mode:<8}{len(results):>5}{m['cpu']:>8.2f}  {each:<20}{m['seconds']:>12.2f}"
              f"{m['captured'] / MIB:>14.1f}{m['rss'] / MIB:>9.1f}")
    ring = medians["ring"]["cpu"] / medians["off"]["cpu"]
    live = medians["live"]["cpu"] / medians["off"]["cpu"]
    print(f"ring/off CPU {ring:.3f} ({(ring - 1) * 100:+.1f} %)   target <= {BBR_TARGET:.2f}: "
          f"{'PASS' if ring <= BBR_TARGET else 'FAIL'}")
    print(f"live/off CPU {live:.3f} ({(live - 1) * 100:+.1f} %)   target <= {LIVE_TARGET:.2f}: "
          f"{'PASS' if live <= LIVE_TARGET else 'FAIL'}   ({load()})\n", flush=True)
    return True


# ---- part 3: readers that stop reading ----------------------------------------------------------------------------


class KeepingConnection(h2raw.RawConnection):
    """A raw HTTP/2 connection that also keeps the DATA it receives (to decode the CaptureChunk messages)."""

    def __init__(self, *args, **kwargs):
        self.data = bytearray()
        super().__init__(*args, **kwargs)

    def _count(self, event) -> None:
        if isinstance(event, h2.events.DataReceived):
            self.data += event.data
        super()._count(event)


def chunks_of(data: bytes) -> list[oltsim_pb2.CaptureChunk]:
    """The gRPC messages (5-byte prefix each) in a stream's DATA."""
    out, offset = [], 0
    while offset + 5 <= len(data):
        length = int.from_bytes(data[offset + 1:offset + 5], "big")
        if offset + 5 + length > len(data):
            break
        out.append(oltsim_pb2.CaptureChunk.FromString(bytes(data[offset + 5:offset + 5 + length])))
        offset += 5 + length
    return out


def stalled_grpc(port: int, window: int) -> KeepingConnection:
    request = oltsim_pb2.CaptureRequest(since="all").SerializeToString()
    conn = KeepingConnection("127.0.0.1", port, window=window, auto_credit=False)
    conn.open_stream("/oltsim.v1.Oltsim/Capture", h2raw.grpc_frame(request), end_stream=True)
    conn.flush()
    return conn


def stalled_rest(port: int, rcvbuf: int) -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    sock.settimeout(5)
    sock.connect(("127.0.0.1", port))
    sock.sendall(capture_request("/v1/capture?since=all"))
    return sock


def rest_told(sock: socket.socket, cycle, timeout: float = 20.0) -> tuple[bool, int]:
    """A stalled REST capture reads again: what it holds comes, then (once it has been quiet for half a second)
    `cycle()` makes new frames, and the first of them is preceded by the annotation saying how many were dropped.
    (told, bytes read)."""
    sock.settimeout(0.1)
    received, tail, told, cycled = 0, b"", False, False
    quiet = time.monotonic()
    deadline = quiet + timeout
    while time.monotonic() < deadline and not told:
        try:
            piece = sock.recv(1 << 20)
        except socket.timeout:
            piece = None
        except OSError:
            break
        if piece == b"":
            break
        if piece:
            received += len(piece)
            told = b"oltsim dropped" in tail + piece
            tail = piece[-32:]
            quiet = time.monotonic()
        elif not cycled and time.monotonic() - quiet > 0.5:
            cycle()
            cycled = True
    return told, received


def grpc_told(conn: KeepingConnection, cycle, timeout: float = 20.0) -> int:
    """A stalled gRPC capture reads again (its windows credited), as rest_told; the largest CaptureChunk.dropped it
    got (0: never told)."""
    conn.auto_credit = True
    try:
        conn.conn.increment_flow_control_window(1 << 26)
        for stream_id in list(conn.open_streams):
            conn.conn.increment_flow_control_window(1 << 26, stream_id=stream_id)
    except Exception:  # the stream or connection ended meanwhile
        pass
    conn.flush()
    cycled, size = False, 0
    quiet = time.monotonic()
    deadline = quiet + timeout
    while time.monotonic() < deadline and conn.pump(0.1):
        if len(conn.data) != size:
            size, quiet = len(conn.data), time.monotonic()
        elif not cycled and time.monotonic() - quiet > 0.5:
            cycle()
            cycled = True
        elif cycled and time.monotonic() - quiet > 2.0:
            break
    return max((chunk.dropped for chunk in chunks_of(conn.data)), default=0)


def all_up(port: int) -> int:
    """ONUs with every service at DHCP Ack (GET /v1/olt/onus)."""
    status, body = rest(port, "GET", "/v1/olt/onus")
    if status != 200:
        return 0
    up = 0
    for onu in json.loads(body)["items"]:
        services = [s for uni in onu.get("unis", []) for s in uni.get("services", [])]
        up += bool(services) and all(s.get("DhcpState") == "dhcp_ack_received" for s in services)
    return up


def wait_up(port: int, count: int, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if all_up(port) == count:
            return True
        time.sleep(0.5)
    return False


def stalled_run(args, stalled: bool) -> dict:
    onus = args.pon * args.onu
    with Daemon("--pon", str(args.pon), "--onu", str(args.onu), "--uni", str(args.uni), "--delay", "0",
                "--adapter", "builtin", start_timeout=120) as daemon:
        daemon.start()
        ports, pid = daemon.ports, daemon.process.pid
        if not wait_up(ports["rest-v1"], onus, args.timeout):
            raise RuntimeError(f"not every ONU came up within {args.timeout:g} s")
        status, body = rest(ports["rest-v1"], "GET", "/v1/olt/onus")
        serials = [onu["SerialNumber"] for onu in json.loads(body)["items"]]
        ring_bytes = len(rest(ports["rest-v1"], "GET", "/v1/capture?since=all&duration=0")[1])
        time.sleep(1.0)
        before = rss_bytes(pid)
        rest_readers, grpc_readers = [], []
        if stalled:
            rest_readers = [stalled_rest(ports["rest-v1"], 4096) for _ in range(args.readers)]
            grpc_readers = [stalled_grpc(ports["grpc-v1"], args.window) for _ in range(args.readers)]
            for conn in grpc_readers:
                conn.pump(0.2)
        channel = grpc.insecure_channel(f"127.0.0.1:{ports['openolt']}")
        stub = openolt_pb2_grpc.OpenoltStub(channel)
        samples, heartbeats, missed = [], 0, 0
        started = time.monotonic()
        next_sample = started
        connection = http.client.HTTPConnection("127.0.0.1", ports["rest-v1"], timeout=30)
        try:
            for cycle in range(args.cycles):
                serial = serials[cycle % len(serials)]
                for method in ("DELETE", "POST"):
                    rest(ports["rest-v1"], method, f"/v1/olt/onus/{serial}", connection)
                pause = started + (cycle + 1) / args.rate
                while True:
                    now = time.monotonic()
                    if now >= next_sample:
                        samples.append((now - started, rss_bytes(pid)))
                        next_sample += args.interval
                        try:
                            stub.HeartbeatCheck(openolt_pb2.Empty(), timeout=5)
                            heartbeats += 1
                        except grpc.RpcError:
                            missed += 1
                        for conn in grpc_readers:
                            conn.pump(0.0)   # SETTINGS and PINGs answered; no DATA credited
                    if now >= pause:
                        break
                    time.sleep(min(pause, next_sample) - now)
            during = list(samples)
            back = wait_up(ports["rest-v1"], onus, args.timeout)
            # after the wait, which polls GET /v1/olt/onus (a 512-ONU JSON answer each time): not in `during`
            samples.append((time.monotonic() - started, rss_bytes(pid)))
        finally:
            connection.close()
            channel.close()
        cycle = lambda: [rest(ports["rest-v1"], method, f"/v1/olt/onus/{serials[0]}")  # noqa: E731
                         for method in ("DELETE", "POST")]
        told_rest, told_grpc, received = [], [], 0
        for sock in rest_readers:
            told_rest.append(rest_told(sock, cycle))
            sock.close()
        for conn in grpc_readers:
            told_grpc.append(grpc_told(conn, cycle))
            received += len(conn.data)
            conn.close()
        rss = [r for _, r in samples]
        at_30 = [r for t, r in during if t >= 30.0]   # flat while the power cycles go on
        return {
            "before": before, "peak": max(rss), "end": rss[-1], "growth": max(rss) - before,
            "after_30": (max(at_30) - at_30[0]) if at_30 else 0, "samples": samples, "heartbeats": heartbeats,
            "missed": missed, "back": back, "seconds": time.monotonic() - started,
            "rest_told": [told for told, _ in told_rest], "rest_bytes": [size for _, size in told_rest],
            "grpc_dropped": told_grpc, "grpc_bytes": received, "ring_bytes": ring_bytes,
        }


def part_stalled(args) -> bool:
    print(f"== readers that stop reading: --adapter builtin {args.size}, {args.cycles} ONU power cycles at "
          f"{args.rate}/s, {args.readers} REST + {args.readers} gRPC captures of the whole ring that never read, "
          f"against the same without them ({load()})", flush=True)
    results = {}
    for mode in ("baseline", "stalled"):
        try:
            results[mode] = stalled_run(args, mode == "stalled")
        except RuntimeError as exc:
            print(f"  {mode}: run failed: {exc}", file=sys.stderr)
    if len(results) != 2:
        return False
    print(f"{'mode':<10}{'RSS before':>11}{'peak':>8}{'end':>8}{'growth':>8}{'after 30s':>10}{'beats':>7}"
          f"{'missed':>7}{'ONUs back':>10}   (MiB)")
    for mode, r in results.items():
        print(f"{mode:<10}{r['before'] / MIB:>11.1f}{r['peak'] / MIB:>8.1f}{r['end'] / MIB:>8.1f}"
              f"{r['growth'] / MIB:>8.1f}{r['after_30'] / MIB:>10.1f}{r['heartbeats']:>7}{r['missed']:>7}"
              f"{str(r['back']):>10}")
        print("  RSS series (s: MiB): " + ", ".join(f"{t:.0f}: {v / MIB:.1f}" for t, v in r["samples"][::4]))
    stalled, baseline = results["stalled"], results["baseline"]
    print(f"  told: REST readers read {[b // 1024 for b in stalled['rest_bytes']]} KiB again, an 'oltsim dropped' "
          f"annotation {stalled['rest_told']}; gRPC readers' largest CaptureChunk.dropped {stalled['grpc_dropped']} "
          f"({stalled['grpc_bytes'] // 1024} KiB read again in all)")
    # What a reader may hold: the ring's part it asked for (written when its stream opens), STREAM_LIMIT more, and
    # what the transports hold (the engine's 256 KiB of unsent messages, HTTP/2 windows, socket buffers): 1 MiB.
    readers = 2 * args.readers
    each = (stalled["growth"] - baseline["growth"]) / readers
    bound = stalled["ring_bytes"] + STREAM_LIMIT + MIB
    print(f"  per stalled reader: {each / MIB:.2f} MiB (the ring's part {stalled['ring_bytes'] / MIB:.2f} + "
          f"{STREAM_LIMIT / MIB:.0f} + 1 MiB allowed: {bound / MIB:.2f})")
    checks = [
        (f"{readers} stalled readers cost {each / MIB:.2f} MiB each <= {bound / MIB:.2f}", each <= bound),
        (f"flat after 30 s: {stalled['after_30'] / MIB:.1f} MiB <= {FLAT_MIB:g}", stalled["after_30"] <= FLAT_MIB * MIB),
        ("every heartbeat answered", stalled["missed"] == 0),
        ("every ONU up again", stalled["back"]),
        ("every reader told", all(stalled["rest_told"]) and all(stalled["grpc_dropped"])),
    ]
    for text, ok in checks:
        print(f"  {text}: {'PASS' if ok else 'FAIL'}")
    print(f"  ({load()})\n", flush=True)
    return True


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bbr", help="path of a bbr binary built from opencord/bbsim (part bbr)")
    parser.add_argument("--bbsim", help=argparse.SUPPRESS)
    parser.add_argument("--services", help="BBSim's att-services.yaml (default: configs/ beside bbr's bin/)")
    parser.add_argument("--parts", default="bbr,live,stalled", help="which parts (default %(default)s)")
    parser.add_argument("--size", default="16x32", help="PONxONU (default %(default)s)")
    parser.add_argument("--uni", type=int, default=4, help="UNIs per ONU (default 4)")
    parser.add_argument("--runs", type=int, default=3, help="runs per mode in parts bbr and live (default 3)")
    parser.add_argument("--reader", choices=("rest", "grpc"), default="rest",
                        help="the live capture's surface in part live (default rest)")
    parser.add_argument("--readers", type=int, default=4, help="stalled readers of each kind (default 4)")
    parser.add_argument("--window", type=int, default=65535, help="the stalled gRPC readers' stream window")
    parser.add_argument("--cycles", type=int, default=200, help="ONU power cycles in part stalled (default 200)")
    parser.add_argument("--rate", type=float, default=4.0, help="power cycles a second (default 4)")
    parser.add_argument("--interval", type=float, default=1.0, help="seconds between RSS samples (default 1)")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds a run may take")
    args = parser.parse_args(argv)
    args.pon, args.onu = (int(n) for n in args.size.split("x"))
    parts = [p.strip() for p in args.parts.split(",") if p.strip()]
    if "bbr" in parts:
        if not args.bbr:
            parser.error("part bbr needs --bbr PATH (or leave it out of --parts)")
        check_programs(parser, args)
    print(f"bench/capture.py: python {sys.version.split()[0]}, {os.cpu_count()} CPUs, {load()}\n", flush=True)
    done = {"bbr": part_bbr, "live": part_live, "stalled": part_stalled}
    ok = True
    for part in parts:
        ok = done[part](args) and ok
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
