"""What the REST surfaces share: routes as a table onto request messages, JSON rendering,
and errors mapped in one place (grpc-gateway's body; 404/405 as JSON)."""
from __future__ import annotations

import json
import re
import uuid
from dataclasses import dataclass
from itertools import accumulate
from typing import Callable

import grpc
from google.protobuf import descriptor as _descriptor
from twisted.internet.defer import Deferred
from twisted.web.resource import Resource
from werkzeug.exceptions import MethodNotAllowed, NotFound as RouteNotFound
from werkzeug.routing import RequestRedirect

from oltsim.logs import logger
from oltsim.model.errors import InvalidArgument, NotFound, OltsimError
from oltsim.status import ERROR_TABLE, error_response, json_response, status_for  # noqa: F401 (re-exported)

log = logger("oltsim.api.rest")

_INT_TYPES = {
    _descriptor.FieldDescriptor.TYPE_INT32, _descriptor.FieldDescriptor.TYPE_INT64,
    _descriptor.FieldDescriptor.TYPE_UINT32, _descriptor.FieldDescriptor.TYPE_UINT64,
    _descriptor.FieldDescriptor.TYPE_SINT32, _descriptor.FieldDescriptor.TYPE_SINT64,
    _descriptor.FieldDescriptor.TYPE_FIXED32, _descriptor.FieldDescriptor.TYPE_FIXED64,
    _descriptor.FieldDescriptor.TYPE_SFIXED32, _descriptor.FieldDescriptor.TYPE_SFIXED64,
}
_UNSIGNED = {
    _descriptor.FieldDescriptor.TYPE_UINT32, _descriptor.FieldDescriptor.TYPE_UINT64,
    _descriptor.FieldDescriptor.TYPE_FIXED32, _descriptor.FieldDescriptor.TYPE_FIXED64,
}


@dataclass(frozen=True)
class Route:
    """One REST binding: METHOD path (with {Field} or {msg.field} placeholders) -> RPC. A `paged` route answers
    a list that `offset` and `limit` (PAGE_PARAMETERS) cut to one page."""
    method: str
    path: str
    rpc: str
    summary: str = ""
    paged: bool = False

    @property
    def werkzeug_path(self) -> str:
        out = self.path
        for name in self.placeholders:
            out = out.replace("{%s}" % name, "<%s>" % name.replace(".", "__"))
        return out

    @property
    def placeholders(self) -> list[str]:
        import re
        return re.findall(r"{([^}]+)}", self.path)


def set_field(message, dotted: str, raw: str) -> None:
    """Set `dotted` (e.g. `onu.pon_port_id`) on `message` from the text `raw`, typed by the schema."""
    parts = dotted.split(".")
    target = message
    for part in parts[:-1]:
        field = target.DESCRIPTOR.fields_by_name.get(part)
        # Only a singular sub-message has fields to name (`onu.onu_id`); a scalar, a repeated field or a map
        # has none that a URL could set.
        if field is None or field.type != _descriptor.FieldDescriptor.TYPE_MESSAGE or field.is_repeated:
            raise InvalidArgument(f"unknown parameter {dotted!r}")
        target = getattr(target, part)
    name = parts[-1]
    field = target.DESCRIPTOR.fields_by_name.get(name)
    if field is None:
        raise InvalidArgument(f"unknown parameter {dotted!r}")
    if field.type == _descriptor.FieldDescriptor.TYPE_MESSAGE:
        raise InvalidArgument(f"parameter {dotted!r} cannot be given in the URL")
    values = raw if isinstance(raw, list) else [raw]
    converted = [_convert(field, dotted, v) for v in values]
    if field.is_repeated:
        getattr(target, name).extend(converted)
    else:
        setattr(target, name, converted[-1])


def _convert(field, dotted: str, raw: str):
    if field.type in _INT_TYPES:
        text = raw.strip()
        try:
            number = int(text, 10)
        except ValueError:
            raise InvalidArgument(f"{dotted} must be an integer (got {raw!r})") from None
        bits = 32 if field.type in (_descriptor.FieldDescriptor.TYPE_INT32, _descriptor.FieldDescriptor.TYPE_UINT32,
                                    _descriptor.FieldDescriptor.TYPE_SINT32, _descriptor.FieldDescriptor.TYPE_FIXED32,
                                    _descriptor.FieldDescriptor.TYPE_SFIXED32) else 64
        if field.type in _UNSIGNED:
            lo, hi = 0, 2 ** bits - 1
        else:
            lo, hi = -(2 ** (bits - 1)), 2 ** (bits - 1) - 1
        if not lo <= number <= hi:
            raise InvalidArgument(f"{dotted} is out of range (got {raw!r})")
        return number
    if field.type == _descriptor.FieldDescriptor.TYPE_ENUM:
        enum = field.enum_type
        value = enum.values_by_name.get(raw.strip().upper())
        if value is None and raw.strip().lstrip("-").isdigit():
            value = enum.values_by_number.get(int(raw))
        if value is None:
            names = ", ".join(v.name for v in enum.values)
            raise InvalidArgument(f"{dotted} must be one of {names} (got {raw!r})")
        return value.number
    if field.type == _descriptor.FieldDescriptor.TYPE_BOOL:
        text = raw.strip().lower()
        if text not in ("true", "false", "1", "0"):
            raise InvalidArgument(f"{dotted} must be true or false (got {raw!r})")
        return text in ("true", "1")
    if field.type == _descriptor.FieldDescriptor.TYPE_BYTES:
        return raw.encode("utf-8")
    return raw


def register_routes(app, routes, handle) -> None:
    """Add one Klein route per path of `routes` to `app` (a class-level Klein); each request is answered by
    `handle(self, request, route, path_args)` with the Route of its method (HEAD as GET)."""
    by_path: dict[str, list[Route]] = {}
    for route in routes:
        by_path.setdefault(route.werkzeug_path, []).append(route)
    for wpath, group in by_path.items():
        table = {r.method: r for r in group}

        def handler(self, request, _table=table, **kwargs):
            verb = request.method.decode("latin-1").upper()  # werkzeug routes methods case-insensitively
            return handle(self, request, _table["GET" if verb == "HEAD" else verb], kwargs)

        handler.__name__ = "route_" + "_".join(
            wpath.strip("/").replace("<", "").replace(">", "").replace(".", "_").split("/"))
        app.route(wpath, methods=list(table), branch=False)(handler)


def render_error(request, failure, where: str) -> bytes:
    """The one place REST errors become responses; unexpected ones are logged with an id."""
    exc = failure.value
    # werkzeug redirects a non-canonical path (/v1//olt) to the canonical one; for an API that is no such path.
    if isinstance(exc, (RouteNotFound, RequestRedirect)):
        return error_response(request, 404, ERROR_TABLE[NotFound][0],
                              f"no such path: {request.path.decode('latin-1')}")
    if isinstance(exc, MethodNotAllowed):
        allowed = ", ".join(exc.valid_methods or [])
        request.setHeader(b"Allow", allowed.encode("ascii"))
        return error_response(
            request, 405, grpc.StatusCode.UNIMPLEMENTED,
            f"method {request.method.decode('latin-1')} not allowed on {request.path.decode('latin-1')};"
            f" allowed: {allowed}")
    code, status = status_for(exc)
    if isinstance(exc, OltsimError):
        message = exc.message
    else:
        request_id = uuid.uuid4().hex[:12]
        log.failure("rest-handler-failed surface={where} method={method} path={path} request_id={request_id}",
                    failure=failure, where=where, method=request.method.decode("latin-1"),
                    path=request.path.decode("latin-1"), request_id=request_id)
        message = f"internal error (request id {request_id})"
    return error_response(request, status, code, message)


def bad_url(request, headers=()) -> bytes | None:
    """The JSON 400 for a request whose path or Host header is not UTF-8, or None when both are. Klein would answer
    those itself, with a text/html body, and log the client's mistake as a failure."""
    try:
        b"/".join(request.postpath or ()).decode("utf-8")
        request.getRequestHostname().decode("utf-8")
    except UnicodeDecodeError:
        for name, value in headers:
            request.setHeader(name, value)
        return error_response(request, 400, grpc.StatusCode.INVALID_ARGUMENT,
                              "the URL path and the Host header must be UTF-8")
    return None


class Utf8Only(Resource):
    """`inner` (a Klein resource) behind the `bad_url` check; `headers` go on the refusals too."""

    isLeaf = True

    def __init__(self, inner, headers=()):
        super().__init__()
        self.inner = inner
        self.headers = tuple(headers)

    def render(self, request):
        refusal = bad_url(request, self.headers)
        return refusal if refusal is not None else self.inner.render(request)


def query_params(request, exclude=()) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for key, values in (request.args or {}).items():
        name = key.decode("utf-8", "replace")
        if name in exclude:
            continue
        out[name] = [v.decode("utf-8", "replace") for v in values]
    return out


def build_request(request_type, path_args: dict, query: dict[str, list[str]], path_fields) -> object:
    """The RPC request message from path placeholders and query parameters (not for path fields)."""
    message = request_type()
    for name, value in path_args.items():
        set_field(message, name.replace("__", "."), value)
    for name, values in query.items():
        if name in path_fields:
            raise InvalidArgument(f"parameter {name!r} is already given in the path")
        set_field(message, name, values if len(values) > 1 else values[0])
    return message


Renderer = Callable[[object], dict]


# ---- long lists: pages, and answers written a slice per reactor turn ------------------------------------------

#: The query parameters of a paged route, beside its request message's fields, and their largest value.
PAGE_PARAMETERS = ("offset", "limit")
PAGE_MAX = 999_999_999
#: Items a ListWriter renders per reactor turn. A flow takes about 60 us to render as JSON, so a slice holds the
#: reactor (and the OpenOLT heartbeats it serves) for about 8 ms.
SLICE_ITEMS = 128


def page_of(query: dict[str, list[str]]) -> tuple[int, int | None]:
    """(offset, limit) of a paged request, taken out of `query` (limit None: to the end); each must be a
    non-negative integer (InvalidArgument)."""
    out = []
    for name in PAGE_PARAMETERS:
        values = query.pop(name, None)
        if values is None:
            out.append(None)
            continue
        text = values[-1].strip()
        if not (text.isascii() and text.isdigit() and len(text) <= 9):
            raise InvalidArgument(f"{name} must be an integer 0..{PAGE_MAX} (got {values[-1]!r})")
        out.append(int(text))
    return out[0] or 0, out[1]


def page(items: list, offset: int, limit: int | None) -> list:
    """The page of `items` that `offset` and `limit` (page_of) select."""
    if offset == 0 and limit is None:
        return items
    return items[offset:] if limit is None else items[offset:offset + limit]


class ListWriter:
    """Writes one JSON document, `head`, the `items` rendered by `render` (bytes each) and joined by commas, then
    `tail`, to a request whose status and headers are already set.

    A list of up to SLICE_ITEMS items is rendered at once (:meth:`run` returns the body). A longer one is written a
    slice per reactor turn, so that no answer holds the reactor (and the OpenOLT heartbeats it serves) for longer
    than a slice takes, and as a push producer: while the client does not read, nothing more is rendered, so a
    slow reader costs no memory either. `items` is a list taken at the start: the answer is that moment's list even
    if it changes while it is written."""

    def __init__(self, request, head: bytes, items: list, render: Callable[[object], bytes], tail: bytes,
                 slice_items: int = SLICE_ITEMS):
        self.request = request
        self.head = head
        self.items = items
        self.render = render
        self.tail = tail
        self.slice_items = slice_items
        self.next = 0
        self.paused = False
        self.call = None
        self.done: Deferred | None = None
        self._call_later = None

    def run(self):
        """The whole body (bytes) for a short list or a HEAD request; else a Deferred that fires with b"" once
        every slice is written (cancelling it stops the writing)."""
        if self.request.method == b"HEAD":
            return b""
        if len(self.items) <= self.slice_items:
            return self.head + b",".join(self.render(item) for item in self.items) + self.tail
        self._call_later = _call_later_of(self.request)
        self.done = Deferred(lambda _: self._stop())
        self.request.registerProducer(self, True)
        self.request.write(self.head)
        self._schedule()
        return self.done

    def _schedule(self) -> None:
        if self.call is None and not self.paused and self.done is not None and not self.done.called:
            self.call = self._call_later(0, self._write_slice)

    def _write_slice(self) -> None:
        self.call = None
        start, end = self.next, min(self.next + self.slice_items, len(self.items))
        try:
            chunk = b",".join(self.render(item) for item in self.items[start:end])
        except Exception:
            # The status is out already: the client can only be told by a connection that ends mid-answer.
            log.failure("rest-list-failed path={path}", path=self.request.path.decode("latin-1"))
            self._stop()
            self.request.loseConnection()
            return
        self.next = end
        if start:
            chunk = b"," + chunk
        if end == len(self.items):
            self.items = []
            self.request.write(chunk + self.tail)
            self.request.unregisterProducer()
            self.done.callback(b"")
            return
        self.request.write(chunk)
        self._schedule()

    def _stop(self) -> None:
        if self.call is not None and self.call.active():
            self.call.cancel()
        self.call = None
        self.items = []

    def pauseProducing(self) -> None:
        self.paused = True
        if self.call is not None and self.call.active():
            self.call.cancel()
        self.call = None

    def resumeProducing(self) -> None:
        self.paused = False
        self._schedule()

    def stopProducing(self) -> None:
        """The client went away: render nothing more."""
        self._stop()


def _call_later_of(request):
    """The callLater of the reactor serving `request` (its HTTP channel's; the global reactor's otherwise)."""
    call_later = getattr(request.channel, "callLater", None)
    if call_later is None:
        from twisted.internet import reactor
        call_later = reactor.callLater
    return call_later


def json_bytes(body) -> bytes:
    """`body` as compact JSON, as every REST answer is written."""
    return json.dumps(body, separators=(",", ":")).encode("utf-8")


# A string, or an unterminated one up to the end: once a quote opens, the match never fails (so never restarts).
_JSON_STRING = re.compile(r'"(?:[^"\\]|\\.?)*+(?:"|\Z)', re.DOTALL)
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
_DEPTH_STEP = {"[": 1, "{": 1, "]": -1, "}": -1}


def json_nests_deeper(text: str, limit: int) -> bool:
    """Whether the arrays and objects of the JSON `text` nest more than `limit` levels, found without parsing it
    (Python's json parser recurses once per level and fails with RecursionError near 1000). Linear in the length of
    `text` (about 50 ms for 1 MB of brackets); for text that is not JSON the answer means nothing, and parsing it
    fails anyway."""
    brackets = _NOT_BRACKET.sub("", _JSON_STRING.sub("", text))
    if re.search(r"[\[{]{%d}" % (limit + 1), brackets):  # the usual attack, found without counting
        return True
    return max(accumulate(map(_DEPTH_STEP.__getitem__, brackets)), default=0) > limit
