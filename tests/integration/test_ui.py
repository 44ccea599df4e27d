"""The live view (GET /ui) in headless Chromium against the whole simulator in this process, on loopback.

oltsim runs on the reactor (tests/integration/test_adapter.py's `start_oltsim`); the browser (Selenium driving
Debian's `chromium` and `chromium-driver`, installed by `headless.ensure_chromium` when missing, the test skipped
with the reason when that cannot be done) and the scripted adapter that brings the ONUs up are blocking, so each
runs on a thread (`deferToThread`) while the reactor serves them. What the tests check is read from the page as it
is drawn: the colour at the centre of an ONU's canvas cell (read back from the canvas), the legend's counts, the
panel's texts; REST is asked the same questions over the real port. Every wait is bounded.
"""
from __future__ import annotations

import os
import random
import re
import socket
import time

import pytest
import pytest_twisted
import treq
from twisted.internet import reactor
from twisted.internet.defer import inlineCallbacks
from twisted.internet.task import deferLater
from twisted.internet.threads import deferToThread

from oltsim.api.eventtypes import CHATTY_TYPES

from headless import BrowserUnavailable, start_driver
from scripted_adapter import ScriptedAdapter
from test_adapter import start_oltsim, stop_oltsim

WAIT = 30.0            # seconds any one thing the page should show may take
TOKEN = "ui-s3cret"
CREATED, ENABLED, DISABLED = "created", "enabled", "disabled"


@pytest.fixture
def chrome():
    """A headless Chromium driven by Selenium (1280x900), quit after the test; skips when Chromium cannot be had."""
    try:
        driver = start_driver(1280, 900)
    except BrowserUnavailable as exc:
        pytest.skip(str(exc))
    try:
        yield driver
    finally:
        driver.quit()


class Page:
    """The /ui page in the browser, read and clicked through its `window.oltsimUi` hooks and elements.
    Blocking: call it from a thread."""

    def __init__(self, driver):
        from selenium.webdriver.support.ui import WebDriverWait
        self.driver = driver
        self.wait = WebDriverWait(driver, WAIT, poll_frequency=0.05)

    def open(self, url: str) -> None:
        """Load `url` (blocks until the document has loaded)."""
        self.driver.get(url)

    def js(self, script: str, *args):
        """The value of `script` run in the page with `args` (arguments[0], ...)."""
        return self.driver.execute_script(script, *args)

    def until(self, condition, what: str):
        """Wait (at most WAIT s) until `condition(page)` is truthy; returns its value."""
        from selenium.common.exceptions import TimeoutException
        try:
            return self.wait.until(lambda _: condition(self))
        except TimeoutException:
            raise AssertionError(f"the page did not show {what} within {WAIT:g} s "
                                 f"(stream: {self.status()}, counts: {self.counts()})") from None

    def status(self) -> str:
        """The event stream's state as the header shows it: connecting, live, reconnecting, error or token."""
        return self.js("return document.getElementById('stream-status').dataset.state")

    def counts(self) -> dict:
        """ONUs per internal state as the page holds them."""
        return self.js("return window.oltsimUi ? window.oltsimUi.counts() : {}")

    def legend(self) -> dict[str, int]:
        """state -> count as the legend shows it (only the states some ONU is in)."""
        return self.js("return Object.fromEntries(Array.from(document.querySelectorAll('#legend li[data-state]'), "
                       "(li) => [li.dataset.state, Number(li.dataset.count)]))")

    def legend_marks(self) -> dict[str, int]:
        """mark (down, alarm) -> count of ONUs drawn with it, as the legend shows it."""
        return self.js("return Object.fromEntries(Array.from(document.querySelectorAll('#legend li[data-mark]'), "
                       "(li) => [li.dataset.mark, Number(li.dataset.count)]))")

    def cell_color(self, serial: str) -> str | None:
        """The colour drawn at the centre of the ONU's cell, read back from the canvas."""
        return self.js("return window.oltsimUi.cellColor(arguments[0])", serial)

    def color_of(self, state: str) -> str:
        """The colour the page draws `state` with."""
        return self.js("return window.oltsimUi.stateColor(arguments[0])", state)

    def drawn_states(self, serials) -> dict[str, str]:
        """serial -> the state whose colour is drawn in its cell (or the colour itself, if it is no known state)."""
        colors = self.js("const ui = window.oltsimUi; return arguments[0].map((s) => ui.cellColor(s));", serials)
        palette = {self.color_of(state): state for state in (CREATED, "initialized", "discovered", ENABLED,
                                                             DISABLED, "pon_disabled")}
        return {serial: palette.get(color, color) for serial, color in zip(serials, colors)}

    def click_cell(self, serial: str) -> None:
        """A real pointer click at the centre of the ONU's cell on the canvas."""
        from selenium.webdriver.common.action_chains import ActionChains
        canvas = self.driver.find_element("id", "grid")
        self.js("arguments[0].scrollIntoView({block: 'center'})", canvas)
        center = self.js("return window.oltsimUi.cellCenter(arguments[0])", serial)
        assert center is not None, f"{serial} has no cell"
        ActionChains(self.driver).move_to_element_with_offset(canvas, int(center["dx"]), int(center["dy"])) \
            .click().perform()

    def click(self, element_id: str) -> None:
        """Click the element with this id."""
        self.driver.find_element("id", element_id).click()

    def text(self, element_id: str) -> str:
        """The visible text of the element with this id."""
        return self.driver.find_element("id", element_id).text

    def result(self) -> tuple[str | None, str]:
        """(data-ok: "true", "false" or None before any action, text) of the panel's action result."""
        element = self.driver.find_element("id", "action-result")
        return element.get_attribute("data-ok"), element.text


def serials_of(onus: dict) -> list[str]:
    """The serials of a GET /v1/olt/onus answer, in its order."""
    return [onu["SerialNumber"] for onu in onus["items"]]


@pytest_twisted.inlineCallbacks
def test_cells_follow_bring_up_and_a_click_powers_an_onu_off(tmp_path, chrome):
    """Opened before the adapter connects, the page shows every ONU created; as the adapter brings them up the
    cells change colour to enabled (legend and REST agree); clicking a cell selects that ONU (its record in the
    panel); Power on of an ONU that is on shows the API's refusal, Power off turns its cell to the disabled colour
    (REST agrees), an alarm raised from the panel shows in the alarm list, and Power on brings the cell back to
    enabled."""
    sim = start_oltsim(tmp_path, "--pon", "2", "--onu", "4", "--delay", "300")
    adapter = ScriptedAdapter(sim.openolt)
    page = Page(chrome)
    try:
        serials = serials_of((yield sim.get("/v1/olt/onus")))
        assert len(serials) == 8
        target = serials[5]

        def before():
            page.open(sim.rest + "/ui")
            page.until(lambda p: p.status() == "live" and sum(p.counts().values()) == 8, "the 8 ONUs")
            page.until(lambda p: set(p.drawn_states(serials).values()) == {CREATED}, "every cell created")
            return page.legend()
        legend = yield deferToThread(before)
        assert legend == {CREATED: 8}   # no entry for the states no ONU is in
        assert page.text("olt-serial") == "BBSIM_OLT_0"

        bring_up = deferToThread(adapter.bring_up, 8)

        def during():
            seen = page.until(lambda p: {s for s, state in p.drawn_states(serials).items() if state != CREATED},
                              "a cell leaving created")
            page.until(lambda p: set(p.drawn_states(serials).values()) == {ENABLED}, "every cell enabled")
            return seen, page.legend(), page.text("olt-oper"), page.text("pon-summary")
        seen, legend, olt_oper, pons = yield deferToThread(during)
        yield bring_up
        assert seen <= set(serials)
        assert legend == {ENABLED: 8}
        assert olt_oper == "up" and pons == "2 (2 up)"
        onus = yield sim.get("/v1/olt/onus")
        assert {onu["InternalState"] for onu in onus["items"]} == {ENABLED}

        def power_off():
            page.click_cell(target)
            page.until(lambda p: p.js("return window.oltsimUi.selected()") == target, f"{target} selected")
            page.until(lambda p: f'"SerialNumber": "{target}"' in p.js(
                "return document.getElementById('onu-json').textContent"), f"the record of {target}")
            page.click("power-on")  # it is on already: the API's refusal is shown
            page.until(lambda p: p.result()[0] is not None, "the power-on refusal")
            refused = page.result()
            page.click("power-off")
            page.until(lambda p: p.result()[0] is not None and p.result() != refused, "the power-off result")
            result = page.result()
            page.until(lambda p: p.drawn_states([target])[target] == DISABLED, f"{target} drawn disabled")
            # powered off it is oper down and its dying gasp and LOS are active: the band and the corner
            page.until(lambda p: p_marks(p, target) == {"alarm": True, "down": True}, f"{target}'s marks")
            others = page.drawn_states([s for s in serials if s != target])
            unmarked = {s: p_marks(page, s) for s in serials if s != target}
            return refused, result, others, page.legend(), unmarked, page.text("onu-fields")
        code, body = yield sim.request("POST", f"/v1/olt/onus/{target}")  # what the API says to powering on an ONU
        assert code >= 400                                                 # that is on (and changes nothing)
        refused, result, others, legend, unmarked, fields = yield deferToThread(power_off)
        assert refused == ("false", f"power on failed: {code}: {body['message']}")
        assert result == ("true", f"power off: ONU {target} successfully shut down.")
        assert set(others.values()) == {ENABLED}
        assert all(marks == {"alarm": False, "down": False} for marks in unmarked.values()), unmarked
        assert "Active alarms DYING_GASP, ONU_ALARM_LOS" in fields
        assert legend == {DISABLED: 1, ENABLED: 7}
        onu = yield sim.get(f"/v1/olt/onus/{target}")
        assert onu["InternalState"] == DISABLED and onu["OperState"] == "down"

        def alarm_and_power_on():
            from selenium.webdriver.support.ui import Select
            Select(chrome.find_element("id", "alarm-type")).select_by_value("ONU_ALARM_LOB")
            page.click("alarm-raise")
            page.until(lambda p: f"{target} ONU_ALARM_LOB on" in p.text("alarm-log"),
                       "the raised alarm in the alarm list")
            alarm_result = page.result()
            page.click("power-on")
            page.until(lambda p: p.drawn_states([target])[target] == ENABLED, f"{target} drawn enabled again")
            # powered on: LOS cleared, the dying gasp over (the OLT clears it without an event), LOB still on
            page.until(lambda p: "Active alarms ONU_ALARM_LOB" in p.text("onu-fields"), "LOB alone active")
            return alarm_result, page.result(), p_marks(page, target)
        alarm_result, on_result, marks = yield deferToThread(alarm_and_power_on)
        assert marks == {"alarm": True, "down": False}
        alarms = yield sim.get("/v1/olt/alarms")
        assert [(a["onu_serial"], a["type"]) for a in alarms["active"]] == [(target, "ONU_ALARM_LOB")]
        assert alarm_result == ("true", "raise ONU_ALARM_LOB: Onu Alarm Indication Sent.")
        assert on_result == ("true", f"power on: ONU {target} successfully powered on.")
        onu = yield sim.get(f"/v1/olt/onus/{target}")
        assert onu["InternalState"] == ENABLED
    finally:
        yield stop_oltsim(sim, adapter)


@pytest_twisted.inlineCallbacks
def test_page_asks_for_the_token_and_works_with_it(tmp_path, chrome):
    """With an access token set, /ui loads without it and asks for it (a wrong one is refused); with the right one
    the page shows the ONUs live and powers one off, while REST and the event stream still answer 401 to requests
    without the token; a reload of the tab keeps the token."""
    sim = start_oltsim(tmp_path, "--pon", "1", "--onu", "4", "--delay", "0", "--api-token", TOKEN)
    adapter = ScriptedAdapter(sim.openolt)
    page = Page(chrome)
    try:
        def asked():
            page.open(sim.rest + "/ui")
            page.until(lambda p: p.status() == "token", "the token request")
            dialog = chrome.find_element("id", "token-dialog")
            shown = dialog.is_displayed(), page.text("token-reason")
            chrome.find_element("id", "token-input").send_keys("not-the-token")
            page.click("token-submit")
            page.until(lambda p: p.text("token-reason") == "The access token was refused.", "the refusal")
            return shown, dialog.is_displayed()
        (shown, reason), still = yield deferToThread(asked)
        assert shown and reason == "This oltsim needs an access token." and still

        def entered():
            chrome.find_element("id", "token-input").send_keys(TOKEN)
            page.click("token-submit")
            page.until(lambda p: p.status() == "live" and sum(p.counts().values()) == 4, "the 4 ONUs")
            return chrome.find_element("id", "token-dialog").is_displayed()
        visible = yield deferToThread(entered)
        assert not visible

        yield deferToThread(adapter.bring_up, 4)
        serial = "BBSM00000003"

        def power_off():
            page.until(lambda p: p.legend().get(ENABLED) == 4, "4 ONUs enabled")
            page.click_cell(serial)
            page.until(lambda p: p.js("return window.oltsimUi.selected()") == serial, f"{serial} selected")
            page.click("power-off")
            page.until(lambda p: p.drawn_states([serial])[serial] == DISABLED, f"{serial} drawn disabled")
            return page.result()
        result = yield deferToThread(power_off)
        assert result[0] == "true"

        for path in ("/v1/olt", "/v1/olt/onus", f"/v1/olt/onus/{serial}", "/v1/events", "/metrics"):
            code, body = yield sim.request("GET", path)
            assert code == 401 and body["code"] == 16, path
        code, _ = yield sim.request("POST", f"/v1/olt/onus/{serial}")
        assert code == 401
        onu = yield get_with_token(sim, f"/v1/olt/onus/{serial}")
        assert onu["InternalState"] == DISABLED

        def reload():
            chrome.refresh()
            page.until(lambda p: p.status() == "live" and sum(p.counts().values()) == 4, "the ONUs after a reload")
            # The cells are painted on an animation frame after the counts: wait for the paint, not for a state.
            page.until(lambda p: p.drawn_states([serial])[serial] is not None, f"{serial} painted after a reload")
            return chrome.find_element("id", "token-dialog").is_displayed(), page.drawn_states([serial])[serial]
        dialog, state = yield deferToThread(reload)
        assert not dialog and state == DISABLED
    finally:
        yield stop_oltsim(sim, adapter)


@inlineCallbacks
def get_with_token(sim, path: str):
    """The decoded JSON of one GET over the real port with the token."""
    response = yield treq.get(sim.rest + path, headers={"Authorization": f"Bearer {TOKEN}"}, pool=sim.pool,
                              timeout=10)
    assert response.code == 200
    return (yield treq.json_content(response))


@pytest_twisted.inlineCallbacks
def test_page_reconnects_and_reads_what_it_missed(tmp_path, chrome):
    """When the event stream ends (the bus closes every reader), the page says it is reconnecting, opens the
    stream again and reads the state afresh: an ONU powered off right after the stream ended (while the page waits
    to reconnect) is drawn disabled."""
    sim = start_oltsim(tmp_path, "--pon", "1", "--onu", "2", "--delay", "0")
    adapter = ScriptedAdapter(sim.openolt)
    page = Page(chrome)
    serial = "BBSM00000002"
    try:
        yield deferToThread(adapter.bring_up, 2)

        def opened():
            page.open(sim.rest + "/ui")
            page.until(lambda p: p.status() == "live" and p.legend().get(ENABLED) == 2, "2 ONUs enabled")
            page.js("window.__states = []; new MutationObserver(() => window.__states.push("
                    "document.getElementById('stream-status').dataset.state)).observe("
                    "document.getElementById('stream-status'), {attributes: true});")
        yield deferToThread(opened)

        sim.top.bus.close_all()
        code, _ = yield sim.request("DELETE", f"/v1/olt/onus/{serial}")
        assert code == 200

        def recovered():
            page.until(lambda p: p.drawn_states([serial])[serial] == DISABLED, f"{serial} drawn disabled")
            page.until(lambda p: p.status() == "live", "the stream live again")
            return page.js("return window.__states")
        states = yield deferToThread(recovered)
        assert "reconnecting" in states and states[-1] == "live"
    finally:
        yield stop_oltsim(sim, adapter)


@pytest_twisted.inlineCallbacks
def test_page_reads_the_state_again_when_events_were_dropped(tmp_path, chrome):
    """When its reader could not keep up (the stream paused by its transport, events dropped and counted), the page
    sees the count grow on the next event it gets and reads the whole state again: an ONU whose power-off events
    were all dropped is drawn disabled."""
    from oltsim.api.v1.rest_v1 import EventStream
    sim = start_oltsim(tmp_path, "--pon", "1", "--onu", "2", "--delay", "0")
    adapter = ScriptedAdapter(sim.openolt)
    page = Page(chrome)
    serial, other = "BBSM00000001", "BBSM00000002"
    try:
        yield deferToThread(adapter.bring_up, 2)

        def opened():
            page.open(sim.rest + "/ui")
            page.until(lambda p: p.status() == "live" and p.legend().get(ENABLED) == 2, "2 ONUs enabled")
        yield deferToThread(opened)

        streams = [sub.deliver.__self__ for sub in sim.top.bus.subscriptions
                   if isinstance(getattr(sub.deliver, "__self__", None), EventStream)]
        assert len(streams) == 1
        stream = streams[0]
        stream.pauseProducing()  # what the transport does while the browser does not read
        code, _ = yield sim.request("DELETE", f"/v1/olt/onus/{serial}")
        assert code == 200
        stream.resumeProducing()
        assert stream.sub.dropped > 0
        code, _ = yield sim.request("POST", f"/v1/olt/onus/{other}/alarms/ONU_ALARM_LOS/on")
        assert code == 200

        def redrawn():
            page.until(lambda p: p.drawn_states([serial])[serial] == DISABLED, f"{serial} drawn disabled")
            return page.drawn_states([other])[other]
        assert (yield deferToThread(redrawn)) == ENABLED
    finally:
        yield stop_oltsim(sim, adapter)


@pytest_twisted.inlineCallbacks
def test_alarms_raised_before_the_page_opened_are_marked_until_cleared(tmp_path, chrome):
    """Alarms raised before the page is opened (an ONU's LOS, NNI 0's LOS, PON 1's LOS) are read with the page
    (GET /v1/olt/alarms): the ONU's cell carries the alarm corner (read back from the canvas) and no other cell does,
    the NNI's chip and the PON's row label carry the mark, the alarm list names each port and ONU, active and in
    the history since start. Cleared through REST, every mark goes and the list shows the clears. The legend has no
    entry for a state no ONU is in, and packet indications are received but not listed until chosen (no adapter: the ONUs stay created)."""
    from oltsim.model import events
    sim = start_oltsim(tmp_path, "--pon", "2", "--onu", "2", "--delay", "0")
    page = Page(chrome)
    serial, others = "BBSM00000002", ["BBSM00000001", "BBSM00000101", "BBSM00000102"]
    raise_paths = [f"/v1/olt/onus/{serial}/alarms/ONU_ALARM_LOS/on", "/v1/olt/ports/nni/0/alarms/los/on",
                   "/v1/olt/ports/pon/1/alarms/los/on"]
    try:
        for path in raise_paths:
            code, _ = yield sim.request("POST", path)
            assert code == 200, path

        def opened():
            page.open(sim.rest + "/ui")
            page.until(lambda p: p.status() == "live" and sum(p.counts().values()) == 4, "the 4 ONUs")
            page.until(lambda p: (p.js("return window.oltsimUi.cellMarks(arguments[0])", serial) or {}).get("alarm"),
                       f"the alarm mark on {serial}")
            page.until(lambda p: p.js("return window.oltsimUi.ponMarked(1)"), "the alarm mark on PON 1")
            page.until(lambda p: len(p.text("alarm-active").splitlines()) == 3, "the 3 active alarms listed")
            marks = {s: p_marks(page, s)["alarm"] for s in others}
            return (marks, p_nni(page), page.js("return window.oltsimUi.ponMarked(0)"), page.text("alarm-active"),
                    page.text("alarm-log"), page.text("alarm-total"), page.legend_marks())
        marks, nni, pon0, active, history, total, legend_marks = yield deferToThread(opened)
        assert marks == {s: False for s in others}
        assert nni[0] == "OLT_NNI_LOS" and re.fullmatch(r"NNI 0 (up|down) · LOS", nni[1]) and pon0 is False
        assert f"{serial} ONU_ALARM_LOS active" in active
        assert "NNI 0 OLT_NNI_LOS active" in active and "PON 1 OLT_PON_LOS active" in active
        assert "NNI 0 OLT_NNI_LOS on" in history and f"{serial} ONU_ALARM_LOS on" in history
        assert total == "3" and legend_marks.get("alarm") == 1

        for index in range(3):   # what the packet engine emits for a packet to the adapter (an EAPOL start)
            sim.olt.emit(events.PacketIndication("pon", 0, bytes.fromhex("0180c2000003") + bytes(12), 1, 0, 1024,
                                                 index))

        for path in raise_paths:
            code, _ = yield sim.request("POST", path[:-len("on")] + "off")
            assert code == 200, path

        def cleared():
            page.until(lambda p: not p_marks(p, serial)["alarm"], f"the mark on {serial} gone")
            page.until(lambda p: not p.js("return window.oltsimUi.ponMarked(1)"), "the mark on PON 1 gone")
            page.until(lambda p: p_nni(p)[0] == "", "the mark on NNI 0 gone")
            page.until(lambda p: "PON 1 OLT_PON_LOS off" in p.text("alarm-log") and not p.text("alarm-active"),
                       "the clears in the list")
            return (page.text("alarm-active"), page.text("alarm-log"), page.text("alarm-total"),
                    page.legend_marks(), p_nni(page))
        active, history, total, legend_marks, nni = yield deferToThread(cleared)
        assert active == "" and total == "0" and "alarm" not in legend_marks
        assert "NNI 0 OLT_NNI_LOS off" in history and f"{serial} ONU_ALARM_LOS off" in history
        assert nni[0] == "" and re.fullmatch(r"NNI 0 (up|down)", nni[1])

        def listed():
            page.until(lambda p: p.legend() == {CREATED: 4}, "4 ONUs created and no other legend entry")
            page.until(lambda p: p.js("return window.oltsimUi.received()['packet-indication'] || 0") > 0,
                       "a packet indication received")
            page.until(lambda p: "OLT_PON_LOS off" in p.text("event-log"), "the clears in the event list")
            listed = page.js("return Array.from(document.querySelectorAll('#event-log li'), (li) => li.textContent)")
            page.click("type-summary")
            chrome.find_element("css selector", "#type-boxes input[value='packet-indication']").click()
            page.until(lambda p: "packet-indication" in p.text("event-log"), "packet indications once chosen")
            return listed, page.text("type-summary")
        listed, summary = yield deferToThread(listed)
        assert listed and not [line for line in listed if "packet-indication" in line]
        # the chatty types are listed, hidden, from the start (eventtypes.CHATTY_TYPES); packet-indication was chosen
        assert summary == f"types ({len(CHATTY_TYPES) - 1} hidden)"
        alarms = yield sim.get("/v1/olt/alarms")
        assert alarms["active"] == []
    finally:
        yield stop_oltsim(sim)


def p_marks(page: Page, serial: str) -> dict:
    """The marks drawn on the ONU's cell ({alarm, down}), read back from the canvas."""
    return page.js("return window.oltsimUi.cellMarks(arguments[0])", serial) or {"alarm": None, "down": None}


def p_nni(page: Page, nni: int = 0) -> tuple[str, str]:
    """(the alarm types the NNI's chip carries, its text)."""
    return tuple(page.js("const c = document.querySelector(`#nni-list [data-nni='${arguments[0]}']`); "
                         "return [c.dataset.alarm, c.textContent];", nni))


@pytest_twisted.inlineCallbacks
def test_the_running_scenario_and_its_step_are_shown_until_it_ends(tmp_path, chrome):
    """A scenario started over REST while the page is open appears in the header: its name, the step running and its
    target; when it ends (its step's duration over, the alarm it raised cleared) the header says it is done."""
    sim = start_oltsim(tmp_path, "--pon", "2", "--onu", "2", "--delay", "0")
    page = Page(chrome)
    text = ("name: ui-demo\nsteps:\n  - name: gasp\n    action: onu-alarm\n    alarm: ONU_ALARM_LOS\n"
            "    targets: {onu: BBSM00000002}\n    duration: 3s\n")
    try:
        def opened():
            page.open(sim.rest + "/ui")
            page.until(lambda p: p.status() == "live", "the event stream live")
            return page.js("return document.getElementById('scenario').hidden")
        hidden = yield deferToThread(opened)
        assert hidden is True  # no scenario yet: nothing shown
        response = yield treq.post(sim.rest + "/v1/scenario", data=text.encode(), pool=sim.pool, timeout=10)
        body = yield treq.json_content(response)
        assert response.code == 200, body

        def running():
            page.until(lambda p: p.js("return document.getElementById('scenario').dataset.state") == "running",
                       "the scenario shown running")
            page.until(lambda p: "gasp" in p.text("scenario-detail"), "its running step shown")
            return page.text("scenario-name"), page.text("scenario-detail")
        name, detail = yield deferToThread(running)
        assert name == "ui-demo" and "BBSM00000002" in detail and "onu-alarm" in detail, detail

        def ended():
            page.until(lambda p: p.js("return document.getElementById('scenario').dataset.state") == "done",
                       "the scenario shown done")
            return page.text("scenario-detail")
        detail = yield deferToThread(ended)
        assert "gasp" not in detail, detail
        code, alarms = yield sim.request("GET", "/v1/olt/alarms")
        assert code == 200 and alarms.get("active", []) == []
    finally:
        yield stop_oltsim(sim)


#: Installed before the page's own script: at every change of the header's alarm count (a MutationObserver runs
#: right after the frame that drew it), what the page shows in its panels then.
RENDER_PROBE = """
window.__renders = [];
document.addEventListener('DOMContentLoaded', () => {
  const total = document.getElementById('alarm-total');
  const count = (selector) => document.querySelectorAll(selector).length;
  new MutationObserver(() => {
    const received = window.oltsimUi ? window.oltsimUi.received() : {};
    const listed = Object.entries(received).filter(([type]) => !['packet-indication', 'port-stats'].includes(type))
      .reduce((sum, [, n]) => sum + n, 0);
    window.__renders.push({total: Number(total.textContent), active: count('#alarm-active li'),
                           history: count('#alarm-log li'), events: count('#event-log li'), listed});
  }).observe(total, {childList: true, characterData: true, subtree: true});
});
"""


def inconsistent(renders: list[dict]) -> list[dict]:
    """The renders whose panels disagree with the header: fewer active alarms listed than counted, no history
    while alarms are active, or fewer events listed than the page received (of the types listed, at most 200)."""
    return [r for r in renders if r["active"] != r["total"] or (r["total"] and not r["history"])
            or r["events"] != min(200, r["listed"])]


@pytest_twisted.inlineCallbacks
def test_panels_are_filled_whenever_the_header_counts_are(tmp_path, chrome):
    """Loaded six times in a row with 5 alarms active, then while alarms are raised and cleared one after the other
    through REST, every time the header shows a number of active alarms the Alarms panel lists as many, with their
    history, and the Events panel lists every event received (the lists used to wait up to 250 ms after the header:
    empty panels under `alarms active 5` in a shot taken then, about every other load)."""
    sim = start_oltsim(tmp_path, "--pon", "2", "--onu", "4", "--delay", "0")
    page = Page(chrome)
    serials = serials_of((yield sim.get("/v1/olt/onus")))
    try:
        for serial in serials[:5]:
            code, _ = yield sim.request("POST", f"/v1/olt/onus/{serial}/alarms/ONU_ALARM_LOS/on")
            assert code == 200
        chrome.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": RENDER_PROBE})

        def load():
            page.open(sim.rest + "/ui")
            page.until(lambda p: p.status() == "live" and p.text("alarm-total") == "5"
                       and p.js("return window.oltsimUi.drawn()"), "5 alarms active")
            return page.js("return window.__renders")
        for _ in range(6):
            renders = yield deferToThread(load)
            assert renders and renders[-1]["total"] == 5
            assert inconsistent(renders) == [], renders

        for status, total in (("on", "8"), ("off", "5")):   # one after the other, well within 250 ms
            for serial in serials[5:]:
                code, _ = yield sim.request("POST", f"/v1/olt/onus/{serial}/alarms/ONU_ALARM_LOB/{status}")
                assert code == 200
            yield deferToThread(page.until, lambda p, t=total: p.text("alarm-total") == t, f"{total} alarms")

        def settled():
            page.until(lambda p: p.text("alarm-total") == "5" and "ONU_ALARM_LOB off" in p.text("alarm-log")
                       and p.js("return window.oltsimUi.drawn()"), "the LOB alarms raised and cleared")
            return page.js("return window.__renders")
        renders = yield deferToThread(settled)
        assert max(r["total"] for r in renders) == 8
        assert inconsistent(renders) == [], renders
    finally:
        yield stop_oltsim(sim)


def progress_of(page: Page, serials) -> dict[str, list]:
    """serial -> the subscribers' squares drawn on its cell, each (drawn progress, the progress the page holds)."""
    drawn = page.js("return arguments[0].map((s) => window.oltsimUi.cellProgress(s))", serials)
    return {serial: [(pip["progress"], pip["expected"]) for pip in pips or []]
            for serial, pips in zip(serials, drawn)}


def legend_progress(page: Page) -> dict[str, int]:
    """progress -> how many services the legend counts with it."""
    return page.js("return Object.fromEntries(Array.from(document.querySelectorAll('#legend li[data-progress]'), "
                   "(li) => [li.dataset.progress, Number(li.dataset.count)]))")


@pytest_twisted.inlineCallbacks
def test_each_subscribers_eapol_and_dhcp_progress_is_marked_on_its_onu(tmp_path, chrome):
    """With TT's services (voip and vod need DHCP on each UNI), an ONU not yet serving carries no square; once the
    adapter enabled the ONUs each carries one square per such service, `waiting`; as the services' DHCP moves
    (driven in the model: done on one ONU, under way and failed on another) the squares drawn on the canvas follow,
    the legend counts the services per progress, the cell's tooltip and the ONU panel give each service's state,
    and a reload (the states read from GET /v1/olt/onus) draws the same."""
    from oltsim.model.onu import DHCP_MACHINE
    from oltsim.packets.common import advance
    sim = start_oltsim(tmp_path, "--pon", "1", "--onu", "3", "--uni", "1", "--services", "tt", "--delay", "0")
    adapter = ScriptedAdapter(sim.openolt)
    page = Page(chrome)
    serials = ["BBSM00000001", "BBSM00000002", "BBSM00000003"]
    try:
        def opened():
            page.open(sim.rest + "/ui")
            page.until(lambda p: p.status() == "live" and p.legend().get(CREATED) == 3, "3 ONUs created")
            return progress_of(page, serials)
        assert (yield deferToThread(opened)) == {serial: [] for serial in serials}

        yield deferToThread(adapter.bring_up, 3)
        waiting = [("waiting", "waiting")] * 2
        yield deferToThread(page.until, lambda p: progress_of(p, serials) == {s: waiting for s in serials},
                            "two waiting squares on each ONU")

        def dhcp(serial: str, service: str, *steps: str):
            target = next(s for s in sim.olt.onu_by_serial(serial).unis[0].services if s.name == service)
            for step in steps:
                advance(target, "dhcp_state", DHCP_MACHINE, step, "DhcpState")
        dhcp(serials[0], "voip", "start_dhcp", "dhcp_discovery_sent", "dhcp_request_sent", "dhcp_ack_received")
        dhcp(serials[1], "voip", "start_dhcp")
        dhcp(serials[1], "vod", "start_dhcp", "dhcp_failed")
        expected = {serials[0]: [("done", "done"), ("waiting", "waiting")],
                    serials[1]: [("progress", "progress"), ("failed", "failed")],
                    serials[2]: waiting}

        def followed():
            page.until(lambda p: progress_of(p, serials) == expected, "the squares following DHCP")
            tooltip = page.js("return window.oltsimUi.cellTooltip(arguments[0])", serials[1])
            page.click_cell(serials[1])
            page.until(lambda p: "UNI 0 vod" in p.text("onu-fields"), "the services in the ONU panel")
            return legend_progress(page), tooltip, page.text("onu-fields")
        legend, tooltip, fields = yield deferToThread(followed)
        assert legend == {"done": 1, "progress": 1, "failed": 1, "waiting": 3}
        assert tooltip.splitlines()[1:] == ["in progress · UNI 0 voip: DHCP dhcp_started",
                                            "failed · UNI 0 vod: DHCP dhcp_failed"], tooltip
        assert "UNI 0 voip DHCP dhcp_started" in fields and "UNI 0 vod DHCP dhcp_failed" in fields

        def reloaded():
            chrome.refresh()
            page.until(lambda p: p.status() == "live" and p.legend().get(ENABLED) == 3, "the ONUs after a reload")
            page.until(lambda p: progress_of(p, serials) == expected, "the same squares after a reload")
        yield deferToThread(reloaded)
    finally:
        yield stop_oltsim(sim, adapter)


@pytest_twisted.inlineCallbacks
def test_the_builtin_adapters_bring_up_ends_with_every_subscriber_done(tmp_path, chrome):
    """Opened before the built-in adapter brings 2x2 ONUs up (ATT: one hsia service per UNI, EAPOL then DHCP), the
    page ends with each ONU carrying four squares drawn `done`, as REST's EapolState and DhcpState say; without a
    data plane, no data plane section is shown."""
    sim = start_oltsim(tmp_path, "--pon", "2", "--onu", "2", "--delay", "0", "--adapter", "builtin")
    page = Page(chrome)
    try:
        def opened():
            page.open(sim.rest + "/ui")
            page.until(lambda p: p.status() == "live" and sum(p.counts().values()) == 4, "the 4 ONUs")
        yield deferToThread(opened)
        serials = serials_of((yield sim.get("/v1/olt/onus")))
        done = [("done", "done")] * 4
        yield deferToThread(page.until, lambda p: progress_of(p, serials) == {s: done for s in serials},
                            "every subscriber done")
        assert legend_progress(page) == {"done": 16}
        # no data plane (GET /v1/dataplane answers 409): its section is not shown
        assert (yield sim.request("GET", "/v1/dataplane"))[0] == 409
        assert page.js("return [window.oltsimUi.dataplane(), document.getElementById('dataplane-section').hidden]") \
            == [None, True]
        onus = yield sim.get("/v1/olt/onus")
        assert {(s["EapolState"], s["DhcpState"]) for onu in onus["items"] for uni in onu["unis"]
                for s in uni["services"]} == {("eap_response_success_received", "dhcp_ack_received")}
    finally:
        yield stop_oltsim(sim)


@pytest_twisted.inlineCallbacks
def test_a_pons_oper_mark_shows_it_down_while_it_is_dark(tmp_path, chrome):
    """A PON whose transceiver is pulled (DMI's plug-out) keeps OperState up in the API, as BBSim's, but is dark:
    its oper mark (read back from the canvas) turns red with its LOS badge and the header counts one PON fewer up;
    plugged in again it is green. A PON LOS raised through REST does the same until it is cleared."""
    sim = start_oltsim(tmp_path, "--pon", "2", "--onu", "2", "--delay", "0")
    adapter = ScriptedAdapter(sim.openolt)
    page = Page(chrome)

    def marks():
        return (page.js("return [window.oltsimUi.ponOper(0), window.oltsimUi.ponOper(1)]"),
                [page.js(f"return window.oltsimUi.ponMarked({pon})") for pon in (0, 1)], page.text("pon-summary"))
    try:
        yield deferToThread(adapter.bring_up, 4)

        def opened():
            page.open(sim.rest + "/ui")
            page.until(lambda p: p.status() == "live" and p.legend().get(ENABLED) == 4, "4 ONUs enabled")
            return marks()
        assert (yield deferToThread(opened)) == (["up", "up"], [False, False], "2 (2 up)")

        sim.olt.plug_out_transceiver(1)
        olt = yield sim.get("/v1/olt")
        assert [p["OperState"] for p in olt["PONPorts"]] == ["up", "up"]
        assert (yield deferToThread(page.until, lambda p: marks() == (["up", "down"], [False, True], "2 (1 up)"),
                                    "PON 1 down, with its LOS"))
        sim.olt.plug_in_transceiver(1)
        assert (yield deferToThread(page.until, lambda p: marks() == (["up", "up"], [False, False], "2 (2 up)"),
                                    "PON 1 up again"))

        for status, expected in (("on", (["down", "up"], [True, False], "2 (1 up)")),
                                 ("off", (["up", "up"], [False, False], "2 (2 up)"))):
            code, _ = yield sim.request("POST", f"/v1/olt/ports/pon/0/alarms/los/{status}")
            assert code == 200
            assert (yield deferToThread(page.until, lambda p, e=expected: marks() == e, f"PON 0 LOS {status}"))
    finally:
        yield stop_oltsim(sim, adapter)


#: Where the page's parts are, in CSS pixels: the window, the document, the grid's box and the two lists.
GEOMETRY = """
const box = (id) => { const r = document.getElementById(id).getBoundingClientRect();
                      return {top: r.top, bottom: r.bottom, left: r.left, right: r.right}; };
const grid = document.getElementById('grid-box');
return {height: window.innerHeight, document: document.documentElement.scrollHeight,
        grid: {...box('grid-box'), scroll: grid.scrollHeight, client: grid.clientHeight},
        canvas: box('grid'), events: box('events-section'), alarms: box('alarms-section'),
        cell: window.oltsimUi.layout().cell};
"""


@pytest.mark.parametrize("size, least_cell", [("1x1", 48), ("4x16", 36), ("16x32", 17)])
@pytest_twisted.inlineCallbacks
def test_the_page_fills_the_window(tmp_path, chrome, size, least_cell):
    """At 1x1, 4x16 and 16x32 in a 1280x900 window the page fits the window without scrolling, the grid shows every
    PON without a scroll bar with cells as large as the width allows, and the event and alarm lists take the
    height left down to the window's bottom (at 4x16 the lower half of the page was empty)."""
    pons, onus = size.split("x")
    sim = start_oltsim(tmp_path, "--pon", pons, "--onu", onus, "--delay", "0")
    page = Page(chrome)
    try:
        def measured():
            page.open(sim.rest + "/ui")
            page.until(lambda p: p.status() == "live" and sum(p.counts().values()) == int(pons) * int(onus)
                       and p.js("return window.oltsimUi.drawn()"), "every ONU drawn")
            return page.js(GEOMETRY)
        g = yield deferToThread(measured)
        assert g["document"] <= g["height"], g
        assert g["grid"]["scroll"] <= g["grid"]["client"] + 1, g
        assert g["cell"] >= least_cell, g
        for panel in ("events", "alarms"):
            assert g["height"] - 20 <= g[panel]["bottom"] <= g["height"], (panel, g)
        assert g["events"]["bottom"] - g["events"]["top"] >= 110, g
    finally:
        yield stop_oltsim(sim)


def tap_unavailable() -> str | None:
    """Why this process cannot make TAP interfaces, or None."""
    if os.geteuid() != 0:
        return "a data plane needs root (CAP_NET_ADMIN) for its TAP interfaces"
    if not os.path.exists("/dev/net/tun"):
        return "a data plane needs /dev/net/tun"
    return None


def without_ipv6(interface: str) -> None:
    """Keep the kernel's own IPv6 frames (router solicitations, MLD) off `interface`, so that only the test's frames
    count on it (no-op where IPv6 is off altogether)."""
    knob = f"/proc/sys/net/ipv6/conf/{interface}/disable_ipv6"
    if os.path.exists(knob):
        with open(knob, "w") as f:
            f.write("1")


def send_frames(interface: str, count: int, size: int = 60) -> None:
    """Send `count` broadcast frames of an experimental ethertype (0x88b5) out of `interface` (from the RG's side:
    into the simulator)."""
    frame = b"\xff" * 6 + bytes.fromhex("020000000001") + b"\x88\xb5"
    frame += bytes(size - len(frame))
    with socket.socket(socket.AF_PACKET, socket.SOCK_RAW) as s:
        s.bind((interface, 0))
        for _ in range(count):
            s.send(frame)


@inlineCallbacks
def quiet_row(sim, key: str, settle: float = 0.5):
    """`key`'s row (dataplane_row) once it has stopped moving: the same in two reads `settle` seconds apart, so that
    frames the kernel had sent before its interfaces went quiet are counted and the next ones are the test's."""
    deadline = time.monotonic() + WAIT
    last = dataplane_row((yield sim.get("/v1/dataplane")), key)
    while True:
        yield deferLater(reactor, settle, lambda: None)
        row = dataplane_row((yield sim.get("/v1/dataplane")), key)
        if row == last:
            return row
        assert time.monotonic() < deadline, f"{key}'s counters still moved after {WAIT:g} s: {row}"
        last = row


def dataplane_row(counters: dict, key: str) -> dict:
    """The row the page should draw for `key` (SERIAL/UNI, nni, nni_untagged) from GET /v1/dataplane's answer: the
    pipeline's counters, its drops and its interface's own drops by reason."""
    counted = counters["unis"][key] if "/" in key else counters[key]
    itf = next(c for c in counters["interfaces"].values()
               if (f"{c.get('serial')}/{c.get('uni_id')}" if "serial" in c else c.get("port")) == key)
    dropped = dict(counted["dropped"])
    for reason, n in itf["dropped"].items():
        dropped[reason] = dropped.get(reason, 0) + n
    return {"rxFrames": counted["rx_frames"], "rxBytes": counted["rx_bytes"], "txFrames": counted["tx_frames"],
            "txBytes": counted["tx_bytes"], "dropped": dropped}


@pytest.mark.dataplane
@pytest_twisted.inlineCallbacks
def test_the_data_planes_counters_are_shown_and_follow_the_traffic(tmp_path, chrome):
    """With the data plane on (one bound UNI, an untagged NNI: real TAP interfaces), the page shows a row for the UNI
    and one for the NNI; frames the RG sends on the UNI's interface show up in the UNI's row as REST counts them:
    frames and bytes in, and, as the UNI has not authenticated (no flow takes them), the drops by reason."""
    why = tap_unavailable()
    if why:
        pytest.skip(why)
    prefix = f"w{random.randrange(0x1000):03x}"
    sim = start_oltsim(tmp_path, "--pon", "1", "--onu", "1", "--uni", "1", "--delay", "0", "--adapter", "builtin",
                       "--uni-interfaces", "1", "--interface-prefix", prefix,
                       "--nni-untagged-interface", f"{prefix}nu")
    page = Page(chrome)
    try:
        counters = yield sim.get("/v1/dataplane")
        (uni_name, uni), = [(name, c) for name, c in counters["interfaces"].items() if "serial" in c]
        for name in counters["interfaces"]:   # from now on the kernel sends nothing of its own on them
            without_ipv6(name)
        key = f"{uni['serial']}/{uni['uni_id']}"

        def opened():
            page.open(sim.rest + "/ui")
            rows = page.until(lambda p: p.status() == "live" and p.js("return window.oltsimUi.dataplane()"),
                              "the data plane's rows")
            assert [row["key"] for row in rows] == [key, "nni_untagged"]
            assert rows[1]["label"] == f"NNI untagged {prefix}nu"
        yield deferToThread(opened)

        deadline = time.monotonic() + WAIT
        while not (yield sim.get("/v1/dataplane"))["interfaces"][uni_name]["carrier"]:
            assert time.monotonic() < deadline, f"{uni_name}'s carrier did not come up (its UNI up) in {WAIT:g} s"
            yield deferLater(reactor, 0.1, lambda: None)
        # what the kernel sent before IPv6 went off (an MLD report, a router solicitation as the link came up, on a
        # machine whose IPv6 defaults are the distribution's) is counted by then: the test's frames come on top
        before = yield quiet_row(sim, key)
        yield deferToThread(send_frames, uni_name, 5)
        deadline = time.monotonic() + WAIT
        while True:
            counted = dataplane_row((yield sim.get("/v1/dataplane")), key)
            if counted["rxFrames"] >= before["rxFrames"] + 5:
                break
            assert time.monotonic() < deadline, f"the simulator did not read the 5 frames in {WAIT:g} s: {counted}"
            yield deferLater(reactor, 0.1, lambda: None)
        assert counted["rxFrames"] - before["rxFrames"] == 5, (before, counted)
        assert counted["rxBytes"] - before["rxBytes"] == 300, (before, counted)
        assert sum(counted["dropped"].values()) - sum(before["dropped"].values()) == 5, (before, counted)
        frames = counted["rxFrames"]

        def shown(p):
            rows = p.js("return window.oltsimUi.dataplane()") or []
            return next((row for row in rows if row["key"] == key and row["rxFrames"] == frames), None)
        row = yield deferToThread(page.until, shown, "the UNI's 5 frames")
        assert {name: row[name] for name in counted} == counted
        assert row["text"][1] == f"{frames} · {counted['rxBytes']} B"
        assert row["text"][3] == ", ".join(f"{reason} {n}" for reason, n in sorted(counted["dropped"].items()))
    finally:
        yield stop_oltsim(sim)
