"""Load: power-on/off storms over every ONU from several threads (REST and gRPC) while reads, flow adds and
removes go on and the OLT reboots midway, against the simulator in this process on loopback sockets.

Afterwards the process answers, every ONU is in exactly one legal state and none is stuck, the flow store agrees
with the ONUs' flow registries, no answer was a 5xx (409 and 404 are the expected refusals of a storm) and, once
the service stopped, no delayed call is left. `Storm` and `check_invariants` are shared with `tests/support/load.py`,
which runs the same storm for as long as asked.
"""
from __future__ import annotations

import collections
import http.client
import random
import threading
import time

import grpc
import pytest_twisted
from twisted.internet import reactor
from twisted.internet.task import deferLater
from twisted.internet.threads import deferToThread
from voltha_protos import openolt_pb2, openolt_pb2_grpc

from engines import grpc_engine  # noqa: F401 - the fixture
from oltsim._proto import bbsim_pb2, bbsim_pb2_grpc
from oltsim.model.onu import DHCP_MACHINE, EAPOL_MACHINE, ONU_MACHINE, serial_key
from scripted_adapter import ActiveOnu, ScriptedAdapter, is_onu_disc, serial_of
from test_adapter import start_oltsim, stop_oltsim

CALL_TIMEOUT = 10.0
# Refusals a storm legitimately meets: the ONU or OLT is in the wrong state, gone, or the OLT is rebooting.
GRPC_ACCEPTABLE = {"OK", "FAILED_PRECONDITION", "NOT_FOUND", "UNAVAILABLE"}
# The OpenOLT endpoint stops during a reboot (as BBSim's does): calls in flight at that moment end CANCELLED.
OPENOLT_ACCEPTABLE = GRPC_ACCEPTABLE | {"CANCELLED"}
EAPOL_WAITING = EAPOL_MACHINE.states - {"created", "eap_response_success_received", "auth_failed"}
DHCP_WAITING = DHCP_MACHINE.states - {"created", "dhcp_ack_received", "dhcp_failed"}


class Storm:
    """Threads hammering one simulator: `rest_port`, OpenOLT `openolt` and v1 gRPC `grpc_v1` addresses, the
    ONU serials, and `reboot_at` seconds into the run (None: no reboot). Counts every answer by status."""

    def __init__(self, rest_port: int, openolt: str, grpc_v1: str, serials: list[str], seed: int = 7,
                 threads: int = 2, reboot_at: float | None = None):
        self.rest_port = rest_port
        self.grpc_v1 = grpc_v1
        self.serials = list(serials)
        self.random = random.Random(seed)
        self.threads = threads
        self.reboot_at = reboot_at
        self.rebooted = threading.Event()
        self.stop = threading.Event()
        self.counts: collections.Counter = collections.Counter()
        self.failures: list[str] = []
        self._lock = threading.Lock()
        self.adapter = ScriptedAdapter(openolt, call_timeout=CALL_TIMEOUT, reconnect_backoff_ms=100)
        self.onu_ids: dict[str, tuple[int, int]] = {}   # serial -> (pon, onu id) fixed at first activation
        self._next: dict[int, int] = {}
        self.activations = 0

    # ---- bookkeeping ----------------------------------------------------------------------------

    def _count(self, surface: str, status, what: str) -> None:
        with self._lock:
            self.counts[(surface, str(status))] += 1
            bad = self._bad(surface, str(status))
            if bad and len(self.failures) < 20:
                self.failures.append(f"{surface} {what} -> {status}")

    def errors(self) -> dict:
        """(surface, status) -> count of every answer that is neither a success nor an acceptable refusal."""
        return {k: n for k, n in self.counts.items() if self._bad(*k)}

    @staticmethod
    def _bad(surface: str, status: str) -> bool:
        if surface == "rest":
            return not status.isdigit() or int(status) >= 500
        return status not in (OPENOLT_ACCEPTABLE if surface == "openolt" else GRPC_ACCEPTABLE)

    # ---- clients --------------------------------------------------------------------------------

    def rest(self, method: str, path: str) -> int:
        connection = http.client.HTTPConnection("127.0.0.1", self.rest_port, timeout=CALL_TIMEOUT)
        try:
            connection.request(method, path)
            response = connection.getresponse()
            response.read()
            status = response.status
        except OSError as exc:
            status = f"socket-error:{type(exc).__name__}"
        finally:
            connection.close()
        self._count("rest", status, f"{method} {path}")
        return status

    def grpc(self, stub_call, request, what: str, surface: str = "grpc"):
        try:
            stub_call(request, timeout=CALL_TIMEOUT)
            code = "OK"
        except grpc.RpcError as exc:
            code = exc.code().name
        self._count(surface, code, what)
        return code

    # ---- workers --------------------------------------------------------------------------------

    def _rest_power(self, rng: random.Random) -> None:
        while not self.stop.is_set():
            roll = rng.random()
            if roll < 0.04:
                self.rest(rng.choice(("POST", "DELETE")), "/v1/olt/onus")
            elif roll < 0.1:
                self.rest(rng.choice(("POST", "DELETE")), f"/v1/olt/port/{rng.randrange(2)}/onus")
            else:
                self.rest(rng.choice(("POST", "DELETE")), f"/v1/olt/onus/{rng.choice(self.serials)}")

    def _grpc_power(self, rng: random.Random) -> None:
        with grpc.insecure_channel(self.grpc_v1) as channel:
            stub = bbsim_pb2_grpc.BBSimStub(channel)
            while not self.stop.is_set():
                serial = rng.choice(self.serials)
                if rng.random() < 0.5:
                    self.grpc(stub.PoweronONU, bbsim_pb2.ONURequest(SerialNumber=serial), "PoweronONU")
                else:
                    self.grpc(stub.ShutdownONU, bbsim_pb2.ONURequest(SerialNumber=serial), "ShutdownONU")

    def _reads(self, rng: random.Random) -> None:
        with grpc.insecure_channel(self.grpc_v1) as channel:
            stub = bbsim_pb2_grpc.BBSimStub(channel)
            while not self.stop.is_set():
                self.rest("GET", "/v1/olt/onus")
                self.grpc(stub.GetONUs, bbsim_pb2.Empty(), "GetONUs")
                self.rest("GET", f"/v1/olt/onus/{rng.choice(self.serials)}")

    def _flows(self, rng: random.Random) -> None:
        stub = openolt_pb2_grpc.OpenoltStub(self.adapter.channel)
        while not self.stop.is_set():
            with self._lock:
                known = list(self.onu_ids.items())
            if not known:
                time.sleep(0.01)
                continue
            serial, (pon, onu_id) = rng.choice(known)
            flow = ScriptedAdapter.eapol_flow(ActiveOnu(serial, pon, onu_id))
            if rng.random() < 0.6:
                self.grpc(stub.FlowAdd, flow, "FlowAdd", "openolt")
            else:
                self.grpc(stub.FlowRemove, openolt_pb2.Flow(access_intf_id=pon, onu_id=onu_id, flow_id=onu_id,
                                                            flow_type="downstream"), "FlowRemove", "openolt")

    def _adapter(self) -> None:
        """Activate every ONU the stream announces (same ONU id each time); reopen the stream after a reboot."""
        adapter = self.adapter
        try:
            adapter.get_device_info()
            adapter.enable_indication()
        except grpc.RpcError:
            pass
        while not self.stop.is_set():
            stream = adapter.stream
            if stream is None or stream.ended:
                try:
                    adapter.reconnect(timeout=1.0)
                except AssertionError:
                    if self.stop.is_set():
                        return
                continue
            try:
                disc = stream.wait_for(is_onu_disc(), "OnuDiscInd", timeout=0.2)
            except AssertionError:
                if self.stop.is_set():
                    return
                continue
            self._activate(disc)

    def _activate(self, disc) -> None:
        """ActivateOnu for an OnuDiscInd, with the ONU id this ONU got the first time (ids 1, 2, ... per PON)."""
        pon, serial = disc.onu_disc_ind.intf_id, serial_of(disc.onu_disc_ind.serial_number)
        with self._lock:
            if serial not in self.onu_ids:
                self._next[pon] = self._next.get(pon, 0) + 1
                self.onu_ids[serial] = (pon, self._next[pon])
            onu_id = self.onu_ids[serial][1]
        vendor, specific = serial[:4].encode("ascii"), bytes.fromhex(serial[4:])
        self.grpc(self.adapter.stub.ActivateOnu,
                  openolt_pb2.Onu(intf_id=pon, onu_id=onu_id, pir=1000000,
                                  serial_number=openolt_pb2.SerialNumber(vendor_id=vendor, vendor_specific=specific)),
                  "ActivateOnu", "openolt")
        self.activations += 1

    def _reboot(self, start: float) -> None:
        if self.reboot_at is None:
            return
        if self.stop.wait(max(0.0, start + self.reboot_at - time.monotonic())):
            return
        status = self.rest("POST", "/v1/olt/reboot")
        if status == 200:
            self.rebooted.set()

    # ---- the run --------------------------------------------------------------------------------

    def run(self, duration: float) -> None:
        """Storm for `duration` seconds, then stop every thread (bounded joins); the adapter stays connected."""
        start = time.monotonic()
        adapter = threading.Thread(target=self._adapter, name="storm-adapter", daemon=True)
        adapter.start()
        workers = [threading.Thread(target=self._reboot, args=(start,), name="storm-reboot", daemon=True)]
        for i in range(self.threads):
            for target in (self._rest_power, self._grpc_power, self._reads, self._flows):
                workers.append(threading.Thread(target=target, args=(random.Random(self.random.random()),),
                                                name=f"storm-{target.__name__}-{i}", daemon=True))
        for worker in workers:
            worker.start()
        self.stop.wait(duration)
        self.stop.set()
        for worker in workers + [adapter]:
            worker.join(CALL_TIMEOUT * 2)
            if worker.is_alive():
                self.failures.append(f"thread {worker.name} did not finish")

    def reconnect_and_settle(self, timeout: float = 15.0) -> None:
        """After the storm: make sure the adapter holds a working stream and activate what that stream announces,
        until nothing new arrives for a while. A stream opened before the reboot may not have ended yet on the
        client's side (the server ended it, but the adapter is still reading what was sent before the end): it is
        read to its end, then the adapter reconnects."""
        deadline = time.monotonic() + timeout
        adapter = self.adapter
        while time.monotonic() < deadline:
            if adapter.stream is None or adapter.stream.ended:
                adapter.reconnect(timeout=max(1.0, deadline - time.monotonic()))
            quiet_since = time.monotonic()
            while (time.monotonic() < deadline and time.monotonic() - quiet_since < 2.0
                   and not adapter.stream.ended):
                before = self.activations
                self._drain_once()
                if self.activations != before:
                    quiet_since = time.monotonic()
            if not adapter.stream.ended:
                return  # a live stream that went quiet: settled

    def _drain_once(self) -> None:
        """Activate every announced ONU waiting after the stream's cursor (one pass, 0.3 s of waiting)."""
        stream = self.adapter.stream
        while True:
            try:
                disc = stream.wait_for(is_onu_disc(), "OnuDiscInd", timeout=0.3)
            except AssertionError:
                return
            self._activate(disc)

    def close(self) -> None:
        self.adapter.close()


# ---- invariants (run on the reactor thread: the model is only touched there) -----------------------------

def due_soon(olt, within: float | None = None) -> int:
    """Delayed calls of the model (OLT, ONUs, discovery announcements) due within `within` seconds; by default
    a little more than the pause an OLT takes before answering a reconnected adapter, so that a reconnection
    whose indications are still to come never passes for quiescence."""
    if within is None:
        within = olt.timings.reconnect_delay + 0.5
    limit = olt.clock.seconds() + within
    calls = [c for c in olt._calls if c.active()]
    for onu in olt.onus:
        calls += [c for c in onu._timer_calls if c.active()]
        if onu._discovery_call is not None and onu._discovery_call.active():
            calls.append(onu._discovery_call)
    return sum(1 for c in calls if c.getTime() <= limit)


def check_invariants(olt) -> list[str]:
    """Everything wrong with the model at rest, as sentences (empty when all holds).

    Each ONU is in one legal state; none waits in `initialized`; every `discovered` ONU on an enabled PON of an
    enabled OLT has its discovery announcement pending; no EAPOL/DHCP exchange waits without its timer; the flow
    store, the ONUs' flow keys and the PONs' ONU id registries agree."""
    problems = []
    # The protocol engine holds the EAPOL and DHCP timers; the data plane's front, when there is one, stands before it.
    frames = olt.hub.frames
    engine = getattr(frames, "engine", frames) if olt.onus else None
    stored = {flow.key: flow for flow in olt.flows.all()}
    owned = set()
    for onu in olt.onus:
        if onu.state not in ONU_MACHINE.states:
            problems.append(f"{onu.serial} in unknown state {onu.state!r}")
        if onu.state == "initialized":
            problems.append(f"{onu.serial} stuck in initialized")
        if onu.state == "discovered" and olt.state == "enabled" and onu.pon.state == "enabled":
            call = onu._discovery_call
            if call is None or not call.active():
                problems.append(f"{onu.serial} discovered without a pending discovery announcement")
        if not onu.is_active and onu.flow_keys:
            problems.append(f"{onu.serial} is {onu.state} but owns flows {sorted(onu.flow_keys)}")
        for key in onu.flow_keys:
            flow = stored.get(key)
            if flow is None or flow.serial != onu.serial:
                problems.append(f"{onu.serial} lists flow {key} that the store does not give it")
            owned.add(key)
        if onu.is_active and onu.pon.onu_ids.get(onu.onu_id) != onu.serial:
            problems.append(f"{onu.serial} is {onu.state} but PON {onu.pon.id} has id {onu.onu_id} "
                            f"as {onu.pon.onu_ids.get(onu.onu_id)}")
        for service in onu.services:
            if engine is not None and service.eapol_state in EAPOL_WAITING \
                    and not engine.eapol.timers.pending(service):
                problems.append(f"{onu.serial} {service.name} stuck in {service.eapol_state}")
            if engine is not None and service.dhcp_state in DHCP_WAITING \
                    and not engine.dhcp.timers.pending(service):
                problems.append(f"{onu.serial} {service.name} stuck in {service.dhcp_state}")
    for key, flow in stored.items():
        if flow.is_onu_flow and key not in owned:
            problems.append(f"flow {key} of {flow.serial or flow.onu_id} is owned by no ONU")
    for pon in olt.pons:
        for onu_id, serial in pon.onu_ids.items():
            onu = olt._serials.get(serial_key(serial))
            if onu is None or onu.onu_id != onu_id or not (onu.is_active or onu.state == "pon_disabled"):
                problems.append(f"PON {pon.id} registers id {onu_id} for {serial} "
                                f"({onu.state if onu else 'unknown'})")
    return problems


# ---- the bounded test --------------------------------------------------------------------------------------

@pytest_twisted.inlineCallbacks
def test_power_storm_with_reads_flows_and_reboot(tmp_path, grpc_engine):
    """Concurrent power on/off of every ONU (REST and gRPC, several threads), reads, FlowAdd/FlowRemove and an
    OLT reboot midway: no 5xx or unexpected gRPC status, the process answers, the model is consistent and not
    stuck, and nothing stays scheduled after stopService; on both engines of the OpenOLT endpoint, which the reboot
    stops and starts again."""
    sim = start_oltsim(tmp_path, "--pon", "2", "--onu", "8", "--delay", "0", engine=grpc_engine)
    serials = [onu.serial for onu in sim.olt.onus]
    port = int(sim.rest.rsplit(":", 1)[1])
    storm = Storm(port, sim.openolt, sim.grpc_v1, serials, reboot_at=2.0)
    try:
        yield deferToThread(storm.run, 5.0)
        assert storm.rebooted.is_set(), storm.counts
        yield deferToThread(storm.reconnect_and_settle)
        # Quiescence: the reconnection's rediscoveries and activations ran; nothing of the model is due soon.
        for _ in range(100):
            if due_soon(sim.olt) == 0:
                break
            yield deferLater(reactor, 0.1, lambda: None)
        assert due_soon(sim.olt) == 0

        assert storm.errors() == {} and storm.failures == [], (storm.failures, storm.counts)
        assert storm.counts[("rest", "200")] > 0 and storm.counts[("grpc", "OK")] > 0
        assert check_invariants(sim.olt) == []
        assert sim.olt.state == "enabled"

        # The process answers, and REST shows each ONU once, in its model state.
        onus = yield sim.get("/v1/olt/onus")
        shown = {o["SerialNumber"]: o["InternalState"] for o in onus["items"]}
        assert shown == {onu.serial: onu.state for onu in sim.olt.onus}
        flows = yield sim.get("/v1/olt/flows")
        assert flows["flow_count"] == len(sim.olt.flows)
    finally:
        yield stop_oltsim(sim)
        yield deferToThread(storm.close)
