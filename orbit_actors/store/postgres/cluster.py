"""Shared mode on PostgreSQL: the :class:`~orbit_actors.store.cluster.Cluster` of one server.

Membership (renewals, takeovers) runs on a connection of its own, so a renewal never waits
behind a large batch of the group writer; inbox messages run on another. ``LISTEN`` runs on a
third, in a thread of its own that blocks on the socket and hands each notification to the trio
loop: messages addressed to this server go to the channel :meth:`PostgresCluster.listen`
yields, answers to the messages it sent wake their senders, and a change of the schedules (by
any server) calls the callback given to :meth:`PostgresCluster.watch_schedules`.
"""

from __future__ import annotations

import contextlib
import json
import logging
import secrets
import threading
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from functools import partial
from typing import TypeVar

import psycopg
import trio

from ...errors import StorageError
from ..cluster import Collected, Message, Owner, ReadyTask, ServerRecord, Takeover
from . import membership as sql
from . import queue
from .flow_slots import STARTED_CHANNEL
from .queue import READY_CHANNEL
from .records import SCHEDULES_CHANGED
from .schema import Conn, connect, one_line

T = TypeVar("T")
MESSAGE_BUFFER = 10_000
CANCEL_CHANNEL = (
    "orbit_cancel"  # tokens some server cancelled: stop them if a worker here holds one
)
MAX_PAYLOAD = 7_000
RECONNECT_FIRST_S, RECONNECT_MAX_S = 0.1, 5.0  # a dropped LISTEN connection is opened again
log = logging.getLogger("orbit.cluster")


class _Connection:
    """One connection used by one trio task at a time, each call in a worker thread; a broken
    connection is replaced by the next call."""

    def __init__(self, url: str, name: str, setup: Callable[[Conn], None]) -> None:
        self._url = url
        self._name = name
        self._setup = setup
        self._conn: Conn | None = None
        self._lock = trio.Lock()

    async def run(self, work: Callable[[Conn], T]) -> T:
        async with self._lock:
            return await trio.to_thread.run_sync(self._run, work)

    def _run(self, work: Callable[[Conn], T]) -> T:
        try:
            try:
                return self._attempt(work)
            except psycopg.OperationalError:
                if self._conn is None or not self._conn.broken:
                    raise
            # the connection broke while idle (the database restarted or failed over, and a
            # URL listing several hosts now leads to another): once more, on a new connection
            return self._attempt(work)
        except psycopg.Error as exc:
            raise StorageError(f"{self._name}: {one_line(exc)}") from None

    def _attempt(self, work: Callable[[Conn], T]) -> T:
        if self._conn is None or self._conn.closed or self._conn.broken:
            self._conn = connect(self._url, autocommit=True)
            self._setup(self._conn)
        return work(self._conn)

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()


class PostgresCluster:
    """Membership, takeover and inbox of one server (see the module docstring). Open it with
    :meth:`~orbit_actors.store.postgres.PostgresStore.join`."""

    def __init__(self, url: str, name: str, server_id: str, lease_s: float) -> None:
        self._url = url
        self._name = name
        self.server_id = server_id
        self.epoch = 0
        self.lease_s = lease_s
        lock_ms = max(100, int(lease_s * 1000 / 3))
        self._membership = _Connection(url, name, partial(_set, f"SET lock_timeout = {lock_ms}"))
        self._inbox = _Connection(url, name, lambda c: None)
        self._replies: dict[str, trio.Event] = {}
        self._schedules_changed: Callable[[], None] = lambda: None
        self._ready: Callable[[], None] = lambda: None
        self._lost: Callable[[str], None] = lambda server_id: None
        self._cancels: Callable[[dict[str, str]], None] = lambda tokens: None
        self._started: Callable[[str], None] = lambda execution_id: None
        self._queue = _Connection(url, name, lambda c: None)

    @property
    def lease_ms(self) -> int:
        """The lease time in milliseconds."""
        return int(self.lease_s * 1000)

    async def join(self, address: str) -> None:
        """Become a member with a fresh lease (and so an epoch)."""
        self.epoch = await self._membership.run(
            lambda c: sql.join(c, self.server_id, address, self.lease_ms)
        )

    async def renew(self) -> None:
        """Extend the lease; LeaseLostError when another server took it over."""
        await self._membership.run(lambda c: sql.renew(c, self.epoch, self.lease_ms))

    async def take_over(self, *, orphans: bool = False) -> Takeover:
        """Claim what servers whose lease expired owned."""
        return await self._membership.run(
            lambda c: sql.take_over(c, self.server_id, self.epoch, orphans)
        )

    async def leave(self) -> None:
        """End the lease now."""
        await self._membership.run(lambda c: sql.leave(c, self.epoch))

    async def servers(self) -> list[ServerRecord]:
        """Every member, oldest first."""
        return await self._membership.run(sql.servers)

    async def is_member(self, server_id: str) -> bool:
        """True while ``server_id`` is a member (not yet taken over)."""
        return await self._membership.run(lambda c: sql.is_member(c, server_id))

    async def owner(self, execution_id: str) -> Owner | None:
        """Who owns ``execution_id``."""
        return await self._inbox.run(lambda c: sql.owner(c, execution_id))

    def close(self) -> None:
        """Close the connections (the server is leaving)."""
        self._membership.close()
        self._inbox.close()
        self._queue.close()

    # -- the inbox ------------------------------------------------------------------------
    @asynccontextmanager
    async def listen(self) -> AsyncIterator[trio.MemoryReceiveChannel[str]]:
        """LISTEN for this server's messages and answers; yields the channel of message ids."""
        send, receive = trio.open_memory_channel[str](MESSAGE_BUFFER)
        listener = _Listener(self._url, self.epoch, self._notified(send))
        await listener.start()
        try:
            for message_id in await self._inbox.run(lambda c: sql.pending(c, self.epoch)):
                send.send_nowait(message_id)
            yield receive
        finally:
            with trio.CancelScope(shield=True):
                await listener.stop(self._inbox)

    def _notified(self, messages: trio.MemorySendChannel[str]) -> Callable[[str, str], None]:
        inbox, replies = sql.inbox_channel(self.epoch), sql.reply_channel(self.epoch)

        def notified(channel: str, payload: str) -> None:  # on the trio loop
            if channel == inbox:
                with contextlib.suppress(trio.WouldBlock, trio.ClosedResourceError):
                    messages.send_nowait(payload)  # a full buffer: taken from the table later
            elif channel == replies and payload in self._replies:
                self._replies[payload].set()
            elif channel == READY_CHANNEL:
                self._ready()
            elif channel == sql.LOST_CHANNEL:
                self._lost(payload)
            elif channel == SCHEDULES_CHANGED:
                self._schedules_changed()
            elif channel == CANCEL_CHANNEL:
                self._cancels(json.loads(payload))
            elif channel == STARTED_CHANNEL:
                self._started(payload)

        return notified

    def watch_cancels(self, cancel: Callable[[dict[str, str]], None]) -> None:
        """Call ``cancel`` with the tokens a server cancelled elsewhere."""
        self._cancels = cancel

    async def cancel_elsewhere(self, tokens: dict[str, str]) -> None:
        """NOTIFY every server of ``tokens`` (token → reason), in payloads under the limit."""
        for payload in _payloads(tokens):
            await self._inbox.run(partial(_notify, CANCEL_CHANNEL, payload))

    def watch_started(self, started: Callable[[str], None]) -> None:
        """Call ``started`` with the id of each queued execution a server promoted (``""``:
        any may have been, while the LISTEN connection was down)."""
        self._started = started

    def watch_ready(self, ready: Callable[[], None]) -> None:
        """Call ``ready`` when a server published units to the shared queue."""
        self._ready = ready

    def watch_lost(self, lost: Callable[[str], None]) -> None:
        """Call ``lost`` with the id of each server another one took over."""
        self._lost = lost

    async def share(self, publish: list[ReadyTask], withdraw: list[ReadyTask]) -> None:
        """Publish and withdraw units of the shared queue."""
        await self._queue.run(lambda c: queue.change(c, self.epoch, publish, withdraw))

    async def claim_ready(self, queues: list[tuple[str, str, str]], limit: int) -> list[ReadyTask]:
        """Claim others' units for free sessions here."""
        return await self._queue.run(lambda c: queue.claim(c, self.epoch, queues, limit))

    def watch_schedules(self, changed: Callable[[], None]) -> None:
        """Call ``changed`` (on the trio loop) whenever a server changed the schedules."""
        self._schedules_changed = changed

    async def send(self, to_epoch: int, execution_id: str, body: str) -> str:
        """Put a command in another server's inbox; returns its id."""
        message_id = secrets.token_hex(12)
        self._replies[message_id] = trio.Event()
        await self._inbox.run(
            lambda c: sql.send(c, message_id, to_epoch, self.epoch, execution_id, body)
        )
        return message_id

    async def wait_reply(self, message_id: str, timeout: float) -> bool:
        """Wait for the owner's answer to ``message_id``."""
        event = self._replies.get(message_id)
        if event is None:
            return False
        with trio.move_on_after(timeout):
            await event.wait()
        return event.is_set()

    async def collect(self, message_id: str) -> Collected:
        """Take the message out of the inbox with its answer, if any."""
        self._replies.pop(message_id, None)
        return await self._inbox.run(lambda c: sql.collect(c, message_id))

    async def take(self, message_id: str) -> Message | None:
        """Claim a message addressed to this server."""
        return await self._inbox.run(lambda c: sql.take(c, message_id, self.epoch))

    async def answer(self, message: Message, reply: str) -> None:
        """Record the answer and wake its sender."""
        await self._inbox.run(lambda c: sql.answer(c, message, reply))


def _payloads(tokens: dict[str, str]) -> list[str]:
    """``tokens`` as JSON objects of at most :data:`MAX_PAYLOAD` bytes each (NOTIFY's limit is
    8,000); a reason is cut to 200 characters."""
    payloads: list[str] = []
    part: dict[str, str] = {}
    for token, reason in tokens.items():
        part[token] = reason[:200]
        if len(json.dumps(part).encode()) > MAX_PAYLOAD:
            del part[token]
            payloads.append(json.dumps(part))
            part = {token: reason[:200]}
    if part:
        payloads.append(json.dumps(part))
    return payloads


def _notify(channel: str, payload: str, conn: Conn) -> None:
    conn.execute("SELECT pg_notify(%s, %s)", (channel, payload))


def _set(statement: str, conn: Conn) -> None:
    conn.execute(statement.encode())


class _Listener:
    """The LISTEN connection on a thread of its own (it blocks on the socket). It ends when a
    notification on its stop channel arrives, or :meth:`stop` is called. A connection the
    database drops is opened again (after 0.1 s, doubling up to 5 s), and what may have been
    missed meanwhile is delivered as if notified: the messages waiting in this server's inbox,
    the answers to the messages it sent, a change of the ready queue and of the schedules,
    and a takeover of unknown servers (their handlers look again)."""

    def __init__(self, url: str, epoch: int, notified: Callable[[str, str], None]) -> None:
        self._url = url
        self._epoch = epoch
        self._notified = notified
        self._stop_channel = f"orbit_stop_{epoch}"
        self._token = trio.lowlevel.current_trio_token()
        self._ready = threading.Event()
        self._stopping = threading.Event()
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="orbit-listener", daemon=True)

    async def start(self) -> None:
        self._thread.start()
        await trio.to_thread.run_sync(self._ready.wait)
        if self._error is not None:
            raise self._error

    async def stop(self, inbox: _Connection) -> None:
        self._stopping.set()
        with contextlib.suppress(StorageError):
            await inbox.run(lambda c: c.execute(f"NOTIFY {self._stop_channel}".encode()))
        await trio.to_thread.run_sync(self._thread.join, 5.0)

    def _run(self) -> None:
        try:
            conn = self._open()
        except BaseException as exc:
            self._error = exc
            self._ready.set()
            return
        self._ready.set()
        with contextlib.suppress(trio.RunFinishedError):  # the server's loop is gone
            listening: Conn | None = conn
            while listening is not None and not self._listen(listening):
                listening = self._reconnected()

    def _reconnected(self) -> Conn | None:
        """Open the LISTEN connection again, waiting longer each time; None once stopping."""
        delay = RECONNECT_FIRST_S
        while not self._stopping.wait(delay):
            conn = self._reopen()
            if conn is not None:
                log.warning("the LISTEN connection to PostgreSQL is back")
                return conn
            delay = min(delay * 2, RECONNECT_MAX_S)
        return None

    def _open(self) -> Conn:
        conn = connect(self._url, autocommit=True)
        for channel in (sql.inbox_channel(self._epoch), sql.reply_channel(self._epoch),
                        SCHEDULES_CHANGED, READY_CHANNEL, sql.LOST_CHANNEL, CANCEL_CHANNEL,
                        STARTED_CHANNEL, self._stop_channel):  # fmt: skip
            conn.execute(f"LISTEN {channel}".encode())
        return conn

    def _reopen(self) -> Conn | None:
        """A new LISTEN connection that has caught up, or None while the database is away."""
        conn: Conn | None = None
        try:
            conn = self._open()
            self._catch_up(conn)
        except (psycopg.Error, StorageError):  # connect() says StoreOpenError
            if conn is not None:
                conn.close()
            return None
        return conn

    def _listen(self, conn: Conn) -> bool:
        """Hand each notification to the trio loop; True when told to stop, False when the
        connection broke."""
        try:
            with conn:
                for notify in conn.notifies():
                    if notify.channel == self._stop_channel:
                        return True
                    self._token.run_sync_soon(self._notified, notify.channel, notify.payload)
        except psycopg.Error as exc:
            if self._stopping.is_set():
                return True
            log.warning("the LISTEN connection to PostgreSQL broke (%s); opening it again", exc)
            return False
        return True

    def _catch_up(self, conn: Conn) -> None:
        """Deliver what may have been notified while the connection was down."""
        missed = [(sql.inbox_channel(self._epoch), m) for m in sql.pending(conn, self._epoch)]
        missed += [(sql.reply_channel(self._epoch), m) for m in sql.answered(conn, self._epoch)]
        missed += [(READY_CHANNEL, ""), (SCHEDULES_CHANGED, ""), (sql.LOST_CHANNEL, "")]
        missed += [(STARTED_CHANNEL, "")]
        for channel, payload in missed:
            self._token.run_sync_soon(self._notified, channel, payload)
