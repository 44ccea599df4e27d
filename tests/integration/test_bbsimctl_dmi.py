"""`bbsimctl dmi ...` (oltsim's `bbsimctl` console script as a subprocess) against the real daemon at a lab's
numbering: OLT id 10, 2 PONs x 16 ONUs, the built-in adapter bringing every ONU up. The dmi commands call BBSim's
bbsim.BBsim_dmi on the DMI port, as Go bbsimctl 1.16.8 does (it always calls localhost:50075; ours is pointed at
the test's port by BBSIMCTL_DMI_SERVER, or `dmi_server` in ~/.bbsim/config): the transceiver table is Go
bbsimctl's bytes for BBSim at that numbering, a refusal is a `[Status: N]` line with exit 0 as BBSim's answers are,
and a plug-out and plug-in through the CLI change the OLT as the DMI call does.
"""
from __future__ import annotations

import subprocess
import sys
import time

import grpc
import pytest
from dmi import commons_pb2, hw_management_service_pb2_grpc, hw_pb2

from scripted_adapter import free_ports
from test_oltsimctl import CTL_TIMEOUT, REPO, CtlDaemon, ctl, ctl_environment, ok

SHAPE = ("--olt-id", "10", "--pon", "2", "--onu", "16", "--delay", "0", "--adapter", "builtin")
ONUS = 32
READY_TIMEOUT = 120.0
BBSIMCTL = [sys.executable, "-c", "from oltsim.ctl.oltsimctl import run_bbsimctl; run_bbsimctl()"]
#: What Go bbsimctl 1.16.8's `dmi transceiver list` printed against BBSim 1.16.8 run with -olt_id 10 -pon 2
#: (uuid3 of BBSIM_OLT_10-sfp-plus-<n>, the type unknown until the device is managed).
TRANSCEIVERS_BEFORE_MANAGEMENT = (
    "ID    UUID                                    NAME          TECHNOLOGY        PLUGGEDIN    PONIDS\n"
    "0     2d0ab069-f461-34e5-a16a-5ebb1f26b1a7    sfp-plus-0    TYPE_UNDEFINED    true         [0]\n"
    "1     4aa48df7-0098-3065-9206-0d48f4404677    sfp-plus-1    TYPE_UNDEFINED    true         [1]\n")


class Bbsimctl:
    """oltsim's `bbsimctl` run with no option, as scripts run it, told the daemon's ports by the environment."""

    def __init__(self, daemon: CtlDaemon, home):
        self.daemon = daemon
        self.home = home
        self.env = ctl_environment(home, BBSIMCTL_SERVER=daemon.server,
                                   BBSIMCTL_DMI_SERVER=f"127.0.0.1:{daemon.ports['dmi']}")

    def run(self, *arguments: str, env: dict | None = None) -> subprocess.CompletedProcess:
        return subprocess.run([*BBSIMCTL, *arguments], cwd=REPO, env=env or self.env, capture_output=True,
                              text=True, timeout=CTL_TIMEOUT, check=False)

    def output(self, *arguments: str) -> str:
        """What `bbsimctl ARGUMENTS` printed on stdout; it must have exited 0 and said nothing on stderr."""
        result = self.run(*arguments)
        assert (result.returncode, result.stderr) == (0, ""), (arguments, result.returncode, result.stderr)
        return result.stdout


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """The daemon at OLT 10 with its 32 ONUs up (DHCP acked), and the client."""
    home = tmp_path_factory.mktemp("home")
    daemon = CtlDaemon(tmp_path_factory.mktemp("olt"), *SHAPE)
    try:
        daemon.wait_answering(200)
        ready = ok(ctl(daemon, "wait", "--state", "dhcp_ack_received", "--timeout", f"{READY_TIMEOUT:g}", "-q",
                       home=home, timeout=READY_TIMEOUT + CTL_TIMEOUT))
        assert ready == f"{ONUS} of {ONUS} ONUs in dhcp_ack_received\n"
        yield Bbsimctl(daemon, home)
    finally:
        daemon.close()


def start_managing(lab: Bbsimctl) -> None:
    """DMI's StartManagingDevice on the daemon's DMI port, as VOLTHA's device manager calls it."""
    with grpc.insecure_channel(f"127.0.0.1:{lab.daemon.ports['dmi']}") as channel:
        stub = hw_management_service_pb2_grpc.NativeHWManagementServiceStub(channel)
        [answer] = list(stub.StartManagingDevice(hw_pb2.ModifiableComponent(name="olt-10", uri=hw_pb2.Uri(
            uri="127.0.0.1")), timeout=CTL_TIMEOUT))
    assert answer.status == commons_pb2.OK_STATUS, answer


def pon_onu_states(lab: Bbsimctl, pon: int) -> set[str]:
    """The INTERNALSTATE column of `bbsimctl onu list` for the ONUs of PON `pon`."""
    rows = [row.split() for row in lab.output("onu", "list").splitlines()[1:]]
    return {row[4] for row in rows if row[0] == str(pon)}


def wait_pon_onu_states(lab: Bbsimctl, pon: int, states: set[str], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    seen = None
    while time.monotonic() < deadline:
        seen = pon_onu_states(lab, pon)
        if seen == states:
            return
        time.sleep(0.2)
    raise AssertionError(f"the ONUs of PON {pon} are {seen}, not {states}, after {timeout:g} s")


def test_dmi_commands_through_a_device_lifecycle(lab):
    """Before StartManagingDevice: `dmi transceiver list` prints Go bbsimctl's table for BBSim at OLT 10 byte for
    byte, `dmi events create` and `dmi transceiver plug_out` print the refusal `[Status: 14] ...` and exit 0.
    Once managed: EVENT_FAN_FAILURE is sent (`[Status: 0] DMI Event Indication Sent.`), an unknown event answers
    5; `plug_out 1` takes PON 1's 16 ONUs down (pon_disabled) and the list shows it unplugged, a second plug_out
    answers 10, an unknown transceiver 5; `plug_in 1` brings them back. Every line exits 0, as BBSim's answers
    carry the refusal."""
    assert lab.output("dmi", "transceiver", "list") == TRANSCEIVERS_BEFORE_MANAGEMENT
    assert lab.output("dmi", "events", "create", "EVENT_FAN_FAILURE").startswith("[Status: 14] ")
    assert lab.output("dmi", "transceiver", "plug_out", "0").startswith("[Status: 14] ")

    start_managing(lab)
    assert lab.output("dmi", "events", "create", "EVENT_FAN_FAILURE") == "[Status: 0] DMI Event Indication Sent.\n"
    assert lab.output("dmi", "events", "create", "EVENT_NO_SUCH_THING").startswith("[Status: 5] ")

    assert lab.output("dmi", "transceiver", "plug_out", "1") == "[Status: 0] Plugged out transceiver 1\n"
    rows = [row.split() for row in lab.output("dmi", "transceiver", "list").splitlines()[1:]]
    assert [(row[0], row[4], row[5]) for row in rows] == [("0", "true", "[0]"), ("1", "false", "[1]")]
    wait_pon_onu_states(lab, 1, {"pon_disabled"})
    assert pon_onu_states(lab, 0) == {"enabled"}
    assert lab.output("dmi", "transceiver", "plug_out", "1").startswith("[Status: 10] ")
    assert lab.output("dmi", "transceiver", "plug_in", "7").startswith("[Status: 5] ")

    assert lab.output("dmi", "transceiver", "plug_in", "1", "stray") == "[Status: 0] Plugged in transceiver 1\n"
    rows = [row.split() for row in lab.output("dmi", "transceiver", "list").splitlines()[1:]]
    assert [row[4] for row in rows] == ["true", "true"]
    wait_pon_onu_states(lab, 1, {"enabled"}, timeout=60.0)


def test_dmi_server_from_the_config_file(lab, tmp_path):
    """Without BBSIMCTL_DMI_SERVER, `dmi_server` of ~/.bbsim/config names the DMI endpoint."""
    (tmp_path / ".bbsim").mkdir()
    (tmp_path / ".bbsim" / "config").write_text(f"server: {lab.daemon.server}\n"
                                                f"dmi_server: 127.0.0.1:{lab.daemon.ports['dmi']}\n")
    result = lab.run("dmi", "transceiver", "list", env=ctl_environment(tmp_path))
    assert result.returncode == 0, result.stderr
    assert [row.split()[2] for row in result.stdout.splitlines()[1:]] == ["sfp-plus-0", "sfp-plus-1"]


def test_dmi_failures_exit_1(lab):
    """A DMI endpoint with nothing listening and a transceiver id that is not a number fail with exit 1 (one
    line naming the endpoint; a usage error), as Go bbsimctl's do."""
    [closed] = free_ports(1)
    env = dict(lab.env, BBSIMCTL_DMI_SERVER=f"127.0.0.1:{closed}")
    result = lab.run("dmi", "transceiver", "list", env=env)
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr.startswith(f"bbsimctl: cannot connect to 127.0.0.1:{closed}: ") and \
        len(result.stderr.splitlines()) == 1, result.stderr
    result = lab.run("dmi", "transceiver", "plug_in", "abc")
    assert result.returncode == 1 and "TRANSCEIVER_ID" in result.stderr


def test_olt_nnis_has_four_columns(lab):
    """`bbsimctl olt nnis` prints Go bbsimctl's four headers (its rows: ID and OPERSTATE, as Go's) for OLT 10."""
    assert lab.output("olt", "nnis") == (
        "NNI Ports for : BBSIM_OLT_10\n"
        "\n"
        "ID    OPERSTATE    INTERNALSTATE    PACKETCOUNT\n"
        "0     up           \n")


def test_stray_argument_is_ignored(lab):
    """`bbsimctl uni list <sn>` lists every UNI, as Go bbsimctl ignores the word (32 ONUs x 4 UNIs)."""
    rows = lab.output("uni", "list", "BBSM000a0001").splitlines()
    assert rows[0].split() == ["ONUSN", "ONUID", "ID", "MEID", "PORTNO", "OPERSTATE", "TYPE"]
    assert len(rows) == 1 + ONUS * 4
