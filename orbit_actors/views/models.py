"""The answers of the HTTP API that the runtime produces, as pydantic models (http-api.md). The
server dumps them to JSON; ``/v1/openapi.json`` is generated from them."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from ..history.events import ErrorInfo


def _absent(value: object) -> bool:
    return value is None


class ExecutionSummary(BaseModel):
    """An execution in a list, and the ``wait`` answer."""

    execution_id: str
    workflow: str
    version: str
    status: str
    run: int
    started_at_ms: int | None
    closed_at_ms: int | None
    parent_id: str | None
    schedule_id: str | None
    paused: bool = False


class ResultError(BaseModel):
    """How a finished execution ended when it did not complete: the terminal event's ``{code,
    message, details?}`` (``CANCELLED`` with the reason, ``TIMED_OUT`` for the run timeout)."""

    code: str
    message: str
    details: dict[str, Any] | None = Field(default=None, exclude_if=_absent)


class ExecutionResult(ExecutionSummary):
    """The ``wait`` answer: the summary with the output (completed) or the error (failed,
    cancelled, timed out); both null while it runs."""

    output: Any = None
    error: ResultError | None = None


class Unit(BaseModel):
    """One unit of an execution's detail."""

    key: str
    step: str
    status: str
    attempt: int
    redelivery: bool
    worker_id: str | None
    dispatched_at_ms: int | None
    deadline_ms: int | None
    error: ErrorInfo | None


class PendingSignal(BaseModel):
    """A signal received and not yet taken by an ``await`` step."""

    seq: int
    name: str


class ChildLink(BaseModel):
    """A child execution started for a unit."""

    key: str
    execution_id: str


class ExecutionDetail(ExecutionSummary):
    """``GET /v1/executions/{id}``; ``last_error`` only while quarantined."""

    input: Any
    output: Any
    error: ErrorInfo | None
    units: list[Unit]
    pending_signals: list[PendingSignal]
    children: list[ChildLink]
    quarantined: bool
    last_error: str | None = Field(default=None, exclude_if=_absent)


class Worker(BaseModel):
    """A worker ever registered."""

    worker_id: str
    runtime: str
    sdk: str
    contracts: list[dict[str, str]]
    last_seen_ms: int
    registered_at_ms: int
    online: bool
    sessions: int
    inflight: int


class Schedule(BaseModel):
    """A schedule with its next occurrences (none while paused) and the executions its latest
    occurrences started, newest first; ``last_error`` says why the latest occurrence that could
    not start did not."""

    schedule_id: str
    cron: str
    timezone: str
    workflow: str
    version: str | None
    input: Any
    overlap: str
    paused: bool
    next_occurrences_ms: list[int]
    last_execution_ids: list[str]
    last_error: str | None
    created_at_ms: int
