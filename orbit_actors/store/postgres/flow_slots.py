"""Concurrency slots on PostgreSQL (see :mod:`orbit_actors.store.flow_slots`). Several servers
write the same database, so a batch that takes or gives back slots first locks the row of each
key it touches in ``flow_keys`` (in one order: no deadlock); the counts it then reads stay
exact until its transaction ends.

A commit that promotes or cancels a queued execution also notifies :data:`STARTED_CHANNEL` with
its id (delivered when the transaction commits): a server waiting for that execution learns
that the server which wrote it owns it now."""

from __future__ import annotations

from typing import Any

from ..base import Admission, Commit
from ..flow_slots import FREED_KEPT_MS, admits, claimed_at, freed_at, slot_change
from .schema import Conn

STARTED_CHANNEL = "orbit_started"  # a queued execution was started or ended (payload: its id)


def lock_keys(conn: Conn, works: list[Any]) -> None:
    """Lock the key of every commit of the batch that takes or gives back a slot."""
    keys = sorted({w.commit.row.flow_key for w in works if _touches_slot(w.commit)})
    if not keys:
        return
    conn.execute(
        "INSERT INTO flow_keys (key) SELECT unnest(%s::text[]) ON CONFLICT DO NOTHING", (keys,)
    )
    conn.execute("SELECT key FROM flow_keys WHERE key = ANY(%s) ORDER BY key FOR UPDATE", (keys,))


def _touches_slot(commit: Commit) -> bool:
    return commit.row.flow_key is not None and (
        commit.admit is not None or slot_change(commit) is not None
    )


def pg_admits(conn: Conn, admission: Admission) -> bool:
    """True when ``admission`` may take a slot now (its key is locked by :func:`lock_keys`)."""
    found = conn.execute(
        "SELECT COUNT(*) FILTER (WHERE state = 'running'), "
        "COUNT(*) FILTER (WHERE state = 'queued'), "
        "COUNT(*) FILTER (WHERE state = 'free' AND freed_at_ms > %s) "
        "FROM flow_slots WHERE key = %s",
        (claimed_at(admission), admission.key),
    ).fetchone()
    assert found is not None
    return admits(admission, found[0], found[1], found[2])


def take_slot(conn: Conn, commit: Commit) -> None:
    """Write what ``commit`` does to its execution's slot, if anything."""
    change = slot_change(commit)
    row = commit.row
    if change == "free":
        at = freed_at(commit)
        conn.execute(
            "UPDATE flow_slots SET state = 'free', freed_at_ms = %s WHERE execution_id = %s",
            (at, row.execution_id),
        )
        conn.execute(
            "DELETE FROM flow_slots WHERE key = %s AND state = 'free' AND freed_at_ms < %s",
            (row.flow_key, at - FREED_KEPT_MS),
        )
    elif change is not None:
        conn.execute(
            "DELETE FROM flow_slots WHERE execution_id = %s AND state = 'free'",
            (row.execution_id,),
        )
        conn.execute(
            "INSERT INTO flow_slots (execution_id, key, state) VALUES (%s, %s, %s) "
            "ON CONFLICT (execution_id) DO UPDATE SET state = excluded.state",
            (row.execution_id, row.flow_key, change),
        )


def notify_dequeued(conn: Conn, execution_ids: list[str]) -> None:
    """Tell every server (once this transaction commits) that these queued executions were
    promoted or cancelled, so their waits ask again where each one lives."""
    conn.execute(
        "SELECT pg_notify(%s, e) FROM unnest(%s::text[]) AS e", (STARTED_CHANNEL, execution_ids)
    )
