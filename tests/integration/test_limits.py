"""The daemon's limits, checked against the real daemon over loopback sockets: request bodies capped before they are
read, JSON bodies parsed with a depth limit, flows per ONU and per OLT, id ranges validated before anything is stored,
long flow lists paged and written a slice at a time, and an access token that never reaches the log."""
from __future__ import annotations

import http.client
import json
import socket
import ssl
import time

import grpc
import pytest
from voltha_protos import openolt_pb2

from oltsim._proto import legacy_pb2, legacy_pb2_grpc
from scripted_adapter import ScriptedAdapter, free_ports
from test_daemon import daemon  # noqa: F401 - the fixture
from test_grpcserver import write_self_signed

TOKEN = "hardening-s3cret-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
TIMEOUT = 10.0
BIG = 30_000_000  # the attack run's v0 bulk body: {"onus": [...]} with a million entries
MIB = 1024 * 1024  # --max-request-body's default


def token_daemon(daemon, tmp_path, *arguments):
    """A daemon that needs TOKEN on its control APIs (read from a file, as a lab runs it), once it serves."""
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN + "\n")
    process = daemon("--api-token-file", str(token_file), "--delay", "0", *arguments)
    deadline = time.monotonic() + 30
    while request(process.ports["rest-v1"], "GET", "/v1/olt", headers=AUTH, raise_errors=False)[0] != 200:
        assert process.process.poll() is None and time.monotonic() < deadline, process.log
        time.sleep(0.1)
    return process


def request(port, method, path, body=None, headers=None, raise_errors=True):
    """(status, headers, JSON body) of one HTTP request; (None, None, None) when the connection fails and not
    `raise_errors`."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=TIMEOUT)
    try:
        connection.request(method, path, body=body, headers=headers or {})
        response = connection.getresponse()
        return response.status, response.headers, json.loads(response.read() or b"null")
    except OSError:
        if raise_errors:
            raise
        return None, None, None
    finally:
        connection.close()


def raw_exchange(port: int, head: bytes, body_parts=()) -> bytes:
    """Send `head` and then each of `body_parts` on one connection, and read until the server closes it (bounded by
    TIMEOUT); what the server sent. A part the server no longer takes ends the sending."""
    with socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT) as sock:
        sock.sendall(head)
        for part in body_parts:
            try:
                sock.sendall(part)
            except OSError:
                break
        return read_until_closed(sock)


def read_until_closed(sock: socket.socket) -> bytes:
    """Everything the server sends on `sock` until it closes the connection (each read bounded by the socket's
    timeout)."""
    chunks = []
    while True:
        data = sock.recv(65536)
        if not data:
            return b"".join(chunks)
        chunks.append(data)


def split_response(raw: bytes) -> tuple[int, dict, bytes]:
    head, _, body = raw.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = {name.lower(): value.strip() for name, value in (line.split(":", 1) for line in lines[1:])}
    return int(lines[0].split()[1]), headers, body


def test_bodies_above_the_limit_are_refused_413_from_their_headers(daemon, tmp_path):
    """A 30 MB body announced by Content-Length is answered 413 (JSON error, v0's Deprecation header, the connection
    closed) as soon as its headers are in, without the token and before a byte of it is sent, on v0, v1 and SADIS;
    a chunked body is refused once it passes the limit, before it ends; a client that sends the whole body first
    still reads the 413; and the daemon serves on, with the refusals logged and no access token in the log."""
    process = token_daemon(daemon, tmp_path)  # the default limit, 1 MiB
    head = (b"POST /v0/olt/onus?access_token=%s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b"Expect: 100-continue\r\nContent-Length: %d\r\n\r\n" % (TOKEN.encode(), BIG))
    status, headers, body = split_response(raw_exchange(process.ports["rest-v0"], head))
    assert status == 413 and headers["connection"] == "close" and headers["deprecation"] == "true"
    error = json.loads(body)
    assert error["code"] == grpc.StatusCode.RESOURCE_EXHAUSTED.value[0]
    assert error["message"] == f"the request body ({BIG} bytes) is larger than this server accepts ({MIB} bytes)"
    for listener, path in (("rest-v1", b"/v1/olt/reboot"), ("sadis", b"/v2/static")):
        raw = raw_exchange(process.ports[listener], b"POST %s HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n"
                           % (path, BIG))
        assert split_response(raw)[0] == 413, (listener, raw[:200])

    # Chunked: 32 chunks of 64 KiB pass the limit at the seventeenth; the terminating chunk never comes.
    chunk = b"%x\r\n%s\r\n" % (65536, b" " * 65536)
    raw = raw_exchange(process.ports["rest-v0"], b"POST /v0/olt/onus HTTP/1.1\r\nHost: x\r\n"
                       b"Transfer-Encoding: chunked\r\n\r\n", [chunk] * 32)
    status, _, body = split_response(raw)
    assert status == 413 and json.loads(body)["message"] == (
        f"the request body is larger than this server accepts ({MIB} bytes)")

    # http.client writes the whole body before it reads: the daemon drops what follows the refusal meanwhile.
    status, headers, body = request(process.ports["rest-v0"], "POST", "/v0/olt/onus", body=b" " * BIG,
                                    headers=AUTH)
    assert status == 413 and body["code"] == grpc.StatusCode.RESOURCE_EXHAUSTED.value[0]

    assert request(process.ports["rest-v1"], "GET", "/v1/olt", headers=AUTH)[0] == 200
    assert process.log.count("rest-body-refused surface=rest-v0") == 3
    assert f"rest-body-refused surface=rest-v0 method=POST path=/v0/olt/onus?<redacted> limit={MIB}" in process.log
    assert TOKEN not in process.log


def test_bodies_above_the_limit_are_refused_413_over_tls_too(daemon, tmp_path):
    """On an ssl: REST endpoint the 413 is written and the TLS session closed at once (a TCP half-close under TLS
    cut the session, and the client got nothing): a client that sent only the headers reads the 413 and the end
    of the stream, one that writes the whole 30 MB body first reads the 413 too, and the daemon serves on."""
    key, cert, _ = write_self_signed(tmp_path)
    port = free_ports(1)[0]
    process = token_daemon(daemon, tmp_path, "--rest-v0",
                           f"ssl:{port}:interface=127.0.0.1:privateKey={key}:certKey={cert}")
    context = ssl.create_default_context(cafile=str(cert))
    context.check_hostname = False
    with socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT) as raw, context.wrap_socket(raw) as sock:
        sock.sendall(b"POST /v0/olt/onus HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % BIG)
        chunks = []
        while data := sock.recv(65536):
            chunks.append(data)
    status, headers, body = split_response(b"".join(chunks))
    assert (status, headers["deprecation"]) == (413, "true") and json.loads(body)["code"] == 8
    connection = http.client.HTTPSConnection("127.0.0.1", port, context=context, timeout=TIMEOUT)
    try:
        connection.request("POST", "/v0/olt/onus", body=b" " * BIG, headers=AUTH)
        assert connection.getresponse().status == 413
    finally:
        connection.close()
    assert request(process.ports["rest-v1"], "GET", "/v1/olt", headers=AUTH)[0] == 200
    assert "Traceback" not in process.log


def test_v0_bulk_bodies_are_parsed_within_limits(daemon, tmp_path):
    """A v0 bulk body nested 1,000 deep is answered 400 with a plain message (not 500 and a RecursionError), and a
    batch listing more ONUs than the OLT has is answered 400 before its records are parsed; nothing is logged as a
    failure and the daemon serves on."""
    process = token_daemon(daemon, tmp_path, "--pon", "1", "--onu", "2")
    port = process.ports["rest-v0"]
    deep = b'{"onus":' + b"[" * 1000 + b"]" * 1000 + b"}"
    status, _, body = request(port, "POST", "/v0/olt/onus", body=deep, headers=AUTH)
    assert (status, body["message"]) == (400, "request body nests deeper than 32 levels")
    many = json.dumps({"onus": [{"onu_serial": "BBSM00000001"}] * 3}).encode()
    status, _, body = request(port, "DELETE", "/v0/olt/onus", body=many, headers=AUTH)
    assert (status, body["message"]) == (400, "onus lists more ONUs (3) than this OLT has (2)")
    assert request(port, "GET", "/v0/olt/onus", headers=AUTH)[0] == 200
    assert "Traceback" not in process.log and "RecursionError" not in process.log
    assert "rest-handler-failed" not in process.log


def test_a_token_in_the_query_string_never_reaches_the_log(daemon, tmp_path):
    """Requests refused 4xx (logged by the access log) that carry the access token in their query string or in a
    Referer's, on v1, v0 and SADIS: the log file never holds the token; it shows the paths, queries redacted."""
    process = token_daemon(daemon, tmp_path)
    query = f"?access_token={TOKEN}"
    referer = {"Referer": f"http://lab.example/page?token={TOKEN}"}
    assert request(process.ports["rest-v1"], "GET", "/v1/olt" + query, headers=referer)[0] == 401
    assert request(process.ports["rest-v1"], "GET", "/v1/olt/onus/NOPE" + query, headers=AUTH)[0] == 400
    assert request(process.ports["rest-v0"], "GET", f"/v0/olt/onus/BBSM0000FFFF?{TOKEN}", headers=AUTH)[0] == 404
    assert request(process.ports["sadis"], "GET", "/v2/subscribers/NOPE-1" + query)[0] == 404
    time.sleep(0.5)  # the access log is written as the answer goes out
    log = process.log
    assert '"GET /v1/olt?<redacted> HTTP/1.1" 401' in log
    assert '"GET /v1/olt/onus/NOPE?<redacted> HTTP/1.1" 400' in log
    assert "http://lab.example/page?<redacted>" in log
    assert TOKEN not in log


def _bring_up_one_onu(process):
    adapter = ScriptedAdapter(f"127.0.0.1:{process.ports['openolt']}")
    adapter.wait_ready()
    _, onus = adapter.bring_up(1)
    return adapter, onus[0]


def _nni_flow(flow_id: int) -> openolt_pb2.Flow:
    """A trap-from-NNI flow as VOLTHA sends it: no PON, ONU, UNI, GEM port or alloc id (-1)."""
    return openolt_pb2.Flow(access_intf_id=-1, onu_id=-1, uni_id=-1, gemport_id=-1, alloc_id=-1, flow_id=flow_id,
                            flow_type="downstream", network_intf_id=0, priority=10000, cookie=flow_id,
                            classifier=openolt_pb2.Classifier(eth_type=0x88CC), action=openolt_pb2.Action(
                                cmd=openolt_pb2.ActionCmd(trap_to_host=True)))


def _refusal(call) -> tuple[grpc.StatusCode, str]:
    with pytest.raises(grpc.RpcError) as caught:
        call()
    return caught.value.code(), caught.value.details()


def test_out_of_range_ids_are_refused_and_every_view_keeps_answering(daemon, tmp_path):
    """FlowAdd with GEM port -7 (accepted before, after which the v0 ONU views answered 500), an alloc id, a p-bit
    map and a UNI port number out of range, and schedulers with an alloc id out of range are refused
    INVALID_ARGUMENT with a plain reason; nothing is stored, and every view of the ONU answers 200/OK."""
    process = token_daemon(daemon, tmp_path)
    adapter, onu = _bring_up_one_onu(process)
    with adapter:
        good = adapter.eapol_flow(onu)
        cases = {"gemport_id": -7, "alloc_id": 70000, "port_no": 2**32 - 1}
        for field, value in cases.items():
            flow = openolt_pb2.Flow()
            flow.CopyFrom(good)
            setattr(flow, field, value)
            code, details = _refusal(lambda: adapter.flow_add(flow))
            assert code == grpc.StatusCode.INVALID_ARGUMENT, (field, details)
            assert details.startswith(f"{field} must be 0..") and details.endswith(f"(got {value})")
        flow = openolt_pb2.Flow()
        flow.CopyFrom(good)
        flow.replicate_flow = True
        flow.pbit_to_gemport[9] = 1024
        assert _refusal(lambda: adapter.flow_add(flow)) == (
            grpc.StatusCode.INVALID_ARGUMENT, "pbit_to_gemport key (a p-bit) must be 0..7 (got 9)")
        schedulers = adapter.schedulers(onu)
        schedulers.traffic_scheds[0].alloc_id = 4_000_000_000
        assert _refusal(lambda: adapter.stub.CreateTrafficSchedulers(schedulers, timeout=TIMEOUT)) == (
            grpc.StatusCode.INVALID_ARGUMENT, "alloc_id must be 0..16383 (got 4000000000)")

        port = process.ports["rest-v0"]
        for path in ("/v0/olt/onus", f"/v0/olt/onus/{onu.serial}", "/v0/olt/ports/0/onus",
                     f"/v0/olt/ports/0/onus/{onu.onu_id}"):
            status, _, body = request(port, "GET", path, headers=AUTH)
            assert status == 200, (path, body)
        assert request(port, "GET", "/v0/olt/flows", headers=AUTH)[2] == {"flows": []}
        with grpc.insecure_channel(f"127.0.0.1:{process.ports['grpc-v0']}") as channel:
            onus = legacy_pb2_grpc.BBSimServiceStub(channel).ONUStatus(
                legacy_pb2.ONURequest(), timeout=TIMEOUT, metadata=[("authorization", f"Bearer {TOKEN}")])
        assert [(o.onu_serial, list(o.gemports)) for o in onus.onus] == [(onu.serial, [])]


def test_flows_beyond_the_limits_are_refused_resource_exhausted(daemon, tmp_path):
    """With --max-flows-per-onu 3 and --max-flows 5: a fourth flow of an ONU, and a sixth flow of the OLT, are
    refused RESOURCE_EXHAUSTED with a plain reason and not stored; a flow that replaces a stored one (same PON, id
    and type, as BBR sends) is still accepted at the limit."""
    process = token_daemon(daemon, tmp_path, "--max-flows", "5", "--max-flows-per-onu", "3")
    adapter, onu = _bring_up_one_onu(process)
    with adapter:
        flows = []
        for flow_id in (1, 2, 3, 4):
            flow = adapter.eapol_flow(onu)
            flow.flow_id = flow_id
            flows.append(flow)
        for flow in flows[:3]:
            adapter.flow_add(flow)
        assert _refusal(lambda: adapter.flow_add(flows[3])) == (
            grpc.StatusCode.RESOURCE_EXHAUSTED,
            f"ONU {onu.serial} holds 3 flows, the limit per ONU (3); remove flows before adding more")
        adapter.flow_add(flows[0])  # a replacement
        adapter.flow_add(_nni_flow(100))
        adapter.flow_add(_nni_flow(101))
        assert _refusal(lambda: adapter.flow_add(_nni_flow(102))) == (
            grpc.StatusCode.RESOURCE_EXHAUSTED,
            "the OLT holds 5 flows, its limit (5); remove flows before adding more")
        adapter.stub.FlowRemove(openolt_pb2.Flow(access_intf_id=-1, flow_id=100, flow_type="downstream"),
                                timeout=TIMEOUT)
        adapter.flow_add(_nni_flow(102))
    status, _, body = request(process.ports["rest-v1"], "GET", "/v1/olt/flows", headers=AUTH)
    assert status == 200 and body["flow_count"] == 5
    assert [int(f["flow_id"]) for f in body["flows"]] == [2, 3, 1, 101, 102]


def test_long_flow_lists_are_paged_and_written_in_slices(daemon, tmp_path):
    """600 flows (more than one slice of the writer): GET /v1/olt/flows answers all of them, in order, as a chunked
    stream; offset and limit cut pages (flow_count stays the number selected) on v1 and v0; a bad page parameter
    is 400."""
    process = token_daemon(daemon, tmp_path)
    adapter = ScriptedAdapter(f"127.0.0.1:{process.ports['openolt']}")
    with adapter:
        adapter.wait_ready()
        for flow_id in range(1, 601):
            adapter.flow_add(_nni_flow(flow_id))
    v1, v0 = process.ports["rest-v1"], process.ports["rest-v0"]
    status, headers, body = request(v1, "GET", "/v1/olt/flows", headers=AUTH)
    assert status == 200 and headers["Transfer-Encoding"] == "chunked"
    assert body["flow_count"] == 600
    assert [int(f["flow_id"]) for f in body["flows"]] == list(range(1, 601))
    assert body["flows"][0]["classifier"]["eth_type"] == 0x88CC and "pbit_to_gemport" in body["flows"][0]
    status, _, page = request(v1, "GET", "/v1/olt/flows?offset=590&limit=20", headers=AUTH)
    assert status == 200 and page["flow_count"] == 600
    assert page["flows"] == body["flows"][590:]
    status, _, page = request(v0, "GET", "/v0/olt/flows?offset=10&limit=3", headers=AUTH)
    assert status == 200 and [int(f["flow_id"]) for f in page["flows"]] == [11, 12, 13]
    status, _, error = request(v1, "GET", "/v1/olt/flows?limit=-1", headers=AUTH)
    assert (status, error["message"]) == (400, "limit must be an integer 0..999999999 (got '-1')")
