"""Every history event of execution.md as a typed, frozen model with stable JSON.

``Event`` is one discriminated union on ``type``; :func:`event_from_json` decodes a stored event and
:func:`event_to_json` encodes one. Optional fields that are absent are left out of the JSON;
payload fields (``output``, ``input``, ``payload``) keep an explicit ``null``.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter


class _Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _absent(value: object) -> bool:
    return value is None


def _optional() -> Any:
    """An optional field, left out of the JSON when absent."""
    return Field(default=None, exclude_if=_absent)


class ErrorInfo(_Frozen):
    """An error as history records it: ``{code, message, retryable, details?}``."""

    code: str
    message: str
    retryable: bool = False
    details: dict[str, Any] | None = _optional()

    def public(self) -> dict[str, Any]:
        """The ``{code, message, details}`` view expressions read."""
        return {"code": self.code, "message": self.message, "details": self.details}


class ParentRef(_Frozen):
    """The parent of a child execution: its id and the unit that waits for this child."""

    execution_id: str
    step: str


class EffectiveLimits(_Frozen):
    """The limits fixed at start: the stricter of the server's and the workflow's."""

    max_fan_out: int
    max_history_events: int
    max_payload_bytes: int


class _Event(_Frozen):
    seq: int
    timestamp_ms: int


class RerunOf(_Frozen):
    """The run a rerun repeats, and the step it reruns from."""

    run: int
    from_step: str


class WorkflowCreated(_Event):
    """The run exists: its definition, input and effective limits (and, for a rerun, the run it
    repeats)."""

    type: Literal["WorkflowCreated"] = "WorkflowCreated"
    execution_id: str
    workflow: str
    version: str
    definition_hash: str
    input: Any
    limits: EffectiveLimits
    parent: ParentRef | None = _optional()
    schedule_id: str | None = _optional()
    run: int = 1
    rerun_of: RerunOf | None = _optional()


class WorkflowStarted(_Event):
    """The run started (committed together with ``WorkflowCreated``)."""

    type: Literal["WorkflowStarted"] = "WorkflowStarted"


class StepScheduled(_Event):
    """A unit's attempt is ready: its evaluated input is recorded so replay never re-evaluates."""

    type: Literal["StepScheduled"] = "StepScheduled"
    step: str
    attempt: int
    input: Any
    idempotency_key: str
    redelivery: bool = False


class StepSkipped(_Event):
    """A step's ``when`` was false."""

    type: Literal["StepSkipped"] = "StepSkipped"
    step: str


class StepReused(_Event):
    """A rerun takes a step's output from the run it repeats: the step is not dispatched."""

    type: Literal["StepReused"] = "StepReused"
    step: str
    output: Any
    from_run: int


class ExecutionPaused(_Event):
    """An operator paused the execution: nothing new is dispatched until it is unpaused."""

    type: Literal["ExecutionPaused"] = "ExecutionPaused"
    reason: str | None = _optional()


class ExecutionUnpaused(_Event):
    """The execution was unpaused: what waited is dispatched."""

    type: Literal["ExecutionUnpaused"] = "ExecutionUnpaused"


class StepFanOut(_Event):
    """A fan-out step's list was evaluated: one unit per item."""

    type: Literal["StepFanOut"] = "StepFanOut"
    step: str
    items: list[Any]


class StepDispatched(_Event):
    """An attempt left for a worker (or the built-in runner, or a child) under a fresh token."""

    type: Literal["StepDispatched"] = "StepDispatched"
    step: str
    attempt: int
    token: str
    worker_id: str
    worker_session: str
    deadline_ms: int | None = _optional()


class StepSucceeded(_Event):
    """A unit resolved with an output."""

    type: Literal["StepSucceeded"] = "StepSucceeded"
    step: str
    attempt: int
    output: Any


class StepAttemptFailed(_Event):
    """One attempt failed; the decider retries or fails the unit."""

    type: Literal["StepAttemptFailed"] = "StepAttemptFailed"
    step: str
    attempt: int
    error: ErrorInfo


class StepAttemptUncertain(_Event):
    """The worker holding an attempt was lost: the attempt will be delivered again."""

    type: Literal["StepAttemptUncertain"] = "StepAttemptUncertain"
    step: str
    attempt: int
    reason: str


class RetryScheduled(_Event):
    """A failed unit will be tried again after ``delay_ms``."""

    type: Literal["RetryScheduled"] = "RetryScheduled"
    step: str
    next_attempt: int
    delay_ms: int


class StepFailed(_Event):
    """A unit (or a whole step) failed for good."""

    type: Literal["StepFailed"] = "StepFailed"
    step: str
    error: ErrorInfo


class StepCancelled(_Event):
    """A unit in flight was cancelled (abort, fan-out failure, continue-as-new)."""

    type: Literal["StepCancelled"] = "StepCancelled"
    step: str
    reason: str


class StaleResultIgnored(_Event):
    """A result that could not count: for a resolved unit, or a failure from an old token."""

    type: Literal["StaleResultIgnored"] = "StaleResultIgnored"
    step: str
    token: str
    outcome: Literal["duplicate", "failure"]


class TimerStarted(_Event):
    """A durable timer (sleep, until, await timeout) was armed."""

    type: Literal["TimerStarted"] = "TimerStarted"
    step: str
    fire_at_ms: int


class TimerFired(_Event):
    """A durable timer fired; ``step`` ``run:timeout`` marks the run's own timeout."""

    type: Literal["TimerFired"] = "TimerFired"
    step: str


class SignalReceived(_Event):
    """A signal arrived; its ``seq`` is its identity."""

    type: Literal["SignalReceived"] = "SignalReceived"
    name: str
    payload: Any


class SignalDelivered(_Event):
    """An ``await`` unit took the signal received at ``signal_seq``."""

    type: Literal["SignalDelivered"] = "SignalDelivered"
    step: str
    signal_seq: int


class CancelRequested(_Event):
    """A caller asked for the execution to be cancelled."""

    type: Literal["CancelRequested"] = "CancelRequested"
    reason: str


class LimitExceeded(_Event):
    """A limit of the run was reached; the run aborts."""

    type: Literal["LimitExceeded"] = "LimitExceeded"
    limit: str
    message: str


class WorkflowCompleted(_Event):
    """Terminal: every step resolved; ``output`` is the workflow's output."""

    type: Literal["WorkflowCompleted"] = "WorkflowCompleted"
    output: Any


class WorkflowFailed(_Event):
    """Terminal: the run aborted on a failure or a limit."""

    type: Literal["WorkflowFailed"] = "WorkflowFailed"
    error: ErrorInfo
    compensation: Literal["none", "completed", "failed"]


class WorkflowCancelled(_Event):
    """Terminal: the run was cancelled."""

    type: Literal["WorkflowCancelled"] = "WorkflowCancelled"
    reason: str


class WorkflowTimedOut(_Event):
    """Terminal: the run passed its timeout."""

    type: Literal["WorkflowTimedOut"] = "WorkflowTimedOut"


class WorkflowTerminated(_Event):
    """Terminal: an operator ended the run at once (no compensation, no handlers)."""

    type: Literal["WorkflowTerminated"] = "WorkflowTerminated"
    reason: str


class WorkflowContinuedAsNew(_Event):
    """Terminal for this run: run ``next_run`` starts with ``input``."""

    type: Literal["WorkflowContinuedAsNew"] = "WorkflowContinuedAsNew"
    next_run: int
    input: Any


Event = Annotated[
    WorkflowCreated
    | WorkflowStarted
    | StepScheduled
    | StepSkipped
    | StepReused
    | StepFanOut
    | StepDispatched
    | StepSucceeded
    | StepAttemptFailed
    | StepAttemptUncertain
    | RetryScheduled
    | StepFailed
    | StepCancelled
    | StaleResultIgnored
    | TimerStarted
    | TimerFired
    | SignalReceived
    | SignalDelivered
    | CancelRequested
    | ExecutionPaused
    | ExecutionUnpaused
    | LimitExceeded
    | WorkflowCompleted
    | WorkflowFailed
    | WorkflowCancelled
    | WorkflowTimedOut
    | WorkflowTerminated
    | WorkflowContinuedAsNew,
    Field(discriminator="type"),
]
"""Any history event."""

TERMINAL_TYPES = frozenset(
    {
        "WorkflowCompleted",
        "WorkflowFailed",
        "WorkflowCancelled",
        "WorkflowTimedOut",
        "WorkflowTerminated",
        "WorkflowContinuedAsNew",
    }
)
RUN_TIMEOUT_TIMER = "run:timeout"

_ADAPTER: TypeAdapter[Event] = TypeAdapter(Event)
_LIST_ADAPTER: TypeAdapter[list[Event]] = TypeAdapter(list[Event])


def event_from_json(data: str | bytes | dict[str, Any]) -> Event:
    """Decode one event from its JSON text or its dict form."""
    if isinstance(data, dict):
        return _ADAPTER.validate_python(data)
    return _ADAPTER.validate_json(data)


def event_to_dict(event: Event) -> dict[str, Any]:
    """The JSON-ready dict of an event."""
    return event.model_dump(mode="json")


def event_to_json(event: Event) -> str:
    """The stable JSON text of an event."""
    return event.model_dump_json()


def events_to_json(events: list[Event]) -> str:
    """The JSON array of several events, in one call (what a store writes per commit)."""
    return "[" + ",".join(e.__pydantic_serializer__.to_json(e).decode() for e in events) + "]"


def events_from_json(data: str | bytes) -> list[Event]:
    """Decode a JSON array of events."""
    return _LIST_ADAPTER.validate_json(data)


def events_from_jsonl(text: str) -> list[Event]:
    """Decode a JSON-lines history."""
    return [event_from_json(line) for line in text.splitlines() if line.strip()]
