"""Callers waiting for executions to finish, woken by the actor's end (not by polling)."""

from __future__ import annotations

from dataclasses import dataclass, field

import trio

from ..errors import ExecutionNotFoundError, WaitTimeoutError
from ..history.state import ExecutionState
from ..store.base import ExecutionRow
from ..views import row_of
from .registry import Registry


@dataclass(eq=False)
class _Waiter:
    """Callers waiting for one execution to finish; ``row`` is its final summary."""

    done: trio.Event = field(default_factory=trio.Event)
    row: ExecutionRow | None = None


class Waiters:
    """Who waits for which execution. An execution with no waiter costs nothing here."""

    def __init__(self, registry: Registry) -> None:
        self._registry = registry
        self.pending: dict[str, _Waiter] = {}

    async def wait(self, execution_id: str, timeout: float) -> ExecutionRow:
        """The summary once the execution has finished; raises WaitTimeoutError or
        ExecutionNotFoundError."""
        waiter = self.pending.get(execution_id)
        if waiter is None:
            waiter = self.pending[execution_id] = _Waiter()  # before reading: no gap
        if execution_id not in self._registry:  # a live actor has not finished
            try:
                row = await self._registry.row(execution_id)
            except ExecutionNotFoundError:
                self._drop(execution_id, waiter)
                raise
            if row.status != "running":
                self._drop(execution_id, waiter)
                return row
        with trio.move_on_after(timeout):
            await waiter.done.wait()
        if waiter.row is None:
            raise WaitTimeoutError(
                f"execution `{execution_id}` is still running after {timeout:g} s"
            )
        if waiter.row.run > 1:  # the stored row keeps the first run's start time
            return await self._registry.row(execution_id)
        return waiter.row

    def finished(self, state: ExecutionState) -> None:
        """``state``'s execution ended: wake whoever waits for it."""
        waiter = self.pending.pop(state.execution_id, None)
        if waiter is not None:
            waiter.row = row_of(state)
            waiter.done.set()

    def _drop(self, execution_id: str, waiter: _Waiter) -> None:
        """Forget a waiter of an execution that will never finish here (unknown or ended)."""
        if self.pending.get(execution_id) is waiter:
            del self.pending[execution_id]
