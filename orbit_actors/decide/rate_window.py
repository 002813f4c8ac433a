"""The arithmetic of a task's rate limit: at most ``limit`` dispatches in *any* span of ``per``.

A key keeps the instants of its dispatches (a sliding log). One more is allowed at ``now`` when
fewer than ``limit`` of them are later than ``now - per``; equivalently, when the ``limit``-th
newest is at least ``per`` old. Every span of length ``per`` holding the new instant then holds
at most ``limit``, and spans without it are as they were, so no span ever holds more. Fixed
windows would allow twice ``limit`` across a boundary; a token bucket, a burst of ``limit`` and
then more as it refills.

Instants later than ``now`` (another server's clock running ahead) count too: they are among
the ``limit`` newest, so the rule stays exact whatever order the instants arrive in. The server
memory (``actors/rate_windows.py``) and every store (``store/rate_log.py``) use these functions.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence


def opens_at(instants: Sequence[int], limit: int, per_ms: int, now_ms: int) -> int:
    """The first instant from ``now_ms`` on at which one more dispatch is allowed, given the
    key's dispatch instants (sorted; at least those later than ``now_ms - per_ms``)."""
    if len(instants) < limit:
        return now_ms
    return max(now_ms, instants[-limit] + per_ms)


def take(instants: list[int], limit: int, per_ms: int, now_ms: int) -> int | None:
    """Record a dispatch at ``now_ms`` in ``instants`` (kept sorted) when allowed and return
    None; otherwise change nothing and return the instant one is allowed."""
    opens = opens_at(instants, limit, per_ms, now_ms)
    if opens > now_ms:
        return opens
    bisect.insort(instants, now_ms)
    return None
