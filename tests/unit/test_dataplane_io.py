"""The data plane's interfaces in memory: which UNIs get one and their names, the TAP ports on Twisted's
MemoryIOSystem and MemoryReactorClock, the bounded queues and the pump's fairness, the service's start (host checks,
namespaces) and its undoing of everything on a failed start and at stop. The host's `ip` is a fake that records what
would run."""
from __future__ import annotations

import errno
import os
import random

import pytest
from twisted.internet.task import Clock
from twisted.internet.testing import MemoryReactorClock
from twisted.pair.testing import MemoryIOSystem, Tunnel

from oltsim.config import load_settings
from oltsim.dataplane import interfaces as itf
from oltsim.dataplane import netns
from oltsim.dataplane.interfaces import InterfacePlan, Pump, TapPort, parse_uni_spec, plan_interfaces
from oltsim.dataplane.netns import HostError
from oltsim.dataplane.pipeline import Dropped, PacketIn, ToNni, ToNniUntagged, ToUni
from oltsim.dataplane.service import DataPlaneError, DataPlaneService
from oltsim.model.builder import build_olt


def memory_system() -> MemoryIOSystem:
    system = MemoryIOSystem()
    system.registerSpecialDevice(Tunnel._DEVICE_NAME, Tunnel)
    return system


def olt_of(pon=1, onu=2, uni=2, olt_id=0):
    settings = load_settings({"pon": pon, "onu": onu, "uni": uni, "olt_id": olt_id}, None)
    return build_olt(settings, Clock(), random.Random(1))


class FakeHost(netns.Host):
    """netns.Host over a recording `ip`: links and namespaces that 'exist' are sets; `fail` makes one command fail."""

    def __init__(self, links=(), namespaces=(), fail=None, privileged=True):
        super().__init__(runner=self.run)
        self.links = set(links)
        self.namespaces = set(namespaces)
        self.fail = fail
        self.privileged = privileged
        self.commands = []

    def run(self, args):
        self.commands.append(" ".join(args))
        if self.fail and self.fail in " ".join(args):
            return 1, "RTNETLINK answers: Operation not permitted"
        if args[:2] == ["netns", "add"]:
            self.namespaces.add(args[2])
        elif args[:2] == ["netns", "delete"]:
            self.namespaces.discard(args[2])
        return 0, ""

    def check_privileges(self):
        if not self.privileged:
            raise HostError("making TAP interfaces needs CAP_NET_ADMIN")

    def link_exists(self, name, netns=None):
        return (name if netns is None else f"{netns}:{name}") in self.links

    def netns_exists(self, name):
        return name in self.namespaces


class FakeDataPlane:
    """Records what the service hands it; `answer(key, frame)` gives the outputs."""

    def __init__(self, answer=None):
        self.answer = answer or (lambda key, frame: [])
        self.seen = []
        self.bound = set()

    def bind_uni(self, serial, uni_id):
        self.bound.add((serial, uni_id))

    def unbind_uni(self, serial, uni_id):
        self.bound.discard((serial, uni_id))

    def from_uni(self, serial, uni_id, frame):
        self.seen.append(((serial, uni_id), frame))
        return self.answer((serial, uni_id), frame)

    def from_nni(self, frame):
        self.seen.append(("nni", frame))
        return self.answer("nni", frame)

    def from_nni_untagged(self, frame):
        self.seen.append(("nni-untagged", frame))
        return self.answer("nni-untagged", frame)

    def counters(self):
        return {"unis": {}, "flows": {}, "nni": {}}


def frame(n: int, size: int = 64) -> bytes:
    return bytes([n & 0xFF]) * size


def one_turn(reactor: Clock) -> None:
    """Run the one call due now, not those it schedules (Clock.advance(0) would run those too)."""
    (call,) = reactor.getDelayedCalls()
    reactor.calls.remove(call)
    call.func(*call.args, **call.kw)


def tunnel(system, port) -> Tunnel:
    return system.getTunnel(port)


# ---- names and plans -------------------------------------------------------------------------------------------

def test_uni_spec_forms():
    """--uni-interfaces takes all, a count, or a comma list of SERIAL/UNI; anything else is one line naming the
    accepted forms."""
    assert parse_uni_spec("all") == "all"
    assert parse_uni_spec("3") == 3
    assert parse_uni_spec(" bbsm00000001/0, BBSM00000002/3 ") == (("BBSM00000001", 0), ("BBSM00000002", 3))
    assert parse_uni_spec("") is None
    with pytest.raises(ValueError, match="is not SERIAL/UNI"):
        parse_uni_spec("BBSM00000001")
    with pytest.raises(ValueError, match="0 or more"):
        parse_uni_spec(-1)


def test_plan_names_follow_pon_onu_uni():
    """UNI interfaces are <prefix>u<pon>-<onu index>-<uni>, in PON, ONU, UNI order; a count takes the first N; with
    --uni-netns each gets a namespace of its own name; the UNI's first service MAC goes with it."""
    olt = olt_of(pon=2, onu=2, uni=2)
    plan = plan_interfaces(olt, "3", prefix="t7", netns=True, nni="t7nni", nni_untagged="t7nniu")
    assert [u.name for u in plan.unis] == ["t7u0-1-0", "t7u0-1-1", "t7u0-2-0"]
    assert [u.netns for u in plan.unis] == ["t7u0-1-0", "t7u0-1-1", "t7u0-2-0"]
    assert plan.unis[0].mac == olt.onus[0].unis[0].services[0].mac
    assert plan.names()[-2:] == ["t7nni", "t7nniu"]
    picked = plan_interfaces(olt, f"{olt.onus[3].serial}/1")
    assert [(u.serial, u.uni_id, u.name, u.netns) for u in picked.unis] == [(olt.onus[3].serial, 1, "u1-2-1", None)]
    assert len(plan_interfaces(olt, "all").unis) == 8


def test_plan_refuses_bad_names_and_unis():
    """A name over 15 characters, an unknown serial or UNI, a count above the UNIs and two interfaces of one name
    are refused in one line before anything is made."""
    olt = olt_of()
    with pytest.raises(HostError, match=r"'verylongprefu0-1-0' is 18 characters long; Linux allows at most 15"):
        plan_interfaces(olt, "all", prefix="verylongpref")
    with pytest.raises(HostError, match="no ONU has serial BBSM99999999$"):
        plan_interfaces(olt, "BBSM99999999/0")
    with pytest.raises(HostError, match=r"no ONU has serial BBSM0000001; did you mean BBSM00000001\?$"):
        plan_interfaces(olt, "BBSM0000001/0")
    with pytest.raises(HostError, match="has no Ethernet UNI 7"):
        plan_interfaces(olt, f"{olt.onus[0].serial}/7")
    with pytest.raises(HostError, match="the OLT has 4 Ethernet UNIs"):
        plan_interfaces(olt, "5")
    with pytest.raises(HostError, match="would be named u0-1-0"):
        plan_interfaces(olt, "1", nni="u0-1-0")
    with pytest.raises(HostError, match="--nni-interface: interface name 'a b'"):
        plan_interfaces(olt, None, nni="a b")


def test_an_unknown_serial_names_the_nearest_in_a_labs_numbering():
    """At OLT 10 with 16 ONUs a PON (serials BBSM000a0001 to BBSM000a0110), a serial misspelt in --uni-interfaces is
    refused naming the serial it was meant to be."""
    olt = olt_of(pon=2, onu=16, uni=1, olt_id=10)
    assert olt.onus[-1].serial == "BBSM000a0110"
    with pytest.raises(HostError, match=r"^--uni-interfaces: no ONU has serial BBSM000A011O; did you mean "
                                        r"BBSM000a0110\?$"):
        plan_interfaces(olt, "BBSM000a011O/0")


def test_privileges_are_checked_first():
    """Without CAP_NET_ADMIN, or without /dev/net/tun, the data plane says what is missing."""
    with pytest.raises(HostError, match="CAP_NET_ADMIN"):
        netns.check_privileges(capabilities=0)
    with pytest.raises(HostError, match="/nonexistent/tun does not exist"):
        netns.check_privileges("/nonexistent/tun", capabilities=1 << netns.CAP_NET_ADMIN)


# ---- ports and the pump ----------------------------------------------------------------------------------------

def test_port_reads_a_burst_per_turn_and_stops_at_once_when_its_queue_is_full():
    """A port reads at most `burst` frames per readable event; once its queue holds its bound in bytes it reads no
    more, even within the event (the rest stays in the kernel's queue, nothing read is lost); a frame that finds
    the queue full (a VXLAN attachment's socket does not stop) is dropped and counted as queue-full; frames written
    go to the interface and are counted."""
    system, reactor = memory_system(), MemoryReactorClock()
    handled = []
    pump = Pump(reactor, lambda port, data: handled.append(data))
    port = TapPort("u0-1-0", ("S", 0), pump, queue_bytes=4 * 64, burst=3, reactor=reactor, system=system)
    port.open()
    assert port in reactor.readers
    for n in range(10):
        tunnel(system, port).readBuffer.append(frame(n))
    port.doRead()
    assert len(port.queue) == 3 and len(tunnel(system, port).readBuffer) == 7
    port.doRead()
    assert len(port.queue) == 4 and len(tunnel(system, port).readBuffer) == 6 and not port.dropped
    assert port.counters()["queued_bytes"] == 256
    port.protocol.datagramReceived(frame(99))
    assert port.dropped == {"queue-full": 1}
    reactor.advance(0)
    assert handled == [frame(n) for n in range(4)] and port.counters()["queued_bytes"] == 0
    assert port.send(frame(9)) and tunnel(system, port).writeBuffer[-1] == frame(9)
    assert port.counters()["tx_frames"] == 1 and port.counters()["rx_frames"] == 5
    port.close()
    assert port not in reactor.readers and not port.connected
    assert not port.send(frame(1)) and port.dropped["interface-closed"] == 1


def test_each_readable_event_reads_a_whole_burst():
    """A readable event that finds the kernel's queue empty before its burst leaves the next event a whole burst,
    and a burst of the largest frames is bounded by the burst, not by the bytes read."""
    system, reactor = memory_system(), MemoryReactorClock()
    port = TapPort("u0-1-0", ("S", 0), Pump(reactor, lambda port, data: None), queue_bytes=64 * itf.MAX_FRAME, burst=3,
                   reactor=reactor, system=system)
    port.open()
    buffer = tunnel(system, port).readBuffer
    buffer.extend([frame(0), frame(1)])
    port.doRead()
    buffer.extend(frame(n, itf.MAX_FRAME) for n in range(5))
    port.doRead()
    assert len(port.queue) == 5 and len(buffer) == 2
    port.doRead()
    assert len(port.queue) == 7 and not buffer and port.counters()["rx_frames"] == 7
    port.close()


def test_a_frame_that_finds_the_pump_idle_is_handed_on_in_its_read_and_a_burst_waits_its_turns():
    """With `first_now` (the service's pump) the first frame a read brings to an idle pump is handed on in that read
    (a ping or DHCP frame waits for no reactor turn); the frames after it in the same read wait for the next turn, a
    budget a turn; once the pump is idle again the next lone frame is handed on at once."""
    system, reactor = memory_system(), MemoryReactorClock()
    handled = []
    pump = Pump(reactor, lambda port, data: handled.append(data), budget=4, per_round=4, first_now=True)
    port = TapPort("u0-1-0", ("A", 0), pump, queue_bytes=64 * 64, burst=64, reactor=reactor, system=system)
    port.open()
    buffer = tunnel(system, port).readBuffer
    buffer.append(frame(0))
    port.doRead()
    assert handled == [frame(0)]
    buffer.extend(frame(n) for n in range(1, 11))
    one_turn(reactor)               # the turn set after the lone frame: nothing queued yet
    port.doRead()
    assert handled == [frame(0), frame(1)] and len(port.queue) == 9
    one_turn(reactor)
    assert len(handled) == 6
    one_turn(reactor)
    one_turn(reactor)
    assert handled == [frame(n) for n in range(11)] and not reactor.getDelayedCalls()
    buffer.append(frame(11))
    port.doRead()
    assert handled[-1] == frame(11)
    port.close()


def test_flooded_port_does_not_starve_the_others():
    """One UNI flooding fills only its own queue (the rest of its flood stays in the kernel's); another UNI's frames
    are handed on in the same reactor turn, and a turn hands on at most the pump's budget (the rest waits for the
    next turn, so the control plane runs)."""
    system, reactor = memory_system(), MemoryReactorClock()
    handled = []
    pump = Pump(reactor, lambda port, data: handled.append(port.name), budget=8, per_round=2)
    flood = TapPort("u0-1-0", ("A", 0), pump, queue_bytes=16 * 64, burst=64, reactor=reactor, system=system)
    quiet = TapPort("u0-2-0", ("B", 0), pump, queue_bytes=16 * 64, burst=64, reactor=reactor, system=system)
    flood.open()
    quiet.open()
    for n in range(100):
        tunnel(system, flood).readBuffer.append(frame(n))
    tunnel(system, quiet).readBuffer.append(frame(1))
    flood.doRead()
    quiet.doRead()
    assert not flood.dropped and len(flood.queue) == 16 and len(tunnel(system, flood).readBuffer) == 84
    assert len(quiet.queue) == 1
    one_turn(reactor)
    assert len(handled) == 8 and "u0-2-0" in handled[:4]
    assert len(reactor.getDelayedCalls()) == 1       # the rest on the next turn
    one_turn(reactor)
    one_turn(reactor)
    assert handled.count("u0-1-0") == 16 and not reactor.getDelayedCalls()


def test_a_full_queue_stops_the_port_reading_until_half_of_it_is_free():
    """While its queue is full a port does not read (what comes next stays in the kernel's TAP queue); once the pump
    has taken half of its bytes it reads again."""
    system, reactor = memory_system(), MemoryReactorClock()
    handled = []
    pump = Pump(reactor, lambda port, data: handled.append(data), budget=2, per_round=2)
    port = TapPort("u0-1-0", ("S", 0), pump, queue_bytes=4 * 64, burst=2, reactor=reactor, system=system)
    port.open()
    for n in range(8):
        tunnel(system, port).readBuffer.append(frame(n))
    port.doRead()
    port.doRead()
    assert len(port.queue) == 4 and port not in reactor.readers and not port.dropped
    one_turn(reactor)
    assert handled == [frame(0), frame(1)] and port in reactor.readers
    port.doRead()
    assert len(port.queue) == 4 and port not in reactor.readers and len(tunnel(system, port).readBuffer) == 2
    port.close()
    assert not port.connected and port not in reactor.readers


def test_a_lost_interface_closes_its_port_in_one_line():
    """A read the kernel fails for good (the interface taken away) closes the port, said in one
    dataplane-interface-lost line, and the frames read before it are still handed on."""
    from twisted.logger import globalLogPublisher

    system, reactor = memory_system(), MemoryReactorClock()
    handled = []
    pump = Pump(reactor, lambda port, data: handled.append(data))
    port = TapPort("u0-1-0", ("S", 0), pump, reactor=reactor, system=system)
    port.open()
    tunnel(system, port).readBuffer.append(frame(1))
    tunnel(system, port).nonBlockingExceptionStyle = OSError(errno.EBADFD, "File descriptor in bad state")
    seen = []
    globalLogPublisher.addObserver(seen.append)
    try:
        assert port.doRead() is None
    finally:
        globalLogPublisher.removeObserver(seen.append)
    lost = [e for e in seen if e.get("log_format", "").startswith("dataplane-interface-lost")]
    assert len(lost) == 1 and lost[0]["why"] == "File descriptor in bad state"
    assert not port.connected and port not in reactor.readers
    reactor.advance(0)
    assert handled == [frame(1)]


def test_pump_survives_a_failing_handler():
    """A handler that raises on one frame is counted, and the frames after it are still handed on."""
    system, reactor = memory_system(), MemoryReactorClock()
    seen = []

    def handle(port, data):
        if data == frame(1):
            raise RuntimeError("boom")
        seen.append(data)

    pump = Pump(reactor, handle)
    port = TapPort("u0-1-0", ("A", 0), pump, reactor=reactor, system=system)
    port.open()
    tunnel(system, port).readBuffer.extend([frame(0), frame(1), frame(2)])
    port.doRead()
    reactor.advance(0)
    assert seen == [frame(0), frame(2)] and pump.failures == 1


# ---- the service -----------------------------------------------------------------------------------------------

def service_for(plan, dataplane, host, system=None, reactor=None, **options):
    return DataPlaneService(olt_of(), dataplane, plan, reactor or MemoryReactorClock(), host=host,
                            system=system or memory_system(), **options)


def test_start_makes_moves_and_binds_then_stop_removes_everything():
    """Start makes each TAP, gives it its UNI's MAC, moves it into its namespace (made when absent) and sets it up,
    sets the NNI interfaces up and binds the UNIs; stop unbinds, closes every interface and deletes only the
    namespaces this start made, leaving no timer."""
    olt = olt_of()
    plan = plan_interfaces(olt, "2", prefix="x", netns=True, nni="xnni", nni_untagged="xnniu")
    host = FakeHost(namespaces={"xu0-1-1"})
    dataplane = FakeDataPlane()
    reactor = MemoryReactorClock()
    svc = DataPlaneService(olt, dataplane, plan, reactor, host=host, system=memory_system())
    svc.startService()
    mac = olt.onus[0].unis[0].services[0].mac
    mark = netns.MARK.format(pid=os.getpid(), start=netns.process_start("self"))
    assert host.commands == [
        f"link set dev xu0-1-0 address {mac}", "netns add xu0-1-0", f"-n xu0-1-0 link set dev lo alias {mark}",
        "link set dev xu0-1-0 netns xu0-1-0", "-n xu0-1-0 link set dev xu0-1-0 up",
        f"link set dev xu0-1-1 address {olt.onus[0].unis[1].services[0].mac}",
        "-n xu0-1-1 -o link show dev lo", "link set dev xu0-1-1 netns xu0-1-1", "-n xu0-1-1 link set dev xu0-1-1 up",
        "link set dev xnni up", "link set dev xnniu up"]
    assert dataplane.bound == {(olt.onus[0].serial, 0), (olt.onus[0].serial, 1)}
    ports = list(svc.ports.values())
    assert all(p.connected for p in ports) and len(ports) == 4
    svc.stopService()
    assert dataplane.bound == set() and not any(p.connected for p in ports) and not svc.ports
    assert host.commands[-1] == "netns delete xu0-1-0" and host.namespaces == {"xu0-1-1"}
    assert not reactor.getDelayedCalls() and not reactor.readers


@pytest.mark.parametrize("host, message", [
    (FakeHost(privileged=False), "CAP_NET_ADMIN"),
    (FakeHost(links={"yu0-1-1"}), "an interface named yu0-1-1 exists already"),
    (FakeHost(namespaces={"yu0-1-0"}, links={"yu0-1-0:yu0-1-0"}), "namespace yu0-1-0 has an interface named"),
    (FakeHost(links={"ynni"}), "--nni-interface ynni: an interface of that name exists already"),
])
def test_host_checks_refuse_before_anything_is_made(host, message):
    """No privilege, or a name already in use on the host or in a UNI's namespace: refused in one line and not a
    single command run nor interface made."""
    plan = plan_interfaces(olt_of(), "2", prefix="y", netns=True, nni="ynni")
    svc = service_for(plan, FakeDataPlane(), host)
    with pytest.raises(DataPlaneError, match=message):
        svc.startService()
    assert host.commands == [] and not svc.ports and not svc.running


def test_failed_start_undoes_what_it_made():
    """A namespace that cannot be made halfway: the interfaces already made are closed, the namespaces made are
    deleted, no UNI stays bound, and the error names the namespace and the host's reason."""
    plan = plan_interfaces(olt_of(), "2", prefix="z", netns=True)
    host = FakeHost(fail="netns add zu0-1-1")
    dataplane = FakeDataPlane()
    svc = service_for(plan, dataplane, host)
    with pytest.raises(DataPlaneError, match="network namespace zu0-1-1 cannot be made: RTNETLINK answers"):
        svc.startService()
    assert host.namespaces == set() and "netns delete zu0-1-0" in host.commands
    assert not svc.ports and dataplane.bound == set()


def test_failed_start_exits_2_with_one_line(capsys, monkeypatch):
    """In the daemon (exit_on_failure) a failed start is `oltsim: LINE` on stderr and exit status 2."""
    import sys
    plan = plan_interfaces(olt_of(), "1", prefix="w")
    svc = service_for(plan, FakeDataPlane(), FakeHost(privileged=False), exit_on_failure=True)
    monkeypatch.setattr(sys, "__stderr__", sys.stderr)
    with pytest.raises(SystemExit) as info:
        svc.privilegedStartService()
    assert info.value.code == 2
    assert capsys.readouterr().err == "oltsim: making TAP interfaces needs CAP_NET_ADMIN\n"


def test_frames_flow_to_the_dataplane_and_outputs_go_out():
    """A frame read on a UNI is handed to DataPlane.from_uni, one on the NNIs to from_nni / from_nni_untagged; each
    output goes out of its interface (ToUni to that UNI's), packet indications are counted, an output for an
    interface not made is counted as undeliverable, the frames count in the model's NNI and PON packet counters
    (what the OpenOLT port statistics report), and each interface's counters name what it serves (UNI, NNI port)."""
    olt = olt_of()
    serial = olt.onus[0].serial
    plan = plan_interfaces(olt, "2", nni="nni0", nni_untagged="nniu0")

    def answer(key, data):
        if key == (serial, 0):
            return [ToNni(b"T" + data), ToNniUntagged(b"U" + data)]
        if key == "nni":
            return [ToUni(serial, 1, b"D" + data), PacketIn(None), Dropped("nni", "no-flow")]
        return [ToUni("BBSM99999999", 0, data)]

    system, reactor = memory_system(), MemoryReactorClock()
    dataplane = FakeDataPlane(answer)
    svc = DataPlaneService(olt, dataplane, plan, reactor, host=FakeHost(), system=system)
    svc.startService()
    ports = svc.ports
    tunnel(system, ports[(serial, 0)]).readBuffer.append(b"up")
    tunnel(system, ports["nni"]).readBuffer.append(b"down")
    tunnel(system, ports["nni-untagged"]).readBuffer.append(b"bcast")
    for port in ports.values():
        port.doRead()
    reactor.advance(0)
    assert list(tunnel(system, ports["nni"]).writeBuffer) == [b"Tup"]
    assert list(tunnel(system, ports["nni-untagged"]).writeBuffer) == [b"Uup"]
    assert list(tunnel(system, ports[(serial, 1)]).writeBuffer) == [b"Ddown"]
    counters = svc.counters()
    assert counters["packet_ins"] == 1 and counters["undeliverable"] == 1
    # the OpenOLT port statistics count them: the NNIs 2 in + 2 out, the PON 1 in + 1 out (from 0)
    assert olt.nnis[0].packet_count == 4 and olt.pons[0].packet_count == 2
    assert counters["interfaces"]["u0-1-0"]["rx_frames"] == 1 and counters["interfaces"]["nni0"]["tx_frames"] == 1
    assert counters["interfaces"]["u0-1-1"]["serial"] == serial
    assert counters["interfaces"]["nni0"]["port"] == "nni" and counters["interfaces"]["nniu0"]["port"] == "nni_untagged"
    svc.stopService()
    assert not reactor.getDelayedCalls()


def test_real_host_runner_reports_a_missing_ip(monkeypatch):
    """`ip` that cannot be run is a status and a reason, never an exception."""
    monkeypatch.setenv("PATH", "/nonexistent")
    status, why = netns.run_ip(["link"])
    assert status == 127 and "iproute2" in why


def test_empty_plan_is_empty():
    """No option given: the plan makes nothing (today's behaviour)."""
    assert plan_interfaces(olt_of(), None).empty and InterfacePlan().empty
    assert itf.BURST * itf.MAX_FRAME <= itf.QUEUE_BYTES


def test_rest_dataplane_counters():
    """GET /v1/dataplane answers the data plane's counters, interfaces included; without a data plane it is 409 with
    the options that turn it on, and an unknown parameter is 400."""
    from conftest import Sim

    sim = Sim()
    off = sim.rest.call("GET", "/v1/dataplane")
    assert off.code == 409 and "--uni-interfaces" in off.json["message"]
    plan = plan_interfaces(sim.olt, "1")
    svc = DataPlaneService(sim.olt, FakeDataPlane(), plan, MemoryReactorClock(), host=FakeHost(),
                           system=memory_system())
    svc.startService()
    sim.commands.dataplane = svc
    on = sim.rest.call("GET", "/v1/dataplane")
    assert on.code == 200 and on.json["interfaces"]["u0-1-0"]["serial"] == sim.olt.onus[0].serial
    assert sim.rest.call("GET", "/v1/dataplane?x=1").code == 400
    svc.stopService()


def test_capture_writer_puts_data_frames_in_the_ring():
    """--capture-data-frames: a frame in from a UNI is recorded as its ONU's (towards the OLT), one out of the NNI as
    the NNI's, and both are in the ring's pcapng."""
    from oltsim.capture import Capture
    from oltsim.capture import ring
    from oltsim.dataplane.service import CaptureWriter

    olt = olt_of()
    capture = Capture(olt, 100)
    writer = CaptureWriter(capture, olt)
    serial = olt.onus[1].serial
    up, out = b"\x02" * 6 + b"\x2e" * 6 + b"\x08\x00" + b"U" * 50, b"\xff" * 12 + b"\x81\x00" + b"N" * 60
    writer(f"uni {serial}/1", "in", up)
    writer("nni", "out", out)
    first, second = capture.records[-2], capture.records[-1]
    assert first[1:8] == (ring.UNI, True, serial, olt.onus[1].pon.id, olt.onus[1].onu_id, 1, 0) and first[-1] == up
    assert second[1:3] == (ring.NNI, True) and second[-1] == out
    pcap = capture.snapshot()
    assert up in pcap and out in pcap


def test_grpc_get_dataplane_is_the_rest_document():
    """oltsim.v1.Oltsim/GetDataPlane answers the JSON GET /v1/dataplane answers, and FAILED_PRECONDITION naming the
    options when the data plane is off."""
    import json as json_module

    from conftest import Aborted, grpc_call
    from oltsim._proto import oltsim_pb2, oltsim_pb2_grpc
    from oltsim.api.v1.grpc_v1 import OltsimServicer
    from oltsim.serving.onloop import on_loop
    from conftest import Sim

    sim = Sim()
    servicer = on_loop(OltsimServicer(commands=sim.commands), oltsim_pb2_grpc.OltsimServicer)
    sim.commands.dataplane = None
    with pytest.raises(Aborted) as refused:
        grpc_call(servicer, "GetDataPlane", oltsim_pb2.Empty())
    assert "FAILED_PRECONDITION" in str(refused.value) and "--uni-interfaces" in str(refused.value)
    svc = DataPlaneService(sim.olt, FakeDataPlane(), plan_interfaces(sim.olt, "1"), MemoryReactorClock(),
                           host=FakeHost(), system=memory_system())
    svc.startService()
    sim.commands.dataplane = svc
    answer = grpc_call(servicer, "GetDataPlane", oltsim_pb2.Empty())
    assert json_module.loads(answer.json) == sim.rest.call("GET", "/v1/dataplane").json
    svc.stopService()


def test_oltsimctl_dataplane_table_and_json():
    """`oltsimctl dataplane` shows one row per bound UNI and NNI (frames, bytes, drops by reason) and one per
    interface; `-o json` the document as it came."""
    import io
    import json as json_module
    from types import SimpleNamespace

    from oltsim._proto import oltsim_pb2
    from oltsim.ctl import subcommands

    document = {"unis": {"BBSM00000001/0": {"rx_frames": 6, "rx_bytes": 516, "tx_frames": 2, "tx_bytes": 180,
                                            "dropped": {"no-flow": 5, "onu-not-active": 1}}},
                "flows": {}, "nni": {"rx_frames": 0, "rx_bytes": 0, "tx_frames": 0, "tx_bytes": 0, "dropped": {}},
                "interfaces": {"u0-1-0": {"name": "u0-1-0", "rx_frames": 6, "tx_frames": 2, "queued": 0,
                                          "dropped": {"queue-full": 3}}}}

    class Connection:
        def call(self, method, request, service="bbsim", timeout=None):
            assert (method, service) == ("GetDataPlane", "oltsim")
            return oltsim_pb2.DataPlaneCounters(json=json_module.dumps(document))

    out = io.StringIO()
    assert subcommands.dataplane(Connection(), SimpleNamespace(output=None), out) == 0
    lines = out.getvalue().splitlines()
    assert lines[0].split() == ["WHERE", "RX_FRAMES", "RX_BYTES", "TX_FRAMES", "TX_BYTES", "DROPPED"]
    assert lines[1].split() == ["BBSM00000001/0", "6", "516", "2", "180", "no-flow=5,onu-not-active=1"]
    assert lines[2].split() == ["nni", "0", "0", "0", "0", "-"]
    assert lines[-1].split() == ["u0-1-0", "tap", "-", "-", "6", "2", "0", "queue-full=3"]
    out = io.StringIO()
    subcommands.dataplane(Connection(), SimpleNamespace(output="json"), out)
    assert json_module.loads(out.getvalue()) == document


class CarrierSystem(MemoryIOSystem):
    """MemoryIOSystem that also takes TUNSETCARRIER, recording (fd, on) per call."""

    def __init__(self):
        super().__init__()
        self.registerSpecialDevice(Tunnel._DEVICE_NAME, Tunnel)
        self.carrier_calls = []

    def ioctl(self, fd, request, args):
        if request == itf.TUNSETCARRIER:
            self.carrier_calls.append((fd, int.from_bytes(args, "little")))
            return args
        return super().ioctl(fd, request, args)


def test_uni_interface_carrier_follows_its_uni():
    """A UNI interface's link is down while its UNI is (the ONU not up yet, or locked), from before the interface is
    set up (so that neither an RG nor the kernel's own IPv6 start-up sees a carrier first), up when the UNI comes up
    and down again when it goes down, as an RG's Ethernet link; the counters show it."""
    olt = olt_of()
    plan = plan_interfaces(olt, "1")
    system = CarrierSystem()
    host = FakeHost()
    carrier_at_link_up = []

    def run(args):
        if args[-1:] == ["up"]:
            carrier_at_link_up.append(list(system.carrier_calls))
        return FakeHost.run(host, args)
    host.runner = run
    svc = DataPlaneService(olt, FakeDataPlane(), plan, MemoryReactorClock(), host=host, system=system)
    svc.startService()
    port = svc.ports[(olt.onus[0].serial, 0)]
    assert carrier_at_link_up == [[(port.fileno(), 0)]]
    assert system.carrier_calls == [(port.fileno(), 0)] and not svc.counters()["interfaces"]["u0-1-0"]["carrier"]
    uni = olt.onus[0].unis[0]
    uni.enable()
    assert system.carrier_calls[-1] == (port.fileno(), 1) and port.carrier
    uni.disable()
    assert system.carrier_calls[-1] == (port.fileno(), 0) and not port.carrier
    svc.stopService()
    calls = len(system.carrier_calls)
    uni.enable()
    assert len(system.carrier_calls) == calls        # stopped: no longer followed


@pytest.mark.parametrize("given, message", [
    ({"uni_interfaces": "foo"}, "'foo' is not SERIAL/UNI (for example BBSM00000001/0)"),
    ({"uni_interfaces": "\u00b2"}, "'\u00b2' is not SERIAL/UNI (for example BBSM00000001/0)"),
    ({"uni_interfaces": "BBSM00000001/\u0663"}, "'BBSM00000001/\u0663' is not SERIAL/UNI"),
    ({"uni_interfaces": "BBSM00000001/0, bbsm00000001/00"}, "'bbsm00000001/00' is named twice in the UNI interfaces"),
    ({"uni_interfaces": "all", "interface_prefix": "toolongprefix"},
     "the UNI interface toolongprefixu0-1-3 would be 19 characters long; Linux allows at most 15"),
    ({"nni_interface": "a/b"}, "the NNI interface 'a/b' may hold only letters, digits"),
    ({"nni_interface": "n0", "nni_untagged_interface": "n0"}, "nni_untagged_interface must differ from nni_interface"),
])
def test_settings_refuse_bad_interface_names(given, message):
    """The data plane's settings are checked with the rest of the configuration: a malformed UNI list, a UNI name the
    OLT's shape makes too long, a name Linux refuses and one name for both NNIs are one ConfigError naming it."""
    from oltsim.config import ConfigError
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
        load_settings(given, None)


def test_a_count_of_zero_and_no_nni_make_no_data_plane():
    """--uni-interfaces 0 without an NNI interface asks for nothing: no data plane is built (it would check
    CAP_NET_ADMIN and /dev/net/tun at start, refusing an unprivileged user for no interface at all)."""
    from oltsim.tap import Options, makeService
    options = Options()
    options.parseOptions(["--openolt", "tcp:0:interface=127.0.0.1", "--uni-interfaces", "0"])
    top = makeService(options, MemoryReactorClock())
    assert "dataplane" not in {child.name for child in top}


def test_a_lost_interface_is_not_taken_for_a_kernel_without_carrier_control():
    """An interface the kernel took away (its read failed, the reactor closed the port) is not a sign of a kernel
    without TUNSETCARRIER: its UNI changing state says nothing of Linux 5.0, and the other interfaces' carriers are
    still followed."""
    olt = olt_of()
    plan = plan_interfaces(olt, "2")
    system = CarrierSystem()
    svc = DataPlaneService(olt, FakeDataPlane(), plan, MemoryReactorClock(), host=FakeHost(), system=system)
    svc.startService()
    lost = svc.ports[(olt.onus[0].serial, 0)]
    kept = svc.ports[(olt.onus[0].serial, 1)]
    lost.connectionLost(None)
    olt.onus[0].unis[0].enable()
    olt.onus[0].unis[1].enable()
    assert not svc._carrier_refused
    assert system.carrier_calls[-1] == (kept.fileno(), 1) and kept.carrier
    svc.stopService()
