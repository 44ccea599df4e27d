"""TLS, client certificates and the access token on the real daemon wiring (makeService, real reactor, real
sockets on 127.0.0.1). A test CA, a server certificate for 127.0.0.1/localhost and a client certificate are made
with `cryptography` in tmp_path; a second CA plays the stranger. REST is read with treq, gRPC through real grpcio
channels on worker threads. TLS on OpenOLT is grpcio's (pygrpc-native has none): the default engine picks it."""

from __future__ import annotations

import datetime
import ipaddress
import json
from dataclasses import dataclass
from pathlib import Path

import grpc
import pytest
import pytest_twisted
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc
from prometheus_client.parser import text_string_to_metric_families
from twisted.internet import reactor
from twisted.internet.defer import inlineCallbacks
from twisted.internet.ssl import Certificate, PrivateCertificate, optionsForClientTLS
from twisted.internet.threads import deferToThread
from twisted.logger import capturedLogs
from twisted.web.client import Agent, BrowserLikePolicyForHTTPS, HTTPConnectionPool, ResponseNeverReceived
from twisted.web.iweb import IPolicyForHTTPS
from treq.client import HTTPClient
from voltha_protos import openolt_pb2, openolt_pb2_grpc
from zope.interface import implementer

from engines import engine_options, grpc_engine  # noqa: F401 - the fixture
from oltsim._proto import bbsim_pb2, bbsim_pb2_grpc, legacy_pb2, legacy_pb2_grpc
from oltsim.tap import Options, makeService
from scripted_adapter import listener_options

LOOPBACK = "tcp:0:interface=127.0.0.1"
TIMEOUT = 10
TOKEN = "integration-token-42"


# ---- a test PKI ---------------------------------------------------------------------------------------------


@dataclass
class Pki:
    """Files of a test PKI: the CA, a server key and certificate, a client key and certificate, a CA directory
    (for caCertsDir) and a stranger CA that signed none of them."""

    ca: Path
    ca_dir: Path
    server_key: Path
    server_cert: Path
    client_key: Path
    client_cert: Path
    stranger_ca: Path

    def read(self, name: str) -> bytes:
        return getattr(self, name).read_bytes()


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _pem_key(key) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def _certificate(subject, key, issuer, issuer_key, *, ca=False, server=False, client=False):
    now = datetime.datetime.now(datetime.timezone.utc)
    builder = (x509.CertificateBuilder().subject_name(_name(subject)).issuer_name(_name(issuer))
               .public_key(key.public_key()).serial_number(x509.random_serial_number())
               .not_valid_before(now - datetime.timedelta(minutes=5))
               .not_valid_after(now + datetime.timedelta(days=1))
               .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True))
    if ca:
        builder = builder.add_extension(x509.KeyUsage(
            digital_signature=True, content_commitment=False, key_encipherment=False, data_encipherment=False,
            key_agreement=False, key_cert_sign=True, crl_sign=True, encipher_only=False, decipher_only=False),
            critical=True)
    if server:
        builder = builder.add_extension(x509.SubjectAlternativeName([
            x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
        builder = builder.add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
    if client:
        builder = builder.add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
    return builder.sign(issuer_key, hashes.SHA256()).public_bytes(serialization.Encoding.PEM)


@pytest.fixture(scope="module")
def pki(tmp_path_factory) -> Pki:
    """A CA, a server certificate (CN and SAN 127.0.0.1 / localhost), a client certificate and a stranger CA."""
    base = tmp_path_factory.mktemp("pki")
    files = {}

    def write(name, data):
        files[name] = base / name
        files[name].write_bytes(data)

    ca_key, stranger_key, server_key, client_key = (ec.generate_private_key(ec.SECP256R1()) for _ in range(4))
    write("ca.pem", _certificate("oltsim test CA", ca_key, "oltsim test CA", ca_key, ca=True))
    write("stranger.pem", _certificate("stranger CA", stranger_key, "stranger CA", stranger_key, ca=True))
    write("server.key", _pem_key(server_key))
    write("server.pem", _certificate("127.0.0.1", server_key, "oltsim test CA", ca_key, server=True))
    write("client.key", _pem_key(client_key))
    write("client.pem", _certificate("test client", client_key, "oltsim test CA", ca_key, client=True))
    ca_dir = base / "cas"
    ca_dir.mkdir()
    (ca_dir / "ca.pem").write_bytes(files["ca.pem"].read_bytes())
    return Pki(ca=files["ca.pem"], ca_dir=ca_dir, server_key=files["server.key"], server_cert=files["server.pem"],
               client_key=files["client.key"], client_cert=files["client.pem"], stranger_ca=files["stranger.pem"])


def tls(pki: Pki, client_certs: bool = False) -> str:
    """A loopback ssl: endpoint string with the server key and certificate (and client-certificate checks)."""
    endpoint = f"ssl:0:interface=127.0.0.1:privateKey={pki.server_key}:certKey={pki.server_cert}"
    if client_certs:
        endpoint += f":caCertsDir={pki.ca_dir}:requireClientCert=yes"
    return endpoint


# ---- the simulator ------------------------------------------------------------------------------------------


class Running:
    """A started oltsim and its ports."""

    def __init__(self, top):
        self.top = top
        self.pool = HTTPConnectionPool(reactor, persistent=False)

    def port(self, name: str) -> int:
        service = self.top.getServiceNamed(name)
        if hasattr(service, "_waitingForPort"):
            got = []
            service._waitingForPort.addCallback(lambda port: got.append(port) or port)
            return got[0].getHost().port
        return service.port

    def address(self, name: str) -> str:
        return f"127.0.0.1:{self.port(name)}"

    def url(self, name: str, path: str, scheme: str = "http") -> str:
        return f"{scheme}://127.0.0.1:{self.port(name)}{path}"

    def http(self, policy=None) -> HTTPClient:
        """A treq client; `policy` decides which servers it trusts (the system's CAs by default)."""
        agent = Agent(reactor, contextFactory=policy or BrowserLikePolicyForHTTPS(), pool=self.pool)
        return HTTPClient(agent)


def start(*arguments: str, **listeners: str) -> Running:
    """Build and start oltsim with every listener on loopback; `listeners` (option name with _) replace some."""
    given = {name: LOOPBACK for name in listener_options()}
    given.update({name.replace("_", "-"): value for name, value in listeners.items()})
    options = Options()
    options.parseOptions([arg for name, value in given.items() for arg in (f"--{name}", value)] + list(arguments))
    top = makeService(options, reactor)
    top.startService()
    return Running(top)


@inlineCallbacks
def stop(running: Running):
    yield running.top.stopService()
    assert running.top.olt.pending_calls() == 0


@implementer(IPolicyForHTTPS)
class ClientTLS:
    """A treq TLS policy that trusts `ca` and presents `client` (a PrivateCertificate) when given."""

    def __init__(self, ca: bytes, client: PrivateCertificate | None = None):
        self.trust = Certificate.loadPEM(ca)
        self.client = client

    def creatorForNetloc(self, hostname, port):
        return optionsForClientTLS(hostname.decode("ascii"), trustRoot=self.trust, clientCertificate=self.client)


def client_certificate(pki: Pki) -> PrivateCertificate:
    return PrivateCertificate.loadPEM(pki.read("client_cert") + pki.read("client_key"))


@inlineCallbacks
def status_and_body(client: HTTPClient, method: str, url: str, **kwargs):
    response = yield client.request(method, url, timeout=TIMEOUT, **kwargs)
    body = yield response.content()
    return response.code, response.headers, body


# ---- TLS on REST --------------------------------------------------------------------------------------------


@pytest_twisted.inlineCallbacks
def test_rest_over_tls_with_a_client_that_trusts_the_test_ca(pki):
    """REST v1 on an ssl: endpoint: a client trusting the test CA gets 200; one trusting only the system's CAs,
    or another CA, fails the handshake and gets no response."""
    running = start(rest_v1=tls(pki))
    try:
        url = running.url("rest-v1", "/v1/olt", "https")
        code, _, body = yield status_and_body(running.http(BrowserLikePolicyForHTTPS(
            trustRoot=Certificate.loadPEM(pki.read("ca")))), "GET", url)
        assert code == 200 and json.loads(body)["SerialNumber"] == "BBSIM_OLT_0"
        for policy in (BrowserLikePolicyForHTTPS(),
                       BrowserLikePolicyForHTTPS(trustRoot=Certificate.loadPEM(pki.read("stranger_ca")))):
            with pytest.raises(ResponseNeverReceived) as info:
                yield running.http(policy).get(url, timeout=TIMEOUT)
            assert "certificate verify failed" in str(info.value.reasons[0].value)
    finally:
        yield stop(running)


# Twisted's client side hands its client certificate to pyOpenSSL as X509/PKey objects, which pyOpenSSL deprecates.
@pytest.mark.filterwarnings("ignore:Passing pyOpenSSL:DeprecationWarning")
@pytest_twisted.inlineCallbacks
def test_rest_requiring_a_client_certificate(pki):
    """REST v0 with caCertsDir and requireClientCert=yes: a client with a certificate of the CA is served, one
    without is refused during the handshake."""
    running = start(rest_v0=tls(pki, client_certs=True))
    try:
        url = running.url("rest-v0", "/v0/olt", "https")
        code, headers, _ = yield status_and_body(
            running.http(ClientTLS(pki.read("ca"), client_certificate(pki))), "GET", url)
        assert code == 200 and headers.getRawHeaders("Deprecation") == ["true"]
        with pytest.raises(ResponseNeverReceived):
            yield running.http(ClientTLS(pki.read("ca"))).get(url, timeout=TIMEOUT)
    finally:
        yield stop(running)


# ---- TLS on gRPC --------------------------------------------------------------------------------------------


def grpc_olt(address: str, credentials: grpc.ChannelCredentials, metadata=()):
    """On a thread: bbsim.BBSim/GetOlt over a TLS channel; (status code, serial or None)."""
    with grpc.secure_channel(address, credentials) as channel:
        try:
            olt = bbsim_pb2_grpc.BBSimStub(channel).GetOlt(bbsim_pb2.Empty(), timeout=TIMEOUT, metadata=metadata)
            return grpc.StatusCode.OK, olt.SerialNumber
        except grpc.RpcError as exc:
            return exc.code(), None


def grpc_legacy_status(address: str, credentials: grpc.ChannelCredentials):
    """On a thread: legacy.BBSimService/OLTStatus over a TLS channel; its status code."""
    with grpc.secure_channel(address, credentials) as channel:
        try:
            legacy_pb2_grpc.BBSimServiceStub(channel).OLTStatus(legacy_pb2.Empty(), timeout=TIMEOUT)
            return grpc.StatusCode.OK
        except grpc.RpcError as exc:
            return exc.code()


@pytest_twisted.inlineCallbacks
def test_grpc_over_tls_with_a_client_that_trusts_the_test_ca(pki):
    """gRPC v1 on an ssl: endpoint: a channel trusting the test CA is answered; one trusting another CA, or a
    plaintext channel, is UNAVAILABLE."""
    running = start(grpc_v1=tls(pki))
    try:
        address = running.address("grpc-v1")
        trusted = yield deferToThread(grpc_olt, address, grpc.ssl_channel_credentials(root_certificates=pki.read("ca")))
        assert trusted == (grpc.StatusCode.OK, "BBSIM_OLT_0")
        stranger = yield deferToThread(grpc_olt, address,
                                       grpc.ssl_channel_credentials(root_certificates=pki.read("stranger_ca")))
        assert stranger[0] == grpc.StatusCode.UNAVAILABLE

        def plaintext():
            with grpc.insecure_channel(address) as channel:
                try:
                    bbsim_pb2_grpc.BBSimStub(channel).GetOlt(bbsim_pb2.Empty(), timeout=TIMEOUT)
                except grpc.RpcError as exc:
                    return exc.code()
        assert (yield deferToThread(plaintext)) == grpc.StatusCode.UNAVAILABLE
    finally:
        yield stop(running)


@pytest.mark.parametrize("engine", [None, "grpcio"], ids=["auto", "grpcio"])
@pytest_twisted.inlineCallbacks
def test_openolt_over_tls(pki, engine):
    """The OpenOLT endpoint on an ssl: endpoint, by default (auto: the native engine behind its TLS relay) and with
    --grpc-engine grpcio: a channel trusting the test CA gets GetDeviceInfo, one trusting another CA and a plaintext
    one are UNAVAILABLE."""
    running = start(*(["--grpc-engine", engine] if engine else []), openolt=tls(pki))
    try:
        assert running.top.getServiceNamed("openolt").engine == (engine or "native")
        address = running.address("openolt")

        def device_serial(credentials):
            channel = (grpc.insecure_channel(address) if credentials is None
                       else grpc.secure_channel(address, credentials))
            with channel:
                try:
                    info = openolt_pb2_grpc.OpenoltStub(channel).GetDeviceInfo(openolt_pb2.Empty(), timeout=TIMEOUT)
                    return grpc.StatusCode.OK, info.device_serial_number
                except grpc.RpcError as exc:
                    return exc.code(), None

        trusted = yield deferToThread(device_serial, grpc.ssl_channel_credentials(root_certificates=pki.read("ca")))
        assert trusted == (grpc.StatusCode.OK, "BBSIM_OLT_0")
        stranger = yield deferToThread(device_serial,
                                       grpc.ssl_channel_credentials(root_certificates=pki.read("stranger_ca")))
        assert stranger[0] == grpc.StatusCode.UNAVAILABLE
        assert (yield deferToThread(device_serial, None))[0] == grpc.StatusCode.UNAVAILABLE
    finally:
        yield stop(running)


@pytest_twisted.inlineCallbacks
def test_openolt_over_tls_names_the_client_and_refuses_strangers_on_the_private_port(pki):
    """Behind the TLS relay the OpenOLT handlers name the adapter by its own address (the indication-stream-opened
    line's peer is the client the relay accepted, not the relay's connection to the engine), and a plaintext call
    straight to the engine's private loopback port is refused PERMISSION_DENIED."""
    running = start(openolt=tls(pki))
    try:
        service = running.top.getServiceNamed("openolt")
        address = running.address("openolt")
        credentials = grpc.ssl_channel_credentials(root_certificates=pki.read("ca"))

        def indications():
            with grpc.secure_channel(address, credentials) as channel:
                stream = openolt_pb2_grpc.OpenoltStub(channel).EnableIndication(openolt_pb2.Empty(), timeout=TIMEOUT)
                next(stream)
                names = dict(service._tls.peers)  # while the stream is open
                stream.cancel()
                return names

        with capturedLogs() as logged:
            names = yield deferToThread(indications)
        peers = [event["peer"] for event in logged
                 if event.get("log_format", "").startswith("indication-stream-opened")]
        assert len(peers) == 1 and peers[0].startswith("ipv4:127.0.0.1:"), peers
        assert peers[0] in names.values() and peers[0] not in names, (peers, names)
        private = service._server._front.bound_port

        def straight():
            with grpc.insecure_channel(f"127.0.0.1:{private}") as channel:
                try:
                    openolt_pb2_grpc.OpenoltStub(channel).GetDeviceInfo(openolt_pb2.Empty(), timeout=TIMEOUT)
                except grpc.RpcError as exc:
                    return exc.code()
                return grpc.StatusCode.OK

        assert (yield deferToThread(straight)) == grpc.StatusCode.PERMISSION_DENIED
    finally:
        yield stop(running)


@pytest_twisted.inlineCallbacks
def test_grpc_requiring_a_client_certificate(pki):
    """gRPC v0 with caCertsDir and requireClientCert=yes: a channel presenting the client certificate is answered,
    one without a certificate is refused (UNAVAILABLE)."""
    running = start(grpc_v0=tls(pki, client_certs=True))
    try:
        address = running.address("grpc-v0")
        with_cert = grpc.ssl_channel_credentials(root_certificates=pki.read("ca"),
                                                 private_key=pki.read("client_key"),
                                                 certificate_chain=pki.read("client_cert"))
        assert (yield deferToThread(grpc_legacy_status, address, with_cert)) == grpc.StatusCode.OK
        without = grpc.ssl_channel_credentials(root_certificates=pki.read("ca"))
        assert (yield deferToThread(grpc_legacy_status, address, without)) == grpc.StatusCode.UNAVAILABLE
    finally:
        yield stop(running)


# ---- the access token ---------------------------------------------------------------------------------------


def grpc_calls_with_and_without_token(v1: str, v0: str, openolt: str) -> dict:
    """On a thread: every control gRPC surface with no token, a wrong one and the right one, server reflection
    without a token, and OpenOLT without one."""
    out = {}
    bearer = {"missing": (), "wrong": (("authorization", "Bearer nope"),),
              "right": (("authorization", f"Bearer {TOKEN}"),)}
    with grpc.insecure_channel(v1) as c1, grpc.insecure_channel(v0) as c0, grpc.insecure_channel(openolt) as co:
        for case, metadata in bearer.items():
            for surface, call in (
                ("grpc-v1", lambda m: bbsim_pb2_grpc.BBSimStub(c1).GetOlt(bbsim_pb2.Empty(), timeout=TIMEOUT,
                                                                          metadata=m)),
                ("grpc-v0", lambda m: legacy_pb2_grpc.BBSimServiceStub(c0).OLTStatus(legacy_pb2.Empty(),
                                                                                     timeout=TIMEOUT, metadata=m)),
            ):
                try:
                    call(metadata)
                    out[(surface, case)] = grpc.StatusCode.OK
                except grpc.RpcError as exc:
                    out[(surface, case)] = exc.code()
        reflect = reflection_pb2_grpc.ServerReflectionStub(c1).ServerReflectionInfo(
            iter([reflection_pb2.ServerReflectionRequest(list_services="")]), timeout=TIMEOUT)
        try:
            list(reflect)
            out["reflection"] = grpc.StatusCode.OK
        except grpc.RpcError as exc:
            out["reflection"] = exc.code()
        info = openolt_pb2_grpc.OpenoltStub(co).GetDeviceInfo(openolt_pb2.Empty(), timeout=TIMEOUT)
        out["openolt"] = info.device_serial_number
    return out


@pytest_twisted.inlineCallbacks
def test_token_on_every_control_surface_but_not_openolt_or_sadis(grpc_engine):
    """With --api-token: REST v1 and v0 and gRPC v1 and v0 refuse a missing or wrong token (401 /
    UNAUTHENTICATED) and serve the right one; reflection is refused without it; OpenOLT (either engine) and SADIS
    stay open; /metrics needs the token and counts the refusals."""
    running = start("--api-token", TOKEN, *engine_options(grpc_engine))
    try:
        http = running.http()
        right = {"Authorization": [f"Bearer {TOKEN}"]}
        for name, path in (("rest-v1", "/v1/olt"), ("rest-v0", "/v0/olt"), ("rest-v1", "/metrics")):
            code, headers, body = yield status_and_body(http, "GET", running.url(name, path))
            assert (code, json.loads(body)["code"]) == (401, 16), path
            assert headers.getRawHeaders("WWW-Authenticate") == ['Bearer realm="oltsim"']
            code, headers, body = yield status_and_body(http, "GET", running.url(name, path),
                                                        headers={"Authorization": ["Bearer nope"]})
            assert code == 401 and "invalid_token" in headers.getRawHeaders("WWW-Authenticate")[0], path
            code, _, _ = yield status_and_body(http, "GET", running.url(name, path), headers=right)
            assert code == 200, path
        code, _, _ = yield status_and_body(http, "GET", running.url("sadis", "/v2/subscribers/BBSIM_OLT_0"))
        assert code == 200

        got = yield deferToThread(grpc_calls_with_and_without_token, running.address("grpc-v1"),
                                  running.address("grpc-v0"), running.address("openolt"))
        for surface in ("grpc-v1", "grpc-v0"):
            assert got[(surface, "missing")] == grpc.StatusCode.UNAUTHENTICATED
            assert got[(surface, "wrong")] == grpc.StatusCode.UNAUTHENTICATED
            assert got[(surface, "right")] == grpc.StatusCode.OK
        assert got["reflection"] == grpc.StatusCode.UNAUTHENTICATED
        assert got["openolt"] == "BBSIM_OLT_0"

        _, _, body = yield status_and_body(http, "GET", running.url("rest-v1", "/metrics"), headers=right)
        requests = {}
        for family in text_string_to_metric_families(body.decode("utf-8")):
            for sample in family.samples:
                if sample.name == "oltsim_requests_total":
                    requests[(sample.labels["surface"], sample.labels["status"])] = sample.value
        assert requests[("rest-v1", "401")] == 4 and requests[("rest-v0", "401")] == 2
        assert requests[("grpc-v1", "UNAUTHENTICATED")] == 3 and requests[("grpc-v1", "OK")] == 1
        assert requests[("grpc-v0", "UNAUTHENTICATED")] == 2 and requests[("openolt", "OK")] == 1
        assert requests[("sadis", "200")] == 1
    finally:
        yield stop(running)


@pytest_twisted.inlineCallbacks
def test_tls_and_token_together_with_standard_credentials(pki):
    """Over TLS, gRPC's standard access-token call credentials carry the token; REST sends the Bearer header."""
    running = start("--api-token", TOKEN, grpc_v1=tls(pki), rest_v1=tls(pki))
    try:
        ca = pki.read("ca")
        credentials = grpc.composite_channel_credentials(grpc.ssl_channel_credentials(root_certificates=ca),
                                                         grpc.access_token_call_credentials(TOKEN))
        assert (yield deferToThread(grpc_olt, running.address("grpc-v1"), credentials)) == (
            grpc.StatusCode.OK, "BBSIM_OLT_0")
        tls_only = grpc.ssl_channel_credentials(root_certificates=ca)
        assert (yield deferToThread(grpc_olt, running.address("grpc-v1"), tls_only))[0] == (
            grpc.StatusCode.UNAUTHENTICATED)
        http = running.http(BrowserLikePolicyForHTTPS(trustRoot=Certificate.loadPEM(ca)))
        code, headers, body = yield status_and_body(http, "GET", running.url("rest-v1", "/metrics", "https"),
                                                    headers={"Authorization": [f"Bearer {TOKEN}"]})
        assert code == 200 and headers.getRawHeaders("Content-Type")[0].startswith("text/plain")
        assert b'oltsim_onus{state="created"} 1.0' in body  # one ONU, no adapter has enabled the OLT
    finally:
        yield stop(running)
