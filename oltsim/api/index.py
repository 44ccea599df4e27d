"""`GET /` on the REST ports: a small index of what the port serves, so that a person who opens the bare address
(or a browser, which gets it as HTML) learns where to go instead of meeting a 404."""
from __future__ import annotations

import html

from oltsim import __version__
from oltsim.api.restkit import json_response

#: Where the documentation is: the daemon cannot know a URL for it, but it knows where it ships.
DOCS = "README.md and docs/ of the source; /usr/share/doc/oltsim in the Debian package"


def render_index(request, surface: str, links: dict[str, str]) -> bytes:
    """The index of ``surface`` (``rest-v1``, ``rest-v0``, ``sadis``): ``links`` maps what (``ui``, ``openapi``)
    to a path of this port. JSON by default; HTML when the client asks for ``text/html`` (a browser)."""
    body = {"service": f"oltsim {surface}", "version": __version__, "links": links, "docs": DOCS}
    accept = (request.getHeader(b"accept") or b"").lower()
    if b"text/html" not in accept:
        return json_response(request, 200, body)
    request.setResponseCode(200)
    request.setHeader(b"Content-Type", b"text/html; charset=utf-8")
    items = "".join(f'<li>{html.escape(what)}: <a href="{html.escape(path)}">{html.escape(path)}</a></li>'
                    for what, path in links.items())
    title = html.escape(body["service"])
    page = (f"<!doctype html><html><head><meta charset=\"utf-8\"><title>{title}</title></head><body>"
            f"<h1>{title} {html.escape(__version__)}</h1><ul>{items}</ul><p>Documentation: {html.escape(DOCS)}</p>"
            "</body></html>")
    return page.encode("utf-8")
