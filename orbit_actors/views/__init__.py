"""What the API shows: the answer models (pydantic, the same ones the OpenAPI document is made
from) and the functions that build them from an execution's state or its stored row."""

from .execution import describe, result_of, row_of, row_summary, summary, terminal_error
from .models import (
    ChildLink,
    ExecutionDetail,
    ExecutionResult,
    ExecutionSummary,
    PendingSignal,
    ResultError,
    Schedule,
    Unit,
    Worker,
)

__all__ = [
    "ChildLink",
    "ExecutionDetail",
    "ExecutionResult",
    "ExecutionSummary",
    "PendingSignal",
    "ResultError",
    "Schedule",
    "Unit",
    "Worker",
    "describe",
    "result_of",
    "row_of",
    "row_summary",
    "summary",
    "terminal_error",
]
