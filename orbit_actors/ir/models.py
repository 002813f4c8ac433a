"""The workflow language as pydantic models.

One set of models reads both what a person writes and the normalised IR: the IR is a valid source
whose durations are milliseconds, whose defaults are written out, whose ``after`` lists are
complete and whose child workflows carry their ``definition_hash``. Loading the IR again yields the
same IR, which is what lets the server recompute the hash and never trust the client's.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    WithJsonSchema,
    field_validator,
    model_serializer,
    model_validator,
)

from .durations import parse_duration
from .schema import Schema
from .semver import parse_semver

Duration = Annotated[
    int,
    BeforeValidator(parse_duration),
    WithJsonSchema(
        {
            "anyOf": [
                {"type": "integer", "minimum": 0},
                {"type": "string", "pattern": r"^(\d+|(\d+(ms|s|m|h|d))+)$"},
            ],
            "description": "a duration: 250ms, 30s, 5m, 2h, 7d, 1h30m, or milliseconds",
        }
    ),
]
"""Milliseconds; written as ``30s``, ``1h30m`` or an integer number of milliseconds."""

NAME = re.compile(r"[a-z0-9][a-z0-9._-]*")
STEP_ID = re.compile(r"[a-z_][a-z0-9_]*")
RESERVED_PREFIXES = ("orbit.", "workflow:")
STEP_KINDS = ("task", "workflow", "await", "sleep", "until", "http", "value", "continue_as_new")
FAN_OUT_KINDS = frozenset({"task", "workflow", "http"})


def _version_text(value: object) -> object:
    """A YAML number given as a contract version is read as its string."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)
    return value


ContractVersion = Annotated[
    str,
    BeforeValidator(_version_text),
    Field(min_length=1),
    WithJsonSchema({"type": ["string", "number"], "description": "the contract version"}),
]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True, frozen=True)


class RetryPolicy(_Model):
    """When a failed attempt is tried again; unset fields inherit (step ← workflow ← defaults)."""

    max_attempts: int | None = Field(default=None, ge=1)
    initial_interval: Duration | None = None
    backoff: float | None = Field(default=None, ge=1.0)
    max_interval: Duration | None = None
    non_retryable: list[str] | None = None

    def over(self, base: RetryPolicy) -> RetryPolicy:
        """This policy with every unset field taken from ``base``."""
        mine = self.model_dump(exclude_none=True)
        return base.model_copy(update=mine)

    def delay_ms(self, attempt: int) -> int:
        """The delay before attempt ``attempt + 1``: min(initial * backoff^(attempt-1), max)."""
        assert self.initial_interval is not None and self.max_interval is not None
        backoff = self.backoff if self.backoff is not None else 2.0
        raw = self.initial_interval * backoff ** (attempt - 1)
        return int(min(raw, self.max_interval))


DEFAULT_RETRY = RetryPolicy(
    max_attempts=3, initial_interval=1000, backoff=2.0, max_interval=60_000, non_retryable=[]
)


class Limits(_Model):
    """A workflow's own limits; the stricter of these and the server's applies."""

    max_fan_out: int | None = Field(default=None, ge=0)
    max_history_events: int | None = Field(default=None, ge=1)
    max_payload_bytes: int | None = Field(default=None, ge=1)


PRIORITY_RANGE = range(1, 10)
"""Priorities run from 1 (dispatched first) to 9; 5 when a definition says none."""
DEFAULT_PRIORITY = 5
MIN_RATE_WINDOW_MS = 10


def _at_least_one(value: int, name: str) -> int:
    if value < 1:
        raise ValueError(f"{name} must be at least 1 (got {value})")
    return value


class FlowConcurrency(_Model):
    """At most ``limit`` running executions per value of ``key``; ``on_full`` says what a start
    beyond it does: ``queue`` it, ``skip`` it (409) or ``replace`` the oldest running one."""

    key: str
    limit: int
    on_full: Literal["queue", "skip", "replace"] = "queue"

    @field_validator("limit")
    @classmethod
    def _limit(cls, value: int) -> int:
        return _at_least_one(value, "limit")


class Flow(_Model):
    """A workflow's flow control: its executions' priority and concurrency key."""

    priority: int | str | None = None
    concurrency: FlowConcurrency | None = None

    @field_validator("priority")
    @classmethod
    def _priority(cls, value: int | str | None) -> int | str | None:
        if isinstance(value, int) and value not in PRIORITY_RANGE:
            raise ValueError(f"priority must be from 1 (first) to 9 (got {value})")
        return value


class RateLimit(_Model):
    """At most ``limit`` dispatches of a task per ``per`` window per value of ``key``."""

    key: str
    limit: int
    per: Duration

    @field_validator("limit")
    @classmethod
    def _limit(cls, value: int) -> int:
        return _at_least_one(value, "limit")

    @field_validator("per")
    @classmethod
    def _per(cls, value: int) -> int:
        if value < MIN_RATE_WINDOW_MS:
            raise ValueError(f"per must be at least 10ms (got {value}ms)")
        return value


class TaskContract(_Model):
    """A task the workflow calls: ``name@version``, an optional output schema and language,
    and an optional rate limit."""

    version: ContractVersion
    output: Schema | None = None
    language: str | None = None
    schedule_to_start: Duration | None = None
    """How long a unit of this task may wait for a worker to take it before its attempt fails
    with the retryable ``SCHEDULE_TIMEOUT``."""
    rate_limit: RateLimit | None = None


class ChildContract(_Model):
    """A child workflow the workflow starts, pinned by hash in the IR."""

    version: str
    definition_hash: str | None = None

    @field_validator("version")
    @classmethod
    def _semver(cls, value: str) -> str:
        parse_semver(value)
        return value


class HttpSpec(_Model):
    """The request of an ``http`` step; every string may be a ``${…}`` template."""

    method: str = "GET"
    url: Any
    headers: Any = None
    body: Any = None
    timeout: Duration | None = None


class Compensation(_Model):
    """What undoes a task or http step when the workflow later aborts."""

    task: str | None = None
    http: HttpSpec | None = None
    input: Any = None
    retry: RetryPolicy | None = None
    timeout: Duration | None = None
    language: str | None = None

    @model_validator(mode="after")
    def _one_kind(self) -> Compensation:
        if (self.task is None) == (self.http is None):
            raise ValueError("a compensation names exactly one of `task` or `http`")
        return self

    @property
    def kind(self) -> str:
        """``task`` or ``http``."""
        return "task" if self.task is not None else "http"


class Step(_Model):
    """One step: an id, exactly one kind field, and the fields that kind allows."""

    id: str
    after: list[str] | None = None
    when: str | None = None
    on_error: Literal["fail", "continue"] = "fail"
    task: str | None = None
    workflow: str | None = None
    await_: str | None = Field(default=None, alias="await")
    sleep: Duration | None = None
    until: str | None = None
    http: HttpSpec | None = None
    value: Any = None
    continue_as_new: Any = None
    input: Any = None
    retry: RetryPolicy | None = None
    timeout: Duration | None = None
    language: str | None = None
    compensate: Compensation | None = None
    for_: str | None = Field(default=None, alias="for")
    as_: str | None = Field(default=None, alias="as")
    concurrency: int | None = Field(default=None, ge=1)

    @field_validator("id")
    @classmethod
    def _id_form(cls, value: str) -> str:
        if not STEP_ID.fullmatch(value):
            raise ValueError(f"step id {value!r} must match [a-z_][a-z0-9_]*")
        return value

    @model_validator(mode="after")
    def _kind_and_fields(self) -> Step:
        kinds = self.kinds_written()
        if len(kinds) != 1:
            named = ", ".join(kinds) if kinds else "none"
            raise ValueError(
                f"a step has exactly one kind field ({', '.join(STEP_KINDS)}); found {named}"
            )
        _check_fields_fit(self, self.kind)
        return self

    def kinds_written(self) -> list[str]:
        """The kind fields present in this step (exactly one when valid)."""
        written = self.model_fields_set
        names = {"await_": "await"}
        return [names.get(f, f) for f in _KIND_FIELDS if f in written]

    @property
    def kind(self) -> str:
        """``task``, ``workflow``, ``await``, ``sleep`` (also for ``until``), ``http``,
        ``value`` or ``continue_as_new``."""
        kind = self.kinds_written()[0]
        return "sleep" if kind == "until" else kind

    @property
    def fans_out(self) -> bool:
        """True when the step has a ``for``."""
        return self.for_ is not None

    @property
    def item_name(self) -> str:
        """The name of the element variable inside a fan-out (``item`` unless ``as`` says)."""
        return self.as_ or "item"

    @model_serializer(mode="wrap")
    def _keep_null_templates(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        for name in ("value", "continue_as_new"):
            if name in self.model_fields_set and name not in data:
                data[name] = None
        return data


_KIND_FIELDS = ("task", "workflow", "await_", "sleep", "until", "http", "value", "continue_as_new")
_KIND_ALLOWS: dict[str, frozenset[str]] = {
    "task": frozenset(
        {"input", "retry", "timeout", "language", "compensate", "for", "as", "concurrency"}
    ),
    "http": frozenset({"retry", "compensate", "for", "as", "concurrency"}),
    "workflow": frozenset({"input", "for", "as", "concurrency"}),
    "await": frozenset({"timeout"}),
    "sleep": frozenset(),
    "value": frozenset(),
    "continue_as_new": frozenset(),
}
_OPTIONAL_FIELDS = {
    "input": "input", "retry": "retry", "timeout": "timeout", "language": "language",
    "compensate": "compensate", "for_": "for", "as_": "as", "concurrency": "concurrency",
}  # fmt: skip


def _check_fields_fit(step: Step, kind: str) -> None:
    allowed = _KIND_ALLOWS[kind]
    for field, name in _OPTIONAL_FIELDS.items():
        if (
            field in step.model_fields_set
            and getattr(step, field) is not None
            and name not in allowed
        ):
            raise ValueError(f"`{name}` does not apply to a {kind} step")
    if (step.as_ is not None or step.concurrency is not None) and step.for_ is None:
        raise ValueError("`as` and `concurrency` need `for`")


class Definition(_Model):
    """A whole workflow definition (source or IR)."""

    workflow: str
    version: str
    description: str | None = None
    input: Schema | None = None
    tasks: dict[str, TaskContract] = Field(default_factory=dict)
    workflows: dict[str, ChildContract] = Field(default_factory=dict)
    signals: dict[str, Schema | None] = Field(default_factory=dict)
    queries: dict[str, str] = Field(default_factory=dict)
    limits: Limits | None = None
    flow: Flow | None = None
    timeout: Duration | None = None
    retention: Duration | None = None
    retry: RetryPolicy | None = None
    steps: list[Step] = Field(min_length=1)
    output: Any = Field(default_factory=dict)
    on_failure: list[Step] = Field(default_factory=list)
    on_cancel: list[Step] = Field(default_factory=list)
    on_timeout: list[Step] = Field(default_factory=list)
    definition_hash: str | None = None

    @field_validator("workflow")
    @classmethod
    def _name_form(cls, value: str) -> str:
        if not NAME.fullmatch(value) or len(value) > 128:
            raise ValueError(
                f"workflow name {value!r} must match [a-z0-9][a-z0-9._-]* (at most 128 characters)"
            )
        return value

    @field_validator("version", mode="before")
    @classmethod
    def _semver(cls, value: object) -> object:
        if isinstance(value, str):
            parse_semver(value)
        elif isinstance(value, int | float) and not isinstance(value, bool):
            raise ValueError(
                f"version must be a semantic version string such as 1.0.0 (YAML read {value} as "
                "a number; write MAJOR.MINOR.PATCH, or quote it)"
            )
        return value

    def handler_lists(self) -> dict[str, list[Step]]:
        """The handler step lists by field name."""
        return {
            "on_failure": self.on_failure,
            "on_cancel": self.on_cancel,
            "on_timeout": self.on_timeout,
        }

    def to_ir_dict(self) -> dict[str, Any]:
        """The JSON form of this definition (aliases, nulls dropped)."""
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)
