"""``one_for_one`` supervision of execution actors.

The supervisor runs the actors in the nursery it is given and keeps them in the registry, the
one address book ``execution_id -> mailbox``.
When an actor raises, it logs the crash, answers the command being handled with an error, throws
the actor's memory away and respawns it from its durable history on the same mailbox, so queued
commands survive and no other execution notices. Past the restart intensity (5 restarts in 60 s
by default) the execution is quarantined instead: kept, shown with its last error, and resumed
only by an explicit call.
"""

from __future__ import annotations

import itertools
import logging
from collections import deque
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Protocol

import trio

from ..actors.execution import ExecutionActor, ExecutionPorts
from ..errors import (
    ActorCrashedError,
    ExecutionNotFoundError,
    NotHereError,
    NotQuarantinedError,
    OrbitError,
    OwnershipLostError,
    QuarantinedError,
    StorageError,
)
from ..history.events import Event
from ..history.state import ExecutionState
from ..ir.plan import CompiledDefinition
from ..mailbox import Command, Mailbox
from ..store.base import Admission
from .actor_tasks import ActorTasks
from .registry import Registry

log = logging.getLogger("orbit.supervisor")
Loaded = tuple[ExecutionState, CompiledDefinition]


STORE_BACKOFF_CAP = 5.0
"""The longest wait, in seconds, before an actor stopped by a storage error is respawned."""


class Loader(Protocol):
    """Replays an execution from the store, or from its history already read."""

    def __call__(self, execution_id: str) -> Awaitable[Loaded]:
        """The state the stored history describes and its definition."""
        ...

    def from_history(self, execution_id: str, history: list[Event]) -> Loaded:
        """The state ``history`` describes and its definition."""
        ...

    async def with_history(self, execution_id: str, history: list[Event]) -> Loaded:
        """Like ``from_history``, refreshing the definitions first when it needs one not known."""
        ...


RECOVERY_BATCH = 256  # executions whose histories one read brings back after a restart


@dataclass(frozen=True)
class RestartIntensity:
    """At most ``max_restarts`` respawns ``within`` seconds before quarantine."""

    max_restarts: int = 5
    within: float = 60.0


@dataclass
class SupervisorStatistics:
    """Counters of the supervisor."""

    restarts: int = 0
    quarantines: int = 0
    passivations: int = 0
    awakenings: int = 0


class Supervisor:
    """Spawns, watches and respawns execution actors (see the module docstring)."""

    def __init__(
        self,
        nursery: trio.Nursery,
        registry: Registry,
        ports: ExecutionPorts,
        load: Loader,
        intensity: RestartIntensity = RestartIntensity(),
        recovered: Callable[[ExecutionState], None] = lambda state: None,
    ) -> None:
        self._nursery = nursery
        self._tasks = ActorTasks(nursery)  # actors run in the tasks of ended ones
        self.registry = registry
        self._ports = ports
        self.finished = ports.finished  # what an execution's end tells the rest
        self._load = load
        self._intensity = intensity
        self._recovered = recovered
        self._restarts: dict[str, deque[float]] = {}
        self.stats = SupervisorStatistics()
        self._coming_back: set[str] = set()  # brought back from history, not resumed yet
        self._awaited: list[tuple[set[str], trio.Event]] = []  # recover_busy's, until back

    @property
    def quarantined(self) -> dict[str, str]:
        """Quarantined executions and their last error."""
        return self.registry.quarantined

    def mailbox(self, execution_id: str) -> Mailbox[Command] | None:
        """The mailbox of a live actor, or None."""
        return self.registry.mailbox(execution_id)

    def spawn(self, state: ExecutionState, definition: CompiledDefinition) -> Mailbox[Command]:
        """Start an actor for ``state`` under supervision; returns its mailbox."""
        mailbox = self._register(state)
        self._tasks.start_soon(self._supervise, state, definition, mailbox, None, _Started(), None)
        return mailbox

    async def create(
        self,
        state: ExecutionState,
        definition: CompiledDefinition,
        created: list[Event],
        admit: Admission | None = None,
        hand_over: HandOver | None = None,
    ) -> None:
        """Start the actor of a new execution whose first events ``created`` are applied to
        ``state`` but not stored; returns once they are durable with the first decisions (a
        cancel waits until then: see :class:`_Started`). When
        that commit fails (a taken id: :class:`AlreadyStored`, a full concurrency key with
        ``admit``: :class:`ConcurrencyFull`, or a storage error) nothing was stored, the actor
        is gone and the error is raised here. With ``hand_over`` the caller, parked, is handed
        to it once the commit is durable instead of woken (see :data:`HandOver`)."""
        mailbox = self._register(state)
        started = _Started(hand_over)
        self._tasks.start_soon(self._supervise, state, definition, mailbox, created, started, admit)
        await started.wait()
        if started.error is not None:
            self.registry.remove(state.execution_id, mailbox)
            mailbox.close("never started")
            raise started.error

    async def recover_busy(self, execution_ids: Sequence[str]) -> None:
        """After a restart: bring back the dormant executions that had work in flight, a batch
        of histories per read, without waiting for each actor to start (one a command brought
        back meanwhile is skipped); returns once each has taken up what it held in flight (its
        workers' tokens: until then a worker may resume a session this server does not know)."""
        dormant = self.registry.dormant
        for first in range(0, len(execution_ids), RECOVERY_BATCH):
            batch = [i for i in execution_ids[first : first + RECOVERY_BATCH] if i in dormant]
            histories = await self.registry.histories(batch)
            for execution_id in batch:
                if execution_id in dormant:
                    self.registry.wake(execution_id, histories.get(execution_id, []))
            await trio.lowlevel.checkpoint()
        coming = {i for i in execution_ids if i in self._coming_back}
        if coming:
            back = trio.Event()
            self._awaited.append((coming, back))
            await back.wait()

    def _back(self, execution_id: str) -> None:
        """An execution brought back from history has resumed (or cannot be brought back)."""
        self._coming_back.discard(execution_id)
        for coming, back in self._awaited:
            coming.discard(execution_id)
            if not coming:
                back.set()
        self._awaited = [(coming, back) for coming, back in self._awaited if coming]

    def awaken(
        self, execution_id: str, mailbox: Mailbox[Command], history: list[Event] | None
    ) -> None:
        """Replay a dormant execution into an actor on ``mailbox`` (its ``history`` when
        already read); commands wait in the mailbox meanwhile."""
        self._coming_back.add(execution_id)
        self._tasks.start_soon(self._bring_back, execution_id, mailbox, history)

    async def _bring_back(
        self, execution_id: str, mailbox: Mailbox[Command], history: list[Event] | None
    ) -> None:
        try:
            try:
                if history is None:
                    state, definition = await self._load(execution_id)
                else:
                    state, definition = await self._load.with_history(execution_id, history)
            except StorageError as exc:  # the store is away: it still runs, and comes back
                state, definition = await self._after_storage_error(execution_id, exc, 1)
        except OrbitError as exc:  # its history is gone, or names a definition not stored
            log.error("execution %s cannot be brought back: %s", execution_id, exc)
            self.registry.remove(execution_id, mailbox)
            mailbox.close("not running", exc)
            self._back(execution_id)
            return
        self.stats.awakenings += 1
        self._recovered(state)
        back = _BroughtBack(partial(self._back, execution_id))
        await self._supervise(state, definition, mailbox, None, back, None)

    def _register(self, state: ExecutionState) -> Mailbox[Command]:
        return self.registry.add(state)

    async def resume(self, execution_id: str) -> None:
        """Respawn a quarantined execution from its history."""
        if execution_id not in self.registry.quarantined:
            raise NotQuarantinedError(f"execution `{execution_id}` is not quarantined")
        state, definition = await self._load(execution_id)
        del self.registry.quarantined[execution_id]
        self._restarts.pop(execution_id, None)
        self.spawn(state, definition)

    async def _supervise(
        self,
        state: ExecutionState,
        definition: CompiledDefinition,
        mailbox: Mailbox[Command],
        created: list[Event] | None,
        status: _Started,
        admit: Admission | None,
    ) -> None:
        # start_soon and an event rather than nursery.start: a task begun with start() keeps the
        # cancel status of its starting scope for its whole life, and actors live long
        execution_id = state.execution_id
        resumed = False
        storage_errors = 0  # met while in memory: each respawn waits longer (STORE_BACKOFF_CAP)
        while True:
            actor = ExecutionActor(self._ports, definition, state, mailbox)
            try:
                if resumed:
                    await actor.serve()
                else:
                    await actor.run(created, admit=admit, task_status=status)
            except OwnershipLostError as exc:
                self._lost(execution_id, mailbox, actor, exc)
                status.fail(exc) if created is not None and not actor.started else status.started()
                return
            except Exception as exc:
                if created is not None and not actor.started and actor.stored:
                    # its first commit is durable (publishing it failed, or what followed it):
                    # it started, and is respawned from its history like any crashed actor
                    status.started()
                elif created is not None and not actor.started:
                    status.fail(exc)  # the starter is told; nothing is known to be stored
                    found = await self._written_after_all(execution_id, exc, admit, mailbox)
                    if found is None:
                        return  # nothing was stored: there is nothing to respawn
                    state, definition = found
                    mailbox = self._register(state)
                    created, resumed = None, False
                    continue
                if actor.current is not None and actor.current.reply is not None:
                    failure = exc if isinstance(exc, StorageError) else None
                    actor.current.reply.fail(
                        failure or ActorCrashedError(f"execution `{execution_id}`", exc)
                    )
                if isinstance(exc, StorageError):  # the store's fault, not the execution's
                    storage_errors += 1
                    self.stats.restarts += 1
                    state, definition = await self._after_storage_error(
                        execution_id, exc, storage_errors
                    )
                    created, resumed = None, False
                    continue
                log.exception("execution %s crashed", execution_id)
                if self._spent(execution_id):
                    self._quarantine(execution_id, mailbox, exc)
                    status.started()
                    return
                self.stats.restarts += 1
                created = None
                try:
                    state, definition = await self._load(execution_id)
                except StorageError as away:
                    state, definition = await self._after_storage_error(execution_id, away, 1)
                continue
            if actor.passivated:
                if self.registry.passivate(execution_id, mailbox, actor.wake_at_ms):
                    self.stats.passivations += 1
                    return
                state, created, resumed = actor.state, None, True  # a command came: serve it
                definition = actor.definition  # a migration may have changed it
                continue
            self._gone(execution_id, mailbox)
            return

    async def _after_storage_error(
        self, execution_id: str, exc: StorageError, count: int
    ) -> tuple[ExecutionState, CompiledDefinition]:
        """An actor stopped because the store could not write (a full disk, a database failing
        over): respawned from what is durable once the store reads again, after a backoff, and
        never quarantined for it — the execution did nothing wrong."""
        if count == 1:
            log.warning("execution %s waits for the store: %s", execution_id, exc)
        for attempt in itertools.count(count - 1):
            await trio.sleep(min(STORE_BACKOFF_CAP, 0.1 * 2 ** min(attempt, 10)))  # a backoff
            try:
                return await self._load(execution_id)
            except StorageError as again:
                log.warning("execution %s still waits for the store: %s", execution_id, again)
        raise AssertionError("unreachable")

    async def _written_after_all(
        self, execution_id: str, exc: Exception, admit: Admission | None, first: Mailbox[Command]
    ) -> tuple[ExecutionState, CompiledDefinition] | None:
        """A new execution's first commit failed with a storage error. Its outcome may be
        unknown (the connection to PostgreSQL broke during ``COMMIT``, which may have landed):
        once the store reads again, the execution as written, to be run after all; None when it
        was not written (or was promoted from the queue, whose own retry takes it), or when
        another start of the same id came back with it meanwhile."""
        if not isinstance(exc, StorageError) or isinstance(exc, OwnershipLostError):
            return None  # a refusal, or a fenced commit: nothing of it was written
        if admit is not None and admit.promoting:
            return None
        try:
            state, definition = await self._after_storage_error(execution_id, exc, 1)
        except ExecutionNotFoundError:
            return None
        live = self.registry.mailbox_if_live(execution_id)
        if live not in (None, first) or execution_id in self.registry.dormant:
            return None
        if not state.started:
            return None  # queued for a slot of its concurrency key: the queue starts it
        log.warning("execution %s was written by the commit that failed: it runs", execution_id)
        return state, definition

    def _spent(self, execution_id: str) -> bool:
        now = trio.current_time()
        times = self._restarts.setdefault(execution_id, deque())
        times.append(now)
        while times and times[0] < now - self._intensity.within:
            times.popleft()
        return len(times) > self._intensity.max_restarts

    def _quarantine(self, execution_id: str, mailbox: Mailbox[Command], exc: BaseException) -> None:
        message = f"{type(exc).__name__}: {exc}"
        self.registry.quarantined[execution_id] = message
        self.stats.quarantines += 1
        log.error("execution %s quarantined after repeated crashes: %s", execution_id, message)
        self.registry.remove(execution_id, mailbox)
        mailbox.close("quarantined", QuarantinedError(_quarantined_message(execution_id, message)))

    def _lost(
        self, execution_id: str, mailbox: Mailbox[Command], actor: ExecutionActor,
        exc: OwnershipLostError,
    ) -> None:  # fmt: skip
        """Another server took the execution over (this one's lease expired): its commit was
        refused, and the actor stops without a respawn; commands waiting for it are told it
        runs elsewhere, so a forwarded one is sent on to the new owner."""
        log.warning("execution %s: %s", execution_id, exc)
        moved = NotHereError(execution_id)
        if actor.current is not None and actor.current.reply is not None:
            actor.current.reply.fail(moved)
        self.registry.remove(execution_id, mailbox)
        mailbox.close("owned by another server", moved)

    def _gone(self, execution_id: str, mailbox: Mailbox[Command]) -> None:
        self.registry.remove(execution_id, mailbox)
        mailbox.close("finished")


HandOver = Callable[[trio.lowlevel.Task], Callable[[], trio.lowlevel.Abort] | None]
"""Takes over a task parked until its execution's first commit, once that is durable (the
start of ``POST /v1/executions?wait``: it parks the task as the wait for the execution's end,
so the task is woken once instead of twice); returns the abort of its new wait, or None when
it cannot take it (the task is woken then, as usual)."""


class _Started:
    """The "started" signal of an actor's first step, given in place of a ``TaskStatus``:
    set once (a later call does nothing), with the error when a new execution never started.
    Waiting for it cannot be cancelled: whoever creates an execution must learn whether its
    first commit was made (a cancel scope shielding the wait cost as much as the rest of a
    start's bookkeeping). A cancel that comes while a ``hand_over`` holds the waiter (after
    the commit) ends that wait at once."""

    __slots__ = ("_abort_handed", "_done", "_hand_over", "_waiter", "error")

    def __init__(self, hand_over: HandOver | None = None) -> None:
        self._done = False
        self._waiter: trio.lowlevel.Task | None = None
        self.error: BaseException | None = None
        self._hand_over = hand_over
        self._abort_handed: Callable[[], trio.lowlevel.Abort] | None = None

    def started(self, value: None = None) -> None:
        if not self._done:
            self._done = True
            waiter, self._waiter = self._waiter, None
            if waiter is None:
                return
            if self._hand_over is not None and self.error is None:
                self._abort_handed = self._hand_over(waiter)
                if self._abort_handed is not None:
                    return  # woken by the wait it was handed to
            trio.lowlevel.reschedule(waiter)

    def fail(self, error: BaseException) -> None:
        self.error = error
        self.started()

    async def wait(self) -> None:
        if not self._done:
            self._waiter = trio.lowlevel.current_task()
            await trio.lowlevel.wait_task_rescheduled(self._abort)

    def _abort(self, raise_cancel: object) -> trio.lowlevel.Abort:
        if self._abort_handed is not None:  # handed over after the commit: that wait ends
            return self._abort_handed()
        self._hand_over = None  # before the commit: woken by it, the cancel comes after it
        return trio.lowlevel.Abort.FAILED


class _BroughtBack(_Started):
    """The "started" signal of an actor brought back from history: ``back`` is called once it
    has taken up what its execution held in flight."""

    __slots__ = ("_back",)

    def __init__(self, back: Callable[[], None]) -> None:
        super().__init__()
        self._back = back

    def started(self, value: None = None) -> None:
        if not self._done:
            super().started()
            self._back()


def _quarantined_message(execution_id: str, error: str) -> str:
    return (
        f"execution `{execution_id}` is quarantined after repeated crashes ({error}); "
        f"resume it with POST /v1/executions/{execution_id}/resume once the cause is fixed"
    )
