"""Group commit on SQLite (see :mod:`..group`): one writer connection on one dedicated thread,
every waiting request in one ``BEGIN IMMEDIATE`` transaction, one fsync under
``synchronous=FULL``."""

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

    def begin(self, conn: sqlite3.Connection) -> None:
        """Take the write lock at once."""
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
        if isinstance(exc, sqlite3.Error) and not isinstance(exc, StorageError):
            return StorageError(f"could not write to {self._describe}: {exc}")
        return exc


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
