"""oltsimctl's pure parts in memory: settings precedence and parsing, bbsimctl's two table layouts (checked against
lines bbsimctl 1.16.8 printed), Go's one-line message text, the event line, `wait`'s state rule, and what changes
when the same code is invoked as bbsimctl (its settings' names, its exit statuses)."""
from __future__ import annotations

import argparse
import re
import shlex
from pathlib import Path

import pytest
from voltha_protos import openolt_pb2

from oltsim._proto import bbsim_pb2, oltsim_pb2
from oltsim.ctl import settings as ctl_settings
from oltsim.ctl import subcommands as commands
from oltsim.ctl.oltsimctl import build_parser, main, profile_named
from oltsim.ctl.subcommands import OLT_COLUMNS, message_table
from oltsim.ctl.connection import EXIT_USAGE, CtlError
from oltsim.ctl.settings import BBSIMCTL, OLTSIMCTL, SettingsError, parse_duration, resolve
from oltsim.ctl.tables import box, columns, go_list, go_text, wrap_words
from oltsim.ctl.watch import StateCheck, event_line, event_types

# ---- settings -----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("text, seconds", [("10s", 10.0), ("1m30s", 90.0), ("500ms", 0.5), ("2", 2.0), (3, 3.0),
                                           ("1h", 3600.0), ("0.25", 0.25)])
def test_durations_in_go_and_plain_form(text, seconds):
    """Durations read as bbsimctl's config writes them (Go durations) or as plain seconds."""
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["10x", "s", "", "0", "-1", "1s2", True])
def test_bad_durations_are_refused(text):
    """Anything else, and zero or negative durations, are refused with a message naming the value."""
    with pytest.raises(SettingsError):
        parse_duration(text)


def args(*argv: str) -> argparse.Namespace:
    return build_parser().parse_args([*argv, "olt", "get"])


def test_flag_beats_environment_beats_config_file(tmp_path):
    """--server wins over OLTSIMCTL_SERVER, which wins over the config file, which wins over the default; the
    config file's grpc.timeout is the call deadline unless --timeout is given."""
    config = tmp_path / "config"
    config.write_text("server: from-file:1\ngrpc:\n  timeout: 3s\n")
    home = {"HOME": str(tmp_path)}
    assert resolve(args(), home).server == ctl_settings.DEFAULT_SERVER
    assert resolve(args("-c", str(config)), home).server == "from-file:1"
    assert resolve(args("-c", str(config)), home).timeout == 3.0
    assert resolve(args("-c", str(config), "--timeout", "7"), home).timeout == 7.0
    env = {**home, "OLTSIMCTL_SERVER": "from-env:2", "OLTSIMCTL_CONFIG": str(config)}
    assert resolve(args(), env).server == "from-env:2"
    assert resolve(args("-s", "from-flag:3"), env).server == "from-flag:3"


def test_options_after_the_command_are_global_too():
    """A global option given after the command counts; one given only before it is kept."""
    parsed = build_parser().parse_args(["-s", "a:1", "onu", "list", "-o", "json"])
    assert (parsed.server, parsed.output) == ("a:1", "json")
    parsed = build_parser().parse_args(["onu", "list", "--server", "b:2"])
    assert (parsed.server, parsed.output) == ("b:2", "table")


def test_tls_and_token_from_config_file_relative_to_it(tmp_path):
    """TLS files and the token file of a config file are relative to it; the token is stripped; TLS is implied
    by a CA file; `describe` names where the token came from, never the token."""
    (tmp_path / "token").write_text("  secret-token\n")
    config = tmp_path / "config"
    config.write_text("tls:\n  ca_cert: ca.pem\n  server_name: olt.example\ntoken_file: token\n")
    resolved = resolve(args("-c", str(config)), {})
    assert (resolved.tls, resolved.ca_cert, resolved.server_name) == (True, tmp_path / "ca.pem", "olt.example")
    assert resolved.token == "secret-token"
    assert "secret-token" not in repr(resolved) and "secret-token" not in str(resolved.describe())


def test_token_sources_in_order(tmp_path):
    """--token-file, then --token, then OLTSIM_TOKEN; both flags at once, an empty file or half a client
    certificate are refused."""
    token_file = tmp_path / "token"
    token_file.write_text("from-file")
    assert resolve(args("--token-file", str(token_file)), {"OLTSIM_TOKEN": "env"}).token == "from-file"
    assert resolve(args("--token", "flag"), {"OLTSIM_TOKEN": "env"}).token == "flag"
    assert resolve(args(), {"OLTSIM_TOKEN": "env", "HOME": str(tmp_path)}).token == "env"
    empty = tmp_path / "empty"
    empty.write_text("\n")
    for argv in (("--token-file", str(token_file), "--token", "x"), ("--token-file", str(empty)),
                 ("--client-cert", "c.pem"), ("-c", str(tmp_path / "missing"))):
        with pytest.raises(SettingsError):
            resolve(args(*argv), {"HOME": str(tmp_path)})


def test_config_file_with_unknown_keys_is_refused(tmp_path):
    """A misspelt key in the config file is an error naming it, not silently ignored."""
    config = tmp_path / "config"
    config.write_text("sever: x:1\n")
    with pytest.raises(SettingsError, match="sever"):
        resolve(args("-c", str(config)), {})


# ---- tables -------------------------------------------------------------------------------------------------

def test_tabwriter_table_is_bbsimctls():
    """`olt get` as bbsimctl 1.16.8 printed it: four spaces after the widest cell, last column unpadded."""
    olt = bbsim_pb2.Olt(ID=0, SerialNumber="BBSIM_OLT_0", OperState="down", InternalState="initialized",
                        IP="127.0.0.1")
    assert message_table(OLT_COLUMNS, [olt]) == (
        "ID    SERIALNUMBER    OPERSTATE    INTERNALSTATE    IP           NNIDHCPTRAPVID\n"
        "0     BBSIM_OLT_0     down         initialized      127.0.0.1    0\n")
    assert columns(["ID", "NAME"], []) == "ID    NAME\n"


def test_box_tables_are_bbsimctls():
    """tablewriter's boxes as bbsimctl 1.16.8 printed them: the alarm list (no row rules) and the traffic
    scheduler table (a rule under each row, numbers right-aligned, headers centred)."""
    assert box(["OLT Alarms"], [["OLT_NNI_LOS"], ["OLT_PON_LOS"]], row_lines=False) == (
        "+-------------+\n"
        "| OLT ALARMS  |\n"
        "+-------------+\n"
        "| OLT_NNI_LOS |\n"
        "| OLT_PON_LOS |\n"
        "+-------------+\n")
    assert box(["InferredAdditionBwIndication", "Cbs", "Cir", "Gir", "Pbs", "Pir"],
               [["InferredAdditionBWIndication_None", 30, 600, 0, 30, 32000]]) == (
        "+-----------------------------------+-----+-----+-----+-----+-------+\n"
        "|   INFERREDADDITIONBWINDICATION    | CBS | CIR | GIR | PBS |  PIR  |\n"
        "+-----------------------------------+-----+-----+-----+-----+-------+\n"
        "| InferredAdditionBWIndication_None |  30 | 600 |   0 |  30 | 32000 |\n"
        "+-----------------------------------+-----+-----+-----+-----+-------+\n")


def test_box_wraps_long_cells_at_30_characters_as_tablewriter():
    """A cell over 30 characters spans several lines of least raggedness (not greedy), its column 30 wide; a
    trailing space is kept; numbers are right-aligned line by line."""
    text = box(["a", "classifier"], [["800", "o_vid:900 o_pbits:255 eth_type:2048 src_port:68 dst_port:67 "],
                                     ["888e", "cmd:<> "]])
    assert text == (
        "+------+--------------------------------+\n"
        "|  A   |           CLASSIFIER           |\n"
        "+------+--------------------------------+\n"
        "|  800 | o_vid:900 o_pbits:255          |\n"
        "|      | eth_type:2048 src_port:68      |\n"
        "|      | dst_port:67                    |\n"
        "+------+--------------------------------+\n"
        "| 888e | cmd:<>                         |\n"
        "+------+--------------------------------+\n")
    assert wrap_words("aaa bb cc ddddd", 6) == (["aaa", "bb cc", "ddddd"], 6)  # greedy: "aaa bb", "cc", ...


def test_go_text_is_gos_compact_text():
    """Messages print as Go's String() in BBSim: set fields only, in declaration order (the Olt's IP, field 7, comes
    before its NNIPorts, field 5), each followed by a space, strings quoted, nested messages in <...>."""
    classifier = openolt_pb2.Classifier(o_vid=900, eth_type=2048, dst_port=67, pkt_tag_type="single_tag")
    assert go_text(classifier) == 'o_vid:900 eth_type:2048 dst_port:67 pkt_tag_type:"single_tag" '
    assert go_text(openolt_pb2.Action(cmd=openolt_pb2.ActionCmd())) == "cmd:<> "
    olt = bbsim_pb2.Olt(SerialNumber="S", IP="10.0.0.1", NNIPorts=[bbsim_pb2.NNIPort(OperState="up")])
    assert go_text(olt) == 'SerialNumber:"S" IP:"10.0.0.1" NNIPorts:<OperState:"up" > '
    allocated = [bbsim_pb2.PonAllocatedResources(SerialNumber="BBSM00000001", Id=1),
                 bbsim_pb2.PonAllocatedResources(SerialNumber="BBSM00000002", Id=2)]
    assert go_list(allocated) == '[SerialNumber:"BBSM00000001" Id:1  SerialNumber:"BBSM00000002" Id:2 ]'
    assert go_list([]) == "[]"


# ---- events and wait ----------------------------------------------------------------------------------------

def test_event_line_names_only_the_ids_it_has():
    """An event line: UTC time in ms, type, the ids that are set (not -1), the serial, details sorted by name."""
    event = oltsim_pb2.Event(type="onu-state-changed", time=1795484411.25, pon_id=1, onu_id=2, uni_id=-1,
                             onu_serial="BBSM00000102", details={"to": "enabled", "attribute": "InternalState",
                                                                 "from": "discovered"})
    assert event_line(event) == ("2026-11-24T01:40:11.250Z onu-state-changed pon=1 onu=2 serial=BBSM00000102 "
                                 "attribute=InternalState from=discovered to=enabled")


def test_events_leave_out_omci_packets_and_statistics_unless_asked():
    """`events` alone asks for the state, alarm and scenario events (no OMCI frames, packets, port statistics);
    `--all` for everything (no type filter); `--type` for those named; --all with --type is a usage error."""
    parse = build_parser().parse_args
    default = event_types(parse(["events"]))
    assert {"onu-state-changed", "service-state-changed", "alarm", "scenario-step-started"} <= set(default)
    assert not {"omci-indication", "packet-indication", "port-stats"} & set(default)
    assert event_types(parse(["events", "--all"])) == []
    assert event_types(parse(["events", "--type", "omci-indication", "--onu", "BBSM00000001"])) == [
        "omci-indication"]
    with pytest.raises(SystemExit):
        parse(["events", "--all", "--type", "alarm"])


def onu(state: str, *services: bbsim_pb2.Service) -> bbsim_pb2.ONU:
    return bbsim_pb2.ONU(SerialNumber="BBSM00000001", InternalState=state, unis=[bbsim_pb2.UNI(services=services)])


def test_wait_state_rule():
    """ONU states compare the ONU's InternalState; a DHCP state needs every DHCP service of the ONU in it
    (services without DHCP are not looked at); unknown states are a usage error listing the known ones."""
    assert StateCheck("enabled").status(onu("enabled")) == (True, "enabled")
    assert StateCheck("enabled").status(onu("discovered")) == (False, "discovered")
    dhcp = StateCheck("dhcp_ack_received")
    done = bbsim_pb2.Service(NeedsDhcp=True, DhcpState="dhcp_ack_received")
    pending = bbsim_pb2.Service(NeedsDhcp=True, DhcpState="dhcp_request_sent")
    no_dhcp = bbsim_pb2.Service(NeedsDhcp=False, DhcpState="created")
    assert dhcp.status(onu("enabled", done, no_dhcp)) == (True, "enabled, service: dhcp_ack_received")
    assert dhcp.status(onu("enabled", done, pending))[0] is False
    assert not dhcp.takes_part(onu("enabled", no_dhcp))
    assert dhcp.status(onu("enabled", no_dhcp))[0] is False
    with pytest.raises(CtlError) as refused:
        StateCheck("sleeping")
    assert refused.value.code == EXIT_USAGE and "dhcp_ack_received" in str(refused.value)


def service(name: str, uni: int, eapol: str = "", dhcp: str = "", igmp: str = "") -> bbsim_pb2.Service:
    return bbsim_pb2.Service(Name=name, UniId=uni, NeedsEapol=bool(eapol), EapolState=eapol or "created",
                             NeedsDhcp=bool(dhcp), DhcpState=dhcp or "created", NeedsIgmp=bool(igmp),
                             IGMPState=igmp or "created", InternalState="initialized")


def test_wait_names_the_onus_state_and_each_subscribers_progress():
    """A service state not reached names the ONU's own state (not a service's `created`), then
    each service's EAPOL and DHCP states (IGMP when an IGMP state is waited for); services of one name in the same
    place are named once, in different places with their UNI; `created`, every machine's first state, says whose;
    the timeout line separates ONUs with `;`."""
    dhcp = StateCheck("dhcp_ack_received")
    hsia = [service("hsia", uni, "eap_response_success_received", "dhcp_discovery_sent") for uni in range(4)]
    assert dhcp.status(onu("enabled", *hsia)) == (
        False, "enabled, hsia: eap_response_success_received, dhcp_discovery_sent")
    mixed = [service("hsia", 0, "eap_start_sent", "created"), service("hsia", 1, "eap_response_success_received",
                                                                      "dhcp_ack_received"),
             service("voip", 0, dhcp="dhcp_request_sent", igmp="igmp_join_started")]
    assert dhcp.status(onu("enabled", *mixed))[1] == (
        "enabled, hsia uni 0: eap_start_sent, dhcp created, hsia uni 1: eap_response_success_received, dhcp_ack_received, "
        "voip: dhcp_request_sent")
    assert StateCheck("igmp_left").status(onu("enabled", *mixed))[1] == "enabled, voip: dhcp_request_sent, " \
                                                                         "igmp_join_started"
    assert dhcp.status(onu("disabled", *hsia))[1].startswith("disabled, hsia: ")
    statuses = {"BBSM00000001": dhcp.status(onu("enabled", *hsia)), "BBSM00000002": (True, "enabled, hsia: x"),
                "BBSM00000003": dhcp.status(onu("discovered", *hsia))}
    from oltsim.ctl.watch import _short
    assert _short(statuses, "dhcp_ack_received") == (
        "1 of 3 ONUs in dhcp_ack_received; not yet: BBSM00000001 enabled, hsia: eap_response_success_received, "
        "dhcp_discovery_sent; BBSM00000003 discovered, hsia: eap_response_success_received, dhcp_discovery_sent")


def doc_command_lines() -> list[str]:
    """Every `.venv/bin/oltsimctl ...` line of the sh blocks of docs/oltsimctl.md, docs/examples.md and the README
    (continuations joined, comments and what a pipe feeds cut), as `oltsimctl ...`."""
    repo = Path(__file__).resolve().parents[2]
    found = []
    for doc in ("docs/oltsimctl.md", "docs/examples.md", "README.md"):
        for block in re.findall(r"^```sh\n(.*?)^```", (repo / doc).read_text(), re.DOTALL | re.MULTILINE):
            for line in block.replace("\\\n", " ").splitlines():
                words = shlex.split(line, comments=True)
                words = words[:words.index("|")] if "|" in words else words  # `... | wireshark -k -i -`
                if words and words[0] in ("oltsimctl", ".venv/bin/oltsimctl"):
                    found.append(" ".join(shlex.quote(w) for w in ["oltsimctl", *words[1:]]))
    return found


def test_every_documented_command_line_parses():
    """The command lines the docs show are accepted by the parser as written (the docs follow the options)."""
    lines = doc_command_lines()
    assert len(lines) >= 8
    for line in lines:
        parsed = build_parser().parse_args(shlex.split(line)[1:])
        assert callable(parsed.handler), line


def test_an_unexpected_error_is_one_line_unless_debugging(monkeypatch, capsys, tmp_path):
    """A failure oltsimctl does not expect (a bug) is still one stderr line and exit 1; OLTSIMCTL_DEBUG lets the
    exception (and its traceback) through."""
    from oltsim.ctl import oltsimctl as cli, subcommands as commands

    def broken(*_):
        raise RuntimeError("boom")

    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("OLTSIMCTL_DEBUG", raising=False)
    monkeypatch.setattr(commands, "show_config", broken)
    assert cli.main(["config"]) == 1
    assert capsys.readouterr().err == ("oltsimctl: unexpected error: RuntimeError: boom "
                                       "(set OLTSIMCTL_DEBUG=1 for the traceback)\n")
    monkeypatch.setenv("OLTSIMCTL_DEBUG", "1")
    with pytest.raises(RuntimeError):
        cli.main(["config"])


# ---- as bbsimctl ---------------------------------------------------------------------------------------------

def test_as_bbsimctl_the_settings_come_from_bbsimctls_names(tmp_path):
    """Invoked as bbsimctl: BBSIMCTL_SERVER beats BBSIMCTL_CONFIG's file, ~/.bbsim/config is the default file,
    oltsimctl's names are not read, and a named config file that does not exist is skipped as bbsimctl skips it;
    the default server is bbsimctl's localhost:50070."""
    parse = lambda *argv: build_parser(BBSIMCTL).parse_args([*argv, "olt", "get"])  # noqa: E731
    (tmp_path / ".bbsim").mkdir()
    (tmp_path / ".bbsim" / "config").write_text("server: from-home:1\n")
    (tmp_path / "other").write_text("server: from-env-file:2\n")
    home = {"HOME": str(tmp_path), "OLTSIMCTL_SERVER": "not-read:9"}
    assert resolve(parse(), home, BBSIMCTL).server == "from-home:1"
    assert resolve(parse(), {**home, "BBSIMCTL_CONFIG": str(tmp_path / "other")}, BBSIMCTL).server == \
        "from-env-file:2"
    assert resolve(parse(), {**home, "BBSIMCTL_SERVER": "from-env:3"}, BBSIMCTL).server == "from-env:3"
    assert resolve(parse("-s", "from-flag:4"), {**home, "BBSIMCTL_SERVER": "x:3"}, BBSIMCTL).server == "from-flag:4"
    assert resolve(parse("-d", "-c", str(tmp_path / "missing")), {}, BBSIMCTL).server == "localhost:50070"
    assert resolve(args(), home).server == "not-read:9"  # oltsimctl itself unchanged


def test_as_bbsimctl_every_failure_exits_1_and_names_bbsimctl(tmp_path, capsys):
    """bbsimctl exits 1 on any failure (log.Fatalf, go-flags errors), where oltsimctl tells them apart: a bad
    command line and an unreadable config file exit 1 as bbsimctl and 2 as oltsimctl; the messages name the program
    they were invoked as; --help still exits 0."""
    bad = tmp_path / "bad"
    bad.write_text("server: [\n")
    for profile, usage_code in ((BBSIMCTL, 1), (OLTSIMCTL, 2)):
        try:
            code = main(["onu", "nosuchcommand"], profile)
        except SystemExit as exc:
            code = exc.code
        assert code == usage_code
        err = capsys.readouterr().err
        if profile is BBSIMCTL:  # go-flags' usage, as Go bbsimctl prints it
            assert f"usage: {profile.prog} onu" in err
        else:  # one line
            assert err.startswith("oltsimctl: onu: unknown command 'nosuchcommand' (one of list, get,")
            assert err.endswith(" (see oltsimctl onu --help)\n") and err.count("\n") == 1
        assert main(["-c", str(bad), "olt", "get"], profile) == usage_code
        assert capsys.readouterr().err.startswith(f"{profile.prog}: config file ")
    with pytest.raises(SystemExit) as exited:
        main(["--help"], BBSIMCTL)
    assert exited.value.code == 0 and capsys.readouterr().out.startswith("usage: bbsimctl")


def test_as_bbsimctl_a_refused_igmp_exits_0(monkeypatch, capsys):
    """bbsimctl's `onu igmp` only logs a refused call and exits 0 (the system tests' JoinOrLeave Igmp checks
    rc 0); oltsimctl fails with 1. Either way the refusal is one stderr line."""
    def refused(conn, args, out):
        raise CtlError("NOT_FOUND: ONU BBSM000a010b not found")

    monkeypatch.setattr(commands, "onu_igmp", refused)
    argv = ["-s", "127.0.0.1:1", "onu", "igmp", "BBSM000a010b", "0", "join", "224.0.0.22"]
    assert main(argv, BBSIMCTL) == 0
    assert capsys.readouterr().err == "bbsimctl: NOT_FOUND: ONU BBSM000a010b not found\n"
    assert main(argv, OLTSIMCTL) == 1
    assert capsys.readouterr().err == "oltsimctl: NOT_FOUND: ONU BBSM000a010b not found\n"


def test_the_invoked_name_chooses_the_profile():
    """A program (or link) named bbsimctl is BBSim's client; oltsimctl and `python -m` are oltsimctl."""
    assert profile_named("/usr/local/bin/bbsimctl") is BBSIMCTL
    assert profile_named("bbsimctl") is BBSIMCTL
    assert profile_named("/opt/oltsim/bin/oltsimctl") is OLTSIMCTL
    assert profile_named("/src/oltsim/ctl/oltsimctl.py") is OLTSIMCTL
