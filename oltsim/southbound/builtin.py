"""The built-in adapter (`--adapter builtin`): oltsim plays the openolt adapter's part itself, in process.

What it does is what VOLTHA's openolt and ONU adapters (and BBSim's `bbr`) do to bring subscribers up, so that with
nothing else running every ONU reaches `eap_response_success_received` and `dhcp_ack_received`:

1. GetDeviceInfo (the resource pools of each PON), then the indication stream (EnableIndication's part).
2. OnuDiscInd: a new serial gets the next ONU id of its PON (the pool's first id, then +1, in discovery order), a
   known one keeps its id; ActivateOnu.
3. OnuInd up: OMCI over OmciMsgOut, one request at a time per ONU: MIB Reset, MIB Upload, MIB Upload Next until the
   count the upload answered (the PPTP Ethernet UNIs are taken from the MIB), Set AdministrativeState 0 (unlock) on
   each of those PPTPs, then per technology profile of each UNI (one for ATT and DT, three for TT) Set the alloc id
   of a T-CONT of its own and Create its GEM port network CTP. A request unanswered for OMCI_TIMEOUT seconds is sent
   again, at most OMCI_RETRIES times.
4. Then per profile of each UNI: CreateTrafficSchedulers (its T-CONT) and CreateTrafficQueues (its GEM port); the
   EAPOL trap flow (eth_type 0x888e, o_vid 4091) when a service of the UNI uses EAPOL, else its DHCP trap flows at once.
5. EAPOL, as the authenticator (RADIUS behind ONOS): EAPOL-Start -> EAP-Request/Identity; Response/Identity ->
   Request/MD5-Challenge (a random challenge); Response/MD5-Challenge -> EAP-Success when it is MD5(id, "password",
   challenge) (the password every simulated supplicant uses), else EAP-Failure; all by OnuPacketOut to the UNI's
   port. After a UNI's first success its DHCP trap flows follow (eth_type 0x800, UDP 68 -> 67, o_vid = the
   service's uplink tag, any p-bit).
6. DHCP relay: a Discover or Request from a UNI gets the service's S-tag pushed and goes to the NNI with
   UplinkPacketOut; the NNI's answer (the OLT's built-in DHCP server) loses that outer tag and goes back to the UNI
   with OnuPacketOut.

Reactions, as with VOLTHA: OnuInd down, a PON going down and the OLT going down forget where each ONU's bring-up
was; the next OnuInd up (power-on, re-enable, rediscovery after DeleteOnu and re-activation) redoes OMCI and the
flows. When the stream ends (OLT reboot, the OpenOLT server stopped or restarted), the adapter connects again as
soon as the OLT's OpenOLT endpoint is back (GetDeviceInfo, EnableIndication) and reconciles: an ONU the OLT no
longer has active is forgotten (after a reboot the OLT's rediscoveries bring every ONU up again), an active one
whose bring-up was cut short or that came back unseen is brought up again, and an EAPOL or DHCP exchange under
way when the stream ended (its frames were lost with it) starts over at once. RestartEapol and RestartDhcp need nothing: the ONU starts over and the adapter answers. Alarms need nothing.

How it talks to the OLT: on the reactor thread, no socket. Every request goes through the same `OpenoltServicer`
methods the gRPC server serves (FlowAdd's validation, OmciMsgOut's hex decoding, the model's refusals), called
inline with no context (the unary methods do not use it). Indications are read the way EnableIndication reads
them: the `IndicationHub` gets a bounded `StreamQueue` of this adapter's (`hub.open_stream`), and the model's
indications arrive as the same `openolt.Indication` messages an external adapter receives. EnableIndication itself
is an async generator over a gRPC context (the peer, cancellation) that only a gRPC server can drive, so that one
call is replaced by what it does (`hub.open_stream` with a queue, `hub.close_stream` at the end). The subscriber
data an adapter gets from SADIS (each service's MAC, tags and needs) is read from the model's services, which is
what oltsim's SADIS server serves.

While it runs, `hub.driver` names it and the OpenOLT servicer refuses an external EnableIndication with
FAILED_PRECONDITION (two adapters on one OLT would answer every ONU twice).

Pacing: the queue is read on the reactor at most BATCH indications per reactor turn (`clock.callLater(0)`), so a
16x32 bring-up (about 250 OMCI exchanges per ONU) shares the reactor with the APIs; the model's discovery delay
spreads the ONUs out. Every callback is guarded (a failure is logged with the indication or ONU it concerned and
the adapter goes on); every timer is on the injected clock and cancelled by `stopService`.
"""
from __future__ import annotations

import random
from collections import deque
from dataclasses import dataclass, field

from twisted.application import service
from voltha_protos import openolt_pb2, tech_profile_pb2

from oltsim.logs import SummedLines, Summary, logger
from oltsim.model import events
from oltsim.model.errors import NotFound, OltsimError
from oltsim.omci import codec
from oltsim.omci.responder import TCONT_IDS
from oltsim.openoltpb import serial_from_pb
from oltsim.serving.onloop import StreamQueue
from oltsim.status import status_for
from oltsim.packets import frames as f
from oltsim.packets.common import uplink_tag
from oltsim.packets.eapol import AUTHENTICATOR_MAC, PASSWORD, identity_request_frame, md5_request_frame, md5_response
from oltsim.packets.eapol import failure_frame, success_frame
from oltsim.southbound import workflows as wf

log = logger("oltsim.adapter")

#: builtin-adapter-onu-up/-ready lines written one by one per second at info (the rest at debug, and summed up).
ONU_LINES_PER_INTERVAL = 4
#: Seconds over which the warnings a client's frames cause (a DHCP client it does not know, a packet it cannot
#: decode, an EAP answer it rejects) are summed: per reason the first is logged, the rest counted, then one line.
FRAME_WARNING_INTERVAL = 10.0
#: The name the hub and the refusal of an external EnableIndication give this adapter.
DRIVER = "builtin"
#: Indications the stream holds at most (as an external adapter's); more are dropped by the hub and counted.
QUEUE_SIZE = 65536
#: Indications handled per reactor turn.
BATCH = 256
#: Seconds an OMCI request waits for its response before it is sent again, and how many times it is.
OMCI_TIMEOUT = 3.0
OMCI_RETRIES = 10
#: Seconds between two attempts to open the stream while the OLT refuses (its endpoint is up but it is not ready).
RECONNECT_DELAY = 1.0
NNI = 0
PIR = 1000000
TECH_PROFILE = 64


def mef_shaping(profile: dict) -> tech_profile_pb2.TrafficShapingInfo:
    """The TrafficShapingInfo VOLTHA sends for a SADIS MEF bandwidth profile: ONOS's olt app makes its meter's bands
    (peak cir + eir + air with burst cbs + ebs, committed cir/cbs, assured air with no burst) and the openolt
    adapter maps three bands so (voltha-lib-go `meters.GetTrafficShapingInfo`): PIR, CIR and GIR, in kbit/s."""
    return tech_profile_pb2.TrafficShapingInfo(
        pir=profile["cir"] + profile["eir"] + profile.get("air", 0), pbs=profile["cbs"] + profile["ebs"],
        cir=profile["cir"], cbs=profile["cbs"], gir=profile.get("air", 0))


#: The bandwidth profiles oltsim's SADIS serves, MEF format (oltsim.api.sadis BANDWIDTH_PROFILES["mef"]: the
#: southbound does not import the API, tests/unit/test_builtin_adapter.py checks they are the same), by id: the
#: built-in adapter's traffic schedulers shape by the ones a service's uniTagList entry names, as VOLTHA's would.
MEF_PROFILES = {p["id"]: p for p in (
    {"id": "User_Bandwidth1", "cbs": 10000, "cir": 30000, "air": 100000, "ebs": 1000, "eir": 100000},
    {"id": "User_Bandwidth2", "cbs": 5000, "cir": 100000, "air": 100000, "ebs": 5000, "eir": 100000},
    {"id": "User_Bandwidth3", "cbs": 5000, "cir": 1000000, "air": 100000, "ebs": 5000, "eir": 1000000},
    {"id": "Default", "cbs": 30, "cir": 600, "air": 100000, "ebs": 30, "eir": 400},
)}
#: The ones a subscriber names when its services file names none (BBSim's fixed choice).
UPSTREAM_BANDWIDTH = MEF_PROFILES["User_Bandwidth1"]
DOWNSTREAM_BANDWIDTH = MEF_PROFILES["User_Bandwidth2"]
EAPOL_VID = 4091
ANY_PBITS = 255
#: The first T-CONT ME id; UNI i uses T-CONT 0x8001 + i.
TCONT_BASE = 0x8001
PPTP_ADMIN_STATE = 5                 # PPTP Ethernet UNI attribute 5, AdministrativeState
TCONT_ALLOC_ID = 1                   # T-CONT attribute 1, Alloc-ID
GEM_BIDIRECTIONAL = 3
CHALLENGE_SIZE = 16
#: EAP sessions the authenticator keeps at most (the oldest forgotten): a client on a bound UNI may send EAPOL-Starts
#: from ever new source MACs
MAX_SESSIONS = 4096
# The data plane's part: with a UNI bound to an interface, the ONU's bridge and VLAN operations are
# written over OMCI as VOLTHA's ONU adapter writes them (its entity id numbering), and the ATT workflow's forwarding
# flows are installed. G.988 classes:
MAC_BRIDGE_SERVICE_PROFILE = 45
MAC_BRIDGE_PORT_CONFIG = 47
VLAN_TAGGING_FILTER = 84
DOT1P_MAPPER = 130
EVTOCD = 171
GEM_INTERWORKING_TP = 266
MBSP_BASE = 0x201          # + UNI id: the UNI's bridge, its UNI-side port and its EVTOCD
MAPPER_BASE = 0x8001       # + UNI id + technology profile: the 802.1p mapper
ANI_PORT_BASE = 0x2102     # + PPTP ME id + technology profile: the ANI-side bridge port and its VLAN filter
GAL_ETHERNET_PROFILE = 1
TP_TYPE_PPTP = 1
TP_TYPE_MAPPER = 3
IW_OPTION_MAPPER = 5
EVTOCD_ASSOCIATION_PPTP = 2
VTFD_FORWARD_OPERATION = 0x10   # tagged: forward when the VID is in the list; untagged: forward
TPID = 0x8100
NULL_POINTER = 0xFFFF
#: Flow ids of the NNI's DHCP trap flow (on no PON) and of the OLT's multicast flow, and the priority of the
#: forwarding flows.
NNI_DHCP_FLOW_ID = 1
MULTICAST_FLOW_ID = 2
HSIA_PRIORITY = wf.FORWARD_PRIORITY


def uni_port_no(pon: int, onu_id: int, uni_id: int) -> int:
    """The port number the adapter gives a UNI (flows' port_no, OnuPacketOut's): VOLTHA's layout (PON, ONU id, UNI
    id from the high bits down) with 10 bits for the ONU id, so that XGS-PON's ids up to 1023 keep their own."""
    return (pon << 14) | (onu_id << 4) | uni_id


@dataclass
class _Pools:
    """The next ONU, alloc and GEM port id of one PON, from GetDeviceInfo's pools."""
    onu_id: int
    onu_end: int
    alloc_id: int
    alloc_end: int
    gem: int
    gem_end: int
    flow_id: int = 1


@dataclass
class _UniIds:
    """What one UNI of an ONU was given, kept across bring-ups so that a re-push replaces what was there: per
    technology profile a T-CONT (alloc id) and a GEM port, which its services share."""
    alloc_id: int                    # the first profile's
    gems: dict                       # service index -> its profile's GEM port
    eapol_flow_id: int
    dhcp_flow_ids: dict              # service index -> flow id
    allocs: dict = field(default_factory=dict)          # tp id -> alloc id
    tp_gems: dict = field(default_factory=dict)         # tp id -> GEM port
    fwd_flow_ids: dict = field(default_factory=dict)    # service index -> forwarding flows' id, given when first used
    igmp_flow_ids: dict = field(default_factory=dict)   # service index -> IGMP trap flow id, likewise

    @property
    def hsia_flow_id(self) -> int:
        """The first service's forwarding flows' id (0 before they are given)."""
        return self.fwd_flow_ids.get(min(self.gems, default=0), 0)


@dataclass
class _Request:
    """The OMCI request an ONU waits on."""
    step: str
    message_type: int
    me_class: int
    me_id: int
    contents: bytes
    tid: int = 0
    attempts: int = 0
    deadline: float = 0.0


@dataclass(eq=False)
class AdapterOnu:
    """One ONU as the adapter tracks it: where it is, the id it was given and how far its bring-up got."""
    serial: str
    pon: int
    onu_id: int
    up: bool = False
    step: str = "activating"
    tid: int = 0
    pending: _Request | None = None
    upload_count: int = 0
    upload_seq: int = 0
    pptp_ids: list = field(default_factory=list)
    configured: list = field(default_factory=list)   # UNI ids unlocked and given a T-CONT in this bring-up
    config: deque = field(default_factory=deque)
    unis: dict = field(default_factory=dict)          # UNI id -> _UniIds
    dhcp_pushed: set = field(default_factory=set)     # UNI ids whose DHCP flows are out in this bring-up
    provisioned: bool = False                         # schedulers and first flows out: later OMCI is one-off
    ready: bool = False
    bring_ups: int = 0

    def next_tid(self) -> int:
        """The next OMCI transaction id, 1..0x7fff."""
        self.tid = self.tid % 0x7FFF + 1
        return self.tid

    def forget(self) -> None:
        """The ONU went down: whatever was under way is dropped; its ids are kept."""
        self.up = False
        self.step = "down"
        self.pending = None
        self.config.clear()
        self.configured = []
        self.dhcp_pushed.clear()
        self.provisioned = False
        self.ready = False


class FrameWarnings:
    """Warnings a client's frames cause, which a client can send by the thousand: each is counted by its event name
    (`counts`, from the start); per name the first of an interval is logged as a warning, the others at debug, and
    when the interval ends one `<name> count=<n> (summary of 10 s)` warning says how many there were; while they
    go on, only that line comes, once per interval. `flush` reports at once (the adapter stopping)."""

    def __init__(self, clock, interval: float = FRAME_WARNING_INTERVAL):
        self.clock = clock
        self.interval = interval
        self.counts: dict[str, int] = {}
        self._summaries: dict[str, Summary] = {}

    def warn(self, name: str, fmt: str, /, **fields) -> None:
        """Count one `name` warning (`fmt` starts with `name`) and log it unless this interval's is spent."""
        self.counts[name] = self.counts.get(name, 0) + 1
        summary = self._summaries.get(name)
        if summary is None:
            summary = self._summaries[name] = Summary(self.clock, lambda counts, name=name: self._report(name, counts),
                                                      interval=self.interval, burst=1, sustained=True)
        if summary.offer(name):
            log.warn(fmt, **fields)
        else:
            log.debug(fmt, **fields)

    def flush(self) -> None:
        for summary in self._summaries.values():
            summary.flush()

    def _report(self, name: str, counts: dict) -> None:
        log.warn(name + " count={count} (summary of {interval:g} s)", count=sum(counts.values()),
                 interval=self.interval)


@dataclass
class _Session:
    """An EAP conversation with one service MAC."""
    eap_id: int
    challenge: bytes = b""


class _Stream(StreamQueue):
    """The adapter's indication queue: the hub feeds it, and each item queued wakes the adapter's reader."""

    def __init__(self, maxsize: int, wake):
        super().__init__(maxsize)
        self._wake = wake

    def _changed(self) -> None:
        self._wake()


class BuiltinAdapter(service.Service):
    """oltsim's own openolt adapter (see the module docstring), a service started after the OLT and stopped before.

    `servicer` is an `OpenoltServicer` over `olt` and `hub`; `clock` is the reactor (or a `task.Clock` in tests).
    """

    name = "builtin-adapter"

    def __init__(self, olt, hub, servicer, clock, rng: random.Random | None = None, reachable=None,
                 forwards=None, eap_secret: bytes = PASSWORD, authenticator_mac: bytes = AUTHENTICATOR_MAC,
                 workflow: str = "att"):
        self.olt = olt
        #: the workflow the services file names (logged): what is provisioned follows the services themselves, as
        #: ONOS's olt app provisions SADIS's uniTagList (oltsim.southbound.workflows)
        self.workflow = wf.workflow_name(workflow)
        self._multicast_flow = False
        #: Whether a UNI has a real interface (the data plane): `forwards(serial, uni_id)`. For such a UNI
        #: the adapter also writes the ONU's bridge and VLAN operations and installs the forwarding flows, and its
        #: EAP-MD5 answers are checked against `eap_secret`; the simulated UNIs keep the password of the simulated
        #: supplicant. The authenticator's frames, every UNI's, come from `authenticator_mac` (the OLT side) to
        #: the supplicant's MAC.
        self.forwards = forwards or (lambda serial, uni_id: False)
        self.eap_secret = eap_secret
        self.authenticator_mac = authenticator_mac
        self._nni_dhcp_trap = False
        #: Whether the OpenOLT endpoint serves (an adapter can only reach the OLT then): the daemon passes its gRPC
        #: server's state, so that StopgRPCServer cuts this adapter off as it cuts VOLTHA off until StartgRPCServer.
        self.reachable = reachable or (lambda: True)
        self.hub = hub
        self.servicer = servicer
        self.clock = clock
        #: onu-up and onu-ready lines: a few a second, then one `builtin-adapter-onus` summary line
        self.onu_lines = SummedLines(log, "builtin-adapter-onus", clock, burst=ONU_LINES_PER_INTERVAL)
        #: what clients' frames made the adapter refuse, counted by event name, logged as a summary
        self.frame_warnings = FrameWarnings(clock)
        self.random = rng or random.Random()
        self.onus: dict[str, AdapterOnu] = {}
        self.by_id: dict[tuple[int, int], AdapterOnu] = {}
        self.by_mac: dict[bytes, tuple[AdapterOnu, int, int]] = {}   # MAC -> (ONU, UNI id, service index)
        self.pools: dict[int, _Pools] = {}
        self.sessions: dict[bytes, _Session] = {}
        self.queue: _Stream | None = None
        self.connects = 0
        self.handled = 0
        self._waiting: set[AdapterOnu] = set()
        self._calls: set = set()
        self._drain_call = None
        self._sweep_call = None
        self._reconnect_call = None
        self._draining = False
        self._unsubscribe = None
        self._all_ready_logged = False
        self._waiting_for = ""

    # ---- service ---------------------------------------------------------------------------------------

    def startService(self):
        """Take the OLT's indication stream (refusing external adapters) and connect."""
        super().startService()
        self.hub.driver = DRIVER
        self._unsubscribe = self.olt.subscribe(self._on_model_event)
        log.info("builtin-adapter-started serial={serial} onus={onus} workflow={workflow}", serial=self.olt.serial,
                 onus=self.olt.onu_count, workflow=self.workflow or "-")
        self._connect()

    def stopService(self):
        """Cancel every timer, release the indication stream and let external adapters connect again."""
        super().stopService()
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None
        for call in list(self._calls):
            if call.active():
                call.cancel()
        self._calls.clear()
        self._drain_call = self._sweep_call = self._reconnect_call = None
        self._waiting.clear()
        queue, self.queue = self.queue, None
        if queue is not None:
            self.hub.close_stream(queue)
            queue.close()
        for onu in self.onus.values():
            onu.forget()
        if getattr(self.hub, "driver", None) == DRIVER:
            self.hub.driver = None
        self.onu_lines.flush()
        self.frame_warnings.flush()
        log.info("builtin-adapter-stopped serial={serial}", serial=self.olt.serial)

    def pending_calls(self) -> int:
        """The adapter's own delayed calls still pending (reading, OMCI timeouts, reconnecting)."""
        return sum(1 for call in self._calls if call.active())

    def _call_later(self, delay: float, fn, *args):
        holder = []

        def run():
            self._calls.discard(holder[0])
            try:
                fn(*args)
            except Exception:
                log.failure("builtin-adapter-timer-failed what={what}", what=getattr(fn, "__name__", "timer"))

        call = self.clock.callLater(delay, run)
        holder.append(call)
        self._calls.add(call)
        return call

    # ---- connecting --------------------------------------------------------------------------------------

    def _on_model_event(self, event) -> None:
        # The OpenOLT endpoint came back (end of a reboot): connect at once, on a turn of its own.
        if (isinstance(event, events.OpenoltServer) and event.running and self.running and self.queue is None
                and (self._reconnect_call is None or not self._reconnect_call.active())):
            self._reconnect_call = self._call_later(0, self._connect)

    def _connect(self) -> None:
        """GetDeviceInfo, then the indication stream; while the OLT refuses, try again later."""
        self._reconnect_call = None
        if not self.running or self.queue is not None:
            return
        if not self.reachable():
            self._retry_connect("the OpenOLT server is stopped")
            return
        try:
            info = self.servicer.GetDeviceInfo(openolt_pb2.Empty(), None)
            self._learn_pools(info)
            queue = _Stream(QUEUE_SIZE, self._wake)
            self.olt.emit(events.OpenoltRequest("EnableIndication"))  # what the servicer's EnableIndication emits
            self.hub.open_stream(queue)
        except OltsimError as exc:
            self._retry_connect(exc.message)
            return
        except Exception:
            why = "connecting failed (the traceback is logged once)"
            if self._waiting_for != why:
                log.failure("builtin-adapter-connect-failed serial={serial}", serial=self.olt.serial)
            self._retry_connect(why)
            return
        self.queue = queue
        self.connects += 1
        self._nni_dhcp_trap = False   # the OLT may have lost its flows (a reboot): the next bound UNI adds it again
        self._multicast_flow = False
        self._all_ready_logged = False
        self._waiting_for = ""
        log.info("builtin-adapter-connected serial={serial} pons={pons} connection={n}", serial=self.olt.serial,
                 pons=info.pon_ports, n=self.connects)
        self._reconcile()

    def _reconcile(self) -> None:
        """After a reconnection, as VOLTHA reconciles: an ONU the OLT no longer has active is forgotten (it will be
        rediscovered); an active one whose bring-up was cut short, that came up while the stream was down, or that
        lost its flows meanwhile (a power cycle no one saw) is brought up again; a ready one is left alone."""
        for onu in list(self.onus.values()):
            try:
                info = self.servicer.GetOnuInfo(openolt_pb2.Onu(intf_id=onu.pon, onu_id=onu.onu_id), None)
                model = self.olt.onu_by_serial(onu.serial)
            except OltsimError:
                self._down(onu)
                continue
            if info.state != openolt_pb2.OnuInfo.ACTIVE or model.onu_id != onu.onu_id:
                self._down(onu)
                continue
            # An EAPOL or DHCP exchange under way lost its frames with the stream (dropped: no adapter). It fails
            # now and starts over: through the flows added again for an ONU brought up again, at once for a ready
            # one (a RestartDhcp while the stream was down), instead of waiting out its timeout.
            redo = not (onu.up and onu.step == "ready" and self.olt.flows.for_onu(model))
            frames = model.hub.frames
            if frames is not None:
                frames.abandon_exchanges(model, restart=not redo)
            if redo:
                onu.forget()
                self._bring_up(onu)

    def _retry_connect(self, why: str) -> None:
        """Connect again later: when the OLT's endpoint is back from a reboot (its OpenoltServer event), else in
        RECONNECT_DELAY s. Each new reason is logged once, not each try."""
        if why != self._waiting_for:
            self._waiting_for = why
            log.info("builtin-adapter-waiting serial={serial} why={why}", serial=self.olt.serial, why=why)
        if not self.olt.openolt_running:
            return
        self._reconnect_call = self._call_later(RECONNECT_DELAY, self._connect)

    def _learn_pools(self, info) -> None:
        Pool = openolt_pb2.DeviceInfo.DeviceResourceRanges.Pool
        for entry in info.ranges:
            starts = {pool.type: (pool.start, pool.end) for pool in entry.pools}
            onu = starts.get(Pool.ONU_ID, (1, 255))
            alloc = starts.get(Pool.ALLOC_ID, (1024, 16383))
            gem = starts.get(Pool.GEMPORT_ID, (1024, 65535))
            for intf_id in entry.intf_ids:
                if intf_id not in self.pools:   # ids handed out are kept across reconnections
                    self.pools[intf_id] = _Pools(max(onu[0], 1), onu[1], alloc[0], alloc[1], gem[0], gem[1])

    def _stream_ended(self, marker) -> None:
        queue, self.queue = self.queue, None
        if queue is not None:
            self.hub.close_stream(queue)
        for onu in self.onus.values():
            # What the OLT answered meanwhile reached no one: the bring-up under way is redone on reconnection
            # (`_reconcile`); ONUs that went down told so before the end (their OnuInd down was queued first).
            onu.pending = None
            onu.config.clear()
            self._answered(onu)
        self.sessions.clear()
        status = getattr(marker, "status", None)
        log.info("builtin-adapter-disconnected serial={serial} status={status} details={details}",
                 serial=self.olt.serial, status=getattr(status, "name", "OK"),
                 details=getattr(marker, "details", None) or "")
        if self.running:
            self._retry_connect(getattr(marker, "details", None) or "the indication stream ended")

    # ---- reading the stream ----------------------------------------------------------------------------

    def _wake(self) -> None:
        if self._drain_call is None and not self._draining and self.running:
            self._drain_call = self._call_later(0, self._drain)

    def _drain(self) -> None:
        self._drain_call = None
        queue = self.queue
        if queue is None:
            return
        self._draining = True
        more = True  # the batch ran out before the queue did
        try:
            for _ in range(BATCH):
                item = queue.get()
                if item is StreamQueue.EMPTY:
                    more = False
                    return
                if not isinstance(item, openolt_pb2.Indication):
                    self._stream_ended(item)  # the close marker: the stream ended
                    return
                self.handled += 1
                self._handle(item)
                if self.queue is not queue:
                    return
        finally:
            self._draining = False
            if more and self.queue is queue:
                self._wake()  # the rest on the next turn

    def _handle(self, indication) -> None:
        kind = indication.WhichOneof("data")
        try:
            if kind == "onu_disc_ind":
                self._on_discovery(indication.onu_disc_ind)
            elif kind == "onu_ind":
                self._on_onu_ind(indication.onu_ind)
            elif kind == "omci_ind":
                self._on_omci(indication.omci_ind)
            elif kind == "pkt_ind":
                self._on_packet(indication.pkt_ind)
            elif kind == "intf_oper_ind":
                ind = indication.intf_oper_ind
                if ind.type == "pon" and ind.oper_state == "down":
                    self._pon_down(ind.intf_id)
            elif kind == "olt_ind":
                log.info("builtin-adapter-olt-indication serial={serial} oper_state={state}",
                         serial=self.olt.serial, state=indication.olt_ind.oper_state)
                if indication.olt_ind.oper_state == "down":
                    for onu in self.onus.values():
                        self._down(onu)
                elif self.olt.controlled_activation in ("only-pon", "both"):
                    # These modes leave the PONs to the adapter, which enables its PON ports as VOLTHA does.
                    for pon in sorted(self.pools):
                        if self.olt.pon(pon).state == "created":
                            self._rpc("EnablePonIf", openolt_pb2.Interface(intf_id=pon))
            # IntfInd, NNI IntfOperInd, statistics and alarms: nothing to do.
        except Exception:
            log.failure("builtin-adapter-indication-failed kind={kind} indication={indication}", kind=kind,
                        indication=str(getattr(indication, kind or "olt_ind", "")).replace("\n", " ")[:200])

    # ---- calls to the OLT -------------------------------------------------------------------------------

    def _rpc(self, method: str, request, onu: AdapterOnu | None = None) -> bool:
        """Call one OpenOLT method; a refusal is logged with the ONU it concerned and False returned."""
        try:
            getattr(self.servicer, method)(request, None)
            return True
        except OltsimError as exc:
            code, _ = status_for(exc)
            log.warn("builtin-adapter-call-refused method={method} serial={serial} status={status} why={why}",
                     method=method, serial=onu.serial if onu else "", status=code.name, why=exc.message)
        except Exception:
            log.failure("builtin-adapter-call-failed method={method} serial={serial}", method=method,
                        serial=onu.serial if onu else "")
        return False

    # ---- ONUs --------------------------------------------------------------------------------------------

    def _on_discovery(self, ind) -> None:
        serial = serial_from_pb(ind.serial_number)
        onu = self.onus.get(serial)
        if onu is None:
            pools = self.pools.get(ind.intf_id)
            if pools is None:
                log.warn("builtin-adapter-unknown-pon serial={serial} pon={pon}", serial=serial, pon=ind.intf_id)
                return
            if pools.onu_id > pools.onu_end:
                log.warn("builtin-adapter-no-onu-id serial={serial} pon={pon} (the PON's ONU id pool ends at "
                         "{end})", serial=serial, pon=ind.intf_id, end=pools.onu_end)
                return
            onu = AdapterOnu(serial, ind.intf_id, pools.onu_id)
            pools.onu_id += 1
            self.onus[serial] = onu
            self.by_id[(onu.pon, onu.onu_id)] = onu
        elif onu.pon != ind.intf_id:
            log.warn("builtin-adapter-onu-moved serial={serial} pon={pon} known_pon={known}", serial=serial,
                     pon=ind.intf_id, known=onu.pon)
            return
        log.debug("builtin-adapter-activating serial={serial} pon={pon} onu_id={onu_id}", serial=serial,
                  pon=onu.pon, onu_id=onu.onu_id)
        self._rpc("ActivateOnu", openolt_pb2.Onu(intf_id=onu.pon, onu_id=onu.onu_id,
                                                 serial_number=ind.serial_number, pir=PIR), onu)

    def _on_onu_ind(self, ind) -> None:
        serial = serial_from_pb(ind.serial_number)
        onu = self.onus.get(serial)
        if onu is None or (ind.intf_id, ind.onu_id) != (onu.pon, onu.onu_id):
            log.warn("builtin-adapter-onu-unknown serial={serial} pon={pon} onu_id={onu_id}", serial=serial,
                     pon=ind.intf_id, onu_id=ind.onu_id)
            return
        if ind.oper_state != "up":
            self._down(onu)
            return
        if onu.up:
            return  # a repeated OnuInd up (EnablePonIf sends two): the bring-up under way goes on
        self._bring_up(onu)

    def _bring_up(self, onu: AdapterOnu) -> None:
        """The ONU is up: OMCI from MIB Reset, then schedulers and flows."""
        onu.up = True
        onu.bring_ups += 1
        onu.pptp_ids = []
        self.onu_lines.info("onu-up", "builtin-adapter-onu-up serial={serial} pon={pon} onu_id={onu_id}",
                            serial=onu.serial, pon=onu.pon, onu_id=onu.onu_id)
        self._omci(onu, _Request("mib-reset", codec.MIB_RESET, codec.ONU_DATA, 0, b""))

    def _down(self, onu: AdapterOnu) -> None:
        if onu.up:
            log.info("builtin-adapter-onu-down serial={serial} step={step}", serial=onu.serial, step=onu.step)
        onu.forget()
        self._answered(onu)

    def _pon_down(self, pon: int) -> None:
        for onu in self.onus.values():
            if onu.pon == pon:
                self._down(onu)

    # ---- OMCI ------------------------------------------------------------------------------------------

    def _omci(self, onu: AdapterOnu, request: _Request) -> None:
        request.tid = onu.next_tid()
        request.deadline = self.clock.seconds() + OMCI_TIMEOUT
        onu.pending = request
        if not onu.provisioned:
            onu.step = request.step
        self._waiting.add(onu)
        if self._sweep_call is None:
            self._sweep_call = self._call_later(OMCI_TIMEOUT, self._sweep)
        pkt = codec.encode(request.tid, codec.AR | request.message_type, request.me_class, request.me_id,
                           request.contents)
        # OmciMsgOut carries the frame as hex text, as VOLTHA sends it.
        if not self._rpc("OmciMsgOut", openolt_pb2.OmciMsg(intf_id=onu.pon, onu_id=onu.onu_id,
                                                           pkt=pkt.hex().encode("ascii")), onu):
            self._fail(onu, f"OmciMsgOut {request.step} refused")

    def _answered(self, onu: AdapterOnu) -> None:
        """`onu` waits for no OMCI answer any more; the sweeper stops when no ONU does."""
        self._waiting.discard(onu)
        if not self._waiting and self._sweep_call is not None:
            call, self._sweep_call = self._sweep_call, None
            self._calls.discard(call)
            if call.active():
                call.cancel()

    def _sweep(self) -> None:
        """Every OMCI_TIMEOUT while requests are out: send again those unanswered for that long."""
        self._sweep_call = None
        now = self.clock.seconds()
        for onu in list(self._waiting):
            request = onu.pending
            if request is None:
                self._waiting.discard(onu)
                continue
            if request.deadline > now:
                continue
            if request.attempts >= OMCI_RETRIES:
                self._fail(onu, f"no answer to OMCI {request.step} after {OMCI_RETRIES + 1} tries")
                continue
            request.attempts += 1
            log.debug("builtin-adapter-omci-retry serial={serial} step={step} attempt={attempt}",
                      serial=onu.serial, step=request.step, attempt=request.attempts)
            self._omci(onu, request)
        if self._waiting and self._sweep_call is None:
            self._sweep_call = self._call_later(OMCI_TIMEOUT, self._sweep)

    def _fail(self, onu: AdapterOnu, why: str) -> None:
        log.warn("builtin-adapter-onu-failed serial={serial} step={step} why={why} (the next OnuInd up starts "
                 "over)", serial=onu.serial, step=onu.step, why=why)
        onu.pending = None
        onu.config.clear()
        onu.step = "failed"
        self._answered(onu)

    def _on_omci(self, ind) -> None:
        onu = self.by_id.get((ind.intf_id, ind.onu_id))
        if onu is None or onu.pending is None:
            return  # an alarm notification or a late answer: nothing waits for it
        try:
            frame = codec.parse(bytes(ind.pkt))
        except codec.OmciError as exc:
            log.warn("builtin-adapter-omci-undecodable serial={serial} why={why}", serial=onu.serial, why=str(exc))
            return
        request = onu.pending
        if frame.tid != request.tid or frame.message_type != codec.AK | request.message_type:
            return
        onu.pending = None
        self._answered(onu)
        step = request.step
        if step == "mib-upload":
            onu.upload_count, onu.upload_seq = frame.u16(0), 0
            self._upload_next(onu)
            return
        if step == "mib-upload-next":
            if frame.u16(0) == codec.PPTP_ETHERNET_UNI:
                onu.pptp_ids.append(frame.u16(2))
            onu.upload_seq += 1
            self._upload_next(onu)
            return
        result = frame.u8(0)
        if result != codec.SUCCESS:
            self._fail(onu, f"OMCI {step} answered result {result}")
            return
        if step == "mib-reset":
            self._omci(onu, _Request("mib-upload", codec.MIB_UPLOAD, codec.ONU_DATA, 0, b""))
        else:
            self._next_config(onu)

    def _upload_next(self, onu: AdapterOnu) -> None:
        if onu.upload_seq < onu.upload_count:
            self._omci(onu, _Request("mib-upload-next", codec.MIB_UPLOAD_NEXT, codec.ONU_DATA, 0,
                                     onu.upload_seq.to_bytes(2, "big")))
            return
        self._configure(onu)

    def _configure(self, onu: AdapterOnu) -> None:
        """After the MIB upload: unlock the UNIs the MIB lists, then one T-CONT and the GEM ports per UNI."""
        model = self._model(onu)
        if model is None:
            return
        unis = [uni for uni in model.eth_unis if uni.me_id in onu.pptp_ids]
        config = onu.config
        config.clear()
        admin_unlocked = codec.attribute_bit(PPTP_ADMIN_STATE).to_bytes(2, "big") + b"\x00"
        for uni in unis:
            config.append(_Request(f"unlock-uni-{uni.id}", codec.SET, codec.PPTP_ETHERNET_UNI, uni.me_id,
                                   admin_unlocked))
        tconts = 0
        for uni in unis:
            ids = self._ids(onu, uni)
            if ids is None:
                continue
            for tp, alloc_id in ids.allocs.items():
                # one T-CONT per technology profile, the ONU's in order (0x8001 for the first UNI's first)
                tcont = TCONT_BASE + tconts
                tconts += 1
                if tcont in TCONT_IDS:
                    config.append(_Request(f"tcont-{uni.id}" if tp == next(iter(ids.allocs)) else
                                           f"tcont-{uni.id}-tp{tp}", codec.SET, codec.T_CONT, tcont,
                                           codec.attribute_bit(TCONT_ALLOC_ID).to_bytes(2, "big")
                                           + alloc_id.to_bytes(2, "big")))
                elif tconts == len(TCONT_IDS) + 1:
                    log.warn("builtin-adapter-no-tcont serial={serial} uni={uni} tp={tp} tconts={count} (the MIB "
                             "has {count} T-CONTs; this and later profiles' alloc ids are not set on the ONU)",
                             serial=onu.serial, uni=uni.id, tp=tp, count=len(TCONT_IDS))
                gem = ids.tp_gems[tp]
                # Port id, T-CONT pointer, direction, traffic management / descriptor pointers, key ring.
                contents = (gem.to_bytes(2, "big") + tcont.to_bytes(2, "big") + bytes((GEM_BIDIRECTIONAL,))
                            + bytes(9))
                config.append(_Request(f"gem-{gem}", codec.CREATE, codec.GEM_PORT_NETWORK_CTP, gem, contents))
            if self.forwards(onu.serial, uni.id) and uni.services:
                config.extend(bridge_requests(uni, ids))
        onu.configured = [uni.id for uni in unis]
        self._next_config(onu)

    def _next_config(self, onu: AdapterOnu) -> None:
        if onu.config:
            self._omci(onu, onu.config.popleft())
        elif not onu.provisioned:
            self._provision(onu)

    def _omci_later(self, onu: AdapterOnu, requests) -> None:
        """OMCI after the bring-up's (a VLAN rule after EAP success): queued behind any request out."""
        onu.config.extend(requests)
        if onu.pending is None and onu.config:
            self._omci(onu, onu.config.popleft())

    # ---- ids, schedulers, flows --------------------------------------------------------------------------

    def _model(self, onu: AdapterOnu):
        """The ONU's subscriber data (SADIS's part), or None (logged) if the OLT does not know the serial."""
        try:
            return self.olt.onu_by_serial(onu.serial)
        except NotFound:
            self._fail(onu, "the OLT does not know this serial")
            return None

    def _ids(self, onu: AdapterOnu, uni) -> _UniIds | None:
        """The alloc id, GEM ports and flow ids of one UNI: taken from the PON's pools the first time, then kept."""
        ids = onu.unis.get(uni.id)
        if ids is not None:
            return ids
        pools = self.pools[onu.pon]
        tps = list(wf.profiles(wf.services_of(uni)))
        needed = len(uni.services)
        if pools.alloc_id + len(tps) - 1 > pools.alloc_end or pools.gem + len(tps) - 1 > pools.gem_end:
            log.warn("builtin-adapter-pool-exhausted serial={serial} pon={pon} uni={uni}", serial=onu.serial,
                     pon=onu.pon, uni=uni.id)
            return None
        allocs = {tp: pools.alloc_id + n for n, tp in enumerate(tps)}
        tp_gems = {tp: pools.gem + n for n, tp in enumerate(tps)}
        gems = {index: tp_gems[svc.spec.tp_id or wf.DEFAULT_TP] for index, svc in enumerate(uni.services)}
        pools.gem += len(tps)
        ids = _UniIds(pools.alloc_id, gems, pools.flow_id,
                      {index: pools.flow_id + 1 + index for index in range(needed)}, allocs, tp_gems)
        pools.alloc_id += len(tps)
        pools.flow_id += 1 + needed
        onu.unis[uni.id] = ids
        return ids

    def _provision(self, onu: AdapterOnu) -> None:
        """Schedulers, queues and the first trap flows of every configured UNI."""
        model = self._model(onu)
        if model is None:
            return
        onu.step = "provisioning"
        onu.provisioned = True
        for uni_id in onu.configured:
            uni = model.unis[uni_id]
            ids = onu.unis.get(uni_id)
            if ids is None:
                continue
            port_no = uni_port_no(onu.pon, onu.onu_id, uni_id)
            for index, svc in enumerate(uni.services):
                self.by_mac[f.mac_bytes(svc.mac)] = (onu, uni_id, index)
            services = wf.profiles(wf.services_of(uni))
            for tp, alloc_id in ids.allocs.items():
                # a profile's T-CONT is its services': shaped by what its first one's uniTagList entry names
                first = next((svc for svc in uni.services if (svc.spec.tp_id or wf.DEFAULT_TP) == tp), None)
                self._rpc("CreateTrafficSchedulers", self._schedulers(onu, uni_id, port_no, alloc_id, tp, first), onu)
                self._rpc("CreateTrafficQueues", self._queues(onu, uni_id, port_no, ids.tp_gems[tp], tp,
                                                              wf.pbits(services.get(tp, ()))), onu)
            eapol = [index for index, svc in enumerate(uni.services) if svc.spec.needs_eapol]
            if eapol:
                tp = uni.services[eapol[0]].spec.tp_id or wf.DEFAULT_TP
                self._rpc("FlowAdd", openolt_pb2.Flow(
                    access_intf_id=onu.pon, onu_id=onu.onu_id, uni_id=uni_id, flow_id=ids.eapol_flow_id,
                    flow_type="upstream", network_intf_id=NNI, port_no=port_no, alloc_id=ids.allocs[tp],
                    gemport_id=ids.gems[eapol[0]], priority=10000, cookie=ids.eapol_flow_id, tech_profile_id=tp,
                    classifier=openolt_pb2.Classifier(eth_type=f.ETH_EAPOL, o_vid=EAPOL_VID, o_pbits=ANY_PBITS,
                                                      pkt_tag_type="single_tag"),
                    action=openolt_pb2.Action(cmd=openolt_pb2.ActionCmd(trap_to_host=True))), onu)
                if self.forwards(onu.serial, uni_id):
                    self._ask_identity(onu, uni_id, ids.gems[eapol[0]], uni.services[eapol[0]])
            else:
                self._dhcp_flows(onu, uni)
        onu.step = "authenticating"
        self._check_ready(onu)

    def _schedulers(self, onu, uni_id, port_no, alloc_id, tp=TECH_PROFILE, service=None
                    ) -> tech_profile_pb2.TrafficSchedulers:
        """One technology profile's upstream (its T-CONT) and downstream scheduler, shaped by the SADIS bandwidth
        profiles `service` names (BBSim's fixed pair without one)."""
        up, down = UPSTREAM_BANDWIDTH, DOWNSTREAM_BANDWIDTH
        if service is not None:
            up = MEF_PROFILES.get(service.upstream_profile, up)
            down = MEF_PROFILES.get(service.downstream_profile, down)
        return tech_profile_pb2.TrafficSchedulers(
            intf_id=onu.pon, onu_id=onu.onu_id, uni_id=uni_id, port_no=port_no,
            traffic_scheds=[tech_profile_pb2.TrafficScheduler(
                direction=direction, alloc_id=alloc_id,
                scheduler=tech_profile_pb2.SchedulerConfig(direction=direction,
                                                           additional_bw=tech_profile_pb2.AdditionalBW_BestEffort,
                                                           priority=0, weight=0,
                                                           sched_policy=tech_profile_pb2.Hybrid),
                traffic_shaping_info=mef_shaping(profile), tech_profile_id=tp)
                for direction, profile in ((tech_profile_pb2.UPSTREAM, up), (tech_profile_pb2.DOWNSTREAM, down))])

    def _queues(self, onu, uni_id, port_no, gem, tp=TECH_PROFILE, bits=tuple(range(8))
                ) -> tech_profile_pb2.TrafficQueues:
        """One technology profile's GEM port, with the p-bits its 802.1p mapper gives it."""
        return tech_profile_pb2.TrafficQueues(
            intf_id=onu.pon, onu_id=onu.onu_id, uni_id=uni_id, port_no=port_no, tech_profile_id=tp,
            network_intf_id=NNI,
            traffic_queues=[tech_profile_pb2.TrafficQueue(direction=tech_profile_pb2.UPSTREAM, gemport_id=gem,
                                                          pbit_map=wf.pbit_map(bits),
                                                          sched_policy=tech_profile_pb2.WRR,
                                                          priority=0, weight=25,
                                                          discard_policy=tech_profile_pb2.TailDrop)])

    def _dhcp_flows(self, onu: AdapterOnu, uni) -> None:
        """The DHCP trap flow of every DHCP service of the UNI (once per bring-up)."""
        if uni.id in onu.dhcp_pushed:
            return
        ids = onu.unis.get(uni.id)
        if ids is None:
            return
        onu.dhcp_pushed.add(uni.id)
        port_no = uni_port_no(onu.pon, onu.onu_id, uni.id)
        for index, svc in enumerate(uni.services):
            if not svc.spec.needs_dhcp:
                continue
            vid, pbit = uplink_tag(svc)
            flow_id = ids.dhcp_flow_ids[index]
            tp = svc.spec.tp_id or wf.DEFAULT_TP
            self._rpc("FlowAdd", openolt_pb2.Flow(
                access_intf_id=onu.pon, onu_id=onu.onu_id, uni_id=uni.id, flow_id=flow_id, flow_type="upstream",
                network_intf_id=NNI, port_no=port_no, alloc_id=ids.allocs.get(tp, ids.alloc_id),
                gemport_id=ids.gems[index], priority=10000, cookie=flow_id, tech_profile_id=tp,
                classifier=openolt_pb2.Classifier(eth_type=f.ETH_IPV4, ip_proto=f.IP_PROTO_UDP,
                                                  src_port=f.DHCP_CLIENT_PORT, dst_port=f.DHCP_SERVER_PORT,
                                                  o_vid=vid, o_pbits=pbit or ANY_PBITS, pkt_tag_type="single_tag"),
                action=openolt_pb2.Action(cmd=openolt_pb2.ActionCmd(trap_to_host=True))), onu)
        if self.forwards(onu.serial, uni.id) and uni.services:
            self._forwarding(onu, uni, ids)

    # ---- the data plane's part -----------------------------------------------------------------------------

    def _forwarding(self, onu: AdapterOnu, uni, ids: _UniIds) -> None:
        """A bound UNI's subscriber is through EAPOL (or needs none): its ONU now tags upstream frames with the
        C-tag (the EVTOCD rule and VLAN filter written at bring-up said 4091, EAPOL's, when it needed EAPOL), and
        each service's forwarding flows (oltsim.southbound.workflows), the IGMP trap flow of a service that needs
        IGMP, the NNI's DHCP trap flow and, for a multicast service (`MC`), the OLT's multicast flow go in, as ONOS's
        olt, dhcpl2relay, igmpproxy and mcast apps have them installed."""
        services = wf.services_of(uni)
        if any(svc.eapol for svc in services):
            self._omci_later(onu, vlan_requests(uni, ids))
        pools = self.pools[onu.pon]
        port_no = uni_port_no(onu.pon, onu.onu_id, uni.id)
        for svc in services:
            alloc_id, gem = ids.allocs.get(svc.tp_id, ids.alloc_id), ids.gems[svc.index]
            if not svc.multicast and svc.index not in ids.fwd_flow_ids:
                ids.fwd_flow_ids[svc.index], pools.flow_id = pools.flow_id, pools.flow_id + 1
            for flow in wf.forwarding_flows(svc, onu.pon, onu.onu_id, uni.id, port_no,
                                            ids.fwd_flow_ids.get(svc.index, 0), alloc_id, gem, NNI):
                self._rpc("FlowAdd", flow, onu)
            if svc.igmp:
                if svc.index not in ids.igmp_flow_ids:
                    ids.igmp_flow_ids[svc.index], pools.flow_id = pools.flow_id, pools.flow_id + 1
                self._rpc("FlowAdd", wf.igmp_trap_flow(svc, onu.pon, onu.onu_id, uni.id, port_no,
                                                       ids.igmp_flow_ids[svc.index], alloc_id, gem, NNI), onu)
            if svc.multicast and not self._multicast_flow:
                self._multicast_flow = self._rpc("FlowAdd", wf.multicast_flow(svc, MULTICAST_FLOW_ID, NNI), onu)
        if not self._nni_dhcp_trap and any(svc.dhcp for svc in services):
            # dhcpl2relay's: only for services that need DHCP relayed (DT's BNG answers its RGs' DHCP itself)
            self._nni_dhcp_trap = self._rpc("FlowAdd", nni_dhcp_trap_flow(), onu)

    def _check_ready(self, onu: AdapterOnu) -> None:
        """Log once per bring-up when every service of the ONU is through EAPOL and DHCP, and once when all are."""
        if onu.ready or not onu.up:
            return
        model = self.olt.onu_by_serial(onu.serial)
        for uni_id in onu.configured:
            for svc in model.unis[uni_id].services:
                if svc.spec.needs_eapol and svc.eapol_state != "eap_response_success_received":
                    return
                if svc.spec.needs_dhcp and svc.dhcp_state != "dhcp_ack_received":
                    return
        onu.ready = True
        onu.step = "ready"
        self.onu_lines.info("onu-ready", "builtin-adapter-onu-ready serial={serial} pon={pon} onu_id={onu_id}",
                            serial=onu.serial, pon=onu.pon, onu_id=onu.onu_id)
        if not self._all_ready_logged and len(self.onus) == self.olt.onu_count and all(
                o.ready for o in self.onus.values()):
            self._all_ready_logged = True
            self.onu_lines.flush()  # the counts first: all-ready is the last line of a bring-up
            log.info("builtin-adapter-all-ready serial={serial} onus={count}", serial=self.olt.serial,
                     count=len(self.onus))

    # ---- packets ---------------------------------------------------------------------------------------

    def _on_packet(self, ind) -> None:
        try:
            frame = f.decode(bytes(ind.pkt))
        except f.PacketError as exc:
            self.frame_warnings.warn("builtin-adapter-packet-undecodable",
                                     "builtin-adapter-packet-undecodable intf_type={type} intf_id={id} why={why}",
                                     type=ind.intf_type, id=ind.intf_id, why=str(exc))
            return
        if ind.intf_type == "nni":
            self._from_nni(frame)
            return
        onu = self.by_id.get((ind.intf_id, ind.onu_id))
        if onu is None or not onu.up:
            log.debug("builtin-adapter-packet-ignored pon={pon} onu_id={onu_id}", pon=ind.intf_id,
                      onu_id=ind.onu_id)
            return
        if frame.kind == "eapol":
            self._authenticate(onu, ind, frame)
        elif frame.kind == "dhcp":
            self._relay_up(onu, frame)

    def _packet_out(self, onu: AdapterOnu, uni_id: int, gem: int, pkt: bytes) -> bool:
        return self._rpc("OnuPacketOut", openolt_pb2.OnuPacket(
            intf_id=onu.pon, onu_id=onu.onu_id, port_no=uni_port_no(onu.pon, onu.onu_id, uni_id),
            gemport_id=gem, pkt=pkt), onu)

    def _authenticate(self, onu: AdapterOnu, ind, frame: f.Frame) -> None:
        """The authenticator's side of one EAPOL frame from a UNI."""
        mac, eapol, eap = frame.eth.src, frame.eapol, frame.eap
        if eapol.type == f.EAPOL_START:
            self.sessions.pop(mac, None)
            if len(self.sessions) >= MAX_SESSIONS:
                del self.sessions[next(iter(self.sessions))]
            session = self.sessions[mac] = _Session(eap_id=1)
            self._packet_out(onu, ind.uni_id, ind.gemport_id,
                             identity_request_frame(mac, session.eap_id, self.authenticator_mac))
            return
        session = self.sessions.get(mac)
        if eap is None or eap.code != f.EAP_RESPONSE or session is None or eap.id != session.eap_id:
            log.debug("builtin-adapter-eapol-ignored serial={serial} uni={uni}", serial=onu.serial,
                      uni=ind.uni_id)
            return
        if eap.type == f.EAP_TYPE_IDENTITY:
            session.eap_id = (session.eap_id + 1) & 0xFF
            session.challenge = self.random.randbytes(CHALLENGE_SIZE)
            self._packet_out(onu, ind.uni_id, ind.gemport_id,
                             md5_request_frame(mac, session.eap_id, session.challenge, self.authenticator_mac))
        elif eap.type == f.EAP_TYPE_MD5:
            secret = self.eap_secret if self.forwards(onu.serial, ind.uni_id) else PASSWORD
            expected = bytes((CHALLENGE_SIZE,)) + md5_response(eap.id, session.challenge, secret)
            del self.sessions[mac]
            if eap.data[:len(expected)] != expected:
                self.frame_warnings.warn("builtin-adapter-eapol-rejected",
                                         "builtin-adapter-eapol-rejected serial={serial} uni={uni} why={why}",
                                         serial=onu.serial, uni=ind.uni_id, why="the MD5 response does not match")
                self._packet_out(onu, ind.uni_id, ind.gemport_id, failure_frame(mac, eap.id, self.authenticator_mac))
                return
            if self._packet_out(onu, ind.uni_id, ind.gemport_id, success_frame(mac, eap.id, self.authenticator_mac)):
                model = self._model(onu)
                if model is not None and 0 <= ind.uni_id < len(model.unis):
                    self._dhcp_flows(onu, model.unis[ind.uni_id])
                    self._check_ready(onu)

    def _ask_identity(self, onu: AdapterOnu, uni_id: int, gem: int, svc) -> None:
        """A bound UNI's port is up (again): as an 802.1X authenticator does, ask its supplicant who it is (EAP-Request/
        Identity to its MAC), so that a real supplicant authenticates again after an ONU power cycle (a wired
        wpa_supplicant does not restart by itself when its link comes back)."""
        mac = f.mac_bytes(svc.mac)
        session = self.sessions[mac] = _Session(eap_id=1)
        self._packet_out(onu, uni_id, gem, identity_request_frame(mac, session.eap_id, self.authenticator_mac))

    def _relay_up(self, onu: AdapterOnu, frame: f.Frame) -> None:
        """A DHCP Discover or Request from a UNI to the NNI, with the service's S-tag pushed (of its upstream S-tag
        priority, as dhcpl2relay sets it; the C-tag keeps the one the ONU gave it)."""
        if frame.dhcp.op != f.BOOTREQUEST:
            return
        known = self.by_mac.get(frame.eth.src)
        if known is None:
            self.frame_warnings.warn("builtin-adapter-dhcp-unknown-client",
                                     "builtin-adapter-dhcp-unknown-client serial={serial} mac={mac}",
                                     serial=onu.serial, mac=f.mac_str(frame.eth.src))
            return
        _, uni_id, index = known
        svc = self.olt.onu_by_serial(onu.serial).unis[uni_id].services[index]
        eth = frame.eth
        tags = (f.VlanTag(svc.s_tag, svc.spec.us_pon_s_tag_priority),) + eth.tags   # dhcpl2relay's S-tag p-bit
        self._rpc("UplinkPacketOut", openolt_pb2.UplinkPacket(
            intf_id=NNI, pkt=f.build_ethernet(eth.dst, eth.src, eth.ethertype, eth.payload, tags, pad=False)), onu)

    def _from_nni(self, frame: f.Frame) -> None:
        """A DHCP answer from the NNI back to its client's UNI, without the outer tag."""
        if frame.kind != "dhcp" or frame.dhcp.op != f.BOOTREPLY:
            return
        eth = frame.eth
        known = self.by_mac.get(eth.dst) or self.by_mac.get(frame.dhcp.client_mac)
        if known is None:
            self.frame_warnings.warn("builtin-adapter-dhcp-unknown-client",
                                     "builtin-adapter-dhcp-unknown-client mac={mac}", mac=f.mac_str(eth.dst))
            return
        onu, uni_id, index = known
        if not onu.up:
            return
        ids = onu.unis.get(uni_id)
        gem = ids.gems.get(index, 0) if ids is not None else 0
        if self._packet_out(onu, uni_id, gem, f.build_ethernet(eth.dst, eth.src, eth.ethertype, eth.payload,
                                                                eth.tags[1:], pad=False)):
            if frame.dhcp.message_type == f.DHCP_ACK:
                self._check_ready(onu)


# ---- the data plane's OMCI and flows, as VOLTHA's ONU and OLT adapters write them -----------------------------------

def _u16(value: int) -> bytes:
    return value.to_bytes(2, "big")


def _mask(*indexes: int) -> bytes:
    return _u16(codec.mask_of(indexes))


def evtocd_untagged_rule(vid: int) -> bytes:
    """One 16-byte row of the EVTOCD received frame VLAN tagging operation table (G.988 9.3.13): untagged frames
    (outer and inner filter priority 15, no VID, TPID or EtherType filter) get one tag pushed, priority 0, `vid`,
    TPID 0x8100 (treatment TPID/DE 4: 0x8100, DEI copied), no tag removed."""
    no_tag = 15 << 28 | 4096 << 15
    return b"".join(word.to_bytes(4, "big") for word in (
        no_tag, no_tag, 15 << 16, 0 << 16 | (vid & 0x1FFF) << 3 | 4))


def vtfd_list(vids) -> bytes:
    """The 12-entry VLAN filter list of a VLAN tagging filter data ME (G.988 9.3.11), unused entries 0."""
    vids = list(vids)[:12]
    return b"".join(_u16(vid) for vid in vids + [0] * (12 - len(vids)))


def bridge_requests(uni, ids: _UniIds) -> list:
    """The OMCI that puts a UNI on a MAC bridge towards its GEM ports and tags its upstream frames as its services
    say, in VOLTHA's order and numbering: MAC bridge service profile, the UNI-side bridge port (PPTP); per
    technology profile its 802.1p mapper, its ANI-side bridge port (mapper), the GEM interworking TP of its GEM
    port, the mapper's p-bit pointers (the p-bits of its services' upstream priorities, all when they set none)
    and the VLAN tagging filter of its port (its services' C-tags, EAPOL's 4091 alone until authenticated; none
    when a service takes any C-tag); then the EVTOCD on the PPTP (created, TPIDs and downstream mode set, then one
    rule per service: oltsim.southbound.workflows.evtocd_rule, EAPOL's 4091 pushed first when it needs EAPOL)."""
    bridge = MBSP_BASE + uni.id
    name = f"uni-{uni.id}"
    services = wf.services_of(uni)
    requests = [
        # spanning tree off, learning on, port bridging on, priority, max age, hello, forward delay, unknown MAC
        # discard off, learning depth, ageing time
        _Request(f"bridge-{name}", codec.CREATE, MAC_BRIDGE_SERVICE_PROFILE, bridge,
                 bytes((0, 1, 1)) + _u16(0x8000) + _u16(0x1400) + _u16(0x0200) + _u16(0x0F00) + bytes((0, 0))
                 + (300).to_bytes(4, "big")),
        _Request(f"uni-port-{name}", codec.CREATE, MAC_BRIDGE_PORT_CONFIG, bridge,
                 _u16(bridge) + bytes((0, TP_TYPE_PPTP)) + _u16(uni.me_id) + _u16(0) + _u16(1) + bytes((0, 0, 0))),
    ]
    for n, (tp, members) in enumerate(wf.profiles(services).items()):
        gem = ids.tp_gems.get(tp)
        if gem is None:
            continue
        mapper, ani_port = MAPPER_BASE + uni.id + tp, ANI_PORT_BASE + uni.me_id + tp
        suffix = name if n == 0 else f"{name}-tp{tp}"
        requests += [
            _Request(f"mapper-{suffix}", codec.CREATE, DOT1P_MAPPER, mapper,
                     _u16(NULL_POINTER) + _u16(NULL_POINTER) * 8 + bytes((0, 0, 0))),
            _Request(f"ani-port-{suffix}", codec.CREATE, MAC_BRIDGE_PORT_CONFIG, ani_port,
                     _u16(bridge) + bytes((1 + uni.id, TP_TYPE_MAPPER)) + _u16(mapper) + _u16(0) + _u16(1)
                     + bytes((0, 0, 0))),
            _Request(f"gem-iw-{gem}", codec.CREATE, GEM_INTERWORKING_TP, gem,
                     _u16(gem) + bytes((IW_OPTION_MAPPER,)) + _u16(mapper) + _u16(0) + _u16(GAL_ETHERNET_PROFILE)),
        ]
        bits = wf.pbits(members)
        requests.append(_Request(f"mapper-pbits-{suffix}", codec.SET, DOT1P_MAPPER, mapper,
                                 _mask(*range(2, 10)) + b"".join(_u16(gem if p in bits else NULL_POINTER)
                                                                 for p in range(8))))
        vids = wf.filter_vids(members, authenticated=False)
        if vids is not None:
            requests.append(_Request(f"vlan-filter-{suffix}", codec.CREATE, VLAN_TAGGING_FILTER, ani_port,
                                     vtfd_list(vids) + bytes((VTFD_FORWARD_OPERATION, len(vids)))))
    requests.append(_Request(f"evtocd-{name}", codec.CREATE, EVTOCD, bridge,
                             bytes((EVTOCD_ASSOCIATION_PPTP,)) + _u16(uni.me_id)))
    requests.append(_Request(f"evtocd-tpid-{name}", codec.SET, EVTOCD, bridge,
                             _mask(3, 4, 5) + _u16(TPID) + _u16(TPID) + bytes((0,))))
    for svc in services:
        rule = wf.evtocd_rule(svc, EAPOL_VID if svc.eapol else None)
        if rule is not None:
            suffix = name if svc.index == 0 else f"{name}-{svc.name}"
            requests.append(_Request(f"evtocd-rule-{suffix}", codec.SET, EVTOCD, bridge, _mask(6) + rule))
    return requests


def vlan_requests(uni, ids: _UniIds) -> list:
    """The OMCI that changes what a bound UNI's ONU tags an authenticated service's upstream frames with, from
    EAPOL's 4091 to its C-tag (the rule is replaced: EVTOCD rows are keyed by their filter), and lets [4091, C-tags]
    through its profile's bridge port filter."""
    services = wf.services_of(uni)
    requests = []
    for tp, members in wf.profiles(services).items():
        if not any(s.eapol for s in members):
            continue
        vids = wf.filter_vids(members)
        if vids is not None:
            requests.append(_Request(f"vlan-filter-set-uni-{uni.id}", codec.SET, VLAN_TAGGING_FILTER,
                                     ANI_PORT_BASE + uni.me_id + tp, _mask(1, 3) + vtfd_list(vids)
                                     + bytes((len(vids),))))
    for svc in services:
        rule = wf.evtocd_rule(svc) if svc.eapol else None
        if rule is not None:
            requests.append(_Request(f"evtocd-rule-set-uni-{uni.id}", codec.SET, EVTOCD, MBSP_BASE + uni.id,
                                     _mask(6) + rule))
    return requests


def nni_dhcp_trap_flow() -> openolt_pb2.Flow:
    """The NNI's DHCP trap flow (UDP 67 -> 68 to the adapter), on no PON, ONU or UNI, as VOLTHA installs it for
    dhcpl2relay: the server's answers reach the adapter as packet indications on the NNI."""
    return openolt_pb2.Flow(
        access_intf_id=-1, onu_id=-1, uni_id=-1, flow_id=NNI_DHCP_FLOW_ID, flow_type="downstream",
        network_intf_id=NNI, alloc_id=-1, gemport_id=-1, port_no=0, priority=10000, cookie=NNI_DHCP_FLOW_ID,
        classifier=openolt_pb2.Classifier(eth_type=f.ETH_IPV4, ip_proto=f.IP_PROTO_UDP, src_port=f.DHCP_SERVER_PORT,
                                          dst_port=f.DHCP_CLIENT_PORT, pkt_tag_type="double_tag",
                                          o_pbits=ANY_PBITS),     # any p-bit (TT's VoIP answers come with 7)
        action=openolt_pb2.Action(cmd=openolt_pb2.ActionCmd(trap_to_host=True)))
