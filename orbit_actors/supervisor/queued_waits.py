"""Waits for executions that may start on another server (shared store).

A queued execution (waiting for a slot of its concurrency key) has no owner: a wait for it
waits here, for a finish here. But the server that promotes it — whichever frees a slot of its
key — owns it from then on, and its end is seen there, not here. So every server hears of each
promotion (:meth:`~orbit_actors.store.cluster.Cluster.watch_started`, a ``NOTIFY`` of the
promoting commit; a cancel of a queued execution, on any server, sends the same): a wait here
for that execution stops and asks again where it lives, and waits at its new owner (a forwarded
wait) for the time left, or reads its end from the store. The interest is noted before the
owner is read, so a promotion is either seen by that read or heard after it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import trio
from pydantic import TypeAdapter

from ..errors import WaitTimeoutError
from ..views import ExecutionResult
from . import forwarding as fw
from .forwarding import Forwarder

WaitHere = Callable[[str, float], Awaitable[ExecutionResult]]
_RESULT = TypeAdapter(ExecutionResult)


class StartedElsewhere:
    """Waits that follow a queued execution to the server that starts it (module docstring)."""

    def __init__(
        self, forwarder: Forwarder, wait_here: WaitHere, surely_here: Callable[[str], bool]
    ) -> None:
        self._forwarder = forwarder
        self._wait_here = wait_here
        self._surely_here = surely_here  # live here: it cannot start elsewhere
        self._waiting: dict[str, set[trio.CancelScope]] = {}

    def started(self, execution_id: str) -> None:
        """A server promoted ``execution_id`` (``""``: any may have been): the waits for it
        here ask again where it lives."""
        if execution_id:
            scopes = self._waiting.get(execution_id, set())
        else:
            scopes = {scope for waits in self._waiting.values() for scope in waits}
        for scope in scopes:
            scope.cancel()

    async def wait(self, execution_id: str, timeout: float) -> ExecutionResult:
        """The execution's result once it finished, waited for where it lives now; raises
        WaitTimeoutError after ``timeout`` seconds."""
        if self._surely_here(execution_id):
            return await self._wait_here(execution_id, timeout)
        try:
            return await self._follow(execution_id, timeout)
        except WaitTimeoutError:
            raise WaitTimeoutError(
                f"execution `{execution_id}` is still running after {timeout:g} s"
            ) from None

    async def _follow(self, execution_id: str, timeout: float) -> ExecutionResult:
        deadline = trio.current_time() + timeout
        while True:
            left = max(0.0, deadline - trio.current_time())
            scope = trio.CancelScope()
            waits = self._waiting.setdefault(execution_id, set())
            waits.add(scope)  # before the owner is read: no promotion goes unheard
            try:
                owner = await self._forwarder.owner_elsewhere(execution_id)
                if owner is not None:
                    command = fw.WaitCommand(timeout=left)
                    value = await self._forwarder.forward(owner, execution_id, command, left)
                    return _RESULT.validate_python(value)
                with scope:
                    return await self._wait_here(execution_id, left)
            finally:
                waits.discard(scope)
                if not waits:
                    self._waiting.pop(execution_id, None)
