"""OpenAPI 3.0 documents of the REST APIs, generated from the route tables the servers route with and the protobuf
descriptors of each route's request and response messages, so that a document cannot drift from the server.

What a document says follows from how the REST layer works (`oltsim.api.restkit`):

- path parameters are the route's placeholders, typed by the request message's field of that (dotted) name;
- query parameters are the request message's other scalar, enum and repeated-scalar fields, dotted through its
  singular sub-messages (`onu.pon_port_id`), since `build_request` sets any of them; a repeated field is an array
  given by repeating the parameter;
- a 200 response is the RPC's response message as `translate.to_json_dict` renders it: proto field names, every
  field without presence always present (so `required`), 64-bit integers as strings, enums by name, repeated fields
  as arrays, maps as objects, sub-messages as `$ref` components named by their full proto name; the base revision
  drops and retypes the fields of `translate.BASE_DROPPED` / `translate.BASE_INTEGERS`;
- every refusal is the error body `{error, code, message}` with the HTTP status of `oltsim.status.ERROR_TABLE`,
  plus 405 for a wrong method, 413 for a body above the server's limit, 500 for an unexpected failure and, when an
  access token is configured, 401;
- a paged route (`Route.paged`) also takes `offset` and `limit` (`rest.PAGE_PARAMETERS`);
- the connection limits of every REST listener (`CONNECTION_LIMITS`) close the description of each document.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Iterable

from google.protobuf import descriptor as _descriptor

from oltsim import __version__
from oltsim.api import translate
from oltsim.api.restkit import PAGE_MAX, Route
from oltsim.config import (DEFAULT_MAX_API_CALLS, DEFAULT_MAX_CONNECTIONS, DEFAULT_MAX_CONNECTIONS_PER_PEER,
                           DEFAULT_MAX_UNSENT_OUTPUT)
from oltsim.serving.grpcserver import STREAMS_ABOVE_CAP
from oltsim.status import ERROR_TABLE

OPENAPI_VERSION = "3.0.3"
#: What every REST listener bounds per connection (oltsim.serving.connlimit, oltsim.api.site), said in each document.
CONNECTION_LIMITS = (
    f"Connections: this port holds at most --max-connections (default {DEFAULT_MAX_CONNECTIONS}) open at once, at "
    f"most --max-connections-per-peer (default {DEFAULT_MAX_CONNECTIONS_PER_PEER}) from one client address; a new "
    "connection beyond either closes the idlest one (nothing in flight, its last request ended or it connected "
    "first; logged as connection-evicted), and is itself closed unread and unanswered only when every one has a "
    "request in flight (connection-refused). A connection has 10 s from its accept, and from the first byte of a "
    "later request, to send a whole request head (connection-head-timeout). Pipelined requests are answered while "
    f"less than --max-unsent-output (default {DEFAULT_MAX_UNSENT_OUTPUT // 1024} KiB) of answers wait unsent on the "
    "connection; beyond, the server reads nothing more from it until the client has read them. The plain gRPC ports "
    "(OpenOLT, control v1 and v0, DMI) hold what connects, 4096 connections each at most (above, those that sent the "
    "fewest bytes are closed), and a control gRPC server keeps at most --max-api-calls (default "
    f"{DEFAULT_MAX_API_CALLS}) streams open, refusing the next at once with RESOURCE_EXHAUSTED; a connection may "
    f"open {STREAMS_ABOVE_CAP} streams more than that, so no client waits for one.")

_F = _descriptor.FieldDescriptor
_INT32 = {_F.TYPE_INT32, _F.TYPE_SINT32, _F.TYPE_SFIXED32}
_UINT32 = {_F.TYPE_UINT32, _F.TYPE_FIXED32}
_INT64 = {_F.TYPE_INT64, _F.TYPE_SINT64, _F.TYPE_SFIXED64}
_UINT64 = {_F.TYPE_UINT64, _F.TYPE_FIXED64}
_RANGES = {
    "int32": (-(2 ** 31), 2 ** 31 - 1),
    "uint32": (0, 2 ** 32 - 1),
    "int64": (-(2 ** 63), 2 ** 63 - 1),
    "uint64": (0, 2 ** 64 - 1),
}

ERROR_SCHEMA = "Error"
SECURITY_SCHEME = "bearerToken"

#: The query parameters of a paged route (`rest.page_of`).
PAGE_PARAMETERS = [
    {"name": "offset", "in": "query", "required": False,
     "description": "skip this many items of the list (default 0)",
     "schema": {"type": "integer", "minimum": 0, "maximum": PAGE_MAX}},
    {"name": "limit", "in": "query", "required": False,
     "description": "answer at most this many items (default: all of them; the list is bounded by the server's "
                    "limits, e.g. --max-flows)",
     "schema": {"type": "integer", "minimum": 0, "maximum": PAGE_MAX}},
]


@dataclass(frozen=True)
class ExtraPath:
    """A documented path served by the app itself rather than through the RPC route table (the document itself,
    the event stream). `request` (a message descriptor) gives its query parameters; `media_type` and `schema` its
    200 response."""
    method: str
    path: str
    summary: str
    media_type: str = "application/json"
    schema: dict = field(default_factory=lambda: {"type": "object"})
    request: object = None
    description: str = ""
    errors: tuple[int, ...] = ()
    #: the response is this protobuf message (a descriptor) as JSON, documented as its component over `schema`
    message: object = None
    #: the gRPC method answering the same, named as `x-rpc`
    rpc: str = ""
    #: the OpenAPI requestBody object of a path that reads a body
    body: dict | None = None
    #: query parameters as OpenAPI parameter objects, for a path whose parameters are no protobuf message
    parameters: tuple = ()


@dataclass(frozen=True)
class _Error:
    status: int
    name: str
    description: str


def error_responses(secured: bool) -> list[_Error]:
    """The documented error statuses: those of the one error table, 405, 500, and 401 with a token."""
    out = {}
    for exc, (code, status) in ERROR_TABLE.items():
        out[status] = _Error(status, exc.__name__, f"{exc.__name__} (gRPC {code.name})")
    out[405] = _Error(405, "MethodNotAllowed", "method not allowed on this path (the Allow header lists the "
                      "allowed ones)")
    out[413] = _Error(413, "RequestTooLarge", "request body larger than the server's limit (--max-request-body, "
                      "default 1 MiB), refused before it is read (gRPC RESOURCE_EXHAUSTED); the server then closes "
                      "the connection")
    out[500] = _Error(500, "Internal", "unexpected failure, logged with the request id the message gives "
                      "(gRPC INTERNAL)")
    if secured:
        out[401] = _Error(401, "Unauthenticated", "missing or wrong access token (gRPC UNAUTHENTICATED)")
    return [out[status] for status in sorted(out)]


class _Schemas:
    """JSON schemas of protobuf messages, collected as components (output and input shapes kept apart)."""

    def __init__(self, dropped: dict[str, Iterable[str]], integers: dict[str, Iterable[str]]):
        self.components: dict[str, dict] = {}
        self.dropped = {name: frozenset(fields) for name, fields in dropped.items()}
        self.integers = {name: frozenset(fields) for name, fields in integers.items()}

    def ref(self, message, *, input: bool = False) -> dict:
        """A `$ref` to the component of `message` (built on first use)."""
        name = message.full_name + ("_input" if input else "")
        if name not in self.components:
            self.components[name] = {}  # reserved first: messages may refer to themselves
            self.components[name] = self._message(message, input)
        return {"$ref": f"#/components/schemas/{name}"}

    def _message(self, message, input: bool) -> dict:
        dropped = frozenset() if input else self.dropped.get(message.full_name, frozenset())
        integers = frozenset() if input else self.integers.get(message.full_name, frozenset())
        properties, required = {}, []
        for fd in message.fields:
            if fd.name in dropped:
                continue
            properties[fd.name] = self.field(fd, input=input, integer=fd.name in integers)
            # to_json_dict prints every field without presence, defaults included.
            if not input and not fd.has_presence:
                required.append(fd.name)
        schema: dict = {"type": "object", "properties": properties}
        if required:
            schema["required"] = required
        if input:
            schema["additionalProperties"] = False  # json_format.ParseDict refuses unknown fields
        return schema

    def field(self, fd, *, input: bool = False, integer: bool = False) -> dict:
        """The JSON schema of one field as rendered (or, with `input`, as parsed)."""
        if _is_map(fd):
            value = fd.message_type.fields_by_name["value"]
            return {"type": "object", "additionalProperties": self._single(value, input, False)}
        item = self._single(fd, input, integer)
        return {"type": "array", "items": item} if fd.is_repeated else item

    def _single(self, fd, input: bool, integer: bool) -> dict:
        if fd.type == _F.TYPE_MESSAGE:
            return self.ref(fd.message_type, input=input)
        if fd.type in _INT64 | _UINT64 and not integer:
            kind = "int64" if fd.type in _INT64 else "uint64"
            text = {"type": "string", "format": kind, "pattern": "^-?[0-9]+$" if kind == "int64" else "^[0-9]+$"}
            if input:  # json_format.ParseDict takes a number or a numeric string
                return {"oneOf": [text, _integer(kind)]}
            return text
        return scalar_schema(fd, integer=integer)


def _is_map(fd) -> bool:
    return fd.type == _F.TYPE_MESSAGE and fd.message_type.GetOptions().map_entry


def _integer(kind: str) -> dict:
    lo, hi = _RANGES[kind]
    schema = {"type": "integer", "minimum": lo, "maximum": hi}
    if kind in ("int32", "int64"):
        schema["format"] = kind
    return schema


def scalar_schema(fd, *, integer: bool = False) -> dict:
    """The schema of a non-message field's single value; 64-bit integers as JSON integers (a path or query
    parameter, or a field the base revision renders as a number)."""
    if fd.type in _INT32:
        return _integer("int32")
    if fd.type in _UINT32:
        return _integer("uint32")
    if fd.type in _INT64:
        return _integer("int64")
    if fd.type in _UINT64:
        return _integer("uint64")
    if fd.type in (_F.TYPE_DOUBLE, _F.TYPE_FLOAT):
        return {"type": "number"}
    if fd.type == _F.TYPE_BOOL:
        return {"type": "boolean"}
    if fd.type == _F.TYPE_ENUM:
        return {"type": "string", "enum": [value.name for value in fd.enum_type.values]}
    if fd.type == _F.TYPE_BYTES:
        return {"type": "string", "format": "byte"}
    return {"type": "string"}


def _parameter_schema(fd) -> dict:
    """A URL parameter's schema: the text `rest.set_field` accepts for the field (bytes are taken as UTF-8)."""
    if fd.type == _F.TYPE_BYTES:
        return {"type": "string"}
    if fd.type == _F.TYPE_BOOL:
        return {"type": "boolean"}
    schema = scalar_schema(fd)
    return {"type": "array", "items": schema} if fd.is_repeated else schema


def field_at(message, dotted: str):
    """The field descriptor that `rest.set_field` sets for the dotted name `dotted`."""
    parts = dotted.split(".")
    for part in parts[:-1]:
        message = message.fields_by_name[part].message_type
    return message.fields_by_name[parts[-1]]


def query_fields(message, exclude: Iterable[str] = (), prefix: str = "") -> list[tuple[str, object]]:
    """(dotted name, field) of every field `rest.build_request` accepts as a query parameter, minus `exclude`:
    scalars, enums and repeated scalars, through singular sub-messages (never maps or repeated messages)."""
    out = []
    excluded = set(exclude)
    for fd in message.fields:
        name = prefix + fd.name
        if fd.type == _F.TYPE_MESSAGE:
            if not fd.is_repeated:
                out.extend(query_fields(fd.message_type, excluded, name + "."))
            continue
        if name not in excluded:
            out.append((name, fd))
    return out


def parameters_for(route_path: str, placeholders: Iterable[str], request) -> list[dict]:
    """The path and query parameter objects of a route whose request message is `request`."""
    params = []
    names = list(placeholders)
    for name in names:
        params.append({"name": name, "in": "path", "required": True,
                       "schema": _parameter_schema(field_at(request, name))})
    for name, fd in query_fields(request, names):
        param = {"name": name, "in": "query", "required": False, "schema": _parameter_schema(fd)}
        if fd.is_repeated:
            param.update(style="form", explode=True)
        params.append(param)
    return params


def operation_id(method: str, path: str) -> str:
    """A stable, unique id from the method and the path (RPC names repeat across routes)."""
    words = [method.lower()]
    for segment in path.strip("/").split("/"):
        words.append(segment.strip("{}").replace(".", "_").replace("-", "_"))
    return "_".join(words)


def build_document(*, title: str, description: str, routes: Iterable[Route], service, revision: str = "extended",
                   secured: bool = False, deprecated: bool = False,
                   describe: Callable[[Route], tuple[str, str]] | None = None, body_routes: dict | None = None,
                   body_description: str = "", response_headers: dict | None = None,
                   extra: Iterable[ExtraPath] = ()) -> dict:
    """The OpenAPI 3.0 document of `routes` (each naming an RPC of the protobuf service descriptor `service`).

    `revision` "base" applies the base shaping of `translate` to the response schemas; `secured` adds the bearer
    token scheme and 401; `deprecated` marks every operation; `describe(route)` gives an operation's (summary,
    description), by default (the route's summary, none); `body_routes` maps (method, path) to the request field
    whose message an optional JSON body holds, `body_description` what the body may hold;
    `response_headers` are header objects documented on every response; `extra` adds paths served beside the
    route table."""
    if revision == "base":
        schemas = _Schemas(translate.BASE_DROPPED, translate.BASE_INTEGERS)
    else:
        schemas = _Schemas({}, {})
    errors = error_responses(secured)
    headers = dict(response_headers or {})
    bodies = dict(body_routes or {})
    paths: dict[str, dict] = {}
    for route in routes:
        rpc = service.methods_by_name[route.rpc]
        summary, text = describe(route) if describe is not None else (route.summary, "")
        operation = {
            "operationId": operation_id(route.method, route.path),
            "summary": summary or route.rpc,
            "x-rpc": f"{service.full_name}/{route.rpc}",
            "parameters": parameters_for(route.path, route.placeholders, rpc.input_type)
            + (PAGE_PARAMETERS if route.paged else []),
            "responses": {"200": _response(f"{rpc.output_type.full_name}", "application/json",
                                           schemas.ref(rpc.output_type), headers)},
        }
        if text:
            operation["description"] = text
        body = bodies.get((route.method, route.path))
        if body is not None:
            operation["requestBody"] = {"required": False, "content": {"application/json": {
                "schema": schemas.ref(rpc.input_type.fields_by_name[body].message_type, input=True)}}}
            if body_description:
                operation["requestBody"]["description"] = body_description
        _add_errors(operation, errors)
        if deprecated:
            operation["deprecated"] = True
        if not operation["parameters"]:
            del operation["parameters"]
        paths.setdefault(route.path, {})[route.method.lower()] = operation
    for path in extra:
        schema = schemas.ref(path.message) if path.message is not None else path.schema
        operation = {"operationId": operation_id(path.method, path.path), "summary": path.summary,
                     "responses": {"200": _response(path.summary, path.media_type, schema, headers)}}
        if path.rpc:
            operation["x-rpc"] = path.rpc
        if path.description:
            operation["description"] = path.description
        if path.body is not None:
            operation["requestBody"] = dict(path.body)
        if path.request is not None:
            operation["parameters"] = parameters_for(path.path, Route(path.method, path.path, "").placeholders,
                                                     path.request)
        if path.parameters:
            operation.setdefault("parameters", []).extend(dict(p) for p in path.parameters)
        _add_errors(operation, [e for e in errors if e.status in path.errors or e.status in (401, 405, 413, 500)])
        if deprecated:
            operation["deprecated"] = True
        paths.setdefault(path.path, {})[path.method.lower()] = operation
    components: dict = {
        "schemas": {ERROR_SCHEMA: {
            "type": "object",
            "description": "grpc-gateway's error body: message twice, code is the gRPC status code number",
            "properties": {"error": {"type": "string"}, "code": {"type": "integer", "format": "int32"},
                           "message": {"type": "string"}},
            "required": ["error", "code", "message"],
        }, **dict(sorted(schemas.components.items()))},
        "responses": {e.name: _error_response(e, headers) for e in errors},
    }
    document = {
        "openapi": OPENAPI_VERSION,
        "info": {"title": title, "version": __version__, "description": f"{description} {CONNECTION_LIMITS}"},
        "paths": paths,
        "components": components,
    }
    if secured:
        components["securitySchemes"] = {SECURITY_SCHEME: {
            "type": "http", "scheme": "bearer",
            "description": "the access token oltsim was started with (--api-token / --api-token-file)"}}
        document["security"] = [{SECURITY_SCHEME: []}]
    return document


def _response(description: str, media_type: str, schema: dict, headers: dict) -> dict:
    response = {"description": description, "content": {media_type: {"schema": schema}}}
    if headers:
        response["headers"] = dict(headers)
    return response


def _error_response(error: _Error, headers: dict) -> dict:
    response = _response(error.description, "application/json", {"$ref": f"#/components/schemas/{ERROR_SCHEMA}"},
                         headers)
    if error.status == 405:
        response.setdefault("headers", {})["Allow"] = {"description": "the methods the path allows",
                                                       "schema": {"type": "string"}}
    return response


def _add_errors(operation: dict, errors: Iterable[_Error]) -> None:
    for error in errors:
        operation["responses"][str(error.status)] = {"$ref": f"#/components/responses/{error.name}"}
