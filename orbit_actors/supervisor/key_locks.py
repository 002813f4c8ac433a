"""One lock per key, kept only while someone holds or waits for it.

A key's lock is forgotten when its last user leaves, counted by users rather than read off the
lock: trio hands a released lock straight to the next waiter, so a holder leaving sees nobody
waiting and the lock free-looking while the waiter already holds it. Forgetting the lock then
would let a third task take a fresh lock for the same key beside the waiter.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import trio


class _Entry:
    __slots__ = ("lock", "users")

    def __init__(self) -> None:
        self.lock = trio.Lock()
        self.users = 0  # holding or waiting


class KeyLocks:
    """Mutual exclusion per key among the tasks of one trio loop."""

    def __init__(self) -> None:
        self._entries: dict[str, _Entry] = {}

    def busy(self, key: str) -> bool:
        """True while a task holds or waits for ``key``'s lock."""
        return key in self._entries

    @asynccontextmanager
    async def hold(self, key: str) -> AsyncIterator[None]:
        """Hold ``key``'s lock for the block (waiting for the task holding it first)."""
        entry = self._entries.get(key)
        if entry is None:
            entry = self._entries[key] = _Entry()
        entry.users += 1
        try:
            async with entry.lock:
                yield
        finally:
            entry.users -= 1
            if not entry.users:
                del self._entries[key]
