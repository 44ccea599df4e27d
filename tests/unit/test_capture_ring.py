"""The capture ring (oltsim.capture) in memory on a fake clock, with the built-in adapter bringing ONUs up at OLT 10:
what it records and in which order, its bounds, its filters, its pcapng, and its live streams' endings and drops."""
from __future__ import annotations

import random
import struct
import sys
import tracemalloc

from collections import deque

import pytest
from twisted.internet.task import Clock

from oltsim.capture import Capture, CaptureFilter, pcapng
from oltsim.capture.annotations import annotation_text, omci_summary
from oltsim.capture import ring as capture_ring
from oltsim.capture import stream as capture_stream
from oltsim.config import load_settings
from oltsim.model import events
from oltsim.model.builder import build_olt
from oltsim.model.errors import InvalidArgument, NotFound, ResourceExhausted
from oltsim.omci import codec
from oltsim.omci.responder import OmciResponder
from oltsim.packets.engine import ProtocolEngine
from oltsim.tap import FramePath
from oltsim.southbound.builtin import BuiltinAdapter
from oltsim.southbound.openolt import IndicationHub, OpenoltServicer

DHCP_OK = "dhcp_ack_received"
STEP = 0.1
EPOCH = 1_700_000_000.0


class Rig:
    """The daemon's southbound in memory with the capture ring wired as oltsim.tap wires it."""

    def __init__(self, size: int = 20_000, **given):
        settings = {"pon": 2, "onu": 2, "uni": 2, "olt_id": 10}
        settings.update(given)
        self.settings = load_settings(settings, None)
        self.clock = Clock()
        self.clock.advance(EPOCH)
        path = FramePath(OmciResponder.from_settings(self.settings), ProtocolEngine.from_settings(self.settings))
        self.olt = build_olt(self.settings, self.clock, random.Random(0), omci=path.omci, frames=path.frames)
        path.attach(self.olt)
        self.capture = Capture(self.olt, size) if size else None
        self.hub = IndicationHub(self.olt)
        self.adapter = BuiltinAdapter(self.olt, self.hub, OpenoltServicer(self.olt, self.hub, self.capture),
                                      self.clock, random.Random(1), reachable=lambda: True)
        self.olt.start()
        self.adapter.startService()

    def run_until_up(self, seconds: float = 120) -> None:
        for _ in range(round(seconds / STEP)):
            if all(s.dhcp_state == DHCP_OK for s in self.olt.onus[0].services) and all(
                    s.dhcp_state == DHCP_OK for onu in self.olt.onus for s in onu.services):
                return
            self.clock.advance(STEP)
        raise AssertionError("the ONUs did not come up")

    def stop(self) -> None:
        if self.capture is not None:
            self.capture.close()
        self.adapter.stopService()
        self.hub.end_all()
        self.olt.stop()


@pytest.fixture
def rig():
    made = []

    def make(**given) -> Rig:
        made.append(Rig(**given))
        return made[-1]

    yield make
    for one in made:
        one.stop()


def read_all(stream) -> bytes:
    """Everything a stream has to give now (its ring part comes a chunk a read)."""
    data = b""
    for _ in range(100_000):
        piece = stream.read()
        if not piece:
            return data
        data += piece
    raise AssertionError("the stream never ran dry")


def packets(data: bytes) -> list[tuple[str, bytes, str]]:
    """(interface name, packet bytes, comment) of every EPB of a pcapng file, read with oltsim's block reader."""
    names, out = [], []
    for block_type, body in pcapng.read_blocks(data):
        if block_type == pcapng.IDB:
            names.append(_option(body[8:], pcapng.IF_NAME))
        elif block_type == pcapng.EPB:
            interface, _, _, captured, _ = struct.unpack_from("<IIIII", body)
            packet = body[20:20 + captured]
            options = body[20 + captured + (-captured % 4):]
            out.append((names[interface], packet, _option(options, pcapng.OPT_COMMENT)))
    return out


def _option(options: bytes, code: int) -> str:
    offset = 0
    while offset + 4 <= len(options):
        got, length = struct.unpack_from("<HH", options, offset)
        if got == 0:
            break
        if got == code:
            return options[offset + 4:offset + 4 + length].decode()
        offset += 4 + length + (-length % 4)
    return ""


def test_a_bring_up_records_the_omci_of_each_onu_request_before_answer_and_its_packets(rig):
    """Every ONU's MIB reset, upload and uploads-next are in the ring, each request followed by its answer with the
    same transaction id, and its UNIs' EAPOL and DHCP and the NNI's DHCP are there too."""
    r = rig()
    r.run_until_up()
    onu = r.olt.onus[0]
    omci = [rec for rec in r.capture.records if rec[capture_ring.POINT] == capture_ring.OMCI
            and rec[capture_ring.SERIAL] == onu.serial]
    assert omci[0][capture_ring.UP] is False and omci[0][capture_ring.DATA][2] & 0x1F == codec.MIB_RESET
    exchanged = [rec for rec in omci if rec[capture_ring.DATA][:2] != b"\x00\x00"]   # not autonomous (tid 0)
    for request, answer in zip(exchanged[0::2], exchanged[1::2]):
        assert (request[capture_ring.UP], answer[capture_ring.UP]) == (False, True)
        assert request[capture_ring.DATA][:2] == answer[capture_ring.DATA][:2]        # transaction id
        assert answer[capture_ring.DATA][2] == (request[capture_ring.DATA][2] & 0x1F) | 0x20   # AK, not AR
    types = [rec[capture_ring.DATA][2] & 0x1F for rec in omci if not rec[capture_ring.UP]]
    assert types.count(codec.MIB_UPLOAD_NEXT) > 100 and (codec.SET in types or codec.CREATE in types)
    kinds = {(rec[capture_ring.POINT], rec[capture_ring.UP]) for rec in r.capture.records}
    assert {(capture_ring.UNI, True), (capture_ring.UNI, False), (capture_ring.NNI, True),
            (capture_ring.NNI, False)} <= kinds


def test_annotations_take_their_place_in_the_timeline(rig):
    """A power cut of an ONU shows as a state change and a dying gasp alarm between the frames around it."""
    r = rig()
    r.run_until_up()
    onu = r.olt.onus[1]
    before = r.capture.recorded
    onu.power_off()
    later = list(r.capture.records)[-(r.capture.recorded - before):]
    texts = [annotation_text(rec[capture_ring.DATA]) for rec in later
             if rec[capture_ring.POINT] == capture_ring.EVENT]
    assert any("dying_gasp_ind" in t and onu.serial in t for t in texts), texts
    assert any(t.startswith(f"ONU {onu.serial} InternalState") for t in texts), texts


def test_the_ring_keeps_its_last_records_and_its_byte_budget(rig):
    """The ring holds at most `size` records and size x FRAME_BUDGET bytes of frames, the newest."""
    r = rig(size=100)
    r.run_until_up()
    assert len(r.capture.records) == 100 and r.capture.recorded > 1000
    assert r.capture.frame_bytes <= 100 * capture_ring.FRAME_BUDGET
    onu = r.olt.onus[0]
    for _ in range(5):
        r.capture.uplink_out(0, b"\x00" * 3000)   # cut to SNAPLEN, and evicting to stay in budget
    last = r.capture.records[-1]
    assert len(last[capture_ring.DATA][0]) == capture_ring.SNAPLEN and last[capture_ring.DATA][1] == 3000
    assert r.capture.frame_bytes <= 100 * capture_ring.FRAME_BUDGET
    assert onu.serial


def test_with_capture_off_nothing_listens_and_the_southbound_sees_none(rig):
    """Size 0: no Capture, no listener; the ONUs come up all the same."""
    r = rig(size=0)
    before = len(r.olt.hub._listeners)
    r.run_until_up()
    assert r.capture is None and len(r.olt.hub._listeners) == before


def test_a_record_costs_about_its_documented_overhead():
    """RECORD_OVERHEAD, the documented bytes per record besides its frame's octets (the bytes object's header
    included: the ring keeps the frame alive), holds within 15 % (tracemalloc)."""
    clock = Clock()
    clock.advance(EPOCH)
    olt = build_olt(load_settings({"pon": 1, "onu": 1}, None), clock, random.Random(0))
    capture = Capture(olt, 10_000)
    onu = olt.onus[0]
    frames = [bytes([i % 256]) * 48 for i in range(10_000)]     # the frames exist already on the hot path
    tracemalloc.start()
    start = tracemalloc.get_traced_memory()[0]
    for frame in frames:
        capture.packet_out(onu, 0, 1024 + 1000, frame)
    used = tracemalloc.get_traced_memory()[0] - start
    tracemalloc.stop()
    per_record = used / 10_000
    frame_object = sys.getsizeof(frames[0])
    assert per_record + frame_object - 48 == pytest.approx(capture_ring.RECORD_OVERHEAD, rel=0.15), per_record


def test_filters_keep_exactly_what_they_say(rig):
    """--onu keeps that ONU's OMCI and UNI frames, its subscribers' NNI frames and annotations about it or the OLT;
    --pon the same for a PON; --omci only OMCI; --packets only UNI and NNI frames."""
    r = rig()
    r.run_until_up()
    first, other = r.olt.onus[0], r.olt.onus[3]
    only = CaptureFilter.of(onus=[first.serial.upper()])
    kept = r.capture.select(only)
    assert kept and {rec[capture_ring.SERIAL] for rec in kept if rec[capture_ring.POINT] in (0, 1)} == {first.serial}
    nni = [rec for rec in kept if rec[capture_ring.POINT] == capture_ring.NNI]
    assert nni and all(r.capture.nni_owner(rec)[0] == first.serial for rec in nni)
    assert all(rec[capture_ring.SERIAL] in ("", first.serial) for rec in kept
               if rec[capture_ring.POINT] == capture_ring.EVENT)
    assert not [rec for rec in kept if rec[capture_ring.SERIAL] == other.serial]
    pon1 = r.capture.select(CaptureFilter.of(pon=1))
    assert {rec[capture_ring.PON] for rec in pon1 if rec[capture_ring.POINT] in (0, 1)} == {1}
    omci = r.capture.select(CaptureFilter.of(omci=True))
    assert {rec[capture_ring.POINT] for rec in omci} == {capture_ring.OMCI, capture_ring.EVENT}
    pkts = r.capture.select(CaptureFilter.of(packets=True))
    assert {rec[capture_ring.POINT] for rec in pkts} == {capture_ring.UNI, capture_ring.NNI, capture_ring.EVENT}
    assert len(r.capture.select(CaptureFilter.of(omci=True, packets=True))) == len(r.capture.records)
    with pytest.raises(NotFound):
        r.capture.check(CaptureFilter.of(onus=["BBSM99999999"]))
    with pytest.raises(NotFound):
        r.capture.check(CaptureFilter.of(pon=7))


def test_since_selects_the_last_seconds(rig):
    """since=N keeps the records of the clock's last N seconds."""
    r = rig()
    r.run_until_up()
    r.clock.advance(30)
    r.olt.onus[0].power_off()
    recent = r.capture.select(since=5)
    assert recent and all(rec[capture_ring.TIME] >= r.clock.seconds() - 5 for rec in recent)
    assert len(recent) < len(r.capture.records)


def test_snapshot_is_pcapng_with_one_interface_per_capture_point_and_comments(rig):
    """The snapshot names its interfaces `<serial> omci`, `<serial> uni-<n>`, `nni-0` and `events`; OMCI frames are
    Ethernet 0x88b5 from the OLT's to the ONU's address and back, and comments carry serial, GEM port and service."""
    r = rig()
    r.run_until_up()
    onu = r.olt.onus[1]
    data = r.capture.snapshot()
    assert data[:4] == struct.pack("<I", pcapng.SHB)
    got = packets(data)
    names = {name for name, _, _ in got}
    assert {f"{onu.serial} omci", f"{onu.serial} uni-0", f"{onu.serial} uni-1", "nni-0", "events"} <= names
    omci = [(p, c) for name, p, c in got if name == f"{onu.serial} omci"]
    onu_mac = bytes((2, 0, 10, onu.pon.id, 0, onu.onu_id))
    request, comment = omci[0]
    assert request[:6] == onu_mac and request[12:14] == b"\x88\xb5" and "omci=mib-reset" in comment
    assert omci[1][0][6:12] == onu_mac
    uni = [c for name, _, c in got if name == f"{onu.serial} uni-0"]
    assert all(f"serial={onu.serial}" in c and "gem=" in c for c in uni)
    assert any("service=" in c for c in uni)


def test_a_live_stream_follows_the_ring_and_ends_after_count(rig):
    """A stream opened with since gets the ring's last seconds, then new frames; count ends it."""
    r = rig()
    r.run_until_up()
    stream = r.capture.open_stream(CaptureFilter.of(omci=True), since=3600)
    first = read_all(stream)
    assert len(packets(first)) > 100 and stream.ended is None
    woken = []
    stream.wakeup = lambda: woken.append(stream.pending)
    r.olt.onus[0].power_off()
    r.clock.advance(10)
    assert woken and stream.read()
    counted = r.capture.open_stream(count=3)
    r.olt.onus[0].power_on()
    for _ in range(100):
        if counted.ended:
            break
        r.clock.advance(STEP)
    assert counted.ended == "count" and counted.frames == 3 and counted not in r.capture.streams
    assert len([p for p in packets(counted.read()) if p[0] != "events"]) == 3


def test_a_stream_ends_after_its_duration_and_when_the_olt_stops(rig):
    """duration ends a stream on the clock (its timer then gone); close() ends the rest with a last annotation."""
    r = rig()
    timed = r.capture.open_stream(duration=5)
    live = r.capture.open_stream()
    r.clock.advance(5)
    assert timed.ended == "duration"
    r.capture.close()
    assert live.ended == "stopped" and packets(live.read())[-1][2] == "capture ended: oltsim is stopping"
    with pytest.raises(InvalidArgument):
        r.capture.open_stream(count=0)


def test_a_reader_that_stops_reading_costs_at_most_the_limit_and_is_told_of_the_drops(rig):
    """Beyond its limit a stream drops frames (counted); once read, an annotation says how many were dropped."""
    r = rig()
    stream = r.capture.open_stream(limit=20_000)
    whole = stream.read()
    r.run_until_up()
    assert stream.dropped > 0 and stream.pending <= 20_000 + 4096
    whole += stream.read()
    r.olt.onus[0].power_off()
    whole += stream.read()
    notes = [c for name, _, c in packets(whole) if name == "events" and c.startswith("oltsim dropped")]
    assert notes == [f"oltsim dropped {stream.dropped} frames here: the capture's reader fell 20000 bytes behind"]


def test_open_streams_are_bounded(rig):
    """MAX_STREAMS live streams at most; one more is refused, a closed one makes room."""
    r = rig()
    streams = [r.capture.open_stream() for _ in range(capture_ring.MAX_STREAMS)]
    with pytest.raises(ResourceExhausted):
        r.capture.open_stream()
    streams[0].close()
    r.capture.open_stream()


def test_the_pcapng_blocks_are_padded_and_framed():
    """Each block's two lengths agree and are multiples of 4; an EPB carries its captured and original lengths."""
    data = (pcapng.section_header("oltsim") + pcapng.interface_description(1, "nni-0", "d")
            + pcapng.enhanced_packet(0, 1.5, b"\x01\x02\x03", original_length=9, comment="c", flags=1))
    offset = 0
    while offset < len(data):
        length = struct.unpack_from("<I", data, offset + 4)[0]
        assert length % 4 == 0 and struct.unpack_from("<I", data, offset + length - 4)[0] == length
        offset += length
    blocks = list(pcapng.read_blocks(data))
    assert [t for t, _ in blocks] == [pcapng.SHB, pcapng.IDB, pcapng.EPB]
    assert struct.unpack_from("<IIIII", blocks[2][1]) == (0, 0, 1_500_000, 3, 9)


def test_omci_summary_names_type_me_and_tid():
    """The comment's OMCI summary reads the G.988 header: transaction id, message type (AK), ME class and id."""
    message = codec.encode(0x1234, codec.MIB_UPLOAD_NEXT, codec.ONU_DATA, 0, b"\x00\x05")
    assert omci_summary(message) == "omci=mib-upload-next me=ONU data(2)/0 tid=0x1234" or \
        omci_summary(message).startswith("omci=mib-upload-next me=")
    assert "events" not in omci_summary(b"\x00")


def test_annotations_name_what_happened():
    """Each annotated event reads as one line for people."""
    assert annotation_text(events.OnuDiscovery(0, "BBSM000a0001")) == \
        "OnuDiscInd: ONU BBSM000a0001 discovered on PON 0"
    assert "scenario-step-started wave step 'cut' (power_off) targets BBSM000a0001" in annotation_text(
        events.ScenarioEvent("scenario-step-started", "wave", "cut", "power_off", ("BBSM000a0001",)))


def test_the_ring_size_is_a_setting_with_its_yaml_key(tmp_path):
    """--capture-size / bbsim.capture_size: 20,000 by default, 0 turns capture off, negative is refused."""
    from oltsim.config import ConfigError
    assert load_settings({}, None).capture_size == 20_000
    path = tmp_path / "bbsim.yaml"
    path.write_text("bbsim:\n  capture_size: 0\n")
    assert load_settings({}, str(path)).capture_size == 0
    assert load_settings({"capture_size": "500"}, str(path)).capture_size == 500
    with pytest.raises(ConfigError):
        load_settings({"capture_size": -1}, None)


def test_duration_zero_is_the_ring_and_an_end(rig):
    """open_stream(since=inf, duration=0): the whole ring, then ended at once (a download), never counted as live."""
    r = rig()
    r.run_until_up()
    stream = r.capture.open_stream(since=float("inf"), duration=0)
    assert stream.ended == "duration" and stream not in r.capture.streams
    assert len(packets(read_all(stream))) == len(r.capture.records)


def test_the_rest_query_and_durations_parse_as_documented():
    """GET /v1/capture's parameters: repeated or comma-separated onu, flags alone or true/false, 5m / all / 0;
    anything else is InvalidArgument naming the parameter."""
    from oltsim.api.v1.capture_v1 import parse_query
    from oltsim.capture.durations import parse_seconds
    got = parse_query({"onu": ["BBSM000a0001,BBSM000a0002", "BBSM000a0003"], "pon": ["1"], "omci": [""],
                       "packets": ["false"], "since": ["5m"], "duration": ["0"], "count": ["7"]})
    assert got["capture_filter"] == CaptureFilter.of(["BBSM000a0001", "BBSM000a0002", "BBSM000a0003"], 1, True)
    assert (got["since"], got["duration"], got["count"]) == (300.0, 0.0, 7)
    assert parse_query({"since": ["all"]})["since"] == float("inf")
    assert parse_seconds("1h30m") == 5400 and parse_seconds("250ms") == 0.25 and parse_seconds("12") == 12
    for bad in ({"since": ["soon"]}, {"count": ["0"]}, {"pon": ["-1"]}, {"omci": ["maybe"]}, {"onus": ["x"]}):
        with pytest.raises(InvalidArgument, match=next(iter(bad)) if "onus" not in bad else "unknown"):
            parse_query(bad)


def test_a_stalled_reader_of_the_whole_ring_holds_its_records_not_a_copy(rig):
    """since=all writes the ring's part as the reader reads, a chunk at a time: opened and not read, a stream holds
    no pcapng of the ring; live frames wait behind it up to QUEUE_LIMIT, beyond which they are dropped and told
    after the ones that waited; read to the end, the file is the whole ring then the live frames, in order."""
    r = rig()
    r.run_until_up()
    ring_records = len(r.capture.records)
    stream = r.capture.open_stream(since=float("inf"))
    assert stream.pending > 0 and stream._size < 4096  # the header only
    first = stream.read()
    assert 0 < len(first) <= capture_stream.READ_CHUNK + 4096
    r.olt.onus[0].power_off()
    r.olt.onus[0].power_on()
    for _ in range(200):
        r.clock.advance(STEP)
    whole = first + read_all(stream)
    got = packets(whole)
    assert len([p for p in got if p[0] != "events"]) + stream.dropped >= ring_records - 1
    assert stream._backlog == deque() and stream._queued == 0
    comments = [c for _, _, c in got]
    gasp = next(i for i, c in enumerate(comments) if "dying" in c.lower() or "power" in c.lower())
    assert gasp > ring_records // 2  # the power cycle comes after the ring's part, not inside it


def test_live_frames_behind_an_unread_ring_part_are_bounded(rig, monkeypatch):
    """Beyond QUEUE_LIMIT live records waiting behind the ring's part, frames are dropped, counted, and told by an
    annotation after those that waited."""
    monkeypatch.setattr(capture_stream, "QUEUE_LIMIT", 5)
    r = rig()
    r.run_until_up()
    stream = r.capture.open_stream(since=float("inf"))
    r.olt.onus[0].power_off()
    r.olt.onus[0].power_on()
    for _ in range(200):
        r.clock.advance(STEP)
    assert stream._queued == 5 and stream.dropped > 0
    whole = read_all(stream)
    r.olt.onus[0].power_off()
    whole += read_all(stream)
    notes = [c for name, _, c in packets(whole) if name == "events" and c.startswith("oltsim dropped")]
    assert notes and notes[0].startswith(f"oltsim dropped {stream.dropped} frames here")
