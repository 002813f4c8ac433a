"""``decide(state, definition, now) -> events``: the only place that knows what a workflow means.

A call looks at the run in a fixed order of phases and returns the events of the first phase that
has something to do; the caller applies them and calls again until nothing is left (the fixpoint).
One phase per call keeps every batch free of conflicting decisions about one unit. Every phase
reads indexes the state keeps, so a call costs the same at any history length.

:func:`decide_to_fixpoint` skips the last, empty call when the batch it just applied can give no
phase anything to do: the main steps' phase started units something runs, and nothing else (the
usual batch after a start or a result).
"""

from __future__ import annotations

from collections.abc import Callable

from ..history import events as ev
from ..history.apply import apply
from ..history.state import ExecutionState
from ..ir.expressions import EvaluationError
from ..ir.plan import CompiledDefinition
from .abort import cancel_in_flight, compensate, run_handlers
from .context import Context, abort_cause
from .invocation import RUN_KINDS
from .steps import schedule_elements, settle_failing_fan_out, start_ready
from .units import deliver_signals, fire_due_timers, settle_attempts

MAX_ROUNDS = 10_000

Phase = Callable[[Context], None]


def decide(state: ExecutionState, definition: CompiledDefinition, now: int) -> list[ev.Event]:
    """The events the run needs next at ``now`` (empty at the fixpoint). Pure: reads no clock,
    does no I/O, never mutates ``state``, and never raises for a user's mistake."""
    return _decide(state, definition, now)[0]


def _decide(
    state: ExecutionState, definition: CompiledDefinition, now: int
) -> tuple[list[ev.Event], bool]:
    """:func:`decide`, and whether the next call is sure to find nothing once these events are
    applied (always so when there are none)."""
    if not state.started or state.finished:
        return [], True
    ctx = Context(state, definition, now, abort_cause(state, definition))
    for phase in _ABORTING if ctx.abort else _RUNNING:
        phase(ctx)
        if ctx.events:
            break
    else:
        return [], True
    events = _within_history_limit(ctx)
    return events, phase is _main_steps and events is ctx.events and _only_runs_started(ctx)


def decide_to_fixpoint(
    state: ExecutionState, definition: CompiledDefinition, now: int, max_rounds: int = MAX_ROUNDS
) -> list[ev.Event]:
    """Decide and apply until nothing is left; returns the whole batch to commit.

    ``state`` is advanced in place: if committing the batch fails, the caller must throw the
    state away and replay the durable history."""
    batch: list[ev.Event] = []
    for _ in range(max_rounds):
        events, settled = _decide(state, definition, now)
        for event in events:
            apply(state, event)
        batch.extend(events)
        if settled or state.finished:
            break
    return batch


def _only_runs_started(ctx: Context) -> bool:
    """True when the batch (of the main steps' phase, in a run not aborting) only schedules units
    that a worker, the runtime or a child runs, none of them due to time out already. Applying
    it resolves no step, fails nothing, arms no due timer and creates no unit a signal waits
    for; the phases before found nothing and the main steps' phase started every ready step,
    so a next call would find nothing either (the tests' driver checks this after each batch)."""
    plans, now = ctx.definition.plans, ctx.now
    for event in ctx.events:
        if not isinstance(event, ev.StepScheduled) or plans[event.step].kind not in RUN_KINDS:
            return False
        if event.start_by_ms is not None and event.start_by_ms <= now:
            return False
    return True


def next_wakeup(state: ExecutionState, definition: CompiledDefinition) -> int | None:
    """When the run next needs deciding without any outside command (epoch ms), or None."""
    if not state.started or state.finished:
        return None
    if not state.steps:
        return state.started_at_ms  # a new run (after continue-as-new) has not decided yet
    wake = state.next_timer_ms()
    timeout, started = definition.timeout_ms, state.started_at_ms
    if timeout is not None and started is not None and abort_cause(state, definition) is None:
        deadline = started + timeout
        wake = deadline if wake is None else min(wake, deadline)
    return wake


def _run_timeout(ctx: Context) -> None:
    timeout = ctx.definition.timeout_ms
    started = ctx.state.started_at_ms
    if timeout is not None and started is not None and ctx.now >= started + timeout:
        ctx.add(ev.TimerFired, step=ev.RUN_TIMEOUT_TIMER)


def _failing_fan_outs(ctx: Context) -> None:
    for step_id in ctx.state.failing_fanouts:
        if _may_progress(ctx, step_id):
            settle_failing_fan_out(ctx, step_id)


def _open_fan_outs(ctx: Context) -> None:
    for step_id in ctx.state.open_fanouts:
        if _may_progress(ctx, step_id):
            schedule_elements(ctx, step_id)


def _may_progress(ctx: Context, step_id: str) -> bool:
    return ctx.abort is None or ctx.definition.plans[step_id].role == "handler"


def _main_steps(ctx: Context) -> None:
    start_ready(ctx, ctx.definition.main)


def _complete(ctx: Context) -> None:
    state = ctx.state
    if state.inflight or len(state.resolved_main) < len(ctx.definition.main):
        return
    try:
        output = ctx.definition.output.render(ctx.scope())
    except EvaluationError as exc:
        failure = ev.ErrorInfo(code="EXPRESSION_ERROR", message=f"output: {exc}", retryable=False)
        ctx.add(ev.WorkflowFailed, error=failure, compensation="none")
        return
    ctx.add(ev.WorkflowCompleted, output=output)


def _within_history_limit(ctx: Context) -> list[ev.Event]:
    limits = ctx.state.limits
    if ctx.abort is not None or not ctx.events or limits is None:
        return ctx.events
    if ctx.state.event_count + len(ctx.events) <= limits.max_history_events:
        return ctx.events
    message = (
        f"the run reached its limit of {limits.max_history_events} history events "
        "(max_history_events)"
    )
    seq = ctx.state.last_seq + 1
    return [
        ev.LimitExceeded(seq=seq, timestamp_ms=ctx.now, limit="max_history_events", message=message)
    ]


_RUNNING: tuple[Phase, ...] = (
    _run_timeout,
    fire_due_timers,
    settle_attempts,
    deliver_signals,
    _failing_fan_outs,
    _open_fan_outs,
    _main_steps,
    _complete,
)
_ABORTING: tuple[Phase, ...] = (
    cancel_in_flight,
    fire_due_timers,
    settle_attempts,
    deliver_signals,
    _failing_fan_outs,
    _open_fan_outs,
    compensate,
    run_handlers,
)
