"""oltsim-platform classify: the rules of section 9.2 (and 9.9) against cases taken from the service document."""
import pytest

from oltsim.platform.catalog import UnknownComponent, onos_version
from oltsim.platform.classify import MAJOR, MINOR, NOT_IN_SERVICE, RULES, BadChange, classify

# (component, changes, class, deciding rule, runbook): each row is a sentence of sections 9.2 to 9.9.
CASES = [
    # 9.2 rule 1: minor only for the stack components and the listed controller apps
    ("openonu-adapter", (), MINOR, "9.2 rule 1", "stack-minor"),
    ("openolt-adapter", (), MINOR, "9.2 rule 1", "stack-minor"),
    ("rw-core", (), MINOR, "9.2 rule 1", "stack-minor"),
    ("ofagent", (), MINOR, "9.2 rule 1", "stack-minor"),
    ("sadis", (), MINOR, "9.2 rule 1", "app-minor"),
    ("olt-app", (), MINOR, "9.2 rule 1", "app-minor"),
    ("org.opencord.aaa", (), MINOR, "9.2 rule 1", "app-minor"),
    ("org.opencord.kafka", (), MINOR, "9.2 rule 1", "app-minor"),
    ("dhcpl2relay", (), MINOR, "9.2 rule 1", "app-minor"),
    ("mac-learning", (), MINOR, "9.2 rule 1", "app-minor"),
    ("igmpproxy", (), MINOR, "9.2 rule 1", "app-minor"),
    ("mcast", (), MINOR, "9.2 rule 1", "app-minor"),
    ("org.opencord.olttopology", (), MAJOR, "9.2 rule 1", "controller-major"),
    ("org.onosproject.fwd", (), MAJOR, "9.2 rule 1", "controller-major"),
    ("controller", (), MAJOR, "9.2 rule 1", "controller-major"),
    # 9.2 definition of major: a change in APIs
    ("rw-core", ("proto",), MAJOR, "9.2 major", "stack-major"),
    ("openonu-adapter", ("shared-library",), MAJOR, "9.2 major", "stack-major"),
    ("olt-app", ("rest",), MAJOR, "9.2 major", "controller-major"),
    ("aaa", ("cli",), MAJOR, "9.2 major", "controller-major"),
    ("sadis", ("java-interface",), MAJOR, "9.2 major", "controller-major"),
    ("controller", ("store-version",), MAJOR, "9.2 major", "controller-major"),
    # 9.2 rule 3: store data changes are always major, even for a listed app or a stack component
    ("org.opencord.olt", ("store-data",), MAJOR, "9.2 rule 3", "controller-major"),
    ("rw-core", ("store-data",), MAJOR, "9.2 rule 3", "stack-major"),
    ("controller", ("store-data",), MAJOR, "9.2 rule 3", "controller-major"),
    # 9.2 rules 2 and 4: key-value store and message bus
    ("kv-store", (), MAJOR, "9.2 rule 2", "kv-store"),
    ("etcd", ("store-data",), MAJOR, "9.2 rule 2", "kv-store"),
    ("message-bus", (), NOT_IN_SERVICE, "9.2 rule 4", "message-bus"),
    # 9.9 and the pointer from 9.6: the agent-adapter protocol
    ("olt-agent", (), MINOR, "9.9 minor", "agent-minor"),
    ("olt-agent", ("agent-protocol",), MAJOR, "9.9 major", "agent-major"),
    ("openolt-adapter", ("agent-protocol",), MAJOR, "9.6", "agent-major"),
]


@pytest.mark.parametrize("component, changes, update_class, rule, runbook", CASES,
                         ids=[f"{c}-{'+'.join(ch) or 'bugfix'}" for c, ch, *_ in CASES])
def test_document_cases(component, changes, update_class, rule, runbook):
    """Each case of the document gets its class, the rule that decides it, and the runbook to follow."""
    decision = classify(component, changes)
    assert (decision.update_class, decision.rule, decision.runbook) == (update_class, rule, runbook)
    assert decision.reason and decision.service_impact


def test_message_bus_is_not_major_and_not_in_service():
    """The message-bus update is neither minor nor major: it is done with no service impact (rules 2 and 4)."""
    decision = classify("message-bus")
    assert decision.update_class == NOT_IN_SERVICE and "no service impact" in decision.reason
    assert "not major" in decision.reason and "rule 2" in decision.reason


def test_agent_updates_are_service_impacting_even_when_minor():
    """Both kinds of agent update affect the customer (9.9), whatever the class."""
    assert "service-impacting" in classify("olt-agent").service_impact
    assert "service-impacting" in classify("openolt-adapter", ["agent-protocol"]).service_impact


def test_names_resolve_to_canonical_components():
    """Short names and chart names map to the catalog's names; the answer says which component it decided on."""
    assert classify("olt-app").component == "org.opencord.olt"
    assert classify("mac-learning").component == "org.opencord.maclearner"
    assert classify("voltha-adapter-openonu").component == "openonu-adapter"
    assert classify("etcd").kind == "kv-store"


@pytest.mark.parametrize("component, changes, message", [
    ("kafka", (), "ambiguous"),
    ("rw-core", ("rest",), "does not apply"),
    ("openonu-adapter", ("agent-protocol",), "does not apply"),
    ("message-bus", ("store-data",), "does not apply"),
    ("olt", ("proto-buffers",), "unknown change"),
    ("frobnicator", (), "unknown component"),
])
def test_bad_questions_are_refused_with_a_reason(component, changes, message):
    """Ambiguous names, unknown changes and changes that do not apply to the component are errors, not guesses."""
    with pytest.raises((BadChange, UnknownComponent), match=message):
        classify(component, changes)


def test_kind_option_places_an_unlisted_stack_component():
    """--kind lets an unlisted stack component be classified by the same rules."""
    assert classify("my-adapter", kind="stack-component").update_class == MINOR
    assert classify("my-adapter", ["proto"], kind="stack-component").update_class == MAJOR


def test_rule_table_covers_every_kind_with_a_catch_all():
    """For every kind some rule without conditions exists, so every valid question gets an answer."""
    catch_all = {k for r in RULES if not r.any_change for k in r.kinds}
    assert catch_all == {"stack-component", "controller-app", "controller", "kv-store", "message-bus", "olt-agent"}


@pytest.mark.parametrize("given, reported", [("5.2.8", "5.2.8"), ("4.5.0-SNAPSHOT", "4.5.0.SNAPSHOT"),
                                             ("2.11.0-dev1", "2.11.0.dev1")])
def test_versions_in_the_controllers_form(given, reported):
    """Versions compare in the controller's form, split on dots and dashes."""
    assert onos_version(given) == reported


@pytest.mark.parametrize("name", ["olt", "OLT", "Olt", "olt-agent", "oltsim", "bbsim"])
def test_the_olt_means_the_olt_box_whatever_the_case(name):
    """`olt` (any case) is the OLT, updated through its agent; the controller's olt app is `olt-app`."""
    decision = classify(name)
    assert (decision.kind, decision.component, decision.runbook) == ("olt-agent", "olt-agent", "agent-minor")
    assert classify(name.upper(), ["agent-protocol"]).runbook == "agent-major"


def test_a_change_that_only_fits_the_olt_app_points_at_its_name():
    """`classify olt --change rest` says how to name the controller's olt app instead of guessing."""
    with pytest.raises(BadChange, match="olt-app or org.opencord.olt"):
        classify("olt", ["rest"])


def test_an_unknown_component_lists_the_known_ones_by_kind():
    """The error names every kind with its names, so the operator can pick one."""
    with pytest.raises(UnknownComponent) as info:
        classify("frobnicator")
    message = str(info.value)
    for expected in ("the OLT (its agent): ", "olt-agent", "openolt-adapter", "olt-app", "onos", "etcd",
                     "message-bus", "case-insensitive"):
        assert expected in message
