"""BBR's whole sequence (bbsim-reference.md 4.6) against the simulator in this process, over real sockets.

The adapter (`bbr_adapter.BbrAdapter`) runs on a thread; the service runs on the real reactor with every listener
on 127.0.0.1:0 and no discovery delay, the OpenOLT endpoint on each engine (`engines.grpc_engine`). After the run
the REST view must agree with what BBR checked, every ONU's flow must be listed once, no EAPOL or DHCP timer may be
left running, and nothing may stay scheduled once the service stopped.
"""
from __future__ import annotations

import pytest
import pytest_twisted
from twisted.internet.threads import deferToThread

from bbr_adapter import EXPECTED_DHCP, EXPECTED_EAPOL, BbrAdapter
from engines import grpc_engine  # noqa: F401 - the fixture
from test_adapter import start_oltsim, stop_oltsim


@pytest.mark.parametrize("pon, onu", [(2, 2), (2, 8)])
@pytest_twisted.inlineCallbacks
def test_bbr_sequence_completes(tmp_path, pon, onu, grpc_engine):
    """Every ONU goes through activation, OMCI, EAPOL and DHCP as BBR drives them; GetServices shows UNI 0 of
    each in eap_response_success_received and dhcp_ack_received, and so does GET /v1/olt/onus."""
    sim = start_oltsim(tmp_path, "--pon", str(pon), "--onu", str(onu), "--delay", "0", engine=grpc_engine)
    adapter = BbrAdapter(sim.openolt, sim.grpc_v1)
    total = pon * onu
    try:
        result = yield deferToThread(adapter.run, 60)
        assert result == f"{total} ONUs matching expected state"
        assert adapter.completed == total and not adapter.failures
        assert {o.reported_commands for o in adapter.by_serial.values()} == {adapter.mib_commands}

        # What REST shows: UNI 0 authenticated and addressed on every ONU; the other UNIs untouched.
        onus = yield sim.get("/v1/olt/onus")
        assert len(onus["items"]) == total
        for record in onus["items"]:
            assert record["InternalState"] == "enabled"
            first = record["unis"][0]["services"][0]
            assert (first["EapolState"], first["DhcpState"]) == (EXPECTED_EAPOL, EXPECTED_DHCP), record
            mine = adapter.by_serial[record["SerialNumber"]]
            assert (record["PonPortID"], record["ID"]) == (mine.pon, mine.onu_id)
            for uni in record["unis"][1:]:
                for service in uni["services"]:
                    assert (service["EapolState"], service["DhcpState"]) == ("created", "created")

        # Flow ids repeat on every PON (flow id = ONU id): each ONU's DHCP flow replaced its EAPOL flow and every
        # one is listed exactly once.
        flows = yield sim.get("/v1/olt/flows")
        keys = [(f["access_intf_id"], f["onu_id"], f["flow_id"]) for f in flows["flows"]]
        assert flows["flow_count"] == total and len(set(keys)) == total
        assert sorted(keys) == sorted((o.pon, o.onu_id, str(o.onu_id)) for o in adapter.by_serial.values())
        assert {f["classifier"]["eth_type"] for f in flows["flows"]} == {0x0800}
        for o in adapter.by_serial.values():
            mine = yield sim.get(f"/v1/olt/onus/{o.serial}/flows")
            assert mine["flow_count"] == 1 and mine["flows"][0]["classifier"]["o_vid"] == o.c_tag

        # Success and Ack cancelled every attempt timer: nothing waits for the 60 s timeouts.
        assert sim.olt.hub.frames.pending_timers() == 0
    finally:
        yield stop_oltsim(sim, adapter)
