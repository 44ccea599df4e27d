"""BoundedChannel in memory, on a socket transport whose sending the test drives: pipelined requests are answered
only while less than max_unsent_output bytes wait unsent, reading stops meanwhile (a request being handled or
not), and every answer comes out complete and in order once the client reads."""
from __future__ import annotations

from twisted.internet import abstract
from twisted.internet.address import IPv4Address
from twisted.internet.error import ConnectionDone
from twisted.internet.task import Clock
from twisted.python.failure import Failure
from twisted.web.resource import Resource
from twisted.web.server import NOT_DONE_YET

from oltsim.api.site import ApiSite
from oltsim.serving.connlimit import ConnectionLimits, LimitedFactory

ANSWER = 10_000
MARK = 16_384


class Loop:
    """The reactor's reader and writer sets, as a descriptor sees them."""

    def __init__(self):
        self.readers, self.writers = set(), set()

    def addReader(self, descriptor):
        self.readers.add(descriptor)

    def removeReader(self, descriptor):
        self.readers.discard(descriptor)

    def addWriter(self, descriptor):
        self.writers.add(descriptor)

    def removeWriter(self, descriptor):
        self.writers.discard(descriptor)


class Socket(abstract.FileDescriptor):
    """A connected socket in memory: what is written stays in Twisted's buffer until `client_reads` lets the
    kernel take all of it (as when a client reads), and `reading` says whether the reactor reads it."""

    def __init__(self):
        self.loop = Loop()
        super().__init__(reactor=self.loop)
        self.connected = 1
        self.sent = bytearray()
        self._taking = False

    def writeSomeData(self, data):
        if not self._taking:
            return 0
        self.sent += data
        return len(data)

    def client_reads(self) -> None:
        self._taking = True
        try:
            self.doWrite()
        finally:
            self._taking = False

    @property
    def reading(self) -> bool:
        return self in self.loop.readers

    @property
    def unsent(self) -> int:
        return len(self.dataBuffer) - self.offset + self._tempDataLen

    def getPeer(self):
        return IPv4Address("TCP", "10.0.0.1", 40000)

    def getHost(self):
        return IPv4Address("TCP", "127.0.0.1", 50071)


class Numbered(Resource):
    """GET /<n> answers ANSWER bytes of the digit n % 10; GET /slow/<n> answers later, when `finish` is called."""

    isLeaf = True

    def __init__(self):
        super().__init__()
        self.slow = []

    def render_GET(self, request):
        parts = request.path.strip(b"/").split(b"/")
        if parts[0] == b"slow":
            self.slow.append(request)
            return NOT_DONE_YET
        return parts[-1][-1:] * ANSWER


def connected(resource, limited: bool = False):
    """An ApiSite (MARK bytes of unsent output) channel on a Socket, optionally behind a LimitedFactory."""
    site = ApiSite(resource, max_body=1024, max_unsent_output=MARK, surface="test", reactor=Clock())
    factory = LimitedFactory(site, ConnectionLimits("test", 4, 4, Clock())) if limited else site
    protocol = factory.buildProtocol(IPv4Address("TCP", "10.0.0.1", 40000))
    transport = Socket()
    transport.protocol = protocol
    protocol.makeConnection(transport)
    transport.startReading()
    return protocol, transport


def answers(sent: bytes) -> list[bytes]:
    """The bodies of the HTTP/1.1 answers in `sent`, in order (each framed by its Content-Length)."""
    bodies = []
    rest = bytes(sent)
    while rest:
        head, _, rest = rest.partition(b"\r\n\r\n")
        length = int([line for line in head.split(b"\r\n") if line.lower().startswith(b"content-length:")][0]
                     .split(b":")[1])
        bodies.append(rest[:length])
        rest = rest[length:]
    return bodies


def pipelined(count: int, prefix: bytes = b"/") -> bytes:
    return b"".join(b"GET %s%d HTTP/1.1\r\nHost: x\r\n\r\n" % (prefix, n) for n in range(count))


def test_the_socket_buffer_mark_is_the_sites_max_unsent_output_even_behind_a_protocol_wrapper():
    """The transport under the channel (here under LimitedFactory's wrapper) pauses it above max_unsent_output."""
    _, transport = connected(Numbered(), limited=True)
    assert transport.bufferSize == MARK
    _, transport = connected(Numbered())
    assert transport.bufferSize == MARK


def test_pipelined_requests_are_answered_only_while_the_unsent_output_is_under_the_mark():
    """Fifty pipelined requests in one read: answers stop once more than max_unsent_output bytes wait (at most one
    answer beyond the mark), the connection is not read meanwhile, and each time the client reads the next ones
    are answered, until all fifty are out, complete and in order, and reading resumes."""
    channel, transport = connected(Numbered())
    channel.dataReceived(pipelined(50))
    assert MARK < transport.unsent <= MARK + ANSWER + 1024
    assert not transport.reading
    rounds = 0
    while len(answers(transport.sent)) < 50:
        rounds += 1
        assert rounds < 100
        transport.client_reads()
        assert transport.unsent <= MARK + ANSWER + 1024
    assert answers(transport.sent) == [b"%d" % (n % 10) * ANSWER for n in range(50)]
    assert transport.reading and transport.unsent == 0


def test_reading_stops_while_a_request_is_handled_and_the_transport_is_full():
    """A request still being handled whose answer fills the transport: the connection is not read (Twisted reads on
    while a request is handled); when the client has read and the request is finished, the pipelined requests
    behind it are answered and reading resumes."""
    resource = Numbered()
    channel, transport = connected(resource)
    channel.dataReceived(b"GET /slow/0 HTTP/1.1\r\nHost: x\r\n\r\n")
    assert transport.reading
    request = resource.slow[0]
    request.setHeader(b"Content-Length", b"%d" % (MARK + 2))
    request.write(b"x" * (MARK + 1))
    assert not transport.reading
    channel.dataReceived(pipelined(3))  # already in flight when reading stopped: kept unparsed
    transport.client_reads()
    assert not transport.reading  # still handling the slow request
    request.write(b"y")
    request.finish()
    for _ in range(10):
        transport.client_reads()
    assert answers(transport.sent) == [b"x" * (MARK + 1) + b"y", b"0" * ANSWER, b"1" * ANSWER, b"2" * ANSWER]
    assert transport.reading


def test_a_connection_lost_while_answers_wait_starts_nothing_more():
    """The client goes away while pipelined requests wait for the transport: they are never answered, and the
    channel ends cleanly."""
    resource = Numbered()
    channel, transport = connected(resource)
    channel.dataReceived(pipelined(20))
    written = transport.unsent
    channel.connectionLost(Failure(ConnectionDone()))
    assert transport.unsent == written
    assert channel._finished_waiting is None
