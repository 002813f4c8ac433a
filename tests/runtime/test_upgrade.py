"""Migration in-process: the owner records DefinitionMigrated and goes on under the new version
at once and after coming back from the store; a refused migration moves nothing; a check and a
replay write nothing."""

from __future__ import annotations

import pytest
import trio

from orbit_actors.errors import ExecutionNotFoundError, WorkflowNotFoundError
from orbit_actors.runtime import RuntimeConfig, open_runtime
from orbit_actors.supervisor.migration import MigrationRequest
from orbit_actors.testing import MemoryStore

from .conftest import workflow

V1 = workflow("""
signals: {approve: {type: object, properties: {by: {type: string}}}}
steps:
  - {id: ask, value: asked}
  - {id: wait, await: approve}
output: {by: "${steps.wait.output.by}"}
""")
V2 = V1.replace("version: 1.0.0", "version: 1.1.0").replace(
    "output: {by:",
    '  - {id: thank, value: "${\'thanks \' + steps.wait.output.by}"}\noutput: {thanks: "${steps.thank.output}", by:',
)
MOVE = MigrationRequest("wf", "1.0.0", "1.1.0")


async def test_a_migrated_execution_goes_on_under_the_new_version(
    autojump_clock: trio.testing.MockClock,
) -> None:
    store = MemoryStore()
    async with open_runtime(store, RuntimeConfig()) as runtime:
        await runtime.register_definition(V1)
        await runtime.register_definition(V2)
        await runtime.start("wf", version="1.0.0", execution_id="a")
        await runtime.start("wf", version="1.0.0", execution_id="b")
        moved = await runtime.migrate(MigrationRequest("wf", "1.0.0", "1.1.0", ids=["a"]))
        assert moved.migrated == ["a"] and moved.skipped == []
        assert (await runtime.describe("a")).version == "1.1.0"
        await runtime.signal("a", "approve", {"by": "ann"})
        assert (await runtime.wait("a", 5)).output == {"thanks": "thanks ann", "by": "ann"}
    async with open_runtime(store, RuntimeConfig()) as again:  # b comes back from the store
        assert (await again.migrate(MOVE)).migrated == ["b"]
    async with open_runtime(store, RuntimeConfig()) as third:
        await third.signal("b", "approve", {"by": "bo"})
        assert (await third.wait("b", 5)).output == {"thanks": "thanks bo", "by": "bo"}


async def test_a_dry_run_and_a_refused_migration_move_nothing(
    autojump_clock: trio.testing.MockClock,
) -> None:
    store = MemoryStore()
    async with open_runtime(store, RuntimeConfig()) as runtime:
        await runtime.register_definition(V1)
        await runtime.register_definition(V2)
        await runtime.start("wf", version="1.0.0", execution_id="a")
        before = await runtime.history("a")
        dry = await runtime.migrate(MigrationRequest("wf", "1.0.0", "1.1.0", dry_run=True))
        assert dry.migrated == ["a"]
        with pytest.raises(ExecutionNotFoundError):
            await runtime.migrate(MigrationRequest("wf", "1.0.0", "1.1.0", ids=["a", "nobody"]))
        with pytest.raises(WorkflowNotFoundError):
            await runtime.migrate(MigrationRequest("wf", "1.0.0", "9.0.0"))
        assert await runtime.history("a") == before
        assert (await runtime.describe("a")).version == "1.0.0"


async def test_an_execution_on_another_version_is_skipped_saying_so(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with open_runtime(MemoryStore(), RuntimeConfig()) as runtime:
        await runtime.register_definition(V1)
        await runtime.register_definition(V2)
        await runtime.start("wf", version="1.1.0", execution_id="new")
        result = await runtime.migrate(MigrationRequest("wf", "1.0.0", "1.1.0", ids=["new"]))
        assert result.migrated == []
        assert result.skipped == [
            {
                "execution_id": "new",
                "first_divergent_seq": None,
                "reason": "the execution runs version 1.1.0",
            }
        ]


async def test_a_check_decides_with_the_servers_default_schedule_to_start(
    mock_clock: trio.testing.MockClock,  # stands still: the unit waits for a worker throughout
) -> None:
    base = workflow("steps:\n  - {id: work, task: t}\n")
    candidate = base.replace("version: 1.0.0", "version: 1.1.0") + "  - {id: more, task: t2}\n"
    async with open_runtime(MemoryStore(), RuntimeConfig(schedule_to_start_ms=3_600_000)) as rt:
        await rt.register_definition(base)
        await rt.start("wf", version="1.0.0", execution_id="a")
        (scheduled,) = [e for e in await rt.history("a") if e.type == "StepScheduled"]
        assert scheduled.start_by_ms is not None  # recorded with the server's default
        _, page = await rt.check_candidate("wf", "1.0.0", candidate, 100, None)
        assert (page.checked, page.incompatible) == (1, [])
