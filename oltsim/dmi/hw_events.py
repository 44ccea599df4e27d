"""DMI events: which events are configured (ListEvents, UpdateEventsConfiguration), the component class each event is
raised on, the threshold events the generator checks, and the NativeEventsManagementService servicer.

Defaults are BBSim's (fan and PSU failure, transceiver plug in/out, device temperature above 95 (recovered below
90) degrees), plus CPU usage above 90 % (recovered below 80 %). The generator (:class:`oltsim.dmi.device.
ManagedDevice`) samples the sensors every ``event_check_interval`` seconds of the reactor clock while the device is
managed and raises a configured threshold event once when a sample passes its high watermark, and its _RECOVERED
event once a later sample falls below the low one.
"""
from __future__ import annotations

import grpc
from dmi import hw_events_mgmt_service_pb2 as ev
from dmi import hw_metrics_mgmt_service_pb2 as mt
from dmi import hw_pb2

from oltsim.dmi.answers import answer, reconfigure
from oltsim.model.errors import InvalidArgument
from oltsim.serving.onloop import AsyncStreamQueue

__all__ = ["THRESHOLD_EVENTS", "EventsConfig", "EventsServicer", "component_class", "event_id_of"]

#: threshold event -> (its recovered event, the metric whose samples it watches)
THRESHOLD_EVENTS = {
    ev.EVENT_HW_DEVICE_TEMPERATURE_ABOVE_CRITICAL: (ev.EVENT_HW_DEVICE_TEMPERATURE_ABOVE_CRITICAL_RECOVERED,
                                                    mt.METRIC_INNER_SURROUNDING_TEMP),
    ev.EVENT_CPU_USAGE_ABOVE_THRESHOLD: (ev.EVENT_CPU_USAGE_ABOVE_THRESHOLD_RECOVERED,
                                         mt.METRIC_CPU_USAGE_PERCENTAGE),
    ev.EVENT_HW_DISK_USAGE_ABOVE_THRESHOLD: (ev.EVENT_HW_DISK_USAGE_ABOVE_THRESHOLD_RECOVERED,
                                             mt.METRIC_DISK_USAGE_PERCENTAGE),
    ev.EVENT_HW_MEMORY_USAGE_ABOVE_THRESHOLD: (ev.EVENT_HW_MEMORY_USAGE_ABOVE_THRESHOLD_RECOVERED,
                                               mt.METRIC_RAM_USAGE_PERCENTAGE),
}

# event name prefix -> the component class it is raised on (the rest: the chassis)
_PREFIX_CLASS = (
    ("EVENT_TRANSCEIVER_", hw_pb2.COMPONENT_TYPE_TRANSCEIVER),
    ("EVENT_PSU_", hw_pb2.COMPONENT_TYPE_POWER_SUPPLY),
    ("EVENT_FAN_", hw_pb2.COMPONENT_TYPE_FAN),
    ("EVENT_CPU_", hw_pb2.COMPONENT_TYPE_CPU),
    ("EVENT_HW_DEVICE_TEMPERATURE_", hw_pb2.COMPONENT_TYPE_SENSOR),
    ("EVENT_HW_TEMPERATURE_SENSOR_", hw_pb2.COMPONENT_TYPE_SENSOR),
    ("EVENT_HW_ALL_TEMPERATURE_SENSORS_", hw_pb2.COMPONENT_TYPE_SENSOR),
    ("EVENT_HW_DISK_", hw_pb2.COMPONENT_TYPE_STORAGE),
    ("EVENT_HW_MEMORY_", hw_pb2.COMPONENT_TYPE_MEMORY),
)


def component_class(event_id: int) -> int:
    """The class of component event ``event_id`` is raised on by default (the chassis for device-wide events)."""
    name = ev.EventIds.Name(event_id)
    for prefix, cls in _PREFIX_CLASS:
        if name.startswith(prefix):
            return cls
    return hw_pb2.COMPONENT_TYPE_CHASSIS


def event_id_of(event: int | str) -> int:
    """The EventIds value of ``event`` (a value or a name such as ``EVENT_FAN_FAILURE``); InvalidArgument naming the
    permissible names when it is not one."""
    try:
        if isinstance(event, str):
            value = ev.EventIds.Value(event)
        else:
            value = int(event)
            ev.EventIds.Name(value)
    except (ValueError, TypeError):
        value = 0
    if not value:
        names = ", ".join(n for n in ev.EventIds.keys() if n != "EVENT_NAME_UNDEFINED")
        raise InvalidArgument(f"unknown DMI event {event!r}; permissible events: {names}")
    return value


def _watermarks(high: float, low: float) -> ev.Thresholds:
    return ev.Thresholds(upper=ev.WaterMarks(high=ev.ValueType(int_val=high), low=ev.ValueType(int_val=low)))


def default_events() -> dict[int, ev.EventCfg]:
    """The events configured when management starts (or on reset_to_default)."""
    items = [ev.EventCfg(event_id=e, is_configured=True) for e in
             (ev.EVENT_FAN_FAILURE, ev.EVENT_PSU_FAILURE, ev.EVENT_TRANSCEIVER_PLUG_IN, ev.EVENT_TRANSCEIVER_PLUG_OUT)]
    items.append(ev.EventCfg(event_id=ev.EVENT_HW_DEVICE_TEMPERATURE_ABOVE_CRITICAL, is_configured=True,
                             thresholds=_watermarks(95, 90)))
    items.append(ev.EventCfg(event_id=ev.EVENT_CPU_USAGE_ABOVE_THRESHOLD, is_configured=True,
                             thresholds=_watermarks(90, 80)))
    return {item.event_id: item for item in items}


def value_of(value: ev.ValueType) -> float | None:
    """The number a ValueType holds (None if it holds none)."""
    kind = value.WhichOneof("val")
    return None if kind is None else float(getattr(value, kind))


class EventsConfig:
    """The configured events, by EventIds value."""

    def __init__(self) -> None:
        self.items = default_events()

    def reset(self) -> None:
        """Back to the defaults."""
        self.items = default_events()

    def listed(self) -> list[ev.EventCfg]:
        """Every configured (or explicitly unconfigured) event, by id."""
        return [self.items[key] for key in sorted(self.items)]

    def is_configured(self, event_id: int) -> bool:
        """True if ``event_id`` is reported."""
        item = self.items.get(event_id)
        return bool(item and item.is_configured)

    def watermarks(self, event_id: int) -> tuple[float, float] | None:
        """(high, low) of a configured threshold event, None if it is not configured or has no upper watermarks."""
        item = self.items.get(event_id)
        if item is None or not item.is_configured or item.thresholds.WhichOneof("threshold") != "upper":
            return None
        high, low = value_of(item.thresholds.upper.high), value_of(item.thresholds.upper.low)
        return None if high is None or low is None else (high, low)

    def update(self, changes: list[ev.EventCfg]) -> None:
        """Apply every change, or none: InvalidArgument (saying which and why) for an unknown event, thresholds on
        an event that has none, or watermarks that are missing, lower-bound or with high below low."""
        checked = []
        for change in changes:
            if change.event_id not in ev.EventIds.values() or change.event_id == 0:
                raise InvalidArgument(f"unknown event id {change.event_id}")
            name = ev.EventIds.Name(change.event_id)
            if change.HasField("thresholds"):
                if change.event_id not in THRESHOLD_EVENTS:
                    raise InvalidArgument(f"{name} has no thresholds (threshold events: "
                                          f"{', '.join(ev.EventIds.Name(e) for e in THRESHOLD_EVENTS)})")
                if change.thresholds.WhichOneof("threshold") != "upper":
                    raise InvalidArgument(f"{name} takes upper watermarks (high raises it, low recovers it)")
                high = value_of(change.thresholds.upper.high)
                low = value_of(change.thresholds.upper.low)
                if high is None or low is None:
                    raise InvalidArgument(f"{name}: both the high and the low watermark are required")
                if high < low:
                    raise InvalidArgument(f"{name}: the high watermark {high:g} is below the low one {low:g}")
            elif change.event_id in THRESHOLD_EVENTS:
                # turned on or off without thresholds: the ones it had are kept (a later re-enable needs none)
                kept = self.items.get(change.event_id)
                if kept is not None and kept.HasField("thresholds"):
                    change = ev.EventCfg(event_id=change.event_id, is_configured=change.is_configured,
                                         thresholds=kept.thresholds, component_uuid=change.component_uuid)
                elif change.is_configured:
                    raise InvalidArgument(f"{name} needs thresholds (upper high and low watermarks)")
            checked.append(change)
        for change in checked:
            item = ev.EventCfg()
            item.CopyFrom(change)
            self.items[item.event_id] = item


class EventsServicer:
    """dmi.NativeEventsManagementService over one :class:`oltsim.dmi.device.ManagedDevice` (served by on_loop)."""

    def __init__(self, device, *, buffer: int = 1000, buffer_bytes: int = 1 << 20):
        self.device = device
        self._buffer = buffer
        self._buffer_bytes = buffer_bytes

    def ListEvents(self, request, context):
        """The events configuration (UNKNOWN_DEVICE before StartManagingDevice or for another UUID)."""
        refusal = self.device.refusal(request.uuid.uuid)
        if refusal:
            return answer(ev.ListEventsResponse, "UNKNOWN_DEVICE", refusal)
        return answer(ev.ListEventsResponse, events=ev.EventsCfg(items=self.device.events.listed()))

    def UpdateEventsConfiguration(self, request, context):
        """Change the configured events (``changes``) or go back to the defaults (``reset_to_default``)."""
        refusal = self.device.refusal(request.device_uuid.uuid)
        if refusal:
            return answer(ev.EventsConfigurationResponse, "UNKNOWN_DEVICE", refusal)
        return reconfigure(ev.EventsConfigurationResponse, request, self.device.events, request.changes.items,
                           self.device.events_changed, "INVALID_CONFIG")

    async def StreamEvents(self, request, context):
        """Every event the device raises from now on, until the client leaves or the server stops; a slow reader
        loses events (counted), never the simulator."""
        queue = AsyncStreamQueue(self._buffer, max_bytes=self._buffer_bytes)
        unsubscribe = self.device.subscribe_events(
            queue.put, lambda: queue.close(grpc.StatusCode.UNAVAILABLE, "oltsim is stopping"))
        try:
            async for item in queue.items(context):
                yield item
        finally:
            unsubscribe()
