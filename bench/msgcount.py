#!/usr/bin/env python3
"""What each simulator sends BBSim's `bbr`, per ONU: a counting OpenOLT proxy between bbr and oltsim (and BBSim).

    python bench/msgcount.py --bbr PATH [--bbsim PATH] [--services FILE] [--size 2x4] [--uni 4]

For the simulator(s) it starts (oltsim, and BBSim with --bbsim, both on loopback ports as bench/bbr.py does), a
proxy listens on 127.0.0.1 and bbr is pointed at it (`-bbsimPort`) instead of at the simulator's OpenOLT port.
bbr's other connection, to the BBSim API (`-bbsimApiPort`, only for the closing `GetServices` check in
internal/bbr/devices/validate.go), goes straight to the simulator: it carries nothing per ONU.

How counting works. The proxy is a grpc.aio server with one generic handler and no (de)serializers, so every
`/openolt.Openolt/<Method>` call is forwarded as raw bytes to the same method on the simulator, on one channel
also without (de)serializers; answers and status codes come back unchanged. Whether a method is unary or
server-streaming (EnableIndication) comes from the Openolt service descriptor of voltha_protos. Besides
forwarding, the proxy decodes copies with voltha_protos.openolt_pb2 and counts:

- `call`: every call bbr makes, per method;
- `ind`: every message on the EnableIndication stream, per oneof kind of Indication.data (onu_ind and
  intf_oper_ind also by state, as a repeated "up" is the typical extra);
- `omci`: OMCI frames, both ways: `tx` from bbr's OmciMsgOut (OmciMsg.pkt, which VOLTHA and bbr fill with the
  frame in ASCII hex) and `rx` from omci_ind (OmciIndication.pkt, raw bytes; hex is accepted too). Each is keyed
  by the message type, byte 2 of the frame (low 5 bits the type, bit 0x20 AK = a response, 0x40 AR = answer
  requested), and the managed entity class, bytes 4-5: e.g. 0x4f/0x2f MIB reset, 0x4d/0x2d MIB upload,
  0x4e/0x2e MIB upload next, 0x48/0x28 Set, 0x11 attribute value change, 0x10 alarm notification;
- `pkt`: packets, `rx` from pkt_ind and `tx` from OnuPacketOut / UplinkPacketOut, classified by ethertype
  (after any 802.1Q/802.1ad tags) as EAPOL with its EAP code and type, or DHCP (IPv4/UDP 67/68) with its
  option 53 message type;
- `bytes`: the serialized sizes of the indications on the stream and of bbr's requests, all and per kind or
  method, and the Ethernet frame sizes per packet key (same count, different size is a difference too).

The table prints, per simulator, the total and the total divided by the ONUs (PONs x ONUs per PON), and DIFF =
oltsim per ONU - BBSim per ONU. Periodic messages (port_stats, flow_stats) depend on how long the run takes.
Metadata is not forwarded (bbr sends none of its own). Exits 0 whatever the counts are (it is a report).
"""
from __future__ import annotations

import argparse
import asyncio
import collections
import sys
import threading

import grpc
from voltha_protos import openolt_pb2

from bbr import BBSimProcess, check_programs, run_bbr
from startup import Daemon, free_ports

SERVICE = "openolt.Openolt"
STREAMING = {m.name for m in openolt_pb2.DESCRIPTOR.services_by_name["Openolt"].methods if m.server_streaming}
REQUEST_TYPES = {m.name: m.input_type._concrete_class
                 for m in openolt_pb2.DESCRIPTOR.services_by_name["Openolt"].methods}
# No size limit either way: the proxy must never be the reason a message fails.
UNLIMITED = [("grpc.max_receive_message_length", -1), ("grpc.max_send_message_length", -1)]

OMCI_TYPES = {4: "Create", 6: "Delete", 8: "Set", 9: "Get", 11: "GetAllAlarms", 12: "GetAllAlarmsNext",
              13: "MibUpload", 14: "MibUploadNext", 15: "MibReset", 16: "AlarmNotification",
              17: "AttributeValueChange", 18: "Test", 19: "StartSwDownload", 20: "DownloadSection",
              21: "EndSwDownload", 22: "ActivateSw", 23: "CommitSw", 24: "SynchronizeTime", 25: "Reboot",
              26: "GetNext", 27: "TestResult", 28: "GetCurrentData", 29: "SetTable"}
ME_CLASSES = {2: "OnuData", 5: "CardHolder", 6: "CircuitPack", 7: "SoftwareImage", 11: "PPTP-EthUNI",
              24: "PMHistData", 45: "MacBridgeSvcProf", 47: "MacBridgePortCfg", 84: "VlanTagFilter",
              171: "ExtVlanTagOp", 256: "ONU-G", 257: "ONU2-G", 262: "T-CONT", 263: "ANI-G", 264: "UNI-G",
              266: "GemIwTp", 268: "GemPortCTP", 277: "PriorityQueue", 278: "TrafficScheduler",
              281: "MulticastGemIwTp", 329: "VEIP", 347: "IpHostCfg"}
EAP_CODES = {1: "Request", 2: "Response", 3: "Success", 4: "Failure"}
EAP_TYPES = {1: "Identity", 4: "MD5"}
EAPOL_TYPES = {1: "Start", 2: "Logoff", 3: "Key"}
DHCP_TYPES = {1: "Discover", 2: "Offer", 3: "Request", 4: "Decline", 5: "Ack", 6: "Nak", 7: "Release"}


def frame_bytes(pkt: bytes) -> bytes:
    """An OMCI frame as bytes, from raw bytes or from the ASCII hex VOLTHA (and bbr) put in OmciMsg.pkt."""
    try:
        text = pkt.decode("ascii")
        if len(text) % 2 == 0 and len(text) >= 8:
            return bytes.fromhex(text)
    except ValueError:  # UnicodeDecodeError is one: not ASCII, so raw bytes already
        pass
    return pkt


def omci_key(direction: str, pkt: bytes) -> str:
    """'tx 0x4f MibReset ME 2 OnuData': type byte, its message type and the managed entity class."""
    frame = frame_bytes(pkt)
    if len(frame) < 6:
        return f"{direction} short frame"
    kind, me_class = frame[2], int.from_bytes(frame[4:6], "big")
    suffix = " resp" if kind & 0x20 else ""
    return (f"{direction} 0x{kind:02x} {OMCI_TYPES.get(kind & 0x1f, 'type%d' % (kind & 0x1f))}{suffix} "
            f"ME {me_class} {ME_CLASSES.get(me_class, '')}".rstrip())


def packet_key(direction: str, pkt: bytes) -> str:
    """'rx EAPOL EAP Request/Identity', 'tx DHCP Discover', else the ethertype: what a packet carries."""
    offset, ethertype = 12, None
    for _ in range(3):  # at most a double tag before the real ethertype: bounded
        if len(pkt) < offset + 2:
            return f"{direction} runt"
        ethertype = int.from_bytes(pkt[offset:offset + 2], "big")
        if ethertype not in (0x8100, 0x88a8, 0x9100):
            break
        offset += 4
    body = pkt[offset + 2:]
    if ethertype == 0x888E:
        if len(body) >= 2 and body[1] == 0 and len(body) >= 5:
            code = body[4]
            name = EAP_CODES.get(code, f"code{code}")
            if code in (1, 2) and len(body) >= 9:
                name += "/" + EAP_TYPES.get(body[8], f"type{body[8]}")
            return f"{direction} EAPOL EAP {name}"
        return f"{direction} EAPOL {EAPOL_TYPES.get(body[1], 'type?') if len(body) >= 2 else 'runt'}"
    if ethertype == 0x0800 and len(body) >= 20 and body[9] == 17:
        udp = body[(body[0] & 0x0F) * 4:]
        ports = (int.from_bytes(udp[0:2], "big"), int.from_bytes(udp[2:4], "big")) if len(udp) >= 4 else ()
        if set(ports) & {67, 68}:
            return f"{direction} DHCP {DHCP_TYPES.get(dhcp_type(udp[8:]), '?')}"
        return f"{direction} IPv4/UDP {ports}"
    return f"{direction} ethertype 0x{ethertype:04x}"


def dhcp_type(dhcp: bytes) -> int | None:
    """Option 53 of a BOOTP/DHCP payload (fixed 236 bytes, magic cookie, then options)."""
    position = 240
    for _ in range(64):   # options are few; bounded walk
        if position >= len(dhcp) or dhcp[position] == 255:
            return None
        if dhcp[position] == 0:
            position += 1
            continue
        if position + 1 >= len(dhcp):
            return None
        code, length = dhcp[position], dhcp[position + 1]
        if code == 53 and length >= 1 and position + 2 < len(dhcp):
            return dhcp[position + 2]
        position += 2 + length
    return None


class Counts:
    """Counters keyed (section, key). Only the proxy's event loop thread writes them; read after it stopped."""

    def __init__(self):
        self.values: collections.Counter = collections.Counter()

    def request(self, method: str, raw: bytes) -> None:
        self.values["call", method] += 1
        self.values["bytes", "requests (all)"] += len(raw)
        self.values["bytes", f"request {method}"] += len(raw)
        if method not in ("OmciMsgOut", "OnuPacketOut", "UplinkPacketOut"):
            return  # only these carry frames worth looking into
        message = REQUEST_TYPES[method].FromString(raw)
        if method == "OmciMsgOut":
            self.values["omci", omci_key("tx", message.pkt)] += 1
        else:
            self.packet(packet_key("tx", message.pkt), message.pkt)

    def packet(self, key: str, pkt: bytes) -> None:
        # Same packets, different sizes is a difference too (padding, options): count the frame bytes as well.
        self.values["pkt", key] += 1
        self.values["bytes", f"pkt {key}"] += len(pkt)

    def indication(self, raw: bytes) -> None:
        indication = openolt_pb2.Indication.FromString(raw)
        kind = indication.WhichOneof("data") or "(empty)"
        self.values["ind", kind] += 1
        self.values["bytes", "indication stream (all)"] += len(raw)
        self.values["bytes", f"indication {kind}"] += len(raw)
        if kind == "onu_ind":
            self.values["ind", f"onu_ind oper={indication.onu_ind.oper_state} "
                               f"admin={indication.onu_ind.admin_state}"] += 1
        elif kind == "intf_oper_ind":
            ind = indication.intf_oper_ind
            self.values["ind", f"intf_oper_ind {ind.type} {ind.oper_state}"] += 1
        elif kind == "omci_ind":
            self.values["omci", omci_key("rx", indication.omci_ind.pkt)] += 1
        elif kind == "pkt_ind":
            self.packet(packet_key("rx", indication.pkt_ind.pkt), indication.pkt_ind.pkt)


class Proxy:
    """A counting pass-through of the Openolt service, from 127.0.0.1:<port> to an upstream simulator."""

    def __init__(self, loop: asyncio.AbstractEventLoop, upstream: str):
        self.loop, self.upstream = loop, upstream
        self.port = free_ports(1)[0]
        self.counts = Counts()
        self.server: grpc.aio.Server | None = None
        self.channel: grpc.aio.Channel | None = None

    def _handler(self, details):
        """grpc's generic handler hook: a raw-bytes handler for every Openolt method, None (UNIMPLEMENTED) else."""
        service, _, method = details.method.lstrip("/").partition("/")
        if service != SERVICE or method not in REQUEST_TYPES:
            return None
        if method in STREAMING:
            return grpc.unary_stream_rpc_method_handler(self._stream(details.method, method))
        return grpc.unary_unary_rpc_method_handler(self._unary(details.method, method))

    def _unary(self, path: str, method: str):
        forward = self.channel.unary_unary(path)  # no serializers: bytes in, bytes out

        async def handle(request: bytes, context):
            self.counts.request(method, request)
            try:
                return await forward(request)
            except grpc.aio.AioRpcError as error:
                await context.abort(error.code(), error.details() or "")
        return handle

    def _stream(self, path: str, method: str):
        forward = self.channel.unary_stream(path)

        async def handle(request: bytes, context):
            self.counts.request(method, request)
            call = forward(request)
            try:
                async for message in call:
                    self.counts.indication(message)
                    yield message
            except grpc.aio.AioRpcError as error:
                await context.abort(error.code(), error.details() or "")
            finally:
                # bbr ends by closing its connection, which cancels this handler: drop the upstream stream too.
                call.cancel()
        return handle

    async def _start(self) -> None:
        self.channel = grpc.aio.insecure_channel(self.upstream, options=UNLIMITED)
        handler = type("Handler", (grpc.GenericRpcHandler,), {"service": lambda _, d: self._handler(d)})()
        self.server = grpc.aio.server(handlers=[handler], options=UNLIMITED)
        self.server.add_insecure_port(f"127.0.0.1:{self.port}")
        await self.server.start()

    async def _stop(self) -> None:
        await self.server.stop(grace=None)
        await self.channel.close()

    def __enter__(self):
        asyncio.run_coroutine_threadsafe(self._start(), self.loop).result(30)
        return self

    def __exit__(self, *exc):
        asyncio.run_coroutine_threadsafe(self._stop(), self.loop).result(30)


class ProxyLoop:
    """One asyncio loop in a thread for every proxy of the run (grpc.aio keeps to the loop it first ran on)."""

    def __enter__(self) -> asyncio.AbstractEventLoop:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="msgcount-proxy", daemon=True)
        self.thread.start()
        return self.loop

    def __exit__(self, *exc):
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(30)
        self.loop.close()


def count(simulator: str, args, loop, pon: int, onu: int) -> tuple[Counts, str]:
    """One bbr run through a proxy in front of a fresh simulator: (counts, 'ok, N s' or what went wrong)."""
    if simulator == "oltsim":
        context = Daemon("--pon", str(pon), "--onu", str(onu), "--uni", str(args.uni), "--delay", "0")
    else:
        context = BBSimProcess(args.bbsim, args.services, pon, onu, args.uni)
    with context as sim:
        if simulator == "oltsim":
            sim.start()
            openolt, api = sim.ports["openolt"], sim.ports["grpc-v1"]
        else:
            openolt, api = sim.ports["openolt"], sim.ports["api"]
        with Proxy(loop, f"127.0.0.1:{openolt}") as proxy:
            try:
                result = run_bbr(args.bbr, args.services, pon, onu, args.uni, proxy.port, api, args.timeout)
                status = f"ok, bbr {result['seconds']:.2f} s"
            except RuntimeError as exc:
                status = f"FAILED: {exc}"
        return proxy.counts, status


SECTIONS = (("call", "calls from bbr"), ("ind", "indications on the stream"),
            ("omci", "OMCI frames (tx = bbr OmciMsgOut, rx = omci_ind)"),
            ("pkt", "packets (tx = bbr PacketOut, rx = pkt_ind)"), ("bytes", "bytes"))


def print_table(results: dict[str, Counts], onus: int) -> None:
    simulators = list(results)
    keys = set()
    for counts in results.values():
        keys.update(counts.values)
    width = max([len(key) for _, key in keys] + [30]) + 2
    header = f"{'':<{width}}" + "".join(f"{name + ' total':>14}{name + ' /ONU':>13}" for name in simulators)
    if len(simulators) == 2:
        header += f"{'DIFF /ONU':>11}"
    print(header)
    print("-" * len(header))
    for section, title in SECTIONS:
        rows = sorted(key for sec, key in keys if sec == section)
        if not rows:
            continue
        print(f"[{title}]")
        for key in rows:
            line = f"  {key:<{width - 2}}"
            per_onu = []
            for name in simulators:
                total = results[name].values[section, key]
                per_onu.append(total / onus)
                line += f"{total:>14}{total / onus:>13.2f}"
            if len(per_onu) == 2:
                diff = per_onu[0] - per_onu[1]
                line += f"{diff:>+11.2f}" if abs(diff) > 1e-9 else f"{'':>11}"
            print(line)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bbr", required=True, help="path of a bbr binary built from opencord/bbsim")
    parser.add_argument("--bbsim", help="path of a bbsim binary, to count BBSim's messages too")
    parser.add_argument("--services", help="BBSim's att-services.yaml (default: configs/ beside bbr's bin/)")
    parser.add_argument("--size", default="2x4", help="PONxONU (default %(default)s)")
    parser.add_argument("--uni", type=int, default=4, help="UNIs per ONU, on both sides (default 4)")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds one bbr run may take")
    args = parser.parse_args(argv)
    check_programs(parser, args)
    pon, onu = (int(n) for n in args.size.split("x"))

    results: dict[str, Counts] = {}
    with ProxyLoop() as loop:
        for simulator in ["oltsim"] + (["bbsim"] if args.bbsim else []):
            try:
                results[simulator], status = count(simulator, args, loop, pon, onu)
            except RuntimeError as exc:   # the simulator did not start: nothing to count
                status = f"FAILED to start: {exc}"
            print(f"{simulator}: {status}", file=sys.stderr)
    print(f"bbr -delay 0 through a counting proxy, {args.size} ({pon * onu} ONUs), {args.uni} UNIs per ONU")
    if results:
        print_table(results, pon * onu)
    return 0


if __name__ == "__main__":
    sys.exit(main())
