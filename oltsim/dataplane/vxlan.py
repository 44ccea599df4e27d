"""VXLAN attachments (RFC 7348): a UNI's or an NNI's frames as UDP datagrams on one port, one VNI per attachment.

With ``--attachment vxlan`` every interface the data plane would make (the UNIs of ``--uni-interfaces``, the NNIs
of ``--nni-interface`` and ``--nni-untagged-interface``, whose names label the attachments) is a VXLAN segment
instead of a TAP: nothing is made on the host and nothing needs a privilege. One `VxlanSegments` (a
DatagramProtocol on ``--vxlan-port``, 4789 by default, at ``--vxlan-listen``, all addresses by default, IPv6 and
IPv4 on one dual-stack socket) reads every datagram, checks its VXLAN header and hands the inner frame to the
attachment of its VNI, a `VxlanPort`, which looks to the data plane's service as a `TapPort` does (key, name,
send, counters, its `FrameQueue` and the service's `Pump`).

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

from twisted.internet.protocol import DatagramProtocol

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


def encapsulate(vni: int, frame: bytes) -> bytes:
    """`frame` behind a VXLAN header: the I flag, `vni`, reserved bits zero."""
    return struct.pack("!II", FLAG_I << 24, vni << 8) + frame


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
        self.remote: str | None = segments.remote
        self.learned = False
        self.last_heard: float | None = None
        self.protocol = FrameQueue(pump, queue_bytes, burst)

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
        if self.remote is None or (self.learned and self.remote != source
                                   and now - self.last_heard > self.segments.hold):
            if self.remote is not None:
                log.info("vxlan-remote-replaced vni={vni} attachment={name} from={old} to={new}", vni=self.vni,
                         name=self.name, old=self.remote, new=source)
            else:
                log.info("vxlan-remote-learned vni={vni} attachment={name} remote={remote}", vni=self.vni,
                         name=self.name, remote=source)
            self.remote = source
            self.learned = True
        elif source != self.remote:
            self.segments.count("vxlan-foreign-source")
            frames._drop("vxlan-foreign-source")
            return
        self.last_heard = now
        frames.datagramReceived(frame)

    def send(self, frame: bytes) -> bool:
        """Send one frame to the remote; False (counted) when there is none yet, the attachment is closed or the
        kernel refuses the datagram."""
        frames = self.protocol
        if not self.connected:
            frames._drop("interface-closed")
            return False
        if self.remote is None:
            frames._drop("vxlan-no-remote")
            return False
        why = self.segments.send(self.vni, frame, self.remote)
        if why is not None:
            frames._drop(why)
            return False
        frames.tx_frames += 1
        frames.tx_bytes += len(frame)
        return True

    def counters(self) -> dict:
        """This attachment's kind, VNI, remote (and whether learned or set), frames and bytes, drops by reason."""
        mac = {"mac": self.mac} if self.mac else {}
        return {"name": self.name, "kind": self.kind, "vni": self.vni, "remote": self.remote,
                "remote_learned": self.learned, **mac, "carrier": None, **self.protocol.counters()}


class VxlanSegments(DatagramProtocol):
    """The one UDP port every VXLAN attachment's datagrams cross (`open` binds it, `close` closes it).

    `reactor` adopts the socket (IReactorSocket) and tells the time; `port` and `listen` (an address; "" all of
    them: IPv6 and IPv4 on one dual-stack socket) where it listens; `remote` a fixed remote address for every VNI
    (None: learned); `hold` the seconds a learned remote is held after its last datagram; `vni_base` what every
    attachment's VNI is offset by (`vni_of`)."""

    noisy = False

    def __init__(self, reactor, *, port: int = VXLAN_PORT, listen: str = "", remote: str | None = None,
                 hold: float = 300.0, vni_base: int = 0):
        self.reactor = reactor
        self.vni_base = vni_base
        self.port = port
        self.listen = listen
        self.remote = _plain(remote) if remote else None
        self.hold = hold
        self.by_vni: dict[int, VxlanPort] = {}
        self.listening = None
        self._v6 = False
        self.rx_datagrams = self.tx_datagrams = 0
        self.dropped: dict[str, int] = {}

    # ---- the socket ----------------------------------------------------------------------------------------

    def open(self) -> None:
        """Bind the UDP port; VxlanError (one line) when the host refuses."""
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
            self.listening = self.reactor.adoptDatagramPort(sock.fileno(), family, self, maxPacketSize=MAX_DATAGRAM)
        except OSError as exc:
            raise VxlanError(f"VXLAN port {self.port} at {address} cannot be bound: {exc.strerror or exc}") from None
        finally:
            sock.close()     # the reactor holds its own duplicate
        self._v6 = family == socket.AF_INET6
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
        """Close the port (its attachments are closed by their owner)."""
        listening, self.listening = self.listening, None
        if listening is not None:
            listening.stopListening()

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
        self.rx_datagrams += 1
        if len(datagram) < HEADER:
            self.count("vxlan-bad-header")
            return
        flags, word = struct.unpack_from("!II", datagram)
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
        port.received(_plain(addr[0]), datagram[HEADER:], self.reactor.seconds())

    def send(self, vni: int, frame: bytes, remote: str) -> str | None:
        """One frame to `remote` (a plain address) at the VXLAN port; None when sent, else the drop's reason."""
        transport = self.transport
        if transport is None:
            return "interface-closed"
        host = remote
        if self._v6 and ":" not in host:
            host = "::ffff:" + host      # an IPv4 remote through the dual-stack socket
        try:
            transport.write(encapsulate(vni, frame), (host, self.port))
        except OSError as exc:
            return f"write-{errno.errorcode.get(exc.errno, exc.errno)}".lower()
        except Exception as exc:      # Twisted's MessageLengthError, InvalidAddressError
            return f"write-{type(exc).__name__}".lower()
        self.tx_datagrams += 1
        return None

    def counters(self) -> dict:
        """The port, the address it listens at, datagrams read and sent, every drop by reason."""
        return {"port": self.port, "listen": self.listen or "all", "remote": self.remote or "learned",
                "hold": self.hold, "rx_datagrams": self.rx_datagrams, "tx_datagrams": self.tx_datagrams,
                "dropped": dict(self.dropped)}
