"""Why a unit waits for a worker, in one reason and one sentence (operations.md, "Why work
waits"). Pure: the caller gathers what the pool and the worker records say.

The reasons are checked in the order an operator would act on them: a paused execution waits
whatever the workers do (``paused``); otherwise a task no online worker serves waits for one
(``no_worker``, naming the worker last seen serving it, if any); otherwise every worker serving
it is busy (``workers_busy``). ``rate_limited`` and ``concurrency`` join this order where flow
control decides them: an execution queued for a slot of its concurrency key waits for
``concurrency``; a unit over its task's rate limit waits for ``rate_limited`` (the pool knows
which: :meth:`~orbit_actors.actors.pool.WorkerPool.rate_limited`)."""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import BaseModel

from ..decide.invocation import RateTake
from ..history.state import ExecutionState
from ..ir.plan import CompiledDefinition

WAITING_REASONS = ("no_worker", "workers_busy", "paused", "rate_limited", "concurrency")

_UNITS = (("d", 86_400_000), ("h", 3_600_000), ("m", 60_000), ("s", 1_000))


class Waiting(BaseModel):
    """Why a unit waits: ``reason`` (one of :data:`WAITING_REASONS`) and a sentence."""

    reason: str
    message: str


@dataclass(frozen=True)
class Served:
    """What is known of a task version's workers: how many online workers serve it, their
    capacity and tokens in use, and the worker last seen announcing it (id and when)."""

    workers_online: int = 0
    capacity: int = 0
    in_flight: int = 0
    last_seen: tuple[str, int] | None = None


def why_waiting(
    task: str, version: str, served: Served, now_ms: int, *, paused: bool = False
) -> Waiting:
    """Why a unit of ``task@version`` waits at ``now_ms``."""
    contract = f"{task}@{version}"
    if paused:
        return Waiting(reason="paused", message="the execution is paused; unpause it to go on")
    if served.workers_online == 0:
        return Waiting(reason="no_worker", message=_no_worker(contract, served, now_ms))
    workers = "1 worker" if served.workers_online == 1 else f"{served.workers_online} workers"
    return Waiting(
        reason="workers_busy",
        message=(
            f"every online worker serving {contract} is busy ({workers}, "
            f"{served.in_flight} of {served.capacity} slots in use)"
        ),
    )


def _no_worker(contract: str, served: Served, now_ms: int) -> str:
    if served.last_seen is None:
        return f"no online worker serves {contract}; no worker has ever announced it"
    worker_id, seen_ms = served.last_seen
    return f"no online worker serves {contract}; last seen {worker_id} {ago(now_ms - seen_ms)}"


def ago(ms: int) -> str:
    """``3h ago``: a time span in its largest whole unit (``just now`` under a second)."""
    for unit, size in _UNITS:
        if ms >= size:
            return f"{ms // size}{unit} ago"
    return "just now"


CONCURRENCY = "concurrency"
RATE_LIMITED = "rate_limited"


def concurrency_waiting(state: ExecutionState, definition: CompiledDefinition) -> Waiting | None:
    """Why a queued execution waits (None when it is not queued)."""
    plan = definition.flow.concurrency
    if not state.created or state.started or state.finished or plan is None:
        return None
    key = state.flow.key if state.flow is not None else None
    return Waiting(
        reason=CONCURRENCY,
        message=f"concurrency key `{key}` of {definition.name}@{definition.version} already runs "
        f"{plan.limit} executions (limit {plan.limit}); it starts when one of them ends",
    )


def rate_limited_waiting(rate: RateTake) -> Waiting:
    """Why a unit over its task's rate limit waits."""
    per = f"{rate.per_ms / 1000:g}s" if rate.per_ms % 1000 == 0 else f"{rate.per_ms}ms"
    return Waiting(
        reason=RATE_LIMITED,
        message=f"{rate.task} may be dispatched {rate.limit} times per {per} for key "
        f"`{rate.key}`; it goes out when that allows",
    )
