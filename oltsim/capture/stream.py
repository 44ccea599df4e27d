"""A live capture's stream (`CaptureStream`, opened by `Capture.open_stream`): the pcapng a reader takes as it
reads, bounded for a reader that does not read."""
from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING, Callable

from oltsim.capture.pcapng import PcapngWriter
from oltsim.capture.records import EVENT, POINT, TIME

if TYPE_CHECKING:
    from oltsim.capture.filters import CaptureFilter
    from oltsim.capture.ring import Capture, Coverage

#: bytes of waiting records a stream writes at a read (its ring's part, written as the reader takes it)
READ_CHUNK = 256 * 1024
#: live records that may wait behind a stream's unread ring part before they are dropped (about 2 MiB of frames)
QUEUE_LIMIT = 8192


class CaptureStream:
    """Live pcapng for one reader (`Capture.open_stream`); lives on the reactor thread.

    `read()` takes the bytes written so far (the Section Header first): the ring's part it was opened with is
    written as it is read, READ_CHUNK at a time, so a reader of the whole ring that does not read holds the ring's
    records, not a copy of them; live frames that come meanwhile wait behind it, QUEUE_LIMIT of them at most.
    `wakeup`, when set, is called with no argument whenever bytes become readable or the stream ends. `ended` is
    None while the stream is live, else why it ended: ``count``, ``duration``, ``closed`` (the reader closed it),
    ``stopped`` (the OLT is stopping, said in a last annotation). A reader that does not read costs at most
    `limit` bytes: beyond, frames are dropped and counted (`dropped`) until it has read half, then an annotation in
    the stream says how many were lost; the OLT never waits. `oltsim.capture.reader.chunks(stream)` is the same as
    an async iterator for a reader on the reactor's asyncio loop."""

    def __init__(self, capture: Capture, capture_filter: CaptureFilter, count: int | None, limit: int):
        self.capture = capture
        self.filter = capture_filter
        self.count = count
        self.limit = limit
        self.frames = 0
        self.dropped = 0
        self.dropping = False
        self.ended: str | None = None
        self.wakeup: Callable[[], None] | None = None
        self._writer = PcapngWriter(capture)
        self._chunks: list[bytes] = [self._writer.header()]
        self._size = len(self._chunks[0])
        self._timer = None
        #: records still to write, in order: the ring's part, then live ones that came while it was not read
        self._backlog: deque = deque()
        self._queued = 0  # how many of the backlog's last records came live
        self._last_note: bytes | None = None  # the end's annotation, written after the backlog
        #: how far back the ring reached when the stream opened (Capture.coverage), for the surfaces' report
        self.coverage: Coverage | None = None

    @property
    def pending(self) -> int:
        """Bytes written and not yet read (more than 0, too, while records wait to be written)."""
        return self._size + (1 if self._backlog else 0)

    def read(self) -> bytes:
        """What was written since the last read, and up to READ_CHUNK of the records waiting (b"" when nothing
        is)."""
        if self._backlog:
            self._fill()
        if not self._chunks:
            return b""
        data = b"".join(self._chunks)
        self._chunks.clear()
        self._size = 0
        return data

    def close(self) -> None:
        """The reader is done: stop following the ring (what is unread stays readable)."""
        self._end("closed")

    # ---- fed by the ring -----------------------------------------------------------------------

    def _offer(self, record: tuple) -> None:
        if not self.capture.keeps(self.filter, record):
            return
        if self._backlog:
            if self._queued >= QUEUE_LIMIT:  # told by an annotation after the ones that waited (see below)
                self.dropping = True
                self.dropped += record[POINT] != EVENT
                return
            self._backlog.append(record)
            self._queued += 1
            return
        if self.dropping:
            if self._size > self.limit // 2:
                self.dropped += record[POINT] != EVENT
                return
            self.dropping = False
            self._push(self._writer.note(record[TIME], f"oltsim dropped {self.dropped} frames here: the "
                                                       f"capture's reader fell {self.limit} bytes behind"))
        elif self._size > self.limit:
            self.dropping = True
            self.dropped += record[POINT] != EVENT
            return
        self._write(record)

    def _fill(self) -> None:
        """Write waiting records until READ_CHUNK bytes are unread, or none waits."""
        backlog = self._backlog
        while backlog and self._size < READ_CHUNK:
            if self.count is not None and self.frames >= self.count:
                backlog.clear()
                break
            self._write(backlog.popleft())
        self._queued = min(self._queued, len(backlog))
        if not backlog and self._last_note is not None:
            note, self._last_note = self._last_note, None
            self._chunks.append(note)
            self._size += len(note)

    def _write(self, record: tuple) -> None:
        self._push(self._writer.block(record))
        if record[POINT] != EVENT:
            self.frames += 1
            if self.count is not None and self.frames >= self.count:
                self._end("count")

    def _push(self, data: bytes) -> None:
        was_empty = not self._chunks
        self._chunks.append(data)
        self._size += len(data)
        if was_empty and self.wakeup is not None:
            self.wakeup()

    def _end(self, reason: str) -> None:
        if self.ended is not None:
            return
        self.ended = reason
        if self in self.capture.streams:
            self.capture.streams.remove(self)
        timer, self._timer = self._timer, None
        if timer is not None and timer.active():
            timer.cancel()
        if reason == "closed":
            self._backlog.clear()  # nobody will read them
        if reason == "stopped":
            note = self._writer.note(self.capture.clock.seconds(), "capture ended: oltsim is stopping")
            if self._backlog:
                self._last_note = note
            else:
                self._chunks.append(note)
                self._size += len(note)
        if self.wakeup is not None:
            self.wakeup()
