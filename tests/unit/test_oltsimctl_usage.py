"""oltsimctl's bad command lines: one stderr line naming the command, what is wrong and where its help
is, exit 2, never argparse's usage block; a misspelt command gets the nearest; `--version`; the global options are
taken between command names; bbsimctl keeps go-flags' behaviour."""
from __future__ import annotations

import pytest

from oltsim import __version__
from oltsim.ctl import oltsimctl as cli
from oltsim.ctl.settings import BBSIMCTL, OLTSIMCTL


def refused(argv, capsys) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exited:
        cli.main(argv, OLTSIMCTL)
    out, err = capsys.readouterr()
    return exited.value.code, out, err


@pytest.mark.parametrize("argv, line", [
    (["onu", "get"], "oltsimctl: onu get: missing ONU_SN (see oltsimctl onu get --help)"),
    (["wait", "--state", "enabled", "--timeout", "5x"],
     "oltsimctl: wait: --timeout: not a duration: '5x' (examples: 10, 10s, 1m30s, 500ms) (see oltsimctl wait "
     "--help)"),
    (["capture"], "oltsimctl: capture: missing -w/--write (see oltsimctl capture --help)"),
    (["onu", "lsit"], "oltsimctl: onu: unknown command 'lsit'; did you mean list? (see oltsimctl onu --help)"),
    (["olt", "alarms", "raise", "OLT_PON_LOS"],
     "oltsimctl: olt alarms raise: missing INTF_ID (see oltsimctl olt alarms raise --help)"),
    (["-o", "yaml", "olt", "get"],
     "oltsimctl: unknown value for -o/--output 'yaml' (one of table, json) (see oltsimctl --help)"),
    (["pon", "poweronAllONUs", "x"],
     "oltsimctl: pon poweronAllONUs: INTF_ID: not a non-negative integer: 'x' (see oltsimctl pon "
     "poweronAllONUs --help)"),
])
def test_a_bad_command_line_is_one_line_and_exit_2(argv, line, capsys):
    """Each mistake is one line on stderr (nothing on stdout), exit 2 (was: 7-9 lines of usage, the error last)."""
    code, out, err = refused(argv, capsys)
    assert (code, out, err) == (2, "", line + "\n")


def test_a_missing_command_lists_the_commands_without_aliases(capsys):
    """`oltsimctl onu` names what may follow, each command once (aliases such as restartEapol left out)."""
    code, _, err = refused(["onu"], capsys)
    assert code == 2
    assert err.startswith("oltsimctl: onu: missing COMMAND (one of list, get, shutdown, poweron, auth_restart, ")
    assert "restartEapol" not in err and err.count("\n") == 1


def test_version(capsys):
    """`oltsimctl --version` prints the program and oltsim's version, exit 0."""
    code, out, _ = refused(["--version"], capsys)
    assert (code, out) == (0, f"oltsimctl {__version__}\n")


def test_global_options_between_command_names_are_taken():
    """`oltsimctl olt --server x get` reads --server (was: argparse's `invalid choice: 'x'`)."""
    args = cli.parse(["olt", "--server", "127.0.0.1:1", "-o", "json", "get"])
    assert (args.server, args.output, args.handler) == ("127.0.0.1:1", "json", cli.c.olt_get)
    later = cli.parse(["--server", "127.0.0.1:2", "onu", "alarms", "list"])
    assert later.server == "127.0.0.1:2"


def test_bbsimctl_keeps_go_flags_usage(capsys):
    """bbsimctl's bad command line is go-flags' usage and exit 1, as Go bbsimctl's; it has no --version."""
    assert cli.main(["onu", "get"], BBSIMCTL) == 1
    assert "usage: bbsimctl" in capsys.readouterr().err
    assert cli.main(["--version"], BBSIMCTL) == 1


class _DmiConnection:
    """Answers every bbsim.BBsim_dmi call with one DmiResponse."""

    def __init__(self, code: int, message: str):
        self.answer = cli.c.bbsim_dmi_pb2.DmiResponse(status_code=code, message=message)

    def call(self, method, request, service="bbsim", timeout=None):
        assert service == "dmi"
        return self.answer


@pytest.mark.parametrize("profile, code, out", [
    (OLTSIMCTL, 1, ""),
    (BBSIMCTL, 0, "[Status: 14] device management not started: call StartManagingDevice first\n"),
])
def test_a_refused_dmi_command_exits_1_in_oltsimctl_and_0_in_bbsimctl(profile, code, out, capsys):
    """oltsimctl: the refusal on one stderr line with the code's name and `dmi start`, exit 1; bbsimctl: Go
    bbsimctl's status line on stdout, exit 0."""
    import io
    from oltsim.ctl.connection import CtlError
    args = cli.parse(["dmi", "transceiver", "plug_out", "0"], profile)
    conn = _DmiConnection(14, "device management not started: call StartManagingDevice first")
    written = io.StringIO()
    if code:
        with pytest.raises(CtlError) as refused_:
            args.handler(conn, args, written)
        assert (refused_.value.code, str(refused_.value)) == (1, "UNAVAILABLE: device management not started: call "
                                                                 "StartManagingDevice first (oltsimctl dmi start "
                                                                 "starts it)")
    else:
        assert args.handler(conn, args, written) == 0
    assert written.getvalue() == out


@pytest.mark.parametrize("argv, line", [
    (["capture", "-w", "f.pcapng", "--pon", "x"],
     "oltsimctl: capture: --pon: not a non-negative integer: 'x' (see oltsimctl capture --help)"),
    (["capture", "-w", "f.pcapng", "--pon", "-1"],
     "oltsimctl: capture: --pon: not a non-negative integer: '-1' (see oltsimctl capture --help)"),
    (["capture", "-w", "f.pcapng", "--count", "0"],
     "oltsimctl: capture: --count: must be at least 1 (see oltsimctl capture --help)"),
])
def test_a_bad_capture_number_is_named_in_words_not_by_a_function_name(argv, line, capsys):
    """capture's --pon and --count say what a value must be, as the other commands' numbers do (was: "invalid
    _pon value: 'x'", naming oltsimctl's own function)."""
    code, out, err = refused(argv, capsys)
    assert (code, out, err) == (2, "", line + "\n")


@pytest.mark.parametrize("argv, line", [
    (["onu", "list", "extra"], "oltsimctl: onu list: unexpected argument(s): extra (see oltsimctl onu list --help)"),
    (["-o", "json", "olt", "get", "x", "y"],
     "oltsimctl: olt get: unexpected argument(s): x y (see oltsimctl olt get --help)"),
])
def test_an_argument_too_many_names_its_command(argv, line, capsys):
    """A word a command does not take is reported by that command, with its help (was: by oltsimctl itself,
    pointing at `oltsimctl --help`), as docs/oltsimctl.md says every bad command line is."""
    code, out, err = refused(argv, capsys)
    assert (code, out, err) == (2, "", line + "\n")
