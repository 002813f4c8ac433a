"""What the PostgreSQL store says to the other servers sharing its database about schedules
(the statements themselves are shared with SQLite: :mod:`..dialect`)."""

from __future__ import annotations

from typing import TypeVar

from .schema import Conn

SCHEDULES_CHANGED = "orbit_schedules"
T = TypeVar("T")


def schedules_changed(conn: Conn, outcome: T) -> T:
    """Tell every server listening that the schedules changed (delivered at commit, so they
    read the change); returns ``outcome``."""
    conn.execute(f"NOTIFY {SCHEDULES_CHANGED}".encode())
    return outcome
