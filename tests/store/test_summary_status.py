"""A commit that keeps its execution's status rewrites the summary row without touching the
status indexes; the row and every listing by status stay exact."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from orbit_actors.history.events import events_to_json
from orbit_actors.store import Commit, open_sqlite_store
from orbit_actors.store.group import CommitWork
from orbit_actors.store.sqlite.commits import ROW_COLUMNS, CommitBatcher
from orbit_actors.store.sqlite.schema import connect, prepare

from .helpers import commit, events, row


def _wal_frames(path: Path) -> int:
    wal = path.with_name(path.name + "-wal")
    size = wal.stat().st_size if wal.exists() else 0
    return max(0, (size - 32) // (4096 + 24))


async def test_a_commit_keeping_the_status_updates_the_row_and_its_listings(
    tmp_path: Path,
) -> None:
    async with open_sqlite_store(tmp_path / "o.db") as store:
        await store.commit(commit("e1", 1))
        await store.commit(commit("e1", 4, wake_at_ms=9000, busy=False))
        row = await store.execution("e1")
        assert row is not None
        assert (row.status, row.last_seq, row.wake_at_ms, row.busy) == ("running", 6, 9000, False)
        assert [
            r.execution_id for r in (await store.list_executions(status="running")).executions
        ] == ["e1"]
        await store.commit(commit("e1", 7, status="completed"))
        assert (await store.list_executions(status="running")).executions == []
        done = (await store.list_executions(status="completed")).executions
        assert [(r.execution_id, r.last_seq) for r in done] == [("e1", 9)]
        assert await store.count_by_status() == {"completed": 1}


async def test_a_commit_keeping_the_status_writes_fewer_pages(tmp_path: Path) -> None:
    path = tmp_path / "o.db"
    async with open_sqlite_store(path) as store:
        for index in range(50):  # index pages worth rewriting
            await store.commit(commit(f"e{index}", 1, pad=10))
        before = _wal_frames(path)
        await store.commit(commit("e7", 4, pad=10))  # running, still running
        kept = _wal_frames(path) - before
        await store.commit(commit("e7", 7, pad=10, status="failed"))
        changed = _wal_frames(path) - before - kept
    assert kept == 2  # the segment's page and the row's page
    assert changed > kept


def test_two_commits_of_one_execution_in_one_batch_leave_the_last_row(tmp_path: Path) -> None:
    path = tmp_path / "o.db"
    prepare(path, "full")
    conn = connect(path, "full", writer=True)
    batcher = CommitBatcher()
    try:
        for batch in (
            [commit("e1", 1)],
            [commit("e1", 4), commit("e1", 7, status="completed")],  # kept, then changed
            [commit("e2", 1, status="queued")],
            [commit("e2", 4), commit("e2", 7)],  # changed, then kept
        ):
            works = [CommitWork(c, events_to_json(c.events)) for c in batch]
            conn.execute("BEGIN IMMEDIATE")
            batcher.run(conn, works)
            conn.execute("COMMIT")
            batcher.settle(committed=True)
        rows = conn.execute(
            "SELECT execution_id, status, last_seq FROM executions ORDER BY execution_id"
        ).fetchall()
        assert rows == [("e1", "completed", 9), ("e2", "running", 9)]
        by_status = conn.execute(
            "SELECT execution_id FROM executions INDEXED BY executions_by_status "
            "WHERE status = 'running'"
        ).fetchall()
        assert by_status == [("e2",)]
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    finally:
        conn.close()


def test_a_status_read_back_after_a_restart_is_the_stored_one(tmp_path: Path) -> None:
    path = tmp_path / "o.db"
    prepare(path, "full")
    conn = connect(path, "full", writer=True)
    try:
        for batcher, batch in (
            (CommitBatcher(), [commit("e1", 1, status="queued")]),
            (CommitBatcher(), [commit("e1", 4)]),  # a new writer reads "queued" back
        ):
            conn.execute("BEGIN IMMEDIATE")
            batcher.run(conn, [CommitWork(c, events_to_json(c.events)) for c in batch])
            conn.execute("COMMIT")
            batcher.settle(committed=True)
        assert conn.execute(
            "SELECT execution_id FROM executions INDEXED BY executions_by_status "
            "WHERE status = 'running'"
        ).fetchall() == [("e1",)]
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    finally:
        conn.close()


def test_a_commit_keeping_the_status_writes_the_row_a_status_change_would(
    tmp_path: Path,
) -> None:
    path = tmp_path / "o.db"
    prepare(path, "full")
    conn = connect(path, "full", writer=True)
    batcher = CommitBatcher()

    def later(execution_id: str) -> Commit:  # every rewritten column differs from the first
        new = replace(
            row(execution_id, parent_id="p", wake_at_ms=9000, busy=False),
            version="2.0.0", definition_hash="g" * 64, run=2, paused=True, closed_at_ms=5,
        )  # fmt: skip
        return Commit(new, events(1), rollover=True)

    try:
        for batch in (
            [
                commit("kept", 1, parent_id="p"),
                commit("changed", 1, parent_id="p", status="queued"),
            ],
            [later("kept"), later("changed")],  # running -> running, queued -> running
        ):
            works = [CommitWork(c, events_to_json(c.events)) for c in batch]
            conn.execute("BEGIN IMMEDIATE")
            batcher.run(conn, works)
            conn.execute("COMMIT")
            batcher.settle(committed=True)
        kept, changed = (
            conn.execute(
                f"SELECT {ROW_COLUMNS}, head - (SELECT MAX(id) FROM segments) FROM executions "
                "WHERE execution_id = ?",
                (execution_id,),
            ).fetchone()[1:]
            for execution_id in ("kept", "changed")
        )
        assert kept[:-1] == changed[:-1]
        assert {kept[-1], changed[-1]} == {0, -1}  # each its own newest segment
        assert kept[1:4] == ("2.0.0", "g" * 64, "running")
    finally:
        conn.close()
