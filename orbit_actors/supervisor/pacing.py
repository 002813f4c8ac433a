"""Pacing: at most ``rate`` turns a second, spread evenly, shared by whoever asks (every batch
of a server acts through one :class:`Pacer`, so ``--batch-rate`` holds for all of them
together). A turn is an instant, handed out in order; a caller sleeps until its own turn, so
nothing polls and a caller cancelled while it waits just loses its turn."""

from __future__ import annotations

import trio

DEFAULT_BATCH_RATE = 100.0


class Pacer:
    """Hands out turns ``1 / rate`` seconds apart (never two in the same instant, never a burst
    after a pause: a turn is never earlier than now)."""

    def __init__(self, rate: float = DEFAULT_BATCH_RATE) -> None:
        if rate <= 0:
            raise ValueError("a rate must be positive")
        self.rate = rate
        self._next = float("-inf")

    def next_turn(self, now: float) -> float:
        """Take the next turn at or after ``now`` and return its instant."""
        turn = max(now, self._next)
        self._next = turn + 1 / self.rate
        return turn

    async def wait_turn(self) -> None:
        """Sleep until this caller's turn."""
        await trio.sleep_until(self.next_turn(trio.current_time()))
