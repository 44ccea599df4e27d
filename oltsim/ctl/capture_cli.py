"""`oltsimctl capture`: the OLT's frames as pcapng, into a file or a pipe (`-w -`, e.g. `| wireshark -k -i -`).

It reads the v1 gRPC `oltsim.v1.Oltsim/Capture` stream at `--server`, over the same channel, TLS and token as every
other command (docs/capture.md); with `--rest HOST:PORT` it reads REST `GET /v1/capture` there instead (the same
bytes; over TLS when the settings ask for it, with the same CA, client certificate and server name). The filters and
the ends (`--duration`, `--count`) are the server's; Ctrl-C ends the capture too (exit 0). Only whole pcapng blocks
are written, so the file reads in Wireshark however the capture ended.
"""
from __future__ import annotations

import argparse
import datetime
import http.client
import json
import math
import os
import socket
import ssl
import struct
import threading
import time
from dataclasses import dataclass, field
from typing import Iterator
from urllib.parse import urlencode, urlsplit

import grpc

from oltsim._proto import oltsim_pb2

from oltsim.ctl.connection import EXIT_CONNECT, EXIT_OK, EXIT_REFUSED, EXIT_USAGE, CtlError
from oltsim.ctl.settings import SettingsError, parse_duration

CAPTURE_PATH = "/v1/capture"
CHUNK = 65536


def add_arguments(parser) -> None:
    """The command's own options."""
    parser.add_argument("-w", "--write", required=True, metavar="FILE",
                        help="write the pcapng here; - for standard output (| wireshark -k -i -)")
    parser.add_argument("--onu", dest="onus", action="append", metavar="ONU_SN",
                        help="only this ONU's frames (repeatable)")
    parser.add_argument("--pon", type=_pon, metavar="N", help="only the frames of this PON's ONUs")
    parser.add_argument("--omci", action="store_true", help="only OMCI frames")
    parser.add_argument("--packets", action="store_true", help="only UNI and NNI frames (EAPOL, DHCP, IGMP)")
    parser.add_argument("--since", metavar="DURATION",
                        help="start with the ring's frames of this last while (30s, 5m, 1h; all: the whole ring)")
    parser.add_argument("--duration", metavar="DURATION", help="end after this long (0: only the ring's part)")
    parser.add_argument("--count", type=_positive, metavar="N", help="end after N frames")
    parser.add_argument("--rest", metavar="HOST:PORT",
                        help="read it from oltsim's v1 REST API at this address instead of the gRPC server")


def _pon(text: str) -> int:
    # argparse.ArgumentTypeError: its text is the error line's; a ValueError would name this function (_pon)
    try:
        value = int(text, 10)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"not a non-negative integer: {text!r}")
    return value


def _positive(text: str) -> int:
    value = _pon(text)
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value


def _duration(text: str | None, name: str, zero: bool = False) -> str | None:
    """The duration as seconds for the query (checked here, so a typo is a usage error, not a 400)."""
    if text is None:
        return None
    if name == "since" and text.strip().lower() == "all":
        return "all"
    if zero and text.strip() in ("0", "0s"):
        return "0"
    try:
        return f"{parse_duration(text):g}"
    except SettingsError as exc:
        if name == "since":
            raise CtlError(f"--since must be all (the whole ring) or a duration such as 30s, 5m or 1h30m "
                           f"(got {text!r})", EXIT_USAGE) from None
        raise CtlError(f"--{name}: {exc}", EXIT_USAGE) from None


def query(args) -> str:
    """The query string of GET /v1/capture for the command line."""
    return urlencode(_parameters(args))


def request(args) -> oltsim_pb2.CaptureRequest:
    """The Capture request for the command line: the same parameters as the REST query."""
    message = oltsim_pb2.CaptureRequest(onu_serials=list(args.onus or ()), omci=args.omci, packets=args.packets)
    for name, value in _parameters(args):
        if name == "pon":
            message.pon_id = int(value)
        elif name in ("since", "duration"):
            setattr(message, name, value)
        elif name == "count":
            message.count = int(value)
    return message


def _parameters(args) -> list[tuple[str, str]]:
    pairs = [("onu", serial) for serial in args.onus or ()]
    if args.pon is not None:
        pairs.append(("pon", str(args.pon)))
    for flag in ("omci", "packets"):
        if getattr(args, flag):
            pairs.append((flag, "true"))
    for name, value in (("since", _duration(args.since, "since")),
                        ("duration", _duration(args.duration, "duration", zero=True))):
        if value is not None:
            pairs.append((name, value))
    if args.count is not None:
        pairs.append(("count", str(args.count)))
    return pairs


def rest_address(given: str) -> tuple[str, int]:
    """(host, port) of the REST endpoint given as HOST:PORT (or a URL)."""
    text = given
    if "//" in text:
        text = urlsplit(text).netloc
    host, _, port = text.rpartition(":")
    if not host or not port.isdigit():
        raise CtlError(f"--rest must be HOST:PORT (got {text!r})", EXIT_USAGE)
    return host.strip("[]"), int(port)


def _connection(settings, host: str, port: int):
    if not settings.tls:
        return http.client.HTTPConnection(host, port, timeout=settings.timeout)
    context = ssl.create_default_context(cafile=str(settings.ca_cert) if settings.ca_cert else None)
    if settings.client_cert:
        context.load_cert_chain(str(settings.client_cert), str(settings.client_key) if settings.client_key else None)
    return _Https(host, port, settings.server_name or host, timeout=settings.timeout, context=context)


class _Https(http.client.HTTPSConnection):
    """HTTPS to `host` checking the certificate against `server_name` (the settings' name override, as gRPC's)."""

    def __init__(self, host: str, port: int, server_name: str, **kwargs):
        super().__init__(host, port, **kwargs)
        self.server_name = server_name

    def connect(self):
        sock = socket.create_connection((self.host, self.port), self.timeout)
        self.sock = self._context.wrap_socket(sock, server_hostname=self.server_name)


#: Seconds a live capture with a filter may write no frame before oltsimctl says, once, that nothing matched yet.
QUIET_NOTICE = 10.0
#: The linktype of oltsim's annotations' interface (LINKTYPE_WIRESHARK_UPPER_PDU): its packets are not frames.
_ANNOTATIONS = 252


@dataclass
class Reach:
    """How far back the ring reached when the capture opened, as the server said (gRPC's CaptureCoverage, REST's
    X-Oltsim-Ring-* headers): `oldest` None when it is empty or did not say; `onus` {serial: time or None}."""
    wrapped: bool = False
    size: int = 0
    oldest: float | None = None
    onus: dict = field(default_factory=dict)
    #: the server's clock when the capture opened (None: not said; this machine's is used)
    now: float | None = None

    @classmethod
    def of_pb(cls, coverage) -> "Reach":
        return cls(coverage.wrapped, coverage.size, coverage.oldest or None,
                   {serial: when or None for serial, when in coverage.onu_oldest.items()}, coverage.now or None)

    @classmethod
    def of_headers(cls, headers) -> "Reach":
        onus = {}
        for item in (headers.get("X-Oltsim-Ring-Oldest-Onu") or "").split(","):
            serial, _, when = item.strip().partition("=")
            if serial:
                onus[serial] = _iso_seconds(when)
        size = headers.get("X-Oltsim-Ring-Size") or "0"
        return cls(headers.get("X-Oltsim-Ring-Wrapped") == "yes", int(size) if size.isdigit() else 0,
                   _iso_seconds(headers.get("X-Oltsim-Ring-Oldest") or ""), onus,
                   _iso_seconds(headers.get("X-Oltsim-Ring-Now") or ""))


def _iso_seconds(text: str) -> float | None:
    try:
        moment = datetime.datetime.strptime(text.strip(), "%Y-%m-%dT%H:%M:%S.%fZ")
    except ValueError:
        return None
    return moment.replace(tzinfo=datetime.timezone.utc).timestamp()


def _clock(seconds: float) -> str:
    return datetime.datetime.fromtimestamp(seconds, datetime.timezone.utc).strftime("%H:%M:%S UTC")


def reach_line(args, reach: Reach, started: float) -> str:
    """What the ring no longer held of what was asked (`--since`), one line; "" when it held all of it (or did not
    wrap). `started` is this machine's clock when the capture opened, used when the server did not say its own."""
    if not reach.wrapped or args.since is None:
        return ""
    if reach.now is not None:
        started = reach.now
    asked = math.inf if args.since.strip().lower() == "all" else parse_duration(args.since)
    if reach.oldest is not None and asked != math.inf and started - asked >= reach.oldest:
        return ""
    if reach.oldest is None:
        held = "the ring wrapped and held nothing"
    else:
        span = max(0.0, started - reach.oldest)
        held = f"the ring wrapped: it held only the last {span:.1f} s (from {_clock(reach.oldest)})"
        if asked != math.inf:
            held += f" of the {asked:g} s asked"
    for serial, oldest in reach.onus.items():
        held += f", {serial} from {_clock(oldest)}" if oldest is not None else f", nothing of {serial}"
    return f"{held}; older records are gone (start oltsim with a larger --capture-size to keep more)"


def nothing_written(args, reach: Reach | None, target: str, short: bool = True) -> str:
    """The one line of a capture that wrote no frame: why, and what to do. `short`: the ring did not reach back as
    far as `--since` asked (`reach_line`), so the wrap is the reason."""
    where = "standard output" if target == "-" else target
    named = ", ".join(args.onus or ())
    if reach is not None and args.since is not None and reach.wrapped and short:
        missing = [serial for serial, oldest in reach.onus.items() if oldest is None]
        what = f"nothing of {', '.join(missing)}" if missing else "no frame the filters keep"
        why = (f"the ring holds {what} (it wrapped: it keeps the last {reach.size} records"
               f"{', from ' + _clock(reach.oldest) if reach.oldest is not None else ''})")
        fix = ("start oltsim with a larger --capture-size, or capture live (no --since) before the ONU comes up"
               if named else "start oltsim with a larger --capture-size, or capture live (no --since)")
    elif args.since is not None:
        why = f"the ring holds no frame {'of ' + named if named else 'the filters keep'}" + \
              (f" from the last {args.since}" if args.since.strip().lower() != "all" else "")
        fix = "check the filters (oltsimctl onu list), or capture live without --duration 0 while it happens"
    else:
        why = "no frame the filters keep came while the capture ran"
        fix = "add --since all for what the ring holds, or run it longer (--duration)"
    return f"no frame written to {where}: {why} and none came; {fix}"


class _Notice:
    """One line on `err` if no frame has come QUIET_NOTICE seconds after the start (a filter that matched nothing
    yet is told rather than silent); `cancel()` when the capture ends."""

    def __init__(self, args, err):
        self.timer = None
        live = args.duration is None or _duration(args.duration, "duration", zero=True) != "0"
        if (args.onus or args.pon is not None or args.omci or args.packets) and live:
            self.timer = threading.Timer(QUIET_NOTICE, self._say, (args, err))
            self.timer.daemon = True
        self.frames = 0

    def start(self) -> None:
        if self.timer is not None:
            self.timer.start()

    def _say(self, args, err) -> None:
        if self.frames == 0:
            err.write(f"oltsimctl: no frame matched {_filters(args)} in {QUIET_NOTICE:g} s; still capturing "
                      f"(Ctrl-C ends)\n")
            err.flush()

    def cancel(self) -> None:
        if self.timer is not None:
            self.timer.cancel()


def _filters(args) -> str:
    parts = [f"--onu {serial}" for serial in args.onus or ()]
    if args.pon is not None:
        parts.append(f"--pon {args.pon}")
    parts += [f"--{flag}" for flag in ("omci", "packets") if getattr(args, flag)]
    return " ".join(parts)


def capture(conn, args, out, err) -> int:
    """Run the capture to `args.write` until the server ends it (duration, count), the daemon stops, or Ctrl-C.
    Says what the ring no longer held of what `--since` asked for; exits 1 with one line when no frame was
    written."""
    if args.rest is not None:
        return _capture_rest(conn, args, out, err)
    started = time.time()
    stream = conn.oltsim.Capture(request(args), metadata=conn.metadata)
    try:
        first = next(stream, None)  # the server's refusal (NOT_FOUND, INVALID_ARGUMENT, ...) before any file
    except grpc.RpcError as exc:
        raise _grpc_error(exc, conn.settings.server) from None
    except KeyboardInterrupt:
        stream.cancel()
        return EXIT_OK
    reach = Reach.of_pb(first.coverage) if first is not None and first.HasField("coverage") else None

    def chunks() -> Iterator[bytes]:
        if first is not None:
            yield first.data
        try:
            for chunk in stream:
                yield chunk.data
        except grpc.RpcError as exc:
            # The daemon stopping ends the stream UNAVAILABLE after its last bytes: the file is whole.
            if exc.code() not in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.CANCELLED):
                err.write(f"oltsimctl: capture ended: {exc.code().name}: {exc.details()}\n")
        finally:
            stream.cancel()
    return _copy(chunks(), args, out, err, reach, started)


def _grpc_error(exc: grpc.RpcError, server: str) -> CtlError:
    code = exc.code()
    if code in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED):
        return CtlError(f"cannot reach oltsim at {server}: {exc.details()}", EXIT_CONNECT)
    return CtlError(f"{code.name}: {exc.details()}", EXIT_REFUSED)


def _capture_rest(conn, args, out, err) -> int:
    settings = conn.settings
    host, port = rest_address(args.rest)
    path = CAPTURE_PATH + ("?" + query(args) if query(args) else "")
    headers = {"Accept": "application/x-pcapng"}
    if settings.token:
        headers["Authorization"] = f"Bearer {settings.token}"
    http_conn = _connection(settings, host, port)
    started = time.time()
    try:
        try:
            http_conn.request("GET", path, headers=headers)
            response = http_conn.getresponse()
        except (OSError, http.client.HTTPException) as exc:
            raise CtlError(f"cannot reach oltsim's REST API at {host}:{port} ({_reason(exc)})",
                           EXIT_CONNECT) from None
        if response.status != 200:
            raise CtlError(_refusal(response), EXIT_REFUSED)
        if http_conn.sock is not None:
            http_conn.sock.settimeout(None)  # a live capture may be quiet for long
        return _copy(_body(response), args, out, err, Reach.of_headers(response.headers), started)
    finally:
        http_conn.close()


def _body(response) -> Iterator[bytes]:
    """The pieces of a streamed REST answer as they come; it ends with the answer or the connection."""
    while True:
        try:
            data = response.read1(CHUNK)
        except (OSError, http.client.HTTPException):
            return
        if not data:
            return
        yield data


def _copy(pieces: Iterator[bytes], args, out, err, reach: Reach | None, started: float) -> int:
    target = args.write
    sink = out.buffer if target == "-" and hasattr(out, "buffer") else None
    handle = None
    if sink is None:
        if target == "-":
            sink = out
        else:
            try:
                handle = sink = open(target, "wb")
            except OSError as exc:
                raise CtlError(f"cannot write {target}: {exc.strerror or exc}", EXIT_USAGE) from None
    pending = b""
    blocks = Blocks()
    notice = _Notice(args, err)
    line = reach_line(args, reach, started) if reach is not None else ""
    if line:
        err.write(f"oltsimctl: {line}\n")
    notice.start()
    try:
        for data in pieces:
            pending += data
            whole = blocks.take(pending)
            notice.frames = blocks.frames
            if whole:
                sink.write(pending[:whole])
                sink.flush()
                pending = pending[whole:]
    except KeyboardInterrupt:
        pass
    finally:
        notice.cancel()
        close = getattr(pieces, "close", None)
        if close is not None:
            close()  # a gRPC stream is cancelled, a REST connection left to its caller
        if handle is not None:
            handle.close()
    if not blocks.frames:
        if handle is not None and not blocks.packets:
            _remove(target)  # a Section Header alone: nothing to open
        raise CtlError(nothing_written(args, reach, target, bool(line)), EXIT_REFUSED)
    if target != "-":
        notes = f" and {blocks.packets - blocks.frames} annotations" if blocks.packets > blocks.frames else ""
        from oltsim.capture.wireshark import reading_hint  # only here: the rest of oltsimctl needs no capture code
        err.write(f"{blocks.frames} packets{notes} written to {target}{reading_hint(target)}\n")
    return EXIT_OK


def _remove(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


class Blocks:
    """Counts the whole pcapng blocks of a stream as it comes: `packets` (Enhanced Packet Blocks) and, of them,
    `frames` (those not on the annotations' interface)."""

    def __init__(self):
        self.linktypes: list[int] = []
        self.packets = 0
        self.frames = 0

    def take(self, data: bytes) -> int:
        """Bytes of whole blocks at the start of `data` (counted; the caller passes what follows them again)."""
        offset = 0
        while offset + 8 <= len(data):
            block_type, length = struct.unpack_from("<II", data, offset)
            if length < 12 or offset + length > len(data):
                break
            if block_type == 0x0A0D0D0A:
                self.linktypes = []  # a new section declares its interfaces again
            elif block_type == 1 and length >= 16:
                self.linktypes.append(struct.unpack_from("<H", data, offset + 8)[0])
            elif block_type == 6 and length >= 12:
                self.packets += 1
                interface = struct.unpack_from("<I", data, offset + 8)[0]
                linktype = self.linktypes[interface] if interface < len(self.linktypes) else None
                self.frames += linktype != _ANNOTATIONS
            offset += length
        return offset


def _whole_blocks(data: bytes) -> tuple[int, int]:
    """(bytes of whole pcapng blocks at the start of `data`, how many of them are packets)."""
    blocks = Blocks()
    return blocks.take(data), blocks.packets


def _refusal(response) -> str:
    body = response.read(65536)
    try:
        message = json.loads(body)["message"]
    except (ValueError, KeyError, TypeError):
        message = body.decode("utf-8", "replace").strip() or response.reason
    return f"HTTP {response.status}: {message}"


def _reason(exc: BaseException) -> str:
    if isinstance(exc, socket.timeout):
        return "no answer in time"
    return getattr(exc, "strerror", None) or str(exc) or type(exc).__name__

