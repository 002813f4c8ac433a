"""Batches through the runtime on the memory store: one action on every execution a filter
matched, paced at the batch rate, cancellable, and going on after a restart with each
execution acted on once."""

from __future__ import annotations

from collections import Counter

import pytest
import trio
from trio.testing import MockClock

from orbit_actors.errors import (
    BatchFinishedError,
    BatchNotFoundError,
    InvalidRequestError,
)
from orbit_actors.runtime import Runtime, RuntimeConfig, open_runtime
from orbit_actors.store.batches import BatchFilter, BatchRecord
from orbit_actors.supervisor.batching import BatchPreview
from orbit_actors.testing import MemoryStore

from .conftest import workflow

WAITING = workflow("""
signals: {go: {}}
steps:
  - {id: wait, await: go}
""")
OTHER = workflow(WAITING.split("\n", 4)[-1], name="other")


async def started(runtime: Runtime, count: int, prefix: str = "x") -> list[str]:
    await runtime.register_definition(WAITING)
    ids = [f"{prefix}{i}" for i in range(count)]
    for execution_id in ids:
        await runtime.start("wf", execution_id=execution_id)
    return ids


async def created(runtime: Runtime, action: str, flt: BatchFilter) -> BatchRecord:
    record = await runtime.batches.create(action, flt)
    assert isinstance(record, BatchRecord)
    return record


async def counts(runtime: Runtime, ids: list[str], event: str) -> Counter[int]:
    """How many executions recorded ``event`` how many times."""
    found: Counter[int] = Counter()
    for execution_id in ids:
        found[sum(e.type == event for e in await runtime.history(execution_id))] += 1
    return found


async def test_a_terminate_batch_terminates_every_matched_execution_once(
    runtime: Runtime, autojump_clock: MockClock
) -> None:
    ids = await started(runtime, 30)
    record = await created(runtime, "terminate", BatchFilter(workflow="wf"))
    assert record.matched == 30 and record.state == "running"
    status = await runtime.batches.wait(record.batch_id)
    assert (status.record.state, status.record.done, status.failures) == ("completed", 30, [])
    assert await counts(runtime, ids, "WorkflowTerminated") == {1: 30}


async def test_a_batch_acts_at_most_batch_rate_executions_a_second(
    autojump_clock: MockClock,
) -> None:
    async with open_runtime(MemoryStore(), RuntimeConfig(batch_rate=10)) as runtime:
        await started(runtime, 30)
        began = trio.current_time()
        record = await created(runtime, "pause", BatchFilter(status="running"))
        await runtime.batches.wait(record.batch_id)
        assert 2.9 - 1e-6 <= trio.current_time() - began < 4  # 30 turns, 0.1 s apart


async def test_pause_and_unpause_batches_pause_and_unpause(
    runtime: Runtime, autojump_clock: MockClock
) -> None:
    ids = await started(runtime, 5)
    paused = await created(runtime, "pause", BatchFilter(ids=ids[:3]))
    await runtime.batches.wait(paused.batch_id)
    assert [(await runtime.describe(i)).paused for i in ids] == [True] * 3 + [False] * 2
    unpaused = await created(runtime, "unpause", BatchFilter(workflow="wf"))
    status = await runtime.batches.wait(unpaused.batch_id)
    assert status.record.done == 3
    assert [(f.execution_id, f.code) for f in status.failures] == [
        ("x3", "NOT_PAUSED"),
        ("x4", "NOT_PAUSED"),
    ]
    assert [(await runtime.describe(i)).paused for i in ids] == [False] * 5


async def test_a_rerun_batch_starts_the_next_run_of_each_finished_execution(
    runtime: Runtime, autojump_clock: MockClock
) -> None:
    ids = await started(runtime, 4)
    await runtime.batches.wait((await created(runtime, "terminate", BatchFilter(ids=ids))).batch_id)
    rerun = await created(runtime, "rerun", BatchFilter(status="terminated"))
    status = await runtime.batches.wait(rerun.batch_id)
    assert status.record.done == 4
    assert {(await runtime.registry.row(i)).run for i in ids} == {2}


async def test_a_cancel_batch_cancels(runtime: Runtime, autojump_clock: MockClock) -> None:
    ids = await started(runtime, 3)
    status = await runtime.batches.wait(
        (await created(runtime, "cancel", BatchFilter(workflow="wf"))).batch_id
    )
    assert status.record.done == 3
    assert {(await runtime.describe(i)).status for i in ids} == {"cancelled"}


async def test_an_execution_that_no_longer_qualifies_is_counted_in_failed_with_its_code(
    runtime: Runtime, autojump_clock: MockClock
) -> None:
    ids = await started(runtime, 3)
    await runtime.terminate(ids[1], "by hand")  # matched by the filter, refused in its turn
    status = await runtime.batches.wait(
        (await created(runtime, "terminate", BatchFilter(workflow="wf"))).batch_id
    )
    assert status.record.done == 2
    (failure,) = status.failures
    assert (failure.execution_id, failure.code) == ("x1", "EXECUTION_FINISHED")
    assert "already terminated" in failure.message


async def test_the_dry_run_counts_and_samples_and_writes_nothing(
    runtime: Runtime, autojump_clock: MockClock
) -> None:
    await started(runtime, 25)
    preview = await runtime.batches.create("terminate", BatchFilter(workflow="wf"), dry_run=True)
    assert preview == BatchPreview(25, [f"x{i}" for i in range(20)])
    assert await runtime.store.batches() == ([], None)
    assert (await runtime.describe("x0")).status == "running"


@pytest.mark.parametrize(
    ("action", "flt", "field"),
    [
        ("explode", BatchFilter(workflow="wf"), "action:"),
        ("terminate", BatchFilter(), "filter:"),
        ("terminate", BatchFilter(ids=[]), "filter.ids:"),
    ],
)
async def test_an_unknown_action_or_an_empty_filter_is_refused_naming_the_field(
    runtime: Runtime, autojump_clock: MockClock, action: str, flt: BatchFilter, field: str
) -> None:
    with pytest.raises(InvalidRequestError, match=field):
        await runtime.batches.create(action, flt)
    assert await runtime.store.batches() == ([], None)


async def test_a_batch_that_matches_nothing_is_completed_at_once(
    runtime: Runtime, autojump_clock: MockClock
) -> None:
    record = await created(runtime, "terminate", BatchFilter(workflow="nothing"))
    assert (record.matched, record.state) == (0, "completed")


async def test_a_cancelled_batch_acts_on_nothing_more(autojump_clock: MockClock) -> None:
    async with open_runtime(MemoryStore(), RuntimeConfig(batch_rate=1)) as runtime:
        ids = await started(runtime, 20)
        record = await created(runtime, "pause", BatchFilter(workflow="wf"))
        await trio.sleep(3.5)
        cancelled = await runtime.batches.cancel(record.batch_id)
        assert cancelled.record.state == "cancelled"
        status = await runtime.batches.wait(record.batch_id)
        paused = [(await runtime.describe(i)).paused for i in ids]
        assert 1 <= sum(paused) < 20
        assert status.record.done == sum(paused)
        again = await runtime.batches.cancel(record.batch_id)
        assert again.record.state == "cancelled"


async def test_cancelling_a_completed_or_unknown_batch_is_refused(
    runtime: Runtime, autojump_clock: MockClock
) -> None:
    record = await created(runtime, "terminate", BatchFilter(workflow="nothing"))
    with pytest.raises(BatchFinishedError, match="already completed"):
        await runtime.batches.cancel(record.batch_id)
    with pytest.raises(BatchNotFoundError):
        await runtime.batches.cancel("batch-nope")
    with pytest.raises(BatchNotFoundError):
        await runtime.batches.status("batch-nope")


async def test_after_a_restart_a_batch_goes_on_and_counts_its_page_in_doubt_as_done(
    autojump_clock: MockClock,
) -> None:
    store = MemoryStore()
    async with open_runtime(store) as first:
        ids = await started(first, 10)
        record = BatchRecord("batch-1", "terminate", BatchFilter(workflow="wf"), None, "running", 0)
        assert await store.create_batch(record) == 10
        # the crash came after the walker acted on x0..x2 of its page x0..x4
        assert await store.mark_batch_doubt("batch-1", 5)
        for execution_id in ids[:3]:
            await first.terminate(execution_id, "batch batch-1")
        await first.terminate(ids[7], "by hand")  # no longer qualifies when its turn comes
    async with open_runtime(store) as second:
        status = await second.batches.wait("batch-1")
        assert (status.record.state, status.record.done) == ("completed", 9)
        assert [(f.execution_id, f.code) for f in status.failures] == [("x7", "EXECUTION_FINISHED")]
        assert await counts(second, ids, "WorkflowTerminated") == {1: 10}


async def test_a_bug_acting_on_one_execution_fails_that_one_and_the_batch_goes_on(
    runtime: Runtime, autojump_clock: MockClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    await started(runtime, 5)
    act = runtime.batches._act

    async def broken_on_x2(action: str, execution_id: str, reason: str) -> object:
        if execution_id == "x2":
            raise RuntimeError("boom")
        return await act(action, execution_id, reason)

    monkeypatch.setattr(runtime.batches, "_act", broken_on_x2)
    record = await created(runtime, "terminate", BatchFilter(workflow="wf"))
    status = await runtime.batches.wait(record.batch_id)
    assert (status.record.state, status.record.done) == ("completed", 4)
    assert [(f.execution_id, f.code, f.message) for f in status.failures] == [
        ("x2", "INTERNAL", "RuntimeError: boom")
    ]
    assert (await runtime.describe("x3")).status == "terminated"
