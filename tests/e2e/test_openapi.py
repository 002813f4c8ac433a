"""``/v1/openapi.json`` describes what the server does: every endpoint is in it, answers match
its schemas, and bodies generated from (and against) its schemas never get a 500."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from orbit_actors.api import models as m
from orbit_actors.server.api import ENDPOINTS

from .conftest import ECHO3
from .harness import ServerProcess


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[httpx.Client]:
    folder: Path = tmp_path_factory.mktemp("openapi")
    server = ServerProcess(folder).start()
    with httpx.Client(base_url=server.url, timeout=30) as client:
        client.post("/v1/definitions", content=ECHO3, headers={"content-type": "application/yaml"})
        yield client
    server.stop()


def test_every_endpoint_is_documented_with_its_methods(live: httpx.Client) -> None:
    document = live.get("/v1/openapi.json").json()
    assert document["openapi"].startswith("3.")
    for endpoint in ENDPOINTS:
        operation = document["paths"][endpoint.path][endpoint.method.lower()]
        assert {str(s) for s in endpoint.answers} <= set(operation["responses"])
    assert document["components"]["schemas"]["StartExecution"]["required"] == ["workflow"]


def test_answers_match_their_documented_models(live: httpx.Client) -> None:
    execution_id = live.post(
        "/v1/executions", json={"workflow": "three", "input": {"n": 1}}
    ).json()["execution_id"]
    m.Started.model_validate(
        live.post("/v1/executions", json={"workflow": "three", "execution_id": execution_id}).json()
    )
    m.DefinitionList.model_validate(live.get("/v1/definitions").json())
    m.DefinitionWithIr.model_validate(live.get("/v1/definitions/three").json())
    m.ExecutionList.model_validate(live.get("/v1/executions").json())
    m.ExecutionDetail.model_validate(live.get(f"/v1/executions/{execution_id}").json())
    m.History.model_validate(live.get(f"/v1/executions/{execution_id}/history").json())
    m.ExecutionDetail.model_validate(
        live.post(f"/v1/executions/{execution_id}/cancel", json={}).json()
    )
    m.ExecutionResult.model_validate(live.get(f"/v1/executions/{execution_id}/wait").json())
    m.WorkerList.model_validate(live.get("/v1/workers").json())
    m.TaskAck.model_validate(live.post("/v1/tasks/x@y/complete", json={}).json())
    m.ErrorBody.model_validate(live.get("/v1/executions/nope").json())


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4)
    ),
    max_leaves=12,
)
FIELDS = [
    "workflow",
    "version",
    "input",
    "execution_id",
    "reason",
    "payload",
    "output",
    "error",
    "worker_id",
]
BODIES = st.one_of(
    JSON,
    st.dictionaries(st.sampled_from(FIELDS), JSON, max_size=5),
    st.binary(max_size=50).map(lambda b: b.decode("latin-1")),
)
TARGETS = [
    ("POST", "/v1/executions"), ("POST", "/v1/definitions"), ("POST", "/v1/executions/x/cancel"),
    ("POST", "/v1/executions/x/signals/go"), ("POST", "/v1/tasks/a@b/complete"),
    ("POST", "/v1/tasks/a@b/fail"), ("GET", "/v1/executions"),
]  # fmt: skip


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    target=st.sampled_from(TARGETS),
    body=BODIES,
    query=st.dictionaries(
        st.sampled_from(["limit", "status", "cursor", "run", "timeout"]),
        st.text(max_size=8),
        max_size=3,
    ),
)
def test_no_body_or_query_gets_a_500(
    live: httpx.Client, target: tuple[str, str], body: Any, query: dict[str, str]
) -> None:
    method, path = target
    content = body if isinstance(body, str) else json.dumps(body)
    response = live.request(
        method,
        path,
        content=content.encode(),
        params=query,
        headers={"content-type": "application/json"},
    )
    assert response.status_code < 500, response.text
    if response.status_code >= 400:
        assert set(response.json()) == {"error"}
