"""``open_runtime``: the store, the definitions, the supervisor of execution actors, the
dispatcher, the worker sessions and the built-in http runner, composed — with the operations the
server exposes. Every operation raises an :class:`~orbit_actors.errors.OrbitError` subclass
(never an ExceptionGroup) for the caller to answer.
"""

from __future__ import annotations

import contextlib
import gc
import logging
import secrets
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import trio

from .actors import commands as cmd
from .actors import scheduler as sch
from .actors.clock import Clock
from .actors.dispatcher import Dispatcher, Offer
from .actors.event_log import log_batch
from .actors.execution import execution_of, new_token
from .actors.http_runner import HttpRunner
from .actors.metrics import Metrics, Snapshot
from .actors.registry import DefinitionRegistry
from .actors.scheduler import Scheduler, ScheduleSpec
from .actors.sessions import Connection, Send, SessionManager, WorkerSession
from .actors.views import describe, row_of, summary
from .decide import commands as pure
from .decide.commands import Ack, ServerLimits
from .decide.invocation import ChildInvocation, HttpInvocation, TaskInvocation
from .decide.query import evaluate_query
from .errors import (
    ActorGoneError,
    ExecutionExistsError,
    ExecutionFinishedError,
    ExecutionNotFoundError,
    InternalError,
    InvalidInputError,
    OrbitError,
    QuarantinedError,
    ResourceExhaustedError,
    RunNotFoundError,
    WaitTimeoutError,
)
from .history.apply import replay
from .history.events import EffectiveLimits, ErrorInfo, Event, ParentRef
from .history.state import ExecutionState
from .ir.plan import CompiledDefinition
from .mailbox import Command, Mailbox, Reply
from .store.base import (
    AlreadyStored,
    DefinitionRecord,
    ExecutionPage,
    ExecutionRow,
    Store,
    WorkerRecord,
)
from .supervisor import RestartIntensity, Supervisor
from .wire.messages import Task

if TYPE_CHECKING:  # the otel extra is optional: the server imports the tracer only when asked
    from .actors.tracing import Tracer

log = logging.getLogger("orbit.runtime")


@dataclass(eq=False)
class _Waiter:
    """Callers waiting for one execution to finish; ``row`` is its final summary."""

    done: trio.Event = field(default_factory=trio.Event)
    row: ExecutionRow | None = None


@dataclass(frozen=True)
class RuntimeConfig:
    """Server-wide settings of a runtime."""

    limits: ServerLimits = field(default_factory=ServerLimits)
    max_active_executions: int | None = None
    heartbeat_interval_ms: int = 5000
    session_timeout_ms: int = 30_000
    enable_http_adapter: bool = False
    restart_intensity: RestartIntensity = field(default_factory=RestartIntensity)
    mailbox_capacity: int = 1024


GC_THRESHOLDS = (100_000, 50, 100)


def tune_gc() -> None:
    """Collect the young generation every 100,000 allocations instead of 700. Every execution
    allocates many short-lived objects (events, decisions), and with CPython's defaults the
    cyclic collector kept rescanning thousands of live actors: bench/e2e.py measured 6.9 ms of
    server CPU per execution before and 4.9 ms after. For the process that runs a runtime: the
    server calls it; a program embedding a runtime may."""
    gc.set_threshold(*GC_THRESHOLDS)


@asynccontextmanager
async def open_runtime(
    store: Store,
    config: RuntimeConfig | None = None,
    clock: Clock | None = None,
    tracer: Tracer | None = None,
) -> AsyncIterator[Runtime]:
    """Run a runtime on ``store``; it is yielded only once every non-terminal execution has been
    recovered from its history. With ``tracer``, durable batches become OpenTelemetry spans."""
    async with trio.open_nursery() as nursery:
        runtime = Runtime(store, config or RuntimeConfig(), clock or Clock(), nursery)
        runtime.tracer = tracer
        await runtime.definitions.load()
        await nursery.start(runtime.sessions.serve)
        await runtime.recover()
        await nursery.start(runtime.scheduler.run)
        try:
            yield runtime
        finally:
            nursery.cancel_scope.cancel()


class Runtime:
    """The operations of Orbit on one store (see :func:`open_runtime`)."""

    def __init__(
        self, store: Store, config: RuntimeConfig, clock: Clock, nursery: trio.Nursery
    ) -> None:
        self.store = store
        self.config = config
        self.clock = clock
        self.instance_id = secrets.token_hex(6)
        self._nursery = nursery
        self.definitions = DefinitionRegistry(store)
        self.dispatcher = Dispatcher(self._offer)
        self.metrics = Metrics(self._snapshot)
        self.sessions = SessionManager(
            self, config.heartbeat_interval_ms, config.session_timeout_ms
        )
        self.supervisor = Supervisor(
            nursery, self, self._load, instance_id=self.instance_id,
            intensity=config.restart_intensity, mailbox_capacity=config.mailbox_capacity,
            on_gone=self._gone,
        )  # fmt: skip
        self.http = HttpRunner(nursery, self._report_builtin, enabled=config.enable_http_adapter)
        self.scheduler = Scheduler(self)
        self.tracer: Tracer | None = None
        self._roots: set[str] = set()
        self._waiters: dict[str, _Waiter] = {}
        self._starting: dict[str, trio.Event] = {}  # ids being started: set when done
        self._limits: dict[str, EffectiveLimits] = {}  # by definition hash

    # -- definitions -----------------------------------------------------------------------
    async def register_definition(
        self, source: str | dict[str, Any]
    ) -> tuple[DefinitionRecord, bool]:
        """Register a definition (YAML/JSON text or the IR as data); returns (record, created)."""
        return await self.definitions.register(source, self.clock.now_ms())

    def list_definitions(self) -> list[DefinitionRecord]:
        """Every registered definition."""
        return self.definitions.records()

    def get_definition(self, name: str, version: str | None = None) -> DefinitionRecord:
        """One definition (the latest by semver when no version is given)."""
        return self.definitions.record(name, version)

    # -- executions ------------------------------------------------------------------------
    async def start(
        self,
        workflow: str,
        *,
        version: str | None = None,
        input: Any = None,
        execution_id: str | None = None,
        parent: ParentRef | None = None,
        schedule_id: str | None = None,
    ) -> tuple[str, bool]:
        """Start an execution; returns (execution_id, created). An existing id of the same
        definition answers created=False."""
        definition = self.definitions.resolve(workflow, version)
        execution_id = execution_id or str(uuid.uuid4())
        pure.check_execution_id(execution_id)
        while (busy := self._starting.get(execution_id)) is not None:
            await busy.wait()  # the same id being started: its outcome decides this one
        done = self._starting[execution_id] = trio.Event()
        try:
            return await self._start_locked(definition, execution_id, input, parent, schedule_id)
        finally:
            del self._starting[execution_id]
            done.set()

    async def _start_locked(
        self, definition: CompiledDefinition, execution_id: str, input: Any,
        parent: ParentRef | None, schedule_id: str | None,
    ) -> tuple[str, bool]:  # fmt: skip
        supervisor = self.supervisor
        if execution_id in supervisor.registry or execution_id in supervisor.quarantined:
            existing = await self.store.execution(execution_id)
            return self._existing(execution_id, definition, existing)
        limit = self.config.max_active_executions
        if parent is None and limit is not None and len(self._roots) >= limit:
            raise ResourceExhaustedError(
                f"{len(self._roots)} executions are already running (--max-active-executions)"
            )
        limits = self._limits.get(definition.definition_hash)
        if limits is None:  # fixed per definition: worked out once
            limits = self._limits[definition.definition_hash] = pure.effective_limits(
                self.config.limits, definition
            )
        events = pure.start_run(
            definition, execution_id=execution_id, input=input, now=self.clock.now_ms(),
            limits=limits, parent=parent, schedule_id=schedule_id,
        )  # fmt: skip
        state = replay(events)
        if parent is None:
            self._roots.add(execution_id)  # before the actor runs: it may finish at once
        try:
            with trio.CancelScope(shield=True):  # a stored execution always gets its actor
                await self.supervisor.create(state, definition, events)
        except BaseException as exc:
            self._roots.discard(execution_id)
            if isinstance(exc, AlreadyStored):
                existing = await self.store.execution(execution_id)
                return self._existing(execution_id, definition, existing)
            raise
        return execution_id, True

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

    async def signal(self, execution_id: str, name: str, payload: Any) -> int:
        """Deliver a signal; returns its seq."""
        seq: int = await self._request(
            execution_id, cmd.DeliverSignal(name, payload, reply=Reply())
        )
        return seq

    async def cancel(
        self, execution_id: str, reason: str = "cancelled by request"
    ) -> dict[str, Any]:
        """Cancel an execution; returns its detail."""
        await self._request(execution_id, cmd.RequestCancel(reason, reply=Reply()))
        return await self.describe(execution_id)

    async def query(self, execution_id: str, name: str) -> Any:
        """Evaluate a query against the current (or final) state."""
        mailbox = self.supervisor.mailbox(execution_id)
        if mailbox is not None:
            try:
                return await mailbox.request(cmd.RunQuery(name, reply=Reply()))
            except ActorGoneError:
                pass
        state, definition = await self._load(execution_id)
        return evaluate_query(state, definition, name)

    async def describe(self, execution_id: str) -> dict[str, Any]:
        """The execution's detail."""
        mailbox = self.supervisor.mailbox(execution_id)
        if mailbox is not None:
            try:
                detail: dict[str, Any] = await mailbox.request(cmd.Describe(reply=Reply()))
                return detail
            except ActorGoneError:
                pass
        state, definition = await self._load(execution_id)
        quarantined = self.supervisor.quarantined.get(execution_id)
        detail = describe(state, definition, quarantined is not None)
        if quarantined is not None:
            detail["last_error"] = quarantined
        return detail

    async def history(self, execution_id: str, run: int | None = None) -> list[Event]:
        """The events of the current run or of run ``run``."""
        return (await self.history_of(execution_id, run))[1]

    async def history_of(
        self, execution_id: str, run: int | None = None
    ) -> tuple[int, list[Event]]:
        """``(run, events)`` of the current run or of run ``run``."""
        row = await self._row_or_404(execution_id)
        if run is not None and not 1 <= run <= row.run:
            raise RunNotFoundError(
                f"execution `{execution_id}` has runs 1 to {row.run}; there is no run {run}"
            )
        return run or row.run, await self.store.history(execution_id, run)

    async def list_executions(self, **filters: Any) -> ExecutionPage:
        """Executions newest first (``status``, ``workflow``, ``limit``, ``cursor``)."""
        return await self.store.list_executions(**filters)

    async def wait(self, execution_id: str, timeout: float) -> ExecutionRow:
        """The summary once the execution has finished; raises WaitTimeoutError."""
        waiter = self._waiters.get(execution_id)
        if waiter is None:
            waiter = self._waiters[execution_id] = _Waiter()  # before reading: no gap
        if execution_id not in self.supervisor.registry:  # a live actor has not finished
            try:
                row = await self._row_or_404(execution_id)
            except ExecutionNotFoundError:
                self._drop_waiter(execution_id, waiter)
                raise
            if row.status != "running":
                self._drop_waiter(execution_id, waiter)
                return row
        with trio.move_on_after(timeout):
            await waiter.done.wait()
        if waiter.row is None:
            raise WaitTimeoutError(
                f"execution `{execution_id}` is still running after {timeout:g} s"
            )
        if waiter.row.run > 1:  # the stored row keeps the first run's start time
            return await self._row_or_404(execution_id)
        return waiter.row

    def _drop_waiter(self, execution_id: str, waiter: _Waiter) -> None:
        """Forget a waiter of an execution that will never finish here (unknown or ended)."""
        if self._waiters.get(execution_id) is waiter:
            del self._waiters[execution_id]

    async def resume(self, execution_id: str) -> dict[str, Any]:
        """Respawn a quarantined execution from its history."""
        await self._row_or_404(execution_id)
        await self.supervisor.resume(execution_id)
        return await self.describe(execution_id)

    async def report_result(
        self, token: str, worker_id: str | None, output: Any, failure: ErrorInfo | None
    ) -> Ack:
        """A worker's result for ``token`` (also the HTTP fallback)."""
        execution_id = execution_of(token)
        mailbox = self.supervisor.mailbox(execution_id) if execution_id else None
        if mailbox is None:
            return Ack(token, False, pure.UNKNOWN_TOKEN)
        try:
            ack: Ack = await mailbox.request(
                cmd.ReportResult(token, worker_id, output, failure, reply=Reply())
            )
        except ActorGoneError:
            return Ack(token, False, pure.UNKNOWN_TOKEN)
        return ack

    # -- schedules -------------------------------------------------------------------------
    async def create_schedule(
        self, spec: ScheduleSpec, paused: bool = False
    ) -> tuple[dict[str, Any], bool]:
        """Create a schedule; returns (view, created). The same id with the same fields answers
        created=False; with other fields ScheduleExistsError."""
        answer: tuple[dict[str, Any], bool] = await self.scheduler.request(
            sch.CreateSchedule(spec, paused, reply=Reply())
        )
        return answer

    async def schedules(self, schedule_id: str | None = None) -> list[dict[str, Any]]:
        """Every schedule (or the one named), with its next occurrences and last executions."""
        views: list[dict[str, Any]] = await self.scheduler.request(
            sch.ShowSchedules(schedule_id, reply=Reply())
        )
        return views

    async def delete_schedule(self, schedule_id: str) -> None:
        """Delete a schedule; executions it started go on."""
        await self.scheduler.request(sch.DeleteSchedule(schedule_id, reply=Reply()))

    async def pause_schedule(self, schedule_id: str, paused: bool = True) -> dict[str, Any]:
        """Pause a schedule (or resume it: what was missed while paused does not fire)."""
        view: dict[str, Any] = await self.scheduler.request(
            sch.PauseSchedule(schedule_id, paused, reply=Reply())
        )
        return view

    async def trigger_schedule(self, schedule_id: str) -> str:
        """Fire an occurrence for the current second now, whether paused or not; returns its
        execution id (OverlapSkippedError when overlap skips it)."""
        execution_id: str = await self.scheduler.request(
            sch.TriggerSchedule(schedule_id, reply=Reply())
        )
        return execution_id

    # -- SchedulerHost ---------------------------------------------------------------------
    def check_target(self, spec: ScheduleSpec) -> None:
        """A schedule's workflow must be registered and take its input."""
        definition = self.definitions.resolve(spec.workflow, spec.version)
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
            row = await self.store.execution(execution_id)
            if row is None or row.schedule_id != spec.schedule_id:
                raise

    async def is_running(self, execution_id: str) -> bool:
        """True while the execution has not finished."""
        if execution_id in self.supervisor.registry:
            return True
        row = await self.store.execution(execution_id)
        return row is not None and row.status == "running"

    # -- workers ---------------------------------------------------------------------------
    def connect(
        self, send: Send, close: Any = None, bound_worker_id: str | None = None
    ) -> Connection:
        """A worker connection; the gateway feeds it decoded messages. ``bound_worker_id`` is
        the worker its credentials name, if they name one."""
        return self.sessions.connect(send, close, bound_worker_id)

    async def workers(self) -> list[dict[str, Any]]:
        """Every worker ever registered, with its live sessions and tasks in flight."""
        live: dict[str, list[WorkerSession]] = {}
        for session in self.sessions.sessions.values():
            live.setdefault(session.worker_id, []).append(session)
        out = []
        for record in await self.store.workers():
            sessions = live.get(record.worker_id, [])
            out.append({
                "worker_id": record.worker_id, "runtime": record.runtime, "sdk": record.sdk,
                "contracts": record.contracts, "last_seen_ms": record.last_seen_ms,
                "registered_at_ms": record.registered_at_ms,
                "online": any(s.connection is not None for s in sessions),
                "sessions": len(sessions), "inflight": sum(len(s.tokens) for s in sessions),
            })  # fmt: skip
        return out

    def _snapshot(self) -> Snapshot:
        """What the metrics' gauges show right now."""
        store = self.store.statistics()
        sessions = self.sessions.sessions.values()
        return Snapshot(
            active_executions=len(self.supervisor.registry),
            quarantined_executions=len(self.supervisor.quarantined),
            workers_connected=sum(1 for s in sessions if s.connection is not None),
            worker_sessions=len(self.sessions.sessions),
            queue_depth=self.dispatcher.statistics(),
            actor_restarts=self.supervisor.stats.restarts,
            quarantines=self.supervisor.stats.quarantines,
            store_commits=store.commits,
            store_batches=store.batches,
            store_events=store.events,
            store_largest_batch=store.largest_batch,
        )

    def committed(self, state: ExecutionState, events: list[Event], seconds: float) -> None:
        """A batch became durable: count it."""
        self.metrics.observe(state, events)
        self.metrics.commit_seconds.observe(seconds)
        log_batch(state, events)
        if self.tracer is not None:
            self.tracer.committed(state, events)

    # -- recovery ---------------------------------------------------------------------------
    async def recover(self) -> None:
        """Respawn every non-terminal execution from its history."""
        for execution_id in await self.store.running_ids():
            state, definition = await self._load(execution_id)
            if state.parent is None:
                self._roots.add(execution_id)
            if self.tracer is not None:
                self.tracer.recovered(state)
            await self.supervisor.recover(state, definition)

    async def _load(self, execution_id: str) -> tuple[ExecutionState, CompiledDefinition]:
        history = await self.store.history(execution_id)
        if not history:
            raise ExecutionNotFoundError()
        state = replay(history)
        definition = self.definitions.by_hash(state.definition_hash)
        if definition is None:
            missing = state.definition_hash
            raise OrbitError(f"execution `{execution_id}` needs definition {missing}, not stored")
        return state, definition

    # -- ExecutionHost ---------------------------------------------------------------------
    def enqueue_task(self, execution_id: str, invocation: TaskInvocation) -> None:
        """A task unit is ready (called by actors)."""
        self.dispatcher.enqueue(execution_id, invocation)

    def claim_worker(
        self, execution_id: str, invocation: TaskInvocation, token: str
    ) -> tuple[str, str] | None:
        """A free session for a unit, reserved (called by actors before they commit)."""
        return self.dispatcher.claim(invocation, token)

    def release_offer(self, session_id: str, token: str) -> None:
        """A stale offer gives its slot back."""
        self.dispatcher.release(session_id, token)

    def push_task(self, session_id: str, task: Task) -> None:
        """Send a dispatched task to its session."""
        self.sessions.hold(session_id, task.token, self.clock.now_ms(), task)
        session = self.sessions.sessions.get(session_id)
        if session is not None and session.connection is not None:
            session.connection.send(task)

    def adopt_token(
        self, session_id: str, worker_id: str, task: Task, dispatched_at_ms: int
    ) -> None:
        """A task in flight found after a restart."""
        self.sessions.adopt(session_id, worker_id, task, dispatched_at_ms)

    def cancel_tokens(self, tokens: dict[str, str]) -> None:
        """Cancel tokens at their workers (or in the built-in runner)."""
        for token in tokens:
            self.http.cancel(token)
        self.sessions.cancel(tokens)

    def start_child(self, parent: ExecutionState, invocation: ChildInvocation) -> None:
        """Start (or find) a child and watch it."""
        parent_ref = ParentRef(execution_id=parent.execution_id, step=invocation.key)
        self._nursery.start_soon(self._start_child, parent_ref, invocation)

    async def _start_child(self, parent: ParentRef, invocation: ChildInvocation) -> None:
        try:
            definition = self._child_definition(invocation)
            await self.start(
                definition.name, version=definition.version, input=invocation.input,
                execution_id=invocation.execution_id, parent=parent,
            )  # fmt: skip
        except OrbitError as exc:
            self._tell(parent.execution_id, cmd.ChildNotStarted(invocation.key, exc.message))
            return
        row = await self.store.execution(invocation.execution_id)
        if (
            row is not None
            and row.status != "running"
            and self.supervisor.mailbox(invocation.execution_id) is None
        ):
            state, _ = await self._load(invocation.execution_id)
            self._tell_child_ended(state)

    def _child_definition(self, invocation: ChildInvocation) -> CompiledDefinition:
        if invocation.definition_hash is not None:
            found = self.definitions.by_hash(invocation.definition_hash)
            if found is not None:
                return found
        return self.definitions.resolve(invocation.workflow, invocation.version)

    def cancel_child(self, child_id: str, reason: str) -> None:
        """Cancel a child the parent no longer waits for."""
        self._nursery.start_soon(self._cancel_quietly, child_id, reason)

    async def _cancel_quietly(self, execution_id: str, reason: str) -> None:
        with contextlib.suppress(OrbitError):  # already finished, or never started
            await self._request(execution_id, cmd.RequestCancel(reason, reply=Reply()))

    def run_http(self, execution_id: str, token: str, invocation: HttpInvocation) -> None:
        """Run a built-in http unit."""
        self.http.run(token, invocation)

    async def _report_builtin(self, token: str, output: Any, failure: ErrorInfo | None) -> None:
        await self.report_result(token, None, output, failure)

    def finished(self, state: ExecutionState, definition: CompiledDefinition) -> None:
        """An execution ended: wake its waiters and tell its parent."""
        self._roots.discard(state.execution_id)
        waiter = self._waiters.pop(state.execution_id, None)
        if waiter is not None:
            waiter.row = row_of(state)
            waiter.done.set()
        if state.parent is not None:
            self._tell_child_ended(state)

    def _tell_child_ended(self, state: ExecutionState) -> None:
        assert state.parent is not None
        parent = state.parent
        ended = cmd.ChildEnded(
            parent.step, state.execution_id, state.status, state.output, state.error
        )
        self._tell(parent.execution_id, ended)

    def _gone(self, execution_id: str) -> None:
        self._roots.discard(execution_id)

    # -- SessionHost -----------------------------------------------------------------------
    def mark_uncertain(self, token: str, reason: str) -> None:
        """A lost session's attempt is uncertain."""
        execution_id = execution_of(token)
        if execution_id:
            self._tell(execution_id, cmd.MarkUncertain(token, reason))

    def task_versions(self, task_name: str) -> set[str]:
        """Versions of a task that registered workflows use."""
        return self.definitions.task_versions(task_name)

    async def record_worker(self, record: WorkerRecord) -> None:
        """Write the worker registry."""
        await self.store.upsert_worker(record)

    async def touch_worker(self, worker_id: str, now_ms: int) -> None:
        """A sign of life from a worker."""
        await self.store.touch_worker(worker_id, now_ms)

    def add_session(self, session: WorkerSession) -> None:
        """A session can take work."""
        self.dispatcher.add_session(
            session.id, session.worker_id, session.runtime, session.contracts, session.concurrency,
            held=set(session.tokens) - set(session.cancelled),
        )  # fmt: skip

    def remove_session(self, session_id: str) -> None:
        """A session takes no more work."""
        self.dispatcher.remove_session(session_id)

    def release(self, session_id: str, token: str) -> None:
        """A session's slot is free."""
        self.dispatcher.release(session_id, token)

    def set_capacity(self, session_id: str, capacity: int) -> None:
        """A session's concurrency changed."""
        self.dispatcher.set_capacity(session_id, capacity)

    # -- plumbing --------------------------------------------------------------------------
    def _offer(self, offer: Offer) -> str | None:
        mailbox = self.supervisor.mailbox(offer.execution_id)
        if mailbox is None:
            return None
        token = new_token(offer.execution_id)
        command = cmd.OfferDispatch(
            offer.key, offer.attempt, token, offer.worker_id, offer.session_id
        )
        self._tell(offer.execution_id, command, mailbox)
        return token

    def _tell(
        self, execution_id: str, command: Command, mailbox: Mailbox[Command] | None = None
    ) -> None:
        """Send without waiting; a full mailbox gets the command from a task that waits."""
        mailbox = mailbox or self.supervisor.mailbox(execution_id)
        if mailbox is None:
            return
        try:
            mailbox.send_nowait(command)
        except ActorGoneError as exc:
            if exc.why == "full":
                self._nursery.start_soon(self._send_later, mailbox, command)

    async def _send_later(self, mailbox: Mailbox[Command], command: Command) -> None:
        with suppress(ActorGoneError):
            await mailbox.send(command)

    async def _request(self, execution_id: str, command: Command) -> Any:
        if execution_id in self.supervisor.quarantined:
            raise QuarantinedError(f"execution `{execution_id}` is quarantined; resume it first")
        mailbox = self.supervisor.mailbox(execution_id)
        if mailbox is not None:
            try:
                return await mailbox.request(command)
            except ActorGoneError as exc:
                if exc.why.startswith("crashed"):
                    raise
        row = await self._row_or_404(execution_id)
        if row.status != "running":
            raise ExecutionFinishedError(row.status)
        raise ActorGoneError(f"execution `{execution_id}`", "not running here")

    async def _row_or_404(self, execution_id: str) -> ExecutionRow:
        row = await self.store.execution(execution_id)
        if row is None:
            raise ExecutionNotFoundError()
        return row


__all__ = ["Runtime", "RuntimeConfig", "open_runtime", "summary", "tune_gc"]
