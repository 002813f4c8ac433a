"""Purging, on every store: a finished execution's row, history and runs go, with its finished
descendants; a running one stays; retention picks what is due per definition; the id may be
used again."""

from __future__ import annotations

from dataclasses import replace

from orbit_actors.store import Commit, Store
from orbit_actors.store.base import Retention

from .helpers import commit, events


async def finished(
    store: Store, execution_id: str, closed_at_ms: int = 2000, *,
    parent_id: str | None = None, definition_hash: str = "h" * 64, runs: int = 1,
) -> None:  # fmt: skip
    """An execution that ran ``runs`` runs (continued as new) and then finished."""
    first = commit(execution_id, 1, parent_id=parent_id)
    await store.commit(Commit(replace(first.row, definition_hash=definition_hash), first.events))
    for run in range(2, runs + 1):
        await store.commit(commit(execution_id, 1, rollover=True, run=run, parent_id=parent_id))
    done = commit(execution_id, 4, 1, status="completed", run=runs, parent_id=parent_id)
    row = replace(done.row, closed_at_ms=closed_at_ms, definition_hash=definition_hash)
    await store.commit(Commit(row, done.events))


async def test_purging_a_finished_execution_deletes_its_row_history_and_runs(
    store: Store,
) -> None:
    await finished(store, "gone", runs=2)
    await finished(store, "kept")
    assert (await store.purge("gone")).ids == ["gone"]
    assert await store.execution("gone") is None
    assert await store.history("gone") == [] and await store.history("gone", 1) == []
    assert len(await store.history("kept")) == 4


async def test_a_running_execution_is_not_purged(store: Store) -> None:
    await store.commit(commit("busy", 1))
    assert (await store.purge("busy")).outcome == "running"
    assert (await store.purge("nobody")).outcome == "missing"
    assert await store.execution("busy") is not None


async def test_a_purged_parent_takes_its_finished_children(store: Store) -> None:
    await finished(store, "parent")
    await finished(store, "parent.a", parent_id="parent")
    await finished(store, "parent.a.x", parent_id="parent.a")
    await store.commit(commit("parent.b", 1, parent_id="parent"))  # still running
    purged = await store.purge("parent")
    assert sorted(purged.ids) == ["parent", "parent.a", "parent.a.x"]
    assert await store.execution("parent.b") is not None


async def test_an_id_is_used_again_after_its_purge(store: Store) -> None:
    await finished(store, "again")
    await store.purge("again")
    await store.commit(Commit(commit("again", 1).row, events(1), create=True))
    assert [e.seq for e in await store.history("again")] == [1, 2, 3]


async def test_what_is_due_follows_each_definitions_retention(store: Store) -> None:
    await finished(store, "old-default", closed_at_ms=1_000)
    await finished(store, "new-default", closed_at_ms=9_000)
    await finished(store, "old-short", closed_at_ms=8_000, definition_hash="s" * 64)
    await store.commit(commit("running", 1))
    retention = Retention(default_ms=5_000, by_hash={"s" * 64: 1_000})
    assert sorted(await store.purge_due(retention, 10_000, limit=10)) == [
        "old-default", "old-short",
    ]  # fmt: skip
    assert await store.purge_due(retention, 10_000, limit=10) == []
    assert await store.purge_due(Retention(default_ms=None), 10**9, limit=10) == []
    assert sorted(r.execution_id for r in (await store.list_executions()).executions) == [
        "new-default", "running",
    ]  # fmt: skip


async def test_a_purge_takes_at_most_its_limit_oldest_first(store: Store) -> None:
    for n in range(5):
        await finished(store, f"e{n}", closed_at_ms=1_000 + n)
    assert await store.purge_due(Retention(default_ms=0), 10_000, limit=2) == ["e0", "e1"]


async def test_a_child_left_behind_by_its_purged_parent_is_purged_once_due(
    store: Store,
) -> None:
    await finished(store, "p", closed_at_ms=1_000)
    await store.commit(commit("p.c", 1, parent_id="p"))
    assert await store.purge_due(Retention(default_ms=100), 2_000, limit=10) == ["p"]
    await finished_again(store, "p.c", parent_id="p", closed_at_ms=3_000)
    assert await store.purge_due(Retention(default_ms=100), 4_000, limit=10) == ["p.c"]


async def finished_again(
    store: Store, execution_id: str, *, parent_id: str, closed_at_ms: int
) -> None:
    done = commit(execution_id, 4, 1, status="completed", parent_id=parent_id)
    await store.commit(Commit(replace(done.row, closed_at_ms=closed_at_ms), done.events))


async def test_reclaiming_space_is_harmless_at_any_time(store: Store) -> None:
    await finished(store, "x")
    await store.purge("x")
    await store.reclaim()
    assert await store.execution("x") is None
