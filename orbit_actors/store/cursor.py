"""Pagination shared by every store: limits are clamped, cursors are opaque."""

from __future__ import annotations

import base64
import binascii

from ..errors import InvalidRequestError

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
