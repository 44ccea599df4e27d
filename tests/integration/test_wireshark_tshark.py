"""A capture read with Debian's tshark, as a user first opens it: without oltsim.lua, the annotations' rows show
their text (not blank); with `-X lua_script:oltsim.lua` (the file the package installs), OMCI shows as OMCI with
its message type, ME class and instance in G.988's words, display filters on its fields work, and the annotations
read as oltsim rows. The capture is an in-memory bring-up of one ONU by the built-in adapter (fake clock)."""
from __future__ import annotations

import os
import random
import re
import subprocess
from pathlib import Path

import pytest
from twisted.internet.task import Clock

from oltsim.capture import Capture
from oltsim.capture.wireshark import LUA_PATH
from oltsim.config import load_settings
from oltsim.model.builder import build_olt
from oltsim.omci.responder import OmciResponder
from oltsim.packets.engine import ProtocolEngine
from oltsim.tap import FramePath
from oltsim.southbound.builtin import BuiltinAdapter
from oltsim.southbound.openolt import IndicationHub, OpenoltServicer
from tshark import RUN_TIMEOUT, ensure_tshark

STEP = 0.1
EPOCH = 1_700_000_000.0


@pytest.fixture(scope="module")
def capture_file(tmp_path_factory):
    """The pcapng of OLT 10 bringing one ONU (BBSM000a0001) up to DHCP, as `oltsimctl capture --since all`
    writes it."""
    ensure_tshark()
    settings = load_settings({"pon": 1, "onu": 1, "uni": 1, "olt_id": 10}, None)
    clock = Clock()
    clock.advance(EPOCH)
    omci = OmciResponder.from_settings(settings)
    engine = ProtocolEngine.from_settings(settings)
    path = FramePath(omci, engine)
    olt = build_olt(settings, clock, random.Random(0), omci=path.omci, frames=path.frames)
    path.attach(olt)
    capture = Capture(olt, 20_000)
    hub = IndicationHub(olt)
    adapter = BuiltinAdapter(olt, hub, OpenoltServicer(olt, hub, capture), clock, random.Random(1),
                             reachable=lambda: True)
    olt.start()
    adapter.startService()
    try:
        for _ in range(1200):
            if all(s.dhcp_state == "dhcp_ack_received" for onu in olt.onus for s in onu.services):
                break
            clock.advance(STEP)
        else:
            raise AssertionError("the ONU did not come up")
        path = tmp_path_factory.mktemp("wireshark") / "bringup.pcapng"
        path.write_bytes(capture.snapshot())
    finally:
        capture.close()
        adapter.stopService()
        hub.end_all()
        olt.stop()
    return path


def tshark(*arguments: str) -> list[str]:
    """tshark's packet list (one line per packet) for `arguments`."""
    done = subprocess.run([ensure_tshark(), *arguments], capture_output=True, text=True, timeout=RUN_TIMEOUT,
                          env=dict(os.environ, HOME=os.environ.get("HOME", "/tmp")))
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def test_without_the_lua_annotation_rows_show_their_text_and_nothing_is_malformed(capture_file):
    """`tshark -r FILE` alone: the annotations' text is on their rows, and no packet is malformed."""
    rows = tshark("-r", str(capture_file))
    assert any("ONU BBSM000a0001 InternalState: discovered -> enabled" in row for row in rows)
    assert any("the adapter called ActivateOnu for ONU BBSM000a0001" in row for row in rows)
    assert not [row for row in rows if "Malformed" in row]


def test_with_the_lua_omci_reads_as_g988_message_types_and_me_classes(capture_file):
    """With oltsim.lua, OMCI rows name the message type (response when AK), ME class and instance, and the entity
    each MIB upload next answer carries; annotation rows say oltsim and their text."""
    rows = tshark("-X", f"lua_script:{LUA_PATH}", "-r", str(capture_file))
    text = "\n".join(rows)
    assert "Lua: Error" not in text and "Malformed" not in text
    assert " OMCI " in text and "0x88b5" not in text
    assert "MIB reset, ONU data (2) instance 0, tid 0x0001" in text
    assert "MIB reset response, ONU data (2) instance 0, tid 0x0001" in text
    assert "MIB upload next response, ONU data (2) instance 0" in text
    assert ": ANI-G (263) instance " in text
    assert "MIB upload response, ONU data (2) instance 0, tid 0x0002, " in text and " commands follow" in text
    assert "Set response, T-CONT (262) instance " in text
    assert any(" oltsim " in row and "OnuDiscInd: ONU BBSM000a0001 discovered on PON 0" in row for row in rows)


def test_with_the_lua_display_filters_on_omci_fields_work(capture_file):
    """omci.* fields filter: the GEM port network CTP creates and their answers, and nothing else."""
    rows = tshark("-X", f"lua_script:{LUA_PATH}", "-r", str(capture_file), "-Y",
                  "omci.me_class == 268 && omci.action == 4")
    assert rows
    assert all("Create" in row and "GEM port network CTP (268)" in row for row in rows)
    assert any("Create response" in row for row in rows)
    annotations = tshark("-X", f"lua_script:{LUA_PATH}", "-r", str(capture_file), "-Y",
                         'oltsim.annotation contains "MIB upload"')
    assert [row.split(" oltsim ", 1)[1].split(" ", 1)[1] for row in annotations] == [
        "ONU BBSM000a0001 MIB upload started", "ONU BBSM000a0001 MIB upload ended"]


def test_frame_comments_are_kept(capture_file):
    """Every packet still carries its comment (what older instructions filter on)."""
    rows = tshark("-r", str(capture_file), "-T", "fields", "-e", "frame.comment")
    assert rows and all(row.strip() for row in rows)
    assert any("omci=mib-upload-next" in row for row in rows)


def test_the_filter_docs_capture_md_gives_for_answers_selects_the_answers_only(capture_file):
    """The filter docs/capture.md names for OMCI answers keeps every answer and no request (`omci.ak` alone only
    tests that the bit is there, so it kept every OMCI frame)."""
    docs = (Path(__file__).resolve().parents[2] / "docs" / "capture.md").read_text()
    named = set(re.findall(r"`(omci\.ak[^`]*)`(?: the answers| \(answers\))", docs))
    assert len(named) == 1, named
    rows = tshark("-X", f"lua_script:{LUA_PATH}", "-r", str(capture_file), "-Y", named.pop())
    every = tshark("-X", f"lua_script:{LUA_PATH}", "-r", str(capture_file), "-Y", "omci")
    assert rows and all(" response" in row for row in rows)
    assert len(rows) == sum(" response" in row for row in every)
