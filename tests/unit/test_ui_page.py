"""GET /ui, the live view, served in memory through treq's StubTreq: one self-contained HTML page with the right content
type and cache headers (revalidated with its ETag), the model's alarm types filled in, and with an access token
set, served without it while every data path of the v1 listener still refuses a request that lacks it."""

from __future__ import annotations

import json
import re

import pytest
from treq.testing import StubTreq

from conftest import BASE_URL, Sim
from oltsim.api.ui import UI_PATH
from oltsim.api.v1.rest_v1 import EVENTS_PATH, OPENAPI_PATH, V1Rest, routes_for
from oltsim.prometheus import Metrics, with_metrics
from oltsim.model.alarms import ONU_ALARMS
from oltsim.serving.security import AccessToken, guard

TOKEN = "s3cret"
# A value for each path placeholder of the v1 route table.
SAMPLES = {"SerialNumber": "BBSM00000001", "OnuSerialNumber": "BBSM00000001", "AlarmType": "ONU_ALARM_LOS",
           "Status": "on", "PonPortId": "0", "InterfaceType": "pon", "InterfaceID": "0", "UniID": "0",
           "SubActionVal": "JOIN", "GroupAddress": "224.0.0.22", "VLAN": "55"}


def call(resource, method: str, path: str, headers=None):
    """(status, headers, body) of one request through StubTreq."""
    stub = StubTreq(resource)
    out = []
    d = stub.request(method, BASE_URL + path, headers=headers)
    d.addCallback(lambda r: stub.content(r).addCallback(lambda body: out.append((r.code, r.headers, body))))
    d.addErrback(out.append)
    stub.flush()
    assert out, f"{method} {path}: no answer"
    if not isinstance(out[0], tuple):
        out[0].raiseException()
    return out[0]


def header(headers, name: bytes) -> bytes | None:
    """The last value of a response header, or None."""
    values = headers.getRawHeaders(name)
    return values[-1] if values else None


def v1_listener(sim: Sim, token: AccessToken | None):
    """The v1 REST listener's resource as oltsim.tap composes it: the API with /metrics, behind the guard that
    leaves /ui open."""
    api = with_metrics(V1Rest(sim.commands, secured=token is not None).resource(), Metrics(sim.olt, sim.hub))
    return guard(api, token, "rest-v1", public=(UI_PATH,))


def test_ui_is_one_html_page_revalidated_on_every_load():
    """GET /ui answers 200 text/html (UTF-8) with Cache-Control no-cache, an ETag, a content security policy that
    allows only this origin and nosniff; the body is a whole HTML page with its canvas."""
    code, headers, body = call(v1_listener(Sim(), None), "GET", UI_PATH)
    assert code == 200
    assert header(headers, b"Content-Type") == b"text/html; charset=utf-8"
    assert header(headers, b"Cache-Control") == b"no-cache"
    assert re.fullmatch(rb'"[0-9a-f]{20}"', header(headers, b"ETag") or b"")
    policy = header(headers, b"Content-Security-Policy")
    assert b"default-src 'none'" in policy and b"connect-src 'self'" in policy
    assert header(headers, b"X-Content-Type-Options") == b"nosniff"
    text = body.decode("utf-8")
    assert text.startswith("<!DOCTYPE html>") and text.rstrip().endswith("</html>")
    assert '<canvas id="grid"' in text


def test_ui_needs_nothing_from_elsewhere():
    """The page names no external URL: no http(s) address, no src or href attribute, no import."""
    _, _, body = call(v1_listener(Sim(), None), "GET", UI_PATH)
    text = body.decode("utf-8")
    assert not re.search(r"https?://", text)
    assert not re.search(r"\b(src|href)\s*=", text)
    assert not re.search(r"\bimport\s*\(|@import", text)


def test_ui_lists_the_alarm_types_of_the_model():
    """The alarm select of the page is filled with the ONU alarm types the alarm endpoint accepts."""
    _, _, body = call(v1_listener(Sim(), None), "GET", UI_PATH)
    match = re.search(r'<script id="alarm-types" type="application/json">(.*?)</script>', body.decode("utf-8"))
    assert match is not None
    assert json.loads(match.group(1)) == list(ONU_ALARMS)


def test_ui_names_alarm_events_as_the_alarm_api_does():
    """The page gets {indication kind: alarm type} for every ONU alarm but onu_alarm_ind (whose status field names
    the type), so that an alarm event and GET /v1/olt/alarms name an alarm alike (dying_gasp_ind: DYING_GASP)."""
    _, _, body = call(v1_listener(Sim(), None), "GET", UI_PATH)
    match = re.search(r'<script id="alarm-kinds" type="application/json">(.*?)</script>', body.decode("utf-8"))
    assert match is not None
    kinds = json.loads(match.group(1))
    assert kinds["dying_gasp_ind"] == "DYING_GASP" and kinds["onu_itu_pon_stats_ind"] == "ONU_ITU_PON_STATS"
    assert "onu_alarm_ind" not in kinds
    assert set(kinds.values()) == {name for name, (kind, _, _) in ONU_ALARMS.items() if kind != "onu_alarm_ind"}


def test_ui_answers_304_to_its_own_etag_and_head_without_a_body():
    """A browser revalidating with the page's ETag gets 304 and no body; HEAD gets the headers alone."""
    resource = v1_listener(Sim(), None)
    _, headers, body = call(resource, "GET", UI_PATH)
    etag = header(headers, b"ETag")
    code, _, again = call(resource, "GET", UI_PATH, headers={b"If-None-Match": [etag]})
    assert code == 304 and again == b""
    code, _, stale = call(resource, "GET", UI_PATH, headers={b"If-None-Match": [b'"0000"']})
    assert code == 200 and stale == body
    code, headers, empty = call(resource, "HEAD", UI_PATH)
    assert code == 200 and empty == b"" and header(headers, b"Content-Type") == b"text/html; charset=utf-8"


def test_ui_is_read_only():
    """Only GET and HEAD are routed on /ui: POST is 405 with the JSON error body."""
    code, _, body = call(v1_listener(Sim(), None), "POST", UI_PATH)
    assert code == 405
    assert json.loads(body)["code"] == 12


def test_ui_is_served_without_the_token():
    """With an access token set, GET and HEAD /ui are served to a request without it."""
    resource = v1_listener(Sim(), AccessToken(TOKEN))
    for method in ("GET", "HEAD"):
        code, headers, _ = call(resource, method, UI_PATH)
        assert code == 200, method
        assert header(headers, b"Content-Type") == b"text/html; charset=utf-8"


def data_requests():
    """(method, path) of every v1 route (placeholders filled), the event stream, the document and /metrics."""
    out = [("GET", EVENTS_PATH), ("GET", OPENAPI_PATH), ("GET", "/metrics")]
    for route in routes_for("extended"):
        out.append((route.method, re.sub(r"\{(\w+)\}", lambda m: SAMPLES[m.group(1)], route.path)))
    return out


@pytest.mark.parametrize("method,path", data_requests())
def test_every_data_path_still_needs_the_token(method, path):
    """Opening /ui opens nothing else: every route of the v1 listener refuses a request without the token (401) and
    serves it with the token."""
    sim = Sim()
    resource = v1_listener(sim, AccessToken(TOKEN))
    code, headers, body = call(resource, method, path)
    assert code == 401, (method, path, code)
    assert header(headers, b"WWW-Authenticate") == b'Bearer realm="oltsim"'
    assert json.loads(body)["code"] == 16
    if path != EVENTS_PATH:  # the event stream with the token never ends by itself
        code, _, _ = call(resource, method, path, headers={b"Authorization": [f"Bearer {TOKEN}".encode()]})
        assert code != 401, (method, path)


@pytest.mark.parametrize("method,path", [("POST", UI_PATH), ("DELETE", UI_PATH), ("GET", UI_PATH + "/"),
                                         ("GET", UI_PATH + "/x"), ("GET", "/UI"), ("GET", UI_PATH + ".html")])
def test_only_get_and_head_of_exactly_ui_pass_without_the_token(method, path):
    """Other methods on /ui and paths that merely resemble it still need the token."""
    code, _, _ = call(v1_listener(Sim(), AccessToken(TOKEN)), method, path)
    assert code == 401, (method, path)
