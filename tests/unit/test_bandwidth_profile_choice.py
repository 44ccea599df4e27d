"""A services file names each service's SADIS bandwidth profiles (`upstream_bandwidth_profile`,
`downstream_bandwidth_profile`: one name, or a list the OLT's UNIs take in turn); SADIS's uniTagList entries and the
built-in adapter's traffic schedulers follow the choice of each UNI."""
from __future__ import annotations

import pytest
from voltha_protos import tech_profile_pb2

from oltsim.api import sadis
from oltsim.settings.errors import ConfigError
from oltsim.settings.services import BANDWIDTH_PROFILES, load_services
from oltsim.southbound import builtin
from test_builtin_adapter import DHCP_OK, rig  # noqa: F401 - the fixture

TWO_PAIRS = """\
workflow: att
services:
  - name: hsia
    c_tag: 900
    c_tag_allocation: unique
    s_tag: 900
    s_tag_allocation: shared
    needs_dhcp: true
    tp_id: 64
    upstream_bandwidth_profile: [User_Bandwidth1, Default]
    downstream_bandwidth_profile: [User_Bandwidth2, Default]
"""


def write(tmp_path, text: str) -> str:
    path = tmp_path / "services.yaml"
    path.write_text(text)
    return str(path)


def test_a_list_of_profiles_is_taken_in_turn_and_none_named_is_bbsims_pair(tmp_path):
    """The n-th UNI takes entry n modulo the list's length; a service naming none gets User_Bandwidth1 up and
    User_Bandwidth2 down, one name goes to every UNI."""
    spec = load_services(write(tmp_path, TWO_PAIRS)).services[0]
    assert [spec.bandwidth_profiles(n) for n in range(3)] == [
        ("User_Bandwidth1", "User_Bandwidth2"), ("Default", "Default"), ("User_Bandwidth1", "User_Bandwidth2")]
    assert load_services("att").services[0].bandwidth_profiles(5) == ("User_Bandwidth1", "User_Bandwidth2")
    one = load_services(write(tmp_path, TWO_PAIRS.replace("[User_Bandwidth1, Default]", "User_Bandwidth3")))
    assert one.services[0].bandwidth_profiles(1) == ("User_Bandwidth3", "Default")


@pytest.mark.parametrize("value, message", [
    ("User_Bandwith1", "unknown bandwidth profile 'User_Bandwith1' (SADIS serves User_Bandwidth1, User_Bandwidth2, "
                       "User_Bandwidth3, Default); did you mean User_Bandwidth1?"),
    ("[]", "must be a bandwidth profile name or a list of them (got [])"),
    ("[User_Bandwidth1, 7]", "must be a bandwidth profile name or a list of them"),
])
def test_a_profile_sadis_does_not_serve_is_refused_at_load_with_the_names_it_serves(tmp_path, value, message):
    """A name SADIS does not serve, an empty list or a non-name is one ConfigError naming the service and key."""
    with pytest.raises(ConfigError) as caught:
        load_services(write(tmp_path, TWO_PAIRS.replace("[User_Bandwidth1, Default]", value)))
    assert "service 'hsia': upstream_bandwidth_profile" in caught.value.message
    assert message in caught.value.message


def test_sadis_entries_and_the_adapters_schedulers_follow_each_unis_profiles(rig, tmp_path):  # noqa: F811
    """Two ONUs of one UNI: SADIS names User_Bandwidth1/2 for the first UNI's service and Default/Default for the
    second's, and the built-in adapter shapes each ONU's T-CONT and downstream scheduler by its own (PIR = cir + eir
    + air, GIR = air); the adapter's MEF profiles are SADIS's."""
    assert {p["id"]: p for p in sadis.BANDWIDTH_PROFILES["mef"]} == builtin.MEF_PROFILES
    assert tuple(builtin.MEF_PROFILES) == BANDWIDTH_PROFILES
    assert {p["id"] for p in sadis.BANDWIDTH_PROFILES["ietf"]} == set(BANDWIDTH_PROFILES)
    r = rig(pon=1, onu=2, uni=1, services=write(tmp_path, TWO_PAIRS))
    r.run_until(lambda: all(s.dhcp_state == DHCP_OK for s in r.services()), 20, "every service leased")
    entries = [sadis.uni_entry(onu.unis[0])["uniTagList"][0] for onu in r.olt.onus]
    assert [(e["upstreamBandwidthProfile"], e["downstreamBandwidthProfile"]) for e in entries] == [
        ("User_Bandwidth1", "User_Bandwidth2"), ("Default", "Default")]
    shaped = []
    for onu in r.olt.onus:
        shaping = {direction: sched.traffic_shaping_info for (direction, _), (_, sched) in onu.schedulers.items()}
        shaped.append({d: (s.pir, s.cir, s.gir) for d, s in shaping.items()})
    up, down = tech_profile_pb2.UPSTREAM, tech_profile_pb2.DOWNSTREAM
    assert shaped == [{up: (230000, 30000, 100000), down: (300000, 100000, 100000)},
                      {up: (101000, 600, 100000), down: (101000, 600, 100000)}]
