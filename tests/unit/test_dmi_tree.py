"""The DMI component tree built from the OLT model (oltsim.dmi.tree): its shape follows the configuration, its
UUIDs are BBSim's, stable and distinct, unplugged transceivers leave their cage empty, recorded admin states apply."""
from __future__ import annotations

import random
import uuid

from dmi import hw_pb2
from twisted.internet.task import Clock

from oltsim.config import load_settings
from oltsim.dmi import tree
from oltsim.model.builder import build_olt


def olt_with(**given):
    return build_olt(load_settings({"onu": 1, **given}, None), Clock(), random.Random(0))


def test_tree_follows_the_configuration():
    """One cage per PON holding a transceiver holding the PON port, one port per NNI, then BBSim's two fans, disk,
    CPU, memory, sensor and PSU, under a chassis named <vendor>-<serial>."""
    olt = olt_with(pon=3, nni=2)
    root = tree.build_tree(olt, uri="10.0.0.1")
    assert (root.name, getattr(root, "class"), root.uri.uri) == ("BBSim-BBSIM_OLT_0",
                                                                  hw_pb2.COMPONENT_TYPE_CHASSIS, "10.0.0.1")
    cages = tree.of_class(root, hw_pb2.COMPONENT_TYPE_CONTAINER)
    assert [c.name for c in cages] == [f"sfp-plus-transceiver-cage-{i}" for i in range(3)]
    for pon_id, cage in enumerate(cages):
        (transceiver,) = cage.children
        (port,) = transceiver.children
        assert (transceiver.name, port.name, port.parent) == (f"sfp-plus-{pon_id}", f"pon-{pon_id}",
                                                              f"sfp-plus-{pon_id}")
        assert transceiver.transceiver_attr.trans_type == hw_pb2.XGSPON
    ports = [c.name for c in tree.of_class(root, hw_pb2.COMPONENT_TYPE_PORT)]
    assert ports == ["pon-0", "pon-1", "pon-2", "nni-0", "nni-1"]
    assert len(tree.of_class(root, hw_pb2.COMPONENT_TYPE_FAN)) == 2
    for cls in (hw_pb2.COMPONENT_TYPE_CPU, hw_pb2.COMPONENT_TYPE_MEMORY, hw_pb2.COMPONENT_TYPE_STORAGE,
                hw_pb2.COMPONENT_TYPE_SENSOR, hw_pb2.COMPONENT_TYPE_POWER_SUPPLY):
        assert len(tree.of_class(root, cls)) == 1


#: The UUIDs BBSim 1.16.8 reported for ``-olt_id 10 -pon 2 -onu 16``: GetPhysicalInventory after
#: StartManagingDevice on its DMI port (a bbsim binary built from its 1.16.8 source, run on 2026-11-27), name ->
#: UUID. The chassis is named BBSim-BBSIM_OLT_10.
BBSIM_OLT_10_UUIDS = {
    "BBSim-BBSIM_OLT_10": "895f65ab-64a3-3957-a2db-568a168faa3a",
    "sfp-plus-transceiver-cage-0": "2410ab0a-1f17-3326-9708-da5b62b48d85",
    "sfp-plus-0": "2d0ab069-f461-34e5-a16a-5ebb1f26b1a7",
    "pon-0": "38c3cdcc-f428-370b-a08f-8c64a90552e3",
    "sfp-plus-transceiver-cage-1": "0978564c-c117-3642-baa3-891c02631284",
    "sfp-plus-1": "4aa48df7-0098-3065-9206-0d48f4404677",
    "pon-1": "33fa6d88-cc5f-325b-8f4d-2938adb15b92",
    "Thermal/Fans/System Fan/1": "2f4b639c-80a9-340f-b8d8-4ad06580b3cf",
    "Thermal/Fans/System Fan/2": "4fb1a981-5697-3813-955d-fbb2a2908b2f",
    "Systems/1/Disk/0": "b1d63346-c0b9-3a29-a4e6-e047efff9ddf",
    "Systems/1/Processors/0": "0bcbe296-9855-3218-9479-9c501073773f",
    "Systems/1/Memory/0": "78cd16fd-73d1-3aad-8f13-644ed3101c63",
    "Systems/1/Sensor/0": "b9ada337-63a1-3991-96f5-95416dec1bf0",
    "Thermal/PSU/SystemPSU/0": "ee5fa7a2-0707-3bfb-90dd-678b2d6711c6",
}
NIL = uuid.UUID(int=0)


def bbsim_seed(serial: str, name: str) -> str:
    """What BBSim's getUUID hashes for component ``name`` of OLT ``serial`` (dmi_hw_mgmt.go): the serial for the
    chassis, ``<serial>-<name>`` for a cage, transceiver or port, the bare name for the other components."""
    if name == f"BBSim-{serial}":
        return serial
    if name.startswith(("sfp-plus-", "pon-", "nni-")):
        return f"{serial}-{name}"
    return name


def test_uuids_are_bbsims_at_a_labs_numbering():
    """At OLT id 10 with 2 PONs of 16 ONUs every component's UUID is uuid3(Nil, BBSim's seed) and equals what BBSim
    1.16.8 reported for the same numbering; the NNI port, which BBSim lacks, follows the per-port rule."""
    root = tree.build_tree(olt_with(olt_id=10, pon=2, onu=16))
    got = {c.name: c.uuid.uuid for c in tree.iter_components(root)}
    for name, value in got.items():
        assert value == str(uuid.uuid3(NIL, bbsim_seed("BBSIM_OLT_10", name))), name
    assert got.pop("nni-0") == str(uuid.uuid3(NIL, "BBSIM_OLT_10-nni-0"))
    assert got == BBSIM_OLT_10_UUIDS


def test_the_first_transceiver_of_olt_0_has_the_uuid_bbsimctl_shows():
    """BBSIM_OLT_0's first transceiver is 3f2cdf03-376d-367a-97ba-4764c53b1c66, as Go bbsimctl lists it against
    BBSim (bbsim-reference.md, facts of 2026-11-27), and the chassis is uuid3(Nil, "BBSIM_OLT_0")."""
    olt = olt_with(pon=1)
    assert tree.transceiver_component(olt, olt.pons[0]).uuid.uuid == "3f2cdf03-376d-367a-97ba-4764c53b1c66"
    assert tree.build_tree(olt).uuid.uuid == tree.device_uuid(olt) == str(uuid.uuid3(NIL, "BBSIM_OLT_0"))


def test_uuids_are_stable_and_unique_and_per_port_ones_follow_the_olt():
    """Two builds of the same OLT give the same UUIDs and every component's is distinct; another OLT id changes
    the chassis and per-port UUIDs and, as in BBSim, not those of the fans, CPU, memory, disk, sensor and PSU."""
    first = tree.build_tree(olt_with(olt_id=10, pon=2))
    again = tree.build_tree(olt_with(olt_id=10, pon=2))
    other = tree.build_tree(olt_with(olt_id=11, pon=2))
    ids = [c.uuid.uuid for c in tree.iter_components(first)]
    assert ids == [c.uuid.uuid for c in tree.iter_components(again)]
    assert len(set(ids)) == len(ids)
    shared = {c.name for c in tree.iter_components(first)} & {c.name for c in tree.iter_components(other)}
    same = {c.name for c in tree.iter_components(other) if c.uuid.uuid in set(ids)}
    assert same == {name for name in shared if bbsim_seed("BBSIM_OLT_10", name) == name}
    assert len(same) == 7


def test_an_unplugged_transceiver_leaves_its_cage_empty():
    """A PON whose transceiver is out has an empty cage; the others keep theirs."""
    root = tree.build_tree(olt_with(pon=2), plugged=lambda pon_id: pon_id != 1)
    cages = tree.of_class(root, hw_pb2.COMPONENT_TYPE_CONTAINER)
    assert [len(c.children) for c in cages] == [1, 0]
    assert tree.find(root, name="sfp-plus-1") is None and tree.find(root, name="sfp-plus-0") is not None


def test_gpon_ports_and_transceivers_say_gpon():
    """A GPON PON's transceiver and port carry GPON and its wavelengths."""
    olt = olt_with(pon=1)
    olt.pons[0].technology = "GPON"
    transceiver = tree.transceiver_component(olt, olt.pons[0])
    assert transceiver.transceiver_attr.trans_type == hw_pb2.GPON
    assert list(transceiver.transceiver_attr.rx_wavelength) == [1490]
    assert transceiver.children[0].port_attr.protocol == hw_pb2.PortComponentAttributes.GPON


def test_overrides_apply_to_the_component_they_name():
    """An admin state recorded for one component (by Disable/EnableHWComponent) shows on it, and on no other."""
    olt = olt_with(pon=1)
    overrides = tree.Overrides()
    fan_uuid = str(uuid.uuid3(NIL, "Thermal/Fans/System Fan/1"))
    change = overrides.change(fan_uuid)
    change.admin_state = hw_pb2.COMP_ADMIN_STATE_LOCKED
    root = tree.build_tree(olt, overrides=overrides)
    fan = tree.find(root, uuid=fan_uuid)
    assert fan.state.admin_state == hw_pb2.COMP_ADMIN_STATE_LOCKED
    other = tree.find(root, name="Thermal/Fans/System Fan/2")
    assert other.state.admin_state == hw_pb2.COMP_ADMIN_STATE_UNLOCKED
