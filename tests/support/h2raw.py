"""Raw HTTP/2 client connections for abuse runs: gRPC requests built frame by frame with the `h2` library.

A `RawConnection` is one TCP connection speaking HTTP/2 as a client, with none of a gRPC client's manners: it can
open streams and never send their request (HEADERS without DATA), reset them right after opening them (rapid
reset), or announce a small receive window and never give credit back (a reader that stopped reading). It keeps
count of what the server answered with (`counts`): GOAWAY and its error code, RST_STREAM codes, `:status` codes
other than 200 and `grpc-status` codes, so that a caller can tell "refused" (REFUSED_STREAM, RESOURCE_EXHAUSTED,
503, 413, GOAWAY) from "served" and from "nothing happened".

Everything is bounded: the socket has a timeout, `pump` waits at most what it is told. One connection is used by
one thread at a time (no locks). Used by the storm drivers beside it and by `bench/capture.py`, imported as
`tests.support.h2raw` (pytest and those programs put the repository root on `sys.path`). Needs `h2>=4` (setup.py's
test extras).
"""
from __future__ import annotations

import select
import socket
import ssl
from collections import Counter

import h2.config
import h2.connection
import h2.events
import h2.exceptions
import h2.settings
from h2.errors import ErrorCodes
from h2.settings import SettingCodes

__all__ = ["EMPTY_GRPC_MESSAGE", "ErrorCodes", "RawConnection", "SettingCodes", "grpc_frame", "grpc_status_name",
           "REFUSED_KEYS", "refused"]

#: A gRPC length-prefixed message carrying an empty protobuf (not compressed, length 0).
EMPTY_GRPC_MESSAGE = b"\x00\x00\x00\x00\x00"

#: The `counts` keys that mean "the server refused" (the names the abuse benchmark reports).
REFUSED_KEYS = ("RESOURCE_EXHAUSTED", "503", "413", "REFUSED_STREAM", "GOAWAY")

_GRPC_CODES = {0: "OK", 1: "CANCELLED", 2: "UNKNOWN", 3: "INVALID_ARGUMENT", 4: "DEADLINE_EXCEEDED", 5: "NOT_FOUND",
               6: "ALREADY_EXISTS", 7: "PERMISSION_DENIED", 8: "RESOURCE_EXHAUSTED", 9: "FAILED_PRECONDITION",
               10: "ABORTED", 11: "OUT_OF_RANGE", 12: "UNIMPLEMENTED", 13: "INTERNAL", 14: "UNAVAILABLE",
               15: "DATA_LOSS", 16: "UNAUTHENTICATED"}


def grpc_status_name(value: bytes | str | int) -> str:
    """RESOURCE_EXHAUSTED for b"8"; the number itself for a code gRPC does not define."""
    try:
        number = int(value)
    except (TypeError, ValueError):
        return f"grpc-status {value!r}"
    return _GRPC_CODES.get(number, str(number))


def grpc_frame(payload: bytes) -> bytes:
    """A serialized protobuf as one gRPC length-prefixed message (uncompressed)."""
    return b"\x00" + len(payload).to_bytes(4, "big") + payload


def refused(counts: Counter) -> int:
    """How many answers in `counts` were refusals (REFUSED_KEYS)."""
    return sum(counts.get(key, 0) for key in REFUSED_KEYS)


class RawConnection:
    """One client HTTP/2 connection to host:port, driven by hand (see the module docstring).

    `window`, when given, is the SETTINGS_INITIAL_WINDOW_SIZE announced in the first SETTINGS frame: how much a
    stream may receive before the server must wait for a WINDOW_UPDATE, which this connection only sends when
    `auto_credit` is true (the default: received DATA is acknowledged at once). `token` adds
    `authorization: Bearer <token>` to every request. `tls`, an `ssl.SSLContext`, speaks TLS (with ALPN `h2`
    offered, as gRPC clients do).
    """

    def __init__(self, host: str, port: int, *, timeout: float = 10.0, window: int | None = None,
                 auto_credit: bool = True, token: str | None = None, tls: ssl.SSLContext | None = None):
        self.host, self.port = host, port
        self.auto_credit = auto_credit
        self.token = token
        self.counts: Counter = Counter()
        self.closed = False          # the socket is gone (EOF, reset, or close())
        self.terminated = False      # the server sent GOAWAY
        self.goaway_code: str | None = None
        self.last_stream_id = 0      # highest stream id the server said it processed (GOAWAY)
        self.received_bytes = 0      # DATA bytes received, all streams
        self.open_streams: set[int] = set()
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if tls is not None:
            tls.set_alpn_protocols(["h2"])
            self.sock = tls.wrap_socket(self.sock, server_hostname=host)
        config = h2.config.H2Configuration(client_side=True, header_encoding=None, validate_inbound_headers=False)
        self.conn = h2.connection.H2Connection(config=config)
        initial = dict(self.conn.local_settings.items())
        initial[SettingCodes.ENABLE_PUSH] = 0
        if window is not None:
            initial[SettingCodes.INITIAL_WINDOW_SIZE] = window
        # Set before initiate_connection so that the first SETTINGS frame carries them (values assigned later
        # would only be pending until the server acknowledges a second SETTINGS frame).
        self.conn.local_settings = h2.settings.Settings(client=True, initial_values=initial)
        self.conn.initiate_connection()
        self.flush()

    # ---- sending ------------------------------------------------------------------------------------------

    def request_headers(self, path: str, extra: tuple = ()) -> list[tuple[bytes, bytes]]:
        """The HEADERS of a gRPC call to `path` (/package.Service/Method)."""
        headers = [(b":method", b"POST"), (b":scheme", b"http"), (b":path", path.encode("ascii")),
                   (b":authority", f"{self.host}:{self.port}".encode("ascii")),
                   (b"content-type", b"application/grpc"), (b"te", b"trailers")]
        if self.token:
            headers.append((b"authorization", b"Bearer " + self.token.encode("ascii")))
        headers.extend(extra)
        return headers

    def open_stream(self, path: str, message: bytes | None = None, end_stream: bool = False,
                    headers: list | None = None) -> int:
        """Start a gRPC call: HEADERS, then `message` (already framed, see grpc_frame) as DATA if given,
        half-closing the stream when `end_stream`. Nothing is flushed; returns the stream id."""
        stream_id = self.conn.get_next_available_stream_id()
        headers = headers if headers is not None else self.request_headers(path)
        self.conn.send_headers(stream_id, headers, end_stream=end_stream and message is None)
        if message is not None:
            self.conn.send_data(stream_id, message, end_stream=end_stream)
        self.open_streams.add(stream_id)
        return stream_id

    def send(self, stream_id: int, data: bytes, end_stream: bool = False) -> None:
        """DATA on a stream (not flushed); the caller checks flow control first (can_send)."""
        self.conn.send_data(stream_id, data, end_stream=end_stream)

    def can_send(self, stream_id: int, size: int) -> bool:
        """Whether flow control lets `size` bytes go on `stream_id` now (connection and stream windows)."""
        try:
            return self.conn.local_flow_control_window(stream_id) >= size
        except h2.exceptions.StreamClosedError:
            return False

    def reset(self, stream_id: int, code: ErrorCodes = ErrorCodes.CANCEL) -> None:
        """RST_STREAM on a stream (not flushed)."""
        try:
            self.conn.reset_stream(stream_id, code)
        except h2.exceptions.StreamClosedError:
            pass
        self.open_streams.discard(stream_id)

    def flush(self) -> None:
        """Send whatever h2 has queued; a connection the server closed is marked closed, not raised."""
        data = self.conn.data_to_send()
        if data and not self.closed:
            try:
                self.sock.sendall(data)
            except OSError:
                self.closed = True

    # ---- receiving ----------------------------------------------------------------------------------------

    def pump(self, timeout: float = 0.0) -> bool:
        """Read what the server sent within `timeout` seconds (0: only what is already there), handle it, and
        send h2's automatic replies (SETTINGS and PING acknowledgements, WINDOW_UPDATE when auto_credit).
        Returns False once the connection is closed."""
        if self.closed:
            return False
        wait = timeout
        while True:
            try:
                ready, _, _ = select.select([self.sock], [], [], wait)
            except (OSError, ValueError):
                self.closed = True
                return False
            if not ready:
                break
            try:
                data = self.sock.recv(1 << 16)
            except (BlockingIOError, socket.timeout):
                break
            except OSError:
                self.closed = True
                break
            if not data:
                self.closed = True
                break
            self.feed(data)
            wait = 0.0
        self.flush()
        return not self.closed

    def feed(self, data: bytes) -> None:
        """Hand bytes from the server to h2 and count the events they carry."""
        try:
            events = self.conn.receive_data(data)
        except h2.exceptions.ProtocolError as exc:
            self.counts[f"protocol-error {type(exc).__name__}"] += 1
            self.closed = True
            return
        for event in events:
            self._count(event)

    def _count(self, event) -> None:
        counts = self.counts
        if isinstance(event, (h2.events.ResponseReceived, h2.events.TrailersReceived)):
            headers = dict(event.headers)
            status = headers.get(b":status")
            if status is not None and status != b"200":
                counts[status.decode("ascii", "replace")] += 1
            if b"grpc-status" in headers:
                counts[grpc_status_name(headers[b"grpc-status"])] += 1
            if event.stream_ended is not None:
                self.open_streams.discard(event.stream_id)
        elif isinstance(event, h2.events.DataReceived):
            self.received_bytes += len(event.data)
            counts["data-frames"] += 1
            if self.auto_credit and event.flow_controlled_length:
                try:
                    self.conn.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
                except (h2.exceptions.StreamClosedError, h2.exceptions.ProtocolError):
                    pass
        elif isinstance(event, h2.events.StreamReset):
            try:
                name = ErrorCodes(event.error_code).name
            except ValueError:
                name = str(event.error_code)
            counts[name if name == "REFUSED_STREAM" else f"RST_STREAM {name}"] += 1
            self.open_streams.discard(event.stream_id)
        elif isinstance(event, h2.events.StreamEnded):
            self.open_streams.discard(event.stream_id)
        elif isinstance(event, h2.events.ConnectionTerminated):
            try:
                name = ErrorCodes(event.error_code).name
            except ValueError:
                name = str(event.error_code)
            counts["GOAWAY"] += 1
            counts[f"GOAWAY {name}"] += 1
            self.terminated = True
            self.goaway_code = name
            self.last_stream_id = event.last_stream_id or 0

    def close(self) -> None:
        """Close the socket (without a GOAWAY: an abrupt client)."""
        self.closed = True
        try:
            self.sock.close()
        except OSError:
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
