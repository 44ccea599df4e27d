"""The access token in memory: its settings (option, file, YAML, precedence), the REST guard on the real Klein
resources through StubTreq, the gRPC interceptor on fake calls, listener checks, and how makeService wires them."""

from __future__ import annotations

import json

import grpc
import pytest
from treq.testing import StubTreq
from twisted.internet.endpoints import TCP4ServerEndpoint
from twisted.internet.task import Clock

from oltsim.api.v0.usecases_v0 import V0Commands
from oltsim.api.v0.rest_v0 import V0Rest
from oltsim.api.v1.rest_v1 import V1Rest
from oltsim.config import ConfigError, load_settings
from oltsim.serving.security import AccessToken, AioTokenInterceptor, check_listener, guard, interceptors, server_endpoint
from oltsim.tap import Options, makeService

from conftest import Aborted, FakeContext, Sim, run_now, stream_now

TOKEN = "s3cret-Token_123"
GOOD = f"Bearer {TOKEN}"


# ---- the token --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("authorization, reason", [
    (None, "missing"),
    ("", "malformed"),
    (TOKEN, "malformed"),
    (f"Basic {TOKEN}", "malformed"),
    ("Bearer", "malformed"),
    ("Bearer other", "invalid"),
    (f"Bearer {TOKEN}x", "invalid"),
    (f"Bearer {TOKEN} extra", "malformed"),
    (GOOD, None),
    (f"bearer {TOKEN}", None),
    (GOOD.encode("ascii"), None),
])
def test_refusal_reasons(authorization, reason):
    """Only `Bearer <token>` (scheme in any case) passes; the reason tells missing, malformed and wrong apart."""
    assert AccessToken(TOKEN).refusal(authorization) == reason


def test_token_is_never_shown():
    """Neither the token object nor the settings show the secret in their repr (nothing logs it by accident)."""
    assert TOKEN not in repr(AccessToken(TOKEN))
    assert TOKEN not in repr(load_settings({"api_token": TOKEN}, None))


def test_empty_token_is_refused():
    """An empty token would let an empty Bearer credential through; it is a programming error."""
    with pytest.raises(ValueError):
        AccessToken("")


# ---- settings -----------------------------------------------------------------------------------------------


def test_default_is_open():
    """No token by default, as BBSim."""
    settings = load_settings({}, None)
    assert settings.api_token == "" and settings.api_token_file == ""


def test_token_from_a_file_drops_the_trailing_newline(tmp_path):
    """--api-token-file reads the token (a Kubernetes secret's trailing newline is not part of it)."""
    path = tmp_path / "token"
    path.write_text(TOKEN + "\n")
    assert load_settings({"api_token_file": str(path)}, None).api_token == TOKEN


def test_token_keys_in_yaml(tmp_path):
    """bbsim.api_token and bbsim.api_token_file (relative to the config file) are read from the YAML file."""
    (tmp_path / "secret").write_text(TOKEN)
    config = tmp_path / "oltsim.yaml"
    config.write_text("bbsim:\n  api_token_file: secret\n")
    assert load_settings({}, config).api_token == TOKEN
    config.write_text(f"bbsim:\n  api_token: {TOKEN}\n")
    assert load_settings({}, config).api_token == TOKEN


def test_an_option_beats_the_file_whichever_form(tmp_path):
    """api_token and api_token_file are one setting: the typed option wins over the YAML file, in either form."""
    (tmp_path / "secret").write_text("from-file")
    config = tmp_path / "oltsim.yaml"
    config.write_text("bbsim:\n  api_token_file: secret\n")
    assert load_settings({"api_token": "typed"}, config).api_token == "typed"
    config.write_text("bbsim:\n  api_token: in-yaml\n")
    assert load_settings({"api_token_file": str(tmp_path / "secret")}, config).api_token == "from-file"
    assert load_settings({"api_token": ""}, config).api_token == ""  # typed empty turns it off


def test_both_forms_from_one_source_are_refused(tmp_path):
    """Giving the token and a token file at the same level is ambiguous: one clear error."""
    (tmp_path / "secret").write_text(TOKEN)
    with pytest.raises(ConfigError, match="api_token or api_token_file, not both"):
        load_settings({"api_token": TOKEN, "api_token_file": str(tmp_path / "secret")}, None)


@pytest.mark.parametrize("content, message", [
    ("", "is empty"),
    ("  \n", "is empty"),
    ("two\nlines", "one line"),
    ("with space", "one line"),
])
def test_bad_token_files(tmp_path, content, message):
    """A token file that holds no usable token stops the start, naming the file."""
    path = tmp_path / "token"
    path.write_text(content)
    with pytest.raises(ConfigError, match=message) as info:
        load_settings({"api_token_file": str(path)}, None)
    assert str(path) in str(info.value)


def test_missing_token_file(tmp_path):
    """A token file that does not exist is named in the error."""
    with pytest.raises(ConfigError, match="does not exist"):
        load_settings({"api_token_file": str(tmp_path / "nope")}, None)


@pytest.mark.parametrize("token", ["has space", "tab\there", "caf\u00e9"])
def test_bad_token_characters_are_refused_without_echo(token):
    """A token that cannot travel in a header is refused, and the message does not repeat it."""
    with pytest.raises(ConfigError) as info:
        load_settings({"api_token": token}, None)
    assert token not in str(info.value)


def test_a_yaml_number_token_is_not_echoed(tmp_path):
    """An unquoted number in YAML is refused without printing it (it is a secret)."""
    config = tmp_path / "oltsim.yaml"
    config.write_text("bbsim:\n  api_token: 918273645\n")
    with pytest.raises(ConfigError, match="quote it") as info:
        load_settings({}, config)
    assert "918273645" not in str(info.value)


# ---- REST guard ---------------------------------------------------------------------------------------------


def call(resource, method, path, authorization=None):
    """(status, headers, body bytes) of one request to `resource` through StubTreq."""
    stub = StubTreq(resource)
    headers = {"Authorization": [authorization]} if authorization is not None else {}
    out = []
    d = stub.request(method, "http://oltsim.test" + path, headers=headers)
    d.addCallback(lambda r: stub.content(r).addCallback(lambda body: (r.code, r.headers, body)))
    d.addBoth(out.append)
    stub.flush()
    if not isinstance(out[0], tuple):
        out[0].raiseException()
    return out[0]


def _v1(sim):
    """The real v1 Klein resource over the sim's commands."""
    return V1Rest(sim.commands).resource()


@pytest.fixture
def sim():
    sim = Sim()
    sim.bring_up()
    return sim


def test_rest_v1_without_token_is_401(sim):
    """A v1 request without the token: 401, the JSON error body with code 16, and a Bearer challenge."""
    code, headers, body = call(guard(_v1(sim), AccessToken(TOKEN), "rest-v1"), "GET", "/v1/olt")
    assert code == 401
    assert json.loads(body) == {"error": "this API needs an access token: send Authorization: Bearer <token>",
                                "code": 16,
                                "message": "this API needs an access token: send Authorization: Bearer <token>"}
    assert headers.getRawHeaders("WWW-Authenticate") == ['Bearer realm="oltsim"']
    assert headers.getRawHeaders("Content-Type") == ["application/json"]


def test_rest_v1_wrong_token_is_401_invalid_token(sim):
    """A wrong token: 401 with error="invalid_token" in the challenge (RFC 6750); nothing is done."""
    resource = guard(_v1(sim), AccessToken(TOKEN), "rest-v1")
    code, headers, body = call(resource, "DELETE", "/v1/olt/onus/BBSM00000001", "Bearer wrong")
    assert (code, json.loads(body)["code"]) == (401, 16)
    assert headers.getRawHeaders("WWW-Authenticate") == ['Bearer realm="oltsim", error="invalid_token"']
    assert sim.olt.onu_by_serial("BBSM00000001").state == "enabled"


def test_rest_v1_right_token_passes_with_paths_intact(sim):
    """With the token, Klein sees the same paths as without the guard: reads, actions, 404s all work."""
    resource = guard(_v1(sim), AccessToken(TOKEN), "rest-v1")
    code, _, body = call(resource, "GET", "/v1/olt/onus/BBSM00000001", GOOD)
    assert (code, json.loads(body)["SerialNumber"]) == (200, "BBSM00000001")
    code, _, _ = call(resource, "DELETE", "/v1/olt/onus/BBSM00000001", GOOD)
    assert code == 200 and sim.olt.onu_by_serial("BBSM00000001").state == "disabled"
    code, _, body = call(resource, "GET", "/v1/nope", GOOD)
    assert (code, json.loads(body)["code"]) == (404, 5)


def test_rest_v1_unknown_paths_are_401_too(sim):
    """Without the token even unknown paths answer 401: the guard does not reveal which paths exist."""
    code, _, _ = call(guard(_v1(sim), AccessToken(TOKEN), "rest-v1"), "GET", "/v1/nope")
    assert code == 401


def test_rest_v0_refusal_keeps_the_deprecation_header(sim):
    """v0 refusals carry `Deprecation: true` like every other v0 answer; the right token passes."""
    resource = guard(V0Rest(V0Commands(sim.olt)).resource(), AccessToken(TOKEN), "rest-v0",
                     headers=[(b"Deprecation", b"true")])
    code, headers, body = call(resource, "GET", "/v0/olt/onus")
    assert (code, json.loads(body)["code"]) == (401, 16)
    assert headers.getRawHeaders("Deprecation") == ["true"]
    code, headers, _ = call(resource, "GET", "/v0/olt/onus", GOOD)
    assert code == 200 and headers.getRawHeaders("Deprecation") == ["true"]


def test_no_token_means_no_guard(sim):
    """guard() without a token returns the resource itself: BBSim's open behaviour, at no cost."""
    resource = _v1(sim)
    assert guard(resource, None, "rest-v1") is resource
    assert interceptors(None, "grpc-v1") == []


# ---- gRPC interceptor ---------------------------------------------------------------------------------------


class Details:
    """What grpcio passes to an interceptor: the method and the invocation metadata."""

    def __init__(self, method, metadata=()):
        self.method = method
        self.invocation_metadata = metadata


def intercept(metadata, kind="unary_unary"):
    """Run the token interceptor on one call; returns (handler it gave, whether the real behaviour ran)."""
    ran = []

    async def behaviour(request, context):
        ran.append(request)
        return "answer"

    factory = getattr(grpc, f"{kind}_rpc_method_handler")
    real = factory(behaviour, request_deserializer=str, response_serializer=repr)

    async def continuation(details):
        return real
    handler = run_now(AioTokenInterceptor(AccessToken(TOKEN), "grpc-v1").intercept_service(
        continuation, Details("/bbsim.BBSim/GetOlt", metadata)))
    return handler, real, ran


@pytest.mark.parametrize("metadata", [(), (("authorization", "Bearer wrong"),), (("x-token", TOKEN),)])
@pytest.mark.parametrize("kind", ["unary_unary", "unary_stream", "stream_unary", "stream_stream"])
def test_interceptor_refuses_without_the_token(metadata, kind):
    """Any kind of method, without the right metadata: UNAUTHENTICATED, the servicer never runs, and the
    handler keeps the method's kind and (de)serializers."""
    handler, real, ran = intercept(metadata, kind)
    assert (handler.request_streaming, handler.response_streaming) == (real.request_streaming,
                                                                       real.response_streaming)
    assert handler.request_deserializer is str and handler.response_serializer is repr
    context = FakeContext()
    with pytest.raises(Aborted) as info:
        call = getattr(handler, kind)("request", context)
        stream_now(call) if handler.response_streaming else run_now(call)
    assert info.value.code == grpc.StatusCode.UNAUTHENTICATED
    assert ran == []


def test_interceptor_passes_the_right_token():
    """With `authorization: Bearer <token>` the real handler is returned unchanged."""
    handler, real, _ = intercept((("authorization", GOOD),))
    assert handler is real


def test_interceptor_leaves_unknown_methods_unimplemented():
    """An unknown method (no handler) stays None, which grpcio answers with UNIMPLEMENTED."""
    async def unknown(details):
        return None
    handler = run_now(AioTokenInterceptor(AccessToken(TOKEN), "grpc-v1").intercept_service(
        unknown, Details("/nope/Nope")))
    assert handler is None


# ---- listeners ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("grpc_server", [True, False])
def test_tls_files_are_checked_before_listening(tmp_path, grpc_server):
    """An ssl: endpoint whose key file is missing or not PEM fails the check, naming the listener."""
    with pytest.raises(ConfigError, match="rest_v1 cannot listen") as info:
        check_listener("rest_v1", f"ssl:0:privateKey={tmp_path}/missing.pem", grpc_server)
    assert info.value.setting == "rest_v1"
    junk = tmp_path / "junk.pem"
    junk.write_text("not a key")
    with pytest.raises(ConfigError):
        check_listener("rest_v1", f"ssl:0:privateKey={junk}", grpc_server)


def test_client_cert_needs_a_ca_dir():
    """requireClientCert=yes without caCertsDir cannot verify anyone: refused on REST as on gRPC."""
    for grpc_server in (True, False):
        with pytest.raises(ConfigError, match="needs caCertsDir"):
            check_listener("rest_v0", "ssl:0:privateKey=k.pem:requireClientCert=yes", grpc_server)


def test_tls_port_zero_may_repeat():
    """ssl:0 asks the system for a free port like tcp:0, so two listeners may both say it (tests do)."""
    settings = load_settings({"grpc_v1": "ssl:0:privateKey=k.pem", "rest_v1": "ssl:0:privateKey=k.pem"}, None)
    assert settings.grpc_v1 == settings.rest_v1


def test_rest_endpoints_other_than_ssl_go_to_twisted():
    """tcp:, unix: and friends are Twisted's own endpoint strings; a Twisted-only ssl option cannot be mixed with
    client-certificate verification (which only oltsim's reading of ssl: knows)."""
    assert isinstance(server_endpoint(None, "tcp:0:interface=127.0.0.1"), TCP4ServerEndpoint)
    with pytest.raises(ValueError, match="dhParameters"):
        server_endpoint(None, "ssl:0:privateKey=k.pem:dhParameters=dh.pem:caCertsDir=cas")


def test_daemon_refuses_a_bad_tls_listener(tmp_path, capsys):
    """`twistd oltsim --rest-v0 ssl:...` with an unreadable key stops at option parsing with one line."""
    with pytest.raises(SystemExit):
        Options().parseOptions(["--rest-v0", f"ssl:0:privateKey={tmp_path}/none.pem"])
    assert "--rest-v0: rest_v0 cannot listen" in capsys.readouterr().err


# ---- wiring -------------------------------------------------------------------------------------------------


def built(*arguments):
    """makeService on a fake clock with loopback listeners (nothing is started)."""
    options = Options()
    options.parseOptions(["--openolt", "tcp:0:interface=127.0.0.1", *arguments])
    return makeService(options, Clock())


def site_of(top, name):
    """The Site of the REST listener `name`, behind its connection limits."""
    return top.getServiceNamed(name).factory.wrappedFactory


def test_make_service_guards_the_control_rest_surfaces_only():
    """With --api-token: v1 (and /metrics) and v0 REST answer 401 without it and 200 with it; SADIS stays open."""
    top = built("--api-token", TOKEN)
    v1, v0, sadis = (site_of(top, name).resource for name in ("rest-v1", "rest-v0", "sadis"))
    for resource, path in ((v1, "/v1/olt"), (v1, "/metrics"), (v0, "/v0/olt")):
        assert call(resource, "GET", path)[0] == 401, path
        assert call(resource, "GET", path, GOOD)[0] == 200, path
    assert call(sadis, "GET", "/v2/subscribers/BBSIM_OLT_0")[0] == 200


def test_make_service_without_token_is_open():
    """Default wiring: every REST surface answers without credentials, /metrics included."""
    top = built()
    for name, path in (("rest-v1", "/v1/olt"), ("rest-v1", "/metrics"), ("rest-v0", "/v0/olt")):
        assert call(site_of(top, name).resource, "GET", path)[0] == 200, path


def test_make_service_gives_control_grpc_servers_the_token_interceptor():
    """The v1 and v0 gRPC servers get the metrics and token interceptors (grpc.aio's kind: every gRPC server runs on
    the reactor's loop); OpenOLT only the metrics one."""
    top = built("--api-token", TOKEN)
    kinds = {name: [type(i).__name__ for i in top.getServiceNamed(name).interceptors]
             for name in ("openolt", "grpc-v1", "grpc-v0")}
    assert kinds == {"openolt": ["AioMetricsInterceptor"],
                     "grpc-v1": ["AioMetricsInterceptor", "AioTokenInterceptor"],
                     "grpc-v0": ["AioMetricsInterceptor", "AioTokenInterceptor"]}
