"""Concurrency slots: which executions of each concurrency key run or wait, kept by the store in
the same transaction as the commits that start, queue and end them.

A slot is taken by the commit that starts an execution (its ``admit`` is checked against the
slots already taken, in that transaction), handed to a queued execution by the commit that
promotes it, and given back by the commit that ends the execution. A given-back slot is kept
a minute with the instant it was given back: a new start stamped before that instant (its
events were built before the end was committed) did not have room then, and is refused or
queued, so the histories never show more than ``limit`` running at one instant.
Nothing of this lives in a server's memory, so the limit holds however many servers share
the database; an execution taken over after its server died keeps its slot and gives it back
when it ends there.
"""

from __future__ import annotations

from typing import Literal

from .base import TERMINAL_STATUSES, Admission, Commit
from .dialect import Connection, Dialect

SlotState = Literal["running", "queued", "free"]


FREED_KEPT_MS = 60_000  # how long a given-back slot is kept to answer "was it taken at t?"


def admits(admission: Admission, running: int, queued: int, freed_after: int = 0) -> bool:
    """True when ``admission`` may take a slot of a key with ``running`` executions running,
    ``queued`` waiting and ``freed_after`` given back after ``admission.at_ms`` (a new start
    never passes one that waits; a promotion is one of them)."""
    if admission.over_limit:
        return True
    if running + freed_after >= admission.limit:
        return False
    return admission.promoting or queued == 0


def freed_at(commit: Commit) -> int:
    """The instant ``commit`` gives its execution's slot back: when the execution closed."""
    row = commit.row
    if row.closed_at_ms is not None:
        return row.closed_at_ms
    return commit.events[-1].timestamp_ms if commit.events else 0


def claimed_at(admission: Admission) -> int:
    """The instant before which no given-back slot counts against ``admission`` (a promotion
    is stamped after the slot it takes was given back, so none does)."""
    if admission.at_ms is None or admission.promoting:
        return 1 << 62
    return admission.at_ms


def slot_change(commit: Commit) -> SlotState | None:
    """What ``commit`` does to its execution's slot (None: nothing; most commits)."""
    row = commit.row
    if row.flow_key is None:
        return None
    if row.status in TERMINAL_STATUSES:
        return "free"
    if row.status == "queued":
        return "queued"
    if commit.create or commit.admit is not None:
        return "running"
    return None


# -- the SQL both database stores run (store/dialect.py spells it for each engine) ----------
def admits_in(sql: Dialect, conn: Connection, admission: Admission) -> bool:
    """True when ``admission`` may take a slot now, counted inside the commit's transaction
    (slots taken earlier in it count; on PostgreSQL the key's row is locked first)."""
    running, queued, freed = sql.run(
        conn,
        "SELECT COALESCE(SUM(CASE WHEN state = 'running' THEN 1 ELSE 0 END), 0), "
        "COALESCE(SUM(CASE WHEN state = 'queued' THEN 1 ELSE 0 END), 0), "
        "COALESCE(SUM(CASE WHEN state = 'free' AND freed_at_ms > ? THEN 1 ELSE 0 END), 0) "
        "FROM flow_slots WHERE key = ?",
        claimed_at(admission), admission.key,
    ).fetchone()  # fmt: skip
    return admits(admission, int(running), int(queued), int(freed))


def take_slot(sql: Dialect, conn: Connection, commit: Commit) -> None:
    """Write what ``commit`` does to its execution's slot, if anything: a slot given back is
    kept with its instant (and those given back long before are deleted); a slot taken again
    (a rerun) starts a new place in its key's order."""
    change = slot_change(commit)
    row = commit.row
    if change == "free":
        at = freed_at(commit)
        sql.run(
            conn, "UPDATE flow_slots SET state = 'free', freed_at_ms = ? WHERE execution_id = ?",
            at, row.execution_id,
        )  # fmt: skip
        sql.run(
            conn, "DELETE FROM flow_slots WHERE key = ? AND state = 'free' AND freed_at_ms < ?",
            row.flow_key, at - FREED_KEPT_MS,
        )  # fmt: skip
    elif change is not None:
        sql.run(
            conn, "DELETE FROM flow_slots WHERE execution_id = ? AND state = 'free'",
            row.execution_id,
        )  # fmt: skip
        sql.run(
            conn,
            "INSERT INTO flow_slots (execution_id, key, state) VALUES (?, ?, ?) "
            "ON CONFLICT (execution_id) DO UPDATE SET state = excluded.state",
            row.execution_id, row.flow_key, change,
        )  # fmt: skip
