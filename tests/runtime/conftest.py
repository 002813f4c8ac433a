"""Runtime tests: actors spawned in-process on the memory store under an autojumping MockClock.

pytest-trio takes the clock from the *test's* own arguments, so every test that uses the
``runtime`` fixture also names ``autojump_clock``."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
import trio

from orbit_actors.runtime import Runtime, RuntimeConfig, open_runtime
from orbit_actors.store import open_sqlite_store
from orbit_actors.testing import FakeWorker, MemoryStore

BASE = """
workflow: {name}
version: 1.0.0
tasks: {{t: {{version: "1"}}, t2: {{version: "1"}}, undo: {{version: "1"}}, go: {{version: "1", language: go}}}}
"""


def workflow(body: str, name: str = "wf") -> str:
    """A definition with the standard tasks and ``body``."""
    return BASE.format(name=name) + body


THREE = workflow(
    "steps:\n"
    "  - {id: a, task: t, input: {n: '${input.n}'}}\n"
    "  - {id: b, task: t, input: {n: '${steps.a.output.n}'}}\n"
    "  - {id: c, task: t, input: {n: '${steps.b.output.n}'}}\n"
    "output: {n: '${steps.c.output.n}'}\n"
)
"""Three task steps in a row, each passing ``n`` on: the output is the input."""


@pytest.fixture
async def runtime(autojump_clock: trio.testing.MockClock) -> AsyncIterator[Runtime]:
    async with open_runtime(MemoryStore(), RuntimeConfig(session_timeout_ms=30_000)) as rt:
        yield rt


@asynccontextmanager
async def served(
    path: Path, definition: str, *, auto: bool = True, config: RuntimeConfig | None = None
) -> AsyncIterator[tuple[Runtime, FakeWorker, trio.Nursery]]:
    """A runtime on a real SQLite file at ``path`` with ``definition`` registered, and a fake
    worker ``w1`` of task ``t@1`` serving it, in a nursery cancelled when the block ends."""
    async with open_sqlite_store(path) as store, open_runtime(store, config) as runtime:
        await runtime.register_definition(definition)
        worker = FakeWorker(runtime, "w1", [("t", "1")], auto=auto)
        async with trio.open_nursery() as nursery:
            await nursery.start(worker.serve)
            yield runtime, worker, nursery
            nursery.cancel_scope.cancel()
