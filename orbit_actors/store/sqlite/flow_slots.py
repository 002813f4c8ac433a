"""Concurrency slots in SQLite (see :mod:`orbit_actors.store.flow_slots`): counted and taken
inside the writer's transaction, which is the database's only writer, so the counts are exact."""

from __future__ import annotations

import sqlite3

from ..base import Admission, Commit
from ..flow_slots import admits, slot_change


def sqlite_admits(conn: sqlite3.Connection, admission: Admission) -> bool:
    """True when ``admission`` may take a slot now (slots taken earlier in this transaction
    count: they were written as they were taken)."""
    running, queued = conn.execute(
        "SELECT COALESCE(SUM(state = 'running'), 0), COALESCE(SUM(state = 'queued'), 0) "
        "FROM flow_slots WHERE key = ?",
        (admission.key,),
    ).fetchone()
    return admits(admission, running, queued)


def take_slot(conn: sqlite3.Connection, commit: Commit) -> None:
    """Write what ``commit`` does to its execution's slot, if anything."""
    change = slot_change(commit)
    row = commit.row
    if change == "free":
        conn.execute("DELETE FROM flow_slots WHERE execution_id = ?", (row.execution_id,))
    elif change is not None:
        conn.execute(
            "INSERT INTO flow_slots (execution_id, key, state) VALUES (?, ?, ?) "
            "ON CONFLICT (execution_id) DO UPDATE SET state = excluded.state",
            (row.execution_id, row.flow_key, change),
        )
