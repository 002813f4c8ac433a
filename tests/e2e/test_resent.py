"""A resumed session is sent again the tasks it holds, marked ``resent: true`` with the same
token and key and ``redelivery: false``, so a worker that keeps the tokens it is running does
not run one twice. The worker here speaks the protocol by hand and counts its executions per
idempotency key; a server restart and a dropped connection are the two ways to get a resend."""

from __future__ import annotations

import json
import signal
from collections import Counter
from pathlib import Path
from typing import Any

import trio
from trio_websocket import WebSocketConnection, open_websocket_url

from .conftest import ECHO3
from .harness import ServerProcess

CONTRACTS = [{"task_name": "echo", "contract_version": "1"}]


class CountingWorker:
    """Runs each task it is pushed unless it is a resend of a token it already runs; counts
    the runs per idempotency key. Tasks "run" until the test finishes them."""

    def __init__(self) -> None:
        self.runs: Counter[str] = Counter()
        self.running: dict[str, dict[str, Any]] = {}
        self.session = ""
        self.frames: list[dict[str, Any]] = []
        self.kept: list[dict[str, Any]] = []  # messages passed over while looking for a type

    async def register(self, ws: WebSocketConnection) -> dict[str, Any]:
        register = {"type": "register", "worker_id": "counter", "concurrency": 4,
                    "contracts": CONTRACTS, "resume_session_id": self.session or None}  # fmt: skip
        await ws.send_message(json.dumps(register))
        answer = await self._next(ws, "registered")
        self.session = answer["worker_session_id"]
        return answer

    async def take(self, ws: WebSocketConnection) -> dict[str, Any]:
        """The next task frame, run unless it is a resend of a token already running."""
        task = await self._next(ws, "task")
        self.frames.append(task)
        if not (task.get("resent") and task["token"] in self.running):
            self.runs[task["idempotency_key"]] += 1
            self.running[task["token"]] = task
        return task

    async def finish(self, ws: WebSocketConnection, token: str) -> dict[str, Any]:
        task = self.running.pop(token)
        await ws.send_message(
            json.dumps({"type": "complete", "token": token, "output": task["input"]})
        )
        return await self._next(ws, "ack")

    async def _next(self, ws: WebSocketConnection, kind: str) -> dict[str, Any]:
        for index, kept in enumerate(self.kept):
            if kept["type"] == kind:
                return self.kept.pop(index)
        with trio.fail_after(30):
            while True:
                message: dict[str, Any] = json.loads(await ws.get_message())
                if message["type"] == kind:
                    return message
                self.kept.append(message)


def start_three(server: ServerProcess, n: int) -> str:
    with server.client() as client:
        return client.start("three", input={"n": n}).execution_id


async def test_a_dropped_connection_resumed_gets_its_task_resent_and_it_runs_once(
    tmp_path: Path,
) -> None:
    server = ServerProcess(tmp_path, "--session-timeout", "30s").start()
    worker = CountingWorker()
    url = f"{server.ws_url}/v1/workers/connect"
    try:
        with server.client() as client:
            client.deploy(ECHO3)
        async with open_websocket_url(url) as ws:
            await worker.register(ws)
            execution_id = start_three(server, 1)
            first = await worker.take(ws)
        worker.kept.clear()  # what the closed connection carried is gone with it
        async with open_websocket_url(url) as ws:
            assert (await worker.register(ws))["resumed"] is True
            again = await worker.take(ws)
            assert again["token"] == first["token"]
            assert again["idempotency_key"] == first["idempotency_key"] == f"{execution_id}/1/a"
            assert again["resent"] is True and again["redelivery"] is False
            assert (await worker.finish(ws, first["token"]))["accepted"] is True
            for _ in "bc":
                task = await worker.take(ws)
                assert "resent" not in task
                await worker.finish(ws, task["token"])
        with server.client() as client:
            assert client.wait(execution_id, timeout=30).status == "completed"
    finally:
        server.stop()
    assert worker.runs == {f"{execution_id}/1/{step}": 1 for step in "abc"}


async def test_a_worker_holding_tasks_through_a_server_restart_runs_each_once(
    tmp_path: Path,
) -> None:
    server = ServerProcess(tmp_path, "--session-timeout", "30s").start()
    worker = CountingWorker()
    try:
        with server.client() as client:
            client.deploy(ECHO3)
        async with open_websocket_url(f"{server.ws_url}/v1/workers/connect") as ws:
            await worker.register(ws)
            ids = [start_three(server, n) for n in range(3)]
            held = [await worker.take(ws) for _ in ids]
            server.kill(signal.SIGKILL)
        server.start()
        worker.kept.clear()
        async with open_websocket_url(f"{server.ws_url}/v1/workers/connect") as ws:
            assert (await worker.register(ws))["resumed"] is True
            resent = [await worker.take(ws) for _ in ids]
            assert {t["token"] for t in resent} == {t["token"] for t in held}
            assert all(t["resent"] is True and t["redelivery"] is False for t in resent)
            while worker.running:
                token, task = next(iter(worker.running.items()))
                await worker.finish(ws, token)
                if task["step_id"] != "c":  # the next step's task comes
                    await worker.take(ws)
        with server.client() as client:
            for execution_id in ids:
                assert client.wait(execution_id, timeout=30).status == "completed"
    finally:
        server.stop()
    assert worker.runs == {f"{e}/1/{step}": 1 for e in ids for step in "abc"}
