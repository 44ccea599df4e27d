"""The whole simulator in this process on the real reactor, driven by a scripted openolt adapter over real sockets.

Every listener is on 127.0.0.1:0. The blocking adapter runs on a thread (deferToThread); REST is read with treq
against the real port and the v1 gRPC API through a real channel. Each test ends by stopping the service and
checking that the model left no delayed call behind. Every test runs on both engines of the OpenOLT endpoint
(`engines.grpc_engine`).
"""
from __future__ import annotations

import time

import grpc
import pytest_twisted
import treq
from google.protobuf import json_format
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc
from prometheus_client.parser import text_string_to_metric_families
from twisted.internet import reactor
from twisted.internet.defer import inlineCallbacks
from twisted.internet.threads import deferToThread
from twisted.web.client import HTTPConnectionPool
from voltha_protos import openolt_pb2, openolt_pb2_grpc

from engines import engine_options, grpc_engine  # noqa: F401 - the fixture
from oltsim._proto import bbsim_pb2, bbsim_pb2_grpc
from oltsim.tap import Options, makeService
from scripted_adapter import (ScriptedAdapter, describe, is_alarm, is_intf_oper_ind, is_olt_ind, is_onu_disc,
                              is_onu_ind, kind, listener_options, serial_of)

LOOPBACK = "tcp:0:interface=127.0.0.1"
PON_PORT_BASE = 0x20000000
NNI_PORT_BASE = 0x100000
HTTP_TIMEOUT = 10


class Oltsim:
    """A started oltsim service and how to reach it: OpenOLT and v1 gRPC addresses, v1 REST over treq."""

    def __init__(self, top):
        self.top = top
        self.olt = top.olt
        self.hub = top.hub
        self.openolt = f"127.0.0.1:{top.getServiceNamed('openolt').port}"
        self.grpc_v1 = f"127.0.0.1:{top.getServiceNamed('grpc-v1').port}"
        self.rest = f"http://127.0.0.1:{_listening_port(top.getServiceNamed('rest-v1'))}"
        # Not persistent: no idle keep-alive connection outlives the test.
        self.pool = HTTPConnectionPool(reactor, persistent=False)

    @inlineCallbacks
    def request(self, method: str, path: str):
        """(HTTP status, decoded JSON body) of one REST call."""
        response = yield treq.request(method, self.rest + path, pool=self.pool, timeout=HTTP_TIMEOUT)
        body = yield treq.json_content(response)
        return response.code, body

    @inlineCallbacks
    def get(self, path: str):
        code, body = yield self.request("GET", path)
        assert code == 200, (path, code, body)
        return body

    def bbsim(self, method: str, request):
        """A v1 gRPC call (`bbsim.BBSim`) through a real channel, on a thread; fires with the response."""
        def call():
            with grpc.insecure_channel(self.grpc_v1) as channel:
                return getattr(bbsim_pb2_grpc.BBSimStub(channel), method)(request, timeout=HTTP_TIMEOUT)
        return deferToThread(call)


def _listening_port(endpoint_service) -> int:
    # StreamServerEndpointService keeps its listening port only in this Deferred (fired at once for tcp:).
    got = []
    endpoint_service._waitingForPort.addCallback(lambda port: got.append(port) or port)
    return got[0].getHost().port


def start_oltsim(tmp_path, *arguments: str, engine: str | None = None) -> Oltsim:
    """Build and start oltsim on loopback ports; reboot timings shortened by a YAML config file. The OpenOLT
    endpoint runs on `engine` (`engines.grpc_engine`; None: the default, auto)."""
    config = tmp_path / "oltsim.yaml"
    config.write_text("olt:\n  reboot_delay: 1\n  reboot_grace: 0.2\n")
    listen = [arg for name in listener_options() for arg in (f"--{name}", LOOPBACK)]
    options = Options()
    options.parseOptions(["--config", str(config), *listen, *engine_options(engine), *arguments])
    top = makeService(options, reactor)
    if engine is not None:
        assert top.getServiceNamed("openolt").engine == engine
    top.startService()
    return Oltsim(top)


@inlineCallbacks
def stop_oltsim(sim: Oltsim, adapter: ScriptedAdapter | None = None):
    """Stop the service, then the adapter; no delayed call of the model may remain."""
    yield sim.top.stopService()
    if adapter is not None:
        yield deferToThread(adapter.close)
    assert sim.olt.pending_calls() == 0


@inlineCallbacks
def hsia_c_tags(sim: Oltsim):
    """serial -> C-tag of the hsia service on UNI 0 (BBR derives it from its own copy of the model)."""
    onus = yield sim.get("/v1/olt/onus")
    return {onu["SerialNumber"]: onu["unis"][0]["services"][0]["CTag"] for onu in onus["items"]}


def without_statistics(indications) -> list:
    """The indications that are not periodic statistics (those come on their own timer, as in BBSim)."""
    return [i for i in indications if kind(i) not in ("port_stats", "flow_stats")]


def as_json(message) -> dict:
    """A gRPC response as the REST JSON renders it (proto names, defaults emitted)."""
    return json_format.MessageToDict(message, preserving_proto_field_name=True,
                                     always_print_fields_with_no_presence=True)


#: reboots in a row of the reboot loop test: a stream opened while the old endpoint closes is the case it looks for
REBOOTS_IN_A_ROW = 8


@pytest_twisted.inlineCallbacks
def test_reboots_in_a_row_each_come_back_with_indications_and_a_new_signature(tmp_path, grpc_engine):
    """An OLT rebooted again and again, the adapter opening EnableIndication as soon as the last one ended: every
    time, the old stream ends with UNAVAILABLE and a new one brings OltInd and both ONUs' discoveries, under a
    signature no earlier boot had."""
    sim = start_oltsim(tmp_path, "--pon", "1", "--onu", "2", "--delay", "0", engine=grpc_engine)
    adapter = ScriptedAdapter(sim.openolt, reconnect_backoff_ms=100)
    try:
        def reboots():
            _, onus = adapter.bring_up(2)
            signatures = [adapter.heartbeat()]
            ends = []
            for _ in range(REBOOTS_IN_A_ROW):
                adapter.reboot()
                ends.append(adapter.stream.wait_end()[0])
                stream = adapter.reconnect(timeout=15)
                assert is_olt_ind("up")(stream.wait_for(lambda i: True, "a first indication"))
                stream.wait_for_each({o.serial: is_onu_disc(o.serial) for o in onus})
                signatures.append(adapter.heartbeat())
            return ends, signatures

        ends, signatures = yield deferToThread(reboots)
        assert ends == [grpc.StatusCode.UNAVAILABLE] * REBOOTS_IN_A_ROW
        assert len(set(signatures)) == REBOOTS_IN_A_ROW + 1, signatures
    finally:
        yield stop_oltsim(sim, adapter)


@pytest_twisted.inlineCallbacks
def test_bring_up_indications_flows_and_views(tmp_path, grpc_engine):
    """A fresh EnableIndication delivers OltInd, the NNI, each PON and then its ONUs' discoveries; every activated
    ONU comes up; flows (the DHCP flow replacing the EAPOL one) and schedulers show in REST and gRPC alike."""
    sim = start_oltsim(tmp_path, "--pon", "2", "--onu", "3", "--delay", "20", engine=grpc_engine)
    adapter = ScriptedAdapter(sim.openolt)
    try:
        c_tags = yield hsia_c_tags(sim)

        def script():
            info, onus = adapter.bring_up(6)
            adapter.provision(onus, c_tags)
            return info, onus, adapter.heartbeat()

        info, onus, signature = yield deferToThread(script)
        received = without_statistics(adapter.stream.since(0))

        assert info.device_serial_number == "BBSIM_OLT_0" and info.pon_ports == 2
        assert signature != 0

        # Order of a fresh enable (reference 1.8).
        assert is_olt_ind("up")(received[0]), describe(received[0])
        assert is_intf_oper_ind("nni", 0)(received[1]), describe(received[1])
        position = {}
        for index, indication in enumerate(received):
            if kind(indication) == "intf_ind":
                position.setdefault(("intf_ind", indication.intf_ind.intf_id), index)
            elif kind(indication) == "intf_oper_ind" and indication.intf_oper_ind.type == "pon":
                position.setdefault(("pon_oper", indication.intf_oper_ind.intf_id), index)
        for pon in (0, 1):
            assert 1 < position[("intf_ind", pon)] < position[("pon_oper", pon)]
        discoveries = [(i, ind.onu_disc_ind) for i, ind in enumerate(received) if kind(ind) == "onu_disc_ind"]
        assert sorted(serial_of(d.serial_number) for _, d in discoveries) == sorted(c_tags)
        for index, disc in discoveries:
            assert index > position[("pon_oper", disc.intf_id)]

        # ONU ids 1, 2, 3 per PON in arrival order; one OnuInd up each, with that id.
        for pon in (0, 1):
            in_order = [serial_of(d.serial_number) for _, d in discoveries if d.intf_id == pon]
            assert [adapter.onus[sn].onu_id for sn in in_order] == [1, 2, 3]
        ups = [ind.onu_ind for ind in received if is_onu_ind(oper_state="up")(ind)]
        assert sorted((u.intf_id, u.onu_id, serial_of(u.serial_number), u.admin_state) for u in ups) == sorted(
            (o.pon, o.onu_id, o.serial, "up") for o in onus)

        # Flows: one per ONU (same flow id on both PONs), the DHCP flow having replaced the EAPOL flow.
        flows = yield sim.get("/v1/olt/flows")
        assert flows["flow_count"] == 6
        keys = [(f["access_intf_id"], f["onu_id"], f["flow_id"]) for f in flows["flows"]]
        assert sorted(keys) == sorted((o.pon, o.onu_id, str(o.onu_id)) for o in onus)
        assert {f["classifier"]["eth_type"] for f in flows["flows"]} == {0x0800}
        for onu in onus:
            mine = yield sim.get(f"/v1/olt/onus/{onu.serial}/flows")
            assert mine["flow_count"] == 1
            flow = mine["flows"][0]
            assert (flow["access_intf_id"], flow["onu_id"], flow["flow_id"]) == (onu.pon, onu.onu_id,
                                                                               str(onu.onu_id))
            assert flow["classifier"]["o_vid"] == c_tags[onu.serial]
            scheds = yield sim.get(f"/v1/olt/onus/{onu.serial}/trafficschedulers")
            sched = scheds["traffSchedulers"]
            assert (sched["intf_id"], sched["onu_id"]) == (onu.pon, onu.onu_id)
            assert sched["traffic_scheds"][0]["alloc_id"] == onu.onu_id
            assert sched["traffic_scheds"][0]["tech_profile_id"] == 64

        # The OLT view: enabled, and every PON's allocated ONU ids are the ones the adapter gave.
        olt = yield sim.get("/v1/olt")
        assert (olt["OperState"], olt["InternalState"]) == ("up", "enabled")
        for pon in olt["PONPorts"]:
            allocated = sorted((a["SerialNumber"], a["Id"]) for a in pon["AllocatedOnuIds"])
            assert allocated == sorted((o.serial, o.onu_id) for o in onus if o.pon == pon["ID"])

        # gRPC and REST agree.
        rest_onus = yield sim.get("/v1/olt/onus")
        assert all(o["InternalState"] == "enabled" for o in rest_onus["items"])
        grpc_onus = yield sim.bbsim("GetONUs", bbsim_pb2.Empty())
        assert as_json(grpc_onus) == rest_onus
        grpc_flows = yield sim.bbsim("GetFlows", bbsim_pb2.ONURequest())
        assert as_json(grpc_flows) == flows
        one = onus[0]
        grpc_flow = yield sim.bbsim("GetFlows", bbsim_pb2.ONURequest(SerialNumber=one.serial))
        rest_flow = yield sim.get(f"/v1/olt/onus/{one.serial}/flows")
        assert as_json(grpc_flow) == rest_flow
    finally:
        yield stop_oltsim(sim, adapter)


@pytest_twisted.inlineCallbacks
def test_broken_stream_then_reconnect(tmp_path, grpc_engine):
    """After the adapter breaks its stream and opens a new one, the new stream gets OltInd and the NNI only (no
    PON IntfInd, nothing for the active ONUs), and the ONUs, ids and flows are kept."""
    sim = start_oltsim(tmp_path, "--pon", "1", "--onu", "2", "--delay", "0", engine=grpc_engine)
    adapter = ScriptedAdapter(sim.openolt)
    try:
        c_tags = yield hsia_c_tags(sim)

        def bring_up():
            _, onus = adapter.bring_up(2)
            adapter.provision(onus, c_tags)
            adapter.stream.cancel()
            return onus

        onus = yield deferToThread(bring_up)
        first = adapter.stream
        assert first.code == grpc.StatusCode.CANCELLED
        before_onus = yield sim.get("/v1/olt/onus")
        before_flows = yield sim.get("/v1/olt/flows")

        def reconnect():
            stream = adapter.enable_indication()
            stream.wait_for(is_olt_ind("up"), "OltInd up")
            stream.wait_for(is_intf_oper_ind("nni", 0), "NNI IntfOperInd")
            stream.settle(quiet=0.5)
            return without_statistics(stream.since(0))

        received = yield deferToThread(reconnect)
        assert [kind(i) for i in received] == ["olt_ind", "intf_oper_ind"], [describe(i) for i in received]

        after_onus = yield sim.get("/v1/olt/onus")
        assert after_onus == before_onus
        assert {o["InternalState"] for o in after_onus["items"]} == {"enabled"}
        after_flows = yield sim.get("/v1/olt/flows")
        assert after_flows == before_flows and after_flows["flow_count"] == len(onus)
        olt = yield sim.get("/v1/olt")
        assert sorted((a["SerialNumber"], a["Id"]) for a in olt["PONPorts"][0]["AllocatedOnuIds"]) == sorted(
            (o.serial, o.onu_id) for o in onus)
    finally:
        yield stop_oltsim(sim, adapter)


@pytest_twisted.inlineCallbacks
def test_reboot_ends_stream_and_comes_back_with_new_signature(tmp_path, grpc_engine):
    """Reboot: OnuInd down for every ONU, the stream ends with UNAVAILABLE after the grace; once the endpoint is
    back, a new EnableIndication gets OltInd, the NNI and the ONUs' rediscovery, under a new heartbeat signature,
    with no flows left."""
    sim = start_oltsim(tmp_path, "--pon", "1", "--onu", "2", "--delay", "0", engine=grpc_engine)
    adapter = ScriptedAdapter(sim.openolt, reconnect_backoff_ms=100)
    try:
        c_tags = yield hsia_c_tags(sim)

        def before_reboot():
            _, onus = adapter.bring_up(2)
            adapter.provision(onus, c_tags)
            signature = adapter.heartbeat()
            stream = adapter.stream
            mark = stream.cursor
            adapter.reboot()
            stream.wait_for_each({o.serial: is_onu_ind(o.serial, "down", "down") for o in onus}, start=mark)
            return onus, signature, stream.wait_end()

        onus, old_signature, (code, details) = yield deferToThread(before_reboot)
        assert code == grpc.StatusCode.UNAVAILABLE, (code, details)

        def after_reboot():
            stream = adapter.reconnect(timeout=15)
            stream.wait_for(is_intf_oper_ind("nni", 0), "NNI IntfOperInd")
            stream.wait_for_each({o.serial: is_onu_disc(o.serial) for o in onus})
            return without_statistics(stream.since(0)), adapter.heartbeat()

        received, new_signature = yield deferToThread(after_reboot)
        assert new_signature != old_signature
        assert is_olt_ind("up")(received[0])
        assert not [i for i in received if kind(i) == "intf_ind"], [describe(i) for i in received]
        flows = yield sim.get("/v1/olt/flows")
        assert flows["flow_count"] == 0
        olt = yield sim.get("/v1/olt")
        assert (olt["OperState"], olt["InternalState"]) == ("up", "enabled")
        assert olt["PONPorts"][0]["AllocatedOnuIds"] == []
    finally:
        yield stop_oltsim(sim, adapter)


@pytest_twisted.inlineCallbacks
def test_shutdown_and_poweron_onu_over_rest(tmp_path, grpc_engine):
    """DELETE /v1/olt/onus/{sn} sends dying gasp, LOS on and OnuInd down; POST sends LOS off, OnuDiscInd and
    OnuInd up with the ONU's id, without a new ActivateOnu; a second power-on is refused with 409."""
    sim = start_oltsim(tmp_path, "--pon", "1", "--onu", "2", "--delay", "0", engine=grpc_engine)
    adapter = ScriptedAdapter(sim.openolt)
    try:
        onus = yield deferToThread(lambda: adapter.bring_up(2)[1])
        onu, other = onus
        stream = adapter.stream
        stream.settle()
        mark = stream.cursor = len(stream.received)

        code, body = yield sim.request("DELETE", f"/v1/olt/onus/{onu.serial}")
        assert (code, body["message"]) == (200, f"ONU {onu.serial} successfully shut down.")

        def watch_shutdown():
            ours = lambda a: a.intf_id == onu.pon and a.onu_id == onu.onu_id  # noqa: E731
            stream.wait_for(is_alarm("dying_gasp_ind", lambda a: ours(a) and a.status == "on"), "dying gasp on")
            stream.wait_for(is_alarm("onu_alarm_ind", lambda a: ours(a) and a.los_status == "on"), "LOS on")
            down = stream.wait_for(is_onu_ind(onu.serial, "down", "down"), "OnuInd down")
            return down.onu_ind

        down = yield deferToThread(watch_shutdown)
        assert (down.intf_id, down.onu_id) == (onu.pon, onu.onu_id)
        state = yield sim.get(f"/v1/olt/onus/{onu.serial}")
        assert state["InternalState"] == "disabled"

        code, body = yield sim.request("POST", f"/v1/olt/onus/{onu.serial}")
        assert (code, body["message"]) == (200, f"ONU {onu.serial} successfully powered on.")

        def watch_poweron():
            stream.wait_for(is_alarm("onu_alarm_ind", lambda a: a.onu_id == onu.onu_id and a.los_status == "off"),
                            "LOS off")
            stream.wait_for(is_onu_disc(onu.serial), "OnuDiscInd")
            up = stream.wait_for(is_onu_ind(onu.serial, "up"), "OnuInd up")
            stream.settle()
            return up.onu_ind, stream.since(mark)

        up, watched = yield deferToThread(watch_poweron)
        assert (up.intf_id, up.onu_id, up.admin_state) == (onu.pon, onu.onu_id, "up")
        assert not [i for i in watched if "onu_ind" == kind(i) and serial_of(i.onu_ind.serial_number)
                    == other.serial], "the other ONU was touched"
        state = yield sim.get(f"/v1/olt/onus/{onu.serial}")
        assert (state["InternalState"], state["ID"]) == ("enabled", onu.onu_id)

        code, body = yield sim.request("POST", f"/v1/olt/onus/{onu.serial}")
        assert (code, body["code"]) == (409, grpc.StatusCode.FAILED_PRECONDITION.value[0]), body
        assert body["message"] == f"ONU {onu.serial} is already enabled"
    finally:
        yield stop_oltsim(sim, adapter)


@pytest_twisted.inlineCallbacks
def test_rest_alarms_reach_the_stream(tmp_path, grpc_engine):
    """An ONU alarm and PON/NNI loss of signal set over REST arrive as AlarmInd on the adapter's stream."""
    sim = start_oltsim(tmp_path, "--pon", "1", "--onu", "1", "--delay", "0", engine=grpc_engine)
    adapter = ScriptedAdapter(sim.openolt)
    try:
        onus = yield deferToThread(lambda: adapter.bring_up(1)[1])
        onu = onus[0]
        for path in (f"/v1/olt/onus/{onu.serial}/alarms/ONU_SIGNAL_DEGRADE/on",
                     "/v1/olt/ports/pon/0/alarms/los/on", "/v1/olt/ports/nni/0/alarms/los/off"):
            code, body = yield sim.request("POST", path)
            assert code == 200, (path, body)

        def watch():
            stream = adapter.stream
            degrade = stream.wait_for(is_alarm("onu_signal_degrade_ind"), "signal degrade")
            pon_los = stream.wait_for(is_alarm("los_ind", lambda a: a.intf_id == PON_PORT_BASE), "PON LOS")
            nni_los = stream.wait_for(is_alarm("los_ind", lambda a: a.intf_id == NNI_PORT_BASE), "NNI LOS")
            return (degrade.alarm_ind.onu_signal_degrade_ind, pon_los.alarm_ind.los_ind,
                    nni_los.alarm_ind.los_ind)

        degrade, pon_los, nni_los = yield deferToThread(watch)
        assert (degrade.intf_id, degrade.onu_id, degrade.status) == (onu.pon, onu.onu_id, "on")
        assert pon_los.status == "on" and nni_los.status == "off"
    finally:
        yield stop_oltsim(sim, adapter)


@pytest_twisted.inlineCallbacks
def test_alarm_without_adapter_answers_at_once_and_is_dropped(tmp_path, grpc_engine):
    """With no adapter on the stream an alarm request answers 200 without waiting, saying that its indication was
    not sent; it is dropped and not delivered to an adapter that connects later."""
    sim = start_oltsim(tmp_path, "--pon", "1", "--onu", "1", "--delay", "0", engine=grpc_engine)
    adapter = ScriptedAdapter(sim.openolt)
    try:
        dropped = sim.hub.dropped
        code, body = yield sim.request("POST", "/v1/olt/onus/BBSM00000001/alarms/DYING_GASP/on")
        assert (code, body["message"]) == (200, "Onu Alarm applied (no adapter connected: indications not sent).")
        code, body = yield sim.request("POST", "/v1/olt/ports/pon/0/alarms/los/on")
        assert (code, body["message"]) == (200, "Olt Alarm applied (no adapter connected: indications not sent).")
        assert sim.hub.dropped == dropped + 2

        def connect():
            adapter.bring_up(1)
            stream = adapter.stream
            stream.settle()
            return stream.since(0)

        received = yield deferToThread(connect)
        assert not [i for i in received if kind(i) == "alarm_ind"], [describe(i) for i in received]
    finally:
        yield stop_oltsim(sim, adapter)


@pytest_twisted.inlineCallbacks
def test_openolt_endpoint_offers_reflection_and_counts_calls(tmp_path, grpc_engine):
    """The OpenOLT server (either engine, on the reactor's loop) lists its service by reflection, as BBSim's does,
    and its calls are counted in /metrics by status, OMCI requests included."""
    sim = start_oltsim(tmp_path, "--pon", "1", "--onu", "1", "--delay", "0", engine=grpc_engine)
    try:
        def calls():
            with grpc.insecure_channel(sim.openolt) as channel:
                reflect = reflection_pb2_grpc.ServerReflectionStub(channel).ServerReflectionInfo(
                    iter([reflection_pb2.ServerReflectionRequest(list_services="")]), timeout=HTTP_TIMEOUT)
                services = [s.name for r in reflect for s in r.list_services_response.service]
                stub = openolt_pb2_grpc.OpenoltStub(channel)
                stub.GetDeviceInfo(openolt_pb2.Empty(), timeout=HTTP_TIMEOUT)
                try:
                    stub.OmciMsgOut(openolt_pb2.OmciMsg(intf_id=0, onu_id=9, pkt=b"00"), timeout=HTTP_TIMEOUT)
                except grpc.RpcError as exc:
                    refused = exc.code()
                return services, refused

        services, refused = yield deferToThread(calls)
        assert "openolt.Openolt" in services
        assert refused is grpc.StatusCode.NOT_FOUND
        response = yield treq.get(sim.rest + "/metrics", pool=sim.pool, timeout=HTTP_TIMEOUT)
        text = (yield treq.text_content(response))
        counts = {(s.labels["surface"], s.labels["status"]): s.value
                  for family in text_string_to_metric_families(text) if family.name == "oltsim_requests"
                  for s in family.samples if s.name == "oltsim_requests_total"}
        assert counts[("openolt", "OK")] >= 2          # reflection and GetDeviceInfo
        assert counts[("openolt", "NOT_FOUND")] == 1   # the OMCI message for an ONU that does not exist
    finally:
        yield stop_oltsim(sim)


@pytest_twisted.inlineCallbacks
def test_thousands_of_outstanding_calls_are_queued_not_refused(tmp_path, grpc_engine):
    """An adapter with thousands of calls outstanding while the simulator is busy (BBR bringing up 2048 ONUs sends
    one OMCI request per ONU together) gets every one answered: the server, on either engine, queues them instead
    of refusing streams (grpcio's default refuses beyond 1000 pending calls, which BBR treats as fatal)."""
    sim = start_oltsim(tmp_path, "--pon", "1", "--onu", "1", "--delay", "0", engine=grpc_engine)
    calls = 4000
    try:
        def burst():
            with grpc.insecure_channel(sim.openolt) as channel:
                heartbeat = openolt_pb2_grpc.OpenoltStub(channel).HeartbeatCheck
                heartbeat(openolt_pb2.Empty(), timeout=10)  # connected
                # The reactor thread is held for 2 s, as a saturated one would be: the calls pile up unanswered.
                reactor.callFromThread(time.sleep, 2)
                futures = [heartbeat.future(openolt_pb2.Empty(), timeout=60) for _ in range(calls)]
                outcomes = {}
                for future in futures:
                    try:
                        future.result()
                        code = grpc.StatusCode.OK
                    except grpc.RpcError as exc:
                        code = exc.code()
                    outcomes[code] = outcomes.get(code, 0) + 1
                return outcomes

        outcomes = yield deferToThread(burst)
        assert outcomes == {grpc.StatusCode.OK: calls}
    finally:
        yield stop_oltsim(sim)
