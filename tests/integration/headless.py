"""Headless Chromium for the web UI's tests and its screenshot: Debian's `chromium` and `chromium-driver` driven by
Selenium.

`ensure_chromium()` finds the browser and its driver. When either is missing it installs both with apt-get only if
the person running the tests asked for it with OLTSIM_TEST_INSTALL=1 (`.ci/run` sets it) and this process may run
apt-get (root, apt-get on PATH): `apt-get update` first only if the plain install fails, every step bounded by a
timeout. A test run never changes the machine's packages unasked. When the install is not allowed, impossible or
fails it raises `BrowserUnavailable` with the reason, which the tests turn into a skip (`-m "not browser"` leaves
them out altogether).
"""
from __future__ import annotations

import os
import shutil
import subprocess

PACKAGES = ("chromium", "chromium-driver")
#: Set to 1 to let the tests install missing system packages (here: PACKAGES with apt-get, as root).
INSTALL_VARIABLE = "OLTSIM_TEST_INSTALL"
#: Seconds an apt-get step may take (the install downloads about 100 MB).
APT_TIMEOUT = 900
#: Seconds apt-get waits for the dpkg lock another apt/dpkg may hold.
APT_LOCK_TIMEOUT = 300
#: Chromium's flags for a container: no GPU, no setuid sandbox, no /dev/shm (often 64 MB there).
HEADLESS_FLAGS = ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage")


class BrowserUnavailable(Exception):
    """Chromium or its driver is missing and cannot be installed here; the message says why."""


def find_chromium() -> tuple[str | None, str | None]:
    """(browser, driver) paths on PATH, None for each one missing."""
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    return browser, shutil.which("chromedriver")


def _apt(arguments: list[str], timeout: float) -> str | None:
    """Run apt-get non-interactively; None on success, else why it failed (its last lines)."""
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    command = ["apt-get", "-o", f"DPkg::Lock::Timeout={APT_LOCK_TIMEOUT}", *arguments]
    try:
        done = subprocess.run(command, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                              timeout=timeout)
    except subprocess.TimeoutExpired:
        return f"apt-get {' '.join(arguments)} did not finish within {timeout:g} s"
    except OSError as exc:
        return f"cannot run apt-get: {exc.strerror}"
    if done.returncode != 0:
        tail = " | ".join((done.stderr or done.stdout).strip().splitlines()[-3:])
        return f"apt-get {' '.join(arguments)} exited {done.returncode}: {tail}"
    return None


def apt_install(packages, timeout: float = APT_TIMEOUT) -> str | None:
    """`apt-get install -y --no-install-recommends packages`, again after `apt-get update` if the first try fails;
    None on success, else why it failed."""
    install = ["install", "-y", "--no-install-recommends", *packages]
    return _apt(install, timeout) and (_apt(["update"], timeout) or _apt(install, timeout))


def install_allowed() -> bool:
    """Whether the person running the tests allowed them to install system packages (OLTSIM_TEST_INSTALL=1)."""
    return os.environ.get(INSTALL_VARIABLE) == "1"


def install_chromium(timeout: float = APT_TIMEOUT) -> None:
    """`apt-get install -y --no-install-recommends chromium chromium-driver`, after `apt-get update` if the first
    try fails; BrowserUnavailable when not allowed (OLTSIM_TEST_INSTALL is not 1), when this process cannot (not
    root, no apt-get) or when the install fails."""
    if not install_allowed():
        raise BrowserUnavailable(f"chromium and chromium-driver are not installed (apt-get install chromium "
                                 f"chromium-driver, or set {INSTALL_VARIABLE}=1 to let the tests install them "
                                 f"as root)")
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        raise BrowserUnavailable("chromium and chromium-driver are not installed and this process is not root "
                                 "(apt-get install -y chromium chromium-driver)")
    if shutil.which("apt-get") is None:
        raise BrowserUnavailable("chromium and chromium-driver are not installed and apt-get is not available")
    failure = apt_install(PACKAGES, timeout)
    if failure is not None:
        raise BrowserUnavailable(f"cannot install chromium: {failure}")


def ensure_chromium(timeout: float = APT_TIMEOUT) -> tuple[str, str]:
    """(browser, driver) paths, installing the Debian packages first if either is missing and that is allowed (see
    module doc)."""
    browser, driver = find_chromium()
    if browser is None or driver is None:
        install_chromium(timeout)
        browser, driver = find_chromium()
        if browser is None or driver is None:
            raise BrowserUnavailable("apt-get installed chromium and chromium-driver, yet chromium or chromedriver "
                                     "is not on PATH")
    return browser, driver


def start_driver(width: int = 1280, height: int = 900, timeout: float = 60.0):
    """A Selenium Chrome driver on headless Chromium (installed if needed and allowed); the caller quits it.
    BrowserUnavailable if Chromium cannot be had or does not start."""
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        raise BrowserUnavailable("selenium is not installed (pip install selenium; it is in the test extras)")
    browser, driver = ensure_chromium()
    options = webdriver.ChromeOptions()
    options.binary_location = browser
    for flag in (*HEADLESS_FLAGS, f"--window-size={width},{height}"):
        options.add_argument(flag)
    try:
        chrome = webdriver.Chrome(service=Service(executable_path=driver), options=options)
    except Exception as exc:
        raise BrowserUnavailable(f"headless chromium did not start: {str(exc).splitlines()[0]}") from exc
    chrome.set_page_load_timeout(timeout)
    chrome.set_script_timeout(timeout)
    return chrome
