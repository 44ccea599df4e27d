"""VXLAN attachments (RFC 7348): a UNI's or an NNI's frames as UDP datagrams on one port, one VNI per attachment.

With ``--attachment vxlan`` every interface the data plane would make (the UNIs of ``--uni-interfaces``, the NNIs
of ``--nni-interface`` and ``--nni-untagged-interface``, whose names label the attachments) is a VXLAN segment
instead of a TAP: nothing is made on the host and nothing needs a privilege. One `VxlanSegments` (a UDP socket on
``--vxlan-port``, 4789 by default, at ``--vxlan-listen``, all addresses by default, IPv6 and IPv4 on one dual-stack
socket) reads every datagram, checks its VXLAN header and hands the inner frame to the attachment of its VNI, a
`VxlanPort`, which looks to the data plane's service as a `TapPort` does (key, name, send, counters, its
`FrameQueue` and the service's `Pump`).

The socket is the reactor's reader itself (up to READ_BATCH datagrams a readable event; each source's plain address
worked out once, each remote's socket address and each VNI's header once). What the pipeline sends is sent when the
pump's turns leave it idle (or FLUSH_AT datagrams wait): a run of datagrams to one remote, of one size but a shorter
last one, in one UDP GSO send (UDP_SEGMENT: the kernel cuts it into datagrams), each remote's in the order they
came; a kernel without UDP GSO gets one send per datagram. Each frame is counted on its attachment when it left.

VNIs (`vni_of`): the NNI's 1, the untagged NNI's 2, a UNI's 1000 + its index among the OLT's Ethernet UNIs in PON,
ONU, UNI order (whether it has an attachment or not: ``--uni-interfaces`` does not renumber), each plus
``--vxlan-vni-base`` (default 0; several OLTs that one RG or BNG host reaches each take their own base). OLT 10 with
16 PONs x 16 ONUs x 4 UNIs: NNI 1, untagged NNI 2, UNIs 1000-2023.

The remote end: ``--vxlan-remote`` (an address; every VNI's frames go to it), else learned from the first valid
datagram of the VNI, by its source address (the source port of a kernel's VXLAN device changes with the flow; frames
go to the remote's address at ``--vxlan-port``, where a kernel's device listens). A learned remote is held while it
sends: once it has been silent for ``--vxlan-hold`` seconds, the next source to send takes the VNI. A datagram for a
VNI from another address than its remote is dropped and counted (``vxlan-foreign-source``): no one takes over an
RG's segment. Dropped and counted too, never passed on: a datagram whose header is bad (shorter than 8 bytes, the
I flag clear, a reserved bit set: ``vxlan-bad-header``), of a VNI no attachment has (``vxlan-unknown-vni``), or
whose inner frame has no whole Ethernet header (under 14 bytes: ``vxlan-runt``). The socket's counters hold every
drop; an attachment's hold those of its VNI (foreign source, runt) and its own (queue full, no remote yet).

Carrier: a VXLAN attachment has none. A UNI going down is not seen by the RG's link (its frames are dropped by the
pipeline as a down UNI's are); `carrier` is None in the counters.
"""
from __future__ import annotations

import errno
import ipaddress
import socket
import struct

from oltsim.dataplane.interfaces import BURST, QUEUE_BYTES, FrameQueue
from oltsim.logs import logger

__all__ = ["NNI_VNI", "NNI_UNTAGGED_VNI", "UNI_VNI_BASE", "MAX_VNI", "VXLAN_PORT", "VxlanError", "VxlanPort",
           "VxlanSegments", "encapsulate", "uni_vni", "vni_of"]

log = logger("oltsim.dataplane")

VXLAN_PORT = 4789
NNI_VNI = 1
NNI_UNTAGGED_VNI = 2
UNI_VNI_BASE = 1000
MAX_VNI = 2**24 - 1
HEADER = 8
#: the shortest inner frame passed on: a whole Ethernet header
MIN_FRAME = 14
FLAG_I = 0x08
#: the largest datagram read: an inner frame of MAX_FRAME and the VXLAN header
MAX_DATAGRAM = 16384 + HEADER
#: the most datagrams read in one reactor turn (then the reactor serves the others, and reads again)
READ_BATCH = 64
#: the most source addresses whose plain form is kept (then the table starts again)
SOURCES_KEPT = 4096
#: UDP_SEGMENT (linux/udp.h): a send's cmsg giving the size its buffer is cut into, one datagram each (UDP GSO)
UDP_SEGMENT = 103
#: the most datagrams and bytes one UDP GSO send carries (the kernel's UDP_MAX_SEGMENTS of older kernels; an IP
#: datagram's payload)
GSO_SEGMENTS = 64
GSO_BYTES = 65000
#: datagrams pending that are sent at a pump turn's end though more turns follow (below it, they wait for the pump to
#: be idle: longer runs per remote when several UNIs' frames interleave)
FLUSH_AT = 48
#: the errors of a UDP GSO send the kernel does not take for this run (a datagram above the route's MTU, a route
#: through IPsec): its datagrams are sent one by one; and those that say it takes none (then single sends from now on)
_NOT_THIS_RUN = {errno.EINVAL, errno.EMSGSIZE, errno.EIO}
_NO_GSO = {errno.ENOPROTOOPT, errno.EOPNOTSUPP}
_HEAD = struct.Struct("!II")


class VxlanError(Exception):
    """The VXLAN port cannot be opened; the message is one line."""


def uni_vni(olt, serial: str, uni_id: int, base: int = 0) -> int:
    """A UNI's VNI: `base` + 1000 + its index among `olt`'s Ethernet UNIs in PON, ONU, UNI order."""
    for index, (onu, uni) in enumerate((onu, uni) for onu in olt.onus for uni in onu.eth_unis):
        if onu.serial == serial and uni.id == uni_id:
            return base + UNI_VNI_BASE + index
    raise KeyError(f"no Ethernet UNI {serial}/{uni_id}")


def vni_of(olt, key, base: int = 0) -> int:
    """The VNI of the attachment `key` (the data plane service's: (serial, uni_id), "nni" or "nni-untagged")."""
    if key == "nni":
        return base + NNI_VNI
    if key == "nni-untagged":
        return base + NNI_UNTAGGED_VNI
    return uni_vni(olt, key[0], key[1], base)


def vxlan_header(vni: int) -> bytes:
    """The VXLAN header of `vni`: the I flag, the VNI, reserved bits zero."""
    return _HEAD.pack(FLAG_I << 24, vni << 8)


def encapsulate(vni: int, frame: bytes) -> bytes:
    """`frame` behind `vni`'s VXLAN header."""
    return vxlan_header(vni) + frame


def _reason(exc: OSError) -> str:
    """A refused write's drop reason: its errno's name."""
    return f"write-{errno.errorcode.get(exc.errno, exc.errno)}".lower()


def _plain(host: str) -> str:
    """An address as shown and compared: an IPv4-mapped IPv6 address (a dual-stack socket's) as its IPv4 one."""
    try:
        address = ipaddress.ip_address(host.split("%", 1)[0])
    except ValueError:
        return host
    if address.version == 6 and address.ipv4_mapped is not None:
        return str(address.ipv4_mapped)
    return str(address)


class VxlanPort:
    """One VXLAN attachment: the VNI `vni` of `segments`, carrying the frames of `key` (as a TapPort's: the UNI's
    (serial, uni_id), "nni" or "nni-untagged"), labelled `name`. Its protocol is a `FrameQueue` (the frames read,
    queued for `pump`); its remote is `segments`' fixed one or the one learned for its VNI. `mac` (a UNI's: its
    first service's MAC) is the address the RG's device takes, as a UNI's TAP interface is given it (the built-in
    adapter's DHCP relay knows its clients by it).

    A full queue drops what comes next (``queue-full``): the socket is every attachment's, so one VNI's queue does
    not stop it reading."""

    kind = "vxlan"

    def __init__(self, segments: "VxlanSegments", name: str, key, vni: int, pump, *, mac: str | None = None,
                 queue_bytes: int = QUEUE_BYTES, burst: int = BURST):
        self.segments = segments
        self.mac = mac
        self.name = name
        self.key = key
        self.vni = vni
        self.carrier = None
        self.connected = False
        self.header = vxlan_header(vni)
        self.learned = False
        self.last_heard: float | None = None
        self.protocol = FrameQueue(pump, queue_bytes, burst)
        self._destination = None
        self.remote = segments.remote

    @property
    def remote(self) -> str | None:
        """The remote's plain address (fixed or learned; None: none yet); setting it works out where frames go."""
        return self._remote

    @remote.setter
    def remote(self, address: str | None) -> None:
        self._remote = address
        self._destination = None if address is None else self.segments.destination(address)

    @property
    def queue(self):
        """The frames read and not yet handed on (the protocol's)."""
        return self.protocol.queue

    @property
    def dropped(self) -> dict:
        """Frames dropped, by reason (the protocol's)."""
        return self.protocol.dropped

    # the FrameQueue's transport: a VXLAN attachment has no reading of its own to stop
    def stopReading(self) -> None:
        pass

    def startReading(self) -> None:
        pass

    def open(self) -> None:
        """Take frames of the VNI from now on (the segments' socket is open already); the protocol's transport is
        this attachment, as a TapPort is its protocol's."""
        self.segments.attach(self)
        self.connected = True
        self.protocol.makeConnection(self)

    def close(self) -> None:
        """Take no more frames; forget those queued."""
        self.protocol.queue.clear()
        if self.connected:
            self.connected = False
            self.segments.detach(self)
            self.protocol.doStop()

    def set_carrier(self, on: bool) -> bool:
        """A VXLAN segment has no carrier: nothing to tell (True: not a kernel's refusal)."""
        return True

    def received(self, source: str, frame: bytes, now: float) -> None:
        """A frame of this VNI from `source` (a plain address): learned or checked against the remote, then queued."""
        frames = self.protocol
        remote = self._remote
        if remote is None or (self.learned and remote != source and now - self.last_heard > self.segments.hold):
            if remote is not None:
                log.info("vxlan-remote-replaced vni={vni} attachment={name} from={old} to={new}", vni=self.vni,
                         name=self.name, old=remote, new=source)
            else:
                log.info("vxlan-remote-learned vni={vni} attachment={name} remote={remote}", vni=self.vni,
                         name=self.name, remote=source)
            self.remote = source
            self.learned = True
        elif source != remote:
            self.segments.count("vxlan-foreign-source")
            frames._drop("vxlan-foreign-source")
            return
        self.last_heard = now
        frames.datagramReceived(frame)

    def send(self, frame: bytes) -> bool:
        """Hand one frame to the segments for the remote (sent with the turn's others, counted then); False
        (counted) when there is no remote yet or the attachment is closed."""
        if not self.connected:
            self.protocol._drop("interface-closed")
            return False
        destination = self._destination
        if destination is None:
            self.protocol._drop("vxlan-no-remote")
            return False
        return self.segments.queue_datagram(self, self.header + frame, destination)

    def counters(self) -> dict:
        """This attachment's kind, VNI, remote (and whether learned or set), frames and bytes, drops by reason."""
        mac = {"mac": self.mac} if self.mac else {}
        return {"name": self.name, "kind": self.kind, "vni": self.vni, "remote": self.remote,
                "remote_learned": self.learned, **mac, "carrier": None, **self.protocol.counters()}


class VxlanSegments:
    """The one UDP port every VXLAN attachment's datagrams cross (`open` binds it, `close` closes it).

    `reactor` reads the socket (IReactorFDSet: this object is the reader) and tells the time; `port` and `listen`
    (an address; "" all of them: IPv6 and IPv4 on one dual-stack socket) where it listens; `remote` a fixed remote
    address for every VNI (None: learned); `hold` the seconds a learned remote is held after its last datagram;
    `vni_base` what every attachment's VNI is offset by (`vni_of`). `sendto` and `sendmsg` (the socket's, once
    open) write the datagrams."""

    def __init__(self, reactor, *, port: int = VXLAN_PORT, listen: str = "", remote: str | None = None,
                 hold: float = 300.0, vni_base: int = 0):
        self.reactor = reactor
        self.vni_base = vni_base
        self.port = port
        self.listen = listen
        self.remote = _plain(remote) if remote else None
        self.hold = hold
        self.by_vni: dict[int, VxlanPort] = {}
        self.socket: socket.socket | None = None
        self.sendto = self.sendmsg = None
        #: whether a run of datagrams to one remote goes out in one UDP GSO send (off once the kernel refuses one)
        self.gso = True
        self.pending: list[tuple[VxlanPort, bytes, tuple]] = []
        self._flush_call = None
        self._v6 = False
        self._sources: dict[str, str] = {}
        self.rx_datagrams = self.tx_datagrams = 0
        self.dropped: dict[str, int] = {}

    @property
    def listening(self) -> bool:
        """Whether the port is bound and read."""
        return self.socket is not None

    # ---- the socket ----------------------------------------------------------------------------------------

    def open(self) -> None:
        """Bind the UDP port and read it; VxlanError (one line) when the host refuses."""
        family, address = self._family()
        try:
            sock = socket.socket(family, socket.SOCK_DGRAM)
        except OSError as exc:
            if self.listen:
                raise VxlanError(f"--vxlan-listen {self.listen}: {exc.strerror or exc}") from None
            family, address = socket.AF_INET, "0.0.0.0"     # a host without IPv6: IPv4 alone
            sock = socket.socket(family, socket.SOCK_DGRAM)
        try:
            if family == socket.AF_INET6:
                # all addresses: IPv4 too, whatever net.ipv6.bindv6only says
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0 if address == "::" else 1)
            sock.bind((address, self.port))
            sock.setblocking(False)
        except OSError as exc:
            sock.close()
            raise VxlanError(f"VXLAN port {self.port} at {address} cannot be bound: {exc.strerror or exc}") from None
        self.port = self.port or sock.getsockname()[1]
        self.socket = sock
        self.sendto, self.sendmsg = sock.sendto, sock.sendmsg
        try:
            sock.getsockopt(socket.SOL_UDP, UDP_SEGMENT)    # a kernel before 4.18 knows no UDP GSO
        except OSError:
            self.gso = False
            log.info("vxlan-gso-unavailable: one send per datagram")
        self._v6 = family == socket.AF_INET6
        self.reactor.addReader(self)
        log.info("vxlan-listening port={port} address={address}", port=self.port, address=address)

    def _family(self):
        if not self.listen:
            return socket.AF_INET6, "::"
        try:
            address = ipaddress.ip_address(self.listen)
        except ValueError:
            raise VxlanError(f"--vxlan-listen {self.listen}: not an IPv4 or IPv6 address") from None
        return (socket.AF_INET6 if address.version == 6 else socket.AF_INET), str(address)

    def close(self) -> None:
        """Send what is pending, stop reading and close the port (its attachments are closed by their owner)."""
        self.flush()
        sock, self.socket = self.socket, None
        if sock is not None:
            self.reactor.removeReader(self)
            sock.close()
        self.sendto = self.sendmsg = None

    # the reactor's reader (IReadDescriptor)
    def fileno(self) -> int:
        return self.socket.fileno() if self.socket is not None else -1

    def logPrefix(self) -> str:
        return "vxlan"

    def connectionLost(self, reason) -> None:
        """The reactor gave the socket up (it should not: `doRead` never raises): said, and closed."""
        log.error("vxlan-port-lost port={port} why={why}", port=self.port, why=reason)
        sock, self.socket = self.socket, None
        self.sendto = self.sendmsg = None
        if sock is not None:
            sock.close()

    def doRead(self) -> None:
        """Up to READ_BATCH datagrams, each handed to `datagramReceived`; a datagram whose handling fails is logged
        (the first, then counted) and the next read."""
        sock = self.socket
        if sock is None:
            return
        recvfrom = sock.recvfrom
        handle = self.datagramReceived
        for _ in range(READ_BATCH):
            try:
                datagram, addr = recvfrom(MAX_DATAGRAM)
            except (BlockingIOError, InterruptedError):
                return
            except OSError as exc:       # an ICMP error of an earlier send (ECONNREFUSED, EHOSTUNREACH)
                self.count(f"read-{errno.errorcode.get(exc.errno, exc.errno)}".lower())
                continue
            try:
                handle(datagram, addr)
            except Exception:
                self.count("vxlan-handler-failed")
                if self.dropped["vxlan-handler-failed"] == 1:
                    log.failure("vxlan-datagram-failed source={source} (later failures are only counted)",
                                source=addr[0])

    # ---- attachments ---------------------------------------------------------------------------------------

    def attach(self, port: VxlanPort) -> None:
        if port.vni in self.by_vni:
            raise VxlanError(f"VNI {port.vni} is {self.by_vni[port.vni].name}'s already, not {port.name}'s")
        self.by_vni[port.vni] = port

    def detach(self, port: VxlanPort) -> None:
        if self.by_vni.get(port.vni) is port:
            del self.by_vni[port.vni]

    def count(self, reason: str) -> None:
        self.dropped[reason] = self.dropped.get(reason, 0) + 1

    # ---- datagrams -----------------------------------------------------------------------------------------

    def datagramReceived(self, datagram: bytes, addr) -> None:
        """One datagram from `addr` (the socket's address tuple): checked, then its frame handed to its VNI's
        attachment."""
        self.rx_datagrams += 1
        if len(datagram) < HEADER:
            self.count("vxlan-bad-header")
            return
        flags, word = _HEAD.unpack_from(datagram)
        if flags != FLAG_I << 24 or word & 0xFF:
            self.count("vxlan-bad-header")
            return
        port = self.by_vni.get(word >> 8)
        if port is None:
            self.count("vxlan-unknown-vni")
            return
        if len(datagram) - HEADER < MIN_FRAME:
            self.count("vxlan-runt")
            port.protocol._drop("vxlan-runt")
            return
        host = addr[0]
        source = self._sources.get(host)
        if source is None:
            if len(self._sources) >= SOURCES_KEPT:
                self._sources.clear()
            source = self._sources[host] = _plain(host)
        port.received(source, datagram[HEADER:], self.reactor.seconds())

    def destination(self, remote: str):
        """The socket address a plain `remote` address is sent to: at the VXLAN port, an IPv4 one IPv4-mapped on
        the dual-stack socket."""
        if self._v6 and ":" not in remote:
            return ("::ffff:" + remote, self.port)     # an IPv4 remote through the dual-stack socket
        return (remote, self.port)

    def send_to(self, datagram: bytes, destination) -> str | None:
        """One datagram (a VXLAN header and its frame) to `destination` (`destination`'s), now; None when sent, else
        the drop's reason."""
        sendto = self.sendto
        if sendto is None:
            return "interface-closed"
        try:
            try:
                sendto(datagram, destination)
            except InterruptedError:
                sendto(datagram, destination)
        except OSError as exc:
            return _reason(exc)
        self.tx_datagrams += 1
        return None

    def queue_datagram(self, port: VxlanPort, datagram: bytes, destination) -> bool:
        """`port`'s datagram for `destination`, sent at the next `flush` (the end of the pump's turn that leaves it
        idle, or of one that finds FLUSH_AT waiting; or the next reactor turn's start for one sent outside a pump
        turn); False (counted) when the socket is closed."""
        if self.sendto is None:
            port.protocol._drop("interface-closed")
            return False
        self.pending.append((port, datagram, destination))
        if self._flush_call is None:
            self._flush_call = self.reactor.callLater(0, self.flush)
        return True

    def turn_done(self, idle: bool) -> None:
        """A pump turn ended (`idle`: no frames left to hand on): what is pending is sent when the pump is idle or
        FLUSH_AT datagrams wait; otherwise the pump's next turn (there is one) ends with them."""
        if idle or len(self.pending) >= FLUSH_AT:
            self.flush()
        else:
            self._no_flush_call()

    def _no_flush_call(self) -> None:
        """Call off the next reactor turn's flush (a flush or a pump's turn will send what is pending)."""
        call, self._flush_call = self._flush_call, None
        if call is not None and call.active():
            call.cancel()

    def flush(self) -> None:
        """Send every pending datagram, each destination's in the order they came: a run of datagrams to one
        destination, of one size but the last, in one UDP GSO send (while the kernel takes them), any other alone;
        each counted on its attachment as sent or dropped by the kernel's reason."""
        self._no_flush_call()
        pending, self.pending = self.pending, []
        if len(pending) == 1 or not self.gso:
            for port, datagram, destination in pending:
                self._counted(port, datagram, self.send_to(datagram, destination))
            return
        by_destination: dict[tuple, list] = {}
        for entry in pending:
            by_destination.setdefault(entry[2], []).append(entry)
        for destination, entries in by_destination.items():
            self._flush_to(destination, entries)

    def _flush_to(self, destination, entries: list) -> None:
        """`entries` (attachment, datagram, destination), all to `destination`, in runs."""
        count = len(entries)
        i = 0
        while i < count:
            size = len(entries[i][1])
            end = i + 1
            total = size
            while end < count and end - i < GSO_SEGMENTS:
                length = len(entries[end][1])
                if length > size or total + length > GSO_BYTES:
                    break
                total += length
                end += 1
                if length < size:       # a shorter datagram ends a run
                    break
            why = self._send_run(entries, i, end, size, destination) if end - i > 1 else \
                self.send_to(entries[i][1], destination)
            if why == "gso-refused":
                for n in range(i, end):
                    self._counted(entries[n][0], entries[n][1], self.send_to(entries[n][1], destination))
            else:
                for n in range(i, end):
                    self._counted(entries[n][0], entries[n][1], why)
            i = end

    def _send_run(self, entries, start: int, end: int, size: int, destination) -> str | None:
        """entries[start:end] to `destination` in one UDP GSO send cut at `size`: None when sent, "gso-refused"
        when the kernel does not take it (then they go one by one; a kernel that takes no GSO send at all is said
        once and single sends are made from now on), else the drop's reason."""
        sendmsg = self.sendmsg
        if sendmsg is None:
            return "interface-closed"
        buffer = b"".join([entry[1] for entry in entries[start:end]])
        ancillary = [(socket.SOL_UDP, UDP_SEGMENT, struct.pack("=H", size))]
        try:
            try:
                sendmsg([buffer], ancillary, 0, destination)
            except InterruptedError:
                sendmsg([buffer], ancillary, 0, destination)
        except OSError as exc:
            if exc.errno in _NO_GSO:
                self.gso = False
                log.info("vxlan-gso-refused why={why}: one send per datagram from now on",
                         why=exc.strerror or exc)
                return "gso-refused"
            if exc.errno in _NOT_THIS_RUN:
                return "gso-refused"
            return _reason(exc)
        self.tx_datagrams += end - start
        return None

    @staticmethod
    def _counted(port: VxlanPort, datagram: bytes, why: str | None) -> None:
        frames = port.protocol
        if why is None:
            frames.tx_frames += 1
            frames.tx_bytes += len(datagram) - HEADER
        else:
            frames._drop(why)

    def counters(self) -> dict:
        """The port, the address it listens at, datagrams read and sent, every drop by reason."""
        return {"port": self.port, "listen": self.listen or "all", "remote": self.remote or "learned",
                "hold": self.hold, "rx_datagrams": self.rx_datagrams, "tx_datagrams": self.tx_datagrams,
                "dropped": dict(self.dropped)}
