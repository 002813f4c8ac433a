"""HTTP/1.1 connections waiting for their next request, each closed when it has waited the
keep-alive timeout, by one task for all of them (:meth:`KeepAlive.sweep`).

Why not a trio deadline on each wait: moving a cancel scope's deadline costs ~15,000
instructions (a context manager, the run loop's deadline table), and a connection moved it
twice per request for its keep-alive wait alone (on for the wait, off for the answer). A wait
here is one dict entry; the sweeper wakes when the oldest one is due.

Every wait is given the same timeout, so the order waits begin in is the order their deadlines
come in: the sweeper looks at the oldest entries only, and when none waits it sleeps one
timeout (any wait begun meanwhile is due after that). A wait keeps its deadline until it ends
(:meth:`KeepAlive.end`): blank lines between requests, read while it waits, do not push it.
"""

from __future__ import annotations

from typing import Protocol

import trio


class Waiting(Protocol):
    """A connection's wait (``streams.Deadline``; a cancel scope in the tests)."""

    def cancel(self) -> None:
        """End the wait."""
        ...


class KeepAlive:
    """The waits of idle connections (each cancelled when due)."""

    def __init__(self, timeout: float) -> None:
        self._timeout = timeout
        # wait → when it is due, in the order the waits began (which is deadline order)
        self._waiting: dict[Waiting, float] = {}

    def begin(self, wait: Waiting) -> None:
        """``wait``'s connection waits for a request from now, or, if it already waits, still
        waits (its deadline stays)."""
        if wait not in self._waiting:
            self._waiting[wait] = trio.current_time() + self._timeout

    def end(self, wait: Waiting) -> None:
        """``wait`` is over (a request began, or the connection ends)."""
        self._waiting.pop(wait, None)

    def cancel_all(self) -> None:
        """End every connection waiting now (a drain)."""
        for wait in self._waiting:
            wait.cancel()
        self._waiting.clear()

    async def sweep(self) -> None:
        """Cancel each wait when it is due, until cancelled."""
        waiting = self._waiting
        while True:
            now = trio.current_time()
            while waiting:
                oldest = next(iter(waiting))
                if waiting[oldest] > now:
                    break
                del waiting[oldest]
                oldest.cancel()
            await trio.sleep_until(next(iter(waiting.values()), now + self._timeout))
