"""The SQL both database stores run, written once. A statement is written with ``?`` for its
parameters and ``GREATEST`` for the larger of two values; a :class:`Dialect` turns it into what
its engine takes (SQLite: ``MAX``; PostgreSQL: ``%s``). Everything else is the SQL the two
engines share (``ON CONFLICT … DO NOTHING``, ``CAST``, window functions), so the statements of
definitions, workers, schedules and their claims live here and nowhere else."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Protocol

from .base import (
    KEPT_CLAIMS,
    DefinitionRecord,
    PutDefinition,
    PutOutcome,
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


SQLITE = Dialect("?", "MAX")
POSTGRES = Dialect("%s", "GREATEST")


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
