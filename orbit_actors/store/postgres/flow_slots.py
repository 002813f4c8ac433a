"""Concurrency slots on PostgreSQL (see :mod:`orbit_actors.store.flow_slots`). Several servers
write the same database, so a batch that takes or gives back slots first locks the row of each
key it touches in ``flow_keys`` (in one order: no deadlock); the counts it then reads stay
exact until its transaction ends.

A commit that promotes or cancels a queued execution also notifies :data:`STARTED_CHANNEL` with
its id (delivered when the transaction commits): a server waiting for that execution learns
that the server which wrote it owns it now."""

from __future__ import annotations

from typing import Any

from ..base import Commit
from ..flow_slots import slot_change
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


def notify_dequeued(conn: Conn, execution_ids: list[str]) -> None:
    """Tell every server (once this transaction commits) that these queued executions were
    promoted or cancelled, so their waits ask again where each one lives."""
    conn.execute(
        "SELECT pg_notify(%s, e) FROM unnest(%s::text[]) AS e", (STARTED_CHANNEL, execution_ids)
    )
