"""The simulated web power switch in memory, at a lab's numbering (OLT id 10, 2 PONs x 16 ONUs): Digest
authentication (RFC 7616, MD5, qop=auth) checked against a hand-computed answer, the Digital Loggers and Expert
Power Control requests of voltha-system-tests' power_switch.robot switching the ONU the outlet feeds through the
v1 use cases (seen on GET /v1/olt/onus/<serial>), the OLT's outlet, the mapping, and every refusal."""
from __future__ import annotations

import base64
import hashlib
import json

import pytest
from treq.testing import StubTreq
from twisted.internet.task import Clock
from twisted.logger import capturedLogs, formatEvent
from twisted.python.failure import Failure

from oltsim.api.powerswitch import DigestAuth, PowerSwitch, PowerSwitchRest
from oltsim.api.powerswitch.digest import parse_auth_params

from conftest import Sim

OLT_ID, PONS, ONUS = 10, 2, 16
USER, PASSWORD = "admin", "1234"
BASE = "http://127.0.0.1:50076"
#: the 20th ONU in PON, ONU order: PON 1's 4th ONU
TWENTIETH = "BBSM000a0104"


def md5(text: str) -> str:
    return hashlib.md5(text.encode()).hexdigest()


def answer(challenge: str, method: str, uri: str, user: str = USER, password: str = PASSWORD, nc: int = 1,
           cnonce: str = "0a4f113b") -> str:
    """The Authorization header a client computes for `challenge` (RFC 7616 section 3.4.1, by hand)."""
    scheme, _, rest = challenge.partition(" ")
    assert scheme == "Digest"
    params = parse_auth_params(rest)
    realm, nonce = params["realm"], params["nonce"]
    count = f"{nc:08x}"
    response = md5(f"{md5(f'{user}:{realm}:{password}')}:{nonce}:{count}:{cnonce}:auth:{md5(f'{method}:{uri}')}")
    return (f'Digest username="{user}", realm="{realm}", nonce="{nonce}", uri="{uri}", algorithm=MD5, '
            f'response="{response}", qop=auth, nc={count}, cnonce="{cnonce}", opaque="{params["opaque"]}"')


class Switch:
    """The power switch resource over a lab's OLT (every ONU activated by an adapter unless not `activated`), served
    by StubTreq."""

    def __init__(self, password: str = PASSWORD, activated: bool = True):
        self.sim = Sim(olt_id=OLT_ID, pon=PONS, onu=ONUS)
        if activated:
            self.sim.bring_up()
        self.clock = Clock()
        self.switch = PowerSwitch(self.sim.commands)
        self.auth = DigestAuth("oltsim power switch", USER, password, clock=self.clock)
        self.stub = StubTreq(PowerSwitchRest(self.switch, self.auth).resource())

    def send(self, method: str, uri: str, body: bytes = b"", headers: dict | None = None):
        """(status, headers, body) of one request."""
        out = []
        d = self.stub.request(method, BASE + uri, data=body or None, headers=headers or {})
        d.addCallback(lambda r: self.stub.content(r).addCallback(lambda content: out.append((r.code, r.headers,
                                                                                                content))))
        d.addErrback(out.append)
        self.stub.flush()
        assert out, f"{method} {uri}: no answer"
        if isinstance(out[0], Failure):
            out[0].raiseException()
        return out[0]

    def digest(self, method: str, uri: str, body: bytes = b"", headers: dict | None = None,
               password: str = PASSWORD):
        """A request as a Digest client makes it: unauthenticated first, then answering the 401's challenge."""
        code, got, _ = self.send(method, uri, body, headers)
        assert code == 401
        challenge = got.getRawHeaders(b"www-authenticate")[0].decode()
        signed = dict(headers or {}, Authorization=answer(challenge, method, uri, password=password))
        return self.send(method, uri, body, signed)

    def onu_state(self, serial: str) -> str:
        return self.sim.rest.call("GET", f"/v1/olt/onus/{serial}").json["InternalState"]


DLI = {"X-CSRF": "x", "Content-Type": "application/x-www-form-urlencoded"}


@pytest.fixture
def lab():
    return Switch()


def test_the_twentieth_onus_dli_outlet_powers_it_off_and_on(lab):
    """PUT /restapi/relay/outlets/=19/state/ value=false (the robot's outlet 20, minus one) answers 207 and cuts the
    20th ONU's power (disabled, as DELETE /v1/olt/onus/<serial>), its state reads [false]; value=true brings it
    back; no other ONU changes."""
    assert lab.sim.olt.onus[19].serial == TWENTIETH
    code, _, body = lab.digest("PUT", "/restapi/relay/outlets/=19/state/", b"value=false", DLI)
    assert (code, body) == (207, b"")
    assert lab.onu_state(TWENTIETH) == "disabled"
    assert [o.state for o in lab.sim.olt.onus if o.serial != TWENTIETH] == ["enabled"] * 31
    code, got, body = lab.digest("GET", "/restapi/relay/outlets/=19/state/")
    assert (code, body) == (200, b"[false]")
    assert got.getRawHeaders(b"content-type") == [b"application/json"]
    code, _, _ = lab.digest("PUT", "/restapi/relay/outlets/=19/state/", b"value=true", DLI)
    assert code == 207
    assert lab.onu_state(TWENTIETH) == "enabled"  # an activated ONU comes back enabled, as POST /v1/olt/onus
    assert lab.digest("GET", "/restapi/relay/outlets/=19/state/")[2] == b"[true]"


def test_the_older_robot_librarys_double_slash_is_the_same_outlet(lab):
    """robotframework-requests before urljoin made /restapi/relay/outlets//=19/state/ of the session URL and
    uri; that path switches outlet 19 as well."""
    code, _, _ = lab.digest("PUT", "/restapi/relay/outlets//=19/state/", b"value=false", DLI)
    assert code == 207
    assert lab.onu_state(TWENTIETH) == "disabled"


def test_the_plain_dli_form_is_the_same_outlet_as_a_single_resource(lab):
    """/restapi/relay/outlets/19/state/ (no `=`) switches outlet 19 too, answered 204 as the real switch answers one
    resource, and reads as a bare `false`."""
    assert lab.digest("PUT", "/restapi/relay/outlets/19/state/", b"value=false", DLI)[0] == 204
    assert lab.onu_state(TWENTIETH) == "disabled"
    assert lab.digest("GET", "/restapi/relay/outlets/19/state")[2] == b"false"


def test_an_outlet_switched_off_logs_a_key_value_event(lab):
    """Switching the 20th ONU's outlet off logs power-switch-outlet-off with the outlet and the ONU's serial."""
    with capturedLogs() as logged:
        lab.digest("PUT", "/restapi/relay/outlets/=19/state/", b"value=false", DLI)
    lines = [formatEvent(event) for event in logged]
    assert any(line.startswith("power-switch-outlet-off outlet=20 device=onu serial=BBSM000a0104 applied=true")
               for line in lines), lines


def test_the_epc_api_switches_the_outlet_counted_from_one(lab):
    """GET /ov.html?cmd=1&p=20&s=0 cuts the 20th ONU's power and statusjsn.js shows outputs[19].state 0; s=1
    powers it on and the state reads 1."""
    code, _, _ = lab.digest("GET", "/ov.html?cmd=1&p=20&s=0")
    assert code == 200
    assert lab.onu_state(TWENTIETH) == "disabled"
    code, _, body = lab.digest("GET", "/statusjsn.js?components=1")
    outputs = json.loads(body)["outputs"]
    assert (code, len(outputs), outputs[19]["state"], outputs[18]["state"]) == (200, 33, 0, 1)
    lab.digest("GET", "/ov.html?cmd=1&p=20&s=1")
    assert lab.onu_state(TWENTIETH) == "enabled"
    assert json.loads(lab.digest("GET", "/statusjsn.js?components=1")[2])["outputs"][19]["state"] == 1


def test_the_epc_api_takes_basic_credentials_as_the_real_switch(lab):
    """The real Expert Power Control takes Basic authentication: the right user and password switch, a wrong
    password is 401 and switches nothing."""
    good = base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()
    bad = base64.b64encode(f"{USER}:wrong".encode()).decode()
    assert lab.send("GET", "/ov.html?cmd=1&p=20&s=0", headers={"Authorization": f"Basic {bad}"})[0] == 401
    assert lab.onu_state(TWENTIETH) == "enabled"
    assert lab.send("GET", "/ov.html?cmd=1&p=20&s=0", headers={"Authorization": f"Basic {good}"})[0] == 200
    assert lab.onu_state(TWENTIETH) == "disabled"


def test_no_credentials_get_a_digest_challenge_and_switch_nothing(lab):
    """A request without credentials is 401 with a Digest challenge (realm, qop auth, MD5, a nonce) and changes
    nothing."""
    code, got, body = lab.send("PUT", "/restapi/relay/outlets/=19/state/", b"value=false", DLI)
    assert code == 401
    challenge = got.getRawHeaders(b"www-authenticate")[0].decode()
    params = parse_auth_params(challenge.partition(" ")[2])
    assert challenge.startswith("Digest ")
    assert (params["realm"], params["qop"], params["algorithm"]) == ("oltsim power switch", "auth", "MD5")
    assert len(params["nonce"]) == 32
    assert json.loads(body)["code"] == 16  # UNAUTHENTICATED
    assert lab.onu_state(TWENTIETH) == "enabled"


def test_a_wrong_password_is_refused_and_switches_nothing(lab):
    """A Digest answer computed with a wrong password is 401 and the ONU keeps its power."""
    code, got, _ = lab.digest("PUT", "/restapi/relay/outlets/=19/state/", b"value=false", DLI, password="12345")
    assert code == 401
    assert got.getRawHeaders(b"www-authenticate")[0].startswith(b"Digest ")
    assert lab.onu_state(TWENTIETH) == "enabled"
    assert lab.switch.outlet(20).on is True


def test_a_replayed_request_is_refused(lab):
    """The same Authorization (same nonce count) sent twice: the second is 401 and does nothing."""
    _, got, _ = lab.send("PUT", "/restapi/relay/outlets/=19/state/", b"value=false", DLI)
    signed = dict(DLI, Authorization=answer(got.getRawHeaders(b"www-authenticate")[0].decode(), "PUT",
                                            "/restapi/relay/outlets/=19/state/"))
    assert lab.send("PUT", "/restapi/relay/outlets/=19/state/", b"value=false", signed)[0] == 207
    lab.switch.outlet(20).on = True  # as if someone had switched it back: the replay must not cut it again
    lab.sim.olt.power_on_onu(TWENTIETH)
    assert lab.send("PUT", "/restapi/relay/outlets/=19/state/", b"value=false", signed)[0] == 401
    assert lab.onu_state(TWENTIETH) == "enabled"


def test_credentials_for_another_path_are_refused(lab):
    """An answer computed for another uri (outlet 0) does not switch outlet 19."""
    _, got, _ = lab.send("PUT", "/restapi/relay/outlets/=19/state/", b"value=false", DLI)
    signed = dict(DLI, Authorization=answer(got.getRawHeaders(b"www-authenticate")[0].decode(), "PUT",
                                            "/restapi/relay/outlets/=0/state/"))
    assert lab.send("PUT", "/restapi/relay/outlets/=19/state/", b"value=false", signed)[0] == 401
    assert lab.onu_state(TWENTIETH) == "enabled"


def test_the_olts_outlet_cuts_its_power_and_brings_it_back(lab):
    """Outlet 33 (DLI =32), after the 32 ONUs, is the OLT's: off is the OLT's reboot (deleted, its ONUs
    disabled), on brings it back initialized with a new heartbeat signature."""
    signature = lab.sim.olt.heartbeat_signature
    assert lab.digest("PUT", "/restapi/relay/outlets/=32/state/", b"value=false", DLI)[0] == 207
    assert lab.sim.rest.call("GET", "/v1/olt").json["InternalState"] == "deleted"
    assert {o.state for o in lab.sim.olt.onus} == {"disabled"}
    assert lab.digest("PUT", "/restapi/relay/outlets/=32/state/", b"value=true", DLI)[0] == 207
    assert lab.sim.rest.call("GET", "/v1/olt").json["InternalState"] == "initialized"
    assert lab.sim.olt.heartbeat_signature != signature


def test_the_mapping_is_shown(lab):
    """GET / (and /outlets) lists 33 outlets: the 20th feeds BBSM000a0104 (PON 1, ONU 4, DLI 19, EPC 20), the
    33rd the OLT."""
    for path in ("/", "/outlets"):
        code, _, body = lab.digest("GET", path)
        outlets = json.loads(body)["outlets"]
        assert code == 200 and len(outlets) == 33
        twentieth = outlets[19]
        assert (twentieth["outlet"], twentieth["dli"], twentieth["epc"], twentieth["device"], twentieth["serial"],
                twentieth["pon"], twentieth["onu"], twentieth["state"]) == (20, 19, 20, "onu", TWENTIETH, 1, 4, True)
        assert (outlets[32]["device"], outlets[32]["serial"]) == ("olt", lab.sim.olt.serial)


@pytest.mark.parametrize("method, uri, body, headers, status", [
    ("PUT", "/restapi/relay/outlets/=33/state/", b"value=false", DLI, 404),
    ("GET", "/restapi/relay/outlets/=999999999/state/", b"", {}, 404),
    ("GET", "/restapi/relay/outlets/=x/state/", b"", {}, 404),
    ("PUT", "/restapi/relay/outlets/=19/state/", b"value=maybe", DLI, 400),
    ("PUT", "/restapi/relay/outlets/=19/state/", b"", DLI, 400),
    ("PUT", "/restapi/relay/outlets/=19/state/", b"\xff\xfe", DLI, 400),
    ("PUT", "/restapi/relay/outlets/=19/state/", b"value=true&value=false", DLI, 400),
    ("PUT", "/restapi/relay/outlets/=19/state/", b"value=false", {}, 403),
    ("DELETE", "/restapi/relay/outlets/=19/state/", b"", DLI, 405),
    ("GET", "/ov.html?cmd=1&p=20&s=2", b"", {}, 400),
    ("GET", "/ov.html?cmd=1&p=x&s=0", b"", {}, 400),
    ("GET", "/nowhere", b"", {}, 404),
])
def test_bad_requests_get_their_status_and_change_nothing(lab, method, uri, body, headers, status):
    """An outlet the DLI API does not have is 404, a value other than true/false (or s other than 0/1) 400, a
    switch without X-CSRF 403, a wrong method 405; each answered with the JSON error body, nothing switched."""
    if status == 404 and uri == "/nowhere" or status == 405:
        code, _, answer_body = lab.send(method, uri, body, headers)  # no route: refused before authentication
    else:
        code, _, answer_body = lab.digest(method, uri, body, headers)
    assert code == status
    assert "message" in json.loads(answer_body)
    assert all(o.state == "enabled" for o in lab.sim.olt.onus)
    assert all(o.on for o in lab.switch.outlets)


def test_an_outlet_the_epc_does_not_have_is_a_harmless_answer(lab):
    """p=99 on a 33-outlet switch: 200 with the page, as the real switch answers, and nothing switched."""
    code, got, body = lab.digest("GET", "/ov.html?cmd=1&p=99&s=0")
    assert code == 200 and b"<table>" in body
    assert all(o.on for o in lab.switch.outlets)


def test_an_onu_not_yet_activated_keeps_its_state_but_the_relay_switches():
    """Before an adapter activated the ONUs, the outlet still reads off after a switch (a relay always switches),
    the ONU's state is left as it was (the shutdown use case refuses a created ONU), and the mapping says why."""
    lab = Switch(activated=False)
    assert lab.digest("PUT", "/restapi/relay/outlets/=19/state/", b"value=false", DLI)[0] == 207
    assert lab.digest("GET", "/restapi/relay/outlets/=19/state/")[2] == b"[false]"
    assert lab.onu_state(TWENTIETH) == "created"
    outlet = json.loads(lab.digest("GET", "/")[2])["outlets"][19]
    assert "only an enabled ONU can be shut down" in outlet["last"]


# ---- the Digest module alone ------------------------------------------------------------------------------

def test_a_stale_nonce_is_refused_with_stale_true():
    """A right answer to a nonce older than its lifetime is refused with stale=true (the client retries with
    the fresh nonce, asking nobody for the password again)."""
    clock = Clock()
    auth = DigestAuth("r", USER, PASSWORD, clock=clock, lifetime=10)
    header = answer(auth.challenge(), "GET", "/")
    clock.advance(11)
    verdict = auth.check("GET", "/", header)
    assert (verdict.ok, verdict.stale) == (False, True)
    assert "stale=true" in auth.challenge(stale=True)


def test_the_nonce_count_must_grow():
    """One nonce, nc 1 then 2: both accepted; nc 2 again is refused."""
    auth = DigestAuth("r", USER, PASSWORD, clock=Clock())
    challenge = auth.challenge()
    assert auth.check("GET", "/a", answer(challenge, "GET", "/a", nc=1)).ok
    assert auth.check("GET", "/a", answer(challenge, "GET", "/a", nc=2)).ok
    assert not auth.check("GET", "/a", answer(challenge, "GET", "/a", nc=2)).ok


def test_nonces_come_from_the_random_source():
    """The nonce of a challenge is the random source's bytes in hex."""
    auth = DigestAuth("r", USER, PASSWORD, clock=Clock(), random_bytes=lambda n: bytes(range(n)))
    assert 'nonce="000102030405060708090a0b0c0d0e0f"' in auth.challenge()


@pytest.mark.parametrize("header", [
    None, "", "Digest", "Digest ,,,", 'Digest username="admin"', "Bearer abc", "Digest username=\"a\" realm",
    'Digest username="admin", realm="r", nonce="n", uri="/", response="x", qop=auth-int, nc=00000001, cnonce="c"',
    'Digest username="admin", realm="r", nonce="n", uri="/", response="x", algorithm=SHA-256',
    'Digest username="admin", username="admin"', "Digest " + "a" * 5000, "Basic \xff",
])
def test_malformed_credentials_are_refused_without_raising(header):
    """Anything that is not well-formed Digest credentials of MD5 and qop auth is refused, never an exception."""
    auth = DigestAuth("r", USER, PASSWORD, clock=Clock())
    auth.challenge()
    assert auth.check("GET", "/", header).ok is False
    assert auth.check_basic(header).ok is False


def test_the_password_never_shows_in_repr():
    """repr() of the authenticator (as a log line might show it) names the realm and user, never the password."""
    assert "s3cret" not in repr(DigestAuth("r", USER, "s3cret", clock=Clock()))
