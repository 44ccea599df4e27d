"""A misspelt name the user can type is one line with the nearest right one: daemon options,
`bbsim` flags, `oltsimctl` and `bbsimctl` options and config file keys, scenario keys and actions; all through the
one helper, oltsim.suggest."""
from __future__ import annotations

import pytest

from oltsim import bbsimcmd
from oltsim.ctl import oltsimctl as cli, goflags
from oltsim.ctl.settings import BBSIMCTL, OLTSIMCTL, SettingsError, resolve
from oltsim.model.errors import InvalidArgument
from oltsim.scenario.schema import parse as parse_scenario
from oltsim.suggest import did_you_mean, nearest
from oltsim.tap import Options


@pytest.mark.parametrize("name, known, found", [
    ("onuu", ("onu", "pon", "uni"), "onu"),
    ("sever", ("server", "dmi-server", "config"), "server"),
    ("duraton", ("duration", "delay"), "duration"),
    ("Pon_Port", ("pon_ports",), "pon_ports"),
    ("ca", ("cb",), ""),
    ("xyz", ("onu", "pon"), ""),
])
def test_nearest_finds_a_close_name_or_none(name, known, found):
    """The nearest known name, case aside, or "" when none is close (two short names are not alike)."""
    assert nearest(name, known) == found


def test_did_you_mean_is_empty_without_a_near_name():
    """The suffix names the nearest as the caller writes it, and is empty when none is near."""
    assert did_you_mean("onuu", ["onu"], lambda found: f"--{found}") == "; did you mean --onu?"
    assert did_you_mean("zzz", ["onu"]) == ""


def daemon_refusal(argv, capsys) -> tuple[int, str, str]:
    """`twistd oltsim ARGV`'s option parsing, in process: exit status, stdout, stderr."""
    with pytest.raises(SystemExit) as exited:
        Options().parseOptions(argv)
    out, err = capsys.readouterr()
    return exited.value.code, out, err


@pytest.mark.parametrize("argv, line", [
    (["--onuu", "4"], "oltsim: option --onuu not recognized; did you mean --onu?"),
    (["--pon", "2", "--olt-di", "3"], "oltsim: option --olt-di not recognized; did you mean --olt-id?"),
    (["-onu", "4"], "oltsim: option -onu not recognized; did you mean --onu?"),
    (["-olt_id=4"], "oltsim: option -olt_id not recognized; did you mean --olt-id?"),
    (["--no-such-thing"], "oltsim: option --no-such-thing not recognized (twistd oltsim --help lists the options)"),
    (["onu", "4"], "oltsim: unexpected argument 'onu': oltsim takes options only (twistd oltsim --help lists the "
                   "options)"),
    (["--pon"], "oltsim: option --pon requires argument"),
])
def test_a_wrong_daemon_option_is_one_line_and_exit_2(argv, line, capsys):
    """A misspelt daemon option (Go's single dash too) is one line on stderr with the nearest option, exit 2 as every
    other refused start (was: twistd's whole usage page on stdout, then the error, exit 1); a stray word or a
    missing value is one line too."""
    status, out, err = daemon_refusal(argv, capsys)
    assert (status, out, err) == (2, "", line + "\n")


def test_a_misspelt_bbsim_flag_names_the_nearest(tmp_path, monkeypatch, capsys):
    """`bbsim -onuu 4` keeps Go's message and adds the nearest flag, as Go writes it (single dash, its case)."""
    monkeypatch.chdir(tmp_path)
    for argv, line in ((["-onuu", "4"], "bbsim: flag provided but not defined: -onuu; did you mean -onu?"),
                       (["--oltrebootdelay", "3"],
                        "bbsim: flag provided but not defined: -oltrebootdelay; did you mean -oltRebootDelay?"),
                       (["-olt-id", "3"], "bbsim: flag provided but not defined: -olt-id; did you mean -olt_id?")):
        assert bbsimcmd.main(argv, start=lambda *a: pytest.fail("started")) == 2
        assert capsys.readouterr().err == line + "\n"


@pytest.mark.parametrize("argv, line", [
    (["--sever", "x"], "oltsimctl: unrecognized option --sever; did you mean --server?"),
    (["--sever", "localhost:1", "olt", "get"], "oltsimctl: unrecognized option --sever; did you mean --server?"),
    (["olt", "get", "--sever=localhost:1"], "oltsimctl: unrecognized option --sever; did you mean --server?"),
    (["onu", "list", "--verbse"], "oltsimctl: unrecognized option --verbse; did you mean --verbose?"),
    (["wait", "--stat", "enabled", "--timout", "3"], "oltsimctl: unrecognized option --timout; did you mean "
                                                     "--timeout?"),
    (["olt", "get", "--nothing-like-it"], "oltsimctl: unrecognized option --nothing-like-it (oltsimctl olt get "
                                          "--help lists the options)"),
])
def test_a_misspelt_oltsimctl_option_is_named_with_the_nearest(argv, line, capsys):
    """oltsimctl names the misspelt option itself and the nearest the command has, in one line, exit 2 (was:
    argparse's usage, then `invalid choice: 'x'` for the word after `--sever`)."""
    with pytest.raises(SystemExit) as exited:
        cli.main(argv, OLTSIMCTL)
    assert exited.value.code == 2
    assert capsys.readouterr().err == line + "\n"


@pytest.mark.parametrize("argv", [
    ["--sever", "x"],
    ["olt", "get", "--sever", "x"],
    ["olt", "-d", "get", "--sever", "x"],
])
def test_a_misspelt_bbsimctl_flag_is_go_flags_message_with_the_nearest_and_exit_1(argv, capsys):
    """bbsimctl says it in go-flags' words and exits 1, as Go bbsimctl does for any bad command line."""
    assert cli.main(argv, BBSIMCTL) == 1
    assert capsys.readouterr().err == "bbsimctl: unknown flag `sever'; did you mean --server?\n"


def test_bbsimctl_still_ignores_what_go_flags_ignores():
    """An option after a command's arguments are filled is ignored by go-flags, so not reported as misspelt."""
    parser = cli.build_parser(BBSIMCTL)
    argv = goflags.go_flags_argv(parser, ["onu", "get", "BBSM00000001", "extra", "--sever"])
    assert cli.unknown_option(parser, argv) is None


def test_known_options_values_and_negative_numbers_are_not_misspellings():
    """Option values that look like options, negative numbers, abbreviations and `--` are left alone."""
    parser = cli.build_parser(OLTSIMCTL)
    for argv in (["--token", "-abc", "olt", "get"], ["onu", "igmp", "SN", "-1", "join", "224.0.0.1"],
                 ["--serv", "x:1", "olt", "get"], ["--", "olt"], ["-s", "x:1", "-o", "json", "olt", "get"],
                 ["--timeout=3", "olt", "get"]):
        assert cli.unknown_option(parser, argv) is None, argv


def test_a_misspelt_key_of_oltsimctls_config_file_names_the_nearest(tmp_path):
    """`sever: x:1` in oltsimctl's config file: the error says `did you mean server?`."""
    config = tmp_path / "config"
    config.write_text("sever: x:1\n")
    with pytest.raises(SettingsError, match=r"unknown key sever; did you mean server\? \(known: "):
        resolve(cli.parse(["-c", str(config), "olt", "get"]), {})


@pytest.mark.parametrize("text, message", [
    ("steps:\n  - {action: pon-los, targets: {pon: 0}, duraton: 30s}\n",
     "step 1 'step-1': unknown key 'duraton'; did you mean 'duration'? (a step takes "),
    ("steps:\n  - {action: omci-delay, dealy: 1s}\n", "step 1 'step-1': unknown key 'dealy'; did you mean 'delay'?"),
    ("step:\n  - {action: olt-reboot}\n", "<text>: unknown key 'step'; did you mean 'steps'? (a scenario takes "),
    ("steps:\n  - {action: pon-lost}\n", "step 1 'step-1': unknown action 'pon-lost'; did you mean 'pon-los'? "
                                          "(known: "),
    ("steps:\n  - {action: onu-power-off, targets: {fracton: 0.5}}\n",
     "step 1 'step-1': unknown target key 'fracton': this action acts on ONUs and takes onu, onus, pon, pons, state, "
     "fraction, count; did you mean 'fraction'?"),
])
def test_a_misspelt_scenario_key_or_action_names_the_nearest(text, message):
    """A scenario file's misspelt key (top, step, targets) or action gets "did you mean" the nearest one."""
    with pytest.raises(InvalidArgument) as refused:
        parse_scenario(text)
    assert str(refused.value).startswith(message), str(refused.value)


def test_a_misspelt_config_file_key_is_one_line_and_exit_2_as_a_misspelt_option(tmp_path, capsys):
    """`-c file.yaml` with `olt.pon_port`: the same one line and exit 2 as `--onuu`, naming the key it must have
    meant; `olt.num_pon_ports`, further from any key, starts with a warning instead."""
    config = tmp_path / "c.yaml"
    config.write_text("olt:\n  pon_port: 2\n")
    status, out, err = daemon_refusal(["-c", str(config)], capsys)
    assert (status, out, err) == (2, "", f"oltsim: config file {config}: olt.pon_port: unknown key; did you mean "
                                         "olt.pon_ports?\n")
    config.write_text("olt:\n  num_pon_ports: 2\n")
    options = Options()
    options.parseOptions(["-c", str(config)])
    assert [w.text for w in options.settings.warnings] == ["olt.num_pon_ports: unknown key; did you mean olt.pon_ports?"]
