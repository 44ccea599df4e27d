"""TAP offloads in memory: the virtio-net header (oltsim.dataplane.vnet) parsed, built and moved with the tags from
real header octets; GSO super-frames and partial checksums through the pipeline (the lab of dataplane_lab: OLT id 10,
ATT flows, S-tag over C-tag on the NNI); a TAP port opened with the header and offloads on a kernel that takes them,
and plain on one that does not; the queues bounded in bytes."""
from __future__ import annotations

import struct
from errno import EINVAL

import pytest
from twisted.internet.testing import MemoryReactorClock
from twisted.pair.testing import MemoryIOSystem, Tunnel

from dataplane_lab import SERVER_MAC, Lab
from oltsim.dataplane import interfaces as itf
from oltsim.dataplane import vnet
from oltsim.dataplane.interfaces import Pump, TapPort
from oltsim.dataplane.pipeline import (Dropped, PacketIn, ToNni, ToNniUntagged, ToNniUntaggedWithHeader,
                                       ToNniWithHeader, ToUniWithHeader)
from oltsim.packets import frames as f

PON = 1
RG_MAC = bytes.fromhex("020000aa0001")
RG_IP, SERVER_IP = bytes([10, 0, 0, 2]), bytes([10, 0, 0, 1])
#: what a Linux TAP with TSO hands its reader for an RG's iperf3 stream: NEEDS_CSUM, TCPV4, hdr_len 66 (Ethernet,
#: IPv4, TCP with timestamps), gso_size 1448, csum_start 34 (the TCP header), csum_offset 16 (its checksum)
TSO_HEADER = bytes.fromhex("0101" "4200" "a805" "2200" "1000")


def ones_sum(data: bytes) -> int:
    """RFC 1071's sum, word by word (the reference the module's arithmetic is checked against)."""
    if len(data) & 1:
        data += b"\0"
    total = 0
    for i in range(0, len(data), 2):
        total += data[i] << 8 | data[i + 1]
        total = (total & 0xFFFF) + (total >> 16)
    return total


def pseudo(src: bytes, dst: bytes, proto: int, length: int) -> bytes:
    return src + dst + bytes([0, proto]) + length.to_bytes(2, "big")


def tcp_frame(payload_len: int, tags=(), dst=SERVER_MAC, src=RG_MAC) -> bytes:
    """An IPv4/TCP frame (timestamps: a 32-octet TCP header) whose TCP checksum holds the pseudo-header's sum, as
    a stack leaves it for the NIC (CHECKSUM_PARTIAL)."""
    length = 32 + payload_len
    tcp = struct.pack("!HHIIBBHHH", 40000, 5201, 1, 1, 8 << 4, 0x10, 512, ones_sum(pseudo(RG_IP, SERVER_IP, 6, length)),
                      0) + bytes([1, 1, 8, 10]) + bytes(8) + bytes(range(256)) * (payload_len // 256) \
        + bytes(payload_len % 256)
    return f.build_ethernet(dst, src, f.ETH_IPV4, f.build_ipv4(RG_IP, SERVER_IP, 6, tcp),
                            [f.VlanTag(vid) for vid in tags], pad=False)


def udp_partial(payload: bytes, sport=68, dport=67) -> tuple[bytes, bytes]:
    """(frame, header) of a UDP frame with a checksum left to finish (NEEDS_CSUM at 34 + 6), and its header."""
    length = 8 + len(payload)
    seed = ones_sum(pseudo(RG_IP, SERVER_IP, 17, length))
    udp = struct.pack("!HHHH", sport, dport, length, seed) + payload
    frame = f.build_ethernet(b"\xff" * 6, RG_MAC, f.ETH_IPV4, f.build_ipv4(RG_IP, SERVER_IP, 17, udp),
                             pad=False)
    return frame, vnet.build(vnet.VnetHeader(flags=vnet.F_NEEDS_CSUM, csum_start=34, csum_offset=6))


def udp_checksum(frame: bytes, start: int) -> int:
    """The UDP checksum of the datagram at `start` (IPv4 at start - 20), computed from scratch."""
    udp = bytearray(frame[start:start + int.from_bytes(frame[start + 4:start + 6], "big")])
    udp[6:8] = b"\0\0"
    total = ones_sum(pseudo(frame[start - 8:start - 4], frame[start - 4:start], 17, len(udp)) + bytes(udp))
    return (~total & 0xFFFF) or 0xFFFF


# ---- the header ------------------------------------------------------------------------------------------------

def test_header_octets_parse_and_build_little_endian():
    """The 10 octets a TAP gives (TUNSETVNETLE: little-endian) are read field by field and built back the same; a
    short header or an unknown GSO kind is an error, not a crash."""
    header = vnet.parse(TSO_HEADER)
    assert header == vnet.VnetHeader(flags=1, gso_type=vnet.GSO_TCPV4, hdr_len=66, gso_size=1448, csum_start=34,
                                     csum_offset=16)
    assert vnet.build(header) == TSO_HEADER
    assert vnet.parse(vnet.build(vnet.VnetHeader(gso_type=vnet.GSO_TCPV6 | vnet.GSO_ECN))).gso == vnet.GSO_TCPV6
    with pytest.raises(vnet.VnetError, match="10 octets"):
        vnet.parse(TSO_HEADER[:6])
    with pytest.raises(vnet.VnetError, match="unknown GSO type"):
        vnet.parse(bytes([0, 9]) + bytes(8))
    assert vnet.needs_header(TSO_HEADER) and not vnet.needs_header(bytes([vnet.F_DATA_VALID]) + bytes(9))


def test_tags_pushed_or_popped_move_csum_start_and_hdr_len():
    """Two tags pushed (S-tag over C-tag on the NNI) move the checksum's start and the headers' length 8 octets on,
    one popped 4 back; a header with no checksum to finish keeps its (meaningless) csum_start; no change, the same
    octets; offsets a pop would move before the frame stop at 0 (the kernel refuses such a frame)."""
    pushed = vnet.parse(vnet.shifted(TSO_HEADER, 8))
    assert (pushed.csum_start, pushed.hdr_len, pushed.gso_size, pushed.csum_offset) == (42, 74, 1448, 16)
    assert vnet.parse(vnet.shifted(vnet.shifted(TSO_HEADER, 8), -4)).csum_start == 38
    assert vnet.shifted(TSO_HEADER, 0) is TSO_HEADER
    valid_only = vnet.build(vnet.VnetHeader(flags=vnet.F_DATA_VALID, csum_start=7))
    assert vnet.parse(vnet.shifted(valid_only, 4)).csum_start == 7
    nonsense = vnet.parse(vnet.shifted(vnet.build(vnet.VnetHeader(1, vnet.GSO_TCPV4, 10, 1448, 6, 16)), -8))
    assert (nonsense.csum_start, nonsense.hdr_len) == (0, 2)        # clamped, never an exception


def test_a_super_frame_is_judged_and_counted_by_its_segments():
    """A 64,000-octet TCP payload with gso_size 1448 is 45 segments of at most 1,500 octets after the Ethernet
    header (IPv4 20 + TCP 32 + 1448), each carrying its own 66 octets of headers on the wire; tagged, the same."""
    frame = tcp_frame(64000)
    assert vnet.segment_size(TSO_HEADER, frame, 12) == 1500
    assert vnet.on_wire(TSO_HEADER, frame) == (45, 64000 + 45 * 66)
    tagged = tcp_frame(64000, tags=(900, 901))
    assert vnet.segment_size(vnet.shifted(TSO_HEADER, 8), tagged, 20) == 1500
    assert vnet.on_wire(vnet.shifted(TSO_HEADER, 8), tagged) == (45, 64000 + 45 * 74)
    assert vnet.on_wire(vnet.PLAIN, frame) == (1, len(frame))


def test_a_partial_checksum_is_finished_as_the_kernel_would():
    """A UDP datagram whose checksum the stack left to the NIC (the pseudo-header's sum in the field) comes out of
    `completed` with the checksum computed from scratch; a frame with nothing to finish is the same object; a GSO
    super-frame or a checksum outside the frame is an error."""
    for size in (1, 2, 300, 1471):
        frame, header = udp_partial(bytes(range(256)) * 6 + bytes(size))
        done = vnet.completed(header, frame)
        assert int.from_bytes(done[40:42], "big") == udp_checksum(frame, 34)
        assert done[:40] == frame[:40] and done[42:] == frame[42:]
    assert vnet.completed(vnet.PLAIN, frame) is frame
    with pytest.raises(vnet.VnetError, match="GSO"):
        vnet.completed(TSO_HEADER, tcp_frame(3000))
    with pytest.raises(vnet.VnetError, match="outside"):
        vnet.completed(header, frame[:38])


# ---- through the pipeline --------------------------------------------------------------------------------------

@pytest.fixture
def lab():
    return Lab()


@pytest.fixture
def rg(lab):
    """The ONU and service of the RG on UNI 2 of ONU 11 of PON 1, bound and configured (ATT flows)."""
    return lab.subscriber(PON, 11, 2, 1100)


def test_an_rgs_super_frame_leaves_the_nni_tagged_with_its_header_moved(lab, rg):
    """An RG's 64 KiB TCP super-frame is forwarded whole, not dropped as larger than the NNI's MTU: on the tagged NNI
    with S-tag over C-tag and csum_start/hdr_len 8 octets on, on the untagged NNI as it came; its payload is not
    touched; the UNI, NNI and flow counters count its 45 segments and their octets on the wire."""
    onu, service = rg
    frame = tcp_frame(64000)
    out = lab.dp.from_uni(onu.serial, 2, frame, TSO_HEADER)
    assert [type(o) for o in out] == [ToNniWithHeader, ToNniUntaggedWithHeader]
    tagged, plain = out
    assert [t.vid for t in f.parse_ethernet(tagged.frame).tags] == [service.s_tag, service.c_tag]
    assert tagged.frame[20:] == frame[12:] and plain.frame == frame
    assert vnet.parse(tagged.vnet) == vnet.VnetHeader(1, vnet.GSO_TCPV4, 74, 1448, 42, 16)
    assert plain.vnet == TSO_HEADER
    counters = lab.dp.counters()
    uni = counters["unis"][f"{onu.serial}/2"]
    assert (uni["rx_frames"], uni["rx_bytes"]) == (45, 64000 + 45 * 66)
    assert (counters["nni"]["tx_frames"], counters["nni"]["tx_bytes"]) == (45, 64000 + 45 * 74)
    assert (counters["nni_untagged"]["tx_frames"], counters["nni_untagged"]["tx_bytes"]) == (45, 64000 + 45 * 66)
    hsia = [v for k, v in counters["flows"].items() if v["frames"]]
    assert hsia == [{"frames": 45, "bytes": 64000 + 45 * 70}]       # at the OLT: the C-tag the ONU pushed


def test_a_servers_super_frame_reaches_the_uni_with_its_tags_popped_from_its_header(lab, rg):
    """A server's super-frame on the tagged NNI (S-tag over C-tag) reaches the RG untagged, csum_start back at 34;
    one whose segments would exceed the MTU (gso_size 1500 with a 32-octet TCP header) is dropped as oversize, and
    a super-frame whose header points past its end as malformed."""
    onu, service = rg
    down = tcp_frame(20000, tags=(service.s_tag, service.c_tag), dst=RG_MAC, src=SERVER_MAC)
    header = vnet.shifted(TSO_HEADER, 8)
    (out,) = lab.dp.from_nni(down, header)
    assert type(out) is ToUniWithHeader and out.frame[12:] == down[20:]
    assert vnet.parse(out.vnet).csum_start == 34 and vnet.parse(out.vnet).hdr_len == 66
    too_big = vnet.build(vnet.VnetHeader(1, vnet.GSO_TCPV4, 74, 1500, 42, 16))
    assert [(o.where, o.reason) for o in lab.dp.from_nni(down, too_big)] == [("nni", "oversize")]
    past_end = vnet.build(vnet.VnetHeader(1, vnet.GSO_TCPV4, 74, 1448, len(down) - 4, 16))
    assert [(o.where, o.reason) for o in lab.dp.from_nni(down, past_end)] == [("nni", "malformed")]


def test_a_trapped_frame_reaches_the_adapter_with_its_checksum_finished(lab, rg):
    """A DHCP Discover whose UDP checksum the RG's kernel left to finish is trapped with it finished (the adapter
    and whoever it relays to take no header); a super-frame a trap flow would take is dropped as gso-unsupported."""
    onu, service = rg
    discover = f.build_dhcp(f.BOOTREQUEST, 7, RG_MAC, [(f.OPT_MESSAGE_TYPE, b"\x01")])
    frame, header = udp_partial(discover)
    (out,) = lab.dp.from_uni(onu.serial, 2, frame, header)
    assert type(out) is PacketIn
    sent = out.indication.pkt                      # with the ONU's C-tag: the UDP header 4 octets on
    assert int.from_bytes(sent[44:46], "big") == udp_checksum(sent, 38)
    gso_dhcp = vnet.build(vnet.VnetHeader(1, vnet.GSO_UDP_L4, 42, 200, 34, 6))
    assert [o.reason for o in lab.dp.from_uni(onu.serial, 2, frame, gso_dhcp) if isinstance(o, Dropped)] == [
        "gso-unsupported"]


def test_plain_frames_carry_no_header(lab, rg):
    """Without a header (offloads off, or nothing to offload) the outputs are the plain ones and carry none."""
    onu, _ = rg
    out = lab.dp.from_uni(onu.serial, 2, tcp_frame(1000))
    assert [type(o) for o in out] == [ToNni, ToNniUntagged] and [o.vnet for o in out] == [None, None]


# ---- the TAP port ----------------------------------------------------------------------------------------------

class SuperTunnel(Tunnel):
    """Twisted's in-memory TAP, taking writes of a super-frame and its header (Twisted's own takes 1 KiB at most)."""
    SEND_BUFFER_SIZE = itf.MAX_SUPER_FRAME


class OffloadingKernel(MemoryIOSystem):
    """Twisted's in-memory I/O system answering the virtio-net ioctls as Linux does (recorded in `ioctls`), except
    the offload flags in `refuse` (EINVAL, as a kernel without USO)."""

    def __init__(self, refuse=()):
        super().__init__()
        self.registerSpecialDevice(Tunnel._DEVICE_NAME, SuperTunnel)
        self.refuse = set(refuse)
        self.ioctls = []

    def ioctl(self, fd, request, args):
        if request in (itf.TUNSETVNETHDRSZ, itf.TUNSETVNETLE, itf.TUNSETOFFLOAD):
            if request == itf.TUNSETOFFLOAD and args in self.refuse:
                raise OSError(EINVAL, "Invalid argument")
            self.ioctls.append((request, args))
            return 0
        return super().ioctl(fd, request, args)


def test_a_tap_opens_with_the_header_and_the_most_offloads_the_kernel_takes():
    """Asked for offloads, the TAP is made with IFF_VNET_HDR, a 10-octet little-endian header, and the first
    offload set the kernel takes (here TSO with ECN, a kernel without USO); it reads super-frames (64 KiB and its
    header at once) and writes a frame after its header."""
    kernel = OffloadingKernel(refuse={itf.OFFLOADS[0]})
    reactor = MemoryReactorClock()
    port = TapPort("u0-1-0", ("S", 0), Pump(reactor, lambda p, d: None), offload=True, reactor=reactor,
                   system=kernel)
    port.open()
    tunnel = kernel.getTunnel(port)
    assert tunnel.tunnelMode & itf.TunnelFlags.IFF_VNET_HDR.value
    assert kernel.ioctls == [(itf.TUNSETVNETHDRSZ, struct.pack("i", 10)), (itf.TUNSETVNETLE, struct.pack("i", 1)),
                             (itf.TUNSETOFFLOAD, itf.OFFLOADS[1])]
    assert port.vnet_header and port.offloads == itf.OFFLOADS[1] and port.offload_refused is None
    assert port.counters()["offloads"] == itf.OFFLOADS[1]
    big = TSO_HEADER + tcp_frame(64000)
    tunnel.readBuffer.append(big)
    port.doRead()
    assert list(port.queue) == [big] and port.counters()["rx_bytes"] == len(big) - 10
    assert port.send(b"F" * 60, TSO_HEADER) and port.send(b"G" * 60)
    assert list(tunnel.writeBuffer)[-2:] == [TSO_HEADER + b"F" * 60, vnet.PLAIN + b"G" * 60]
    assert port.counters()["tx_bytes"] == 120
    port.close()


def test_a_kernel_refusing_offloads_gets_a_plain_tap():
    """A kernel that refuses the header's ioctls (Twisted's in-memory one refuses every ioctl but TUNSETIFF) gets
    the TAP made again without IFF_VNET_HDR: plain frames read and written, why it was refused kept."""
    kernel = MemoryIOSystem()
    kernel.registerSpecialDevice(Tunnel._DEVICE_NAME, Tunnel)
    reactor = MemoryReactorClock()
    port = TapPort("u0-1-0", ("S", 0), Pump(reactor, lambda p, d: None), offload=True, reactor=reactor,
                   system=kernel)
    port.open()
    tunnel = kernel.getTunnel(port)
    assert not tunnel.tunnelMode & itf.TunnelFlags.IFF_VNET_HDR.value
    assert not port.vnet_header and port.offloads == 0 and port.offload_refused
    assert port.send(b"F" * 60, TSO_HEADER) and tunnel.writeBuffer[-1] == b"F" * 60
    port.close()


def test_a_jumbo_flood_holds_the_queues_bound_in_bytes_not_a_thousand_frames():
    """A flood of 9,000-octet frames fills a UNI's queue to its bound in bytes (about 1 MiB by default: 117
    frames, not the 1,024 frames, 9 MB, of a bound in frames) and the port stops reading; the pump taking half of
    it lets the port read again; nothing read is lost."""
    kernel = MemoryIOSystem()
    kernel.registerSpecialDevice(Tunnel._DEVICE_NAME, Tunnel)
    reactor = MemoryReactorClock()
    handled = []
    pump = Pump(reactor, lambda p, d: handled.append(len(d)), budget=64, per_round=64, budget_bytes=1 << 30)
    port = TapPort("u0-1-0", ("S", 0), pump, burst=16, reactor=reactor, system=kernel)
    port.open()
    tunnel = kernel.getTunnel(port)
    tunnel.readBuffer.extend(bytes(9000) for _ in range(400))
    for _ in range(20):
        port.doRead()
    queued = port.counters()
    assert queued["queued"] == -(-itf.QUEUE_BYTES // 9000) and queued["queued_bytes"] < itf.QUEUE_BYTES + 9000
    assert port not in reactor.readers and not port.dropped
    one_turn = reactor.getDelayedCalls()[0]
    reactor.calls.remove(one_turn)
    one_turn.func(*one_turn.args)
    assert len(handled) == 64 and port in reactor.readers
    assert port.counters()["rx_frames"] == len(handled) + len(port.queue)
    port.close()


def test_a_turn_hands_on_about_its_budget_in_bytes():
    """Super-frames queued on two ports: a reactor turn hands on frames until about BUDGET_BYTES (the frame that
    crosses it the last: two of 64 KiB), round-robin, and the rest on the next turns, so the control plane runs
    between them; small frames are bound by the budget in frames as before."""
    per_read = -(-itf.BURST_BYTES // 65536)
    per_turn = -(-itf.BUDGET_BYTES // 65536)
    kernel = OffloadingKernel()
    reactor = MemoryReactorClock()
    handled = []
    pump = Pump(reactor, lambda p, d: handled.append((p.name, len(d))), per_round=2)
    ports = [TapPort(f"u0-{n}-0", ("S", n), pump, burst=8, offload=True, reactor=reactor, system=kernel)
             for n in (1, 2)]
    for port in ports:
        port.open()
        kernel.getTunnel(port).readBuffer.extend(bytes(65536) for _ in range(2 * per_read))
        port.doRead()
        assert len(port.queue) == per_read   # a readable event reads about BURST_BYTES too
        port.doRead()
        assert len(port.queue) == 2 * per_read
    turns = []
    while reactor.getDelayedCalls():
        before = len(handled)
        call = reactor.getDelayedCalls()[0]
        reactor.calls.remove(call)
        call.func(*call.args)
        turns.append(len(handled) - before)
    assert turns == [per_turn] * (4 * per_read // per_turn)
    assert [name for name, _ in handled[:4]] == ["u0-1-0"] * 2 + ["u0-2-0"] * 2
    for port in ports:
        kernel.getTunnel(port).readBuffer.extend(bytes(64) for _ in range(40))
        port.doRead()
    call = reactor.getDelayedCalls()[0]
    reactor.calls.remove(call)
    call.func(*call.args)
    assert len(handled) == 4 * per_read + itf.BUDGET
    for port in ports:
        port.close()


# ---- the service -----------------------------------------------------------------------------------------------

class HeaderDataPlane:
    """A pipeline stand-in recording each frame and header it is given, answering with `answer(key, frame)`."""

    def __init__(self, answer):
        self.answer = answer
        self.seen = []

    def bind_uni(self, serial, uni_id):
        pass

    def unbind_uni(self, serial, uni_id):
        pass

    def from_uni(self, serial, uni_id, frame, header=None):
        self.seen.append(("uni", frame, header))
        return self.answer("uni", frame)

    def from_nni(self, frame, header=None):
        self.seen.append(("nni", frame, header))
        return self.answer("nni", frame)

    def from_nni_untagged(self, frame, header=None):
        self.seen.append(("nni-untagged", frame, header))
        return self.answer("nni-untagged", frame)

    def counters(self):
        return {"unis": {}, "flows": {}, "nni": {}}


def service_of(kernel, answer, **options):
    from test_dataplane_io import FakeHost, olt_of
    from oltsim.dataplane.interfaces import plan_interfaces
    from oltsim.dataplane.service import DataPlaneService
    olt = olt_of(pon=1, onu=1, uni=1)
    plan = plan_interfaces(olt, "1", prefix="x", nni="xnni", nni_untagged="xnniu")
    reactor = MemoryReactorClock()
    dataplane = HeaderDataPlane(answer)
    svc = DataPlaneService(olt, dataplane, plan, reactor, host=FakeHost(), system=kernel, **options)
    svc.startService()
    return svc, dataplane, reactor


def test_the_service_hands_the_header_on_and_writes_it_out():
    """With offloads, a super-frame read from a UNI reaches the pipeline without its header octets and with its
    header; a frame whose header says nothing (no checksum to finish, no GSO) reaches it with none; an output's
    header is written in front of its frame, PLAIN for an output without."""
    frame = tcp_frame(64000)
    pushed = vnet.shifted(TSO_HEADER, 8)
    svc, dataplane, reactor = service_of(OffloadingKernel(), lambda key, data: [
        ToNniWithHeader(data, None, pushed) if len(data) > 100 else ToNni(data), ToNniUntagged(data)])
    uni, nni, nniu = (svc.ports[key] for key in ((svc.plan.unis[0].serial, 0), "nni", "nni-untagged"))
    assert uni.vnet_header and nni.vnet_header
    tunnel = svc.system.getTunnel(uni)
    tunnel.readBuffer.extend([TSO_HEADER + frame, bytes([vnet.F_DATA_VALID]) + bytes(9) + b"A" * 60])
    uni.doRead()
    reactor.advance(0)
    assert dataplane.seen == [("uni", frame, TSO_HEADER), ("uni", b"A" * 60, None)]
    assert list(svc.system.getTunnel(nni).writeBuffer) == [pushed + frame, vnet.PLAIN + b"A" * 60]
    assert list(svc.system.getTunnel(nniu).writeBuffer) == [vnet.PLAIN + frame, vnet.PLAIN + b"A" * 60]
    svc.stopService()


def test_without_the_header_a_super_frame_is_refused_and_a_checksum_finished():
    """Towards TAPs that have no header (a kernel that refused offloads, said once), an output's super-frame is
    refused and counted as gso-unsupported on that interface, and a frame with a checksum to finish is written with
    it finished."""
    udp, udp_header = udp_partial(b"x" * 301)
    svc, dataplane, reactor = service_of(
        memory_kernel(), lambda key, data: [ToNniWithHeader(tcp_frame(64000), None, TSO_HEADER),
                                            ToNniUntaggedWithHeader(udp, None, udp_header)])
    uni, nni, nniu = (svc.ports[key] for key in ((svc.plan.unis[0].serial, 0), "nni", "nni-untagged"))
    assert not uni.vnet_header and uni.offload_refused
    svc.system.getTunnel(uni).readBuffer.append(b"B" * 60)
    uni.doRead()
    reactor.advance(0)
    assert dataplane.seen == [("uni", b"B" * 60, None)]
    assert not svc.system.getTunnel(nni).writeBuffer and nni.dropped == {"gso-unsupported": 1}
    (written,) = svc.system.getTunnel(nniu).writeBuffer
    assert int.from_bytes(written[40:42], "big") == udp_checksum(udp, 34) and written[42:] == udp[42:]
    assert svc.counters()["interfaces"]["xnni"]["dropped"] == {"gso-unsupported": 1}
    svc.stopService()


def memory_kernel():
    kernel = MemoryIOSystem()
    kernel.registerSpecialDevice(Tunnel._DEVICE_NAME, Tunnel)
    return kernel


def test_a_kernel_refusing_offloads_is_said_once_for_all_its_taps():
    """Three TAPs on a kernel that refuses the header: one warning line naming the first and why, then plain
    frames; with --dataplane-offload off nothing is said."""
    from twisted.logger import capturedLogs, formatEvent
    with capturedLogs() as logged:
        svc, _, _ = service_of(memory_kernel(), lambda key, data: [])
        svc.stopService()
        quiet, _, _ = service_of(memory_kernel(), lambda key, data: [], offload=False)
        quiet.stopService()
    lines = [formatEvent(e) for e in logged if "offload" in (e.get("log_format") or "")]
    assert len(lines) == 1 and lines[0].startswith("dataplane-offload-refused interface=xu0-1-0 why=")
    assert len(svc.plan.names()) == 3
