"""oltsimctl's messages say what to do: a refused token names --token-file, and `wait` on timeout names the ONU's
own state where that, not a service, is what is stuck."""

from __future__ import annotations

import argparse
import io

import grpc

from oltsim._proto import bbsim_pb2
from oltsim.ctl.oltsimctl import build_parser
from oltsim.ctl.connection import EXIT_REFUSED, EXIT_TIMEOUT, Connection
from oltsim.ctl.settings import resolve
from oltsim.ctl.watch import StateCheck, wait


class Refused(grpc.RpcError):
    """A call the server answered with `code` and `details`."""

    def __init__(self, code, details):
        self._code, self._details = code, details

    def code(self):
        return self._code

    def details(self):
        return self._details


UNAUTHENTICATED = Refused(grpc.StatusCode.UNAUTHENTICATED,
                          "this API needs an access token: send Authorization: Bearer <token>")


def connection(tmp_path, *argv: str) -> Connection:
    settings = resolve(build_parser().parse_args([*argv, "olt", "get"]), {"HOME": str(tmp_path)})
    return Connection(settings)


def test_a_missing_token_names_token_file(tmp_path):
    """Without a token, UNAUTHENTICATED is one line saying to give it with --token-file (or OLTSIM_TOKEN)."""
    conn = connection(tmp_path)
    try:
        error = conn.error(UNAUTHENTICATED)
    finally:
        conn.close()
    assert error.code == EXIT_REFUSED
    assert str(error) == ("UNAUTHENTICATED: this API needs an access token: send Authorization: Bearer <token>; "
                          "give it with --token-file FILE (or $OLTSIM_TOKEN, or token_file in the config file)")


def test_a_refused_token_names_where_it_came_from(tmp_path):
    """With a wrong token, the line says where that token came from and to give the daemon's with --token-file."""
    token = tmp_path / "token"
    token.write_text("wrong")
    conn = connection(tmp_path, "--token-file", str(token))
    try:
        error = conn.error(Refused(grpc.StatusCode.UNAUTHENTICATED, "the access token is not valid"))
    finally:
        conn.close()
    assert f"the token from file {token} was refused" in str(error) and "--token-file FILE" in str(error)


def onu(serial: str, state: str, dhcp: str) -> bbsim_pb2.ONU:
    service = bbsim_pb2.Service(Name="hsia", NeedsDhcp=True, DhcpState=dhcp)
    return bbsim_pb2.ONU(SerialNumber=serial, InternalState=state, unis=[bbsim_pb2.UNI(services=[service])])


def test_a_service_state_names_the_onu_state_while_the_onu_is_not_up():
    """Waiting for a service state, an ONU reads as its own state first, then its services' (the
    ONU's state whether it is up or not, and a service's untouched `created` said to be DHCP's)."""
    dhcp = StateCheck("dhcp_ack_received")
    assert dhcp.status(onu("a", "discovered", "created")) == (False, "discovered, hsia: dhcp created")
    assert dhcp.status(onu("a", "enabled", "dhcp_discovered")) == (False, "enabled, hsia: dhcp_discovered")
    assert dhcp.status(onu("a", "enabled", "dhcp_ack_received")) == (True, "enabled, hsia: dhcp_ack_received")


class Ready:
    """A connection whose GetONUs answers the same ONUs every time."""

    def __init__(self, onus):
        self.onus = onus
        self.settings = argparse.Namespace(timeout=1.0)

    def call(self, name, request, timeout=None):
        return bbsim_pb2.ONUs(items=self.onus)


def test_wait_times_out_naming_the_stuck_onu_state():
    """`wait --state dhcp_ack_received --timeout 0` ends with one line naming the ONU stuck in `discovered`."""
    args = argparse.Namespace(state="dhcp_ack_received", onus=None, timeout=0, interval=0.01, quiet=True,
                              output="table")
    out, err = io.StringIO(), io.StringIO()
    conn = Ready([onu("BBSM00000001", "enabled", "dhcp_ack_received"), onu("BBSM00000002", "discovered", "created")])
    assert wait(conn, args, out, err) == EXIT_TIMEOUT
    assert err.getvalue() == ("oltsimctl: timed out after 0s: 1 of 2 ONUs in dhcp_ack_received; not yet: "
                              "BBSM00000002 discovered, hsia: dhcp created\n")
