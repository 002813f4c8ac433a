"""``schedule_to_start`` through the runtime: with no worker the unit's attempts fail with
SCHEDULE_TIMEOUT until the retry policy gives up; a worker that comes before the deadline of a
retry takes it; the server's ``--schedule-to-start`` serves tasks that declare none."""

from __future__ import annotations

import trio
from trio.testing import MockClock

from orbit_actors.runtime import Runtime, RuntimeConfig, open_runtime
from orbit_actors.testing import FakeWorker, MemoryStore

from .conftest import workflow

PAY = workflow("""
steps:
  - {id: charge, task: t, retry: {max_attempts: 2, initial_interval: 1s}}
""").replace('t: {version: "1"}', 't: {version: "1", schedule_to_start: 5m}')


async def test_with_no_worker_the_step_fails_after_its_retries(
    runtime: Runtime, autojump_clock: MockClock
) -> None:
    await runtime.register_definition(PAY)
    await runtime.start("wf", execution_id="pay-1")
    row = await runtime.wait("pay-1", 3600)
    assert row.status == "failed"
    failures = [e for e in await runtime.history("pay-1") if e.type == "StepAttemptFailed"]
    assert [(f.attempt, f.error.code) for f in failures] == [
        (1, "SCHEDULE_TIMEOUT"),
        (2, "SCHEDULE_TIMEOUT"),
    ]
    assert failures[0].error.message == "no worker took t@1 within 5m"
    [t] = [s for s in await runtime.tasks() if s.task == "t"]
    assert t.waiting == 0  # the attempts that timed out wait no more


async def test_a_worker_that_comes_in_time_for_the_retry_takes_it(
    runtime: Runtime, autojump_clock: MockClock
) -> None:
    await runtime.register_definition(PAY)
    await runtime.start("wf", execution_id="pay-2")
    await trio.sleep(301)  # the first attempt was not taken
    worker = FakeWorker(runtime, "w1", [("t", "1")])
    async with trio.open_nursery() as nursery:
        await nursery.start(worker.serve)
        row = await runtime.wait("pay-2", 3600)
        assert row.status == "completed"
        nursery.cancel_scope.cancel()
    codes = [e.error.code for e in await runtime.history("pay-2") if e.type == "StepAttemptFailed"]
    assert codes == ["SCHEDULE_TIMEOUT"]


async def test_the_server_default_applies_to_tasks_that_declare_none(
    autojump_clock: MockClock,
) -> None:
    config = RuntimeConfig(schedule_to_start_ms=60_000)
    async with open_runtime(MemoryStore(), config) as runtime:
        await runtime.register_definition(workflow("steps: [{id: a, task: t2}]"))
        await runtime.start("wf", execution_id="x")
        await runtime.wait("x", 3600)
        failures = [e for e in await runtime.history("x") if e.type == "StepAttemptFailed"]
        assert failures[0].error.message == "no worker took t2@1 within 1m"
