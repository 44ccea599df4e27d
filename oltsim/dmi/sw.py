"""dmi.NativeSoftwareManagementService over one :class:`oltsim.dmi.device.ManagedDevice` and the OLT's software
images (:mod:`oltsim.model.software`).

The streams report each state of an operation as it happens on the reactor clock (``step`` seconds apart, 1 s by
default) and end with it; a client that leaves does not stop the operation (a real device would not either). Nothing
is downloaded or uploaded: well-formed URLs are taken as reachable. Refusals are answers with DMI's status, reason
and reason_detail (UploadDebugInfoStatus has no reason_detail: its reason says it).
"""
from __future__ import annotations

from typing import Any

import grpc
from dmi import commons_pb2, hw_pb2
from dmi import sw_image_pb2 as si
from dmi import sw_management_service_pb2 as sm

from oltsim.dmi.answers import answer
from oltsim.logs import logger
from oltsim.model.errors import InvalidArgument
from oltsim.model.software import Image, ImageError, check_url
from oltsim.serving.onloop import AsyncStreamQueue

__all__ = ["SoftwareManagementServicer"]

log = logger("oltsim.dmi")

#: states a stream can carry; a few are enough (an operation reports at most four)
_STREAM_BUFFER = 64
_FINAL = {"UPGRADE_COMPLETE", "UPGRADE_FAILED", "ACTIVATION_COMPLETE", "ACTIVATION_FAILED"}


def _imageanswer(state: str, description: str = "", reason: str = "", detail: str = "") -> si.ImageStatus:
    return si.ImageStatus(status=commons_pb2.ERROR_STATUS if reason else commons_pb2.OK_STATUS,
                          state=si.ImageStatus.ImageState.Value(state), description=description,
                          reason=si.ImageStatus.Reason.Value(reason or "UNDEFINED_REASON"), reason_detail=detail)


class SoftwareManagementServicer:
    """The software management RPCs: versions, image download/activate/revert, startup configuration, debug
    upload."""

    def __init__(self, device, *, upload_step: float = 1.0):
        self.device = device
        self.upload_step = upload_step
        self._queues: set[AsyncStreamQueue] = set()
        self._upload_calls: list[Any] = []
        self._uploading = False

    @property
    def software(self):
        """The OLT's software images (oltsim.model.software.SoftwareImages)."""
        return self.device.software

    def close_all(self) -> None:
        """The server is stopping: debug uploads abandoned, every open stream ended (UNAVAILABLE)."""
        for call in self._upload_calls:
            if call.active():
                call.cancel()
        self._upload_calls.clear()
        self._uploading = False
        queues, self._queues = self._queues, set()
        for queue in queues:
            queue.close(grpc.StatusCode.UNAVAILABLE, "oltsim is stopping")

    async def _stream(self, queue: AsyncStreamQueue, context):
        self._queues.add(queue)
        try:
            async for item in queue.items(context):
                yield item
        finally:
            self._queues.discard(queue)

    def _reporter(self, queue: AsyncStreamQueue):
        def report(state: str, description: str) -> None:
            queue.put(_imageanswer(state, description))
            if state in _FINAL:
                queue.close()
        return report

    # ---- versions -------------------------------------------------------------------------

    def GetSoftwareVersion(self, request, context):
        """The running (active) and standby images."""
        refusal = self.device.refusal(request.uuid.uuid)
        if refusal:
            return answer(sm.GetSoftwareVersionInformationResponse, "UNKNOWN_DEVICE", refusal)
        software = self.software
        info = sm.SoftwareVersionInformation(
            active_versions=[si.ImageVersion(image_name=software.running.name, version=software.running.version)],
            standby_versions=[si.ImageVersion(image_name=software.standby.name, version=software.standby.version)]
            if software.standby is not None else [])
        return answer(sm.GetSoftwareVersionInformationResponse, info=info)

    # ---- images ---------------------------------------------------------------------------

    async def DownloadImage(self, request, context):
        """Download an image into the standby partition: COPYING_IMAGE, INSTALLING_IMAGE, UPGRADE_COMPLETE; or one
        UPGRADE_FAILED answer (ERROR_IN_REQUEST, WRONG_IMAGE_CHECKSUM, OPERATION_ALREADY_IN_PROGRESS,
        UNKNOWN_DEVICE) saying why."""
        refusal = self.device.refusal(request.device_uuid.uuid)
        if refusal:
            yield _imageanswer("UPGRADE_FAILED", reason="UNKNOWN_DEVICE", detail=refusal)
            return
        if self.software.busy:
            yield _imageanswer("UPGRADE_FAILED", reason="OPERATION_ALREADY_IN_PROGRESS",
                                detail=f"an image operation is in progress ({self.software.operation})")
            return
        info = request.image_info
        queue = AsyncStreamQueue(_STREAM_BUFFER)
        try:
            self.software.download(Image(info.image.image_name, info.image.version, info.image_url),
                                   self._reporter(queue), sha256sum=info.sha256sum)
        except ImageError as exc:
            yield _imageanswer("UPGRADE_FAILED", reason=exc.reason, detail=exc.message)
            return
        log.info("dmi-image-download name={name} version={version} url={url}", name=info.image.image_name,
                 version=info.image.version, url=info.image_url)
        async for item in self._stream(queue, context):
            yield item

    async def ActivateImage(self, request, context):
        """Run the standby image: REBOOTING_DEVICE, COMMITTING_IMAGE, ACTIVATION_COMPLETE (the OLT's firmware
        version follows); or one ACTIVATION_FAILED answer saying why."""
        async for item in self._swap(request, context, "activate"):
            yield item

    async def RevertToStandbyImage(self, request, context):
        """Go back to the standby image, with the same states as ActivateImage."""
        async for item in self._swap(request, context, "revert"):
            yield item

    async def _swap(self, request, context, operation: str):
        refusal = self.device.refusal(request.uuid.uuid)
        if refusal:
            yield _imageanswer("ACTIVATION_FAILED", reason="UNKNOWN_DEVICE", detail=refusal)
            return
        if self.software.busy:
            yield _imageanswer("ACTIVATION_FAILED", reason="OPERATION_ALREADY_IN_PROGRESS",
                                detail=f"an image operation is in progress ({self.software.operation})")
            return
        if self.software.standby is None:
            yield _imageanswer("ACTIVATION_FAILED", reason="DEVICE_IN_WRONG_STATE",
                                detail="there is no standby image to run")
            return
        queue = AsyncStreamQueue(_STREAM_BUFFER)
        getattr(self.software, operation)(self._reporter(queue))
        log.info("dmi-image-{operation} image={image}", operation=operation, image=self.software.standby.version)
        async for item in self._stream(queue, context):
            yield item

    # ---- startup configuration ------------------------------------------------------------

    async def UpdateStartupConfiguration(self, request, context):
        """Take the startup configuration at ``config_url``: one OK answer once it is applied (one step later), or
        one refusal (UNKNOWN_DEVICE, ERROR_FETCHING_CONFIG for a bad URL, OPERATION_ALREADY_IN_PROGRESS)."""
        refusal = self.device.refusal(request.device_uuid.uuid)
        if refusal:
            yield answer(sm.ConfigResponse, "UNKNOWN_DEVICE", refusal)
            return
        if self.software.busy:
            yield answer(sm.ConfigResponse, "OPERATION_ALREADY_IN_PROGRESS",
                          f"an image operation is in progress ({self.software.operation})")
            return
        queue = AsyncStreamQueue(_STREAM_BUFFER)

        def done(state: str, description: str) -> None:
            queue.put(answer(sm.ConfigResponse))
            queue.close()

        try:
            self.software.update_startup_config(request.config_url, done)
        except InvalidArgument as exc:
            yield answer(sm.ConfigResponse, "ERROR_FETCHING_CONFIG", exc.message)
            return
        async for item in self._stream(queue, context):
            yield item

    def GetStartupConfigurationInfo(self, request, context):
        """The startup configuration's URL and version."""
        refusal = self.device.refusal(request.device_uuid.uuid)
        if refusal:
            return answer(sm.StartupConfigInfoResponse, "UNKNOWN_DEVICE", refusal)
        return answer(sm.StartupConfigInfoResponse, config_url=self.software.startup_config_url,
                       version=self.software.startup_config_version)

    # ---- debug information ----------------------------------------------------------------

    async def UploadDebugInfo(self, request, context):
        """Upload debug information to ``location_url`` (a directory): IN_PROGRESS at 0 and 50 %, then COMPLETE
        with the file name, ``upload_step`` seconds apart; or one ERROR answer (UNKNOWN_DEVICE, ERROR_IN_REQUEST
        for a bad URL, OPERATION_ALREADY_IN_PROGRESS). BBSim panics here and dies."""
        status = sm.UploadDebugInfoStatus
        uuid = hw_pb2.Uuid(uuid=request.device_uuid.uuid)
        if self.device.refusal(request.device_uuid.uuid):
            yield status(device_uuid=uuid, status=status.ERROR, reason=status.UNKNOWN_DEVICE,
                         location_url=request.location_url)
            return
        try:
            check_url(request.location_url, "location URL", file=False)
        except InvalidArgument as exc:
            log.info("dmi-debug-upload-refused reason={reason}", reason=exc.message)
            yield status(device_uuid=uuid, status=status.ERROR, reason=status.ERROR_IN_REQUEST,
                         location_url=request.location_url)
            return
        if self._uploading:
            yield status(device_uuid=uuid, status=status.ERROR, reason=status.OPERATION_ALREADY_IN_PROGRESS,
                         location_url=request.location_url)
            return
        clock = self.device.clock
        file_name = f"{self.device.name}-debug-{int(clock.seconds())}.tar.gz"
        queue = AsyncStreamQueue(_STREAM_BUFFER)
        self._uploading = True

        def progress(percent: int) -> None:
            done = percent >= 100
            queue.put(status(device_uuid=uuid, status=status.COMPLETE if done else status.IN_PROGRESS,
                             percent_uploaded=percent, location_url=request.location_url, file_name=file_name))
            if done:
                self._uploading = False
                self._upload_calls.clear()
                queue.close()

        progress(0)
        self._upload_calls = [clock.callLater(self.upload_step, progress, 50),
                              clock.callLater(2 * self.upload_step, progress, 100)]
        async for item in self._stream(queue, context):
            yield item
