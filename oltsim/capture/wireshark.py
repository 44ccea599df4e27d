"""oltsim's Wireshark dissector (oltsim/data/wireshark/oltsim.lua), generated from the project's own OMCI tables.

Wireshark (4.0 at least) has no OMCI dissector of its own. The Lua file this module writes reads the OMCI frames a
capture holds (Ethernet, ethertype 0x88b5, G.988 message layout at offset 0) and names what they say in G.988's
words: the message type (with "response" when AK is set), the managed entity class and instance, the result of an
answer, the entity a MIB upload next answer carries. It also puts each annotation's text in a field
(``oltsim.annotation``) and the protocol column ``oltsim``; without the file, tshark and Wireshark still show an
annotation's text in the Info column (the writer hands annotations to the built-in syslog dissector, see
`oltsim.capture.pcapng.exported_pdu`).

The tables in the Lua come from `oltsim.omci.codec` (ACTION_NAMES, ME_CLASSES, the result codes) plus the G.988
names of the classes an adapter configures that the simulated MIB does not hold (`EXTRA_ME_NAMES`), so the file
cannot drift from the codec: tests/unit/test_wireshark_lua.py checks that the installed file is what `lua_source()`
writes. After a change to the tables: ``python -m oltsim.capture.wireshark > oltsim/data/wireshark/oltsim.lua``.

Pure: `lua_source()` builds text; only `main()` writes (to stdout).
"""
from __future__ import annotations

import sys
from pathlib import Path

from oltsim.omci import codec

#: Where the package keeps the file (package data, installed with oltsim; the .deb also links it into Wireshark's
#: global Lua plugin folder, see packaging/build-deb).
LUA_PATH = Path(__file__).resolve().parent.parent / "data" / "wireshark" / "oltsim.lua"

#: G.988 names of managed entity classes an OLT adapter creates or reads that oltsim's MIB (codec.ME_CLASSES)
#: does not define; codec.ME_CLASSES wins where both name a class.
EXTRA_ME_NAMES = {
    5: "Cardholder",
    45: "MAC bridge service profile",
    46: "MAC bridge configuration data",
    47: "MAC bridge port configuration data",
    48: "MAC bridge port designation data",
    49: "MAC bridge port filter table data",
    51: "MAC bridge performance monitoring history data",
    52: "MAC bridge port performance monitoring history data",
    79: "MAC bridge port filter preassign table",
    84: "VLAN tagging filter data",
    89: "Ethernet performance monitoring history data 2",
    130: "IEEE 802.1p mapper service profile",
    131: "OLT-G",
    133: "ONU power shedding",
    136: "TCP/UDP config data",
    137: "Network address",
    148: "Authentication security method",
    157: "Large string",
    171: "Extended VLAN tagging operation configuration data",
    266: "GEM interworking termination point",
    272: "GAL Ethernet profile",
    273: "Threshold data 1",
    274: "Threshold data 2",
    276: "GAL Ethernet performance monitoring history data",
    281: "Multicast GEM interworking termination point",
    287: "OMCI",
    288: "Managed entity",
    289: "Attribute",
    290: "Dot1X port extension package",
    296: "Ethernet performance monitoring history data 3",
    297: "Port mapping package",
    309: "Multicast operations profile",
    310: "Multicast subscriber config info",
    311: "Multicast subscriber monitor",
    329: "Virtual Ethernet interface point",
    332: "Enhanced security control",
    336: "ONU dynamic power management control",
}

#: G.988 table 11.2.2-1's names for the message types whose codec names are not simply the words capitalised.
_MESSAGE_TYPE_WORDS = {"mib": "MIB", "sw": "software"}

#: The result codes of G.988 11.2.x (the first contents octet of most answers).
RESULT_NAMES = {
    codec.SUCCESS: "command processed successfully",
    codec.PROCESSING_ERROR: "command processing error",
    codec.NOT_SUPPORTED: "command not supported",
    codec.PARAMETER_ERROR: "parameter error",
    codec.UNKNOWN_ME: "unknown managed entity",
    codec.UNKNOWN_INSTANCE: "unknown managed entity instance",
    codec.DEVICE_BUSY: "device busy",
    codec.INSTANCE_EXISTS: "instance exists",
    codec.ATTRIBUTE_FAILURE: "attribute(s) failed or unknown",
}

#: Message types whose answer starts with a result code.
ANSWERS_WITH_RESULT = (codec.CREATE, codec.DELETE, codec.SET, codec.GET, codec.MIB_RESET, codec.TEST,
                       codec.START_SW_DOWNLOAD, codec.DOWNLOAD_SECTION, codec.END_SW_DOWNLOAD, codec.ACTIVATE_SW,
                       codec.COMMIT_SW, codec.SYNC_TIME, codec.REBOOT, codec.GET_NEXT, codec.GET_CURRENT_DATA,
                       codec.SET_TABLE)


def message_type_name(action: int) -> str:
    """G.988's words for a message type (the low five bits): "MIB upload next", "Create", ..."""
    name = codec.ACTION_NAMES.get(action)
    if name is None:
        return f"type {action}"
    words = [_MESSAGE_TYPE_WORDS.get(word, word) for word in name.split("-")]
    text = " ".join(words)
    return text[0].upper() + text[1:]


def me_names() -> dict[int, str]:
    """ME class -> G.988 name: the codec's classes, then the extra ones it does not define."""
    names = dict(EXTRA_ME_NAMES)
    names.update({class_id: me.name for class_id, me in codec.ME_CLASSES.items()})
    return dict(sorted(names.items()))


def _lua_string(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _lua_table(name: str, rows: dict) -> str:
    lines = [f"local {name} = {{"]
    for key, value in rows.items():
        lines.append(f"    [{key}] = {_lua_string(value) if isinstance(value, str) else 'true'},")
    lines.append("}")
    return "\n".join(lines)


def lua_source() -> str:
    """The whole oltsim.lua text (deterministic: the same tables give the same bytes)."""
    tables = "\n\n".join((
        _lua_table("MESSAGE_TYPES", {action: message_type_name(action) for action in sorted(codec.ACTION_NAMES)}),
        _lua_table("ME_CLASSES", me_names()),
        _lua_table("RESULTS", RESULT_NAMES),
        _lua_table("ANSWERS_WITH_RESULT", {action: True for action in ANSWERS_WITH_RESULT}),
    ))
    return _HEAD + tables + "\n" + _BODY


_HEAD = f"""\
-- oltsim.lua: Wireshark dissector for oltsim captures (oltsimctl capture, GET /v1/capture).
--
-- OMCI (ethertype 0x{0x88B5:04x}, G.988 baseline and extended messages): message type, managed entity class and
-- instance in G.988's words, the result of an answer, the entity a MIB upload next answer carries.
-- Display filters: omci, omci.message_type_name, omci.me_class == 256, omci.me_instance, omci.tid, omci.ak,
-- omci.result, omci.upload.me_class (oltsim_omci.* instead when another Lua plugin already registered "omci").
-- oltsim's annotations (the "events" interface): the text in oltsim.annotation and the protocol column "oltsim".
--
-- Use: tshark -X lua_script:oltsim.lua -r FILE, or copy it into Wireshark's personal Lua plugins folder
-- (Help > About Wireshark > Folders; on Linux ~/.local/lib/wireshark/plugins/). The Debian package installs it
-- for every user. `oltsimctl capture --help` names this file's installed path.
--
-- GENERATED by `python -m oltsim.capture.wireshark` from oltsim's OMCI tables (oltsim/omci/codec.py): do not
-- edit by hand; tests/unit/test_wireshark_lua.py fails when this file and the tables differ.

"""

_BODY = r"""
local function new_proto(name, description)
    -- another OMCI plugin (omci.lua) may have the name already: ours then answers to oltsim_omci
    local ok, proto = pcall(Proto, name, description)
    if ok then
        return proto, name
    end
    return Proto("oltsim_" .. name, description), "oltsim_" .. name
end

local omci, p = new_proto("omci", "ITU-T G.988 OMCI (oltsim)")

local DEVICE_IDS = { [0x0a] = "Baseline", [0x0b] = "Extended" }

local f = {
    tid = ProtoField.uint16(p .. ".tid", "Transaction correlation identifier", base.HEX),
    message_type = ProtoField.uint8(p .. ".message_type", "Message type", base.HEX),
    db = ProtoField.bool(p .. ".db", "Destination bit", 8, nil, 0x80),
    ar = ProtoField.bool(p .. ".ar", "Acknowledge request", 8, nil, 0x40),
    ak = ProtoField.bool(p .. ".ak", "Acknowledgement", 8, nil, 0x20),
    action = ProtoField.uint8(p .. ".action", "Message type (action)", base.DEC, MESSAGE_TYPES, 0x1f),
    name = ProtoField.string(p .. ".message_type_name", "Message"),
    device_id = ProtoField.uint8(p .. ".device_id", "Device identifier", base.HEX, DEVICE_IDS),
    me_class = ProtoField.uint16(p .. ".me_class", "Managed entity class", base.DEC, ME_CLASSES),
    me_instance = ProtoField.uint16(p .. ".me_instance", "Managed entity instance", base.DEC),
    length = ProtoField.uint16(p .. ".length", "Message contents length", base.DEC),
    contents = ProtoField.bytes(p .. ".contents", "Message contents"),
    result = ProtoField.uint8(p .. ".result", "Result", base.DEC, RESULTS),
    commands = ProtoField.uint16(p .. ".commands", "Number of subsequent commands", base.DEC),
    upload_class = ProtoField.uint16(p .. ".upload.me_class", "Uploaded managed entity class", base.DEC,
                                     ME_CLASSES),
    upload_instance = ProtoField.uint16(p .. ".upload.me_instance", "Uploaded managed entity instance", base.DEC),
    upload_mask = ProtoField.uint16(p .. ".upload.attribute_mask", "Uploaded attribute mask", base.HEX),
    trailer = ProtoField.bytes(p .. ".trailer", "Trailer"),
}
omci.fields = { f.tid, f.message_type, f.db, f.ar, f.ak, f.action, f.name, f.device_id, f.me_class,
                f.me_instance, f.length, f.contents, f.result, f.commands, f.upload_class, f.upload_instance,
                f.upload_mask, f.trailer }

local MIB_UPLOAD, MIB_UPLOAD_NEXT = 13, 14

local function me_text(class, instance)
    local name = ME_CLASSES[class]
    if name then
        return string.format("%s (%d) instance %d", name, class, instance)
    end
    return string.format("ME class %d instance %d", class, instance)
end

function omci.dissector(tvb, pinfo, tree)
    local length = tvb:len()
    if length < 8 then
        return 0
    end
    pinfo.cols.protocol = "OMCI"
    local mt = tvb(2, 1):uint()
    local action = mt % 32
    local answer = math.floor(mt / 32) % 2 == 1
    local name = MESSAGE_TYPES[action] or string.format("Message type %d", action)
    if answer then
        name = name .. " response"
    end
    local class, instance = tvb(4, 2):uint(), tvb(6, 2):uint()
    local extended = tvb(3, 1):uint() == 0x0b
    local subtree = tree:add(omci, tvb(), string.format("OMCI %s, %s", name, me_text(class, instance)))
    subtree:add(f.tid, tvb(0, 2))
    local type_tree = subtree:add(f.message_type, tvb(2, 1))
    type_tree:add(f.db, tvb(2, 1))
    type_tree:add(f.ar, tvb(2, 1))
    type_tree:add(f.ak, tvb(2, 1))
    type_tree:add(f.action, tvb(2, 1))
    subtree:add(f.name, tvb(2, 1), name)
    subtree:add(f.device_id, tvb(3, 1))
    subtree:add(f.me_class, tvb(4, 2))
    subtree:add(f.me_instance, tvb(6, 2))
    local start, size = 8, math.min(32, length - 8)
    if extended and length >= 10 then
        subtree:add(f.length, tvb(8, 2))
        start = 10
        size = math.min(tvb(8, 2):uint(), length - 10)
    end
    local info = string.format("%s, %s, tid 0x%04x", name, me_text(class, instance), tvb(0, 2):uint())
    if size > 0 then
        local contents = tvb(start, size)
        local contents_tree = subtree:add(f.contents, contents)
        if answer and ANSWERS_WITH_RESULT[action] then
            contents_tree:add(f.result, tvb(start, 1))
            local result = tvb(start, 1):uint()
            if result ~= 0 then
                info = info .. ", " .. (RESULTS[result] or string.format("result %d", result))
            end
        elseif answer and action == MIB_UPLOAD and size >= 2 then
            contents_tree:add(f.commands, tvb(start, 2))
            info = info .. string.format(", %d commands follow", tvb(start, 2):uint())
        elseif answer and action == MIB_UPLOAD_NEXT and size >= 6 then
            local up_class, up_instance = tvb(start, 2):uint(), tvb(start + 2, 2):uint()
            contents_tree:add(f.upload_class, tvb(start, 2))
            contents_tree:add(f.upload_instance, tvb(start + 2, 2))
            contents_tree:add(f.upload_mask, tvb(start + 4, 2))
            info = info .. ": " .. me_text(up_class, up_instance)
        end
    end
    if start + size < length then
        subtree:add(f.trailer, tvb(start + size))
    end
    pinfo.cols.info = info
    return length
end

DissectorTable.get("ethertype"):add(0x88b5, omci)

-- oltsim's annotations: exported PDUs whose column protocol string is "oltsim" (the text is the payload, which
-- Wireshark's syslog dissector shows in the Info column even without this file).
local annotation = Proto("oltsim", "oltsim annotation")
local annotation_text = ProtoField.string("oltsim.annotation", "Annotation")
annotation.fields = { annotation_text }
-- fields of Wireshark's exported PDU dissector; a Wireshark without them still gets the OMCI part above
local has_column, column_protocol = pcall(Field.new, "exported_pdu.col_proto_str")
local has_exported, exported = pcall(Field.new, "exported_pdu.exported_pdu")

function annotation.dissector(tvb, pinfo, tree)
    local marker = column_protocol()
    if not marker or marker.value ~= "oltsim" then
        return
    end
    local payload = exported()
    if not payload then
        return
    end
    local text = payload.range:string()
    pinfo.cols.protocol = "oltsim"
    pinfo.cols.info = text
    tree:add(annotation, payload.range, "oltsim annotation"):add(annotation_text, payload.range, text)
end

if has_column and has_exported then
    register_postdissector(annotation)
end
"""


#: Where Wireshark loads Lua plugins by itself: the global folder the .deb links oltsim.lua into, and the
#: personal folder (``tshark -G folders``), relative to the home directory.
AUTOLOAD_PLACES = (Path("/usr/lib/x86_64-linux-gnu/wireshark/plugins/oltsim.lua"),
                   Path(".local/lib/wireshark/plugins/oltsim.lua"))


def reading_hint(target: str, home: Path | None = None) -> str:
    """What `oltsimctl capture` adds after "written to FILE": how to read its OMCI with oltsim.lua, or "" when
    Wireshark already loads the file by itself (the Debian package, or the user copied it)."""
    home = Path.home() if home is None else home
    for place in AUTOLOAD_PLACES:
        if (home / place).exists():
            return ""
    return f" (OMCI decoded: tshark -X lua_script:{LUA_PATH} -r {target}; Wireshark: docs/capture.md)"


def main() -> int:
    """Write the Lua to stdout (the release writes it to LUA_PATH, see the module's docstring)."""
    sys.stdout.write(lua_source())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
