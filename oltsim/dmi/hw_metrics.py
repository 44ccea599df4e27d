"""DMI metrics: the metrics oltsim reports, their configuration (ListMetrics, UpdateMetricsConfiguration), their
simulated values, and the NativeMetricsManagementService servicer.

Supported metrics, their component and BBSim's defaults: fan speed (each fan, every 120 s, 3000-3999 rpm), CPU
usage (every 60 s, 1-19 %), inner surrounding temperature (the sensor, every 120 s, 30-39 degrees C), RAM usage and
disk usage (every 60 s, not configured by default; 10-59 % and 5-49 %). The generator
(:class:`oltsim.dmi.device.ManagedDevice`) samples each configured metric every ``poll_interval`` seconds of the
reactor clock while the device is managed; poll intervals are 1..86400 s.
"""
from __future__ import annotations

from typing import Any

import grpc
from dmi import hw_metrics_mgmt_service_pb2 as mt
from dmi import hw_pb2

from oltsim.dmi.answers import answer, reconfigure
from oltsim.model.errors import InvalidArgument
from oltsim.serving.onloop import AsyncStreamQueue

__all__ = ["METRICS", "MetricsConfig", "MetricsServicer", "PollIntervalUnsupported", "sample"]

#: metric -> (component class, low, high (exclusive), DataValueType)
METRICS = {
    mt.METRIC_FAN_SPEED: (hw_pb2.COMPONENT_TYPE_FAN, 3000, 4000, hw_pb2.VALUE_TYPE_RPM),
    mt.METRIC_CPU_USAGE_PERCENTAGE: (hw_pb2.COMPONENT_TYPE_CPU, 1, 20, hw_pb2.VALUE_TYPE_PERCENT),
    mt.METRIC_RAM_USAGE_PERCENTAGE: (hw_pb2.COMPONENT_TYPE_MEMORY, 10, 60, hw_pb2.VALUE_TYPE_PERCENT),
    mt.METRIC_DISK_USAGE_PERCENTAGE: (hw_pb2.COMPONENT_TYPE_STORAGE, 5, 50, hw_pb2.VALUE_TYPE_PERCENT),
    mt.METRIC_INNER_SURROUNDING_TEMP: (hw_pb2.COMPONENT_TYPE_SENSOR, 30, 40, hw_pb2.VALUE_TYPE_CELSIUS),
}

MIN_POLL_INTERVAL = 1
MAX_POLL_INTERVAL = 86400


class PollIntervalUnsupported(InvalidArgument):
    """A poll interval outside 1..86400 s."""

    #: the DMI reason it is answered with (oltsim.dmi.answers.reconfigure)
    reason = "POLL_INTERVAL_UNSUPPORTED"


def default_metrics() -> dict[int, mt.MetricConfig]:
    """The metrics configured when management starts (BBSim's)."""
    items = [mt.MetricConfig(metric_id=mt.METRIC_CPU_USAGE_PERCENTAGE, is_configured=True, poll_interval=60),
             mt.MetricConfig(metric_id=mt.METRIC_FAN_SPEED, is_configured=True, poll_interval=120),
             mt.MetricConfig(metric_id=mt.METRIC_RAM_USAGE_PERCENTAGE, is_configured=False, poll_interval=60),
             mt.MetricConfig(metric_id=mt.METRIC_DISK_USAGE_PERCENTAGE, is_configured=False, poll_interval=60),
             mt.MetricConfig(metric_id=mt.METRIC_INNER_SURROUNDING_TEMP, is_configured=True, poll_interval=120)]
    return {item.metric_id: item for item in items}


def sample(metric_id: int, random, seconds: float) -> hw_pb2.ComponentSensorData:
    """One simulated reading of ``metric_id`` taken at ``seconds`` (clock time), drawn from ``random``."""
    _, low, high, kind = METRICS[metric_id]
    data = hw_pb2.ComponentSensorData(value=random.randrange(low, high), type=kind, scale=hw_pb2.VALUE_SCALE_UNITS,
                                      status=hw_pb2.SENSOR_STATUS_OK)
    data.timestamp.FromNanoseconds(int(seconds * 1e9))
    return data


class MetricsConfig:
    """The metrics configuration, by MetricNames value."""

    def __init__(self) -> None:
        self.items = default_metrics()

    def reset(self) -> None:
        """Back to the defaults."""
        self.items = default_metrics()

    def listed(self) -> list[mt.MetricConfig]:
        """Every supported metric's configuration, by id."""
        return [self.items[key] for key in sorted(self.items)]

    def configured(self) -> list[mt.MetricConfig]:
        """The metrics being reported."""
        return [item for item in self.listed() if item.is_configured]

    def update(self, changes: list[mt.MetricConfig]) -> None:
        """Apply every change, or none: InvalidArgument for a metric oltsim does not report, PollIntervalUnsupported
        for an interval outside 1..86400 s (0 keeps the current one)."""
        checked = []
        for change in changes:
            if change.metric_id not in METRICS:
                name = mt.MetricNames.Name(change.metric_id) if change.metric_id in mt.MetricNames.values() \
                    else str(change.metric_id)
                raise InvalidArgument(f"metric {name} is not reported by this device (reported: "
                                      f"{', '.join(mt.MetricNames.Name(m) for m in METRICS)})")
            interval = change.poll_interval or self.items[change.metric_id].poll_interval
            if not MIN_POLL_INTERVAL <= interval <= MAX_POLL_INTERVAL:
                raise PollIntervalUnsupported(f"poll interval {interval} s of {mt.MetricNames.Name(change.metric_id)}"
                                              f" is outside {MIN_POLL_INTERVAL}..{MAX_POLL_INTERVAL} s")
            checked.append(mt.MetricConfig(metric_id=change.metric_id, is_configured=change.is_configured,
                                           poll_interval=interval))
        for item in checked:
            self.items[item.metric_id] = item


class MetricsServicer:
    """dmi.NativeMetricsManagementService over one :class:`oltsim.dmi.device.ManagedDevice` (served by on_loop)."""

    def __init__(self, device, *, buffer: int = 1000, buffer_bytes: int = 1 << 20):
        self.device = device
        self._buffer = buffer
        self._buffer_bytes = buffer_bytes

    def ListMetrics(self, request, context):
        """The metrics configuration (UNKNOWN_DEVICE before StartManagingDevice or for another UUID)."""
        refusal = self.device.refusal(request.uuid.uuid)
        if refusal:
            return answer(mt.ListMetricsResponse, "UNKNOWN_DEVICE", refusal)
        return answer(mt.ListMetricsResponse, metrics=mt.MetricsConfig(metrics=self.device.metrics.listed()))

    def UpdateMetricsConfiguration(self, request, context):
        """Change which metrics are reported and how often (``changes``), or go back to the defaults."""
        refusal = self.device.refusal(request.device_uuid.uuid)
        if refusal:
            return answer(mt.MetricsConfigurationResponse, "UNKNOWN_DEVICE", refusal)
        return reconfigure(mt.MetricsConfigurationResponse, request, self.device.metrics, request.changes.metrics,
                           self.device.metrics_changed, "INVALID_METRIC")

    def GetMetric(self, request, context):
        """One reading of a metric of one component (by UUID, else by name)."""
        meta = request.meta_data
        refusal = self.device.refusal(meta.device_uuid.uuid)
        if refusal:
            return answer(mt.GetMetricResponse, "UNKNOWN_DEVICE", refusal)
        component = self.device.find(meta.component_uuid.uuid, meta.component_name)
        if component is None:
            return answer(mt.GetMetricResponse, "UNKNOWN_COMPONENT", self.device.unknown_component(
                meta.component_uuid.uuid, meta.component_name))
        if request.metric_id not in METRICS:
            return answer(mt.GetMetricResponse, "INVALID_METRIC", f"metric {_metric_name(request.metric_id)} is "
                           f"not reported by this device")
        if getattr(component, "class") != METRICS[request.metric_id][0]:
            return answer(mt.GetMetricResponse, "INVALID_METRIC", f"component {component.name} has no metric "
                           f"{_metric_name(request.metric_id)}")
        return answer(mt.GetMetricResponse, metric=self.device.metric(request.metric_id, component))

    async def StreamMetrics(self, request, context):
        """Every metric the device reports from now on, until the client leaves or the server stops; a slow reader
        loses metrics (counted), never the simulator."""
        queue = AsyncStreamQueue(self._buffer, max_bytes=self._buffer_bytes)
        unsubscribe = self.device.subscribe_metrics(
            queue.put, lambda: queue.close(grpc.StatusCode.UNAVAILABLE, "oltsim is stopping"))
        try:
            async for item in queue.items(context):
                yield item
        finally:
            unsubscribe()


def _metric_name(metric_id: int) -> Any:
    return mt.MetricNames.Name(metric_id) if metric_id in mt.MetricNames.values() else metric_id
