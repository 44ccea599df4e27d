"""The OLT's software images: a running and a standby image, a committed flag, the startup configuration, and the
timed download / activate / revert operations that change them (pure model: an injected clock, no I/O).

Nothing is fetched: a download whose URL and name are well-formed is taken as done after its steps (copying, then
installing), each ``step`` seconds on the clock. Activation runs the standby image (the old running one becomes the
standby), reverting does the same towards the standby; the running image's version is what the OLT reports as its
firmware version from then on (``olt.device_info["firmware_version"]``, through ``on_running_changed``). One
operation at a time: a second one is refused while the first runs.

States are reported as DMI's ``ImageStatus.ImageState`` names (plain strings here; the DMI servicer maps them).
"""
from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import urlsplit

from oltsim.logs import logger
from oltsim.model.errors import FailedPrecondition, InvalidArgument

__all__ = ["DEFAULT_RUNNING", "DEFAULT_STANDBY", "DEFAULT_STARTUP_VERSION", "Image", "ImageError",
           "SoftwareImages", "check_url"]

#: BBSim's DMI answers, used when no firmware version is configured
DEFAULT_RUNNING = ("BBSIM-DUMMY-IMAGE-1", "BBSIM-DUMMY-VERSION-1")
DEFAULT_STANDBY = ("BBSIM-DUMMY-IMAGE-2", "BBSIM-DUMMY-VERSION-2")
DEFAULT_STARTUP_VERSION = "BBSIM-STARTUP-CONFIG-DUMMY-VERSION"

#: URL schemes a real OLT fetches images, configurations and debug uploads with
URL_SCHEMES = ("http", "https", "ftp", "sftp", "tftp", "scp")

log = logger("oltsim.model.software")

_SHA256 = re.compile(r"[0-9a-fA-F]{64}")

#: a state report: (DMI ImageState name, description)
Report = Callable[[str, str], None]


@dataclass(frozen=True)
class Image:
    """One software image: its name, version and where it came from."""

    name: str
    version: str
    url: str = ""


class ImageError(InvalidArgument):
    """A download request that cannot be carried out; ``reason`` is DMI's ImageStatus.Reason name."""

    def __init__(self, message: str, reason: str = "ERROR_IN_REQUEST"):
        super().__init__(message)
        self.reason = reason


def check_url(url: str, what: str = "URL", *, file: bool = True) -> None:
    """InvalidArgument unless ``url`` is an absolute URL of a supported scheme with a host (and, if ``file``, a path
    naming a file)."""
    if not url:
        raise InvalidArgument(f"{what} is empty")
    parts = urlsplit(url)
    if parts.scheme.lower() not in URL_SCHEMES:
        raise InvalidArgument(f"{what} {url!r}: the scheme must be one of {', '.join(URL_SCHEMES)}")
    if not parts.hostname:
        raise InvalidArgument(f"{what} {url!r} names no host")
    if file and (not parts.path or parts.path.endswith("/")):
        raise InvalidArgument(f"{what} {url!r} names no file")


class SoftwareImages:
    """The images of one OLT and the operation running on them (``operation``: None, ``download``, ``activate``,
    ``revert``, ``startup-config``), with ``state`` the last reported ImageState name."""

    def __init__(self, clock, *, running: Image, standby: Image | None, step: float = 1.0,
                 on_running_changed: Callable[[Image], None] | None = None):
        self.clock = clock
        self.running = running
        self.standby = standby
        #: False from an activation until its commit step (and for a downloaded image not yet activated)
        self.committed = True
        self.step = step
        self.operation: str | None = None
        self.state = "UNDEFINED_STATE"
        self.startup_config_url = ""
        self.startup_config_version = DEFAULT_STARTUP_VERSION
        self.on_running_changed = on_running_changed
        self._call = None

    @classmethod
    def for_firmware(cls, clock, firmware_version: str, **kwargs) -> SoftwareImages:
        """The images of an OLT configured with ``firmware_version`` (BBSim's dummy images when it is empty)."""
        running = Image("oltsim", firmware_version) if firmware_version else Image(*DEFAULT_RUNNING)
        return cls(clock, running=running, standby=Image(*DEFAULT_STANDBY), **kwargs)

    # ---- operations -----------------------------------------------------------------------

    def download(self, image: Image, report: Report, sha256sum: str = "") -> None:
        """Download ``image`` into the standby partition: COPYING_IMAGE now, INSTALLING_IMAGE after one step,
        UPGRADE_COMPLETE after two (the image is then the standby one, not committed). ImageError for a bad name,
        version, URL or checksum; FailedPrecondition while another operation runs."""
        if not image.name:
            raise ImageError("the image name is empty")
        if not image.version:
            raise ImageError("the image version is empty")
        try:
            check_url(image.url, "image URL")
        except InvalidArgument as exc:
            raise ImageError(exc.message) from None
        if sha256sum and not _SHA256.fullmatch(sha256sum):
            raise ImageError(f"sha256sum {sha256sum!r} is not 64 hexadecimal digits", "WRONG_IMAGE_CHECKSUM")
        self._begin("download")

        def installed():
            self.standby = image
            self.committed = False
            self._finish("UPGRADE_COMPLETE", f"{image.name} {image.version} is the standby image", report)

        self._steps(report, [("COPYING_IMAGE", f"copying {image.url}"),
                             ("INSTALLING_IMAGE", f"installing {image.name} {image.version}")], installed)

    def activate(self, report: Report) -> None:
        """Run the standby image: REBOOTING_DEVICE now, COMMITTING_IMAGE after one step, ACTIVATION_COMPLETE after
        two (running and standby swapped, committed). FailedPrecondition without a standby image or while another
        operation runs."""
        self._swap("activate", report)

    def revert(self, report: Report) -> None:
        """Go back to the standby image (the one that ran before the last activation): the same steps as
        :meth:`activate`."""
        self._swap("revert", report)

    def update_startup_config(self, url: str, report: Report) -> None:
        """Take the startup configuration at ``url``: reported done (``UPGRADE_COMPLETE``) after one step, when its
        version becomes the URL's file name. InvalidArgument for a bad URL; FailedPrecondition while another
        operation runs."""
        check_url(url, "configuration URL")
        self._begin("startup-config")

        def done():
            self.startup_config_url = url
            self.startup_config_version = urlsplit(url).path.rsplit("/", 1)[-1]
            self._finish("UPGRADE_COMPLETE", f"startup configuration {self.startup_config_version}", report)

        self._steps(report, [], done)

    def stop(self) -> None:
        """Abandon the running operation (process or service stop): its timer is cancelled, nothing more is
        reported."""
        if self._call is not None and self._call.active():
            self._call.cancel()
        self._call = None
        self.operation = None

    @property
    def busy(self) -> bool:
        """True while an operation runs."""
        return self.operation is not None

    # ---- internals ------------------------------------------------------------------------

    def _swap(self, operation: str, report: Report) -> None:
        if self.standby is None:
            raise FailedPrecondition("there is no standby image to run")
        self._begin(operation)

        def rebooted():
            self.running, self.standby = self.standby, self.running
            self.committed = False
            if self.on_running_changed is not None:
                self.on_running_changed(self.running)
            self._report("COMMITTING_IMAGE", f"committing {self.running.name} {self.running.version}", report)
            self._later(committed)

        def committed():
            self.committed = True
            self._finish("ACTIVATION_COMPLETE", f"running {self.running.name} {self.running.version}", report)

        self._report("REBOOTING_DEVICE", f"rebooting into {self.standby.name} {self.standby.version}", report)
        self._later(rebooted)

    def _begin(self, operation: str) -> None:
        if self.operation is not None:
            raise FailedPrecondition(f"an image operation is in progress ({self.operation})")
        self.operation = operation

    def _steps(self, report: Report, steps: list[tuple[str, str]], done: Callable[[], None]) -> None:
        """Report each (state, description) one step apart, then call ``done`` one step after the last."""
        if not steps:
            self._later(done)
            return
        state, description = steps[0]
        self._report(state, description, report)
        rest = steps[1:]
        self._later((lambda: self._steps(report, rest, done)) if rest else done)

    def _later(self, fn: Callable[[], None]) -> None:
        self._call = self.clock.callLater(self.step, self._run, fn)

    def _run(self, fn: Callable[[], None]) -> None:
        self._call = None
        try:
            fn()
        except Exception:
            # a report callback that fails must not leave the images busy forever
            log.failure("software-step-failed operation={operation}", operation=self.operation)
            self.operation = None

    def _report(self, state: str, description: str, report: Report) -> None:
        self.state = state
        report(state, description)

    def _finish(self, state: str, description: str, report: Report) -> None:
        self.operation = None
        self._report(state, description, report)
