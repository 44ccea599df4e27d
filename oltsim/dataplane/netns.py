"""The host side of the data plane's interfaces: privileges, links and namespaces, and `ip netns` (the names
themselves are checked by `oltsim.dataplane.names`).

Everything here runs once at the data plane's start and once at its stop, on the reactor thread before the daemon
serves (a few milliseconds per `ip` call; 64 UNIs in namespaces take about half a second); nothing runs while
frames flow. The `ip` command is the one tool used (iproute2, which every Linux host with namespaces has), through
an injected runner so that the unit tests check what would be run without running it.

Errors are `HostError`: one line a person can act on (the data plane turns it into ``oltsim: ...`` and exit 2).
"""
from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass

#: Seconds one `ip` call may take (it normally takes milliseconds).
IP_TIMEOUT = 10.0
TUN_DEVICE = "/dev/net/tun"
#: CAP_NET_ADMIN's bit in /proc/self/status CapEff.
CAP_NET_ADMIN = 12


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
        raise HostError("making TAP interfaces needs CAP_NET_ADMIN: run oltsim as root, or give it the capability "
                        "(setcap cap_net_admin+ep, or docker run --cap-add NET_ADMIN)")
    if not os.path.exists(tun_device):
        raise HostError(f"{tun_device} does not exist: load the tun module (modprobe tun), or give the container "
                        f"the device (docker run --device /dev/net/tun)")
    if not os.access(tun_device, os.R_OK | os.W_OK):
        raise HostError(f"{tun_device} cannot be opened for reading and writing by this process")


def run_ip(args: list[str]) -> tuple[int, str]:
    """Run `ip ARGS`: (exit status, its stderr's last line); status 127 when `ip` cannot be run."""
    try:
        done = subprocess.run(["ip", *args], stdin=subprocess.DEVNULL, capture_output=True, text=True,
                              timeout=IP_TIMEOUT)
    except FileNotFoundError:
        return 127, "the ip command (iproute2) is not installed"
    except subprocess.TimeoutExpired:
        return 124, f"ip {' '.join(args)} did not finish within {IP_TIMEOUT:g} s"
    except OSError as exc:
        return 126, f"cannot run ip: {exc.strerror}"
    lines = (done.stderr or "").strip().splitlines()
    return done.returncode, lines[-1] if lines else ""


@dataclass
class Host:
    """Links and namespaces of this host, through `ip` (`runner`: `run_ip` or a test's fake) and the files Linux
    shows them in (`sys_net`, `netns_dir`)."""

    runner: object = run_ip
    sys_net: str = "/sys/class/net"
    netns_dir: str = "/run/netns"

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
        """Make the named network namespace `name`; HostError when it cannot be made."""
        self._ip(["netns", "add", name], f"network namespace {name} cannot be made")

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
