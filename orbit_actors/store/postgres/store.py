"""The store on PostgreSQL: group commit on one writer connection and thread, reads on a small
pool of reader connections run in worker threads (each used by one thread at a time). Nothing
here blocks the trio loop. Several servers share one database once each has joined
(:meth:`PostgresStore.join`): each execution is then written by the one server that owns it,
and its commits are fenced (see :mod:`.commits`)."""

from __future__ import annotations

import contextlib
import json
import secrets
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any, TypeVar

import psycopg
import trio

from ...errors import StorageError
from ...history.events import Event, events_from_json
from ..base import (
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
from ..group import GroupWriter
from ..readers import ReaderPool
from ..rules import WorkerTouches
from . import records
from .cluster import PostgresCluster
from .commits import ROW_COLUMNS, CommitBatcher, Owner
from .flow_slots import QUEUED_KEYS, SLOTS
from .schema import Conn, connect, describe, one_line, prepare
from .writer import PostgresEngine

T = TypeVar("T")
_CURRENT_RUN = (
    "SELECT s.execution_id, s.events FROM executions e JOIN segments s "
    "ON s.execution_id = e.execution_id AND s.run = e.run "
    "WHERE e.execution_id = ANY(%s) ORDER BY s.execution_id, s.first_seq"
)


@asynccontextmanager
async def open_postgres_store(
    url: str, *, group_commit: bool = True
) -> AsyncIterator[PostgresStore]:
    """Open the Orbit database at ``url`` (a ``postgresql://`` URL or libpq conninfo),
    creating or migrating its schema first. Raises StoreOpenError, with one line naming the
    database, when it cannot be reached or is not Orbit's. ``group_commit=False`` writes one
    transaction per commit (for comparison only)."""
    await trio.to_thread.run_sync(prepare, url)
    name = describe(url)
    engine, batcher = PostgresEngine(url, name), CommitBatcher()
    writer = GroupWriter(engine, name, 10_000 if group_commit else 1, batcher)
    await writer.start()
    store = PostgresStore(url, writer, engine, batcher)
    try:
        yield store
    finally:
        with trio.CancelScope(shield=True):
            await writer.stop()
            store.close_readers()


_WAKE_COLUMNS = "execution_id, wake_at_ms, busy, parent_id IS NULL"


class PostgresStore:
    """The :class:`~orbit_actors.store.base.Store` on a PostgreSQL database. Open it with
    :func:`open_postgres_store`."""

    def __init__(
        self, url: str, writer: GroupWriter[Conn], engine: PostgresEngine, batcher: CommitBatcher
    ) -> None:
        self.url = url
        self.name = describe(url)
        self._writer = writer
        self._engine = engine
        self._batcher = batcher
        self.cluster: PostgresCluster | None = None
        self._readers = ReaderPool(PostgresReads(url, self.name))
        self._read = self._readers.read
        self._touches = WorkerTouches()

    def statistics(self) -> StoreStatistics:
        """Commit counters (commits, batches, events, batch sizes)."""
        return self._writer.stats

    @asynccontextmanager
    async def join(
        self, address: str, lease_s: float, server_id: str | None = None
    ) -> AsyncIterator[PostgresCluster]:
        """Join the servers sharing this database with a lease of ``lease_s`` seconds; from
        then on commits are fenced by the lease's epoch. Leaving ends the lease at once, so the
        others take what this server owned over without waiting for it to expire."""
        cluster = PostgresCluster(self.url, self.name, server_id or secrets.token_hex(4), lease_s)
        await cluster.join(address)
        # a server paused inside a transaction must not keep its rows locked past its lease
        idle_ms = max(1000, cluster.lease_ms // 2)
        self._engine.settings = f"SET idle_in_transaction_session_timeout = {idle_ms}"
        await self._writer.write(lambda conn: conn.execute(self._engine.settings.encode()))
        self._batcher.owner = Owner(cluster.server_id, cluster.epoch)
        self.cluster = cluster
        try:
            yield cluster
        finally:
            with trio.CancelScope(shield=True):
                with contextlib.suppress(StorageError):
                    await cluster.leave()
                cluster.close()
            self.cluster = None
            self._batcher.owner = None

    def close_readers(self) -> None:
        """Close the reader connections (the store is closing)."""
        self._readers.close()

    async def _rows(self, query: str, *args: Any) -> list[tuple[Any, ...]]:
        return await self._read(lambda c: c.execute(query, args).fetchall())

    # -- definitions ----------------------------------------------------------------------
    async def put_definition(self, record: DefinitionRecord) -> PutDefinition:
        """Register a definition: created, unchanged (same hash) or conflict (another hash)."""
        return await self._writer.write(lambda conn: records.put_definition(conn, record))

    async def definitions(self) -> list[DefinitionRecord]:
        """Every registered definition, in registration order."""
        rows = await self._rows(
            f"SELECT {records.DEFINITION_COLUMNS} FROM definitions ORDER BY ord"
        )
        return [DefinitionRecord(*row) for row in rows]

    # -- executions -----------------------------------------------------------------------
    async def commit(self, commit: Commit) -> None:
        """Append events and the summary row atomically; returns once durable. A ``create``
        commit for a stored id raises :class:`AlreadyStored`."""
        await self._writer.commit(commit)

    async def history(self, execution_id: str, run: int | None = None) -> list[Event]:
        """The events of the current run, or of run ``run``."""
        if run is None:
            rows = await self._rows(_CURRENT_RUN, [execution_id])
            segments = [row[1] for row in rows]
        else:
            rows = await self._rows(
                "SELECT events FROM segments WHERE execution_id = %s AND run = %s "
                "ORDER BY first_seq",
                execution_id,
                run,
            )
            segments = [row[0] for row in rows]
        return [event for segment in segments for event in events_from_json(segment)]

    async def execution(self, execution_id: str) -> ExecutionRow | None:
        """The summary row of an execution."""
        rows = await self._rows(
            f"SELECT {ROW_COLUMNS} FROM executions WHERE execution_id = %s", execution_id
        )
        return ExecutionRow(*rows[0]) if rows else None

    async def running_ids(self) -> list[str]:
        """Ids of every execution that has not finished, oldest first."""
        rows = await self._rows(
            "SELECT execution_id FROM executions WHERE status = 'running' ORDER BY ord"
        )
        return [row[0] for row in rows]

    async def wake_index(self, due_by_ms: int | None = None) -> list[WakeEntry]:
        """The wake-up index: every execution that has not finished, oldest first (once
        joined, those this server owns); with ``due_by_ms``, the busy ones and those due by
        then."""
        due = "" if due_by_ms is None else " AND (busy IS NOT FALSE OR wake_at_ms <= %s)"
        rows = await self._rows(
            f"SELECT {_WAKE_COLUMNS} FROM executions WHERE status = 'running'{self._owned()}"
            f"{due} ORDER BY ord",
            *(() if due_by_ms is None else (due_by_ms,)),
        )
        return [WakeEntry(i, wake, busy, root) for i, wake, busy, root in rows]

    def _owned(self) -> str:
        """Once joined, the condition that keeps the executions this server owns."""
        return "" if self.cluster is None else f" AND owner_epoch = {int(self.cluster.epoch)}"

    async def wake_index_page(self, after: int, limit: int) -> tuple[list[WakeEntry], int]:
        """Up to ``limit`` running executions after position ``after``, oldest first."""
        rows = await self._rows(
            f"SELECT {_WAKE_COLUMNS}, ord FROM executions "
            f"WHERE status = 'running'{self._owned()} AND ord > %s ORDER BY ord LIMIT %s",
            after, limit,
        )  # fmt: skip
        page = [WakeEntry(i, wake, busy, root) for i, wake, busy, root, _ in rows]
        return page, rows[-1][4] if rows else after

    async def histories(self, execution_ids: list[str]) -> dict[str, list[Event]]:
        """The current run's events of each execution, in one round trip."""
        found: dict[str, list[Event]] = {}
        for execution_id, segment in await self._rows(_CURRENT_RUN, list(execution_ids)):
            found.setdefault(execution_id, []).extend(events_from_json(segment))
        return found

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
        query, args = page_query(ROW_COLUMNS, status, workflow, limit + 1, before, "%s")
        rows = await self._rows(query, *args)
        return page_of(rows, limit)

    async def count_by_status(self) -> dict[str, int]:
        """How many executions have each status."""
        rows = await self._rows("SELECT status, COUNT(*) FROM executions GROUP BY status")
        return {status: count for status, count in rows}

    async def flow_slots(self, key: str, queued_limit: int | None = None) -> FlowSlots:
        """The running and queued executions of concurrency key ``key``, oldest first (the
        first ``queued_limit`` queued ones, when given)."""
        running = await self._rows(SLOTS, key, "running", None)
        queued = await self._rows(SLOTS, key, "queued", queued_limit)
        return FlowSlots(running=[i for (i,) in running], queued=[i for (i,) in queued])

    async def queued_keys(self) -> list[str]:
        """Every concurrency key with queued executions."""
        return [key for (key,) in await self._rows(QUEUED_KEYS)]

    # -- workers --------------------------------------------------------------------------
    async def upsert_worker(self, record: WorkerRecord) -> None:
        """Record a registration (the first ``registered_at_ms`` is kept)."""
        self._touches.registered(record.worker_id, record.last_seen_ms)
        await self._writer.write(lambda conn: records.upsert_worker(conn, record))

    async def touch_worker(self, worker_id: str, now_ms: int) -> None:
        """Note that a worker was seen; written at most once a second per worker."""
        if not self._touches.due(worker_id, now_ms):
            return
        await self._writer.write(
            lambda conn: conn.execute(
                "UPDATE workers SET last_seen_ms = GREATEST(last_seen_ms, %s) WHERE worker_id = %s",
                (now_ms, worker_id),
            )
        )

    async def workers(self) -> list[WorkerRecord]:
        """Every worker ever registered."""
        rows = await self._rows(
            "SELECT worker_id, runtime, sdk, contracts, registered_at_ms, last_seen_ms "
            "FROM workers ORDER BY worker_id"
        )
        return [WorkerRecord(r[0], r[1], r[2], json.loads(r[3]), r[4], r[5]) for r in rows]

    # -- schedules ------------------------------------------------------------------------
    async def put_schedule(self, record: ScheduleRecord) -> PutOutcome:
        """Create a schedule: created, unchanged (same fields) or conflict."""
        return await self._writer.write(
            lambda conn: records.schedules_changed(conn, records.put_schedule(conn, record))
        )

    async def schedule(self, schedule_id: str) -> ScheduleRecord | None:
        """One schedule."""
        rows = await self._rows(
            f"SELECT {records.SCHEDULE_COLUMNS} FROM schedules WHERE schedule_id = %s",
            schedule_id,
        )
        return records.schedule(rows[0]) if rows else None

    async def schedules(self) -> list[ScheduleRecord]:
        """Every schedule."""
        rows = await self._rows(
            f"SELECT {records.SCHEDULE_COLUMNS} FROM schedules ORDER BY schedule_id"
        )
        return [records.schedule(row) for row in rows]

    async def delete_schedule(self, schedule_id: str) -> bool:
        """Delete a schedule and its claims."""
        return await self._writer.write(
            lambda conn: records.schedules_changed(conn, records.delete_schedule(conn, schedule_id))
        )

    async def set_schedule_paused(self, schedule_id: str, paused: bool, now_ms: int) -> bool:
        """Pause or resume a schedule; resuming settles it up to ``now_ms``."""
        settled = 0 if paused else now_ms
        return await self._writer.write(
            lambda conn: records.schedules_changed(
                conn,
                records.changed(
                    conn,
                    "UPDATE schedules SET paused = %s, settled_ms = GREATEST(settled_ms, %s) "
                    "WHERE schedule_id = %s",
                    (paused, settled, schedule_id),
                ),
            )
        )

    async def claim_occurrence(
        self, schedule_id: str, occurrence_ms: int, owner: str, now_ms: int
    ) -> bool:
        """Claim one occurrence: True for exactly one claimer, across every server."""
        return await self._writer.write(
            lambda conn: records.changed(
                conn,
                "INSERT INTO schedule_claims (schedule_id, occurrence_ms, owner, claimed_at_ms) "
                "VALUES (%s, %s, %s, %s) ON CONFLICT DO NOTHING",
                (schedule_id, occurrence_ms, owner, now_ms),
            )
        )

    async def settle_occurrence(
        self, schedule_id: str, occurrence_ms: int, execution_id: str | None, error: str | None
    ) -> None:
        """Record how an occurrence ended and settle the schedule up to it."""
        await self._writer.write(
            lambda conn: records.settle_occurrence(
                conn, schedule_id, occurrence_ms, execution_id, error
            )
        )

    async def occurrence_executions(
        self, limit: int, schedule_id: str | None = None
    ) -> dict[str, list[str]]:
        """By schedule, the executions of its latest fired occurrences, newest first."""
        query, args = records.occurrences_query(limit, schedule_id)
        found: dict[str, list[str]] = {}
        for schedule, execution_id in await self._rows(query, *args):
            found.setdefault(schedule, []).append(execution_id)
        return found

    async def release_claims(self, except_owner: str) -> int:
        """Release other processes' claims that never fired (once joined, those of processes
        that are no member: a live server's claim is about to fire)."""
        members = "" if self.cluster is None else "AND owner NOT IN (SELECT server_id FROM servers)"
        return await self._writer.write(
            lambda conn: (
                conn.execute(
                    "DELETE FROM schedule_claims WHERE owner != %s AND execution_id IS NULL "
                    + members,
                    (except_owner,),
                ).rowcount
            )
        )


class PostgresReads:
    """Reader connections of the database, in autocommit mode: each read is one statement,
    so one snapshot."""

    def __init__(self, url: str, name: str) -> None:
        self._url = url
        self._name = name

    def connect(self) -> Conn:
        """A reader connection."""
        try:
            return connect(self._url, autocommit=True)
        except StorageError as exc:
            raise StorageError(f"could not read {self._name}: {exc}") from None

    def read(self, work: Callable[[Conn], T], conn: Conn) -> T:
        """Run ``work``; psycopg errors become StorageError."""
        try:
            return work(conn)
        except psycopg.Error as exc:
            raise StorageError(f"could not read {self._name}: {one_line(exc)}") from None

    def usable(self, conn: Conn) -> bool:
        """False once the connection is closed or broken."""
        return not (conn.closed or conn.broken)

    def close(self, conn: Conn) -> None:
        """Close the connection."""
        conn.close()
