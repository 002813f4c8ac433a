"""The SQL both database stores run, written once. A statement is written with ``?`` for its
parameters and ``GREATEST`` for the larger of two values; a :class:`Dialect` turns it into what
its engine takes (SQLite: ``MAX``; PostgreSQL: ``%s``). Everything else is the SQL the two
engines share (``ON CONFLICT … DO NOTHING``, ``CAST``, window functions), so the statements of
definitions, workers, schedules and their claims live here and nowhere else."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

from .base import (
    KEPT_CLAIMS,
    DefinitionRecord,
    Purged,
    PutDefinition,
    PutOutcome,
    Retention,
    ScheduleRecord,
    WorkerRecord,
)

DEFINITION_COLUMNS = "name, version, definition_hash, ir, registered_at_ms"
SCHEDULE_COLUMNS = "schedule_id, spec, paused, created_at_ms, settled_ms, last_error"
WORKER_COLUMNS = "worker_id, runtime, sdk, contracts, registered_at_ms, last_seen_ms"


class Connection(Protocol):
    """What the statements need of a connection: ``execute`` returning a cursor."""

    def execute(self, query: Any, params: Any = ..., /) -> Any:
        """Run one statement with its parameters."""
        ...


@dataclass(frozen=True)
class Dialect:
    """How one engine spells what the shared statements write the same way: its parameter
    mark and its two-argument maximum."""

    mark: str
    greatest: str
    skip_locked: str = ""  # what keeps two servers from taking the same rows
    _cache: dict[str, str] = field(default_factory=dict, compare=False, repr=False)

    def __call__(self, statement: str) -> str:
        """``statement`` in this engine's spelling (translated once, then remembered)."""
        found = self._cache.get(statement)
        if found is None:
            found = statement.replace("?", self.mark).replace("GREATEST(", f"{self.greatest}(")
            self._cache[statement] = found
        return found

    def run(self, conn: Connection, statement: str, *args: Any) -> Any:
        """Run ``statement`` on ``conn``; its cursor."""
        return conn.execute(self(statement), args)

    def changed(self, conn: Connection, statement: str, *args: Any) -> bool:
        """Run ``statement``; True when it changed exactly one row."""
        return bool(self.run(conn, statement, *args).rowcount == 1)


def alone(conn: Connection, work: Callable[[Any], object]) -> Exception | None:
    """Run ``work`` inside the open transaction so that its failure undoes it alone (a
    savepoint): the failure is returned, and the transaction goes on. Raises when it cannot be
    undone (the engine gave the whole transaction up: its batch fails)."""
    conn.execute("SAVEPOINT alone")
    try:
        work(conn)
    except Exception as exc:
        conn.execute("ROLLBACK TO SAVEPOINT alone")
        conn.execute("RELEASE SAVEPOINT alone")
        return exc
    conn.execute("RELEASE SAVEPOINT alone")
    return None


SQLITE = Dialect("?", "MAX")
POSTGRES = Dialect("%s", "GREATEST", " FOR UPDATE SKIP LOCKED")


def put_definition(sql: Dialect, conn: Connection, record: DefinitionRecord) -> PutDefinition:
    """Insert a definition unless ``name@version`` exists (then compare the hashes)."""
    inserted = sql.changed(
        conn,
        f"INSERT INTO definitions ({DEFINITION_COLUMNS}) VALUES (?, ?, ?, ?, ?) "
        "ON CONFLICT (name, version) DO NOTHING",
        record.name, record.version, record.definition_hash, record.ir, record.registered_at_ms,
    )  # fmt: skip
    if inserted:
        return PutDefinition("created", record)
    row = sql.run(
        conn,
        f"SELECT {DEFINITION_COLUMNS} FROM definitions WHERE name = ? AND version = ?",
        record.name,
        record.version,
    ).fetchone()
    existing = DefinitionRecord(*row)  # the insert conflicted with it; definitions stay
    same = existing.definition_hash == record.definition_hash
    return PutDefinition("unchanged" if same else "conflict", existing)


def upsert_worker(sql: Dialect, conn: Connection, record: WorkerRecord) -> None:
    """Insert or update a worker, keeping its first registration time."""
    sql.run(
        conn,
        f"INSERT INTO workers ({WORKER_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?) "
        "ON CONFLICT (worker_id) DO UPDATE SET runtime = excluded.runtime, sdk = excluded.sdk, "
        "contracts = excluded.contracts, last_seen_ms = excluded.last_seen_ms",
        record.worker_id, record.runtime, record.sdk, json.dumps(record.contracts),
        record.registered_at_ms, record.last_seen_ms,
    )  # fmt: skip


def touch_worker(sql: Dialect, conn: Connection, worker_id: str, now_ms: int) -> None:
    """Move a worker's last sighting forward to ``now_ms``."""
    sql.run(
        conn,
        "UPDATE workers SET last_seen_ms = GREATEST(last_seen_ms, ?) WHERE worker_id = ?",
        now_ms,
        worker_id,
    )


def worker(row: tuple[Any, ...]) -> WorkerRecord:
    """A worker from its row (WORKER_COLUMNS)."""
    return WorkerRecord(row[0], row[1], row[2], json.loads(row[3]), row[4], row[5])


def put_schedule(sql: Dialect, conn: Connection, record: ScheduleRecord) -> PutOutcome:
    """Insert a schedule unless its id exists (then compare the fields)."""
    inserted = sql.changed(
        conn,
        "INSERT INTO schedules (schedule_id, spec, paused, created_at_ms) VALUES (?, ?, ?, ?) "
        "ON CONFLICT (schedule_id) DO NOTHING",
        record.schedule_id, json.dumps(record.spec, sort_keys=True), record.paused,
        record.created_at_ms,
    )  # fmt: skip
    if inserted:
        return "created"
    row = sql.run(
        conn, "SELECT spec FROM schedules WHERE schedule_id = ?", record.schedule_id
    ).fetchone()
    return "unchanged" if row is not None and json.loads(row[0]) == record.spec else "conflict"


def schedule(row: tuple[Any, ...]) -> ScheduleRecord:
    """A schedule from its row (SCHEDULE_COLUMNS)."""
    return ScheduleRecord(row[0], json.loads(row[1]), bool(row[2]), row[3], row[4], row[5])


def delete_schedule(sql: Dialect, conn: Connection, schedule_id: str) -> bool:
    """Delete a schedule and its claims; False when there was none."""
    sql.run(conn, "DELETE FROM schedule_claims WHERE schedule_id = ?", schedule_id)
    return sql.changed(conn, "DELETE FROM schedules WHERE schedule_id = ?", schedule_id)


def set_schedule_paused(
    sql: Dialect, conn: Connection, schedule_id: str, paused: bool, now_ms: int
) -> bool:
    """Pause or resume a schedule (resuming settles it up to ``now_ms``); False when none."""
    return sql.changed(
        conn,
        "UPDATE schedules SET paused = ?, settled_ms = GREATEST(settled_ms, ?) "
        "WHERE schedule_id = ?",
        paused, 0 if paused else now_ms, schedule_id,
    )  # fmt: skip


def claim_occurrence(
    sql: Dialect, conn: Connection, schedule_id: str, occurrence_ms: int, owner: str, now_ms: int
) -> bool:
    """Claim one occurrence; the primary key makes exactly one claimer win."""
    return sql.changed(
        conn,
        "INSERT INTO schedule_claims (schedule_id, occurrence_ms, owner, claimed_at_ms) "
        "VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING",
        schedule_id, occurrence_ms, owner, now_ms,
    )  # fmt: skip


def settle_occurrence(
    sql: Dialect, conn: Connection, schedule_id: str, occurrence_ms: int,
    execution_id: str | None, error: str | None,
) -> None:  # fmt: skip
    """Record the occurrence's execution (keeping the newest KEPT_CLAIMS fired claims) or give
    its claim back, then settle the schedule up to it."""
    if execution_id is not None:
        sql.run(
            conn,
            "UPDATE schedule_claims SET execution_id = ? "
            "WHERE schedule_id = ? AND occurrence_ms = ?",
            execution_id, schedule_id, occurrence_ms,
        )  # fmt: skip
        sql.run(
            conn,
            "DELETE FROM schedule_claims WHERE schedule_id = ? AND execution_id IS NOT NULL "
            "AND occurrence_ms <= (SELECT occurrence_ms FROM schedule_claims "
            "WHERE schedule_id = ? AND execution_id IS NOT NULL "
            "ORDER BY occurrence_ms DESC LIMIT 1 OFFSET ?)",
            schedule_id, schedule_id, KEPT_CLAIMS,
        )  # fmt: skip
    else:  # it did not start: the claim is given back
        sql.run(
            conn,
            "DELETE FROM schedule_claims WHERE schedule_id = ? AND occurrence_ms = ? "
            "AND execution_id IS NULL",
            schedule_id, occurrence_ms,
        )  # fmt: skip
    sql.run(
        conn,
        "UPDATE schedules SET settled_ms = GREATEST(settled_ms, ?), last_error = CASE "
        "WHEN CAST(? AS TEXT) IS NOT NULL THEN NULL ELSE COALESCE(CAST(? AS TEXT), last_error) "
        "END WHERE schedule_id = ?",
        occurrence_ms, execution_id, error, schedule_id,
    )  # fmt: skip


def occurrences_query(limit: int, schedule_id: str | None) -> tuple[str, list[Any]]:
    """The query of ``occurrence_executions`` (to pass through a dialect): each schedule's
    latest ``limit`` fired claims, newest first, and its arguments."""
    only = "AND schedule_id = ?" if schedule_id is not None else ""
    query = (
        "SELECT schedule_id, execution_id FROM (SELECT schedule_id, execution_id, "
        "occurrence_ms, ROW_NUMBER() OVER (PARTITION BY schedule_id ORDER BY occurrence_ms "
        f"DESC) AS n FROM schedule_claims WHERE execution_id IS NOT NULL {only}) AS ranked "
        "WHERE n <= ? ORDER BY schedule_id, occurrence_ms DESC"
    )
    return query, [schedule_id, limit] if schedule_id is not None else [limit]


K = TypeVar("K", bound=Connection)
DropHistory = Callable[[K, str], None]
"""Deletes the history segments of one execution (each engine keeps them its own way)."""

_ROOTS_DUE = (
    "SELECT execution_id FROM executions WHERE closed_at_ms <= ? AND parent_id IS NULL{only} "
    "ORDER BY closed_at_ms LIMIT ?{lock}"
)
_ORPHANS_DUE = (
    "SELECT c.execution_id FROM executions c WHERE c.parent_id IS NOT NULL "
    "AND c.closed_at_ms <= ? AND NOT EXISTS (SELECT 1 FROM executions p "
    "WHERE p.execution_id = c.parent_id) LIMIT ?{lock}"
)


def purge(sql: Dialect, conn: K, execution_id: str, drop: DropHistory[K]) -> Purged:
    """Delete a finished execution and its finished descendants (rows, runs, history)."""
    row = sql.run(
        conn, "SELECT closed_at_ms FROM executions WHERE execution_id = ?", execution_id
    ).fetchone()
    if row is None:
        return Purged("missing")
    if row[0] is None:
        return Purged("running")
    ids = _with_descendants(sql, conn, execution_id)
    for each in ids:
        drop(conn, each)
        sql.run(conn, "DELETE FROM runs WHERE execution_id = ?", each)
        sql.run(conn, "DELETE FROM executions WHERE execution_id = ?", each)
    return Purged("purged", ids)


def _with_descendants(sql: Dialect, conn: Connection, root: str) -> list[str]:
    """``root`` and its finished descendants (a running child, and what is below it, stays:
    it is purged on its own once it has finished and its retention has passed)."""
    found, todo = [root], [root]
    while todo:
        children = [
            row[0]
            for row in sql.run(
                conn,
                "SELECT execution_id FROM executions "
                "WHERE parent_id = ? AND closed_at_ms IS NOT NULL",
                todo.pop(),
            ).fetchall()
        ]
        found += children
        todo += children
    return found


def purge_due(
    sql: Dialect, conn: K, retention: Retention, now_ms: int, limit: int, drop: DropHistory[K],
) -> list[str]:  # fmt: skip
    """Purge up to ``limit`` executions whose retention has passed (see
    :meth:`~orbit_actors.store.base.Store.purge_due`); every id purged."""
    purged: list[str] = []
    for execution_id in due(sql, conn, retention, now_ms, limit):
        purged += purge(sql, conn, execution_id, drop).ids
    return purged


def due(sql: Dialect, conn: Connection, retention: Retention, now_ms: int, limit: int) -> list[str]:
    """Up to ``limit`` executions to purge: roots of each definition with a retention of its
    own, roots of the rest under the default, then children whose parent was purged before
    they finished (under the default)."""
    found: list[str] = []
    for definition_hash, keep_ms in sorted(retention.by_hash.items()):
        found += _due_rows(
            sql, conn, _ROOTS_DUE, " AND definition_hash = ?",
            (now_ms - keep_ms, definition_hash), limit - len(found),
        )  # fmt: skip
    if retention.default_ms is not None:
        cutoff = now_ms - retention.default_ms
        others = tuple(retention.by_hash)
        only = f" AND definition_hash NOT IN ({', '.join('?' * len(others))})" if others else ""
        found += _due_rows(sql, conn, _ROOTS_DUE, only, (cutoff, *others), limit - len(found))
        found += _due_rows(sql, conn, _ORPHANS_DUE, "", (cutoff,), limit - len(found))
    return found


def _due_rows(
    sql: Dialect, conn: Connection, template: str, only: str, args: tuple[Any, ...], limit: int
) -> list[str]:
    if limit <= 0:
        return []
    statement = template.format(only=only, lock=sql.skip_locked)
    cutoff, *rest = args
    rows = sql.run(conn, statement, cutoff, *rest, limit).fetchall()
    return [row[0] for row in rows]
