"""The quart-trio application: the HTTP API routes of :mod:`.api`, the worker WebSocket route of
:mod:`.gateway`, health and readiness, and the one mapping of errors to answers.

Every answer is JSON. An :class:`~orbit_actors.errors.OrbitError` becomes its code, status and
message; a body over the request limit is 413 before it is read; a malformed body is 400
``INVALID_REQUEST`` naming the field; anything unexpected is 500 ``INTERNAL``, logged with its
traceback and never shown to the caller. Until the runtime has recovered, ``/v1`` answers 503.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ValidationError
from quart import Quart, Response, request, websocket
from quart_trio import QuartTrio
from werkzeug.exceptions import HTTPException

from ..errors import (
    InvalidRequestError,
    OrbitError,
    PayloadTooLargeError,
    UnauthenticatedError,
)
from ..runtime import Runtime
from .api import ENDPOINTS, Call, Endpoint
from .auth import Credentials
from .gateway import serve_connection
from .openapi import openapi_document

log = logging.getLogger("orbit.server")


@dataclass
class AppState:
    """What the routes share: the runtime once recovery has finished, and the limits."""

    runtime: Runtime | None = None
    draining: bool = False
    credentials: Credentials = field(default_factory=Credentials)


def json_response(status: int, body: Any) -> Response:
    """A JSON answer (204: no body at all)."""
    if status == 204:
        return Response("", status=204)
    text = json.dumps(body, separators=(",", ":"), ensure_ascii=False)
    return Response(text, status=status, content_type="application/json")


def error_response(error: OrbitError) -> Response:
    """The error body of ``error`` with its status."""
    return json_response(error.status, error.to_body())


def create_app(state: AppState, max_request_bytes: int) -> Quart:
    """The application serving ``state``'s runtime."""
    app = QuartTrio("orbit")
    app.config["MAX_CONTENT_LENGTH"] = max_request_bytes
    app.config["BODY_TIMEOUT"] = 60
    openapi_text = json.dumps(openapi_document())
    for endpoint in ENDPOINTS:
        _add_route(app, state, endpoint)

    @app.before_request
    async def authenticate() -> Response | None:
        refused = _refusal(state.credentials, request.path, request.headers.get("Authorization"))
        return error_response(refused) if refused is not None else None

    @app.before_request
    async def read_the_body() -> None:
        # a body nobody reads (a GET with a body, an unknown path) would stall the next request
        # on the same keep-alive connection; read it here, within the request limit
        if request.content_length or "chunked" in request.headers.get("Transfer-Encoding", ""):
            await request.get_data()

    @app.get("/v1/openapi.json")
    async def openapi() -> Response:
        return Response(openapi_text, content_type="application/json")

    @app.get("/metrics")
    async def metrics() -> Response:
        runtime = state.runtime
        ready = (
            "# HELP orbit_ready 1 once recovery has finished.\n# TYPE orbit_ready gauge\n"
            f"orbit_ready {0 if runtime is None else 1}\n"
        )
        body = ready.encode() + (runtime.metrics.render() if runtime is not None else b"")
        return Response(body, content_type="text/plain; version=0.0.4; charset=utf-8")

    @app.get("/healthz")
    async def healthz() -> Response:
        return json_response(200, {"status": "ok"})

    @app.get("/readyz")
    async def readyz() -> Response:
        if state.runtime is None or state.draining:
            return json_response(503, {"status": "starting" if not state.draining else "draining"})
        return json_response(200, {"status": "ready"})

    @app.websocket("/v1/workers/connect")
    async def connect() -> Response | None:
        worker = state.credentials.worker(websocket.headers.get("Authorization"))
        if worker is None:  # refused in the handshake: HTTP 401, no socket
            return error_response(UnauthenticatedError(_WORKER_TOKEN_NEEDED))
        runtime = state.runtime
        if runtime is None or state.draining:
            await websocket.close(1013, "the server is not ready; try again shortly")
            return None
        await serve_connection(runtime, websocket, worker.worker_id)
        return None

    @app.errorhandler(HTTPException)
    async def http_error(exc: HTTPException) -> Response:
        return _http_error(exc)

    @app.errorhandler(Exception)
    async def unexpected(exc: Exception) -> Response:
        log.exception("unexpected fault answering %s %s", request.method, request.path)
        return json_response(500, {"error": {"code": "INTERNAL", "message": "internal error"}})

    return app


_ADMIN_TOKEN_NEEDED = "a valid admin token is required: send `Authorization: Bearer <admin token>`"
_WORKER_TOKEN_NEEDED = (
    "a valid worker token is required: send `Authorization: Bearer <worker token>`"
)
_OPEN_PATHS = frozenset({"/healthz", "/readyz"})


def _is_worker_path(path: str) -> bool:
    return path == "/v1/workers/connect" or path.startswith("/v1/tasks/")


def _refusal(credentials: Credentials, path: str, authorization: str | None) -> OrbitError | None:
    """401 UNAUTHENTICATED when the path needs a token the request does not carry; checked
    before routing, so a wrong token never learns whether anything exists."""
    if path in _OPEN_PATHS:
        return None
    if _is_worker_path(path):
        if credentials.worker(authorization) is None:
            return UnauthenticatedError(_WORKER_TOKEN_NEEDED)
        return None
    if not credentials.is_admin(authorization):
        return UnauthenticatedError(_ADMIN_TOKEN_NEEDED)
    return None


def _http_error(exc: HTTPException) -> Response:
    status = exc.code or 500
    if status == 413:  # the body was not read: the connection cannot carry another request
        response = error_response(
            PayloadTooLargeError("the request body is over the server's limit")
        )
        response.headers["Connection"] = "close"
        return response
    code = {404: "NOT_FOUND", 405: "METHOD_NOT_ALLOWED"}.get(status, "INVALID_REQUEST")
    message = {
        404: f"no such endpoint: {request.path}",
        405: f"{request.method} is not allowed on {request.path}",
    }.get(status, exc.description or "bad request")
    return json_response(status, {"error": {"code": code, "message": message}})


def _add_route(app: Quart, state: AppState, endpoint: Endpoint) -> None:
    rule = endpoint.path.replace("{", "<").replace("}", ">")

    async def view(**params: str) -> Response:
        runtime = state.runtime
        if runtime is None:
            return json_response(
                503, {"error": {"code": "UNAVAILABLE", "message": "the server is still recovering"}}
            )
        try:
            call = Call(runtime, params, content_type=request.content_type or "")
            if _is_worker_path(request.path):
                worker = state.credentials.worker(request.headers.get("Authorization"))
                call.worker_id = worker.worker_id if worker is not None else None
            call.query = _validated(endpoint.query, dict(request.args), "query")
            if endpoint.raw_body:
                call.body = await _text_body()
            elif endpoint.body is not None:
                call.body = _validated(endpoint.body, await _json_body(), "body")
            status, body = await endpoint.handler(call)
        except OrbitError as exc:
            if exc.status >= 500:
                log.error("%s %s: %s %s", request.method, request.path, exc.code, exc.message)
            return error_response(exc)
        return json_response(status, body)

    view.__name__ = f"{endpoint.handler.__name__}_{endpoint.method.lower()}_{len(rule)}"
    app.add_url_rule(rule, view.__name__, view, methods=[endpoint.method])


async def _text_body() -> str:
    data = await request.get_data(as_text=False)
    assert isinstance(data, bytes)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise InvalidRequestError("the body is not UTF-8 text") from None


async def _json_body() -> Any:
    text = await _text_body()
    if not text.strip():
        return None
    try:
        return json.loads(text)
    except ValueError as exc:
        raise InvalidRequestError(f"the body is not valid JSON: {exc}") from None


def _validated(model: type[BaseModel] | None, data: Any, where: str) -> Any:
    if model is None:
        return None
    if data is None:
        data = {}
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise InvalidRequestError(_describe(exc, where)) from None


def _describe(exc: ValidationError, where: str) -> str:
    first = exc.errors()[0]
    field = ".".join(str(part) for part in first["loc"])
    if not field:
        return f"{where}: {first['msg']}"
    return f"{where}.{field}: {first['msg']}"
