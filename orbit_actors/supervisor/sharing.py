"""The task queue several servers share: a worker connected to any server gets tasks of any
execution.

The owner of an execution still decides and records everything about it; what is shared is
only *which units wait*. A unit its owner cannot hand to a session of its own right away is
published (``ready_tasks``, one batch per flush, a NOTIFY per batch). A server with a session
that has room and nothing of its own queued claims published units of other servers (``FOR
UPDATE SKIP LOCKED``), puts them in its own pool, and when the pool matches one to a session it
forwards the match to the owner (``RemoteOffer``): the owner commits ``StepDispatched`` naming
that session and answers with the task, which this server pushes. The worker's result comes
back to this server and is forwarded to the owner; a session lost here makes its attempts
uncertain at their owners. When a server is taken over, every owner marks the attempts it had
dispatched to that server's sessions uncertain, so they are redelivered.

That notice (``lost``) comes once, and an offer can cross it: a server that claimed a unit may
die before the owner carries its offer out (its offers left in a dead owner's inbox are
readdressed with the rest to the server taking over). So an owner that dispatched a unit to a
session of another server asks, once the token is noted, whether that server is still a member:
if not, the attempt is uncertain at once; if so, its takeover comes later and its notice finds
the token noted.

A unit the owner hands to a session of its own after publishing it is withdrawn; one another
server claimed meanwhile is refused by the owner as a stale offer. Nothing here is needed for
correctness of an execution — its history is written by its owner only — only for where its
tasks can run.
"""

from __future__ import annotations

import logging
from typing import Any

import trio

from ..actors import commands as cmd
from ..actors.clock import Clock
from ..actors.execution import new_token
from ..actors.pool import Offer, QueueKey, WorkerPool, task_model
from ..errors import OrbitError, OwnerUnavailableError, StorageError
from ..mailbox import Reply
from ..store.cluster import Cluster, ReadyTask
from ..wire.messages import Task
from ..wire.server_fields import TaskFields
from . import forwarding as fw
from .forwarding import Forwarder
from .registry import Registry
from .router import Remote, Router

log = logging.getLogger("orbit.cluster")
CLAIM_BATCH = 256
FLUSH_RETRY_FIRST_S, FLUSH_RETRY_MAX_S = 0.1, 5.0  # a failed publication is tried again
LOST_SERVER = "the server its worker was connected to stopped"


class TaskSharing(Remote):
    """One server's part in the shared task queue (see the module docstring)."""

    def __init__(
        self, cluster: Cluster, forwarder: Forwarder, router: Router, registry: Registry,
        pool: WorkerPool, clock: Clock,
    ) -> None:  # fmt: skip
        self._cluster = cluster
        self._forwarder = forwarder
        self._router = router
        self._registry = registry
        self._pool = pool
        self._clock = clock
        self._nursery: trio.Nursery | None = None
        self._publish: dict[tuple[str, str, int], ReadyTask] = {}
        self._withdraw: dict[tuple[str, str, int], ReadyTask] = {}
        self._flush = trio.Event()
        self._claim = trio.Event()
        self._maybe_ready = True  # units may wait in the shared queue (a NOTIFY said so)
        self._remote: dict[str, dict[str, str]] = {}  # server → {token: execution} sent there
        self._claimed: dict[tuple[str, str, int], QueueKey] = {}  # claimed here, not yet offered

    # -- the pool's port (Sharing) ---------------------------------------------------------
    def spilled(self, execution_id: str, key: str, attempt: int, queue: QueueKey) -> None:
        """Publish a unit of ours that waits for a session (at the next flush)."""
        task_name, contract_version, language = queue
        ready = ReadyTask(execution_id, key, attempt, task_name, contract_version, language or "")
        self._publish[ready[:3]] = ready
        self._flush.set()

    def handed(self, execution_id: str, key: str, attempt: int) -> None:
        """A published unit went to a session here: withdraw it (or never publish it)."""
        if self._publish.pop((execution_id, key, attempt), None) is None:
            self._withdraw[(execution_id, key, attempt)] = ReadyTask(
                execution_id, key, attempt, "", "", ""
            )
            self._flush.set()

    def hungry(self) -> None:
        """A session has room and nothing of ours to do: claim, if anything may wait."""
        if self._maybe_ready:
            self._claim.set()

    # -- the cluster's notifications -------------------------------------------------------
    def ready(self) -> None:
        """A server published units."""
        self._maybe_ready = True
        self._claim.set()

    def lost(self, server_id: str) -> None:
        """A server was taken over: what we had dispatched to its sessions is uncertain. An
        empty id says notices may have been missed (the LISTEN connection was down): every
        server we dispatched to is asked after."""
        if not server_id:
            if self._nursery is not None:
                self._nursery.start_soon(self._check_all)
            return
        for token in self._remote.pop(server_id, {}):
            self._registry.mark_uncertain(token, LOST_SERVER)

    async def _check_all(self) -> None:
        for server_id in [server for server, tokens in self._remote.items() if tokens]:
            await self._check_member(server_id)

    async def _check_member(self, server_id: str) -> None:
        """If ``server_id`` was taken over already (its notice crossed a dispatch to it, or
        came while this server was not listening), what we dispatched to it is uncertain."""
        try:
            member = await self._cluster.is_member(server_id)
        except OrbitError as exc:  # the database is away: the reconnected listener asks again
            log.warning("could not ask whether server %s is still a member: %s", server_id, exc)
            return
        if not member:
            self.lost(server_id)

    # -- tasks of the runtime's nursery ----------------------------------------------------
    async def serve(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Flush publications and claim units for free sessions, until cancelled."""
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            nursery.start_soon(self._flushing)
            nursery.start_soon(self._claiming)
            task_status.started()

    async def _flushing(self) -> None:
        delay = FLUSH_RETRY_FIRST_S
        while True:
            await self._flush.wait()
            self._flush = trio.Event()
            publish, withdraw = self._publish, self._withdraw
            self._publish, self._withdraw = {}, {}
            try:
                await self._cluster.share(list(publish.values()), list(withdraw.values()))
            except OrbitError as exc:  # the units wait here as before; only sharing is late
                log.warning("could not publish %d ready units (trying again in %.1f s): %s",
                            len(publish), delay, exc)  # fmt: skip
                self._unflushed(publish, withdraw)
                await trio.sleep(delay)  # a backoff: the database is away (failing over)
                delay = min(FLUSH_RETRY_MAX_S, delay * 2)
                self._flush.set()
            else:
                delay = FLUSH_RETRY_FIRST_S

    def _unflushed(
        self, publish: dict[tuple[str, str, int], ReadyTask],
        withdraw: dict[tuple[str, str, int], ReadyTask],
    ) -> None:  # fmt: skip
        """A flush failed: its publications and withdrawals go out with the next one (a unit
        handed to a session here meanwhile is neither published nor withdrawn)."""
        for key, ready in publish.items():
            if self._withdraw.pop(key, None) is None:
                self._publish.setdefault(key, ready)
        for key, gone in withdraw.items():
            self._withdraw.setdefault(key, gone)

    async def _claiming(self) -> None:
        while True:
            await self._claim.wait()
            self._claim = trio.Event()
            hunger = self._pool.hunger()
            if not self._maybe_ready or not hunger:
                continue
            self._maybe_ready = False  # a NOTIFY during the claim sets it again
            try:
                claimed = await self._claim_for(hunger)
            except OrbitError as exc:
                log.warning("could not claim shared units: %s", exc)
                self._maybe_ready = True
                continue
            if claimed >= CLAIM_BATCH:
                self._maybe_ready = True
                self._claim.set()

    async def _claim_for(self, hunger: dict[QueueKey, int]) -> int:
        queues = [(task, version, language or "") for task, version, language in hunger]
        limit = min(CLAIM_BATCH, sum(hunger.values()))
        rows = await self._cluster.claim_ready(queues, limit)
        for row in rows:
            queue = (row.task_name, row.contract_version, row.language or None)
            self._claimed[(row.execution_id, row.unit_key, row.attempt)] = queue
            self._pool.enqueue_remote(row.execution_id, row.unit_key, row.attempt, queue)
        return len(rows)

    # -- offers of claimed units (this server) and their answers (the owner) ---------------
    def offer(self, offer: Offer) -> str | None:
        """A claimed unit matched a session here: reserve under a new token and ask the owner
        to dispatch it (the pool holds the token meanwhile)."""
        if self._nursery is None:
            return None
        token = new_token(offer.execution_id)
        self._nursery.start_soon(self._ask_owner, offer, token)
        return token

    async def _ask_owner(self, offer: Offer, token: str) -> None:
        command = fw.OfferCommand(
            key=offer.key, attempt=offer.attempt, token=token, worker_id=offer.worker_id,
            session_id=offer.session_id,
        )  # fmt: skip
        unit = (offer.execution_id, offer.key, offer.attempt)
        queue = self._claimed.pop(unit, None)
        task: Any = None
        try:
            owner = await self._forwarder.owner_elsewhere(offer.execution_id)
            if owner is not None:
                task = await self._forwarder.forward(owner, offer.execution_id, command)
        except (OwnerUnavailableError, StorageError) as exc:  # its outcome is unknown
            # the owner may have dispatched it to the session here without the task reaching
            # it: have the attempt made uncertain, so that it is redelivered
            log.warning("a claimed unit of %s: %s", offer.execution_id, exc)
            await self._router.forward_uncertain(offer.execution_id, token, str(exc))
            # or it never carried the offer out (its answer lost with the database failing
            # over): the unit is out of the shared queue, so it is offered again from here
            # (the owner answers a unit it did dispatch as a stale offer)
            if queue is not None:
                self._pool.release(token)
                self._claimed[unit] = queue
                self._pool.enqueue_remote(*unit, queue)
                return
        except OrbitError as exc:
            log.info("a claimed unit of %s was not dispatched: %s", offer.execution_id, exc)
        if task is None:
            self._pool.release(token)
        else:
            self._pool.push(Task.model_validate(task).as_fields(), self._clock.now_ms())

    async def dispatch_here(self, execution_id: str, c: fw.OfferCommand) -> Task | None:
        """As the owner: dispatch a unit another server claimed to its session; the task, or
        None for a stale offer."""
        fields: TaskFields | None = await self._registry.request(
            execution_id,
            cmd.RemoteOffer(c.key, c.attempt, c.token, c.worker_id, c.session_id, reply=Reply()),
        )
        if fields is None:
            return None
        task = task_model(fields)
        server = server_of_session(c.session_id)
        if server is not None:
            self._remote.setdefault(server, {})[c.token] = execution_id
            # noted first, so a later notice finds it; asked aside, so the task is not delayed
            if self._nursery is not None:
                self._nursery.start_soon(self._check_member, server)
        return task

    def readopt(self, session_id: str, token: str, execution_id: str) -> bool:
        """As the owner, after an actor was (re)spawned from its history: an attempt it had
        dispatched to ``session_id``. When that session is another server's, the token is noted
        as :meth:`dispatch_here` notes it (that server's worker may still run it, or its result
        may be on its way): uncertain when that server is taken over, or is not a member any
        more, and not before. False when the session is not another server's."""
        server = server_of_session(session_id)
        if server is None or server == self._cluster.server_id:
            return False
        self._remote.setdefault(server, {})[token] = execution_id
        if self._nursery is not None:
            self._nursery.start_soon(self._check_member, server)
        return True

    def answered(self, token: str) -> None:
        """As the owner: a remote token was answered (its result or its loss came back)."""
        for tokens in self._remote.values():
            if tokens.pop(token, None) is not None:
                return


def server_of_session(session_id: str) -> str | None:
    """The server a shared-mode session id names (``s-<server>-<hex>``)."""
    parts = session_id.split("-")
    return parts[1] if len(parts) == 3 and parts[0] == "s" else None
