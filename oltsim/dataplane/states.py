"""A bound UNI's service states follow what its real client's frames do, so that `oltsimctl wait`,
bbsimctl and /ui show progress as they do for the simulated supplicant and DHCP client.

Upstream (frames that left the ONU: forwarded or trapped): EAPOL-Start -> `eap_start_sent`, EAP-Response/Identity
-> `eap_response_identity_sent`, any other EAP-Response -> `eap_response_challenge_sent`; DHCP Discover ->
`dhcp_discovery_sent`, Request -> `dhcp_request_sent`. Downstream (frames delivered to the UNI): EAP-Success ->
`eap_response_success_received`, EAP-Failure -> `auth_failed`; DHCP ACK -> `dhcp_ack_received`, NAK ->
`dhcp_failed`. The state names and events are the model's tables (oltsim.model.onu); states a real client skips
(it answered an Identity request without sending Start) are walked through in order, each published as the
simulated path publishes it (`StateChanged` service EapolState / DhcpState). A frame the table does not allow
from the current state (a client restarting mid-way) fails the attempt under way first, then starts a new one.
"""
from __future__ import annotations

from oltsim.logs import logger
from oltsim.model.onu import DHCP_MACHINE, EAPOL_MACHINE
from oltsim.packets import frames as f
from oltsim.packets.common import advance, uplink_tag

log = logger("oltsim.dataplane")

EAPOL_PATH = ("start_auth", "eap_start_sent", "eap_response_identity_sent", "eap_response_challenge_sent",
              "eap_response_success_received")
DHCP_PATH = ("start_dhcp", "dhcp_discovery_sent", "dhcp_request_sent", "dhcp_ack_received")

_EAPOL = ("eapol_state", EAPOL_MACHINE, "EapolState", EAPOL_PATH, "auth_failed")
_DHCP = ("dhcp_state", DHCP_MACHINE, "DhcpState", DHCP_PATH, "dhcp_failed")


def follow_upstream(uni, frame: bytes, vid: int | None) -> None:
    """Move the UNI's service states for an EAPOL or DHCP frame its client sent; `vid` is the outer VLAN id the
    frame had when it left the ONU (None: untagged), which picks the service when the UNI has several. Never
    raises: the frame is carried whatever happens here."""
    try:
        _follow_upstream(uni, frame, vid)
    except Exception:
        log.failure("dataplane-state-failed serial={serial} uni={uni}", serial=uni.onu.serial, uni=uni.id)


def follow_downstream(uni, frame: bytes, vid: int | None) -> None:
    """Move the UNI's service states for an EAPOL or DHCP frame delivered to its client; `vid` is the outer VLAN id
    the frame had before the ONU (None: untagged). Never raises."""
    try:
        _follow_downstream(uni, frame, vid)
    except Exception:
        log.failure("dataplane-state-failed serial={serial} uni={uni}", serial=uni.onu.serial, uni=uni.id)


def _follow_upstream(uni, frame: bytes, vid: int | None) -> None:
    decoded = _decode(frame)
    if decoded is None:
        return
    if decoded.kind == "eapol":
        service = _service(uni, "needs_eapol", vid)
        if service is None:
            return
        if decoded.eapol.type == f.EAPOL_START:
            _walk(service, _EAPOL, "eap_start_sent")
        elif decoded.eap is not None and decoded.eap.code == f.EAP_RESPONSE:
            target = ("eap_response_identity_sent" if decoded.eap.type == f.EAP_TYPE_IDENTITY
                      else "eap_response_challenge_sent")
            _walk(service, _EAPOL, target)
    elif decoded.kind == "dhcp" and decoded.dhcp is not None:
        service = _service(uni, "needs_dhcp", vid)
        if service is None:
            return
        kind = decoded.dhcp.message_type
        if kind == 1:
            _walk(service, _DHCP, "dhcp_discovery_sent")
        elif kind == 3:
            _walk(service, _DHCP, "dhcp_request_sent")


def _follow_downstream(uni, frame: bytes, vid: int | None) -> None:
    decoded = _decode(frame)
    if decoded is None:
        return
    if decoded.kind == "eapol" and decoded.eap is not None:
        service = _service(uni, "needs_eapol", vid)
        if service is None:
            return
        if decoded.eap.code == f.EAP_SUCCESS:
            if _walk(service, _EAPOL, "eap_response_success_received"):
                log.info("dataplane-eap-success serial={serial} uni={uni} service={service}",
                         serial=uni.onu.serial, uni=uni.id, service=service.name)
        elif decoded.eap.code == f.EAP_FAILURE:
            _fail(service, _EAPOL)
    elif decoded.kind == "dhcp" and decoded.dhcp is not None:
        service = _service(uni, "needs_dhcp", vid)
        if service is None:
            return
        kind = decoded.dhcp.message_type
        if kind == 5:
            if _walk(service, _DHCP, "dhcp_ack_received"):
                log.info("dataplane-dhcp-ack serial={serial} uni={uni} service={service} address={address}",
                         serial=uni.onu.serial, uni=uni.id, service=service.name,
                         address=f.ip_str(decoded.dhcp.yiaddr))
        elif kind == 6:
            _fail(service, _DHCP)


def _decode(frame: bytes):
    try:
        return f.decode(frame)
    except f.PacketError:
        return None


def _service(uni, need: str, vid: int | None):
    """The running service of `uni` a frame is for: the only one that needs the protocol, else the one whose
    upstream tag is `vid`."""
    candidates = [s for s in uni.services if getattr(s.spec, need) and s.state == "initialized"]
    if len(candidates) == 1:
        return candidates[0]
    return next((s for s in candidates if vid is not None and uplink_tag(s)[0] == vid), None)


def _walk(service, table, target: str) -> bool:
    """Fire the events of the table's path up to `target` from where the service is; True when it moved there.
    A service already in `target` stays (a retransmitted frame); one that cannot get there from its state fails
    the attempt under way and starts over."""
    attribute, machine, label, path, fail = table
    end = path.index(target)
    state = getattr(service, attribute)
    if state == target:
        return False
    start = _first(machine, state, path, end)
    if start is None:
        if not machine.can(state, fail):
            return False
        advance(service, attribute, machine, fail, label)
        start = _first(machine, getattr(service, attribute), path, end)
        if start is None:
            return False
    for event in path[start:end + 1]:
        advance(service, attribute, machine, event, label)
    return True


def _first(machine, state: str, path, end: int):
    """The index of the first event of `path[:end + 1]` that `state` allows, None when there is none."""
    return next((i for i in range(end + 1) if machine.can(state, path[i])), None)


def _fail(service, table) -> None:
    attribute, machine, label, _, fail = table
    if machine.can(getattr(service, attribute), fail):
        advance(service, attribute, machine, fail, label)
