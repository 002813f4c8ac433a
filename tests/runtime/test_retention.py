"""Retention through the runtime on a MockClock: finished executions older than their retention
are purged behind serving (the workflow's own retention, else the runtime's); a delete purges
one now and refuses a running one; a purged parent takes its finished children; nothing in
memory answers for a purged id, which may be started again; purges are counted."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import trio
from trio.testing import MockClock

from orbit_actors.errors import ExecutionNotFoundError, ExecutionRunningError
from orbit_actors.runtime import Runtime, RuntimeConfig, open_runtime
from orbit_actors.testing import MemoryStore

from .conftest import workflow

QUICK = workflow("steps: [{id: v, value: 1}]\noutput: '${steps.v.output}'")
KEPT_A_DAY = QUICK.replace("workflow: wf", "workflow: daily") + "\nretention: 1d\n"
WAITS = workflow("signals: {go: {}}\nsteps: [{id: w, await: go}]", name="waits")
CHILD = workflow("steps: [{id: v, value: 2}]", name="child")
PARENT = workflow(
    "workflows: {child: {version: \"1.0.0\"}}\nsteps: [{id: each, for: '[1, 2]', workflow: child}]",
    name="parent",
)


@pytest.fixture
async def kept_an_hour(autojump_clock: MockClock) -> AsyncIterator[Runtime]:
    async with open_runtime(MemoryStore(), RuntimeConfig(retention_ms=3_600_000)) as runtime:
        yield runtime


async def test_a_finished_execution_is_purged_once_its_retention_has_passed(
    kept_an_hour: Runtime, autojump_clock: MockClock
) -> None:
    runtime = kept_an_hour
    await runtime.register_definition(QUICK)
    await runtime.start("wf", execution_id="done")
    assert (await runtime.wait("done", 10)).status == "completed"
    await trio.sleep(3_500)
    assert await runtime.store.execution("done") is not None
    await trio.sleep(200)
    assert await runtime.store.execution("done") is None
    with pytest.raises(ExecutionNotFoundError):
        await runtime.describe("done")
    with pytest.raises(ExecutionNotFoundError):
        await runtime.wait("done", 1)
    assert b"orbit_executions_purged_total 1.0" in runtime.metrics.render()


async def test_a_workflows_own_retention_wins_over_the_default(
    kept_an_hour: Runtime, autojump_clock: MockClock
) -> None:
    runtime = kept_an_hour
    await runtime.register_definition(KEPT_A_DAY)
    await runtime.start("daily", execution_id="daily-1")
    await runtime.wait("daily-1", 10)
    await trio.sleep(7_200)
    assert await runtime.store.execution("daily-1") is not None
    await trio.sleep(86_400)
    assert await runtime.store.execution("daily-1") is None


async def test_a_running_execution_is_never_purged_and_cannot_be_deleted(
    kept_an_hour: Runtime, autojump_clock: MockClock
) -> None:
    runtime = kept_an_hour
    await runtime.register_definition(WAITS)
    await runtime.start("waits", execution_id="w")
    await trio.sleep(7_200)
    with pytest.raises(ExecutionRunningError, match="^execution `w` is running; cancel or"):
        await runtime.delete("w")
    assert (await runtime.describe("w")).status == "running"


async def test_a_deleted_execution_answers_404_and_its_id_may_be_used_again(
    runtime: Runtime, autojump_clock: MockClock
) -> None:
    await runtime.register_definition(QUICK)
    await runtime.start("wf", execution_id="again")
    await runtime.wait("again", 10)
    await runtime.delete("again")
    with pytest.raises(ExecutionNotFoundError):
        await runtime.describe("again")
    with pytest.raises(ExecutionNotFoundError):
        await runtime.delete("again")
    assert await runtime.start("wf", execution_id="again") == ("again", True)
    assert (await runtime.wait("again", 10)).status == "completed"


async def test_a_purged_parent_takes_its_finished_children(
    runtime: Runtime, autojump_clock: MockClock
) -> None:
    await runtime.register_definition(CHILD)
    await runtime.register_definition(PARENT)
    await runtime.start("parent", execution_id="p")
    assert (await runtime.wait("p", 60)).status == "completed"
    children = ["p.each.0", "p.each.1"]
    assert [(await runtime.store.execution(c)) is not None for c in children] == [True, True]
    await runtime.delete("p")
    assert [await runtime.store.execution(c) for c in ["p", *children]] == [None, None, None]
