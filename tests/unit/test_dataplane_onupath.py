"""The ONU's bridge with several technology profiles (oltsim.dataplane.onupath): each ANI-side bridge port has its
own VLAN filter and 802.1p mapper, a frame goes to the port whose filter takes it and whose mapper has a GEM port
for its p-bit; compiled from the OMCI record as VOLTHA's ONU adapter writes it (the built-in adapter's TT OMCI)."""
from __future__ import annotations

from oltsim.dataplane.onupath import OnuPart
from oltsim.dataplane.vlan import VlanFilter, tag

FORWARD_VID = 0x10


def vtfd(*vids: int) -> VlanFilter:
    return VlanFilter(b"".join(v.to_bytes(2, "big") for v in vids), FORWARD_VID, len(vids))


def test_the_filter_picks_the_port_and_the_p_bit_the_gem_port():
    """VID 444 goes to the VoIP port (its mapper: p-bit 7 only), VID 900 to HSIA's (every p-bit); a VoIP frame of
    another p-bit has no GEM port (no-gem), a VID no port's filter takes is refused (vlan-filter), and downstream a
    frame passes when one port's filter takes it."""
    part = OnuPart(ani=[(vtfd(900), {p: 1024 for p in range(8)}), (vtfd(444), {7: 1025}), (vtfd(55), {5: 1026})])
    assert part.upstream((tag(444, 7),), 0x0800) == ((tag(444, 7),), 1025, None)
    assert part.upstream((tag(900, 3),), 0x0800) == ((tag(900, 3),), 1024, None)
    assert part.upstream((tag(55, 5),), 0x0800)[1] == 1026
    assert part.upstream((tag(444, 0),), 0x0800) == (None, None, "no-gem")
    assert part.upstream((tag(901, 0),), 0x0800) == (None, None, "vlan-filter")
    assert part.downstream((tag(444, 7),), 0x0800) == ((tag(444, 7),), None)
    assert part.downstream((tag(901, 7),), 0x0800) == (None, "vlan-filter")
    assert sorted(set(part.gem_by_pbit.values())) == [1024]      # HSIA's first for every p-bit (the PM view)


def test_one_port_without_filter_is_as_before():
    """The single port of the ATT profile given as `gem_by_pbit` (no ANI filter): every p-bit to its GEM port."""
    part = OnuPart(gem_by_pbit={p: 1024 for p in range(8)})
    assert part.upstream((tag(900, 6),), 0x0800) == ((tag(900, 6),), 1024, None)
    assert part.upstream((), 0x0800) == ((), 1024, None)
    assert OnuPart(gem_by_pbit={}).upstream((), 0x0800) == (None, None, "no-gem")
    assert OnuPart().upstream((tag(5),), 0x0800) == ((tag(5),), None, None)
