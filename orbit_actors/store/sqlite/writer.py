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
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

import trio

from ...errors import StorageError
from ..base import StoreStatistics

T = TypeVar("T")
Work = Callable[[sqlite3.Connection], T]


class Batcher(Protocol):
    """Runs the writes of one kind together (one statement for the whole batch), and keeps
    whatever it caches in step with the transaction's outcome."""

    def accepts(self, work: object) -> bool:
        """True for the writes this batcher runs."""
        ...

    def run(self, conn: sqlite3.Connection, works: list[Any]) -> None:
        """Run ``works`` inside the open transaction."""
        ...

    def settle(self, committed: bool) -> None:
        """The transaction was committed (True) or rolled back (False)."""
        ...


@dataclass(eq=False)
class _Request(Generic[T]):
    work: Any  # a Work[T], or a write the batcher runs
    weight: int
    task: trio.lowlevel.Task
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
        batcher: Batcher | None = None,
    ) -> None:
        self._connect = connect
        self._batcher = batcher
        self._describe = describe
        self._max_batch = max_batch
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._token = trio.lowlevel.current_trio_token()
        self._thread = threading.Thread(target=self._run, name="orbit-store-writer", daemon=True)
        self._ready = threading.Event()
        self._startup_error: BaseException | None = None
        self._stopped = False  # stop() was called or the thread ended (cheaper than is_alive)
        self.stats = StoreStatistics()

    async def start(self) -> None:
        """Start the thread and wait until its connection is open."""
        self._thread.start()
        await trio.to_thread.run_sync(self._ready.wait)
        if self._startup_error is not None:
            raise self._startup_error

    async def stop(self) -> None:
        """Finish the requests already queued, close the connection, end the thread. A write
        submitted after this is refused (it would sit behind the stop forever)."""
        self._stopped = True
        self._queue.put(_STOP)
        await trio.to_thread.run_sync(self._thread.join)

    async def write(self, work: Work[T], weight: int = 1) -> T:
        """Run ``work`` in the next transaction; return once it is durable. The wait is shielded
        from cancellation: a write that was handed over completes or fails, never half-known."""
        result: T = await self.submit(work, weight)
        return result

    async def submit(self, work: object, weight: int = 1) -> Any:
        """Like :meth:`write`, for a write the batcher runs (its result is None)."""
        await trio.lowlevel.checkpoint_if_cancelled()
        if self._stopped:
            raise StorageError(f"the store {self._describe} is closed")
        request: _Request[Any] = _Request(work, weight, trio.lowlevel.current_task())
        self._queue.put(request)
        await trio.lowlevel.wait_task_rescheduled(_not_cancellable)
        if request.error is not None:
            raise request.error
        return request.result

    def _run(self) -> None:
        try:
            conn = self._connect()
        except BaseException as exc:
            self._startup_error = exc
            self._stopped = True
            self._ready.set()
            return
        self._ready.set()
        try:
            while not self._serve_batch(conn):
                pass
        finally:
            self._stopped = True
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
        batcher = self._batcher
        grouped = [r for r in batch if batcher is not None and batcher.accepts(r.work)]
        try:
            conn.execute("BEGIN IMMEDIATE")
            if grouped and batcher is not None:
                batcher.run(conn, [r.work for r in grouped])
            for request in batch:
                if not (grouped and batcher is not None and batcher.accepts(request.work)):
                    request.result = request.work(conn)
            conn.execute("COMMIT")
        except BaseException as exc:
            _rollback(conn)
            if batcher is not None:
                batcher.settle(committed=False)
            error = _as_storage_error(exc, self._describe)
            for request in batch:
                request.error = error
        else:
            if batcher is not None:
                batcher.settle(committed=True)
            self._count(batch)
        self._wake(batch)

    def _count(self, batch: list[_Request[Any]]) -> None:
        stats = self.stats
        stats.batches += 1
        stats.commits += len(batch)
        stats.events += sum(r.weight for r in batch)
        stats.last_batch = len(batch)
        stats.largest_batch = max(stats.largest_batch, len(batch))

    def _wake(self, batch: list[_Request[Any]]) -> None:
        """Wake every requester of the batch with one call into the trio loop."""

        def wake_all() -> None:
            for request in batch:
                trio.lowlevel.reschedule(request.task)

        with contextlib.suppress(trio.RunFinishedError):  # the caller's loop is gone
            self._token.run_sync_soon(wake_all)


def _not_cancellable(raise_cancel: object) -> trio.lowlevel.Abort:
    """A write handed to the writer cannot be abandoned half-way: its wait ignores cancellation
    (the caller sees it at its next checkpoint, once the outcome is known)."""
    return trio.lowlevel.Abort.FAILED


def _rollback(conn: sqlite3.Connection) -> None:
    with contextlib.suppress(sqlite3.Error):  # SQLite may have rolled back already
        conn.execute("ROLLBACK")


def _as_storage_error(exc: BaseException, describe: str) -> BaseException:
    if isinstance(exc, StorageError):
        return exc
    if isinstance(exc, sqlite3.Error):
        return StorageError(f"could not write to {describe}: {exc}")
    return exc
