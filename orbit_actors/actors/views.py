"""What the API shows of an execution: its summary and its detail, from its state."""

from __future__ import annotations

from typing import Any

from ..decide.invocation import ChildInvocation, invocation
from ..history.state import ExecutionState
from ..ir.plan import CompiledDefinition
from ..store.base import ExecutionRow


def row_of(state: ExecutionState) -> ExecutionRow:
    """The summary row a commit writes for ``state``."""
    view = summary(state)
    return ExecutionRow(
        execution_id=state.execution_id,
        workflow=state.workflow,
        version=state.version,
        definition_hash=state.definition_hash,
        status=view["status"],
        run=state.run,
        started_at_ms=state.started_at_ms or 0,
        closed_at_ms=view["closed_at_ms"],
        parent_id=view["parent_id"],
        schedule_id=state.schedule_id,
        last_seq=state.last_seq,
    )


def row_summary(row: ExecutionRow) -> dict[str, Any]:
    """The API's execution summary of a stored row."""
    return {
        "execution_id": row.execution_id,
        "workflow": row.workflow,
        "version": row.version,
        "status": row.status,
        "run": row.run,
        "started_at_ms": row.started_at_ms,
        "closed_at_ms": row.closed_at_ms,
        "parent_id": row.parent_id,
        "schedule_id": row.schedule_id,
    }


def summary(state: ExecutionState) -> dict[str, Any]:
    """``{execution_id, workflow, version, status, run, started_at_ms, closed_at_ms, parent_id,
    schedule_id}``."""
    closed = state.finished and state.status != "continued_as_new"
    return {
        "execution_id": state.execution_id,
        "workflow": state.workflow,
        "version": state.version,
        "status": "running" if state.status == "continued_as_new" else state.status,
        "run": state.run,
        "started_at_ms": state.started_at_ms,
        "closed_at_ms": state.closed_at_ms if closed else None,
        "parent_id": state.parent.execution_id if state.parent else None,
        "schedule_id": state.schedule_id,
    }


def describe(
    state: ExecutionState, definition: CompiledDefinition, quarantined: bool = False
) -> dict[str, Any]:
    """The detail: the summary plus input, output, error, units, pending signals, children."""
    units = []
    children = []
    for unit in state.units.values():
        status = unit.status
        if status == "scheduled" and definition.plans[unit.step_id].kind in ("await", "sleep"):
            status = "waiting"
        units.append({
            "key": unit.key, "step": unit.step_id, "status": status, "attempt": unit.attempt,
            "redelivery": unit.redelivery, "worker_id": unit.worker_id,
            "dispatched_at_ms": unit.dispatched_at_ms, "deadline_ms": unit.deadline_ms,
            "error": unit.error.model_dump(mode="json") if unit.error else None,
        })  # fmt: skip
        found = invocation(state, definition, unit.key) if unit.session else None
        if isinstance(found, ChildInvocation):
            children.append({"key": unit.key, "execution_id": found.execution_id})
    pending = [
        {"seq": seq, "name": state.signals[seq].name}
        for seq in sorted(s for queue in state.undelivered.values() for s in queue)
    ]
    return {
        **summary(state),
        "input": state.input,
        "output": state.output,
        "error": state.error.model_dump(mode="json") if state.error else None,
        "units": units,
        "pending_signals": pending,
        "children": children,
        "quarantined": quarantined,
    }
