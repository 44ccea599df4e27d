"""The Device Management Interface server over a real gRPC channel: every RPC of the four DMI
services, the refusals (before StartManagingDevice, unknown device or component, bad URLs, repeated
StartManagingDevice) answered with DMI's own status, reason and reason_detail, and the three RPCs that kill BBSim."""
from __future__ import annotations

import grpc
import pytest_twisted
from dmi import commons_pb2, hw_pb2
from dmi import hw_events_mgmt_service_pb2 as ev
from dmi import hw_events_mgmt_service_pb2_grpc as ev_grpc
from dmi import hw_management_service_pb2 as hm
from dmi import hw_management_service_pb2_grpc as hm_grpc
from dmi import hw_metrics_mgmt_service_pb2 as mt
from dmi import hw_metrics_mgmt_service_pb2_grpc as mt_grpc
from dmi import sw_image_pb2 as si
from dmi import sw_management_service_pb2 as sm
from dmi import sw_management_service_pb2_grpc as sm_grpc
from engines import grpc_engine  # noqa: F401 - the fixture
from google.protobuf import empty_pb2
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc
from kafka_broker import json_values, read_topic, start_broker
from test_adapter import start_oltsim, stop_oltsim
from twisted.internet import reactor
from twisted.internet.defer import inlineCallbacks
from twisted.internet.threads import deferToThread

from oltsim._proto import bbsim_dmi_pb2, bbsim_dmi_pb2_grpc
from oltsim.logs import CONTROL

TIMEOUT = 15
OK = commons_pb2.OK_STATUS
ERROR = commons_pb2.ERROR_STATUS


class Dmi:
    """Stubs of the four DMI services on one channel."""

    def __init__(self, channel):
        self.hw = hm_grpc.NativeHWManagementServiceStub(channel)
        self.sw = sm_grpc.NativeSoftwareManagementServiceStub(channel)
        self.events = ev_grpc.NativeEventsManagementServiceStub(channel)
        self.metrics = mt_grpc.NativeMetricsManagementServiceStub(channel)


def uuid(value: str) -> hw_pb2.Uuid:
    return hw_pb2.Uuid(uuid=value)


def rpc_status(method, request) -> tuple[grpc.StatusCode, str]:
    """The gRPC status code and details a unary call ends with (OK and "" when it answers)."""
    try:
        method(request, timeout=TIMEOUT)
    except grpc.RpcError as exc:
        return exc.code(), exc.details()
    return grpc.StatusCode.OK, ""


def states(stream) -> list[str]:
    """The ImageState names of an image stream."""
    return [si.ImageStatus.ImageState.Name(item.state) for item in stream]


def before_managing(dmi: Dmi, device_uuid: str) -> dict:
    """Every call that needs a managed device, before StartManagingDevice."""
    u = uuid(device_uuid)
    return {
        "managed": dmi.hw.GetManagedDevices(empty_pb2.Empty(), timeout=TIMEOUT),
        "inventory": list(dmi.hw.GetPhysicalInventory(hm.PhysicalInventoryRequest(device_uuid=u), timeout=TIMEOUT)),
        "component": list(dmi.hw.GetHWComponentInfo(hm.HWComponentInfoGetRequest(
            device_uuid=u, component_name="pon-0"), timeout=TIMEOUT)),
        "events": dmi.events.ListEvents(hw_pb2.HardwareID(uuid=u), timeout=TIMEOUT),
        "metrics": dmi.metrics.ListMetrics(hw_pb2.HardwareID(uuid=u), timeout=TIMEOUT),
        "version": dmi.sw.GetSoftwareVersion(hw_pb2.HardwareID(uuid=u), timeout=TIMEOUT),
        "download": list(dmi.sw.DownloadImage(sm.DownloadImageRequest(device_uuid=u, image_info=si.ImageInformation(
            image=si.ImageVersion(image_name="olt", version="2.0"), image_url="http://images/olt-2.0.bin")),
            timeout=TIMEOUT)),
        "upload": list(dmi.sw.UploadDebugInfo(sm.UploadDebugInfoRequest(device_uuid=u,
                                                                        location_url="sftp://host/debug/"),
                                              timeout=TIMEOUT)),
        "stop": dmi.hw.StopManagingDevice(hm.StopManagingDeviceRequest(name="someone-else"), timeout=TIMEOUT),
    }


@pytest_twisted.inlineCallbacks
def test_every_dmi_rpc_over_a_real_channel(tmp_path, grpc_engine):
    """Each of the 34 RPCs of the four DMI services answers over a real channel, the refusals with DMI's status,
    reason and a reason_detail (SetHWComponentInfo with BBSim's gRPC UNIMPLEMENTED), and the DMI RPCs that kill
    BBSim (GetDmLogLevel, SetDmLogLevel, UploadDebugInfo) answer; activating an image changes the firmware version
    the OLT reports."""
    sim = start_oltsim(tmp_path, "--pon", "2", "--onu", "1", engine=grpc_engine)
    device = sim.top.dmi
    device.event_check_interval = 0.2  # the threshold checks every 0.2 s instead of 10 s, for a short test
    address = f"127.0.0.1:{sim.top.getServiceNamed('dmi').port}"
    level = CONTROL.level

    def script():
        got = {}
        with grpc.insecure_channel(address) as channel:
            dmi = Dmi(channel)
            got["before"] = before_managing(dmi, device.uuid)
            got["dm_level_set"] = dmi.hw.SetDmLogLevel(hm.SetDmLogLevelRequest(level=commons_pb2.DEBUG),
                                                       timeout=TIMEOUT)
            got["dm_level"] = dmi.hw.GetDmLogLevel(hm.GetDmLogLevelRequest(), timeout=TIMEOUT)
            got["dm_level_bad"] = dmi.hw.SetDmLogLevel(hm.SetDmLogLevelRequest(level=42), timeout=TIMEOUT)
            got["heartbeat"] = dmi.hw.HeartbeatCheck(empty_pb2.Empty(), timeout=TIMEOUT)
            got["msgbus_none"] = dmi.hw.GetMsgBusEndpoint(empty_pb2.Empty(), timeout=TIMEOUT)
            got["msgbus_bad"] = dmi.hw.SetMsgBusEndpoint(hm.SetMsgBusEndpointRequest(msgbus_endpoint="kafka"),
                                                         timeout=TIMEOUT)
            # managing
            got["start_no_name"] = list(dmi.hw.StartManagingDevice(hw_pb2.ModifiableComponent(), timeout=TIMEOUT))
            got["start"] = list(dmi.hw.StartManagingDevice(hw_pb2.ModifiableComponent(
                name="olt-1", uri=hw_pb2.Uri(uri="127.0.0.1")), timeout=TIMEOUT))
            got["start_again"] = list(dmi.hw.StartManagingDevice(hw_pb2.ModifiableComponent(name="olt-1"),
                                                                 timeout=TIMEOUT))
            u = uuid(got["start"][0].device_uuid.uuid)
            got["managed"] = dmi.hw.GetManagedDevices(empty_pb2.Empty(), timeout=TIMEOUT)
            got["inventory"] = list(dmi.hw.GetPhysicalInventory(hm.PhysicalInventoryRequest(device_uuid=u),
                                                                timeout=TIMEOUT))
            got["inventory_other"] = list(dmi.hw.GetPhysicalInventory(
                hm.PhysicalInventoryRequest(device_uuid=uuid("00000000-0000-0000-0000-000000000000")),
                timeout=TIMEOUT))
            pon = [c for c in got["inventory"][0].inventory.root.children if c.name == "sfp-plus-transceiver-cage-1"]
            pon_port = pon[0].children[0].children[0]
            got["by_uuid"] = list(dmi.hw.GetHWComponentInfo(hm.HWComponentInfoGetRequest(
                device_uuid=u, component_uuid=pon_port.uuid), timeout=TIMEOUT))
            got["unknown_component"] = list(dmi.hw.GetHWComponentInfo(hm.HWComponentInfoGetRequest(
                device_uuid=u, component_name="no-such-thing"), timeout=TIMEOUT))
            for field, value in (("name", "new-value"), ("alias", "Thermal/Fans/System Fan/1")):
                got[f"set_{field}"] = rpc_status(dmi.hw.SetHWComponentInfo, hm.HWComponentInfoSetRequest(
                    device_uuid=u, component_name="Thermal/Fans/System Fan/1",
                    changes=hw_pb2.ModifiableComponent(**{field: value})))
            got["fan"] = list(dmi.hw.GetHWComponentInfo(hm.HWComponentInfoGetRequest(
                device_uuid=u, component_name="Thermal/Fans/System Fan/1"), timeout=TIMEOUT))
            # endpoints and log levels
            got["logging_bad"] = dmi.hw.SetLoggingEndpoint(hm.SetLoggingEndpointRequest(
                device_uuid=u, logging_endpoint="10.0.0.9:514", logging_protocol="carrier-pigeon"), timeout=TIMEOUT)
            got["logging_set"] = dmi.hw.SetLoggingEndpoint(hm.SetLoggingEndpointRequest(
                device_uuid=u, logging_endpoint="10.0.0.9:514", logging_protocol="udp"), timeout=TIMEOUT)
            got["logging"] = dmi.hw.GetLoggingEndpoint(hw_pb2.HardwareID(uuid=u), timeout=TIMEOUT)
            got["msgbus_set"] = dmi.hw.SetMsgBusEndpoint(hm.SetMsgBusEndpointRequest(msgbus_endpoint="127.0.0.1:1"),
                                                         timeout=TIMEOUT)
            got["msgbus"] = dmi.hw.GetMsgBusEndpoint(empty_pb2.Empty(), timeout=TIMEOUT)
            got["entities"] = dmi.hw.GetLoggableEntities(hm.GetLoggableEntitiesRequest(device_uuid=u),
                                                         timeout=TIMEOUT)
            got["set_level"] = dmi.hw.SetLogLevel(hm.SetLogLevelRequest(device_uuid=u, loglevels=[
                hm.EntitiesLogLevel(logLevel=commons_pb2.DEBUG, entities=["oltsim.dmi"])]), timeout=TIMEOUT)
            got["set_level_unknown"] = dmi.hw.SetLogLevel(hm.SetLogLevelRequest(device_uuid=u, loglevels=[
                hm.EntitiesLogLevel(logLevel=commons_pb2.DEBUG, entities=["kernel"])]), timeout=TIMEOUT)
            got["level"] = dmi.hw.GetLogLevel(hm.GetLogLevelRequest(device_uuid=u, entities=["oltsim.dmi"]),
                                              timeout=TIMEOUT)
            # device and components (no adapter enabled the OLT: it can neither reboot nor switch PONs)
            got["reboot"] = dmi.hw.RebootDevice(hm.RebootDeviceRequest(device_uuid=u), timeout=TIMEOUT)
            got["disable_fan"] = dmi.hw.DisableHWComponent(hm.DisableHWComponentRequest(
                device_uuid=u, component_name="Thermal/Fans/System Fan/2"), timeout=TIMEOUT)
            got["enable_pon"] = dmi.hw.EnableHWComponent(hm.EnableHWComponentRequest(
                device_uuid=u, component_uuid=pon_port.uuid), timeout=TIMEOUT)
            got["reset_unknown"] = dmi.hw.ResetHWComponent(hm.ResetHWComponentRequest(
                device_uuid=u, component_uuid=uuid("nope")), timeout=TIMEOUT)
            # events
            got["events"] = dmi.events.ListEvents(hw_pb2.HardwareID(uuid=u), timeout=TIMEOUT)
            got["events_bad"] = dmi.events.UpdateEventsConfiguration(ev.EventsConfigurationRequest(
                device_uuid=u, changes=ev.EventsCfg(items=[ev.EventCfg(
                    event_id=ev.EVENT_FAN_FAILURE, is_configured=True, thresholds=ev.Thresholds(
                        upper=ev.WaterMarks(high=ev.ValueType(int_val=1), low=ev.ValueType(int_val=0))))])),
                timeout=TIMEOUT)
            events = dmi.events.StreamEvents(empty_pb2.Empty(), timeout=TIMEOUT)
            # every temperature sample (30..39 degrees) is now above the high watermark: the generator raises it
            got["events_set"] = dmi.events.UpdateEventsConfiguration(ev.EventsConfigurationRequest(
                device_uuid=u, changes=ev.EventsCfg(items=[ev.EventCfg(
                    event_id=ev.EVENT_HW_DEVICE_TEMPERATURE_ABOVE_CRITICAL, is_configured=True,
                    thresholds=ev.Thresholds(upper=ev.WaterMarks(high=ev.ValueType(int_val=20),
                                                                 low=ev.ValueType(int_val=10))))])),
                timeout=TIMEOUT)
            got["event"] = next(events)
            events.cancel()
            # metrics
            got["metrics"] = dmi.metrics.ListMetrics(hw_pb2.HardwareID(uuid=u), timeout=TIMEOUT)
            got["metrics_bad"] = dmi.metrics.UpdateMetricsConfiguration(mt.MetricsConfigurationRequest(
                device_uuid=u, changes=mt.MetricsConfig(metrics=[mt.MetricConfig(
                    metric_id=mt.METRIC_TRANSCEIVER_BIAS, is_configured=True, poll_interval=5)])), timeout=TIMEOUT)
            got["metrics_interval"] = dmi.metrics.UpdateMetricsConfiguration(mt.MetricsConfigurationRequest(
                device_uuid=u, changes=mt.MetricsConfig(metrics=[mt.MetricConfig(
                    metric_id=mt.METRIC_FAN_SPEED, is_configured=True, poll_interval=100000)])), timeout=TIMEOUT)
            metrics = dmi.metrics.StreamMetrics(empty_pb2.Empty(), timeout=TIMEOUT)
            got["metrics_set"] = dmi.metrics.UpdateMetricsConfiguration(mt.MetricsConfigurationRequest(
                device_uuid=u, changes=mt.MetricsConfig(metrics=[mt.MetricConfig(
                    metric_id=mt.METRIC_FAN_SPEED, is_configured=True, poll_interval=1)])), timeout=TIMEOUT)
            got["metric_streamed"] = next(metrics)
            metrics.cancel()
            got["metric"] = dmi.metrics.GetMetric(mt.GetMetricRequest(metric_id=mt.METRIC_FAN_SPEED, meta_data=(
                mt.MetricMetaData(device_uuid=u, component_name="Thermal/Fans/System Fan/2"))), timeout=TIMEOUT)
            got["metric_wrong"] = dmi.metrics.GetMetric(mt.GetMetricRequest(
                metric_id=mt.METRIC_CPU_USAGE_PERCENTAGE, meta_data=mt.MetricMetaData(
                    device_uuid=u, component_name="Thermal/Fans/System Fan/2")), timeout=TIMEOUT)
            # software
            got["version"] = dmi.sw.GetSoftwareVersion(hw_pb2.HardwareID(uuid=u), timeout=TIMEOUT)
            got["download_bad"] = list(dmi.sw.DownloadImage(sm.DownloadImageRequest(
                device_uuid=u, image_info=si.ImageInformation(image=si.ImageVersion(image_name="olt", version="2.0"),
                                                              image_url="images/olt.bin")), timeout=TIMEOUT))
            got["download"] = list(dmi.sw.DownloadImage(sm.DownloadImageRequest(
                device_uuid=u, image_info=si.ImageInformation(image=si.ImageVersion(image_name="olt", version="2.0"),
                                                              image_url="http://images.example/olt-2.0.bin")),
                timeout=TIMEOUT))
            got["version_downloaded"] = dmi.sw.GetSoftwareVersion(hw_pb2.HardwareID(uuid=u), timeout=TIMEOUT)
            got["activate"] = list(dmi.sw.ActivateImage(hw_pb2.HardwareID(uuid=u), timeout=TIMEOUT))
            got["firmware_activated"] = sim.olt.device_info["firmware_version"]
            got["version_activated"] = dmi.sw.GetSoftwareVersion(hw_pb2.HardwareID(uuid=u), timeout=TIMEOUT)
            got["revert"] = list(dmi.sw.RevertToStandbyImage(hw_pb2.HardwareID(uuid=u), timeout=TIMEOUT))
            got["version_reverted"] = dmi.sw.GetSoftwareVersion(hw_pb2.HardwareID(uuid=u), timeout=TIMEOUT)
            got["config_bad"] = list(dmi.sw.UpdateStartupConfiguration(sm.ConfigRequest(
                device_uuid=u, config_url="gopher://configs/olt.cfg"), timeout=TIMEOUT))
            got["config"] = list(dmi.sw.UpdateStartupConfiguration(sm.ConfigRequest(
                device_uuid=u, config_url="tftp://configs.example/olt-7.cfg"), timeout=TIMEOUT))
            got["config_info"] = dmi.sw.GetStartupConfigurationInfo(sm.StartupConfigInfoRequest(device_uuid=u),
                                                                    timeout=TIMEOUT)
            got["upload_bad"] = list(dmi.sw.UploadDebugInfo(sm.UploadDebugInfoRequest(
                device_uuid=u, location_url="not a url"), timeout=TIMEOUT))
            got["upload"] = list(dmi.sw.UploadDebugInfo(sm.UploadDebugInfoRequest(
                device_uuid=u, location_url="sftp://user:pw@debug.example/uploads/"), timeout=TIMEOUT))
            # stop
            got["stop_other"] = dmi.hw.StopManagingDevice(hm.StopManagingDeviceRequest(name="olt-2"),
                                                          timeout=TIMEOUT)
            got["stop"] = dmi.hw.StopManagingDevice(hm.StopManagingDeviceRequest(name="olt-1"), timeout=TIMEOUT)
            got["managed_after"] = dmi.hw.GetManagedDevices(empty_pb2.Empty(), timeout=TIMEOUT)
            got["inventory_after"] = list(dmi.hw.GetPhysicalInventory(hm.PhysicalInventoryRequest(device_uuid=u),
                                                                      timeout=TIMEOUT))
            reflection = reflection_pb2_grpc.ServerReflectionStub(channel)
            answer = next(reflection.ServerReflectionInfo(iter([reflection_pb2.ServerReflectionRequest(
                list_services="")]), timeout=TIMEOUT))
            got["services"] = {s.name for s in answer.list_services_response.service}
        return got

    try:
        got = yield deferToThread(script)
        answered = sim.top.metrics.registry.get_sample_value("oltsim_requests_total",
                                                             {"surface": "dmi", "status": "OK"})
    finally:
        CONTROL.set_level(level)
        yield stop_oltsim(sim)
    assert device.pending_calls() == 0 and device.software.operation is None
    assert answered is not None and answered >= 60  # every call above counted at /metrics under surface dmi

    before = got["before"]
    assert list(before["managed"].devices) == [] and before["managed"].status == OK
    for key, reason in (("inventory", hm.PhysicalInventoryResponse.UNKNOWN_DEVICE),
                        ("component", hm.HWComponentInfoGetResponse.UNKNOWN_DEVICE)):
        (answer,) = before[key]
        assert (answer.status, answer.reason) == (ERROR, reason)
        assert "StartManagingDevice" in answer.reason_detail
    assert before["events"].reason == ev.ListEventsResponse.UNKNOWN_DEVICE
    assert before["metrics"].reason == mt.ListMetricsResponse.UNKNOWN_DEVICE
    assert before["version"].reason == sm.GetSoftwareVersionInformationResponse.UNKNOWN_DEVICE
    assert [(d.state, d.reason) for d in before["download"]] == [(si.ImageStatus.UPGRADE_FAILED,
                                                                  si.ImageStatus.UNKNOWN_DEVICE)]
    assert [(u.status, u.reason) for u in before["upload"]] == [(sm.UploadDebugInfoStatus.ERROR,
                                                                sm.UploadDebugInfoStatus.UNKNOWN_DEVICE)]
    assert before["stop"].reason == hm.StopManagingDeviceResponse.UNKNOWN_DEVICE
    assert "someone-else" in before["stop"].reason_detail

    assert got["dm_level_set"].status == OK and got["dm_level"].level == commons_pb2.DEBUG
    assert got["dm_level_bad"].reason == hm.SetDmLogLevelResponse.UNKNOWN_LOG_LEVEL
    assert got["heartbeat"].heartbeat_signature == sim.olt.heartbeat_signature & 0xFFFFFFFF
    assert got["msgbus_none"].reason == hm.GetMsgBusEndpointResponse.INTERNAL_ERROR
    assert got["msgbus_bad"].reason == hm.SetRemoteEndpointResponse.MSGBUS_ENDPOINT_ERROR
    assert "HOST:PORT" in got["msgbus_bad"].reason_detail

    (no_name,) = got["start_no_name"]
    assert no_name.reason == hm.StartManagingDeviceResponse.INVALID_PARAMS
    (start,) = got["start"]
    assert start.status == OK and start.device_uuid.uuid == device.uuid
    (again,) = got["start_again"]
    assert (again.status, again.reason) == (ERROR, hm.StartManagingDeviceResponse.DEVICE_ALREADY_MANAGED)
    assert again.device_uuid.uuid == device.uuid
    (managed,) = got["managed"].devices
    assert (managed.info.name, managed.info.uri.uri, managed.device_uuid.uuid) == ("olt-1", "127.0.0.1",
                                                                                   device.uuid)
    (inventory,) = got["inventory"]
    root = inventory.inventory.root
    assert (root.name, root.serial_num, root.uri.uri) == ("BBSim-BBSIM_OLT_0", "BBSIM_OLT_0", "127.0.0.1")
    names = [c.name for c in root.children]
    assert names[:3] == ["sfp-plus-transceiver-cage-0", "sfp-plus-transceiver-cage-1", "nni-0"]
    assert {"Thermal/Fans/System Fan/1", "Thermal/Fans/System Fan/2", "Systems/1/Processors/0",
            "Systems/1/Memory/0", "Systems/1/Disk/0", "Systems/1/Sensor/0", "Thermal/PSU/SystemPSU/0"} <= set(names)
    (other,) = got["inventory_other"]
    assert other.reason == hm.PhysicalInventoryResponse.UNKNOWN_DEVICE and device.uuid in other.reason_detail
    (by_uuid,) = got["by_uuid"]
    assert by_uuid.component.name == "pon-1" and by_uuid.component.port_attr.mapping_label == "pon-1"
    (unknown,) = got["unknown_component"]
    assert unknown.reason == hm.HWComponentInfoGetResponse.UNKNOWN_COMPONENT
    assert "no-such-thing" in unknown.reason_detail
    # VOLTHA's DMI system test (dmi-hw-management.robot) expects StatusCode.UNIMPLEMENTED from a simulated OLT
    unimplemented = (grpc.StatusCode.UNIMPLEMENTED, "rpc SetHWComponentInfo not implemented")
    assert got["set_name"] == got["set_alias"] == unimplemented
    (fan,) = got["fan"]
    assert (fan.component.name, fan.component.alias) == ("Thermal/Fans/System Fan/1", "")

    assert got["logging_bad"].reason == hm.SetRemoteEndpointResponse.LOGGING_ENDPOINT_PROTOCOL_ERROR
    assert got["logging_set"].status == OK
    assert (got["logging"].logging_endpoint, got["logging"].logging_protocol) == ("10.0.0.9:514", "udp")
    assert got["msgbus_set"].status == OK and got["msgbus"].msgbus_endpoint == "127.0.0.1:1"
    assert "oltsim.dmi" in {e for level in got["entities"].logLevels for e in level.entities}
    assert got["set_level"].status == OK
    assert got["set_level_unknown"].reason == hm.SetLogLevelResponse.UNKNOWN_LOG_ENTITY
    assert [(lv.logLevel, list(lv.entities)) for lv in got["level"].logLevels] == [(commons_pb2.DEBUG,
                                                                                     ["oltsim.dmi"])]
    assert got["reboot"].reason == hm.RebootDeviceResponse.DEVICE_IN_WRONG_STATE and got["reboot"].reason_detail
    assert got["disable_fan"].reason == hm.DisableHWComponentResponse.DISABLE_UNSUPPORTED
    assert got["enable_pon"].reason == hm.EnableHWComponentResponse.ENABLE_UNSUPPORTED
    assert got["enable_pon"].reason_detail
    assert got["reset_unknown"].reason == hm.ResetHWComponentResponse.UNKNOWN_COMPONENT

    assert ev.EVENT_FAN_FAILURE in {item.event_id for item in got["events"].events.items}
    assert got["events_bad"].reason == ev.EventsConfigurationResponse.INVALID_CONFIG
    assert "EVENT_FAN_FAILURE has no thresholds" in got["events_bad"].reason_detail
    assert got["events_set"].status == OK
    event = got["event"]
    assert event.event_id == ev.EVENT_HW_DEVICE_TEMPERATURE_ABOVE_CRITICAL
    assert event.event_metadata.component_name == "Systems/1/Sensor/0"
    assert event.threshold_info.observed_value.int_val > 20

    assert {m.metric_id for m in got["metrics"].metrics.metrics} >= {mt.METRIC_FAN_SPEED, mt.METRIC_CPU_USAGE_PERCENTAGE}
    assert got["metrics_bad"].reason == mt.MetricsConfigurationResponse.INVALID_METRIC
    assert got["metrics_interval"].reason == mt.MetricsConfigurationResponse.POLL_INTERVAL_UNSUPPORTED
    assert got["metrics_set"].status == OK
    assert got["metric_streamed"].metric_id == mt.METRIC_FAN_SPEED
    assert 3000 <= got["metric"].metric.value.value < 4000
    assert got["metric_wrong"].reason == mt.GetMetricResponse.INVALID_METRIC

    assert [v.version for v in got["version"].info.active_versions] == ["BBSIM-DUMMY-VERSION-1"]
    (bad,) = got["download_bad"]
    assert (bad.status, bad.state, bad.reason) == (ERROR, si.ImageStatus.UPGRADE_FAILED,
                                                   si.ImageStatus.ERROR_IN_REQUEST)
    assert "scheme" in bad.reason_detail
    assert states(got["download"]) == ["COPYING_IMAGE", "INSTALLING_IMAGE", "UPGRADE_COMPLETE"]
    assert [v.version for v in got["version_downloaded"].info.standby_versions] == ["2.0"]
    assert states(got["activate"]) == ["REBOOTING_DEVICE", "COMMITTING_IMAGE", "ACTIVATION_COMPLETE"]
    assert got["firmware_activated"] == "2.0"
    assert [v.version for v in got["version_activated"].info.active_versions] == ["2.0"]
    assert states(got["revert"]) == ["REBOOTING_DEVICE", "COMMITTING_IMAGE", "ACTIVATION_COMPLETE"]
    assert [v.version for v in got["version_reverted"].info.active_versions] == ["BBSIM-DUMMY-VERSION-1"]
    assert [c.reason for c in got["config_bad"]] == [sm.ConfigResponse.ERROR_FETCHING_CONFIG]
    assert [c.status for c in got["config"]] == [OK]
    assert (got["config_info"].config_url, got["config_info"].version) == ("tftp://configs.example/olt-7.cfg",
                                                                           "olt-7.cfg")
    assert [(u.status, u.reason) for u in got["upload_bad"]] == [(sm.UploadDebugInfoStatus.ERROR,
                                                                 sm.UploadDebugInfoStatus.ERROR_IN_REQUEST)]
    assert [(u.status, u.percent_uploaded) for u in got["upload"]] == [
        (sm.UploadDebugInfoStatus.IN_PROGRESS, 0), (sm.UploadDebugInfoStatus.IN_PROGRESS, 50),
        (sm.UploadDebugInfoStatus.COMPLETE, 100)]
    assert got["upload"][-1].file_name.startswith("BBSim-BBSIM_OLT_0-debug-")

    assert got["stop_other"].reason == hm.StopManagingDeviceResponse.UNKNOWN_DEVICE
    assert got["stop"].status == OK and list(got["managed_after"].devices) == []
    (after,) = got["inventory_after"]
    assert after.reason == hm.PhysicalInventoryResponse.UNKNOWN_DEVICE
    assert {"dmi.NativeHWManagementService", "dmi.NativeSoftwareManagementService",
            "dmi.NativeEventsManagementService", "dmi.NativeMetricsManagementService", "bbsim.BBsim_dmi"} <= got["services"]


DMI_MODULES = (hm, sm, ev, mt)
#: streams that stay open for what comes later: read with a short deadline
OPEN_STREAMS = {"StreamEvents", "StreamMetrics"}


def call_empty(channel, service, method) -> tuple[grpc.StatusCode, list]:
    """Call ``method`` of ``service`` with an empty request; its gRPC status and answers."""
    path = f"/{service.full_name}/{method.name}"
    request = _message_class(method.input_type)()
    response = _message_class(method.output_type)
    timeout = 1 if method.name in OPEN_STREAMS else TIMEOUT
    try:
        if method.server_streaming:
            call = channel.unary_stream(path, request_serializer=type(request).SerializeToString,
                                        response_deserializer=response.FromString)
            return grpc.StatusCode.OK, list(call(request, timeout=timeout))
        call = channel.unary_unary(path, request_serializer=type(request).SerializeToString,
                                   response_deserializer=response.FromString)
        return grpc.StatusCode.OK, [call(request, timeout=timeout)]
    except grpc.RpcError as exc:
        return exc.code(), []


def _message_class(descriptor):
    from google.protobuf import message_factory
    return message_factory.GetMessageClass(descriptor)


@pytest_twisted.inlineCallbacks
def test_empty_requests_are_answered_never_failed(tmp_path):
    """Every DMI RPC called with an empty request, before and after StartManagingDevice, answers gRPC OK (the two
    event and metric streams just wait: DEADLINE_EXCEEDED; SetHWComponentInfo is UNIMPLEMENTED, as in BBSim), never
    INTERNAL, and every refusal carries DMI's
    ERROR_STATUS with a reason."""
    sim = start_oltsim(tmp_path, "--pon", "1", "--onu", "1")
    address = f"127.0.0.1:{sim.top.getServiceNamed('dmi').port}"
    level = CONTROL.level
    methods = [(service, method) for module in DMI_MODULES for service in module.DESCRIPTOR.services_by_name.values()
               for method in service.methods]

    def script():
        got = {}
        with grpc.insecure_channel(address) as channel:
            for phase in ("before", "after"):
                if phase == "after":
                    list(Dmi(channel).hw.StartManagingDevice(hw_pb2.ModifiableComponent(name="olt"), timeout=TIMEOUT))
                for service, method in methods:
                    if method.name == "StopManagingDevice" and phase == "before":
                        continue
                    got[(phase, method.name)] = call_empty(channel, service, method)
        return got

    try:
        got = yield deferToThread(script)
    finally:
        CONTROL.set_level(level)
        yield stop_oltsim(sim)
    assert len(methods) == 34 and len(got) == 2 * 34 - 1
    refusals = 0
    for (phase, name), (code, answers) in got.items():
        expected = grpc.StatusCode.DEADLINE_EXCEEDED if name in OPEN_STREAMS else grpc.StatusCode.OK
        if name == "SetHWComponentInfo":
            expected = grpc.StatusCode.UNIMPLEMENTED  # as BBSim: VOLTHA's DMI system test expects it
        assert code == expected, (phase, name, code)
        for answer in answers:
            fields = {f.name for f, _ in answer.ListFields()}
            if "reason" in fields and type(answer).DESCRIPTOR.fields_by_name.get("reason_detail") is not None:
                assert answer.reason_detail, (phase, name, answer)
                refusals += 1
    assert refusals > 34  # most calls name no device (or nothing valid), so most are refusals

@pytest_twisted.inlineCallbacks
def test_dmi_streams_end_when_the_server_stops(tmp_path):
    """A StreamEvents and a StreamMetrics reader still open when oltsim stops end with UNAVAILABLE, and no DMI
    generator or delayed call is left behind."""
    sim = start_oltsim(tmp_path, "--pon", "1", "--onu", "1")
    device = sim.top.dmi
    address = f"127.0.0.1:{sim.top.getServiceNamed('dmi').port}"
    channel = grpc.insecure_channel(address)
    dmi = Dmi(channel)

    def open_streams():
        list(dmi.hw.StartManagingDevice(hw_pb2.ModifiableComponent(name="olt"), timeout=TIMEOUT))
        return dmi.events.StreamEvents(empty_pb2.Empty(), timeout=TIMEOUT), \
            dmi.metrics.StreamMetrics(empty_pb2.Empty(), timeout=TIMEOUT)

    def read_to_end(stream):
        try:
            for _ in stream:
                pass
        except grpc.RpcError as exc:
            return exc.code()
        return grpc.StatusCode.OK

    try:
        events, metrics = yield deferToThread(open_streams)
        for _ in range(100):  # both readers registered (bounded wait)
            if len(device._event_readers) and len(device._metric_readers):
                break
            yield deferLater(0.05)
        assert len(device._event_readers) == 1 and len(device._metric_readers) == 1
        ended = deferToThread(lambda: (read_to_end(events), read_to_end(metrics)))
        yield sim.top.stopService()
        codes = yield ended
    finally:
        channel.close()
    assert codes == (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.UNAVAILABLE)
    assert device.pending_calls() == 0 and len(device._event_readers) == 0
    assert sim.olt.pending_calls() == 0


@pytest_twisted.inlineCallbacks
def test_dmi_events_and_metrics_reach_the_message_bus(tmp_path):
    """After SetMsgBusEndpoint names a real Kafka broker (Tansu), an event raised through BBSim's CreateEvent lands
    on dm.events and the CPU metric on dm.metrics, as JSON naming this device; stopping oltsim stops the sink."""
    broker = start_broker()
    sim = start_oltsim(tmp_path, "--pon", "1", "--onu", "1")
    device = sim.top.dmi
    address = f"127.0.0.1:{sim.top.getServiceNamed('dmi').port}"

    def script():
        with grpc.insecure_channel(address) as channel:
            dmi = Dmi(channel)
            (start,) = dmi.hw.StartManagingDevice(hw_pb2.ModifiableComponent(name="olt"), timeout=TIMEOUT)
            u = start.device_uuid
            bus = dmi.hw.SetMsgBusEndpoint(hm.SetMsgBusEndpointRequest(msgbus_endpoint=broker.address),
                                           timeout=TIMEOUT)
            config = dmi.metrics.UpdateMetricsConfiguration(mt.MetricsConfigurationRequest(
                device_uuid=u, changes=mt.MetricsConfig(metrics=[mt.MetricConfig(
                    metric_id=mt.METRIC_CPU_USAGE_PERCENTAGE, is_configured=True, poll_interval=1)])),
                timeout=TIMEOUT)
            created = bbsim_dmi_pb2_grpc.BBsim_dmiStub(channel).CreateEvent(
                bbsim_dmi_pb2.DmiEvent(event_name="EVENT_FAN_FAILURE"), timeout=TIMEOUT)
            return bus, config, created

    try:
        bus, config, created = yield deferToThread(script)
        events = yield read_some(broker.address, "dm.events")
        metrics = yield read_some(broker.address, "dm.metrics")
        sink = device.sink
    finally:
        yield stop_oltsim(sim)
        broker.stop()
    assert bus.status == OK and config.status == OK and created.status_code == 0
    (event,) = json_values(events)
    assert event["event_id"] == ev.EVENT_FAN_FAILURE
    assert event["event_metadata"]["device_uuid"]["uuid"] == device.uuid
    assert event["event_metadata"]["component_name"] == "Thermal/Fans/System Fan/1"
    metric = json_values(metrics)[0]
    assert metric["metric_id"] == mt.METRIC_CPU_USAGE_PERCENTAGE
    assert metric["metric_metadata"]["component_name"] == "Systems/1/Processors/0"
    assert sink.sent >= 2 and device.sink is None and device.pending_calls() == 0


@inlineCallbacks
def read_some(address: str, topic: str, attempts: int = 4):
    """The records of ``topic``, read again (a bounded number of times) while none come: a first read can find the
    topic with no partitions yet, and then returns at once."""
    records = []
    for _ in range(attempts):
        records = yield read_topic(address, topic, until=lambda got: len(got) >= 1, timeout=10)
        if records:
            break
        yield deferLater(0.5)
    return records


def deferLater(seconds: float):
    from twisted.internet import task
    return task.deferLater(reactor, seconds, lambda: None)
