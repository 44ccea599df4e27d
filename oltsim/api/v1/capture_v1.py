"""REST `GET /v1/capture`: the capture ring (oltsim.capture) as pcapng, streamed while the connection stays open.

Query parameters (all optional): ``onu`` (an ONU serial; repeat it, or separate serials by commas), ``pon`` (a PON
id), ``omci`` / ``packets`` (flags: only OMCI, only UNI and NNI frames; ``omci``, ``omci=1`` or ``omci=true``),
``since`` (start from the ring's last 30s / 5m / 1h..., or ``all`` for the whole ring), ``duration`` (end after it;
``0`` ends right after the ring's part: a download of the ring) and ``count`` (end after that many frames). The
``X-Oltsim-Ring-*`` headers say how far back the ring reached (`coverage_headers`): whether it wrapped, the time of
its oldest record, and of the oldest of each ONU asked. Without
``duration`` or ``count`` the capture goes on until the client leaves or the daemon stops (a last annotation says
so). The access token, when configured, guards it as every other /v1 path (oltsim.serving.security).
"""
from __future__ import annotations

import math
import time
from urllib.parse import parse_qs

from twisted.internet.defer import Deferred

from oltsim.api.openapi import ExtraPath
from oltsim.api.restkit import query_params
from oltsim.capture import CaptureFilter
from oltsim.capture.durations import parse_seconds
from oltsim.capture.ring import clock_time
from oltsim.model.errors import InvalidArgument, NotFound

CAPTURE_PATH = "/v1/capture"
#: What Wireshark's tools and browsers expect of a pcapng file (tcpdump.org's and IANA's registration in progress
#: use application/vnd.tcpdump.pcap for pcap; pcapng is served as application/x-pcapng by Wireshark's own site).
MEDIA_TYPE = "application/x-pcapng"
PARAMETERS = ("onu", "pon", "omci", "packets", "since", "duration", "count")
_TRUE = {"", "1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


def _flag(query: dict, name: str) -> bool:
    values = query.get(name)
    if not values:
        return False
    value = values[-1].strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise InvalidArgument(f"{name} is a flag: give it alone, or as {name}=true or {name}=false (got {value!r})")


def _int(query: dict, name: str, low: int) -> int | None:
    values = query.get(name)
    if not values:
        return None
    try:
        value = int(values[-1].strip())
    except ValueError:
        raise InvalidArgument(f"{name} must be an integer (got {values[-1]!r})") from None
    if value < low:
        raise InvalidArgument(f"{name} must be at least {low} (got {value})")
    return value


def _seconds(query: dict, name: str) -> float | None:
    values = query.get(name)
    if not values:
        return None
    if name == "since" and values[-1].strip().lower() == "all":
        return math.inf
    try:
        return parse_seconds(values[-1], name)
    except ValueError as exc:
        if name == "since":
            raise InvalidArgument(f"since must be all (the whole ring) or a duration such as 30s, 5m or 1h30m "
                                  f"(got {values[-1]!r})") from None
        raise InvalidArgument(str(exc)) from None


def parse_query(query: dict) -> dict:
    """The arguments of `Capture.open_stream` from GET /v1/capture's query: InvalidArgument for an unknown
    parameter or a malformed value."""
    unknown = set(query) - set(PARAMETERS)
    if unknown:
        raise InvalidArgument(f"unknown parameter(s) {', '.join(sorted(unknown))}; use {', '.join(PARAMETERS)}")
    onus = [s.strip() for v in query.get("onu", []) for s in v.split(",") if s.strip()]
    return {"capture_filter": CaptureFilter.of(onus=onus, pon=_int(query, "pon", 0), omci=_flag(query, "omci"),
                                               packets=_flag(query, "packets")),
            "since": _seconds(query, "since"), "duration": _seconds(query, "duration"),
            "count": _int(query, "count", 1)}


#: The response headers saying how far back the ring reached when the capture opened (`coverage_headers`).
WRAPPED_HEADER = "X-Oltsim-Ring-Wrapped"
OLDEST_HEADER = "X-Oltsim-Ring-Oldest"
ONU_OLDEST_HEADER = "X-Oltsim-Ring-Oldest-Onu"
SIZE_HEADER = "X-Oltsim-Ring-Size"
NOW_HEADER = "X-Oltsim-Ring-Now"


def coverage_headers(coverage) -> dict[str, str]:
    """The headers of a capture's response for its `Coverage`: ``X-Oltsim-Ring-Wrapped: yes`` or ``no`` (the ring
    has let older records go), ``X-Oltsim-Ring-Size`` (the records it keeps at most), ``X-Oltsim-Ring-Oldest`` (the
    time of its oldest record, UTC ISO 8601; absent while it is empty) and, for the ONUs asked,
    ``X-Oltsim-Ring-Oldest-Onu: BBSM00000001=2026-11-28T04:12:40.002Z, BBSM00000002=none`` (none: it keeps no
    record of that ONU), and ``X-Oltsim-Ring-Now``, the server's clock then (how far back the oldest is, whatever the
    client's clock says)."""
    headers = {WRAPPED_HEADER: "yes" if coverage.wrapped else "no", SIZE_HEADER: str(coverage.size),
               NOW_HEADER: clock_time(coverage.now)}
    if coverage.oldest is not None:
        headers[OLDEST_HEADER] = clock_time(coverage.oldest)
    if coverage.onus:
        headers[ONU_OLDEST_HEADER] = ", ".join(f"{serial}={clock_time(oldest) if oldest is not None else 'none'}"
                                               for serial, oldest in coverage.onus)
    return headers


def file_name(arguments: dict, clock_seconds: float) -> str:
    """The name a browser saves the capture as: oltsim[-<serial>|-pon<n>]-<UTC time>.pcapng."""
    capture_filter = arguments["capture_filter"]
    scope = ""
    if len(capture_filter.onus) == 1:
        scope = "-" + (capture_filter.named[0] if capture_filter.named else next(iter(capture_filter.onus)))
    elif capture_filter.pon is not None:
        scope = f"-pon{capture_filter.pon}"
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(clock_seconds))
    return f"oltsim{scope}-{stamp}.pcapng"


def query_of(request) -> dict[str, list[str]]:
    """The query's parameters, a bare flag (``?omci``) included: Twisted's ``request.args`` leaves out a parameter
    without ``=``."""
    query = query_params(request)
    raw = request.uri.partition(b"?")[2].decode("utf-8", "replace")
    for name, values in parse_qs(raw, keep_blank_values=True).items():
        query.setdefault(name, values)
    return query


def serve(request, capture):
    """Answer GET /v1/capture from `capture` (None when capture is off: 404)."""
    arguments = parse_query(query_of(request))
    if capture is None:
        raise NotFound("capture is off: oltsim was started with --capture-size 0 (or bbsim.capture_size: 0)")
    capture.check(arguments["capture_filter"])
    stream = capture.open_stream(**arguments)
    request.setHeader(b"Content-Type", MEDIA_TYPE.encode())
    request.setHeader(b"Cache-Control", b"no-cache")
    for name, value in coverage_headers(stream.coverage).items():
        request.setHeader(name.encode(), value.encode())
    request.setHeader(b"Content-Disposition",
                      f'attachment; filename="{file_name(arguments, capture.clock.seconds())}"'.encode())
    return CaptureResponse(request, stream).start()


#: seconds a live capture's frames gather before they are written to the client: the stream wakes the response
#: at its first frame after each write, which at a bring-up's rate was one socket write per frame (a live capture
#: of a 16x32 bring-up cost +41 % CPU, bench/capture.py); a viewer does not see 20 ms
WRITE_DELAY = 0.02


class CaptureResponse:
    """Writes a CaptureStream to an HTTP response as a push producer: while the client does not keep up (the
    transport paused us) nothing is written and the stream holds, then drops, what comes (its own bound). The
    response ends when the stream does; the stream is closed when the client leaves. What comes is written
    WRITE_DELAY after the first of it, in one piece."""

    def __init__(self, request, stream):
        self.request = request
        self.stream = stream
        self.paused = False
        self.done = Deferred()
        self._later = None

    def start(self) -> Deferred:
        """Write what the stream holds now and follow it; the Deferred fires (ending the response) at its end."""
        self.request.registerProducer(self, True)
        self.request.notifyFinish().addBoth(lambda _: self.stop())
        self.stream.wakeup = self.wake
        self.flush()
        return self.done

    def wake(self) -> None:
        """The stream has something (or ended): written a moment later, with what follows it meanwhile."""
        if self._later is None and not self.done.called:
            self._later = self.stream.capture.clock.callLater(WRITE_DELAY, self._flush_later)

    def _flush_later(self) -> None:
        self._later = None
        self.flush()

    def flush(self) -> None:
        if self.done.called or self.paused:
            return
        data = self.stream.read()
        if data:
            self.request.write(data)
        if self.stream.ended is not None and not self.stream.pending:
            self.stop()
        elif self.stream.pending and not self.paused and self._later is None:
            # More waits (the ring's part is written a chunk a read): the next chunk after the reactor has sent
            # this one, unless the client's slowness pauses us first.
            self._later = self.stream.capture.clock.callLater(0, self._flush_later)

    def stop(self) -> None:
        self.stream.wakeup = None
        later, self._later = self._later, None
        if later is not None and later.active():
            later.cancel()
        self.stream.close()
        if not self.done.called:
            self.request.unregisterProducer()
            self.done.callback(b"")

    def pauseProducing(self):
        self.paused = True

    def resumeProducing(self):
        self.paused = False
        self.flush()

    def stopProducing(self):
        self.stop()


def _parameter(name: str, description: str, schema: dict) -> dict:
    return {"name": name, "in": "query", "required": False, "description": description, "schema": schema}


def openapi_path() -> ExtraPath:
    """GET /v1/capture in the OpenAPI document."""
    duration = {"type": "string", "example": "5m"}
    return ExtraPath(
        "GET", CAPTURE_PATH, "The frames the OLT exchanges, as pcapng for Wireshark", media_type=MEDIA_TYPE,
        schema={"type": "string", "format": "binary",
                "description": "pcapng (one section): an interface per capture point (`<serial> omci`, "
                               "`<serial> uni-<n>`, `nni-<n>`, `events`), a comment on every packet; streamed "
                               "while the connection stays open"},
        errors=(400, 404, 429), rpc="oltsim.v1.Oltsim/Capture",
        parameters=(
            _parameter("onu", "keep this ONU's frames (a serial; repeat, or separate by commas)",
                       {"type": "array", "items": {"type": "string"}}),
            _parameter("pon", "keep the frames of this PON's ONUs", {"type": "integer", "minimum": 0}),
            _parameter("omci", "only OMCI frames (a flag)", {"type": "boolean"}),
            _parameter("packets", "only UNI and NNI frames: EAPOL, DHCP, IGMP (a flag)", {"type": "boolean"}),
            _parameter("since", "start with the ring's frames of this last while (30s, 5m, 1h; `all`: the "
                                "whole ring)", duration),
            _parameter("duration", "end after this long (0: right after the ring's part)", duration),
            _parameter("count", "end after this many frames", {"type": "integer", "minimum": 1})),
        description="Every OMCI message between the adapter and the ONUs (Ethernet frames of ethertype 0x88b5, "
                    "ONU 02:00:<olt>:<pon>:<onu id>, OLT 02:ff:<olt>:<pon>:00:00), the EAPOL, DHCP and IGMP "
                    "frames at each UNI and at the NNI, and scenario steps, alarms and state changes as "
                    "annotations (docs/capture.md). Filters combine; annotations about a kept ONU or PON, or "
                    "the whole OLT, come along. Without duration or count the response goes on until the client "
                    "leaves. A client that does not read loses frames (an annotation says how many), never the "
                    "simulator. The headers X-Oltsim-Ring-Wrapped (yes/no), X-Oltsim-Ring-Size, "
                    "X-Oltsim-Ring-Oldest and X-Oltsim-Ring-Oldest-Onu (SERIAL=time, or none) say how far back the "
                    "ring reached when the capture opened. 404: an unknown ONU (naming the nearest) or PON, or "
                    "capture is off (--capture-size 0); 429: 16 live captures are open.")
