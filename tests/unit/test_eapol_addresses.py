"""The Ethernet addresses of EAPOL frames as a capture shows them: a simulated RG's go from its service MAC to the PAE
group address, the built-in adapter's authenticator answers from the OLT side to the RG's MAC; neither is sent from
the address it goes to."""
from __future__ import annotations

import pytest
from test_capture_ring import Rig

from oltsim.capture import ring as capture_ring
from oltsim.packets import eapol, frames as f


@pytest.fixture
def lab():
    made = Rig(pon=1, onu=2, uni=2)
    yield made
    made.stop()


def test_a_captured_authentication_shows_rg_and_authenticator_addresses(lab):
    """Every EAPOL frame of a bring-up in the capture ring: upstream from a service MAC to 01:80:c2:00:00:03,
    downstream from the authenticator's 02:00:00:00:00:01 to that service MAC; each UNI's service went through a
    Start, two responses and an EAP-Success."""
    lab.run_until_up()
    service_macs = {f.mac_bytes(s.mac) for onu in lab.olt.onus for s in onu.services}
    up, down = [], []
    for record in lab.capture.records:
        if record[capture_ring.POINT] != capture_ring.UNI:
            continue
        frame = f.decode(record[capture_ring.DATA])
        if frame.kind == "eapol":
            (up if record[capture_ring.UP] else down).append(frame)
    assert len(up) == 3 * len(service_macs) and len(down) == 3 * len(service_macs)
    assert {fr.eth.dst for fr in up} == {f.PAE_GROUP_MAC}
    assert {fr.eth.src for fr in up} == service_macs
    assert {fr.eth.src for fr in down} == {eapol.AUTHENTICATOR_MAC} == {bytes.fromhex("020000000001")}
    assert {fr.eth.dst for fr in down} == service_macs
    assert sum(1 for fr in down if fr.eap.code == f.EAP_SUCCESS) == len(service_macs)
