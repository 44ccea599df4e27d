"""The DMI state of the simulated OLT: whether a device manager manages it, its component tree, endpoints, log
levels, events and metrics configuration, the generators that raise events and report metrics on the reactor clock,
and where they go (StreamEvents/StreamMetrics readers and the message bus)."""
from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from dmi import hw_events_mgmt_service_pb2 as ev
from dmi import hw_metrics_mgmt_service_pb2 as mt
from dmi import hw_pb2
from google.protobuf import json_format
from twisted.application.service import Service
from twisted.internet import defer, task

from oltsim.dmi import tree
from oltsim.dmi.hw_events import (
    THRESHOLD_EVENTS,
    EventsConfig,
    component_class,
    event_id_of,
)
from oltsim.dmi.hw_metrics import METRICS, MetricsConfig, sample
from oltsim.kafka import parse_address
from oltsim.logs import logger
from oltsim.model.errors import FailedPrecondition, InvalidArgument, NotFound
from oltsim.model.software import SoftwareImages

__all__ = [
    "EVENTS_TOPIC",
    "METRICS_TOPIC",
    "AlreadyManaged",
    "DeviceService",
    "ManagedDevice",
    "NotManaged",
    "UnknownComponent",
    "UnknownDevice",
    "to_json",
]

log = logger("oltsim.dmi")

#: BBSim's topics (dmi_kafka_producer.go)
EVENTS_TOPIC = "dm.events"
METRICS_TOPIC = "dm.metrics"

#: log entities GetLoggableEntities lists (the parts of oltsim that log), all at INFO at first
LOG_ENTITIES = ("oltsim.dmi", "oltsim.southbound", "oltsim.model", "oltsim.api", "oltsim.packets", "oltsim.omci")
_INFO = 2  # commons_pb2.INFO


class NotManaged(FailedPrecondition):
    """A call that needs StartManagingDevice first."""

    def __init__(self) -> None:
        super().__init__("device management not started: call StartManagingDevice first")


class AlreadyManaged(FailedPrecondition):
    """StartManagingDevice while the device is managed already."""


class UnknownDevice(NotFound):
    """A device UUID or name that is not this OLT's."""


class UnknownComponent(NotFound):
    """A component UUID or name that is not in this OLT's tree."""


def to_json(message) -> bytes:
    """What the message bus carries for an Event or Metric: JSON with the proto field names and enums as numbers (the
    shape of BBSim's Go JSON; timestamps are RFC 3339 strings)."""
    return json.dumps(json_format.MessageToDict(message, preserving_proto_field_name=True,
                                                use_integers_for_enums=True), separators=(",", ":")).encode()


class _Readers:
    """Stream readers: ``deliver(item) -> bool`` each, ``on_close()`` when the server stops."""

    def __init__(self) -> None:
        self._readers: list[tuple[Callable[[Any], bool], Callable[[], None]]] = []

    def add(self, deliver, on_close) -> Callable[[], None]:
        entry = (deliver, on_close)
        self._readers.append(entry)

        def remove() -> None:
            if entry in self._readers:
                self._readers.remove(entry)
        return remove

    def deliver(self, item) -> None:
        for deliver, _ in list(self._readers):
            try:
                deliver(item)
            except Exception:
                log.failure("dmi-reader-failed")

    def close_all(self) -> None:
        readers, self._readers = self._readers, []
        for _, on_close in readers:
            try:
                on_close()
            except Exception:
                log.failure("dmi-reader-close-failed")

    def __len__(self) -> int:
        return len(self._readers)


class ManagedDevice:
    """The DMI view of one OLT (``olt``, the model), on the injected ``clock``; ``random`` draws the simulated sensor
    readings; ``sink_factory(address)`` makes the message-bus sink for SetMsgBusEndpoint (an object with ``start()``,
    ``publish(topic, value: bytes, key=None) -> bool`` and ``stop()``; None: no message bus, SetMsgBusEndpoint is
    refused).

    Stable API (also used by BBSim's BBsim_dmi service, ``oltsim.dmi.transceivers``):

    * ``started`` -- True between StartManagingDevice and StopManagingDevice;
    * ``name`` -- the device's DMI name, ``<vendor>-<serial>`` (``BBSim-BBSIM_OLT_0``), and ``uuid`` -- its UUID
      (BBSim's: a UUID3 of the OLT's serial, ``oltsim.dmi.tree.device_uuid``, the same across restarts); both are
      set whether or not the device is managed;
    * ``root()`` -- the current component tree (a ``dmi.Component``, rebuilt from the model on each call);
    * ``transceiver_components()`` -- per PON (list index = PON id) the transceiver component with its PON port,
      whether or not it is plugged in (the tree holds only the plugged ones);
    * ``transceiver_type(pon_id)`` -- the type BBSim's GetTransceivers reports for that transceiver, and
      ``transceiver_plugged_in(pon_id)`` -- to be called after a plug-in (see :meth:`transceiver_type`);
    * ``create_event(event_id, component_uuid=None, component_name=None) -> dmi.Event`` -- raise an event (an
      EventIds value or name) on a component (by UUID, else name, else the first component of the event's class:
      transceiver, fan, PSU, sensor ...; the chassis for device-wide events), sent to every StreamEvents reader and
      the message bus (topic ``dm.events``) whether or not the event is configured (it is an explicit request);
      raises ``NotManaged`` before StartManagingDevice, ``InvalidArgument`` for an unknown event (naming the
      permissible ones), ``UnknownComponent`` for a component that does not exist.
    """

    def __init__(self, olt, clock, random, *, sink_factory: Callable[[str], Any] | None = None,
                 event_check_interval: float = 10.0, software: SoftwareImages | None = None):
        self.olt = olt
        self.clock = clock
        self.random = random
        self.sink_factory = sink_factory
        self.event_check_interval = event_check_interval
        self.software = software or getattr(olt, "software", None) or SoftwareImages.for_firmware(
            clock, olt.device_info.get("firmware_version", ""))
        self.started = False
        #: the name and URI StartManagingDevice gave
        self.requested_name = ""
        self.uri = ""
        self.logging_endpoint = ""
        self.logging_protocol = ""
        self.msgbus_endpoint = ""
        self.sink = None
        self.log_levels = dict.fromkeys(LOG_ENTITIES, _INFO)
        self.events = EventsConfig()
        self.metrics = MetricsConfig()
        self.overrides = tree.Overrides()
        self.events_sent = 0
        self.metrics_sent = 0
        self._event_readers = _Readers()
        self._metric_readers = _Readers()
        self._metric_loops: dict[int, task.LoopingCall] = {}
        self._event_loop: task.LoopingCall | None = None
        self._raised: set[int] = set()
        self._stopping_sinks: list[defer.Deferred] = []
        #: PON ids whose transceiver has been in the tree of the managed device (see transceiver_type)
        self._typed_transceivers: set[int] = set()

    # ---- identity and the tree ------------------------------------------------------------

    @property
    def name(self) -> str:
        """The device's DMI name (``<vendor>-<serial>``)."""
        return tree.device_name(self.olt)

    @property
    def uuid(self) -> str:
        """The device's UUID (BBSim's: a UUID3 of the OLT's serial)."""
        return tree.device_uuid(self.olt)

    def _plugged(self, pon_id: int) -> bool:
        plugged = getattr(self.olt, "transceiver_plugged", None)
        return True if plugged is None else bool(plugged(pon_id))

    def root(self) -> hw_pb2.Component:
        """The component tree as it is now (chassis at the root)."""
        return tree.build_tree(self.olt, uri=self.uri, plugged=self._plugged, firmware=self.software.running.version,
                               overrides=self.overrides)

    def transceiver_components(self) -> list[hw_pb2.Component]:
        """Per PON (index = PON id), its transceiver component, plugged in or not."""
        components = []
        for pon in self.olt.pons:
            component = tree.transceiver_component(self.olt, pon)
            for each in tree.iter_components(component):
                self.overrides.apply(each)
            components.append(component)
        return components

    def transceiver_type(self, pon_id: int) -> int:
        """The ``hw_pb2.TransceiverType`` of PON ``pon_id``'s transceiver as BBSim's GetTransceivers reports it:
        TYPE_UNDEFINED until the transceiver was first in the tree of a managed device (plugged in at a
        StartManagingDevice, or plugged in later), then its PON's technology for good, through StopManagingDevice
        and plug-outs too. BBSim learns a transceiver's type only when it builds its inventory component, and
        ``bbsimctl dmi transceiver list`` shows what it learnt; the inventory itself always carries the type."""
        if pon_id not in self._typed_transceivers:
            return hw_pb2.TYPE_UNDEFINED
        return tree.transceiver_type(self.olt.pon(pon_id).technology)

    def transceiver_plugged_in(self, pon_id: int) -> None:
        """PON ``pon_id``'s transceiver was plugged in while managed: its type is known from now on."""
        self._typed_transceivers.add(pon_id)

    def find(self, component_uuid: str = "", component_name: str = "") -> hw_pb2.Component | None:
        """The component with that UUID (else name) in the tree or among the unplugged transceivers; None if none."""
        if not component_uuid and not component_name:
            return None
        found = tree.find(self.root(), uuid=component_uuid, name=component_name)
        if found is None:
            for transceiver in self.transceiver_components():
                found = tree.find(transceiver, uuid=component_uuid, name=component_name)
                if found is not None:
                    break
        return found

    def unknown_component(self, component_uuid: str, component_name: str) -> str:
        """The reason_detail for a component that :meth:`find` did not find."""
        if not component_uuid and not component_name:
            return "the request names no component (component_uuid or component_name)"
        what = f"uuid {component_uuid}" if component_uuid else f"name {component_name!r}"
        return f"no component with {what} on device {self.name} (GetPhysicalInventory lists them)"

    # ---- checks ---------------------------------------------------------------------------

    def refusal(self, device_uuid: str) -> str:
        """Why a call for ``device_uuid`` cannot be served ('' if it can): not managed yet, or another device."""
        if not self.started:
            return NotManaged().message
        if device_uuid != self.uuid:
            return (f"unknown device uuid {device_uuid!r}: this device manager manages {self.name} "
                    f"(uuid {self.uuid})" if device_uuid else "the request has no device_uuid")
        return ""

    def check(self, device_uuid: str) -> None:
        """Raise NotManaged or UnknownDevice when :meth:`refusal` would refuse ``device_uuid``."""
        if not self.started:
            raise NotManaged()
        reason = self.refusal(device_uuid)
        if reason:
            raise UnknownDevice(reason)

    # ---- managing -------------------------------------------------------------------------

    def start(self, name: str, uri: str) -> None:
        """StartManagingDevice: InvalidArgument without a name, AlreadyManaged when managed already; then the
        generators run."""
        if not name:
            raise InvalidArgument("'name' can not be empty in the request")
        if self.started:
            raise AlreadyManaged(f"device {self.name} is managed already (as {self.requested_name!r}, uuid "
                                 f"{self.uuid}); call StopManagingDevice first")
        self.started = True
        self.requested_name = name
        self.uri = uri
        self._typed_transceivers.update(pon.id for pon in self.olt.pons if self._plugged(pon.id))
        self.events.reset()
        self.metrics.reset()
        self._raised.clear()
        self.metrics_changed()
        self.events_changed()
        log.info("dmi-managing-started name={name} uri={uri} device={device} uuid={uuid}", name=name, uri=uri,
                 device=self.name, uuid=self.uuid)

    def stop_managing(self, name: str) -> None:
        """StopManagingDevice for ``name`` (the name StartManagingDevice gave, or the device's own): InvalidArgument
        without a name, UnknownDevice for another name; the generators stop, the message bus sink is stopped and
        the endpoints, overrides and configurations are forgotten. Stopping a device that is not managed is
        accepted (DMI allows StopManagingDevice at any time)."""
        if not name:
            raise InvalidArgument("'name' can not be empty in the request")
        if self.started and name not in (self.requested_name, self.name):
            raise UnknownDevice(f"unknown device {name!r}: this device manager manages {self.requested_name!r} "
                                f"({self.name})")
        if not self.started and name != self.name and name != self.requested_name:
            raise UnknownDevice(f"unknown device {name!r}: no device is managed (this OLT is {self.name})")
        was = self.started
        self._stop_generators()
        self._drop_sink()
        self.started = False
        self.uri = ""
        self.logging_endpoint = self.logging_protocol = self.msgbus_endpoint = ""
        self.overrides = tree.Overrides()
        self.log_levels = dict.fromkeys(LOG_ENTITIES, _INFO)
        if was:
            log.info("dmi-managing-stopped name={name} device={device}", name=name, device=self.name)

    def close(self) -> defer.Deferred:
        """The server is stopping: generators and software operations stopped, streams ended, the sink stopped
        (the Deferred fires when every sink has stopped)."""
        self._stop_generators()
        self.software.stop()
        self.close_streams()
        self._drop_sink()
        stopping, self._stopping_sinks = self._stopping_sinks, []
        return defer.DeferredList(stopping, consumeErrors=True)

    def close_streams(self) -> None:
        """End every StreamEvents and StreamMetrics reader (UNAVAILABLE: the server is stopping)."""
        self._event_readers.close_all()
        self._metric_readers.close_all()

    def pending_calls(self) -> int:
        """Generators still running (0 after :meth:`close` or StopManagingDevice)."""
        return sum(1 for loop in self._metric_loops.values() if loop.running) + \
            (1 if self._event_loop is not None and self._event_loop.running else 0)

    # ---- message bus ----------------------------------------------------------------------

    def set_msgbus(self, endpoint: str) -> None:
        """SetMsgBusEndpoint: events and metrics go to the Kafka broker at ``endpoint`` (HOST:PORT, or several
        separated by commas, as ``--kafka`` takes them) from now on;
        the previous sink is stopped. InvalidArgument for an endpoint that is not HOST:PORT, FailedPrecondition
        when this server has no message bus."""
        try:
            parse_address(endpoint)
        except ValueError as exc:
            raise InvalidArgument(f"message bus endpoint {endpoint!r} is not HOST:PORT ({exc})") from None
        if self.sink_factory is None:
            raise FailedPrecondition("this server has no message bus support")
        sink = self.sink_factory(endpoint)
        self._drop_sink()
        self.sink = sink
        self.msgbus_endpoint = endpoint
        sink.start()
        log.info("dmi-msgbus-set endpoint={endpoint}", endpoint=endpoint)

    def _drop_sink(self) -> None:
        sink, self.sink = self.sink, None
        if sink is None:
            return
        try:
            stopped = sink.stop()
        except Exception:
            log.failure("dmi-msgbus-stop-failed")
            return
        if isinstance(stopped, defer.Deferred):
            self._stopping_sinks.append(stopped)
            stopped.addBoth(lambda result: self._stopping_sinks.remove(stopped) if stopped in self._stopping_sinks
                            else None)

    def _publish(self, topic: str, message) -> None:
        if self.sink is None:
            return
        try:
            self.sink.publish(topic, to_json(message))
        except Exception:
            log.failure("dmi-msgbus-publish-failed topic={topic}", topic=topic)

    # ---- events ---------------------------------------------------------------------------

    def subscribe_events(self, deliver: Callable[[ev.Event], bool], on_close: Callable[[], None]
                         ) -> Callable[[], None]:
        """Deliver every event raised from now on; ``on_close()`` when the server stops; returns the unsubscribe."""
        return self._event_readers.add(deliver, on_close)

    def create_event(self, event_id: int | str, component_uuid: str | None = None,
                     component_name: str | None = None, **fields: Any) -> ev.Event:
        """Raise an event (see the class docstring); ``fields`` are further ``dmi.Event`` fields (threshold_info,
        add_info ...)."""
        if not self.started:
            raise NotManaged()
        event_id = event_id_of(event_id)
        if component_uuid or component_name:
            component = self.find(component_uuid or "", component_name or "")
            if component is None:
                raise UnknownComponent(self.unknown_component(component_uuid or "", component_name or ""))
        else:
            root = self.root()
            cls = component_class(event_id)
            found = tree.of_class(root, cls) or (self.transceiver_components()
                                                 if cls == hw_pb2.COMPONENT_TYPE_TRANSCEIVER else [])
            component = found[0] if found else root
        event = ev.Event(event_id=event_id, event_metadata=ev.EventMetaData(
            device_uuid=hw_pb2.Uuid(uuid=self.uuid), component_uuid=component.uuid, component_name=component.name),
            **fields)
        event.raised_ts.FromNanoseconds(int(self.clock.seconds() * 1e9))
        self._emit_event(event)
        return event

    def _emit_event(self, event: ev.Event) -> None:
        self.events_sent += 1
        log.info("dmi-event-raised event={event} component={component}", event=ev.EventIds.Name(event.event_id),
                 component=event.event_metadata.component_name)
        self._event_readers.deliver(event)
        self._publish(EVENTS_TOPIC, event)

    def events_changed(self) -> None:
        """The events configuration changed: (re)start the threshold checks if a threshold event is configured."""
        self._raised &= {e for e in THRESHOLD_EVENTS if self.events.watermarks(e) is not None}
        wanted = self.started and any(self.events.watermarks(e) is not None for e in THRESHOLD_EVENTS)
        if wanted and self._event_loop is None:
            self._event_loop = self._loop(self._check_thresholds, self.event_check_interval)
        elif not wanted and self._event_loop is not None:
            self._stop_loop(self._event_loop)
            self._event_loop = None

    def _check_thresholds(self) -> None:
        """One round of the event generator: sample each watched sensor, raise or recover its threshold event."""
        root = self.root()
        for event_id, (recovered, metric_id) in THRESHOLD_EVENTS.items():
            marks = self.events.watermarks(event_id)
            components = tree.of_class(root, METRICS[metric_id][0])
            if marks is None or not components:
                continue
            high, low = marks
            reading = sample(metric_id, self.random, self.clock.seconds())
            thresholds = self.events.items[event_id].thresholds
            info = ev.ThresholdInformation(observed_value=ev.ValueType(int_val=reading.value, typeOfVal=reading.type),
                                           thresholds=thresholds)
            if event_id not in self._raised and reading.value > high:
                self._raised.add(event_id)
                self.create_event(event_id, components[0].uuid.uuid, threshold_info=info)
            elif event_id in self._raised and reading.value < low:
                self._raised.discard(event_id)
                self.create_event(recovered, components[0].uuid.uuid, threshold_info=info)

    # ---- metrics --------------------------------------------------------------------------

    def subscribe_metrics(self, deliver: Callable[[mt.Metric], bool], on_close: Callable[[], None]
                          ) -> Callable[[], None]:
        """Deliver every metric reported from now on; ``on_close()`` when the server stops; returns the
        unsubscribe."""
        return self._metric_readers.add(deliver, on_close)

    def metric(self, metric_id: int, component: hw_pb2.Component) -> mt.Metric:
        """One reading of ``metric_id`` on ``component``."""
        return mt.Metric(metric_id=metric_id, metric_metadata=mt.MetricMetaData(
            device_uuid=hw_pb2.Uuid(uuid=self.uuid), component_uuid=component.uuid, component_name=component.name),
            value=sample(metric_id, self.random, self.clock.seconds()))

    def metrics_changed(self) -> None:
        """The metrics configuration changed: one generator per configured metric at its poll interval."""
        wanted = {item.metric_id: item.poll_interval for item in self.metrics.configured()} if self.started else {}
        for metric_id, loop in list(self._metric_loops.items()):
            if wanted.get(metric_id) != loop.interval:
                self._stop_loop(loop)
                del self._metric_loops[metric_id]
        for metric_id, interval in wanted.items():
            if metric_id not in self._metric_loops:
                self._metric_loops[metric_id] = self._loop(self._report_metric, float(interval), metric_id)

    def _report_metric(self, metric_id: int) -> None:
        for component in tree.of_class(self.root(), METRICS[metric_id][0]):
            metric = self.metric(metric_id, component)
            self.metrics_sent += 1
            self._metric_readers.deliver(metric)
            self._publish(METRICS_TOPIC, metric)

    # ---- generators -----------------------------------------------------------------------

    def _loop(self, fn: Callable[..., None], interval: float, *args: Any) -> task.LoopingCall:
        def guarded() -> None:
            try:
                fn(*args)
            except Exception:
                log.failure("dmi-generator-failed what={what}", what=fn.__name__)

        loop = task.LoopingCall(guarded)
        loop.clock = self.clock
        loop.start(interval, now=False)
        return loop

    @staticmethod
    def _stop_loop(loop: task.LoopingCall) -> None:
        if loop.running:
            loop.stop()

    def _stop_generators(self) -> None:
        for loop in self._metric_loops.values():
            self._stop_loop(loop)
        self._metric_loops.clear()
        if self._event_loop is not None:
            self._stop_loop(self._event_loop)
            self._event_loop = None
        self._raised.clear()


class DeviceService(Service):
    """Stops ``device`` (generators, software operation, streams, message-bus sink) when the daemon stops; the
    Deferred stopService returns fires once the sink has stopped."""

    def __init__(self, device: ManagedDevice):
        self.device = device

    def stopService(self):
        super().stopService()
        return self.device.close()
