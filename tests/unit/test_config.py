"""Settings: defaults < YAML file < given options, BBSim's file formats, and one clear error per bad value."""
import dataclasses
import textwrap
from pathlib import Path

import pytest

from oltsim.config import (
    ATT_SERVICES,
    BUILTIN_SERVICES,
    ConfigError,
    PonRange,
    ServiceSpec,
    Settings,
    default_pon_ranges,
    endpoint_from_address,
    load_pon_ranges,
    load_services,
    load_settings,
    strict_error,
    validate,
)


def write(tmp_path, name, text):
    """Write dedented ``text`` to ``tmp_path/name`` and return the path as a string."""
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))
    return str(path)


def error_of(given, config_path=None):
    """The message of the ConfigError that load_settings raises."""
    with pytest.raises(ConfigError) as info:
        load_settings(given, config_path)
    return str(info.value)


# BBSim 1.16.8's shipped configs/bbsim.yaml, keys, values and comments as shipped (its licence header left out).
BBSIM_SAMPLE = (Path(__file__).resolve().parents[1] / "golden" / "bbsim" / "bbsim.yaml").read_text()

PON_INTERFACES = """\
num_pon_ports: 16
ranges:
  - pon_id_range: {start: 0, end: 15}
    tech: "XGS-PON"
    onu_id_range: {start: 1, end: 255}
    alloc_id_range: {start: 256, end: 1024}
    gemport_id_range: {start: 256, end: 1024}
"""


# --- defaults ----------------------------------------------------------------------------------------------------


def test_defaults():
    """With no file and no options, the settings are BBSim's defaults with oltsim's listeners and ATT services."""
    settings = load_settings({}, None)
    assert settings == Settings()
    assert (settings.olt_id, settings.pon, settings.onu, settings.uni) == (0, 1, 1, 4)
    assert (settings.pots, settings.nni) == (0, 1)
    assert (settings.nni_speed, settings.delay_ms, settings.reboot_delay) == (10000, 200, 60)
    assert (settings.reboot_grace, settings.rediscovery_delay, settings.discovery_retry) == (5.0, 5.0, 60.0)
    assert settings.controlled_activation == "default"
    assert settings.api_revision == "extended"
    assert (settings.model, settings.vendor, settings.hardware_version) == ("asfvolt16", "BBSim", "emulated")
    assert (settings.firmware_version, settings.device_id) == ("", "")
    assert settings.device_id_effective == "0a:0a:0a:0a:0a:00"
    assert (settings.port_stats_interval, settings.omci_response_rate, settings.nni_dhcp_trap_vid) == (20, 10, 0)
    assert (settings.dhcp_retry, settings.auth_retry) == (False, False)
    assert (settings.eapol_timeout, settings.dhcp_timeout) == (60.0, 60.0)
    assert settings.omcc_version == 163
    assert (settings.inject_omci_unknown_me, settings.inject_omci_unknown_attributes) == (False, False)
    assert (settings.bp_format, settings.sadis_server, settings.sadis_host) == ("mef", True, "bbsim")
    assert settings.log_level == "info"
    assert (settings.openolt, settings.grpc_v1, settings.rest_v1) == ("tcp:50060", "tcp:50070", "tcp:50071")
    assert (settings.grpc_v0, settings.rest_v0, settings.sadis) == ("tcp:50072", "tcp:50073", "tcp:50074")
    assert settings.workflow == "att"
    assert settings.services == (
        ServiceSpec(name="hsia", c_tag=900, c_tag_allocation="unique", s_tag=900, s_tag_allocation="shared",
                    needs_eapol=True, needs_dhcp=True, tp_id=64),
    )
    assert settings.pon_ranges == (PonRange(0, 0, "XGS-PON", 1, 1, 1024, 1028, 1024, 1056),)
    assert (settings.config_path, settings.services_path, settings.pon_ranges_path) == (None, None, None)
    assert settings.warnings == ()


def test_settings_are_frozen():
    """Settings cannot be changed after they are built."""
    with pytest.raises(dataclasses.FrozenInstanceError):
        Settings().pon = 2


def test_bbsim_sample_config_loads(tmp_path):
    """BBSim's shipped bbsim.yaml loads, its reboot_delay applies, and it gives no warning: the keys
    BBSim itself ignores (enable_igmp, enable_dhcp, enable_auth, device_serial_number) and
    enable_perf: false (what oltsim does anyway) are notes, logged at debug, and --strict-config accepts the file."""
    path = write(tmp_path, "bbsim.yaml", BBSIM_SAMPLE)
    settings = load_settings({}, path)
    assert settings.reboot_delay == 10
    assert settings.openolt == "tcp:50060"
    assert settings.config_path == path
    assert settings.warnings == ()
    assert [(note.event, note.key, note.level) for note in settings.notes] == [
        ("config-key-ignored", key, "debug") for key in ("bbsim.enable_igmp", "bbsim.enable_dhcp",
                                                         "bbsim.enable_auth", "bbsim.enable_perf",
                                                         "olt.device_serial_number")]
    assert settings.notes[0].text == "bbsim.enable_igmp: ignored, as BBSim ignores it"
    assert settings.notes[3].text == "bbsim.enable_perf: ignored, oltsim does what this value asks anyway"


@pytest.mark.parametrize("text, warned", [
    ("bbsim:\n  enable_perf: true\n", ["bbsim.enable_perf"]),
    ("bbsim:\n  log_caller: true\n  cpu_profile: /tmp/cpu.prof\n", ["bbsim.log_caller", "bbsim.cpu_profile"]),
    ("bbsim:\n  enable_auth: true\n  sadis_format: dt\nolt:\n  device_serial_number: X\n", []),
    ("bbsim:\n  enable_perf: false\n  log_caller: false\n  cpu_profile:\n", []),
])
def test_a_key_bbsim_reads_and_oltsim_does_not_stays_a_warning(tmp_path, text, warned):
    """A key BBSim reads for a feature oltsim lacks, set to ask for that feature, is still a warning; the keys BBSim
    ignores whatever their value, and those set to what oltsim does anyway, are notes."""
    settings = load_settings({}, write(tmp_path, "c.yaml", text))
    assert [(w.event, w.key) for w in settings.warnings] == [("config-key-unsupported", key) for key in warned]
    assert all(note.event == "config-key-ignored" for note in settings.notes)


# --- precedence --------------------------------------------------------------------------------------------------


def test_yaml_overrides_defaults_bbsim_ignores(tmp_path):
    """YAML values override the defaults, including the keys BBSim silently overrides with its flag defaults."""
    path = write(tmp_path, "c.yaml", """\
        bbsim:
          delay: 50
        olt:
          pon_ports: 3
          onus_per_port: 2
          uni_ports: 2
          reboot_delay: 7
          nni_speed: 40000
          model: "m1"
          vendor: "v1"
          hardware_version: "hw1"
          device_id: "aa:bb:cc:dd:ee:ff"
        """)
    settings = load_settings({}, path)
    assert (settings.pon, settings.onu, settings.uni, settings.reboot_delay) == (3, 2, 2, 7)
    assert (settings.delay_ms, settings.nni_speed) == (50, 40000)
    assert (settings.model, settings.vendor, settings.hardware_version) == ("m1", "v1", "hw1")
    assert settings.device_id_effective == "aa:bb:cc:dd:ee:ff"


def test_yaml_oltsim_keys(tmp_path):
    """oltsim's own YAML keys set their settings."""
    path = write(tmp_path, "c.yaml", """\
        bbsim:
          api_revision: base
          sadis_host: sadis.example
          eapol_timeout: 2.5
          dhcp_timeout: 3
          sadis_server: false
          log_level: DEBUG
          legacy_api_address: ":60072"
          legacy_rest_api_address: "127.0.0.1:60073"
          sadis_rest_address: ":60074"
        olt:
          reboot_grace: 0.5
          rediscovery_delay: 1
          discovery_retry: 30
          pots_ports: 2
          nni_dhcp_trap_vid: 7
          omci_response_rate: 9
          port_stats_interval: 5
          firmware_version: "1.2.3"
        """)
    settings = load_settings({}, path)
    assert (settings.api_revision, settings.sadis_host, settings.sadis_server) == ("base", "sadis.example", False)
    assert (settings.eapol_timeout, settings.dhcp_timeout, settings.log_level) == (2.5, 3.0, "debug")
    assert (settings.grpc_v0, settings.rest_v0) == ("tcp:60072", "tcp:60073:interface=127.0.0.1")
    assert settings.sadis == "tcp:60074"
    assert (settings.reboot_grace, settings.rediscovery_delay, settings.discovery_retry) == (0.5, 1.0, 30.0)
    assert (settings.pots, settings.nni_dhcp_trap_vid, settings.omci_response_rate) == (2, 7, 9)
    assert (settings.port_stats_interval, settings.firmware_version) == (5, "1.2.3")


def test_given_overrides_yaml(tmp_path):
    """Options given on the command line override the YAML file; keys not given keep the file's value."""
    path = write(tmp_path, "c.yaml", """\
        bbsim:
          delay: 50
          openolt_address: ":1234"
        olt:
          pon_ports: 3
          onus_per_port: 2
          model: "from-file"
        """)
    settings = load_settings({"pon": 5, "model": "typed", "openolt": "tcp:9999"}, path)
    assert (settings.pon, settings.model, settings.openolt) == (5, "typed", "tcp:9999")
    assert (settings.onu, settings.delay_ms) == (2, 50)


@pytest.mark.parametrize("key, yaml_line, expected_default", [
    ("delay_ms", "bbsim: {delay: 50}", 200),
    ("pon", "olt: {pon_ports: 3}", 1),
    ("reboot_delay", "olt: {reboot_delay: 7}", 60),
    ("onu", "olt: {onus_per_port: 2}", 1),
    ("omci_response_rate", "olt: {omci_response_rate: 5}", 10),
])
def test_zero_given_overrides_yaml(tmp_path, key, yaml_line, expected_default):
    """A zero typed on the command line is a value: it overrides a non-zero YAML value."""
    path = write(tmp_path, "c.yaml", yaml_line + "\n")
    assert getattr(load_settings({}, path), key) != expected_default
    assert getattr(load_settings({key: 0}, path), key) == 0


def test_none_in_given_means_not_given(tmp_path):
    """An option whose value is None is treated as not typed, so the file's value stays."""
    path = write(tmp_path, "c.yaml", "olt: {pon_ports: 3}\n")
    assert load_settings({"pon": None}, path).pon == 3


def test_given_strings_are_coerced():
    """String values from the command line are converted to the setting's type."""
    settings = load_settings({"pon": "2", "dhcp_retry": "true", "eapol_timeout": "1.5", "sadis_server": "no"}, None)
    assert (settings.pon, settings.dhcp_retry, settings.eapol_timeout, settings.sadis_server) == (2, True, 1.5, False)


def test_yaml_key_with_no_value_keeps_default(tmp_path):
    """A YAML key with no value leaves the default, like a commented-out line."""
    path = write(tmp_path, "c.yaml", "olt:\n  firmware_version:\n  pon_ports:\n")
    settings = load_settings({}, path)
    assert (settings.firmware_version, settings.pon) == ("", 1)


def test_empty_config_file_gives_defaults(tmp_path):
    """An empty YAML file is the same as no file."""
    path = write(tmp_path, "c.yaml", "")
    assert dataclasses.replace(load_settings({}, path), config_path=None) == Settings()


# --- device id ---------------------------------------------------------------------------------------------------


def test_device_id_from_yaml_olt_id(tmp_path):
    """The derived device id uses the effective olt_id, including one set only in the YAML file."""
    path = write(tmp_path, "c.yaml", "olt: {id: 5}\n")
    settings = load_settings({}, path)
    assert settings.olt_id == 5
    assert settings.device_id == ""
    assert settings.device_id_effective == "0a:0a:0a:0a:0a:05"


def test_device_id_from_given_olt_id_wraps_at_256():
    """The derived device id's last byte is olt_id modulo 256, in two hex digits."""
    assert load_settings({"olt_id": 300}, None).device_id_effective == "0a:0a:0a:0a:0a:2c"


def test_device_id_follows_replace():
    """The derived device id follows olt_id when a Settings value is copied with a new olt_id."""
    assert dataclasses.replace(Settings(), olt_id=17).device_id_effective == "0a:0a:0a:0a:0a:11"


def test_explicit_device_id_wins(tmp_path):
    """A configured device id is reported as is, whatever the olt_id."""
    path = write(tmp_path, "c.yaml", "olt: {id: 5, device_id: 'de:ad:be:ef:00:01'}\n")
    assert load_settings({}, path).device_id_effective == "de:ad:be:ef:00:01"


# --- listeners ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("address, endpoint", [
    (":50060", "tcp:50060"),
    ("0.0.0.0:50060", "tcp:50060"),
    ("50060", "tcp:50060"),
    (50060, "tcp:50060"),
    ("127.0.0.1:50071", "tcp:50071:interface=127.0.0.1"),
    ("bbsim.local:50060", "tcp:50060:interface=bbsim.local"),
    ("[::]:50060", "tcp6:50060"),
    ("[::1]:50060", "tcp6:50060:interface=\\:\\:1"),
    ("tcp:50060", "tcp:50060"),
    ("tcp:0", "tcp:0"),
    ("tcp:50071:interface=127.0.0.1", "tcp:50071:interface=127.0.0.1"),
    ("ssl:443:privateKey=key.pem", "ssl:443:privateKey=key.pem"),
    ("unix:/tmp/oltsim.sock", "unix:/tmp/oltsim.sock"),
])
def test_address_conversion(address, endpoint):
    """BBSim-style addresses become Twisted endpoint strings; endpoint strings pass unchanged."""
    assert endpoint_from_address(address) == endpoint


@pytest.mark.parametrize("address", ["", "localhost", ":99999", "a:b:c", "host:port", True, 1.5])
def test_bad_address(address):
    """Values that are neither an address nor an endpoint are refused."""
    with pytest.raises(ConfigError):
        endpoint_from_address(address)


def test_yaml_addresses_are_converted(tmp_path):
    """Addresses in the YAML file are converted to endpoint strings."""
    path = write(tmp_path, "c.yaml", """\
        bbsim:
          openolt_address: ":50160"
          api_address: "0.0.0.0:50170"
          rest_api_address: "localhost:50171"
        """)
    settings = load_settings({}, path)
    assert (settings.openolt, settings.grpc_v1) == ("tcp:50160", "tcp:50170")
    assert settings.rest_v1 == "tcp:50171:interface=localhost"


def test_given_addresses_are_converted():
    """BBSim-style addresses typed on the command line are converted too."""
    assert load_settings({"openolt": ":50160"}, None).openolt == "tcp:50160"


def test_bad_yaml_address_names_key_and_file(tmp_path):
    """An unusable address in the file is an error naming the key and the file."""
    path = write(tmp_path, "c.yaml", "bbsim: {api_address: 'nowhere'}\n")
    message = error_of({}, path)
    assert "bbsim.api_address" in message and path in message


def test_two_listeners_on_one_port():
    """Two surfaces configured on the same endpoint are refused."""
    message = error_of({"grpc_v1": "tcp:50060"})
    assert message == "openolt and grpc_v1 both listen on tcp:50060"


def test_port_zero_may_repeat():
    """Several listeners may use port 0, since each gets its own free port."""
    given = {name: "tcp:0" for name in ("openolt", "grpc_v1", "rest_v1", "grpc_v0", "rest_v0", "sadis")}
    assert load_settings(given, None).openolt == "tcp:0"


# --- validation --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("given, message", [
    ({"pon": 257}, "pon must be between 0 and 256 (got 257)"),
    ({"pon": -1}, "pon must be between 0 and 256 (got -1)"),
    ({"onu": 65536}, "onu must be between 0 and 65535 (got 65536)"),
    ({"uni": 20}, "uni must be between 0 and 15 (got 20)"),
    ({"pots": 16}, "pots must be between 0 and 15 (got 16)"),
    ({"uni": 12, "pots": 4}, "uni + pots must be at most 15 (got 12 + 4)"),
    ({"nni": 0}, "nni must be between 1 and 16 (got 0)"),
    ({"nni": 17}, "nni must be between 1 and 16 (got 17)"),
    ({"nni_speed": 0}, "nni_speed must be greater than 0 (got 0)"),
    ({"delay_ms": -1}, "delay_ms must be at least 0 (got -1)"),
    ({"reboot_delay": -1}, "reboot_delay must be at least 0 (got -1)"),
    ({"reboot_grace": -0.5}, "reboot_grace must be at least 0 (got -0.5)"),
    ({"rediscovery_delay": -1}, "rediscovery_delay must be at least 0 (got -1.0)"),
    ({"discovery_retry": 0}, "discovery_retry must be greater than 0 (got 0.0)"),
    ({"eapol_timeout": 0}, "eapol_timeout must be greater than 0 (got 0.0)"),
    ({"dhcp_timeout": -1}, "dhcp_timeout must be greater than 0 (got -1.0)"),
    ({"olt_id": -1}, "olt_id must be between 0 and 2147483647 (got -1)"),
    ({"olt_id": 2**31}, "olt_id must be between 0 and 2147483647 (got 2147483648)"),
    ({"port_stats_interval": 0}, "port_stats_interval must be greater than 0 (got 0)"),
    ({"omci_response_rate": 11}, "omci_response_rate must be between 0 and 10 (got 11)"),
    ({"nni_dhcp_trap_vid": 4096}, "nni_dhcp_trap_vid must be between 0 and 4095 (got 4096)"),
    ({"omcc_version": 256}, "omcc_version must be between 0 and 255 (got 256)"),
    ({"controlled_activation": "sometimes"},
     "controlled_activation must be one of default, only-onu, only-pon, both (got 'sometimes')"),
    ({"api_revision": "v2"}, "api_revision must be one of extended, base (got 'v2')"),
    ({"bp_format": "xml"}, "bp_format must be one of mef, ietf (got 'xml')"),
    ({"grpc_engine": "go"}, "grpc_engine must be one of auto, native, grpcio (got 'go')"),
    ({"log_level": "loud"},
     "log_level must be one of trace, debug, info, warn, warning, error, critical (got 'loud')"),
    ({"sadis_host": ""}, "sadis_host must not be empty"),
    ({"pon": "abc"}, "pon must be an integer (got 'abc')"),
    ({"pon": True}, "pon must be an integer (got True)"),
    ({"dhcp_retry": "maybe"}, "dhcp_retry must be true or false (got 'maybe')"),
    ({"eapol_timeout": "nan"}, "eapol_timeout must be a number (got 'nan')"),
    ({"model": 5}, "model must be a string (got 5; quote it in YAML)"),
    ({"onu": 2, "pon_ranges": (PonRange(0, 0, "XGS-PON", 1, 1, 1, 2, 1, 2),)},
     "onus per PON (2) exceeds the ONU id range 1..1 of PON 0"),
    ({"pon": 2, "pon_ranges": (PonRange(0, 0, "XGS-PON", 1, 1, 1, 2, 1, 2),)},
     "PON 1 is not defined in any PON range"),
    ({"no_such_option": 1}, "unknown option 'no_such_option'"),
])
def test_validation_errors(given, message):
    """Each invalid setting is refused with one message naming the setting, the allowed values and the value."""
    assert error_of(given) == message


@pytest.mark.parametrize("value", ["default", "only-onu", "only-pon", "both", "ONLY-PON"])
def test_controlled_activation_values(value):
    """Every controlled activation mode of BBSim is accepted, in any case."""
    assert load_settings({"controlled_activation": value}, None).controlled_activation == value.lower()


def test_boundaries_are_accepted():
    """The extreme legal values are accepted."""
    settings = load_settings({"pon": 256, "onu": 0, "uni": 15, "pots": 0, "nni": 16, "olt_id": 2**31 - 1,
                              "delay_ms": 0, "reboot_delay": 0, "reboot_grace": 0, "omci_response_rate": 0,
                              "nni_dhcp_trap_vid": 4095}, None)
    assert settings.pon_ranges[0].pon_end == 255


def test_validation_error_names_yaml_key(tmp_path):
    """A value from the file that fails validation is reported with the file key that set it."""
    path = write(tmp_path, "c.yaml", "olt: {uni_ports: 20}\n")
    assert error_of({}, path) == f"uni must be between 0 and 15 (got 20) (set by olt.uni_ports in {path})"


def test_wrong_yaml_type_names_key_and_file(tmp_path):
    """A YAML value of the wrong type is an error naming the key and the file."""
    path = write(tmp_path, "c.yaml", "olt: {pon_ports: abc}\n")
    assert error_of({}, path) == f"config file {path}: olt.pon_ports must be an integer (got 'abc')"


def test_unquoted_sexagesimal_device_id_is_refused(tmp_path):
    """A device id YAML reads as a number (unquoted 10:10:...) is refused with a hint to quote it."""
    path = write(tmp_path, "c.yaml", "olt: {device_id: 10:10:10}\n")
    assert "quote it" in error_of({}, path)


def test_validate_direct_settings():
    """validate() checks Settings built directly, not only loaded ones."""
    validate(Settings(pon=2, onu=2))
    with pytest.raises(ConfigError, match="uni must be between 0 and 15"):
        validate(Settings(uni=16))


# --- files -------------------------------------------------------------------------------------------------------


def test_missing_config_file(tmp_path):
    """A config file given explicitly but absent is an error, not a silent fallback to defaults."""
    path = str(tmp_path / "absent.yaml")
    assert error_of({}, path) == f"config file {path} does not exist"


def test_bad_yaml_syntax(tmp_path):
    """A config file that is not valid YAML is a ConfigError giving the line."""
    path = write(tmp_path, "c.yaml", "olt:\n  pon_ports: [1, 2\n")
    message = error_of({}, path)
    assert message.startswith(f"config file {path}: invalid YAML at line ")


def test_duplicate_yaml_key(tmp_path):
    """A key given twice in one mapping is an error instead of silently keeping the last one."""
    path = write(tmp_path, "c.yaml", "olt:\n  pon_ports: 1\n  pon_ports: 2\n")
    assert "duplicate key 'pon_ports'" in error_of({}, path)


@pytest.mark.parametrize("text", ["- a\n- b\n", "just a string\n", "olt: [1, 2]\n"])
def test_config_file_shape(tmp_path, text):
    """A config file whose top level or section is not a mapping is refused."""
    path = write(tmp_path, "c.yaml", text)
    assert error_of({}, path).startswith(f"config file {path}: ")


def test_unknown_keys_become_warnings(tmp_path):
    """Unknown keys and sections are recorded as warnings and do not stop loading; bbr: is ignored silently."""
    path = write(tmp_path, "c.yaml", """\
        bbsim:
          no_such_key: 1
          enable_perf: true
        olt:
          colour: blue
        extra:
          x: 1
        bbr:
          log: bbr.log
        """)
    settings = load_settings({}, path)
    assert settings.warnings == (
        f"config file {path}: extra: unknown section, ignored",
        f"config file {path}: bbsim.no_such_key: unknown key, ignored",
        f"config file {path}: bbsim.enable_perf: not supported by oltsim, ignored",
        f"config file {path}: olt.colour: unknown key, ignored",
    )
    assert [(w.event, w.key, w.hint, w.file) for w in settings.warnings] == [
        ("config-section-unknown", "extra", "", path), ("config-key-unknown", "bbsim.no_such_key", "", path),
        ("config-key-unsupported", "bbsim.enable_perf", "", path), ("config-key-unknown", "olt.colour", "", path)]


@pytest.mark.parametrize("text, key, hint", [
    ("olt:\n  num_pon_ports: 2\n", "olt.num_pon_ports", "olt.pon_ports"),
    ("bbsim:\n  pon_ports: 2\n", "bbsim.pon_ports", "olt.pon_ports"),
    ("bbsim:\n  kafka_broker_address: x\n", "bbsim.kafka_broker_address", "bbsim.kafka_address"),
    ("bbsm:\n  delay: 0\n", "bbsm", "bbsim"),
    ("OLT:\n  pon_ports: 2\n", "OLT", "olt"),
])
def test_an_unknown_key_warns_with_the_nearest_known_key(tmp_path, text, key, hint):
    """An unknown key more than two edits from every key of its section (or in the other section), and a misspelt
    section, is one warning that names it and the nearest known key or section, and the defaults stay."""
    path = write(tmp_path, "c.yaml", text)
    settings = load_settings({}, path)
    what = "key" if "." in key else "section"
    assert settings.warnings == (f"config file {path}: {key}: unknown {what}; did you mean {hint}?",)
    assert (settings.warnings[0].key, settings.warnings[0].hint) == (key, hint)
    assert (settings.pon, settings.delay_ms) == (1, 200)


def test_typos_in_services_and_pon_ranges_files_warn_with_the_nearest_key(tmp_path):
    """Unknown keys of a services file and a PON ranges file warn too, each with the nearest known key."""
    services = write(tmp_path, "s.yaml", f"services: [{{{SERVICE_OK}, c_tg: 7}}]\nworkflo: att\n")
    assert load_settings({"services": services}, None).warnings == (
        f"services file {services}: workflo: unknown key; did you mean workflow?",
        f"services file {services}: service 'hsia': c_tg: unknown key; did you mean c_tag?")
    ranges = write(tmp_path, "r.yaml", """\
        num_pon_ports: 1
        ranges:
          - pon_id_range: {start: 0, end: 0}
            tec: GPON
            tech: GPON
            onu_id_range: {start: 1, end: 8}
            alloc_id_range: {start: 1024, end: 1100}
            gemport_id_range: {start: 1024, end: 1200}
        """)
    assert load_settings({"pon_ranges_path": ranges}, None).warnings == (
        f"PON ranges file {ranges}: range #1: tec: unknown key; did you mean tech?",)


def test_strict_config_error_names_the_first_warning_and_counts_the_others(tmp_path):
    """--strict-config's error is one message: the first warning, then how many more and their keys."""
    path = write(tmp_path, "c.yaml", "olt:\n  num_pon_ports: 2\nbbsm: {}\n")
    one = load_settings({}, write(tmp_path, "d.yaml", "olt:\n  num_pon_ports: 2\n")).warnings
    assert str(strict_error(one)) == (f"config file {tmp_path / 'd.yaml'}: olt.num_pon_ports: unknown key; did you "
                                      "mean olt.pon_ports? (an error with --strict-config)")
    assert str(strict_error(load_settings({}, path).warnings)) == (
        f"config file {path}: bbsm: unknown section; did you mean bbsim? (and 1 more: olt.num_pon_ports; errors "
        "with --strict-config)")


@pytest.mark.parametrize("text, key, meant", [
    ("olt:\n  pon_port: 2\n", "olt.pon_port", "olt.pon_ports"),
    ("olt:\n  onus_per_pon: 2\n", "olt.onus_per_pon", "olt.onus_per_port"),
    ("olt:\n  PON_PORTS: 2\n", "olt.PON_PORTS", "olt.pon_ports"),
    ("olt:\n  ip: 3\n", "olt.ip", "olt.id"),
    ("olt:\n  technolgy: GPON\n", "olt.technolgy", "olt.technology"),
    ("bbsim:\n  kafka_adress: x\n", "bbsim.kafka_adress", "bbsim.kafka_address"),
    ("bbsim:\n  dleay: 0\n", "bbsim.dleay", "bbsim.delay"),
    ("bbsim:\n  enable_pref: false\n", "bbsim.enable_pref", "bbsim.enable_perf"),
])
def test_a_key_an_edit_or_two_from_a_known_one_is_refused_naming_it(tmp_path, text, key, meant):
    """A key within two edits of a key of its section (a BBSim key oltsim ignores included) is taken for a
    misspelling and refused, in one message with the key it must have meant, as a misspelt option is."""
    path = write(tmp_path, "c.yaml", text)
    assert error_of({}, path) == f"config file {path}: {key}: unknown key; did you mean {meant}?"


def test_bbsims_own_keys_are_never_taken_for_misspellings(tmp_path):
    """Every key BBSim reads or ships in its configs (those oltsim ignores too) loads: a warning or a note, never
    a refusal, although several are an edit or two from another key."""
    bbsim_keys = ("dhcp_retry auth_retry log_level log_caller delay cpu_profile openolt_address api_address "
                  "rest_api_address legacy_api_address legacy_rest_api_address sadis_rest_address sadis_server "
                  "kafka_address enable_events controlled_activation enable_perf kafka_event_topic "
                  "dmi_server_address bp_format inject_omci_unknown_me inject_omci_unknown_attributes omcc_version "
                  "enable_igmp enable_dhcp enable_auth sadis_format").split()
    olt_keys = ("model vendor hardware_version firmware_version device_id device_serial_number pon_ports nni_ports "
                "nni_speed onus_per_port id reboot_delay port_stats_interval omci_response_rate uni_ports "
                "pots_ports nni_dhcp_trap_vid technology").split()
    values = {"enable_perf": True, "cpu_profile": "cpu.out", "log_caller": True, "log_level": "debug",
              "controlled_activation": "default", "bp_format": "mef", "technology": "GPON"}
    text = "bbsim:\n" + "".join(f"  {key}: {values.get(key, '~')}\n" for key in bbsim_keys)
    text += "olt:\n" + "".join(f"  {key}: {values.get(key, '~')}\n" for key in olt_keys)
    settings = load_settings({}, write(tmp_path, "c.yaml", text))
    assert sorted(w.key for w in settings.warnings) == [
        "bbsim.cpu_profile", "bbsim.enable_perf", "bbsim.log_caller", "olt.technology"]
    assert all(w.event == "config-key-unsupported" for w in settings.warnings)


# --- services ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name, workflow, services", [
    ("att", "att", ["hsia"]),
    ("dt", "dt", ["hsia"]),
    ("dt-fttb", "dt-fttb", ["FTTB_SUBSCRIBER_TRAFFIC", "DPU_ANCP_TRAFFIC", "DPU_MGMT_TRAFFIC"]),
    ("tt", "tt", ["hsia", "voip", "vod", "MC"]),
])
def test_builtin_services_load(name, workflow, services):
    """Each built-in services name loads, with its workflow and services in file order."""
    settings = load_settings({"services": name}, None)
    assert settings.workflow == workflow
    assert [s.name for s in settings.services] == services
    assert settings.services_path.endswith(f"{name}-services.yaml")
    assert settings.warnings == ()


def test_builtin_att_equals_default():
    """The shipped att services file holds exactly the built-in default services."""
    assert load_services("att").services == ATT_SERVICES


def test_builtin_service_details():
    """Built-in services carry BBSim's tags, allocations, flags and priorities."""
    dt = load_services("dt").services[0]
    assert (dt.uni_tag_match, dt.c_tag, dt.c_tag_allocation, dt.s_tag, dt.s_tag_allocation) == (
        4096, 4096, "shared", 900, "unique")
    voip = load_services("tt").services[1]
    assert (voip.needs_dhcp, voip.configure_mac_address) == (True, True)
    assert (voip.tp_id, voip.us_pon_c_tag_priority) == (65, 7)
    mgmt = load_services("dt-fttb").services[2]
    assert (mgmt.enable_mac_learning, mgmt.needs_dhcp, mgmt.us_pon_s_tag_priority) == (True, True, 7)


def test_services_file_from_yaml_relative_to_config(tmp_path):
    """A relative services path in the YAML file is resolved from the YAML file's directory."""
    write(tmp_path, "conf/svc/mine.yaml", """\
        workflow: custom
        services:
          - name: data
            c_tag: 10
            c_tag_allocation: unique
            s_tag: 20
            s_tag_allocation: shared
            needs_pppoe: true
        """)
    path = write(tmp_path, "conf/c.yaml", "bbsim: {services: svc/mine.yaml}\n")
    settings = load_settings({}, path)
    assert settings.workflow == "custom"
    assert settings.services == (ServiceSpec(name="data", c_tag=10, c_tag_allocation="unique", s_tag=20,
                                             s_tag_allocation="shared", needs_pppoe=True),)
    assert settings.services_path == str(tmp_path / "conf" / "svc" / "mine.yaml")


def test_yaml_builtin_services_name(tmp_path):
    """The YAML services key may name a built-in services set."""
    path = write(tmp_path, "c.yaml", "bbsim: {services: tt}\n")
    assert load_settings({}, path).workflow == "tt"


def test_given_services_path_relative_to_cwd(tmp_path, monkeypatch):
    """A relative services path typed on the command line is resolved from the working directory."""
    write(tmp_path, "s.yaml", "services: [{name: a, c_tag_allocation: shared, s_tag_allocation: shared}]\n")
    config = write(tmp_path, "sub/c.yaml", "bbsim: {services: dt}\n")
    monkeypatch.chdir(tmp_path)
    settings = load_settings({"services": "s.yaml"}, config)
    assert [s.name for s in settings.services] == ["a"]
    assert settings.workflow == ""


def test_given_service_specs():
    """A sequence of ServiceSpec may be given directly."""
    spec = ServiceSpec(name="x", c_tag_allocation="shared", s_tag_allocation="unique")
    assert load_settings({"services": [spec]}, None).services == (spec,)


def test_missing_services_file(tmp_path):
    """A services file that does not exist is an error naming it."""
    path = str(tmp_path / "nope.yaml")
    assert error_of({"services": path}) == f"services file {path} does not exist"


def test_default_ranges_follow_service_count():
    """Without a PON ranges file, alloc and GEM ranges grow with the number of services."""
    settings = load_settings({"services": "tt", "onu": 2, "uni": 4}, None)
    assert settings.pon_ranges == (PonRange(0, 0, "XGS-PON", 1, 2, 1024, 1024 + 32, 1024, 1024 + 256),)


SERVICE_OK = "name: hsia, c_tag: 900, c_tag_allocation: unique, s_tag: 900, s_tag_allocation: shared"


@pytest.mark.parametrize("services, message", [
    ("[{name: hsia, c_tag: 900, s_tag: 900, s_tag_allocation: shared}]", "service 'hsia' is missing c_tag_allocation"),
    ("[{name: hsia, c_tag_allocation: unique}]", "service 'hsia' is missing s_tag_allocation"),
    ("[{name: hsia}]", "service 'hsia' is missing c_tag_allocation and s_tag_allocation"),
    ("[{c_tag_allocation: shared, s_tag_allocation: shared}]", "service #1 has no name"),
    ("[{name: hsia, c_tag_allocation: random, s_tag_allocation: shared}]",
     "service 'hsia': c_tag_allocation must be shared or unique (got 'random')"),
    ("[{name: hsia, c_tag_allocation: shared, s_tag_allocation: per-onu}]",
     "service 'hsia': s_tag_allocation must be shared or unique (got 'per-onu')"),
    (f"[{{{SERVICE_OK}}}, {{{SERVICE_OK}}}]", "service name 'hsia' is used twice; names must be unique"),
    ("[]", "at least one service is required"),
    ("[{name: a, c_tag: 4097, c_tag_allocation: shared, s_tag_allocation: shared}]",
     "service 'a': c_tag must be between 0 and 4096 (got 4097)"),
    ("[{name: a, s_tag: -1, c_tag_allocation: shared, s_tag_allocation: shared}]",
     "service 'a': s_tag must be between 0 and 4096 (got -1)"),
    ("[{name: a, uni_tag_match: 5000, c_tag_allocation: shared, s_tag_allocation: shared}]",
     "service 'a': uni_tag_match must be between 0 and 4096 (got 5000)"),
    ("[{name: a, ds_pon_s_tag_priority: 8, c_tag_allocation: shared, s_tag_allocation: shared}]",
     "service 'a': ds_pon_s_tag_priority must be between 0 and 7 (got 8)"),
    ("[{name: a, needs_dhcp: yes please, c_tag_allocation: shared, s_tag_allocation: shared}]",
     "service 'a': needs_dhcp must be true or false (got 'yes please')"),
    ("[{name: a, c_tag: ten, c_tag_allocation: shared, s_tag_allocation: shared}]",
     "service 'a': c_tag must be an integer (got 'ten')"),
    ("[hsia]", "service #1 must be a mapping (got a string)"),
])
def test_services_file_errors(tmp_path, services, message):
    """An invalid services file is refused with a message naming the file and the service."""
    path = write(tmp_path, "s.yaml", f"workflow: att\nservices: {services}\n")
    assert error_of({"services": path}) == f"services file {path}: {message}"


def test_services_file_unknown_key_is_warning(tmp_path):
    """An unknown key in a service is recorded as a warning."""
    path = write(tmp_path, "s.yaml", f"services: [{{{SERVICE_OK}, colour: red}}]\n")
    assert load_settings({"services": path}, None).warnings == (
        f"services file {path}: service 'hsia': colour: unknown key, ignored",)


def test_dt_any_tag_4096_is_accepted():
    """Tag 4096 (DT's "any") is accepted for c_tag and uni_tag_match."""
    assert load_settings({"services": "dt"}, None).services[0].c_tag == 4096


# --- PON ranges --------------------------------------------------------------------------------------------------


def test_default_pon_ranges_reference():
    """Without a ranges file, pon 2 / onu 2 / ATT gives ONU ids 1..2, alloc 1024..1032, GEM 1024..1088."""
    settings = load_settings({"pon": 2, "onu": 2}, None)
    assert settings.pon_ranges == (PonRange(0, 1, "XGS-PON", 1, 2, 1024, 1032, 1024, 1088),)
    assert settings.pon_range_for(1) is settings.pon_ranges[0]


def test_default_pon_ranges_follow_replace():
    """Default ranges are derived again when Settings are copied with other sizes; file ranges are kept."""
    assert dataclasses.replace(Settings(), pon=2, onu=2).pon_ranges == (
        PonRange(0, 1, "XGS-PON", 1, 2, 1024, 1032, 1024, 1088),)
    custom = (PonRange(0, 3, "GPON", 1, 8, 1, 9, 1, 9),)
    assert dataclasses.replace(Settings(pon_ranges=custom), onu=2).pon_ranges == custom


def test_default_pon_ranges_with_zeroes():
    """Zero PONs, ONUs or UNIs still give well-formed default ranges."""
    assert default_pon_ranges(0, 0, 0, 1) == (PonRange(0, 0, "XGS-PON", 1, 1, 1024, 1025, 1024, 1032),)
    validate(Settings(pon=0, onu=0, uni=0))


def test_pon_ranges_file(tmp_path):
    """BBSim's sample PON ranges file loads and sets the ranges for all 16 PONs."""
    ranges = write(tmp_path, "pon.yaml", PON_INTERFACES)
    settings = load_settings({"pon": 16, "onu": 4, "pon_ranges_path": ranges}, None)
    assert settings.pon_ranges == (PonRange(0, 15, "XGS-PON", 1, 255, 256, 1024, 256, 1024),)
    assert settings.pon_ranges_path == ranges


def test_pon_ranges_file_relative_to_config(tmp_path):
    """A relative pon_port_config_file in the YAML file is resolved from the YAML file's directory."""
    write(tmp_path, "conf/pon.yaml", PON_INTERFACES)
    path = write(tmp_path, "conf/c.yaml", "bbsim: {pon_port_config_file: pon.yaml}\nolt: {pon_ports: 4}\n")
    settings = load_settings({}, path)
    assert settings.pon_ranges_path == str(tmp_path / "conf" / "pon.yaml")
    assert settings.pon_ranges[0].onu_id_end == 255


MIXED_RANGES = """\
num_pon_ports: 8
ranges:
  - pon_id_range: {start: 0, end: 3}
    tech: GPON
    onu_id_range: {start: 1, end: 64}
    alloc_id_range: {start: 1024, end: 2048}
    gemport_id_range: {start: 1024, end: 4096}
  - pon_id_range: {start: 4, end: 7}
    tech: XGS-PON
    onu_id_range: {start: 1, end: 128}
    alloc_id_range: {start: 1024, end: 2048}
    gemport_id_range: {start: 1024, end: 4096}
"""


def test_pon_ranges_mixed_technologies(tmp_path):
    """Several ranges may give different technologies and id ranges to different PONs."""
    path = write(tmp_path, "pon.yaml", MIXED_RANGES)
    settings = load_settings({"pon": 8, "onu": 64, "pon_ranges_path": path}, None)
    assert settings.pon_range_for(3).technology == "GPON"
    assert settings.pon_range_for(4).technology == "XGS-PON"


def test_onus_exceed_onu_id_range(tmp_path):
    """More ONUs per PON than a used range's ONU ids is refused, naming the range and its PONs."""
    path = write(tmp_path, "pon.yaml", MIXED_RANGES)
    assert error_of({"pon": 8, "onu": 70, "pon_ranges_path": path}) == (
        f"PON ranges file {path}: onus per PON (70) exceeds the ONU id range 1..64 of PONs 0-3")


def test_onus_checked_only_against_used_pons(tmp_path):
    """A range whose PONs are not in use does not limit the ONUs per PON."""
    path = write(tmp_path, "pon.yaml", MIXED_RANGES.replace("{start: 1, end: 128}", "{start: 1, end: 8}"))
    assert load_settings({"pon": 4, "onu": 64, "pon_ranges_path": path}, None).onu == 64


def test_pon_beyond_ranges_file(tmp_path):
    """More PONs than the ranges file defines is refused."""
    path = write(tmp_path, "pon.yaml", PON_INTERFACES)
    assert error_of({"pon": 20, "pon_ranges_path": path}) == (
        f"PON ranges file {path}: pon (20) exceeds num_pon_ports (16)")


def _range(pons, tech="XGS-PON", onus="{start: 1, end: 8}", allocs="{start: 1, end: 9}"):
    return (f"  - pon_id_range: {pons}\n    tech: {tech}\n    onu_id_range: {onus}\n"
            f"    alloc_id_range: {allocs}\n    gemport_id_range: {{start: 1, end: 9}}\n")


@pytest.mark.parametrize("text, message", [
    ("num_pon_ports: 2\nranges:\n" + _range("{start: 0, end: 0}"), "PON 1 is not defined in any range"),
    ("num_pon_ports: 2\nranges:\n" + _range("{start: 0, end: 1}") + _range("{start: 1, end: 1}"),
     "PON 1 is defined twice (ranges #1 and #2)"),
    ("num_pon_ports: 2\nranges:\n" + _range("{start: 0, end: 2}"),
     "range #1 (PONs 0-2): PON 2 is outside num_pon_ports (2: PONs 0-1)"),
    ("num_pon_ports: 2\nranges:\n" + _range("{start: 1, end: 0}"), "range #1: pon range start 1 is after its end 0"),
    ("num_pon_ports: 2\nranges:\n" + _range("{start: 0, end: 1}", onus="{start: 9, end: 8}"),
     "range #1 (PONs 0-1): onu_id range start 9 is after its end 8"),
    ("num_pon_ports: 2\nranges:\n" + _range("{start: 0, end: 1}", allocs="{start: 9, end: 8}"),
     "range #1 (PONs 0-1): alloc_id range start 9 is after its end 8"),
    ("num_pon_ports: 2\nranges:\n" + _range("{start: 0, end: 1}", tech="EPON"),
     "range #1 (PONs 0-1): tech must be GPON or XGS-PON (got 'EPON')"),
    ("num_pon_ports: 0\nranges:\n" + _range("{start: 0, end: 1}"), "num_pon_ports must be between 1 and 256 (got 0)"),
    ("ranges:\n" + _range("{start: 0, end: 1}"), "num_pon_ports is missing"),
    ("num_pon_ports: 2\n", "at least one range is required"),
    ("num_pon_ports: 2\nranges:\n  - tech: GPON\n",
     "range #1 is missing pon_id_range (a mapping with start: and end:)"),
    ("num_pon_ports: 2\nranges:\n" + _range("{start: 0}"), "range #1: pon_id_range is missing end"),
    ("num_pon_ports: 2\nranges:\n" + _range("{start: 0, end: x}"),
     "range #1: pon_id_range.end must be an integer (got 'x')"),
])
def test_pon_ranges_file_errors(tmp_path, text, message):
    """An invalid PON ranges file is refused with a message naming the file and the range."""
    path = write(tmp_path, "pon.yaml", text)
    assert error_of({"pon": 1, "pon_ranges_path": path}) == f"PON ranges file {path}: {message}"


def test_load_pon_ranges_directly(tmp_path):
    """load_pon_ranges returns the declared PON count with the ranges."""
    loaded = load_pon_ranges(write(tmp_path, "pon.yaml", MIXED_RANGES))
    assert (loaded.num_pon_ports, len(loaded.ranges), loaded.warnings) == (8, 2, ())


def test_builtin_names_listed():
    """The built-in services names are the four BBSim ships."""
    assert BUILTIN_SERVICES == ("att", "dt", "dt-fttb", "tt")


def test_grpc_engine_from_yaml_and_options(tmp_path):
    """The OpenOLT engine defaults to auto, is read from bbsim.grpc_engine in any case, and an option wins."""
    assert load_settings({}, None).grpc_engine == "auto"
    path = write(tmp_path, "engine.yaml", """
        bbsim:
          grpc_engine: GRPCIO
        """)
    assert load_settings({}, path).grpc_engine == "grpcio"
    assert load_settings({"grpc_engine": "native"}, path).grpc_engine == "native"


@pytest.mark.parametrize("choice, endpoint, engine", [
    ("auto", "tcp:50060", "native"),
    ("auto", "ssl:50060:privateKey=key.pem", "native"),
    ("native", "tcp:50060", "native"),
    ("native", "ssl:50060:privateKey=key.pem", "native"),
    ("grpcio", "tcp:50060", "grpcio"),
    ("grpcio", "ssl:50060:privateKey=key.pem", "grpcio"),
])
def test_loop_engine_choice(choice, endpoint, engine):
    """auto serves every endpoint natively (ssl: ones through the TLS relay in front of pygrpc-native); an explicit
    choice is kept."""
    from oltsim.daemon import loop_engine

    assert loop_engine(choice, endpoint) == engine


def test_bbsim_olt_technology_is_reported_as_unsupported(tmp_path):
    """BBSim's own `olt.technology` key is reported as not supported (the PON ranges carry the technology), not as
    an unknown key with a guess."""
    settings = load_settings({}, write(tmp_path, "bbsim.yaml", "olt:\n  technology: GPON\n"))
    assert [(w.event, w.key) for w in settings.warnings] == [("config-key-unsupported", "olt.technology")]
    assert settings.warnings[0].text == "olt.technology: not supported by oltsim, ignored"
    assert {r.technology for r in settings.pon_ranges} == {"XGS-PON"}
