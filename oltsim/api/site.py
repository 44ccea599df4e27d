"""What every REST listener's Site adds to twisted.web's: request bodies capped before they are read, answers left
unsent bounded per connection, and an access log that never writes a query string (where a client may put its access
token) nor a Referer's.

twisted.web's Request buffers a whole body (in memory, or a temporary file above 100 kB) before any resource sees
it, so a cap checked by a resource comes too late: the cap lives in the Request the Site builds.

twisted.web's HTTPChannel stops reading a connection whose transport is full only between requests, and it answers
the pipelined requests it has buffered one after the other without looking at the transport again; an answer
written while its request is handled (all of ours that fit one write) never gives it that pause. A client that
pipelines cheap requests for large answers and never reads made it queue them all (40 bytes of request, 77 KB of
answer each). `BoundedChannel` closes both gaps: the transport is full beyond `max_unsent_output` bytes, and then
the connection is not read and its next request not started until the client has read what was queued.
"""
from __future__ import annotations

import io

import grpc
from twisted.internet import abstract
from twisted.web import http, server

from oltsim.api.restkit import json_bytes
from oltsim.config import DEFAULT_MAX_UNSENT_OUTPUT
from oltsim.logs import logger
from oltsim.status import error_body

log = logger("oltsim.api.site")

#: Seconds a refused request's connection keeps reading (and dropping) what the client still sends, so that a
#: client that writes its whole body before it reads gets the 413 instead of a connection reset.
LINGER = 2.0
REDACTED = b"<redacted>"


def redact_uri(uri: bytes) -> bytes:
    """`uri` without its query string: `/v1/olt?access_token=x` is logged as `/v1/olt?<redacted>`."""
    path, separator, _ = uri.partition(b"?")
    return path + b"?" + REDACTED if separator else path


class _LoggedRequest:
    """The view of a request the access log formatter gets: the URI and Referer without their query strings."""

    def __init__(self, request):
        self._request = request
        self.uri = redact_uri(request.uri or b"")

    def getHeader(self, name):
        value = self._request.getHeader(name)
        if value is not None and name.lower() == b"referer":
            return redact_uri(value)
        return value

    def __getattr__(self, name):
        return getattr(self._request, name)


def redacted_log_formatter(timestamp: str, request) -> str:
    """twisted.web's combined access-log line, with the query strings redacted (`redact_uri`)."""
    return http.combinedLogFormatter(timestamp, _LoggedRequest(request))


class LimitedRequest(server.Request):
    """A request whose body may hold at most its site's `max_body` bytes.

    A larger declared Content-Length is refused as soon as the headers are in (before a `100 Continue`), a chunked
    body as soon as it passes the limit; nothing of it is kept. The refusal is a 413 with the API's JSON error
    body (code RESOURCE_EXHAUSTED) and the site's `refusal_headers`, written at once, and the connection then
    closes: what the client still sends is dropped for up to LINGER seconds (so that it can read the answer), and
    the request never reaches a resource."""

    _refused = False
    _received = 0
    _linger = None

    def gotLength(self, length):
        site = self.channel.site
        if length is not None and length > site.max_body:
            self._refuse(site, f"the request body ({length} bytes) is larger than this server accepts "
                               f"({site.max_body} bytes)")
            return
        super().gotLength(length)

    def handleContentChunk(self, data):
        if self._refused:
            return
        self._received += len(data)
        site = self.channel.site
        if self._received > site.max_body:
            self._refuse(site, f"the request body is larger than this server accepts ({site.max_body} bytes)")
            return
        super().handleContentChunk(data)

    def requestReceived(self, command, path, version):
        if self._refused:  # the whole body arrived after all: the answer is out, the connection ends now
            self.channel.transport.loseConnection()
            return
        super().requestReceived(command, path, version)

    def connectionLost(self, reason):
        if self._linger is not None and self._linger.active():
            self._linger.cancel()
        super().connectionLost(reason)

    def _refuse(self, site, message: str) -> None:
        self._refused = True
        self.content = io.BytesIO()  # the channel expects one; nothing is written to it
        # Twisted answers "Expect: 100-continue" right after gotLength: the client must get the 413 instead.
        self.requestHeaders.removeHeader(b"expect")
        channel = self.channel
        channel.persistent = False
        body = json_bytes(error_body(grpc.StatusCode.RESOURCE_EXHAUSTED, message))
        headers = [(b"Content-Type", b"application/json"), (b"Content-Length", b"%d" % len(body)),
                   (b"Connection", b"close"), *site.refusal_headers]
        head = b"HTTP/1.1 413 Request Entity Too Large\r\n" + b"".join(
            name + b": " + value + b"\r\n" for name, value in headers) + b"\r\n"
        transport = channel.transport
        transport.write(head + body)
        log.info("rest-body-refused surface={surface} method={method} path={path} limit={limit} peer={peer}",
                 surface=site.surface, method=_text(getattr(channel, "_command", b"")),
                 path=_text(redact_uri(getattr(channel, "_path", b""))), limit=site.max_body,
                 peer=_peer(transport))
        # The answer, then the end of the stream, while reading goes on (dropped) until the client is done or
        # LINGER has passed. Under TLS that is TLS's own close (close_notify, then waiting for the client's): a
        # half-closed TCP stream would cut the TLS session short.
        half_close = None if channel.isSecure() else getattr(transport, "loseWriteConnection", None)
        (half_close or transport.loseConnection)()
        self._linger = channel.callLater(LINGER, transport.abortConnection)


def _text(value: bytes) -> str:
    return value.decode("latin-1")


def _peer(transport) -> str:
    address = transport.getPeer()
    host = getattr(address, "host", None)
    return f"{host}:{address.port}" if host is not None else str(address)


def _socket_transport(transport):
    """The descriptor under `transport` (through protocol wrappers and TLS), whose buffer holds what is unsent; None
    for a transport that is no descriptor (a test's StringTransport)."""
    for _ in range(8):
        if transport is None or isinstance(transport, abstract.FileDescriptor):
            return transport
        transport = getattr(transport, "transport", None)
    return None


class BoundedChannel(http.HTTPChannel):
    """An HTTP/1.1 channel that holds at most about its site's `max_unsent_output` bytes of answers unsent (plus the
    answer being written when the mark is passed), whatever the client pipelines.

    The socket's write buffer is full above that mark: its transport then pauses this channel (and through it a
    streaming answer's producer, as the flow lists and the event stream are), and this channel stops reading the
    connection, even while a request is handled (Twisted reads on there, and without bound while the transport is
    full), and does not start the next pipelined request before the transport has sent everything it holds. At
    most what one read brings in (64 KiB) waits unparsed meanwhile. The transport resumes it when its buffer is
    empty: reading and the waiting requests go on.

    Used as the Site's protocol in place of twisted.web's protocol that also negotiates HTTP/2: our listeners'
    endpoint strings offer no ALPN, so that one always ran this HTTP/1.1 channel anyway."""

    #: A finished request whose successor waits until the transport has sent what it holds.
    _finished_waiting = None

    def connectionMade(self):
        super().connectionMade()
        descriptor = _socket_transport(self.transport)
        if descriptor is not None:
            descriptor.bufferSize = self.site.max_unsent_output

    def pauseProducing(self):
        super().pauseProducing()
        if self._handlingRequest:  # Twisted pauses reading only between requests
            self._networkProducer.pauseProducing()

    def resumeProducing(self):
        super().resumeProducing()
        request, self._finished_waiting = self._finished_waiting, None
        if request is not None:
            self.requestDone(request)

    def allHeadersReceived(self):
        # The listener's limits (oltsim.serving.connlimit): a request in flight keeps its connection from eviction,
        # and its head came in time.
        started = getattr(self.transport, "request_started", None)
        if started is not None:
            started()
        super().allHeadersReceived()

    def requestDone(self, request):
        if not getattr(request, "_reported_done", False):
            request._reported_done = True
            finished = getattr(self.transport, "request_finished", None)
            if finished is not None:
                finished()
        if self._waitingForTransport:
            # Twisted would parse and answer the next buffered requests now, however full the transport is.
            self._finished_waiting = request
            return
        super().requestDone(request)

    def connectionLost(self, reason):
        self._finished_waiting = None
        super().connectionLost(reason)


class ApiSite(server.Site):
    """A REST listener's Site: request bodies above `max_body` bytes are refused with 413 (`LimitedRequest`, with
    the `refusal_headers` a resource of the API would set, e.g. v0's Deprecation), a connection holds at most about
    `max_unsent_output` bytes of answers unsent (`BoundedChannel`), and the access log redacts query strings
    (`redacted_log_formatter`). `surface` names the listener in log lines."""

    noisy = False  # its listener logs rest-listener-started, not "Starting factory <...Site object at 0x...>"

    protocol = BoundedChannel

    def __init__(self, resource, *, max_body: int, max_unsent_output: int = DEFAULT_MAX_UNSENT_OUTPUT,
                 surface: str = "", refusal_headers=(), **kwargs):
        kwargs.setdefault("logFormatter", redacted_log_formatter)
        super().__init__(resource, requestFactory=LimitedRequest, **kwargs)
        self.max_body = max_body
        self.max_unsent_output = max_unsent_output
        self.surface = surface
        self.refusal_headers = tuple(refusal_headers)
