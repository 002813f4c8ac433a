"""The registry: the one address book of live executions — ``execution_id → mailbox`` — and of
the quarantined ones, and the ways to reach an execution by its id: tell, request, offer a
dispatch, route a result or a lost attempt, tell a parent its child ended.

How many live executions are roots (started without a parent, the ones ``max_active_executions``
counts) is derived here, as entries come and go: there is no other list of them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import suppress
from typing import Any

import trio

from ..actors import commands as cmd
from ..actors.execution import execution_of, new_token
from ..actors.pool import Offer
from ..decide.transitions import UNKNOWN_TOKEN, Verdict
from ..errors import (
    ActorCrashedError,
    ActorGoneError,
    ExecutionFinishedError,
    ExecutionNotFoundError,
    MailboxFullError,
    OrbitError,
    QuarantinedError,
)
from ..history.events import ErrorInfo
from ..history.state import ExecutionState
from ..mailbox import Command, Mailbox, Reply
from ..store.base import ExecutionRow, Store


class Registry:
    """Live and quarantined executions by id (see the module docstring). Commands that find a
    full mailbox are sent from a task of ``nursery``, which waits for room; ``settle`` frees the
    slot of a result no live execution takes."""

    def __init__(
        self,
        nursery: trio.Nursery,
        store: Store,
        settle: Callable[[str], object] = lambda token: None,
        capacity: int = 1024,
    ) -> None:
        self._nursery = nursery
        self._store = store
        self._settle = settle
        self._capacity = capacity
        self._live: dict[str, tuple[Mailbox[Command], bool]] = {}  # id -> (mailbox, is a root)
        self.quarantined: dict[str, str] = {}  # id -> the last error
        self.roots = 0

    # -- the address book -------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self._live)

    def __contains__(self, execution_id: object) -> bool:
        return execution_id in self._live

    def __iter__(self) -> Iterator[str]:
        return iter(self._live)

    def mailbox(self, execution_id: str) -> Mailbox[Command] | None:
        """The mailbox of a live actor, or None."""
        entry = self._live.get(execution_id)
        return entry[0] if entry is not None else None

    def add(self, state: ExecutionState) -> Mailbox[Command]:
        """A new mailbox for ``state``'s actor, registered under its id."""
        mailbox: Mailbox[Command] = Mailbox(f"execution `{state.execution_id}`", self._capacity)
        root = state.parent is None
        previous = self._live.get(state.execution_id)
        if previous is not None and previous[1]:
            self.roots -= 1
        self._live[state.execution_id] = (mailbox, root)
        self.roots += root
        return mailbox

    def remove(self, execution_id: str, mailbox: Mailbox[Command]) -> None:
        """Forget ``mailbox`` if it is still the one registered under ``execution_id``."""
        entry = self._live.get(execution_id)
        if entry is not None and entry[0] is mailbox:
            del self._live[execution_id]
            self.roots -= entry[1]

    # -- reaching an execution --------------------------------------------------------------
    def tell(self, execution_id: str, command: Command) -> None:
        """Send without waiting (nothing happens for an execution not live here); a full mailbox
        gets the command from a task that waits for room."""
        mailbox = self.mailbox(execution_id)
        if mailbox is not None:
            self._deliver(mailbox, command)

    async def request(self, execution_id: str, command: Command) -> Any:
        """Send a request and wait for its answer. Raises QuarantinedError, the answer's error,
        ExecutionNotFoundError, ExecutionFinishedError, or ActorGoneError for an execution
        that runs but not here."""
        if execution_id in self.quarantined:
            raise QuarantinedError(f"execution `{execution_id}` is quarantined; resume it first")
        mailbox = self.mailbox(execution_id)
        if mailbox is not None:
            try:
                return await mailbox.request(command)
            except ActorCrashedError:
                raise
            except ActorGoneError:
                pass  # it finished meanwhile: the stored row says how
        row = await self.row(execution_id)
        if row.status != "running":
            raise ExecutionFinishedError(row.status)
        raise ActorGoneError(f"execution `{execution_id}`", "not running here")

    async def ask(self, execution_id: str, command: Command) -> tuple[bool, Any]:
        """A read-only request answered by the live actor: ``(True, answer)``, or ``(False,
        None)`` when no actor is live (the caller reads the store instead)."""
        mailbox = self.mailbox(execution_id)
        if mailbox is None:
            return False, None
        try:
            return True, await mailbox.request(command)
        except ActorGoneError:
            return False, None

    async def row(self, execution_id: str) -> ExecutionRow:
        """The stored summary row; raises ExecutionNotFoundError."""
        row = await self._store.execution(execution_id)
        if row is None:
            raise ExecutionNotFoundError()
        return row

    def offer(self, offer: Offer) -> str | None:
        """Hand a matched unit to its actor; returns the token reserved for it."""
        mailbox = self.mailbox(offer.execution_id)
        if mailbox is None:
            return None
        token = new_token(offer.execution_id)
        command = cmd.OfferDispatch(
            offer.key, offer.attempt, token, offer.worker_id, offer.session_id
        )
        return token if self._deliver(mailbox, command) else None

    async def report_result(
        self, token: str, worker_id: str | None, output: Any, failure: ErrorInfo | None
    ) -> Verdict:
        """A result for ``token``, however it arrived: its execution records it (and frees the
        worker's slot); a token of no live execution is unknown, and its slot is freed here."""
        execution_id = execution_of(token)
        mailbox = self.mailbox(execution_id) if execution_id else None
        if mailbox is not None:
            command = cmd.ReportResult(token, worker_id, output, failure, reply=Reply())
            with suppress(ActorGoneError):
                verdict: Verdict = await mailbox.request(command)
                return verdict
        self._settle(token)
        return Verdict(token, False, UNKNOWN_TOKEN)

    def mark_uncertain(self, token: str, reason: str) -> None:
        """The session holding ``token`` was lost: its attempt is uncertain."""
        execution_id = execution_of(token)
        if execution_id:
            self.tell(execution_id, cmd.MarkUncertain(token, reason))

    def tell_child_ended(self, child: ExecutionState) -> None:
        """Tell ``child``'s parent how it ended."""
        parent = child.parent
        assert parent is not None
        ended = cmd.ChildEnded(
            parent.step, child.execution_id, child.status, child.output, child.error
        )
        self.tell(parent.execution_id, ended)

    async def cancel_quietly(self, execution_id: str, reason: str) -> None:
        """Cancel an execution, if it still runs."""
        with suppress(OrbitError):  # already finished, or never started
            await self.request(execution_id, cmd.RequestCancel(reason, reply=Reply()))

    def _deliver(self, mailbox: Mailbox[Command], command: Command) -> bool:
        """Queue ``command`` now, or from a task that waits while the mailbox is full; False
        when the actor is gone."""
        try:
            mailbox.send_nowait(command)
        except MailboxFullError:
            self._nursery.start_soon(self._send_later, mailbox, command)
        except ActorGoneError:
            return False
        return True

    @staticmethod
    async def _send_later(mailbox: Mailbox[Command], command: Command) -> None:
        with suppress(ActorGoneError):
            await mailbox.send(command)
