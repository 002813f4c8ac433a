"""Decisions about units already started: timers that came due (retry delays, attempt deadlines,
sleeps, signal timeouts), failed and uncertain attempts, and signals for waiting ``await`` units."""

from __future__ import annotations

from ..history import events as ev
from ..history.state import TimerEntry, Unit
from ..ir.durations import format_duration
from ..ir.models import RetryPolicy
from .context import Context, error


def fire_due_timers(ctx: Context) -> None:
    """Act on every timer due at ``now`` that still applies."""
    for entry in ctx.state.due_timers(ctx.now):
        unit = ctx.state.units[entry.key]
        if ctx.abort is not None and unit.role == "main":
            continue
        _ON_TIMER[entry.kind](ctx, unit, entry)


def _retry_due(ctx: Context, unit: Unit, entry: TimerEntry) -> None:
    assert isinstance(entry.ref, int)
    ctx.schedule(unit.key, entry.ref, unit.input, again=unit)


def _deadline_passed(ctx: Context, unit: Unit, entry: TimerEntry) -> None:
    timeout = (unit.deadline_ms or 0) - (unit.dispatched_at_ms or 0)
    message = f"attempt {unit.attempt} of `{unit.key}` timed out after {format_duration(timeout)}"
    ctx.add(
        ev.StepAttemptFailed,
        step=unit.key,
        attempt=unit.attempt,
        error=error("TIMEOUT", message, retryable=True),
    )


def _timer_fired(ctx: Context, unit: Unit, entry: TimerEntry) -> None:
    plan = ctx.plan_of(unit.key)
    ctx.add(ev.TimerFired, step=unit.key)
    if plan.kind == "await":
        waited = format_duration(plan.step.timeout or 0)
        message = f"no signal `{plan.step.await_}` arrived within {waited}"
        ctx.add(ev.StepFailed, step=unit.key, error=error("SIGNAL_TIMEOUT", message))
    else:
        ctx.add(
            ev.StepSucceeded, step=unit.key, attempt=unit.attempt, output={"fired_at_ms": ctx.now}
        )


def _not_taken(ctx: Context, unit: Unit, entry: TimerEntry) -> None:
    task = ctx.task_of(unit.key) or ""
    contract = f"{task}@{ctx.definition.task(task).version}"
    waited = format_duration(entry.due_ms - unit.scheduled_at_ms)
    ctx.add(
        ev.StepAttemptFailed,
        step=unit.key,
        attempt=unit.attempt,
        error=error(
            "SCHEDULE_TIMEOUT", f"no worker took {contract} within {waited}", retryable=True
        ),
    )


_ON_TIMER = {
    "retry": _retry_due,
    "deadline": _deadline_passed,
    "timer": _timer_fired,
    "start": _not_taken,
}


def settle_attempts(ctx: Context) -> None:
    """Retry or fail each failed attempt; deliver each uncertain attempt again."""
    for key in ctx.state.attention:
        unit = ctx.state.units[key]
        if ctx.abort is not None and unit.role == "main":
            continue
        if unit.status == "uncertain":
            ctx.schedule(key, unit.attempt, unit.input, again=unit, redelivery=True)
        else:
            _after_failed_attempt(ctx, unit)


def _after_failed_attempt(ctx: Context, unit: Unit) -> None:
    assert unit.error is not None
    policy = retry_policy(ctx, unit)
    if policy is not None and _retries(policy, unit):
        delay = policy.delay_ms(unit.attempt)
        ctx.add(ev.RetryScheduled, step=unit.key, next_attempt=unit.attempt + 1, delay_ms=delay)
    else:
        ctx.add(ev.StepFailed, step=unit.key, error=unit.error)


def retry_policy(ctx: Context, unit: Unit) -> RetryPolicy | None:
    """The merged retry policy of a unit (None: a failure is final)."""
    plan = ctx.plan_of(unit.key)
    if unit.role == "compensate":
        return plan.compensate.retry if plan.compensate else None
    return plan.retry


def _retries(policy: RetryPolicy, unit: Unit) -> bool:
    assert unit.error is not None
    return (
        unit.error.retryable
        and unit.error.code not in (policy.non_retryable or ())
        and unit.attempt < (policy.max_attempts or 1)
    )


def deliver_signals(ctx: Context) -> None:
    """Give waiting ``await`` units the oldest signals of their name, in arrival order."""
    for name, queue in ctx.state.undelivered.items():
        waiting = _waiting_for(ctx, name)
        for unit, signal_seq in zip(waiting, queue, strict=False):
            payload = ctx.state.signals[signal_seq].payload
            ctx.add(ev.SignalDelivered, step=unit.key, signal_seq=signal_seq)
            ctx.add(ev.StepSucceeded, step=unit.key, attempt=unit.attempt, output=payload)


def _waiting_for(ctx: Context, name: str) -> list[Unit]:
    units = []
    for key in ctx.definition.awaits.get(name, ()):
        unit = ctx.state.units.get(key)
        if unit is None or unit.status not in ("scheduled", "waiting"):
            continue
        if ctx.abort is not None and unit.role == "main":
            continue
        units.append(unit)
    units.sort(key=lambda u: u.scheduled_seq)
    return units
