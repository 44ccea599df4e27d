"""What the REST surfaces share: routes as a table onto request messages, JSON rendering,
and errors mapped in one place (grpc-gateway's body; 404/405 as JSON)."""
from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from typing import Callable

import grpc
from google.protobuf import descriptor as _descriptor
from twisted.web.resource import Resource
from werkzeug.exceptions import MethodNotAllowed, NotFound as RouteNotFound
from werkzeug.routing import RequestRedirect

from oltsim.api import translate
from oltsim.logs import logger
from oltsim.model.errors import InvalidArgument, NotFound, OltsimError

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
    """One REST binding: METHOD path (with {Field} or {msg.field} placeholders) -> RPC."""
    method: str
    path: str
    rpc: str
    summary: str = ""

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


def json_response(request, status: int, body) -> bytes:
    request.setResponseCode(status)
    request.setHeader(b"Content-Type", b"application/json")
    if isinstance(body, bytes):
        return body
    return json.dumps(body, separators=(",", ":")).encode("utf-8")


def render_error(request, failure, where: str) -> bytes:
    """The one place REST errors become responses; unexpected ones are logged with an id."""
    exc = failure.value
    # werkzeug redirects a non-canonical path (/v1//olt) to the canonical one; for an API that is no such path.
    if isinstance(exc, (RouteNotFound, RequestRedirect)):
        return json_response(request, 404, translate.error_body(
            translate.ERROR_TABLE[NotFound][0], f"no such path: {request.path.decode('latin-1')}"))
    if isinstance(exc, MethodNotAllowed):
        allowed = ", ".join(exc.valid_methods or [])
        request.setHeader(b"Allow", allowed.encode("ascii"))
        return json_response(request, 405, translate.error_body(
            grpc.StatusCode.UNIMPLEMENTED,
            f"method {request.method.decode('latin-1')} not allowed on {request.path.decode('latin-1')};"
            f" allowed: {allowed}"))
    code, status = translate.status_for(exc)
    if isinstance(exc, OltsimError):
        message = exc.message
    else:
        request_id = uuid.uuid4().hex[:12]
        log.failure("rest-handler-failed surface={where} method={method} path={path} request_id={request_id}",
                    failure=failure, where=where, method=request.method.decode("latin-1"),
                    path=request.path.decode("latin-1"), request_id=request_id)
        message = f"internal error (request id {request_id})"
    return json_response(request, status, translate.error_body(code, message))


def bad_url(request, headers=()) -> bytes | None:
    """The JSON 400 for a request whose path or Host header is not UTF-8, or None when both are. Klein would answer
    those itself, with a text/html body, and log the client's mistake as a failure."""
    try:
        b"/".join(request.postpath or ()).decode("utf-8")
        request.getRequestHostname().decode("utf-8")
    except UnicodeDecodeError:
        for name, value in headers:
            request.setHeader(name, value)
        return json_response(request, 400, translate.error_body(
            grpc.StatusCode.INVALID_ARGUMENT, "the URL path and the Host header must be UTF-8"))
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
