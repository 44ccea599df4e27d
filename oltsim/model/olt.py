"""The OLT with its NNIs and PON ports: state tables, timers and the commands the
OpenOLT southbound and the control APIs run (always on the reactor thread).

Commands validate first and act second: a refused command raises a domain error
(`oltsim.model.errors`) before any state changes or any event is emitted.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from oltsim.logs import logger

from oltsim.model import events
from oltsim.model.alarms import NNI_PORT_BASE, PON_PORT_BASE, clear_indication
from oltsim.model.errors import (FailedPrecondition, InvalidArgument, NotFound, OltsimError, ResourceExhausted,
                                 Unavailable)
from oltsim.model.faults import FaultBook
from oltsim.model.flows import Flow
from oltsim.model.fsm import Machine, StateHolder
from oltsim.model.hub import DeviceHub
from oltsim.model.onu import ACTIVE_STATES, ONU_MACHINE, Onu, serial_key

log = logger("oltsim.model")

OLT_MACHINE = Machine("olt", "created", {
    "initialize": (("created", "deleted"), "initialized"),
    "enable": (("initialized", "disabled"), "enabled"),
    "disable": (("enabled",), "disabled"),
    "delete": (("enabled", "disabled"), "deleted"),
})

PON_MACHINE = Machine("pon", "created", {
    "enable": (("created", "disabled"), "enabled"),
    "disable": (("enabled",), "disabled"),
})

OPER_MACHINE = Machine("oper", "down", {
    "enable": (("down",), "up"),
    "disable": (("up",), "down"),
})

CONTROLLED_ACTIVATION = ("default", "only-onu", "only-pon", "both")

#: Flows one ONU may hold unless configured otherwise, and the fewest an OLT holds unless configured otherwise
#: (docs/limits.md, "Flows, ids and flow lists", gives the reasoning).
MAX_FLOWS = 16384
MAX_FLOWS_PER_ONU = 256
#: Flows an OLT holds per UNI unless configured otherwise: the densest of VOLTHA's workflows, DT with one GEM port
#: per p-bit, installs 16 on a UNI (8 p-bits, upstream and downstream; ATT 4 to 5, TT 9), and a quarter more leaves
#: room for the NNI's trap and multicast flows and for a flow added before the one it replaces is removed.
FLOWS_PER_UNI = 20
#: The largest UNI id: VOLTHA's UNI port numbers give it 4 bits.
UNI_ID_MAX = 15
#: The largest port_no of an ONU flow: it becomes the UNI's PortNo, an int32 in the control APIs.
UNI_PORT_NO_MAX = 2**31 - 1
#: The largest p-bit of a pbit_to_gemport key.
PBIT_MAX = 7


def default_max_flows(pon: int, onu: int, uni: int) -> int:
    """The flows an OLT of `pon` PONs of `onu` ONUs of `uni` UNIs holds unless configured otherwise: FLOWS_PER_UNI
    a UNI, MAX_FLOWS at least (40960 at 16 x 32 x 4)."""
    return max(MAX_FLOWS, pon * onu * uni * FLOWS_PER_UNI)


@dataclass(frozen=True)
class IdSpace:
    """The largest ONU id, alloc id and GEM port id an id may take (the smallest is 0)."""
    onu: int
    alloc: int
    gem: int

    def widened(self, other: "IdSpace") -> "IdSpace":
        return IdSpace(max(self.onu, other.onu), max(self.alloc, other.alloc), max(self.gem, other.gem))


#: What each PON technology's frames can carry: GPON (ITU-T G.984.3) has 8-bit ONU ids and 12-bit alloc and
#: GEM port ids, XGS-PON (G.9807.1) 10-bit ONU ids, 14-bit alloc ids and 16-bit XGEM port ids. A PON accepts ids
#: of its technology's space, or up to the end of its configured pools where a PON ranges file goes beyond it;
#: not only the pools, since BBR (and adapters with their own resource manager) use ids below them.
ID_SPACES = {
    "GPON": IdSpace(onu=255, alloc=4095, gem=4095),
    "XGS-PON": IdSpace(onu=1023, alloc=16383, gem=65535),
}


#: The largest id of any kind: the control APIs show ids as int32 (GEM ports and alloc ids of
#: GetOltAllocatedResources, ONU ids), however far a PON ranges file sets its pools.
ID_MAX = 2**31 - 1


def id_space(technology: str, ranges) -> IdSpace:
    """The ids a PON of `technology` with the resource `ranges` (a PonRange) accepts."""
    space = ID_SPACES.get(technology, ID_SPACES["XGS-PON"])
    if ranges is None:
        return space
    return space.widened(IdSpace(min(ranges.onu_id_end, ID_MAX), min(ranges.alloc_id_end, ID_MAX),
                                 min(ranges.gemport_id_end, ID_MAX)))


def check_id(name: str, value: int, high: int, none_ok: bool = False) -> None:
    """InvalidArgument unless 0 <= `value` <= `high` (or `value` is -1, "none", when `none_ok`)."""
    if none_ok and value == -1:
        return
    if not 0 <= value <= high:
        allowed = f"0..{high}" + (" or -1 (none)" if none_ok else "")
        raise InvalidArgument(f"{name} must be {allowed} (got {value})")


def port_no(kind: str, intf_id: int) -> int:
    """BBSim's InterfaceIDToPortNo: NNI 0x100000+id, PON 0x20000000+id."""
    return (NNI_PORT_BASE if kind == "nni" else PON_PORT_BASE) + intf_id


@dataclass(frozen=True)
class Timings:
    """Every delay of the model, in seconds (BBSim's defaults)."""
    discovery_delay: float = 0.2       # per ONU index on its PON
    discovery_retry: float = 60.0      # OnuDiscInd re-sent while discovered
    rediscovery_delay: float = 5.0     # after DeleteOnu
    reboot_grace: float = 5.0          # reboot: before the OpenOLT server stops
    reboot_delay: float = 60.0         # reboot: server down this long
    reconnect_delay: float = 1.0       # EnableIndication after a previous one
    onu_reboot: float = 10.0           # OMCI reboot / image activation power cycle
    port_stats_interval: float = 20.0  # port statistics while the OLT is enabled


class NniPort:
    """An NNI: OperState only; up on every EnableIndication, down on OLT initialize."""

    __slots__ = ("id", "oper_state", "speed", "packet_count")

    def __init__(self, nni_id: int, speed: int):
        self.id = nni_id
        self.oper_state = "down"
        self.speed = speed
        self.packet_count = 0

    @property
    def port_no(self) -> int:
        return port_no("nni", self.id)


class PonPort(StateHolder):
    """A PON port: InternalState (created/enabled/disabled), OperState, its ONUs and the
    per-PON resource registries reported by GET /v1/olt.

    `transceiver_plugged` is the PON's optical transceiver (DMI plug-out / plug-in, `Olt.plug_out_transceiver`):
    hardware, so it survives reboots, EnableIndication, DisableOlt and DisablePonIf. Without it the PON's
    InternalState is never enabled (no light: its ONUs stay pon_disabled) even while its OperState is up, and
    `los` says whether the adapter was told so (los_ind on not yet cleared); `los_onus` are the serials of the
    ONUs whose LOS the plug-out raised."""

    MACHINE = PON_MACHINE
    __slots__ = ("olt", "id", "state", "oper_state", "technology", "onus", "onu_ids",
                 "gem_ports", "alloc_ids", "packet_count", "ranges", "ids",
                 "transceiver_plugged", "los", "los_onus")

    def __init__(self, olt: "Olt", pon_id: int, technology: str, ranges):
        self.olt = olt
        self.id = pon_id
        self.state = "created"
        self.oper_state = "down"
        self.technology = technology
        self.onus: list[Onu] = []
        self.onu_ids: dict[int, str] = {}          # ONU id -> serial (ActivateOnu)
        self.gem_ports: dict[int, str] = {}        # GEM port -> serial (OMCI GEM port CTP)
        self.alloc_ids: dict[tuple[int, int], tuple[int, str]] = {}  # (onu id, T-CONT ME) -> (alloc, serial)
        self.packet_count = 0
        self.ranges = ranges
        self.ids = id_space(technology, ranges)  # what ids flows and schedulers may use on this PON
        self.transceiver_plugged = True
        self.los = False
        self.los_onus: set[str] = set()

    @property
    def port_no(self) -> int:
        return port_no("pon", self.id)

    def _state_changed(self, src, dest, event):
        self.olt.touch()
        self.olt.emit(events.StateChanged("pon", "InternalState", src, dest, self.id))

    def set_oper(self, value: str) -> None:
        """Change OperState; every change sends IntfInd + IntfOperInd."""
        if self.oper_state != value:
            src, self.oper_state = self.oper_state, value
            self.olt.touch()
            self.olt.emit(events.StateChanged("pon", "OperState", src, value, self.id))
            self.olt.emit(events.PonIndication(self.id, value))

    def release_onu(self, onu: Onu) -> None:
        """Drop the ONU's id, GEM port and alloc id registrations."""
        if self.onu_ids.get(onu.onu_id) == onu.serial:
            del self.onu_ids[onu.onu_id]
        for gem in [g for g, sn in self.gem_ports.items() if sn == onu.serial]:
            del self.gem_ports[gem]
        for key in [k for k, (_, sn) in self.alloc_ids.items() if sn == onu.serial]:
            del self.alloc_ids[key]
        self.olt.touch()

    def onu_by_id(self, onu_id: int) -> Onu:
        for onu in self.onus:
            if onu.onu_id == onu_id:
                return onu
        raise NotFound(f"ONU {onu_id} not found on PON {self.id}")

    def onu_by_serial(self, serial: str) -> Onu:
        key = serial_key(serial)
        for onu in self.onus:
            if serial_key(onu.serial) == key:
                return onu
        raise NotFound(f"ONU {serial} not found on PON {self.id}")

    # entry effects: what the PON's ONUs do when it is enabled or disabled

    def _enter_enabled(self, src):
        olt = self.olt
        mode = olt.controlled_activation
        auto = mode in ("default", "only-pon")
        delay = olt.timings.discovery_delay
        for j, onu in enumerate(self.onus):
            state = onu.state
            if src == "created":
                if auto:
                    onu.discover(delay * j)
            elif state == "discovered":
                # Its announcements stopped when the PON went down; without them the adapter never learns of it.
                onu.resend_discovery(delay * j)
            elif not auto:
                if ONU_MACHINE.can(state, "initialize"):
                    onu._fire("initialize")
            elif state == "pon_disabled":
                onu._fire("enable")
            elif state == "disabled":
                onu.discover(delay * j)
            elif state == "initialized":
                onu._fire("discover", delay=delay * j)

    def _enter_disabled(self, src):
        for onu in self.onus:
            if ONU_MACHINE.can(onu.state, "pon_disable"):
                onu._fire("pon_disable")
            else:
                onu._cancel_discovery()

    def bring_up(self) -> None:
        """PON UP as BBSim's OLT loop does: OperState first, then the ONU consequences. With its transceiver
        plugged out the port comes up but stays dark: InternalState not enabled, LOS raised (los_ind on) once."""
        self.set_oper("up")
        if not self.transceiver_plugged:
            self.raise_los()
            return
        if PON_MACHINE.can(self.state, "enable"):
            self._fire("enable")

    def raise_los(self) -> None:
        """Tell the adapter the PON sees no light (AlarmInd los_ind on), unless it was told already."""
        if not self.los:
            self.los = True
            self.olt.emit(events.Alarm("los_ind", {"intf_id": self.port_no, "status": "on"}))

    def clear_los(self) -> None:
        """Tell the adapter the PON's light is back (los_ind off), if its LOS was raised."""
        if self.los:
            self.los = False
            self.olt.emit(events.Alarm("los_ind", {"intf_id": self.port_no, "status": "off"}))

    def bring_down(self) -> None:
        """PON DOWN: OperState, then ONUs to pon_disabled."""
        self.set_oper("down")
        if PON_MACHINE.can(self.state, "disable"):
            self._fire("disable")


# No control-API call enables an OLT or a PON (a real OLT's adapter does): a refusal for that reason names the way out.
WAY_OUT = "connect an adapter such as VOLTHA or bbr to the OpenOLT port, or start oltsim with --adapter builtin"


def pon_not_enabled(pon_id: int, state: str) -> str:
    """The 409 for powering on ONUs of a PON that is not enabled: what it is and how it gets enabled."""
    if state == "created":
        return f"PON {pon_id} is created; ONUs can be powered on once an adapter enables it ({WAY_OUT})"
    return f"PON {pon_id} is {state}; ONUs can be powered on once the adapter enables it again"


class Olt(StateHolder):
    """One simulated OLT. Built by `oltsim.model.builder.build_olt`; never a singleton."""

    MACHINE = OLT_MACHINE

    def __init__(self, *, olt_id: int, clock, random, timings: Timings, controlled_activation: str,
                 nni: int, nni_speed: int, device_info: dict, nni_dhcp_trap_vid: int = 0,
                 max_flows: int = MAX_FLOWS, max_flows_per_onu: int = MAX_FLOWS_PER_ONU, omci=None, frames=None):
        if controlled_activation not in CONTROLLED_ACTIVATION:
            raise InvalidArgument(f"unknown controlled activation mode {controlled_activation!r}")
        self.id = olt_id
        self.serial = f"BBSIM_OLT_{olt_id}"
        #: what the OLT's devices share (clock, random, timings, events, alarms, flows); an ONU holds this, not the OLT
        self.hub = DeviceHub(clock, random, timings, alarm_cleared=self._alarm_cleared, omci=omci, frames=frames)
        self.controlled_activation = controlled_activation
        self.device_info = dict(device_info)
        self.nni_dhcp_trap_vid = nni_dhcp_trap_vid
        self.state = "created"
        self.oper_state = "down"
        self.nnis = [NniPort(i, nni_speed) for i in range(nni)]
        self.pons: list[PonPort] = []
        self.flows = self.hub.flows
        self.max_flows = max_flows
        self.max_flows_per_onu = max_flows_per_onu
        self.ids = ID_SPACES["XGS-PON"]  # widened by every PON added: the ids a flow on no PON may use
        self.previously_connected = False
        #: True from an adapter's EnableIndication until its stream ends (`indication_stream_closed`): while False
        #: the indications the model emits reach no one, and the control APIs say so.
        self.adapter_connected = False
        self.heartbeat_signature = 0
        self._calls: set = set()
        self._enabled_before = False
        self._serials: dict[str, Onu] = {}
        self.openolt_running = False
        self._stats_call = None
        #: every alarm the OLT reported (`emit` notes each events.Alarm): the active ones and the history
        self.alarms = self.hub.alarms
        #: fault knobs per ONU (OMCI delay, rate, mute; EAPOL/DHCP drops), set by scenarios
        self.faults = FaultBook(self)

    # ---- plumbing --------------------------------------------------------------------------

    @property
    def clock(self):
        """The IReactorTime every timer of the OLT and its devices runs on."""
        return self.hub.clock

    @property
    def random(self):
        """The OLT's random source (OMCI answers, discovery jitter)."""
        return self.hub.random

    @property
    def timings(self) -> Timings:
        """Delays and timeouts of the simulation; assigning new ones reaches every device at once."""
        return self.hub.timings

    @timings.setter
    def timings(self, value: Timings) -> None:
        self.hub.timings = value

    @property
    def generation(self) -> int:
        """Counts visible changes (`touch`); the control APIs' caches key on it."""
        return self.hub.generation

    def touch(self) -> None:
        """Record that something visible changed (API caches key on `generation`)."""
        self.hub.generation += 1

    def subscribe(self, listener: Callable[[object], None]) -> Callable[[], None]:
        """Receive every event of the OLT and its devices; returns a function that unsubscribes."""
        return self.hub.subscribe(listener)

    def emit(self, event) -> None:
        """Deliver `event` to every listener (`DeviceHub.emit`: an alarm is noted in `alarms` first)."""
        self.hub.emit(event)

    def _alarm_cleared(self, key, reason: str) -> None:
        """The book cleared an alarm on its own (no indication goes out): tell the listeners (logs, event readers)."""
        onu_id = -1
        if key.onu_serial:
            try:
                onu_id = self.onu_by_serial(key.onu_serial).onu_id
            except NotFound:
                pass
        kind, fields = clear_indication(key, onu_id)
        self.emit(events.AlarmCleared(kind, fields, key.onu_serial, reason))

    def guarded(self, fn, what: str, **fields):
        """Wrap a timer callback so an exception is logged with context instead of lost."""
        return self.hub.guarded(fn, what, **fields)

    def call_later(self, delay: float, fn, *args):
        """Schedule an OLT-level timer; all are cancelled by `stop`."""
        holder = []

        def run():
            self._calls.discard(holder[0])
            fn(*args)

        call = self.clock.callLater(max(0.0, delay), self.guarded(run, getattr(fn, "__name__", "timer")))
        holder.append(call)
        self._calls.add(call)
        return call

    def pending_calls(self) -> int:
        """Delayed calls owned by the OLT and its ONUs that are still pending."""
        n = sum(1 for c in self._calls if c.active())
        for onu in self._serials.values():
            n += sum(1 for c in onu._timer_calls if c.active())
            if onu._discovery_call is not None and onu._discovery_call.active():
                n += 1
        return n

    def stop(self) -> None:
        """Cancel every timer of the OLT and its ONUs and every fault knob (process shutdown)."""
        self.faults.cancel_all()
        for call in list(self._calls):
            if call.active():
                call.cancel()
        self._calls.clear()
        for onu in self._serials.values():
            onu.cancel_timers()

    def _state_changed(self, src, dest, event):
        self.touch()
        self.emit(events.StateChanged("olt", "InternalState", src, dest))

    def _set_oper(self, value: str) -> None:
        if self.oper_state != value:
            src, self.oper_state = self.oper_state, value
            self.touch()
            self.emit(events.StateChanged("olt", "OperState", src, value))

    # ---- building --------------------------------------------------------------------------

    def add_pon(self, pon: PonPort) -> None:
        self.pons.append(pon)
        self.ids = self.ids.widened(pon.ids)

    def add_onu(self, onu: Onu) -> None:
        key = serial_key(onu.serial)
        if key in self._serials:
            raise InvalidArgument(f"duplicate ONU serial {onu.serial}")
        onu.pon.onus.append(onu)
        self._serials[key] = onu  # keyed by serial_key: a lookup accepts the hex in either case

    # ---- lookups ---------------------------------------------------------------------------

    @property
    def onus(self) -> list[Onu]:
        """All ONUs in PON-major order."""
        return [onu for pon in self.pons for onu in pon.onus]

    @property
    def onu_count(self) -> int:
        """How many ONUs the OLT has."""
        return len(self._serials)

    def pon(self, pon_id: int) -> PonPort:
        if isinstance(pon_id, int) and 0 <= pon_id < len(self.pons):
            return self.pons[pon_id]
        raise NotFound(f"PON {pon_id} not found (this OLT has PONs 0..{len(self.pons) - 1})"
                       if self.pons else f"PON {pon_id} not found (this OLT has no PONs)")

    def nni(self, nni_id: int) -> NniPort:
        if isinstance(nni_id, int) and 0 <= nni_id < len(self.nnis):
            return self.nnis[nni_id]
        raise NotFound(f"NNI {nni_id} not found (this OLT has NNIs 0..{len(self.nnis) - 1})")

    def onu_by_serial(self, serial: str) -> Onu:
        onu = self._serials.get(serial_key(serial))
        if onu is None:
            raise NotFound(f"ONU {serial} not found")
        return onu

    def onu_by_id(self, pon_id: int, onu_id: int) -> Onu:
        return self.pon(pon_id).onu_by_id(onu_id)

    def onu_serial_at(self, pon_id: int, onu_id: int) -> str:
        """The serial of ONU `onu_id` on PON `pon_id`, or "" when there is none: a dict look-up for an activated
        id (the OMCI and packet paths ask it for every frame)."""
        try:
            pon = self.pon(pon_id)
            serial = pon.onu_ids.get(onu_id)
            return serial if serial is not None else pon.onu_by_id(onu_id).serial
        except OltsimError:
            return ""

    # ---- OLT lifecycle ---------------------------------------------------------------------

    def start(self) -> None:
        """Power on: created -> initialized, OpenOLT endpoint up, new heartbeat signature."""
        self._fire("initialize")

    def _enter_initialized(self, src):
        self._new_signature()
        for nni in self.nnis:
            nni.oper_state = "down"
        for pon in self.pons:
            pon.gem_ports.clear()
            pon.alloc_ids.clear()
        self.openolt_running = True
        self.emit(events.OpenoltServer(True))

    def _new_signature(self) -> None:
        # Unix seconds, as BBSim, but never equal to the previous one and salted with
        # randomness so that two process starts within a second still differ.
        old = self.heartbeat_signature
        sig = (int(self.clock.seconds()) ^ self.random.getrandbits(12)) & 0xFFFFFFFF
        while sig == old or sig == 0:
            sig = (sig + 1) & 0xFFFFFFFF
        self.heartbeat_signature = sig

    def _enter_enabled(self, src):
        self._set_oper("up")
        self.emit(events.OltIndication("up"))
        self._schedule_port_stats()

    def _enter_disabled(self, src):
        self._set_oper("down")
        self.emit(events.OltIndication("down"))

    def _enter_deleted(self, src):
        self.flows.clear()
        for pon in self.pons:
            pon.onu_ids.clear()
            pon.gem_ports.clear()
            pon.alloc_ids.clear()
            # A rebooted OLT forgets the alarms it reported; a PON still without its transceiver raises LOS again
            # when the next adapter brings it up.
            pon.los = False
            pon.los_onus.clear()
        self.alarms.clear_all("olt-rebooted")

    def check_enable(self) -> None:
        """Raise Unavailable when an adapter cannot open the indication stream now."""
        if self.state == "deleted":
            raise Unavailable("Cannot enable OLT while it is rebooting")
        if self.state == "created":
            raise Unavailable("the OLT is not powered on")

    def enable_indication(self) -> None:
        """An adapter opened EnableIndication: BBSim's Enable algorithm (reference 4.2)."""
        self.check_enable()
        self.adapter_connected = True
        if self._enabled_before:
            # A previous Enable (reconnect or reboot): indications follow after a pause.
            self.call_later(self.timings.reconnect_delay, self._enable, True)
        else:
            self._enabled_before = True
            self._enable(False)

    def indication_stream_closed(self) -> None:
        """The adapter's indication stream ended (client gone, reboot, stop): no one receives indications now."""
        self.adapter_connected = False

    def _enable(self, reconnect: bool) -> None:
        if self.state == "deleted":
            return
        if OLT_MACHINE.can(self.state, "enable"):
            self._fire("enable")
        else:
            self.emit(events.OltIndication("up"))
        for nni in self.nnis:
            nni.oper_state = "up"
            self.emit(events.NniIndication(nni.id, "up", nni.speed))
        self.touch()
        if reconnect:
            for pon in self.pons:
                if pon.state == "disabled" or (pon.oper_state == "up" and not pon.transceiver_plugged):
                    pon.bring_up()
            if self.controlled_activation != "only-onu":
                delay = self.timings.discovery_delay
                for pon in self.pons:
                    if pon.state != "enabled":
                        continue
                    for j, onu in enumerate(pon.onus):
                        self._rediscover(onu, delay * j)
        elif self.controlled_activation in ("default", "only-onu"):
            for pon in self.pons:
                pon.bring_up()

    def _rediscover(self, onu: Onu, delay: float) -> None:
        if onu.state == "discovered":
            onu.resend_discovery(delay)
        elif ONU_MACHINE.can(onu.state, "initialize"):
            onu.discover(delay)

    # ---- port statistics --------------------------------------------------------------------

    def _schedule_port_stats(self) -> None:
        if self._stats_call is None or not self._stats_call.active():
            self._stats_call = self.call_later(self.timings.port_stats_interval, self._port_stats)

    def _port_stats(self) -> None:
        """Every interval while enabled: NNI first, then each PON; counters grow by 10..59 packets
        on ports that are up (PONs only with an active ONU), as BBSim's."""
        self._stats_call = None
        if self.state != "enabled":
            return
        now = int(self.clock.seconds())
        for nni in self.nnis:
            if nni.oper_state == "up":
                nni.packet_count += self.random.randint(10, 59)
            self.emit(events.PortStats(nni.port_no, nni.packet_count, now))
        for pon in self.pons:
            if pon.oper_state == "up" and any(o.is_active for o in pon.onus):
                pon.packet_count += self.random.randint(10, 59)
            self.emit(events.PortStats(pon.port_no, pon.packet_count, now))
        self.touch()
        self._schedule_port_stats()

    def disable(self) -> None:
        """DisableOlt: each enabled PON down, then the OLT down; NNIs stay up."""
        if self.state == "disabled":
            return
        if self.state != "enabled":
            raise FailedPrecondition(f"OLT {self.serial} is {self.state}, it can only be disabled when enabled")
        for pon in self.pons:
            if pon.state == "enabled" or pon.oper_state == "up":  # up but dark: its transceiver is plugged out
                pon.bring_down()
        self._fire("disable")

    def reenable(self) -> None:
        """ReenableOlt: the OLT up, then each disabled PON up with its ONUs."""
        if self.state == "enabled":
            return
        if self.state != "disabled":
            raise FailedPrecondition(f"OLT {self.serial} is {self.state}, only a disabled OLT can be re-enabled")
        self._fire("enable")
        for pon in self.pons:
            if pon.state == "disabled":
                pon.bring_up()

    def reboot(self) -> None:
        """Reboot (OpenOLT Reboot or the control API): ONUs down at once, the OpenOLT endpoint
        stops after `reboot_grace` s and comes back `reboot_delay` s later with a new signature."""
        if self.state == "deleted":
            raise FailedPrecondition(f"OLT {self.serial} is already rebooting")
        if self.state not in ("enabled", "disabled"):
            raise FailedPrecondition(
                f"OLT {self.serial} is {self.state}: it can reboot once an adapter has enabled it ({WAY_OUT})")
        self.previously_connected = False
        self._fire("delete")
        for onu in self.onus:
            onu.cancel_timers()  # pending rediscoveries and power cycles die with the OLT's power
            if ONU_MACHINE.can(onu.state, "disable"):
                onu._fire("disable")
        self.call_later(self.timings.reboot_grace, self._reboot_stop_server)

    def _reboot_stop_server(self) -> None:
        self.openolt_running = False
        self.emit(events.OpenoltServer(False))
        self.call_later(self.timings.reboot_delay, self._reboot_done)

    def _reboot_done(self) -> None:
        if OLT_MACHINE.can(self.state, "initialize"):
            self._fire("initialize")

    def poweron(self) -> None:
        """PoweronOlt control RPC: initialize, legal only from created or deleted."""
        if not OLT_MACHINE.can(self.state, "initialize"):
            raise FailedPrecondition(f"OLT {self.serial} is already powered on ({self.state})")
        for call in list(self._calls):
            if call.active():
                call.cancel()
        self._calls.clear()
        self._fire("initialize")

    def shutdown(self) -> None:
        """ShutdownOlt control RPC: the OLT goes to disabled (as BBSim: no indications)."""
        if self.state != "enabled":
            raise FailedPrecondition(f"OLT {self.serial} is {self.state}, only an enabled OLT can be shut down")
        self.state = "disabled"
        self._state_changed("enabled", "disabled", "disable")

    # ---- PON commands (OpenOLT) ------------------------------------------------------------

    def enable_pon(self, pon_id: int) -> None:
        """EnablePonIf: PON up (IntfInd, IntfOperInd) and its ONUs as the mode says; no-op if up."""
        pon = self.pon(pon_id)
        self._require_enabled("enable a PON")
        if pon.state == "enabled" and pon.oper_state == "up":
            return
        pon.bring_up()

    def disable_pon(self, pon_id: int) -> None:
        """DisablePonIf: OnuInd down for each serving ONU, then PON down; no-op if already down."""
        pon = self.pon(pon_id)
        self._require_enabled("disable a PON")
        if pon.state != "enabled" and pon.oper_state != "up":  # up but not enabled: its transceiver is out
            return
        for onu in pon.onus:
            if onu.is_active:
                self.emit(events.OnuIndication(pon.id, onu.onu_id, onu.serial, "down", onu.oper_state))
        pon.bring_down()

    def _require_enabled(self, action: str) -> None:
        if self.state != "enabled":
            raise FailedPrecondition(f"OLT {self.serial} is {self.state}: cannot {action}")

    # ---- PON transceivers (DMI PlugOutTransceiver / PlugInTransceiver) ---------------------
    #
    # A transceiver is hardware: only a plug-in puts it back; reboots, EnableIndication, DisableOlt/ReenableOlt and
    # DisablePonIf/EnablePonIf leave it out. While it is out the PON may be administratively up (OperState up,
    # IntfInd sent as usual) but stays dark: its InternalState is not enabled, its ONUs stay pon_disabled (or
    # disabled, after a reboot), ONUs of it cannot be powered on or activated, and LOS is raised on the PON each
    # time it is brought up (los_ind on, once until cleared). Both commands work in every OLT state (a transceiver
    # can be pulled from an OLT that is off or rebooting); indications go out only while the OLT is enabled.

    def transceiver_plugged(self, pon_id: int) -> bool:
        """Whether the transceiver of PON `pon_id` is plugged in; NotFound for an unknown PON."""
        return self.pon(pon_id).transceiver_plugged

    def plug_out_transceiver(self, pon_id: int) -> None:
        """Pull the transceiver of PON `pon_id` (BBSim's DMI PlugOutTransceiver, reference 1.8).

        On a PON in service (OLT enabled, PON enabled): AlarmInd los_ind{intf_id: PON port number, status on},
        then the PON's InternalState goes to disabled while its OperState stays up (no IntfInd, as BBSim), its
        serving ONUs go to pon_disabled (no OnuInd) and each of them, in PON order, reports onu_alarm_ind
        los_status on plus the OMCI LOS alarm notification on its first UNI. ONUs not yet activated (discovered,
        initialized) stop announcing themselves and get no alarm: the adapter does not know them yet.
        On a PON not in service (OLT not enabled, or the PON administratively down or never brought up) only the
        transceiver goes out, silently; a PON still enabled inside a rebooting OLT is disabled without
        indications, and the next adapter's EnableIndication raises its LOS.
        NotFound for an unknown PON; FailedPrecondition when the transceiver is already out (nothing changes)."""
        pon = self.pon(pon_id)
        if not pon.transceiver_plugged:
            raise FailedPrecondition(f"the transceiver of PON {pon.id} is not plugged in")
        pon.transceiver_plugged = False
        self.touch()
        self.emit(events.StateChanged("pon", "Transceiver", "plugged_in", "plugged_out", pon.id))
        if pon.state != "enabled":
            return
        in_service = self.state == "enabled"
        serving = [onu for onu in pon.onus if onu.is_active] if in_service else []
        if in_service:
            pon.raise_los()
        pon._fire("disable")
        for onu in serving:
            pon.los_onus.add(onu.serial)
            self.emit(events.Alarm("onu_alarm_ind", {"intf_id": pon.id, "onu_id": onu.onu_id, "los_status": "on"},
                                   onu.serial))
            if onu.unis:
                self.emit(events.OmciAlarm(pon.id, onu.onu_id, onu.serial, 11, onu.unis[0].me_id, True))

    def plug_in_transceiver(self, pon_id: int) -> None:
        """Put back the transceiver of PON `pon_id` (BBSim's DMI PlugInTransceiver, reference 1.8).

        los_ind off if the PON's LOS was raised; then, when the OLT is enabled and the PON administratively up,
        the PON's InternalState is enabled again with its usual effect on the ONUs (every pon_disabled ONU
        OnuInd up, in every controlled activation mode; with default/only-pon discovered ONUs announce themselves
        again and ONUs powered off by a reboot are rediscovered); then every ONU whose LOS the plug-out raised
        and that is still waiting for light (pon_disabled before the plug-in) reports onu_alarm_ind los_status off
        plus the OMCI alarm clear. A PON administratively down (DisablePonIf, DisableOlt) stays down until it is
        enabled. NotFound for an unknown PON; FailedPrecondition when the transceiver is already in (nothing
        changes)."""
        pon = self.pon(pon_id)
        if pon.transceiver_plugged:
            raise FailedPrecondition(f"the transceiver of PON {pon.id} is already plugged in")
        pon.transceiver_plugged = True
        self.touch()
        self.emit(events.StateChanged("pon", "Transceiver", "plugged_out", "plugged_in", pon.id))
        waiting = [onu for onu in pon.onus if onu.serial in pon.los_onus and onu.state == "pon_disabled"]
        pon.los_onus.clear()
        pon.clear_los()
        if self.state == "enabled" and pon.oper_state == "up" and PON_MACHINE.can(pon.state, "enable"):
            if self.controlled_activation in ("only-onu", "both"):
                # These modes leave an ONU alone when its PON is enabled (it waits for PoweronONU), which would
                # strand ONUs that were powered and serving: they range again as soon as the light is back.
                for onu in pon.onus:
                    if onu.state == "pon_disabled":
                        onu._fire("enable")
            pon._fire("enable")
        for onu in waiting:
            self.emit(events.Alarm("onu_alarm_ind", {"intf_id": pon.id, "onu_id": onu.onu_id, "los_status": "off"},
                                   onu.serial))
            if onu.unis:
                self.emit(events.OmciAlarm(pon.id, onu.onu_id, onu.serial, 11, onu.unis[0].me_id, False))

    # ---- ONU commands (OpenOLT) ------------------------------------------------------------

    def activate_onu(self, pon_id: int, serial: str, onu_id: int) -> Onu:
        """ActivateOnu: the discovered ONU takes `onu_id` and comes up (OnuInd up)."""
        pon = self.pon(pon_id)
        onu = pon.onu_by_serial(serial)
        lo, hi = pon.ranges.onu_id_start, min(pon.ranges.onu_id_end, ID_MAX)
        if not lo <= onu_id <= hi:
            raise InvalidArgument(f"ONU id {onu_id} is outside the range {lo}..{hi} of PON {pon.id}")
        owner = pon.onu_ids.get(onu_id)
        if owner is not None and owner != serial:
            raise FailedPrecondition(f"ONU id {onu_id} on PON {pon.id} is already used by ONU {owner}")
        if onu.is_active:
            if onu.onu_id == onu_id:
                return onu  # adapters retry; a repeated activation is harmless
            raise FailedPrecondition(f"ONU {serial} is already active with ONU id {onu.onu_id}")
        if onu.state not in ("discovered", "pon_disabled"):
            raise FailedPrecondition(f"ONU {serial} is {onu.state}; only a discovered ONU can be activated")
        if pon.state != "enabled":
            raise FailedPrecondition(f"PON {pon.id} is {pon.state}"
                                     + ("" if pon.transceiver_plugged else ": its transceiver is plugged out"))
        onu.onu_id = onu_id
        onu._fire("enable")
        return onu

    def delete_onu(self, pon_id: int, onu_id: int) -> None:
        """DeleteOnu: the ONU goes down and is rediscovered `rediscovery_delay` s later."""
        onu = self.onu_by_id(pon_id, onu_id)
        if ONU_MACHINE.can(onu.state, "disable"):
            onu.cancel_timers()
            onu._fire("disable")
        elif onu.state == "discovered":
            onu._cancel_discovery()  # forgotten by the OLT; it announces itself again below
        if self.state == "enabled" and onu.pon.state == "enabled":
            delay = self.timings.rediscovery_delay + self.timings.discovery_delay * onu.pon.onus.index(onu)
            onu.call_later(delay, self._rediscover_after_delete, onu)

    def _rediscover_after_delete(self, onu: Onu) -> None:
        if self.state != "enabled" or onu.pon.state != "enabled":
            return
        if onu.state == "disabled":
            onu.discover(0.0)
        elif onu.state == "discovered":
            onu.resend_discovery(0.0)

    # ---- flows and schedulers --------------------------------------------------------------

    def flow_add(self, flow: Flow) -> None:
        """FlowAdd: validate (ids in range, room under the flow limits), then store (replacing the same
        (PON, id, type))."""
        if flow.access_intf_id != -1 and flow.access_intf_id < 0:
            raise InvalidArgument(f"access_intf_id must be a PON id or -1 (none) (got {flow.access_intf_id})")
        pon = self.pon(flow.access_intf_id) if flow.access_intf_id >= 0 else None
        self._check_flow_ids(flow, pon)
        if not flow.is_onu_flow:
            self._check_room(flow)
            self.flows.store(flow)
            self.emit(events.FlowChanged(flow.access_intf_id, flow.onu_id, flow.flow_id, flow.flow_type, True))
            return
        onu = pon.onu_by_id(flow.onu_id)
        if not onu.is_active:
            raise FailedPrecondition(f"ONU {onu.serial} is {onu.state}; flows need an active ONU")
        if not 0 <= flow.uni_id < len(onu.unis):
            raise InvalidArgument(f"UNI {flow.uni_id} does not exist on ONU {onu.serial} "
                                  f"(it has UNIs 0..{len(onu.unis) - 1})")
        if flow.replicate_flow and not flow.pbit_to_gemport:
            raise InvalidArgument("replicate_flow needs a non-empty pbit_to_gemport")
        self._check_room(flow, onu)
        clash = self.flows.conflict(flow)
        if clash is not None:
            kind, rid, other = clash
            raise FailedPrecondition(f"{kind} {rid} is already used by ONU {other.serial or other.onu_id} "
                                     f"(flow {other.flow_id}) on PON {pon.id}")
        for old in self.flows.find(pon.id, flow.flow_id, flow.flow_type):
            previous = self._serials.get(serial_key(old.serial)) if old.serial != onu.serial else None
            if previous is not None:
                # The id moves to this ONU: its previous owner must neither list it nor drop it when disabled.
                previous.flow_keys.discard(flow.key)
        flow.serial = onu.serial
        self.flows.store(flow, onu)
        uni = onu.unis[flow.uni_id]
        if flow.port_no:
            uni.port_no = flow.port_no
        self._bind_gems(uni, flow)
        self.emit(events.FlowChanged(pon.id, onu.onu_id, flow.flow_id, flow.flow_type, True))
        frames = self.hub.frames
        if frames is not None:
            frames.flow_added(onu, uni, flow)

    def _check_flow_ids(self, flow: Flow, pon: PonPort | None) -> None:
        """InvalidArgument for an id of `flow` outside its space (`pon`'s, or the widest of the OLT's PONs for a
        flow on no PON). -1 means "none" only in flows no ONU owns: VOLTHA sends it for the ONU, UNI, GEM port and
        alloc id of its NNI trap flows."""
        ids = pon.ids if pon is not None else self.ids
        none_ok = not flow.is_onu_flow
        if not 0 <= flow.network_intf_id < len(self.nnis):
            raise InvalidArgument(f"network_intf_id must be an NNI of this OLT, 0..{len(self.nnis) - 1} "
                                  f"(got {flow.network_intf_id})")
        check_id("onu_id", flow.onu_id, ids.onu, none_ok)
        check_id("uni_id", flow.uni_id, UNI_ID_MAX, none_ok)
        check_id("alloc_id", flow.alloc_id, ids.alloc, none_ok)
        check_id("gemport_id", flow.gemport_id, ids.gem, none_ok)
        if not none_ok:
            check_id("port_no", flow.port_no, UNI_PORT_NO_MAX)
        for pbit, gem in flow.pbit_to_gemport.items():
            check_id("pbit_to_gemport key (a p-bit)", pbit, PBIT_MAX)
            check_id(f"pbit_to_gemport[{pbit}]", gem, ids.gem)
        for gem in flow.aes_gemports:
            check_id("gemport_to_aes key (a GEM port)", gem, ids.gem)

    def _check_room(self, flow: Flow, onu: Onu | None = None) -> None:
        """ResourceExhausted when storing `flow` as a new flow would pass the OLT's or `onu`'s flow limit; a flow
        that replaces a stored one (same PON, id and type) always has room."""
        if flow.key not in self.flows and len(self.flows) >= self.max_flows:
            raise ResourceExhausted(f"the OLT holds {len(self.flows)} flows, its limit ({self.max_flows}); "
                                    "remove flows before adding more")
        if onu is not None and flow.key not in onu.flow_keys and len(onu.flow_keys) >= self.max_flows_per_onu:
            held = sum(1 for key in onu.flow_keys if key in self.flows)  # exact, only where it matters
            if held >= self.max_flows_per_onu:
                raise ResourceExhausted(f"ONU {onu.serial} holds {held} flows, the limit per ONU "
                                        f"({self.max_flows_per_onu}); remove flows before adding more")

    def check_onu_resources(self, pon_id: int, onu_id: int, *, uni_id: int | None = None, alloc_ids=(),
                            gem_ports=()) -> Onu:
        """The ONU `onu_id` of PON `pon_id`, after checking that `uni_id` is one of its UNIs and the alloc ids
        and GEM ports are in its PON's id space (traffic schedulers and queues); raises NotFound or
        InvalidArgument."""
        pon = self.pon(pon_id)
        onu = pon.onu_by_id(onu_id)
        if uni_id is not None and not 0 <= uni_id < len(onu.unis):
            raise InvalidArgument(f"UNI {uni_id} does not exist on ONU {onu.serial} "
                                  f"(it has UNIs 0..{len(onu.unis) - 1})")
        for alloc in alloc_ids:
            check_id("alloc_id", alloc, pon.ids.alloc)
        for gem in gem_ports:
            check_id("gemport_id", gem, pon.ids.gem)
        return onu

    def _bind_gems(self, uni, flow: Flow) -> None:
        """Give services their GEM port as BBSim does: EAPOL flows to EAPOL services, DHCP flows to
        the DHCP services whose C-tag is the flow's o_vid, else services matching (C-tag, S-tag)."""
        gem = flow.gemport_id
        for service in uni.services:
            if flow.eth_type == 0x888E:
                hit = service.spec.needs_eapol
            elif flow.eth_type == 0x0800:
                hit = service.spec.needs_dhcp and service.c_tag == flow.o_vid
            else:
                hit = service.c_tag == flow.i_vid and service.s_tag == flow.o_vid
            if hit and gem:
                service.gem_port = gem
        self.touch()

    def flow_remove(self, access_intf_id: int, flow_id: int, flow_type: str) -> int:
        """FlowRemove: forget the matching flows; NotFound when none is stored."""
        if access_intf_id != -1:
            if access_intf_id < 0:
                raise InvalidArgument(f"access_intf_id must be a PON id or -1 (none) (got {access_intf_id})")
            self.pon(access_intf_id)
        found = self.flows.find(access_intf_id, flow_id, flow_type)
        if not found:
            raise NotFound(f"flow {flow_id} not found")
        for flow in found:
            onu = None
            if flow.is_onu_flow:
                try:
                    onu = self.onu_by_id(flow.access_intf_id, flow.onu_id)
                except NotFound:
                    onu = None
            self.flows.remove(flow, onu)
            self.emit(events.FlowChanged(flow.access_intf_id, flow.onu_id, flow.flow_id, flow.flow_type, False))
        return len(found)

    def set_traffic_schedulers(self, pon_id: int, onu_id: int, payload, *, uni_id: int = 0, alloc_ids=()) -> None:
        """CreateTrafficSchedulers: keep the last message per ONU (rendered by the API), once its UNI and alloc
        ids are checked (`check_onu_resources`)."""
        onu = self.check_onu_resources(pon_id, onu_id, uni_id=uni_id, alloc_ids=alloc_ids)
        onu.traffic_schedulers = payload
        schedulers = dict(onu.schedulers)
        for sched in getattr(payload, "traffic_scheds", ()):
            schedulers[(sched.direction, sched.alloc_id)] = (uni_id, sched)
        onu.schedulers = schedulers      # a new dict: the data plane's shaper sees the change
        self.touch()

    def clear_traffic_schedulers(self, pon_id: int, onu_id: int, payload=None) -> None:
        """RemoveTrafficSchedulers: forget the schedulers `payload` (a TrafficSchedulers message) names by direction
        and alloc id, or all of the ONU's without one (or with none named); the last message shown by the API is
        forgotten either way."""
        onu = self.onu_by_id(pon_id, onu_id)
        onu.traffic_schedulers = None
        if payload is None or not payload.traffic_scheds:
            onu.schedulers = {}
        else:
            schedulers = dict(onu.schedulers)
            for sched in payload.traffic_scheds:
                schedulers.pop((sched.direction, sched.alloc_id), None)
            onu.schedulers = schedulers
        self.touch()

    def set_traffic_queues(self, pon_id: int, onu_id: int, payload, *, uni_id: int = 0) -> None:
        """CreateTrafficQueues: keep each queue of `payload` (a TrafficQueues message) by direction and GEM port, once
        its UNI and GEM ports are checked (`check_onu_resources`); the data plane's shaper serves a T-CONT's GEM
        ports by their priority and weight."""
        queues = getattr(payload, "traffic_queues", ())
        onu = self.check_onu_resources(pon_id, onu_id, uni_id=uni_id, gem_ports=[q.gemport_id for q in queues])
        kept = dict(onu.queues)
        for queue in queues:
            kept[(queue.direction, queue.gemport_id)] = (uni_id, queue)
        onu.queues = kept                # a new dict: the shaper sees the change

    def clear_traffic_queues(self, pon_id: int, onu_id: int, payload=None) -> None:
        """RemoveTrafficQueues: forget the queues `payload` names by direction and GEM port, or all of the ONU's
        without one (or with none named)."""
        onu = self.onu_by_id(pon_id, onu_id)
        if payload is None or not payload.traffic_queues:
            onu.queues = {}
            return
        kept = dict(onu.queues)
        for queue in payload.traffic_queues:
            kept.pop((queue.direction, queue.gemport_id), None)
        onu.queues = kept

    # ---- control API: power ----------------------------------------------------------------

    def _check_power_on(self, onu: Onu) -> None:
        if self.state == "deleted":
            raise FailedPrecondition(f"OLT {self.serial} is rebooting")
        if not onu.pon.transceiver_plugged:
            raise FailedPrecondition(f"the transceiver of PON {onu.pon.id} is plugged out; plug it in before "
                                     "powering on its ONUs")
        if onu.pon.state != "enabled":
            raise FailedPrecondition(pon_not_enabled(onu.pon.id, onu.pon.state))
        if onu.state in ACTIVE_STATES or onu.state == "pon_disabled":
            raise FailedPrecondition(f"ONU {onu.serial} is already enabled")
        # In modes only-onu and both, re-enabling a PON leaves its ONUs `initialized` (BBSim's table) with nothing to
        # announce them: a power-on is what brings them back there, as from `created`.
        waiting = onu.state == "initialized" and self.controlled_activation in ("only-onu", "both")
        if onu.state in ("initialized", "discovered") and not waiting:
            raise FailedPrecondition(f"ONU {onu.serial} is already powered on ({onu.state})")

    def _check_shutdown(self, onu: Onu) -> None:
        if onu.state == "disabled":
            raise FailedPrecondition(f"ONU {onu.serial} is already disabled")
        if not ONU_MACHINE.can(onu.state, "disable"):
            raise FailedPrecondition(f"ONU {onu.serial} is {onu.state}; only an enabled ONU can be shut down")

    def power_on_onu(self, serial: str) -> Onu:
        onu = self.onu_by_serial(serial)
        self._check_power_on(onu)
        onu.power_on()
        return onu

    def shutdown_onu(self, serial: str) -> Onu:
        onu = self.onu_by_serial(serial)
        self._check_shutdown(onu)
        onu.power_off()
        return onu

    def _bulk(self, onus, check, act, what: str) -> tuple[int, int]:
        """Act on every ONU that passes `check`; FailedPrecondition when none does (nothing changes)."""
        chosen, reasons = [], []
        for onu in onus:
            try:
                check(onu)
            except FailedPrecondition as exc:
                reasons.append(exc.message)
                continue
            chosen.append(onu)
        if not chosen and reasons:
            raise FailedPrecondition(f"no ONU to {what}: " + "; ".join(reasons[:3])
                                     + (f" (and {len(reasons) - 3} more)" if len(reasons) > 3 else ""))
        for onu in chosen:
            act(onu)
        return len(chosen), len(reasons)

    def power_on_pon(self, pon_id: int) -> tuple[int, int]:
        """Power on every ONU of the PON that is off; returns (powered on, skipped)."""
        pon = self.pon(pon_id)
        if self.state == "deleted":
            raise FailedPrecondition(f"OLT {self.serial} is rebooting")
        if not pon.transceiver_plugged:
            raise FailedPrecondition(f"the transceiver of PON {pon.id} is plugged out; plug it in before "
                                     "powering on its ONUs")
        if pon.state != "enabled":
            raise FailedPrecondition(pon_not_enabled(pon.id, pon.state))
        return self._bulk(list(pon.onus), self._check_power_on, Onu.power_on, "power on")

    def shutdown_pon(self, pon_id: int) -> tuple[int, int]:
        pon = self.pon(pon_id)
        return self._bulk(list(pon.onus), self._check_shutdown, Onu.power_off, "shut down")

    def power_on_all(self) -> tuple[int, int]:
        if self.state == "deleted":
            raise FailedPrecondition(f"OLT {self.serial} is rebooting")
        onus = [o for p in self.pons if p.state == "enabled" for o in p.onus]
        if not onus and self._serials:
            raise FailedPrecondition("no PON is enabled; ONUs can be powered on once an adapter enables their PON "
                                     f"({WAY_OUT})")
        done, skipped = self._bulk(onus, self._check_power_on, Onu.power_on, "power on")
        return done, skipped + (len(self._serials) - len(onus))

    def shutdown_all(self) -> tuple[int, int]:
        return self._bulk(self.onus, self._check_shutdown, Onu.power_off, "shut down")

    # ---- control API: alarms ---------------------------------------------------------------

    def onu_alarm(self, serial: str, alarm_type: str, status: str, parameters: dict | None = None) -> None:
        """Raise (`on`) or clear (`off`) one of the 17 ONU alarms of BBSim."""
        from oltsim.model.alarms import build_onu_alarm
        onu = self.onu_by_serial(serial)
        kind, fields, raised = build_onu_alarm(alarm_type, status, parameters or {})
        fields = {"intf_id": onu.pon.id, "onu_id": onu.onu_id, **fields}
        self.emit(events.Alarm(kind, fields, onu.serial))
        if kind == "onu_alarm_ind" and "los_status" in fields and onu.unis:
            self.emit(events.OmciAlarm(onu.pon.id, onu.onu_id, onu.serial, 11, onu.unis[0].me_id, raised))

    def olt_los(self, interface_type: str, interface_id: int, status: str) -> None:
        """Raise or clear loss of signal on a PON or NNI (AlarmInd los_ind)."""
        from oltsim.model.alarms import parse_status
        kind = (interface_type or "").lower()
        if kind not in ("pon", "nni"):
            raise InvalidArgument(f"interface type must be pon or nni (got {interface_type!r})")
        raised = parse_status(status)
        port = self.pon(interface_id) if kind == "pon" else self.nni(interface_id)
        self.emit(events.Alarm("los_ind", {"intf_id": port.port_no, "status": "on" if raised else "off"}))

    def invalidate_mds(self, serial: str) -> tuple[int, int]:
        """Add a random 1..10 to the ONU's MIB data sync counter (uint8, never 0)."""
        onu = self.onu_by_serial(serial)
        old = onu.mib_data_sync
        new = (old + self.random.randint(1, 10)) % 256
        if new == 0:
            new = 1
        onu.mib_data_sync = new
        self.touch()
        return old, new
