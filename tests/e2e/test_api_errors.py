"""Every error code of http-api.md (but schedules and authentication), produced through a real
server: the exact status, code and message, and nothing recorded by a refused call."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from .harness import ServerProcess

SIGNALS = """
workflow: desk
version: 1.0.0
tasks: {echo: {version: "1"}}
input: {type: object, properties: {n: {type: integer}}, required: [n]}
signals:
  approve: {type: object, required: [by], properties: {by: {type: string}}}
queries:
  stage: steps.wait.status
  broken: input.missing.deeper
steps:
  - {id: wait, await: approve}
"""
CHILD_MISSING = """
workflow: parent
version: 1.0.0
workflows: {ghost: {version: 2.0.0}}
steps: [{id: kid, workflow: ghost}]
"""
QUICK = """
workflow: quick
version: 1.0.0
steps: [{id: v, value: 1}]
output: "${steps.v.output}"
"""


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[httpx.Client]:
    folder: Path = tmp_path_factory.mktemp("api")
    server = ServerProcess(
        folder, "--max-active-executions", "3", "--max-payload-bytes", "1000"
    ).start()
    with httpx.Client(base_url=server.url, timeout=30) as client:
        for source in (SIGNALS, QUICK):
            headers = {"content-type": "application/yaml"}
            assert client.post("/v1/definitions", content=source, headers=headers).is_success
        yield client
    server.stop()


def error(response: httpx.Response, status: int, code: str) -> str:
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) == {"error"} and body["error"]["code"] == code, body
    message: str = body["error"]["message"]
    return message


def start(api: httpx.Client, **body: Any) -> httpx.Response:
    return api.post("/v1/executions", json={"workflow": "desk", "input": {"n": 1}, **body})


def finished_quick(api: httpx.Client) -> str:
    execution_id: str = api.post("/v1/executions", json={"workflow": "quick"}).json()[
        "execution_id"
    ]
    assert api.get(f"/v1/executions/{execution_id}/wait").json()["status"] == "completed"
    return execution_id


# -- definitions ---------------------------------------------------------------------------
def test_a_malformed_definition_is_invalid_ir_with_line_and_path(api: httpx.Client) -> None:
    bad = "workflow: x\nversion: 1.0.0\nsteps:\n  - {id: a, task: nowhere}\n"
    message = error(
        api.post("/v1/definitions", content=bad, headers={"content-type": "application/yaml"}),
        400,
        "INVALID_IR",
    )
    assert "steps[0]" in message


def test_yaml_syntax_errors_are_invalid_ir(api: httpx.Client) -> None:
    error(
        api.post(
            "/v1/definitions", content="workflow: [", headers={"content-type": "application/yaml"}
        ),
        400,
        "INVALID_IR",
    )


def test_a_json_ir_registers_like_yaml(api: httpx.Client) -> None:
    ir = {"workflow": "json-made", "version": "1.0.0", "steps": [{"id": "v", "value": 2}]}
    first = api.post("/v1/definitions", json=ir)
    assert first.status_code == 201 and first.json()["created"] is True
    again = api.post("/v1/definitions", json=ir)
    assert again.status_code == 200 and again.json()["created"] is False


def test_an_unregistered_child_names_it(api: httpx.Client) -> None:
    message = error(
        api.post(
            "/v1/definitions", content=CHILD_MISSING, headers={"content-type": "application/yaml"}
        ),
        400,
        "CHILD_NOT_REGISTERED",
    )
    assert "ghost@2.0.0" in message and "register the child first" in message


def test_a_changed_definition_under_the_same_version_conflicts(api: httpx.Client) -> None:
    changed = QUICK.replace("value: 1", "value: 2")
    message = error(
        api.post("/v1/definitions", content=changed, headers={"content-type": "application/yaml"}),
        409,
        "DEFINITION_CONFLICT",
    )
    assert "bump the version" in message


def test_an_unknown_definition_is_workflow_not_found(api: httpx.Client) -> None:
    error(api.get("/v1/definitions/nope"), 404, "WORKFLOW_NOT_FOUND")
    error(api.get("/v1/definitions/desk/9.9.9"), 404, "WORKFLOW_NOT_FOUND")


def test_definitions_are_listed_and_shown_with_their_ir(api: httpx.Client) -> None:
    names = {d["name"] for d in api.get("/v1/definitions").json()["definitions"]}
    assert {"desk", "quick"} <= names
    one = api.get("/v1/definitions/desk").json()
    assert one["version"] == "1.0.0" and one["ir"]["workflow"] == "desk"


# -- starting ------------------------------------------------------------------------------
def test_starting_an_unknown_workflow_names_it(api: httpx.Client) -> None:
    message = error(
        api.post("/v1/executions", json={"workflow": "order", "version": "9.9.9"}),
        404,
        "WORKFLOW_NOT_FOUND",
    )
    assert message == "workflow order@9.9.9 is not registered"


def test_an_input_against_the_schema_is_invalid_input_with_its_path(api: httpx.Client) -> None:
    message = error(start(api, input={"n": "one"}), 400, "INVALID_INPUT")
    assert message.startswith("workflow input is invalid at $.n")
    error(start(api, input=[1, 2]), 400, "INVALID_INPUT")


def test_a_malformed_execution_id_is_refused(api: httpx.Client) -> None:
    message = error(start(api, execution_id="has spaces"), 400, "INVALID_EXECUTION_ID")
    assert "letters, digits and - _ . :" in message
    error(start(api, execution_id="x" * 201), 400, "INVALID_EXECUTION_ID")


def test_an_id_taken_by_another_workflow_is_execution_exists(api: httpx.Client) -> None:
    first = api.post("/v1/executions", json={"workflow": "quick", "execution_id": "taken-1"})
    assert first.status_code == 201
    same = api.post("/v1/executions", json={"workflow": "quick", "execution_id": "taken-1"})
    assert same.status_code == 200 and same.json() == {"execution_id": "taken-1", "created": False}
    message = error(start(api, execution_id="taken-1"), 409, "EXECUTION_EXISTS")
    assert message.startswith("execution `taken-1` already exists for a different workflow")


def test_an_input_over_the_payload_limit_records_nothing(api: httpx.Client) -> None:
    error(
        start(api, input={"n": 1, "pad": "x" * 2000}, execution_id="too-big"),
        413,
        "PAYLOAD_TOO_LARGE",
    )
    error(api.get("/v1/executions/too-big"), 404, "NOT_FOUND")


def test_a_body_over_the_request_limit_is_refused_before_parsing(api: httpx.Client) -> None:
    huge = b'{"workflow": "desk", "input": "' + b"x" * 300_000 + b'"}'
    error(
        api.post("/v1/executions", content=huge, headers={"content-type": "application/json"}),
        413,
        "PAYLOAD_TOO_LARGE",
    )


@pytest.mark.parametrize(
    ("body", "field"),
    [(b"{not json", "not valid JSON"), (b'{"workflow": 5}', "body.workflow"),
     (b'{"workflow": "desk", "colour": 1}', "body.colour"), (b"[1]", "body")],
)  # fmt: skip
def test_a_malformed_body_is_invalid_request_naming_the_field(
    api: httpx.Client, body: bytes, field: str
) -> None:
    response = api.post(
        "/v1/executions", content=body, headers={"content-type": "application/json"}
    )
    assert field in error(response, 400, "INVALID_REQUEST")


def test_the_active_execution_limit_is_resource_exhausted(api: httpx.Client) -> None:
    running = [start(api) for _ in range(3)]
    refused = [r for r in running if r.status_code == 429]
    for _ in range(3 - len(refused)):
        refused.append(start(api))
    assert refused and "already running" in error(refused[-1], 429, "RESOURCE_EXHAUSTED")
    for response in running:
        if response.status_code == 201:
            api.post(f"/v1/executions/{response.json()['execution_id']}/cancel")


# -- one execution -------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("method", "tail"),
    [("GET", ""), ("GET", "/history"), ("GET", "/wait?timeout=0"), ("POST", "/cancel"),
     ("POST", "/resume"), ("POST", "/signals/approve"), ("GET", "/queries/stage")],
)  # fmt: skip
def test_every_execution_endpoint_answers_not_found_for_an_unknown_id(
    api: httpx.Client, method: str, tail: str
) -> None:
    response = api.request(
        method, f"/v1/executions/ghost{tail}", json={} if method == "POST" else None
    )
    assert error(response, 404, "NOT_FOUND") == "execution not found"


def test_a_run_that_does_not_exist_is_run_not_found(api: httpx.Client) -> None:
    execution_id = finished_quick(api)
    message = error(api.get(f"/v1/executions/{execution_id}/history?run=7"), 404, "RUN_NOT_FOUND")
    assert message == f"execution `{execution_id}` has runs 1 to 1; there is no run 7"
    error(api.get(f"/v1/executions/{execution_id}/history?run=abc"), 400, "INVALID_REQUEST")
    error(api.get(f"/v1/executions/{execution_id}/history?run=0"), 400, "INVALID_REQUEST")


def test_history_lists_the_runs_events(api: httpx.Client) -> None:
    execution_id = finished_quick(api)
    history = api.get(f"/v1/executions/{execution_id}/history").json()
    assert history["execution_id"] == execution_id and history["run"] == 1
    types = [e["type"] for e in history["events"]]
    assert types[0] == "WorkflowCreated" and types[-1] == "WorkflowCompleted"
    assert [e["seq"] for e in history["events"]] == list(range(1, len(types) + 1))


def test_waiting_past_the_timeout_is_wait_timeout(api: httpx.Client) -> None:
    execution_id = start(api).json()["execution_id"]
    message = error(api.get(f"/v1/executions/{execution_id}/wait?timeout=0.2"), 408, "WAIT_TIMEOUT")
    assert execution_id in message
    api.post(f"/v1/executions/{execution_id}/cancel")


def test_cancelling_a_finished_execution_is_execution_finished(api: httpx.Client) -> None:
    execution_id = finished_quick(api)
    message = error(
        api.post(f"/v1/executions/{execution_id}/cancel", json={}), 409, "EXECUTION_FINISHED"
    )
    assert message == "execution is already completed"


def test_cancel_answers_202_with_the_detail(api: httpx.Client) -> None:
    execution_id = start(api).json()["execution_id"]
    response = api.post(
        f"/v1/executions/{execution_id}/cancel", json={"reason": "no longer needed"}
    )
    assert response.status_code == 202 and response.json()["execution_id"] == execution_id
    assert api.get(f"/v1/executions/{execution_id}/wait").json()["status"] == "cancelled"


def test_resuming_an_execution_that_is_not_quarantined_is_refused(api: httpx.Client) -> None:
    execution_id = finished_quick(api)
    error(api.post(f"/v1/executions/{execution_id}/resume"), 409, "NOT_QUARANTINED")


def test_signals_unknown_invalid_and_accepted(api: httpx.Client) -> None:
    execution_id = start(api).json()["execution_id"]
    base = f"/v1/executions/{execution_id}/signals"
    message = error(
        api.post(f"{base}/aprove", json={"payload": {"by": "x"}}), 404, "UNKNOWN_SIGNAL"
    )
    assert message == "desk@1.0.0 has no signal `aprove`; declared: approve"
    error(api.post(f"{base}/approve", json={"payload": {"by": 5}}), 422, "SIGNAL_PAYLOAD_INVALID")
    error(
        api.post(f"{base}/approve", json={"payload": {"by": "x" * 2000}}), 413, "PAYLOAD_TOO_LARGE"
    )
    accepted = api.post(f"{base}/approve", json={"payload": {"by": "ada"}})
    assert accepted.status_code == 202 and isinstance(accepted.json()["seq"], int)
    assert api.get(f"/v1/executions/{execution_id}/wait").json()["status"] == "completed"
    error(api.post(f"{base}/approve", json={"payload": {"by": "ada"}}), 409, "EXECUTION_FINISHED")


def test_queries_unknown_failing_and_answered(api: httpx.Client) -> None:
    execution_id = start(api).json()["execution_id"]
    base = f"/v1/executions/{execution_id}/queries"
    assert api.get(f"{base}/stage").json() == {"value": "running"}
    error(api.get(f"{base}/nope"), 404, "UNKNOWN_QUERY")
    error(api.get(f"{base}/broken"), 422, "QUERY_FAILED")
    api.post(f"/v1/executions/{execution_id}/cancel")


# -- lists and the rest --------------------------------------------------------------------
def test_listing_filters_clamps_the_limit_and_pages(api: httpx.Client) -> None:
    for _ in range(3):
        finished_quick(api)
    page = api.get(
        "/v1/executions", params={"workflow": "quick", "status": "completed", "limit": 2}
    ).json()
    assert len(page["executions"]) == 2 and page["next_cursor"]
    assert all(e["workflow"] == "quick" for e in page["executions"])
    following = api.get(
        "/v1/executions", params={"workflow": "quick", "limit": 2, "cursor": page["next_cursor"]}
    ).json()
    assert not {e["execution_id"] for e in following["executions"]} & {
        e["execution_id"] for e in page["executions"]
    }
    assert api.get("/v1/executions", params={"limit": 5000}).status_code == 200
    error(api.get("/v1/executions", params={"limit": "many"}), 400, "INVALID_REQUEST")
    error(api.get("/v1/executions", params={"status": "sleeping"}), 400, "INVALID_REQUEST")
    error(api.get("/v1/executions", params={"cursor": "garbage!"}), 400, "INVALID_REQUEST")


def test_an_unknown_token_on_the_http_fallback_is_not_accepted(api: httpx.Client) -> None:
    ack = api.post("/v1/tasks/abc@ghost/complete", json={"output": 1}).json()
    assert ack["type"] == "ack" and ack["accepted"] is False
    error(api.post("/v1/tasks/abc@ghost/fail", json={"error": {}}), 400, "INVALID_REQUEST")


def test_a_body_nobody_reads_does_not_corrupt_the_next_request(api: httpx.Client) -> None:
    for _ in range(3):
        assert api.request("GET", "/v1/executions", content=b'{"x": 1}').status_code == 200
        error(api.request("POST", "/v1/nothing", content=b"abc"), 404, "NOT_FOUND")
    assert api.get("/healthz").status_code == 200


def test_unknown_paths_and_methods_are_json_errors(api: httpx.Client) -> None:
    error(api.get("/v1/nothing"), 404, "NOT_FOUND")
    assert api.delete("/v1/executions").json()["error"]["code"] == "METHOD_NOT_ALLOWED"


def test_health_and_readiness(api: httpx.Client) -> None:
    assert api.get("/healthz").json() == {"status": "ok"}
    assert api.get("/readyz").json() == {"status": "ready"}


def test_metrics_are_prometheus_text(api: httpx.Client) -> None:
    finished_quick(api)
    text = api.get("/metrics").text
    assert (
        "orbit_ready 1" in text
        and 'orbit_executions_finished_total{status="completed",workflow="quick"}' in text
    )
