"""Per-key locks: one holder per key at a time, even across a hand-over from a holder to a
waiter, and nothing kept for a key nobody holds or waits for."""

from __future__ import annotations

import trio
import trio.testing

from orbit_actors.supervisor.key_locks import KeyLocks


async def test_a_lock_handed_to_a_waiter_still_keeps_a_newcomer_out() -> None:
    locks = KeyLocks()
    holding: set[str] = set()
    most = 0
    release = {name: trio.Event() for name in "abc"}

    async def hold(name: str) -> None:
        nonlocal most
        async with locks.hold("k"):
            holding.add(name)
            most = max(most, len(holding))
            await release[name].wait()
            holding.discard(name)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(hold, "a")
        await trio.testing.wait_all_tasks_blocked()
        nursery.start_soon(hold, "b")  # waits for a
        await trio.testing.wait_all_tasks_blocked()
        release["a"].set()  # trio hands the lock straight to b
        await trio.testing.wait_all_tasks_blocked()
        assert holding == {"b"} and locks.busy("k")
        nursery.start_soon(hold, "c")  # arrives while b holds the handed-over lock
        await trio.testing.wait_all_tasks_blocked()
        assert holding == {"b"}
        release["b"].set()
        await trio.testing.wait_all_tasks_blocked()
        assert holding == {"c"}
        release["c"].set()
    assert most == 1


async def test_a_key_nobody_holds_or_waits_for_is_forgotten() -> None:
    locks = KeyLocks()
    async with locks.hold("k"):
        assert locks.busy("k") and not locks.busy("other")
    assert not locks.busy("k")
    async with locks.hold("k"), locks.hold("other"):
        assert locks.busy("k") and locks.busy("other")
    assert not locks.busy("k") and not locks.busy("other")
