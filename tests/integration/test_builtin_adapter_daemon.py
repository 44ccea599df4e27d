"""The built-in adapter in the real daemon: `twistd -n oltsim --adapter builtin` on loopback ports brings every ONU to
eap_response_success_received and dhcp_ack_received by itself (read over REST), refuses a real gRPC EnableIndication
from outside with FAILED_PRECONDITION on both engines of the OpenOLT endpoint, brings an ONU back after a power cycle
asked over REST, and stops cleanly on SIGTERM."""
from __future__ import annotations

import http.client
import re
import shutil
import signal
import subprocess
import time

import grpc
from voltha_protos import openolt_pb2, openolt_pb2_grpc

from engines import engine_options, grpc_engine  # noqa: F401 - the fixture
from test_daemon import REPO, daemon, listening  # noqa: F401 - the fixture

BRING_UP_TIMEOUT = 60.0
POLL = 0.2
EAP_OK = "eap_response_success_received"
DHCP_OK = "dhcp_ack_received"


def services(process) -> dict[str, list[tuple[str, str]]]:
    """serial -> (EapolState, DhcpState) of each of its services, from GET /v1/olt/onus."""
    status, body = process.rest_get("/v1/olt/onus")
    assert status == 200, body
    return {onu["SerialNumber"]: [(s["EapolState"], s["DhcpState"]) for uni in onu.get("unis", ())
                                  for s in uni.get("services", ())]
            for onu in body["items"]}


def wait_all_up(process, count: int, timeout: float = BRING_UP_TIMEOUT) -> dict:
    """Poll GET /v1/olt/onus until `count` ONUs list services and every one is at EAP success and DHCP ack (bounded);
    returns the last reading."""
    deadline = time.monotonic() + timeout
    seen: dict = {}
    while time.monotonic() < deadline:
        if process.process.poll() is not None:
            raise AssertionError(f"oltsim exited with {process.process.returncode}:\n{process.log}")
        seen = services(process)
        if len(seen) == count and all(states and all(s == (EAP_OK, DHCP_OK) for s in states)
                                      for states in seen.values()):
            return seen
        time.sleep(POLL)
    raise AssertionError(f"not every ONU reached {DHCP_OK} within {timeout:g} s: {seen}\n{process.log[-4000:]}")


def rest(process, method: str, path: str) -> int:
    """The status of one v1 REST request (its body is read and dropped)."""
    connection = http.client.HTTPConnection("127.0.0.1", process.ports["rest-v1"], timeout=5)
    try:
        connection.request(method, path)
        response = connection.getresponse()
        response.read()
        return response.status
    finally:
        connection.close()


def test_the_daemon_brings_every_onu_up_by_itself_and_refuses_an_external_adapter(daemon, grpc_engine):
    """--adapter builtin --pon 2 --onu 4: REST shows all 8 ONUs with every service at eap_response_success_received
    and dhcp_ack_received, the log says so once, and an EnableIndication from a real gRPC client is answered
    FAILED_PRECONDITION with the way to connect VOLTHA instead (other OpenOLT calls are still served)."""
    process = daemon("--adapter", "builtin", "--pon", "2", "--onu", "4", *engine_options(grpc_engine))
    process.wait_serving()
    reading = wait_all_up(process, 8)
    assert sorted(reading) == ["BBSM00000001", "BBSM00000002", "BBSM00000003", "BBSM00000004",
                               "BBSM00000101", "BBSM00000102", "BBSM00000103", "BBSM00000104"]
    assert all(len(states) == 4 for states in reading.values())  # the att service on each of the 4 UNIs
    assert process.log.count("builtin-adapter-all-ready serial=BBSIM_OLT_0 onus=8") == 1, process.log
    with grpc.insecure_channel(f"127.0.0.1:{process.ports['openolt']}") as channel:
        stub = openolt_pb2_grpc.OpenoltStub(channel)
        call = stub.EnableIndication(openolt_pb2.Empty(), timeout=10)
        try:
            first = next(call)
        except grpc.RpcError as error:
            code, details = error.code(), error.details()
        else:
            raise AssertionError(f"EnableIndication was served: {first}")
        assert code == grpc.StatusCode.FAILED_PRECONDITION, (code, details)
        assert "--adapter builtin" in details and "VOLTHA" in details, details
        assert stub.GetDeviceInfo(openolt_pb2.Empty(), timeout=10).device_serial_number == "BBSIM_OLT_0"
    assert process.engine("openolt") == grpc_engine
    assert "Traceback" not in process.log, process.log
    if grpc_engine == "native" and shutil.which("jq") and shutil.which("curl"):
        # docs/builtin-adapter.md's curl | jq recipe, on this daemon's REST port, prints what the doc says.
        assert run_doc_recipe(process) == [f"{serial} enabled {EAP_OK}/{DHCP_OK}" for serial in sorted(reading)]


def run_doc_recipe(process) -> list[str]:
    """The shell block of docs/builtin-adapter.md that reads the ONUs with jq, run against `process`; its lines."""
    doc = (REPO / "docs" / "builtin-adapter.md").read_text()
    block = next(b for b in re.findall(r"^```sh\n(.*?)^```", doc, re.S | re.M) if "jq" in b)
    script = "\n".join(line for line in block.splitlines() if not line.startswith("#"))
    script = script.replace("localhost:50071", f"127.0.0.1:{process.ports['rest-v1']}")
    done = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def test_a_power_cycle_over_rest_is_followed_and_sigterm_stops_cleanly(daemon):
    """DELETE then POST /v1/olt/onus/{sn} (shutdown, power on): the ONU's services are reset, then the built-in
    adapter brings it back to dhcp_ack_received; SIGTERM then stops the daemon with exit code 0 and no port left."""
    process = daemon("--adapter", "builtin", "--pon", "1", "--onu", "2")
    process.wait_serving()
    wait_all_up(process, 2)
    assert rest(process, "DELETE", "/v1/olt/onus/BBSM00000002") == 200
    assert all(s == ("created", "created") for s in services(process)["BBSM00000002"])
    assert rest(process, "POST", "/v1/olt/onus/BBSM00000002") == 200
    wait_all_up(process, 2)
    assert process.log.count("builtin-adapter-onu-ready serial=BBSM00000002") == 2, process.log
    process.process.send_signal(signal.SIGTERM)
    assert process.wait_exit() == 0, process.log
    assert "builtin-adapter-stopped" in process.log
    assert not any(listening(port) for port in process.ports.values())
    assert "Traceback" not in process.log, process.log


def test_after_a_reboot_over_rest_the_adapter_reconnects_and_brings_every_onu_back(daemon):
    """POST /v1/olt/reboot: the ONUs go down at once, the OpenOLT endpoint stops and comes back after the reboot delay,
    the built-in adapter connects again by itself and every ONU returns to dhcp_ack_received."""
    process = daemon("--adapter", "builtin", "--pon", "2", "--onu", "2", "--reboot-delay", "1")
    process.wait_serving()
    wait_all_up(process, 4)
    assert rest(process, "POST", "/v1/olt/reboot") == 200
    assert not any(s == (EAP_OK, DHCP_OK) for states in services(process).values() for s in states)
    wait_all_up(process, 4)
    log = process.log
    assert "builtin-adapter-disconnected serial=BBSIM_OLT_0 status=UNAVAILABLE" in log, log
    assert "builtin-adapter-connected serial=BBSIM_OLT_0 pons=2 connection=2" in log, log
    assert log.count("builtin-adapter-all-ready serial=BBSIM_OLT_0 onus=4") == 2, log
    assert "Traceback" not in log, log
