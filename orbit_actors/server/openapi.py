"""``/v1/openapi.json``, generated from the endpoint table and its pydantic models.

It declares what the server really does (http-api.md; a fuzzer checks it): the bearer scheme on
every ``/v1`` operation (401 without it, 403 for a worker token used for another worker's task),
400 on every operation (a malformed query or body), 413 on every operation with a body, and a
definition body as the definition format's own JSON Schema."""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel
from pydantic.json_schema import models_json_schema

from .._version import __version__
from ..api import models as m
from ..ir import Definition
from .api import ENDPOINTS, Endpoint

_PARAM = re.compile(r"{(\w+)}")
_REF = "#/components/schemas/{model}"


def openapi_document() -> dict[str, Any]:
    """The OpenAPI 3.1 document of every endpoint."""
    models: set[type[BaseModel]] = {m.ErrorBody, m.Health, Definition}
    for endpoint in ENDPOINTS:
        models |= {model for model in endpoint.answers.values() if model is not None}
        if endpoint.body is not None:
            models.add(endpoint.body)
    ordered = sorted(models, key=lambda model: model.__name__)
    _, schemas = models_json_schema([(model, "validation") for model in ordered], ref_template=_REF)
    paths: dict[str, dict[str, Any]] = {}
    for endpoint in ENDPOINTS:
        paths.setdefault(endpoint.path, {})[endpoint.method.lower()] = _operation(endpoint)
    for path in ("/healthz", "/readyz"):
        paths[path] = {"get": _health(path)}
    return {
        "openapi": "3.1.0",
        "info": {"title": "Orbit", "version": __version__},
        "paths": paths,
        "security": [{"bearer": []}],
        "components": {"schemas": schemas.get("$defs", {}), "securitySchemes": _SECURITY},
    }


_SECURITY = {
    "bearer": {
        "type": "http",
        "scheme": "bearer",
        "description": "the admin token (--admin-token); a worker token on /v1/tasks/…",
    }
}


def _operation(endpoint: Endpoint) -> dict[str, Any]:
    operation: dict[str, Any] = {
        "summary": endpoint.summary,
        "operationId": endpoint.handler.__name__ + _suffix(endpoint),
        "tags": list(endpoint.tags),
        "parameters": _parameters(endpoint),
        "responses": _responses(endpoint),
    }
    if endpoint.raw_body:
        operation["requestBody"] = {
            "required": True,
            "content": {
                "application/json": {"schema": _ref(Definition)},
                "application/yaml": {"schema": {"type": "string", "minLength": 1}},
            },
        }
    elif endpoint.body is not None:
        required = any(f.is_required() for f in endpoint.body.model_fields.values())
        operation["requestBody"] = {
            "required": required,
            "content": {"application/json": {"schema": _ref(endpoint.body)}},
        }
    return operation


def _suffix(endpoint: Endpoint) -> str:
    return "_version" if endpoint.path.endswith("{version}") else ""


def _parameters(endpoint: Endpoint) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [
        {"name": name, "in": "path", "required": True, "schema": {"type": "string"}}
        for name in _PARAM.findall(endpoint.path)
    ]
    if endpoint.query is not None:
        schema = endpoint.query.model_json_schema()
        for name, prop in schema.get("properties", {}).items():
            out.append({"name": name, "in": "query", "required": False, "schema": prop})
    return out


def _responses(endpoint: Endpoint) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for status, model in endpoint.answers.items():
        content = {"application/json": {"schema": _ref(model)}} if model is not None else None
        out[str(status)] = {"description": "success", **({"content": content} if content else {})}
    refusals = {400, 401, 500, 503, *endpoint.errors}
    if endpoint.raw_body or endpoint.body is not None:
        refusals.add(413)
    if endpoint.path.startswith("/v1/tasks/"):
        refusals.add(403)
    for status in sorted(refusals):
        out[str(status)] = {
            "description": "error",
            "content": {"application/json": {"schema": _ref(m.ErrorBody)}},
        }
    return out


def _health(path: str) -> dict[str, Any]:
    content = {"application/json": {"schema": _ref(m.Health)}}
    return {
        "summary": "liveness" if path == "/healthz" else "readiness (after recovery)",
        "operationId": path.strip("/"),
        "security": [],
        "responses": {
            "200": {"description": "ok", "content": content},
            "503": {"description": "not ready", "content": content},
        },
    }


def _ref(model: type[BaseModel]) -> dict[str, str]:
    return {"$ref": _REF.format(model=model.__name__)}
