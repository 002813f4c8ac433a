"""Batches in the memory store (see :mod:`orbit_actors.store.batches`): the same snapshot and
progress as the database stores keep, in dicts."""

from __future__ import annotations

from dataclasses import replace

import trio

from ..store.base import ExecutionRow
from ..store.batches import (
    SAMPLE_SIZE,
    BatchFailure,
    BatchFilter,
    BatchItem,
    BatchProgress,
    BatchRecord,
)
from ..store.cursor import clamp_limit, decode_cursor, encode_cursor


def matches(flt: BatchFilter, row: ExecutionRow) -> bool:
    """True when ``row`` meets every field ``flt`` gives."""
    return (
        flt.status in (None, row.status)
        and flt.workflow in (None, row.workflow)
        and flt.version in (None, row.version)
        and (flt.started_after_ms is None or row.started_at_ms >= flt.started_after_ms)
        and (flt.started_before_ms is None or row.started_at_ms < flt.started_before_ms)
        and (flt.ids is None or row.execution_id in flt.ids)
    )


class MemoryBatches:
    """The batch part of :class:`~orbit_actors.testing.MemoryStore`."""

    _executions: dict[str, tuple[int, ExecutionRow]]

    def __init__(self) -> None:
        self._batches: dict[str, tuple[int, BatchRecord]] = {}
        self._batch_items: dict[str, list[BatchItem]] = {}
        self._batch_failures: dict[str, dict[int, BatchFailure]] = {}

    async def _write(self, weight: int = 1) -> None:
        raise NotImplementedError

    def _matching(self, flt: BatchFilter) -> list[ExecutionRow]:
        rows = sorted(self._executions.values(), key=lambda item: item[0])
        return [row for _, row in rows if matches(flt, row)]

    async def create_batch(self, record: BatchRecord) -> int:
        """Store a batch with the snapshot of what its filter matches."""
        await self._write()
        rows = self._matching(record.filter)
        items = [BatchItem(i, row.execution_id, row.run) for i, row in enumerate(rows)]
        state = "running" if items else "completed"
        closed = None if items else record.created_at_ms
        stored = replace(record, state=state, matched=len(items), closed_at_ms=closed)
        self._batches[record.batch_id] = (len(self._batches), stored)
        self._batch_items[record.batch_id] = items
        self._batch_failures[record.batch_id] = {}
        return len(items)

    async def batch_matches(self, flt: BatchFilter) -> tuple[int, list[str]]:
        """How many executions ``flt`` matches now, and the first few ids."""
        await trio.lowlevel.checkpoint()
        rows = self._matching(flt)
        return len(rows), [row.execution_id for row in rows[:SAMPLE_SIZE]]

    async def batch(self, batch_id: str) -> BatchRecord | None:
        """One batch."""
        await trio.lowlevel.checkpoint()
        found = self._batches.get(batch_id)
        return found[1] if found else None

    async def batches(
        self, limit: int = 100, cursor: str | None = None
    ) -> tuple[list[BatchRecord], str | None]:
        """Batches newest first, a page at a time."""
        await trio.lowlevel.checkpoint()
        limit, before = clamp_limit(limit), decode_cursor(cursor)
        ordered = sorted(self._batches.values(), key=lambda item: -item[0])
        chosen = [item for item in ordered if before is None or item[0] < before][: limit + 1]
        more = encode_cursor(chosen[limit - 1][0]) if len(chosen) > limit else None
        return [record for _, record in chosen[:limit]], more

    async def batch_items(self, batch_id: str, start: int, limit: int) -> list[BatchItem]:
        """Up to ``limit`` items of a batch's snapshot from position ``start`` on."""
        await trio.lowlevel.checkpoint()
        return self._batch_items.get(batch_id, [])[start : start + limit]

    async def batch_failures(self, batch_id: str, limit: int) -> list[BatchFailure]:
        """The first ``limit`` executions a batch could not act on."""
        await trio.lowlevel.checkpoint()
        failures = self._batch_failures.get(batch_id, {})
        return [failures[p] for p in sorted(failures)][:limit]

    async def mark_batch_doubt(self, batch_id: str, until: int) -> bool:
        """Items before ``until`` may be acted on from now; False when the batch stopped."""
        await self._write()
        order, record = self._batches[batch_id]
        if record.state != "running":
            return False
        self._batches[batch_id] = (order, replace(record, doubt_until=until))
        return True

    async def advance_batch(self, batch_id: str, progress: BatchProgress, now_ms: int) -> str:
        """Commit the outcome of a page of a batch; its state after."""
        await self._write()
        order, record = self._batches[batch_id]
        if record.position == progress.position:
            self._batch_failures[batch_id].update(progress.failures)
            record = replace(
                record, position=progress.until, done=record.done + progress.done,
                failed=record.failed + len(progress.failures),
                doubt_until=max(record.doubt_until, progress.until),
            )  # fmt: skip
        if record.state == "running" and record.position >= record.matched:
            record = replace(record, state="completed", closed_at_ms=now_ms)
        self._batches[batch_id] = (order, record)
        return record.state

    async def cancel_batch(self, batch_id: str, now_ms: int) -> str | None:
        """Cancel a running batch; its state after (None: no such batch)."""
        await self._write()
        found = self._batches.get(batch_id)
        if found is None:
            return None
        order, record = found
        if record.state == "running":
            record = replace(record, state="cancelled", closed_at_ms=now_ms)
            self._batches[batch_id] = (order, record)
        return record.state

    async def claim_batches(self, owner: str, from_owners: list[str] | None) -> list[str]:
        """Take over the running batches of ``from_owners`` (None: every running batch)."""
        await self._write()
        claimed = []
        for batch_id, (order, record) in sorted(self._batches.items(), key=lambda i: i[1][0]):
            if record.state == "running" and (from_owners is None or record.owner in from_owners):
                self._batches[batch_id] = (order, replace(record, owner=owner))
                claimed.append(batch_id)
        return claimed
