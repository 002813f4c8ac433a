"""``apply(state, event)`` folds one event into an :class:`ExecutionState`; ``replay`` folds a
history. Each event type has its own small function, chosen by table; each does O(1) work."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable
from typing import Any, NoReturn

from . import events as ev
from .state import AbortMark, ExecutionState, SignalRecord, StepRecord, Unit, UnitKey


class HistoryError(ValueError):
    """A history that cannot have been written by Orbit: a seq gap, an event after the terminal
    event, or an event about a unit that does not exist."""


def replay(history: Iterable[ev.Event]) -> ExecutionState:
    """The state a run's history describes."""
    state = ExecutionState()
    for event in history:
        apply(state, event)
    return state


def apply(state: ExecutionState, event: ev.Event) -> ExecutionState:
    """Fold ``event`` into ``state`` (in place) and return it; raises :class:`HistoryError`
    when the event cannot follow the state."""
    if event.seq != state.last_seq + 1:
        raise HistoryError(
            f"event seq {event.seq} follows seq {state.last_seq}: seq must count 1, 2, 3 …"
        )
    if state.finished:
        raise HistoryError(f"event {event.type} (seq {event.seq}) follows the run's terminal event")
    _APPLY[event.type](state, event)
    state.last_seq = event.seq
    if state.timers:
        state.drop_spent_timers()
    return state


def _unknown(key: str, event: ev.Event) -> NoReturn:
    """A unit look-up reads ``state.units.get(key) or _unknown(key, e)`` (a unit is never
    falsy): the usual case costs no call."""
    raise HistoryError(
        f"{event.type} (seq {event.seq}) names unit `{key}`, which was never scheduled"
    )


def _record(state: ExecutionState, step_id: str, role: str) -> StepRecord:
    record = state.steps.get(step_id)
    if record is None:
        record = StepRecord(step_id, "handler" if role == "handler" else "main")
        state.steps[step_id] = record
    return record


def _on_created(state: ExecutionState, e: ev.WorkflowCreated) -> None:
    state.created = True
    state.execution_id, state.workflow, state.version = e.execution_id, e.workflow, e.version
    state.definition_hash, state.input, state.limits = e.definition_hash, e.input, e.limits
    state.parent, state.schedule_id, state.run = e.parent, e.schedule_id, e.run
    state.rerun_of = e.rerun_of
    state.flow = e.flow


def _on_started(state: ExecutionState, e: ev.WorkflowStarted) -> None:
    state.started = True
    state.started_at_ms = e.timestamp_ms


def _on_scheduled(state: ExecutionState, e: ev.StepScheduled) -> None:
    unit = state.units.get(e.step)
    if unit is None:
        unit = _new_unit(state, e)
    record = state.steps[unit.step_id]
    if e.attempt > unit.attempt:
        record.attempts += e.attempt - unit.attempt
    unit.status, unit.attempt, unit.input = "scheduled", e.attempt, e.input
    unit.idempotency_key, unit.redelivery, unit.scheduled_at_ms = (
        e.idempotency_key,
        e.redelivery,
        e.timestamp_ms,
    )
    unit.next_attempt = unit.retry_at_ms = None
    state.attention.pop(e.step, None)
    unit.start_by_ms = e.start_by_ms
    if e.start_by_ms is not None:
        state.arm(e.start_by_ms, e.step, "start")


def _new_unit(state: ExecutionState, e: ev.StepScheduled) -> Unit:
    key = UnitKey.parse(e.step)
    unit = Unit(e.step, key.role, key.step_id, key.index, key.target, e.seq)  # scheduled_seq
    state.units[e.step] = unit
    record = _record(state, key.step_id, key.role)
    if key.role == "compensate":
        state.compensations_started += 1
        state.last_compensation = e.step
        state.compensation_position = state.succeeded_position.get(key.target or "", 0)
        state.cleanup_inflight[e.step] = None
        return unit
    (state.inflight if key.role == "main" else state.cleanup_inflight)[e.step] = None
    if key.index is not None:
        record.active[e.step] = None
        record.next_index = max(record.next_index, key.index + 1)
        if record.items is not None and record.next_index >= len(record.items):
            state.open_fanouts.pop(key.step_id, None)
    return unit


def _on_skipped(state: ExecutionState, e: ev.StepSkipped) -> None:
    key = UnitKey.parse(e.step)
    record = _record(state, key.step_id, key.role)
    record.status = "skipped"
    _step_resolved(state, record)


def _on_reused(state: ExecutionState, e: ev.StepReused) -> None:
    """A reused step reads as one that succeeded: a unit with its output (so a later failure
    compensates it, its effects being real) and a resolved step."""
    key = UnitKey.parse(e.step)
    if e.step in state.steps:
        raise HistoryError(f"StepReused (seq {e.seq}) names step `{e.step}`, which has started")
    unit = Unit(e.step, "main", key.step_id, None, None, scheduled_seq=e.seq)
    unit.status, unit.output, unit.attempt = "succeeded", e.output, 1
    state.units[e.step] = unit
    record = _record(state, key.step_id, "main")
    record.status, record.output, record.attempts = "succeeded", e.output, 1
    state.succeeded_position[e.step] = len(state.succeeded_order)
    state.succeeded_order.append(e.step)
    state.reused[e.step] = e.from_run
    _step_resolved(state, record)


def _on_paused(state: ExecutionState, e: ev.ExecutionPaused) -> None:
    state.paused, state.pause_reason = True, e.reason


def _on_unpaused(state: ExecutionState, e: ev.ExecutionUnpaused) -> None:
    state.paused, state.pause_reason = False, None


def _on_fan_out(state: ExecutionState, e: ev.StepFanOut) -> None:
    key = UnitKey.parse(e.step)
    record = _record(state, key.step_id, key.role)
    record.items = list(e.items)
    record.outputs = [None] * len(e.items)
    if not e.items:
        record.status, record.output = "succeeded", []
        _step_resolved(state, record)
    else:
        state.open_fanouts[key.step_id] = None


def _on_dispatched(state: ExecutionState, e: ev.StepDispatched) -> None:
    unit = state.units.get(e.step) or _unknown(e.step, e)
    unit.status, unit.current_token = "dispatched", e.token
    unit.tokens[e.token] = e.attempt
    unit.session, unit.worker_id = e.worker_session, e.worker_id
    unit.dispatched_at_ms, unit.deadline_ms = e.timestamp_ms, e.deadline_ms
    state.tokens[e.token] = e.step
    state.token_workers[e.token] = e.worker_id
    if e.deadline_ms is not None:
        state.arm(e.deadline_ms, e.step, "deadline", e.token)


def _on_succeeded(state: ExecutionState, e: ev.StepSucceeded) -> None:
    unit = state.units.get(e.step) or _unknown(e.step, e)
    unit.status, unit.output = "succeeded", e.output
    _unit_resolved(state, unit)
    record = state.steps[unit.step_id]
    if unit.role == "compensate":
        return
    if unit.role == "main":
        state.succeeded_position[unit.key] = len(state.succeeded_order)
        state.succeeded_order.append(unit.key)
    if unit.index is None:
        record.status, record.output = "succeeded", e.output
        _step_resolved(state, record)
        return
    assert record.outputs is not None and record.items is not None
    record.outputs[unit.index] = e.output
    record.succeeded += 1
    if record.succeeded == len(record.items):
        record.status, record.output = "succeeded", list(record.outputs)
        _step_resolved(state, record)


def _on_attempt_failed(state: ExecutionState, e: ev.StepAttemptFailed) -> None:
    unit = state.units.get(e.step) or _unknown(e.step, e)
    unit.status, unit.error, unit.current_token = "attempt_failed", e.error, None
    state.attention[e.step] = None


def _on_uncertain(state: ExecutionState, e: ev.StepAttemptUncertain) -> None:
    unit = state.units.get(e.step) or _unknown(e.step, e)
    unit.status = "uncertain"
    state.attention[e.step] = None


def _on_retry(state: ExecutionState, e: ev.RetryScheduled) -> None:
    unit = state.units.get(e.step) or _unknown(e.step, e)
    unit.status, unit.next_attempt = "retry_wait", e.next_attempt
    unit.retry_at_ms = e.timestamp_ms + e.delay_ms
    state.attention.pop(e.step, None)
    state.arm(unit.retry_at_ms, e.step, "retry", e.next_attempt)


def _on_step_failed(state: ExecutionState, e: ev.StepFailed) -> None:
    key = UnitKey.parse(e.step)
    unit = state.units.get(e.step)
    if unit is not None:
        unit.status, unit.error = "failed", e.error
        _unit_resolved(state, unit)
        if unit.role == "compensate":
            state.compensation_failed = True
            return
        if unit.index is not None:
            record = state.steps[unit.step_id]
            record.failed_element = record.failed_element or unit.key
            if record.status == "running":
                state.failing_fanouts[unit.step_id] = None
            return
    record = _record(state, key.step_id, key.role)
    record.status, record.error = "failed", e.error
    state.failing_fanouts.pop(key.step_id, None)
    state.open_fanouts.pop(key.step_id, None)
    if key.role == "main":
        state.failed_steps.append((e.seq, key.step_id))
    _step_resolved(state, record)


def _on_cancelled(state: ExecutionState, e: ev.StepCancelled) -> None:
    unit = state.units.get(e.step) or _unknown(e.step, e)
    unit.status = "cancelled"
    _unit_resolved(state, unit)
    if unit.role == "compensate":
        return
    record = state.steps[unit.step_id]
    if record.status == "running" and record.failed_element is None:
        record.status = "cancelled"
        state.open_fanouts.pop(unit.step_id, None)
        _step_resolved(state, record)


def _unit_resolved(state: ExecutionState, unit: Unit) -> None:
    state.inflight.pop(unit.key, None)
    state.cleanup_inflight.pop(unit.key, None)
    state.attention.pop(unit.key, None)
    unit.fire_at_ms = None
    if unit.index is not None and unit.role != "compensate":
        state.steps[unit.step_id].active.pop(unit.key, None)


def _step_resolved(state: ExecutionState, record: StepRecord) -> None:
    state.resolved_steps.add(record.id)
    if record.role == "main":
        state.resolved_main.add(record.id)
        state.settled_main.append(record.id)


def _on_stale(state: ExecutionState, e: ev.StaleResultIgnored) -> None:
    if e.step not in state.units:
        _unknown(e.step, e)


def _on_timer_started(state: ExecutionState, e: ev.TimerStarted) -> None:
    unit = state.units.get(e.step) or _unknown(e.step, e)
    unit.status, unit.fire_at_ms = "waiting", e.fire_at_ms
    state.arm(e.fire_at_ms, e.step, "timer")


def _on_timer_fired(state: ExecutionState, e: ev.TimerFired) -> None:
    if e.step == ev.RUN_TIMEOUT_TIMER:
        _mark_abort(state, AbortMark(e.seq, "timeout", "run timed out"))
        return
    (state.units.get(e.step) or _unknown(e.step, e)).fire_at_ms = None


def _on_signal(state: ExecutionState, e: ev.SignalReceived) -> None:
    state.signals[e.seq] = SignalRecord(e.seq, e.name, e.payload)
    state.undelivered.setdefault(e.name, deque()).append(e.seq)


def _on_signal_delivered(state: ExecutionState, e: ev.SignalDelivered) -> None:
    signal = state.signals.get(e.signal_seq)
    if signal is None or signal.delivered_to is not None:
        raise HistoryError(
            f"SignalDelivered (seq {e.seq}) names signal {e.signal_seq}, which is not waiting"
        )
    signal.delivered_to = e.step
    queue = state.undelivered[signal.name]
    if queue and queue[0] == e.signal_seq:
        queue.popleft()
    else:
        queue.remove(e.signal_seq)
    if not queue:
        del state.undelivered[signal.name]


def _on_cancel_requested(state: ExecutionState, e: ev.CancelRequested) -> None:
    state.cancel_reason = e.reason
    _mark_abort(state, AbortMark(e.seq, "cancel", e.reason))


def _on_limit(state: ExecutionState, e: ev.LimitExceeded) -> None:
    _mark_abort(state, AbortMark(e.seq, "limit", e.message))


def _on_migrated(state: ExecutionState, e: ev.DefinitionMigrated) -> None:
    state.version, state.definition_hash = e.to_version, e.definition_hash


def _mark_abort(state: ExecutionState, mark: AbortMark) -> None:
    if state.abort_mark is None:
        state.abort_mark = mark


def _close(state: ExecutionState, e: ev.Event, status: Any) -> None:
    state.status, state.closed_at_ms, state.finished = status, e.timestamp_ms, True


def _on_completed(state: ExecutionState, e: ev.WorkflowCompleted) -> None:
    state.output = e.output
    _close(state, e, "completed")


def _on_failed(state: ExecutionState, e: ev.WorkflowFailed) -> None:
    state.error = e.error
    _close(state, e, "failed")


def _on_cancelled_run(state: ExecutionState, e: ev.WorkflowCancelled) -> None:
    _close(state, e, "cancelled")


def _on_timed_out(state: ExecutionState, e: ev.WorkflowTimedOut) -> None:
    _close(state, e, "timed_out")


def _on_terminated(state: ExecutionState, e: ev.WorkflowTerminated) -> None:
    state.terminate_reason = e.reason
    _close(state, e, "terminated")


def _on_continued(state: ExecutionState, e: ev.WorkflowContinuedAsNew) -> None:
    state.next_input = e.input
    _close(state, e, "continued_as_new")


_APPLY: dict[str, Callable[[ExecutionState, Any], None]] = {
    "WorkflowCreated": _on_created,
    "WorkflowStarted": _on_started,
    "StepScheduled": _on_scheduled,
    "StepSkipped": _on_skipped,
    "StepReused": _on_reused,
    "StepFanOut": _on_fan_out,
    "StepDispatched": _on_dispatched,
    "StepSucceeded": _on_succeeded,
    "StepAttemptFailed": _on_attempt_failed,
    "StepAttemptUncertain": _on_uncertain,
    "RetryScheduled": _on_retry,
    "StepFailed": _on_step_failed,
    "StepCancelled": _on_cancelled,
    "StaleResultIgnored": _on_stale,
    "TimerStarted": _on_timer_started,
    "TimerFired": _on_timer_fired,
    "SignalReceived": _on_signal,
    "SignalDelivered": _on_signal_delivered,
    "CancelRequested": _on_cancel_requested,
    "ExecutionPaused": _on_paused,
    "ExecutionUnpaused": _on_unpaused,
    "LimitExceeded": _on_limit,
    "DefinitionMigrated": _on_migrated,
    "WorkflowCompleted": _on_completed,
    "WorkflowFailed": _on_failed,
    "WorkflowCancelled": _on_cancelled_run,
    "WorkflowTimedOut": _on_timed_out,
    "WorkflowTerminated": _on_terminated,
    "WorkflowContinuedAsNew": _on_continued,
}
