"""Rate limits in SQLite (see :mod:`orbit_actors.store.rate_log`): read, counted and written
inside the writer's transaction, which is the database's only writer, so the counts are exact
(and survive a restart)."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from itertools import chain

from ..base import Commit
from ..rate_log import PRUNE_BATCH, RateBook, Window, charged, latest
from .shapes import insert_rows, pieces, values_statement

_RECENT = (
    "WITH b(task, key, after) AS (VALUES {rows}) SELECT r.task, r.key, r.at_ms FROM b "
    "JOIN rate_log r ON r.task = b.task AND r.key = b.key AND r.at_ms > b.after"
)
_ADD = "INSERT INTO rate_log VALUES {rows}"
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
    for start, count in pieces(len(bounds)):  # (statements of a few shapes: shapes.py)
        chunk = bounds[start : start + count]
        query = values_statement(_RECENT, 3, count)
        for task, key, at_ms in conn.execute(query, list(chain.from_iterable(chunk))):
            found[(task, key)].append(at_ms)
    return RateBook(found)


def write_book(conn: sqlite3.Connection, book: RateBook, commits: Sequence[Commit]) -> None:
    """Write the instants the batch took and delete some expired ones."""
    insert_rows(conn, _ADD, book.added)
    conn.execute(_PRUNE, (latest(commits), max(PRUNE_BATCH, 2 * len(book.added))))
