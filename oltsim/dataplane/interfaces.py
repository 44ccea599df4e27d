"""The data plane's Linux interfaces: which UNIs get one and its name, and the TAP port that carries its frames.

Names (`oltsim.dataplane.names`): a UNI's interface is ``<prefix>u<pon>-<onu>-<uni>`` (``u0-1-0``: PON 0, the ONU
of index 1 on it, UNI 0), at most 15 characters (Linux's limit); the NNI's are given whole (``--nni-interface``,
``--nni-untagged-interface``). Which UNIs: ``all``, a count (the first N in PON, ONU, UNI order) or a comma list
of ``SERIAL/UNI``.

Frames: each interface is a `TapPort` (Twisted's `TuntapPort`, so the unit tests run it on
`twisted.pair.testing.MemoryIOSystem`): the port reads, at most `burst` frames (and about BURST_BYTES) per reactor
turn, and its protocol (a `FrameQueue`) queues them, bounded in bytes (what does not fit is dropped and counted as
``queue-full``); a full queue stops the port reading, at once, so that the kernel's own TAP queue holds the rest.
One `Pump` hands the queued frames on, round-robin over the ports, at most `budget` frames (and about
`budget_bytes`) per reactor turn: a flood on one UNI costs its own queues and its share of a turn, and the control
plane runs between turns.

Offloads (`offload=True`, as QEMU opens a guest's TAP): the TAP is opened with IFF_VNET_HDR, a virtio-net header
(`oltsim.dataplane.vnet`) in front of every frame read and written, and TUNSETOFFLOAD tells the kernel the reader
takes partial checksums and TCP (and UDP, where the kernel knows USO) GSO super-frames: the RG's or server's TCP
then hands over 64 KiB at a time, and a super-frame written is delivered whole to the stack behind the TAP. A
kernel that refuses any of it gets the TAP opened again without (`TapPort.offload_refused` says why).
"""
from __future__ import annotations

import errno
import fcntl
import os
import struct
import sys
from collections import deque
from dataclasses import dataclass

from twisted.internet.protocol import AbstractDatagramProtocol
from twisted.pair.ethernet import IEthernetProtocol
from twisted.internet.error import CannotListenError
from twisted.pair.tuntap import TunnelFlags, TuntapPort
from twisted.python import failure
from zope.interface import implementer

from oltsim.dataplane import vnet
from oltsim.dataplane.names import check_name, parse_uni_spec, uni_interface_name
from oltsim.dataplane.netns import HostError
from oltsim.logs import logger
from oltsim.suggest import serial_hint

log = logger("oltsim.dataplane")

#: Bytes one port's queue holds before it stops reading (16 super-frames of 64 KiB, about 700 full-size frames, 116
#: jumbo frames: a jumbo-frame flood holds about 1 MiB per UNI); an NNI port, which carries every UNI's downstream
#: traffic, holds NNI_QUEUE_BYTES.
QUEUE_BYTES = 1 << 20
NNI_QUEUE_BYTES = 4 << 20
#: Frames one port reads per reactor turn, and bytes at most (the frame that crosses it is the last: two GSO
#: super-frames; nine ports' readable events in one reactor turn read at most 1.2 MiB, not 9 MiB)
BURST = 16
BURST_BYTES = 128 * 1024
#: Frames the pump hands on per reactor turn, over all ports, and per port in one round: small, so that the control
#: plane waits well under a millisecond behind a turn (bench/dataplane.py under iperf3: 128 a turn made
#: HeartbeatCheck 3x slower than idle, 32 about 2x, 16 about 1.2-2x, one TCP stream above 500 Mbit/s throughout).
BUDGET = 16
PER_ROUND = 8
#: Bytes the pump hands on per reactor turn at most (the frame that crosses it is the turn's last): two GSO
#: super-frames of 64 KiB. bench/dataplane.py with offloads, the control plane's worst round trip against idle:
#: sixteen a turn (1 MiB) 2-2.7x; four (256 KiB) 1.9-2.5x; three 1.7-2.0x; two 1.4-1.8x, one stream 5-10 % and 8
#: streams 10-20 % slower than with four; one 1.3-1.4x, but 8 streams 25 % slower again.
BUDGET_BYTES = 128 * 1024
#: The largest frame read (jumbo frames with two tags fit).
MAX_FRAME = 16384
#: The largest read of a TAP with offloads: a 64 KiB GSO super-frame (GSO_MAX_SIZE), its virtio-net header, tags
MAX_SUPER_FRAME = 65536 + 256
_RETRY_READ = (errno.EAGAIN, errno.EWOULDBLOCK, errno.EINTR)
#: ioctl TUNSETCARRIER (_IOW('T', 226, int), Linux 5.0+): the TAP's carrier, as the RG sees its link
TUNSETCARRIER = 0x400454E2
#: ioctls of a TAP with a virtio-net header (linux/if_tun.h): the offloads the reader takes (an unsigned int by
#: value), the header's size and its byte order (ints by pointer)
TUNSETOFFLOAD = 0x400454D0
TUNSETVNETHDRSZ = 0x400454D8
TUNSETVNETLE = 0x400454DC
TUN_F_CSUM, TUN_F_TSO4, TUN_F_TSO6, TUN_F_TSO_ECN, TUN_F_USO4, TUN_F_USO6 = 0x01, 0x02, 0x04, 0x08, 0x20, 0x40
#: the offloads asked for, most first: USO where the kernel has it (Linux 6.2), TSO, checksums alone
OFFLOADS = (TUN_F_CSUM | TUN_F_TSO4 | TUN_F_TSO6 | TUN_F_TSO_ECN | TUN_F_USO4 | TUN_F_USO6,
            TUN_F_CSUM | TUN_F_TSO4 | TUN_F_TSO6 | TUN_F_TSO_ECN,
            TUN_F_CSUM | TUN_F_TSO4 | TUN_F_TSO6,
            TUN_F_CSUM)


# ---- which UNIs, and their names (oltsim.dataplane.names) -------------------------------------------------

@dataclass(frozen=True)
class UniInterface:
    """One UNI given an interface: the ONU's serial, PON and index on it, the UNI id, the name, its namespace."""
    serial: str
    pon: int
    onu_index: int
    uni_id: int
    name: str
    netns: str | None
    mac: str | None = None


@dataclass(frozen=True)
class InterfacePlan:
    """Every interface the data plane makes: the UNIs' (in PON, ONU, UNI order) and the NNI's (None: not made)."""
    unis: tuple[UniInterface, ...] = ()
    nni: str | None = None
    nni_untagged: str | None = None

    @property
    def empty(self) -> bool:
        return not self.unis and self.nni is None and self.nni_untagged is None

    def names(self) -> list[str]:
        return [u.name for u in self.unis] + [n for n in (self.nni, self.nni_untagged) if n]


def plan_interfaces(olt, spec, *, prefix: str = "", netns: bool = False, nni: str | None = None,
                    nni_untagged: str | None = None) -> InterfacePlan:
    """The interfaces for `olt` (the model, built, not started) that the settings ask for; HostError (one line) for
    a UNI that does not exist (an unknown serial names the nearest the OLT has), a name too long or invalid, or two
    interfaces of one name. Pure: nothing is made."""
    spec = parse_uni_spec(spec) if isinstance(spec, str) or spec is None else spec
    eth = [(onu, uni) for onu in olt.onus for uni in onu.eth_unis]
    if spec is None:
        chosen = []
    elif spec == "all":
        chosen = eth
    elif isinstance(spec, int):
        if spec > len(eth):
            raise HostError(f"--uni-interfaces {spec}: the OLT has {len(eth)} Ethernet UNIs")
        chosen = eth[:spec]
    else:
        wanted = {}
        for serial, uni_id in spec:
            try:
                onu = olt.onu_by_serial(serial)
            except Exception:
                hint = serial_hint(serial, (known.serial for known in olt.onus))
                raise HostError(f"--uni-interfaces: no ONU has serial {serial}{hint}") from None
            unis = {uni.id: uni for uni in onu.eth_unis}
            if uni_id not in unis:
                raise HostError(f"--uni-interfaces: ONU {onu.serial} has no Ethernet UNI {uni_id} "
                                f"(it has {', '.join(map(str, sorted(unis))) or 'none'})")
            wanted[(onu.serial, uni_id)] = (onu, unis[uni_id])
        chosen = [pair for pair in eth if (pair[0].serial, pair[1].id) in wanted]
    unis = []
    for onu, uni in chosen:
        name = uni_interface_name(prefix, onu.pon.id, onu.index, uni.id)
        check_name(name, f"UNI {onu.serial}/{uni.id}", HostError)
        mac = uni.services[0].mac if uni.services else None
        unis.append(UniInterface(onu.serial, onu.pon.id, onu.index, uni.id, name, name if netns else None, mac))
    for value, option in ((nni, "--nni-interface"), (nni_untagged, "--nni-untagged-interface")):
        if value is not None:
            check_name(value, option, HostError)
    plan = InterfacePlan(tuple(unis), nni or None, nni_untagged or None)
    seen = set()
    for name in plan.names():
        if name in seen:
            raise HostError(f"two of the data plane's interfaces would be named {name}")
        seen.add(name)
    return plan


# ---- frames ------------------------------------------------------------------------------------------------

@implementer(IEthernetProtocol)
class FrameQueue(AbstractDatagramProtocol):
    """The protocol of one TapPort: the whole Ethernet frames its port reads, queued for `pump` (`pump.wake(port)`)
    up to `queue_bytes` and counted, and the frames written out of its port, counted, the kernel's refusals by
    errno. A frame read while the queue holds `queue_bytes` or more is dropped and counted as ``queue-full``. A full
    queue stops the port reading (the kernel's own TAP queue holds, and drops, what comes next) until the pump has
    taken half of it. `header` is the virtio-net header's size in front of each frame read and written (0: none;
    the port sets it when it opens with offloads): its octets count in no byte counter."""

    noisy = False  # no "Starting protocol" line per interface

    def __init__(self, pump, queue_bytes: int = QUEUE_BYTES, burst: int = BURST):
        self.pump = pump
        self.queue: deque[bytes] = deque()
        self.queue_bytes = queue_bytes
        self.queued_bytes = 0
        self.resume_at = queue_bytes // 2
        self.burst = burst
        self.paused = False
        self.header = 0
        self.rx_frames = self.rx_bytes = 0
        self.tx_frames = self.tx_bytes = 0
        self.dropped = {}                   # reason -> frames

    def addProto(self, num, proto):
        raise NotImplementedError("the data plane reads whole frames")

    def datagramReceived(self, data, partial=0):
        self.rx_frames += 1
        self.rx_bytes += len(data) - self.header
        queued = self.queued_bytes
        if queued >= self.queue_bytes:
            # read in the readable event whose earlier frame filled the queue (a VXLAN attachment's: its socket is
            # every attachment's and does not stop)
            self._drop("queue-full")
            return
        self.queue.append(data)
        self.queued_bytes = queued + len(data)
        if self.queued_bytes >= self.queue_bytes:
            self.paused = True
            self.transport.stopReading()
        if not queued:   # a queue with frames is the pump's already
            self.pump.wake(self.transport)

    def taken(self, octets: int) -> None:
        """The pump took frames of `octets` bytes from the queue: a port stopped by a full queue reads again once half
        of it is free."""
        self.queued_bytes -= octets
        if self.paused and self.queued_bytes <= self.resume_at and self.transport is not None:
            self.paused = False
            self.transport.startReading()

    def stopProtocol(self):
        """The port is closed: there is no reading to start again."""
        self.paused = False
        self.queued_bytes = 0

    def send(self, frame: bytes, header: bytes | None = None) -> bool:
        """Write one frame out of the port, after `header` (its virtio-net header; None: `vnet.PLAIN`) when the port
        has offloads; False (counted by errno) when the kernel refuses it, or the port is closed."""
        transport = self.transport
        if transport is None:
            self._drop("interface-closed")
            return False
        try:
            if self.header:
                transport.write_with_header(header or vnet.PLAIN, frame)
            else:
                transport.write(frame)
        except OSError as exc:
            self._drop(f"write-{errno.errorcode.get(exc.errno, exc.errno)}".lower())
            return False
        self.tx_frames += 1
        self.tx_bytes += len(frame)
        return True

    def _drop(self, reason: str) -> None:
        self.dropped[reason] = self.dropped.get(reason, 0) + 1

    def counters(self) -> dict:
        """Frames and bytes read and written, frames and bytes queued, drops by reason."""
        return {"rx_frames": self.rx_frames, "rx_bytes": self.rx_bytes, "tx_frames": self.tx_frames,
                "tx_bytes": self.tx_bytes, "queued": len(self.queue), "queued_bytes": self.queued_bytes,
                "dropped": dict(self.dropped)}


class _HostSystem:
    """The host's own file descriptors: what TuntapPort opens, reads and writes through when given no I/O system."""

    O_RDWR = os.O_RDWR
    O_NONBLOCK = os.O_NONBLOCK
    O_CLOEXEC = os.O_CLOEXEC
    open = staticmethod(os.open)
    read = staticmethod(os.read)
    write = staticmethod(os.write)
    writev = staticmethod(os.writev)
    close = staticmethod(os.close)
    ioctl = staticmethod(fcntl.ioctl)


class _BurstReads:
    """The I/O system under one TapPort: every call goes on to `system`, but a readable event reads at most `burst`
    frames, and none once `full()` (the port's queue is full). The read after the `burst`-th answers EAGAIN, which
    ends TuntapPort.doRead as an empty kernel queue does: doRead's own bound (maxThroughput) is in bytes, and 256 KiB
    of 64-byte frames is 4096 reads, one UNI's flood holding the reactor for milliseconds. A read the kernel fails
    for good (the interface taken away) goes to `lost(error)`, which closes the port, and ends the event the same
    way: one line, not the reactor's traceback of a doRead that raised. `writev` writes a header and a frame as one
    (a system without it: joined)."""

    def __init__(self, system, burst: int, lost, full):
        self.O_RDWR, self.O_NONBLOCK, self.O_CLOEXEC = system.O_RDWR, system.O_NONBLOCK, system.O_CLOEXEC
        self.open, self.write, self.close, self.ioctl = system.open, system.write, system.close, system.ioctl
        writev = getattr(system, "writev", None)
        self.writev = writev if writev is not None else (lambda fd, parts: system.write(fd, b"".join(parts)))
        self.read = _reading(system.read, burst, lost, full)


def _reading(read, burst: int, lost, full, burst_bytes: int = BURST_BYTES):
    """`read`, at most `burst` frames and about `burst_bytes` a readable event, and none while `full()` (a
    closure: it runs once per frame read)."""
    left = burst
    octets = 0

    def read_in_burst(fd: int, limit: int) -> bytes:
        nonlocal left, octets
        if not left or octets >= burst_bytes or full():
            left = burst
            octets = 0
            raise BlockingIOError(errno.EAGAIN, "the burst of this readable event is read")
        try:
            data = read(fd, limit)
        except OSError as exc:
            left = burst
            octets = 0
            if exc.errno in _RETRY_READ:
                raise
            lost(exc)
            raise BlockingIOError(errno.EAGAIN, "the interface is lost") from None
        left -= 1
        octets += len(data)
        return data
    return read_in_burst


class TapPort(TuntapPort):
    """One TAP interface of the data plane: Twisted's TuntapPort (its own doRead and write) with a `FrameQueue` as
    its protocol, reading at most `burst` frames per readable event.

    `pump` (a `Pump`) is woken when frames are queued. `key` is what the pump's handler gets with each frame (the
    UNI's (serial, uni_id), or "nni" / "nni-untagged"). `system` and `reactor` as TuntapPort's (tests: a
    MemoryIOSystem and a MemoryReactorClock). `offload`: open it with a virtio-net header and the kernel's offloads
    (`vnet_header` then says so, `offloads` holds the TUN_F_ flags the kernel took); a kernel that refuses gets it
    opened without (`offload_refused`: why)."""

    def __init__(self, name: str, key, pump, *, queue_bytes: int = QUEUE_BYTES, burst: int = BURST,
                 offload: bool = False, reactor=None, system=None):
        # the port's own handle on its I/O system: TuntapPort offers no ioctl, and the carrier's goes to the same
        # descriptors as its reads and writes (a MemoryIOSystem's in tests)
        self.io = _BurstReads(system if system is not None else _HostSystem(), burst, self._lost,
                              lambda: self.protocol.paused)
        super().__init__(name.encode("ascii"), FrameQueue(pump, queue_bytes, burst), maxPacketSize=MAX_FRAME,
                         reactor=reactor, system=self.io)
        # the burst ends a readable event, not TuntapPort's bound in bytes: a burst of the largest frames is under it
        self.maxThroughput = (burst + 1) * MAX_FRAME
        self.burst = burst
        self.name = name
        self.key = key
        self.carrier = True
        self.offload = offload
        self.vnet_header = False
        self.offloads = 0
        self.offload_refused: str | None = None

    @property
    def queue(self) -> deque:
        """The frames read and not yet handed on (the protocol's)."""
        return self.protocol.queue

    @property
    def dropped(self) -> dict:
        """Frames dropped, by reason (the protocol's)."""
        return self.protocol.dropped

    def open(self) -> None:
        """Make the interface (TUNSETIFF) and start reading; HostError (one line) when the host refuses."""
        try:
            self.startListening()
        except Exception as exc:   # CannotListenError wraps the OSError
            reason = getattr(exc, "socketError", exc)
            text = getattr(reason, "strerror", None) or str(reason)
            raise HostError(f"interface {self.name} cannot be made: {text}") from None
        log.debug("dataplane-interface-opened interface={name}", name=self.name)

    def _bindSocket(self):
        """Open the TAP: with a virtio-net header and offloads when asked and the kernel takes them, else plain."""
        if not self.offload:
            super()._bindSocket()
            return
        self._mode = TunnelFlags.IFF_TAP | TunnelFlags.IFF_VNET_HDR
        try:
            super()._bindSocket()
        except CannotListenError as exc:
            self._plain(f"IFF_VNET_HDR: {getattr(exc.socketError, 'strerror', None) or exc}")
            return
        try:
            self._set_offloads()
        except OSError as exc:
            self.io.close(self._fileno)
            self.connected = 0
            self._plain(exc.strerror or str(exc))
            return
        self.vnet_header = True
        self.protocol.header = vnet.SIZE
        self.maxPacketSize = MAX_SUPER_FRAME
        self.maxThroughput = (self.burst + 1) * MAX_SUPER_FRAME

    def _set_offloads(self) -> None:
        """The header's size and byte order, then the most offloads the kernel takes; OSError when it takes none."""
        fd = self._fileno
        self.io.ioctl(fd, TUNSETVNETHDRSZ, struct.pack("i", vnet.SIZE))
        try:
            self.io.ioctl(fd, TUNSETVNETLE, struct.pack("i", 1))
        except OSError:
            if sys.byteorder != "little":   # a little-endian host's TAP uses little-endian headers by default
                raise
        refused = None
        for flags in OFFLOADS:
            try:
                self.io.ioctl(fd, TUNSETOFFLOAD, flags)
            except OSError as exc:
                refused = exc
                continue
            self.offloads = flags
            return
        raise refused

    def _plain(self, why: str) -> None:
        """The kernel refused the header or the offloads: the TAP opened again without them."""
        self.offload_refused = why
        self._mode = TunnelFlags.IFF_TAP
        super()._bindSocket()

    def write_with_header(self, header: bytes, frame: bytes) -> None:
        """Write `frame` after its virtio-net header `header`, in one write (os.writev: the 64 KiB of a super-frame
        are not copied to join them; an interrupted call is retried by Python itself); OSError as the kernel
        refuses."""
        self.io.writev(self._fileno, (header, frame))

    def close(self) -> None:
        """Stop reading and close the descriptor now (the kernel removes the interface), whatever state it is in."""
        self.protocol.queue.clear()
        if self.connected:
            try:
                self.connectionLost(None)
            except Exception:
                log.failure("dataplane-close-failed interface={name}", name=self.name)
            else:
                log.debug("dataplane-interface-closed interface={name}", name=self.name)

    def _lost(self, exc: OSError) -> None:
        """A read failed for good (the kernel took the interface away): said, and the port closed as the reactor
        closes one whose doRead fails."""
        log.error("dataplane-interface-lost interface={name} why={why}", name=self.name,
                  why=exc.strerror or str(exc))
        self.connectionLost(failure.Failure(exc))

    def set_carrier(self, on: bool) -> bool:
        """Tell the kernel the link is up (`on`) or down, as an RG's Ethernet link follows its UNI; False when the
        kernel cannot (before Linux 5.0, or a closed port)."""
        if not self.connected:
            return False
        try:
            self.io.ioctl(self.fileno(), TUNSETCARRIER, struct.pack("i", 1 if on else 0))
        except OSError:
            return False
        self.carrier = on
        return True

    def send(self, frame: bytes, header: bytes | None = None) -> bool:
        """Write one frame out of the interface, after `header` when it has offloads (the protocol's `send`)."""
        return self.protocol.send(frame, header)

    def counters(self) -> dict:
        """This interface's frames and bytes read and written, its drops by reason, and its offloads (the TUN_F_
        flags the kernel took; 0 for none)."""
        return {"name": self.name, "carrier": self.carrier, "offloads": self.offloads, **self.protocol.counters()}


class Pump:
    """Hands queued frames to `handle(port, frame)`, round-robin over the ports that have some, at most `budget`
    frames and about `budget_bytes` per reactor turn (then again on the next turn, `clock.callLater(0)`),
    `per_round` from one port at a time; `after_turn(idle)` (when given) once each turn has handed its frames on,
    `idle` when no port has frames left (a VXLAN port's batched datagrams go out then). With `first_now`, a frame
    that finds the pump idle (no turn due) is handed on at once, in the read that brought it, and the turn for what
    follows it is set: a lone frame (a ping, a DHCP exchange) waits for no reactor turn, a burst is still taken a
    budget a turn. A handler that raises is logged (the first time, then counted) and the pump goes on."""

    def __init__(self, clock, handle, *, budget: int = BUDGET, per_round: int = PER_ROUND,
                 budget_bytes: int = BUDGET_BYTES, after_turn=None, first_now: bool = False):
        self.clock = clock
        self.handle = handle
        self.after_turn = after_turn
        self.first_now = first_now
        self._draining = False
        self.budget = budget
        self.budget_bytes = budget_bytes
        self.per_round = per_round
        self.ready: deque[TapPort] = deque()
        self.waiting: set[TapPort] = set()     # the ports in `ready`
        self.failures = 0
        self._call = None
        self._stopped = False

    def wake(self, port: TapPort) -> None:
        """`port` has frames queued."""
        if self._stopped or port in self.waiting:
            return
        self.waiting.add(port)
        self.ready.append(port)
        if self._call is None:
            if self.first_now and not self._draining:
                self._drain()
                if self._call is None and not self._stopped:
                    self._call = self.clock.callLater(0, self._drain)    # what this read brings next: next turn
            else:
                self._call = self.clock.callLater(0, self._drain)

    def _drain(self) -> None:
        self._call = None
        self._draining = True
        try:
            self._turn()
        finally:
            self._draining = False
        if self.ready and not self._stopped:
            self._call = self.clock.callLater(0, self._drain)

    def _turn(self) -> None:
        budget = self.budget
        left = self.budget_bytes
        ready = self.ready
        while ready and budget > 0 and left > 0:
            port = ready.popleft()
            frames = port.protocol
            queue = frames.queue
            take = min(self.per_round, budget, len(queue))
            octets = 0
            while take and octets < left:
                take -= 1
                budget -= 1
                frame = queue.popleft()
                octets += len(frame)
                try:
                    self.handle(port, frame)
                except Exception:
                    self.failures += 1
                    if self.failures == 1:
                        log.failure("dataplane-frame-failed interface={name} (later failures are only counted)",
                                    name=port.name)
            left -= octets
            frames.taken(octets)
            if queue and port.connected:
                ready.append(port)
            else:
                self.waiting.discard(port)
        if self.after_turn is not None:
            try:
                self.after_turn(not ready)
            except Exception:
                self.failures += 1
                log.failure("dataplane-turn-end-failed")

    def stop(self) -> None:
        """Cancel the next turn and forget the queued work."""
        self._stopped = True
        if self._call is not None and self._call.active():
            self._call.cancel()
        self._call = None
        self.waiting.clear()
        self.ready.clear()

    def pending_calls(self) -> int:
        return 1 if self._call is not None and self._call.active() else 0
