"""Connections on the plain gRPC ports, bounded from outside the engines: the descriptor limit and a watch.

Neither gRPC engine can refuse or close a connection by count, so on a ``tcp:`` gRPC port every connection a client
opens is held until it leaves (an idle one costs the native front about 17 KiB; one that never sends its HTTP/2
preface is dropped after 120 s). Many systems start a process with a soft limit of 1024 descriptors, which a few
hundred idle clients on one port would exhaust, and then every listener, REST included, fails to accept. So:

- the daemon raises its soft limit to the hard one at start (the Debian unit sets both with ``LimitNOFILE``), and
  logs what it has (:func:`raise_open_files_limit`);
- :class:`GrpcConnectionWatch` looks at the process's descriptors every few seconds and, when a gRPC port holds
  more than its budget or the process nears its limit, ends the connections that did the least. The engines'
  sockets are this process's descriptors: the watch finds them through ``/proc/self/fd`` and shuts them down, and
  the engine, seeing the end, lets them go. When a flood is over it hands the memory the engines freed back to the
  system. Linux only; elsewhere it does nothing.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import os
import resource
import socket
import struct
from typing import Callable

from twisted.application.service import Service

from oltsim.logs import logger

__all__ = ["GrpcConnectionWatch", "LOW", "PORT_BUDGET", "WANTED", "open_files_limit", "raise_open_files_limit"]

log = logger("oltsim.descriptors")

#: the soft limit asked for when the hard one is unlimited (the Debian unit's LimitNOFILE)
WANTED = 65536
#: below this many descriptors a start is logged as a warning: a flood of idle connections can exhaust them
LOW = 8192


def raise_open_files_limit(getrlimit=resource.getrlimit, setrlimit=resource.setrlimit) -> int:
    """Raise the soft RLIMIT_NOFILE to the hard limit (WANTED when that is unlimited) and log the result; returns the
    soft limit now in force. Never raises: a system that refuses keeps the limit it had, and says so."""
    soft, hard = getrlimit(resource.RLIMIT_NOFILE)
    target = WANTED if hard == resource.RLIM_INFINITY else hard
    if soft != resource.RLIM_INFINITY and soft < target:
        try:
            setrlimit(resource.RLIMIT_NOFILE, (target, hard))
            soft = target
        except (OSError, ValueError) as exc:
            log.warn("descriptor-limit-unchanged soft={soft} hard={hard} error={error}", soft=soft, hard=hard,
                     error=exc)
    limit = WANTED if soft == resource.RLIM_INFINITY else soft
    if limit < LOW:
        log.warn("descriptor-limit open_files={limit} low=true: connections on the gRPC ports are bounded only by "
                 "descriptors; raise the hard limit (ulimit -Hn, systemd LimitNOFILE) to at least {wanted}",
                 limit=limit, wanted=LOW)
    else:
        # at debug: an ordinary start says nothing of it (a busy port's one-line error stays the last thing read)
        log.debug("descriptor-limit open_files={limit}", limit=limit)
    return limit


#: connections one plain gRPC port may hold before the ones idle the longest are closed (about 17 KiB each when idle:
#: some 70 MB for a full port)
PORT_BUDGET = 4096
#: seconds between two looks at the process's descriptors
WATCH_INTERVAL = 2.0
#: descriptors below which the watch does not look at sockets at all (a lab's daemon holds a few dozen)
QUIET_BELOW = 1024
#: what shedding leaves, as a share of the mark that started it: room for new clients until the next look
SHED_TO = 0.9

_TCP_INFO_LEN = 136
_LAST_DATA_SENT = 44  # offsets in Linux's struct tcp_info: milliseconds since data last went out, then came in,
_LAST_DATA_RECV = 52  # and the bytes received (Linux 4.1 and later)
_BYTES_RECEIVED = 128


def _standing(sock: socket.socket) -> tuple[int, int]:
    """How much a connection has done, least first when sorted: (bytes received, minus milliseconds since data last
    went either way), from Linux's TCP_INFO. A client that trickles its HTTP/2 preface a byte at a time, or sent it
    and nothing since, has received-bytes in the tens; an adapter sends hundreds with its first call, and its
    heartbeats and flows add more. Among equals, the idlest goes first."""
    info = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, _TCP_INFO_LEN)
    sent, = struct.unpack_from("<I", info, _LAST_DATA_SENT)
    received, = struct.unpack_from("<I", info, _LAST_DATA_RECV)
    total = struct.unpack_from("<Q", info, _BYTES_RECEIVED)[0] if len(info) >= _BYTES_RECEIVED + 8 else 0
    return total, -min(sent, received)


def trim_memory() -> bool:
    """Hand the C heap's free memory back to the system (glibc's malloc_trim): what the engines' threads freed when
    thousands of connections closed otherwise stays in the process (measured: 4000 idle connections, +66 MB, stayed
    +66 MB after they closed, +2 MB after a trim). False where there is no glibc."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        return bool(libc.malloc_trim(0))
    except (OSError, AttributeError):
        return False


def open_descriptors(directory: str = "/proc/self/fd") -> int:
    """How many descriptors the process has open (0 where /proc is missing: the watch then does nothing)."""
    try:
        return len(os.listdir(directory))
    except OSError:
        return 0


def grpc_connections(ports: set[int], directory: str = "/proc/self/fd") -> dict[int, list[tuple[tuple, int]]]:
    """The accepted TCP connections of this process on each of `ports` (the engines' own sockets, which Python does
    not otherwise see), as (standing, descriptor) (see _standing), found through /proc/self/fd."""
    found: dict[int, list[tuple[tuple, int]]] = {port: [] for port in ports}
    try:
        names = os.listdir(directory)
    except OSError:
        return found
    for name in names:
        try:
            fd = int(name)
            if not os.readlink(f"{directory}/{name}").startswith("socket:"):
                continue
            # A duplicate: whatever the descriptor number is by now, the socket inspected is one object.
            sock = socket.socket(fileno=os.dup(fd))
        except (OSError, ValueError):
            continue  # closed meanwhile, or not a socket Python can wrap
        try:
            if sock.type != socket.SOCK_STREAM or sock.family not in (socket.AF_INET, socket.AF_INET6):
                continue
            port = sock.getsockname()[1]
            if port not in found:
                continue
            sock.getpeername()  # OSError for the listening socket itself
            found[port].append((_standing(sock), fd))
        except OSError:
            continue
        finally:
            sock.close()
    return found


def shed(fd: int, port: int) -> bool:
    """End the connection on descriptor `fd` if it still is one of `port`'s: shut down both ways, so that its owner
    (the engine) sees the end and closes it; our duplicate is closed at once."""
    try:
        sock = socket.socket(fileno=os.dup(fd))
    except OSError:
        return False
    try:
        if sock.family not in (socket.AF_INET, socket.AF_INET6) or sock.getsockname()[1] != port:
            return False  # the descriptor was closed and reused since the look
        sock.getpeername()
        sock.shutdown(socket.SHUT_RDWR)
        return True
    except OSError:
        return False
    finally:
        sock.close()


class GrpcConnectionWatch(Service):
    """Keeps the plain gRPC ports from holding more than `budget` connections each, and the process from running out
    of descriptors (the REST listeners and the OLT need theirs).

    Every `interval` seconds of `clock`, when the process has more than `quiet_below` descriptors open, it counts
    each port's connections and, on a port above its budget or when the process is within `reserve` of `limit()`,
    closes those that did the least (the fewest bytes received, then the idlest: a flood's connections carry a
    preface at most, or a byte now and then; an adapter's carries its calls) down to SHED_TO of the mark. A line per
    shed port is logged (`grpc-connections-shed`). When the descriptors open fall to half of their peak since the
    last trim (a flood ended, or was shed), the memory the engines freed is handed back to the system
    (`trim_memory`). `ports()` names the ports to watch (name -> port), as they are bound now."""

    def __init__(self, clock, ports: Callable[[], dict[str, int]], limit: Callable[[], int], reserve: int,
                 budget: int = PORT_BUDGET, interval: float = WATCH_INTERVAL,
                 trim: Callable[[], bool] = trim_memory) -> None:
        self.clock = clock
        self.ports = ports
        self.limit = limit
        self.reserve = reserve
        self.budget = budget
        self.interval = interval
        self.quiet_below = QUIET_BELOW
        self.shed_total = 0
        self.trims = 0
        self._trim = trim
        self._peak = 0
        self._call = None

    def startService(self) -> None:
        super().startService()
        self._call = self.clock.callLater(self.interval, self._tick)

    def stopService(self):
        super().stopService()
        call, self._call = self._call, None
        if call is not None and call.active():
            call.cancel()

    def _tick(self) -> None:
        self._call = None
        try:
            self.look()
        except Exception:
            log.failure("grpc-connection-watch-failed")
        if self.running:
            self._call = self.clock.callLater(self.interval, self._tick)

    def look(self, open_count: Callable[[], int] = open_descriptors,
             connections: Callable[[set[int]], dict] = grpc_connections,
             end: Callable[[int, int], bool] = shed) -> int:
        """One look (see the class docstring); returns how many connections it closed."""
        open_now = open_count()
        self._peak = max(self._peak, open_now)
        if self._peak > self.quiet_below and open_now * 2 <= self._peak:
            self.trims += 1
            log.info("memory-trimmed open_descriptors={open} peak={peak} released={released}", open=open_now,
                     peak=self._peak, released=self._trim())
            self._peak = open_now
        if open_now <= self.quiet_below:
            return 0
        ports = {port: name for name, port in self.ports().items() if port}
        if not ports:
            return 0
        found = connections(set(ports))
        # Within `reserve` of the limit, the biggest ports give up the excess first, and a tenth more as room.
        excess = open_now - (self.limit() - self.reserve)
        closed = 0
        for port, held in sorted(found.items(), key=lambda item: -len(item[1])):
            keep = len(held)
            if keep > self.budget:
                keep = int(self.budget * SHED_TO)
            if excess > 0:
                keep = min(keep, max(0, len(held) - excess - int(len(held) * (1 - SHED_TO))))
            if keep >= len(held):
                continue
            held.sort()  # the least done first
            count = sum(end(fd, port) for _, fd in held[:len(held) - keep])
            excess -= count
            closed += count
            log.warn("grpc-connections-shed server={server} port={port} held={held} closed={closed} budget={budget} "
                     "open_descriptors={open} limit={limit}", server=ports[port], port=port, held=len(held),
                     closed=count, budget=self.budget, open=open_now, limit=self.limit())
        self.shed_total += closed
        return closed


def open_files_limit() -> int:
    """The soft descriptor limit in force (WANTED when unlimited)."""
    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    return WANTED if soft == resource.RLIM_INFINITY else soft
