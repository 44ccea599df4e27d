"""The OpenOLT southbound: `openolt.Openolt` as a real OLT agent answers it.

One servicer, served on the reactor's own loop through `oltsim.serving.onloop.on_loop` by either engine (pygrpc-native's
front, `oltsim.serving.nativeserver`, or grpc.aio for TLS): every unary method is a plain method that runs inline on the
reactor thread and raises a domain error to refuse; EnableIndication is an async generator reading a queue the
model feeds on the same thread. The in-memory tests drive the same `on_loop` handlers.
"""
from __future__ import annotations

import grpc
from oltsim.logs import Summary, logger
from voltha_protos import common_pb2, extensions_pb2, openolt_pb2, openolt_pb2_grpc, tech_profile_pb2

from oltsim.model import events
from oltsim.model.errors import FailedPrecondition, InvalidArgument
from oltsim.omci.wrappers import receive
from oltsim.openoltpb import check_enums, flow_from_pb, serial_from_pb
from oltsim.serving.onloop import AsyncStreamQueue, StreamQueue
from oltsim.southbound.indications import port_statistics, to_indications
from oltsim.status import abort_for

log = logger("oltsim.southbound")

#: Indications queued for an adapter's stream beyond what the engine holds unsent (STREAM_BACKLOG_LIMIT bytes, about
#: 4,000 of them). A queued Indication costs about 850 bytes of memory (the message objects, for ~40 encoded), so an
#: adapter that stopped reading costs at most about 7 MiB; 65536 cost 55 MiB. A burst of 4096 ONUs discovered at once
#: fits the engine's backlog alone; more is dropped and counted (indications-dropped reason=stream-full).
STREAM_BUFFER = 8192
FLOW_TYPES = ("upstream", "downstream", "multicast", "both")
#: The largest FlowAdd and CreateTrafficSchedulers messages stored (encoded bytes). A flow with every field of
#: openolt.Flow set, 8 p-bits mapped and 8 GEM ports in gemport_to_aes encodes to about 420 bytes (VOLTHA's are about
#: 120), 8 fully set T-CONTs to about 500: the bounds leave room and keep max_flows x MAX_FLOW_BYTES small.
MAX_FLOW_BYTES = 1024
MAX_SCHEDULERS_BYTES = 4096
#: Seconds between two `indications-dropped` lines (each gives the number dropped since the last).
DROP_LOG_INTERVAL = 1.0


def check_size(request, limit: int, what: str) -> None:
    """InvalidArgument when `request` encodes to more than `limit` bytes (it would be stored as it is)."""
    size = request.ByteSize()
    if size > limit:
        raise InvalidArgument(f"{what} may encode to at most {limit} bytes (got {size})")


class IndicationHub:
    """Reactor-side owner of the one indication stream an adapter holds.

    Model events become indications here; with no adapter connected they are
    dropped (counted, each logged at debug, and summed up at info in at most one
    `indications-dropped` line per DROP_LOG_INTERVAL), never queued forever nor blocking.
    """

    def __init__(self, olt):
        self.olt = olt
        self.current: StreamQueue | None = None
        #: the data plane's pipeline whose real frames the port_stats indications count (`count_ports`), or None:
        #: BBSim's counts
        self.traffic = None
        #: The in-process adapter that holds the stream (oltsim.southbound.builtin), or None: while set, an
        #: external EnableIndication is refused.
        self.driver: str | None = None
        self.sent = 0
        self.dropped = 0
        self.drops = Summary(olt.clock, _log_drops, interval=DROP_LOG_INTERVAL)
        olt.subscribe(self._on_event)

    def count_ports(self, traffic) -> None:
        """With the data plane (`traffic`, oltsim.dataplane.pipeline.DataPlane), the periodic port_stats indications
        count its real frames (`traffic_port_statistics`)."""
        self.traffic = traffic

    def open_stream(self, queue: StreamQueue) -> None:
        """A new EnableIndication: the previous stream ends (EOF), this one takes over."""
        self.olt.check_enable()
        previous, self.current = self.current, queue
        if previous is not None:
            previous.close()
        self.olt.enable_indication()

    def close_stream(self, queue: StreamQueue) -> None:
        if self.current is queue:
            self.current = None
            self.olt.indication_stream_closed()
            log.info("indication-stream-closed serial={serial}", serial=self.olt.serial)

    def end_all(self, status=grpc.StatusCode.UNAVAILABLE, details="the OLT is going down") -> None:
        """End the open stream with `status` (server stop, reboot), and log the drops counted so far."""
        queue, self.current = self.current, None
        if queue is not None:
            self.olt.indication_stream_closed()
            queue.close(status, details)
        self.drops.flush()

    def _on_event(self, event) -> None:
        if isinstance(event, events.OpenoltServer) and not event.running:
            self.end_all(grpc.StatusCode.UNAVAILABLE, "the OLT is rebooting")
            return
        if self.traffic is not None and type(event) is events.PortStats:
            counted = traffic_port_statistics(self.traffic, self.olt, event.intf_id, event.timestamp)
            indications = to_indications(event) if counted is None else [openolt_pb2.Indication(port_stats=counted)]
        else:
            indications = to_indications(event)
        if indications:
            self._deliver(indications, event)

    def collect_statistics(self) -> int:
        """With the data plane, the port_stats indication of each NNI and PON it counts, now (CollectStatistics, as
        the OpenOLT agent's stats_collection sends them); how many. Without it nothing (BBSim's CollectStatistics
        does nothing either): the periodic ones go on as before."""
        if self.traffic is None:
            return 0
        now = int(self.olt.clock.seconds())
        counted = [traffic_port_statistics(self.traffic, self.olt, port.port_no, now)
                   for port in (*self.olt.nnis, *self.olt.pons)]
        indications = [openolt_pb2.Indication(port_stats=stats) for stats in counted if stats is not None]
        self._deliver(indications, "CollectStatistics")
        return len(indications)

    def _deliver(self, indications: list, event) -> None:
        queue = self.current
        for indication in indications:
            if queue is not None and queue.put(indication):
                self.sent += 1
            else:
                self.dropped += 1
                reason = "no-adapter" if queue is None else "stream-full"
                self.drops.offer(reason)
                log.debug("indication-dropped reason={reason} event={event!r}", reason=reason, event=event)


def _log_drops(counts: dict) -> None:
    """One `indications-dropped` line per reason with the number dropped in the interval."""
    for reason, count in counts.items():
        plural = "indication" if count == 1 else "indications"
        if reason == "no-adapter":
            log.info("indications-dropped reason={reason} count={count} (no adapter connected: {count} {plural} "
                     "dropped)", reason=reason, count=count, plural=plural)
        else:
            log.warn("indications-dropped reason={reason} count={count} (the adapter's indication stream is full: "
                     "{count} {plural} dropped)", reason=reason, count=count, plural=plural)


class OpenoltServicer(openolt_pb2_grpc.OpenoltServicer):
    """OpenOLT device-level RPCs over the OLT model, on the reactor thread (see the module docstring)."""

    def __init__(self, olt, hub: IndicationHub, capture=None, traffic=None):
        self._olt = olt
        self._hub = hub
        #: the capture ring (oltsim.capture.Capture) told what the adapter sends, None when capture is off
        self._capture = capture
        #: the data plane (oltsim.dataplane.pipeline.DataPlane: gem_statistics, alloc_statistics) whose flows'
        #: counters GetGemPortStatistics and GetAllocIdStatistics report, None when it is off (BBSim's answers)
        self._traffic = traffic

    def _abort(self, context, exc):
        abort_for(context, exc)

    # ---- device ----------------------------------------------------------------------------

    def GetDeviceInfo(self, request, context):
        olt = self._olt
        info = olt.device_info
        msg = openolt_pb2.DeviceInfo(
            vendor=info["vendor"], model=info["model"], hardware_version=info["hardware_version"],
            firmware_version=info["firmware_version"], device_id=info["device_id"],
            device_serial_number=olt.serial, pon_ports=len(olt.pons), nni_ports=len(olt.nnis),
            previously_connected=olt.previously_connected)
        olt.previously_connected = True
        ranges: dict[int, list[int]] = {}
        by_id = {}
        for pon in olt.pons:
            ranges.setdefault(id(pon.ranges), []).append(pon.id)
            by_id[id(pon.ranges)] = pon.ranges
        Pool = openolt_pb2.DeviceInfo.DeviceResourceRanges.Pool
        for key, intf_ids in ranges.items():
            r = by_id[key]
            entry = msg.ranges.add(intf_ids=intf_ids, technology=r.technology)
            entry.pools.add(type=Pool.ONU_ID, sharing=Pool.DEDICATED_PER_INTF,
                            start=r.onu_id_start, end=r.onu_id_end)
            entry.pools.add(type=Pool.ALLOC_ID, sharing=Pool.DEDICATED_PER_INTF,
                            start=r.alloc_id_start, end=r.alloc_id_end)
            entry.pools.add(type=Pool.GEMPORT_ID, sharing=Pool.DEDICATED_PER_INTF,
                            start=r.gemport_id_start, end=r.gemport_id_end)
        return msg

    async def EnableIndication(self, request, context):
        """The adapter's indication stream: the hub takes a bounded queue (ending the previous stream) and the
        model feeds it on this thread; the queue is unregistered however the stream ends. Refused with
        FAILED_PRECONDITION while oltsim's built-in adapter drives the OLT (`hub.driver`)."""
        if self._hub.driver is not None:
            raise FailedPrecondition(
                f"the OLT is driven by oltsim's built-in adapter (oltsim was started with --adapter "
                f"{self._hub.driver}); start oltsim without --adapter {self._hub.driver} to connect VOLTHA")
        self._olt.check_enable()  # refused (OLT rebooting) before it is reported as received
        queue = AsyncStreamQueue(STREAM_BUFFER)
        self._olt.emit(events.OpenoltRequest("EnableIndication"))
        self._hub.open_stream(queue)  # a refusal (OLT not up) raises before anything is streamed
        log.info("indication-stream-opened serial={serial} peer={peer}", serial=self._olt.serial, peer=context.peer())
        try:
            async for indication in queue.items(context):
                yield indication
        finally:
            self._hub.close_stream(queue)

    def HeartbeatCheck(self, request, context):
        return openolt_pb2.Heartbeat(heartbeat_signature=self._olt.heartbeat_signature)

    def DisableOlt(self, request, context):
        self._olt.disable()
        self._olt.emit(events.OpenoltRequest("DisableOlt"))  # accepted: a refused call changes nothing, says nothing
        return openolt_pb2.Empty()

    def ReenableOlt(self, request, context):
        self._olt.reenable()
        self._olt.emit(events.OpenoltRequest("ReenableOlt"))  # accepted: a refused call changes nothing, says nothing
        return openolt_pb2.Empty()

    def Reboot(self, request, context):
        self._olt.reboot()
        self._olt.emit(events.OpenoltRequest("Reboot"))  # accepted: a refused call changes nothing, says nothing
        return openolt_pb2.Empty()

    def EnablePonIf(self, request, context):
        self._olt.enable_pon(request.intf_id)
        return openolt_pb2.Empty()

    def DisablePonIf(self, request, context):
        self._olt.disable_pon(request.intf_id)
        return openolt_pb2.Empty()

    def GetPonInterfaceInfo(self, request, context):
        pon = self._olt.pon(request.intf_id)
        state = {"enabled": "ACTIVE_WORKING", "disabled": "INACTIVE", "created": "ACTIVE_STANDBY"}[pon.state]
        return openolt_pb2.PonIntfInfo(intf_id=pon.id, state=openolt_pb2.PonIntfInfo.PonIntfState.Value(state),
                                       los=openolt_pb2.OFF if pon.oper_state == "up" else openolt_pb2.ON)

    # ---- ONUs ------------------------------------------------------------------------------

    def ActivateOnu(self, request, context):
        serial = serial_from_pb(request.serial_number)
        self._olt.activate_onu(request.intf_id, serial, request.onu_id)
        self._olt.emit(events.OpenoltRequest("ActivateOnu", request.intf_id, request.onu_id, serial))
        return openolt_pb2.Empty()

    def DeactivateOnu(self, request, context):
        self._olt.onu_by_id(request.intf_id, request.onu_id)
        return openolt_pb2.Empty()

    def DeleteOnu(self, request, context):
        self._olt.delete_onu(request.intf_id, request.onu_id)
        return openolt_pb2.Empty()

    def GetOnuInfo(self, request, context):
        onu = self._olt.onu_by_id(request.intf_id, request.onu_id)
        if onu.is_active:
            state = "ACTIVE"
        elif onu.state == "disabled":
            state = "INACTIVE"
        elif onu.state in ("created", "initialized"):
            state = "NOT_CONFIGURED"
        else:
            state = "UNKNOWN"
        alarm = openolt_pb2.OFF if onu.oper_state == "up" else openolt_pb2.ON
        return openolt_pb2.OnuInfo(onu_id=onu.onu_id, state=openolt_pb2.OnuInfo.OnuState.Value(state),
                                   losi=alarm, lofi=alarm, loami=alarm)

    def OmciMsgOut(self, request, context):
        onu = self._olt.onu_by_id(request.intf_id, request.onu_id)
        try:
            frame = bytes.fromhex(bytes(request.pkt).decode("ascii"))
        except (UnicodeDecodeError, ValueError):
            raise InvalidArgument("pkt must be an even number of hexadecimal digits") from None
        capture = self._capture
        if capture is not None:
            capture.omci_out(onu, frame)  # before the answer, which the handler emits at once
        handler = onu.hub.omci
        if handler is not None:
            receive(handler, onu, frame)    # parsed once here; OmciError when it is no OMCI frame
        return openolt_pb2.Empty()

    def OnuPacketOut(self, request, context):
        onu = self._olt.onu_by_id(request.intf_id, request.onu_id)
        pkt = bytes(request.pkt)
        capture = self._capture
        if capture is not None:
            capture.packet_out(onu, request.port_no, request.gemport_id, pkt)
        frames = onu.hub.frames
        if frames is not None:
            frames.packet_out(onu, request.port_no, request.gemport_id, pkt)
        return openolt_pb2.Empty()

    def UplinkPacketOut(self, request, context):
        self._olt.nni(request.intf_id)
        pkt = bytes(request.pkt)
        capture = self._capture
        if capture is not None:
            capture.uplink_out(request.intf_id, pkt)
        frames = self._olt.hub.frames
        if frames is not None:
            frames.uplink_packet_out(self._olt, request.intf_id, pkt)
        return openolt_pb2.Empty()

    # ---- flows and schedulers --------------------------------------------------------------

    def FlowAdd(self, request, context):
        check_size(request, MAX_FLOW_BYTES, "a flow")
        if request.flow_type not in FLOW_TYPES:
            raise InvalidArgument(f"flow_type must be one of {', '.join(FLOW_TYPES)} (got {request.flow_type!r})")
        for name in ("o_vid", "i_vid"):
            value = getattr(request.classifier, name)
            if value > 4096:
                raise InvalidArgument(f"classifier.{name} must be a VLAN id 0..4096 (got {value})")
        check_enums(request)
        self._olt.flow_add(flow_from_pb(request))
        return openolt_pb2.Empty()

    def FlowRemove(self, request, context):
        if request.flow_type and request.flow_type not in FLOW_TYPES:
            raise InvalidArgument(f"flow_type must be empty (any) or one of {', '.join(FLOW_TYPES)} "
                                  f"(got {request.flow_type!r})")
        self._olt.flow_remove(request.access_intf_id, request.flow_id, request.flow_type)
        return openolt_pb2.Empty()

    def CreateTrafficSchedulers(self, request, context):
        check_size(request, MAX_SCHEDULERS_BYTES, "a TrafficSchedulers message")
        check_enums(request)  # stored and shown by name in REST (GET .../trafficschedulers, v0 tconts)
        payload = tech_profile_pb2.TrafficSchedulers()
        payload.CopyFrom(request)
        self._olt.set_traffic_schedulers(request.intf_id, request.onu_id, payload, uni_id=request.uni_id,
                                         alloc_ids=[sched.alloc_id for sched in request.traffic_scheds])
        return openolt_pb2.Empty()

    def RemoveTrafficSchedulers(self, request, context):
        self._olt.clear_traffic_schedulers(request.intf_id, request.onu_id, request)
        return openolt_pb2.Empty()

    def CreateTrafficQueues(self, request, context):
        check_size(request, MAX_SCHEDULERS_BYTES, "a TrafficQueues message")
        payload = tech_profile_pb2.TrafficQueues()
        payload.CopyFrom(request)        # kept: the data plane's shaper serves the GEM ports by them
        self._olt.set_traffic_queues(request.intf_id, request.onu_id, payload, uni_id=request.uni_id)
        return openolt_pb2.Empty()

    def RemoveTrafficQueues(self, request, context):
        self._olt.clear_traffic_queues(request.intf_id, request.onu_id, request)
        return openolt_pb2.Empty()

    # ---- accepted and answered, nothing to simulate ----------------------------------------

    def CollectStatistics(self, request, context):
        sent = self._hub.collect_statistics()
        if sent:
            log.debug("collect-statistics port_stats={sent}", sent=sent)
        return openolt_pb2.Empty()

    def PerformGroupOperation(self, request, context):
        return openolt_pb2.Empty()

    def DeleteGroup(self, request, context):
        return openolt_pb2.Empty()

    def OnuItuPonAlarmSet(self, request, context):
        self._olt.onu_by_id(request.pon_ni, request.onu_id)
        return openolt_pb2.Empty()

    def GetExtValue(self, request, context):
        return extensions_pb2.ReturnValues()

    def GetOnuStatistics(self, request, context):
        onu = self._olt.onu_by_id(request.intf_id, request.onu_id)
        if self._traffic is not None:
            counted = _uni_totals(self._traffic, lambda serial: serial == onu.serial)
            if counted is not None:   # its bound UNIs' frames: rx from the ONU (upstream), tx to it; a clean wire
                return openolt_pb2.OnuStatistics(
                    intf_id=onu.pon.id, onu_id=onu.onu_id, rx_packets=counted["rx_packets"],
                    rx_bytes=counted["rx_bytes"], tx_packets=counted["tx_packets"], tx_bytes=counted["tx_bytes"],
                    timestamp=int(self._olt.clock.seconds()))
        return openolt_pb2.OnuStatistics(intf_id=onu.pon.id, onu_id=onu.onu_id)

    def GetGemPortStatistics(self, request, context):
        onu = self._olt.onu_by_id(request.intf_id, request.onu_id)
        counted = self._traffic.gem_statistics(onu.pon.id, onu.onu_id, request.gemport_id) if self._traffic else None
        if counted is not None:   # the data plane's frames on it (docs/dataplane.md, "Counters")
            rx_frames, rx_bytes, tx_frames, tx_bytes = counted
            return openolt_pb2.GemPortStatistics(intf_id=onu.pon.id, gemport_id=request.gemport_id,
                                                 rx_packets=rx_frames, rx_bytes=rx_bytes, tx_packets=tx_frames,
                                                 tx_bytes=tx_bytes, timestamp=int(self._olt.clock.seconds()))
        return openolt_pb2.GemPortStatistics(intf_id=onu.pon.id, gemport_id=request.gemport_id)

    def GetAllocIdStatistics(self, request, context):
        onu = self._olt.onu_by_id(request.intf_id, request.onu_id)
        counted = self._traffic.alloc_statistics(onu.pon.id, onu.onu_id, request.alloc_id) if self._traffic else None
        if counted is not None:   # the data plane's upstream bytes on it (docs/dataplane.md, "Counters")
            return openolt_pb2.OnuAllocIdStatistics(intfId=onu.pon.id, allocId=request.alloc_id, rxBytes=counted)
        # the alloc id asked for (the adapter fills alloc_id; gemport_id, read here before, is 0 in its requests)
        return openolt_pb2.OnuAllocIdStatistics(intfId=onu.pon.id, allocId=request.alloc_id)

    def GetPonPortStatistics(self, request, context):
        pon = self._olt.pon(request.intf_id)
        return self._port_statistics(pon.port_no, pon.packet_count)

    def GetNniPortStatistics(self, request, context):
        nni = self._olt.nni(request.intf_id)
        return self._port_statistics(nni.port_no, nni.packet_count)

    def _port_statistics(self, port_no: int, packets: int) -> common_pb2.PortStatistics:
        now = int(self._olt.clock.seconds())
        counted = traffic_port_statistics(self._traffic, self._olt, port_no, now) if self._traffic else None
        return counted if counted is not None else port_statistics(port_no, packets, now)

    def GetLogicalOnuDistanceZero(self, request, context):
        onu = self._olt.onu_by_id(request.intf_id, request.onu_id)
        return openolt_pb2.OnuLogicalDistance(intf_id=onu.pon.id, onu_id=onu.onu_id)

    def GetLogicalOnuDistance(self, request, context):
        onu = self._olt.onu_by_id(request.intf_id, request.onu_id)
        return openolt_pb2.OnuLogicalDistance(intf_id=onu.pon.id, onu_id=onu.onu_id)

    def GetPonRxPower(self, request, context):
        onu = self._olt.onu_by_id(request.intf_id, request.onu_id)
        return openolt_pb2.PonRxPowerData(intf_id=onu.pon.id, onu_id=onu.onu_id, status="success",
                                          rx_power_mean_dbm=-6.0)

    def DisableOnu(self, request, context):
        self._olt.onu_by_id(request.intf_id_serial_num.intf_id, request.onu_id)
        return openolt_pb2.Empty()

    def EnableOnu(self, request, context):
        self._olt.onu_by_id(request.intf_id_serial_num.intf_id, request.onu_id)
        return openolt_pb2.Empty()

    def DisableOnuSerialNumber(self, request, context):
        self._olt.pon(request.intf_id).onu_by_serial(serial_from_pb(request.onu_serial_number))
        return openolt_pb2.Empty()

    def EnableOnuSerialNumber(self, request, context):
        self._olt.pon(request.intf_id).onu_by_serial(serial_from_pb(request.onu_serial_number))
        return openolt_pb2.Empty()


# ---- port statistics from the data plane's frames -----------------------------------------------------------------

#: PortStatistics' size buckets, in the order of the pipeline's frame kinds (oltsim.dataplane.pipeline.KIND_SIZES..)
_SIZE_FIELDS = ("frames_64", "frames_65_127", "frames_128_255", "frames_256_511", "frames_512_1023",
                "frames_1024_1518")


def _uni_totals(traffic, wanted) -> dict | None:
    """The frames of the bound UNIs whose ONU serial `wanted(serial)` accepts, summed as an OLT port sees them: rx
    what their RGs sent (upstream), tx what they were sent, in packets, bytes, broadcast, multicast and size buckets;
    None when no such UNI is bound."""
    unis = traffic.counters()["unis"]
    totals = None
    for serial, uni_id in traffic.bound():
        counter = unis.get(f"{serial}/{uni_id}")
        if counter is None or not wanted(serial):
            continue
        if totals is None:
            totals = dict.fromkeys((f"{d}_{k}" for d in ("rx", "tx") for k in (
                "packets", "bytes", "bcast_packets", "mcast_packets") + _SIZE_FIELDS), 0)
        kinds = traffic.frame_kinds(serial, uni_id) or ((0,) * 9, (0,) * 9)
        for direction, kind in (("rx", kinds[0]), ("tx", kinds[1])):
            totals[f"{direction}_packets"] += counter[f"{direction}_frames"]
            totals[f"{direction}_bytes"] += counter[f"{direction}_bytes"]
            totals[f"{direction}_bcast_packets"] += kind[0]
            totals[f"{direction}_mcast_packets"] += kind[1]
            for name, count in zip(_SIZE_FIELDS, kind[2:8]):
                totals[f"{direction}_{name}"] += count
    return totals


def traffic_port_statistics(traffic, olt, port_no: int, timestamp: int) -> common_pb2.PortStatistics | None:
    """The OpenOLT PortStatistics of port `port_no` (a PON's or the NNI's port number) from the data plane's real
    frames (docs/dataplane.md, "Counters"), None for a port it does not count (then BBSim's counts stand):

    - a PON: its bound UNIs' frames (rx: what their RGs sent, tx: what they were sent), unicast, multicast and
      broadcast apart, with the size buckets, and its ONUs' drops as rx_packets_dropped;
    - the NNI: the frames into (rx) and out of (tx) the tagged and untagged NNI interfaces, packets and bytes,
      broadcast and multicast apart (no size buckets: the NNI does not count sizes), its drops as rxPacketsDropped.

    Errors of the simulated wire (CRC, FCS, BIP, GEM) are 0."""
    fields = None
    pon = next((p for p in olt.pons if p.port_no == port_no), None)
    if pon is not None:
        serials = {onu.serial for onu in pon.onus}
        fields = _uni_totals(traffic, serials.__contains__)
        if fields is not None:
            unis = traffic.counters()["unis"]
            fields["rxPacketsDropped"] = sum(sum(c["dropped"].values()) for key, c in unis.items()
                                             if key.rpartition("/")[0] in serials)
    elif any(nni.port_no == port_no for nni in olt.nnis):
        counters = traffic.counters()
        sides = [counters["nni"], counters["nni_untagged"]]
        fields = {f"{d}_{k}": sum(c[f"{d}_{src}"] for c in sides) for d in ("rx", "tx")
                  for k, src in (("packets", "frames"), ("bytes", "bytes"))}
        for direction, kinds in zip(("rx", "tx"), traffic.nni_kinds()):
            fields[f"{direction}_bcast_packets"], fields[f"{direction}_mcast_packets"] = kinds[0], kinds[1]
        fields["rxPacketsDropped"] = sum(sum(c["dropped"].values()) for c in sides)
    if fields is None:
        return None
    for d in ("rx", "tx"):
        fields[f"{d}_ucast_packets"] = fields[f"{d}_packets"] - fields[f"{d}_bcast_packets"] - fields[
            f"{d}_mcast_packets"]
        fields[f"{d}_frames"] = fields[f"{d}_packets"]
    return common_pb2.PortStatistics(intf_id=port_no, timestamp=timestamp, **fields)
