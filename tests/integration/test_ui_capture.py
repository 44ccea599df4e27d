"""/ui's "download capture" links in headless Chromium against the whole simulator in this process, as
tests/integration/test_ui.py runs it: the header's link is the whole ring and an ONU's panel's link that ONU's
frames (GET /v1/capture?...&since=all&duration=0, a snapshot, never an endless stream); what they point at is
pcapng with the right filter, and a click saves it, with the access token the page holds."""
from __future__ import annotations

import time
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest_twisted
import treq
from twisted.internet.threads import deferToThread

from test_adapter import start_oltsim, stop_oltsim
from test_grpc_capture import packets
from test_ui import TOKEN, WAIT, Page, chrome, serials_of  # noqa: F401 - chrome is the fixture

ENABLED = "enabled"


def saved_file(directory: Path, timeout: float = WAIT) -> Path:
    """The one finished download in `directory` (Chromium writes .crdownload until done), waited for (bounded)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        done = [p for p in directory.iterdir() if not p.name.endswith(".crdownload")]
        if done and not any(p.name.endswith(".crdownload") for p in directory.iterdir()):
            assert len(done) == 1, done
            return done[0]
        time.sleep(0.05)
    raise AssertionError(f"no download finished in {directory} within {timeout:g} s")


@pytest_twisted.inlineCallbacks
def test_the_capture_links_download_the_ring_and_one_onus_frames(tmp_path, chrome):  # noqa: F811
    """With a token: the header's link is /v1/capture?since=all&duration=0 and the selected ONU's is the same with
    onu=<serial>; fetched with the token they are pcapng, the ONU's holding only its own interfaces, the NNI (its
    frames) and events, the OLT's every ONU's; clicked, each is saved as an oltsim-....pcapng file with the same
    packets, the page sending the token a plain link could not."""
    sim = start_oltsim(tmp_path, "--pon", "1", "--onu", "2", "--uni", "1", "--delay", "0", "--adapter", "builtin",
                       "--api-token", TOKEN)
    downloads = tmp_path / "downloads"
    downloads.mkdir()
    page = Page(chrome)
    headers = {"Authorization": f"Bearer {TOKEN}"}
    try:
        def opened():
            chrome.execute_cdp_cmd("Browser.setDownloadBehavior", {"behavior": "allow",
                                                                   "downloadPath": str(downloads)})
            page.open(sim.rest + "/ui")
            page.js("sessionStorage.setItem('oltsim.ui.token', arguments[0])", TOKEN)
            chrome.refresh()
            page.until(lambda p: p.status() == "live" and p.legend().get(ENABLED) == 2, "2 ONUs enabled")
        yield deferToThread(opened)
        response = yield treq.get(sim.rest + "/v1/olt/onus", headers=headers, pool=sim.pool, timeout=10)
        serials = serials_of((yield treq.json_content(response)))
        serial = serials[1]

        def links():
            olt = chrome.find_element("id", "capture-olt").get_attribute("href")
            page.click_cell(serial)
            page.until(lambda p: p.js("return window.oltsimUi.selected()") == serial, f"{serial} selected")
            return olt, chrome.find_element("id", "capture-onu").get_attribute("href")
        olt_href, onu_href = yield deferToThread(links)
        assert olt_href == sim.rest + "/v1/capture?since=all&duration=0"
        assert urlsplit(onu_href).path == "/v1/capture"
        assert parse_qs(urlsplit(onu_href).query) == {"onu": [serial], "since": ["all"], "duration": ["0"]}

        fetched = {}
        for name, href in (("olt", olt_href), ("onu", onu_href)):
            refused = yield treq.get(href, pool=sim.pool, timeout=10)
            assert refused.code == 401
            yield treq.content(refused)
            response = yield treq.get(href, headers=headers, pool=sim.pool, timeout=10)
            assert response.code == 200
            assert response.headers.getRawHeaders("content-type") == ["application/x-pcapng"]
            fetched[name] = packets((yield treq.content(response)))
        onu_interfaces = {p[0] for p in fetched["onu"]}
        assert onu_interfaces == {f"{serial} omci", f"{serial} uni-0", "nni-0", "events"}
        assert all(f"serial={serial}" in p[3] for p in fetched["onu"] if p[0] == "nni-0")
        olt_interfaces = {p[0] for p in fetched["olt"]}
        assert {f"{s} omci" for s in serials} | {f"{s} uni-0" for s in serials} | {"nni-0"} <= olt_interfaces

        def clicked(element_id: str):
            for old in downloads.iterdir():
                old.unlink()
            page.click(element_id)
            path = saved_file(downloads)
            return path.name, path.read_bytes(), page.result()
        name, data, result = yield deferToThread(clicked, "capture-onu")
        # the serial as the capture filter holds it (the core folds serials to lower case)
        assert name.startswith(f"oltsim-{serial}-") and name.endswith(".pcapng")
        assert result == ("true", f"capture saved as {name}")
        saved = packets(data)
        assert {p[0] for p in saved} == onu_interfaces
        assert [p for p in saved if p[0] != "events"] == [p for p in fetched["onu"] if p[0] != "events"]
        name, data, _ = yield deferToThread(clicked, "capture-olt")
        assert name.startswith("oltsim-") and name.endswith(".pcapng")
        assert {p[0] for p in packets(data)} >= olt_interfaces - {"events"}
    finally:
        yield stop_oltsim(sim)
