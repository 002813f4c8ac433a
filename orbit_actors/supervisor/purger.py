"""Retention (operations.md, "Retention and deletion"): finished executions older than their
retention are purged behind serving, and one can be deleted on request.

A sweep purges what is due a few executions per transaction (:data:`PURGE_BATCH`, each with its
finished descendants), letting the writer commit between transactions, until nothing is due; then
the store gives back the space it no longer needs. Sweeps come at half the shortest retention in
effect, at most a minute apart: purging is housekeeping, so a sweep on a timer is enough (an
execution is purged at most that late). Each id purged is forgotten by whatever remembered it
(``forget``: the final states kept for ``wait`` and describe), so the id answers 404 and may be
started again."""

from __future__ import annotations

from collections.abc import Callable

import trio

from ..errors import ExecutionNotFoundError, ExecutionRunningError
from ..store.base import PURGE_BATCH, Retention, Store
from ..store.definitions import DefinitionRegistry

MAX_SWEEP_INTERVAL_MS = 60_000
MIN_SWEEP_INTERVAL_MS = 500


class Purger:
    """Purges ``store`` by the retention of each definition (``default_ms`` for those that say
    none; None keeps them forever)."""

    def __init__(
        self,
        store: Store,
        definitions: DefinitionRegistry,
        default_ms: int | None,
        now_ms: Callable[[], int],
        forget: Callable[[list[str]], None],
    ) -> None:
        self._store = store
        self._definitions = definitions
        self._default_ms = default_ms
        self._now_ms = now_ms
        self._forget = forget

    def retention(self) -> Retention:
        """The retention in effect: the default, and each definition's own."""
        own = {
            record.definition_hash: compiled.ir.retention
            for record in self._definitions.records()
            if (compiled := self._definitions.by_hash(record.definition_hash)) is not None
            and compiled.ir.retention is not None
        }
        return Retention(self._default_ms, own)

    def interval_ms(self, retention: Retention) -> int | None:
        """How long between sweeps (None: nothing is ever purged)."""
        kept = [ms for ms in (retention.default_ms, *retention.by_hash.values()) if ms is not None]
        if not kept:
            return None
        return max(MIN_SWEEP_INTERVAL_MS, min(MAX_SWEEP_INTERVAL_MS, min(kept) // 2))

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Sweep until cancelled."""
        task_status.started()
        while True:
            interval = self.interval_ms(self.retention())
            # a definition with a retention of its own may be registered later: look again
            await trio.sleep((interval or MAX_SWEEP_INTERVAL_MS) / 1000)
            if interval is not None:
                await self.sweep()

    async def sweep(self) -> int:
        """Purge everything due now, a batch per transaction; how many executions went."""
        retention, now, total = self.retention(), self._now_ms(), 0
        while purged := await self._store.purge_due(retention, now, PURGE_BATCH):
            self._forget(purged)
            total += len(purged)
            await trio.lowlevel.checkpoint()  # serving goes first between batches
        if total:
            await self._store.reclaim()
        return total

    async def delete(self, execution_id: str) -> list[str]:
        """Purge one finished execution now (with its finished descendants); raises
        ExecutionRunningError or ExecutionNotFoundError."""
        purged = await self._store.purge(execution_id)
        if purged.outcome == "missing":
            raise ExecutionNotFoundError()
        if purged.outcome == "running":
            raise ExecutionRunningError(execution_id)
        self._forget(purged.ids)
        return purged.ids
