"""The executions that left memory (passivated, or not yet brought back after a restart): each
one's wake-up time, and the task that brings them back when it comes.

An entry costs a dict slot and, with a wake-up, a heap entry — not an actor. Entries are popped
when an execution is brought back (by a command, its wake-up, or the restart's background
recovery); a heap entry left behind by a popped execution is skipped when it comes up.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Sequence

import trio

from ..actors.clock import Clock
from ..store.base import WakeEntry


class Dormant:
    """Executions out of memory by id, and their wake-ups; :meth:`run` calls ``wake`` with each
    id whose time has come (the id is popped first)."""

    def __init__(self, clock: Clock, wake: Callable[[str], object]) -> None:
        self._clock = clock
        self._wake = wake
        self._wake_at: dict[str, int | None] = {}
        self._children: set[str] = set()  # entries with a parent (roots are the others)
        self._heap: list[tuple[int, str]] = []
        self._changed = trio.Event()

    def __len__(self) -> int:
        return len(self._wake_at)

    def __contains__(self, execution_id: object) -> bool:
        return execution_id in self._wake_at

    @property
    def roots(self) -> int:
        """How many entries were started without a parent."""
        return len(self._wake_at) - len(self._children)

    def add(self, execution_id: str, wake_at_ms: int | None, root: bool) -> None:
        """Keep ``execution_id`` out of memory until a command or ``wake_at_ms`` needs it."""
        self._wake_at[execution_id] = wake_at_ms
        if not root:
            self._children.add(execution_id)
        if wake_at_ms is not None:
            if not self._heap or wake_at_ms < self._heap[0][0]:
                self._changed.set()
            heapq.heappush(self._heap, (wake_at_ms, execution_id))

    def load(self, entries: Sequence[WakeEntry]) -> None:
        """Add entries of the store's wake-up index in bulk (a restart loads them all, a page
        at a time): an empty heap is built at once, a page is pushed into a large one."""
        self._wake_at.update((e.execution_id, e.wake_at_ms) for e in entries)
        self._children.update(e.execution_id for e in entries if not e.root)
        timed = [(e.wake_at_ms, e.execution_id) for e in entries if e.wake_at_ms is not None]
        if len(timed) * 8 < len(self._heap):
            for item in timed:
                heapq.heappush(self._heap, item)
        else:
            self._heap.extend(timed)
            heapq.heapify(self._heap)
        self._changed.set()

    def pop(self, execution_id: str) -> bool | None:
        """Take ``execution_id`` out: whether it is a root, or None when it was not here."""
        if execution_id not in self._wake_at:
            return None
        del self._wake_at[execution_id]
        if execution_id in self._children:
            self._children.discard(execution_id)
            return False
        return True

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Bring back each execution when its wake-up time comes."""
        task_status.started()
        while True:
            self._changed = trio.Event()
            due = self._wake_due(self._clock.now_ms())
            deadline = math.inf if due is None else self._clock.deadline(due)
            with trio.move_on_at(deadline):
                await self._changed.wait()

    def _wake_due(self, now_ms: int) -> int | None:
        """Wake every entry due at ``now_ms``; returns the next wake-up, if any."""
        heap = self._heap
        while heap and heap[0][0] <= now_ms:
            wake_at, execution_id = heapq.heappop(heap)
            if self._wake_at.get(execution_id, -1) == wake_at:
                self._wake(execution_id)
        if len(heap) > 64 and len(heap) > 2 * len(self._wake_at):
            self._heap = [(w, i) for w, i in heap if self._wake_at.get(i, -1) == w]
            heapq.heapify(self._heap)
        return self._heap[0][0] if self._heap else None
