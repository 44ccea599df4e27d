"""PON transceiver plug-out and plug-in in the OLT model on a fake clock (BBSim's DMI PlugOutTransceiver
and PlugInTransceiver, reference 1.8): the indications in order as the adapter receives them, the states in v1
REST, the cases BBSim leaves open (ONUs not yet activated, OLT not enabled or rebooting, PON administratively
down, power-on while unplugged) and the refusals.
"""

import pytest

from conftest import Sim, model_invariants
from oltsim.model.errors import FailedPrecondition, NotFound
from oltsim.model.olt import PON_PORT_BASE

ON0 = ("BBSM00000001", "BBSM00000002")     # ONUs of PON 0 (2x2 OLT)
ON1 = ("BBSM00000101", "BBSM00000102")     # ONUs of PON 1
PON0_PORT = PON_PORT_BASE                  # 536870912, los_ind's intf_id for PON 0


def los(pon_port, status):
    return ("AlarmInd", "los_ind", pon_port, None, status)


def onu_los(pon, onu_id, status):
    return ("AlarmInd", "onu_alarm_ind", pon, onu_id, status)


def omci(serial, raised):
    return ("OmciAlarm", serial, 0x0101, "raised" if raised else "cleared")


def onu_ind(pon, onu_id, oper, admin, serial):
    return ("OnuInd", pon, onu_id, oper, admin, serial)


def pon_inds(pon, state):
    return [("IntfInd", pon, state), ("IntfOperInd", "pon", pon, state)]


def seen(sim):
    """What the adapter received since the last look, without the periodic port statistics."""
    return [t for t in sim.southbound() if t[0] != "PortStats"]


def rest_pon(sim, pon_id):
    [pon] = [p for p in sim.rest.call("GET", "/v1/olt").json["PONPorts"] if p.get("ID", 0) == pon_id]
    return pon


def rest_onu_states(sim, pon_id):
    onus = sim.rest.call("GET", "/v1/olt/onus").json["items"]
    return {o["SerialNumber"]: o["InternalState"] for o in onus if o.get("PonPortID", 0) == pon_id}


def assert_sound(sim):
    assert model_invariants(sim.olt) == []


# ---- the BBSim sequence -------------------------------------------------------------------------


def test_plug_out_sequence_and_state():
    """Plug-out of PON 0's transceiver: los_ind on for port 536870912, then per serving ONU onu_alarm_ind LOS on
    and the OMCI LOS alarm; PON 0 internally disabled but still up (no IntfInd), its ONUs pon_disabled, PON 1
    untouched; v1 REST shows it."""
    sim = Sim()
    sim.bring_up()
    sim.olt.plug_out_transceiver(0)
    assert seen(sim) == [
        los(PON0_PORT, "on"),
        onu_los(0, 1, "on"), omci(ON0[0], True),
        onu_los(0, 2, "on"), omci(ON0[1], True),
    ]
    assert sim.olt.transceiver_plugged(0) is False and sim.olt.transceiver_plugged(1) is True
    pon = rest_pon(sim, 0)
    assert (pon["InternalState"], pon["OperState"]) == ("disabled", "up")
    assert pon.get("AllocatedOnuIds", []) == []
    assert rest_onu_states(sim, 0) == {ON0[0]: "pon_disabled", ON0[1]: "pon_disabled"}
    assert rest_onu_states(sim, 1) == {ON1[0]: "enabled", ON1[1]: "enabled"}
    assert (rest_pon(sim, 1)["InternalState"], rest_pon(sim, 1)["OperState"]) == ("enabled", "up")
    assert_sound(sim)


def test_plug_in_sequence_restores_everything_and_leaks_no_timer():
    """Plug-in after a plug-out: los_ind off, OnuInd up per ONU, then per ONU onu_alarm_ind LOS off and the OMCI
    clear; the states are back and the model holds exactly the timers it held before the cycle."""
    sim = Sim()
    sim.bring_up()
    timers = sim.olt.pending_calls()
    sim.olt.plug_out_transceiver(0)
    sim.southbound()
    sim.olt.plug_in_transceiver(0)
    assert seen(sim) == [
        los(PON0_PORT, "off"),
        onu_ind(0, 1, "up", "up", ON0[0]), onu_ind(0, 2, "up", "up", ON0[1]),
        onu_los(0, 1, "off"), omci(ON0[0], False),
        onu_los(0, 2, "off"), omci(ON0[1], False),
    ]
    pon = rest_pon(sim, 0)
    assert (pon["InternalState"], pon["OperState"]) == ("enabled", "up")
    assert rest_onu_states(sim, 0) == {ON0[0]: "enabled", ON0[1]: "enabled"}
    assert sim.olt.pending_calls() == timers
    sim.clock.advance(300)
    assert seen(sim) == []
    assert_sound(sim)


def test_refusals_change_nothing():
    """An unknown PON is NotFound; a second plug-out and a plug-in of a transceiver that is in are
    FailedPrecondition with a clear reason; none of them emits anything or changes a state."""
    sim = Sim()
    sim.bring_up()
    with pytest.raises(NotFound, match="PON 2 not found"):
        sim.olt.plug_out_transceiver(2)
    with pytest.raises(NotFound, match="PON -1 not found"):
        sim.olt.plug_in_transceiver(-1)
    with pytest.raises(NotFound):
        sim.olt.transceiver_plugged(7)
    with pytest.raises(FailedPrecondition, match="the transceiver of PON 0 is already plugged in"):
        sim.olt.plug_in_transceiver(0)
    assert sim.events == []
    sim.olt.plug_out_transceiver(0)
    sim.events.clear()
    generation = sim.olt.generation
    with pytest.raises(FailedPrecondition, match="the transceiver of PON 0 is not plugged in"):
        sim.olt.plug_out_transceiver(0)
    assert sim.events == [] and sim.olt.generation == generation
    assert sim.olt.pons[0].state == "disabled"


def test_the_change_is_an_event_of_the_pon():
    """Each plug-out and plug-in is a pon state change (attribute Transceiver) for the event bus and the logs."""
    sim = Sim()
    sim.olt.plug_out_transceiver(1)
    sim.olt.plug_in_transceiver(1)
    changes = [(e.pon_id, e.attribute, e.src, e.dest) for e in sim.events if type(e).__name__ == "StateChanged"]
    assert changes == [(1, "Transceiver", "plugged_in", "plugged_out"), (1, "Transceiver", "plugged_out", "plugged_in")]


# ---- cases BBSim leaves open --------------------------------------------------------------------


def test_onus_not_yet_activated_get_no_alarm_and_are_announced_again():
    """A discovered ONU the adapter has not activated gets no LOS (the adapter does not know it) and stops
    announcing itself while the PON is dark; after the plug-in it is announced again, and only the activated ONU
    gets its LOS cleared."""
    sim = Sim()
    sim.connect()
    sim.discover_all()
    sim.activate(ON0[0])
    sim.southbound()
    sim.olt.plug_out_transceiver(0)
    assert seen(sim) == [los(PON0_PORT, "on"), onu_los(0, 1, "on"), omci(ON0[0], True)]
    assert sim.olt.onu_by_serial(ON0[1]).state == "discovered"
    sim.clock.advance(130)                      # two discovery retries of PON 1's ONUs, none of PON 0's
    assert {t[2] for t in seen(sim) if t[0] == "OnuDiscInd"} == {ON1[0], ON1[1]}
    sim.olt.plug_in_transceiver(0)
    assert seen(sim) == [los(PON0_PORT, "off"), onu_ind(0, 1, "up", "up", ON0[0]),
                         onu_los(0, 1, "off"), omci(ON0[0], False)]
    sim.clock.advance(0.2)                      # ONU index 1: the discovery delay
    assert seen(sim) == [("OnuDiscInd", 0, ON0[1])]
    assert_sound(sim)


def test_unplugged_before_the_adapter_connects():
    """Plugged out before any EnableIndication: nothing is sent then; the adapter's EnableIndication brings PON 0
    up (IntfInd) and raises its LOS, its ONUs are never discovered until the plug-in, which discovers them with
    their usual delays."""
    sim = Sim()
    sim.olt.plug_out_transceiver(0)
    assert seen(sim) == []
    sim.connect()
    assert seen(sim) == [("OltInd", "up"), ("IntfOperInd", "nni", 0, "up")] + pon_inds(0, "up") + [
        los(PON0_PORT, "on")] + pon_inds(1, "up")
    sim.discover_all()
    assert [t[2] for t in seen(sim)] == [ON1[0], ON1[1]]
    assert sim.olt.pons[0].state == "created" and rest_pon(sim, 0)["OperState"] == "up"
    sim.olt.plug_in_transceiver(0)
    assert seen(sim) == [los(PON0_PORT, "off")]
    sim.discover_all()
    assert seen(sim) == [("OnuDiscInd", 0, ON0[0]), ("OnuDiscInd", 0, ON0[1])]
    assert_sound(sim)


def test_transceiver_stays_out_across_a_reboot():
    """A reboot does not put the transceiver back: the ONUs go down with the OLT, the new adapter's
    EnableIndication raises PON 0's LOS again (the rebooted OLT forgot it) and rediscovers only PON 1's ONUs;
    the plug-in then rediscovers PON 0's, with no ONU LOS to clear."""
    sim = Sim(reboot_delay=10)
    sim.bring_up()
    sim.olt.plug_out_transceiver(0)
    sim.southbound()
    sim.olt.reboot()
    assert seen(sim) == [onu_ind(0, 1, "down", "down", ON0[0]), onu_ind(0, 2, "down", "down", ON0[1]),
                         onu_ind(1, 1, "down", "down", ON1[0]), onu_ind(1, 2, "down", "down", ON1[1])]
    sim.clock.advance(5)
    sim.clock.advance(10)
    assert sim.olt.state == "initialized" and not sim.olt.transceiver_plugged(0)
    sim.southbound()
    sim.connect()
    sim.clock.advance(1)                        # a reconnect waits 1 s
    sim.discover_all()
    assert seen(sim) == [("OltInd", "up"), ("IntfOperInd", "nni", 0, "up"), los(PON0_PORT, "on"),
                         ("OnuDiscInd", 1, ON1[0]), ("OnuDiscInd", 1, ON1[1])]
    sim.olt.plug_in_transceiver(0)
    assert seen(sim) == [los(PON0_PORT, "off")]
    sim.discover_all()
    assert seen(sim) == [("OnuDiscInd", 0, ON0[0]), ("OnuDiscInd", 0, ON0[1])]
    assert_sound(sim)


def test_plug_out_during_a_reboot_is_silent():
    """Plugged out while the OLT reboots: no indication then (no adapter), PON 0 stays dark after the reconnect
    and its LOS is raised on the new stream."""
    sim = Sim(reboot_delay=10)
    sim.bring_up()
    sim.olt.reboot()
    sim.southbound()
    sim.olt.plug_out_transceiver(0)
    assert seen(sim) == []
    assert sim.olt.pons[0].state == "disabled"
    sim.clock.advance(5)
    sim.clock.advance(10)
    sim.southbound()
    sim.connect()
    sim.clock.advance(1)
    sim.discover_all()
    assert seen(sim) == [("OltInd", "up"), ("IntfOperInd", "nni", 0, "up"), los(PON0_PORT, "on"),
                         ("OnuDiscInd", 1, ON1[0]), ("OnuDiscInd", 1, ON1[1])]
    assert_sound(sim)


def test_disable_and_reenable_olt_while_unplugged():
    """DisableOlt takes the dark PON down like the others; ReenableOlt brings it up again (IntfInd) but dark: no
    OnuInd for its ONUs until the plug-in, which also clears their LOS."""
    sim = Sim()
    sim.bring_up()
    sim.olt.plug_out_transceiver(0)
    sim.southbound()
    sim.olt.disable()
    assert seen(sim) == pon_inds(0, "down") + pon_inds(1, "down") + [("OltInd", "down")]
    sim.olt.reenable()
    assert seen(sim) == [("OltInd", "up")] + pon_inds(0, "up") + pon_inds(1, "up") + [
        onu_ind(1, 1, "up", "up", ON1[0]), onu_ind(1, 2, "up", "up", ON1[1])]
    assert rest_onu_states(sim, 0) == {ON0[0]: "pon_disabled", ON0[1]: "pon_disabled"}
    sim.olt.plug_in_transceiver(0)
    assert seen(sim) == [los(PON0_PORT, "off"),
                         onu_ind(0, 1, "up", "up", ON0[0]), onu_ind(0, 2, "up", "up", ON0[1]),
                         onu_los(0, 1, "off"), omci(ON0[0], False), onu_los(0, 2, "off"), omci(ON0[1], False)]
    assert_sound(sim)


def test_pon_administratively_down():
    """DisablePonIf on a dark PON takes it down (IntfInd down), EnablePonIf up again but still dark; a plug-in
    while the PON is down clears the alarms and leaves it down until EnablePonIf, which brings the ONUs up."""
    sim = Sim()
    sim.bring_up()
    sim.olt.plug_out_transceiver(0)
    sim.southbound()
    sim.olt.disable_pon(0)
    assert seen(sim) == pon_inds(0, "down")
    sim.olt.enable_pon(0)
    assert seen(sim) == pon_inds(0, "up")
    sim.olt.enable_pon(0)
    assert seen(sim) == []
    sim.olt.disable_pon(0)
    sim.southbound()
    sim.olt.plug_in_transceiver(0)
    assert seen(sim) == [los(PON0_PORT, "off"), onu_los(0, 1, "off"), omci(ON0[0], False),
                         onu_los(0, 2, "off"), omci(ON0[1], False)]
    assert (rest_pon(sim, 0)["InternalState"], rest_pon(sim, 0)["OperState"]) == ("disabled", "down")
    sim.olt.enable_pon(0)
    assert seen(sim) == pon_inds(0, "up") + [onu_ind(0, 1, "up", "up", ON0[0]), onu_ind(0, 2, "up", "up", ON0[1])]
    assert_sound(sim)


def test_plug_out_of_a_pon_that_is_down_raises_los_when_it_comes_up():
    """Plugged out while its PON is administratively down: nothing is sent; EnablePonIf brings the port up and
    raises its LOS instead of bringing the ONUs up; the plug-in then clears the LOS and brings them up."""
    sim = Sim()
    sim.bring_up()
    sim.olt.disable_pon(1)
    sim.southbound()
    sim.olt.plug_out_transceiver(1)
    assert seen(sim) == []
    sim.olt.enable_pon(1)
    assert seen(sim) == pon_inds(1, "up") + [los(PON_PORT_BASE + 1, "on")]
    assert rest_onu_states(sim, 1) == {ON1[0]: "pon_disabled", ON1[1]: "pon_disabled"}
    sim.olt.plug_in_transceiver(1)
    assert seen(sim) == [los(PON_PORT_BASE + 1, "off"), onu_ind(1, 1, "up", "up", ON1[0]),
                         onu_ind(1, 2, "up", "up", ON1[1])]
    assert_sound(sim)


def test_onus_of_a_dark_pon_cannot_be_powered_on_or_activated():
    """While the transceiver is out, PoweronONU, PoweronONUsOnPON and ActivateOnu of its ONUs are refused with
    the reason; a ShutdownONU still works, and the plug-in rediscovers that ONU instead of bringing it up."""
    sim = Sim()
    sim.bring_up()
    sim.olt.plug_out_transceiver(0)
    sim.olt.shutdown_onu(ON0[0])
    sim.southbound()
    with pytest.raises(FailedPrecondition, match="transceiver of PON 0 is plugged out"):
        sim.olt.power_on_onu(ON0[0])
    with pytest.raises(FailedPrecondition, match="transceiver of PON 0 is plugged out"):
        sim.olt.power_on_pon(0)
    with pytest.raises(FailedPrecondition, match="transceiver is plugged out"):
        sim.olt.activate_onu(0, ON0[1], 2)
    assert seen(sim) == []
    sim.olt.plug_in_transceiver(0)
    assert seen(sim) == [los(PON0_PORT, "off"), onu_ind(0, 2, "up", "up", ON0[1]),
                         onu_los(0, 2, "off"), omci(ON0[1], False)]
    sim.clock.advance(0)
    assert seen(sim) == [("OnuDiscInd", 0, ON0[0])]          # the powered-off ONU comes back through discovery
    assert_sound(sim)


def test_repeated_cycles_leave_no_timer_behind():
    """Fifty plug-out/plug-in cycles on a PON with discovered ONUs leave the same number of pending timers."""
    sim = Sim(onu=4)
    sim.connect()
    sim.discover_all()
    sim.activate(ON0[0])
    timers = sim.olt.pending_calls()
    for _ in range(50):
        sim.olt.plug_out_transceiver(0)
        sim.olt.plug_in_transceiver(0)
    assert sim.olt.pending_calls() == timers
    assert len(sim.clock.getDelayedCalls()) == timers
    assert_sound(sim)


def test_plug_in_brings_serving_onus_back_in_only_onu_mode():
    """With controlled activation only-onu (ONUs wait for PoweronONU), the ONUs that were serving when the
    transceiver went out still come back at the plug-in (OnuInd up), instead of waiting for a power-on that the
    model would refuse."""
    sim = Sim(controlled_activation="only-onu")
    sim.connect()
    for serial in ON0:
        sim.olt.power_on_onu(serial)
    sim.clock.advance(0)
    for serial in ON0:
        sim.activate(serial)
    sim.southbound()
    sim.olt.plug_out_transceiver(0)
    assert rest_onu_states(sim, 0) == {ON0[0]: "pon_disabled", ON0[1]: "pon_disabled"}
    sim.southbound()
    sim.olt.plug_in_transceiver(0)
    assert seen(sim) == [los(PON0_PORT, "off"),
                         onu_ind(0, 1, "up", "up", ON0[0]), onu_ind(0, 2, "up", "up", ON0[1]),
                         onu_los(0, 1, "off"), omci(ON0[0], False), onu_los(0, 2, "off"), omci(ON0[1], False)]
    assert rest_onu_states(sim, 0) == {ON0[0]: "enabled", ON0[1]: "enabled"}
    assert rest_onu_states(sim, 1) == {ON1[0]: "created", ON1[1]: "created"}
    assert_sound(sim)
