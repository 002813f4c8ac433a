"""A child workflow queued for a slot of its concurrency key: its parent waits until the child
starts and ends (a queued child has not ended), and a parent that aborts or is terminated
drops it (cancelled or terminated without having started), as it would a running one. Also:
a queued execution is terminated at once, like a cancel."""

from __future__ import annotations

from trio.testing import MockClock, wait_all_tasks_blocked

from orbit_actors.history import event_to_dict
from orbit_actors.runtime import Runtime

CHILD = """
workflow: kid
version: 1.0.0
flow: {concurrency: {key: one, limit: 1, on_full: queue}}
signals: {go: null}
steps: [{id: w, await: go}]
output: {got: "${steps.w.output}"}
"""
PARENT = """
workflow: mom
version: 1.0.0
workflows: {kid: {version: 1.0.0}}
steps: [{id: c, workflow: kid, input: {}}]
output: {child: "${steps.c.output}"}
"""


async def a_parent_with_a_queued_child(runtime: Runtime) -> None:
    """``busy`` holds the key's only slot; ``mom``'s child ``mom.c`` is queued behind it."""
    await runtime.register_definition(CHILD)
    await runtime.register_definition(PARENT)
    await runtime.start("kid", input={}, execution_id="busy")
    await runtime.start("mom", input={}, execution_id="mom")
    await wait_all_tasks_blocked()
    assert (await runtime.describe("mom.c")).status == "queued"


async def test_a_parent_waits_for_its_queued_child_and_takes_its_output(
    runtime: Runtime, autojump_clock: MockClock
) -> None:
    await a_parent_with_a_queued_child(runtime)
    assert (await runtime.describe("mom")).status == "running"
    await runtime.signal("busy", "go", 1)
    await wait_all_tasks_blocked()
    assert (await runtime.describe("mom.c")).status == "running"
    await runtime.signal("mom.c", "go", 2)
    finished = await runtime.wait("mom", 10)
    assert (finished.status, finished.output) == ("completed", {"child": {"got": 2}})


async def test_the_queued_child_of_a_cancelled_parent_is_cancelled_without_starting(
    runtime: Runtime, autojump_clock: MockClock
) -> None:
    await a_parent_with_a_queued_child(runtime)
    await runtime.cancel("mom", reason="not needed")
    assert (await runtime.wait("mom.c", 10)).status == "cancelled"
    assert [e.type for e in await runtime.history("mom.c")] == [
        "WorkflowCreated",
        "CancelRequested",
        "WorkflowCancelled",
    ]


async def test_the_queued_child_of_a_terminated_parent_is_terminated_without_starting(
    runtime: Runtime, autojump_clock: MockClock
) -> None:
    await a_parent_with_a_queued_child(runtime)
    await runtime.terminate("mom", reason="stop")
    assert (await runtime.wait("mom.c", 10)).status == "terminated"
    history = await runtime.history("mom.c")
    assert [e.type for e in history] == ["WorkflowCreated", "WorkflowTerminated"]
    assert event_to_dict(history[-1])["reason"] == "parent terminated"


async def test_a_queued_execution_is_terminated_at_once_and_gives_its_place_up(
    runtime: Runtime, autojump_clock: MockClock
) -> None:
    await runtime.register_definition(CHILD)
    for execution_id in ("a", "b", "c"):
        await runtime.start("kid", input={}, execution_id=execution_id)
    detail = await runtime.terminate("b", reason="no longer wanted")
    assert detail.status == "terminated"
    assert [e.type for e in await runtime.history("b")] == [
        "WorkflowCreated",
        "WorkflowTerminated",
    ]
    await runtime.signal("a", "go", None)
    await runtime.wait("a", 10)
    await wait_all_tasks_blocked()
    assert (await runtime.describe("c")).status == "running"  # b gave its place up
