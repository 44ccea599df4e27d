"""IGMP of a subscriber service (BBSim's `responders/igmp`, reference 4.5): v2 join (report)
and leave, v3 join (one MODE_IS_EXCLUDE record), and answers to membership queries.

Frames go to the Ethernet broadcast address, single-tagged with the request VLAN (the
service C-tag when 0) and the service's upstream C-tag priority, in IPv4 with TOS 0x10,
TTL 128 and the Router Alert option, as BBSim sends them. Joined groups and their VLANs
live in `service.igmp_groups`, which the control API keeps.
"""
from __future__ import annotations

from oltsim.packets import frames as f
from oltsim.packets.common import describe, log, send_up

JOIN_V2 = "igmp_join_start"
JOIN_V3 = "igmp_join_startv3"
LEAVE = "igmp_leave"
EVENTS = (JOIN_V2, JOIN_V3, LEAVE)


def _frame(mac: bytes, vid: int, pcp: int, dst_ip: bytes, igmp: bytes) -> bytes:
    ip = f.build_ipv4(f.ZERO_IP, dst_ip, f.IP_PROTO_IGMP, igmp, tos=0x10, ttl=128, options=f.ROUTER_ALERT)
    return f.build_ethernet(f.BROADCAST_MAC, mac, f.ETH_IPV4, ip, [f.VlanTag(vid, pcp)])


def join_v2_frame(mac: bytes, group: bytes, vid: int, pcp: int) -> bytes:
    """IGMPv2 Membership Report (0x16) for `group`, sent to the group address."""
    return _frame(mac, vid, pcp, group, f.build_igmp_v2(f.IGMP_V2_REPORT, group))


def leave_v2_frame(mac: bytes, group: bytes, vid: int, pcp: int) -> bytes:
    """IGMPv2 Leave Group (0x17) for `group`, sent to the group address as BBSim does."""
    return _frame(mac, vid, pcp, group, f.build_igmp_v2(f.IGMP_V2_LEAVE, group))


def join_v3_frame(mac: bytes, group: bytes, vid: int, pcp: int) -> bytes:
    """IGMPv3 Membership Report (0x22) with one MODE_IS_EXCLUDE record, to 224.0.0.22."""
    report = f.build_igmp_v3_report([f.IgmpRecord(f.IGMP_MODE_IS_EXCLUDE, group)])
    return _frame(mac, vid, pcp, f.IGMPV3_ROUTERS, report)


def query_frame(vid: int, group: bytes = f.ZERO_IP, v3: bool = False, src: bytes = bytes(6)) -> bytes:
    """A membership query as a multicast router sends it downstream (tests use it)."""
    igmp = f.build_igmp_v3_query(group) if v3 else f.build_igmp_v2(f.IGMP_QUERY, group, 100)
    ip = f.build_ipv4(f.ZERO_IP, bytes((224, 0, 0, 1)), f.IP_PROTO_IGMP, igmp, ttl=1, options=f.ROUTER_ALERT)
    return f.build_ethernet(bytes.fromhex("01005e000001"), src, f.ETH_IPV4, ip, [f.VlanTag(vid)])


def gem_for(service) -> int:
    """BBSim's PktInd GEM port for IGMP: the service's, or int("<pon><onu>") before it has one."""
    if service.gem_port:
        return service.gem_port
    onu = service.uni.onu
    return int(f"{onu.pon.id}{onu.onu_id}")


class IgmpHost:
    """The IGMP side of every service; stateless apart from `service.igmp_groups`."""

    def send(self, service, event: str, group: str, vlan: int) -> None:
        """Send the frame for `event` (join v2, join v3, leave) on `vlan` (the C-tag when 0)."""
        builder = {JOIN_V2: join_v2_frame, JOIN_V3: join_v3_frame, LEAVE: leave_v2_frame}[event]
        group_ip = f.ip_bytes(group)
        vid = vlan or service.c_tag
        send_up(service, builder(f.mac_bytes(service.mac), group_ip, vid, service.spec.us_pon_c_tag_priority),
                gem_for(service))

    def receive(self, service, frame: f.Frame) -> None:
        """Answer a membership query with a v2 report for every joined group on the query's VLAN
        (only the queried group for a group-specific query); other IGMP is ignored."""
        igmp = frame.igmp
        if igmp.type != f.IGMP_QUERY:
            log.debug("igmp-ignored serial={serial} uni={uni} service={service} type={type:#x}",
                      type=igmp.type, **describe(service))
            return
        vid = frame.eth.vid
        if vid is None:
            log.info("igmp-query-untagged serial={serial} uni={uni} service={service}", **describe(service))
            return
        specific = igmp.group if igmp.group != f.ZERO_IP else None
        mac = f.mac_bytes(service.mac)
        pcp = service.spec.us_pon_c_tag_priority
        for group, group_vlan in list((service.igmp_groups or {}).items()):
            if group_vlan != vid:
                continue
            try:
                group_ip = f.ip_bytes(group)
            except f.PacketError:
                continue
            if specific is not None and group_ip != specific:
                continue
            send_up(service, join_v2_frame(mac, group_ip, group_vlan, pcp), gem_for(service))
