"""The DMI component tree built from the OLT model (oltsim.dmi.tree): its shape follows the configuration, its
UUIDs are stable and distinct, unplugged transceivers leave their cage empty, recorded admin states apply."""
from __future__ import annotations

import random

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


def test_uuids_are_stable_unique_and_per_olt():
    """Two builds of the same OLT give the same UUIDs, every component's is distinct, and another OLT id gives
    other UUIDs (BBSim's fan or CPU UUIDs are the same for every OLT)."""
    first = tree.build_tree(olt_with(pon=2))
    again = tree.build_tree(olt_with(pon=2))
    other = tree.build_tree(olt_with(pon=2, olt_id=1))
    ids = [c.uuid.uuid for c in tree.iter_components(first)]
    assert ids == [c.uuid.uuid for c in tree.iter_components(again)]
    assert len(set(ids)) == len(ids)
    assert not set(ids) & {c.uuid.uuid for c in tree.iter_components(other)}
    assert first.uuid.uuid == tree.component_uuid("BBSim-BBSIM_OLT_0")


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
    fan_uuid = tree.component_uuid("BBSim-BBSIM_OLT_0", "Thermal/Fans/System Fan/1")
    change = overrides.change(fan_uuid)
    change.admin_state = hw_pb2.COMP_ADMIN_STATE_LOCKED
    root = tree.build_tree(olt, overrides=overrides)
    fan = tree.find(root, uuid=fan_uuid)
    assert fan.state.admin_state == hw_pb2.COMP_ADMIN_STATE_LOCKED
    other = tree.find(root, name="Thermal/Fans/System Fan/2")
    assert other.state.admin_state == hw_pb2.COMP_ADMIN_STATE_UNLOCKED
