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

from google.protobuf import json_format
from klein import Klein

from oltsim._proto import legacy_pb2
from oltsim.api import translate
from oltsim.api.openapi import ExtraPath, build_document
from oltsim.api.rest import (ListWriter, Route, Utf8Only, build_request, json_bytes, json_nests_deeper, json_response,
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
    batch = legacy_pb2.ONUs()
    try:
        json_format.ParseDict(data, batch)
    except json_format.ParseError as exc:
        raise InvalidArgument(f"request body: {exc}") from None
    getattr(message, BODY_FIELD).CopyFrom(batch)


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
