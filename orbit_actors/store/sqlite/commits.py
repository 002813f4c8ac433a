"""Commits of execution events, written a whole batch at a time.

History is an append-only log of **segments**: one row per commit holding the commit's events as
a JSON array (seqs ``first_seq..last_seq``) and the id of the run's previous segment. An
execution's summary row points at the newest segment of its current run (``head``); an archived
run keeps its head in ``runs``. A commit therefore appends to the end of one table and rewrites
one summary row — no secondary index is touched — which keeps the pages each fsync carries few.

The writer thread is the database's only writer, so it remembers each running execution's
position (run, last_seq, head) and the next segment id instead of reading them back before every
commit; what a rolled-back transaction staged is forgotten. It remembers each one's status too:
a commit that keeps it (most results) rewrites the summary row without setting ``status``, since
SQLite rewrites the entries of every index holding an assigned column, changed or not: two index
pages (``executions_by_status``, ``executions_by_workflow``) fewer in the WAL and in the fsync.
"""

from __future__ import annotations

import functools
import sqlite3
from typing import Any, NamedTuple

from ...crashpoints import crash_point
from ...errors import StorageError
from ..base import TERMINAL_STATUSES, Commit
from ..dialect import SQLITE
from ..flow_slots import admits_in, take_slot
from ..group import CommitWork
from ..rules import check_commit
from .rate_log import read_book, write_book
from .shapes import insert_flat, pieces

_WRITTEN = (
    "execution_id, workflow, version, definition_hash, status, run, started_at_ms, "
    "closed_at_ms, parent_id, schedule_id, last_seq"
)
ROW_COLUMNS = f"{_WRITTEN}, wake_at_ms, COALESCE(busy, 1), paused"
"""The columns of an :class:`ExecutionRow`, in its fields' order (a row from before the
wake-up index reads as busy)."""
# Each statement below is sent for the whole batch as a few multi-row statements of fixed shapes
# (shapes.py): a few steps of SQLite, so the writer thread gives up and takes back the GIL a few
# times per batch rather than once per row (under a busy trio thread every take-back can wait a
# whole switch interval), and texts the statement cache keeps compiled.
_REWRITTEN = (
    "run", "version", "definition_hash", "closed_at_ms", "last_seq", "wake_at_ms", "busy",
    "paused", "head",
)  # fmt: skip
"""The columns a commit rewrites in an existing row: the others (workflow, started_at_ms,
parent_id, ...) never change once written, and ``status`` only where it changes."""
_UPSERT_EXECUTIONS = (
    f"INSERT INTO executions (ord, {_WRITTEN}, wake_at_ms, busy, paused, head) VALUES {{rows}} "
    "ON CONFLICT (ord) DO UPDATE SET status = excluded.status, "
    + ", ".join(f"{column} = excluded.{column}" for column in _REWRITTEN)
)
_UPDATE_KEEPING_STATUS = (
    f"INSERT INTO executions (ord, {', '.join(_REWRITTEN)}, "
    "execution_id, workflow, status, started_at_ms) "
    f"SELECT *, '', '', '', 0 FROM (VALUES {{rows}}) WHERE true "
    "ON CONFLICT (ord) DO UPDATE SET "
    + ", ".join(f"{column} = excluded.{column}" for column in _REWRITTEN)
)
"""For rows known to exist with the status they are given (their index entries stay): only
the rewritten columns are bound (each value bound costs ~1,000-2,000 instructions; ~11,000 per
execution fewer in a burst). SQLite checks NOT NULL before it looks for the conflict, so the
other NOT NULL columns take placeholders the DO UPDATE never reads; the conflict target is the
row's ord, tested before any other unique index (``WHERE true`` tells the parser that ON
CONFLICT belongs to the INSERT, not to the SELECT's join)."""
_INSERT_SEGMENTS = (
    "INSERT INTO segments (id, execution_id, run, first_seq, last_seq, prev, events) VALUES {rows}"
)
_ARCHIVE_RUNS = "INSERT INTO runs (execution_id, run, head, last_seq) VALUES {rows}"
_SUMMARY_WIDTH = 16  # the values of a summary row (``_summarize``)
_KEPT_WIDTH = 1 + len(_REWRITTEN)  # ord and the rewritten columns
_COUNTED = ("segments", "executions")  # the tables whose next id the writer hands out


class Position(NamedTuple):
    """Where an execution's history ends (run, last seq, newest segment), its row (ord) and
    the status that row holds."""

    ord: int
    run: int
    last_seq: int
    head: int | None
    status: str


_position = functools.partial(tuple.__new__, Position)
"""A :class:`Position` from a tuple of its fields, made in C (the class's own ``__new__`` is a
Python function: ~1,500 instructions more per commit)."""


class CommitBatcher:
    """Runs every :class:`CommitWork` of a batch together (see the module docstring)."""

    def __init__(self) -> None:
        self._positions: dict[str, Position] = {}
        self._staged: dict[str, Position | None] = {}
        self._next: dict[str, int] = {}
        self._staged_next: dict[str, int] = {}

    def accepts(self, work: object) -> bool:
        """True for :class:`CommitWork`."""
        return isinstance(work, CommitWork)

    def run(self, conn: sqlite3.Connection, works: list[Any]) -> None:
        """Check and write every commit of the batch."""
        self._load_missing(conn, works)
        if len(self._next) < len(_COUNTED):  # read once, then kept in step by settle()
            for table in _COUNTED:
                self._first_free(conn, table)
        self._staged_next = self._next.copy()
        # each list holds its rows' values end to end (shapes.insert_flat)
        segments: list[Any] = []
        summaries: list[Any] = []
        kept: list[Any] = []  # summaries whose row keeps its status
        archived: list[Any] = []
        book = read_book(conn, [work.commit for work in works])
        staged, positions = self._staged, self._positions
        next_segment = self._staged_next["segments"]  # (handed out here, written back below)
        for work in works:
            commit: Commit = work.commit
            row = commit.row
            execution_id = row.execution_id
            # (an execution committed earlier in this batch is staged; None: it finished)
            current = (
                staged[execution_id] if execution_id in staged else positions.get(execution_id)
            )
            if commit.create and current is not None:
                work.refused = True
                continue
            try:
                check_commit(current and (current.run, current.last_seq), commit)
            except StorageError as exc:  # this commit's actor is wrong; its batch goes on
                work.broken = exc
                continue
            if commit.admit is not None and not admits_in(SQLITE, conn, commit.admit):
                work.full = True
                continue
            if book is not None and commit.rates:
                work.limited = book.charge(commit)
                if work.limited is not None:
                    continue
            if row.flow_key is not None:  # (only one with a concurrency key holds a slot)
                take_slot(SQLITE, conn, commit)
            if commit.rollover and current is not None:
                archived += (execution_id, current.run, current.head, current.last_seq)
            head = current.head if current is not None and not commit.rollover else None
            events = commit.events
            if events:
                segments += (next_segment, execution_id, row.run, events[0].seq, events[-1].seq,
                             head, work.events_json)  # fmt: skip
                head = next_segment
                next_segment += 1
            # a second commit of one execution in a batch sets everything: the rows of
            # ``kept`` are written first, so only an execution's first row may go there; and
            # only a running one's, whose row no purge can have deleted (its ``kept`` row
            # would be inserted)
            keeps = (
                current is not None
                and current.status == row.status
                and execution_id not in staged
                and row.status not in TERMINAL_STATUSES
            )
            if keeps:
                kept += self._summarize(commit, current, head, keeps=True)
            else:
                summaries += self._summarize(commit, current, head, keeps=False)
        self._staged_next["segments"] = next_segment
        if book is not None:
            write_book(conn, book, [work.commit for work in works])
        insert_flat(conn, _ARCHIVE_RUNS, 4, archived)
        insert_flat(conn, _INSERT_SEGMENTS, 7, segments)
        crash_point("group-commit")
        insert_flat(conn, _UPDATE_KEEPING_STATUS, _KEPT_WIDTH, kept)
        insert_flat(conn, _UPSERT_EXECUTIONS, _SUMMARY_WIDTH, summaries)

    def settle(self, committed: bool) -> None:
        """Keep what the batch staged when the transaction committed; forget it otherwise."""
        if committed:
            for execution_id, position in self._staged.items():
                if position is None:
                    self._positions.pop(execution_id, None)
                else:
                    self._positions[execution_id] = position
            self._next.update(self._staged_next)
        self._staged.clear()

    def _first_free(self, conn: sqlite3.Connection, table: str) -> int:
        if table not in self._next:
            column = "id" if table == "segments" else "ord"
            found = conn.execute(f"SELECT MAX({column}) FROM {table}").fetchone()[0]
            self._next[table] = (found or 0) + 1
        return self._next[table]

    def _summarize(
        self, commit: Commit, current: Position | None, head: int | None, keeps: bool
    ) -> tuple[Any, ...]:
        """The summary row to write (a new row gets the next ord) and the position to stage;
        for a row that ``keeps`` its status, only its ord and the rewritten columns."""
        row, events = commit.row, commit.events
        if events:
            last_seq = events[-1].seq
        else:
            last_seq = 0 if commit.rollover or current is None else current.last_seq
        if current is None:
            ord_ = self._staged_next["executions"]
            self._staged_next["executions"] = ord_ + 1
        else:
            ord_ = current.ord
        running = row.status not in TERMINAL_STATUSES
        self._staged[row.execution_id] = (
            _position((ord_, row.run, last_seq, head, row.status)) if running else None
        )
        # the bools as ints: bound without sqlite3's adapter look-up (schema.py)
        if keeps:  # (in _REWRITTEN's order)
            return (ord_, row.run, row.version, row.definition_hash, row.closed_at_ms, last_seq,
                    row.wake_at_ms, 1 if row.busy else 0, 1 if row.paused else 0,
                    head)  # fmt: skip
        return (ord_, row.execution_id, row.workflow, row.version, row.definition_hash, row.status,
                row.run, row.started_at_ms, row.closed_at_ms, row.parent_id, row.schedule_id,
                last_seq, row.wake_at_ms, 1 if row.busy else 0, 1 if row.paused else 0,
                head)  # fmt: skip

    def _load_missing(self, conn: sqlite3.Connection, works: list[Any]) -> None:
        ids = {w.commit.row.execution_id for w in works}
        missing = [i for i in ids if i not in self._positions]  # (nothing is staged yet)
        if not missing:  # the usual batch: every execution in it committed before
            return
        for start, count in pieces(len(missing)):
            chunk = missing[start : start + count]
            for execution_id, ord_, run, last_seq, head, status in conn.execute(
                _lookup(count), chunk
            ):
                self._positions[execution_id] = Position(ord_, run, last_seq, head, status)


@functools.lru_cache(maxsize=16)
def _lookup(count: int) -> str:
    """The positions of ``count`` executions (their ids bound)."""
    return (
        "SELECT execution_id, ord, run, last_seq, head, status FROM executions "
        f"WHERE execution_id IN ({', '.join('?' * count)})"
    )


HISTORY_OF_RUN = """
WITH RECURSIVE chain(id) AS (
    SELECT ? WHERE ? IS NOT NULL
    UNION ALL
    SELECT segments.prev FROM segments JOIN chain ON segments.id = chain.id
    WHERE segments.prev IS NOT NULL
)
SELECT events FROM segments WHERE id IN (SELECT id FROM chain) ORDER BY first_seq
"""
"""The events (JSON arrays, in seq order) of the run whose newest segment is ``?`` (given twice)."""
