"""The host side of the data plane's interfaces: privileges, links and namespaces, and `ip netns` (the names
themselves are checked by `oltsim.dataplane.names`).

Everything here runs once at the data plane's start and once at its stop, on the reactor thread before the daemon
serves (a few milliseconds per `ip` call; 64 UNIs in namespaces take about half a second); nothing runs while
frames flow. The `ip` command is the one tool used (iproute2, which every Linux host with namespaces has), through
an injected runner so that the unit tests check what would be run without running it.

A namespace oltsim makes is marked as its own: its loopback interface's alias (`ip link set dev lo alias`) names
the making process (``oltsim pid=PID start=TICKS``, TICKS its start time in /proc/PID/stat), so that a namespace
left behind by a run that was killed (SIGKILL, a crash: nothing deleted it) is known at the next start: taken over
then, and deleted at its stop. A namespace without the mark is the user's, used as it is and left at stop.

Errors are `HostError`: one line a person can act on (the data plane turns it into ``oltsim: ...`` and exit 2).
"""
from __future__ import annotations

import os
import re
import subprocess
from dataclasses import dataclass

#: Seconds one `ip` call may take (it normally takes milliseconds).
IP_TIMEOUT = 10.0
TUN_DEVICE = "/dev/net/tun"
#: CAP_NET_ADMIN's bit in /proc/self/status CapEff.
CAP_NET_ADMIN = 12
#: The mark of a namespace oltsim made, in its loopback interface's alias (`ip -o link show` prints it).
MARK = "oltsim pid={pid} start={start}"
_MARK = re.compile(r"\balias oltsim pid=(\d+) start=(\d+)")


class HostError(Exception):
    """The host refused (or would refuse) a step of the data plane's set-up; the message is one line."""


def effective_capabilities(status_path: str = "/proc/self/status") -> int | None:
    """This process's effective capability mask (None where /proc does not say)."""
    try:
        with open(status_path, encoding="ascii") as handle:
            for line in handle:
                if line.startswith("CapEff:"):
                    return int(line.split()[1], 16)
    except (OSError, ValueError, IndexError):
        return None
    return None


def check_privileges(tun_device: str = TUN_DEVICE, capabilities: int | None = None) -> None:
    """TAP interfaces can be made here: CAP_NET_ADMIN and a usable `tun_device`; HostError saying what is missing."""
    caps = effective_capabilities() if capabilities is None else capabilities
    if caps is not None and not caps >> CAP_NET_ADMIN & 1:
        if os.environ.get("INVOCATION_ID"):       # systemd starts each service with it: the packaged unit
            raise HostError("making TAP interfaces needs CAP_NET_ADMIN, which the systemd unit withholds (the "
                            "packaged oltsim.service: add its drop-in /usr/share/doc/oltsim/examples/tap.conf), or "
                            "use attachment: vxlan (no privilege)")
        raise HostError("making TAP interfaces needs CAP_NET_ADMIN: run oltsim as root, or give it the capability "
                        "(setcap cap_net_admin+ep, or docker run --cap-add NET_ADMIN)")
    if not os.path.exists(tun_device):
        raise HostError(f"{tun_device} does not exist: load the tun module (modprobe tun), or give the container "
                        f"the device (docker run --device /dev/net/tun)")
    if not os.access(tun_device, os.R_OK | os.W_OK):
        mode = os.stat(tun_device).st_mode & 0o777
        raise HostError(f"{tun_device} cannot be opened for reading and writing by this process (mode {mode:04o}; "
                        f"udev's rules make it 0666)")


def process_start(pid: int | str) -> int | None:
    """When process `pid` ("self": this one) started, in clock ticks since boot (/proc/PID/stat's 22nd field); None
    when there is no such process. With the pid it tells one process from a later one given the same pid."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as handle:
            return int(handle.read().rpartition(")")[2].split()[19])
    except (OSError, ValueError, IndexError):
        return None


def private_mount_namespace(own: str = "/proc/self/ns/mnt", init: str = "/proc/1/ns/mnt",
                            mountinfo: str = "/proc/self/mountinfo", netns_dir: str = "/run/netns") -> bool:
    """Whether this process has a mount namespace other than init's (`ip netns exec` gives its command one): the
    namespaces `ip netns add` makes here are then seen only from inside it. Where init's cannot be read (a sandbox
    that hides it), whether the mount holding `netns_dir` only receives mounts from another namespace (a slave:
    `master:` in `mountinfo`), as `ip netns exec` makes every mount. False when neither says."""
    try:
        return os.readlink(own) != os.readlink(init)
    except OSError:
        pass
    covering = None
    try:
        with open(mountinfo, encoding="utf-8", errors="replace") as handle:
            for line in handle:
                fields = line.split()
                if len(fields) < 7 or "-" not in fields[6:]:
                    continue
                point = fields[4]
                if netns_dir == point or netns_dir.startswith(point.rstrip("/") + "/"):
                    if covering is None or len(point) >= len(covering[0]):
                        covering = (point, fields[6:fields.index("-", 6)])
    except OSError:
        return False
    return covering is not None and any(tag.startswith("master:") for tag in covering[1])


def run_ip(args: list[str]) -> tuple[int, str]:
    """Run `ip ARGS`: (exit status, on success its stdout's last line, else its stderr's); status 127 when `ip`
    cannot be run."""
    try:
        done = subprocess.run(["ip", *args], stdin=subprocess.DEVNULL, capture_output=True, text=True,
                              timeout=IP_TIMEOUT)
    except FileNotFoundError:
        return 127, "the ip command (iproute2) is not installed"
    except subprocess.TimeoutExpired:
        return 124, f"ip {' '.join(args)} did not finish within {IP_TIMEOUT:g} s"
    except OSError as exc:
        return 126, f"cannot run ip: {exc.strerror}"
    lines = ((done.stdout if done.returncode == 0 else done.stderr) or "").strip().splitlines()
    return done.returncode, lines[-1] if lines else ""


@dataclass
class Host:
    """Links and namespaces of this host, through `ip` (`runner`: `run_ip` or a test's fake) and the files Linux
    shows them in (`sys_net`, `netns_dir`)."""

    runner: object = run_ip
    sys_net: str = "/sys/class/net"
    netns_dir: str = "/run/netns"
    #: this process's and init's mount namespaces, and its mount table (`private_mount_namespace`)
    mount_namespaces: tuple[str, str] = ("/proc/self/ns/mnt", "/proc/1/ns/mnt")
    mountinfo: str = "/proc/self/mountinfo"

    def private_mount_namespace(self) -> bool:
        """Whether the namespaces made here are hidden from the host's other processes (`private_mount_namespace`)."""
        return private_mount_namespace(*self.mount_namespaces, mountinfo=self.mountinfo, netns_dir=self.netns_dir)

    def check_privileges(self) -> None:
        """TAP interfaces can be made here (`check_privileges`); HostError otherwise."""
        check_privileges()

    def link_exists(self, name: str, netns: str | None = None) -> bool:
        """Whether an interface `name` exists in the host's namespace, or in `netns`."""
        if netns is None:
            return os.path.exists(os.path.join(self.sys_net, name))
        status, _ = self.runner(["-n", netns, "link", "show", "dev", name])
        return status == 0

    def netns_exists(self, name: str) -> bool:
        """Whether a named network namespace `name` exists (`ip netns add` made it)."""
        return os.path.exists(os.path.join(self.netns_dir, name))

    def add_netns(self, name: str) -> None:
        """Make the named network namespace `name`, marked as this process's (`mark_netns`); HostError when it
        cannot be made."""
        self._ip(["netns", "add", name], f"network namespace {name} cannot be made")
        self.mark_netns(name)

    def mark_netns(self, name: str) -> None:
        """Mark namespace `name` as made by this process (its loopback's alias), so that a next run knows it for a
        leftover if this one is killed before it deletes it."""
        mark = MARK.format(pid=os.getpid(), start=process_start("self") or 0)
        self._ip(["-n", name, "link", "set", "dev", "lo", "alias", mark], f"network namespace {name} cannot be "
                 f"marked as oltsim's")

    def netns_maker(self, name: str) -> tuple[int, bool] | None:
        """Who made namespace `name`: (pid, whether that process still runs) of the oltsim run whose mark it bears;
        None for a namespace without the mark (the user's)."""
        status, line = self.runner(["-n", name, "-o", "link", "show", "dev", "lo"])
        found = _MARK.search(line) if status == 0 else None
        if found is None:
            return None
        pid, start = int(found.group(1)), int(found.group(2))
        return pid, process_start(pid) == start

    def delete_netns(self, name: str) -> str | None:
        """Remove the named namespace `name`; None when done, else why not (stop goes on with the rest)."""
        status, why = self.runner(["netns", "delete", name])
        return None if status == 0 else (why or f"ip netns delete {name} exited {status}")

    def move_link(self, name: str, netns: str) -> None:
        """Move interface `name` into namespace `netns` (where it is down until `link_up`)."""
        self._ip(["link", "set", "dev", name, "netns", netns], f"interface {name} cannot be moved into {netns}")

    def set_address(self, name: str, mac: str) -> None:
        """Give interface `name` (in the host's namespace) the MAC address `mac`."""
        self._ip(["link", "set", "dev", name, "address", mac], f"interface {name} cannot take MAC {mac}")

    def link_up(self, name: str, netns: str | None = None) -> None:
        """Set interface `name` up, in the host's namespace or in `netns`."""
        args = ["link", "set", "dev", name, "up"]
        self._ip(["-n", netns, *args] if netns else args, f"interface {name} cannot be set up")

    def _ip(self, args: list[str], what: str) -> None:
        status, why = self.runner(args)
        if status != 0:
            raise HostError(f"{what}: {why or f'ip exited {status}'}")
