"""The live view, `GET /ui` on the v1 REST listener: one static page (oltsim/data/ui.html, inline CSS and script, no
build step, no external URL) that reads the v1 REST API and its event stream from the browser (docs/ui.md).

The page holds no data, so it is served without the access token (the guard lets exactly GET/HEAD /ui through);
everything it shows it fetches with the token the user gives it.
"""
from __future__ import annotations

import hashlib
import json
from importlib import resources

from twisted.web import http

from oltsim.api.eventtypes import CHATTY_TYPES
from oltsim.model.alarms import ONU_ALARMS

UI_PATH = "/ui"
#: Marker in the page replaced by the ONU alarm types the alarm endpoint accepts (the model's catalogue).
_ALARM_TYPES_MARKER = '<script id="alarm-types" type="application/json">[]</script>'
#: Marker replaced by {indication kind: alarm type} for the ONU alarms whose indication names one type (all but
#: onu_alarm_ind, whose status field names it: los_status is ONU_ALARM_LOS), so that the page names an alarm
#: event as the alarm read API and the raise endpoint do.
_ALARM_KINDS_MARKER = '<script id="alarm-kinds" type="application/json">{}</script>'
#: Marker replaced by the event types the page does not list unless chosen (eventtypes.CHATTY_TYPES: OMCI frames,
#: packets, port statistics), so that the page and `oltsimctl events` leave out the same ones.
_HIDDEN_TYPES_MARKER = '<script id="hidden-types" type="application/json">[]</script>'
#: The page may run its own inline script and style and talk to this origin only.
CONTENT_SECURITY_POLICY = (b"default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; "
                           b"connect-src 'self'; img-src data:; base-uri 'none'; form-action 'none'; "
                           b"frame-ancestors 'none'")

_page: tuple[bytes, str] | None = None


def page() -> tuple[bytes, str]:
    """(the page's bytes, its ETag), read from the package data once and filled with the alarm types and kinds."""
    global _page
    if _page is None:
        text = resources.files("oltsim").joinpath("data/ui.html").read_text(encoding="utf-8")
        for marker in (_ALARM_TYPES_MARKER, _ALARM_KINDS_MARKER, _HIDDEN_TYPES_MARKER):
            if marker not in text:
                raise RuntimeError(f"oltsim/data/ui.html lacks {marker}")
        types = json.dumps(list(ONU_ALARMS))
        kinds = json.dumps({kind: name for name, (kind, _, _) in ONU_ALARMS.items() if kind != "onu_alarm_ind"})
        text = text.replace(_ALARM_TYPES_MARKER,
                            f'<script id="alarm-types" type="application/json">{types}</script>')
        text = text.replace(_ALARM_KINDS_MARKER,
                            f'<script id="alarm-kinds" type="application/json">{kinds}</script>')
        text = text.replace(_HIDDEN_TYPES_MARKER, f'<script id="hidden-types" type="application/json">'
                                                  f'{json.dumps(list(CHATTY_TYPES))}</script>')
        body = text.encode("utf-8")
        _page = body, '"' + hashlib.sha256(body).hexdigest()[:20] + '"'
    return _page


def render(request) -> bytes:
    """Answer a GET/HEAD of /ui: the page as text/html, revalidated on every load (`no-cache` with an ETag, so a
    new oltsim's page replaces a cached one at once), 304 when the browser's copy is current."""
    body, etag = page()
    request.setHeader(b"Content-Type", b"text/html; charset=utf-8")
    request.setHeader(b"Cache-Control", b"no-cache")
    request.setHeader(b"Content-Security-Policy", CONTENT_SECURITY_POLICY)
    request.setHeader(b"X-Content-Type-Options", b"nosniff")
    request.setHeader(b"Referrer-Policy", b"no-referrer")
    if request.setETag(etag.encode("ascii")) == http.CACHED:
        return b""
    return body
