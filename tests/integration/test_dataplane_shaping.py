"""Bandwidth profiles on real traffic: `twistd oltsim --adapter builtin` (OLT id 10) with TAP interfaces, one bound
UNI in its namespace, dnsmasq and an iperf3 server behind the untagged NNI; iperf3 TCP and UDP (1470-octet datagrams
at 1.10x the limit), 10 s each way, as voltha-system-tests' "Data plane verification" does against a hardware pod:
each run within 90-105 % of its profile's cir + eir + air upstream, at least 90 % downstream (and at most 105 %).
And the PON's capacity: two bound UNIs on two ONUs of one PON whose upstream rate (--pon-rate-up) is below their
T-CONTs' peaks, iperf3 TCP from both at once: each gets at least its GIR + CIR, both together at most 105 % of it.
And profiles per UNI: two bound UNIs whose services name different SADIS profiles (the services file's
upstream_bandwidth_profile / downstream_bandwidth_profile lists), the same runs on each, each within 90-105 % of its
own profile's limit.

Needs root, /dev/net/tun, `ip netns` and Debian's dnsmasq, dhclient, iperf3 (installed only with
OLTSIM_TEST_INSTALL=1, else skipped with the reason; tests/integration/netlab.py)."""
from __future__ import annotations

import json
import subprocess

import pytest

from netlab import lab_for, run
from test_daemon import daemon  # noqa: F401 - the fixture
from test_dataplane import NO_EAPOL_SERVICES, dataplane, dataplane_options, serve_dhcp, wait_for

pytestmark = pytest.mark.dataplane

SECONDS = 10
#: oltsim's SADIS profiles the built-in adapter shapes by (User_Bandwidth1 up, User_Bandwidth2 down): cir + eir + air
UP_LIMIT = (30_000 + 100_000 + 100_000) * 1000
DOWN_LIMIT = (100_000 + 100_000 + 100_000) * 1000


@pytest.fixture
def lab(tmp_path):
    """A Lab with dnsmasq, dhclient and iperf3; skips when it cannot be had."""
    yield from lab_for(tmp_path, "dnsmasq", "dhclient", "iperf3")


def iperf(netns: str, server_ip: str, *more: str) -> float:
    """The receiver's bit/s of one iperf3 run from `netns`."""
    done = subprocess.run(["ip", "netns", "exec", netns, "iperf3", "-J", "-c", server_ip, "-t", str(SECONDS), *more],
                          capture_output=True, text=True, timeout=SECONDS + 60)
    result = json.loads(done.stdout)
    assert "error" not in result, result.get("error")
    end = result["end"]
    return (end.get("sum_received") or end["sum"])["bits_per_second"]


def share_of(netns: str, server_ip: str, limit: int, *more: str) -> float:
    """One iperf3 run's rate from `netns` as a percentage of `limit` (one decimal). A run outside 90-105 % is run
    once more and the second counts: on a shared 2-core machine another process can hold the CPU the data plane
    needs for a second or two of the ten, which says nothing about the shaper (a shaper that is wrong is wrong
    twice)."""
    share = round(iperf(netns, server_ip, *more) / limit * 100, 1)
    if 90 <= share <= 105:
        return share
    return round(iperf(netns, server_ip, *more) / limit * 100, 1)


def profile_shares(netns: str, server_ip: str, up: int, down: int) -> dict:
    """TCP and UDP (1470-octet datagrams at 1.10x the limit) each way from `netns`, each as `share_of` its limit."""
    return {
        "tcp up": share_of(netns, server_ip, up),
        "tcp down": share_of(netns, server_ip, down, "-R"),
        "udp up": share_of(netns, server_ip, up, "-u", "-l", "1470", "-b", str(int(up * 1.1))),
        "udp down": share_of(netns, server_ip, down, "-R", "-u", "-l", "1470", "-b", str(int(down * 1.1))),
    }


def leased_unis(lab, daemon, tmp_path, services_text: str, onus: int, subnet: int, *more: str):
    """oltsim (OLT id 10, one PON, `onus` ONUs of one UNI each, every UNI bound, `services_text` its services file,
    `more` options) and the untagged NNI in a server namespace at 10.`subnet`.0.1 with dnsmasq; once every ONU's
    forwarding flows are in, each UNI's dhclient has its lease. (process, server namespace, server address, the UNIs'
    namespaces in ONU order)."""
    services = tmp_path / "services.yaml"
    services.write_text(services_text)
    process = daemon(*dataplane_options(lab, "--olt-id", "10", "--pon", "1", "--onu", str(onus), "--uni", "1",
                                        "--uni-interfaces", "all", "--services", str(services), *more))
    process.wait_serving()
    server, server_ip = serve_dhcp(lab, subnet)
    wanted = set(range(1, onus + 1))
    wait_for("the ONUs' forwarding flows", lambda: {
        f["onu_id"] for f in process.rest_get("/v1/olt/flows")[1]["flows"]
        if f["flow_type"] == "downstream" and f.get("onu_id", -1) > 0} >= wanted)
    unis = [f"{lab.prefix}u0-{onu}-0" for onu in range(1, onus + 1)]
    for uni in unis:
        lab.dhclient(uni, uni)
    for uni in unis:
        lab.wait_address(uni, uni, timeout=120)
    return process, server, server_ip, unis


def test_tcp_and_udp_each_way_get_their_profiles_rate(lab, daemon, tmp_path):
    """Upstream (the T-CONT's scheduler) and downstream (the UNI's): TCP and UDP at 1.10x reach 90-105 % of the
    profile's limit upstream, 90-105 % downstream; the shaper's counters show both schedulers' limits and what
    they carried, and the UDP excess dropped by the shaper."""
    process, server, server_ip, (uni,) = leased_unis(lab, daemon, tmp_path, NO_EAPOL_SERVICES, 1, 207)
    lab.iperf3_server(server)
    shares = profile_shares(uni, server_ip, UP_LIMIT, DOWN_LIMIT)
    print(f"shaped rates, % of the profile's limit: {shares}")
    assert all(90 <= share <= 105 for share in shares.values()), shares
    shapers = {row["direction"]: row for row in dataplane(process)["shapers"] if row["limit"] is not None}
    assert shapers["up"]["limit"]["pir"] == UP_LIMIT // 1000 and shapers["down"]["limit"]["pir"] == DOWN_LIMIT // 1000
    assert shapers["up"]["sent_bytes"] > UP_LIMIT / 8 * SECONDS and shapers["down"]["dropped"].get("shaper", 0) > 0


#: the PON's upstream rate the sharing test sets: below the two T-CONTs' peaks (2 x 230 Mbit/s), above their
#: GIR + CIR (2 x 130 Mbit/s), so that each is owed 130 and the 40 left are shared
PON_RATE_UP = 300_000_000
#: User_Bandwidth1's GIR (air) + CIR
ASSURED_UP = (100_000 + 30_000) * 1000


def test_two_tconts_over_the_pon_rate_each_get_gir_and_cir_and_the_total_holds(lab, daemon, tmp_path):
    """Two bound UNIs on two ONUs of one PON, each with its T-CONT shaped at PIR 230 Mbit/s (GIR 100, CIR 30), and
    the PON's upstream rate at 300 Mbit/s (--pon-rate-up 300M): iperf3 TCP from both at once for 10 s; each gets at
    least its GIR + CIR, both together at most 105 % of the PON's rate, and the counters show the PON shared (its
    T-CONTs' rates adding up to no more than its rate, both T-CONTs' bytes carried)."""
    process, server, server_ip, unis = leased_unis(lab, daemon, tmp_path, NO_EAPOL_SERVICES, 2, 208,
                                                   "--pon-rate-up", "300M")
    lab.iperf3_server(server, port=5201, log="iperf3-a.log")
    lab.iperf3_server(server, port=5202, log="iperf3-b.log")
    runs = [subprocess.Popen(["ip", "netns", "exec", uni, "iperf3", "-J", "-c", server_ip, "-p", str(port),
                              "-t", str(SECONDS)], stdout=subprocess.PIPE, text=True)
            for uni, port in zip(unis, (5201, 5202))]
    rates = []
    for client in runs:
        out, _ = client.communicate(timeout=SECONDS + 60)
        result = json.loads(out)
        assert "error" not in result, result.get("error")
        rates.append(result["end"]["sum_received"]["bits_per_second"])
    print(f"PON at {PON_RATE_UP / 1e6:.0f} Mbit/s: the two T-CONTs got {[round(r / 1e6, 1) for r in rates]} Mbit/s "
          f"(TCP goodput; GIR + CIR {ASSURED_UP / 1e6:.0f}), together {sum(rates) / PON_RATE_UP * 100:.1f} % of it")
    assert all(rate >= ASSURED_UP for rate in rates), rates
    assert sum(rates) <= 1.05 * PON_RATE_UP, rates
    counted = dataplane(process)
    pon = next(row for row in counted["pon_shaping"] if row["direction"] == "up")
    assert pon["rate_bps"] == PON_RATE_UP and pon["congested"] and pon["shaped"] == 2
    assert pon["offered_bytes"] >= pon["carried_bytes"] > 2 * ASSURED_UP / 8 * SECONDS
    tconts = [row for row in counted["shapers"] if row["direction"] == "up" and row["limit"] is not None]
    assert len(tconts) == 2 and sum(row["rate_bps"] for row in tconts) <= PON_RATE_UP * 1.001


#: the second pair of profiles the per-UNI test gives the second UNI: SADIS's `Default` each way (cir 600 + eir 400 +
#: air 100000 kbit/s: PIR 101 Mbit/s), slower than the first pair so that a loaded VM's CPU is not the limit
TWO_PAIRS_SERVICES = NO_EAPOL_SERVICES + """\
    upstream_bandwidth_profile: [User_Bandwidth1, Default]
    downstream_bandwidth_profile: [User_Bandwidth2, Default]
"""
DEFAULT_LIMIT = (600 + 400 + 100_000) * 1000


def test_two_unis_with_different_profiles_each_get_their_own_profiles_rate(lab, daemon, tmp_path):
    """Two bound UNIs on two ONUs, the services file naming User_Bandwidth1 up / User_Bandwidth2 down for the first
    UNI and Default / Default for the second (upstream_bandwidth_profile / downstream_bandwidth_profile lists, taken
    in turn): SADIS names each UNI's pair in its uniTagList; iperf3 TCP and UDP (1470 octets at 1.10x the limit), 10
    s each way, one UNI at a time: every run within 90-105 % of cir + eir + air of that UNI's own profile."""
    process, server, server_ip, (first, second) = leased_unis(lab, daemon, tmp_path, TWO_PAIRS_SERVICES, 2, 211)
    lab.iperf3_server(server)
    unis = {"BBSM000a0001": (first, UP_LIMIT, DOWN_LIMIT), "BBSM000a0002": (second, DEFAULT_LIMIT, DEFAULT_LIMIT)}
    named = {}
    for serial in unis:
        status, entry = process.rest_get(f"/v2/subscribers/{serial}-1", surface="sadis")
        assert status == 200, entry
        named[serial] = (entry["uniTagList"][0]["upstreamBandwidthProfile"],
                         entry["uniTagList"][0]["downstreamBandwidthProfile"])
    assert named == {"BBSM000a0001": ("User_Bandwidth1", "User_Bandwidth2"), "BBSM000a0002": ("Default", "Default")}
    # What a sender writes waits for oltsim in its TAP's kernel queue: 10000 frames ride out a reactor stalled on a
    # loaded VM, the default 1000 (a few ms of a UDP burst) do not; what is measured here is the shaper behind it
    taps = [(uni, uni) for uni, _, _ in unis.values()] + [(server, f"{lab.prefix}nniu")]
    for netns, tap in taps:
        run("ip", "-n", netns, "link", "set", "dev", tap, "txqueuelen", "10000")
    shares = {}
    for serial, (uni, up, down) in unis.items():
        shares[serial] = profile_shares(uni, server_ip, up, down)
    dropped = {tap: int(run("ip", "netns", "exec", netns, "cat", f"/sys/class/net/{tap}/statistics/tx_dropped").stdout)
               for netns, tap in taps}
    print(f"shaped rates per UNI, % of its own profile's limit: {shares}; the TAPs dropped {dropped}")
    assert all(90 <= share <= 105 for runs in shares.values() for share in runs.values()), shares
    limits = {(row["serial"], row["direction"]): row["limit"]["pir"] for row in dataplane(process)["shapers"]
              if row["limit"] is not None}
    assert limits == {("BBSM000a0001", "up"): UP_LIMIT // 1000, ("BBSM000a0001", "down"): DOWN_LIMIT // 1000,
                      ("BBSM000a0002", "up"): DEFAULT_LIMIT // 1000, ("BBSM000a0002", "down"): DEFAULT_LIMIT // 1000}
