"""The worker SDK's WebSocket client (:mod:`orbit_actors.http.client_open`) against both servers
a worker meets, Orbit's own transport and hypercorn (``--server hypercorn``, wsproto on its
side): the SDK worker runs executions, and a client spoken by hand gets the close codes,
refusals and size limits worker-protocol.md names."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import trio

from orbit_actors.http import ClientWebSocket, HandshakeError, WebSocketClosedError, open_websocket

from .conftest import ECHO3
from .harness import ServerProcess, WorkerProcess

TOKEN = "transport-secret"
CONTRACTS = [{"task_name": "echo", "contract_version": "1"}]
GUARD = 30  # seconds: a hang guard, never a speed assertion


@pytest.fixture(scope="module", params=["orbit", "hypercorn"])
def either(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ServerProcess]:
    """A server of each kind, needing a worker token, with a small payload limit."""
    folder: Path = tmp_path_factory.mktemp(f"transport-{request.param}")
    server = ServerProcess(folder, "--server", request.param, "--worker-token", TOKEN,
                           "--admin-token", "admin", "--max-payload-bytes", "20000").start()  # fmt: skip
    with server.client("admin") as client:
        client.deploy(ECHO3)
    yield server
    server.stop()


def connect_url(server: ServerProcess) -> str:
    return f"{server.ws_url}/v1/workers/connect"


def auth() -> list[tuple[str, str]]:
    return [("Authorization", f"Bearer {TOKEN}")]


async def receive(ws: ClientWebSocket) -> dict[str, Any]:
    message: dict[str, Any] = json.loads(await ws.receive())
    return message


async def register(ws: ClientWebSocket, worker_id: str, **extra: Any) -> dict[str, Any]:
    await ws.send(json.dumps({"type": "register", "worker_id": worker_id, "concurrency": 4,
                              "contracts": CONTRACTS, **extra}))  # fmt: skip
    return await receive(ws)


def test_the_sdk_worker_runs_executions_on_either_server(either: ServerProcess) -> None:
    worker = WorkerProcess(either, f"sdk-{either.args[1]}", env={"ORBIT_WORKER_TOKEN": TOKEN})
    try:
        with either.client("admin") as client:
            ids = [client.start("three", input={"n": n}).execution_id for n in range(20)]
            for n, execution_id in enumerate(ids):
                summary = client.wait(execution_id, timeout=60)
                assert summary.status == "completed" and summary.output == {"n": n}
    finally:
        worker.stop()


async def test_the_handshake_without_the_worker_token_is_refused_with_401(
    either: ServerProcess,
) -> None:
    with trio.fail_after(GUARD), pytest.raises(HandshakeError) as raised:
        async with open_websocket(connect_url(either)):
            pass
    assert raised.value.status == 401


async def test_register_then_unregister_and_the_close_is_clean(either: ServerProcess) -> None:
    with trio.fail_after(GUARD):
        async with open_websocket(connect_url(either), headers=auth()) as ws:
            registered = await register(ws, "clean")
            assert registered["type"] == "registered" and registered["accepted"] is True
            await ws.send(json.dumps({"type": "unregister"}))
            assert (await receive(ws))["type"] == "unregistered"
        assert ws.close_reason is not None and ws.close_reason.code == 1000


async def test_ten_protocol_errors_in_a_row_close_with_1008(either: ServerProcess) -> None:
    with trio.fail_after(GUARD):
        async with open_websocket(connect_url(either), headers=auth()) as ws:
            for _ in range(10):
                await ws.send("not json")
            errors = []
            with pytest.raises(WebSocketClosedError) as raised:
                while True:
                    errors.append(await receive(ws))
    assert len(errors) == 10 and {e["code"] for e in errors} == {"INVALID_MESSAGE"}
    assert raised.value.code == 1008 and "protocol errors" in raised.value.reason


async def test_a_frame_over_the_servers_limit_closes_with_1009(either: ServerProcess) -> None:
    with trio.fail_after(GUARD):
        async with open_websocket(connect_url(either), headers=auth()) as ws:
            await register(ws, "big")
            await ws.send(json.dumps({"type": "heartbeat", "pad": "x" * 500_000}))
            with pytest.raises(WebSocketClosedError) as raised:
                while True:
                    await ws.receive()
    assert raised.value.code == 1009


async def test_a_resumed_session_closes_the_old_connection_with_4000(
    either: ServerProcess,
) -> None:
    with trio.fail_after(GUARD):
        async with open_websocket(connect_url(either), headers=auth()) as old:
            session = (await register(old, "resumer"))["worker_session_id"]
            async with open_websocket(connect_url(either), headers=auth()) as new:
                resumed = await register(new, "resumer", resume_session_id=session)
                assert resumed["resumed"] is True
                with pytest.raises(WebSocketClosedError) as raised:
                    while True:
                        await old.receive()
                assert (raised.value.code, raised.value.reason) == (
                    4000,
                    "session resumed elsewhere",
                )
                await new.send(json.dumps({"type": "heartbeat", "id": 1}))
                assert (await receive(new))["type"] == "heartbeat_ack"
