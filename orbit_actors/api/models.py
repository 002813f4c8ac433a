"""The HTTP API's bodies and answers as pydantic models (http-api.md); the answers the runtime
produces itself (executions, workers, schedules) come from :mod:`orbit_actors.views`.

Request models validate what callers send (a malformed body is 400 ``INVALID_REQUEST`` naming the
field); answer models describe what the server sends back. Both feed ``/v1/openapi.json``, so
the document is generated from the very models that check requests and cannot drift from them.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, WithJsonSchema

from ..store.base import EXECUTION_STATUSES
from ..views.models import ExecutionDetail as ExecutionDetail
from ..views.models import ExecutionResult as ExecutionResult
from ..views.models import ExecutionSummary as ExecutionSummary
from ..views.models import ResultError as ResultError
from ..views.models import Schedule as Schedule
from ..views.models import Unit as Unit
from ..views.models import Worker as Worker


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class StartExecution(_Body):
    """``POST /v1/executions``."""

    workflow: str = Field(min_length=1)
    version: str | None = None
    input: Any = None
    execution_id: str | None = None


class CancelExecution(_Body):
    """``POST /v1/executions/{id}/cancel``."""

    reason: str | None = None


class TerminateExecution(_Body):
    """``POST /v1/executions/{id}/terminate``."""

    reason: str | None = None


class PauseExecution(_Body):
    """``POST /v1/executions/{id}/pause``."""

    reason: str | None = None


class RerunExecution(_Body):
    """``POST /v1/executions/{id}/rerun``."""

    from_step: str | None = Field(default=None, min_length=1)
    input: Any = None
    version: str | None = Field(default=None, min_length=1)
    reason: str | None = None
    dry_run: bool = False


class SendSignal(_Body):
    """``POST /v1/executions/{id}/signals/{name}``."""

    payload: Any = None


class CreateSchedule(_Body):
    """``POST /v1/schedules``."""

    schedule_id: str
    cron: Annotated[str, WithJsonSchema({"type": "string", "minLength": 1})]
    workflow: str = Field(min_length=1)
    timezone: str = "UTC"
    version: str | None = None
    input: Any = None
    overlap: str = "skip"
    paused: bool = False


class CompleteTask(_Body):
    """``POST /v1/tasks/{token}/complete``."""

    output: Any = None
    worker_id: str | None = None


class TaskError(BaseModel):
    """A task's failure as a worker reports it."""

    model_config = ConfigDict(extra="forbid")
    code: str = Field(min_length=1)
    message: str = ""
    retryable: bool = True
    details: dict[str, Any] | None = None


class FailTask(_Body):
    """``POST /v1/tasks/{token}/fail``."""

    error: TaskError
    worker_id: str | None = None


class ListQuery(BaseModel):
    """``GET /v1/executions`` query parameters."""

    model_config = ConfigDict(extra="ignore")
    status: Annotated[
        str | None, WithJsonSchema({"type": "string", "enum": sorted(EXECUTION_STATUSES)})
    ] = None
    workflow: str | None = None
    limit: int = 100
    cursor: str | None = None
    counts: bool = False  # also answer how many executions the store holds by status
    paused: bool | None = None


class HistoryQuery(BaseModel):
    """``GET /v1/executions/{id}/history`` query parameters."""

    model_config = ConfigDict(extra="ignore")
    run: int | None = Field(default=None, ge=1)


class StartQuery(BaseModel):
    """``POST /v1/executions`` query parameters: ``wait`` seconds (clamped to 60) for the
    answer to carry the outcome."""

    model_config = ConfigDict(extra="ignore")
    wait: float | None = Field(default=None, ge=0)


class WaitQuery(BaseModel):
    """``GET /v1/executions/{id}/wait`` query parameters (seconds; clamped to 60)."""

    model_config = ConfigDict(extra="ignore")
    timeout: float = Field(default=30.0, ge=0)


# -- answers ---------------------------------------------------------------------------------
class ErrorDetail(BaseModel):
    """``{code, message}``."""

    code: str
    message: str


class ErrorBody(BaseModel):
    """Every error: ``{"error": {"code", "message"}}``."""

    error: ErrorDetail


class Definition(BaseModel):
    """A registered definition."""

    name: str
    version: str
    definition_hash: str
    registered_at_ms: int


class DefinitionWithIr(Definition):
    """One definition with its IR."""

    ir: dict[str, Any]


class DefinitionRegistered(Definition):
    """The answer to ``POST /v1/definitions``."""

    created: bool


class DefinitionList(BaseModel):
    """``{"definitions": […]}``."""

    definitions: list[Definition]


class Started(BaseModel):
    """The answer to ``POST /v1/executions``; with ``?wait=S`` also ``status``, ``output`` and
    ``error`` (``status`` is ``running``, and both null, when ``S`` seconds passed first)."""

    execution_id: str
    created: bool
    status: str | None = None
    output: Any = None
    error: ResultError | None = None


class ExecutionList(BaseModel):
    """``{"executions": […], "next_cursor": …}``; with ``?counts=true`` also ``counts``, the
    number of executions in the store by status (every workflow, whatever the filters)."""

    executions: list[ExecutionSummary]
    next_cursor: str | None
    counts: dict[str, int] | None = None


class History(BaseModel):
    """``{"execution_id", "run", "events": […]}``."""

    execution_id: str
    run: int
    events: list[dict[str, Any]]


class RerunStarted(BaseModel):
    """The answer to a rerun: the execution and the number of the run that started."""

    execution_id: str
    run: int


class RerunPlan(BaseModel):
    """The answer to a rerun's dry run: the steps it would reuse and those it would run again
    (in the definition's order), and the ids of the children it would start."""

    from_step: str
    reused: list[str]
    rerun: list[str]
    children: list[str]


class SignalAccepted(BaseModel):
    """``{"seq": …}``."""

    seq: int


class QueryAnswer(BaseModel):
    """``{"value": …}``."""

    value: Any


class WorkerList(BaseModel):
    """``{"workers": […]}``."""

    workers: list[Worker]


class Server(BaseModel):
    """A server sharing the store: where it listens, when it started, its latest lease renewal
    (``last_seen_ms``) and expiry, and how many running executions it owns."""

    server_id: str
    address: str
    host: str
    pid: int
    started_at_ms: int
    last_seen_ms: int
    lease_until_ms: int
    online: bool
    executions: int


class ServerList(BaseModel):
    """``{"servers": […]}``."""

    servers: list[Server]


class ScheduleCreated(Schedule):
    """The answer to ``POST /v1/schedules``."""

    created: bool


class ScheduleList(BaseModel):
    """``{"schedules": […]}``."""

    schedules: list[Schedule]


class Triggered(BaseModel):
    """The answer to ``POST /v1/schedules/{id}/trigger``."""

    execution_id: str


class TaskAck(BaseModel):
    """The answer to a task result (the ``ack`` message's body)."""

    type: str = "ack"
    token: str
    accepted: bool
    reason: str | None = None


class Health(BaseModel):
    """``/healthz`` and ``/readyz``."""

    status: str
