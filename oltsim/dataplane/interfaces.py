"""The data plane's Linux interfaces: which UNIs get one and its name, and the TAP port that carries its frames.

Names (`oltsim.dataplane.names`): a UNI's interface is ``<prefix>u<pon>-<onu>-<uni>`` (``u0-1-0``: PON 0, the ONU
of index 1 on it, UNI 0), at most 15 characters (Linux's limit); the NNI's are given whole (``--nni-interface``,
``--nni-untagged-interface``). Which UNIs: ``all``, a count (the first N in PON, ONU, UNI order) or a comma list
of ``SERIAL/UNI``.

Frames: each interface is a `TapPort` (Twisted's `TuntapPort`, so the unit tests run it on
`twisted.pair.testing.MemoryIOSystem`): the port reads, at most `burst` frames per reactor turn, and its protocol (a
`FrameQueue`) queues them, bounded in frames (what does not fit is dropped and counted as ``queue-full``); a full
queue stops the port reading, so that the kernel's own TAP queue holds the rest. One `Pump` hands the queued frames
on, round-robin over the ports, at most `budget` frames per reactor turn: a flood on one UNI costs its own queues
and its share of a turn, and the control plane runs between turns.
"""
from __future__ import annotations

import errno
import fcntl
import os
import struct
from collections import deque
from dataclasses import dataclass

from twisted.internet.protocol import AbstractDatagramProtocol
from twisted.pair.ethernet import IEthernetProtocol
from twisted.pair.tuntap import TuntapPort
from twisted.python import failure
from zope.interface import implementer

from oltsim.dataplane.names import check_name, parse_uni_spec, uni_interface_name
from oltsim.dataplane.netns import HostError
from oltsim.logs import logger
from oltsim.suggest import serial_hint

log = logger("oltsim.dataplane")

#: Frames one port's queue holds before it drops (about 1.5 MB of full-size frames); an NNI port, which carries
#: every UNI's downstream traffic, holds NNI_QUEUE_FRAMES.
QUEUE_FRAMES = 1024
NNI_QUEUE_FRAMES = 4096
#: Frames one port reads per reactor turn.
BURST = 16
#: Frames the pump hands on per reactor turn, over all ports, and per port in one round: small, so that the control
#: plane waits well under a millisecond behind a turn (bench/dataplane.py under iperf3: 128 a turn made
#: HeartbeatCheck 3x slower than idle, 32 about 2x, 16 about 1.2-2x, one TCP stream above 500 Mbit/s throughout).
BUDGET = 16
PER_ROUND = 8
#: The largest frame read (jumbo frames with two tags fit).
MAX_FRAME = 16384
_RETRY_READ = (errno.EAGAIN, errno.EWOULDBLOCK, errno.EINTR)
#: ioctl TUNSETCARRIER (_IOW('T', 226, int), Linux 5.0+): the TAP's carrier, as the RG sees its link
TUNSETCARRIER = 0x400454E2


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
    up to `queue_frames` and counted, and the frames written out of its port, counted, the kernel's refusals by
    errno. A frame read while the queue is full is dropped and counted as ``queue-full``. A full queue stops the
    port reading (the kernel's own TAP queue holds, and drops, what comes next) until the pump has taken enough
    for a whole `burst` to fit again."""

    noisy = False  # no "Starting protocol" line per interface

    def __init__(self, pump, queue_frames: int = QUEUE_FRAMES, burst: int = BURST):
        self.pump = pump
        self.queue: deque[bytes] = deque()
        self.queue_frames = queue_frames
        self.resume_at = max(0, queue_frames - burst)
        self.paused = False
        self.rx_frames = self.rx_bytes = 0
        self.tx_frames = self.tx_bytes = 0
        self.dropped = {}                   # reason -> frames

    def addProto(self, num, proto):
        raise NotImplementedError("the data plane reads whole frames")

    def datagramReceived(self, data, partial=0):
        self.rx_frames += 1
        self.rx_bytes += len(data)
        queue = self.queue
        queued = len(queue)
        if queued >= self.queue_frames:
            # read in the readable event whose earlier frame filled the queue
            self._drop("queue-full")
            return
        queue.append(data)
        if queued + 1 >= self.queue_frames:
            self.paused = True
            self.transport.stopReading()
        if not queued:   # a queue with frames is the pump's already
            self.pump.wake(self.transport)

    def taken(self) -> None:
        """The pump took frames from the queue: a port stopped by a full queue reads again once a burst fits."""
        if self.paused and len(self.queue) <= self.resume_at and self.transport is not None:
            self.paused = False
            self.transport.startReading()

    def stopProtocol(self):
        """The port is closed: there is no reading to start again."""
        self.paused = False

    def send(self, frame: bytes) -> bool:
        """Write one frame out of the port; False (counted by errno) when the kernel refuses it, or the port is
        closed."""
        transport = self.transport
        if transport is None:
            self._drop("interface-closed")
            return False
        try:
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
        """Frames and bytes read and written, frames queued, drops by reason."""
        return {"rx_frames": self.rx_frames, "rx_bytes": self.rx_bytes, "tx_frames": self.tx_frames,
                "tx_bytes": self.tx_bytes, "queued": len(self.queue), "dropped": dict(self.dropped)}


class _HostSystem:
    """The host's own file descriptors: what TuntapPort opens, reads and writes through when given no I/O system."""

    O_RDWR = os.O_RDWR
    O_NONBLOCK = os.O_NONBLOCK
    O_CLOEXEC = os.O_CLOEXEC
    open = staticmethod(os.open)
    read = staticmethod(os.read)
    write = staticmethod(os.write)
    close = staticmethod(os.close)
    ioctl = staticmethod(fcntl.ioctl)


class _BurstReads:
    """The I/O system under one TapPort: every call goes on to `system`, but a readable event reads at most `burst`
    frames. The read after the `burst`-th answers EAGAIN, which ends TuntapPort.doRead as an empty kernel queue
    does: doRead's own bound (maxThroughput) is in bytes, and 256 KiB of 64-byte frames is 4096 reads, one UNI's
    flood holding the reactor for milliseconds. A read the kernel fails for good (the interface taken away) goes
    to `lost(error)`, which closes the port, and ends the event the same way: one line, not the reactor's
    traceback of a doRead that raised."""

    def __init__(self, system, burst: int, lost):
        self.O_RDWR, self.O_NONBLOCK, self.O_CLOEXEC = system.O_RDWR, system.O_NONBLOCK, system.O_CLOEXEC
        self.open, self.write, self.close, self.ioctl = system.open, system.write, system.close, system.ioctl
        self.read = _reading(system.read, burst, lost)


def _reading(read, burst: int, lost):
    """`read`, at most `burst` frames a readable event (a closure: it runs once per frame read)."""
    left = burst

    def read_in_burst(fd: int, limit: int) -> bytes:
        nonlocal left
        if not left:
            left = burst
            raise BlockingIOError(errno.EAGAIN, "the burst of this readable event is read")
        try:
            data = read(fd, limit)
        except OSError as exc:
            left = burst
            if exc.errno in _RETRY_READ:
                raise
            lost(exc)
            raise BlockingIOError(errno.EAGAIN, "the interface is lost") from None
        left -= 1
        return data
    return read_in_burst


class TapPort(TuntapPort):
    """One TAP interface of the data plane: Twisted's TuntapPort (its own doRead and write) with a `FrameQueue` as
    its protocol, reading at most `burst` frames per readable event.

    `pump` (a `Pump`) is woken when frames are queued. `key` is what the pump's handler gets with each frame (the
    UNI's (serial, uni_id), or "nni" / "nni-untagged"). `system` and `reactor` as TuntapPort's (tests: a
    MemoryIOSystem and a MemoryReactorClock)."""

    def __init__(self, name: str, key, pump, *, queue_frames: int = QUEUE_FRAMES, burst: int = BURST,
                 reactor=None, system=None):
        # the port's own handle on its I/O system: TuntapPort offers no ioctl, and the carrier's goes to the same
        # descriptors as its reads and writes (a MemoryIOSystem's in tests)
        self.io = _BurstReads(system if system is not None else _HostSystem(), burst, self._lost)
        super().__init__(name.encode("ascii"), FrameQueue(pump, queue_frames, burst), maxPacketSize=MAX_FRAME,
                         reactor=reactor, system=self.io)
        # the burst ends a readable event, not TuntapPort's bound in bytes: a burst of the largest frames is under it
        self.maxThroughput = (burst + 1) * MAX_FRAME
        self.name = name
        self.key = key
        self.carrier = True

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

    def send(self, frame: bytes) -> bool:
        """Write one frame out of the interface (the protocol's `send`)."""
        return self.protocol.send(frame)

    def counters(self) -> dict:
        """This interface's frames and bytes read and written, and its drops by reason."""
        return {"name": self.name, "carrier": self.carrier, **self.protocol.counters()}


class Pump:
    """Hands queued frames to `handle(port, frame)`, round-robin over the ports that have some, at most `budget`
    frames per reactor turn (then again on the next turn, `clock.callLater(0)`), `per_round` from one port at a
    time. A handler that raises is logged (the first time, then counted) and the pump goes on."""

    def __init__(self, clock, handle, *, budget: int = BUDGET, per_round: int = PER_ROUND):
        self.clock = clock
        self.handle = handle
        self.budget = budget
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
            self._call = self.clock.callLater(0, self._drain)

    def _drain(self) -> None:
        self._call = None
        budget = self.budget
        ready = self.ready
        while ready and budget > 0:
            port = ready.popleft()
            frames = port.protocol
            queue = frames.queue
            take = min(self.per_round, budget, len(queue))
            budget -= take
            for _ in range(take):
                frame = queue.popleft()
                try:
                    self.handle(port, frame)
                except Exception:
                    self.failures += 1
                    if self.failures == 1:
                        log.failure("dataplane-frame-failed interface={name} (later failures are only counted)",
                                    name=port.name)
            if frames.paused:
                frames.taken()
            if queue and port.connected:
                ready.append(port)
            else:
                self.waiting.discard(port)
        if ready and not self._stopped:
            self._call = self.clock.callLater(0, self._drain)

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
