"""GSO super-frames through real TAPs: `twistd oltsim --adapter builtin` (OLT id 10, one UNI in its namespace) with
both NNIs, dnsmasq, an iperf3 server and the content checks' receiver behind the untagged one, tshark on the tagged
one (in a namespace of its own: every upstream frame leaves by both). The RG gets its lease through the built-in
adapter's relay (the server's answer, its UDP checksum left to finish, is trapped and finished for the adapter), then
iperf3 TCP runs each way, and a file of random octets crosses each way by TCP and arrives with the same SHA-256 (a
frame written with a partial checksum is trusted by the stack behind the TAP, so only the content can tell). With
offloads (the default) the RG's TAP takes TSO (`ethtool -k` in its namespace), the upstream stream crosses as
super-frames (tshark on the tagged NNI: frames above 1,522 octets, every one with the S-tag over the C-tag) and the
pipeline counts their segments; with `--dataplane-offload off` the same runs pass with plain frames only.

A server behind the tagged NNI itself needs 802.1Q devices (CONFIG_VLAN_8021Q), which the development VM's kernel
lacks: the downstream stream is carried from the untagged NNI, and the tagged one shows its ACKs.

Needs root, /dev/net/tun, `ip netns` and Debian's dnsmasq, dhclient, iperf3, tshark, ethtool (installed only with
OLTSIM_TEST_INSTALL=1, else skipped with the reason; tests/integration/netlab.py)."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from netlab import Lab, lab_for, run
from test_daemon import daemon  # noqa: F401 - the fixture
from test_dataplane import NO_EAPOL_SERVICES, dataplane, dataplane_options, serve_dhcp, wait_for

pytestmark = pytest.mark.dataplane

SECONDS = 5
S_TAG = C_TAG = 900
#: octets each way of the content check
CONTENT = 8 << 20

RECEIVE = """
import hashlib, socket, sys
listener = socket.create_server(("0.0.0.0", int(sys.argv[1])))
listener.settimeout(60)
connection, _ = listener.accept()
connection.settimeout(60)
digest, total = hashlib.sha256(), 0
while True:
    data = connection.recv(1 << 20)
    if not data:
        break
    digest.update(data)
    total += len(data)
print(total, digest.hexdigest(), flush=True)
"""
SEND = """
import socket, sys
data = open(sys.argv[3], "rb").read()
with socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=60) as connection:
    connection.sendall(data)
"""


@pytest.fixture
def lab(tmp_path):
    """A Lab with dnsmasq, dhclient, iperf3, tshark and ethtool; skips when it cannot be had."""
    yield from lab_for(tmp_path, "dnsmasq", "dhclient", "iperf3", "tshark", "ethtool")


def trunk(lab: Lab) -> str:
    """The tagged NNI moved into a namespace of its own, up with IPv6 off (no kernel frames of its own): tshark's."""
    name = lab.netns(f"{lab.prefix}trk")
    lab.wait_link(f"{lab.prefix}nni")
    run("ip", "link", "set", "dev", f"{lab.prefix}nni", "netns", name)
    run("ip", "netns", "exec", name, "sysctl", "-q", "-w", f"net.ipv6.conf.{lab.prefix}nni.disable_ipv6=1")
    run("ip", "-n", name, "link", "set", "dev", f"{lab.prefix}nni", "up")
    return name


def iperf(netns: str, server_ip: str, *more: str) -> dict:
    """One iperf3 TCP run's JSON end summary from `netns` (an error fails the test)."""
    done = subprocess.run(["ip", "netns", "exec", netns, "iperf3", "-J", "-c", server_ip, "-t", str(SECONDS), *more],
                          capture_output=True, text=True, timeout=SECONDS + 60)
    result = json.loads(done.stdout)
    assert "error" not in result, result.get("error")
    return result["end"]


def carried_intact(lab: Lab, sender: str, receiver: str, address: str, port: int) -> None:
    """CONTENT random octets sent by TCP from namespace `sender` to `receiver` (listening at `address`:`port`)
    arrive whole, with the same SHA-256."""
    import hashlib
    data = os.urandom(CONTENT)
    path = lab.tmp / f"content-{port}"
    path.write_bytes(data)
    listening = subprocess.Popen(["ip", "netns", "exec", receiver, sys.executable, "-c", RECEIVE, str(port)],
                                 stdout=subprocess.PIPE, text=True, start_new_session=True)
    try:
        for _ in range(50):      # the listener is up when its port is
            if str(port) in run("ip", "netns", "exec", receiver, "ss", "-Htln", check=False).stdout:
                break
            subprocess.run(["sleep", "0.1"])
        run("ip", "netns", "exec", sender, sys.executable, "-c", SEND, address, str(port), str(path), timeout=90)
        out, _ = listening.communicate(timeout=90)
    finally:
        lab.stop(listening)
    assert out.split() == [str(CONTENT), hashlib.sha256(data).hexdigest()]


def stream_frames(lab: Lab, netns: str, duration: int) -> subprocess.Popen:
    """tshark on the tagged NNI in `netns` for `duration` s: each iperf3 frame's VLAN ids and length."""
    return lab.start(netns, "tshark", "-i", f"{lab.prefix}nni", "-a", f"duration:{duration}", "-f", "vlan", "-Y",
                     "tcp.port == 5201", "-T", "fields", "-e", "vlan.id", "-e", "frame.len", "-l", log="tshark.log")


@pytest.mark.parametrize("offload", ["auto", "off"])
def test_iperf3_each_way_through_the_tagged_nni(lab, daemon, tmp_path, offload):  # noqa: F811
    """TCP each way through S-tag over C-tag: iperf3 runs without error, random content arrives intact both ways;
    with offloads the stream crosses as super-frames with both tags and the counters count their segments, without
    it as plain frames."""
    services = tmp_path / "services.yaml"
    services.write_text(NO_EAPOL_SERVICES)
    p = lab.prefix
    process = daemon(*dataplane_options(lab, "--olt-id", "10", "--pon", "1", "--onu", "1", "--uni", "1",
                                        "--uni-interfaces", "all", "--services", str(services),
                                        "--dataplane-offload", offload))
    process.wait_serving()
    server, server_ip = serve_dhcp(lab, 209)
    tagged = trunk(lab)
    lab.iperf3_server(server)
    uni = f"{p}u0-1-0"
    wait_for("the ONU's forwarding flows", lambda: any(
        f["flow_type"] == "downstream" and f.get("onu_id", -1) > 0
        for f in process.rest_get("/v1/olt/flows")[1]["flows"]))
    features = run("ip", "netns", "exec", uni, "ethtool", "-k", uni).stdout
    assert ("tcp-segmentation-offload: on" in features) == (offload == "auto"), features
    lab.dhclient(uni, uni)
    rg_ip = lab.wait_address(uni, uni, timeout=120)
    # frames written while the lab moved and raised the interfaces fail (EIO) and are counted: not the stream's
    dropped_before = {name: dict(row["dropped"]) for name, row in dataplane(process)["interfaces"].items()}
    capture = stream_frames(lab, tagged, 4 * SECONDS + 20)
    wait_for("tshark capturing", lambda: "Capturing on" in lab.log("tshark.log"), timeout=30)
    up, down = iperf(uni, server_ip), iperf(uni, server_ip, "-R")
    print(f"offload {offload}: up {up['sum_received']['bits_per_second'] / 1e6:.0f} Mbit/s, down "
          f"{down['sum_received']['bits_per_second'] / 1e6:.0f} Mbit/s")
    for end in (up, down):
        assert end["sum_received"]["bytes"] > 0 and end["sum_sent"]["bytes"] >= end["sum_received"]["bytes"]
    carried_intact(lab, uni, server, server_ip, 5301)
    carried_intact(lab, server, uni, rg_ip, 5302)
    lab.stop(capture)
    rows = [line.split("\t") for line in lab.log("tshark.log").splitlines() if "\t" in line]
    assert len(rows) > 100, lab.log("tshark.log")[-2000:]
    assert {row[0] for row in rows} == {f"{S_TAG},{C_TAG}"}      # the S-tag over the C-tag, every one
    longest = max(int(row[1]) for row in rows)
    counters = dataplane(process)
    rg = counters["interfaces"][uni]
    uni_counted = next(iter(counters["unis"].values()))
    if offload == "auto":
        assert longest > 1522 and rg["offloads"]
        # the pipeline counts segments: more than the interface read
        assert uni_counted["rx_frames"] > rg["rx_frames"]
    else:
        assert longest <= 1522 and rg["offloads"] == 0
        assert uni_counted["rx_frames"] == rg["rx_frames"]
    assert rg["dropped"] == dropped_before[uni]
    assert counters["interfaces"][f"{p}nniu"]["dropped"] == dropped_before[f"{p}nniu"]
