"""One owner for every piece of state: the worker pool holds every pushed token, so a session
that dies while its task is being committed still has that task redelivered."""

from __future__ import annotations

from functools import partial

import trio
from trio.testing import MockClock

from orbit_actors.runtime import RuntimeConfig, open_runtime
from orbit_actors.store.base import Commit
from orbit_actors.testing import FakeWorker, MemoryStore
from orbit_actors.wire import messages as wire

from .conftest import workflow

ONE_STEP = workflow("steps: [{id: a, task: t, input: {n: 1}}]\n")


class GatedStore(MemoryStore):
    """A memory store that counts the commits of execution histories; they wait at a gate
    while ``gate`` is set."""

    def __init__(self) -> None:
        super().__init__()
        self.gate: trio.Event | None = None
        self.waiting = trio.Event()
        self.history_commits = 0

    async def commit(self, commit: Commit) -> None:
        self.history_commits += 1
        gate = self.gate
        if gate is not None:
            self.waiting.set()
            await gate.wait()
        await super().commit(commit)


async def test_a_task_claimed_for_a_session_that_ends_during_its_commit_is_redelivered(
    autojump_clock: MockClock,
) -> None:
    store = GatedStore()
    async with open_runtime(store, RuntimeConfig()) as runtime, trio.open_nursery() as nursery:
        await runtime.register_definition(ONE_STEP)
        leaving = FakeWorker(runtime, "leaving", auto=False)
        await nursery.start(leaving.serve)
        store.gate = trio.Event()
        start = partial(runtime.start, "wf", input={}, execution_id="e1")
        nursery.start_soon(start)  # claims the slot of `leaving`, then waits at the gate
        await store.waiting.wait()
        await leaving.connection.handle(wire.Unregister(type="unregister"))
        gate, store.gate = store.gate, None
        gate.set()
        staying = FakeWorker(runtime, "staying")
        await nursery.start(staying.serve)
        task = await staying.first_task(within=60)
        assert (task.step_id, task.attempt, task.redelivery) == ("a", 1, True)
        assert leaving.tasks == []
        assert (await runtime.wait("e1", 60)).status == "completed"
        nursery.cancel_scope.cancel()


THREE_STEPS = workflow(
    "steps: [{id: a, task: t, input: {n: 1}}, {id: b, task: t}, {id: c, task: t}]\n"
)


async def test_a_one_slot_worker_gets_the_next_task_in_the_commit_of_the_last_result(
    autojump_clock: MockClock,
) -> None:
    store = GatedStore()
    async with open_runtime(store, RuntimeConfig()) as runtime, trio.open_nursery() as nursery:
        await runtime.register_definition(THREE_STEPS)
        worker = FakeWorker(runtime, "single", concurrency=1)
        await nursery.start(worker.serve)
        await runtime.start("wf", input={}, execution_id="e1")
        assert (await runtime.wait("e1", 60)).status == "completed"
        # created with a dispatched; a's result with b dispatched; b's with c; c's with the end
        assert store.history_commits == 4
        nursery.cancel_scope.cancel()
