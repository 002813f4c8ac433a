"""A store that fails over (a PostgreSQL primary lost, its replica promoted): a commit fails while
the store cannot even be read back, or fails after it was written (the connection broke during
``COMMIT``: its outcome is unknown), or an execution is brought back while reads fail. Whatever
the store did, the actor's memory goes back to what is durable before the next command, a
worker's result for a running execution is never refused as unknown, and an attempt whose
dispatch was written is delivered to its worker rather than waited on for ever."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import trio
from trio.testing import MockClock

from orbit_actors.actors.execution import Passivation
from orbit_actors.decide.transitions import DUPLICATE
from orbit_actors.errors import StorageError
from orbit_actors.history.events import Event
from orbit_actors.runtime import Runtime, RuntimeConfig, open_runtime
from orbit_actors.store.base import Commit, ExecutionRow
from orbit_actors.testing import FakeWorker, MemoryStore
from orbit_actors.wire import messages as wire

from .conftest import workflow

ONE = workflow("steps: [{id: a, task: t}]\n")
TWO = workflow("steps: [{id: a, task: t}, {id: b, task: t}]\n")
WAITING = workflow("signals: {go: null}\nsteps: [{id: wait, await: go}]\n")


class FailingOver(MemoryStore):
    """The memory store, made to fail as a database failing over does: while :attr:`down`,
    every commit and read fails (nothing written); :attr:`write_then_fail` writes the next
    commit and then fails it (the answer to ``COMMIT`` was lost)."""

    def __init__(self) -> None:
        super().__init__()
        self.down = False
        self.write_then_fail = False

    def _check(self, doing: str) -> None:
        if self.down:
            raise StorageError(f"could not {doing} test.db: cannot connect")

    async def commit(self, commit: Commit) -> None:
        self._check("write to")
        await super().commit(commit)
        if self.write_then_fail:
            self.write_then_fail = False
            raise StorageError("could not write to test.db: the connection broke during COMMIT")

    async def history(self, execution_id: str, run: int | None = None) -> list[Event]:
        self._check("read")
        return await super().history(execution_id, run)

    async def histories(self, execution_ids: list[str]) -> dict[str, list[Event]]:
        self._check("read")
        return await super().histories(execution_ids)

    async def execution(self, execution_id: str) -> ExecutionRow | None:
        self._check("read")
        return await super().execution(execution_id)


@pytest.fixture
async def store() -> FailingOver:
    return FailingOver()


@pytest.fixture
async def runtime(store: FailingOver, autojump_clock: MockClock) -> AsyncIterator[Runtime]:
    config = RuntimeConfig(session_timeout_ms=30_000, passivation=Passivation(idle_s=5))
    async with open_runtime(store, config) as rt:
        yield rt


async def test_a_result_whose_commit_failed_while_the_store_was_unreadable_is_taken_when_sent_again(
    runtime: Runtime, store: FailingOver, autojump_clock: MockClock
) -> None:
    await runtime.register_definition(ONE)
    await runtime.start("wf", execution_id="e")
    worker = FakeWorker(runtime, auto=False)
    await worker.register()
    task = await worker.first_task()
    store.down = True
    refused = await worker.complete(task.token, {"n": 1})
    assert isinstance(refused, wire.ErrorMessage) and refused.code == "STORAGE_ERROR"
    await trio.sleep(1)  # the store stays away a while: the result must not be taken from memory
    store.down = False
    again = await worker.complete(task.token, {"n": 1})
    assert isinstance(again, wire.Ack) and again.accepted, again
    assert (await runtime.wait("e", 60)).status == "completed"


async def test_a_dispatch_written_by_a_commit_reported_failed_reaches_its_worker(
    runtime: Runtime, store: FailingOver, autojump_clock: MockClock
) -> None:
    await runtime.register_definition(TWO)
    await runtime.start("wf", execution_id="e")
    worker = FakeWorker(runtime, auto=False)
    await worker.register()
    first = await worker.first_task()
    store.write_then_fail = True  # a's result and b's dispatch to this worker are written
    refused = await worker.complete(first.token, {"n": 1})
    assert isinstance(refused, wire.ErrorMessage) and refused.code == "STORAGE_ERROR"
    again = await worker.complete(first.token, {"n": 1})
    assert isinstance(again, wire.Ack) and (again.accepted or again.reason == DUPLICATE), again
    second = (await worker.wait_for_tasks(2, within=60))[1]
    assert second.step_id == "b"
    done = await worker.complete(second.token, {"n": 2})
    assert isinstance(done, wire.Ack) and done.accepted, done
    assert (await runtime.wait("e", 60)).status == "completed"


async def test_a_dormant_execution_brought_back_while_reads_fail_comes_back_once_they_work(
    runtime: Runtime, store: FailingOver, autojump_clock: MockClock
) -> None:
    await runtime.register_definition(WAITING)
    await runtime.start("wf", execution_id="e")
    await trio.sleep(30)  # it waits for its signal: it leaves memory
    assert runtime.supervisor.registry.resident == 0
    store.down = True
    async with trio.open_nursery() as nursery:
        nursery.start_soon(runtime.signal, "e", "go", 1)  # waits for the execution to come back
        await trio.sleep(5)
        store.down = False
    assert (await runtime.wait("e", 60)).status == "completed"


async def test_a_new_execution_whose_first_commit_was_written_but_reported_failed_runs(
    runtime: Runtime, store: FailingOver, autojump_clock: MockClock
) -> None:
    await runtime.register_definition(ONE)
    worker = FakeWorker(runtime)
    async with trio.open_nursery() as nursery:
        await nursery.start(worker.serve)
        store.write_then_fail = True
        with pytest.raises(StorageError, match="during COMMIT"):  # the starter is told
            await runtime.start("wf", execution_id="e")
        assert (await runtime.wait("e", 60)).status == "completed"  # it was written: it runs
        nursery.cancel_scope.cancel()


async def test_a_new_execution_whose_first_commit_failed_is_not_run(
    runtime: Runtime, store: FailingOver, autojump_clock: MockClock
) -> None:
    await runtime.register_definition(ONE)
    store.fail_next_commit = "could not write to test.db: the disk is full"
    with pytest.raises(StorageError, match="disk is full"):
        await runtime.start("wf", execution_id="e")
    await trio.sleep(10)
    assert "e" not in runtime.supervisor.registry
    await runtime.start("wf", execution_id="e")  # the id is free: a start again makes it
