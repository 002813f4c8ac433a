"""Checkpoints off the commit path (store/sqlite/checkpoints.py): a commit never checkpoints the
WAL itself (below the backstop), the checkpointer does on its own thread, the WAL stays bounded
under a steady stream of commits and when few rows write many pages, the writer's own checkpoint
at the bound waits only a moment for an old reader, a failing checkpoint is not tried after every
commit, and the checkpointer stops with the store, or when the writer cannot be made. On a SQLite
with the WAL-reset bug there is no checkpointer: the writer's connection checkpoints alone."""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Callable
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
import trio

from orbit_actors.store import open_sqlite_store
from orbit_actors.store.sqlite.checkpoints import (
    CHECKPOINT_ROWS,
    WAL_BACKSTOP,
    Checkpointer,
    wal_reset_fixed,
)
from orbit_actors.store.sqlite.commits import CommitBatcher
from orbit_actors.store.sqlite.schema import connect, prepare
from orbit_actors.store.sqlite.writer import GroupWriter

from .helpers import commit

NEVER = 10**9


@pytest.fixture
def fixed_sqlite(monkeypatch: pytest.MonkeyPatch) -> None:
    """The store sees a SQLite without the WAL-reset bug (3.51.3), whichever is linked."""
    monkeypatch.setattr(sqlite3, "sqlite_version_info", (3, 51, 3))


def _writer(
    path: Path, every_rows: int, bound: int, backstop: int = 0
) -> tuple[GroupWriter, Checkpointer]:
    """The store's writer and checkpointer, with the checkpointer's thresholds given (and no
    backstop unless given)."""
    prepare(path, "full")
    checkpointer = Checkpointer(
        lambda: connect(path, "full", writer=False), every_rows, bound, backstop=backstop
    )
    writer = GroupWriter(
        lambda: connect(path, "full", writer=True), str(path), 10_000, CommitBatcher(), checkpointer
    )
    return writer, checkpointer


def _wal_frames(path: Path) -> int:
    """How far the WAL file reaches, in frames of 4 KB pages (it is reused from its start, not
    cut, when it starts again below the journal size limit)."""
    return (Path(f"{path}-wal").stat().st_size - 32) // (4096 + 24)


async def test_a_commit_never_checkpoints_the_wal(tmp_path: Path) -> None:
    path = tmp_path / "o.db"
    writer, _ = _writer(path, every_rows=NEVER, bound=NEVER)  # a checkpointer never woken
    await writer.start()
    for n in range(500):
        await writer.commit(commit(f"e{n}", 1, 3, pad=4000))
    frames = _wal_frames(path)  # (before the last connection closes and checkpoints)
    await writer.stop()
    assert frames > 2000  # SQLite's own checkpoint would have started it again at 1,000


async def test_the_wal_starts_again_without_the_writer_when_it_pauses(tmp_path: Path) -> None:
    path = tmp_path / "o.db"
    writer, checkpointer = _writer(path, every_rows=20, bound=NEVER)
    await trio.to_thread.run_sync(checkpointer.start)
    await writer.start()
    for n in range(200):  # ~1,000 frames, one commit at a time with a worker's round trip
        await writer.commit(commit(f"e{n}", 1, 3, pad=1000))
        await trio.sleep(0.002)
    frames = _wal_frames(path)
    await writer.stop()
    await trio.to_thread.run_sync(checkpointer.stop)
    assert checkpointer.stats.restarts == 0 and frames < 400


async def test_the_wal_stays_bounded_when_the_writer_is_never_idle(tmp_path: Path) -> None:
    path = tmp_path / "o.db"
    writer, checkpointer = _writer(path, every_rows=20, bound=200)
    with closing(sqlite3.connect(path)) as conn:
        conn.execute("CREATE TABLE blobs (b BLOB)")
    await trio.to_thread.run_sync(checkpointer.start)
    await writer.start()

    def write(conn: sqlite3.Connection) -> None:
        conn.execute("INSERT INTO blobs VALUES (?)", (b"x" * 16_000,))  # 4 pages
        time.sleep(0.001)  # the transaction stays open: the next begins as soon as it ends

    async def writes() -> None:
        for _ in range(100):
            await writer.write(write)

    async with trio.open_nursery() as nursery:  # ~3,200 frames, the checkpointer never ahead
        for _ in range(8):
            nursery.start_soon(writes)
    frames = _wal_frames(path)
    await writer.stop()
    await trio.to_thread.run_sync(checkpointer.stop)
    # (a checkpoint may find the WAL past the bound by what came while it copied)
    assert frames <= 3 * 200 and checkpointer.stats.restarts > 0


async def test_the_writers_own_checkpoint_waits_only_a_moment_for_an_old_reader(
    tmp_path: Path,
) -> None:
    path = tmp_path / "o.db"
    writer, checkpointer = _writer(path, every_rows=NEVER, bound=NEVER)
    await writer.start()
    await writer.commit(commit("a", 1))
    reader = connect(path, "full", writer=False)
    reader.execute("BEGIN")
    reader.execute("SELECT COUNT(*) FROM segments").fetchall()  # holds this snapshot
    await writer.commit(commit("b", 1))  # the reader's snapshot is old now
    checkpointer.restart_due = True  # as a checkpoint finding the WAL at its bound does
    began = time.monotonic()
    await writer.commit(commit("c", 1))
    took = time.monotonic() - began
    reader.execute("COMMIT")
    reader.close()
    await writer.stop()
    assert took < 5  # not the 30 s a connection waits for a lock otherwise
    assert not checkpointer.restart_due and checkpointer.stats.restarts == 1


async def test_the_checkpointer_stops_with_the_store(tmp_path: Path, fixed_sqlite: None) -> None:
    path = tmp_path / "o.db"
    before = set(threading.enumerate())
    async with open_sqlite_store(path) as store:
        for n in range(300):  # 600 rows: past the rows that wake the checkpointer
            await store.commit(commit(f"e{n}", 1))
        with trio.fail_after(10):
            while store.checkpoint_statistics().checkpoints == 0:
                await trio.sleep(0.01)
    left = [t for t in set(threading.enumerate()) - before if t.name == "orbit-store-checkpointer"]
    assert left == []
    assert not Path(f"{path}-wal").exists()  # every connection closed; the last removed the WAL


async def test_the_wal_stays_bounded_when_few_rows_write_many_pages(tmp_path: Path) -> None:
    # the checkpointer is woken by rows; a row of a 2 MiB payload (or a reclaim, which moves
    # pages and changes no row) writes hundreds of pages: the writer's connection checkpoints
    # itself once the WAL is far past its bound, as SQLite's automatic checkpoint did at 1,000
    path = tmp_path / "o.db"
    writer, checkpointer = _writer(path, every_rows=CHECKPOINT_ROWS, bound=100, backstop=400)
    with closing(sqlite3.connect(path)) as conn:
        conn.execute("CREATE TABLE blobs (b BLOB)")
    await trio.to_thread.run_sync(checkpointer.start)
    await writer.start()

    def write(conn: sqlite3.Connection) -> None:
        conn.execute("INSERT INTO blobs VALUES (?)", (b"x" * 64_000,))  # 16 pages, one row

    largest = 0
    for _ in range(150):  # 2,400 pages in fewer rows than wake the checkpointer
        await writer.write(write)
        largest = max(largest, _wal_frames(path))
    await writer.stop()
    await trio.to_thread.run_sync(checkpointer.stop)
    assert largest <= 4 * 100 + 2 * 16 + 8  # its backstop, a commit's pages, and a few more


async def test_the_checkpointer_stops_when_the_writer_cannot_be_made(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fixed_sqlite: None
) -> None:
    def no_writer(*args: object) -> GroupWriter:
        raise OSError(24, "Too many open files")  # its wake-up socket pair, say

    monkeypatch.setattr("orbit_actors.store.sqlite.store.GroupWriter", no_writer)
    before = set(threading.enumerate())
    with pytest.raises(OSError, match="Too many open files"):
        async with open_sqlite_store(tmp_path / "o.db"):
            pass
    left = [t for t in set(threading.enumerate()) - before if t.name == "orbit-store-checkpointer"]
    assert left == []


class _CheckpointsFail(sqlite3.Connection):
    """A connection whose checkpoints fail once ``failing`` is set (an I/O error, say)."""

    failing = False

    def execute(self, sql: str, *args: Any) -> sqlite3.Cursor:
        if self.failing and sql.startswith("PRAGMA wal_checkpoint"):
            raise sqlite3.OperationalError("disk I/O error")
        return super().execute(sql, *args)


def test_a_failing_checkpoint_is_not_tried_again_after_every_commit(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "o.db"
    prepare(path, "full")
    conn = sqlite3.connect(path, factory=_CheckpointsFail, check_same_thread=False)
    checkpointer = Checkpointer(lambda: conn, every_rows=100, chase=0)  # chasing from the start
    checkpointer.start()
    checkpointer.committed(100)
    _wait_for(lambda: checkpointer.stats.checkpoints == 1)
    conn.failing = True
    for changes in range(101, 111):  # ten commits of one row each
        _commit_and_wait_a_moment(checkpointer, changes)
    checkpointer.stop()
    failed = [r for r in caplog.records if "a checkpoint of the WAL failed" in r.getMessage()]
    assert len(failed) == 1  # the next try comes after the next hundred rows


def _commit_and_wait_a_moment(checkpointer: Checkpointer, changes: int) -> None:
    """Tell the checkpointer of a commit; give a checkpoint it wakes for a moment to begin."""
    began = checkpointer.stats.checkpoints
    checkpointer.committed(changes)
    _wait_for(lambda: checkpointer.stats.checkpoints > began, seconds=0.2)


def _wait_for(condition: Callable[[], bool], seconds: float = 10) -> None:
    deadline = time.monotonic() + seconds
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.005)


def test_the_wal_reset_bug_is_fixed_from_3_51_3_and_in_its_backports() -> None:
    fixed = [(3, 51, 3), (3, 52, 0), (4, 0, 0), (3, 50, 7), (3, 50, 9), (3, 44, 6)]
    affected = [(3, 40, 1), (3, 44, 5), (3, 45, 0), (3, 50, 6), (3, 51, 0), (3, 51, 2)]
    assert [wal_reset_fixed(v) for v in fixed] == [True] * len(fixed)
    assert [wal_reset_fixed(v) for v in affected] == [False] * len(affected)


async def _writers_autocheckpoint_and_checkpointers(path: Path) -> tuple[int, int]:
    async with open_sqlite_store(path) as store:
        frames = await store._writer.write(
            lambda conn: conn.execute("PRAGMA wal_autocheckpoint").fetchone()[0]
        )
        threads = [t for t in threading.enumerate() if t.name == "orbit-store-checkpointer"]
    return frames, len(threads)


async def test_with_the_wal_reset_bug_only_the_writers_connection_checkpoints(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # two connections that checkpoint or write the same WAL at once can lose commits
    monkeypatch.setattr(sqlite3, "sqlite_version_info", (3, 40, 1))
    assert await _writers_autocheckpoint_and_checkpointers(tmp_path / "o.db") == (1000, 0)


async def test_without_the_wal_reset_bug_the_checkpointer_runs_beside_the_writer(
    tmp_path: Path, fixed_sqlite: None
) -> None:
    found = await _writers_autocheckpoint_and_checkpointers(tmp_path / "o.db")
    assert found == (WAL_BACKSTOP, 1)
