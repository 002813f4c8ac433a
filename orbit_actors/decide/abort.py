"""Aborting a run: cancel what is in flight, compensate in reverse completion order, run the
handler steps with ``error`` in scope, then record the terminal event with the compensation
outcome."""

from __future__ import annotations

from ..history import events as ev
from ..history.state import UnitKey
from ..ir.expressions import EvaluationError
from .context import Context, error
from .steps import start_ready


def cancel_in_flight(ctx: Context) -> None:
    """Cancel every main unit not yet resolved (their tokens are cancelled at the workers)."""
    assert ctx.abort is not None
    for key in ctx.state.inflight:
        ctx.add(ev.StepCancelled, step=key, reason=ctx.abort.cancel_reason)


def compensate(ctx: Context) -> None:
    """Start the next compensation, one at a time, newest completion first."""
    state = ctx.state
    if _handlers_started(ctx):
        return
    last = state.last_compensation
    if last is not None and not state.units[last].resolved:
        return
    position = state.compensation_position if last is not None else len(state.succeeded_order)
    for index in range((position or 0) - 1, -1, -1):
        target = state.succeeded_order[index]
        plan = ctx.plan_of(target)
        if plan.compensate is not None and not _reused_fan_out(ctx, target):
            _start_compensation(ctx, target)
            return


def _reused_fan_out(ctx: Context, target: str) -> bool:
    """A fan-out a rerun reused has no element units to undo one by one: the run that made
    them owns their compensation (docs/decisions.md)."""
    return target in ctx.state.reused and ctx.plan_of(target).for_each is not None


def _start_compensation(ctx: Context, target: str) -> None:
    plan = ctx.plan_of(target)
    assert plan.compensate is not None
    key = f"compensate:{target}"
    template = plan.compensate.input if plan.compensate.kind == "task" else plan.compensate.http
    index = UnitKey.parse(target).index
    failure = None
    try:
        value = template.render(ctx.scope(plan, index)) if template is not None else {}
    except EvaluationError as exc:
        value, failure = None, f"{plan.path}.compensate: {exc}"
    ctx.add(
        ev.StepScheduled, step=key, attempt=1, input=value,
        idempotency_key=ctx.state.idempotency_key(key), redelivery=False,
    )  # fmt: skip
    if failure is not None:
        ctx.add(ev.StepFailed, step=key, error=error("EXPRESSION_ERROR", failure))


def _handlers_started(ctx: Context) -> bool:
    assert ctx.abort is not None
    ids = ctx.definition.handlers.get(ctx.abort.handler_list, [])
    return any(step_id in ctx.state.steps for step_id in ids)


def run_handlers(ctx: Context) -> None:
    """Start ready handler steps; once all are resolved and nothing is in flight, end the run."""
    assert ctx.abort is not None
    last = ctx.state.last_compensation
    if last is not None and not ctx.state.units[last].resolved:
        return
    ids = ctx.definition.handlers.get(ctx.abort.handler_list, [])
    start_ready(ctx, ids)
    if ctx.events or ctx.state.cleanup_inflight:
        return
    if all(step_id in ctx.state.steps and ctx.state.steps[step_id].resolved for step_id in ids):
        _finish(ctx)


def _finish(ctx: Context) -> None:
    abort = ctx.abort
    assert abort is not None
    state = ctx.state
    if abort.kind == "cancel":
        ctx.add(ev.WorkflowCancelled, reason=state.cancel_reason or abort.error.message)
    elif abort.kind == "timeout":
        ctx.add(ev.WorkflowTimedOut)
    else:
        outcome = (
            "none"
            if state.compensations_started == 0
            else ("failed" if state.compensation_failed else "completed")
        )
        ctx.add(ev.WorkflowFailed, error=abort.error, compensation=outcome)
