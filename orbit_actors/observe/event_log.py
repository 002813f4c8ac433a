"""One structured log line per significant event of a durable batch (architecture.md,
"Observability"): executions started and finished, attempts that failed or became uncertain,
steps that failed, limits exceeded. Fields ride on the record as ``record.orbit`` (execution_id,
workflow, step, attempt, code); no payload is ever logged at info level, only error codes and
messages the workers chose to report.
"""

from __future__ import annotations

import logging
from typing import Any

from ..history.events import Event, WorkflowCreated
from ..history.state import ExecutionState
from .commits import EventObserver
from .logformat import log_structured

log = logging.getLogger("orbit.execution")

_FINISHED = {
    "WorkflowCompleted": (logging.INFO, "execution completed"),
    "WorkflowFailed": (logging.WARNING, "execution failed"),
    "WorkflowCancelled": (logging.INFO, "execution cancelled"),
    "WorkflowTimedOut": (logging.WARNING, "execution timed out"),
    "WorkflowTerminated": (logging.WARNING, "execution terminated"),
    "WorkflowContinuedAsNew": (logging.INFO, "execution continued as new"),
}
_STEPS = {
    "StepAttemptFailed": (logging.INFO, "attempt failed"),
    "StepAttemptUncertain": (logging.WARNING, "attempt uncertain"),
    "StepFailed": (logging.WARNING, "step failed"),
    "LimitExceeded": (logging.WARNING, "limit exceeded"),
    "ExecutionPaused": (logging.INFO, "execution paused"),
    "ExecutionUnpaused": (logging.INFO, "execution unpaused"),
}


def _started(level: int, what: str) -> EventObserver:
    def observe(state: ExecutionState, event: WorkflowCreated) -> None:
        if log.isEnabledFor(level):  # the fields written out: _fields costs ~5 K more a line
            fields = {"execution_id": state.execution_id, "workflow": state.workflow,
                      "run": event.run}  # fmt: skip
            log_structured(log, level, what, fields)

    return observe


def _finished(level: int, what: str) -> EventObserver:
    def observe(state: ExecutionState, event: Event) -> None:
        if log.isEnabledFor(level):
            fields: dict[str, Any] = {"execution_id": state.execution_id,
                                      "workflow": state.workflow}  # fmt: skip
            if (code := _code(event)) is not None:
                fields["code"] = code
            fields["run"] = state.run
            log_structured(log, level, what, fields)

    return observe


def _step(level: int, what: str) -> EventObserver:
    def observe(state: ExecutionState, event: Event) -> None:
        if log.isEnabledFor(level):
            step, attempt = getattr(event, "step", None), getattr(event, "attempt", None)
            fields = _fields(state, step=step, attempt=attempt, code=_code(event))
            log_structured(log, level, what, fields)

    return observe


LOGGED: dict[str, EventObserver] = {
    "WorkflowCreated": _started(logging.INFO, "execution started"),
    **{kind: _finished(level, what) for kind, (level, what) in _FINISHED.items()},
    **{kind: _step(level, what) for kind, (level, what) in _STEPS.items()},
}
"""What each logged event type writes (a table the commit observer merges with the metrics': the
level is checked per event, since logging may be configured after the runtime opens)."""


def _code(event: Event) -> str | None:
    error = getattr(event, "error", None)
    code = getattr(error, "code", None)
    return str(code) if code is not None else getattr(event, "reason", None)


def _fields(state: ExecutionState, **fields: Any) -> dict[str, Any]:
    """The execution's id and workflow, then ``fields`` that are not None, in that order."""
    orbit = {"execution_id": state.execution_id, "workflow": state.workflow}
    orbit.update({k: v for k, v in fields.items() if v is not None})
    return orbit
