"""Every store runs the same contract suite: the memory store, SQLite and PostgreSQL."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from orbit_actors.store import Store, open_sqlite_store
from orbit_actors.testing import MemoryStore
from tests.pg import PostgresServer


@pytest.fixture(scope="session")
def contract_database(postgres: PostgresServer) -> str:
    """One database for the contract suite, migrated once; each test empties it."""
    from orbit_actors.store.postgres.schema import prepare

    url = postgres.create_database("contract")
    prepare(url)
    return url


def _emptied(url: str) -> str:
    import psycopg

    from orbit_actors.store.postgres.schema import TABLES

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"TRUNCATE {', '.join(TABLES)} RESTART IDENTITY".encode())
    return url


@pytest.fixture(params=["memory", "sqlite", "postgres"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Store]:
    if request.param == "memory":
        yield MemoryStore()
    elif request.param == "sqlite":
        async with open_sqlite_store(tmp_path / "orbit.db") as sqlite:
            yield sqlite
    else:
        from orbit_actors.store.postgres import open_postgres_store

        url = _emptied(request.getfixturevalue("contract_database"))
        async with open_postgres_store(url) as postgres:
            yield postgres
