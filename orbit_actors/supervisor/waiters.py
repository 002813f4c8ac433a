"""Callers waiting for executions to finish, woken by the actor's end (not by polling), and the
answers and final states of the executions that finished last, kept so a ``wait``, a describe or
a query that comes just after the end (the usual start, wait, read of a short workflow) costs
no store read and no replay. A finished execution's answer never changes, so this is a memo of a
fact, not a copy of state to keep in step."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Awaitable, Callable
from functools import partial
from typing import TypeVar

import trio

from ..errors import ExecutionNotFoundError, WaitTimeoutError
from ..history.state import ExecutionState
from ..ir.plan import CompiledDefinition
from ..views import ExecutionResult, result_of
from .loading import Loader
from .registry import Registry
from .wait_deadlines import Parked, WaitDeadlines


class _Waiter:
    """Callers waiting for one execution to finish; ``result`` is its final answer. A list of
    parked callers rather than a ``trio.Event``: one is made per waited execution, and the
    event's parking lot cost more than the rest of the wait's bookkeeping."""

    __slots__ = ("parked", "result")

    def __init__(self) -> None:
        self.result: ExecutionResult | None = None
        self.parked: list[Parked] = []

    def wait(self, deadlines: WaitDeadlines, deadline: float) -> Awaitable[None]:
        """Until :meth:`finish` (at once if it came already) or ``deadline``; cancellable. The
        wait to await, not a coroutine of its own (one frame less to resume through)."""
        if self.result is not None:
            return trio.lowlevel.checkpoint()
        return deadlines.wait(self.parked, deadline)

    def finish(self, result: ExecutionResult, deadlines: WaitDeadlines) -> None:
        """The execution ended with ``result``: wake every waiting caller."""
        self.result = result
        deadlines.wake(self.parked)


T = TypeVar("T")

RECENT = 4096  # answers of the executions that finished last (about 1 KB each)
RECENT_STATES = 1024  # final states of the executions that finished last (a few KB each)


class Waiters:
    """Who waits for which execution, and the latest answers (see the module docstring)."""

    def __init__(
        self, registry: Registry, load: Loader, recent: int = RECENT, states: int = RECENT_STATES,
        seconds: Callable[[], float] = trio.current_time,
    ) -> None:  # fmt: skip
        self._registry = registry
        self._load = load
        self._seconds = seconds  # trio's time, from the run's clock directly when given
        self.deadlines = WaitDeadlines()  # its task is run by the runtime
        self.pending: dict[str, _Waiter] = {}
        self._recent: OrderedDict[str, ExecutionResult] = OrderedDict()
        self._keep = recent
        self._states: OrderedDict[str, tuple[ExecutionState, CompiledDefinition]] = OrderedDict()
        self._keep_states = states

    def final_state(self, execution_id: str) -> tuple[ExecutionState, CompiledDefinition] | None:
        """The final state of an execution that finished lately here, with its definition (the
        same a replay of its history gives); None when not kept."""
        return self._states.get(execution_id)

    async def wait(self, execution_id: str, timeout: float) -> ExecutionResult:
        """The summary with the output or error once the execution has finished; raises
        WaitTimeoutError or ExecutionNotFoundError."""
        known = self._recent.get(execution_id)
        if known is not None:
            return known if known.run == 1 else await self._with_first_start(known)
        waiter = self.pending.get(execution_id)
        if waiter is None:
            waiter = self.pending[execution_id] = _Waiter()  # before reading: no gap
        if execution_id not in self._registry:  # a live actor has not finished
            try:
                row = await self._registry.row(execution_id)
            except ExecutionNotFoundError:
                self._drop(execution_id, waiter)
                raise
            if row.status not in ("running", "queued"):
                self._drop(execution_id, waiter)
                state, definition = await self._load(execution_id)
                return result_of(state, definition, row)
        await waiter.wait(self.deadlines, self._seconds() + timeout)
        if waiter.result is None:
            raise WaitTimeoutError(
                f"execution `{execution_id}` is still running after {timeout:g} s"
            )
        result = waiter.result
        return result if result.run == 1 else await self._with_first_start(result)

    def adopt(
        self, execution_id: str, task: trio.lowlevel.Task, deadline: float
    ) -> Callable[[], trio.lowlevel.Abort] | None:
        """Count ``task`` (a start's caller, parked until the execution's first commit) as
        waiting for the execution's end until ``deadline``, so that it is woken once, at the
        end or the deadline, and not by the first commit as well: the :meth:`wait` it calls
        then answers from what the end kept. Returns what cancels that wait (its abort); None,
        with nothing done, when the execution has ended already (its first commit ended it)
        or while no task serves the deadlines."""
        if execution_id in self._recent:
            return None
        waiter = self.pending.get(execution_id)
        fresh = waiter is None
        if waiter is None:
            waiter = self.pending[execution_id] = _Waiter()
        parked = self.deadlines.adopt(waiter.parked, task, deadline)
        if parked is None:
            if fresh:
                del self.pending[execution_id]
            return None
        return partial(self.deadlines.abort, parked)

    async def _with_first_start(self, result: ExecutionResult) -> ExecutionResult:
        """A later run's answer with the first run's start, which the row keeps (the first
        run's answers need nothing: no coroutine for them)."""
        row = await self._registry.row(result.execution_id)  # it keeps the first run's start
        return result.model_copy(update={"started_at_ms": row.started_at_ms})

    def finished(self, state: ExecutionState, definition: CompiledDefinition) -> None:
        """``state``'s execution ended: wake whoever waits for it, and keep its answer."""
        result = result_of(state, definition)
        _keep(self._recent, state.execution_id, result, self._keep)
        _keep(self._states, state.execution_id, (state, definition), self._keep_states)
        waiter = self.pending.pop(state.execution_id, None)
        if waiter is not None:
            waiter.finish(result, self.deadlines)

    def forget(self, execution_ids: list[str]) -> None:
        """The executions were purged or run again (a rerun): what was kept of their end is gone."""
        for execution_id in execution_ids:
            self._recent.pop(execution_id, None)
            self._states.pop(execution_id, None)

    def _drop(self, execution_id: str, waiter: _Waiter) -> None:
        """Forget a waiter of an execution that will never finish here (unknown or ended)."""
        if self.pending.get(execution_id) is waiter:
            del self.pending[execution_id]


def _keep(memo: OrderedDict[str, T], key: str, value: T, size: int) -> None:
    memo[key] = value
    if len(memo) > size:
        memo.popitem(last=False)
