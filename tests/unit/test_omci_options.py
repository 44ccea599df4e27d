"""The OMCI options reach the ONUs through the composition root: `twistd oltsim --omcc-version 160` is the OMCC
version ONU2-G reports over OMCI, and --inject-omci-unknown-me / --inject-omci-unknown-attributes change the MIB
upload (BBSim's -omccVersion, -injectOmciUnknownMe, -injectOmciUnknownAttributes), on an OLT built by makeService."""
from __future__ import annotations

import pytest
from twisted.internet.task import Clock

from oltsim.model import events
from oltsim.omci import codec
from oltsim.omci.wrappers import receive
from oltsim.daemon import OltService
from oltsim.tap import Options, makeService

GET, MIB_RESET, MIB_UPLOAD = 0x49, 0x4F, 0x4D
ONU2_G = 257


class Daemon:
    """makeService's OLT on a fake clock (nothing listens), enabled by an adapter, its first ONU activated."""

    def __init__(self, *arguments: str):
        options = Options()
        options.parseOptions(["--openolt", "tcp:0:interface=127.0.0.1", *arguments])
        self.clock = Clock()
        top = makeService(options, self.clock)
        self.olt = next(child for child in top if isinstance(child, OltService)).olt
        self.seen: list = []
        self.olt.subscribe(self.seen.append)
        self.olt.start()
        self.olt.enable_indication()
        self.clock.advance(1)
        self.onu = self.olt.onus[0]
        self.olt.activate_onu(self.onu.pon.id, self.onu.serial, 1)

    def ask(self, message_type: int, me_class: int, contents: bytes = b"") -> codec.Frame:
        """One OMCI request through the ONU's OMCI handler (as OmciMsgOut hands it over); its single answer."""
        start = len(self.seen)
        receive(self.onu.hub.omci, self.onu, codec.encode(0x0102, message_type, me_class, 0, contents))
        frames = [e.pkt for e in self.seen[start:] if isinstance(e, events.OmciIndication)]
        assert len(frames) == 1, frames
        return codec.parse(frames[0])

    def mib_upload_count(self) -> int:
        """The number of MIB upload-next steps the ONU announces after a MIB reset."""
        self.ask(MIB_RESET, 2)
        return int.from_bytes(self.ask(MIB_UPLOAD, 2).contents[:2], "big")

    def stop(self):
        self.olt.stop()


@pytest.fixture
def daemon_of():
    made = []

    def make(*arguments):
        made.append(Daemon(*arguments))
        return made[-1]
    yield make
    for daemon in made:
        daemon.stop()


def test_omcc_version_option_is_what_onu2g_reports(daemon_of):
    """ONU2-G's OMCC version attribute (Get, mask 0x4000) is 163 by default and 160 with --omcc-version 160."""
    assert daemon_of().ask(GET, ONU2_G, b"\x40\x00").contents[3] == 163
    assert daemon_of("--omcc-version", "160").ask(GET, ONU2_G, b"\x40\x00").contents[3] == 160


def test_inject_options_change_the_mib_upload(daemon_of):
    """--inject-omci-unknown-me adds one MIB upload entry (BBSim's class-37 record); with
    --inject-omci-unknown-attributes as well, ONU2-G's record is replaced by BBSim's raw one (same count)."""
    plain = daemon_of().mib_upload_count()
    assert daemon_of("--inject-omci-unknown-me").mib_upload_count() == plain + 1
    both = daemon_of("--inject-omci-unknown-me", "--inject-omci-unknown-attributes")
    assert both.mib_upload_count() == plain + 1


def test_bbsim_flags_reach_the_same_settings():
    """BBSim's -omccVersion, -injectOmciUnknownMe and -injectOmciUnknownAttributes (the bbsim command) become the
    same twistd options."""
    from oltsim.bbsimcmd import parse, twistd_argv

    argv = twistd_argv(parse(["-omccVersion", "160", "-injectOmciUnknownMe", "-injectOmciUnknownAttributes"]), None)
    assert argv[3:] == ["--omcc-version", "160", "--inject-omci-unknown-me", "--inject-omci-unknown-attributes"]
