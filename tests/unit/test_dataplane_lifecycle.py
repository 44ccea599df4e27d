"""The data plane's life around its frames, in memory: what `oltsimctl dataplane` shows of each attachment (its kind,
VNI and remote), what is counted rather than lost (frames with no NNI interface to leave by, broadcasts no bound UNI
takes, UplinkPacketOuts the decoder rejects), the protocol engine's hooks removed at stop, a namespace left by a killed
run taken over, and the one line a private mount namespace (`ip netns exec`) gets at start."""
from __future__ import annotations

import io
import json
import os
from types import SimpleNamespace

import pytest
from twisted.internet.task import Clock
from twisted.internet.testing import MemoryReactorClock
from twisted.logger import LogLevel, globalLogPublisher

from dataplane_lab import RG_MAC, SERVER_MAC, Lab, ip_frame
from oltsim._proto import oltsim_pb2
from oltsim.ctl import subcommands
from oltsim.dataplane import netns
from oltsim.dataplane.front import DataPlaneFront
from oltsim.dataplane.interfaces import plan_interfaces
from oltsim.dataplane.pipeline import DataPlane, Dropped, ToNni, ToNniUntagged, ToUni
from oltsim.dataplane.service import DataPlaneError, DataPlaneService
from oltsim.model.errors import InvalidArgument
from oltsim.packets.engine import ProtocolEngine
from test_dataplane_io import FakeDataPlane, FakeHost, memory_system, olt_of, service_for


class Connection:
    """The GetDataPlane call of oltsimctl's connection, answering `document`."""

    def __init__(self, document):
        self.document = document

    def call(self, method, request, service="bbsim", timeout=None):
        assert (method, service) == ("GetDataPlane", "oltsim")
        return oltsim_pb2.DataPlaneCounters(json=json.dumps(self.document))


def test_oltsimctl_dataplane_shows_each_attachments_kind_vni_and_remote():
    """Each interface row names its kind; a VXLAN attachment's its VNI and remote, `(learned)` after a learned one,
    `-` while it has none; a TAP's VNI and remote are `-`."""
    counts = {"rx_frames": 3, "tx_frames": 1, "queued": 0, "dropped": {}}
    document = {"unis": {}, "flows": {}, "interfaces": {
        "u0-1-0": {"kind": "vxlan", "vni": 1000, "remote": "192.0.2.7", "remote_learned": True, **counts},
        "nni": {"kind": "vxlan", "vni": 1, "remote": "198.51.100.1", "remote_learned": False, **counts},
        "nniu": {"kind": "vxlan", "vni": 2, "remote": None, "remote_learned": False, **counts},
        "tapu": {"kind": "tap", **counts}}}
    out = io.StringIO()
    assert subcommands.dataplane(Connection(document), SimpleNamespace(output=None), out) == 0
    rows = {line.split()[0]: line.split() for line in out.getvalue().splitlines() if line.strip()}
    assert rows["INTERFACE"] == ["INTERFACE", "KIND", "VNI", "REMOTE", "READ", "WRITTEN", "QUEUED", "DROPPED"]
    assert rows["u0-1-0"] == ["u0-1-0", "vxlan", "1000", "192.0.2.7(learned)", "3", "1", "0", "-"]
    assert rows["nni"][:4] == ["nni", "vxlan", "1", "198.51.100.1"]
    assert rows["nniu"][:4] == ["nniu", "vxlan", "2", "-"]
    assert rows["tapu"][:4] == ["tapu", "tap", "-", "-"]


# ---- counted, not lost ------------------------------------------------------------------------------------------


def test_a_forwarded_frame_with_no_nni_interface_is_counted_on_its_uni():
    """Only UNIs have an interface: a frame the flows forward upstream has nowhere to leave by and is counted as
    `no-nni` on its UNI; with the tagged NNI it leaves by it."""
    lab = Lab()
    onu, _ = lab.subscriber(0, 1, 0, 1024)
    frame = ip_frame(SERVER_MAC, RG_MAC)
    lab.dp.nni_tagged = lab.dp.nni_untagged = False
    assert lab.dp.from_uni(onu.serial, 0, frame) == [Dropped(f"uni {onu.serial}/0", "no-nni")]
    assert lab.dp.counters()["unis"][f"{onu.serial}/0"]["dropped"] == {"no-nni": 1}
    lab.dp.nni_tagged = True
    assert [type(out) for out in lab.dp.from_uni(onu.serial, 0, frame)] == [ToNni]
    assert lab.dp.counters()["unis"][f"{onu.serial}/0"]["dropped"] == {"no-nni": 1}


def test_a_broadcast_no_bound_uni_takes_is_counted_on_the_untagged_nni():
    """A broadcast on the untagged NNI with no bound UNI, or only bound UNIs without a forwarding flow, is counted
    as `no-subscriber`; once a bound UNI has its flows it gets the broadcast."""
    lab = Lab()
    broadcast = ip_frame(b"\xff" * 6, SERVER_MAC)
    assert lab.dp.from_nni_untagged(broadcast) == [Dropped("nni-untagged", "no-subscriber")]
    onu = lab.activate(0, 2)
    lab.dp.bind_uni(onu.serial, 0)          # bound, but no flow yet
    assert lab.dp.from_nni_untagged(broadcast) == [Dropped("nni-untagged", "no-subscriber")]
    assert lab.dp.counters()["nni_untagged"]["dropped"] == {"no-subscriber": 2}
    lab.subscriber(0, 1, 0, 1024)
    outputs = lab.dp.from_nni_untagged(broadcast)
    assert [(type(out), out.uni_id) for out in outputs] == [(ToUni, 0)]
    assert lab.dp.counters()["nni_untagged"]["dropped"] == {"no-subscriber": 2}


def test_an_uplink_packet_out_the_decoder_rejects_leaves_or_is_counted():
    """An UplinkPacketOut oltsim's protocol decoder cannot read (an IPv4 header cut short) is not a simulated
    client's DHCP: it leaves by the NNI as it is, as a real OLT sends what it is given; one that is not even an
    Ethernet frame is counted as malformed on the NNI. Neither is refused to the adapter."""
    lab = Lab()
    truncated = SERVER_MAC + RG_MAC + b"\x08\x00\x45"
    lab.path.front.uplink_packet_out(lab.olt, 0, truncated)
    lab.path.front.uplink_packet_out(lab.olt, 0, b"\x01\x02")
    sent, untagged, dropped = lab.delivered             # the lab has both NNIs
    assert type(sent) is ToNni and sent.frame.startswith(truncated) and len(sent.frame) == 60
    assert type(untagged) is ToNniUntagged and untagged.frame.startswith(truncated)
    assert dropped == Dropped("nni", "malformed")
    nni = lab.dp.counters()["nni"]
    assert (nni["tx_frames"], nni["dropped"]) == (1, {"malformed": 1})


# ---- the service's start and stop -------------------------------------------------------------------------------


def test_the_front_has_the_pipeline_only_while_the_data_plane_runs():
    """The protocol engine's front gets the pipeline at the data plane's start (an UplinkPacketOut leaves by the NNI
    interface, a bound UNI is the real client's) and loses it at its stop: then the engine takes the adapter's
    packets again (refusing a malformed one, as without a data plane) and drives the UNI's simulated protocols."""
    olt = olt_of()
    engine = ProtocolEngine()
    front = DataPlaneFront(engine)
    pipeline = DataPlane(olt, Clock(), engine=engine)
    system = memory_system()
    svc = DataPlaneService(olt, pipeline, plan_interfaces(olt, "1", nni="n0"), MemoryReactorClock(), host=FakeHost(),
                           system=system, front=front)
    uni = olt.onus[0].unis[0]
    assert front.pipeline is None
    svc.startService()
    assert front.pipeline is pipeline and not engine.simulates(uni)
    front.uplink_packet_out(olt, 0, b"\x01\x02")
    assert pipeline.counters()["nni"]["dropped"] == {"malformed": 1}
    frame = ip_frame(RG_MAC, SERVER_MAC)
    front.uplink_packet_out(olt, 0, frame)
    assert list(system.getTunnel(svc.ports["nni"]).writeBuffer) == [frame]
    svc.stopService()
    assert front.pipeline is None and engine.simulates(uni)
    with pytest.raises(InvalidArgument, match="UplinkPacketOut on NNI 0"):
        front.uplink_packet_out(olt, 0, b"\x01\x02")
    assert pipeline.counters()["nni"]["dropped"] == {"malformed": 1}


class MarkedHost(FakeHost):
    """A FakeHost whose namespaces in `marks` bear oltsim's mark naming that (pid, start)."""

    def __init__(self, marks, **kwargs):
        super().__init__(**kwargs)
        self.marks = dict(marks)

    def run(self, args):
        status, line = super().run(args)
        if args[0] == "-n" and args[2:] == ["-o", "link", "show", "dev", "lo"] and args[1] in self.marks:
            pid, start = self.marks[args[1]]
            line = (f"1: lo: <LOOPBACK> mtu 65536 qdisc noop state DOWN mode DEFAULT group default qlen 1000\\    "
                    f"link/loopback 00:00:00:00:00:00 brd 00:00:00:00:00:00\\    alias oltsim pid={pid} start={start}")
        return status, line


def logged_events():
    logged = []
    globalLogPublisher.addObserver(logged.append)
    return logged


def test_a_namespace_a_killed_run_left_is_taken_over_and_deleted_at_stop():
    """A UNI's namespace that exists with oltsim's mark of a process that is gone (a run killed before its stop) is
    taken over: marked as this run's, said in one line naming it and the old pid, and deleted at this run's stop; a
    namespace without the mark (the user's) stays."""
    olt = olt_of()
    plan = plan_interfaces(olt, "2", prefix="k", netns=True)
    gone = (2 ** 22 + 17, 12345)                    # above any pid Linux gives (pid_max is at most 2^22)
    host = MarkedHost({"ku0-1-0": gone}, namespaces={"ku0-1-0", "ku0-1-1"})
    svc = service_for(plan, FakeDataPlane(), host)
    logged = logged_events()
    try:
        svc.startService()
    finally:
        globalLogPublisher.removeObserver(logged.append)
    mark = netns.MARK.format(pid=os.getpid(), start=netns.process_start("self"))
    assert f"-n ku0-1-0 link set dev lo alias {mark}" in host.commands
    assert not any(c.startswith("-n ku0-1-1 link set dev lo alias") for c in host.commands)
    (line,) = [e for e in logged if e.get("log_format", "").startswith("dataplane-netns-taken-over")]
    assert (line["name"], line["pid"]) == ("ku0-1-0", gone[0])
    svc.stopService()
    assert "netns delete ku0-1-0" in host.commands and host.namespaces == {"ku0-1-1"}


def test_a_namespace_of_a_running_oltsim_is_refused():
    """A UNI's namespace marked by a process that still runs (another oltsim with the same names) is refused in one
    line naming its pid, before this run makes anything in it."""
    parent = os.getppid()
    host = MarkedHost({"ru0-1-0": (parent, netns.process_start(parent))}, namespaces={"ru0-1-0"})
    svc = service_for(plan_interfaces(olt_of(), "1", prefix="r", netns=True), FakeDataPlane(), host)
    with pytest.raises(DataPlaneError, match=f"network namespace ru0-1-0 belongs to the oltsim running as pid "
                                             f"{parent}"):
        svc.startService()
    assert not any("netns ru0-1-0" in c or "alias" in c for c in host.commands) and not svc.ports


def test_a_private_mount_namespace_is_said_in_one_line(tmp_path):
    """Started in a mount namespace other than init's (under `ip netns exec`), the data plane says in one line that
    its UNI namespaces are seen only from inside it and how to enter them (nsenter with its pid); in init's, or with
    no namespaces to make, it says nothing."""
    own, init = tmp_path / "own", tmp_path / "init"
    own.symlink_to("mnt:[4026532001]")
    init.symlink_to("mnt:[4026531841]")

    def warnings(plan, namespaces):
        host = FakeHost()
        host.mount_namespaces = namespaces
        svc = service_for(plan, FakeDataPlane(), host)
        logged = logged_events()
        try:
            svc.startService()
        finally:
            globalLogPublisher.removeObserver(logged.append)
        svc.stopService()
        return [e for e in logged if e.get("log_format", "").startswith("dataplane-private-mount-namespace")]

    in_namespaces = plan_interfaces(olt_of(), "1", prefix="m", netns=True)
    (line,) = warnings(in_namespaces, (str(own), str(init)))
    assert line["log_level"] == LogLevel.warn and line["pid"] == os.getpid()
    assert "nsenter -t {pid} -m -n" in line["log_format"]
    assert warnings(in_namespaces, (str(own), str(own))) == []
    assert warnings(plan_interfaces(olt_of(), "1", prefix="m"), (str(own), str(init))) == []


# /proc/self/mountinfo lines: the host's (its mounts shared), and under `ip netns exec` (every mount a slave of them)
HOST_MOUNTS = ("22 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw\n"
               "42 22 0:25 / /run rw,nosuid shared:5 - tmpfs tmpfs rw\n")
SLAVE_MOUNTS = ("89 56 254:0 / / rw,relatime master:1 - ext4 /dev/vda rw\n"
                "90 89 0:25 / /run rw,nosuid master:5 - tmpfs tmpfs rw\n"
                "91 90 0:25 /netns /run/netns rw shared:7 master:6 - tmpfs tmpfs rw\n")


def test_where_init_is_hidden_the_mount_table_tells_a_private_mount_namespace(tmp_path):
    """When init's mount namespace cannot be read (a sandbox hides it), the mount holding /run/netns tells: a slave
    of another namespace's (`master:`, as `ip netns exec` makes every mount) is private, a shared one is not, and a
    mount table that cannot be read says nothing."""
    own, hidden = tmp_path / "own", tmp_path / "hidden"
    own.symlink_to("mnt:[4026532001]")
    for name, text in (("host", HOST_MOUNTS), ("slave", SLAVE_MOUNTS)):
        (tmp_path / name).write_text(text)
    assert netns.private_mount_namespace(str(own), str(hidden), str(tmp_path / "slave")) is True
    assert netns.private_mount_namespace(str(own), str(hidden), str(tmp_path / "host")) is False
    assert netns.private_mount_namespace(str(own), str(hidden), str(tmp_path / "none")) is False
    # /run/netns not a mount point yet: the mount holding it (/run) tells
    (tmp_path / "slave-run").write_text(SLAVE_MOUNTS.splitlines(keepends=True)[0] + SLAVE_MOUNTS.splitlines()[1])
    assert netns.private_mount_namespace(str(own), str(hidden), str(tmp_path / "slave-run")) is True
