"""A mailbox is a bounded trio memory channel of commands; a command may carry a one-shot
:class:`Reply`. A full mailbox pushes back (``send`` waits, ``send_nowait`` raises); a mailbox whose
actor is gone answers every request at once with :class:`ActorGoneError` — a request never hangs."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

import trio

from ..errors import ActorGoneError, MailboxFullError

T = TypeVar("T")
C = TypeVar("C", bound="Command")


class Reply(Generic[T]):
    """A one-shot answer: set once (a value or an error), awaited once."""

    __slots__ = ("_done", "_error", "_value")

    def __init__(self) -> None:
        self._done = trio.Event()
        self._value: Any = None
        self._error: BaseException | None = None

    @property
    def done(self) -> bool:
        """True once answered."""
        return self._done.is_set()

    def set(self, value: T) -> None:
        """Answer with ``value`` (a second answer is ignored)."""
        if not self._done.is_set():
            self._value = value
            self._done.set()

    def fail(self, error: BaseException) -> None:
        """Answer with an error (a second answer is ignored)."""
        if not self._done.is_set():
            self._error = error
            self._done.set()

    async def wait(self) -> T:
        """The answer; raises the error answered."""
        await self._done.wait()
        if self._error is not None:
            raise self._error
        result: T = self._value
        return result


@dataclass(eq=False)
class Command:
    """Base of every command; ``reply`` is set for requests."""

    reply: Reply[Any] | None = field(default=None, kw_only=True)


class Mailbox(Generic[C]):
    """The inbox of one actor. It outlives a crash of its actor (the supervisor respawns a new
    actor on the same mailbox) and is closed when the actor is done for good."""

    def __init__(self, name: str, capacity: int = 1024) -> None:
        self.name = name
        self._send, self._receive = trio.open_memory_channel[C](capacity if capacity else math.inf)
        self._closed_why: str | None = None

    @property
    def closed(self) -> bool:
        """True once closed."""
        return self._closed_why is not None

    async def send(self, command: C) -> None:
        """Queue ``command``, waiting while the mailbox is full."""
        try:
            await self._send.send(command)
        except (trio.ClosedResourceError, trio.BrokenResourceError):
            raise ActorGoneError(self.name, self._closed_why or "closed") from None

    def send_nowait(self, command: C) -> None:
        """Queue ``command`` or raise MailboxFullError / ActorGoneError at once."""
        try:
            self._send.send_nowait(command)
        except trio.WouldBlock:
            raise MailboxFullError(self.name) from None
        except (trio.ClosedResourceError, trio.BrokenResourceError):
            raise ActorGoneError(self.name, self._closed_why or "closed") from None

    async def request(self, command: C) -> Any:
        """Send a command that carries a reply and wait for the answer."""
        assert command.reply is not None
        await self.send(command)
        return await command.reply.wait()

    async def receive(self) -> C:
        """The next command (for the actor)."""
        return await self._receive.receive()

    def receive_nowait(self) -> C:
        """The next command if one is waiting; raises trio.WouldBlock otherwise."""
        return self._receive.receive_nowait()

    def close(self, why: str, error: BaseException | None = None) -> None:
        """Refuse new commands and answer every queued request with ``error`` (by default
        ActorGoneError saying ``why``)."""
        self._closed_why = why
        self._send.close()
        failure = error or ActorGoneError(self.name, why)
        while True:
            try:
                command = self._receive.receive_nowait()
            except (trio.WouldBlock, trio.EndOfChannel, trio.ClosedResourceError):
                break
            if command.reply is not None:
                command.reply.fail(failure)
        self._receive.close()
