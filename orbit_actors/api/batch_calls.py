"""The batch endpoints (operations.md, "Batches") as calls both clients send (see
:mod:`.calls`)."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from . import batch_models as b
from .calls import Call


def _filter(
    status: str | None, workflow: str | None, version: str | None,
    started_after_ms: int | None, started_before_ms: int | None, ids: list[str] | None,
) -> dict[str, Any]:  # fmt: skip
    given = {
        "status": status, "workflow": workflow, "version": version,
        "started_after_ms": started_after_ms, "started_before_ms": started_before_ms, "ids": ids,
    }  # fmt: skip
    return {name: value for name, value in given.items() if value is not None}


def create_batch(
    action: str, *, status: str | None = None, workflow: str | None = None,
    version: str | None = None, started_after_ms: int | None = None,
    started_before_ms: int | None = None, ids: list[str] | None = None,
    reason: str | None = None,
) -> Call[b.BatchCreated]:  # fmt: skip
    """Act (``cancel``, ``terminate``, ``pause``, ``unpause`` or ``rerun``) on every execution
    the filter matches, at the server's batch rate; answers the batch's id and how many it
    matched. Give at least one filter field."""
    flt = _filter(status, workflow, version, started_after_ms, started_before_ms, ids)
    body: dict[str, Any] = {"action": action, "filter": flt}
    if reason is not None:
        body["reason"] = reason
    return Call("POST", "/v1/batches", b.BatchCreated.model_validate_json, json=body)


def batch_preview(
    action: str, *, status: str | None = None, workflow: str | None = None,
    version: str | None = None, started_after_ms: int | None = None,
    started_before_ms: int | None = None, ids: list[str] | None = None,
) -> Call[b.BatchPreview]:  # fmt: skip
    """A batch's dry run: how many executions it would act on now and the first 20 of them;
    nothing is written."""
    flt = _filter(status, workflow, version, started_after_ms, started_before_ms, ids)
    body = {"action": action, "filter": flt, "dry_run": True}
    return Call("POST", "/v1/batches", b.BatchPreview.model_validate_json, json=body)


def _batch(batch_id: str, tail: str = "") -> str:
    return f"/v1/batches/{quote(batch_id, safe='')}{tail}"


def batch(batch_id: str) -> Call[b.Batch]:
    """One batch and its progress (``done``, ``failed``, ``state``)."""
    return Call("GET", _batch(batch_id), b.Batch.model_validate_json)


def batches(*, limit: int | None = None, cursor: str | None = None) -> Call[b.BatchList]:
    """A page of batches, newest first, and the cursor of the next."""
    params: dict[str, str | int | float] = {}
    if limit is not None:
        params["limit"] = limit
    if cursor is not None:
        params["cursor"] = cursor
    return Call("GET", "/v1/batches", b.BatchList.model_validate_json, params=params)


def cancel_batch(batch_id: str) -> Call[b.Batch]:
    """Cancel a batch: what it has not acted on yet it never will; answers the batch."""
    return Call("POST", _batch(batch_id, "/cancel"), b.Batch.model_validate_json)
