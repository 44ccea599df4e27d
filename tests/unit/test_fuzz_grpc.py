"""Hypothesis-generated messages against every method of the four gRPC services, in memory.

Each RPC's request is drawn from its protobuf descriptor (scalars biased towards the identifiers, serials and
words the simulator knows, enums including unknown numbers, nested and repeated messages, serial numbers, OMCI
packets as hex or not). Each example starts a fresh 2x2 OLT (as `tests/conftest.Sim`, with the OMCI responder and
the protocol engine wired as the daemon wires them), fresh, brought up or provisioned by an adapter, and runs a
short sequence of calls, clock advances and adapter (dis)connections. The servicers' on_loop handlers run inline with
the fake context, so a refusal comes back as the status the handler chose.

Pass criterion (decisions section 3): only the statuses of the one error table come back (never INTERNAL or
UNKNOWN), nothing is logged as a failure, the model invariants of `conftest.model_invariants` hold after every
example, the REST views of v1 and v0 still render and match their OpenAPI documents, and stopping the OLT leaves
no delayed call. `OLTSIM_FUZZ_EXAMPLES` raises the number of examples (docs/fuzzing.md).
"""
from __future__ import annotations

import inspect
import json

import grpc
import pytest
from google.protobuf import descriptor as _descriptor, message_factory, text_format
from hypothesis import given, strategies as st
from twisted.logger import LogLevel, globalLogPublisher
from voltha_protos import openolt_pb2, tech_profile_pb2

from conftest import Aborted, FakeContext, Rest, Sim, fuzz_settings, grpc_call, model_invariants, stream_now
from oltsim._proto import bbsim_pb2, bbsim_pb2_grpc, legacy_pb2, legacy_pb2_grpc, oltsim_pb2, oltsim_pb2_grpc
from oltsim.api.v1.usecases_v1 import LOG_LEVELS, V1Commands
from oltsim.api.eventbus import EventBus
from oltsim.api.v0 import rest_v0 as v0_rest
from oltsim.api.v0.usecases_v0 import ACTIONS, V0Commands
from oltsim.api.v0.grpc_v0 import LegacyServicer
from oltsim.api.v0.mapping import LEGACY_ONU_ALARMS
from oltsim.api.v1 import rest_v1 as v1_rest
from oltsim.api.v1.grpc_v1 import BBSimServicer, OltsimServicer, event_to_pb
from oltsim.serving.onloop import on_loop
from oltsim.model import events
from oltsim.model.alarms import ONU_ALARMS
from oltsim.model.errors import Unavailable
from oltsim.omci import codec
from oltsim.southbound.openolt import FLOW_TYPES

OAS = pytest.importorskip("openapi_schema_validator")

_F = _descriptor.FieldDescriptor

SERVICES = {
    "bbsim.BBSim": bbsim_pb2.DESCRIPTOR.services_by_name["BBSim"],
    "legacy.BBSimService": legacy_pb2.DESCRIPTOR.services_by_name["BBSimService"],
    "oltsim.v1.Oltsim": oltsim_pb2.DESCRIPTOR.services_by_name["Oltsim"],
    "openolt.Openolt": openolt_pb2.DESCRIPTOR.services_by_name["Openolt"],
}

#: What a refusal may be: the statuses of translate.ERROR_TABLE. UNIMPLEMENTED is documented for no method (every
#: method of the four services is implemented), INTERNAL and UNKNOWN mean a bug.
ALLOWED = frozenset({grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.NOT_FOUND,
                     grpc.StatusCode.FAILED_PRECONDITION, grpc.StatusCode.UNAVAILABLE})

START_STATES = ("fresh", "up", "provisioned")
SERIALS = ("BBSM00000001", "BBSM00000002", "BBSM00000101", "BBSM00000102")
FUZZ = fuzz_settings(150)


# ---- strategies from descriptors ------------------------------------------------------------------------------

INTERESTING_INTS = (0, 1, 2, 3, -1, 7, 64, 255, 256, 1023, 1024, 1025, 4091, 4095, 4096, 65535, 65536,
                    2 ** 31 - 1, -(2 ** 31), 2 ** 32 - 1, 2 ** 63 - 1, 2 ** 64 - 1)
_RANGES = {
    _F.TYPE_INT32: (-(2 ** 31), 2 ** 31 - 1), _F.TYPE_SINT32: (-(2 ** 31), 2 ** 31 - 1),
    _F.TYPE_SFIXED32: (-(2 ** 31), 2 ** 31 - 1), _F.TYPE_UINT32: (0, 2 ** 32 - 1),
    _F.TYPE_FIXED32: (0, 2 ** 32 - 1), _F.TYPE_INT64: (-(2 ** 63), 2 ** 63 - 1),
    _F.TYPE_SINT64: (-(2 ** 63), 2 ** 63 - 1), _F.TYPE_SFIXED64: (-(2 ** 63), 2 ** 63 - 1),
    _F.TYPE_UINT64: (0, 2 ** 64 - 1), _F.TYPE_FIXED64: (0, 2 ** 64 - 1),
}

#: Words the simulator gives meaning to, by a part of the field name; every string field also draws from WORDS.
DOMAINS = {
    "serial": SERIALS * 3 + ("bbsm00000001", "BBSM0000000", "BBSM000000001", "BBSMZZZZZZZZ", "BBSIM_OLT_0"),
    "sn": SERIALS,
    "alarm": tuple(ONU_ALARMS) + tuple(LEGACY_ONU_ALARMS) + ("los", "LOS", "onu_alarm_los"),
    "status": ("on", "off", "ON", "Off", " on ", "raised"),
    "flow_type": FLOW_TYPES + ("UPSTREAM", "bidirectional"),
    "device_type": ("olt", "onu", "OLT", "nni"),
    "action": tuple(ACTIONS) + ("REBOOT", "power-off"),
    "group": ("224.0.0.22", "239.255.255.250", "10.0.0.1", "224.0.0", "255.255.255.255", "::1"),
    "level": LOG_LEVELS + ("critical", "DEBUG"),
    "type": ("pon", "nni", "PON", "Nni", "uni", "ALLOC_ID", "GEM_PORT"),
    "state": ("up", "down", "enabled", "disabled", "on", "off", "active", "ACTIVE"),
}
WORDS = tuple(sorted({w for words in DOMAINS.values() for w in words} | {
    "", " ", "0", "1", "-1", "4294967296", "0x10", "1e3", "null", "%s", "{}", "\x00", "é", "BBSM00000001\n"}))


def _omci_frames() -> list[bytes]:
    e, ar = codec.encode, codec.AR
    return [e(1, ar | codec.MIB_RESET, codec.ONU_DATA, 0), e(2, ar | codec.MIB_UPLOAD, codec.ONU_DATA, 0),
            e(3, ar | codec.GET, codec.ONU_G, 0, b"\xa0\x00"),
            e(4, ar | codec.SET, codec.PPTP_ETHERNET_UNI, 0x0101, b"\x08\x00\x01"),
            e(5, ar | codec.CREATE, codec.GEM_PORT_NETWORK_CTP, 1024, bytes(20)),
            e(6, ar | codec.SET, codec.T_CONT, 0x8001, b"\x80\x00\x04\x00"),
            e(7, ar | codec.REBOOT, codec.ONU_G, 0, b"\x00")]


SERIAL_TAILS = [bytes.fromhex(sn[4:]) for sn in SERIALS]
#: Overrides for fields whose values matter more than their type says.
FIELD_STRATEGIES = {
    ("openolt.SerialNumber", "vendor_id"): st.integers(0, 99).flatmap(
        lambda roll: st.just(b"BBSM") if roll < 80 else st.binary(max_size=6)),
    ("openolt.SerialNumber", "vendor_specific"): st.integers(0, 99).flatmap(
        lambda roll: st.sampled_from(SERIAL_TAILS) if roll < 80 else st.binary(max_size=6)),
    ("openolt.OmciMsg", "pkt"): st.one_of(
        st.sampled_from(_omci_frames()).map(lambda frame: frame.hex().encode()),
        st.binary(max_size=48).map(lambda data: data.hex().encode()),
        st.binary(max_size=48), st.sampled_from([b"0", b"zz", b"\xff\xfe", b"0a0b0c"])),
}


def _is_map(fd) -> bool:
    return fd.type == _F.TYPE_MESSAGE and fd.message_type.GetOptions().map_entry


def mostly(percent: int, usual, other):
    """`usual` in about `percent` % of the draws, else `other` (st.one_of would weigh its branches alike)."""
    return st.integers(0, 99).flatmap(lambda roll: usual if roll < percent else other)


def _string_strategy(fd):
    name = fd.name.lower()
    domain = next((words for part, words in DOMAINS.items() if part in name), ())
    anything = st.one_of(st.sampled_from(WORDS), st.text(max_size=12))
    # mostly meaningful, so that calls get past validation and act
    return mostly(70, st.sampled_from(domain), anything) if domain else anything


#: Integer fields that name a device or resource, by a part of the field name, and the values that exist on the
#: 2x2 OLT (PONs 0-1, ONU ids 1-2, UNIs 0-3, GEM ports and alloc ids from 1024, VLANs around the services').
ID_VALUES = {
    "gem": (1024, 1025, 1026, 1100), "alloc": (1024, 1025, 1026, 1100), "vlan": (0, 900, 4091, 4095, 4096),
    "vid": (0, 900, 4091, 4095, 4096), "onu_id": (1, 2, 3, 0), "onuid": (1, 2, 3, 0), "uni": (0, 1, 3, 4),
    "intf": (0, 1, 2), "pon": (0, 1, 2), "port": (0, 1, 256, 257), "id": (0, 1, 2),
}


def _integer_strategy(fd, lo: int, hi: int):
    general = [st.sampled_from([v for v in INTERESTING_INTS if lo <= v <= hi]), st.integers(lo, hi)]
    name = fd.name.lower()
    known = next((values for part, values in ID_VALUES.items() if part in name), None)
    if known is None:
        return st.one_of(st.integers(max(lo, -1), min(hi, 4)), *general)
    return mostly(80, st.sampled_from([v for v in known if lo <= v <= hi]), st.one_of(*general))


def scalar_strategy(owner, fd):
    """Values of one non-message field (a map's key or value included)."""
    override = FIELD_STRATEGIES.get((owner.full_name, fd.name))
    if override is not None:
        return override
    if fd.type in _RANGES:
        return _integer_strategy(fd, *_RANGES[fd.type])
    if fd.type == _F.TYPE_BOOL:
        return st.booleans()
    if fd.type == _F.TYPE_DOUBLE:
        return st.floats()
    if fd.type == _F.TYPE_FLOAT:
        return st.floats(width=32)
    if fd.type == _F.TYPE_ENUM:
        numbers = [v.number for v in fd.enum_type.values]
        if fd.enum_type.is_closed:
            return st.sampled_from(numbers)
        return st.one_of(st.sampled_from(numbers), st.integers(-2, 40))  # open enums take unknown numbers
    if fd.type == _F.TYPE_BYTES:
        return st.one_of(st.binary(max_size=16), st.sampled_from([b"BBSM", b"\x00\x00\x00\x01", b""]))
    return _string_strategy(fd)


_MESSAGES: dict = {}
MAX_DEPTH = 3


def message_strategy(descriptor, depth: int = 0):
    """Messages of type `descriptor`: every scalar field of a request drawn (a value may be the default), any subset
    of its other fields and of the fields of sub-messages, down to MAX_DEPTH; repeated fields and maps of at most 3
    elements."""
    key = (descriptor.full_name, depth)
    if key not in _MESSAGES:
        cls = message_factory.GetMessageClass(descriptor)
        required, optional = {}, {}
        for fd in descriptor.fields:
            values = _field_strategy(descriptor, fd, depth)
            if values is None:
                continue
            if depth == 0 and fd.type != _F.TYPE_MESSAGE and not fd.is_repeated:
                required[fd.name] = values
            else:
                optional[fd.name] = values
        fields = st.fixed_dictionaries(required, optional=optional)
        _MESSAGES[key] = fields.map(lambda values, cls=cls: _build(cls, values))
    return _MESSAGES[key]


def _field_strategy(owner, fd, depth):
    if _is_map(fd):
        if depth >= MAX_DEPTH:
            return None
        entry = fd.message_type
        key_fd, value_fd = entry.fields_by_name["key"], entry.fields_by_name["value"]
        values = (message_strategy(value_fd.message_type, depth + 1) if value_fd.type == _F.TYPE_MESSAGE
                  else scalar_strategy(entry, value_fd))
        return st.dictionaries(scalar_strategy(entry, key_fd), values, max_size=3)
    if fd.type == _F.TYPE_MESSAGE:
        if depth >= MAX_DEPTH:
            return None
        single = message_strategy(fd.message_type, depth + 1)
    else:
        single = scalar_strategy(owner, fd)
    return st.lists(single, max_size=3) if fd.is_repeated else single


def _build(cls, values):
    msg = cls()
    for name, value in values.items():
        fd = cls.DESCRIPTOR.fields_by_name[name]
        if _is_map(fd):
            target = getattr(msg, name)
            for k, v in value.items():
                if fd.message_type.fields_by_name["value"].type == _F.TYPE_MESSAGE:
                    target[k].CopyFrom(v)
                else:
                    target[k] = v
        elif fd.is_repeated:
            getattr(msg, name).extend(value)
        elif fd.type == _F.TYPE_MESSAGE:
            getattr(msg, name).CopyFrom(value)
        else:
            setattr(msg, name, value)
    return msg


def unary_methods(service: str) -> list:
    """The methods of `service` fuzzed as calls: every unary one, and StreamEvents (called with an immediate cancel);
    EnableIndication is the adapter's connect action instead."""
    return [m for m in SERVICES[service].methods if m.name != "EnableIndication"]


def calls(services):
    methods = [(service, m) for service in services for m in unary_methods(service)]
    return st.sampled_from(methods).flatmap(
        lambda pair: message_strategy(pair[1].input_type).map(lambda msg, pair=pair: ("call", pair[0], pair[1], msg)))


def sequences(services):
    """1..6 actions: calls (mostly), clock advances, an adapter connecting or going away."""
    call = calls(services)
    advance = st.sampled_from([0, 0.2, 1, 1.2, 5.5, 10.5, 61, 125]).map(lambda s: ("advance", s))
    adapter = st.sampled_from([("connect",), ("disconnect",)])
    return st.lists(mostly(70, call, st.one_of(advance, adapter)), min_size=1, max_size=6)


# ---- the world ------------------------------------------------------------------------------------------------


def _render_both(record) -> bool:
    event_to_pb(record)
    json.dumps(record)
    return True


class FakeOpenoltServer:
    """Stands in for the OpenOLT GrpcServerService that the v1 server-control RPCs drive (serving, start, stop)."""

    def __init__(self, hub):
        self.hub = hub
        self.serving = True

    def start_server(self):
        assert not self.serving, "start_server while serving (GrpcServerService raises AlreadyRunning)"
        self.serving = True

    def stop_server(self):
        if self.serving:
            self.hub.end_all()
        self.serving = False


class StreamContext(FakeContext):
    """A server-streaming call's context that the client cancelled at once."""

    def is_active(self):
        return False


class World:
    """A fresh 2x2 OLT with every gRPC servicer over it, wired as makeService wires them, in `start` state:
    fresh (started, no adapter), up (an adapter connected and activated every ONU) or provisioned (and pushed an
    EAPOL flow, a DHCP flow and a scheduler per ONU)."""

    def __init__(self, start: str):
        self.sim = Sim(pon=2, onu=2, frame_path=True)
        olt = self.olt = self.sim.olt
        self.server = FakeOpenoltServer(self.sim.hub)
        olt.subscribe(self._follow_openolt)
        commands = V1Commands(olt, openolt=self.server, revision="extended")
        self.bus = EventBus(olt, self.sim.clock)
        # Every event as both event streams render it (gRPC StreamEvents, REST SSE JSON), all along the run.
        self.bus.subscribe(_render_both)
        self.v0 = V0Commands(olt)
        self.servicers = {
            "bbsim.BBSim": on_loop(BBSimServicer(commands), bbsim_pb2_grpc.BBSimServicer),
            "legacy.BBSimService": on_loop(LegacyServicer(self.v0), legacy_pb2_grpc.BBSimServiceServicer),
            "oltsim.v1.Oltsim": on_loop(OltsimServicer(self.bus, commands=commands), oltsim_pb2_grpc.OltsimServicer),
            "openolt.Openolt": self.sim.openolt,
        }
        self.v1_rest = Rest(v1_rest.V1Rest(commands).resource())
        self.v0_rest = Rest(v0_rest.V0Rest(self.v0).resource())
        self.log: list[str] = []
        if start in ("up", "provisioned"):
            self.connect()
            self.sim.discover_all()
            for onu in olt.onus:
                self.call("openolt.Openolt", "ActivateOnu", openolt_pb2.Onu(
                    intf_id=onu.pon.id, onu_id=onu.index, serial_number=openolt_pb2.SerialNumber(
                        vendor_id=b"BBSM", vendor_specific=bytes.fromhex(onu.serial[4:]))))
        if start == "provisioned":
            for onu in olt.onus:
                c_tag = onu.unis[0].services[0].c_tag
                base = dict(access_intf_id=onu.pon.id, onu_id=onu.onu_id, uni_id=0, flow_id=onu.onu_id,
                            flow_type="downstream", alloc_id=1024 + onu.onu_id, gemport_id=1024 + onu.onu_id,
                            port_no=256 + onu.onu_id, priority=100)
                self.call("openolt.Openolt", "FlowAdd", openolt_pb2.Flow(
                    classifier=openolt_pb2.Classifier(eth_type=0x888E, o_vid=4091), **base))
                self.call("openolt.Openolt", "FlowAdd", openolt_pb2.Flow(
                    classifier=openolt_pb2.Classifier(eth_type=0x0800, src_port=68, dst_port=67, o_vid=c_tag), **base))
                self.call("openolt.Openolt", "CreateTrafficSchedulers", tech_profile_pb2.TrafficSchedulers(
                    intf_id=onu.pon.id, onu_id=onu.onu_id, uni_id=0, port_no=256 + onu.onu_id,
                    traffic_scheds=[tech_profile_pb2.TrafficScheduler(
                        direction=tech_profile_pb2.UPSTREAM, alloc_id=1024 + onu.onu_id, tech_profile_id=64)]))
        self.log.clear()

    def _follow_openolt(self, event):
        # as makeService's follow_openolt: the model decides when the OpenOLT endpoint is up
        if isinstance(event, events.OpenoltServer):
            if event.running and not self.server.serving:
                self.server.start_server()
            elif not event.running and self.server.serving:
                self.server.stop_server()

    # ---- actions --------------------------------------------------------------------------------------------

    def call(self, service: str, method: str, request):
        """One RPC through its servicer; a refusal must carry an allowed status."""
        self.log.append(f"{service}/{method}({text_format.MessageToString(request, as_one_line=True)})")
        servicer = self.servicers[service]
        descriptor = SERVICES[service].methods_by_name[method]
        try:
            if descriptor.server_streaming:
                stream = getattr(servicer, method)(request, StreamContext())
                return stream_now(stream) if inspect.isasyncgen(stream) else list(stream)
            response = grpc_call(servicer, method, request)
        except Aborted as exc:
            assert exc.code in ALLOWED, f"{self.log[-1]} -> {exc.code.name}: {exc.details}\nsequence: {self.log}"
            return exc
        assert type(response).DESCRIPTOR.full_name == descriptor.output_type.full_name, self.log[-1]
        return response

    def connect(self):
        """An adapter opens EnableIndication (what the servicer runs on the reactor before streaming)."""
        self.log.append("connect")
        try:
            self.sim.connect()
        except Unavailable:
            self.sim.stream = None  # the OLT is rebooting or not powered on: the adapter retries later

    def disconnect(self):
        self.log.append("disconnect")
        if self.sim.stream is not None:
            self.sim.disconnect()

    def run(self, actions):
        for action in actions:
            if action[0] == "call":
                _, service, method, request = action
                self.call(service, method.name, request)
            elif action[0] == "advance":
                self.log.append(f"advance {action[1]}")
                self.sim.clock.advance(action[1])
            elif action[0] == "connect":
                self.connect()
            else:
                self.disconnect()

    # ---- afterwards -------------------------------------------------------------------------------------------

    def check(self):
        """The invariants, the REST views against their documents, and no timer left after stopping."""
        violations = model_invariants(self.olt)
        assert violations == [], f"{violations}\nsequence: {self.log}"
        check_rest_views(self)
        self.olt.stop()
        assert self.olt.pending_calls() == 0, self.log


_DOCUMENTS = {"v1": v1_rest.openapi_document("extended", events=False), "v0": v0_rest.openapi_document()}


def _validate(document, name: str, instance, where: str) -> None:
    schema = {"$ref": f"#/components/schemas/{name}", "components": document["components"]}
    error = next(OAS.OAS30Validator(schema).iter_errors(instance), None)
    assert error is None, f"{where}: {error.message} at {list(error.absolute_path)}"


def check_rest_views(world: World) -> None:
    """What REST clients read after the gRPC calls: every v1 and v0 view answers 200 and matches its document."""
    views = [("v1", "/v1/olt", "bbsim.Olt"), ("v1", "/v1/olt/onus", "bbsim.ONUs"),
             ("v1", "/v1/olt/flows", "bbsim.Flows"), ("v0", "/v0/olt", "legacy.OLTStatusResponse"),
             ("v0", "/v0/olt/onus", "legacy.ONUs"), ("v0", "/v0/olt/flows", "legacy.Flows")]
    for onu in world.olt.onus:
        views.append(("v1", f"/v1/olt/onus/{onu.serial}/trafficschedulers", "bbsim.ONUTrafficSchedulers"))
        views.append(("v1", f"/v1/olt/onus/{onu.serial}/flows", "bbsim.Flows"))
    for api, path, name in views:
        reply = (world.v1_rest if api == "v1" else world.v0_rest).call("GET", path)
        assert reply.code == 200, f"GET {path} -> {reply.code} {reply.body!r}\nsequence: {world.log}"
        _validate(_DOCUMENTS[api], name, reply.json, f"GET {path} after {world.log}")


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


# ---- the tests ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("start", START_STATES)
@pytest.mark.parametrize("service", sorted(SERVICES))
def test_every_method_takes_an_empty_message(service, start, logged_failures):
    """Every method of every service answers its default (all-empty) request, in every start state, with a response
    or an allowed refusal."""
    world = World(start)
    for method in unary_methods(service):
        world.call(service, method.name, message_factory.GetMessageClass(method.input_type)())
    world.check()
    assert logged_failures == []


@pytest.mark.parametrize("start", START_STATES + ("rebooting",))
def test_enable_indication_streams_or_refuses(start, logged_failures):
    """The real EnableIndication generator either yields an indication at once or ends with UNAVAILABLE (the OLT is
    rebooting); closing it (the adapter gone) unregisters the stream."""
    world = World("fresh" if start == "rebooting" else start)
    if start == "rebooting":
        world.connect()
        world.olt.reboot()
    world.disconnect()
    # A reconnecting adapter gets its indications after the reconnect delay (reference 4.2).
    stream = world.servicers["openolt.Openolt"].EnableIndication(openolt_pb2.Empty(), FakeContext())
    seen = []

    def wait():
        # The adapter waits on its stream while the reconnect delay passes; the hub holds its queue meanwhile.
        seen.append(world.sim.hub.current is not None)
        world.sim.clock.advance(world.olt.timings.reconnect_delay)

    try:
        items = stream_now(stream, wait)
    except Aborted as exc:
        assert start == "rebooting" and exc.code == grpc.StatusCode.UNAVAILABLE, exc
    else:
        assert start != "rebooting" and items and items[0].WhichOneof("data"), items
        assert seen == [True]
        assert world.sim.hub.current is None  # the stream ended when the client left: unregistered
    world.check()
    assert logged_failures == []


def _random_messages(service: str):
    # One function object per service: pytest-twisted rewires a hypothesis test's inner function on the function
    # object itself, which breaks when pytest.mark.parametrize shares one object between items.
    @FUZZ
    @given(start=st.sampled_from(START_STATES), data=st.data())
    def test(start, data, logged_failures):
        world = World(start)
        world.run(data.draw(sequences([service]), label="actions"))
        world.check()
        assert logged_failures == []
        logged_failures.clear()

    test.__doc__ = (f"Random request sequences to {service} (with clock advances and adapter reconnections between "
                    "calls) get responses or allowed refusals, log no failure and leave the model consistent.")
    return test


test_random_bbsim_messages = _random_messages("bbsim.BBSim")
test_random_legacy_messages = _random_messages("legacy.BBSimService")
test_random_oltsim_messages = _random_messages("oltsim.v1.Oltsim")
test_random_openolt_messages = _random_messages("openolt.Openolt")


@FUZZ
@given(start=st.sampled_from(START_STATES), data=st.data())
def test_random_messages_across_services(start, data, logged_failures):
    """The same with calls of all four services interleaved (the control APIs acting while the adapter acts)."""
    world = World(start)
    world.run(data.draw(sequences(sorted(SERVICES)), label="actions"))
    world.check()
    assert logged_failures == []
    logged_failures.clear()
