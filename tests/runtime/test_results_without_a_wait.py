"""A worker's result handed to its execution without a task waiting for the verdict (what the
gateway does for a WebSocket result): the same answer as the awaiting path, sent once the
execution has recorded it; whatever that path alone can carry is left to it."""

from __future__ import annotations

import trio
from trio.testing import MockClock, wait_all_tasks_blocked

from orbit_actors.runtime import Runtime
from orbit_actors.testing import FakeWorker
from orbit_actors.wire import messages as wire

from .conftest import workflow

TWO = workflow("""
steps:
  - {id: a, task: t, input: {n: 1}}
  - {id: b, task: t, input: {n: "${steps.a.output.n}"}}
output: "${steps.b.output}"
""")


async def _ready(runtime: Runtime, worker: FakeWorker) -> wire.Task:
    """Register, start one execution, note a sign of life; the first task."""
    await runtime.register_definition(TWO)
    await worker.register()
    await runtime.start("wf", execution_id="x")
    task = await worker.first_task()
    await worker.connection.handle(wire.Heartbeat(type="heartbeat"))
    return task


def _complete(token: str, output: object = None) -> wire.Complete:
    return wire.Complete(type="complete", token=token, output=output, id="r1")


async def test_a_result_handed_on_is_acked_once_recorded_and_the_execution_goes_on(
    runtime: Runtime, autojump_clock: MockClock
) -> None:
    worker = FakeWorker(runtime, auto=False)
    task = await _ready(runtime, worker)
    done: list[int] = []
    assert worker.connection.report_soon(_complete(task.token, {"n": 2}), lambda: done.append(1))
    await wait_all_tasks_blocked()
    acks = [m for m in worker.received if isinstance(m, wire.Ack)]
    assert acks == [wire.Ack(token=task.token, accepted=True, ref="r1")] and done == [1]
    second = (await worker.wait_for_tasks(2))[1]
    assert (second.step_id, second.input) == ("b", {"n": 2})


async def test_a_duplicate_handed_on_is_acked_as_a_duplicate(
    runtime: Runtime, autojump_clock: MockClock
) -> None:
    worker = FakeWorker(runtime, auto=False)
    task = await _ready(runtime, worker)
    await worker.complete(task.token, {"n": 2})
    assert worker.connection.report_soon(_complete(task.token, {"n": 3}), lambda: None)
    await wait_all_tasks_blocked()
    ack = [m for m in worker.received if isinstance(m, wire.Ack)][-1]
    assert (ack.accepted, ack.reason) == (False, "duplicate result; step already resolved")


async def test_another_workers_token_handed_on_is_refused_with_an_error_frame(
    runtime: Runtime, autojump_clock: MockClock
) -> None:
    worker = FakeWorker(runtime, auto=False)
    task = await _ready(runtime, worker)
    other = FakeWorker(runtime, "w2", auto=False)
    await other.register()
    await other.connection.handle(wire.Heartbeat(type="heartbeat"))
    done: list[int] = []
    assert other.connection.report_soon(_complete(task.token), lambda: done.append(1))
    await wait_all_tasks_blocked()
    errors = [m for m in other.received if isinstance(m, wire.ErrorMessage)]
    assert [(e.code, e.ref) for e in errors] == [("FORBIDDEN", "r1")] and done == [1]


async def test_what_only_the_awaiting_path_carries_is_left_to_it(
    runtime: Runtime, autojump_clock: MockClock
) -> None:
    worker = FakeWorker(runtime, auto=False)
    await runtime.register_definition(TWO)
    await worker.register()
    await runtime.start("wf", execution_id="x")
    task = await worker.first_task()
    # no sign of life noted on this connection yet: the awaiting path writes it
    assert not worker.connection.report_soon(_complete(task.token), lambda: None)
    await worker.connection.handle(wire.Heartbeat(type="heartbeat"))
    # a token of no live execution here: the awaiting path answers it
    assert not worker.connection.report_soon(_complete("00@gone"), lambda: None)
    autojump_clock.jump(1.5)  # the sign of life is due again
    assert not worker.connection.report_soon(_complete(task.token), lambda: None)
    await trio.lowlevel.checkpoint()
    assert not [m for m in worker.received if isinstance(m, wire.Ack)]


async def test_a_due_sign_of_life_sends_one_result_the_awaiting_way_and_the_next_are_handed_on(
    runtime: Runtime, autojump_clock: MockClock
) -> None:
    worker = FakeWorker(runtime, auto=False)
    task = await _ready(runtime, worker)
    autojump_clock.jump(1.5)  # the sign of life is due again
    assert not worker.connection.report_soon(_complete(task.token), lambda: None)
    # the awaiting path of the first writes it: a duplicate read in the same step is handed on
    assert worker.connection.report_soon(_complete(task.token), lambda: None)
