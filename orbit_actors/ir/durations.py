"""Durations: ``250ms``, ``30s``, ``5m``, ``2h``, ``7d``, combinations such as ``1h30m``, or an
integer number of milliseconds. Everything downstream of the IR sees milliseconds."""

from __future__ import annotations

import re

_UNIT_MS = {"ms": 1, "s": 1_000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}
_PART = re.compile(r"(\d+)(ms|s|m|h|d)")
_WHOLE = re.compile(r"(?:\d+(?:ms|s|m|h|d))+")


def parse_duration(value: object) -> int:
    """Milliseconds of a duration value; raises ``ValueError`` saying what is accepted."""
    if isinstance(value, bool):
        raise ValueError(_explain(value))
    if isinstance(value, int):
        if value < 0:
            raise ValueError("a duration cannot be negative")
        return value
    if isinstance(value, str):
        text = value.strip()
        if text.isdigit():
            return int(text)
        if _WHOLE.fullmatch(text):
            return sum(int(n) * _UNIT_MS[unit] for n, unit in _PART.findall(text))
    raise ValueError(_explain(value))


def format_duration(ms: int) -> str:
    """The shortest readable form of ``ms`` (``90000`` → ``1m30s``), used in messages."""
    if ms == 0:
        return "0s"
    parts = []
    for unit in ("d", "h", "m", "s", "ms"):
        count, ms = divmod(ms, _UNIT_MS[unit])
        if count:
            parts.append(f"{count}{unit}")
    return "".join(parts)


def _explain(value: object) -> str:
    return (
        f"{value!r} is not a duration; use forms like 250ms, 30s, 5m, 2h, 7d, 1h30m "
        "or an integer number of milliseconds"
    )
