"""Where a gRPC server listens: a Twisted endpoint string (``tcp:PORT[:interface=HOST]``, ``ssl:PORT:privateKey=...``)
translated for the engines, which bind by themselves, and the operating system's reason when a bind fails."""
from __future__ import annotations

import ipaddress
import os
import re
import socket
from dataclasses import dataclass, replace

import grpc

__all__ = ["GrpcListen", "bind_error", "bind_refusal", "local_ip", "parse_grpc_endpoint", "port_of", "split_endpoint"]

_TRUE = {"yes", "true", "1", "on"}
_FALSE = {"no", "false", "0", "off"}


def bind_error(host: str | None, port: int, error: BaseException | None) -> OSError:
    """The operating system's reason why a gRPC engine could not bind ``host:port`` (grpcio only says "Failed to bind
    ... set GRPC_VERBOSITY=debug"): the OSError the engine raised, else the one a plain socket gets binding there now
    (a name that does not resolve, an address in use or not on this host)."""
    cause = error.__cause__ if error is not None else None
    if isinstance(cause, OSError) and cause.errno:
        return OSError(cause.errno, os.strerror(cause.errno))  # the native engine's text repeats the address
    return bind_refusal(host, port) or OSError(f"{error or 'bind failed'}")


def bind_refusal(host: str | None, port: int) -> OSError | None:
    """Why a plain socket cannot bind ``host:port`` now (None when it can, on one of the host's addresses): a name
    that does not resolve (socket.gaierror), an address in use or not on this host."""
    try:
        candidates = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except OSError as exc:  # socket.gaierror: the interface does not resolve
        return exc
    reason: OSError | None = None
    for family, kind, proto, _, address in candidates:
        try:
            with socket.socket(family, kind, proto) as probe:
                probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as servers bind
                probe.bind(address)
        except OSError as exc:
            reason = reason or exc
        else:
            return None
    return reason


@dataclass(frozen=True)
class GrpcListen:
    """Where and how a grpcio server listens.

    ``host`` None means all interfaces (``[::]``, which grpcio binds dual-stack and falls back to IPv4 on a host
    without IPv6).  TLS fields hold file paths, read by :meth:`credentials` each time the server starts.
    """

    port: int
    host: str | None = None
    private_key: str | None = None
    cert_key: str | None = None
    extra_cert_chain: str | None = None
    ca_certs_dir: str | None = None
    require_client_cert: bool = False
    #: the endpoint string's ``backlog``, if it gave one (the Twisted listeners use it; the engines cannot)
    backlog: int | None = None

    @property
    def secure(self) -> bool:
        """True for an ``ssl:`` endpoint."""
        return self.private_key is not None

    @property
    def address(self) -> str:
        """The address in grpcio's ``host:port`` form, IPv6 hosts bracketed."""
        return self.address_for(self.host if self.host is not None else "::")

    def address_for(self, host: str) -> str:
        """``host:port`` for this port on another host (used for the IPv4 fallback)."""
        return f"[{host}]:{self.port}" if ":" in host else f"{host}:{self.port}"

    def with_port(self, port: int) -> GrpcListen:
        """The same listener on another port (a restart re-binds the port bound the first time)."""
        return replace(self, port=port)

    def credentials(self) -> grpc.ServerCredentials:
        """Read the key and certificate files and build grpcio server credentials; ValueError if one is unreadable."""
        key = _read(self.private_key, "privateKey")
        chain = _read(self.cert_key or self.private_key, "certKey")
        if self.extra_cert_chain:
            # As in Twisted: intermediate certificates sent after ours.
            chain = chain.rstrip(b"\n") + b"\n" + _read(self.extra_cert_chain, "extraCertChain")
        roots = _read_ca_dir(self.ca_certs_dir) if self.ca_certs_dir else None
        return grpc.ssl_server_credentials(
            [(key, chain)], root_certificates=roots, require_client_auth=self.require_client_cert
        )


def _read(path: str | None, option: str) -> bytes:
    try:
        with open(path, "rb") as f:  # type: ignore[arg-type]
            return f.read()
    except OSError as exc:
        raise ValueError(f"cannot read {option} file {path!r}: {exc.strerror}") from None


def _read_ca_dir(path: str) -> bytes:
    try:
        names = sorted(os.listdir(path))
    except OSError as exc:
        raise ValueError(f"cannot read caCertsDir {path!r}: {exc.strerror}") from None
    pems = []
    for name in names:
        full = os.path.join(path, name)
        if os.path.isfile(full):
            data = _read(full, "caCertsDir")
            if b"-----BEGIN CERTIFICATE-----" in data:
                pems.append(data.rstrip(b"\n") + b"\n")
    if not pems:
        raise ValueError(f"caCertsDir {path!r} holds no PEM certificate")
    return b"".join(pems)


def split_endpoint(description: str) -> list[tuple[str | None, str]]:
    """Twisted's endpoint-string grammar, as ``(keyword or None, value)`` pairs in order: ``:`` separates
    arguments, the first ``=`` makes one a keyword, and a backslash takes the next character literally
    (``privateKey=C\\:/key.pem``)."""
    parts: list[list[str]] = []
    current: list[str] = []
    chars = iter(description)
    for ch in chars:
        if ch == "\\":
            nxt = next(chars, None)
            if nxt is None:
                raise ValueError(f"endpoint {description!r} ends with a lone backslash")
            current.append("\\" + nxt)  # kept escaped until split on '='
        elif ch == ":":
            parts.append(current)
            current = []
        else:
            current.append(ch)
    parts.append(current)

    def unescape(tokens: list[str]) -> str:
        return "".join(t[-1] if t.startswith("\\") else t for t in tokens)

    items: list[tuple[str | None, str]] = []
    for tokens in parts:
        eq = next((i for i, t in enumerate(tokens) if t == "="), None)
        if eq is None:
            items.append((None, unescape(tokens)))
        else:
            items.append((unescape(tokens[:eq]), unescape(tokens[eq + 1 :])))
    return items


_FIRST_GROUP = re.compile(r"\[?[0-9A-Fa-f]{0,4}")
_NEXT_GROUP = re.compile(r"[0-9A-Fa-f]{0,4}\]?|(?:\d{1,3}\.){3}\d{1,3}\]?")


def _join_ipv6_interface(items: list[tuple[str | None, str]]) -> list[tuple[str | None, str]]:
    """Accept an unescaped IPv6 ``interface=::1``: Twisted would split it on its colons, which nobody means."""
    out: list[tuple[str | None, str]] = []
    i = 0
    while i < len(items):
        key, value = items[i]
        i += 1
        if key == "interface" and _FIRST_GROUP.fullmatch(value):
            groups = [value]
            while i < len(items) and items[i][0] is None and _NEXT_GROUP.fullmatch(items[i][1]):
                groups.append(items[i][1])
                i += 1
                if groups[-1].endswith("]"):
                    break
            if len(groups) > 1:
                value = ":".join(groups)
        out.append((key, value))
    return out


def _port(value: str, description: str) -> int:
    try:
        port = int(value)
    except ValueError:
        raise ValueError(f"endpoint {description!r}: port {value!r} is not a number") from None
    if not 0 <= port <= 65535:
        raise ValueError(f"endpoint {description!r}: port {port} is outside 0..65535")
    return port


def _flag(value: str, name: str, description: str) -> bool:
    if value.lower() in _TRUE:
        return True
    if value.lower() in _FALSE:
        return False
    raise ValueError(f"endpoint {description!r}: {name} must be yes or no, not {value!r}")


def _take(args: list[str], kwargs: dict[str, str], positional: list[str], description: str) -> dict[str, str]:
    """Merge positional arguments (in Twisted's order) into keywords, refusing duplicates and extras."""
    if len(args) > len(positional):
        raise ValueError(f"endpoint {description!r}: too many positional arguments")
    merged = dict(kwargs)
    for name, value in zip(positional, args):
        if name in merged:
            raise ValueError(f"endpoint {description!r}: {name} given twice")
        merged[name] = value
    return merged


_TCP_OPTIONS = ["port", "interface", "backlog"]
_SSL_POSITIONAL = ["port", "privateKey", "certKey", "sslmethod", "interface", "backlog"]
_SSL_OPTIONS = _SSL_POSITIONAL + ["extraCertChain", "caCertsDir", "requireClientCert"]


def parse_grpc_endpoint(description: str) -> GrpcListen:
    """Translate a Twisted server endpoint string into a :class:`GrpcListen`.

    Accepted: ``tcp:PORT[:interface=HOST]`` (all interfaces when no interface is given) and
    ``ssl:PORT:privateKey=KEY[:certKey=CERT][:extraCertChain=CHAIN][:caCertsDir=DIR][:requireClientCert=yes]``
    (``certKey`` defaults to ``privateKey``; ``caCertsDir`` verifies client certificates, which
    ``requireClientCert=yes`` makes mandatory).  ``backlog`` is kept for the Twisted listeners (the engines ignore it).  Anything else: ValueError.
    """
    items = _join_ipv6_interface(split_endpoint(description))
    args = [value for key, value in items if key is None]
    kwargs: dict[str, str] = {}
    for key, value in items:
        if key is not None:
            if key in kwargs:
                raise ValueError(f"endpoint {description!r}: {key} given twice")
            kwargs[key] = value
    kind = args.pop(0).strip().lower() if args else ""
    if kind == "tcp":
        options = _take(args, kwargs, _TCP_OPTIONS, description)
        allowed = _TCP_OPTIONS
    elif kind == "ssl":
        options = _take(args, kwargs, _SSL_POSITIONAL, description)
        allowed = _SSL_OPTIONS
    else:
        raise ValueError(
            f"endpoint {description!r}: gRPC servers listen on tcp:PORT[:interface=HOST] or "
            f"ssl:PORT:privateKey=KEY[:certKey=CERT], not {kind or 'nothing'!r}"
        )
    unknown = sorted(set(options) - set(allowed))
    if unknown:
        raise ValueError(f"endpoint {description!r}: unsupported option(s) {', '.join(unknown)} for {kind}")
    if "port" not in options:
        raise ValueError(f"endpoint {description!r}: no port (write colons inside a value as \\:)")
    port = _port(options["port"], description)
    backlog = None
    if options.get("backlog"):
        try:
            backlog = int(options["backlog"])
        except ValueError:
            raise ValueError(f"endpoint {description!r}: backlog {options['backlog']!r} is not a number") from None
    host = options.get("interface") or None
    if host is not None:
        host = host.strip("[]")
        if ":" in host:
            try:
                ipaddress.IPv6Address(host)
            except ValueError:
                raise ValueError(f"endpoint {description!r}: interface {host!r} is not an IPv6 address") from None
    if kind == "tcp":
        return GrpcListen(port=port, host=host, backlog=backlog)
    if options.get("sslmethod"):
        raise ValueError(f"endpoint {description!r}: sslmethod is not supported by grpcio")
    if not options.get("privateKey"):
        raise ValueError(f"endpoint {description!r}: ssl needs privateKey=FILE")
    require = _flag(options.get("requireClientCert", "no"), "requireClientCert", description)
    if require and not options.get("caCertsDir"):
        raise ValueError(f"endpoint {description!r}: requireClientCert=yes needs caCertsDir=DIR to verify clients")
    return GrpcListen(
        port=port,
        host=host,
        private_key=options["privateKey"],
        cert_key=options.get("certKey") or None,
        extra_cert_chain=options.get("extraCertChain") or None,
        ca_certs_dir=options.get("caCertsDir") or None,
        require_client_cert=require,
        backlog=backlog,
    )


def local_ip(openolt_endpoint: str) -> str:
    """The address reported as the OLT's IP: the OpenOLT interface if one is given, else the
    address of the default route (as BBSim), else loopback."""
    listen = parse_grpc_endpoint(openolt_endpoint)
    if listen.host and listen.host not in ("0.0.0.0", "::"):
        return listen.host
    probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        probe.connect(("192.0.2.1", 9))  # no packet is sent by a UDP connect
        return probe.getsockname()[0]
    except OSError:
        return "127.0.0.1"
    finally:
        probe.close()


def port_of(endpoint: str, default: int) -> int:
    """The port of a tcp/ssl endpoint string (``tcp:50074:interface=...``, ``ssl:port=50074:...``), or
    ``default`` when it names none (advertised in SADIS URLs)."""
    for part in endpoint.split(":")[1:]:
        value = part.split("=", 1)[-1] if part.startswith("port=") else part
        if value.isdigit():
            return int(value)
    return default
