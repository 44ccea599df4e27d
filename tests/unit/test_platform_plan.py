"""oltsim-platform plan: runbooks of sections 9.3 to 9.9 rendered with values, and the corrected mistakes."""
import json
import shlex

import pytest

from oltsim.platform import plan
from oltsim.platform.cli import main

# The values of the document's own examples (9.3 openonu adapter, 9.7 controller in infra1).
DOC = {
    "stack": "voltha1", "namespace": "voltha1", "component": "openonu-adapter", "chart_version": "2.12.3",
    "previous_chart_version": "2.12.2", "kv_prefix": "service/voltha/voltha1_voltha1",
    "core_topic": "voltha1_voltha1_rwcore", "adapter_topic": "voltha1_voltha1_brcm_openomci_onu",
    "kafka": "voltha-infra-kafka.infra.svc", "etcd": "voltha-infra-etcd.infra.svc",
    "stack_chart_version": "2.15.5", "controller_namespace": "infra1", "controller_release": "voltha-infra1",
    "controller_chart_version": "0.1.20", "controller_image_tag": "5.0.0", "infra_namespace": "infra",
    "etcd_release": "etcd", "etcd_chart_version": "9.0.0", "kafka_release": "kafka", "kafka_chart_version": "26.0.0",
    "controller_url": "http://karaf:karaf@127.0.0.1:8181", "new_controller_url": "http://karaf:karaf@10.0.1.1:8181",
    "subscribers": ["of:00000a0a0a0a0a00/256"], "app": "olt", "app_version": "5.2.8",
    "oar": "org.opencord.olt-5.2.8.oar", "previous_oar": "org.opencord.olt-5.2.7.oar", "olt_id": "6f1f2d",
    "olt_address": "10.0.0.5:9191", "olt_host": "root@10.0.0.5", "deb": "openolt_3.7.2.deb", "watchdog": "yes",
}


def commands(p: plan.Plan) -> list[str]:
    """Every command of a rendered plan, one line each."""
    return [c.line for s in p.steps for c in s.commands]


def one(p: plan.Plan, start: str) -> str:
    """The only command starting with `start`."""
    found = [c for c in commands(p) if c.startswith(start)]
    assert len(found) == 1, found
    return found[0]


@pytest.mark.parametrize("runbook", list(plan.RUNBOOKS))
def test_every_runbook_renders_without_values_and_lists_what_is_missing(runbook):
    """With no values every runbook still renders, with <placeholders> and the list of values to fill."""
    p = plan.render(runbook, {})
    assert p.steps and [s.number for s in p.steps] == list(range(1, len(p.steps) + 1))
    text = p.text()
    assert text.startswith(p.runbook.section)
    for name in p.missing:
        assert f"<{name}>" in text or any(f"<{d}>" in text for d, bases in plan.DERIVED_FROM.items()
                                          if name in bases)
    assert json.loads(p.json())["runbook"] == runbook


@pytest.mark.parametrize("runbook", list(plan.RUNBOOKS))
def test_full_values_leave_nothing_missing_and_commands_parse_as_shell(runbook):
    """With the document's values nothing is missing and every command is valid shell words."""
    p = plan.render(runbook, DOC)
    assert [m for m in p.missing if m != "failing-pod"] == []  # the failing pod is only known while running
    for line in commands(p):
        assert "<" not in line.replace("<failing-pod>", ""), line
        shlex.split(line)


@pytest.mark.parametrize("runbook", list(plan.RUNBOOKS))
def test_wrapped_commands_end_every_continuation_line_with_a_backslash(runbook):
    """The source's split helm line is impossible here: every continuation line ends in a backslash."""
    for step in plan.render(runbook, DOC).steps:
        for command in step.commands:
            lines = command.wrapped()
            assert all(line.endswith(" \\") for line in lines[:-1])
            assert not lines[-1].endswith("\\")
            assert " ".join(line.removesuffix(" \\").strip() for line in lines) == command.line


@pytest.mark.parametrize("runbook", list(plan.RUNBOOKS))
def test_helm_lines_are_complete(runbook):
    """Every helm line names its namespace, release and chart, a chart version, and its values."""
    for line in commands(plan.render(runbook, DOC)):
        if not line.startswith("helm "):
            continue
        words = shlex.split(line)
        assert "--namespace" in words and "--version" in words, line
        positional = [w for i, w in enumerate(words[3:], 3)
                      if not w.startswith("-") and not words[i - 1] in ("--namespace", "--version", "--set")]
        assert len(positional) == 2, line  # release and chart
        if "kafka" not in positional[1]:
            assert "--set" in words, line


def test_stack_minor_reproduces_the_documents_openonu_example():
    """9.3 with the document's values sets exactly its keys, in its namespace, with a version and no typo."""
    line = one(plan.render("stack-minor", DOC), "helm upgrade")
    words = shlex.split(line)
    assert words[:5] == ["helm", "upgrade", "--install", "--create-namespace", "--namespace"]
    assert words[5:8] == ["voltha1", "openonu-adapter", "lfbb/voltha-adapter-openonu"]
    sets = {words[i + 1] for i, w in enumerate(words) if w == "--set"}
    assert {"global.stack_name=voltha1",
            "adapter_open_onu.kv_store_data_prefix=service/voltha/voltha1_voltha1",
            "adapter_open_onu.topics.core_topic=voltha1_voltha1_rwcore",
            "adapter_open_onu.topics.adapter_open_onu_topic=voltha1_voltha1_brcm_openomci_onu",
            "services.kafka.adapter.service=voltha-infra-kafka.infra.svc",
            "services.kafka.cluster.service=voltha-infra-kafka.infra.svc",
            "services.etcd.service=voltha-infra-etcd.infra.svc"} <= sets
    assert "opeonu" not in line and "--version 2.12.3" in line


def test_stack_minor_derives_chart_defaults_from_the_stack_name():
    """Without explicit prefix and topics, the charts' own defaults follow from --stack."""
    line = one(plan.render("stack-minor", {"stack": "voltha2", "component": "openolt-adapter"}), "helm upgrade")
    assert "adapter_open_olt.kv_store_data_prefix=service/voltha2_voltha" in line
    assert "adapter_open_olt.topics.core_topic=voltha2_rwcore" in line
    assert "adapter_open_olt.topics.adapter_open_olt_topic=voltha2_openolt" in line


def test_local_chart_copy_has_no_repository_version():
    """A chart given as a path is a local copy: helm takes no --version for it."""
    line = one(plan.render("stack-minor", {**DOC, "chart": "./voltha-adapter-openonu"}), "helm upgrade")
    assert "./voltha-adapter-openonu" in line and "--version" not in line


def test_rollback_uses_the_previous_chart_version_and_the_previous_archive():
    """9.5: the broken-function case decrements to the last working version; the app case reinstalls the old .oar."""
    p = plan.render("rollback", DOC)
    helm = [c for c in commands(p) if c.startswith("helm upgrade")]
    assert any("--version 2.12.2" in c for c in helm)
    assert any("--data-binary @org.opencord.olt-5.2.7.oar" in c for c in commands(p))
    assert any(c.startswith("oltsim-platform app-update") and "5.2.7" in c for c in commands(p))
    assert len(p.steps) == 4 and p.steps[3].commands == []


def test_app_minor_is_the_documents_curl_sequence_with_credentials_split_and_url_quoted():
    """9.4: DELETE then POST ?activate=true as octet-stream, credentials as -u, the URL quoted, a backup first."""
    cmds = commands(plan.render("app-minor", DOC))
    assert all("karaf:karaf@" not in c for c in cmds if not c.startswith("oltsim-platform"))
    post = next(c for c in cmds if "-X POST" in c)
    assert "'http://127.0.0.1:8181/onos/v1/applications?activate=true'" in post
    assert "-H 'Content-Type: application/octet-stream'" in post and "--data-binary @org.opencord.olt-5.2.8.oar" in post
    order = [i for i, c in enumerate(cmds) if "/bits" in c or "-X DELETE" in c or "-X POST" in c]
    assert ["/bits" in cmds[order[0]], "-X DELETE" in cmds[order[1]], "-X POST" in cmds[order[2]]] == [True] * 3
    assert any("repo1.maven.org/maven2/org/opencord/olt-app/5.2.8/olt-app-5.2.8.oar" in c for c in cmds)


def test_snapshot_archives_are_built_locally():
    """A SNAPSHOT version is not on Maven Central: the plan says to build it."""
    cmds = commands(plan.render("app-minor", {**DOC, "app_version": "4.5.0-SNAPSHOT"}))
    assert cmds[0] == "mvn clean install"


@pytest.mark.parametrize("runbook", ["stack-major", "controller-major", "kv-store", "agent-major"])
def test_olt_is_reprovisioned_with_create_then_enable(runbook):
    """`device provision` does not exist: the OLT is created with its address, then enabled with the new id."""
    cmds = commands(plan.render(runbook, DOC))
    create = cmds.index('OLT_ID=$(voltctl device create -t openolt -H 10.0.0.5:9191)')
    assert cmds[create + 1] == 'voltctl device enable "$OLT_ID"'
    assert not any("device provision" in c for c in cmds)


@pytest.mark.parametrize("runbook", ["agent-minor", "agent-major"])
def test_agent_runbooks_stop_dev_mgmt_daemon_and_the_watchdog_first(runbook):
    """The daemon's real name is dev_mgmt_daemon; the optional watchdog is stopped before what it would restart."""
    p = plan.render(runbook, DOC)
    cmds = commands(p)
    stops = [c for c in cmds if "pkill" in c or "service openolt stop" in c]
    assert "watchdog" in stops[0] and "service dev_mgmt_daemon stop" in stops[1]
    assert not any("mgmnt" in c or "deamon" in c for c in cmds)
    assert "scp openolt_3.7.2.deb root@10.0.0.5:/tmp/openolt_3.7.2.deb" in cmds
    assert "ssh root@10.0.0.5 'dpkg -i /tmp/openolt_3.7.2.deb'" in cmds and cmds[-1 if runbook == "agent-minor"
                                                                                  else -4] == "ssh root@10.0.0.5 reboot"
    without = commands(plan.render(runbook, {**DOC, "watchdog": "no"}))
    assert not any("watchdog" in c for c in without)


def test_agent_major_deletes_the_olt_and_upgrades_the_openolt_adapter_first():
    """9.9 major: delete the device, upgrade the OLT adapter (not the component named for 9.3), then the agent."""
    cmds = commands(plan.render("agent-major", DOC))
    assert cmds[0] == "voltctl device delete 6f1f2d"
    assert "openolt-adapter lfbb/voltha-adapter-openolt" in cmds[1] and "adapter_open_olt." in cmds[1]
    assert "openonu" not in cmds[1]


def test_controller_major_points_the_agent_at_every_member_on_6653():
    """9.7: new cluster with persistence off, then the stack's OpenFlow agent gets service, port and address."""
    p = plan.render("controller-major", DOC)
    install = one(p, "helm install")
    assert "atomix.persistence.enabled=false" in install and "--namespace infra1" in install
    upgrade = one(p, "helm upgrade")
    for i in range(3):
        member = f"voltha-infra1-onos-classic-{i}.voltha-infra1-onos-classic-hs.infra1.svc"
        assert f"voltha.services.controller[{i}].service={member}" in upgrade
        assert f"voltha.services.controller[{i}].port=6653" in upgrade
        assert f"voltha.services.controller[{i}].address={member}:6653" in upgrade
    reprovision = [c for c in commands(p) if "-X POST" in c]
    assert reprovision and all("10.0.1.1" in c for c in reprovision)


def test_explicit_controller_members_win():
    """Members given as values replace the derived ones, one triple of keys each."""
    line = one(plan.render("controller-major", {**DOC, "controllers": ["onos-a.svc", "onos-b.svc"]}), "helm upgrade")
    assert "voltha.services.controller[1].address=onos-b.svc:6653" in line and "controller[2]" not in line


def test_kv_store_and_message_bus_deploy_new_infrastructure():
    """9.8: a three-node store with RBAC and persistence off; a new bus, then the stack pointed at it."""
    etcd = one(plan.render("kv-store", DOC), "helm install")
    assert all(s in etcd for s in ("auth.rbac.enabled=false", "persistence.enabled=false",
                                   "statefulset.replicaCount=3", "bitnami/etcd"))
    bus = plan.render("message-bus", {**DOC, "kafka": "voltha-infra-kafka-2.infra.svc"})
    assert one(bus, "helm install").startswith("helm install --create-namespace --namespace infra kafka bitnami/kafka")
    assert "services.kafka.cluster.service=voltha-infra-kafka-2.infra.svc" in one(bus, "helm upgrade")
    assert "service impact" not in bus.runbook.impact and "none expected" in bus.runbook.impact


@pytest.mark.parametrize("name, runbook", [("9.3", "stack-minor"), ("9.4", "app-minor"), ("9.5", "rollback"),
                                           ("9.6", "stack-major"), ("9.7", "controller-major")])
def test_sections_name_their_runbooks(name, runbook):
    """A section number is accepted where it names one runbook."""
    assert plan.render(name, {}).runbook.id == runbook


def test_sections_with_two_runbooks_ask_which():
    """9.8 and 9.9 each have two runbooks: the error names them."""
    with pytest.raises(plan.UnknownRunbook, match="kv-store or message-bus"):
        plan.runbook_id("9.8")


def test_values_are_checked():
    """Unknown keys and lists for single values are errors; booleans from YAML become yes/no."""
    with pytest.raises(plan.BadValues, match="unknown value"):
        plan.load_values({"stak": "x"})
    with pytest.raises(plan.BadValues, match="one value"):
        plan.load_values({"stack": ["a", "b"]})
    assert plan.load_values({"watchdog": True, "subscribers": "of:1/2"}) == {"watchdog": "yes",
                                                                              "subscribers": ["of:1/2"]}
    with pytest.raises(plan.BadValues, match="unknown stack component"):
        plan.render("stack-minor", {"component": "frobnicator"})


def test_cli_plan_precedence_file_then_set_then_flags(tmp_path, capsys):
    """--values is overridden by --set, which is overridden by a value's own flag; output as JSON."""
    values = tmp_path / "values.yaml"
    values.write_text("stack: from-file\nnamespace: from-file\nchart_version: '1.0'\ncomponent: rw-core\n")
    code = main(["plan", "stack-minor", "--values", str(values), "--set", "namespace=from-set",
                 "--set", "chart_version=2.0", "--chart-version", "3.0", "--json"])
    assert code == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["values"]["stack"] == "from-file" and doc["values"]["namespace"] == "from-set"
    helm = doc["steps"][2]["commands"][0]["command"]
    assert "--version 3.0" in helm and "voltha lfbb/voltha" in helm and "rw_core.topics.core_topic" in helm


def test_cli_plan_from_a_classification(capsys):
    """plan --classify picks the runbook the rules choose."""
    assert main(["plan", "--classify", "olt-app", "--change", "rest"]) == 0
    assert capsys.readouterr().out.startswith("9.7 ")
    assert main(["plan", "--classify", "org.opencord.kafka"]) == 0
    assert capsys.readouterr().out.startswith("9.4 ")


def test_cli_plan_errors_exit_2(capsys):
    """Bad runbooks and values are usage errors with a message, exit 2."""
    assert main(["plan", "9.9"]) == 2
    assert "agent-minor or agent-major" in capsys.readouterr().err
    assert main(["plan", "stack-minor", "--set", "nonsense"]) == 2
    assert main(["plan"]) == 2


def test_cli_classify_text_and_json(capsys):
    """classify prints the class and the rule, or JSON; bad questions exit 2."""
    assert main(["classify", "message-bus"]) == 0
    assert "not-in-service" in capsys.readouterr().out
    assert main(["classify", "olt-app", "--change", "store-data", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert (doc["update_class"], doc["rule"], doc["runbook"]) == ("major", "9.2 rule 3", "controller-major")
    assert main(["classify", "kafka"]) == 2
    assert "ambiguous" in capsys.readouterr().err


@pytest.mark.parametrize("runbook", sorted(plan.RUNBOOKS))
def test_every_placeholder_printed_is_listed_as_still_to_fill(runbook):
    """No `<name>` appears in a command unless the plan lists it, or the value it follows from, as missing."""
    import re
    rendered = plan.render(runbook, {})
    for step in rendered.steps:
        for command in step.commands:
            for name in re.findall(r"<([A-Za-z0-9_-]+)>", command.line):
                follows = plan.DERIVED_FROM.get(name, ()) + plan.PLACEHOLDER_FOLLOWS.get(name, ())
                assert name in rendered.missing or any(b in rendered.missing for b in follows), (name, runbook)


def test_controller_credentials_are_listed_with_where_to_give_them(capsys):
    """agent-major prints `-u <user>:<password>` and says they go into controller_url; given, they vanish."""
    assert main(["plan", "agent-major"]) == 0
    header = capsys.readouterr().out.splitlines()[2]
    assert "user (controller user: give it in controller_url as http://user:password@host:8181)" in header
    assert "password" in header
    assert main(["plan", "agent-major", "--set", "controller_url=http://karaf:karaf@10.0.0.1:8181"]) == 0
    out = capsys.readouterr().out
    assert "<user>" not in out and "user (" not in out.splitlines()[2] and "-u karaf:karaf" in out


def test_set_takes_a_list_in_the_syntax_of_the_values_file(tmp_path, capsys):
    """`--set subscribers=[a, b]` gives the same plan as `subscribers: [a, b]` in a values file."""
    subs = "[of:0000000000000001/256, of:0000000000000001/257]"
    assert main(["plan", "agent-major", "--set", f"subscribers={subs}", "--json"]) == 0
    from_set = json.loads(capsys.readouterr().out)
    values = tmp_path / "values.yaml"
    values.write_text(f"subscribers: {subs}\n")
    assert main(["plan", "agent-major", "--values", str(values), "--json"]) == 0
    from_file = json.loads(capsys.readouterr().out)
    assert from_set == from_file
    assert from_set["values"]["subscribers"] == ["of:0000000000000001/256", "of:0000000000000001/257"]
    commands = " ".join(c["command"] for s in from_set["steps"] for c in s["commands"])
    assert "oltapp/of:0000000000000001/257" in commands and "[" not in commands.split("oltapp/")[1][:2]


def test_set_lists_and_repeated_sets_add_up_and_a_bad_list_is_a_usage_error(capsys):
    """Repeated --set and a --set list extend one list; an unreadable list exits 2 with a message."""
    assert main(["plan", "agent-major", "--set", "subscribers=[a/1, b/2]", "--set", "subscribers=c/3",
                 "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["values"]["subscribers"] == ["a/1", "b/2", "c/3"]
    assert main(["plan", "agent-major", "--set", "subscribers=[a/1, b/2"]) == 2
    assert "cannot read the list" in capsys.readouterr().err
    assert main(["plan", "agent-major", "--set", "stack=[a, b]"]) == 2
    assert "takes one value" in capsys.readouterr().err


@pytest.mark.parametrize("content, words", [
    ("stack: [a\n", ("line 2, column 1", "expected ',' or ']'")),
    ("a: b: c\n", ("line 1, column 5", "mapping values are not allowed")),
    ("stak: x\n", ("did you mean stack?",)),
    (None, ("No such file or directory",)),
])
def test_a_bad_values_file_is_one_line_naming_the_file(tmp_path, capsys, content, words):
    """A malformed, missing or misspelt values file is one stderr line naming the file (and the line and column of a
    YAML error, or the nearest value name), exit 2: no PyYAML traceback, no bare errno."""
    values = tmp_path / "v.yaml"
    if content is not None:
        values.write_text(content)
    assert main(["plan", "stack-minor", "--values", str(values)]) == 2
    captured = capsys.readouterr()
    lines = captured.err.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"oltsim-platform: values file {values}"), captured.err
    assert all(word in lines[0] for word in words), lines
    assert captured.out == ""


def test_an_unknown_value_names_the_nearest_one():
    """`stak` is answered with `did you mean stack?` rather than the list of every value; a name near nothing still
    lists them all."""
    with pytest.raises(plan.BadValues) as near:
        plan.load_values({"stak": "x"})
    assert str(near.value) == "unknown value 'stak'; did you mean stack?"
    with pytest.raises(plan.BadValues, match="values are stack, namespace"):
        plan.load_values({"zzzz": "x"})


def test_the_installed_command_prints_one_line_for_a_malformed_values_file(tmp_path):
    """Run as a process, `oltsim-platform plan --values` on a malformed file exits 2 with exactly one stderr line."""
    import subprocess
    import sys
    from pathlib import Path

    values = tmp_path / "v.yaml"
    values.write_text("stack: [a\n")
    repo = Path(__file__).resolve().parents[2]
    result = subprocess.run([sys.executable, "-m", "oltsim.platform.cli", "plan", "stack-minor", "--values",
                             str(values)], cwd=repo, capture_output=True, text=True, timeout=60)
    assert result.returncode == 2, result.stderr
    assert result.stderr.splitlines() == [f"oltsim-platform: values file {values}, line 2, column 1: "
                                          "expected ',' or ']', but got '<stream end>'"]
