"""gRPC `oltsim.v1.Oltsim/Capture` in the real daemon: `twistd -n oltsim --adapter builtin --pon 2 --onu 4`
brings its ONUs up by itself; a grpcio client reads the capture and the bytes are parsed as pcapng: the same blocks
and packets as REST `GET /v1/capture` gives for the same filters, tshark finds no malformed packet (skipped with the
reason when tshark is absent), a live capture follows a power cycle and ends after `count` frames, and the
refusals are those of the REST endpoint (unknown ONU, malformed duration, capture off, no token)."""
from __future__ import annotations

import http.client
import struct
import time

import grpc
import pytest

from oltsim._proto import oltsim_pb2, oltsim_pb2_grpc
from oltsim.capture.pcapng import EPB, IDB, IF_NAME, OPT_COMMENT, SHB, read_blocks
from test_builtin_adapter_daemon import wait_all_up
from test_daemon import Daemon

ONUS = 8
SERIAL = "BBSM00000102"
CALL_TIMEOUT = 30.0


@pytest.fixture(scope="module")
def olt(tmp_path_factory):
    """One daemon for the module: 2 PONs x 4 ONUs, 1 UNI, the built-in adapter, the default ring; every ONU up."""
    process = Daemon(tmp_path_factory.mktemp("grpc-capture"), "--adapter", "builtin", "--pon", "2", "--onu", "4",
                     "--uni", "1")
    try:
        process.wait_serving()
        wait_all_up(process, ONUS, timeout=120)
        yield process
    finally:
        process.close()


def rest(process, path: str, headers=None) -> tuple[int, bytes]:
    connection = http.client.HTTPConnection("127.0.0.1", process.ports["rest-v1"], timeout=CALL_TIMEOUT)
    try:
        connection.request("GET", path, headers=headers or {})
        response = connection.getresponse()
        return response.status, response.read()
    finally:
        connection.close()


def grpc_capture(process, metadata=(), **fields) -> tuple[bytes, list[int]]:
    """The pcapng bytes of one Capture call (its chunks joined) and each chunk's `dropped`."""
    with grpc.insecure_channel(f"127.0.0.1:{process.ports['grpc-v1']}") as channel:
        chunks = list(oltsim_pb2_grpc.OltsimStub(channel).Capture(oltsim_pb2.CaptureRequest(**fields),
                                                                  timeout=CALL_TIMEOUT, metadata=metadata))
    return b"".join(chunk.data for chunk in chunks), [chunk.dropped for chunk in chunks]


def _options(body: bytes) -> dict[int, bytes]:
    found, offset = {}, 0
    while offset + 4 <= len(body):
        code, length = struct.unpack_from("<HH", body, offset)
        if code == 0:
            break
        found.setdefault(code, body[offset + 4:offset + 4 + length])
        offset += 4 + (length + 3) // 4 * 4
    return found


def packets(data: bytes) -> list[tuple[str, float, bytes, str]]:
    """(interface name, time, frame, comment) of each Enhanced Packet Block; asserts the block structure: a Section
    Header first, then only interface descriptions and packets, each packet naming an interface declared before."""
    blocks = list(read_blocks(data))
    assert sum(8 + len(body) + 4 for _, body in blocks) == len(data), "a block is cut or malformed"
    assert blocks and blocks[0][0] == SHB
    assert struct.unpack_from("<I", blocks[0][1])[0] == 0x1A2B3C4D
    names: list[str] = []
    out = []
    for block_type, body in blocks[1:]:
        assert block_type in (IDB, EPB), hex(block_type)
        if block_type == IDB:
            names.append(_options(body[8:]).get(IF_NAME, b"").decode())
            continue
        interface, high, low, captured, _ = struct.unpack_from("<IIIII", body)
        assert interface < len(names)
        options = _options(body[20 + (captured + 3) // 4 * 4:])
        out.append((names[interface], ((high << 32) | low) / 1e6, body[20:20 + captured],
                    options.get(OPT_COMMENT, b"").decode()))
    return out


def test_the_ring_of_one_onu_is_the_same_pcapng_as_rest_gives(olt, tmp_path):
    """Capture(onu_serials=[SN], since=all, duration=0) is pcapng (a Section Header, interface descriptions, packets)
    holding the packets REST gives for onu=SN&since=all&duration=0: that ONU's OMCI and UNI, its NNI frames, events;
    tshark reads it without a malformed packet."""
    data, dropped = grpc_capture(olt, onu_serials=[SERIAL.lower()], since="all", duration="0")
    status, body = rest(olt, f"/v1/capture?onu={SERIAL}&since=all&duration=0")
    assert status == 200
    mine = packets(data)
    assert mine == packets(body)
    assert set(dropped) == {0}
    interfaces = {name for name, _, _, _ in mine}
    assert {f"{SERIAL} omci", f"{SERIAL} uni-0", "nni-0", "events"} <= interfaces
    assert interfaces <= {f"{SERIAL} omci", f"{SERIAL} uni-0", "nni-0", "events"}
    omci = [frame for name, _, frame, _ in mine if name == f"{SERIAL} omci"]
    assert len(omci) > 100 and all(frame[12:14] == b"\x88\xb5" for frame in omci)
    assert all(f"serial={SERIAL}" in comment for name, _, _, comment in mine if name == "nni-0")
    path = tmp_path / "onu.pcapng"
    path.write_bytes(data)
    tshark = pytest.importorskip("tshark", reason="tests/integration/tshark.py is not there")
    assert tshark.fields(path, "_ws.malformed || _ws.expert.severity == error", "frame.number") == []
    assert len(tshark.fields(path, "eth.type == 0x88b5", "frame.number")) == len(omci)


def test_the_filters_are_the_rest_query_s(olt):
    """pon_id, omci and packets keep what the same REST parameters keep (pon_id 0 is a PON, not 'every PON')."""
    for fields, query in (({"pon_id": 0, "omci": True}, "pon=0&omci"), ({"pon_id": 1, "packets": True},
                                                                         "pon=1&packets=true"),
                          ({"count": 30}, "count=30")):
        data, _ = grpc_capture(olt, since="all", duration="0", **fields)
        status, body = rest(olt, f"/v1/capture?since=all&duration=0&{query}")
        assert status == 200
        assert packets(data) == packets(body), query
    omci, _ = grpc_capture(olt, since="all", duration="0", pon_id=0, omci=True)
    names = {name for name, _, _, _ in packets(omci)} - {"events"}
    assert names and all(name.startswith("BBSM000000") and name.endswith(" omci") for name in names)
    counted, _ = grpc_capture(olt, since="all", count=30)
    assert len([p for p in packets(counted) if p[0] != "events"]) == 30


def test_a_live_capture_follows_a_power_cycle_and_ends_after_count_frames(olt):
    """Without since, Capture streams what happens from the call on: an ONU powered off and on again shows its
    MIB upload again (OMCI on its interface) and the stream ends by itself after `count` frames."""
    with grpc.insecure_channel(f"127.0.0.1:{olt.ports['grpc-v1']}") as channel:
        call = oltsim_pb2_grpc.OltsimStub(channel).Capture(
            oltsim_pb2.CaptureRequest(onu_serials=[SERIAL], omci=True, count=20), timeout=CALL_TIMEOUT)
        first = next(call)   # the Section Header: the stream is open before the ONU is cycled
        started = time.time()
        for method in ("DELETE", "POST"):
            connection = http.client.HTTPConnection("127.0.0.1", olt.ports["rest-v1"], timeout=CALL_TIMEOUT)
            connection.request(method, f"/v1/olt/onus/{SERIAL}")
            assert connection.getresponse().status == 200
            connection.close()
        data = first.data + b"".join(chunk.data for chunk in call)
        assert call.code() == grpc.StatusCode.OK
    frames = [p for p in packets(data) if p[0] != "events"]
    assert len(frames) == 20 and {p[0] for p in frames} == {f"{SERIAL} omci"}
    assert all(p[1] >= started - 1 for p in frames)
    wait_all_up(olt, ONUS, timeout=60)


def test_refusals_are_rest_s(olt):
    """An unknown ONU is NOT_FOUND, a malformed since INVALID_ARGUMENT (naming it), as REST's 404 and 400."""
    with grpc.insecure_channel(f"127.0.0.1:{olt.ports['grpc-v1']}") as channel:
        stub = oltsim_pb2_grpc.OltsimStub(channel)
        for fields, code, word in (({"onu_serials": ["BBSM0000ffff"]}, grpc.StatusCode.NOT_FOUND, "BBSM0000ffff"),
                                   ({"since": "soon"}, grpc.StatusCode.INVALID_ARGUMENT, "since"),
                                   ({"pon_id": 9}, grpc.StatusCode.NOT_FOUND, "9")):
            with pytest.raises(grpc.RpcError) as caught:
                list(stub.Capture(oltsim_pb2.CaptureRequest(**fields), timeout=CALL_TIMEOUT))
            assert caught.value.code() == code and word.lower() in caught.value.details().lower(), caught.value
    assert rest(olt, "/v1/capture?onu=BBSM0000ffff")[0] == 404


def test_the_token_guards_it_and_capture_off_is_not_found(tmp_path):
    """With --api-token, Capture without it is UNAUTHENTICATED; with it and --capture-size 0, NOT_FOUND saying
    capture is off."""
    process = Daemon(tmp_path, "--api-token", "secret", "--capture-size", "0")
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                assert rest(process, "/v1/olt")[0] == 401
                break
            except OSError:
                assert time.monotonic() < deadline, process.log
                time.sleep(0.1)
        with pytest.raises(grpc.RpcError) as caught:
            grpc_capture(process, since="all", duration="0")
        assert caught.value.code() == grpc.StatusCode.UNAUTHENTICATED
        with pytest.raises(grpc.RpcError) as caught:
            grpc_capture(process, metadata=(("authorization", "Bearer secret"),), since="all", duration="0")
        assert caught.value.code() == grpc.StatusCode.NOT_FOUND and "capture is off" in caught.value.details()
    finally:
        process.close()



def test_the_grpcio_engine_streams_the_same_bytes(tmp_path):
    """On the grpc.aio fallback engine (--grpc-engine grpcio) Capture gives the ring as REST does, as on the native
    one (one servicer for both)."""
    process = Daemon(tmp_path, "--grpc-engine", "grpcio", "--adapter", "builtin", "--pon", "1", "--onu", "2",
                     "--uni", "1")
    try:
        process.wait_serving()
        wait_all_up(process, 2, timeout=60)
        assert process.engine("grpc-v1") == "grpcio"
        data, _ = grpc_capture(process, since="all", duration="0")
        status, body = rest(process, "/v1/capture?since=all&duration=0")
        assert status == 200 and packets(data) == packets(body) and len(packets(data)) > 200
    finally:
        process.close()
