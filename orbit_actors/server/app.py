"""The Orbit application: the HTTP API routes of :mod:`.api`, the worker WebSocket route of
:mod:`.gateway`, health, readiness, metrics, and the one mapping of errors to answers, served
by :mod:`.transport`.

Every answer is JSON. An :class:`~orbit_actors.errors.OrbitError` becomes its code, status and
message; a body over the request limit is 413 before it is read (the transport); a malformed
body is 400 ``INVALID_REQUEST`` naming the field; anything unexpected is 500 ``INTERNAL``,
logged with its traceback and never shown to the caller. Until the runtime has recovered,
``/v1`` answers 503.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ValidationError

from .. import console
from ..api import models as m
from ..errors import (
    InvalidRequestError,
    OrbitError,
    UnauthenticatedError,
)
from ..http.application import ServerSocket
from ..http.http1 import Request, Response
from ..ir.jsontext import TooDeepError, check_depth, compact_json
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
        return Response(204)
    return Response(status, compact_json(body).encode())


def error_response(error: OrbitError) -> Response:
    """The error body of ``error`` with its status."""
    return json_response(error.status, error.to_body())


def refusal(status: int, message: str) -> Response:
    """The answer to a request the transport could not read (400, 408, 413, 431)."""
    code = "PAYLOAD_TOO_LARGE" if status == 413 else "INVALID_REQUEST"
    return json_response(status, {"error": {"code": code, "message": message}})


Route = Callable[[Request, dict[str, str]], Awaitable[Response]]


class _Router:
    """Routes by method and path; a path parameter is one non-empty segment."""

    def __init__(self) -> None:
        self._routes: list[tuple[re.Pattern[str], dict[str, Route]]] = []
        self._static: dict[str, dict[str, Route]] = {}

    def add(self, method: str, path: str, route: Route) -> None:
        if "{" not in path:
            self._static.setdefault(path, {})[method] = route
            return
        pattern = re.compile("^" + re.sub(r"\\{(\w+)\\}", r"(?P<\1>[^/]+)", re.escape(path)) + "$")
        for known, methods in self._routes:
            if known.pattern == pattern.pattern:
                methods[method] = route
                return
        self._routes.append((pattern, {method: route}))

    def match(self, path: str) -> tuple[dict[str, Route], dict[str, str]] | None:
        """The routes of ``path`` by method and its parameters, or None for an unknown path."""
        static = self._static.get(path)
        if static is not None:
            return static, {}
        for pattern, methods in self._routes:
            found = pattern.match(path)
            if found is not None:
                return methods, found.groupdict()
        return None


class OrbitApp:
    """The transport's :class:`~orbit_actors.http.transport.Application` for ``state``."""

    def __init__(self, state: AppState) -> None:
        self._state = state
        self._router = _Router()
        for endpoint in ENDPOINTS:
            self._router.add(endpoint.method, endpoint.path, _endpoint_route(state, endpoint))
        openapi_text = json.dumps(openapi_document()).encode()

        async def openapi(request: Request, params: dict[str, str]) -> Response:
            return Response(200, openapi_text)

        self._router.add("GET", "/v1/openapi.json", openapi)
        self._router.add("GET", "/metrics", self._metrics)
        self._router.add("GET", "/healthz", self._healthz)
        self._router.add("GET", "/readyz", self._readyz)

    async def respond(self, request: Request) -> Response:
        """The answer to ``request``; an unexpected fault is 500 ``INTERNAL``, logged."""
        try:
            if console.is_console_path(request.path):
                return _console_file(request)
            refused = _refusal(
                self._state.credentials, request.path, request.headers.get("authorization")
            )
            if refused is not None:
                return error_response(refused)
            found = self._router.match(request.path)
            if found is None:
                return _not_routed(404, "NOT_FOUND", f"no such endpoint: {request.path}")
            methods, params = found
            route = methods.get(request.method)
            if route is None:
                message = f"{request.method} is not allowed on {request.path}"
                not_allowed = _not_routed(405, "METHOD_NOT_ALLOWED", message)
                not_allowed.headers.append(("allow", ", ".join(sorted(methods))))
                return not_allowed
            return await route(request, params)
        except Exception:
            log.exception("unexpected fault answering %s %s", request.method, request.path)
            return json_response(500, {"error": {"code": "INTERNAL", "message": "internal error"}})

    async def websocket(self, request: Request, socket: ServerSocket) -> Response | None:
        """The worker gateway on ``/v1/workers/connect``; any other path is 404."""
        if request.path != "/v1/workers/connect":
            return await self.respond(request)
        worker = self._state.credentials.worker(request.headers.get("authorization"))
        if worker is None:  # refused in the handshake: HTTP 401, no socket
            return error_response(UnauthenticatedError(_WORKER_TOKEN_NEEDED))
        runtime = self._state.runtime
        if runtime is None or self._state.draining:
            await socket.accept()
            await socket.close(1013, "the server is not ready; try again shortly")
            return None
        await serve_connection(runtime, socket, worker.worker_id)
        return None

    async def _metrics(self, request: Request, params: dict[str, str]) -> Response:
        runtime = self._state.runtime
        ready = (
            "# HELP orbit_ready 1 once recovery has finished.\n# TYPE orbit_ready gauge\n"
            f"orbit_ready {0 if runtime is None else 1}\n"
        )
        body = ready.encode() + (runtime.metrics.render() if runtime is not None else b"")
        return Response(200, body, content_type="text/plain; version=0.0.4; charset=utf-8")

    async def _healthz(self, request: Request, params: dict[str, str]) -> Response:
        return json_response(200, {"status": "ok"})

    async def _readyz(self, request: Request, params: dict[str, str]) -> Response:
        state = self._state
        if state.runtime is None or state.draining:
            return json_response(503, {"status": "starting" if not state.draining else "draining"})
        return json_response(200, {"status": "ready"})


def _console_file(request: Request) -> Response:
    """A file of the web console: no token needed (the files hold no data), revalidated by
    ``ETag``; only paths that name a shipped file exist (:func:`orbit_actors.console.asset`)."""
    if request.method not in ("GET", "HEAD"):
        refused = _not_routed(405, "METHOD_NOT_ALLOWED", f"{request.method} is not allowed")
        refused.headers.append(("allow", "GET, HEAD"))
        return refused
    found = console.asset(request.path)
    if found is None:
        return _not_routed(404, "NOT_FOUND", f"no such endpoint: {request.path}")
    if request.headers.get("if-none-match") == found.etag:
        return Response(304, headers=found.headers())
    return Response(200, found.body, content_type=found.content_type, headers=found.headers())


def _not_routed(status: int, code: str, message: str) -> Response:
    return json_response(status, {"error": {"code": code, "message": message}})


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


def _endpoint_route(state: AppState, endpoint: Endpoint) -> Route:
    queries = _Queries()
    for_workers = _is_worker_path(endpoint.path)

    async def route(request: Request, params: dict[str, str]) -> Response:
        runtime = state.runtime
        if runtime is None:
            return json_response(
                503, {"error": {"code": "UNAVAILABLE", "message": "the server is still recovering"}}
            )
        try:
            call = Call(runtime, params, content_type=request.content_type)
            if for_workers:
                worker = state.credentials.worker(request.headers.get("authorization"))
                call.worker_id = worker.worker_id if worker is not None else None
            call.query = queries.validated(endpoint.query, request.query)
            if endpoint.raw_body:
                call.body = _text_body(request.body)
            elif endpoint.body is not None:
                call.body = _validated_body(endpoint.body, request.body)
            status, body = await endpoint.handler(call)
        except OrbitError as exc:
            if exc.status >= 500:
                log.error("%s %s: %s %s", request.method, request.path, exc.code, exc.message)
            return error_response(exc)
        return json_response(status, body)

    return route


def _text_body(data: bytes) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise InvalidRequestError("the body is not UTF-8 text") from None


_ONE_PASS_BODIES: frozenset[type[BaseModel]] = frozenset({m.StartExecution})
"""Bodies whose fields are text, ``Any`` and null only: for them pydantic's strict JSON
validation takes exactly what ``json.loads`` then strict validation takes (strict JSON mode
differs only for types JSON has no literal of: dates, enums, tuples, bytes), so a start's body
is parsed and validated in one pass; anything that pass refuses (a lone surrogate escape,
which ``json.loads`` keeps, included) goes the two-step way, which words the refusal."""


def _validated_body(model: type[BaseModel], data: bytes) -> Any:
    """The body as ``model``: an empty body is ``{}``; otherwise its JSON, validated strictly
    (``0`` is not a boolean, ``"1"`` not a number, ``null`` not an object), so that the body
    the server takes is the body the OpenAPI document describes."""
    if not data.strip():
        return _validated(model, {}, "body")
    if model in _ONE_PASS_BODIES:
        text = _text_body(data)
        try:
            check_depth(text)
            return model.model_validate_json(text, strict=True)
        except (TooDeepError, ValidationError):
            pass  # refused below, in words
    parsed = _json_body(data)
    try:
        return model.model_validate(parsed, strict=True)
    except ValidationError as exc:
        raise InvalidRequestError(_describe(exc, "body")) from None


def _json_body(data: bytes) -> Any:
    text = _text_body(data)
    try:
        check_depth(text)
        return json.loads(text)
    except TooDeepError as exc:
        raise InvalidRequestError(f"the body is refused: {exc}") from None
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


_QUERIES_KEPT = 256
_QUERY_KEPT_CHARS = 256  # a longer query is validated each time, never kept


class _Queries:
    """Validated queries by their text, per query model: clients send the same few queries
    (``wait=60``) again and again, and the models are never changed once built. At most
    :data:`_QUERIES_KEPT` short ones are kept (then the memo starts over); refusals are not
    kept."""

    def __init__(self) -> None:
        self._kept: dict[tuple[type[BaseModel], tuple[tuple[str, str], ...]], Any] = {}

    def validated(self, model: type[BaseModel] | None, query: dict[str, str]) -> Any:
        """``query`` as ``model`` (None without a model), raising as :func:`_validated`."""
        if model is None:
            return None
        key = (model, tuple(query.items()))
        found = self._kept.get(key)
        if found is None:
            found = _validated(model, query, "query")
            if sum(map(len, query.values())) + sum(map(len, query)) <= _QUERY_KEPT_CHARS:
                if len(self._kept) >= _QUERIES_KEPT:
                    self._kept.clear()
                self._kept[key] = found
        return found


def _describe(exc: ValidationError, where: str) -> str:
    first = exc.errors()[0]
    field = ".".join(str(part) for part in first["loc"])
    if not field:
        return f"{where}: {first['msg']}"
    return f"{where}.{field}: {first['msg']}"
