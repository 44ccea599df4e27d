"""The DMI servicers in memory, on a fake clock, over an OLT an adapter has enabled: what they drive in the model
(PON ports disabled and enabled, reboot, firmware version), what they keep (component changes, log levels,
configurations) and the answers of their streams."""
from __future__ import annotations

import asyncio
import functools
import random

import grpc
import pytest
import pytest_twisted
from conftest import FakeContext, Sim
from dmi import commons_pb2, hw_pb2
from dmi import hw_events_mgmt_service_pb2 as ev
from dmi import hw_management_service_pb2 as hm
from dmi import hw_metrics_mgmt_service_pb2 as mt
from dmi import sw_image_pb2 as si
from dmi import sw_management_service_pb2 as sm
from twisted.internet.defer import Deferred

from oltsim.dmi.device import ManagedDevice
from oltsim.dmi.hw_events import EventsServicer
from oltsim.dmi.hw import HWManagementServicer
from oltsim.dmi.hw_metrics import MetricsServicer
from oltsim.dmi.sw import SoftwareManagementServicer
from oltsim.logs import CONTROL
from oltsim.serving.onloop import failure_status

OK = commons_pb2.OK_STATUS


def on_reactor_loop(test):
    """Run an async test as an asyncio task on the reactor's running loop (where the servicers' streams wait)."""
    @pytest_twisted.ensureDeferred
    @functools.wraps(test)
    async def run(*args, **kwargs):
        return await Deferred.fromFuture(asyncio.ensure_future(test(*args, **kwargs)))
    return run


async def collect(stream, clock=None, step: float = 1.0, rounds: int = 20) -> list:
    """Everything an async stream yields, read on the reactor's running loop, advancing ``clock`` by ``step``
    whenever it waits (at most ``rounds`` times); a stream still open after that is cancelled, as a client that
    leaves."""
    items = []

    async def drain():
        async for item in stream:
            items.append(item)

    task = asyncio.ensure_future(drain())
    for _ in range(rounds + 1):
        for _ in range(5):
            await asyncio.sleep(0)
        if task.done() or clock is None:
            break
        clock.advance(step)
    if not task.done():
        task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    return items


@pytest.fixture
def dmi():
    """An enabled 2-PON OLT with its ONUs up, managed through the DMI servicers."""
    sim = Sim(pon=2, onu=1)
    sim.bring_up()
    device = ManagedDevice(sim.olt, sim.clock, random.Random(3))
    hw = HWManagementServicer(device)
    device.start("olt", "")
    sim.device, sim.hw, sim.uuid = device, hw, hw_pb2.Uuid(uuid=device.uuid)
    sim.sw = SoftwareManagementServicer(device)
    yield sim
    device.close()
    sim.sw.close_all()


def test_disabling_and_enabling_a_pon_component_drives_the_pon(dmi):
    """DisableHWComponent on a PON port takes the PON down and locks the component; EnableHWComponent (named by its
    transceiver) brings it back; a fan cannot be disabled."""
    answer = dmi.hw.DisableHWComponent(hm.DisableHWComponentRequest(device_uuid=dmi.uuid, component_name="pon-1"),
                                       FakeContext())
    assert answer.status == OK and dmi.olt.pons[1].state == "disabled"
    port = dmi.device.find(component_name="pon-1")
    assert port.state.admin_state == hw_pb2.COMP_ADMIN_STATE_LOCKED
    answer = dmi.hw.EnableHWComponent(hm.EnableHWComponentRequest(device_uuid=dmi.uuid, component_name="sfp-plus-1"),
                                      FakeContext())
    assert answer.status == OK and dmi.olt.pons[1].state == "enabled"
    fan = dmi.hw.DisableHWComponent(hm.DisableHWComponentRequest(
        device_uuid=dmi.uuid, component_name="Thermal/Fans/System Fan/1"), FakeContext())
    assert fan.reason == hm.DisableHWComponentResponse.DISABLE_UNSUPPORTED and "PON ports" in fan.reason_detail


def test_reset_of_a_pon_and_reboot_of_the_device(dmi):
    """ResetHWComponent on a PON port leaves it enabled; RebootDevice reboots the OLT and raises
    EVENT_HW_DEVICE_REBOOT; a second reboot while rebooting is DEVICE_IN_WRONG_STATE."""
    seen = []
    dmi.device.subscribe_events(seen.append, lambda: None)
    reset = dmi.hw.ResetHWComponent(hm.ResetHWComponentRequest(device_uuid=dmi.uuid, component_name="pon-0"),
                                    FakeContext())
    assert reset.status == OK and dmi.olt.pons[0].state == "enabled"
    assert dmi.hw.RebootDevice(hm.RebootDeviceRequest(device_uuid=dmi.uuid), FakeContext()).status == OK
    assert dmi.olt.state == "deleted" and [e.event_id for e in seen] == [ev.EVENT_HW_DEVICE_REBOOT]
    again = dmi.hw.RebootDevice(hm.RebootDeviceRequest(device_uuid=dmi.uuid), FakeContext())
    assert again.reason == hm.RebootDeviceResponse.DEVICE_IN_WRONG_STATE and "rebooting" in again.reason_detail


@pytest.mark.parametrize("changes", [hw_pb2.ModifiableComponent(name="new-value"),
                                     hw_pb2.ModifiableComponent(alias="Thermal/Fans/System Fan/1"),
                                     hw_pb2.ModifiableComponent()])
def test_set_hw_component_info_is_unimplemented_as_in_bbsim(dmi, changes):
    """SetHWComponentInfo answers gRPC UNIMPLEMENTED with BBSim's message whatever it is asked (VOLTHA's DMI system
    test expects that for a new name and for an alias), and changes nothing in the tree."""
    before = dmi.device.root()
    request = hm.HWComponentInfoSetRequest(device_uuid=dmi.uuid, component_name="Thermal/Fans/System Fan/1",
                                           changes=changes)
    with pytest.raises(NotImplementedError) as raised:
        dmi.hw.SetHWComponentInfo(request, FakeContext())
    assert failure_status(dmi.hw, "SetHWComponentInfo", raised.value) == (
        grpc.StatusCode.UNIMPLEMENTED, "rpc SetHWComponentInfo not implemented")
    assert dmi.device.root() == before


def test_one_log_level_without_entities_sets_every_entity(dmi):
    """SetLogLevel with a level and no entity sets all of them (DMI's rule); GetLogLevel without entities lists
    every entity."""
    answer = dmi.hw.SetLogLevel(hm.SetLogLevelRequest(device_uuid=dmi.uuid, loglevels=[
        hm.EntitiesLogLevel(logLevel=commons_pb2.WARN)]), FakeContext())
    assert answer.status == OK
    levels = dmi.hw.GetLogLevel(hm.GetLogLevelRequest(device_uuid=dmi.uuid), FakeContext()).logLevels
    assert [level.logLevel for level in levels] == [commons_pb2.WARN]
    assert set(levels[0].entities) == set(dmi.device.log_levels)


def test_dm_log_level_is_oltsims_log_level(dmi):
    """SetDmLogLevel changes oltsim's own log level and GetDmLogLevel reads it (BBSim panics on both)."""
    before = CONTROL.level
    try:
        assert dmi.hw.SetDmLogLevel(hm.SetDmLogLevelRequest(level=commons_pb2.ERROR), FakeContext()).status == OK
        assert CONTROL.level == "error"
        assert dmi.hw.GetDmLogLevel(hm.GetDmLogLevelRequest(), FakeContext()).level == commons_pb2.ERROR
    finally:
        CONTROL.set_level(before)


def test_configurations_reset_to_their_defaults(dmi):
    """reset_to_default brings back the default events and metrics; a request with neither operation is
    refused."""
    events, metrics = EventsServicer(dmi.device), MetricsServicer(dmi.device)
    default_events = dmi.device.events.listed()
    default_metrics = dmi.device.metrics.listed()
    events.UpdateEventsConfiguration(ev.EventsConfigurationRequest(device_uuid=dmi.uuid, changes=ev.EventsCfg(
        items=[ev.EventCfg(event_id=ev.EVENT_FAN_FAILURE, is_configured=False)])), FakeContext())
    metrics.UpdateMetricsConfiguration(mt.MetricsConfigurationRequest(device_uuid=dmi.uuid, changes=mt.MetricsConfig(
        metrics=[mt.MetricConfig(metric_id=mt.METRIC_DISK_USAGE_PERCENTAGE, is_configured=True)])), FakeContext())
    assert dmi.device.events.listed() != default_events and dmi.device.metrics.listed() != default_metrics
    assert events.UpdateEventsConfiguration(ev.EventsConfigurationRequest(device_uuid=dmi.uuid,
                                                                          reset_to_default=True),
                                            FakeContext()).status == OK
    assert metrics.UpdateMetricsConfiguration(mt.MetricsConfigurationRequest(device_uuid=dmi.uuid,
                                                                             reset_to_default=True),
                                              FakeContext()).status == OK
    assert dmi.device.events.listed() == default_events and dmi.device.metrics.listed() == default_metrics
    neither = events.UpdateEventsConfiguration(ev.EventsConfigurationRequest(device_uuid=dmi.uuid), FakeContext())
    assert neither.reason == ev.EventsConfigurationResponse.INVALID_CONFIG and neither.reason_detail


@on_reactor_loop
async def test_image_streams_follow_the_clock_and_the_olt_runs_the_new_image(dmi):
    """DownloadImage then ActivateImage stream their states one clock step apart; afterwards the OLT's firmware
    version (what GetDeviceInfo reports) is the new image's; a second download while one runs is refused."""
    request = sm.DownloadImageRequest(device_uuid=dmi.uuid, image_info=si.ImageInformation(
        image=si.ImageVersion(image_name="olt", version="3.1"), image_url="https://images.example/olt-3.1.bin"))
    stream = dmi.sw.DownloadImage(request, FakeContext())
    first = await collect(stream, rounds=0)  # reads what is there without advancing the clock: the first state
    assert [si.ImageStatus.ImageState.Name(s.state) for s in first] == ["COPYING_IMAGE"]
    (busy,) = await collect(dmi.sw.DownloadImage(request, FakeContext()))
    assert busy.reason == si.ImageStatus.OPERATION_ALREADY_IN_PROGRESS
    dmi.sw.close_all()
    dmi.device.software.stop()
    states = await collect(dmi.sw.DownloadImage(request, FakeContext()), dmi.clock)
    assert [si.ImageStatus.ImageState.Name(s.state) for s in states] == ["COPYING_IMAGE", "INSTALLING_IMAGE",
                                                                         "UPGRADE_COMPLETE"]
    states = await collect(dmi.sw.ActivateImage(hw_pb2.HardwareID(uuid=dmi.uuid), FakeContext()), dmi.clock)
    assert [s.state for s in states][-1] == si.ImageStatus.ACTIVATION_COMPLETE
    assert dmi.olt.device_info["firmware_version"] == "3.1"
    assert dmi.device.root().firmware_rev == "3.1"


@on_reactor_loop
async def test_streams_end_when_the_server_stops(dmi):
    """close_all ends a running image stream with UNAVAILABLE and cancels a debug upload's timers."""
    upload = dmi.sw.UploadDebugInfo(sm.UploadDebugInfoRequest(device_uuid=dmi.uuid,
                                                              location_url="sftp://debug.example/in/"), FakeContext())
    (first,) = await collect(upload, rounds=0)
    assert first.status == sm.UploadDebugInfoStatus.IN_PROGRESS and first.file_name
    dmi.sw.close_all()
    assert not any(call.active() for call in dmi.sw._upload_calls)


@on_reactor_loop
async def test_start_managing_answers_once_and_refuses_a_second_start():
    """StartManagingDevice streams one answer with the UUID; a second one answers DEVICE_ALREADY_MANAGED with the
    same UUID."""
    sim = Sim(pon=1, onu=1)
    device = ManagedDevice(sim.olt, sim.clock, random.Random(3))
    hw = HWManagementServicer(device)
    try:
        (first,) = await collect(hw.StartManagingDevice(hw_pb2.ModifiableComponent(name="olt"), FakeContext()))
        (second,) = await collect(hw.StartManagingDevice(hw_pb2.ModifiableComponent(name="olt"), FakeContext()))
    finally:
        device.close()
    assert (first.status, first.device_uuid.uuid) == (OK, device.uuid)
    assert second.reason == hm.StartManagingDeviceResponse.DEVICE_ALREADY_MANAGED
    assert second.device_uuid.uuid == device.uuid and "StopManagingDevice" in second.reason_detail


def logging_endpoint(dmi) -> tuple:
    got = dmi.hw.GetLoggingEndpoint(hw_pb2.HardwareID(uuid=dmi.uuid), FakeContext())
    return got.status, got.logging_endpoint, got.logging_protocol


@pytest.mark.parametrize("protocol", ["", "udp"])
def test_a_logging_endpoint_set_read_back_and_cleared_with_an_empty_one(dmi, protocol):
    """VOLTHA's "Set Get Logging Endpoint": set 127.0.0.1/udp, read it back, reset with an empty endpoint (and an
    empty protocol, or the same one) answers OK and reads back empty."""
    set_request = functools.partial(hm.SetLoggingEndpointRequest, device_uuid=dmi.uuid)
    answer = dmi.hw.SetLoggingEndpoint(set_request(logging_endpoint="127.0.0.1", logging_protocol="udp"),
                                       FakeContext())
    assert answer.status == OK
    assert logging_endpoint(dmi) == (OK, "127.0.0.1", "udp")
    answer = dmi.hw.SetLoggingEndpoint(set_request(logging_endpoint="", logging_protocol=protocol), FakeContext())
    assert (answer.status, answer.reason) == (OK, hm.SetRemoteEndpointResponse.UNDEFINED_REASON)
    assert logging_endpoint(dmi) == (OK, "", "")


@pytest.mark.parametrize("protocol, detail", [("", "needs a logging_protocol"), ("http", "udp or tcp")])
def test_a_logging_endpoint_without_a_usable_protocol_is_refused_and_the_old_one_kept(dmi, protocol, detail):
    """An endpoint with no protocol or one other than udp/tcp is LOGGING_ENDPOINT_PROTOCOL_ERROR and leaves the
    endpoint set before unchanged."""
    set_request = functools.partial(hm.SetLoggingEndpointRequest, device_uuid=dmi.uuid)
    dmi.hw.SetLoggingEndpoint(set_request(logging_endpoint="10.0.0.1:514", logging_protocol="tcp"), FakeContext())
    answer = dmi.hw.SetLoggingEndpoint(set_request(logging_endpoint="127.0.0.1", logging_protocol=protocol),
                                       FakeContext())
    assert (answer.status, answer.reason) == (commons_pb2.ERROR_STATUS,
                                              hm.SetRemoteEndpointResponse.LOGGING_ENDPOINT_PROTOCOL_ERROR)
    assert detail in answer.reason_detail
    assert logging_endpoint(dmi) == (OK, "10.0.0.1:514", "tcp")
