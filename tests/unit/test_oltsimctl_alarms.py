"""`oltsimctl alarms` over the in-memory commands: the active alarms as a table, `--history`, `--onu`, `-o json`."""

import io
import json

from conftest import Sim
from oltsim.ctl import subcommands as commands
from oltsim.ctl.oltsimctl import build_parser

SN = "BBSM00000001"


class FakeConnection:
    """Answers GetAlarms from a Sim's V1Commands, as the daemon's OltsimServicer does."""

    def __init__(self, sim):
        self.sim = sim

    def call(self, method, request, service="bbsim", timeout=None):
        assert (method, service) == ("GetAlarms", "oltsim")
        return self.sim.commands.GetAlarms(request)


def run(sim, *argv):
    args = build_parser().parse_args(["alarms", *argv])
    out = io.StringIO()
    assert commands.alarms(FakeConnection(sim), args, out) == 0
    return out.getvalue()


def raised_sim():
    sim = Sim()
    sim.bring_up()
    sim.clock.advance(1_700_000_000 - 0.2)
    sim.olt.olt_los("nni", 0, "on")
    sim.olt.onu_alarm(SN, "ONU_ALARM_LOS", "on")
    sim.olt.onu_alarm(SN, "ONU_ALARM_LOS", "off")
    return sim


def test_active_alarms_table():
    """One row per active alarm, oldest first, times in UTC, no ids where they do not apply."""
    assert run(raised_sim()).splitlines() == [
        "SINCE                       KIND    TYPE           ONU_SN    PON    PORT",
        "2023-11-14T22:13:20.000Z    nni     OLT_NNI_LOS                     0",
    ]


def test_history_table_and_onu_filter():
    """`--history` lists raises and clears newest last; `--onu` keeps one ONU's."""
    lines = run(raised_sim(), "--history", "--onu", SN.lower()).splitlines()
    assert [line.split()[1:4] for line in lines[1:]] == [["on", "onu", "ONU_ALARM_LOS"],
                                                           ["off", "onu", "ONU_ALARM_LOS"]]
    assert lines[0].split() == ["AT", "STATUS", "KIND", "TYPE", "ONU_SN", "PON", "PORT"]


def test_json_is_the_rest_shape():
    """`-o json` prints what GET /v1/olt/alarms answers."""
    sim = raised_sim()
    assert json.loads(run(sim, "-o", "json")) == sim.rest.call("GET", "/v1/olt/alarms").json
