"""`GET /` on the REST ports (v1, v0, SADIS): a small index pointing to what the port serves and to the docs, as
JSON, or as HTML for a browser, instead of a 404."""

from __future__ import annotations

import json
import random

import pytest
from treq.testing import StubTreq
from twisted.internet.task import Clock

from conftest import BASE_URL, Sim, stub_request
from oltsim.api.index import DOCS
from oltsim.api.sadis import SadisRest
from oltsim.api.v0.usecases_v0 import V0Commands
from oltsim.api.v0.rest_v0 import V0Rest
from oltsim.api.v1.rest_v1 import V1Rest
from oltsim.config import load_settings
from oltsim.model.builder import build_olt


def get(resource, path: str, headers=None):
    """(status, headers, body) of one GET through StubTreq."""
    return stub_request(StubTreq(resource), BASE_URL + path, "GET", headers)


def resources():
    """Each REST surface's resource and the links its index must give."""
    sim = Sim()
    olt = build_olt(load_settings({"pon": 1, "onu": 1}, None), Clock(), random.Random(0))
    sadis = SadisRest(olt, olt_ip="0.0.0.0", bp_format="mef", advertised_host="bbsim", port=50074)
    return {
        "rest-v1": (V1Rest(sim.commands).resource(), {"/ui", "/v1/openapi.json"}),
        "rest-v0": (V0Rest(V0Commands(sim.olt)).resource(), {"/v0/openapi.json"}),
        "sadis": (sadis.resource(), {"/v1/cfg", "/v2/cfg"}),
    }


@pytest.mark.parametrize("surface", ["rest-v1", "rest-v0", "sadis"])
def test_the_bare_address_answers_an_index_as_json(surface):
    """GET / is 200 JSON naming the surface and linking the port's entry points and the docs."""
    resource, links = resources()[surface]
    code, headers, body = get(resource, "/")
    assert code == 200 and headers.getRawHeaders(b"Content-Type") == [b"application/json"]
    index = json.loads(body)
    assert index["service"] == f"oltsim {surface}" and index["docs"] == DOCS and index["version"]
    assert links <= set(index["links"].values())


@pytest.mark.parametrize("surface", ["rest-v1", "rest-v0", "sadis"])
def test_a_browser_gets_the_index_as_html_with_links(surface):
    """A client that accepts text/html (a browser) gets the same index as a page of links."""
    resource, links = resources()[surface]
    code, headers, body = get(resource, "/", headers={b"Accept": [b"text/html,application/xhtml+xml,*/*;q=0.8"]})
    assert code == 200 and headers.getRawHeaders(b"Content-Type")[0].startswith(b"text/html")
    page = body.decode("utf-8")
    assert all(f'<a href="{link}">' in page for link in links) and "/usr/share/doc/oltsim" in page
