"""The statements of the PostgreSQL store other than execution commits: definitions, workers,
schedules and their occurrence claims. Each write function runs inside the writer's
transaction; claims rely on primary keys (``ON CONFLICT DO NOTHING``), so two servers claiming
one occurrence get one winner."""

from __future__ import annotations

import json
from typing import Any, TypeVar

from ..base import (
    KEPT_CLAIMS,
    DefinitionRecord,
    PutDefinition,
    PutOutcome,
    ScheduleRecord,
    WorkerRecord,
)
from .schema import Conn

DEFINITION_COLUMNS = "name, version, definition_hash, ir, registered_at_ms"
SCHEDULE_COLUMNS = "schedule_id, spec, paused, created_at_ms, settled_ms, last_error"


def changed(conn: Conn, statement: str, args: tuple[Any, ...]) -> bool:
    """Run ``statement``; True when it changed exactly one row."""
    return conn.execute(statement, args).rowcount == 1


def put_definition(conn: Conn, record: DefinitionRecord) -> PutDefinition:
    """Insert a definition unless ``name@version`` exists (then compare the hashes)."""
    inserted = conn.execute(
        f"INSERT INTO definitions ({DEFINITION_COLUMNS}) VALUES (%s, %s, %s, %s, %s) "
        "ON CONFLICT (name, version) DO NOTHING",
        (record.name, record.version, record.definition_hash, record.ir, record.registered_at_ms),
    )  # fmt: skip
    if inserted.rowcount == 1:
        return PutDefinition("created", record)
    row = conn.execute(
        f"SELECT {DEFINITION_COLUMNS} FROM definitions WHERE name = %s AND version = %s",
        (record.name, record.version),
    ).fetchone()
    assert row is not None  # the insert conflicted with it, and definitions are never deleted
    existing = DefinitionRecord(*row)
    same = existing.definition_hash == record.definition_hash
    return PutDefinition("unchanged" if same else "conflict", existing)


def upsert_worker(conn: Conn, record: WorkerRecord) -> None:
    """Insert or update a worker, keeping its first registration time."""
    conn.execute(
        "INSERT INTO workers (worker_id, runtime, sdk, contracts, registered_at_ms, last_seen_ms) "
        "VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT (worker_id) DO UPDATE SET "
        "runtime = excluded.runtime, sdk = excluded.sdk, contracts = excluded.contracts, "
        "last_seen_ms = excluded.last_seen_ms",
        (record.worker_id, record.runtime, record.sdk, json.dumps(record.contracts),
         record.registered_at_ms, record.last_seen_ms),
    )  # fmt: skip


def put_schedule(conn: Conn, record: ScheduleRecord) -> PutOutcome:
    """Insert a schedule unless its id exists (then compare the fields)."""
    inserted = conn.execute(
        "INSERT INTO schedules (schedule_id, spec, paused, created_at_ms) VALUES (%s, %s, %s, %s) "
        "ON CONFLICT (schedule_id) DO NOTHING",
        (record.schedule_id, json.dumps(record.spec, sort_keys=True), record.paused,
         record.created_at_ms),
    )  # fmt: skip
    if inserted.rowcount == 1:
        return "created"
    row = conn.execute(
        "SELECT spec FROM schedules WHERE schedule_id = %s", (record.schedule_id,)
    ).fetchone()
    return "unchanged" if row is not None and json.loads(row[0]) == record.spec else "conflict"


SCHEDULES_CHANGED = "orbit_schedules"
T = TypeVar("T")


def schedules_changed(conn: Conn, outcome: T) -> T:
    """Tell every server listening that the schedules changed (delivered at commit, so they
    read the change); returns ``outcome``."""
    conn.execute(f"NOTIFY {SCHEDULES_CHANGED}".encode())
    return outcome


def schedule(row: tuple[Any, ...]) -> ScheduleRecord:
    """A schedule from its row (SCHEDULE_COLUMNS)."""
    return ScheduleRecord(row[0], json.loads(row[1]), row[2], row[3], row[4], row[5])


def delete_schedule(conn: Conn, schedule_id: str) -> bool:
    """Delete a schedule and its claims; False when there was none."""
    conn.execute("DELETE FROM schedule_claims WHERE schedule_id = %s", (schedule_id,))
    return changed(conn, "DELETE FROM schedules WHERE schedule_id = %s", (schedule_id,))


def settle_occurrence(
    conn: Conn, schedule_id: str, occurrence_ms: int, execution_id: str | None, error: str | None
) -> None:
    """Record the occurrence's execution (keeping the newest KEPT_CLAIMS fired claims) or give
    its claim back, then settle the schedule up to it."""
    if execution_id is not None:
        conn.execute(
            "UPDATE schedule_claims SET execution_id = %s "
            "WHERE schedule_id = %s AND occurrence_ms = %s",
            (execution_id, schedule_id, occurrence_ms),
        )
        conn.execute(
            "DELETE FROM schedule_claims WHERE schedule_id = %s AND execution_id IS NOT NULL "
            "AND occurrence_ms <= (SELECT occurrence_ms FROM schedule_claims "
            "WHERE schedule_id = %s AND execution_id IS NOT NULL "
            "ORDER BY occurrence_ms DESC LIMIT 1 OFFSET %s)",
            (schedule_id, schedule_id, KEPT_CLAIMS),
        )
    else:  # it did not start: the claim is given back
        conn.execute(
            "DELETE FROM schedule_claims WHERE schedule_id = %s AND occurrence_ms = %s "
            "AND execution_id IS NULL",
            (schedule_id, occurrence_ms),
        )
    conn.execute(
        "UPDATE schedules SET settled_ms = GREATEST(settled_ms, %s), last_error = CASE "
        "WHEN %s::text IS NOT NULL THEN NULL ELSE COALESCE(%s::text, last_error) END "
        "WHERE schedule_id = %s",
        (occurrence_ms, execution_id, error, schedule_id),
    )


def occurrences_query(limit: int, schedule_id: str | None) -> tuple[str, list[Any]]:
    """The query of ``occurrence_executions``: each schedule's latest ``limit`` fired claims."""
    only = "AND schedule_id = %s" if schedule_id is not None else ""
    query = (
        "SELECT schedule_id, execution_id FROM (SELECT schedule_id, execution_id, "
        "occurrence_ms, ROW_NUMBER() OVER (PARTITION BY schedule_id ORDER BY occurrence_ms "
        f"DESC) AS n FROM schedule_claims WHERE execution_id IS NOT NULL {only}) AS ranked "
        "WHERE n <= %s ORDER BY schedule_id, occurrence_ms DESC"
    )
    return query, [schedule_id, limit] if schedule_id is not None else [limit]
