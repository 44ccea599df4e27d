"""Shared helpers for the in-memory tests: the OLT model on a fake clock, the v1 REST resource through StubTreq,
and the gRPC servicers' on_loop handlers run inline with a fake context (style habit 8)."""

from __future__ import annotations

# The daemon runs on Twisted's asyncio reactor (oltsim.serving.onloop); so do the tests (pytest.ini: --reactor=asyncio). It
# has to be installed before treq and Klein, imported below, import the global reactor.
from oltsim.serving.onloop import install_asyncio_reactor

install_asyncio_reactor()

import asyncio  # noqa: E402
import atexit  # noqa: E402
import inspect  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import random  # noqa: E402
import signal  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from dataclasses import dataclass  # noqa: E402

import pytest  # noqa: E402
from treq.testing import StubTreq  # noqa: E402
from twisted.internet.task import Clock  # noqa: E402
from twisted.python.failure import Failure  # noqa: E402
from voltha_protos import openolt_pb2, openolt_pb2_grpc  # noqa: E402

from oltsim.api import translate  # noqa: E402
from oltsim.api.v1.usecases_v1 import V1Commands  # noqa: E402
from oltsim.api.v1.grpc_v1 import BBSimServicer  # noqa: E402
from oltsim.api.v1.rest_v1 import V1Rest  # noqa: E402
from oltsim.config import load_settings  # noqa: E402
from oltsim.model import events  # noqa: E402
from oltsim.model.builder import build_olt  # noqa: E402
from oltsim.model.onu import serial_key  # noqa: E402
from oltsim.omci.responder import OmciResponder  # noqa: E402
from oltsim.packets.engine import ProtocolEngine  # noqa: E402
from oltsim.serving.onloop import StreamQueue, on_loop  # noqa: E402
from oltsim._proto import bbsim_pb2_grpc  # noqa: E402
from oltsim.southbound.indications import to_indications  # noqa: E402
from oltsim.southbound.openolt import IndicationHub, OpenoltServicer  # noqa: E402

BASE_URL = "http://oltsim.test"


# ---- the test run: markers, interruption, leftover processes ----------------------------------------


def pytest_collection_modifyitems(items):
    """The tests that drive headless Chromium (test_ui's `chrome` fixture) are marked `browser` (pytest.ini)."""
    for item in items:
        if "chrome" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.browser)


def _interrupt(signum, frame):
    """SIGTERM ends the run as Ctrl-C does: a KeyboardInterrupt, so pytest stops at once, tears down and exits 2."""
    raise KeyboardInterrupt(signal.Signals(signum).name)


def pytest_configure(config):
    """Without this, SIGTERM stops the Twisted reactor (its own handler, installed when pytest-twisted starts it) and
    every later test fails with "twisted reactor has stopped"; SIGINT is already a KeyboardInterrupt (pytest-twisted
    keeps Twisted off it). The handler is set again once the reactor runs, after Twisted set its own."""
    from twisted.internet import reactor

    signal.signal(signal.SIGTERM, _interrupt)
    reactor.callWhenRunning(signal.signal, signal.SIGTERM, _interrupt)
    atexit.register(_stop_descendants)


def pytest_keyboard_interrupt(excinfo):
    """Remember that the run was interrupted (Ctrl-C, SIGTERM), for pytest_unconfigure."""
    _INTERRUPTED.append(excinfo.value)


_INTERRUPTED: list = []


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config):
    """Daemons, brokers and browsers the tests started and an interrupted run left behind are stopped with it.
    An interrupted run then exits at once (status 2, as pytest's own): the reactor died with the interrupt, so the
    worker threads a test had given blocking calls to (a browser wait, a socket) would hold the interpreter's exit
    until their calls end."""
    _stop_descendants()
    if _INTERRUPTED:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(pytest.ExitCode.INTERRUPTED)


def _descendants(root: int) -> list[int]:
    """The processes below `root` (children, theirs, ...), read from /proc; none where there is no /proc."""
    children: dict[int, list[int]] = {}
    for entry in os.scandir("/proc") if os.path.isdir("/proc") else ():
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat") as stat:
                fields = stat.read().rpartition(")")[2].split()
        except OSError:
            continue
        if fields[0] != "Z":
            children.setdefault(int(fields[1]), []).append(int(entry.name))
    found, todo = [], [root]
    while todo:
        for pid in children.get(todo.pop(), ()):
            found.append(pid)
            todo.append(pid)
    return found


def _stop_descendants(grace: float = 5.0) -> None:
    """SIGTERM every process this run started that is still there, then SIGKILL those alive `grace` s later."""
    pids = _descendants(os.getpid())
    for signum in (signal.SIGTERM, signal.SIGKILL):
        for pid in pids:
            try:
                os.kill(pid, signum)
            except OSError:
                pass
        for _ in range(int(grace / 0.05)):
            alive = set(_descendants(os.getpid()))
            pids = [pid for pid in pids if pid in alive]
            if not pids:
                return
            time.sleep(0.05)


@pytest.fixture
def info_level():
    """oltsim's own events at info for the test, whatever an earlier test set (modules that read log lines use it
    for every test: ``pytestmark = pytest.mark.usefixtures("info_level")``)."""
    from oltsim.logs import CONTROL
    level = CONTROL.level
    CONTROL.set_level("info")
    yield
    CONTROL.set_level(level)


# ---- gRPC ----------------------------------------------------------------------------------------


class Aborted(Exception):
    """What the fake context raises on abort, as grpcio's ServicerContext.abort raises after setting the status."""

    def __init__(self, code, details):
        super().__init__(f"{code.name}: {details}")
        self.code = code
        self.details = details


class FakeContext:
    """The parts of grpcio's ServicerContext the servicers use; `abort` raises `Aborted`."""

    def __init__(self):
        self.aborts = []

    def abort(self, code, details):
        """Record and raise at once, whether the servicer calls it (grpcio) or awaits it (grpc.aio handlers)."""
        self.aborts.append((code, details))
        raise Aborted(code, details)

    def is_active(self):
        return True

    def peer(self):
        return "ipv4:127.0.0.1:50000"


def grpc_call(servicer, rpc: str, request):
    """Call one unary RPC of a servicer; returns the response or raises `Aborted`. A servicer served on the loop
    (`on_loop`, as OpenOLT is) answers through its coroutine handler, run here to completion: the path grpc.aio
    serves, and the same servicer method and error table the native engine calls inline."""
    result = getattr(servicer, rpc)(request, FakeContext())
    if inspect.iscoroutine(result):
        return run_now(result)
    return result


def stream_now(stream, wait=None) -> list:
    """What an async stream (an on_loop streaming handler) yields without waiting, then close it as a client that
    leaves does. Where it would wait, ``wait()`` (if given) runs once, e.g. advancing a fake clock, and the stream is
    read on; an abort raises `Aborted` from here."""
    items = []
    while True:
        step = stream.__anext__()
        try:
            step.send(None)
            if wait is not None:
                wait, then = None, wait
                then()
                step.send(None)
        except StopIteration as got:
            items.append(got.value)
            continue
        except StopAsyncIteration:
            return items
        try:  # it waits for more: the client leaves, and grpc.aio cancels the stream's task where it waits
            step.throw(asyncio.CancelledError())
        except asyncio.CancelledError:
            return items
        raise AssertionError("the stream went on after it was cancelled")


def run_now(coroutine):
    """Run a coroutine that never waits (an on_loop unary handler) to completion, synchronously."""
    try:
        coroutine.send(None)
    except StopIteration as done:
        return done.value
    coroutine.close()
    raise AssertionError("the handler waited for something: it does not run inline")


def grpc_error(servicer, rpc: str, request) -> Aborted:
    """Call one unary RPC that must be refused; returns the abort."""
    with pytest.raises(Aborted) as info:
        grpc_call(servicer, rpc, request)
    return info.value


# ---- REST ----------------------------------------------------------------------------------------


@dataclass
class Reply:
    """One REST answer, read synchronously from StubTreq."""

    code: int
    headers: object
    body: bytes

    @property
    def json(self):
        return json.loads(self.body)

    def header(self, name: str) -> str | None:
        values = self.headers.getRawHeaders(name.encode("ascii"))
        return values[-1].decode("latin-1") if values else None


def stub_request(client, url: str, method: str = "GET", headers=None) -> tuple[int, object, bytes]:
    """(status, headers, body bytes) of one request through a treq StubTreq `client`, answered synchronously."""
    responses = []
    client.request(method, url, headers=headers).addBoth(responses.append)
    client.flush()
    (response,) = responses
    if isinstance(response, Failure):
        response.raiseException()
    bodies = []
    response.content().addBoth(bodies.append)
    client.flush()
    (body,) = bodies
    if isinstance(body, Failure):
        body.raiseException()
    return response.code, response.headers, body


class Rest:
    """The real v1 Klein resource served in memory by treq's StubTreq."""

    def __init__(self, resource):
        self.stub = StubTreq(resource)

    def call(self, method: str, path: str) -> Reply:
        out = []
        d = self.stub.request(method, BASE_URL + path)
        d.addCallback(lambda r: self.stub.content(r).addCallback(lambda body: out.append(Reply(r.code, r.headers,
                                                                                                body))))
        d.addErrback(out.append)
        self.stub.flush()
        assert out, f"{method} {path}: no answer (the request hangs)"
        if not isinstance(out[0], Reply):
            out[0].raiseException()
        return out[0]


# ---- the simulator in memory ----------------------------------------------------------------------


class Sim:
    """One OLT model on a fake clock with everything a test talks to: the events it emits, the OpenOLT servicer and
    indication hub, the v1 commands, the v1 gRPC servicer and the v1 REST resource. With `frame_path`, its ONUs'
    OMCI and packets are answered by the OMCI responder and the protocol engine composed as the daemon composes them
    (`path`: oltsim.tap.FramePath); without, they go nowhere."""

    def __init__(self, revision: str = "extended", start: bool = True, frame_path: bool = False, **given):
        settings = {"pon": 2, "onu": 2}
        settings.update(given)
        self.settings = load_settings(settings, None)
        self.clock = Clock()
        self.path = None
        if frame_path:
            from oltsim.tap import FramePath    # the composition root: imported only by the tests that need it
            self.path = FramePath(OmciResponder.from_settings(self.settings),
                                  ProtocolEngine.from_settings(self.settings))
        self.olt = build_olt(self.settings, self.clock, random.Random(0), omci=self.path and self.path.omci,
                             frames=self.path and self.path.frames)
        if self.path is not None:
            self.path.attach(self.olt)
        self.events: list = []
        self.olt.subscribe(self.events.append)
        self.hub = IndicationHub(self.olt)
        self.openolt_servicer = OpenoltServicer(self.olt, self.hub)
        self.openolt = on_loop(self.openolt_servicer, openolt_pb2_grpc.OpenoltServicer)
        self.commands = V1Commands(self.olt, revision=revision)
        self.bbsim = on_loop(BBSimServicer(self.commands), bbsim_pb2_grpc.BBSimServicer)
        self.rest = Rest(V1Rest(self.commands).resource())
        self.stream: StreamQueue | None = None
        if start:
            self.olt.start()
            self.events.clear()

    # adapter side

    def connect(self) -> StreamQueue:
        """An adapter opens EnableIndication (what OpenoltServicer.EnableIndication does on the reactor)."""
        self.stream = StreamQueue(65536)
        self.hub.open_stream(self.stream)
        return self.stream

    def disconnect(self) -> None:
        """The adapter's stream ends (client gone)."""
        self.hub.close_stream(self.stream)
        self.stream = None

    def discover_all(self) -> None:
        """Advance the clock step by step until the last ONU of each PON is discovered (t = 0.2 s on a 2x2 OLT).

        Steps matter: task.Clock runs every call due within one `advance` at the end time, so a timer set by a
        callback would be offset by the rest of a big step."""
        self.clock.advance(0)
        for _ in range(max(len(p.onus) for p in self.olt.pons) - 1):
            self.clock.advance(self.olt.timings.discovery_delay)

    def activate(self, serial: str, onu_id: int | None = None) -> None:
        """ActivateOnu through the OpenOLT servicer; the ONU id defaults to the ONU's creation index."""
        onu = self.olt.onu_by_serial(serial)
        grpc_call(self.openolt, "ActivateOnu", openolt_pb2.Onu(
            intf_id=onu.pon.id, onu_id=onu.index if onu_id is None else onu_id,
            serial_number=translate.serial_to_pb(serial)))

    def bring_up(self) -> None:
        """Connect an adapter, let every ONU be discovered and activate them all."""
        self.connect()
        self.discover_all()
        for onu in self.olt.onus:
            self.activate(onu.serial)
        self.events.clear()

    def southbound(self) -> list[tuple]:
        """The events emitted so far as the adapter sees them (compact tuples), then forget them."""
        out = southbound(self.events)
        self.events.clear()
        return out


def drain(queue: StreamQueue) -> tuple[list, object]:
    """Everything an indication stream holds: (the queued items, the close marker or None if still open)."""
    items = []
    while True:
        item = queue.get()
        if item is StreamQueue.EMPTY:
            return items, None
        if hasattr(item, "status") and hasattr(item, "details"):
            return items, item
        items.append(item)


def southbound(emitted) -> list[tuple]:
    """Model events as compact tuples of the OpenOLT indications they become (through the real translation), plus
    the OMCI alarm notifications the ONU sends (OmciAlarm) and the OpenOLT endpoint stopping or starting."""
    out = []
    for event in emitted:
        if isinstance(event, events.OmciAlarm):
            out.append(("OmciAlarm", event.serial, event.me_id, "raised" if event.raised else "cleared"))
            continue
        if isinstance(event, events.OpenoltServer):
            out.append(("OpenoltServer", event.running))
            continue
        for indication in to_indications(event):
            out.append(describe(indication))
    return out


def describe(indication) -> tuple:
    """One openolt.Indication as a compact tuple."""
    kind = indication.WhichOneof("data")
    msg = getattr(indication, kind)
    if kind == "olt_ind":
        return ("OltInd", msg.oper_state)
    if kind == "intf_ind":
        return ("IntfInd", msg.intf_id, msg.oper_state)
    if kind == "intf_oper_ind":
        return ("IntfOperInd", msg.type, msg.intf_id, msg.oper_state)
    if kind == "onu_disc_ind":
        return ("OnuDiscInd", msg.intf_id, translate.serial_from_pb(msg.serial_number))
    if kind == "onu_ind":
        return ("OnuInd", msg.intf_id, msg.onu_id, msg.oper_state, msg.admin_state,
                translate.serial_from_pb(msg.serial_number))
    if kind == "alarm_ind":
        alarm = msg.WhichOneof("data")
        sub = getattr(msg, alarm)
        status = next((getattr(sub, f.name) for f in sub.DESCRIPTOR.fields if f.name.endswith("status")), None)
        return ("AlarmInd", alarm, getattr(sub, "intf_id", None), getattr(sub, "onu_id", None), status)
    if kind == "port_stats":
        return ("PortStats", msg.intf_id)
    return (kind,)


# ---- invariants (fuzz, load and fault tests) -------------------------------------------------------


def model_invariants(olt) -> list[str]:
    """What must hold of the model after any input, as a list of violations (empty when all hold):

    every device is in exactly one state of its machine (each ONU listed once, on one PON, in a state of
    ONU_MACHINE; its UNIs, services and protocol states in theirs); the resource registries agree with the
    ONUs and flows (every ONU flow belongs to an existing, active ONU that lists it; an ONU lists only its own
    stored flows; the per-PON ONU id, GEM port and alloc id registries name active ONUs of that PON under their
    own ids; the flow store's GEM/alloc indexes match its flows); and the OLT's timers are bounded."""
    from oltsim.model.olt import OLT_MACHINE, OPER_MACHINE, PON_MACHINE
    from oltsim.model.onu import (DHCP_MACHINE, EAPOL_MACHINE, IGMP_MACHINE, ONU_MACHINE, SERVICE_MACHINE,
                                  UNI_MACHINE)

    bad: list[str] = []
    if olt.state not in OLT_MACHINE.states:
        bad.append(f"OLT state {olt.state!r}")
    if olt.oper_state not in OPER_MACHINE.states:
        bad.append(f"OLT oper state {olt.oper_state!r}")
    seen: dict[str, int] = {}
    for pon in olt.pons:
        if pon.state not in PON_MACHINE.states:
            bad.append(f"PON {pon.id} state {pon.state!r}")
        for onu in pon.onus:
            seen[onu.serial] = seen.get(onu.serial, 0) + 1
            where = f"ONU {onu.serial}"
            if onu.pon is not pon:
                bad.append(f"{where} is listed on PON {pon.id} but belongs to PON {onu.pon.id}")
            if onu.state not in ONU_MACHINE.states:
                bad.append(f"{where} state {onu.state!r} is not a state of ONU_MACHINE")
            for uni in onu.unis:
                if uni.state not in UNI_MACHINE.states:
                    bad.append(f"{where} UNI {uni.id} state {uni.state!r}")
                for service in uni.services:
                    for value, machine in ((service.state, SERVICE_MACHINE), (service.eapol_state, EAPOL_MACHINE),
                                           (service.dhcp_state, DHCP_MACHINE), (service.igmp_state, IGMP_MACHINE)):
                        if value not in machine.states:
                            bad.append(f"{where} service {service.name} {machine.name} state {value!r}")
            if onu.is_active:
                if pon.onu_ids.get(onu.onu_id) != onu.serial:
                    bad.append(f"{where} is {onu.state} but ONU id {onu.onu_id} of PON {pon.id} is registered to "
                               f"{pon.onu_ids.get(onu.onu_id)!r}")
            elif onu.flow_keys:
                bad.append(f"{where} is {onu.state} and still lists flows {sorted(onu.flow_keys)}")
            for key in onu.flow_keys:
                flow = olt.flows._flows.get(key)
                if flow is None:
                    bad.append(f"{where} lists flow {key} which is not stored")
                elif flow.serial != onu.serial:
                    bad.append(f"{where} lists flow {key} of {flow.serial}")
        for onu_id, serial in pon.onu_ids.items():
            owner = next((o for o in pon.onus if o.serial == serial), None)
            if owner is None or not owner.is_active or owner.onu_id != onu_id:
                bad.append(f"PON {pon.id} registers ONU id {onu_id} to {serial}, which is "
                           + ("not on the PON" if owner is None else f"{owner.state} with id {owner.onu_id}"))
        active = {o.serial for o in pon.onus if o.is_active}
        for gem, serial in pon.gem_ports.items():
            if serial not in active:
                bad.append(f"PON {pon.id} registers GEM port {gem} to {serial}, which is not active")
        for key, (alloc, serial) in pon.alloc_ids.items():
            if serial not in active:
                bad.append(f"PON {pon.id} registers alloc id {alloc} to {serial}, which is not active")
    for serial, count in seen.items():
        if count != 1:
            bad.append(f"ONU {serial} is listed {count} times")
    if {serial_key(s) for s in seen} != set(olt._serials):
        bad.append("the OLT's serial index does not match its PONs' ONUs")
    store = olt.flows
    for key, flow in store._flows.items():
        if flow.key != key:
            bad.append(f"flow stored under {key} has key {flow.key}")
        if not flow.is_onu_flow:
            continue
        try:
            onu = olt.onu_by_id(flow.access_intf_id, flow.onu_id)
        except Exception:
            bad.append(f"flow {key} belongs to ONU {flow.onu_id} of PON {flow.access_intf_id}, which does not exist")
            continue
        if not onu.is_active:
            bad.append(f"flow {key} belongs to ONU {onu.serial}, which is {onu.state}")
        if key not in onu.flow_keys or flow.serial != onu.serial:
            bad.append(f"flow {key} is not listed by its ONU {onu.serial}")
        for gem in flow.gem_ports:
            if store._gems.get((flow.access_intf_id, gem), {}).get(key) is not flow:
                bad.append(f"flow {key} is missing from the GEM port index ({gem})")
        if store._allocs.get((flow.access_intf_id, flow.alloc_id), {}).get(key) is not flow:
            bad.append(f"flow {key} is missing from the alloc id index ({flow.alloc_id})")
    for index in (store._gems, store._allocs):
        for rid, users in index.items():
            for key, flow in users.items():
                if store._flows.get(key) is not flow:
                    bad.append(f"index entry {rid} names flow {key}, which is not stored")
    # Timers: a few per ONU (discovery, protocol timers) and a few for the OLT, never a growing pile.
    limit = 8 * len(olt._serials) + 8
    if olt.pending_calls() > limit:
        bad.append(f"{olt.pending_calls()} delayed calls pending (more than {limit})")
    return bad


def fuzz_examples(default: int) -> tuple[int, bool]:
    """(examples per fuzz test, derandomize): `default` and derandomized (the same inputs on every CI run), or with
    OLTSIM_FUZZ_EXAMPLES=N, N drawn at random (a longer run finds new inputs each time). See docs/fuzzing.md."""
    import os

    configured = os.environ.get("OLTSIM_FUZZ_EXAMPLES")
    return (int(configured), False) if configured else (default, True)


def fuzz_settings(default_examples: int, **overrides):
    """Hypothesis settings of the fuzz tests (`fuzz_examples`); a failure prints the @reproduce_failure blob that
    replays it."""
    from hypothesis import HealthCheck, settings

    examples, derandomize = fuzz_examples(default_examples)
    options = dict(max_examples=examples, derandomize=derandomize, deadline=None, database=None, print_blob=True,
                   suppress_health_check=list(HealthCheck))
    options.update(overrides)
    return settings(**options)
