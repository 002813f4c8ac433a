"""Who holds a task is known in one place: a result frees its worker's slot whichever way it
arrives (WebSocket or the HTTP fallback), and a child's result reaches only the run that started
that child."""

from __future__ import annotations

import json
from functools import partial
from typing import Any

import httpx
import trio
from trio_websocket import open_websocket_url

from .conftest import ECHO3
from .harness import ServerProcess, WorkerProcess, wait_until

CONTRACTS = [{"task_name": "echo", "contract_version": "1"}]


async def _next(ws: Any, kind: str, within: float = 10) -> dict[str, Any]:
    with trio.fail_after(within):
        while True:
            message: dict[str, Any] = json.loads(await ws.get_message())
            if message["type"] == kind:
                return message


def _complete_over_http(server: ServerProcess, token: str) -> dict[str, Any]:
    answer = httpx.post(f"{server.url}/v1/tasks/{token}/complete", json={"output": {"n": 1}})
    answer.raise_for_status()
    body: dict[str, Any] = answer.json()
    return body


async def test_results_sent_over_the_http_fallback_free_the_workers_slots(
    server: ServerProcess,
) -> None:
    api = server.client()
    api.deploy(ECHO3)
    url = f"{server.ws_url}/v1/workers/connect"
    async with open_websocket_url(url) as ws:
        register = {"type": "register", "worker_id": "fallback", "concurrency": 2,
                    "contracts": CONTRACTS}  # fmt: skip
        await ws.send_message(json.dumps(register))
        session = (await _next(ws, "registered"))["worker_session_id"]
        for index in range(4):
            api.start("three", input={"n": index}, execution_id=f"e{index}")
        first = [await _next(ws, "task"), await _next(ws, "task")]
        for task in first:
            ack = await trio.to_thread.run_sync(_complete_over_http, server, task["token"])
            assert ack == {"type": "ack", "token": task["token"], "accepted": True}
        second = [await _next(ws, "task"), await _next(ws, "task")]
        assert {t["token"] for t in second}.isdisjoint(t["token"] for t in first)
    async with open_websocket_url(url) as ws:  # resumed: only the unanswered tasks come again
        await ws.send_message(json.dumps({**register, "resume_session_id": session}))
        assert (await _next(ws, "registered"))["resumed"] is True
        again = [await _next(ws, "task"), await _next(ws, "task")]
        assert {t["token"] for t in again} == {t["token"] for t in second}


KID = """
workflow: kid
version: 1.0.0
input: {type: object, properties: {n: {type: integer}}}
signals: {go: null}
steps:
  - {id: hold, when: "input.n == 0", await: go}
output: {n: "${input.n}"}
"""
LOOPER = """
workflow: looper
version: 1.0.0
tasks: {echo: {version: "1"}}
workflows: {kid: {version: 1.0.0}}
input: {type: object, properties: {n: {type: integer}}}
steps:
  - {id: pre, when: "input.n > 0", task: echo, input: {n: "${input.n}"}}
  - {id: call, workflow: kid, input: {n: "${input.n}"}}
  - {id: again, when: "input.n > 0", continue_as_new: {n: "${input.n - 1}"}}
output: {got: "${steps.call.output.n}"}
"""


def test_a_later_runs_child_step_waits_for_its_own_child(
    server: ServerProcess, workers: list[WorkerProcess]
) -> None:
    api = server.client()
    api.deploy(KID)
    api.deploy(LOOPER)
    workers.append(WorkerProcess(server, "looper-worker"))
    parents = [f"loop-{index}" for index in range(60)]
    for parent in parents:
        api.start("looper", input={"n": 1}, execution_id=parent)

    def settled_in_run_2(parent: str) -> bool:
        detail = api.describe(parent)
        units = {unit.key: unit.status for unit in detail.units}
        waiting = units.get("call") == "dispatched"
        return bool(detail.run == 2 and (waiting or detail.status != "running"))

    for parent in parents:
        wait_until(partial(settled_in_run_2, parent), what=f"{parent} in run 2")
    for parent in parents:  # still waiting: run 1's child did not answer for run 2's
        detail = api.describe(parent)
        assert detail.status == "running" and detail.run == 2, detail
        assert api.describe(f"{parent}.run2.call").status == "running"
        api.signal(f"{parent}.run2.call", "go", None)
    for parent in parents:
        row = api.wait(parent, 30)
        assert row.status == "completed"
        assert api.describe(parent).output == {"got": 0}
