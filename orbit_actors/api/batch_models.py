"""The bodies and answers of batches (operations.md, "Batches")."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from ..store.batches import FILTER_FIELDS

Action = Literal["cancel", "terminate", "pause", "unpause", "rerun"]
Status = Literal["queued", "running", "completed", "failed", "cancelled", "timed_out", "terminated"]
MAX_IDS = 10_000


class BatchFilter(BaseModel):
    """Which executions a batch acts on: every field given must hold; at least one is given.
    ``started_after_ms`` is inclusive, ``started_before_ms`` exclusive."""

    model_config = ConfigDict(extra="forbid")
    status: Status | None = None
    workflow: str | None = Field(default=None, min_length=1)
    version: str | None = Field(default=None, min_length=1)
    started_after_ms: int | None = None
    started_before_ms: int | None = None
    ids: list[str] | None = Field(default=None, min_length=1, max_length=MAX_IDS)

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
