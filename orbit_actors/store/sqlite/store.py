"""The embedded store: one SQLite file in WAL mode, group commit on a writer thread, a small pool
of reader connections run in worker threads. Nothing here blocks the trio loop."""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TypeVar

import trio

from ...errors import StorageError
from ...history.events import Event, events_from_json
from ..base import WakeEntry
from ..dialect import SQLITE
from ..readers import ReaderPool
from ..sql_store import SqlStore
from .checkpoints import Checkpointer, CheckpointStatistics, wal_reset_fixed
from .commits import HISTORY_OF_RUN, ROW_COLUMNS, CommitBatcher
from .lock import exclusive
from .schema import StoreOpenError, Synchronous, connect, prepare
from .writer import GroupWriter

T = TypeVar("T")


@asynccontextmanager
async def open_sqlite_store(
    path: str | Path, *, synchronous: Synchronous = "full", group_commit: bool = True
) -> AsyncIterator[SqliteStore]:
    """Open (creating or migrating) the Orbit database at ``path``, held by this process alone
    until closed (another opening it meanwhile gets StoreOpenError naming this pid).
    ``synchronous="normal"`` is faster but may lose the last commits on a power failure (never
    on a process crash). ``group_commit=False`` writes one transaction per commit (for
    comparison only)."""
    path = Path(path)
    if path.is_dir():
        raise StoreOpenError(f"{path} is a directory; give --db the path of a database file")
    with exclusive(path):
        async with _opened(path, synchronous, group_commit) as store:
            yield store


@asynccontextmanager
async def _opened(
    path: Path, synchronous: Synchronous, group_commit: bool
) -> AsyncIterator[SqliteStore]:
    await trio.to_thread.run_sync(prepare, path, synchronous)
    checkpointer = None  # (a SQLite with the WAL-reset bug: the writer checkpoints itself)
    if wal_reset_fixed(sqlite3.sqlite_version_info):
        checkpointer = Checkpointer(lambda: connect(path, synchronous, writer=False))
        await trio.to_thread.run_sync(checkpointer.start)
    try:  # (making the writer may fail too: its wake-up sockets)
        writer = GroupWriter(
            lambda: connect(path, synchronous, writer=True),
            str(path),
            10_000 if group_commit else 1,
            CommitBatcher(),
            checkpointer,
        )
        await writer.start()
    except BaseException:
        if checkpointer is not None:
            with trio.CancelScope(shield=True):
                await trio.to_thread.run_sync(checkpointer.stop)
        raise
    store = SqliteStore(path, synchronous, writer, checkpointer)
    try:
        yield store
    finally:
        with trio.CancelScope(shield=True):
            await writer.stop()
            if checkpointer is not None:
                await trio.to_thread.run_sync(checkpointer.stop)
            store.close_readers()


_WAKE_COLUMNS = "execution_id, wake_at_ms, busy IS NOT 0, parent_id IS NULL"


class SqliteStore(SqlStore[sqlite3.Connection]):
    """The :class:`~orbit_actors.store.base.Store` on a SQLite file. Open it with
    :func:`open_sqlite_store`."""

    _row_columns = ROW_COLUMNS

    def __init__(
        self,
        path: Path,
        synchronous: Synchronous,
        writer: GroupWriter,
        checkpointer: Checkpointer | None,
    ) -> None:
        super().__init__(SQLITE, writer, ReaderPool(SqliteReads(path, synchronous)))
        self.path = path
        self._synchronous = synchronous
        self._checkpointer = checkpointer

    def checkpoint_statistics(self) -> CheckpointStatistics:
        """What the checkpointer did (checkpoints, requests to the writer, the WAL's largest);
        all 0 without one."""
        return self._checkpointer.stats if self._checkpointer else CheckpointStatistics()

    # -- executions -----------------------------------------------------------------------
    async def history(self, execution_id: str, run: int | None = None) -> list[Event]:
        """The events of the current run, or of run ``run``."""
        segments = await self._read(lambda c: _history(c, execution_id, run))
        return [event for segment in segments for event in events_from_json(segment)]

    async def wake_index(self, due_by_ms: int | None = None) -> list[WakeEntry]:
        """The wake-up index: every execution that has not finished, oldest first (a row
        written before the index existed counts as busy); with ``due_by_ms``, the busy ones
        and those due by then."""
        due = "" if due_by_ms is None else " AND (busy IS NOT 0 OR wake_at_ms <= ?)"
        args = () if due_by_ms is None else (due_by_ms,)
        rows = await self._rows(
            f"SELECT {_WAKE_COLUMNS} FROM executions WHERE status = 'running'{due} ORDER BY ord",
            *args,
        )
        return list(map(WakeEntry._make, rows))  # busy and root come as 0 or 1

    async def wake_index_page(self, after: int, limit: int) -> tuple[list[WakeEntry], int]:
        """Up to ``limit`` running executions after position ``after``, oldest first."""
        rows = await self._rows(
            f"SELECT {_WAKE_COLUMNS}, ord FROM executions "
            "WHERE status = 'running' AND ord > ? ORDER BY ord LIMIT ?",
            after,
            limit,
        )
        return [WakeEntry._make(row[:4]) for row in rows], rows[-1][4] if rows else after

    async def histories(self, execution_ids: list[str]) -> dict[str, list[Event]]:
        """The current run's events of each execution, in one read."""

        def read(conn: sqlite3.Connection) -> dict[str, list[str]]:
            return {i: _history(conn, i, None) for i in execution_ids}

        found = await self._read(read)
        return {
            i: [event for segment in segments for event in events_from_json(segment)]
            for i, segments in found.items()
            if segments
        }

    # -- retention ------------------------------------------------------------------------
    def _drop_history(self, conn: sqlite3.Connection, execution_id: str) -> None:
        """Follow each run's chain of segments from its head (the segment ids are the primary
        key: no index on the execution is needed)."""
        heads = conn.execute(
            "SELECT head FROM executions WHERE execution_id = ? "
            "UNION ALL SELECT head FROM runs WHERE execution_id = ?",
            (execution_id, execution_id),
        ).fetchall()
        for (head,) in heads:
            if head is not None:
                conn.execute(_DROP_RUN, (head,))

    async def reclaim(self) -> None:
        """Give the file's free pages beyond a reserve back to the system, a few hundred per
        transaction. The reserve (a quarter of the file) is what the next purges free and the
        next commits fill again, so a steady load neither grows nor churns the file."""
        while await self._writer.write(_give_back_pages):
            pass

    async def history_segments(self, execution_ids: list[str]) -> dict[str, list[str]]:
        """The current run's events of each execution as stored JSON arrays, in one statement
        (a fifth of the CPU of a query per execution)."""

        def read(conn: sqlite3.Connection) -> dict[str, list[str]]:
            found: dict[str, list[str]] = {}
            for start in range(0, len(execution_ids), _IDS_PER_STATEMENT):
                chunk = execution_ids[start : start + _IDS_PER_STATEMENT]
                for execution_id, segment in conn.execute(_current_runs(len(chunk)), chunk):
                    found.setdefault(execution_id, []).append(segment)
            return found

        return await self._read(read)

    # -- schedules ------------------------------------------------------------------------
    async def release_claims(self, except_owner: str) -> int:
        """Release other processes' claims that never fired."""
        return await self._writer.write(
            lambda conn: (
                conn.execute(
                    "DELETE FROM schedule_claims WHERE owner != ? AND execution_id IS NULL",
                    (except_owner,),
                ).rowcount
            )
        )


class SqliteReads:
    """Reader connections of the file: each read is one transaction (one snapshot)."""

    def __init__(self, path: Path, synchronous: Synchronous) -> None:
        self._path = path
        self._synchronous = synchronous

    def connect(self) -> sqlite3.Connection:
        """A reader connection (usable from any thread, one at a time)."""
        return connect(self._path, self._synchronous, writer=False)

    def read(self, work: Callable[[sqlite3.Connection], T], conn: sqlite3.Connection) -> T:
        """Run ``work`` in one read transaction."""
        try:
            conn.execute("BEGIN")
            try:
                return work(conn)
            finally:
                conn.execute("COMMIT")
        except sqlite3.Error as exc:
            raise StorageError(f"could not read {self._path}: {exc}") from None

    def usable(self, conn: sqlite3.Connection) -> bool:
        """A SQLite connection does not break."""
        return True

    def close(self, conn: sqlite3.Connection) -> None:
        """Close the connection."""
        conn.close()


def _history(conn: sqlite3.Connection, execution_id: str, run: int | None) -> list[str]:
    found = conn.execute(
        "SELECT run, head FROM executions WHERE execution_id = ?", (execution_id,)
    ).fetchone()
    if found is None:
        return []
    head = found[1]
    if run is not None and run != found[0]:
        archived = conn.execute(
            "SELECT head FROM runs WHERE execution_id = ? AND run = ?", (execution_id, run)
        ).fetchone()
        if archived is None:
            return []
        head = archived[0]
    return [r[0] for r in conn.execute(HISTORY_OF_RUN, (head, head))]


_IDS_PER_STATEMENT = 500
"""Execution ids bound in one statement (well under SQLite's limit of bound parameters)."""


def _current_runs(count: int) -> str:
    """The events (JSON arrays) of the current runs of ``count`` executions (bound ``?``s), as
    ``(execution_id, events)`` rows in seq order per execution: each run's chain of segments
    followed from its head."""
    marks = ", ".join("?" * count)
    return f"""
WITH RECURSIVE chain(execution_id, id) AS (
    SELECT execution_id, head FROM executions
    WHERE execution_id IN ({marks}) AND head IS NOT NULL
    UNION ALL
    SELECT chain.execution_id, segments.prev FROM segments JOIN chain ON segments.id = chain.id
    WHERE segments.prev IS NOT NULL
)
SELECT chain.execution_id, segments.events FROM chain JOIN segments ON segments.id = chain.id
ORDER BY chain.execution_id, segments.first_seq
"""


def _give_back_pages(conn: sqlite3.Connection) -> bool:
    """Free up to RECLAIM_PAGES pages beyond the reserve; True when more are left."""
    free: int = conn.execute("PRAGMA freelist_count").fetchone()[0]
    pages: int = conn.execute("PRAGMA page_count").fetchone()[0]
    excess = -((pages - 4 * free) // 3)  # pages to give back so free <= (pages - x) / 4
    for _ in range(min(excess, RECLAIM_PAGES)):
        conn.execute("PRAGMA incremental_vacuum(1)")  # Python steps a PRAGMA once: one page
    return excess > RECLAIM_PAGES


RECLAIM_PAGES = 100
_DROP_RUN = """
WITH RECURSIVE chain(id) AS (
    SELECT ?
    UNION ALL
    SELECT segments.prev FROM segments JOIN chain ON segments.id = chain.id
    WHERE segments.prev IS NOT NULL
)
DELETE FROM segments WHERE id IN (SELECT id FROM chain)
"""
