"""The result of an execution in one request, through a real server with a real worker: the
``wait`` answer carries ``output`` and ``error``, and ``POST /v1/executions?wait=S`` answers
once the execution has finished (or S seconds have passed) with its outcome."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from orbit_actors.api.models import ExecutionDetail, ExecutionResult, ResultError, Started
from orbit_actors.client import ApiError, AsyncClient, Client

from .conftest import BREAKS, ECHO3
from .harness import ServerProcess, WorkerProcess

WAITS = """
workflow: waits
version: 1.0.0
signals: {go: null}
steps: [{id: w, await: go}]
"""
SLOW = """
workflow: slow
version: 1.0.0
timeout: 1s
signals: {go: null}
steps: [{id: w, await: go}]
"""
# http-api.md's summary, and operations.md's `paused` ("the detail and the list carry it")
SUMMARY = {"execution_id", "workflow", "version", "status", "run", "started_at_ms",
           "closed_at_ms", "parent_id", "schedule_id", "paused"}  # fmt: skip


@pytest.fixture(scope="module")
def results_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    folder: Path = tmp_path_factory.mktemp("results")
    server = ServerProcess(folder).start()
    worker = WorkerProcess(server, "results-worker")
    for source in (ECHO3, BREAKS, WAITS, SLOW):
        server.client().deploy(source)
    yield server
    worker.stop()
    server.stop()


@pytest.fixture
def api(results_server: ServerProcess) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=results_server.url, timeout=90) as client:
        yield client


def start(api: httpx.Client, workflow: str, wait: float | None = None, **body: Any) -> Any:
    params = {"wait": wait} if wait is not None else {}
    return api.post("/v1/executions", json={"workflow": workflow, **body}, params=params)


def test_one_request_starts_and_answers_the_output(api: httpx.Client) -> None:
    answer = start(api, "three", wait=60, input={"n": 4}, execution_id="one-request")
    assert answer.status_code == 201
    assert answer.json() == {
        "execution_id": "one-request", "created": True, "status": "completed",
        "output": {"n": 4}, "error": None,
    }  # fmt: skip
    again = start(api, "three", wait=60, input={"n": 4}, execution_id="one-request")
    assert again.status_code == 200 and again.json()["created"] is False
    assert again.json()["output"] == {"n": 4}


def test_a_start_without_wait_answers_at_once_as_before(api: httpx.Client) -> None:
    answer = start(api, "waits", execution_id="no-wait")
    assert answer.status_code == 201 and answer.json() == {
        "execution_id": "no-wait",
        "created": True,
    }
    api.post("/v1/executions/no-wait/cancel", json={})


def test_a_start_whose_wait_passes_first_answers_running(api: httpx.Client) -> None:
    answer = start(api, "waits", wait=0.2, execution_id="still-waiting")
    assert answer.status_code == 201
    assert answer.json() == {
        "execution_id": "still-waiting", "created": True, "status": "running", "output": None,
        "error": None,
    }  # fmt: skip
    api.post("/v1/executions/still-waiting/signals/go", json={})
    done = api.get("/v1/executions/still-waiting/wait", params={"timeout": 30}).json()
    assert set(done) == SUMMARY | {"output", "error"} and done["status"] == "completed"


def test_the_wait_answer_carries_the_output(api: httpx.Client) -> None:
    start(api, "three", input={"n": 9}, execution_id="waited")
    done = api.get("/v1/executions/waited/wait", params={"timeout": 30}).json()
    assert set(done) == SUMMARY | {"output", "error"}
    assert (done["status"], done["output"], done["error"]) == ("completed", {"n": 9}, None)
    summary = api.get("/v1/executions", params={"workflow": "three"}).json()["executions"][0]
    assert set(summary) == SUMMARY  # the list keeps the plain summary


def test_a_failed_execution_answers_its_error_and_no_output(api: httpx.Client) -> None:
    body = start(api, "breaks", wait=60, execution_id="broke").json()
    assert (body["status"], body["output"]) == ("failed", None)
    assert body["error"]["code"] == "BROKEN" and set(body["error"]) <= {
        "code",
        "message",
        "details",
    }
    waited = api.get("/v1/executions/broke/wait").json()
    assert waited["error"] == body["error"] and waited["output"] is None


def test_a_cancelled_execution_answers_cancelled_with_the_reason(api: httpx.Client) -> None:
    start(api, "waits", execution_id="stopped")
    api.post("/v1/executions/stopped/cancel", json={"reason": "not needed"})
    waited = api.get("/v1/executions/stopped/wait", params={"timeout": 30}).json()
    assert (waited["status"], waited["output"]) == ("cancelled", None)
    assert waited["error"] == {"code": "CANCELLED", "message": "not needed"}


def test_a_timed_out_execution_answers_timed_out(api: httpx.Client) -> None:
    body = start(api, "slow", wait=30, execution_id="too-slow").json()
    assert (body["status"], body["output"]) == ("timed_out", None)
    assert body["error"] == {"code": "TIMED_OUT", "message": "the run exceeded its timeout of 1s"}


def test_a_refused_start_with_wait_answers_the_refusal(api: httpx.Client) -> None:
    answer = start(api, "nobody", wait=5)
    assert answer.status_code == 404 and answer.json()["error"]["code"] == "WORKFLOW_NOT_FOUND"
    negative = start(api, "three", wait=-1)
    assert negative.status_code == 400 and negative.json()["error"]["code"] == "INVALID_REQUEST"


def test_the_python_client_gets_a_result_in_one_call(results_server: ServerProcess) -> None:
    with results_server.client() as client:
        answer = client.start("three", input={"n": 2}, execution_id="by-client", wait=60)
        assert (answer.status, answer.output) == ("completed", {"n": 2})
        client.start("waits", execution_id="by-client-later")
        client.signal("by-client-later", "go", None)
        result = client.result("by-client-later", timeout=30)
        assert (result.status, result.error) == ("completed", None)
        assert result.output == client.describe("by-client-later").output
        failed = client.result(client.start("breaks").execution_id, timeout=30)
        assert (
            failed.status == "failed" and failed.error is not None and failed.error.code == "BROKEN"
        )


async def test_the_async_client_gets_a_result_in_one_call(results_server: ServerProcess) -> None:
    async with AsyncClient(results_server.url) as client:
        answer = await client.start("three", input={"n": 3}, execution_id="async-one", wait=60)
        assert isinstance(answer, Started)
        assert (answer.status, answer.output, answer.error) == ("completed", {"n": 3}, None)
        failed = await client.start("breaks", execution_id="async-broke", wait=60)
        assert failed.status == "failed" and failed.error is not None
        assert failed.error.code == "BROKEN"


async def test_the_async_client_answers_typed_models(results_server: ServerProcess) -> None:
    async with AsyncClient(results_server.url) as client:
        await client.start("waits", execution_id="async-typed")
        detail = await client.describe("async-typed")
        assert isinstance(detail, ExecutionDetail) and detail.status == "running"
        assert [(u.key, u.status) for u in detail.units] == [("w", "waiting")]
        assert await client.signal("async-typed", "go", {"why": "test"}) > 0
        result = await client.result("async-typed", timeout=30)
        assert isinstance(result, ExecutionResult) and result.status == "completed"
        history = await client.history("async-typed")
        assert history.events[0]["type"] == "WorkflowCreated"
        page = await client.executions(workflow="waits", limit=500)
        assert "async-typed" in {e.execution_id for e in page.executions}
        assert {d.name for d in await client.definitions()} >= {"three", "waits"}
        assert any(w.worker_id == "results-worker" and w.online for w in await client.workers())


async def test_the_async_client_cancels_and_reads_the_cause(
    results_server: ServerProcess,
) -> None:
    async with AsyncClient(results_server.url) as client:
        await client.start("waits", execution_id="async-cancel")
        detail = await client.cancel("async-cancel", "changed my mind")
        assert detail.execution_id == "async-cancel"
        result = await client.result("async-cancel", timeout=30)
        assert result.status == "cancelled" and result.output is None
        assert result.error == ResultError(code="CANCELLED", message="changed my mind")


async def test_the_async_client_raises_the_api_refusal(results_server: ServerProcess) -> None:
    async with AsyncClient(results_server.url) as client:
        with pytest.raises(ApiError) as refused:
            await client.describe("nobody-started-this")
    assert (refused.value.status, refused.value.code) == (404, "NOT_FOUND")
    assert refused.value.message == "execution not found"


async def test_both_clients_say_unavailable_when_no_server_answers() -> None:
    url = f"http://127.0.0.1:{unused_port()}"
    async with AsyncClient(url, timeout=5) as client:
        with pytest.raises(ApiError) as refused:
            await client.workers()
    assert refused.value.code == "UNAVAILABLE" and url in refused.value.message
    with Client(url, timeout=5) as sync, pytest.raises(ApiError) as refused:
        sync.workers()
    assert refused.value.code == "UNAVAILABLE"
    assert not await AsyncClient(url).ready()


def unused_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port
