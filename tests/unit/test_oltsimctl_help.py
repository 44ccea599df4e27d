"""`--help` of an oltsimctl command shows that command: its usage, arguments and options and one line saying where
the global options are listed (`oltsimctl --help`, once); the global options are still taken before the command,
after it and between its names. bbsimctl's commands keep listing them, as go-flags does."""
from __future__ import annotations

import pytest

from oltsim.ctl import goflags
from oltsim.ctl import oltsimctl as cli
from oltsim.ctl.settings import BBSIMCTL, OLTSIMCTL

#: options only the global list has (a command's own --timeout or -o would not tell them apart)
GLOBAL_ONLY = ("--server", "--dmi-server", "--tls", "--ca-cert", "--client-cert", "--client-key", "--server-name",
               "--token-file", "--token", "--config")
LINE = ("global options (--server, --tls, --token-file, -o json, ...) go before or after the command: "
        "oltsimctl --help lists them")


def shown_help(argv, capsys, profile=OLTSIMCTL) -> str:
    with pytest.raises(SystemExit) as exited:
        cli.main([*argv, "--help"], profile)
    out, err = capsys.readouterr()
    assert exited.value.code == 0 and err == ""
    return out


def flat(text: str) -> str:
    return " ".join(text.split())


def listed(text: str) -> list[str]:
    """The global options a command's help lists, the closing line aside."""
    body = flat(text).removesuffix(LINE)
    return [option for option in GLOBAL_ONLY if f"{option} " in body or f"{option}=" in body]


def commands(parser, path=()):
    """Every command and group of the tree, as the words that name it (aliases left out)."""
    seen = set()
    for name, sub in goflags.subcommands(parser).items():
        if id(sub) in seen:
            continue
        seen.add(id(sub))
        yield (*path, name)
        yield from commands(sub, (*path, name))


def test_a_command_help_is_its_own(capsys):
    """`oltsimctl onu shutdown --help`: its usage with its one argument, the argument, -h and the line, nothing of
    the global options."""
    text = shown_help(["onu", "shutdown"], capsys)
    assert text.startswith("usage: oltsimctl onu shutdown [-h] ONU_SN\n")
    assert "ONU_SN" in text and "shut an ONU down" in text
    assert listed(text) == []
    assert flat(text).endswith(LINE)
    assert len(text.splitlines()) <= 12


def test_every_command_help_leaves_the_global_options_to_the_top(capsys):
    """Every command and group of the tree: no global option in its help, the line pointing to `oltsimctl --help`
    instead; its own options still listed (`wait --timeout`, `events --onu`)."""
    for words in commands(cli.build_parser(OLTSIMCTL)):
        text = shown_help(list(words), capsys)
        assert text.startswith(f"usage: oltsimctl {' '.join(words)} "), words
        assert listed(text) == [], words
        assert flat(text).endswith(LINE), words
    assert "--timeout SECONDS" in shown_help(["wait"], capsys)
    assert "--onu ONU_SN" in shown_help(["events"], capsys)


def test_the_top_help_lists_the_global_options_once(capsys):
    """`oltsimctl --help` has the global options, each once, with their help."""
    text = shown_help([], capsys)
    assert "global options:" in text
    for option in GLOBAL_ONLY:
        assert f"  {option}" in text or f", {option}" in text, option
    assert text.count("--token-file FILE ") == 1


@pytest.mark.parametrize("argv", [
    ["--server", "h:1", "-o", "json", "onu", "get", "BBSM00000001"],
    ["onu", "get", "BBSM00000001", "--server", "h:1", "-o", "json"],
    ["onu", "--server", "h:1", "get", "-o", "json", "BBSM00000001"],
    ["onu", "get", "-s", "h:1", "--output=json", "BBSM00000001"],
])
def test_global_options_are_still_taken_before_after_and_between(argv):
    """The options a command's help no longer lists are still read where they were: before, after, between."""
    args = cli.parse(argv, OLTSIMCTL)
    assert (args.server, args.output, args.onu_sn) == ("h:1", "json", "BBSM00000001")


def test_a_misspelt_global_option_after_a_command_still_gets_its_hint(capsys):
    """An unlisted global option is still a known option of the command: a misspelling names it."""
    with pytest.raises(SystemExit) as exited:
        cli.main(["onu", "get", "BBSM00000001", "--sever", "h:1"], OLTSIMCTL)
    assert exited.value.code == 2
    assert capsys.readouterr().err == "oltsimctl: unrecognized option --sever; did you mean --server?\n"


def test_bbsimctl_commands_list_the_global_options_as_go_flags_does(capsys):
    """bbsimctl's `onu shutdown --help` keeps -s/--server in the command's help, as Go bbsimctl's does."""
    text = shown_help(["onu", "shutdown"], capsys, BBSIMCTL)
    assert "--server" in text and "oltsimctl --help" not in text
