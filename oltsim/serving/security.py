"""Access control and TLS for the listeners: the optional access token of the control APIs, and REST listeners that
verify client certificates.

Defaults are BBSim's: plain TCP and no token, so existing clients (bbsimctl, BBR, VOLTHA's adapter) work unchanged.
When an access token is configured, the control surfaces (v1 and v0, REST and gRPC, including gRPC server
reflection and ``/metrics``) answer only requests that carry it as ``Authorization: Bearer <token>`` (REST) or the
metadata ``authorization: Bearer <token>`` (gRPC); others get 401 / UNAUTHENTICATED. The OpenOLT surface never asks
for a token (a real OLT agent does not), nor does the SADIS server (the controller's SADIS app reads it and sends no
token; its data is read-only).

Listeners take Twisted endpoint strings everywhere. ``ssl:PORT:privateKey=KEY[:certKey=CERT]`` works on every
listener; ``caCertsDir=DIR`` (verify client certificates signed by a CA in DIR) and ``requireClientCert=yes`` (refuse
clients without one) are accepted by the gRPC listeners (grpcserver) and, through :func:`server_service`, by the REST
listeners too, although Twisted's own ``ssl:`` parser knows neither.
"""
from __future__ import annotations

import hmac
import os
import re
from typing import Any, Iterable

import grpc
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from OpenSSL import crypto
from twisted.application.internet import StreamServerEndpointService
from twisted.internet import endpoints, ssl
from twisted.web.resource import Resource, getChildForRequest

from oltsim.config import ConfigError
from oltsim.serving.dualstack import DualStackServerEndpoint
from oltsim.serving.endpoints import GrpcListen, parse_grpc_endpoint, split_endpoint
from oltsim.logs import logger
from oltsim.serving.onloop import handler_with
from oltsim.status import error_response

__all__ = ["AccessToken", "AioTokenInterceptor", "TokenGuard", "certificate_options",
           "check_listener", "guard", "interceptors", "server_endpoint", "server_service"]

log = logger("oltsim.serving.security")

#: The realm named in ``WWW-Authenticate``.
REALM = "oltsim"

_BEARER = re.compile(r"[Bb][Ee][Aa][Rr][Ee][Rr] +(\S+) *")
_CERTIFICATE = re.compile(rb"-----BEGIN CERTIFICATE-----.+?-----END CERTIFICATE-----", re.DOTALL)
_CLIENT_CERT_OPTIONS = frozenset({"caCertsDir", "requireClientCert"})
_TWISTED_ONLY_OPTIONS = frozenset({"sslmethod", "dhParameters"})


class AccessToken:
    """The shared secret of the control APIs. :meth:`refusal` compares in constant time and says why a
    presented ``Authorization`` value is refused; the secret never appears in a repr or a log."""

    def __init__(self, secret: str) -> None:
        if not secret:
            raise ValueError("an access token must not be empty")
        self._secret = secret.encode("utf-8")

    def __repr__(self) -> str:
        return "<AccessToken (hidden)>"

    def refusal(self, authorization: str | bytes | None) -> str | None:
        """None when ``authorization`` is ``Bearer <the token>``; otherwise ``missing`` (no header),
        ``malformed`` (not a Bearer credential) or ``invalid`` (another token)."""
        if authorization is None:
            return "missing"
        if isinstance(authorization, bytes):
            authorization = authorization.decode("latin-1")
        match = _BEARER.fullmatch(authorization)
        if match is None:
            return "malformed"
        if not hmac.compare_digest(match.group(1).encode("latin-1", "replace"), self._secret):
            return "invalid"
        return None


def _message(reason: str) -> str:
    if reason == "missing":
        return "this API needs an access token: send Authorization: Bearer <token>"
    if reason == "malformed":
        return "the Authorization header must be Bearer <token>"
    return "the access token is not valid"


# ---- REST ---------------------------------------------------------------------------------------------------


class TokenGuard(Resource):
    """A REST resource that serves ``wrapped`` only to requests with the access token.

    Others get 401 with the JSON error body (code 16, UNAUTHENTICATED) and ``WWW-Authenticate: Bearer`` (RFC 6750,
    ``error="invalid_token"`` when a credential was sent but refused). ``headers`` are set on refusals too (v0's
    ``Deprecation``). ``public`` paths (exact, e.g. ``/ui``, a page that holds no data) are served to GET and HEAD
    without the token; any other method or path still needs it. A leaf: ``wrapped`` sees the request path exactly
    as it would as the site's root.
    """

    isLeaf = True

    def __init__(self, wrapped: Resource, token: AccessToken, surface: str,
                 headers: Iterable[tuple[bytes, bytes]] = (), public: Iterable[str] = ()) -> None:
        super().__init__()
        self.wrapped = wrapped
        self.token = token
        self.surface = surface
        self.headers = tuple(headers)
        self.public = frozenset(path.encode("ascii") for path in public)

    def render(self, request) -> Any:
        if request.method in (b"GET", b"HEAD") and request.path in self.public:
            return getChildForRequest(self.wrapped, request).render(request)
        reason = self.token.refusal(request.getHeader(b"authorization"))
        if reason is None:
            return getChildForRequest(self.wrapped, request).render(request)
        log.info("access-refused surface={surface} reason={reason} method={method} path={path} peer={peer}",
                 surface=self.surface, reason=reason, method=request.method.decode("latin-1"),
                 path=request.path.decode("latin-1"), peer=_peer(request))
        challenge = f'Bearer realm="{REALM}"' + ("" if reason == "missing" else ', error="invalid_token"')
        request.setHeader(b"WWW-Authenticate", challenge.encode("ascii"))
        for name, value in self.headers:
            request.setHeader(name, value)
        return error_response(request, 401, grpc.StatusCode.UNAUTHENTICATED, _message(reason))


def _peer(request) -> str:
    address = request.getClientAddress()
    host = getattr(address, "host", None)
    return f"{host}:{address.port}" if host is not None else str(address)


def guard(resource: Resource, token: AccessToken | None, surface: str,
          headers: Iterable[tuple[bytes, bytes]] = (), public: Iterable[str] = ()) -> Resource:
    """``resource`` behind a :class:`TokenGuard` (``public`` paths open to GET and HEAD), or unchanged when no
    token is configured."""
    return resource if token is None else TokenGuard(resource, token, surface, headers, public)


# ---- gRPC ---------------------------------------------------------------------------------------------------



class AioTokenInterceptor(grpc.aio.ServerInterceptor):
    """Refuses, with UNAUTHENTICATED, every call (server reflection included) whose metadata lacks
    ``authorization: Bearer <token>``, on the servers on the reactor's loop. Unknown methods stay UNIMPLEMENTED.
    :meth:`admit` is the check alone, which the native engine asks before each call it answers itself."""

    def __init__(self, token: AccessToken, surface: str) -> None:
        self.token = token
        self.surface = surface

    def admit(self, method: str, metadata) -> tuple[grpc.StatusCode, str] | None:
        """None if ``metadata`` carries the token; otherwise the status to refuse the call with (logged)."""
        authorization = next((value for key, value in metadata or () if key == "authorization"), None)
        reason = self.token.refusal(authorization)
        if reason is None:
            return None
        log.info("access-refused surface={surface} reason={reason} method={method}",
                 surface=self.surface, reason=reason, method=method)
        return grpc.StatusCode.UNAUTHENTICATED, _message(reason)

    async def intercept_service(self, continuation, handler_call_details):
        handler = await continuation(handler_call_details)
        if handler is None:
            return handler
        refusal = self.admit(handler_call_details.method, handler_call_details.invocation_metadata)
        if refusal is None:
            return handler

        def refuse(_behaviour, streaming):
            if streaming:
                async def refused_stream(request, context):
                    await context.abort(*refusal)
                    yield  # an async generator, as the handler it replaces
                return refused_stream

            async def refused(request, context):
                await context.abort(*refusal)
            return refused

        return handler_with(handler, refuse)


def interceptors(token: AccessToken | None, surface: str) -> list:
    """The token interceptor for a control gRPC server, or none without a token."""
    return [] if token is None else [AioTokenInterceptor(token, surface)]


# ---- TLS listeners ------------------------------------------------------------------------------------------


def _ours(description: str) -> bool:
    """Whether to build an ``ssl:`` endpoint ourselves (the gRPC listeners' grammar, with client certificates):
    always, unless it uses an option only Twisted's parser knows (``sslmethod``, also as a fourth positional
    argument, or ``dhParameters``) and no client-certificate option, which only we know."""
    items = split_endpoint(description)
    if not items or items[0][0] is not None or items[0][1].strip().lower() != "ssl":
        return False
    keywords = {key for key, _ in items if key is not None}
    positional = sum(1 for key, _ in items if key is None)  # "ssl", PORT, KEY, CERT, then Twisted's SSLMETHOD
    twisted_only = bool(keywords & _TWISTED_ONLY_OPTIONS) or positional > 4
    return not twisted_only or bool(keywords & _CLIENT_CERT_OPTIONS)


def _read(path: str, option: str) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as exc:
        raise ValueError(f"cannot read {option} file {path!r}: {exc.strerror}") from None


def _certificates(data: bytes, what: str) -> list[x509.Certificate]:
    pems = _CERTIFICATE.findall(data)
    if not pems:
        raise ValueError(f"{what} holds no PEM certificate")
    return [x509.load_pem_x509_certificate(pem) for pem in pems]


def _ca_certificates(directory: str) -> list[x509.Certificate]:
    """Every PEM certificate in the files of ``directory`` (what ``caCertsDir`` means for gRPC too)."""
    try:
        names = sorted(os.listdir(directory))
    except OSError as exc:
        raise ValueError(f"cannot read caCertsDir {directory!r}: {exc.strerror}") from None
    data = b"".join(_read(os.path.join(directory, name), "caCertsDir") + b"\n" for name in names
                    if os.path.isfile(os.path.join(directory, name)))
    return _certificates(data, f"caCertsDir {directory!r}")


def certificate_options(listen: GrpcListen, protocols: list[bytes] | None = None) -> ssl.CertificateOptions:
    """Twisted TLS options for a parsed ``ssl:`` endpoint: our key, certificate and chain, and client-certificate
    verification against ``caCertsDir`` (mandatory with ``requireClientCert=yes``); ``protocols`` are offered by
    ALPN (``[b"h2"]`` for gRPC). ValueError for unreadable or unusable files."""
    key_pem = _read(listen.private_key, "privateKey")  # type: ignore[arg-type]
    cert_path = listen.cert_key or listen.private_key
    try:
        key = serialization.load_pem_private_key(key_pem, password=None)
        certificate, *chain = _certificates(_read(cert_path, "certKey"), f"certKey {cert_path!r}")  # type: ignore
        if listen.extra_cert_chain:
            chain += _certificates(_read(listen.extra_cert_chain, "extraCertChain"),
                                   f"extraCertChain {listen.extra_cert_chain!r}")
        verify = {}
        if listen.ca_certs_dir:
            # pyOpenSSL's X509Store takes only its own X509 objects (key and chain take cryptography's).
            cas = [crypto.X509.from_cryptography(ca) for ca in _ca_certificates(listen.ca_certs_dir)]
            verify = {"verify": True, "caCerts": cas,
                      "requireCertificate": listen.require_client_cert}
        if protocols:
            verify["acceptableProtocols"] = protocols
        options = ssl.CertificateOptions(privateKey=key, certificate=certificate, extraCertChain=chain or None,
                                         **verify)
        options.getContext()  # loads the key and certificate now: a mismatch fails here, not at the first client
        return options
    except ValueError:
        raise
    except Exception as exc:  # OpenSSL's errors for a key that does not match its certificate, ...
        raise ValueError(f"cannot use the TLS key and certificate: {exc}") from None


#: connections a Twisted listener's socket queues before they are accepted, unless the endpoint string says
#: otherwise (Twisted's default is 50): during a flood of connects, a full queue drops a real client's SYN, which
#: it sends again only a second later (the kernel caps it at net.core.somaxconn)
LISTEN_BACKLOG = 1024


def server_endpoint(reactor: Any, description: str):
    """The server endpoint for a REST listener's endpoint string (not listening yet).

    Any Twisted endpoint string works. ``ssl:`` strings are read with the gRPC listeners' grammar, so one string
    means the same on every port, including ``caCertsDir`` / ``requireClientCert`` (which Twisted's own parser
    does not know); only strings using Twisted's ``sslmethod`` or ``dhParameters`` go to Twisted's parser. Raises
    ValueError (or Twisted's parse errors) for an unusable string.
    """
    kind = description.split(":", 1)[0].strip().lower()
    if kind == "tcp":
        try:
            listen = parse_grpc_endpoint(description)
        except ValueError:
            listen = None  # Twisted's parser says what is wrong with it
        if listen is not None and listen.host is None:  # a port only: every address, both families, as Go
            return DualStackServerEndpoint(reactor, listen.port, listen.backlog or LISTEN_BACKLOG)
    if not _ours(description):
        if kind in ("tcp", "tcp6", "ssl") and "backlog=" not in description:
            description += f":backlog={LISTEN_BACKLOG}"
        return endpoints.serverFromString(reactor, description)
    listen = parse_grpc_endpoint(description)
    if listen.host is None:
        return DualStackServerEndpoint(reactor, listen.port, listen.backlog or LISTEN_BACKLOG,
                                       tls=certificate_options(listen))
    return endpoints.SSL4ServerEndpoint(reactor, listen.port, certificate_options(listen),
                                        backlog=listen.backlog or LISTEN_BACKLOG, interface=listen.host)


class ListenerService(StreamServerEndpointService):
    """A REST listener's service: once listening, one ``rest-listener-started name=<service name> address=<host:port>``
    line (Twisted's ``Starting factory <...Site object at 0x...>`` is silenced by the factories' ``noisy = False``),
    and ``rest-listener-stopped`` when the port is closed."""

    _address = ""

    def privilegedStartService(self):
        super().privilegedStartService()
        self._waitingForPort.addCallback(self._listening)

    def _listening(self, port):
        host = port.getHost()
        if hasattr(host, "port"):
            self._address = f"[{host.host}]:{host.port}" if ":" in host.host else f"{host.host}:{host.port}"
        else:
            self._address = str(getattr(host, "name", host))
        log.info("rest-listener-started name={name} address={address}", name=self.name, address=self._address)
        return port

    def stopService(self):
        stopped = super().stopService()
        if self._address:
            address, self._address = self._address, ""

            def closed(result):
                log.info("rest-listener-stopped name={name} address={address}", name=self.name, address=address)
                return result
            stopped.addCallback(closed)
        return stopped


def server_service(description: str, factory, reactor: Any = None) -> StreamServerEndpointService:
    """What ``strports.service`` gives, for every endpoint string :func:`server_endpoint` accepts (a
    :class:`ListenerService`: name it with ``setName``, its log lines use that name)."""
    if reactor is None:
        from twisted.internet import reactor
    service = ListenerService(server_endpoint(reactor, description), factory)
    service._raiseSynchronously = True  # as strports.service: a failed bind stops twistd at start
    return service


def check_listener(name: str, description: str, grpc_server: bool) -> None:
    """Raise ConfigError (``setting`` = ``name``, the Settings field) if ``description`` cannot be listened on:
    syntax, and for TLS the key, certificate and CA files (read now, so a bad file stops the start before anything
    listens)."""
    try:
        if grpc_server:
            listen = parse_grpc_endpoint(description)
            if listen.secure:
                listen.credentials()
                certificate_options(listen)  # grpcio only checks the PEM when it binds; this checks it now
        else:
            endpoint = server_endpoint(None, description)
            # Twisted's parser takes any number as a port; the socket refuses it only at bind, with a traceback.
            port = getattr(endpoint, "_port", None)
            if isinstance(port, int) and not 0 <= port <= 65535:
                raise ValueError(f"endpoint {description!r}: port {port} is outside 0..65535")
    except Exception as exc:
        raise ConfigError(f"{name} cannot listen on {description!r}: {exc}", name) from None
