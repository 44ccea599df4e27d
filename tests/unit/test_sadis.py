"""SADIS server in memory: records compared with BBSim's (captured ATT samples, derived DT/TT records),
agreement with the control API, and every refusal as a JSON error."""
from __future__ import annotations

import json
import pathlib
import random

import pytest
from treq.testing import StubTreq
from twisted.internet.task import Clock

from oltsim._proto import bbsim_pb2
from oltsim.api import translate
from oltsim.api.v1.usecases_v1 import V1Commands
from oltsim.api.sadis import SadisRest
from oltsim.config import load_settings
from oltsim.model.builder import build_olt

from conftest import stub_request

GOLDEN = pathlib.Path(__file__).resolve().parent.parent / "golden" / "sadis"
BASE = "http://sadis.test"
NNI0_LOGICAL_PORT = 16777216  # VOLTHA's OpenFlow number of NNI 0, what ONOS compares uplinkPort with


def golden(name: str) -> dict:
    return json.loads((GOLDEN / name).read_text(encoding="utf-8"))["records"]


def make_olt(**given):
    settings = load_settings({"pon": 1, "onu": 1, "services": "att", **given}, None)
    return build_olt(settings, Clock(), random.Random(0))


def make_client(olt, bp_format="mef", host="bbsim", port=50074, olt_ip="0.0.0.0"):
    rest = SadisRest(olt, olt_ip=olt_ip, bp_format=bp_format, advertised_host=host, port=port)
    return StubTreq(rest.resource())


def fetch(client, path, method="GET"):
    """(status, headers, parsed JSON body) of one in-memory request."""
    code, headers, body = stub_request(client, BASE + path, method)
    return code, headers, json.loads(body)


def assert_same(actual, expected):
    """Equal values, and keys in the same order (the wire shape, not just the content)."""
    assert actual == expected
    assert json.dumps(actual) == json.dumps(expected)


def assert_error(client, path, status, code, *fragments, method="GET"):
    got, headers, body = fetch(client, path, method)
    assert got == status, body
    assert headers.getRawHeaders("content-type") == ["application/json"]
    assert list(body) == ["error", "code", "message"]
    assert body["code"] == code and body["error"] == body["message"]
    for fragment in fragments:
        assert fragment in body["message"]
    return headers, body


# ---- records compared with BBSim --------------------------------------------------------------

def test_att_records_equal_the_captured_bbsim_samples():
    """Every 200 record captured from BBSim (pon 1, onu 1, ATT, mef) is served identically, key order included."""
    client = make_client(make_olt())
    for path, expected in golden("att-pon1-onu1-mef.json").items():
        status, headers, body = fetch(client, path)
        assert status == 200, path
        assert headers.getRawHeaders("content-type") == ["application/json"]
        assert_same(body, expected)


@pytest.mark.parametrize("workflow", ["dt", "tt"])
def test_dt_and_tt_subscriber_records_equal_bbsim(workflow):
    """With DT or TT services (pon 2, onu 2) every UNI's record equals BBSim's, tags and MACs included."""
    client = make_client(make_olt(pon=2, onu=2, services=workflow))
    records = golden(f"{workflow}-pon2-onu2.json")
    assert len(records) == 16
    for path, expected in records.items():
        status, _, body = fetch(client, path)
        assert status == 200, path
        assert_same(body, expected)


@pytest.mark.parametrize("workflow", ["dt", "tt"])
def test_static_lists_the_olt_then_every_uni_then_the_profiles(workflow):
    """/v2/static holds the OLT entry, each UNI's record in PON -> ONU -> UNI order, and the mef profiles."""
    client = make_client(make_olt(pon=2, onu=2, services=workflow))
    samples = golden("att-pon1-onu1-mef.json")
    _, _, body = fetch(client, "/v2/static")
    expected = samples["/v2/static"]
    expected["sadis"]["entries"] = ([samples["/v2/subscribers/BBSIM_OLT_0"]]
                                    + list(golden(f"{workflow}-pon2-onu2.json").values()))
    assert_same(body, expected)


def bbsim_bytes() -> dict:
    return json.loads((GOLDEN / "bbsim-bytes.json").read_text(encoding="utf-8"))["scenarios"]


@pytest.mark.parametrize("scenario", sorted(bbsim_bytes()))
def test_bodies_are_bbsims_byte_for_byte(scenario):
    """Every 200 body BBSim 1.16.8 sent for the same numbering (OLT 10 with 2x16 ONUs and IETF profiles; OLT 0 with
    MEF) is oltsim's byte for byte: compact, zero rates left out, no newline after /cfg and /static, one after a
    subscriber or profile record (BBSim's json.Encoder)."""
    case = bbsim_bytes()[scenario]
    given = case["given"]
    client = make_client(make_olt(olt_id=given["olt_id"], pon=given["pon"], onu=given["onu"]),
                         bp_format=given["bp_format"])
    assert len(case["records"]) >= 15
    for path, expected in case["records"].items():
        status, headers, body = stub_request(client, BASE + path)
        assert (status, headers.getRawHeaders("content-type")) == (200, ["application/json"]), path
        assert body == expected.encode("utf-8"), path
        assert body.endswith(b"\n") == ("/subscribers/" in path or "/bandwidthprofiles/" in path), path


def test_zero_rates_are_left_out_of_every_profile():
    """No profile of either format carries a zero-valued optional rate (air, ebs, eir, gir, pir, pbs), in /static
    or alone: BBSim marshals them `omitempty`."""
    for bp_format in ("mef", "ietf"):
        client = make_client(make_olt(), bp_format=bp_format)
        _, _, static = fetch(client, "/v2/static")
        for profile in static["bandwidthprofile"]["entries"]:
            assert all(value for key, value in profile.items() if key not in ("id", "cbs", "cir")), profile
            assert fetch(client, f"/v2/bandwidthprofiles/{profile['id']}")[2] == profile


def test_strings_are_written_as_go_writes_them():
    """A service name with HTML characters, non-ASCII letters and a line separator is written as Go's encoding/json
    writes it: <, >, & and U+2028 as \\u escapes, the rest as UTF-8 (BBSim's bytes, not Python's \\u00e9)."""
    olt = make_olt(olt_id=10, onu=16)
    olt.onus[15].unis[0].services[0].name = "vod<&>é\u2028"
    _, _, body = stub_request(make_client(olt), BASE + "/v2/subscribers/BBSM000a0010-1")
    assert b'"serviceName":"vod\\u003c\\u0026\\u003e\xc3\xa9\\u2028"}]}\n' in body
    assert json.loads(body)["uniTagList"][0]["serviceName"] == "vod<&>é\u2028"


def test_att_c_tags_grow_per_uni_across_onus_and_pons():
    """ATT unique C-tags run 900..915 over PON 0 ONU 1..2 then PON 1 (UNIs 1..4 each), the S-tag stays 900."""
    client = make_client(make_olt(pon=2, onu=2))
    _, _, body = fetch(client, "/v2/static")
    unis = body["sadis"]["entries"][1:]
    assert [e["id"] for e in unis] == [f"BBSM0000{pon:02X}{onu:02X}-{n}"
                                       for pon in range(2) for onu in (1, 2) for n in range(1, 5)]
    assert [e["uniTagList"][0]["ponCTag"] for e in unis] == list(range(900, 916))
    assert {e["uniTagList"][0]["ponSTag"] for e in unis} == {900}


def test_ietf_profiles_have_the_ietf_shape():
    """With bp_format ietf the four profiles carry cbs, cir, gir, pir, pbs; Default's gir is 0, which BBSim leaves
    out (`omitempty`), so its record has no gir."""
    client = make_client(make_olt(), bp_format="ietf")
    expected = [
        {"id": "User_Bandwidth1", "cbs": 10000, "cir": 30000, "gir": 100000, "pir": 20000, "pbs": 1000},
        {"id": "User_Bandwidth2", "cbs": 5000, "cir": 100000, "gir": 100000, "pir": 30000, "pbs": 5000},
        {"id": "User_Bandwidth3", "cbs": 5000, "cir": 1000000, "gir": 100000, "pir": 40000, "pbs": 5000},
        {"id": "Default", "cbs": 30, "cir": 600, "pir": 32000, "pbs": 30},
    ]
    for version in ("v1", "v2"):
        for profile in expected:
            status, _, body = fetch(client, f"/{version}/bandwidthprofiles/{profile['id']}")
            assert status == 200
            assert_same(body, profile)
    _, _, static = fetch(client, "/v2/static")
    assert_same(static["bandwidthprofile"]["entries"], expected)


# ---- identifiers and agreement with the rest of the simulator ---------------------------------

@pytest.mark.parametrize("workflow", ["att", "dt", "tt"])
def test_subscriber_tags_match_the_onu_services_of_the_control_api(workflow):
    """Each UNI's uniTagList has the names, tags, MACs and options of that UNI's services in GetONU."""
    olt = make_olt(pon=2, onu=2, services=workflow)
    client = make_client(olt)
    commands = V1Commands(olt)
    for onu in olt.onus:
        record = translate.to_json_dict(commands.GetONU(bbsim_pb2.ONURequest(SerialNumber=onu.serial)))
        for uni in record["unis"]:
            _, _, entry = fetch(client, f"/v2/subscribers/{onu.serial}-{uni['ID'] + 1}")
            tags = entry["uniTagList"]
            assert [t["serviceName"] for t in tags] == [s["Name"] for s in uni["services"]]
            for tag, service in zip(tags, uni["services"]):
                assert tag.get("ponCTag", 0) == service["CTag"]
                assert tag.get("ponSTag", 0) == service["STag"]
                assert tag.get("uniTagMatch", 0) == service["UniTagMatch"]
                assert tag.get("isDhcpRequired", False) == service["NeedsDhcp"]
                assert tag.get("isIgmpRequired", False) == service["NeedsIgmp"]
                assert tag.get("usPonCTagPriority", 0) == service["UsCTagPriority"]
                assert tag.get("dsPonSTagPriority", 0) == service["DsSTagPriority"]
                if service["ConfigureMacAddress"]:
                    assert tag["configuredMacAddress"] == service["HwAddress"]
                else:
                    assert "configuredMacAddress" not in tag


def test_technology_profile_ids_come_from_the_services():
    """technologyProfileId is each service's tp_id (TT: hsia 64, voip 65, vod and MC 66)."""
    olt = make_olt(services="tt")
    _, _, entry = fetch(make_client(olt), "/v2/subscribers/BBSM00000001-1")
    tp_ids = [t["technologyProfileId"] for t in entry["uniTagList"]]
    assert tp_ids == [s.spec.tp_id for s in olt.onus[0].unis[0].services] == [64, 65, 66, 66]


def test_olt_entry_follows_the_olt_identity():
    """OLT id 3 gives serial BBSIM_OLT_3 and device id ...:03; a configured DHCP trap VLAN appears."""
    olt = make_olt(olt_id=3, nni_dhcp_trap_vid=100)
    client = make_client(olt, olt_ip="10.1.2.3")
    expected = {"id": "BBSIM_OLT_3", "hardwareIdentifier": "0a:0a:0a:0a:0a:03", "ipAddress": "10.1.2.3",
                "nasId": "BBSIM_OLT_3", "uplinkPort": NNI0_LOGICAL_PORT, "nniDhcpTrapVid": 100}
    for version in ("v1", "v2"):
        _, _, body = fetch(client, f"/{version}/subscribers/BBSIM_OLT_3")
        assert_same(body, expected)
    _, _, cfg = fetch(client, "/v2/cfg")
    assert_same(cfg["sadis"]["entries"], [expected])
    _, _, entry = fetch(client, "/v2/subscribers/BBSM00030001-1")
    assert entry["id"] == "BBSM00030001-1"


def test_uplink_port_is_the_controller_side_number_of_nni_0():
    """uplinkPort is VOLTHA's logical port of NNI 0 (1 << 24), the number ONOS matches, not the OpenOLT 0x100000."""
    olt = make_olt()
    _, _, body = fetch(make_client(olt), "/v2/subscribers/BBSIM_OLT_0")
    assert body["uplinkPort"] == (1 << 24) | olt.nnis[0].id == NNI0_LOGICAL_PORT
    assert body["uplinkPort"] != olt.nnis[0].port_no


def test_cfg_urls_use_the_advertised_host_and_port():
    """The integration URLs name the advertised host, the given port and the requested version."""
    client = make_client(make_olt(), host="sadis.example", port=8080)
    for version in ("v1", "v2"):
        _, _, body = fetch(client, f"/{version}/cfg")
        assert body["sadis"]["integration"]["url"] == f"http://sadis.example:8080/{version}/subscribers/%s"
        assert body["bandwidthprofile"]["integration"]["url"] == \
            f"http://sadis.example:8080/{version}/bandwidthprofiles/%s"


def test_ipv6_advertised_host_is_bracketed():
    """An IPv6 literal as advertised host is written in brackets so the URL stays valid."""
    _, _, body = fetch(make_client(make_olt(), host="fd00::5", port=50074), "/v2/cfg")
    assert body["sadis"]["integration"]["url"] == "http://[fd00::5]:50074/v2/subscribers/%s"


def test_pots_ports_have_no_subscriber_entry():
    """With POTS ports, /v2/static lists only the Ethernet UNIs and a POTS number is refused with 400."""
    olt = make_olt(uni=2, pots=1)
    client = make_client(olt)
    _, _, body = fetch(client, "/v2/static")
    assert [e["id"] for e in body["sadis"]["entries"][1:]] == ["BBSM00000001-1", "BBSM00000001-2"]
    assert_error(client, "/v2/subscribers/BBSM00000001-3", 400, 3, "POTS", "Ethernet UNIs 1..2")


def test_unknown_bandwidth_profile_format_is_refused():
    """A bp_format other than mef or ietf is refused when the server is built."""
    with pytest.raises(ValueError, match="mef, ietf"):
        SadisRest(make_olt(), olt_ip="0.0.0.0", bp_format="other", advertised_host="bbsim", port=50074)


# ---- refusals ---------------------------------------------------------------------------------

@pytest.mark.parametrize("path, status, code, fragments", [
    # unknown ids
    ("/v2/subscribers/BBSM0000FFFF-1", 404, 5, ["ONU BBSM0000FFFF not found"]),
    ("/v1/subscribers/BBSM0000FFFF-1", 404, 5, ["ONU BBSM0000FFFF not found"]),
    ("/v2/bandwidthprofiles/Nope", 404, 5, ["Nope", "User_Bandwidth1"]),
    ("/v1/bandwidthprofiles/Nope", 404, 5, ["Nope"]),
    # unsupported versions
    ("/v3/cfg", 404, 5, ["v3", "v1 or v2"]),
    ("/v0/cfg", 404, 5, ["v0"]),
    ("/v3/static", 404, 5, ["v3"]),
    ("/v3/subscribers/BBSIM_OLT_0", 404, 5, ["v3"]),
    ("/v3/subscribers/BBSM00000001-1", 404, 5, ["v3"]),
    ("/v3/bandwidthprofiles/Default", 404, 5, ["v3"]),
    # v1 has no subscriber records (BBSim answers 400 with a bare string) nor a static configuration (BBSim: 400
    # text/plain "api-v1-unsupported")
    ("/v1/subscribers/BBSM00000001-1", 400, 3, ["v1", "/v2/subscribers/BBSM00000001-1"]),
    ("/v1/static", 400, 3, ["v1", "/v2/static"]),
    # malformed subscriber ids
    ("/v2/subscribers/NOPE", 400, 3, ["BBSIM_OLT_0", "<ONU serial>-<UNI number from 1>"]),
    ("/v2/subscribers/BBSM00000001", 400, 3, ["<ONU serial>-<UNI number from 1>"]),
    ("/v2/subscribers/BBSIM_OLT_1", 400, 3, ["BBSIM_OLT_0"]),
    ("/v2/subscribers/BBSM00000001-1-2", 400, 3, ["<ONU serial>-<UNI number from 1>"]),
    ("/v2/subscribers/-1", 400, 3, ["<ONU serial>-<UNI number from 1>"]),
    ("/v2/subscribers/BBSM00000001-", 400, 3, ["positive integer"]),
    ("/v2/subscribers/BBSM00000001-x", 400, 3, ["positive integer", "'x'"]),
    ("/v2/subscribers/BBSM00000001-%2B1", 400, 3, ["positive integer"]),
    ("/v2/subscribers/BBSM00000001-1.0", 400, 3, ["positive integer"]),
    ("/v2/subscribers/BBSM00000001-%C2%B2", 400, 3, ["positive integer"]),
    ("/v2/subscribers/BBSM00000001-0", 400, 3, ["start at 1"]),
    ("/v2/subscribers/BBSM00000001-01", 400, 3, ["leading zeros"]),
    ("/v2/subscribers/BBSM00000001-5", 400, 3, ["no UNI 5", "Ethernet UNIs 1..4"]),
    ("/v2/subscribers/BBSM00000001-" + "9" * 5000, 400, 3, ["Ethernet UNIs 1..4"]),
    # no such path
    ("/v2", 404, 5, ["no such path"]),
    ("/v2/subscribers", 404, 5, ["no such path"]),
    ("/images-count", 404, 5, ["no such path"]),
])
def test_refusals_are_json_errors(path, status, code, fragments):
    """Unknown ids and versions are 404, malformed ids 400, each with the JSON error body."""
    assert_error(make_client(make_olt()), path, status, code, *fragments)


@pytest.mark.parametrize("method", ["POST", "PUT", "DELETE"])
def test_other_methods_are_405_with_allow(method):
    """Only GET is served: other methods get 405, a JSON body and an Allow header."""
    headers, _ = assert_error(make_client(make_olt()), "/v2/cfg", 405, 12, "not allowed", method=method)
    assert "GET" in headers.getRawHeaders("allow")[0]


def test_olt_serial_is_served_on_v1_too():
    """/v1/subscribers/<OLT serial> returns the OLT entry, as BBSim (only UNI records are v2-only)."""
    status, _, body = fetch(make_client(make_olt()), "/v1/subscribers/BBSIM_OLT_0")
    assert status == 200
    assert_same(body, golden("att-pon1-onu1-mef.json")["/v2/subscribers/BBSIM_OLT_0"])


def test_records_are_read_from_the_model_on_each_request():
    """A change to the model shows in the next response: nothing is cached."""
    olt = make_olt()
    client = make_client(olt)
    olt.nni_dhcp_trap_vid = 7
    _, _, body = fetch(client, "/v2/subscribers/BBSIM_OLT_0")
    assert body["nniDhcpTrapVid"] == 7
    olt.onus[0].unis[0].services[0].c_tag = 1234
    _, _, entry = fetch(client, "/v2/subscribers/BBSM00000001-1")
    assert entry["uniTagList"][0]["ponCTag"] == 1234
