"""Batches (operations.md, "Batches"): one action on every execution a filter matched, durable
and paced.

Creating a batch stores it with the snapshot of the executions it matched
(:mod:`orbit_actors.store.batches`) and starts its **walker** here. A walker takes the snapshot
a page at a time: it commits that the page's items are now *in doubt*, acts on each through the
router (the execution's owner carries it out) at most ``--batch-rate`` a second over every
batch of the server (:class:`~.pacing.Pacer`), then commits the page's outcome. After a crash
the batch goes on from its committed position, and only the items of the page that was in
doubt may have been acted on already: one of those found already in the state the action
leaves it in (terminated, cancelled, not paused, rerun since the batch was made) is counted as
done, not refused; an action is never carried out twice. An execution that no longer qualifies
when its turn comes is counted in ``failed`` with the refusal's code and message.

A batch belongs to the server that made it (on SQLite, to whichever server runs next); on
shared PostgreSQL the server that takes over a dead server's executions takes its batches too.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import trio

from ..errors import (
    BatchFinishedError,
    BatchNotFoundError,
    InvalidRequestError,
    OrbitError,
    StorageError,
)
from ..store.base import ExecutionRow, Store
from ..store.batches import (
    BATCH_ACTIONS,
    FILTER_FIELDS,
    MAX_FAILURES_SHOWN,
    BatchFailure,
    BatchFilter,
    BatchItem,
    BatchProgress,
    BatchRecord,
)
from . import forwarding as fw
from .pacing import Pacer
from .router import Router

log = logging.getLogger("orbit.batches")

PAGE = 100
"""Items a walker takes at once: at most this many are in doubt after a crash."""
IN_FLIGHT = 16
"""Actions of one walker under way at once (each waits for its execution's commit)."""

Act = Callable[[str, str, str], Awaitable[object]]
"""Carry out ``action`` on ``execution_id`` with ``reason``; raises OrbitError when refused."""


@dataclass(frozen=True)
class BatchPreview:
    """A dry run: how many executions the filter matches now, and the first few."""

    matched: int
    sample: list[str]


@dataclass(frozen=True)
class BatchStatus:
    """A batch and the executions it could not act on (the first :data:`MAX_FAILURES_SHOWN`)."""

    record: BatchRecord
    failures: list[BatchFailure]


def check_request(action: str, flt: BatchFilter) -> None:
    """Refuse an unknown action or an empty filter (InvalidRequestError naming the field)."""
    if action not in BATCH_ACTIONS:
        raise InvalidRequestError(
            f"action: `{action}` is not an action; use one of {', '.join(BATCH_ACTIONS)}"
        )
    if not flt.given():
        raise InvalidRequestError(f"filter: give at least one of {', '.join(FILTER_FIELDS)}")
    if flt.ids is not None and not flt.ids:
        raise InvalidRequestError("filter.ids: give at least one execution id")


def already_done(action: str, code: str, row: ExecutionRow | None) -> bool:
    """True when a refusal of ``action`` says the execution is already in the state the action
    leaves it in (for an item in doubt: the batch acted on it before a crash)."""
    if row is None:
        return False
    if action == "terminate":
        return code == "EXECUTION_FINISHED" and row.status == "terminated"
    if action == "cancel":
        return code == "EXECUTION_FINISHED" and row.status == "cancelled"
    if action == "unpause":
        return code == "NOT_PAUSED"
    return False


def router_actions(router: Router, rerun: Callable[[str], Awaitable[object]]) -> Act:
    """The actions of a batch, each carried out where its execution lives."""
    commands: dict[str, Callable[[str], object]] = {
        "cancel": lambda reason: fw.CancelCommand(reason=reason),
        "terminate": lambda reason: fw.TerminateCommand(reason=reason),
        "pause": lambda reason: fw.PauseCommand(reason=reason),
        "unpause": lambda reason: fw.UnpauseCommand(),
    }

    async def act(action: str, execution_id: str, reason: str) -> object:
        if action == "rerun":
            return await rerun(execution_id)
        return await router.send(execution_id, commands[action](reason))

    return act


class Batches:
    """Creates, shows and cancels batches, and walks those this server owns (see the module
    docstring). ``shared``: other servers share the store (batches are adopted at takeover,
    not at start)."""

    def __init__(
        self, store: Store, act: Act, pacer: Pacer, owner: str, now_ms: Callable[[], int],
        *, shared: bool = False,
    ) -> None:  # fmt: skip
        self._store = store
        self._act = act
        self._pacer = pacer
        self._owner = owner
        self._now_ms = now_ms
        self._shared = shared
        self._nursery: trio.Nursery | None = None
        self._walking: dict[str, trio.Event] = {}  # each walker here, set when it ends
        self._stopping: set[str] = set()

    async def serve(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Walk the batches this server owns (on a store of its own: every running one) and
        those created or adopted later, until cancelled."""
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            if not self._shared:
                await self.adopt(None)
            task_status.started()
            await trio.sleep_forever()

    async def adopt(self, from_owners: list[str] | None) -> None:
        """Take over the running batches of ``from_owners`` (dead servers; None: every one)."""
        for batch_id in await self._store.claim_batches(self._owner, from_owners):
            self._start(batch_id)

    def _start(self, batch_id: str) -> None:
        assert self._nursery is not None, "serve() first"
        if batch_id not in self._walking:
            self._walking[batch_id] = trio.Event()
            self._nursery.start_soon(self._walk, batch_id)

    # -- the API ------------------------------------------------------------------------------
    async def create(
        self, action: str, flt: BatchFilter, reason: str | None = None, dry_run: bool = False
    ) -> BatchPreview | BatchRecord:
        """Make a batch and start it (or, ``dry_run``, say what it would match)."""
        check_request(action, flt)
        if dry_run:
            return BatchPreview(*await self._store.batch_matches(flt))
        record = BatchRecord(
            batch_id=f"batch-{secrets.token_hex(6)}", action=action, filter=flt, reason=reason,
            state="running", matched=0, owner=self._owner, created_at_ms=self._now_ms(),
        )  # fmt: skip
        matched = await self._store.create_batch(record)
        if matched:
            self._start(record.batch_id)
        return await self._record(record.batch_id)

    async def status(self, batch_id: str) -> BatchStatus:
        """A batch with its failures; raises BatchNotFoundError."""
        record = await self._record(batch_id)
        failures = await self._store.batch_failures(batch_id, MAX_FAILURES_SHOWN)
        return BatchStatus(record, failures)

    async def wait(self, batch_id: str) -> BatchStatus:
        """A batch once its walker here has stopped (at once when none walks it here)."""
        ended = self._walking.get(batch_id)
        if ended is not None:
            await ended.wait()
        return await self.status(batch_id)

    async def cancel(self, batch_id: str) -> BatchStatus:
        """Stop a batch: what was not acted on yet never is. Cancelling a cancelled batch
        changes nothing; a completed one is BatchFinishedError."""
        state = await self._store.cancel_batch(batch_id, self._now_ms())
        if state is None:
            raise BatchNotFoundError(batch_id)
        if state == "completed":
            raise BatchFinishedError(batch_id)
        if batch_id in self._walking:
            self._stopping.add(batch_id)  # the walker here stops before its next action
        return await self.status(batch_id)

    async def _record(self, batch_id: str) -> BatchRecord:
        record = await self._store.batch(batch_id)
        if record is None:
            raise BatchNotFoundError(batch_id)
        return record

    # -- the walker -----------------------------------------------------------------------------
    async def _walk(self, batch_id: str) -> None:
        try:
            await self._walk_pages(await self._record(batch_id))
        except StorageError as exc:  # the batch goes on where it stopped at the next start
            log.warning("batch %s stopped: %s", batch_id, exc)
        finally:
            self._walking.pop(batch_id).set()
            self._stopping.discard(batch_id)

    async def _walk_pages(self, record: BatchRecord) -> None:
        store, position, doubt = self._store, record.position, record.doubt_until
        while batch_id_running(record.batch_id, self._stopping):
            items = await store.batch_items(record.batch_id, position, PAGE)
            until = position + len(items)
            if until > doubt and not await store.mark_batch_doubt(record.batch_id, until):
                return  # cancelled, perhaps by another server
            progress = await self._page(record, items, position, doubt)
            state = await store.advance_batch(record.batch_id, progress, self._now_ms())
            if state != "running":
                return
            position, doubt = progress.until, max(doubt, progress.until)

    async def _page(
        self, record: BatchRecord, items: list[BatchItem], position: int, doubt: int
    ) -> BatchProgress:
        """Act on ``items`` in order, paced, a few at once; stops early when the batch is
        cancelled here (the progress then covers the items acted on)."""
        failures: list[tuple[int, BatchFailure]] = []
        slots = trio.Semaphore(IN_FLIGHT)
        started = 0

        async def one(item: BatchItem) -> None:
            try:
                failure = await self._outcome(record, item, item.position < doubt)
                if failure is not None:
                    failures.append((item.position, failure))
            finally:
                slots.release()

        async with trio.open_nursery() as nursery:
            for item in items:
                await slots.acquire()
                await self._pacer.wait_turn()
                if not batch_id_running(record.batch_id, self._stopping):
                    slots.release()
                    break
                nursery.start_soon(one, item)
                started += 1
        return BatchProgress(position, position + started, started - len(failures), failures)

    async def _outcome(
        self, record: BatchRecord, item: BatchItem, in_doubt: bool
    ) -> BatchFailure | None:
        """Act on one execution: None when done, else why not."""
        if in_doubt and record.action == "rerun":
            row = await self._store.execution(item.execution_id)
            if row is not None and row.run > item.run:
                return None  # rerun before the crash
        reason = record.reason or f"batch {record.batch_id}"
        try:
            await self._act(record.action, item.execution_id, reason)
        except OrbitError as exc:
            row = await self._store.execution(item.execution_id) if in_doubt else None
            if already_done(record.action, exc.code, row):
                return None
            return BatchFailure(item.execution_id, exc.code, exc.message)
        except Exception as exc:  # a bug acting on one execution must not stop the server
            log.exception("batch %s: acting on %s failed", record.batch_id, item.execution_id)
            return BatchFailure(item.execution_id, "INTERNAL", f"{type(exc).__name__}: {exc}")
        return None


def batch_id_running(batch_id: str, stopping: set[str]) -> bool:
    """True while no cancel of ``batch_id`` reached this server."""
    return batch_id not in stopping
