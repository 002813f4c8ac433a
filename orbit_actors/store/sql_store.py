"""The part of the :class:`~orbit_actors.store.base.Store` that SQLite and PostgreSQL carry out
with the same statements (:mod:`.dialect`): definitions, summary rows, workers and schedules.
Each store supplies its dialect, its group writer, its reader pool and its summary columns;
what only one engine does (history, the wake-up index, notifying other servers) stays in its
own package."""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any, Generic, TypeVar

from . import batches as b
from . import dialect
from .base import (
    Commit,
    DefinitionRecord,
    ExecutionPage,
    ExecutionRow,
    FlowSlots,
    Purged,
    PutDefinition,
    PutOutcome,
    Retention,
    ScheduleRecord,
    StoreStatistics,
    WorkerRecord,
)
from .cursor import clamp_limit, decode_cursor, encode_cursor, page_of, page_query
from .group import GroupWriter, WriteRequest
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

    def commit(self, commit: Commit) -> Coroutine[Any, Any, None]:
        """Append events and the summary row atomically; returns once durable. A ``create``
        commit for a stored id raises :class:`AlreadyStored`. (The writer's coroutine itself, not
        one awaiting it: a coroutine less to make, and to pass through at each resumption.)"""
        return self._writer.commit(commit)

    def commit_soon(
        self, commit: Commit, then: Callable[[BaseException | None], None]
    ) -> WriteRequest | None:
        """Hand ``commit`` over without waiting for it (see :meth:`GroupWriter.commit_soon`)."""
        return self._writer.commit_soon(commit, then)

    def take_watch(self, request: WriteRequest) -> Coroutine[Any, Any, None]:
        """Watch for the outcome of a commit handed over (see :meth:`GroupWriter.take_watch`)."""
        return self._writer.take_watch(request)

    async def _rows(self, statement: str, *args: Any) -> list[tuple[Any, ...]]:
        query = self._sql(statement)
        rows: list[tuple[Any, ...]] = await self._read(lambda c: c.execute(query, args).fetchall())
        return rows

    def _drop_history(self, conn: C, execution_id: str) -> None:
        """Delete the history segments of one execution (the engine's own layout)."""
        raise NotImplementedError

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

    # -- retention ------------------------------------------------------------------------
    async def purge(self, execution_id: str) -> Purged:
        """Delete a finished execution now, with its finished descendants."""
        sql, drop = self._sql, self._drop_history
        return await self._writer.write(lambda conn: dialect.purge(sql, conn, execution_id, drop))

    async def purge_due(self, retention: Retention, now_ms: int, limit: int) -> list[str]:
        """Purge up to ``limit`` executions whose retention has passed, in one transaction."""
        sql, drop = self._sql, self._drop_history
        return await self._writer.write(
            lambda conn: dialect.purge_due(sql, conn, retention, now_ms, limit, drop)
        )

    async def reclaim(self) -> None:
        """The database reuses the space rows leave (nothing to do unless the engine says)."""

    # -- concurrency slots (store/flow_slots.py) --------------------------------------------
    async def flow_slots(self, key: str, queued_limit: int | None = None) -> FlowSlots:
        """The running and queued executions of concurrency key ``key``, oldest first (the
        first ``queued_limit`` queued ones, when given: a key may have many)."""
        query = "SELECT execution_id FROM flow_slots WHERE key = ? AND state = ? ORDER BY ord"
        running = await self._rows(query, key, "running")
        limit = "" if queued_limit is None else f" LIMIT {int(queued_limit)}"
        queued = await self._rows(query + limit, key, "queued")
        return FlowSlots(running=[i for (i,) in running], queued=[i for (i,) in queued])

    async def queued_keys(self) -> list[str]:
        """Every concurrency key with queued executions."""
        rows = await self._rows(
            "SELECT DISTINCT key FROM flow_slots WHERE state = 'queued' ORDER BY key"
        )
        return [key for (key,) in rows]

    # -- batches (store/batches.py) ---------------------------------------------------------
    async def create_batch(self, record: b.BatchRecord) -> int:
        """Store a batch with the snapshot of what its filter matches; how many it matched."""
        sql = self._sql
        return await self._writer.write(lambda conn: b.create_batch(sql, conn, record))

    async def batch_matches(self, flt: b.BatchFilter) -> tuple[int, list[str]]:
        """How many executions ``flt`` matches now, and the first few ids (writes nothing)."""
        count, count_args = b.count_query(flt)
        sample, sample_args = b.sample_query(flt)
        ((matched,),) = await self._rows(count, *count_args)
        return int(matched), [i for (i,) in await self._rows(sample, *sample_args)]

    async def batch(self, batch_id: str) -> b.BatchRecord | None:
        """One batch."""
        rows = await self._rows(
            f"SELECT {b.BATCH_COLUMNS} FROM batches WHERE batch_id = ?", batch_id
        )
        return b.record_of(rows[0]) if rows else None

    async def batches(
        self, limit: int = 100, cursor: str | None = None
    ) -> tuple[list[b.BatchRecord], str | None]:
        """Batches newest first, a page at a time (the cursor of the next page, or None)."""
        limit, before = clamp_limit(limit), decode_cursor(cursor)
        where, args = ("WHERE ord < ?", [before]) if before is not None else ("", [])
        rows = await self._rows(
            f"SELECT ord, {b.BATCH_COLUMNS} FROM batches {where} ORDER BY ord DESC "
            f"LIMIT {limit + 1}",
            *args,
        )
        more = len(rows) > limit
        rows = rows[:limit]
        return [b.record_of(row[1:]) for row in rows], encode_cursor(rows[-1][0]) if more else None

    async def batch_items(self, batch_id: str, start: int, limit: int) -> list[b.BatchItem]:
        """Up to ``limit`` items of a batch's snapshot from position ``start`` on."""
        rows = await self._rows(
            "SELECT position, execution_id, run FROM batch_items WHERE batch_id = ? "
            f"AND position >= ? ORDER BY position LIMIT {int(limit)}",
            batch_id, start,
        )  # fmt: skip
        return [b.BatchItem(*row) for row in rows]

    async def batch_failures(self, batch_id: str, limit: int) -> list[b.BatchFailure]:
        """The first ``limit`` executions a batch could not act on, in its order."""
        rows = await self._rows(
            "SELECT execution_id, code, message FROM batch_items WHERE batch_id = ? "
            f"AND code IS NOT NULL ORDER BY position LIMIT {int(limit)}",
            batch_id,
        )
        return [b.BatchFailure(*row) for row in rows]

    async def mark_batch_doubt(self, batch_id: str, until: int) -> bool:
        """Items before ``until`` may be acted on from now; False when the batch stopped."""
        sql = self._sql
        return await self._writer.write(lambda conn: b.mark_doubt(sql, conn, batch_id, until))

    async def advance_batch(self, batch_id: str, progress: b.BatchProgress, now_ms: int) -> str:
        """Commit the outcome of a page of a batch; its state after."""
        sql = self._sql
        return await self._writer.write(
            lambda conn: b.advance(sql, conn, batch_id, progress, now_ms)
        )

    async def cancel_batch(self, batch_id: str, now_ms: int) -> str | None:
        """Cancel a running batch; its state after (None: no such batch)."""
        sql = self._sql
        return await self._writer.write(lambda conn: b.cancel_batch(sql, conn, batch_id, now_ms))

    async def claim_batches(self, owner: str, from_owners: list[str] | None) -> list[str]:
        """Take over the running batches of ``from_owners`` (None: every running batch)."""
        sql = self._sql
        return await self._writer.write(lambda conn: b.claim_batches(sql, conn, owner, from_owners))

    # -- workers --------------------------------------------------------------------------
    async def upsert_worker(self, record: WorkerRecord) -> None:
        """Record a registration (the first ``registered_at_ms`` is kept)."""
        self._touches.registered(record.worker_id, record.last_seen_ms)
        sql = self._sql
        await self._writer.write(lambda conn: dialect.upsert_worker(sql, conn, record))

    async def touch_worker(self, worker_id: str, now_ms: int) -> None:
        """Note that a worker was seen; written at most once a second per worker, by the next
        transaction, without waiting for it: the message that came with the sign of life does
        not wait for a commit of its own (the time is advisory; :meth:`workers` shows it at
        once)."""
        if self._touches.due(worker_id, now_ms):
            sql = self._sql
            self._writer.write_nowait(
                lambda conn: dialect.touch_worker(sql, conn, worker_id, now_ms),
                f"the sign of life of worker {worker_id}",
            )

    async def workers(self) -> list[WorkerRecord]:
        """Every worker ever registered (seen last when this store last noted it, if that is
        later than what is written yet)."""
        rows = await self._rows(f"SELECT {dialect.WORKER_COLUMNS} FROM workers ORDER BY worker_id")
        return [self._touches.latest(dialect.worker(row)) for row in rows]

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
