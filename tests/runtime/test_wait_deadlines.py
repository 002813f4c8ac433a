"""A caller waiting for an execution is woken by its end or at its own deadline, exactly, whether
one serving task keeps the deadlines or (before it serves, after it stops) a scope of its own;
a cancelled or woken wait leaves nothing behind."""

from __future__ import annotations

import trio
import trio.testing

from orbit_actors.supervisor.wait_deadlines import COMPACT_AT, Parked, WaitDeadlines


async def _timed_wait(deadlines: WaitDeadlines, owner: list[Parked], deadline: float) -> float:
    await deadlines.wait(owner, deadline)
    return trio.current_time()


async def test_a_wait_nobody_wakes_ends_at_its_deadline(
    autojump_clock: trio.testing.MockClock,
) -> None:
    deadlines = WaitDeadlines()
    ended: dict[str, float] = {}
    owners: dict[str, list[Parked]] = {"late": [], "early": []}

    async def wait(name: str, deadline: float) -> None:
        ended[name] = await _timed_wait(deadlines, owners[name], deadline)

    async with trio.open_nursery() as nursery:
        await nursery.start(deadlines.serve)
        nursery.start_soon(wait, "late", 60.0)
        await trio.testing.wait_all_tasks_blocked()
        nursery.start_soon(wait, "early", 30.0)  # earlier than what the task sleeps until
        await trio.sleep(61)
        nursery.cancel_scope.cancel()
    assert ended == {"early": 30.0, "late": 60.0}
    assert owners == {"late": [], "early": []}


async def test_a_woken_wait_returns_at_once_and_is_not_woken_again(
    autojump_clock: trio.testing.MockClock,
) -> None:
    deadlines = WaitDeadlines()
    first: list[Parked] = []
    second: list[Parked] = []
    ended: list[float] = []

    async def wait(owner: list[Parked], deadline: float) -> None:
        ended.append(await _timed_wait(deadlines, owner, deadline))

    async with trio.open_nursery() as nursery:
        await nursery.start(deadlines.serve)
        nursery.start_soon(wait, first, 10.0)
        await trio.sleep(1)
        deadlines.wake(first)
        await trio.sleep(1)
        assert ended == [1.0]
        nursery.start_soon(wait, second, 20.0)  # behind the ended one in the heap
        await trio.sleep(30)
        nursery.cancel_scope.cancel()
    assert ended == [1.0, 20.0]


async def test_a_cancelled_wait_leaves_its_waiter(autojump_clock: trio.testing.MockClock) -> None:
    deadlines = WaitDeadlines()
    owner: list[Parked] = []
    async with trio.open_nursery() as nursery:
        await nursery.start(deadlines.serve)
        with trio.move_on_after(5):
            await deadlines.wait(owner, 100.0)
        assert owner == []
        deadlines.wake(owner)  # nobody left to wake
        nursery.cancel_scope.cancel()


async def test_without_the_serving_task_a_wait_keeps_its_own_deadline(
    autojump_clock: trio.testing.MockClock,
) -> None:
    deadlines = WaitDeadlines()
    owner: list[Parked] = []
    assert await _timed_wait(deadlines, owner, 7.0) == 7.0  # never served
    ended: list[float] = []

    async def wait() -> None:
        ended.append(await _timed_wait(deadlines, owner, 50.0))

    async with trio.open_nursery() as outer:
        outer.start_soon(wait)
        async with trio.open_nursery() as serving:
            await serving.start(deadlines.serve)
            await trio.sleep(1)
            outer.start_soon(wait)  # parked in the heap, then orphaned when serving stops
            await trio.sleep(1)
            serving.cancel_scope.cancel()
    assert ended == [50.0, 50.0] and owner == []


async def test_ended_waits_do_not_pile_up_in_the_heap(
    autojump_clock: trio.testing.MockClock,
) -> None:
    deadlines = WaitDeadlines()
    async with trio.open_nursery() as nursery:
        await nursery.start(deadlines.serve)
        for _ in range(3 * COMPACT_AT):
            owner: list[Parked] = []
            nursery.start_soon(deadlines.wait, owner, 3600.0)
            await trio.testing.wait_all_tasks_blocked()
            deadlines.wake(owner)
        await trio.testing.wait_all_tasks_blocked()
        assert len(deadlines._heap) <= COMPACT_AT + 1
        nursery.cancel_scope.cancel()
