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
) -> tuple[list[ev.Event], bool, int | None]:
    """:func:`decide`; whether the next call is sure to find nothing once these events are
    applied (always so when there are none); and, when the main steps' phase looked for ready
    steps and these events start every one it found, how many main steps had resolved then
    (the mark :func:`decide_to_fixpoint` keeps in the state)."""
    if not state.started or state.status != "running":
        return [], True, None
    # no failed step and no mark: no abort (abort_cause's answer without its call)
    abort = abort_cause(state, definition) if state.failed_steps or state.abort_mark else None
    ctx = Context(state, definition, now, abort, [])  # the list given: no factory call
    phase = _aborting(ctx) if ctx.abort else _running(ctx)
    if phase is None:
        return [], True, ctx.looked
    events = _within_history_limit(ctx)
    if events is not ctx.events:
        return events, False, None
    settled = phase is _main_steps and _only_runs_started(ctx)
    return events, settled, ctx.looked


def decide_to_fixpoint(
    state: ExecutionState, definition: CompiledDefinition, now: int, max_rounds: int = MAX_ROUNDS
) -> list[ev.Event]:
    """Decide and apply until nothing is left; returns the whole batch to commit.

    ``state`` is advanced in place: if committing the batch fails, the caller must throw the
    state away and replay the durable history. It also keeps the main steps' mark
    (``state.looked``): the next decision with ``definition`` looks only at the steps that
    depend on those resolved since."""
    batch: list[ev.Event] = []
    for _ in range(max_rounds):
        events, settled, looked = _decide(state, definition, now)
        for event in events:
            apply(state, event)
        if looked is not None:
            state.looked = (definition, looked)
        batch.extend(events)
        if settled or state.status != "running":
            break
    return batch


def _running(ctx: Context) -> Phase | None:
    """Visit the phases of a run going on, in order, up to the first that decides something,
    and return it (None: none did). A phase is visited only when the state's indexes say it
    may have something to do: a timer due, a failed or uncertain attempt, a signal waiting, a
    fan-out failing or open, a main step whose dependencies resolved since the last look."""
    state, now = ctx.state, ctx.now
    timers = state.timers
    if ctx.definition.timeout_ms is not None and _visit(_run_timeout, ctx):
        return _run_timeout
    if timers and timers[0].due_ms <= now and _visit(fire_due_timers, ctx):
        return fire_due_timers  # the heap's top is its earliest timer
    if state.attention and _visit(settle_attempts, ctx):
        return settle_attempts
    if state.undelivered and _visit(deliver_signals, ctx):
        return deliver_signals
    if state.failing_fanouts and _visit(_failing_fan_outs, ctx):
        return _failing_fan_outs
    if state.open_fanouts and _visit(_open_fan_outs, ctx):
        return _open_fan_outs
    _main_steps(ctx)  # visited every time (its mark tells it where to look)
    if ctx.events:
        return _main_steps
    everything_resolved = len(state.resolved_main) >= len(ctx.definition.main)
    if not state.inflight and everything_resolved and _visit(_complete, ctx):
        return _complete
    return None


def _aborting(ctx: Context) -> Phase | None:
    """The phases of an aborting run, each visited in order up to the first that decides
    something (the rare path: every phase looks)."""
    for phase in _ABORTING:
        if _visit(phase, ctx):
            return phase
    return None


def _visit(phase: Phase, ctx: Context) -> bool:
    phase(ctx)
    return bool(ctx.events)


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
    timers = state.timers
    wake = timers[0].due_ms if timers else None  # state.next_timer_ms(), without the call
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
    """Start the ready main steps. After a look whose batch was applied, every step ready then
    has started, and a step becomes ready only when its last dependency resolves: so with the
    state's mark for this definition only the dependents of the main steps resolved since are
    looked at (all of them otherwise: a replayed state, another definition)."""
    state, definition = ctx.state, ctx.definition
    settled = state.settled_main
    looked = state.looked
    ctx.looked = len(settled)
    if looked is None or looked[0] is not definition:
        start_ready(ctx, definition.main)
    elif looked[1] < len(settled):
        start_ready(ctx, _dependents(definition, settled[looked[1] :]))


def _dependents(definition: CompiledDefinition, resolved: list[str]) -> list[str]:
    """The main steps that depend on any of ``resolved``, in the definition's order."""
    plans = definition.plans
    if len(resolved) == 1:
        return plans[resolved[0]].dependents
    found = {step_id for done in resolved for step_id in plans[done].dependents}
    return sorted(found, key=definition.main_position.__getitem__)


def _complete(ctx: Context) -> None:
    """Every main step resolved and nothing in flight: the run's output, or its failure."""
    try:
        output = ctx.definition.output.render(ctx.scope())
    except EvaluationError as exc:
        failure = ev.ErrorInfo(code="EXPRESSION_ERROR", message=f"output: {exc}", retryable=False)
        ctx.add(ev.WorkflowFailed, error=failure, compensation="none")
        return
    seq = ctx.state.last_seq + len(ctx.events) + 1
    ctx.events.append(ev.WorkflowCompleted(seq, ctx.now, output))  # by position: no keywords


def _within_history_limit(ctx: Context) -> list[ev.Event]:
    limits = ctx.state.limits
    if ctx.abort is not None or not ctx.events or limits is None:
        return ctx.events
    if ctx.state.last_seq + len(ctx.events) <= limits.max_history_events:  # the event count
        return ctx.events
    message = (
        f"the run reached its limit of {limits.max_history_events} history events "
        "(max_history_events)"
    )
    seq = ctx.state.last_seq + 1
    return [
        ev.LimitExceeded(seq=seq, timestamp_ms=ctx.now, limit="max_history_events", message=message)
    ]


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
