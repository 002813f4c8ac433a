"""A worker that stops reading, on a real WebSocket through the transport to the gateway: once its
socket is full the write stalls, the connection is closed, and its session goes offline as when
a worker vanishes, while the server goes on."""

from __future__ import annotations

import json
import socket

import trio
from wsproto.events import Message

from orbit_actors.http import Limits, Server, open_listeners
from orbit_actors.runtime import RuntimeConfig, open_runtime
from orbit_actors.server.app import AppState, OrbitApp, refusal
from orbit_actors.testing import MemoryStore

from ..http.test_limits import answer_of
from ..http.test_transport import WsClient
from ..runtime.conftest import workflow

WIDE = workflow('steps: [{id: a, task: t, input: {blob: "${input.blob}"}}]\n', name="wide")
REGISTER = {"type": "register", "worker_id": "deaf", "concurrency": 100,
            "contracts": [{"task_name": "t", "contract_version": "1"}]}  # fmt: skip


async def test_a_worker_that_stops_reading_its_tasks_is_closed_and_goes_offline() -> None:
    async with open_runtime(MemoryStore(), RuntimeConfig(session_timeout_ms=60_000)) as runtime:
        await runtime.register_definition(WIDE)
        limits = Limits(10**7, 10**7, write_timeout=0.5)
        server = Server(OrbitApp(AppState(runtime=runtime)), limits, refusal)
        listeners, urls = await open_listeners("127.0.0.1:0", None)
        async with trio.open_nursery() as nursery:
            await nursery.start(server.serve, listeners, nursery)
            deaf, _ = await WsClient.open(int(urls[0].rsplit(":", 1)[1]), "/v1/workers/connect")
            deaf.stream.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            await deaf.send(Message(data=json.dumps(REGISTER)))
            for _ in range(40):  # 8 MB of tasks: more than the socket buffers hold
                await runtime.start("wide", input={"blob": "x" * 200_000})
            await answer_of(deaf.stream)  # what the buffers held, then the end
            assert [worker.online for worker in await runtime.workers()] == [False]
            nursery.cancel_scope.cancel()
