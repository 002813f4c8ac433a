"""The compiled form of a definition that the decider reads: every expression and template
compiled, dependencies resolved both ways, retry policies merged. Built by :mod:`.compile`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from .expressions import Expression, Template
from .flow import NO_FLOW, FlowPlan
from .models import ChildContract, Definition, RetryPolicy, Step, TaskContract
from .schema import Schema

Role = Literal["main", "handler"]


@dataclass(frozen=True, eq=False)
class CompensationPlan:
    """What undoes one step: a task or http call with its template and merged retry policy."""

    kind: Literal["task", "http"]
    task: str | None
    input: Template | None
    http: Template | None
    retry: RetryPolicy
    timeout_ms: int | None
    language: str | None


@dataclass(eq=False)
class StepPlan:
    """One step (main or handler) ready for the decider."""

    step: Step
    role: Role
    handler_list: str | None
    after: tuple[str, ...]
    path: str = ""
    dependents: list[str] = field(default_factory=list)
    when: Expression | None = None
    for_each: Expression | None = None
    until: Expression | None = None
    input: Template | None = None
    value: Template | None = None
    http: Template | None = None
    compensate: CompensationPlan | None = None
    retry: RetryPolicy | None = None

    id: str = field(init=False)
    """The step id."""
    kind: str = field(init=False)
    """The step's kind (``until`` reads as ``sleep``)."""
    key: str = field(init=False)
    """The unit key of this step (of its elements, without the index)."""
    timeout_ms: int | None = field(init=False)
    """The per-attempt deadline of this step's units, if any."""

    def __post_init__(self) -> None:
        # the decider reads these on every step it starts: fields, not properties (a property
        # is a call each time; a cached one adds an attribute to the instance after its
        # __init__, which slows every attribute read of it). Compiling replaces ``step`` with
        # its normal form later, which changes none of them.
        step = self.step
        self.id, self.kind = step.id, step.kind
        self.key = self.unit_prefix + step.id
        if step.http is not None:
            self.timeout_ms = step.http.timeout
        else:
            self.timeout_ms = step.timeout if self.kind == "task" else None

    @property
    def unit_prefix(self) -> str:
        """The prefix of this step's unit keys: ``handler:`` for handler steps."""
        return "handler:" if self.role == "handler" else ""


@dataclass(eq=False)
class CompiledDefinition:
    """A validated, normalised definition with its hash and compiled expressions."""

    ir: Definition
    definition_hash: str
    plans: dict[str, StepPlan]
    main: list[str]
    handlers: dict[str, list[str]]
    queries: dict[str, Expression]
    output: Template
    awaits: dict[str, list[str]] = field(default_factory=dict)
    default_schedule_to_start_ms: int | None = None
    """The server's ``--schedule-to-start``, for tasks that declare none (not part of the IR:
    each unit's deadline is recorded on its ``StepScheduled``, so replay never reads this)."""
    flow: FlowPlan = NO_FLOW
    main_position: dict[str, int] = field(init=False)
    """Each main step's position in :attr:`main`."""
    output_schemas: dict[str, Schema] = field(init=False)
    """The output contract of each task that declares one (read on every result)."""
    timeout_ms: int | None = field(init=False)
    """The run timeout (read on every decision)."""
    name: str = field(init=False)
    """The workflow name."""
    version: str = field(init=False)
    """The workflow version."""
    input_schema: Schema | None = field(init=False)
    """The schema of the execution input (None: any object)."""

    def __post_init__(self) -> None:
        # worked out here, not as properties: a property is a call on every read (~700
        # instructions), and a cached one adds an attribute to the instance after its
        # __init__, which slows every attribute read of it
        self.main_position = {step_id: index for index, step_id in enumerate(self.main)}
        tasks = self.ir.tasks.items()
        self.output_schemas = {n: task.output for n, task in tasks if task.output is not None}
        self.timeout_ms = self.ir.timeout
        self.name, self.version, self.input_schema = (
            self.ir.workflow,
            self.ir.version,
            self.ir.input,
        )

    def task(self, name: str) -> TaskContract:
        """The declared contract of task ``name``."""
        return self.ir.tasks[name]

    def child(self, name: str) -> ChildContract:
        """The declared (pinned) child workflow ``name``."""
        return self.ir.workflows[name]

    def signal_schema(self, name: str) -> Schema | None:
        """The payload schema of signal ``name`` (which must be declared)."""
        return self.ir.signals[name]

    def schedule_to_start_ms(self, task: str) -> int | None:
        """How long a unit of ``task`` may wait for a worker (the task's own, else the
        server's default; None: forever)."""
        declared = self.ir.tasks[task].schedule_to_start
        return declared if declared is not None else self.default_schedule_to_start_ms
