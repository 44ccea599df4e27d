"""A small, synchronous stand-in for VOLTHA's openolt adapter (and BBSim's `bbr`), for integration tests.

It talks to the OpenOLT endpoint over a real gRPC channel and does what the adapter does to bring an OLT up:
GetDeviceInfo, EnableIndication (read on a thread of its own into an ordered log), ActivateOnu for every
discovered ONU with ONU ids 1, 2, ... per PON in arrival order, FlowAdd of BBR's EAPOL flow then its DHCP flow
with the same flow id (bbsim-reference.md 4.6), CreateTrafficSchedulers per ONU and HeartbeatCheck.

Every call is blocking and bounded: unary calls carry a deadline, every wait takes a timeout and fails with an
AssertionError saying what did not arrive. Run it off the reactor thread (`deferToThread`) when the OLT runs in
the same process.
"""
from __future__ import annotations

import socket
import threading
import time
from dataclasses import dataclass
from typing import Callable

import grpc
from voltha_protos import openolt_pb2, openolt_pb2_grpc, tech_profile_pb2

CALL_TIMEOUT = 10.0
WAIT_TIMEOUT = 10.0

EAPOL_ETH_TYPE = 0x888E
DHCP_ETH_TYPE = 0x0800
EAPOL_VID = 4091


def serial_of(sn: openolt_pb2.SerialNumber) -> str:
    """BBSM00000001 from the OpenOLT SerialNumber message."""
    return bytes(sn.vendor_id).decode("ascii") + bytes(sn.vendor_specific).hex().upper()


def kind(indication: openolt_pb2.Indication) -> str:
    """The name of the oneof field set in an Indication (olt_ind, intf_ind, onu_disc_ind, ...)."""
    return indication.WhichOneof("data") or ""


def alarm_kind(indication: openolt_pb2.Indication) -> str:
    """For an alarm_ind, the alarm's oneof name (dying_gasp_ind, onu_alarm_ind, los_ind, ...); else ''."""
    if kind(indication) != "alarm_ind":
        return ""
    return indication.alarm_ind.WhichOneof("data") or ""


def describe(indication: openolt_pb2.Indication) -> str:
    """One short line for failure messages."""
    name = kind(indication)
    if name == "alarm_ind":
        return f"alarm_ind.{alarm_kind(indication)}"
    body = getattr(indication, name) if name else None
    text = str(body).replace("\n", " ").strip() if body is not None else ""
    return f"{name}{{{text}}}"


def listener_options() -> list[str]:
    """The oltsim options that take a listening endpoint (openolt, grpc-v1, rest-v1, ..., sadis), found from the
    table of settings (the rows of kind endpoint), so that tests and benchmarks put every one of them on loopback
    (none may bind a default port or all interfaces)."""
    from oltsim.config import SETTINGS

    return [row.option for row in SETTINGS if row.kind == "endpoint" and row.option]


def free_ports(count: int) -> list[int]:
    """Ports the system hands out on 127.0.0.1, released for a daemon to bind."""
    sockets = []
    try:
        for _ in range(count):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind(("127.0.0.1", 0))
            sockets.append(s)
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


# ---- predicates ---------------------------------------------------------------------------------------------

def is_olt_ind(oper_state: str = "up") -> Callable[[openolt_pb2.Indication], bool]:
    return lambda i: kind(i) == "olt_ind" and i.olt_ind.oper_state == oper_state


def is_intf_oper_ind(intf_type: str, intf_id: int | None = None, oper_state: str = "up"):
    return lambda i: (kind(i) == "intf_oper_ind" and i.intf_oper_ind.type == intf_type
                      and (intf_id is None or i.intf_oper_ind.intf_id == intf_id)
                      and i.intf_oper_ind.oper_state == oper_state)


def is_intf_ind(intf_id: int | None = None, oper_state: str = "up"):
    return lambda i: (kind(i) == "intf_ind" and (intf_id is None or i.intf_ind.intf_id == intf_id)
                      and i.intf_ind.oper_state == oper_state)


def is_onu_disc(serial: str | None = None):
    return lambda i: kind(i) == "onu_disc_ind" and (serial is None or serial_of(i.onu_disc_ind.serial_number)
                                                     == serial)


def is_onu_ind(serial: str | None = None, oper_state: str | None = None, admin_state: str | None = None):
    def match(i):
        if kind(i) != "onu_ind":
            return False
        o = i.onu_ind
        return ((serial is None or serial_of(o.serial_number) == serial)
                and (oper_state is None or o.oper_state == oper_state)
                and (admin_state is None or o.admin_state == admin_state))
    return match


def is_alarm(alarm: str, where: Callable[[object], bool] = lambda body: True):
    """An AlarmInd whose oneof is `alarm` and whose body satisfies `where`."""
    return lambda i: alarm_kind(i) == alarm and where(getattr(i.alarm_ind, alarm))


# ---- the stream ---------------------------------------------------------------------------------------------

class IndicationStream:
    """One EnableIndication call, read on its own thread into an ordered list.

    `wait_for` looks at what arrived after the cursor, so a test can wait for one indication and then for the
    next without losing anything in between; `received` keeps everything for order checks.
    """

    def __init__(self, stub: openolt_pb2_grpc.OpenoltStub):
        self.received: list[openolt_pb2.Indication] = []
        self.cursor = 0
        self.code: grpc.StatusCode | None = None
        self.details = ""
        self._cond = threading.Condition()
        self._ended = threading.Event()
        self._call = stub.EnableIndication(openolt_pb2.Empty())
        self._thread = threading.Thread(target=self._read, name="scripted-adapter-indications", daemon=True)
        self._thread.start()

    def _read(self):
        code, details = grpc.StatusCode.OK, ""
        try:
            for indication in self._call:
                with self._cond:
                    self.received.append(indication)
                    self._cond.notify_all()
        except grpc.RpcError as exc:
            code, details = exc.code(), exc.details() or ""
        finally:
            with self._cond:
                self.code, self.details = code, details
                self._ended.set()
                self._cond.notify_all()

    @property
    def ended(self) -> bool:
        return self._ended.is_set()

    def cancel(self) -> None:
        """Break the stream from the client side (the adapter restarts or loses its connection)."""
        self._call.cancel()
        self.wait_end()

    def wait_end(self, timeout: float = WAIT_TIMEOUT) -> tuple[grpc.StatusCode, str]:
        """Wait until the server ends the stream; returns (status code, details)."""
        if not self._ended.wait(timeout):
            raise AssertionError(f"the indication stream did not end within {timeout:g} s")
        self._thread.join(timeout)
        return self.code, self.details

    def wait_for(self, predicate, what: str, timeout: float = WAIT_TIMEOUT) -> openolt_pb2.Indication:
        """The first indication after the cursor that matches; the cursor moves past it."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                for index in range(self.cursor, len(self.received)):
                    if predicate(self.received[index]):
                        self.cursor = index + 1
                        return self.received[index]
                left = deadline - time.monotonic()
                if self._ended.is_set() or left <= 0:
                    seen = ", ".join(describe(i) for i in self.received[self.cursor:]) or "nothing"
                    why = f"stream ended with {self.code}" if self._ended.is_set() else f"{timeout:g} s passed"
                    raise AssertionError(f"no {what} ({why}); after the cursor: {seen}")
                self._cond.wait(left)

    def wait_for_each(self, predicates: dict, timeout: float = WAIT_TIMEOUT, start: int | None = None) -> dict:
        """Wait until every predicate (name -> predicate) matched a distinct indication from position `start`
        (default: the cursor) on, in any order; the cursor moves past the last one matched (never back).
        Returns name -> indication."""
        deadline = time.monotonic() + timeout
        found: dict = {}
        start = self.cursor if start is None else start
        with self._cond:
            while True:
                last = start
                for index in range(start, len(self.received)):
                    for name, predicate in predicates.items():
                        if name not in found and predicate(self.received[index]):
                            found[name] = self.received[index]
                            last = index + 1
                            break
                if len(found) == len(predicates):
                    self.cursor = max(self.cursor, last)
                    return found
                left = deadline - time.monotonic()
                if self._ended.is_set() or left <= 0:
                    missing = ", ".join(sorted(str(name) for name in predicates if name not in found))
                    why = f"stream ended with {self.code}" if self._ended.is_set() else f"{timeout:g} s passed"
                    raise AssertionError(f"missing {missing} ({why}); got: "
                                         + (", ".join(describe(i) for i in self.received[start:]) or "nothing"))
                found.clear()
                self._cond.wait(left)

    def since(self, mark: int) -> list[openolt_pb2.Indication]:
        """A copy of what arrived from position `mark` on."""
        with self._cond:
            return list(self.received[mark:])

    def settle(self, quiet: float = 0.3, timeout: float = WAIT_TIMEOUT) -> int:
        """Wait until nothing new arrived for `quiet` seconds (bounded by `timeout`); returns the count."""
        deadline = time.monotonic() + timeout
        with self._cond:
            count = len(self.received)
            while time.monotonic() < deadline:
                self._cond.wait(min(quiet, max(0.0, deadline - time.monotonic())))
                if len(self.received) == count:
                    return count
                count = len(self.received)
        raise AssertionError(f"indications kept arriving for {timeout:g} s")


# ---- the adapter --------------------------------------------------------------------------------------------

@dataclass
class ActiveOnu:
    """An ONU the adapter activated: where it is and the id it gave it."""
    serial: str
    pon: int
    onu_id: int


class ScriptedAdapter:
    """The openolt adapter's bring-up, scripted. `address` is host:port of the OpenOLT endpoint."""

    def __init__(self, address: str, call_timeout: float = CALL_TIMEOUT, reconnect_backoff_ms: int | None = None):
        self.address = address
        self.call_timeout = call_timeout
        options = []
        if reconnect_backoff_ms is not None:
            # Reconnect quickly after the server went away (grpcio's default backoff grows to minutes).
            options = [("grpc.initial_reconnect_backoff_ms", reconnect_backoff_ms),
                       ("grpc.min_reconnect_backoff_ms", reconnect_backoff_ms),
                       ("grpc.max_reconnect_backoff_ms", reconnect_backoff_ms * 5)]
        # No transparent retries: a call that grpcio's client core retries after the port it went to closed (the
        # OLT rebooting) can stay pending for good, carrying nothing and deaf to its own cancel; seen with the
        # native engine's close about once in 20 reboots, never with retries off. VOLTHA's adapter opens its
        # streams again itself, as `reconnect` does.
        self.channel = grpc.insecure_channel(address, options=[*options, ("grpc.enable_retries", 0)])
        self.stub = openolt_pb2_grpc.OpenoltStub(self.channel)
        self.stream: IndicationStream | None = None
        self.onus: dict[str, ActiveOnu] = {}
        self._next_id: dict[int, int] = {}

    def close(self) -> None:
        """Cancel the stream (if any) and close the channel."""
        if self.stream is not None and not self.stream.ended:
            self.stream._call.cancel()
            self.stream._ended.wait(WAIT_TIMEOUT)
        self.channel.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # ---- RPCs -------------------------------------------------------------------------------------------

    def wait_ready(self, timeout: float = WAIT_TIMEOUT) -> None:
        """Wait until the channel connects (the OpenOLT server is listening)."""
        grpc.channel_ready_future(self.channel).result(timeout=timeout)

    def get_device_info(self) -> openolt_pb2.DeviceInfo:
        return self.stub.GetDeviceInfo(openolt_pb2.Empty(), timeout=self.call_timeout)

    def heartbeat(self) -> int:
        return self.stub.HeartbeatCheck(openolt_pb2.Empty(), timeout=self.call_timeout).heartbeat_signature

    def reboot(self) -> None:
        self.stub.Reboot(openolt_pb2.Empty(), timeout=self.call_timeout)

    def enable_indication(self) -> IndicationStream:
        """Open a new EnableIndication stream (the previous one, if any, is left to the server to end)."""
        self.stream = IndicationStream(self.stub)
        return self.stream

    def reconnect(self, timeout: float = WAIT_TIMEOUT, retry: float = 0.2, attempt: float = 5.0) -> IndicationStream:
        """Open EnableIndication again and again until a stream delivers its first indication (OltInd): the
        endpoint may still be down or refuse while the OLT reboots. A stream that brings nothing within `attempt`
        seconds (its first indication comes a second after it opens) is cancelled and another opened, as an
        adapter's indication routine gives one up. Returns the stream that delivered."""
        deadline = time.monotonic() + timeout
        failures = []
        while time.monotonic() < deadline:
            stream = self.enable_indication()
            try:
                stream.wait_for(lambda i: True, "a first indication",
                                max(0.1, min(attempt, deadline - time.monotonic())))
            except AssertionError:
                if not stream.ended:
                    stream.cancel()
                    failures.append(f"nothing within {attempt:g} s: cancelled")
                    continue
                failures.append(f"{stream.code}: {stream.details}")
                time.sleep(retry)
                continue
            stream.cursor = 0
            return stream
        raise AssertionError(f"EnableIndication did not come back within {timeout:g} s; tries: {failures[-3:]}")

    def activate(self, pon: int, serial: str) -> ActiveOnu:
        """ActivateOnu with the next ONU id of that PON (1, 2, ... in the order the adapter calls this)."""
        onu_id = self._next_id.get(pon, 0) + 1
        self._next_id[pon] = onu_id
        vendor, specific = serial[:4].encode("ascii"), bytes.fromhex(serial[4:])
        self.stub.ActivateOnu(openolt_pb2.Onu(intf_id=pon, onu_id=onu_id, pir=1000000,
                                              serial_number=openolt_pb2.SerialNumber(vendor_id=vendor,
                                                                                     vendor_specific=specific)),
                              timeout=self.call_timeout)
        onu = self.onus[serial] = ActiveOnu(serial, pon, onu_id)
        return onu

    @staticmethod
    def eapol_flow(onu: ActiveOnu) -> openolt_pb2.Flow:
        """BBR's EAPOL trap flow for an ONU (flow, alloc, GEM port, port and cookie all equal the ONU id)."""
        return openolt_pb2.Flow(
            access_intf_id=onu.pon, onu_id=onu.onu_id, uni_id=0, flow_id=onu.onu_id, flow_type="downstream",
            network_intf_id=0, classifier=openolt_pb2.Classifier(eth_type=EAPOL_ETH_TYPE, o_vid=EAPOL_VID),
            action=openolt_pb2.Action(), priority=100, cookie=onu.onu_id, port_no=onu.onu_id,
            alloc_id=onu.onu_id, gemport_id=onu.onu_id)

    @staticmethod
    def dhcp_flow(onu: ActiveOnu, c_tag: int) -> openolt_pb2.Flow:
        """BBR's DHCP trap flow: the EAPOL flow's shape and flow id with a DHCP classifier on the hsia C-tag."""
        flow = ScriptedAdapter.eapol_flow(onu)
        flow.classifier.CopyFrom(openolt_pb2.Classifier(eth_type=DHCP_ETH_TYPE, src_port=68, dst_port=67,
                                                        o_vid=c_tag, o_pbits=255))
        return flow

    @staticmethod
    def schedulers(onu: ActiveOnu) -> tech_profile_pb2.TrafficSchedulers:
        """An upstream scheduler as VOLTHA sends for technology profile 64."""
        return tech_profile_pb2.TrafficSchedulers(
            intf_id=onu.pon, onu_id=onu.onu_id, uni_id=0, port_no=onu.onu_id,
            traffic_scheds=[tech_profile_pb2.TrafficScheduler(
                direction=tech_profile_pb2.UPSTREAM, alloc_id=onu.onu_id,
                scheduler=tech_profile_pb2.SchedulerConfig(direction=tech_profile_pb2.UPSTREAM,
                                                           additional_bw=tech_profile_pb2.AdditionalBW_BestEffort,
                                                           priority=0, weight=0,
                                                           sched_policy=tech_profile_pb2.Hybrid),
                traffic_shaping_info=tech_profile_pb2.TrafficShapingInfo(cir=600, cbs=30, pir=32000, pbs=30),
                tech_profile_id=64)])

    def flow_add(self, flow: openolt_pb2.Flow) -> None:
        self.stub.FlowAdd(flow, timeout=self.call_timeout)

    def create_schedulers(self, onu: ActiveOnu) -> None:
        self.stub.CreateTrafficSchedulers(self.schedulers(onu), timeout=self.call_timeout)

    # ---- the whole bring-up ----------------------------------------------------------------------------

    def activate_discovered(self, count: int, timeout: float = WAIT_TIMEOUT) -> list[ActiveOnu]:
        """Wait for `count` OnuDiscInds (one per ONU), activating each as it arrives, then wait for the
        OnuInd up of every one. Returns the ONUs in activation order."""
        stream = self.stream
        activated: list[ActiveOnu] = []
        deadline = time.monotonic() + timeout
        mark = stream.cursor  # OnuInds may arrive between the discoveries of later ONUs
        while len(activated) < count:
            disc = stream.wait_for(lambda i: is_onu_disc()(i) and serial_of(i.onu_disc_ind.serial_number)
                                   not in self.onus, f"OnuDiscInd ({len(activated)} of {count} so far)",
                                   max(0.0, deadline - time.monotonic()))
            activated.append(self.activate(disc.onu_disc_ind.intf_id, serial_of(disc.onu_disc_ind.serial_number)))
        stream.wait_for_each({onu.serial: is_onu_ind(onu.serial, "up") for onu in activated},
                             max(0.0, deadline - time.monotonic()), start=mark)
        return activated

    def provision(self, onus: list[ActiveOnu], c_tags: dict[str, int]) -> None:
        """For each ONU: the EAPOL flow, the DHCP flow replacing it (same flow id), then its schedulers.
        `c_tags` maps serial -> the C-tag of its hsia service on UNI 0."""
        for onu in onus:
            self.flow_add(self.eapol_flow(onu))
            self.flow_add(self.dhcp_flow(onu, c_tags[onu.serial]))
            self.create_schedulers(onu)

    def bring_up(self, count: int, timeout: float = WAIT_TIMEOUT) -> tuple[openolt_pb2.DeviceInfo, list]:
        """GetDeviceInfo, EnableIndication, activate `count` discovered ONUs; returns (device info, ONUs)."""
        info = self.get_device_info()
        self.enable_indication()
        onus = self.activate_discovered(count, timeout)
        return info, onus
