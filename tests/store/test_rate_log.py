"""Rate limits, part of the Store contract on every store: a commit carrying dispatches is
written only while each one's (task, key) had fewer than ``limit`` dispatches in the last
``per``, counted in the commit's own transaction; an over-limit commit writes nothing and says
when the window opens; several commits at once — on PostgreSQL from several servers — never
pass the limit together."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
import trio

from orbit_actors.decide.invocation import RateTake
from orbit_actors.store import Store, open_sqlite_store
from orbit_actors.store.base import Commit, RateCharge, RateLimited
from orbit_actors.store.rate_log import SKEW_MARGIN_MS
from tests.pg import PostgresServer

from .helpers import events, row

CHARGE = RateTake("charge", "m", 2, 1000)


def dispatch(execution_id: str, at_ms: int, *takes: RateTake) -> Commit:
    """A new execution's commit dispatching one unit per ``takes`` at ``at_ms``."""
    charges = tuple(RateCharge(take, at_ms) for take in takes or (CHARGE,))
    return Commit(row(execution_id), events(1, 1), create=True, rates=charges)


async def test_dispatches_up_to_the_limit_are_written_and_the_next_writes_nothing(
    store: Store,
) -> None:
    await store.commit(dispatch("a", 1000))
    await store.commit(dispatch("b", 1500))
    with pytest.raises(RateLimited) as limited:
        await store.commit(dispatch("c", 1900))
    assert (limited.value.task, limited.value.key, limited.value.opens_at_ms) == (
        "charge", "m", 2000,
    )  # fmt: skip
    assert await store.execution("c") is None
    await store.commit(dispatch("c", 2000))  # the window slid past the first


async def test_a_commit_takes_all_of_its_dispatches_or_none(store: Store) -> None:
    await store.commit(dispatch("a", 1000))
    with pytest.raises(RateLimited):  # room for one of its two
        await store.commit(dispatch("b", 1000, CHARGE, CHARGE))
    await store.commit(dispatch("c", 1000))  # the one left is still there


async def test_each_task_and_key_has_its_own_window(store: Store) -> None:
    one = RateTake("charge", "m", 1, 1000)
    await store.commit(dispatch("a", 1000, one))
    await store.commit(dispatch("b", 1000, RateTake("charge", "other", 1, 1000)))
    await store.commit(dispatch("c", 1000, RateTake("refund", "m", 1, 1000)))
    with pytest.raises(RateLimited):
        await store.commit(dispatch("d", 1000, one))


async def test_concurrent_dispatches_of_one_key_never_pass_the_limit(store: Store) -> None:
    written: list[str] = []

    async def one(name: str) -> None:
        try:
            await store.commit(dispatch(name, 1000, RateTake("charge", "m", 3, 1000)))
            written.append(name)
        except RateLimited as limited:
            assert limited.opens_at_ms == 2000

    async with trio.open_nursery() as nursery:
        for n in range(20):
            nursery.start_soon(one, f"e{n}")
    assert len(written) == 3
    stored = [await store.execution(f"e{n}") for n in range(20)]
    assert sum(found is not None for found in stored) == 3


async def test_the_count_survives_a_restart(tmp_path: Path) -> None:
    async with open_sqlite_store(tmp_path / "orbit.db") as store:
        await store.commit(dispatch("a", 1000))
        await store.commit(dispatch("b", 1000))
    async with open_sqlite_store(tmp_path / "orbit.db") as store:
        with pytest.raises(RateLimited):
            await store.commit(dispatch("c", 1500))


async def test_expired_instants_are_deleted_by_later_dispatches(tmp_path: Path) -> None:
    path = tmp_path / "orbit.db"
    async with open_sqlite_store(path) as store:
        for n in range(5):
            await store.commit(dispatch(f"old{n}", 1000, RateTake("charge", f"k{n}", 1, 1000)))
        await store.commit(dispatch("new", 2000 + SKEW_MARGIN_MS))
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT task, key, at_ms FROM rate_log").fetchall() == [
            ("charge", "m", 2000 + SKEW_MARGIN_MS)
        ]


async def test_two_servers_on_one_postgresql_database_share_the_limit(
    postgres: PostgresServer,
) -> None:
    from orbit_actors.store.postgres import open_postgres_store

    url = postgres.create_database("rates_two_servers")
    written: list[str] = []

    async def one(store: Store, name: str, at_ms: int) -> None:
        try:
            await store.commit(dispatch(name, at_ms, RateTake("charge", "m", 5, 1000)))
            written.append(name)
        except RateLimited:
            pass

    async with (
        open_postgres_store(url) as first,
        open_postgres_store(url) as second,
        trio.open_nursery() as nursery,
    ):
        for n in range(30):
            nursery.start_soon(one, (first, second)[n % 2], f"e{n}", 1000 + n)
    assert len(written) == 5
