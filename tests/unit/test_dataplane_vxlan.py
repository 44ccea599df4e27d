"""VXLAN attachments in memory: the VNI rule, the data plane's service over VXLAN segments on MemoryReactorClock (the
UDP port bound on 127.0.0.1, its datagrams handed to the protocol by the test and its writes recorded), the header
checks, learning and holding a remote, and the settings."""
from __future__ import annotations

import random
import struct

import pytest
from twisted.internet.task import Clock
from twisted.internet.testing import MemoryReactorClock
from test_dataplane_io import FakeDataPlane, FakeHost, olt_of

from oltsim.config import load_settings
from oltsim.dataplane.interfaces import plan_interfaces
from oltsim.dataplane.pipeline import ToNniUntagged, ToUni
from oltsim.dataplane.service import DataPlaneError, DataPlaneService
from oltsim.dataplane.vxlan import VxlanSegments, _plain, encapsulate, vni_of
from oltsim.model.builder import build_olt
from oltsim.settings.errors import ConfigError

RG = "127.0.0.5"
OTHER = "127.0.0.6"


class RecordingTransport:
    """What the segments write datagrams with, as the socket's `sendto(datagram, (host, port))`."""

    def __init__(self):
        self.sent = []

    def sendto(self, datagram, addr):
        self.sent.append((datagram, addr))

    def sendmsg(self, buffers, ancillary, flags, addr):
        """A UDP GSO send: the buffer cut at the cmsg's size, one datagram each, as the kernel sends it."""
        (buffer,), ((_, _, size),) = buffers, ancillary
        size = struct.unpack("=H", size)[0]
        self.sent.extend((buffer[at:at + size], addr) for at in range(0, len(buffer), size))


def frame(n: int, size: int = 60) -> bytes:
    return bytes([n & 0xFF]) * size


def running(remote=None, hold=300.0, spec="all", nni_untagged="nniu", answer=None):
    """A started service with VXLAN attachments for every UNI of a 1x2x2 OLT and the untagged NNI."""
    reactor = MemoryReactorClock()
    olt = olt_of()
    segments = VxlanSegments(reactor, port=0, listen="127.0.0.1", remote=remote, hold=hold)
    dataplane = FakeDataPlane(answer)
    host = FakeHost(privileged=False)
    svc = DataPlaneService(olt, dataplane, plan_interfaces(olt, spec, nni_untagged=nni_untagged), reactor,
                           host=host, vxlan=segments)
    svc.startService()
    transport = RecordingTransport()
    # the socket is bound and its reader added (a MemoryReactor never reads it); what it sends is recorded
    segments.sendto, segments.sendmsg = transport.sendto, transport.sendmsg
    return svc, segments, dataplane, transport, reactor, host


def test_vnis_of_a_lab_do_not_collide():
    """The NNI's VNI is 1, the untagged NNI's 2, a UNI's 1000 + its index in PON, ONU, UNI order: OLT 10 with 16 PONs
    x 16 ONUs x 4 UNIs numbers 1026 attachments apart, and the base moves them all."""
    settings = load_settings({"pon": 16, "onu": 16, "uni": 4, "olt_id": 10}, None)
    olt = build_olt(settings, Clock(), random.Random(1))
    keys = ["nni", "nni-untagged"] + [(onu.serial, uni.id) for onu in olt.onus for uni in onu.eth_unis]
    vnis = [vni_of(olt, key) for key in keys]
    assert vnis[:2] == [1, 2] and vnis[2:] == list(range(1000, 2024)) and len(set(vnis)) == 1026
    second = olt.onus[1]
    assert (second.pon.id, second.index) == (0, 2) and vni_of(olt, (second.serial, 0)) == 1004
    assert vni_of(olt, (olt.onus[16].serial, 3), base=100000) == 100000 + 1000 + 16 * 4 + 3
    assert vni_of(olt, "nni", base=100000) == 100001


def test_start_checks_and_makes_nothing_on_the_host_and_stop_leaves_nothing():
    """VXLAN attachments need no privilege and no `ip`: the start binds the port and opens one attachment a UNI and
    NNI; the UNIs are bound; the stop closes the port and leaves no delayed call."""
    svc, segments, dataplane, _, reactor, host = running()
    assert host.commands == [] and reactor.getReaders() == [segments]
    assert sorted(segments.by_vni) == [2, 1000, 1001, 1002, 1003]
    assert len(dataplane.bound) == 4
    interfaces = svc.counters()["interfaces"]
    assert interfaces["u0-1-0"]["kind"] == "vxlan" and interfaces["u0-1-0"]["vni"] == 1000
    assert interfaces["u0-1-0"]["carrier"] is None and interfaces["nniu"]["vni"] == 2
    port = svc.ports["nni-untagged"]
    svc.stopService()
    assert not segments.listening and segments.by_vni == {} and not dataplane.bound and svc.ports == {}
    assert reactor.getReaders() == []
    assert port.protocol.transport is None and not port.send(frame(1)) and port.dropped == {"interface-closed": 1}
    assert reactor.getDelayedCalls() == []


def test_a_good_datagram_reaches_the_pipeline_and_teaches_the_remote():
    """A datagram with a good header and a known VNI hands its inner frame to the pipeline as its UNI's; the remote
    is learned from it, shown per attachment, and the pipeline's outputs go back to it encapsulated, at the VXLAN
    port."""
    olt = olt_of()
    serial = olt.onus[0].serial
    svc, segments, dataplane, transport, reactor, _ = running(
        answer=lambda key, f: [ToUni(serial, 0, f[::-1]), ToNniUntagged(f)] if key == (serial, 0) else [])
    segments.datagramReceived(encapsulate(1000, frame(1)), (RG, 40001))
    reactor.advance(0)
    assert dataplane.seen == [((serial, 0), frame(1))]
    entry = svc.counters()["interfaces"]["u0-1-0"]
    assert entry["remote"] == RG and entry["remote_learned"] and entry["rx_frames"] == 1 and entry["tx_frames"] == 1
    # the untagged NNI has no remote yet: its frame is dropped and counted
    assert transport.sent == [(encapsulate(1000, frame(1)[::-1]), (RG, segments.port))]
    assert svc.counters()["interfaces"]["nniu"]["dropped"] == {"vxlan-no-remote": 1}
    svc.stopService()


def test_datagrams_on_the_socket_are_read_in_batches_and_a_failing_one_does_not_stop_the_rest():
    """Datagrams sent to the bound port are read by the reactor's reader, at most READ_BATCH a turn (the rest on the
    next), each checked and handed on; one whose handling raises is counted and the next is still read."""
    import socket
    from oltsim.dataplane.vxlan import READ_BATCH
    olt = olt_of()
    serial = olt.onus[0].serial
    svc, segments, dataplane, _, reactor, _ = running()
    client = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    client.bind(("127.0.0.1", 0))
    try:
        to = ("127.0.0.1", segments.port)
        for n in range(READ_BATCH + 3):
            client.sendto(encapsulate(1000, frame(n)), to)
        client.sendto(b"\x08\x00", to)
        segments.doRead()
        assert segments.rx_datagrams == READ_BATCH
        segments.doRead()
        assert segments.rx_datagrams == READ_BATCH + 4 and segments.dropped == {"vxlan-bad-header": 1}
        reactor.advance(0)
        assert [f[0] for _, f in dataplane.seen] == list(range(READ_BATCH + 3))
        assert svc.counters()["interfaces"]["u0-1-0"]["remote"] == "127.0.0.1"
        broken = svc.ports[(serial, 0)]
        broken.received = None        # its handling raises from now on
        client.sendto(encapsulate(1000, frame(1)), to)
        client.sendto(encapsulate(2, frame(2)), to)
        segments.doRead()
        reactor.advance(0)
        assert segments.dropped["vxlan-handler-failed"] == 1 and dataplane.seen[-1] == ("nni-untagged", frame(2))
    finally:
        client.close()
        svc.stopService()


def test_a_turns_frames_to_one_remote_leave_in_one_gso_send_and_arrive_as_datagrams():
    """Frames to one remote in one pump turn (here two attachments', with a fixed remote) leave in UDP GSO sends, each
    a run of one size with at most one shorter datagram last, and reach the remote's socket as one datagram each, in
    order, byte for byte; every frame is counted on its attachment."""
    import socket
    olt = olt_of()
    serial = olt.onus[0].serial
    sizes = [1514] * 20 + [600] + [1514] * 3 + [60, 1514]
    outputs = [ToUni(serial, 0, frame(n, size)) for n, size in enumerate(sizes)] + [ToNniUntagged(frame(99))]
    reactor = MemoryReactorClock()
    segments = VxlanSegments(reactor, port=0, listen="127.0.0.1", remote="127.0.0.7")
    svc = DataPlaneService(olt, FakeDataPlane(lambda key, f: outputs),
                           plan_interfaces(olt, "all", nni_untagged="nniu"), reactor, host=FakeHost(), vxlan=segments)
    svc.startService()
    remote = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    remote.bind(("127.0.0.7", segments.port))
    remote.settimeout(2)
    sends = []
    real = segments.sendmsg
    segments.sendmsg = lambda *args: sends.append(len(args[0][0])) or real(*args)
    try:
        client = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        client.bind(("127.0.0.7", 0))
        client.sendto(encapsulate(1000, frame(1)), ("127.0.0.1", segments.port))
        client.close()
        segments.doRead()
        reactor.advance(0)                 # one pump turn: the frame in, its outputs out
        got = [remote.recv(65536) for _ in range(len(outputs))]
    finally:
        remote.close()
    assert got == [encapsulate(1000, out.frame) for out in outputs[:-1]] + [encapsulate(2, frame(99))]
    if segments.gso:
        assert sends == [20 * 1522 + 608, 3 * 1522 + 68, 1522 + 68]
    counters = svc.counters()["interfaces"]
    assert counters["u0-1-0"]["tx_frames"] == len(sizes) and counters["u0-1-0"]["tx_bytes"] == sum(sizes)
    assert counters["nniu"]["tx_frames"] == 1 and segments.counters()["tx_datagrams"] == len(outputs)
    svc.stopService()


def test_datagrams_wait_for_the_pump_to_be_idle_or_for_a_full_batch():
    """A busy pump's turn leaves its datagrams pending (the next turn, which comes, sends them with its own) until
    FLUSH_AT wait; the turn that leaves the pump idle sends them all."""
    from oltsim.dataplane.vxlan import FLUSH_AT
    svc, segments, dataplane, transport, reactor, _ = running(remote=RG)
    port = svc.ports["nni-untagged"]
    for n in range(3):
        port.send(frame(n))
    segments.turn_done(False)
    assert transport.sent == [] and len(segments.pending) == 3 and reactor.getDelayedCalls() == []
    segments.turn_done(True)
    assert [d for d, _ in transport.sent] == [encapsulate(2, frame(n)) for n in range(3)] and not segments.pending
    for n in range(FLUSH_AT):
        port.send(frame(n))
    segments.turn_done(False)
    assert len(transport.sent) == 3 + FLUSH_AT and port.counters()["tx_frames"] == 3 + FLUSH_AT
    svc.stopService()


def test_interleaved_remotes_each_get_their_frames_in_order_in_one_send():
    """Frames of one turn for two remotes, interleaved, leave as one GSO send per remote, each remote's in the order
    they came."""
    import socket
    from oltsim.dataplane.interfaces import Pump
    from oltsim.dataplane.vxlan import VxlanPort
    reactor = MemoryReactorClock()
    segments = VxlanSegments(reactor, port=0, listen="127.0.0.1")
    segments.open()
    receivers = []
    for host in ("127.0.0.8", "127.0.0.9"):
        receiver = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        receiver.bind((host, segments.port))
        receiver.settimeout(2)
        receivers.append(receiver)
    pump = Pump(reactor, lambda port, data: None)
    ports = [VxlanPort(segments, f"u{n}", ("S", n), 1000 + n, pump) for n in range(2)]
    sends = []
    real = segments.sendmsg
    segments.sendmsg = lambda *args: sends.append((args[3][0], len(args[0][0]))) or real(*args)
    try:
        for port, host in zip(ports, ("127.0.0.8", "127.0.0.9")):
            port.open()
            port.remote = host
        for n in range(20):
            assert ports[n % 2].send(frame(n, 1514))
        segments.flush()
        got = [[receiver.recv(65536) for _ in range(10)] for receiver in receivers]
    finally:
        for receiver in receivers:
            receiver.close()
        segments.close()
    assert got == [[encapsulate(1000 + n % 2, frame(n, 1514)) for n in range(side, 20, 2)] for side in (0, 1)]
    if segments.gso:
        assert sends == [("127.0.0.8", 10 * 1522), ("127.0.0.9", 10 * 1522)]
    assert [port.protocol.tx_frames for port in ports] == [10, 10]


@pytest.mark.parametrize("datagram, reason", [
    (b"\x08\x00\x00", "vxlan-bad-header"),
    (struct.pack("!II", 0, 1000 << 8) + frame(2), "vxlan-bad-header"),                # the I flag clear
    (struct.pack("!II", 0x0C000000, 1000 << 8) + frame(2), "vxlan-bad-header"),       # a reserved flag set
    (struct.pack("!II", 0x08000001, 1000 << 8) + frame(2), "vxlan-bad-header"),       # reserved bits after flags
    (struct.pack("!II", 0x08000000, 1000 << 8 | 1) + frame(2), "vxlan-bad-header"),   # the last reserved byte
    (encapsulate(4242, frame(2)), "vxlan-unknown-vni"),
    (encapsulate(1000, frame(2, 13)), "vxlan-runt"),
])
def test_bad_datagrams_are_dropped_and_counted(datagram, reason):
    """A datagram with a bad header, an unknown VNI or an inner frame without a whole Ethernet header reaches
    nothing and is counted by its reason; it teaches no remote."""
    svc, segments, dataplane, _, reactor, _ = running()
    segments.datagramReceived(datagram, (RG, 40001))
    reactor.advance(0)
    assert dataplane.seen == []
    counters = svc.counters()
    assert counters["vxlan"]["dropped"] == {reason: 1} and counters["vxlan"]["rx_datagrams"] == 1
    assert counters["interfaces"]["u0-1-0"]["remote"] is None
    if reason == "vxlan-runt":
        assert counters["interfaces"]["u0-1-0"]["dropped"] == {"vxlan-runt": 1}
    svc.stopService()


def test_a_learned_remote_is_held_until_it_is_silent():
    """Once a VNI's remote is learned, another source's datagrams for it are dropped and counted, while the remote
    sends (and after, within the hold); silent longer than the hold, the next source takes the VNI."""
    svc, segments, dataplane, transport, reactor, _ = running(hold=30.0)
    segments.datagramReceived(encapsulate(1001, frame(1)), (RG, 40001))
    reactor.advance(20)
    segments.datagramReceived(encapsulate(1001, frame(2)), (OTHER, 40001))
    segments.datagramReceived(encapsulate(1001, frame(3)), (RG, 40002))   # another source port: the same RG
    reactor.advance(29)
    segments.datagramReceived(encapsulate(1001, frame(4)), (OTHER, 40001))
    reactor.advance(0)
    assert [f for _, f in dataplane.seen] == [frame(1), frame(3)]
    counters = svc.counters()
    assert counters["vxlan"]["dropped"] == {"vxlan-foreign-source": 2}
    assert counters["interfaces"]["u0-1-1"]["dropped"] == {"vxlan-foreign-source": 2}
    reactor.advance(2)   # 31 s of silence
    segments.datagramReceived(encapsulate(1001, frame(5)), (OTHER, 40001))
    reactor.advance(0)
    assert dataplane.seen[-1][1] == frame(5) and svc.counters()["interfaces"]["u0-1-1"]["remote"] == OTHER
    svc.stopService()


def test_a_fixed_remote_is_the_only_source_and_destination():
    """With --vxlan-remote every VNI's frames go to it from the start, and datagrams from any other address are
    foreign."""
    svc, segments, dataplane, transport, reactor, _ = running(remote=RG)
    svc.deliver([ToNniUntagged(frame(7))])
    assert transport.sent == []          # sent outside a pump's turn: at the start of the reactor's next
    reactor.advance(0)
    assert transport.sent == [(encapsulate(2, frame(7)), (RG, segments.port))]
    segments.datagramReceived(encapsulate(2, frame(8)), (OTHER, 4789))
    segments.datagramReceived(encapsulate(2, frame(9)), (RG, 4789))
    reactor.advance(0)
    assert dataplane.seen == [("nni-untagged", frame(9))]
    entry = svc.counters()["interfaces"]["nniu"]
    assert entry["remote"] == RG and not entry["remote_learned"]
    assert entry["dropped"] == {"vxlan-foreign-source": 1}
    svc.stopService()


def test_dual_stack_addresses_are_shown_plain_and_ipv4_is_sent_mapped():
    """On the default dual-stack socket an IPv4 source arrives IPv4-mapped: it is learned and shown as IPv4 and
    sent to as the mapped address; IPv6 stays as it is."""
    assert _plain("::ffff:10.0.0.1") == "10.0.0.1" and _plain("fd00::0001") == "fd00::1"
    reactor = MemoryReactorClock()
    segments = VxlanSegments(reactor, port=0)
    segments.open()
    transport = RecordingTransport()
    segments.sendto = transport.sendto
    for remote in ("10.0.0.1", "fd00::1"):
        assert segments.send_to(encapsulate(5, frame(1)), segments.destination(remote)) is None
    assert [addr for _, addr in transport.sent] == [("::ffff:10.0.0.1", segments.port), ("fd00::1", segments.port)]
    segments.close()


def test_a_port_in_use_is_one_line_and_nothing_is_left():
    """A VXLAN port the host refuses (taken) fails the start in one line naming it; the UNIs stay unbound."""
    import socket
    taken = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    taken.bind(("127.0.0.1", 0))
    port = taken.getsockname()[1]
    olt = olt_of()
    dataplane = FakeDataPlane()
    svc = DataPlaneService(olt, dataplane, plan_interfaces(olt, "1"), MemoryReactorClock(), host=FakeHost(),
                           vxlan=VxlanSegments(MemoryReactorClock(), port=port, listen="127.0.0.1"))
    try:
        with pytest.raises(DataPlaneError, match=f"VXLAN port {port} at 127.0.0.1 cannot be bound"):
            svc.startService()
    finally:
        taken.close()
    assert svc.ports == {} and not dataplane.bound


@pytest.mark.parametrize("given, field", [
    ({"attachment": "vxlan", "uni_interfaces": "all", "uni_netns": True}, "uni_netns"),
    ({"vxlan_listen": "localhost"}, "vxlan_listen"),
    ({"vxlan_remote": "10.0.0"}, "vxlan_remote"),
    ({"attachment": "vxlan", "vxlan_vni_base": 2**24 - 1000}, "vxlan_vni_base"),
    ({"attachment": "gre"}, "attachment"),
    ({"vxlan_port": 0}, "vxlan_port"),
])
def test_settings_refuse_what_vxlan_cannot_do(given, field):
    """The VXLAN settings refuse namespaces (nothing is made on the host), names for addresses, a VNI past 24 bits,
    an unknown attachment kind and port 0, naming the setting."""
    with pytest.raises(ConfigError) as raised:
        load_settings(given, None)
    assert raised.value.setting == field


def test_settings_take_the_vxlan_rows():
    """The rows give their defaults and take what is given."""
    settings = load_settings({}, None)
    assert (settings.attachment, settings.vxlan_port, settings.vxlan_hold, settings.vxlan_vni_base) == \
        ("tap", 4789, 300.0, 0)
    settings = load_settings({"attachment": "vxlan", "vxlan_port": "14789", "vxlan_listen": "::1",
                              "vxlan_remote": "10.1.2.3", "vxlan_hold": "5"}, None)
    assert (settings.attachment, settings.vxlan_port, settings.vxlan_listen, settings.vxlan_remote,
            settings.vxlan_hold) == ("vxlan", 14789, "::1", "10.1.2.3", 5.0)
