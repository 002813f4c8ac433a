"""Keeping this server's lease in a shared store, and taking over what dead servers owned.

One task of the runtime's nursery renews the lease every third of the lease time and then looks
for servers whose lease expired; their running executions become this server's: dormant here
at once (a command or their wake-up brings them back), and those with work in flight brought
back in the background, exactly as after a restart — their attempts held by the dead server's
workers turn uncertain and are redelivered with the same idempotency key.

A renewal that finds the lease taken over raises :class:`~orbit_actors.errors.LeaseLostError`
out of the runtime: a server that was paused past its lease stops. Until then its commits are
refused by the store's fencing, so it cannot write over its successor.
"""

from __future__ import annotations

import logging
import os
import socket
from collections.abc import Callable
from dataclasses import dataclass

import trio

from ..crashpoints import crash_point
from ..errors import LeaseLostError, StorageError
from ..store.cluster import Cluster, ServerRecord, Takeover
from .forwarding import Forwarder

log = logging.getLogger("orbit.cluster")


async def keep_membership(
    cluster: Cluster,
    adopt: Callable[[Takeover], None],
    *,
    task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Claim the executions no member owns, report started, then renew and take over every
    third of the lease time until the lease is lost (LeaseLostError) or the task is cancelled."""
    adopt(await cluster.take_over(orphans=True))
    task_status.started()
    every = cluster.lease_s / 3
    while True:
        await trio.sleep(every)  # a lease timer: the period is the point, not a condition
        if await _renewed(cluster):
            await _take_over(cluster, adopt)


async def _renewed(cluster: Cluster) -> bool:
    """Renew the lease; False when the database could not be reached this time."""
    try:
        await cluster.renew()
    except LeaseLostError:
        log.error("server %s lost its lease to another server; stopping", cluster.server_id)
        raise
    except StorageError as exc:
        log.warning("could not renew the lease of server %s: %s", cluster.server_id, exc)
        return False
    return True


async def _take_over(cluster: Cluster, adopt: Callable[[Takeover], None]) -> None:
    try:
        taken = await cluster.take_over()
    except StorageError as exc:  # a lock held by a paused server, or the database away
        log.warning("takeover failed (tried again in %.1f s): %s", cluster.lease_s / 3, exc)
        return
    if taken.servers:
        crash_point("takeover-before-commit")
        log.warning(
            "took over %d executions of server(s) %s whose lease expired",
            len(taken.executions), ", ".join(taken.servers),
        )  # fmt: skip
        adopt(taken)


@dataclass(frozen=True)
class LocalServer:
    """This server as ``servers()`` shows it when it shares its store with no other."""

    server_id: str
    address: str
    started_at_ms: int
    executions: Callable[[], int]

    def record(self, now_ms: int) -> ServerRecord:
        """Its entry in the list of servers."""
        return ServerRecord(
            self.server_id, self.address, socket.gethostname(), os.getpid(), self.started_at_ms,
            now_ms, now_ms, True, self.executions(),
        )  # fmt: skip


@dataclass(frozen=True)
class Membership:
    """How this runtime takes part in a shared store: the cluster and the forwarder of its
    commands (both None on a store of its own), and its own entry."""

    cluster: Cluster | None
    forwarder: Forwarder | None
    local: LocalServer

    async def servers(self, now_ms: int) -> list[ServerRecord]:
        """The servers sharing the store (just this one on a store of its own)."""
        if self.cluster is None:
            return [self.local.record(now_ms)]
        return await self.cluster.servers()
