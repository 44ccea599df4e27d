"""oltsim's Wireshark dissector (oltsim/data/wireshark/oltsim.lua) and the annotation packets it reads: the
installed file is exactly what the generator writes from the OMCI tables, names every class and message type the
codec knows in G.988's words, and ships with the package; annotations name a dissector that shows their text."""
from __future__ import annotations

import re
import struct
from pathlib import Path

import pytest

from oltsim.capture import pcapng
from oltsim.capture.wireshark import LUA_PATH, lua_source, me_names, message_type_name
from oltsim.omci import codec

REPO = Path(__file__).resolve().parents[2]


def test_the_installed_lua_is_what_the_generator_writes_from_the_codec_tables():
    """A change to codec.py's tables without regenerating the file fails here (the file cannot drift)."""
    assert LUA_PATH.read_text() == lua_source(), (
        "oltsim/data/wireshark/oltsim.lua is stale: python -m oltsim.capture.wireshark > "
        "oltsim/data/wireshark/oltsim.lua")


def test_every_me_class_and_message_type_of_the_codec_is_named_in_the_lua():
    """Each ME class of codec.ME_CLASSES and each message type of codec.ACTION_NAMES has its row in the Lua tables."""
    source = lua_source()
    for class_id, me in codec.ME_CLASSES.items():
        assert f'[{class_id}] = "{me.name}",' in source
    for action in codec.ACTION_NAMES:
        assert f'[{action}] = "{message_type_name(action)}",' in source


def test_message_types_read_as_g988_words():
    """Message types are named as G.988's table 11.2.2-1 does, not as the codec's kebab-case keys."""
    assert message_type_name(codec.MIB_UPLOAD_NEXT) == "MIB upload next"
    assert message_type_name(codec.CREATE) == "Create"
    assert message_type_name(codec.START_SW_DOWNLOAD) == "Start software download"
    assert message_type_name(31) == "type 31"


def test_codec_names_win_over_the_extra_table():
    """Where the codec defines a class, its name is the one the dissector shows."""
    assert me_names()[codec.ONU_G] == codec.ME_CLASSES[codec.ONU_G].name
    assert me_names()[171] == "Extended VLAN tagging operation configuration data"


def test_the_package_installs_the_lua():
    """setup.py's package data takes the Lua file into the wheel (and so into the .deb's venv)."""
    setup = (REPO / "setup.py").read_text()
    patterns = re.search(r'"oltsim": \[([^\]]*)\]', setup).group(1)
    assert '"data/wireshark/*.lua"' in patterns
    assert LUA_PATH.is_relative_to(REPO / "oltsim" / "data" / "wireshark")


def test_an_annotation_is_a_syslog_pdu_marked_oltsim_with_its_text():
    """The exported PDU names the syslog dissector (its text in the Info column), carries the column protocol
    string oltsim (what oltsim.lua looks for), and the text itself after the tags."""
    data = pcapng.annotation("ONU BBSM000a0001 InternalState: created -> initialized")
    tags, offset = {}, 0
    while True:
        tag, length = struct.unpack_from(">HH", data, offset)
        offset += 4
        if tag == pcapng.EXP_PDU_TAG_END_OF_OPT:
            break
        tags[tag] = data[offset:offset + length].rstrip(b"\x00").decode()
        assert length % 4 == 0
        offset += length
    assert tags == {pcapng.EXP_PDU_TAG_DISSECTOR_NAME: "syslog", pcapng.EXP_PDU_TAG_COL_PROT_TEXT: "oltsim"}
    assert data[offset:] == b"ONU BBSM000a0001 InternalState: created -> initialized"


def test_oltsimctl_capture_names_the_lua_unless_wireshark_loads_it_already(tmp_path):
    """The capture's last line says how to read OMCI with the installed file; once it is in the personal Lua
    plugins folder (or the package's global link), Wireshark loads it itself and the line says nothing more."""
    from oltsim.capture.wireshark import AUTOLOAD_PLACES, reading_hint
    if AUTOLOAD_PLACES[0].exists():
        pytest.skip(f"{AUTOLOAD_PLACES[0]} exists on this machine (the Debian package is installed)")
    assert reading_hint("onu.pcapng", home=tmp_path) == (
        f" (OMCI decoded: tshark -X lua_script:{LUA_PATH} -r onu.pcapng; Wireshark: docs/capture.md)")
    personal = tmp_path / ".local/lib/wireshark/plugins/oltsim.lua"
    personal.parent.mkdir(parents=True)
    personal.write_text("-- copied")
    assert reading_hint("onu.pcapng", home=tmp_path) == ""
