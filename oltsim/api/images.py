"""ONU software images on the SADIS port (BBSim's web server): `GET /images/<file>` and `GET /images-count`.

VOLTHA's openonu adapter downloads the image it sends the ONU over OMCI from here, and VOLTHA's upgrade tests
read `/images-count` (`{"requests":N}`) to check that it did. As in BBSim, a request counts when it names a file
that exists (GET or HEAD, counted before the file is sent); refused requests do not count.

Files are served from one folder (`--images-dir`; by default the packaged configs folder) and never from outside
it: a name with an empty, `.` or `..` segment, a backslash or a NUL is refused (400) before the file system is
touched, and a name whose real path (symbolic links resolved) leaves the folder is answered like a missing file
(404), so nothing outside is revealed. Directories are not listed (404). A folder that does not exist is not a
start-up error (a mounted volume may appear later): every image request is then a 404 naming the folder.
Files are streamed by a push producer, never read whole into memory; Range requests get the whole file (200).
"""
from __future__ import annotations

import os
from importlib import resources
from pathlib import Path

from klein import Klein
from twisted.web.server import NOT_DONE_YET
from twisted.web.resource import Resource

from oltsim.api.restkit import Utf8Only, json_response, render_error
from oltsim.logs import logger
from oltsim.model.errors import InvalidArgument, NotFound

log = logger("oltsim.images")

#: BBSim's path prefix and counter path, also what this server claims on a shared listener.
IMAGES_SEGMENT = b"images"
COUNT_SEGMENT = b"images-count"
OCTET_STREAM = "application/octet-stream"


def packaged_images_dir() -> Path:
    """The configs folder shipped inside the oltsim package (the default image folder)."""
    return Path(os.fspath(resources.files("oltsim") / "data" / "configs"))


class ImageServer:
    """The image download server over one folder (instance-bound Klein app).

    `folder` is the image folder; "" or None means the packaged configs folder. `requests` counts the image
    requests served since start, as BBSim's counter.
    """

    app = Klein()

    def __init__(self, folder: str | os.PathLike | None = None):
        self.folder = Path(folder) if folder else packaged_images_dir()
        self.requests = 0

    def resource(self):
        """The twisted.web resource to serve (one per listener), refusing a non-UTF-8 URL as JSON."""
        return Utf8Only(self.app.resource())

    def locate(self, name: str) -> Path:
        """The file `name` designates inside the folder; InvalidArgument for a name that tries to leave it or is
        not a plain relative path, NotFound for anything that is not a regular file inside the folder."""
        segments = name.split("/")
        if (not name or name.startswith("/") or any(s in ("", ".", "..") for s in segments)
                or "\\" in name or "\x00" in name):
            raise InvalidArgument(f"image name {name!r} must be a file name inside the image folder "
                                  "(no empty, '.' or '..' segments, no backslash)")
        if not self.folder.is_dir():
            raise NotFound(f"file-not-found: {name} (the image folder {self.folder} does not exist)")
        root = self.folder.resolve()
        try:
            real = (root / name).resolve(strict=True)
        except (OSError, RuntimeError):          # missing, a symlink loop, a name too long
            real = None
        if real is None or not real.is_relative_to(root) or real == root or not real.is_file():
            raise NotFound(f"file-not-found: no image {name} in the image folder")
        return real

    # ---- routes ----------------------------------------------------------------------------

    @app.route("/images-count", methods=["GET", "HEAD"])
    def get_count(self, request):
        """How many image requests were served (BBSim's `{"requests":N}`)."""
        return json_response(request, 200, {"requests": self.requests})

    @app.route("/images/<path:name>", methods=["GET", "HEAD"])
    def get_image(self, request, name):
        """The image file, streamed as application/octet-stream with its Content-Length."""
        path = self.locate(name)
        file = path.open("rb")
        size = os.fstat(file.fileno()).st_size
        self.requests += 1
        log.info("image-request name={name} count={count}", name=name, count=self.requests)
        return _FileBody(file, size)

    @app.route("/images/", methods=["GET", "HEAD"])
    def get_no_image(self, request):
        """No listing of the folder: the path names no file."""
        raise InvalidArgument("name an image file: GET /images/<file>")

    @app.handle_errors(Exception)
    def errors(self, request, failure):
        return render_error(request, failure, "images")


class _FileBody(Resource):
    """One open image file as a response: Content-Length and application/octet-stream, then the bytes written by
    a push producer in `CHUNK`-byte pieces while the connection takes them (paused when its buffer is full), so a
    large file is never held in memory and nothing waits on a reactor timer. The file is closed when the body
    ends, the client goes away, or the method is HEAD."""

    isLeaf = True
    CHUNK = 64 * 1024

    def __init__(self, file, size: int):
        super().__init__()
        self.file = file
        self.size = size
        self.request = None
        self.paused = False
        self.done = False
        self._pumping = False

    def render(self, request):
        request.setHeader(b"Content-Type", OCTET_STREAM.encode("ascii"))
        request.setHeader(b"Content-Length", str(self.size).encode("ascii"))
        if request.method == b"HEAD":
            self._close()
            return b""
        self.request = request
        request.notifyFinish().addErrback(lambda _: self.stopProducing())
        request.registerProducer(self, True)
        self._pump()
        return NOT_DONE_YET

    def _pump(self) -> None:
        if self._pumping:            # a write resumed us from inside this loop
            return
        self._pumping = True
        try:
            while not self.paused and not self.done:
                data = self.file.read(self.CHUNK)
                if not data:
                    self._close()
                    self.request.unregisterProducer()
                    self.request.finish()
                    return
                self.request.write(data)
        finally:
            self._pumping = False

    def _close(self) -> None:
        self.done = True
        self.file.close()

    # IPushProducer
    def pauseProducing(self):
        self.paused = True

    def resumeProducing(self):
        self.paused = False
        self._pump()

    def stopProducing(self):
        if not self.done:
            self._close()


class ByFirstSegment(Resource):
    """One listener, two apps: requests whose first path segment is one of `segments` go to `claimed`, the rest
    to `other` (both rendered with the full path, as if each were the root)."""

    isLeaf = True

    def __init__(self, claimed, segments, other):
        super().__init__()
        self.claimed = claimed
        self.segments = frozenset(segments)
        self.other = other

    def render(self, request):
        first = request.postpath[0] if request.postpath else b""
        return (self.claimed if first in self.segments else self.other).render(request)


def with_images(other, images: ImageServer) -> Resource:
    """`other` (the SADIS resource) with `images` answering `/images/...` and `/images-count` beside it."""
    return ByFirstSegment(images.resource(), (IMAGES_SEGMENT, COUNT_SEGMENT), other)
