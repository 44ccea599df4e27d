"""The OLT's alarm book on a fake clock: every alarm the model reports (control API, ONU power cycles, DMI
transceiver plug-out/in) becomes active until cleared, the history is bounded, and an ONU power-on or an OLT
reboot clear what docs/alarms.md says they clear."""

from twisted.internet.task import Clock

from conftest import Sim
from oltsim.model.alarms import AlarmBook, AlarmKey

SN = "BBSM00000001"


def active(sim, serial=""):
    return [(k.kind, k.type, k.onu_serial, k.pon_id, k.port_id, t) for k, t in sim.olt.alarms.active(serial)]


def history(sim, serial=""):
    return [(r.key.type, r.key.onu_serial or r.key.port_id, r.raised, r.at) for r in sim.olt.alarms.history(serial)]


def test_onu_alarm_raise_and_clear():
    """A raised ONU alarm is active with the time it was raised; clearing removes it; both are in the history."""
    sim = Sim()
    sim.bring_up()
    sim.clock.advance(10)
    sim.olt.onu_alarm(SN, "ONU_SIGNAL_DEGRADE", "on", {"InverseBitErrorRate": "4"})
    assert active(sim) == [("onu", "ONU_SIGNAL_DEGRADE", SN, 0, -1, 10.2)]
    sim.clock.advance(5)
    sim.olt.onu_alarm(SN, "ONU_SIGNAL_DEGRADE", "on")  # raised again: still one, with the first raise's time
    assert active(sim) == [("onu", "ONU_SIGNAL_DEGRADE", SN, 0, -1, 10.2)]
    sim.olt.onu_alarm(SN.lower(), "onu_signal_degrade", "OFF")
    assert active(sim) == []
    assert [(h[0], h[2], h[3]) for h in history(sim)] == [
        ("ONU_SIGNAL_DEGRADE", True, 10.2), ("ONU_SIGNAL_DEGRADE", True, 15.2), ("ONU_SIGNAL_DEGRADE", False, 15.2)]


def test_each_onu_alarm_name_is_recorded_under_its_own_name():
    """Every name the API takes comes back as the alarm's type; one-shot alarms (no status) are history only."""
    from oltsim.model.alarms import ONU_ALARMS
    sim = Sim()
    sim.bring_up()
    for name in ONU_ALARMS:
        sim.olt.onu_alarm(SN, name, "on")
    one_shot = {"ONU_ACTIVATION_FAILURE", "ONU_PROCESSING_ERROR"}
    assert sorted(k.type for k, _ in sim.olt.alarms.active()) == sorted(set(ONU_ALARMS) - one_shot)
    assert [r.key.type for r in sim.olt.alarms.history()] == list(ONU_ALARMS)


def test_port_los_kinds_and_ids():
    """PON and NNI LOS are keyed by their port: kind pon with pon_id and port_id the PON id, kind nni with
    port_id the NNI id and pon_id -1."""
    sim = Sim()
    sim.bring_up()
    sim.olt.olt_los("nni", 0, "on")
    sim.olt.olt_los("PON", 1, "on")
    assert [a[:5] for a in active(sim)] == [("nni", "OLT_NNI_LOS", "", -1, 0), ("pon", "OLT_PON_LOS", "", 1, 1)]
    sim.olt.olt_los("nni", 0, "off")
    assert [a[:5] for a in active(sim)] == [("pon", "OLT_PON_LOS", "", 1, 1)]


def test_alarms_are_kept_without_an_adapter():
    """An alarm applied while no adapter listens (its indication dropped) is still active."""
    sim = Sim()
    sim.olt.olt_los("nni", 0, "on")
    assert [a[1] for a in active(sim)] == ["OLT_NNI_LOS"]


def test_onu_power_cycle():
    """Power-off raises DYING_GASP and ONU_ALARM_LOS; power-on clears LOS (los off) and the dying gasp (book only);
    an alarm raised through the API stays across the cycle."""
    sim = Sim()
    sim.bring_up()
    sim.olt.onu_alarm(SN, "ONU_SIGNAL_DEGRADE", "on")
    sim.olt.shutdown_onu(SN)
    assert sorted(a[1] for a in active(sim)) == ["DYING_GASP", "ONU_ALARM_LOS", "ONU_SIGNAL_DEGRADE"]
    sim.clock.advance(3)
    sim.olt.power_on_onu(SN)
    assert [a[1] for a in active(sim)] == ["ONU_SIGNAL_DEGRADE"]
    assert [(h[0], h[2]) for h in history(sim)][-2:] == [("ONU_ALARM_LOS", False), ("DYING_GASP", False)]


def test_reboot_forgets_active_alarms():
    """An OLT reboot clears every active alarm, each with a clear record at the reboot's time."""
    sim = Sim()
    sim.bring_up()
    sim.olt.olt_los("nni", 0, "on")
    sim.olt.onu_alarm(SN, "ONU_ALARM_LOB", "on")
    sim.clock.advance(7)
    sim.olt.reboot()
    assert active(sim) == []
    assert sorted((h[0], h[2], h[3]) for h in history(sim)[-2:]) == [
        ("OLT_NNI_LOS", False, 7.2), ("ONU_ALARM_LOB", False, 7.2)]


def test_transceiver_plug_out_and_in():
    """A plug-out raises the PON's LOS and each serving ONU's LOS; the plug-in clears them all."""
    sim = Sim()
    sim.bring_up()
    sim.olt.plug_out_transceiver(0)
    assert sorted(a[:4] for a in active(sim)) == [
        ("onu", "ONU_ALARM_LOS", "BBSM00000001", 0), ("onu", "ONU_ALARM_LOS", "BBSM00000002", 0),
        ("pon", "OLT_PON_LOS", "", 0)]
    sim.olt.plug_in_transceiver(0)
    assert active(sim) == []


def test_filter_by_onu_serial_in_either_case():
    """`onu_serial` keeps one ONU's alarms, whatever the case of its hex digits."""
    sim = Sim()
    sim.bring_up()
    sim.olt.onu_alarm(SN, "ONU_ALARM_LOS", "on")
    sim.olt.onu_alarm("BBSM00000002", "ONU_ALARM_LOS", "on")
    sim.olt.olt_los("nni", 0, "on")
    assert [a[2] for a in active(sim, "bbsm00000002")] == ["BBSM00000002"]
    assert [h[1] for h in history(sim, "bbsm00000002")] == ["BBSM00000002"]


def test_history_is_bounded():
    """The history keeps the last `limit` records; the active alarms are not bounded by it."""
    clock = Clock()
    book = AlarmBook(clock, limit=3)
    for i in range(5):
        clock.advance(1)
        book.note("los_ind", {"intf_id": 0x100000 + i, "status": "on"})
    assert [r.key.port_id for r in book.history()] == [2, 3, 4]
    assert [k.port_id for k, _ in book.active()] == [0, 1, 2, 3, 4]


def test_changes_touch_the_olt():
    """A change of the book bumps the OLT's generation, so cached reads are rebuilt."""
    sim = Sim()
    before = sim.olt.generation
    sim.olt.olt_los("nni", 0, "on")
    assert sim.olt.generation > before
    assert not sim.olt.alarms.clear(AlarmKey("nni", "OLT_NNI_LOS", "", -1, 5))
