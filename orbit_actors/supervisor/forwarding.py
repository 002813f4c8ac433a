"""Commands for an execution another server owns: forwarded to the owner's inbox and answered
once the owner has committed.

The sender writes the command to the inbox (:class:`Envelope`, JSON) addressed to the owner's
epoch and waits for the answer (:class:`Answer`), woken by ``NOTIFY``. The owner claims each
message addressed to it, carries the command out through the same path a local call takes, and
writes the answer. A sender that waits in vain removes its message: if the owner never took it,
it was not carried out (:class:`~orbit_actors.errors.OwnerUnavailableError` says to try again);
if the owner took it, its outcome is unknown and the error says so. An owner that finds the
execution moved (taken over meanwhile) answers ``moved`` and the sender asks the new owner.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Annotated, Any, Literal

import trio
from pydantic import BaseModel, ConfigDict, Field

from ..errors import (
    ExecutionNotFoundError,
    ForwardedError,
    NotHereError,
    OrbitError,
    OwnerUnavailableError,
    StorageError,
)
from ..history.events import ErrorInfo
from ..store.cluster import Cluster, Message, Owner

log = logging.getLogger("orbit.cluster")
MOVES = 3  # how many times a sender follows an execution that moved while it asked
ANSWER_RETRY_FIRST_S, ANSWER_RETRY_MAX_S = 0.1, 5.0  # an answer the database did not take
ANSWER_RETRY_FOR_S = 90.0  # a sender waits its lease, a margin and a wait (60 s at most)


class _Command(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class SignalCommand(_Command):
    """Deliver a signal (answered with its seq)."""

    kind: Literal["signal"] = "signal"
    name: str
    payload: Any = None


class CancelCommand(_Command):
    """Cancel the execution."""

    kind: Literal["cancel"] = "cancel"
    reason: str


class TerminateCommand(_Command):
    """Terminate the execution."""

    kind: Literal["terminate"] = "terminate"
    reason: str


class PauseCommand(_Command):
    """Pause the execution."""

    kind: Literal["pause"] = "pause"
    reason: str | None = None


class UnpauseCommand(_Command):
    """Unpause the execution."""

    kind: Literal["unpause"] = "unpause"


class ResumeCommand(_Command):
    """Resume a quarantined execution."""

    kind: Literal["resume"] = "resume"


class ResultCommand(_Command):
    """A worker's result for a token of the execution (answered with the verdict's fields)."""

    kind: Literal["result"] = "result"
    token: str
    worker_id: str | None = None
    output: Any = None
    failure: ErrorInfo | None = None


class OfferCommand(_Command):
    """Dispatch a unit another server claimed to that server's session (answered with the task
    to push, or None when the offer is stale)."""

    kind: Literal["offer"] = "offer"
    key: str
    attempt: int
    token: str
    worker_id: str
    session_id: str


class UncertainCommand(_Command):
    """The session that held ``token`` (on the sending server) was lost."""

    kind: Literal["uncertain"] = "uncertain"
    token: str
    reason: str


class WaitCommand(_Command):
    """Wait for the execution to finish (answered with its result)."""

    kind: Literal["wait"] = "wait"
    timeout: float


class MigrateCommand(_Command):
    """Migrate the execution from ``from_version`` to the definition ``definition_hash`` if
    its history is compatible (answered with the outcome's fields)."""

    kind: Literal["migrate"] = "migrate"
    from_version: str
    definition_hash: str


Forwarded = Annotated[
    SignalCommand
    | CancelCommand
    | TerminateCommand
    | PauseCommand
    | UnpauseCommand
    | ResumeCommand
    | ResultCommand
    | WaitCommand
    | OfferCommand
    | UncertainCommand
    | MigrateCommand,
    Field(discriminator="kind"),
]


class Envelope(BaseModel):
    """One forwarded command as the inbox holds it."""

    command: Forwarded


class Answer(BaseModel):
    """The owner's answer: a value, an error (code, status, message), or ``moved``."""

    value: Any = None
    code: str | None = None
    status: int = 500
    message: str = ""
    moved: bool = False


Handle = Callable[[str, Any], Awaitable[Any]]
"""Carry out a forwarded command on this server: (execution id, command) → a JSON value."""


class Forwarder:
    """Sends commands to the owners of executions (see the module docstring)."""

    def __init__(self, cluster: Cluster, timeout: float) -> None:
        self._cluster = cluster
        self.timeout = timeout
        self._waits: dict[str, set[trio.CancelScope]] = {}  # owner's server id → waits it answers

    def lost(self, server_id: str) -> None:
        """``server_id`` was taken over (``""``: any server may have been): the forwarded waits
        it was answering stop waiting for it (their caller asks the new owner)."""
        if server_id:
            scopes = list(self._waits.get(server_id, ()))
        else:
            scopes = [scope for waits in self._waits.values() for scope in waits]
        for scope in scopes:
            scope.cancel()

    async def owner_elsewhere(self, execution_id: str) -> Owner | None:
        """The owner of a running execution, unless there is none or it is this server."""
        owner = await self._cluster.owner(execution_id)
        if owner is None or not owner.running or owner.epoch == self._cluster.epoch:
            return None
        return owner

    async def forward(self, owner: Owner, execution_id: str, command: Any, extra: float = 0) -> Any:
        """Send ``command`` to ``owner`` and return its answer's value (its error raised as a
        ForwardedError); follows the execution if it moved meanwhile."""
        body = Envelope(command=command).model_dump_json()
        follow = isinstance(command, WaitCommand)  # it changes nothing: asked again elsewhere
        for _ in range(MOVES):
            answer = await self._ask(owner, execution_id, body, self.timeout + extra, follow)
            if not answer.moved:
                if answer.code is not None:
                    raise ForwardedError(answer.code, answer.status, answer.message)
                return answer.value
            found = await self._cluster.owner(execution_id)
            if found is None:
                raise ExecutionNotFoundError()
            owner = found
        raise OwnerUnavailableError(
            f"execution `{execution_id}` kept moving between servers; try again"
        )

    async def _ask(
        self, owner: Owner, execution_id: str, body: str, timeout: float, follow: bool = False
    ) -> Answer:
        """Send ``body`` to ``owner`` and wait for its answer; with ``follow``, no longer than
        until the owner is taken over (then the outcome is unknown, as at the timeout)."""
        assert owner.epoch is not None
        cluster = self._cluster
        message_id = await cluster.send(owner.epoch, execution_id, body)
        with trio.CancelScope(shield=True):  # the message must not be left behind
            if follow and owner.server_id is not None:
                await self._reply_unless_lost(owner.server_id, message_id, timeout)
            else:
                await cluster.wait_reply(message_id, timeout)
            collected = await cluster.collect(message_id)
        if collected.reply is not None:
            return Answer.model_validate_json(collected.reply)
        name = f"server `{owner.server_id}`"
        if collected.taken:
            raise OwnerUnavailableError(
                f"{name}, the owner of execution `{execution_id}`, took the command but did not "
                f"answer within {timeout:g} s; whether it was carried out is unknown: read the "
                "execution's history before trying again"
            )
        raise OwnerUnavailableError(
            f"execution `{execution_id}` is owned by {name}, which did not answer within "
            f"{timeout:g} s; the command was not delivered. If that server stopped, another "
            "takes its executions over once its lease expires: try again"
        )

    async def _reply_unless_lost(self, server_id: str, message_id: str, timeout: float) -> None:
        scope = trio.CancelScope()
        waits = self._waits.setdefault(server_id, set())
        waits.add(scope)
        try:
            with scope:
                await self._cluster.wait_reply(message_id, timeout)
        finally:
            waits.discard(scope)
            if not waits:
                self._waits.pop(server_id, None)


async def serve_inbox(
    cluster: Cluster,
    handle: Handle,
    *,
    task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Carry out the commands forwarded to this server, each in a task of its own."""
    async with cluster.listen() as messages, trio.open_nursery() as nursery:
        task_status.started()
        async for message_id in messages:
            nursery.start_soon(_serve_one, cluster, handle, message_id)


async def _serve_one(cluster: Cluster, handle: Handle, message_id: str) -> None:
    try:
        message = await cluster.take(message_id)
        if message is None:  # withdrawn by its sender, or taken already
            return
        answer = (await _carry_out(handle, message)).model_dump_json()
        await _answer(cluster, message, answer)
    except StorageError as exc:  # the sender times out and says the outcome is unknown
        log.warning("could not serve forwarded message %s: %s", message_id, exc)


async def _answer(cluster: Cluster, message: Message, answer: str) -> None:
    """Write the answer, again while the database is away (failing over) for as long as a
    sender may still wait: a lost answer leaves the sender with an unknown outcome although the
    command was carried out. (Answering a message its sender withdrew changes nothing.)"""
    delay, given_up = ANSWER_RETRY_FIRST_S, trio.current_time() + ANSWER_RETRY_FOR_S
    while True:
        try:
            await cluster.answer(message, answer)
            return
        except StorageError as exc:
            if trio.current_time() + delay > given_up:
                raise
            log.warning("could not answer forwarded message %s (trying again in %.1f s): %s",
                        message.message_id, delay, exc)  # fmt: skip
        await trio.sleep(delay)  # a backoff: the database is away
        delay = min(ANSWER_RETRY_MAX_S, delay * 2)


async def _carry_out(handle: Handle, message: Message) -> Answer:
    try:
        command = Envelope.model_validate_json(message.body).command
        return Answer(value=await handle(message.execution_id, command))
    except NotHereError:
        return Answer(moved=True)
    except OrbitError as exc:
        return Answer(code=exc.code, status=exc.status, message=exc.message)
    except Exception:
        log.exception("a forwarded command for execution %s failed", message.execution_id)
        return Answer(code="INTERNAL", message="the owning server failed to carry it out")
