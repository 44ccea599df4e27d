"""gRPC server lifecycle on the real reactor, on both engines: real sockets on 127.0.0.1, a real grpcio channel, no
protos."""

import socket
import threading

import grpc
import pytest
import pytest_twisted
from twisted.internet import reactor
from twisted.internet.defer import inlineCallbacks
from twisted.internet.task import deferLater
from twisted.internet.threads import deferToThread
from twisted.python import threadable

from engines import grpc_engine  # noqa: F401 - the fixture
from oltsim.serving.endpoints import GrpcListen, parse_grpc_endpoint
from oltsim.serving.grpcserver import AlreadyRunning, GrpcServerService
from oltsim.serving.onloop import AsyncStreamQueue, on_loop

SERVICE = "oltsim.test.Echo"


class EchoBase:
    """What a generated servicer base class gives on_loop: the RPC names."""

    def Echo(self, request, context):
        raise NotImplementedError

    def Watch(self, request, context):
        raise NotImplementedError


class EchoServicer(EchoBase):
    """A servicer with one unary and one server-streaming method, registered through generic handlers."""

    def __init__(self):
        self.on_reactor_thread = []
        self.streams = set()

    def Echo(self, request, context):
        self.on_reactor_thread.append(threadable.isInIOThread())
        return request

    async def Watch(self, request, context):
        queue = AsyncStreamQueue()
        self.streams.add(queue)
        try:
            async for item in queue.items(context):
                yield item
        finally:
            self.streams.discard(queue)

    def close_streams(self):
        """Reactor-thread hook: end every open stream with UNAVAILABLE."""
        for queue in list(self.streams):
            queue.close(grpc.StatusCode.UNAVAILABLE, "the simulator is stopping")

    def add_to(self, server):
        served = on_loop(self, EchoBase)
        server.add_generic_rpc_handlers(
            (
                grpc.method_handlers_generic_handler(
                    SERVICE,
                    {
                        "Echo": grpc.unary_unary_rpc_method_handler(served.Echo),
                        "Watch": grpc.unary_stream_rpc_method_handler(served.Watch),
                    },
                ),
            )
        )


def make_service(engine):
    servicer = EchoServicer()
    service = GrpcServerService("test", "tcp:0:interface=127.0.0.1", servicer.add_to, grace=0.5, engine=engine)
    service.on_stopping.append(servicer.close_streams)
    return service, servicer


def unary_echo(port, payload):
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        return channel.unary_unary(f"/{SERVICE}/Echo")(payload, timeout=5)


def port_refuses(port):
    try:
        socket.create_connection(("127.0.0.1", port), timeout=2).close()
    except ConnectionRefusedError:
        return True
    return False


def wait_until(predicate, what, tries=100):
    """Poll predicate on the reactor every 50 ms (at most 5 s) without blocking it."""

    @inlineCallbacks
    def poll():
        for _ in range(tries):
            if predicate():
                return
            yield deferLater(reactor, 0.05, lambda: None)
        raise AssertionError(f"timed out waiting for {what}")

    return poll()


@pytest_twisted.inlineCallbacks
def test_unary_call_runs_on_reactor_thread(grpc_engine):
    """A unary call from a real channel is answered, its handler having run on the reactor thread."""
    service, servicer = make_service(grpc_engine)
    service.startService()
    try:
        assert service.serving and service.port > 0
        assert service.address == f"127.0.0.1:{service.port}"
        answer = yield deferToThread(unary_echo, service.port, b"hello")
        assert answer == b"hello"
        assert servicer.on_reactor_thread == [True]
    finally:
        yield service.stopService()


@pytest_twisted.inlineCallbacks
def test_stream_delivers_items_and_ends_unavailable_on_stop(grpc_engine):
    """A server stream delivers items put on the reactor and ends with UNAVAILABLE when the service stops."""
    service, servicer = make_service(grpc_engine)
    service.startService()
    received = []

    def consume(port):
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            try:
                for item in channel.unary_stream(f"/{SERVICE}/Watch")(b"", timeout=5):
                    received.append(item)
            except grpc.RpcError as exc:
                return exc.code(), exc.details()
            return grpc.StatusCode.OK, None

    try:
        ended = deferToThread(consume, service.port)
        yield wait_until(lambda: servicer.streams, "the stream to register")
        [queue] = servicer.streams
        assert queue.put(b"one") and queue.put(b"two")
        yield wait_until(lambda: len(received) == 2, "two items")
    finally:
        yield service.stopService()
    code, details = yield ended
    assert received == [b"one", b"two"]
    assert (code, details) == (grpc.StatusCode.UNAVAILABLE, "the simulator is stopping")
    yield wait_until(lambda: not servicer.streams, "the stream to unregister")


@pytest_twisted.inlineCallbacks
def test_restart_binds_same_port(grpc_engine):
    """stop_server then start_server serves again on the port bound the first time."""
    service, _ = make_service(grpc_engine)
    service.startService()
    try:
        port = service.port
        yield service.stop_server()
        assert not service.serving
        assert port_refuses(port)
        yield service.stop_server()  # stopping a stopped server is a no-op
        service.start_server()
        assert service.port == port
        answer = yield deferToThread(unary_echo, port, b"again")
        assert answer == b"again"
        with pytest.raises(AlreadyRunning):
            service.start_server()
    finally:
        yield service.stopService()


@pytest_twisted.inlineCallbacks
def test_stop_service_completes_and_closes_port(grpc_engine):
    """stopService fires (grace 0.5 s) and the port no longer accepts connections."""
    service, _ = make_service(grpc_engine)
    service.startService()
    port = service.port
    stopped = []
    service.stopService().addCallback(stopped.append)
    yield wait_until(lambda: stopped, "stopService to fire")
    assert not service.serving and not service.running
    assert port_refuses(port)


def test_service_builds_nothing_before_start():
    """Constructing the service parses the endpoint but creates no server (twistd forks after construction)."""
    service = GrpcServerService("idle", "tcp:0:interface=127.0.0.1", lambda server: None)
    assert not service.serving and service.port is None


def test_bad_endpoint_fails_at_construction():
    """A malformed endpoint string is refused when the service is built, before anything listens."""
    with pytest.raises(ValueError, match="unix"):
        GrpcServerService("bad", "unix:/tmp/sock", lambda server: None)


@pytest.mark.parametrize(
    "description, address",
    [
        ("tcp:50060", "[::]:50060"),
        ("tcp:0:interface=127.0.0.1", "127.0.0.1:0"),
        ("tcp:port=50060:interface=::1", "[::1]:50060"),
        (r"tcp:port=50060:interface=\:\:1", "[::1]:50060"),
        ("tcp:interface=[::1]:50060", "[::1]:50060"),
    ],
)
def test_parse_tcp_endpoints(description, address):
    """tcp endpoint strings become grpcio addresses; no interface means all interfaces."""
    listen = parse_grpc_endpoint(description)
    assert listen.address == address and not listen.secure


def test_parse_ssl_endpoint_with_escaped_paths():
    """ssl endpoints keep Twisted's option names and backslash escapes in file paths."""
    listen = parse_grpc_endpoint(
        r"ssl:50060:privateKey=C\:/keys/key.pem:certKey=cert.pem:extraCertChain=chain.pem"
        ":caCertsDir=/etc/ca:requireClientCert=yes"
    )
    assert listen == GrpcListen(
        port=50060,
        private_key="C:/keys/key.pem",
        cert_key="cert.pem",
        extra_cert_chain="chain.pem",
        ca_certs_dir="/etc/ca",
        require_client_cert=True,
    )
    assert listen.secure and listen.address == "[::]:50060"


@pytest.mark.parametrize(
    "description, message",
    [
        ("unix:/tmp/sock", "not 'unix'"),
        ("tcp:http", "not a number"),
        ("tcp:70000", "outside 0..65535"),
        ("tcp:1:backlog=5:reuse=yes", "unsupported option(s) reuse"),
        ("tcp:interface=127.0.0.1", "no port"),
        ("ssl:50060", "needs privateKey"),
        ("ssl:50060:privateKey=k.pem:requireClientCert=yes", "needs caCertsDir"),
        ("tcp:1:port=2", "port given twice"),
    ],
)
def test_parse_rejects_bad_endpoints(description, message):
    """Unsupported or malformed endpoint strings give a ValueError that says what is wrong."""
    with pytest.raises(ValueError) as info:
        parse_grpc_endpoint(description)
    assert message in str(info.value)


def test_missing_certificate_file_is_a_clear_error(tmp_path):
    """An unreadable key file is reported by name when credentials are built."""
    listen = parse_grpc_endpoint(f"ssl:0:privateKey={tmp_path}/absent.pem")
    with pytest.raises(ValueError, match="cannot read privateKey file"):
        listen.credentials()


def write_self_signed(directory):
    """Write a self-signed key and certificate for 127.0.0.1 / localhost; returns (key path, cert path, cert PEM)."""
    import datetime
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName(
                [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
            ),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    key_path, cert_path = directory / "key.pem", directory / "cert.pem"
    key_path.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    cert_pem = cert.public_bytes(serialization.Encoding.PEM)
    cert_path.write_bytes(cert_pem)
    return key_path, cert_path, cert_pem


@pytest_twisted.inlineCallbacks
def test_ssl_endpoint_serves_tls(tmp_path, grpc_engine):
    """An ssl: endpoint serves TLS with the given key and certificate (the native engine through its relay), a TLS
    client gets answers, and a restart serves TLS again on the same port."""
    key_path, cert_path, cert_pem = write_self_signed(tmp_path)
    servicer = EchoServicer()
    endpoint = f"ssl:0:interface=127.0.0.1:privateKey={key_path}:certKey={cert_path}"
    service = GrpcServerService("tls", endpoint, servicer.add_to, engine=grpc_engine)
    service.startService()

    def tls_echo(port):
        credentials = grpc.ssl_channel_credentials(root_certificates=cert_pem)
        with grpc.secure_channel(f"127.0.0.1:{port}", credentials) as channel:
            return channel.unary_unary(f"/{SERVICE}/Echo")(b"secret", timeout=5)

    try:
        answer = yield deferToThread(tls_echo, service.port)
        assert answer == b"secret"
        port = service.port
        yield service.stop_server()
        assert port_refuses(port)
        service.start_server()
        assert service.port == port
        assert (yield deferToThread(tls_echo, port)) == b"secret"
    finally:
        yield service.stopService()
