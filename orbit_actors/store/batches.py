"""Batches (operations.md, "Batches"): what the store keeps of each, and the SQL both database
stores run for them, written once (:mod:`.dialect`'s spelling).

A batch is created in one transaction with a **snapshot** of the executions its filter matched
(``batch_items``, in the executions' own order), so ``matched`` never changes and a restart goes
on with the same list. Its progress is two numbers: ``position`` (items before it have their
outcome committed: counted in ``done``, or written on the item as a failure) and
``doubt_until`` (items before it may already have been acted on: the walker commits it before
it acts on a page, so after a crash exactly those between ``position`` and ``doubt_until`` are
in doubt).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from .dialect import Connection, Dialect

BatchAction = Literal["cancel", "terminate", "pause", "unpause", "rerun"]
BATCH_ACTIONS: tuple[str, ...] = ("cancel", "terminate", "pause", "unpause", "rerun")
BatchState = Literal["running", "completed", "cancelled"]
FILTER_FIELDS = ("status", "workflow", "version", "started_after_ms", "started_before_ms", "ids")
SAMPLE_SIZE = 20
MAX_FAILURES_SHOWN = 1000
BATCH_COLUMNS = (
    "batch_id, action, filter, reason, state, matched, done, failed, position, doubt_until, "
    "owner, created_at_ms, closed_at_ms"
)


@dataclass(frozen=True)
class BatchFilter:
    """Which executions a batch acts on: every field given must hold (``started_after_ms``
    inclusive, ``started_before_ms`` exclusive); at least one is given."""

    status: str | None = None
    workflow: str | None = None
    version: str | None = None
    started_after_ms: int | None = None
    started_before_ms: int | None = None
    ids: list[str] | None = None

    def given(self) -> dict[str, Any]:
        """The fields given, as the API shows the filter."""
        return {name: value for name, value in asdict(self).items() if value is not None}

    def where(self) -> tuple[str, list[Any]]:
        """The SQL condition on ``executions`` (``?`` marks) and its arguments."""
        terms: list[str] = []
        args: list[Any] = []
        for column in ("status", "workflow", "version"):
            value = getattr(self, column)
            if value is not None:
                terms.append(f"{column} = ?")
                args.append(value)
        if self.started_after_ms is not None:
            terms.append("started_at_ms >= ?")
            args.append(self.started_after_ms)
        if self.started_before_ms is not None:
            terms.append("started_at_ms < ?")
            args.append(self.started_before_ms)
        if self.ids is not None:
            terms.append(f"execution_id IN ({', '.join('?' for _ in self.ids) or 'NULL'})")
            args.extend(self.ids)
        return " AND ".join(terms) or "1 = 1", args


@dataclass(frozen=True)
class BatchRecord:
    """One batch as stored: what it does, to what, and how far it got."""

    batch_id: str
    action: str
    filter: BatchFilter
    reason: str | None
    state: str
    matched: int
    done: int = 0
    failed: int = 0
    position: int = 0
    doubt_until: int = 0
    owner: str | None = None
    created_at_ms: int = 0
    closed_at_ms: int | None = None


@dataclass(frozen=True)
class BatchItem:
    """One execution of a batch's snapshot: its place, and its run when the batch was made."""

    position: int
    execution_id: str
    run: int


@dataclass(frozen=True)
class BatchFailure:
    """An execution the batch could not act on, with the refusal's code and message."""

    execution_id: str
    code: str
    message: str


@dataclass(frozen=True)
class BatchProgress:
    """The outcome of the items ``position`` up to ``until`` (exclusive): how many were done,
    and the failures (each with its position)."""

    position: int
    until: int
    done: int
    failures: list[tuple[int, BatchFailure]] = field(default_factory=list)


def record_of(row: tuple[Any, ...]) -> BatchRecord:
    """A batch from its row (:data:`BATCH_COLUMNS`)."""
    batch_id, action, filter_json, *rest = row
    return BatchRecord(batch_id, action, BatchFilter(**json.loads(filter_json)), *rest)


# -- the statements, run inside a store's writer or reader -------------------------------------
def create_batch(sql: Dialect, conn: Connection, record: BatchRecord) -> int:
    """Snapshot the executions ``record.filter`` matches, oldest first, and store the batch
    with their count; returns the count."""
    where, args = record.filter.where()
    matched = sql.run(
        conn,
        "INSERT INTO batch_items (batch_id, position, execution_id, run) "
        f"SELECT ?, ROW_NUMBER() OVER (ORDER BY ord) - 1, execution_id, run FROM executions "
        f"WHERE {where}",
        record.batch_id, *args,
    ).rowcount  # fmt: skip
    sql.run(
        conn,
        f"INSERT INTO batches ({BATCH_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, 0, 0, 0, 0, ?, ?, ?)",
        record.batch_id, record.action, json.dumps(record.filter.given()), record.reason,
        "running" if matched else "completed", matched, record.owner, record.created_at_ms,
        None if matched else record.created_at_ms,
    )  # fmt: skip
    return int(matched)


def count_query(flt: BatchFilter) -> tuple[str, list[Any]]:
    """How many executions ``flt`` matches (one row: the count)."""
    where, args = flt.where()
    return f"SELECT COUNT(*) FROM executions WHERE {where}", args


def sample_query(flt: BatchFilter) -> tuple[str, list[Any]]:
    """The first :data:`SAMPLE_SIZE` ids ``flt`` matches, oldest first."""
    where, args = flt.where()
    return (
        f"SELECT execution_id FROM executions WHERE {where} ORDER BY ord LIMIT {SAMPLE_SIZE}",
        args,
    )


def mark_doubt(sql: Dialect, conn: Connection, batch_id: str, until: int) -> bool:
    """Note that items before ``until`` may be acted on from now; False when the batch no
    longer runs (cancelled)."""
    return sql.changed(
        conn,
        "UPDATE batches SET doubt_until = ? WHERE batch_id = ? AND state = 'running'",
        until, batch_id,
    )  # fmt: skip


def advance(
    sql: Dialect, conn: Connection, batch_id: str, progress: BatchProgress, now_ms: int
) -> str:
    """Commit the outcome of a page (whatever the batch's state: what was acted on was acted
    on); completes the batch when it was the last page. Returns the batch's state after."""
    for position, failure in progress.failures:
        sql.run(
            conn,
            "UPDATE batch_items SET code = ?, message = ? WHERE batch_id = ? AND position = ?",
            failure.code, failure.message, batch_id, position,
        )  # fmt: skip
    sql.run(
        conn,
        "UPDATE batches SET position = ?, done = done + ?, failed = failed + ?, "
        "doubt_until = GREATEST(doubt_until, ?) WHERE batch_id = ? AND position = ?",
        progress.until, progress.done, len(progress.failures), progress.until, batch_id,
        progress.position,
    )  # fmt: skip
    sql.run(
        conn,
        "UPDATE batches SET state = 'completed', closed_at_ms = ? "
        "WHERE batch_id = ? AND state = 'running' AND position >= matched",
        now_ms, batch_id,
    )  # fmt: skip
    found = sql.run(conn, "SELECT state FROM batches WHERE batch_id = ?", batch_id).fetchone()
    return str(found[0]) if found else "cancelled"


def cancel_batch(sql: Dialect, conn: Connection, batch_id: str, now_ms: int) -> str | None:
    """Cancel a running batch; the batch's state after (None: there is no such batch)."""
    sql.run(
        conn,
        "UPDATE batches SET state = 'cancelled', closed_at_ms = ? "
        "WHERE batch_id = ? AND state = 'running'",
        now_ms, batch_id,
    )  # fmt: skip
    found = sql.run(conn, "SELECT state FROM batches WHERE batch_id = ?", batch_id).fetchone()
    return str(found[0]) if found else None


def claim_batches(
    sql: Dialect, conn: Connection, owner: str, from_owners: list[str] | None
) -> list[str]:
    """Make ``owner`` the owner of the running batches of ``from_owners`` (None: of every
    running batch); their ids, oldest first."""
    where, args = "state = 'running'", []
    if from_owners is not None:
        if not from_owners:
            return []
        where += f" AND owner IN ({', '.join('?' for _ in from_owners)})"
        args = list(from_owners)
    ids = [row[0] for row in sql.run(
        conn, f"SELECT batch_id FROM batches WHERE {where} ORDER BY ord", *args
    ).fetchall()]  # fmt: skip
    for batch_id in ids:
        sql.run(conn, "UPDATE batches SET owner = ? WHERE batch_id = ?", owner, batch_id)
    return ids
