"""The Python worker SDK against a real server (in this process, on a loopback port and a real
SQLite file): type-hinted inputs and outputs, failures, threads, cancellation, draining."""

from __future__ import annotations

import signal
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
import trio
from pydantic import BaseModel

from orbit_actors import TaskContext, TaskFailed, Worker
from orbit_actors.server import ServerOptions, serve

from .harness import ServerProcess, WorkerProcess, wait_until

TASKS = """
workflow: sdk
version: 1.0.0
tasks: {{{task}: {{version: "1"}}}}
retry: {{max_attempts: 2, initial_interval: 10ms}}
steps: [{{id: s, task: {task}, input: {input}}}]
output: "${{steps.s.output}}"
"""


class Order(BaseModel):
    order_id: str
    amount: float


class Receipt(BaseModel):
    receipt: str
    cents: int


async def run_one(url: str, task: str, input: Any) -> dict[str, Any]:
    """Deploy a one-step workflow calling ``task``, start it, return its detail once finished."""
    async with httpx.AsyncClient(base_url=url, timeout=30) as api:
        source = TASKS.format(task=task, input=input)
        deployed = await api.post(
            "/v1/definitions", content=source, headers={"content-type": "application/yaml"}
        )
        assert deployed.is_success, deployed.text
        started = await api.post("/v1/executions", json={"workflow": "sdk", "version": "1.0.0"})
        execution_id = started.json()["execution_id"]
        await api.get(f"/v1/executions/{execution_id}/wait", params={"timeout": 30})
        detail: dict[str, Any] = (await api.get(f"/v1/executions/{execution_id}")).json()
        return detail


@pytest.fixture
async def url(tmp_path: Path) -> AsyncIterator[str]:
    async with trio.open_nursery() as nursery:
        urls: list[str] = await nursery.start(
            serve, ServerOptions(db=tmp_path / "orbit.db", bind="127.0.0.1:0")
        )
        yield urls[0]
        nursery.cancel_scope.cancel()


@asynccontextmanager
async def running(worker: Worker) -> AsyncIterator[Worker]:
    async with trio.open_nursery() as nursery:
        await nursery.start(worker.serve)
        yield worker
        nursery.cancel_scope.cancel()


def ws(url: str) -> str:
    return "ws" + url[4:]


async def test_inputs_and_outputs_are_converted_from_type_hints(url: str) -> None:
    worker = Worker(ws(url), worker_id="typed")
    seen: list[Order] = []

    @worker.task("pay")
    async def pay(ctx: TaskContext, order: Order) -> Receipt:
        seen.append(order)
        assert ctx.idempotency_key.endswith("/1/s") and ctx.attempt == 1
        return Receipt(receipt=f"r-{order.order_id}", cents=int(order.amount * 100))

    async with running(worker):
        detail = await run_one(url, "pay", '{order_id: "o-1", amount: 2.5}')
    assert detail["status"] == "completed"
    assert detail["output"] == {"receipt": "r-o-1", "cents": 250}
    assert seen == [Order(order_id="o-1", amount=2.5)]


async def test_an_input_that_fails_validation_is_a_non_retryable_invalid_task_input(
    url: str,
) -> None:
    worker = Worker(ws(url), worker_id="strict")

    @worker.task("pay")
    async def pay(order: Order) -> Receipt:
        raise AssertionError("never called")

    async with running(worker):
        detail = await run_one(url, "pay", "{order_id: 5}")
    assert detail["status"] == "failed"
    assert detail["error"]["code"] == "INVALID_TASK_INPUT"
    assert detail["units"][0]["attempt"] == 1  # not retried


async def test_task_failed_reports_its_code_and_retryability(url: str) -> None:
    worker = Worker(ws(url), worker_id="failing")

    @worker.task("charge")
    async def charge(request: dict[str, Any]) -> None:
        raise TaskFailed("CARD_DECLINED", "declined", retryable=False, details={"bank": "x"})

    async with running(worker):
        detail = await run_one(url, "charge", "{}")
    assert detail["error"]["code"] == "CARD_DECLINED" and detail["units"][0]["attempt"] == 1


async def test_any_other_exception_is_retryable_and_named_by_its_type(url: str) -> None:
    worker = Worker(ws(url), worker_id="buggy")
    calls: list[int] = []

    @worker.task("flaky")
    async def flaky(ctx: TaskContext) -> None:
        calls.append(ctx.attempt)
        raise ValueError("bad value")

    async with running(worker):
        detail = await run_one(url, "flaky", "{}")
    assert calls == [1, 2]
    assert detail["error"]["code"] == "ValueError" and "bad value" in detail["error"]["message"]


SMALL = """
workflow: small
version: 1.0.0
limits: {{max_payload_bytes: 200}}
tasks: {{{task}: {{version: "1"}}}}
steps: [{{id: s, task: {task}}}]
"""


@pytest.mark.parametrize("awaits", [False, True])
async def test_an_output_over_the_payload_limit_fails_output_too_large(
    url: str, awaits: bool
) -> None:
    worker = Worker(ws(url), worker_id="verbose")

    @worker.task("big")
    async def big() -> str:
        return "x" * 1000

    @worker.task("big_later")
    async def big_later() -> str:
        await trio.sleep(0)
        return "x" * 1000

    task = "big_later" if awaits else "big"
    async with running(worker), httpx.AsyncClient(base_url=url, timeout=30) as api:
        source = SMALL.format(task=task)
        await api.post(
            "/v1/definitions", content=source, headers={"content-type": "application/yaml"}
        )
        started = await api.post("/v1/executions", json={"workflow": "small"})
        execution_id = started.json()["execution_id"]
        await api.get(f"/v1/executions/{execution_id}/wait", params={"timeout": 30})
        detail = (await api.get(f"/v1/executions/{execution_id}")).json()
    assert detail["status"] == "failed"
    assert detail["error"]["code"] == "OUTPUT_TOO_LARGE" and "200" in detail["error"]["message"]
    assert detail["units"][0]["attempt"] == 1  # not retried


async def test_a_plain_function_runs_in_a_thread(url: str) -> None:
    worker = Worker(ws(url), worker_id="threads")

    @worker.task("blocking")
    def blocking(request: dict[str, Any]) -> dict[str, Any]:
        import threading

        return {"main": threading.current_thread() is threading.main_thread()}

    async with running(worker):
        detail = await run_one(url, "blocking", "{}")
    assert detail["output"] == {"main": False}


async def test_a_server_cancel_cancels_the_tasks_scope(url: str) -> None:
    worker = Worker(ws(url), worker_id="cancellable")
    began, cancelled = trio.Event(), trio.Event()

    @worker.task("long")
    async def long(ctx: TaskContext) -> None:
        began.set()
        try:
            await trio.sleep_forever()
        finally:
            cancelled.set()

    async with running(worker), httpx.AsyncClient(base_url=url) as api:
        source = TASKS.format(task="long", input="{}")
        await api.post(
            "/v1/definitions", content=source, headers={"content-type": "application/yaml"}
        )
        execution_id = (await api.post("/v1/executions", json={"workflow": "sdk"})).json()[
            "execution_id"
        ]
        with trio.fail_after(10):
            await began.wait()
            await api.post(f"/v1/executions/{execution_id}/cancel", json={})
            await cancelled.wait()
        summary = (await api.get(f"/v1/executions/{execution_id}/wait")).json()
    assert summary["status"] == "cancelled"


GATED = """
workflow: gated
version: 1.0.0
tasks: {gate: {version: "1"}}
steps: [{id: g, task: gate, input: {path: "${input.path}"}}]
output: "${steps.g.output}"
"""


def test_ctrl_c_drains_the_running_task_then_unregisters(tmp_path: Path) -> None:
    server = ServerProcess(tmp_path).start()
    log, gate = tmp_path / "starts.jsonl", tmp_path / "open"
    worker = WorkerProcess(server, "drainer", env={"E2E_LOG": str(log)})
    try:
        with server.client() as client:
            client.deploy(GATED)
            execution_id = client.start("gated", input={"path": str(gate)}).execution_id
            wait_until(log.exists, what="the task to start")
            worker.process.send_signal(signal.SIGINT)
            gate.touch()
            assert worker.process.wait(timeout=30) == 0
            assert client.wait(execution_id, timeout=10).status == "completed"
            (record,) = client.workers()
            assert record.online is False and record.sessions == 0
    finally:
        worker.stop()
        server.stop()
