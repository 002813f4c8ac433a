"""The result of an execution in one request, through a real server with a real worker: the
``wait`` answer carries ``output`` and ``error``, and ``POST /v1/executions?wait=S`` answers
once the execution has finished (or S seconds have passed) with its outcome."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

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
SUMMARY = {"execution_id", "workflow", "version", "status", "run", "started_at_ms",
           "closed_at_ms", "parent_id", "schedule_id"}  # fmt: skip


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
        assert (answer["status"], answer["output"]) == ("completed", {"n": 2})
        client.start("waits", execution_id="by-client-later")
        client.signal("by-client-later", "go", None)
        result = client.result("by-client-later", timeout=30)
        assert (result["status"], result["error"]) == ("completed", None)
        assert result["output"] == client.describe("by-client-later")["output"]
        failed = client.result(client.start("breaks")["execution_id"], timeout=30)
        assert failed["status"] == "failed" and failed["error"]["code"] == "BROKEN"
