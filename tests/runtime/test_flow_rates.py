"""Rate limits and priority through the runtime: at most ``limit`` dispatches of a task per
``per`` window per key; units over it wait (the pool says ``rate_limited``) and go out when the
next window opens; other keys are not held up; a higher priority goes first."""

from __future__ import annotations

import trio
from trio.testing import MockClock, wait_all_tasks_blocked

from orbit_actors.runtime import Runtime
from orbit_actors.testing import FakeWorker
from orbit_actors.views.waiting import Waiting, rate_limited_waiting

RATED = """
workflow: rated
version: 1.0.0
input: {type: object, properties: {merchant: {type: string}}}
tasks: {t: {version: "1", rate_limit: {key: '${input.merchant}', limit: 2, per: 1s}}}
steps: [{id: charge, task: t}]
"""
PRIORITISED = """
workflow: prio
version: 1.0.0
input: {type: object, properties: {p: {type: integer}}}
flow: {priority: '${input.p}'}
tasks: {t: {version: "1"}}
steps: [{id: a, task: t, input: {p: "${input.p}"}}]
"""


async def test_dispatches_over_the_limit_wait_for_the_next_window(
    runtime: Runtime, autojump_clock: MockClock
) -> None:
    await runtime.register_definition(RATED)
    async with trio.open_nursery() as nursery:
        await nursery.start(FakeWorker(runtime).serve)
        for n in range(7):
            await runtime.start("rated", input={"merchant": "m"}, execution_id=f"m{n}")
        await runtime.start("rated", input={"merchant": "other"}, execution_id="other")
        await wait_all_tasks_blocked()
        assert (await runtime.wait("other", 0.001)).status == "completed"  # not held up
        waiting = [runtime.pool.rate_limited(f"m{n}", "charge") for n in range(7)]
        limited = [rate for rate in waiting if rate is not None]
        assert len(limited) == 5
        assert rate_limited_waiting(limited[0]) == Waiting(
            reason="rate_limited",
            message="t may be dispatched 2 times per 1s for key `m`; it goes out when that allows",
        )
        for n in range(7):
            assert (await runtime.wait(f"m{n}", 10)).status == "completed"
        nursery.cancel_scope.cancel()
    dispatched = [
        e.timestamp_ms
        for n in range(7)
        for e in await runtime.history(f"m{n}")
        if e.type == "StepDispatched"
    ]
    dispatched.sort()
    # no span of 1 s holds 3 dispatches: the third after any is at least 1 s later
    assert all(
        later - first >= 1000 for first, later in zip(dispatched, dispatched[2:], strict=False)
    )
    assert dispatched[-1] - dispatched[0] >= 3000  # 7 at 2 per second: 4 windows


async def test_a_higher_priority_is_dispatched_first(
    runtime: Runtime, autojump_clock: MockClock
) -> None:
    await runtime.register_definition(PRIORITISED)
    for n, priority in enumerate([9, 5, 1, 5, 1]):
        await runtime.start("prio", input={"p": priority}, execution_id=f"e{n}")
    seen: list[int] = []

    async def handler(task: object) -> dict[str, int]:
        seen.append(task.input["p"])  # type: ignore[attr-defined]
        return {}

    async with trio.open_nursery() as nursery:
        await nursery.start(FakeWorker(runtime, handler=handler, concurrency=1).serve)
        for n in range(5):
            await runtime.wait(f"e{n}", 10)
        nursery.cancel_scope.cancel()
    assert seen == [1, 1, 5, 5, 9]
