"""The ONE error table: how a refusal is answered on every surface.

A domain error of the model (`oltsim.model.errors`) becomes one gRPC status and one HTTP status; REST surfaces
answer with grpc-gateway's JSON error body. The control APIs (`oltsim.api`), the OpenOLT southbound, the listeners'
access check (`oltsim.serving.security`) and `/metrics` all answer from here, so the module sits below all of them
and imports none of them.
"""
from __future__ import annotations

import json

import grpc

from oltsim.model.errors import (FailedPrecondition, InvalidArgument, NotFound, OltsimError, ResourceExhausted,
                                 Unavailable)

__all__ = ["ERROR_TABLE", "INTERNAL", "abort_for", "error_body", "error_response", "json_response", "status_for"]

#: domain error -> (gRPC status, HTTP status)
ERROR_TABLE: dict[type, tuple[grpc.StatusCode, int]] = {
    NotFound: (grpc.StatusCode.NOT_FOUND, 404),
    InvalidArgument: (grpc.StatusCode.INVALID_ARGUMENT, 400),
    FailedPrecondition: (grpc.StatusCode.FAILED_PRECONDITION, 409),
    ResourceExhausted: (grpc.StatusCode.RESOURCE_EXHAUSTED, 429),  # grpc-gateway's HTTP status for it
    Unavailable: (grpc.StatusCode.UNAVAILABLE, 503),
}
INTERNAL = (grpc.StatusCode.INTERNAL, 500)


def status_for(exc: BaseException) -> tuple[grpc.StatusCode, int]:
    """The (gRPC, HTTP) status of an exception; anything unexpected is INTERNAL/500."""
    for cls in type(exc).__mro__:
        if cls in ERROR_TABLE:
            return ERROR_TABLE[cls]
    return INTERNAL


def error_body(code: grpc.StatusCode, message: str) -> dict:
    """grpc-gateway's error shape, so existing clients parse it."""
    return {"error": message, "code": code.value[0], "message": message}


def json_response(request, status: int, body) -> bytes:
    """Set `status` and the JSON content type on a twisted.web `request`; the body is `body` as compact JSON (or
    `body` itself when it is bytes already)."""
    request.setResponseCode(status)
    request.setHeader(b"Content-Type", b"application/json")
    if isinstance(body, bytes):
        return body
    return json.dumps(body, separators=(",", ":")).encode("utf-8")


def error_response(request, status: int, code: grpc.StatusCode, message: str) -> bytes:
    """A REST refusal: HTTP `status` with grpc-gateway's error body for `code` and `message`."""
    return json_response(request, status, error_body(code, message))


def abort_for(context, exc) -> None:
    """Answer a refused gRPC request with the status of the error table; anything that is not a domain error is
    left to `oltsim.serving.onloop.failure_status`, which logs it with a request id and answers INTERNAL."""
    if isinstance(exc, OltsimError):
        code, _ = status_for(exc)
        context.abort(code, exc.message)
