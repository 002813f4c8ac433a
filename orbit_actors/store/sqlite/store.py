"""The embedded store: one SQLite file in WAL mode, group commit on a writer thread, a small pool
of reader connections run in worker threads. Nothing here blocks the trio loop."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, TypeVar

import trio

from ...errors import StorageError
from ...history.events import Event, events_from_json
from ..base import (
    KEPT_CLAIMS,
    Commit,
    DefinitionRecord,
    ExecutionPage,
    ExecutionRow,
    FlowSlots,
    PutDefinition,
    PutOutcome,
    ScheduleRecord,
    StoreStatistics,
    WakeEntry,
    WorkerRecord,
)
from ..cursor import clamp_limit, decode_cursor, page_of, page_query
from ..readers import ReaderPool
from ..rules import WorkerTouches
from .commits import HISTORY_OF_RUN, ROW_COLUMNS, CommitBatcher
from .flow_slots import read_queued_keys, read_slots
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
    writer = GroupWriter(
        lambda: connect(path, synchronous, writer=True),
        str(path),
        10_000 if group_commit else 1,
        CommitBatcher(),
    )
    await writer.start()
    store = SqliteStore(path, synchronous, writer)
    try:
        yield store
    finally:
        with trio.CancelScope(shield=True):
            await writer.stop()
            store.close_readers()


_WAKE_COLUMNS = "execution_id, wake_at_ms, busy IS NOT 0, parent_id IS NULL"


class SqliteStore:
    """The :class:`~orbit_actors.store.base.Store` on a SQLite file. Open it with
    :func:`open_sqlite_store`."""

    def __init__(self, path: Path, synchronous: Synchronous, writer: GroupWriter) -> None:
        self.path = path
        self._synchronous = synchronous
        self._writer = writer
        self._readers = ReaderPool(SqliteReads(path, synchronous))
        self._read = self._readers.read
        self._touches = WorkerTouches()

    def statistics(self) -> StoreStatistics:
        """Commit counters (commits, batches, events, batch sizes)."""
        return self._writer.stats

    def close_readers(self) -> None:
        """Close the reader connections (the store is closing)."""
        self._readers.close()

    # -- definitions ----------------------------------------------------------------------
    async def put_definition(self, record: DefinitionRecord) -> PutDefinition:
        """Register a definition: created, unchanged (same hash) or conflict (another hash)."""
        return await self._writer.write(lambda conn: _put_definition(conn, record))

    async def definitions(self) -> list[DefinitionRecord]:
        """Every registered definition, in registration order."""
        rows = await self._read(
            lambda c: c.execute(
                "SELECT name, version, definition_hash, ir, registered_at_ms FROM definitions ORDER BY ord"
            ).fetchall()
        )
        return [DefinitionRecord(*row) for row in rows]

    # -- executions -----------------------------------------------------------------------
    async def commit(self, commit: Commit) -> None:
        """Append events and the summary row atomically; returns once durable. A ``create``
        commit for a stored id raises :class:`AlreadyStored`."""
        await self._writer.commit(commit)

    async def history(self, execution_id: str, run: int | None = None) -> list[Event]:
        """The events of the current run, or of run ``run``."""
        segments = await self._read(lambda c: _history(c, execution_id, run))
        return [event for segment in segments for event in events_from_json(segment)]

    async def execution(self, execution_id: str) -> ExecutionRow | None:
        """The summary row of an execution."""
        row = await self._read(
            lambda c: c.execute(
                f"SELECT {ROW_COLUMNS} FROM executions WHERE execution_id = ?", (execution_id,)
            ).fetchone()
        )
        return ExecutionRow(*row) if row else None

    async def running_ids(self) -> list[str]:
        """Ids of every execution that has not finished."""
        rows = await self._read(
            lambda c: c.execute(
                "SELECT execution_id FROM executions WHERE status = 'running' ORDER BY ord"
            ).fetchall()
        )
        return [row[0] for row in rows]

    async def wake_index(self, due_by_ms: int | None = None) -> list[WakeEntry]:
        """The wake-up index: every execution that has not finished, oldest first (a row
        written before the index existed counts as busy); with ``due_by_ms``, the busy ones
        and those due by then."""
        due = "" if due_by_ms is None else " AND (busy IS NOT 0 OR wake_at_ms <= ?)"
        args = () if due_by_ms is None else (due_by_ms,)
        rows = await self._read(
            lambda c: c.execute(
                f"SELECT {_WAKE_COLUMNS} FROM executions WHERE status = 'running'{due} ORDER BY ord",
                args,
            ).fetchall()
        )
        return list(map(WakeEntry._make, rows))  # busy and root come as 0 or 1

    async def wake_index_page(self, after: int, limit: int) -> tuple[list[WakeEntry], int]:
        """Up to ``limit`` running executions after position ``after``, oldest first."""
        rows = await self._read(
            lambda c: c.execute(
                f"SELECT {_WAKE_COLUMNS}, ord FROM executions "
                "WHERE status = 'running' AND ord > ? ORDER BY ord LIMIT ?",
                (after, limit),
            ).fetchall()
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

    async def list_executions(
        self,
        *,
        status: str | None = None,
        workflow: str | None = None,
        limit: int = 100,
        cursor: str | None = None,
    ) -> ExecutionPage:
        """Executions newest first, filtered; ``limit`` clamped to 1..1000."""
        limit = clamp_limit(limit)
        before = decode_cursor(cursor)
        query, args = page_query(ROW_COLUMNS, status, workflow, limit + 1, before, "?")
        rows = await self._read(lambda c: c.execute(query, args).fetchall())
        return page_of(rows, limit)

    async def count_by_status(self) -> dict[str, int]:
        """How many executions have each status."""
        rows = await self._read(
            lambda c: c.execute(
                "SELECT status, COUNT(*) FROM executions GROUP BY status"
            ).fetchall()
        )
        return {status: count for status, count in rows}

    async def flow_slots(self, key: str, queued_limit: int | None = None) -> FlowSlots:
        """The running and queued executions of concurrency key ``key``, oldest first (the
        first ``queued_limit`` queued ones, when given)."""
        return await self._read(lambda c: read_slots(c, key, queued_limit))

    async def queued_keys(self) -> list[str]:
        """Every concurrency key with queued executions."""
        return await self._read(read_queued_keys)

    # -- workers --------------------------------------------------------------------------
    async def upsert_worker(self, record: WorkerRecord) -> None:
        """Record a registration (the first ``registered_at_ms`` is kept)."""
        self._touches.registered(record.worker_id, record.last_seen_ms)
        await self._writer.write(lambda conn: _upsert_worker(conn, record))

    async def touch_worker(self, worker_id: str, now_ms: int) -> None:
        """Note that a worker was seen; written at most once a second per worker."""
        if not self._touches.due(worker_id, now_ms):
            return
        await self._writer.write(
            lambda conn: conn.execute(
                "UPDATE workers SET last_seen_ms = MAX(last_seen_ms, ?) WHERE worker_id = ?",
                (now_ms, worker_id),
            )
        )

    async def workers(self) -> list[WorkerRecord]:
        """Every worker ever registered."""
        rows = await self._read(
            lambda c: c.execute(
                "SELECT worker_id, runtime, sdk, contracts, registered_at_ms, last_seen_ms FROM workers ORDER BY worker_id"
            ).fetchall()
        )
        return [WorkerRecord(r[0], r[1], r[2], json.loads(r[3]), r[4], r[5]) for r in rows]

    # -- schedules ------------------------------------------------------------------------
    async def put_schedule(self, record: ScheduleRecord) -> PutOutcome:
        """Create a schedule: created, unchanged (same fields) or conflict."""
        return await self._writer.write(lambda conn: _put_schedule(conn, record))

    async def schedule(self, schedule_id: str) -> ScheduleRecord | None:
        """One schedule."""
        row = await self._read(
            lambda c: c.execute(
                f"SELECT {_SCHEDULE_COLUMNS} FROM schedules WHERE schedule_id = ?",
                (schedule_id,),
            ).fetchone()
        )
        return _schedule(row) if row else None

    async def schedules(self) -> list[ScheduleRecord]:
        """Every schedule."""
        rows = await self._read(
            lambda c: c.execute(
                f"SELECT {_SCHEDULE_COLUMNS} FROM schedules ORDER BY schedule_id"
            ).fetchall()
        )
        return [_schedule(row) for row in rows]

    async def delete_schedule(self, schedule_id: str) -> bool:
        """Delete a schedule and its claims."""
        return await self._writer.write(lambda conn: _delete_schedule(conn, schedule_id))

    async def set_schedule_paused(self, schedule_id: str, paused: bool, now_ms: int) -> bool:
        """Pause or resume a schedule; resuming settles it up to ``now_ms``."""
        settled = 0 if paused else now_ms
        return await self._writer.write(
            lambda conn: (
                conn.execute(
                    "UPDATE schedules SET paused = ?, settled_ms = MAX(settled_ms, ?) WHERE schedule_id = ?",
                    (int(paused), settled, schedule_id),
                ).rowcount
                == 1
            )
        )

    async def claim_occurrence(
        self, schedule_id: str, occurrence_ms: int, owner: str, now_ms: int
    ) -> bool:
        """Claim one occurrence: True for exactly one claimer, ever."""
        return await self._writer.write(
            lambda conn: (
                conn.execute(
                    "INSERT OR IGNORE INTO schedule_claims (schedule_id, occurrence_ms, owner, claimed_at_ms) "
                    "VALUES (?, ?, ?, ?)",
                    (schedule_id, occurrence_ms, owner, now_ms),
                ).rowcount
                == 1
            )
        )

    async def settle_occurrence(
        self, schedule_id: str, occurrence_ms: int, execution_id: str | None, error: str | None
    ) -> None:
        """Record how an occurrence ended and settle the schedule up to it."""
        await self._writer.write(
            lambda conn: _settle_occurrence(conn, schedule_id, occurrence_ms, execution_id, error)
        )

    async def occurrence_executions(
        self, limit: int, schedule_id: str | None = None
    ) -> dict[str, list[str]]:
        """By schedule, the executions of its latest fired occurrences, newest first."""
        only = "AND schedule_id = ?" if schedule_id is not None else ""
        query = (
            "SELECT schedule_id, execution_id FROM (SELECT schedule_id, execution_id, "
            "occurrence_ms, ROW_NUMBER() OVER (PARTITION BY schedule_id ORDER BY occurrence_ms "
            f"DESC) AS n FROM schedule_claims WHERE execution_id IS NOT NULL {only}) "
            "WHERE n <= ? ORDER BY schedule_id, occurrence_ms DESC"
        )
        parameters = (schedule_id, limit) if schedule_id is not None else (limit,)
        rows = await self._read(lambda c: c.execute(query, parameters).fetchall())
        found: dict[str, list[str]] = {}
        for schedule, execution_id in rows:
            found.setdefault(schedule, []).append(execution_id)
        return found

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


def _put_definition(conn: sqlite3.Connection, record: DefinitionRecord) -> PutDefinition:
    row = conn.execute(
        "SELECT name, version, definition_hash, ir, registered_at_ms FROM definitions WHERE name = ? AND version = ?",
        (record.name, record.version),
    ).fetchone()
    if row is not None:
        existing = DefinitionRecord(*row)
        outcome: PutOutcome = (
            "unchanged" if existing.definition_hash == record.definition_hash else "conflict"
        )
        return PutDefinition(outcome, existing)
    conn.execute(
        "INSERT INTO definitions (name, version, definition_hash, ir, registered_at_ms) VALUES (?, ?, ?, ?, ?)",
        (record.name, record.version, record.definition_hash, record.ir, record.registered_at_ms),
    )
    return PutDefinition("created", record)


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


def _upsert_worker(conn: sqlite3.Connection, record: WorkerRecord) -> None:
    conn.execute(
        "INSERT INTO workers (worker_id, runtime, sdk, contracts, registered_at_ms, last_seen_ms) "
        "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (worker_id) DO UPDATE SET runtime = excluded.runtime, "
        "sdk = excluded.sdk, contracts = excluded.contracts, last_seen_ms = excluded.last_seen_ms",
        (record.worker_id, record.runtime, record.sdk, json.dumps(record.contracts),
         record.registered_at_ms, record.last_seen_ms),
    )  # fmt: skip


def _put_schedule(conn: sqlite3.Connection, record: ScheduleRecord) -> PutOutcome:
    row = conn.execute(
        "SELECT spec FROM schedules WHERE schedule_id = ?", (record.schedule_id,)
    ).fetchone()
    if row is not None:
        return "unchanged" if json.loads(row[0]) == record.spec else "conflict"
    conn.execute(
        "INSERT INTO schedules (schedule_id, spec, paused, created_at_ms) VALUES (?, ?, ?, ?)",
        (
            record.schedule_id,
            json.dumps(record.spec, sort_keys=True),
            int(record.paused),
            record.created_at_ms,
        ),
    )
    return "created"


def _delete_schedule(conn: sqlite3.Connection, schedule_id: str) -> bool:
    conn.execute("DELETE FROM schedule_claims WHERE schedule_id = ?", (schedule_id,))
    return conn.execute("DELETE FROM schedules WHERE schedule_id = ?", (schedule_id,)).rowcount == 1


_SCHEDULE_COLUMNS = "schedule_id, spec, paused, created_at_ms, settled_ms, last_error"


def _schedule(row: Any) -> ScheduleRecord:
    return ScheduleRecord(row[0], json.loads(row[1]), bool(row[2]), row[3], row[4], row[5])


def _settle_occurrence(
    conn: sqlite3.Connection, schedule_id: str, occurrence_ms: int,
    execution_id: str | None, error: str | None,
) -> None:  # fmt: skip
    if execution_id is not None:
        conn.execute(
            "UPDATE schedule_claims SET execution_id = ? WHERE schedule_id = ? AND occurrence_ms = ?",
            (execution_id, schedule_id, occurrence_ms),
        )
        conn.execute(
            "DELETE FROM schedule_claims WHERE schedule_id = ? AND execution_id IS NOT NULL "
            "AND occurrence_ms <= (SELECT occurrence_ms FROM schedule_claims WHERE schedule_id = ? "
            "AND execution_id IS NOT NULL ORDER BY occurrence_ms DESC LIMIT 1 OFFSET ?)",
            (schedule_id, schedule_id, KEPT_CLAIMS),
        )
    else:  # it did not start: the claim is given back
        conn.execute(
            "DELETE FROM schedule_claims WHERE schedule_id = ? AND occurrence_ms = ? AND execution_id IS NULL",
            (schedule_id, occurrence_ms),
        )
    conn.execute(
        "UPDATE schedules SET settled_ms = MAX(settled_ms, ?), "
        "last_error = CASE WHEN ? IS NOT NULL THEN NULL ELSE COALESCE(?, last_error) END "
        "WHERE schedule_id = ?",
        (occurrence_ms, execution_id, error, schedule_id),
    )
