"""Control API v1 use cases, one method per `bbsim.BBSim` RPC, shared by gRPC and REST.

Each method takes the RPC's request message and returns its response message,
running on the reactor thread; refusals raise domain errors (validated before any
effect), which `oltsim.status.ERROR_TABLE` maps to statuses. A serial that is no ONU of the OLT is NotFound naming
the nearest serial it has (``ONU BBSM0000001 not found on this OLT; did you mean BBSM00000001?``), on every call
that takes one, as the capture and event filters name it.
"""
from __future__ import annotations

import ipaddress
import platform

from oltsim.logs import logger

from oltsim import __version__
from oltsim._proto import bbsim_pb2, oltsim_pb2
from oltsim.api import translate
from oltsim.buildinfo import build_info
from oltsim.capture.ring import check_serial
from oltsim.model.errors import FailedPrecondition, InvalidArgument, NotFound
from oltsim.model.onu import IGMP_MACHINE
# the largest scenario text RunScenario takes (UTF-8 bytes), as --scenario: more is refused, not parsed
from oltsim.scenario.schema import MAX_SCENARIO_BYTES  # noqa: F401 - rest_v1 reads it here

log = logger("oltsim.api")

LOG_LEVELS = ("trace", "debug", "info", "warn", "error")


def parse_uint(value, name: str) -> int:
    """A non-negative integer from a path/query string; InvalidArgument otherwise."""
    if isinstance(value, int):
        number = value
    else:
        text = str(value).strip()
        if not text.isdigit():
            raise InvalidArgument(f"{name} must be a non-negative integer (got {value!r})")
        number = int(text)
    if number < 0 or number > 0xFFFFFFFF:
        raise InvalidArgument(f"{name} is out of range (got {value!r})")
    return number


class V1Commands:
    """The v1 use cases over one OLT model.

    `openolt` controls the OpenOLT endpoint (stop_server/start_server/serving),
    `logs` sets the log level (set_level(name) / level), `olt_ip` is reported in GET /v1/olt.
    `capture` is the capture ring (oltsim.capture.Capture; None: capture off) the capture calls read, and
    `scenarios` makes the scenario runner from these use cases (``scenarios(commands)``, e.g. a ScenarioRunner over
    them; None: no scenarios on this OLT, the scenario calls are refused).
    """

    def __init__(self, olt, *, openolt=None, logs=None, olt_ip: str = "127.0.0.1", revision: str = "extended",
                 capture=None, scenarios=None, dataplane=None):
        self.olt = olt
        self.openolt = openolt
        self.logs = logs
        self.olt_ip = olt_ip
        self.revision = revision
        self.capture = capture
        #: the scenario runner (oltsim.scenario.runner.ScenarioRunner), or None
        self.scenarios = scenarios(self) if scenarios is not None else None
        #: the data plane's service (oltsim.dataplane.service.DataPlaneService) when interfaces are on, else None
        self.dataplane = dataplane
        self._cache: dict = {}

    def onu(self, serial: str):
        """The ONU of `serial`; NotFound naming the nearest serial of the OLT when it has none of that serial."""
        return check_serial(self.olt, serial)

    def cached(self, key, build):
        """Reuse what has not changed since the model's last visible change."""
        entry = self._cache.get(key)
        generation = self.olt.generation
        if entry is not None and entry[0] == generation:
            return entry[1]
        value = build()
        self._cache[key] = (generation, value)
        return value

    # ---- reads -----------------------------------------------------------------------------

    def Version(self, request) -> bbsim_pb2.VersionNumber:
        commit_hash, build_time = build_info()
        return bbsim_pb2.VersionNumber(version=__version__, buildTime=build_time, commitHash=commit_hash,
                                       gitStatus=f"python {platform.python_version()}")

    def GetOlt(self, request) -> bbsim_pb2.Olt:
        return self.cached("olt", lambda: translate.olt_to_pb(self.olt, self.olt_ip))

    def GetONUs(self, request) -> bbsim_pb2.ONUs:
        def build():
            msg = bbsim_pb2.ONUs()
            for onu in self.olt.onus:
                translate.onu_to_pb(onu, self.revision, msg.items.add())
            return msg
        return self.cached(("onus", self.revision), build)

    def GetONU(self, request) -> bbsim_pb2.ONU:
        onu = self.onu(request.SerialNumber)
        return translate.onu_to_pb(onu, self.revision)

    def GetFlows(self, request) -> bbsim_pb2.Flows:
        return translate.flows_to_pb(self.select_flows(request))

    def select_flows(self, request) -> list:
        """The stored flows GetFlows answers with: the ONU's (SerialNumber given) or every flow, each once. REST
        renders them itself (`oltsim.api.restkit.ListWriter`), a slice per reactor turn."""
        if request.SerialNumber:
            return self.olt.flows.for_onu(self.onu(request.SerialNumber))
        return self.olt.flows.all()

    def GetOnuTrafficSchedulers(self, request) -> bbsim_pb2.ONUTrafficSchedulers:
        onu = self.onu(request.SerialNumber)
        msg = bbsim_pb2.ONUTrafficSchedulers()
        if onu.traffic_schedulers is not None:
            msg.traffSchedulers.CopyFrom(onu.traffic_schedulers)
            for sched in msg.traffSchedulers.traffic_scheds:
                # Every field of the scheduler table is always shown (decisions 2), even when not sent.
                sched.scheduler.SetInParent()
                sched.traffic_shaping_info.SetInParent()
        return msg

    def GetServices(self, request) -> bbsim_pb2.Services:
        msg = bbsim_pb2.Services()
        if not request.OnuSerialNumber:
            if request.UniID:
                raise InvalidArgument("UniID needs an OnuSerialNumber")
            services = [s for onu in self.olt.onus for s in onu.services]
        else:
            onu = self.onu(request.OnuSerialNumber)
            if request.UniID:
                services = self._uni(onu, request.UniID).services
            else:
                services = onu.services
        for service in services:
            translate.service_to_pb(service, msg.items.add())
        return msg

    def GetOnuUnis(self, request) -> bbsim_pb2.UNIs:
        onu = self.onu(request.SerialNumber)
        msg = bbsim_pb2.UNIs()
        for uni in onu.unis:
            translate.uni_to_pb(uni, msg.items.add())
        return msg

    def GetUnis(self, request) -> bbsim_pb2.UNIs:
        msg = bbsim_pb2.UNIs()
        for onu in self.olt.onus:
            for uni in onu.unis:
                translate.uni_to_pb(uni, msg.items.add())
        return msg

    def GetOltAllocatedResources(self, request) -> bbsim_pb2.OltAllocatedResources:
        kind = request.type
        if kind == bbsim_pb2.OltAllocatedResourceType.ALLOC_ID:
            name = "ALLOC_ID"
        elif kind == bbsim_pb2.OltAllocatedResourceType.GEM_PORT:
            name = "GEM_PORT"
        else:
            raise InvalidArgument(f"resource type must be ALLOC_ID or GEM_PORT (got {kind})")
        msg = bbsim_pb2.OltAllocatedResources()
        for flow in self.olt.flows.all():
            if not flow.is_onu_flow:
                continue
            ids = [flow.alloc_id] if name == "ALLOC_ID" else flow.gem_ports
            for rid in ids:
                msg.resources.add(Type=name, PonPortId=flow.access_intf_id, OnuId=flow.onu_id,
                                  PortNo=flow.port_no, ResourceId=rid, FlowId=flow.flow_id)
        return msg

    # ---- OLT -------------------------------------------------------------------------------

    def SetLogLevel(self, request) -> bbsim_pb2.LogLevel:
        level = request.level.strip().lower()
        if level not in LOG_LEVELS:
            raise InvalidArgument(f"log level must be one of {', '.join(LOG_LEVELS)} (got {request.level!r})")
        if self.logs is not None:
            self.logs.set_level(level)
        return bbsim_pb2.LogLevel(level=level, caller=request.caller)

    def PoweronOlt(self, request) -> bbsim_pb2.Response:
        self.olt.poweron()
        return _ok(f"OLT {self.olt.serial} powered on.")

    def ShutdownOlt(self, request) -> bbsim_pb2.Response:
        self.olt.shutdown()
        return _ok(f"OLT {self.olt.serial} shut down.")

    def RebootOlt(self, request) -> bbsim_pb2.Response:
        self.olt.reboot()
        return _ok("OLT restart triggered.")

    def StopgRPCServer(self, request) -> bbsim_pb2.Response:
        self._need_openolt().stop_server()
        return _ok("Openolt gRPC server stopped")

    def StartgRPCServer(self, request) -> bbsim_pb2.Response:
        server = self._need_openolt()
        if server.serving:
            raise FailedPrecondition("Openolt gRPC server already running.")
        server.start_server()
        return _ok("Openolt gRPC server started")

    def RestartgRPCServer(self, request) -> bbsim_pb2.Response:
        server = self._need_openolt()
        delay = request.delay
        server.stop_server()
        self.olt.call_later(delay, self._restart_openolt)
        return _ok(f"Openolt gRPC server stopped, restarting in {delay}")

    def _restart_openolt(self):
        if not self.openolt.serving:
            self.openolt.start_server()

    def _need_openolt(self):
        if self.openolt is None:
            raise FailedPrecondition("this OLT has no OpenOLT endpoint to control")
        return self.openolt

    # ---- ONUs ------------------------------------------------------------------------------

    def ShutdownONU(self, request) -> bbsim_pb2.Response:
        self.onu(request.SerialNumber)
        onu = self.olt.shutdown_onu(request.SerialNumber)
        return self._ok_if_sent(f"ONU {onu.serial} successfully shut down.")

    def PoweronONU(self, request) -> bbsim_pb2.Response:
        self.onu(request.SerialNumber)
        onu = self.olt.power_on_onu(request.SerialNumber)
        return self._ok_if_sent(f"ONU {onu.serial} successfully powered on.")

    def ShutdownONUsOnPON(self, request) -> bbsim_pb2.Response:
        done, skipped = self.olt.shutdown_pon(request.PonPortId)
        return self._ok_if_sent(f"Shut down {done} ONUs on PON port {request.PonPortId}"
                                + _skipped(skipped, "not enabled"))

    def PoweronONUsOnPON(self, request) -> bbsim_pb2.Response:
        done, skipped = self.olt.power_on_pon(request.PonPortId)
        return self._ok_if_sent(f"Powered on {done} ONUs on PON port {request.PonPortId}"
                                + _skipped(skipped, "already on"))

    def ShutdownAllONUs(self, request) -> bbsim_pb2.Response:
        done, skipped = self.olt.shutdown_all()
        return self._ok_if_sent(f"Shut down {done} ONUs in OLT {self.olt.id}" + _skipped(skipped, "not enabled"))

    def PoweronAllONUs(self, request) -> bbsim_pb2.Response:
        done, skipped = self.olt.power_on_all()
        return self._ok_if_sent(f"Powered on {done} ONUs in OLT {self.olt.id}"
                                + _skipped(skipped, "already on or on a disabled PON"))

    def InvalidateMds(self, request) -> bbsim_pb2.Response:
        serial = self.onu(request.SerialNumber).serial  # as the OLT writes it, whatever case was typed
        old, new = self.olt.invalidate_mds(request.SerialNumber)
        return _ok(f"MDS counter of ONU {serial} was {old}, set to {new}.")

    # ---- alarms ----------------------------------------------------------------------------

    def SetOnuAlarmIndication(self, request) -> bbsim_pb2.Response:
        self.onu(request.SerialNumber)
        params = {}
        for p in request.Parameters:
            params[p.Key] = p.Value
        self.olt.onu_alarm(request.SerialNumber, request.AlarmType, request.Status, params)
        return self._ok_if_sent("Onu Alarm Indication Sent.", "Onu Alarm applied.")

    def SetOltAlarmIndication(self, request) -> bbsim_pb2.Response:
        self.olt.olt_los(request.InterfaceType, request.InterfaceID, request.Status)
        return self._ok_if_sent("Olt Alarm Indication Sent.", "Olt Alarm applied.")

    def GetAlarms(self, request) -> oltsim_pb2.Alarms:
        """oltsim.v1.Oltsim/GetAlarms and GET /v1/olt/alarms: the active alarms and the history, all or one ONU's
        (NotFound, naming the nearest serial, for a serial that is no ONU of this OLT)."""
        serial = request.onu_serial.strip()
        if serial:
            serial = check_serial(self.olt, serial).serial
        return translate.alarms_to_pb(self.olt.alarms, serial)

    # ---- scenarios (docs/scenarios.md) ---------------------------------------------------------

    def RunScenario(self, request) -> oltsim_pb2.ScenarioStatus:
        """oltsim.v1.Oltsim/RunScenario and POST /v1/scenario: start the scenario whose YAML `request.text` holds
        (InvalidArgument, naming the step, for one that does not load; FailedPrecondition while one runs)."""
        if not request.text.strip():
            raise InvalidArgument("the scenario is empty: send the YAML text of a scenario file (docs/scenarios.md)")
        if len(request.text.encode("utf-8")) > MAX_SCENARIO_BYTES:
            raise InvalidArgument(f"the scenario is larger than {MAX_SCENARIO_BYTES // 1024} KiB")
        return scenario_status_to_pb(self._need_scenarios().run(request.text, source=request.source or "api"))

    def GetScenario(self, request) -> oltsim_pb2.ScenarioStatus:
        """oltsim.v1.Oltsim/GetScenario and GET /v1/scenario: the running (or last) scenario and its current
        steps."""
        return scenario_status_to_pb(self._need_scenarios().status())

    def StopScenario(self, request) -> oltsim_pb2.ScenarioStatus:
        """oltsim.v1.Oltsim/StopScenario and DELETE /v1/scenario: stop the running scenario, undoing what it holds;
        nothing running is no error."""
        return scenario_status_to_pb(self._need_scenarios().stop())

    def _need_scenarios(self):
        if self.scenarios is None:
            raise FailedPrecondition("this OLT runs no scenarios")
        return self.scenarios

    def _ok_if_sent(self, message: str, unsent: str | None = None) -> bbsim_pb2.Response:
        """BBSim's success `message` while an adapter holds the indication stream; otherwise (`unsent` or) the
        message saying that the change is applied but its indications reached no one."""
        if self.olt.adapter_connected:
            return _ok(message)
        return _ok(not_sent(self.olt, message if unsent is None else unsent))

    # ---- subscriber protocols --------------------------------------------------------------

    def _uni(self, onu, uni_id, eth_only: bool = False):
        number = parse_uint(uni_id, "UniID")
        unis = onu.eth_unis if eth_only else onu.unis
        for uni in unis:
            if uni.id == number:
                return uni
        raise NotFound(f"UNI {number} not found on ONU {onu.serial}")

    def _restart(self, request, protocol: str, needs: str, label: str) -> bbsim_pb2.Response:
        onu = self.onu(request.OnuSerialNumber)
        unis = [self._uni(onu, request.UniID)] if request.UniID else onu.unis
        services = [s for u in unis if u.state == "up" for s in u.services
                    if getattr(s.spec, needs) and s.state == "initialized"]
        if not services:
            raise FailedPrecondition(f"No service of ONU {onu.serial} requires {label} on an enabled UNI")
        frames = onu.hub.frames
        if frames is None:
            raise FailedPrecondition(f"{label} is not running on ONU {onu.serial}")
        for service in services:
            getattr(frames, f"restart_{protocol}")(service)
        names = " ".join(f"uni[{s.uni.id}]{s.name}" for s in services)
        verb = "Authentication" if protocol == "eapol" else "DHCP"
        return _ok(f"{verb} restarted on Services [{names}] for ONU {onu.serial}.")

    def RestartEapol(self, request) -> bbsim_pb2.Response:
        return self._restart(request, "eapol", "needs_eapol", "EAPOL")

    def RestartDhcp(self, request) -> bbsim_pb2.Response:
        return self._restart(request, "dhcp", "needs_dhcp", "DHCP")

    def ChangeIgmpState(self, request) -> bbsim_pb2.Response:
        onu = self.onu(request.OnuSerialNumber)
        if request.UniID < 0:
            raise InvalidArgument(f"UniID must be a non-negative integer (got {request.UniID})")
        uni = self._uni(onu, request.UniID, eth_only=True)
        action = request.SubActionVal
        if action not in (bbsim_pb2.JOIN, bbsim_pb2.LEAVE, bbsim_pb2.JOINV3):
            raise InvalidArgument(f"SubActionVal must be one of JOIN, LEAVE, JOINV3 (got {action!r})")
        try:
            group = ipaddress.IPv4Address(request.GroupAddress)
        except ValueError:
            raise InvalidArgument(f"GroupAddress must be an IPv4 address (got {request.GroupAddress!r})") from None
        if not group.is_multicast:
            raise InvalidArgument(f"GroupAddress must be an IPv4 multicast address (got {group})")
        if not 0 <= request.VLAN <= 4095:
            raise InvalidArgument(f"VLAN must be between 0 and 4095 (got {request.VLAN})")
        if uni.state != "up":
            raise FailedPrecondition(f"UNI {uni.id} of ONU {onu.serial} is down")
        services = [s for s in uni.services if s.spec.needs_igmp and s.state == "initialized"]
        if not services:
            raise FailedPrecondition(f"No service on UNI {uni.id} of ONU {onu.serial} requires IGMP")
        event = {bbsim_pb2.JOIN: "igmp_join_start", bbsim_pb2.JOINV3: "igmp_join_startv3",
                 bbsim_pb2.LEAVE: "igmp_leave"}[action]
        for service in services:
            if not IGMP_MACHINE.can(service.igmp_state, event):
                raise FailedPrecondition(f"service {service.name} on UNI {uni.id} of ONU {onu.serial} "
                                         f"is {service.igmp_state}; cannot {bbsim_pb2.SubActionTypes.Name(action)}")
        for service in services:
            if onu.hub.frames is not None:
                onu.hub.frames.change_igmp(service, event, str(group), request.VLAN)
            service.igmp_state = IGMP_MACHINE.next(service.igmp_state, event)
            groups = service.igmp_groups or {}
            if event == "igmp_leave":
                groups.pop(str(group), None)
            else:
                groups[str(group)] = request.VLAN or service.c_tag
            service.igmp_groups = groups
        self.olt.touch()
        verb = bbsim_pb2.SubActionTypes.Name(action)
        return _ok(f"IGMP {verb} {group} sent on UNI {uni.id} of ONU {onu.serial}.")


def scenario_status_to_pb(status: dict) -> oltsim_pb2.ScenarioStatus:
    """The scenario runner's status dict (ScenarioRunner.status) as oltsim.v1.ScenarioStatus; a missing time is 0,
    a missing name, source or error empty."""
    msg = oltsim_pb2.ScenarioStatus(
        state=status.get("state") or "idle", name=status.get("name") or "", source=status.get("source") or "",
        seed=str(status.get("seed", 0)), started_at=float(status.get("started_at") or 0.0),
        elapsed=float(status.get("elapsed") or 0.0), steps_total=int(status.get("steps_total") or 0),
        steps_started=int(status.get("steps_started") or 0), steps_ended=int(status.get("steps_ended") or 0),
        refusals=int(status.get("refusals") or 0), error=status.get("error") or "")
    for step in status.get("current") or ():
        msg.current.add(step=step.get("step") or "", action=step.get("action") or "",
                        targets=[str(t) for t in step.get("targets") or ()],
                        started_at=float(step.get("started_at") or 0.0), ends_at=float(step.get("ends_at") or 0.0))
    return msg


def _ok(message: str) -> bbsim_pb2.Response:
    return bbsim_pb2.Response(status_code=0, message=message)


#: What an alarm, shutdown or power-on answer adds when no adapter holds the indication stream.
NOT_SENT = "no adapter connected: indications not sent"


def not_sent(olt, message: str) -> str:
    """`message` (a sentence) saying, when no adapter holds `olt`'s indication stream, that its indications were
    not delivered (they are dropped: decisions section 3)."""
    if olt.adapter_connected:
        return message
    return f"{message[:-1] if message.endswith('.') else message} ({NOT_SENT})."


def _skipped(count: int, why: str) -> str:
    return f" ({count} skipped: {why})." if count else "."
