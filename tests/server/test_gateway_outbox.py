"""The gateway's outbox is bounded: a worker that stops reading while the server has frames for
it is closed with 1008 and loses its connection, as a worker that vanished does."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import pytest
import trio

from orbit_actors.runtime import Runtime, RuntimeConfig, open_runtime
from orbit_actors.server.gateway import MAX_OUTBOX, serve_connection
from orbit_actors.testing import MemoryStore

REGISTER = {"type": "register", "worker_id": "stuck", "concurrency": 1,
            "contracts": [{"task_name": "t", "contract_version": "1"}]}  # fmt: skip


class StuckWorker:
    """A socket whose worker sends ``frames`` and never reads: every send blocks."""

    def __init__(self, frames: list[str]) -> None:
        self.frames = frames
        self.close_code: int | None = None

    async def accept(self) -> None:
        pass

    async def receive(self) -> str | bytes:
        await trio.lowlevel.checkpoint()
        if not self.frames:
            await trio.sleep_forever()
        return self.frames.pop(0)

    async def send(self, *messages: str) -> None:
        await trio.sleep_forever()  # the socket's buffers are full

    async def close(self, code: int, reason: str = "") -> None:
        self.close_code = code


@pytest.fixture
async def runtime() -> AsyncIterator[Runtime]:
    async with open_runtime(MemoryStore(), RuntimeConfig()) as opened:
        yield opened


async def test_a_worker_that_stops_reading_is_closed_with_1008_once_its_outbox_is_full(
    runtime: Runtime,
) -> None:
    heartbeats = [json.dumps({"type": "heartbeat"})] * (MAX_OUTBOX + 10)
    worker = StuckWorker([json.dumps(REGISTER), *heartbeats])
    with trio.fail_after(10):
        await serve_connection(runtime, worker)
    assert worker.close_code == 1008
    assert [w.online for w in await runtime.workers()] == [False]
