"""OMCI codec: framing (baseline and extended), message types, attribute packing, malformed input."""
import random

import pytest

from oltsim.omci import codec
from oltsim.omci.codec import OmciError

# BBR's MIB reset request (omci-lib-go serialisation, tid 1), as it sends it in OmciMsgOut.
MIB_RESET_REQUEST = bytes.fromhex("00014f0a00020000" + "00" * 32 + "00000028")


def test_message_type_constants():
    """Request and response type octets are the G.988 action with AR or AK."""
    assert codec.MIB_RESET | codec.AR == 0x4F
    assert codec.MIB_RESET | codec.AK == 0x2F
    assert codec.MIB_UPLOAD_NEXT | codec.AK == 0x2E
    assert codec.SET | codec.AR == 0x48
    assert codec.GET | codec.AK == 0x29
    assert (codec.CREATE, codec.DELETE, codec.GET_ALL_ALARMS, codec.GET_ALL_ALARMS_NEXT, codec.MIB_UPLOAD,
            codec.ALARM_NOTIFICATION, codec.TEST, codec.START_SW_DOWNLOAD, codec.DOWNLOAD_SECTION,
            codec.END_SW_DOWNLOAD, codec.ACTIVATE_SW, codec.COMMIT_SW, codec.SYNC_TIME, codec.REBOOT,
            codec.TEST_RESULT) == (4, 6, 11, 12, 13, 16, 18, 19, 20, 21, 22, 23, 24, 25, 27)
    assert (codec.UNKNOWN_ME, codec.UNKNOWN_INSTANCE, codec.ATTRIBUTE_FAILURE) == (0b0100, 0b0101, 0b1001)


def test_parse_baseline_request():
    """A baseline frame yields tid, type with AR, device id, ME and its 32 content octets."""
    frame = codec.parse(MIB_RESET_REQUEST)
    assert (frame.tid, frame.message_type, frame.device_id, frame.me_class, frame.me_id) == (1, 0x4F, 0x0A, 2, 0)
    assert frame.action == codec.MIB_RESET and frame.ar and not frame.ak and not frame.extended
    assert frame.contents == bytes(32)


@pytest.mark.parametrize("length", [40, 44, 48])
def test_parse_baseline_lengths_accepted(length):
    """Baseline frames without trailer (40), with it (44) and with a MIC (48) are accepted."""
    data = (MIB_RESET_REQUEST + b"\x12\x34\x56\x78")[:length]
    assert codec.parse(data).contents == bytes(32)


def test_parse_baseline_ignores_trailer_length():
    """A wrong length in the baseline trailer is tolerated, as BBSim corrects it."""
    assert codec.parse(MIB_RESET_REQUEST[:40] + b"\x00\x00\x00\x30").action == codec.MIB_RESET


@pytest.mark.parametrize("data, words", [
    (b"", "too short"),
    (bytes.fromhex("00014f0a0002"), "too short"),
    (MIB_RESET_REQUEST[:39], "too short"),
    (MIB_RESET_REQUEST + bytes(5), "too long"),
    (bytes.fromhex("00014f0c00020000") + bytes(36), "device identifier"),
    (bytes.fromhex("00014f0b00020000"), "too short"),
    (bytes.fromhex("00014d0b000200000005") + bytes(4), "declares 5"),
    (bytes.fromhex("00014d0b00020000ffff") + bytes(1980), "too long"),
    (bytes.fromhex("0001490b0100000000"), "too short"),
    (bytes.fromhex("0001490b010000000001ff"), "get request too short"),
])
def test_parse_rejects_malformed(data, words):
    """Too short, too long, unknown device id and bad extended lengths raise OmciError."""
    with pytest.raises(OmciError) as info:
        codec.parse(data)
    assert words in str(info.value)


def test_omci_error_is_invalid_argument():
    """OmciError is the model's InvalidArgument, so the gRPC error table answers INVALID_ARGUMENT."""
    from oltsim.model.errors import InvalidArgument
    with pytest.raises(InvalidArgument) as info:
        codec.parse(b"\x00")
    assert "too short" in info.value.message


def test_parse_rejects_non_bytes():
    """Input that is not bytes raises OmciError, not TypeError."""
    with pytest.raises(OmciError):
        codec.parse("00014f0a")
    with pytest.raises(OmciError):
        codec.parse(None)


def test_parse_extended():
    """An extended frame's contents are exactly the declared length."""
    frame = codec.parse(bytes.fromhex("0003490b0100000000020800") + b"\xaa\xbb")
    assert frame.extended and frame.me_class == 256 and frame.contents == b"\x08\x00"
    assert frame.u16(0) == 0x0800 and frame.u32(1) == 0 and frame.field(1, 3) == b"\x00\x00\x00"


def test_encode_baseline_and_extended():
    """Baseline frames are 44 octets with the 00000028 trailer; extended ones carry their length."""
    frame = codec.encode(0x1234, 0x29, 256, 0, b"\x01\x02")
    assert len(frame) == codec.BASELINE_LENGTH == 44
    assert frame.hex() == "1234290a01000000" + "0102" + "00" * 30 + "00000028"
    ext = codec.encode(0x1234, 0x29, 256, 0, b"\x01\x02", extended=True)
    assert ext.hex() == "1234290b0100000000020102"
    with pytest.raises(ValueError):
        codec.encode(1, 0x29, 256, 0, bytes(33))


def test_response_and_result_response():
    """A response keeps tid, ME and message set and sets AK instead of AR."""
    request = codec.parse(bytes.fromhex("0005480b010b0101000208000000"))
    reply = codec.result_response(request, codec.SUCCESS)
    assert reply.hex() == "0005280b010b0101000100"


def test_attribute_masks():
    """Attribute 1 is the mask's MSB; masks and index lists convert both ways."""
    assert codec.attribute_bit(1) == 0x8000 and codec.attribute_bit(16) == 0x0001
    assert codec.mask_of([5]) == 0x0800
    assert codec.mask_indexes(0x8801) == [1, 5, 16]
    assert codec.ME_CLASSES[codec.ONU_G].defined_mask == 0xFFF8


def test_octets():
    """Integers are big-endian and wrapped to the size; strings and bytes are cut or zero-padded."""
    assert codec.octets(0x1234, 2) == b"\x12\x34"
    assert codec.octets(0x1FF, 1) == b"\xff"
    assert codec.octets("BBSM-Circuit-Pack-ani", 8) == b"BBSM-Cir"
    assert codec.octets(b"ONF", 4) == b"ONF\x00"


def test_encode_attributes_packs_greedily():
    """Attributes that do not fit are reported failed while later, smaller ones still fit."""
    onu_g = codec.ME_CLASSES[codec.ONU_G]
    data, encoded, failed, unsupported = codec.encode_attributes(onu_g, {1: "BBSM", 2: "v0.0.1"}, 0xFFFF, 25)
    assert encoded == 0xDF90 and failed == 0x2068 and unsupported == 0x0007
    assert len(data) == 25 and data[:4] == b"BBSM"


def test_decode_attributes():
    """Set payloads split into attribute octets; undefined bits or short data give None."""
    pptp = codec.ME_CLASSES[codec.PPTP_ETHERNET_UNI]
    assert codec.decode_attributes(pptp, 0x0800, b"\x01\x99") == {5: b"\x01"}
    assert codec.decode_attributes(pptp, 0x0900, b"\x01\x05\xee") == {5: b"\x01", 8: b"\x05\xee"}
    assert codec.decode_attributes(pptp, 0x0001, b"\x00" * 30) is None
    assert codec.decode_attributes(pptp, 0x0100, b"\x05") is None


def test_parse_fuzz_raises_only_omci_error():
    """Random byte strings (and random headers) either parse or raise OmciError, nothing else."""
    rng = random.Random(1234)
    parsed = 0
    for i in range(20000):
        if i % 2:
            head = bytes([rng.randrange(256), rng.randrange(256), rng.randrange(256),
                          rng.choice((0x0A, 0x0B, rng.randrange(256)))])
            data = head + rng.randbytes(rng.choice((0, 4, 6, 36, 40, 44, rng.randrange(120))))
        else:
            data = rng.randbytes(rng.randrange(64))
        try:
            frame = codec.parse(data)
        except OmciError:
            continue
        parsed += 1
        assert frame.device_id in (codec.BASELINE, codec.EXTENDED)
    assert parsed > 1000
