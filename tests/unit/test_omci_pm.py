"""The ONU's OMCI PM history MEs count the data plane's real frames (oltsim.dataplane.pm): a bound UNI's Ethernet
frame PM, its PPTP's Ethernet PM, its GEM port's CTP PM and the ANI's FEC PM, read with OMCI Gets at the lab's
numbering (OLT id 10, 2x16, UNI 2 of ONU 11 on PON 1, tests/unit/dataplane_lab.py); what the data plane does not
carry is answered as BBSim does (random values 0..99)."""
from __future__ import annotations

import random

import pytest
from twisted.internet.task import Clock

from dataplane_lab import RG_MAC, SERVER_MAC, Lab, ip_frame
from oltsim.daemon import OltService
from oltsim.dataplane.pipeline import Dropped, ToNni, ToUni
from oltsim.dataplane.pm import OPENONU_BRIDGE_PORT_BASE, FrameCounts, PmCounters
from oltsim.omci import codec
from oltsim.omci.codec import ME_CLASSES
from oltsim.omci.responder import ANI_G_ID, OmciResponder, _counted_pm
from oltsim.tap import Options, makeService

PON, INDEX, UNI, GEM = 1, 11, 2, 1100
UP, DOWN = codec.ETHERNET_FRAME_PM_HISTORY_UP, codec.ETHERNET_FRAME_PM_HISTORY_DOWN
CTP_PM, ETH_PM, FEC_PM = codec.GEM_PORT_NETWORK_CTP_PM_HISTORY, codec.ETHERNET_PM_HISTORY, codec.FEC_PM_HISTORY
#: drop events, octets, packets, broadcast, multicast (12 + 8 octets: within a baseline Get's 25)
FRAME_ATTRIBUTES = (3, 4, 5, 6, 7)


@pytest.fixture
def lab():
    return Lab()


@pytest.fixture
def sub(lab):
    """The subscriber on UNI 2 of ONU BBSM000a010b, configured over OMCI, given the ATT flows and bound."""
    onu, _ = lab.subscriber(PON, INDEX, UNI, GEM)
    return onu


def pm_get(lab, onu, me_class: int, me_id: int, indexes) -> dict:
    """A baseline OMCI Get of the attributes `indexes` of a PM ME: {index: value}."""
    contents = lab.omci(onu, codec.GET, me_class, me_id, codec.mask_of(indexes).to_bytes(2, "big"))
    assert contents[0] == codec.SUCCESS
    values = codec.decode_attributes(ME_CLASSES[me_class], int.from_bytes(contents[1:3], "big"), contents[3:])
    return {index: int.from_bytes(value, "big") for index, value in values.items()}


def grew(before: dict, after: dict) -> dict:
    return {index: after[index] - before[index] for index in before}


def upstream(lab, onu, count: int, payload: bytes = b"hello") -> list[bytes]:
    """`count` frames from the RG, each forwarded to the NNI: the frames sent."""
    frames = [ip_frame(SERVER_MAC, RG_MAC, payload=payload + bytes([i])) for i in range(count)]
    for frame in frames:
        assert isinstance(lab.dp.from_uni(onu.serial, UNI, frame)[0], ToNni)
    return frames


def downstream(lab, count: int) -> tuple[list[bytes], list[bytes]]:
    """`count` frames from the NNI (S-tag 900, C-tag 1006), each delivered to the UNI: (the frames sent into the NNI,
    the frames the RG got)."""
    sent, got = [], []
    for i in range(count):
        sent.append(ip_frame(RG_MAC, SERVER_MAC, payload=bytes(100 + i), tags=[(900, 0), (1006, 0)]))
        out = lab.dp.from_nni(sent[-1])
        assert isinstance(out[0], ToUni)
        got.append(out[0].frame)
    return sent, got


@pytest.mark.parametrize("bridge_port", ["uni_port", "openonu"])
def test_ethernet_frame_pm_grows_by_exactly_the_frames_sent(lab, sub, bridge_port):
    """The UNI's Ethernet frame PM, upstream and downstream, read twice with traffic between: packets and octets
    grew by exactly what the RG sent and received (the ME named by its UNI-side bridge port's id, or as
    voltha-openonu-adapter-go numbers it, 0x1001 + the PPTP's id); no drop, broadcast or multicast counted."""
    onu = sub
    me_id = (lab.ids(UNI)["uni_port"] if bridge_port == "uni_port"
             else OPENONU_BRIDGE_PORT_BASE + onu.unis[UNI].me_id)
    up0, down0 = pm_get(lab, onu, UP, me_id, FRAME_ATTRIBUTES), pm_get(lab, onu, DOWN, me_id, FRAME_ATTRIBUTES)
    sent = upstream(lab, onu, 5)
    _, got = downstream(lab, 3)
    up1, down1 = pm_get(lab, onu, UP, me_id, FRAME_ATTRIBUTES), pm_get(lab, onu, DOWN, me_id, FRAME_ATTRIBUTES)
    assert grew(up0, up1) == {3: 0, 4: sum(map(len, sent)), 5: 5, 6: 0, 7: 0}
    assert grew(down0, down1) == {3: 0, 4: sum(map(len, got)), 5: 3, 6: 0, 7: 0}
    # and again: totals, never reset by a read
    more = upstream(lab, onu, 2)
    assert grew(up1, pm_get(lab, onu, UP, me_id, FRAME_ATTRIBUTES))[4] == sum(map(len, more))


def test_dropped_and_oversize_frames_count_upstream(lab, sub):
    """A frame the ONU's VLAN filter discards and one longer than the NNI's MTU are each a drop event upstream, the
    second also an oversize packet; both are packets received from the UNI. The PPTP's Ethernet PM counts the
    second as a frame too long, and nothing else."""
    onu = sub
    me_id = lab.ids(UNI)["uni_port"]
    indexes = (3, 5, 10)
    before = pm_get(lab, onu, UP, me_id, indexes)
    eth_before = pm_get(lab, onu, ETH_PM, onu.unis[UNI].me_id, range(3, 9))
    tagged = ip_frame(SERVER_MAC, RG_MAC, tags=[(77, 0)])
    big = ip_frame(SERVER_MAC, RG_MAC, payload=bytes(1480))
    reasons = [o.reason for frame in (tagged, big) for o in lab.dp.from_uni(onu.serial, UNI, frame)
               if isinstance(o, Dropped)]
    assert reasons == ["vlan-filter", "oversize"]
    assert grew(before, pm_get(lab, onu, UP, me_id, indexes)) == {3: 2, 5: 2, 10: 1}
    assert eth_before == dict.fromkeys(range(3, 9), 0)
    assert pm_get(lab, onu, ETH_PM, onu.unis[UNI].me_id, range(3, 9)) == {3: 0, 4: 0, 5: 0, 6: 1, 7: 0, 8: 0}


def test_gem_port_ctp_pm_counts_the_gem_ports_flows(lab, sub):
    """The GEM port network CTP PM of the UNI's GEM port (ME id = the CTP's, Port-ID 1100) counts, as the ONU sees
    them, the frames its flows carried: transmitted upstream (with the C-tag the ONU pushed), received downstream,
    as the OpenOLT GetGemPortStatistics reports them; encryption key errors 0."""
    onu = sub
    indexes = (3, 4, 5, 6)           # 24 octets; the encryption key errors (4) do not fit beside them
    before = pm_get(lab, onu, CTP_PM, GEM, indexes)
    sent = upstream(lab, onu, 4)
    into_nni, _ = downstream(lab, 2)
    after = pm_get(lab, onu, CTP_PM, GEM, indexes)
    # upstream as the OLT got them (the ONU's C-tag pushed), downstream as the flow took them from the NNI
    assert grew(before, after) == {3: 4, 4: 2, 5: sum(map(len, into_nni)), 6: sum(len(f) + 4 for f in sent)}
    rx_frames, rx_bytes, tx_frames, tx_bytes = lab.dp.gem_statistics(onu.pon.id, onu.onu_id, GEM)
    assert after == {3: rx_frames, 4: tx_frames, 5: tx_bytes, 6: rx_bytes}
    assert pm_get(lab, onu, CTP_PM, GEM, (7,)) == {7: 0}


def test_fec_pm_of_a_carried_onu_is_a_clean_wire(lab, sub):
    """With a UNI of the ONU carried, the ANI-G's FEC PM counts no corrected or uncorrectable code words (a
    simulated wire has no errors)."""
    assert pm_get(lab, sub, FEC_PM, ANI_G_ID, range(3, 8)) == dict.fromkeys(range(3, 8), 0)


def expected_random(onu, me_class: int) -> dict:
    """What BBSim answers for a PM ME next, from the ONU's random state: attributes 3.. random 0..99."""
    rand = random.Random()
    rand.setstate(onu.hub.random.getstate())
    return {i: rand.randrange(100) for i in range(3, len(ME_CLASSES[me_class].sizes) + 1)}


@pytest.mark.parametrize("me_class, me_id", [
    (UP, "ani_port"), (DOWN, "ani_port"), (UP, 0x0777), (CTP_PM, 1234), (ETH_PM, 0x0101)])
def test_what_the_data_plane_does_not_carry_is_answered_as_bbsim(lab, sub, me_class, me_id):
    """A PM ME naming no carried UNI or GEM port (an ANI-side bridge port, an unknown id, a GEM port behind no bound
    UNI, UNI 0 which is not bound) gets BBSim's random values, drawn as without a data plane."""
    onu = sub
    if me_id == "ani_port":
        me_id = lab.ids(UNI)["ani_port"]
    indexes = (3, 4, 5, 6)
    expected = expected_random(onu, me_class)
    assert pm_get(lab, onu, me_class, me_id, indexes) == {i: expected[i] for i in indexes}


def test_an_onu_without_a_bound_uni_is_answered_as_bbsim(lab, sub):
    """Another ONU, configured the same but with no UNI bound: its Ethernet frame, GEM port and FEC PM are BBSim's
    random values."""
    onu = lab.activate(PON, 3)
    lab.configure_uni(onu, UNI, 1300, 1010)
    for me_class, me_id in ((UP, lab.ids(UNI)["uni_port"]), (CTP_PM, 1300), (FEC_PM, ANI_G_ID)):
        expected = expected_random(onu, me_class)
        assert pm_get(lab, onu, me_class, me_id, (3, 4, 5)) == {i: expected[i] for i in (3, 4, 5)}


def test_counts_saturate_at_the_attribute_size():
    """A count beyond an attribute's size is its largest value (G.988's counters stop there), so that a counter
    never goes back."""
    class Source:
        def ethernet_frames(self, onu, me_id, upstream):
            return FrameCounts(packets=1 << 40, octets=(1 << 32) - 2, drops=3)
    values = _counted_pm(Source(), None, UP, 1)
    assert (values[3], values[4], values[5]) == (3, (1 << 32) - 2, (1 << 32) - 1)
    assert set(values) == set(range(3, 17)) and values[16] == 0


def test_without_a_pipeline_the_pm_source_carries_nothing(lab):
    """A PM source whose pipeline was never added answers None for everything (the responder then answers as
    BBSim)."""
    pm = PmCounters(lab.vlan)
    onu = lab.olt.pon(PON).onus[0]
    assert pm.ethernet_frames(onu, 0x202, True) is None and pm.gem_port(onu, GEM) is None
    assert pm.ethernet_uni(onu, 0x101) is None and not pm.carries(onu)


def test_make_service_gives_the_responder_the_pipelines_pm_counters():
    """makeService builds the responder with PM counters only with a data plane, and adds the pipeline to them."""
    def responder_of(*arguments):
        options = Options()
        options.parseOptions(["--openolt", "tcp:0:interface=127.0.0.1", "--olt-id", "10", "--pon", "2", "--onu",
                              "16", *arguments])
        olt = next(child for child in makeService(options, Clock()) if isinstance(child, OltService)).olt
        handler = olt.hub.omci
        while not isinstance(handler, OmciResponder):
            handler = handler.wrapped
        return handler, olt
    plain, _ = responder_of()
    assert plain.pm is None
    responder, olt = responder_of("--nni-untagged-interface", "tnu0")
    assert isinstance(responder.pm, PmCounters) and responder.pm.pipeline is olt.hub.frames.pipeline
