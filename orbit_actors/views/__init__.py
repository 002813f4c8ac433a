"""What the API shows: the answer models (pydantic, the same ones the OpenAPI document is made
from) and the functions that build them from an execution's state or its stored row."""

from .execution import describe, row_of, row_summary, summary
from .models import (
    ChildLink,
    ExecutionDetail,
    ExecutionSummary,
    PendingSignal,
    Schedule,
    Unit,
    Worker,
)

__all__ = [
    "ChildLink",
    "ExecutionDetail",
    "ExecutionSummary",
    "PendingSignal",
    "Schedule",
    "Unit",
    "Worker",
    "describe",
    "row_of",
    "row_summary",
    "summary",
]
