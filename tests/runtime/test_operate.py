"""Operating executions through the runtime: terminate, pause/unpause and rerun from a step,
with a fake worker, on the memory store."""

from __future__ import annotations

from collections import Counter

import pytest
import trio
from trio.testing import MockClock

from orbit_actors import wire
from orbit_actors.decide.rerun import RerunPlan
from orbit_actors.errors import (
    ExecutionFinishedError,
    ExecutionRunningError,
    NotPausedError,
    UnknownStepError,
)
from orbit_actors.runtime import Runtime
from orbit_actors.testing import FakeWorker, TaskFailure

from .conftest import workflow

THREE = workflow("""
steps:
  - {id: a, task: t, input: {n: 1}}
  - {id: b, task: t, input: {n: 2}}
  - {id: c, task: t2, input: {n: 3}}
output: {c: "${steps.c.output}"}
""")
PARENT = workflow("""
workflows: {child: {version: 1.0.0}}
steps:
  - {id: kid, workflow: child}
""")
CHILD = workflow(
    """
signals: {go: {}}
steps:
  - {id: wait, await: go}
""",
    name="child",
)


async def test_terminate_ends_a_running_execution_and_cancels_its_attempt(
    runtime: Runtime, autojump_clock: MockClock
) -> None:
    await runtime.register_definition(THREE)
    worker = FakeWorker(runtime, auto=False)
    await worker.register()
    await runtime.start("wf", execution_id="x")
    task = await worker.first_task()
    detail = await runtime.terminate("x", "wrong order")
    assert detail.status == "terminated"
    history = await runtime.history("x")
    assert history[-1].type == "WorkflowTerminated"
    cancels = [m for m in worker.received if isinstance(m, wire.Cancel)]
    assert [c.tokens for c in cancels] == [[task.token]]
    result = await runtime.wait("x", 1)
    assert result.error is not None and result.error.code == "TERMINATED"
    with pytest.raises(ExecutionFinishedError):
        await runtime.terminate("x")


async def test_terminating_a_parent_terminates_its_running_child(
    runtime: Runtime, autojump_clock: MockClock
) -> None:
    await runtime.register_definition(CHILD)
    await runtime.register_definition(PARENT)
    await runtime.start("wf", execution_id="p")
    await trio.sleep(1)
    assert (await runtime.describe("p.kid")).status == "running"
    await runtime.terminate("p")
    await trio.sleep(1)
    child = await runtime.history("p.kid")
    assert child[-1].type == "WorkflowTerminated" and child[-1].reason == "parent terminated"


async def test_pause_holds_new_work_until_unpause(
    runtime: Runtime, autojump_clock: MockClock
) -> None:
    await runtime.register_definition(THREE)
    worker = FakeWorker(runtime, contracts=[("t", "1"), ("t2", "1")], auto=False)
    async with trio.open_nursery() as nursery:
        await nursery.start(worker.serve)
        await runtime.start("wf", execution_id="x")
        first = await worker.first_task()
        assert (await runtime.pause("x", "look first")).paused
        assert (await runtime.pause("x")).paused  # again: nothing recorded
        await worker.complete(first.token, {"ok": 1})
        await trio.sleep(60)
        assert len(worker.tasks) == 1  # b is ready and waits
        page = await runtime.list_executions(paused=True)
        assert [row.execution_id for row in page.executions] == ["x"]
        types = [e.type for e in await runtime.history("x")]
        assert types.count("ExecutionPaused") == 1 and types[-1] == "StepScheduled"
        detail = await runtime.unpause("x")
        assert not detail.paused
        second = await worker.wait_for_tasks(2)
        assert second[1].step_id == "b"
        with pytest.raises(NotPausedError):
            await runtime.unpause("x")
        nursery.cancel_scope.cancel()


async def test_rerun_after_a_fix_reuses_what_succeeded(
    runtime: Runtime, autojump_clock: MockClock
) -> None:
    await runtime.register_definition(THREE)
    dispatched: Counter[str] = Counter()
    broken = True

    async def handler(task: wire.Task) -> object:
        dispatched[task.step_id] += 1
        if task.step_id == "c" and broken:
            raise TaskFailure("BUG", "c is broken", retryable=False)
        return {"step": task.step_id}

    worker = FakeWorker(runtime, contracts=[("t", "1"), ("t2", "1")], handler=handler)
    async with trio.open_nursery() as nursery:
        await nursery.start(worker.serve)
        await runtime.start("wf", execution_id="x")
        assert (await runtime.wait("x", 60)).status == "failed"
        with pytest.raises(UnknownStepError, match="wf@1.0.0 has no step `z`; steps: a, b, c"):
            await runtime.rerun("x", from_step="z")
        plan = await runtime.rerun("x", dry_run=True)
        assert plan == RerunPlan("c", ["a", "b"], ["c"], [])
        assert (await runtime.describe("x")).run == 1  # the dry run wrote nothing
        broken = False
        assert await runtime.rerun("x") == 2
        with pytest.raises(ExecutionRunningError):
            await runtime.rerun("x")
        result = await runtime.wait("x", 60)
        assert result.status == "completed" and result.run == 2
        nursery.cancel_scope.cancel()
    assert dispatched == {"a": 1, "b": 1, "c": 2}
    history = await runtime.history("x")
    assert [e.type for e in history[:4]] == [
        "WorkflowCreated",
        "WorkflowStarted",
        "StepReused",
        "StepReused",
    ]
