"""What each outside command records: start, signal, cancel, dispatch, a worker's result, a lost
worker, a child's end. Each function is pure: it checks the command against the state and the
definition and returns the events to commit (or raises the :mod:`orbit_actors.errors` error the
caller answers with). The actor then runs the decider to a fixpoint."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ..errors import (
    ExecutionFinishedError,
    FlowKeyError,
    ForbiddenError,
    InvalidExecutionIdError,
    InvalidInputError,
    PayloadTooLargeError,
    SignalPayloadInvalidError,
    UnknownSignalError,
)
from ..history import events as ev
from ..history.state import RESOLVED_UNIT, ExecutionState, Unit
from ..ir import flow
from ..ir.plan import CompiledDefinition
from ..ir.schema import Schema, SchemaViolation, json_type_of, validate
from .context import abort_cause, error, payload_bytes
from .invocation import child_session, output_schema, unit_timeout_ms

EXECUTION_ID = re.compile(r"[A-Za-z0-9_.:-]{1,200}")


@dataclass(frozen=True)
class ServerLimits:
    """The server-wide limits (the spec's defaults)."""

    max_fan_out: int = 10_000
    max_history_events: int = 50_000
    max_payload_bytes: int = 2 * 1024 * 1024


def effective_limits(server: ServerLimits, definition: CompiledDefinition) -> ev.EffectiveLimits:
    """The stricter of the server's and the workflow's limits, fixed at start."""
    own = definition.ir.limits

    def pick(name: str) -> int:
        mine = getattr(own, name) if own is not None else None
        theirs: int = getattr(server, name)
        return theirs if mine is None else min(mine, theirs)

    return ev.EffectiveLimits(
        max_fan_out=pick("max_fan_out"),
        max_history_events=pick("max_history_events"),
        max_payload_bytes=pick("max_payload_bytes"),
    )


def check_execution_id(execution_id: str) -> None:
    """Refuse ids that are empty, longer than 200 or use other characters than ``A-Za-z0-9-_.:``."""
    if not EXECUTION_ID.fullmatch(execution_id):
        raise InvalidExecutionIdError(
            "execution ids may contain letters, digits and - _ . : (1 to 200 characters); "
            f"got {execution_id[:210]!r}"
        )


def start_run(
    definition: CompiledDefinition,
    *,
    execution_id: str,
    input: Any,
    now: int,
    limits: ev.EffectiveLimits,
    parent: ev.ParentRef | None = None,
    schedule_id: str | None = None,
    run: int = 1,
    rerun_of: ev.RerunOf | None = None,
) -> list[ev.Event]:
    """``WorkflowCreated`` and ``WorkflowStarted`` of a new run (``rerun_of``: the run a rerun
    repeats). The input gets its defaults and
    is validated strictly (leniently for a child); raises InvalidInputError or
    PayloadTooLargeError, recording nothing."""
    value = {} if input is None else input
    size = payload_bytes(value)
    if size > limits.max_payload_bytes:
        raise PayloadTooLargeError(
            f"execution input is {size} bytes; the limit is {limits.max_payload_bytes} "
            "(max_payload_bytes)"
        )
    value = validated_input(definition.input_schema, value, strict=parent is None)
    created = ev.WorkflowCreated(  # by position, in field order: a keyword costs ~380 instructions
        1, now, execution_id, definition.name, definition.version, definition.definition_hash,
        value, limits, parent, schedule_id, run, rerun_of, start_flow(definition, value),
    )  # fmt: skip
    return [created, ev.WorkflowStarted(2, now)]


def start_flow(definition: CompiledDefinition, input: dict[str, Any]) -> ev.StartFlow | None:
    """The priority and concurrency key of a start (None when the definition declares no flow
    control); raises InvalidInputError for a priority outside 1..9 and FlowKeyError for a key
    that is not a string or a number."""
    if not definition.flow.declared:
        return None
    try:
        found = flow.evaluate_start(definition.flow, input)
    except flow.FlowPriorityError as exc:
        raise InvalidInputError(str(exc)) from None
    except flow.FlowKeyError as exc:
        raise FlowKeyError(str(exc)) from None
    return ev.StartFlow(priority=found.priority, key=found.key, rate_keys=found.rate_keys)


def validated_input(schema: Schema | None, value: Any, *, strict: bool) -> dict[str, Any]:
    """An execution input with defaults applied; raises InvalidInputError naming the path."""
    try:
        if not isinstance(value, dict):
            raise SchemaViolation("$", f"expected object, got {json_type_of(value)}")
        result: dict[str, Any] = validate(schema, value, strict=strict)
    except SchemaViolation as exc:
        raise InvalidInputError(f"workflow input is invalid at {exc.path}: {exc.reason}") from None
    return result


def next_run_events(state: ExecutionState, now: int) -> list[ev.Event]:
    """The first events of the run after a ``WorkflowContinuedAsNew``: created, started, and
    every signal this run received but never delivered, in arrival order."""
    assert state.status == "continued_as_new" and state.limits is not None
    created = ev.WorkflowCreated(
        seq=1, timestamp_ms=now, execution_id=state.execution_id, workflow=state.workflow,
        version=state.version, definition_hash=state.definition_hash, input=state.next_input,
        limits=state.limits, parent=state.parent, schedule_id=state.schedule_id, run=state.run + 1,
        flow=state.flow,
    )  # fmt: skip
    out: list[ev.Event] = [created, ev.WorkflowStarted(seq=2, timestamp_ms=now)]
    waiting = sorted(seq for queue in state.undelivered.values() for seq in queue)
    for seq in waiting:
        signal = state.signals[seq]
        out.append(
            ev.SignalReceived(
                seq=len(out) + 1, timestamp_ms=now, name=signal.name, payload=signal.payload
            )
        )
    return out


def _refuse_if_finished(state: ExecutionState) -> None:
    if state.status in ("completed", "failed", "cancelled", "timed_out", "terminated"):
        raise ExecutionFinishedError(state.status)


def receive_signal(
    state: ExecutionState, definition: CompiledDefinition, name: str, payload: Any, now: int
) -> list[ev.Event]:
    """``SignalReceived``, after the checks in the spec's order: finished (409), unknown signal
    (404), too large (413), invalid payload (422)."""
    _refuse_if_finished(state)
    declared = definition.ir.signals
    if name not in declared:
        what = f"declared: {', '.join(sorted(declared))}" if declared else "declares no signals"
        lead = f"{definition.name}@{definition.version}"
        message = f"{lead} has no signal `{name}`; {what}" if declared else f"{lead} {what}"
        raise UnknownSignalError(message)
    _check_size(state, payload, "signal payload")
    try:
        value = validate(declared[name], payload, strict=False)
    except SchemaViolation as exc:
        raise SignalPayloadInvalidError(
            f"signal `{name}` payload is invalid at {exc.path}: {exc.reason}"
        ) from None
    return [ev.SignalReceived(seq=state.last_seq + 1, timestamp_ms=now, name=name, payload=value)]


def request_cancel(
    state: ExecutionState, definition: CompiledDefinition, reason: str, now: int
) -> list[ev.Event]:
    """``CancelRequested``, or nothing when the run already aborts; raises when finished."""
    _refuse_if_finished(state)
    if state.finished or abort_cause(state, definition) is not None:
        return []
    return [ev.CancelRequested(seq=state.last_seq + 1, timestamp_ms=now, reason=reason)]


def dispatch(
    state: ExecutionState, definition: CompiledDefinition, key: str, *, attempt: int | None = None,
    token: str, worker_id: str, session: str, now: int,
) -> list[ev.Event] | None:  # fmt: skip
    """``StepDispatched`` for a scheduled unit, with its deadline; None refuses a stale offer (the
    unit moved on, or the run aborts and the unit is not a cleanup unit)."""
    unit = state.units.get(key)
    if state.finished or state.paused or unit is None or unit.status != "scheduled":
        return None
    if attempt is not None and attempt != unit.attempt:
        return None
    may_abort = state.failed_steps or state.abort_mark  # else abort_cause() finds nothing
    if unit.role == "main" and may_abort and abort_cause(state, definition) is not None:
        return None
    if unit.role == "compensate":
        timeout = unit_timeout_ms(definition, unit)
    else:  # what unit_timeout_ms finds for a step's own unit, without the call
        timeout = definition.plans[unit.step_id].timeout_ms
    deadline = now + timeout if timeout is not None else None
    # by position (seq, timestamp_ms, step, attempt, token, worker_id, worker_session,
    # deadline_ms): a keyword argument costs as much as the slot it fills
    return [ev.StepDispatched(
        state.last_seq + 1, now, key, unit.attempt, token, worker_id, session, deadline
    )]  # fmt: skip


@dataclass(slots=True)
class Verdict:
    """The answer to a result: accepted, or why not."""

    token: str
    accepted: bool
    reason: str | None = None


UNKNOWN_TOKEN = "unknown token (execution finished or token invalid)"
DUPLICATE = "duplicate result; step already resolved"
STALE = "stale attempt"
CONTRACT = "output violates the task contract"


def report_result(
    state: ExecutionState, definition: CompiledDefinition, token: str, *, now: int,
    worker_id: str | None = None, output: Any = None, failure: ev.ErrorInfo | None = None,
) -> tuple[list[ev.Event], Verdict]:  # fmt: skip
    """Record a worker's ``complete`` (``failure`` None) or ``fail`` by the rules of "Late
    results"; raises ForbiddenError for another worker's token and PayloadTooLargeError."""
    key = state.tokens.get(token)
    if key is None or state.finished:
        return [], Verdict(token, False, UNKNOWN_TOKEN)
    if worker_id is not None and state.token_workers[token] != worker_id:
        raise ForbiddenError(f"token {token} was issued to another worker, not `{worker_id}`")
    if failure is None:
        _check_size(state, output, "task result")
    unit = state.units[key]
    attempt = unit.tokens[token]
    seq, at = state.last_seq + 1, now
    if unit.status in RESOLVED_UNIT:  # unit.resolved, without the property's call
        return [
            ev.StaleResultIgnored(
                seq=seq, timestamp_ms=at, step=key, token=token, outcome="duplicate"
            )
        ], Verdict(token, False, DUPLICATE)
    if failure is not None:
        if token != unit.current_token:
            return [
                ev.StaleResultIgnored(
                    seq=seq, timestamp_ms=at, step=key, token=token, outcome="failure"
                )
            ], Verdict(token, False, STALE)
        return [
            ev.StepAttemptFailed(seq=seq, timestamp_ms=at, step=key, attempt=attempt, error=failure)
        ], Verdict(token, True)
    # no task declares an output contract: nothing to check the output against
    violation = (
        _contract_violation(definition, unit, output) if definition.output_schemas else output
    )
    if isinstance(violation, ev.ErrorInfo):
        return [
            ev.StepAttemptFailed(
                seq=seq, timestamp_ms=at, step=key, attempt=attempt, error=violation
            )
        ], Verdict(token, False, CONTRACT)
    # (seq, timestamp_ms, step, attempt, output) by position: the path of every result
    return [ev.StepSucceeded(seq, at, key, attempt, violation)], Verdict(token, True)


def _contract_violation(definition: CompiledDefinition, unit: Unit, output: Any) -> Any:
    """The output with defaults applied, or the OUTPUT_CONTRACT_VIOLATION error."""
    found = output_schema(definition, unit)
    if found is None:
        return output
    task_name, schema = found
    try:
        return validate(schema, output, strict=False)
    except SchemaViolation as exc:
        message = (
            f"worker output for `{task_name}` does not match its contract at "
            f"{exc.path}: {exc.reason}"
        )
        return error("OUTPUT_CONTRACT_VIOLATION", message)


def attempt_uncertain(state: ExecutionState, token: str, reason: str, now: int) -> list[ev.Event]:
    """``StepAttemptUncertain`` for the attempt a lost session held, if it still holds it."""
    key = state.tokens.get(token)
    if key is None or state.finished:
        return []
    unit = state.units[key]
    if unit.status != "dispatched" or unit.current_token != token:
        return []
    return [
        ev.StepAttemptUncertain(
            seq=state.last_seq + 1, timestamp_ms=now, step=key, attempt=unit.attempt, reason=reason
        )
    ]


ChildStatus = str


def child_finished(
    state: ExecutionState, key: str, *, workflow: str, child_id: str, status: ChildStatus,
    output: Any = None, failure: ev.ErrorInfo | None = None, now: int,
) -> list[ev.Event]:  # fmt: skip
    """Resolve the unit waiting for a child: success with its output, or a non-retryable
    failure saying how the child ended. Only the child the unit was dispatched to resolves it:
    the child of an earlier run (same unit key, another id) is ignored."""
    unit = state.units.get(key)
    if state.finished or unit is None or unit.resolved or unit.session != child_session(child_id):
        return []
    seq = state.last_seq + 1
    if status == "completed":
        return [
            ev.StepSucceeded(
                seq=seq, timestamp_ms=now, step=key, attempt=unit.attempt, output=output
            )
        ]
    details = {"child_execution_id": child_id}
    if status == "failed":
        code = failure.code if failure else "CHILD_FAILED"
        reason = failure.message if failure else "failed"
        problem = error(code, f"child workflow `{workflow}` failed: {reason}", details=details)
    elif status == "cancelled":
        problem = error(
            "CHILD_CANCELLED", f"child workflow `{workflow}` was cancelled", details=details
        )
    elif status == "terminated":
        problem = error(
            "CHILD_TERMINATED", f"child workflow `{workflow}` was terminated", details=details
        )
    else:
        problem = error(
            "CHILD_TIMED_OUT", f"child workflow `{workflow}` timed out", details=details
        )
    return [
        ev.StepAttemptFailed(
            seq=seq, timestamp_ms=now, step=key, attempt=unit.attempt, error=problem
        )
    ]


def child_start_failed(
    state: ExecutionState, key: str, message: str, now: int, *, child_id: str | None = None
) -> list[ev.Event]:
    """Fail the unit of a child that could not start (``CHILD_START_FAILED``); with
    ``child_id``, only if the unit waits for that child."""
    unit = state.units.get(key)
    if state.finished or unit is None or unit.resolved:
        return []
    if child_id is not None and unit.session != child_session(child_id):
        return []
    failure = error("CHILD_START_FAILED", message)
    return [
        ev.StepAttemptFailed(
            seq=state.last_seq + 1, timestamp_ms=now, step=key, attempt=unit.attempt, error=failure
        )
    ]


def _check_size(state: ExecutionState, value: Any, what: str) -> None:
    limit = state.limits.max_payload_bytes if state.limits else None
    if limit is None:
        return
    size = payload_bytes(value)
    if size > limit:
        raise PayloadTooLargeError(
            f"{what} is {size} bytes; the limit is {limit} (max_payload_bytes)"
        )
