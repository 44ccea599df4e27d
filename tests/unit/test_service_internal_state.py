"""`service list`'s INTERNALSTATE is the service's own lifecycle, as BBSim 1.16.8's (its services.go: created,
initialized, disabled; the API reports `InternalState.Current()`): `initialized` once the ONU is up, whatever
EAPOL and DHCP reached, which their own columns show (what BBSim shows after dhcp_ack_received too)."""
from __future__ import annotations

import random

from twisted.internet.task import Clock

from oltsim.api import translate
from oltsim.config import load_settings
from oltsim.model.builder import build_olt
from oltsim.omci.responder import OmciResponder
from oltsim.packets.engine import ProtocolEngine
from oltsim.tap import FramePath
from oltsim.southbound.builtin import BuiltinAdapter
from oltsim.southbound.openolt import IndicationHub, OpenoltServicer


def test_a_service_at_dhcp_ack_is_initialized_as_in_bbsim():
    """After the built-in adapter brings the ONU up to DHCP ack: InternalState initialized, EapolState
    eap_response_success_received, DhcpState dhcp_ack_received (BBSim's three FSMs, same names)."""
    settings = load_settings({"pon": 1, "onu": 1, "uni": 1}, None)
    clock = Clock()
    path = FramePath(OmciResponder.from_settings(settings), ProtocolEngine.from_settings(settings))
    olt = build_olt(settings, clock, random.Random(0), omci=path.omci, frames=path.frames)
    path.attach(olt)
    hub = IndicationHub(olt)
    adapter = BuiltinAdapter(olt, hub, OpenoltServicer(olt, hub, None), clock, random.Random(1),
                             reachable=lambda: True)
    olt.start()
    adapter.startService()
    try:
        [service] = olt.onus[0].services
        assert service.state == "created"
        for _ in range(1200):
            if service.dhcp_state == "dhcp_ack_received":
                break
            clock.advance(0.1)
        message = translate.service_to_pb(service)
        assert (message.InternalState, message.EapolState, message.DhcpState) == (
            "initialized", "eap_response_success_received", "dhcp_ack_received")
    finally:
        adapter.stopService()
        hub.end_all()
        olt.stop()
