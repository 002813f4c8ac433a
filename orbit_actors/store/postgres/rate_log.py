"""Rate limits on PostgreSQL (see :mod:`orbit_actors.store.rate_log`). Several servers write the
same database, so a batch that charges a (task, key) first locks its row in ``rate_keys`` (in
one order: no deadlock); the instants it then reads stay exact until its transaction ends.
Each step is one statement for the whole batch."""

from __future__ import annotations

from collections.abc import Sequence

from ..base import Commit
from ..rate_log import PRUNE_BATCH, RateBook, Window, charged, latest
from .schema import Conn

_ADD_KEYS = (
    "INSERT INTO rate_keys (task, key) SELECT * FROM unnest(%s::text[], %s::text[]) "
    "ON CONFLICT DO NOTHING"
)
_LOCK_KEYS = (
    "SELECT 1 FROM rate_keys WHERE (task, key) IN "
    "(SELECT * FROM unnest(%s::text[], %s::text[])) ORDER BY task, key FOR UPDATE"
)
_RECENT = (
    "SELECT r.task, r.key, r.at_ms FROM unnest(%s::text[], %s::text[], %s::bigint[]) "
    "AS b(task, key, after) JOIN rate_log r ON r.task = b.task AND r.key = b.key "
    "AND r.at_ms > b.after"
)
_ADD = (
    "INSERT INTO rate_log (task, key, at_ms, expires_ms) "
    "SELECT * FROM unnest(%s::text[], %s::text[], %s::bigint[], %s::bigint[])"
)
# rows another batch is deleting are skipped, never waited for (no lock order to keep)
_PRUNE = (
    "DELETE FROM rate_log WHERE ctid IN (SELECT ctid FROM rate_log WHERE expires_ms <= %s "
    "LIMIT %s FOR UPDATE SKIP LOCKED)"
)


def read_book(conn: Conn, commits: Sequence[Commit]) -> RateBook | None:
    """Lock every (task, key) the commits charge and read its recent instants (None: they
    charge none)."""
    after = charged(commits)
    if not after:
        return None
    windows = sorted(after)
    tasks, keys = [task for task, _ in windows], [key for _, key in windows]
    conn.execute(_ADD_KEYS, (tasks, keys))
    conn.execute(_LOCK_KEYS, (tasks, keys))
    found: dict[Window, list[int]] = {window: [] for window in windows}
    bounds = [after[window] for window in windows]
    for task, key, at_ms in conn.execute(_RECENT, (tasks, keys, bounds)).fetchall():
        found[(task, key)].append(at_ms)
    return RateBook(found)


def write_book(conn: Conn, book: RateBook, commits: Sequence[Commit]) -> None:
    """Write the instants the batch took and delete some expired ones."""
    if book.added:
        conn.execute(_ADD, [list(column) for column in zip(*book.added, strict=True)])
    conn.execute(_PRUNE, (latest(commits), max(PRUNE_BATCH, 2 * len(book.added))))
