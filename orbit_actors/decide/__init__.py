"""The decider and the pure commands around it: what a workflow means, step by step (pure)."""

from .commands import (
    Ack,
    ServerLimits,
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

__all__ = [
    "MAX_ROUNDS",
    "Abort",
    "Ack",
    "ChildInvocation",
    "Effects",
    "HttpInvocation",
    "Invocation",
    "ServerLimits",
    "TaskInvocation",
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
