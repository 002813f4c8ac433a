"""Group commit on PostgreSQL (see :mod:`..group`): one writer connection on one dedicated
thread, every waiting request in one transaction, one WAL flush per batch. A connection that
broke (PostgreSQL restarted, the network dropped) fails its batch and is replaced for the next."""

from __future__ import annotations

import contextlib
from collections.abc import Callable

import psycopg

from ...errors import StorageError
from .. import dialect
from .schema import Conn, connect, one_line


class PostgresEngine:
    """How the group writer drives a PostgreSQL connection (autocommit mode, explicit
    transactions)."""

    def __init__(self, url: str, describe: str) -> None:
        self._url = url
        self._describe = describe
        self.settings = ""  # a SET statement every new connection runs (shared mode sets one)

    def connect(self) -> Conn:
        """A new writing connection."""
        conn = connect(self._url, autocommit=True)
        if self.settings:
            conn.execute(self.settings.encode())
        return conn

    def begin(self, conn: Conn, durable: bool = True) -> None:
        """Open the batch's transaction; one nobody waits for commits without waiting for the
        WAL flush (PostgreSQL's asynchronous commit: a crash of PostgreSQL may lose it, never
        anything committed before or after it)."""
        conn.execute("BEGIN")
        if not durable:
            conn.execute("SET LOCAL synchronous_commit = off")

    def commit(self, conn: Conn) -> None:
        """Commit (durable, under PostgreSQL's synchronous_commit, once this returns)."""
        conn.execute("COMMIT")

    def rollback(self, conn: Conn) -> None:
        """Roll back; a broken connection has nothing left to roll back."""
        if not conn.broken:
            with contextlib.suppress(psycopg.Error):
                conn.execute("ROLLBACK")

    def alone(self, conn: Conn, work: Callable[[Conn], object]) -> Exception | None:
        """Run ``work`` so that its failure undoes it alone (see :func:`..dialect.alone`)."""
        return dialect.alone(conn, work)

    def close(self, conn: Conn) -> None:
        """Close the connection."""
        conn.close()

    def usable(self, conn: Conn) -> bool:
        """False once the connection is closed or broken."""
        return not (conn.closed or conn.broken)

    def as_error(self, exc: BaseException) -> BaseException:
        """psycopg errors become StorageError naming the database."""
        if isinstance(exc, psycopg.Error):
            return StorageError(f"could not write to {self._describe}: {one_line(exc)}")
        return exc
