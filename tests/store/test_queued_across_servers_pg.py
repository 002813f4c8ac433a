"""Shared mode in one process: a queued execution has no owner; a wait for it is answered when
it starts and ends on another server (the one that frees the slot of its key promotes it), and
any server cancels it."""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest
import trio

from orbit_actors.runtime import Runtime, open_runtime
from tests.pg import PostgresServer

pytestmark = pytest.mark.trio

ONE_AT_A_TIME = """
workflow: gated
version: 1.0.0
input: {type: object, properties: {customer: {type: string}}}
flow: {concurrency: {key: '${input.customer}', limit: 1}}
signals: {go: {type: object}}
steps: [{id: wait, await: go}]
output: "${steps.wait.output}"
"""
LEASE_S = 5.0  # nothing here waits for a takeover: a loaded machine loses no lease
_numbers = itertools.count()


@pytest.fixture
def database(postgres: PostgresServer) -> str:
    return postgres.create_database(f"queued_across_{next(_numbers)}")


@asynccontextmanager
async def server(url: str, name: str) -> AsyncIterator[Runtime]:
    from orbit_actors.store.postgres import open_postgres_store

    async with (
        open_postgres_store(url) as store,
        store.join(f"http://{name}", LEASE_S, server_id=name) as cluster,
        open_runtime(store, cluster=cluster, address=f"http://{name}") as runtime,
    ):
        yield runtime


async def waiting_here(runtime: Runtime, execution_id: str) -> None:
    """Until a wait for ``execution_id`` waits on ``runtime`` for a finish there."""
    with trio.fail_after(10):
        while execution_id not in runtime.waiters.pending:
            await trio.sleep(0.01)


async def test_a_wait_for_a_queued_execution_promoted_on_another_server_gets_its_result(
    database: str,
) -> None:
    async with server(database, "a") as a, server(database, "b") as b:
        await a.register_definition(ONE_AT_A_TIME)
        await a.start("gated", input={"customer": "c"}, execution_id="first")
        await a.start("gated", input={"customer": "c"}, execution_id="second")
        assert (await b.describe("second")).status == "queued"
        results = []
        async with trio.open_nursery() as nursery:

            async def wait_on_b() -> None:
                results.append(await b.wait("second", timeout=20))

            nursery.start_soon(wait_on_b)
            await waiting_here(b, "second")  # b waits for a finish of its own
            await a.signal("first", "go", {"n": 1})  # a frees the slot and promotes `second`
            await a.wait("first", timeout=10)
            with trio.fail_after(10):
                while (await a.describe("second")).status == "queued":
                    await trio.sleep(0.01)
            await a.signal("second", "go", {"n": 2})
        assert [(r.status, r.output) for r in results] == [("completed", {"n": 2})]


async def test_a_wait_for_a_queued_execution_promoted_here_still_gets_its_result(
    database: str,
) -> None:
    async with server(database, "a") as a, server(database, "b") as b:
        await a.register_definition(ONE_AT_A_TIME)
        await b.register_definition(ONE_AT_A_TIME)
        await a.start("gated", input={"customer": "c"}, execution_id="first")
        await a.start("gated", input={"customer": "c"}, execution_id="second")
        results = []
        async with trio.open_nursery() as nursery:

            async def wait_on_a() -> None:
                results.append(await a.wait("second", timeout=20))

            nursery.start_soon(wait_on_a)
            await waiting_here(a, "second")
            await b.signal("first", "go", {"n": 1})  # forwarded to a, which promotes `second`
            with trio.fail_after(10):
                while (await b.describe("second")).status == "queued":
                    await trio.sleep(0.01)
            await b.signal("second", "go", {"n": 2})
        assert [(r.status, r.output) for r in results] == [("completed", {"n": 2})]


async def test_a_queued_execution_is_cancelled_through_any_server(database: str) -> None:
    async with server(database, "a") as a, server(database, "b") as b:
        await a.register_definition(ONE_AT_A_TIME)
        await a.start("gated", input={"customer": "c"}, execution_id="first")
        await a.start("gated", input={"customer": "c"}, execution_id="second")
        await b.cancel("second", "not needed")
        assert (await a.describe("second")).status == "cancelled"
        assert (await b.wait("second", timeout=10)).status == "cancelled"


async def test_a_wait_for_a_queued_execution_cancelled_on_another_server_gets_its_end(
    database: str,
) -> None:
    async with server(database, "a") as a, server(database, "b") as b:
        await a.register_definition(ONE_AT_A_TIME)
        await a.start("gated", input={"customer": "c"}, execution_id="first")
        await a.start("gated", input={"customer": "c"}, execution_id="second")
        results = []
        async with trio.open_nursery() as nursery:

            async def wait_on_a() -> None:
                results.append(await a.wait("second", timeout=20))

            nursery.start_soon(wait_on_a)
            await waiting_here(a, "second")
            await b.cancel("second", "not needed")
        assert [r.status for r in results] == ["cancelled"]
