"""What an operator's actions record: terminate, pause and unpause (operations.md). Each function
is pure: it checks the action against the state and returns the events to commit, or raises the
error the caller answers with."""

from __future__ import annotations

from ..errors import ExecutionFinishedError, NotPausedError
from ..history import events as ev
from ..history.state import ExecutionState, Unit
from ..ir.plan import CompiledDefinition
from .invocation import RUN_KINDS, unit_kind

PARENT_TERMINATED = "parent terminated"


def _refuse_if_finished(state: ExecutionState) -> None:
    if state.finished and state.status != "continued_as_new":
        raise ExecutionFinishedError(state.status)


def terminate(state: ExecutionState, reason: str, now: int) -> list[ev.Event]:
    """``WorkflowTerminated``: the run ends at once, with no compensation and no handlers (its
    attempts in flight and running children are stopped as effects)."""
    _refuse_if_finished(state)
    return [ev.WorkflowTerminated(seq=state.last_seq + 1, timestamp_ms=now, reason=reason)]


def pause(state: ExecutionState, reason: str | None, now: int) -> list[ev.Event]:
    """``ExecutionPaused``, or nothing when the execution is paused already."""
    _refuse_if_finished(state)
    if state.paused:
        return []
    return [ev.ExecutionPaused(seq=state.last_seq + 1, timestamp_ms=now, reason=reason)]


def unpause(state: ExecutionState, execution_id: str, now: int) -> list[ev.Event]:
    """``ExecutionUnpaused``; raises NotPausedError for an execution that is not paused."""
    _refuse_if_finished(state)
    if not state.paused:
        raise NotPausedError(f"execution `{execution_id}` is not paused")
    return [ev.ExecutionUnpaused(seq=state.last_seq + 1, timestamp_ms=now)]


def waits_for_unpause(state: ExecutionState, definition: CompiledDefinition, unit: Unit) -> bool:
    """True when ``unit`` is ready to dispatch and waits only because the execution is paused
    (what "why work waits" reports as ``paused``)."""
    return (
        state.paused
        and not state.finished
        and unit.status == "scheduled"
        and unit_kind(definition, unit) in RUN_KINDS
    )
