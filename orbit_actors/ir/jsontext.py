"""Compact JSON text, the one form Orbit sends and counts payloads in.

One encoder is built once: ``json.dumps`` with non-default options builds a new encoder on every
call, which cost more than the encoding itself for the small values of frames and answers.
"""

from __future__ import annotations

import json
from typing import Any

_COMPACT = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False)


def compact_json(value: Any) -> str:
    """``value`` as JSON without spaces, non-ASCII kept as is."""
    return _COMPACT.encode(value)


def json_bytes(value: Any) -> int:
    """The size in bytes of ``value`` as compact UTF-8 JSON (what payload limits count)."""
    return len(_COMPACT.encode(value).encode())
