"""The table of settings (oltsim.config.SETTINGS) is the one place a setting is written: twistd oltsim's options,
the YAML keys, `bbsim`'s flags, the per-field checks and docs/options.md all come from its rows or are checked
against them, so that adding a setting is adding one row."""
import dataclasses
import importlib.util
import sys
from pathlib import Path

import pytest

from oltsim import bbsimcmd, config
from oltsim.config import SETTINGS, AtLeast, Between, ConfigError, NotEmpty, OneOf, Positive, load_settings

ROOT = Path(__file__).resolve().parents[2]
SCALAR = [row for row in SETTINGS if row.kind in config._KIND_TYPES]


def _generator():
    spec = importlib.util.spec_from_file_location("gen_options_doc", ROOT / "tools" / "gen_options_doc.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def other_value(row, tmp_path):
    """A valid value for ``row`` that is not its default (a file the setting reads is written in ``tmp_path``)."""
    if row.kind == "bool":
        return not row.default
    if row.kind == "endpoint":
        return "tcp:0:interface=127.0.0.1"
    if row.field == "api_token_file":
        path = tmp_path / "token"
        path.write_text("s3cret\n")
        return str(path)
    if row.field == "scenario":
        return str(ROOT / "docs" / "scenarios" / "pon-los-30s.yaml")
    if row.field == "kafka_address":
        return "127.0.0.1:9093"
    if row.field == "uni_interfaces":
        return "all"
    if row.field in ("vxlan_listen", "vxlan_remote"):
        return "127.0.0.1"
    if row.kind == "rate":
        return 300_000_000
    if isinstance(row.check, OneOf):
        return next(choice for choice in row.check.choices if choice != row.default)
    if row.kind in ("int", "float"):
        value = row.default + 1
        if isinstance(row.check, Between) and value > row.check.high:
            value = row.check.low
        return value
    return "x" + row.default


def out_of_range(row):
    """A value its check refuses, or None when the row has no such check."""
    check = row.check
    if isinstance(check, Between):
        return check.high + 1
    if isinstance(check, AtLeast):
        return check.low - 1
    if isinstance(check, Positive):
        return 0
    if isinstance(check, OneOf):
        return "no-such-choice"
    if isinstance(check, NotEmpty):
        return ""
    return None


def test_every_row_is_complete_and_its_default_written_once():
    """Every row names a unique field, a known kind, help, and a default the Settings field holds (the help shows
    it through {default}, never typed again); option, YAML key and bbsim flag are each used by one row at most."""
    assert len({row.field for row in SETTINGS}) == len(SETTINGS)
    for key in ("option", "yaml", "bbsim"):
        used = [getattr(row, key) for row in SETTINGS if getattr(row, key)]
        assert len(used) == len(set(used)), key
    defaults = config.Settings()
    for row in SETTINGS:
        assert row.kind in (*config._KIND_TYPES, *config._FILE_KINDS), row
        assert row.help and row.help_text == row.help.format(default=row.default)
        if row.kind in config._KIND_TYPES:
            assert getattr(defaults, row.field) == row.default, row.field
        if row.default not in ("", None, False, True) and "{default}" not in row.help:
            assert f"default {row.default}" not in row.help, f"{row.field}: write the default as {{default}}"


def test_every_option_comes_from_the_table_with_its_help():
    """twistd oltsim's options are exactly the rows with an option: a bool is a flag, anything else takes a value
    with no default of its own (so that only typed options override the file), and --help shows the row's help."""
    from oltsim.tap import Options

    parameters = {name: (short, default, text) for name, short, default, text in Options.optParameters}
    flags = {name: (short, text) for name, short, text in Options.optFlags}
    for row in SETTINGS:
        if not row.option:
            continue
        if row.is_flag:
            assert flags.pop(row.option) == (row.short, row.help_text)
        else:
            assert parameters.pop(row.option) == (row.short, None, row.help_text)
    assert parameters == {} and flags == {}


@pytest.mark.parametrize("row", [row for row in SCALAR if row.option], ids=lambda row: row.option)
def test_each_option_sets_its_field(row, tmp_path):
    """`twistd oltsim --OPTION VALUE` (or the flag) gives the row's Settings field that value."""
    from oltsim.tap import Options

    value = other_value(row, tmp_path)
    argv = [f"--{row.option}"] if row.is_flag else [f"--{row.option}", str(value)]
    options = Options()
    options.parseOptions(argv)
    assert getattr(options.settings, row.field) == value


def test_yaml_key_maps_come_from_the_table():
    """The bbsim: and olt: key maps the loader reads are the rows' YAML keys, and nothing else."""
    expected = {row.yaml: row.field for row in SETTINGS if row.yaml}
    loaded = {**{f"bbsim.{key}": field for key, field in config._BBSIM_KEYS.items()},
              **{f"olt.{key}": field for key, field in config._OLT_KEYS.items()}}
    assert loaded == expected
    assert all(key.split(".", 1)[0] in ("bbsim", "olt") for key in expected)


@pytest.mark.parametrize("row", [row for row in SCALAR if row.yaml], ids=lambda row: row.yaml)
def test_each_yaml_key_sets_its_field(row, tmp_path):
    """A YAML file's key gives the row's field its value."""
    value = other_value(row, tmp_path)
    section, key = row.yaml.split(".", 1)
    path = tmp_path / "oltsim.yaml"
    written = str(value).lower() if isinstance(value, bool) else repr(value) if isinstance(value, str) else value
    path.write_text(f"{section}:\n  {key}: {written}\n")
    assert getattr(load_settings({}, str(path)), row.field) == value


@pytest.mark.parametrize("row", [row for row in SCALAR if out_of_range(row) is not None], ids=lambda row: row.field)
def test_each_check_refuses_a_value_out_of_range_with_one_message(row):
    """validate() applies the row's check: a value outside it is one ConfigError naming the field (and the option
    is then named by twistd oltsim)."""
    with pytest.raises(ConfigError) as info:
        load_settings({row.field: out_of_range(row)}, None)
    assert info.value.setting == row.field
    assert str(info.value).startswith(f"{row.field} must ")


def test_bbsim_flags_take_their_setting_and_default_from_the_table():
    """Every `bbsim` flag that sets something is named by exactly one row, sets that row's field, and shows the
    row's default in `bbsim -h` (BBSim's own where the row says BBSim's differs)."""
    rows = {row.bbsim: row for row in SETTINGS if row.bbsim}
    for flag in bbsimcmd.FLAGS:
        if flag.ignored:
            assert flag.name not in rows and flag.setting is None
            continue
        row = rows.pop(flag.name)
        assert flag.setting == (None if row.kind == "config" else row.field)
        assert flag.default == row.flag_default
    assert rows == {}


@pytest.mark.parametrize("flag", [flag for flag in bbsimcmd.FLAGS if flag.setting
                                  and config.SETTING_OF[flag.setting].bbsim_default is None
                                  and config.SETTING_OF[flag.setting].kind not in config._FILE_KINDS],
                         ids=lambda flag: flag.name)
def test_each_bbsim_flag_default_is_what_oltsim_uses(flag):
    """A flag's shown default, given back as a value, is the setting's default, unless the row records BBSim's
    default as differing (logLevel, kafkaAddress, services): `bbsim -h` does not misstate what oltsim does."""
    row = config.SETTING_OF[flag.setting]
    argv = [f"-{flag.name}={flag.default}"]
    assert bbsimcmd.parse(argv).given[flag.setting] == row.default


@pytest.mark.parametrize("row", [row for row in SCALAR if row.bbsim], ids=lambda row: row.bbsim)
def test_each_bbsim_flag_sets_its_field(row, tmp_path):
    """`bbsim -FLAG VALUE` sets the row's field to VALUE (a listener as its endpoint string)."""
    value = other_value(row, tmp_path)
    if row.kind == "endpoint":
        argv, value = [f"-{row.bbsim}", "127.0.0.1:0"], "tcp:0:interface=127.0.0.1"
    elif row.kind == "bool":
        argv = [f"-{row.bbsim}={str(value).lower()}"]
    else:
        argv = [f"-{row.bbsim}", str(value)]
    assert bbsimcmd.parse(argv).given[row.field] == value


def test_docs_options_page_is_generated_from_the_table():
    """docs/options.md is what tools/gen_options_doc.py prints (regenerate it after changing a row), with one line
    per row naming its option, YAML key and bbsim flag; --scenario is among them."""
    text = (ROOT / "docs" / "options.md").read_text(encoding="utf-8")
    assert text == _generator().render(), "run python tools/gen_options_doc.py > docs/options.md"
    lines = [line for line in text.splitlines() if line.startswith("| ") and not line.startswith("| option")]
    assert len(lines) == len(SETTINGS)
    for row, line in zip(SETTINGS, lines):
        for name in (f"--{row.option}" if row.option else "", row.yaml, f"-{row.bbsim}" if row.bbsim else ""):
            assert name in line, (row.field, line)
    assert any(line.startswith("| `--scenario` |") for line in lines)


def test_the_generator_check_mode_says_when_the_page_is_stale(tmp_path, monkeypatch, capsys):
    """`tools/gen_options_doc.py --check` exits 0 on the committed page and 1, with one line, on a stale one."""
    generator = _generator()
    assert generator.main(["gen", "--check"]) == 0
    stale = tmp_path / "options.md"
    stale.write_text("# Every setting\n")
    monkeypatch.setattr(generator, "DOC", stale)
    assert generator.main(["gen", "--check"]) == 1
    assert "differs from the table of settings" in capsys.readouterr().err


def test_settings_fields_are_the_rows_then_what_the_files_give():
    """Settings has a field for each scalar row (a secret kept out of repr) and for what the files give, and
    nothing else: a field cannot be added without its row."""
    names = [f.name for f in dataclasses.fields(config.Settings)]
    assert names[:len(SCALAR)] == [row.field for row in SCALAR]
    assert names[len(SCALAR):] == ["services", "workflow", "pon_ranges", "config_path", "services_path",
                                   "pon_ranges_path", "warnings", "notes"]
    assert "s3cret" not in repr(load_settings({"api_token": "s3cret"}, None))


def test_settings_declares_each_row_with_its_default():
    """Settings declares one field for each scalar row, in the table's order, with the row's name, a type of its
    kind and the row's very default (a derived default keeps its marker type); a secret is kept out of repr. So the
    declared fields and the table cannot drift apart."""
    declared = [f for f in dataclasses.fields(config.Settings)][:len(SCALAR)]
    assert [f.name for f in declared] == [row.field for row in SCALAR]
    for f, row in zip(declared, SCALAR):
        assert f.default == row.default and type(f.default) is type(row.default), row.field
        assert f.type == config._KIND_TYPES[row.kind].__name__, row.field
        assert f.repr == (row.kind != "secret"), row.field


def test_adding_a_row_and_its_field_is_all_a_new_setting_needs(tmp_path, monkeypatch):
    """config.py with one more row and its Settings field (the comment's example) has the field with its default,
    reads its YAML key and the value given for its option, refuses a value outside its check with the usual
    message, and the docs page gets its line: nothing else is edited."""
    source = (ROOT / "oltsim" / "config.py").read_text(encoding="utf-8")
    end_of_table = "\n)\n\n#: Settings field -> its row"
    assert source.count(end_of_table) == 1
    end_of_rows_fields = "\n    # what the files give\n"
    assert source.count(end_of_rows_fields) == 1
    source = source.replace(end_of_rows_fields, "\n    frame_budget: int = 512" + end_of_rows_fields)
    row = ('    Setting("frame_budget", "int", 512, "bytes kept of each captured frame (default {default})",\n'
           '            option="frame-budget", yaml="bbsim.frame_budget", check=Between(64, 65535)),')
    name = "oltsim_config_with_one_more_row"
    module = importlib.util.module_from_spec(importlib.util.spec_from_loader(name, loader=None))
    monkeypatch.setitem(sys.modules, name, module)  # dataclasses look their module up while building classes
    exec(compile(source.replace(end_of_table, "\n" + row + end_of_table), "config.py", "exec"), module.__dict__)

    assert module.Settings().frame_budget == 512
    assert module.OPTION_OF["frame_budget"] == "frame-budget" and module._BBSIM_KEYS["frame_budget"] == "frame_budget"
    path = tmp_path / "oltsim.yaml"
    path.write_text("bbsim:\n  frame_budget: 1000\n")
    assert module.load_settings({}, str(path)).frame_budget == 1000
    assert module.load_settings({"frame_budget": "2048"}, None).frame_budget == 2048
    with pytest.raises(module.ConfigError, match=r"^frame_budget must be between 64 and 65535 \(got 10\)$"):
        module.load_settings({"frame_budget": 10}, None)
    monkeypatch.setattr(config, "SETTINGS", module.SETTINGS)
    assert ("| `--frame-budget` | `bbsim.frame_budget` |  | 512 | 64..65535 | bytes kept of each captured frame |"
            in _generator().render())
