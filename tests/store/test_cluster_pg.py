"""Shared mode in one process: two runtimes, each with its own PostgreSQL store joined to one
database. Fencing (a server whose lease was taken over cannot write), takeover (the survivor
claims the executions and serves them), forwarding (a command sent to a non-owner is answered
by the owner) and the list of servers. Real clock, short leases."""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest
import trio

from orbit_actors.errors import ExecutionFinishedError, ForwardedError, LeaseLostError, NotHereError
from orbit_actors.mailbox import Command
from orbit_actors.runtime import Runtime, open_runtime
from tests.pg import PostgresServer

pytestmark = pytest.mark.trio

APPROVAL = """
workflow: approval
version: 1.0.0
signals: {approve: {type: object}}
steps: [{id: wait, await: approve}]
output: "${steps.wait.output}"
"""
LEASE_S = 1.0
_numbers = itertools.count()


@pytest.fixture
def database(postgres: PostgresServer) -> str:
    return postgres.create_database(f"inprocess_{next(_numbers)}")


@asynccontextmanager
async def server(url: str, name: str) -> AsyncIterator[Runtime]:
    from orbit_actors.store.postgres import open_postgres_store

    async with (
        open_postgres_store(url) as store,
        store.join(f"http://{name}", LEASE_S, server_id=name) as cluster,
        open_runtime(store, cluster=cluster, address=f"http://{name}") as runtime,
    ):
        yield runtime


async def owned_by(runtime: Runtime, execution_id: str, server_id: str) -> None:
    """Wait (the takeover runs on its own timer) until ``server_id`` owns the execution."""
    with trio.fail_after(10 * LEASE_S):
        while True:
            owner = await runtime.membership.cluster.owner(execution_id)  # type: ignore[union-attr]
            if owner is not None and owner.server_id == server_id:
                return
            await trio.sleep(0.05)


async def test_a_command_sent_to_a_non_owner_is_answered_by_the_owner(database: str) -> None:
    async with server(database, "a") as a, server(database, "b") as b:
        await a.register_definition(APPROVAL)
        await a.start("approval", execution_id="w1")
        assert "w1" not in b.registry
        seq = await b.signal("w1", "approve", {"by": "ann"})  # b forwards it to a
        assert seq > 0
        done = await b.wait("w1", timeout=10)  # forwarded too: answered when it ends
        assert (done.status, done.output) == ("completed", {"by": "ann"})
        with pytest.raises(ExecutionFinishedError):  # read from the database: no owner asked
            await b.signal("w1", "approve", {})
        servers = {s.server_id: s for s in await b.servers()}
        assert set(servers) == {"a", "b"} and all(s.online for s in servers.values())


async def test_an_unknown_signal_forwarded_answers_the_owners_error(database: str) -> None:
    async with server(database, "a") as a, server(database, "b") as b:
        await a.register_definition(APPROVAL)
        await a.start("approval", execution_id="w2")
        with pytest.raises(ForwardedError) as refused:
            await b.signal("w2", "nope", {})
        assert (refused.value.code, refused.value.status) == ("UNKNOWN_SIGNAL", 404)


async def test_forwarding_goes_on_after_the_database_drops_the_listen_connections(
    database: str,
) -> None:
    async with server(database, "a") as a, server(database, "b") as b:
        await a.register_definition(APPROVAL)
        await a.start("approval", execution_id="w5")
        epochs = [r.membership.cluster.epoch for r in (a, b)]  # type: ignore[union-attr]
        dropped = await trio.to_thread.run_sync(drop_listeners, database, epochs)
        assert dropped == 2
        with trio.fail_after(20):  # a catches up with its inbox, b with its answers
            assert await b.signal("w5", "approve", {"by": "cy"}) > 0
            assert (await b.wait("w5", timeout=10)).output == {"by": "cy"}


def drop_listeners(url: str, epochs: list[int]) -> int:
    """Terminate the LISTEN connections of the servers of ``epochs`` (as a database restart or
    a proxy's idle timeout would); how many there were."""
    import psycopg

    channels = [f"LISTEN orbit_stop_{epoch}" for epoch in epochs]
    with psycopg.connect(url, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query = ANY(%s)",
            (channels,),
        ).fetchall()
    return len(rows)


async def test_a_server_whose_lease_was_taken_over_cannot_write(database: str) -> None:
    with pytest.raises(BaseExceptionGroup) as stopped:
        async with server(database, "a") as a:
            await a.register_definition(APPROVAL)
            await a.start("approval", execution_id="w3")
            wake_up = pause_renewals(a)  # what a SIGSTOP does to its lease
            async with server(database, "b") as b:
                await owned_by(b, "w3", "b")
                # a still has the execution in memory: its write is fenced off, a's actor stops
                with pytest.raises(NotHereError):
                    await a.registry.request("w3", _signal("approve"))
                assert "w3" not in a.registry
                assert await b.signal("w3", "approve", {"by": "bob"}) > 0
                done = await b.wait("w3", timeout=10)
                assert done.output == {"by": "bob"}
                history = await b.history("w3")
                assert [e.type for e in history].count("SignalReceived") == 1
                wake_up.set()  # a's next renewal finds its lease taken over: a stops
                await trio.sleep_forever()
    assert stopped.group_contains(LeaseLostError)


async def test_a_takeover_says_when_the_next_lease_of_another_server_ends(database: str) -> None:
    from orbit_actors.store.postgres import open_postgres_store

    async with (
        open_postgres_store(database) as one,
        open_postgres_store(database) as two,
        one.join("http://a", LEASE_S, server_id="a") as a,
    ):
        assert (await a.take_over()).next_expiry_ms is None  # no other member
        async with two.join("http://b", LEASE_S, server_id="b"):
            ahead = (await a.take_over()).next_expiry_ms
            assert ahead is not None and 0 < ahead <= LEASE_S * 1000
        taken = await a.take_over()  # b left: its lease ended at once
        assert (taken.servers, taken.next_expiry_ms) == (["b"], None)


def pause_renewals(runtime: Runtime) -> trio.Event:
    """Hold the runtime's lease renewals until the event is set."""
    cluster = runtime.membership.cluster
    assert cluster is not None
    renew, resume = cluster.renew, trio.Event()

    async def paused() -> None:
        await resume.wait()
        await renew()

    cluster.renew = paused  # type: ignore[method-assign]
    return resume


def _signal(name: str) -> Command:
    from orbit_actors.actors import commands as cmd
    from orbit_actors.mailbox import Reply

    return cmd.DeliverSignal(name, {}, reply=Reply())
