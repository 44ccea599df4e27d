"""A service's EAPOL and DHCP progress on the event stream: each `service-state-changed` record
names the service it concerns (a UNI may carry several, as TT's hsia, voip and vod), so that a reader such as /ui
can follow every subscriber without reading the ONUs again; the other state changes carry no `service`."""
from __future__ import annotations

import random

from twisted.internet.task import Clock

from oltsim.api.eventbus import to_record
from oltsim.api.v1.rest_v1 import EVENTS_PATH, openapi_document
from oltsim.config import load_settings
from oltsim.model import events
from oltsim.model.builder import build_olt
from oltsim.model.onu import DHCP_MACHINE, EAPOL_MACHINE
from oltsim.packets.common import advance


def tt_olt():
    """An OLT of 1 PON x 1 ONU with TT's services (several per UNI), its records collected."""
    clock = Clock()
    olt = build_olt(load_settings({"pon": 1, "onu": 1, "services": "tt"}, None), clock, random.Random(0))
    records = []
    olt.subscribe(lambda event: records.append(to_record(olt, event, len(records) + 1, clock.seconds())))
    return olt, records


def test_service_state_changes_name_their_service():
    """EAPOL and DHCP changes of two services of one UNI each name their service, UNI and ONU."""
    olt, records = tt_olt()
    onu = olt.onus[0]
    first, second = onu.unis[0].services[:2]
    assert first.name != second.name
    advance(first, "eapol_state", EAPOL_MACHINE, "start_auth", "EapolState")
    advance(second, "dhcp_state", DHCP_MACHINE, "start_dhcp", "DhcpState")
    changed = [r for r in records if r["type"] == "service-state-changed"]
    assert [(r["onu_serial"], r["uni_id"], r["details"]) for r in changed] == [
        (onu.serial, 0, {"device": "service", "attribute": "EapolState", "from": "created", "to": "auth_started",
                         "service": first.name}),
        (onu.serial, 0, {"device": "service", "attribute": "DhcpState", "from": "created", "to": "dhcp_started",
                         "service": second.name})]


def test_other_state_changes_carry_no_service():
    """An ONU's, PON's or UNI's state change has no `service` in its details."""
    olt, _ = tt_olt()
    for device in ("olt", "pon", "onu", "uni"):
        record = to_record(olt, events.StateChanged(device, "OperState", "down", "up", 0, 1, "BBSM00000001", 0),
                           1, 0.0)
        assert record["details"] == {"device": device, "attribute": "OperState", "from": "down", "to": "up"}


def test_the_event_stream_documents_the_service_detail():
    """The OpenAPI document of /v1/events says which details a service state change carries."""
    operation = openapi_document()["paths"][EVENTS_PATH]["get"]
    assert "`service`" in operation["description"] and "service-state-changed" in operation["description"]
