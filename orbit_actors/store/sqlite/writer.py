"""Group commit: one writer connection on one dedicated thread. The thread takes every write
request that is waiting, runs them all in one transaction, commits (one fsync under
``synchronous=FULL``), then wakes each requester on the trio loop. When anything in a batch
fails, the whole transaction is rolled back and every requester of the batch gets the error:
nothing of a failed batch is ever visible."""

from __future__ import annotations

import contextlib
import queue
import sqlite3
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

import trio

from ...errors import StorageError
from ..base import StoreStatistics

T = TypeVar("T")
Work = Callable[[sqlite3.Connection], T]


@dataclass(eq=False)
class _Request(Generic[T]):
    work: Work[T]
    weight: int
    done: trio.Event = field(default_factory=trio.Event)
    result: Any = None
    error: BaseException | None = None


_STOP = object()


class GroupWriter:
    """Runs write requests on one connection, many per transaction (``max_batch`` = 1 gives one
    transaction per request, for comparison). Start with :meth:`start`, stop with :meth:`stop`."""

    def __init__(
        self,
        connect: Callable[[], sqlite3.Connection],
        describe: str,
        max_batch: int = 10_000,
    ) -> None:
        self._connect = connect
        self._describe = describe
        self._max_batch = max_batch
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._token = trio.lowlevel.current_trio_token()
        self._thread = threading.Thread(target=self._run, name="orbit-store-writer", daemon=True)
        self._ready = threading.Event()
        self._startup_error: BaseException | None = None
        self.stats = StoreStatistics()

    async def start(self) -> None:
        """Start the thread and wait until its connection is open."""
        self._thread.start()
        await trio.to_thread.run_sync(self._ready.wait)
        if self._startup_error is not None:
            raise self._startup_error

    async def stop(self) -> None:
        """Finish the requests already queued, close the connection, end the thread."""
        self._queue.put(_STOP)
        await trio.to_thread.run_sync(self._thread.join)

    async def write(self, work: Work[T], weight: int = 1) -> T:
        """Run ``work`` in the next transaction; return once it is durable. The wait is shielded
        from cancellation: a write that was handed over completes or fails, never half-known."""
        if not self._thread.is_alive():
            raise StorageError(f"the store {self._describe} is closed")
        request: _Request[T] = _Request(work, weight)
        self._queue.put(request)
        with trio.CancelScope(shield=True):
            await request.done.wait()
        if request.error is not None:
            raise request.error
        result: T = request.result
        return result

    def _run(self) -> None:
        try:
            conn = self._connect()
        except BaseException as exc:
            self._startup_error = exc
            self._ready.set()
            return
        self._ready.set()
        try:
            while not self._serve_batch(conn):
                pass
        finally:
            conn.close()

    def _serve_batch(self, conn: sqlite3.Connection) -> bool:
        """Write one batch; True when the writer should stop."""
        first = self._queue.get()
        batch: list[_Request[Any]] = [] if first is _STOP else [first]
        stop = first is _STOP
        while not stop and len(batch) < self._max_batch:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                break
            if item is _STOP:
                stop = True
            else:
                batch.append(item)
        if batch:
            self._commit(conn, batch)
        return stop

    def _commit(self, conn: sqlite3.Connection, batch: list[_Request[Any]]) -> None:
        try:
            conn.execute("BEGIN IMMEDIATE")
            results = [request.work(conn) for request in batch]
            conn.execute("COMMIT")
        except BaseException as exc:
            _rollback(conn)
            error = _as_storage_error(exc, self._describe)
            for request in batch:
                request.error = error
        else:
            for request, result in zip(batch, results, strict=True):
                request.result = result
            self._count(batch)
        for request in batch:
            self._wake(request)

    def _count(self, batch: list[_Request[Any]]) -> None:
        stats = self.stats
        stats.batches += 1
        stats.commits += len(batch)
        stats.events += sum(r.weight for r in batch)
        stats.last_batch = len(batch)
        stats.largest_batch = max(stats.largest_batch, len(batch))

    def _wake(self, request: _Request[Any]) -> None:
        with contextlib.suppress(trio.RunFinishedError):  # the caller's loop is gone
            self._token.run_sync_soon(request.done.set)


def _rollback(conn: sqlite3.Connection) -> None:
    with contextlib.suppress(sqlite3.Error):  # SQLite may have rolled back already
        conn.execute("ROLLBACK")


def _as_storage_error(exc: BaseException, describe: str) -> BaseException:
    if isinstance(exc, StorageError):
        return exc
    if isinstance(exc, sqlite3.Error):
        return StorageError(f"could not write to {describe}: {exc}")
    return exc
