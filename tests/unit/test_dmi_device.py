"""The DMI state of the OLT (oltsim.dmi.device.ManagedDevice) on a fake clock: managing and stopping, refusals with
reasons, the metrics and threshold-event generators (only while managed, reconfigurable, gone at stop), events and
metrics delivered to stream readers and to the message bus as BBSim's topics carry them."""
from __future__ import annotations

import json
import random

import pytest
from dmi import hw_events_mgmt_service_pb2 as ev
from dmi import hw_metrics_mgmt_service_pb2 as mt
from dmi import hw_pb2
from twisted.internet import defer
from twisted.internet.task import Clock

from oltsim.config import load_settings
from oltsim.dmi.device import (
    AlreadyManaged,
    ManagedDevice,
    NotManaged,
    UnknownComponent,
    UnknownDevice,
)
from oltsim.model.builder import build_olt
from oltsim.model.errors import InvalidArgument


class RecordingSink:
    """An in-memory message bus: what a KafkaSink would publish, kept in order."""

    def __init__(self, address: str):
        self.address = address
        self.records: list[tuple[str, dict]] = []
        self.started = self.stopped = False

    def start(self):
        self.started = True

    def publish(self, topic, value, key=None):
        self.records.append((topic, json.loads(value)))
        return True

    def stop(self):
        self.stopped = True
        return defer.succeed(None)


def managed(pon: int = 2, **kwargs):
    clock = Clock()
    olt = build_olt(load_settings({"pon": pon, "onu": 1}, None), clock, random.Random(0))
    sinks: list[RecordingSink] = []

    def factory(address):
        sinks.append(RecordingSink(address))
        return sinks[-1]

    device = ManagedDevice(olt, clock, random.Random(1), sink_factory=factory, **kwargs)
    return clock, device, sinks


def test_start_and_stop_managing():
    """StartManagingDevice needs a name and refuses a second start; StopManagingDevice takes the given or the
    device's own name, refuses another one, and stopping an unmanaged device is accepted."""
    clock, device, _ = managed()
    with pytest.raises(InvalidArgument):
        device.start("", "")
    device.start("olt-a", "10.0.0.1")
    assert device.started and (device.requested_name, device.uri) == ("olt-a", "10.0.0.1")
    with pytest.raises(AlreadyManaged, match="StopManagingDevice first"):
        device.start("olt-b", "")
    with pytest.raises(UnknownDevice, match="olt-b"):
        device.stop_managing("olt-b")
    device.stop_managing("olt-a")
    assert not device.started and device.pending_calls() == 0 and clock.getDelayedCalls() == []
    device.stop_managing(device.name)
    with pytest.raises(UnknownDevice):
        device.stop_managing("olt-a-typo")


def test_refusals_say_why():
    """Before StartManagingDevice the reason names it; afterwards another UUID is named with this device's."""
    clock, device, _ = managed()
    assert "call StartManagingDevice first" in device.refusal(device.uuid)
    device.start("olt", "")
    assert device.refusal(device.uuid) == ""
    assert device.uuid in device.refusal("123") and "'123'" in device.refusal("123")
    assert device.refusal("") == "the request has no device_uuid"


def test_metrics_are_reported_at_their_poll_intervals_only_while_managed():
    """The default metrics come at BBSim's intervals (CPU every 60 s, fans and temperature every 120 s), nothing
    before StartManagingDevice or after StopManagingDevice; a new poll interval takes effect."""
    clock, device, _ = managed()
    seen: list = []
    device.subscribe_metrics(seen.append, lambda: None)
    clock.advance(600)
    assert seen == []
    device.start("olt", "")
    clock.advance(60)
    assert [m.metric_id for m in seen] == [mt.METRIC_CPU_USAGE_PERCENTAGE]
    clock.advance(60)
    assert sorted(m.metric_metadata.component_name for m in seen[1:]) == [
        "Systems/1/Processors/0", "Systems/1/Sensor/0", "Thermal/Fans/System Fan/1", "Thermal/Fans/System Fan/2"]
    device.metrics.update([mt.MetricConfig(metric_id=mt.METRIC_CPU_USAGE_PERCENTAGE, is_configured=True,
                                           poll_interval=5)])
    device.metrics_changed()
    del seen[:]
    clock.advance(5)
    assert [m.metric_id for m in seen] == [mt.METRIC_CPU_USAGE_PERCENTAGE]
    assert 1 <= seen[0].value.value < 20 and seen[0].metric_metadata.device_uuid.uuid == device.uuid
    device.stop_managing("olt")
    del seen[:]
    clock.advance(600)
    assert seen == [] and clock.getDelayedCalls() == []


def test_metric_configuration_is_checked():
    """A metric oltsim does not report and a poll interval outside 1..86400 s are refused, and nothing changes."""
    _, device, _ = managed()
    before = device.metrics.listed()
    with pytest.raises(InvalidArgument, match="METRIC_TRANSCEIVER_BIAS"):
        device.metrics.update([mt.MetricConfig(metric_id=mt.METRIC_TRANSCEIVER_BIAS, is_configured=True)])
    with pytest.raises(InvalidArgument, match="outside 1..86400"):
        device.metrics.update([mt.MetricConfig(metric_id=mt.METRIC_FAN_SPEED, poll_interval=90000),
                               mt.MetricConfig(metric_id=mt.METRIC_CPU_USAGE_PERCENTAGE, poll_interval=1)])
    assert device.metrics.listed() == before


def upper(event_id: int, high: int, low: int) -> ev.EventCfg:
    return ev.EventCfg(event_id=event_id, is_configured=True, thresholds=ev.Thresholds(
        upper=ev.WaterMarks(high=ev.ValueType(int_val=high), low=ev.ValueType(int_val=low))))


def test_threshold_events_are_raised_once_and_recovered_once():
    """With the temperature's high watermark below every reading the event is raised once, not on each check;
    once the watermarks are above every reading it is recovered once. The default watermarks raise nothing."""
    clock, device, _ = managed(event_check_interval=10)
    seen: list = []
    device.subscribe_events(seen.append, lambda: None)
    device.start("olt", "")
    clock.advance(100)
    assert seen == []
    device.events.update([upper(ev.EVENT_HW_DEVICE_TEMPERATURE_ABOVE_CRITICAL, 20, 10)])
    device.events_changed()
    for _ in range(5):
        clock.advance(10)
    assert [e.event_id for e in seen] == [ev.EVENT_HW_DEVICE_TEMPERATURE_ABOVE_CRITICAL]
    assert seen[0].threshold_info.observed_value.int_val >= 30
    assert seen[0].event_metadata.component_name == "Systems/1/Sensor/0"
    device.events.update([upper(ev.EVENT_HW_DEVICE_TEMPERATURE_ABOVE_CRITICAL, 60, 50)])
    device.events_changed()
    for _ in range(5):
        clock.advance(10)
    assert [e.event_id for e in seen] == [ev.EVENT_HW_DEVICE_TEMPERATURE_ABOVE_CRITICAL,
                                          ev.EVENT_HW_DEVICE_TEMPERATURE_ABOVE_CRITICAL_RECOVERED]


def test_unconfigured_threshold_events_stop_the_checks():
    """With no threshold event configured the event generator does not run."""
    clock, device, _ = managed()
    device.start("olt", "")
    assert device.pending_calls() == 1 + len(device.metrics.configured())
    device.events.update([ev.EventCfg(event_id=e, is_configured=False) for e in
                          (ev.EVENT_HW_DEVICE_TEMPERATURE_ABOVE_CRITICAL, ev.EVENT_CPU_USAGE_ABOVE_THRESHOLD)])
    device.events_changed()
    assert device.pending_calls() == len(device.metrics.configured())


def test_event_configuration_is_checked():
    """Thresholds on an event without any, lower watermarks, high below low, an unknown id and a threshold event
    without thresholds are refused with the reason; nothing changes."""
    _, device, _ = managed()
    before = device.events.listed()
    cases = [(upper(ev.EVENT_FAN_FAILURE, 2, 1), "has no thresholds"),
             (upper(ev.EVENT_CPU_USAGE_ABOVE_THRESHOLD, 1, 2), "below the low one"),
             (ev.EventCfg(event_id=9999), "unknown event id"),
             (ev.EventCfg(event_id=ev.EVENT_HW_DISK_USAGE_ABOVE_THRESHOLD, is_configured=True), "needs thresholds"),
             (ev.EventCfg(event_id=ev.EVENT_CPU_USAGE_ABOVE_THRESHOLD, is_configured=True, thresholds=ev.Thresholds(
                 lower=ev.WaterMarks(high=ev.ValueType(int_val=2), low=ev.ValueType(int_val=1)))), "upper")]
    for change, words in cases:
        with pytest.raises(InvalidArgument, match=words):
            device.events.update([change])
    assert device.events.listed() == before


def test_a_threshold_event_turned_off_and_on_keeps_its_watermarks():
    """Turning a threshold event off and on again without thresholds keeps the watermarks it had."""
    _, device, _ = managed()
    device.events.update([upper(ev.EVENT_CPU_USAGE_ABOVE_THRESHOLD, 70, 60)])
    device.events.update([ev.EventCfg(event_id=ev.EVENT_CPU_USAGE_ABOVE_THRESHOLD, is_configured=False)])
    assert device.events.watermarks(ev.EVENT_CPU_USAGE_ABOVE_THRESHOLD) is None
    device.events.update([ev.EventCfg(event_id=ev.EVENT_CPU_USAGE_ABOVE_THRESHOLD, is_configured=True)])
    assert device.events.watermarks(ev.EVENT_CPU_USAGE_ABOVE_THRESHOLD) == (70, 60)


def test_create_event_picks_the_component_and_checks_its_arguments():
    """An event goes to the first component of its class unless one is named; unknown events and components and
    calls before StartManagingDevice are refused; an unplugged transceiver can still be named."""
    clock, device, _ = managed()
    with pytest.raises(NotManaged):
        device.create_event("EVENT_FAN_FAILURE")
    device.start("olt", "")
    seen: list = []
    device.subscribe_events(seen.append, lambda: None)
    assert device.create_event("EVENT_FAN_FAILURE").event_metadata.component_name == "Thermal/Fans/System Fan/1"
    assert device.create_event(ev.EVENT_PSU_FAILURE).event_metadata.component_name == "Thermal/PSU/SystemPSU/0"
    assert device.create_event("EVENT_HW_DEVICE_REBOOT").event_metadata.component_name == device.name
    assert device.create_event("EVENT_TRANSCEIVER_PLUG_OUT", component_name="sfp-plus-1"
                               ).event_metadata.component_name == "sfp-plus-1"
    with pytest.raises(InvalidArgument, match="permissible events: .*EVENT_FAN_FAILURE"):
        device.create_event("EVENT_NOPE")
    with pytest.raises(UnknownComponent, match="no component with name 'fan-9'"):
        device.create_event("EVENT_FAN_FAILURE", component_name="fan-9")
    assert len(seen) == 4 and seen[0].raised_ts.ToSeconds() == int(clock.seconds())
    transceivers = device.transceiver_components()
    assert [t.name for t in transceivers] == ["sfp-plus-0", "sfp-plus-1"]
    assert [t.children[0].name for t in transceivers] == ["pon-0", "pon-1"]


def test_message_bus_gets_events_and_metrics_as_json_on_bbsims_topics():
    """After SetMsgBusEndpoint, events go to dm.events and metrics to dm.metrics as JSON with the proto field names;
    a new endpoint stops the old sink; StopManagingDevice stops the sink and forgets the endpoint."""
    clock, device, sinks = managed()
    with pytest.raises(InvalidArgument, match="HOST:PORT"):
        device.set_msgbus("kafka")
    device.start("olt", "")
    device.set_msgbus("127.0.0.1:9092")
    device.create_event("EVENT_FAN_FAILURE")
    clock.advance(60)
    (sink,) = sinks
    assert sink.started and [topic for topic, _ in sink.records] == ["dm.events", "dm.metrics"]
    event, metric = sink.records[0][1], sink.records[1][1]
    assert event["event_id"] == ev.EVENT_FAN_FAILURE
    assert event["event_metadata"]["device_uuid"]["uuid"] == device.uuid
    assert metric["metric_id"] == mt.METRIC_CPU_USAGE_PERCENTAGE
    assert metric["metric_metadata"]["component_name"] == "Systems/1/Processors/0"
    device.set_msgbus("10.0.0.5:9092")
    assert sinks[0].stopped and not sinks[1].stopped and device.msgbus_endpoint == "10.0.0.5:9092"
    device.stop_managing("olt")
    assert sinks[1].stopped and device.msgbus_endpoint == "" and device.sink is None


def test_without_a_message_bus_the_endpoint_is_refused():
    """A device built without a sink factory refuses SetMsgBusEndpoint, saying so."""
    clock = Clock()
    olt = build_olt(load_settings({"pon": 1, "onu": 1}, None), clock, random.Random(0))
    device = ManagedDevice(olt, clock, random.Random(0))
    with pytest.raises(Exception, match="no message bus"):
        device.set_msgbus("127.0.0.1:9092")


def test_close_ends_streams_and_generators():
    """At server stop every reader's on_close runs, the generators and the software operation stop, the sink is
    stopped: no delayed call is left."""
    clock, device, sinks = managed()
    closed = []
    device.subscribe_events(lambda e: True, lambda: closed.append("events"))
    device.subscribe_metrics(lambda m: True, lambda: closed.append("metrics"))
    device.start("olt", "")
    device.set_msgbus("127.0.0.1:9092")
    device.software.activate(lambda s, d: None)
    done = device.close()
    assert sorted(closed) == ["events", "metrics"] and sinks[0].stopped
    assert done.called and device.pending_calls() == 0 and clock.getDelayedCalls() == []


def test_a_failing_reader_does_not_stop_the_others():
    """A stream reader that raises is logged; the next reader still gets the event."""
    _, device, _ = managed()
    device.start("olt", "")
    seen = []

    def broken(event):
        raise RuntimeError("gone")

    device.subscribe_events(broken, lambda: None)
    device.subscribe_events(seen.append, lambda: None)
    device.create_event("EVENT_FAN_FAILURE")
    assert len(seen) == 1


def test_the_tree_shows_plugged_out_transceivers_as_empty_cages():
    """When the OLT model says a PON's transceiver is out, its cage is empty in the tree."""
    clock, device, _ = managed()
    device.start("olt", "")
    device.olt.plug_out_transceiver(1)
    cages = [c for c in device.root().children if getattr(c, "class") == hw_pb2.COMPONENT_TYPE_CONTAINER]
    assert [len(c.children) for c in cages] == [1, 0]
