"""The part of the :class:`~orbit_actors.store.base.Store` that SQLite and PostgreSQL carry out
with the same statements (:mod:`.dialect`): definitions, summary rows, workers and schedules.
Each store supplies its dialect, its group writer, its reader pool and its summary columns;
what only one engine does (history, the wake-up index, notifying other servers) stays in its
own package."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Generic, TypeVar

from . import dialect
from .base import (
    Commit,
    DefinitionRecord,
    ExecutionPage,
    ExecutionRow,
    PutDefinition,
    PutOutcome,
    ScheduleRecord,
    StoreStatistics,
    WorkerRecord,
)
from .cursor import clamp_limit, decode_cursor, page_of, page_query
from .group import GroupWriter
from .readers import ReaderPool
from .rules import WorkerTouches

C = TypeVar("C", bound=dialect.Connection)
T = TypeVar("T")


class SqlStore(Generic[C]):
    """The statements both database stores share, run through ``writer`` and ``read``."""

    _row_columns: str

    def __init__(
        self, sql: dialect.Dialect, writer: GroupWriter[C], readers: ReaderPool[C]
    ) -> None:
        self._sql = sql
        self._writer = writer
        self._readers = readers
        self._read = readers.read
        self._touches = WorkerTouches()

    def statistics(self) -> StoreStatistics:
        """Commit counters (commits, batches, events, batch sizes)."""
        return self._writer.stats

    def close_readers(self) -> None:
        """Close the reader connections (the store is closing)."""
        self._readers.close()

    async def commit(self, commit: Commit) -> None:
        """Append events and the summary row atomically; returns once durable. A ``create``
        commit for a stored id raises :class:`AlreadyStored`."""
        await self._writer.commit(commit)

    async def _rows(self, statement: str, *args: Any) -> list[tuple[Any, ...]]:
        query = self._sql(statement)
        rows: list[tuple[Any, ...]] = await self._read(lambda c: c.execute(query, args).fetchall())
        return rows

    def _schedules_changed(self, conn: C, outcome: T) -> T:
        """Tell whoever else reads the schedules that they changed (nobody, by default)."""
        return outcome

    # -- definitions ----------------------------------------------------------------------
    async def put_definition(self, record: DefinitionRecord) -> PutDefinition:
        """Register a definition: created, unchanged (same hash) or conflict (another hash)."""
        sql = self._sql
        return await self._writer.write(lambda conn: dialect.put_definition(sql, conn, record))

    async def definitions(self) -> list[DefinitionRecord]:
        """Every registered definition, in registration order."""
        rows = await self._rows(
            f"SELECT {dialect.DEFINITION_COLUMNS} FROM definitions ORDER BY ord"
        )
        return [DefinitionRecord(*row) for row in rows]

    # -- summary rows ---------------------------------------------------------------------
    async def execution(self, execution_id: str) -> ExecutionRow | None:
        """The summary row of an execution."""
        rows = await self._rows(
            f"SELECT {self._row_columns} FROM executions WHERE execution_id = ?", execution_id
        )
        return ExecutionRow(*rows[0]) if rows else None

    async def running_ids(self) -> list[str]:
        """Ids of every execution that has not finished, oldest first."""
        rows = await self._rows(
            "SELECT execution_id FROM executions WHERE status = 'running' ORDER BY ord"
        )
        return [row[0] for row in rows]

    async def list_executions(
        self,
        *,
        status: str | None = None,
        workflow: str | None = None,
        limit: int = 100,
        cursor: str | None = None,
        paused: bool | None = None,
    ) -> ExecutionPage:
        """Executions newest first, filtered; ``limit`` clamped to 1..1000."""
        limit = clamp_limit(limit)
        before = decode_cursor(cursor)
        query, args = page_query(
            self._row_columns, status, workflow, limit + 1, before, "?", paused
        )
        return page_of(await self._rows(query, *args), limit)

    async def count_by_status(self) -> dict[str, int]:
        """How many executions have each status."""
        rows = await self._rows("SELECT status, COUNT(*) FROM executions GROUP BY status")
        return {status: count for status, count in rows}

    # -- workers --------------------------------------------------------------------------
    async def upsert_worker(self, record: WorkerRecord) -> None:
        """Record a registration (the first ``registered_at_ms`` is kept)."""
        self._touches.registered(record.worker_id, record.last_seen_ms)
        sql = self._sql
        await self._writer.write(lambda conn: dialect.upsert_worker(sql, conn, record))

    async def touch_worker(self, worker_id: str, now_ms: int) -> None:
        """Note that a worker was seen; written at most once a second per worker."""
        if self._touches.due(worker_id, now_ms):
            sql = self._sql
            await self._writer.write(
                lambda conn: dialect.touch_worker(sql, conn, worker_id, now_ms)
            )

    async def workers(self) -> list[WorkerRecord]:
        """Every worker ever registered."""
        rows = await self._rows(f"SELECT {dialect.WORKER_COLUMNS} FROM workers ORDER BY worker_id")
        return [dialect.worker(row) for row in rows]

    # -- schedules ------------------------------------------------------------------------
    async def put_schedule(self, record: ScheduleRecord) -> PutOutcome:
        """Create a schedule: created, unchanged (same fields) or conflict."""
        return await self._write_schedules(
            lambda sql, conn: dialect.put_schedule(sql, conn, record)
        )

    async def schedule(self, schedule_id: str) -> ScheduleRecord | None:
        """One schedule."""
        rows = await self._rows(
            f"SELECT {dialect.SCHEDULE_COLUMNS} FROM schedules WHERE schedule_id = ?",
            schedule_id,
        )
        return dialect.schedule(rows[0]) if rows else None

    async def schedules(self) -> list[ScheduleRecord]:
        """Every schedule."""
        rows = await self._rows(
            f"SELECT {dialect.SCHEDULE_COLUMNS} FROM schedules ORDER BY schedule_id"
        )
        return [dialect.schedule(row) for row in rows]

    async def delete_schedule(self, schedule_id: str) -> bool:
        """Delete a schedule and its claims."""
        return await self._write_schedules(
            lambda sql, conn: dialect.delete_schedule(sql, conn, schedule_id)
        )

    async def set_schedule_paused(self, schedule_id: str, paused: bool, now_ms: int) -> bool:
        """Pause or resume a schedule; resuming settles it up to ``now_ms``."""
        return await self._write_schedules(
            lambda sql, conn: dialect.set_schedule_paused(sql, conn, schedule_id, paused, now_ms)
        )

    async def _write_schedules(self, work: Callable[[dialect.Dialect, Any], T]) -> T:
        sql = self._sql
        return await self._writer.write(lambda conn: self._schedules_changed(conn, work(sql, conn)))

    async def claim_occurrence(
        self, schedule_id: str, occurrence_ms: int, owner: str, now_ms: int
    ) -> bool:
        """Claim one occurrence: True for exactly one claimer, across every server."""
        sql = self._sql
        return await self._writer.write(
            lambda conn: dialect.claim_occurrence(
                sql, conn, schedule_id, occurrence_ms, owner, now_ms
            )
        )

    async def settle_occurrence(
        self, schedule_id: str, occurrence_ms: int, execution_id: str | None, error: str | None
    ) -> None:
        """Record how an occurrence ended and settle the schedule up to it."""
        sql = self._sql
        await self._writer.write(
            lambda conn: dialect.settle_occurrence(
                sql, conn, schedule_id, occurrence_ms, execution_id, error
            )
        )

    async def occurrence_executions(
        self, limit: int, schedule_id: str | None = None
    ) -> dict[str, list[str]]:
        """By schedule, the executions of its latest fired occurrences, newest first."""
        query, args = dialect.occurrences_query(limit, schedule_id)
        found: dict[str, list[str]] = {}
        for schedule_id_, execution_id in await self._rows(query, *args):
            found.setdefault(schedule_id_, []).append(execution_id)
        return found
