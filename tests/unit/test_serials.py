"""ONU serials as BBSim and VOLTHA write them, at a lab's numbering (OLT id 10, 2 PONs x 16 ONUs): lower-case hex
on every surface (model, OpenOLT, v1 REST and gRPC, v0 REST, SADIS, events), and every lookup by serial takes the
hex in either case."""
from __future__ import annotations

import json
import random

import pytest
from treq.testing import StubTreq
from twisted.internet.task import Clock
from voltha_protos import openolt_pb2

from oltsim._proto import bbsim_pb2
from oltsim.api import translate
from oltsim.api.eventbus import EventBus
from oltsim.api.sadis import SadisRest
from oltsim.api.v0.usecases_v0 import V0Commands
from oltsim.api.v0.rest_v0 import V0Rest
from oltsim.bbsimevents import map_event
from oltsim.config import load_settings
from oltsim.model import events
from oltsim.model.builder import build_olt
from oltsim.model.errors import NotFound

from conftest import Sim, grpc_call

OLT_ID, PONS, ONUS = 10, 2, 16


def expected_serial(olt_id: int, pon: int, index: int) -> str:
    """BBSim's OnuSnToString of vendor BBSM + bytes (0, olt_id, pon, index): Go's %x of each byte, lower case."""
    return "BBSM" + "".join(format(b, "02x") for b in (0, olt_id, pon, index))


@pytest.fixture
def sim():
    return Sim(olt_id=OLT_ID, pon=PONS, onu=ONUS)


def test_serials_are_lower_case_hex_at_olt_id_10(sim):
    """Every ONU of OLT 10 carries BBSim's serial, lower case: BBSM000a010b is PON 1, ONU 11 (reference 5)."""
    got = [onu.serial for onu in sim.olt.onus]
    assert got == [expected_serial(OLT_ID, p, i) for p in range(PONS) for i in range(1, ONUS + 1)]
    assert sim.olt.pons[1].onus[10].serial == "BBSM000a010b"
    assert all(s[4:] == s[4:].lower() for s in got)


@pytest.mark.parametrize("typed", ["BBSM000a010b", "BBSM000A010B", "bbsm000a010b", "BBSM000A010b"])
def test_a_lookup_takes_the_hex_in_either_case(sim, typed):
    """A serial is hex: the model, the OLT index and the PON index find the ONU however its letters are typed."""
    onu = sim.olt.onu_by_serial(typed)
    assert onu.serial == "BBSM000a010b"
    assert sim.olt.pons[1].onu_by_serial(typed) is onu
    with pytest.raises(NotFound):
        sim.olt.pons[0].onu_by_serial(typed)
    with pytest.raises(NotFound):
        sim.olt.onu_by_serial("BBSM000a010g")


def test_openolt_writes_and_reads_lower_case(sim):
    """The discovery indication carries the serial's bytes, which VOLTHA turns into BBSM000a010b; ActivateOnu with
    those bytes activates that ONU."""
    sim.connect()
    sim.discover_all()
    disc = [e for e in sim.events if isinstance(e, events.OnuDiscovery)]
    assert {e.serial for e in disc} == {o.serial for o in sim.olt.onus}
    pb = translate.serial_to_pb("BBSM000a010b")
    assert (bytes(pb.vendor_id), bytes(pb.vendor_specific)) == (b"BBSM", bytes([0, 10, 1, 11]))
    assert translate.serial_from_pb(pb) == "BBSM000a010b"
    grpc_call(sim.openolt, "ActivateOnu", openolt_pb2.Onu(intf_id=1, onu_id=11, serial_number=pb))
    assert sim.olt.onu_by_serial("BBSM000a010b").state == "enabled"


def test_v1_rest_and_grpc_answer_lower_case_for_either_case(sim):
    """GET /v1/olt/onus lists lower-case serials; an ONU named in upper case is found and answered with its serial
    as the OLT writes it (bbsimctl and the system tests write the serials in lower case, users may not)."""
    listed = sim.rest.call("GET", "/v1/olt/onus").json["items"]
    assert [o["SerialNumber"] for o in listed] == [o.serial for o in sim.olt.onus]
    for typed in ("BBSM000A010B", "BBSM000a010b"):
        reply = sim.rest.call("GET", f"/v1/olt/onus/{typed}")
        assert reply.code == 200, reply.body
        assert reply.json["SerialNumber"] == "BBSM000a010b"
        assert {u["OnuSn"] for u in reply.json["unis"]} == {"BBSM000a010b"}
    onu = grpc_call(sim.bbsim, "GetONU", bbsim_pb2.ONURequest(SerialNumber="BBSM000A010B"))
    assert onu.SerialNumber == "BBSM000a010b"
    mds = grpc_call(sim.bbsim, "InvalidateMds", bbsim_pb2.ONURequest(SerialNumber="BBSM000A010B"))
    assert mds.message.startswith("MDS counter of ONU BBSM000a010b was ")
    services = grpc_call(sim.bbsim, "GetServices", bbsim_pb2.UNIRequest(OnuSerialNumber="bbsm000a010b")).items
    assert services and {s.OnuSn for s in services} == {"BBSM000a010b"}


def test_v1_power_and_alarms_by_either_case(sim):
    """Shut down, power on and raise an alarm on BBSM000a010b typed in upper case: the ONU named is the one that
    changes, and the messages name it in lower case."""
    sim.bring_up()
    down = sim.rest.call("DELETE", "/v1/olt/onus/BBSM000A010B")
    assert down.code == 200, down.body
    assert down.json["message"] == "ONU BBSM000a010b successfully shut down."
    assert sim.olt.onu_by_serial("BBSM000a010b").state == "disabled"
    assert [o.serial for o in sim.olt.onus if o.state == "disabled"] == ["BBSM000a010b"]
    up = sim.rest.call("POST", "/v1/olt/onus/bbsm000a010b")
    assert up.json["message"] == "ONU BBSM000a010b successfully powered on."
    sim.events.clear()
    alarm = sim.rest.call("POST", "/v1/olt/onus/BBSM000A010B/alarms/ONU_ALARM_LOS/on")
    assert alarm.code == 200, alarm.body
    raised = [e for e in sim.events if isinstance(e, events.Alarm)]
    assert [e.serial for e in raised] == ["BBSM000a010b"]


def test_sadis_entries_use_and_accept_lower_case():
    """ONOS asks SADIS for <serial>-<uni> exactly as VOLTHA wrote the serial (BBSM000a010b-1): it is answered, its
    entry's id is that string, /v2/static lists lower-case ids, and an upper-case question finds the same entry."""
    olt = build_olt(load_settings({"olt_id": OLT_ID, "pon": PONS, "onu": ONUS}, None), Clock(), random.Random(0))
    stub = StubTreq(SadisRest(olt, olt_ip="0.0.0.0", bp_format="mef", advertised_host="bbsim", port=50074).resource())

    def get(path):
        out = []
        stub.get("http://sadis.test" + path).addCallback(
            lambda r: r.content().addCallback(lambda body: out.append((r.code, json.loads(body)))))
        stub.flush()
        return out[0]

    for typed in ("BBSM000a010b-1", "BBSM000A010B-1"):
        code, entry = get(f"/v2/subscribers/{typed}")
        assert code == 200, entry
        assert entry["id"] == "BBSM000a010b-1"
    code, static = get("/v2/static")
    ids = [e["id"] for e in static["sadis"]["entries"][1:]]
    assert "BBSM000a010b-1" in ids and "BBSM000a0110-4" in ids
    assert all(i[4:] == i[4:].lower() for i in ids)


def test_v0_rest_by_either_case(sim):
    """The legacy API finds BBSM000a010b typed in upper case and names it in lower case."""
    stub = StubTreq(V0Rest(V0Commands(sim.olt, olt_ip="127.0.0.1")).resource())
    out = []
    stub.get("http://oltsim/v0/olt/onus/BBSM000A010B").addCallback(
        lambda r: r.content().addCallback(lambda body: out.append((r.code, json.loads(body)))))
    stub.flush()
    code, body = out[0]
    assert code == 200, body
    assert [o["onu_serial"] for o in body["onus"]] == ["BBSM000a010b"]


def test_events_carry_lower_case_and_filter_by_either_case(sim):
    """The event bus filters by a serial typed in either case; its records and BBSim's Kafka records carry the
    serial in lower case."""
    bus = EventBus(sim.olt, sim.clock)
    got = []
    bus.subscribe(lambda record: got.append(record) or True, onu_serial="BBSM000A010B")
    sim.connect()
    sim.discover_all()
    sim.activate("BBSM000a010b", 11)
    assert got and {r["onu_serial"] for r in got} == {"BBSM000a010b"}
    disc = next(e for e in sim.events if isinstance(e, events.OnuDiscovery) and e.serial == "BBSM000a010b")
    assert map_event(sim.olt, disc)[3] == "BBSM000a010b"
