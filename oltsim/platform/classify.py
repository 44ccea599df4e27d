"""Update classes of the service document, section 9.2 (and 9.9 for the OLT agent), as an ordered rule table.

`classify(component, changes)` answers minor, major or not-in-service and names the rule that decided it, with
the runbook (`plan`) that carries the update out. The first matching rule decides; the order encodes the
document's precedence: the special cases of the key-value store and the message bus first, then the agent,
then "store data is always major", API changes, and last the list of components that may be updated in service.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass

from oltsim.platform import catalog
from oltsim.platform.catalog import APP, CONTROLLER, KV_STORE, MESSAGE_BUS, OLT_AGENT, STACK

MINOR = "minor"
MAJOR = "major"
NOT_IN_SERVICE = "not-in-service"

CHANGES = {
    "proto": "RPC protocol definitions (protos) of the abstraction stack",
    "shared-library": "shared library of the abstraction stack (voltha-lib-go)",
    "java-interface": "Java interfaces of the controller or of its apps",
    "cli": "CLI commands of the controller or of its apps",
    "rest": "REST APIs of the controller or of its apps",
    "store-data": "format of data held in a store (stack key-value store, controller distributed store)",
    "store-version": "version of the controller's distributed store",
    "agent-protocol": "agent-adapter protocol definition (openolt.proto)",
}

# Which changes make sense for which kind of component; anything else is a usage error, not a guess.
VALID_CHANGES = {
    STACK: frozenset({"proto", "shared-library", "store-data", "agent-protocol"}),
    APP: frozenset({"java-interface", "cli", "rest", "store-data"}),
    CONTROLLER: frozenset({"java-interface", "cli", "rest", "store-data", "store-version"}),
    KV_STORE: frozenset({"store-data", "store-version"}),
    MESSAGE_BUS: frozenset(),
    OLT_AGENT: frozenset({"agent-protocol"}),
}

IMPACT = {
    MINOR: "none for the data plane of existing subscribers (no provisioning calls during the update)",
    MAJOR: "maintenance window; the subscriber data plane is interrupted",
    NOT_IN_SERVICE: "none expected; the component is replaced, not updated in service",
}
AGENT_IMPACT = "service-impacting for the customer: the stack sees an OLT reboot"


@dataclass(frozen=True)
class Rule:
    """One row of the rule table: where it applies, what it decides, and the document's words for it."""

    rule: str                       # the rule's name in the document
    text: str                       # what the document says
    kinds: frozenset                # component kinds it applies to
    result: str                     # minor, major or not-in-service
    runbook: str                    # `plan` runbook id
    any_change: frozenset = frozenset()  # fires only if one of these changes is present (empty: always)
    listed: bool | None = None      # for controller apps: fires only if 9.2 rule 1 lists (True) / omits (False) it


RULES: tuple[Rule, ...] = (
    Rule("9.2 rule 2", "No in-service update is supported for the key-value store; replacing it deletes its data, "
         "so section 9.8 treats it as a major update.", frozenset({KV_STORE}), MAJOR, "kv-store"),
    Rule("9.2 rule 4", "The message-bus update is not major: it is done with no service impact (and, by rule 2, "
         "not as an in-service update: a new bus is deployed and the stack pointed at it, 9.8).",
         frozenset({MESSAGE_BUS}), NOT_IN_SERVICE, "message-bus"),
    Rule("9.9 major", "The agent-adapter protocol definition changed: major OLT-agent update.",
         frozenset({OLT_AGENT}), MAJOR, "agent-major", frozenset({"agent-protocol"})),
    Rule("9.9 minor", "No change to the agent-adapter protocol definition in either component: minor OLT-agent "
         "update.", frozenset({OLT_AGENT}), MINOR, "agent-minor"),
    Rule("9.6", "If the API change is between the OLT adapter and the agent on the OLT hardware, use 9.9 (major "
         "agent update).", frozenset({STACK}), MAJOR, "agent-major", frozenset({"agent-protocol"})),
    Rule("9.2 rule 3", "Changes to data structures in the stores are always major.",
         frozenset({STACK}), MAJOR, "stack-major", frozenset({"store-data"})),
    Rule("9.2 rule 3", "Changes to data structures in the stores are always major.",
         frozenset({APP, CONTROLLER}), MAJOR, "controller-major", frozenset({"store-data"})),
    Rule("9.2 major", "A version change of the controller's distributed store is a major update (9.7).",
         frozenset({CONTROLLER}), MAJOR, "controller-major", frozenset({"store-version"})),
    Rule("9.2 major", "Change in APIs: the RPC protocol definitions or the shared library of the stack changed.",
         frozenset({STACK}), MAJOR, "stack-major", frozenset({"proto", "shared-library"})),
    Rule("9.2 major", "Change in APIs: Java interfaces, CLI commands or REST APIs of the controller or its apps "
         "changed.", frozenset({APP, CONTROLLER}), MAJOR, "controller-major",
         frozenset({"java-interface", "cli", "rest"})),
    Rule("9.2 rule 1", "Minor update is supported only for the abstraction-stack components and for the listed "
         "controller apps; the controller itself is updated by moving to a new cluster (9.7).",
         frozenset({CONTROLLER}), MAJOR, "controller-major"),
    Rule("9.2 rule 1", "Minor update is supported only for sadis, olt, aaa, the message-bus app, dhcpl2relay, "
         "mac-learning, igmpproxy and mcast; any other controller app is updated as a major update (9.7).",
         frozenset({APP}), MAJOR, "controller-major", listed=False),
    Rule("9.2 rule 1", "No API change and an abstraction-stack component: minor update (9.3).",
         frozenset({STACK}), MINOR, "stack-minor"),
    Rule("9.2 rule 1", "No API change and a listed controller app: minor update (9.4).",
         frozenset({APP}), MINOR, "app-minor", listed=True),
)


@dataclass(frozen=True)
class Decision:
    """The answer of `classify`: the class, the rule that decided it and the runbook to follow."""

    component: str
    kind: str
    changes: tuple[str, ...]
    update_class: str
    rule: str
    reason: str
    runbook: str
    service_impact: str

    def as_dict(self) -> dict:
        """The decision as a JSON-ready dict."""
        return asdict(self)

    def text(self) -> str:
        """The decision for people, a few lines."""
        changed = ", ".join(self.changes) if self.changes else "no API or data change (bug fix)"
        return (f"{self.component} ({self.kind}): {self.update_class}\n"
                f"  changes: {changed}\n"
                f"  rule:    {self.rule}: {self.reason}\n"
                f"  runbook: {self.runbook} (oltsim-platform plan {self.runbook})\n"
                f"  impact:  {self.service_impact}\n")


class BadChange(ValueError):
    """A change the rules do not know, or one that does not apply to the component."""


def classify(component: str, changes=(), kind: str | None = None) -> Decision:
    """Classify an update of `component` with the given `changes` (keys of CHANGES) by the first matching rule."""
    kind, name = catalog.resolve(component, kind)
    changes = tuple(sorted(set(changes)))
    unknown = [c for c in changes if c not in CHANGES]
    if unknown:
        raise BadChange(f"unknown change {', '.join(unknown)}; changes are {', '.join(CHANGES)}")
    invalid = [c for c in changes if c not in VALID_CHANGES[kind]]
    if kind == STACK and "agent-protocol" in changes and name != "openolt-adapter":
        invalid.append("agent-protocol")
    if invalid:
        allowed = ", ".join(sorted(VALID_CHANGES[kind])) or "none"
        hint = ("; for the controller's olt app, say olt-app or org.opencord.olt"
                if kind == OLT_AGENT and component.strip().lower() == "olt" else "")
        raise BadChange(f"{', '.join(sorted(set(invalid)))} does not apply to {name} ({kind}); "
                        f"changes that apply: {allowed}{hint}")
    app = catalog.CONTROLLER_APPS.get(name)
    listed = bool(app and app.minor_supported)
    for rule in RULES:
        if kind not in rule.kinds:
            continue
        if rule.any_change and not rule.any_change.intersection(changes):
            continue
        if rule.listed is not None and rule.listed != listed:
            continue
        impact = AGENT_IMPACT if kind == OLT_AGENT or rule.runbook.startswith("agent-") else IMPACT[rule.result]
        return Decision(name, kind, changes, rule.result, rule.rule, rule.text, rule.runbook, impact)
    raise AssertionError(f"no rule for {kind} {changes}")  # the table ends with a catch-all per kind
