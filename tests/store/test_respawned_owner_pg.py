"""Shared mode in one process: an owner whose execution actor is respawned from its history (a
commit failed: the database failing over) while a worker connected to another server holds one
of its attempts. The attempt is adopted again, as one held by a session of the owner's own is:
the worker's result is taken, and the task does not run a second time."""

from __future__ import annotations

import itertools

import pytest
import trio

from orbit_actors.errors import StorageError
from orbit_actors.store.base import Commit
from orbit_actors.testing import FakeWorker
from orbit_actors.wire import messages as wire
from tests.pg import PostgresServer

from .test_cluster_pg import server

pytestmark = pytest.mark.trio

NAP_THEN_GO = """
workflow: one
version: 1.0.0
tasks: {nap: {version: "1"}}
signals: {go: null}
steps: [{id: a, task: nap, input: {n: 1}}, {id: wait, await: go}]
output: "${steps.a.output}"
"""
_numbers = itertools.count()


@pytest.fixture
def database(postgres: PostgresServer) -> str:
    return postgres.create_database(f"respawned_owner_{next(_numbers)}")


async def test_an_attempt_held_on_another_server_is_adopted_again_when_its_owner_respawns(
    database: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with server(database, "a") as a:
        await a.register_definition(NAP_THEN_GO)
        await a.start("one", execution_id="e1")  # no worker here: the unit is published
        async with server(database, "b") as b, trio.open_nursery() as nursery:
            worker = FakeWorker(b, "w1", [("nap", "1")], auto=False)  # holds what it gets
            await nursery.start(worker.serve)
            task = await worker.first_task(within=10)
            commit = a.store.commit
            failed: list[Commit] = []

            async def failing_once(done: Commit) -> None:
                if not failed:  # the database failing over: nothing written
                    failed.append(done)
                    raise StorageError("could not write to the database: the connection broke")
                await commit(done)

            monkeypatch.setattr(a.store, "commit", failing_once)
            with pytest.raises(StorageError):
                await a.signal("e1", "go", None)  # the actor stops, and is respawned
            await a.signal("e1", "go", None)  # taken by the respawned actor
            await trio.sleep(1)  # time for an attempt made uncertain to be redelivered
            ack = await worker.complete(task.token, {"n": 1})
            assert (await a.wait("e1", timeout=10)).status == "completed"
            nursery.cancel_scope.cancel()
        history = [event.type for event in await a.history("e1")]
    assert [t.token for t in worker.tasks] == [task.token]  # it ran once
    assert "StepAttemptUncertain" not in history
    assert getattr(ack, "accepted", None) is True


async def test_a_result_the_respawning_owner_did_not_record_leaves_the_attempt_with_its_session(
    database: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with server(database, "a") as a:
        await a.register_definition(NAP_THEN_GO)
        await a.start("one", execution_id="e1")
        async with server(database, "b") as b, trio.open_nursery() as nursery:
            worker = FakeWorker(b, "w1", [("nap", "1")], auto=False)
            await nursery.start(worker.serve)
            task = await worker.first_task(within=10)
            commit = a.store.commit
            failed: list[Commit] = []

            async def failing_once(done: Commit) -> None:
                if not failed:
                    failed.append(done)
                    raise StorageError("could not write to the database: the connection broke")
                await commit(done)

            monkeypatch.setattr(a.store, "commit", failing_once)
            refused = await worker.complete(task.token, {"n": 1})
            assert isinstance(refused, wire.ErrorMessage) and refused.code == "STORAGE_ERROR"
            await worker.connection.handle(wire.Unregister(type="unregister"))  # never resent
            rescuer = FakeWorker(b, "w2", [("nap", "1")])
            await nursery.start(rescuer.serve)
            await a.signal("e1", "go", None)
            assert (await a.wait("e1", timeout=10)).status == "completed"
            nursery.cancel_scope.cancel()
        uncertain = [e for e in await a.history("e1") if e.type == "StepAttemptUncertain"]
    assert [e.reason for e in uncertain] == ["worker unregistered"]
    assert rescuer.tasks[0].redelivery
