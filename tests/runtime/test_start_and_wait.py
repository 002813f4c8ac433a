"""A start that waits for its execution's end (``POST /v1/executions?wait``): the caller sleeps
once, from the start to the end, handed by the first commit to the wait instead of being woken
by it; the wait still ends at its timeout, counted from the call; a cancel before the first
commit is delivered after it, one after it ends the wait; a twin start does not wait for the
end."""

from __future__ import annotations

import pytest
import trio
from trio.testing import MockClock

from orbit_actors.runtime import Runtime, RuntimeConfig, open_runtime
from orbit_actors.store.base import Commit
from orbit_actors.testing import MemoryStore
from orbit_actors.views import ExecutionResult

from .conftest import workflow

APPROVAL = workflow("""
signals: {approve: {type: object}}
steps:
  - {id: wait, await: approve}
output: "${steps.wait.output}"
""")

Answer = tuple[str, bool, ExecutionResult | None]


class _Steps(trio.abc.Instrument):
    """Counts the steps of one task."""

    def __init__(self) -> None:
        self.task: trio.lowlevel.Task | None = None
        self.count = 0

    def before_task_step(self, task: trio.lowlevel.Task) -> None:
        if task is self.task:
            self.count += 1


class _GatedStore(MemoryStore):
    """A memory store whose commits wait for ``gate``."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = trio.Event()

    async def commit(self, commit: Commit) -> None:
        await self.gate.wait()
        await super().commit(commit)


async def _start(runtime: Runtime, execution_id: str, timeout: float, into: list[Answer]) -> None:
    into.append(await runtime.start_and_wait("wf", execution_id=execution_id, timeout=timeout))


async def test_the_caller_is_woken_once_at_the_end_with_the_result(
    runtime: Runtime, autojump_clock: MockClock
) -> None:
    await runtime.register_definition(APPROVAL)
    steps = _Steps()
    answers: list[Answer] = []

    async def start() -> None:
        steps.task = trio.lowlevel.current_task()
        await _start(runtime, "x", 60, answers)

    trio.lowlevel.add_instrument(steps)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(start)
        await trio.testing.wait_all_tasks_blocked()
        assert (await runtime.describe("x")).status == "running"  # its first commit is made
        assert steps.count == 0  # not woken by it (its first step came before the count)
        await runtime.signal("x", "approve", {"by": "me"})
    trio.lowlevel.remove_instrument(steps)
    assert steps.count == 1
    [(execution_id, created, result)] = answers
    assert (execution_id, created) == ("x", True)
    assert result is not None and result.status == "completed"
    assert result.output == {"by": "me"}


async def test_an_execution_its_first_commit_ends_answers_at_once(
    runtime: Runtime, autojump_clock: MockClock
) -> None:
    await runtime.register_definition(workflow("steps: [{id: v, value: 1}]\noutput: 7"))
    began = trio.current_time()
    _, created, result = await runtime.start_and_wait("wf", execution_id="quick", timeout=60)
    assert trio.current_time() == began
    assert created and result is not None and result.output == 7


async def test_the_wait_ends_at_its_timeout_counted_from_the_call(
    runtime: Runtime, autojump_clock: MockClock
) -> None:
    await runtime.register_definition(APPROVAL)
    began = trio.current_time()
    answer = await runtime.start_and_wait("wf", execution_id="slow", timeout=5)
    assert answer == ("slow", True, None)
    assert trio.current_time() - began == pytest.approx(5)
    assert runtime.waiters.pending["slow"].parked == []


async def test_a_start_of_an_existing_id_waits_for_its_end_as_a_plain_wait(
    runtime: Runtime, autojump_clock: MockClock
) -> None:
    await runtime.register_definition(APPROVAL)
    await runtime.start("wf", execution_id="old")
    answers: list[Answer] = []
    async with trio.open_nursery() as nursery:
        nursery.start_soon(_start, runtime, "old", 60, answers)
        await trio.testing.wait_all_tasks_blocked()
        await runtime.signal("old", "approve", {})
    [(_, created, result)] = answers
    assert not created and result is not None and result.status == "completed"


async def test_a_cancel_after_the_first_commit_ends_the_wait_and_leaves_nothing_parked(
    runtime: Runtime, autojump_clock: MockClock
) -> None:
    await runtime.register_definition(APPROVAL)
    began = trio.current_time()
    with trio.move_on_after(3) as scope:
        await runtime.start_and_wait("wf", execution_id="given-up", timeout=60)
    assert scope.cancelled_caught
    assert trio.current_time() - began == pytest.approx(3)
    assert runtime.waiters.pending["given-up"].parked == []
    await runtime.signal("given-up", "approve", {})
    assert (await runtime.wait("given-up", 1)).status == "completed"


async def test_a_cancel_before_the_first_commit_comes_after_it(
    autojump_clock: MockClock,
) -> None:
    store = _GatedStore()
    store.gate.set()
    async with open_runtime(store, RuntimeConfig()) as runtime:
        await runtime.register_definition(APPROVAL)
        store.gate = trio.Event()
        cancelled_at: list[float] = []

        async def start() -> None:
            with trio.CancelScope() as scope:
                scopes.append(scope)
                await runtime.start_and_wait("wf", execution_id="c", timeout=60)
            cancelled_at.append(trio.current_time())

        scopes: list[trio.CancelScope] = []
        async with trio.open_nursery() as nursery:
            nursery.start_soon(start)
            await trio.testing.wait_all_tasks_blocked()
            began = trio.current_time()
            scopes[0].cancel()
            await trio.sleep(10)
            assert cancelled_at == []  # the start must learn whether its commit was made
            store.gate.set()
        assert cancelled_at == [pytest.approx(began + 10)]
        assert (await runtime.describe("c")).status == "running"
        assert runtime.waiters.pending.get("c") is None or not runtime.waiters.pending["c"].parked


async def test_a_twin_start_does_not_wait_for_the_end_a_start_waits_for(
    runtime: Runtime, autojump_clock: MockClock
) -> None:
    await runtime.register_definition(APPROVAL)
    answers: list[Answer] = []
    async with trio.open_nursery() as nursery:
        nursery.start_soon(_start, runtime, "twin", 60, answers)
        await trio.testing.wait_all_tasks_blocked()
        began = trio.current_time()
        assert await runtime.start("wf", execution_id="twin") == ("twin", False)
        assert trio.current_time() == began
        await runtime.signal("twin", "approve", {})
    assert [created for _, created, _ in answers] == [True]
