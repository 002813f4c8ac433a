"""One structured log line per significant event of a durable batch (architecture.md,
"Observability"): executions started and finished, attempts that failed or became uncertain,
steps that failed, limits exceeded. Fields ride on the record as ``record.orbit`` (execution_id,
workflow, step, attempt, code); no payload is ever logged at info level, only error codes and
messages the workers chose to report.
"""

from __future__ import annotations

import logging
from typing import Any

from ..history.events import Event
from ..history.state import ExecutionState

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
_LOGGED = {"WorkflowCreated": (logging.INFO, "execution started"), **_FINISHED, **_STEPS}
"""Every event type that is logged, with its level and message."""


def log_committed(state: ExecutionState, batch: list[Event], seconds: float) -> None:
    """Log the significant events of a durable batch of ``state`` (a commit observer;
    ``seconds``, what the commit took, is not logged)."""
    for event in batch:
        found = _LOGGED.get(event.type)  # most events of a batch are not logged: one look-up
        if found is None or not log.isEnabledFor(found[0]):
            continue
        level, what = found
        if event.type == "WorkflowCreated":
            _emit(level, what, state, run=getattr(event, "run", 1))
        elif event.type in _FINISHED:
            _emit(level, what, state, code=_code(event), run=state.run)
        else:
            _emit(level, what, state, step=getattr(event, "step", None),
                  attempt=getattr(event, "attempt", None), code=_code(event))  # fmt: skip


def _code(event: Event) -> str | None:
    error = getattr(event, "error", None)
    code = getattr(error, "code", None)
    return str(code) if code is not None else getattr(event, "reason", None)


def _emit(level: int, message: str, state: ExecutionState, **fields: Any) -> None:
    orbit = {"execution_id": state.execution_id, "workflow": state.workflow}
    orbit.update({k: v for k, v in fields.items() if v is not None})
    log.log(level, message, extra={"orbit": orbit})
