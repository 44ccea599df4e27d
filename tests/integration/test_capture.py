"""Capture in the real daemon, read with tshark: `twistd -n oltsim --adapter builtin --olt-id 10 --pon 2
--onu 16` (a lab's numbering) brings its ONUs up by itself; `oltsimctl capture` writes what the OLT exchanged. tshark
finds no malformed packet, dissects DHCP, EAPOL and IGMP with their VLAN tags at the UNIs and the NNI, and the OMCI
of a whole MIB upload and flow configuration in order (transaction id, message type and ME class read at G.988's
offsets from the raw bytes, as omci.lua is not installed); the filters keep exactly what they say; a live capture
during the ONU power-wave scenario shows, for each ONU it picked, the dying gasp, the rediscovery, the MIB upload and
DHCP again; REST refuses what it should (token, capture off)."""
from __future__ import annotations

import http.client
import json
import signal
import subprocess
import time
from collections import defaultdict

import pytest

from test_builtin_adapter_daemon import DHCP_OK, EAP_OK, services
from test_builtin_adapter_daemon import wait_all_up as wait_services_up
from test_daemon import REPO, Daemon
from test_oltsimctl import CTL, ctl_environment
from tshark import ensure_tshark, fields

ONUS = 32
SERVICES = """\
workflow: att
services:
  - name: hsia
    c_tag: 900
    c_tag_allocation: unique
    s_tag: 900
    s_tag_allocation: shared
    needs_eapol: true
    needs_dhcp: true
    tp_id: 64
  - name: vod
    uni_tag_match: 55
    c_tag: 55
    c_tag_allocation: shared
    s_tag: 555
    s_tag_allocation: shared
    needs_dhcp: true
    needs_igmp: true
    tp_id: 66
    configure_mac_address: true
    us_pon_c_tag_priority: 5
    us_pon_s_tag_priority: 5
"""
CTL_TIMEOUT = 60.0
SCENARIO_TIMEOUT = 90.0
# G.988 message types (the low 5 bits; AR 0x40 on requests, AK 0x20 on answers)
MIB_RESET, MIB_UPLOAD, MIB_UPLOAD_NEXT, CREATE, SET = 15, 13, 14, 4, 8
ONU_DATA, T_CONT, GEM_PORT_NETWORK_CTP, PPTP_ETHERNET_UNI = 2, 262, 268, 11


@pytest.fixture(scope="module")
def olt(tmp_path_factory):
    """One daemon for the module: OLT 10, 2 PONs x 16 ONUs, 1 UNI with an EAPOL+DHCP service and a DHCP+IGMP one,
    driven by the built-in adapter, with a ring large enough for the whole bring-up; every ONU up, and one IGMP
    join sent."""
    ensure_tshark()
    tmp_path = tmp_path_factory.mktemp("capture")
    services = tmp_path / "services.yaml"
    services.write_text(SERVICES)
    process = Daemon(tmp_path, "--adapter", "builtin", "--olt-id", "10", "--pon", "2", "--onu", "16", "--uni", "1",
                     "--services", str(services), "--capture-size", "200000", "--delay", "50")
    process.home = tmp_path
    try:
        process.wait_serving()
        wait_all_up(process, ONUS, timeout=120)
        status, _ = rest(process, "POST", "/v1/olt/onus/BBSM000a0003/0/igmp/0/224.1.1.1/55")
        assert status == 200
        yield process
    finally:
        process.close()


def wait_all_up(process, count: int, timeout: float) -> None:
    """Poll until `count` ONUs have both services at DHCP ack and hsia at EAPOL success (vod has no EAPOL)."""
    deadline = time.monotonic() + timeout
    seen: dict = {}
    while time.monotonic() < deadline:
        assert process.process.poll() is None, process.log[-4000:]
        seen = services(process)
        if len(seen) == count and all(len(states) == 2 and states[0] == (EAP_OK, DHCP_OK)
                                      and states[1][1] == DHCP_OK for states in seen.values()):
            return
        time.sleep(0.2)
    raise AssertionError(f"not every ONU came up within {timeout:g} s: {seen}")


def rest(process, method: str, path: str, body: bytes | None = None, headers=None) -> tuple[int, bytes]:
    connection = http.client.HTTPConnection("127.0.0.1", process.ports["rest-v1"], timeout=10)
    try:
        connection.request(method, path, body=body, headers=headers or {})
        response = connection.getresponse()
        return response.status, response.read()
    finally:
        connection.close()


def capture(process, path, *arguments: str) -> subprocess.CompletedProcess:
    """oltsimctl capture -w path ... against the daemon, to completion."""
    result = subprocess.run([*CTL, "--server", f"127.0.0.1:{process.ports['grpc-v1']}", "capture", "-w", str(path),
                             "--rest", f"127.0.0.1:{process.ports['rest-v1']}", *arguments],
                            cwd=REPO, env=ctl_environment(process.home), capture_output=True, text=True,
                            timeout=CTL_TIMEOUT)
    assert result.returncode == 0, result.stderr
    return result


def ring(process, tmp_path, name: str, *filters: str):
    """The whole ring with `filters`, as a file."""
    path = tmp_path / f"{name}.pcapng"
    capture(process, path, "--since", "all", "--duration", "0", *filters)
    return path


def test_the_ring_reads_in_tshark_without_a_malformed_packet_and_with_the_tags(olt, tmp_path):
    """The ring of a 2x16 bring-up: no malformed packet; EAPOL untagged and DHCP C-tagged at the UNI, DHCP with S- and
    C-tag at the NNI, an IGMP join with its VLAN, each with a comment naming serial, GEM port and service."""
    path = ring(olt, tmp_path, "all")
    assert fields(path, "_ws.malformed || _ws.expert.severity == error", "frame.number") == []
    interfaces = {row[0] for row in fields(path, "", "frame.interface_name")}
    assert {"BBSM000a0001 omci", "BBSM000a0001 uni-0", "BBSM000a0110 omci", "nni-0", "events"} <= interfaces
    eapol = fields(path, "eapol", "frame.interface_name", "vlan.id", "frame.comment")
    assert eapol and all(row[0].endswith("uni-0") and row[1] == "" for row in eapol)
    assert all("service=hsia" in row[2] and "gem=" in row[2] for row in eapol)
    uni_dhcp = fields(path, "dhcp && frame.interface_name contains \"uni\"", "vlan.id", "frame.comment")
    tags = {row[0] for row in uni_dhcp}
    assert "55" in tags and all(tag == "55" or 900 <= int(tag) < 900 + ONUS for tag in tags), tags
    assert len(tags) == 1 + ONUS                                              # vod's, and each UNI's own C-tag
    nni = fields(path, "dhcp && frame.interface_name == \"nni-0\"", "vlan.id", "frame.comment", "dhcp.option.dhcp")
    assert {row[0].split(",")[0] for row in nni} == {"900", "555"}           # the S-tags the flows push
    assert all(len(row[0].split(",")) == 2 and "serial=BBSM000a" in row[1] for row in nni)
    assert {row[2] for row in nni} >= {"1", "2", "3", "5"}                   # discover, offer, request, ack
    igmp = fields(path, "igmp", "frame.interface_name", "vlan.id", "igmp.maddr", "frame.comment")
    assert igmp == [["BBSM000a0003 uni-0", "55", "224.1.1.1", igmp[0][3]]] and "service=vod" in igmp[0][3]


def omci_frames(path, serial: str) -> list[tuple[int, bool, int, int, int, bytes]]:
    """(frame number, from the ONU, tid, message type, ME class, message) of `serial`'s OMCI, read at G.988's
    offsets in the raw bytes after the Ethernet header (ethertype 0x88b5)."""
    rows = fields(path, f"frame.interface_name == \"{serial} omci\" && eth.type == 0x88b5", "frame.number",
                  "eth.src", "data.data")
    out = []
    for number, src, data in rows:
        message = bytes.fromhex(data.replace(":", ""))
        out.append((int(number), src.startswith("02:00:"), int.from_bytes(message[0:2], "big"), message[2],
                    int.from_bytes(message[4:6], "big"), message))
    return out


def test_the_omci_of_a_whole_mib_upload_and_flow_configuration_is_there_in_order(olt, tmp_path):
    """One ONU's OMCI, in order: MIB reset, MIB upload answered with N, N uploads-next with sequence numbers
    0..N-1, then the configuration (Set on its PPTP and T-CONT, Create of its GEM ports); each request from the OLT's
    address to the ONU's, answered from the ONU's with the same transaction id and the AK bit."""
    path = ring(olt, tmp_path, "omci", "--onu", "BBSM000a0105", "--omci")
    frames = omci_frames(path, "BBSM000a0105")
    requests = [f for f in frames if not f[1]]
    answers = {f[2]: f for f in frames if f[1] and f[2]}
    for number, _, tid, mtype, me_class, _ in requests:
        answer = answers[tid]
        assert answer[0] > number and answer[3] == (mtype & 0x1F) | 0x20 and answer[4] == me_class
    kinds = [(mtype & 0x1F, me_class) for _, _, _, mtype, me_class, _ in requests]
    assert kinds[:2] == [(MIB_RESET, ONU_DATA), (MIB_UPLOAD, ONU_DATA)]
    count = int.from_bytes(answers[requests[1][2]][5][8:10], "big")
    assert count > 20 and kinds[2:2 + count] == [(MIB_UPLOAD_NEXT, ONU_DATA)] * count
    assert [int.from_bytes(r[5][8:10], "big") for r in requests[2:2 + count]] == list(range(count))
    config = kinds[2 + count:]
    assert (SET, PPTP_ETHERNET_UNI) in config and (SET, T_CONT) in config and (CREATE, GEM_PORT_NETWORK_CTP) in config
    assert config.index((SET, T_CONT)) < config.index((CREATE, GEM_PORT_NETWORK_CTP))
    src, dst, comment = fields(path, "eth.type == 0x88b5", "eth.src", "eth.dst", "frame.comment")[0]
    onu_id = int(comment.split(" onu=")[1].split()[0])
    assert (src, dst) == ("02:ff:0a:01:00:00", f"02:00:0a:01:00:{onu_id:02x}")   # OLT 10, PON 1 -> the ONU


def test_the_filters_keep_exactly_what_they_say(olt, tmp_path):
    """--onu keeps that ONU's interfaces, its subscribers' NNI frames and annotations about it or the OLT; --pon the
    ONUs of a PON; --omci only OMCI interfaces; --packets no OMCI; counted against the unfiltered ring."""
    everything = fields(ring(olt, tmp_path, "every"), "", "frame.interface_name", "frame.comment")
    one = fields(ring(olt, tmp_path, "one", "--onu", "BBSM000a0002"), "", "frame.interface_name", "frame.comment")
    assert {row[0] for row in one} == {"BBSM000a0002 omci", "BBSM000a0002 uni-0", "nni-0", "events"}
    assert all("serial=BBSM000a0002" in row[1] for row in one if row[0] == "nni-0")
    mine = [row for row in everything if row[0].startswith("BBSM000a0002 ")
            or (row[0] == "nni-0" and "serial=BBSM000a0002 " in row[1])]
    assert len([row for row in one if row[0] != "events"]) == len(mine)
    assert all("BBSM000a0002" in row[1] or "BBSM000a" not in row[1] for row in one if row[0] == "events")
    pon = {row[0] for row in fields(ring(olt, tmp_path, "pon", "--pon", "1"), "", "frame.interface_name")}
    assert pon - {"nni-0", "events"} and all(name.startswith("BBSM000a01") for name in pon - {"nni-0", "events"})
    omci = {row[0] for row in fields(ring(olt, tmp_path, "omci-only", "--omci"), "", "frame.interface_name")}
    assert omci - {"events"} and all(name.endswith(" omci") for name in omci - {"events"})
    packets = {row[0] for row in fields(ring(olt, tmp_path, "packets", "--packets"), "", "frame.interface_name")}
    assert "nni-0" in packets and not any(name.endswith(" omci") for name in packets)
    counted = fields(ring(olt, tmp_path, "count", "--count", "25", "--omci"), "", "frame.interface_name")
    assert len([row for row in counted if row[0] != "events"]) == 25


def test_a_capture_to_a_pipe_is_read_by_tshark_from_standard_input(olt, tmp_path):
    """-w - writes pcapng to standard output, as `| wireshark -k -i -` reads it (from the gRPC stream, the
    default; the other tests read REST with --rest)."""
    result = subprocess.run([*CTL, "--server", f"127.0.0.1:{olt.ports['grpc-v1']}", "capture", "-w", "-",
                             "--since", "all", "--count", "40"],
                            cwd=REPO, env=ctl_environment(olt.home), capture_output=True, timeout=CTL_TIMEOUT)
    assert result.returncode == 0, result.stderr
    read = subprocess.run([ensure_tshark(), "-r", "-", "-T", "fields", "-e", "frame.interface_name"],
                          input=result.stdout, capture_output=True, timeout=CTL_TIMEOUT)
    assert read.returncode == 0, read.stderr
    assert len([line for line in read.stdout.decode().splitlines() if line != "events"]) == 40


def test_a_live_capture_during_the_power_waves_shows_each_picked_onu_go_and_come_back(olt, tmp_path):
    """oltsimctl capture (live, ended by Ctrl-C) while onu-power-waves runs: for each ONU a wave took, in this
    order, its dying gasp, its rediscovery (OnuDiscInd), its MIB upload again and DHCP again; then a clean exit 0."""
    path = tmp_path / "waves.pcapng"
    live = subprocess.Popen([*CTL, "--server", f"127.0.0.1:{olt.ports['grpc-v1']}", "capture", "-w", str(path)],
                            cwd=REPO, env=ctl_environment(olt.home), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        time.sleep(1.0)
        status, body = rest(olt, "POST", "/v1/scenario", (REPO / "docs/scenarios/onu-power-waves.yaml").read_bytes(),
                            {"Content-Type": "application/yaml"})
        assert status == 200, body
        deadline = time.monotonic() + SCENARIO_TIMEOUT
        while time.monotonic() < deadline:
            state = json.loads(rest(olt, "GET", "/v1/scenario")[1])["state"]
            if state != "running":
                break
            time.sleep(0.5)
        assert state == "done"
        wait_all_up(olt, ONUS, timeout=60)
        time.sleep(1.0)
    finally:
        live.send_signal(signal.SIGINT)
        _, err = live.communicate(timeout=CTL_TIMEOUT)
    assert live.returncode == 0, err
    assert fields(path, "_ws.malformed", "frame.number") == []
    notes = fields(path, "frame.interface_name == \"events\"", "frame.number", "frame.comment")
    picked = {serial for _, text in notes if text.startswith("scenario-step-started onu-power-waves")
              for serial in text.split(" targets ")[1].split(", ")}
    assert len(picked) >= 4, notes[:20]
    order = defaultdict(list)
    for number, text in notes:
        for serial in picked:
            if f"alarm dying_gasp_ind {serial}" in text:
                order[serial].append(("dying-gasp", int(number)))
            elif text == f"OnuDiscInd: ONU {serial} discovered on PON 0":
                order[serial].append(("discovered", int(number)))
    for serial in picked:
        mib = [n for n, up, _, mtype, _, _ in omci_frames(path, serial) if not up and mtype & 0x1F == MIB_UPLOAD]
        dhcp = [int(row[0]) for row in fields(path, f"dhcp.option.dhcp == 5 && frame.interface_name == "
                                                    f"\"{serial} uni-0\"", "frame.number")]
        gasp = [n for what, n in order[serial] if what == "dying-gasp"]
        found = [n for what, n in order[serial] if what == "discovered"]
        assert gasp and found and mib and dhcp, (serial, order[serial], mib, dhcp)
        cut = gasp[0]
        back = min(n for n in found if n > cut)
        assert any(n > back for n in mib) and any(n > back for n in dhcp), (serial, cut, back, mib, dhcp)


def test_rest_refuses_without_the_token_and_when_capture_is_off(tmp_path):
    """With --api-token, GET /v1/capture without it is 401; with it and --capture-size 0, 404 saying capture is off;
    a malformed parameter is 400."""
    process = Daemon(tmp_path, "--api-token", "secret", "--capture-size", "0")
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                status, _ = rest(process, "GET", "/v1/capture")
                break
            except OSError:
                time.sleep(0.1)
        assert status == 401
        status, body = rest(process, "GET", "/v1/capture", headers={"Authorization": "Bearer secret"})
        assert status == 404 and "capture is off" in json.loads(body)["message"]
        status, body = rest(process, "GET", "/v1/capture?since=soon", headers={"Authorization": "Bearer secret"})
        assert status == 400 and "since" in json.loads(body)["message"]
    finally:
        process.close()


def test_oltsimctl_capture_says_why_the_server_refused_it(olt, tmp_path):
    """Over gRPC (the default) a refused capture is one line naming the status and the reason, exit 1, and no
    file: an unknown ONU is NOT_FOUND."""
    path = tmp_path / "none.pcapng"
    result = subprocess.run([*CTL, "--server", f"127.0.0.1:{olt.ports['grpc-v1']}", "capture", "-w", str(path),
                             "--onu", "BBSM99999999", "--since", "all", "--duration", "0"],
                            cwd=REPO, env=ctl_environment(olt.home), capture_output=True, text=True,
                            timeout=CTL_TIMEOUT)
    assert result.returncode == 1, result
    assert result.stderr.startswith("oltsimctl: NOT_FOUND: ") and "BBSM99999999" in result.stderr, result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert not path.exists()


def test_a_wrapped_ring_is_said_by_rest_grpc_and_oltsimctl_and_an_empty_capture_exits_1(tmp_path):
    """A ring at its floor (--capture-size 1: 500 records for each 1-UNI ONU) that two power cycles made
    wrap. REST says so in its X-Oltsim-Ring-* headers (size, oldest record, the ONU's oldest); oltsimctl over gRPC
    says what the ring no longer held of --since all and writes the rest; a capture of the ONU's last second,
    which holds nothing, exits 1 with one line saying why and leaves no file."""
    process = Daemon(tmp_path, "--adapter", "builtin", "--pon", "1", "--onu", "2", "--uni", "1", "--capture-size",
                     "1", "--delay", "50")
    process.home = tmp_path
    try:
        process.wait_serving()
        wait_services_up(process, 2, timeout=60)
        for _ in range(2):
            assert rest(process, "DELETE", "/v1/olt/onus/BBSM00000002")[0] == 200
            assert rest(process, "POST", "/v1/olt/onus/BBSM00000002")[0] == 200
            time.sleep(0.5)
            wait_services_up(process, 2, timeout=60)
        connection = http.client.HTTPConnection("127.0.0.1", process.ports["rest-v1"], timeout=10)
        try:
            connection.request("GET", "/v1/capture?onu=bbsm00000001&since=all&duration=0")
            response = connection.getresponse()
            response.read()
        finally:
            connection.close()
        assert response.status == 200
        assert response.getheader("X-Oltsim-Ring-Wrapped") == "yes", response.headers
        assert response.getheader("X-Oltsim-Ring-Size") == "1000"
        assert response.getheader("X-Oltsim-Ring-Oldest", "").endswith("Z")
        assert response.getheader("X-Oltsim-Ring-Oldest-Onu", "").startswith("bbsm00000001=")
        whole = tmp_path / "whole.pcapng"
        result = subprocess.run([*CTL, "--server", f"127.0.0.1:{process.ports['grpc-v1']}", "capture", "-w",
                                 str(whole), "--since", "all", "--duration", "0"],
                                cwd=REPO, env=ctl_environment(tmp_path), capture_output=True, text=True,
                                timeout=CTL_TIMEOUT)
        assert result.returncode == 0, result.stderr
        assert result.stderr.startswith("oltsimctl: the ring wrapped: it held only the last "), result.stderr
        assert "--capture-size" in result.stderr.splitlines()[0]
        notes = fields(whole, "frame.interface_name == \"events\"", "frame.comment")
        assert notes[0][0].startswith("the capture ring wrapped: it keeps 1000 records"), notes[:3]
        time.sleep(1.5)
        empty = tmp_path / "empty.pcapng"
        result = subprocess.run([*CTL, "--server", f"127.0.0.1:{process.ports['grpc-v1']}", "capture", "-w",
                                 str(empty), "--onu", "BBSM00000001", "--since", "1s", "--duration", "0"],
                                cwd=REPO, env=ctl_environment(tmp_path), capture_output=True, text=True,
                                timeout=CTL_TIMEOUT)
        assert result.returncode == 1, result
        assert result.stderr.startswith(f"oltsimctl: no frame written to {empty}: the ring holds no frame of "
                                        f"BBSM00000001 from the last 1s"), result.stderr
        assert len(result.stderr.strip().splitlines()) == 1 and not empty.exists()
    finally:
        process.close()
