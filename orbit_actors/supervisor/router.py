"""The router: the one answer to "where does execution X live". A command for an execution is
carried out here when the execution is here (live, dormant or quarantined) or owned by no other
server; otherwise it is forwarded to its owner (:mod:`.forwarding`), which carries it out through
the same table and answers once it committed.

Each forwarded command type has one :class:`Route`: how it is carried out here, and the type of
its answer (encoded as JSON for the sender, decoded back into that type). A new command is a
command class in :mod:`.forwarding` and one entry of the table :func:`routes` builds.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from contextlib import suppress
from dataclasses import dataclass
from typing import Any

import trio
from pydantic import TypeAdapter

from ..actors import commands as cmd
from ..actors.execution import execution_of
from ..decide.transitions import Verdict
from ..errors import (
    ExecutionQueuedError,
    OrbitError,
    OwnerUnavailableError,
    StorageError,
    WaitTimeoutError,
)
from ..history.events import ErrorInfo
from ..mailbox import Reply
from ..store.cluster import Owner
from ..views import ExecutionResult
from ..wire.messages import Task
from . import forwarding as fw
from .forwarding import Forwarder
from .registry import Registry

log = logging.getLogger("orbit.cluster")
UNCERTAIN_RETRY_FIRST_S, UNCERTAIN_RETRY_MAX_S = 0.1, 5.0  # while the database is away
WAIT_RETRY_FIRST_S, WAIT_RETRY_MAX_S = 0.1, 2.0  # a wait whose answer was lost is asked again
UNKNOWN_OUTCOME = frozenset({StorageError.code, OwnerUnavailableError.code})
"""The codes of a command not carried out, or whose answer was lost: a worker sends such a result
again (worker-protocol.md), a wait is asked again."""

Here = Callable[[str, Any], Awaitable[Any]]
"""Carry a command out on this server: (execution id, command) → the answer."""


@dataclass(frozen=True)
class Route:
    """How one command type is carried out here, and the type its answer has."""

    here: Here
    answer: TypeAdapter[Any]

    @staticmethod
    def of(here: Here, answer: Any) -> Route:
        """A route whose answer is of type ``answer``."""
        return Route(here, TypeAdapter(answer))


class Router:
    """Sends each command to where its execution lives (see the module docstring). ``settle``
    frees the slot a session here held for a result that was forwarded to its owner."""

    def __init__(
        self,
        registry: Registry,
        forwarder: Forwarder | None,
        nursery: trio.Nursery,
        settle: Callable[[str], object],
    ) -> None:
        self._registry = registry
        self._forwarder = forwarder
        self._nursery = nursery
        self._settle = settle
        self.routes: dict[type[Any], Route] = {}

    def surely_here(self, execution_id: str) -> bool:
        """True when ``execution_id`` is known here (or no other server exists): no need to ask
        the store who owns it."""
        registry = self._registry
        return (
            self._forwarder is None
            or execution_id in registry
            or execution_id in registry.quarantined
        )

    async def owner_elsewhere(self, execution_id: str) -> Owner | None:
        """The server that owns ``execution_id`` when that is not this one, else None."""
        if self.surely_here(execution_id):
            return None
        assert self._forwarder is not None
        return await self._forwarder.owner_elsewhere(execution_id)

    async def send(self, execution_id: str, command: Any, extra: float = 0) -> Any:
        """Carry ``command`` out where ``execution_id`` lives and return its answer; a forwarded
        command waits the forwarder's timeout and ``extra`` seconds more."""
        owner = await self.owner_elsewhere(execution_id)
        if owner is None:
            return await self.routes[type(command)].here(execution_id, command)
        return await self._forward(owner, execution_id, command, extra)

    async def wait(self, execution_id: str, timeout: float) -> ExecutionResult:
        """The execution's result once it finished, wherever it lives; raises WaitTimeoutError
        after ``timeout`` seconds. A wait changes nothing, so one whose answer was lost (the
        owner or the database failing over: ``OWNER_UNAVAILABLE``, ``STORAGE_ERROR``) is asked
        again, of the new owner after a takeover, until its deadline, and once more, without
        waiting, past it: the caller gets the execution's answer, not the lost one's error."""
        if self._forwarder is None:  # one server: no answer to lose
            alone: ExecutionResult = await self.send(
                execution_id, fw.WaitCommand(timeout=timeout), extra=timeout
            )
            return alone
        deadline = trio.current_time() + timeout
        left, delay, retried = timeout, WAIT_RETRY_FIRST_S, False
        while True:
            try:
                result: ExecutionResult = await self.send(
                    execution_id, fw.WaitCommand(timeout=left), extra=left
                )
                return result
            except OrbitError as exc:
                if retried and exc.code == WaitTimeoutError.code:
                    raise WaitTimeoutError(
                        f"execution `{execution_id}` is still running after {timeout:g} s"
                    ) from None
                if exc.code not in UNKNOWN_OUTCOME or left == 0:
                    raise
                log.warning("a wait for %s is asked again: %s", execution_id, exc)
            await trio.sleep(min(delay, max(0.0, deadline - trio.current_time())))
            left = max(0.0, deadline - trio.current_time())
            delay, retried = min(WAIT_RETRY_MAX_S, delay * 2), True

    async def _forward(self, owner: Owner, execution_id: str, command: Any, extra: float) -> Any:
        assert self._forwarder is not None
        value = await self._forwarder.forward(owner, execution_id, command, extra)
        return self.routes[type(command)].answer.validate_python(value)

    async def carry_out(self, execution_id: str, command: Any) -> Any:
        """A command another server forwarded: carried out here, answered as JSON data."""
        route = self.routes[type(command)]
        return route.answer.dump_python(await route.here(execution_id, command), mode="json")

    def tell(self, execution_id: str, command: Any) -> None:
        """Send ``command`` from a task of its own, without waiting and whatever it answers (an
        execution that has finished meanwhile takes nothing)."""
        self._nursery.start_soon(self._quietly, execution_id, command)

    async def _quietly(self, execution_id: str, command: Any) -> None:
        with suppress(OrbitError):
            await self.send(execution_id, command)

    # -- a worker's result and a lost attempt, from a session here --------------------------
    async def report_result(
        self, token: str, worker_id: str | None, output: Any, failure: ErrorInfo | None
    ) -> Verdict:
        """A worker's result for ``token``, however it arrived: recorded here or by the token's
        owner; a session's slot here is freed either way."""
        execution_id = execution_of(token)
        if execution_id is None or self.surely_here(execution_id):  # the usual case: no await
            return await self._registry.report_result(token, worker_id, output, failure)
        owner = await self.owner_elsewhere(execution_id)
        if owner is None:
            return await self._registry.report_result(token, worker_id, output, failure)
        command = fw.ResultCommand(token=token, worker_id=worker_id, output=output, failure=failure)
        try:
            verdict: Verdict = await self._forward(owner, execution_id, command, 0)
        except OrbitError as exc:
            if exc.code not in UNKNOWN_OUTCOME:
                self._settle(token)
            # else the session here still holds the token, as a session of the owner's own
            # holds one whose result could not be recorded: its worker sends the result again
            # (the owner, respawned, adopted the attempt again), or its loss makes it uncertain
            raise
        except BaseException:
            self._settle(token)
            raise
        self._settle(token)  # a task of the shared queue held a slot of a session here
        return verdict

    def report_result_nowait(
        self, token: str, worker_id: str | None, output: Any, failure: ErrorInfo | None,
        answered: Callable[[Verdict | OrbitError], None],
    ) -> bool:  # fmt: skip
        """The usual case of :meth:`report_result` (the execution lives here) without a wait:
        ``answered`` gets the verdict once it is recorded. False, with nothing done, when only
        :meth:`report_result` can carry the result."""
        execution_id = execution_of(token)
        if execution_id is None or not self.surely_here(execution_id):
            return False
        return self._registry.report_result_nowait(
            execution_id, token, worker_id, output, failure, answered
        )

    def mark_uncertain(self, token: str, reason: str) -> None:
        """The session here that held ``token`` was lost: its attempt is uncertain, here or at
        its owner."""
        execution_id = execution_of(token)
        if execution_id is None or self._forwarder is None or execution_id in self._registry:
            self._registry.mark_uncertain(token, reason)
            return
        self._nursery.start_soon(self.forward_uncertain, execution_id, token, reason)

    async def forward_uncertain(self, execution_id: str, token: str, reason: str) -> None:
        """Have ``token``'s attempt made uncertain by its owner (here when there is no other),
        asked again while the database or the owner does not answer: a mark lost then would
        leave the attempt dispatched to a session that does not hold it, waited on for ever.
        (Marking twice does nothing more.)"""
        command = fw.UncertainCommand(token=token, reason=reason)
        delay = UNCERTAIN_RETRY_FIRST_S
        while True:
            try:
                await self.send(execution_id, command)
                return
            except (StorageError, OwnerUnavailableError) as exc:
                log.warning("could not have %s made uncertain (trying again in %.1f s): %s",
                            token, delay, exc)  # fmt: skip
            except OrbitError:  # finished, or its owner gone too: its successor marks it
                return
            await trio.sleep(delay)  # a backoff: the database is away (failing over)
            delay = min(UNCERTAIN_RETRY_MAX_S, delay * 2)


class Remote:
    """What the shared task queue contributes to the routes (``TaskSharing`` in shared mode):
    carry out another server's offer, and note that a remote token was answered."""

    async def dispatch_here(self, execution_id: str, c: fw.OfferCommand) -> Task | None:
        """Dispatch a unit another server claimed to its session (None: the offer is stale)."""
        return None

    def answered(self, token: str) -> None:
        """A token dispatched to another server's session was answered."""


async def _no_migration(execution_id: str, c: fw.MigrateCommand) -> dict[str, Any]:
    raise OrbitError("this server carries out no migrations")


def routes(
    registry: Registry,
    resume: Callable[[str], Awaitable[None]],
    wait: Callable[[str, float], Awaitable[ExecutionResult]],
    remote: Remote,
    cancel_queued: Callable[[str, str], Awaitable[None]] | None = None,
    *,
    terminate_queued: Callable[[str, str], Awaitable[None]] | None = None,
    migrate: Here = _no_migration,
) -> dict[type[Any], Route]:
    """The table of every forwarded command: how it is carried out here and its answer's type
    (``cancel_queued`` and ``terminate_queued`` end an execution queued for a concurrency slot,
    which has no actor;
    ``migrate``: :func:`~.migration.migrate_here`, which needs the definitions)."""

    async def signal(i: str, c: fw.SignalCommand) -> int:
        seq: int = await registry.request(i, cmd.DeliverSignal(c.name, c.payload, reply=Reply()))
        return seq

    async def cancel(i: str, c: fw.CancelCommand) -> None:
        await _here_or_queued(i, cmd.RequestCancel(c.reason, reply=Reply()), cancel_queued)

    async def terminate(i: str, c: fw.TerminateCommand) -> None:
        await _here_or_queued(i, cmd.Terminate(c.reason, reply=Reply()), terminate_queued)

    async def _here_or_queued(
        i: str, command: cmd.RequestCancel | cmd.Terminate,
        queued: Callable[[str, str], Awaitable[None]] | None,
    ) -> None:  # fmt: skip
        """``command`` to the execution's actor, or ``queued`` when it waits for a slot."""
        try:
            await registry.request(i, command)
        except ExecutionQueuedError:
            if queued is None:
                raise
            try:
                await queued(i, command.reason)
            except ExecutionQueuedError:  # promoted meanwhile: its actor takes the command
                await registry.request(i, command)

    async def pause(i: str, c: fw.PauseCommand) -> None:
        await registry.request(i, cmd.Pause(c.reason, reply=Reply()))

    async def unpause(i: str, c: fw.UnpauseCommand) -> None:
        await registry.request(i, cmd.Unpause(reply=Reply()))

    async def resume_here(i: str, c: fw.ResumeCommand) -> None:
        await registry.row(i)
        await resume(i)

    async def result(i: str, c: fw.ResultCommand) -> Verdict:
        verdict = await registry.report_result(c.token, c.worker_id, c.output, c.failure)
        remote.answered(c.token)
        return verdict

    async def uncertain(i: str, c: fw.UncertainCommand) -> None:
        registry.mark_uncertain(c.token, c.reason)
        remote.answered(c.token)

    return {
        fw.SignalCommand: Route.of(signal, int),
        fw.CancelCommand: Route.of(cancel, None),
        fw.TerminateCommand: Route.of(terminate, None),
        fw.PauseCommand: Route.of(pause, None),
        fw.UnpauseCommand: Route.of(unpause, None),
        fw.ResumeCommand: Route.of(resume_here, None),
        fw.ResultCommand: Route.of(result, Verdict),
        fw.WaitCommand: Route.of(lambda i, c: wait(i, c.timeout), ExecutionResult),
        fw.OfferCommand: Route.of(remote.dispatch_here, Task | None),
        fw.UncertainCommand: Route.of(uncertain, None),
        fw.MigrateCommand: Route.of(migrate, dict[str, Any]),
    }
