"""The bodies and answers of batches (operations.md, "Batches")."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, model_validator

from ..store.batches import FILTER_FIELDS

Action = Literal["cancel", "terminate", "pause", "unpause", "rerun"]
Status = Literal["queued", "running", "completed", "failed", "cancelled", "timed_out", "terminated"]
MAX_IDS = 10_000
MAX_MS = 2**53  # an instant any JSON reader takes exactly


def _whole(value: Any) -> Any:
    """A whole number written as ``3.0`` is an integer in JSON Schema: taken as one here too."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


Instant = Annotated[int, Field(ge=0, le=MAX_MS), BeforeValidator(_whole)]


def _given_fields_only(schema: dict[str, Any]) -> None:
    """The document's filter: at least one field, and no field given as null."""
    schema["minProperties"] = 1
    for field in schema["properties"].values():
        field.pop("default", None)
        kinds = [kind for kind in field.pop("anyOf", []) if kind.get("type") != "null"]
        if len(kinds) == 1:
            field.update(kinds[0])
        elif kinds:
            field["anyOf"] = kinds


class BatchFilter(BaseModel):
    """Which executions a batch acts on: every field given must hold; at least one is given.
    ``started_after_ms`` is inclusive, ``started_before_ms`` exclusive."""

    model_config = ConfigDict(extra="forbid", json_schema_extra=_given_fields_only)
    status: Status | None = None
    workflow: str | None = Field(default=None, min_length=1)
    version: str | None = Field(default=None, min_length=1)
    started_after_ms: Instant | None = None
    started_before_ms: Instant | None = None
    ids: list[str] | None = Field(default=None, min_length=1, max_length=MAX_IDS)

    @model_validator(mode="before")
    @classmethod
    def _no_nulls(cls, data: Any) -> Any:
        if isinstance(data, dict):
            for name, value in data.items():
                if value is None:
                    raise ValueError(f"{name} is null; leave it out to match any")
        return data

    @model_validator(mode="after")
    def _one_field_at_least(self) -> BatchFilter:
        if not self.model_dump(exclude_none=True):
            raise ValueError(f"give at least one of {', '.join(FILTER_FIELDS)}")
        return self


class CreateBatch(BaseModel):
    """``POST /v1/batches``."""

    model_config = ConfigDict(extra="forbid")
    action: Action
    filter: BatchFilter
    reason: str | None = None
    dry_run: bool = False


class BatchCreated(BaseModel):
    """The answer to creating a batch: its id and how many executions it matched."""

    batch_id: str
    matched: int


class BatchPreview(BaseModel):
    """The answer to a batch's dry run: how many executions it would match now, and the first
    20 of them (nothing is written)."""

    matched: int
    sample: list[str]


class BatchFailure(BaseModel):
    """An execution a batch could not act on, and why."""

    execution_id: str
    code: str
    message: str


class Batch(BaseModel):
    """A batch and its progress: ``done`` executions acted on, ``failed`` those refused (the
    first 1,000; ``failed_count`` counts them all)."""

    batch_id: str
    action: Action
    filter: BatchFilter
    reason: str | None = None
    state: Literal["running", "completed", "cancelled"]
    matched: int
    done: int
    failed: list[BatchFailure]
    failed_count: int
    created_at_ms: int
    closed_at_ms: int | None = None


class BatchList(BaseModel):
    """``{"batches": […], "next_cursor": …}``, newest first (without their failures)."""

    batches: list[Batch]
    next_cursor: str | None = None


class BatchListQuery(BaseModel):
    """``GET /v1/batches`` query parameters."""

    model_config = ConfigDict(extra="ignore")
    limit: int = 100
    cursor: str | None = None
