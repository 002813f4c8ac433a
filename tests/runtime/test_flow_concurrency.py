"""Concurrency keys at start: at most ``limit`` running executions per key; beyond it ``queue``
stores the execution as ``queued`` and starts it, in arrival order, when one of its key ends;
``skip`` refuses with CONCURRENCY_LIMIT and stores nothing; ``replace`` starts the new one and
cancels the oldest running one of the key."""

from __future__ import annotations

import pytest
import trio
from trio.testing import MockClock, wait_all_tasks_blocked

from orbit_actors.errors import (
    ConcurrencyLimitError,
    ExecutionNotFoundError,
    ExecutionQueuedError,
)
from orbit_actors.runtime import Runtime, RuntimeConfig, open_runtime
from orbit_actors.testing import MemoryStore

KEYED = """
workflow: keyed
version: 1.0.0
input: {{type: object, properties: {{customer: {{type: string}}}}}}
flow: {{concurrency: {{key: '${{input.customer}}', limit: 2, on_full: {on_full}}}}}
signals: {{done: null}}
steps: [{{id: wait, await: done}}]
"""


async def started(runtime: Runtime, on_full: str, *ids: str, customer: str = "acme") -> None:
    await runtime.register_definition(KEYED.format(on_full=on_full))
    for execution_id in ids:
        await runtime.start("keyed", input={"customer": customer}, execution_id=execution_id)


async def status(runtime: Runtime, execution_id: str) -> str:
    return (await runtime.describe(execution_id)).status


async def test_beyond_the_limit_a_start_is_queued(
    runtime: Runtime, autojump_clock: MockClock
) -> None:
    await started(runtime, "queue", "a", "b", "c", "d")
    assert [await status(runtime, i) for i in "abcd"] == ["running", "running", "queued", "queued"]
    page = await runtime.list_executions(status="queued")
    assert [row.execution_id for row in page.executions] == ["d", "c"]
    assert [e.type for e in await runtime.history("c")] == ["WorkflowCreated"]
    waiting = (await runtime.describe("c")).waiting
    assert waiting is not None and waiting.reason == "concurrency"
    assert waiting.message == (
        "concurrency key `acme` of keyed@1.0.0 already runs 2 executions (limit 2); it starts "
        "when one of them ends"
    )
    assert (await runtime.describe("a")).waiting is None


async def test_a_queued_execution_starts_in_arrival_order_when_one_of_its_key_ends(
    runtime: Runtime, autojump_clock: MockClock
) -> None:
    await started(runtime, "queue", "a", "b", "c", "d")
    await runtime.signal("a", "done", None)
    await runtime.wait("a", 10)
    await wait_all_tasks_blocked()  # the promotion runs behind the end
    await runtime.signal("c", "done", None)  # c started: it takes signals and ends
    assert (await runtime.wait("c", 10)).status == "completed"
    await wait_all_tasks_blocked()
    assert await status(runtime, "d") == "running"
    events = [e.type for e in await runtime.history("d")]
    assert events[:2] == ["WorkflowCreated", "WorkflowStarted"]


async def test_other_keys_are_not_held_up(runtime: Runtime, autojump_clock: MockClock) -> None:
    await started(runtime, "queue", "a", "b", "c")
    await runtime.start("keyed", input={"customer": "zeta"}, execution_id="z")
    assert await status(runtime, "z") == "running"


async def test_skip_refuses_the_start_and_stores_nothing(
    runtime: Runtime, autojump_clock: MockClock
) -> None:
    await started(runtime, "skip", "a", "b")
    with pytest.raises(ConcurrencyLimitError) as caught:
        await runtime.start("keyed", input={"customer": "acme"}, execution_id="c")
    assert caught.value.code == "CONCURRENCY_LIMIT" and caught.value.status == 409
    assert "concurrency key `acme`" in caught.value.message
    with pytest.raises(ExecutionNotFoundError):
        await runtime.describe("c")


async def test_replace_cancels_the_oldest_running_one_and_starts_the_new_one(
    runtime: Runtime, autojump_clock: MockClock
) -> None:
    await started(runtime, "replace", "a", "b", "c")
    assert (await runtime.wait("a", 10)).status == "cancelled"
    cancel = [e for e in await runtime.history("a") if e.type == "CancelRequested"]
    assert cancel[0].reason == "replaced by `c`"
    assert [await status(runtime, i) for i in "bc"] == ["running", "running"]


async def test_a_restart_starts_what_was_queued_when_a_slot_is_free(
    autojump_clock: MockClock,
) -> None:
    store = MemoryStore()
    async with open_runtime(store, RuntimeConfig()) as runtime:
        await started(runtime, "queue", "a", "b", "c")
        await runtime.signal("a", "done", None)
        await runtime.wait("a", 10)
        await wait_all_tasks_blocked()
        assert await status(runtime, "c") == "running"
    async with open_runtime(store, RuntimeConfig()) as runtime:
        await runtime.signal("c", "done", None)
        assert (await runtime.wait("c", 10)).status == "completed"


async def test_a_queued_execution_takes_no_signal_and_is_cancelled_without_starting(
    runtime: Runtime, autojump_clock: MockClock
) -> None:
    await started(runtime, "queue", "a", "b", "c", "d")
    with pytest.raises(ExecutionQueuedError):
        await runtime.signal("c", "done", None)
    detail = await runtime.cancel("c", reason="not needed")
    assert detail.status == "cancelled"
    assert [e.type for e in await runtime.history("c")] == [
        "WorkflowCreated",
        "CancelRequested",
        "WorkflowCancelled",
    ]
    await runtime.signal("a", "done", None)
    await runtime.wait("a", 10)
    await wait_all_tasks_blocked()
    assert await status(runtime, "d") == "running"  # c gave its place up


async def test_waiting_on_a_queued_execution_waits_for_its_end(
    runtime: Runtime, autojump_clock: MockClock
) -> None:
    await started(runtime, "queue", "a", "b", "c")
    async with trio.open_nursery() as nursery:
        nursery.start_soon(runtime.wait, "c", 100)
        await wait_all_tasks_blocked()
        await runtime.signal("a", "done", None)
        await wait_all_tasks_blocked()
        await runtime.signal("c", "done", None)
    assert (await runtime.wait("c", 1)).status == "completed"
