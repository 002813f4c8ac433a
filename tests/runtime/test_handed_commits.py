"""Commits handed over (``ExecutionActor._settle``): on a SQL store a result's or a start's
commit goes to the group writer without the actor waiting on it; whichever task hands the
outcome out publishes the batch and answers, and the actor is woken by its next command. On a
real SQLite file and the real clock: the actor takes one task step per result, and still serves
a command that comes meanwhile, its own wake-ups, passivation, and a cancel."""

from __future__ import annotations

from collections import Counter
from functools import partial
from pathlib import Path

import trio

from orbit_actors.actors.execution import Passivation
from orbit_actors.runtime import RuntimeConfig, open_runtime
from orbit_actors.store import open_sqlite_store
from orbit_actors.testing import FakeWorker

from .conftest import THREE, served, workflow

SIGNALLED = workflow(
    "signals: {go: null}\nsteps: [{id: a, task: t, input: {n: '${input.n}'}}, {id: w, await: go}]\n"
)
NAP = workflow("steps: [{id: a, task: t}, {id: nap, sleep: 300ms}, {id: b, task: t}]\n")
ACTOR = "orbit.execution-actor"


class ActorSteps(trio.abc.Instrument):
    """Counts the task steps of execution actors."""

    def __init__(self) -> None:
        self.steps: Counter[str] = Counter()

    def before_task_step(self, task: trio.lowlevel.Task) -> None:
        self.steps[task.name] += 1


async def test_an_execution_of_three_results_takes_one_actor_step_per_result(
    tmp_path: Path,
) -> None:
    steps = ActorSteps()
    with trio.fail_after(60):
        async with served(tmp_path / "o.db", THREE) as (runtime, _worker, nursery):
            trio.lowlevel.add_instrument(steps)
            async with trio.open_nursery() as starts:
                for n in range(40):
                    starts.start_soon(
                        partial(runtime.start, "wf", input={"n": n}, execution_id=f"e{n}")
                    )
            for n in range(40):
                assert (await runtime.wait(f"e{n}", 30)).output == {"n": n}
            trio.lowlevel.remove_instrument(steps)
            nursery.cancel_scope.cancel()
    # the start, one per result, and the end: 5, and one more per commit whose actor watched for
    # its batch itself (8 when each commit woke its actor once more)
    assert steps.steps[ACTOR] / 40 <= 6.5, steps.steps[ACTOR] / 40


async def test_a_command_sent_while_a_result_commits_is_served_after_it(tmp_path: Path) -> None:
    with trio.fail_after(60):
        async with served(tmp_path / "o.db", SIGNALLED, auto=False) as (runtime, worker, nursery):
            for n in range(20):
                await runtime.start("wf", input={"n": n}, execution_id=f"e{n}")
            tasks = await worker.wait_for_tasks(20)
            async with trio.open_nursery() as both:
                for n, task in enumerate(tasks):
                    both.start_soon(worker.complete, task.token, {"n": n})
                    both.start_soon(runtime.signal, task.execution_id, "go", None)
            for n in range(20):
                assert (await runtime.wait(f"e{n}", 30)).status == "completed"
            history = await runtime.history("e3")
            types = [event.type for event in history]
            assert types.index("StepSucceeded") < types.index("WorkflowCompleted")
            assert "SignalReceived" in types
            nursery.cancel_scope.cancel()


async def test_a_wake_up_of_its_own_after_a_result_is_kept(tmp_path: Path) -> None:
    with trio.fail_after(60):
        async with served(tmp_path / "o.db", NAP) as (runtime, _worker, nursery):
            for n in range(10):
                await runtime.start("wf", execution_id=f"e{n}")
            for n in range(10):
                assert (await runtime.wait(f"e{n}", 30)).status == "completed"
            nursery.cancel_scope.cancel()


async def test_an_execution_resting_after_a_result_still_leaves_memory(tmp_path: Path) -> None:
    config = RuntimeConfig(passivation=Passivation(idle_s=0.2, near_s=0.2))
    with trio.fail_after(60):
        async with served(tmp_path / "o.db", SIGNALLED, config=config) as (runtime, _, _):
            for n in range(10):
                await runtime.start("wf", input={"n": n}, execution_id=f"e{n}")
            while runtime.supervisor.stats.passivations < 10:
                await trio.sleep(0.05)
            for n in range(10):
                await runtime.signal(f"e{n}", "go", None)
                assert (await runtime.wait(f"e{n}", 30)).status == "completed"


async def test_a_runtime_closes_while_its_actors_wait_after_a_handed_commit(
    tmp_path: Path,
) -> None:
    with trio.fail_after(60):
        async with open_sqlite_store(tmp_path / "o.db") as store:
            async with open_runtime(store) as runtime:
                await runtime.register_definition(SIGNALLED)
                worker = FakeWorker(runtime, "w1", [("t", "1")])
                async with trio.open_nursery() as nursery:
                    await nursery.start(worker.serve)
                    for n in range(10):
                        await runtime.start("wf", input={"n": n}, execution_id=f"e{n}")
                    while len(worker.tasks) < 10:
                        await trio.sleep(0.01)
                    await trio.sleep(0.2)  # the results are recorded: each actor waits
                    nursery.cancel_scope.cancel()
            async with open_runtime(store) as runtime:
                for n in range(10):
                    await runtime.signal(f"e{n}", "go", None)
                    assert (await runtime.wait(f"e{n}", 30)).status == "completed"
