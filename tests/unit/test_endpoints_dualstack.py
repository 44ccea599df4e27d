"""Addresses of a dual-stack listener (oltsim.serving.dualstack): an IPv4 client arrives IPv4-mapped and is named as
the IPv4 address it is; every other address is left as it is. The sockets themselves are exercised in
tests/integration/test_bbsim_chart.py (port-only listeners, in a network namespace) and test_daemon.py."""
from __future__ import annotations

from twisted.internet.address import IPv4Address, IPv6Address

from oltsim.serving.dualstack import DualStackPort, unmapped
from oltsim.serving.endpoints import parse_grpc_endpoint


def test_an_ipv4_mapped_client_is_named_by_its_ipv4_address():
    assert unmapped(("::ffff:127.0.3.7", 40000, 0, 0)) == ("127.0.3.7", 40000)


def test_ipv6_and_plain_ipv4_addresses_are_unchanged():
    assert unmapped(("::1", 40000, 0, 0)) == ("::1", 40000, 0, 0)
    assert unmapped(("::ffff:7f00:1", 40000, 0, 0)) == ("::ffff:7f00:1", 40000, 0, 0)  # no dotted quad: not mapped
    assert unmapped(("10.0.0.1", 40000)) == ("10.0.0.1", 40000)


def test_the_port_hands_its_factory_ipv4_addresses_for_ipv4_clients():
    port = DualStackPort(0, factory=None)
    assert port._buildAddr(("::ffff:10.1.2.3", 5000, 0, 0)) == IPv4Address("TCP", "10.1.2.3", 5000)
    assert port._buildAddr(("::1", 5000, 0, 0)) == IPv6Address("TCP", "::1", 5000, 0, 0)


def test_an_endpoint_backlog_is_kept_for_the_twisted_listeners():
    assert parse_grpc_endpoint("tcp:50071:backlog=64").backlog == 64
    assert parse_grpc_endpoint("tcp:50071").backlog is None
