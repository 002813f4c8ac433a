"""What a committed batch asks the world to do: units to hand out, tokens to cancel at their
workers, children to cancel. Derived from the batch and the state after it, so an actor only
carries these out and never re-derives workflow semantics."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..history import events as ev
from ..history.state import ExecutionState, Unit
from ..ir.plan import CompiledDefinition
from .invocation import Invocation, TaskInvocation, child_execution_id, invocation
from .operate import PARENT_TERMINATED


@dataclass(slots=True)
class Effects:
    """The outward consequences of one committed batch."""

    ready: list[Invocation] = field(default_factory=list)
    withdrawn: list[TaskInvocation] = field(default_factory=list)  # no worker took them in time
    cancel_tokens: dict[str, str] = field(default_factory=dict)
    cancel_children: dict[str, str] = field(default_factory=dict)
    terminate_children: dict[str, str] = field(default_factory=dict)
    finished: bool = False


def effects_of(
    state: ExecutionState, definition: CompiledDefinition, batch: list[ev.Event]
) -> Effects:
    """The effects of ``batch``, read against ``state`` after the batch was applied.

    A token is cancelled when its unit was cancelled, timed out, or resolved by another attempt,
    and when a run ends with tokens still out; a child is cancelled when the unit waiting for it
    is cancelled. Cancelling a token a worker already reported is harmless: sessions drop it."""
    out = Effects([], [], {}, {}, {}, state.status != "running")  # positional: half the cost
    for event in batch:
        handler = _EFFECT.get(event.type)
        if handler is not None:
            handler(state, definition, event, out)
    return out


def _ready(
    state: ExecutionState, definition: CompiledDefinition, e: ev.StepScheduled, out: Effects
) -> None:
    unit = state.units[e.step]
    if state.paused:  # it waits for the unpause, which makes it ready
        return
    if unit.status == "scheduled" and unit.attempt == e.attempt and not state.finished:
        found = invocation(state, definition, e.step)
        if found is not None:
            ready = out.ready
            if ready:  # a unit scheduled again in the same batch: its latest attempt only
                ready[:] = [r for r in ready if r.key != e.step]
            ready.append(found)


def _cancelled(
    state: ExecutionState, definition: CompiledDefinition, e: ev.StepCancelled, out: Effects
) -> None:
    unit = state.units[e.step]
    _cancel_tokens(unit, e.reason, out)
    plan = definition.plans[unit.step_id]
    if plan.kind == "workflow" and unit.role != "compensate" and unit.tokens:
        child = child_execution_id(state.execution_id, state.run, unit.key)
        out.cancel_children[child] = "parent workflow aborted"


def _timed_out(
    state: ExecutionState, definition: CompiledDefinition, e: ev.StepAttemptFailed, out: Effects
) -> None:
    if e.error.code == "SCHEDULE_TIMEOUT":
        found = invocation(state, definition, e.step)
        if isinstance(found, TaskInvocation) and found.attempt == e.attempt:
            out.withdrawn.append(found)
        return
    if e.error.code != "TIMEOUT":
        return
    unit = state.units[e.step]
    for token, attempt in unit.tokens.items():
        if attempt == e.attempt:
            out.cancel_tokens[token] = "attempt timed out"


def _resolved(
    state: ExecutionState,
    definition: CompiledDefinition,
    e: ev.StepSucceeded | ev.StepFailed,
    out: Effects,
) -> None:
    unit = state.units.get(e.step)
    if unit is not None:
        reason = "step already resolved" if e.type == "StepSucceeded" else "step failed"
        _cancel_tokens(unit, reason, out)


def _unpaused(
    state: ExecutionState, definition: CompiledDefinition, e: ev.Event, out: Effects
) -> None:
    """Everything that waited while the execution was paused is ready."""
    if state.finished:
        return
    for unit in state.units.values():
        if unit.status == "scheduled":
            found = invocation(state, definition, unit.key)
            if found is not None:
                out.ready.append(found)


def _terminated(
    state: ExecutionState, definition: CompiledDefinition, e: ev.Event, out: Effects
) -> None:
    """Attempts in flight are stopped at their workers; running children are terminated."""
    for unit in state.units.values():
        if unit.resolved:
            continue
        _cancel_tokens(unit, "execution terminated", out)
        plan = definition.plans[unit.step_id]
        if plan.kind == "workflow" and unit.role != "compensate" and unit.tokens:
            child = child_execution_id(state.execution_id, state.run, unit.key)
            out.terminate_children[child] = PARENT_TERMINATED


def _cancel_tokens(unit: Unit, reason: str, out: Effects) -> None:
    for token in unit.tokens:
        out.cancel_tokens.setdefault(token, reason)


_EFFECT: dict[str, Callable[[ExecutionState, CompiledDefinition, Any, Effects], None]] = {
    "StepScheduled": _ready,
    "StepCancelled": _cancelled,
    "StepAttemptFailed": _timed_out,
    "StepSucceeded": _resolved,
    "StepFailed": _resolved,
    "ExecutionUnpaused": _unpaused,
    "WorkflowTerminated": _terminated,
}
