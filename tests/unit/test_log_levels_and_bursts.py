"""Every log line follows the level: under twistd the level filter stands in front of
every observer, Twisted's lines included, and follows SetLogLevel; bursts of per-UNI and per-ONU lines are summed up;
alarms are logged once each, raised and cleared, and summed up under a burst."""
from __future__ import annotations

import io

import pytest
from twisted.internet.task import Clock
from twisted.logger import LogBeginner, Logger, LogLevel, LogPublisher, capturedLogs, formatEvent

from conftest import Sim
from oltsim.api.eventbus import ALARM_LINES_PER_INTERVAL, EventBus
from oltsim.logs import LogControl, SummedLines


pytestmark = pytest.mark.usefixtures("info_level")


def texts(logged, prefix: str = "", debug: bool = False) -> list[str]:
    """The formatted oltsim events starting with `prefix` (debug ones only when `debug`)."""
    return [formatEvent(e) for e in logged if e.get("log_namespace", "").startswith("oltsim")
            and (debug or e["log_level"].name != "debug") and formatEvent(e).startswith(prefix)]


# ---- the level, for every namespace -----------------------------------------------------------------------


class _Stdio:
    stdout = io.StringIO()
    stderr = io.StringIO()


class _Warnings:
    showwarning = None


def begun(control: LogControl) -> tuple[LogPublisher, list]:
    """A publisher whose logging began through a beginner filtered by `control` (as twistd after makeService)."""
    publisher = LogPublisher()
    beginner = LogBeginner(publisher, io.StringIO(), _Stdio(), _Warnings())
    control.filter_everything(beginner)
    control.filter_everything(beginner)  # idempotent
    seen: list = []
    beginner.beginLoggingTo([seen.append], redirectStandardIO=False)
    return publisher, seen


def test_the_level_applies_to_every_namespace_and_follows_set_level():
    """At warn, no info line of any namespace (Twisted's, a library's) reaches the observers twistd begins with, a
    warning does; set_level('info') (SetLogLevel, SetDmLogLevel) lets info lines through again."""
    control = LogControl("warn")
    publisher, seen = begun(control)
    twisted_log = Logger(namespace="twisted.scripts._twistd_unix.UnixAppLogger", observer=publisher)
    twisted_log.info("twistd starting up")
    Logger(namespace="oltsim.packets", observer=publisher).info("eapol-completed serial=X")
    Logger(namespace="oltsim.api", observer=publisher).warn("something-odd")
    assert [formatEvent(e) for e in seen] == ["something-odd"]
    control.set_level("info")
    twisted_log.info("Starting factory")
    assert [formatEvent(e) for e in seen][-1] == "Starting factory"


def test_twisted_port_chatter_is_written_at_debug_only():
    """Twisted's `Site starting on 50071` and `(TCP Port 50071 Closed)` lines are dropped at info (oltsim logs
    rest-listener-started itself) and kept at debug; other legacy lines pass."""
    control = LogControl("info")
    publisher, seen = begun(control)

    def legacy(text):
        publisher({"log_namespace": "log_legacy", "log_level": LogLevel.info, "log_format": "{log_text}",
                   "log_text": text})
    legacy("QuietSite (LimitedFactory) starting on 50071")
    legacy("(TCP Port 50071 Closed)")
    legacy("VxlanProtocol starting on 4789")
    legacy("(UDP Port 4789 Closed)")
    legacy("something else")
    assert [e["log_text"] for e in seen] == ["something else"]
    control.set_level("debug")
    legacy("(TCP Port 50071 Closed)")
    assert seen[-1]["log_text"] == "(TCP Port 50071 Closed)"


def test_twisted_tap_port_lines_are_never_written():
    """twisted.pair.tuntap's own lines for a data-plane interface (its protocol's class ``starting on`` the name, and
    ``(Tuntap NAME Closed)``) are dropped at every level: the data plane writes dataplane-interface-opened and
    -closed as key=value events instead; a legacy line that only looks alike passes."""
    control = LogControl("info")
    publisher, seen = begun(control)

    def legacy(text):
        publisher({"log_namespace": "log_legacy", "log_level": LogLevel.info, "log_format": "{log_text}",
                   "log_text": text})
    for level in ("info", "debug"):
        control.set_level(level)
        legacy("<class 'oltsim.dataplane.interfaces._Frames'> starting on b'labu0-3-1'")
        legacy("(Tuntap b'labnniu' Closed)")
    legacy("(Tuntap labnniu Closed) later")
    assert [e["log_text"] for e in seen] == ["(Tuntap labnniu Closed) later"]


# ---- bursts summed up ---------------------------------------------------------------------------------------


def test_summed_lines_write_a_few_then_one_summary_and_keep_every_line_at_debug():
    """4096 completions in one instant: 4 info lines, the rest at debug, then one summary line when the second ends
    with the count of each kind; while the burst goes on the next seconds are summary lines only."""
    clock = Clock()
    lines = SummedLines(Logger(namespace="oltsim.packets"), "services-completed", clock, burst=4)
    with capturedLogs() as logged:
        for i in range(4096):
            kind = "eapol-completed" if i % 2 == 0 else "dhcp-completed"
            lines.info(kind, kind + " serial={serial}", serial=f"BBSM{i:08X}")
        clock.advance(1)
        lines.info("dhcp-completed", "dhcp-completed serial={serial}", serial="late")
        clock.advance(1)
    info = texts(logged)
    assert len(info) == 4 + 2
    assert info[4] == ("services-completed count=4092 eapol-completed=2046 dhcp-completed=2046 "
                       "(summary of 1 s)")
    assert info[5] == "services-completed count=1 dhcp-completed=1 (summary of 1 s)"
    assert len(texts(logged, debug=True)) == 4096 + 1 + 2
    assert clock.getDelayedCalls() == []


# ---- alarms -------------------------------------------------------------------------------------------------


def test_each_alarm_raised_and_cleared_is_one_line_naming_it():
    """ONU LOS, signal degrade, NNI LOS and PON LOS (as every API raises them: through the model) are one line each
    when raised and when cleared, with the kind, the type and the ONU or port."""
    sim = Sim()
    bus = EventBus(sim.olt, sim.clock)
    serial = sim.olt.onus[0].serial
    with capturedLogs() as logged:
        sim.olt.onu_alarm(serial, "ONU_ALARM_LOS", "on")
        sim.olt.onu_alarm(serial, "ONU_ALARM_LOS", "off")
        sim.olt.onu_alarm(serial, "ONU_SIGNAL_DEGRADE", "on", {"InverseBitErrorRate": 5})
        sim.olt.olt_los("nni", 0, "on")
        sim.clock.advance(1)
        sim.olt.olt_los("nni", 0, "off")
        sim.olt.olt_los("pon", 1, "on")
    onu = sim.olt.onus[0]
    where = f"serial={serial} pon={onu.pon.id} onu_id={onu.onu_id}"
    assert texts(logged, "alarm") == [
        f"alarm-raised kind=onu_alarm_ind type=onu_los {where}",
        f"alarm-cleared kind=onu_alarm_ind type=onu_los {where}",
        f"alarm-raised kind=onu_signal_degrade_ind type=onu_signal_degrade {where}",
        "alarm-raised kind=los_ind type=nni_los port=nni-0",
        "alarm-cleared kind=los_ind type=nni_los port=nni-0",
        "alarm-raised kind=los_ind type=pon_los port=pon-1"]
    bus.close_all()
    assert texts(logged, "alarms ") == []


def test_clears_the_olt_makes_without_an_indication_are_logged_too():
    """An ONU powered off then on again has its dying gasp cleared in the alarm book (BBSim sends
    no dying_gasp_ind off), and an OLT reboot clears every active alarm: each clear is an alarm-cleared line saying
    why, and an event readers see; the adapter is sent no indication for them. The ITU PON statistics alarm, whose
    status is inside rdi_error_ind, is logged cleared when cleared."""
    sim = Sim()
    sim.bring_up()
    bus = EventBus(sim.olt, sim.clock)
    records = []
    bus.subscribe(lambda record: records.append(record) or True, types=["alarm"])
    onu = sim.olt.onus[0]
    where = f"serial={onu.serial} pon={onu.pon.id} onu_id={onu.onu_id}"
    with capturedLogs() as logged:
        sim.olt.onu_alarm(onu.serial, "ONU_ITU_PON_STATS", "on")
        sim.olt.onu_alarm(onu.serial, "ONU_ITU_PON_STATS", "off")
        sim.clock.advance(1)
        sim.olt.shutdown_onu(onu.serial)
        sim.clock.advance(1)
        sim.olt.power_on_onu(onu.serial)
        sim.clock.advance(1)
        sim.olt.olt_los("nni", 0, "on")
        sim.olt.reboot()
    assert texts(logged, "alarm") == [
        f"alarm-raised kind=onu_itu_pon_stats_ind type=onu_itu_pon_stats {where}",
        f"alarm-cleared kind=onu_itu_pon_stats_ind type=onu_itu_pon_stats {where}",
        f"alarm-raised kind=dying_gasp_ind type=dying_gasp {where}",
        f"alarm-raised kind=onu_alarm_ind type=onu_los {where}",
        f"alarm-cleared kind=onu_alarm_ind type=onu_los {where}",
        f"alarm-cleared kind=dying_gasp_ind type=dying_gasp {where} reason=onu-powered-on",
        "alarm-raised kind=los_ind type=nni_los port=nni-0",
        "alarm-cleared kind=los_ind type=nni_los port=nni-0 reason=olt-rebooted"]
    cleared = [r for r in records if r["details"].get("reason")]
    assert [(r["onu_serial"], r["details"]["kind"], r["details"]["status"], r["details"]["reason"])
            for r in cleared] == [(onu.serial, "dying_gasp_ind", "off", "onu-powered-on"),
                                  ("", "los_ind", "off", "olt-rebooted")]
    assert [r.key.type for r in sim.olt.alarms.history() if not r.raised][-3:] == [
        "ONU_ALARM_LOS", "DYING_GASP", "OLT_NNI_LOS"]
    sent = [item for item in sim.southbound() if "dying_gasp_ind" in repr(item)]
    assert len(sent) == 1, sent  # the raise only
    bus.close_all()


def test_a_burst_of_alarms_is_summed_up():
    """A whole PON's ONUs losing light at once: ALARM_LINES_PER_INTERVAL lines, then one line counting the rest;
    close_all (servers stopping) reports at once and leaves no timer."""
    sim = Sim(pon=1, onu=32)
    bus = EventBus(sim.olt, sim.clock)
    with capturedLogs() as logged:
        for onu in sim.olt.onus:
            sim.olt.onu_alarm(onu.serial, "ONU_ALARM_LOS", "on")
        bus.close_all()
    assert len(texts(logged, "alarm-raised")) == ALARM_LINES_PER_INTERVAL
    assert texts(logged, "alarms ") == [f"alarms count={32 - ALARM_LINES_PER_INTERVAL} "
                                        f"onu_los-raised={32 - ALARM_LINES_PER_INTERVAL} (summary of 1 s)"]
    assert bus.alarm_lines.summary._call is None
