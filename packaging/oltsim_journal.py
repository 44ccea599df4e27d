"""twistd log observer for oltsim under systemd: one JSON object per line on standard output, for the journal.

The .deb installs this module into the venv's site-packages and its unit runs
``twistd --logger oltsim_journal.json_observer ...``. It lives outside the ``oltsim`` package because only the
packaged service wants it; on a terminal twistd's default text observer stays the better choice.
"""
import os
import sys

from twisted.logger import FileLogObserver, LogLevel, eventAsJSON

# syslog priorities, which the journal reads from a "<N>" line prefix and then strips (sd-daemon(3)).
_PRIORITIES = {LogLevel.debug: 7, LogLevel.info: 6, LogLevel.warn: 4, LogLevel.error: 3, LogLevel.critical: 2}


def json_observer():
    """A log observer writing each event as one line of JSON (Twisted's ``eventAsJSON``) to standard output.

    twistd calls this before it redirects standard output into the log system, so the observer holds the real
    stream. When that stream is the journal (systemd's ``JOURNAL_STREAM`` names it), each line starts with the
    event's syslog priority as ``<N>``, which the journal turns into the entry's PRIORITY and removes, so the
    stored message is plain JSON and ``journalctl -p warning`` filters by level. There is no record separator
    (Twisted's default is ASCII RS) because the journal stores a line holding a control character as a binary
    blob that ``journalctl`` does not show. The observer flushes after every event.
    """
    stream = sys.stdout
    if _is_journal(stream):
        def line(event):
            return f"<{_PRIORITIES.get(event.get('log_level'), 6)}>{eventAsJSON(event)}\n"
    else:
        def line(event):
            return f"{eventAsJSON(event)}\n"
    return FileLogObserver(stream, line)


def _is_journal(stream) -> bool:
    """Whether ``stream`` is the journal's socket: its device and inode are those of ``$JOURNAL_STREAM``."""
    expected = os.environ.get("JOURNAL_STREAM", "")
    if not expected:
        return False
    try:
        status = os.fstat(stream.fileno())
    except (AttributeError, OSError, ValueError):
        return False
    return expected == f"{status.st_dev}:{status.st_ino}"
