"""Why work waits for flow control, as ``waiting: {reason, message}`` (operations.md, "Why work
waits"): an execution queued for a slot of its concurrency key waits for ``concurrency``; a unit
over its task's rate limit waits for ``rate_limited`` (the pool knows which:
:meth:`~orbit_actors.actors.pool.WorkerPool.rate_limited`)."""

from __future__ import annotations

from ..decide.invocation import RateTake
from ..history.state import ExecutionState
from ..ir.plan import CompiledDefinition
from .models import Waiting

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
