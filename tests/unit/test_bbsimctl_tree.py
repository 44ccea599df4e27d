"""oltsim's `bbsimctl` against Go bbsimctl 1.16.8's command tree, written down here as data from its source
(opencord/bbsim cmd/bbsimctl/bbsimctl.go and internal/bbsimctl/commands/*.go): every command, subcommand, positional
argument and flag must be there, read as go-flags reads them (extra words ignored, global options between command
names), with bbsimctl's exit statuses; plus the tables and the completion protocol that go with them, in memory.
"""
from __future__ import annotations

import argparse
import io
from dataclasses import dataclass

import pytest

from oltsim._proto import bbsim_dmi_pb2, bbsim_pb2
from oltsim.ctl import oltsimctl as cli, subcommands as commands, goflags
from oltsim.ctl.connection import EXIT_OK
from oltsim.ctl.settings import BBSIMCTL, OLTSIMCTL
from oltsim.ctl.tables import tabwriter


@dataclass(frozen=True)
class Leaf:
    """A Go bbsimctl command that runs: its positional arguments in order (go-flags name, a value to try),
    whether they are required (`required:"yes"`), and its flags ((short, long, a value or None for a switch))."""

    args: tuple[tuple[str, str], ...] = ()
    required: bool = True
    flags: tuple[tuple[str | None, str | None, str | None], ...] = ()


VERBOSE = (("-v", "--verbose", None),)
ONU_SN = ("OnuSn", "BBSM000a0001")

#: Go bbsimctl 1.16.8's global options (config.GlobalOptions, plus go-flags' HelpFlag), on every command.
GLOBAL_FLAGS = (("-c", "--config", "/nonexistent/bbsimctl-config"), ("-s", "--server", "localhost:50070"),
                ("-d", "--debug", None), ("-h", "--help", None))

#: Go bbsimctl 1.16.8's command tree: a dict is a group of commands, a Leaf a command that runs.
GO_TREE: dict = {
    "config": Leaf(),
    "olt": {
        "get": Leaf(),
        "resources": Leaf(args=(("Type", "GEM_PORT"),)),
        "nnis": Leaf(),
        "pons": Leaf(),
        "shutdown": Leaf(),
        "poweron": Leaf(),
        "reboot": Leaf(),
        "alarms": {
            "raise": Leaf(args=(("Name", "OLT_PON_LOS"), ("IntfID", "1"))),
            "clear": Leaf(args=(("Name", "OLT_PON_LOS"), ("IntfID", "1"))),
            "list": Leaf(),
        },
        "flows": Leaf(),
        "poweronAllONUs": Leaf(),
        "shutdownAllONUs": Leaf(),
        "stopServer": Leaf(),
        "startServer": Leaf(),
        "restartServer": Leaf(args=(("Delay", "5"),)),
    },
    "onu": {
        "list": Leaf(flags=VERBOSE),
        "get": Leaf(args=(ONU_SN,), flags=VERBOSE),
        "shutdown": Leaf(args=(ONU_SN,)),
        "poweron": Leaf(args=(ONU_SN,)),
        "auth_restart": Leaf(args=(ONU_SN,)),
        "dhcp_restart": Leaf(args=(ONU_SN,)),
        "igmp": Leaf(args=(ONU_SN, ("UniId", "0"), ("SubAction", "join"), ("GroupAddress", "224.0.0.22")),
                     flags=(("-v", "--vlan", "550"),)),
        "traffic_schedulers": Leaf(args=(ONU_SN,)),
        "alarms": {
            "raise": Leaf(args=(("Name", "ONU_ALARM_LOS"), ("SerialNumber", "BBSM000a0001")),
                          flags=(("-p", None, "Key=Value"),)),
            "clear": Leaf(args=(("Name", "ONU_ALARM_LOS"), ("SerialNumber", "BBSM000a0001")),
                          flags=(("-p", None, "Key=Value"),)),
            "list": Leaf(),
        },
        "flows": Leaf(args=(ONU_SN,)),
        "services": Leaf(args=(ONU_SN,), required=False),
        "invalidate_mds": Leaf(args=(ONU_SN,)),
    },
    "uni": {
        "list": Leaf(flags=VERBOSE),
        "get": Leaf(args=(ONU_SN,), flags=VERBOSE),
        "services": Leaf(args=(ONU_SN, ("UniId", "0")), required=False, flags=VERBOSE),
        "auth_restart": Leaf(args=(ONU_SN, ("UniId", "0"))),
        "dhcp_restart": Leaf(args=(ONU_SN, ("UniId", "0"))),
    },
    "service": {
        "list": Leaf(),
    },
    "pon": {
        "poweronAllONUs": Leaf(args=(("IntfID", "1"),)),
        "shutdownAllONUs": Leaf(args=(("IntfID", "1"),)),
    },
    "completion": {
        "bash": Leaf(),
    },
    "log": Leaf(args=(("Level", "debug"), ("Caller", "false"))),
    "dmi": {
        "events": {
            "create": Leaf(args=(("Name", "EVENT_FAN_FAILURE"),)),
        },
        "transceiver": {
            "plug_in": Leaf(args=(("TransceiverId", "1"),)),
            "plug_out": Leaf(args=(("TransceiverId", "1"),)),
            "list": Leaf(),
        },
    },
}


def walk(tree: dict, path: tuple[str, ...] = ()):
    """(path, Leaf) for every command of `tree` that runs."""
    for name, node in tree.items():
        if isinstance(node, Leaf):
            yield path + (name,), node
        else:
            yield from walk(node, path + (name,))


def groups(tree: dict, path: tuple[str, ...] = ()):
    """(path, group) for every group of `tree`, the root included."""
    yield path, tree
    for name, node in tree.items():
        if isinstance(node, dict):
            yield from groups(node, path + (name,))


LEAVES = list(walk(GO_TREE))
GROUPS = list(groups(GO_TREE))


def ident(path) -> str:
    return " ".join(path) or "(root)"


def parser_at(path: tuple[str, ...], profile=BBSIMCTL) -> argparse.ArgumentParser:
    """oltsim's parser for the command `path`; fails naming the first missing name."""
    parser = cli.build_parser(profile)
    for depth, name in enumerate(path):
        commands_here = goflags.subcommands(parser)
        assert name in commands_here, f"bbsimctl lacks `{' '.join(path[:depth + 1])}`"
        parser = commands_here[name]
    return parser


def option_strings(parser: argparse.ArgumentParser) -> set[str]:
    return {option for action in parser._actions for option in action.option_strings}


def parse(*argv: str) -> argparse.Namespace:
    return cli.parse(list(argv), BBSIMCTL)


def go_text(value) -> str:
    return ("true" if value else "false") if isinstance(value, bool) else str(value)


def sample_line(path, leaf: Leaf) -> list[str]:
    """The command with a value for each argument and each flag."""
    line = list(path) + [value for _, value in leaf.args]
    for short, long, value in leaf.flags:
        line += [short or long] + ([value] if value is not None else [])
    return line


# ---- the tree --------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("path,group", GROUPS, ids=[ident(p) for p, _ in GROUPS])
def test_every_group_has_gos_commands(path, group):
    """Each group of Go bbsimctl's tree (the root, olt, onu, dmi, dmi transceiver ...) has every command Go's has,
    and each is a group or a runnable command as in Go."""
    parser = parser_at(path)
    ours = goflags.subcommands(parser)
    for name, node in group.items():
        assert name in ours, f"bbsimctl lacks `{ident(path + (name,))}`"
        assert bool(goflags.subcommands(ours[name])) == isinstance(node, dict), ident(path + (name,))


@pytest.mark.parametrize("path,leaf", LEAVES, ids=[ident(p) for p, _ in LEAVES])
def test_every_command_has_gos_arguments_and_flags(path, leaf):
    """Each runnable command takes Go's positional arguments (as many, required or optional as in Go), its flags
    (short and long names, a value where Go's takes one) and the global options."""
    parser = parser_at(path)
    positionals = goflags.positionals(parser)
    assert len(positionals) == len(leaf.args), [a.dest for a in positionals]
    for action in positionals:
        assert (action.nargs is None) == leaf.required, action.dest
    options = option_strings(parser)
    for short, long, value in leaf.flags + GLOBAL_FLAGS:
        for name in (short, long):
            if name is not None:
                assert name in options, f"`{ident(path)}` lacks {name}"
                assert (parser._option_string_actions[name].nargs != 0) == (value is not None), name


@pytest.mark.parametrize("path,leaf", LEAVES, ids=[ident(p) for p, _ in LEAVES])
def test_every_command_line_parses_and_ignores_extra_words(path, leaf):
    """Each command with its arguments and flags parses to its handler with the arguments in order; as with
    go-flags, words after the arguments are ignored, a flag among them included."""
    line = sample_line(path, leaf)
    args = parse(*line, "stray", "words", "-v")
    assert args.handler is not None
    values = [getattr(args, action.dest) for action in goflags.positionals(parser_at(path))]
    assert [go_text(value) for value in values] == [value for _, value in leaf.args]
    if leaf.flags == VERBOSE:
        assert args.verbose is True
        assert parse(*path, *[value for _, value in leaf.args], "stray", "-v").verbose is False


@pytest.mark.parametrize("path,leaf", [(p, leaf) for p, leaf in LEAVES if leaf.args and leaf.required],
                         ids=[ident(p) for p, leaf in LEAVES if leaf.args and leaf.required])
def test_missing_argument_exits_1(path, leaf, capsys):
    """A command without its last required argument fails with exit 1, as go-flags' `the required argument ...
    was not provided`."""
    line = list(path) + [value for _, value in leaf.args[:-1]]
    assert cli.main(line, BBSIMCTL) == 1
    assert "required" in capsys.readouterr().err


@pytest.mark.parametrize("path", [p for p, _ in GROUPS if p], ids=[ident(p) for p, _ in GROUPS if p])
def test_group_without_command_exits_1(path, capsys):
    """A group given no command (`bbsimctl dmi`, `bbsimctl dmi events`) or an unknown one fails with exit 1."""
    assert cli.main(list(path), BBSIMCTL) == 1
    assert cli.main([*path, "nosuchcommand"], BBSIMCTL) == 1
    capsys.readouterr()


def test_help_exits_0():
    """`--help` at any level exits 0, as go-flags' ErrHelp does."""
    for line in (["--help"], ["dmi", "-h"], ["dmi", "transceiver", "plug_in", "--help"]):
        with pytest.raises(SystemExit) as exit_:
            cli.main(line, BBSIMCTL)
        assert exit_.value.code == 0


def test_global_options_between_command_names():
    """go-flags reads the global options at every level: `olt -d get`, `dmi -s host:1 transceiver list`."""
    assert parse("olt", "-d", "get").handler is commands.olt_get
    args = parse("dmi", "-s", "host:1", "transceiver", "--server=host:2", "list")
    assert args.handler is commands.dmi_transceiver_list and args.server == "host:2"
    assert parse("dmi", "-s", "host:1", "transceiver", "list").server == "host:1"


def test_double_dash_makes_words_positional():
    """After `--` the words fill the command's arguments (go-flags' PassDoubleDash), the rest ignored."""
    args = parse("onu", "alarms", "raise", "--", "ONU_ALARM_LOS", "BBSM000a0001", "more")
    assert (args.name, args.onu_sn) == ("ONU_ALARM_LOS", "BBSM000a0001")


def test_oltsimctl_stays_strict():
    """oltsimctl keeps refusing a stray word (exit 2); only bbsimctl reads its command line as go-flags does."""
    with pytest.raises(SystemExit) as exit_:
        cli.main(["uni", "list", "BBSM000a0001"], OLTSIMCTL)
    assert exit_.value.code == 2


def test_oltsimctl_extensions_kept():
    """The tree shared with oltsimctl keeps its own commands and aliases under both names."""
    for profile in (BBSIMCTL, OLTSIMCTL):
        root = goflags.subcommands(cli.build_parser(profile))
        assert {"alarms", "scenario", "events", "wait", "dmi", "completion"} <= set(root)
        assert "restartEapol" in goflags.subcommands(root["onu"])


# ---- tables ----------------------------------------------------------------------------------------------------

class FakeConnection:
    """Answers each call with the message given for its method; records the calls."""

    def __init__(self, **answers):
        self.answers = answers
        self.calls = []

    def call(self, method, request, service="bbsim", timeout=None):
        self.calls.append((service, method, request))
        return self.answers[method]


def run(handler, conn, *argv: str) -> str:
    out = io.StringIO()
    assert handler(conn, parse(*argv), out) == EXIT_OK
    return out.getvalue()


def test_tabwriter_short_rows_keep_their_padding():
    """Go's tabwriter: a column block spans only the lines that have a cell in it, a cell ended by a tab is
    padded even when it is the last of its line, and a line without a tab ends every block."""
    assert tabwriter("A\tBB\tC\n1\t2\t\nlong\t\nx\ny\tz\n") == (
        "A       BB    C\n"
        "1       2     \n"
        "long    \n"
        "x\n"
        "y    z\n")


def test_olt_nnis_is_gos_four_headers_and_short_rows():
    """`olt nnis` prints bbsimctl's four headers and, as Go's template stops at the field NNIPort lacks, rows of
    ID and OPERSTATE ending in OPERSTATE's padding (Go bbsimctl's bytes against BBSim 1.16.8 at OLT 10)."""
    olt = bbsim_pb2.Olt(ID=10, SerialNumber="BBSIM_OLT_10", NNIPorts=[bbsim_pb2.NNIPort(ID=0, OperState="down")])
    assert run(commands.olt_nnis, FakeConnection(GetOlt=olt), "olt", "nnis") == (
        "NNI Ports for : BBSIM_OLT_10\n"
        "\n"
        "ID    OPERSTATE    INTERNALSTATE    PACKETCOUNT\n"
        "0     down         \n")


def test_dmi_transceiver_list_is_gos_table():
    """`dmi transceiver list` calls bbsim.BBsim_dmi/GetTransceivers on the DMI endpoint and prints Go bbsimctl's
    table (its bytes against BBSim 1.16.8 at OLT 10 with 2 PONs)."""
    items = [bbsim_dmi_pb2.Transceiver(ID=0, UUID="2d0ab069-f461-34e5-a16a-5ebb1f26b1a7", Name="sfp-plus-0",
                                       Technology="TYPE_UNDEFINED", PluggedIn=True, PonIds=[0]),
             bbsim_dmi_pb2.Transceiver(ID=1, UUID="4aa48df7-0098-3065-9206-0d48f4404677", Name="sfp-plus-1",
                                       Technology="TYPE_UNDEFINED", PluggedIn=True, PonIds=[1])]
    conn = FakeConnection(GetTransceivers=bbsim_dmi_pb2.Transceivers(Items=items))
    assert run(commands.dmi_transceiver_list, conn, "dmi", "transceiver", "list") == (
        "ID    UUID                                    NAME          TECHNOLOGY        PLUGGEDIN    PONIDS\n"
        "0     2d0ab069-f461-34e5-a16a-5ebb1f26b1a7    sfp-plus-0    TYPE_UNDEFINED    true         [0]\n"
        "1     4aa48df7-0098-3065-9206-0d48f4404677    sfp-plus-1    TYPE_UNDEFINED    true         [1]\n")
    assert [(service, method) for service, method, _ in conn.calls] == [("dmi", "GetTransceivers")]


@pytest.mark.parametrize("argv,method,request_", [
    (("dmi", "events", "create", "EVENT_FAN_FAILURE"), "CreateEvent",
     bbsim_dmi_pb2.DmiEvent(event_name="EVENT_FAN_FAILURE")),
    (("dmi", "transceiver", "plug_out", "1"), "PlugOutTransceiver", bbsim_dmi_pb2.TransceiverRequest(TransceiverId=1)),
    (("dmi", "transceiver", "plug_in", "1"), "PlugInTransceiver", bbsim_dmi_pb2.TransceiverRequest(TransceiverId=1)),
])
def test_dmi_commands_print_the_status_line(argv, method, request_):
    """The dmi commands send bbsimctl's request to the DMI endpoint and print `[Status: N] message`, whatever N."""
    conn = FakeConnection(**{method: bbsim_dmi_pb2.DmiResponse(status_code=14, message="not managed")})
    args = parse(*argv)
    out = io.StringIO()
    assert args.handler(conn, args, out) == EXIT_OK
    assert out.getvalue() == "[Status: 14] not managed\n"
    assert conn.calls == [("dmi", method, request_)]


def test_bbsimctl_config_is_gos_layout(capsys, tmp_path, monkeypatch):
    """`bbsimctl config` prints bbsimctl's two settings as YAML (the host resolved, the deadline as a Go
    duration) and `BBSimCtl details:`; oltsimctl keeps its own summary."""
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("BBSIMCTL_SERVER", raising=False)
    assert cli.main(["config", "-s", "127.0.0.1:50070", "--timeout", "90"], BBSIMCTL) == 0
    out = capsys.readouterr().out
    assert out.startswith("\nserver: 127.0.0.1:50070\ngrpc:\n  timeout: 1m30s\n\nBBSimCtl details:\n\tVersion: ")
    assert out.endswith("\tGitStatus:  \n")
    assert cli.main(["config"], OLTSIMCTL) == 0
    assert "OltsimCtl details:" in capsys.readouterr().out


# ---- completion ------------------------------------------------------------------------------------------------

def completions(*words: str, onus=()) -> list[str]:
    onu_list = bbsim_pb2.ONUs(items=[bbsim_pb2.ONU(SerialNumber=serial) for serial in onus])
    return goflags.complete(cli.build_parser(BBSIMCTL), list(words), lambda: FakeConnection(GetONUs=onu_list))


def test_completion_offers_commands_options_and_values():
    """go-flags' completion protocol: command names of the group, options after `-`, and the values of the
    argument being filled (ONU serials from the server, event names, alarm names)."""
    assert completions("dmi", "") == ["events", "transceiver"]
    assert completions("dmi", "transceiver", "plug") == ["plug_in", "plug_out"]
    assert "--verbose" in completions("onu", "list", "--")
    assert completions("onu", "get", "BBSM000a01", onus=("BBSM000a0001", "BBSM000a0101", "BBSM000a0102")) == [
        "BBSM000a0101", "BBSM000a0102"]
    assert "EVENT_FAN_FAILURE" in completions("dmi", "events", "create", "EVENT_FAN")
    assert completions("olt", "alarms", "raise", "OLT_N") == ["OLT_NNI_LOS"]
    assert completions("onu", "get", "BBSM000a0001", "") == []


def test_completion_bash_prints_a_function_that_asks_the_program(capsys):
    """`completion bash` prints a bash function registered for bbsimctl that asks it through
    GO_FLAGS_COMPLETION, and exits 0 without reading any setting."""
    assert cli.main(["completion", "bash", "-c", "/nonexistent"], BBSIMCTL) == 0
    script = capsys.readouterr().out
    assert "GO_FLAGS_COMPLETION=1" in script and script.endswith("complete -F _bbsimctl bbsimctl\n")
