"""What waits to be sent to one worker is bounded by its credit (http-api.md, "Connection
limits"): a worker that takes its whole concurrency at once is never closed for it, while a worker
that stops reading is no longer read either, and is closed with 1008 once a write has stalled for
:data:`WRITE_STALL` seconds, losing its connection as a worker that vanished does."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import pytest
import trio
import trio.testing

from orbit_actors.runtime import Runtime, RuntimeConfig, open_runtime
from orbit_actors.server import gateway
from orbit_actors.server.gateway import MAX_OUTBOX, WRITE_STALL, serve_connection
from orbit_actors.testing import MemoryStore

from ..runtime.conftest import workflow

ONE = workflow("steps: [{id: a, task: t, input: {n: '${input.n}'}}]\n", name="one")


def register(concurrency: int) -> str:
    return json.dumps({"type": "register", "worker_id": "w", "concurrency": concurrency,
                       "contracts": [{"task_name": "t", "contract_version": "1"}]})  # fmt: skip


class FakeSocket:
    """A worker's socket: it sends ``frames`` (then nothing) and reads what the server sends
    once ``reading`` is set (before that every send blocks, as on a full socket)."""

    def __init__(self, frames: list[str]) -> None:
        self.frames = frames
        self.reading = trio.Event()
        self.received: list[dict[str, object]] = []
        self.close_code: int | None = None

    async def accept(self) -> None:
        pass

    async def receive(self) -> str | bytes:
        await trio.lowlevel.checkpoint()
        if not self.frames:
            await trio.sleep_forever()
        return self.frames.pop(0)

    async def send_utf8(self, *payloads: bytes) -> None:
        await self.reading.wait()
        self.received.extend(json.loads(payload) for payload in payloads)

    async def close(self, code: int, reason: str = "") -> None:
        self.close_code = code

    def tasks(self) -> int:
        return sum(1 for message in self.received if message["type"] == "task")


@pytest.fixture
async def runtime(autojump_clock: trio.testing.MockClock) -> AsyncIterator[Runtime]:
    async with open_runtime(MemoryStore(), RuntimeConfig(session_timeout_ms=60_000)) as opened:
        await opened.register_definition(ONE)
        yield opened


async def test_a_worker_that_stops_reading_is_closed_with_1008_after_a_stalled_write(
    runtime: Runtime, autojump_clock: trio.testing.MockClock
) -> None:
    heartbeats = [json.dumps({"type": "heartbeat"})] * (MAX_OUTBOX * 2)
    worker = FakeSocket([register(1), *heartbeats])  # never reads
    began = trio.current_time()
    await serve_connection(runtime, worker)
    assert worker.close_code == 1008
    assert trio.current_time() - began >= WRITE_STALL
    assert len(worker.frames) > MAX_OUTBOX  # what it sent meanwhile was not read either
    assert [w.online for w in await runtime.workers()] == [False]


async def test_answers_wait_for_a_slow_reader_within_the_bound_and_reading_pauses(
    runtime: Runtime, monkeypatch: pytest.MonkeyPatch, autojump_clock: trio.testing.MockClock
) -> None:
    waiting: list[int] = []
    take = gateway._Outbox.take

    async def counted_take(self: gateway._Outbox) -> tuple[list[bytes], gateway._Close | None]:
        taken = await take(self)
        waiting.append(len(taken[0]))
        return taken

    monkeypatch.setattr(gateway._Outbox, "take", counted_take)
    worker = FakeSocket([register(1), *[json.dumps({"type": "heartbeat"})] * (MAX_OUTBOX * 3)])
    async with trio.open_nursery() as nursery:
        nursery.start_soon(serve_connection, runtime, worker)
        await trio.sleep(WRITE_STALL / 2)  # a slow reader, not a stopped one
        worker.reading.set()
        with trio.fail_after(WRITE_STALL):  # virtual seconds (autojump)
            while worker.frames or len(worker.received) <= MAX_OUTBOX * 3:
                await trio.sleep(0.1)
        nursery.cancel_scope.cancel()
    assert worker.close_code is None
    assert len(worker.received) == 1 + MAX_OUTBOX * 3  # registered, then every heartbeat's ack
    assert max(waiting) <= MAX_OUTBOX


async def test_a_worker_that_takes_its_whole_credit_at_once_is_not_closed(
    runtime: Runtime, autojump_clock: trio.testing.MockClock
) -> None:
    worker = FakeSocket([register(2000)])
    async with trio.open_nursery() as nursery:
        nursery.start_soon(serve_connection, runtime, worker)
        await trio.testing.wait_all_tasks_blocked()
        for n in range(2000):  # 2,000 task frames wait for a writer that cannot write yet
            await runtime.start("one", input={"n": n})
        worker.reading.set()
        with trio.fail_after(WRITE_STALL):  # virtual seconds (autojump)
            while worker.tasks() < 2000:
                await trio.sleep(0.1)
        assert [w.online for w in await runtime.workers()] == [True]
        nursery.cancel_scope.cancel()
    assert worker.close_code is None
