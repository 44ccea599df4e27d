"""The container image and Helm chart under deploy/, checked without a container engine or Helm (the integration
tests test_helm_dataplane.py and test_container_image.py run the real ones where they can): the chart's YAML
parses, its templates are balanced and reference only values that exist, the oltsim.yaml its ConfigMap renders loads
in oltsim without a warning, and the Dockerfile is multi-stage, non-root and exposes the five ports and SADIS."""

from __future__ import annotations

import json
import re
from dataclasses import fields
from pathlib import Path

import pytest
import yaml

import oltsim
from oltsim.config import _BBSIM_KEYS, _OLT_KEYS, LISTENER_FIELDS, Settings, load_services, load_settings
from oltsim.serving.endpoints import parse_grpc_endpoint

REPO = Path(__file__).resolve().parents[2]
DEPLOY = REPO / "deploy"
CHART = DEPLOY / "helm" / "oltsim"
TEMPLATES = CHART / "templates"
DOCKERFILE = DEPLOY / "Dockerfile"

ACTION = re.compile(r"\{\{(.*?)\}\}", re.DOTALL)
OPENERS = ("if", "range", "with", "define", "block")


def values() -> dict:
    return yaml.safe_load((CHART / "values.yaml").read_text())


def templates() -> list[Path]:
    return sorted(TEMPLATES.iterdir())


def actions(text: str) -> list[str]:
    """The body of every template action, trim markers and comments removed (comments become "")."""
    out = []
    for match in ACTION.finditer(text):
        body = match.group(1)
        body = body[1:] if body.startswith("-") else body
        body = body[:-1] if body.endswith("-") else body
        body = body.strip()
        out.append("" if body.startswith("/*") and body.endswith("*/") else body)
    return out


# ---- chart files --------------------------------------------------------------------------------------------


def test_chart_yaml_files_parse():
    """Every YAML file of the chart that is not a template parses; Chart.yaml is a v2 application chart."""
    for path in CHART.rglob("*.yaml"):
        if TEMPLATES in path.parents:
            continue
        assert yaml.safe_load(path.read_text()) is not None, path
    chart = yaml.safe_load((CHART / "Chart.yaml").read_text())
    assert (chart["apiVersion"], chart["name"], chart["type"]) == ("v2", "oltsim", "application")
    assert re.fullmatch(r"\d+\.\d+\.\d+", chart["version"])


def test_chart_app_version_is_the_oltsim_version():
    """The image tag defaults to appVersion, so it must follow oltsim's version."""
    assert yaml.safe_load((CHART / "Chart.yaml").read_text())["appVersion"] == oltsim.__version__


def test_chart_has_the_bbsim_layout():
    """Chart.yaml, values.yaml, README.md, _helpers.tpl and a ConfigMap, Deployment and Service per OLT."""
    names = {p.name for p in templates()}
    assert {"_helpers.tpl", "configmap.yaml", "deployment.yaml", "service.yaml"} <= names
    assert (CHART / "README.md").exists()
    for name in ("configmap.yaml", "deployment.yaml", "service.yaml"):
        assert 'range $olt := (fromYaml (include "oltsim.olts" .)).olts' in (TEMPLATES / name).read_text(), name


@pytest.mark.parametrize("path", templates(), ids=lambda p: p.name)
def test_template_delimiters_are_balanced(path):
    """{{ and }} pair up, never nest, and every action's parentheses and quotes are balanced."""
    text = path.read_text()
    depth = 0
    for token in re.findall(r"\{\{|\}\}", text):
        depth += 1 if token == "{{" else -1
        assert depth in (0, 1), f"{path.name}: nested or unopened delimiters"
    assert depth == 0, f"{path.name}: unclosed {{{{"
    for body in actions(text):
        unquoted = re.sub(r'"(?:[^"\\]|\\.)*"', 'S', body)  # string literals out of the way
        assert unquoted.count('"') == 0, f"{path.name}: unbalanced quotes in {{{{ {body} }}}}"
        assert unquoted.count("(") == unquoted.count(")"), f"{path.name}: unbalanced parentheses in {body}"


@pytest.mark.parametrize("path", templates(), ids=lambda p: p.name)
def test_template_blocks_are_balanced(path):
    """Every if/range/with/define has its end, in order; else only inside an if/range/with."""
    stack = []
    for body in actions(path.read_text()):
        word = body.split()[0] if body else ""
        if word in OPENERS:
            stack.append(word)
        elif word == "else":
            assert stack and stack[-1] in ("if", "range", "with"), f"{path.name}: else outside a block"
        elif word == "end":
            assert stack, f"{path.name}: end without a block"
            stack.pop()
    assert stack == [], f"{path.name}: unclosed {stack}"


def test_included_templates_are_defined():
    """Every include/template names a define of _helpers.tpl."""
    defined = set(re.findall(r'define "([^"]+)"', (TEMPLATES / "_helpers.tpl").read_text()))
    for path in templates():
        for name in re.findall(r'(?:include|template) "([^"]+)"', path.read_text()):
            assert name in defined, f"{path.name}: {name} is not defined"


def test_every_value_referenced_exists():
    """Every .Values.a.b a template reads is in values.yaml, and every $olt.key is an `olt` setting (or id)."""
    tree = values()
    for path in templates():
        text = path.read_text()
        for dotted in re.findall(r"\.Values((?:\.[A-Za-z_][A-Za-z0-9_]*)+)", text):
            node = tree
            for part in dotted.strip(".").split("."):
                assert isinstance(node, dict) and part in node, f"{path.name}: .Values{dotted} is not in values.yaml"
                node = node[part]
        for key in re.findall(r"\$olt\.([A-Za-z_][A-Za-z0-9_]*)", text):
            assert key == "id" or key in tree["olt"], f"{path.name}: $olt.{key} is not a key of olt in values.yaml"


def test_ports_agree_everywhere():
    """values.yaml ports, the Settings defaults and the Dockerfile's EXPOSE name the same seven TCP ports, and the
    same UDP port for the data plane's VXLAN attachments."""
    defaults = {f.name: f.default for f in fields(Settings) if f.name in LISTENER_FIELDS}
    assert {name: int(value.split(":")[1]) for name, value in defaults.items()} == values()["ports"]
    assert set(values()["ports"].values()) == set(dockerfile_exposed())
    vxlan_port = next(f.default for f in fields(Settings) if f.name == "vxlan_port")
    assert dockerfile_exposed("udp") == [vxlan_port] == [values()["dataplane"]["vxlanPort"]]


def test_default_services_load():
    """The chart's default services file is valid for oltsim (and is BBSim's ATT workflow)."""
    loaded = load_services("services.yaml", str(_write_services(values())))
    assert loaded.workflow == "att" and [s.name for s in loaded.services] == ["hsia"]


# ---- the oltsim.yaml the ConfigMap renders ------------------------------------------------------------------


def _write_services(tree, directory: Path | None = None) -> Path:
    import tempfile
    directory = directory or Path(tempfile.mkdtemp())
    (directory / "services.yaml").write_text(yaml.safe_dump(tree["servicesConfig"]))
    return directory


def _lookup(tree, dotted: str):
    node = tree
    for part in dotted.split("."):
        node = node[part]
    return node


def render_oltsim_yaml(tree: dict, olt: dict) -> str:
    """The `oltsim.yaml: |` block of configmap.yaml rendered for one OLT, evaluating the few expression forms it
    uses (an unknown form fails the test, so this keeps up with the template)."""
    text = (TEMPLATES / "configmap.yaml").read_text()
    block = text.split("oltsim.yaml: |\n", 1)[1].split("  services.yaml: |", 1)[0]

    def evaluate(body: str) -> str:
        if m := re.fullmatch(r"int \$olt\.(\w+)", body):
            return str(int(olt[m.group(1)]))
        if m := re.fullmatch(r"int \$\.Values\.([\w.]+)", body):
            return str(int(_lookup(tree, m.group(1))))
        if m := re.fullmatch(r"\$olt\.(\w+)", body):
            value = olt[m.group(1)]
            return json.dumps(value) if isinstance(value, bool) else str(value)
        if m := re.fullmatch(r"\$olt\.(\w+) \| quote", body):
            return json.dumps(str(olt[m.group(1)]))
        if m := re.fullmatch(r'include "oltsim\.listen" \(dict "root" \$ "port" \$\.Values\.ports\.(\w+) '
                             r'"tls" (true|\$\.Values\.tls\.\w+)\) \| quote', body):
            port = tree["ports"][m.group(1)]
            applies = m.group(2) == "true" or _lookup(tree, m.group(2)[len("$.Values."):])
            if tree["tls"]["enabled"] and applies:
                endpoint = (f"ssl:{port}:privateKey=/var/run/secrets/oltsim/tls/tls.key"
                            f":certKey=/var/run/secrets/oltsim/tls/tls.crt")
                if tree["tls"]["clientCA"]["secretName"]:
                    endpoint += ":caCertsDir=/var/run/secrets/oltsim/client-ca"
                    if tree["tls"]["clientCA"]["required"]:
                        endpoint += ":requireClientCert=yes"
                return json.dumps(endpoint)
            return json.dumps(f"tcp:{port}")
        if m := re.fullmatch(r"\$\.Values\.([\w.]+)", body):
            value = _lookup(tree, m.group(1))
            return json.dumps(value) if isinstance(value, bool) else str(value)
        if m := re.fullmatch(r"\$\.Values\.([\w.]+) \| quote", body):
            return json.dumps(str(_lookup(tree, m.group(1))))
        if m := re.fullmatch(r'printf "/var/run/secrets/oltsim/token/%s" \$\.Values\.apiToken\.key \| quote', body):
            return json.dumps("/var/run/secrets/oltsim/token/" + tree["apiToken"]["key"])
        if body.startswith('printf "%s.%s.svc"') and body.endswith("| quote"):
            return json.dumps(f"oltsim-{int(olt['id'])}.voltha.svc")
        raise AssertionError(f"configmap.yaml: the test cannot evaluate {{{{ {body} }}}}")

    lines, keep = [], [True]
    for line in block.splitlines():
        only = re.fullmatch(r"\s*\{\{-?\s*(.*?)\s*-?\}\}\s*", line)
        if only:
            body = only.group(1)
            if body.startswith("if "):
                m = re.fullmatch(r"if \$\.Values\.([\w.]+)", body)
                assert m, f"configmap.yaml: the test cannot evaluate {{{{ {body} }}}}"
                keep.append(keep[-1] and bool(_lookup(tree, m.group(1))))
            elif body == "end":
                keep.pop()
            else:
                raise AssertionError(f"configmap.yaml: unexpected action line {line!r}")
            continue
        if keep[-1]:
            lines.append(ACTION.sub(lambda m: evaluate(m.group(1).strip("-").strip()), line))
    assert keep == [True], "configmap.yaml: unbalanced if/end in the oltsim.yaml block"
    return "\n".join(line[4:] if line.startswith("    ") else line for line in lines) + "\n"


def load_rendered(tmp_path, tree, olt=None) -> object:
    olt = {**tree["olt"], "id": 0, **(olt or {})}
    rendered = render_oltsim_yaml(tree, olt)
    document = yaml.safe_load(rendered)
    assert set(document) == {"bbsim", "olt"}
    assert set(document["bbsim"]) <= set(_BBSIM_KEYS), set(document["bbsim"]) - set(_BBSIM_KEYS)
    assert set(document["olt"]) <= set(_OLT_KEYS), set(document["olt"]) - set(_OLT_KEYS)
    _write_services(tree, tmp_path)
    config = tmp_path / "oltsim.yaml"
    config.write_text(rendered)
    return load_settings({}, config)


def test_rendered_config_with_default_values_loads_cleanly(tmp_path):
    """The oltsim.yaml of an OLT with the default values: only known keys, no warning, BBSim's defaults, and the
    listeners on the chart's ports."""
    settings = load_rendered(tmp_path, values(), {"id": 3})
    assert settings.warnings == ()
    assert (settings.olt_id, settings.pon, settings.onu, settings.uni, settings.delay_ms) == (3, 1, 1, 4, 200)
    assert settings.reboot_delay == 60 and settings.workflow == "att" and settings.sadis_host == "oltsim-3.voltha.svc"
    assert (settings.openolt, settings.rest_v1, settings.sadis) == ("tcp:50060", "tcp:50071", "tcp:50074")
    assert settings.api_token == ""


def test_rendered_config_with_tls_and_token_loads(tmp_path):
    """With TLS, a required client CA and a token Secret, the control listeners get ssl: endpoints the gRPC parser
    accepts, OpenOLT and SADIS stay tcp:, and the token is read from the mounted file."""
    tree = values()
    tree["tls"].update(enabled=True, secretName="oltsim-tls", clientCA={"secretName": "cas", "required": True})
    tree["apiToken"]["existingSecret"] = "oltsim-token"
    rendered = render_oltsim_yaml(tree, {**tree["olt"], "id": 0})
    (tmp_path / "token").write_text("t0ken\n")
    rendered = rendered.replace("/var/run/secrets/oltsim/token/token", str(tmp_path / "token"))
    _write_services(tree, tmp_path)
    (tmp_path / "oltsim.yaml").write_text(rendered)
    settings = load_settings({}, tmp_path / "oltsim.yaml")
    assert settings.api_token == "t0ken"
    assert settings.openolt == "tcp:50060" and settings.sadis == "tcp:50074"
    for name in ("grpc_v1", "rest_v1", "grpc_v0", "rest_v0"):
        listen = parse_grpc_endpoint(getattr(settings, name))
        assert listen.secure and listen.require_client_cert, name


def test_rendered_config_takes_per_olt_overrides(tmp_path):
    """Per-OLT settings reach the file: id, ONUs, activation mode, retries, and a zero delay stays zero."""
    settings = load_rendered(tmp_path, values(), {"id": 7, "onu": 32, "controlledActivation": "only-onu",
                                                  "authRetry": True, "delay": 0})
    assert (settings.olt_id, settings.onu, settings.controlled_activation) == (7, 32, "only-onu")
    assert settings.auth_retry is True and settings.delay_ms == 0


def test_helper_copies_overrides_key_by_key():
    """Per-OLT overrides use `set`, never sprig's merge (which lets a default replace an override of 0 or false),
    and ids are checked for duplicates."""
    helpers = (TEMPLATES / "_helpers.tpl").read_text()
    olts = helpers.split('define "oltsim.olts"', 1)[1].split('define "oltsim.listen"', 1)[0]
    assert "merge" not in olts.replace("`merge`", "") and "set $olt $key $value" in olts
    assert "is used twice" in olts and "has no id" in olts


# ---- Dockerfile ---------------------------------------------------------------------------------------------


def dockerfile_instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) in order, continuation lines joined and comments dropped."""
    out, current = [], ""
    for line in DOCKERFILE.read_text().splitlines():
        if not current and (not line.strip() or line.lstrip().startswith("#")):
            continue
        if current and line.lstrip().startswith("#"):
            continue
        current += line.rstrip("\\").strip() + " " if line.endswith("\\") else line.strip()
        if not line.endswith("\\"):
            word, _, rest = current.partition(" ")
            out.append((word.upper(), rest.strip()))
            current = ""
    return out


def final_stage() -> list[tuple[str, str]]:
    instructions = dockerfile_instructions()
    last_from = max(i for i, (word, _) in enumerate(instructions) if word == "FROM")
    return instructions[last_from:]


def dockerfile_exposed(protocol: str = "tcp") -> list[int]:
    """The ports the runtime stage EXPOSEs for `protocol` (a port without /PROTOCOL is TCP's)."""
    ports = [port if "/" in port else f"{port}/tcp" for word, args in final_stage() if word == "EXPOSE"
             for port in args.split()]
    return [int(port.partition("/")[0]) for port in ports if port.partition("/")[2] == protocol]


def test_dockerfile_is_multi_stage_on_python_311_slim():
    """A builder stage and a runtime stage, both from python:3.11-slim; the runtime copies only the venv."""
    instructions = dockerfile_instructions()
    froms = [args for word, args in instructions if word == "FROM"]
    assert len(froms) == 2 and froms[0].endswith(" AS builder")
    arg = next(args for word, args in instructions if word == "ARG" and args.startswith("PYTHON_IMAGE="))
    assert arg.split("=", 1)[1].startswith("python:3.11-slim")
    assert all(f.split()[0] == "${PYTHON_IMAGE}" for f in froms)
    assert ("COPY", "--from=builder /opt/oltsim /opt/oltsim") in final_stage()
    builder = instructions[:instructions.index(final_stage()[0])]
    assert any(word == "RUN" and "python -m venv /opt/oltsim" in args for word, args in builder)


def test_dockerfile_installs_the_pins_as_the_package_build_does():
    """The builder installs packaging/requirements.txt hash-checked, wheels only but for the distributions
    packaging/build-deb builds from their checked sdist (PyPI has no wheel of them: without the exception the build
    finds no version at all)."""
    build_deb = (REPO / "packaging" / "build-deb").read_text()
    source_only = re.search(r"^SOURCE_ONLY = \(([^)]*)\)", build_deb, re.M).group(1)
    names = sorted(name.strip().strip("'\"") for name in source_only.split(",") if name.strip())
    assert names, source_only
    installs = [args for word, args in dockerfile_instructions() if word == "RUN" and "requirements.txt" in args]
    commands = [part.split() for args in installs for part in args.split("&&") if " -r " in part]
    (flags,) = [words for words in commands if Path(words[words.index("-r") + 1]).name == "requirements.txt"]
    command = " ".join(flags)
    assert "--require-hashes" in flags and "--only-binary=:all:" in flags, command
    (no_binary,) = [flag for flag in flags if flag.startswith("--no-binary=")]
    assert sorted(no_binary.split("=", 1)[1].split(",")) == names, command
    assert flags.index("--only-binary=:all:") < flags.index(no_binary), command


def test_dockerfile_runs_as_a_non_root_user():
    """The runtime stage ends as a numeric non-root user (Kubernetes' runAsNonRoot can check a number)."""
    users = [args for word, args in final_stage() if word == "USER"]
    assert users, "no USER in the runtime stage"
    user = users[-1].split(":")[0]
    assert user.isdigit() and int(user) != 0
    assert user == str(values()["podSecurityContext"]["runAsUser"])


def test_dockerfile_exposes_the_ports_and_runs_twistd():
    """EXPOSE names the five API ports, SADIS and DMI, and the data plane's VXLAN UDP port; the entry point is twistd
    in the foreground without a pidfile."""
    assert sorted(dockerfile_exposed()) == [50060, 50070, 50071, 50072, 50073, 50074, 50075]
    assert dockerfile_exposed("udp") == [4789]
    entrypoint = json.loads(next(args for word, args in final_stage() if word == "ENTRYPOINT"))
    assert Path(entrypoint[0]).name == "twistd" and entrypoint[1:] == ["--nodaemon", "--pidfile=", "oltsim"]


def test_dockerfile_copies_only_what_exists_and_the_context_sends():
    """Every COPY source exists in the repository and is not excluded by .dockerignore (an allow-list)."""
    patterns = [line.strip() for line in (REPO / ".dockerignore").read_text().splitlines()
                if line.strip() and not line.startswith("#")]
    allowed = [p[1:].rstrip("/") for p in patterns if p.startswith("!")]
    assert patterns[0] == "*"
    for word, args in dockerfile_instructions():
        if word != "COPY" or args.startswith("--from"):
            continue
        for source in args.split()[:-1]:
            source = source.rstrip("/")
            assert (REPO / source).exists(), f"COPY {source}: no such file"
            assert any(source == a or source.startswith(a + "/") for a in allowed), f"{source} is not in the context"


def test_rendered_config_carries_the_kafka_events(tmp_path):
    """events: off by default (the address still rendered, unused); on, each OLT publishes to the broker, on BBSim's
    per-OLT topic unless one is given."""
    settings = load_rendered(tmp_path, values())
    assert settings.enable_events is False and settings.kafka_event_topic == ""
    tree = values()
    tree["events"].update(enabled=True, kafkaAddress="kafka.infra.svc:9092")
    settings = load_rendered(tmp_path, tree, {"id": 2})
    assert (settings.enable_events, settings.kafka_address, settings.kafka_event_topic) == (
        True, "kafka.infra.svc:9092", "")
    tree["events"]["topic"] = "olt-events"
    assert load_rendered(tmp_path, tree).kafka_event_topic == "olt-events"


def test_rendered_config_carries_the_omci_settings(tmp_path):
    """The OMCI values (BBSim's chart names) reach oltsim's settings: BBSim's defaults, and per-OLT overrides."""
    settings = load_rendered(tmp_path, values())
    assert (settings.omcc_version, settings.inject_omci_unknown_me, settings.inject_omci_unknown_attributes) == (
        163, False, False)
    settings = load_rendered(tmp_path, values(), {"omccVersion": 160, "injectOmciUnknownMe": True,
                                                  "injectOmciUnknownAttributes": True})
    assert (settings.omcc_version, settings.inject_omci_unknown_me, settings.inject_omci_unknown_attributes) == (
        160, True, True)


# ---- the image in VOLTHA's own bbsim chart ------------------------------------------------------------------


def test_dockerfile_has_bbsims_layout_for_voltha_chart():
    """VOLTHA's bbsim chart runs `/app/bbsim` with relative config paths from /app and probes with `bbsimctl`: the
    runtime stage links /app/bbsim to the venv's bbsim script, fills /app/configs from the packaged configs folder,
    has the venv's bin (bbsimctl) on PATH and works in /app; setup.py installs both commands."""
    stage = final_stage()
    runs = " ".join(args for word, args in stage if word == "RUN")
    assert "ln -s /opt/oltsim/bin/bbsim /app/bbsim" in runs
    assert '"data", "configs"' in runs and "/app/configs/" in runs and "test -x /opt/oltsim/bin/bbsimctl" in runs
    assert [args for word, args in stage if word == "WORKDIR"][-1] == "/app"
    env = " ".join(args for word, args in stage if word == "ENV")
    assert "PATH=/opt/oltsim/bin:$PATH" in env
    setup = (REPO / "setup.py").read_text()
    assert '"bbsim = oltsim.bbsimcmd:main"' in setup and '"bbsimctl = ' in setup
    assert '"data/configs/*"' in setup


def test_packaged_configs_load_cleanly():
    """The image's /app/configs/services.yaml and pon-config.yaml (oltsim/data/configs) load without a warning and
    are what the bbsim chart expects (ATT hsia; 16 XGS-PON ports)."""
    from oltsim.config import load_pon_ranges

    configs = REPO / "oltsim" / "data" / "configs"
    services = load_services(str(configs / "services.yaml"))
    assert services.warnings == () and services.workflow == "att" and [s.name for s in services.services] == ["hsia"]
    ranges = load_pon_ranges(str(configs / "pon-config.yaml"))
    assert ranges.warnings == () and ranges.num_pon_ports == 16 and ranges.ranges[0].technology == "XGS-PON"
    settings = load_settings({"services": str(configs / "services.yaml"), "pon_ranges_path":
                              str(configs / "pon-config.yaml"), "pon": 16, "onu": 32}, None)
    assert settings.warnings == ()


# ---- the data plane ---------------------------------------------------------------------------------------------


def test_rendered_config_without_the_data_plane_has_none(tmp_path):
    """By default no data-plane key is rendered: oltsim makes no data plane (no UNI or NNI attachment)."""
    settings = load_rendered(tmp_path, values())
    assert (settings.attachment, settings.uni_interfaces, settings.nni_untagged_interface) == ("tap", "", "")


def test_rendered_config_carries_the_data_plane_settings(tmp_path):
    """With dataplane.enabled every OLT's oltsim.yaml takes the data-plane values: VXLAN attachments on the given
    port, the UNIs and NNIs they carry, the fixed remote, hold, VNI base and MTU, loading without a warning."""
    tree = values()
    tree["dataplane"].update(enabled=True, uniInterfaces="all", nniInterface="nni", vxlanPort=4790,
                             vxlanRemote="192.0.2.9", vxlanHold=60, vniBase=5000, nniMtu=1600)
    settings = load_rendered(tmp_path, tree, {"id": 4, "adapter": "builtin"})
    assert settings.warnings == ()
    assert (settings.attachment, settings.uni_interfaces, settings.nni_interface, settings.nni_untagged_interface) == (
        "vxlan", "all", "nni", "nniu")
    assert (settings.vxlan_port, settings.vxlan_listen, settings.vxlan_remote, settings.vxlan_hold) == (
        4790, "", "192.0.2.9", 60)
    assert (settings.vxlan_vni_base, settings.nni_mtu, settings.adapter) == (5000, 1600, "builtin")


def test_the_vxlan_port_is_a_udp_port_of_the_container_and_the_service_with_the_data_plane_only():
    """The container and the Service get the UDP port `vxlan` (dataplane.vxlanPort) inside `if
    dataplane.enabled`; rendering refuses any attachment but vxlan."""
    for name, target in (("deployment.yaml", "containerPort"), ("service.yaml", "port")):
        text = (TEMPLATES / name).read_text()
        block = text.split("{{- if $.Values.dataplane.enabled }}", 1)[1].split("{{- end }}", 1)[0]
        assert "- name: vxlan" in block and "protocol: UDP" in block, name
        assert f"{target}: {{{{ int $.Values.dataplane.vxlanPort }}}}" in block, name
    helpers = (TEMPLATES / "_helpers.tpl").read_text()
    assert 'define "oltsim.checkDataplane"' in helpers and "only vxlan runs in this chart's pods" in helpers
    assert (TEMPLATES / "deployment.yaml").read_text().count('include "oltsim.checkDataplane" .') == 1
