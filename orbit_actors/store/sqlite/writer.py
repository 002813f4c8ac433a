"""Group commit on SQLite (see :mod:`..group`): one writer connection on one dedicated thread,
every waiting request in one ``BEGIN IMMEDIATE`` transaction, one fsync under
``synchronous=FULL``.

A full disk (``SQLITE_FULL``) fails the batch with a ``StorageError`` that says so. The WAL is
what grows: until its next checkpoint it holds every page written since the last one, so after a
full-disk error each later batch first tries a truncating checkpoint (``wal_checkpoint(TRUNCATE)``,
which copies the WAL into the database and gives its space back); once space was freed that
succeeds and the WAL starts again from nothing. No restart is needed."""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Callable
from typing import TypeVar

from ...errors import StorageError
from ..group import Batcher
from ..group import GroupWriter as _GroupWriter

T = TypeVar("T")
Work = Callable[[sqlite3.Connection], T]


class SqliteEngine:
    """How the group writer drives a SQLite connection (autocommit mode, explicit
    transactions)."""

    def __init__(self, connect: Callable[[], sqlite3.Connection], describe: str) -> None:
        self.connect = connect
        self._describe = describe
        self.disk_was_full = False  # a truncating checkpoint is due before the next batch

    def begin(self, conn: sqlite3.Connection) -> None:
        """Take the write lock at once (after giving the WAL's space back, if the disk was
        full)."""
        if self.disk_was_full:
            self.disk_was_full = not _truncate_wal(conn)
        conn.execute("BEGIN IMMEDIATE")

    def commit(self, conn: sqlite3.Connection) -> None:
        """Commit (durable once this returns)."""
        conn.execute("COMMIT")

    def rollback(self, conn: sqlite3.Connection) -> None:
        """Roll back; SQLite may have rolled back already."""
        with contextlib.suppress(sqlite3.Error):
            conn.execute("ROLLBACK")

    def close(self, conn: sqlite3.Connection) -> None:
        """Close the connection."""
        conn.close()

    def usable(self, conn: sqlite3.Connection) -> bool:
        """A SQLite connection does not break."""
        return True

    def as_error(self, exc: BaseException) -> BaseException:
        """sqlite3 errors become StorageError naming the file."""
        if not isinstance(exc, sqlite3.Error) or isinstance(exc, StorageError):
            return exc
        if getattr(exc, "sqlite_errorcode", None) == sqlite3.SQLITE_FULL:
            self.disk_was_full = True
            return StorageError(
                f"could not write to {self._describe}: the disk is full; nothing of this "
                "request was written: free space and try again (the server carries on by itself)"
            )
        return StorageError(f"could not write to {self._describe}: {exc}")


def _truncate_wal(conn: sqlite3.Connection) -> bool:
    """Checkpoint the whole WAL and truncate it to nothing; False when it could not be done yet
    (still no space, or a reader holds an old snapshot)."""
    try:
        busy, _, _ = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
    except sqlite3.Error:
        return False
    return not busy


class GroupWriter(_GroupWriter[sqlite3.Connection]):
    """The group writer on a SQLite connection made by ``connect``."""

    def __init__(
        self,
        connect: Callable[[], sqlite3.Connection],
        describe: str,
        max_batch: int = 10_000,
        batcher: Batcher[sqlite3.Connection] | None = None,
    ) -> None:
        super().__init__(SqliteEngine(connect, describe), describe, max_batch, batcher)
