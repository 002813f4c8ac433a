"""The trio tasks execution actors run in. An actor's task, once its execution is done (ended,
passivated, quarantined), parks and waits to run the next actor instead of exiting: a new
execution then costs a reschedule, not a task spawn and a task exit (~17 K instructions more,
callgrind, jobs that checkpoint once). At most ``keep`` tasks wait so; a task beyond that exits
as before, and a burst larger than the tasks waiting spawns the rest.

A parked task belongs to the supervisor's nursery like a new one would (same cancel status, no
cancel scope of its own), and nothing an actor leaves in its task's context carries over: the
runtime sets no context variables. Cancelling the nursery ends the parked tasks at once."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import trio

ACTOR = "orbit.execution-actor"  # one shared task name (trio would build a string per task)
"""The name of every actor's task."""

Job = tuple[Callable[..., Awaitable[object]], tuple[Any, ...]]


class ActorTasks:
    """Runs actors in the tasks of ended ones when any wait, in new tasks otherwise."""

    __slots__ = ("_idle", "_keep", "_nursery")

    def __init__(self, nursery: trio.Nursery, keep: int = 256) -> None:
        self._nursery = nursery
        self._keep = keep
        self._idle: list[_Parked] = []  # the most recently parked last

    def start_soon(self, run: Callable[..., Awaitable[object]], *args: Any) -> None:
        """Run ``run(*args)`` in a task of its own, as ``nursery.start_soon`` would."""
        if self._idle:
            self._idle.pop().hand(run, args)
        else:
            self._nursery.start_soon(self._serve, (run, args), name=ACTOR)

    async def _serve(self, job: Job | None) -> None:
        while job is not None:
            await job[0](*job[1])
            job = None  # (the ended actor's arguments are not kept while parked)
            if len(self._idle) >= self._keep:
                return
            job = await _Parked(self._idle).wait()


class _Parked:
    """A task waiting for its next actor; a cancel (the nursery closing) ends it."""

    __slots__ = ("_idle", "_job", "_task")

    def __init__(self, idle: list[_Parked]) -> None:
        self._idle = idle
        self._task = trio.lowlevel.current_task()
        self._job: Job | None = None

    async def wait(self) -> Job:
        self._idle.append(self)
        await trio.lowlevel.wait_task_rescheduled(self._abort)
        assert self._job is not None
        return self._job

    def hand(self, run: Callable[..., Awaitable[object]], args: tuple[Any, ...]) -> None:
        self._job = (run, args)
        trio.lowlevel.reschedule(self._task)

    def _abort(self, raise_cancel: object) -> trio.lowlevel.Abort:
        self._idle.remove(self)
        return trio.lowlevel.Abort.SUCCEEDED
