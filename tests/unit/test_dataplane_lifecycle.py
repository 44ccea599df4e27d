"""The data plane's life around its frames, in memory: what `oltsimctl dataplane` shows of each attachment (its kind,
VNI and remote), what is counted rather than lost (frames with no NNI interface to leave by, broadcasts no bound UNI
takes, UplinkPacketOuts the decoder rejects), the protocol engine's hooks removed at stop, a namespace left by a killed
run taken over, and the one line a private mount namespace (`ip netns exec`) gets at start."""
from __future__ import annotations

import io
import json
from types import SimpleNamespace

from oltsim._proto import oltsim_pb2
from oltsim.ctl import subcommands


class Connection:
    """The GetDataPlane call of oltsimctl's connection, answering `document`."""

    def __init__(self, document):
        self.document = document

    def call(self, method, request, service="bbsim", timeout=None):
        assert (method, service) == ("GetDataPlane", "oltsim")
        return oltsim_pb2.DataPlaneCounters(json=json.dumps(self.document))


def test_oltsimctl_dataplane_shows_each_attachments_kind_vni_and_remote():
    """Each interface row names its kind; a VXLAN attachment's its VNI and remote, `(learned)` after a learned one,
    `-` while it has none; a TAP's VNI and remote are `-`."""
    counts = {"rx_frames": 3, "tx_frames": 1, "queued": 0, "dropped": {}}
    document = {"unis": {}, "flows": {}, "interfaces": {
        "u0-1-0": {"kind": "vxlan", "vni": 1000, "remote": "192.0.2.7", "remote_learned": True, **counts},
        "nni": {"kind": "vxlan", "vni": 1, "remote": "198.51.100.1", "remote_learned": False, **counts},
        "nniu": {"kind": "vxlan", "vni": 2, "remote": None, "remote_learned": False, **counts},
        "tapu": {"kind": "tap", **counts}}}
    out = io.StringIO()
    assert subcommands.dataplane(Connection(document), SimpleNamespace(output=None), out) == 0
    rows = {line.split()[0]: line.split() for line in out.getvalue().splitlines() if line.strip()}
    assert rows["INTERFACE"] == ["INTERFACE", "KIND", "VNI", "REMOTE", "READ", "WRITTEN", "QUEUED", "DROPPED"]
    assert rows["u0-1-0"] == ["u0-1-0", "vxlan", "1000", "192.0.2.7(learned)", "3", "1", "0", "-"]
    assert rows["nni"][:4] == ["nni", "vxlan", "1", "198.51.100.1"]
    assert rows["nniu"][:4] == ["nniu", "vxlan", "2", "-"]
    assert rows["tapu"][:4] == ["tapu", "tap", "-", "-"]
