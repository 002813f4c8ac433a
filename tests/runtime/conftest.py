"""Runtime tests: actors spawned in-process on the memory store under an autojumping MockClock.

pytest-trio takes the clock from the *test's* own arguments, so every test that uses the
``runtime`` fixture also names ``autojump_clock``."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import trio

from orbit_actors.runtime import Runtime, RuntimeConfig, open_runtime
from orbit_actors.testing import MemoryStore

BASE = """
workflow: {name}
version: 1.0.0
tasks: {{t: {{version: "1"}}, t2: {{version: "1"}}, undo: {{version: "1"}}, go: {{version: "1", language: go}}}}
"""


def workflow(body: str, name: str = "wf") -> str:
    """A definition with the standard tasks and ``body``."""
    return BASE.format(name=name) + body


@pytest.fixture
async def runtime(autojump_clock: trio.testing.MockClock) -> AsyncIterator[Runtime]:
    async with open_runtime(MemoryStore(), RuntimeConfig(session_timeout_ms=30_000)) as rt:
        yield rt
