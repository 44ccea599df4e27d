"""The built-in adapter (`--adapter builtin`) in memory on a fake clock: it brings every ONU to
eap_response_success_received and dhcp_ack_received with nothing else running, brings them back after a power cycle,
a DeleteOnu, a DisableOlt/ReenableOlt and an OLT reboot, answers restarted EAPOL and DHCP, retries unanswered OMCI,
refuses an external EnableIndication while it drives, and leaves no timer behind when stopped."""
from __future__ import annotations

import random

import grpc
import pytest
from twisted.internet.task import Clock
from twisted.logger import globalLogPublisher
from voltha_protos import common_pb2, openolt_pb2, openolt_pb2_grpc

from conftest import Aborted, FakeContext, grpc_call, stream_now
from oltsim._proto import bbsim_pb2
from oltsim.api.v1.usecases_v1 import V1Commands
from oltsim.config import load_settings
from oltsim.model import events
from oltsim.model.builder import build_olt
from oltsim.omci.responder import OmciResponder
from oltsim.serving.onloop import on_loop
from oltsim.packets.engine import ProtocolEngine
from oltsim.tap import FramePath
from oltsim.southbound import builtin
from oltsim.southbound.builtin import BuiltinAdapter, uni_port_no
from oltsim.southbound.openolt import IndicationHub, OpenoltServicer

EAP_OK = "eap_response_success_received"
DHCP_OK = "dhcp_ack_received"
STEP = 0.1


class Rig:
    """The daemon's southbound in memory: the OLT model with its OMCI responder and protocol engine, the indication
    hub, the OpenOLT servicer (as the gRPC server serves it) and the built-in adapter, all on one fake clock."""

    def __init__(self, clock: Clock | None = None, **given):
        settings = {"pon": 2, "onu": 4, "reboot_delay": 5}
        settings.update(given)
        self.settings = load_settings(settings, None)
        self.clock = clock or Clock()
        self.engine = ProtocolEngine.from_settings(self.settings)
        path = FramePath(OmciResponder.from_settings(self.settings), self.engine)
        self.olt = build_olt(self.settings, self.clock, random.Random(0), omci=path.omci, frames=path.frames)
        path.attach(self.olt)
        self.hub = IndicationHub(self.olt)
        self.servicer = OpenoltServicer(self.olt, self.hub)
        self.openolt = on_loop(self.servicer, openolt_pb2_grpc.OpenoltServicer)
        self.commands = V1Commands(self.olt)
        self.serving = True  # the OpenOLT gRPC server's state, as the daemon tells the adapter
        self.adapter = BuiltinAdapter(self.olt, self.hub, OpenoltServicer(self.olt, self.hub), self.clock,
                                      random.Random(1), reachable=lambda: self.serving)
        self.olt.start()
        self.adapter.startService()

    def run(self, seconds: float) -> None:
        """Advance the clock in small steps (a timer set by a callback runs at its own time)."""
        for _ in range(round(seconds / STEP)):
            self.clock.advance(STEP)

    def run_until(self, predicate, seconds: float, what: str) -> None:
        """Advance step by step until `predicate()` holds, at most `seconds` of fake time."""
        for _ in range(round(seconds / STEP)):
            if predicate():
                return
            self.clock.advance(STEP)
        assert predicate(), f"{what} did not happen within {seconds:g} s of fake time: {self.states()}"

    def services(self, serial: str | None = None):
        onus = [self.olt.onu_by_serial(serial)] if serial else self.olt.onus
        return [s for onu in onus for s in onu.services]

    def all_up(self, serial: str | None = None) -> bool:
        return all(s.eapol_state == EAP_OK and s.dhcp_state == DHCP_OK for s in self.services(serial))

    def states(self) -> dict:
        return {onu.serial: (onu.state, sorted({(s.eapol_state, s.dhcp_state) for s in onu.services}))
                for onu in self.olt.onus}

    def stop(self) -> None:
        self.adapter.stopService()
        self.hub.end_all()
        self.olt.stop()


@pytest.fixture
def rig():
    made = []

    def make(clock=None, **given) -> Rig:
        made.append(Rig(clock, **given))
        return made[-1]

    yield make
    for one in made:
        if one.adapter.running:
            one.stop()


def test_every_onu_of_a_2x4_olt_reaches_dhcp_ack_received_with_nothing_else_running(rig):
    """2 PONs x 4 ONUs: each ONU is activated with ids 1..4 of its PON in discovery order, and every service of every
    UNI goes through EAPOL and DHCP; the OMCI configuration registered one alloc id per UNI and one GEM port per
    service, each UNI got its EAPOL and DHCP trap flows on the UNI's port, and the adapter leaves no timer."""
    r = rig()
    requests: list = []
    r.olt.subscribe(lambda e: requests.append(e.rpc) if isinstance(e, events.OpenoltRequest) else None)
    assert not any(s.eapol_state == EAP_OK for s in r.services())
    r.run_until(r.all_up, 20, "every service at dhcp_ack_received")
    assert requests == ["ActivateOnu"] * 8  # the stream was opened before this subscription (BBSim's events)
    for pon in r.olt.pons:
        assert sorted(pon.onu_ids) == [1, 2, 3, 4]
        assert [pon.onu_ids[i] for i in (1, 2, 3, 4)] == [onu.serial for onu in pon.onus]  # discovery order
        assert len(pon.alloc_ids) == 4 * 4 and len(pon.gem_ports) == 4 * 4
    for onu in r.olt.onus:
        assert onu.state == "enabled" and all(uni.state == "up" for uni in onu.eth_unis)
        flows = r.olt.flows.for_onu(onu)
        assert sorted((f.uni_id, f.eth_type) for f in flows) == sorted(
            (uni, eth) for uni in range(4) for eth in (0x888E, 0x0800))
        assert {f.port_no for f in flows} == {uni_port_no(onu.pon.id, onu.onu_id, u) for u in range(4)}
        assert all(s.gem_port for s in onu.services)
    assert all(o.step == "ready" for o in r.adapter.onus.values())
    assert r.adapter.pending_calls() == 0
    assert r.olt.adapter_connected


def test_a_power_cycled_onu_comes_back_to_dhcp_ack_received_with_the_same_onu_id(rig):
    """ShutdownONU resets the ONU's services; PoweronONU rediscovers it, the adapter re-activates it (same id), redoes
    OMCI and the flows, and its services reach dhcp_ack_received again; the other ONUs are untouched."""
    r = rig()
    r.run_until(r.all_up, 20, "bring-up")
    onu = r.olt.onus[1]
    onu_id = onu.onu_id
    r.olt.shutdown_onu(onu.serial)
    r.run(1)
    assert onu.state == "disabled" and all(s.dhcp_state == "created" for s in onu.services)
    assert r.adapter.onus[onu.serial].step == "down"
    r.olt.power_on_onu(onu.serial)
    r.run_until(lambda: r.all_up(onu.serial), 10, "the power-cycled ONU back at dhcp_ack_received")
    assert onu.onu_id == onu_id and r.adapter.onus[onu.serial].bring_ups == 2
    assert len(r.olt.flows.for_onu(onu)) == 8
    assert r.all_up()


def test_a_deleted_onu_is_rediscovered_and_brought_up_again(rig):
    """DeleteOnu from outside (any OpenOLT client may call it): the ONU goes down, is rediscovered about 5 s later,
    and the adapter activates it again under the same ONU id and brings it back to dhcp_ack_received."""
    r = rig()
    r.run_until(r.all_up, 20, "bring-up")
    onu = r.olt.onus[5]
    grpc_call(r.openolt, "DeleteOnu", openolt_pb2.Onu(intf_id=onu.pon.id, onu_id=onu.onu_id))
    r.run(1)
    assert not r.all_up(onu.serial)
    r.run_until(lambda: r.all_up(onu.serial), 15, "the deleted ONU back at dhcp_ack_received")
    assert r.olt.pon(onu.pon.id).onu_ids[onu.onu_id] == onu.serial


def test_after_an_olt_reboot_the_adapter_reconnects_and_every_onu_comes_back(rig):
    """Reboot: the ONUs go down, the OLT ends the adapter's stream and is down `reboot_delay` s; when its OpenOLT
    endpoint is back the adapter connects again (GetDeviceInfo, the stream) and every ONU is re-activated with its
    id and brought back to dhcp_ack_received, its flows pushed again."""
    r = rig()
    r.run_until(r.all_up, 20, "bring-up")
    ids = {onu.serial: onu.onu_id for onu in r.olt.onus}
    requests: list = []
    r.olt.subscribe(lambda e: requests.append(e.rpc) if isinstance(e, events.OpenoltRequest) else None)
    r.olt.reboot()
    r.run(6)  # the 5 s grace: the stream ends, the endpoint stops
    assert r.adapter.queue is None and r.olt.state == "deleted"
    assert not any(s.dhcp_state == DHCP_OK for s in r.services())
    r.run_until(r.all_up, 30, "every service back at dhcp_ack_received after the reboot")
    assert r.adapter.connects == 2
    assert sorted(requests) == ["ActivateOnu"] * 8 + ["EnableIndication"]  # as the Kafka events report them
    assert {onu.serial: onu.onu_id for onu in r.olt.onus} == ids
    assert all(len(r.olt.flows.for_onu(onu)) == 8 for onu in r.olt.onus)


def test_while_the_openolt_server_is_stopped_the_adapter_waits_and_reconnects_when_it_serves_again(rig):
    """StopgRPCServer ends the adapter's stream (the server's stopping hook) and the adapter cannot reach the OLT
    until StartgRPCServer: it waits, then connects again within RECONNECT_DELAY and reconciles: an ONU power-cycled
    meanwhile (its indications reached no one, its flows are gone) is brought up again, the others keep their
    services and are still answered (RestartEapol)."""
    r = rig()
    r.run_until(r.all_up, 20, "bring-up")
    r.serving = False
    r.hub.end_all(details="the OpenOLT server is stopping")
    r.run(5)
    assert r.adapter.queue is None and r.hub.current is None and r.adapter.connects == 1
    cycled, other = r.olt.onus[0], r.olt.onus[4]
    r.olt.shutdown_onu(cycled.serial)
    r.olt.power_on_onu(cycled.serial)
    r.run(1)
    assert not r.all_up(cycled.serial) and not r.olt.flows.for_onu(cycled)
    r.serving = True
    r.run(builtin.RECONNECT_DELAY + 0.2)
    assert r.adapter.connects == 2 and r.hub.current is r.adapter.queue
    r.run_until(r.all_up, 5, "the power-cycled ONU brought back after the reconnection")
    assert len(r.olt.flows.for_onu(cycled)) == 8 and r.adapter.onus[other.serial].bring_ups == 1
    r.commands.RestartEapol(bbsim_pb2.UNIRequest(OnuSerialNumber=other.serial, UniID=""))
    assert not r.all_up(other.serial)
    r.run_until(lambda: r.all_up(other.serial), 5, "RestartEapol answered after the reconnection")


def test_disable_and_reenable_olt_bring_the_onus_back(rig):
    """DisableOlt takes the PONs down (the ONUs lose their flows without an OnuInd); ReenableOlt brings them up and the
    adapter, which forgot them when their PON went down, brings them back to dhcp_ack_received."""
    r = rig()
    r.run_until(r.all_up, 20, "bring-up")
    grpc_call(r.openolt, "DisableOlt", openolt_pb2.Empty())
    r.run(1)
    assert all(len(r.olt.flows.for_onu(onu)) == 0 for onu in r.olt.onus)
    grpc_call(r.openolt, "ReenableOlt", openolt_pb2.Empty())
    r.run_until(lambda: all(len(r.olt.flows.for_onu(onu)) == 8 for onu in r.olt.onus), 10,
                "every ONU's flows pushed again")
    assert all(o.step == "ready" for o in r.adapter.onus.values())


@pytest.mark.parametrize("rpc", ["RestartEapol", "RestartDhcp"])
def test_restarted_eapol_and_dhcp_are_answered(rig, rpc):
    """RestartEapol / RestartDhcp on one ONU (the control API's command): its services start over and the adapter
    answers, so they reach their final state again."""
    r = rig()
    r.run_until(r.all_up, 20, "bring-up")
    serial = r.olt.onus[2].serial
    before = r.adapter.handled
    getattr(r.commands, rpc)(bbsim_pb2.UNIRequest(OnuSerialNumber=serial, UniID=""))
    assert not r.all_up(serial)  # the exchange started over
    r.run_until(lambda: r.all_up(serial), 5, f"{rpc} answered")
    assert r.adapter.handled > before


def test_unanswered_omci_requests_are_sent_again(rig):
    """With omci_response_rate 8 the ONUs leave 2 requests in 10 unanswered: the adapter sends each again after
    OMCI_TIMEOUT and every ONU still comes up."""
    r = rig(pon=1, onu=2, omci_response_rate=8)
    r.run_until(r.all_up, 1200, "bring-up with a fifth of the OMCI answers dropped")
    assert r.adapter.pending_calls() == 0


def test_an_onu_that_never_answers_omci_is_given_up_after_bounded_retries(rig):
    """With omci_response_rate 0 nothing answers: each ONU's MIB reset is sent OMCI_RETRIES + 1 times, then the ONU
    is given up (logged with its serial and step) and no timer is left."""
    logged: list = []
    globalLogPublisher.addObserver(logged.append)
    try:
        r = rig(pon=1, onu=2, omci_response_rate=0)
        r.run((builtin.OMCI_RETRIES + 3) * builtin.OMCI_TIMEOUT)
    finally:
        globalLogPublisher.removeObserver(logged.append)
    assert [o.step for o in r.adapter.onus.values()] == ["failed", "failed"]
    failed = [e for e in logged if e.get("log_format", "").startswith("builtin-adapter-onu-failed")]
    assert sorted(e["serial"] for e in failed) == sorted(onu.serial for onu in r.olt.onus)
    assert all(e["step"] == "mib-reset" for e in failed)
    assert r.adapter.pending_calls() == 0


def test_a_bad_indication_is_logged_and_the_adapter_goes_on(rig):
    """An indication the adapter cannot use (an undecodable packet, an ONU it never activated, a serial that is not
    ASCII, which makes its handler raise) is logged with what it was and skipped; the bring-up carries on."""
    logged: list = []
    globalLogPublisher.addObserver(logged.append)
    try:
        r = rig(pon=1, onu=2)
        queue = r.adapter.queue  # read from the next turn on: these follow the OLT's first indications
        queue.put(openolt_pb2.Indication(pkt_ind=openolt_pb2.PacketIndication(intf_type="nni", pkt=b"\x01")))
        queue.put(openolt_pb2.Indication(onu_ind=openolt_pb2.OnuIndication(
            intf_id=0, onu_id=77, oper_state="up",
            serial_number=openolt_pb2.SerialNumber(vendor_id=b"XXXX", vendor_specific=b"\0\0\0\1"))))
        queue.put(openolt_pb2.Indication(onu_disc_ind=openolt_pb2.OnuDiscIndication(
            intf_id=0, serial_number=openolt_pb2.SerialNumber(vendor_id=b"\xff\xfe\xfd\xfc"))))
        r.run_until(r.all_up, 20, "bring-up after bad indications")
    finally:
        globalLogPublisher.removeObserver(logged.append)
    names = [e.get("log_format", "").split(" ", 1)[0] for e in logged if e.get("log_namespace") == "oltsim.adapter"]
    assert {"builtin-adapter-packet-undecodable", "builtin-adapter-onu-unknown",
            "builtin-adapter-indication-failed"} <= set(names)
    failed = next(e for e in logged if e.get("log_format", "").startswith("builtin-adapter-indication-failed"))
    assert failed["kind"] == "onu_disc_ind" and failed.get("log_failure") is not None


def test_an_external_enable_indication_is_refused_while_the_adapter_drives(rig):
    """While the built-in adapter drives the OLT, EnableIndication from outside is FAILED_PRECONDITION with a message
    saying how to connect VOLTHA instead, and the adapter keeps its stream; once it stops, an adapter may connect."""
    r = rig(pon=1, onu=1)
    r.run_until(r.all_up, 20, "bring-up")
    with pytest.raises(Aborted) as refused:
        stream_now(r.openolt.EnableIndication(openolt_pb2.Empty(), FakeContext()))
    assert refused.value.code == grpc.StatusCode.FAILED_PRECONDITION
    assert "without --adapter builtin" in refused.value.details and "VOLTHA" in refused.value.details
    assert r.hub.current is r.adapter.queue and not r.adapter.queue.closed
    r.adapter.stopService()
    items = stream_now(r.openolt.EnableIndication(openolt_pb2.Empty(), FakeContext()), wait=lambda: r.run(1.5))
    assert items and items[0].WhichOneof("data") == "olt_ind"


def test_stopping_cancels_every_timer_and_releases_the_stream(rig):
    """Stopped in the middle of a bring-up: the adapter's own delayed calls are gone, the hub's stream is released
    (the OLT no longer counts an adapter connected) and advancing the clock makes it do nothing more."""
    r = rig(omci_response_rate=0)  # nothing answers: every ONU waits on its MIB reset
    r.run(1)
    assert r.adapter.pending_calls() > 0
    r.adapter.stopService()
    assert r.adapter.pending_calls() == 0
    assert r.hub.current is None and not r.olt.adapter_connected and r.hub.driver is None
    handled = r.adapter.handled
    r.run(10)
    assert r.adapter.handled == handled
    r.hub.end_all()
    r.olt.stop()
    assert r.olt.pending_calls() == 0


class TurnClock(Clock):
    """A fake clock on which a call for "the next reactor turn" (delay 0) runs a tick later, as on the reactor, where
    it waits for the current turn to end (task.Clock would run it within the same `advance`)."""

    TICK = 1e-6

    def callLater(self, delay, fn, *args, **kw):
        return super().callLater(delay or self.TICK, fn, *args, **kw)


def test_the_reader_handles_at_most_a_batch_per_reactor_turn(rig):
    """The indication queue is read BATCH indications per reactor turn: a burst larger than a batch takes a second
    turn, so the reactor runs other work in between."""
    r = rig(TurnClock(), pon=1, onu=1)
    r.run_until(r.all_up, 20, "bring-up")
    burst = builtin.BATCH + 10
    for _ in range(burst):
        r.adapter.queue.put(openolt_pb2.Indication(port_stats=common_pb2.PortStatistics(intf_id=1)))
    before = r.adapter.handled
    r.clock.advance(TurnClock.TICK)
    assert r.adapter.handled - before == builtin.BATCH
    assert r.adapter.pending_calls() == 1
    r.clock.advance(TurnClock.TICK)
    assert r.adapter.handled - before == burst
    assert r.adapter.pending_calls() == 0


@pytest.mark.parametrize("mode", ["only-pon", "only-onu", "both"])
def test_controlled_activation_modes_reach_dhcp_ack_received(rig, mode):
    """Under --ca only-pon the adapter enables the PONs itself (EnablePonIf, as VOLTHA), under both too; where the
    mode leaves the ONUs to a power-on (only-onu, both), PoweronONU is all it takes for every ONU to come up."""
    r = rig(controlled_activation=mode)
    r.run(2)
    assert all(pon.state == "enabled" for pon in r.olt.pons)
    if mode != "only-pon":
        assert not any(onu.is_active for onu in r.olt.onus)
        r.olt.power_on_all()
    r.run_until(r.all_up, 20, f"every service at dhcp_ack_received under --ca {mode}")


@pytest.mark.parametrize("cut", ["mid-bring-up", "restarted"])
def test_an_exchange_under_way_when_the_stream_ended_starts_over_after_the_reconnection(rig, cut):
    """EAPOL and DHCP frames sent while the adapter's stream is down reach no one. After the reconnection the
    exchange under way starts over at once, instead of its next start being refused until the attempt times out
    (the OLT's default timeout is 60 s and retry is off: the service would stay dhcp_failed): for an ONU whose
    bring-up the stream's end cut short in the middle of DHCP (it is brought up again: its flows come again) and
    for a ready one whose DHCP was restarted while the stream was down (its flows are still there)."""
    r = rig()
    under_way = ("dhcp_discovery_sent", "dhcp_request_sent")
    if cut == "mid-bring-up":
        cut_at: list = []

        def stop_serving_at_the_first_request(event):
            # The state changes before the Request goes up: the stream ends between the two, as a server stopping
            # in the middle of the exchange ends it.
            if (not cut_at and isinstance(event, events.StateChanged) and event.attribute == "DhcpState"
                    and event.dest == "dhcp_request_sent"):
                cut_at.append(event.serial)
                r.serving = False
                r.hub.end_all(details="the OpenOLT server is stopping")
        r.olt.subscribe(stop_serving_at_the_first_request)
        r.run_until(lambda: cut_at, 20, "a DHCP Request")
        onu = r.olt.onu_by_serial(cut_at[0])
    else:
        r.run_until(r.all_up, 20, "bring-up")
        onu = r.olt.onus[5]
        r.serving = False
        r.hub.end_all(details="the OpenOLT server is stopping")
        r.commands.RestartDhcp(bbsim_pb2.UNIRequest(OnuSerialNumber=onu.serial, UniID=""))
    r.run(1)
    assert any(s.dhcp_state in under_way for s in onu.services)
    r.serving = True
    r.run(builtin.RECONNECT_DELAY + 0.2)
    assert r.adapter.connects == 2
    r.run_until(r.all_up, 10, "every service through again well before the 60 s attempt timeout")


def test_the_traffic_schedulers_shape_by_sadis_bandwidth_profiles(rig):
    """Each UNI gets an upstream (its T-CONT) and a downstream scheduler on its alloc id, shaped as VOLTHA would by
    the profiles oltsim's SADIS names (PIR = cir + eir + air, CIR, GIR = air); the adapter's copies of them are
    SADIS's own."""
    from voltha_protos import tech_profile_pb2

    from oltsim.api import sadis

    mef = {p["id"]: p for p in sadis.BANDWIDTH_PROFILES["mef"]}
    assert builtin.UPSTREAM_BANDWIDTH == mef[sadis.UPSTREAM_PROFILE]
    assert builtin.DOWNSTREAM_BANDWIDTH == mef[sadis.DOWNSTREAM_PROFILE]
    r = rig(pon=1, onu=1)
    r.run_until(r.all_up, 20, "every service at dhcp_ack_received")
    onu = r.olt.onus[0]
    directions = sorted(direction for direction, _ in onu.schedulers)
    assert directions == [tech_profile_pb2.UPSTREAM] * 4 + [tech_profile_pb2.DOWNSTREAM] * 4
    shaping = {direction: sched.traffic_shaping_info for (direction, _), (_, sched) in onu.schedulers.items()}
    up, down = shaping[tech_profile_pb2.UPSTREAM], shaping[tech_profile_pb2.DOWNSTREAM]
    assert (up.pir, up.cir, up.gir, up.cbs, up.pbs) == (230000, 30000, 100000, 10000, 11000)
    assert (down.pir, down.cir, down.gir, down.cbs, down.pbs) == (300000, 100000, 100000, 5000, 10000)
