"""The handlers of batches (operations.md, "Batches"); their rows are in
:data:`orbit_actors.server.api.ENDPOINTS`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..api import batch_models as b
from ..store.batches import BatchFilter, BatchRecord
from ..supervisor.batching import BatchPreview, BatchStatus

if TYPE_CHECKING:
    from .api import Answer, Call


def batch_body(record: BatchRecord, status: BatchStatus | None = None) -> dict[str, Any]:
    """A batch as the API shows it (with its failures when ``status`` has them)."""
    failures = status.failures if status is not None else []
    body = b.Batch(
        batch_id=record.batch_id, action=record.action,
        filter=b.BatchFilter(**record.filter.given()), reason=record.reason,
        state=record.state,
        matched=record.matched, done=record.done,
        failed=[b.BatchFailure(**vars(f)) for f in failures], failed_count=record.failed,
        created_at_ms=record.created_at_ms, closed_at_ms=record.closed_at_ms,
    ).model_dump(mode="json")  # fmt: skip
    body["filter"] = record.filter.given()  # the fields given only (none is null)
    return body


async def create_batch(call: Call) -> Answer:
    """Make a batch (202 ``{batch_id, matched}``), or say what it would match (200)."""
    body: b.CreateBatch = call.body
    flt = BatchFilter(**body.filter.model_dump(exclude_none=True))
    answer = await call.runtime.batches.create(body.action, flt, body.reason, body.dry_run)
    if isinstance(answer, BatchPreview):
        return 200, {"matched": answer.matched, "sample": answer.sample}
    return 202, {"batch_id": answer.batch_id, "matched": answer.matched}


async def get_batch(call: Call) -> Answer:
    """One batch and its progress."""
    status = await call.runtime.batches.status(call.params["batch_id"])
    return 200, batch_body(status.record, status)


async def list_batches(call: Call) -> Answer:
    """Batches, newest first."""
    query: b.BatchListQuery = call.query
    records, next_cursor = await call.runtime.store.batches(query.limit, query.cursor)
    return 200, {"batches": [batch_body(r) for r in records], "next_cursor": next_cursor}


async def cancel_batch(call: Call) -> Answer:
    """Stop a batch; what it has not acted on yet it never will."""
    status = await call.runtime.batches.cancel(call.params["batch_id"])
    return 200, batch_body(status.record, status)
