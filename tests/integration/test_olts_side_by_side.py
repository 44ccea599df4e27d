"""Two oltsim daemons side by side on one host, as a lab runs one simulator per OLT: OLT ids 10
and 11, 2 PONs x 16 ONUs each, every listener of each on its own loopback port. Over their REST APIs (v1 and
SADIS) their OLT serials, device ids, ONU serials, service MACs and SADIS entries are BBSim's and disjoint."""
from __future__ import annotations

import http.client
import json
import subprocess
from pathlib import Path

import pytest

from scripted_adapter import free_ports
from test_daemon import LISTENERS, TWISTD, Daemon, environment

OLT_IDS, PONS, ONUS, UNIS = (10, 11), 2, 16, 4
GOLDEN_SADIS = Path(__file__).resolve().parent.parent / "golden" / "sadis"


class SideBySide(Daemon):
    """A :class:`Daemon` in a folder of its own (its working directory and log) on ports given to it: the ports of
    both daemons are handed out in one allocation, so the two cannot be given the same free port."""

    def __init__(self, folder: Path, ports: list[int], *arguments: str):
        folder.mkdir()
        self.ports = dict(zip(LISTENERS, ports))
        listen = [arg for name, port in self.ports.items()
                  for arg in (f"--{name}", f"tcp:{port}:interface=127.0.0.1")]
        self.log_path = folder / "oltsim.log"
        self._log = open(self.log_path, "w")
        self.process = subprocess.Popen([*TWISTD, "-n", "--pidfile=", "oltsim", *listen, *arguments],
                                        cwd=folder, env=environment(), stdout=self._log, stderr=subprocess.STDOUT)



@pytest.fixture
def two_olts(tmp_path):
    ports = free_ports(len(LISTENERS) * len(OLT_IDS))
    started = []
    try:
        for n, olt_id in enumerate(OLT_IDS):
            started.append(SideBySide(tmp_path / f"olt-{olt_id}", ports[n * len(LISTENERS):(n + 1) * len(LISTENERS)],
                                      "--olt-id", str(olt_id), "--pon", str(PONS), "--onu", str(ONUS),
                                      "--uni", str(UNIS)))
        for daemon in started:
            daemon.wait_serving()
        yield dict(zip(OLT_IDS, started))
    finally:
        for daemon in started:
            daemon.close()


def bbsim_serial(olt_id: int, pon: int, index: int) -> str:
    """BBSim's ONU serial: BBSM + lower-case hex of the bytes (0, olt_id, pon, index)."""
    return f"BBSM00{olt_id:02x}{pon:02x}{index:02x}"


def bbsim_mac(olt_id: int, pon: int, index: int, uni: int) -> str:
    """BBSim's MAC of the first (ATT: only) service of a UNI: 2e:olt:pon:onu:uni:00."""
    return f"2e:{olt_id:02x}:{pon:02x}:{index:02x}:{uni:02x}:00"


def read(daemon: SideBySide) -> dict:
    """What one daemon reports of its identifiers over v1 REST and SADIS."""
    status, olt = daemon.rest_get("/v1/olt")
    assert status == 200, olt
    status, onus = daemon.rest_get("/v1/olt/onus")
    assert status == 200, onus
    status, static = daemon.rest_get("/v2/static", surface="sadis")
    assert status == 200, static
    entries = static["sadis"]["entries"]
    return {
        "olt": olt,
        "onus": onus["items"],
        "serials": [(o["PonPortID"], o["ID"], o["SerialNumber"]) for o in onus["items"]],
        "macs": [s["HwAddress"] for o in onus["items"] for u in o["unis"] for s in u["services"]],
        "olt_entry": entries[0],
        "entry_ids": [e["id"] for e in entries],
    }


def test_two_olts_side_by_side_have_bbsims_disjoint_identifiers(two_olts):
    """OLT 10 and OLT 11 run at once on one host: each reports BBSim's OLT serial, device id (SADIS
    hardwareIdentifier), ONU serials, service MACs and SADIS entry ids, none of which the other has; each answers
    SADIS for its own OLT and subscribers and refuses the other's."""
    got = {olt_id: read(daemon) for olt_id, daemon in two_olts.items()}
    for olt_id, mine in got.items():
        serial = f"BBSIM_OLT_{olt_id}"
        assert (mine["olt"]["ID"], mine["olt"]["SerialNumber"]) == (olt_id, serial)
        assert mine["serials"] == [(pon, index, bbsim_serial(olt_id, pon, index))
                                   for pon in range(PONS) for index in range(1, ONUS + 1)]
        assert mine["macs"] == [bbsim_mac(olt_id, pon, index, uni)
                                for pon in range(PONS) for index in range(1, ONUS + 1) for uni in range(UNIS)]
        assert (mine["olt_entry"]["id"], mine["olt_entry"]["nasId"]) == (serial, serial)
        assert mine["olt_entry"]["hardwareIdentifier"] == f"0a:0a:0a:0a:0a:{olt_id:02x}"
        assert mine["entry_ids"] == [serial] + [f"{bbsim_serial(olt_id, pon, index)}-{uni + 1}" for pon in range(PONS)
                                                for index in range(1, ONUS + 1) for uni in range(UNIS)]
    ten, eleven = got[10], got[11]
    assert ten["olt_entry"]["hardwareIdentifier"] == "0a:0a:0a:0a:0a:0a"
    assert eleven["olt_entry"]["hardwareIdentifier"] == "0a:0a:0a:0a:0a:0b"
    assert ("BBSM000a010b", "2e:0a:01:0b:00:00") in zip([s for _, _, s in ten["serials"]], ten["macs"][::UNIS])
    assert ("BBSM000b010b", "2e:0b:01:0b:00:00") in zip([s for _, _, s in eleven["serials"]], eleven["macs"][::UNIS])
    assert not {s for _, _, s in ten["serials"]} & {s for _, _, s in eleven["serials"]}
    for key in ("macs", "entry_ids"):
        assert not set(ten[key]) & set(eleven[key]), key
    # each SADIS server knows its own OLT and subscribers, not the other's
    for olt_id, other_id in ((10, 11), (11, 10)):
        daemon = two_olts[olt_id]
        status, entry = daemon.rest_get(f"/v2/subscribers/BBSIM_OLT_{olt_id}", surface="sadis")
        assert status == 200 and entry["hardwareIdentifier"] == f"0a:0a:0a:0a:0a:{olt_id:02x}"
        status, entry = daemon.rest_get(f"/v2/subscribers/{bbsim_serial(olt_id, 1, 11)}-1", surface="sadis")
        assert status == 200 and entry["id"] == f"{bbsim_serial(olt_id, 1, 11)}-1"
        # not its OLT, and not <serial>-<uni>: refused as malformed (400; BBSim 422)
        assert daemon.rest_get(f"/v2/subscribers/BBSIM_OLT_{other_id}", surface="sadis")[0] == 400
        assert daemon.rest_get(f"/v2/subscribers/{bbsim_serial(other_id, 1, 11)}-1", surface="sadis")[0] == 404


def test_sadis_records_are_bbsims_bytes_over_the_daemons_listener(two_olts):
    """OLT 10's SADIS listener sends the subscriber records BBSim 1.16.8 sent at the same numbering byte for byte
    (tests/golden/sadis/bbsim-bytes.json: compact, ended by a newline), through the real daemon's socket. (The OLT
    entry's ipAddress is the host's, so the unit tests pin that record.)"""
    recorded = json.loads((GOLDEN_SADIS / "bbsim-bytes.json").read_text(encoding="utf-8"))
    records = recorded["scenarios"]["olt10-pon2-onu16-ietf"]["records"]
    paths = [path for path in records if path.startswith("/v2/subscribers/BBSM")]
    assert len(paths) == 4
    port = two_olts[10].ports["sadis"]
    for path in paths:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
        try:
            connection.request("GET", path)
            response = connection.getresponse()
            assert (response.status, response.read()) == (200, records[path].encode("utf-8")), path
        finally:
            connection.close()
