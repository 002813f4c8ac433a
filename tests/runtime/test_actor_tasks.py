"""Actors run in the tasks of ended ones (``supervisor/actor_tasks.py``): a new execution costs
a reschedule instead of a task spawn; at most ``keep`` tasks wait; a nursery closing ends them."""

from __future__ import annotations

import trio
import trio.testing

from orbit_actors.runtime import Runtime
from orbit_actors.supervisor.actor_tasks import ACTOR, ActorTasks
from orbit_actors.testing import FakeWorker

from .conftest import workflow


class Spawns(trio.abc.Instrument):
    """Counts the tasks spawned, by name."""

    def __init__(self) -> None:
        self.names: list[str] = []

    def task_spawned(self, task: trio.lowlevel.Task) -> None:
        self.names.append(task.name)


async def test_executions_one_after_another_run_in_one_actor_task(
    runtime: Runtime, autojump_clock: trio.testing.MockClock
) -> None:
    await runtime.register_definition(workflow("steps: [{id: a, task: t}]\n"))
    worker = FakeWorker(runtime, "w1", [("t", "1")])
    spawns = Spawns()
    async with trio.open_nursery() as nursery:
        await nursery.start(worker.serve)
        trio.lowlevel.add_instrument(spawns)
        for n in range(5):
            await runtime.start("wf", execution_id=f"e{n}")
            assert (await runtime.wait(f"e{n}", 30)).status == "completed"
        trio.lowlevel.remove_instrument(spawns)
        nursery.cancel_scope.cancel()
    assert spawns.names.count(ACTOR) <= 1


async def test_at_most_keep_tasks_wait_and_a_waiting_one_runs_the_next_job() -> None:
    spawns = Spawns()
    ran: list[tuple[str, trio.lowlevel.Task]] = []
    go = trio.Event()

    async def job(name: str) -> None:
        ran.append((name, trio.lowlevel.current_task()))
        await go.wait()

    async with trio.open_nursery() as nursery:
        tasks = ActorTasks(nursery, keep=1)
        trio.lowlevel.add_instrument(spawns)
        tasks.start_soon(job, "a")
        tasks.start_soon(job, "b")
        await trio.testing.wait_all_tasks_blocked()
        go.set()
        await trio.testing.wait_all_tasks_blocked()  # one waits, the other has ended
        go = trio.Event()
        tasks.start_soon(job, "c")
        await trio.testing.wait_all_tasks_blocked()
        trio.lowlevel.remove_instrument(spawns)
        # a and b in either order (trio runs the tasks of a batch in a random order), then c
        assert sorted(name for name, _ in ran[:2]) == ["a", "b"] and ran[2][0] == "c"
        assert ran[2][1] in (ran[0][1], ran[1][1])  # c runs in a's or b's task
        assert spawns.names == [ACTOR, ACTOR]
        go.set()
        await trio.testing.wait_all_tasks_blocked()
        nursery.cancel_scope.cancel()  # the waiting task ends: the nursery closes


async def test_a_job_that_fails_fails_its_nursery_as_a_new_task_would() -> None:
    async def fail() -> None:
        raise ValueError("boom")

    try:
        async with trio.open_nursery() as nursery:
            ActorTasks(nursery).start_soon(fail)
    except* ValueError:
        pass
    else:
        raise AssertionError("the failure was lost")
