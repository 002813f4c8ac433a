"""Concurrency slots, part of the Store contract on every store: a start is admitted only while
its key has room and nobody queued ahead, in its commit's own transaction; a refused start
writes nothing; queued executions keep their arrival order; an end gives its slot back."""

from __future__ import annotations

from dataclasses import replace

import pytest
import trio

from orbit_actors.store import Store
from orbit_actors.store.base import Admission, Commit, ConcurrencyFull

from .helpers import events, row


def start(execution_id: str, key: str, admit: Admission | None, status: str = "running") -> Commit:
    keyed = replace(row(execution_id, status=status), flow_key=key)
    return Commit(keyed, events(1, 1), create=True, admit=admit)


def end(execution_id: str, key: str, seq: int = 2) -> Commit:
    return Commit(replace(row(execution_id, status="completed"), flow_key=key), events(seq, 1))


def promote(execution_id: str, key: str, limit: int) -> Commit:
    keyed = replace(row(execution_id), flow_key=key)
    return Commit(keyed, events(2, 1), admit=Admission(key, limit, promoting=True))


async def test_starts_are_admitted_up_to_the_limit_and_the_next_writes_nothing(
    store: Store,
) -> None:
    await store.commit(start("a", "k", Admission("k", 2)))
    await store.commit(start("b", "k", Admission("k", 2)))
    with pytest.raises(ConcurrencyFull):
        await store.commit(start("c", "k", Admission("k", 2)))
    assert await store.execution("c") is None
    assert (await store.flow_slots("k")).running == ["a", "b"]
    await store.commit(start("d", "other", Admission("other", 2)))  # another key has room


async def test_an_end_gives_the_slot_back(store: Store) -> None:
    await store.commit(start("a", "k", Admission("k", 1)))
    await store.commit(end("a", "k"))
    await store.commit(start("b", "k", Admission("k", 1)))
    assert (await store.flow_slots("k")).running == ["b"]


async def test_queued_executions_wait_in_arrival_order_and_a_new_start_does_not_pass_them(
    store: Store,
) -> None:
    await store.commit(start("a", "k", Admission("k", 1)))
    await store.commit(start("q1", "k", None, status="queued"))
    await store.commit(start("q2", "k", None, status="queued"))
    assert await store.queued_keys() == ["k"]
    await store.commit(end("a", "k"))
    with pytest.raises(ConcurrencyFull):  # room, but two wait ahead of it
        await store.commit(start("late", "k", Admission("k", 1)))
    await store.commit(promote("q1", "k", 1))
    with pytest.raises(ConcurrencyFull):
        await store.commit(promote("q2", "k", 1))
    slots = await store.flow_slots("k")
    assert (slots.running, slots.queued) == (["q1"], ["q2"])
    row_q1 = await store.execution("q1")
    assert row_q1 is not None and row_q1.status == "running"


async def test_replace_is_admitted_over_the_limit(store: Store) -> None:
    await store.commit(start("a", "k", Admission("k", 1)))
    await store.commit(start("b", "k", Admission("k", 1, over_limit=True)))
    assert (await store.flow_slots("k")).running == ["a", "b"]


async def test_concurrent_starts_of_one_key_never_pass_the_limit(store: Store) -> None:
    admitted: list[str] = []

    async def one(name: str) -> None:
        try:
            await store.commit(start(name, "k", Admission("k", 3)))
            admitted.append(name)
        except ConcurrencyFull:
            pass

    async with trio.open_nursery() as nursery:
        for n in range(20):
            nursery.start_soon(one, f"e{n}")
    assert len(admitted) == 3
    assert sorted((await store.flow_slots("k")).running) == sorted(admitted)


async def test_a_start_stamped_before_a_slot_was_given_back_counts_it_as_taken(
    store: Store,
) -> None:
    """The histories must never show more than ``limit`` running at one instant: a start whose
    ``WorkflowStarted`` is older than the end that gave the slot back did not have room then."""
    await store.commit(start("a", "k", Admission("k", 1)))
    ended = end("a", "k")
    await store.commit(replace(ended, row=replace(ended.row, closed_at_ms=5_000)))
    with pytest.raises(ConcurrencyFull):
        await store.commit(start("early", "k", Admission("k", 1, at_ms=4_999)))
    assert await store.execution("early") is None
    await store.commit(start("later", "k", Admission("k", 1, at_ms=5_000)))
    assert (await store.flow_slots("k")).running == ["later"]


async def test_a_promotion_is_not_held_back_by_the_end_that_made_room_for_it(
    store: Store,
) -> None:
    await store.commit(start("a", "k", Admission("k", 1)))
    await store.commit(start("q", "k", None, status="queued"))
    ended = end("a", "k")
    await store.commit(replace(ended, row=replace(ended.row, closed_at_ms=9_000)))
    await store.commit(promote("q", "k", 1))
    assert (await store.flow_slots("k")).running == ["q"]
