"""One sentence for one event: what the upgrade check and the step-by-step replay say a history
recorded, or what a candidate definition would do instead. Each event type has its phrase (a
table), written as what the decider or the outside world *does* at that point."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from ..history import events as ev

MAX_VALUE_CHARS = 120


def value_text(value: Any) -> str:
    """Compact JSON of ``value``, cut to :data:`MAX_VALUE_CHARS` characters."""
    text = json.dumps(value, separators=(",", ":"), sort_keys=True, default=str)
    return text if len(text) <= MAX_VALUE_CHARS else text[: MAX_VALUE_CHARS - 1] + "…"


def phrase(event: ev.Event) -> str:
    """What ``event`` does, as a verb phrase ("schedule step `a` (attempt 1) with input …")."""
    return _PHRASES.get(event.type, _unknown)(event)


def recorded_sentence(event: ev.Event) -> str:
    """The history's side of a divergence, in one sentence."""
    return f"The history records at seq {event.seq}: {phrase(event)}."


def candidate_sentence(action: str) -> str:
    """The candidate's side of a divergence, in one sentence (``action`` is a verb phrase)."""
    return f"The candidate would {action}."


def _unknown(event: ev.Event) -> str:
    return f"record {event.type}"


def _error(error: ev.ErrorInfo) -> str:
    return f"{error.code}: {error.message}"


_PHRASES: dict[str, Callable[[Any], str]] = {
    "WorkflowCreated": lambda e: f"create the run of {e.workflow}@{e.version}",
    "WorkflowStarted": lambda e: "start the run",
    "StepScheduled": lambda e: (
        f"schedule step `{e.step}` (attempt {e.attempt}) with input {value_text(e.input)}"
    ),
    "StepSkipped": lambda e: f"skip step `{e.step}` (its `when` is false)",
    "StepFanOut": lambda e: f"fan step `{e.step}` out over {len(e.items)} items",
    "StepDispatched": lambda e: (
        f"hand step `{e.step}` (attempt {e.attempt}) to worker `{e.worker_id}`"
    ),
    "StepSucceeded": lambda e: f"take the output of step `{e.step}`: {value_text(e.output)}",
    "StepAttemptFailed": lambda e: (
        f"take the failure of step `{e.step}` attempt {e.attempt} ({_error(e.error)})"
    ),
    "StepAttemptUncertain": lambda e: f"mark attempt {e.attempt} of step `{e.step}` uncertain",
    "RetryScheduled": lambda e: (
        f"retry step `{e.step}` as attempt {e.next_attempt} after {e.delay_ms} ms"
    ),
    "StepFailed": lambda e: f"fail step `{e.step}` ({_error(e.error)})",
    "StepCancelled": lambda e: f"cancel step `{e.step}` ({e.reason})",
    "StaleResultIgnored": lambda e: f"ignore a late result for step `{e.step}`",
    "TimerStarted": lambda e: f"start the timer of step `{e.step}`",
    "TimerFired": lambda e: f"fire the timer of `{e.step}`",
    "SignalReceived": lambda e: f"receive signal `{e.name}` with payload {value_text(e.payload)}",
    "SignalDelivered": lambda e: (
        f"deliver the signal received at seq {e.signal_seq} to step `{e.step}`"
    ),
    "CancelRequested": lambda e: f"take a cancel request ({e.reason})",
    "LimitExceeded": lambda e: f"stop the run at its limit {e.limit}",
    "DefinitionMigrated": lambda e: f"move the execution from {e.from_version} to {e.to_version}",
    "WorkflowCompleted": lambda e: f"complete the run with output {value_text(e.output)}",
    "WorkflowFailed": lambda e: f"fail the run ({_error(e.error)})",
    "WorkflowCancelled": lambda e: "end the run as cancelled",
    "WorkflowTimedOut": lambda e: "end the run as timed out",
    "WorkflowContinuedAsNew": lambda e: f"continue as new (run {e.next_run})",
}
