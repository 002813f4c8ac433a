"""Callers waiting for executions to finish, woken by the actor's end (not by polling)."""

from __future__ import annotations

from dataclasses import dataclass, field

import trio

from ..errors import ExecutionNotFoundError, WaitTimeoutError
from ..history.state import ExecutionState
from ..ir.plan import CompiledDefinition
from ..views import ExecutionResult, result_of
from .loading import Loader
from .registry import Registry


@dataclass(eq=False)
class _Waiter:
    """Callers waiting for one execution to finish; ``result`` is its final answer."""

    done: trio.Event = field(default_factory=trio.Event)
    result: ExecutionResult | None = None


class Waiters:
    """Who waits for which execution. An execution with no waiter costs nothing here."""

    def __init__(self, registry: Registry, load: Loader) -> None:
        self._registry = registry
        self._load = load
        self.pending: dict[str, _Waiter] = {}

    async def wait(self, execution_id: str, timeout: float) -> ExecutionResult:
        """The summary with the output or error once the execution has finished; raises
        WaitTimeoutError or ExecutionNotFoundError."""
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
                state, definition = await self._load(execution_id)
                return result_of(state, definition, row)
        with trio.move_on_after(timeout):
            await waiter.done.wait()
        if waiter.result is None:
            raise WaitTimeoutError(
                f"execution `{execution_id}` is still running after {timeout:g} s"
            )
        if waiter.result.run > 1:  # the stored row keeps the first run's start time
            row = await self._registry.row(execution_id)
            return waiter.result.model_copy(update={"started_at_ms": row.started_at_ms})
        return waiter.result

    def finished(self, state: ExecutionState, definition: CompiledDefinition) -> None:
        """``state``'s execution ended: wake whoever waits for it."""
        waiter = self.pending.pop(state.execution_id, None)
        if waiter is not None:
            waiter.result = result_of(state, definition)
            waiter.done.set()

    def _drop(self, execution_id: str, waiter: _Waiter) -> None:
        """Forget a waiter of an execution that will never finish here (unknown or ended)."""
        if self.pending.get(execution_id) is waiter:
            del self.pending[execution_id]
