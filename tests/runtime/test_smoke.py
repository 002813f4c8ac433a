"""First light: an execution runs through the runtime with a fake worker."""

from __future__ import annotations

import trio
import trio.testing

from orbit_actors.runtime import open_runtime
from orbit_actors.testing import FakeWorker, MemoryStore

WF = """
workflow: three
version: 1.0.0
tasks: {t: {version: "1"}}
steps:
  - {id: a, task: t, input: {n: "${input.n}"}}
  - {id: b, task: t, input: {prev: "${steps.a.output.n}"}}
  - {id: c, sleep: 7d}
output: {b: "${steps.b.output}"}
"""


async def test_an_execution_runs_to_completion(autojump_clock: trio.testing.MockClock) -> None:
    async with open_runtime(MemoryStore()) as runtime, trio.open_nursery() as nursery:
        await runtime.register_definition(WF)
        worker = FakeWorker(runtime)
        await nursery.start(worker.serve)
        execution_id, created = await runtime.start("three", input={"n": 5})
        assert created
        row = await runtime.wait(execution_id, timeout=30 * 86400)
        assert row.status == "completed"
        detail = await runtime.describe(execution_id)
        assert detail.output == {"b": {"prev": 5}}
        nursery.cancel_scope.cancel()
