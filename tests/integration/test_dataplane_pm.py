"""The ONU's PM counters of real frames, read as the adapters read them: `twistd oltsim --adapter builtin` at OLT id 10
with one UNI bound to a TAP interface in a namespace of its own, dnsmasq behind the untagged NNI, dhclient and ping
in the UNI's namespace. The test creates the UNI's Ethernet frame PM MEs and reads them with OMCI sent through the
OpenOLT OmciMsgOut (as voltha-openonu-adapter-go does; the answers read back from the capture ring, as the built-in
adapter holds the indication stream): between two reads the counts grew by exactly what the RG's kernel sent and
received on the TAP (its own counters, which count the kernel's own frames too) and never shrank; the OpenOLT
statistics count the same frames; `oltsimctl dataplane` and the /ui page show the shaper's schedulers.

Needs root, /dev/net/tun, `ip netns`, dnsmasq, dhclient and ping (netlab.py; installed only with
OLTSIM_TEST_INSTALL=1, else the tests skip with the reason); the /ui check needs Chromium (else it is skipped)."""
from __future__ import annotations

import http.client
import struct
import sys
import time

import grpc
import pytest
from voltha_protos import openolt_pb2, openolt_pb2_grpc

from netlab import Lab, lab_for, run
from test_daemon import daemon  # noqa: F401 - the fixture
from test_dataplane import NO_EAPOL_SERVICES, dataplane, dataplane_options, serve_dhcp, service_of, wait_for
from oltsim.omci import codec

pytestmark = pytest.mark.dataplane

SERIAL, UNI = "BBSM000a0001", 0
#: The built-in adapter's UNI-side MAC bridge port of UNI 0 (MBSP_BASE + UNI id): the Ethernet frame PM's ME id
BRIDGE_PORT = 0x201
UP, DOWN = codec.ETHERNET_FRAME_PM_HISTORY_UP, codec.ETHERNET_FRAME_PM_HISTORY_DOWN
#: drop events, octets, packets, broadcast, multicast (20 octets: one baseline Get), then the six size buckets
COUNTS, BUCKETS = (3, 4, 5, 6, 7), tuple(range(11, 17))
PINGS = 20
#: OMCI transaction ids of the test: above the built-in adapter's (1..0x7fff), so that it takes no answer for its own
FIRST_TID = 0x9000


@pytest.fixture
def lab(tmp_path):
    """A Lab (netlab.Lab) with dnsmasq, dhclient and ping; skips when it cannot be had."""
    yield from lab_for(tmp_path, "dnsmasq", "dhclient", "ping")


def subscriber(lab: Lab, daemon, tmp_path, subnet: int):
    """The daemon with UNI 0 of ONU 1 bound, its RG leased by dnsmasq: (process, UNI namespace = interface, server
    address, ONU id)."""
    services = tmp_path / "services.yaml"
    services.write_text(NO_EAPOL_SERVICES)
    process = daemon(*dataplane_options(lab, "--olt-id", "10", "--pon", "1", "--onu", "1", "--uni", "1",
                                        "--uni-interfaces", f"{SERIAL}/{UNI}", "--services", str(services)))
    process.wait_serving()
    _, server_ip = serve_dhcp(lab, subnet)
    uni = f"{lab.prefix}u0-1-0"
    onu_id = wait_for("the ONU's activation", lambda: process.rest_get(f"/v1/olt/onus/{SERIAL}")[1].get("ID"))
    wait_for("the ONU's forwarding flows", lambda: any(
        f["flow_type"] == "downstream" and f.get("onu_id", -1) == onu_id
        for f in process.rest_get("/v1/olt/flows")[1]["flows"]))
    lab.dhclient(uni, uni)
    lab.wait_address(uni, uni, timeout=120)
    wait_for("DHCP ack on the service", lambda: service_of(process, SERIAL, UNI)["DhcpState"] == "dhcp_ack_received")
    return process, uni, server_ip, onu_id


class Omci:
    """OMCI to the ONU through the OpenOLT OmciMsgOut; its answers from the capture ring (GET /v1/capture)."""

    def __init__(self, process, onu_id: int):
        self.process, self.onu_id, self.tid = process, onu_id, FIRST_TID

    def request(self, message_type: int, me_class: int, me_id: int, contents: bytes = b"") -> bytes:
        """Send one baseline request; the contents of its answer."""
        self.tid += 1
        frame = codec.encode(self.tid, message_type | codec.AR, me_class, me_id, contents)
        with grpc.insecure_channel(f"127.0.0.1:{self.process.ports['openolt']}") as channel:
            openolt_pb2_grpc.OpenoltStub(channel).OmciMsgOut(
                openolt_pb2.OmciMsg(intf_id=0, onu_id=self.onu_id, pkt=frame.hex().encode("ascii")), timeout=10)
        tid, answer_type = self.tid, message_type | codec.AK
        return wait_for(f"the OMCI answer to tid {tid:#x}", lambda: next(
            (m[8:40] for m in omci_messages(self.process) if int.from_bytes(m[:2], "big") == tid
             and m[2] == answer_type), None), 30)

    def counts(self, message_type: int, me_class: int, indexes) -> dict:
        """Get (or Get current data) of the attributes `indexes` of the UNI's Ethernet frame PM ME of `me_class`."""
        contents = self.request(message_type, me_class, BRIDGE_PORT, codec.mask_of(indexes).to_bytes(2, "big"))
        assert contents[0] == codec.SUCCESS, contents.hex()
        values = codec.decode_attributes(codec.ME_CLASSES[me_class], int.from_bytes(contents[1:3], "big"),
                                         contents[3:])
        return {index: int.from_bytes(value, "big") for index, value in values.items()}

    def current(self) -> dict:
        """The interval in progress of both directions: {(class, attribute): count}."""
        out = {}
        for me_class in (UP, DOWN):
            for indexes in (COUNTS, BUCKETS):
                out.update({(me_class, i): v for i, v in self.counts(codec.GET_CURRENT_DATA, me_class,
                                                                     indexes).items()})
        return out


def omci_messages(process) -> list[bytes]:
    """Every OMCI message (ethertype 0x88b5, G.988 layout from its first octet) in the capture ring, oldest first,
    read from its pcapng enhanced packet blocks."""
    connection = http.client.HTTPConnection("127.0.0.1", process.ports["rest-v1"], timeout=30)
    connection.request("GET", f"/v1/capture?since=all&duration=0&onu={SERIAL}")
    data = connection.getresponse().read()
    connection.close()
    messages, offset = [], 0
    while offset + 12 <= len(data):
        block_type, length = struct.unpack_from("<II", data, offset)
        if length < 12:
            break
        if block_type == 6:          # enhanced packet block: interface, timestamp (2), captured, original, data
            captured = struct.unpack_from("<I", data, offset + 20)[0]
            frame = data[offset + 28:offset + 28 + captured]
            if len(frame) > 14 and frame[12:14] == b"\x88\xb5":
                messages.append(frame[14:])
        offset += length
    return messages


def kernel_counts(netns: str, interface: str) -> dict:
    """The kernel's counters of the RG's interface: tx what the RG sent, rx what it received."""
    names = ("tx_packets", "tx_bytes", "rx_packets", "rx_bytes")
    done = run("ip", "netns", "exec", netns, "cat",
               *(f"/sys/class/net/{interface}/statistics/{name}" for name in names))
    return dict(zip(names, map(int, done.stdout.split())))


def quiet(omci: Omci, netns: str, interface: str) -> tuple[dict, dict]:
    """(the kernel's counts, the PM's interval in progress) when nothing moved while they were read: the kernel's
    the same before and after the OMCI reads, the simulator's UNI counters too."""
    deadline = time.monotonic() + 60
    while True:
        before = kernel_counts(netns, interface)
        uni = dataplane(omci.process)["unis"][f"{SERIAL}/{UNI}"]
        counts = omci.current()
        if kernel_counts(netns, interface) == before and dataplane(omci.process)["unis"][f"{SERIAL}/{UNI}"] == uni:
            return before, counts
        assert time.monotonic() < deadline, "the RG's interface did not stay quiet for the reads"
        time.sleep(0.5)


def test_ethernet_frame_pm_counts_what_the_rg_sent_and_received(lab, daemon, tmp_path):
    """Ping from the RG between two reads of the interval in progress (Get current data) of its UNI's Ethernet frame
    PM, upstream and downstream: packets and octets grew by exactly what the RG's interface sent and received (its
    kernel's counters), at least the pings each way, every frame in its size bucket (the pings' 98 octets + FCS in
    65-127), the unicast pings not broadcast or multicast; no counter shrank. The completed interval (Get) is none yet. The OpenOLT PON port
    and ONU statistics grew by the same frames."""
    process, uni, server_ip, onu_id = subscriber(lab, daemon, tmp_path, 211)
    omci = Omci(process, onu_id)
    for me_class in (UP, DOWN):
        assert omci.request(codec.CREATE, me_class, BRIDGE_PORT, bytes(2))[0] == codec.SUCCESS
    with grpc.insecure_channel(f"127.0.0.1:{process.ports['openolt']}") as channel:
        stub = openolt_pb2_grpc.OpenoltStub(channel)

        def olt_counts() -> tuple:
            pon = stub.GetPonPortStatistics(openolt_pb2.Interface(intf_id=0), timeout=10)
            onu = stub.GetOnuStatistics(openolt_pb2.Onu(intf_id=0, onu_id=onu_id), timeout=10)
            return pon.rx_packets, pon.tx_packets, onu.rx_bytes, onu.tx_bytes
        kernel0, pm0 = quiet(omci, uni, uni)
        olt0 = olt_counts()
        ping = run("ip", "netns", "exec", uni, "ping", "-c", str(PINGS), "-i", "0.05", "-W", "2", server_ip,
                   check=False)
        assert ping.returncode == 0, ping.stdout + ping.stderr
        kernel1, pm1 = quiet(omci, uni, uni)
        olt1 = olt_counts()
    grew = {key: pm1[key] - pm0[key] for key in pm0}
    sent = {name: kernel1[name] - kernel0[name] for name in kernel0}
    print(f"the RG's interface: {sent}; the PM grew by {grew}")
    assert all(n >= 0 for n in grew.values()), grew                      # never shrank
    assert (grew[(UP, 5)], grew[(UP, 4)]) == (sent["tx_packets"], sent["tx_bytes"])
    assert (grew[(DOWN, 5)], grew[(DOWN, 4)]) == (sent["rx_packets"], sent["rx_bytes"])
    assert sent["tx_packets"] >= PINGS and sent["rx_packets"] >= PINGS
    for me_class in (UP, DOWN):
        assert sum(grew[(me_class, i)] for i in BUCKETS) == grew[(me_class, 5)]
        assert grew[(me_class, 12)] >= PINGS and grew[(me_class, 3)] == 0
        # the pings are unicast: broadcast and multicast are the kernels' own frames (ARP, ...), at most the rest
        assert grew[(me_class, 6)] + grew[(me_class, 7)] <= grew[(me_class, 5)] - PINGS
    assert omci.counts(codec.GET, UP, (1, 4, 5)) == {1: 0, 4: 0, 5: 0}   # no interval completed yet
    pon_rx, pon_tx, onu_rx, onu_tx = (b - a for a, b in zip(olt0, olt1))
    assert (pon_rx, pon_tx, onu_rx, onu_tx) == (grew[(UP, 5)], grew[(DOWN, 5)], grew[(UP, 4)], grew[(DOWN, 4)])


def test_the_shapers_counters_are_shown_by_oltsimctl_and_the_ui(lab, daemon, tmp_path):
    """With the built-in adapter's bandwidth profiles, `oltsimctl dataplane` shows a `shapers` table with a row for
    the T-CONT's and the UNI's scheduler (their PIR, the bytes sent as GET /v1/dataplane counts them), and the /ui
    page a `shapers` table with the same rows."""
    process, uni, server_ip, _ = subscriber(lab, daemon, tmp_path, 212)
    run("ip", "netns", "exec", uni, "ping", "-c", "5", "-i", "0.05", "-W", "2", server_ip, check=False)
    shapers = [row for row in dataplane(process)["shapers"] if row["limit"] is not None]
    assert {row["direction"] for row in shapers} == {"up", "down"}, shapers
    table = run(sys.executable, "-m", "oltsim.ctl.oltsimctl", "--server", f"127.0.0.1:{process.ports['grpc-v1']}",
                "dataplane", timeout=30).stdout
    lines = table.split("\n")
    start = lines.index("shapers") + 1
    end = lines.index("", start)                 # the table ends at the blank line before the next one
    headers = lines[start].split()
    rows = [dict(zip(headers, line.split())) for line in lines[start + 1:end]]
    rows = [row for row in rows if row.get("LIMIT_PIR", "-") != "-"]
    assert sorted((r["DIRECTION"], r["LIMIT_PIR"]) for r in rows) == sorted(
        (s["direction"], str(s["limit"]["pir"])) for s in shapers), table
    assert all(int(r["SENT_BYTES"]) > 0 for r in rows), table

    from test_ui import BrowserUnavailable, Page, start_driver
    try:
        driver = start_driver(1280, 900)
    except BrowserUnavailable as exc:
        pytest.skip(f"the /ui part: {exc}")
    try:
        page = Page(driver)
        page.open(f"http://127.0.0.1:{process.ports['rest-v1']}/ui")
        tables = page.until(lambda p: p.js("return window.oltsimUi.dataplaneEntries()"), "the shapers' table")
        drawn = next(t for t in tables if t["name"] == "shapers")
        assert drawn["headers"][:6] == ["direction", "serial", "pon", "onu id", "uni id", "alloc id"]
        pir = drawn["headers"].index("limit pir")
        assert sorted((row[0], row[pir].replace(",", "")) for row in drawn["rows"] if row[pir] != "-") == sorted(
            (s["direction"], str(s["limit"]["pir"])) for s in shapers), drawn
    finally:
        driver.quit()
