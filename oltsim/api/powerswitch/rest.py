"""The web power switch's HTTP surface: the two APIs voltha-system-tests drive (libraries/power_switch.robot),
both on one listener, and the outlet mapping.

Digital Loggers (DLI) REST API, outlets counted from 0:

- ``PUT /restapi/relay/outlets/=<n>/state/`` with form data ``value=true|false`` and an ``X-CSRF`` header (any
  value; the real switch refuses a modifying request without it): 207 Multi-Status, empty body. The plain
  ``.../outlets/<n>/state/`` form is answered 204, as the real switch answers a single resource.
- ``GET /restapi/relay/outlets/=<n>/state/``: ``[true]`` or ``[false]`` (``true``/``false`` for the plain form).

Expert Power Control (EPC, Gude) API, outlets counted from 1:

- ``GET /ov.html?cmd=1&p=<n>&s=0|1`` switches and answers the overview page; an outlet the switch does not have is
  switched by nobody (200, the page, as the real switch does).
- ``GET /statusjsn.js?components=1``: ``{"outputs": [{"name": ..., "state": 0|1, "type": 1}, ...]}``.

``GET /`` (or ``/outlets``) shows the mapping as JSON. Every request needs the user and password: HTTP Digest
(MD5, qop=auth; the 401's challenge is Digest, which the robot library's digest session answers), and on the EPC
paths also Basic, which the real EPC takes. Refusals are the project's JSON error body: 401, 403 (no X-CSRF),
404 (no such outlet on the DLI API, no such path), 400 (a value other than true/false, 0/1), 405.
"""
from __future__ import annotations

import html
import re
from urllib.parse import parse_qs

import grpc
from klein import Klein

from oltsim.api.restkit import Utf8Only, render_error
from oltsim.logs import logger
from oltsim.status import error_response, json_response

__all__ = ["PowerSwitchRest", "REALM"]

log = logger("oltsim.powerswitch")

#: the realm of the Digest challenge
REALM = "oltsim power switch"

_DLI_OUTLET = re.compile(r"(=?)([0-9]{1,9})/state/?")
_VALUES = {"true": True, "false": False}


class PowerSwitchRest:
    """The Klein app over one :class:`~oltsim.api.powerswitch.outlets.PowerSwitch` and one
    :class:`~oltsim.api.powerswitch.digest.DigestAuth`."""

    app = Klein()

    def __init__(self, switch, auth):
        self.switch = switch
        self.auth = auth

    def resource(self):
        """The twisted.web resource to serve, refusing a non-UTF-8 URL as JSON."""
        return Utf8Only(self.app.resource())

    # ---- authentication ----------------------------------------------------------------------

    def _refused(self, request, basic: bool = False) -> bytes | None:
        """None when the request carries this switch's credentials, else the 401 (with a Digest challenge)."""
        header = request.getHeader(b"authorization")
        header = header.decode("latin-1") if header is not None else None
        method = request.method.decode("latin-1")
        uri = request.uri.decode("latin-1")
        if basic and header and header.lstrip()[:6].lower() == "basic ":
            verdict = self.auth.check_basic(header)
        else:
            verdict = self.auth.check(method, uri, header)
        if verdict.ok:
            return None
        if header:  # a client's first request carries none: that is the protocol, not worth a line
            log.info("power-switch-auth-refused method={method} path={path} user={user} reason={reason}",
                     method=method, path=request.path.decode("latin-1"), user=verdict.username,
                     reason=verdict.reason)
        request.setHeader(b"WWW-Authenticate", self.auth.challenge(stale=verdict.stale).encode("latin-1"))
        return error_response(request, 401, grpc.StatusCode.UNAUTHENTICATED,
                              "this power switch needs its user name and password (HTTP Digest"
                              + (" or Basic)" if basic else ")"))

    # ---- the mapping -------------------------------------------------------------------------

    @app.route("/", methods=["GET"])
    def index(self, request):
        """The outlets, what each feeds and its state, as JSON."""
        return self._refused(request) or json_response(request, 200, self.switch.describe())

    @app.route("/outlets", methods=["GET"], strict_slashes=False)
    def outlets(self, request):
        """The same as GET /."""
        return self.index(request)

    # ---- Digital Loggers ---------------------------------------------------------------------

    @app.route("/restapi/relay/outlets/<path:rest>", methods=["GET", "PUT"], merge_slashes=False)
    @app.route("/restapi/relay/outlets//<path:rest>", methods=["GET", "PUT"], merge_slashes=False)
    def dli_outlet(self, request, rest):
        """An outlet's state (GET) or a switch of it (PUT value=true|false); ``rest`` is ``=<n>/state/``.
        (Older robot libraries join the session URL and ``=<n>/state/`` with a second slash: that path is taken
        too.)"""
        refusal = self._refused(request)
        if refusal is not None:
            return refusal
        match = _DLI_OUTLET.fullmatch(rest)
        if match is None:
            return error_response(request, 404, grpc.StatusCode.NOT_FOUND,
                                  f"no such path: {request.path.decode('latin-1')} (an outlet's state is "
                                  "/restapi/relay/outlets/=N/state/)")
        matrix, index = match.group(1) == "=", int(match.group(2))
        outlet = self.switch.outlet(index + 1)
        if outlet is None:
            last = len(self.switch.outlets) - 1
            return error_response(request, 404, grpc.StatusCode.NOT_FOUND,
                                  f"outlet {index} not found (this switch has outlets 0..{last})")
        if request.method == b"GET":
            return json_response(request, 200, [outlet.on] if matrix else outlet.on)
        if request.getHeader(b"x-csrf") is None:
            return error_response(request, 403, grpc.StatusCode.PERMISSION_DENIED,
                                  "a request that switches an outlet needs an X-CSRF header (any value)")
        value = _dli_value(request.content.read() if request.content is not None else b"")
        if value is None:
            return error_response(request, 400, grpc.StatusCode.INVALID_ARGUMENT,
                                  "value must be true or false (form data value=true)")
        self.switch.switch(outlet, value)
        request.setResponseCode(207 if matrix else 204)
        return b""

    # ---- Expert Power Control ----------------------------------------------------------------

    @app.route("/ov.html", methods=["GET"])
    def epc_overview(self, request):
        """The overview page; with cmd=1&p=<n>&s=0|1 it first switches outlet n off (0) or on (1)."""
        refusal = self._refused(request, basic=True)
        if refusal is not None:
            return refusal
        query = _query(request)
        if query.get("cmd") == "1":
            number, state = query.get("p", ""), query.get("s", "")
            if not number.isdigit() or state not in ("0", "1"):
                return error_response(request, 400, grpc.StatusCode.INVALID_ARGUMENT,
                                      "cmd=1 needs p=<outlet, from 1> and s=0 or s=1")
            outlet = self.switch.outlet(int(number[:9]))
            if outlet is not None:  # the real switch answers its page for an outlet it does not have
                self.switch.switch(outlet, state == "1")
        request.setResponseCode(200)
        request.setHeader(b"Content-Type", b"text/html; charset=utf-8")
        rows = "".join(f"<tr><td>{o.number}</td><td>{html.escape(o.kind)} {html.escape(o.serial)}</td>"
                       f"<td>{'on' if o.on else 'off'}</td></tr>" for o in self.switch.outlets)
        return (f"<!DOCTYPE html><html><head><title>{html.escape(REALM)}</title></head><body><table>"
                f"<tr><th>outlet</th><th>feeds</th><th>state</th></tr>{rows}</table></body></html>").encode("utf-8")

    @app.route("/statusjsn.js", methods=["GET"])
    def epc_status(self, request):
        """The outlets' states: outputs[n-1].state is outlet n's, 1 on, 0 off."""
        refusal = self._refused(request, basic=True)
        if refusal is not None:
            return refusal
        outputs = [{"name": f"{o.kind.upper()} {o.serial}", "state": int(o.on), "type": 1}
                   for o in self.switch.outlets]
        return json_response(request, 200, {"outputs": outputs})

    @app.handle_errors(Exception)
    def errors(self, request, failure):
        return render_error(request, failure, "power-switch")


def _dli_value(body: bytes) -> bool | None:
    """The value of a DLI PUT body: form data ``value=true`` (or a bare JSON ``true``), case-insensitive; None for
    anything else."""
    try:
        text = body.decode("utf-8").strip()
    except UnicodeDecodeError:
        return None
    if text.lower() in _VALUES:
        return _VALUES[text.lower()]
    try:
        values = parse_qs(text, keep_blank_values=True, strict_parsing=True).get("value")
    except ValueError:
        return None
    if not values or len(values) != 1:
        return None
    return _VALUES.get(values[0].strip().lower())


def _query(request) -> dict[str, str]:
    """The query's parameters, the last of each name, as text."""
    out = {}
    for key, values in (request.args or {}).items():
        if values:
            out[key.decode("utf-8", "replace")] = values[-1].decode("utf-8", "replace")
    return out
