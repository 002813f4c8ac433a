"""Wall-clock milliseconds that follow trio's clock, so a ``MockClock`` moves event timestamps
and durable timers alike (a 7-day timer then takes no real time).

A server runs for months; its system clock may be stepped forward meanwhile (NTP after a
suspend, a VM migrated, an operator's fix). :meth:`Clock.resync`, called periodically by the
server, moves the clock forward by such a step so that schedules keep firing at wall times. A
step backward is not followed while running: timestamps in a history never go back, and the
cron claims already taken keep an occurrence from firing twice; a restart anchors afresh.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import trio

STEP_MS = 1000  # a difference from the system clock larger than this is a step, not drift


def system_ms() -> int:
    """The system's wall clock in epoch milliseconds."""
    return int(time.time() * 1000)


class Clock:
    """Epoch milliseconds anchored at creation and advanced by ``trio.current_time()``."""

    def __init__(self, epoch_ms: int | None = None, system: Callable[[], int] = system_ms) -> None:
        self._system = system
        self._epoch_ms = system() if epoch_ms is None else epoch_ms
        # the run's clock itself (what trio.current_time() asks, two calls further down): an
        # execution reads the time a dozen times
        self._time = trio.lowlevel.current_clock().current_time
        self.seconds: Callable[[], float] = self._time
        """``trio.current_time()`` read from the run's clock directly (a sixth of the cost)."""
        self._anchor = self._time()

    def now_ms(self) -> int:
        """The current time in epoch milliseconds."""
        return self._epoch_ms + int((self._time() - self._anchor) * 1000)

    def deadline(self, epoch_ms: int) -> float:
        """The trio deadline of an epoch-millisecond instant."""
        return self._anchor + (epoch_ms - self._epoch_ms) / 1000

    def resync(self) -> int:
        """Follow a forward step of the system clock; returns how far the system clock is
        from this one in ms (positive: ahead), whether or not it was followed."""
        system = self._system()
        ahead = system - self.now_ms()
        if ahead > STEP_MS:
            self._epoch_ms, self._anchor = system, self._time()
        return ahead
