"""Runbooks of the service document, sections 9.3 to 9.9, with concrete commands filled from values.

A runbook is data: its section, the document's steps (text), and for each step the names of the command
generators that print what to run. Generators are small pure functions of the values; a value that is not given
is printed as `<name>` and listed as missing, never guessed. Values come from a flat YAML file and/or flags;
some have conventional defaults (chart repository, port 6653, charts of the examples) and some derive from
others exactly as the charts' own defaults do (KV prefix `service/<stack>_voltha`, topics `<stack>_rwcore`...).

Known mistakes of the source procedure are corrected and each runbook lists what it corrected:
`dev_mgmt_daemon` (not `dev_mgmnt_deamon`), `voltctl device create -t openolt -H host:port` then
`voltctl device enable <id>` (there is no `device provision`), helm lines that are complete (namespace, release,
chart, version, values) and printed so that every continuation line ends in a backslash.
"""
from __future__ import annotations

import difflib
import json
import re
import shlex
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from oltsim.platform import catalog
from oltsim.platform.controller import parse_target

CONTROLLER_OF_PORT = 6653


# ---- values -----------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Key:
    """One value a runbook can use: name (YAML key; flag --name-with-dashes), help, default, list or not."""

    name: str
    help: str
    default: str | None = None
    multi: bool = False


KEYS: tuple[Key, ...] = (
    # the stack (9.3, 9.6, 9.7, 9.8)
    Key("stack", "stack name (global.stack_name)"),
    Key("namespace", "the stack's namespace"),
    Key("component", "stack component for 9.3/9.5: " + ", ".join(catalog.STACK_COMPONENTS)),
    Key("release", "helm release of the component (default: the usual one for the component)"),
    Key("chart_repo", "helm chart repository of the upstream charts", "lfbb"),
    Key("chart", "chart of the component: <repo>/<chart> upstream, or a path to a local copy"),
    Key("chart_version", "chart version to upgrade the component to"),
    Key("previous_chart_version", "last known working chart version of the component (9.5)"),
    Key("stack_release", "helm release of the stack (default: the stack name)"),
    Key("stack_chart", "chart of the stack (default: <chart_repo>/voltha-stack)"),
    Key("stack_chart_version", "chart version of the stack"),
    Key("stack_values_file", "helm values file the stack was deployed with (passed with --values)"),
    Key("kv_prefix", "key-value store data prefix (default as the charts: service/<stack>_voltha)"),
    Key("core_topic", "core topic (default as the charts: <stack>_rwcore)"),
    Key("adapter_topic", "the component's own topic (default as the charts, e.g. <stack>_openolt)"),
    Key("kafka", "message-bus service (adapter endpoint)"),
    Key("kafka_cluster", "message-bus service for the cluster endpoint (default: --kafka)"),
    Key("kafka_port", "message-bus port", "9092"),
    Key("etcd", "key-value store service"),
    Key("etcd_port", "key-value store port", "2379"),
    # new infrastructure (9.7, 9.8)
    Key("infra_namespace", "namespace of the new key-value store or message bus"),
    Key("etcd_release", "helm release of the new key-value store"),
    Key("etcd_chart", "chart of the key-value store", "bitnami/etcd"),
    Key("etcd_chart_version", "chart version of the new key-value store"),
    Key("etcd_replicas", "nodes of the new key-value store", "3"),
    Key("kafka_release", "helm release of the new message bus"),
    Key("kafka_chart", "chart of the message bus", "bitnami/kafka"),
    Key("kafka_chart_version", "chart version of the new message bus"),
    Key("controller_namespace", "namespace of the new controller cluster (9.7)"),
    Key("controller_release", "helm release of the new controller cluster", "onos"),
    Key("controller_chart", "chart of the controller", "onos/onos-classic"),
    Key("controller_chart_version", "chart version of the new controller cluster"),
    Key("controller_image", "controller image repository", "voltha/voltha-onos"),
    Key("controller_image_tag", "controller image tag"),
    Key("controller_replicas", "controller members", "3"),
    Key("atomix_replicas", "distributed-store members", "3"),
    Key("controllers", "controller member services for the OpenFlow agent, port 6653 (default: derived from the "
        "new cluster's release, namespace and replicas)", multi=True),
    # the controller REST API (9.4, un/re-provisioning)
    Key("controller_url", "controller REST URL, credentials as user:password@host", "http://127.0.0.1:8181"),
    Key("new_controller_url", "REST URL of the new controller cluster (9.7)"),
    Key("subscribers", "provisioned subscribers as <device-id>/<port> (repeatable)", multi=True),
    Key("app", "controller app for 9.4/9.5 (short name or org.opencord.*)"),
    Key("app_version", "version of the new app archive"),
    Key("oar", "path of the new app archive (.oar)"),
    Key("previous_oar", "path of the last known working app archive (9.5)"),
    # the OLT (9.6 to 9.9)
    Key("olt_id", "the OLT's device id in the stack"),
    Key("olt_address", "the OLT agent's host:port (9191 for openolt, 50060 for BBSim and oltsim)"),
    Key("olt_host", "ssh destination of the OLT, e.g. root@10.0.0.5"),
    Key("deb", "the new agent package (.deb)"),
    Key("watchdog", "also stop the agent watchdog (yes/no)", "no"),
)
KEYS_BY_NAME = {k.name: k for k in KEYS}


class BadValues(ValueError):
    """A values file or flag that does not fit the table of keys."""


def load_values(mapping: dict) -> dict:
    """Check and normalise a mapping of values (from YAML or flags): known keys, strings, lists where multi."""
    out = {}
    for name, value in mapping.items():
        key = KEYS_BY_NAME.get(str(name).replace("-", "_"))
        if key is None:
            raise BadValues(unknown_value(str(name)))
        if value is None:
            continue
        if key.multi:
            items = value if isinstance(value, (list, tuple)) else [value]
            out[key.name] = [str(v) for v in items]
        else:
            if isinstance(value, (list, tuple, dict)):
                raise BadValues(f"{name} takes one value, not {type(value).__name__}")
            out[key.name] = "yes" if value is True else "no" if value is False else str(value)
    return out


def parse_set_value(text: str):
    """A `--set` value in the syntax of the values file: `[a, b]` is a list (YAML flow sequence), anything
    else the text itself (so that `--set subscribers=[a, b]` and `subscribers: [a, b]` in a file agree)."""
    if text.strip().startswith("["):
        import yaml
        try:
            value = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise BadValues(f"cannot read the list {text!r}: {str(exc).splitlines()[0]}") from None
        if isinstance(value, list):
            return value
    return text


def unknown_value(name: str) -> str:
    """The message for a value name not in the table: the nearest name when one is close (as the daemon's config
    check gives; a local difflib call, as this package imports nothing of the daemon), else every name."""
    near = difflib.get_close_matches(name.replace("-", "_").lower(), list(KEYS_BY_NAME), n=1, cutoff=0.75)
    if near:
        return f"unknown value {name!r}; did you mean {near[0]}?"
    return f"unknown value {name!r}; values are {', '.join(KEYS_BY_NAME)}"


def read_values_file(path: str) -> dict:
    """Values from a flat YAML mapping. BadValues, one line naming the file, for a file that cannot be read or
    parsed (with the line and column of a YAML error)."""
    import yaml
    try:
        with open(path) as f:
            doc = yaml.safe_load(f) or {}
    except OSError as exc:
        raise BadValues(f"values file {path}: {exc.strerror or exc}") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f", line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise BadValues(f"values file {path}{where}: {problem}") from None
    if not isinstance(doc, dict):
        raise BadValues(f"values file {path}: expected a mapping of values")
    try:
        return load_values(doc)
    except BadValues as exc:
        raise BadValues(f"values file {path}: {exc}") from None


# Derived values and what they derive from: when a derived value is unknown, the base is what is missing.
DERIVED_FROM = {
    "release": ("component",), "chart": ("component",), "stack_release": ("stack",), "kv_prefix": ("stack",),
    "core_topic": ("stack",), "adapter_topic": ("stack", "component"), "kafka_cluster": ("kafka",),
    "controllers": ("controller_namespace",),
}


class Values:
    """Values with defaults and derivations; `get` records what is missing and returns a `<name>` placeholder."""

    def __init__(self, given: dict):
        self.given = dict(given)
        self.missing: list[str] = []

    def raw(self, name: str):
        """The value if given, else its default, else derived from others, else None."""
        if name in self.given:
            return self.given[name]
        derived = getattr(self, f"_derive_{name}", None)
        if derived is not None:
            value = derived()
            if value is not None:
                return value
        return KEYS_BY_NAME[name].default

    def get(self, name: str) -> str:
        """The value, or `<name>`, recording as missing what to give: the value itself, or for a derived value
        the values it derives from (give --stack, and the KV prefix and topics follow)."""
        value = self.raw(name)
        if value is None or value == []:
            bases = [b for b in DERIVED_FROM.get(name, ()) if self.raw(b) is None]
            for missing in bases or [name]:
                if missing not in self.missing:
                    self.missing.append(missing)
            return f"<{name}>"
        return value

    def component(self) -> catalog.StackComponent | None:
        """The stack component named by `component`, if the catalog knows it."""
        name = self.raw("component")
        return catalog.STACK_COMPONENTS.get(catalog.STACK_ALIASES.get(name, name)) if name else None

    def _derive_release(self):
        c = self.component()
        return c.release if c else None

    def _derive_chart(self):
        c = self.component()
        return f"{self.raw('chart_repo')}/{c.chart}" if c else None

    def _derive_stack_release(self):
        return self.raw("stack")

    def _derive_stack_chart(self):
        return f"{self.raw('chart_repo')}/voltha-stack"

    def _derive_kv_prefix(self):
        stack = self.raw("stack")
        return f"service/{stack}_voltha" if stack else None

    def _derive_core_topic(self):
        stack = self.raw("stack")
        return f"{stack}_rwcore" if stack else None

    def _derive_adapter_topic(self):
        stack, c = self.raw("stack"), self.component()
        if not stack or not c or not c.own_topic_key:
            return None
        return f"{stack}_openolt" if c.name == "openolt-adapter" else f"{stack}_brcm_openomci_onu"

    def _derive_kafka_cluster(self):
        return self.raw("kafka")

    def _derive_controllers(self):
        release, ns = self.raw("controller_release"), self.raw("controller_namespace")
        if not release or not ns:
            return None
        # helm's fullname: the release if it already contains the chart name, else <release>-onos-classic.
        full = release if "onos-classic" in release else f"{release}-onos-classic"
        return [f"{full}-{i}.{full}-hs.{ns}.svc" for i in range(int(self.raw("controller_replicas")))]

    def _derive_app(self):
        return None

    def resolved(self) -> dict:
        """Every value with defaults and derivations applied (None where nothing is known)."""
        return {k.name: self.raw(k.name) for k in KEYS}


# ---- commands -----------------------------------------------------------------------------------------------

def q(value: str) -> str:
    """Shell-quote a value, leaving `<placeholders>` readable."""
    return value if _placeholder(value) else shlex.quote(value)


@dataclass(frozen=True)
class Command:
    """A shell command as segments: one line joined by spaces, or wrapped with a backslash at each break."""

    segments: tuple[str, ...]
    where: str = "workstation"   # workstation, olt (run over ssh), or a note of where it runs

    @property
    def line(self) -> str:
        """The command on one line."""
        return " ".join(self.segments)

    def wrapped(self, indent: str = "      ") -> list[str]:
        """The command over several lines, every line but the last ending in ` \\`."""
        if len(self.line) <= 100 or len(self.segments) == 1:
            return [self.line]
        lines = [self.segments[0] + " \\"]
        for seg in self.segments[1:-1]:
            lines.append(f"{indent}{seg} \\")
        lines.append(f"{indent}{self.segments[-1]}")
        return lines


def cmd(*segments: str, where: str = "workstation") -> Command:
    """A command from already-quoted segments."""
    return Command(tuple(s for s in segments if s), where)


def _sets(pairs) -> list[str]:
    return [f"--set {q(f'{k}={x}') if not _placeholder(x) else f'{k}={x}'}" for k, x in pairs]


def _placeholder(value: str) -> bool:
    return value.startswith("<") and value.endswith(">") and " " not in value


def _version(v: Values, key: str, chart: str) -> str:
    if chart.startswith((".", "/")):
        return ""  # a local chart copy has no repository version
    return f"--version {q(v.get(key))}"


def _service_sets(v: Values) -> list[tuple[str, str]]:
    """Bus and store endpoints in both generations of chart keys (`.service` as the document, `.address`)."""
    kafka, cluster, etcd = v.get("kafka"), v.get("kafka_cluster"), v.get("etcd")
    kport, eport = v.get("kafka_port"), v.get("etcd_port")
    return [
        ("services.kafka.adapter.service", kafka), ("services.kafka.adapter.address", f"{kafka}:{kport}"),
        ("services.kafka.cluster.service", cluster), ("services.kafka.cluster.address", f"{cluster}:{kport}"),
        ("services.etcd.service", etcd), ("services.etcd.port", eport),
        ("services.etcd.address", f"{etcd}:{eport}"),
    ]


def helm_component(v: Values, version_key: str = "chart_version", component: str | None = None) -> list[Command]:
    """`helm upgrade --install` of one stack component in the stack's namespace (9.3, 9.5, 9.9 major)."""
    if component is not None and v.component() is not catalog.STACK_COMPONENTS[component]:
        # The values name another component (or none): its release, chart and topic do not apply here.
        given = {k: x for k, x in v.given.items() if k not in ("release", "chart", "adapter_topic")}
        sub = Values({**given, "component": component})
        sub.missing = v.missing
        v = sub
    c = v.component()
    release, chart = v.get("release"), v.get("chart")
    prefix = c.values_prefix if c else "<values_prefix>"
    pairs = [("global.stack_name", v.get("stack"))]
    if prefix:
        pairs.append((f"{prefix}.kv_store_data_prefix", v.get("kv_prefix")))
        pairs.append((f"{prefix}.topics.core_topic", v.get("core_topic")))
    if c is None or c.own_topic_key:
        pairs.append((f"{prefix}.topics.{c.own_topic_key if c else '<topic_key>'}", v.get("adapter_topic")))
    pairs += _service_sets(v)
    return [cmd("helm upgrade --install --create-namespace", f"--namespace {q(v.get('namespace'))}",
                f"{q(release)} {q(chart)}", _version(v, version_key, chart), *_sets(pairs))]


def helm_stack(v: Values, controllers: bool = False) -> list[Command]:
    """`helm upgrade --install` of the whole stack chart with its endpoints (9.6, 9.7, 9.8)."""
    chart = v.get("stack_chart")
    pairs = [("global.stack_name", v.get("stack")), ("global.kv_store_data_prefix", v.get("kv_prefix")),
             ("global.topics.core_topic", v.get("core_topic"))] + _service_sets(v)
    if controllers:
        members = v.get("controllers")
        members = members if isinstance(members, list) else ["<controllers>"]
        for i, member in enumerate(members):
            pairs += [(f"voltha.services.controller[{i}].service", member),
                      (f"voltha.services.controller[{i}].port", str(CONTROLLER_OF_PORT)),
                      (f"voltha.services.controller[{i}].address", f"{member}:{CONTROLLER_OF_PORT}")]
    values_file = v.raw("stack_values_file")
    return [cmd("helm upgrade --install --create-namespace", f"--namespace {q(v.get('namespace'))}",
                f"{q(v.get('stack_release'))} {q(chart)}", _version(v, "stack_chart_version", chart),
                f"--values {q(values_file)}" if values_file else "", *_sets(pairs))]


def helm_install_controller(v: Values) -> list[Command]:
    """The new controller cluster in a new namespace, store persistence off (9.7 example)."""
    chart = v.get("controller_chart")
    pairs = [("replicas", v.get("controller_replicas")), ("atomix.replicas", v.get("atomix_replicas")),
             ("atomix.persistence.enabled", "false"), ("image.repository", v.get("controller_image")),
             ("image.tag", v.get("controller_image_tag")), ("image.pullPolicy", "Always")]
    return [cmd("helm install --create-namespace", f"--namespace {q(v.get('controller_namespace'))}",
                f"{q(v.get('controller_release'))} {q(chart)}", _version(v, "controller_chart_version", chart),
                *_sets(pairs))]


def helm_install_etcd(v: Values) -> list[Command]:
    """A new key-value store cluster: RBAC off, persistence off, three nodes (9.8 example)."""
    chart = v.get("etcd_chart")
    pairs = [("auth.rbac.enabled", "false"), ("persistence.enabled", "false"),
             ("statefulset.replicaCount", v.get("etcd_replicas"))]
    return [cmd("helm install --create-namespace", f"--namespace {q(v.get('infra_namespace'))}",
                f"{q(v.get('etcd_release'))} {q(chart)}", _version(v, "etcd_chart_version", chart), *_sets(pairs))]


def helm_install_kafka(v: Values) -> list[Command]:
    """A new message bus (9.8)."""
    chart = v.get("kafka_chart")
    return [cmd("helm install --create-namespace", f"--namespace {q(v.get('infra_namespace'))}",
                f"{q(v.get('kafka_release'))} {q(chart)}", _version(v, "kafka_chart_version", chart))]


def kubectl_watch(v: Values) -> list[Command]:
    """Watch the stack's pods until the new one is ready."""
    return [cmd("kubectl", f"--namespace {q(v.get('namespace'))}", "get pods --watch")]


def kubectl_delete_failing_pod(v: Values) -> list[Command]:
    """Delete the pod that does not start (its name is read from `kubectl get pods`)."""
    return [cmd("kubectl", f"--namespace {q(v.get('namespace'))}", "get pods"),
            cmd("kubectl", f"--namespace {q(v.get('namespace'))}", "delete pod <failing-pod>")]


def _curl(v: Values, url_key: str = "controller_url") -> tuple[str, str]:
    """(the -u option, the base URL without credentials) for the controller REST API."""
    raw = v.get(url_key)
    if _placeholder(raw):
        return "-u <user>:<password>", raw
    target = parse_target(raw)
    base = target.base_url.removesuffix("/onos/v1")
    if target.user is None:
        return "-u <user>:<password>", base
    creds = target.user if target.password is None else f"{target.user}:{target.password}"
    return f"-u {q(creds)}", base


CURL = "curl --fail -sSL"


def _app(v: Values) -> str:
    app = v.get("app")
    return app if app.startswith("<") else catalog.app_name(app)


def download_oar(v: Values) -> list[Command]:
    """Download a released archive from Maven Central (org.opencord); snapshots, unknown versions and apps
    without a published artifact are built locally."""
    app, version = _app(v), v.raw("app_version")
    entry = catalog.CONTROLLER_APPS.get(app)
    if entry is None or entry.artifact is None or not version or "SNAPSHOT" in version.upper():
        return [cmd("mvn clean install", where="in the app's source tree; the .oar is under target/")]
    url = (f"https://repo1.maven.org/maven2/org/opencord/{entry.artifact}/{version}/"
           f"{entry.artifact}-{version}.oar")
    return [cmd("curl --fail -sSL", f"-o {q(v.get('oar'))}", q(url))]


def save_running_oar(v: Values) -> list[Command]:
    """Keep the installed archive: it is the rollback copy (9.5 needs the last working .oar)."""
    auth, base = _curl(v)
    app = _app(v)
    return [cmd(CURL, auth, f"-o {q(f'{app}-rollback.oar')}", q(f"{base}/onos/v1/applications/{app}/bits"))]


def delete_app(v: Values) -> list[Command]:
    """DELETE the app (always 204)."""
    auth, base = _curl(v)
    return [cmd(CURL, auth, "-X DELETE", q(f"{base}/onos/v1/applications/{_app(v)}"))]


def wait_app_gone(v: Values) -> list[Command]:
    """Poll until the app is gone (404), then list the other apps' states."""
    auth, base = _curl(v)
    app = _app(v)
    probe = f"curl -s -o /dev/null -w '%{{http_code}}' {auth} {q(f'{base}/onos/v1/applications/{app}')}"
    return [cmd(f'until [ "$({probe})" = 404 ]; do sleep 1; done'),
            cmd(CURL, auth, q(f"{base}/onos/v1/applications"),
                "| python3 -c 'import json,sys; [print(a[\"name\"], a[\"version\"], a[\"state\"]) "
                "for a in json.load(sys.stdin)[\"applications\"]]'")]


def install_app(v: Values, oar_key: str = "oar") -> list[Command]:
    """POST the archive with activate=true as application/octet-stream (URL quoted: `?` is a glob)."""
    auth, base = _curl(v)
    return [cmd(CURL, auth, "-X POST", "-H 'Content-Type: application/octet-stream'",
                f"--data-binary @{q(v.get(oar_key))}", q(f"{base}/onos/v1/applications?activate=true"))]


def check_app(v: Values) -> list[Command]:
    """The app's state and version, then its health (`ready`)."""
    auth, base = _curl(v)
    app = _app(v)
    return [cmd(CURL, auth, q(f"{base}/onos/v1/applications/{app}")),
            cmd(CURL, auth, q(f"{base}/onos/v1/applications/{app}/health"))]


def app_update_tool(v: Values, oar_key: str = "oar") -> list[Command]:
    """The same sequence, verified, with automatic rollback."""
    url = v.get("controller_url")
    return [cmd("oltsim-platform app-update", f"--controller {q(url)}", f"--app {q(_app(v))}",
                f"--oar {q(v.get(oar_key))}")]


def unprovision(v: Values) -> list[Command]:
    """Remove each subscriber through the olt app's REST API."""
    auth, base = _curl(v)
    subs = v.get("subscribers")
    subs = subs if isinstance(subs, list) else [subs]
    return [cmd(CURL, auth, "-X DELETE", q(f"{base}/onos/olt/oltapp/{s}")) for s in subs]


def provision(v: Values, url_key: str = "controller_url") -> list[Command]:
    """Provision each subscriber again through the olt app's REST API."""
    auth, base = _curl(v, url_key)
    subs = v.get("subscribers")
    subs = subs if isinstance(subs, list) else [subs]
    return [cmd(CURL, auth, "-X POST", q(f"{base}/onos/olt/oltapp/{s}")) for s in subs]


def delete_olt(v: Values) -> list[Command]:
    """Delete the OLT device through the stack's API (voltctl speaks its gRPC API)."""
    return [cmd("voltctl device delete", q(v.get("olt_id")))]


def list_olts(v: Values) -> list[Command]:
    """The stack's OLT devices."""
    return [cmd("voltctl device list --filter Type=openolt")]


def create_enable_olt(v: Values) -> list[Command]:
    """Create the OLT device (prints its new id) and enable it: the real form of `device provision`."""
    return [cmd(f"OLT_ID=$(voltctl device create -t openolt -H {q(v.get('olt_address'))})"),
            cmd('voltctl device enable "$OLT_ID"')]


def _olt_deb(v: Values) -> str:
    deb = v.get("deb")
    return deb if deb.startswith("<") else f"/tmp/{PurePosixPath(deb).name}"


def copy_deb(v: Values) -> list[Command]:
    """Copy the agent package to the OLT."""
    return [cmd("scp", q(v.get("deb")), q(f"{v.get('olt_host')}:{_olt_deb(v)}"))]


def stop_agent(v: Values) -> list[Command]:
    """Stop the watchdog first (it would restart what is stopped), then openolt and dev_mgmt_daemon."""
    host = q(v.get("olt_host"))
    cmds = []
    if str(v.raw("watchdog")).lower() in ("yes", "true", "1"):
        cmds.append(cmd("ssh", host, q("pkill -f openolt_dev_mgmt_daemon_process_watchdog"), where="olt"))
    cmds.append(cmd("ssh", host, q("service openolt stop && service dev_mgmt_daemon stop"), where="olt"))
    return cmds


def install_deb(v: Values) -> list[Command]:
    """Install the new package on the OLT."""
    return [cmd("ssh", q(v.get("olt_host")), q(f"dpkg -i {_olt_deb(v)}"), where="olt")]


def reboot_olt(v: Values) -> list[Command]:
    """Reboot the OLT hardware."""
    return [cmd("ssh", q(v.get("olt_host")), "reboot", where="olt")]


def helm_openolt_adapter(v: Values) -> list[Command]:
    """Upgrade the OLT adapter (9.9 major)."""
    return helm_component(v, component="openolt-adapter")


GENERATORS = {
    "helm_component": helm_component,
    "helm_component_previous": lambda v: helm_component(v, "previous_chart_version"),
    "helm_stack": helm_stack,
    "helm_stack_controllers": lambda v: helm_stack(v, controllers=True),
    "helm_install_controller": helm_install_controller,
    "helm_install_etcd": helm_install_etcd,
    "helm_install_kafka": helm_install_kafka,
    "helm_openolt_adapter": helm_openolt_adapter,
    "kubectl_watch": kubectl_watch,
    "kubectl_delete_failing_pod": kubectl_delete_failing_pod,
    "download_oar": download_oar,
    "save_running_oar": save_running_oar,
    "delete_app": delete_app,
    "wait_app_gone": wait_app_gone,
    "install_app": install_app,
    "install_previous_app": lambda v: install_app(v, "previous_oar"),
    "check_app": check_app,
    "app_update_tool": app_update_tool,
    "app_update_tool_previous": lambda v: app_update_tool(v, "previous_oar"),
    "unprovision": unprovision,
    "provision": provision,
    "provision_new_controller": lambda v: provision(v, "new_controller_url"),
    "delete_olt": delete_olt,
    "list_olts": list_olts,
    "create_enable_olt": create_enable_olt,
    "copy_deb": copy_deb,
    "stop_agent": stop_agent,
    "install_deb": install_deb,
    "reboot_olt": reboot_olt,
}


# ---- runbooks ----------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Step:
    """A step of a runbook: what the document says, the generators of its commands, whether it is optional."""

    text: str
    commands: tuple[str, ...] = ()
    optional: bool = False


@dataclass(frozen=True)
class Runbook:
    """An update class's procedure: section, title, impact, preconditions, steps, notes and corrections."""

    id: str
    section: str
    title: str
    impact: str
    before: tuple[str, ...]
    steps: tuple[Step, ...]
    notes: tuple[str, ...] = ()
    corrections: tuple[str, ...] = ()


NO_NORTHBOUND = "No subscriber-provisioning call is made from the northbound during the update; calls in flight " \
                "complete from stored data and from messages persisted on the bus."
HELM_LINES = "The source's helm examples are incomplete (no version, no namespace on some lines) or break when " \
             "pasted (a `--set services.etcd.service=...` line without its trailing backslash); every helm line " \
             "here is complete and each continuation line ends in a backslash."
DAEMON_NAME = "The source spells the device-management daemon `dev_mgmnt_deamon`; the binary and init script are " \
              "`dev_mgmt_daemon`."
PROVISION = "There is no `voltctl device provision <ip:port>`: the OLT is re-provisioned with `voltctl device " \
            "create -t openolt -H <ip:port>`, which prints the new device id, then `voltctl device enable <id>`."
KEYS_NOTE = "Endpoints are set with both generations of chart keys (`services.*.service` as in the document, " \
            "`services.*.address` as in current charts); the keys a chart does not use are ignored."
REPROVISION = ("Re-provision the OLT.", ("create_enable_olt",))

RUNBOOKS: dict[str, Runbook] = {r.id: r for r in (
    Runbook(
        "stack-minor", "9.3", "Minor update of stack components",
        "none for the data plane of existing subscribers",
        (NO_NORTHBOUND,),
        (
            Step("Update the minor version of the component and build the new version."),
            Step("Set the component's minor version in its chart (chart version and appVersion)."),
            Step("Upgrade with install-if-absent in the stack's namespace: the upstream chart if the change is "
                 "upstreamed, otherwise a local copy of the chart (give its path as --chart).",
                 ("helm_component",)),
            Step("Watch the new pod become ready; the old pod is not terminated until then.", ("kubectl_watch",)),
        ),
        ("Stack name, key-value store data prefix, core and adapter topics, bus and store endpoints must match "
         "the deployment; the defaults derived from --stack are the charts' own defaults.",
         "If the component is deployed as a subchart of the stack chart, its keys take the subchart's name as a "
         "prefix, or upgrade the stack chart instead.", KEYS_NOTE),
        (HELM_LINES, "The source's release name `opeonu-adapter` is a typo: the release is `openonu-adapter` "
                     "unless the deployment chose another (--release)."),
    ),
    Runbook(
        "app-minor", "9.4", "Minor update of controller apps",
        "none for the data plane; some metrics and packet processing may be lost and converge through retries",
        ("No subscriber-provisioning call is made through the REST API during the update; calls in flight "
         "complete from flows held in the controller's distributed store.",
         "Automated, verified, with rollback: `oltsim-platform app-update` does steps 2 to 6."),
        (
            Step("Obtain the app archive (.oar): a local build, or a release from Maven Central (org.opencord).",
                 ("download_oar",)),
            Step("Save the installed archive as the rollback copy (9.5 needs the last working .oar).",
                 ("save_running_oar",)),
            Step("Delete the old app (4.3 DELETE; answers 204).", ("delete_app",)),
            Step("Wait until the app is gone (404) and check that the other apps are still ACTIVE.",
                 ("wait_app_gone",)),
            Step("Upload, install and activate the new archive (4.3 POST with activate=true): 200; 409 means the "
                 "old app is still installed, 400 a bad archive or a missing dependency.", ("install_app",)),
            Step("Verify: state ACTIVE, the new version (as the controller writes it, e.g. 4.5.0.SNAPSHOT), and "
                 "health `ready`.", ("check_app",)),
            Step("Or do steps 2 to 6 in one verified run that rolls back by itself on failure.",
                 ("app_update_tool",), optional=True),
        ),
        ("Minor update is supported for sadis, olt, aaa, kafka, dhcpl2relay, mac-learning (org.opencord.maclearner), "
         "igmpproxy and mcast only (9.2 rule 1).",),
        ("The source's curl puts `?activate=true` unquoted (a glob in zsh and some shells); the URL is quoted here.",
         "The source does not keep the running archive; without it the rollback of 9.5 has nothing to install."),
    ),
    Runbook(
        "rollback", "9.5", "Minor update rollback",
        "depends on the case; none when the orchestrator keeps the old pod",
        (),
        (
            Step("Case: an updated stack component's container does not start. Handled by the orchestrator: the "
                 "old pod keeps running until the new one is ready. Delete the failing pod, fix the issue, then "
                 "redeploy a new minor version (9.3 with the fixed chart version).",
                 ("kubectl_delete_failing_pod", "helm_component")),
            Step("Case: the component starts and is ready but function is broken (a subscriber cannot be "
                 "provisioned, no traffic). Run the same upgrade with the version decremented to the last known "
                 "working one.", ("helm_component_previous",)),
            Step("Case: a controller app does not start or function is broken. Repeat 9.4 with the previous "
                 "working archive (app-update rolls back by itself when its checks fail).",
                 ("app_update_tool_previous", "delete_app", "wait_app_gone", "install_previous_app", "check_app")),
            Step("Case: the change depends on changes in another component. Upgrade the components by hand in the "
                 "order the dependencies require; the document defines no fixed order."),
        ),
        ("Rollback is always manual except for a container that does not start.",),
        (HELM_LINES,),
    ),
    Runbook(
        "stack-major", "9.6", "Major update: stack API or data-format change",
        "maintenance window; the subscriber data plane is interrupted",
        ("Each stack is updated independently; the controller, key-value store and message bus stay. Different "
         "stack versions can coexist on the same infrastructure.",
         "If the API change is between the OLT adapter and the agent, follow agent-major (9.9) instead."),
        (
            Step("Un-provision all subscribers through the controller REST API.", ("unprovision",)),
            Step("Delete all OLTs managed by the stack through the stack's API (repeat for each OLT listed).",
                 ("list_olts", "delete_olt")),
            Step("Upgrade the stack with the correct version of the stack chart.", ("helm_stack",)),
            Step("Afterwards: re-provision the OLT.", ("create_enable_olt",)),
            Step("Afterwards: re-provision the subscribers.", ("provision",)),
        ),
        (KEYS_NOTE,),
        (HELM_LINES, "The source stops at the upgrade; re-provisioning the OLT and the subscribers is added as "
                     "the last two steps. " + PROVISION),
    ),
    Runbook(
        "controller-major", "9.7", "Major update: controller, its distributed store or its apps",
        "maintenance window; the subscriber data plane is interrupted",
        ("Applies to changes of controller Java or REST interfaces, app incompatibilities, changes to data in the "
         "distributed store and a version change of the store itself. Every stack connected to the controller is "
         "cleaned of data before it moves to the new cluster.",),
        (
            Step("Deploy a new controller cluster in a new namespace (store persistence off in the example).",
                 ("helm_install_controller",)),
            Step("Un-provision all subscribers through the (old) controller's REST API.", ("unprovision",)),
            Step("Delete the OLT device (not strictly required; ensures a clean state).", ("delete_olt",),
                 optional=True),
            Step(f"Redeploy the stack's OpenFlow agent with the new controller members (service, port "
                 f"{CONTROLLER_OF_PORT} and address of each); only the agent pod restarts.",
                 ("helm_stack_controllers",)),
            Step("Re-provision the OLT.", ("create_enable_olt",)),
            Step("Re-provision the subscribers through the new controller's REST API.",
                 ("provision_new_controller",)),
            Step("Repeat steps 2 to 6 for each stack connected to the controller being replaced."),
        ),
        (KEYS_NOTE,),
        (HELM_LINES, PROVISION),
    ),
    Runbook(
        "kv-store", "9.8", "Major update: key-value store",
        "maintenance window; the subscriber data plane is interrupted",
        ("Tearing the store down deletes its data: the components rebuild it.",
         "No in-service update is supported for the key-value store (9.2 rule 2)."),
        (
            Step("Deploy a new key-value store cluster (three nodes, access control off, persistence off).",
                 ("helm_install_etcd",)),
            Step("Un-provision all subscribers through the controller REST API.", ("unprovision",)),
            Step("Delete the OLT device (not strictly required).", ("delete_olt",), optional=True),
            Step("Redeploy the stack with the stack chart pointing at the new store endpoints (--etcd).",
                 ("helm_stack",)),
            Step(*REPROVISION),
            Step("Re-provision the subscribers.", ("provision",)),
            Step("Repeat steps 2 to 6 for every stack using the store."),
        ),
        (KEYS_NOTE,),
        (HELM_LINES, PROVISION),
    ),
    Runbook(
        "message-bus", "9.8", "Message-bus update (not major, not in service)",
        "none expected: each pod restarts as in a pod restart, using the data in the key-value store",
        ("The document says both that no in-service update is supported for the message bus (9.2 rule 2) and "
         "that its update is not major (rule 4): it is done by deploying a new bus and moving the stack to it.",),
        (
            Step("Deploy the new message bus.", ("helm_install_kafka",)),
            Step("Redeploy the stack pods with the stack chart, the adapter and cluster bus endpoints pointing at "
                 "the new bus (--kafka, --kafka-cluster).", ("helm_stack",)),
        ),
        (KEYS_NOTE,),
        (HELM_LINES, "The source's example redeploys with chart `lfbb/voltha` here and `lfbb/voltha-stack` for the "
                     "controller; the stack chart is used for both."),
    ),
    Runbook(
        "agent-minor", "9.9", "Minor OLT-agent update",
        "service-impacting: the stack sees an OLT reboot; events, metrics and performance data can be lost",
        ("No change to the agent-adapter protocol definition in either component.",
         "No northbound calls during the update; in-progress provisioning reconciles after the reboot.",
         "On an oltsim host, `oltsim-platform agent-update --deb <deb>` (as root) does steps 2 to 4 and "
         "verifies the new heartbeat signature."),
        (
            Step("Place the new agent package (.deb) on the OLT.", ("copy_deb",)),
            Step("Stop the running agent, the device-management daemon and optionally the watchdog "
                 "(--watchdog yes).", ("stop_agent",)),
            Step("Install and run the new packages.", ("install_deb",)),
            Step("Reboot the OLT hardware.", ("reboot_olt",)),
        ),
        ("Afterwards the stack receives the OLT connection again, sees a new heartbeat signature and "
         "re-provisions data.",),
        (DAEMON_NAME, "The watchdog is stopped first: running, it restarts the processes being stopped."),
    ),
    Runbook(
        "agent-major", "9.9", "Major OLT-agent update",
        "service-impacting: in-progress calls fail; events, metrics and performance data are lost",
        ("The agent-adapter protocol definition changed.", "No northbound calls during the update."),
        (
            Step("Delete the OLT device from the stack.", ("delete_olt",)),
            Step("Upgrade the OLT adapter.", ("helm_openolt_adapter",)),
            Step("Place the new agent package on the OLT.", ("copy_deb",)),
            Step("Stop the agent, the device-management daemon and optionally the watchdog.", ("stop_agent",)),
            Step("Install and run the new packages.", ("install_deb",)),
            Step("Reboot the OLT hardware.", ("reboot_olt",)),
            Step("Re-provision the OLT (create, then enable with the id create printed).", ("create_enable_olt",)),
            Step("Re-provision the subscribers.", ("provision",)),
        ),
        ("Afterwards the stack treats the OLT as a new device with no prior knowledge.",),
        (DAEMON_NAME, PROVISION, HELM_LINES),
    ),
)}

SECTION_ALIASES = {"9.3": "stack-minor", "9.4": "app-minor", "9.5": "rollback", "9.6": "stack-major",
                   "9.7": "controller-major"}
AMBIGUOUS_SECTIONS = {"9.8": ("kv-store", "message-bus"), "9.9": ("agent-minor", "agent-major")}


class UnknownRunbook(ValueError):
    """A runbook id or section the plan does not have."""


def runbook_id(name: str) -> str:
    """The runbook id for an id or a section number."""
    if name in RUNBOOKS:
        return name
    if name in SECTION_ALIASES:
        return SECTION_ALIASES[name]
    if name in AMBIGUOUS_SECTIONS:
        raise UnknownRunbook(f"section {name} has two runbooks: {' or '.join(AMBIGUOUS_SECTIONS[name])}")
    raise UnknownRunbook(f"unknown runbook {name!r}; runbooks: {', '.join(RUNBOOKS)} (or 9.3 to 9.7)")


@dataclass
class RenderedStep:
    """A step with its commands filled in."""

    number: int
    text: str
    optional: bool
    commands: list[Command] = field(default_factory=list)


@dataclass
class Plan:
    """A runbook rendered with values: what `plan` prints."""

    runbook: Runbook
    steps: list[RenderedStep]
    missing: list[str]
    values: dict

    def as_dict(self) -> dict:
        """The plan as a JSON-ready dict (each command on one line)."""
        r = self.runbook
        return {
            "runbook": r.id, "section": r.section, "title": r.title, "service_impact": r.impact,
            "before": list(r.before),
            "steps": [{"number": s.number, "text": s.text, "optional": s.optional,
                       "commands": [{"command": c.line, "where": c.where} for c in s.commands]}
                      for s in self.steps],
            "notes": list(r.notes), "corrections": list(r.corrections), "missing": list(self.missing),
            "values": {k: v for k, v in self.values.items() if v is not None},
        }

    def json(self) -> str:
        """The plan as JSON text."""
        return json.dumps(self.as_dict(), indent=2) + "\n"

    def text(self) -> str:
        """The plan for people: numbered steps, commands prefixed with `$`, wrapped with backslashes."""
        r = self.runbook
        out = [f"{r.section} {r.title}  (oltsim-platform plan {r.id})", f"Service impact: {r.impact}"]
        if self.missing:
            out.append("Values still to fill (shown as <name>): "
                       + ", ".join(describe_missing(m) for m in self.missing))
        if r.before:
            out.append("")
            out.append("Before you start:")
            out += [f"  - {b}" for b in r.before]
        out.append("")
        for s in self.steps:
            out.append(f"{s.number}. {'(optional) ' if s.optional else ''}{s.text}")
            for c in s.commands:
                lines = c.wrapped()
                where = "" if c.where == "workstation" else f"   # {c.where}"
                out.append(f"   $ {lines[0]}{where if len(lines) == 1 else ''}")
                out += [f"   {line}" for line in lines[1:]]
        if r.notes:
            out.append("")
            out.append("Notes:")
            out += [f"  - {n}" for n in r.notes]
        if r.corrections:
            out.append("")
            out.append("Corrected from the source procedure:")
            out += [f"  - {c}" for c in r.corrections]
        return "\n".join(out) + "\n"


def render(name: str, given: dict) -> Plan:
    """Render runbook `name` (id or section) with the given values (already checked by load_values)."""
    runbook = RUNBOOKS[runbook_id(name)]
    values = Values(given)
    comp = values.raw("component")
    if comp and values.component() is None:
        raise BadValues(f"unknown stack component {comp!r}; components: {', '.join(catalog.STACK_COMPONENTS)}")
    steps = []
    for n, step in enumerate(runbook.steps, 1):
        commands = [c for g in step.commands for c in GENERATORS[g](values)]
        steps.append(RenderedStep(n, step.text, step.optional, commands))
    missing = list(values.missing)
    for step in steps:  # every <placeholder> a command prints is listed, also those that are not values
        for command in step.commands:
            for name in _PLACEHOLDER.findall(command.line):
                follows = DERIVED_FROM.get(name, ()) or PLACEHOLDER_FOLLOWS.get(name, ())
                if name not in missing and not any(b in missing for b in follows):
                    missing.append(name)
    return Plan(runbook, steps, missing, values.resolved())


_PLACEHOLDER = re.compile(r"<([A-Za-z0-9_-]+)>")
# Placeholders that are not values of --set/--values, and how to fill them.
PLACEHOLDER_HELP = {
    "user": "controller user: give it in controller_url as http://user:password@host:8181",
    "password": "controller password, in controller_url with the user",
    "failing-pod": "the pod that does not start, read from the kubectl get pods above",
    "values_prefix": "the chart's values key of the component: give a known component",
    "topic_key": "the chart's topic key of the component: give a known component",
}
PLACEHOLDER_FOLLOWS = {"values_prefix": ("component",), "topic_key": ("component",)}


def describe_missing(name: str) -> str:
    """A missing name for people: a value name as is, any other placeholder with how it is filled."""
    return name if name in KEYS_BY_NAME or name not in PLACEHOLDER_HELP else f"{name} ({PLACEHOLDER_HELP[name]})"
