"""The process's descriptor limit, raised at start: nothing else bounds the connections on the plain gRPC ports.

Neither gRPC engine can refuse or close a connection by count, so on a ``tcp:`` gRPC port every connection a client
opens is held until it leaves (an idle one costs the native front about 17 KiB; one that never sends its HTTP/2
preface is dropped after 120 s). The bound is the open-files limit. Many systems start a process with a soft limit
of 1024, which a few hundred idle clients on one port would exhaust, and then every listener, REST included, fails
to accept. The daemon therefore raises its soft limit to the hard one at start (the Debian unit sets both with
``LimitNOFILE``), and logs what it has.
"""
from __future__ import annotations

import resource

from oltsim.logs import logger

__all__ = ["LOW", "WANTED", "raise_open_files_limit"]

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
        log.info("descriptor-limit open_files={limit}", limit=limit)
    return limit
