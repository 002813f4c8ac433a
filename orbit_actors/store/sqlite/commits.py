"""Commits of execution events, written a whole batch at a time: one statement for every history
row of the batch and one for every summary row. The writer thread is the database's only
writer, so it remembers each running execution's (run, last_seq) instead of reading it back
before every commit; what a rolled-back transaction staged is forgotten."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from typing import Any

from ..base import TERMINAL_STATUSES, Commit
from ..rules import check_commit

ROW_COLUMNS = (
    "execution_id, workflow, version, definition_hash, status, run, started_at_ms, "
    "closed_at_ms, parent_id, schedule_id, last_seq"
)
_UPSERT = (
    f"INSERT INTO executions ({ROW_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
    "ON CONFLICT (execution_id) DO UPDATE SET status = excluded.status, run = excluded.run, "
    "closed_at_ms = excluded.closed_at_ms, last_seq = excluded.last_seq"
)
_INSERT_EVENT = "INSERT INTO history (execution_id, run, seq, event) VALUES (?, ?, ?, ?)"
_LOOKUP_CHUNK = 500


@dataclass(frozen=True, eq=False)
class CommitWork:
    """One commit with its events already serialized: ``rows`` of (id, run, seq, json)."""

    commit: Commit
    rows: list[tuple[str, int, int, str]]


class CommitBatcher:
    """Runs every :class:`CommitWork` of a batch together (see the module docstring)."""

    def __init__(self) -> None:
        self._positions: dict[str, tuple[int, int]] = {}
        self._staged: dict[str, tuple[int, int] | None] = {}

    def accepts(self, work: object) -> bool:
        """True for :class:`CommitWork`."""
        return isinstance(work, CommitWork)

    def run(self, conn: sqlite3.Connection, works: list[Any]) -> None:
        """Check and write every commit of the batch."""
        self._load_missing(conn, works)
        rows: list[tuple[str, int, int, str]] = []
        summaries: list[tuple[Any, ...]] = []
        for work in works:
            self._check(work.commit)
            if work.commit.rollover:
                conn.executemany(_INSERT_EVENT, rows)
                rows = []
                _archive(conn, work.commit.row.execution_id, work.commit.row.run - 1)
            rows += work.rows
            summaries.append(self._summary(work))
        conn.executemany(_INSERT_EVENT, rows)
        conn.executemany(_UPSERT, summaries)

    def settle(self, committed: bool) -> None:
        """Keep the staged positions when the transaction committed; forget them otherwise."""
        if committed:
            for execution_id, position in self._staged.items():
                if position is None:
                    self._positions.pop(execution_id, None)
                else:
                    self._positions[execution_id] = position
        self._staged.clear()

    def _current(self, execution_id: str) -> tuple[int, int] | None:
        if execution_id in self._staged:
            return self._staged[execution_id]
        return self._positions.get(execution_id)

    def _check(self, commit: Commit) -> None:
        check_commit(self._current(commit.row.execution_id), commit)

    def _summary(self, work: CommitWork) -> tuple[Any, ...]:
        row = work.commit.row
        current = self._current(row.execution_id)
        last_seq = (
            work.rows[-1][2]
            if work.rows
            else (0 if work.commit.rollover or current is None else current[1])
        )
        running = row.status not in TERMINAL_STATUSES
        self._staged[row.execution_id] = (row.run, last_seq) if running else None
        return (row.execution_id, row.workflow, row.version, row.definition_hash, row.status, row.run,
                row.started_at_ms, row.closed_at_ms, row.parent_id, row.schedule_id, last_seq)  # fmt: skip

    def _load_missing(self, conn: sqlite3.Connection, works: list[Any]) -> None:
        missing = list(
            {
                w.commit.row.execution_id
                for w in works
                if self._current(w.commit.row.execution_id) is None
            }
        )
        for start in range(0, len(missing), _LOOKUP_CHUNK):
            chunk = missing[start : start + _LOOKUP_CHUNK]
            marks = ", ".join("?" * len(chunk))
            query = f"SELECT execution_id, run, last_seq FROM executions WHERE execution_id IN ({marks})"
            for execution_id, run, last_seq in conn.execute(query, chunk):
                self._positions[execution_id] = (run, last_seq)


def _archive(conn: sqlite3.Connection, execution_id: str, run: int) -> None:
    conn.execute(
        "INSERT INTO run_archive (execution_id, run, seq, event) "
        "SELECT execution_id, run, seq, event FROM history WHERE execution_id = ? AND run = ?",
        (execution_id, run),
    )
    conn.execute("DELETE FROM history WHERE execution_id = ? AND run = ?", (execution_id, run))
