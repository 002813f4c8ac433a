"""A server message the worker cannot read (a type from a newer server, or fields a faulty one
got wrong) is skipped with a warning that says what was wrong; the session goes on and the
next task runs."""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
import trio

from orbit_actors.worker import Worker

GUARD = 20  # seconds: a hang guard, never a speed assertion
TASK = {
    "type": "task", "token": "t1", "execution_id": "e1", "workflow": "w", "workflow_version": "1",
    "step_id": "a", "task_name": "echo", "contract_version": "1", "input": {"x": 1},
    "idempotency_key": "e1/1/a", "attempt": 1, "redelivery": False,
}  # fmt: skip


class ScriptedServer:
    """A connection whose server answers the registration, then sends ``script``, and ends
    the session once the worker's first result came."""

    def __init__(self, script: list[dict[str, Any]]) -> None:
        self.sent: list[dict[str, Any]] = []
        self._to_worker, self._incoming = trio.open_memory_channel[str](100)
        self._script = script

    async def send(self, message: str) -> None:
        self.send_nowait(message)

    def send_nowait(self, message: str) -> None:
        decoded = json.loads(message)
        self.sent.append(decoded)
        if decoded["type"] == "register":
            registered = {"type": "registered", "worker_session_id": "s1",
                          "heartbeat_interval_ms": 60_000, "session_timeout_ms": 120_000}  # fmt: skip
            for reply in [registered, *self._script]:
                self._to_worker.send_nowait(json.dumps(reply))
        elif decoded["type"] in ("complete", "fail"):
            self._to_worker.send_nowait(json.dumps({"type": "unregistered"}))

    async def flush_queued(
        self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
    ) -> None:
        task_status.started()  # every send here is taken at once

    async def receive(self) -> str:
        return await self._incoming.receive()

    async def aclose(self, code: int = 1000, reason: str = "") -> None:
        self._to_worker.close()


async def _serve(script: list[dict[str, Any]]) -> ScriptedServer:
    server = ScriptedServer(script)
    worker = Worker("ws://127.0.0.1:1", worker_id="w1")

    @worker.task("echo")
    async def echo(value: dict[str, int]) -> dict[str, int]:
        return value

    @asynccontextmanager
    async def connect() -> AsyncIterator[ScriptedServer]:
        yield server

    worker._connect = connect  # type: ignore[method-assign]
    with trio.fail_after(GUARD):
        await worker.serve()
    return server


@pytest.mark.parametrize(
    "unreadable",
    [
        {"type": "from_a_newer_server", "anything": 1},
        {"type": "task", "token": "t0"},  # a task without its fields
        {"type": "ack", "token": "t0", "accepted": "perhaps"},
    ],
    ids=["unknown type", "task missing fields", "ack of a wrong type"],
)
async def test_an_unreadable_server_message_is_skipped_and_the_next_task_runs(
    unreadable: dict[str, Any], caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="orbit.worker"):
        server = await _serve([unreadable, TASK])
    results = [m for m in server.sent if m["type"] in ("complete", "fail")]
    assert results == [{"type": "complete", "id": "t1", "token": "t1", "output": {"x": 1}}]
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert warnings[0].startswith("skipped a server message this worker cannot read (")
    assert json.dumps(unreadable) in warnings[0]
