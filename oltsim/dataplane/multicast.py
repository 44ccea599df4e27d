"""Which multicast groups a bound UNI's client joined, from the IGMP reports it sends.

The OLT replicates a multicast flow's group traffic to the UNIs that joined (an OpenOLT device learns them from the
adapter's group operations, which the simulated OLT does not keep): the data plane snoops the IGMP of each bound
UNI instead. v1/v2 membership reports join their group and v2 leaves leave it; in a v3 report, a record in
EXCLUDE mode (IS_EXCLUDE, TO_EXCLUDE) or naming sources to INCLUDE (IS_INCLUDE, TO_INCLUDE, ALLOW) joins its group,
and INCLUDE with no source (TO_INCLUDE / IS_INCLUDE of nothing: RFC 3376's leave) leaves it. Source filters are not
kept: a joined UNI gets all of the group's traffic.
"""
from __future__ import annotations

from oltsim.packets import frames as f

V1_REPORT, V2_REPORT, V2_LEAVE, V3_REPORT = 0x12, 0x16, 0x17, 0x22
IS_INCLUDE, IS_EXCLUDE, TO_INCLUDE, TO_EXCLUDE, ALLOW = 1, 2, 3, 4, 5
#: groups one UNI may hold at most (further joins are ignored): what a flood of reports can cost
MAX_GROUPS = 256


def membership(frame: bytes) -> list[tuple[bytes, bool]]:
    """(group address, joined?) for each membership change an IGMP frame asks for; [] for anything else."""
    try:
        decoded = f.decode(frame)
    except f.PacketError:
        return []
    igmp = decoded.igmp
    if decoded.kind != "igmp" or igmp is None:
        return []
    if igmp.type in (V1_REPORT, V2_REPORT):
        return [(igmp.group, True)]
    if igmp.type == V2_LEAVE:
        return [(igmp.group, False)]
    if igmp.type != V3_REPORT:
        return []
    changes = []
    for record in igmp.records:
        if record.type in (IS_EXCLUDE, TO_EXCLUDE) or (record.type in (IS_INCLUDE, TO_INCLUDE, ALLOW)
                                                       and record.sources):
            changes.append((record.group, True))
        elif record.type in (IS_INCLUDE, TO_INCLUDE):
            changes.append((record.group, False))
    return changes


def apply(groups: set, frame: bytes) -> None:
    """Join or leave in `groups` (a UNI's set of group addresses) as the IGMP frame says."""
    for group, joined in membership(frame):
        if joined:
            if len(groups) < MAX_GROUPS:
                groups.add(group)
        else:
            groups.discard(group)
