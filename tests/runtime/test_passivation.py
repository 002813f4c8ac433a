"""Passivation: an execution with nothing near to do leaves memory and comes back — on a command
at once, on its wake-up on time — and nothing a client or a worker sees changes. After a restart
the runtime serves once the wake-up index is loaded; what had work in flight comes back in the
background."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
import trio
from trio.testing import MockClock

from orbit_actors.actors import commands as cmd
from orbit_actors.actors.clock import Clock
from orbit_actors.actors.execution import Passivation
from orbit_actors.history.events import Event
from orbit_actors.mailbox import Reply
from orbit_actors.runtime import Runtime, RuntimeConfig, open_runtime
from orbit_actors.store.base import WakeEntry
from orbit_actors.testing import FakeWorker, MemoryStore
from orbit_actors.wire import messages as wire

from .conftest import workflow

IDLE = Passivation(idle_s=10.0, near_s=60.0)
APPROVAL = workflow("""
signals: {approve: {type: object}}
queries: {stage: 'steps.wait.output == null ? "waiting" : "approved"'}
steps:
  - {id: wait, await: approve}
  - {id: nap, sleep: 2h}
output: "${steps.wait.output}"
""")
NAPS = workflow("""
steps:
  - {id: nap, sleep: 1h}
  - {id: work, task: t}
output: "${steps.work.output}"
""")
SLOW_RETRY = workflow("""
steps:
  - {id: work, task: t, timeout: 5s, retry: {max_attempts: 2, initial_interval: 1h, max_interval: 2h}}
output: "${steps.work.output}"
""")


def config(passivation: Passivation | None = IDLE) -> RuntimeConfig:
    return RuntimeConfig(session_timeout_ms=30_000, passivation=passivation)


@pytest.fixture
async def runtime(autojump_clock: MockClock) -> AsyncIterator[Runtime]:
    async with open_runtime(MemoryStore(), config()) as rt:
        yield rt


def resident(runtime: Runtime, execution_id: str) -> bool:
    return runtime.supervisor.registry.mailbox_if_live(execution_id) is not None


def dormant(runtime: Runtime, execution_id: str) -> bool:
    return execution_id in runtime.supervisor.registry.dormant


async def passivated(runtime: Runtime, execution_id: str) -> None:
    """Let the idle time pass; the execution has left memory."""
    await trio.sleep(IDLE.idle_s + 1)
    assert dormant(runtime, execution_id) and not resident(runtime, execution_id)


async def completed(runtime: Runtime, execution_id: str, within: float) -> None:
    """A worker serves the execution's tasks until it completes."""
    worker = FakeWorker(runtime, "w", [("t", "1")])
    async with trio.open_nursery() as nursery:
        await nursery.start(worker.serve)
        assert (await runtime.wait(execution_id, within)).status == "completed"
        nursery.cancel_scope.cancel()


async def timers_fired(runtime: Runtime, execution_id: str, since_ms: int) -> list[int]:
    """When the execution's timers fired, in ms since ``since_ms``."""
    events = await runtime.history(execution_id)
    return [e.timestamp_ms - since_ms for e in events if e.type == "TimerFired"]


def shape(events: list[Event]) -> list[tuple[str, int]]:
    """Each event's type and time since the first."""
    return [(e.type, e.timestamp_ms - events[0].timestamp_ms) for e in events]


async def test_a_resting_execution_leaves_memory_after_the_idle_time(
    runtime: Runtime, autojump_clock: MockClock
) -> None:
    await runtime.register_definition(APPROVAL)
    await runtime.start("wf", execution_id="quiet")
    await trio.sleep(IDLE.idle_s - 1)
    assert resident(runtime, "quiet")
    await passivated(runtime, "quiet")
    assert "quiet" in runtime.supervisor.registry  # it still runs
    assert (await runtime.describe("quiet")).status == "running"


async def test_a_passivated_execution_answers_a_query_and_a_signal(
    runtime: Runtime, autojump_clock: MockClock
) -> None:
    await runtime.register_definition(APPROVAL)
    await runtime.start("wf", execution_id="q")
    await passivated(runtime, "q")
    assert await runtime.query("q", "stage") == "waiting"
    await passivated(runtime, "q")
    assert await runtime.signal("q", "approve", {"by": "ann"}) == 4
    assert await runtime.query("q", "stage") == "approved"


async def test_a_passivated_execution_is_cancelled(
    runtime: Runtime, autojump_clock: MockClock
) -> None:
    await runtime.register_definition(APPROVAL)
    await runtime.start("wf", execution_id="c")
    await passivated(runtime, "c")
    await runtime.cancel("c", "not needed")
    assert (await runtime.wait("c", 10)).status == "cancelled"
    assert "c" not in runtime.supervisor.registry


async def test_its_timer_fires_on_time_after_passivation(
    runtime: Runtime, autojump_clock: MockClock
) -> None:
    await runtime.register_definition(NAPS)
    began = runtime.clock.now_ms()
    await runtime.start("wf", execution_id="n")
    await passivated(runtime, "n")
    await completed(runtime, "n", within=3600 + 60)
    assert await timers_fired(runtime, "n", since_ms=began) == [3_600_000]


async def test_a_late_result_reaches_a_passivated_execution_as_it_would_a_live_one(
    autojump_clock: MockClock,
) -> None:
    async def scenario(passivation: Passivation | None) -> tuple[Any, list[tuple[str, int]]]:
        async with open_runtime(MemoryStore(), config(passivation)) as runtime:
            await runtime.register_definition(SLOW_RETRY)
            await runtime.start("wf", execution_id="late")
            worker = FakeWorker(runtime, "w", [("t", "1")], auto=False)
            async with trio.open_nursery() as nursery:
                await nursery.start(worker.serve)
                task = await worker.first_task()
                await trio.sleep(60)  # the attempt times out; the retry is an hour away
                if passivation is not None:
                    assert dormant(runtime, "late")
                answer = await worker.complete(task.token, {"late": True})
                nursery.cancel_scope.cancel()
            assert isinstance(answer, wire.Ack)
            return (answer.accepted, answer.reason), shape(await runtime.history("late"))

    assert await scenario(IDLE) == await scenario(None)


async def test_two_commands_at_once_bring_it_back_once(
    runtime: Runtime, autojump_clock: MockClock
) -> None:
    await runtime.register_definition(APPROVAL)
    await runtime.start("wf", execution_id="twice")
    await passivated(runtime, "twice")
    before = runtime.supervisor.stats.awakenings
    answers: list[Any] = []

    async def query() -> None:
        answers.append(await runtime.query("twice", "stage"))

    async def signal() -> None:
        answers.append(await runtime.signal("twice", "approve", {"by": "bo"}))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(query)
        nursery.start_soon(signal)
    assert runtime.supervisor.stats.awakenings == before + 1
    assert 4 in answers and len(answers) == 2  # the query comes before or after the signal
    assert [e.type for e in await runtime.history("twice")].count("SignalReceived") == 1


async def test_after_a_restart_executions_stay_dormant_until_needed(
    autojump_clock: MockClock,
) -> None:
    store = MemoryStore()  # a store's threads and an autojumping clock do not mix
    clock = Clock()  # one epoch for both processes, as the system clock would be
    async with open_runtime(store, config(), clock) as runtime:
        await runtime.register_definition(NAPS)
        began = runtime.clock.now_ms()
        await runtime.start("wf", execution_id="sleeper")
    async with open_runtime(store, config(), clock) as runtime:
        assert dormant(runtime, "sleeper") and not resident(runtime, "sleeper")
        await completed(runtime, "sleeper", within=3600 + 60)
        assert await timers_fired(runtime, "sleeper", since_ms=began) == [3_600_000]


async def test_a_restart_with_10000_waiting_serves_a_signal_without_bringing_back_the_rest(
    autojump_clock: MockClock,
) -> None:
    store = MemoryStore()
    async with open_runtime(store, config()) as runtime:
        await runtime.register_definition(APPROVAL)
        for n in range(10_000):
            await runtime.start("wf", execution_id=f"w{n}")
    async with open_runtime(store, config()) as runtime:
        registry = runtime.supervisor.registry
        assert (len(registry), registry.resident) == (10_000, 0)
        await runtime.signal("w4321", "approve", {"by": "cy"})
        assert await runtime.query("w4321", "stage") == "approved"
        assert registry.resident == 1


async def test_what_had_work_in_flight_comes_back_by_itself_after_a_restart(
    autojump_clock: MockClock,
) -> None:
    store = MemoryStore()
    async with open_runtime(store, config()) as runtime:
        await runtime.register_definition(SLOW_RETRY)
        await runtime.start("wf", execution_id="busy")
    async with open_runtime(store, config()) as runtime:
        await completed(runtime, "busy", within=60)


class GatedStore(MemoryStore):
    """A memory store whose batch reads wait while ``gate`` is set."""

    gate: trio.Event | None = None

    async def histories(self, execution_ids: list[str]) -> dict[str, list[Event]]:
        if self.gate is not None:
            await self.gate.wait()
        return await super().histories(execution_ids)


async def test_a_worker_resuming_before_its_execution_is_back_gets_its_task_again(
    autojump_clock: MockClock,
) -> None:
    store, clock = GatedStore(), Clock()
    async with open_runtime(store, config(), clock) as runtime:
        await runtime.register_definition(SLOW_RETRY)
        await runtime.start("wf", execution_id="held")
        worker = FakeWorker(runtime, "w1", [("t", "1")], auto=False)
        async with trio.open_nursery() as nursery:
            await nursery.start(worker.serve)
            task = await worker.first_task()
            nursery.cancel_scope.cancel()
        session_id = worker.session_id
    store.gate = trio.Event()
    async with open_runtime(store, config(), clock) as runtime:
        back = FakeWorker(runtime, "w1", [("t", "1")])
        answer = await back.register(resume=session_id)
        assert isinstance(answer, wire.Registered) and answer.resumed
        assert answer.worker_session_id == session_id
        assert not [m for m in back.received if isinstance(m, wire.Task)]  # not back yet
        store.gate.set()
        with trio.fail_after(30):
            while not [m for m in back.received if isinstance(m, wire.Task)]:
                await trio.sleep(0.01)
        pushed = [m for m in back.received if isinstance(m, wire.Task)]
        assert [t.token for t in pushed] == [task.token]
        ack = await back.complete(task.token, {"n": 1})
        assert isinstance(ack, wire.Ack) and ack.accepted
        assert (await runtime.wait("held", 10)).status == "completed"


class SlowIndexStore(MemoryStore):
    """A memory store whose wake-up index pages wait while ``gate`` is set: a restart serves
    before the rest of its index is loaded."""

    gate: trio.Event | None = None

    async def wake_index_page(self, after: int, limit: int) -> tuple[list[WakeEntry], int]:
        if self.gate is not None:
            await self.gate.wait()
        return await super().wake_index_page(after, limit)


async def loaded(runtime: Runtime) -> None:
    with trio.fail_after(60):
        while runtime.supervisor.registry.loading:
            await trio.sleep(0.01)


async def test_a_signal_reaches_an_execution_whose_index_entry_is_not_loaded_yet(
    autojump_clock: MockClock,
) -> None:
    store, clock = SlowIndexStore(), Clock()
    async with open_runtime(store, config(), clock) as runtime:
        await runtime.register_definition(APPROVAL)
        for n in range(3):
            await runtime.start("wf", execution_id=f"w{n}")
    store.gate = trio.Event()
    async with open_runtime(store, config(), clock) as runtime:
        registry = runtime.supervisor.registry
        assert registry.loading and len(registry) == 0  # nothing was due: all in the pages
        assert await runtime.signal("w1", "approve", {"by": "di"}) == 4
        assert await runtime.query("w1", "stage") == "approved"
        store.gate.set()
        await loaded(runtime)
        assert (len(registry), registry.roots) == (3, 3)  # w1 once, not again from its page
        assert await runtime.query("w2", "stage") == "waiting"


async def test_an_execution_that_ends_while_the_index_loads_is_not_brought_back_by_its_page(
    autojump_clock: MockClock,
) -> None:
    store, clock = SlowIndexStore(), Clock()
    async with open_runtime(store, config(), clock) as runtime:
        await runtime.register_definition(APPROVAL)
        await runtime.start("wf", execution_id="gone")
    store.gate = trio.Event()
    async with open_runtime(store, config(), clock) as runtime:
        stale, _ = await MemoryStore.wake_index_page(store, 0, 10)  # read before it ends
        await runtime.cancel("gone")
        assert (await runtime.wait("gone", 10)).status == "cancelled"
        runtime.supervisor.registry.load(stale)
        store.gate.set()
        await loaded(runtime)
        assert "gone" not in runtime.supervisor.registry


CHILD = workflow("steps: [{id: work, task: t}]\noutput: '${steps.work.output}'\n", name="kid")
PARENT = workflow(
    "workflows: {kid: {version: 1.0.0}}\nsteps: [{id: k, workflow: kid}]\n"
    "output: '${steps.k.output}'\n"
)


async def test_a_parent_waiting_on_its_child_is_back_before_the_index_is_loaded(
    autojump_clock: MockClock,
) -> None:
    store, clock = SlowIndexStore(), Clock()
    async with open_runtime(store, config(), clock) as runtime:
        await runtime.register_definition(CHILD)
        await runtime.register_definition(PARENT)
        await runtime.start("wf", execution_id="p")
        worker = FakeWorker(runtime, "w1", [("t", "1")], auto=False)
        async with trio.open_nursery() as nursery:
            await nursery.start(worker.serve)
            task = await worker.first_task()
            nursery.cancel_scope.cancel()
    store.gate = trio.Event()
    async with open_runtime(store, config(), clock) as runtime:
        assert "p" in runtime.supervisor.registry  # busy: it must look at its child again
        back = FakeWorker(runtime, "w1", [("t", "1")])
        await back.register(resume=worker.session_id)
        with trio.fail_after(30):
            while not [m for m in back.received if isinstance(m, wire.Task)]:
                await trio.sleep(0.01)
        await back.complete(task.token, {"n": 5})
        assert (await runtime.wait("p", 30)).status == "completed"
        assert runtime.supervisor.registry.loading
        assert (await runtime.describe("p")).output == {"n": 5}


async def test_a_command_told_to_an_execution_not_loaded_yet_is_delivered(
    autojump_clock: MockClock,
) -> None:
    store, clock = SlowIndexStore(), Clock()
    async with open_runtime(store, config(), clock) as runtime:
        await runtime.register_definition(APPROVAL)
        await runtime.start("wf", execution_id="told")
    store.gate = trio.Event()
    async with open_runtime(store, config(), clock) as runtime:
        runtime.supervisor.registry.tell("told", cmd.RequestCancel("told to", reply=Reply()))
        assert (await runtime.wait("told", 10)).status == "cancelled"
