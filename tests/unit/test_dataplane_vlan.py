"""The ONU's VLAN operations (EVTOCD rules and their inverse, VLAN tagging filters), the OMCI record they are read
from, and the OLT flow actions, each on hand-built entries and messages."""
import pytest
from voltha_protos import openolt_pb2

from dataplane_lab import push_rule, rule
from oltsim.dataplane.flows import CompiledFlow
from oltsim.dataplane.vlan import Evtocd, VlanFilter, tag
from oltsim.omci import codec
from oltsim.omci.vlanconfig import EVTOCD, MAX_PENDING, VlanConfig
from oltsim.openoltpb import flow_from_pb

IPV4, EAPOL = 0x0800, 0x888E


def vids(tags):
    return [(t[1] & 0xFFF, t[1] >> 13) for t in tags]


# ---- EVTOCD ------------------------------------------------------------------------------------------------------

def test_without_adapter_rules_every_frame_passes_unchanged():
    """The three default rules G.988 creates with the ME pass untagged, single- and double-tagged frames as they
    are, both ways."""
    evtocd = Evtocd([])
    for tags in ((), (tag(7),), (tag(7), tag(8))):
        assert evtocd.upstream(tags, IPV4) == tags
        assert evtocd.downstream(tags, IPV4) == tags


def test_untagged_rule_pushes_and_its_inverse_pops():
    """VOLTHA's untagged -> single-tagged rule pushes the C-tag with priority 0; downstream a frame with that C-tag
    loses it; a single-tagged frame from the RG keeps its tag (default rule)."""
    evtocd = Evtocd([push_rule(1006)])
    assert vids(evtocd.upstream((), IPV4)) == [(1006, 0)]
    assert evtocd.downstream((tag(1006, 5),), IPV4) == ()
    assert evtocd.upstream((tag(5),), IPV4) == (tag(5),)


def test_priority_tagged_rule_copies_the_priority_and_the_untagged_inverse_wins():
    """The adapter's prio-tagged rule (filter VID 0, remove it, push the C-tag copying its priority): a prio-tagged
    frame of priority 5 leaves with C-tag 1006 priority 5; downstream the untagged rule's inverse is preferred."""
    prio_rule = rule(f_in=(8, 0, 0), remove=1, t_in=(8, 1006, 4))
    evtocd = Evtocd([push_rule(1006), prio_rule])
    assert vids(evtocd.upstream((tag(0, 5),), IPV4)) == [(1006, 5)]
    assert evtocd.downstream((tag(1006, 5),), IPV4) == ()
    only_prio = Evtocd([prio_rule])
    assert vids(only_prio.downstream((tag(1006, 5),), IPV4)) == [(0, 5)]


def test_translation_rule_and_its_inverse():
    """A single-tagged translation (acceptIncrementalEvto): VID 10 becomes 20 upstream, 20 becomes 10 downstream."""
    evtocd = Evtocd([rule(f_in=(8, 10, 0), remove=1, t_in=(8, 20, 4))])
    assert vids(evtocd.upstream((tag(10, 2),), IPV4)) == [(20, 2)]
    assert vids(evtocd.downstream((tag(20, 2),), IPV4)) == [(10, 2)]
    assert evtocd.upstream((tag(11),), IPV4) == (tag(11),)      # not its VID: the default rule


def test_discard_rules():
    """Tags-to-remove 3 discards: the untagged rule set to discard drops untagged frames, the double-tagged default
    set to discard drops double-tagged frames."""
    evtocd = Evtocd([rule(remove=3), rule(f_out=(14, 4096, 0), f_in=(14, 4096, 0), remove=3)])
    assert evtocd.upstream((), IPV4) is None
    assert evtocd.upstream((tag(1), tag(2)), IPV4) is None
    assert evtocd.upstream((tag(1),), IPV4) == (tag(1),)


def test_ethertype_filter_picks_the_more_specific_rule():
    """A rule filtering EAPOL (EtherType value 5) pushes 4091 on EAPOL frames while other untagged frames get the
    C-tag of the general rule."""
    evtocd = Evtocd([push_rule(1006), rule(eth=5, t_in=(0, 4091, 4))])
    assert vids(evtocd.upstream((), EAPOL)) == [(4091, 0)]
    assert vids(evtocd.upstream((), IPV4)) == [(1006, 0)]


def test_double_tag_push_with_copied_vid():
    """A rule pushing an outer tag over a single-tagged frame, copying the inner VID into nothing and setting its
    own: the frame leaves double-tagged, and the inverse pops the outer tag only."""
    evtocd = Evtocd([rule(f_in=(8, 4096, 0), t_out=(3, 300, 4))])
    assert vids(evtocd.upstream((tag(42),), IPV4)) == [(300, 3), (42, 0)]
    assert vids(evtocd.downstream((tag(300, 3), tag(42)), IPV4)) == [(42, 0)]


# ---- VLAN tagging filter data -------------------------------------------------------------------------------------

@pytest.mark.parametrize("operation, untagged, listed, other", [
    (0x10, True, True, False), (0x11, False, True, False), (0x00, True, True, True)])
def test_vlan_filter_operations(operation, untagged, listed, other):
    """0x10 (what VOLTHA writes) forwards untagged frames and tagged ones whose VID is listed; 0x11 also discards
    untagged ones; 0x00 forwards everything."""
    vlan_filter = VlanFilter((1006).to_bytes(2, "big") + bytes(22), operation, 1)
    assert vlan_filter.passes(()) is untagged
    assert vlan_filter.passes((tag(1006, 3),)) is listed
    assert vlan_filter.passes((tag(1007),)) is other


def test_vlan_filter_by_priority():
    """0x12 investigates the priority of the tag only."""
    vlan_filter = VlanFilter(tag(0, 5)[1].to_bytes(2, "big") + bytes(22), 0x12, 1)
    assert vlan_filter.passes((tag(77, 5),)) and not vlan_filter.passes((tag(77, 4),))


# ---- the OMCI record -----------------------------------------------------------------------------------------------

def set_request(me_class, me_id, mask, data, tid=1):
    return codec.parse(codec.encode(tid, codec.SET | codec.AR, me_class, me_id, mask.to_bytes(2, "big") + data))


def test_table_entries_are_added_replaced_and_deleted():
    """EVTOCD table Sets add entries keyed by their filter, replace an entry with the same filter, and delete it
    when its treatment octets are all ones."""
    config = VlanConfig()
    config.apply("BBSM000a010b", codec.parse(codec.encode(1, codec.CREATE | codec.AR, EVTOCD, 0x203,
                                                          b"\x02\x01\x03")))
    config.apply("BBSM000a010b", set_request(EVTOCD, 0x203, 0x0400, push_rule(1006)))
    config.apply("BBSM000a010b", set_request(EVTOCD, 0x203, 0x0400, push_rule(1007)))
    record = config.record("BBSM000A010B")
    assert list(record.rules[0x203].values()) == [push_rule(1007)]
    assert record.value(EVTOCD, 0x203, 1) == 2 and record.value(EVTOCD, 0x203, 7) == 0x103
    config.apply("BBSM000a010b", set_request(EVTOCD, 0x203, 0x0400, push_rule(1007)[:8] + b"\xff" * 8))
    assert record.rules[0x203] == {}
    config.apply("BBSM000a010b", codec.parse(codec.encode(2, codec.DELETE | codec.AR, EVTOCD, 0x203)))
    assert (EVTOCD, 0x203) not in record.mes and 0x203 not in record.rules


def test_unanswered_requests_stay_bounded():
    """Requests a muted ONU never answers are forgotten oldest first: at most MAX_PENDING are kept."""
    class Onu:
        serial = "BBSM000a010b"
        onu_id = 11

        class pon:
            id = 1
    config = VlanConfig()
    for tid in range(MAX_PENDING + 50):
        config.note(Onu, codec.parse(codec.encode(tid, codec.SET | codec.AR, EVTOCD, 0x203,
                                                  b"\x04\x00" + push_rule(1006))))
    assert config.pending() == MAX_PENDING


def test_listeners_hear_changes_and_requests_of_other_classes_are_ignored():
    """A change of a record is told to subscribers with the serial; a Get, or a Set of a class not recorded (ONU-G),
    is not noted."""
    config = VlanConfig()
    heard = []
    config.subscribe(heard.append)
    config.note(object(), codec.parse(codec.encode(1, codec.GET | codec.AR, EVTOCD, 0x203, b"\x04\x00")))
    config.note(object(), codec.parse(codec.encode(2, codec.SET | codec.AR, codec.ONU_G, 0, b"\x80\x00")))
    assert config.pending() == 0
    config.apply("BBSM000a010b", set_request(EVTOCD, 0x203, 0x0400, push_rule(1006)))
    assert heard == ["BBSM000a010b"]


# ---- OLT flow actions ----------------------------------------------------------------------------------------------

def compiled(classifier, action, flow_type="downstream"):
    cmd = {k: v for k, v in action.items() if isinstance(v, bool)}
    values = {k: v for k, v in action.items() if not isinstance(v, bool)}
    return CompiledFlow(flow_from_pb(openolt_pb2.Flow(
        access_intf_id=1, onu_id=11, uni_id=2, flow_id=1, flow_type=flow_type, gemport_id=1100, alloc_id=1100,
        classifier=openolt_pb2.Classifier(**classifier),
        action=openolt_pb2.Action(cmd=openolt_pb2.ActionCmd(**cmd), **values))))


def test_flow_actions():
    """Pop with inner remark, push with outer remark, outer translation: the tags an OpenOLT device would leave."""
    pop = compiled({}, dict(remove_outer_tag=True, remark_inner_pbits=True, i_pbits=6))
    assert vids(pop.apply((tag(900), tag(1006)))) == [(1006, 6)]
    push = compiled({}, dict(add_outer_tag=True, o_vid=900, remark_outer_pbits=True, o_pbits=4), "upstream")
    assert vids(push.apply((tag(1006, 1),))) == [(900, 4), (1006, 1)]
    plain_push = compiled({}, dict(add_outer_tag=True, o_vid=900), "upstream")
    assert vids(plain_push.apply((tag(1006, 1),))) == [(900, 1), (1006, 1)]
    translate = compiled({}, dict(translate_outer_tag=True, o_vid=77))
    assert vids(translate.apply((tag(5, 2), tag(6)))) == [(77, 2), (6, 0)]


def test_flow_classifier():
    """Tag type, VIDs, priorities (0xff = any), EtherType and ports all take part; a GEM port the flow does not
    name does not match."""
    flow = compiled(dict(o_vid=900, i_vid=1006, pkt_tag_type="double_tag", o_pbits=0xFF), {})
    assert flow.matches((tag(900, 7), tag(1006)), IPV4, 17, 1, 2, None)
    assert not flow.matches((tag(900), tag(1007)), IPV4, 17, 1, 2, None)
    assert not flow.matches((tag(900),), IPV4, 17, 1, 2, None)
    dhcp = compiled(dict(eth_type=IPV4, ip_proto=17, src_port=68, dst_port=67, o_vid=1006, o_pbits=0xFF,
                         pkt_tag_type="single_tag"), dict(trap_to_host=True), "upstream")
    assert dhcp.matches((tag(1006),), IPV4, 17, 68, 67, 1100)
    assert not dhcp.matches((tag(1006),), IPV4, 17, 68, 67, 1101)
    assert not dhcp.matches((tag(1006),), IPV4, 6, 68, 67, 1100)


@pytest.mark.parametrize("mode, foreign, untagged", [
    (0, "unmodified", "unmodified"), (1, "unmodified", "unmodified"), (5, None, "unmodified"), (8, None, None)])
def test_downstream_modes(mode, foreign, untagged):
    """Downstream mode: 0 undoes the matching rule and forwards a frame no rule produced, 5 discards it (an untagged
    one has nothing to undo and passes), 1 leaves every frame alone, 8 discards every frame."""
    evtocd = Evtocd([push_rule(1006)], downstream_mode=mode)
    expect = {"unmodified": (tag(1007),), None: None}[foreign]
    assert evtocd.downstream((tag(1007),), IPV4) == expect
    assert evtocd.downstream((), IPV4) == ({"unmodified": (), None: None}[untagged])
    if mode in (0, 5):
        assert evtocd.downstream((tag(1006),), IPV4) == ()
    if mode == 1:
        assert evtocd.downstream((tag(1006),), IPV4) == (tag(1006),)


def test_a_rule_on_extended_criteria_takes_no_frame():
    """A rule filtering on extended criteria (DHCPv4 ports), which the simulated ONU does not model, never applies:
    the general rule does."""
    dhcp_only = bytearray(rule(t_in=(0, 77, 4)))
    dhcp_only[7] |= 0x10                  # extended criteria 1 (DHCPv4): bits 11..4 of word 2
    evtocd = Evtocd([bytes(dhcp_only), push_rule(1006)])    # written first: it would win if it applied
    assert vids(evtocd.upstream((), IPV4)) == [(1006, 0)]


def test_igmp_membership_from_v2_and_v3_reports():
    """v2 reports join and leaves leave; v3 EXCLUDE records and INCLUDE records with sources join, an INCLUDE record
    without sources leaves; anything that is not IGMP changes nothing."""
    from oltsim.dataplane import multicast
    from oltsim.packets import frames as f, igmp
    g1, g2, g3 = bytes([239, 1, 1, 1]), bytes([239, 1, 1, 2]), bytes([239, 1, 1, 3])
    groups = set()
    multicast.apply(groups, igmp.join_v2_frame(b"\x02" * 6, g1, 7, 0))
    report = f.build_igmp_v3_report([f.IgmpRecord(4, g2), f.IgmpRecord(1, g3, (bytes([10, 0, 0, 1]),))])
    ip = f.build_ipv4(f.ZERO_IP, bytes([224, 0, 0, 22]), f.IP_PROTO_IGMP, report)
    multicast.apply(groups, f.build_ethernet(f.BROADCAST_MAC, b"\x02" * 6, f.ETH_IPV4, ip))
    assert groups == {g1, g2, g3}
    leave = f.build_igmp_v3_report([f.IgmpRecord(3, g2)])
    ip = f.build_ipv4(f.ZERO_IP, bytes([224, 0, 0, 22]), f.IP_PROTO_IGMP, leave)
    multicast.apply(groups, f.build_ethernet(f.BROADCAST_MAC, b"\x02" * 6, f.ETH_IPV4, ip))
    multicast.apply(groups, igmp.leave_v2_frame(b"\x02" * 6, g1, 7, 0))
    multicast.apply(groups, b"\x00" * 20)
    assert groups == {g3}
