"""Why work waits: each unit waiting for a worker says why in the detail (``no_worker`` naming
the worker last seen, ``workers_busy``); ``tasks()`` counts workers, capacity and what waits;
the metric ``orbit_units_waiting`` counts by task, version and reason."""

from __future__ import annotations

import trio
from trio.testing import MockClock

from orbit_actors.runtime import Runtime
from orbit_actors.testing import FakeWorker
from orbit_actors.views.waiting import ago

from .conftest import workflow

ONE = workflow("steps: [{id: a, task: t}]")


async def _waiting_of(runtime: Runtime, execution_id: str) -> tuple[str, str] | None:
    [unit] = (await runtime.describe(execution_id)).units
    return (unit.waiting.reason, unit.waiting.message) if unit.waiting else None


async def test_a_task_no_worker_ever_announced_waits_for_one(
    runtime: Runtime, autojump_clock: MockClock
) -> None:
    await runtime.register_definition(ONE)
    await runtime.start("wf", execution_id="x")
    assert await _waiting_of(runtime, "x") == (
        "no_worker",
        "no online worker serves t@1; no worker has ever announced it",
    )


async def test_the_worker_last_seen_is_named_when_none_is_online(
    runtime: Runtime, autojump_clock: MockClock
) -> None:
    await runtime.register_definition(ONE)
    worker = FakeWorker(runtime, "worker-7", [("t", "1")])
    await worker.register()
    worker.connection.closed()
    await trio.testing.wait_all_tasks_blocked()
    await trio.sleep(3 * 3600)
    await runtime.start("wf", execution_id="x")
    reason, message = await _waiting_of(runtime, "x") or ("", "")
    assert reason == "no_worker"
    assert message == "no online worker serves t@1; last seen worker-7 3h ago"


async def test_a_busy_worker_makes_units_wait_as_busy(
    runtime: Runtime, autojump_clock: MockClock
) -> None:
    await runtime.register_definition(ONE)
    worker = FakeWorker(runtime, "w1", [("t", "1")], concurrency=1, auto=False)
    await worker.register()
    await runtime.start("wf", execution_id="first")
    await worker.first_task()
    await runtime.start("wf", execution_id="second")
    await trio.sleep(2)
    assert await _waiting_of(runtime, "first") is None  # dispatched: it does not wait
    reason, message = await _waiting_of(runtime, "second") or ("", "")
    assert (reason, message) == (
        "workers_busy",
        "every online worker serving t@1 is busy (1 worker, 1 of 1 slots in use)",
    )
    [t] = [s for s in await runtime.tasks() if s.task == "t"]
    assert (t.workers_online, t.capacity, t.in_flight, t.waiting) == (1, 1, 1, 1)
    assert t.oldest_waiting_ms is not None and t.oldest_waiting_ms >= 2000
    assert b'orbit_units_waiting{reason="workers_busy",task="t",version="1"} 1.0' in (
        runtime.metrics.render()
    )


async def test_tasks_lists_every_declared_task_even_with_nothing_waiting(
    runtime: Runtime, autojump_clock: MockClock
) -> None:
    await runtime.register_definition(ONE)
    listed = {(s.task, s.version): s for s in await runtime.tasks()}
    assert set(listed) == {("t", "1"), ("t2", "1"), ("undo", "1"), ("go", "1")}
    assert listed[("t", "1")].waiting == 0 and listed[("t", "1")].oldest_waiting_ms is None


def test_a_span_is_told_in_its_largest_whole_unit() -> None:
    assert [ago(ms) for ms in (500, 59_000, 3 * 3_600_000 + 60_000, 2 * 86_400_000)] == [
        "just now", "59s ago", "3h ago", "2d ago",
    ]  # fmt: skip


async def test_a_unit_of_a_paused_execution_waits_for_the_unpause(
    runtime: Runtime, autojump_clock: MockClock
) -> None:
    await runtime.register_definition(ONE)
    await runtime.start("wf", execution_id="x")
    await runtime.pause("x")
    assert await _waiting_of(runtime, "x") == (
        "paused",
        "the execution is paused; unpause it to go on",
    )
    await runtime.unpause("x")
    assert (await _waiting_of(runtime, "x") or ("",))[0] == "no_worker"
