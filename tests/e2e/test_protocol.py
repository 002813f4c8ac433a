"""The worker protocol over a real WebSocket to a real server: every message and error code of
worker-protocol.md, spoken by hand."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
import trio
from trio_websocket import ConnectionClosed, WebSocketConnection, open_websocket_url

from .conftest import ECHO3
from .harness import ServerProcess

CONTRACTS = [{"task_name": "echo", "contract_version": "1"}]


@pytest.fixture(scope="module")
def proto_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    folder: Path = tmp_path_factory.mktemp("proto")
    server = ServerProcess(folder, "--max-payload-bytes", "2000", "--session-timeout", "5s").start()
    headers = {"content-type": "application/yaml"}
    httpx.post(f"{server.url}/v1/definitions", content=ECHO3, headers=headers).raise_for_status()
    yield server
    server.stop()


@pytest.fixture(autouse=True)
def cancel_leftovers(proto_server: ServerProcess) -> Iterator[None]:
    """Executions a test leaves running are cancelled, so their tasks reach no later test."""
    yield
    page = httpx.get(f"{proto_server.url}/v1/executions", params={"status": "running"}).json()
    for execution in page["executions"]:
        httpx.post(f"{proto_server.url}/v1/executions/{execution['execution_id']}/cancel", json={})


class Peer:
    """A hand-driven worker connection."""

    def __init__(self, ws: WebSocketConnection) -> None:
        self.ws = ws
        self.skipped: list[dict[str, Any]] = []  # messages passed over while looking for a type

    async def send(self, message: dict[str, Any] | str | bytes) -> None:
        await self.ws.send_message(
            message if isinstance(message, str | bytes) else json.dumps(message)
        )

    async def receive(self, kind: str | None = None, within: float = 10) -> dict[str, Any]:
        """The next message, or the next of type ``kind`` (others are kept for later)."""
        for index, kept in enumerate(self.skipped):
            if kind is None or kept["type"] == kind:
                return self.skipped.pop(index)
        with trio.fail_after(within):
            while True:
                message: dict[str, Any] = json.loads(await self.ws.get_message())
                if kind is None or message["type"] == kind:
                    return message
                self.skipped.append(message)

    async def ask(
        self, message: dict[str, Any] | str | bytes, kind: str | None = None
    ) -> dict[str, Any]:
        await self.send(message)
        return await self.receive(kind)

    async def register(self, worker_id: str = "w1", **extra: Any) -> dict[str, Any]:
        return await self.ask({"type": "register", "worker_id": worker_id, "concurrency": 8,
                               "contracts": CONTRACTS, **extra}, "registered")  # fmt: skip


@asynccontextmanager
async def peer(server: ServerProcess) -> AsyncIterator[Peer]:
    async with open_websocket_url(
        f"{server.ws_url}/v1/workers/connect", max_message_size=10**7
    ) as ws:
        yield Peer(ws)


def start_three(server: ServerProcess, execution_id: str | None = None) -> str:
    body: dict[str, Any] = {"workflow": "three", "input": {"n": 1}}
    if execution_id:
        body["execution_id"] = execution_id
    answer = httpx.post(f"{server.url}/v1/executions", json=body).json()
    return str(answer["execution_id"])


async def test_registration_answers_the_session_and_its_timing(proto_server: ServerProcess) -> None:
    async with peer(proto_server) as p:
        registered = await p.register("reg-1")
        assert registered["accepted"] is True and registered["resumed"] is False
        assert registered["session_timeout_ms"] == 5000
        assert registered["heartbeat_interval_ms"] == 1666  # at most a third of the timeout
        assert (await p.ask({"type": "heartbeat", "id": 7}))["type"] == "heartbeat_ack"
        credit = await p.ask({"type": "credit", "concurrency": 3, "id": "c"})
        assert credit == {"type": "credit_ack", "concurrency": 3, "ref": "c"}
        assert (await p.ask({"type": "unregister"}))["type"] == "unregistered"


@pytest.mark.parametrize(
    ("register", "code", "text"),
    [({"contracts": CONTRACTS}, "INVALID_REQUEST", "worker_id is required"),
     ({"worker_id": "w", "contracts": []}, "INVALID_REQUEST", "a worker must announce at least one task contract"),
     ({"worker_id": "w", "contracts": [{"task_name": "workflow:x", "contract_version": "1"}]}, "RESERVED_TASK", "`workflow:x` names a child workflow, not a worker task"),
     ({"worker_id": "w", "contracts": [{"task_name": "orbit.http.request", "contract_version": "1"}]}, "RESERVED_TASK", "`orbit.http.request` is a built-in task")],
)  # fmt: skip
async def test_a_refused_registration_keeps_the_socket_open_for_a_corrected_one(
    proto_server: ServerProcess, register: dict[str, Any], code: str, text: str
) -> None:
    async with peer(proto_server) as p:
        refused = await p.ask({"type": "register", **register})
        assert refused["type"] == "error" and refused["code"] == code and refused["message"] == text
        assert (await p.register("corrected"))["accepted"] is True


async def test_protocol_errors_are_answered_and_the_connection_stays(
    proto_server: ServerProcess,
) -> None:
    async with peer(proto_server) as p:
        assert (await p.ask({"type": "heartbeat", "id": 1}))["code"] == "NOT_REGISTERED"
        assert (await p.ask({"type": "dance", "id": 2})) == {
            "type": "error",
            "code": "UNKNOWN_MESSAGE",
            "message": "unknown message type 'dance'",
            "ref": 2,
        }
        assert (await p.ask("{not json"))["code"] == "INVALID_MESSAGE"
        assert (await p.ask(b"\x00\x01"))["code"] == "INVALID_MESSAGE"
        await p.register("errs")
        assert (await p.ask({"type": "register", "worker_id": "errs", "contracts": CONTRACTS}))[
            "code"
        ] == "ALREADY_REGISTERED"
        wrong = await p.ask({"type": "credit", "concurrency": "lots", "id": 3})
        assert (
            wrong["code"] == "INVALID_MESSAGE"
            and "concurrency" in wrong["message"]
            and wrong["ref"] == 3
        )
        assert (await p.ask({"type": "heartbeat"}))["type"] == "heartbeat_ack"


async def test_ten_protocol_errors_in_a_row_close_with_1008(proto_server: ServerProcess) -> None:
    async with peer(proto_server) as p:
        for _ in range(10):
            await p.send("garbage")
        with pytest.raises(ConnectionClosed) as closed:
            for _ in range(11):
                await p.receive()
        assert closed.value.reason is not None and closed.value.reason.code == 1008


async def test_a_frame_over_the_size_limit_closes_with_1009(proto_server: ServerProcess) -> None:
    async with peer(proto_server) as p:
        await p.register("big")
        with pytest.raises(ConnectionClosed) as closed:  # refused from the frame's header,
            await p.send({"type": "heartbeat", "pad": "x" * 200_000})  # maybe mid-send
            await p.receive()
        assert closed.value.reason is not None and closed.value.reason.code == 1009


async def test_tasks_are_pushed_and_results_acknowledged_once_durable(
    proto_server: ServerProcess,
) -> None:
    async with peer(proto_server) as p:
        await p.register("runner")
        execution_id = start_three(proto_server)
        for step in ("a", "b", "c"):
            task = await p.receive("task")
            assert task["execution_id"] == execution_id and task["step_id"] == step
            assert (
                task["idempotency_key"] == f"{execution_id}/1/{step}"
                and task["redelivery"] is False
            )
            assert "deadline_ms" not in task and "timeout_ms" not in task
            ack = await p.ask(
                {"type": "complete", "token": task["token"], "output": task["input"]}, "ack"
            )
            assert ack == {"type": "ack", "token": task["token"], "accepted": True}
        duplicate = await p.ask({"type": "complete", "token": task["token"], "output": {}}, "ack")
        assert duplicate["accepted"] is False
    summary = httpx.get(f"{proto_server.url}/v1/executions/{execution_id}/wait").json()
    assert summary["status"] == "completed"


async def test_a_result_over_the_payload_limit_is_refused_and_a_smaller_one_accepted(
    proto_server: ServerProcess,
) -> None:
    async with peer(proto_server) as p:
        await p.register("large")
        start_three(proto_server)
        task = await p.receive("task")
        refused = await p.ask(
            {"type": "complete", "token": task["token"], "output": {"pad": "x" * 5000}}
        )
        assert refused["type"] == "error" and refused["code"] == "PAYLOAD_TOO_LARGE"
        ack = await p.ask({"type": "complete", "token": task["token"], "output": {"n": 1}}, "ack")
        assert ack["accepted"] is True
        await p.ask({"type": "unregister"}, "unregistered")


async def test_a_result_for_another_workers_token_is_forbidden(proto_server: ServerProcess) -> None:
    async with peer(proto_server) as owner, peer(proto_server) as thief:
        await owner.register("owner")
        await thief.register("thief")
        await thief.ask({"type": "credit", "concurrency": 0}, "credit_ack")
        start_three(proto_server)
        task = await owner.receive("task")
        forbidden = await thief.ask({"type": "complete", "token": task["token"], "output": {}})
        assert forbidden["type"] == "error" and forbidden["code"] == "FORBIDDEN"
        ack = await owner.ask(
            {"type": "complete", "token": task["token"], "output": {"n": 1}}, "ack"
        )
        assert ack["accepted"] is True
        await owner.ask({"type": "unregister"}, "unregistered")


async def test_a_dropped_connection_resumes_its_session_and_its_late_result_is_accepted(
    proto_server: ServerProcess,
) -> None:
    async with peer(proto_server) as first:
        session = (await first.register("resumer"))["worker_session_id"]
        start_three(proto_server)
        task = await first.receive("task")
    async with peer(proto_server) as second:
        registered = await second.register("resumer", resume_session_id=session)
        assert registered["resumed"] is True and registered["worker_session_id"] == session
        assert (await second.receive("task"))["token"] == task["token"]  # pushed again
        ack = await second.ask(
            {"type": "complete", "token": task["token"], "output": {"n": 1}}, "ack"
        )
        assert ack["accepted"] is True
        await second.ask({"type": "unregister"}, "unregistered")


async def test_resuming_a_session_still_connected_closes_the_old_connection_with_4000(
    proto_server: ServerProcess,
) -> None:
    async with peer(proto_server) as first, peer(proto_server) as second:
        session = (await first.register("twice"))["worker_session_id"]
        assert (await second.register("twice", resume_session_id=session))["resumed"] is True
        with pytest.raises(ConnectionClosed) as closed:
            await first.receive()
        assert closed.value.reason is not None and closed.value.reason.code == 4000


async def test_a_cancelled_execution_pushes_a_cancel_for_its_task(
    proto_server: ServerProcess,
) -> None:
    async with peer(proto_server) as p:
        await p.register("cancelled")
        execution_id = start_three(proto_server)
        task = await p.receive("task")
        httpx.post(f"{proto_server.url}/v1/executions/{execution_id}/cancel", json={})
        cancel = await p.receive("cancel")
        assert cancel["tokens"] == [task["token"]] and cancel["reason"]
        late = await p.ask({"type": "complete", "token": task["token"], "output": {}}, "ack")
        assert late["accepted"] is False
        await p.ask({"type": "unregister"}, "unregistered")


async def test_the_http_fallback_completes_a_pushed_task(proto_server: ServerProcess) -> None:
    async with peer(proto_server) as p:
        await p.register("fallback")
        start_three(proto_server)
        task = await p.receive("task")
        response = await trio.to_thread.run_sync(
            lambda: httpx.post(
                f"{proto_server.url}/v1/tasks/{task['token']}/complete", json={"output": {"n": 1}}
            )
        )
        assert response.status_code == 200
        assert response.json() == {"type": "ack", "token": task["token"], "accepted": True}
        failed = await trio.to_thread.run_sync(
            lambda: httpx.post(
                f"{proto_server.url}/v1/tasks/{task['token']}/fail", json={"error": {"code": "X"}}
            )
        )
        assert failed.json()["accepted"] is False
        await p.ask({"type": "unregister"}, "unregistered")


async def test_a_connection_that_never_registers_is_closed_after_the_session_timeout(
    proto_server: ServerProcess,
) -> None:
    async with peer(proto_server) as silent:
        with pytest.raises(ConnectionClosed) as closed:
            await silent.receive(within=15)
        assert closed.value.reason is not None and closed.value.reason.code == 1008


async def test_a_flood_of_idle_and_garbage_connections_does_not_stall_a_worker(
    proto_server: ServerProcess,
) -> None:
    async with trio.open_nursery() as flood:
        opened = trio.Semaphore(0)

        async def idle_connection(garbage: bool) -> None:
            async with peer(proto_server) as p:
                opened.release()
                if garbage:
                    for _ in range(5):
                        await p.send(b"\xff" * 100)
                await trio.sleep_forever()

        for index in range(150):
            flood.start_soon(idle_connection, index % 3 == 0)
        for _ in range(150):
            await opened.acquire()
        async with peer(proto_server) as worker:
            await worker.register("amid-flood")
            start_three(proto_server)
            for _ in range(3):
                task = await worker.receive("task")
                await worker.ask(
                    {"type": "complete", "token": task["token"], "output": {"n": 1}}, "ack"
                )
            await worker.ask({"type": "unregister"}, "unregistered")
        flood.cancel_scope.cancel()
