"""The whole ONU upgrade as VOLTHA's openonu adapter runs it (tests/integration/onu_upgrade.py: windows of 32 or 8
sections with AR on each window's last, End with the CRC-32/BZIP2, Get, Activate, reboot, Commit), in memory
against the OMCI responder and the model on a fake clock, with the packaged software image."""
from __future__ import annotations

import random

import pytest
from twisted.internet.task import Clock

from oltsim.api.images import packaged_images_dir
from oltsim.config import load_settings
from oltsim.model import events
from oltsim.model.builder import build_olt
from oltsim.omci import codec
from oltsim.omci.responder import OmciResponder
from oltsim.omci.wrappers import receive
from tests.integration.onu_upgrade import OnuUpgrade, crc32_bzip2

SERIAL = "BBSM00000001"
IMAGE = (packaged_images_dir() / "software-image.img").read_bytes()


class Link:
    """One activated ONU behind a responder: `send` hands it a frame, `receive(tid)` takes its answer."""

    def __init__(self):
        self.clock = Clock()
        self.olt = build_olt(load_settings({"pon": 1, "onu": 1}, None), self.clock, random.Random(0))
        self.answers: dict[int, bytes] = {}
        self.seen: list = []
        self.olt.subscribe(self.listen)
        self.responder = OmciResponder()
        self.responder.attach(self.olt)
        self.olt.start()
        self.olt.enable_indication()
        self.clock.advance(1)
        self.onu = self.olt.activate_onu(0, SERIAL, 1)

    def listen(self, event):
        self.seen.append(event)
        if isinstance(event, events.OmciIndication):
            frame = codec.parse(event.pkt)
            assert frame.tid not in self.answers, f"two answers to tid {frame.tid}"
            self.answers[frame.tid] = event.pkt

    def send(self, frame: bytes) -> None:
        receive(self.responder, self.onu, frame)

    def receive(self, tid: int) -> bytes:
        assert tid in self.answers, f"no answer to tid {tid}"
        return self.answers.pop(tid)

    def fields(self) -> tuple:
        onu = self.onu
        return (onu.state, onu.image_expected_sections, onu.image_received_sections, onu.active_image,
                onu.committed_image)


@pytest.mark.parametrize("extended", [False, True])
def test_download_activate_reboot_commit(extended):
    """Every step answers success with the adapter's expectations: one acknowledged section per window with
    its section number, the new version on the inactive image after End, the ONU rebooted by Activate (down,
    then up by itself after the reboot time) running image 1, and Commit making image 1 active and committed."""
    link = Link()
    upgrade = OnuUpgrade(link.send, link.receive, extended=extended)
    section = 1965 if extended else 31
    sections = -(-len(IMAGE) // section)

    upgrade.download(IMAGE, instance=1)
    assert upgrade.sections_sent == sections
    assert upgrade.windows == -(-sections // (8 if extended else 32))
    assert not link.answers, "sections without AR must not be answered"
    assert link.fields() == ("image_download_completed", sections, sections, 0, 0)
    assert upgrade.get_image(1) == ("BBSM_IMG_00002", 0, 0)
    assert upgrade.get_image(0) == ("BBSM_IMG_00001", 1, 1)

    upgrade.activate(1)
    assert link.fields()[0] == "software_image_activated" and link.onu.active_image == 1
    link.clock.advance(0)                          # the power cycle starts right after the answer
    assert link.onu.state == "disabled"
    link.clock.advance(link.olt.timings.onu_reboot)
    assert link.onu.state == "enabled"
    assert upgrade.get_image(1) == ("BBSM_IMG_00002", 0, 1)
    assert upgrade.get_image(0) == ("BBSM_IMG_00001", 1, 0)

    upgrade.commit(1)
    assert link.fields() == ("software_image_committed", sections, sections, 1, 1)
    assert upgrade.get_image(1) == ("BBSM_IMG_00002", 1, 1)
    assert upgrade.get_image(0) == ("BBSM_IMG_00001", 0, 0)
    link.olt.stop()
    assert link.olt.pending_calls() == 0


def test_crc_is_crc32_bzip2_in_network_order():
    """The End CRC is CRC-32/BZIP2 (check value 0xFC891918 for "123456789"), which is crc32a's value byte-swapped,
    as the adapter sends it; a CRC in the other byte order is refused."""
    assert crc32_bzip2(b"123456789") == 0xFC891918
    link = Link()
    upgrade = OnuUpgrade(link.send, link.receive)
    swapped = int.from_bytes(crc32_bzip2(IMAGE).to_bytes(4, "big"), "little")
    original = crc32_bzip2
    try:
        import tests.integration.onu_upgrade as driver
        driver.crc32_bzip2 = lambda data: swapped
        with pytest.raises(AssertionError, match="End Software Download refused"):
            upgrade.download(IMAGE)
    finally:
        driver.crc32_bzip2 = original
    assert link.onu.state == "image_download_error"
