"""Wall-clock milliseconds that follow trio's clock, so a ``MockClock`` moves event timestamps
and durable timers alike (a 7-day timer then takes no real time)."""

from __future__ import annotations

import time

import trio


class Clock:
    """Epoch milliseconds anchored at creation and advanced by ``trio.current_time()``."""

    def __init__(self, epoch_ms: int | None = None) -> None:
        self._epoch_ms = int(time.time() * 1000) if epoch_ms is None else epoch_ms
        self._anchor = trio.current_time()

    def now_ms(self) -> int:
        """The current time in epoch milliseconds."""
        return self._epoch_ms + int((trio.current_time() - self._anchor) * 1000)

    def deadline(self, epoch_ms: int) -> float:
        """The trio deadline of an epoch-millisecond instant."""
        return self._anchor + (epoch_ms - self._epoch_ms) / 1000
