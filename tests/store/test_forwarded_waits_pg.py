"""Shared mode in one process: a wait sent to a server that does not own the execution is
forwarded to the owner. When its answer is lost (the database failing over as the owner writes
it, or as the sender reads it; the owner stopping), the caller still gets the execution's
answer, within the wait's time, and not OWNER_UNAVAILABLE or STORAGE_ERROR."""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
import trio

from orbit_actors.errors import StorageError
from orbit_actors.runtime import Runtime
from orbit_actors.store.cluster import Message
from orbit_actors.store.postgres.cluster import PostgresCluster
from orbit_actors.supervisor.forwarding import Envelope, WaitCommand
from tests.pg import PostgresServer

from .test_cluster_pg import APPROVAL, owned_by, server
from .test_stale_offers_pg import quick_server

pytestmark = pytest.mark.trio
_numbers = itertools.count()
WAIT_S = 10.0


@pytest.fixture
def database(postgres: PostgresServer) -> str:
    return postgres.create_database(f"forwarded_waits_{next(_numbers)}")


def cluster_of(runtime: Runtime) -> PostgresCluster:
    cluster = runtime.membership.cluster
    assert isinstance(cluster, PostgresCluster)
    return cluster


@asynccontextmanager
async def owner_and_other(database: str) -> AsyncIterator[tuple[Runtime, Runtime]]:
    """Server ``a``, owning the waiting execution ``e1``, and a quick server ``b``."""
    async with server(database, "a") as a:
        await a.register_definition(APPROVAL)
        await a.start("approval", execution_id="e1")
        async with quick_server(database, "b") as b:
            yield a, b


async def approved_while_waiting(owner: Runtime, other: Runtime) -> tuple[str, float]:
    """``other`` waits for ``e1`` (forwarded to ``owner``), which is approved meanwhile: the
    status the wait answered and how long it took."""
    began = trio.current_time()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(owner_approves_soon, owner)
        result = await other.wait("e1", WAIT_S)
    return result.status, trio.current_time() - began


async def owner_approves_soon(owner: Runtime) -> None:
    await trio.sleep(0.5)  # the wait is forwarded first
    await owner.signal("e1", "approve", {"ok": True})


async def test_a_forwarded_wait_whose_answer_the_owner_could_not_write_gets_the_result(
    database: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with owner_and_other(database) as (a, b):
        cluster_a = cluster_of(a)
        answer = cluster_a.answer
        failed: list[str] = []

        async def failing_once(message: Message, reply: str) -> None:
            command = Envelope.model_validate_json(message.body).command
            if isinstance(command, WaitCommand) and not failed:
                failed.append(message.message_id)  # the database failing over
                raise StorageError("could not write to the database: cannot connect")
            await answer(message, reply)

        monkeypatch.setattr(cluster_a, "answer", failing_once)
        status, took = await approved_while_waiting(a, b)
    assert failed and status == "completed"
    assert took < WAIT_S


async def test_a_forwarded_wait_whose_answer_could_not_be_read_is_asked_again(
    database: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with owner_and_other(database) as (a, b):
        cluster_b = cluster_of(b)
        collect = cluster_b.collect
        failed: list[str] = []

        async def failing_once(message_id: str) -> Any:
            if not failed:  # the owner answered; the database went away
                failed.append(message_id)
                raise StorageError("could not read the database: cannot connect")
            return await collect(message_id)

        monkeypatch.setattr(cluster_b, "collect", failing_once)
        status, took = await approved_while_waiting(a, b)
    assert failed and status == "completed"
    assert took < WAIT_S


async def test_a_forwarded_wait_whose_owner_stopped_is_asked_of_the_server_taking_over(
    database: str,
) -> None:
    answered: list[tuple[str, float]] = []

    async def waits(other: Runtime) -> None:
        began = trio.current_time()
        result = await other.wait("e1", WAIT_S)
        answered.append((result.status, trio.current_time() - began))

    async with quick_server(database, "b") as b, trio.open_nursery() as nursery:
        async with server(database, "a") as a:
            await a.register_definition(APPROVAL)
            await a.start("approval", execution_id="e1")
            nursery.start_soon(waits, b)
            await trio.sleep(0.5)  # forwarded to a, which takes it and stops without answering
        await owned_by(b, "e1", "b")
        await b.signal("e1", "approve", {"ok": True})
    [(status, took)] = answered
    assert status == "completed" and took < WAIT_S
