"""Rate limits in SQLite (see :mod:`orbit_actors.store.rate_log`): read, counted and written
inside the writer's transaction, which is the database's only writer, so the counts are exact
(and survive a restart)."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from ..base import Commit
from ..rate_log import PRUNE_BATCH, RateBook, Window, charged, latest

_RECENT = (
    "WITH b(task, key, after) AS (VALUES {rows}) SELECT r.task, r.key, r.at_ms FROM b "
    "JOIN rate_log r ON r.task = b.task AND r.key = b.key AND r.at_ms > b.after"
)
_ROWS_PER_STATEMENT = 1_000  # at most 4,000 parameters: below SQLite's limit
_PRUNE = (
    "DELETE FROM rate_log WHERE rowid IN (SELECT rowid FROM rate_log WHERE expires_ms <= ? LIMIT ?)"
)


def read_book(conn: sqlite3.Connection, commits: Sequence[Commit]) -> RateBook | None:
    """The recent instants of every (task, key) the commits charge (None: they charge none)."""
    after = charged(commits)
    if not after:
        return None
    found: dict[Window, list[int]] = {window: [] for window in after}
    bounds = [(*window, bound) for window, bound in after.items()]
    for start in range(0, len(bounds), _ROWS_PER_STATEMENT):  # one statement per 1,000 keys
        chunk = bounds[start : start + _ROWS_PER_STATEMENT]
        query = _RECENT.format(rows=", ".join(["(?, ?, ?)"] * len(chunk)))
        for task, key, at_ms in conn.execute(query, [v for row in chunk for v in row]):
            found[(task, key)].append(at_ms)
    return RateBook(found)


def write_book(conn: sqlite3.Connection, book: RateBook, commits: Sequence[Commit]) -> None:
    """Write the instants the batch took and delete some expired ones."""
    added = book.added
    for start in range(0, len(added), _ROWS_PER_STATEMENT):  # one SQLite step per statement
        chunk = added[start : start + _ROWS_PER_STATEMENT]
        marks = ", ".join(["(?, ?, ?, ?)"] * len(chunk))
        conn.execute(f"INSERT INTO rate_log VALUES {marks}", [v for row in chunk for v in row])
    conn.execute(_PRUNE, (latest(commits), max(PRUNE_BATCH, 2 * len(book.added))))
