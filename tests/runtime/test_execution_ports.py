"""An execution actor spawned on its own, with fakes for every port: what it asks of the worker
pool, and in which order, is the whole of how it dispatches."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest
import trio
from trio.testing import MockClock

from orbit_actors.actors import commands as cmd
from orbit_actors.actors.clock import Clock
from orbit_actors.actors.execution import ExecutionActor, ExecutionPorts
from orbit_actors.actors.pool import Held
from orbit_actors.decide import transitions as pure
from orbit_actors.decide.invocation import RateTake, TaskInvocation
from orbit_actors.errors import StorageError
from orbit_actors.history.apply import replay
from orbit_actors.history.events import Event
from orbit_actors.history.state import ExecutionState
from orbit_actors.ir import compile_source
from orbit_actors.ir.plan import CompiledDefinition
from orbit_actors.mailbox import Command, Mailbox, Reply
from orbit_actors.store.base import Commit, RateCharge, RateLimited
from orbit_actors.testing import MemoryStore
from orbit_actors.wire.server_fields import TaskFields

from ..store.helpers import events, row
from .conftest import workflow

TWO = workflow("steps: [{id: a, task: t, input: {n: 1}}, {id: b, task: t, input: {n: 2}}]\n")
RATED = """
workflow: rated
version: 1.0.0
input: {type: object, properties: {m: {type: string}}}
tasks: {t: {version: "1", rate_limit: {key: '${input.m}', limit: 1, per: 1s}}}
steps: [{id: a, task: t}]
"""


@dataclass
class FakePool:
    """A pool with one session of one slot, recording every call in order."""

    free: int = 1
    calls: list[str] = field(default_factory=list)
    pushed: list[TaskFields] = field(default_factory=list)

    def enqueue(self, execution_id: str, unit: TaskInvocation) -> None:
        self.calls.append(f"enqueue {unit.key}")

    def claim(self, unit: TaskInvocation, token: str, now_ms: int) -> tuple[str, str] | None:
        if self.free == 0:
            self.calls.append(f"claim {unit.key}: none free")
            return None
        self.free -= 1
        self.calls.append(f"claim {unit.key}")
        return "s1", "w1"

    def release(self, token: str) -> None:
        self.free += 1
        self.calls.append("release")

    def withdraw(self, execution_id: str, unit: TaskInvocation) -> None:
        self.calls.append(f"withdraw {unit.key}")

    def take_rate(self, execution_id: str, unit: TaskInvocation, now_ms: int) -> bool:
        return True

    def rates_not_taken(
        self, charges: Sequence[RateCharge], limited: RateLimited | None = None
    ) -> None:
        if limited is not None:
            self.calls.append(f"refused {len(charges)}, opens at {limited.opens_at_ms}")

    def hold(self, execution_id: str, unit: TaskInvocation, now_ms: int) -> None:
        self.calls.append(f"hold {unit.key}")

    def push(self, task: TaskFields, now_ms: int) -> None:
        self.pushed.append(task)
        self.calls.append(f"push {task['step_id']}")

    def settle(self, token: str) -> Held | None:
        self.free += 1
        self.calls.append(f"settle {self.step_of(token)}")
        return Held(token, "s1", 0)

    def restore(self, held: Held) -> bool:
        self.free -= 1
        self.calls.append("restore")
        return True

    def cancel(self, tokens: dict[str, str]) -> None:
        self.calls.append(f"cancel {len(tokens)}")

    def step_of(self, token: str) -> str:
        return next(t["step_id"] for t in self.pushed if t["token"] == token)


@dataclass
class Fakes:
    """Every port but the pool as a list of what it was told."""

    store: MemoryStore = field(default_factory=MemoryStore)
    pool: FakePool = field(default_factory=FakePool)
    committed: list[list[str]] = field(default_factory=list)
    finished: list[str] = field(default_factory=list)

    def ports(self) -> ExecutionPorts:
        def committed(state: ExecutionState, events: list[Event], seconds: float) -> None:
            self.committed.append([event.type for event in events])

        def finished(state: ExecutionState, definition: CompiledDefinition) -> None:
            self.finished.append(state.status)

        def nothing(*args: Any) -> None:
            pass

        return ExecutionPorts(
            store=self.store, clock=Clock(0), instance_id="i", pool=self.pool, adopt=nothing,
            cancel_tokens=nothing, start_child=nothing, cancel_child=nothing,
            terminate_child=nothing, run_http=nothing,
            committed=committed, finished=finished,
        )  # fmt: skip


async def spawned(
    nursery: trio.Nursery, fakes: Fakes, source: str = TWO, input: dict[str, Any] | None = None
) -> Mailbox[Command]:
    """A new execution of ``source`` (TWO), its actor running with ``fakes``."""
    definition = compile_source(source)
    events = pure.start_run(
        definition, execution_id="e", input=input or {}, now=0,
        limits=pure.effective_limits(pure.ServerLimits(), definition),
    )  # fmt: skip
    mailbox: Mailbox[Command] = Mailbox("execution `e`")
    actor = ExecutionActor(fakes.ports(), definition, replay(events), mailbox)
    await nursery.start(actor.run, events)
    return mailbox


async def result(mailbox: Mailbox[Command], token: str) -> pure.Verdict:
    verdict: pure.Verdict = await mailbox.request(
        cmd.ReportResult(token, "w1", {"ok": True}, reply=Reply())
    )
    return verdict


async def test_the_first_task_is_claimed_in_the_creating_commit_and_pushed_after_it(
    autojump_clock: MockClock,
) -> None:
    fakes = Fakes()
    async with trio.open_nursery() as nursery:
        await spawned(nursery, fakes)
        assert fakes.pool.calls == ["claim a", "push a"]
        assert fakes.committed == [
            ["WorkflowCreated", "WorkflowStarted", "StepScheduled", "StepDispatched"]
        ]
        nursery.cancel_scope.cancel()


async def test_a_result_frees_its_slot_for_the_next_unit_in_the_same_commit(
    autojump_clock: MockClock,
) -> None:
    fakes = Fakes()
    async with trio.open_nursery() as nursery:
        mailbox = await spawned(nursery, fakes)
        verdict = await result(mailbox, fakes.pool.pushed[0]["token"])
        assert verdict.accepted
        assert fakes.pool.calls == ["claim a", "push a", "settle a", "claim b", "push b"]
        assert fakes.committed[1] == ["StepSucceeded", "StepScheduled", "StepDispatched"]
        await result(mailbox, fakes.pool.pushed[1]["token"])
        assert fakes.finished == ["completed"]
        assert len(fakes.committed) == 3


async def test_a_unit_with_no_free_slot_waits_in_the_pool(autojump_clock: MockClock) -> None:
    fakes = Fakes()
    fakes.pool.free = 0
    async with trio.open_nursery() as nursery:
        await spawned(nursery, fakes)
        assert fakes.pool.calls == ["claim a: none free", "enqueue a"]
        nursery.cancel_scope.cancel()


async def test_a_stale_offer_gives_its_reservation_back(autojump_clock: MockClock) -> None:
    fakes = Fakes()
    async with trio.open_nursery() as nursery:
        mailbox = await spawned(nursery, fakes)  # `a` is dispatched already
        mailbox.send_nowait(cmd.OfferDispatch("a", 1, "tok@e", "w1", "s1"))
        await trio.testing.wait_all_tasks_blocked()
        assert fakes.pool.calls[-1] == "release"
        nursery.cancel_scope.cancel()


async def test_a_result_not_recorded_holds_its_token_again_and_stops_the_actor(
    autojump_clock: MockClock,
) -> None:
    """Its memory may hold what the store does not: the actor stops (the supervisor tells the
    worker and respawns it from the store) rather than answer anything from that memory."""
    fakes = Fakes()
    with pytest.RaisesGroup(pytest.RaisesExc(StorageError, match="disk full")):
        async with trio.open_nursery() as nursery:
            mailbox = await spawned(nursery, fakes)
            fakes.store.fail_next_commit = "disk full"
            command = cmd.ReportResult(fakes.pool.pushed[0]["token"], "w1", {}, reply=Reply())
            mailbox.send_nowait(command)
    assert fakes.pool.calls[-2:] == ["release", "restore"]


async def charged_once_at_zero(store: MemoryStore) -> None:
    """Another execution dispatched task ``t`` for key ``m`` at 0: its window opens at 1000."""
    charge = RateCharge(RateTake("t", "m", 1, 1000), 0)
    await store.commit(Commit(row("other"), events(1, 1), create=True, rates=(charge,)))


async def test_a_dispatch_the_store_refuses_over_its_rate_limit_waits_and_the_rest_is_written(
    autojump_clock: MockClock,
) -> None:
    fakes = Fakes()
    await charged_once_at_zero(fakes.store)
    async with trio.open_nursery() as nursery:
        await spawned(nursery, fakes, RATED, {"m": "m"})
        assert fakes.pool.calls == ["claim a", "release", "refused 1, opens at 1000", "enqueue a"]
        assert fakes.committed == [["WorkflowCreated", "WorkflowStarted", "StepScheduled"]]
        nursery.cancel_scope.cancel()


async def test_an_offer_the_store_refuses_over_its_rate_limit_is_held_and_dispatched_later(
    autojump_clock: MockClock,
) -> None:
    fakes = Fakes(pool=FakePool(free=0))
    await charged_once_at_zero(fakes.store)
    async with trio.open_nursery() as nursery:
        mailbox = await spawned(nursery, fakes, RATED, {"m": "m"})
        await mailbox.send(cmd.OfferDispatch("a", 1, "tok@e", "w1", "s1"))
        await trio.testing.wait_all_tasks_blocked()
        assert fakes.pool.calls[2:] == ["refused 1, opens at 1000", "release", "hold a"]
        assert len(fakes.committed) == 1  # nothing of the refused dispatch
        await trio.sleep(1)
        await mailbox.send(cmd.OfferDispatch("a", 1, "tok2@e", "w1", "s1"))
        await trio.testing.wait_all_tasks_blocked()
        assert fakes.committed[1] == ["StepDispatched"]
        assert fakes.pool.calls[-1] == "push a"
        nursery.cancel_scope.cancel()
