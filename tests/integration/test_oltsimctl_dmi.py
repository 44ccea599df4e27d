"""`oltsimctl dmi start|stop|managed` against the real daemon: device management is started and stopped
from the package's own tool (no grpcurl), and a DMI command the device refuses for a precondition exits 1 with one
line saying what to do, where `bbsimctl` keeps Go bbsimctl's `[Status: N]` line and exit 0."""
from __future__ import annotations

import subprocess
import sys

import pytest

from test_oltsimctl import CTL_TIMEOUT, REPO, CtlDaemon, ctl, ctl_environment, ok, refused

SHAPE = ("--pon", "2", "--onu", "1", "--uni", "1", "--delay", "0", "--adapter", "builtin")
BBSIMCTL = [sys.executable, "-c", "from oltsim.ctl.oltsimctl import run_bbsimctl; run_bbsimctl()"]
#: uuid3(Nil, "BBSIM_OLT_0"): the device's UUID at OLT id 0, BBSim's (docs/dmi.md)
DEVICE_UUID = "5295a1d5-a121-372e-b8dc-6f7eda83f0ba"


@pytest.fixture(scope="module")
def olt(tmp_path_factory):
    """The daemon (OLT 0, 2 PONs, the built-in adapter enabling it) and a HOME without client settings."""
    daemon = CtlDaemon(tmp_path_factory.mktemp("olt"), *SHAPE)
    daemon.home = tmp_path_factory.mktemp("home")
    try:
        daemon.wait_serving()
        yield daemon
    finally:
        daemon.close()


def dmi(olt, *arguments: str) -> subprocess.CompletedProcess:
    return ctl(olt, "--dmi-server", f"127.0.0.1:{olt.ports['dmi']}", "dmi", *arguments, home=olt.home)


def test_start_and_stop_device_management_from_oltsimctl(olt):
    """Before `dmi start` a transceiver command is refused on one line naming the way out, exit 1 (bbsimctl: Go's
    `[Status: 14]` line, exit 0); `dmi start` manages the device (its UUID printed), a second start is refused
    (exit 1), `dmi managed` lists it, the transceiver commands then work and a plug-out of a plugged-out
    transceiver is refused (exit 1); `dmi stop` stops it, finding the name itself."""
    line = refused(dmi(olt, "transceiver", "plug_out", "0"), 1)
    assert line == ("oltsimctl: UNAVAILABLE: cannot plug out transceiver 0: device management not started: call "
                    "StartManagingDevice on this DMI endpoint first (oltsimctl dmi start starts it)")
    as_bbsimctl = subprocess.run([*BBSIMCTL, "dmi", "transceiver", "plug_out", "0"], cwd=REPO, capture_output=True,
                                 text=True, timeout=CTL_TIMEOUT, check=False,
                                 env=ctl_environment(olt.home, BBSIMCTL_DMI_SERVER=f"127.0.0.1:{olt.ports['dmi']}"))
    assert (as_bbsimctl.returncode, as_bbsimctl.stderr) == (0, "")
    assert as_bbsimctl.stdout.startswith("[Status: 14] cannot plug out transceiver 0: device management not")
    assert ok(dmi(olt, "managed")) == "no device is managed\n"

    assert ok(dmi(olt, "start")) == f"managing the device as olt (uri 127.0.0.1): uuid {DEVICE_UUID}\n"
    again = refused(dmi(olt, "start", "other"), 1)
    assert again.startswith("oltsimctl: DEVICE_ALREADY_MANAGED: ") and DEVICE_UUID in again
    assert ok(dmi(olt, "managed")) == f"olt\turi 127.0.0.1\tuuid {DEVICE_UUID}\n"

    assert ok(dmi(olt, "transceiver", "plug_out", "1")) == "[Status: 0] Plugged out transceiver 1\n"
    assert refused(dmi(olt, "transceiver", "plug_out", "1"), 1).startswith("oltsimctl: ABORTED: ")
    assert ok(dmi(olt, "transceiver", "plug_in", "1")) == "[Status: 0] Plugged in transceiver 1\n"
    assert ok(dmi(olt, "events", "create", "EVENT_FAN_FAILURE")) == "[Status: 0] DMI Event Indication Sent.\n"

    assert refused(dmi(olt, "stop", "nobody"), 1).startswith("oltsimctl: UNKNOWN_DEVICE: ")
    assert ok(dmi(olt, "stop")) == "stopped managing olt\n"
    assert ok(dmi(olt, "stop")) == "no device is managed\n"
    assert refused(dmi(olt, "events", "create", "EVENT_FAN_FAILURE"), 1).endswith("(oltsimctl dmi start starts it)")


def test_unreachable_dmi_endpoint_is_exit_4(olt):
    """Nothing listening at --dmi-server: one line, exit 4, as for the v1 endpoint."""
    result = ctl(olt, "--dmi-server", "127.0.0.1:1", "--timeout", "3", "dmi", "start", home=olt.home)
    assert refused(result, 4).startswith("oltsimctl: cannot connect to 127.0.0.1:1: ")
