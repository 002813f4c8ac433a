"""Group commit, whatever the engine: one writer connection on one dedicated thread. The thread
takes every write request that is waiting, runs them all in one transaction, commits (one
fsync), then wakes each requester on the trio loop. When anything in a batch fails, the whole
transaction is rolled back and every requester of the batch gets the error: nothing of a failed
batch is ever visible. The engine (SQLite, PostgreSQL) says how to begin, commit and roll back,
and which of its errors are storage errors.

How the thread wakes the trio loop: it queues the finished batch and writes a byte to a wake-up
socket, which one of the waiting requesters (the **watcher**) waits on itself. Woken, the watcher
reschedules every requester of the finished batches; once its own request is done it passes the
watch to a request still in flight. A requester alone (one execution at a time) therefore wakes
straight from the loop's I/O wait, without a hop through trio's entry-queue task (one task step
and one loop iteration less per commit, four per execution of three steps).

A write nobody waits for (:meth:`GroupWriter.write_nowait`: a worker's sign of life) needs no
durability of its own: it rides in the next batch, and a batch of nothing else is committed
without waiting for the disk (the engine's ``begin(conn, durable=False)``). Written in order
before every later write, it is durable with the next batch that is, and what a crash can lose of
it is only what no one was ever told was written."""

from __future__ import annotations

import contextlib
import logging
import queue
import socket
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

import trio

from ..crashpoints import crash_point
from ..errors import OwnershipLostError, StorageError
from ..history.events import events_to_json
from .base import AlreadyStored, Commit, ConcurrencyFull, RateLimited, StoreStatistics

C = TypeVar("C")
T = TypeVar("T")
C_contra = TypeVar("C_contra", contravariant=True)
MAX_ATTEMPTS = 3
log = logging.getLogger("orbit.store")


class RetryBatch(Exception):
    """Raised by a batcher when the transaction must be rolled back and the batch run again
    (another process raced it; a fresh read will see what that process wrote)."""


@dataclass(eq=False, slots=True)
class CommitWork:
    """One commit with its events already serialized as one JSON array (serialized by the
    caller, off the writer's thread); ``refused`` is set by the batcher when a ``create`` commit
    found its id taken, ``fenced`` when another server owns the execution now, ``broken`` when
    the commit does not continue its execution's history (nothing of any of them is written; the
    rest of the batch is)."""

    commit: Commit
    events_json: str
    refused: bool = False
    fenced: bool = False
    full: bool = False  # its ``admit`` found the concurrency key full
    limited: RateLimited | None = None  # one of its ``rates`` was over its limit
    broken: StorageError | None = None  # it breaks the rules of :mod:`.rules`


class Batcher(Protocol[C_contra]):
    """Runs the writes of one kind together (one statement for the whole batch), and keeps
    whatever it caches in step with the transaction's outcome."""

    def accepts(self, work: object) -> bool:
        """True for the writes this batcher runs."""
        ...

    def run(self, conn: C_contra, works: list[Any]) -> None:
        """Run ``works`` inside the open transaction."""
        ...

    def settle(self, committed: bool) -> None:
        """The transaction was committed (True) or rolled back (False)."""
        ...


class Engine(Protocol[C]):
    """How the writer drives one kind of connection."""

    def connect(self) -> C:
        """A new writing connection (raises on failure)."""
        ...

    def begin(self, conn: C, durable: bool = True) -> None:
        """Open a transaction that takes the write lock it needs; ``durable=False``: its commit
        need not wait for the disk (nobody waits for it; a later durable commit carries it)."""
        ...

    def commit(self, conn: C) -> None:
        """Commit; returns once durable."""
        ...

    def rollback(self, conn: C) -> None:
        """Roll back, ignoring an engine that rolled back already."""
        ...

    def alone(self, conn: C, work: Callable[[C], object]) -> Exception | None:
        """Run ``work`` in the open transaction so that a failure undoes it alone (returned);
        raise when it cannot be undone."""
        ...

    def close(self, conn: C) -> None:
        """Close the connection."""
        ...

    def usable(self, conn: C) -> bool:
        """False when the connection is broken and must be replaced."""
        ...

    def as_error(self, exc: BaseException) -> BaseException:
        """The StorageError an engine error stands for (other exceptions unchanged)."""
        ...


@dataclass(eq=False, slots=True)
class WriteRequest:
    """One write on its way to the thread (its outcome set there, handed out on the trio side)."""

    work: Any  # a callable taking the connection, or a write the batcher runs
    weight: int
    task: trio.lowlevel.Task | None  # None: nobody waits (write_nowait)
    result: Any = None
    error: BaseException | None = None
    done: bool = False  # its outcome was handed out on the trio side
    then: Callable[[WriteRequest], None] | None = None  # told the outcome: ``task`` not woken


_STOP = object()


class GroupWriter(Generic[C]):
    """Runs write requests on one connection, many per transaction (``max_batch`` = 1 gives one
    transaction per request, for comparison). Start with :meth:`start`, stop with :meth:`stop`."""

    def __init__(
        self,
        engine: Engine[C],
        describe: str,
        max_batch: int = 10_000,
        batcher: Batcher[C] | None = None,
    ) -> None:
        self._engine = engine
        self._batcher = batcher
        self._describe = describe
        self._max_batch = max_batch
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._finished: deque[list[WriteRequest]] = deque()  # batches done by the thread, in order
        # handed over, outcome not yet handed out: the task waiting for each
        self._in_flight: dict[WriteRequest, trio.lowlevel.Task] = {}
        self._watcher: WriteRequest | None = None  # whose task waits on the wake-up socket
        self._wake_in, self._wake_out = socket.socketpair()
        self._wake_in.setblocking(False)
        self._wake_out.setblocking(False)
        self._ended = False  # the thread has ended (stop() or a failed start)
        self._thread = threading.Thread(target=self._run, name="orbit-store-writer", daemon=True)
        self._ready = threading.Event()
        self._startup_error: BaseException | None = None
        self._stopped = False  # stop() was called or the thread ended (cheaper than is_alive)
        self._conn: C | None = None
        self.stats = StoreStatistics()

    async def start(self) -> None:
        """Start the thread and wait until its connection is open."""
        self._thread.start()
        await trio.to_thread.run_sync(self._ready.wait)
        if self._startup_error is not None:
            self._ended = True
            self._close_wake_up()
            raise self._startup_error

    async def stop(self) -> None:
        """Finish the requests already queued, close the connection, end the thread. A write
        submitted after this is refused (it would sit behind the stop forever)."""
        self._stopped = True
        self._queue.put(_STOP)
        await trio.to_thread.run_sync(self._thread.join)
        self._ended = True
        if self._watcher is None:  # else the watcher closes it once the last outcome is out
            self._close_wake_up()

    async def write(self, work: Callable[[C], T], weight: int = 1) -> T:
        """Run ``work`` in the next transaction; return its result once durable. The wait is
        shielded from cancellation: a write that was handed over completes or fails, never
        half-known."""
        result: T = await self.submit(work, weight)
        return result

    def write_nowait(self, work: Callable[[C], object], describe: str) -> None:
        """Run ``work`` in the next transaction without waiting for it (see the module
        docstring); a failure is logged, naming what ``describe`` says was being written."""
        if self._stopped:
            raise StorageError(f"the store {self._describe} is closed")
        self._queue.put(WriteRequest((work, describe), 1, None))

    async def submit(self, work: object, weight: int = 1) -> Any:
        """Like :meth:`write`, for a write the batcher runs (its result is None)."""
        await trio.lowlevel.checkpoint_if_cancelled()
        if self._stopped:
            raise StorageError(f"the store {self._describe} is closed")
        task = trio.lowlevel.current_task()
        request = WriteRequest(work, weight, task)
        self._in_flight[request] = task
        self._queue.put(request)
        if self._watcher is None:
            self._watcher = request
        else:
            await trio.lowlevel.wait_task_rescheduled(_not_cancellable)
        if not request.done:  # the watcher, or handed the watch by the one before
            await self._watch(request)
        if request.error is not None:
            raise request.error
        return request.result

    async def commit(self, commit: Commit) -> None:
        """Hand ``commit`` to the batcher; returns once durable. Raises AlreadyStored for a
        ``create`` commit whose id is taken, OwnershipLostError for a commit fenced off,
        ConcurrencyFull or RateLimited for a commit over its limits, StorageError for a commit
        that does not continue its execution's history (the others of its batch are written)."""
        work = CommitWork(commit, events_to_json(commit.events) if commit.events else "[]")
        await self.submit(work, weight=len(commit.events))
        refused = _refusal(work)
        if refused is not None:
            raise refused

    def commit_soon(
        self, commit: Commit, then: Callable[[BaseException | None], None]
    ) -> WriteRequest | None:
        """Hand ``commit`` over without waiting for it, when a request in flight watches for
        outcomes already; None when none does (nothing is handed over: await :meth:`commit`,
        which watches). ``then`` is called in the task that hands the outcome out, with None
        once the commit is durable or with the error :meth:`commit` would raise; it must not
        raise. The calling task stays in flight meanwhile: when the watch comes to its request,
        the task is rescheduled, and must call :meth:`take_watch` (the outcome is then handed
        out in its own step)."""
        if self._watcher is None or self._stopped:
            return None  # (checked before the events are encoded: awaiting encodes them)
        work = CommitWork(commit, events_to_json(commit.events) if commit.events else "[]")
        return self.hand_over(
            work, len(commit.events), lambda request: then(request.error or _refusal(work))
        )

    def hand_over(
        self, work: object, weight: int, then: Callable[[WriteRequest], None]
    ) -> WriteRequest | None:
        """Like :meth:`submit` without waiting: ``then`` is called with the request once its
        outcome (``result``, ``error``) is handed out (see :meth:`commit_soon`)."""
        if self._watcher is None or self._stopped:
            return None
        task = trio.lowlevel.current_task()
        request = WriteRequest(work, weight, task, then=then)
        self._in_flight[request] = task
        self._queue.put(request)
        return request

    async def take_watch(self, request: WriteRequest) -> None:
        """For the task of a request :meth:`commit_soon` handed over, rescheduled before its
        outcome came: it watches until its own outcome is handed out."""
        if not request.done:
            await self._watch(request)

    async def _watch(self, request: WriteRequest) -> None:
        """As the watcher: wait on the wake-up socket until ``request`` is done, handing out the
        outcomes of every finished batch meanwhile, then pass the watch on. A write handed over
        completes or fails, never half-known: a cancel is seen at the caller's next checkpoint."""
        try:
            try:
                await self._watch_until_done(request)
            except trio.Cancelled:
                with trio.CancelScope(shield=True):
                    await self._watch_until_done(request)
        finally:
            self._pass_watch(request)

    async def _watch_until_done(self, request: WriteRequest) -> None:
        wake_in = self._wake_in
        while not request.done:
            await trio.lowlevel.wait_readable(wake_in)
            try:  # noqa: SIM105 (contextlib.suppress's object and calls, on every wake-up)
                wake_in.recv(4096)
            except BlockingIOError:  # woken for batches already handed out
                pass
            self._hand_out()

    def _hand_out(self) -> None:
        """Hand out the outcomes of the batches the thread finished (the watcher's own too)."""
        finished, in_flight, watcher = self._finished, self._in_flight, self._watcher
        while finished:
            for request in finished.popleft():
                request.done = True
                # None: its watcher left without it (never, but for an error in the wait), or
                # nobody waits for it (write_nowait)
                task = in_flight.pop(request, None)
                if request.then is not None:
                    request.then(request)
                elif task is not None and request is not watcher:
                    trio.lowlevel.reschedule(task)

    def _pass_watch(self, request: WriteRequest) -> None:
        """The watcher leaves (its request is done): the oldest request in flight watches next."""
        self._watcher = None
        self._in_flight.pop(request, None)
        for successor, task in self._in_flight.items():
            self._watcher = successor
            trio.lowlevel.reschedule(task)
            return
        if self._ended:
            self._close_wake_up()

    def _close_wake_up(self) -> None:
        self._wake_in.close()
        self._wake_out.close()

    def _run(self) -> None:
        try:
            self._conn = self._engine.connect()
        except BaseException as exc:
            self._startup_error = exc
            self._stopped = True
            self._ready.set()
            return
        self._ready.set()
        try:
            while not self._serve_batch():
                pass
        finally:
            self._stopped = True
            if self._conn is not None:
                self._engine.close(self._conn)

    def _serve_batch(self) -> bool:
        """Write one batch; True when the writer should stop."""
        waiting = self._queue
        first = waiting.get()
        batch: list[WriteRequest] = [] if first is _STOP else [first]
        stop = first is _STOP
        # this thread is the queue's only reader: what empty() saw stays there (no queue.Empty
        # raised and caught per batch)
        while not stop and len(batch) < self._max_batch and not waiting.empty():
            item = waiting.get_nowait()
            if item is _STOP:
                stop = True
            else:
                batch.append(item)
        if batch:
            self._commit(batch)
        return stop

    def _connection(self) -> C:
        """The writing connection, replaced first when it broke (a restarted server)."""
        if self._conn is not None and not self._engine.usable(self._conn):
            with contextlib.suppress(Exception):
                self._engine.close(self._conn)
            self._conn = None
        if self._conn is None:
            self._conn = self._engine.connect()
        return self._conn

    def _begun(self, durable: bool) -> C:
        """The connection with a transaction open. A connection that broke while idle (the
        server restarted) is found out here, before anything was sent, and replaced."""
        conn = self._connection()
        try:
            self._engine.begin(conn, durable)
        except Exception:
            if self._engine.usable(conn):
                raise
            conn = self._connection()
            self._engine.begin(conn, durable)
        return conn

    def _commit(self, batch: list[WriteRequest]) -> None:
        for attempt in range(1, MAX_ATTEMPTS + 1):
            try:
                self._attempt(batch)
            except RetryBatch:
                if attempt < MAX_ATTEMPTS:
                    continue
                self._fail(batch, StorageError(f"{self._describe}: a batch kept racing"))
            except BaseException as exc:
                self._fail(batch, self._engine.as_error(exc))
            else:
                if self._batcher is not None:
                    self._batcher.settle(committed=True)
                self._count(batch)
                crash_point("commit-before-answer")
            break
        if batch[-1].task is not None or any(request.task for request in batch):
            self._wake(batch)  # (else nobody waits: nothing is queued for a watcher to take)

    def _attempt(self, batch: list[WriteRequest]) -> None:
        """Run the batch in one transaction; on any exception it is rolled back."""
        batcher = self._batcher
        grouped: list[Any] = []
        alone: list[WriteRequest] = []
        unwaited: list[WriteRequest] = []
        for request in batch:
            if request.task is None:
                unwaited.append(request)
            elif batcher is not None and batcher.accepts(request.work):
                grouped.append(request.work)
            else:
                alone.append(request)
        conn = self._begun(durable=len(unwaited) < len(batch))
        try:
            if grouped and batcher is not None:
                batcher.run(conn, grouped)
            for request in alone:
                request.result = request.work(conn)
            for request in unwaited:  # a failure of one is its own: the batch goes on
                work, describe = request.work
                failed = self._engine.alone(conn, work)
                if failed is not None:
                    log.warning("could not write %s: %s", describe, self._engine.as_error(failed))
            self._engine.commit(conn)
        except BaseException:
            self._engine.rollback(conn)
            if batcher is not None:
                batcher.settle(committed=False)
            raise

    def _fail(self, batch: list[WriteRequest], error: BaseException) -> None:
        for request in batch:
            request.error = error
            if request.task is None:  # nobody will hear of it otherwise
                log.warning("could not write %s: %s", request.work[1], error)

    def _count(self, batch: list[WriteRequest]) -> None:
        stats = self.stats
        stats.batches += 1
        stats.commits += len(batch)
        stats.events += sum(r.weight for r in batch)
        stats.last_batch = len(batch)
        stats.largest_batch = max(stats.largest_batch, len(batch))

    def _wake(self, batch: list[WriteRequest]) -> None:
        """Queue the batch for the watcher, then wake it (a byte on the wake-up socket). A full
        socket has wake-ups pending already; a closed one has nobody left to wake."""
        self._finished.append(batch)
        try:  # noqa: SIM105 (contextlib.suppress's object and calls, on every batch)
            self._wake_out.send(b"\0")
        except OSError:
            pass


def _refusal(work: CommitWork) -> BaseException | None:
    """What a commit's batcher refused it for (None: it was written)."""
    commit = work.commit
    if work.refused:
        return AlreadyStored(commit.row.execution_id)
    if work.broken is not None:
        return work.broken
    if work.fenced:
        return OwnershipLostError(commit.row.execution_id)
    if work.full:
        assert commit.admit is not None
        return ConcurrencyFull(commit.admit.key)
    return work.limited


def _not_cancellable(raise_cancel: object) -> trio.lowlevel.Abort:
    """A write handed to the writer cannot be abandoned half-way: its wait ignores cancellation
    (the caller sees it at its next checkpoint, once the outcome is known)."""
    return trio.lowlevel.Abort.FAILED
