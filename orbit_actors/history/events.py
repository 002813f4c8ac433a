"""Every history event of execution.md as a plain slotted class with stable JSON.

Inside the pure core an event is a plain dataclass (``__slots__``, keyword-only fields, ``type``
a default naming its class): building one costs what a small object does. The events every
execution makes (``WorkflowCreated``, ``WorkflowStarted``, ``StepScheduled``,
``StepDispatched``, ``StepSucceeded``, ``WorkflowCompleted``) also take their fields by
position, in field order with ``type`` left out: each keyword argument costs about as much
again as the slot it fills (a ``StepScheduled`` by keyword 635 ns, by position 214 ns), and the
decider and the transitions build them by position. ``seq`` and ``timestamp_ms`` come first in
every event.

``Event`` is one discriminated union on ``type``, and the module's functions are the only way in
and out: they go through one pydantic ``TypeAdapter`` over that union (unknown fields forbidden), so
:func:`event_from_json` validates a stored event as strictly as before and :func:`event_to_json`
writes the same text. Optional fields that are absent are left out of the JSON; payload fields
(``output``, ``input``, ``payload``) keep an explicit ``null``. Nothing writes into an event once
built (a history is append-only); an event is not hashable.

Writing is the hot direction (every commit), so each event type lists its own fields for the JSON
(``_json_fields``: in their order, the absent optional ones left out) and pydantic-core's
``to_json`` writes them, NaN and infinities as ``null`` like the adapter: half the instructions
of the adapter's union, whose ``exclude_if`` is a Python call per optional field. The bytes are
the adapter's (``tests/history/test_event_json.py`` compares them for every event type); a field
added to an event must be added to its ``_json_fields``, which that test catches.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter
from pydantic_core import to_json


class _Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _absent(value: object) -> bool:
    return value is None


def _optional() -> Any:
    """An optional field, left out of the JSON when absent."""
    return Field(default=None, exclude_if=_absent)


_OPTIONAL = Field(exclude_if=_absent)
"""An event's optional field (``Annotated[T | None, _OPTIONAL] = None``): absent, it is left out
of the JSON."""


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


@dataclass(slots=True)
class _Event:
    __pydantic_config__ = ConfigDict(extra="forbid")

    seq: int
    timestamp_ms: int


class RerunOf(_Frozen):
    """The run a rerun repeats, and the step it reruns from."""

    run: int
    from_step: str


class StartFlow(_Frozen):
    """What a start's flow control evaluated to: the priority (1 first … 9) and the
    concurrency key, when the definition declares one."""

    priority: int = 5
    key: str | None = _optional()
    rate_keys: dict[str, str] | None = _optional()  # task → the key of its rate limit


@dataclass(slots=True)
class WorkflowCreated(_Event):
    """The run exists: its definition, input and effective limits (and, for a rerun, the run it
    repeats)."""

    type: Literal["WorkflowCreated"] = field(default="WorkflowCreated", kw_only=True)
    execution_id: str
    workflow: str
    version: str
    definition_hash: str
    input: Any
    limits: EffectiveLimits
    parent: Annotated[ParentRef | None, _OPTIONAL] = None
    schedule_id: Annotated[str | None, _OPTIONAL] = None
    run: int = 1
    rerun_of: Annotated[RerunOf | None, _OPTIONAL] = None
    flow: Annotated[StartFlow | None, _OPTIONAL] = None

    def _json_fields(self) -> dict[str, Any]:
        fields: dict[str, Any] = {
            "seq": self.seq,
            "timestamp_ms": self.timestamp_ms,
            "type": "WorkflowCreated",
            "execution_id": self.execution_id,
            "workflow": self.workflow,
            "version": self.version,
            "definition_hash": self.definition_hash,
            "input": self.input,
            "limits": self.limits,
        }
        if self.parent is not None:
            fields["parent"] = self.parent
        if self.schedule_id is not None:
            fields["schedule_id"] = self.schedule_id
        fields["run"] = self.run
        if self.rerun_of is not None:
            fields["rerun_of"] = self.rerun_of
        if self.flow is not None:
            fields["flow"] = self.flow
        return fields


@dataclass(slots=True)
class WorkflowStarted(_Event):
    """The run started (committed together with ``WorkflowCreated``)."""

    type: Literal["WorkflowStarted"] = field(default="WorkflowStarted", kw_only=True)

    def _json_fields(self) -> dict[str, Any]:
        return {"seq": self.seq, "timestamp_ms": self.timestamp_ms, "type": "WorkflowStarted"}


@dataclass(slots=True)
class StepScheduled(_Event):
    """A unit's attempt is ready: its evaluated input is recorded so replay never re-evaluates."""

    type: Literal["StepScheduled"] = field(default="StepScheduled", kw_only=True)
    step: str
    attempt: int
    input: Any
    idempotency_key: str
    redelivery: bool = False
    start_by_ms: Annotated[int | None, _OPTIONAL] = None
    """When no worker took the unit by then, its attempt fails with ``SCHEDULE_TIMEOUT``
    (the task's ``schedule_to_start``; absent: it may wait forever)."""

    def _json_fields(self) -> dict[str, Any]:
        fields: dict[str, Any] = {
            "seq": self.seq,
            "timestamp_ms": self.timestamp_ms,
            "type": "StepScheduled",
            "step": self.step,
            "attempt": self.attempt,
            "input": self.input,
            "idempotency_key": self.idempotency_key,
            "redelivery": self.redelivery,
        }
        if self.start_by_ms is not None:
            fields["start_by_ms"] = self.start_by_ms
        return fields


@dataclass(slots=True, kw_only=True)
class StepSkipped(_Event):
    """A step's ``when`` was false."""

    type: Literal["StepSkipped"] = "StepSkipped"
    step: str

    def _json_fields(self) -> dict[str, Any]:
        return {
            "seq": self.seq,
            "timestamp_ms": self.timestamp_ms,
            "type": "StepSkipped",
            "step": self.step,
        }


@dataclass(slots=True, kw_only=True)
class StepReused(_Event):
    """A rerun takes a step's output from the run it repeats: the step is not dispatched."""

    type: Literal["StepReused"] = "StepReused"
    step: str
    output: Any
    from_run: int

    def _json_fields(self) -> dict[str, Any]:
        return {
            "seq": self.seq,
            "timestamp_ms": self.timestamp_ms,
            "type": "StepReused",
            "step": self.step,
            "output": self.output,
            "from_run": self.from_run,
        }


@dataclass(slots=True, kw_only=True)
class ExecutionPaused(_Event):
    """An operator paused the execution: nothing new is dispatched until it is unpaused."""

    type: Literal["ExecutionPaused"] = "ExecutionPaused"
    reason: Annotated[str | None, _OPTIONAL] = None

    def _json_fields(self) -> dict[str, Any]:
        fields: dict[str, Any] = {
            "seq": self.seq,
            "timestamp_ms": self.timestamp_ms,
            "type": "ExecutionPaused",
        }
        if self.reason is not None:
            fields["reason"] = self.reason
        return fields


@dataclass(slots=True, kw_only=True)
class ExecutionUnpaused(_Event):
    """The execution was unpaused: what waited is dispatched."""

    type: Literal["ExecutionUnpaused"] = "ExecutionUnpaused"

    def _json_fields(self) -> dict[str, Any]:
        return {"seq": self.seq, "timestamp_ms": self.timestamp_ms, "type": "ExecutionUnpaused"}


@dataclass(slots=True, kw_only=True)
class StepFanOut(_Event):
    """A fan-out step's list was evaluated: one unit per item."""

    type: Literal["StepFanOut"] = "StepFanOut"
    step: str
    items: list[Any]

    def _json_fields(self) -> dict[str, Any]:
        return {
            "seq": self.seq,
            "timestamp_ms": self.timestamp_ms,
            "type": "StepFanOut",
            "step": self.step,
            "items": self.items,
        }


@dataclass(slots=True)
class StepDispatched(_Event):
    """An attempt left for a worker (or the built-in runner, or a child) under a fresh token."""

    type: Literal["StepDispatched"] = field(default="StepDispatched", kw_only=True)
    step: str
    attempt: int
    token: str
    worker_id: str
    worker_session: str
    deadline_ms: Annotated[int | None, _OPTIONAL] = None

    def _json_fields(self) -> dict[str, Any]:
        fields: dict[str, Any] = {
            "seq": self.seq,
            "timestamp_ms": self.timestamp_ms,
            "type": "StepDispatched",
            "step": self.step,
            "attempt": self.attempt,
            "token": self.token,
            "worker_id": self.worker_id,
            "worker_session": self.worker_session,
        }
        if self.deadline_ms is not None:
            fields["deadline_ms"] = self.deadline_ms
        return fields


@dataclass(slots=True)
class StepSucceeded(_Event):
    """A unit resolved with an output."""

    type: Literal["StepSucceeded"] = field(default="StepSucceeded", kw_only=True)
    step: str
    attempt: int
    output: Any

    def _json_fields(self) -> dict[str, Any]:
        return {
            "seq": self.seq,
            "timestamp_ms": self.timestamp_ms,
            "type": "StepSucceeded",
            "step": self.step,
            "attempt": self.attempt,
            "output": self.output,
        }


@dataclass(slots=True, kw_only=True)
class StepAttemptFailed(_Event):
    """One attempt failed; the decider retries or fails the unit."""

    type: Literal["StepAttemptFailed"] = "StepAttemptFailed"
    step: str
    attempt: int
    error: ErrorInfo

    def _json_fields(self) -> dict[str, Any]:
        return {
            "seq": self.seq,
            "timestamp_ms": self.timestamp_ms,
            "type": "StepAttemptFailed",
            "step": self.step,
            "attempt": self.attempt,
            "error": self.error,
        }


@dataclass(slots=True, kw_only=True)
class StepAttemptUncertain(_Event):
    """The worker holding an attempt was lost: the attempt will be delivered again."""

    type: Literal["StepAttemptUncertain"] = "StepAttemptUncertain"
    step: str
    attempt: int
    reason: str

    def _json_fields(self) -> dict[str, Any]:
        return {
            "seq": self.seq,
            "timestamp_ms": self.timestamp_ms,
            "type": "StepAttemptUncertain",
            "step": self.step,
            "attempt": self.attempt,
            "reason": self.reason,
        }


@dataclass(slots=True, kw_only=True)
class RetryScheduled(_Event):
    """A failed unit will be tried again after ``delay_ms``."""

    type: Literal["RetryScheduled"] = "RetryScheduled"
    step: str
    next_attempt: int
    delay_ms: int

    def _json_fields(self) -> dict[str, Any]:
        return {
            "seq": self.seq,
            "timestamp_ms": self.timestamp_ms,
            "type": "RetryScheduled",
            "step": self.step,
            "next_attempt": self.next_attempt,
            "delay_ms": self.delay_ms,
        }


@dataclass(slots=True, kw_only=True)
class StepFailed(_Event):
    """A unit (or a whole step) failed for good."""

    type: Literal["StepFailed"] = "StepFailed"
    step: str
    error: ErrorInfo

    def _json_fields(self) -> dict[str, Any]:
        return {
            "seq": self.seq,
            "timestamp_ms": self.timestamp_ms,
            "type": "StepFailed",
            "step": self.step,
            "error": self.error,
        }


@dataclass(slots=True, kw_only=True)
class StepCancelled(_Event):
    """A unit in flight was cancelled (abort, fan-out failure, continue-as-new)."""

    type: Literal["StepCancelled"] = "StepCancelled"
    step: str
    reason: str

    def _json_fields(self) -> dict[str, Any]:
        return {
            "seq": self.seq,
            "timestamp_ms": self.timestamp_ms,
            "type": "StepCancelled",
            "step": self.step,
            "reason": self.reason,
        }


@dataclass(slots=True, kw_only=True)
class StaleResultIgnored(_Event):
    """A result that could not count: for a resolved unit, or a failure from an old token."""

    type: Literal["StaleResultIgnored"] = "StaleResultIgnored"
    step: str
    token: str
    outcome: Literal["duplicate", "failure"]

    def _json_fields(self) -> dict[str, Any]:
        return {
            "seq": self.seq,
            "timestamp_ms": self.timestamp_ms,
            "type": "StaleResultIgnored",
            "step": self.step,
            "token": self.token,
            "outcome": self.outcome,
        }


@dataclass(slots=True, kw_only=True)
class TimerStarted(_Event):
    """A durable timer (sleep, until, await timeout) was armed."""

    type: Literal["TimerStarted"] = "TimerStarted"
    step: str
    fire_at_ms: int

    def _json_fields(self) -> dict[str, Any]:
        return {
            "seq": self.seq,
            "timestamp_ms": self.timestamp_ms,
            "type": "TimerStarted",
            "step": self.step,
            "fire_at_ms": self.fire_at_ms,
        }


@dataclass(slots=True, kw_only=True)
class TimerFired(_Event):
    """A durable timer fired; ``step`` ``run:timeout`` marks the run's own timeout."""

    type: Literal["TimerFired"] = "TimerFired"
    step: str

    def _json_fields(self) -> dict[str, Any]:
        return {
            "seq": self.seq,
            "timestamp_ms": self.timestamp_ms,
            "type": "TimerFired",
            "step": self.step,
        }


@dataclass(slots=True, kw_only=True)
class SignalReceived(_Event):
    """A signal arrived; its ``seq`` is its identity."""

    type: Literal["SignalReceived"] = "SignalReceived"
    name: str
    payload: Any

    def _json_fields(self) -> dict[str, Any]:
        return {
            "seq": self.seq,
            "timestamp_ms": self.timestamp_ms,
            "type": "SignalReceived",
            "name": self.name,
            "payload": self.payload,
        }


@dataclass(slots=True, kw_only=True)
class SignalDelivered(_Event):
    """An ``await`` unit took the signal received at ``signal_seq``."""

    type: Literal["SignalDelivered"] = "SignalDelivered"
    step: str
    signal_seq: int

    def _json_fields(self) -> dict[str, Any]:
        return {
            "seq": self.seq,
            "timestamp_ms": self.timestamp_ms,
            "type": "SignalDelivered",
            "step": self.step,
            "signal_seq": self.signal_seq,
        }


@dataclass(slots=True, kw_only=True)
class CancelRequested(_Event):
    """A caller asked for the execution to be cancelled."""

    type: Literal["CancelRequested"] = "CancelRequested"
    reason: str

    def _json_fields(self) -> dict[str, Any]:
        return {
            "seq": self.seq,
            "timestamp_ms": self.timestamp_ms,
            "type": "CancelRequested",
            "reason": self.reason,
        }


@dataclass(slots=True, kw_only=True)
class LimitExceeded(_Event):
    """A limit of the run was reached; the run aborts."""

    type: Literal["LimitExceeded"] = "LimitExceeded"
    limit: str
    message: str

    def _json_fields(self) -> dict[str, Any]:
        return {
            "seq": self.seq,
            "timestamp_ms": self.timestamp_ms,
            "type": "LimitExceeded",
            "limit": self.limit,
            "message": self.message,
        }


@dataclass(slots=True, kw_only=True)
class DefinitionMigrated(_Event):
    """The execution goes on under another version of its workflow (one the upgrade check found
    compatible); replay uses the new definition from this event on."""

    type: Literal["DefinitionMigrated"] = "DefinitionMigrated"
    from_version: str
    to_version: str
    definition_hash: str

    def _json_fields(self) -> dict[str, Any]:
        return {
            "seq": self.seq,
            "timestamp_ms": self.timestamp_ms,
            "type": "DefinitionMigrated",
            "from_version": self.from_version,
            "to_version": self.to_version,
            "definition_hash": self.definition_hash,
        }


@dataclass(slots=True)
class WorkflowCompleted(_Event):
    """Terminal: every step resolved; ``output`` is the workflow's output."""

    type: Literal["WorkflowCompleted"] = field(default="WorkflowCompleted", kw_only=True)
    output: Any

    def _json_fields(self) -> dict[str, Any]:
        return {
            "seq": self.seq,
            "timestamp_ms": self.timestamp_ms,
            "type": "WorkflowCompleted",
            "output": self.output,
        }


@dataclass(slots=True, kw_only=True)
class WorkflowFailed(_Event):
    """Terminal: the run aborted on a failure or a limit."""

    type: Literal["WorkflowFailed"] = "WorkflowFailed"
    error: ErrorInfo
    compensation: Literal["none", "completed", "failed"]

    def _json_fields(self) -> dict[str, Any]:
        return {
            "seq": self.seq,
            "timestamp_ms": self.timestamp_ms,
            "type": "WorkflowFailed",
            "error": self.error,
            "compensation": self.compensation,
        }


@dataclass(slots=True, kw_only=True)
class WorkflowCancelled(_Event):
    """Terminal: the run was cancelled."""

    type: Literal["WorkflowCancelled"] = "WorkflowCancelled"
    reason: str

    def _json_fields(self) -> dict[str, Any]:
        return {
            "seq": self.seq,
            "timestamp_ms": self.timestamp_ms,
            "type": "WorkflowCancelled",
            "reason": self.reason,
        }


@dataclass(slots=True, kw_only=True)
class WorkflowTimedOut(_Event):
    """Terminal: the run passed its timeout."""

    type: Literal["WorkflowTimedOut"] = "WorkflowTimedOut"

    def _json_fields(self) -> dict[str, Any]:
        return {"seq": self.seq, "timestamp_ms": self.timestamp_ms, "type": "WorkflowTimedOut"}


@dataclass(slots=True, kw_only=True)
class WorkflowTerminated(_Event):
    """Terminal: an operator ended the run at once (no compensation, no handlers)."""

    type: Literal["WorkflowTerminated"] = "WorkflowTerminated"
    reason: str

    def _json_fields(self) -> dict[str, Any]:
        return {
            "seq": self.seq,
            "timestamp_ms": self.timestamp_ms,
            "type": "WorkflowTerminated",
            "reason": self.reason,
        }


@dataclass(slots=True, kw_only=True)
class WorkflowContinuedAsNew(_Event):
    """Terminal for this run: run ``next_run`` starts with ``input``."""

    type: Literal["WorkflowContinuedAsNew"] = "WorkflowContinuedAsNew"
    next_run: int
    input: Any

    def _json_fields(self) -> dict[str, Any]:
        return {
            "seq": self.seq,
            "timestamp_ms": self.timestamp_ms,
            "type": "WorkflowContinuedAsNew",
            "next_run": self.next_run,
            "input": self.input,
        }


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
    | DefinitionMigrated
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
    """Decode one event from its JSON text or its dict form (a ``ValidationError`` when it is not
    one)."""
    if isinstance(data, dict):
        return _ADAPTER.validate_python(data)
    return _ADAPTER.validate_json(data)


def event_to_dict(event: Event) -> dict[str, Any]:
    """The JSON-ready dict of an event."""
    return _ADAPTER.dump_python(event, mode="json")  # type: ignore[no-any-return]


def event_to_json(event: Event) -> str:
    """The stable JSON text of an event."""
    return to_json(event._json_fields(), inf_nan_mode="null").decode()


def events_to_json(events: list[Event]) -> str:
    """The JSON array of several events, in one call (what a store writes per commit)."""
    return to_json([event._json_fields() for event in events], inf_nan_mode="null").decode()


def events_from_json(data: str | bytes) -> list[Event]:
    """Decode a JSON array of events."""
    return _LIST_ADAPTER.validate_json(data)


def events_from_jsonl(text: str) -> list[Event]:
    """Decode a JSON-lines history."""
    return [event_from_json(line) for line in text.splitlines() if line.strip()]
