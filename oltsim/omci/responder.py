"""The ONU side of OMCI: answers the adapter's requests and reports UNI alarms (reference 4.3).

`OmciResponder.handle(onu, frame)` parses one frame from the adapter (OmciMsgOut), acts on the
model and emits the answer as `events.OmciIndication` through the ONU's OLT. A frame that cannot
be OMCI raises `codec.OmciError` before anything happens (the southbound answers gRPC
INVALID_ARGUMENT); any request the simulated ONU does not support gets an OMCI error result,
never silence. Where BBSim answers nothing or crashes, this answers an error:

- MIB-upload-next / get-all-alarms-next past the end: an empty record (class 0, instance 0);
- Get on a class it does not model: Unknown ME; on a UNI or singleton that does not exist:
  Unknown ME instance; mask bits the class does not define: Attribute failure (unsupported mask);
- Set on PPTP/ONU-G/T-CONT without the administrative state or alloc id: applied without it;
- Get-all-alarms-next reports the n-th alarmed ME (BBSim maps n to ME 257+n).

Responses use the request's message set (baseline or extended); autonomous messages (alarm
notifications, test results) are baseline. Per-ONU protocol state lives in `OnuOmci` objects kept
by the responder, keyed by serial; the ONU's own fields (`mib_data_sync`, image section counters
and image ids) are updated in place. Time only comes from the ONU's clock (`onu.call_later`).
"""
from __future__ import annotations

import binascii
from typing import Callable

from zope.interface import implementer

from oltsim.logs import logger

from oltsim.model import events
from oltsim.model.errors import NotFound
from oltsim.model.onu import ONU_MACHINE
from oltsim.omci import codec
from oltsim.omci.codec import (ANI_G, ATTRIBUTE_FAILURE, CIRCUIT_PACK, ME_CLASSES, NOT_SUPPORTED, ONU2_G,
                               ONU_DATA, ONU_G, PARAMETER_ERROR, PROCESSING_ERROR, PPTP_ETHERNET_UNI,
                               PPTP_POTS_UNI, SOFTWARE_IMAGE, SUCCESS, T_CONT, UNI_G, UNKNOWN_INSTANCE,
                               UNKNOWN_ME, Frame, OmciError)
from oltsim.omci.mib import TCONT_SLOT, TCONTS, Mib, build_mib
from oltsim.omci.pmhistory import OnuPm, PmMe
from oltsim.omci.wrappers import IOmciHandler, OmciHandler

__all__ = ["OmciResponder", "OnuOmci", "OmciError", "reboot_onu", "crc32_bzip2"]

log = logger("oltsim.omci")

MAX_MESSAGE_COUNTER = 10             # the response-rate counter cycles 1..10
TEST_RESULT_DELAY = 1.0              # seconds between a Test response and its Test result
MULTICAST_GEM = 4069                 # shared by every ONU, never registered
FREE_ALLOC_IDS = (0xFF, 0xFFFF)      # T-CONT AllocId values that release the alloc id
SECTION_SIZE = {False: 31, True: 1965}
ABORT_CRC = 0xFFFFFFFF
LOS_BIT = 1 << (28 * 8 - 1)          # alarm number 0 = the first bit of the 28-octet bitmap
GET_SPACE = {False: 25, True: codec.MAX_EXTENDED_LENGTH - 18 - 4}
ANI_G_ID = (TCONT_SLOT << 8) | 1
TCONT_IDS = frozenset((TCONT_SLOT << 8) | t for t in range(1, TCONTS + 1))
INITIAL_IMAGE_VERSIONS = ("BBSM_IMG_00001", "BBSM_IMG_00000")   # image 0 active + committed

_PM_CLASSES = (codec.ETHERNET_PM_HISTORY, codec.FEC_PM_HISTORY, codec.ETHERNET_FRAME_PM_HISTORY_DOWN,
               codec.ETHERNET_FRAME_PM_HISTORY_UP, codec.GEM_PORT_NETWORK_CTP_PM_HISTORY)
_EXTENDED_PM_CLASSES = (codec.ETHERNET_FRAME_EXTENDED_PM, codec.ETHERNET_FRAME_EXTENDED_PM_64BIT)
#: The classes a Get is answered for (reference 4.3); any other class is an Unknown ME.
GET_CLASSES = frozenset((ONU_DATA, SOFTWARE_IMAGE, PPTP_ETHERNET_UNI, PPTP_POTS_UNI, codec.IP_HOST_CONFIG_DATA,
                         codec.VOIP_CONFIG_DATA, ONU_G, ONU2_G, ANI_G, UNI_G) + _PM_CLASSES + _EXTENDED_PM_CLASSES)
#: The PM MEs counted on intervals (oltsim.omci.pmhistory) when the responder has a PM source; the Ethernet PM
#: history data 3 only then (BBSim answers it Unknown ME, as without a PM source).
COUNTED_PM_CLASSES = frozenset(_PM_CLASSES + _EXTENDED_PM_CLASSES + (codec.ETHERNET_PM_HISTORY_3,))
MBPCD = 47                           # MAC bridge port configuration data: an extended PM's parent
#: An extended PM's control block (G.988 9.3.32): control fields bit 1 continuous accumulation, bit 2 downstream;
#: accumulation disable bit 16 global clear.
EXT_CONTINUOUS, EXT_DOWNSTREAM, EXT_GLOBAL_CLEAR = 0x0001, 0x0002, 0x8000
#: Seconds after an interval's end that its timer ends it, and that every read takes the interval to have ended (a
#: read in between, before the timer, would otherwise end it first, with the frames counted since the boundary).
PM_TIMER_SLACK = 0.001
#: PM MEs one ONU keeps at most (the openonu adapter creates about 2 per UNI, 1 per UNI, 1 per GEM port and 1 FEC):
#: past it a Create answers Processing error, so that an adapter creating ever new ones cannot grow memory
MAX_PM_MES = 1024

# CRC-32/BZIP2 (the AAL5 CRC the OMCI End Software Download carries) is CRC-32 with the bit
# order of every octet and of the result reversed; zlib's CRC then does the work at C speed.
_REVERSE_OCTET = bytes(int(f"{i:08b}"[::-1], 2) for i in range(256))


def crc32_bzip2(data: bytes, crc: int = 0) -> int:
    """CRC-32/BZIP2 of `data`; pass a previous result as `crc` to continue it."""
    reflected = int(f"{crc:032b}"[::-1], 2)
    reflected = binascii.crc32(bytes(data).translate(_REVERSE_OCTET), reflected)
    return int(f"{reflected:032b}"[::-1], 2)


def reboot_onu(onu) -> None:
    """BBSim's ONU reboot: power off now (dying gasp, LOS, OnuInd down), power on again after the
    OLT's `timings.onu_reboot` seconds if nothing else brought the ONU back meanwhile."""
    if not ONU_MACHINE.can(onu.state, "disable"):
        log.info("onu-reboot-skipped serial={serial} state={state}", serial=onu.serial, state=onu.state)
        return
    onu.power_off()
    onu.call_later(onu.hub.timings.onu_reboot, _power_on_after_reboot, onu)


def _power_on_after_reboot(onu) -> None:
    if onu.state == "disabled" and onu.pon.state == "enabled" and onu.pon.olt.state == "enabled":
        onu.power_on()


class OnuOmci:
    """OMCI state of one ONU: message counter, ONU-G lock, alarms, MIB upload and image download."""

    __slots__ = ("counter", "admin_lock", "alarms", "alarm_seq", "alarm_snapshot", "mib", "upload_mds",
                 "downloading", "download_instance", "download_size", "download_bytes", "download_crc",
                 "download_version", "versions", "active", "committed", "pm")

    def __init__(self):
        self.counter = 0
        self.admin_lock = 0
        self.alarms: dict[tuple[int, int], int] = {}      # (class, ME id) -> alarm bitmap
        self.alarm_seq: dict[tuple[int, int], int] = {}   # (class, ME id) -> last sequence number
        self.alarm_snapshot: tuple = ()
        self.mib: Mib | None = None
        self.upload_mds = 0
        self.downloading = False
        self.download_instance = 1
        self.download_size = 0
        self.download_bytes = 0
        self.download_crc = 0
        self.download_version = b""
        self.versions = list(INITIAL_IMAGE_VERSIONS)
        self.active = 0
        self.committed = 0
        self.pm: OnuPm | None = None         # the created PM MEs, with a PM source

    def forget_alarms(self) -> None:
        """Drop the alarm table and the get-all-alarms snapshot (the ONU was disabled)."""
        self.alarms.clear()
        self.alarm_snapshot = ()


@implementer(IOmciHandler)
class OmciResponder(OmciHandler):
    """Answers OMCI for every ONU of an OLT; one instance per OLT (or per process).

    `power_cycle(onu)` is called on the ONU's clock after a Reboot response and after an
    Activate Software response; it defaults to `reboot_onu` of this module.

    `pm`, when given (with a data plane: oltsim.dataplane.pm.PmCounters), counts the PM MEs the adapter creates on
    the UNIs and GEM ports it carries, on G.988's 15-minute intervals (oltsim.omci.pmhistory; Get current data
    answers the interval in progress): `ethernet_frames(onu, me_id, upstream)` and `ethernet_uni(onu, me_id,
    upstream)` return an object with `packets`, `octets`, `drops`, `oversize`, `broadcast`, `multicast`, `sizes`;
    `gem_port(onu, me_id)` one with `tx_frames`, `tx_bytes`, `rx_frames`, `rx_bytes`; `carries(onu)` whether it
    carries the ONU at all (FEC). Each answers None for what it does not carry, and those MEs, and the ones never
    created, are answered as without it (BBSim's values).
    """

    def __init__(self, *, response_rate: int = 10, omcc_version: int = 0xA3, inject_unknown_me: bool = False,
                 inject_unknown_attributes: bool = False, power_cycle: Callable | None = None, pm=None):
        self.pm = pm
        self.response_rate = response_rate
        self.omcc_version = omcc_version
        self.inject_unknown_me = inject_unknown_me
        self.inject_unknown_attributes = inject_unknown_attributes
        self.power_cycle = power_cycle if power_cycle is not None else reboot_onu
        self._states: dict[str, OnuOmci] = {}
        self._handlers = {
            codec.MIB_RESET: self._mib_reset,
            codec.MIB_UPLOAD: self._mib_upload,
            codec.MIB_UPLOAD_NEXT: self._mib_upload_next,
            codec.GET: self._get,
            codec.SET: self._set,
            codec.CREATE: self._create,
            codec.DELETE: self._delete,
            codec.REBOOT: self._reboot,
            codec.SYNC_TIME: self._sync_time,
            codec.TEST: self._test,
            codec.GET_ALL_ALARMS: self._get_all_alarms,
            codec.GET_ALL_ALARMS_NEXT: self._get_all_alarms_next,
            codec.START_SW_DOWNLOAD: self._start_download,
            codec.DOWNLOAD_SECTION: self._download_section,
            codec.END_SW_DOWNLOAD: self._end_download,
            codec.ACTIVATE_SW: self._activate,
            codec.COMMIT_SW: self._commit,
        }
        if pm is not None:
            self._handlers[codec.GET_CURRENT_DATA] = self._get_current_data

    @classmethod
    def from_settings(cls, settings, power_cycle: Callable | None = None, pm=None) -> "OmciResponder":
        """A responder configured from `oltsim.config` settings (and the PM source `pm`, if any)."""
        return cls(response_rate=settings.omci_response_rate, omcc_version=settings.omcc_version,
                   inject_unknown_me=settings.inject_omci_unknown_me,
                   inject_unknown_attributes=settings.inject_omci_unknown_attributes, power_cycle=power_cycle,
                   pm=pm)

    # ---- per-ONU state ---------------------------------------------------------------------

    def state(self, onu) -> OnuOmci:
        """The OMCI state of `onu` (created on first use)."""
        st = self._states.get(onu.serial)
        if st is None:
            st = self._states[onu.serial] = OnuOmci()
        return st

    def mib(self, onu) -> Mib:
        """The MIB `onu` reports (shared with every ONU of the same shape)."""
        st = self.state(onu)
        if st.mib is None:
            eth = sum(1 for u in onu.unis if u.kind == "ETH")
            st.mib = build_mib(eth, len(onu.unis) - eth, onu.pon.technology, self.inject_unknown_me,
                               self.inject_unknown_attributes)
        return st.mib

    # ---- entry points ----------------------------------------------------------------------

    def handle(self, onu, frame: Frame) -> None:
        """Process one request the adapter sent to `onu` (parsed: `oltsim.omci.wrappers.receive`); responses go out
        as OmciIndication events.

        Frames for an ONU that is not activated are dropped, as a powered-off ONU answers nothing. The ONU's fault
        knobs are not applied here: `oltsim.omci.wrappers.OmciFaultWrapper` stands in front of the responder.
        """
        if not onu.is_active:
            log.debug("omci-dropped serial={serial} state={state}", serial=onu.serial, state=onu.state)
            return
        st = self.state(onu)
        st.counter = st.counter + 1 if st.counter < MAX_MESSAGE_COUNTER else 1
        if st.counter > self.response_rate:
            return
        after = None
        try:
            handler = None if frame.ak else self._handlers.get(frame.action)
            if handler is None:
                reply = self._unsupported(onu, frame)
            else:
                reply, after = handler(onu, st, frame)
        except Exception:
            log.failure("omci-handler-failed serial={serial} type=0x{type:02x}", serial=onu.serial,
                        type=frame.message_type)
            reply, after = codec.result_response(frame, PROCESSING_ERROR), None
        if reply is not None:
            onu.hub.emit(events.OmciIndication(onu.pon.id, onu.onu_id, reply))
        if after is not None:
            try:
                after()
            except Exception:
                log.failure("omci-effect-failed serial={serial}", serial=onu.serial)

    def alarm_notification(self, onu, me_class: int, me_id: int, raised: bool) -> bytes:
        """Record a raised/cleared LOS alarm (bit 0) on an ME and return the baseline
        AlarmNotification frame reporting it (tid 0, per-ME sequence number 1..255)."""
        st = self.state(onu)
        key = (me_class & 0xFFFF, me_id & 0xFFFF)
        bitmap = st.alarms.get(key, 0)
        bitmap = bitmap | LOS_BIT if raised else bitmap & ~LOS_BIT
        if bitmap:
            st.alarms[key] = bitmap
        else:
            st.alarms.pop(key, None)
        seq = st.alarm_seq.get(key, 0) % 255 + 1
        st.alarm_seq[key] = seq
        return codec.encode(0, codec.ALARM_NOTIFICATION, key[0], key[1],
                            bitmap.to_bytes(28, "big") + b"\x00\x00\x00" + bytes([seq]))

    def attach(self, olt) -> Callable[[], None]:
        """Listen to `olt`'s events: every `OmciAlarm` becomes an AlarmNotification emitted as an
        `OmciIndication`, and an ONU that is disabled forgets its alarms. Use this OR call
        `alarm_notification` yourself for each OmciAlarm, not both. Returns the unsubscriber."""
        def listener(event):
            kind = type(event)
            if kind is events.OmciAlarm:
                try:
                    onu = olt.onu_by_serial(event.serial)
                except NotFound:
                    return
                pkt = self.alarm_notification(onu, event.me_class, event.me_id, event.raised)
                olt.emit(events.OmciIndication(event.intf_id, event.onu_id, pkt))
            elif (kind is events.StateChanged and event.device == "onu" and event.attribute == "InternalState"
                  and event.dest == "disabled"):
                st = self._states.get(event.serial)
                if st is not None:
                    st.forget_alarms()
                    st.downloading = False
                    self._forget_pm(st)
        return olt.subscribe(listener)

    # ---- helpers ---------------------------------------------------------------------------

    def _unsupported(self, onu, frame: Frame) -> bytes:
        log.info("omci-not-supported serial={serial} type=0x{type:02x} class={me_class}", serial=onu.serial,
                 type=frame.message_type, me_class=frame.me_class)
        return codec.result_response(frame, NOT_SUPPORTED)

    @staticmethod
    def _class_result(frame: Frame) -> int:
        """The error for an action on a class that does not support it."""
        return NOT_SUPPORTED if frame.me_class in codec.G988_CLASSES else UNKNOWN_ME

    @staticmethod
    def _bump_mds(onu) -> None:
        # MIB data sync cycles 1..255; 0 only means "just reset".
        onu.mib_data_sync = onu.mib_data_sync % 255 + 1
        onu.hub.touch()

    @staticmethod
    def _fire(onu, event: str) -> None:
        if ONU_MACHINE.can(onu.state, event):
            onu._fire(event)

    def _schedule_power_cycle(self, onu) -> None:
        onu.call_later(0, self.power_cycle, onu)

    # ---- MIB -------------------------------------------------------------------------------

    def _mib_reset(self, onu, st, frame):
        st.admin_lock = 0
        self._forget_pm(st, onu)
        onu.mib_data_sync = 0
        pon, serial = onu.pon, onu.serial
        for gem in [g for g, sn in pon.gem_ports.items() if sn == serial]:
            del pon.gem_ports[gem]
        for key in [k for k, (_, sn) in pon.alloc_ids.items() if sn == serial]:
            del pon.alloc_ids[key]
        onu.hub.touch()
        return codec.result_response(frame, SUCCESS), None

    def _mib_upload(self, onu, st, frame):
        mib = self.mib(onu)
        st.upload_mds = onu.mib_data_sync
        count = mib.extended_count if frame.extended else mib.count
        onu.hub.emit(events.MibUpload(onu.pon.id, onu.onu_id, onu.serial, False))
        return codec.response(frame, count.to_bytes(2, "big"), ONU_DATA, 0), None

    def _mib_upload_next(self, onu, st, frame):
        mib = st.mib or self.mib(onu)
        seq = int.from_bytes(frame.contents[:2], "big")     # present: checked by the codec
        if frame.extended:
            if seq < mib.extended_count:
                _last_upload_next(onu, seq, mib.extended_count)
                return mib.extended_frame(seq, frame.tid, st.upload_mds), None
            empty = bytes(8)                    # attribute length 0, class 0, instance 0, mask 0
        else:
            if seq < mib.count:
                _last_upload_next(onu, seq, mib.count)
                return mib.baseline_frame(seq, frame.tid, st.upload_mds), None
            empty = bytes(6)
        log.info("omci-mib-upload-next-out-of-range serial={serial} seq={seq}", serial=onu.serial, seq=seq)
        return codec.response(frame, empty, ONU_DATA, 0), None

    # ---- Get -------------------------------------------------------------------------------

    def _get(self, onu, st, frame):
        values = None
        known = frame.me_class in GET_CLASSES or (st.pm is not None and (frame.me_class, frame.me_id) in st.pm.mes)
        if known:
            values = self._get_values(onu, st, frame.me_class, frame.me_id)
        if values is None:
            result = UNKNOWN_INSTANCE if known else UNKNOWN_ME
            # Extended error responses still carry the (empty) attribute and failure masks.
            return codec.response(frame, bytes([result]) + bytes(6 if frame.extended else 0)), None
        return self._attributes_response(frame, values), None

    @staticmethod
    def _attributes_response(frame: Frame, values: dict) -> bytes:
        """The response to a Get (or Get current data) of the attributes `values` (index -> value)."""
        me_class = ME_CLASSES[frame.me_class]
        mask = frame.u16(0)
        data, encoded, failed, unsupported = codec.encode_attributes(
            me_class, values, mask, GET_SPACE[frame.extended])
        result = ATTRIBUTE_FAILURE if failed or unsupported else SUCCESS
        masks = unsupported.to_bytes(2, "big") + failed.to_bytes(2, "big")
        head = bytes([result]) + encoded.to_bytes(2, "big")
        if frame.extended:
            contents = head + masks + data
        else:
            contents = head + data
            contents += bytes(28 - len(contents)) + masks
        return codec.response(frame, contents)

    def _get_values(self, onu, st, me_class: int, me_id: int) -> dict | None:
        """Attribute values (index -> value) of an ME, or None if the ONU has no such ME."""
        rand = onu.hub.random.randrange
        lock = st.admin_lock
        if me_class == ONU_DATA:
            return {1: onu.mib_data_sync} if me_id == 0 else None
        if me_class == ONU_G:
            return {1: "BBSM", 2: "v0.0.1", 3: _serial_octets(onu.serial), 7: lock, 9: 10, 10: "BBSM",
                    11: "BBSM"} if me_id == 0 else None
        if me_class == ONU2_G:
            return {1: "12345123451234512345", 2: self.omcc_version, 4: 1, 5: 1, 6: 1, 7: 1, 8: 1, 9: 32,
                    10: 319389947, 11: 127, 12: 5, 13: 48, 14: 1} if me_id == 0 else None
        if me_class == SOFTWARE_IMAGE:
            if me_id not in (0, 1):
                return None
            version = st.versions[me_id]
            return {1: version, 2: int(st.committed == me_id), 3: int(st.active == me_id), 4: 1,
                    5: "BBSIM-ONU", 6: version}
        if me_class == codec.IP_HOST_CONFIG_DATA:
            return {2: b"aabbcc"}
        if me_class == codec.VOIP_CONFIG_DATA:
            return {1: 1, 2: 1, 3: 1, 4: 1, 5: 0xFFFF}
        if me_class in (PPTP_ETHERNET_UNI, PPTP_POTS_UNI, UNI_G):
            if _find_uni(onu, me_class, me_id) is None:
                return None
            if me_class == PPTP_ETHERNET_UNI:
                return {2: 0x2F, 5: lock, 6: lock, 7: 3, 8: 1518, 11: 2}
            if me_class == PPTP_POTS_UNI:
                return {1: lock, 9: lock}
            return {2: lock, 4: 1, 5: 1}
        if me_class == ANI_G:
            if me_id != ANI_G_ID:
                return None
            return {1: 1, 2: 8, 3: 48, 6: 5, 7: 9, 10: rand(16000), 11: 255, 12: 255, 14: rand(16000),
                    15: 129, 16: 129}
        if me_class in COUNTED_PM_CLASSES and self.pm is not None:
            counted = self._pm_values(onu, st, me_class, me_id, current=False)
            if counted is not None:
                return counted
        if me_class in _PM_CLASSES:
            return {i: rand(100) for i in range(3, len(ME_CLASSES[me_class].sizes) + 1)}
        if me_class in _EXTENDED_PM_CLASSES:
            return {i: 97 + i for i in range(3, 17)}           # 100..113, as BBSim
        return None

    # ---- Set -------------------------------------------------------------------------------

    def _set(self, onu, st, frame):
        def reply(result, unsupported=0, failed=0):
            contents = bytes([result])
            if not frame.extended or result == ATTRIBUTE_FAILURE:
                contents += unsupported.to_bytes(2, "big") + failed.to_bytes(2, "big")
            return codec.response(frame, contents)

        cls, me_id = frame.me_class, frame.me_id
        after = None
        if cls in (PPTP_ETHERNET_UNI, PPTP_POTS_UNI, ONU_G, T_CONT):
            me_class = ME_CLASSES[cls]
            mask = frame.u16(0)
            unsupported = mask & ~me_class.defined_mask & 0xFFFF
            if unsupported:
                return reply(ATTRIBUTE_FAILURE, unsupported=unsupported), None
            values = codec.decode_attributes(me_class, mask, frame.contents[2:])
            if values is None:
                return reply(PARAMETER_ERROR), None
            if cls in (PPTP_ETHERNET_UNI, PPTP_POTS_UNI):
                uni = _find_uni(onu, cls, me_id)
                if uni is None:
                    return reply(UNKNOWN_INSTANCE), None
                index = 5 if cls == PPTP_ETHERNET_UNI else 1
                if index in values:
                    admin = values[index][0]
                    if admin not in (0, 1):
                        return reply(ATTRIBUTE_FAILURE, failed=codec.attribute_bit(index)), None
                    # The UNI changes after the response, as BBSim queues its alarm behind it.
                    after = uni.enable if admin == 0 else uni.disable
            elif cls == ONU_G:
                if me_id != 0:
                    return reply(UNKNOWN_INSTANCE), None
                if 7 in values:
                    admin = values[7][0]
                    if admin not in (0, 1):
                        return reply(ATTRIBUTE_FAILURE, failed=codec.attribute_bit(7)), None
                    st.admin_lock = admin
            else:
                if me_id not in TCONT_IDS:
                    return reply(UNKNOWN_INSTANCE), None
                if 1 in values:
                    alloc = int.from_bytes(values[1], "big")
                    if not _set_alloc_id(onu, me_id, alloc):
                        return reply(ATTRIBUTE_FAILURE, failed=codec.attribute_bit(1)), None
        elif cls not in codec.G988_CLASSES:
            return reply(UNKNOWN_ME), None
        elif cls in COUNTED_PM_CLASSES and self.pm is not None:
            self._set_pm(onu, st, frame)
        self._bump_mds(onu)
        return reply(SUCCESS), after

    # ---- Create / Delete -------------------------------------------------------------------

    def _create(self, onu, st, frame):
        if frame.me_class not in codec.G988_CLASSES:
            return codec.result_response(frame, UNKNOWN_ME), None
        if frame.me_class == codec.GEM_PORT_NETWORK_CTP and frame.me_id != MULTICAST_GEM:
            gems = onu.pon.gem_ports
            owner = gems.get(frame.me_id)
            if owner is not None and owner != onu.serial:
                log.info("omci-gem-port-in-use serial={serial} gem={gem} owner={owner}", serial=onu.serial,
                         gem=frame.me_id, owner=owner)
                return codec.result_response(frame, PROCESSING_ERROR), None
            gems[frame.me_id] = onu.serial
        if frame.me_class in COUNTED_PM_CLASSES and self.pm is not None:
            refused = self._create_pm(onu, st, frame)
            if refused is not None:
                return codec.result_response(frame, refused), None
        self._bump_mds(onu)
        return codec.result_response(frame, SUCCESS), None

    def _delete(self, onu, st, frame):
        if frame.me_class not in codec.G988_CLASSES:
            return codec.result_response(frame, UNKNOWN_ME), None
        if frame.me_class == codec.GEM_PORT_NETWORK_CTP:
            gems = onu.pon.gem_ports
            if gems.get(frame.me_id) == onu.serial:
                del gems[frame.me_id]
        if frame.me_class in COUNTED_PM_CLASSES and st.pm is not None:
            st.pm.remove(frame.me_class, frame.me_id)
        self._bump_mds(onu)
        return codec.result_response(frame, SUCCESS), None

    # ---- Reboot, time, test ----------------------------------------------------------------

    def _reboot(self, onu, st, frame):
        if frame.me_class not in (ONU_G, CIRCUIT_PACK):
            return codec.result_response(frame, self._class_result(frame)), None
        self._schedule_power_cycle(onu)
        return codec.result_response(frame, SUCCESS), None

    def _sync_time(self, onu, st, frame):
        if frame.me_class != ONU_G:
            return codec.result_response(frame, self._class_result(frame)), None
        if self.pm is not None:
            self._pm_state(onu, st).synchronize(onu.hub.clock.seconds(), self._pm_reader(onu))
            self._arm_pm(onu, st.pm)
        return codec.response(frame, bytes([SUCCESS, 0])), None

    def _test(self, onu, st, frame):
        if frame.me_class != ANI_G:
            return codec.result_response(frame, self._class_result(frame)), None
        if frame.me_id != ANI_G_ID:
            return codec.result_response(frame, UNKNOWN_INSTANCE), None
        onu.call_later(TEST_RESULT_DELAY, self._send_test_result, onu, frame.tid, frame.me_id)
        return codec.result_response(frame, SUCCESS), None

    def _send_test_result(self, onu, tid: int, me_id: int) -> None:
        if not onu.is_active:
            return
        rand = onu.hub.random.randrange
        # Optical line supervision results: type octet then value (power feed voltage, received
        # optical power, mean launch power, laser bias current, temperature), then a buffer pointer.
        contents = b"".join(bytes([kind]) + value.to_bytes(2, "big") for kind, value in (
            (1, 163), (3, rand(65000)), (5, rand(3000)), (9, rand(10000)), (12, rand(20000)))) + bytes(2)
        pkt = codec.encode(tid, codec.TEST_RESULT, ANI_G, me_id, contents)
        onu.hub.emit(events.OmciIndication(onu.pon.id, onu.onu_id, pkt))

    # ---- performance monitoring (with a PM source) ------------------------------------------

    def _pm_reader(self, onu) -> Callable:
        pm = self.pm
        return lambda me: _pm_totals(pm, onu, me)

    def _pm_state(self, onu, st) -> OnuPm:
        if st.pm is None:
            st.pm = OnuPm(onu.hub.clock.seconds())
        return st.pm

    def _forget_pm(self, st, onu=None) -> None:
        """Drop the ONU's PM MEs and cancel their interval timer (through `onu`, when given, which then forgets it;
        an ONU that went down has cancelled its timers itself)."""
        pms, st.pm = st.pm, None
        if pms is None or pms.timer is None:
            return
        if onu is not None:
            onu.cancel_call(pms.timer)
        elif pms.timer.active():
            pms.timer.cancel()

    def _arm_pm(self, onu, pms: OnuPm) -> None:
        """The timer that ends `onu`'s current interval, unless one is pending (an ONU's power-off cancels it: the
        next PM request arms it again)."""
        if not pms.mes or (pms.timer is not None and pms.timer.active()):
            return
        if pms.timer is not None:
            onu.cancel_call(pms.timer)
        delay = pms.next_boundary(onu.hub.clock.seconds()) + PM_TIMER_SLACK
        pms.timer = onu.call_later(delay, self._pm_interval_ended, onu, pms)

    def _pm_interval_ended(self, onu, pms: OnuPm) -> None:
        if self._states.get(onu.serial) is None or self._states[onu.serial].pm is not pms:
            return                                   # forgotten meanwhile (MIB reset, ONU down)
        pms.timer = None
        if pms.roll(onu.hub.clock.seconds() - PM_TIMER_SLACK, self._pm_reader(onu)):
            log.debug("omci-pm-interval-ended serial={serial} end_time={end_time} mes={mes}", serial=onu.serial,
                      end_time=pms.end_time, mes=len(pms.mes))
        self._arm_pm(onu, pms)

    def _create_pm(self, onu, st, frame) -> int | None:
        """Record a PM ME the adapter creates: None, or the result that refuses it (Instance exists, or Processing
        error past MAX_PM_MES)."""
        pms = self._pm_state(onu, st)
        if (frame.me_class, frame.me_id) in pms.mes:
            return codec.INSTANCE_EXISTS
        if len(pms.mes) >= MAX_PM_MES:
            log.info("omci-pm-refused serial={serial} me_class={me_class} me_id={me_id} why=the ONU keeps {limit} PM "
                     "MEs at most", serial=onu.serial, me_class=frame.me_class, me_id=frame.me_id, limit=MAX_PM_MES)
            return PROCESSING_ERROR
        sizes = ME_CLASSES[frame.me_class].sizes
        attribute2 = codec.octets(bytes(frame.contents[:sizes[1]]), sizes[1])
        me = PmMe(frame.me_class, frame.me_id, sizes, attribute2, _continuous(frame.me_class, attribute2))
        pms.roll(onu.hub.clock.seconds() - PM_TIMER_SLACK, self._pm_reader(onu))
        pms.add(me, _pm_totals(self.pm, onu, me))
        self._arm_pm(onu, pms)
        log.debug("omci-pm-created serial={serial} me_class={me_class} me_id={me_id}", serial=onu.serial,
                  me_class=frame.me_class, me_id=frame.me_id)
        return None

    def _set_pm(self, onu, st, frame) -> None:
        """A Set of a created PM ME's attribute 2 (threshold data id, control block): kept; an extended PM's global
        clear restarts its counters."""
        me = st.pm.mes.get((frame.me_class, frame.me_id)) if st.pm is not None else None
        if me is None or not frame.u16(0) & codec.attribute_bit(2):
            return
        values = codec.decode_attributes(ME_CLASSES[frame.me_class], frame.u16(0), frame.contents[2:])
        if not values or 2 not in values:
            return
        me.attribute2 = values[2]
        if frame.me_class in _EXTENDED_PM_CLASSES:
            me.continuous = _continuous(frame.me_class, me.attribute2)
            if int.from_bytes(me.attribute2[6:8], "big") & EXT_GLOBAL_CLEAR:
                st.pm.reset(me, _pm_totals(self.pm, onu, me))

    def _pm_values(self, onu, st, me_class: int, me_id: int, current: bool) -> dict | None:
        """A created PM ME's attributes: interval end time, attribute 2, then the last completed interval's counts
        (`current`: the interval in progress); None when it was not created or the source does not carry it."""
        pms = st.pm
        me = pms.mes.get((me_class, me_id)) if pms is not None else None
        if me is None:
            return None
        read = self._pm_reader(onu)
        pms.roll(onu.hub.clock.seconds() - PM_TIMER_SLACK, read)      # (the timer's time: see PM_TIMER_SLACK)
        self._arm_pm(onu, pms)
        totals = read(me)
        if totals is None:
            return None
        counts = pms.current(me, totals) if current or me.continuous else pms.history(me)
        return {1: pms.end_time, 2: me.attribute2, **counts}

    def _get_current_data(self, onu, st, frame):
        """Get current data (G.988 A.2.34): a created PM ME's interval in progress, answered as a Get is."""
        if frame.me_class not in COUNTED_PM_CLASSES:
            return codec.result_response(frame, self._class_result(frame)), None
        values = self._pm_values(onu, st, frame.me_class, frame.me_id, current=True)
        if values is None:
            return codec.response(frame, bytes([UNKNOWN_INSTANCE]) + bytes(6 if frame.extended else 0)), None
        return self._attributes_response(frame, values), None

    # ---- alarms ----------------------------------------------------------------------------

    def _get_all_alarms(self, onu, st, frame):
        # The snapshot is what the following get-all-alarms-next requests walk through;
        # sequence numbers restart (the next notification of each ME is number 1).
        st.alarm_snapshot = tuple(sorted(st.alarms.items()))
        st.alarm_seq.clear()
        return codec.response(frame, len(st.alarm_snapshot).to_bytes(2, "big"), ONU_DATA, 0), None

    def _get_all_alarms_next(self, onu, st, frame):
        seq = frame.u16(0)
        if seq < len(st.alarm_snapshot):
            (me_class, me_id), bitmap = st.alarm_snapshot[seq]
            contents = me_class.to_bytes(2, "big") + me_id.to_bytes(2, "big") + bitmap.to_bytes(28, "big")
        else:
            contents = bytes(32)               # class 0, instance 0: nothing at this position
        return codec.response(frame, contents, ONU_DATA, 0), None

    # ---- software download -----------------------------------------------------------------

    def _image_check(self, frame) -> int:
        if frame.me_class != SOFTWARE_IMAGE:
            return self._class_result(frame)
        if frame.me_id not in (0, 1):
            return UNKNOWN_INSTANCE
        return SUCCESS

    def _start_download(self, onu, st, frame):
        window = frame.u8(0)
        check = self._image_check(frame)
        if check != SUCCESS:
            return codec.response(frame, bytes([check, window, 0])), None
        size = frame.u32(1)
        section = SECTION_SIZE[frame.extended]
        onu.image_expected_sections = -(-size // section)
        onu.image_received_sections = 0
        st.downloading = True
        st.download_instance = frame.me_id
        st.download_size = size
        st.download_bytes = 0
        st.download_crc = 0
        st.download_version = b""
        self._bump_mds(onu)
        self._fire(onu, "start_image_download")
        return codec.response(frame, bytes([SUCCESS, window, 0])), None

    def _download_section(self, onu, st, frame):
        section = frame.u8(0)
        check = self._image_check(frame)
        if check == SUCCESS and not st.downloading:
            check = PROCESSING_ERROR
        if check != SUCCESS:
            return (codec.response(frame, bytes([check, section])) if frame.ar else None), None
        data = frame.contents[1:]
        if onu.image_received_sections == 0:
            st.download_version = bytes(data[:14])
        # Only the image's own octets count (the last section is padded).
        take = max(0, min(len(data), st.download_size - st.download_bytes))
        if take:
            st.download_crc = crc32_bzip2(data[:take], st.download_crc)
            st.download_bytes += take
        onu.image_received_sections += 1
        onu.hub.touch()
        if onu.state != "image_download_in_progress":
            self._fire(onu, "progress_image_download")
        return (codec.response(frame, bytes([SUCCESS, section])) if frame.ar else None), None

    def _end_download(self, onu, st, frame):
        check = self._image_check(frame)
        if check != SUCCESS:
            return codec.response(frame, bytes([check, 0])), None
        crc, size = frame.u32(0), frame.u32(4)
        if st.downloading and onu.image_received_sections > 0 and size == 0 and crc == ABORT_CRC:
            # The adapter aborts a download in progress.
            st.downloading = False
            onu.image_received_sections = 0
            self._bump_mds(onu)
            self._fire(onu, "fail_image_download")
            return codec.response(frame, bytes([SUCCESS, 0])), None
        if not st.downloading:
            return codec.response(frame, bytes([PROCESSING_ERROR, 0])), None
        st.downloading = False
        ok = (onu.image_expected_sections == onu.image_received_sections and size == st.download_size
              and st.download_bytes == size and crc == st.download_crc)
        if not ok:
            log.info("omci-image-download-failed serial={serial} expected={expected} received={received} "
                     "crc=0x{crc:08x} computed=0x{computed:08x}", serial=onu.serial,
                     expected=onu.image_expected_sections, received=onu.image_received_sections, crc=crc,
                     computed=st.download_crc)
            self._fire(onu, "fail_image_download")
            onu.hub.touch()
            return codec.response(frame, bytes([PROCESSING_ERROR, 0])), None
        st.versions[st.download_instance] = st.download_version.decode("latin-1")
        self._bump_mds(onu)
        self._fire(onu, "complete_image_download")
        return codec.response(frame, bytes([SUCCESS, 0])), None

    def _activate(self, onu, st, frame):
        check = self._image_check(frame)
        if check != SUCCESS:
            return codec.result_response(frame, check), None
        st.active = frame.me_id
        onu.active_image = frame.me_id
        self._bump_mds(onu)
        self._fire(onu, "activate_image")
        # The ONU reboots into the new image.
        self._schedule_power_cycle(onu)
        return codec.result_response(frame, SUCCESS), None

    def _commit(self, onu, st, frame):
        check = self._image_check(frame)
        if check != SUCCESS:
            return codec.result_response(frame, check), None
        st.active = st.committed = frame.me_id
        onu.active_image = onu.committed_image = frame.me_id
        self._bump_mds(onu)
        self._fire(onu, "commit_image")
        return codec.result_response(frame, SUCCESS), None


def _continuous(me_class: int, attribute2: bytes) -> bool:
    """Whether an extended PM's control block asks for continuous accumulation (history PM MEs: never)."""
    return me_class in _EXTENDED_PM_CLASSES and bool(int.from_bytes(attribute2[10:12], "big") & EXT_CONTINUOUS)


def _frame_totals(c) -> dict | None:
    """An Ethernet frame PM's counters (history data and extended PM number them alike) from the source's counts:
    drop events, octets, packets, broadcast, multicast, CRC errored 0, undersize 0 (a frame is padded on the wire),
    oversize, then the six size buckets."""
    if c is None:
        return None
    totals = {3: c.drops, 4: c.octets, 5: c.packets, 6: c.broadcast, 7: c.multicast, 10: c.oversize}
    totals.update(zip(range(11, 17), c.sizes))
    return totals


def _pm_totals(pm, onu, me: PmMe) -> dict | None:
    """The totals (attribute index -> count since the UNI was bound; each only grows) of the PM source `pm` for a
    created PM ME, or None when it does not carry the UNI or GEM port the ME counts. What the source does not count
    and the errors of a simulated wire (CRC, FCS, collisions, encryption key, FEC) are 0."""
    me_class, me_id = me.me_class, me.me_id
    if me_class in (codec.ETHERNET_FRAME_PM_HISTORY_UP, codec.ETHERNET_FRAME_PM_HISTORY_DOWN):
        return _frame_totals(pm.ethernet_frames(onu, me_id, me_class == codec.ETHERNET_FRAME_PM_HISTORY_UP))
    if me_class == codec.ETHERNET_PM_HISTORY:
        c = pm.ethernet_uni(onu, me_id)
        return None if c is None else {6: c.oversize}          # frames too long; the rest are wire errors
    if me_class == codec.ETHERNET_PM_HISTORY_3:
        # what the PPTP received: drop events, octets, packets, broadcast, multicast; undersize, fragments and
        # jabbers 0 (a wire's errors); then the six size buckets
        c = pm.ethernet_uni(onu, me_id)
        if c is None:
            return None
        totals = {3: c.drops, 4: c.octets, 5: c.packets, 6: c.broadcast, 7: c.multicast}
        totals.update(zip(range(11, 17), c.sizes))
        return totals
    if me_class == codec.GEM_PORT_NETWORK_CTP_PM_HISTORY:
        g = pm.gem_port(onu, me_id)
        # transmitted / received GEM frames, received / transmitted payload bytes; encryption key errors 0
        return None if g is None else {3: g.tx_frames, 4: g.rx_frames, 5: g.rx_bytes, 6: g.tx_bytes}
    if me_class == codec.FEC_PM_HISTORY:
        return {} if me_id == ANI_G_ID and pm.carries(onu) else None
    if me_class in _EXTENDED_PM_CLASSES:
        block = me.attribute2
        parent_class, parent = int.from_bytes(block[2:4], "big"), int.from_bytes(block[4:6], "big")
        upstream = not int.from_bytes(block[10:12], "big") & EXT_DOWNSTREAM
        if parent_class == PPTP_ETHERNET_UNI:
            return _frame_totals(pm.ethernet_uni(onu, parent, upstream))
        if parent_class == MBPCD:
            return _frame_totals(pm.ethernet_frames(onu, parent, upstream))
    return None


def _last_upload_next(onu, seq: int, count: int) -> None:
    """MibUpload(done) when `seq` is the last MIB Upload Next of an upload of `count` MEs."""
    if seq == count - 1:
        onu.hub.emit(events.MibUpload(onu.pon.id, onu.onu_id, onu.serial, True))


def _find_uni(onu, me_class: int, me_id: int):
    """The UNI (or POTS port) an ME id designates: PPTP Ethernet -> ETH, PPTP POTS -> POTS, UNI-G -> any."""
    kind = {PPTP_ETHERNET_UNI: "ETH", PPTP_POTS_UNI: "POTS"}.get(me_class)
    for uni in onu.unis:
        if uni.me_id == me_id and (kind is None or uni.kind == kind):
            return uni
    return None


def _set_alloc_id(onu, tcont: int, alloc: int) -> bool:
    """Store (or with 0xFF/0xFFFF free) a T-CONT's alloc id; False when another T-CONT on the PON,
    of this ONU or another, already holds it."""
    registry = onu.pon.alloc_ids
    key = (onu.onu_id, tcont)
    if alloc in FREE_ALLOC_IDS:
        registry.pop(key, None)
    else:
        for other, (held, _) in registry.items():
            if held == alloc and other != key:
                log.info("omci-alloc-id-in-use serial={serial} alloc={alloc}", serial=onu.serial, alloc=alloc)
                return False
        registry[key] = (alloc, onu.serial)
    onu.hub.touch()
    return True


def _serial_octets(serial: str) -> bytes:
    """The 8-octet ONU serial: 4 vendor characters then 4 octets from the 8 hex digits."""
    try:
        return serial[:4].encode("ascii")[:4] + bytes.fromhex(serial[4:12])
    except (ValueError, UnicodeEncodeError):
        return codec.octets(serial, 8)
