"""What the API shows of an execution: its stored row, its summary and its detail, from its
state."""

from __future__ import annotations

from typing import Any

from ..decide.context import abort_cause
from ..decide.invocation import CHILD_SESSION
from ..history.state import ExecutionState
from ..ir.plan import CompiledDefinition
from ..store.base import ExecutionRow
from .models import (
    ChildLink,
    ExecutionDetail,
    ExecutionResult,
    ExecutionSummary,
    PendingSignal,
    ResultError,
    Unit,
)
from .unchecked import unchecked
from .waiting import concurrency_waiting


def _status(state: ExecutionState) -> str:
    """A continued run keeps the execution running; one created and not started waits for a
    slot of its concurrency key (``queued``)."""
    if state.created and not state.started and not state.finished:
        return "queued"
    return "running" if state.status == "continued_as_new" else state.status


def _closed_at(state: ExecutionState) -> int | None:
    closed = state.finished and state.status != "continued_as_new"
    return state.closed_at_ms if closed else None


def row_of(state: ExecutionState) -> ExecutionRow:
    """The summary row a commit writes for ``state`` (built on every commit: kept direct, and
    positional in the row's field order, since keywords cost twice as much for its 15 fields;
    wake_at_ms and busy are the actor's to fill in)."""
    parent = state.parent
    flow = state.flow
    return ExecutionRow(
        state.execution_id, state.workflow, state.version, state.definition_hash,
        _status(state), state.run, state.started_at_ms or 0,
        _closed_at(state),
        parent.execution_id if parent else None,  # parent_id
        state.schedule_id, state.last_seq, None, True, state.paused,
        flow.key if flow is not None else None,  # flow_key
    )  # fmt: skip


def row_summary(row: ExecutionRow) -> ExecutionSummary:
    """The API's execution summary of a stored row."""
    return ExecutionSummary(
        execution_id=row.execution_id, workflow=row.workflow, version=row.version,
        status=row.status, run=row.run, started_at_ms=row.started_at_ms,
        closed_at_ms=row.closed_at_ms, parent_id=row.parent_id, schedule_id=row.schedule_id,
        paused=bool(row.paused),
    )  # fmt: skip


def summary(state: ExecutionState) -> ExecutionSummary:
    """The API's execution summary of ``state``."""
    return ExecutionSummary(**_summary_fields(state))


def _summary_fields(state: ExecutionState) -> dict[str, Any]:
    return {
        "execution_id": state.execution_id, "workflow": state.workflow,
        "version": state.version, "status": _status(state), "run": state.run,
        "started_at_ms": state.started_at_ms, "closed_at_ms": _closed_at(state),
        "parent_id": state.parent.execution_id if state.parent else None,
        "schedule_id": state.schedule_id, "paused": state.paused,
    }  # fmt: skip


def result_of(
    state: ExecutionState, definition: CompiledDefinition, row: ExecutionRow | None = None
) -> ExecutionResult:
    """The ``wait`` answer of a finished run (its summary from ``row`` when given: the stored
    row keeps the first run's start time)."""
    fields = row_summary(row).model_dump() if row is not None else _summary_fields(state)
    fields["output"], fields["error"] = state.output, terminal_error(state, definition)
    return unchecked(ExecutionResult, fields, _RESULT_FIELDS)  # once per execution: unvalidated


_RESULT_FIELDS = frozenset(ExecutionResult.model_fields)


def terminal_error(state: ExecutionState, definition: CompiledDefinition) -> ResultError | None:
    """Why a finished run did not complete: its failure, or the cancel or timeout that ended
    it (the error its handlers saw); None while it runs or once it completed."""
    if state.status == "failed" and state.error is not None:
        found = state.error
    elif state.status == "terminated":
        return ResultError(code="TERMINATED", message=state.terminate_reason or "terminated")
    elif state.status in ("cancelled", "timed_out"):
        cause = abort_cause(state, definition)
        if cause is None:  # a history always marks why it aborted; say what is known
            code = "CANCELLED" if state.status == "cancelled" else "TIMED_OUT"
            return ResultError(code=code, message=state.status.replace("_", " "))
        found = cause.error
    else:
        return None
    return ResultError(code=found.code, message=found.message, details=found.details)


def describe(
    state: ExecutionState,
    definition: CompiledDefinition,
    quarantined: bool = False,
    last_error: str | None = None,
) -> ExecutionDetail:
    """The detail: the summary plus input, output, error, units, pending signals, children
    (and, while quarantined, the last error)."""
    units = []
    children = []
    for unit in state.units.values():
        status = unit.status
        if status == "scheduled" and definition.plans[unit.step_id].kind in ("await", "sleep"):
            status = "waiting"
        units.append(Unit(
            key=unit.key, step=unit.step_id, status=status, attempt=unit.attempt,
            redelivery=unit.redelivery, worker_id=unit.worker_id,
            dispatched_at_ms=unit.dispatched_at_ms, deadline_ms=unit.deadline_ms,
            error=unit.error,
        ))  # fmt: skip
        session = unit.session
        if session is not None and session.startswith(CHILD_SESSION):  # names the child
            children.append(ChildLink(key=unit.key, execution_id=session[len(CHILD_SESSION) :]))
    pending = [
        PendingSignal(seq=seq, name=state.signals[seq].name)
        for seq in sorted(s for queue in state.undelivered.values() for s in queue)
    ]
    return ExecutionDetail(
        **_summary_fields(state), input=state.input, output=state.output, error=state.error,
        units=units, pending_signals=pending, children=children, quarantined=quarantined,
        last_error=last_error, waiting=concurrency_waiting(state, definition),
    )  # fmt: skip
