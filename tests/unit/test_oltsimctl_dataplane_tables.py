"""`oltsimctl dataplane`'s tables of GET /v1/dataplane's lists of entries (oltsim.ctl.subcommands.entry_tables): the
shaper's per-scheduler counters as the daemon gives them today (limit, bytes sent and dropped, queue depth), and any
list added later (a scheduler's GEM queues, a PON's offered / carried load) shown without a change to oltsimctl."""
from __future__ import annotations

from oltsim.ctl.subcommands import entry_tables

#: GET /v1/dataplane's "shapers" as oltsim.dataplane.shaper.Shaper.counters gives them: an upstream T-CONT with its
#: SADIS profile, a downstream scheduler without a limit
SHAPERS = [
    {"direction": "upstream", "serial": "BBSM000a0101", "pon": 0, "onu_id": 1, "alloc_id": 1024,
     "limit": {"pir": 100000, "cir": 50000, "gir": 0, "pbs": 1000, "cbs": 1000, "queue_limit_bytes": 65536},
     "sent_frames": 812, "sent_bytes": 1217188, "dropped": {"shaper": 3}, "dropped_bytes": 4500, "queue_frames": 2,
     "queue_bytes": 3000},
    {"direction": "downstream", "serial": "BBSM000a0101", "pon": 0, "onu_id": 1, "alloc_id": 1024, "uni_id": 0,
     "limit": None, "sent_frames": 40, "sent_bytes": 2400, "dropped": {}, "dropped_bytes": 0, "queue_frames": 0,
     "queue_bytes": 0},
]


def table(text: str, name: str) -> list[list[str]]:
    """The rows (headers first, cells split on runs of spaces) of the table after the line `name`."""
    lines = text.split("\n")
    start = lines.index(name) + 1
    rows = []
    for line in lines[start:]:
        if not line:
            break
        rows.append(line.split())
    return rows


def test_the_shapers_counters_are_one_row_per_scheduler():
    """Each scheduler is a row: which one it is first (direction, serial, PON, ONU, UNI, alloc id), then its limit
    key by key, then bytes sent, dropped by reason, queue depth; a scheduler without a limit or UNI shows `-`."""
    rows = table(entry_tables({"unis": {}, "shapers": SHAPERS, "packet_ins": 3}), "shapers")
    assert rows[0] == ["DIRECTION", "SERIAL", "PON", "ONU_ID", "UNI_ID", "ALLOC_ID", "LIMIT_PIR", "LIMIT_CIR",
                       "LIMIT_GIR", "LIMIT_PBS", "LIMIT_CBS", "LIMIT_QUEUE_LIMIT_BYTES", "SENT_FRAMES", "SENT_BYTES",
                       "DROPPED", "DROPPED_BYTES", "QUEUE_FRAMES", "QUEUE_BYTES"]
    assert rows[1] == ["upstream", "BBSM000a0101", "0", "1", "-", "1024", "100000", "50000", "0", "1000", "1000",
                       "65536", "812", "1217188", "shaper=3", "4500", "2", "3000"]
    assert rows[2] == ["downstream", "BBSM000a0101", "0", "1", "0", "1024", "-", "-", "-", "-", "-", "-", "40",
                       "2400", "-", "0", "0", "0"]


def test_entries_added_later_show_without_a_change_here():
    """A scheduler's nested GEM queues become a table of their own, each row led by its scheduler's identity, and
    a new list (a PON's load) one more table: whatever their keys."""
    shapers = [{**SHAPERS[0], "rate_bps": 100000000, "gems": [
        {"gemport_id": 1024, "priority": 0, "weight": 4, "sent_bytes": 1000, "dropped": {"shaper": 1}},
        {"gemport_id": 1025, "priority": 1, "weight": 4, "sent_bytes": 217188, "dropped": {}}]}, SHAPERS[1]]
    pons = [{"pon": 0, "direction": "upstream", "rate_bps": 9953280000, "offered_bytes": 1221688,
             "carried_bytes": 1217188, "shaped": 1, "congested": False}]
    text = entry_tables({"shapers": shapers, "pons": pons, "unis": {}, "flows": {"0/1/upstream": {"frames": 1}}})
    assert table(text, "shapers")[0][-1] == "RATE_BPS" and table(text, "shapers")[1][-1] == "100000000"
    assert table(text, "shapers.gems") == [
        ["DIRECTION", "SERIAL", "PON", "ONU_ID", "UNI_ID", "ALLOC_ID", "GEMPORT_ID", "PRIORITY", "WEIGHT",
         "SENT_BYTES", "DROPPED"],
        ["upstream", "BBSM000a0101", "0", "1", "-", "1024", "1024", "0", "4", "1000", "shaper=1"],
        ["upstream", "BBSM000a0101", "0", "1", "-", "1024", "1025", "1", "4", "217188", "-"]]
    assert table(text, "pons") == [
        ["DIRECTION", "PON", "RATE_BPS", "OFFERED_BYTES", "CARRIED_BYTES", "SHAPED", "CONGESTED"],
        ["upstream", "0", "9953280000", "1221688", "1217188", "1", "no"]]
    assert "flows" not in text.split("\n")          # the flows are not listed: too many


def test_without_a_shaper_nothing_more_is_shown():
    """Counters with no list of entries (no shaper: no bandwidth profile) add nothing to the output."""
    assert entry_tables({"unis": {}, "nni": {"rx_frames": 1}, "interfaces": {}, "packet_ins": 0,
                         "shapers": []}) == ""
