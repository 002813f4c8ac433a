"""The deadlines of callers waiting for executions to end, kept in one heap by one task
(:meth:`WaitDeadlines.serve`) instead of a cancel scope per wait: entering and leaving a scope
with a deadline cost ~59,000 instructions, more than the rest of a wait, and every
``POST /v1/executions?wait=…`` waits once.

A wait that ends before its deadline (the usual case) is only marked as ended; the heap drops it
when it reaches the top, or with every other ended one once they are most of the heap. While the
task does not serve (before the runtime starts it, after it stops), a wait keeps its deadline
with a cancel scope of its own, as before.
"""

from __future__ import annotations

import heapq
import itertools
import math

import trio

COMPACT_AT = 1024  # ended waits the heap may hold before it is rebuilt without them


class Parked:
    """One caller parked in its waiter's list (``owner``) until woken or its deadline."""

    __slots__ = ("deadline", "in_heap", "orphaned", "owner", "task")

    def __init__(
        self, owner: list[Parked], deadline: float, in_heap: bool,
        task: trio.lowlevel.Task | None = None,
    ) -> None:  # fmt: skip
        self.task = task or trio.lowlevel.current_task()
        self.owner: list[Parked] | None = owner  # None once it is no longer parked
        self.deadline = deadline
        self.in_heap = in_heap
        self.orphaned = False  # woken because the serving task stopped, not for its own end


class WaitDeadlines:
    """Parks callers until woken (:meth:`wake`) or their deadline passes."""

    def __init__(self) -> None:
        self._heap: list[tuple[float, int, Parked]] = []
        self._order = itertools.count()  # ties of deadline: first come, first out
        self._ended = 0  # entries of the heap no longer parked
        self._sleep: trio.CancelScope | None = None  # the serving task's, while it serves

    async def wait(self, owner: list[Parked], deadline: float) -> None:
        """Park the current task in ``owner`` until :meth:`wake` or ``deadline`` (a trio time;
        then it leaves ``owner`` and returns all the same); cancellable."""
        sleep = self._sleep
        if sleep is None:
            await self._wait_in_scope(owner, deadline)
            return
        parked = Parked(owner, deadline, in_heap=True)
        heapq.heappush(self._heap, (deadline, next(self._order), parked))
        if deadline < sleep.deadline:
            sleep.deadline = deadline
        await self._park(parked)
        if parked.orphaned:  # the serving task stopped first: the rest of the wait alone
            await self._wait_in_scope(owner, deadline)

    def adopt(
        self, owner: list[Parked], task: trio.lowlevel.Task, deadline: float
    ) -> Parked | None:
        """Count ``task``, parked already by a wait of its own, as parked in ``owner`` until
        :meth:`wake` or ``deadline`` (then it is rescheduled, as :meth:`wait`'s caller would
        be); its wait's abort must call :meth:`abort` with what this returns. None, with nothing
        done, while no task serves the deadlines (a wait keeps a scope of its own then)."""
        sleep = self._sleep
        if sleep is None:
            return None
        parked = Parked(owner, deadline, True, task)
        heapq.heappush(self._heap, (deadline, next(self._order), parked))
        if deadline < sleep.deadline:
            sleep.deadline = deadline
        owner.append(parked)
        return parked

    def abort(self, parked: Parked) -> trio.lowlevel.Abort:
        """A parked caller is cancelled: it leaves its owner (``wait_task_rescheduled``'s
        abort)."""
        if parked.owner is not None:
            parked.owner.remove(parked)
            self._leave(parked)
        return trio.lowlevel.Abort.SUCCEEDED

    def wake(self, owner: list[Parked]) -> None:
        """Wake every caller parked in ``owner``."""
        for parked in owner:
            self._leave(parked)
            trio.lowlevel.reschedule(parked.task)
        owner.clear()
        if self._ended > COMPACT_AT and self._ended > len(self._heap) // 2:
            self._heap = [entry for entry in self._heap if entry[2].owner is not None]
            heapq.heapify(self._heap)
            self._ended = 0

    async def serve(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Wake each parked caller whose deadline has passed, for as long as it runs."""
        task_status.started()
        try:
            while True:
                with trio.CancelScope(deadline=self._first()) as self._sleep:
                    await trio.sleep_forever()
                self._expire(trio.current_time())
        finally:
            self._sleep = None
            self._expire(math.inf, orphaned=True)

    async def _wait_in_scope(self, owner: list[Parked], deadline: float) -> None:
        parked = Parked(owner, deadline, in_heap=False)
        with trio.move_on_at(deadline):
            await self._park(parked)
        if parked.owner is not None:  # its deadline passed
            self._leave(parked)
            owner.remove(parked)

    async def _park(self, parked: Parked) -> None:
        assert parked.owner is not None
        parked.owner.append(parked)
        await trio.lowlevel.wait_task_rescheduled(lambda raise_cancel: self.abort(parked))

    def _leave(self, parked: Parked) -> None:
        parked.owner = None
        self._ended += parked.in_heap

    def _first(self) -> float:
        """The earliest deadline still parked (ended entries on top are dropped)."""
        heap = self._heap
        while heap and heap[0][2].owner is None:
            heapq.heappop(heap)
            self._ended -= 1
        return heap[0][0] if heap else math.inf

    def _expire(self, now: float, orphaned: bool = False) -> None:
        heap = self._heap
        while heap and heap[0][0] <= now:
            parked = heapq.heappop(heap)[2]
            owner = parked.owner
            if owner is None:
                self._ended -= 1
                continue
            parked.owner = None
            parked.orphaned = orphaned
            owner.remove(parked)
            trio.lowlevel.reschedule(parked.task)
