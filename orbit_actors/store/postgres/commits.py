"""Commits of execution events on PostgreSQL, written a whole batch at a time.

History is a table of **segments**: one row per commit holding the commit's events as a JSON
array, keyed (execution, run, first seq), so a run reads as one index range. Each batch costs
the same few statements however many commits it holds, each one round trip with the batch's
values as one array per column (``unnest``): lock and read the positions of the batch's
executions, upsert their summary rows, append the segments, archive the runs rolled over. The
arrays go in binary: as text, each JSON array of events would be escaped into an array literal
and parsed back, which cost six times as much.

Nothing is remembered between batches: the positions are read (``FOR UPDATE``) in the batch's
own transaction, so another process writing the same database cannot make them stale. A new
execution another process created between that read and the upsert (its row was not there to
lock) is seen by the upsert, and the batch is run again.

**Fencing** (shared mode, once the server joined: :attr:`CommitBatcher.owner` is set): the same
locked read returns each execution's ``owner_epoch``; a commit for an execution another server
owns now (it took it over when this server's lease expired) is refused — nothing of it is
written, the rest of the batch goes on — and its caller gets
:class:`~orbit_actors.errors.OwnershipLostError`. A new execution is owned by the server that
creates it.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any, NamedTuple

from ...crashpoints import crash_point
from ...errors import StorageError
from ..base import ExecutionRow
from ..dialect import POSTGRES
from ..flow_slots import admits_in, take_slot
from ..group import CommitWork, RetryBatch
from ..rules import check_commit
from .flow_slots import lock_keys, notify_dequeued
from .rate_log import read_book, write_book
from .schema import Conn

ROW_COLUMNS = ", ".join(field.name for field in fields(ExecutionRow))
# ROW_COLUMNS', then owner's
_TYPES = ("text", "text", "text", "text", "text", "int", "bigint", "bigint", "text", "text",
          "int", "bigint", "bool", "bool", "text", "text", "bigint")  # fmt: skip
_POSITIONS = (
    "SELECT execution_id, run, last_seq, owner_epoch, status = 'running' FROM executions "
    "WHERE execution_id = ANY(%b) "
    "ORDER BY execution_id FOR UPDATE"  # one lock order for every process: no deadlock
)
_UPSERT_EXECUTIONS = (
    f"INSERT INTO executions ({ROW_COLUMNS}, owner, owner_epoch) SELECT * FROM unnest("
    + ", ".join(f"%b::{kind}[]" for kind in _TYPES)
    + ") ON CONFLICT (execution_id) DO UPDATE SET status = excluded.status, "
    "run = excluded.run, closed_at_ms = excluded.closed_at_ms, last_seq = excluded.last_seq, "
    "version = excluded.version, definition_hash = excluded.definition_hash, "
    "wake_at_ms = excluded.wake_at_ms, busy = excluded.busy, paused = excluded.paused, "
    # a queued execution has no owner (the server that starts it owns it from then on);
    # a rerun of a finished execution moves it to the server that reruns it
    "owner = COALESCE(excluded.owner, executions.owner), "
    "owner_epoch = COALESCE(excluded.owner_epoch, executions.owner_epoch) "
    "RETURNING execution_id, xmax = 0"  # xmax is 0 for a row this statement inserted
)
_INSERT_SEGMENTS = (
    "INSERT INTO segments (execution_id, run, first_seq, last_seq, events) "
    "SELECT * FROM unnest(%b::text[], %b::int[], %b::int[], %b::int[], %b::text[])"
)
_ARCHIVE_RUNS = (
    "INSERT INTO runs (execution_id, run, last_seq) "
    "SELECT * FROM unnest(%b::text[], %b::int[], %b::int[])"
)


class Position(NamedTuple):
    """Where an execution's history ends: its run and last seq (and who owns it)."""

    run: int
    last_seq: int
    owner_epoch: int | None = None
    running: bool = True


class Owner(NamedTuple):
    """The server a batcher writes for: its id and its epoch (the fencing token)."""

    server_id: str
    epoch: int


@dataclass
class _Staged:
    """What one batch writes, gathered before any of it is sent."""

    positions: dict[str, Position | None]
    new: set[str]
    summaries: dict[str, tuple[Any, ...]]
    segments: list[tuple[Any, ...]]
    archived: list[tuple[Any, ...]]
    dequeued: list[str] = field(default_factory=list)  # queued executions started or ended


class CommitBatcher:
    """Runs every :class:`CommitWork` of a batch together (see the module docstring)."""

    def __init__(self) -> None:
        self.owner: Owner | None = None  # set when the server joins: commits are fenced

    def accepts(self, work: object) -> bool:
        """True for :class:`CommitWork`."""
        return isinstance(work, CommitWork)

    def run(self, conn: Conn, works: list[Any]) -> None:
        """Check and write every commit of the batch; RetryBatch when another process created
        one of its new executions meanwhile."""
        ids = sorted({w.commit.row.execution_id for w in works})
        found = conn.execute(_POSITIONS, (ids,)).fetchall()
        staged = _Staged({i: Position(r, s, o, u) for i, r, s, o, u in found}, set(), {}, [], [])
        lock_keys(conn, works)
        book = read_book(conn, [work.commit for work in works])
        for work in works:
            commit = work.commit
            work.full, work.limited, work.broken = False, None, None  # a rerun decides afresh
            if commit.admit is not None and not admits_in(POSTGRES, conn, commit.admit):
                work.full = True
                continue
            if book is not None and commit.rates:
                work.limited = book.charge(commit)
                if work.limited is not None:
                    continue
            _stage(staged, work, self.owner)
            if work.refused or work.fenced or work.broken is not None:
                if book is not None and commit.rates:
                    book.give_back(commit)
            else:
                take_slot(POSTGRES, conn, commit)
        if book is not None:
            write_book(conn, book, [work.commit for work in works])
        if not staged.summaries:
            return  # every commit of the batch was a refused create
        _send(conn, _ARCHIVE_RUNS, staged.archived)
        inserted = conn.execute(*_columns(_UPSERT_EXECUTIONS, list(staged.summaries.values())))
        if staged.new - {i for i, fresh in inserted.fetchall() if fresh}:
            raise RetryBatch()
        crash_point("group-commit")
        _send(conn, _INSERT_SEGMENTS, staged.segments)
        if staged.dequeued:
            notify_dequeued(conn, staged.dequeued)

    def settle(self, committed: bool) -> None:
        """Nothing is cached between batches."""


def _stage(staged: _Staged, work: CommitWork, owner: Owner | None) -> None:
    """Check one commit against where its execution stands (as this batch left it) and who
    owns it, and stage its rows."""
    commit, row = work.commit, work.commit.row
    current = staged.positions.get(row.execution_id)
    work.refused = commit.create and current is not None
    if work.refused:
        return
    promoting = commit.admit is not None and commit.admit.promoting
    unowned = (
        current is not None
        and current.owner_epoch is None  # queued
        and (promoting or (current.last_seq == 1 and row.status == "cancelled"))
    )
    if owner is not None and current is not None and current.owner_epoch != owner.epoch:
        # a rerun of a finished execution is not fenced: no server runs it, and the server
        # that reruns it becomes its owner; a queued execution (only its WorkflowCreated, no
        # owner yet) is promoted or cancelled by any server
        rerun = commit.rollover and not current.running
        work.fenced = not (rerun or unowned)
        if work.fenced:
            return
    try:
        check_commit(None if current is None else (current.run, current.last_seq), commit)
    except StorageError as exc:  # this commit's actor is wrong; its batch goes on
        work.broken = exc
        return
    if unowned:
        staged.dequeued.append(row.execution_id)
    if current is None:
        staged.new.add(row.execution_id)
    elif commit.rollover:
        staged.archived.append((row.execution_id, current.run, current.last_seq))
    if commit.events:
        last_seq = commit.events[-1].seq
        staged.segments.append(
            (row.execution_id, row.run, commit.events[0].seq, last_seq, work.events_json)
        )
    else:
        last_seq = 0 if commit.rollover or current is None else current.last_seq
    staged.summaries[row.execution_id] = (
        row.execution_id, row.workflow, row.version, row.definition_hash, row.status, row.run,
        row.started_at_ms, row.closed_at_ms, row.parent_id, row.schedule_id, last_seq,
        row.wake_at_ms, row.busy, row.paused, row.flow_key,
        *(owner if owner is not None and row.status != "queued" else (None, None)),
    )  # fmt: skip
    staged.positions[row.execution_id] = Position(
        row.run, last_seq, owner.epoch if owner is not None else None
    )


def _columns(statement: str, rows: list[tuple[Any, ...]]) -> tuple[str, list[list[Any]]]:
    """``statement`` with ``rows`` turned into one array per column (what ``unnest`` takes)."""
    return statement, [list(column) for column in zip(*rows, strict=True)]


def _send(conn: Conn, statement: str, rows: list[tuple[Any, ...]]) -> None:
    if rows:
        conn.execute(*_columns(statement, rows))
