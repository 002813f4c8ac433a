"""The narrow port of a store that several servers share (PostgreSQL): membership with a lease,
takeover of a dead server's executions, and an inbox carrying commands to an execution's owner.

A store that serves one server (SQLite, memory) has no :class:`Cluster`; the runtime then runs
exactly as it always did. With one, the runtime keeps its lease (:meth:`Cluster.renew` every
third of the lease time), takes over the executions of servers whose lease expired, and forwards
commands for executions it does not own. Fencing lives in the store's commit: once joined, a
commit for an execution another server owns is refused with
:class:`~orbit_actors.errors.OwnershipLostError`.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from typing import NamedTuple, Protocol

import trio

from .base import WakeEntry


@dataclass(frozen=True)
class ServerRecord:
    """One server sharing the store, as ``GET /v1/servers`` shows it."""

    server_id: str
    address: str
    host: str
    pid: int
    started_at_ms: int
    last_seen_ms: int  # its latest lease renewal
    lease_until_ms: int
    online: bool  # its lease has not expired
    executions: int  # running executions it owns


@dataclass(frozen=True)
class Owner:
    """Who owns an execution: the server's epoch and id, whether that server's lease holds,
    and whether the execution is still running."""

    epoch: int | None
    server_id: str | None
    alive: bool
    running: bool


@dataclass(frozen=True)
class Takeover:
    """What one takeover claimed: the dead servers, their running executions (now this
    server's, in wake-up index form) and the ids of inbox messages addressed to them that
    nobody took (now addressed to this server); and how long until the next lease of another
    member ends (``None`` when there is no other member), so the next takeover can be timed to
    it."""

    servers: list[str] = field(default_factory=list)
    executions: list[WakeEntry] = field(default_factory=list)
    messages: list[str] = field(default_factory=list)
    next_expiry_ms: int | None = None


class ReadyTask(NamedTuple):
    """A ready task unit in the shared queue: which unit, and the queue it waits in (its task,
    contract version and language, ``""`` for any)."""

    execution_id: str
    unit_key: str
    attempt: int
    task_name: str
    contract_version: str
    language: str


@dataclass(frozen=True)
class Message:
    """A command forwarded to this server: its id, the execution, the sender's epoch and the
    command as JSON text."""

    message_id: str
    execution_id: str
    from_epoch: int
    body: str


@dataclass(frozen=True)
class Collected:
    """What became of a forwarded command once its sender stops waiting: the owner's answer
    (JSON text), or whether the owner had taken it (its outcome is then unknown)."""

    reply: str | None
    taken: bool


class Cluster(Protocol):
    """Membership, takeover and the inbox of one server in a shared store (module docstring)."""

    server_id: str
    epoch: int
    lease_s: float

    async def renew(self) -> None:
        """Extend this server's lease; LeaseLostError when another server took it over."""
        ...

    async def take_over(self, *, orphans: bool = False) -> Takeover:
        """Claim the executions of every server whose lease expired (with ``orphans``, also
        running executions whose owner is no member at all: done once, at start)."""
        ...

    async def leave(self) -> None:
        """End this server's lease now, so the others take its executions over at once."""
        ...

    async def servers(self) -> list[ServerRecord]:
        """Every member, oldest first."""
        ...

    async def is_member(self, server_id: str) -> bool:
        """True while the server ``server_id`` is a member: once taken over it never is again
        (a restarted server joins under a new id)."""
        ...

    async def owner(self, execution_id: str) -> Owner | None:
        """Who owns ``execution_id`` (None when it is not stored)."""
        ...

    def listen(self) -> AbstractAsyncContextManager[trio.MemoryReceiveChannel[str]]:
        """Listen for messages addressed to this server: the channel yields their ids (those
        waiting already first) until the context ends."""
        ...

    def watch_schedules(self, changed: Callable[[], None]) -> None:
        """Call ``changed`` (on the trio loop, while listening) whenever a server changed the
        schedules, so every scheduler holds them all."""
        ...

    def watch_ready(self, ready: Callable[[], None]) -> None:
        """Call ``ready`` (on the trio loop, while listening) when a server published units."""
        ...

    def watch_lost(self, lost: Callable[[str], None]) -> None:
        """Call ``lost`` with a server's id when a server took that server over, and with
        ``""`` when such notices may have been missed (``lost`` then asks :meth:`is_member`)."""
        ...

    def watch_started(self, started: Callable[[str], None]) -> None:
        """Call ``started`` with the id of each queued execution a server promoted (started
        under its concurrency key); ``""`` when any may have been (notices were missed)."""
        ...

    def watch_cancels(self, cancel: Callable[[dict[str, str]], None]) -> None:
        """Call ``cancel`` with tokens (token → reason) some server cancelled elsewhere: the
        ones a worker connected here holds are to be stopped."""
        ...

    async def cancel_elsewhere(self, tokens: dict[str, str]) -> None:
        """Tell every server to stop the workers holding ``tokens`` (token → reason), if any
        worker connected to it does: a unit claimed through the shared queue runs on another
        server's worker. Fire and forget: a cancel that does not arrive leaves the result to
        be refused as stale when it comes."""
        ...

    async def share(self, publish: list[ReadyTask], withdraw: list[ReadyTask]) -> None:
        """Publish units to the shared queue and withdraw others, in one transaction."""
        ...

    async def claim_ready(self, queues: list[tuple[str, str, str]], limit: int) -> list[ReadyTask]:
        """Claim up to ``limit`` units other servers published, from ``queues``."""
        ...

    async def send(self, to_epoch: int, execution_id: str, body: str) -> str:
        """Put a command in the inbox of the server of epoch ``to_epoch``; returns its id."""
        ...

    async def wait_reply(self, message_id: str, timeout: float) -> bool:
        """Wait until the owner answered ``message_id`` (False at the timeout)."""
        ...

    async def collect(self, message_id: str) -> Collected:
        """Take the message out of the inbox with its answer, if any."""
        ...

    async def take(self, message_id: str) -> Message | None:
        """Claim a message addressed to this server (None if it was taken or withdrawn)."""
        ...

    async def answer(self, message: Message, reply: str) -> None:
        """Record the answer to ``message`` and wake its sender."""
        ...
