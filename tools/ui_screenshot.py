#!/usr/bin/env python3
"""The live view's screenshot (docs/ui-16x32.png), taken during a bring-up, and how smoothly the page kept up.

Starts the real daemon (`twistd -n oltsim`, this checkout, every listener on a free 127.0.0.1 port, as
bench/startup.py does) with PONS x ONUS, opens GET /ui in headless Chromium (tests/integration/headless.py: Debian's
chromium and chromium-driver, installed when missing and this runs as root), starts the scripted adapter of the
integration tests (ActivateOnu for every discovered ONU) on a thread, powers two ONUs off and raises an alarm
through REST so that the picture shows those states too (with LOS raised on NNI 0, on the last PON and on that
PON's first ONU before the page opened), selects an ONU by clicking its cell, and saves the PNG
once the share of enabled ONUs reaches `--at` (mid bring-up). Prints the longest gap between two animation
frames of the page during the bring-up (a page that locks up shows long gaps) and how many ONU state changes it
drew. Exits 1 if the page did not reach the point to shoot within `--timeout`.

    python tools/ui_screenshot.py [--size 16x32] [--delay 200] [--at 0.5] [--out docs/ui-16x32.png]
"""
from __future__ import annotations

import argparse
import http.client
import sys
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "bench"), str(REPO / "tests" / "integration")]
from headless import start_driver  # noqa: E402
from scripted_adapter import ScriptedAdapter  # noqa: E402
from startup import Daemon  # noqa: E402

#: Records the longest gap between animation frames and counts frames, from the moment it is installed.
FRAME_PROBE = """
window.__probe = {longest: 0, frames: 0, last: performance.now()};
const tick = (now) => { const p = window.__probe; p.longest = Math.max(p.longest, now - p.last); p.last = now;
                        p.frames += 1; requestAnimationFrame(tick); };
requestAnimationFrame(tick);
"""


def rest(daemon: Daemon, method: str, path: str) -> int:
    """The HTTP status of one v1 REST call to the daemon."""
    connection = http.client.HTTPConnection("127.0.0.1", daemon.ports["rest-v1"], timeout=10)
    try:
        connection.request(method, path)
        response = connection.getresponse()
        response.read()
        return response.status
    finally:
        connection.close()


def until(condition, timeout: float, what: str):
    """Poll `condition()` every 50 ms until truthy (returned) or `timeout` s (RuntimeError naming `what`)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.05)
    raise RuntimeError(f"the page did not show {what} within {timeout:g} s")


def main(argv=None) -> int:
    """Take the screenshot and print the page's frame figures; 0 on success, 1 if the page fell short."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", default="16x32", help="PONS x ONUS (default 16x32)")
    parser.add_argument("--delay", type=int, default=200, help="ONU discovery delay, ms (default 200)")
    parser.add_argument("--at", type=float, default=0.5, help="share of ONUs enabled when the shot is taken")
    parser.add_argument("--width", type=int, default=1280)
    parser.add_argument("--height", type=int, default=820)
    parser.add_argument("--timeout", type=float, default=120.0)
    parser.add_argument("--out", default=str(REPO / "docs" / "ui-16x32.png"))
    args = parser.parse_args(argv)
    pons, onus = (int(n) for n in args.size.lower().split("x"))
    total = pons * onus

    driver = None
    adapter = None
    with Daemon("--pon", str(pons), "--onu", str(onus), "--delay", str(args.delay)) as daemon:
        daemon.start()
        try:
            # alarms raised before the page opens: the page reads them (GET /v1/olt/alarms) and marks them
            for path in ("/v1/olt/ports/nni/0/alarms/los/on", f"/v1/olt/ports/pon/{pons - 1}/alarms/los/on",
                         f"/v1/olt/onus/BBSM0000{pons - 1:02x}01/alarms/ONU_ALARM_LOS/on"):
                if rest(daemon, "POST", path) != 200:
                    raise RuntimeError(f"POST {path} failed")
            driver = start_driver(args.width, args.height)
            driver.get(f"http://127.0.0.1:{daemon.ports['rest-v1']}/ui")

            def counts() -> dict:
                return driver.execute_script("return window.oltsimUi.counts()")
            until(lambda: driver.execute_script(
                "return document.getElementById('stream-status').dataset.state") == "live"
                and sum(counts().values()) == total, args.timeout, f"the {total} ONUs")
            driver.execute_script(FRAME_PROBE)

            adapter = ScriptedAdapter(f"127.0.0.1:{daemon.ports['openolt']}")
            failure: list[BaseException] = []

            def bring_up():
                try:
                    adapter.bring_up(total, timeout=args.timeout)
                except BaseException as exc:  # reported below; the shot may still be taken
                    failure.append(exc)
            thread = threading.Thread(target=bring_up, name="adapter", daemon=True)
            thread.start()

            def enabled() -> int:
                return counts().get("enabled", 0)
            off = ("BBSM00000001", "BBSM00000101")  # the first ONU of PONs 0 and 1, among the first enabled
            until(lambda: all(driver.execute_script("return window.oltsimUi.cellState(arguments[0])", serial)
                              ["internal"] == "enabled" for serial in off), args.timeout, f"{off} enabled")
            for serial in off:
                if rest(daemon, "DELETE", f"/v1/olt/onus/{serial}") != 200:
                    raise RuntimeError(f"DELETE /v1/olt/onus/{serial} failed")
            rest(daemon, "POST", "/v1/olt/onus/BBSM00000002/alarms/ONU_ALARM_LOS/on")
            center = driver.execute_script("return window.oltsimUi.cellCenter('BBSM00000002')")
            from selenium.webdriver.common.action_chains import ActionChains
            ActionChains(driver).move_to_element_with_offset(
                driver.find_element("id", "grid"), int(center["dx"]), int(center["dy"])).click().perform()
            until(lambda: enabled() >= args.at * total, args.timeout, f"{args.at:.0%} of the ONUs enabled")
            time.sleep(0.3)  # the record fetched for the panel, the lists redrawn
            driver.save_screenshot(args.out)
            shot = dict(counts())
            thread.join(args.timeout)
            until(lambda: enabled() >= total - 2, args.timeout, "every ONU but the two powered off enabled")
            probe = driver.execute_script("return window.__probe")
            print(f"{args.size}: screenshot {args.out} at {shot}")
            print(f"page during bring-up: {probe['frames']} frames, longest gap between frames "
                  f"{probe['longest']:.0f} ms")
            if failure:
                print(f"the adapter failed: {failure[0]}")
        except RuntimeError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
        finally:
            if driver is not None:
                driver.quit()
            if adapter is not None:
                adapter.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
