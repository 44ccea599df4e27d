"""v0's port alarm_state follows the clears an OLT reboot makes: the reboot clears every active alarm
without an indication (the model's AlarmCleared, as BBSim sends none), and OLTStatus/PortStatus say `off` after it,
as v1's alarm list does."""
from __future__ import annotations

import random

from twisted.internet.task import Clock

from oltsim._proto import bbsim_pb2, legacy_pb2
from oltsim.api.v0.usecases_v0 import V0Commands
from oltsim.api.v1.usecases_v1 import V1Commands
from oltsim.config import load_settings
from oltsim.model.builder import build_olt


def test_an_olt_reboot_clears_v0s_los_state():
    """LOS raised on PON 1 and the NNI reads `on` in v0; after an OLT reboot both read `off`."""
    clock = Clock()
    olt = build_olt(load_settings({"pon": 2, "onu": 1}, None), clock, random.Random(0))
    olt.start()
    olt.enable_indication()
    clock.advance(1)
    v0 = V0Commands(olt)
    v1 = V1Commands(olt)
    try:
        v0.GenerateOLTAlarm(legacy_pb2.OLTAlarmRequest(port_type="pon", port_id=1, status="on"))
        v1.SetOltAlarmIndication(bbsim_pb2.OLTAlarmRequest(InterfaceType="nni", InterfaceID=0, Status="on"))
        states = {(p.port_type, p.port_id): p.alarm_state for p in v0.OLTStatus(legacy_pb2.Empty()).ports}
        assert states == {("nni", 0): "on", ("pon", 0): "off", ("pon", 1): "on"}
        olt.reboot()
        clock.advance(60)
        states = {(p.port_type, p.port_id): p.alarm_state for p in v0.OLTStatus(legacy_pb2.Empty()).ports}
        assert states == {("nni", 0): "off", ("pon", 0): "off", ("pon", 1): "off"}
        assert v0.PortStatus(legacy_pb2.PortInfo(port_type="pon", port_id=1)).ports[0].alarm_state == "off"
    finally:
        v0.close()
