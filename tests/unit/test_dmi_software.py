"""The OLT's software images (oltsim.model.software) on a fake clock: download, activate, revert and the startup
configuration step through their states, refuse bad requests and a second operation, and leave no timer at stop."""
from __future__ import annotations

import pytest
from twisted.internet.task import Clock

from oltsim.model.errors import FailedPrecondition, InvalidArgument
from oltsim.model.software import (
    DEFAULT_RUNNING,
    DEFAULT_STANDBY,
    Image,
    ImageError,
    SoftwareImages,
)


def images(**kwargs):
    clock = Clock()
    return clock, SoftwareImages.for_firmware(clock, "", **kwargs)


def test_download_steps_through_its_states_into_the_standby_partition():
    """COPYING_IMAGE at once, INSTALLING_IMAGE one step later, UPGRADE_COMPLETE after two: the image is then the
    standby one, not committed, and the running image is unchanged."""
    clock, software = images()
    seen = []
    software.download(Image("olt", "2.0", "http://images/olt.bin"), lambda s, d: seen.append(s))
    assert seen == ["COPYING_IMAGE"] and software.busy
    clock.advance(1)
    assert seen == ["COPYING_IMAGE", "INSTALLING_IMAGE"]
    clock.advance(1)
    assert seen[-1] == "UPGRADE_COMPLETE" and not software.busy
    assert (software.standby.version, software.running.version, software.committed) == (
        "2.0", DEFAULT_RUNNING[1], False)


def test_activation_swaps_the_images_and_reports_the_new_running_one():
    """REBOOTING_DEVICE, COMMITTING_IMAGE then ACTIVATION_COMPLETE; the standby runs, the old running image becomes
    the standby, on_running_changed hears of it and the image is committed at the end."""
    running = []
    clock, software = images(on_running_changed=running.append)
    seen = []
    software.activate(lambda s, d: seen.append(s))
    clock.advance(1)
    assert seen == ["REBOOTING_DEVICE", "COMMITTING_IMAGE"] and not software.committed
    clock.advance(1)
    assert seen[-1] == "ACTIVATION_COMPLETE" and software.committed
    assert (software.running.version, software.standby.version) == (DEFAULT_STANDBY[1], DEFAULT_RUNNING[1])
    assert [image.version for image in running] == [DEFAULT_STANDBY[1]]
    software.revert(lambda s, d: None)
    clock.advance(2)
    assert software.running.version == DEFAULT_RUNNING[1]


@pytest.mark.parametrize("image, sha, reason, words", [
    (Image("", "1", "http://h/f"), "", "ERROR_IN_REQUEST", "name is empty"),
    (Image("n", "", "http://h/f"), "", "ERROR_IN_REQUEST", "version is empty"),
    (Image("n", "1", "gopher://h/f"), "", "ERROR_IN_REQUEST", "scheme"),
    (Image("n", "1", "http:///f"), "", "ERROR_IN_REQUEST", "no host"),
    (Image("n", "1", "http://h/dir/"), "", "ERROR_IN_REQUEST", "no file"),
    (Image("n", "1", "http://h/f"), "abc", "WRONG_IMAGE_CHECKSUM", "64 hexadecimal"),
])
def test_bad_downloads_are_refused_with_a_reason(image, sha, reason, words):
    """A download with a missing name or version, an unusable URL or a malformed checksum is refused at once, with
    DMI's reason and a message saying what is wrong; nothing starts."""
    clock, software = images()
    with pytest.raises(ImageError) as info:
        software.download(image, lambda s, d: None, sha256sum=sha)
    assert info.value.reason == reason and words in info.value.message
    assert not software.busy and clock.getDelayedCalls() == []


def test_one_operation_at_a_time():
    """While a download runs, another download, an activation or a configuration update is refused."""
    clock, software = images()
    software.download(Image("n", "1", "http://h/f"), lambda s, d: None)
    for start in (lambda: software.download(Image("m", "2", "http://h/g"), lambda s, d: None),
                  lambda: software.activate(lambda s, d: None),
                  lambda: software.update_startup_config("tftp://h/c.cfg", lambda s, d: None)):
        with pytest.raises(FailedPrecondition, match="in progress"):
            start()


def test_activation_needs_a_standby_image():
    """Without a standby image there is nothing to activate."""
    clock = Clock()
    software = SoftwareImages(clock, running=Image("a", "1"), standby=None)
    with pytest.raises(FailedPrecondition, match="no standby image"):
        software.activate(lambda s, d: None)


def test_startup_configuration_takes_the_file_name_as_version():
    """A configuration URL is applied one step later; its file name becomes the version; a bad URL is refused."""
    clock, software = images()
    with pytest.raises(InvalidArgument):
        software.update_startup_config("configs/olt.cfg", lambda s, d: None)
    seen = []
    software.update_startup_config("tftp://configs/olt-3.cfg", lambda s, d: seen.append(s))
    assert seen == []
    clock.advance(1)
    assert seen == ["UPGRADE_COMPLETE"]
    assert (software.startup_config_url, software.startup_config_version) == ("tftp://configs/olt-3.cfg",
                                                                              "olt-3.cfg")


def test_stop_cancels_the_running_operation():
    """Stopping mid-download leaves no delayed call and no busy state; nothing more is reported."""
    clock, software = images()
    seen = []
    software.download(Image("n", "1", "http://h/f"), lambda s, d: seen.append(s))
    software.stop()
    assert clock.getDelayedCalls() == [] and not software.busy
    clock.advance(5)
    assert seen == ["COPYING_IMAGE"]


def test_a_failing_report_does_not_leave_the_images_busy():
    """A report callback that raises is logged; the images accept the next operation."""
    clock, software = images()

    def report(state, description):
        if state == "INSTALLING_IMAGE":
            raise RuntimeError("reader gone")

    software.download(Image("n", "1", "http://h/f"), report)
    clock.advance(1)
    assert not software.busy
    software.activate(lambda s, d: None)
