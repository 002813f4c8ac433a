"""Batches, part of the Store contract on every store: a batch is stored with the snapshot of
what its filter matched, in the executions' order, in one write; its progress commits once per
page (a page committed twice counts once) and completes it after the last; a cancelled batch
takes no more doubt; a dead owner's running batches are claimed."""

from __future__ import annotations

from dataclasses import replace

from orbit_actors.store import Commit, Store
from orbit_actors.store.batches import BatchFailure, BatchFilter, BatchProgress, BatchRecord

from .helpers import events, row


async def executions(store: Store) -> None:
    for i in range(5):
        r = replace(row(f"x{i}", workflow="wf" if i % 2 == 0 else "other"), started_at_ms=1000 + i)
        await store.commit(Commit(r, events(1, 1), create=True))
    await store.commit(Commit(row("x4", status="completed", workflow="wf"), events(2, 1)))


def batch(flt: BatchFilter, batch_id: str = "b1", owner: str = "s1") -> BatchRecord:
    return BatchRecord(batch_id, "terminate", flt, "why", "running", 0, owner=owner)


async def test_a_batch_snapshots_what_its_filter_matches_in_order(store: Store) -> None:
    await executions(store)
    assert await store.create_batch(batch(BatchFilter(workflow="wf", status="running"))) == 2
    items = await store.batch_items("b1", 0, 10)
    assert [(i.position, i.execution_id, i.run) for i in items] == [(0, "x0", 1), (1, "x2", 1)]
    stored = await store.batch("b1")
    assert stored is not None
    assert (stored.state, stored.matched, stored.filter.given()) == (
        "running", 2, {"workflow": "wf", "status": "running"}
    )  # fmt: skip


async def test_each_filter_field_narrows_the_match(store: Store) -> None:
    await executions(store)
    assert (await store.batch_matches(BatchFilter(ids=["x1", "x3", "nope"])))[0] == 2
    assert await store.batch_matches(BatchFilter(started_after_ms=1003)) == (2, ["x3", "x4"])
    assert await store.batch_matches(BatchFilter(started_before_ms=1001)) == (1, ["x0"])
    assert (await store.batch_matches(BatchFilter(version="1.0.0")))[0] == 5
    assert (await store.batch_matches(BatchFilter(version="2.0.0")))[0] == 0


async def test_a_batch_matching_nothing_is_completed_when_made(store: Store) -> None:
    assert await store.create_batch(batch(BatchFilter(workflow="none"))) == 0
    stored = await store.batch("b1")
    assert stored is not None and stored.state == "completed"


async def test_progress_commits_once_per_page_and_completes_after_the_last(store: Store) -> None:
    await executions(store)
    await store.create_batch(batch(BatchFilter(workflow="wf")))
    assert await store.mark_batch_doubt("b1", 2)
    failure = BatchFailure("x2", "EXECUTION_FINISHED", "execution is already terminated")
    page = BatchProgress(0, 2, 1, [(1, failure)])
    assert await store.advance_batch("b1", page, 5000) == "running"
    assert await store.advance_batch("b1", page, 5000) == "running"  # a replay counts once
    assert await store.advance_batch("b1", BatchProgress(2, 3, 1), 6000) == "completed"
    stored = await store.batch("b1")
    assert stored is not None
    assert (stored.done, stored.failed, stored.position, stored.closed_at_ms) == (2, 1, 3, 6000)
    assert await store.batch_failures("b1", 10) == [failure]


async def test_a_cancelled_batch_takes_no_more_doubt(store: Store) -> None:
    await executions(store)
    await store.create_batch(batch(BatchFilter(workflow="wf")))
    assert await store.cancel_batch("b1", 7000) == "cancelled"
    assert await store.cancel_batch("b1", 8000) == "cancelled"
    assert not await store.mark_batch_doubt("b1", 2)
    assert await store.cancel_batch("nope", 7000) is None


async def test_batches_list_newest_first_and_running_ones_are_claimed(store: Store) -> None:
    await executions(store)
    for i in range(3):
        await store.create_batch(batch(BatchFilter(workflow="wf"), f"b{i}", owner=f"s{i}"))
    first, cursor = await store.batches(limit=2)
    assert [b.batch_id for b in first] == ["b2", "b1"] and cursor is not None
    rest, end = await store.batches(limit=2, cursor=cursor)
    assert [b.batch_id for b in rest] == ["b0"] and end is None
    assert await store.claim_batches("s9", ["s1", "s2"]) == ["b1", "b2"]
    assert await store.claim_batches("s9", []) == []
    assert await store.claim_batches("s8", None) == ["b0", "b1", "b2"]
    claimed = await store.batch("b0")
    assert claimed is not None and claimed.owner == "s8"
