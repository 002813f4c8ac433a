"""Keeping this server's lease in a shared store, and taking over what dead servers owned.

One task of the runtime's nursery renews the lease every third of the lease time and then looks
for servers whose lease expired, and looks again as soon as the next lease of another member
ends (so a dead server is taken over at its lease's end, not up to a third of a lease later).
Their running executions become this server's: dormant here at once (a command or their
wake-up brings them back), and those with work in flight brought back in the background,
exactly as after a restart — their attempts held by the dead server's workers turn uncertain
and are redelivered with the same idempotency key.

A renewal that finds the lease taken over raises :class:`~orbit_actors.errors.LeaseLostError`
out of the runtime: a server that was paused past its lease stops. Until then its commits are
refused by the store's fencing, so it cannot write over its successor.
"""

from __future__ import annotations

import logging
import math
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
EXPIRY_MARGIN_S = 0.02  # past the end of a lease: the database's clock decides, by `<`


async def keep_membership(
    cluster: Cluster,
    adopt: Callable[[Takeover], None],
    *,
    task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Claim the executions no member owns, report started, then renew the lease every third
    of the lease time and take over after each renewal, and also as soon as another member's
    lease ends (so a dead server's executions move within its lease time, not a third later),
    until the lease is lost (LeaseLostError) or the task is cancelled."""
    first = await cluster.take_over(orphans=True)
    adopt(first)
    task_status.started()
    taken: Takeover | None = first
    every = cluster.lease_s / 3
    renew_at = trio.current_time() + every
    while True:
        # lease timers: the moments are the point, not a condition to poll
        await trio.sleep_until(min(renew_at, _expiry_deadline(taken)))
        if trio.current_time() >= renew_at:
            renew_at = trio.current_time() + every
            if not await _renewed(cluster):
                taken = None  # no takeover before a renewal succeeds
                continue
        taken = await _take_over(cluster, adopt)


def _expiry_deadline(taken: Takeover | None) -> float:
    """When to look again for another member's ended lease: just after the earliest one ends
    (never, when the last takeover failed or there is no other member)."""
    if taken is None or taken.next_expiry_ms is None:
        return math.inf
    return trio.current_time() + max(taken.next_expiry_ms, 0) / 1000 + EXPIRY_MARGIN_S


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


async def _take_over(cluster: Cluster, adopt: Callable[[Takeover], None]) -> Takeover | None:
    """Take over the servers whose lease ended; None when the takeover failed this time."""
    try:
        taken = await cluster.take_over()
    except StorageError as exc:  # a lock held by a paused server, or the database away
        log.warning("takeover failed (tried again in %.1f s): %s", cluster.lease_s / 3, exc)
        return None
    if taken.servers:
        crash_point("takeover-before-commit")
        log.warning(
            "took over %d executions of server(s) %s whose lease expired",
            len(taken.executions), ", ".join(taken.servers),
        )  # fmt: skip
        adopt(taken)
    return taken


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
