"""What the capture ring no longer holds is said: the default ring holds each ONU's whole bring-up (a floor
per ONU), a capture reports that the ring wrapped and the time of its oldest record (overall and for the ONU asked)
in the file, in REST's headers and in gRPC's first CaptureChunk, and oltsimctl says it and exits 1 with one line when
it wrote no frame. In memory, on a fake clock, with the built-in adapter (tests/unit/test_capture_ring.py's rig)."""
from __future__ import annotations

import io
import random
import types

import pytest
from twisted.internet.task import Clock

from test_capture_ring import EPOCH, packets, read_all, rig  # noqa: F401 (rig is a fixture)

from oltsim.api.v1.capture_v1 import coverage_headers, parse_query
from oltsim.api.v1.grpc_v1 import coverage_to_pb
from oltsim.capture import Capture, CaptureFilter, pcapng
from oltsim.capture import ring as capture_ring
from oltsim.config import load_settings
from oltsim.ctl import capture_cli
from oltsim.ctl.connection import CtlError
from oltsim.model.builder import build_olt
from oltsim.model.errors import InvalidArgument, NotFound


def test_the_default_ring_is_sized_by_the_olts_onus():
    """No size given: DEFAULT_SIZE for a small OLT, ONU_RECORDS + UNI_RECORDS a UNI for each ONU of a 16x32 one
    (more than 20,000), the 4 UNIs of each counted."""
    for pon, onu, expected in ((1, 4, capture_ring.DEFAULT_SIZE),
                               (16, 32, 512 * (capture_ring.ONU_RECORDS + 4 * capture_ring.UNI_RECORDS))):
        clock = Clock()
        olt = build_olt(load_settings({"pon": pon, "onu": onu, "uni": 4}, None), clock, random.Random(0))
        capture = Capture(olt)
        try:
            assert capture.size == expected and capture.budget == expected * capture_ring.FRAME_BUDGET
        finally:
            capture.close()
    assert Capture(olt, 123).size == 123  # a size given is that size
    # the daemon's ring (--capture-size): the size given, or the ONUs' floor when that is more
    small = build_olt(load_settings({"pon": 1, "onu": 4, "uni": 4}, None), Clock(), random.Random(0))
    floor = 4 * (capture_ring.ONU_RECORDS + 4 * capture_ring.UNI_RECORDS)
    assert Capture.for_olt(small, 1000).size == floor and Capture.for_olt(small, 50_000).size == 50_000
    # the floor's records beyond the size given hold FLOOR_FRAME_BUDGET bytes of frames each, the others FRAME_BUDGET
    assert Capture.for_olt(small, 1000).budget == (1000 * capture_ring.FRAME_BUDGET
                                                   + (floor - 1000) * capture_ring.FLOOR_FRAME_BUDGET)
    assert Capture.for_olt(small, 50_000).budget == 50_000 * capture_ring.FRAME_BUDGET


def test_the_floor_stops_at_floor_max_so_a_large_olt_does_not_spend_hundreds_of_mib_unasked():
    """16x256 with 4 UNIs would need 3,031,040 records of floor (about 480 MiB): the daemon's ring keeps FLOOR_MAX,
    and a --capture-size above that is still the size kept."""
    olt = build_olt(load_settings({"pon": 16, "onu": 256, "uni": 4}, None), Clock(), random.Random(0))
    assert 4096 * (capture_ring.ONU_RECORDS + 4 * capture_ring.UNI_RECORDS) > capture_ring.FLOOR_MAX
    assert capture_ring.onu_floor(olt) == capture_ring.FLOOR_MAX == capture_ring.auto_size(olt)
    assert Capture.for_olt(olt, capture_ring.DEFAULT_SIZE).size == capture_ring.FLOOR_MAX
    assert Capture.for_olt(olt, 2_000_000).size == 2_000_000


def test_the_floor_per_onu_keeps_each_onus_whole_bring_up(rig, monkeypatch):
    """With the floor deciding the size (DEFAULT_SIZE made small), a one-ONU capture of the whole ring after every
    ONU came up holds that first ONU's whole bring-up: its ActivateOnu, MIB reset, flows, EAPOL and DHCP; and the
    ring did not wrap."""
    monkeypatch.setattr(capture_ring, "DEFAULT_SIZE", 10)
    shape = {"pon": 2, "onu": 4, "uni": 4, "olt_id": 10}
    default = capture_ring.auto_size(build_olt(load_settings(shape, None), Clock(), random.Random(0)))
    r = rig(size=default, **shape)
    r.run_until_up()
    capture = r.capture
    first = r.olt.onus[0]
    assert capture.size == 8 * (capture_ring.ONU_RECORDS + 4 * capture_ring.UNI_RECORDS)
    assert not capture.wrapped
    stream = capture.open_stream(CaptureFilter.of([first.serial]), since=float("inf"), duration=0)
    rows = packets(read_all(stream))
    comments = [comment for _, _, comment in rows]
    assert any(f"ActivateOnu for ONU {first.serial}" in c for c in comments)
    assert any("omci=mib-reset " in c for c in comments)
    assert any(c.startswith("flow ") and " added " in c for c in comments)
    uni = [packet for name, packet, _ in rows if name.endswith("uni-0")]
    assert any(p[12:14] == b"\x88\x8e" for p in uni)                       # EAPOL
    assert any(b"\x63\x82\x53\x63\x35\x01\x05" in p for p in uni)          # DHCP ACK (magic cookie, option 53 = 5)
    its_first = next(rec[capture_ring.TIME] for rec in capture.records if rec[capture_ring.SERIAL] == first.serial)
    assert stream.coverage.onus == ((first.serial, its_first),)


def test_a_wrapped_ring_says_so_in_the_file_and_in_its_coverage(rig):
    """A ring too small for a bring-up: the coverage says it wrapped, its oldest record's time, the asked ONU's oldest
    kept record (none for an ONU it keeps nothing of); the ring's part starts with an annotation saying so."""
    r = rig(size=300, pon=2, onu=2)
    r.run_until_up()
    capture = r.capture
    first, last = r.olt.onus[0], r.olt.onus[-1]
    # what is left of the first ONU, if anything, is after the ring's oldest record
    coverage = capture.coverage(CaptureFilter.of([first.serial.lower(), last.serial]), since=float("inf"))
    assert coverage.wrapped and coverage.short and coverage.size == 300
    assert coverage.oldest == capture.records[0][capture_ring.TIME]
    kept = {s: t for s, t in coverage.onus}
    assert set(kept) == {first.serial.lower(), last.serial}
    newest_last = [rec[capture_ring.TIME] for rec in capture.records if rec[capture_ring.SERIAL] == last.serial]
    assert kept[last.serial] == newest_last[0]
    assert "the capture ring wrapped: it keeps 300 records, from " in coverage.text()
    stream = capture.open_stream(CaptureFilter.of([last.serial]), since=float("inf"), duration=0)
    name, _, comment = packets(read_all(stream))[0]
    assert name == "events" and comment.startswith("the capture ring wrapped") and "--capture-size" in comment
    # a second later, its last 50 ms are covered: no report, nothing added to the file
    r.clock.advance(1.0)
    recent = capture.open_stream(since=0.05, duration=0)
    assert not recent.coverage.short
    assert not any(c.startswith("the capture ring wrapped") for _, _, c in packets(read_all(recent)))


def test_a_ring_that_did_not_wrap_reports_nothing(rig):
    """Until it lets a record go, the ring's coverage is not wrapped and its file has no such annotation."""
    r = rig(size=20_000, pon=1, onu=1)
    r.run_until_up()
    stream = r.capture.open_stream(since=float("inf"), duration=0)
    assert not stream.coverage.wrapped and stream.coverage.text() == ""
    assert not any(c.startswith("the capture ring wrapped") for _, _, c in packets(read_all(stream)))


def test_rest_headers_and_the_grpc_message_carry_the_coverage():
    """REST: X-Oltsim-Ring-Wrapped/-Size/-Oldest/-Oldest-Onu (ISO 8601 UTC, `none` for an ONU it keeps nothing of);
    gRPC: CaptureCoverage with 0 for none. oltsimctl reads both back to the same Reach."""
    coverage = capture_ring.Coverage(True, EPOCH + 0.25, EPOCH + 10, 500,
                                     (("BBSM00000001", EPOCH + 1.5), ("BBSM00000002", None)), float("inf"))
    headers = coverage_headers(coverage)
    assert headers == {"X-Oltsim-Ring-Wrapped": "yes", "X-Oltsim-Ring-Size": "500",
                       "X-Oltsim-Ring-Oldest": "2023-11-14T22:13:20.250Z",
                       "X-Oltsim-Ring-Oldest-Onu": "BBSM00000001=2023-11-14T22:13:21.500Z, BBSM00000002=none",
                       "X-Oltsim-Ring-Now": "2023-11-14T22:13:30.000Z"}
    message = coverage_to_pb(coverage)
    assert message.wrapped and message.size == 500 and message.oldest == EPOCH + 0.25 and message.now == EPOCH + 10
    assert dict(message.onu_oldest) == {"BBSM00000001": EPOCH + 1.5, "BBSM00000002": 0.0}
    from_rest, from_grpc = capture_cli.Reach.of_headers(headers), capture_cli.Reach.of_pb(message)
    assert from_rest == from_grpc == capture_cli.Reach(True, 500, EPOCH + 0.25,
                                                       {"BBSM00000001": EPOCH + 1.5, "BBSM00000002": None},
                                                       EPOCH + 10)
    assert coverage_headers(capture_ring.Coverage(False, None, EPOCH, 20_000)) == {
        "X-Oltsim-Ring-Wrapped": "no", "X-Oltsim-Ring-Size": "20000",
        "X-Oltsim-Ring-Now": "2023-11-14T22:13:20.000Z"}
    # how far back the ring reaches is reckoned on the server's clock when it says it, not this machine's
    skewed = capture_cli.Reach(True, 500, EPOCH, {}, EPOCH + 11.7)
    assert "the last 11.7 s" in capture_cli.reach_line(_args(since="1m"), skewed, EPOCH + 3600)


def _args(**given):
    values = dict(write="onu.pcapng", onus=None, pon=None, omci=False, packets=False, since=None, duration=None,
                  count=None, rest=None)
    values.update(given)
    return types.SimpleNamespace(**values)


def test_oltsimctl_says_what_the_ring_no_longer_held():
    """`--since` reaching before the ring's oldest record of a wrapped ring: one line with how much it held, from
    when, the ONU's oldest kept, and the setting to raise; nothing when the ring held all that was asked."""
    reach = capture_cli.Reach(True, 20_000, EPOCH, {"BBSM00000001": None})
    line = capture_cli.reach_line(_args(since="1m", onus=["BBSM00000001"]), reach, EPOCH + 11.7)
    assert line.startswith("the ring wrapped: it held only the last 11.7 s (from 22:13:20 UTC) of the 60 s asked")
    assert "nothing of BBSM00000001" in line and "--capture-size" in line
    assert capture_cli.reach_line(_args(since="5s"), reach, EPOCH + 11.7) == ""
    assert capture_cli.reach_line(_args(since="1m"), capture_cli.Reach(False, 20_000, EPOCH), EPOCH + 11.7) == ""
    assert capture_cli.reach_line(_args(since="all"), reach, EPOCH + 3).startswith(
        "the ring wrapped: it held only the last 3.0 s (from 22:13:20 UTC), nothing of BBSM00000001; older")


def _pcapng(*notes: str, frames: int = 0) -> bytes:
    """A capture as the server writes it: a Section Header, then annotations and `frames` UNI frames."""
    clock = Clock()
    clock.advance(EPOCH)
    olt = build_olt(load_settings({"pon": 1, "onu": 1}, None), clock, random.Random(0))
    capture = Capture(olt, 100)
    writer = pcapng.PcapngWriter(capture)
    data = writer.header() + b"".join(writer.note(EPOCH, note) for note in notes)
    for _ in range(frames):
        data += writer.block((EPOCH, capture_ring.NNI, True, "", -1, -1, 0, 0, b"\xff" * 60))
    capture.close()
    return data


class _Out(io.StringIO):
    def __init__(self):
        super().__init__()
        self.buffer = io.BytesIO()


def test_a_capture_that_writes_no_frame_exits_1_with_one_line_and_leaves_no_empty_file(tmp_path):
    """Annotations alone are no frame: exit 1 (CtlError), one line naming the file, why (the ring wrapped, nothing of
    the ONU) and what to do; a file of a Section Header alone is removed. With frames: the count, exit 0."""
    target = tmp_path / "onu.pcapng"
    args = _args(write=str(target), onus=["BBSM00000001"], since="all", duration="0")
    reach = capture_cli.Reach(True, 20_000, EPOCH, {"BBSM00000001": None})
    with pytest.raises(CtlError) as failure:
        capture_cli._copy(iter([_pcapng()]), args, _Out(), io.StringIO(), reach, EPOCH + 5)
    message = str(failure.value)
    assert failure.value.code == 1 and "\n" not in message
    assert message.startswith(f"no frame written to {target}: the ring holds nothing of BBSM00000001 (it wrapped")
    assert "--capture-size" in message and not target.exists()
    err = io.StringIO()
    with pytest.raises(CtlError, match="no frame written"):
        capture_cli._copy(iter([_pcapng("a state change")]), args, _Out(), err, reach, EPOCH + 5)
    assert target.exists()  # its annotation is worth reading
    assert err.getvalue().startswith("oltsimctl: the ring wrapped: it held only the last 5.0 s (from 22:13:20 UTC)")
    # a wrapped ring that still covers the last second asked: the reason is the window, not the wrap
    with pytest.raises(CtlError) as failure:
        capture_cli._copy(iter([_pcapng()]), _args(write=str(target), onus=["BBSM00000001"], since="1s",
                                                   duration="0"), _Out(), io.StringIO(), reach, EPOCH + 5)
    assert str(failure.value).startswith(f"no frame written to {target}: the ring holds no frame of BBSM00000001 "
                                         f"from the last 1s")
    err = io.StringIO()
    assert capture_cli._copy(iter([_pcapng("x", frames=3)]), args, _Out(), err, None, EPOCH) == 0
    assert err.getvalue().startswith(f"3 packets and 1 annotations written to {target}")


def test_a_live_capture_with_nothing_yet_is_told_once(monkeypatch):
    """A live capture with a filter that wrote no frame QUIET_NOTICE seconds after its start says so, once."""
    monkeypatch.setattr(capture_cli, "QUIET_NOTICE", 0.01)
    err = io.StringIO()
    notice = capture_cli._Notice(_args(onus=["BBSM00000001"]), err)
    notice.start()
    notice.timer.join(5)
    assert err.getvalue() == ("oltsimctl: no frame matched --onu BBSM00000001 in 0.01 s; still capturing "
                              "(Ctrl-C ends)\n")
    assert capture_cli._Notice(_args(onus=["x"], duration="0"), err).timer is None   # not live: no notice
    assert capture_cli._Notice(_args(), err).timer is None                            # no filter: no notice


def test_an_unknown_onu_names_the_nearest_and_since_names_what_it_takes(rig):
    """An unknown serial in a capture's filter is NotFound with the nearest serial; since=forever is InvalidArgument
    naming `all` and a duration, on REST/gRPC and in oltsimctl."""
    r = rig(size=1000, pon=1, onu=2)
    serial = r.olt.onus[1].serial
    with pytest.raises(NotFound, match=f"ONU {serial[:-1]} not found on this OLT; did you mean {serial}\\?"):
        r.capture.check(CaptureFilter.of([serial[:-1]]))
    with pytest.raises(NotFound, match="oltsimctl onu list"):
        r.capture.check(CaptureFilter.of(["nothing-like-it"]))
    with pytest.raises(InvalidArgument, match=r"since must be all \(the whole ring\) or a duration such as 30s"):
        parse_query({"since": ["forever"]})
    with pytest.raises(CtlError, match=r"--since must be all \(the whole ring\) or a duration"):
        capture_cli.query(_args(since="forever"))


def test_annotations_on_their_own_interface_are_counted_apart():
    """oltsimctl counts frames and annotations by their interface's link type, across pieces of the stream."""
    data = _pcapng("one", "two", frames=2)
    blocks = capture_cli.Blocks()
    whole = blocks.take(data[:100])
    whole += blocks.take(data[whole:])
    assert whole == len(data) and (blocks.packets, blocks.frames) == (4, 2)
