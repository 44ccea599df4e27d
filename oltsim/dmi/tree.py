"""The DMI component tree of the simulated OLT, built from the OLT model (no I/O, no clock).

One chassis (the root, named ``<vendor>-<serial>`` as BBSim names it) with, per PON, a transceiver cage holding an
SFP+ transceiver (when plugged in) that holds the PON port; one port per NNI; two fans, a CPU, memory, a disk, a
temperature sensor and a power supply (BBSim's set).

Every UUID is derived as BBSim 1.16.8 derives it (``getUUID``, internal/bbsim/dmiserver/dmi_hw_mgmt.go): a name-based
UUID version 3 (MD5) in the Nil namespace, of the OLT's serial for the device; of ``<serial>-<component name>`` for
each PON's cage, transceiver and port (and, by the same rule, for oltsim's NNI ports, which BBSim's tree lacks); of
the bare component name for the fans, CPU, memory, disk, sensor and PSU. So they survive restarts and equal BBSim's,
which tests and labs keep between runs; as in BBSim, the fan ... PSU UUIDs are the same for every OLT (each OLT is a
device of its own, on its own DMI endpoint).

The tree is rebuilt from the model on every request (a few dozen messages), so it always shows the current port
states and plugged transceivers; the admin states DisableHWComponent and EnableHWComponent set are kept in
:class:`Overrides` and applied on top.
"""
from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from dmi import hw_pb2

__all__ = ["ComponentChange", "Overrides", "build_tree", "cage_name", "device_name", "device_uuid", "find",
           "iter_components", "name_uuid", "nni_name", "of_class", "olt_part_uuid", "pon_name", "transceiver_component",
           "transceiver_name", "transceiver_type"]

#: the namespace of every DMI UUID: BBSim hashes its names in the Nil UUID's (google/uuid ``NewMD5(uuid.Nil, ...)``)
NAMESPACE = uuid.UUID(int=0)

FANS = 2
FAN = "Thermal/Fans/System Fan/{}"
CPU = "Systems/1/Processors/0"
MEMORY = "Systems/1/Memory/0"
DISK = "Systems/1/Disk/0"
SENSOR = "Systems/1/Sensor/0"
PSU = "Thermal/PSU/SystemPSU/0"

_WAVELENGTHS = {"GPON": ([1490], [1550]), "XGS-PON": ([1270], [1577])}  # rx, tx in nm, as BBSim reports them
_TRANS_TYPE = {"GPON": hw_pb2.GPON, "XGS-PON": hw_pb2.XGSPON}
_PORT_PROTOCOL = {"GPON": hw_pb2.PortComponentAttributes.GPON, "XGS-PON": hw_pb2.PortComponentAttributes.XGSPON}
_NNI_SPEED = {1000: hw_pb2.PortComponentAttributes.GIGABIT_1, 2500: hw_pb2.PortComponentAttributes.MEGABIT_2500,
              10000: hw_pb2.PortComponentAttributes.GIGABIT_10, 25000: hw_pb2.PortComponentAttributes.GIGABIT_25,
              40000: hw_pb2.PortComponentAttributes.GIGABIT_40, 100000: hw_pb2.PortComponentAttributes.GIGABIT_100}


def device_name(olt) -> str:
    """The DMI name of ``olt``: ``<vendor>-<serial>`` (BBSim's ``BBSim-BBSIM_OLT_0``)."""
    return f"{olt.device_info.get('vendor') or 'BBSim'}-{olt.serial}"


def name_uuid(name: str) -> str:
    """BBSim's UUID of ``name``: UUID version 3 (MD5) of its UTF-8 bytes in the Nil namespace, lower-case text."""
    return str(uuid.uuid3(NAMESPACE, name))


def device_uuid(olt) -> str:
    """The UUID of ``olt``'s DMI device (the chassis): BBSim's, from the OLT's serial alone (``BBSIM_OLT_0`` ->
    ``5295a1d5-a121-372e-b8dc-6f7eda83f0ba``), not from the device name."""
    return name_uuid(olt.serial)


def olt_part_uuid(olt, component: str) -> str:
    """The UUID of ``olt``'s component ``component`` that belongs to one OLT port (cage, transceiver, PON or NNI
    port): BBSim's, from ``<serial>-<component>`` (``BBSIM_OLT_0-sfp-plus-0`` ->
    ``3f2cdf03-376d-367a-97ba-4764c53b1c66``)."""
    return name_uuid(f"{olt.serial}-{component}")


def transceiver_type(technology: str) -> int:
    """The ``hw_pb2.TransceiverType`` of a PON of ``technology`` (``GPON``, ``XGS-PON``; XGSPON otherwise)."""
    return _TRANS_TYPE.get(technology, hw_pb2.XGSPON)


def cage_name(pon_id: int) -> str:
    """The name of PON ``pon_id``'s transceiver cage (BBSim's)."""
    return f"sfp-plus-transceiver-cage-{pon_id}"


def transceiver_name(pon_id: int) -> str:
    """The name of PON ``pon_id``'s transceiver (BBSim's)."""
    return f"sfp-plus-{pon_id}"


def pon_name(pon_id: int) -> str:
    """The name of PON port ``pon_id``'s component (BBSim's)."""
    return f"pon-{pon_id}"


def nni_name(nni_id: int) -> str:
    """The name of NNI port ``nni_id``'s component."""
    return f"nni-{nni_id}"


@dataclass
class ComponentChange:
    """What Disable/EnableHWComponent changed on one component (None: not changed)."""

    admin_state: int | None = None


@dataclass
class Overrides:
    """The changes Disable/EnableHWComponent made, by component UUID; kept while the device is managed."""

    by_uuid: dict[str, ComponentChange] = field(default_factory=dict)

    def change(self, component_uuid: str) -> ComponentChange:
        """The (created on first use) change record of one component."""
        return self.by_uuid.setdefault(component_uuid, ComponentChange())

    def apply(self, component: hw_pb2.Component) -> None:
        """Apply the recorded change of ``component`` (if any) to it in place."""
        change = self.by_uuid.get(component.uuid.uuid)
        if change is not None and change.admin_state is not None:
            component.state.admin_state = change.admin_state


def _state(enabled: bool) -> hw_pb2.ComponentState:
    return hw_pb2.ComponentState(
        admin_state=hw_pb2.COMP_ADMIN_STATE_UNLOCKED,
        oper_state=hw_pb2.COMP_OPER_STATE_ENABLED if enabled else hw_pb2.COMP_OPER_STATE_DISABLED,
        usage_state=hw_pb2.COMP_USAGE_STATE_ACTIVE if enabled else hw_pb2.COMP_USAGE_STATE_IDLE,
        alarm_state=hw_pb2.COMP_ALARM_STATE_UNKNOWN,
        standby_state=hw_pb2.COMP_STANDBY_STATE_PROVIDING_SERVICE)


def _leaf(device: str, name: str, cls: int, description: str, serial: str) -> hw_pb2.Component:
    """A fan, CPU, memory, disk, sensor or PSU, with BBSim's names, descriptions, serial numbers and UUIDs."""
    return hw_pb2.Component(name=name, description=description, parent=device, serial_num=serial,
                            mfg_name=description, uuid=hw_pb2.Uuid(uuid=name_uuid(name)),
                            state=_state(True), **{"class": cls})


def transceiver_component(olt, pon) -> hw_pb2.Component:
    """PON ``pon``'s transceiver with its PON port, as the tree holds it when plugged in."""
    rx, tx = _WAVELENGTHS.get(pon.technology, _WAVELENGTHS["XGS-PON"])
    port = hw_pb2.Component(
        name=pon_name(pon.id), description="bbsim-pon-port", parent=transceiver_name(pon.id),
        uuid=hw_pb2.Uuid(uuid=olt_part_uuid(olt, pon_name(pon.id))), state=_state(pon.oper_state == "up"),
        port_attr=hw_pb2.PortComponentAttributes(
            protocol=_PORT_PROTOCOL.get(pon.technology, hw_pb2.PortComponentAttributes.XGSPON),
            connector_type=hw_pb2.PortComponentAttributes.FIBER_SC_PC, mapping_label=pon_name(pon.id),
            physical_label=f"PON {pon.id}"),
        **{"class": hw_pb2.COMPONENT_TYPE_PORT})
    return hw_pb2.Component(
        name=transceiver_name(pon.id), description="bbsim-transceiver", parent=cage_name(pon.id),
        uuid=hw_pb2.Uuid(uuid=olt_part_uuid(olt, transceiver_name(pon.id))), state=_state(True),
        transceiver_attr=hw_pb2.TransceiverComponentsAttributes(
            form_factor=hw_pb2.TransceiverComponentsAttributes.SFP_PLUS,
            trans_type=transceiver_type(pon.technology), max_distance=10,
            max_distance_scale=hw_pb2.VALUE_SCALE_KILO, rx_wavelength=rx, tx_wavelength=tx,
            wavelength_scale=hw_pb2.VALUE_SCALE_NANO),
        is_fru=True, children=[port], **{"class": hw_pb2.COMPONENT_TYPE_TRANSCEIVER})


def build_tree(olt, *, uri: str = "", plugged: Callable[[int], bool] = lambda pon_id: True,
               firmware: str = "", overrides: Overrides | None = None) -> hw_pb2.Component:
    """The component tree of ``olt`` (its root, the chassis); ``plugged(pon_id)`` says which transceivers are in
    their cage, ``firmware`` is the running image version, ``uri`` the address the manager gave."""
    device = device_name(olt)
    info = olt.device_info
    children = []
    for pon in olt.pons:
        cage = hw_pb2.Component(
            name=cage_name(pon.id), description="cage", parent=device,
            uuid=hw_pb2.Uuid(uuid=olt_part_uuid(olt, cage_name(pon.id))), state=_state(True),
            container_attr=hw_pb2.ContainerComponentAttributes(physical_label=f"SFP+ cage {pon.id}"),
            parent_rel_pos=pon.id, **{"class": hw_pb2.COMPONENT_TYPE_CONTAINER})
        if plugged(pon.id):
            cage.children.append(transceiver_component(olt, pon))
        children.append(cage)
    for nni in olt.nnis:
        children.append(hw_pb2.Component(
            name=nni_name(nni.id), description="bbsim-nni-port", parent=device, parent_rel_pos=nni.id,
            uuid=hw_pb2.Uuid(uuid=olt_part_uuid(olt, nni_name(nni.id))), state=_state(nni.oper_state == "up"),
            port_attr=hw_pb2.PortComponentAttributes(
                protocol=hw_pb2.PortComponentAttributes.ETHERNET, mapping_label=nni_name(nni.id),
                connector_type=hw_pb2.PortComponentAttributes.FIBER_LC, physical_label=f"NNI {nni.id}",
                speed=_NNI_SPEED.get(nni.speed, hw_pb2.PortComponentAttributes.DYNAMIC)),
            **{"class": hw_pb2.COMPONENT_TYPE_PORT}))
    for index in range(1, FANS + 1):
        children.append(_leaf(device, FAN.format(index), hw_pb2.COMPONENT_TYPE_FAN, "bbsim-fan",
                              f"bbsim-fan-serial-{index}"))
    children.append(_leaf(device, DISK, hw_pb2.COMPONENT_TYPE_STORAGE, "bbsim-disk", "bbsim-disk-serial-0"))
    children.append(_leaf(device, CPU, hw_pb2.COMPONENT_TYPE_CPU, "bbsim-cpu", "bbsim-cpu-serial-0"))
    children.append(_leaf(device, MEMORY, hw_pb2.COMPONENT_TYPE_MEMORY, "bbsim-ram", "bbsim-ram-serial-0"))
    children.append(_leaf(device, SENSOR, hw_pb2.COMPONENT_TYPE_SENSOR, "bbsim-istemp",
                          "bbsim-sensor-istemp-serial-0"))
    children.append(_leaf(device, PSU, hw_pb2.COMPONENT_TYPE_POWER_SUPPLY, "bbsim-psu", "bbsim-psu-serial-0"))
    children[-1].psu_attr.supported_voltage = hw_pb2.PsuComponentAttributes.V230
    root = hw_pb2.Component(
        name=device, description=info.get("model", ""), serial_num=olt.serial, mfg_name=info.get("vendor", ""),
        model_name=info.get("model", ""), hardware_rev=info.get("hardware_version", ""), firmware_rev=firmware,
        software_rev=firmware, uri=hw_pb2.Uri(uri=uri), uuid=hw_pb2.Uuid(uuid=device_uuid(olt)),
        state=_state(olt.oper_state == "up"), children=children, **{"class": hw_pb2.COMPONENT_TYPE_CHASSIS})
    if overrides is not None:
        for component in iter_components(root):
            overrides.apply(component)
    return root


def iter_components(root: hw_pb2.Component) -> Iterator[hw_pb2.Component]:
    """``root`` and every component below it, depth first."""
    stack = [root]
    while stack:
        component = stack.pop()
        yield component
        stack.extend(reversed(component.children))


def find(root: hw_pb2.Component, *, uuid: str = "", name: str = "") -> hw_pb2.Component | None:
    """The component with UUID ``uuid`` (when given) else name ``name``; None if there is none."""
    for component in iter_components(root):
        if (uuid and component.uuid.uuid == uuid) or (not uuid and name and component.name == name):
            return component
    return None


def of_class(root: hw_pb2.Component, cls: int) -> list[hw_pb2.Component]:
    """Every component of class ``cls`` (a hw_pb2.ComponentType), in tree order."""
    return [c for c in iter_components(root) if getattr(c, "class") == cls]
