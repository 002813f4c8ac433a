"""The statements of shared mode: joining, renewing and ending a lease, taking over the
executions of servers whose lease expired, and the inbox. Each function takes a connection in
autocommit mode and runs its statements in one transaction where there are several.

Leases are kept on the database's clock (``clock_timestamp()``), never on a server's, so servers
on machines whose clocks disagree still agree on who expired.
"""

from __future__ import annotations

import os
import socket
from typing import Any

from ...errors import LeaseLostError
from ..base import WakeEntry
from ..cluster import Collected, Message, Owner, ServerRecord, Takeover
from .schema import Conn

NOW_MS = "(extract(epoch FROM clock_timestamp()) * 1000)::bigint"
LOST_CHANNEL = "orbit_lost"  # a takeover names each server it took over
_JOIN = (
    "INSERT INTO servers (server_id, address, host, pid, started_at_ms, renewed_at_ms, "
    f"lease_until_ms) VALUES (%s, %s, %s, %s, {NOW_MS}, {NOW_MS}, {NOW_MS} + %s) "
    "RETURNING epoch"
)
_RENEW = (
    f"UPDATE servers SET renewed_at_ms = {NOW_MS}, lease_until_ms = {NOW_MS} + %s WHERE epoch = %s"
)
_EXPIRED = f"DELETE FROM servers WHERE lease_until_ms < {NOW_MS} RETURNING epoch, server_id"
_NEXT_EXPIRY = f"SELECT min(lease_until_ms) - {NOW_MS} FROM servers WHERE epoch <> %s"
_CLAIM = (
    "UPDATE executions SET owner = %s, owner_epoch = %s WHERE status = 'running' AND "
    "owner_epoch = ANY(%s) RETURNING execution_id, wake_at_ms, busy, parent_id IS NULL, ord"
)
_CLAIM_ORPHANS = (
    "UPDATE executions SET owner = %s, owner_epoch = %s WHERE status = 'running' AND "
    "(owner_epoch IS NULL OR NOT EXISTS (SELECT 1 FROM servers s WHERE s.epoch = owner_epoch)) "
    "RETURNING execution_id, wake_at_ms, busy, parent_id IS NULL, ord"
)
_READDRESS = (
    "WITH moved AS (UPDATE inbox SET to_epoch = %s WHERE NOT claimed AND "
    "NOT EXISTS (SELECT 1 FROM servers s WHERE s.epoch = to_epoch) RETURNING message_id) "
    "SELECT message_id, pg_notify(%s, message_id) FROM moved"
)
_FORGOTTEN = (  # taken and never to be collected: their sender was taken over
    "DELETE FROM inbox WHERE claimed AND NOT EXISTS (SELECT 1 FROM servers s WHERE "
    "s.epoch = from_epoch)"
)
_SERVERS = (
    f"SELECT s.server_id, s.address, s.host, s.pid, s.started_at_ms, s.renewed_at_ms, "
    f"s.lease_until_ms, s.lease_until_ms >= {NOW_MS}, "
    "(SELECT COUNT(*) FROM executions e WHERE e.status = 'running' AND e.owner_epoch = s.epoch) "
    "FROM servers s ORDER BY s.epoch"
)
_OWNER = (
    f"SELECT e.owner_epoch, e.owner, s.lease_until_ms >= {NOW_MS}, e.status = 'running' "
    "FROM executions e "
    "LEFT JOIN servers s ON s.epoch = e.owner_epoch WHERE e.execution_id = %s"
)


def inbox_channel(epoch: int) -> str:
    """The channel a server listens on for messages addressed to it."""
    return f"orbit_inbox_{epoch}"


def reply_channel(epoch: int) -> str:
    """The channel a server listens on for answers to the messages it sent."""
    return f"orbit_reply_{epoch}"


def join(conn: Conn, server_id: str, address: str, lease_ms: int) -> int:
    """Add this server with a fresh lease; returns its epoch."""
    row = conn.execute(
        _JOIN, (server_id, address, socket.gethostname(), os.getpid(), lease_ms)
    ).fetchone()
    assert row is not None  # an INSERT … RETURNING returns its row
    return int(row[0])


def renew(conn: Conn, epoch: int, lease_ms: int) -> None:
    """Extend the lease; LeaseLostError when the row is gone (another server took it over)."""
    if conn.execute(_RENEW, (lease_ms, epoch)).rowcount != 1:
        raise LeaseLostError(
            "this server's lease expired and another server took its executions over; it "
            "stops now (start it again to rejoin with a new lease)"
        )


def leave(conn: Conn, epoch: int) -> None:
    """End the lease now: the next takeover of any server claims what this one owned."""
    conn.execute("UPDATE servers SET lease_until_ms = 0 WHERE epoch = %s", (epoch,))


def take_over(conn: Conn, server_id: str, epoch: int, orphans: bool) -> Takeover:
    """In one transaction: remove the servers whose lease expired, claim their running
    executions (with ``orphans``, every running execution no member owns), readdress the inbox
    messages nobody took to this server, delete those taken whose sender is gone (nobody will
    collect them; one not taken yet is still carried out: an offer among them holds a unit),
    release their unfired schedule claims, take their units of the shared queue, and tell
    every server which servers were taken over. Also says when the next lease of another
    member ends."""
    with conn.transaction():
        dead = conn.execute(_EXPIRED).fetchall()
        next_expiry = _next_expiry_ms(conn, epoch)
        if not dead and not orphans:
            return Takeover(next_expiry_ms=next_expiry)
        epochs, names = [row[0] for row in dead], [row[1] for row in dead]
        if orphans:
            rows = conn.execute(_CLAIM_ORPHANS, (server_id, epoch)).fetchall()
        else:
            rows = conn.execute(_CLAIM, (server_id, epoch, epochs)).fetchall()
        moved = conn.execute(_READDRESS, (epoch, inbox_channel(epoch))).fetchall()
        conn.execute(_FORGOTTEN)
        conn.execute(
            "DELETE FROM schedule_claims WHERE execution_id IS NULL AND owner = ANY(%s)", (names,)
        )
        conn.execute(
            "UPDATE ready_tasks SET owner_epoch = %s WHERE owner_epoch = ANY(%s)", (epoch, epochs)
        )
        for name in names:
            conn.execute("SELECT pg_notify(%s, %s)", (LOST_CHANNEL, name))
    rows.sort(key=lambda row: row[4])  # oldest first, as the wake-up index is
    entries = [WakeEntry(r[0], r[1], r[2], r[3]) for r in rows]
    return Takeover(names, entries, [row[0] for row in moved], next_expiry)


def _next_expiry_ms(conn: Conn, epoch: int) -> int | None:
    """Milliseconds until the earliest lease of another member ends (None: no other member)."""
    row = conn.execute(_NEXT_EXPIRY, (epoch,)).fetchone()
    return None if row is None or row[0] is None else int(row[0])


def servers(conn: Conn) -> list[ServerRecord]:
    """Every member with how many running executions it owns."""
    return [ServerRecord(*row) for row in conn.execute(_SERVERS).fetchall()]


def is_member(conn: Conn, server_id: str) -> bool:
    """True while ``server_id`` holds a lease row (a server taken over has none, for good)."""
    found = conn.execute("SELECT 1 FROM servers WHERE server_id = %s", (server_id,)).fetchone()
    return found is not None


def owner(conn: Conn, execution_id: str) -> Owner | None:
    """Who owns ``execution_id``."""
    row = conn.execute(_OWNER, (execution_id,)).fetchone()
    return None if row is None else Owner(row[0], row[1], bool(row[2]), bool(row[3]))


def send(conn: Conn, message_id: str, to_epoch: int, from_epoch: int, execution_id: str,
         body: str) -> None:  # fmt: skip
    """Insert a message and notify its addressee (one statement: both or neither)."""
    conn.execute(
        "WITH m AS (INSERT INTO inbox (message_id, to_epoch, from_epoch, execution_id, body, "
        f"created_at_ms) VALUES (%s, %s, %s, %s, %s, {NOW_MS}) RETURNING message_id, to_epoch) "
        "SELECT pg_notify('orbit_inbox_' || to_epoch, message_id) FROM m",
        (message_id, to_epoch, from_epoch, execution_id, body),
    )


def take(conn: Conn, message_id: str, epoch: int) -> Message | None:
    """Claim a message addressed to ``epoch``; None when it is gone or taken."""
    row = conn.execute(
        "UPDATE inbox SET claimed = true WHERE message_id = %s AND to_epoch = %s "
        "AND NOT claimed RETURNING execution_id, from_epoch, body",
        (message_id, epoch),
    ).fetchone()
    return None if row is None else Message(message_id, row[0], row[1], row[2])


def answer(conn: Conn, message: Message, reply: str) -> None:
    """Record the answer and notify the sender (one statement)."""
    conn.execute(
        "WITH a AS (UPDATE inbox SET reply = %s WHERE message_id = %s RETURNING from_epoch) "
        "SELECT pg_notify('orbit_reply_' || from_epoch, %s) FROM a",
        (reply, message.message_id, message.message_id),
    )


def collect(conn: Conn, message_id: str) -> Collected:
    """Remove a message the sender is done with; what the owner made of it."""
    row: Any = conn.execute(
        "DELETE FROM inbox WHERE message_id = %s RETURNING reply, claimed", (message_id,)
    ).fetchone()
    return Collected(None, False) if row is None else Collected(row[0], bool(row[1]))


def answered(conn: Conn, epoch: int) -> list[str]:
    """Messages ``epoch`` sent that have their answer."""
    rows = conn.execute(
        "SELECT message_id FROM inbox WHERE from_epoch = %s AND reply IS NOT NULL", (epoch,)
    ).fetchall()
    return [row[0] for row in rows]


def pending(conn: Conn, epoch: int) -> list[str]:
    """Messages addressed to ``epoch`` that nobody took yet."""
    rows = conn.execute(
        "SELECT message_id FROM inbox WHERE to_epoch = %s AND NOT claimed ORDER BY created_at_ms",
        (epoch,),
    ).fetchall()
    return [row[0] for row in rows]
