"""What a scheduled unit invokes: a worker task, the built-in http request, or a child workflow
— everything an actor needs to carry it out, derived from the state and the definition."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..history.events import StartFlow
from ..history.state import ExecutionState, Unit, UnitKey
from ..ir.plan import CompiledDefinition, StepPlan
from ..ir.schema import Schema

HTTP_TASK = "orbit.http.request"
CHILD_PREFIX = "workflow:"


@dataclass(slots=True)
class TaskInvocation:
    """A task for a worker that announced ``task_name@contract_version``."""

    key: str
    task_name: str
    contract_version: str
    language: str | None
    input: Any
    idempotency_key: str
    attempt: int
    redelivery: bool
    timeout_ms: int | None
    flow: StartFlow | None = None  # its execution's priority and concurrency key
    rate: RateTake | None = None  # the rate limit its dispatch counts against


@dataclass(frozen=True)
class RateTake:
    """A dispatch of ``task`` counts against at most ``limit`` per ``per_ms`` window of
    ``key``."""

    task: str
    key: str
    limit: int
    per_ms: int


@dataclass(slots=True)
class HttpInvocation:
    """A request for the server's built-in http runner."""

    key: str
    request: dict[str, Any]
    idempotency_key: str
    attempt: int
    timeout_ms: int | None


@dataclass(slots=True)
class ChildInvocation:
    """A child execution to start (idempotently) and wait for."""

    key: str
    workflow: str
    version: str
    definition_hash: str | None
    execution_id: str
    input: Any


Invocation = TaskInvocation | HttpInvocation | ChildInvocation


def invocation(
    state: ExecutionState, definition: CompiledDefinition, key: str
) -> Invocation | None:
    """What unit ``key`` invokes, or None for units no one runs (await, sleep, value)."""
    unit = state.units.get(key)
    if unit is None:
        return None
    plan = definition.plans[unit.step_id]
    if unit.role == "compensate":
        kind, task = _kind_and_task(plan, unit)
        language, timeout = _language(plan, unit), unit_timeout_ms(definition, unit)
    else:  # what those three calls find for a step's own unit (a task's: once per attempt)
        step = plan.step
        kind, task, language, timeout = plan.kind, step.task, step.language, plan.timeout_ms
    if kind == "task":
        assert task is not None
        contract = definition.ir.tasks[task]  # definition.task(task), without the call
        rate = _rate(definition, state, task) if definition.flow.rate_limits else None
        return TaskInvocation(
            key, task, contract.version, language or contract.language, unit.input,
            unit.idempotency_key, unit.attempt, unit.redelivery, timeout, state.flow, rate,
        )  # fmt: skip
    if kind == "http":
        request = unit.input if isinstance(unit.input, dict) else {}
        return HttpInvocation(key, request, unit.idempotency_key, unit.attempt, timeout)
    if kind == "workflow":
        name = plan.step.workflow or ""
        child = definition.child(name)
        child_id = child_execution_id(state.execution_id, state.run, key)
        return ChildInvocation(
            key, name, child.version, child.definition_hash, child_id, unit.input
        )
    return None


RUN_KINDS = frozenset({"task", "http", "workflow"})
"""Kinds of unit that something runs (a worker, the runtime, a child execution)."""


def unit_kind(definition: CompiledDefinition, unit: Unit) -> str:
    """What kind of step (or compensation) ``unit`` is: task, http, workflow, await, sleep …"""
    plan = definition.plans[unit.step_id]
    return plan.kind if unit.role != "compensate" else _kind_and_task(plan, unit)[0]


def _kind_and_task(plan: StepPlan, unit: Unit) -> tuple[str, str | None]:
    if unit.role == "compensate":
        assert plan.compensate is not None
        return plan.compensate.kind, plan.compensate.task
    return plan.kind, plan.step.task


def _language(plan: StepPlan, unit: Unit) -> str | None:
    if unit.role == "compensate":
        return plan.compensate.language if plan.compensate else None
    return plan.step.language


def unit_task(definition: CompiledDefinition, key: str) -> str | None:
    """The worker task the unit ``key`` runs (None for units no worker runs): its step's task,
    or its compensation's for a ``compensate:`` unit."""
    parsed = UnitKey.parse(key)
    plan = definition.plans[parsed.step_id]
    if parsed.role == "compensate":
        found = plan.compensate
        return found.task if found is not None and found.kind == "task" else None
    return plan.step.task if plan.kind == "task" else None


def unit_timeout_ms(definition: CompiledDefinition, unit: Unit) -> int | None:
    """The per-attempt deadline of a unit's attempts, if its step (or compensation) sets one."""
    plan = definition.plans[unit.step_id]
    if unit.role == "compensate":
        return plan.compensate.timeout_ms if plan.compensate else None
    return plan.timeout_ms


def output_schema(definition: CompiledDefinition, unit: Unit) -> tuple[str, Schema] | None:
    """The task name and output contract a unit's results must meet, if any."""
    plan = definition.plans[unit.step_id]
    if unit.role == "compensate":
        kind, task = _kind_and_task(plan, unit)
    else:
        kind, task = plan.kind, plan.step.task
    if kind != "task" or task is None:
        return None
    schema = definition.output_schemas.get(task)
    return None if schema is None else (task, schema)


CHILD_SESSION = "child:"
"""A workflow unit is dispatched to the pseudo session ``child:<child execution id>``."""


def child_session(child_id: str) -> str:
    """The pseudo session a unit waiting for child ``child_id`` is dispatched to."""
    return CHILD_SESSION + child_id


def child_execution_id(parent_id: str, run: int, unit_key: str) -> str:
    """``<parent_id>.<unit key>`` with ``[i]`` as ``.i`` and ``handler:`` as ``handler.``; from
    run 2 on, the parent part is ``<parent_id>.run<N>``."""
    base = parent_id if run == 1 else f"{parent_id}.run{run}"
    parsed = UnitKey.parse(unit_key)
    part = f"handler.{parsed.step_id}" if parsed.role == "handler" else parsed.step_id
    if parsed.index is not None:
        part += f".{parsed.index}"
    return f"{base}.{part}"


def _rate(definition: CompiledDefinition, state: ExecutionState, task: str) -> RateTake | None:
    """The rate limit a dispatch of ``task`` counts against (its key fixed at start)."""
    plans = definition.flow.rate_limits
    if not plans or state.flow is None or not state.flow.rate_keys:
        return None
    plan, key = plans.get(task), state.flow.rate_keys.get(task)
    if plan is None or key is None:
        return None
    return RateTake(task, key, plan.limit, plan.per_ms)
