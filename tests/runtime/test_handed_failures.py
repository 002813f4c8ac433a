"""Commits handed over (``ExecutionActor._settle``) on a real SQLite file, results reported
together so that their commits go to the group writer while another request watches: a batch
the store fails answers each of its results with the error and publishes nothing (the results
sent again are taken); a fault while publishing a batch in another actor's task crashes that
batch's actor only; and no task is pushed, no result acknowledged, before its commit is
durable; a runtime that closes while handed commits are in flight waits for them. A fault while
publishing a durable batch leaves nothing undone after the respawn: the tasks it dispatched are
sent, and a start's is answered as started."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest
import trio

from orbit_actors.actors.execution import ExecutionActor
from orbit_actors.errors import StorageError
from orbit_actors.history.events import StepDispatched, StepSucceeded
from orbit_actors.runtime import open_runtime
from orbit_actors.store import open_sqlite_store
from orbit_actors.store.group import CommitWork, GroupWriter, _refusal
from orbit_actors.testing import FakeWorker
from orbit_actors.wire import messages as wire

from .conftest import THREE, served, workflow

TWO = workflow("steps: [{id: a, task: t}, {id: b, task: t}]\n")


async def test_results_whose_handed_commits_failed_are_refused_then_taken_when_sent_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    failing = False
    attempt = GroupWriter._attempt

    def attempt_or_fail(self: GroupWriter[Any], batch: list[Any]) -> None:
        if failing:
            raise StorageError("could not write to o.db: disk full")
        attempt(self, batch)

    monkeypatch.setattr(GroupWriter, "_attempt", attempt_or_fail)
    handed: list[object] = []
    commit_soon = GroupWriter.commit_soon

    def counted(self: GroupWriter[Any], *args: Any) -> Any:
        request = commit_soon(self, *args)
        if request is not None and failing:
            handed.append(request)
        return request

    monkeypatch.setattr(GroupWriter, "commit_soon", counted)
    with trio.fail_after(60):
        async with served(tmp_path / "o.db", TWO, auto=False) as (runtime, worker, nursery):
            for n in range(30):
                await runtime.start("wf", execution_id=f"e{n}")
            firsts = await worker.wait_for_tasks(30)
            failing = True
            answers: dict[str, Any] = {}

            async def complete(token: str) -> None:
                answers[token] = await worker.complete(token, {"n": 1})

            async with trio.open_nursery() as results:
                for task in firsts:
                    results.start_soon(complete, task.token)
            refused = [a for a in answers.values() if isinstance(a, wire.ErrorMessage)]
            assert len(refused) == 30, answers
            assert handed  # some of them were handed over
            await trio.sleep(0.2)
            assert len(worker.tasks) == 30  # nothing of a failed batch was pushed
            failing = False
            async with trio.open_nursery() as results:
                for task in firsts:
                    results.start_soon(complete, task.token)
            for token, answer in answers.items():
                assert isinstance(answer, wire.Ack) and answer.accepted, (token, answer)
            seconds = (await worker.wait_for_tasks(60, within=30))[30:]
            assert {task.step_id for task in seconds} == {"b"}
            async with trio.open_nursery() as results:
                for task in seconds:
                    results.start_soon(complete, task.token)
            for n in range(30):
                assert (await runtime.wait(f"e{n}", 30)).status == "completed"
            nursery.cancel_scope.cancel()


async def test_a_crash_publishing_a_handed_batch_in_another_task_lands_in_its_own_actor(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    published = ExecutionActor._published
    crashed: list[str] = []

    def published_or_crash(
        self: ExecutionActor, batch: Any, claimed: Any, reported: str | None
    ) -> Any:
        handed = self._handed
        elsewhere = handed is not None and handed.task is not trio.lowlevel.current_task()
        units = published(self, batch, claimed, reported)
        # a result's batch, published, then a fault (a bug, say) in what follows
        if elsewhere and reported is not None and not crashed:
            crashed.append(self.execution_id)
            raise RuntimeError("publishing failed")
        return units

    monkeypatch.setattr(ExecutionActor, "_published", published_or_crash)
    with trio.fail_after(60):
        async with served(tmp_path / "o.db", THREE) as (runtime, _worker, nursery):
            for n in range(30):
                await runtime.start("wf", input={"n": n}, execution_id=f"e{n}")
            for n in range(30):
                assert (await runtime.wait(f"e{n}", 30)).output == {"n": n}
            nursery.cancel_scope.cancel()
    assert crashed  # one batch's publishing failed in a task not its actor's
    assert runtime.supervisor.stats.restarts == 1  # its actor's, and only it
    assert f"execution {crashed[0]} crashed" in caplog.text


async def test_nothing_of_a_handed_batch_is_seen_before_it_is_durable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    durable: set[tuple[str, str]] = set()  # (execution, dispatch token or succeeded step)
    attempt = GroupWriter._attempt

    def attempt_slowly(self: GroupWriter[Any], batch: list[Any]) -> None:
        time.sleep(0.01)  # (the writer's thread) a slow disk: the window is wide open
        attempt(self, batch)
        for request in batch:
            work = request.work
            if isinstance(work, CommitWork) and _refusal(work) is None:
                for event in work.commit.events:
                    if isinstance(event, StepDispatched):
                        durable.add((work.commit.row.execution_id, event.token))
                    elif isinstance(event, StepSucceeded):
                        durable.add((work.commit.row.execution_id, event.step))

    monkeypatch.setattr(GroupWriter, "_attempt", attempt_slowly)
    early: list[object] = []
    deliver = FakeWorker._deliver

    def deliver_checked(self: FakeWorker, message: wire.ServerMessage) -> None:
        if isinstance(message, wire.Task) and (message.execution_id, message.token) not in durable:
            early.append(message)  # a task pushed before its dispatch was durable
        deliver(self, message)

    monkeypatch.setattr(FakeWorker, "_deliver", deliver_checked)
    with trio.fail_after(60):
        async with served(tmp_path / "o.db", THREE, auto=False) as (runtime, worker, nursery):
            for n in range(30):
                await runtime.start("wf", input={"n": n}, execution_id=f"e{n}")

            async def complete(task: wire.Task) -> None:
                answer = await worker.complete(task.token, {"n": 1})
                assert isinstance(answer, wire.Ack) and answer.accepted, answer
                if (task.execution_id, task.step_id) not in durable:
                    early.append(answer)  # a result acknowledged before it was durable

            for round_ in range(1, 4):
                tasks = (await worker.wait_for_tasks(30 * round_, within=30))[-30:]
                async with trio.open_nursery() as results:
                    for task in tasks:
                        results.start_soon(complete, task)
            for n in range(30):
                assert (await runtime.wait(f"e{n}", 30)).status == "completed"
            nursery.cancel_scope.cancel()
    assert not early, early


async def test_a_runtime_closes_while_handed_commits_are_in_flight_and_what_it_acked_is_durable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    attempt = GroupWriter._attempt
    hold, held, release = threading.Event(), threading.Event(), threading.Event()

    def attempt_held(self: GroupWriter[Any], batch: list[Any]) -> None:
        if hold.is_set():  # (the writer's thread) a disk that does not answer until released
            held.set()
            release.wait(30)
        attempt(self, batch)

    monkeypatch.setattr(GroupWriter, "_attempt", attempt_held)
    handed: list[Any] = []
    commit_soon = GroupWriter.commit_soon

    def counted(self: GroupWriter[Any], *args: Any) -> Any:
        request = commit_soon(self, *args)
        if request is not None:
            handed.append(request)
        return request

    monkeypatch.setattr(GroupWriter, "commit_soon", counted)
    acknowledged: list[str] = []
    with trio.fail_after(60):
        async with open_sqlite_store(tmp_path / "o.db") as store:
            async with open_runtime(store) as runtime:
                await runtime.register_definition(TWO)
                worker = FakeWorker(runtime, "w1", [("t", "1")], auto=False)
                async with trio.open_nursery() as nursery:
                    await nursery.start(worker.serve)
                    for n in range(30):
                        await runtime.start("wf", execution_id=f"e{n}")
                    tasks = await worker.wait_for_tasks(30)

                    async def complete(task: wire.Task) -> None:
                        answer = await worker.complete(task.token, {"n": 1})
                        if isinstance(answer, wire.Ack) and answer.accepted:
                            acknowledged.append(task.execution_id)

                    for task in tasks[:10]:  # acknowledged, so durable
                        await complete(task)
                    hold.set()
                    for task in tasks[10:]:
                        nursery.start_soon(complete, task)
                    await trio.to_thread.run_sync(held.wait, 30)
                    await trio.sleep(0.05)  # the other results come, their commits handed over
                    assert any(not request.done for request in handed)  # (the writer is held)
                    nursery.cancel_scope.cancel()
                    release.set()  # the closing runtime waits for the commits it handed over
            assert len(acknowledged) == 10
            async with open_runtime(store) as runtime:
                for execution_id in acknowledged:
                    types = [event.type for event in await runtime.history(execution_id)]
                    assert "StepSucceeded" in types, (execution_id, types)


async def test_a_task_claimed_by_a_batch_whose_publishing_crashed_is_delivered_after_the_respawn(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a result's batch dispatches b to the free worker in its commit; a fault before the push
    # (the commit durable, the slot reserved): the respawned actor must send b (its task has no
    # timeout: left reserved and unsent, the execution would wait for ever)
    published = ExecutionActor._published
    crashed: list[str] = []

    def crash_before_pushing(
        self: ExecutionActor, batch: Any, claimed: Any, reported: str | None
    ) -> Any:
        if claimed and reported is not None and not crashed:
            crashed.append(claimed[0]["step_id"])
            raise RuntimeError("publishing failed")
        return published(self, batch, claimed, reported)

    monkeypatch.setattr(ExecutionActor, "_published", crash_before_pushing)
    with trio.fail_after(60):  # a safety net: without the fix it waits for ever
        async with served(tmp_path / "o.db", TWO) as (runtime, worker, nursery):
            await runtime.start("wf", execution_id="e1")
            assert (await runtime.wait("e1", 30)).status == "completed"
            nursery.cancel_scope.cancel()
    assert crashed == ["b"]
    assert runtime.supervisor.stats.restarts == 1
    assert [task.step_id for task in worker.tasks] == ["a", "b"]  # b sent once, not twice


async def test_a_start_whose_first_commit_is_durable_and_whose_publishing_crashed_is_answered(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the start's own batch (a dispatched in its commit) crashes while publishing: the
    # execution is stored, so the start is answered as started, and it runs after the respawn
    published = ExecutionActor._published
    crashed: list[str] = []

    def crash_publishing_the_start(
        self: ExecutionActor, batch: Any, claimed: Any, reported: str | None
    ) -> Any:
        if any(event.type == "WorkflowCreated" for event in batch) and not crashed:
            crashed.append(self.execution_id)
            raise RuntimeError("publishing failed")
        return published(self, batch, claimed, reported)

    monkeypatch.setattr(ExecutionActor, "_published", crash_publishing_the_start)
    with trio.fail_after(60):
        async with served(tmp_path / "o.db", TWO) as (runtime, _worker, nursery):
            assert await runtime.start("wf", execution_id="e1") == ("e1", True)
            assert (await runtime.wait("e1", 30)).status == "completed"
            nursery.cancel_scope.cancel()
    assert crashed == ["e1"]
    assert runtime.supervisor.stats.restarts == 1
