"""The statements of the shared task queue: publishing the ready units a server could not hand
to a worker of its own, withdrawing them once it did, and claiming others' units for free
sessions (``FOR UPDATE SKIP LOCKED``: two servers never claim the same row, and neither waits
for the other). Each batch is one transaction; a publication notifies every server."""

from __future__ import annotations

from ..cluster import ReadyTask
from .schema import Conn

READY_CHANNEL = "orbit_ready"
_PUBLISH = (
    "INSERT INTO ready_tasks (execution_id, unit_key, attempt, task_name, contract_version, "
    "language, owner_epoch, ready_at_ms) SELECT *, %s, "
    "(extract(epoch FROM clock_timestamp()) * 1000)::bigint FROM unnest(%s::text[], "
    "%s::text[], %s::int[], %s::text[], %s::text[], %s::text[]) ON CONFLICT DO NOTHING"
)
_WITHDRAW = (
    "DELETE FROM ready_tasks WHERE (execution_id, unit_key, attempt) IN "
    "(SELECT * FROM unnest(%s::text[], %s::text[], %s::int[]))"
)
_CLAIM = (
    "DELETE FROM ready_tasks WHERE ctid IN (SELECT ctid FROM ready_tasks WHERE "
    "(task_name, contract_version, language) IN (SELECT * FROM unnest(%s::text[], %s::text[], "
    "%s::text[])) AND owner_epoch <> %s ORDER BY ready_at_ms LIMIT %s FOR UPDATE SKIP LOCKED) "
    "RETURNING execution_id, unit_key, attempt, task_name, contract_version, language"
)


def change(conn: Conn, epoch: int, publish: list[ReadyTask], withdraw: list[ReadyTask]) -> None:
    """Publish and withdraw units in one transaction; notify when something was published."""
    with conn.transaction():
        if withdraw:
            conn.execute(_WITHDRAW, _columns(withdraw, 3))
        if publish:
            conn.execute(_PUBLISH, [epoch, *_columns(publish, 6)])
            conn.execute(f"NOTIFY {READY_CHANNEL}".encode())


def claim(
    conn: Conn, epoch: int, queues: list[tuple[str, str, str]], limit: int
) -> list[ReadyTask]:
    """Claim up to ``limit`` units of other servers, oldest first, from ``queues``."""
    columns = [list(column) for column in zip(*queues, strict=True)]
    rows = conn.execute(_CLAIM, [*columns, epoch, limit]).fetchall()
    return [ReadyTask(*row) for row in rows]


def _columns(tasks: list[ReadyTask], width: int) -> list[list[object]]:
    return [list(column) for column in zip(*(t[:width] for t in tasks), strict=True)]
