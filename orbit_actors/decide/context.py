"""What every decision reads and writes: the state, the definition, ``now``, the abort cause if
any, and the batch of events being built (numbered from the state's last seq)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..history import events as ev
from ..history.state import AbortKind, ExecutionState, Unit, UnitKey
from ..ir.durations import format_duration
from ..ir.expressions import Scope
from ..ir.jsontext import json_bytes
from ..ir.plan import CompiledDefinition, StepPlan
from .invocation import unit_task


def error(
    code: str, message: str, *, retryable: bool = False, details: dict[str, Any] | None = None
) -> ev.ErrorInfo:
    """An :class:`ErrorInfo` (non-retryable unless said)."""
    return ev.ErrorInfo(code=code, message=message, retryable=retryable, details=details)


@dataclass(frozen=True)
class Abort:
    """Why the run aborts: its kind, the seq that started it, and the ``error`` handlers see."""

    kind: AbortKind
    seq: int
    error: ev.ErrorInfo
    step: str | None = None

    @property
    def handler_list(self) -> str:
        """The handler list that runs for this abort."""
        return {"failure": "on_failure", "limit": "on_failure", "cancel": "on_cancel"}.get(
            self.kind, "on_timeout"
        )

    @property
    def cancel_reason(self) -> str:
        """The reason recorded on units cancelled by this abort (and pushed to their workers)."""
        if self.kind == "failure":
            return f"workflow aborted: step `{self.step}` failed"
        if self.kind == "cancel":
            return "execution cancelled"
        if self.kind == "timeout":
            return "run timed out"
        return "workflow aborted: limit exceeded"


def abort_cause(state: ExecutionState, definition: CompiledDefinition) -> Abort | None:
    """The earliest abort trigger of the run: a fatal step failure, a cancel, the run timeout or
    a limit — or None while the run goes on normally."""
    found: Abort | None = None
    for seq, step_id in state.failed_steps:
        plan = definition.plans.get(step_id)
        if plan is not None and plan.step.on_error == "fail":
            failure = state.steps[step_id].error or error("FAILED", f"step `{step_id}` failed")
            found = Abort("failure", seq, failure, step_id)
            break
    mark = state.abort_mark
    if mark is not None and (found is None or mark.seq < found.seq):
        found = Abort(mark.kind, mark.seq, _mark_error(mark.kind, mark.reason, definition))
    return found


def _mark_error(kind: AbortKind, reason: str, definition: CompiledDefinition) -> ev.ErrorInfo:
    if kind == "cancel":
        return error("CANCELLED", reason)
    if kind == "timeout":
        timeout = format_duration(definition.timeout_ms or 0)
        return error("TIMED_OUT", f"the run exceeded its timeout of {timeout}")
    return error("LIMIT_EXCEEDED", reason)


@dataclass(slots=True)
class Context:
    """One call of the decider: read ``state`` and ``definition``, append to ``events``;
    ``looked`` is how many main steps had resolved when the main steps' phase looked."""

    state: ExecutionState
    definition: CompiledDefinition
    now: int
    abort: Abort | None
    events: list[ev.Event] = field(default_factory=list)
    looked: int | None = None

    def add(self, cls: type[Any], **fields: Any) -> None:
        """Append an event of type ``cls``, numbered after the state and the batch so far."""
        seq = self.state.last_seq + len(self.events) + 1
        self.events.append(cls(seq=seq, timestamp_ms=self.now, **fields))

    def schedule(
        self, key: str, attempt: int, unit_input: Any, *, again: Unit | None = None,
        redelivery: bool = False,
    ) -> None:  # fmt: skip
        """Append ``StepScheduled`` for an attempt of unit ``key``, with the time by which a
        worker must take it when its task has a ``schedule_to_start``; ``again`` is the unit
        when this schedules it once more (its idempotency key stays)."""
        task = unit_task(self.definition, key)
        wait = self.definition.schedule_to_start_ms(task) if task is not None else None
        state, now = self.state, self.now
        # built here by position, not by add(): each keyword argument costs as much again as the
        # slot it fills (seq, timestamp_ms, step, attempt, input, idempotency_key, redelivery,
        # start_by_ms)
        self.events.append(
            ev.StepScheduled(
                state.last_seq + len(self.events) + 1, now, key, attempt, unit_input,
                again.idempotency_key if again else state.idempotency_key(key), redelivery,
                None if wait is None else now + wait,
            )
        )  # fmt: skip

    def schedule_step(self, plan: StepPlan, unit_input: Any) -> None:
        """``schedule(plan.key, 1, unit_input)``: the first attempt of a step's own unit (every
        task step starts here), its task read from the plan instead of parsed from the key."""
        task = plan.step.task if plan.kind == "task" else None
        wait = self.definition.schedule_to_start_ms(task) if task is not None else None
        state, now, key = self.state, self.now, plan.key
        self.events.append(
            ev.StepScheduled(
                state.last_seq + len(self.events) + 1, now, key, 1, unit_input,
                state.idempotency_key(key), False, None if wait is None else now + wait,
            )
        )  # fmt: skip

    def task_of(self, key: str) -> str | None:
        """The worker task unit ``key`` runs (None for units no worker runs)."""
        return unit_task(self.definition, key)

    def plan_of(self, unit_key: str) -> StepPlan:
        """The step plan a unit key belongs to."""
        return self.definition.plans[UnitKey.parse(unit_key).step_id]

    def scope(self, plan: StepPlan | None = None, index: int | None = None) -> Scope:
        """The expression scope of a step (of one element, with ``index``)."""
        values: dict[str, Any] = {"input": self.state.input}
        if plan is not None and index is not None:
            items = self.state.steps[plan.id].items or []
            values[plan.step.item_name] = items[index]
            values["index"] = index
        if plan is not None and plan.role == "handler" and self.abort is not None:
            values["error"] = self.abort.error.public()
        return Scope(values, self.state, self.definition.plans, _LAZY)


_LAZY: dict[str, Callable[[ExecutionState], Any]] = {"execution": ExecutionState.execution_view}
"""What a step's scope computes only when an expression reads it."""


payload_bytes = json_bytes
"""The size of a value as serialized JSON (what payload limits count)."""
