"""One subscriber cannot reach, cut off or impersonate another (docs/dataplane.md, "Isolation and security"), shown
on real interfaces: `twistd oltsim --adapter builtin` at OLT id 10 with two bound UNIs on different ONUs (RG A on
BBSM000a0001, RG B on BBSM000a0002, each in its own namespace with wpa_supplicant and dhclient), Debian's dnsmasq
behind the untagged NNI, the tagged NNI in the host's namespace; RG A's attacks are raw frames from an AF_PACKET
socket in its namespace, and tshark on the interfaces says where they went.

The kernel's own frames stay off the counts: the UNI and server namespaces are made by the test, with IPv6 off for
every interface that comes into them, before oltsim moves its interfaces there and sets them up; counts asserted
exactly are of drop reasons only the test's frames can cause, the others are compared with >=. Needs root,
/dev/net/tun and `ip netns`; the Debian packages are installed only with OLTSIM_TEST_INSTALL=1
(tests/integration/netlab.py), else the tests skip with the reason.
"""
from __future__ import annotations

import json
import os
import random
import re
import signal
import struct
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from netlab import Lab, _which, run
from oltsim.packets import frames as f
from tests.support.daemon import rss_bytes
from test_daemon import daemon  # noqa: F401 - the fixture
from test_dataplane import DHCP_OK, EAP_OK, dataplane, dataplane_options, lab, service_of, wait_for  # noqa: F401

pytestmark = pytest.mark.dataplane

SECRET = "s3cret"
#: an EtherType for the test's own frames (IEEE's local experimental one), which nothing else on the lab sends
EXPERIMENTAL = 0x88B5
#: the 802.1X PAE group address (a link-local group address: no bridge forwards it)
PAE_GROUP = bytes.fromhex("0180c2000003")
BROADCAST = b"\xff" * 6
#: seconds a capture may last at most (a test stops it before)
CAPTURE_BOUND = 45
#: seconds between oltsim having taken the last frame sent and a capture's stop
SETTLE = 0.5
#: frames sent at once in the flood: fewer than a TAP's queue holds (500), so that the kernel drops none
BATCH = 400

#: Sends frames out of an interface from an AF_PACKET socket: argv interface, a file of frames (each a 4-octet
#: length, then the frame), and a pause in seconds after every frame; prints how many were sent.
SEND = r"""
import socket, sys, time
interface, path, pause = sys.argv[1], sys.argv[2], float(sys.argv[3])
data, frames, i = open(path, "rb").read(), [], 0
while i < len(data):
    n = int.from_bytes(data[i:i + 4], "big")
    frames.append(data[i + 4:i + 4 + n])
    i += 4 + n
sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
sock.bind((interface, 0))
sent = 0
for frame in frames:
    for _ in range(1000):
        try:
            sock.send(frame)
            sent += 1
            break
        except OSError:
            time.sleep(0.001)
    if pause:
        time.sleep(pause)
print(sent)
"""


# ---- the lab --------------------------------------------------------------------------------------------------

@dataclass
class Rg:
    """One bound UNI and the RG in its namespace (named as the interface)."""
    serial: str
    name: str          # the interface and its namespace
    key: str           # SERIAL/UNI, as GET /v1/dataplane counts it
    mac: bytes = b""
    ip: str = ""


@dataclass
class Rig:
    """The daemon, its two RGs and the server behind the untagged NNI."""
    process: object
    lab: Lab
    a: Rg
    b: Rg
    server_ns: str
    server_nic: str
    server_ip: str
    server_mac: bytes
    trunk: str         # the tagged NNI interface, in the host's namespace


def quiet_netns(lab: Lab, name: str) -> str:
    """Make namespace `name` (removed at close) in which every interface made or moved there has IPv6 off from the
    start (no router solicitations, MLD reports or DAD probes of the kernel's own)."""
    lab.netns(name)
    for which in ("all", "default"):
        run("ip", "netns", "exec", name, "sysctl", "-q", "-w", f"net.ipv6.conf.{which}.disable_ipv6=1", check=False)
    return name


def link_mac(netns: str | None, interface: str) -> bytes:
    done = run("ip", *(["-n", netns] if netns else []), "-j", "link", "show", "dev", interface)
    return f.mac_bytes(json.loads(done.stdout)[0]["address"])


def start(lab: Lab, daemon, subnet: int) -> Rig:
    """oltsim at OLT id 10, one PON of two ONUs with one UNI each, both bound (RG A on the first ONU, RG B on the
    second), both NNI interfaces, dnsmasq on the untagged one (10.<subnet>.0.1/16); waits until both ONUs' EAPOL
    trap flows are in."""
    p = lab.prefix
    a = Rg("BBSM000a0001", f"{p}u0-1-0", "BBSM000a0001/0")
    b = Rg("BBSM000a0002", f"{p}u0-2-0", "BBSM000a0002/0")
    for rg in (a, b):
        quiet_netns(lab, rg.name)      # oltsim uses the namespace there is (and leaves it to the lab)
    server = quiet_netns(lab, f"{p}srv")
    process = daemon(*dataplane_options(lab, "--olt-id", "10", "--pon", "1", "--onu", "2", "--uni", "1",
                                        "--uni-interfaces", "all", "--eap-secret", SECRET))
    process.wait_serving()
    nic = f"{p}nniu"
    lab.wait_link(nic)
    lab.move(nic, server, f"10.{subnet}.0.1/16")
    lab.dnsmasq(server, nic, f"10.{subnet}.1.1", f"10.{subnet}.1.254")
    knob = Path(f"/proc/sys/net/ipv6/conf/{p}nni/disable_ipv6")
    if knob.exists():                  # the trunk stays in the host's namespace: its IPv6 off too, from now on
        knob.write_text("1")
    for rg in (a, b):
        lab.wait_link(rg.name, rg.name)
        rg.mac = link_mac(rg.name, rg.name)
    wait_for("both ONUs' EAPOL trap flows", lambda: sum(
        1 for flow in process.rest_get("/v1/olt/flows")[1]["flows"]
        if flow["classifier"].get("eth_type") == 0x888E and flow.get("onu_id", 0) > 0) >= 2)
    return Rig(process, lab, a, b, server, nic, f"10.{subnet}.0.1", link_mac(server, nic), f"{p}nni")


def authenticated(rig: Rig, *rgs: Rg) -> list:
    """wpa_supplicant in each RG's namespace (all at once) until each service shows EAP success; the supplicants'
    processes (each wpa_supplicant itself: ip netns exec runs it in its place)."""
    supplicants = [rig.lab.wpa_supplicant(rg.name, rg.name, "user", SECRET) for rg in rgs]
    for rg in rgs:
        wait_for(f"{rg.key}'s EAP success", lambda rg=rg: service_of(rig.process, rg.serial, 0)["EapolState"] == EAP_OK,
                 explain=lambda rg=rg: rig.lab.log(f"{rg.name}.wpa.log")[-2000:])
    return supplicants


def online(rig: Rig, *rgs: Rg) -> None:
    """Each RG authenticated, then leased by dnsmasq (dhclient in its namespace) with its service at DHCP ack."""
    authenticated(rig, *rgs)
    for rg in rgs:
        rig.lab.dhclient(rg.name, rg.name)
    for rg in rgs:
        rg.ip = rig.lab.wait_address(rg.name, rg.name)
        wait_for(f"{rg.key}'s DHCP ack", lambda rg=rg: service_of(rig.process, rg.serial, 0)["DhcpState"] == DHCP_OK)


def forwarding(rig: Rig, rg: Rg) -> None:
    """Wait (bounded) until the authenticated RG's frames are forwarded: its ONU's VLAN rule for the C-tag and its
    HSIA flows are in (an ordinary broadcast of the RG's leaves on the untagged NNI; the untagged NNI knows from
    then on under which tags the RG's MAC is found)."""
    probe = tagged(BROADCAST, rg.mac, [], EXPERIMENTAL, marked("probe"))

    def through() -> bool:
        before = dataplane(rig.process)["nni_untagged"]["tx_frames"]
        send(rig, rg, [probe])
        time.sleep(0.2)
        return dataplane(rig.process)["nni_untagged"]["tx_frames"] > before
    wait_for(f"{rg.key}'s frames forwarded", through, 30, lambda: json.dumps(dataplane(rig.process)["unis"][rg.key]))


def dropped(counters: dict, where: str, reason: str) -> int:
    """A drop counter of GET /v1/dataplane: `where` a UNI's SERIAL/UNI, or nni / nni_untagged."""
    row = counters["unis"][where] if "/" in where else counters[where]
    return row["dropped"].get(reason, 0)


def send(rig: Rig, side, frames: list[bytes], pause: float = 0.002) -> None:
    """The frames, from a raw socket, out of an RG's interface (`side` an Rg), the trunk ("trunk", from the host's
    namespace) or the server's ("server"), `pause` seconds apart; returns once oltsim has taken them all through
    its pipeline (its rx counter of that side: the kernel's queue of the TAP dropped none)."""
    if isinstance(side, Rg):
        netns, interface, row = side.name, side.name, ("unis", side.key)
    elif side == "trunk":
        netns, interface, row = None, rig.trunk, ("nni",)
    else:
        netns, interface, row = rig.server_ns, rig.server_nic, ("nni_untagged",)

    def taken() -> int:
        counters = dataplane(rig.process)
        for key in row:
            counters = counters[key]
        return counters["rx_frames"]
    first = taken()
    path = rig.lab.tmp / f"frames-{random.randrange(1 << 30)}.bin"
    path.write_bytes(b"".join(len(frame).to_bytes(4, "big") + frame for frame in frames))
    command = [*(["ip", "netns", "exec", netns] if netns else []), sys.executable, "-c", SEND, interface, str(path),
               str(pause)]
    done = run(*command, timeout=30 + len(frames) * (pause + 0.001))
    path.unlink()
    assert done.stdout.split() == [str(len(frames))], done.stdout + done.stderr
    wait_for(f"oltsim taking the {len(frames)} frames sent on {interface}", lambda: taken() >= first + len(frames), 20,
             lambda: f"{taken() - first} taken")


class Capture:
    """tshark on one interface (started, and capturing, when made), for at most CAPTURE_BOUND seconds."""

    def __init__(self, lab: Lab, netns: str | None, interface: str):
        self.lab = lab
        self.path = lab.tmp / f"{interface}.pcapng"
        self.log = f"{interface}.tshark.log"
        self.process = lab.start(netns, "tshark", "-i", interface, "-a", f"duration:{CAPTURE_BOUND}", "-w",
                                 str(self.path), log=self.log)
        wait_for(f"tshark capturing on {interface}", lambda: "Capturing on" in lab.log(self.log), 30,
                 lambda: lab.log(self.log))

    def frames(self) -> list[bytes]:
        """Stops the capture (the frames sent are through by then: `send` waited for them; their copies out
        of oltsim were written in the same turn) and returns the frames it holds, whole (tshark's snapshot length
        is 256 KiB)."""
        assert self.process.poll() is None, f"tshark ended before it was stopped: {self.lab.log(self.log)}"
        time.sleep(SETTLE)
        self.lab.stop(self.process)
        assert self.path.exists(), self.lab.log(self.log)
        return pcapng_frames(self.path)


def stopped(captures: dict) -> dict:
    """{name: frames} of each Capture, stopped."""
    return {name: capture.frames() for name, capture in captures.items()}


def pcapng_frames(path: Path) -> list[bytes]:
    """The packets of a pcapng file tshark wrote on this host (its byte order): each Enhanced Packet Block's data."""
    data, out, i = path.read_bytes(), [], 0
    while i + 12 <= len(data):
        block, length = struct.unpack_from("=II", data, i)
        if length < 12:
            raise AssertionError(f"{path}: a block of {length} octets at {i}")
        if block == 6:
            captured = struct.unpack_from("=I", data, i + 20)[0]
            out.append(data[i + 28:i + 28 + captured])
        i += length
    return out


def ethertype_of(frame: bytes) -> int:
    """The EtherType under a frame's VLAN tags (any TPID)."""
    at = 12
    while at + 4 <= len(frame) and int.from_bytes(frame[at:at + 2], "big") in (0x8100, 0x88A8, 0x9100):
        at += 4
    return int.from_bytes(frame[at:at + 2], "big")


def with_marker(frames: list[bytes], marker: str) -> list[bytes]:
    return [frame for frame in frames if marker.encode() in frame]


def tagged(dst: bytes, src: bytes, tags, ethertype: int, payload: bytes) -> bytes:
    """A frame with `tags` ((TPID, VID) pairs, outermost first), unpadded."""
    return dst + src + b"".join(struct.pack("!HH", tpid, vid) for tpid, vid in tags) + struct.pack(
        "!H", ethertype) + payload


def marked(marker: str) -> bytes:
    """A payload tshark finds (`frame contains "<marker>"`), 46 octets at least."""
    return marker.encode().ljust(46, b".")


def dhcp_frame(src: bytes, dst: bytes, src_ip: str, dst_ip: str, message: bytes) -> bytes:
    return f.build_ethernet(dst, src, f.ETH_IPV4, f.build_ipv4_udp(f.ip_bytes(src_ip), f.ip_bytes(dst_ip), 68, 67,
                                                                    message))


# ---- the tests ------------------------------------------------------------------------------------------------

def test_rg_a_sending_from_rg_bs_mac_gets_none_of_bs_traffic_and_b_keeps_its_ping(lab, daemon):
    """Both RGs authenticated and leased (B's MAC is B's subscriber's); A sends 20 frames from B's MAC (ARP requests
    as B for the server) while B pings the server behind the untagged NNI: no frame for B's MAC reaches A's
    interface, every ping of B's is answered during the spoofing and after it, and the 20 frames count as
    `mac-spoof` at A's UNI."""
    rig = start(lab, daemon, 211)
    a, b = rig.a, rig.b
    online(rig, a, b)
    at_a = Capture(lab, a.name, a.name)
    ping = lab.start(b.name, "ping", "-c", "40", "-i", "0.25", "-W", "2", rig.server_ip, log="b.ping.log")
    wait_for("B's first pings answered", lambda: "icmp_seq=4 " in lab.log("b.ping.log"), 20,
             lambda: lab.log("b.ping.log"))
    before = dataplane(rig.process)
    arp = struct.pack("!HHBBH6s4s6s4s", 1, 0x0800, 6, 4, 1, b.mac, f.ip_bytes(b.ip), bytes(6),
                      f.ip_bytes(rig.server_ip))
    send(rig, a, [f.build_ethernet(BROADCAST, b.mac, 0x0806, arp)] * 20, pause=0.1)
    after = dataplane(rig.process)
    ping.wait(30)
    assert "40 packets transmitted, 40 received" in lab.log("b.ping.log"), lab.log("b.ping.log")
    assert dropped(after, a.key, "mac-spoof") - dropped(before, a.key, "mac-spoof") == 20, (before, after)
    assert not dropped(after, b.key, "mac-spoof"), after
    assert [frame for frame in at_a.frames() if frame[0:6] == b.mac] == []
    again = run("ip", "netns", "exec", b.name, "ping", "-c", "3", "-i", "0.2", "-W", "2", rig.server_ip, check=False)
    assert again.returncode == 0, again.stdout + again.stderr


def test_a_dhcprelease_from_rg_a_for_rg_bs_lease_leaves_the_lease_in_place(lab, daemon):
    """Both RGs leased; A sends DHCPRELEASEs for B's lease (ciaddr and chaddr B's), three from B's MAC and three from
    its own: none reaches dnsmasq (its --log-dhcp log shows no release, its leases file still has B's lease), B keeps
    pinging, and the frames count at A's UNI, from B's MAC as `mac-spoof`, from A's own with B's chaddr as
    `dhcp-client`. B's own release then does reach dnsmasq (what the log would have shown)."""
    rig = start(lab, daemon, 212)
    a, b = rig.a, rig.b
    online(rig, a, b)
    leases = lab.tmp / f"{rig.server_ns}.leases"
    assert f.mac_str(b.mac) in leases.read_text(), leases.read_text()
    dnsmasq_log = f"{rig.server_ns}.dnsmasq.log"
    before = dataplane(rig.process)
    release = f.build_dhcp(f.BOOTREQUEST, random.randrange(1 << 32), b.mac,
                           [(53, bytes((f.DHCP_RELEASE,))), (54, f.ip_bytes(rig.server_ip))], ciaddr=f.ip_bytes(b.ip))
    as_b = dhcp_frame(b.mac, rig.server_mac, b.ip, rig.server_ip, release)
    as_a = dhcp_frame(a.mac, rig.server_mac, b.ip, rig.server_ip, release)
    send(rig, a, [as_b] * 3 + [as_a] * 3, pause=0.05)
    after = dataplane(rig.process)
    assert dropped(after, a.key, "mac-spoof") - dropped(before, a.key, "mac-spoof") == 3, (before, after)
    assert dropped(after, a.key, "dhcp-client") - dropped(before, a.key, "dhcp-client") == 3, (before, after)
    ping = run("ip", "netns", "exec", b.name, "ping", "-c", "5", "-i", "0.2", "-W", "2", rig.server_ip, check=False)
    assert ping.returncode == 0, ping.stdout + ping.stderr
    assert "DHCPRELEASE" not in lab.log(dnsmasq_log), lab.log(dnsmasq_log)[-3000:]
    assert f.mac_str(b.mac) in leases.read_text(), leases.read_text()
    assert service_of(rig.process, b.serial, 0)["DhcpState"] == DHCP_OK
    # B's own release goes through: dnsmasq logs it (the absence above is no blind spot)
    run("ip", "netns", "exec", b.name, _which("dhclient"), "-r", "-lf", str(lab.tmp / f"{b.name}.dhcp.leases"),
        "-pf", str(lab.tmp / f"{b.name}.dhclient.pid"), b.name, timeout=30)
    wait_for("dnsmasq logging B's own release", lambda: re.search(
        rf"DHCPRELEASE\(\S+\) {re.escape(b.ip)} {f.mac_str(b.mac)}", lab.log(dnsmasq_log)), 20,
        lambda: lab.log(dnsmasq_log)[-3000:])


def test_tags_of_tpid_0x88a8_and_0x9100_from_an_rg_and_from_the_nnis_reach_neither_a_uni_nor_an_nni(lab, daemon):
    """Both RGs authenticated, tshark on both UNIs and both NNIs. A sends frames tagged 0x88a8 and 0x9100 (alone,
    over or under 0x8100, with its own C-tag or B's tags) and with a third tag; the trunk sends frames for B under
    B's S-tag and C-tag with TPID 0x88a8 or 0x9100 for one of them, or with a third tag; the untagged NNI sends
    frames for B under B's tags with TPID 0x88a8 or 0x9100: none of them appears on another interface, and each is
    counted `tpid` where it came in (A's UNI, nni, nni_untagged). Frames of the same kinds tagged as they should be
    (0x8100, or untagged from an RG and the server) do get through: out of both NNIs, to B."""
    rig = start(lab, daemon, 213)
    a, b = rig.a, rig.b
    authenticated(rig, a, b)
    forwarding(rig, a)
    forwarding(rig, b)
    svc_a, svc_b = service_of(rig.process, a.serial, 0), service_of(rig.process, b.serial, 0)
    s_tag, c_a, c_b = svc_b["STag"], svc_a["CTag"], svc_b["CTag"]
    assert svc_a["STag"] == s_tag and c_a != c_b
    q, ad, old = 0x8100, 0x88A8, 0x9100
    captures = {"a": Capture(lab, a.name, a.name), "b": Capture(lab, b.name, b.name),
                "trunk": Capture(lab, None, rig.trunk), "server": Capture(lab, rig.server_ns, rig.server_nic)}
    before = dataplane(rig.process)
    from_rg = [tagged(BROADCAST, a.mac, tags, EXPERIMENTAL, marked("tpid-from-rg"))
               for tags in ([(ad, c_a)], [(old, c_a)], [(ad, s_tag), (q, c_a)], [(old, s_tag), (q, c_b)],
                            [(q, c_a), (ad, c_a)], [(q, s_tag), (q, c_a), (q, c_a)])]
    from_trunk = [tagged(b.mac, rig.server_mac, tags, EXPERIMENTAL, marked("tpid-from-trunk"))
                  for tags in ([(ad, s_tag), (q, c_b)], [(old, s_tag), (q, c_b)], [(q, s_tag), (ad, c_b)],
                               [(q, s_tag), (old, c_b)], [(q, s_tag), (q, c_b), (q, c_b)])]
    from_server = [tagged(b.mac, rig.server_mac, tags, EXPERIMENTAL, marked("tpid-from-server"))
                   for tags in ([(ad, c_b)], [(old, c_b)], [(ad, s_tag), (q, c_b)])]
    send(rig, a, from_rg * 3 + [tagged(BROADCAST, a.mac, [], EXPERIMENTAL, marked("ok-from-rg"))] * 2)
    send(rig, "trunk", from_trunk * 3 + [tagged(b.mac, rig.server_mac, [(q, s_tag), (q, c_b)], EXPERIMENTAL,
                                                marked("ok-from-trunk"))] * 2)
    send(rig, "server", from_server * 3 + [tagged(b.mac, rig.server_mac, [], EXPERIMENTAL,
                                                  marked("ok-from-server"))] * 2)
    after = dataplane(rig.process)
    seen = stopped(captures)
    for where, sent in ((a.key, len(from_rg) * 3), ("nni", len(from_trunk) * 3),
                        ("nni_untagged", len(from_server) * 3)):
        assert dropped(after, where, "tpid") - dropped(before, where, "tpid") == sent, (where, before, after)
    assert not dropped(after, b.key, "tpid"), after
    # each interface carries only the refused frames sent on it ...
    sent_on = {"a": "tpid-from-rg", "trunk": "tpid-from-trunk", "server": "tpid-from-server"}
    for name, frames in seen.items():
        for marker in ("tpid-from-rg", "tpid-from-trunk", "tpid-from-server"):
            if sent_on.get(name) != marker:
                assert with_marker(frames, marker) == [], (name, marker, with_marker(frames, marker)[:3])
    # ... and the well tagged ones where they go
    assert len(with_marker(seen["trunk"], "ok-from-rg")) == len(with_marker(seen["server"], "ok-from-rg")) == 2
    assert len(with_marker(seen["b"], "ok-from-trunk")) == len(with_marker(seen["b"], "ok-from-server")) == 2
    assert with_marker(seen["a"], "ok-from-trunk") == with_marker(seen["a"], "ok-from-server") == []


def test_eapol_from_an_authenticated_rg_leaves_on_neither_nni(lab, daemon):
    """A authenticated with wpa_supplicant, tshark on both NNIs while wpa_supplicant authenticates again (SIGHUP: it
    reads its configuration again and starts over with an EAPOL-Start) and A sends raw EAPOL-Starts and -Logoffs to
    the 802.1X group address: no EAPOL frame appears on either NNI, A's EAPOL counts as `link-local`, and an
    ordinary frame A sends in the same time leaves on both."""
    rig = start(lab, daemon, 214)
    a = rig.a
    supplicant, = authenticated(rig, a)
    forwarding(rig, a)
    captures = {"trunk": Capture(lab, None, rig.trunk), "server": Capture(lab, rig.server_ns, rig.server_nic)}
    before = dataplane(rig.process)
    log = f"{a.name}.wpa.log"
    starts = lab.log(log).count("TX EAPOL")
    os.kill(supplicant.pid, signal.SIGHUP)
    wait_for("wpa_supplicant's EAPOL-Start again", lambda: lab.log(log).count("TX EAPOL") > starts, 20,
             lambda: lab.log(log)[-3000:])
    raw = [f.build_ethernet(PAE_GROUP, a.mac, f.ETH_EAPOL, f.build_eapol(kind))
           for kind in (f.EAPOL_START, f.EAPOL_LOGOFF)]
    send(rig, a, raw * 5 + [tagged(BROADCAST, a.mac, [], EXPERIMENTAL, marked("ok-from-rg"))] * 2, pause=0.05)
    after = dataplane(rig.process)
    seen = stopped(captures)
    for name in ("trunk", "server"):
        eapol = [frame for frame in seen[name] if ethertype_of(frame) == f.ETH_EAPOL]
        assert eapol == [], (name, eapol[:3])
        assert len(with_marker(seen[name], "ok-from-rg")) == 2, name
    # wpa_supplicant's EAPOL-Start (to the group address, as it sends them) and the ten raw frames
    assert dropped(after, a.key, "link-local") - dropped(before, a.key, "link-local") >= 11, (before, after)


def test_a_short_frame_leaves_padded_to_60_and_one_above_the_nni_mtu_is_dropped(lab, daemon):
    """A authenticated, its interface's MTU raised to 9,000, tshark on A's interface and both NNIs. A's 14-octet
    frames (a header, nothing after it) leave on the untagged NNI as 60 octets and on the trunk as 60 (tags
    included), whole 1,514-octet frames leave whole, and 1,515- and 9,000-octet ones (more than the default 1,500
    MTU after the header) leave on neither NNI and count as `oversize`; 14-octet frames for A from the untagged NNI
    and 26-octet ones from the trunk (18 without their tags) reach A as 60 octets."""
    rig = start(lab, daemon, 215)
    a = rig.a
    authenticated(rig, a)
    forwarding(rig, a)
    svc = service_of(rig.process, a.serial, 0)
    run("ip", "-n", a.name, "link", "set", "dev", a.name, "mtu", "9000")
    captures = {"a": Capture(lab, a.name, a.name), "trunk": Capture(lab, None, rig.trunk),
                "server": Capture(lab, rig.server_ns, rig.server_nic)}
    short, whole, over, jumbo, trunk_src = (bytes.fromhex(f"0200000005{n:02x}") for n in (14, 15, 16, 90, 22))
    before = dataplane(rig.process)
    send(rig, a, [tagged(short, a.mac, [], EXPERIMENTAL, b"")] * 3
         + [tagged(whole, a.mac, [], EXPERIMENTAL, bytes(1500))] * 2
         + [tagged(over, a.mac, [], EXPERIMENTAL, bytes(1501))] * 2
         + [tagged(jumbo, a.mac, [], EXPERIMENTAL, bytes(8986))] * 2, pause=0.05)
    send(rig, "server", [tagged(a.mac, rig.server_mac, [], EXPERIMENTAL, b"")] * 2)
    # (a tagged frame needs an octet or two after its EtherType: with none, the data plane calls it malformed)
    send(rig, "trunk", [tagged(a.mac, trunk_src, [(0x8100, svc["STag"]), (0x8100, svc["CTag"])], EXPERIMENTAL,
                               b"pad!")] * 2)
    after = dataplane(rig.process)
    seen = stopped(captures)

    def lengths(name: str, dst: bytes) -> list[int]:
        return [len(frame) for frame in seen[name] if frame[0:6] == dst]
    assert lengths("server", short) == [60] * 3 and lengths("trunk", short) == [60] * 3
    assert lengths("server", whole) == [1514] * 2 and lengths("trunk", whole) == [1522] * 2
    for name in ("server", "trunk"):
        assert lengths(name, over) == lengths(name, jumbo) == [], name
    assert dropped(after, a.key, "oversize") - dropped(before, a.key, "oversize") == 4, (before, after)
    at_a = [frame for frame in seen["a"] if frame[0:6] == a.mac and ethertype_of(frame) == EXPERIMENTAL]
    assert sorted((frame[6:12], len(frame)) for frame in at_a) == [(trunk_src, 60)] * 2 + [(rig.server_mac, 60)] * 2


def test_a_flood_of_unknown_dhcp_clients_and_undecodable_frames_logs_a_few_lines_and_b_still_gets_on(lab, daemon):
    """A, authenticated and leased, sends 10,000 DHCP Discovers from random MACs and 2,000 frames the built-in
    adapter cannot decode (DHCP's ports, 4 octets of message), in batches the kernel's queue of its TAP takes
    whole: all reach the adapter (packet ins), the daemon's log grows by a handful of lines (each kind's first
    warning and its summaries, which count all the others), its memory stays flat, A's service stays leased, and B
    then authenticates, gets a lease and pings the server."""
    rig = start(lab, daemon, 216)
    a, b = rig.a, rig.b
    online(rig, a)
    lines = len(rig.process.log.splitlines())
    before = dataplane(rig.process)
    rss_before = rss_bytes(rig.process.process.pid)
    rng = random.Random()

    def discover() -> bytes:
        mac = bytes((rng.randrange(256) & 0xFC | 0x02,)) + rng.randbytes(5)
        message = f.build_dhcp(f.BOOTREQUEST, rng.randrange(1 << 32), mac, [(53, bytes((f.DHCP_DISCOVER,)))],
                               flags=0x8000)
        return dhcp_frame(mac, BROADCAST, "0.0.0.0", "255.255.255.255", message)
    undecodable = f.build_ethernet(BROADCAST, a.mac, f.ETH_IPV4, f.build_ipv4_udp(
        f.ip_bytes("0.0.0.0"), f.ip_bytes("255.255.255.255"), 68, 67, b"\x01\x01\x06\x00"))
    # an undecodable batch first, so that both kinds' first warnings, and so their summaries, come early
    batch = BATCH
    batches = ([[undecodable] * batch] + [[discover() for _ in range(batch)] for _ in range(10000 // batch)]
               + [[undecodable] * batch] * (2000 // batch - 1))
    for frames in batches:
        send(rig, a, frames, pause=0)
    wait_for("all 12,000 frames trapped to the adapter",
             lambda: dataplane(rig.process)["packet_ins"] >= before["packet_ins"] + 12000, 20,
             lambda: json.dumps(dataplane(rig.process)["unis"][a.key]))
    flood = rig.process.log.splitlines()[lines:]
    assert len(flood) <= 10, "\n".join(flood[:40])
    # 12,000 frames from 10,000 clients leave no trace in memory: the tables they touch are bounded (1024 MACs a
    # UNI, 4096 EAP sessions), so the daemon's RSS stays within a few MiB of what it was
    grown = rss_bytes(rig.process.process.pid) - rss_before
    assert grown < 16 * 1024 * 1024, f"RSS grew by {grown / 1048576:.1f} MiB over the flood"
    assert service_of(rig.process, a.serial, 0)["DhcpState"] == DHCP_OK   # moved by none of the other MACs' frames
    online(rig, b)
    ping = run("ip", "netns", "exec", b.name, "ping", "-c", "2", "-i", "0.2", "-W", "2", rig.server_ip, check=False)
    assert ping.returncode == 0, ping.stdout + ping.stderr

    def told(name: str) -> tuple[int, int]:
        """(lines naming `name` since the flood began, the warnings they account for: one each, or a summary's)"""
        named = [line for line in rig.process.log.splitlines()[lines:] if f"] {name} " in line]
        return len(named), sum(int(m.group(1)) if (m := re.search(r" count=(\d+) \(summary", line)) else 1
                               for line in named)
    for name, total in (("builtin-adapter-dhcp-unknown-client", 10000), ("builtin-adapter-packet-undecodable", 2000)):
        wait_for(f"{name}'s summaries counting all {total}", lambda name=name, total=total: told(name)[1] >= total,
                 25, lambda name=name: str(told(name)))
        named, accounted = told(name)
        assert named <= 4 and accounted == total, (name, named, accounted)
