"""With --api-token-file, `GET /` on REST v1 needs the token like every route (401 without it, as v0's `/`): the
index tells the version, which stays behind the token; only `GET /ui` (a page that holds no data) is served
without it (docs/security.md)."""
from __future__ import annotations

import http.client
import json

import pytest

from test_oltsimctl import CtlDaemon

TOKEN = "index-test-token"


@pytest.fixture(scope="module")
def secured(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("secured")
    (tmp_path / "token").write_text(TOKEN)
    daemon = CtlDaemon(tmp_path, "--pon", "1", "--onu", "1", "--api-token-file", str(tmp_path / "token"))
    try:
        daemon.wait_answering(401)
        yield daemon
    finally:
        daemon.close()


def get(daemon, path: str, surface: str = "rest-v1", token: str | None = None) -> tuple[int, bytes]:
    connection = http.client.HTTPConnection("127.0.0.1", daemon.ports[surface], timeout=10)
    try:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        connection.request("GET", path, headers=headers)
        response = connection.getresponse()
        return response.status, response.read()
    finally:
        connection.close()


def test_the_v1_index_needs_the_token_and_ui_does_not(secured):
    """GET / answers 401 without the token on v1 as on v0, 200 with the index and version with it; /ui is 200."""
    status, body = get(secured, "/")
    assert status == 401 and b"version" not in body
    assert get(secured, "/", surface="rest-v0")[0] == 401
    status, body = get(secured, "/", token=TOKEN)
    assert status == 200 and json.loads(body)["service"] == "oltsim rest-v1"
    assert get(secured, "/ui")[0] == 200
