"""BBSim's `bbr` (BroadBand Reflector) played by an in-repo adapter, over real gRPC (bbsim-reference.md 4.6).

What BBR does, step by step, and what this adapter does the same way:

1. GetDeviceInfo (10 s deadline), then EnableIndication; OltInd, IntfInd, IntfOperInd, port and flow statistics
   and AlarmInd are ignored.
2. Each OnuDiscInd: the serial must be one the adapter knows, the ONU gets the next id of its PON (1, 2, ... in
   arrival order) and is activated (ActivateOnu, pir 1000000).
3. Each OnuInd starts OMCI for that ONU: MIB Reset -> MIB Upload -> MIB Upload Next with sequence numbers
   0 .. 226 (BBR's own count for 4 UNIs; the NumberOfCommands of the upload response is not used) -> Set on PPTP
   0x0101 AdministrativeState 0 (mask 0x0800). OmciInd must carry raw binary frames; an AlarmNotification is
   tolerated anywhere, any other message type than the one awaited is a failure.
4. On the Set response: FlowAdd of BBR's EAPOL trap flow (flow id, port_no, cookie, alloc id and GEM port all equal
   the ONU id, o_vid 4091, eth_type 0x888e).
5. The authenticator side of EAPOL, to MAC 2e:<olt>:<pon>:<onu id>:00:00 with OnuPacketOut(port_no = onu id,
   gemport 1): EAPOL-Start -> Identity Request (id 1); Identity Response -> MD5 Challenge; Challenge Response ->
   EAP-Success, then FlowAdd of the DHCP trap flow under the SAME flow id (eth_type 0x800, 68 -> 67, o_vid = the
   hsia C-tag of UNI 0, o_pbits 255). PON PktInds find their ONU through `port_no`, which BBR takes for the ONU id.
6. DHCP relay: a PON PktInd Discover/Request loses its tag, gets two (900/900, priority 0) and goes out with
   UplinkPacketOut; an NNI PktInd Offer/Ack loses its outer tag and goes back to the ONU owning its destination
   MAC with OnuPacketOut. An ONU is done when its Ack has been forwarded.
7. When every ONU is done: `bbsim.BBSim/GetServices` on the v1 endpoint; each service on UNI 0 must be in
   `eap_response_success_received` and `dhcp_ack_received`. The result is "N ONUs matching expected state".

It works as BBR does, on every ONU at once: one thread reads the indication stream and reacts to each indication
by starting the next call as a gRPC future, so no ONU waits for another (at most `max_in_flight` calls are
outstanding, the rest wait in a queue, which keeps this Python client's work per indication small; the server
itself queues thousands, as BBR's Go client needs at 2048 ONUs). Everything is bounded: every call has a
deadline and the whole run a timeout; the first failure ends the run with an AssertionError that says what went
wrong and where every unfinished ONU stopped. Where BBR would only log (a wrong OMCI result, a frame it cannot
decode, an indication for an ONU it does not know), this adapter fails: it is a test, not a load generator.

BBR builds its own copy of the OLT model from the same flags; this adapter reads the simulator's instead before
it connects (`load_model`: the serials and each ONU's UNI-0 hsia C-tag, from GetServices).
"""
from __future__ import annotations

import hashlib
import threading
import time
from collections import deque
from dataclasses import dataclass

import grpc
from voltha_protos import openolt_pb2

from oltsim._proto import bbsim_pb2, bbsim_pb2_grpc
from oltsim.omci import codec
from oltsim.packets import frames
from scripted_adapter import ActiveOnu, ScriptedAdapter, kind, serial_of

#: MIB Upload Next requests BBR sends: its own MIB's baseline count for 4 UNIs, no POTS (reference 4.4).
MIB_COMMANDS = 227
PPTP_UNI_0 = 0x0101
ADMIN_STATE = 5                      # PPTP Ethernet UNI attribute 5, mask 0x0800
SET_TID = 1                          # BBR sends its Set with transaction id 1
PIR = 1000000
EAPOL_PACKET_OUT_GEM = 1             # BBR's OnuPacketOut always names GEM port 1
RELAY_TAG = 900                      # BBR double-tags relayed DHCP 900/900, priority 0
EAP_PASSWORD = b"password"
#: Calls outstanding at once; more wait in a queue on this side. (The server accepts thousands pending, see
#: oltsim.serving.grpcserver.MAX_PENDING_CALLS; grpcio's default refused streams beyond 1000, which BBR found at 2048 ONUs.)
MAX_IN_FLIGHT = 128

EXPECTED_EAPOL = "eap_response_success_received"
EXPECTED_DHCP = "dhcp_ack_received"

# The response each OMCI step waits for (message type with AK).
_AWAITED = {
    "mib-reset": codec.AK | codec.MIB_RESET,
    "mib-upload": codec.AK | codec.MIB_UPLOAD,
    "mib-upload-next": codec.AK | codec.MIB_UPLOAD_NEXT,
    "set-pptp": codec.AK | codec.SET,
}


def bbr_mac(olt_id: int, pon: int, onu_id: int) -> bytes:
    """The MAC BBR addresses an ONU's EAPOL with: 2e:<olt>:<pon>:<onu id>:<uni 0>:<service 0>. Above 255 ONUs per
    PON, where BBR (and BBSim) wrap and collide, the first byte's high nibble carries onu id >> 8 (0x3e, ...), as
    oltsim's ONU MACs do (oltsim.model.onu.service_mac), so that 16x256 bring-ups can be driven."""
    first = (((2 + (onu_id >> 8)) % 16) << 4) | 0x0E
    return bytes((first, olt_id & 0xFF, pon & 0xFF, onu_id & 0xFF, 0, 0))


# ---- BBR's frames -------------------------------------------------------------------------------------------

def _eapol_to(mac: bytes, eap: bytes) -> bytes:
    # BBR serializes without padding; source and destination are both the ONU's MAC.
    return frames.build_ethernet(mac, mac, frames.ETH_EAPOL, frames.build_eapol(frames.EAPOL_EAP, eap), pad=False)


def identity_request(mac: bytes) -> bytes:
    """EAP-Request/Identity id 1, carrying "user" as BBR's does (EAP length 9)."""
    return _eapol_to(mac, frames.build_eap(frames.EAP_REQUEST, 1, frames.EAP_TYPE_IDENTITY, b"user"))


def md5_challenge(mac: bytes, identity_response: frames.Frame) -> bytes:
    """EAP-Request/MD5-Challenge answering an Identity Response: same id, value size 16 and BBR's value,
    MD5(id || "password" || the response's EAP octets from offset 6)."""
    eap = identity_response.eap
    value = hashlib.md5(bytes((eap.id,)) + EAP_PASSWORD + identity_response.eapol.body[6:]).digest()
    return _eapol_to(mac, frames.build_eap(frames.EAP_REQUEST, eap.id, frames.EAP_TYPE_MD5, b"\x10" + value))


def eap_success(mac: bytes, eap_id: int) -> bytes:
    """EAP-Success as BBR serializes it: EAP length 9, type 0 and "user" after the header."""
    return _eapol_to(mac, bytes((frames.EAP_SUCCESS, eap_id & 0xFF, 0, 9, 0)) + b"user")


def pop_tag(pkt: bytes) -> bytes:
    """The frame without its outer VLAN tag; PacketError when it has none (BBR: "Can't untag packet")."""
    eth = frames.parse_ethernet(pkt)
    if not eth.tags:
        raise frames.PacketError("the DHCP frame carries no VLAN tag to pop")
    return frames.build_ethernet(eth.dst, eth.src, eth.ethertype, eth.payload, eth.tags[1:], pad=False)


def push_double_tag(pkt: bytes, outer: int = RELAY_TAG, inner: int = RELAY_TAG) -> bytes:
    """The frame with two more tags in front (outer first), priority 0."""
    eth = frames.parse_ethernet(pkt)
    tags = (frames.VlanTag(outer, 0), frames.VlanTag(inner, 0)) + eth.tags
    return frames.build_ethernet(eth.dst, eth.src, eth.ethertype, eth.payload, tags, pad=False)


# ---- the adapter --------------------------------------------------------------------------------------------

@dataclass(eq=False)
class BbrOnu(ActiveOnu):
    """One ONU as BBR tracks it: where it is, the id it was given, its MAC and hsia C-tag, and how far it got."""
    mac: bytes = b""
    c_tag: int = 0
    step: str = "activating"
    tid: int = 0
    seq: int = 0
    reported_commands: int | None = None
    done: bool = False

    def next_tid(self) -> int:
        self.tid = self.tid % 0x7FFF + 1
        return self.tid


class BbrAdapter(ScriptedAdapter):
    """BBR's whole sequence against the OpenOLT endpoint `address`, checked on the v1 gRPC endpoint `grpc_v1`.

    `run()` returns "N ONUs matching expected state" or raises AssertionError. `connected_at`, `completed_at` and
    `checked_at` (time.monotonic) mark GetDeviceInfo, the last ONU done and the end of the final check.
    """

    def __init__(self, address: str, grpc_v1: str, *, olt_id: int = 0, mib_commands: int = MIB_COMMANDS,
                 call_timeout: float = 10.0, max_in_flight: int = MAX_IN_FLIGHT):
        super().__init__(address, call_timeout=call_timeout)
        self.max_in_flight = max_in_flight
        self._in_flight = 0
        self._queued: deque = deque()
        self.grpc_v1 = grpc_v1
        self.olt_id = olt_id
        self.mib_commands = mib_commands
        self.c_tags: dict[str, int] = {}
        self.by_serial: dict[str, BbrOnu] = {}
        self.by_id: dict[tuple[int, int], BbrOnu] = {}
        self.by_mac: dict[bytes, BbrOnu] = {}
        self.failures: list[str] = []
        self.alarms = 0
        self.completed = 0
        self.connected_at = self.completed_at = self.checked_at = None
        self._lock = threading.Lock()
        self._finished = threading.Event()
        self._call = None
        self._reader: threading.Thread | None = None

    # ---- what BBR knows before it connects ------------------------------------------------------------

    def services(self) -> bbsim_pb2.Services:
        """GetServices(OnuSerialNumber "", UniID "") on the v1 endpoint: every service of every ONU."""
        with grpc.insecure_channel(self.grpc_v1) as channel:
            return bbsim_pb2_grpc.BBSimStub(channel).GetServices(
                bbsim_pb2.UNIRequest(OnuSerialNumber="", UniID=""), timeout=self.call_timeout)

    def load_model(self) -> dict[str, int]:
        """The serials of the OLT and the C-tag of each ONU's first service on UNI 0 (BBR's hsia)."""
        for service in self.services().items:
            if service.UniId == 0:
                # Keyed as serial_of writes serials from indications (upper-case hex; the API answers lower-case).
                self.c_tags.setdefault(service.OnuSn[:4] + service.OnuSn[4:].upper(), service.CTag)
        return self.c_tags

    # ---- running --------------------------------------------------------------------------------------

    def run(self, timeout: float = 60.0, keep_stream: bool = False) -> str:
        """Play BBR's sequence for every ONU of the model, then check the services; bounded by `timeout`.

        BBR closes its connection when done, and so does this by default; with `keep_stream` a successful run
        leaves the indication stream open (later indications are read and ignored) until `close_stream()`, as an
        adapter that stays connected would."""
        if not self.c_tags:
            self.load_model()
        target = len(self.c_tags)
        deadline = time.monotonic() + timeout
        self.connected_at = time.monotonic()
        info = self.get_device_info()
        if not info.pon_ports:
            raise AssertionError(f"GetDeviceInfo reports no PON port: {info}")
        self._call = self.stub.EnableIndication(openolt_pb2.Empty())
        self._reader = threading.Thread(target=self._read, name="bbr-indications", daemon=True)
        self._reader.start()
        try:
            if target == 0:
                self._finished.set()
            self._finished.wait(max(0.0, deadline - time.monotonic()))
            if self.failures:
                raise AssertionError(self._report(self.failures[0]))
            if self.completed < target:
                raise AssertionError(self._report(f"{self.completed} of {target} ONUs done within {timeout:g} s"))
            result = self._validate(target)
        except BaseException:
            self.close_stream()
            raise
        if not keep_stream:
            self.close_stream()
        return result

    def close_stream(self) -> None:
        """End the indication stream (CANCELLED, as BBR closing its connection) and the thread reading it."""
        self._finished.set()
        if self._call is not None:
            self._call.cancel()
        if self._reader is not None:
            self._reader.join(self.call_timeout)

    def close(self) -> None:
        """End the stream (if still open) and close the channel."""
        self.close_stream()
        super().close()

    def _validate(self, target: int) -> str:
        services = self.services()
        onus = set()
        for service in services.items:
            if service.UniId != 0:
                continue            # BBR drives UNI 0 only
            if service.EapolState != EXPECTED_EAPOL or service.DhcpState != EXPECTED_DHCP:
                raise AssertionError(f"Not matching expected state: ONU {service.OnuSn} service {service.Name} "
                                     f"UNI 0 EapolState {service.EapolState} DhcpState {service.DhcpState}")
            onus.add(service.OnuSn)
        self.checked_at = time.monotonic()
        if len(onus) != target:
            raise AssertionError(f"GetServices lists UNI-0 services of {len(onus)} ONUs, expected {target}")
        # BBR prints len(items)/4 (4 UNIs of one service each); counting ONUs says the same without assuming it.
        return f"{len(onus)} ONUs matching expected state"

    def _report(self, reason: str) -> str:
        with self._lock:
            stuck: dict[str, list[str]] = {}
            for onu in self.by_serial.values():
                if not onu.done:
                    stuck.setdefault(onu.step, []).append(onu.serial)
            missing = sorted(set(self.c_tags) - set(self.by_serial))
        lines = [f"BBR failed: {reason}"]
        if len(self.failures) > 1:
            lines.append(f"({len(self.failures) - 1} more failures, e.g. {self.failures[1]})")
        for step, serials in sorted(stuck.items()):
            more = " ..." if len(serials) > 5 else ""
            lines.append(f"  {len(serials)} ONUs at {step}: {', '.join(serials[:5])}{more}")
        if missing:
            lines.append(f"  {len(missing)} ONUs never discovered: {', '.join(missing[:5])}")
        if self._call is not None and self._reader is not None and not self._reader.is_alive():
            lines.append("  the indication stream had ended")
        return "\n".join(lines)

    def _fail(self, message: str) -> None:
        with self._lock:
            self.failures.append(message)
        self._finished.set()

    def _done(self, onu: BbrOnu) -> None:
        with self._lock:
            if onu.done:
                return
            onu.done = True
            onu.step = "done"
            self.completed += 1
            if self.completed == len(self.c_tags):
                self.completed_at = time.monotonic()
                self._finished.set()

    # ---- calls --------------------------------------------------------------------------------------

    def _send(self, what: str, onu: BbrOnu | None, method, request, then=None) -> None:
        """Start `method(request)` as a future, or queue it while `max_in_flight` calls are outstanding; a failed
        call fails the run, a successful one runs `then`. Never blocks (it runs on the reader and in callbacks)."""
        def start():
            try:
                method.future(request, timeout=self.call_timeout).add_done_callback(finished)
            except Exception as exc:  # the channel closed under a queued call (the run already ended)
                self._release()
                self._fail(f"{what} could not start: {exc!r}")

        def finished(f):
            self._release()
            error = f.exception()
            if error is not None:
                where = f" for {onu.serial} (PON {onu.pon}, ONU id {onu.onu_id})" if onu is not None else ""
                code = error.code() if isinstance(error, grpc.Call) else None
                details = error.details() if isinstance(error, grpc.Call) else str(error)
                self._fail(f"{what}{where} failed: {code}: {details}")
            elif then is not None:
                try:
                    then()
                except Exception as exc:  # a bug of this adapter must end the run, not vanish in a callback
                    self._fail(f"after {what}: {exc!r}")

        with self._lock:
            if self._in_flight >= self.max_in_flight:
                self._queued.append(start)
                return
            self._in_flight += 1
        start()

    def _release(self) -> None:
        """A call ended: start the oldest queued one in its place."""
        with self._lock:
            if self._finished.is_set():
                self._queued.clear()        # the run is over: what waits is never sent
            if not self._queued:
                self._in_flight -= 1
                return
            start = self._queued.popleft()
        start()

    def _omci(self, onu: BbrOnu, step: str, message_type: int, me_class: int, me_id: int, contents=b"",
              tid: int | None = None) -> None:
        onu.step = step
        pkt = codec.encode(onu.next_tid() if tid is None else tid, message_type, me_class, me_id, contents)
        # OmciMsgOut carries hex text, as VOLTHA sends it.
        self._send(f"OmciMsgOut {step}", onu, self.stub.OmciMsgOut,
                   openolt_pb2.OmciMsg(intf_id=onu.pon, onu_id=onu.onu_id, pkt=pkt.hex().encode("ascii")))

    def _packet_out(self, what: str, onu: BbrOnu, pkt: bytes, then=None) -> None:
        self._send(f"OnuPacketOut {what}", onu, self.stub.OnuPacketOut,
                   openolt_pb2.OnuPacket(intf_id=onu.pon, onu_id=onu.onu_id, port_no=onu.onu_id,
                                         gemport_id=EAPOL_PACKET_OUT_GEM, pkt=pkt), then)

    # ---- the indication stream ----------------------------------------------------------------------

    def _read(self) -> None:
        try:
            for indication in self._call:
                if self._finished.is_set():
                    continue        # done (or failed): what still arrives is read and ignored
                try:
                    self._dispatch(indication)
                except Exception as exc:
                    self._fail(f"handling {kind(indication)}: {exc!r}")
        except grpc.RpcError as exc:
            if not self._finished.is_set():
                self._fail(f"the indication stream ended: {exc.code()}: {exc.details()}")
            return
        if not self._finished.is_set():
            self._fail("the indication stream ended (EOF) before every ONU was done")

    def _dispatch(self, indication) -> None:
        name = kind(indication)
        if name == "onu_disc_ind":
            self._on_discovery(indication.onu_disc_ind)
        elif name == "onu_ind":
            self._on_onu_ind(indication.onu_ind)
        elif name == "omci_ind":
            self._on_omci(indication.omci_ind)
        elif name == "pkt_ind":
            self._on_packet(indication.pkt_ind)
        # OltInd, IntfInd, IntfOperInd, PortStats, FlowStats and AlarmInd: BBR only logs them.

    def _on_discovery(self, disc) -> None:
        serial = serial_of(disc.serial_number)
        if serial not in self.c_tags:
            self._fail(f"Cannot find ONU {serial} (OnuDiscInd on PON {disc.intf_id})")
            return
        if serial in self.by_serial:
            self._fail(f"OnuDiscInd again for {serial}, already given ONU id {self.by_serial[serial].onu_id}")
            return
        onu_id = self._next_id.get(disc.intf_id, 0) + 1
        self._next_id[disc.intf_id] = onu_id
        onu = BbrOnu(serial, disc.intf_id, onu_id, mac=bbr_mac(self.olt_id, disc.intf_id, onu_id),
                     c_tag=self.c_tags[serial])
        with self._lock:
            self.by_serial[serial] = onu
            self.by_id[(onu.pon, onu_id)] = onu
            self.by_mac[onu.mac] = onu
        self._send("ActivateOnu", onu, self.stub.ActivateOnu,
                   openolt_pb2.Onu(intf_id=onu.pon, onu_id=onu_id, serial_number=disc.serial_number, pir=PIR))

    def _on_onu_ind(self, ind) -> None:
        serial = serial_of(ind.serial_number)
        onu = self.by_serial.get(serial)
        if onu is None:
            self._fail(f"Cannot find ONU {serial} (OnuInd before its OnuDiscInd)")
            return
        if (ind.intf_id, ind.onu_id) != (onu.pon, onu.onu_id):
            self._fail(f"OnuInd for {serial} names PON {ind.intf_id} ONU id {ind.onu_id}, "
                       f"activated as PON {onu.pon} ONU id {onu.onu_id}")
            return
        if onu.step != "activating":
            self._fail(f"OnuInd {ind.oper_state} again for {serial} while at {onu.step}")
            return
        self._omci(onu, "mib-reset", codec.AR | codec.MIB_RESET, codec.ONU_DATA, 0)

    def _on_omci(self, ind) -> None:
        onu = self.by_id.get((ind.intf_id, ind.onu_id))
        if onu is None:
            self._fail(f"OmciInd from unknown ONU id {ind.onu_id} on PON {ind.intf_id}")
            return
        try:
            frame = codec.parse(bytes(ind.pkt))
        except codec.OmciError as exc:
            self._fail(f"OmciInd from {onu.serial} is not a raw OMCI frame ({exc}): {bytes(ind.pkt)[:16]!r}")
            return
        if frame.message_type == codec.ALARM_NOTIFICATION:
            with self._lock:
                self.alarms += 1          # BBR: bbr-received-alarm
            return
        awaited = _AWAITED.get(onu.step)
        if frame.message_type != awaited:
            self._fail(f"unexpected OMCI message type 0x{frame.message_type:02x} from {onu.serial} at {onu.step} "
                       f"(awaiting {'nothing' if awaited is None else f'0x{awaited:02x}'})")
            return
        step = onu.step
        if step in ("mib-reset", "set-pptp") and frame.u8(0) != codec.SUCCESS:
            self._fail(f"{step} of {onu.serial} answered result {frame.u8(0)}")
            return
        if step == "mib-reset":
            self._omci(onu, "mib-upload", codec.AR | codec.MIB_UPLOAD, codec.ONU_DATA, 0)
        elif step == "mib-upload":
            onu.reported_commands = frame.u16(0)
            onu.seq = 0
            self._upload_next(onu)
        elif step == "mib-upload-next":
            onu.seq += 1
            if onu.seq < self.mib_commands:
                self._upload_next(onu)
            else:
                contents = codec.attribute_bit(ADMIN_STATE).to_bytes(2, "big") + b"\x00"
                self._omci(onu, "set-pptp", codec.AR | codec.SET, codec.PPTP_ETHERNET_UNI, PPTP_UNI_0, contents,
                           tid=SET_TID)
        else:
            onu.step = "eapol-flow"
            self._send("FlowAdd EAPOL", onu, self.stub.FlowAdd, self.eapol_flow(onu))

    def _upload_next(self, onu: BbrOnu) -> None:
        self._omci(onu, "mib-upload-next", codec.AR | codec.MIB_UPLOAD_NEXT, codec.ONU_DATA, 0,
                   onu.seq.to_bytes(2, "big"))

    def _on_packet(self, ind) -> None:
        try:
            frame = frames.decode(bytes(ind.pkt))
        except frames.PacketError as exc:
            self._fail(f"PktInd ({ind.intf_type} {ind.intf_id}) cannot be decoded: {exc}")
            return
        if ind.intf_type == "nni":
            self._from_nni(ind, frame)
            return
        # BBR takes port_no for the ONU id (its flows set port_no = ONU id).
        onu = self.by_id.get((ind.intf_id, ind.port_no))
        if onu is None:
            self._fail(f"Can't find Onu: PktInd on PON {ind.intf_id} with port_no {ind.port_no} "
                       f"(onu_id {ind.onu_id})")
            return
        if frame.kind == "eapol":
            self._authenticate(onu, frame)
        elif frame.kind == "dhcp":
            self._to_nni(onu, ind, frame)
        # Anything else: BBR ignores it ("neither EAPOL or DHCP").

    def _authenticate(self, onu: BbrOnu, frame: frames.Frame) -> None:
        eapol, eap = frame.eapol, frame.eap
        if eapol.type == frames.EAPOL_START:
            if frame.eth.src != onu.mac:
                self._fail(f"EAPOL-Start of {onu.serial} comes from {frames.mac_str(frame.eth.src)}; BBR addresses "
                           f"{frames.mac_str(onu.mac)} (2e:<olt>:<pon>:<onu id>:00:00)")
                return
            onu.step = "eap-identity"
            self._packet_out("EAP Identity Request", onu, identity_request(onu.mac))
        elif eap is not None and eap.code == frames.EAP_RESPONSE and eap.type == frames.EAP_TYPE_IDENTITY:
            onu.step = "eap-challenge"
            self._packet_out("EAP MD5 Challenge", onu, md5_challenge(onu.mac, frame))
        elif eap is not None and eap.code == frames.EAP_RESPONSE and eap.type == frames.EAP_TYPE_MD5:
            onu.step = "eap-success"

            def dhcp_flow():
                # BBR pushes the DHCP flow once EAP-Success is out, under the same flow id (an overwrite).
                onu.step = "dhcp-flow"
                self._send("FlowAdd DHCP", onu, self.stub.FlowAdd, self.dhcp_flow(onu, onu.c_tag))

            self._packet_out("EAP Success", onu, eap_success(onu.mac, eap.id), then=dhcp_flow)
        else:
            self._fail(f"unexpected EAPOL from {onu.serial} at {onu.step}: {eapol.type_name}"
                       f"{'' if eap is None else f' EAP code {eap.code} type {eap.type}'}")

    def _to_nni(self, onu: BbrOnu, ind, frame: frames.Frame) -> None:
        dhcp = frame.dhcp
        if dhcp.op != frames.BOOTREQUEST or dhcp.message_type not in (frames.DHCP_DISCOVER, frames.DHCP_REQUEST):
            self._fail(f"unexpected DHCP {dhcp.type_name} (op {dhcp.op}) from {onu.serial} on PON {ind.intf_id}")
            return
        try:
            relayed = push_double_tag(pop_tag(bytes(ind.pkt)))
        except frames.PacketError as exc:
            self._fail(f"DHCP {dhcp.type_name} of {onu.serial}: {exc}")
            return
        onu.step = f"dhcp-{dhcp.type_name.lower()}"
        self._send(f"UplinkPacketOut DHCP {dhcp.type_name}", onu, self.stub.UplinkPacketOut,
                   openolt_pb2.UplinkPacket(intf_id=0, pkt=relayed))

    def _from_nni(self, ind, frame: frames.Frame) -> None:
        if frame.kind != "dhcp" or frame.dhcp.op != frames.BOOTREPLY:
            self._fail(f"unexpected {frame.kind} PktInd from NNI {ind.intf_id}")
            return
        onu = self.by_mac.get(frame.eth.dst)
        if onu is None:
            self._fail(f"Can't find ONU with MacAddress {frames.mac_str(frame.eth.dst)} (NNI PktInd)")
            return
        try:
            pkt = pop_tag(bytes(ind.pkt))
        except frames.PacketError as exc:
            self._fail(f"DHCP {frame.dhcp.type_name} to {onu.serial}: {exc}")
            return
        mtype = frame.dhcp.message_type
        onu.step = f"dhcp-{frame.dhcp.type_name.lower()}"
        then = (lambda: self._done(onu)) if mtype == frames.DHCP_ACK else None
        self._packet_out(f"DHCP {frame.dhcp.type_name}", onu, pkt, then)
