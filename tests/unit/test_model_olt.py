"""The OLT model on a fake clock: discovery and reboot timers, the indication sequences of bbsim-reference.md 1.8,
controlled activation, identifiers beyond BBSim's limits, tag allocation and flows (decisions section 4).

Indications are checked as the adapter would receive them: model events through the real event -> Indication
translation (`conftest.southbound`), plus the ONU's OMCI alarm notifications.
"""

import random

import grpc
import pytest
from twisted.internet.task import Clock
from twisted.python import usage
from voltha_protos import openolt_pb2

from conftest import Sim, drain, grpc_call, grpc_error
from oltsim._proto import bbsim_pb2
from oltsim.api import translate
from oltsim.config import ServiceSpec, load_settings
from oltsim.model import events
from oltsim.model.builder import build_olt, check_buildable
from oltsim.model.errors import InvalidArgument, Unavailable
from oltsim.southbound.indications import to_indications

ON0 = ("BBSM00000001", "BBSM00000002")     # ONUs of PON 0 (2x2 OLT)
ON1 = ("BBSM00000101", "BBSM00000102")     # ONUs of PON 1


def olt_ind(state):
    return ("OltInd", state)


def nni_ind(nni, state="up"):
    return ("IntfOperInd", "nni", nni, state)


def pon_inds(pon, state):
    return [("IntfInd", pon, state), ("IntfOperInd", "pon", pon, state)]


def disc(pon, serial):
    return ("OnuDiscInd", pon, serial)


def onu_ind(pon, onu_id, oper, admin, serial):
    return ("OnuInd", pon, onu_id, oper, admin, serial)


def discoveries(sim):
    """The OnuDiscInds emitted since the last look, as (pon, serial)."""
    return [(t[1], t[2]) for t in sim.southbound() if t[0] == "OnuDiscInd"]


def interface(intf_id):
    return openolt_pb2.Interface(intf_id=intf_id)


def onu_msg(pon, onu_id, serial=""):
    return openolt_pb2.Onu(intf_id=pon, onu_id=onu_id,
                           serial_number=translate.serial_to_pb(serial) if serial else None)


# ---- discovery timers ----------------------------------------------------------------------------


def test_fresh_enable_indication_order():
    """A fresh EnableIndication gives OltInd, the NNI, each PON up, then each PON's ONUs discovered in batches of one
    ONU per PON (200 ms apart), and ActivateOnu gives OnuInd up (reference 1.8)."""
    sim = Sim()
    sim.connect()
    assert sim.southbound() == [olt_ind("up"), nni_ind(0)] + pon_inds(0, "up") + pon_inds(1, "up")
    sim.clock.advance(0)
    assert sim.southbound() == [disc(0, ON0[0]), disc(1, ON1[0])]
    sim.clock.advance(0.19)
    assert sim.southbound() == []
    sim.clock.advance(0.01)
    assert sim.southbound() == [disc(0, ON0[1]), disc(1, ON1[1])]
    sim.activate(ON0[0])
    assert sim.southbound() == [onu_ind(0, 1, "up", "up", ON0[0])]


def test_nni_indication_carries_speed():
    """The NNI's IntfOperInd reports the configured NNI speed (BBSim: 10000) and there is no IntfInd for it."""
    sim = Sim(nni_speed=25000)
    sim.connect()
    [nni] = [i for e in sim.events for i in to_indications(e) if i.WhichOneof("data") == "intf_oper_ind"
             and i.intf_oper_ind.type == "nni"]
    assert nni.intf_oper_ind.speed == 25000
    intf_inds = [i.intf_ind.intf_id for e in sim.events for i in to_indications(e)
                 if i.WhichOneof("data") == "intf_ind"]
    assert intf_inds == [0, 1]          # the PONs only


@pytest.mark.parametrize("delay_ms", [200, 50])
def test_discovery_delay_per_onu_index(delay_ms):
    """ONU j (0-based) of every PON is discovered delay*j after the PONs come up, all PONs in parallel."""
    sim = Sim(onu=3, delay_ms=delay_ms)
    seen = []
    sim.olt.subscribe(lambda e: isinstance(e, events.OnuDiscovery)
                      and seen.append((round(sim.clock.seconds(), 6), e.intf_id, e.serial)))
    sim.connect()
    sim.clock.advance(0)
    for _ in range(10):
        sim.clock.advance(delay_ms / 1000.0 / 2)
    step = delay_ms / 1000.0
    assert seen == [
        (0.0, 0, "BBSM00000001"), (0.0, 1, "BBSM00000101"),
        (round(step, 6), 0, "BBSM00000002"), (round(step, 6), 1, "BBSM00000102"),
        (round(2 * step, 6), 0, "BBSM00000003"), (round(2 * step, 6), 1, "BBSM00000103"),
    ]


def test_delay_zero_means_no_delay():
    """With delay 0 every ONU of every PON is discovered at once (BBSim turns 0 into 200 ms)."""
    sim = Sim(onu=4, delay_ms=0)
    assert sim.olt.timings.discovery_delay == 0
    sim.connect()
    sim.southbound()
    sim.clock.advance(0)
    assert sorted(discoveries(sim)) == sorted((p, f"BBSM0000{p:02X}{i:02X}") for p in (0, 1) for i in range(1, 5))


def test_discovery_resent_every_60_s_until_activated():
    """A discovered ONU announces itself again every 60 s; once activated it stops."""
    sim = Sim()
    sim.connect()
    sim.discover_all()                      # ONU1s announced at t = 0, ONU2s at t = 0.2
    sim.activate(ON0[0])
    sim.southbound()
    sim.clock.advance(59.7)                 # t = 59.9
    assert discoveries(sim) == []
    sim.clock.advance(0.2)                  # t = 60.1: the ONU1s' retry, but ONU1 of PON 0 is active
    assert discoveries(sim) == [(1, ON1[0])]
    sim.clock.advance(0.2)                  # t = 60.3
    assert discoveries(sim) == [(0, ON0[1]), (1, ON1[1])]
    sim.clock.advance(60)
    assert sorted(discoveries(sim)) == [(0, ON0[1]), (1, ON1[0]), (1, ON1[1])]
    for serial in (ON0[1], ON1[0], ON1[1]):
        sim.activate(serial)
    sim.southbound()
    sim.clock.advance(600)
    assert discoveries(sim) == []


def test_discovery_retry_is_configurable():
    """The OnuDiscInd retry interval comes from the settings."""
    sim = Sim(onu=1, discovery_retry=7)
    sim.connect()
    sim.clock.advance(0)
    sim.southbound()
    sim.clock.advance(6.9)
    assert discoveries(sim) == []
    sim.clock.advance(0.1)
    assert discoveries(sim) == [(0, ON0[0]), (1, ON1[0])]


def test_rediscovery_after_delete_onu():
    """DeleteOnu sends OnuInd down at once and the ONU is discovered again 5 s plus its discovery delay later;
    ActivateOnu then brings it up (reference 1.8)."""
    sim = Sim()
    sim.bring_up()                          # t = 0.2
    grpc_call(sim.openolt, "DeleteOnu", onu_msg(0, 2))
    assert sim.southbound() == [onu_ind(0, 2, "down", "down", ON0[1])]
    assert sim.olt.onu_by_serial(ON0[1]).state == "disabled"
    sim.clock.advance(5.1)
    assert discoveries(sim) == []
    sim.clock.advance(0.2)                  # 5.3 > 5 + 0.2 * 1
    assert discoveries(sim) == [(0, ON0[1])]
    sim.activate(ON0[1])
    assert sim.southbound() == [onu_ind(0, 2, "up", "up", ON0[1])]


def test_rediscovery_delay_is_configurable_and_index_based():
    """The first ONU of a PON is rediscovered exactly `rediscovery_delay` s after DeleteOnu."""
    sim = Sim(rediscovery_delay=2)
    sim.bring_up()
    grpc_call(sim.openolt, "DeleteOnu", onu_msg(1, 1))
    sim.southbound()
    sim.clock.advance(1.9)
    assert discoveries(sim) == []
    sim.clock.advance(0.2)
    assert discoveries(sim) == [(1, ON1[0])]


# ---- reboot and reconnect ------------------------------------------------------------------------


def test_reboot_timeline():
    """Reboot: ONUs down at once, the OpenOLT endpoint stops 5 s later (the stream ends UNAVAILABLE) and is back
    reboot_delay s after that with a new heartbeat signature (reference 1.1)."""
    sim = Sim(reboot_delay=10)
    sim.bring_up()
    stream = sim.stream
    before = grpc_call(sim.openolt, "HeartbeatCheck", openolt_pb2.Empty()).heartbeat_signature
    grpc_call(sim.openolt, "Reboot", openolt_pb2.Empty())
    assert sim.southbound() == [onu_ind(0, 1, "down", "down", ON0[0]), onu_ind(0, 2, "down", "down", ON0[1]),
                                onu_ind(1, 1, "down", "down", ON1[0]), onu_ind(1, 2, "down", "down", ON1[1])]
    assert sim.olt.state == "deleted"
    assert all(onu.state == "disabled" for onu in sim.olt.onus)
    sim.clock.advance(4.9)
    assert sim.southbound() == [] and not stream.closed
    sim.clock.advance(0.1)
    assert sim.southbound() == [("OpenoltServer", False)]
    assert drain(stream)[1].status is grpc.StatusCode.UNAVAILABLE
    sim.clock.advance(9.9)
    assert sim.southbound() == []
    sim.clock.advance(0.1)
    assert sim.southbound() == [("OpenoltServer", True)]
    assert sim.olt.state == "initialized"
    after = grpc_call(sim.openolt, "HeartbeatCheck", openolt_pb2.Empty()).heartbeat_signature
    assert after != before


def test_no_onu_announces_itself_during_a_reboot():
    """While the OLT reboots, discovered ONUs stop re-announcing and a pending rediscovery after DeleteOnu is
    dropped; after the reconnect every ONU is discovered again."""
    sim = Sim()
    sim.connect()
    sim.discover_all()
    sim.activate(ON0[1])
    grpc_call(sim.openolt, "DeleteOnu", onu_msg(0, 2))        # rediscovery due 5.2 s later
    sim.olt.reboot()
    sim.southbound()
    for _ in range(700):                                       # 70 s: past the retries and the reboot
        sim.clock.advance(0.1)
    assert sim.olt.state == "initialized"
    assert discoveries(sim) == []
    sim.connect()
    sim.clock.advance(1)
    sim.clock.advance(0.2)
    assert sorted(discoveries(sim)) == sorted([(0, ON0[0]), (0, ON0[1]), (1, ON1[0]), (1, ON1[1])])


def test_reboot_grace_is_configurable():
    """The pause before the OpenOLT endpoint stops on reboot comes from the settings."""
    sim = Sim(reboot_grace=1, reboot_delay=3)
    sim.bring_up()
    sim.olt.reboot()
    sim.southbound()
    sim.clock.advance(1)
    assert sim.southbound() == [("OpenoltServer", False)]
    sim.clock.advance(3)
    assert sim.southbound() == [("OpenoltServer", True)]


def test_every_reboot_gives_a_new_heartbeat_signature():
    """Each completed reboot changes the heartbeat signature (the adapter detects reboots by it)."""
    sim = Sim(reboot_delay=0, reboot_grace=0)
    signatures = [sim.olt.heartbeat_signature]
    for _ in range(5):
        sim.connect()
        sim.clock.advance(1)
        sim.olt.reboot()
        sim.clock.advance(0)
        assert sim.olt.state == "initialized"
        signatures.append(sim.olt.heartbeat_signature)
    assert all(a != b for a, b in zip(signatures, signatures[1:]))


def test_reconnect_after_reboot_waits_and_sends_no_pon_indication():
    """After a reboot the adapter's new EnableIndication gets, 1 s later, only OltInd and the NNI (no PON IntfInd:
    the PONs stayed enabled), then every ONU is discovered again with its discovery delay (reference 1.8)."""
    sim = Sim(reboot_delay=10)
    sim.bring_up()
    sim.olt.reboot()
    sim.clock.advance(5)
    sim.clock.advance(10)
    assert sim.olt.state == "initialized"
    sim.southbound()
    sim.connect()
    assert sim.southbound() == []
    sim.clock.advance(0.99)
    assert sim.southbound() == []
    sim.clock.advance(0.01)
    assert sim.southbound() == [olt_ind("up"), nni_ind(0), disc(0, ON0[0]), disc(1, ON1[0])]
    sim.clock.advance(0.2)
    assert sim.southbound() == [disc(0, ON0[1]), disc(1, ON1[1])]
    assert [onu.state for onu in sim.olt.onus] == ["discovered"] * 4
    sim.activate(ON1[1])
    assert sim.southbound() == [onu_ind(1, 2, "up", "up", ON1[1])]


def test_second_enable_indication_reconciles():
    """A second EnableIndication while one is open ends the first stream normally and, 1 s later, gets only OltInd
    and the NNI; enabled ONUs get nothing (reference 1.8 reconcile)."""
    sim = Sim()
    sim.bring_up()
    first = sim.stream
    sim.connect()
    assert first.closed and drain(first)[1].status is None
    sim.clock.advance(1)
    assert sim.southbound() == [olt_ind("up"), nni_ind(0)]
    assert [onu.state for onu in sim.olt.onus] == ["enabled"] * 4


def test_enable_indication_refused_while_rebooting():
    """EnableIndication during the reboot window is refused with a clear message, not queued."""
    sim = Sim()
    sim.bring_up()
    sim.olt.reboot()
    with pytest.raises(Unavailable, match="rebooting"):
        sim.connect()


# ---- indication sequences of reference 1.8 -------------------------------------------------------


def test_shutdown_onu_sequence():
    """ShutdownONU: dying gasp, LOS on, OMCI LOS alarm on UNI 0x0101, then OnuInd down/down (reference 1.8)."""
    sim = Sim()
    sim.bring_up()
    grpc_call(sim.bbsim, "ShutdownONU", bbsim_pb2.ONURequest(SerialNumber=ON0[0]))
    assert sim.southbound() == [
        ("AlarmInd", "dying_gasp_ind", 0, 1, "on"),
        ("AlarmInd", "onu_alarm_ind", 0, 1, "on"),
        ("OmciAlarm", ON0[0], 0x0101, "raised"),
        onu_ind(0, 1, "down", "down", ON0[0]),
    ]
    assert sim.olt.onu_by_serial(ON0[0]).state == "disabled"


def test_poweron_onu_from_disabled_sequence():
    """PoweronONU of a disabled ONU: LOS off, OMCI clear, OnuDiscInd, then OnuInd up without ActivateOnu."""
    sim = Sim()
    sim.bring_up()
    sim.olt.shutdown_onu(ON0[0])
    sim.southbound()
    grpc_call(sim.bbsim, "PoweronONU", bbsim_pb2.ONURequest(SerialNumber=ON0[0]))
    assert sim.southbound() == [
        ("AlarmInd", "onu_alarm_ind", 0, 1, "off"),
        ("OmciAlarm", ON0[0], 0x0101, "cleared"),
        disc(0, ON0[0]),
        onu_ind(0, 1, "up", "up", ON0[0]),
    ]
    assert sim.olt.onu_by_serial(ON0[0]).state == "enabled"
    sim.clock.advance(120)
    assert discoveries(sim) == []


def test_disable_and_enable_pon_without_duplicate_onu_indications():
    """DisablePonIf: OnuInd down (admin up) per active ONU, then the PON down; EnablePonIf: the PON up, then one
    OnuInd up per ONU, without BBSim's duplicates."""
    sim = Sim()
    sim.bring_up()
    grpc_call(sim.openolt, "DisablePonIf", interface(1))
    assert sim.southbound() == [onu_ind(1, 1, "down", "up", ON1[0]), onu_ind(1, 2, "down", "up", ON1[1])] \
        + pon_inds(1, "down")
    pon = sim.olt.pons[1]
    assert (pon.state, pon.oper_state) == ("disabled", "down")
    assert [onu.state for onu in pon.onus] == ["pon_disabled"] * 2
    assert pon.onu_ids == {}
    grpc_call(sim.openolt, "EnablePonIf", interface(1))
    assert sim.southbound() == pon_inds(1, "up") + [onu_ind(1, 1, "up", "up", ON1[0]),
                                                     onu_ind(1, 2, "up", "up", ON1[1])]
    assert [onu.state for onu in pon.onus] == ["enabled"] * 2
    assert sim.olt.pons[0].onus[0].state == "enabled"


def test_disable_pon_skips_onus_never_activated():
    """DisablePonIf sends OnuInd only for ONUs the adapter activated (BBSim also reports never-discovered ONUs)."""
    sim = Sim()
    sim.connect()
    sim.discover_all()
    sim.activate(ON1[0])
    sim.southbound()
    grpc_call(sim.openolt, "DisablePonIf", interface(1))
    assert sim.southbound() == [onu_ind(1, 1, "down", "up", ON1[0])] + pon_inds(1, "down")


def _pon_cycle(sim):
    grpc_call(sim.openolt, "DisablePonIf", interface(1))
    grpc_call(sim.openolt, "EnablePonIf", interface(1))


def _olt_cycle(sim):
    grpc_call(sim.openolt, "DisableOlt", openolt_pb2.Empty())
    grpc_call(sim.openolt, "ReenableOlt", openolt_pb2.Empty())


@pytest.mark.parametrize("mode", ["default", "only-onu"])
@pytest.mark.parametrize("cycle", [_pon_cycle, _olt_cycle], ids=["pon", "olt"])
def test_discovered_onu_announced_again_after_pon_comes_back(cycle, mode):
    """An ONU that was discovered but not yet activated when its PON went down is announced again (with its
    discovery delay) once the PON is back, so the adapter can still activate it."""
    sim = Sim(controlled_activation=mode)
    sim.connect()
    if mode == "only-onu":
        for serial in ON1:
            sim.olt.power_on_onu(serial)
    sim.discover_all()
    sim.activate(ON1[0])
    cycle(sim)
    sim.southbound()
    sim.clock.advance(0.2)
    assert (1, ON1[1]) in discoveries(sim)
    sim.activate(ON1[1])
    assert sim.olt.onu_by_serial(ON1[1]).state == "enabled"


def test_disable_and_reenable_olt_sequence():
    """DisableOlt: each PON down, then OltInd down, ONUs pon_disabled without OnuInd, the NNI stays up and the
    allocated ONU ids are emptied; ReenableOlt: OltInd up, then per PON up followed by its ONUs' OnuInd up."""
    sim = Sim()
    sim.bring_up()
    grpc_call(sim.openolt, "DisableOlt", openolt_pb2.Empty())
    assert sim.southbound() == pon_inds(0, "down") + pon_inds(1, "down") + [olt_ind("down")]
    assert [onu.state for onu in sim.olt.onus] == ["pon_disabled"] * 4
    assert [nni.oper_state for nni in sim.olt.nnis] == ["up"]
    assert all(pon.onu_ids == {} for pon in sim.olt.pons)
    assert (sim.olt.state, sim.olt.oper_state) == ("disabled", "down")
    grpc_call(sim.openolt, "ReenableOlt", openolt_pb2.Empty())
    assert sim.southbound() == (
        [olt_ind("up")]
        + pon_inds(0, "up") + [onu_ind(0, 1, "up", "up", ON0[0]), onu_ind(0, 2, "up", "up", ON0[1])]
        + pon_inds(1, "up") + [onu_ind(1, 1, "up", "up", ON1[0]), onu_ind(1, 2, "up", "up", ON1[1])])
    assert [onu.state for onu in sim.olt.onus] == ["enabled"] * 4
    assert sim.olt.pons[0].onu_ids == {1: ON0[0], 2: ON0[1]}


# ---- controlled activation -----------------------------------------------------------------------


def test_controlled_activation_default():
    """Mode default: PONs come up and every ONU is discovered without any request."""
    sim = Sim(controlled_activation="default")
    sim.connect()
    sim.discover_all()
    assert [onu.state for onu in sim.olt.onus] == ["discovered"] * 4


def test_controlled_activation_only_onu():
    """Mode only-onu: PONs come up but ONUs wait for PoweronONU, which sends LOS off, OMCI clear and OnuDiscInd;
    the adapter still activates the ONU."""
    sim = Sim(controlled_activation="only-onu")
    sim.connect()
    assert sim.southbound() == [olt_ind("up"), nni_ind(0)] + pon_inds(0, "up") + pon_inds(1, "up")
    sim.clock.advance(120)
    assert discoveries(sim) == []
    assert [onu.state for onu in sim.olt.onus] == ["created"] * 4
    grpc_call(sim.bbsim, "PoweronONU", bbsim_pb2.ONURequest(SerialNumber=ON1[1]))
    sim.clock.advance(0)
    assert sim.southbound() == [("AlarmInd", "onu_alarm_ind", 1, 2, "off"), ("OmciAlarm", ON1[1], 0x0101, "cleared"),
                                disc(1, ON1[1])]
    assert sim.olt.onu_by_serial(ON1[1]).state == "discovered"
    sim.activate(ON1[1])
    assert sim.southbound() == [onu_ind(1, 2, "up", "up", ON1[1])]


@pytest.mark.parametrize("mode", ["only-onu", "both"])
def test_controlled_activation_onus_come_back_after_a_pon_is_re_enabled(mode):
    """Modes only-onu and both: an enabled ONU whose PON is disabled and enabled again is left initialized with
    nothing announcing it (BBSim's table); PoweronONU then discovers it again and the adapter re-activates it."""
    sim = Sim(controlled_activation=mode)
    sim.connect()
    grpc_call(sim.openolt, "EnablePonIf", interface(0))  # in only-onu already enabled: accepted, nothing changes
    grpc_call(sim.bbsim, "PoweronONU", bbsim_pb2.ONURequest(SerialNumber=ON0[0]))
    sim.clock.advance(0)
    sim.activate(ON0[0])
    onu = sim.olt.onu_by_serial(ON0[0])
    assert onu.state == "enabled"
    grpc_call(sim.openolt, "DisablePonIf", interface(0))
    grpc_call(sim.openolt, "EnablePonIf", interface(0))
    sim.clock.advance(120)
    assert onu.state == "initialized"
    sim.southbound()
    grpc_call(sim.bbsim, "PoweronONU", bbsim_pb2.ONURequest(SerialNumber=ON0[0]))
    sim.clock.advance(0)
    assert discoveries(sim) == [(0, ON0[0])]
    assert onu.state == "discovered"
    sim.activate(ON0[0])
    assert onu.state == "enabled"


def test_controlled_activation_only_pon():
    """Mode only-pon: only OltInd and the NNI; EnablePonIf brings a PON up and discovers its ONUs."""
    sim = Sim(controlled_activation="only-pon")
    sim.connect()
    sim.clock.advance(1)
    assert sim.southbound() == [olt_ind("up"), nni_ind(0)]
    assert [pon.state for pon in sim.olt.pons] == ["created", "created"]
    grpc_call(sim.openolt, "EnablePonIf", interface(0))
    assert sim.southbound() == pon_inds(0, "up")
    sim.clock.advance(0.2)
    assert discoveries(sim) == [(0, ON0[0]), (0, ON0[1])]
    assert [onu.state for onu in sim.olt.pons[1].onus] == ["created", "created"]


def test_controlled_activation_both():
    """Mode both: EnablePonIf brings the PON up without discovery; each ONU needs PoweronONU."""
    sim = Sim(controlled_activation="both")
    sim.connect()
    assert sim.southbound() == [olt_ind("up"), nni_ind(0)]
    grpc_call(sim.openolt, "EnablePonIf", interface(0))
    sim.clock.advance(120)
    assert [t for t in sim.southbound() if t[0] != "PortStats"] == pon_inds(0, "up")
    assert [onu.state for onu in sim.olt.onus] == ["created"] * 4
    grpc_call(sim.bbsim, "PoweronONU", bbsim_pb2.ONURequest(SerialNumber=ON0[1]))
    sim.clock.advance(0)
    assert discoveries(sim) == [(0, ON0[1])]
    # an ONU on a PON that is still down cannot be powered on
    err = grpc_error(sim.bbsim, "PoweronONU", bbsim_pb2.ONURequest(SerialNumber=ON1[0]))
    assert err.code is grpc.StatusCode.FAILED_PRECONDITION and "PON 1" in err.details


# ---- identifiers and building --------------------------------------------------------------------


def test_more_than_255_onus_per_pon_get_unique_serials_and_macs():
    """Past 255 ONUs per PON serials and MACs stay unique (the first serial byte carries the high bits); the first
    255 keep BBSim's identifiers."""
    sim = Sim(start=False, pon=2, onu=300, uni=1)
    serials = [onu.serial for onu in sim.olt.onus]
    assert len(serials) == len(set(serials)) == 600
    pon0 = sim.olt.pons[0].onus
    assert (pon0[0].serial, pon0[254].serial, pon0[255].serial, pon0[299].serial) == (
        "BBSM00000001", "BBSM000000ff", "BBSM01000000", "BBSM0100002c")
    assert sim.olt.pons[1].onus[0].serial == "BBSM00000101"
    macs = [s.mac for onu in sim.olt.onus for s in onu.services]
    assert len(macs) == len(set(macs)) == 600
    assert pon0[0].services[0].mac == "2e:00:00:01:00:00"
    assert all(int(mac[:2], 16) & 0x03 == 0x02 for mac in macs)  # locally administered, unicast


def test_onu_beyond_255_is_discovered_and_activated():
    """ONU 256 of a PON is discovered with its own serial and can be activated by it."""
    sim = Sim(pon=1, onu=256, uni=1, delay_ms=0)
    sim.connect()
    sim.clock.advance(0)
    assert (0, "BBSM01000000") in discoveries(sim)
    sim.activate("BBSM01000000")
    assert sim.southbound() == [onu_ind(0, 256, "up", "up", "BBSM01000000")]


def test_several_nnis_are_created():
    """`nni 3` creates three NNIs: each gets its IntfOperInd, appears in GET /v1/olt and takes LOS alarms."""
    sim = Sim(nni=3)
    assert [nni.port_no for nni in sim.olt.nnis] == [0x100000, 0x100001, 0x100002]
    sim.connect()
    assert sim.southbound()[:4] == [olt_ind("up"), nni_ind(0), nni_ind(1), nni_ind(2)]
    reply = sim.rest.call("GET", "/v1/olt")
    assert [(n["ID"], n["OperState"]) for n in reply.json["NNIPorts"]] == [(0, "up"), (1, "up"), (2, "up")]
    assert sim.rest.call("POST", "/v1/olt/ports/nni/2/alarms/los/on").code == 200
    [alarm] = [e for e in sim.events if isinstance(e, events.Alarm)]
    assert alarm.fields == {"intf_id": 0x100002, "status": "on"}
    assert sim.rest.call("POST", "/v1/olt/ports/nni/3/alarms/los/on").code == 404


def hsia(c_tag, s_tag, c_alloc="unique", s_alloc="shared"):
    return ServiceSpec(name="hsia", c_tag=c_tag, c_tag_allocation=c_alloc, s_tag=s_tag, s_tag_allocation=s_alloc,
                       needs_eapol=True, needs_dhcp=True, tp_id=64)


def test_unique_c_tags_roll_over_to_the_next_s_tag():
    """Unique C-tags that would pass 4094 start again at the configured C-tag under the next S-tag (BBSim
    crashes); every (C-tag, S-tag) pair stays unique and valid."""
    settings = load_settings({"pon": 1, "onu": 2, "uni": 4, "services": [hsia(4090, 900)]}, None)
    check_buildable(settings)
    olt = build_olt(settings, Clock(), random.Random(0))
    pairs = [(s.c_tag, s.s_tag) for onu in olt.onus for s in onu.services]
    assert pairs == [(4090, 900), (4091, 900), (4092, 900), (4093, 900), (4094, 900),
                     (4090, 901), (4091, 901), (4092, 901)]


def test_tags_keep_bbsim_order_across_pons():
    """Tags are handed out PON by PON, ONU by ONU, UNI by UNI as BBSim does (C-tag 900, 901, ...)."""
    sim = Sim(start=False, pon=2, onu=2, uni=2)
    tags = [(onu.serial, s.uni.id, s.c_tag, s.s_tag) for onu in sim.olt.onus for s in onu.services]
    assert tags == [("BBSM00000001", 0, 900, 900), ("BBSM00000001", 1, 901, 900),
                    ("BBSM00000002", 0, 902, 900), ("BBSM00000002", 1, 903, 900),
                    ("BBSM00000101", 0, 904, 900), ("BBSM00000101", 1, 905, 900),
                    ("BBSM00000102", 0, 906, 900), ("BBSM00000102", 1, 907, 900)]


@pytest.mark.parametrize("spec", [hsia(4090, 4094), hsia(900, 4093, c_alloc="shared", s_alloc="unique")],
                         ids=["c-rollover", "unique-s"])
def test_running_out_of_s_tags_is_a_clear_build_error(spec):
    """When S-tags would pass 4094 the configuration is refused before building, naming the service."""
    settings = load_settings({"pon": 1, "onu": 2, "uni": 4, "services": [spec]}, None)
    with pytest.raises(InvalidArgument) as info:
        check_buildable(settings)
    assert "hsia" in info.value.message and "S-tag" in info.value.message
    with pytest.raises(InvalidArgument):
        build_olt(settings, Clock(), random.Random(0))


def test_running_out_of_s_tags_fails_twistd_options(tmp_path, capsys):
    """`twistd oltsim` refuses such a configuration with one clear message, before anything listens."""
    from oltsim.tap import Options
    services = tmp_path / "services.yaml"
    services.write_text("services:\n  - name: hsia\n    c_tag: 4090\n    c_tag_allocation: unique\n"
                        "    s_tag: 4094\n    s_tag_allocation: shared\n")
    with pytest.raises((usage.UsageError, SystemExit)) as info:
        Options().parseOptions(["--services", str(services), "--onu", "2", "--uni", "4"])
    shown = str(info.value) + capsys.readouterr().err
    assert "hsia" in shown and "S-tag" in shown and "Traceback" not in shown


# ---- flows ---------------------------------------------------------------------------------------


def flow(pon, onu_id, flow_id, flow_type="downstream", o_vid=900, uni=0, gem=None, alloc=None, **kw):
    """An OpenOLT flow as the adapter sends it; GEM port and alloc id are per ONU unless given."""
    return openolt_pb2.Flow(
        access_intf_id=pon, onu_id=onu_id, uni_id=uni, flow_id=flow_id, flow_type=flow_type,
        alloc_id=1024 + onu_id if alloc is None else alloc, gemport_id=1024 + onu_id if gem is None else gem,
        network_intf_id=0, classifier=openolt_pb2.Classifier(o_vid=o_vid, eth_type=0x0800, src_port=68, dst_port=67),
        action=openolt_pb2.Action(cmd=openolt_pb2.ActionCmd(trap_to_host=True)), priority=100, port_no=256 + uni,
        **kw)


def listed(sim, path="/v1/olt/flows"):
    reply = sim.rest.call("GET", path)
    assert reply.code == 200
    return [(f["access_intf_id"], f["onu_id"], f["flow_id"], f["flow_type"], f["classifier"]["o_vid"])
            for f in reply.json["flows"]]


def test_flow_re_add_replaces():
    """Re-adding a flow id on the same PON (as BBR does) replaces the flow; it is listed once."""
    sim = Sim()
    sim.bring_up()
    grpc_call(sim.openolt, "FlowAdd", flow(0, 1, 7, o_vid=900))
    grpc_call(sim.openolt, "FlowAdd", flow(0, 1, 7, o_vid=901))
    assert listed(sim) == [(0, 1, "7", "downstream", 901)]
    assert listed(sim, f"/v1/olt/onus/{ON0[0]}/flows") == [(0, 1, "7", "downstream", 901)]
    assert sim.rest.call("GET", "/v1/olt/flows").json["flow_count"] == 1


def test_same_flow_id_on_two_pons_both_kept():
    """Equal flow ids on different PONs do not collide: both are stored, each listed once, each under its ONU."""
    sim = Sim()
    sim.bring_up()
    grpc_call(sim.openolt, "FlowAdd", flow(0, 1, 1, o_vid=900))
    grpc_call(sim.openolt, "FlowAdd", flow(1, 1, 1, o_vid=908))
    assert listed(sim) == [(0, 1, "1", "downstream", 900), (1, 1, "1", "downstream", 908)]
    assert listed(sim, f"/v1/olt/onus/{ON0[0]}/flows") == [(0, 1, "1", "downstream", 900)]
    assert listed(sim, f"/v1/olt/onus/{ON1[0]}/flows") == [(1, 1, "1", "downstream", 908)]


def test_same_flow_id_with_two_types_both_kept():
    """An upstream and a downstream flow with the same id on one PON are two flows."""
    sim = Sim()
    sim.bring_up()
    grpc_call(sim.openolt, "FlowAdd", flow(0, 1, 3, "upstream"))
    grpc_call(sim.openolt, "FlowAdd", flow(0, 1, 3, "downstream"))
    assert [f[3] for f in listed(sim)] == ["upstream", "downstream"]


def test_flow_id_re_added_for_another_onu_moves_to_it():
    """Re-adding a flow id for another ONU of the PON replaces the flow: the first ONU no longer lists it, and
    shutting that ONU down does not delete the new owner's flow."""
    sim = Sim()
    sim.bring_up()
    grpc_call(sim.openolt, "FlowAdd", flow(0, 1, 5))
    grpc_call(sim.openolt, "FlowAdd", flow(0, 2, 5))
    assert listed(sim) == [(0, 2, "5", "downstream", 900)]
    assert listed(sim, f"/v1/olt/onus/{ON0[0]}/flows") == []
    assert listed(sim, f"/v1/olt/onus/{ON0[1]}/flows") == [(0, 2, "5", "downstream", 900)]
    sim.olt.shutdown_onu(ON0[0])
    assert listed(sim) == [(0, 2, "5", "downstream", 900)]


def test_nni_and_multicast_flows_are_stored_only():
    """OLT/NNI flows (access_intf_id -1) and multicast flows are stored and listed without an ONU."""
    sim = Sim()
    sim.connect()
    grpc_call(sim.openolt, "FlowAdd", flow(-1, 0, 5000, "upstream"))
    grpc_call(sim.openolt, "FlowAdd", flow(0, 0, 6000, "multicast", o_vid=55))
    assert listed(sim) == [(-1, 0, "5000", "upstream", 900), (0, 0, "6000", "multicast", 55)]


def test_flow_remove_forgets_the_flow():
    """FlowRemove forgets the flow; removing it again is NOT_FOUND."""
    sim = Sim()
    sim.bring_up()
    grpc_call(sim.openolt, "FlowAdd", flow(0, 1, 9))
    grpc_call(sim.openolt, "FlowRemove", openolt_pb2.Flow(access_intf_id=0, onu_id=1, flow_id=9,
                                                          flow_type="downstream"))
    assert listed(sim) == []
    err = grpc_error(sim.openolt, "FlowRemove", openolt_pb2.Flow(access_intf_id=0, onu_id=1, flow_id=9,
                                                                 flow_type="downstream"))
    assert err.code is grpc.StatusCode.NOT_FOUND


def test_disabled_onu_loses_its_flows():
    """Shutting an ONU down forgets its flows (as BBSim cleans the ONU on disable); other ONUs keep theirs."""
    sim = Sim()
    sim.bring_up()
    grpc_call(sim.openolt, "FlowAdd", flow(0, 1, 1))
    grpc_call(sim.openolt, "FlowAdd", flow(0, 2, 2))
    sim.olt.shutdown_onu(ON0[0])
    assert listed(sim) == [(0, 2, "2", "downstream", 900)]


REFUSED_FLOWS = [
    ("unknown-pon", lambda: flow(9, 1, 1), grpc.StatusCode.NOT_FOUND),
    ("unknown-onu-id", lambda: flow(0, 9, 1), grpc.StatusCode.NOT_FOUND),
    ("uni-out-of-range", lambda: flow(0, 1, 1, uni=9), grpc.StatusCode.INVALID_ARGUMENT),
    ("replicate-without-pbit-map", lambda: flow(0, 1, 1, replicate_flow=True), grpc.StatusCode.INVALID_ARGUMENT),
    ("gem-of-another-onu", lambda: flow(0, 2, 2, gem=1025), grpc.StatusCode.FAILED_PRECONDITION),
    ("alloc-of-another-onu", lambda: flow(0, 2, 2, alloc=1025), grpc.StatusCode.FAILED_PRECONDITION),
    ("bad-flow-type", lambda: flow(0, 1, 1, "sideways"), grpc.StatusCode.INVALID_ARGUMENT),
    ("vlan-out-of-range", lambda: flow(0, 1, 1, o_vid=5000), grpc.StatusCode.INVALID_ARGUMENT),
]


@pytest.mark.parametrize("make,code", [pytest.param(m, c, id=i) for i, m, c in REFUSED_FLOWS])
def test_refused_flow_is_not_stored(make, code):
    """A FlowAdd that fails validation is answered with its status and leaves no trace: nothing stored or listed,
    no event, no GEM port bound (BBSim stores first and validates after)."""
    sim = Sim()
    sim.bring_up()
    grpc_call(sim.openolt, "FlowAdd", flow(0, 1, 100))     # ONU 1 uses GEM 1025 and alloc 1025
    before = listed(sim)
    generation = sim.olt.generation
    sim.events.clear()
    err = grpc_error(sim.openolt, "FlowAdd", make())
    assert err.code is code
    assert sim.events == []
    assert sim.olt.generation == generation
    assert listed(sim) == before == [(0, 1, "100", "downstream", 900)]


def test_flow_for_inactive_onu_is_refused_and_not_stored():
    """A FlowAdd for an ONU that is discovered but not activated is FAILED_PRECONDITION and stores nothing."""
    sim = Sim()
    sim.connect()
    sim.discover_all()
    sim.events.clear()
    err = grpc_error(sim.openolt, "FlowAdd", flow(0, 1, 1))
    assert err.code is grpc.StatusCode.FAILED_PRECONDITION and ON0[0] in err.details
    assert listed(sim) == [] and sim.events == []


# ---- stopping ------------------------------------------------------------------------------------


def busy_sim():
    sim = Sim(reboot_delay=10)
    sim.connect()
    sim.discover_all()                               # discovery retries pending
    sim.activate(ON0[0])
    sim.activate(ON0[1])
    grpc_call(sim.openolt, "DeleteOnu", onu_msg(0, 2))   # rediscovery pending
    return sim


def test_stop_cancels_every_timer():
    """`olt.stop()` leaves no pending delayed call: discovery retries, rediscovery, port statistics."""
    sim = busy_sim()
    assert sim.olt.pending_calls() > 0
    sim.olt.stop()
    assert sim.olt.pending_calls() == 0
    assert sim.clock.getDelayedCalls() == []


def test_stop_during_reboot_cancels_every_timer():
    """Stopping in the middle of a reboot leaves no pending delayed call either."""
    sim = busy_sim()
    sim.olt.reboot()
    sim.clock.advance(6)                             # server stopped, waiting for reboot_delay
    assert sim.olt.pending_calls() > 0
    sim.olt.stop()
    assert sim.olt.pending_calls() == 0
    assert sim.clock.getDelayedCalls() == []


def test_stop_during_reconnect_pause_cancels_every_timer():
    """Stopping during the 1 s pause of a reconnect leaves no pending delayed call."""
    sim = Sim()
    sim.bring_up()
    sim.connect()
    sim.olt.stop()
    assert sim.olt.pending_calls() == 0
    assert sim.clock.getDelayedCalls() == []
