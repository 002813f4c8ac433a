"""Concurrency slots in SQLite (see :mod:`orbit_actors.store.flow_slots`): counted and taken
inside the writer's transaction, which is the database's only writer, so the counts are exact."""

from __future__ import annotations

import sqlite3

from ..base import Admission, Commit
from ..flow_slots import FREED_KEPT_MS, admits, claimed_at, freed_at, slot_change


def sqlite_admits(conn: sqlite3.Connection, admission: Admission) -> bool:
    """True when ``admission`` may take a slot now (slots taken earlier in this transaction
    count: they were written as they were taken)."""
    running, queued, freed = conn.execute(
        "SELECT COALESCE(SUM(state = 'running'), 0), COALESCE(SUM(state = 'queued'), 0), "
        "COALESCE(SUM(state = 'free' AND freed_at_ms > ?), 0) FROM flow_slots WHERE key = ?",
        (claimed_at(admission), admission.key),
    ).fetchone()
    return admits(admission, running, queued, freed)


def take_slot(conn: sqlite3.Connection, commit: Commit) -> None:
    """Write what ``commit`` does to its execution's slot, if anything."""
    change = slot_change(commit)
    row = commit.row
    if change == "free":
        at = freed_at(commit)
        conn.execute(
            "UPDATE flow_slots SET state = 'free', freed_at_ms = ? WHERE execution_id = ?",
            (at, row.execution_id),
        )
        conn.execute(
            "DELETE FROM flow_slots WHERE key = ? AND state = 'free' AND freed_at_ms < ?",
            (row.flow_key, at - FREED_KEPT_MS),
        )
    elif change is not None:
        conn.execute(
            "DELETE FROM flow_slots WHERE execution_id = ? AND state = 'free'", (row.execution_id,)
        )
        conn.execute(
            "INSERT INTO flow_slots (execution_id, key, state) VALUES (?, ?, ?) "
            "ON CONFLICT (execution_id) DO UPDATE SET state = excluded.state",
            (row.execution_id, row.flow_key, change),
        )
