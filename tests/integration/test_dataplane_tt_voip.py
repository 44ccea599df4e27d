"""TT's VoIP beside a flooded HSIA, on real traffic: `twistd oltsim --adapter builtin` (OLT id 10) with TAP
interfaces, TT's services (tp 64 HSIA, tp 65 VoIP: a T-CONT each, as VOLTHA gives every technology profile its own)
with SADIS's `Default` profile each way for both (the services file's upstream_bandwidth_profile /
downstream_bandwidth_profile): PIR 101 Mbit/s, GIR (air) 100, CIR 0.6. A TT pod's SADIS (voltha-system-tests'
flex-ocp-cord-sadis-TT.json) puts VoIP upstream on a fixed-bandwidth T-CONT (`TCONT_TYPE1_200Mbps_Fixed_ForVOIP`, air
only) and HSIA on a best-effort one, each tech profile (TechProfile-TT-VoIP.json, -HSIA.json) one GEM port with
q_sched_policy StrictPriority: VoIP's protection is its own T-CONT and its reserved GIR, not a queue priority
inside one T-CONT. `Default` is the nearest of the profiles SADIS serves here (nearly all GIR) and the slowest, so
that a loaded 2-core VM's CPU is not the limit.

The RG is mausezahn (Debian's netsniff-ng) on the UNI's interface, tagging each service as the RG does (`-Q 0:35`
HSIA, `-Q 0:65` VoIP: this kernel has no 802.1Q sub-interfaces, and a user-space VLAN relay, vlanport.py, costs the
CPU the flood needs); the BNG is the untagged NNI's namespace, where tcpdump counts the VoIP frames and the
interface's counters what HSIA got. HSIA is flooded with jumbo UDP datagrams (8950 octets, `--nni-mtu 9000`: a
sixth of the frames a second, which is what costs a Python data plane CPU) well above its PIR while a
VoIP-like stream runs (4000 datagrams of 172 octets, a 20 ms G.711 frame with its RTP header, one every 2 ms: ten
calls' worth): VoIP loses nothing (every datagram reaches the BNG, the shaper dropped none on its T-CONT), HSIA is
held at its PIR. With the PON's upstream rate below the two T-CONTs' peaks (`--pon-rate-up 150M`; below their GIRs
too, an over-booked PON: every profile SADIS serves has a GIR of 100 Mbit/s, so each T-CONT's assured rate is cut in
proportion, to 75), HSIA is held at what VoIP's reserved share leaves it and VoIP still loses nothing.

Needs root, /dev/net/tun, `ip netns` and Debian's dnsmasq, dhclient, netsniff-ng and tcpdump (installed only with
OLTSIM_TEST_INSTALL=1, else skipped with the reason; tests/integration/netlab.py)."""
from __future__ import annotations

import re
import time
from importlib import resources

import pytest

from netlab import lab_for, run, _which
from test_daemon import daemon  # noqa: F401 - the fixture
from test_dataplane import dataplane, dataplane_options, serve_dhcp, wait_for
from test_dataplane_workflows import tcpdump

pytestmark = pytest.mark.dataplane

#: HSIA's and VoIP's profiles in the services file (TT's services otherwise as built in)
PROFILES = "    upstream_bandwidth_profile: Default\n    downstream_bandwidth_profile: Default\n"
TT_SERVICES = resources.files("oltsim").joinpath("data", "tt-services.yaml").read_text(encoding="utf-8").replace(
    "    tp_id: 64\n", "    tp_id: 64\n" + PROFILES).replace("    tp_id: 65\n", "    tp_id: 65\n" + PROFILES)
#: kbit/s, as SADIS's Default: its PIR (cir + eir + air)
PIR = 101_000
#: the VoIP-like stream: datagrams, their UDP payload, the pause between two (mausezahn's -d) and their frames'
#: octets on the untagged NNI (Ethernet 14, IPv4 20, UDP 8)
VOIP_COUNT, VOIP_LENGTH, VOIP_GAP = 4000, 172, "2msec"
VOIP_FRAME = 14 + 20 + 8 + VOIP_LENGTH
#: the flood's UDP payload and mausezahn's pause between two of its frames (microseconds): jumbo frames (8996 octets
#: at the RG), so that HSIA's PIR is 1,400 frames a second, not 8,300 of 1516 octets, which a Python data plane on a
#: loaded 2-core VM does not read; the timer overshoots the pause, the more the busier the VM: at "450" 1.1-1.35x
#: the PIR here, so a shorter one; the test checks the flood was above 1.10x the PIR
FLOOD_LENGTH, FLOOD_GAP = 8950, "400"
MTU = 9000
#: the PON's upstream rate of the shared case: below the two T-CONTs' peaks (202 Mbit/s) and their GIR + CIR (every
#: profile SADIS serves has a GIR of 100 Mbit/s: an over-booked PON, each T-CONT's assured rate cut in proportion,
#: here to half of the PON's rate)
PON_RATE_UP = 150_000_000


@pytest.fixture
def lab(tmp_path):
    """A Lab with dnsmasq, dhclient, mausezahn and tcpdump; skips when they cannot be had."""
    yield from lab_for(tmp_path, "dnsmasq", "dhclient", "mausezahn", "tcpdump")


def counter(netns: str, interface: str, name: str) -> int:
    return int(run("ip", "netns", "exec", netns, "cat", f"/sys/class/net/{interface}/statistics/{name}").stdout)


@pytest.mark.parametrize("pon_rate", [None, "150M"])
def test_tt_voip_loses_nothing_while_hsia_is_flooded_past_its_profile(lab, daemon, tmp_path, pon_rate):
    """TT at OLT id 10, one bound UNI, VoIP and HSIA each on its own T-CONT shaped by SADIS's Default (PIR 101
    Mbit/s, GIR 100): HSIA flooded upstream with jumbo UDP datagrams at more than 1.10x its PIR while 4000
    VoIP datagrams of 172 octets go, one every 2 ms: every VoIP datagram reaches the BNG (tcpdump's count) and the
    shaper dropped none on VoIP's T-CONT; the BNG gets at most 105 % of HSIA's PIR (at least 60 %), the excess
    dropped by the shaper. With `--pon-rate-up 150M` (below the peaks, 202, and the GIRs: cut to 75 each) HSIA gets
    at most 105 % of the 75 VoIP's reserved share leaves it, and VoIP still loses nothing."""
    p = lab.prefix
    services = tmp_path / "tt-services.yaml"
    services.write_text(TT_SERVICES)
    serial, uni_ns = "BBSM000a0001", f"{p}u0-1-0"
    process = daemon(*dataplane_options(lab, "--olt-id", "10", "--pon", "1", "--onu", "1", "--uni", "1",
                                        "--uni-interfaces", "all", "--services", str(services), "--nni-mtu", str(MTU),
                                        *(["--pon-rate-up", pon_rate] if pon_rate else [])))
    process.wait_serving()
    bng, _ = serve_dhcp(lab, 212)
    bng_port = f"{p}nniu"
    run("ip", "-n", bng, "link", "set", "dev", bng_port, "mtu", str(MTU))
    bng_mac = run("ip", "-n", bng, "-br", "link", "show", "dev", bng_port).stdout.split()[2]
    status, sadis = process.rest_get(f"/v2/subscribers/{serial}-1", surface="sadis")
    assert status == 200, sadis
    named = {e["serviceName"]: (e["upstreamBandwidthProfile"], e["downstreamBandwidthProfile"])
             for e in sadis["uniTagList"] if "upstreamBandwidthProfile" in e}
    assert named["voip"] == named["hsia"] == ("Default", "Default")

    def upstream_alloc(c_tag: int) -> int | None:
        return next((fl["alloc_id"] for fl in process.rest_get("/v1/olt/flows")[1]["flows"]
                     if fl["flow_type"] == "upstream" and fl["classifier"].get("o_vid") == c_tag
                     and fl["action"].get("cmd", {}).get("add_outer_tag")), None)

    wait_for("the HSIA and VoIP forwarding flows", lambda: upstream_alloc(444) and upstream_alloc(900))
    voip_alloc, hsia_alloc = upstream_alloc(444), upstream_alloc(900)
    assert voip_alloc != hsia_alloc
    voip_mac = next(s for s in process.rest_get(f"/v1/olt/onus/{serial}")[1]["unis"][0]["services"]
                    if s["Name"] == "voip")["HwAddress"]
    lab.wait_link(uni_ns, uni_ns)
    # What the RG sends waits for oltsim in the TAP's kernel queue, in arrival order: 10000 frames (most of a second
    # of the flood) ride out a reactor stalled on a loaded VM, the default 1000 do not; a real UNI port's ingress
    # keeps up with its wire, and what this test is about is the T-CONTs behind it
    run("ip", "-n", uni_ns, "link", "set", "dev", uni_ns, "txqueuelen", "10000", "mtu", str(MTU), "up")
    wait_for("the UNI's link", lambda: "LOWER_UP" in run("ip", "-n", uni_ns, "link", "show", uni_ns).stdout, 30)
    capture = tcpdump(lab, bng, bng_port, "voip.log", "udp", "dst", "port", "5004")
    mausezahn = _which("mausezahn")
    flood = lab.start(uni_ns, mausezahn, uni_ns, "-q", "-c", "0", "-d", FLOOD_GAP, "-b", bng_mac,
                      "-A", "10.212.2.2", "-B", "10.212.0.99", "-Q", "0:35", "-t", "udp", "sp=4000,dp=4001",
                      "-p", str(FLOOD_LENGTH), log="flood.log")
    time.sleep(1.0)     # past the T-CONT's first bucket: the rate from here on is the shaper's
    sent_before, got_before, started = counter(uni_ns, uni_ns, "tx_bytes"), counter(bng, bng_port, "rx_bytes"), \
        time.monotonic()
    run("ip", "netns", "exec", uni_ns, mausezahn, uni_ns, "-q", "-c", str(VOIP_COUNT), "-d", VOIP_GAP,
        "-a", voip_mac, "-b", bng_mac, "-A", "10.213.2.2", "-B", "10.212.0.98", "-Q", "0:65", "-t", "udp",
        "sp=5004,dp=5004", "-p", str(VOIP_LENGTH), timeout=120)
    sent_after, got_after, ended = counter(uni_ns, uni_ns, "tx_bytes"), counter(bng, bng_port, "rx_bytes"), \
        time.monotonic()
    lab.stop(flood)

    def voip_at_bng() -> int:
        return len(re.findall(r"\.5004 > [0-9.]+\.5004: UDP, length 172", lab.log("voip.log")))

    # the last of them within a second or so (a stalled tcpdump later): a count short of VOIP_COUNT fails below
    deadline = time.monotonic() + 15
    while voip_at_bng() < VOIP_COUNT and time.monotonic() < deadline:
        time.sleep(0.2)
    time.sleep(0.5)
    lab.stop(capture)
    seconds = ended - started
    offered = ((sent_after - sent_before) - VOIP_COUNT * (VOIP_FRAME + 4)) * 8 / seconds / 1000    # + its VLAN tag
    received = ((got_after - got_before) - VOIP_COUNT * VOIP_FRAME) * 8 / seconds / 1000
    tconts = {row["alloc_id"]: row for row in dataplane(process)["shapers"] if row["direction"] == "up"}
    limit = PON_RATE_UP / 1000 / 2 if pon_rate else PIR     # on the over-booked PON, HSIA's assured share
    print(f"PON up {pon_rate or 'line rate'}: VoIP {voip_at_bng()} of {VOIP_COUNT} datagrams at the BNG; HSIA "
          f"offered {offered / 1000:.1f} Mbit/s, the BNG got {received / 1000:.1f} ({received / limit * 100:.1f} % "
          f"of {limit / 1000:.1f}); T-CONT rates {[round(r['rate_bps'] / 1e6, 1) for r in tconts.values()]} "
          f"Mbit/s; the UNI's TAP dropped {counter(uni_ns, uni_ns, 'tx_dropped')}, the UNI "
          f"{dataplane(process)['unis'][f'{serial}/0']['dropped']}")
    assert offered > 1.10 * PIR, f"the flood reached only {offered / 1000:.1f} Mbit/s (mausezahn -d {FLOOD_GAP})"
    assert voip_at_bng() == VOIP_COUNT, lab.log("voip.log")[-1000:]
    assert tconts[voip_alloc]["dropped"].get("shaper", 0) == 0, tconts[voip_alloc]
    assert tconts[voip_alloc]["sent_frames"] >= VOIP_COUNT, tconts[voip_alloc]
    assert tconts[hsia_alloc]["dropped"].get("shaper", 0) > 0, tconts[hsia_alloc]
    # held: at most 105 %; and not starved: at least 60 % (98-100 % at load 5-7 on the 2-core VM, but at load 7-8 the
    # shaper loses tokens to the stalled reactor, 75-88 % seen: docs/dataplane.md, Bandwidth profiles; what this
    # test is about, VoIP, lost nothing in any run)
    assert 0.60 * limit <= received <= 1.05 * limit, (received, limit)
