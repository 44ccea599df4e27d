"""The Debian package on this machine: built by `packaging/build-deb`, installed with dpkg, the installed daemon run
the way its systemd unit runs it, upgraded by a newer package (an OLT reboot for the adapter: new heartbeat
signature, same serial and device id, no flows), removed, then purged until nothing is left.

Building needs dpkg-deb and the package index pip installs from (PyPI or the configured mirror): without them the
build tests are skipped with the reason, unless OLTSIM_TEST_INSTALL=1 (CI), where an unreachable index fails them.
Installing needs root and dpkg and changes this machine, so the install test runs only as root on a Debian host
without an oltsim package or user of its own, and only when OLTSIM_TEST_INSTALL=1 allows the tests to install
system packages. OLTSIM_DEB_TEST=0 skips both, and all but the conffile test are marked `deb` (`-m "not deb"`).
Whatever happens, the teardown stops the daemon and purges the package. systemd need not run: the daemon is started
by hand from the unit's own lines (User, WorkingDirectory, ExecStart) with loopback listeners on free ports. The
conffile test runs everywhere.
"""
from __future__ import annotations

import configparser
import dataclasses
import grp
import json
import os
import pwd
import re
import shlex
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import grpc
import pytest
from voltha_protos import openolt_pb2, openolt_pb2_grpc

from scripted_adapter import free_ports, listener_options
from test_daemon import DaemonProcess, listening

REPO = Path(__file__).resolve().parents[2]
BUILD_DEB = REPO / "packaging" / "build-deb"
BUILD_REQUIREMENTS = REPO / "packaging" / "build-requirements.txt"
CONFFILE_SOURCE = REPO / "debian" / "oltsim.yaml"
TAP_DROP_IN = REPO / "debian" / "tap.conf"

PACKAGE = "oltsim"
USER = "oltsim"
PREFIX = Path("/opt/oltsim")
CONFIG_DIR = Path("/etc/oltsim")
CONFFILE = CONFIG_DIR / "oltsim.yaml"
STATE_DIR = Path("/var/lib/oltsim")
UNIT_FILE = Path("/lib/systemd/system/oltsim.service")
SYSTEMD_LEFTOVERS = (Path("/etc/systemd/system"), Path("/var/lib/systemd/deb-systemd-helper-enabled"),
                     Path("/var/lib/systemd/deb-systemd-helper-masked"))

BUILD_TIMEOUT = 900.0  # pip downloads on a cold cache
DPKG_TIMEOUT = 180.0
START_TIMEOUT = 30.0
STOP_TIMEOUT = 10.0
CALL_TIMEOUT = 10.0

LLDP_ETH_TYPE = 0x88CC


INSTALL_VARIABLE = "OLTSIM_TEST_INSTALL"
INDEX_TIMEOUT = 60.0


def _install_allowed() -> bool:
    """Whether the person running the tests allowed them to install system packages (CI does)."""
    return os.environ.get(INSTALL_VARIABLE) == "1"


def _build_skip_reason() -> str | None:
    """Why the package cannot be built here, None when it can (the index is checked by the `packages` fixture)."""
    if os.environ.get("OLTSIM_DEB_TEST") == "0":
        return "OLTSIM_DEB_TEST=0"
    if shutil.which("dpkg-deb") is None or shutil.which("dpkg") is None:
        return "needs dpkg-deb and dpkg (a Debian host)"
    return None


def _skip_reason() -> str | None:
    """Why the package cannot be installed here, None when it can."""
    reason = _build_skip_reason()
    if reason is not None:
        return reason
    if not _install_allowed():
        return (f"installs, upgrades and purges the oltsim package and user on this machine: only with "
                f"{INSTALL_VARIABLE}=1 (as root)")
    if os.geteuid() != 0:
        return "needs root: it installs, upgrades and purges the oltsim package on this machine"
    if _installed_version() is not None:
        return "an oltsim package is already installed here; the test would replace and purge it"
    if _user_exists():
        return "a user or group oltsim already exists here; purging the test package would delete it"
    return None


def _installed_version() -> str | None:
    """The installed (or half-installed) version of the package, None when dpkg does not know it."""
    if shutil.which("dpkg-query") is None:
        return None
    result = subprocess.run(["dpkg-query", "-W", "-f", "${db:Status-Status} ${Version}", PACKAGE],
                            capture_output=True, text=True, timeout=30)
    if result.returncode != 0 or not result.stdout.strip():
        return None
    status, _, version = result.stdout.strip().partition(" ")
    return None if status == "not-installed" else version


def _user_exists() -> bool:
    for lookup in (pwd.getpwnam, grp.getgrnam):
        try:
            lookup(USER)
        except KeyError:
            continue
        return True
    return False


def index_unreachable() -> str | None:
    """Why pip cannot reach its package index (PyPI, or PIP_INDEX_URL / pip.conf's mirror), None when it can: the
    build installs pinned wheels from there, first packaging/build-requirements.txt, which this resolves without
    installing anything. One try, bounded, no retries."""
    probe = [sys.executable, "-m", "pip", "install", "--dry-run", "--quiet", "--ignore-installed", "--no-deps",
             "--only-binary", ":all:", "--require-hashes", "-r", BUILD_REQUIREMENTS, "--disable-pip-version-check",
             "--retries", "0", "--timeout", "15"]
    try:
        result = subprocess.run([str(arg) for arg in probe], capture_output=True, text=True, timeout=INDEX_TIMEOUT,
                                stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return f"pip's package index did not answer within {INDEX_TIMEOUT:g} s"
    if result.returncode != 0:
        tail = " | ".join((result.stderr or result.stdout).strip().splitlines()[-2:])
        return f"pip's package index is unreachable ({tail})"
    return None


BUILD_SKIP_REASON = _build_skip_reason()
SKIP_REASON = _skip_reason()


def run(*command, timeout: float, check: bool = True) -> subprocess.CompletedProcess:
    """Run a command to completion within `timeout`; failing, the assertion shows its output."""
    result = subprocess.run([str(c) for c in command], capture_output=True, text=True, timeout=timeout)
    if check:
        assert result.returncode == 0, (f"{' '.join(map(str, command))} exited {result.returncode}:\n"
                                        f"{result.stdout}{result.stderr}")
    return result


def unit_service_section(path: Path) -> dict[str, str]:
    """The [Service] settings of a unit file (the last value of a repeated key)."""
    parser = configparser.ConfigParser(strict=False, interpolation=None, delimiters=("=",))
    parser.optionxform = str  # keys are case-sensitive in systemd
    parser.read_string(path.read_text())
    return dict(parser["Service"])


@dataclasses.dataclass(frozen=True)
class Identity:
    """What the adapter learns from the OLT agent: heartbeat signature, serial number, device id."""

    signature: int
    serial: str
    device_id: str


def _setpriv_caps(names: str) -> str:
    """A unit's capability list (`CAP_NET_ADMIN CAP_X`) as setpriv's (`+net_admin,+x`)."""
    return ",".join(f"+{name.lower().removeprefix('cap_')}" for name in names.split())


class InstalledDaemon(DaemonProcess):
    """The installed oltsim started as its systemd unit starts it: the unit's ExecStart as its User in its
    WorkingDirectory with an empty environment (but `environment`), no new privileges, its capability bounding set
    and ambient capabilities, plus loopback listeners on free ports and `options`. `drop_in`: a drop-in's [Service]
    settings over the unit's (its capabilities are mirrored; its device settings cannot be without systemd)."""

    name = "the installed oltsim"
    poll_interval = 0.1

    def __init__(self, log_path: Path, *options: str, drop_in: Path | None = None, environment: tuple = ()):
        service = unit_service_section(UNIT_FILE) | (unit_service_section(drop_in) if drop_in else {})
        names = listener_options()
        self.ports = dict(zip(names, free_ports(len(names))))
        listen = [arg for name, port in self.ports.items() for arg in (f"--{name}", f"tcp:{port}:interface=127.0.0.1")]
        bounding = _setpriv_caps(service.get("CapabilityBoundingSet", ""))
        ambient = _setpriv_caps(service.get("AmbientCapabilities", ""))
        caps = [f"--inh-caps={ambient}", f"--ambient-caps={ambient}"] if ambient else []
        command = ["setpriv", f"--reuid={service['User']}", f"--regid={service.get('Group', service['User'])}",
                   "--init-groups", "--no-new-privs", f"--bounding-set=-all{',' + bounding if bounding else ''}",
                   *caps, "env", "-i", "PATH=/usr/sbin:/usr/bin:/sbin:/bin", *environment,
                   *shlex.split(service["ExecStart"]), *listen, *options]
        self.log_path = log_path
        self._log = open(log_path, "w")
        # setpriv and env exec the daemon, so this pid is twistd's own.
        self.process = subprocess.Popen(command, cwd=service.get("WorkingDirectory", "/"), stdout=self._log,
                                        stderr=subprocess.STDOUT)

    def openolt(self) -> openolt_pb2_grpc.OpenoltStub:
        channel = grpc.insecure_channel(f"127.0.0.1:{self.ports['openolt']}")
        grpc.channel_ready_future(channel).result(timeout=CALL_TIMEOUT)
        self._channel = channel
        return openolt_pb2_grpc.OpenoltStub(channel)

    def identity(self) -> Identity:
        """HeartbeatCheck and GetDeviceInfo over the OpenOLT port, as the adapter calls them."""
        stub = self.openolt()
        heartbeat = stub.HeartbeatCheck(openolt_pb2.Empty(), timeout=CALL_TIMEOUT)
        info = stub.GetDeviceInfo(openolt_pb2.Empty(), timeout=CALL_TIMEOUT)
        return Identity(heartbeat.heartbeat_signature, info.device_serial_number, info.device_id)

    def add_nni_trap_flow(self) -> None:
        """The first flow the adapter installs: LLDP from the NNI trapped to the host (needs no active ONU)."""
        self.openolt().FlowAdd(openolt_pb2.Flow(
            access_intf_id=-1, onu_id=-1, uni_id=-1, flow_id=1, flow_type="downstream", network_intf_id=0,
            classifier=openolt_pb2.Classifier(eth_type=LLDP_ETH_TYPE),
            action=openolt_pb2.Action(cmd=openolt_pb2.ActionCmd(trap_to_host=True)),
            priority=1000, cookie=1, port_no=1048576), timeout=CALL_TIMEOUT)

    def flow_count(self) -> int:
        status, body = self.rest_get("/v1/olt/flows")
        assert status == 200, body
        return body["flow_count"]

    def stop(self) -> int:
        """SIGTERM, as systemctl stop sends it; returns the exit code."""
        self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"oltsim did not exit within {STOP_TIMEOUT:g} s of SIGTERM:\n{self.log}") from None

    def close(self) -> None:
        """Make sure the process is gone (only this one, by its pid)."""
        channel = getattr(self, "_channel", None)
        if channel is not None:
            channel.close()
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(STOP_TIMEOUT)
        self._log.close()


# ---- fixtures -----------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def packages(tmp_path_factory):
    """Version A built by the documented command, and version A+1 repacked from it with a higher version (the
    same files: what matters to dpkg and to the adapter is that a newer package replaces a running one)."""
    unreachable = index_unreachable()
    if unreachable is not None and not _install_allowed():
        pytest.skip(f"{unreachable}: the build installs the pinned wheels from it (with {INSTALL_VARIABLE}=1, as in "
                    f"CI, this is a failure)")
    out = tmp_path_factory.mktemp("debs")
    result = run(BUILD_DEB, "--out", out, timeout=BUILD_TIMEOUT)
    first = Path(result.stdout.strip())
    assert first.parent == out and first.exists(), result.stdout
    version = run("dpkg-deb", "-f", first, "Version", timeout=30).stdout.strip()
    assert first.name == f"{PACKAGE}_{version.partition(':')[2] or version}_amd64.deb"

    newer_version = f"{version}+upgrade1"
    run("dpkg", "--compare-versions", newer_version, "gt", version, timeout=30)
    tree = out / "repack"
    run("dpkg-deb", "--raw-extract", first, tree, timeout=DPKG_TIMEOUT)
    control = tree / "DEBIAN" / "control"
    control.write_text(re.sub(r"(?m)^Version: .*$", f"Version: {newer_version}", control.read_text()))
    second = out / f"{PACKAGE}_{newer_version}_amd64.deb"
    # gzip -1: this package only lives for the test, compressing it well would cost half a minute.
    run("dpkg-deb", "--root-owner-group", "-Zgzip", "-z1", "--build", tree, second, timeout=DPKG_TIMEOUT)
    shutil.rmtree(tree)
    yield {"first": first, "version": version, "second": second, "newer_version": newer_version}
    shutil.rmtree(out, ignore_errors=True)  # 40 MB that pytest would otherwise keep for three runs


@pytest.fixture
def machine(tmp_path):
    """Daemons started during the test, and the promise that they are stopped and the package purged, pass or
    fail (the skip conditions made sure the package and user were not there before)."""
    daemons: list[InstalledDaemon] = []

    def start(*options: str, **how) -> InstalledDaemon:
        daemon = InstalledDaemon(tmp_path / f"oltsim-{len(daemons)}.log", *options, **how)
        daemons.append(daemon)
        return daemon

    try:
        yield start
    finally:
        for daemon in daemons:
            daemon.close()
        if _installed_version() is not None or PREFIX.exists():
            subprocess.run(["dpkg", "--purge", PACKAGE], capture_output=True, timeout=DPKG_TIMEOUT)


# ---- tests --------------------------------------------------------------------------------------------------


def test_conffile_holds_the_builtin_defaults(tmp_path):
    """Every key commented out in debian/oltsim.yaml is a key oltsim reads, its value is the built-in default, and
    every listener is among them, so uncommenting the whole file changes nothing."""
    from oltsim.config import LISTENER_FIELDS, load_settings

    text = CONFFILE_SOURCE.read_text()
    line = re.compile(r"^  # ([a-z_]+):(.*)$", re.M)
    keys = line.findall(text)
    assert keys, "no commented key: value lines found"
    uncommented = tmp_path / "oltsim.yaml"
    uncommented.write_text(line.sub(r"  \1:\2", text))
    settings = load_settings({}, uncommented)
    defaults = load_settings({}, None)
    assert settings.warnings == (), settings.warnings
    differing = [f.name for f in dataclasses.fields(settings)
                 if f.name not in ("config_path", "services_path")
                 and getattr(settings, f.name) != getattr(defaults, f.name)]
    assert differing == []
    listener_keys = {"openolt_address", "api_address", "rest_api_address", "legacy_api_address",
                     "legacy_rest_api_address", "sadis_rest_address", "dmi_server_address"}
    assert len(listener_keys) == len(LISTENER_FIELDS)
    assert listener_keys <= {key for key, _ in keys}


def test_the_unit_withholds_every_capability_and_the_tap_drop_in_adds_net_admin_and_the_tun_device_only(tmp_path):
    """The unit as shipped gives no capability and no device (the data plane with VXLAN attachments needs none);
    debian/tap.conf, its drop-in for TAP interfaces, adds CAP_NET_ADMIN (ambient and bounding) and /dev/net/tun,
    nothing else, and systemd-analyze reads it without a complaint."""
    unit = unit_service_section(REPO / "debian" / "oltsim.service")
    assert (unit["CapabilityBoundingSet"], unit["AmbientCapabilities"], unit["PrivateDevices"]) == ("", "", "yes")
    assert unit["NoNewPrivileges"] == "yes" and "AF_INET6" in unit["RestrictAddressFamilies"]
    drop_in = unit_service_section(TAP_DROP_IN)
    assert drop_in == {"AmbientCapabilities": "CAP_NET_ADMIN", "CapabilityBoundingSet": "CAP_NET_ADMIN",
                       "PrivateDevices": "no", "DevicePolicy": "closed", "DeviceAllow": "/dev/net/tun rw"}
    if shutil.which("systemd-analyze") is None:
        return
    shutil.copy(REPO / "debian" / "oltsim.service", tmp_path / "oltsim.service")
    (tmp_path / "oltsim.service.d").mkdir()
    shutil.copy(TAP_DROP_IN, tmp_path / "oltsim.service.d" / "tap.conf")
    verify = subprocess.run(["systemd-analyze", "verify", str(tmp_path / "oltsim.service")], capture_output=True,
                            text=True, timeout=60, env=dict(os.environ, SYSTEMD_UNIT_PATH=f"{tmp_path}:"))
    complaints = [line for line in (verify.stdout + verify.stderr).splitlines()
                  if "tap.conf" in line or "oltsim.service:" in line and "twistd" not in line]
    assert complaints == [], verify.stdout + verify.stderr


@pytest.mark.deb
@pytest.mark.skipif(BUILD_SKIP_REASON is not None, reason=str(BUILD_SKIP_REASON))
def test_package_contents(packages):
    """The .deb holds the unit, the conffile (declared as one), the venv's twistd and the journal observer,
    oltsimctl and bbsimctl linked from /usr/bin, depends on the system python3 and adduser, and ships no byte code
    or plugin cache (postinst makes those)."""
    deb = packages["first"]
    listing = run("dpkg-deb", "--contents", deb, timeout=DPKG_TIMEOUT).stdout
    paths = {line.split()[5].removeprefix(".") for line in listing.splitlines()}
    for expected in ("/lib/systemd/system/oltsim.service", "/etc/oltsim/oltsim.yaml", "/opt/oltsim/bin/twistd",
                     "/opt/oltsim/bin/python", "/opt/oltsim/lib/python3.11/site-packages/oltsim_journal.py",
                     "/opt/oltsim/lib/python3.11/site-packages/twisted/plugins/oltsim_plugin.py",
                     "/opt/oltsim/bin/oltsimctl", "/usr/bin/oltsimctl", "/opt/oltsim/bin/bbsimctl",
                     "/usr/bin/bbsimctl", "/usr/share/doc/oltsim/examples/tap.conf"):
        assert expected in paths, expected
    assert "./usr/bin/oltsimctl -> /opt/oltsim/bin/oltsimctl" in listing
    assert "./usr/bin/bbsimctl -> /opt/oltsim/bin/bbsimctl" in listing
    assert ("./usr/lib/x86_64-linux-gnu/wireshark/plugins/oltsim.lua -> "
            "/opt/oltsim/lib/python3.11/site-packages/oltsim/data/wireshark/oltsim.lua") in listing
    assert "/opt/oltsim/lib/python3.11/site-packages/oltsim/data/wireshark/oltsim.lua" in paths
    assert not [p for p in paths if "__pycache__" in p or p.endswith((".pyc", "dropin.cache"))]
    assert run("dpkg-deb", "--info", deb, "conffiles", timeout=30).stdout.split() == ["/etc/oltsim/oltsim.yaml"]
    depends = run("dpkg-deb", "--field", deb, "Depends", timeout=30).stdout
    assert "python3 (>= 3.11)" in depends and "adduser" in depends, depends
    assert run("dpkg-deb", "--field", deb, "Architecture", timeout=30).stdout.strip() == "amd64"


@pytest.mark.deb
@pytest.mark.skipif(SKIP_REASON is not None, reason=str(SKIP_REASON))
def test_install_upgrade_is_an_olt_reboot_then_purge_leaves_nothing(packages, machine):
    """Install: the user, the plugin cache and a unit that verifies; the installed daemon answers GET /v1/olt and
    the OpenOLT port. Upgrade over it: the same serial and device id with a new heartbeat signature and no flows,
    the administrator's conffile kept. Remove keeps the configuration; purge leaves nothing."""
    run("dpkg", "--install", packages["first"], timeout=DPKG_TIMEOUT)
    assert _installed_version() == packages["version"]
    account = pwd.getpwnam(USER)
    assert account.pw_uid < 1000 and account.pw_shell.endswith("nologin"), account
    assert grp.getgrgid(account.pw_gid).gr_name == USER
    assert STATE_DIR.stat().st_uid == account.pw_uid
    assert list(PREFIX.glob("lib/python3*/site-packages/twisted/plugins/dropin.cache"))
    if shutil.which("systemd-analyze"):
        verify = run("systemd-analyze", "verify", UNIT_FILE, timeout=60, check=False)
        complaints = [line for line in (verify.stdout + verify.stderr).splitlines() if "oltsim" in line]
        assert verify.returncode == 0 and complaints == [], verify.stdout + verify.stderr

    daemon = machine()
    olt = daemon.wait_serving()
    before = daemon.identity()
    assert before.serial == olt["SerialNumber"] == "BBSIM_OLT_0"
    assert before.signature != 0
    # oltsimctl is on the PATH and talks to the installed daemon with the venv's own libraries.
    assert "usage: oltsimctl" in run("/usr/bin/oltsimctl", "--help", timeout=60).stdout
    shown = run("/usr/bin/oltsimctl", "--server", f"127.0.0.1:{daemon.ports['grpc-v1']}", "-o", "json", "olt", "get",
                timeout=60).stdout
    assert json.loads(shown)["SerialNumber"] == "BBSIM_OLT_0"
    daemon.add_nni_trap_flow()
    assert daemon.flow_count() == 1
    assert daemon.stop() == 0, daemon.log
    # Every line the daemon wrote is a JSON log event (what the journal gets under systemd).
    events = [json.loads(line) for line in daemon.log.splitlines() if line.strip()]
    assert any(event.get("log_namespace", "").startswith("oltsim") for event in events)

    with CONFFILE.open("a") as conffile:
        conffile.write("# changed by the administrator\n")
    run("dpkg", "--install", packages["second"], timeout=DPKG_TIMEOUT)
    assert _installed_version() == packages["newer_version"]
    assert CONFFILE.read_text().endswith("# changed by the administrator\n")

    daemon = machine()
    daemon.wait_serving()
    after = daemon.identity()
    assert after.signature != before.signature
    assert (after.serial, after.device_id) == (before.serial, before.device_id)
    assert daemon.flow_count() == 0

    # Left running, as a daemon started without systemd would be: remove stops it (SIGTERM, a clean exit) and says so.
    removed = run("dpkg", "--remove", PACKAGE, timeout=DPKG_TIMEOUT)
    assert daemon.process.wait(STOP_TIMEOUT) == 0, daemon.log
    assert f"oltsim: stopping the daemon running without systemd (pid {daemon.process.pid})" in removed.stderr, \
        removed.stderr
    assert not any(listening(port) for port in daemon.ports.values())
    assert not PREFIX.exists() and not UNIT_FILE.exists() and not Path("/usr/bin/oltsimctl").is_symlink()
    assert CONFFILE.exists() and _user_exists()

    run("dpkg", "--purge", PACKAGE, timeout=DPKG_TIMEOUT)
    assert _installed_version() is None
    left = [str(p) for p in (PREFIX, CONFIG_DIR, STATE_DIR, UNIT_FILE) if p.exists() or p.is_symlink()]
    left += [str(p) for directory in SYSTEMD_LEFTOVERS if directory.exists()
             for p in directory.rglob("oltsim*")]
    assert left == []
    assert not _user_exists()


# ---- the data plane under the unit ------------------------------------------------------------------------------

#: The RG's side of the VXLAN segments: another loopback address, so that oltsim's datagrams to it at the VXLAN
#: port (where an RG's kernel device listens) reach this test's socket and not oltsim's own.
RG_ADDRESS = "127.0.0.2"
EAPOL_GROUP = bytes.fromhex("0180c2000003")
ETH_EAPOL = 0x888E
VXLAN_FLAGS = 0x08000000       # RFC 7348: the I flag
RG_TIMEOUT = 60.0


def free_udp_port() -> int:
    """A UDP port free on both loopback addresses the test uses."""
    import socket
    while True:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        try:
            with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as other:
                other.bind((RG_ADDRESS, port))
        except OSError:
            continue
        return port


def status_fields(pid: int) -> dict[str, str]:
    with open(f"/proc/{pid}/status", encoding="ascii") as status:
        return dict(line.rstrip("\n").split(":\t", 1) for line in status if ":\t" in line)


def eapol_start(mac: bytes) -> bytes:
    """An RG's EAPOL-Start, untagged, padded to 60 octets."""
    return (EAPOL_GROUP + mac + ETH_EAPOL.to_bytes(2, "big") + bytes([1, 1, 0, 0])).ljust(60, b"\0")


def eap_over_vxlan(rg, vni: int, mac: bytes, oltsim: tuple[str, int], timeout: float = RG_TIMEOUT) -> bytes | None:
    """EAPOL-Starts from the RG's bound UDP socket `rg` on `vni` to `oltsim` (address, port) until the
    authenticator's EAP frame to `mac` comes back from that address with the same VXLAN header (bounded: the
    built-in adapter brings the ONU up and installs the EAPOL trap first); the frame, None if none came."""
    import socket
    import struct
    import time

    rg.settimeout(0.5)
    header = struct.pack("!II", VXLAN_FLAGS, vni << 8)
    answer, deadline = None, time.monotonic() + timeout
    while answer is None and time.monotonic() < deadline:
        rg.sendto(header + eapol_start(mac), oltsim)
        try:
            while answer is None:
                datagram, source = rg.recvfrom(65535)
                frame = datagram[8:]
                if (datagram[:8] == header and source[0] == oltsim[0] and frame[:6] == mac
                        and frame[12:14] == ETH_EAPOL.to_bytes(2, "big") and frame[15] == 0):
                    answer = frame
        except socket.timeout:
            continue
    return answer


@pytest.mark.deb
@pytest.mark.skipif(SKIP_REASON is not None, reason=str(SKIP_REASON))
def test_the_packaged_unit_runs_the_data_plane_over_vxlan_without_privilege(packages, machine):
    """The installed daemon, started as the unit starts it (its user, no capability, no new privileges), runs the
    data plane with the built-in adapter and one UNI as a VXLAN attachment: an RG's EAPOL-Start sent to its UDP
    port on the UNI's VNI is answered, over VXLAN, by the authenticator's EAP-Request/Identity to the RG's address,
    which GET /v1/dataplane shows as the UNI's learned remote."""
    import socket

    run("dpkg", "--install", packages["first"], timeout=DPKG_TIMEOUT)
    port = free_udp_port()
    daemon = machine("--adapter", "builtin", "--attachment", "vxlan", "--uni-interfaces", "1",
                     "--nni-untagged-interface", "nniu", "--vxlan-listen", "127.0.0.1", "--vxlan-port", str(port))
    daemon.wait_serving()
    fields = status_fields(daemon.process.pid)
    assert fields["Uid"].split()[0] == str(pwd.getpwnam(USER).pw_uid)
    assert int(fields["CapEff"], 16) == 0 and int(fields["CapBnd"], 16) == 0 and fields["NoNewPrivs"] == "1"
    status, counters = daemon.rest_get("/v1/dataplane")
    assert status == 200, counters
    (name, uni), = [(name, c) for name, c in counters["interfaces"].items() if "serial" in c]
    assert (uni["kind"], uni["vni"], uni["remote"]) == ("vxlan", 1000, None)
    mac = bytes.fromhex(uni["mac"].replace(":", ""))
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as rg:
        rg.bind((RG_ADDRESS, port))
        answer = eap_over_vxlan(rg, uni["vni"], mac, ("127.0.0.1", port))
    assert answer is not None, f"no EAP-Request over VXLAN within {RG_TIMEOUT:g} s:\n{daemon.log}"
    assert (answer[18], answer[22]) == (1, 1)          # EAP code Request, type Identity
    status, counters = daemon.rest_get("/v1/dataplane")
    uni = counters["interfaces"][name]
    assert (uni["remote"], uni["remote_learned"]) == (RG_ADDRESS, True) and uni["rx_frames"] >= 1, uni
    assert daemon.stop() == 0, daemon.log
    events = [json.loads(line) for line in daemon.log.splitlines() if line.strip()]
    started = [e for e in events if e.get("log_format", "").startswith("dataplane-started")]
    assert [(e["kind"], e["unis"]) for e in started] == [("vxlan", 1)], daemon.log


@pytest.mark.deb
@pytest.mark.skipif(SKIP_REASON is not None, reason=str(SKIP_REASON))
def test_tap_interfaces_need_the_drop_in_which_gives_the_unit_net_admin_only(packages, machine):
    """Under the unit as shipped (systemd's INVOCATION_ID set), TAP interfaces are refused in one line naming the
    drop-in, exit status 2; with the drop-in's capabilities (ambient and bounding CAP_NET_ADMIN, nothing else) the
    installed daemon, as the unit's user, makes the UNI's and the NNI's TAP interfaces and removes them at its
    stop."""
    import random
    import time

    run("dpkg", "--install", packages["first"], timeout=DPKG_TIMEOUT)
    prefix = f"e{random.randrange(0x1000):03x}"
    tap = ("--uni-interfaces", "1", "--interface-prefix", prefix, "--nni-interface", f"{prefix}nni")
    refused = machine(*tap, environment=("INVOCATION_ID=0123456789abcdef0123456789abcdef",))
    assert refused.process.wait(START_TIMEOUT) == 2, refused.log
    lines = [line for line in refused.log.splitlines() if line.startswith("oltsim: ")]
    assert lines == ["oltsim: making TAP interfaces needs CAP_NET_ADMIN, which the systemd unit withholds (the "
                     "packaged oltsim.service: add its drop-in /usr/share/doc/oltsim/examples/tap.conf), or use "
                     "attachment: vxlan (no privilege)"], refused.log
    drop_in = Path("/usr/share/doc/oltsim/examples/tap.conf")
    daemon = machine(*tap, drop_in=drop_in)
    mode = os.stat("/dev/net/tun").st_mode & 0o777
    if mode & 0o006 != 0o006:
        # A host without udev's rule for the device (0600, root's): CAP_NET_ADMIN does not open it for another user
        assert daemon.process.wait(START_TIMEOUT) == 2, daemon.log
        assert (f"oltsim: /dev/net/tun cannot be opened for reading and writing by this process (mode {mode:04o}; "
                "udev's rules make it 0666)") in daemon.log.splitlines(), daemon.log
        pytest.skip(f"/dev/net/tun has mode {mode:04o} here: the unit's user cannot open it, said in one line; "
                    "the TAP interfaces under the drop-in need it 0666")
    daemon.wait_serving()
    fields = status_fields(daemon.process.pid)
    assert fields["Uid"].split()[0] == str(pwd.getpwnam(USER).pw_uid)
    assert int(fields["CapEff"], 16) == int(fields["CapBnd"], 16) == 1 << 12     # CAP_NET_ADMIN alone
    made = [f"{prefix}u0-1-0", f"{prefix}nni"]
    assert all(Path("/sys/class/net", name).exists() for name in made), daemon.log
    assert daemon.stop() == 0, daemon.log
    deadline = time.monotonic() + STOP_TIMEOUT
    while any(Path("/sys/class/net", name).exists() for name in made) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(Path("/sys/class/net", name).exists() for name in made)
