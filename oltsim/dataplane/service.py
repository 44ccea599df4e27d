"""The data plane's service: makes the interfaces (and namespaces) at start, carries frames, removes all at stop.

Start (`privilegedStartService` under twistd, as root before any privilege is dropped; else `startService`): the
host is checked first (CAP_NET_ADMIN, /dev/net/tun, no interface of the names already there, a UNI's namespace
without that interface), then each interface is made (TAP), given its UNI's first service MAC, moved into its
namespace (made if absent and marked as this run's; one a killed run left, by its mark, taken over) and set up, and
the UNI is bound (`DataPlane.bind_uni`: its simulated protocols step aside); the front (`front.DataPlaneFront`) gets
the pipeline, which the stop takes back. When any step fails, everything made so far is removed again (interfaces closed, namespaces this start
made deleted) and the failure is one line: `DataPlaneError`, or with `exit_on_failure` (the daemon) ``oltsim: ...``
on stderr and exit status 2.

Frames: each interface's `TapPort` reads into its protocol's queue (bounded; a full one stops the reading), one
`Pump` hands the frames to the `DataPlane` (`from_uni`, `from_nni`, `from_nni_untagged`) a bounded number per
reactor turn, and `deliver` carries the outputs out: `ToUni` to the UNI's interface, `ToNni`/`ToNniUntagged` to the
NNI's; `PacketIn` (already emitted by the DataPlane) and `Dropped` (already counted) are only counted here. The
adapter's OnuPacketOut to a bound UNI and UplinkPacketOut come through the same `deliver` (`DataPlane.attach`).

VXLAN attachments (`vxlan`, a `vxlan.VxlanSegments`; ``--attachment vxlan``): the same interfaces of the plan are
VXLAN segments on one UDP port instead of TAPs (`vxlan.VxlanPort`, one VNI each, `vxlan.vni_of`): the start checks
nothing of the host (no privileges, no `ip`), binds the port and opens the attachments; frames cross the same
queues, pump and `deliver`; the stop closes the port.

Stop: unbind the UNIs (their simulated protocols drive them again), close every interface (the kernel removes it)
and delete the namespaces this start made; nothing is left on the host.
"""
from __future__ import annotations

import os
import sys

from twisted.application import service

from oltsim.dataplane import vnet
from oltsim.dataplane.interfaces import NNI_QUEUE_BYTES, QUEUE_BYTES, InterfacePlan, Pump, TapPort
from oltsim.dataplane.netns import Host, HostError
from oltsim.dataplane.pipeline import (PacketIn, ToNni, ToNniUntagged, ToNniUntaggedWithHeader, ToNniWithHeader, ToUni,
                                       ToUniWithHeader)
from oltsim.dataplane.shaper import QUEUED, SEND
from oltsim.dataplane.vxlan import VxlanError, VxlanPort, vni_of
from oltsim.logs import logger
from oltsim.model import events
from oltsim.model.errors import FailedPrecondition

__all__ = ["CaptureWriter", "DataPlaneError", "DataPlaneService", "counters_of"]

log = logger("oltsim.dataplane")

NNI = "nni"
NNI_UNTAGGED = "nni-untagged"
#: an output's kind -> the port it leaves by: its UNI's (None), the NNI's or the untagged NNI's, with a virtio-net
#: header or not
_LEAVES_BY = {ToUni: None, ToUniWithHeader: None, ToNni: NNI, ToNniWithHeader: NNI, ToNniUntagged: NNI_UNTAGGED,
              ToNniUntaggedWithHeader: NNI_UNTAGGED}


class DataPlaneError(Exception):
    """The data plane could not be set up; the message is one line, and nothing it made is left."""


class DataPlaneService(service.Service):
    """The interfaces of `plan` (an `InterfacePlan`) around `dataplane` (a `pipeline.DataPlane` over `olt`).

    `clock` is the reactor (the pump's turns; the TAP ports' reader registration); `host` a `netns.Host` (tests: one
    over a fake `ip`); `system` the TAP ports' I/O system (tests: twisted.pair.testing.MemoryIOSystem).
    `exit_on_failure`: a failed start writes ``oltsim: LINE`` to stderr and exits with status 2 (the daemon).
    `vxlan` (a `vxlan.VxlanSegments`): every interface of the plan is a VXLAN attachment on its port, not a TAP.
    `front` (a `front.DataPlaneFront`): the adapter's packets for bound UNIs and the NNI go to `dataplane` from the
    start on, to the protocol engine again from the stop on. `offload`: the TAPs are opened with the kernel's
    offloads (`interfaces.TapPort`), their frames read and written with a virtio-net header (`vnet`), which goes to
    the pipeline with the frame when it says something (a checksum to finish, a GSO super-frame); a kernel that
    refuses is said once and the TAPs carry plain frames. `queue_bytes`: a UNI interface's queue bound (an NNI's
    four times it; None: `interfaces.QUEUE_BYTES`)."""

    name = "dataplane"

    def __init__(self, olt, dataplane, plan: InterfacePlan, clock, *, shaper=None, host: Host | None = None,
                 system=None, exit_on_failure: bool = False, queue_bytes: int | None = None, vxlan=None,
                 offload: bool = True, front=None):
        self.olt = olt
        self.dataplane = dataplane
        self.plan = plan
        self.clock = clock
        self.host = host or Host()
        self.system = system
        self.exit_on_failure = exit_on_failure
        self.queue_bytes = queue_bytes
        #: TAPs opened with a virtio-net header and the kernel's offloads (GSO super-frames, partial checksums)
        self.offload = offload
        #: the ports whose frames carry a virtio-net header (TAPs whose kernel took the offloads)
        self._with_header: set = set()
        self._offload_said = False
        #: a `shaper.Shaper`: the bandwidth profiles (None: no limit), and its one wake-up
        self.shaper = shaper
        self._wake = None
        self.vxlan = vxlan
        #: the protocol engine's `front.DataPlaneFront`: given the pipeline while the data plane runs
        self.front = front
        self.pump = None
        self.ports: dict[object, TapPort] = {}      # (serial, uni_id) / NNI / NNI_UNTAGGED -> port
        self.made_netns: list[str] = []
        self.bound: list[tuple[str, int]] = []
        self.packet_ins = 0
        self.undeliverable = 0
        self._up = False
        self._unsubscribe = None
        self._carrier_refused = False

    # ---- service -----------------------------------------------------------------------------------------------

    def privilegedStartService(self):
        self._start_once()
        super().privilegedStartService()

    def startService(self):
        self._start_once()
        super().startService()

    def stopService(self):
        super().stopService()
        self._remove()
        if self._wake is not None:
            self._wake.cancel()
            self._wake = None
        if self.shaper is not None:
            self.shaper.clear()
        log.info("dataplane-stopped interfaces={count}", count=len(self.plan.names()))

    def _start_once(self) -> None:
        if self._up:
            return
        try:
            self._make()
        except (HostError, DataPlaneError) as exc:
            self._remove()
            line = str(exc)
            log.error("dataplane-not-started why={why}", why=line)
            if self.exit_on_failure:
                stderr = sys.__stderr__ or sys.stderr
                stderr.write(f"oltsim: {line}\n")
                stderr.flush()
                raise SystemExit(2) from None
            raise DataPlaneError(line) from None
        except Exception:
            self._remove()
            raise

    # ---- making and removing -----------------------------------------------------------------------------------

    def _check(self) -> None:
        """The host can take the plan: privileges, and none of its names in use (nothing is made yet). VXLAN
        attachments make nothing on the host: nothing to check."""
        if self.vxlan is not None:
            return
        host = self.host
        host.check_privileges()
        for uni in self.plan.unis:
            if host.link_exists(uni.name):
                raise HostError(f"UNI {uni.serial}/{uni.uni_id}: an interface named {uni.name} exists already "
                                f"(another oltsim? --interface-prefix keeps two apart)")
            if uni.netns and host.netns_exists(uni.netns) and host.link_exists(uni.name, uni.netns):
                raise HostError(f"UNI {uni.serial}/{uni.uni_id}: network namespace {uni.netns} has an interface "
                                f"named {uni.name} already (another oltsim? --interface-prefix keeps two apart)")
        for name, option in ((self.plan.nni, "--nni-interface"), (self.plan.nni_untagged,
                                                                  "--nni-untagged-interface")):
            if name and host.link_exists(name):
                raise HostError(f"{option} {name}: an interface of that name exists already")

    def _port(self, name: str, key, mac: str | None = None) -> TapPort:
        nni = key in (NNI, NNI_UNTAGGED)
        if self.queue_bytes:
            # an NNI carries every UNI's downstream traffic: its queue holds as much as four UNIs'
            options = {"queue_bytes": self.queue_bytes * (NNI_QUEUE_BYTES // QUEUE_BYTES if nni else 1)}
        else:
            options = {"queue_bytes": NNI_QUEUE_BYTES if nni else QUEUE_BYTES}
        if self.vxlan is not None:
            port = VxlanPort(self.vxlan, name, key, vni_of(self.olt, key, self.vxlan.vni_base), self.pump, mac=mac,
                             **options)
        else:
            port = TapPort(name, key, self.pump, reactor=self.clock, system=self.system, offload=self.offload,
                           **options)
        # the model's port whose packet counter (the OpenOLT PortStatistics) counts this interface's frames
        port.model_port = self.olt.nnis[0] if key in (NNI, NNI_UNTAGGED) else self.olt.onu_by_serial(key[0]).pon
        self.ports[key] = port
        port.open()
        if getattr(port, "vnet_header", False):
            self._with_header.add(port)
        elif self.offload and self.vxlan is None and not self._offload_said:
            self._offload_said = True      # the same kernel refuses every TAP: said once
            log.warn("dataplane-offload-refused interface={name} why={why}: the TAPs carry plain frames (no GSO "
                     "super-frames)", name=name, why=port.offload_refused)
        return port

    def _make(self) -> None:
        plan = self.plan
        self._check()
        self.pump = Pump(self.clock, self._frame_in, first_now=True,
                         after_turn=None if self.vxlan is None else self.vxlan.turn_done)
        host = self.host
        if self.vxlan is not None:
            self._make_vxlan()
        for uni in plan.unis if self.vxlan is None else ():
            self._port(uni.name, (uni.serial, uni.uni_id))
            # the link goes up with the UNI's carrier already right: an RG (and the kernel's own IPv6 start-up)
            # sees no carrier before its UNI is up
            self._carrier(uni.serial, uni.uni_id, self._uni_up(uni.serial, uni.uni_id))
            if uni.mac:
                host.set_address(uni.name, uni.mac)
            if uni.netns:
                if not host.netns_exists(uni.netns):
                    host.add_netns(uni.netns)
                    self.made_netns.append(uni.netns)
                else:
                    self._take_over(uni.netns)
                host.move_link(uni.name, uni.netns)
            host.link_up(uni.name, uni.netns)
        for name, key in ((plan.nni, NNI), (plan.nni_untagged, NNI_UNTAGGED)):
            if name and self.vxlan is None:
                self._port(name, key)
                host.link_up(name)
        for uni in plan.unis:
            try:
                self.dataplane.bind_uni(uni.serial, uni.uni_id)
            except Exception as exc:
                raise DataPlaneError(f"UNI {uni.serial}/{uni.uni_id} cannot be bound: {exc}") from None
            self.bound.append((uni.serial, uni.uni_id))
        # each UNI interface's carrier follows its UNI (an RG sees its link go down with the ONU or a locked UNI:
        # wpa_supplicant authenticates again when it comes back)
        self._unsubscribe = self.olt.subscribe(self._on_event)
        if self.front is not None:
            self.front.add(self.dataplane, self.deliver)
        self._up = True
        log.info("dataplane-started attachment={kind} unis={unis} nni={nni} nni_untagged={untagged} netns={netns}",
                 kind="tap" if self.vxlan is None else "vxlan", unis=len(plan.unis), nni=plan.nni or "-",
                 untagged=plan.nni_untagged or "-", netns=len(self.made_netns))
        if self.vxlan is None and any(uni.netns for uni in plan.unis) and host.private_mount_namespace():
            log.warn("dataplane-private-mount-namespace pid={pid}: oltsim has a mount namespace of its own (ip netns "
                     "exec gives one), so the UNI namespaces are seen only from inside it: `nsenter -t {pid} -m -n "
                     "...` enters them, or start oltsim outside ip netns exec", pid=os.getpid())

    def _take_over(self, name: str) -> None:
        """An existing namespace a UNI goes into: one a killed oltsim run left (its mark, its maker gone) is this
        run's from now on (marked again, deleted at stop); one a running oltsim made is refused; the user's is used
        as it is."""
        maker = self.host.netns_maker(name)
        if maker is None:
            return
        pid, running = maker
        if running and pid != os.getpid():
            raise HostError(f"network namespace {name} belongs to the oltsim running as pid {pid} (--interface-prefix "
                            f"keeps two apart)")
        self.host.mark_netns(name)
        self.made_netns.append(name)
        log.info("dataplane-netns-taken-over netns={name} left_by_pid={pid}: made by a run that ended without "
                 "deleting it; deleted at this run's stop", name=name, pid=pid)

    def _make_vxlan(self) -> None:
        """The VXLAN port bound, then one attachment per interface of the plan (its VNI by `vxlan.vni_of`)."""
        plan = self.plan
        try:
            self.vxlan.open()
            for uni in plan.unis:
                self._port(uni.name, (uni.serial, uni.uni_id), uni.mac)
            for name, key in ((plan.nni, NNI), (plan.nni_untagged, NNI_UNTAGGED)):
                if name:
                    self._port(name, key)
        except VxlanError as exc:
            raise DataPlaneError(str(exc)) from None

    def _remove(self) -> None:
        """Undo whatever `_make` did, in reverse; goes on past a step that fails (logged)."""
        self._up = False
        if self.front is not None:
            self.front.remove()      # the adapter's packets go to the protocol engine again
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None
        for serial, uni_id in reversed(self.bound):
            try:
                self.dataplane.unbind_uni(serial, uni_id)
            except Exception:
                log.failure("dataplane-unbind-failed serial={serial} uni={uni}", serial=serial, uni=uni_id)
        self.bound.clear()
        if self.pump is not None:
            self.pump.stop()
        for port in reversed(list(self.ports.values())):
            port.close()
        self.ports.clear()
        self._with_header.clear()
        if self.vxlan is not None:
            self.vxlan.close()
        for name in reversed(self.made_netns):
            why = self.host.delete_netns(name)
            if why is not None:
                log.error("dataplane-netns-not-deleted netns={name} why={why}", name=name, why=why)
        self.made_netns.clear()

    def _on_event(self, event) -> None:
        if (type(event) is events.StateChanged and event.device == "uni" and event.attribute == "OperState"
                and (event.serial, event.uni_id) in self.ports):
            try:
                self._carrier(event.serial, event.uni_id, event.dest == "up")
            except Exception:
                log.failure("dataplane-carrier-failed serial={serial} uni={uni}", serial=event.serial,
                            uni=event.uni_id)

    def _uni_up(self, serial: str, uni_id: int) -> bool:
        return self.olt.onu_by_serial(serial).unis[uni_id].state == "up"

    def _carrier(self, serial: str, uni_id: int, on: bool) -> None:
        port = self.ports.get((serial, uni_id))
        # a port closed (its interface lost, logged then) says nothing of the kernel
        if port is not None and port.connected and not port.set_carrier(on) and not self._carrier_refused:
            self._carrier_refused = True   # an old kernel: the links stay up; said once
            log.warn("dataplane-carrier-unsupported interface={name}: the UNI interfaces' links stay up whatever "
                     "their UNI's state (TUNSETCARRIER needs Linux 5.0)", name=port.name)

    # ---- frames --------------------------------------------------------------------------------------------------

    def _frame_in(self, port: TapPort, frame: bytes) -> None:
        key = port.key
        dataplane = self.dataplane
        port.model_port.packet_count += 1    # the OpenOLT port statistics count real frames too
        header = None
        if port in self._with_header:
            # the virtio-net header goes with the frame only when it says something (a checksum to finish, GSO)
            header = frame[:vnet.SIZE]
            frame = frame[vnet.SIZE:]
            if not header[0] & vnet.F_NEEDS_CSUM and not header[1]:
                header = None
        if header is None:
            if key == NNI:
                outputs = dataplane.from_nni(frame)
            elif key == NNI_UNTAGGED:
                outputs = dataplane.from_nni_untagged(frame)
            else:
                outputs = dataplane.from_uni(key[0], key[1], frame)
        elif key == NNI:
            outputs = dataplane.from_nni(frame, header)
        elif key == NNI_UNTAGGED:
            outputs = dataplane.from_nni_untagged(frame, header)
        else:
            outputs = dataplane.from_uni(key[0], key[1], frame, header)
        if outputs:
            self.deliver(outputs)

    def deliver(self, outputs) -> None:
        """Carry out the DataPlane's outputs: frames out of their interfaces (an interface not made: counted as
        undeliverable), packet indications counted (the DataPlane emitted them). With a shaper, the frames of one
        T-CONT or downstream scheduler (an output's `queue`) pass its queue first: out now, later (one delayed call
        wakes the shaper when the next is due) or dropped at the queue's tail (counted by the shaper); the outputs
        of one frame with the same queue (the tagged and the untagged NNI's copies) pass it as one."""
        if self.shaper is not None:
            outputs = self._shaped(outputs)
        self._send(outputs)

    def _shaped(self, outputs) -> list:
        """`outputs` less those the shaper holds or drops; consecutive outputs with the same queue key (the one
        tuple the pipeline gives both NNI copies of a frame) pass it as one."""
        ready = []
        now = None
        i, count = 0, len(outputs)
        while i < count:
            out = outputs[i]
            i += 1
            queue = getattr(out, "queue", None)
            if queue is None:
                ready.append(out)
                continue
            start = i - 1
            while i < count and getattr(outputs[i], "queue", None) is queue:
                i += 1
            if now is None:
                now = self.clock.seconds()
            group = outputs[start:i]
            verdict = self.shaper.offer(queue, group, _wire_size(out), now)
            if verdict == SEND:
                ready.extend(group)
            elif verdict == QUEUED and self._wake is None:
                self._wake = self.clock.callLater(0, self._on_wake)
        return ready

    def _on_wake(self) -> None:
        """The shaper's frames whose time has come, out; the next wake-up set when more wait. A failure of the shaper
        is logged with its time, and its queued frames dropped: the next frame starts again, none is stuck."""
        self._wake = None
        now = self.clock.seconds()
        try:
            released, wake = self.shaper.due(now)
        except Exception:
            log.failure("dataplane-shaper-failed at={now}: its queued frames are dropped", now=now)
            self.shaper.clear()
            return
        if wake is not None:
            self._wake = self.clock.callLater(max(0.0, wake - now), self._on_wake)
        if released:
            self._send([out for outs in released for out in outs])

    def _send(self, outputs) -> None:
        ports = self.ports
        leaves_by = _LEAVES_BY
        for out in outputs:
            key = leaves_by.get(type(out), False)
            if key is not False:
                port = ports.get((out.serial, out.uni_id) if key is None else key)
            elif type(out) is PacketIn:
                self.packet_ins += 1
                continue
            else:  # Dropped: counted by the DataPlane
                continue
            if port is None:
                self.undeliverable += 1
                continue
            header = out.vnet
            if header is None:
                sent = port.send(out.frame)
            elif port in self._with_header:
                sent = port.send(out.frame, header)
            else:
                sent = self._send_plain(port, out.frame, header)
            if sent:
                port.model_port.packet_count += 1

    def _send_plain(self, port, frame: bytes, header: bytes) -> bool:
        """A frame with a virtio-net header to a port without (a VXLAN attachment, a TAP whose kernel refused
        offloads): its checksum finished here; a GSO super-frame is refused (counted as ``gso-unsupported``: it is
        not segmented in software; every TAP of one kernel has the header or none does)."""
        if vnet.is_gso(header):
            port.protocol._drop("gso-unsupported")
            return False
        try:
            frame = vnet.completed(header, frame)
        except vnet.VnetError:
            port.protocol._drop("vnet-bad-header")
            return False
        return port.send(frame)

    # ---- counters ------------------------------------------------------------------------------------------------

    def counters(self) -> dict:
        """The DataPlane's counters, with each interface's own (frames read and written, drops of its queue and of
        the kernel's refusals) under "interfaces": a UNI's names its `serial` and `uni_id`, an NNI's the `port` whose
        counters it feeds (`nni` or `nni_untagged`), each its `kind` (tap or vxlan; a VXLAN attachment's its `vni`
        and `remote` too); with VXLAN attachments, "vxlan" holds the UDP port's own (every drop by reason)."""
        counted = self.dataplane.counters()
        if self.shaper is not None:
            # per T-CONT and downstream scheduler: its limit and rate, bytes sent, dropped by the shaper, queue
            # depth, and those of each of its GEM ports; per PON and direction: its rate, bytes offered and carried
            counted = {**counted, "shapers": self.shaper.counters(), "pon_shaping": self.shaper.pon_counters()}
        interfaces = {}
        for key, port in self.ports.items():
            entry = {"kind": "tap", **port.counters()}
            if isinstance(key, tuple):
                entry.update(serial=key[0], uni_id=key[1])
            else:
                entry.update(port="nni" if key == NNI else "nni_untagged")
            interfaces[port.name] = entry
        extra = {} if self.vxlan is None else {"vxlan": self.vxlan.counters()}
        return {**counted, "interfaces": interfaces, "packet_ins": self.packet_ins,
                "undeliverable": self.undeliverable, **extra}



def _wire_size(out) -> int:
    """The octets an output is on the wire: a GSO super-frame's segments' (payload and headers per segment)."""
    header = out.vnet
    if header is None or not header[1]:
        return len(out.frame)
    return vnet.on_wire(header, out.frame)[1]


def counters_of(service) -> dict:
    """What GET /v1/dataplane and oltsim.v1.Oltsim/GetDataPlane answer: `service`'s counters, or FailedPrecondition
    (one line naming the options) when there is no data plane (None)."""
    if service is None:
        raise FailedPrecondition("the data plane is off: start oltsim with --uni-interfaces, --nni-interface or "
                                 "--nni-untagged-interface (docs/dataplane.md)")
    return service.counters()


class CaptureWriter:
    """`--capture-data-frames`: the DataPlane's `capture` callable, putting each data frame in the capture ring
    (oltsim.capture) beside the control frames: a UNI's frames as its ONU's (in: from the RG, out: to it), the NNI's
    as the NNI's (NNI 0; out: sent out of it), the untagged NNI's alike. Off by default: traffic would push the
    control frames out of the ring."""

    def __init__(self, capture, olt):
        self.capture = capture
        self.olt = olt
        self._where: dict[str, tuple] = {}

    def __call__(self, where: str, direction: str, frame: bytes) -> None:
        outward = direction == "out"
        if where.startswith("uni "):
            ids = self._where.get(where)
            if ids is None:
                serial, _, uni = where[4:].rpartition("/")
                onu = self.olt.onu_by_serial(serial)
                ids = self._where[where] = (onu.serial, onu.pon.id, onu.onu_id, int(uni))
            serial, pon, onu_id, uni_id = ids
            # at a UNI, up is from the ONU's side towards the OLT, as a packet indication
            self.capture.uni_frame(serial, pon, onu_id, uni_id, not outward, frame)
        else:
            # at the NNI, up is out of it, as an UplinkPacketOut
            self.capture.nni_frame(0, outward, frame)
