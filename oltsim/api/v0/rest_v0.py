"""REST `/v0` (service document 4.2, deprecated) on Klein, over the same `V0Commands` as gRPC.

Routes come from `oltsim.api.v0.mapping.MAPPING`. Path placeholders and query parameters are
set on the RPC's request message by name (`onu.pon_port_id`, `onu.gemports`, ...) and the names
given are passed on, so filters know what the client asked for (any route accepts the query
parameters of its request message, as BBSim's gateway does; unknown ones are 400). POST and DELETE `/v0/olt/onus`
take the `onus_batch` body `{"onus": [<legacy ONU record>, ...]}` as BBSim's gateway does; other
bodies are ignored, as there. Every response, errors included, carries `Deprecation: true` and,
where one v1 call does the same, `Link: </v1/...>; rel="successor-version"`.
"""
from __future__ import annotations

import json

from google.protobuf import descriptor, json_format
from klein import Klein

from oltsim._proto import legacy_pb2
from oltsim.api import translate
from oltsim.api.index import render_index
from oltsim.api.openapi import ExtraPath, build_document
from oltsim.api.restkit import (ListWriter, Route, Utf8Only, build_request, json_bytes, json_nests_deeper, json_response,
                             page, page_of, query_params, register_routes, render_error)
from oltsim.api.v0.mapping import MAPPING, successor_link
from oltsim.model.errors import InvalidArgument

ROUTES: tuple[Route, ...] = tuple(Route(method, path, rpc, note, paged=rpc == "GetFlows")
                                  for method, path, rpc, _, _, note in MAPPING)

#: Routes whose body is the `onus_batch` field.
BODY_ROUTES = frozenset({("POST", "/v0/olt/onus"), ("DELETE", "/v0/olt/onus")})
BODY_FIELD = "onus_batch"
#: How deeply a body may nest: the deepest legacy ONU record, {"onus": [{"tconts": {"tconts": [{"scheduler":
#: {...}}]}}]}, nests 6 levels.
MAX_BODY_DEPTH = 32

#: RPCs whose commands take the set of given field names.
FILTERED_RPCS = frozenset({"ONUStatus", "ONUActivate", "ONUDeactivate", "GetFlows", "PortStatus"})

_SERVICE = legacy_pb2.DESCRIPTOR.services_by_name["BBSimService"]
_METHODS = _SERVICE.methods_by_name

OPENAPI_PATH = "/v0/openapi.json"

_HEADERS = {"Deprecation": {"description": "always `true`: the legacy API is deprecated",
                            "schema": {"type": "string", "enum": ["true"]}}}


def _describe(route: Route) -> tuple[str, str]:
    """(summary, description) of a v0 operation: the legacy RPC, then MAPPING's note and v1 successor."""
    for method, path, rpc, v1_method, v1_path, note in MAPPING:
        if (method, path) == (route.method, route.path):
            successor = f"Successor: `{v1_method} {v1_path}`." if v1_path else "No single v1 successor."
            return f"legacy.BBSimService/{rpc}", " ".join(part for part in (note + "." if note else "",
                                                                             successor) if part)
    return route.rpc, ""


def openapi_document(secured: bool = False) -> dict:
    """The OpenAPI document of `/v0`: every route of MAPPING and the document itself."""
    return build_document(
        title="oltsim legacy API v0 (deprecated)",
        description="BBSim's legacy REST API (`/v0`), deprecated: every response carries "
                    "`Deprecation: true` and, where one v1 call does the same, a `Link` to it. Generated from the "
                    "route table the server routes with and the legacy protobuf messages.",
        routes=ROUTES, service=_SERVICE, secured=secured, deprecated=True, describe=_describe,
        body_routes={route: BODY_FIELD for route in BODY_ROUTES}, response_headers=_HEADERS,
        body_description=f"at most the server's --max-request-body bytes (default 1 MiB; 413 beyond, before it is "
                         f"read), nested at most {MAX_BODY_DEPTH} levels, listing at most as many ONUs as the OLT "
                         "has (400 beyond)",
        extra=[ExtraPath("GET", OPENAPI_PATH, "This document (OpenAPI 3.0)", errors=(404,))])


def read_batch(request, message, max_onus: int) -> None:
    """Parse the request body into `message.onus_batch`; an empty body is no batch. The body (already at most
    --max-request-body bytes, `oltsim.api.site`) may nest MAX_BODY_DEPTH levels and list at most `max_onus`
    ONUs (the OLT's), checked before its records are parsed."""
    raw = request.content.read() if request.content is not None else b""
    if not raw.strip():
        return
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise InvalidArgument("request body is not valid JSON: it is not UTF-8") from None
    if json_nests_deeper(text, MAX_BODY_DEPTH):
        raise InvalidArgument(f"request body nests deeper than {MAX_BODY_DEPTH} levels")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidArgument(f"request body is not valid JSON: {exc}") from None
    except ValueError:  # Python refuses integers of more than 4300 digits (and says so in its own words)
        raise InvalidArgument("request body holds a number with too many digits") from None
    if not isinstance(data, dict):
        raise InvalidArgument('request body must be a JSON object {"onus": [...]}')
    onus = data.get("onus")
    if isinstance(onus, list) and len(onus) > max_onus:
        raise InvalidArgument(f"onus lists more ONUs ({len(onus)}) than this OLT has ({max_onus})")
    check_body(data, legacy_pb2.ONUs.DESCRIPTOR)
    batch = legacy_pb2.ONUs()
    try:
        json_format.ParseDict(data, batch)
    except json_format.ParseError:  # check_body passed: a case it does not know; still no protobuf wording
        raise InvalidArgument(f"request body does not fit {BODY_SHAPE}") from None
    getattr(message, BODY_FIELD).CopyFrom(batch)


#: The body of POST/DELETE /v0/olt/onus, as error messages show it.
BODY_SHAPE = '{"onus": [{"onu_serial": ...} or {"pon_port_id": ..., "onu_id": ...}, ...]}'

_FD = descriptor.FieldDescriptor
_INT_RANGES = {
    _FD.TYPE_UINT32: (0, 2**32 - 1), _FD.TYPE_FIXED32: (0, 2**32 - 1),
    _FD.TYPE_INT32: (-2**31, 2**31 - 1), _FD.TYPE_SINT32: (-2**31, 2**31 - 1), _FD.TYPE_SFIXED32: (-2**31, 2**31 - 1),
    _FD.TYPE_UINT64: (0, 2**64 - 1), _FD.TYPE_FIXED64: (0, 2**64 - 1),
    _FD.TYPE_INT64: (-2**63, 2**63 - 1), _FD.TYPE_SINT64: (-2**63, 2**63 - 1), _FD.TYPE_SFIXED64: (-2**63, 2**63 - 1),
}


def _shown(value) -> str:
    text = json.dumps(value)
    return text if len(text) <= 40 else text[:37] + "..."


def check_body(data, message_type, path: str = "") -> None:
    """InvalidArgument, in the API's own words, for the first part of the JSON value `data` that does not fit
    `message_type` (a protobuf descriptor): an unknown field, or a value of the wrong type or range. Field names are
    the proto names (the JSON names protobuf also accepts are accepted too)."""
    if not isinstance(data, dict):
        raise InvalidArgument(f"request body: {path or 'the body'} must be a JSON object (got {_shown(data)})"
                              + ("" if path else f"; the body is {BODY_SHAPE}"))
    fields = message_type.fields_by_name
    by_json = {f.json_name: f for f in message_type.fields}
    for key, value in data.items():
        field = fields.get(key) or by_json.get(key)
        where = f"{path}.{key}" if path else key
        if field is None:
            if not path:
                raise InvalidArgument(f'request body: unknown field "{key}"; the body is {BODY_SHAPE}')
            raise InvalidArgument(f'request body: unknown field "{where}"; the fields of {path} are '
                                  + ", ".join(f.name for f in message_type.fields))
        if value is None:
            continue  # JSON null leaves a field unset
        if field.is_repeated:
            if not isinstance(value, list):
                raise InvalidArgument(f"request body: {where} must be a list (got {_shown(value)})")
            for i, item in enumerate(value):
                _check_value(item, field, f"{where}[{i}]")
        else:
            _check_value(value, field, where)


def _check_value(value, field, where: str) -> None:
    kind = field.type
    if kind == _FD.TYPE_MESSAGE:
        check_body(value, field.message_type, where)
    elif kind in _INT_RANGES:
        low, high = _INT_RANGES[kind]
        number = None
        if isinstance(value, int) and not isinstance(value, bool):
            number = value
        elif isinstance(value, float) and value.is_integer():
            number = int(value)
        elif isinstance(value, str) and value.strip().lstrip("-").isdigit():
            number = int(value.strip())
        what = "a non-negative integer" if low == 0 else "an integer"
        if number is None:
            raise InvalidArgument(f"request body: {where} must be {what} (got {_shown(value)})")
        if not low <= number <= high:
            raise InvalidArgument(f"request body: {where} must be an integer from {low} to {high} (got {number})")
    elif kind == _FD.TYPE_STRING:
        if not isinstance(value, str):
            raise InvalidArgument(f"request body: {where} must be a string (got {_shown(value)})")
    elif kind == _FD.TYPE_BOOL:
        if not isinstance(value, bool):
            raise InvalidArgument(f"request body: {where} must be true or false (got {_shown(value)})")
    elif kind == _FD.TYPE_ENUM:
        names = [v.name for v in field.enum_type.values]
        numbers = {v.number for v in field.enum_type.values}
        if not (value in names or (isinstance(value, int) and not isinstance(value, bool) and value in numbers)):
            raise InvalidArgument(f"request body: {where} must be one of {', '.join(names)} (got {_shown(value)})")
    elif kind in (_FD.TYPE_FLOAT, _FD.TYPE_DOUBLE):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise InvalidArgument(f"request body: {where} must be a number (got {_shown(value)})")


class V0Rest:
    """The `/v0` REST API over `V0Commands`; one instance per server. `secured` (an access token guards the
    server) is only documented here: the guard wraps the resource outside."""

    app = Klein()

    def __init__(self, commands, secured: bool = False):
        self.commands = commands
        self.secured = secured
        self._openapi: bytes | None = None

    def openapi(self) -> dict:
        """This server's OpenAPI document."""
        return openapi_document(self.secured)

    def resource(self):
        """The Klein resource, behind the check that the URL is UTF-8 (refused as JSON, deprecated as any answer)."""
        return Utf8Only(self.app.resource(), headers=[(b"Deprecation", b"true")])

    def dispatch(self, request, route: Route, path_args: dict) -> bytes:
        raw_args = {name.replace("__", "."): value for name, value in path_args.items()}
        link = successor_link(route.method, route.path, raw_args)
        if link is not None:
            request.setHeader(b"Link", f'<{link}>; rel="successor-version"'.encode("ascii"))
        method = _METHODS[route.rpc]
        query = query_params(request)
        offset, limit = page_of(query) if route.paged else (0, None)
        message = build_request(getattr(legacy_pb2, method.input_type.name), path_args, query,
                                set(route.placeholders))
        if route.paged:
            flows = [flow for flow in self.commands.select_flows(message, given=set(raw_args) | set(query))
                     if flow.payload is not None]
            json_response(request, 200, b"")
            return ListWriter(request, b'{"flows":[', page(flows, offset, limit),
                              lambda flow: json_bytes(translate.to_json_dict(translate.stored_flow(flow))),
                              b"]}").run()
        if (route.method, route.path) in BODY_ROUTES:
            read_batch(request, message, self.commands.olt.onu_count)
        handler = getattr(self.commands, route.rpc)
        if route.rpc in FILTERED_RPCS:
            response = handler(message, given=set(raw_args) | set(query))
        else:
            response = handler(message)
        return json_response(request, 200, translate.to_json_dict(response))

    @app.route("/", methods=["GET"], branch=False)
    def index(self, request):
        """Where to go from the bare address: the OpenAPI document and the docs (oltsim.api.index)."""
        request.setHeader(b"Deprecation", b"true")
        return render_index(request, "rest-v0", {"openapi": OPENAPI_PATH, "olt": "/v0/olt"})

    @app.route(OPENAPI_PATH, methods=["GET"], branch=False)
    def openapi_json(self, request):
        """The OpenAPI document, built on first request (it never changes while the server runs)."""
        request.setHeader(b"Deprecation", b"true")
        if self._openapi is None:
            self._openapi = json.dumps(self.openapi(), separators=(",", ":")).encode("utf-8")
        return json_response(request, 200, self._openapi)

    @app.handle_errors(Exception)
    def errors(self, request, failure):
        request.setHeader(b"Deprecation", b"true")
        return render_error(request, failure, "rest-v0")


def _handle(self, request, route: Route, path_args: dict) -> bytes:
    request.setHeader(b"Deprecation", b"true")
    return self.dispatch(request, route, path_args)


register_routes(V0Rest.app, ROUTES, _handle)
