"""The built-in adapter's TT and DT workflows with real traffic: `twistd oltsim --adapter builtin --services tt|dt`
at OLT id 10 with TAP interfaces, real tools in network namespaces.

- TT, p-bits: mausezahn (Debian's netsniff-ng) sends from the RG's interface frames tagged as the RG tags each
  service (`-Q <p>:<vid>`); `tcpdump -e` on the trunk NNI shows each service's S-tag over its C-tag with the p-bits
  the flows say (VoIP's 7 whatever the RG sent, HSIA's copied), and the OpenOLT GEM statistics count each frame on
  its service's GEM port (the 802.1p mapper's choice).
- TT, DHCP: a dhclient behind the VoIP VLAN gets its lease through the adapter's relay from dnsmasq behind the
  trunk's VoIP tags.
- TT, multicast: Debian's iperf 2 joins a group in two UNI namespaces or one (`iperf -s -u -B <group>`: the
  kernel's IGMP report, under the VoD VLAN 55) and sends the stream from the BNG's namespace into the trunk NNI on
  the multicast VLAN 550 (`iperf -c <group> -u -T 32`): the UNI that joined gets it, the other nothing, and none
  after the leave.
- DT: dhclient behind the RG's own VLAN gets a lease from dnsmasq behind the untagged NNI, with no EAPOL and no
  DHCP trap flow, and ping answers; the trunk shows the UNI's S-tag over the RG's VLAN.

This kernel has no 802.1Q sub-interfaces (nor bridge VLAN filtering, nor tc's vlan action): where an RG or the BNG
needs a VLAN, tests/integration/vlanport.py relays between a veth (the IP stack) and the TAP, pushing and popping
the tags. Needs root, /dev/net/tun, `ip netns`, and the Debian packages (installed only with OLTSIM_TEST_INSTALL=1,
else the tests skip with the reason).
"""
from __future__ import annotations

import re
import time

import grpc
import pytest
from voltha_protos import openolt_pb2, openolt_pb2_grpc

import vlanport
from netlab import Lab, lab_for, run, _which
from test_daemon import daemon  # noqa: F401 - the fixture
from test_dataplane import dataplane, dataplane_options, serve_dhcp, wait_for

pytestmark = pytest.mark.dataplane

GROUP = "232.1.2.3"
FRAMES = 20


@pytest.fixture
def lab(tmp_path):
    """A Lab with dnsmasq, dhclient, ping, mausezahn, tcpdump and iperf 2; skips when it cannot be had."""
    yield from lab_for(tmp_path, "dnsmasq", "dhclient", "ping", "mausezahn", "tcpdump", "iperf")


def flows(process) -> list[dict]:
    status, body = process.rest_get("/v1/olt/flows")
    assert status == 200, body
    return body["flows"]


def upstream_gem(process, c_tag: int) -> int:
    """The GEM port of the upstream forwarding flow of C-tag `c_tag`."""
    return next(fl["gemport_id"] for fl in flows(process) if fl["flow_type"] == "upstream"
                and fl["classifier"].get("o_vid") == c_tag and fl["action"].get("cmd", {}).get("add_outer_tag"))


def gem_rx(process, onu_id: int, gem: int) -> int:
    with grpc.insecure_channel(f"127.0.0.1:{process.ports['openolt']}") as channel:
        stats = openolt_pb2_grpc.OpenoltStub(channel).GetGemPortStatistics(
            openolt_pb2.OnuPacket(intf_id=0, onu_id=onu_id, gemport_id=gem), timeout=10)
    return stats.rx_packets


def tcpdump(lab: Lab, netns: str | None, interface: str, log: str, *expression: str):
    """tcpdump -e on `interface` (in `netns`), line-buffered into `log`, once it listens."""
    process = lab.start(netns, _which("tcpdump"), "-e", "-n", "-l", "-U", "-i", interface, *expression, log=log)
    wait_for("tcpdump listening", lambda: "listening on" in lab.log(log), 30, lambda: lab.log(log))
    return process


def mausezahn(netns: str, interface: str, tags: str, count: int = FRAMES) -> None:
    """`count` UDP frames from the RG's interface, tagged `tags` (mausezahn's -Q, `<p>:<vid>`)."""
    run("ip", "netns", "exec", netns, _which("mausezahn"), interface, "-q", "-c", str(count), "-d", "5msec",
        "-b", "02:00:00:00:00:01", "-A", "10.99.0.2", "-B", "10.99.0.1", "-Q", tags, "-t", "udp",
        "sp=4000,dp=4001", timeout=60)


def test_tt_each_services_tags_and_p_bits_on_the_trunk_and_its_gem_port(lab, daemon):
    """TT at OLT id 10, one bound UNI: the RG's VoIP frames (VLAN 65, p-bit 0 and 3) leave the trunk as `vlan 333, p
    7` over `vlan 444, p 7` (SADIS's VoIP tags and priority), its HSIA frames (VLAN 35, p-bit 3) as `vlan 900, p 3`
    over `vlan 900, p 3` (no priority in SADIS: the RG's copied), its VoD frames (VLAN 55) as 555 p5 over 55 p5;
    GetGemPortStatistics counts the VoIP frames on the VoIP GEM port and the HSIA frames on the HSIA one. From the
    trunk, 333 p7 over 444 p0 reaches the RG as VLAN 65 p7 (the flow remarks the inner p-bit)."""
    p = lab.prefix
    serial, uni_ns = "BBSM000a0001", f"{p}u0-1-0"
    process = daemon(*dataplane_options(lab, "--olt-id", "10", "--pon", "1", "--onu", "1", "--uni", "1",
                                        "--uni-interfaces", "all", "--services", "tt"))
    process.wait_serving()
    lab.wait_link(f"{p}nni")
    onu_id = wait_for("the ONU's activation", lambda: process.rest_get(f"/v1/olt/onus/{serial}")[1].get("ID"))
    wait_for("the VoIP forwarding flows", lambda: any(fl["flow_type"] == "upstream" and
                                                      fl["classifier"].get("o_vid") == 444 for fl in flows(process)))
    run("ip", "-n", uni_ns, "link", "set", "dev", uni_ns, "up")
    lab.wait_link(uni_ns, uni_ns)
    wait_for("the UNI's link", lambda: "LOWER_UP" in run("ip", "-n", uni_ns, "link", "show", uni_ns).stdout, 30)
    capture = tcpdump(lab, None, f"{p}nni", "trunk.log", "vlan")
    mausezahn(uni_ns, uni_ns, "0:65")
    mausezahn(uni_ns, uni_ns, "3:65")
    mausezahn(uni_ns, uni_ns, "3:35")
    mausezahn(uni_ns, uni_ns, "0:55")

    def counted(pattern: str) -> int:
        return len(re.findall(pattern, lab.log("trunk.log")))

    # the tags and priorities as oltsim's SADIS names them to ONOS (no priority: the RG's p-bit, 3 here)
    status, sadis = process.rest_get(f"/v2/subscribers/{serial}-1", surface="sadis")
    assert status == 200, sadis
    tags = {entry["serviceName"]: entry for entry in sadis["uniTagList"]}
    patterns = {name: (rf"vlan {tags[name]['ponSTag']}, p {tags[name].get('usPonSTagPriority', 3)}, ethertype "
                       rf"802\.1Q[^,]*, vlan {tags[name]['ponCTag']}, p {tags[name].get('usPonCTagPriority', 3)},")
                for name in ("voip", "hsia", "vod")}
    assert patterns["voip"].startswith("vlan 333, p 7,") and "vlan 444, p 7," in patterns["voip"]
    wanted = {"voip": 2 * FRAMES, "hsia": FRAMES, "vod": FRAMES}
    wait_for("every frame on the trunk", lambda: all(counted(patterns[k]) >= n for k, n in wanted.items()), 30,
             lambda: lab.log("trunk.log")[-3000:])
    lab.stop(capture)
    assert {k: counted(pattern) for k, pattern in patterns.items()} == wanted, lab.log("trunk.log")[-3000:]
    assert counted(r"vlan 333, p [0-6],") == 0
    voip_gem, hsia_gem = upstream_gem(process, 444), upstream_gem(process, 900)
    assert voip_gem != hsia_gem
    assert gem_rx(process, onu_id, voip_gem) == 2 * FRAMES
    assert gem_rx(process, onu_id, hsia_gem) == FRAMES

    # Downstream the VoIP flow remarks the C-tag's p-bit to the upstream priority (ONOS does not trust the BNG's):
    # the BNG's 333 p7 over 444 p0 reaches the RG as VLAN 65 p7; 333 p0 is not VoIP's downstream priority (no-flow)
    at_rg = tcpdump(lab, uni_ns, uni_ns, "rg.log", "vlan")
    rg_mac = run("ip", "-n", uni_ns, "-br", "link", "show", "dev", uni_ns).stdout.split()[2]
    before = dataplane(process)["nni"]["dropped"].get("no-flow", 0)
    for stack in ("7:333,0:444", "0:333,0:444"):
        run(_which("mausezahn"), f"{p}nni", "-q", "-c", str(FRAMES), "-d", "5msec", "-a", "02:00:00:00:00:01",
            "-b", rg_mac, "-A", "10.99.0.1", "-B", "10.99.0.2", "-Q", stack, "-t", "udp", "sp=4001,dp=4000",
            timeout=60)
    wait_for("the VoIP frames at the RG", lambda: len(re.findall(r"vlan 65, p 7,", lab.log("rg.log"))) >= FRAMES,
             30, lambda: lab.log("rg.log")[-2000:])
    lab.stop(at_rg)
    assert len(re.findall(r"vlan 65, p [0-6],", lab.log("rg.log"))) == 0, lab.log("rg.log")[-2000:]
    assert dataplane(process)["nni"]["dropped"].get("no-flow", 0) >= before + FRAMES


@pytest.mark.parametrize("server", ["trunk", "untagged"])
def test_tt_voip_client_gets_its_lease_through_the_dhcp_relay_under_its_services_tags(lab, daemon, server):
    """TT, one bound UNI: a dhclient behind the RG's VoIP VLAN 65, sending from the VoIP service's MAC, gets a lease
    from dnsmasq at the BNG behind the trunk's 333/444 (vlanport.py both sides), or behind the untagged NNI: its
    DHCP is trapped (VoIP's trap flow, p-bit 7) and relayed with the S-tag, the answer trapped on the NNI and sent
    back to the UNI, and the VoIP service shows the DHCP ack."""
    p = lab.prefix
    serial, uni_ns = "BBSM000a0001", f"{p}u0-1-0"
    process = daemon(*dataplane_options(lab, "--olt-id", "10", "--pon", "1", "--onu", "1", "--uni", "1",
                                        "--uni-interfaces", "all", "--services", "tt"))
    process.wait_serving()
    wait_for("the VoIP DHCP trap flow", lambda: any(fl["classifier"].get("src_port") == 68 and
                                                    fl["classifier"].get("o_vid") == 444 for fl in flows(process)))
    if server == "trunk":
        bng = lab.netns(f"{p}bng")
        lab.wait_link(f"{p}nni")
        lab.move(f"{p}nni", bng)
        vlanport.start(lab, bng, f"{p}nni", f"{p}bg", "333:7,444:7", address="10.210.0.1/16")
        lab.dnsmasq(bng, f"{p}bg", "10.210.1.1", "10.210.1.254")
    else:
        serve_dhcp(lab, 210)
    voip = next(s for s in process.rest_get(f"/v1/olt/onus/{serial}")[1]["unis"][0]["services"] if s["Name"] == "voip")
    lab.wait_link(uni_ns, uni_ns)
    run("ip", "-n", uni_ns, "link", "set", "dev", uni_ns, "up")
    vlanport.start(lab, uni_ns, uni_ns, f"{p}rg", "65:0", mac=voip["HwAddress"])
    lab.dhclient(uni_ns, f"{p}rg")
    assert lab.wait_address(uni_ns, f"{p}rg").startswith("10.210.1.")
    wait_for("the VoIP service's DHCP ack", lambda: next(
        s for s in process.rest_get(f"/v1/olt/onus/{serial}")[1]["unis"][0]["services"]
        if s["Name"] == "voip")["DhcpState"] == "dhcp_ack_received", 30)


def iperf_server(lab: Lab, netns: str, interface: str):
    """iperf 2 receiving `GROUP` on `interface` in `netns` (the kernel joins: its IGMP report goes out there)."""
    run("ip", "-n", netns, "route", "add", "224.0.0.0/4", "dev", interface)
    return lab.start(netns, _which("iperf"), "-s", "-u", "-B", GROUP, "-i", "1", log=f"{netns}.iperf.log")


def send_stream(lab: Lab, netns: str, seconds: int = 3) -> None:
    run("ip", "netns", "exec", netns, _which("iperf"), "-c", GROUP, "-u", "-T", "32", "-b", "500K", "-l", "500",
        "-t", str(seconds), timeout=seconds + 30)


def uni_tx(process, serial: str) -> int:
    return dataplane(process)["unis"][f"{serial}/0"]["tx_frames"]


def test_tt_multicast_reaches_the_uni_that_joined_only_and_none_after_the_leave(lab, daemon):
    """TT, two bound UNIs on two ONUs, each RG behind its VoD VLAN 55 (vlanport.py, untagged traffic passed: the
    ONU delivers multicast without the VLAN); the BNG on the trunk behind VLAN 550. iperf joins the group on the
    first UNI only: the stream sent from the BNG reaches it (iperf counts the datagrams), the second UNI gets none
    of it; iperf stopped (the kernel's leave), a second stream reaches neither and the NNI counts it as
    no-member."""
    p = lab.prefix
    first, second = ("BBSM000a0001", f"{p}u0-1-0"), ("BBSM000a0002", f"{p}u0-2-0")
    process = daemon(*dataplane_options(lab, "--olt-id", "10", "--pon", "1", "--onu", "2", "--uni", "1",
                                        "--uni-interfaces", "all", "--services", "tt"))
    process.wait_serving()
    wait_for("the multicast flow", lambda: any(fl["flow_type"] == "multicast" for fl in flows(process)))
    wait_for("both IGMP trap flows", lambda: sum(1 for fl in flows(process) if fl["classifier"].get("ip_proto") == 2)
             == 2)
    bng = lab.netns(f"{p}bng")
    lab.wait_link(f"{p}nni")
    lab.move(f"{p}nni", bng)
    vlanport.start(lab, bng, f"{p}nni", f"{p}bg", "550:5", address="10.99.0.1/16")
    run("ip", "-n", bng, "route", "add", "224.0.0.0/4", "dev", f"{p}bg")
    for n, (serial, uni_ns) in enumerate((first, second)):
        lab.wait_link(uni_ns, uni_ns)
        run("ip", "-n", uni_ns, "link", "set", "dev", uni_ns, "up")
        vlanport.start(lab, uni_ns, uni_ns, f"{p}rg", "55:0", address=f"10.99.1.{n + 1}/16", native=True)
    receiver = iperf_server(lab, first[1], f"{p}rg")
    run("ip", "-n", second[1], "route", "add", "224.0.0.0/4", "dev", f"{p}rg")
    wait_for("the join snooped", lambda: dataplane(process)["packet_ins"] > 0, 30)
    time.sleep(1.0)
    before = (uni_tx(process, first[0]), uni_tx(process, second[0]))
    send_stream(lab, bng)
    wait_for("iperf's report", lambda: "datagrams" in lab.log(f"{first[1]}.iperf.log") or
             re.search(r"\d+/\s*\d+", lab.log(f"{first[1]}.iperf.log")), 15, lambda: lab.log(f"{first[1]}.iperf.log"))
    after = (uni_tx(process, first[0]), uni_tx(process, second[0]))
    got = after[0] - before[0]
    assert got >= 300, (before, after, lab.log(f"{first[1]}.iperf.log"))   # 500 kbit/s of 500 octets for 3 s: 375
    assert after[1] == before[1], (before, after)
    report = lab.log(f"{first[1]}.iperf.log")
    received = [int(m.group(2)) - int(m.group(1)) for m in re.finditer(r"(\d+)/\s*(\d+) \(", report)]
    assert received and max(received) > 0, report
    lab.stop(receiver)                       # the kernel leaves the group
    time.sleep(1.0)
    dropped_before = dataplane(process)["nni"]["dropped"].get("no-member", 0)
    before = (uni_tx(process, first[0]), uni_tx(process, second[0]))
    send_stream(lab, bng, 2)
    counters = dataplane(process)
    after = (uni_tx(process, first[0]), uni_tx(process, second[0]))
    # none of the stream's 250 datagrams (the first UNI may get a frame of the kernels' own meanwhile: an ARP)
    assert after[0] - before[0] <= 2 and after[1] == before[1], (before, after)
    assert counters["nni"]["dropped"].get("no-member", 0) >= dropped_before + 200, counters["nni"]


def test_dt_rg_gets_a_lease_without_eapol_under_its_own_vlan_and_the_unis_s_tag(lab, daemon):
    """DT at OLT id 10: no EAPOL and no DHCP trap flow is installed; the RG behind its own VLAN 7 (vlanport.py)
    gets a lease from dnsmasq behind the untagged NNI and pings it; the trunk shows the UNI's S-tag over VLAN 7."""
    p = lab.prefix
    serial, uni_ns = "BBSM000a0001", f"{p}u0-1-0"
    process = daemon(*dataplane_options(lab, "--olt-id", "10", "--pon", "1", "--onu", "1", "--uni", "1",
                                        "--uni-interfaces", "all", "--services", "dt"))
    process.wait_serving()
    _, server_ip = serve_dhcp(lab, 209)
    wait_for("the forwarding flows", lambda: any(fl["flow_type"] == "downstream" and fl.get("onu_id", -1) > 0
                                                 for fl in flows(process)))
    installed = flows(process)
    assert not [fl for fl in installed if fl["classifier"].get("eth_type") in (0x888E, 0x0800)], installed
    s_tag = process.rest_get(f"/v1/olt/onus/{serial}")[1]["unis"][0]["services"][0]["STag"]
    lab.wait_link(uni_ns, uni_ns)
    run("ip", "-n", uni_ns, "link", "set", "dev", uni_ns, "up")
    vlanport.start(lab, uni_ns, uni_ns, f"{p}rg", "7:0")
    capture = tcpdump(lab, None, f"{p}nni", "trunk.log", "vlan")
    lab.dhclient(uni_ns, f"{p}rg")
    address = lab.wait_address(uni_ns, f"{p}rg")
    assert address.startswith("10.209.1.")
    ping = run("ip", "netns", "exec", uni_ns, "ping", "-c", "3", "-i", "0.2", "-W", "2", server_ip, check=False)
    assert ping.returncode == 0, ping.stdout + ping.stderr
    wait_for("the pings on the trunk", lambda: re.search(rf"vlan {s_tag}, p 0, ethertype 802\.1Q[^,]*, vlan 7, p 0,"
                                                         r".*ICMP echo request", lab.log("trunk.log")), 10,
             lambda: lab.log("trunk.log")[-2000:])
    lab.stop(capture)
