"""What waits for which task, and why: the answer of ``GET /v1/tasks``, the ``waiting`` of every
unit in an execution's detail that waits for a worker, and the counts behind the metric
``orbit_units_waiting{task,version,reason}``. It reads the worker pool (who serves a task here,
what is queued) and the worker records (who was last seen announcing a task)."""

from __future__ import annotations

from collections.abc import Callable

from ..decide.invocation import unit_task
from ..errors import WorkflowNotFoundError
from ..ir.plan import CompiledDefinition
from ..store.base import Store, WorkerRecord
from ..store.definitions import DefinitionRegistry
from ..views.models import ExecutionDetail, TaskStatus
from ..views.waiting import Served, why_waiting
from .pool import TaskLoad, WorkerPool

Contract = tuple[str, str]


class TaskBoard:
    """Reads ``pool``, the worker records of ``store`` and the registered ``definitions``."""

    def __init__(
        self,
        pool: WorkerPool,
        store: Store,
        definitions: DefinitionRegistry,
        now_ms: Callable[[], int],
    ) -> None:
        self._pool = pool
        self._store = store
        self._definitions = definitions
        self._now_ms = now_ms

    def tasks(self) -> list[TaskStatus]:
        """Every task version a registered workflow uses or an online worker serves."""
        loads = self._pool.loads()
        contracts = set(loads) | self._declared()
        now = self._now_ms()
        return [_status(contract, loads.get(contract), now) for contract in sorted(contracts)]

    async def explain(self, detail: ExecutionDetail) -> ExecutionDetail:
        """``detail`` with ``waiting`` on each unit that waits for a worker: ``paused`` while its
        execution is paused, else what the workers say (``no_worker``, ``workers_busy``)."""
        definition = self._definition(detail)
        waiting = [u for u in detail.units if u.status == "scheduled"]
        if definition is None or not waiting:
            return detail
        loads = self._pool.loads()
        records: list[WorkerRecord] | None = None
        now = self._now_ms()
        for unit in waiting:
            task = unit_task(definition, unit.key)
            if task is None:
                continue
            contract = (task, definition.task(task).version)
            load = loads.get(contract)
            if (load is None or not load.workers) and records is None:
                records = await self._store.workers()
            served = _served(load, _last_seen(records or [], contract))
            unit.waiting = why_waiting(*contract, served, now, paused=detail.paused)
        return detail

    def _definition(self, detail: ExecutionDetail) -> CompiledDefinition | None:
        try:
            return self._definitions.resolve(detail.workflow, detail.version)
        except WorkflowNotFoundError:
            return None

    def _declared(self) -> set[Contract]:
        found: set[Contract] = set()
        for record in self._definitions.records():
            definition = self._definitions.by_hash(record.definition_hash)
            if definition is not None:
                found.update((name, c.version) for name, c in definition.ir.tasks.items())
        return found


def waiting_counts(pool: WorkerPool) -> dict[tuple[str, str, str], int]:
    """Units queued in ``pool`` by ``(task, version, reason)`` (the metric's series)."""
    counts: dict[tuple[str, str, str], int] = {}
    for (task, version), load in pool.loads().items():
        if load.waiting:
            reason = "workers_busy" if load.workers else "no_worker"
            counts[(task, version, reason)] = load.waiting
    return counts


def _status(contract: Contract, load: TaskLoad | None, now_ms: int) -> TaskStatus:
    load = load or TaskLoad()
    oldest = load.oldest_since_ms
    return TaskStatus(
        task=contract[0], version=contract[1], workers_online=len(load.workers),
        capacity=load.capacity, in_flight=load.in_flight, waiting=load.waiting,
        oldest_waiting_ms=None if oldest is None else max(0, now_ms - oldest),
    )  # fmt: skip


def _served(load: TaskLoad | None, last_seen: tuple[str, int] | None) -> Served:
    if load is None:
        return Served(last_seen=last_seen)
    return Served(len(load.workers), load.capacity, load.in_flight, last_seen)


def _last_seen(records: list[WorkerRecord], contract: Contract) -> tuple[str, int] | None:
    """The worker last seen among those that ever announced ``contract``."""
    found: tuple[str, int] | None = None
    for record in records:
        announced = any(
            (c.get("task_name"), c.get("contract_version")) == contract for c in record.contracts
        )
        if announced and (found is None or record.last_seen_ms > found[1]):
            found = (record.worker_id, record.last_seen_ms)
    return found
