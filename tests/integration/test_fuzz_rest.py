"""schemathesis against both REST APIs on real loopback sockets, the whole service started in this process.

The documents the servers serve (GET /v1/openapi.json, /v0/openapi.json) drive the generation: for every operation,
requests that fit the document (positive) and requests that break it (negative: wrong types, missing or extra
parameters, bad bodies). Path and query values that name something the simulator has (its ONU serials, PON and ONU
ids, alarm names, on/off) are offered beside the random ones, so that state-changing calls act. Three phases: before
any adapter connected, with the scripted adapter holding the indication stream (after it brought up and provisioned
every ONU), and after it went away. Then raw requests that schemathesis does not send (documented paths with
segments replaced by odd or non-UTF-8 bytes, doubled slashes, lower-case and unknown methods, odd Host headers,
query strings and bodies) on a socket of their own.

Pass criterion: no 5xx, every answer as documented (status, content type, body schema), no request hangs (client
timeout), nothing logged as a failure; afterwards the model invariants of `conftest.model_invariants` hold, the
process still answers GET /v1/olt, and stopping it leaves no delayed call. Examples per operation and mode are kept
small for CI; `OLTSIM_FUZZ_EXAMPLES=N` runs N (docs/fuzzing.md).
"""
from __future__ import annotations

import copy
import time
from collections import Counter

import pytest
import pytest_twisted
import treq
from twisted.internet import reactor
from twisted.internet.task import deferLater
from twisted.internet.threads import deferToThread
from twisted.logger import LogLevel, globalLogPublisher

from conftest import fuzz_examples, model_invariants
from oltsim.api.v0.usecases_v0 import ACTIONS
from oltsim.api.v0.mapping import LEGACY_ONU_ALARMS
from oltsim.model.alarms import ONU_ALARMS
from scripted_adapter import ScriptedAdapter
from test_adapter import HTTP_TIMEOUT, _listening_port, hsia_c_tags, start_oltsim, stop_oltsim

schemathesis = pytest.importorskip("schemathesis")
requests = pytest.importorskip("requests")
from hypothesis import HealthCheck, given, settings, strategies as st  # noqa: E402  (schemathesis brings it)
from hypothesis.errors import Unsatisfiable  # noqa: E402
from schemathesis import GenerationMode  # noqa: E402
from schemathesis.checks import not_a_server_error  # noqa: E402
from schemathesis.specs.openapi.checks import (content_type_conformance, response_schema_conformance,  # noqa: E402
                                               status_code_conformance)

CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]
POSITIVE, DERANDOMIZE = fuzz_examples(10)
NEGATIVE = max(1, POSITIVE // 2)
#: Not fuzzed by schemathesis, whose client waits for the end of a response: the event stream and a live capture
#: never end by themselves (the raw-request fuzz below reads their head only).
SKIP = {("GET", "/v1/events"), ("GET", "/v1/capture")}
#: the content types of those streams, by which the raw fuzz knows it has its answer
STREAMED = (b"text/event-stream", b"application/x-pcapng")


def known_values(serials: list[str]) -> dict[str, list]:
    """Values with a meaning on a 2x2 OLT, per parameter name of either API."""
    return {
        "SerialNumber": serials, "OnuSerialNumber": serials, "onu_serial": serials, "onu.onu_serial": serials,
        "serial_number": serials + ["BBSIM_OLT_0"],
        "PonPortId": [0, 1], "onu.pon_port_id": [0, 1], "InterfaceID": [0, 1], "port_id": [0, 1],
        "onu.onu_id": [1, 2], "UniID": [0, 1, 3],
        "InterfaceType": ["pon", "nni"], "port_type": ["pon", "nni"],
        "Status": ["on", "off"], "status": ["on", "off"],
        "AlarmType": list(ONU_ALARMS), "alarm_type": list(LEGACY_ONU_ALARMS),
        "GroupAddress": ["224.0.0.22", "239.1.1.1"], "VLAN": [0, 900],
        "device_type": ["olt", "onu"], "action": list(ACTIONS),
    }


def prepared(document: dict) -> dict:
    """The served document as schemathesis is given it: dotted path placeholders ({onu.onu_serial}) renamed, since
    schemathesis fills paths with str.format."""
    document = copy.deepcopy(document)
    paths = {}
    for path, item in document["paths"].items():
        for operation in item.values():
            for param in operation.get("parameters", []):
                if param["in"] == "path" and "." in param["name"]:
                    new = param["name"].replace(".", "__")
                    path = path.replace("{%s}" % param["name"], "{%s}" % new)
                    param["name"] = new
        paths[path] = item
    document["paths"] = paths
    return document


def breakable(operation) -> bool:
    """Whether negative generation can break a request of `operation`: a query parameter, a body, or a path
    parameter that is not any string (every path segment is a string, so those cannot be made invalid)."""
    if operation.query or operation.body:
        return True
    return any(param.definition.get("schema", {}).get("type") != "string" for param in operation.path_parameters)


def with_known_values(case, data, values: dict) -> None:
    """Give most path and query parameters that name something a value the simulator has (schemathesis's own are
    random), so that calls get past the lookups and act."""
    for location in (case.path_parameters, case.query):
        for name in list(location or ()):
            known = values.get(name.replace("__", "."))
            if known and data.draw(st.sampled_from((True, True, False)), label=f"known {name}"):
                location[name] = data.draw(st.sampled_from(known), label=name)


def acting_last(operations) -> list:
    """Operations in document order, those that reboot the OLT last (after a reboot most calls are refused until
    the adapter brings the OLT up again)."""
    return sorted(operations, key=lambda op: "reboot" in op.path or "/action/" in op.path)


def fuzz_api(document: dict, base_url: str, values: dict, phase: str, answers: Counter) -> list[str]:
    """Run every operation of `document` against `base_url` (blocking; on a thread); returns the failures and counts
    each answer in `answers` by (method, path, status)."""
    schema = schemathesis.openapi.from_dict(prepared(document))
    session = requests.Session()
    failures = []
    try:
        for operation in acting_last(result.ok() for result in schema.get_all_operations()):
            if (operation.method.upper(), operation.path.replace("__", ".")) in SKIP:
                continue
            for mode, count in ((GenerationMode.POSITIVE, POSITIVE), (GenerationMode.NEGATIVE, NEGATIVE)):
                if mode is GenerationMode.NEGATIVE and not breakable(operation):
                    continue

                @settings(max_examples=count, derandomize=DERANDOMIZE, deadline=None, database=None,
                          suppress_health_check=list(HealthCheck))
                @given(case=operation.as_strategy(generation_mode=mode), data=st.data())
                def run(case, data):
                    with_known_values(case, data, values)
                    response = case.call(base_url=base_url, session=session, timeout=HTTP_TIMEOUT)
                    answers[(operation.method.upper(), operation.path, response.status_code)] += 1
                    case.validate_response(response, checks=CHECKS)

                try:
                    run()
                except Unsatisfiable:
                    pass  # negative mode found nothing it could break in this operation
                except Exception as exc:  # collected, so that one finding does not hide the others
                    failures.append(f"[{phase}] {mode.value} {operation.method.upper()} {operation.path}: "
                                    f"{type(exc).__name__}: {exc}")
    finally:
        session.close()
    return failures


# ---- raw requests: what schemathesis does not send ----------------------------------------------------------

STANDARD_METHODS = ("GET", "POST", "DELETE", "PATCH", "PUT", "HEAD", "OPTIONS")
SEGMENTS = st.one_of(
    st.sampled_from(["", ".", "..", "%2F", "%FF", "%C3%28", "%00", "BBSM00000001", "0", "-1", "99999999999999999999",
                     "on", "pon", "olt", "onu", "reboot", "openapi.json", "x" * 300]),
    st.binary(min_size=1, max_size=8).map(lambda raw: "".join(f"%{b:02X}" for b in raw)),
    st.text(alphabet=st.characters(min_codepoint=0x21, max_codepoint=0x7E, exclude_characters="/?#%"), max_size=8))


@st.composite
def raw_requests(draw, templates: list[str]) -> tuple[str, bytes, bytes, bytes]:
    """(method, path and query, extra header lines, body): a documented path with segments replaced, doubled or
    dropped, any method, odd query strings, Host headers and bodies."""
    method = draw(st.one_of(st.sampled_from(STANDARD_METHODS), st.sampled_from(["get", "Post", "FOO", "M-SEARCH",
                                                                                  "G\xc3\xa9T", "\xff"])))
    segments = draw(st.sampled_from(templates)).strip("/").split("/")
    for index in draw(st.lists(st.integers(0, len(segments) - 1), max_size=3)):
        segments[index] = draw(SEGMENTS)
    if draw(st.booleans()):
        segments.insert(draw(st.integers(0, len(segments))), draw(SEGMENTS))
    path = "/" + "/".join(segments)
    query = draw(st.one_of(st.just(""), st.sampled_from(["?", "?=", "?a", "?SerialNumber=%FF", "?types=a,b,,c",
                                                         "?onu.onu_id=1&onu.onu_id=x", "?%FF=1", "?x=" + "y" * 2000]),
                           st.text(alphabet="abcdefgSN.=&%0123456789F", max_size=20).map(lambda q: "?" + q)))
    host = draw(st.sampled_from([b"Host: 127.0.0.1\r\n", b"Host: \xff\r\n", b"Host: a:b:c\r\n", b""]))
    body = draw(st.one_of(st.just(b""), st.binary(max_size=64), st.sampled_from(
        [b"{", b"[]", b'{"onus": 1}', b'{"onus": [{"onu_serial": 7}]}', b'{"onus": [{"x": 1}]}', b"\xff\xfe"])))
    kind = draw(st.sampled_from([b"", b"Content-Type: application/json\r\n", b"Content-Type: text/plain\r\n"]))
    return method, (path + query).encode("latin-1"), host + kind, body


def send_raw(port: int, method: str, target: bytes, headers: bytes, body: bytes) -> tuple[int, bytes, bytes]:
    """One request on its own connection (Connection: close); (status, header block, body). Blocking, bounded."""
    import socket

    with socket.create_connection(("127.0.0.1", port), timeout=HTTP_TIMEOUT) as sock:
        sock.sendall(method.encode("latin-1") + b" " + target + b" HTTP/1.1\r\n" + headers
                     + b"Connection: close\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
        data = b""
        while True:
            chunk = sock.recv(65536)  # socket.timeout here is a hung request
            if not chunk:
                break
            data += chunk
            head, separator, _ = data.partition(b"\r\n\r\n")
            if separator and any(kind in head for kind in STREAMED):
                break  # GET /v1/events or /v1/capture answered; the stream goes on until the client leaves
    head, _, rest = data.partition(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1])
    return status, head, rest


def fuzz_raw(ports: dict[str, int], documents: dict, answers: Counter) -> list[str]:
    """Raw requests to both REST ports: never a 5xx or a hang; what the apps answer is JSON."""
    failures = []
    for api, port in ports.items():
        templates = list(documents[api]["paths"])

        @settings(max_examples=POSITIVE * 10, derandomize=DERANDOMIZE, deadline=None, database=None,
                  suppress_health_check=list(HealthCheck))
        @given(request=raw_requests(templates))
        def run(request):
            method, target, headers, body = request
            status, head, _ = send_raw(port, method, target, headers, body)
            answers[(method, api, status)] += 1
            assert status < 500, (method, target, headers, body, head)
            well_formed = method in STANDARD_METHODS and b"Host: 127.0.0.1" in headers and method != "HEAD"
            if well_formed:
                assert b"content-type: application/json" in head.lower(), (method, target, head)

        try:
            run()
        except Exception as exc:
            failures.append(f"[raw {api}] {type(exc).__name__}: {exc}")
    return failures


@pytest.fixture
def logged_failures():
    """Errors and failures logged while the test runs (a handler, timer or listener that raised)."""
    found = []

    def observer(event):
        if "log_failure" in event or event.get("log_level") in (LogLevel.error, LogLevel.critical):
            found.append(event.get("log_format") or repr(event))
    globalLogPublisher.addObserver(observer)
    yield found
    globalLogPublisher.removeObserver(observer)


@pytest_twisted.inlineCallbacks
def test_rest_apis_survive_fuzzing(tmp_path, logged_failures):
    """Generated requests to every operation of /v1 and /v0, without an adapter, with one and after it left: no 5xx,
    answers as documented, no hang, no failure logged; afterwards the model is consistent, the process answers and
    stops without leftover timers."""
    sim = start_oltsim(tmp_path, "--pon", "2", "--onu", "2", "--delay", "0")
    adapter = None
    try:
        bases = {api: f"http://127.0.0.1:{_listening_port(sim.top.getServiceNamed(f'rest-{api}'))}"
                 for api in ("v1", "v0")}
        documents = {}
        for api, base in bases.items():
            response = yield treq.get(f"{base}/{api}/openapi.json", pool=sim.pool, timeout=HTTP_TIMEOUT)
            assert response.code == 200
            documents[api] = yield treq.json_content(response)
        values = known_values(sorted(onu.serial for onu in sim.olt.onus))
        failures, answers = [], {}
        started = time.monotonic()

        def fuzz_both(phase):
            answers[phase] = Counter()
            return [f for api in ("v1", "v0") for f in fuzz_api(documents[api], bases[api], values, phase,
                                                                   answers[phase])]

        failures += yield deferToThread(fuzz_both, "no adapter")

        adapter = ScriptedAdapter(sim.openolt, reconnect_backoff_ms=100)
        c_tags = yield hsia_c_tags(sim)

        def bring_up():
            _, onus = adapter.bring_up(len(c_tags))
            adapter.provision(onus, c_tags)
        yield deferToThread(bring_up)
        failures += yield deferToThread(fuzz_both, "adapter connected")

        answers["raw"] = Counter()
        failures += yield deferToThread(fuzz_raw, {api: int(base.rsplit(":", 1)[1]) for api, base in bases.items()},
                                        documents, answers["raw"])

        yield deferToThread(adapter.close)
        adapter = None
        failures += yield deferToThread(fuzz_both, "adapter gone")
        elapsed = time.monotonic() - started
        for phase, counts in answers.items():
            statuses = Counter()
            for (_, _, status), n in counts.items():
                statuses[status] += n
            print(f"fuzz [{phase}]: {sum(counts.values())} requests, statuses {dict(sorted(statuses.items()))}")
        print(f"fuzz: {elapsed:.1f} s ({POSITIVE} positive / {NEGATIVE} negative examples per operation and phase)")

        assert failures == [], "\n".join(failures)
        # The fuzz must reach the simulator, not only its validation: state-changing calls succeed while an
        # adapter is connected.
        acted = {(m, p) for (m, p, status), n in answers["adapter connected"].items() if status == 200 and m != "GET"}
        assert len(acted) >= 10, sorted(acted)
        assert logged_failures == []
        yield deferLater(reactor, 0.3, lambda: None)  # let answers in flight and timers due now run
        assert model_invariants(sim.olt) == []
        response = yield treq.get(f"{bases['v1']}/v1/olt", pool=sim.pool, timeout=HTTP_TIMEOUT)
        assert response.code == 200
        olt = yield treq.json_content(response)
        assert olt["SerialNumber"] == "BBSIM_OLT_0"
    finally:
        yield stop_oltsim(sim, adapter)
