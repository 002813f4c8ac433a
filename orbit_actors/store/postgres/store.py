"""The store on PostgreSQL: group commit on one writer connection and thread, reads on a small
pool of reader connections run in worker threads (each used by one thread at a time). Nothing
here blocks the trio loop. Several servers share one database once each has joined
(:meth:`PostgresStore.join`): each execution is then written by the one server that owns it,
and its commits are fenced (see :mod:`.commits`)."""

from __future__ import annotations

import contextlib
import secrets
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import TypeVar

import psycopg
import trio

from ...errors import StorageError
from ...history.events import Event, events_from_json
from ..base import WakeEntry
from ..dialect import POSTGRES
from ..group import GroupWriter
from ..readers import ReaderPool
from ..sql_store import SqlStore
from . import records
from .cluster import PostgresCluster
from .commits import ROW_COLUMNS, CommitBatcher, Owner
from .schema import Conn, connect, describe, one_line, prepare
from .writer import PostgresEngine

T = TypeVar("T")
_CURRENT_RUN = (
    "SELECT s.execution_id, s.events FROM executions e JOIN segments s "
    "ON s.execution_id = e.execution_id AND s.run = e.run "
    "WHERE e.execution_id = ANY(?) ORDER BY s.execution_id, s.first_seq"
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


class PostgresStore(SqlStore[Conn]):
    """The :class:`~orbit_actors.store.base.Store` on a PostgreSQL database. Open it with
    :func:`open_postgres_store`."""

    _row_columns = ROW_COLUMNS

    def __init__(
        self, url: str, writer: GroupWriter[Conn], engine: PostgresEngine, batcher: CommitBatcher
    ) -> None:
        self.url = url
        self.name = describe(url)
        super().__init__(POSTGRES, writer, ReaderPool(PostgresReads(url, self.name)))
        self._engine = engine
        self._batcher = batcher
        self.cluster: PostgresCluster | None = None

    def _schedules_changed(self, conn: Conn, outcome: T) -> T:
        """Tell every server listening that the schedules changed."""
        return records.schedules_changed(conn, outcome)

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

    # -- executions -----------------------------------------------------------------------
    async def history(self, execution_id: str, run: int | None = None) -> list[Event]:
        """The events of the current run, or of run ``run``."""
        if run is None:
            rows = await self._rows(_CURRENT_RUN, [execution_id])
            segments = [row[1] for row in rows]
        else:
            rows = await self._rows(
                "SELECT events FROM segments WHERE execution_id = ? AND run = ? ORDER BY first_seq",
                execution_id,
                run,
            )
            segments = [row[0] for row in rows]
        return [event for segment in segments for event in events_from_json(segment)]

    async def wake_index(self, due_by_ms: int | None = None) -> list[WakeEntry]:
        """The wake-up index: every execution that has not finished, oldest first (once
        joined, those this server owns); with ``due_by_ms``, the busy ones and those due by
        then."""
        due = "" if due_by_ms is None else " AND (busy IS NOT FALSE OR wake_at_ms <= ?)"
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
            f"WHERE status = 'running'{self._owned()} AND ord > ? ORDER BY ord LIMIT ?",
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

    # -- schedules ------------------------------------------------------------------------
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
