"""Waking the reactor's loop from the native front's dispatch thread without handing the GIL back and forth.

``loop.call_soon_threadsafe`` writes to the loop's self-pipe with ``socket.send``, which releases the GIL for the
system call. The loop, woken by that very write, takes the GIL and runs the batch; the dispatch thread, back from
its write, must then wait for the GIL until the loop lets go of it (a native call that releases it, or the switch
interval), only to return into the front's ``recv_batch_details``, which releases it at once. On one call at a time
(how VOLTHA's adapters send OMCI and flows) that is two GIL hand-offs and two thread switches per call: py-spy
showed the dispatch thread waiting for the GIL at the self-pipe write for most of its samples.

:class:`LoopWaker` is an eventfd (a pipe where there is none) the loop reads (``add_reader``), written through
ctypes' ``PyDLL``, which keeps the GIL for the call: a non-blocking write of 8 bytes is shorter than a GIL
hand-off, and the dispatch thread goes straight back into the front, releasing the GIL where it already would.
"""
from __future__ import annotations

import ctypes
import os
from typing import Any, Callable

__all__ = ["LoopWaker"]

try:
    _libc = ctypes.PyDLL(None)  # calls through PyDLL keep the GIL
    _write = _libc.write
    _write.argtypes = (ctypes.c_int, ctypes.c_char_p, ctypes.c_size_t)
    _write.restype = ctypes.c_ssize_t
except (OSError, AttributeError):  # no C library to call here: os.write (which releases the GIL) does
    _write = None

_ONE = (1).to_bytes(8, "little")  # what an eventfd adds (a pipe just counts bytes)


class LoopWaker:
    """A wake-up from another thread: :meth:`wake` (any thread) makes the loop call ``callback`` (on the loop) once
    for all the wakes before it runs. :meth:`close` on the loop thread, once no thread will wake it again."""

    def __init__(self, loop: Any, callback: Callable[[], None]) -> None:
        self._loop = loop
        self._callback = callback
        if hasattr(os, "eventfd"):
            self._read_fd = self._write_fd = os.eventfd(0, os.EFD_NONBLOCK | os.EFD_CLOEXEC)
        else:
            self._read_fd, self._write_fd = os.pipe()
            os.set_blocking(self._read_fd, False)
            os.set_blocking(self._write_fd, False)
        self._closed = False
        loop.add_reader(self._read_fd, self._readable)

    def wake(self) -> None:
        """Make the loop run the callback soon. A full pipe means a wake-up is already waiting: nothing lost."""
        if self._closed:
            return
        if _write is not None:
            _write(self._write_fd, _ONE, 8)
        else:
            try:
                os.write(self._write_fd, _ONE)
            except BlockingIOError:
                pass

    def _readable(self) -> None:
        try:
            os.read(self._read_fd, 4096)  # an eventfd's count in one read; a pipe's bytes, 4096 at a time
        except BlockingIOError:
            pass
        self._callback()

    def close(self) -> None:
        """Stop watching and release the descriptors (loop thread; the waking thread must be done)."""
        if self._closed:
            return
        self._closed = True
        try:
            self._loop.remove_reader(self._read_fd)
        except Exception:  # the loop is already closed: it watches nothing any more
            pass
        os.close(self._read_fd)
        if self._write_fd != self._read_fd:
            os.close(self._write_fd)
