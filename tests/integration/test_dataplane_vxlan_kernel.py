"""VXLAN attachments with real kernel VXLAN devices: `twistd oltsim --attachment vxlan --adapter builtin` runs as an
unprivileged user (nobody) in a network namespace of its own; the RG is another namespace joined to oltsim's only by
a veth pair (another host, as far as it can tell), with a kernel VXLAN device on the UNI's VNI, a real wpa_supplicant
(EAP-MD5) and dhclient on it; dnsmasq serves DHCP in a third namespace behind the untagged NNI's VNI, joined by a
veth pair of its own. Malformed datagrams sent at oltsim's port are dropped and counted while it runs, and a source
other than the RG's cannot take its segment.

Needs root (for the namespaces; oltsim itself runs as nobody), `ip netns`, the kernel's vxlan and veth and Debian's
dnsmasq, dhclient, wpa_supplicant and ping (tests/integration/netlab.py), else the tests skip with the reason. Every
name starts with the lab's random prefix; IPv6 is off in every namespace before any interface exists (habit 13:
no MLD reports or router solicitations on the segments); everything made is removed, on failure too.
"""
from __future__ import annotations

import json
import random
import struct
import subprocess
import sys

import pytest

from netlab import Lab, LabUnavailable, require, run
from scripted_adapter import free_ports
from test_daemon import LISTENERS, TWISTD, DaemonProcess, environment
from test_dataplane import DHCP_OK, EAP_OK, flows_of, service_of, wait_for

pytestmark = pytest.mark.dataplane

NOBODY = 65534
#: GET on a REST port inside a namespace: [status, body], or ["error", why] when nothing answers
REST_GET = ("import sys, json, http.client\n"
            "c = http.client.HTTPConnection('127.0.0.1', int(sys.argv[1]), timeout=float(sys.argv[3]))\n"
            "try:\n"
            "    c.request('GET', sys.argv[2]); r = c.getresponse()\n"
            "    print(json.dumps([r.status, json.loads(r.read() or b'null')]))\n"
            "except OSError as e:\n"
            "    print(json.dumps(['error', str(e)]))\n")
#: datagrams from inside a namespace: argv host port, then hex datagrams
SEND = ("import sys, socket\n"
        "s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
        "for d in sys.argv[3:]:\n"
        "    s.sendto(bytes.fromhex(d), (sys.argv[1], int(sys.argv[2])))\n")
#: ETHTOOL_STXCSUM off on an interface (argv name), as `ethtool -K NAME tx off` (ethtool is not always installed)
TX_CHECKSUM_OFF = ("import ctypes, fcntl, socket, struct, sys\n"
                   "value = ctypes.create_string_buffer(struct.pack('II', 0x17, 0), 8)\n"
                   "request = struct.pack('16sP', sys.argv[1].encode(), ctypes.addressof(value)).ljust(40, b'\\0')\n"
                   "s = socket.socket()\n"
                   "fcntl.ioctl(s.fileno(), 0x8946, request)\n")


def vxlan_probe(lab: Lab) -> None:
    """LabUnavailable when the kernel makes no VXLAN device (module absent, container without it)."""
    probe = lab.netns(f"{lab.prefix}prb")
    made = run("ip", "-n", probe, "link", "add", "vxprobe", "type", "vxlan", "id", "5", "dstport", "4789",
               check=False)
    run("ip", "netns", "delete", probe, check=False)
    lab.namespaces.remove(probe)
    if made.returncode != 0:
        raise LabUnavailable(f"the kernel makes no VXLAN device here: {made.stderr.strip()}")


@pytest.fixture
def lab(tmp_path):
    """A Lab with dnsmasq, dhclient, wpa_supplicant, ping, iperf3 and kernel VXLAN; skips with the reason otherwise."""
    try:
        require("dnsmasq", "dhclient", "wpa_supplicant", "ping", "iperf3")
    except LabUnavailable as exc:
        pytest.skip(str(exc))
    made = Lab(tmp_path)
    try:
        try:
            vxlan_probe(made)
        except LabUnavailable as exc:
            pytest.skip(str(exc))
        yield made
    finally:
        made.close()


def quiet_netns(lab: Lab, name: str) -> str:
    """A namespace of the lab with IPv6 off before any interface of it exists."""
    lab.netns(name)
    run("ip", "netns", "exec", name, "sysctl", "-q", "-w", "net.ipv6.conf.all.disable_ipv6=1",
        "net.ipv6.conf.default.disable_ipv6=1")
    return name


def veth(ns_a: str, name_a: str, address_a: str, ns_b: str, name_b: str, address_b: str) -> None:
    """A veth pair made inside `ns_a` with its peer in `ns_b` (never in the host's namespace), addressed, up."""
    run("ip", "-n", ns_a, "link", "add", name_a, "type", "veth", "peer", "name", name_b, "netns", ns_b)
    for ns, name, address in ((ns_a, name_a, address_a), (ns_b, name_b, address_b)):
        # the kernel leaves a UDP or TCP checksum for the NIC to fill in ("offload"), also inside a VXLAN datagram,
        # and a veth never fills it in: oltsim, which reads the datagram, would pass the frame on unfinished
        run("ip", "netns", "exec", ns, sys.executable, "-c", TX_CHECKSUM_OFF, name)
        run("ip", "-n", ns, "addr", "add", address, "dev", name)
        run("ip", "-n", ns, "link", "set", "dev", name, "up")


def kernel_vxlan(ns: str, name: str, vni: int, remote: str, port: int, address: str | None = None,
                 mac: str | None = None) -> None:
    """A kernel VXLAN device in `ns` on `vni` towards `remote`:`port` (with the MAC `mac`), as an RG or BNG makes it,
    up."""
    run("ip", "-n", ns, "link", "add", name, *(["address", mac] if mac else []), "type", "vxlan", "id", str(vni),
        "remote", remote, "dstport", str(port))
    if address:
        run("ip", "-n", ns, "addr", "add", address, "dev", name)
    run("ip", "-n", ns, "link", "set", "dev", name, "up")


class NetnsDaemon(DaemonProcess):
    """`twistd -n oltsim` as nobody inside network namespace `netns`, its listeners on that namespace's loopback;
    REST reads go through a client run in the namespace."""

    def __init__(self, tmp_path, netns: str, *arguments: str):
        self.netns = netns
        self.ports = dict(zip(LISTENERS, free_ports(len(LISTENERS))))   # any port is free in a new namespace
        listen = [arg for name, port in self.ports.items() for arg in (f"--{name}", f"tcp:{port}:interface=127.0.0.1")]
        self.log_path = tmp_path / "oltsim.log"
        self._log = open(self.log_path, "w")
        self.process = subprocess.Popen(
            ["ip", "netns", "exec", netns, "setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups",
             *TWISTD, "-n", "--pidfile=", "oltsim", *listen, *arguments],
            cwd="/", env=environment(), stdout=self._log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)

    def rest_get(self, path: str, timeout: float = 5.0, surface: str = "rest-v1") -> tuple[int, dict]:
        done = subprocess.run(["ip", "netns", "exec", self.netns, sys.executable, "-c", REST_GET,
                               str(self.ports[surface]), path, str(timeout)],
                              capture_output=True, text=True, timeout=timeout + 10)
        status, body = json.loads(done.stdout or '["error", "no output"]')
        if status == "error":
            raise OSError(body)
        return status, body

    def close(self) -> None:
        """Stop the process (ours, by its pid), bounded."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)
        self._log.close()


@pytest.fixture
def netns_daemon(tmp_path):
    started = []

    def start(netns: str, *arguments: str) -> NetnsDaemon:
        process = NetnsDaemon(tmp_path, netns, *arguments)
        started.append(process)
        return process

    yield start
    for process in started:
        process.close()


def vxlan_datagram(vni: int, frame: bytes, flags: int = 0x08) -> bytes:
    return struct.pack("!II", flags << 24, vni << 8) + frame


def send_datagrams(ns: str, host: str, port: int, *datagrams: bytes) -> None:
    run("ip", "netns", "exec", ns, sys.executable, "-c", SEND, host, str(port), *(d.hex() for d in datagrams))


def test_an_rg_and_a_dhcp_server_on_kernel_vxlan_reach_an_unprivileged_oltsim(lab, netns_daemon):
    """OLT id 10, 2 ONUs x 2 UNIs, the second UNI of the second ONU bound as a VXLAN attachment (VNI 1003: 1000 + its
    index 3), the untagged NNI as VNI 2, oltsim running as nobody: the RG's kernel VXLAN device on that VNI carries
    wpa_supplicant's EAP-MD5 to the built-in authenticator (EAP success), dhclient's lease from dnsmasq behind the
    untagged NNI's VNI (the device has the UNI's MAC, which GET /v1/dataplane shows), a ping and a short iperf3 run to
    it; GET /v1/dataplane shows each attachment's kind, VNI and learned remote. Then a bad header, an unknown VNI, a
    runt and the RG's VNI from the server's address are dropped and counted, and the RG still reaches the server."""
    p = lab.prefix
    port = random.randrange(20000, 30000)
    olt_ns, rg_ns, srv_ns = (quiet_netns(lab, f"{p}{name}") for name in ("olt", "rg", "srv"))
    veth(olt_ns, f"{p}va", "10.77.1.1/24", rg_ns, f"{p}vb", "10.77.1.2/24")
    veth(olt_ns, f"{p}vc", "10.77.2.1/24", srv_ns, f"{p}vd", "10.77.2.2/24")
    serial, uni_id = "BBSM000a0002", 1
    process = netns_daemon(olt_ns, "--adapter", "builtin", "--olt-id", "10", "--pon", "1", "--onu", "2", "--uni",
                           "2", "--uni-interfaces", f"{serial}/{uni_id}", "--nni-untagged-interface", "nniu",
                           "--eap-secret", "s3cret", "--attachment", "vxlan", "--vxlan-port", str(port))
    process.wait_serving()
    status, document = process.rest_get("/v1/dataplane")
    assert status == 200, document
    rg_entry, nni_entry = document["interfaces"]["u0-2-1"], document["interfaces"]["nniu"]
    assert (rg_entry["kind"], rg_entry["vni"], rg_entry["remote"]) == ("vxlan", 1003, None) and rg_entry["mac"]
    assert (nni_entry["kind"], nni_entry["vni"]) == ("vxlan", 2)
    assert document["vxlan"]["port"] == port
    assert "dataplane-started attachment=vxlan" in process.log

    # the BNG side: dnsmasq on the untagged NNI's VNI; one broadcast ping tells oltsim where the segment's end is
    kernel_vxlan(srv_ns, f"{p}vx", 2, "10.77.2.1", port, "10.201.0.1/16")
    lab.dnsmasq(srv_ns, f"{p}vx", "10.201.1.1", "10.201.1.254")
    run("ip", "netns", "exec", srv_ns, "ping", "-b", "-c", "1", "-W", "1", "10.201.255.255", check=False)
    wait_for("the server's remote learned",
             lambda: process.rest_get("/v1/dataplane")[1]["interfaces"]["nniu"]["remote"] == "10.77.2.2")

    # the RG: its kernel VXLAN device on the UNI's VNI, wpa_supplicant and dhclient on it
    kernel_vxlan(rg_ns, f"{p}vx", rg_entry["vni"], "10.77.1.1", port, mac=rg_entry["mac"])
    onu_id = wait_for("the ONU's activation", lambda: process.rest_get(f"/v1/olt/onus/{serial}")[1].get("ID"))
    wait_for("the EAPOL trap flow", lambda: any(f["classifier"]["eth_type"] == 0x888E
                                                for f in flows_of(process, onu_id, uni_id)))
    lab.wpa_supplicant(rg_ns, f"{p}vx", "user", "s3cret")
    wait_for("EAP success", lambda: service_of(process, serial, uni_id)["EapolState"] == EAP_OK,
             explain=lambda: lab.log(f"{rg_ns}.wpa.log")[-3000:] + process.log[-3000:])
    lab.dhclient(rg_ns, f"{p}vx")
    address = wait_for("the RG's lease", lambda: lab.address(rg_ns, f"{p}vx"), explain=lambda: (
        lab.log(f"{rg_ns}.dhclient.log")[-1500:] + lab.log(f"{srv_ns}.dnsmasq.log")[-1500:]
        + json.dumps(process.rest_get("/v1/dataplane")[1])[-4000:]))
    assert address.startswith("10.201.1.")
    wait_for("DHCP ack on the service", lambda: service_of(process, serial, uni_id)["DhcpState"] == DHCP_OK)
    ping = run("ip", "netns", "exec", rg_ns, "ping", "-c", "3", "-i", "0.2", "-W", "2", "10.201.0.1", check=False)
    assert ping.returncode == 0, ping.stdout + ping.stderr
    # a short TCP run through the pipeline (checksums, segments both ways)
    lab.iperf3_server(srv_ns, "-1", "-B", "10.201.0.1")
    tcp = run("ip", "netns", "exec", rg_ns, "iperf3", "-J", "-c", "10.201.0.1", "-p", "5201", "-t", "2",
              timeout=30, check=False)
    assert tcp.returncode == 0, tcp.stdout[-2000:] + tcp.stderr
    assert json.loads(tcp.stdout)["end"]["sum_received"]["bytes"] > 0
    rg_entry = process.rest_get("/v1/dataplane")[1]["interfaces"]["u0-2-1"]
    assert rg_entry["remote"] == "10.77.1.2" and rg_entry["remote_learned"]
    assert rg_entry["rx_frames"] >= 5 and rg_entry["tx_frames"] >= 5

    # malformed datagrams at oltsim's port, and the RG's VNI from another address: dropped and counted
    frame = bytes(range(60))
    send_datagrams(rg_ns, "10.77.1.1", port, vxlan_datagram(1003, frame, flags=0x00),
                   vxlan_datagram(4242, frame), vxlan_datagram(1003, frame[:10]), b"\x08\x00")
    send_datagrams(srv_ns, "10.77.2.1", port, vxlan_datagram(1003, frame))

    def drops():
        document = process.rest_get("/v1/dataplane")[1]
        return document["vxlan"]["dropped"], document["interfaces"]["u0-2-1"]["dropped"]

    wait_for("the drops counted", lambda: drops()[0].get("vxlan-foreign-source", 0) >= 1
             and drops()[0].get("vxlan-bad-header", 0) >= 2, 10)
    port_drops, rg_drops = drops()
    assert port_drops.get("vxlan-unknown-vni", 0) >= 1 and port_drops.get("vxlan-runt", 0) >= 1, port_drops
    assert rg_drops.get("vxlan-runt", 0) >= 1 and rg_drops.get("vxlan-foreign-source", 0) >= 1, rg_drops
    ping = run("ip", "netns", "exec", rg_ns, "ping", "-c", "2", "-i", "0.2", "-W", "2", "10.201.0.1", check=False)
    assert ping.returncode == 0, ping.stdout + ping.stderr
    assert process.rest_get("/v1/dataplane")[1]["interfaces"]["u0-2-1"]["remote"] == "10.77.1.2"
