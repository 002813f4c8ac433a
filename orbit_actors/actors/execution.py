"""The execution actor: one trio task per active execution, owning its ``ExecutionState``.

It takes commands from its mailbox one at a time. For each: the pure command turns it into
events, the decider runs to a fixpoint, the batch is committed, and only then are the effects
published (tasks to the dispatcher, cancels to workers, replies to callers). Between commands it
sleeps until its own next wake-up. All workflow semantics live in :mod:`orbit_actors.decide`;
this module only carries them out.
"""

from __future__ import annotations

import secrets
from collections.abc import Awaitable, Callable, Coroutine
from contextlib import suppress
from dataclasses import dataclass
from functools import partial
from typing import Any, Protocol

import trio

from ..crashpoints import crash_point
from ..decide import operate
from ..decide import transitions as pure
from ..decide.compat import first_divergence, migrated_event, not_migrated
from ..decide.decider import decide_to_fixpoint, next_wakeup
from ..decide.effects import Effects, effects_of
from ..decide.invocation import (
    CHILD_SESSION,
    ChildInvocation,
    HttpInvocation,
    TaskInvocation,
    child_session,
    invocation,
)
from ..decide.operate import waits_for_unpause
from ..decide.query import evaluate_query
from ..decide.rest import Rest, rest_of
from ..errors import OrbitError, StorageError
from ..history.apply import apply, replay
from ..history.events import Event, StepDispatched, StepScheduled
from ..history.state import ExecutionState
from ..ir.plan import CompiledDefinition
from ..mailbox import Command, Mailbox
from ..store.base import (
    Admission,
    AlreadyStored,
    Commit,
    ConcurrencyFull,
    ExecutionRow,
    RateCharge,
    RateLimited,
    Store,
)
from ..store.group import WriteRequest
from ..views import ExecutionDetail, describe, row_of
from ..wire.server_fields import TaskFields
from . import commands as cmd
from .clock import Clock
from .pool import WorkerPort

RUNTIME_WORKER = "orbit-runtime"
RESTARTED = "runtime restarted while the built-in task was running"
UNRECORDED = "worker session ended before its result could be recorded"


class _RandomHex:
    """Unguessable hex from the OS's CSPRNG, read 4 KiB at a time: one ``getrandom`` call per
    256 tokens instead of one each (it was 2% of the runtime's CPU)."""

    def __init__(self) -> None:
        self._hex = ""
        self._at = 0

    def take(self, nbytes: int) -> str:
        """``nbytes`` random bytes as hex, never handed out twice."""
        end = self._at + 2 * nbytes
        if end > len(self._hex):
            self._hex, self._at, end = secrets.token_hex(4096), 0, 2 * nbytes
        piece = self._hex[self._at : end]
        self._at = end
        return piece


_random_hex = _RandomHex()


def new_token(execution_id: str) -> str:
    """A fresh dispatch token; it names its execution so results route without a global map."""
    return f"{_random_hex.take(8)}@{execution_id}"


def new_execution_id() -> str:
    """A random UUID (version 4) as text, like ``str(uuid.uuid4())`` from the same buffered
    random bytes as tokens (``uuid.UUID``'s Python constructor cost three times as much)."""
    return uuid4_text(_random_hex.take(16))


def uuid4_text(hex32: str) -> str:
    """The version-4 UUID made of 32 random hex digits, as ``str(uuid.UUID(bytes=...,
    version=4))`` writes it: the version nibble set to 4, the variant's two bits to ``10``."""
    variant = "89ab"[int(hex32[16], 16) & 3]
    return f"{hex32[:8]}-{hex32[8:12]}-4{hex32[13:16]}-{variant}{hex32[17:20]}-{hex32[20:32]}"


def execution_of(token: str) -> str | None:
    """The execution a token was issued for, or None for a malformed token."""
    _, at, execution_id = token.rpartition("@")
    return execution_id if at else None


def execution_status(state: ExecutionState) -> str:
    """The execution's status for the API: a continued run keeps the execution running."""
    return "running" if state.status == "continued_as_new" else state.status


@dataclass(frozen=True, slots=True)
class Passivation:
    """When a resting execution leaves memory: after ``idle_s`` seconds without a command, if
    it has nothing to do within ``near_s`` seconds (decide/rest.py says when it rests)."""

    idle_s: float = 10.0
    near_s: float = 60.0


@dataclass(frozen=True, slots=True)
class ExecutionPorts:
    """Everything an execution actor reaches outside itself, wired by ``open_runtime`` (a test
    passes fakes). None of these waits: each hands its work over and returns."""

    store: Store
    clock: Clock
    instance_id: str  # names this process's built-in pseudo session
    pool: WorkerPort
    """Ready task units, slots reserved and released, tasks pushed, results settled."""
    adopt: Callable[[str, str, TaskFields, int], None]
    """After a (re)spawn: a task a session held (session id, worker id, task, dispatched at)."""
    cancel_tokens: Callable[[dict[str, str]], None]
    """Stop these tokens at their workers or in the built-in runner (token → reason)."""
    start_child: Callable[[ExecutionState, ChildInvocation], None]
    """Start (idempotently) the child of a dispatched workflow unit and watch it."""
    cancel_child: Callable[[str, str], None]
    """Cancel a child the parent no longer waits for (child id, reason)."""
    terminate_child: Callable[[str, str], None]
    """Terminate a running child of a terminated parent (child id, reason)."""
    run_http: Callable[[str, HttpInvocation], None]
    """Run a dispatched built-in http unit under its token."""
    committed: Callable[[ExecutionState, list[Event], float], None]
    """A batch became durable after so many seconds (the observers: metrics, logs, traces)."""
    finished: Callable[[ExecutionState, CompiledDefinition], None]
    """The execution ended for good: wake its waiters, tell its parent."""
    passivation: Passivation | None = None
    """When a resting execution leaves memory (None: it stays until it ends)."""
    soon: CommitsSoon | None = None
    """The store again, when it takes a commit without the actor waiting on it (see
    :meth:`ExecutionActor._settle`); None: every commit is awaited."""


class CommitsSoon(Protocol):
    """A store whose commits can be handed over without waiting (the SQL stores' group
    writer: :meth:`~orbit_actors.store.group.GroupWriter.commit_soon`)."""

    def commit_soon(
        self, commit: Commit, then: Callable[[BaseException | None], None]
    ) -> WriteRequest | None:
        """Hand ``commit`` over; ``then`` is told its outcome. None: await the commit instead."""
        ...

    def take_watch(self, request: WriteRequest) -> Awaitable[None]:
        """For the task of a commit handed over, rescheduled before its outcome: watch for it."""
        ...


class _Handed:
    """A commit handed to the store while its actor is parked on a wait of its own; whichever
    task hands the outcome out publishes the batch (:meth:`ExecutionActor._durable`)."""

    __slots__ = (
        "answer", "answered", "batch", "began", "cancelled", "claimed", "crash", "error", "known",
        "parked", "reported", "request", "runtime_units", "task",
    )  # fmt: skip

    def __init__(
        self, batch: list[Event], claimed: list[TaskFields], reported: str | None, began: float,
        answer: Callable[[], None], request: WriteRequest,
    ) -> None:  # fmt: skip
        self.batch = batch
        self.claimed = claimed
        self.reported = reported
        self.began = began
        self.answer = answer  # tells the command's caller, once the batch is published
        self.request = request
        self.task = trio.lowlevel.current_task()
        self.known = False  # its outcome was handed out
        self.error: BaseException | None = None  # the commit's
        self.crash: BaseException | None = None  # raised while publishing it
        self.runtime_units: list[HttpInvocation | ChildInvocation] = []
        self.answered = False  # published and answered: the actor waits for its next command
        self.parked = False
        self.cancelled = False  # a cancel came before the outcome


class ExecutionActor:
    """Carries out one execution. Spawned (and respawned) by the supervisor with the state its
    durable history describes."""

    def __init__(
        self,
        ports: ExecutionPorts,
        definition: CompiledDefinition,
        state: ExecutionState,
        mailbox: Mailbox[Command],
    ) -> None:
        self.ports = ports
        self.definition = definition
        self.state = state
        self.mailbox = mailbox
        self.current: Command | None = None
        self.started = False
        self.stored = False  # a commit of it is durable (a new execution's first: it exists)
        self.passivated = False  # it ended its run because it rests (it is not finished)
        self.wake_at_ms: int | None = None  # when it next needs deciding, as last computed
        self._rest: tuple[ExecutionState, int, Rest] | None = None  # (state, its seq, rest)
        self._handed: _Handed | None = None  # a commit handed over, while its actor waits

    @property
    def execution_id(self) -> str:
        """The execution this actor carries out."""
        return self.state.execution_id

    @property
    def done(self) -> bool:
        """True once the execution has ended for good."""
        return self.state.finished and self.state.status != "continued_as_new"

    async def run(
        self,
        created: list[Event] | None = None,
        *,
        admit: Admission | None = None,
        task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        """Pick up what the state holds (then report started), then serve commands and wake-ups
        until the end. ``created`` are the first events of a new execution, already applied to
        the state and not yet stored: they are committed with the first decisions, and a taken
        id raises :class:`AlreadyStored` before the actor reports started. With ``admit`` that
        commit takes a slot of a concurrency key (a queued execution's, when promoting) or
        raises :class:`ConcurrencyFull`."""
        if created is None:
            await self.resume()
        else:
            create = admit is None or not admit.promoting

            def answer() -> None:
                self.started = True
                task_status.started()

            await self._settle(created, create=create, admit=admit, answer=answer)
            created.clear()  # the caller's frames keep the list for the actor's whole life
        if not self.started:  # (answered once the commit was published, when handed over)
            self.started = True
            task_status.started()
        await self.serve()

    async def serve(self) -> None:
        """Serve commands and wake-ups until the end, or until the execution rests long enough
        to leave memory (then :attr:`passivated` is True). A command is handled here rather
        than in a coroutine of its own, and one already waiting (the usual case: a handed
        commit leaves the actor parked until its next command) is taken without :meth:`_next`:
        each is a coroutine frame more to make, and to pass through at every wait."""
        mailbox = self.mailbox
        while not self.done:
            # (no WouldBlock raised and caught per command)
            command = mailbox.receive_nowait() if mailbox.ready else await self._next()
            if command is _PASSIVATE:
                self.passivated = True
                return
            self.current = command
            if command is None:
                await self._advance([])
                self.current = None
                continue
            handler = _HANDLERS[type(command)]  # a command no handler knows is a bug: crash
            try:
                value = await handler(self, command)
            except StorageError:
                # the store failed, or a commit's outcome is unknown (the connection broke
                # during COMMIT): memory may hold what is not durable, or miss what is. The
                # actor stops; the supervisor answers the command and respawns it from the
                # store, which re-publishes what is in flight (another server owning it now:
                # it stops for good)
                raise
            except OrbitError as exc:
                if command.reply is None:
                    raise
                command.reply.fail(exc)
            else:
                if command.reply is not None:
                    command.reply.set(value)
            self.current = None

    async def _next(self) -> Command | None:
        """The next command when none is waiting (see :meth:`serve`), None when the state's
        own wake-up comes first, or :data:`_PASSIVATE` when the execution rests and no command
        came for a while."""
        mailbox = self.mailbox
        policy = self.ports.passivation
        if policy is not None:
            rest = self._rest_now()
            wake = self.wake_at_ms = rest.wake_at_ms
            if rest.rests:
                return await self._idle(wake, policy)
        else:
            wake = next_wakeup(self.state, self.definition)
        if wake is None:  # nothing to wake up for: no cancel scope to keep while waiting
            return await mailbox.receive()
        clock = self.ports.clock
        if wake <= clock.now_ms():
            return None
        with trio.move_on_at(clock.deadline(wake)):
            return await mailbox.receive()
        return None

    async def _idle(self, wake: int | None, policy: Passivation) -> Command | None:
        """Wait for a command while resting: the wake-up, if it is near, or passivation once
        ``idle_s`` pass without one (no await follows the decision: no command can slip in)."""
        clock = self.ports.clock
        now = clock.now_ms()
        if wake is not None and wake <= now:
            return None
        near = wake is not None and wake - now <= 1000 * max(policy.near_s, policy.idle_s)
        until = wake if near and wake is not None else now + int(1000 * policy.idle_s)
        with trio.move_on_at(clock.deadline(until)):
            return await self.mailbox.receive()
        return None if near else _PASSIVATE

    # -- commands ------------------------------------------------------------------------
    async def _on_signal(self, c: cmd.DeliverSignal) -> int:
        events = pure.receive_signal(self.state, self.definition, c.name, c.payload, self._now())
        await self._advance(events)
        return events[0].seq

    async def _on_cancel(self, c: cmd.RequestCancel) -> None:
        await self._advance(pure.request_cancel(self.state, self.definition, c.reason, self._now()))

    async def _on_terminate(self, c: cmd.Terminate) -> None:
        await self._advance(operate.terminate(self.state, c.reason, self._now()))

    async def _on_pause(self, c: cmd.Pause) -> None:
        await self._advance(operate.pause(self.state, c.reason, self._now()))

    async def _on_unpause(self, c: cmd.Unpause) -> None:
        await self._advance(operate.unpause(self.state, self.execution_id, self._now()))

    async def _on_result(self, c: cmd.ReportResult) -> pure.Verdict:
        now = self.ports.clock.now_ms()
        events, verdict = pure.report_result(
            self.state, self.definition, c.token, now=now, worker_id=c.worker_id,
            output=c.output, failure=c.failure,
        )  # fmt: skip
        # the worker is done with the token: its slot is free before the decisions, so a unit
        # this result makes ready can take it in the same commit
        held = self.ports.pool.settle(c.token)
        reply = c.reply
        answer = _nobody if reply is None else partial(reply.set, verdict)
        try:
            await self._advance(events, reported=c.token, now=now, answer=answer)
        except StorageError:
            if held is not None and not self.ports.pool.restore(held):
                self._lost(c.token)  # not recorded, and its session is gone: redeliver
            raise
        return verdict

    async def _on_offer(self, c: cmd.OfferDispatch) -> None:
        crash_point("answer-before-dispatch")
        now = self._now()
        events = pure.dispatch(
            self.state, self.definition, c.key, attempt=c.attempt, token=c.token,
            worker_id=c.worker_id, session=c.session_id, now=now,
        )  # fmt: skip
        pool = self.ports.pool
        charges = None if events is None else self._charges(c.key, now)
        if events is None or charges is None:
            pool.release(c.token)
            return
        try:
            await self._advance(events, charges=charges, now=now)
        except RateLimited:
            pool.release(c.token)
            self._hold(c.key)
            return
        except StorageError:
            pool.release(c.token)
            raise
        found = invocation(self.state, self.definition, c.key)
        dispatched = events[0]
        if isinstance(found, TaskInvocation) and isinstance(dispatched, StepDispatched):
            pool.push(self._task(found, dispatched.token, dispatched.deadline_ms), self._now())

    def _charges(self, key: str, now: int) -> tuple[RateCharge, ...] | None:
        """What a dispatch of unit ``key`` at ``now`` charges against its task's rate limit
        (the store counts it in the dispatch's commit); None when this server already knows it
        is over the limit (the pool keeps the unit until the window opens)."""
        if not self.definition.flow.rate_limits:
            return ()
        found = invocation(self.state, self.definition, key)
        if not isinstance(found, TaskInvocation) or found.rate is None:
            return ()
        if not self.ports.pool.take_rate(self.execution_id, found, now):
            return None
        return (RateCharge(found.rate, now),)

    def _hold(self, key: str) -> None:
        """The store refused unit ``key``'s dispatch over its rate limit: the pool keeps it
        until the window the store named opens."""
        found = invocation(self.state, self.definition, key)
        if isinstance(found, TaskInvocation) and found.rate is not None:
            self.ports.pool.hold(self.execution_id, found, self._now())

    async def _on_remote_offer(self, c: cmd.RemoteOffer) -> TaskFields | None:
        """A unit claimed by another server for its worker: dispatched to that worker's session
        here, the task returned for that server to push (None: stale, or over its rate limit;
        then this server keeps it until the window opens)."""
        now = self._now()
        events = pure.dispatch(
            self.state, self.definition, c.key, attempt=c.attempt, token=c.token,
            worker_id=c.worker_id, session=c.session_id, now=now,
        )  # fmt: skip
        charges = None if events is None else self._charges(c.key, now)
        if events is None or charges is None:
            return None
        try:
            await self._advance(events, charges=charges, now=now)
        except RateLimited:
            self._hold(c.key)
            return None
        found = invocation(self.state, self.definition, c.key)
        dispatched = events[0]
        if isinstance(found, TaskInvocation) and isinstance(dispatched, StepDispatched):
            return self._task(found, dispatched.token, dispatched.deadline_ms)
        return None

    async def _on_uncertain(self, c: cmd.MarkUncertain) -> None:
        await self._advance(pure.attempt_uncertain(self.state, c.token, c.reason, self._now()))

    async def _on_child_ended(self, c: cmd.ChildEnded) -> None:
        events = pure.child_finished(
            self.state, c.key, workflow=self._child_name(c.key), child_id=c.child_id,
            status=c.status, output=c.output, failure=c.failure, now=self._now(),
        )  # fmt: skip
        await self._advance(events)

    async def _on_child_not_started(self, c: cmd.ChildNotStarted) -> None:
        events = pure.child_start_failed(
            self.state, c.key, c.message, self._now(), child_id=c.child_id
        )
        await self._advance(events)

    async def _on_migrate(self, c: cmd.MigrateTo) -> dict[str, Any]:
        """Record ``DefinitionMigrated`` and go on under the new definition, if the durable
        history (the state's, since this actor is its only writer) is compatible with it."""
        state = self.state
        if state.version != c.from_version or self.done:
            return not_migrated(state.version, self.done)
        history = await self.ports.store.history(self.execution_id)
        found = first_divergence(history, c.definition, c.definitions)
        if found is not None:
            return {"migrated": False, "first_divergent_seq": found.seq, "reason": found.candidate}
        event = migrated_event(state, c.definition, self._now())
        previous, self.definition = self.definition, c.definition
        try:
            await self._advance([event])
        except BaseException:
            self.definition = previous  # nothing durable: the run stays on its version
            raise
        return {"migrated": True, "first_divergent_seq": None, "reason": None}

    async def _on_query(self, c: cmd.RunQuery) -> Any:
        return evaluate_query(self.state, self.definition, c.name)

    async def _on_describe(self, c: cmd.Describe) -> ExecutionDetail:
        return describe(self.state, self.definition)

    # -- the cycle: decide, commit, publish ------------------------------------------------
    def _advance(
        self,
        command_events: list[Event],
        reported: str | None = None,
        charges: tuple[RateCharge, ...] = (),
        now: int | None = None,
        answer: Callable[[], None] | None = None,
    ) -> Coroutine[Any, Any, list[Event]]:
        """Apply command events, then (awaited) decide to the fixpoint, commit, and publish the
        effects (``reported`` is a token whose worker just answered: it needs no cancel). With
        ``charges`` (the command is a dispatch) a commit the store refuses over a rate limit
        leaves the state as durable and raises :class:`RateLimited`. ``now`` is the time the
        command's events were made at, when read in the same step (the decisions take it too).
        ``answer`` tells the command's caller (see :meth:`_settle`).
        Not a coroutine itself: every command goes through here, and a coroutine frame more
        is created and resumed through at each of its waits (every caller awaits at once)."""
        for event in command_events:
            apply(self.state, event)
        return self._settle(command_events, reported, charges=charges, now=now, answer=answer)

    async def _settle(
        self,
        applied: list[Event],
        reported: str | None = None,
        *,
        create: bool = False,
        admit: Admission | None = None,
        charges: tuple[RateCharge, ...] = (),
        claim_rated: bool = True,
        now: int | None = None,
        answer: Callable[[], None] | None = None,
    ) -> list[Event]:
        """Decide to the fixpoint after ``applied`` (already in the state), commit, publish.
        A unit dispatched in the same commit charges its rate limit there too; when the store
        refuses that, the batch is decided again without dispatching rate-limited units (they
        wait in the pool), so the rest of it is not held up.

        With ``answer`` (what tells the command's caller: its caller calls it again later, a
        second answer that changes nothing) and a store that takes it (``ports.soon``), the
        commit is handed over without the actor waiting on it: the task that hands its outcome
        out publishes the batch and answers (:meth:`_durable`), and the actor, parked all the
        while, is woken only by its next command, one task step per command instead of two.
        It is woken at once when more than publishing remains (an error, built-in units to
        dispatch, the end, a wake-up or rest of its own to wait for)."""
        state = self.state
        clock = self.ports.clock
        if now is None:
            now = clock.now_ms()
        decided = decide_to_fixpoint(state, self.definition, now)
        batch = [*applied, *decided]
        if not batch:
            return batch
        claimed, charged = self._claim_free_workers(batch, now, claim_rated)
        rates = charges + charged
        ports = self.ports
        pool = ports.pool
        commit = Commit(self._row(state), batch, False, create, admit, rates)  # positional: cheaper
        began = clock.seconds()  # what _commit does, without a coroutine of its own (every batch)
        handed: _Handed | None = None
        try:
            soon = ports.soon
            request = None
            if answer is not None and soon is not None:
                request = soon.commit_soon(commit, self._durable)
            if answer is None or soon is None or request is None:
                await ports.store.commit(commit)
            else:  # parked until _durable wakes the actor, or its next command does
                handed = self._handed = _Handed(batch, claimed, reported, began, answer, request)
                handed.parked = True
                await trio.lowlevel.wait_task_rescheduled(self._abort_handed)
                handed.parked = False
                if not handed.known:  # rescheduled to watch for its own outcome (and others')
                    await soon.take_watch(request)
                self._handed = None
                if handed.error is not None:
                    raise handed.error
        except (StorageError, AlreadyStored, ConcurrencyFull, RateLimited) as exc:
            for task in claimed:
                pool.release(task["token"])
            limited = exc if isinstance(exc, RateLimited) else None
            pool.rates_not_taken(rates, limited)
            if limited is None:
                raise
            await self._restore([] if charges else applied, create)
            if charges:
                raise
            return await self._settle(
                applied, reported, create=create, admit=admit, claim_rated=False
            )
        self.stored = True
        if handed is None:
            ports.committed(state, batch, clock.seconds() - began)
            runtime_units = self._published(batch, claimed, reported)
        elif handed.crash is not None:
            raise handed.crash
        elif handed.answered:
            return batch
        else:
            runtime_units = handed.runtime_units
        if runtime_units:
            await self._dispatch_to_runtime(runtime_units)
        if self.done:
            ports.finished(self.state, self.definition)
        if state.status == "continued_as_new":
            await self._roll_over()
        return batch

    def _abort_handed(self, raise_cancel: object) -> trio.lowlevel.Abort:
        handed = self._handed
        assert handed is not None
        if not handed.known:  # the outcome first (the cancel is seen at the next checkpoint)
            handed.cancelled = True
            return trio.lowlevel.Abort.FAILED
        self.mailbox.forget_receiver()  # published and answered: waiting for a command
        self._handed = None
        return trio.lowlevel.Abort.SUCCEEDED

    def _durable(self, error: BaseException | None) -> None:
        """The outcome of a commit handed over by :meth:`_settle`, in the task that hands it
        out (it must not raise there: what publishing raises is raised in the actor). Once
        durable the batch is published, then, when nothing else remains, the command answered
        and the actor left parked until its next command; otherwise the actor is woken."""
        handed = self._handed
        assert handed is not None
        handed.known, handed.error = True, error
        try:
            if error is None:
                ports = self.ports
                ports.committed(self.state, handed.batch, ports.clock.seconds() - handed.began)
                units = handed.runtime_units = self._published(
                    handed.batch, handed.claimed, handed.reported
                )
                if not units and not self.state.finished:  # (a run continued as new too)
                    handed.answer()
                    handed.answered = True
            if not handed.parked:  # it took the watch: this is its own step
                return
            if handed.answered and not handed.cancelled and self._waits_for_commands_only():
                self.mailbox.wake_on_command(handed.task)
                return
        except BaseException as exc:
            handed.crash = exc
            handed.answered = False
            if not handed.parked:
                return
        trio.lowlevel.reschedule(handed.task)

    def _waits_for_commands_only(self) -> bool:
        """True when the actor's next wait (:meth:`_next`) would be for a command alone: none
        is waiting, and the state has no wake-up of its own and does not rest."""
        if self.mailbox.ready:
            return False
        if self.ports.passivation is not None:
            rest = self._rest_now()
            return rest.wake_at_ms is None and not rest.rests
        return next_wakeup(self.state, self.definition) is None

    def _published(
        self, batch: list[Event], claimed: list[TaskFields], reported: str | None
    ) -> list[HttpInvocation | ChildInvocation]:
        """Publish a durable batch: the tasks it claimed pushed to their sessions, its effects
        handed out (``reported``'s worker answered: it needs no cancel); returns the ready
        built-in units for :meth:`_dispatch_to_runtime`."""
        if claimed:
            pool = self.ports.pool
            now = self.ports.clock.now_ms()
            for task in claimed:
                pool.push(task, now)
        effects = effects_of(self.state, self.definition, batch)
        effects.cancel_tokens.pop(reported or "", None)
        return self._publish(effects)

    def _claim_free_workers(
        self, batch: list[Event], now: int, claim_rated: bool
    ) -> tuple[list[TaskFields], tuple[RateCharge, ...]]:
        """Task units scheduled by this batch that a session can take right now are dispatched
        in the same commit (one fsync instead of two), with what they charge against their
        rate limits (none when not ``claim_rated``); the others wait in the pool's queues."""
        claimed: list[TaskFields] = []
        charged: list[RateCharge] = []
        pool = self.ports.pool
        for event in batch[:]:  # dispatches are appended as they are made
            if not isinstance(event, StepScheduled):
                continue
            found = invocation(self.state, self.definition, event.step)
            if (
                not isinstance(found, TaskInvocation)
                or self.state.units[event.step].status != "scheduled"
                or (found.rate is not None and not claim_rated)
            ):
                continue
            token = new_token(self.state.execution_id)
            match = pool.claim(found, token, now)
            if match is None:
                continue
            session_id, worker_id = match
            events = pure.dispatch(
                self.state, self.definition, found.key, token=token, worker_id=worker_id,
                session=session_id, now=now,
            )  # fmt: skip
            if not events or not isinstance(events[0], StepDispatched):
                pool.release(token)
                continue
            apply(self.state, events[0])
            batch.append(events[0])
            claimed.append(self._task(found, token, events[0].deadline_ms))
            if found.rate is not None:
                charged.append(RateCharge(found.rate, now))
        return claimed, tuple(charged)

    async def _commit(self, commit: Commit) -> None:
        seconds = self.ports.clock.seconds
        began = seconds()
        # a StorageError stops the actor (see serve): its memory is replayed from the store
        await self.ports.store.commit(commit)
        self.ports.committed(self.state, commit.events, seconds() - began)

    async def _restore(self, applied: list[Event], create: bool) -> None:
        """Memory goes back to what is durable (nothing, for a new execution) and ``applied``
        after it: a commit was refused whole, and nothing of it was written."""
        durable = [] if create else await self.ports.store.history(self.execution_id)
        self.state = replay([*durable, *applied])

    async def _roll_over(self) -> None:
        first = pure.next_run_events(self.state, self._now())
        next_state = replay(first)
        await self._commit(Commit(row_of(next_state), first, rollover=True))
        self.state = next_state

    def _publish(self, effects: Effects) -> list[HttpInvocation | ChildInvocation]:
        """Hand a committed batch's effects out; returns the ready built-in units (http, child)
        for :meth:`_dispatch_to_runtime`, whose commit the caller awaits (a plain call: every
        batch publishes, few dispatch to the runtime)."""
        ports = self.ports
        if effects.cancel_tokens:
            ports.cancel_tokens(effects.cancel_tokens)
        for child_id, reason in effects.cancel_children.items():
            ports.cancel_child(child_id, reason)
        for child_id, reason in effects.terminate_children.items():
            ports.terminate_child(child_id, reason)
        for withdrawn in effects.withdrawn:
            ports.pool.withdraw(self.execution_id, withdrawn)
        runtime_units: list[HttpInvocation | ChildInvocation] = []
        for ready in effects.ready:
            if isinstance(ready, TaskInvocation):
                ports.pool.enqueue(self.execution_id, ready)
            else:
                runtime_units.append(ready)
        return runtime_units

    async def _dispatch_to_runtime(self, units: list[HttpInvocation | ChildInvocation]) -> None:
        """Built-in http and child units are dispatched to the runtime's pseudo sessions."""
        started: list[tuple[HttpInvocation | ChildInvocation, str]] = []
        batch: list[Event] = []
        for unit in units:
            token = new_token(self.execution_id)
            session = (
                child_session(unit.execution_id)
                if isinstance(unit, ChildInvocation)
                else f"builtin:{self.ports.instance_id}"
            )
            events = pure.dispatch(
                self.state, self.definition, unit.key, token=token, worker_id=RUNTIME_WORKER,
                session=session, now=self._now(),
            )  # fmt: skip
            if events:
                for event in events:
                    apply(self.state, event)
                batch += events
                started.append((unit, token))
        if not batch:
            return
        await self._commit(Commit(self._row(self.state), batch))
        for unit, token in started:
            if isinstance(unit, ChildInvocation):
                self.ports.start_child(self.state, unit)
            else:
                self.ports.run_http(token, unit)

    async def resume(self) -> None:
        """After a (re)spawn: re-publish what the state holds in flight, then catch up."""
        if self.state.status == "continued_as_new":
            await self._roll_over()
        if self.done:
            return
        for unit in list(self.state.units.values()):
            if unit.resolved:
                continue
            if waits_for_unpause(self.state, self.definition, unit):
                continue  # the unpause makes it ready
            found = invocation(self.state, self.definition, unit.key)
            token, session = unit.current_token, unit.session
            if unit.status == "dispatched" and token and session:
                await self._readopt(token, session, unit.worker_id, unit.dispatched_at_ms, found)
            elif unit.status == "scheduled" and isinstance(found, TaskInvocation):
                self.ports.pool.enqueue(self.execution_id, found)
            elif unit.status == "scheduled" and isinstance(found, HttpInvocation | ChildInvocation):
                await self._dispatch_to_runtime([found])
        await self._advance([])

    async def _readopt(
        self, token: str, session: str, worker_id: str | None, dispatched_at: int | None, found: Any
    ) -> None:
        """A unit in flight when the actor was (re)spawned: a built-in attempt cut by a restart
        is uncertain at once; a child is watched again; a worker's token waits for its session."""
        if session.startswith("builtin:"):
            if session != f"builtin:{self.ports.instance_id}":
                await self._advance(
                    pure.attempt_uncertain(self.state, token, RESTARTED, self._now())
                )
        elif session.startswith(CHILD_SESSION):
            if isinstance(found, ChildInvocation):
                self.ports.start_child(self.state, found)
        elif isinstance(found, TaskInvocation):
            unit = self.state.units[found.key]
            task = self._task(found, token, unit.deadline_ms)
            self.ports.adopt(session, worker_id or "", task, dispatched_at or self._now())

    # -- helpers -------------------------------------------------------------------------
    def _row(self, state: ExecutionState) -> ExecutionRow:
        """The summary row with the wake-up index's fields (decide/rest.py)."""
        row = row_of(state)
        rest = rest_of(state, self.definition)
        self._rest = (state, state.last_seq, rest)
        row.wake_at_ms, row.busy = rest.wake_at_ms, rest.busy
        return row

    def _rest_now(self) -> Rest:
        """How the state rests, as the last commit's row worked it out when no event came
        since (every change of the state is an event, and each takes the next seq)."""
        state = self.state
        cached = self._rest
        if cached is not None and cached[0] is state and cached[1] == state.last_seq:
            return cached[2]
        return rest_of(state, self.definition)

    def _lost(self, token: str) -> None:
        """A result that was not recorded, from a session that has ended since: the attempt
        becomes uncertain once the actor has its store back."""
        with suppress(OrbitError):
            self.mailbox.send_nowait(cmd.MarkUncertain(token, UNRECORDED))

    def _now(self) -> int:
        return self.ports.clock.now_ms()

    def _child_name(self, key: str) -> str:
        unit = self.state.units.get(key)
        plan = self.definition.plans.get(unit.step_id if unit else "")
        return (plan.step.workflow or "") if plan else ""

    def _task(self, found: TaskInvocation, token: str, deadline_ms: int | None) -> TaskFields:
        state = self.state
        return {
            "type": "task", "token": token, "execution_id": state.execution_id,
            "workflow": state.workflow, "workflow_version": state.version, "step_id": found.key,
            "task_name": found.task_name, "contract_version": found.contract_version,
            "input": found.input, "idempotency_key": found.idempotency_key,
            "attempt": found.attempt, "redelivery": found.redelivery, "deadline_ms": deadline_ms,
            "timeout_ms": found.timeout_ms, "resent": False,
        }  # fmt: skip


def _nobody() -> None:
    """The answer to a command nobody waits for."""


_PASSIVATE = Command()
"""What :meth:`ExecutionActor._next` answers when the execution should leave memory."""

_HANDLERS: dict[type[Command], Callable[[ExecutionActor, Any], Awaitable[Any]]] = {
    cmd.DeliverSignal: ExecutionActor._on_signal,
    cmd.RequestCancel: ExecutionActor._on_cancel,
    cmd.Terminate: ExecutionActor._on_terminate,
    cmd.Pause: ExecutionActor._on_pause,
    cmd.Unpause: ExecutionActor._on_unpause,
    cmd.ReportResult: ExecutionActor._on_result,
    cmd.OfferDispatch: ExecutionActor._on_offer,
    cmd.RemoteOffer: ExecutionActor._on_remote_offer,
    cmd.MarkUncertain: ExecutionActor._on_uncertain,
    cmd.ChildEnded: ExecutionActor._on_child_ended,
    cmd.ChildNotStarted: ExecutionActor._on_child_not_started,
    cmd.RunQuery: ExecutionActor._on_query,
    cmd.Describe: ExecutionActor._on_describe,
    cmd.MigrateTo: ExecutionActor._on_migrate,
}
"""One handler per command type (a table, not an ``elif`` chain); shared by every actor."""
