"""The registry: the one address book of running executions — the live ones (``execution_id →
mailbox``), the dormant ones (out of memory: passivated, or not yet back after a restart) — and
of the quarantined ones, and the ways to reach an execution by its id: tell, request, offer a
dispatch, route a result or a lost attempt, tell a parent its child ended.

Reaching a dormant execution brings it back: its mailbox is made at once (commands queue in it)
and the supervisor replays its history into an actor on it, so two commands arriving together
bring it back once. After a restart the store's wake-up index is loaded in two parts: what is
needed at once before the server serves, the rest a page at a time behind it; meanwhile a
command for an id not known yet looks the execution up in the store, and a page skips every id
that came into memory while the index was loading (its entry may be stale).

How many running executions are roots (started without a parent, the ones
``max_active_executions`` counts) is derived here, as entries come and go; while the index
loads, the ones not loaded yet are not counted.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import suppress
from typing import Any

import trio

from ..actors import commands as cmd
from ..actors.clock import Clock
from ..actors.execution import execution_of, new_token
from ..actors.pool import Offer
from ..decide.transitions import UNKNOWN_TOKEN, Verdict
from ..errors import (
    ActorCrashedError,
    ActorGoneError,
    ExecutionFinishedError,
    ExecutionNotFoundError,
    ExecutionQueuedError,
    MailboxFullError,
    NotHereError,
    OrbitError,
    QuarantinedError,
)
from ..history.events import ErrorInfo, Event
from ..history.state import ExecutionState
from ..mailbox import Command, Mailbox, Reply, ReplyTo
from ..store.base import ExecutionRow, Store, WakeEntry
from .dormant import Dormant

Awaken = Callable[[str, Mailbox[Command], list[Event] | None], None]
"""Replay an execution into an actor on the given mailbox (its history, when already read)."""


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
        *,
        clock: Clock | None = None,
        awaken: Awaken | None = None,
    ) -> None:
        self._nursery = nursery
        self._store = store
        self._settle = settle
        self._capacity = capacity
        self._awaken = awaken
        self._live: dict[str, tuple[Mailbox[Command], bool]] = {}  # id -> (mailbox, is a root)
        self.dormant = Dormant(clock or Clock(), self.wake)
        self.quarantined: dict[str, str] = {}  # id -> the last error
        self._live_roots = 0
        self._loading: set[str] | None = None  # while the index loads: ids that were live

    # -- the address book -------------------------------------------------------------------
    def __len__(self) -> int:
        """How many executions run here, in memory or dormant."""
        return len(self._live) + len(self.dormant)

    def __contains__(self, execution_id: object) -> bool:
        return execution_id in self._live or execution_id in self.dormant

    def __iter__(self) -> Iterator[str]:
        return iter(self._live)

    @property
    def resident(self) -> int:
        """How many executions have an actor in memory."""
        return len(self._live)

    @property
    def roots(self) -> int:
        """How many running executions (in memory or dormant) were started without a parent."""
        return self._live_roots + self.dormant.roots

    def mailbox_if_live(self, execution_id: str) -> Mailbox[Command] | None:
        """The mailbox of an execution in memory, or None (a dormant one stays dormant)."""
        entry = self._live.get(execution_id)
        return entry[0] if entry is not None else None

    def mailbox(self, execution_id: str) -> Mailbox[Command] | None:
        """The mailbox of a running execution (a dormant one is brought back), or None."""
        entry = self._live.get(execution_id)
        if entry is not None:
            return entry[0]
        return self.wake(execution_id)

    def wake(
        self, execution_id: str, history: list[Event] | None = None
    ) -> Mailbox[Command] | None:
        """Bring a dormant execution back (its ``history`` when already read): its new mailbox,
        or None when it is not dormant."""
        root = self.dormant.pop(execution_id)
        if root is None or self._awaken is None:
            return None
        mailbox = self._register(execution_id, root)
        self._awaken(execution_id, mailbox, history)
        return mailbox

    # -- loading the wake-up index after a restart ------------------------------------------
    @property
    def loading(self) -> bool:
        """True while part of the wake-up index is still to be loaded."""
        return self._loading is not None

    def begin_loading(self, first: list[WakeEntry]) -> None:
        """Load what a restart needs at once (``first``); the rest follows by :meth:`load`."""
        self._loading = set()
        self.dormant.load(first)

    def load(self, page: list[WakeEntry]) -> None:
        """Add a page of the index, but not the ids known already or live meanwhile."""
        seen = self._loading if self._loading is not None else set()
        self.dormant.load(
            [e for e in page if e.execution_id not in self and e.execution_id not in seen]
        )

    def end_loading(self) -> None:
        """The whole index is loaded: every running execution is live or dormant here."""
        self._loading = None

    async def _not_yet_loaded(self, execution_id: str) -> Mailbox[Command] | None:
        """While the index loads: a running execution whose entry is not loaded yet is looked up
        in the store and brought back; None when it does not run (or the index is loaded)."""
        if self._loading is None or execution_id in self._loading:
            return None
        row = await self._store.execution(execution_id)
        mailbox = self.mailbox(execution_id)  # it may have come back meanwhile
        if mailbox is not None or row is None or row.status != "running":
            return mailbox
        if self._loading is None or execution_id in self._loading:
            return None
        self.dormant.add(execution_id, row.wake_at_ms, row.parent_id is None)
        return self.wake(execution_id)

    async def _tell_once_loaded(self, execution_id: str, command: Command) -> None:
        mailbox = await self._not_yet_loaded(execution_id)
        if mailbox is not None:
            self._deliver(mailbox, command)

    def add(self, state: ExecutionState) -> Mailbox[Command]:
        """A new mailbox for ``state``'s actor, registered under its id."""
        self.dormant.pop(state.execution_id)
        return self._register(state.execution_id, state.parent is None)

    def _register(self, execution_id: str, root: bool) -> Mailbox[Command]:
        mailbox: Mailbox[Command] = Mailbox(f"execution `{execution_id}`", self._capacity)
        previous = self._live.get(execution_id)
        if previous is not None and previous[1]:
            self._live_roots -= 1
        self._live[execution_id] = (mailbox, root)
        self._live_roots += root
        if self._loading is not None:
            self._loading.add(execution_id)
        return mailbox

    def remove(self, execution_id: str, mailbox: Mailbox[Command]) -> None:
        """Forget ``mailbox`` if it is still the one registered under ``execution_id``."""
        entry = self._live.get(execution_id)
        if entry is not None and entry[0] is mailbox:
            del self._live[execution_id]
            self._live_roots -= entry[1]

    def passivate(
        self, execution_id: str, mailbox: Mailbox[Command], wake_at_ms: int | None
    ) -> bool:
        """The actor on ``mailbox`` ended because its execution rests: it becomes dormant.
        False (nothing changes) when a command reached the mailbox meanwhile."""
        entry = self._live.get(execution_id)
        if entry is None or entry[0] is not mailbox or len(mailbox):
            return False
        self.remove(execution_id, mailbox)
        mailbox.close("passivated")
        self.dormant.add(execution_id, wake_at_ms, entry[1])
        return True

    # -- reaching an execution --------------------------------------------------------------
    def tell(self, execution_id: str, command: Command) -> None:
        """Send without waiting (nothing happens for an execution not live here); a full mailbox
        gets the command from a task that waits for room."""
        mailbox = self.mailbox(execution_id)
        if mailbox is not None:
            self._deliver(mailbox, command)
        elif self._loading is not None:
            self._nursery.start_soon(self._tell_once_loaded, execution_id, command)

    async def request(self, execution_id: str, command: Command) -> Any:
        """Send a request and wait for its answer. Raises QuarantinedError, the answer's error,
        ExecutionNotFoundError, ExecutionFinishedError, or NotHereError for an execution
        that runs but not here."""
        if execution_id in self.quarantined:
            raise QuarantinedError(f"execution `{execution_id}` is quarantined; resume it first")
        mailbox = self.mailbox(execution_id)
        if mailbox is None:
            mailbox = await self._not_yet_loaded(execution_id)
        if mailbox is not None:
            try:
                return await mailbox.request(command)
            except ActorCrashedError:
                raise
            except ActorGoneError:
                pass  # it finished meanwhile: the stored row says how
        row = await self.row(execution_id)
        if row.status == "queued":
            raise ExecutionQueuedError(execution_id)
        if row.status != "running":
            raise ExecutionFinishedError(row.status)
        raise NotHereError(execution_id)

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

    async def histories(self, execution_ids: list[str]) -> dict[str, list[Event]]:
        """The stored histories of several executions, read together."""
        return await self._store.histories(execution_ids) if execution_ids else {}

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
        if mailbox is None and execution_id:
            mailbox = await self._not_yet_loaded(execution_id)
        if mailbox is not None:
            command = cmd.ReportResult(token, worker_id, output, failure, reply=Reply())
            with suppress(ActorGoneError):
                verdict: Verdict = await mailbox.request(command)
                return verdict
        self._settle(token)
        return Verdict(token, False, UNKNOWN_TOKEN)

    def report_result_nowait(
        self, execution_id: str, token: str, worker_id: str | None, output: Any,
        failure: ErrorInfo | None, answered: Callable[[Verdict | OrbitError], None],
    ) -> bool:  # fmt: skip
        """:meth:`report_result` without waiting, for ``token`` of ``execution_id`` (the
        router read it from the token): ``answered`` is called with the verdict (or the refusal)
        once the execution has recorded the result. False, with nothing done, when only
        :meth:`report_result` can carry it (no live execution, a full mailbox)."""
        mailbox = self.mailbox(execution_id)
        if mailbox is None:
            return False

        def then(reply: ReplyTo[Verdict]) -> None:
            try:
                verdict = reply.outcome()
            except ActorGoneError:
                self._settle(token)
                verdict = Verdict(token, False, UNKNOWN_TOKEN)
            except OrbitError as exc:
                answered(exc)
                return
            answered(verdict)

        command = cmd.ReportResult(token, worker_id, output, failure, reply=ReplyTo(then))
        try:
            mailbox.send_nowait(command)
        except (MailboxFullError, ActorGoneError):
            return False
        return True

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
