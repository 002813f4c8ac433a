"""The endpoints of http-api.md as one table: each :class:`Endpoint` names its method, path,
request model, answers and handler. The Quart app registers routes from this table and the
OpenAPI document is generated from it, so what is served and what is documented are one thing.

Handlers are transport-free: they take a :class:`Call` (the runtime, the path parameters, the
validated body and query) and return ``(status, body)``. Errors are raised as
:class:`~orbit_actors.errors.OrbitError` and mapped to the error body by the app.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel
from pydantic_core import to_jsonable_python

from ..actors.schedule import ScheduleSpec
from ..api import batch_models as bm
from ..api import models as m
from ..api import upgrade_models as u
from ..decide.transitions import Verdict
from ..errors import InvalidRequestError
from ..history.events import ErrorInfo, event_to_dict
from ..runtime import Runtime
from ..store.base import EXECUTION_STATUSES, DefinitionRecord
from ..views import ExecutionResult, row_summary
from . import batch_api as batch
from . import upgrade_api as upgrade

Answer = tuple[int, Any]


def body_of(answer: BaseModel) -> dict[str, Any]:
    """A typed answer as the JSON object it is sent as."""
    return answer.model_dump(mode="json")


@dataclass
class Call:
    """One request as a handler sees it."""

    runtime: Runtime
    params: dict[str, str]
    body: Any = None  # the validated request model, or the raw text for definitions
    query: Any = None
    content_type: str = ""
    worker_id: str | None = None  # the worker a bound worker token names (authentication)


Handler = Callable[[Call], Awaitable[Answer]]


@dataclass(frozen=True)
class Endpoint:
    """One route: ``path`` uses ``{name}`` parameters; ``answers`` maps status → model."""

    method: str
    path: str
    handler: Handler
    summary: str
    answers: dict[int, type[BaseModel] | None]
    body: type[BaseModel] | None = None
    query: type[BaseModel] | None = None
    errors: tuple[int, ...] = ()
    raw_body: bool = False  # the body is read by the handler (definitions: JSON or YAML)
    tags: tuple[str, ...] = field(default=("executions",))


# -- definitions -----------------------------------------------------------------------------
def definition_body(record: DefinitionRecord, *, with_ir: bool = False) -> dict[str, Any]:
    """A definition as the API shows it."""
    body: dict[str, Any] = {
        "name": record.name,
        "version": record.version,
        "definition_hash": record.definition_hash,
        "registered_at_ms": record.registered_at_ms,
    }
    if with_ir:
        body["ir"] = json.loads(record.ir)
    return body


async def register_definition(call: Call) -> Answer:
    """Register a definition given as the IR in JSON or as YAML source."""
    source = upgrade.definition_source(call.body, call.content_type)
    record, created = await call.runtime.register_definition(source)
    return (201 if created else 200), {**definition_body(record), "created": created}


async def list_definitions(call: Call) -> Answer:
    """Every registered definition."""
    records = await call.runtime.list_definitions()
    return 200, {"definitions": [definition_body(r) for r in records]}


async def get_definition(call: Call) -> Answer:
    """The latest version of a workflow, or one version, with its IR."""
    record = await call.runtime.get_definition(call.params["name"], call.params.get("version"))
    return 200, definition_body(record, with_ir=True)


# -- executions ------------------------------------------------------------------------------
MAX_WAIT_SECONDS = 60.0  # a longer wait is clamped: answers never hang past a minute


def outcome_body(result: ExecutionResult) -> dict[str, Any]:
    """What a started execution's answer sends of its result: status, output and error, as
    ``result.model_dump(mode="json", include={"status", "output", "error"})`` writes them (in
    that order; tested equal), a third of that call's cost (every ``POST ?wait`` sends one)."""
    error = result.error
    return {
        "status": result.status,
        "output": to_jsonable_python(result.output, inf_nan_mode="null"),
        "error": None if error is None else error.model_dump(mode="json"),
    }


async def start_execution(call: Call) -> Answer:
    """Start an execution; with ``?wait=S``, answer once it has finished or S seconds passed."""
    body: m.StartExecution = call.body
    query: m.StartQuery = call.query
    if query.wait is None:
        execution_id, created = await call.runtime.start(
            body.workflow, version=body.version, input=body.input, execution_id=body.execution_id
        )
        return (201 if created else 200), {"execution_id": execution_id, "created": created}
    execution_id, created, result = await call.runtime.start_and_wait(
        body.workflow, version=body.version, input=body.input, execution_id=body.execution_id,
        timeout=min(query.wait, MAX_WAIT_SECONDS),
    )  # fmt: skip
    started: dict[str, Any] = {"execution_id": execution_id, "created": created}
    if result is None:  # the wait passed first
        started.update(status="running", output=None, error=None)
    else:
        started.update(outcome_body(result))
    return (201 if created else 200), started


async def list_executions(call: Call) -> Answer:
    """Executions newest first."""
    query: m.ListQuery = call.query
    if query.status is not None and query.status not in EXECUTION_STATUSES:
        known = ", ".join(sorted(EXECUTION_STATUSES))
        raise InvalidRequestError(f"status: unknown status `{query.status}`; known: {known}")
    page = await call.runtime.list_executions(
        status=query.status,
        workflow=query.workflow,
        limit=query.limit,
        cursor=query.cursor,
        paused=query.paused,
    )
    executions = [body_of(row_summary(row)) for row in page.executions]
    answer: dict[str, Any] = {"executions": executions, "next_cursor": page.next_cursor}
    if query.counts:  # the console's status tabs (docs/decisions.md)
        answer["counts"] = await call.runtime.store.count_by_status()
    return 200, answer


async def describe_execution(call: Call) -> Answer:
    """One execution's detail."""
    return 200, body_of(await call.runtime.describe(call.params["execution_id"]))


async def execution_history(call: Call) -> Answer:
    """The events of the current run or of run ``run``."""
    query: m.HistoryQuery = call.query
    execution_id = call.params["execution_id"]
    run, events = await call.runtime.history_of(execution_id, query.run)
    return 200, {
        "execution_id": execution_id,
        "run": run,
        "events": [event_to_dict(event) for event in events],
    }


async def wait_execution(call: Call) -> Answer:
    """The summary with output and error once the execution has finished (408
    ``WAIT_TIMEOUT`` otherwise)."""
    query: m.WaitQuery = call.query
    timeout = min(query.timeout, MAX_WAIT_SECONDS)
    return 200, body_of(await call.runtime.wait(call.params["execution_id"], timeout))


async def cancel_execution(call: Call) -> Answer:
    """Cancel an execution."""
    body: m.CancelExecution = call.body or m.CancelExecution()
    reason = body.reason or "cancelled by request"
    return 202, body_of(await call.runtime.cancel(call.params["execution_id"], reason))


async def terminate_execution(call: Call) -> Answer:
    """Terminate an execution at once."""
    body: m.TerminateExecution = call.body or m.TerminateExecution()
    reason = body.reason or "terminated by request"
    return 202, body_of(await call.runtime.terminate(call.params["execution_id"], reason))


async def pause_execution(call: Call) -> Answer:
    """Pause an execution."""
    body: m.PauseExecution = call.body or m.PauseExecution()
    return 202, body_of(await call.runtime.pause(call.params["execution_id"], body.reason))


async def unpause_execution(call: Call) -> Answer:
    """Unpause an execution."""
    return 202, body_of(await call.runtime.unpause(call.params["execution_id"]))


async def rerun_execution(call: Call) -> Answer:
    """Rerun a finished execution from a step (``dry_run``: say what it would do)."""
    body: m.RerunExecution = call.body or m.RerunExecution()
    execution_id = call.params["execution_id"]
    answer = await call.runtime.rerun(
        execution_id, from_step=body.from_step, input=body.input, version=body.version,
        dry_run=body.dry_run,
    )  # fmt: skip
    if isinstance(answer, int):
        return 202, {"execution_id": execution_id, "run": answer}
    plan = m.RerunPlan(
        from_step=answer.from_step, reused=answer.reused, rerun=answer.rerun,
        children=answer.children,
    )  # fmt: skip
    return 200, body_of(plan)


async def delete_execution(call: Call) -> Answer:
    """Purge a finished execution now, with its finished children."""
    await call.runtime.delete(call.params["execution_id"])
    return 204, None


async def resume_execution(call: Call) -> Answer:
    """Respawn a quarantined execution."""
    return 202, body_of(await call.runtime.resume(call.params["execution_id"]))


async def send_signal(call: Call) -> Answer:
    """Deliver a signal."""
    body: m.SendSignal = call.body or m.SendSignal()
    seq = await call.runtime.signal(call.params["execution_id"], call.params["name"], body.payload)
    return 202, {"seq": seq}


async def run_query(call: Call) -> Answer:
    """Evaluate a query."""
    value = await call.runtime.query(call.params["execution_id"], call.params["name"])
    return 200, {"value": value}


# -- schedules -------------------------------------------------------------------------------
async def create_schedule(call: Call) -> Answer:
    """Create a schedule (the same id with the same fields answers 200)."""
    body: m.CreateSchedule = call.body
    spec = ScheduleSpec(
        schedule_id=body.schedule_id, cron=body.cron, workflow=body.workflow,
        timezone=body.timezone, version=body.version,
        input={} if body.input is None else body.input, overlap=body.overlap,
    )  # fmt: skip
    view, created = await call.runtime.create_schedule(spec, body.paused)
    return (201 if created else 200), {**body_of(view), "created": created}


async def list_schedules(call: Call) -> Answer:
    """Every schedule."""
    return 200, {"schedules": [body_of(view) for view in await call.runtime.schedules()]}


async def get_schedule(call: Call) -> Answer:
    """One schedule."""
    (view,) = await call.runtime.schedules(call.params["schedule_id"])
    return 200, body_of(view)


async def delete_schedule(call: Call) -> Answer:
    """Delete a schedule; the executions it started go on."""
    await call.runtime.delete_schedule(call.params["schedule_id"])
    return 204, None


async def pause_schedule(call: Call) -> Answer:
    """Pause a schedule."""
    return 200, body_of(await call.runtime.pause_schedule(call.params["schedule_id"], paused=True))


async def resume_schedule(call: Call) -> Answer:
    """Resume a schedule; what was missed while paused does not fire."""
    view = await call.runtime.pause_schedule(call.params["schedule_id"], paused=False)
    return 200, body_of(view)


async def trigger_schedule(call: Call) -> Answer:
    """Start an occurrence for the current second."""
    return 202, {"execution_id": await call.runtime.trigger_schedule(call.params["schedule_id"])}


# -- workers and tasks -----------------------------------------------------------------------
async def list_workers(call: Call) -> Answer:
    """Every worker ever registered."""
    return 200, {"workers": [body_of(worker) for worker in await call.runtime.workers()]}


async def list_tasks(call: Call) -> Answer:
    """Every task version, with its online workers and what waits for it."""
    return 200, {"tasks": [body_of(task) for task in await call.runtime.tasks()]}


async def list_servers(call: Call) -> Answer:
    """The servers sharing the store."""
    servers = await call.runtime.servers()
    return 200, {"servers": [dataclasses.asdict(server) for server in servers]}


def ack_body(ack: Verdict) -> dict[str, Any]:
    """The ``ack`` message's body."""
    body: dict[str, Any] = {"type": "ack", "token": ack.token, "accepted": ack.accepted}
    if ack.reason is not None:
        body["reason"] = ack.reason
    return body


async def complete_task(call: Call) -> Answer:
    """The HTTP fallback of ``complete``."""
    body: m.CompleteTask = call.body or m.CompleteTask()
    worker_id = call.worker_id or body.worker_id
    ack = await call.runtime.report_result(call.params["token"], worker_id, body.output, None)
    return 200, ack_body(ack)


async def fail_task(call: Call) -> Answer:
    """The HTTP fallback of ``fail``."""
    body: m.FailTask = call.body
    error = ErrorInfo(**body.error.model_dump())
    worker_id = call.worker_id or body.worker_id
    ack = await call.runtime.report_result(call.params["token"], worker_id, None, error)
    return 200, ack_body(ack)


_EXECUTION = "/v1/executions/{execution_id}"
_SCHEDULE = "/v1/schedules/{schedule_id}"
ENDPOINTS: tuple[Endpoint, ...] = (
    Endpoint("POST", "/v1/definitions", register_definition, "Register a definition (IR or YAML)",
             {201: m.DefinitionRegistered, 200: m.DefinitionRegistered}, errors=(400, 409, 413),
             raw_body=True, tags=("definitions",)),
    Endpoint("GET", "/v1/definitions", list_definitions, "Every registered definition",
             {200: m.DefinitionList}, tags=("definitions",)),
    Endpoint("GET", "/v1/definitions/{name}", get_definition, "The latest version, with its IR",
             {200: m.DefinitionWithIr}, errors=(404,), tags=("definitions",)),
    Endpoint("GET", "/v1/definitions/{name}/{version}", get_definition, "One version, with its IR",
             {200: m.DefinitionWithIr}, errors=(404,), tags=("definitions",)),
    Endpoint("POST", "/v1/definitions/{name}/{version}/check", upgrade.check_definition,
             "Check a candidate against the running executions of a version",
             {200: u.CheckResult}, query=u.CheckQuery, errors=(400, 404), raw_body=True,
             tags=("definitions",)),
    Endpoint("POST", "/v1/executions/migrate", upgrade.migrate_executions,
             "Move compatible running executions to another version",
             {200: u.MigrationAnswer}, body=u.MigrateExecutions, errors=(400, 404)),
    Endpoint("GET", f"{_EXECUTION}/replay", upgrade.replay_execution,
             "A run at one event: the state after it and what was decided",
             {200: u.ReplayAnswer}, query=u.ReplayQuery, errors=(400, 404)),
    Endpoint("POST", f"{_EXECUTION}/replay", upgrade.replay_candidate,
             "A run at one event replayed against a candidate definition",
             {200: u.ReplayAnswer}, body=u.ReplayCandidate, errors=(400, 404)),
    Endpoint("POST", "/v1/executions", start_execution, "Start an execution",
             {201: m.Started, 200: m.Started}, body=m.StartExecution, query=m.StartQuery,
             errors=(400, 404, 409, 413, 429)),
    Endpoint("GET", "/v1/executions", list_executions, "Executions, newest first",
             {200: m.ExecutionList}, query=m.ListQuery, errors=(400,)),
    Endpoint("GET", _EXECUTION, describe_execution, "One execution's detail",
             {200: m.ExecutionDetail}, errors=(404,)),
    Endpoint("DELETE", _EXECUTION, delete_execution, "Delete a finished execution now",
             {204: None}, errors=(404, 409)),
    Endpoint("GET", f"{_EXECUTION}/history", execution_history, "The events of a run",
             {200: m.History}, query=m.HistoryQuery, errors=(400, 404)),
    Endpoint("GET", f"{_EXECUTION}/wait", wait_execution, "Wait until the execution finishes",
             {200: m.ExecutionResult}, query=m.WaitQuery, errors=(404, 408)),
    Endpoint("POST", f"{_EXECUTION}/cancel", cancel_execution, "Cancel an execution",
             {202: m.ExecutionDetail}, body=m.CancelExecution, errors=(404, 409)),
    Endpoint("POST", f"{_EXECUTION}/terminate", terminate_execution,
             "Terminate an execution at once", {202: m.ExecutionDetail},
             body=m.TerminateExecution, errors=(404, 409)),
    Endpoint("POST", f"{_EXECUTION}/pause", pause_execution, "Pause an execution",
             {202: m.ExecutionDetail}, body=m.PauseExecution, errors=(404, 409)),
    Endpoint("POST", f"{_EXECUTION}/unpause", unpause_execution, "Unpause an execution",
             {202: m.ExecutionDetail}, errors=(404, 409)),
    Endpoint("POST", f"{_EXECUTION}/rerun", rerun_execution,
             "Rerun a finished execution from a step", {202: m.RerunStarted, 200: m.RerunPlan},
             body=m.RerunExecution, errors=(400, 404, 409, 413)),
    Endpoint("POST", f"{_EXECUTION}/resume", resume_execution, "Resume a quarantined execution",
             {202: m.ExecutionDetail}, errors=(404, 409)),
    Endpoint("POST", f"{_EXECUTION}/signals/{{name}}", send_signal, "Send a signal",
             {202: m.SignalAccepted}, body=m.SendSignal, errors=(404, 409, 413, 422)),
    Endpoint("GET", f"{_EXECUTION}/queries/{{name}}", run_query, "Evaluate a query",
             {200: m.QueryAnswer}, errors=(404, 422)),
    Endpoint("POST", "/v1/batches", batch.create_batch,
             "Act on every execution a filter matches (dry_run: count them)",
             {202: bm.BatchCreated, 200: bm.BatchPreview}, body=bm.CreateBatch, errors=(400, 413),
             tags=("batches",)),
    Endpoint("GET", "/v1/batches", batch.list_batches, "Batches, newest first",
             {200: bm.BatchList}, query=bm.BatchListQuery, errors=(400,), tags=("batches",)),
    Endpoint("GET", "/v1/batches/{batch_id}", batch.get_batch, "One batch and its progress",
             {200: bm.Batch}, errors=(404,), tags=("batches",)),
    Endpoint("POST", "/v1/batches/{batch_id}/cancel", batch.cancel_batch, "Cancel a batch",
             {200: bm.Batch}, errors=(404, 409), tags=("batches",)),
    Endpoint("POST", "/v1/schedules", create_schedule, "Create a schedule",
             {201: m.ScheduleCreated, 200: m.ScheduleCreated}, body=m.CreateSchedule,
             errors=(400, 404, 409, 413), tags=("schedules",)),
    Endpoint("GET", "/v1/schedules", list_schedules, "Every schedule",
             {200: m.ScheduleList}, tags=("schedules",)),
    Endpoint("GET", _SCHEDULE, get_schedule, "One schedule",
             {200: m.Schedule}, errors=(404,), tags=("schedules",)),
    Endpoint("DELETE", _SCHEDULE, delete_schedule, "Delete a schedule",
             {204: None}, errors=(404,), tags=("schedules",)),
    Endpoint("POST", f"{_SCHEDULE}/pause", pause_schedule, "Pause a schedule",
             {200: m.Schedule}, errors=(404,), tags=("schedules",)),
    Endpoint("POST", f"{_SCHEDULE}/resume", resume_schedule, "Resume a schedule",
             {200: m.Schedule}, errors=(404,), tags=("schedules",)),
    Endpoint("POST", f"{_SCHEDULE}/trigger", trigger_schedule, "Start an occurrence now",
             {202: m.Triggered}, errors=(404, 409, 429), tags=("schedules",)),
    Endpoint("GET", "/v1/workers", list_workers, "Every worker ever registered",
             {200: m.WorkerList}, tags=("workers",)),
    Endpoint("GET", "/v1/tasks", list_tasks, "Task versions, their workers and what waits",
             {200: m.TaskList}, tags=("workers",)),
    Endpoint("GET", "/v1/servers", list_servers, "The servers sharing the store",
             {200: m.ServerList}, tags=("servers",)),
    Endpoint("POST", "/v1/tasks/{token}/complete", complete_task, "Complete a task over HTTP",
             {200: m.TaskAck}, body=m.CompleteTask, errors=(400, 403, 413), tags=("workers",)),
    Endpoint("POST", "/v1/tasks/{token}/fail", fail_task, "Fail a task over HTTP",
             {200: m.TaskAck}, body=m.FailTask, errors=(400, 403, 413), tags=("workers",)),
)  # fmt: skip
