"""Several OLTs in one lab: VOLTHA's test data numbers its simulated OLTs from 10, one oltsim per
OLT. OLT ids 10 to 15 give every OLT its own serial, device id and DMI device, and every ONU and service its
own serial and MAC, each exactly as BBSim derives it; from 256 the id wraps in the derived identifiers as BBSim's."""
from __future__ import annotations

import random

import pytest
from twisted.internet.task import Clock

from oltsim.config import load_settings
from oltsim.dmi import tree
from oltsim.model.builder import build_olt

OLT_IDS, PONS, ONUS, UNIS = range(10, 16), 2, 16, 4


def olt_with(olt_id: int, pon: int = PONS, onu: int = ONUS):
    settings = load_settings({"olt_id": olt_id, "pon": pon, "onu": onu, "uni": UNIS}, None)
    return build_olt(settings, Clock(), random.Random(0)), settings


def bbsim_serial(olt_id: int, pon: int, index: int) -> str:
    """BBSim's NewSN + OnuSnToString: BBSM + lower-case hex of the bytes (0, olt_id % 256, pon, index)."""
    return "BBSM" + "".join(format(b, "02x") for b in (0, olt_id % 256, pon, index))


def bbsim_mac(olt_id: int, pon: int, index: int, uni: int, service: int) -> str:
    """BBSim's service MAC: bytes (0x2e, olt_id, pon, onu, uni, service), each taken as a byte."""
    return ":".join(format(b % 256, "02x") for b in (0x2e, olt_id, pon, index, uni, service))


@pytest.fixture(scope="module")
def olts():
    return {olt_id: olt_with(olt_id) for olt_id in OLT_IDS}


def test_identifiers_are_bbsims_for_olt_ids_10_to_15(olts):
    """Each OLT's serial, device id, ONU serials and service MACs are BBSim's: OLT 10's PON 1 ONU 11 is
    BBSM000a010b with HSIA MAC 2e:0a:01:0b:00:00 on device 0a:0a:0a:0a:0a:0a."""
    for olt_id, (olt, settings) in olts.items():
        assert olt.serial == f"BBSIM_OLT_{olt_id}"
        assert olt.device_info["device_id"] == settings.device_id_effective == f"0a:0a:0a:0a:0a:{olt_id:02x}"
        for pon in olt.pons:
            for index, onu in enumerate(pon.onus, start=1):
                assert onu.serial == bbsim_serial(olt_id, pon.id, index)
                assert [s.mac for s in onu.services] == [bbsim_mac(olt_id, pon.id, index, uni, 0)
                                                         for uni in range(UNIS)]
    onu = olts[10][0].pons[1].onus[10]
    assert (onu.serial, onu.services[0].mac) == ("BBSM000a010b", "2e:0a:01:0b:00:00")
    assert olts[11][0].pons[1].onus[10].serial == "BBSM000b010b"


def test_identifiers_are_unique_across_six_olts(olts):
    """Across OLTs 10-15 (2 PONs x 16 ONUs x 4 UNIs each) no two OLTs share a serial, device id or DMI device UUID,
    and no two ONUs a serial, SADIS subscriber id or service MAC."""
    olt_serials, device_ids, dmi_uuids, onu_serials, subscriber_ids, macs = [], [], [], [], [], []
    for olt, _ in olts.values():
        olt_serials.append(olt.serial)
        device_ids.append(olt.device_info["device_id"])
        dmi_uuids.append(tree.device_uuid(olt))
        for onu in olt.onus:
            onu_serials.append(onu.serial)
            subscriber_ids.extend(f"{onu.serial}-{uni.id + 1}" for uni in onu.eth_unis)
            macs.extend(service.mac for service in onu.services)
    count = len(OLT_IDS) * PONS * ONUS
    assert (len(onu_serials), len(subscriber_ids), len(macs)) == (count, count * UNIS, count * UNIS)
    for identifiers in (olt_serials, device_ids, dmi_uuids, onu_serials, subscriber_ids, macs):
        assert len(set(identifiers)) == len(identifiers)
    # a serial is looked up in either case, so the case-folded serials must be unique as well
    assert len({serial.lower() for serial in onu_serials}) == count


def test_olt_ids_from_256_wrap_as_in_bbsim():
    """From 256 the id is a byte in ONU serials, MACs and the derived device id (BBSim's NewSN, MAC and device id):
    OLT 266 shares them with OLT 10, while its own serial and DMI device keep the whole id. OLTs that
    meet in one VOLTHA need ids distinct modulo 256 (docs/operations.md)."""
    (low, _), (high, _) = olt_with(10, 1, 2), olt_with(266, 1, 2)
    assert [o.serial for o in high.onus] == [o.serial for o in low.onus] == ["BBSM000a0001", "BBSM000a0002"]
    assert [s.mac for o in high.onus for s in o.services] == [s.mac for o in low.onus for s in o.services]
    assert high.device_info["device_id"] == low.device_info["device_id"] == "0a:0a:0a:0a:0a:0a"
    assert (high.serial, low.serial) == ("BBSIM_OLT_266", "BBSIM_OLT_10")
    assert tree.device_uuid(high) != tree.device_uuid(low)
