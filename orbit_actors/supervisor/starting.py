"""Starting executions: top-level starts, children of workflow units and schedule occurrences.

A start checks the id, waits for a start of the same id already under way (its outcome decides
this one), refuses past ``max_active_executions`` (roots only, counted by the registry), and has
the supervisor create the actor, which commits the first events with its first decisions.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import trio

from ..actors import commands as cmd
from ..actors.execution import new_execution_id
from ..actors.schedule import ScheduleSpec
from ..decide import transitions as pure
from ..decide.invocation import ChildInvocation
from ..decide.transitions import ServerLimits
from ..errors import (
    ExecutionExistsError,
    InternalError,
    InvalidInputError,
    OrbitError,
    ResourceExhaustedError,
    WorkflowNotFoundError,
)
from ..history.apply import replay
from ..history.events import EffectiveLimits, Event, ParentRef, WorkflowCreated
from ..history.state import ExecutionState
from ..ir.plan import CompiledDefinition
from ..store.base import TERMINAL_STATUSES, AlreadyStored, ExecutionRow, Store
from ..store.definitions import DefinitionRegistry
from .flow_starts import FlowStarts
from .loading import Loader
from .registry import Registry
from .supervisor import HandOver, Supervisor

AdoptWait = Callable[[str, trio.lowlevel.Task, float], Callable[[], trio.lowlevel.Abort] | None]
"""``Waiters.adopt``: parks a start's caller as a wait for its execution's end until a time."""


@dataclass(frozen=True)
class StartLimits:
    """Server-wide limits a start applies."""

    limits: ServerLimits
    max_active_executions: int | None = None


class Starter:
    """Starts executions under ``supervisor``; children are started from tasks of ``nursery``."""

    def __init__(
        self, nursery: trio.Nursery, supervisor: Supervisor, definitions: DefinitionRegistry,
        store: Store, load: Loader, now_ms: Callable[[], int], limits: StartLimits,
        adopt_wait: AdoptWait | None = None,
    ) -> None:  # fmt: skip
        self._nursery = nursery
        self._supervisor = supervisor
        self._registry: Registry = supervisor.registry
        self._definitions = definitions
        self._store = store
        self._load = load
        self._now_ms = now_ms
        self._limits = limits
        self._adopt_wait = adopt_wait
        self.flow = FlowStarts(nursery, supervisor, store, load, now_ms)
        self._starting: dict[str, trio.Event | None] = {}  # ids being started: set when done
        self._effective: dict[str, EffectiveLimits] = {}  # by definition hash

    async def start(
        self,
        workflow: str,
        version: str | None = None,
        input: Any = None,
        execution_id: str | None = None,
        parent: ParentRef | None = None,
        schedule_id: str | None = None,
        until: float | None = None,
    ) -> tuple[str, bool]:
        """Start an execution; returns (execution_id, created). An existing id of the same
        definition answers created=False. (Not keyword-only: ``Runtime.start`` passes its
        arguments on by position, half the cost of keywords on every start.) With ``until``
        (a trio time) the caller waits for the execution's end next: a new execution's first
        commit hands it to that wait (``adopt_wait``), so it returns from here at the end or at
        ``until``, woken once, and its wait answers at once."""
        try:  # the definitions known here, without a coroutine of its own (every start)
            definition = self._definitions.resolve(workflow, version)
        except WorkflowNotFoundError:
            definition = await self._refreshed(workflow, version)
        execution_id = execution_id or new_execution_id()
        pure.check_execution_id(execution_id)
        starting = self._starting
        while execution_id in starting:  # the same id being started: its outcome decides this
            busy = starting[execution_id]
            if busy is None:  # the first to wait makes the event (most starts have no twin)
                busy = starting[execution_id] = trio.Event()
            await busy.wait()
        starting[execution_id] = None
        hand_over: HandOver | None = None
        handed = False
        if until is not None and self._adopt_wait is not None:
            adopt = self._adopt_wait

            def hand_over(task: trio.lowlevel.Task) -> Callable[[], trio.lowlevel.Abort] | None:
                nonlocal handed
                abort = adopt(execution_id, task, until)
                if abort is not None:  # the start is decided: a twin need not wait for the end
                    handed = True
                    self._started(execution_id)
                return abort

        try:
            return await self._start_once(
                definition, execution_id, input, parent, schedule_id, hand_over
            )
        finally:
            if not handed:
                self._started(execution_id)

    def _started(self, execution_id: str) -> None:
        """A start of ``execution_id`` is decided: a twin waiting for it goes on."""
        done = self._starting.pop(execution_id)
        if done is not None:
            done.set()

    async def _refreshed(self, workflow: str, version: str | None) -> CompiledDefinition:
        """A definition not known here is looked for in the store (another server sharing it
        may have registered it) before it is refused."""
        await self._definitions.refresh()  # another start's refresh may be the one to add it
        return self._definitions.resolve(workflow, version)

    async def _start_once(
        self, definition: CompiledDefinition, execution_id: str, input: Any,
        parent: ParentRef | None, schedule_id: str | None, hand_over: HandOver | None,
    ) -> tuple[str, bool]:  # fmt: skip
        registry = self._registry
        if execution_id in registry or execution_id in registry.quarantined:
            return self._existing(execution_id, definition, await self._row(execution_id))
        limit = self._limits.max_active_executions
        if parent is None and limit is not None and registry.roots >= limit:
            raise ResourceExhaustedError(
                f"{registry.roots} executions are already running (--max-active-executions)"
            )
        events = pure.start_run(
            definition, execution_id=execution_id, input=input, now=self._now_ms(),
            limits=self.effective_limits(definition), parent=parent, schedule_id=schedule_id,
        )  # fmt: skip
        key = _concurrency_key(definition, events)
        try:
            if key is not None:
                await self.flow.start(definition, events, key)
            else:  # not cancellable: a stored execution always gets its actor
                await self._supervisor.create(replay(events), definition, events, None, hand_over)
        except AlreadyStored:
            return self._existing(execution_id, definition, await self._row(execution_id))
        return execution_id, True

    def effective_limits(self, definition: CompiledDefinition) -> EffectiveLimits:
        """The limits a run of ``definition`` gets: the stricter of the server's and its own."""
        limits = self._effective.get(definition.definition_hash)
        if limits is None:  # fixed per definition: worked out once
            limits = pure.effective_limits(self._limits.limits, definition)
            self._effective[definition.definition_hash] = limits
        return limits

    async def _row(self, execution_id: str) -> ExecutionRow | None:
        return await self._store.execution(execution_id)

    @staticmethod
    def _existing(
        execution_id: str, definition: CompiledDefinition, existing: ExecutionRow | None
    ) -> tuple[str, bool]:
        """Starting an id that is taken: the same definition answers created=False."""
        if existing is None:  # only a concurrent delete could do this, and nothing deletes
            raise InternalError(f"execution `{execution_id}` vanished while starting")
        if existing.definition_hash == definition.definition_hash:
            return execution_id, False
        raise ExecutionExistsError(
            f"execution `{execution_id}` already exists for a different workflow "
            f"({existing.workflow}@{existing.version})"
        )

    def finished(self, state: ExecutionState, definition: CompiledDefinition) -> None:
        """An execution ended: a queued one of its concurrency key may start."""
        plan = definition.flow.concurrency
        if plan is not None and state.flow is not None and state.flow.key is not None:
            self.flow.promote_soon(state.flow.key, plan.limit)

    # -- children ---------------------------------------------------------------------------
    def start_child(self, parent: ExecutionState, invocation: ChildInvocation) -> None:
        """Start (or find) the child of a dispatched workflow unit; its end reaches the parent
        (a child that had already ended is told at once)."""
        parent_ref = ParentRef(execution_id=parent.execution_id, step=invocation.key)
        self._nursery.start_soon(self._start_child, parent_ref, invocation)

    async def _start_child(self, parent: ParentRef, invocation: ChildInvocation) -> None:
        child_id = invocation.execution_id
        try:
            definition = self._child_definition(invocation)
            await self.start(
                definition.name, version=definition.version, input=invocation.input,
                execution_id=child_id, parent=parent,
            )  # fmt: skip
        except OrbitError as exc:
            failed = cmd.ChildNotStarted(invocation.key, child_id, exc.message)
            self._registry.tell(parent.execution_id, failed)
            return
        row = await self._store.execution(child_id)  # a queued child's end comes when it ends
        if row is not None and row.status in TERMINAL_STATUSES and child_id not in self._registry:
            state, _ = await self._load(child_id)
            self._registry.tell_child_ended(state)

    def _child_definition(self, invocation: ChildInvocation) -> CompiledDefinition:
        if invocation.definition_hash is not None:
            found = self._definitions.by_hash(invocation.definition_hash)
            if found is not None:
                return found
        return self._definitions.resolve(invocation.workflow, invocation.version)

    # -- schedules --------------------------------------------------------------------------
    def check_target(self, spec: ScheduleSpec) -> None:
        """A schedule's workflow must be registered and take its input."""
        definition = self._definitions.resolve(spec.workflow, spec.version)
        if not isinstance(spec.input, dict):
            raise InvalidInputError("input: a schedule's input must be a JSON object")
        pure.validated_input(definition.input_schema, spec.input, strict=True)

    async def start_occurrence(self, spec: ScheduleSpec, execution_id: str) -> None:
        """Start an occurrence's execution; one already stored for the schedule counts."""
        try:
            await self.start(
                spec.workflow, version=spec.version, input=spec.input,
                execution_id=execution_id, schedule_id=spec.schedule_id,
            )  # fmt: skip
        except ExecutionExistsError:  # started before a crash, of a version since superseded
            row = await self._store.execution(execution_id)
            if row is None or row.schedule_id != spec.schedule_id:
                raise

    async def is_running(self, execution_id: str) -> bool:
        """True while the execution has not finished."""
        if execution_id in self._registry:
            return True
        row = await self._store.execution(execution_id)
        return row is not None and row.status == "running"


def _concurrency_key(definition: CompiledDefinition, events: list[Event]) -> str | None:
    """The concurrency key a start evaluated, when its definition declares one."""
    if definition.flow.concurrency is None:
        return None
    created = events[0]
    assert isinstance(created, WorkflowCreated)
    return created.flow.key if created.flow is not None else None
