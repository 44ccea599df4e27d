"""The channel to oltsim's v1 gRPC endpoint and the one-line errors `oltsimctl` prints.

Every unary call carries the configured deadline and, when a token is set, the metadata
`authorization: Bearer <token>`. A failed call becomes a `CtlError`: a connection that never came up (nothing
listening, a TLS handshake refused) exits with `EXIT_CONNECT`, a call the server answered with an error status
with `EXIT_REFUSED`; the message is `<STATUS>: <the server's message>`.
"""
from __future__ import annotations

import grpc
from grpc import _common as grpc_common  # the connectivity-state table of the pinned grpcio (see `connected`)

from oltsim._proto import bbsim_dmi_pb2_grpc, bbsim_pb2_grpc, oltsim_pb2_grpc
from oltsim.ctl.settings import ENV_TOKEN, Settings, SettingsError

EXIT_OK = 0
EXIT_REFUSED = 1      # the server answered with an error status (NOT_FOUND, UNAUTHENTICATED, ...)
EXIT_USAGE = 2        # a bad command line, config file, token file or certificate file
EXIT_TIMEOUT = 3      # `oltsimctl wait` ran out of time
EXIT_CONNECT = 4      # no connection to the server (nothing listening, TLS refused, no answer in time)

class CtlError(Exception):
    """A failure to report as one line on stderr, with the process exit code."""

    def __init__(self, message: str, code: int = EXIT_REFUSED):
        super().__init__(message)
        self.code = code


def _read(path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise SettingsError(f"cannot read {path}: {exc.strerror or exc}") from None


#: The largest answer accepted: `olt flows` of a lab raised far above the default --max-flows can pass gRPC's
#: default 4 MiB (docs/limits.md, flows); the CLI reads one answer at a time, so a generous bound costs nothing.
MAX_ANSWER_BYTES = 256 * 1024 * 1024


def make_channel(settings: Settings) -> grpc.Channel:
    """An insecure channel, or a TLS one with the given CA, client certificate and server name."""
    options = [("grpc.max_receive_message_length", MAX_ANSWER_BYTES)]
    if not settings.tls:
        return grpc.insecure_channel(settings.server, options=options)
    credentials = grpc.ssl_channel_credentials(
        root_certificates=_read(settings.ca_cert) if settings.ca_cert else None,
        private_key=_read(settings.client_key) if settings.client_key else None,
        certificate_chain=_read(settings.client_cert) if settings.client_cert else None)
    if settings.server_name:
        options.append(("grpc.ssl_target_name_override", settings.server_name))
    return grpc.secure_channel(settings.server, credentials, options=options)


class Connection:
    """One channel to the v1 endpoint with its two services, `bbsim.BBSim` and `oltsim.v1.Oltsim`, and, opened
    on first use, one to the DMI endpoint for BBSim's `bbsim.BBsim_dmi` (service "dmi": plain TCP, no token, as
    the DMI port is served)."""

    def __init__(self, settings: Settings):
        self.settings = settings
        self.channel = make_channel(settings)
        self.bbsim = bbsim_pb2_grpc.BBSimStub(self.channel)
        self.oltsim = oltsim_pb2_grpc.OltsimStub(self.channel)
        self.metadata = (("authorization", f"Bearer {settings.token}"),) if settings.token else ()
        self.dmi_channel: grpc.Channel | None = None
        self._dmi = None

    @property
    def dmi(self) -> bbsim_dmi_pb2_grpc.BBsim_dmiStub:
        """The `bbsim.BBsim_dmi` stub on the DMI endpoint (`settings.dmi_server`)."""
        if self._dmi is None:
            self.dmi_channel = grpc.insecure_channel(self.settings.dmi_server,
                                                     options=[("grpc.max_receive_message_length", MAX_ANSWER_BYTES)])
            self._dmi = bbsim_dmi_pb2_grpc.BBsim_dmiStub(self.dmi_channel)
        return self._dmi

    def close(self) -> None:
        """Close the channels."""
        self.channel.close()
        if self.dmi_channel is not None:
            self.dmi_channel.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def call(self, method: str, request, service: str = "bbsim", timeout: float | None = None):
        """A unary call with the deadline (`timeout`, else the configured one) and the token; a failure raises
        `CtlError`."""
        stub = getattr(self, service)
        metadata = () if service == "dmi" else self.metadata
        try:
            return getattr(stub, method)(request, timeout=timeout or self.settings.timeout, metadata=metadata)
        except grpc.RpcError as exc:
            if service == "dmi":
                raise self.error(exc, self.dmi_channel, self.settings.dmi_server) from None
            raise self.error(exc) from None

    def stream(self, method: str, request, timeout: float | None = None, service: str = "oltsim"):
        """A server-streaming call (iterate the result; `cancel()` ends it) with the token."""
        return getattr(getattr(self, service), method)(request, timeout=timeout, metadata=self.metadata)

    def connected(self, channel: grpc.Channel | None = None) -> bool:
        """Whether the channel (default: the v1 one) is connected to the server now (after a failed call: the
        server answered it).

        Read from the channel's core without starting anything: the public ways (`subscribe`,
        `channel_ready_future`) start a polling thread that races `close()` and prints a traceback when it loses.
        grpcio is pinned; tests/integration/test_oltsimctl.py checks both answers."""
        core = getattr(channel or self.channel, "_channel", None)
        try:
            state = grpc_common.CYGRPC_CONNECTIVITY_STATE_TO_CHANNEL_CONNECTIVITY[
                core.check_connectivity_state(False)]
        except Exception:  # an unknown grpcio: say "refused", the server's message still shows what happened
            return True
        return state == grpc.ChannelConnectivity.READY

    def error(self, exc: grpc.RpcError, channel: grpc.Channel | None = None, server: str | None = None) -> CtlError:
        """The `CtlError` for a failed call on `channel` to `server` (default: the v1 endpoint): unreachable
        (`EXIT_CONNECT`) or refused (`EXIT_REFUSED`)."""
        code = exc.code() if hasattr(exc, "code") else grpc.StatusCode.UNKNOWN
        details = (exc.details() if hasattr(exc, "details") else None) or ""
        name = code.name if code is not None else "UNKNOWN"
        if code in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED) and not self.connected(channel):
            return CtlError(f"cannot connect to {server or self.settings.server}: {name}: {_first_line(details)}",
                            EXIT_CONNECT)
        if code == grpc.StatusCode.UNAUTHENTICATED:
            return CtlError(f"{name}: {_first_line(details)}; {self.token_hint()}", EXIT_REFUSED)
        return CtlError(f"{name}: {_first_line(details)}", EXIT_REFUSED)

    def token_hint(self) -> str:
        """How to give oltsimctl the daemon's token (the server's message speaks of HTTP headers)."""
        if self.settings.token:
            return (f"the token from {self.settings.token_source} was refused: give the daemon's "
                    "--api-token-file with --token-file FILE")
        return f"give it with --token-file FILE (or ${ENV_TOKEN}, or token_file in the config file)"


def _first_line(text: str) -> str:
    lines = text.strip().splitlines()
    return lines[0] if lines else "(no message)"
