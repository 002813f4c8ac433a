"""What the rate-limit tests count: the most dispatch instants any span of ``per`` holds."""

from __future__ import annotations

from collections.abc import Iterable


def most_in_any_span(instants: Iterable[int], per_ms: int) -> int:
    """The most instants any half-open span ``[s, s + per_ms)`` holds."""
    ordered = sorted(instants)
    most = start = 0
    for end, instant in enumerate(ordered):
        while instant - ordered[start] >= per_ms:
            start += 1
        most = max(most, end - start + 1)
    return most
