"""Every store runs the same contract suite: the memory store and SQLite (and later PostgreSQL)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from orbit_actors.store import Store, open_sqlite_store
from orbit_actors.testing import MemoryStore


@pytest.fixture(params=["memory", "sqlite"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Store]:
    if request.param == "memory":
        yield MemoryStore()
    else:
        async with open_sqlite_store(tmp_path / "orbit.db") as sqlite:
            yield sqlite
