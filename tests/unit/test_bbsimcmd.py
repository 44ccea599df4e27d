"""The `bbsim` command's flags (oltsim.bbsimcmd), without starting a daemon: every flag of BBSim 1.16.8 maps onto
oltsim's settings, Go's flag syntax, zero values, ignored flags, one line and exit 2 for a wrong flag or value, and
the twistd options it builds describing the same settings."""
from __future__ import annotations

import io

import pytest

from oltsim import bbsimcmd
from oltsim.bbsimcmd import FlagError, main, parse, parse_go_int, twistd_argv
from oltsim.config import load_settings

# `bbsim -h` of BBSim 1.16.8 (internal/common/options.go, readCliParams), with each flag's kind
BBSIM_FLAGS = {
    "config": "string", "services": "string", "pon_port_config_file": "string", "bp_format": "string",
    "olt_id": "int", "nni": "int", "nni_speed": "uint", "pon": "int", "onu": "int", "uni": "int", "pots": "int",
    "nni_dhcp_trap_vid": "int", "oltRebootDelay": "int", "omci_response_rate": "int", "openolt_address": "string",
    "api_address": "string", "rest_api_address": "string", "dmi_server_address": "string", "cpuprofile": "string",
    "logLevel": "string", "logCaller": "bool", "delay": "int", "ca": "string", "enableperf": "bool",
    "enableEvents": "bool", "kafkaAddress": "string", "kafkaEventTopic": "string", "dhcpRetry": "bool",
    "authRetry": "bool", "injectOmciUnknownMe": "bool", "injectOmciUnknownAttributes": "bool", "omccVersion": "int",
}

# flag -> (value typed, Settings field, value in the settings); every flag that has an effect
EFFECTS = {
    "services": ("dt", "workflow", "dt"),
    "bp_format": ("ietf", "bp_format", "ietf"),
    "olt_id": ("10", "olt_id", 10),
    "nni": ("2", "nni", 2),
    "nni_speed": ("1000", "nni_speed", 1000),
    "pon": ("2", "pon", 2),
    "onu": ("16", "onu", 16),
    "uni": ("2", "uni", 2),
    "pots": ("1", "pots", 1),
    "nni_dhcp_trap_vid": ("7", "nni_dhcp_trap_vid", 7),
    "oltRebootDelay": ("5", "reboot_delay", 5),
    "omci_response_rate": ("9", "omci_response_rate", 9),
    "openolt_address": ("0.0.0.0:50160", "openolt", "tcp:50160"),
    "api_address": (":50170", "grpc_v1", "tcp:50170"),
    "rest_api_address": ("127.0.0.1:50171", "rest_v1", "tcp:50171:interface=127.0.0.1"),
    "dmi_server_address": (":50175", "dmi", "tcp:50175"),
    "legacy_api_address": (":50172", "grpc_v0", "tcp:50172"),
    "legacy_rest_api_address": (":50173", "rest_v0", "tcp:50173"),
    "sadis_rest_address": (":50174", "sadis", "tcp:50174"),
    "logLevel": ("warn", "log_level", "warn"),
    "delay": ("50", "delay_ms", 50),
    "ca": ("only-onu", "controlled_activation", "only-onu"),
    "kafkaAddress": ("kafka.lab:9092", "kafka_address", "kafka.lab:9092"),
    "kafkaEventTopic": ("olt-events", "kafka_event_topic", "olt-events"),
    "omccVersion": ("160", "omcc_version", 160),
}
BOOL_EFFECTS = {
    "enableEvents": "enable_events", "dhcpRetry": "dhcp_retry", "authRetry": "auth_retry",
    "injectOmciUnknownMe": "inject_omci_unknown_me", "injectOmciUnknownAttributes": "inject_omci_unknown_attributes",
}
IGNORED = {"cpuprofile": "cpu.prof", "logCaller": None, "enableperf": None}


def settings_of(argv):
    parsed = parse(argv)
    return load_settings(parsed.given, parsed.config)


class Started:
    """A stand-in for the daemon's start: records what it was given."""

    def __init__(self):
        self.calls = []

    def __call__(self, argv, settings):
        self.calls.append((argv, settings))


def run_main(argv, monkeypatch=None, tmp_path=None):
    if monkeypatch is not None:
        monkeypatch.chdir(tmp_path)
    err, started = io.StringIO(), Started()
    status = main(argv, stderr=err, start=started)
    return status, err.getvalue(), started.calls


def test_every_flag_of_bbsim_is_taken_with_its_kind():
    """The command defines each flag of BBSim 1.16.8's `bbsim -h`, with BBSim's kind and a meaning."""
    defined = {flag.name: flag.kind for flag in bbsimcmd.FLAGS}
    assert {name: defined.get(name) for name in BBSIM_FLAGS} == BBSIM_FLAGS
    assert all(flag.meaning for flag in bbsimcmd.FLAGS)
    assert set(EFFECTS) | set(BOOL_EFFECTS) | set(IGNORED) | {"config", "pon_port_config_file"} == set(defined)


@pytest.mark.parametrize("name", sorted(EFFECTS))
def test_each_valued_flag_sets_its_setting(name):
    """-flag value sets the oltsim setting with BBSim's meaning (addresses become Twisted endpoints)."""
    text, setting, expected = EFFECTS[name]
    extra = ["-enableEvents"] if name == "kafkaAddress" else []
    assert getattr(settings_of([f"-{name}", text, *extra]), setting) == expected


@pytest.mark.parametrize("name", sorted(BOOL_EFFECTS))
def test_each_bool_flag_sets_its_setting(name):
    """A bool flag alone turns its setting on; -flag=false leaves it off."""
    assert getattr(settings_of([f"-{name}"]), BOOL_EFFECTS[name]) is True
    assert getattr(settings_of([f"-{name}=false"]), BOOL_EFFECTS[name]) is False


def test_config_and_pon_port_config_file(tmp_path):
    """-config reads BBSim's YAML and flags override it; -pon_port_config_file reads a PON ranges file, and an empty
    one means the derived ranges (BBSim's blank file name)."""
    (tmp_path / "bbsim.yaml").write_text("bbsim:\n  delay: 300\n  auth_retry: true\nolt:\n  pon_ports: 2\n"
                                         "  onus_per_port: 3\n")
    (tmp_path / "pons.yaml").write_text(
        "num_pon_ports: 2\nranges:\n  - pon_id_range: {start: 0, end: 1}\n    tech: XGS-PON\n"
        "    onu_id_range: {start: 1, end: 255}\n    alloc_id_range: {start: 1024, end: 16383}\n"
        "    gemport_id_range: {start: 1024, end: 65535}\n")
    settings = settings_of(["-config", str(tmp_path / "bbsim.yaml"), "-onu", "4"])
    assert (settings.pon, settings.onu, settings.delay_ms, settings.auth_retry) == (2, 4, 300, True)
    settings = settings_of(["-config", str(tmp_path / "bbsim.yaml"), "-pon_port_config_file",
                            str(tmp_path / "pons.yaml")])
    assert settings.pon_ranges[0].technology == "XGS-PON"
    assert parse(["-pon_port_config_file", ""]).given == {}


@pytest.mark.parametrize("argv", [["-pon", "3"], ["-pon=3"], ["--pon", "3"], ["--pon=3"], ["-pon", "0x3"],
                                  ["-pon", "1", "-pon", "3"]])
def test_go_syntax_forms_for_a_value(argv):
    """-flag value, -flag=value, --flag value, --flag=value and Go's integer forms; the last of a repeated flag wins."""
    assert parse(argv).given == {"pon": 3}


@pytest.mark.parametrize("argv, expected", [
    (["-authRetry"], True), (["--authRetry"], True), (["-authRetry=true"], True), (["--authRetry=false"], False),
    (["-authRetry=1"], True), (["-authRetry=F"], False), (["-authRetry=TRUE"], True),
])
def test_go_syntax_forms_for_a_bool(argv, expected):
    """A bool flag alone is true; -flag=value takes Go's strconv.ParseBool spellings."""
    assert parse(argv).given == {"auth_retry": expected}


def test_go_integers():
    """Go's flag.Int reading: decimal, 0x, 0o and leading-0 octal, 0b, a sign; flag.Uint refuses a sign."""
    assert [parse_go_int(t) for t in ("0", "10", "-5", "+7", "0x1f", "0o17", "017", "0b101", "0x_1f")] == [
        0, 10, -5, 7, 31, 15, 15, 5, 31]
    for text in ("", "1.5", "08", "1_0", " 1", "ten", "9223372036854775808"):
        with pytest.raises(ValueError):
            parse_go_int(text)
    with pytest.raises(ValueError):
        parse_go_int("-1", unsigned=True)


def test_zero_stays_a_value(tmp_path):
    """-delay 0, -olt_id 0, -pots 0 and -oltRebootDelay 0 are values that override the config file."""
    (tmp_path / "bbsim.yaml").write_text("bbsim:\n  delay: 300\nolt:\n  id: 4\n  reboot_delay: 9\n  pots_ports: 1\n")
    settings = settings_of(["-config", str(tmp_path / "bbsim.yaml"), "-delay", "0", "-olt_id", "0", "-pots", "0",
                            "-oltRebootDelay", "0"])
    assert (settings.delay_ms, settings.olt_id, settings.pots, settings.reboot_delay) == (0, 0, 0, 0)


def test_a_false_bool_overrides_the_config_file_in_what_the_daemon_gets(tmp_path, monkeypatch):
    """-authRetry=false beats the file's auth_retry: true in the settings handed to the daemon (twistd's options
    cannot say false, so the settings are handed over whole)."""
    (tmp_path / "bbsim.yaml").write_text("bbsim:\n  auth_retry: true\n")
    status, err, calls = run_main(["-config", "bbsim.yaml", "-authRetry=false"], monkeypatch, tmp_path)
    assert (status, err) == (0, "")
    argv, settings = calls[0]
    assert settings.auth_retry is False and "--auth-retry" not in argv


def test_bbsim_default_config_file_is_read_when_present(tmp_path, monkeypatch):
    """Without -config, configs/bbsim.yaml in the working directory is read when it exists (BBSim's default), and
    its absence is no error."""
    status, _, calls = run_main([], monkeypatch, tmp_path)
    assert status == 0 and "--config" not in calls[0][0]
    (tmp_path / "configs").mkdir()
    (tmp_path / "configs" / "bbsim.yaml").write_text("olt:\n  pon_ports: 2\n")
    status, _, calls = run_main([], monkeypatch, tmp_path)
    assert status == 0 and calls[0][1].pon == 2 and calls[0][0][3:5] == ["--config", "configs/bbsim.yaml"]


def test_images_come_from_the_working_directorys_configs_folder(tmp_path, monkeypatch):
    """As BBSim's web server serves /app/configs (its image's working directory is /app), the configs folder of the
    working directory is the image folder, for the daemon's settings and its options alike; without one the
    packaged folder stays the default, and a folder named in the YAML file wins."""
    status, _, calls = run_main([], monkeypatch, tmp_path)
    assert status == 0 and calls[0][1].images_dir == "" and "--images-dir" not in calls[0][0]
    (tmp_path / "configs").mkdir()
    status, _, calls = run_main([], monkeypatch, tmp_path)
    argv, settings = calls[0]
    assert settings.images_dir == str(tmp_path / "configs")
    assert argv[argv.index("--images-dir") + 1] == str(tmp_path / "configs")
    (tmp_path / "own.yaml").write_text("bbsim:\n  images_dir: /srv/images\n")
    status, _, calls = run_main(["-config", "own.yaml"], monkeypatch, tmp_path)
    assert calls[0][1].images_dir == "/srv/images"


def test_empty_kafka_event_topic_means_the_default_topic():
    """-kafkaEventTopic "" (as VOLTHA's chart passes it) leaves BBSim's per-OLT topic."""
    assert settings_of(["-kafkaEventTopic", "", "-olt_id", "3"]).kafka_event_topic == ""


def test_events_flags_become_the_kafka_option():
    """-enableEvents -kafkaAddress host:port is oltsim's --kafka host:port; -kafkaAddress alone turns nothing on."""
    parsed = parse(["-enableEvents", "-kafkaAddress", "kafka.lab:9092"])
    argv = twistd_argv(parsed, None)
    assert argv[3:] == ["--kafka", "kafka.lab:9092"]
    parsed = parse(["-kafkaAddress", "kafka.lab:9092"])
    assert twistd_argv(parsed, None)[3:] == []
    assert load_settings(parsed.given, None).enable_events is False
    assert twistd_argv(parse(["-enableEvents"]), None)[3:] == ["--enable-events"]


def test_twistd_options_describe_the_same_settings(tmp_path):
    """The twistd oltsim options built from BBSim's flags give the same settings when twistd's Options read them."""
    from oltsim.tap import Options

    argv = ["-openolt_address", "0.0.0.0:50160", "-dmi_server_address", ":50175", "-olt_id", "10", "-nni", "1",
            "-nni_speed", "10000", "-pon", "2", "-onu", "16", "-uni", "4", "-pots", "0", "-omccVersion", "160",
            "-nni_dhcp_trap_vid", "0", "-bp_format", "mef", "-oltRebootDelay", "60", "-logLevel", "debug",
            "-delay", "0", "-rest_api_address", ":50171", "-ca", "default", "-omci_response_rate", "10",
            "-injectOmciUnknownMe", "-injectOmciUnknownAttributes", "-kafkaEventTopic", "", "-authRetry",
            "-dhcpRetry", "-api_address", ":50170", "-legacy_api_address", ":50172",
            "-legacy_rest_api_address", ":50173", "-sadis_rest_address", ":50174"]
    parsed = parse(argv)
    built = twistd_argv(parsed, None)
    assert built[:3] == ["--nodaemon", "--pidfile=", "oltsim"]
    options = Options()
    options.parseOptions(built[3:])
    assert options.settings == load_settings(parsed.given, None)


def test_ignored_flags_warn_once_each(tmp_path, monkeypatch):
    """-cpuprofile, -logCaller and -enableperf are accepted with one warning line each (a repeat adds none), and
    the daemon starts."""
    status, err, calls = run_main(["-cpuprofile", "cpu.prof", "-enableperf", "-logCaller", "-enableperf=false",
                                   "-cpuprofile=x"], monkeypatch, tmp_path)
    assert status == 0 and len(calls) == 1
    lines = err.splitlines()
    assert len(lines) == 3
    for line, name in zip(lines, ("cpuprofile", "enableperf", "logCaller")):
        assert line.startswith(f"bbsim: warning: -{name} is ignored: ")


@pytest.mark.parametrize("argv, words", [
    (["-foo"], "flag provided but not defined: -foo"),
    (["-pon", "x"], 'invalid value "x" for flag -pon'),
    (["-pon", "1.5"], 'invalid value "1.5" for flag -pon'),
    (["-nni_speed", "-1"], 'invalid value "-1" for flag -nni_speed'),
    (["-ca", "sometimes"], "-ca: "),
    (["-bp_format", "xml"], "-bp_format: "),
    (["-pon"], "flag needs an argument: -pon"),
    (["-authRetry", "false"], "unexpected argument 'false'"),
    (["-authRetry=maybe"], 'invalid boolean value "maybe" for -authRetry'),
    (["-openolt_address", "nowhere"], 'invalid value "nowhere" for flag -openolt_address'),
    (["---pon", "1"], "bad flag syntax: ---pon"),
    (["-pon", "300"], "-pon: "),
    (["-services", "no-such-file.yaml"], "no-such-file.yaml"),
    (["-enableEvents", "-kafkaAddress", "nohost"], "-kafkaAddress: "),
])
def test_a_wrong_flag_or_value_is_one_line_and_exit_2(argv, words, tmp_path, monkeypatch):
    """An unknown flag, a value of the wrong kind or out of range, a missing value or a stray argument: one line on
    stderr naming it, exit status 2, and no daemon."""
    status, err, calls = run_main(argv, monkeypatch, tmp_path)
    assert status == 2 and calls == []
    assert err.count("\n") == 1 and err.startswith("bbsim: ") and words in err, err


def test_help_lists_every_flag_and_exits_0(tmp_path, monkeypatch):
    """-h and --help print Go-style usage naming every flag (ignored ones marked) and exit 0 without a daemon."""
    for argv in (["-h"], ["--help"], ["-help"]):
        status, err, calls = run_main(argv, monkeypatch, tmp_path)
        assert status == 0 and calls == []
        for flag in bbsimcmd.FLAGS:
            assert f"  -{flag.name}" in err
        assert "[ignored: " in err


def test_flag_error_is_an_exception_with_one_line():
    """parse raises FlagError for a wrong command line (so main can write it as one line)."""
    with pytest.raises(FlagError):
        parse(["-pon", "x"])
