"""The decider and the pure transitions around it: what a workflow means, step by step (pure)."""

from .context import Abort, abort_cause
from .decider import MAX_ROUNDS, decide, decide_to_fixpoint, next_wakeup
from .effects import Effects, effects_of
from .invocation import (
    ChildInvocation,
    HttpInvocation,
    Invocation,
    TaskInvocation,
    child_execution_id,
    invocation,
)
from .query import evaluate_query
from .transitions import (
    ServerLimits,
    Verdict,
    attempt_uncertain,
    check_execution_id,
    child_finished,
    child_start_failed,
    dispatch,
    effective_limits,
    next_run_events,
    receive_signal,
    report_result,
    request_cancel,
    start_run,
    validated_input,
)

__all__ = [
    "MAX_ROUNDS",
    "Abort",
    "ChildInvocation",
    "Effects",
    "HttpInvocation",
    "Invocation",
    "ServerLimits",
    "TaskInvocation",
    "Verdict",
    "abort_cause",
    "attempt_uncertain",
    "check_execution_id",
    "child_execution_id",
    "child_finished",
    "child_start_failed",
    "decide",
    "decide_to_fixpoint",
    "dispatch",
    "effective_limits",
    "effects_of",
    "evaluate_query",
    "invocation",
    "next_run_events",
    "next_wakeup",
    "receive_signal",
    "report_result",
    "request_cancel",
    "start_run",
    "validated_input",
]
