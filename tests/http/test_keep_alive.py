"""Idle HTTP/1.1 connections closed by one sweeper (``http/keep_alive.py``): each wait ends
when its keep-alive timeout has passed since it began, not before and not later, however the
waits interleave; a wait that ended is never cancelled; a drain ends every wait at once. Run on
trio's virtual clock (``autojump_clock``), so the times are exact."""

from __future__ import annotations

import trio
import trio.testing

from orbit_actors.http.keep_alive import KeepAlive

TIMEOUT = 75.0


async def wait_idle(keep_alive: KeepAlive, ended_at: list[float], end_after: float) -> None:
    """An idle connection: it waits until cancelled or ``end_after`` seconds (then a request
    ends its wait, and it waits forever); ``ended_at`` gets the time it was cancelled."""
    with trio.CancelScope() as scope:
        keep_alive.begin(scope)
        await trio.sleep(end_after)
        keep_alive.end(scope)
        await trio.sleep_forever()  # busy with the request: only a wrong cancel ends this
    ended_at.append(trio.current_time())


async def test_each_wait_is_cancelled_when_its_timeout_has_passed_since_it_began(
    autojump_clock: trio.testing.MockClock,
) -> None:
    keep_alive = KeepAlive(TIMEOUT)
    ended: dict[float, list[float]] = {}
    async with trio.open_nursery() as nursery:
        nursery.start_soon(keep_alive.sweep)
        for began in (0.0, 10.0, 10.5, 100.0):  # the sweeper sleeps a whole timeout before 100
            await trio.sleep_until(began)
            ended[began] = []
            nursery.start_soon(wait_idle, keep_alive, ended[began], 1000.0)
        await trio.sleep_until(300.0)
        nursery.cancel_scope.cancel()
    assert ended == {began: [began + TIMEOUT] for began in (0.0, 10.0, 10.5, 100.0)}


async def test_a_wait_that_ended_is_not_cancelled_and_does_not_delay_the_others(
    autojump_clock: trio.testing.MockClock,
) -> None:
    keep_alive = KeepAlive(TIMEOUT)
    served: list[float] = []
    idle: list[float] = []
    async with trio.open_nursery() as nursery:
        nursery.start_soon(keep_alive.sweep)
        nursery.start_soon(wait_idle, keep_alive, served, TIMEOUT - 1)
        await trio.sleep(5.0)
        nursery.start_soon(wait_idle, keep_alive, idle, 1000.0)
        await trio.sleep_until(500.0)
        nursery.cancel_scope.cancel()
    assert served == []
    assert idle == [5.0 + TIMEOUT]


async def test_a_wait_begun_again_keeps_its_deadline(
    autojump_clock: trio.testing.MockClock,
) -> None:
    keep_alive = KeepAlive(TIMEOUT)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(keep_alive.sweep)
        with trio.CancelScope() as scope:
            keep_alive.begin(scope)
            for _ in range(100):  # blank lines between requests, read while it waits
                await trio.sleep(1.0)
                keep_alive.begin(scope)
        assert scope.cancelled_caught
        assert trio.current_time() == TIMEOUT
        nursery.cancel_scope.cancel()


async def test_cancel_all_ends_every_wait_at_once(autojump_clock: trio.testing.MockClock) -> None:
    keep_alive = KeepAlive(TIMEOUT)
    ended: list[float] = []
    async with trio.open_nursery() as nursery:
        for _ in range(3):
            nursery.start_soon(wait_idle, keep_alive, ended, 1000.0)
        await trio.sleep(2.0)
        keep_alive.cancel_all()
    assert ended == [2.0, 2.0, 2.0]
