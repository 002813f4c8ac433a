"""The bodies and answers of the upgrade check, migration and step-by-step replay
(operations.md, "Upgrade check and migration" and "Replay, step by step")."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field


class CheckQuery(BaseModel):
    """``POST /v1/definitions/{name}/{version}/check`` query parameters."""

    model_config = ConfigDict(extra="ignore")
    limit: int = 100
    cursor: str | None = None


class CandidateRef(BaseModel):
    """The checked candidate: ``{name, version, definition_hash}``."""

    name: str
    version: str
    definition_hash: str


class IncompatibleExecution(BaseModel):
    """A running execution the candidate would not have written: where it first diverges, and
    one sentence each for what was recorded and what the candidate would do."""

    execution_id: str
    run: int
    first_divergent_seq: int
    recorded: str
    candidate: str


class CheckResult(BaseModel):
    """One page of the upgrade check."""

    candidate: CandidateRef
    checked: int
    compatible: int
    incompatible: list[IncompatibleExecution]
    next_cursor: str | None


class MigrateExecutions(BaseModel):
    """``POST /v1/executions/migrate``: ``ids`` (default: every running execution of
    ``workflow@from_version``); ``dry_run`` writes nothing."""

    model_config = ConfigDict(extra="forbid")
    workflow: str = Field(min_length=1)
    from_version: str = Field(min_length=1)
    to_version: str = Field(min_length=1)
    ids: list[str] | None = None
    dry_run: bool = False


class SkippedExecution(BaseModel):
    """An execution a migration left on its version: where the check found it diverging (null
    when it was not checked) and why."""

    execution_id: str
    first_divergent_seq: int | None
    reason: str


class MigrationAnswer(BaseModel):
    """``{migrated: [ids], skipped: […], dry_run}``."""

    migrated: list[str]
    skipped: list[SkippedExecution]
    dry_run: bool


class ReplayQuery(BaseModel):
    """``GET /v1/executions/{id}/replay`` query parameters (``at`` defaults to the last)."""

    model_config = ConfigDict(extra="ignore")
    run: int | None = Field(default=None, ge=1)
    at: int | None = None


def _whole(value: Any) -> Any:
    """A whole number written as ``3.0`` is an integer in JSON Schema: taken as one here too."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


class ReplayCandidate(BaseModel):
    """``POST /v1/executions/{id}/replay``: a candidate (YAML text or the IR) and a point."""

    model_config = ConfigDict(extra="forbid")
    definition: str | dict[str, Any]
    at: Annotated[int | None, BeforeValidator(_whole)] = None
    run: Annotated[Annotated[int, Field(ge=1)] | None, BeforeValidator(_whole)] = None


class Divergence(BaseModel):
    """Where a candidate first diverges from the run."""

    seq: int
    recorded: str
    candidate: str


class ReplayAnswer(BaseModel):
    """One point of a run: the event at ``at``, the state after it (status, steps, units,
    outputs, pending signals, timers) and the events the decider decides right after it. With a
    candidate, also ``diverges_at`` (null when compatible) and ``divergence``."""

    execution_id: str
    run: int
    at: int
    last_seq: int
    event: dict[str, Any]
    state: dict[str, Any]
    decided: list[dict[str, Any]]
    candidate: CandidateRef | None = None
    diverges_at: int | None = None
    divergence: Divergence | None = None
