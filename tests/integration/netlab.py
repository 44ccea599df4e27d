"""A small network lab for the data plane's tests: Debian's dnsmasq, dhclient, wpa_supplicant, tshark,
iperf3 and ping, run in network namespaces beside oltsim's TAP interfaces.

`require()` checks this machine can run the lab (root, /dev/net/tun, `ip netns`) and that the tools are there,
installing the missing Debian packages with apt-get only when OLTSIM_TEST_INSTALL=1 (as `headless` does for
Chromium), else raising `LabUnavailable` with the reason (the tests skip). A `Lab` names everything after a prefix
of its own (random, so two runs on one host never collide), keeps the processes and namespaces it started, and
`close()` stops and removes all of them, only those, by pid and name, whatever happened before; every wait is
bounded.
"""
from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import time
from pathlib import Path

from headless import apt_install, install_allowed, INSTALL_VARIABLE

#: program -> the Debian package that has it
#: (dnsmasq-base: the program without the system service, which would take port 53 on a machine with systemd)
TOOLS = {"dnsmasq": "dnsmasq-base", "dhclient": "isc-dhcp-client", "wpa_supplicant": "wpasupplicant",
         "tshark": "tshark", "iperf3": "iperf3", "ping": "iputils-ping", "ethtool": "ethtool",
         "mausezahn": "netsniff-ng", "tcpdump": "tcpdump", "iperf": "iperf", "nsenter": "util-linux"}
STOP_TIMEOUT = 5.0


class LabUnavailable(Exception):
    """This machine cannot run the data plane lab; the message says why."""


def _which(program: str) -> str | None:
    return shutil.which(program) or next((f"{d}/{program}" for d in ("/usr/sbin", "/sbin")
                                          if os.access(f"{d}/{program}", os.X_OK)), None)


def require(*programs: str) -> None:
    """Root, /dev/net/tun, `ip netns` and `programs` (names in TOOLS) are here, the missing packages installed when
    allowed; LabUnavailable (the reason) otherwise."""
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        raise LabUnavailable("the data plane tests make TAP interfaces and network namespaces: they need root")
    if not os.path.exists("/dev/net/tun"):
        raise LabUnavailable("/dev/net/tun does not exist (modprobe tun, or --device /dev/net/tun)")
    if _which("ip") is None:
        raise LabUnavailable("the ip command (iproute2) is not installed")
    probe = f"oltsim-probe-{os.getpid()}"
    made = subprocess.run(["ip", "netns", "add", probe], capture_output=True, text=True, timeout=10)
    if made.returncode != 0:
        raise LabUnavailable(f"ip netns add does not work here: {made.stderr.strip()}")
    subprocess.run(["ip", "netns", "delete", probe], capture_output=True, timeout=10)
    missing = [TOOLS[p] for p in programs if _which(p) is None]
    if not missing:
        return
    if not install_allowed():
        raise LabUnavailable(f"{', '.join(missing)} not installed (apt-get install {' '.join(missing)}, or set "
                             f"{INSTALL_VARIABLE}=1 to let the tests install them as root)")
    if shutil.which("apt-get") is None:
        raise LabUnavailable(f"{', '.join(missing)} not installed and apt-get is not available")
    failure = apt_install(missing)
    if failure:
        raise LabUnavailable(f"cannot install {', '.join(missing)}: {failure}")
    still = [p for p in programs if _which(p) is None]
    if still:
        raise LabUnavailable(f"apt-get installed the packages, yet {', '.join(still)} is not on PATH")


def lab_for(tmp_path, *programs: str):
    """The body of a test module's `lab` fixture: a Lab in `tmp_path` once `require(*programs)` holds (the test
    skips with the reason otherwise), closed after the test. Tests ask for it before `daemon`, so that oltsim stops
    (removing what it made) before the lab is taken down."""
    import pytest

    try:
        require(*programs)
    except LabUnavailable as exc:
        pytest.skip(str(exc))
    made = Lab(tmp_path)
    try:
        yield made
    finally:
        made.close()


def run(*args: str, timeout: float = 10.0, check: bool = True) -> subprocess.CompletedProcess:
    """Run a command to completion (bounded); AssertionError with its output when `check` and it fails."""
    done = subprocess.run(list(args), capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)
    if check and done.returncode != 0:
        raise AssertionError(f"{' '.join(args)} exited {done.returncode}: {done.stdout}{done.stderr}")
    return done


class Lab:
    """Namespaces and processes of one test, all named after `prefix` (4 characters: 'd' and 3 random hex digits
    unless given), removed by `close()`."""

    def __init__(self, tmp_path: Path, prefix: str | None = None):
        self.prefix = prefix or f"d{random.randrange(0x1000):03x}"
        self.tmp = tmp_path
        self.namespaces: list[str] = []
        self.resolv_dirs: list[Path] = []
        self.processes: list[subprocess.Popen] = []

    # ---- namespaces ---------------------------------------------------------------------------------------

    def netns(self, name: str) -> str:
        """Make namespace `name` (removed at close), loopback up."""
        run("ip", "netns", "add", name)
        self.namespaces.append(name)
        run("ip", "-n", name, "link", "set", "lo", "up")
        return name

    def resolv_conf(self, netns: str) -> None:
        """Give `netns` its own resolv.conf, so that a DHCP client in it leaves the host's alone (removed at
        close)."""
        folder = Path("/etc/netns") / netns
        if not folder.exists():
            folder.mkdir(parents=True)
            self.resolv_dirs.append(folder)
        (folder / "resolv.conf").touch()

    def move(self, interface: str, netns: str, address: str | None = None) -> None:
        """Move `interface` into `netns`, set it up, give it `address` (CIDR)."""
        run("ip", "link", "set", "dev", interface, "netns", netns)
        run("ip", "-n", netns, "link", "set", "dev", interface, "up")
        if address:
            run("ip", "-n", netns, "addr", "add", address, "dev", interface)

    def wait_link(self, interface: str, netns: str | None = None, timeout: float = 30.0) -> None:
        """Wait (bounded) until `interface` exists, in the host's namespace or `netns`."""
        deadline = time.monotonic() + timeout
        command = ["ip", *(["-n", netns] if netns else []), "link", "show", "dev", interface]
        while time.monotonic() < deadline:
            if subprocess.run(command, capture_output=True, timeout=10).returncode == 0:
                return
            time.sleep(0.1)
        raise AssertionError(f"interface {interface} did not appear within {timeout:g} s")

    # ---- processes ----------------------------------------------------------------------------------------

    def start(self, netns: str | None, *args: str, log: str) -> subprocess.Popen:
        """Start a long-running program (in `netns`), its output into tmp/`log`; stopped at close."""
        command = (["ip", "netns", "exec", netns] if netns else []) + list(args)
        with open(self.tmp / log, "w") as out:
            process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                       start_new_session=True)
        self.processes.append(process)
        return process

    def iperf3_server(self, netns: str, *more: str, port: int = 5201, log: str = "iperf3.log",
                      timeout: float = 10.0) -> subprocess.Popen:
        """An iperf3 server on TCP `port` in `netns` (`more`: its other options), returned once it listens (bounded:
        a client started before that is refused)."""
        process = self.start(netns, "iperf3", "-s", "--forceflush", "-p", str(port), *more, log=log)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            listening = run("ip", "netns", "exec", netns, "ss", "-Hltn", f"sport = :{port}", check=False)
            if listening.stdout.strip():
                return process
            if process.poll() is not None:
                break
            time.sleep(0.05)
        raise AssertionError(f"iperf3 in {netns} is not listening on port {port} within {timeout:g} s:\n"
                             f"{self.log(log)[-2000:]}")

    def log(self, name: str) -> str:
        path = self.tmp / name
        return path.read_text(errors="replace") if path.exists() else ""

    def dnsmasq(self, netns: str, interface: str, first: str, last: str, leases: int = 256) -> subprocess.Popen:
        """A DHCP server (no DNS) on `interface` in `netns`, leasing first..last."""
        return self.start(netns, _which("dnsmasq"), "--no-daemon", "--conf-file=/dev/null", "--port=0",
                          f"--interface={interface}", "--bind-interfaces", "--no-ping",
                          f"--dhcp-range={first},{last},255.255.0.0,1h", f"--dhcp-lease-max={leases}",
                          f"--dhcp-leasefile={self.tmp / (netns + '.leases')}", "--log-dhcp",
                          f"--pid-file={self.tmp / (netns + '.dnsmasq.pid')}", log=f"{netns}.dnsmasq.log")

    def dhclient(self, netns: str, interface: str, timeout: float = 60.0) -> subprocess.Popen:
        """dhclient once (-1) on `interface` in `netns`, its lease and pid files in tmp; stopped at close."""
        self.resolv_conf(netns)
        return self.start(netns, _which("dhclient"), "-v", "-1", "-d", "-lf", str(self.tmp / f"{netns}.dhcp.leases"),
                          "-pf", str(self.tmp / f"{netns}.dhclient.pid"), interface, log=f"{netns}.dhclient.log")

    def address(self, netns: str, interface: str) -> str | None:
        """The IPv4 address of `interface` in `netns`, None while it has none."""
        done = run("ip", "-n", netns, "-4", "-o", "addr", "show", "dev", interface, check=False)
        for word in done.stdout.split():
            if "/" in word and word[0].isdigit():
                return word.split("/")[0]
        return None

    def wait_address(self, netns: str, interface: str, timeout: float = 60.0) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = self.address(netns, interface)
            if found:
                return found
            time.sleep(0.2)
        raise AssertionError(f"{interface} in {netns} got no address within {timeout:g} s:\n"
                             f"{self.log(netns + '.dhclient.log')[-2000:]}")

    def wpa_supplicant(self, netns: str, interface: str, identity: str, password: str) -> subprocess.Popen:
        """wpa_supplicant with the wired driver and EAP-MD5 on `interface` in `netns`."""
        conf = self.tmp / f"{netns}.wpa.conf"
        conf.write_text("ap_scan=0\nnetwork={\n  key_mgmt=IEEE8021X\n  eap=MD5\n"
                        f"  identity=\"{identity}\"\n  password=\"{password}\"\n  eapol_flags=0\n}}\n")
        return self.start(netns, _which("wpa_supplicant"), "-D", "wired", "-i", interface, "-c", str(conf), "-dd",
                          log=f"{netns}.wpa.log")

    def stop(self, process: subprocess.Popen) -> None:
        """SIGTERM `process` (its session: the program under `ip netns exec`), SIGKILL after STOP_TIMEOUT."""
        if process.poll() is not None:
            return
        try:
            os.killpg(process.pid, signal.SIGTERM)
        except ProcessLookupError:
            return
        try:
            process.wait(STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            try:
                os.killpg(process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            process.wait(STOP_TIMEOUT)

    def close(self) -> None:
        """Stop every process started (last first), delete every namespace made, remove the resolv.conf folders."""
        for process in reversed(self.processes):
            self.stop(process)
        self.processes.clear()
        # the lab's own, then any left under its prefix by an oltsim that could not stop (killed): this run's only
        listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, timeout=10).stdout.split()
        leftover = [name for name in listed if name.startswith(self.prefix) and name not in self.namespaces]
        for name in [*reversed(self.namespaces), *leftover]:
            subprocess.run(["ip", "netns", "delete", name], capture_output=True, timeout=10)
        self.namespaces.clear()
        for folder in self.resolv_dirs:
            shutil.rmtree(folder, ignore_errors=True)
        self.resolv_dirs.clear()
