"""Real subscriber traffic through the simulated PON: `twistd oltsim --adapter builtin` with TAP
interfaces, Debian's dnsmasq on the untagged NNI interface (in a namespace of its own), and real clients in UNI
namespaces: wpa_supplicant (wired driver, EAP-MD5) authenticates, dhclient gets a lease, ping reaches the server,
tshark on the NNI trunk sees the S-tag and C-tag the services name; 64 UNIs at 4x16 get 64 leases from one dnsmasq;
a VLAN rule changed by the test drops the frames and counts them.

Needs root, /dev/net/tun and `ip netns`; the Debian packages are installed only with OLTSIM_TEST_INSTALL=1
(tests/integration/netlab.py), else the tests skip with the reason. Every name starts with a random prefix of the
run (--interface-prefix), and every process and namespace a test starts is stopped and removed, on failure too.
"""
from __future__ import annotations

import http.client
import json
import sys
import subprocess
import time

import grpc
import pytest
from google.protobuf import json_format
from voltha_protos import openolt_pb2, openolt_pb2_grpc

from netlab import Lab, lab_for, run
from test_daemon import daemon  # noqa: F401 - the fixture

pytestmark = pytest.mark.dataplane

EAP_OK = "eap_response_success_received"
DHCP_OK = "dhcp_ack_received"
WAIT = 60.0
NO_EAPOL_SERVICES = """\
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


@pytest.fixture
def lab(tmp_path):
    """A Lab (netlab.Lab) with dnsmasq, dhclient, wpa_supplicant, tshark and ping; skips when it cannot be had. Tests
    ask for it before `daemon`, so that oltsim stops (removing what it made) before the lab is taken down."""
    yield from lab_for(tmp_path, "dnsmasq", "dhclient", "wpa_supplicant", "tshark", "ping")


def dataplane_options(lab: Lab, *more: str) -> list[str]:
    p = lab.prefix
    return ["--adapter", "builtin", "--uni-netns", "--interface-prefix", p, "--nni-interface", f"{p}nni",
            "--nni-untagged-interface", f"{p}nniu", *more]


def serve_dhcp(lab: Lab, subnet: int) -> tuple[str, str]:
    """Move the untagged NNI interface into a server namespace, address it 10.<subnet>.0.1/16 and start dnsmasq on
    it; (namespace, server address)."""
    server = lab.netns(f"{lab.prefix}srv")
    lab.wait_link(f"{lab.prefix}nniu")
    lab.move(f"{lab.prefix}nniu", server, f"10.{subnet}.0.1/16")
    lab.dnsmasq(server, f"{lab.prefix}nniu", f"10.{subnet}.1.1", f"10.{subnet}.1.254")
    return server, f"10.{subnet}.0.1"


def wait_for(what: str, predicate, timeout: float = WAIT, explain=lambda: ""):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = predicate()
        if found:
            return found
        time.sleep(0.2)
    raise AssertionError(f"{what} did not happen within {timeout:g} s {explain()}")


def service_of(process, serial: str, uni_id: int) -> dict:
    status, body = process.rest_get(f"/v1/olt/onus/{serial}")
    assert status == 200, body
    uni = next(u for u in body["unis"] if u["ID"] == uni_id)
    return uni["services"][0]


def flows_of(process, onu_id: int, uni_id: int) -> list[dict]:
    status, body = process.rest_get("/v1/olt/flows")
    assert status == 200, body
    return [flow for flow in body["flows"] if flow.get("onu_id") == onu_id and flow.get("uni_id", 0) == uni_id]


def dataplane(process) -> dict:
    status, body = process.rest_get("/v1/dataplane")
    assert status == 200, body
    return body


def test_a_real_supplicant_and_dhcp_client_on_a_uni_are_authenticated_leased_tagged_and_dropped_when_a_rule_changes(
        lab, daemon, tmp_path):
    """OLT id 10, 16 ONUs on the PON, the second UNI of the third ONU bound: wpa_supplicant authenticates with EAP-MD5
    against the built-in authenticator (its EAPOL reaches the adapter as packet indications; the service shows EAP
    success), dhclient gets a lease from dnsmasq behind the untagged NNI, ping to the server answers, and tshark on
    the NNI trunk sees the service's S-tag over its C-tag, and the pings are in the capture ring
    (--capture-data-frames). Then the test replaces the UNI's upstream HSIA flow with
    one for another C-tag: ping fails, the drops are counted at the UNI and no frame more leaves on the NNI."""
    p = lab.prefix
    serial, uni_id = "BBSM000a0003", 1
    uni_ns = f"{p}u0-3-1"
    process = daemon(*dataplane_options(lab, "--olt-id", "10", "--pon", "1", "--onu", "16", "--uni", "2",
                                        "--uni-interfaces", f"{serial}/{uni_id}", "--eap-secret", "s3cret",
                                        "--capture-data-frames"))
    process.wait_serving()
    server, server_ip = serve_dhcp(lab, 201)
    trunk = tmp_path / "trunk.pcapng"
    tshark = lab.start(None, "tshark", "-i", f"{p}nni", "-w", str(trunk), log="tshark.log")
    wait_for("tshark capturing", lambda: "Capturing on" in lab.log("tshark.log"), 30,
             lambda: lab.log("tshark.log"))
    onu_id = wait_for("the ONU's activation", lambda: process.rest_get(f"/v1/olt/onus/{serial}")[1].get("ID"))
    wait_for("the EAPOL trap flow", lambda: any(f["classifier"]["eth_type"] == 0x888E
                                                for f in flows_of(process, onu_id, uni_id)))
    lab.wpa_supplicant(uni_ns, uni_ns, "user", "s3cret")
    wait_for("EAP success", lambda: service_of(process, serial, uni_id)["EapolState"] == EAP_OK,
             explain=lambda: lab.log(f"{uni_ns}.wpa.log")[-3000:] + process.log[-3000:])
    assert "CTRL-EVENT-EAP-SUCCESS" in lab.log(f"{uni_ns}.wpa.log")
    assert dataplane(process)["packet_ins"] >= 2   # EAPOL-Start, Identity, MD5 response: trapped to the adapter
    lab.dhclient(uni_ns, uni_ns)
    address = lab.wait_address(uni_ns, uni_ns)
    assert address.startswith("10.201.1.")
    wait_for("DHCP ack on the service", lambda: service_of(process, serial, uni_id)["DhcpState"] == DHCP_OK)
    ping = run("ip", "netns", "exec", uni_ns, "ping", "-c", "3", "-i", "0.2", "-W", "2", server_ip, check=False)
    assert ping.returncode == 0, ping.stdout + ping.stderr
    svc = service_of(process, serial, uni_id)
    lab.stop(tshark)
    read = run("tshark", "-r", str(trunk), "-Y", "icmp", "-T", "fields", "-e", "vlan.id", timeout=60)
    assert f"{svc['STag']},{svc['CTag']}" in read.stdout.split(), read.stdout
    assert svc["CTag"] != service_of(process, "BBSM000a0001", 0)["CTag"]   # its own C-tag, not the first UNI's
    # --capture-data-frames: the pings are in the capture ring too, as the ONU's frames
    ring = tmp_path / "ring.pcapng"
    connection = http.client.HTTPConnection("127.0.0.1", process.ports["rest-v1"], timeout=30)
    connection.request("GET", f"/v1/capture?since=all&duration=0&onu={serial}")
    ring.write_bytes(connection.getresponse().read())
    connection.close()
    icmp = run("tshark", "-r", str(ring), "-Y", "icmp", "-T", "fields", "-e", "ip.src", timeout=60)
    assert address in icmp.stdout.split(), icmp.stdout

    # oltsimctl dataplane: the UNI's row from the daemon's gRPC port
    table = run(sys.executable, "-m", "oltsim.ctl.oltsimctl", "--server", f"127.0.0.1:{process.ports['grpc-v1']}",
                "dataplane", timeout=30)
    assert any(line.split()[0] == f"{serial}/{uni_id}" for line in table.stdout.splitlines()), table.stdout

    # GetGemPortStatistics (the adapter's read for voltctl's onu_alloc_gem_from_olt): the HSIA GEM port's flows,
    # upstream as received, downstream as sent, as GET /v1/dataplane counts them per flow
    flows = flows_of(process, onu_id, uni_id)
    gem = next(f["gemport_id"] for f in flows if f["flow_type"] == "upstream" and f["action"]["cmd"]["add_outer_tag"])

    def on_gem(counters: dict, flow_type: str) -> int:
        return sum(counters["flows"].get(f"{f.get('access_intf_id', 0)}/{f['flow_id']}/{flow_type}", {})
                   .get("frames", 0) for f in flows if f["flow_type"] == flow_type and f.get("gemport_id") == gem)
    first = dataplane(process)
    with grpc.insecure_channel(f"127.0.0.1:{process.ports['openolt']}") as channel:
        stats = openolt_pb2_grpc.OpenoltStub(channel).GetGemPortStatistics(
            openolt_pb2.OnuPacket(intf_id=0, onu_id=onu_id, gemport_id=gem), timeout=10)
    last = dataplane(process)
    assert stats.gemport_id == gem and stats.rx_packets >= 3 and stats.tx_packets >= 3, stats
    assert on_gem(first, "upstream") <= stats.rx_packets <= on_gem(last, "upstream"), (stats, first["flows"])
    assert on_gem(first, "downstream") <= stats.tx_packets <= on_gem(last, "downstream"), (stats, first["flows"])

    # A changed VLAN rule: the upstream HSIA flow now wants another C-tag; the UNI's frames match no flow.
    hsia = next(f for f in flows_of(process, onu_id, uni_id)
                if f["flow_type"] == "upstream" and f["action"]["cmd"]["add_outer_tag"])
    hsia["classifier"]["o_vid"] = svc["CTag"] + 1
    with grpc.insecure_channel(f"127.0.0.1:{process.ports['openolt']}") as channel:
        openolt_pb2_grpc.OpenoltStub(channel).FlowAdd(
            json_format.ParseDict(hsia, openolt_pb2.Flow(), ignore_unknown_fields=True), timeout=10)
    before = dataplane(process)
    ping = run("ip", "netns", "exec", uni_ns, "ping", "-c", "3", "-i", "0.2", "-W", "1", server_ip, check=False)
    assert ping.returncode != 0, ping.stdout
    after = dataplane(process)
    key = f"{serial}/{uni_id}"
    assert after["unis"][key]["dropped"].get("no-flow", 0) >= before["unis"][key]["dropped"].get("no-flow", 0) + 3
    assert after["interfaces"][f"{p}nniu"]["tx_frames"] == before["interfaces"][f"{p}nniu"]["tx_frames"]


def test_64_unis_get_64_leases_from_one_dnsmasq(lab, daemon, tmp_path):
    """4 PONs x 16 ONUs, every UNI bound in a namespace of its own: 64 dhclients get 64 different leases from one
    dnsmasq on the untagged NNI, and every service shows DHCP ack; stopped with SIGTERM, oltsim exits 0 and leaves
    none of its interfaces or namespaces behind."""
    services = tmp_path / "services.yaml"
    services.write_text(NO_EAPOL_SERVICES)
    process = daemon(*dataplane_options(lab, "--pon", "4", "--onu", "16", "--uni", "1", "--uni-interfaces", "all",
                                        "--services", str(services)))
    process.wait_serving()
    serve_dhcp(lab, 202)
    unis = [f"{lab.prefix}u{pon}-{onu}-0" for pon in range(4) for onu in range(1, 17)]
    # the ONUs' VLAN operations and flows first: a client that starts before them waits for its retry
    wait_for("every ONU's forwarding flows", lambda: sum(
        1 for f in process.rest_get("/v1/olt/flows")[1]["flows"]
        if f["flow_type"] == "downstream" and f.get("onu_id", -1) > 0) == 64, 120)
    for name in unis:
        lab.dhclient(name, name)
    addresses = {name: lab.wait_address(name, name, timeout=120) for name in unis}
    assert len(set(addresses.values())) == 64, addresses
    status, body = process.rest_get("/v1/olt/onus")
    states = [s["DhcpState"] for onu in body["items"] for u in onu["unis"] for s in u["services"]]
    assert states.count(DHCP_OK) == 64, states
    # SIGTERM: exit 0, every interface and every namespace oltsim made gone
    process.process.terminate()
    assert process.wait_exit(30) == 0, process.log[-3000:]
    namespaces = run("ip", "netns", "list").stdout
    assert not [n for n in namespaces.split() if n.startswith(f"{lab.prefix}u")], namespaces
    assert f"{lab.prefix}nni" not in run("ip", "-br", "link").stdout


def test_a_taken_interface_name_is_refused_in_one_line_with_nothing_left(lab, daemon):
    """An interface of one of the names already there: oltsim exits 2 with one line naming it, and the namespaces
    and interfaces it made before it looked are gone (it made none: the names are checked first)."""
    p = lab.prefix
    run("ip", "tuntap", "add", "dev", f"{p}u0-1-1", "mode", "tap")
    try:
        process = daemon(*dataplane_options(lab, "--uni-interfaces", "all", "--uni", "2"))
        code = process.wait_exit(30)
        assert code == 2, process.log
        lines = [line for line in process.log.splitlines() if line.startswith("oltsim: ")]
        assert lines == [f"oltsim: UNI BBSM00000001/1: an interface named {p}u0-1-1 exists already (another "
                         f"oltsim? --interface-prefix keeps two apart)"], process.log
        assert run("ip", "netns", "list").stdout.count(p) == 0
        assert f"{p}u0-1-0" not in run("ip", "-br", "link").stdout
    finally:
        subprocess.run(["ip", "link", "delete", f"{p}u0-1-1"], capture_output=True, timeout=10)



def test_without_cap_net_admin_the_start_is_refused_in_one_line(tmp_path):
    """oltsim without CAP_NET_ADMIN (dropped from its bounding set by setpriv) and UNI interfaces asked for: exit 2
    with one line saying what is missing, before the reactor runs, and no namespace made."""
    import os
    import shutil
    from scripted_adapter import free_ports
    from test_daemon import LISTENERS, TWISTD, environment
    if not hasattr(os, "geteuid") or os.geteuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip("needs root and setpriv (util-linux)")
    prefix = f"c{os.getpid() % 0x1000:03x}"
    listen = [arg for name, port in zip(LISTENERS, free_ports(len(LISTENERS)))
              for arg in (f"--{name}", f"tcp:{port}:interface=127.0.0.1")]
    done = subprocess.run(["setpriv", "--bounding-set", "-net_admin", "--", *TWISTD, "-n", "--pidfile=", "oltsim",
                           *listen, "--uni-interfaces", "1", "--uni-netns", "--interface-prefix", prefix],
                          cwd=tmp_path, env=environment(), capture_output=True, text=True, timeout=60)
    output = done.stdout + done.stderr
    assert done.returncode == 2, output
    lines = [line for line in output.splitlines() if line.startswith("oltsim: ")]
    assert lines == ["oltsim: making TAP interfaces needs CAP_NET_ADMIN: run oltsim as root, or give it the "
                     "capability (setcap cap_net_admin+ep, or docker run --cap-add NET_ADMIN)"], output
    assert "Traceback" not in output
    assert prefix not in run("ip", "netns", "list").stdout


FLOOD = """
import socket, sys, time
sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
sock.bind((sys.argv[1], 0))
frame = b"\\xff" * 6 + b"\\x02\\x00\\x00\\x00\\x00\\x99" + b"\\x88\\xb5" + bytes(46)
end = time.monotonic() + float(sys.argv[2])
sent = 0
while time.monotonic() < end:
    for _ in range(1000):
        try:
            sock.send(frame)
            sent += 1
        except OSError:
            time.sleep(0.001)
print(sent)
"""


def test_a_flood_on_one_uni_starves_neither_another_uni_nor_the_control_plane(lab, daemon, tmp_path):
    """One UNI's RG sends frames as fast as it can (a raw socket in its namespace) while another UNI's dhclient
    takes a lease and pings the server and a HeartbeatCheck goes to the OpenOLT port every 100 ms: the lease comes,
    the pings answer, every heartbeat is answered, and what oltsim cannot take of the flood is dropped in the
    flooder's own queues (its TAP's in the kernel, its interface's in oltsim), none at the quiet UNI."""
    import threading

    services = tmp_path / "services.yaml"
    services.write_text(NO_EAPOL_SERVICES)
    process = daemon(*dataplane_options(lab, "--onu", "2", "--uni", "1", "--uni-interfaces", "all",
                                        "--services", str(services)))
    process.wait_serving()
    _, server_ip = serve_dhcp(lab, 205)
    flooder, quiet = f"{lab.prefix}u0-1-0", f"{lab.prefix}u0-2-0"
    wait_for("both ONUs' forwarding flows", lambda: sum(
        1 for f in process.rest_get("/v1/olt/flows")[1]["flows"]
        if f["flow_type"] == "downstream" and f.get("onu_id", -1) > 0) == 2)
    flood = lab.start(flooder, sys.executable, "-c", FLOOD, flooder, "20", log="flood.log")
    beats = {"ok": 0, "failed": 0}
    stop = threading.Event()

    def heartbeat():
        with grpc.insecure_channel(f"127.0.0.1:{process.ports['openolt']}") as channel:
            stub = openolt_pb2_grpc.OpenoltStub(channel)
            while not stop.wait(0.1):
                try:
                    stub.HeartbeatCheck(openolt_pb2.Empty(), timeout=5)
                    beats["ok"] += 1
                except grpc.RpcError:
                    beats["failed"] += 1

    beating = threading.Thread(target=heartbeat, daemon=True)
    beating.start()
    try:
        time.sleep(1.0)   # the flood is on
        lab.dhclient(quiet, quiet)
        lab.wait_address(quiet, quiet)
        ping = run("ip", "netns", "exec", quiet, "ping", "-c", "5", "-i", "0.2", "-W", "2", server_ip, check=False)
        assert ping.returncode == 0, ping.stdout + ping.stderr
        assert flood.poll() is None, "the flood ended before the other UNI was through: " + lab.log("flood.log")
    finally:
        stop.set()
        beating.join(10)
    assert beats["ok"] > 0 and beats["failed"] == 0, beats
    counters = dataplane(process)
    assert counters["interfaces"][flooder]["rx_frames"] > 10000, counters
    # what oltsim could not take stayed in the flooder's own queues: its TAP's (the kernel drops there: TX, seen
    # from the namespace) and its interface's in oltsim (queue-full); the quiet UNI lost nothing
    stats = run("ip", "-n", flooder, "-s", "-j", "link", "show", "dev", flooder).stdout
    kernel_dropped = json.loads(stats)[0]["stats64"]["tx"]["dropped"]
    assert kernel_dropped + counters["interfaces"][flooder]["dropped"].get("queue-full", 0) > 0, (stats, counters)
    assert not counters["interfaces"][quiet]["dropped"], counters


def rest_call(process, method: str, path: str) -> int:
    connection = http.client.HTTPConnection("127.0.0.1", process.ports["rest-v1"], timeout=10)
    try:
        connection.request(method, path)
        response = connection.getresponse()
        response.read()
        return response.status
    finally:
        connection.close()


def test_after_an_onu_power_cycle_the_real_supplicant_authenticates_again_and_traffic_resumes(lab, daemon):
    """The RG's link follows its UNI: the ONU shut down over REST takes the UNI interface's carrier down, powered on
    it comes back; wpa_supplicant authenticates again (the ONU's VLAN rule is EAPOL's 4091 again until then), the
    service shows EAP success, and ping through the same lease answers again."""
    p = lab.prefix
    serial, uni_ns = "BBSM00000001", f"{p}u0-1-0"
    process = daemon(*dataplane_options(lab, "--onu", "1", "--uni", "1", "--uni-interfaces", "all",
                                        "--reboot-delay", "1"))
    process.wait_serving()
    _, server_ip = serve_dhcp(lab, 206)
    wait_for("the EAPOL trap flow", lambda: any(f["classifier"]["eth_type"] == 0x888E
                                                for f in process.rest_get("/v1/olt/flows")[1]["flows"]))
    lab.wpa_supplicant(uni_ns, uni_ns, "user", "password")
    wait_for("EAP success", lambda: service_of(process, serial, 0)["EapolState"] == EAP_OK,
             explain=lambda: lab.log(f"{uni_ns}.wpa.log")[-3000:])
    lab.dhclient(uni_ns, uni_ns)
    lab.wait_address(uni_ns, uni_ns)
    assert run("ip", "netns", "exec", uni_ns, "ping", "-c", "2", "-W", "2", server_ip, check=False).returncode == 0

    def carrier() -> bool:
        return "NO-CARRIER" not in run("ip", "-n", uni_ns, "link", "show", "dev", uni_ns).stdout

    successes = lab.log(f"{uni_ns}.wpa.log").count("CTRL-EVENT-EAP-SUCCESS")
    follows = "dataplane-carrier-unsupported" not in process.log   # TUNSETCARRIER needs Linux 5.0
    assert rest_call(process, "DELETE", f"/v1/olt/onus/{serial}") == 200
    if follows:
        wait_for("the UNI interface's carrier down", lambda: not carrier())
    assert rest_call(process, "POST", f"/v1/olt/onus/{serial}") == 200
    if follows:
        wait_for("the carrier back", carrier)
    wait_for("a second EAP success", lambda: lab.log(f"{uni_ns}.wpa.log").count("CTRL-EVENT-EAP-SUCCESS") > successes,
             explain=lambda: lab.log(f"{uni_ns}.wpa.log")[-3000:])
    wait_for("EAP success on the service", lambda: service_of(process, serial, 0)["EapolState"] == EAP_OK)
    wait_for("ping through the same lease", lambda: run("ip", "netns", "exec", uni_ns, "ping", "-c", "1", "-W", "1",
                                                       server_ip, check=False).returncode == 0, 30)
