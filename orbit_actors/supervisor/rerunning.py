"""Rerunning a finished execution from a step (operations.md, "Rerun from a step"): the plan
(decide/rerun.py), then the next run's first events committed as a rollover and its actor
spawned, which decides the rest. One rerun of an execution at a time."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import trio

from ..decide.rerun import RerunPlan, plan_rerun, rerun_events
from ..decide.rest import rest_of
from ..errors import ExecutionRunningError, WorkflowNotFoundError
from ..history.apply import replay
from ..history.events import EffectiveLimits
from ..ir.plan import CompiledDefinition
from ..store.base import Commit, Store
from ..store.definitions import DefinitionRegistry
from ..views import row_of
from .loading import Loader
from .registry import Registry
from .supervisor import Supervisor
from .waiters import Waiters


class Rerunner:
    """Reruns finished executions (see the module docstring)."""

    def __init__(
        self, supervisor: Supervisor, definitions: DefinitionRegistry, store: Store, load: Loader,
        waiters: Waiters, now_ms: Callable[[], int],
        limits: Callable[[CompiledDefinition], EffectiveLimits],
    ) -> None:  # fmt: skip
        self._supervisor = supervisor
        self._registry: Registry = supervisor.registry
        self._definitions = definitions
        self._store = store
        self._load = load
        self._waiters = waiters
        self._now_ms = now_ms
        self._limits = limits
        self._locks: dict[str, trio.Lock] = {}

    async def rerun(
        self, execution_id: str, *, from_step: str | None = None, input: Any = None,
        version: str | None = None, dry_run: bool = False,
    ) -> RerunPlan | int:  # fmt: skip
        """The plan (``dry_run``: nothing is written) or the number of the run that started."""
        lock = self._locks.setdefault(execution_id, trio.Lock())
        try:
            async with lock:
                return await self._rerun(execution_id, from_step, input, version, dry_run)
        finally:
            if not lock.statistics().tasks_waiting:
                self._locks.pop(execution_id, None)

    async def _rerun(
        self, execution_id: str, from_step: str | None, input: Any, version: str | None,
        dry_run: bool,
    ) -> RerunPlan | int:  # fmt: skip
        row = await self._registry.row(execution_id)
        registry = self._registry
        running = execution_id in registry or execution_id in registry.quarantined
        if running or row.status == "running":
            raise ExecutionRunningError(
                f"execution `{execution_id}` is running; cancel or terminate it first"
            )
        previous, old = await self._load(execution_id)
        new = old if version is None else await self._version(old.name, version)
        plan = plan_rerun(previous, old, new, from_step)
        if dry_run:
            return plan
        now = self._now_ms()
        events = rerun_events(previous, plan, new, input=input, limits=self._limits(new), now=now)
        state = replay(events)
        summary = row_of(state)
        summary.wake_at_ms = rest_of(state, new).wake_at_ms
        summary.busy = True  # its first decisions are still to be made: a restart makes them
        with trio.CancelScope(shield=True):  # a stored run always gets its actor
            await self._store.commit(Commit(summary, events, rollover=True))
            self._waiters.forget(execution_id)
            self._supervisor.spawn(state, new)
        return state.run

    async def _version(self, workflow: str, version: str) -> CompiledDefinition:
        """Another registered version of the same workflow (WorkflowNotFoundError)."""
        try:
            return self._definitions.resolve(workflow, version)
        except WorkflowNotFoundError:
            await self._definitions.refresh()  # another server sharing the store may have it
            return self._definitions.resolve(workflow, version)
