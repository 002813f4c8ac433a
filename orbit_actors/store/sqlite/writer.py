"""Group commit on SQLite (see :mod:`..group`): one writer connection on one dedicated thread,
every waiting request in one ``BEGIN IMMEDIATE`` transaction, one fsync under
``synchronous=FULL``.

A full disk (``SQLITE_FULL``) fails the batch with a ``StorageError`` that says so. The WAL is
what grows: until its next checkpoint it holds every page written since the last one, so after a
full-disk error each later batch first tries a truncating checkpoint (``wal_checkpoint(TRUNCATE)``,
which copies the WAL into the database and gives its space back); once space was freed that
succeeds and the WAL starts again from nothing. No restart is needed.

With a :class:`~.checkpoints.Checkpointer`, the writer's connection does not checkpoint inside a
commit below the checkpointer's backstop (``wal_autocheckpoint``, four times the bound): it tells
the checkpointer how many rows it committed, and checkpoints itself when the checkpointer asks
(the WAL reached its bound).

A transaction nobody waits for (``begin(conn, durable=False)``, see :mod:`..group`) is committed
under ``synchronous = NORMAL``: its frames reach the WAL without an fsync of their own, and the
next commit's fsync under FULL carries them (one file, written in order). A crash of the process
loses nothing of it (the frames are in the system's cache); a power cut before that next commit
may lose it, and the WAL's checksums make SQLite drop it whole."""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Callable
from typing import TypeVar

from ...errors import StorageError
from .. import dialect
from ..group import Batcher
from ..group import GroupWriter as _GroupWriter
from .checkpoints import RESTART_WAIT_MS, Checkpointer
from .schema import BUSY_TIMEOUT_MS

T = TypeVar("T")
Work = Callable[[sqlite3.Connection], T]


class SqliteEngine:
    """How the group writer drives a SQLite connection (autocommit mode, explicit
    transactions)."""

    def __init__(
        self,
        connect: Callable[[], sqlite3.Connection],
        describe: str,
        checkpointer: Checkpointer | None = None,
    ) -> None:
        self._connect = connect
        self._describe = describe
        self._checkpointer = checkpointer
        self.disk_was_full = False  # a truncating checkpoint is due before the next batch
        self._synchronous = 2  # the connection's level (read back at connect)
        self._lowered = False  # this transaction runs under synchronous = NORMAL

    def connect(self) -> sqlite3.Connection:
        """The writing connection (given a checkpointer, checkpointing when asked, or inside a
        commit past its backstop)."""
        conn = self._connect()
        if self._checkpointer is not None:
            conn.execute(f"PRAGMA wal_autocheckpoint = {self._checkpointer.backstop}")
        self._synchronous = conn.execute("PRAGMA synchronous").fetchone()[0]
        return conn

    def begin(self, conn: sqlite3.Connection, durable: bool = True) -> None:
        """Take the write lock at once (after giving the WAL's space back, if the disk was
        full, or catching up with it, if the checkpointer asked)."""
        checkpointer = self._checkpointer
        if self.disk_was_full:
            self.disk_was_full = not _truncate_wal(conn)
        elif checkpointer is not None and checkpointer.restart_due:
            conn.execute(f"PRAGMA busy_timeout = {RESTART_WAIT_MS}")
            _checkpoint(conn, "RESTART")
            conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            checkpointer.restarted()  # (after: the checkpointer keeps out of the way till then)
        if not durable and self._synchronous > 1:
            conn.execute("PRAGMA synchronous = NORMAL")
            self._lowered = True
        try:
            conn.execute("BEGIN IMMEDIATE")
        except BaseException:  # no transaction to roll back: the next must not run lowered
            if self._lowered:
                self._restore(conn)
            raise

    def commit(self, conn: sqlite3.Connection) -> None:
        """Commit (durable once this returns, unless begun with ``durable=False``)."""
        conn.execute("COMMIT")
        if self._lowered:
            self._restore(conn)
        if self._checkpointer is not None:
            self._checkpointer.committed(conn.total_changes)

    def rollback(self, conn: sqlite3.Connection) -> None:
        """Roll back; SQLite may have rolled back already."""
        with contextlib.suppress(sqlite3.Error):
            conn.execute("ROLLBACK")
        if self._lowered:
            self._restore(conn)

    def _restore(self, conn: sqlite3.Connection) -> None:
        conn.execute(f"PRAGMA synchronous = {self._synchronous}")
        self._lowered = False

    def alone(
        self, conn: sqlite3.Connection, work: Callable[[sqlite3.Connection], object]
    ) -> Exception | None:
        """Run ``work`` so that its failure undoes it alone (see :func:`..dialect.alone`)."""
        return dialect.alone(conn, work)

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
    return _checkpoint(conn, "TRUNCATE")


def _checkpoint(conn: sqlite3.Connection, mode: str) -> bool:
    """Checkpoint the whole WAL (``mode`` RESTART or TRUNCATE: the next transaction starts it
    again); False when it could not be done (a reader held an old snapshot, an error)."""
    try:
        busy, _, _ = conn.execute(f"PRAGMA wal_checkpoint({mode})").fetchone()
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
        checkpointer: Checkpointer | None = None,
    ) -> None:
        engine = SqliteEngine(connect, describe, checkpointer)
        super().__init__(engine, describe, max_batch, batcher)
