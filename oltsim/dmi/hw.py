"""dmi.NativeHWManagementService over one :class:`oltsim.dmi.device.ManagedDevice`.

Every refusal is an answer with DMI's own ``status`` (ERROR_STATUS), ``reason`` and a ``reason_detail`` saying why,
with gRPC OK; the streams (StartManagingDevice, GetPhysicalInventory, GetHWComponentInfo) send one such answer.
SetHWComponentInfo is BBSim's exception: it is not implemented there, and VOLTHA's DMI system test checks for that.
"""
from __future__ import annotations

import grpc
from dmi import commons_pb2, hw_pb2
from dmi import hw_management_service_pb2 as hm

from oltsim.dmi.answers import answer
from oltsim.dmi.device import AlreadyManaged, UnknownDevice
from oltsim.logs import CONTROL, logger
from oltsim.model.errors import FailedPrecondition, InvalidArgument, OltsimError

__all__ = ["HWManagementServicer"]

log = logger("oltsim.dmi")

_LEVEL_NAMES = {commons_pb2.TRACE: "trace", commons_pb2.DEBUG: "debug", commons_pb2.INFO: "info",
                commons_pb2.WARN: "warn", commons_pb2.ERROR: "error"}


class HWManagementServicer:
    """The hardware management RPCs: managing the device, its inventory, endpoints, log levels, heartbeat, reboot
    and enabling, disabling or resetting components."""

    def __init__(self, device):
        self.device = device

    def _abort(self, context, exc):
        """A method that is not implemented answers UNIMPLEMENTED with its own message, as BBSim's does (the
        generic answer of :func:`oltsim.serving.onloop.failure_status` says only "method not implemented")."""
        if isinstance(exc, NotImplementedError) and exc.args:
            context.abort(grpc.StatusCode.UNIMPLEMENTED, str(exc.args[0]))

    # ---- managing -------------------------------------------------------------------------

    async def StartManagingDevice(self, request, context):
        """Start managing the OLT (``name`` required, ``uri`` its address): one answer with its UUID;
        DEVICE_ALREADY_MANAGED (with the UUID) when it is managed already, INVALID_PARAMS without a name."""
        device = self.device
        try:
            device.start(request.name, request.uri.uri)
        except AlreadyManaged as exc:
            yield answer(hm.StartManagingDeviceResponse, "DEVICE_ALREADY_MANAGED", exc.message,
                          device_uuid=hw_pb2.Uuid(uuid=device.uuid))
            return
        except InvalidArgument as exc:
            yield answer(hm.StartManagingDeviceResponse, "INVALID_PARAMS", exc.message)
            return
        yield answer(hm.StartManagingDeviceResponse, device_uuid=hw_pb2.Uuid(uuid=device.uuid))

    def StopManagingDevice(self, request, context):
        """Stop managing the device named ``name`` (the name given to StartManagingDevice, or the device's own)."""
        try:
            self.device.stop_managing(request.name)
        except (InvalidArgument, UnknownDevice) as exc:
            return answer(hm.StopManagingDeviceResponse, "UNKNOWN_DEVICE", exc.message)
        return answer(hm.StopManagingDeviceResponse)

    def GetManagedDevices(self, request, context):
        """The managed device (none before StartManagingDevice), with the name and URI it was started with."""
        devices = []
        if self.device.started:
            devices.append(hm.ManagedDeviceInfo(
                info=hw_pb2.ModifiableComponent(name=self.device.requested_name,
                                                uri=hw_pb2.Uri(uri=self.device.uri)),
                device_uuid=hw_pb2.Uuid(uuid=self.device.uuid)))
        return answer(hm.ManagedDevicesResponse, devices=devices)

    # ---- inventory ------------------------------------------------------------------------

    async def GetPhysicalInventory(self, request, context):
        """The whole component tree, in one answer."""
        refusal = self.device.refusal(request.device_uuid.uuid)
        if refusal:
            yield answer(hm.PhysicalInventoryResponse, "UNKNOWN_DEVICE", refusal)
            return
        inventory = hw_pb2.Hardware(root=self.device.root())
        inventory.last_change.FromNanoseconds(int(self.device.clock.seconds() * 1e9))
        yield answer(hm.PhysicalInventoryResponse, inventory=inventory)

    async def GetHWComponentInfo(self, request, context):
        """One component (by UUID, else by name), in one answer."""
        refusal = self.device.refusal(request.device_uuid.uuid)
        if refusal:
            yield answer(hm.HWComponentInfoGetResponse, "UNKNOWN_DEVICE", refusal)
            return
        component = self.device.find(request.component_uuid.uuid, request.component_name)
        if component is None:
            yield answer(hm.HWComponentInfoGetResponse, "UNKNOWN_COMPONENT", self.device.unknown_component(
                request.component_uuid.uuid, request.component_name))
            return
        yield answer(hm.HWComponentInfoGetResponse, component=component)

    def SetHWComponentInfo(self, request, context):
        """Not implemented, as in BBSim 1.16.8: gRPC UNIMPLEMENTED ``rpc SetHWComponentInfo not implemented`` for
        any request. VOLTHA's DMI system test (dmi-hw-management.robot) expects exactly that from a simulated OLT,
        for a new name and for an alias alike."""
        raise NotImplementedError("rpc SetHWComponentInfo not implemented")

    # ---- endpoints ------------------------------------------------------------------------

    def SetLoggingEndpoint(self, request, context):
        """Where the device should ship its logs (kept and reported; oltsim ships none). An empty endpoint means
        "ship them nowhere": the endpoint and protocol are cleared, whatever protocol comes with it (VOLTHA's DMI
        test resets with an empty endpoint and protocol ``udp``). An endpoint needs a protocol, ``udp`` or ``tcp``
        (LOGGING_ENDPOINT_PROTOCOL_ERROR otherwise, empty included)."""
        response = hm.SetRemoteEndpointResponse
        refusal = self.device.refusal(request.device_uuid.uuid)
        if refusal:
            return answer(response, "UNKNOWN_DEVICE", refusal)
        if not request.logging_endpoint:
            self.device.logging_endpoint = self.device.logging_protocol = ""
            return answer(response)
        if not request.logging_protocol:
            return answer(response, "LOGGING_ENDPOINT_PROTOCOL_ERROR",
                           f"logging_endpoint {request.logging_endpoint!r} needs a logging_protocol: udp or tcp")
        if request.logging_protocol.lower() not in ("udp", "tcp"):
            return answer(response, "LOGGING_ENDPOINT_PROTOCOL_ERROR",
                           f"logging_protocol {request.logging_protocol!r}: udp or tcp")
        self.device.logging_endpoint = request.logging_endpoint
        self.device.logging_protocol = request.logging_protocol
        return answer(response)

    def GetLoggingEndpoint(self, request, context):
        """The logging endpoint and protocol set (empty if none)."""
        refusal = self.device.refusal(request.uuid.uuid)
        if refusal:
            return answer(hm.GetLoggingEndpointResponse, "UNKNOWN_DEVICE", refusal)
        return answer(hm.GetLoggingEndpointResponse, logging_endpoint=self.device.logging_endpoint,
                       logging_protocol=self.device.logging_protocol)

    def SetMsgBusEndpoint(self, request, context):
        """Events and metrics go to the Kafka broker at ``msgbus_endpoint`` (HOST:PORT), topics dm.events and
        dm.metrics. Not tied to a device (DMI's request names none), so accepted before StartManagingDevice."""
        try:
            self.device.set_msgbus(request.msgbus_endpoint)
        except (InvalidArgument, FailedPrecondition) as exc:
            return answer(hm.SetRemoteEndpointResponse, "MSGBUS_ENDPOINT_ERROR", exc.message)
        return answer(hm.SetRemoteEndpointResponse)

    def GetMsgBusEndpoint(self, request, context):
        """The message bus endpoint set; INTERNAL_ERROR (BBSim's answer) when none is."""
        if not self.device.msgbus_endpoint:
            return answer(hm.GetMsgBusEndpointResponse, "INTERNAL_ERROR", "no message bus endpoint is set "
                           "(SetMsgBusEndpoint)")
        return answer(hm.GetMsgBusEndpointResponse, msgbus_endpoint=self.device.msgbus_endpoint)

    # ---- log levels -----------------------------------------------------------------------

    def GetLoggableEntities(self, request, context):
        """The entities whose log level can be set, at their current levels."""
        refusal = self.device.refusal(request.device_uuid.uuid)
        if refusal:
            return answer(hm.GetLogLevelResponse, "UNKNOWN_DEVICE", refusal)
        return answer(hm.GetLogLevelResponse, device_uuid=hw_pb2.Uuid(uuid=self.device.uuid),
                       logLevels=self._levels(self.device.log_levels))

    def SetLogLevel(self, request, context):
        """Set the level of the entities named (one level without entities: every entity); UNKNOWN_LOG_ENTITY
        names an entity that does not exist, and then nothing is changed."""
        response = hm.SetLogLevelResponse
        refusal = self.device.refusal(request.device_uuid.uuid)
        if refusal:
            return answer(response, "UNKNOWN_DEVICE", refusal)
        levels = dict(self.device.log_levels)
        for entry in request.loglevels:
            if entry.logLevel not in _LEVEL_NAMES:
                return answer(response, "INTERNAL_ERROR", f"unknown log level {entry.logLevel}")
            names = list(entry.entities) or list(levels)
            for name in names:
                if name not in levels:
                    return answer(response, "UNKNOWN_LOG_ENTITY", f"unknown log entity {name!r} (entities: "
                                   f"{', '.join(levels)})", device_uuid=hw_pb2.Uuid(uuid=self.device.uuid))
                levels[name] = entry.logLevel
        self.device.log_levels = levels
        return answer(response, device_uuid=hw_pb2.Uuid(uuid=self.device.uuid))

    def GetLogLevel(self, request, context):
        """The level of the entities named (every entity if none is)."""
        response = hm.GetLogLevelResponse
        refusal = self.device.refusal(request.device_uuid.uuid)
        if refusal:
            return answer(response, "UNKNOWN_DEVICE", refusal)
        names = list(request.entities) or list(self.device.log_levels)
        unknown = [name for name in names if name not in self.device.log_levels]
        if unknown:
            return answer(response, "UNKNOWN_LOG_ENTITY", f"unknown log entity {unknown[0]!r} (entities: "
                           f"{', '.join(self.device.log_levels)})", device_uuid=hw_pb2.Uuid(uuid=self.device.uuid))
        return answer(response, device_uuid=hw_pb2.Uuid(uuid=self.device.uuid),
                       logLevels=self._levels({name: self.device.log_levels[name] for name in names}))

    @staticmethod
    def _levels(levels: dict[str, int]) -> list[hm.EntitiesLogLevel]:
        by_level: dict[int, list[str]] = {}
        for name, level in levels.items():
            by_level.setdefault(level, []).append(name)
        return [hm.EntitiesLogLevel(logLevel=level, entities=names) for level, names in sorted(by_level.items())]

    def SetDmLogLevel(self, request, context):
        """The device manager's own log level: oltsim's log level (as the v1 SetLogLevel sets it). BBSim panics
        here and dies."""
        name = _LEVEL_NAMES.get(request.level)
        if name is None:
            return answer(hm.SetDmLogLevelResponse, "UNKNOWN_LOG_LEVEL", f"unknown log level {request.level}")
        CONTROL.set_level(name)
        log.info("dmi-log-level-set log_level={log_level}", log_level=name)
        return answer(hm.SetDmLogLevelResponse)

    def GetDmLogLevel(self, request, context):
        """The device manager's own log level: oltsim's (BBSim panics here and dies)."""
        levels = {name: level for level, name in _LEVEL_NAMES.items()}
        return answer(hm.GetDmLogLevelResponse, level=levels.get(CONTROL.level, commons_pb2.INFO))

    # ---- device ---------------------------------------------------------------------------

    def HeartbeatCheck(self, request, context):
        """The OLT's heartbeat signature (it changes when the OLT restarts), as the OpenOLT heartbeat reports it."""
        return hm.Heartbeat(heartbeat_signature=self.device.olt.heartbeat_signature & 0xFFFFFFFF)

    def RebootDevice(self, request, context):
        """Reboot the OLT (as the control API's reboot does): DEVICE_IN_WRONG_STATE when it cannot now."""
        refusal = self.device.refusal(request.device_uuid.uuid)
        if refusal:
            return answer(hm.RebootDeviceResponse, "UNKNOWN_DEVICE", refusal)
        try:
            self.device.olt.reboot()
        except OltsimError as exc:
            return answer(hm.RebootDeviceResponse, "DEVICE_IN_WRONG_STATE", exc.message)
        self.device.create_event("EVENT_HW_DEVICE_REBOOT")
        return answer(hm.RebootDeviceResponse)

    def DisableHWComponent(self, request, context):
        """Disable a PON port (its transceiver or cage mean the same port); other components cannot be."""
        return self._switch(request, hm.DisableHWComponentResponse, "DISABLE_UNSUPPORTED", enable=False)

    def EnableHWComponent(self, request, context):
        """Enable a PON port (its transceiver or cage mean the same port); other components cannot be."""
        return self._switch(request, hm.EnableHWComponentResponse, "ENABLE_UNSUPPORTED", enable=True)

    def ResetHWComponent(self, request, context):
        """Reset the chassis (a reboot of the OLT) or a PON port (disabled and enabled again)."""
        response = hm.ResetHWComponentResponse
        found = self._component(request, response)
        if not isinstance(found, hw_pb2.Component):
            return found
        if found.uuid.uuid == self.device.uuid:
            try:
                self.device.olt.reboot()
            except OltsimError as exc:
                return answer(response, "RESET_UNSUPPORTED", exc.message)
            self.device.create_event("EVENT_HW_DEVICE_RESET")
            return answer(response)
        pon_id = self._pon_of(found)
        if pon_id is None:
            return answer(response, "RESET_UNSUPPORTED", f"{found.name} cannot be reset (the chassis and PON "
                           "ports can)")
        try:
            self.device.olt.disable_pon(pon_id)
            self.device.olt.enable_pon(pon_id)
        except OltsimError as exc:
            return answer(response, "RESET_UNSUPPORTED", exc.message)
        return answer(response)

    def _component(self, request, response):
        """The component a Disable/Enable/Reset request names, or the refusal to answer with."""
        refusal = self.device.refusal(request.device_uuid.uuid)
        if refusal:
            return answer(response, "UNKNOWN_DEVICE", refusal)
        component = self.device.find(request.component_uuid.uuid, request.component_name)
        if component is None:
            reason = "INVALID_PARAMS" if not (request.component_uuid.uuid or request.component_name) \
                else "UNKNOWN_COMPONENT"
            return answer(response, reason, self.device.unknown_component(request.component_uuid.uuid,
                                                                           request.component_name))
        return component

    def _pon_of(self, component: hw_pb2.Component) -> int | None:
        """The PON a PON port, transceiver or cage component belongs to (None for other components)."""
        for pon in self.device.olt.pons:
            if component.name in (f"pon-{pon.id}", f"sfp-plus-{pon.id}", f"sfp-plus-transceiver-cage-{pon.id}"):
                return pon.id
        return None

    def _switch(self, request, response, unsupported: str, enable: bool):
        found = self._component(request, response)
        if not isinstance(found, hw_pb2.Component):
            return found
        pon_id = self._pon_of(found)
        if pon_id is None:
            return answer(response, unsupported, f"{found.name} cannot be {'enabled' if enable else 'disabled'}"
                           " (PON ports, their transceivers and cages can)")
        try:
            if enable:
                self.device.olt.enable_pon(pon_id)
            else:
                self.device.olt.disable_pon(pon_id)
        except OltsimError as exc:
            return answer(response, unsupported, exc.message)
        change = self.device.overrides.change(found.uuid.uuid)
        change.admin_state = hw_pb2.COMP_ADMIN_STATE_UNLOCKED if enable else hw_pb2.COMP_ADMIN_STATE_LOCKED
        return answer(response)
