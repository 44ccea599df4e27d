"""The MIB reported on upload: BBSim's entities, order, count and encodings (reference 4.4)."""
from collections import Counter

import pytest

from oltsim.omci import codec
from oltsim.omci.mib import build_mib


def records(mib):
    """The reported-ME records (class, instance, mask, attributes) in upload order."""
    return [e.record for e in mib.entries]


@pytest.mark.parametrize("uni, pots, count", [(4, 0, 227), (1, 1, 195), (1, 0, 173), (2, 3, 249), (0, 2, 195)])
def test_baseline_count(uni, pots, count):
    """The baseline count is 155 + 18·(N+P) + 4 when there are POTS ports (227 for 4 UNIs)."""
    mib = build_mib(uni, pots, "XGS-PON")
    assert mib.count == count == 155 + 18 * (uni + pots) + (4 if pots else 0)


def test_class_counts_for_four_unis():
    """4 UNIs: ONU data 1, circuit pack 8, ANI-G 1, PPTP 4, UNI-G 4, queues 192, T-CONT 8, schedulers 8, ONU2-G 1."""
    counts = Counter(e.me_class for e in build_mib(4, 0, "XGS-PON").entries)
    assert counts == {2: 1, 6: 8, 263: 1, 11: 4, 264: 4, 277: 192, 262: 8, 278: 8, 257: 1}


def test_order_of_four_uni_mib():
    """ONU data, ANI circuit pack, ANI-G, Ethernet circuit pack, then per UNI PPTP, UNI-G and 16 queue records,
    then per T-CONT the T-CONT, its scheduler and 16 queue records, and ONU2-G last."""
    entries = build_mib(4, 0, "XGS-PON").entries
    assert [(e.me_class, e.me_id) for e in entries[:12]] == [
        (2, 0), (6, 0x0101), (6, 0x0101), (6, 0x0101), (6, 0x0101), (263, 0x8001),
        (6, 0x0101), (6, 0x0101), (6, 0x0101), (6, 0x0101), (11, 0x0101), (264, 0x0101)]
    assert [(e.me_class, e.me_id) for e in entries[12:14]] == [(277, 0x0110), (277, 0x0110)]
    assert [(e.me_class, e.me_id) for e in entries[10 + 3 * 18:10 + 3 * 18 + 2]] == [(11, 0x0104), (264, 0x0104)]
    first_tcont = 10 + 4 * 18
    assert [(e.me_class, e.me_id) for e in entries[first_tcont:first_tcont + 3]] == [
        (262, 0x8001), (278, 0x0101), (277, 0x8010)]
    assert (entries[-1].me_class, entries[-1].me_id) == (257, 0)


def test_mib_is_shared():
    """The same configuration gives the same MIB object (built once, shared by all ONUs)."""
    assert build_mib(4, 0, "XGS-PON") is build_mib(4, 0, "XGS-PON")
    assert build_mib(4, 0, "XGS-PON") is not build_mib(4, 0, "GPON")


def test_baseline_frames_are_well_formed():
    """Every baseline upload-next response is 44 octets, type 0x2e, ME ONU data 0, and parses."""
    mib = build_mib(4, 0, "XGS-PON")
    for seq in range(mib.count):
        data = mib.baseline_frame(seq, 0x0100 + seq)
        assert len(data) == 44 and data[-4:] == b"\x00\x00\x00\x28"
        frame = codec.parse(data)
        assert (frame.tid, frame.message_type, frame.me_class, frame.me_id) == (0x0100 + seq, 0x2E, 2, 0)
        assert frame.contents.startswith(mib.entries[seq].record)


def test_known_entries_bytes():
    """ONU data, ANI circuit pack, ANI-G, PPTP, queue, T-CONT and ONU2-G records carry BBSim's values."""
    mib = build_mib(4, 0, "XGS-PON")
    recs = records(mib)
    assert mib.baseline_frame(0, 1).hex() == "00012e0a00020000" + "000200008000" + "00" * 26 + "00000028"
    assert recs[1].hex() == "00060101f000" + "ee01" + b"BBSM-Cir".hex() + b"v0.0.1".hex() + "00" * 8
    assert recs[2].hex() == "000601010f00" + b"ONF".hex() + "00" + "000000"
    assert recs[3].hex() == "0006010100f8" + b"BBSM-Circuit-Pack".hex() + "000000" + "00080800"
    assert recs[4].hex() == "000601010004" + "00000000"
    assert recs[5].hex() == "01078001ffff" + "0100080030000005090000e054ffff00000c638181"
    assert recs[10].hex() == "000b0101fffe" + "002f0000000003" + "05ee" + "00" + "0000" + "02" + "00000000"
    assert recs[12].hex() == "011501100000"
    assert recs[13].hex() == "01150110fff0" + "00" + "0064" + "0064" + "0000" + "0000" + "01010000" + "0000" + "01" \
        + "0001" + "00000000" + "0000" + "0000"
    assert recs[10 + 4 * 18].hex() == "010680018000ffff"
    assert recs[10 + 4 * 18 + 1].hex() == "01160101f000" + "8001" + "0000" + "02" + "00"
    assert recs[-1].hex() == "0101000007fc" + "00400801000800000006007f07003f0001"


def test_gpon_ani_circuit_pack_type():
    """A GPON PON reports the ANI circuit pack type 0xf5 (0xee for XGS-PON)."""
    assert build_mib(4, 0, "GPON").entries[1].attributes[0] == 0xF5
    assert build_mib(4, 0, "XGS-PON").entries[1].attributes[0] == 0xEE


def test_pots_entries():
    """With POTS ports a POTS circuit pack follows the Ethernet one and POTS PPTPs follow the Ethernet ones."""
    entries = build_mib(1, 1, "XGS-PON").entries
    assert [e.me_class for e in entries[6:14]] == [6] * 8
    assert entries[10].attributes[:2] == b"\x20\x01"
    assert (entries[14].me_class, entries[14].me_id) == (11, 0x0101)
    assert (entries[14 + 18].me_class, entries[14 + 18].me_id) == (53, 0x0102)
    assert entries[14 + 18].mask == 0xFFF8


def test_extended_packing():
    """Extended upload packs the same records, in order, into 3 messages of at most 1980 octets for 4 UNIs."""
    mib = build_mib(4, 0, "XGS-PON")
    assert mib.extended_count == 3
    packed = []
    for seq in range(mib.extended_count):
        data = mib.extended_frame(seq, 0x8000 + seq)
        assert len(data) <= codec.MAX_EXTENDED_LENGTH
        frame = codec.parse(data)
        assert frame.extended and frame.message_type == 0x2E and frame.tid == 0x8000 + seq
        contents, offset = frame.contents, 0
        while offset < len(contents):
            length = int.from_bytes(contents[offset:offset + 2], "big")
            packed.append(contents[offset + 2:offset + 8 + length])
            offset += 8 + length
        assert offset == len(contents)
    assert packed == records(mib)


def test_injected_unknown_me_and_attributes():
    """The injection flags replace ONU2-G by BBSim's raw record and add a class-37 ME, as 48-octet frames."""
    mib = build_mib(4, 0, "XGS-PON", True, True)
    assert mib.count == 228
    unknown_attr, unknown_me = mib.baseline_frame(226, 0x0abc), mib.baseline_frame(227, 0x0abd)
    assert unknown_attr.hex() == ("0abc2e0a00020000" + "0101000007fd" + "00400801000800000006007f07003f0001"
                                  + "000100010001000000" + "0000002828ce00e2")
    assert unknown_me.hex().startswith("0abd2e0a00020000002500018000010203")
    assert len(unknown_me) == 48
    last = codec.parse(mib.extended_frame(mib.extended_count - 1, 1)).contents
    assert last.endswith(bytes.fromhex("001a" + "0101000007fd" + "00400801000800000006007f07003f0001"
                                       + "000100010001000000"))


def test_mds_patch():
    """The ONU-data record of the first response carries the MIB data sync value asked for."""
    mib = build_mib(4, 0, "XGS-PON")
    assert codec.parse(mib.baseline_frame(0, 1, mds=7)).contents[6] == 7
    assert codec.parse(mib.extended_frame(0, 1, mds=9)).contents[8] == 9
    assert mib.baseline_frame(1, 1, mds=7) == mib.baseline_frame(1, 1)
