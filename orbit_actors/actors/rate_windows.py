"""What this server knows of its tasks' rate limits, and the units held back by them.

The count that decides is the store's (``store/rate_log.py``): every dispatch's commit carries
its charge and is refused when over the limit, in its own transaction, however many servers
share the database. What this module keeps is a **hint** that spares the store commits it would
refuse: a sliding log of this server's own dispatch instants (``decide/rate_window.py``), and,
for each window the store refused, the instant the store said it opens. The hint never holds a
unit back longer than the store would: it counts only what the store counted too (the charge of
a commit not written is given back) and what the store said.

Units over the hint are **parked** with the instant their window opens and say why they wait
(``rate_limited``); :meth:`RateWindows.due` gives them back once that instant has come, oldest
first, for the pool to offer again. The pool calls in without awaiting; the runtime's timer
(:func:`serve_rate_windows`) wakes it when the earliest parked unit is due.
"""

from __future__ import annotations

import heapq
from collections import deque
from collections.abc import Callable
from typing import Generic, TypeVar

import trio

from ..decide import rate_window
from ..decide.invocation import RateTake
from .clock import Clock

T = TypeVar("T")
Window = tuple[str, str]  # (task, key)
FORGET_EVERY = 4096
"""Windows created between two sweeps of those whose instants are all older than their ``per``
(a key seen once is not kept for ever)."""


class RateWindows(Generic[T]):
    """The hint of each (task, key) and the units parked until a window opens."""

    def __init__(self) -> None:
        self._logs: dict[Window, deque[int]] = {}  # this server's last ``limit`` instants
        self._pers: dict[Window, int] = {}  # each log's ``per``, for forgetting it
        self._closed: dict[Window, int] = {}  # the store said: no dispatch before this instant
        self._parked: list[tuple[int, int, T]] = []  # (opens at, arrival, unit): a heap
        self._arrivals = 0
        self._created = 0  # windows created since the last sweep
        self.wake: Callable[[int], None] = lambda at_ms: None  # the earliest due instant

    def allows(self, rate: RateTake, now_ms: int) -> bool:
        """True when a dispatch at ``now_ms`` would be within the hint (nothing counted)."""
        return self.opens_at(rate, now_ms) <= now_ms

    def take(self, rate: RateTake, now_ms: int) -> bool:
        """Count one dispatch at ``now_ms``; False (nothing counted) when over the hint."""
        if not self.allows(rate, now_ms):
            return False
        window = (rate.task, rate.key)
        log = self._logs.get(window)
        if log is None:
            log = self._new_log(window, rate, now_ms)
        log.append(now_ms)
        return True

    def give_back(self, rate: RateTake, at_ms: int) -> None:
        """A dispatch counted at ``at_ms`` was not recorded (its commit was not written)."""
        log = self._logs.get((rate.task, rate.key))
        if log is not None and at_ms in log:
            log.remove(at_ms)

    def close(self, task: str, key: str, until_ms: int) -> None:
        """The store refused a dispatch: its window of ``key`` opens at ``until_ms``."""
        window = (task, key)
        self._closed[window] = max(until_ms, self._closed.get(window, until_ms))

    def opens_at(self, rate: RateTake, now_ms: int) -> int:
        """The first instant a dispatch of ``rate`` is allowed again, as far as this server
        knows."""
        window = (rate.task, rate.key)
        closed = self._closed.get(window)
        if closed is not None and closed <= now_ms:
            del self._closed[window]
            closed = None
        log = self._logs.get(window)
        opens = now_ms
        if log is not None:
            opens = rate_window.opens_at(log, rate.limit, rate.per_ms, now_ms)
        return opens if closed is None else max(opens, closed)

    def remembered(self) -> int:
        """How many (task, key) windows this server keeps a log or a refusal of."""
        return len(self._logs.keys() | self._closed.keys())

    def _new_log(self, window: Window, rate: RateTake, now_ms: int) -> deque[int]:
        self._created += 1
        if self._created >= FORGET_EVERY:
            self._created = 0
            self._forget(now_ms)
        log = self._logs[window] = deque(maxlen=rate.limit)
        self._pers[window] = rate.per_ms
        return log

    def _forget(self, now_ms: int) -> None:
        """Drop the logs whose every instant is older than their ``per`` and the refusals that
        have passed: they allow anything."""
        stale = [w for w, log in self._logs.items() if not log or now_ms - log[-1] >= self._pers[w]]
        for window in stale:
            del self._logs[window], self._pers[window]
        self._closed = {w: until for w, until in self._closed.items() if until > now_ms}

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
