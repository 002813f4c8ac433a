"""Flow control's bad input through a real server: registration refuses limits and priorities out
of range and keys reading undeclared fields (400 INVALID_IR with the path and the range); a start
whose priority or key does not evaluate is refused (400) and writes nothing."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from .harness import ServerProcess

FLOWED = """
workflow: flowed
version: 1.0.0
input: {type: object, properties: {customer: {}, tier: {type: string}, p: {}}}
flow:
  priority: '${has(input.p) ? input.p : (has(input.tier) && input.tier == "gold" ? 1 : 5)}'
  concurrency: {key: '${input.customer}', limit: 2, on_full: queue}
tasks:
  charge: {version: "1", rate_limit: {key: '${input.customer}', limit: 10, per: 1s}}
steps: [{id: v, value: 1}]
"""
YAML = {"content-type": "application/yaml"}


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[httpx.Client]:
    folder: Path = tmp_path_factory.mktemp("flow")
    server = ServerProcess(folder).start()
    with httpx.Client(base_url=server.url, timeout=30) as client:
        assert client.post("/v1/definitions", content=FLOWED, headers=YAML).is_success
        yield client
    server.stop()


def refusal(response: httpx.Response, status: int, code: str) -> str:
    assert response.status_code == status, response.text
    body = response.json()["error"]
    assert body["code"] == code, body
    message: str = body["message"]
    return message


def register(api: httpx.Client, flow: str, tasks: str = '{charge: {version: "1"}}') -> str:
    source = (
        "workflow: bad\nversion: 1.0.0\n"
        "input: {type: object, properties: {customer: {type: string}}}\n"
        f"flow: {flow}\ntasks: {tasks}\nsteps: [{{id: v, value: 1}}]\n"
    )
    return refusal(api.post("/v1/definitions", content=source, headers=YAML), 400, "INVALID_IR")


def test_a_concurrency_limit_below_one_is_invalid_ir_with_path_and_range(api: httpx.Client) -> None:
    message = register(api, "{concurrency: {key: '${input.customer}', limit: 0}}")
    assert "flow.concurrency.limit: limit must be at least 1 (got 0)" in message


def test_a_priority_outside_1_to_9_is_invalid_ir(api: httpx.Client) -> None:
    message = register(api, "{priority: 10}")
    assert "flow.priority: priority must be from 1 (first) to 9 (got 10)" in message


def test_a_rate_window_below_10ms_is_invalid_ir(api: httpx.Client) -> None:
    message = register(
        api, "{}", "{charge: {version: '1', rate_limit: {key: x, limit: 5, per: 9ms}}}"
    )
    assert "tasks.charge.rate_limit.per: per must be at least 10ms (got 9ms)" in message


def test_a_key_reading_an_undeclared_field_is_invalid_ir(api: httpx.Client) -> None:
    message = register(api, "{concurrency: {key: '${input.tenant}', limit: 1}}")
    assert "flow.concurrency.key: reads `input.tenant`, which the input schema does not" in message
    assert api.get("/v1/definitions/bad").status_code == 404


def test_a_key_that_is_not_a_string_or_number_is_flow_key_error(api: httpx.Client) -> None:
    body = {"workflow": "flowed", "execution_id": "k-1", "input": {"customer": [1]}}
    message = refusal(api.post("/v1/executions", json=body), 400, "FLOW_KEY_ERROR")
    assert (
        message == "flow.concurrency.key evaluated to an array; a key must be a string or a number"
    )
    assert api.get("/v1/executions/k-1").status_code == 404


def test_a_priority_outside_1_to_9_at_start_is_refused(api: httpx.Client) -> None:
    body = {"workflow": "flowed", "execution_id": "p-1", "input": {"customer": "a", "p": 0}}
    message = refusal(api.post("/v1/executions", json=body), 400, "INVALID_INPUT")
    assert message == "flow.priority evaluated to 0; a priority is an integer from 1 (first) to 9"
    assert api.get("/v1/executions/p-1").status_code == 404


def test_a_start_records_its_priority_and_key(api: httpx.Client) -> None:
    body = {"workflow": "flowed", "execution_id": "ok-1", "input": {"customer": 7, "tier": "gold"}}
    assert api.post("/v1/executions", json=body).status_code == 201
    created = api.get("/v1/executions/ok-1/history").json()["events"][0]
    assert created["flow"] == {"priority": 1, "key": "7", "rate_keys": {"charge": "7"}}
