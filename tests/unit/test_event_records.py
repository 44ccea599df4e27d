"""The event bus's records: every model event has a type of the catalogue oltsimctl chooses from
(oltsim.api.eventtypes), and a record that concerns an ONU names its serial even when the event names the ONU by
PON and ONU id only (OMCI frames, packets, flows)."""
from __future__ import annotations

import dataclasses

from conftest import Sim
from oltsim.api.eventbus import EventBus, to_record
from oltsim.api.eventtypes import CHATTY_TYPES, DEFAULT_TYPES, EXCHANGE_TYPES, RECORD_TYPES
from oltsim.model import events

#: One instance of every model event class, each StateChanged device and both flow and scenario kinds.
SAMPLES = [
    events.OltIndication("up"), events.NniIndication(0, "up", 10000), events.PonIndication(0, "up"),
    events.OnuDiscovery(0, "BBSM00000001"), events.OnuIndication(0, 1, "BBSM00000001", "up", "up"),
    events.Alarm("los_ind", {"intf_id": 0x100000, "status": "on"}),
    events.AlarmCleared("dying_gasp_ind", {"intf_id": 0, "onu_id": 1, "status": "off"}, "BBSM00000001",
                        "onu-powered-on"),
    events.OmciAlarm(0, 1, "BBSM00000001", 11, 257, True),
    *[events.StateChanged(device, "OperState", "down", "up") for device in ("olt", "pon", "onu", "uni", "service")],
    events.OpenoltServer(True), events.FlowChanged(0, 1, 7, "upstream", True),
    events.FlowChanged(0, 1, 7, "upstream", False), events.OmciIndication(0, 1, b"\x00"),
    events.PacketIndication("pon", 0, b"\x00", onu_id=1), events.PortStats(0x100000, 1, 2),
    events.OpenoltRequest("EnableIndication"), events.MibUpload(0, 1, "BBSM00000001", False),
    *[events.ScenarioEvent(kind, "s") for kind in ("scenario-started", "scenario-step-started",
                                                   "scenario-step-ended", "scenario-ended")],
]


def test_every_model_event_has_a_catalogued_type():
    """Each event class of oltsim.model.events becomes a record whose type is in RECORD_TYPES, and every catalogued
    type is produced: a new event class must be catalogued (and so chosen or not by `oltsimctl events`)."""
    classes = {cls for cls in vars(events).values() if dataclasses.is_dataclass(cls) and isinstance(cls, type)}
    assert {type(event) for event in SAMPLES} == classes
    olt = Sim().olt
    produced = {to_record(olt, event, 1, 0.0)["type"] for event in SAMPLES}
    assert produced == set(RECORD_TYPES)
    # the default is what `oltsimctl events`' help says (state, alarm and scenario events); the exchanges
    # of a bring-up are asked for by type or --all, as the chatty ones
    assert set(DEFAULT_TYPES) | set(EXCHANGE_TYPES) | set(CHATTY_TYPES) == set(RECORD_TYPES)
    assert {"omci-indication", "packet-indication", "port-stats"}.isdisjoint(DEFAULT_TYPES)
    assert {"openolt-request", "mib-upload", "flow-added"}.isdisjoint(DEFAULT_TYPES)
    assert {"onu-state-changed", "alarm", "scenario-started"} <= set(DEFAULT_TYPES)


def test_records_of_an_onu_name_its_serial():
    """OMCI frames, packets from a UNI and flows, named by PON and ONU id, carry the ONU's serial (so `--onu SN`
    keeps them too); a packet from the NNI is of no PON or ONU; an id no ONU has gives no serial."""
    sim = Sim()
    sim.bring_up()
    bus = EventBus(sim.olt, sim.clock)
    onu = sim.olt.onus[-1]
    pon, onu_id = onu.pon.id, onu.onu_id
    records = []
    bus.subscribe(lambda record: records.append(record) or True, onu_serial=onu.serial.lower())
    for event in (events.OmciIndication(pon, onu_id, b"\x00\x01"),
                  events.PacketIndication("pon", pon, b"\x00", onu_id=onu_id, uni_id=0),
                  events.FlowChanged(pon, onu_id, 7, "upstream", True)):
        sim.olt.emit(event)
    assert [(r["type"], r["pon_id"], r["onu_id"], r["onu_serial"]) for r in records] == [
        ("omci-indication", pon, onu_id, onu.serial), ("packet-indication", pon, onu_id, onu.serial),
        ("flow-added", pon, onu_id, onu.serial)]
    nni = to_record(sim.olt, events.PacketIndication("nni", 0, b"\x00"), 1, 0.0)
    assert (nni["pon_id"], nni["onu_id"], nni["uni_id"], nni["onu_serial"], nni["details"]["intf_id"]) == (
        -1, -1, -1, "", "0")
    assert to_record(sim.olt, events.OmciIndication(pon, 99, b"\x00"), 1, 0.0)["onu_serial"] == ""
    assert to_record(sim.olt, events.OmciIndication(9, 1, b"\x00"), 1, 0.0)["onu_serial"] == ""
