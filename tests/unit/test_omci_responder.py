"""The ONU's OMCI responder driven through the real model: BBR's sequence, every request type,
every error path, the software download, alarms, the response rate and random input."""
import math
import random

import pytest
from twisted.internet.task import Clock
from twisted.logger import globalLogPublisher

from oltsim.config import load_settings
from oltsim.model import events
from oltsim.model.builder import build_olt
from oltsim.omci import codec
from oltsim.omci.codec import OmciError
from oltsim.omci.responder import OmciResponder, crc32_bzip2
from oltsim.omci.wrappers import receive

SERIAL = "BBSM00000001"
OTHER = "BBSM00000002"


class Env:
    """An OLT with one PON and two ONUs, the first activated as ONU id 1, and a responder attached."""

    def __init__(self, given=None, **responder_options):
        self.clock = Clock()
        options = {"pon": 1, "onu": 2}
        options.update(given or {})
        self.olt = build_olt(load_settings(options, None), self.clock, random.Random(0))
        self.events = []
        self.olt.subscribe(self.events.append)
        self.responder = OmciResponder(**responder_options)
        self.responder.attach(self.olt)
        self.olt.start()
        self.olt.enable_indication()
        self.clock.advance(1)
        self.onu = self.olt.activate_onu(0, SERIAL, 1)
        self.events.clear()

    def activate_other(self):
        """Activate the second ONU as ONU id 2 and return it."""
        return self.olt.activate_onu(0, OTHER, 2)

    def send(self, data, onu=None):
        """Hand `data` to the responder; return the OMCI frames emitted meanwhile."""
        start = len(self.events)
        receive(self.responder, onu or self.onu, data)
        return omci_frames(self.events[start:])

    def request(self, message_type, me_class, me_id, contents=b"", tid=0x0102, onu=None, extended=False):
        """Send one request; return the frames emitted."""
        return self.send(codec.encode(tid, message_type, me_class, me_id, contents, extended), onu)

    def one(self, *args, **kwargs):
        """Send one request and return its single response, parsed."""
        frames = self.request(*args, **kwargs)
        assert len(frames) == 1, frames
        return codec.parse(frames[0])


def omci_frames(seen):
    """The OMCI packets among `seen` events."""
    return [e.pkt for e in seen if isinstance(e, events.OmciIndication)]


@pytest.fixture
def env():
    return Env()


GET, SET, CREATE, DELETE = 0x49, 0x48, 0x44, 0x46
MIB_RESET, MIB_UPLOAD, MIB_UPLOAD_NEXT = 0x4F, 0x4D, 0x4E


# ---- BBR's sequence and the reference examples ------------------------------------------------

def test_bbr_sequence(env):
    """MIB reset, upload, 227 upload-next and Set PPTP 0x0101 admin 0 are answered as BBR expects, and UNI 0 goes up."""
    assert env.send(bytes.fromhex("00014f0a00020000" + "00" * 32 + "00000028")) == [
        bytes.fromhex("00012f0a00020000" + "00" * 32 + "00000028")]
    assert env.send(bytes.fromhex("00024d0a00020000" + "00" * 32 + "00000028")) == [
        bytes.fromhex("00022d0a00020000" + "00e3" + "00" * 30 + "00000028")]
    for seq in range(227):
        frames = env.request(MIB_UPLOAD_NEXT, 2, 0, seq.to_bytes(2, "big"), tid=3 + seq)
        assert len(frames) == 1 and len(frames[0]) == 44
        frame = codec.parse(frames[0])
        assert (frame.tid, frame.message_type, frame.me_class) == (3 + seq, 0x2E, 2)
    assert env.onu.unis[0].state == "down"
    frames = env.send(bytes.fromhex("0001480a000b0101" + "0800" + "00" * 30 + "00000028"))
    assert frames[0] == bytes.fromhex("0001280a000b0101" + "00" * 32 + "00000028")
    assert env.onu.unis[0].state == "up"
    # The UNI's alarm clear follows the Set response, as in BBSim.
    assert frames[1] == bytes.fromhex("0000100a000b0101" + "00" * 31 + "01" + "00000028")
    assert env.onu.mib_data_sync == 1


def test_alarm_notification_reference_bytes(env):
    """A raised LOS on PPTP 0x0101 is BBSim's frame 0000100a000b0101800000…0000000100000028."""
    pkt = env.responder.alarm_notification(env.onu, 11, 0x0101, True)
    assert pkt.hex() == "0000100a000b0101" + "80" + "00" * 27 + "000000" + "01" + "00000028"


def test_alarm_sequence_per_me_wraps(env):
    """Sequence numbers count per ME from 1 and wrap from 255 to 1."""
    seqs = [env.responder.alarm_notification(env.onu, 11, 0x0101, i % 2 == 0)[39] for i in range(256)]
    assert seqs[:3] == [1, 2, 3] and seqs[254] == 255 and seqs[255] == 1
    assert env.responder.alarm_notification(env.onu, 11, 0x0102, True)[39] == 1


def test_omci_alarm_event_becomes_indication(env):
    """With the responder attached, an OmciAlarm from the model is emitted as an AlarmNotification."""
    env.olt.onu_alarm(SERIAL, "ONU_ALARM_LOS", "on")
    frames = omci_frames(env.events)
    assert [f[:8].hex() for f in frames] == ["0000100a000b0101"] and frames[0][8] == 0x80


def test_get_onu_g(env):
    """Get ONU-G vendor and serial returns BBSim's values in a 44-octet response; adding the version overflows
    the baseline frame, so the serial is left out and reported failed (Attribute failure, as omci-lib-go)."""
    frames = env.request(GET, 256, 0, b"\xa0\x00", tid=7)
    assert frames == [bytes.fromhex("0007290a01000000" + "00" + "a000" + b"BBSM".hex() + b"BBSM".hex()
                                    + "00000001" + "00" * 13 + "00000000" + "00000028")]
    frames = env.request(GET, 256, 0, b"\xe0\x00", tid=8)
    assert frames == [bytes.fromhex("0008290a01000000" + "09" + "c000" + b"BBSM".hex() + b"v0.0.1".hex()
                                    + "00" * 8 + "00" * 7 + "0000" + "2000" + "00000028")]


# ---- MIB reset, upload, upload-next ----------------------------------------------------------

def test_mib_upload_next_past_the_end(env):
    """Upload-next with seq == count (BBSim crashes) or beyond answers an empty record."""
    env.request(MIB_UPLOAD, 2, 0)
    for seq in (227, 228, 0xFFFF):
        frame = env.one(MIB_UPLOAD_NEXT, 2, 0, seq.to_bytes(2, "big"))
        assert frame.message_type == 0x2E and frame.contents == bytes(32)
    assert env.one(MIB_RESET, 2, 0).contents[0] == codec.SUCCESS


def test_mib_upload_extended(env):
    """Extended upload reports 3 commands for 4 UNIs and answers each with a packed message."""
    frame = env.one(MIB_UPLOAD, 2, 0, extended=True)
    assert frame.extended and frame.contents == b"\x00\x03"
    sizes = [len(env.request(MIB_UPLOAD_NEXT, 2, 0, seq.to_bytes(2, "big"), extended=True)[0]) for seq in range(3)]
    assert all(100 < size <= 1980 for size in sizes)
    past = env.one(MIB_UPLOAD_NEXT, 2, 0, b"\x00\x03", extended=True)
    assert past.contents == bytes(8)


def test_mib_reset_clears_mds_and_registrations(env):
    """MIB reset zeroes the MIB data sync and drops this ONU's GEM ports and alloc ids only."""
    other = env.activate_other()
    env.request(CREATE, 268, 1024)
    env.request(SET, 262, 0x8001, b"\x80\x00\x04\x00")
    env.request(CREATE, 268, 1030, onu=other)
    assert env.onu.mib_data_sync == 2
    env.request(MIB_RESET, 2, 0)
    assert env.onu.mib_data_sync == 0
    assert env.onu.pon.gem_ports == {1030: OTHER} and env.onu.pon.alloc_ids == {}


def test_mib_upload_reports_current_mds(env):
    """The ONU-data record of the upload carries the MIB data sync value at upload time."""
    env.request(SET, 263, 0x8001, b"\x20\x00\x00\x30")
    env.request(MIB_UPLOAD, 2, 0)
    assert env.one(MIB_UPLOAD_NEXT, 2, 0, b"\x00\x00").contents[:7] == bytes.fromhex("00020000800001")


def test_mds_rules(env):
    """MDS +1 on Set/Create/Delete, unchanged on Get and Synchronize Time, wraps 255 -> 1."""
    env.request(SET, 264, 0x0101, b"\x20\x00\x00")
    env.request(CREATE, 84, 1, bytes(30))
    env.request(DELETE, 84, 1)
    env.request(GET, 2, 0, b"\x80\x00")
    env.request(0x58, 256, 0, bytes(7))
    assert env.onu.mib_data_sync == 3
    assert env.one(GET, 2, 0, b"\x80\x00").contents[:4] == bytes.fromhex("00800003")
    env.onu.mib_data_sync = 255
    env.request(SET, 264, 0x0101, b"\x20\x00\x00")
    assert env.onu.mib_data_sync == 1


# ---- Get -------------------------------------------------------------------------------------

@pytest.mark.parametrize("me_class, me_id", [
    (256, 0), (257, 0), (7, 0), (7, 1), (134, 0), (138, 0), (264, 0x0101), (11, 0x0104), (263, 0x8001), (2, 0),
    (322, 1), (321, 1), (24, 1), (312, 1), (341, 1), (334, 1), (425, 1)])
def test_get_supported_classes(env, me_class, me_id):
    """Every class of reference 4.3 answers a Get: all attributes, or Attribute failure for what does not fit."""
    frame = env.one(GET, me_class, me_id, b"\xff\xff")
    assert frame.message_type == 0x29 and (frame.me_class, frame.me_id) == (me_class, me_id)
    assert frame.contents[0] in (codec.SUCCESS, codec.ATTRIBUTE_FAILURE)
    assert frame.u16(1) != 0


def test_get_unsupported_class_is_unknown_me(env):
    """A Get on a class the ONU does not model answers Unknown ME (BBSim: no answer)."""
    frame = env.one(GET, 45, 1, b"\x80\x00")
    assert frame.message_type == 0x29 and frame.contents == bytes([codec.UNKNOWN_ME]) + bytes(31)
    assert env.one(GET, 45, 1, b"\x80\x00", extended=True).contents == bytes([codec.UNKNOWN_ME]) + bytes(6)


@pytest.mark.parametrize("me_class, me_id", [
    (11, 0x0105), (264, 0x0200), (256, 1), (7, 2), (263, 0x8002), (53, 0x0101)])
def test_get_unknown_instance(env, me_class, me_id):
    """A Get on an instance the ONU does not have answers Unknown ME instance."""
    assert env.one(GET, me_class, me_id, b"\x80\x00").contents[0] == codec.UNKNOWN_INSTANCE


def test_get_undefined_attribute_bits(env):
    """Mask bits the class does not define are reported as unsupported with Attribute failure (BBSim: no answer)."""
    frame = env.one(GET, 264, 0x0101, b"\x20\x07")
    assert frame.contents[0] == codec.ATTRIBUTE_FAILURE
    assert frame.u16(1) == 0x2000 and frame.u16(28) == 0x0007 and frame.u16(30) == 0


def test_get_extended_layout(env):
    """An extended Get response is result, mask, unsupported and failed masks, then every attribute."""
    frame = env.one(GET, 256, 0, b"\xff\xf8", extended=True)
    assert frame.extended and frame.contents[0] == codec.SUCCESS
    assert frame.u16(1) == 0xFFF8 and frame.u32(3) == 0
    assert len(frame.contents) == 7 + 4 + 14 + 8 + 6 + 24 + 12 + 1 + 2


def test_get_software_images(env):
    """Image 0 is active and committed BBSM_IMG_00001; image 1 is BBSM_IMG_00000; both valid."""
    image0 = env.one(GET, 7, 0, b"\xf0\x00").contents
    image1 = env.one(GET, 7, 1, b"\xf0\x00").contents
    assert image0[3:17] == b"BBSM_IMG_00001" and image0[17:20] == b"\x01\x01\x01"
    assert image1[3:17] == b"BBSM_IMG_00000" and image1[17:20] == b"\x00\x00\x01"


def test_get_onu2g_omcc_version():
    """ONU2-G reports the configured OMCC version."""
    env = Env(omcc_version=0xB4)
    assert env.one(GET, 257, 0, b"\x40\x00").contents[3] == 0xB4


# ---- Set -------------------------------------------------------------------------------------

def test_set_pptp_admin_lock_and_unlock(env):
    """Admin state 0 brings the UNI up, 1 takes it down; each change is followed by its alarm notification."""
    up = env.request(SET, 11, 0x0102, b"\x08\x00\x00")
    assert env.onu.unis[1].state == "up" and len(up) == 2 and up[1][8] == 0x00
    down = env.request(SET, 11, 0x0102, b"\x08\x00\x01")
    assert env.onu.unis[1].state == "down" and down[1][8] == 0x80 and down[1][39] == 2


def test_set_pptp_without_admin_state(env):
    """A PPTP Set without the administrative state (BBSim crashes) succeeds and leaves the UNI alone."""
    frame = env.one(SET, 11, 0x0101, b"\x01\x00\x05\xdc")
    assert frame.contents[0] == codec.SUCCESS and env.onu.unis[0].state == "down"


def test_set_pptp_errors(env):
    """Unknown PPTP instance, admin values other than 0/1, undefined bits and short payloads are refused."""
    assert env.one(SET, 11, 0x0109, b"\x08\x00\x00").contents[0] == codec.UNKNOWN_INSTANCE
    bad = env.one(SET, 11, 0x0101, b"\x08\x00\x07")
    assert bad.contents[0] == codec.ATTRIBUTE_FAILURE and bad.u16(3) == 0x0800
    undefined = env.one(SET, 11, 0x0101, b"\x00\x01\x00")
    assert undefined.contents[0] == codec.ATTRIBUTE_FAILURE and undefined.u16(1) == 0x0001
    short = env.one(SET, 11, 0x0101, b"\xff\xfe" + bytes(10), extended=True)
    assert short.contents == bytes([codec.PARAMETER_ERROR])
    assert env.onu.unis[0].state == "down" and env.onu.mib_data_sync == 0


def test_set_pots_admin_state():
    """PPTP POTS admin state (attribute 1) drives the POTS port."""
    env = Env({"uni": 1, "pots": 1})
    frames = env.request(SET, 53, 0x0102, b"\x80\x00\x00")
    assert codec.parse(frames[0]).contents[0] == codec.SUCCESS
    assert frames[1][:8] == bytes.fromhex("0000100a000b0102")      # BBSim reports POTS alarms as class 11
    assert env.onu.unis[1].kind == "POTS" and env.onu.unis[1].state == "up"
    assert env.one(SET, 53, 0x0101, b"\x80\x00\x00").contents[0] == codec.UNKNOWN_INSTANCE


def test_set_onu_g_admin_lock(env):
    """ONU-G admin state is stored and reported by Get on ONU-G, PPTP and UNI-G."""
    assert env.one(SET, 256, 0, b"\x02\x00\x01").contents[0] == codec.SUCCESS
    assert env.one(GET, 256, 0, b"\x02\x00").contents[3] == 1
    assert env.one(GET, 11, 0x0101, b"\x08\x00").contents[3] == 1
    assert env.one(GET, 264, 0x0101, b"\x40\x00").contents[3] == 1
    assert env.one(SET, 256, 1, b"\x02\x00\x01").contents[0] == codec.UNKNOWN_INSTANCE


def test_set_tcont_alloc_ids(env):
    """T-CONT alloc ids are registered per PON; the same alloc id on another ONU is refused; 0xFFFF frees it."""
    other = env.activate_other()
    assert env.one(SET, 262, 0x8001, b"\x80\x00\x04\x00").contents[0] == codec.SUCCESS
    assert env.onu.pon.alloc_ids == {(1, 0x8001): (0x400, SERIAL)}
    clash = env.one(SET, 262, 0x8001, b"\x80\x00\x04\x00", onu=other)
    assert clash.contents[0] == codec.ATTRIBUTE_FAILURE and clash.u16(3) == 0x8000
    assert env.one(SET, 262, 0x8002, b"\x80\x00\x04\x00").contents[0] == codec.ATTRIBUTE_FAILURE
    assert env.one(SET, 262, 0x8001, b"\x80\x00\x04\x00").contents[0] == codec.SUCCESS
    assert env.one(SET, 262, 0x8001, b"\x80\x00\xff\xff").contents[0] == codec.SUCCESS
    assert env.onu.pon.alloc_ids == {}
    assert env.one(SET, 262, 0x8001, b"\x80\x00\x04\x00", onu=other).contents[0] == codec.SUCCESS
    assert env.one(SET, 262, 0x8009, b"\x80\x00\x04\x01").contents[0] == codec.UNKNOWN_INSTANCE


def test_set_other_classes(env):
    """Sets on other G.988 classes succeed; on a class G.988 does not define they answer Unknown ME."""
    assert env.one(SET, 334, 1, b"\x40\x00" + bytes(16)).contents[0] == codec.SUCCESS
    assert env.one(SET, 37, 1, b"\x80\x00\x01").contents[0] == codec.UNKNOWN_ME


# ---- Create / Delete -------------------------------------------------------------------------

def test_create_gem_port_registry(env):
    """GEM port network CTPs register per PON; another ONU's gem is a Processing error; 4069 is shared."""
    other = env.activate_other()
    assert env.one(CREATE, 268, 1024, bytes(30)).contents[0] == codec.SUCCESS
    assert env.one(CREATE, 268, 1024, bytes(30)).contents[0] == codec.SUCCESS
    assert env.one(CREATE, 268, 1024, bytes(30), onu=other).contents[0] == codec.PROCESSING_ERROR
    assert env.one(CREATE, 268, 4069, onu=other).contents[0] == codec.SUCCESS
    assert env.one(CREATE, 268, 4069).contents[0] == codec.SUCCESS
    assert env.onu.pon.gem_ports == {1024: SERIAL}
    assert env.one(DELETE, 268, 1024, onu=other).contents[0] == codec.SUCCESS
    assert env.onu.pon.gem_ports == {1024: SERIAL}
    assert env.one(DELETE, 268, 1024).contents[0] == codec.SUCCESS
    assert env.onu.pon.gem_ports == {}
    assert env.one(CREATE, 268, 1024, onu=other).contents[0] == codec.SUCCESS


def test_create_delete_unknown_class(env):
    """Create and Delete on a class G.988 does not define answer Unknown ME and leave the MDS alone."""
    assert env.one(CREATE, 37, 1).contents[0] == codec.UNKNOWN_ME
    assert env.one(DELETE, 0x7777, 1).contents[0] == codec.UNKNOWN_ME
    assert env.onu.mib_data_sync == 0


# ---- Reboot, time, test ----------------------------------------------------------------------

def test_reboot_power_cycles_on_the_clock(env):
    """Reboot answers first, then the ONU powers off (OnuInd down) and comes back after 10 s (OnuInd up)."""
    frames = env.request(0x59, 256, 0)
    assert codec.parse(frames[0]).message_type == 0x39 and codec.parse(frames[0]).contents[0] == 0
    assert env.onu.state == "enabled"
    env.clock.advance(0)
    assert env.onu.state == "disabled"
    assert [e.oper_state for e in env.events if isinstance(e, events.OnuIndication)] == ["down"]
    assert env.send(codec.encode(9, MIB_RESET, 2, 0)) == []
    env.clock.advance(10)
    assert env.onu.state == "enabled"
    assert [e.oper_state for e in env.events if isinstance(e, events.OnuIndication)] == ["down", "up"]
    env.olt.stop()
    assert env.olt.pending_calls() == 0


def test_reboot_uses_given_power_cycle():
    """The power_cycle callable given to the responder is what a Reboot runs, after the response."""
    cycled = []
    env = Env(power_cycle=cycled.append)
    env.request(0x59, 256, 0)
    assert cycled == []
    env.clock.advance(0)
    assert cycled == [env.onu]


def test_reboot_other_class(env):
    """Reboot on a class that cannot reboot answers Command not supported."""
    assert env.one(0x59, 11, 0x0101).contents[0] == codec.NOT_SUPPORTED


def test_synchronize_time(env):
    """Synchronize Time on ONU-G succeeds; on another class it is not supported."""
    frame = env.one(0x58, 256, 0, bytes(7))
    assert frame.message_type == 0x38 and frame.contents == bytes(32)
    assert env.one(0x58, 2, 0).contents[0] == codec.NOT_SUPPORTED


def test_test_and_test_result(env):
    """Test on ANI-G answers at once and sends a Test result with the request's tid one second later."""
    frame = env.one(0x52, 263, 0x8001, b"\x07\x00\x00\x00\x00", tid=0x0345)
    assert frame.message_type == 0x32 and frame.contents[0] == codec.SUCCESS
    env.events.clear()
    env.clock.advance(0.9)
    assert omci_frames(env.events) == []
    env.clock.advance(0.1)
    (result,) = omci_frames(env.events)
    parsed = codec.parse(result)
    assert (parsed.tid, parsed.message_type, parsed.me_class, parsed.me_id) == (0x0345, 0x1B, 263, 0x8001)
    assert parsed.contents[:3] == b"\x01\x00\xa3" and parsed.contents[3] == 3 and parsed.contents[12] == 12


def test_test_other_class(env):
    """Test on a class without optical line supervision is not supported and sends no result."""
    assert env.one(0x52, 11, 0x0101, bytes(5)).contents[0] == codec.NOT_SUPPORTED
    env.events.clear()
    env.clock.advance(2)
    assert omci_frames(env.events) == []


# ---- alarms ----------------------------------------------------------------------------------

def test_get_all_alarms_reports_nth_alarmed_me(env):
    """With only UNI 3 alarmed, get-all-alarms counts 1 and next(0) reports 0x0104 (BBSim: no answer)."""
    env.responder.alarm_notification(env.onu, 11, 0x0104, True)
    count = env.one(0x4B, 2, 0, b"\x00")
    assert count.message_type == 0x2B and count.contents[:2] == b"\x00\x01"
    first = env.one(0x4C, 2, 0, b"\x00\x00")
    assert first.contents[:5] == bytes.fromhex("000b010480")
    assert env.one(0x4C, 2, 0, b"\x00\x01").contents == bytes(32)
    assert env.responder.alarm_notification(env.onu, 11, 0x0104, False)[39] == 1


def test_get_all_alarms_after_uni_changes(env):
    """UNI up clears its alarm and UNI down raises it; the alarm table follows."""
    env.request(SET, 11, 0x0101, b"\x08\x00\x00")
    env.request(SET, 11, 0x0102, b"\x08\x00\x00")
    env.request(SET, 11, 0x0102, b"\x08\x00\x01")
    assert env.one(0x4B, 2, 0, b"\x00").contents[:2] == b"\x00\x01"
    assert env.one(0x4C, 2, 0, b"\x00\x00").u16(2) == 0x0102


# ---- software download -----------------------------------------------------------------------

def download(env, image, instance=1, crc=None, sections=None, extended=False):
    """Run Start, Download Section (AR on every 4th) and End for `image`; return the End response."""
    size = len(image)
    section_size = 1965 if extended else 31
    start = env.one(0x53, 7, instance, b"\x03" + size.to_bytes(4, "big") + b"\x01\x00\x00", extended=extended)
    assert start.contents[:3] == b"\x00\x03\x00"
    count = math.ceil(size / section_size) if sections is None else sections
    for n in range(count):
        chunk = image[n * section_size:(n + 1) * section_size]
        chunk += bytes(section_size - len(chunk)) if not extended else b""
        ar = n % 4 == 3
        frames = env.request(0x54 if ar else 0x14, 7, instance, bytes([n % 4]) + chunk, extended=extended)
        assert len(frames) == (1 if ar else 0)
        if ar:
            assert codec.parse(frames[0]).contents[:2] == bytes([0, n % 4])
    crc = crc32_bzip2(image) if crc is None else crc
    return env.one(0x55, 7, instance, crc.to_bytes(4, "big") + size.to_bytes(4, "big") + b"\x01\x00\x01",
                   extended=extended)


IMAGE = b"BBSM_IMG_00002" + bytes(range(256)) * 3


def test_software_download_activate_commit(env):
    """A good download completes, activation swaps the image and reboots the ONU, commit commits it."""
    end = download(env, IMAGE)
    assert end.message_type == 0x35 and end.contents[:2] == b"\x00\x00"
    assert env.onu.state == "image_download_completed"
    assert env.onu.image_expected_sections == env.onu.image_received_sections == math.ceil(len(IMAGE) / 31)
    assert env.one(GET, 7, 1, b"\x80\x00").contents[3:17] == b"BBSM_IMG_00002"
    assert env.one(0x56, 7, 1, b"\x00").contents[0] == codec.SUCCESS
    assert env.onu.state == "software_image_activated" and env.onu.active_image == 1
    env.clock.advance(0)
    assert env.onu.state == "disabled"
    env.clock.advance(10)
    assert env.onu.state == "enabled"
    image1 = env.one(GET, 7, 1, b"\xf0\x00").contents
    assert image1[3:17] == b"BBSM_IMG_00002" and image1[17:19] == b"\x00\x01"
    assert env.one(0x57, 7, 1).contents[0] == codec.SUCCESS
    assert env.onu.state == "software_image_committed" and env.onu.committed_image == 1
    assert env.one(GET, 7, 0, b"\x70\x00").contents[3:6] == b"\x00\x00\x01"
    assert env.onu.mib_data_sync == 4


def test_software_download_extended(env):
    """Extended downloads count 1965-octet sections and check the CRC the same way."""
    image = IMAGE * 5
    assert download(env, image, extended=True).contents[0] == codec.SUCCESS
    assert env.onu.image_expected_sections == math.ceil(len(image) / 1965)


def test_software_download_bad_crc(env):
    """A wrong CRC answers Processing error and the ONU goes to image_download_error."""
    end = download(env, IMAGE, crc=crc32_bzip2(IMAGE) ^ 1)
    assert end.contents[0] == codec.PROCESSING_ERROR and env.onu.state == "image_download_error"
    assert env.one(GET, 7, 1, b"\x80\x00").contents[3:17] == b"BBSM_IMG_00000"


def test_software_download_missing_section(env):
    """Fewer sections than the image size needs answers Processing error."""
    end = download(env, IMAGE, sections=3)
    assert end.contents[0] == codec.PROCESSING_ERROR and env.onu.state == "image_download_error"


def test_software_download_abort(env):
    """End with size 0 and CRC 0xFFFFFFFF after some sections aborts the download successfully."""
    env.one(0x53, 7, 1, b"\x03\x00\x00\x10\x00\x01\x00\x00")
    env.request(0x14, 7, 1, b"\x00" + bytes(31))
    end = env.one(0x55, 7, 1, b"\xff\xff\xff\xff\x00\x00\x00\x00\x01\x00\x01")
    assert end.contents[0] == codec.SUCCESS and env.onu.image_received_sections == 0
    assert env.onu.state == "image_download_error"


def test_software_download_errors(env):
    """Sections and End without a Start, and image requests on other classes or instances, are refused."""
    assert env.one(0x54, 7, 1, b"\x00" + bytes(31)).contents[:2] == bytes([codec.PROCESSING_ERROR, 0])
    assert env.request(0x14, 7, 1, b"\x00" + bytes(31)) == []
    assert env.one(0x55, 7, 1, bytes(8) + b"\x01\x00\x01").contents[0] == codec.PROCESSING_ERROR
    assert env.one(0x53, 11, 0x0101, bytes(6)).contents[0] == codec.NOT_SUPPORTED
    assert env.one(0x53, 7, 5, bytes(6)).contents[0] == codec.UNKNOWN_INSTANCE
    assert env.one(0x56, 7, 9).contents[0] == codec.UNKNOWN_INSTANCE
    assert env.one(0x57, 0x7777, 0).contents[0] == codec.UNKNOWN_ME
    assert env.onu.state == "enabled" and env.onu.mib_data_sync == 0


def test_crc32_bzip2():
    """The End Software Download CRC is CRC-32/BZIP2 (check value 0xfc891918) and can be continued."""
    assert crc32_bzip2(b"123456789") == 0xFC891918
    assert crc32_bzip2(b"6789", crc32_bzip2(b"12345")) == 0xFC891918


# ---- unsupported, malformed, rate, inactive ---------------------------------------------------

@pytest.mark.parametrize("message_type", [0x5A, 0x5C, 0x5D, 0x10, 0x11, 0x1B, 0x29, 0x41, 0x43])
def test_unsupported_message_types(env, message_type):
    """Requests the ONU does not implement, and autonomous or response types, get Command not supported."""
    frame = env.one(message_type, 256, 0, b"\x80\x00")
    assert frame.message_type == (message_type & 0x1F) | 0x20 and frame.contents[0] == codec.NOT_SUPPORTED


def test_malformed_frames_raise_and_emit_nothing(env):
    """Malformed frames raise OmciError before any effect or response."""
    for data in (b"", b"\x00\x01", bytes.fromhex("00014f0c00020000") + bytes(36), bytes(43)[:39],
                 bytes.fromhex("00014d0b000200000005")):
        with pytest.raises(OmciError):
            receive(env.responder, env.onu, data)
    assert env.events == []


def test_inactive_onu_answers_nothing(env):
    """An ONU that is not activated (here: still discovered) drops OMCI silently."""
    other = env.olt.onu_by_serial(OTHER)
    assert other.state == "discovered"
    assert env.send(codec.encode(1, MIB_RESET, 2, 0), onu=other) == []


@pytest.mark.parametrize("rate, answered", [(10, 20), (5, 10), (1, 2), (0, 0)])
def test_response_rate(rate, answered):
    """Only `omci_response_rate` of every 10 messages are processed and answered."""
    env = Env(response_rate=rate)
    got = sum(len(env.request(MIB_UPLOAD, 2, 0, tid=1 + i)) for i in range(20))
    assert got == answered


def test_from_settings():
    """from_settings takes the response rate, OMCC version and injection flags from the settings."""
    settings = load_settings({"omci_response_rate": 3, "omcc_version": 176, "inject_omci_unknown_me": True}, None)
    responder = OmciResponder.from_settings(settings)
    assert (responder.response_rate, responder.omcc_version, responder.inject_unknown_me,
            responder.inject_unknown_attributes) == (3, 176, True, False)


def test_per_onu_state_is_separate(env):
    """Each ONU has its own alarm sequence numbers and ONU-G lock."""
    other = env.activate_other()
    env.request(SET, 256, 0, b"\x02\x00\x01")
    assert env.one(GET, 256, 0, b"\x02\x00", onu=other).contents[3] == 0
    assert env.responder.alarm_notification(env.onu, 11, 0x0101, True)[39] == 1
    assert env.responder.alarm_notification(other, 11, 0x0101, True)[39] == 1


def test_disable_forgets_alarms(env):
    """A disabled ONU forgets its alarm table (BBSim cleans it on disable)."""
    env.responder.alarm_notification(env.onu, 11, 0x0103, True)
    env.olt.shutdown_onu(SERIAL)
    assert env.responder.state(env.onu).alarms.keys() <= {(11, 0x0101), (11, 0x0102), (11, 0x0104)}
    assert (11, 0x0103) not in env.responder.state(env.onu).alarms


# ---- random input ----------------------------------------------------------------------------

@pytest.fixture
def logged_failures():
    """Failures logged (log.failure) while the test runs: a handler or timer that raised."""
    failures = []

    def observer(event):
        if "log_failure" in event:
            failures.append(event)

    globalLogPublisher.addObserver(observer)
    yield failures
    globalLogPublisher.removeObserver(observer)


def test_fuzz_random_frames(env, logged_failures):
    """Random frames (random types, classes, instances and contents) raise at most OmciError, no handler
    fails, and both ONUs are still usable afterwards."""
    rng = random.Random(20240601)
    classes = [2, 6, 7, 11, 24, 53, 134, 138, 256, 257, 262, 263, 264, 268, 277, 278, 334, 425, 37, 0, 0xFFFF]
    other = env.activate_other()
    answered = 0
    for i in range(4000):
        onu = env.onu if i % 3 else other
        choice = rng.random()
        if choice < 0.2:
            data = rng.randbytes(rng.randrange(60))
        else:
            extended = rng.random() < 0.3
            message_type = rng.choice([rng.randrange(256), rng.randrange(32) | 0x40, rng.randrange(32)])
            contents = rng.randbytes(rng.randrange(40 if extended else 33))
            me_id = rng.choice([0, 1, 0x0101, 0x0102, 0x8001, 4069, rng.randrange(65536)])
            data = codec.encode(rng.randrange(65536), message_type, rng.choice(classes), me_id, contents, extended)
            if rng.random() < 0.1:
                data = data[:rng.randrange(len(data) + 1)]
        try:
            answered += len(env.send(data, onu))
        except OmciError:
            pass
        if i % 97 == 0:
            env.clock.advance(rng.choice([0, 0.5, 1, 11]))
    env.clock.advance(0)
    env.clock.advance(11)
    assert logged_failures == []
    assert answered > 1000
    for onu in (env.onu, other):
        if onu.state == "disabled":
            env.olt.power_on_onu(onu.serial)
        assert onu.is_active, onu.state
        frames = env.send(codec.encode(0x7FFF, MIB_RESET, 2, 0), onu=onu)
        assert len(frames) >= 1 and codec.parse(frames[0]).contents[0] == codec.SUCCESS
