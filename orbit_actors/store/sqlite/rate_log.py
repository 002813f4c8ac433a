"""Rate limits in SQLite (see :mod:`orbit_actors.store.rate_log`): read, counted and written
inside the writer's transaction, which is the database's only writer, so the counts are exact
(and survive a restart)."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from ..base import Commit
from ..rate_log import PRUNE_BATCH, RateBook, charged, latest

_RECENT = "SELECT at_ms FROM rate_log WHERE task = ? AND key = ? AND at_ms > ?"
_ROWS_PER_INSERT = 1_000  # 4,000 parameters: below SQLite's limit
_PRUNE = (
    "DELETE FROM rate_log WHERE rowid IN (SELECT rowid FROM rate_log WHERE expires_ms <= ? LIMIT ?)"
)


def read_book(conn: sqlite3.Connection, commits: Sequence[Commit]) -> RateBook | None:
    """The recent instants of every (task, key) the commits charge (None: they charge none)."""
    after = charged(commits)
    if not after:
        return None
    return RateBook({
        window: [at for (at,) in conn.execute(_RECENT, (*window, bound))]
        for window, bound in after.items()
    })  # fmt: skip


def write_book(conn: sqlite3.Connection, book: RateBook, commits: Sequence[Commit]) -> None:
    """Write the instants the batch took and delete some expired ones."""
    added = book.added
    for start in range(0, len(added), _ROWS_PER_INSERT):  # one SQLite step per statement
        chunk = added[start : start + _ROWS_PER_INSERT]
        marks = ", ".join(["(?, ?, ?, ?)"] * len(chunk))
        conn.execute(f"INSERT INTO rate_log VALUES {marks}", [v for row in chunk for v in row])
    conn.execute(_PRUNE, (latest(commits), max(PRUNE_BATCH, 2 * len(book.added))))
