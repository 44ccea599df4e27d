"""The capture ring's place among the daemon's services: its stop ends the live captures (`Capture.close`)."""
from __future__ import annotations

from twisted.application import service


class CaptureService(service.Service):
    """Ends every live capture stream, told in the stream, when the daemon stops (before its listeners do)."""

    name = "capture"

    def __init__(self, capture):
        self.capture = capture

    def stopService(self):
        self.capture.close("stopped")
        return super().stopService()
