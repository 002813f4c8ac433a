"""A mailbox is a bounded queue of commands for one actor; a command may carry a one-shot
:class:`Reply`. A full mailbox pushes back (``send`` waits, ``send_nowait`` raises); a mailbox whose
actor is gone answers every request at once with :class:`ActorGoneError` — a request never hangs.

Both are built on trio's low-level wait/reschedule rather than a memory channel and an
``Event``: an execution sends and answers several commands per step, and a mailbox has exactly
one receiver (its actor) and a reply exactly one waiter, which is all the machinery they need.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

import trio

from ..errors import ActorGoneError, MailboxFullError

T = TypeVar("T")
C = TypeVar("C", bound="Command")


class Reply(Generic[T]):
    """A one-shot answer: set once (a value or an error), awaited by one task."""

    __slots__ = ("_done", "_error", "_value", "_waiter")

    def __init__(self) -> None:
        self._done = False
        self._value: Any = None
        self._error: BaseException | None = None
        self._waiter: trio.lowlevel.Task | None = None

    @property
    def done(self) -> bool:
        """True once answered."""
        return self._done

    def set(self, value: T) -> None:
        """Answer with ``value`` (a second answer is ignored)."""
        if not self._done:
            self._value = value
            self._finish()

    def fail(self, error: BaseException) -> None:
        """Answer with an error (a second answer is ignored)."""
        if not self._done:
            self._error = error
            self._finish()

    async def wait(self) -> T:
        """The answer; raises the error answered. Cancellable while unanswered."""
        if self._done:
            await trio.lowlevel.checkpoint()
        else:
            self._waiter = trio.lowlevel.current_task()
            await trio.lowlevel.wait_task_rescheduled(self._abandon)
        if self._error is not None:
            raise self._error
        result: T = self._value
        return result

    def _finish(self) -> None:
        self._done = True
        waiter, self._waiter = self._waiter, None
        if waiter is not None:
            trio.lowlevel.reschedule(waiter)

    def _abandon(self, raise_cancel: object) -> trio.lowlevel.Abort:
        self._waiter = None
        return trio.lowlevel.Abort.SUCCEEDED


class ReplyTo(Reply[T]):
    """A one-shot answer that no task awaits: ``then`` is called with it, in the task that
    answers, once it is set. A result handed on this way costs no task and no task switch of
    its own (the gateway answers a worker's result this way)."""

    __slots__ = ("_then",)

    def __init__(self, then: Callable[[ReplyTo[T]], None]) -> None:
        self._done = False  # Reply's fields set here: one per result, no super() call
        self._value: Any = None
        self._error: BaseException | None = None
        self._waiter: trio.lowlevel.Task | None = None
        self._then = then

    def outcome(self) -> T:
        """The answer; raises the error answered."""
        if self._error is not None:
            raise self._error
        result: T = self._value
        return result

    def _finish(self) -> None:
        self._done = True
        self._then(self)


@dataclass(eq=False)
class Command:
    """Base of every command; ``reply`` is set for requests."""

    reply: Reply[Any] | None = field(default=None, kw_only=True)


class Mailbox(Generic[C]):
    """The inbox of one actor. It outlives a crash of its actor (the supervisor respawns a new
    actor on the same mailbox) and is closed when the actor is done for good."""

    __slots__ = ("_capacity", "_closed_why", "_queue", "_receiver", "_senders", "name")

    def __init__(self, name: str, capacity: int = 1024) -> None:
        self.name = name
        self._queue: deque[C] = deque()
        self._capacity = capacity if capacity else math.inf
        self._receiver: trio.lowlevel.Task | None = None  # the actor, while it waits
        self._senders: trio.lowlevel.ParkingLot | None = None  # made when the box first fills
        self._closed_why: str | None = None

    @property
    def closed(self) -> bool:
        """True once closed."""
        return self._closed_why is not None

    def __len__(self) -> int:
        """How many commands wait to be received."""
        return len(self._queue)

    @property
    def ready(self) -> bool:
        """True when :meth:`receive_nowait` answers at once: a command waits, or the mailbox
        is closed (it raises :class:`ActorGoneError`)."""
        return bool(self._queue) or self._closed_why is not None

    async def send(self, command: C) -> None:
        """Queue ``command``, waiting while the mailbox is full."""
        await trio.lowlevel.checkpoint_if_cancelled()
        await self._room()
        self._put(command)
        await trio.lowlevel.cancel_shielded_checkpoint()

    def send_nowait(self, command: C) -> None:
        """Queue ``command`` or raise MailboxFullError / ActorGoneError at once."""
        if len(self._queue) >= self._capacity and self._closed_why is None:
            raise MailboxFullError(self.name)
        self._put(command)

    async def request(self, command: C) -> Any:
        """Send a command that carries a reply and wait for the answer."""
        assert command.reply is not None
        await trio.lowlevel.checkpoint_if_cancelled()
        await self._room()
        self._put(command)
        return await command.reply.wait()

    async def receive(self) -> C:
        """The next command (for the actor)."""
        if self._queue:
            await trio.lowlevel.checkpoint_if_cancelled()
            await trio.lowlevel.cancel_shielded_checkpoint()
        else:  # the wait itself raises a cancel pending when it parks (trio delivers it then)
            self._receiver = trio.lowlevel.current_task()
            await trio.lowlevel.wait_task_rescheduled(self._abandon)
        return self.receive_nowait()

    def wake_on_command(self, task: trio.lowlevel.Task) -> None:
        """Reschedule ``task`` (the actor, parked in a wait of its own) when the next command
        comes or the mailbox closes, as :meth:`receive` would; the abort of its wait must call
        :meth:`forget_receiver`."""
        self._receiver = task

    def forget_receiver(self) -> None:
        """The actor's wait ended otherwise (it was cancelled): no command wakes it."""
        self._receiver = None

    def receive_nowait(self) -> C:
        """The next command if one is waiting; raises trio.WouldBlock otherwise."""
        if not self._queue:
            if self._closed_why is not None:
                raise ActorGoneError(self.name, self._closed_why)
            raise trio.WouldBlock
        command = self._queue.popleft()
        if self._senders is not None and len(self._queue) < self._capacity:
            self._senders.unpark()
        return command

    def close(self, why: str, error: BaseException | None = None) -> None:
        """Refuse new commands and answer every queued request with ``error`` (by default
        ActorGoneError saying ``why``)."""
        self._closed_why = why
        failure = error or ActorGoneError(self.name, why)
        while self._queue:
            command = self._queue.popleft()
            if command.reply is not None:
                command.reply.fail(failure)
        if self._senders is not None:
            self._senders.unpark_all()  # each finds the box closed
        receiver, self._receiver = self._receiver, None
        if receiver is not None:  # it finds the box closed and empty: ActorGoneError
            trio.lowlevel.reschedule(receiver)

    async def _room(self) -> None:
        while len(self._queue) >= self._capacity and self._closed_why is None:
            if self._senders is None:
                self._senders = trio.lowlevel.ParkingLot()
            await self._senders.park()

    def _put(self, command: C) -> None:
        if self._closed_why is not None:
            raise ActorGoneError(self.name, self._closed_why)
        self._queue.append(command)
        receiver, self._receiver = self._receiver, None
        if receiver is not None:
            trio.lowlevel.reschedule(receiver)

    def _abandon(self, raise_cancel: object) -> trio.lowlevel.Abort:
        self._receiver = None
        return trio.lowlevel.Abort.SUCCEEDED
