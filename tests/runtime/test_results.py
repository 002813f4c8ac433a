"""The ``wait`` answer: the summary with the output or the error, from the final state; an
answer asked for just after the end comes from memory, not from the store."""

from __future__ import annotations

import trio
from trio.testing import MockClock

from orbit_actors.history.events import Event
from orbit_actors.runtime import Runtime, RuntimeConfig, open_runtime
from orbit_actors.testing import MemoryStore

from .conftest import workflow

APPROVAL = workflow("""
signals: {approve: {type: object, required: [by], properties: {by: {type: string}}}}
steps:
  - {id: wait, await: approve}
output: "${steps.wait.output}"
""")


async def test_a_completed_execution_answers_its_output(
    runtime: Runtime, autojump_clock: MockClock
) -> None:
    await runtime.register_definition(APPROVAL)
    await runtime.start("wf", execution_id="ok")
    await runtime.signal("ok", "approve", {"by": "ann"})
    result = await runtime.wait("ok", 10)
    assert (result.status, result.output, result.error) == ("completed", {"by": "ann"}, None)


async def test_a_cancelled_execution_answers_cancelled_with_its_reason(
    runtime: Runtime, autojump_clock: MockClock
) -> None:
    await runtime.register_definition(APPROVAL)
    await runtime.start("wf", execution_id="c")
    async with trio.open_nursery() as nursery:
        nursery.start_soon(runtime.cancel, "c", "changed my mind")
        result = await runtime.wait("c", 10)
    assert (result.status, result.output) == ("cancelled", None)
    assert result.error is not None
    assert (result.error.code, result.error.message) == ("CANCELLED", "changed my mind")


class CountingStore(MemoryStore):
    """A memory store that counts history reads."""

    def __init__(self) -> None:
        super().__init__()
        self.history_reads = 0

    async def history(self, execution_id: str, run: int | None = None) -> list[Event]:
        self.history_reads += 1
        return await super().history(execution_id, run)


async def test_a_wait_just_after_the_end_reads_nothing_from_the_store(
    autojump_clock: MockClock,
) -> None:
    store = CountingStore()
    async with open_runtime(store, RuntimeConfig()) as runtime:
        await runtime.register_definition(APPROVAL)
        await runtime.start("wf", execution_id="done")
        await runtime.signal("done", "approve", {"by": "bo"})
        await trio.testing.wait_all_tasks_blocked()
        reads = store.history_reads
        result = await runtime.wait("done", 10)
        assert result.output == {"by": "bo"} and store.history_reads == reads
    async with open_runtime(store, RuntimeConfig()) as restarted:  # nothing in memory now
        again = await restarted.wait("done", 10)
        assert again == result and store.history_reads > reads


async def test_a_describe_or_query_just_after_the_end_is_answered_as_a_replay_would_be(
    autojump_clock: MockClock,
) -> None:
    store = CountingStore()
    async with open_runtime(store, RuntimeConfig()) as runtime:
        await runtime.register_definition(QUERIED)
        await runtime.start("wf", execution_id="done")
        await runtime.signal("done", "approve", {"by": "bo"})
        await runtime.wait("done", 10)
        reads = store.history_reads
        kept = await runtime.describe("done"), await runtime.query("done", "who")
        assert store.history_reads == reads  # from the final state kept in memory
    async with open_runtime(store, RuntimeConfig()) as restarted:
        replayed = await restarted.describe("done"), await restarted.query("done", "who")
        assert store.history_reads > reads
    assert kept == replayed and kept[1] == "bo"


QUERIED = workflow("""
signals: {approve: {type: object, required: [by], properties: {by: {type: string}}}}
queries: {who: 'steps.wait.output == null ? "" : steps.wait.output.by'}
steps:
  - {id: wait, await: approve}
output: "${steps.wait.output}"
""")
