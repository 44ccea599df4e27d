"""The EAPOL supplicant of a subscriber service (BBSim's `responders/eapol`, reference 4.5).

Start -> Request/Identity -> Response/Identity ("user") -> Request/MD5-Challenge ->
Response (0x10 || MD5(id || "password" || challenge)) -> Success, driving
`service.eapol_state` through the model's EAPOL_MACHINE. Every attempt has a timeout on
the ONU clock; when it expires without Success the attempt fails and, with `auth_retry`,
a new one starts. Frames the supplicant does not expect are logged and ignored or fail
the attempt as BBSim does; none is ever fatal.
"""
from __future__ import annotations

import hashlib

from oltsim.model.onu import EAPOL_MACHINE
from oltsim.packets import frames as f
from oltsim.packets.common import ServiceTimers, advance, check_running, completed, describe, log, send_up

IDENTITY = b"user"
PASSWORD = b"password"
MD5_VALUE_SIZE = 16
SUCCESS = "eap_response_success_received"
#: Where the authenticator's frames come from: the OLT side, a locally administered unicast address of oltsim's
#: (the model has no NNI MAC, and the OLT's device id may be configured to anything). A supplicant answers to the
#: PAE group address, so it needs none; a real one on a UNI interface ignores frames from its own address, as
#: BBSim's src = dst frames were.
AUTHENTICATOR_MAC = bytes.fromhex("020000000001")


# ---- frames -------------------------------------------------------------------------------

def md5_response(eap_id: int, challenge: bytes, password: bytes = PASSWORD) -> bytes:
    """The 16-byte MD5-Challenge answer: MD5(id || password || challenge) (RFC 1994 style)."""
    return hashlib.md5(bytes((eap_id & 0xFF,)) + password + challenge).digest()


def eapol_start_frame(mac: bytes) -> bytes:
    """EAPOL-Start from `mac` to the PAE group address, padded to 60 bytes."""
    return f.build_ethernet(f.PAE_GROUP_MAC, mac, f.ETH_EAPOL, f.build_eapol(f.EAPOL_START))


def eap_frame(dst: bytes, src: bytes, eap: bytes) -> bytes:
    """An EAPOL EAP-Packet carrying `eap`."""
    return f.build_ethernet(dst, src, f.ETH_EAPOL, f.build_eapol(f.EAPOL_EAP, eap))


def identity_response_frame(mac: bytes, eap_id: int, identity: bytes = IDENTITY) -> bytes:
    """EAP-Response/Identity from the service MAC `mac` to the PAE group address, as an 802.1X supplicant sends
    it (BBSim sends it to its own address; the EAPOL and EAP bytes are BBSim's)."""
    return eap_frame(f.PAE_GROUP_MAC, mac, f.build_eap(f.EAP_RESPONSE, eap_id, f.EAP_TYPE_IDENTITY, identity))


def md5_response_frame(mac: bytes, eap_id: int, challenge: bytes) -> bytes:
    """EAP-Response/MD5-Challenge with value size 16 and no name, from `mac` to the PAE group address."""
    value = bytes((MD5_VALUE_SIZE,)) + md5_response(eap_id, challenge)
    return eap_frame(f.PAE_GROUP_MAC, mac, f.build_eap(f.EAP_RESPONSE, eap_id, f.EAP_TYPE_MD5, value))


# The authenticator's side (the built-in adapter's, and the tests' in place of an adapter): to a service MAC `dst`,
# from the OLT side's `src`.

def identity_request_frame(dst: bytes, eap_id: int = 1, src: bytes = AUTHENTICATOR_MAC) -> bytes:
    """EAP-Request/Identity to the service MAC `dst`."""
    return eap_frame(dst, src, f.build_eap(f.EAP_REQUEST, eap_id, f.EAP_TYPE_IDENTITY))


def md5_request_frame(dst: bytes, eap_id: int, challenge: bytes, src: bytes = AUTHENTICATOR_MAC) -> bytes:
    """EAP-Request/MD5-Challenge carrying `challenge`, to the service MAC `dst`."""
    value = bytes((len(challenge),)) + challenge
    return eap_frame(dst, src, f.build_eap(f.EAP_REQUEST, eap_id, f.EAP_TYPE_MD5, value))


def success_frame(dst: bytes, eap_id: int, src: bytes = AUTHENTICATOR_MAC) -> bytes:
    """EAP-Success to the service MAC `dst`."""
    return eap_frame(dst, src, f.build_eap(f.EAP_SUCCESS, eap_id))


def failure_frame(dst: bytes, eap_id: int, src: bytes = AUTHENTICATOR_MAC) -> bytes:
    """EAP-Failure to the service MAC `dst`."""
    return eap_frame(dst, src, f.build_eap(f.EAP_FAILURE, eap_id))


def parse_md5_challenge(data: bytes) -> bytes:
    """The challenge value of an MD5-Challenge type-data (value-size byte, value, name)."""
    if not data or data[0] == 0 or len(data) < 1 + data[0]:
        raise f.PacketError("malformed MD5-Challenge (value size does not match the data)")
    return data[1:1 + data[0]]


# ---- the supplicant -----------------------------------------------------------------------

class Supplicant:
    """EAPOL supplicants of every service, keyed by service; one instance serves the OLT."""

    def __init__(self, *, timeout: float = 60.0, retry: bool = False):
        self.timeout = timeout
        self.retry = retry
        self.timers = ServiceTimers()
        #: the engine's SummedLines for completions (None: one info line each)
        self.lines = None

    def _fire(self, service, event: str) -> str:
        return advance(service, "eapol_state", EAPOL_MACHINE, event, "EapolState")

    def start(self, service) -> bool:
        """Begin an attempt (FlowAdd trigger): EAPOL-Start out, timer armed. Returns False,
        logging why, when the state does not allow a new attempt (one is under way)."""
        if not EAPOL_MACHINE.can(service.eapol_state, "start_auth"):
            log.info("eapol-start-refused serial={serial} uni={uni} service={service} state={state}",
                     state=service.eapol_state, **describe(service))
            return False
        self._fire(service, "start_auth")
        self.timers.arm(service, self.timeout, self._timed_out)
        # State first, frame second: an adapter answering synchronously sees the new state.
        self._fire(service, "eap_start_sent")
        send_up(service, eapol_start_frame(f.mac_bytes(service.mac)))
        return True

    def restart(self, service) -> None:
        """RestartEapol: abandon any attempt under way (auth_failed) and start a new one."""
        check_running(service)
        self.timers.cancel(service)
        if EAPOL_MACHINE.can(service.eapol_state, "auth_failed"):
            self._fire(service, "auth_failed")
        self.start(service)

    def abandon(self, service) -> bool:
        """The attempt under way, if any, fails now without a new one (its timer cancelled): the adapter lost the
        frames it exchanged (its stream ended), and its next trigger (FlowAdd) would otherwise be refused until the
        timeout. True if one was under way."""
        if not self.timers.pending(service) or service.eapol_state == SUCCESS:
            return False
        self.timers.cancel(service)
        if EAPOL_MACHINE.can(service.eapol_state, "auth_failed"):
            self._fire(service, "auth_failed")
        log.info("eapol-attempt-abandoned serial={serial} uni={uni} service={service}", **describe(service))
        return True

    def _fail(self, service, why: str) -> None:
        log.warn("eapol-frame-rejected serial={serial} uni={uni} service={service} state={state} why={why}",
                 state=service.eapol_state, why=why, **describe(service))
        if EAPOL_MACHINE.can(service.eapol_state, "auth_failed"):
            self._fire(service, "auth_failed")
        if not self.retry:
            # Nothing would happen at the timeout; with retry it starts the next attempt.
            self.timers.cancel(service)

    def _timed_out(self, service) -> None:
        onu = service.uni.onu
        state = service.eapol_state
        # "created" means the service was reset (UNI down) since this attempt began.
        if service.state != "initialized" or not onu.is_active or state in ("created", SUCCESS):
            return
        log.warn("eapol-timeout serial={serial} uni={uni} service={service} state={state} retry={retry}",
                 state=state, retry=self.retry, **describe(service))
        if EAPOL_MACHINE.can(state, "auth_failed"):
            self._fire(service, "auth_failed")
        if self.retry:
            self.start(service)

    def receive(self, service, frame: f.Frame) -> None:
        """Handle an EAPOL frame the adapter sent to this service."""
        eapol, eap = frame.eapol, frame.eap
        if eap is None:
            log.info("eapol-frame-ignored serial={serial} uni={uni} service={service} type={type}",
                     type=eapol.type_name, **describe(service))
            return
        state = service.eapol_state
        mac = f.mac_bytes(service.mac)
        if eap.code == f.EAP_REQUEST and eap.type == f.EAP_TYPE_IDENTITY:
            if state != "eap_start_sent":
                self._fail(service, f"Identity Request received in state {state}")
                return
            self._fire(service, "eap_response_identity_sent")
            send_up(service, identity_response_frame(mac, eap.id))
        elif eap.code == f.EAP_REQUEST and eap.type == f.EAP_TYPE_MD5:
            if state != "eap_response_identity_sent":
                self._fail(service, f"MD5-Challenge received in state {state}")
                return
            try:
                challenge = parse_md5_challenge(eap.data)
            except f.PacketError as exc:
                self._fail(service, str(exc))
                return
            self._fire(service, "eap_response_challenge_sent")
            send_up(service, md5_response_frame(mac, eap.id, challenge))
        elif eap.code == f.EAP_SUCCESS:
            if state != "eap_response_challenge_sent":
                self._fail(service, f"EAP-Success received in state {state}")
                return
            self.timers.cancel(service)
            self._fire(service, "eap_response_success_received")
            completed(self.lines, "eapol-completed", "eapol-completed serial={serial} uni={uni} service={service}",
                      **describe(service))
        elif eap.code == f.EAP_FAILURE:
            self._fail(service, "EAP-Failure received")
        else:
            log.info("eap-frame-ignored serial={serial} uni={uni} service={service} code={code} eap_type={t}",
                     code=eap.code, t=eap.type, **describe(service))
