"""Starts under a concurrency key: admitted, queued, skipped or replacing, and queued executions
started when a slot of their key frees.

The slots live in the store (:mod:`orbit_actors.store.flow_slots`): a start's first commit is
admitted only while its key has room, in that commit's transaction. When it has none,
``on_full`` decides: ``skip`` refuses the start (nothing stored), ``queue`` stores the execution
with only its ``WorkflowCreated`` (status ``queued``), ``replace`` starts it over the limit and
cancels the oldest running execution of the key. A queued execution is **promoted** by a commit
of its ``WorkflowStarted`` and first decisions that takes the slot in the same transaction;
promotions are tried when an execution of the key ends, after a queued start and after a
restart, oldest first, one key at a time on this server.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

import trio

from ..errors import ConcurrencyLimitError, ExecutionQueuedError, OrbitError, StorageError
from ..history.apply import replay
from ..history.events import (
    CancelRequested,
    Event,
    WorkflowCancelled,
    WorkflowCreated,
    WorkflowStarted,
    WorkflowTerminated,
)
from ..ir.flow import ConcurrencyPlan
from ..ir.plan import CompiledDefinition
from ..store.base import Admission, Commit, ConcurrencyFull, Store
from ..views.execution import row_of
from .key_locks import KeyLocks
from .loading import Loader
from .registry import Registry
from .supervisor import Supervisor

log = logging.getLogger("orbit.flow")


class FlowStarts:
    """Starts and promotes the executions of definitions that declare ``flow.concurrency``."""

    def __init__(
        self, nursery: trio.Nursery, supervisor: Supervisor, store: Store, load: Loader,
        now_ms: Callable[[], int],
    ) -> None:  # fmt: skip
        self._nursery = nursery
        self._supervisor = supervisor
        self._registry: Registry = supervisor.registry
        self._store = store
        self._load = load
        self._now_ms = now_ms
        self._promoting = KeyLocks()  # one promoter per key on this server
        self._wanted: set[str] = set()  # keys to look at again once their promoter is done
        # how a replaced execution is cancelled: here by default; the runtime routes it to the
        # server that owns it when several share the store
        self.cancel: Callable[[str, str], Awaitable[None]] = self._registry.cancel_quietly

    async def start(self, definition: CompiledDefinition, events: list[Event], key: str) -> None:
        """Start the execution whose first events are ``events`` under ``key``: it runs, is
        queued, replaces the oldest running one, or is refused (ConcurrencyLimitError)."""
        plan = definition.flow.concurrency
        assert plan is not None
        try:
            admit = Admission(key, plan.limit, at_ms=events[-1].timestamp_ms)
            await self._create(definition, events, admit)
            return
        except ConcurrencyFull:
            pass
        if plan.on_full == "skip":
            raise ConcurrencyLimitError(_full_message(definition, key, plan))
        if plan.on_full == "replace":
            await self._replace(definition, events, key, plan)
            return
        created = events[0]
        assert isinstance(created, WorkflowCreated)
        row = row_of(replay([created]))
        row.started_at_ms, row.busy = created.timestamp_ms, False
        await self._store.commit(Commit(row, [created], create=True))
        self.promote_soon(key, plan.limit)

    async def _create(
        self, definition: CompiledDefinition, events: list[Event], admit: Admission
    ) -> None:
        with trio.CancelScope(shield=True):  # a stored execution always gets its actor
            await self._supervisor.create(replay(events), definition, list(events), admit)

    async def _replace(
        self, definition: CompiledDefinition, events: list[Event], key: str, plan: ConcurrencyPlan
    ) -> None:
        oldest = (await self._store.flow_slots(key, queued_limit=0)).running
        admit = Admission(key, plan.limit, over_limit=True)
        await self._create(definition, events, admit)
        created = events[0]
        if oldest and isinstance(created, WorkflowCreated):
            reason = f"replaced by `{created.execution_id}`"
            self._nursery.start_soon(self.cancel, oldest[0], reason)

    # -- promotions -------------------------------------------------------------------------
    def promote_soon(self, key: str, limit: int) -> None:
        """Start queued executions of ``key`` while it has room (in the background). Calls for
        a key whose promoter runs are folded into one more look when it is done, so a burst
        of ends or queued starts costs one read each, not one each per waiting execution."""
        if self._promoting.busy(key):
            self._wanted.add(key)
            return
        self._nursery.start_soon(self._promote_guarded, key, limit)

    async def promote_all(self) -> None:
        """After a restart or a takeover: promote what every key with queued executions has
        room for (a store error leaves it to the next end of each key)."""
        try:
            keys = await self._store.queued_keys()
        except StorageError as exc:
            log.warning("queued executions not looked for: %s", exc)
            return
        for key in keys:
            self._nursery.start_soon(self._promote_guarded, key, None)

    async def _promote_guarded(self, key: str, limit: int | None) -> None:
        try:
            await self.promote(key, limit)
        except (OrbitError, StorageError) as exc:  # the next end of the key tries again
            log.warning("queued executions of key %s not started: %s", key, exc)

    async def promote(self, key: str, limit: int | None = None) -> None:
        """Start the oldest queued executions of ``key`` while its slots allow; a slot taken
        meanwhile (here or on another server) ends it."""
        try:
            async with self._promoting.hold(key):
                again = True
                while again:
                    self._wanted.discard(key)
                    while await self._promote_one(key, limit):
                        pass
                    again = key in self._wanted
        finally:
            self._done_with(key)

    def _done_with(self, key: str) -> None:
        """Once nobody holds or waits for ``key``, a look asked for meanwhile runs."""
        if self._promoting.busy(key):
            return
        if key in self._wanted:
            self._wanted.discard(key)
            self._nursery.start_soon(self._promote_guarded, key, None)

    async def cancel_queued(self, execution_id: str, reason: str) -> None:
        """Cancel a queued execution: it ends ``cancelled`` without having started, and its
        place in the queue is given up (in the same commit)."""

        def cancelled(now: int) -> list[Event]:
            return [
                CancelRequested(seq=2, timestamp_ms=now, reason=reason),
                WorkflowCancelled(seq=3, timestamp_ms=now, reason=reason),
            ]

        await self._end_queued(execution_id, cancelled)

    async def terminate_queued(self, execution_id: str, reason: str) -> None:
        """Terminate a queued execution: it ends ``terminated`` at once without having
        started, and its place in the queue is given up (in the same commit)."""
        await self._end_queued(
            execution_id, lambda now: [WorkflowTerminated(seq=2, timestamp_ms=now, reason=reason)]
        )

    async def _end_queued(self, execution_id: str, ending: Callable[[int], list[Event]]) -> None:
        """Commit ``ending(now)`` after a queued execution's ``WorkflowCreated``; raises
        ExecutionQueuedError when it was promoted meanwhile (its actor takes the command)."""
        history = await self._store.history(execution_id)
        created = history[0] if history else None
        if not isinstance(created, WorkflowCreated) or created.flow is None:
            raise ExecutionQueuedError(execution_id)
        key = created.flow.key or ""
        try:
            async with self._promoting.hold(key):  # not while this server promotes it
                await self._end_queued_locked(execution_id, ending)
        finally:
            self._done_with(key)

    async def _end_queued_locked(
        self, execution_id: str, ending: Callable[[int], list[Event]]
    ) -> None:
        history = await self._store.history(execution_id)
        state, definition = await self._load.with_history(execution_id, history)
        if state.started or state.finished:
            raise ExecutionQueuedError(execution_id)  # promoted meanwhile: try again
        ended = ending(self._now_ms())
        final = replay([*history, *ended])
        row = row_of(final)
        row.started_at_ms, row.busy = history[0].timestamp_ms, False
        await self._store.commit(Commit(row, ended))
        self._supervisor.finished(final, definition)

    async def _promote_one(self, key: str, limit: int | None) -> bool:
        slots = await self._store.flow_slots(key, queued_limit=1)
        if not slots.queued or (limit is not None and len(slots.running) >= limit):
            return False
        execution_id = slots.queued[0]
        history = await self._store.history(execution_id)
        started = WorkflowStarted(seq=len(history) + 1, timestamp_ms=self._now_ms())
        state, definition = await self._load.with_history(execution_id, [*history, started])
        plan = definition.flow.concurrency
        if plan is None or state.started is False:
            return False
        try:
            with trio.CancelScope(shield=True):
                admit = Admission(key, plan.limit, promoting=True)
                await self._supervisor.create(state, definition, [started], admit)
        except ConcurrencyFull:
            return False
        return True


def _full_message(definition: CompiledDefinition, key: str, plan: ConcurrencyPlan) -> str:
    return (
        f"{definition.name}@{definition.version} already runs {plan.limit} executions of "
        f"concurrency key `{key}` (limit {plan.limit}, on_full: skip); nothing was started"
    )
