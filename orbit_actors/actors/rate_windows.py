"""Rate limits of task dispatches: at most ``limit`` dispatches of a task per ``per`` window per
key, in *any* window of that length (a sliding log of the last ``limit`` dispatch instants: one
more is allowed once the oldest of them is ``per`` old), so no span of ``per`` ever holds more.
A dispatch is counted at the instant its ``StepDispatched`` records, by the actor that commits it.

Units over their limit are **parked** with the instant their window ends, and say why they wait
(``rate_limited``); :meth:`RateWindows.due` gives them back once that instant has come, oldest
first, for the pool to queue again. The pool calls in without awaiting; the runtime's timer
(:func:`serve_rate_windows`) wakes it when the earliest parked unit is due.
"""

from __future__ import annotations

import heapq
from collections import deque
from collections.abc import Callable
from typing import Generic, TypeVar

import trio

from ..decide.invocation import RateTake
from .clock import Clock

T = TypeVar("T")


class RateWindows(Generic[T]):
    """The current window of each (task, key) and the units parked until a window opens."""

    def __init__(self) -> None:
        self._logs: dict[tuple[str, str], deque[int]] = {}  # the last ``limit`` dispatch instants
        self._parked: list[tuple[int, int, T]] = []  # (opens at, arrival, unit): a heap
        self._arrivals = 0
        self.wake: Callable[[int], None] = lambda at_ms: None  # the earliest due instant

    def allows(self, rate: RateTake, now_ms: int) -> bool:
        """True when a dispatch at ``now_ms`` would be within the limit (nothing counted)."""
        log = self._logs.get((rate.task, rate.key))
        return log is None or len(log) < rate.limit or now_ms - log[0] >= rate.per_ms

    def take(self, rate: RateTake, now_ms: int) -> bool:
        """Count one dispatch at ``now_ms``; False (nothing counted) when over the limit."""
        key = (rate.task, rate.key)
        log = self._logs.get(key)
        if log is None:
            log = self._logs[key] = deque(maxlen=rate.limit)
        elif len(log) >= rate.limit and now_ms - log[0] < rate.per_ms:
            return False
        log.append(now_ms)
        return True

    def opens_at(self, rate: RateTake, now_ms: int) -> int:
        """The first instant a dispatch of ``rate`` is allowed again."""
        log = self._logs.get((rate.task, rate.key))
        if log is None or len(log) < rate.limit:
            return now_ms
        return max(now_ms, log[0] + rate.per_ms)

    def park(self, unit: T, rate: RateTake, now_ms: int) -> None:
        """Keep ``unit`` until a dispatch of ``rate`` is allowed again."""
        opens_at = self.opens_at(rate, now_ms)
        self._arrivals += 1
        first = not self._parked or opens_at < self._parked[0][0]
        heapq.heappush(self._parked, (opens_at, self._arrivals, unit))
        if first:
            self.wake(opens_at)

    def due(self, now_ms: int) -> list[T]:
        """The parked units whose window has opened by ``now_ms``, oldest first."""
        out = []
        while self._parked and self._parked[0][0] <= now_ms:
            out.append(heapq.heappop(self._parked)[2])
        return out

    def next_due_ms(self) -> int | None:
        """When the earliest parked unit is due (None: nothing is parked)."""
        return self._parked[0][0] if self._parked else None

    def parked(self) -> list[T]:
        """Every parked unit."""
        return [unit for _, _, unit in self._parked]


async def serve_rate_windows(
    windows: RateWindows[T],
    release: Callable[[int], None],
    clock: Clock,
    *,
    task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Call ``release(now_ms)`` whenever parked units are due, until cancelled."""
    changed = trio.Event()

    def wake(at_ms: int) -> None:
        changed.set()

    windows.wake = wake
    task_status.started()
    while True:
        due = windows.next_due_ms()
        if due is None:
            await changed.wait()
        else:
            with trio.move_on_at(clock.deadline(due)):
                await changed.wait()
        changed = trio.Event()
        release(clock.now_ms())
