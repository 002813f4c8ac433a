"""Pagination shared by every store: limits are clamped, cursors are opaque; the SQL stores
share the page query and how a page is made of its rows."""

from __future__ import annotations

import base64
import binascii
from collections.abc import Sequence
from typing import Any

from ..errors import InvalidRequestError
from .base import ExecutionPage, ExecutionRow

MAX_LIMIT = 1000


def clamp_limit(limit: int) -> int:
    """``limit`` clamped to 1..1000 (never refused)."""
    return max(1, min(MAX_LIMIT, limit))


def encode_cursor(position: int) -> str:
    """An opaque cursor for the page after ``position``."""
    return base64.urlsafe_b64encode(f"o{position}".encode()).decode().rstrip("=")


def decode_cursor(cursor: str | None) -> int | None:
    """The position a cursor stands for; raises InvalidRequestError for a malformed one."""
    if cursor is None or cursor == "":
        return None
    try:
        text = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
        if text.startswith("o") and text[1:].isdigit():
            return int(text[1:])
    except (binascii.Error, UnicodeDecodeError, ValueError):
        pass
    raise InvalidRequestError("cursor is not valid; pass the next_cursor of a previous page")


def page_query(
    columns: str, status: str | None, workflow: str | None, limit: int, before: int | None,
    mark: str, paused: bool | None = None,
) -> tuple[str, list[Any]]:  # fmt: skip
    """The query of a page of executions newest first, filtered (``ord`` then ``columns`` of
    the summary row; ``limit`` rows at most; ``mark`` is the engine's placeholder), and its
    arguments."""
    where: list[str] = []
    args: list[Any] = []
    for column, value in (("status", status), ("workflow", workflow)):
        if value is not None:
            where.append(f"{column} = {mark}")
            args.append(value)
    if paused is not None:
        where.append("paused" if paused else "NOT paused")
    if before is not None:
        where.append(f"ord < {mark}")
        args.append(before)
    clause = f"WHERE {' AND '.join(where)}" if where else ""
    query = f"SELECT ord, {columns} FROM executions {clause} ORDER BY ord DESC LIMIT {mark}"
    return query, [*args, limit]


def page_of(rows: Sequence[Sequence[Any]], limit: int) -> ExecutionPage:
    """The page of the first ``limit`` rows (``ord`` then the summary row) of ``limit + 1``
    read; a cursor when there was one more."""
    page = [ExecutionRow(*row[1:]) for row in rows[:limit]]
    next_cursor = encode_cursor(rows[limit - 1][0]) if len(rows) > limit else None
    return ExecutionPage(page, next_cursor)
