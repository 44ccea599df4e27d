"""A Kafka broker's address as the user writes it (``host:port``, ``[v6]:port``, BBSim's ``:9092``, several
separated by commas), read into aiokafka's bootstrap servers.

Pure (no client, no reactor): the configuration checks an address here before anything connects, and
:mod:`oltsim.kafka` reads it the same way when it does.
"""
from __future__ import annotations

__all__ = ["DEFAULT_PORT", "parse_address"]

DEFAULT_PORT = 9092


def parse_address(address: str) -> list[str]:
    """The bootstrap servers (``host:port``) of ``address``: ``host:port``, ``[v6]:port``, BBSim's ``:9092``
    (this host) or several of them separated by commas. ValueError, saying why, for anything else."""
    servers = []
    for part in (p.strip() for p in str(address).split(",")):
        if not part:
            continue
        if part.startswith("["):
            host, sep, port = part[1:].partition("]:")
            if not sep:
                raise ValueError(f"Kafka address {part!r}: expected [IPv6]:port")
            host = f"[{host}]"
        else:
            host, sep, port = part.rpartition(":")
            if not sep:
                raise ValueError(f"Kafka address {part!r}: expected host:port (e.g. 127.0.0.1:{DEFAULT_PORT})")
            if ":" in host:
                raise ValueError(f"Kafka address {part!r}: write an IPv6 address as [address]:port")
        if not port.isdigit() or not 0 < int(port) < 65536:
            raise ValueError(f"Kafka address {part!r}: the port must be a number 1..65535")
        servers.append(f"{host or 'localhost'}:{int(port)}")
    if not servers:
        raise ValueError("Kafka address is empty: expected host:port")
    return servers
