"""Each endpoint of http-api.md as the request a client sends: a function per endpoint builds the
:class:`Call` (method, path, body, query) together with how its answer reads, as the API's
pydantic model. Both clients send these calls, so the endpoints are defined once, here, with no
I/O; the synchronous and the asynchronous client differ only in how they send.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar
from urllib.parse import quote

from pydantic import BaseModel

from . import models as m

T = TypeVar("T")
M = TypeVar("M", bound=BaseModel)

MAX_WAIT = 60.0  # the server answers a wait within a minute at most
LONG_POLL_SLACK = 10.0  # seconds a long poll may take beyond what it waits (network, queueing)


@dataclass(frozen=True, slots=True)
class Call(Generic[T]):
    """One request and how its answer reads: ``read`` turns a successful answer's body into
    ``T``. ``timeout`` is set on long polls, which may take that long without being lost."""

    method: str
    path: str
    read: Callable[[bytes], T]
    json: Any = None
    content: str | None = None
    content_type: str | None = None
    params: Mapping[str, str | int | float] = field(default_factory=dict)
    timeout: float | None = None


def _model(model: type[M]) -> Callable[[bytes], M]:
    return model.model_validate_json


def _nothing(raw: bytes) -> None:
    return None


def _segment(value: str) -> str:
    return quote(value, safe="@:")


def _execution(execution_id: str, tail: str = "") -> str:
    return f"/v1/executions/{_segment(execution_id)}{tail}"


def _schedule(schedule_id: str, tail: str = "") -> str:
    return f"/v1/schedules/{_segment(schedule_id)}{tail}"


def _present(**params: str | int | float | None) -> dict[str, str | int | float]:
    return {name: value for name, value in params.items() if value is not None}


# -- definitions -----------------------------------------------------------------------------
def deploy(source: str | dict[str, Any]) -> Call[m.DefinitionRegistered]:
    """Register a definition (YAML text, or the IR as a dict); the answer has ``created``."""
    read = _model(m.DefinitionRegistered)
    if isinstance(source, dict):
        return Call("POST", "/v1/definitions", read, json=source)
    return Call("POST", "/v1/definitions", read, content=source, content_type="application/yaml")


def definitions() -> Call[list[m.Definition]]:
    """Every registered definition."""
    return Call(
        "GET", "/v1/definitions", lambda raw: m.DefinitionList.model_validate_json(raw).definitions
    )


def definition(name: str, version: str | None = None) -> Call[m.DefinitionWithIr]:
    """One definition with its IR (the latest version when none is given)."""
    path = f"/v1/definitions/{_segment(name)}"
    if version is not None:
        path += f"/{_segment(version)}"
    return Call("GET", path, _model(m.DefinitionWithIr))


# -- executions ------------------------------------------------------------------------------
def start(
    workflow: str,
    *,
    input: Any = None,
    version: str | None = None,
    execution_id: str | None = None,
    wait: float | None = None,
) -> Call[m.Started]:
    """Start an execution: ``execution_id`` and ``created``; with ``wait`` (seconds, at most 60)
    the answer comes once it has finished (or ``wait`` has passed) with ``status``, ``output``
    and ``error`` too — the result in one request."""
    body: dict[str, Any] = {"workflow": workflow}
    if input is not None:
        body["input"] = input
    if version is not None:
        body["version"] = version
    if execution_id is not None:
        body["execution_id"] = execution_id
    if wait is None:
        return Call("POST", "/v1/executions", _model(m.Started), json=body)
    return Call(
        "POST", "/v1/executions", _model(m.Started), json=body, params={"wait": wait},
        timeout=min(wait, MAX_WAIT) + LONG_POLL_SLACK,
    )  # fmt: skip


def executions(
    *,
    status: str | None = None,
    workflow: str | None = None,
    limit: int | None = None,
    cursor: str | None = None,
    paused: bool | None = None,
) -> Call[m.ExecutionList]:
    """One page of executions, newest first, and the cursor of the next (``paused``: only
    the paused ones, or only those not paused)."""
    params = _present(status=status, workflow=workflow, limit=limit, cursor=cursor)
    if paused is not None:
        params["paused"] = "true" if paused else "false"
    return Call("GET", "/v1/executions", _model(m.ExecutionList), params=params)


def describe(execution_id: str) -> Call[m.ExecutionDetail]:
    """An execution's detail: its units, pending signals, children, input and output."""
    return Call("GET", _execution(execution_id), _model(m.ExecutionDetail))


def history(execution_id: str, run: int | None = None) -> Call[m.History]:
    """The events of one run (the latest when none is given)."""
    path = _execution(execution_id, "/history")
    return Call("GET", path, _model(m.History), params=_present(run=run))


def wait(execution_id: str, timeout: float = 30.0) -> Call[m.ExecutionResult]:
    """The summary with ``output`` and ``error`` once finished; refused with ``WAIT_TIMEOUT``
    after ``timeout`` s (at most 60 in one request)."""
    path = _execution(execution_id, "/wait")
    return Call(
        "GET", path, _model(m.ExecutionResult), params={"timeout": timeout},
        timeout=min(timeout, MAX_WAIT) + LONG_POLL_SLACK,
    )  # fmt: skip


def cancel(execution_id: str, reason: str | None = None) -> Call[m.ExecutionDetail]:
    """Cancel an execution; answers its detail."""
    body = {"reason": reason} if reason is not None else {}
    return Call("POST", _execution(execution_id, "/cancel"), _model(m.ExecutionDetail), json=body)


def terminate(execution_id: str, reason: str | None = None) -> Call[m.ExecutionDetail]:
    """Terminate an execution at once (no compensation, no handlers); answers its detail."""
    body = {"reason": reason} if reason is not None else {}
    path = _execution(execution_id, "/terminate")
    return Call("POST", path, _model(m.ExecutionDetail), json=body)


def pause(execution_id: str, reason: str | None = None) -> Call[m.ExecutionDetail]:
    """Pause an execution: nothing new is dispatched until it is unpaused; answers its detail."""
    body = {"reason": reason} if reason is not None else {}
    return Call("POST", _execution(execution_id, "/pause"), _model(m.ExecutionDetail), json=body)


def unpause(execution_id: str) -> Call[m.ExecutionDetail]:
    """Unpause an execution: what waited is dispatched; answers its detail."""
    return Call("POST", _execution(execution_id, "/unpause"), _model(m.ExecutionDetail), json={})


def _rerun_body(
    from_step: str | None, input: Any, version: str | None, reason: str | None, dry_run: bool
) -> dict[str, Any]:
    body: dict[str, Any] = {"dry_run": dry_run}
    for name, value in (("from_step", from_step), ("input", input), ("version", version),
                        ("reason", reason)):  # fmt: skip
        if value is not None:
            body[name] = value
    return body


def rerun(
    execution_id: str, *, from_step: str | None = None, input: Any = None,
    version: str | None = None, reason: str | None = None,
) -> Call[m.RerunStarted]:  # fmt: skip
    """Rerun a finished execution from a step (the first that failed, by default) under the
    same id; answers the run that started."""
    body = _rerun_body(from_step, input, version, reason, False)
    return Call("POST", _execution(execution_id, "/rerun"), _model(m.RerunStarted), json=body)


def rerun_plan(
    execution_id: str, *, from_step: str | None = None, input: Any = None,
    version: str | None = None,
) -> Call[m.RerunPlan]:  # fmt: skip
    """What a rerun would do (its dry run: nothing is written): the steps it would reuse and
    run again, and the children it would start."""
    body = _rerun_body(from_step, input, version, None, True)
    return Call("POST", _execution(execution_id, "/rerun"), _model(m.RerunPlan), json=body)


def resume(execution_id: str) -> Call[m.ExecutionDetail]:
    """Resume a quarantined execution; answers its detail."""
    return Call("POST", _execution(execution_id, "/resume"), _model(m.ExecutionDetail))


def signal(execution_id: str, name: str, payload: Any = None) -> Call[int]:
    """Send a signal; answers the seq of its ``signal_received`` event."""
    path = _execution(execution_id, f"/signals/{_segment(name)}")
    return Call(
        "POST", path, lambda raw: m.SignalAccepted.model_validate_json(raw).seq,
        json={"payload": payload},
    )  # fmt: skip


def query(execution_id: str, name: str) -> Call[Any]:
    """A declared query's value, evaluated on the execution's current state."""
    path = _execution(execution_id, f"/queries/{_segment(name)}")
    return Call("GET", path, lambda raw: m.QueryAnswer.model_validate_json(raw).value)


# -- schedules -------------------------------------------------------------------------------
def create_schedule(
    schedule_id: str,
    cron: str,
    workflow: str,
    *,
    timezone: str = "UTC",
    version: str | None = None,
    input: Any = None,
    overlap: str = "skip",
    paused: bool = False,
) -> Call[m.ScheduleCreated]:
    """Create a schedule; answers it with ``created`` (False: it existed with the same fields)."""
    body = {
        "schedule_id": schedule_id, "cron": cron, "workflow": workflow, "timezone": timezone,
        "version": version, "input": input, "overlap": overlap, "paused": paused,
    }  # fmt: skip
    return Call("POST", "/v1/schedules", _model(m.ScheduleCreated), json=body)


def schedules() -> Call[list[m.Schedule]]:
    """Every schedule."""
    return Call(
        "GET", "/v1/schedules", lambda raw: m.ScheduleList.model_validate_json(raw).schedules
    )


def schedule(schedule_id: str) -> Call[m.Schedule]:
    """One schedule, with its next occurrences and last executions."""
    return Call("GET", _schedule(schedule_id), _model(m.Schedule))


def delete_schedule(schedule_id: str) -> Call[None]:
    """Delete a schedule (executions it started go on)."""
    return Call("DELETE", _schedule(schedule_id), _nothing)


def pause_schedule(schedule_id: str) -> Call[m.Schedule]:
    """Pause a schedule; answers it."""
    return Call("POST", _schedule(schedule_id, "/pause"), _model(m.Schedule))


def resume_schedule(schedule_id: str) -> Call[m.Schedule]:
    """Resume a schedule (what was missed while paused does not fire); answers it."""
    return Call("POST", _schedule(schedule_id, "/resume"), _model(m.Schedule))


def trigger_schedule(schedule_id: str) -> Call[str]:
    """Start an occurrence now; answers its execution id."""
    path = _schedule(schedule_id, "/trigger")
    return Call("POST", path, lambda raw: m.Triggered.model_validate_json(raw).execution_id)


# -- workers and tasks -----------------------------------------------------------------------
def workers() -> Call[list[m.Worker]]:
    """Every worker ever registered, online or not."""
    return Call("GET", "/v1/workers", lambda raw: m.WorkerList.model_validate_json(raw).workers)


def servers() -> Call[list[m.Server]]:
    """The servers sharing the store (one on SQLite), each with the executions it owns."""
    return Call("GET", "/v1/servers", lambda raw: m.ServerList.model_validate_json(raw).servers)


def complete_task(token: str, output: Any = None) -> Call[m.TaskAck]:
    """Complete a task over HTTP (the fallback for workers without a WebSocket): the ack."""
    path = f"/v1/tasks/{_segment(token)}/complete"
    return Call("POST", path, _model(m.TaskAck), json={"output": output})


def fail_task(
    token: str, code: str, message: str = "", *, retryable: bool = True
) -> Call[m.TaskAck]:
    """Fail a task over HTTP: the ack."""
    error = {"code": code, "message": message, "retryable": retryable}
    path = f"/v1/tasks/{_segment(token)}/fail"
    return Call("POST", path, _model(m.TaskAck), json={"error": error})
