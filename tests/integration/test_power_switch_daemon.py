"""The real daemon with --power-switch on a loopback port, driven as voltha-system-tests' power_switch.robot drives
a lab's switch: a python-requests session with HTTP Digest and the robot's headers. Switching an ONU's outlet off
and on is seen on GET /v1/olt/onus/<serial>; a wrong password is refused; a busy port is one line."""
from __future__ import annotations

import time

import pytest

from scripted_adapter import free_ports
from test_daemon import daemon, listening  # noqa: F401 - the fixture

requests = pytest.importorskip("requests")
from requests.auth import HTTPDigestAuth  # noqa: E402

TIMEOUT = 30.0


def wait_for(predicate, what: str, process, timeout: float = TIMEOUT):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"{what} within {timeout:g} s:\n{process.log}")


def onu_state(process, serial: str) -> str:
    status, body = process.rest_get(f"/v1/olt/onus/{serial}")
    assert status == 200, body
    return body["InternalState"]


def robot_session(user: str, password: str) -> requests.Session:
    """What the robot library's `Create Digest Session` makes of the lab's switch: Digest auth, X-CSRF and a form
    content type on every request."""
    session = requests.Session()
    session.auth = HTTPDigestAuth(user, password)
    session.headers.update({"X-CSRF": "x", "Content-Type": "application/x-www-form-urlencoded"})
    return session


def test_an_onus_outlet_powers_it_off_and_on_through_a_digest_client(daemon):
    """With the built-in adapter bringing 2 x 2 ONUs up, PUT =2/state/ value=false (the robot's outlet 3) answers
    207 and the third ONU goes disabled, its state reads [false]; value=true brings it back enabled. The EPC API
    on the same listener switches and reads the same outlet."""
    port = free_ports(1)[0]
    process = daemon("--pon", "2", "--onu", "2", "--delay", "0", "--adapter", "builtin",
                     "--power-switch", f"tcp:{port}:interface=127.0.0.1")
    process.wait_serving()
    _, onus = process.rest_get("/v1/olt/onus")
    serial = onus["items"][2]["SerialNumber"]
    wait_for(lambda: onu_state(process, serial) == "enabled", f"ONU {serial} enabled", process)
    base = f"http://127.0.0.1:{port}"
    with robot_session("admin", "1234") as session:
        mapping = session.get(f"{base}/", timeout=10).json()["outlets"]
        assert (mapping[2]["serial"], mapping[4]["device"]) == (serial, "olt")
        answer = session.put(f"{base}/restapi/relay/outlets/=2/state/", data="value=false", timeout=10)
        assert answer.status_code == 207, answer.text
        assert onu_state(process, serial) == "disabled"
        assert session.get(f"{base}/restapi/relay/outlets/=2/state/", timeout=10).text == "[false]"
        assert session.put(f"{base}/restapi/relay/outlets/=2/state/", data="value=true", timeout=10).status_code == 207
        wait_for(lambda: onu_state(process, serial) == "enabled", f"ONU {serial} enabled again", process)
        assert session.get(f"{base}/restapi/relay/outlets/=2/state/", timeout=10).text == "[true]"
        assert session.get(f"{base}/ov.html?cmd=1&p=3&s=0", timeout=10).status_code == 200
        assert onu_state(process, serial) == "disabled"
        outputs = session.get(f"{base}/statusjsn.js?components=1", timeout=10).json()["outputs"]
        assert [output["state"] for output in outputs] == [1, 1, 0, 1, 1]
    assert "power-switch-outlet-off outlet=3 device=onu serial=" + serial in process.log


def test_a_wrong_password_is_refused_by_the_daemon(daemon):
    """A Digest client with a wrong password gets 401 (with a Digest challenge) and the ONU keeps its state; the
    daemon goes on serving."""
    port = free_ports(1)[0]
    process = daemon("--pon", "1", "--onu", "1", "--delay", "0", "--adapter", "builtin",
                     "--power-switch", f"tcp:{port}:interface=127.0.0.1", "--power-switch-password", "lab-secret")
    process.wait_serving()
    _, onus = process.rest_get("/v1/olt/onus")
    serial = onus["items"][0]["SerialNumber"]
    wait_for(lambda: onu_state(process, serial) == "enabled", f"ONU {serial} enabled", process)
    url = f"http://127.0.0.1:{port}/restapi/relay/outlets/=0/state/"
    with robot_session("admin", "1234") as session:
        answer = session.put(url, data="value=false", timeout=10)
    assert answer.status_code == 401
    assert answer.headers["WWW-Authenticate"].startswith("Digest ")
    assert onu_state(process, serial) == "enabled"
    with robot_session("admin", "lab-secret") as session:
        assert session.put(url, data="value=false", timeout=10).status_code == 207
    assert onu_state(process, serial) == "disabled"
    assert "lab-secret" not in process.log


def test_a_busy_power_switch_port_is_one_line_and_nothing_stays_listening(tmp_path, daemon):
    """--power-switch on a port already taken: the daemon exits 1 with one line naming the option, and no other
    listener of it stays bound."""
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        process = daemon("--power-switch", f"tcp:{port}:interface=127.0.0.1")
        assert process.wait_exit() == 1
    assert f"oltsim: --power-switch tcp:{port}:interface=127.0.0.1: address already in use" in process.log
    assert not any(listening(p) for p in process.ports.values())
