"""Supervision: a crashing actor is respawned from its durable history without disturbing its
neighbours; past the restart intensity it is quarantined until resumed."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
import trio
from trio.testing import MockClock

from orbit_actors.actors import execution as execution_module
from orbit_actors.errors import (
    ActorGoneError,
    NotQuarantinedError,
    QuarantinedError,
    StorageError,
)
from orbit_actors.mailbox import Command, Reply
from orbit_actors.runtime import Runtime
from orbit_actors.testing import FakeWorker

from .conftest import workflow

WAITING = workflow("""
signals: {go: null}
steps: [{id: wait, await: go}, {id: work, task: t}]
output: {got: "${steps.wait.output}"}
""")


@dataclass(eq=False)
class Explode(Command):
    """A command no actor knows: handling it is a bug, so the actor crashes."""


async def crash(runtime: Runtime, execution_id: str) -> None:
    mailbox = runtime.supervisor.mailbox(execution_id)
    assert mailbox is not None
    with pytest.raises(ActorGoneError, match="crashed"):
        await mailbox.request(Explode(reply=Reply()))


async def test_a_crashed_actor_is_respawned_from_history_and_its_neighbour_is_untouched(
    runtime: Runtime, autojump_clock: MockClock
) -> None:
    await runtime.register_definition(WAITING)
    await runtime.start("wf", execution_id="victim")
    await runtime.start("wf", execution_id="neighbour")
    await runtime.signal("victim", "go", 1)
    neighbour_mailbox = runtime.supervisor.mailbox("neighbour")
    await crash(runtime, "victim")
    assert runtime.supervisor.stats.restarts == 1
    assert runtime.supervisor.mailbox("neighbour") is neighbour_mailbox
    worker = FakeWorker(runtime, "w1", [("t", "1")])
    async with trio.open_nursery() as nursery:
        await nursery.start(worker.serve)
        assert (await runtime.wait("victim", 60)).status == "completed"
        assert (await runtime.describe("victim")).output == {"got": 1}
        await runtime.signal("neighbour", "go", 2)
        assert (await runtime.wait("neighbour", 60)).status == "completed"
        nursery.cancel_scope.cancel()


async def test_a_poison_execution_is_quarantined_then_resumed(
    runtime: Runtime, autojump_clock: MockClock
) -> None:
    await runtime.register_definition(WAITING)
    await runtime.start("wf", execution_id="poison")
    for _ in range(5):
        await crash(runtime, "poison")
    mailbox = runtime.supervisor.mailbox("poison")
    assert mailbox is not None
    with pytest.raises(ActorGoneError):
        await mailbox.request(Explode(reply=Reply()))
    assert runtime.supervisor.stats.quarantines == 1
    detail = await runtime.describe("poison")
    assert (
        detail.quarantined is True
        and detail.status == "running"
        and "Explode" in (detail.last_error or "")
    )
    with pytest.raises(QuarantinedError, match="resume it"):
        await runtime.signal("poison", "go", 1)
    detail = await runtime.resume("poison")
    assert detail.quarantined is False
    await runtime.signal("poison", "go", 1)
    with pytest.raises(NotQuarantinedError):
        await runtime.resume("poison")


async def test_restarts_spread_over_time_do_not_quarantine(
    runtime: Runtime, autojump_clock: MockClock
) -> None:
    await runtime.register_definition(WAITING)
    await runtime.start("wf", execution_id="flaky")
    for _ in range(8):
        await crash(runtime, "flaky")
        await trio.sleep(20)
    assert runtime.supervisor.stats.quarantines == 0


async def test_a_child_finishing_while_its_parent_is_respawned_is_not_lost(
    runtime: Runtime, autojump_clock: MockClock
) -> None:
    await runtime.register_definition(
        workflow("steps: [{id: work, task: t}]\noutput: {ok: true}\n", name="kid")
    )
    await runtime.register_definition(
        workflow(
            "workflows: {kid: {version: 1.0.0}}\nsteps: [{id: k, workflow: kid}]\noutput: '${steps.k.output}'\n",
            name="parent",
        )
    )
    worker = FakeWorker(runtime, "w1", [("t", "1")], auto=False)
    async with trio.open_nursery() as nursery:
        await nursery.start(worker.serve)
        await runtime.start("parent", execution_id="p")
        await worker.first_task(within=60)
        mailbox = runtime.supervisor.mailbox("p")
        assert mailbox is not None
        explode = Explode(reply=Reply())
        mailbox.send_nowait(explode)  # the parent crashes ...
        await worker.answer(worker.tasks[0])  # ... while its child finishes
        assert (await runtime.wait("p", 60)).status == "completed"
        assert (await runtime.describe("p")).output == {"ok": True}
        nursery.cancel_scope.cancel()


@dataclass(eq=False)
class StoreFails(Command):
    """Handled as if the store could not write (a full disk)."""


async def _store_fails(actor: object, command: StoreFails) -> None:
    raise StorageError("could not write to test.db: the disk is full")


async def test_an_actor_stopped_by_storage_errors_is_respawned_and_never_quarantined(
    runtime: Runtime, autojump_clock: MockClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(execution_module._HANDLERS, StoreFails, _store_fails)
    await runtime.register_definition(WAITING)
    await runtime.start("wf", execution_id="patient")
    mailbox = runtime.supervisor.mailbox("patient")
    assert mailbox is not None
    for _ in range(10):  # twice the restart intensity, each one crashing the actor
        mailbox.send_nowait(StoreFails())
    await trio.sleep(60)
    assert runtime.supervisor.stats.restarts == 10
    assert runtime.supervisor.stats.quarantines == 0
    await runtime.signal("patient", "go", 1)
    worker = FakeWorker(runtime, "w1", [("t", "1")])
    async with trio.open_nursery() as nursery:
        await nursery.start(worker.serve)
        assert (await runtime.wait("patient", 60)).status == "completed"
        nursery.cancel_scope.cancel()
