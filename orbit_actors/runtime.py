"""``open_runtime``: the store, the definitions, the supervisor of execution actors and its
registry, the worker pool and sessions, the built-in http runner and the scheduler, wired to each
other through narrow ports — and :class:`Runtime`, the operations the server exposes. Every
operation raises an :class:`~orbit_actors.errors.OrbitError` subclass (never an ExceptionGroup)
for the caller to answer.

Nothing passes through the :class:`Runtime` on its way between components: a worker's result goes
from its session (or the HTTP fallback) through the registry to its execution actor, which
records it, frees the worker's slot in the pool and pushes the next task itself.
"""

from __future__ import annotations

import gc
import secrets
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any

import trio

from .actors import commands as cmd
from .actors.clock import Clock
from .actors.execution import ExecutionPorts, Passivation
from .actors.http_runner import HttpRunner
from .actors.pool import SendTask, WorkerPool
from .actors.rate_windows import serve_rate_windows
from .actors.scheduler import Scheduler, SchedulerPorts, ScheduleSpec
from .actors.sessions import (
    Connection,
    Send,
    SendAck,
    SessionManager,
    SessionPorts,
    WorkerSession,
)
from .actors.task_board import TaskBoard, waiting_counts
from .decide.compat import Divergence
from .decide.query import evaluate_query
from .decide.rerun import RerunPlan
from .decide.stepping import ReplayPoint
from .decide.transitions import ServerLimits, Verdict
from .errors import (
    OrbitError,
    RunNotFoundError,
    StorageError,
    WaitTimeoutError,
    WorkflowNotFoundError,
)
from .history.events import ErrorInfo, Event, ParentRef
from .history.state import ExecutionState
from .ir.plan import CompiledDefinition
from .mailbox import Reply
from .observe.commits import observe_commits
from .observe.event_log import LOGGED
from .observe.metrics import Metrics, Snapshot
from .store.base import DefinitionRecord, ExecutionPage, Store
from .store.cluster import Cluster, ServerRecord, Takeover
from .store.definitions import DefinitionRegistry
from .store.sql_store import SqlStore
from .supervisor import Registry, RestartIntensity, Supervisor
from .supervisor import forwarding as fw
from .supervisor.batching import Batches, router_actions
from .supervisor.forwarding import Forwarder, serve_inbox
from .supervisor.loading import Loader
from .supervisor.membership import LocalServer, Membership, keep_membership
from .supervisor.migration import (
    MigrationRequest,
    MigrationResult,
    migrate_here,
    plan_migration,
)
from .supervisor.pacing import DEFAULT_BATCH_RATE, Pacer
from .supervisor.purger import Purger
from .supervisor.queued_waits import StartedElsewhere
from .supervisor.rerunning import Rerunner
from .supervisor.router import Remote, Router, routes
from .supervisor.sharing import TaskSharing
from .supervisor.starting import Starter, StartLimits
from .supervisor.upgrade import CheckPage, Upgrades
from .supervisor.waiters import Waiters
from .views import ExecutionDetail, ExecutionResult, Schedule, Worker, describe, summary
from .views.models import TaskStatus
from .wire.server_fields import TaskFields

if TYPE_CHECKING:  # the otel extra is optional: the server imports the tracer only when asked
    from .observe.tracing import Tracer


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
    passivation: Passivation | None = field(default_factory=Passivation)
    forward_margin_s: float = 10.0  # a forwarded command waits the lease time and this long
    schedule_to_start_ms: int | None = None  # for tasks that declare no schedule_to_start
    retention_ms: int | None = None  # finished executions are kept forever unless set
    batch_rate: float = DEFAULT_BATCH_RATE  # executions batches act on per second, at most


GC_THRESHOLDS = (100_000, 50, 100)
INDEX_HORIZON_MS = 300_000
"""A restart loads the busy executions and the wake-ups due within this before it serves; the
rest of the wake-up index follows in pages of ``INDEX_PAGE``, long before any of it is due."""
INDEX_PAGE = 10_000


def tune_gc() -> None:
    """Collect the young generation every 100,000 allocations instead of 700. Every execution
    allocates many short-lived objects (events, decisions), and with CPython's defaults the
    cyclic collector kept rescanning thousands of live actors: bench/e2e.py measured 6.9 ms of
    server CPU per execution before and 4.9 ms after. For the process that runs a runtime: the
    server calls it; a program embedding a runtime may."""
    gc.set_threshold(*GC_THRESHOLDS)


@dataclass(frozen=True)
class _Parts:
    """The components of one runtime, as :func:`open_runtime` wired them."""

    store: Store
    config: RuntimeConfig
    clock: Clock
    instance_id: str
    definitions: DefinitionRegistry
    registry: Registry
    supervisor: Supervisor
    starter: Starter
    waiters: Waiters
    pool: WorkerPool
    sessions: SessionManager
    scheduler: Scheduler
    metrics: Metrics
    load: Loader
    membership: Membership
    sharing: TaskSharing | None
    router: Router
    rerunner: Rerunner
    batches: Batches
    wait_here: Callable[[str, float], Awaitable[ExecutionResult]]
    """How the route of ``WaitCommand`` carries a wait out on this server."""


@asynccontextmanager
async def open_runtime(
    store: Store,
    config: RuntimeConfig | None = None,
    clock: Clock | None = None,
    tracer: Tracer | None = None,
    cluster: Cluster | None = None,
    address: str = "",
) -> AsyncIterator[Runtime]:
    """Run a runtime on ``store``; it is yielded once the store's wake-up index is loaded:
    every running execution is dormant until a command or its wake-up brings it back, and those
    that had work in flight come back in the background. With ``tracer``, durable batches
    become OpenTelemetry spans. With ``cluster`` (a store several servers share), it keeps this
    server's lease, takes over the executions of servers whose lease expired, and forwards
    commands for executions owned elsewhere; it raises LeaseLostError (in an ExceptionGroup)
    out of this context when its lease was taken over. ``address`` is what ``servers()`` shows
    of this server."""
    config = config or RuntimeConfig()
    clock = clock or Clock()
    definitions = DefinitionRegistry(store, config.schedule_to_start_ms)
    await definitions.load()
    async with trio.open_nursery() as nursery:
        parts = _wire(nursery, store, config, clock, definitions, tracer, cluster, address)
        await nursery.start(parts.sessions.serve)
        await nursery.start(parts.waiters.deadlines.serve)
        await nursery.start(serve_rate_windows, parts.pool.rates, parts.pool.release_due, clock)
        first = await store.wake_index(due_by_ms=clock.now_ms() + INDEX_HORIZON_MS)
        parts.registry.begin_loading(first)
        await nursery.start(parts.registry.dormant.run)
        parts.sessions.recovering = True  # before any worker can register
        nursery.start_soon(_recover_busy, parts, [e.execution_id for e in first if e.busy])
        nursery.start_soon(_load_the_rest, parts)
        runtime = Runtime(parts)
        await nursery.start(parts.batches.serve)  # before a takeover can hand it batches
        if cluster is not None:
            cluster.watch_schedules(parts.scheduler.reload_soon)
            cluster.watch_lost(partial(_server_lost, parts))
            if parts.sharing is not None:
                cluster.watch_ready(parts.sharing.ready)
                cluster.watch_cancels(parts.pool.cancel)
                await nursery.start(parts.sharing.serve)
            await nursery.start(serve_inbox, cluster, parts.router.carry_out)
            await nursery.start(keep_membership, cluster, partial(_adopt, nursery, parts))
        await nursery.start(parts.scheduler.run)
        await nursery.start(runtime.purger.run)
        try:
            yield runtime
        finally:
            runtime.upgrades.close()
            nursery.cancel_scope.cancel()


def _server_lost(parts: _Parts, server_id: str) -> None:
    """A server was taken over (``""``: such notices may have been missed): what its workers
    held of ours is uncertain, and the waits it was answering are asked again."""
    if parts.sharing is not None:
        parts.sharing.lost(server_id)
    if parts.membership.forwarder is not None:
        parts.membership.forwarder.lost(server_id)


def _adopt(nursery: trio.Nursery, parts: _Parts, taken: Takeover) -> None:
    """Executions taken over from a dead server: dormant here, those with work in flight
    brought back in the background (their workers' attempts turn uncertain)."""
    if taken.servers:
        nursery.start_soon(parts.batches.adopt, list(taken.servers))
        parts.scheduler.reload_soon()  # the claims the dead servers held are released
        # a dead server may have freed a slot and died before starting the next queued one
        nursery.start_soon(parts.starter.flow.promote_all)
    if taken.executions:
        parts.registry.dormant.load(taken.executions)
        busy = [e.execution_id for e in taken.executions if e.busy]
        nursery.start_soon(parts.supervisor.recover_busy, busy)


def _wire(
    nursery: trio.Nursery, store: Store, config: RuntimeConfig, clock: Clock,
    definitions: DefinitionRegistry, tracer: Tracer | None, cluster: Cluster | None,
    address: str,
) -> _Parts:  # fmt: skip
    """Build the components and connect each to the few callables of the others it needs.
    A lambda stands for a component built just after the one that takes it."""
    instance_id = cluster.server_id if cluster is not None else secrets.token_hex(6)
    pool = WorkerPool(
        offer=lambda offer: (
            sharing.offer(offer) if sharing is not None and offer.remote else registry.offer(offer)
        ),
        now_ms=clock.now_ms,
    )
    registry = Registry(
        nursery, store, pool.settle, config.mailbox_capacity, clock=clock,
        awaken=lambda execution_id, mailbox, history: supervisor.awaken(
            execution_id, mailbox, history
        ),
    )  # fmt: skip
    load = Loader(store, definitions)
    waiters = Waiters(registry, load, seconds=clock.seconds)
    http = HttpRunner(
        nursery, lambda token, output, failure: _report_builtin(registry, token, output, failure),
        enabled=config.enable_http_adapter,
    )  # fmt: skip
    forwarder = Forwarder(cluster, cluster.lease_s + config.forward_margin_s) if cluster else None
    router = Router(registry, forwarder, nursery, pool.settle)
    sharing = None
    if cluster is not None and forwarder is not None:
        sharing = pool.sharing = TaskSharing(cluster, forwarder, router, registry, pool, clock)
    sessions = SessionManager(
        pool,
        SessionPorts(
            clock, router.report_result, router.mark_uncertain,
            definitions.task_versions, store.upsert_worker, store.touch_worker,
            router.report_result_nowait,
        ),
        config.heartbeat_interval_ms, config.session_timeout_ms,
    )  # fmt: skip
    if cluster is not None:
        sessions.server_tag = cluster.server_id
    metrics = Metrics(lambda: _snapshot(parts))
    tables = [metrics.events(), LOGGED] + ([tracer.events()] if tracer is not None else [])
    committed = observe_commits(tables, metrics.commit_took)

    def cancel_tokens(tokens: dict[str, str]) -> None:
        for token in tokens:
            http.cancel(token)
        elsewhere = {t: r for t, r in tokens.items() if not pool.holds(t)}
        pool.cancel(tokens)
        if cluster is not None and sharing is not None and elsewhere:  # from the shared queue
            nursery.start_soon(_cancel_elsewhere, cluster, elsewhere)

    def finished(state: ExecutionState, definition: CompiledDefinition) -> None:
        waiters.finished(state, definition)
        starter.finished(state, definition)
        if state.parent is not None:
            registry.tell_child_ended(state)

    def adopt(session_id: str, worker_id: str, task: TaskFields, dispatched_at_ms: int) -> None:
        token, execution_id = task["token"], task["execution_id"]
        if sharing is None or not sharing.readopt(session_id, token, execution_id):
            sessions.adopt(session_id, worker_id, task, dispatched_at_ms)

    ports = ExecutionPorts(
        store=store, clock=clock, instance_id=instance_id, pool=pool, adopt=adopt,
        cancel_tokens=cancel_tokens,
        start_child=lambda parent, unit: starter.start_child(parent, unit),
        cancel_child=lambda child_id, reason: router.tell(
            child_id, fw.CancelCommand(reason=reason)
        ),
        terminate_child=lambda child_id, reason: router.tell(
            child_id, fw.TerminateCommand(reason=reason)
        ),
        run_http=http.run, committed=committed, finished=finished,
        passivation=config.passivation, soon=store if isinstance(store, SqlStore) else None,
    )  # fmt: skip
    supervisor = Supervisor(
        nursery, registry, ports, load, config.restart_intensity,
        recovered=tracer.recovered if tracer is not None else _ignore,
    )  # fmt: skip
    starter = Starter(
        nursery, supervisor, definitions, store, load, clock.now_ms,
        StartLimits(config.limits, config.max_active_executions), waiters.adopt,
    )  # fmt: skip
    scheduler = Scheduler(
        SchedulerPorts(
            store, clock, instance_id, starter.check_target, starter.start_occurrence,
            starter.is_running,
        )
    )  # fmt: skip
    rerunner = Rerunner(
        supervisor,
        definitions,
        store,
        load,
        waiters,
        clock.now_ms,
        starter.effective_limits,
        ports.committed,
    )
    wait = waiters.wait
    if cluster is not None and forwarder is not None:
        followed = StartedElsewhere(forwarder, waiters.wait, router.surely_here)
        cluster.watch_started(followed.started)
        wait = followed.wait
    router.routes = routes(
        registry, supervisor.resume, wait, sharing or Remote(),
        starter.flow.cancel_queued,
        terminate_queued=starter.flow.terminate_queued,
        migrate=migrate_here(definitions, registry),
    )  # fmt: skip
    batches = Batches(
        store, router_actions(router, rerunner.rerun), Pacer(config.batch_rate), instance_id,
        clock.now_ms, shared=cluster is not None,
    )  # fmt: skip
    membership = Membership(
        cluster, forwarder, LocalServer(instance_id, address, clock.now_ms(), lambda: len(registry))
    )
    parts = _Parts(
        store, config, clock, instance_id, definitions, registry, supervisor, starter, waiters,
        pool, sessions, scheduler, metrics, load, membership, sharing, router, rerunner, batches,
        wait,
    )  # fmt: skip
    return parts


async def _recover_busy(parts: _Parts, execution_ids: list[str]) -> None:
    """After a restart, bring back in the background what had work in flight; meanwhile a worker
    may resume a session whose tokens are not known yet."""
    try:
        await parts.supervisor.recover_busy(execution_ids)
    finally:
        parts.sessions.recovering = False
    await parts.starter.flow.promote_all()  # what slots freed while it was down let start


async def _load_the_rest(parts: _Parts) -> None:
    """After a restart, load the rest of the wake-up index behind the serving server."""
    after = 0
    while True:
        page, after = await parts.store.wake_index_page(after, INDEX_PAGE)
        if not page:
            break
        parts.registry.load(page)
    parts.registry.end_loading()


async def _cancel_elsewhere(cluster: Cluster, tokens: dict[str, str]) -> None:
    """Tell the other servers to stop ``tokens``; a database error only loses the cancel (the
    result is refused as stale when it comes)."""
    with suppress(StorageError):
        await cluster.cancel_elsewhere(tokens)


async def _report_builtin(
    registry: Registry, token: str, output: Any, failure: ErrorInfo | None
) -> None:
    await registry.report_result(token, None, output, failure)


def _ignore(state: ExecutionState) -> None:
    pass


def _snapshot(parts: _Parts) -> Snapshot:
    """What the metrics' gauges show right now."""
    store = parts.store.statistics()
    sessions = parts.sessions.sessions.values()
    stats = parts.supervisor.stats
    return Snapshot(
        active_executions=len(parts.registry),
        resident_executions=parts.registry.resident,
        quarantined_executions=len(parts.registry.quarantined),
        workers_connected=sum(1 for s in sessions if s.connection is not None),
        worker_sessions=len(parts.sessions.sessions),
        queue_depth=parts.pool.statistics(),
        actor_restarts=stats.restarts,
        quarantines=stats.quarantines,
        store_commits=store.commits,
        store_batches=store.batches,
        store_events=store.events,
        store_largest_batch=store.largest_batch,
        units_waiting=waiting_counts(parts.pool),
    )


class Runtime:
    """The operations of Orbit on one store (see :func:`open_runtime`): the API's facade."""

    def __init__(self, parts: _Parts) -> None:
        self.store = parts.store
        self.config = parts.config
        self.clock = parts.clock
        self.instance_id = parts.instance_id
        self.definitions = parts.definitions
        self.registry = parts.registry
        self.supervisor = parts.supervisor
        self.waiters = parts.waiters
        self.pool = parts.pool
        self.sessions = parts.sessions
        self.scheduler = parts.scheduler
        self.metrics = parts.metrics
        self.task_board = TaskBoard(parts.pool, parts.store, parts.definitions, parts.clock.now_ms)
        self.purger = Purger(
            parts.store, parts.definitions, parts.config.retention_ms, parts.clock.now_ms,
            self._forget,
        )  # fmt: skip
        self._starter = parts.starter
        parts.starter.flow.cancel = self._cancel_quietly
        self._load = parts.load
        self.membership = parts.membership
        self._forwarder = parts.membership.forwarder
        self._router = parts.router
        self._wait_here = parts.wait_here
        self._rerunner = parts.rerunner
        self.batches = parts.batches
        self.upgrades = Upgrades(parts.store, parts.definitions)

    # -- definitions -----------------------------------------------------------------------
    async def register_definition(
        self, source: str | dict[str, Any]
    ) -> tuple[DefinitionRecord, bool]:
        """Register a definition (YAML/JSON text or the IR as data); returns (record, created)."""
        return await self.definitions.register(source, self.clock.now_ms())

    async def list_definitions(self) -> list[DefinitionRecord]:
        """Every registered definition (with another server's, on a shared store)."""
        if self._forwarder is not None:
            await self.definitions.refresh()
        return self.definitions.records()

    async def get_definition(self, name: str, version: str | None = None) -> DefinitionRecord:
        """One definition (the latest by semver when no version is given)."""
        if self._forwarder is not None:
            await self.definitions.refresh()
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
        return await self._starter.start(
            workflow, version, input, execution_id, parent, schedule_id
        )  # positional: a keyword argument costs as much as a small call

    async def start_and_wait(
        self,
        workflow: str,
        *,
        version: str | None = None,
        input: Any = None,
        execution_id: str | None = None,
        timeout: float,
    ) -> tuple[str, bool, ExecutionResult | None]:
        """Start an execution and wait for its end, ``timeout`` seconds from now at most;
        returns (execution_id, created, its result or None if it still runs then). On one
        server the caller sleeps once, from the start to the end: the start's first commit
        hands it to the wait instead of waking it (``POST /v1/executions?wait``)."""
        seconds = self.clock.seconds
        until = seconds() + timeout
        here = until if self._forwarder is None else None
        execution_id, created = await self._starter.start(
            workflow, version, input, execution_id, None, None, here
        )
        try:
            result = await self.wait(execution_id, max(0.0, until - seconds()))
        except WaitTimeoutError:
            return execution_id, created, None
        return execution_id, created, result

    async def signal(self, execution_id: str, name: str, payload: Any) -> int:
        """Deliver a signal; returns its seq."""
        seq: int = await self._router.send(
            execution_id, fw.SignalCommand(name=name, payload=payload)
        )
        return seq

    async def cancel(
        self, execution_id: str, reason: str = "cancelled by request"
    ) -> ExecutionDetail:
        """Cancel an execution; returns its detail."""
        await self._router.send(execution_id, fw.CancelCommand(reason=reason))
        return await self.describe(execution_id)

    async def terminate(
        self, execution_id: str, reason: str = "terminated by request"
    ) -> ExecutionDetail:
        """End an execution at once (no compensation, no handlers); returns its detail."""
        await self._router.send(execution_id, fw.TerminateCommand(reason=reason))
        return await self.describe(execution_id)

    async def pause(self, execution_id: str, reason: str | None = None) -> ExecutionDetail:
        """Stop dispatching an execution's work until it is unpaused; returns its detail."""
        await self._router.send(execution_id, fw.PauseCommand(reason=reason))
        return await self.describe(execution_id)

    async def unpause(self, execution_id: str) -> ExecutionDetail:
        """Dispatch what waited while the execution was paused; returns its detail."""
        await self._router.send(execution_id, fw.UnpauseCommand())
        return await self.describe(execution_id)

    async def rerun(
        self, execution_id: str, *, from_step: str | None = None, input: Any = None,
        version: str | None = None, dry_run: bool = False,
    ) -> RerunPlan | int:  # fmt: skip
        """Rerun a finished execution from a step under the same id: the plan when ``dry_run``
        (nothing is written), else the number of the run that started."""
        return await self._rerunner.rerun(
            execution_id, from_step=from_step, input=input, version=version, dry_run=dry_run
        )

    async def _cancel_quietly(self, execution_id: str, reason: str) -> None:
        """Cancel an execution wherever it runs, if it still runs."""
        with suppress(OrbitError):
            await self.cancel(execution_id, reason)

    async def query(self, execution_id: str, name: str) -> Any:
        """Evaluate a query against the current (or final) state."""
        answered, value = await self.registry.ask(execution_id, cmd.RunQuery(name, reply=Reply()))
        if answered:
            return value
        state, definition = await self._final_or_stored(execution_id)
        return evaluate_query(state, definition, name)

    async def describe(self, execution_id: str) -> ExecutionDetail:
        """The execution's detail."""
        answered, detail = await self.registry.ask(execution_id, cmd.Describe(reply=Reply()))
        if answered:
            live: ExecutionDetail = detail
            return await self.task_board.explain(live)
        state, definition = await self._final_or_stored(execution_id)
        quarantined = self.registry.quarantined.get(execution_id)
        stored = describe(state, definition, quarantined is not None, quarantined)
        return await self.task_board.explain(stored)

    async def delete(self, execution_id: str) -> None:
        """Purge a finished execution now, with its finished children; raises
        ExecutionRunningError or ExecutionNotFoundError (the store decides: a finished
        execution commits nothing more, so nothing in memory can race the purge)."""
        await self.purger.delete(execution_id)

    def _forget(self, execution_ids: list[str]) -> None:
        """Purged executions: nothing in memory may answer for them any more."""
        self.waiters.forget(execution_ids)
        for _ in execution_ids:
            self.metrics.purged.inc()

    async def tasks(self) -> list[TaskStatus]:
        """Every task version a registered workflow uses or an online worker serves, with
        what waits for it here."""
        return self.task_board.tasks()

    async def _final_or_stored(
        self, execution_id: str
    ) -> tuple[ExecutionState, CompiledDefinition]:
        """The state of an execution not in memory: kept from its end, or replayed."""
        return self.waiters.final_state(execution_id) or await self._load(execution_id)

    async def history(self, execution_id: str, run: int | None = None) -> list[Event]:
        """The events of the current run or of run ``run``."""
        return (await self.history_of(execution_id, run))[1]

    async def history_of(
        self, execution_id: str, run: int | None = None
    ) -> tuple[int, list[Event]]:
        """``(run, events)`` of the current run or of run ``run``."""
        row = await self.registry.row(execution_id)
        if run is not None and not 1 <= run <= row.run:
            raise RunNotFoundError(
                f"execution `{execution_id}` has runs 1 to {row.run}; there is no run {run}"
            )
        return run or row.run, await self.store.history(execution_id, run)

    async def list_executions(self, **filters: Any) -> ExecutionPage:
        """Executions newest first (``status``, ``workflow``, ``limit``, ``cursor``)."""
        return await self.store.list_executions(**filters)

    async def wait(self, execution_id: str, timeout: float) -> ExecutionResult:
        """The summary with the output (or the error) once the execution has finished; raises
        WaitTimeoutError."""
        if self._forwarder is None:  # one server: the route's own wait, with no command made
            return await self._wait_here(execution_id, timeout)
        return await self._router.wait(execution_id, timeout)  # asked again if its answer is lost

    async def resume(self, execution_id: str) -> ExecutionDetail:
        """Respawn a quarantined execution from its history."""
        await self._router.send(execution_id, fw.ResumeCommand())
        return await self.describe(execution_id)

    async def report_result(
        self, token: str, worker_id: str | None, output: Any, failure: ErrorInfo | None
    ) -> Verdict:
        """A worker's result for ``token`` sent over HTTP (the same path as the WebSocket's;
        forwarded when the token's execution is owned by another server)."""
        return await self._router.report_result(token, worker_id, output, failure)

    # -- upgrades --------------------------------------------------------------------------
    async def definition(self, name: str, version: str | None) -> CompiledDefinition:
        """A registered definition (another server's too, on a shared store); raises
        WorkflowNotFoundError."""
        try:
            return self.definitions.resolve(name, version)
        except WorkflowNotFoundError:
            await self.definitions.refresh()
            return self.definitions.resolve(name, version)

    async def check_candidate(
        self, name: str, version: str, source: str | dict[str, Any], limit: int,
        cursor: str | None,
    ) -> tuple[CompiledDefinition, CheckPage]:  # fmt: skip
        """Check a candidate against one page of the running executions of ``name@version``."""
        base = await self.definition(name, version)
        candidate = await self.upgrades.candidate(source, name)
        return candidate, await self.upgrades.check(base, candidate, limit, cursor)

    async def migrate(self, request: MigrationRequest) -> MigrationResult:
        """Move the running executions of ``from_version`` the check finds compatible onto
        ``to_version``; everything is validated before the first execution moves."""
        await self.definition(request.workflow, request.from_version)
        target = await self.definition(request.workflow, request.to_version)
        plan = await plan_migration(self.store, self.upgrades, request, target)
        if request.dry_run:
            return MigrationResult(plan.compatible, plan.skipped)
        result = MigrationResult([], list(plan.skipped))
        for execution_id in plan.compatible:
            outcome = await self._migrate_one(execution_id, request.from_version, target)
            result.add(execution_id, outcome)
        return result

    async def _migrate_one(
        self, execution_id: str, from_version: str, target: CompiledDefinition
    ) -> dict[str, Any]:
        command = fw.MigrateCommand(
            from_version=from_version, definition_hash=target.definition_hash
        )
        try:
            answer: dict[str, Any] = await self._router.send(execution_id, command)
        except OrbitError as exc:
            return {"migrated": False, "first_divergent_seq": None, "reason": str(exc)}
        return answer

    async def replay(
        self, execution_id: str, run: int | None, at: int | None,
        candidate: str | dict[str, Any] | None = None,
    ) -> tuple[int, ReplayPoint, CompiledDefinition | None, Divergence | None]:  # fmt: skip
        """One point of a run, decided by the definition in force there or by a candidate of
        the execution's workflow (then with its first divergence); writes nothing."""
        compiled = None
        if candidate is not None:
            row = await self.registry.row(execution_id)
            compiled = await self.upgrades.candidate(candidate, row.workflow)
        number, point, divergence = await self.upgrades.replay(execution_id, run, at, compiled)
        return number, point, compiled, divergence

    async def servers(self) -> list[ServerRecord]:
        """The servers sharing this store, each with how many running executions it owns."""
        return await self.membership.servers(self.clock.now_ms())

    # -- schedules -------------------------------------------------------------------------
    async def create_schedule(
        self, spec: ScheduleSpec, paused: bool = False
    ) -> tuple[Schedule, bool]:
        """Create a schedule; returns (view, created). The same id with the same fields answers
        created=False; with other fields ScheduleExistsError."""
        answer: tuple[Schedule, bool] = await self.scheduler.request(
            cmd.CreateSchedule(spec, paused, reply=Reply())
        )
        return answer

    async def schedules(self, schedule_id: str | None = None) -> list[Schedule]:
        """Every schedule (or the one named), with its next occurrences and last executions."""
        views: list[Schedule] = await self.scheduler.request(
            cmd.ShowSchedules(schedule_id, reply=Reply())
        )
        return views

    async def delete_schedule(self, schedule_id: str) -> None:
        """Delete a schedule; executions it started go on."""
        await self.scheduler.request(cmd.DeleteSchedule(schedule_id, reply=Reply()))

    async def pause_schedule(self, schedule_id: str, paused: bool = True) -> Schedule:
        """Pause a schedule (or resume it: what was missed while paused does not fire)."""
        view: Schedule = await self.scheduler.request(
            cmd.PauseSchedule(schedule_id, paused, reply=Reply())
        )
        return view

    async def trigger_schedule(self, schedule_id: str) -> str:
        """Fire an occurrence for the current second now, whether paused or not; returns its
        execution id (OverlapSkippedError when overlap skips it)."""
        execution_id: str = await self.scheduler.request(
            cmd.TriggerSchedule(schedule_id, reply=Reply())
        )
        return execution_id

    # -- workers ---------------------------------------------------------------------------
    def connect(
        self, send: Send, close: Any = None, bound_worker_id: str | None = None,
        send_ack: SendAck | None = None, send_task: SendTask | None = None,
    ) -> Connection:  # fmt: skip
        """A worker connection; the gateway feeds it decoded messages. ``bound_worker_id`` is
        the worker its credentials name, if they name one; ``send_ack`` and ``send_task``, see
        :meth:`~.actors.sessions.SessionManager.connect`."""
        return self.sessions.connect(send, close, bound_worker_id, send_ack, send_task)

    async def workers(self) -> list[Worker]:
        """Every worker ever registered, with its live sessions and tasks in flight."""
        live: dict[str, list[WorkerSession]] = {}
        for session in self.sessions.sessions.values():
            live.setdefault(session.worker_id, []).append(session)
        out = []
        for record in await self.store.workers():
            sessions = live.get(record.worker_id, [])
            out.append(Worker(
                worker_id=record.worker_id, runtime=record.runtime, sdk=record.sdk,
                contracts=record.contracts, last_seen_ms=record.last_seen_ms,
                registered_at_ms=record.registered_at_ms,
                online=any(s.connection is not None for s in sessions),
                sessions=len(sessions),
                inflight=sum(self.pool.inflight(s.id) for s in sessions),
            ))  # fmt: skip
        return out


__all__ = ["Runtime", "RuntimeConfig", "open_runtime", "summary", "tune_gc"]
