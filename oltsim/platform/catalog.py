"""What the procedures know about the platform: stack components, controller apps, component kinds.

Names and keys come from the service document (section 9) and update-procedures-notes.md (helm charts, controller
app names and Maven artifact ids). Pure data plus lookups; no I/O.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

# Component kinds, as `classify` and the rules of section 9.2 name them.
STACK = "stack-component"
APP = "controller-app"
CONTROLLER = "controller"
KV_STORE = "kv-store"
MESSAGE_BUS = "message-bus"
OLT_AGENT = "olt-agent"
KINDS = (STACK, APP, CONTROLLER, KV_STORE, MESSAGE_BUS, OLT_AGENT)


@dataclass(frozen=True)
class StackComponent:
    """An abstraction-stack component and how its helm chart names its values."""

    name: str
    chart: str                 # chart name in the upstream repository
    release: str               # usual helm release name
    values_prefix: str | None  # top-level key holding kv_store_data_prefix and topics
    own_topic_key: str | None  # topics.<key> of the component's own topic


STACK_COMPONENTS = {
    c.name: c
    for c in (
        StackComponent("rw-core", "voltha", "voltha", "rw_core", None),
        StackComponent("ofagent", "voltha", "voltha", None, None),
        StackComponent("openolt-adapter", "voltha-adapter-openolt", "openolt-adapter",
                       "adapter_open_olt", "adapter_open_olt_topic"),
        StackComponent("openonu-adapter", "voltha-adapter-openonu", "openonu-adapter",
                       "adapter_open_onu", "adapter_open_onu_topic"),
    )
}
STACK_ALIASES = {
    "core": "rw-core", "voltha-core": "rw-core", "voltha-rw-core": "rw-core",
    "of-agent": "ofagent", "voltha-ofagent": "ofagent",
    "voltha-adapter-openolt": "openolt-adapter", "adapter-open-olt": "openolt-adapter",
    "voltha-adapter-openonu": "openonu-adapter", "adapter-open-onu": "openonu-adapter",
}


@dataclass(frozen=True)
class ControllerApp:
    """A controller (ONOS) app: short name, application name, Maven artifact id, and whether 9.2 rule 1 lists it."""

    short: str
    name: str
    artifact: str | None
    minor_supported: bool


CONTROLLER_APPS = {
    a.name: a
    for a in (
        ControllerApp("sadis", "org.opencord.sadis", "sadis-app", True),
        ControllerApp("olt", "org.opencord.olt", "olt-app", True),
        ControllerApp("aaa", "org.opencord.aaa", "aaa-app", True),
        ControllerApp("kafka", "org.opencord.kafka", "kafka", True),
        ControllerApp("dhcpl2relay", "org.opencord.dhcpl2relay", "dhcpl2relay-app", True),
        ControllerApp("mac-learning", "org.opencord.maclearner", "maclearner-app", True),
        ControllerApp("igmpproxy", "org.opencord.igmpproxy", "onos-app-igmpproxy-app", True),
        ControllerApp("mcast", "org.opencord.mcast", "mcast-app", True),
        # Released with VOLTHA but not in the list of 9.2 rule 1: no minor update.
        ControllerApp("olttopology", "org.opencord.olttopology", None, False),
        ControllerApp("pppoeagent", "org.opencord.pppoeagent", None, False),
        ControllerApp("bng", "org.opencord.bng", None, False),
    )
}
APP_SHORT_NAMES = {a.short: a.name for a in CONTROLLER_APPS.values()}
APP_SHORT_NAMES["maclearner"] = "org.opencord.maclearner"
# `<short>-app` names a controller app unambiguously (`olt-app` is the controller's olt app, `olt` the OLT box).
APP_SHORT_NAMES.update({f"{a.short}-app": a.name for a in CONTROLLER_APPS.values()})

OTHER_COMPONENTS = {
    "controller": CONTROLLER, "onos": CONTROLLER,
    "kv-store": KV_STORE, "etcd": KV_STORE,
    "message-bus": MESSAGE_BUS,
    # What an operator updates on "the OLT" is its agent (openolt on hardware, BBSim or oltsim when simulated).
    "olt": OLT_AGENT, "olt-agent": OLT_AGENT, "openolt-agent": OLT_AGENT, "agent": OLT_AGENT,
    "oltsim": OLT_AGENT, "bbsim": OLT_AGENT,
}
# "kafka" names both the message bus and a controller app (org.opencord.kafka); `classify` makes the user choose.
AMBIGUOUS = {"kafka": ("message-bus", "org.opencord.kafka (or kafka-app)")}

_APP_NAME = re.compile(r"^[a-z][a-z0-9_]*(\.[a-z0-9_-]+)+$")


class UnknownComponent(ValueError):
    """A component name the catalog cannot place; the message says what it can place."""


def app_name(name: str) -> str:
    """The controller application name for a short name (`olt` -> `org.opencord.olt`); other names pass through."""
    return APP_SHORT_NAMES.get(name, name)


def resolve(name: str, kind: str | None = None) -> tuple[str, str]:
    """(kind, canonical name) of a component; `kind` forces the kind for components the catalog does not list."""
    if kind is not None:
        if kind not in KINDS:
            raise UnknownComponent(f"unknown kind {kind!r}; kinds are {', '.join(KINDS)}")
        if kind == STACK:
            return kind, STACK_ALIASES.get(name, name)
        if kind == APP:
            return kind, app_name(name)
        return kind, name
    given, name = name, name.strip().lower()  # operators write OLT, ONOS, Kafka
    if name in AMBIGUOUS:
        choices = " or ".join(AMBIGUOUS[name])
        raise UnknownComponent(f"{given!r} is ambiguous: say {choices}")
    if name in STACK_COMPONENTS or name in STACK_ALIASES:
        return STACK, STACK_ALIASES.get(name, name)
    if name in OTHER_COMPONENTS:
        return OTHER_COMPONENTS[name], "olt-agent" if OTHER_COMPONENTS[name] == OLT_AGENT else name
    if name in APP_SHORT_NAMES or name in CONTROLLER_APPS:
        return APP, app_name(name)
    if _APP_NAME.match(name):
        return APP, name  # an unlisted controller app, e.g. org.onosproject.foo
    raise UnknownComponent(f"unknown component {given!r}; known components:\n{known_components()}")


def known_components() -> str:
    """The names `classify` knows, one line per kind, for error messages and help."""
    stack = sorted(set(STACK_COMPONENTS) | set(STACK_ALIASES))
    apps = [a.short + "-app" if a.short in OTHER_COMPONENTS or a.short in AMBIGUOUS else a.short
            for a in CONTROLLER_APPS.values()]
    other = {kind: sorted(n for n, k in OTHER_COMPONENTS.items() if k == kind)
             for kind in (OLT_AGENT, CONTROLLER, KV_STORE, MESSAGE_BUS)}
    lines = [
        f"  the OLT (its agent): {', '.join(other[OLT_AGENT])}",
        f"  stack components: {', '.join(stack)}",
        f"  controller apps: {', '.join(apps)} (also as <name>-app or the full name, org.opencord.olt), "
        "or any other app name (org.example.app)",
        f"  the controller: {', '.join(other[CONTROLLER])}",
        f"  key-value store: {', '.join(other[KV_STORE])}",
        f"  message bus: {', '.join(other[MESSAGE_BUS])}",
        "  (names are case-insensitive; --kind KIND places a component the catalog does not list)",
    ]
    return "\n".join(lines)


def onos_version(version: str) -> str:
    """A version string as the controller reports it: `4.5.0-SNAPSHOT` -> `4.5.0.SNAPSHOT` (split on . and -)."""
    return ".".join(part for part in re.split(r"[.-]", version.strip()) if part)
