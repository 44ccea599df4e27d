"""Shared helpers for the in-memory tests: the OLT model on a fake clock, the v1 REST resource through StubTreq,
and the gRPC servicers on an inline bridge with a fake context (style habit 8)."""

from __future__ import annotations

import json
import random
from dataclasses import dataclass

import pytest
from treq.testing import StubTreq
from twisted.internet.task import Clock
from voltha_protos import openolt_pb2

from oltsim.api import translate
from oltsim.api.commands import V1Commands
from oltsim.api.v1.grpc import BBSimServicer
from oltsim.api.v1.rest import V1Rest
from oltsim.bridge import Bridge, StreamQueue
from oltsim.config import load_settings
from oltsim.model import events
from oltsim.model.builder import build_olt
from oltsim.southbound.indications import to_indications
from oltsim.southbound.openolt import IndicationHub, OpenoltServicer

BASE_URL = "http://oltsim.test"


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
        self.aborts.append((code, details))
        raise Aborted(code, details)

    def is_active(self):
        return True

    def peer(self):
        return "ipv4:127.0.0.1:50000"


def grpc_call(servicer, rpc: str, request):
    """Call one unary RPC of a servicer; returns the response or raises `Aborted`."""
    return getattr(servicer, rpc)(request, FakeContext())


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
    indication hub, the v1 commands, the v1 gRPC servicer and the v1 REST resource."""

    def __init__(self, revision: str = "extended", start: bool = True, **given):
        settings = {"pon": 2, "onu": 2}
        settings.update(given)
        self.settings = load_settings(settings, None)
        self.clock = Clock()
        self.olt = build_olt(self.settings, self.clock, random.Random(0))
        self.events: list = []
        self.olt.subscribe(self.events.append)
        self.hub = IndicationHub(self.olt)
        self.openolt = OpenoltServicer(self.olt, Bridge.inline(), self.hub)
        self.commands = V1Commands(self.olt, revision=revision)
        self.bbsim = BBSimServicer(self.commands, Bridge.inline())
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
        item = queue.get(0)
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
