"""Rerun from a step (operations.md): which steps of a finished run a new run takes over, which
run again, and the first events of that new run. Pure: the previous run's state and the
definitions in, a :class:`RerunPlan` and events out (or the refusal the caller answers with).

A step depends on another through ``after``/``needs``, the order of ``steps`` (a step without
``after`` follows the one before it) or an expression that reads its output: the compiled plan's
``after`` holds all three. Everything that depends on ``from_step``, directly or not, runs again
with ``from_step``; every other step that succeeded is reused with its recorded output.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..errors import (
    ExecutionRunningError,
    FromStepRequiredError,
    RunCompensatedError,
    UnknownStepError,
)
from ..history import events as ev
from ..history.state import ExecutionState
from ..ir.plan import CompiledDefinition
from .invocation import child_execution_id
from .transitions import start_run

RERUN_FROM = frozenset({"failed", "cancelled", "running"})
"""Step statuses a default ``from_step`` is looked for among (``running``: cut by the run's end)."""


@dataclass(frozen=True)
class RerunPlan:
    """What a rerun does: the step it reruns from, the steps it reuses and those it runs again
    (each in the definition's order), and the ids of the children it would start."""

    from_step: str
    reused: list[str]
    rerun: list[str]
    children: list[str]


def plan_rerun(
    previous: ExecutionState,
    old: CompiledDefinition,
    new: CompiledDefinition,
    from_step: str | None,
) -> RerunPlan:
    """The plan of a rerun of ``previous`` (a finished run of ``old``) on ``new``; raises
    ExecutionRunningError, FromStepRequiredError, UnknownStepError or RunCompensatedError."""
    execution_id = previous.execution_id
    if not previous.finished or previous.status == "continued_as_new":
        raise ExecutionRunningError(execution_id)
    start = from_step if from_step is not None else _default_from_step(previous, old)
    if start not in new.plans or start not in new.main:
        steps = ", ".join(new.main)
        raise UnknownStepError(f"{new.name}@{new.version} has no step `{start}`; steps: {steps}")
    again = _depending_on(new, start)
    reused = [
        step_id for step_id in new.main if step_id not in again and _succeeded(previous, step_id)
    ]
    _refuse_compensated(previous, reused)
    rerun = [step_id for step_id in new.main if step_id not in reused]
    run = previous.run + 1
    children = [
        child_execution_id(execution_id, run, step_id)
        for step_id in rerun
        if new.plans[step_id].kind == "workflow" and new.plans[step_id].for_each is None
    ]
    return RerunPlan(start, reused, rerun, children)


def _default_from_step(previous: ExecutionState, old: CompiledDefinition) -> str:
    """The first step (in the definition's order) that failed, timed out or was cancelled."""
    if previous.status == "completed":
        raise FromStepRequiredError(
            f"execution `{previous.execution_id}` completed; say which step to rerun from"
        )
    for step_id in old.main:
        record = previous.steps.get(step_id)
        if record is not None and record.status in RERUN_FROM:
            return step_id
    for step_id in old.main:  # none failed (the output failed, say): the first not succeeded
        if not _succeeded(previous, step_id):
            return step_id
    raise FromStepRequiredError(
        f"execution `{previous.execution_id}` {previous.status.replace('_', ' ')} after every "
        "step succeeded; say which step to rerun from"
    )


def _depending_on(definition: CompiledDefinition, start: str) -> set[str]:
    """``start`` and every main step that depends on it, directly or not."""
    found = {start}
    changed = True
    while changed:  # ``after`` may name a step further down: follow until nothing is added
        changed = False
        for step_id in definition.main:
            after = definition.plans[step_id].after
            if step_id not in found and any(dep in found for dep in after):
                found.add(step_id)
                changed = True
    return found


def _succeeded(previous: ExecutionState, step_id: str) -> bool:
    record = previous.steps.get(step_id)
    return record is not None and record.role == "main" and record.status == "succeeded"


def _refuse_compensated(previous: ExecutionState, reused: list[str]) -> None:
    """A step whose effects the previous run undid cannot be taken over as done."""
    compensated = {
        unit.key.split(":", 1)[1].split("[", 1)[0]
        for unit in previous.units.values()
        if unit.role == "compensate" and unit.status == "succeeded"
    }
    for step_id in reused:
        if step_id in compensated:
            raise RunCompensatedError(
                f"run {previous.run} compensated {step_id}; rerun from {step_id} or a step "
                "before it"
            )


def rerun_events(
    previous: ExecutionState,
    plan: RerunPlan,
    definition: CompiledDefinition,
    *,
    input: Any,
    limits: ev.EffectiveLimits,
    now: int,
) -> list[ev.Event]:
    """The first events of the rerun: ``WorkflowCreated`` (with ``rerun_of``),
    ``WorkflowStarted`` and a ``StepReused`` per reused step. ``input`` None keeps the previous
    input; another is validated like a start's (InvalidInputError, PayloadTooLargeError)."""
    out = start_run(
        definition, execution_id=previous.execution_id,
        input=previous.input if input is None else input, now=now, limits=limits,
        parent=previous.parent, schedule_id=previous.schedule_id, run=previous.run + 1,
        rerun_of=ev.RerunOf(run=previous.run, from_step=plan.from_step),
    )  # fmt: skip
    for step_id in plan.reused:
        record = previous.steps[step_id]
        out.append(
            ev.StepReused(
                seq=len(out) + 1,
                timestamp_ms=now,
                step=step_id,
                output=record.output,
                from_run=previous.reused.get(step_id, previous.run),
            )
        )
    return out
