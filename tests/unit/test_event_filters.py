"""Event filters say when they name nothing: an unknown event type or ONU is refused with one line and a
"did you mean" on the event bus, REST `GET /v1/events`, gRPC StreamEvents, the alarms' ONU filter and oltsimctl;
an accepted filter that matched nothing yet is told once by oltsimctl; `oltsimctl events` without a filter asks for
state, alarm and scenario events only; a reader that fell behind is told once per gap what it lost; port-stats
records name their port; /ui hides OMCI frames as oltsimctl does."""
from __future__ import annotations

import io
import json
import types

import grpc
import pytest

from conftest import Aborted, FakeContext, Rest, Sim, stream_now
from oltsim._proto import oltsim_pb2, oltsim_pb2_grpc
from oltsim.api import ui
from oltsim.api.eventbus import EventBus, to_record
from oltsim.api.eventtypes import CHATTY_TYPES, DEFAULT_TYPES, check_types, unknown_type
from oltsim.api.v1.grpc_v1 import OltsimServicer
from oltsim.api.v1.rest_v1 import V1Rest
from oltsim.ctl import watch
from oltsim.ctl.connection import EXIT_USAGE, CtlError
from oltsim.model import events
from oltsim.model.alarms import NNI_PORT_BASE, PON_PORT_BASE
from oltsim.model.errors import InvalidArgument, NotFound
from oltsim.serving.onloop import on_loop


@pytest.fixture
def sim():
    made = Sim()
    made.bus = EventBus(made.olt, made.clock)
    return made


def test_an_unknown_type_is_one_line_with_the_nearest_or_the_list():
    """A misspelt type names the nearest one; a type like none lists them all; good types pass, commas and blanks
    aside."""
    assert unknown_type("onu-state-change") == "unknown event type 'onu-state-change'; did you mean onu-state-changed?"
    assert unknown_type("nonsense").startswith("unknown event type 'nonsense'; the types are olt-state-changed, ")
    assert check_types([" alarm", "", "port-stats"]) == ["alarm", "port-stats"]
    with pytest.raises(ValueError, match="did you mean alarm\\?"):
        check_types(["alarn"])


def test_the_bus_refuses_an_unknown_type_or_onu(sim):
    """Subscribing with a type that is none is InvalidArgument; with a serial the OLT lacks, NotFound naming the
    nearest; a serial in either case is accepted."""
    with pytest.raises(InvalidArgument, match="did you mean onu-state-changed"):
        sim.bus.subscribe(lambda record: True, types=["onu-state-change"])
    serial = sim.olt.onus[1].serial
    with pytest.raises(NotFound, match=f"did you mean {serial}\\?"):
        sim.bus.subscribe(lambda record: True, onu_serial=serial + "1")
    assert sim.bus.subscriptions == []
    sim.bus.subscribe(lambda record: True, types=["alarm"], onu_serial=serial.lower())
    assert len(sim.bus.subscriptions) == 1


def test_rest_events_answers_400_and_404_in_one_line(sim):
    """GET /v1/events?types=nonsense is 400 and an unknown onu_serial 404, each one line, no stream opened."""
    rest = Rest(V1Rest(sim.commands, bus=sim.bus).resource())
    reply = rest.call("GET", "/v1/events?types=alarm,onu-state-change")
    assert reply.code == 400 and reply.json["message"] == ("unknown event type 'onu-state-change'; did you mean "
                                                          "onu-state-changed?")
    reply = rest.call("GET", "/v1/events?onu_serial=BBSM0000001")
    assert reply.code == 404 and "did you mean BBSM00000001?" in reply.json["message"]
    assert "\n" not in reply.json["message"] and sim.bus.subscriptions == []


def test_grpc_stream_events_refuses_an_unknown_type_or_onu(sim):
    """StreamEvents with a type that is none is INVALID_ARGUMENT, with an unknown ONU NOT_FOUND, both naming the
    nearest."""
    servicer = on_loop(OltsimServicer(sim.bus, commands=sim.commands), oltsim_pb2_grpc.OltsimServicer)
    with pytest.raises(Aborted) as refused:
        stream_now(servicer.StreamEvents(oltsim_pb2.EventFilter(types=["alarms"]), FakeContext()))
    assert refused.value.code == grpc.StatusCode.INVALID_ARGUMENT and "did you mean alarm?" in refused.value.details
    with pytest.raises(Aborted) as refused:
        stream_now(servicer.StreamEvents(oltsim_pb2.EventFilter(onu_serial="BBSM00000003"), FakeContext()))
    assert refused.value.code == grpc.StatusCode.NOT_FOUND and "did you mean" in refused.value.details


def test_the_alarms_onu_filter_names_the_nearest_serial(sim):
    """GET /v1/olt/alarms?onu_serial= with a serial the OLT lacks: 404 naming the nearest."""
    with pytest.raises(NotFound, match="did you mean BBSM00000101\\?"):
        sim.commands.GetAlarms(oltsim_pb2.AlarmFilter(onu_serial="BBSM0000101"))


def test_a_gap_is_reported_once_with_what_it_lost(sim):
    """A reader that could not take 3 events gets, on the next it takes, dropped=3, and 0 on the ones after."""
    taken, room = [], {"left": 0}

    def deliver(record) -> bool:
        if room["left"] <= 0:
            room["left"] += 1
            return False
        taken.append(record["dropped"])
        return True

    sim.bus.subscribe(deliver, types=["pon-state-changed"])
    room["left"] = -2  # the first three are refused
    for _ in range(6):
        sim.olt.emit(events.StateChanged("pon", "OperState", "down", "up", pon_id=0))
        room["left"] = max(room["left"], 1) if room["left"] > 0 else room["left"]
    assert taken == [3, 0, 0]


def test_port_stats_records_name_their_port_not_a_pon_id(sim):
    """port-stats: intf_id is the OpenOLT port number; the record names the port (pon-1, nni-0) and carries the
    PON id for a PON's statistics only."""
    pon = to_record(sim.olt, events.PortStats(PON_PORT_BASE + 1, 5, 9), 1, 0.0)
    nni = to_record(sim.olt, events.PortStats(NNI_PORT_BASE, 7, 9), 2, 0.0)
    assert (pon["pon_id"], pon["details"]["port"], pon["details"]["intf_id"]) == (1, "pon-1", str(PON_PORT_BASE + 1))
    assert (nni["pon_id"], nni["details"]["port"], nni["details"]["intf_id"]) == (-1, "nni-0", str(NNI_PORT_BASE))


def _args(**given):
    values = dict(types=None, all=False, onu=None)
    values.update(given)
    return types.SimpleNamespace(**values)


def test_oltsimctl_events_checks_its_types_and_defaults_to_what_its_help_says():
    """--type with a type that is none is a usage error naming the nearest; comma-separated types are split; no
    filter asks for state, alarm and scenario events, not the adapter's requests, MIB uploads or flows."""
    with pytest.raises(CtlError) as refused:
        watch.event_types(_args(types=["onu-state-change"]))
    assert refused.value.code == EXIT_USAGE
    assert str(refused.value) == "--type: unknown event type 'onu-state-change'; did you mean onu-state-changed?"
    assert watch.event_types(_args(types=["alarm,onu-state-changed"])) == ["alarm", "onu-state-changed"]
    default = watch.event_types(_args())
    assert default == list(DEFAULT_TYPES) and "onu-state-changed" in default and "scenario-ended" in default
    assert not {"openolt-request", "mib-upload", "flow-added", "omci-indication"} & set(default)
    assert watch.event_types(_args(all=True)) == []


def test_oltsimctl_events_tells_once_that_a_filter_matched_nothing_yet():
    """A filtered `events` that printed nothing after the notice's delay says so once; one that printed, or one
    without a filter, says nothing."""
    err = io.StringIO()
    notice = watch.QuietNotice(_args(types=["alarm"], onu="BBSM00000001"), err, after=0.01)
    notice.timer.join(5)
    assert err.getvalue() == ("oltsimctl: no event matched --type alarm --onu BBSM00000001 yet (the filter is "
                              "valid; waiting, Ctrl-C ends)\n")
    quiet = io.StringIO()
    printed = watch.QuietNotice(_args(types=["alarm"]), quiet, after=0.01)
    printed.printed = 1
    printed.timer.join(5)
    assert quiet.getvalue() == "" and watch.QuietNotice(_args(), quiet).timer is None


def test_an_unknown_state_names_the_nearest():
    """`wait --state` with a misspelt state names the nearest, then the known ones."""
    with pytest.raises(CtlError, match="unknown state 'dhcp_ack_recieved'; did you mean dhcp_ack_received\\?; known"):
        watch.StateCheck("dhcp_ack_recieved")


def test_ui_hides_the_chatty_types_as_oltsimctl_does():
    """The page's hidden types are eventtypes.CHATTY_TYPES, OMCI frames included."""
    body = ui.page()[0].decode()
    marker = '<script id="hidden-types" type="application/json">'
    hidden = json.loads(body.split(marker, 1)[1].split("</script>", 1)[0])
    assert hidden == list(CHATTY_TYPES) and "omci-indication" in hidden


def test_v0s_state_filters_name_the_nearest_state():
    """The legacy API's oper_state/onu_state filters refuse an unknown value with the values and the nearest one."""
    from oltsim.api.v0.usecases_v0 import _one_of
    with pytest.raises(InvalidArgument, match=r"onu_state must be one of .* \(got 'enabld'\); did you mean enabled\?"):
        _one_of("enabld", ["disabled", "enabled"], "onu_state")
