"""Shared mode in one process: offers and the takeover notices of their servers. Server ``b`` claims
a unit of ``a``'s from the shared queue and dies; ``a`` hears that ``b`` was taken over, and
only then carries out ``b``'s offer (as after a double takeover, when a dead owner's inbox is
readdressed to the server that takes over). The attempt dispatched to ``b``'s session must not
stay there: it is redelivered, with its key, to a worker of ``a``'s. The same when ``a`` missed
the notice because its LISTEN connection was down. And an offer the owner took but never carried
out or answered (its database failing over): the unit, out of the shared queue, is offered
again rather than left waiting."""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
import trio

from orbit_actors.actors.execution import new_token
from orbit_actors.errors import StorageError
from orbit_actors.runtime import Runtime, RuntimeConfig, open_runtime
from orbit_actors.store.cluster import Message, ReadyTask
from orbit_actors.store.postgres.cluster import PostgresCluster
from orbit_actors.supervisor import forwarding
from orbit_actors.supervisor.forwarding import Envelope, OfferCommand
from orbit_actors.testing import FakeWorker
from tests.pg import PostgresServer

from .test_cluster_pg import LEASE_S, drop_listeners, server

pytestmark = pytest.mark.trio

ONE_TASK = """
workflow: one
version: 1.0.0
tasks: {nap: {version: "1"}}
steps: [{id: a, task: nap, input: {n: 1}}]
output: "${steps.a.output}"
"""
_numbers = itertools.count()


@pytest.fixture
def database(postgres: PostgresServer) -> str:
    return postgres.create_database(f"stale_offers_{next(_numbers)}")


@asynccontextmanager
async def dead_server(url: str, name: str) -> AsyncIterator[PostgresCluster]:
    """A member that will not renew: its connections work, its lease is over at once (the
    others take it over at their next look)."""
    from orbit_actors.store.postgres import open_postgres_store

    async with (
        open_postgres_store(url) as store,
        store.join(f"http://{name}", LEASE_S) as joined,
        joined.listen(),  # to be woken by answers
    ):
        yield joined


async def claimed(cluster: PostgresCluster) -> ReadyTask:
    """The first unit of ``nap@1`` the owner publishes, claimed for ``cluster``."""
    with trio.fail_after(10):
        while not (rows := await cluster.claim_ready([("nap", "1", "")], 1)):
            await trio.sleep(0.05)  # the owner publishes on its own flush
    return rows[0]


async def taken_over(observer: PostgresCluster, server_id: str) -> None:
    with trio.fail_after(10 * LEASE_S):
        while server_id in {member.server_id for member in await observer.servers()}:
            await trio.sleep(0.05)  # the takeover runs on the owner's lease timer


async def offer_from(b: PostgresCluster, owner: PostgresCluster, unit: ReadyTask) -> None:
    """``b`` offers ``unit`` to its owner for a session of its own; the owner answers."""
    offer = OfferCommand(
        key=unit.unit_key, attempt=unit.attempt, token=new_token(unit.execution_id),
        worker_id="w0", session_id=f"s-{b.server_id}-0123456789abcdef",
    )  # fmt: skip
    body = Envelope(command=offer).model_dump_json()
    message = await b.send(owner.epoch, unit.execution_id, body)
    assert await b.wait_reply(message, 10)
    assert (await b.collect(message)).reply is not None


async def redelivered_to_a_worker_here(a: Runtime, unit: ReadyTask) -> None:
    """A worker connecting to ``a`` gets the unit's attempt, with its key, and the execution
    completes with the step resolved once."""
    async with trio.open_nursery() as nursery:
        worker = FakeWorker(a, "w1", [("nap", "1")])
        await nursery.start(worker.serve)
        task = await worker.first_task(within=10)
        assert (task.idempotency_key, task.attempt) == ("e1/1/a", unit.attempt)
        assert (await a.wait("e1", timeout=10)).status == "completed"
        nursery.cancel_scope.cancel()
    history = [event.type for event in await a.history("e1")]
    assert history.count("StepSucceeded") == 1
    assert history.count("StepAttemptUncertain") == 1


async def test_an_offer_carried_out_after_its_server_was_taken_over_is_redelivered(
    database: str,
) -> None:
    async with server(database, "a") as a:
        await a.register_definition(ONE_TASK)
        await a.start("one", execution_id="e1")  # no worker here: the unit is published
        cluster_a = a.membership.cluster
        assert isinstance(cluster_a, PostgresCluster)
        async with dead_server(database, "b") as b:
            unit = await claimed(b)
            await b.leave()
            await taken_over(cluster_a, b.server_id)  # a has been told: b is lost
            await offer_from(b, cluster_a, unit)  # and only now carries b's offer out
        await redelivered_to_a_worker_here(a, unit)


async def test_a_takeover_missed_while_not_listening_is_caught_up_with(database: str) -> None:
    async with server(database, "a") as a:
        await a.register_definition(ONE_TASK)
        await a.start("one", execution_id="e1")
        cluster_a = a.membership.cluster
        assert isinstance(cluster_a, PostgresCluster)
        async with dead_server(database, "b") as b:
            unit = await claimed(b)
            await offer_from(b, cluster_a, unit)  # dispatched to b's session, b a member
            await trio.to_thread.run_sync(forget_quietly, database, b.server_id)
            assert await trio.to_thread.run_sync(drop_listeners, database, [cluster_a.epoch])
        await redelivered_to_a_worker_here(a, unit)


def forget_quietly(url: str, server_id: str) -> None:
    """Remove a member without the notice a takeover sends (as if nobody heard it)."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("DELETE FROM servers WHERE server_id = %s", (server_id,))


@asynccontextmanager
async def quick_server(url: str, name: str) -> AsyncIterator[Runtime]:
    """A server whose forwarded commands wait for their answer the lease time and 1 s more."""
    from orbit_actors.store.postgres import open_postgres_store

    config = RuntimeConfig(forward_margin_s=1)
    async with (
        open_postgres_store(url) as store,
        store.join(f"http://{name}", LEASE_S, server_id=name) as cluster,
        open_runtime(store, config, cluster=cluster, address=f"http://{name}") as runtime,
    ):
        yield runtime


async def test_an_offer_taken_and_never_answered_is_offered_again(
    database: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    carry_out = forwarding._carry_out
    lost: list[str] = []

    async def losing_the_first_offer(handle: forwarding.Handle, message: Message) -> object:
        if not lost and isinstance(
            Envelope.model_validate_json(message.body).command, OfferCommand
        ):
            lost.append(message.execution_id)  # taken, then the database failed over
            raise StorageError("could not write to the database: the connection broke")
        return await carry_out(handle, message)

    monkeypatch.setattr(forwarding, "_carry_out", losing_the_first_offer)
    async with server(database, "a") as a:
        await a.register_definition(ONE_TASK)
        await a.start("one", execution_id="e1")  # no worker here: the unit is published
        async with quick_server(database, "b") as b, trio.open_nursery() as nursery:
            worker = FakeWorker(b, "w1", [("nap", "1")])
            await nursery.start(worker.serve)
            with trio.fail_after(30):
                assert (await a.wait("e1", timeout=30)).status == "completed"
            nursery.cancel_scope.cancel()
    assert lost == ["e1"]


async def test_an_offer_whose_answer_could_not_be_read_is_made_uncertain_and_redelivered(
    database: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with server(database, "a") as a:
        await a.register_definition(ONE_TASK)
        await a.start("one", execution_id="e1")  # no worker here: the unit is published
        async with quick_server(database, "b") as b, trio.open_nursery() as nursery:
            cluster_b = b.membership.cluster
            assert isinstance(cluster_b, PostgresCluster)
            collect = cluster_b.collect
            failed: list[str] = []

            async def failing_once(message_id: str) -> Any:
                if not failed:  # the owner dispatched it and answered; the database went away
                    failed.append(message_id)
                    raise StorageError("could not read the database: cannot connect")
                return await collect(message_id)

            monkeypatch.setattr(cluster_b, "collect", failing_once)
            worker = FakeWorker(b, "w1", [("nap", "1")])
            await nursery.start(worker.serve)
            with trio.fail_after(30):
                assert (await a.wait("e1", timeout=30)).status == "completed"
            nursery.cancel_scope.cancel()
        history = [event.type for event in await a.history("e1")]
    assert failed and history.count("StepSucceeded") == 1
    assert history.count("StepAttemptUncertain") == 1
