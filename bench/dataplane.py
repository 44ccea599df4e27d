#!/usr/bin/env python3
"""Data plane: iperf3 TCP through the simulated PON, and what it costs the control plane.

One daemon (`twistd -n --pidfile= oltsim` from this checkout, listeners on free 127.0.0.1 ports, as the other bench/
programs start it) with `--adapter builtin`, `--onu 8 --uni 1`, the ATT service without EAPOL, every UNI bound in a
namespace of its own (`--uni-interfaces all --uni-netns`) and the untagged NNI interface moved into a server
namespace with dnsmasq and iperf3 servers (tests/integration/netlab.py's lab; names start with a random prefix;
everything is stopped and removed at the end). Each UNI's dhclient takes a lease, then:

- **ping**: the median round trip from UNI 0 to the server through oltsim (200 pings, 10 ms apart), against the same
  over a veth pair between two namespaces (the kernel alone): what the simulated PON adds. Beside it, a UDP echo by
  another process asleep in epoll, 10 ms apart: what waking any user-space forwarder costs the machine (on the 2-core
  VM about 0.2 ms, and a tail of several ms that a mean would carry: hence medians).
- **iperf3**, `--seconds` each, TCP: one stream upstream (UNI -> NNI side) and downstream (`-R`), then 8 streams at
  once over the 8 UNIs (one client per UNI) both ways. Throughput in Mbit/s (the receiver's), and meanwhile the
  ping round trip, the adapter's control plane (gRPC HeartbeatCheck on the OpenOLT port every 100 ms, and a REST
  GET /v1/olt/onus/SERIAL), the daemon's RSS and the machine's load average.

The whole once per `--offload` mode (both by default: `--dataplane-offload auto`, the TAPs' GSO super-frames, then
`off`, plain frames, for comparison), each with a daemon of its own. The built-in adapter's bandwidth profiles (230
and 300 Mbit/s) are removed before the runs (RemoveTrafficSchedulers on the OpenOLT port, as an adapter would), so
that the data plane's own rate is measured; `--shaped` keeps them.

`--attachment vxlan` runs the same with VXLAN attachments instead of TAPs (`--attachment vxlan`, RFC 7348 over
oltsim's one UDP port), in tests/integration/test_dataplane_vxlan_kernel.py's recipe: oltsim in a namespace of its
own (the bench enters it with `nsenter --net`, so that its loopback listeners are the bench's), each UNI's RG a
namespace joined to it by a veth pair (MTU 1550, so that the RG's kernel VXLAN device on the UNI's VNI, with the
UNI's MAC, has 1500), the untagged NNI's VNI on the server's kernel VXLAN device in a namespace of its own with
dnsmasq and the iperf3 servers. A segment carries plain frames only (no super-frames), so `--offload` does not apply.
`--attachment both` runs the TAPs first, then VXLAN, and compares against the plain-frame TAP figures the same run
measured (with `--offload off` or `both`); otherwise against docs/performance-history.md's figure (150 Mbit/s, the
low end of its TAP plain-frame medians). The default, `tap`, is the bench as before.

Targets: one stream each way and 8 streams in total >= 2500 Mbit/s with offloads (>= 300 without; with VXLAN
attachments >= the TAP plain-frame figure); ping added at idle <= 0.5 ms; control-plane round trips during traffic
within 2x of idle; RSS flat (<= 10 MiB growth over the runs). The numbers are printed against them whatever they
are; exit 0 (a report, not a test), 1 if the bench could not run (not root, a tool missing: the reason is printed).

    sudo .venv/bin/python bench/dataplane.py [--seconds 10] [--offload both|auto|off] [--attachment tap|vxlan|both]
        [--shaped] [--repo PATH]
"""
from __future__ import annotations

import argparse
import json
import os
import random
import re
import statistics
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "bench"), str(REPO / "tests" / "integration")]

os.environ.setdefault("GRPC_VERBOSITY", "ERROR")
import grpc  # noqa: E402
from voltha_protos import openolt_pb2, openolt_pb2_grpc, tech_profile_pb2  # noqa: E402

from netlab import Lab, LabUnavailable, require, run  # noqa: E402
from test_dataplane_vxlan_kernel import kernel_vxlan, quiet_netns, veth, vxlan_probe  # noqa: E402
from tests.support.daemon import Daemon, rss_bytes  # noqa: E402

UNIS = 8
SERVICES = """\
workflow: att
services:
  - name: hsia
    c_tag: 900
    c_tag_allocation: unique
    s_tag: 900
    s_tag_allocation: shared
    needs_eapol: false
    needs_dhcp: true
    tp_id: 64
"""
TARGET_MBITS = {"auto": 2500.0, "off": 300.0, "vxlan": 150.0}
TARGET_RATIO = 2.0
TARGET_PING_MS = 0.5
TARGET_RSS_MIB = 10.0


class ControlProbe(threading.Thread):
    """HeartbeatCheck on the OpenOLT port and GET /v1/olt/onus/SERIAL on REST, every `interval` s, timed (ms)."""

    def __init__(self, daemon: Daemon, serial: str, interval: float = 0.1):
        super().__init__(daemon=True)
        self.daemon_ = daemon
        self.serial = serial
        self.interval = interval
        self.heartbeats: list[float] = []
        self.rest: list[float] = []
        self.failures = 0
        self.stopping = threading.Event()

    def run(self) -> None:
        import http.client
        channel = grpc.insecure_channel(f"127.0.0.1:{self.daemon_.ports['openolt']}")
        stub = openolt_pb2_grpc.OpenoltStub(channel)
        try:
            while not self.stopping.wait(self.interval):
                begin = time.perf_counter()
                try:
                    stub.HeartbeatCheck(openolt_pb2.Empty(), timeout=5)
                    self.heartbeats.append((time.perf_counter() - begin) * 1000)
                except grpc.RpcError:
                    self.failures += 1
                begin = time.perf_counter()
                try:
                    connection = http.client.HTTPConnection("127.0.0.1", self.daemon_.ports["rest-v1"], timeout=5)
                    connection.request("GET", f"/v1/olt/onus/{self.serial}")
                    connection.getresponse().read()
                    connection.close()
                    self.rest.append((time.perf_counter() - begin) * 1000)
                except OSError:
                    self.failures += 1
        finally:
            channel.close()

    def stop(self) -> dict:
        self.stopping.set()
        self.join(10)
        return {"heartbeat_ms": median(self.heartbeats), "heartbeat_p99_ms": p99(self.heartbeats),
                "rest_ms": median(self.rest), "failures": self.failures}


def rest_json(daemon: Daemon, path: str):
    """GET `path` on the daemon's v1 REST port, as JSON."""
    with urllib.request.urlopen(f"http://127.0.0.1:{daemon.ports['rest-v1']}{path}", timeout=10) as answer:
        return json.load(answer)


def median(values) -> float:
    return statistics.median(values) if values else float("nan")


def p99(values) -> float:
    return sorted(values)[int(len(values) * 0.99)] if values else float("nan")


def ping_rtt(netns: str, target: str, count: int = 200, interval: float = 0.01) -> float:
    """The median round trip (ms) of `count` pings from `netns` to `target`, `interval` s apart."""
    done = run("ip", "netns", "exec", netns, "ping", "-c", str(count), "-i", str(interval), "-W", "1", target,
               timeout=count * interval + 30, check=False)
    return median([float(value) for value in re.findall(r"time=([\d.]+) ms", done.stdout)])


ECHO = """\
import os, select, socket, statistics, sys, time
a, b = (socket.socket(socket.AF_INET, socket.SOCK_DGRAM) for _ in range(2))
a.bind(("127.0.0.1", 0)); b.bind(("127.0.0.1", 0)); a.settimeout(2)
parent = os.getpid()
child = os.fork()
if child == 0:
    poll = select.epoll(); poll.register(b.fileno(), select.EPOLLIN)
    while os.getppid() == parent:      # the echo ends with its parent, however that ends
        if not poll.poll(1):
            continue
        data, addr = b.recvfrom(64)
        if data == b"q":
            break
        b.sendto(data, addr)
    os._exit(0)
times = []
for _ in range(int(sys.argv[1])):
    begin = time.perf_counter(); a.sendto(b"x", b.getsockname()); a.recvfrom(64)
    times.append((time.perf_counter() - begin) * 1000); time.sleep(float(sys.argv[2]))
a.sendto(b"q", b.getsockname()); os.waitpid(child, 0)
print(statistics.median(times))
"""


def echo_floor(count: int = 200, interval: float = 0.01) -> float:
    """The median round trip (ms) of a UDP datagram echoed by another process asleep in epoll, `interval` s apart, on
    loopback: what waking a user-space forwarder costs this machine, whatever it forwards with."""
    done = subprocess.run([sys.executable, "-c", ECHO, str(count), str(interval)], capture_output=True, text=True,
                          timeout=count * interval + 30, check=False)
    try:
        return float(done.stdout.strip())
    except ValueError:
        return float("nan")


def iperf(lab: Lab, clients: list[str], server_ip: str, seconds: float, reverse: bool) -> float:
    """Mbit/s summed over `clients` (UNI namespaces), each to its own iperf3 server port, at once."""
    processes = []
    for index, netns in enumerate(clients):
        command = ["ip", "netns", "exec", netns, "iperf3", "-J", "-c", server_ip, "-p", str(5201 + index), "-t",
                   str(seconds)] + (["-R"] if reverse else [])
        processes.append(subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
    total = 0.0
    for process in processes:
        out, _ = process.communicate(timeout=seconds + 60)
        try:
            total += json.loads(out)["end"]["sum_received"]["bits_per_second"] / 1e6
        except (ValueError, KeyError):
            print(f"  iperf3 failed: {out.strip()[-300:]}")
    return total


def unshape(daemon: Daemon) -> int:
    """Remove every ONU's traffic schedulers (RemoveTrafficSchedulers naming none: all of the ONU's), as an adapter
    does when a subscriber's bandwidth profile goes; the ONUs done."""
    onus = {(f.get("access_intf_id", f.get("accessIntfId", 0)), f["onu_id"])
            for f in rest_json(daemon, "/v1/olt/flows")["flows"] if f.get("onu_id", -1) > 0}
    channel = grpc.insecure_channel(f"127.0.0.1:{daemon.ports['openolt']}")
    try:
        stub = openolt_pb2_grpc.OpenoltStub(channel)
        for pon, onu_id in sorted(onus):
            stub.RemoveTrafficSchedulers(tech_profile_pb2.TrafficSchedulers(intf_id=pon, onu_id=onu_id), timeout=10)
    finally:
        channel.close()
    return len(onus)


def load_average() -> str:
    return " ".join(open("/proc/loadavg").read().split()[:3])


def veth_baseline(lab: Lab) -> float:
    """Ping round trip (ms) over a veth pair between two namespaces of the lab: the kernel's part alone."""
    a, b = lab.netns(f"{lab.prefix}va"), lab.netns(f"{lab.prefix}vb")
    run("ip", "link", "add", f"{lab.prefix}v0", "type", "veth", "peer", "name", f"{lab.prefix}v1")
    lab.move(f"{lab.prefix}v0", a, "192.168.251.1/24")
    lab.move(f"{lab.prefix}v1", b, "192.168.251.2/24")
    return ping_rtt(a, "192.168.251.2")


def wait_flows(daemon: Daemon) -> None:
    """Until the ONUs' VLAN operations and flows are in (a downstream flow per UNI), before the clients start."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        flows = rest_json(daemon, "/v1/olt/flows")
        if sum(1 for f in flows["flows"] if f["flow_type"] == "downstream" and f["onu_id"] > 0) == UNIS:
            return
        time.sleep(0.2)


def tap_lab(lab: Lab, daemon: Daemon, args) -> list[tuple[str, str]]:
    """The untagged NNI's TAP moved into the server namespace, dnsmasq and the iperf3 servers on it; the UNIs'
    (namespace, interface): each TAP in a namespace of its own name (`--uni-netns`)."""
    p = lab.prefix
    server = lab.netns(f"{p}srv")
    lab.wait_link(f"{p}nniu")
    lab.move(f"{p}nniu", server, "10.203.0.1/16")
    servers(lab, server, f"{p}nniu")
    return [(f"{p}u0-{onu}-0", f"{p}u0-{onu}-0") for onu in range(1, UNIS + 1)]


def vxlan_lab(lab: Lab, daemon: Daemon, args) -> list[tuple[str, str]]:
    """Inside oltsim's namespace (`--in-netns`): the server's and each RG's namespace joined to it by a veth pair, a
    kernel VXLAN device on the untagged NNI's VNI with dnsmasq and the iperf3 servers, one on each UNI's VNI with its
    MAC; the UNIs' (namespace, interface)."""
    p, olt = lab.prefix, args.in_netns
    entries = rest_json(daemon, "/v1/dataplane")["interfaces"]

    def joined(index: int, name: str) -> str:
        netns = quiet_netns(lab, f"{p}{name}")
        veth(olt, f"{p}o{index}", f"10.77.{index}.1/24", netns, f"{p}r{index}", f"10.77.{index}.2/24")
        for ns, interface in ((olt, f"{p}o{index}"), (netns, f"{p}r{index}")):
            run("ip", "-n", ns, "link", "set", "dev", interface, "mtu", "1550")
        return netns

    server = joined(100, "srv")
    kernel_vxlan(server, f"{p}vx", entries[f"{p}nniu"]["vni"], "10.77.100.1", args.vxlan_port, "10.203.0.1/16")
    run("ip", "-n", server, "link", "set", "dev", f"{p}vx", "mtu", "1500")
    servers(lab, server, f"{p}vx")
    run("ip", "netns", "exec", server, "ping", "-b", "-c", "1", "-W", "1", "10.203.255.255", check=False)
    unis = []
    for onu in range(1, UNIS + 1):
        entry = entries[f"{p}u0-{onu}-0"]
        netns = joined(onu, f"r{onu}")
        kernel_vxlan(netns, f"{p}vx", entry["vni"], f"10.77.{onu}.1", args.vxlan_port, mac=entry["mac"])
        run("ip", "-n", netns, "link", "set", "dev", f"{p}vx", "mtu", "1500")
        unis.append((netns, f"{p}vx"))
    return unis


def servers(lab: Lab, netns: str, interface: str) -> None:
    """dnsmasq on the NNI side's `interface` and an iperf3 server per UNI."""
    lab.dnsmasq(netns, interface, "10.203.1.1", "10.203.1.254")
    for index in range(UNIS):
        lab.iperf3_server(netns, port=5201 + index, log=f"iperf3-{index}.log")


def bench(args, workdir: Path, attachment: str, offload: str) -> dict | None:
    """One daemon with `--attachment attachment` (a TAP's `--dataplane-offload offload`), its lab, the runs printed;
    {run: Mbit/s}, None if it failed."""
    lab = Lab(workdir, prefix=args.prefix)
    p = lab.prefix
    if attachment == "tap":
        setup, options = tap_lab, ("--uni-netns", "--dataplane-offload", offload)
        title = f"--dataplane-offload {offload}"
    else:
        setup, options = vxlan_lab, ("--attachment", "vxlan", "--vxlan-port", str(args.vxlan_port))
        title = "--attachment vxlan (plain frames)"
    daemon = Daemon("--adapter", "builtin", "--onu", str(UNIS), "--uni", "1", "--services",
                    str(workdir / "services.yaml"), "--uni-interfaces", "all", "--interface-prefix", p,
                    "--nni-untagged-interface", f"{p}nniu", *options, repo=args.repo)
    try:
        daemon.start()
        unis = setup(lab, daemon, args)
        wait_flows(daemon)
        for netns, interface in unis:
            lab.dhclient(netns, interface)
        for netns, interface in unis:
            lab.wait_address(netns, interface, timeout=120)
        unis = [netns for netns, _ in unis]
        shaped = "the adapter's bandwidth profiles" if args.shaped else f"unshaped ({unshape(daemon)} ONUs' " \
            "schedulers removed)"
        time.sleep(1.0)
        if attachment == "tap":
            offloads = {e.get("offloads", 0) for e in rest_json(daemon, "/v1/dataplane")["interfaces"].values()}
            title += f": TUN offload flags {sorted(hex(o) for o in offloads)}"
        print(f"\n== {title}, {shaped}")
        pid = daemon.process.pid
        rss = [rss_bytes(pid)]
        serial = "BBSM00000001"
        baseline = veth_baseline(lab)
        idle_probe = ControlProbe(daemon, serial)
        idle_probe.start()
        idle_ping = ping_rtt(unis[0], "10.203.0.1")
        idle = idle_probe.stop()
        print(f"ping round trip (medians): veth {baseline:.3f} ms, through oltsim {idle_ping:.3f} ms "
              f"(+{idle_ping - baseline:.3f} ms; a UDP echo by a sleeping process, this machine's floor for any "
              f"user-space hop: {echo_floor():.3f} ms)")
        print(f"target ping added at idle <= {TARGET_PING_MS} ms: +{idle_ping - baseline:.3f} -> "
              f"{'PASS' if idle_ping - baseline <= TARGET_PING_MS else 'MISS'}")
        print(f"idle control plane: HeartbeatCheck {idle['heartbeat_ms']:.2f} ms (p99 "
              f"{idle['heartbeat_p99_ms']:.2f}), REST GET onu {idle['rest_ms']:.2f} ms")
        print(f"{'run':28} {'Mbit/s':>8} {'ping ms':>8} {'hb ms':>7} {'hb x':>5} {'rest ms':>8} {'rest x':>6} "
              f"{'RSS MiB':>8} load average")
        results = {}
        ratios = []
        for name, clients, reverse in (("1 stream up", unis[:1], False), ("1 stream down", unis[:1], True),
                                       ("8 streams/8 UNIs up", unis, False),
                                       ("8 streams/8 UNIs down", unis, True)):
            probe = ControlProbe(daemon, serial)
            probe.start()
            pinger = {}
            ping_thread = threading.Thread(target=lambda: pinger.setdefault(
                "rtt", ping_rtt(unis[-1], "10.203.0.1", count=int(args.seconds * 10), interval=0.1)))
            ping_thread.start()
            mbits = iperf(lab, clients, "10.203.0.1", args.seconds, reverse)
            ping_thread.join(args.seconds + 60)
            control = probe.stop()
            rss.append(rss_bytes(pid))
            results[name] = mbits
            ratios += [control["heartbeat_ms"] / idle["heartbeat_ms"], control["rest_ms"] / idle["rest_ms"]]
            print(f"{name:28} {mbits:8.1f} {pinger.get('rtt', float('nan')):8.3f} {control['heartbeat_ms']:7.2f} "
                  f"{control['heartbeat_ms'] / idle['heartbeat_ms']:5.2f} {control['rest_ms']:8.2f} "
                  f"{control['rest_ms'] / idle['rest_ms']:6.2f} {rss[-1] / 2**20:8.1f} {load_average()}"
                  + (f"  ({control['failures']} control calls failed)" if control["failures"] else ""))
        growth = (max(rss) - rss[0]) / 2**20
        one = min(results["1 stream up"], results["1 stream down"])
        many = min(results["8 streams/8 UNIs up"], results["8 streams/8 UNIs down"])
        if attachment == "tap":
            targets, against = (TARGET_MBITS[offload],) * 2, ""
        elif args.reference:
            targets, against = args.reference, " (the TAP plain-frame figure of this run)"
        else:
            targets, against = (TARGET_MBITS["vxlan"],) * 2, " (the TAP plain-frame figure, performance-history.md)"
        print(f"target one stream each way >= {targets[0]:.0f} Mbit/s{against}: {one:.1f} -> "
              f"{'PASS' if one >= targets[0] else 'MISS'}")
        print(f"target 8 streams in total each way >= {targets[1]:.0f} Mbit/s{against}: {many:.1f} -> "
              f"{'PASS' if many >= targets[1] else 'MISS'}")
        print(f"target RSS flat (<= {TARGET_RSS_MIB:.0f} MiB growth): {growth:.1f} MiB -> "
              f"{'PASS' if growth <= TARGET_RSS_MIB else 'MISS'}")
        worst = max(ratios)
        print(f"target control plane within {TARGET_RATIO:.0f}x of idle (HeartbeatCheck and REST medians): worst "
              f"{worst:.2f}x -> {'PASS' if worst <= TARGET_RATIO else 'MISS'}")
        counters = rest_json(daemon, "/v1/dataplane")
        drops = {name: entry["dropped"] for name, entry in counters.get("interfaces", {}).items() if entry["dropped"]}
        print(f"interface drops: {drops or 'none'}")
        return results
    except Exception as exc:
        print(f"bench/dataplane.py failed: {exc}\n{daemon.output() if daemon.process else ''}")
        return None
    finally:
        lab.close()
        daemon.stop()


def vxlan_in_netns(args, workdir: Path, reference: tuple[float, float] | None) -> int:
    """The VXLAN bench in a child process inside a namespace made for oltsim (`nsenter --net`: the mounts, hence
    `ip netns`' names, stay the host's), removed after; the child's exit status."""
    lab = Lab(workdir)
    try:
        vxlan_probe(lab)
        olt = quiet_netns(lab, f"{lab.prefix}olt")
        prefix = lab.prefix
        while prefix == lab.prefix:   # the child's lab removes what starts with its prefix: never this namespace
            prefix = f"d{random.randrange(0x1000):03x}"
        command = ["nsenter", f"--net=/run/netns/{olt}", sys.executable, __file__, "--attachment", "vxlan",
                   "--in-netns", olt, "--prefix", prefix, "--seconds", str(args.seconds), "--repo", str(args.repo),
                   *(["--shaped"] if args.shaped else []),
                   *(["--reference", ",".join(f"{v:.1f}" for v in reference)] if reference else [])]
        sys.stdout.flush()
        return subprocess.run(command, check=False).returncode
    except LabUnavailable as exc:
        print(f"bench/dataplane.py cannot run with VXLAN attachments: {exc}")
        return 1
    finally:
        lab.close()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=10.0, help="each iperf3 run (default 10)")
    parser.add_argument("--offload", choices=("both", "auto", "off"), default="both",
                        help="--dataplane-offload of the daemon: both (auto, then off; the default), auto or off")
    parser.add_argument("--attachment", choices=("tap", "vxlan", "both"), default="tap",
                        help="TAP interfaces (the default), VXLAN attachments, or both (TAP first)")
    parser.add_argument("--shaped", action="store_true", help="keep the built-in adapter's bandwidth profiles")
    parser.add_argument("--repo", type=Path, default=REPO, help="the checkout the daemon runs from")
    parser.add_argument("--vxlan-port", type=int, default=random.randrange(20000, 30000), help=argparse.SUPPRESS)
    parser.add_argument("--in-netns", help=argparse.SUPPRESS)        # the child: oltsim's namespace, entered
    parser.add_argument("--prefix", help=argparse.SUPPRESS)          # the child's lab prefix
    parser.add_argument("--reference", type=lambda text: tuple(float(v) for v in text.split(",")),
                        help=argparse.SUPPRESS)                       # the TAP plain-frame figures: one, 8 streams
    args = parser.parse_args(argv)
    try:
        require("dnsmasq", "dhclient", "iperf3", "ping", *(("nsenter",) if args.attachment != "tap" else ()))
    except LabUnavailable as exc:
        print(f"bench/dataplane.py cannot run: {exc}")
        return 1
    workdir = Path(os.environ.get("TMPDIR", "/tmp")) / f"oltsim-dataplane-bench-{os.getpid()}"
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "services.yaml").write_text(SERVICES)
    if not args.in_netns:
        print(f"{os.cpu_count()} CPUs, load average {load_average()} at the start")
    try:
        if args.in_netns:
            return 0 if bench(args, workdir, "vxlan", "off") is not None else 1
        reference = None
        if args.attachment != "vxlan":
            for offload in (("auto", "off") if args.offload == "both" else (args.offload,)):
                results = bench(args, workdir, "tap", offload)
                if results is None:
                    return 1
                if offload == "off":
                    reference = (min(results["1 stream up"], results["1 stream down"]),
                                 min(results["8 streams/8 UNIs up"], results["8 streams/8 UNIs down"]))
        if args.attachment != "tap":
            return vxlan_in_netns(args, workdir, reference)
        return 0
    finally:
        subprocess.run(["rm", "-rf", str(workdir)], check=False)


if __name__ == "__main__":
    sys.exit(main())
