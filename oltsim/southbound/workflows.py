"""What VOLTHA and ONOS program for a UNI's subscriber services, per workflow, as pure functions of the services.

ONOS's olt app has no workflow switch of its own: it provisions each entry of the subscriber's SADIS `uniTagList`
by its fields, and BBSim likewise only prints the services file's `workflow:` and acts on its services. So do
these functions, which the built-in adapter (oltsim.southbound.builtin) calls for the UNIs it forwards:

- **ATT** (`uni_tag_match` unset): the RG sends untagged frames; the ONU pushes the C-tag (EAPOL's 4091 until the
  service authenticated), the OLT pushes the S-tag;
- **DT** (`uni_tag_match` and `c_tag` 4096, any): the RG's own tag passes the ONU unchanged, the OLT pushes the
  UNI's S-tag over it (ONOS's "any VLAN" upstream rule); no EAPOL, no DHCP trap;
- **TT** (a `uni_tag_match` per service): the ONU swaps the RG's tag for the service's C-tag with the service's
  upstream priority (copied from the RG's tag when it has none), the OLT pushes the S-tag with its priority; the
  service named `MC` gets no unicast flows but the OLT's multicast flow (its S-tag), and a service that needs IGMP
  an IGMP trap flow.

Each technology profile (`tp_id`) of a UNI is one T-CONT, one GEM port and one 802.1p mapper behind an ANI-side
bridge port of its own (VOLTHA's ONU adapter numbering), whose VLAN filter holds its services' C-tags; the mapper
gives the GEM port the p-bits of its services' upstream priorities (all eight when they set none), as the
technology profiles of voltha-system-tests' TT tests do (HSIA 0b00000001 aside, which would drop an RG's other
p-bits: here they ride it). Priorities 0 are "none", as oltsim's SADIS leaves them out (BBSim's omitempty).
"""
from __future__ import annotations

from dataclasses import dataclass

from voltha_protos import openolt_pb2

from oltsim.packets import frames as f

ANY_VID = 4096
EAPOL_VID = 4091
ANY_PBITS = 255
DEFAULT_TP = 64
#: ONOS olt app's default multicast service name (and BBSim's TT services'): no unicast flows of its own
MULTICAST_SERVICE = "MC"
WORKFLOWS = ("att", "dt", "tt")
IP_PROTO_IGMP = 2
#: EVTOCD field values (G.988 9.3.13): no tag / any priority / copy the inner tag's priority / any VID / TPID 0x8100
NO_TAG = 15
ANY_PRIO = 8
COPY_INNER_PRIO = 8
TREAT_TPID_8100 = 4
FORWARD_PRIORITY = 1000
TRAP_PRIORITY = 10000


def workflow_name(workflow: str) -> str:
    """The workflow a services file names, lower case (`TT` in voltha-system-tests, `tt` in BBSim); "" for none."""
    return (workflow or "").strip().lower()


@dataclass(frozen=True)
class Service:
    """One service of a UNI as the adapter provisions it (SADIS's uniTagList entry). Priorities: None = not set."""
    index: int
    name: str
    tp_id: int
    uni_vid: int          # 0: untagged RG (ATT), 4096: any tag (DT), else the RG's VID
    c_tag: int
    s_tag: int
    us_c: int | None
    us_s: int | None
    ds_c: int | None
    eapol: bool
    dhcp: bool
    igmp: bool
    multicast: bool


def _priority(value: int) -> int | None:
    return value if value else None


def services_of(uni) -> list[Service]:
    """The model UNI's services (their spec, C- and S-tag) as the adapter provisions them."""
    out = []
    for index, svc in enumerate(uni.services):
        spec = svc.spec
        out.append(Service(index, svc.name, spec.tp_id or DEFAULT_TP, spec.uni_tag_match, svc.c_tag, svc.s_tag,
                           _priority(spec.us_pon_c_tag_priority), _priority(spec.us_pon_s_tag_priority),
                           _priority(spec.ds_pon_c_tag_priority), spec.needs_eapol, spec.needs_dhcp,
                           spec.needs_igmp, svc.name == MULTICAST_SERVICE))
    return out


def profiles(services) -> dict[int, list[Service]]:
    """The UNI's technology profiles in the order their first service comes, each with its services."""
    out: dict[int, list[Service]] = {}
    for svc in services:
        out.setdefault(svc.tp_id, []).append(svc)
    return out


def pbits(services) -> tuple[int, ...]:
    """The p-bits one profile's GEM port takes: its unicast services' upstream C-tag priorities, all when none."""
    chosen = sorted({s.us_c for s in services if not s.multicast and s.us_c is not None})
    return tuple(chosen) if chosen else tuple(range(8))


def pbit_map(bits) -> str:
    """A tech profile's pbit_map string, p-bit 7 first: (7,) -> "0b10000000"."""
    return "0b" + "".join("1" if p in bits else "0" for p in range(7, -1, -1))


def filter_vids(services, authenticated: bool = True) -> list[int] | None:
    """The VLAN filter list of a profile's ANI-side port: EAPOL's 4091 first when a service needs EAPOL, then the
    C-tags; None (no filter) when a service takes any C-tag. Before authentication only 4091."""
    vids: list[int] = []
    unicast = [s for s in services if not s.multicast]
    if any(s.c_tag >= ANY_VID for s in unicast):
        return None
    if any(s.eapol for s in unicast):
        vids.append(EAPOL_VID)
    if authenticated or not vids:
        for s in unicast:
            if s.c_tag not in vids:
                vids.append(s.c_tag)
    return vids


def _words(*words: int) -> bytes:
    return b"".join(w.to_bytes(4, "big") for w in words)


def evtocd_rule(svc: Service, vid: int | None = None) -> bytes | None:
    """The 16-byte EVTOCD row that makes the service's upstream tag (G.988 9.3.13), None for a service with none
    (multicast): untagged RG -> push `vid` (default the C-tag) with the upstream priority (0 when none); a tagged
    RG -> its tag (any priority) replaced by the C-tag with the upstream priority (copied when none); any tag with
    any C-tag -> unchanged (single tagged, any VID, nothing removed or added)."""
    if svc.multicast:
        return None
    vid = svc.c_tag if vid is None else vid
    no_tag = NO_TAG << 28 | ANY_VID << 15
    if svc.uni_vid == 0:
        prio = svc.us_c or 0
        return _words(no_tag, no_tag, NO_TAG << 16, prio << 16 | (vid & 0x1FFF) << 3 | TREAT_TPID_8100)
    if svc.uni_vid >= ANY_VID and svc.c_tag >= ANY_VID:
        return _words(no_tag, ANY_PRIO << 28 | ANY_VID << 15, NO_TAG << 16, NO_TAG << 16)
    prio = svc.us_c if svc.us_c is not None else COPY_INNER_PRIO
    match = svc.uni_vid if svc.uni_vid < ANY_VID else ANY_VID
    out_vid = vid if vid < ANY_VID else ANY_VID        # 4096 in a treatment: the received inner tag's VID
    return _words(no_tag, ANY_PRIO << 28 | match << 15, 1 << 30 | NO_TAG << 16,
                  prio << 16 | out_vid << 3 | TREAT_TPID_8100)


def _common(svc: Service, pon: int, onu_id: int, uni_id: int, port_no: int, flow_id: int, alloc_id: int,
            gem: int, priority: int, nni: int) -> dict:
    return dict(access_intf_id=pon, onu_id=onu_id, uni_id=uni_id, flow_id=flow_id, network_intf_id=nni,
                port_no=port_no, alloc_id=alloc_id, gemport_id=gem, priority=priority, cookie=flow_id,
                tech_profile_id=svc.tp_id)


def forwarding_flows(svc: Service, pon: int, onu_id: int, uni_id: int, port_no: int, flow_id: int, alloc_id: int,
                     gem: int, nni: int = 0) -> list:
    """The service's upstream and downstream flows as the openolt adapter installs ONOS's (decomposed) forwarding
    objectives: upstream the C-tag (any with 4096) single tagged, of the upstream C-tag priority (any when none),
    gets the S-tag pushed (with the upstream S-tag priority remarked when set, else the C-tag's copied);
    downstream the S-tag over the C-tag, of the downstream priority (any when none), loses the outer tag, the
    inner's priority remarked to the upstream one when set (ONOS does not trust the BNG's). None for `MC`."""
    if svc.multicast:
        return []
    common = _common(svc, pon, onu_id, uni_id, port_no, flow_id, alloc_id, gem, FORWARD_PRIORITY, nni)
    c_vid = svc.c_tag if svc.c_tag < ANY_VID else 0
    up_action = openolt_pb2.Action(o_vid=svc.s_tag, cmd=openolt_pb2.ActionCmd(add_outer_tag=True))
    if svc.us_s is not None:
        up_action.cmd.remark_outer_pbits = True
        up_action.o_pbits = svc.us_s
        if c_vid:
            up_action.cmd.translate_inner_tag = True
            up_action.i_vid = c_vid
    down_action = openolt_pb2.Action(cmd=openolt_pb2.ActionCmd(remove_outer_tag=True))
    if svc.us_c is not None:
        down_action.cmd.remark_inner_pbits = True
        down_action.i_pbits = svc.us_c
    return [
        openolt_pb2.Flow(flow_type="upstream", **common, classifier=openolt_pb2.Classifier(
            o_vid=c_vid, o_pbits=svc.us_c if svc.us_c is not None else ANY_PBITS, pkt_tag_type="single_tag"),
            action=up_action),
        openolt_pb2.Flow(flow_type="downstream", **common, classifier=openolt_pb2.Classifier(
            o_vid=svc.s_tag, i_vid=c_vid, o_pbits=svc.ds_c if svc.ds_c is not None else ANY_PBITS,
            pkt_tag_type="double_tag"), action=down_action),
    ]


def igmp_trap_flow(svc: Service, pon: int, onu_id: int, uni_id: int, port_no: int, flow_id: int, alloc_id: int,
                   gem: int, nni: int = 0):
    """The IGMP trap flow ONOS's olt app asks for a service that needs IGMP: IPv4 protocol 2 under the C-tag (of
    its upstream priority, any when none) to the adapter; the data plane snoops the joins and leaves it carries."""
    return openolt_pb2.Flow(
        flow_type="upstream", **_common(svc, pon, onu_id, uni_id, port_no, flow_id, alloc_id, gem, TRAP_PRIORITY,
                                        nni),
        classifier=openolt_pb2.Classifier(eth_type=f.ETH_IPV4, ip_proto=IP_PROTO_IGMP,
                                          o_vid=svc.c_tag if svc.c_tag < ANY_VID else 0,
                                          o_pbits=svc.us_c if svc.us_c is not None else ANY_PBITS,
                                          pkt_tag_type="single_tag"),
        action=openolt_pb2.Action(cmd=openolt_pb2.ActionCmd(trap_to_host=True)))


def multicast_flow(svc: Service, flow_id: int, nni: int = 0, group_id: int = 1):
    """The OLT's multicast flow for the `MC` service, as the openolt adapter installs ONOS's (handleFlowWithGroup):
    group traffic single tagged with the service's S-tag (its VLAN in ONOS's multicast config), any group, to the
    group's members (the UNIs whose client joined)."""
    return openolt_pb2.Flow(flow_id=flow_id, flow_type="multicast", network_intf_id=nni, group_id=group_id,
                            priority=FORWARD_PRIORITY, cookie=flow_id,
                            classifier=openolt_pb2.Classifier(o_vid=svc.s_tag, o_pbits=ANY_PBITS,
                                                              pkt_tag_type="single_tag"))
