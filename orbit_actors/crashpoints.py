"""Named crash points: a test facility (``docs/faults.md``), not a feature.

``ORBIT_CRASH_AT=<point>[:<n>]`` makes the process exit at once (``os._exit``, no cleanup, no
flush: as abrupt as SIGKILL, but at a chosen line) the n-th time (1 by default) it passes the
named point. The variable is read once, when this module is imported: without it,
:func:`crash_point` is a function that does nothing, and nothing is counted.

The points, each placed where a crash is the hardest to survive:

==========================  ===============================================================
``commit-before-answer``    a group commit is durable; its committers are not told yet
``answer-before-dispatch``  a unit was queued and its caller answered; its dispatch comes next
``group-commit``            inside a group commit, between its statements (nothing durable)
``result-before-ack``       a worker's result is committed; its ``ack`` is not sent
``takeover-before-commit``  a takeover's lease write is durable; no adopted execution has
                            committed anything yet (shared mode)
==========================  ===============================================================
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable

POINTS = frozenset({
    "commit-before-answer", "answer-before-dispatch", "group-commit", "result-before-ack",
    "takeover-before-commit",
})  # fmt: skip
EXIT_CODE = 70
"""The exit status of a process stopped at a crash point (EX_SOFTWARE)."""
VARIABLE = "ORBIT_CRASH_AT"


class CrashPointError(ValueError):
    """``ORBIT_CRASH_AT`` names no known point, or its count is not a positive integer."""


def parse(value: str) -> tuple[str, int]:
    """``point[:n]`` as (point, n)."""
    point, _, count = value.partition(":")
    if point not in POINTS:
        known = ", ".join(sorted(POINTS))
        raise CrashPointError(f"{VARIABLE}={value!r}: unknown crash point; known: {known}")
    if count and not (count.isdigit() and int(count) >= 1):
        raise CrashPointError(f"{VARIABLE}={value!r}: the pass count must be an integer >= 1")
    return point, int(count or 1)


def _nothing(point: str) -> None:
    """No crash point is armed."""


def _armed(armed: str, at_pass: int) -> Callable[[str], None]:
    passes = 0

    def crash_point(point: str) -> None:
        nonlocal passes
        if point != armed:
            return
        passes += 1
        if passes == at_pass:
            os.write(2, f"orbit: crash point {point} reached (pass {passes}); exiting\n".encode())
            os._exit(EXIT_CODE)

    return crash_point


def _from_environment() -> Callable[[str], None]:
    value = os.environ.get(VARIABLE)
    if not value:
        return _nothing
    try:
        return _armed(*parse(value))
    except CrashPointError as exc:
        sys.exit(str(exc))


crash_point: Callable[[str], None] = _from_environment()
"""Pass the named point: exits the process when it is the armed one's n-th pass."""
