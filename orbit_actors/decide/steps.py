"""Starting steps: DAG order, ``when``, every step kind, fan-out elements under ``concurrency``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..history import events as ev
from ..ir.expressions import EvaluationError
from ..ir.plan import StepPlan
from ..ir.schema import SchemaViolation, validate
from .context import Context, error


def start_ready(ctx: Context, step_ids: list[str]) -> None:
    """Start every step of ``step_ids`` that is ready (not yet started, its dependencies all
    resolved); a ``continue_as_new`` that fires ends the run and alone fills the batch. Starting
    a step only adds events, so what is ready does not change along the loop."""
    steps, resolved, plans = ctx.state.steps, ctx.state.resolved_steps, ctx.definition.plans
    for step_id in step_ids:
        plan = plans[step_id]
        if step_id in steps or not resolved.issuperset(plan.after):
            continue
        if plan.kind == "continue_as_new" and _continue_as_new(ctx, plan):
            return
        if plan.kind != "continue_as_new":
            start_step(ctx, plan)


def start_step(ctx: Context, plan: StepPlan) -> None:
    """Skip, fail or start one step by its kind."""
    if plan.when is not None and not _when_holds(ctx, plan):
        return
    if plan.for_each is not None:
        _fan_out(ctx, plan)
        return
    _START[plan.kind](ctx, plan)


FAILED: Any = object()
"""What :func:`evaluated` returns after it failed the step."""


def evaluated(ctx: Context, plan: StepPlan, field: str, compute: Callable[[], Any]) -> Any:
    """``compute()``; or, when it raises EvaluationError, fail the step with EXPRESSION_ERROR
    naming ``<step path>.<field>`` and return :data:`FAILED`."""
    try:
        return compute()
    except EvaluationError as exc:
        fail_step(ctx, plan.key, f"{plan.path}.{field}: {exc}")
        return FAILED


def _when_holds(ctx: Context, plan: StepPlan) -> bool:
    when = plan.when
    if when is None:
        return True
    value = evaluated(ctx, plan, "when", lambda: when.evaluate(ctx.scope(plan)))
    if value is FAILED:
        return False
    if not isinstance(value, bool):
        fail_step(ctx, plan.key, f"{plan.path}.when: expected a boolean, got {value!r}")
        return False
    if not value:
        ctx.add(ev.StepSkipped, step=plan.key)
    return value


def fail_step(ctx: Context, key: str, message: str, code: str = "EXPRESSION_ERROR") -> None:
    """Fail a step (or unit) for good with a non-retryable error."""
    ctx.add(ev.StepFailed, step=key, error=error(code, message))


def _schedule(ctx: Context, key: str, unit_input: Any) -> None:
    ctx.schedule(key, 1, unit_input)


def unit_input(ctx: Context, plan: StepPlan, index: int | None) -> Any:
    """The evaluated input of a task, workflow or http unit; raises EvaluationError."""
    template = plan.http if plan.kind == "http" else plan.input
    return template.render(ctx.scope(plan, index)) if template is not None else {}


def _start_work(ctx: Context, plan: StepPlan) -> None:
    try:  # what evaluated() does, without a closure and two calls: every task step comes here
        value = unit_input(ctx, plan, None)
    except EvaluationError as exc:
        fail_step(ctx, plan.key, f"{plan.path}.input: {exc}")
        return
    ctx.schedule_step(plan, value)


def _start_value(ctx: Context, plan: StepPlan) -> None:
    template = plan.value
    assert template is not None
    value = evaluated(ctx, plan, "value", lambda: template.render(ctx.scope(plan)))
    if value is FAILED:
        return
    _schedule(ctx, plan.key, None)
    ctx.add(ev.StepSucceeded, step=plan.key, attempt=1, output=value)


def _start_await(ctx: Context, plan: StepPlan) -> None:
    _schedule(ctx, plan.key, None)
    if plan.step.timeout is not None:
        ctx.add(ev.TimerStarted, step=plan.key, fire_at_ms=ctx.now + plan.step.timeout)


def _start_sleep(ctx: Context, plan: StepPlan) -> None:
    until = plan.until
    if until is None:
        fire_at = ctx.now + (plan.step.sleep or 0)
    else:
        raw = evaluated(ctx, plan, "until", lambda: until.evaluate(ctx.scope(plan)))
        if raw is FAILED:
            return
        if isinstance(raw, bool) or not isinstance(raw, int | float):
            fail_step(ctx, plan.key, f"{plan.path}.until: expected epoch milliseconds, got {raw!r}")
            return
        fire_at = int(raw)
    _schedule(ctx, plan.key, None)
    ctx.add(ev.TimerStarted, step=plan.key, fire_at_ms=fire_at)


def _fan_out(ctx: Context, plan: StepPlan) -> None:
    for_each = plan.for_each
    assert for_each is not None
    items = evaluated(ctx, plan, "for", lambda: for_each.evaluate(ctx.scope(plan)))
    if items is FAILED:
        return
    if not isinstance(items, list):
        fail_step(ctx, plan.key, f"{plan.path}.for: expected a list, got {type(items).__name__}")
        return
    limits = ctx.state.limits
    if limits is not None and len(items) > limits.max_fan_out:
        message = (
            f"fan-out of {len(items)} items is over the limit of {limits.max_fan_out} (max_fan_out)"
        )
        fail_step(ctx, plan.key, message, code="LIMIT_EXCEEDED")
        return
    ctx.add(ev.StepFanOut, step=plan.key, items=items)


def schedule_elements(ctx: Context, step_id: str) -> None:
    """Create the next elements of an open fan-out, as many as ``concurrency`` allows."""
    plan = ctx.definition.plans[step_id]
    record = ctx.state.steps[step_id]
    assert record.items is not None
    room = (plan.step.concurrency or len(record.items)) - len(record.active)
    end = min(len(record.items), record.next_index + max(room, 0))
    for index in range(record.next_index, end):
        try:
            value = unit_input(ctx, plan, index)
        except EvaluationError as exc:
            for key in record.active:
                ctx.add(ev.StepCancelled, step=key, reason="another element of the fan-out failed")
            fail_step(ctx, plan.key, f"{plan.path}.input (element {index}): {exc}")
            return
        _schedule(ctx, f"{plan.key}[{index}]", value)


def settle_failing_fan_out(ctx: Context, step_id: str) -> None:
    """An element failed for good: cancel the others and fail the step with its error."""
    record = ctx.state.steps[step_id]
    for key in record.active:
        ctx.add(ev.StepCancelled, step=key, reason="another element of the fan-out failed")
    failed = ctx.state.units[record.failed_element or ""]
    plan = ctx.definition.plans[step_id]
    ctx.add(
        ev.StepFailed, step=plan.key, error=failed.error or error("FAILED", "an element failed")
    )


def _continue_as_new(ctx: Context, plan: StepPlan) -> bool:
    if not _when_holds(ctx, plan):
        return False
    assert plan.value is not None
    try:
        value = plan.value.render(ctx.scope(plan))
        value = validate(ctx.definition.input_schema, {} if value is None else value, strict=True)
        if not isinstance(value, dict):
            raise SchemaViolation("$", f"expected object, got {type(value).__name__}")
    except EvaluationError as exc:
        fail_step(ctx, plan.key, f"{plan.path}.continue_as_new: {exc}")
        return False
    except SchemaViolation as exc:
        fail_step(ctx, plan.key, f"the next run's input is invalid at {exc}", code="INVALID_INPUT")
        return False
    del ctx.events[:]  # the run ends here: steps started beside it in this batch never run
    _schedule(ctx, plan.key, None)
    ctx.add(ev.StepSucceeded, step=plan.key, attempt=1, output=value)
    for key in ctx.state.inflight:
        ctx.add(ev.StepCancelled, step=key, reason="run continued as new")
    ctx.add(ev.WorkflowContinuedAsNew, next_run=ctx.state.run + 1, input=value)
    return True


_START = {
    "task": _start_work,
    "workflow": _start_work,
    "http": _start_work,
    "value": _start_value,
    "await": _start_await,
    "sleep": _start_sleep,
}
