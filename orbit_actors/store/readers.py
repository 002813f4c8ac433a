"""Reads on a small pool of connections, whatever the engine: each connection is used by one
worker thread at a time, at most ``size`` at once, opened when first needed. A connection that
broke while idle (a database server restarted) is replaced and the read run again on the new
one: a read changes nothing, so running it twice is safe."""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, Protocol, TypeVar

import trio

from ..errors import StorageError

C = TypeVar("C")
T = TypeVar("T")
READERS = 4


class ReadEngine(Protocol[C]):
    """How the pool drives one kind of reader connection."""

    def connect(self) -> C:
        """A new reader connection (StorageError when the database cannot be reached)."""
        ...

    def read(self, work: Callable[[C], T], conn: C) -> T:
        """Run ``work`` on ``conn`` as one consistent read; the engine's errors become
        StorageError."""
        ...

    def usable(self, conn: C) -> bool:
        """False when the connection is broken and must be replaced."""
        ...

    def close(self, conn: C) -> None:
        """Close the connection."""
        ...


class ReaderPool(Generic[C]):
    """Up to ``size`` reader connections of ``engine``."""

    def __init__(self, engine: ReadEngine[C], size: int = READERS) -> None:
        self._engine = engine
        self._idle: list[C] = []
        self._free = trio.Semaphore(size)

    async def read(self, work: Callable[[C], T]) -> T:
        """Run ``work`` on an idle connection in a worker thread."""
        engine = self._engine
        async with self._free:
            conn = self._idle.pop() if self._idle else None
            try:
                if conn is None:
                    conn = await trio.to_thread.run_sync(engine.connect)
                try:
                    return await trio.to_thread.run_sync(engine.read, work, conn)
                except StorageError:
                    if engine.usable(conn):
                        raise
                conn = await trio.to_thread.run_sync(engine.connect)
                return await trio.to_thread.run_sync(engine.read, work, conn)
            finally:
                if conn is not None and engine.usable(conn):
                    self._idle.append(conn)

    def close(self) -> None:
        """Close every idle connection (the store is closing)."""
        for conn in self._idle:
            self._engine.close(conn)
        self._idle.clear()
