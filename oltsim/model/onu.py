"""ONU, UNI (Ethernet and POTS) and subscriber service: state tables and entry effects.

State names are the strings the control API reports (BBSim's). The ONU owns its lifecycle, identifiers and
resources; what answers the frames the adapter sends it (OMCI, EAPOL, DHCP, IGMP) is its OLT's, reached through its
hub (`DeviceHub.omci`, `DeviceHub.frames`).
"""
from __future__ import annotations

from oltsim.model import events
from oltsim.model.alarms import AlarmKey
from oltsim.model.fsm import Machine, StateHolder
from oltsim.model.hub import DeviceHub

# ---- tables ---------------------------------------------------------------------------------

_IMAGE_STATES = ("software_image_activated", "image_download_error", "software_image_committed")

ONU_MACHINE = Machine("onu", "created", {
    "initialize": (("created", "disabled", "pon_disabled"), "initialized"),
    "discover": (("initialized",), "discovered"),
    "enable": (("discovered", "pon_disabled"), "enabled"),
    "disable": (("enabled", "pon_disabled") + _IMAGE_STATES, "disabled"),
    "pon_disable": (("enabled", "image_download_completed") + _IMAGE_STATES, "pon_disabled"),
    "start_image_download": (("enabled", "image_download_completed", "image_download_error",
                              "software_image_committed"), "image_download_started"),
    "progress_image_download": (("image_download_started",), "image_download_in_progress"),
    "complete_image_download": (("image_download_in_progress",), "image_download_completed"),
    "fail_image_download": (("image_download_in_progress",), "image_download_error"),
    "activate_image": (("image_download_completed",), "software_image_activated"),
    "commit_image": (("enabled",), "software_image_committed"),
})

#: States in which the ONU is ranged and serving (activated by the adapter).
ACTIVE_STATES = frozenset({"enabled", "image_download_started", "image_download_in_progress",
                           "image_download_completed", "image_download_error",
                           "software_image_activated", "software_image_committed"})

UNI_MACHINE = Machine("uni", "down", {
    "enable": (("down",), "up"),
    "disable": (("up",), "down"),
})

SERVICE_MACHINE = Machine("service", "created", {
    "initialize": (("created", "disabled"), "initialized"),
    "disable": (("initialized",), "disabled"),
})

EAPOL_MACHINE = Machine("eapol", "created", {
    "start_auth": (("created", "eap_response_success_received", "auth_failed"), "auth_started"),
    "eap_start_sent": (("auth_started",), "eap_start_sent"),
    "eap_response_identity_sent": (("eap_start_sent",), "eap_response_identity_sent"),
    "eap_response_challenge_sent": (("eap_response_identity_sent",), "eap_response_challenge_sent"),
    "eap_response_success_received": (("eap_response_challenge_sent",), "eap_response_success_received"),
    "auth_failed": (("auth_started", "eap_start_sent", "eap_response_identity_sent",
                     "eap_response_challenge_sent"), "auth_failed"),
})

DHCP_MACHINE = Machine("dhcp", "created", {
    "start_dhcp": (("created", "dhcp_ack_received", "dhcp_failed"), "dhcp_started"),
    "dhcp_discovery_sent": (("dhcp_started",), "dhcp_discovery_sent"),
    "dhcp_request_sent": (("dhcp_discovery_sent",), "dhcp_request_sent"),
    "dhcp_ack_received": (("dhcp_request_sent",), "dhcp_ack_received"),
    "dhcp_failed": (("dhcp_started", "dhcp_discovery_sent", "dhcp_request_sent"), "dhcp_failed"),
})

IGMP_MACHINE = Machine("igmp", "created", {
    "igmp_join_start": (("created", "igmp_left", "igmp_join_error", "igmp_join_started"), "igmp_join_started"),
    "igmp_join_startv3": (("created", "igmp_left", "igmp_join_error", "igmp_join_started"), "igmp_join_started"),
    "igmp_join_error": (("igmp_join_started",), "igmp_join_error"),
    "igmp_leave": (("igmp_join_started",), "igmp_left"),
})

ETH_UNI_ME_BASE = 0x0101


def onu_serial(olt_id: int, pon_id: int, onu_index: int) -> str:
    """BBSim's serial: vendor BBSM + lower-case hex(hi, olt_id%256, pon, index%256), `BBSM000a010b` for OLT 10,
    PON 1, ONU 11, as BBSim's OnuSnToString and VOLTHA's openolt adapter write it (ONOS asks SADIS for exactly that
    string); hi carries index>>8 so that more than 255 ONUs per PON keep unique serials (BBSim wraps)."""
    return "BBSM%02x%02x%02x%02x" % ((onu_index >> 8) & 0xFF, olt_id % 256, pon_id % 256, onu_index & 0xFF)


def serial_key(serial: str) -> str:
    """What a serial is looked up by: its hex is hex in either case, so `BBSM000A010B`, `BBSM000a010b` (and a
    vendor typed in lower case) name the same ONU."""
    return serial.lower()


def service_mac(olt_id: int, pon_id: int, onu_index: int, uni_id: int, service_index: int) -> str:
    """BBSim's MAC 2e:olt:pon:onu:uni:svc; above 255 ONUs the first byte's high nibble carries
    index>>8 (0x2e, 0x3e, ...), keeping the address locally administered and unicast."""
    first = (((2 + (onu_index >> 8)) % 16) << 4) | 0x0E
    return "%02x:%02x:%02x:%02x:%02x:%02x" % (
        first, olt_id % 256, pon_id % 256, onu_index & 0xFF, uni_id % 256, service_index % 256)


class Service(StateHolder):
    """One subscriber service on a UNI (one per services-file entry)."""

    MACHINE = SERVICE_MACHINE
    __slots__ = ("uni", "index", "spec", "name", "mac", "c_tag", "s_tag", "state", "eapol_state",
                 "dhcp_state", "igmp_state", "gem_port", "igmp_groups", "upstream_profile", "downstream_profile")

    def __init__(self, uni: "Uni", index: int, spec, mac: str, c_tag: int, s_tag: int,
                 profiles: tuple[str, str] = ("User_Bandwidth1", "User_Bandwidth2")):
        self.uni = uni
        #: the SADIS bandwidth profiles (upstream, downstream) its uniTagList entry names
        self.upstream_profile, self.downstream_profile = profiles
        self.index = index
        self.spec = spec
        self.name = spec.name
        self.mac = mac
        self.c_tag = c_tag
        self.s_tag = s_tag
        self.state = "created"
        self.eapol_state = "created"
        self.dhcp_state = "created"
        self.igmp_state = "created"
        self.gem_port = 0
        self.igmp_groups: dict | None = None

    def _state_changed(self, src, dest, event):
        self.uni.onu.hub.touch()

    def _enter_disabled(self, src):
        self.eapol_state = "created"
        self.dhcp_state = "created"
        self.gem_port = 0
        self.igmp_groups = None

    def initialize(self) -> None:
        """Start the service (its UNI came up)."""
        if SERVICE_MACHINE.can(self.state, "initialize"):
            self._fire("initialize")

    def disable(self) -> None:
        """Stop the service (its UNI went down); protocol states reset to created."""
        if SERVICE_MACHINE.can(self.state, "disable"):
            self._fire("disable")


class Uni(StateHolder):
    """An Ethernet UNI (`kind` ETH) or POTS port (`kind` POTS) of an ONU."""

    MACHINE = UNI_MACHINE
    __slots__ = ("onu", "id", "kind", "me_id", "state", "port_no", "services")

    def __init__(self, onu: "Onu", uni_id: int, kind: str):
        self.onu = onu
        self.id = uni_id
        self.kind = kind
        self.me_id = ETH_UNI_ME_BASE + uni_id
        self.state = "down"
        self.port_no = 0
        self.services: list[Service] = []

    def _state_changed(self, src, dest, event):
        onu = self.onu
        onu.hub.touch()
        onu.hub.emit(events.StateChanged("uni", "OperState", src, dest, onu.pon.id, onu.onu_id,
                                         onu.serial, self.id))

    def _enter_up(self, src):
        onu = self.onu
        onu.hub.emit(events.OmciAlarm(onu.pon.id, onu.onu_id, onu.serial, 11, self.me_id, False))
        for service in self.services:
            service.initialize()

    def _enter_down(self, src):
        onu = self.onu
        onu.hub.emit(events.OmciAlarm(onu.pon.id, onu.onu_id, onu.serial, 11, self.me_id, True))
        for service in self.services:
            service.disable()

    def enable(self) -> None:
        """Administratively unlock the UNI (OMCI Set AdministrativeState 0)."""
        if UNI_MACHINE.can(self.state, "enable"):
            self._fire("enable")

    def disable(self) -> None:
        """Lock the UNI; a no-op when already down."""
        if UNI_MACHINE.can(self.state, "disable"):
            self._fire("disable")

    @property
    def oper_state(self) -> str:
        return self.state


class Onu(StateHolder):
    """One ONU on a PON. `index` is its 1-based creation index (identifiers derive from it);
    `onu_id` is the index until the adapter assigns one with ActivateOnu.

    `hub` is its OLT's `DeviceHub` (clock, random, timings, events, alarms, flows): all the ONU reaches of the rest
    of the simulation besides `pon`, the PON port it hangs on."""

    MACHINE = ONU_MACHINE
    __slots__ = ("hub", "pon", "index", "serial", "onu_id", "state", "oper_state", "unis",
                 "flow_keys", "traffic_schedulers", "schedulers", "queues", "mib_data_sync", "_discovery_call",
                 "_timer_calls", "image_expected_sections", "image_received_sections",
                 "active_image", "committed_image", "handlers", "faults")

    def __init__(self, hub: DeviceHub, pon, index: int, serial: str):
        self.hub = hub
        self.pon = pon
        self.index = index
        self.serial = serial
        self.onu_id = index
        self.state = "created"
        self.oper_state = "down"
        self.unis: list[Uni] = []
        self.flow_keys: set = set()
        self.traffic_schedulers = None
        #: every scheduler the adapter created and did not remove: (direction, alloc id) -> (uni id, the
        #: TrafficScheduler), replaced as a whole on each change (never changed in place) so that the data plane's
        #: shaper sees a change by the dict's identity
        self.schedulers: dict = {}
        #: every traffic queue (CreateTrafficQueues) the adapter created and did not remove: (direction, GEM port)
        #: -> (uni id, the TrafficQueue: priority, weight, sched_policy), replaced as a whole as `schedulers` is
        self.queues: dict = {}
        self.mib_data_sync = 0
        self._discovery_call = None
        self._timer_calls: set = set()
        self.image_expected_sections = 0
        self.image_received_sections = 0
        self.active_image = 0
        self.committed_image = 0
        #: the ONU's fault knobs (oltsim.model.faults.OnuFaults), None when it has none: OMCI and packets check it
        self.faults = None

    # ---- views -----------------------------------------------------------------------------

    @property
    def eth_unis(self) -> list[Uni]:
        return [u for u in self.unis if u.kind == "ETH"]

    def eth_uni_with_port_no(self, port_no: int) -> Uni | None:
        """The Ethernet UNI whose flows gave it `port_no` (the port OnuPacketOut names), None when none has."""
        return next((u for u in self.unis if u.kind == "ETH" and u.port_no == port_no), None)

    @property
    def services(self) -> list[Service]:
        return [s for u in self.unis for s in u.services]

    @property
    def is_active(self) -> bool:
        return self.state in ACTIVE_STATES

    def describe(self) -> str:
        return f"ONU {self.serial}"

    # ---- transitions -----------------------------------------------------------------------

    def _state_changed(self, src, dest, event):
        self.hub.touch()
        self.hub.emit(events.StateChanged("onu", "InternalState", src, dest, self.pon.id,
                                          self.onu_id, self.serial))

    def _set_oper(self, value: str) -> None:
        if self.oper_state != value:
            src, self.oper_state = self.oper_state, value
            self.hub.touch()
            self.hub.emit(events.StateChanged("onu", "OperState", src, value, self.pon.id,
                                              self.onu_id, self.serial))

    def _enter_initialized(self, src):
        self._set_oper("up")

    def _enter_discovered(self, src, delay: float = 0.0):
        self.resend_discovery(delay)

    def _send_discovery(self):
        self._discovery_call = None
        if self.state != "discovered":
            return
        self.hub.emit(events.OnuDiscovery(self.pon.id, self.serial))
        retry = self.hub.timings.discovery_retry
        if retry > 0:
            self._discovery_call = self.hub.clock.callLater(retry, self._send_discovery)

    def resend_discovery(self, delay: float) -> None:
        """Announce a still-discovered ONU again after `delay` (reconnect, DeleteOnu)."""
        self._cancel_discovery()
        self._discovery_call = self.hub.clock.callLater(delay, self._send_discovery)

    def _cancel_discovery(self):
        call, self._discovery_call = self._discovery_call, None
        if call is not None and call.active():
            call.cancel()

    def _enter_enabled(self, src):
        self._cancel_discovery()
        self.pon.onu_ids[self.onu_id] = self.serial
        self.hub.touch()
        self.hub.emit(events.OnuIndication(self.pon.id, self.onu_id, self.serial, "up", self.oper_state))

    def _release_resources(self):
        """Forget flows, resource registrations and alarms (disable and PON disable)."""
        self._cancel_discovery()
        self.hub.flows.remove_onu(self)
        self.pon.release_onu(self)
        self.traffic_schedulers = None
        self.schedulers = {}
        self.queues = {}

    def _enter_disabled(self, src):
        self._release_resources()
        self._set_oper("down")
        self.hub.emit(events.OnuIndication(self.pon.id, self.onu_id, self.serial, "down", "down"))
        for uni in self.unis:
            uni.disable()

    def _enter_pon_disabled(self, src):
        self._release_resources()

    # ---- timers owned by the ONU -----------------------------------------------------------

    def call_later(self, delay: float, fn, *args):
        """Schedule `fn` on the clock; the call is cancelled by `cancel_timers` (power-off, stop)."""
        holder = []

        def run():
            self._timer_calls.discard(holder[0])
            fn(*args)

        call = self.hub.clock.callLater(delay, self.hub.guarded(run, "onu-timer", serial=self.serial))
        holder.append(call)
        self._timer_calls.add(call)
        return call

    def cancel_call(self, call) -> None:
        """Cancel one timer scheduled with `call_later` and forget it."""
        self._timer_calls.discard(call)
        if call.active():
            call.cancel()

    def cancel_timers(self) -> None:
        """Cancel every pending timer of this ONU."""
        self._cancel_discovery()
        for call in list(self._timer_calls):
            if call.active():
                call.cancel()
        self._timer_calls.clear()

    # ---- lifecycle operations used by the OLT ----------------------------------------------

    def discover(self, delay: float = 0.0) -> None:
        """initialize (if needed) then discover: OnuDiscInd after `delay` seconds."""
        if ONU_MACHINE.can(self.state, "initialize"):
            self._fire("initialize")
        self._fire("discover", delay=delay)

    def power_off(self) -> None:
        """Dying gasp, LOS on, OMCI LOS alarm, then disable (OnuInd down)."""
        pon, hub = self.pon.id, self.hub
        hub.emit(events.Alarm("dying_gasp_ind", {"intf_id": pon, "onu_id": self.onu_id, "status": "on"},
                              self.serial))
        hub.emit(events.Alarm("onu_alarm_ind", {"intf_id": pon, "onu_id": self.onu_id, "los_status": "on"},
                              self.serial))
        if self.unis:
            hub.emit(events.OmciAlarm(pon, self.onu_id, self.serial, 11, self.unis[0].me_id, True))
        self.cancel_timers()
        self._fire("disable")

    def power_on(self) -> None:
        """LOS off, OMCI clear, then from disabled straight to enabled (a power cycle needs no
        ActivateOnu); from created (only-onu / both) up to discovered."""
        pon, hub = self.pon.id, self.hub
        hub.emit(events.Alarm("onu_alarm_ind", {"intf_id": pon, "onu_id": self.onu_id, "los_status": "off"},
                              self.serial))
        if self.unis:
            hub.emit(events.OmciAlarm(pon, self.onu_id, self.serial, 11, self.unis[0].me_id, False))
        # Powered again, the ONU's dying gasp is over; BBSim sends no dying_gasp_ind off, so only the OLT's alarm
        # book clears it (docs/alarms.md), and the logs and event readers are told (events.AlarmCleared).
        hub.alarms.clear(AlarmKey("onu", "DYING_GASP", self.serial, pon, -1), "onu-powered-on")
        was_disabled = self.state == "disabled"
        self.discover(0.0)
        if was_disabled:
            # The discovery indication goes out first, then the ONU comes up at once.
            self._send_discovery_now()
            self._fire("enable")

    def _send_discovery_now(self):
        self._cancel_discovery()
        self.hub.emit(events.OnuDiscovery(self.pon.id, self.serial))
