"""An 802.1Q port in user space, for the data plane's integration tests on a kernel without 802.1Q (no VLAN
sub-interfaces, no bridge VLAN filtering, no tc vlan action): an RG's or a BNG's IP stack on a veth gets its frames
tagged towards a trunk (a UNI's or the NNI's TAP interface) and untagged back, as an `eth0.55` sub-interface would.

Run as a program in the namespace holding both interfaces:

    python vlanport.py TRUNK ACCESS TAGS [--native] [--tx-checksum-off IFNAME]

TAGS is the tag stack pushed on every frame read from ACCESS, outermost first, `VID:PCP[,VID:PCP]` (`550:5`,
`900:0,7:0`); a frame read from TRUNK whose tags start with those VIDs loses them and goes to ACCESS; with
`--native` an untagged frame from TRUNK goes to ACCESS as it is (multicast the ONU delivers untagged). Frames the
kernel offloaded the outer tag of are read back with it (PACKET_AUXDATA), as tcpdump reads them, and a TCP or UDP
checksum the kernel left for a NIC to finish (TP_STATUS_CSUMNOTREADY) is finished.
`--tx-checksum-off` turns the transmit checksum offload of an interface off first (ETHTOOL_STXCSUM, as `ethtool
-K IFNAME tx off`): a veth leaves UDP checksums unfinished, which this relay would pass on as they are.

`start(lab, netns, trunk, access_name, peer_name, tags, address=...)` makes the veth pair in `netns`, addresses the
stack's end and starts the relay through the Lab (stopped and removed with it).
"""
from __future__ import annotations

import select
import socket
import struct
import sys
import time

ETH_P_ALL = 3
SOL_PACKET = 263
PACKET_AUXDATA = 8
PACKET_OUTGOING = 4
TP_STATUS_CSUMNOTREADY = 1 << 3
TP_STATUS_VLAN_VALID = 1 << 4
TP_STATUS_VLAN_TPID_VALID = 1 << 6
TPID = 0x8100
SIOCETHTOOL = 0x8946
ETHTOOL_STXCSUM = 0x17


def parse_tags(text: str) -> list[tuple[int, int]]:
    tags = []
    for part in text.split(","):
        vid, _, pcp = part.partition(":")
        tags.append((int(vid), int(pcp or 0)))
    return tags


def tx_checksum_off(name: str) -> None:
    import ctypes
    import fcntl
    value = ctypes.create_string_buffer(struct.pack("II", ETHTOOL_STXCSUM, 0), 8)
    request = struct.pack("16sP", name.encode(), ctypes.addressof(value)).ljust(40, b"\0")
    with socket.socket() as s:
        fcntl.ioctl(s.fileno(), SIOCETHTOOL, request)


def open_port(name: str) -> socket.socket:
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
    s.setsockopt(SOL_PACKET, PACKET_AUXDATA, 1)
    s.bind((name, 0))
    return s


def _sum16(data: bytes) -> int:
    if len(data) % 2:
        data += b"\0"
    total = sum(struct.unpack(f"!{len(data) // 2}H", data))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return total


def finish_checksum(frame: bytes) -> bytes:
    """`frame` (untagged) with the TCP or UDP checksum of its IPv4 packet computed: the kernel left it for a NIC
    to finish (checksum offload), which a packet socket reads as it is."""
    if len(frame) < 34 or frame[12:14] != b"\x08\x00":
        return frame
    ip = 14
    header = (frame[ip] & 15) * 4
    proto, total = frame[ip + 9], struct.unpack("!H", frame[ip + 2:ip + 4])[0]
    at = {6: 16, 17: 6}.get(proto)
    l4 = ip + header
    if at is None or len(frame) < ip + total or total < header + at + 2:
        return frame
    segment = bytearray(frame[l4:ip + total])
    segment[at:at + 2] = b"\0\0"
    pseudo = frame[ip + 12:ip + 20] + struct.pack("!BBH", 0, proto, len(segment))
    checksum = 0xFFFF - _sum16(pseudo + bytes(segment))
    segment[at:at + 2] = struct.pack("!H", checksum or (0xFFFF if proto == 17 else 0))
    return frame[:l4] + bytes(segment) + frame[ip + total:]


def read(s: socket.socket) -> bytes | None:
    """One frame as it was on the wire (an offloaded tag put back, an unfinished checksum finished); None for one
    this host sent."""
    data, ancillary, _, address = s.recvmsg(65535, socket.CMSG_SPACE(32))
    if address[2] == PACKET_OUTGOING:
        return None
    for level, kind, value in ancillary:
        if level == SOL_PACKET and kind == PACKET_AUXDATA and len(value) >= 20:
            status, _, _, _, _, tci, tpid = struct.unpack("IIIHHHH", value[:20])
            if status & TP_STATUS_CSUMNOTREADY:
                data = finish_checksum(data)
            if status & TP_STATUS_VLAN_VALID:
                tpid = tpid if status & TP_STATUS_VLAN_TPID_VALID and tpid else TPID
                data = data[:12] + struct.pack("!HH", tpid, tci) + data[12:]
    return data


def relay(trunk: str, access: str, tags: list[tuple[int, int]], native: bool) -> None:
    pushed = b"".join(struct.pack("!HH", TPID, (pcp & 7) << 13 | (vid & 0xFFF)) for vid, pcp in tags)
    vids = [vid for vid, _ in tags]
    t, a = open_port(trunk), open_port(access)
    print(f"relaying {access} <-> {trunk} with {tags}", flush=True)    # start() waits for this line
    while True:
        ready, _, _ = select.select([t, a], [], [])
        for s in ready:
            try:
                frame = read(s)
            except OSError:
                time.sleep(0.05)     # ENETDOWN: the interface is down for a moment (moved, its carrier off)
                continue
            if frame is None or len(frame) < 14:
                continue
            try:
                if s is a:
                    t.send(frame[:12] + pushed + frame[12:])
                    continue
                offset, seen = 12, []
                while len(seen) < len(vids) and len(frame) >= offset + 4 and \
                        struct.unpack("!H", frame[offset:offset + 2])[0] in (0x8100, 0x88A8):
                    seen.append(struct.unpack("!H", frame[offset + 2:offset + 4])[0] & 0xFFF)
                    offset += 4
                if seen == vids:
                    a.send(frame[:12] + frame[offset:])
                elif native and not seen:
                    a.send(frame)
            except OSError:
                pass            # the other end is down for a moment (a link flap): the frame is lost, as on a wire


def start(lab, netns: str, trunk: str, name: str, tags: str, address: str | None = None, native: bool = False,
          mac: str | None = None):
    """In `netns`: a veth pair `name` (the IP stack's end, up, given `address` and `mac`) / `name`p (the relay's),
    and the relay between `trunk` and `name`p with `tags`, started through `lab` (stopped at its close)."""
    from netlab import run
    peer = f"{name}p"
    run("ip", "-n", netns, "link", "add", name, *(["address", mac] if mac else []), "type", "veth", "peer", "name",
        peer)
    for interface in (name, peer):
        run("ip", "-n", netns, "link", "set", "dev", interface, "up")
    if address:
        run("ip", "-n", netns, "addr", "add", address, "dev", name)
    run("ip", "netns", "exec", netns, "sysctl", "-q", "-w", "net.ipv6.conf.all.disable_ipv6=1",
        "net.ipv4.conf.all.rp_filter=0", f"net.ipv4.conf.{name}.rp_filter=0")
    log = f"{netns}.{name}.relay.log"
    process = lab.start(netns, sys.executable, __file__, trunk, peer, tags, *(["--native"] if native else []),
                        "--tx-checksum-off", name, log=log)
    deadline = time.monotonic() + 30
    while "relaying" not in lab.log(log):        # its sockets open: what the stack sends from now on is relayed
        if process.poll() is not None or time.monotonic() > deadline:
            raise AssertionError(f"the VLAN relay in {netns} did not start: {lab.log(log)[-2000:]}")
        time.sleep(0.05)
    return process


def main(argv: list[str]) -> int:
    args = list(argv)
    native = "--native" in args
    if native:
        args.remove("--native")
    while "--tx-checksum-off" in args:
        at = args.index("--tx-checksum-off")
        tx_checksum_off(args[at + 1])
        del args[at:at + 2]
    if len(args) != 3:
        sys.stderr.write(__doc__)
        return 2
    trunk, access, tags = args
    relay(trunk, access, parse_tags(tags), native)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
